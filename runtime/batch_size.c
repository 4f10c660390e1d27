/* The default batch size sized to the memory limit (include/ptq/batch.h):
 * the same estimate the runner checks --batch with (runtime/runner.c,
 * batch_fits). Covered by tests/badinput_test.py. */
#include "ptq/batch.h"
#include "ptq/memory.h"
#include "runtime/backend.h"

/* Input bytes of one sample: the image's floats, or every named input's. */
static double sample_bytes(const ptq_session *s)
{
    int64_t c, h, w;
    ptq_session_input_shape(s, &c, &h, &w);
    if (!ptq_session_named_inputs(s))
        return (double)(c * h * w) * sizeof(float);
    double bytes = 0;
    for (int i = 0; i < ptq_session_graph(s)->n_inputs; i++) {
        ptq_ctx ctx;
        ptq_tensor meta;
        ptq_ctx_init(&ctx);
        if (ptq_session_input_meta(&ctx, s, i, &meta, NULL) == PTQ_OK) {
            meta.dims[0] = 1;
            bytes += (double)ptq_tensor_bytes(&meta);
        }
    }
    return bytes;
}

double ptq_batch_bytes(const ptq_session *s, int64_t batch, int n_bufs)
{
    return (double)batch * (double)n_bufs * sample_bytes(s) + ptq_exec_live_estimate(ptq_session_exec(s), batch);
}

int64_t ptq_batch_default(const ptq_session *s, int64_t max_batch, int n_bufs)
{
    int64_t b = 1;
    while (b * 2 <= max_batch)
        b *= 2;
    const double budget = (double)ptq_memory_budget();
    while (b > 1 && ptq_batch_bytes(s, b, n_bufs) > budget)
        b /= 2;
    return b;
}
