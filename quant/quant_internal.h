/* What the quant/ sources share: how a weight's elements fall into channels. */
#ifndef PTQ_QUANT_INTERNAL_H
#define PTQ_QUANT_INTERNAL_H

#include "ptq/graph.h"

/* Weight v along channel axis (-1: the whole tensor one channel): n_runs runs
 * of `inner` contiguous elements (row-major), run r in channel r % n_ch. */
typedef struct weight_runs {
    int64_t n_runs, inner, n_ch;
} weight_runs;

static inline weight_runs weight_runs_of(const ptq_value *v, int axis)
{
    weight_runs w = {1, 1, axis >= 0 ? v->dims[axis] : 1};
    for (int d = 0; d < v->ndim; d++) {
        if (axis >= 0 && d > axis)
            w.inner *= v->dims[d];
        else
            w.n_runs *= v->dims[d];
    }
    if (axis < 0) { /* one run: the whole tensor */
        w.inner = w.n_runs;
        w.n_runs = 1;
    }
    return w;
}

#endif
