/* Whether a graph computes each sample of a batch on its own, so that the
 * host executor may run a long batch in passes of a few samples (whose
 * values stay in the CPU's caches) with the bytes of one pass: from the
 * shapes inference gives every value at batches 1 and 2, and the few ops
 * that can mix samples without changing a shape. Conservative: a graph it
 * cannot show independent runs whole batches. Covered by
 * tests/test_exec.c, tests/eval_ort_test.py and tests/pass_rows_test.py. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/backend.h"

enum { ROWS_UNKNOWN = 0, ROWS_SAME, ROWS_BATCH }; /* ROWS_BATCH + a: the batch is axis a */

/* How value v's shape follows the batch: ROWS_BATCH + a when axis a is the batch (1 at batch 1, 2 at batch 2,
 * every other dim the same: a sequence-first [L, N, D] or a Transpose's [3, N, ...] too), ROWS_SAME when the
 * shape does not change, else ROWS_UNKNOWN. */
static int rows_kind(const ptq_value *a, const ptq_value *b)
{
    if (a->ndim < 0 || a->ndim != b->ndim)
        return ROWS_UNKNOWN;
    int axis = -1;
    for (int d = 0; d < a->ndim; d++) {
        if (a->dims[d] < 0 || b->dims[d] < 0)
            return ROWS_UNKNOWN;
        if (a->dims[d] == b->dims[d])
            continue;
        if (axis >= 0 || a->dims[d] != 1 || b->dims[d] != 2)
            return ROWS_UNKNOWN;
        axis = d;
    }
    return axis < 0 ? ROWS_SAME : ROWS_BATCH + axis;
}

/* An int axis attribute resolved against rank ndim (dflt when absent). */
static int64_t attr_axis(const ptq_node *n, const char *name, int64_t dflt, int ndim)
{
    const int64_t a = ptq_node_attr_int(n, name, dflt);
    return a < 0 ? a + ndim : a;
}

/* The int64 / int32 data of value v, a constant or a Constant node's output (at most max; -1 when unknown). */
static int64_t const_ints(const ptq_graph *g, int v, int64_t *out, int64_t max)
{
    if (v < 0)
        return -1;
    const ptq_value *val = &g->values[v];
    if (!val->data && val->producer >= 0) {
        const ptq_node *c = &g->nodes[val->producer];
        const ptq_attr *t = strcmp(c->op_type, "Constant") == 0 ? ptq_node_attr(c, "value") : NULL;
        if (!t || t->type != PTQ_ATTR_TENSOR || t->tensor < 0)
            return -1;
        val = &g->values[t->tensor];
    }
    const size_t elem = val->dtype == PTQ_DT_INT64 ? 8 : val->dtype == PTQ_DT_INT32 ? 4 : 0;
    if (!val->data || !elem || val->n_bytes % elem || val->n_bytes / elem > (size_t)max)
        return -1;
    const int64_t n = (int64_t)(val->n_bytes / elem);
    for (int64_t i = 0; i < n; i++) {
        if (elem == 8) {
            memcpy(&out[i], (const char *)val->data + 8 * i, 8);
        } else {
            int32_t x;
            memcpy(&x, (const char *)val->data + 4 * i, 4);
            out[i] = x;
        }
    }
    return n;
}

/* Whether Slice node n leaves axis b (the batch) of its data whole: no entry of its axes is b, or the one that is
 * takes [0, end of the batch) in steps of 1. Inputs (opset 10 on) or attributes (before) it does not know are
 * mixing. */
static int slice_keeps_rows(const ptq_graph *g, const ptq_node *n, int ndim, int b)
{
    int64_t starts[PTQ_MAX_DIMS], ends[PTQ_MAX_DIMS], axes[PTQ_MAX_DIMS], steps[PTQ_MAX_DIMS];
    int64_t k, k_end, k_axes, k_steps = -2;
    if (n->n_inputs == 1) { /* opset 1 to 9: attributes */
        const ptq_attr *as = ptq_node_attr(n, "starts"), *ae = ptq_node_attr(n, "ends"), *ax = ptq_node_attr(n, "axes");
        if (!as || !ae || as->n != ae->n || as->n > PTQ_MAX_DIMS || (ax && ax->n != as->n))
            return 0;
        k = k_end = as->n;
        memcpy(starts, as->ints, (size_t)k * sizeof *starts);
        memcpy(ends, ae->ints, (size_t)k * sizeof *ends);
        k_axes = ax ? k : -2;
        if (ax)
            memcpy(axes, ax->ints, (size_t)k * sizeof *axes);
    } else {
        k = const_ints(g, n->inputs[1], starts, PTQ_MAX_DIMS);
        k_end = n->n_inputs > 2 ? const_ints(g, n->inputs[2], ends, PTQ_MAX_DIMS) : -1;
        k_axes = n->n_inputs > 3 && n->inputs[3] >= 0 ? const_ints(g, n->inputs[3], axes, PTQ_MAX_DIMS) : -2;
        k_steps = n->n_inputs > 4 && n->inputs[4] >= 0 ? const_ints(g, n->inputs[4], steps, PTQ_MAX_DIMS) : -2;
    }
    if (k < 0 || k_end != k || k_axes == -1 || k_steps == -1 || (k_axes >= 0 && k_axes != k) ||
        (k_steps >= 0 && k_steps != k))
        return 0;
    for (int64_t i = 0; i < k; i++) {
        const int64_t axis = k_axes >= 0 ? (axes[i] < 0 ? axes[i] + ndim : axes[i]) : i;
        if (axis == b && !(starts[i] == 0 && ends[i] >= INT32_MAX && (k_steps < 0 || steps[i] == 1)))
            return 0;
    }
    return 1;
}

/* The product of value v's dims before axis b at batch 1: a Reshape keeps each sample's numbers together only
 * where its input and output have as many of them before the batch's axis (the same row-major order). */
static int64_t dims_before(const ptq_value *v, int b)
{
    int64_t p = 1;
    for (int d = 0; d < b && d < v->ndim; d++)
        p *= v->dims[d];
    return p;
}

/* Whether Einsum node n keeps samples apart: every input whose axis kind[] gives as the batch names it with one
 * letter, the same for all, seen once in the input's term and kept in the output (explicit, or numpy's implicit
 * output of the letters seen once). A batch axis under a '...', or an equation that does not parse, counts as
 * mixing (the batch runs whole). Summing over another input's batch ('bi,ci->bi' of x and x) mixes. */
static int einsum_keeps_rows(const ptq_node *n, const unsigned char *kind)
{
    const ptq_attr *eq = ptq_node_attr(n, "equation");
    if (!eq || eq->type != PTQ_ATTR_STRING)
        return 0;
    const char *s = eq->s, *arrow = strstr(s, "->");
    char batch = 0;
    int seen[256] = {0};
    for (const char *c = s; *c && c != arrow; c++)
        seen[(unsigned char)*c]++;
    const char *t = s;
    for (int i = 0; i < n->n_inputs; i++) { /* term i: t up to ',' or the arrow */
        const char *end = t;
        while (*end && *end != ',' && end != arrow)
            end++;
        const int v = n->inputs[i];
        if (v >= 0 && kind[v] >= ROWS_BATCH) {
            int axis = 0;
            char at = 0;
            for (const char *c = t; c < end; c++) {
                if (*c == ' ')
                    continue;
                if (*c == '.')
                    return 0; /* the batch's place under a '...' is not followed */
                if (axis++ == kind[v] - ROWS_BATCH)
                    at = *c;
            }
            int in_term = 0;
            for (const char *c = t; c < end; c++)
                in_term += *c == at;
            if (!at || in_term != 1 || (batch && at != batch))
                return 0;
            batch = at;
        }
        if (*end != ',')
            break;
        t = end + 1;
    }
    if (!batch)
        return 1; /* no input varies with the batch */
    return arrow ? strchr(arrow + 2, batch) != NULL : seen[(unsigned char)batch] == 1;
}

/* Whether node n, given an input whose axis b is the batch, may mix samples while keeping every shape: a
 * (log) softmax or normalization over b, a Gather, GatherElements, ScatterElements, Split, Concat or CumSum along
 * it, a GatherND whose index tuples reach b, a Slice that cuts or reverses
 * it, a Trilu whose matrices hold it (the row or column index decides what is kept) or an EyeLike of it, a
 * ReverseSequence along it, batch statistics, a ScatterND
 * whose index tuples reach b, a convolution or pooling window along it, a Reshape that reads the samples' numbers in
 * another order, a recurrent layer (LSTM, GRU, RNN) whose time or feature axis b is, an Einsum that sums over one
 * input's batch. The rest of what could mix them changes a shape, which rows_kind sees. */
static int mixes_rows(const ptq_graph *g, const ptq_value *at1, const ptq_node *n, const unsigned char *kind)
{
    const int v0 = n->n_inputs > 0 ? n->inputs[0] : -1;
    const int b = v0 >= 0 && kind[v0] >= ROWS_BATCH ? kind[v0] - ROWS_BATCH : -1; /* input 0's batch axis */
    const int ndim = v0 >= 0 ? g->values[v0].ndim : 0;
    const char *op = n->op_type;
    const int softmax = strcmp(op, "Softmax") == 0 || strcmp(op, "LogSoftmax") == 0 || strcmp(op, "Hardmax") == 0;
    if (softmax && g->opset < 13) /* over the whole block [axis, ndim) */
        return b >= 0 && attr_axis(n, "axis", 1, ndim) <= b;
    if (softmax)
        return b >= 0 && attr_axis(n, "axis", -1, ndim) == b;
    if (strcmp(op, "InstanceNormalization") == 0) /* over [2, ndim) */
        return b >= 2;
    if (strcmp(op, "GroupNormalization") == 0) /* over a group of channels and [2, ndim) */
        return b >= 1;
    if (strcmp(op, "MeanVarianceNormalization") == 0) { /* over its axes, [0, 2, 3] unless given */
        const ptq_attr *a = ptq_node_attr(n, "axes");
        static const int64_t dflt[] = {0, 2, 3};
        const int64_t *axes = a && a->type == PTQ_ATTR_INTS ? a->ints : dflt, n_axes = a ? a->n : 3;
        for (int64_t k = 0; b >= 0 && k < n_axes; k++)
            if ((axes[k] < 0 ? axes[k] + ndim : axes[k]) == b)
                return 1;
        return 0;
    }
    if (strcmp(op, "LpNormalization") == 0) /* along its axis */
        return b >= 0 && attr_axis(n, "axis", -1, ndim) == b;
    if (strcmp(op, "LayerNormalization") == 0) /* over [axis, ndim) */
        return b >= 0 && attr_axis(n, "axis", -1, ndim) <= b;
    if (strcmp(op, "Gather") == 0 || strcmp(op, "Split") == 0 || strcmp(op, "GatherElements") == 0 ||
        strcmp(op, "ScatterElements") == 0 || strcmp(op, "Scatter") == 0) /* indices pick rows along the axis */
        return b >= 0 && attr_axis(n, "axis", 0, ndim) == b;
    if (strcmp(op, "GatherND") == 0) { /* tuples index the axes after batch_dims, up to their length */
        const int vi = n->n_inputs > 1 ? n->inputs[1] : -1, bd = (int)ptq_node_attr_int(n, "batch_dims", 0);
        const int qi = vi >= 0 ? g->values[vi].ndim : 0;
        return b >= bd && (qi < 1 || g->values[vi].dims[qi - 1] < 0 || b < bd + g->values[vi].dims[qi - 1]);
    }
    if (strcmp(op, "CumSum") == 0) { /* sums along its axis (input 1), which may be the batch's */
        int64_t axis;
        if (b < 0)
            return 0;
        if (n->n_inputs < 2 || const_ints(g, n->inputs[1], &axis, 1) != 1)
            return 1;
        return (axis < 0 ? axis + ndim : axis) == b;
    }
    if (strcmp(op, "RNN") == 0 || strcmp(op, "GRU") == 0 || strcmp(op, "LSTM") == 0) /* along time and features */
        return b >= 0 && b != (ptq_node_attr_int(n, "layout", 0) ? 0 : 1);
    if (strcmp(op, "Einsum") == 0)
        return !einsum_keeps_rows(n, kind);
    if (strcmp(op, "Trilu") == 0) /* over the last two axes */
        return b >= 0 && b >= ndim - 2;
    if (strcmp(op, "EyeLike") == 0) /* a 2-D identity: a sample's row depends on its place in the batch */
        return b >= 0;
    if (strcmp(op, "ReverseSequence") == 0) /* reverses along time_axis */
        return b >= 0 && b == ptq_node_attr_int(n, "time_axis", 0);
    if (strcmp(op, "Concat") == 0) {
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] >= 0 && kind[n->inputs[i]] >= ROWS_BATCH &&
                attr_axis(n, "axis", 0, ndim) == kind[n->inputs[i]] - ROWS_BATCH)
                return 1;
        return 0;
    }
    if (strcmp(op, "Slice") == 0)
        return b >= 0 && !slice_keeps_rows(g, n, ndim, b);
    if (strcmp(op, "BatchNormalization") == 0)
        return ptq_node_attr_int(n, "training_mode", 0) != 0;
    if (strcmp(op, "ScatterND") == 0) { /* index tuples that name the batch position write into the rows they name */
        const int vi = n->n_inputs > 1 ? n->inputs[1] : -1;
        const int qi = vi >= 0 ? g->values[vi].ndim : 0;
        return b >= 0 && (qi < 1 || b < g->values[vi].dims[qi - 1]);
    }
    if (strcmp(op, "Conv") == 0 || strcmp(op, "ConvTranspose") == 0) /* windows over the batch, or sums across it */
        return b >= 1;
    if (strcmp(op, "MaxPool") == 0 || strcmp(op, "AveragePool") == 0 || strcmp(op, "GlobalAveragePool") == 0 ||
        strcmp(op, "LpPool") == 0)
        return b >= 2;
    if (strcmp(op, "Reshape") == 0 || strcmp(op, "Flatten") == 0) { /* [3, N] read as [N, 3] takes 3 samples' */
        const int out = n->n_outputs > 0 ? n->outputs[0] : -1;
        return b >= 0 && out >= 0 && kind[out] >= ROWS_BATCH &&
               dims_before(&at1[v0], b) != dims_before(&at1[out], kind[out] - ROWS_BATCH);
    }
    return 0;
}

/* Inputs of node n that only give a shape or axes (their values decide the output's shape, not which numbers it
 * holds): the batch size read there through Shape does not reach the outputs' numbers. Not a Slice's starts or a
 * Pad's pads: Slice(table, 0, batch size) gives each sample the table's row of its place in the batch. */
static int shape_input(const ptq_node *n, int i)
{
    static const char *const ops[] = {"Reshape", "Expand", "Squeeze", "Unsqueeze", "ReduceMean", "ReduceSum"};
    if (strcmp(n->op_type, "ConstantOfShape") == 0)
        return i == 0;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        if (strcmp(n->op_type, ops[k]) == 0)
            return i == 1;
    return 0;
}

#define ALL_ELEMS UINT64_MAX /* every element of a value, or some of one of more than 64 */

/* The element count of value v at batch 1, or -1 when unknown or past 64. */
static int64_t n_elems(const ptq_value *v)
{
    int64_t n = 1;
    for (int d = 0; d < v->ndim; d++) {
        if (v->dims[d] < 0 || v->dims[d] > 64)
            return -1;
        n *= v->dims[d];
        if (n > 64)
            return -1;
    }
    return v->ndim < 0 ? -1 : n;
}

/* Elements [0, n) of a bit mask (every bit when n is unknown). */
static uint64_t elems_below(int64_t n)
{
    return n < 0 || n >= 64 ? ALL_ELEMS : ((uint64_t)1 << n) - 1;
}

/* Which of the elements of the 1-D value x (the bits of mask m) a Gather along axis 0 with the constant indices
 * idx takes, in order: a shape's dims picked by index. */
static uint64_t gather_elems(const ptq_graph *g, const ptq_value *at1, int x, int idx, uint64_t m)
{
    int64_t at[64];
    const int64_t len = n_elems(&at1[x]), k = const_ints(g, idx, at, 64);
    uint64_t out = 0;
    if (at1[x].ndim != 1 || len < 0 || k < 0)
        return ALL_ELEMS;
    for (int64_t j = 0; j < k; j++) {
        const int64_t e = at[j] < 0 ? at[j] + len : at[j];
        if (e < 0 || e >= len)
            return ALL_ELEMS;
        out |= (m >> e & 1) << j;
    }
    return out;
}

/* Which elements of the 1-D value x (the bits of mask m) Slice node n takes along axis 0, with constant starts,
 * ends and steps, in order. */
static uint64_t slice_elems(const ptq_graph *g, const ptq_value *at1, const ptq_node *n, uint64_t m)
{
    int64_t st, en, ax = 0, sp = 1;
    const int64_t len = n_elems(&at1[n->inputs[0]]);
    if (at1[n->inputs[0]].ndim != 1 || len < 0 || n->n_inputs < 3 || const_ints(g, n->inputs[1], &st, 1) != 1 ||
        const_ints(g, n->inputs[2], &en, 1) != 1 ||
        (n->n_inputs > 3 && n->inputs[3] >= 0 && const_ints(g, n->inputs[3], &ax, 1) != 1) ||
        (n->n_inputs > 4 && n->inputs[4] >= 0 && const_ints(g, n->inputs[4], &sp, 1) != 1) ||
        (ax != 0 && ax != -1) || sp == 0)
        return ALL_ELEMS;
    const int64_t lo = sp > 0 ? 0 : -1, hi = sp > 0 ? len : len - 1; /* ONNX's clamps */
    st = st < 0 ? st + len : st;
    en = en < 0 ? en + len : en;
    st = st < 0 ? 0 : st > hi ? hi : st;
    en = en < lo ? lo : en > hi ? hi : en;
    sp = sp > 64 ? 64 : sp < -64 ? -64 : sp; /* a longer step takes the first element only, as 64 does */
    uint64_t out = 0;
    int j = 0;
    for (int64_t e = st; sp > 0 ? e < en : e > en; e += sp)
        out |= (m >> e & 1) << j++;
    return out;
}

/* Which elements of node n's output hold the batch size (the bits of sized for each input; an input for a
 * shape counts only where derived, a number computed from the batch size rather than a copy of it: a Reshape
 * to [N, 2 + N / 3 % 2, -1] is another per-sample shape at another batch size): a shape's dims picked by
 * Gather, Slice or Concat, or changed elementwise, are followed one by one (torch's x.shape[1] is not the batch
 * size), everything else takes every element. *derived_out: whether they are computed, not copied. */
static uint64_t sized_elems(const ptq_graph *g, const ptq_value *at1, const ptq_node *n, const uint64_t *sized,
                            const unsigned char *derived, unsigned char *derived_out)
{
    static const char *const same[] = {"Identity", "Cast", "Squeeze", "Unsqueeze", "Reshape", "Flatten"};
    static const char *const elementwise[] = {"Add", "Sub", "Mul", "Div", "Mod", "Equal", "Where"};
    const char *op = n->op_type;
    const int out = n->n_outputs > 0 ? n->outputs[0] : -1, x = n->n_inputs > 0 ? n->inputs[0] : -1;
    uint64_t any = 0, others = 0, m = 0; /* others: from inputs past the first (a Slice's starts, ...) */
    for (int i = 0; i < n->n_inputs; i++) {
        const int v = n->inputs[i];
        if (v >= 0 && (!shape_input(n, i) || derived[v])) {
            any |= sized[v];
            others |= i > 0 ? sized[v] : 0;
        }
    }
    *derived_out = 1;
    if (!any || out < 0 || n->n_outputs != 1)
        return any ? ALL_ELEMS : 0;
    *derived_out = derived[x]; /* moved, not computed */
    for (size_t k = 0; k < sizeof same / sizeof same[0]; k++) /* the same numbers in the same order */
        if (strcmp(op, same[k]) == 0 && !others)
            return sized[x];
    if (strcmp(op, "Gather") == 0 && ptq_node_attr_int(n, "axis", 0) == 0 && n->n_inputs == 2 && !others)
        return gather_elems(g, at1, x, n->inputs[1], sized[x]);
    if (strcmp(op, "Slice") == 0 && !others)
        return slice_elems(g, at1, n, sized[x]);
    if (strcmp(op, "Concat") == 0) {
        int64_t at = 0;
        for (int i = 0; i < n->n_inputs; i++) {
            const int64_t len = n->inputs[i] >= 0 ? n_elems(&at1[n->inputs[i]]) : -1;
            if (len < 0 || at1[n->inputs[i]].ndim != 1 || at + len > 64)
                return ALL_ELEMS;
            m |= len > 0 ? sized[n->inputs[i]] << at : 0;
            *derived_out |= derived[n->inputs[i]];
            at += len;
        }
        return m;
    }
    *derived_out = 1;
    for (size_t k = 0; k < sizeof elementwise / sizeof elementwise[0]; k++) {
        if (strcmp(op, elementwise[k]) != 0)
            continue;
        const int64_t len = n_elems(&at1[out]);
        for (int i = 0; i < n->n_inputs; i++) { /* a scalar broadcasts to every element, a vector keeps its own */
            const int v = n->inputs[i];
            const int64_t lv = v >= 0 ? n_elems(&at1[v]) : -1;
            if (v < 0 || !sized[v])
                continue;
            if (lv == 1)
                return ALL_ELEMS;
            if (len < 0 || lv != len || at1[v].ndim != at1[out].ndim)
                return ALL_ELEMS;
            m |= sized[v];
        }
        return m;
    }
    return ALL_ELEMS;
}

/* The walk of ptq_graph_rows_independent: kind[v] as rows_kind gives it, sized[v] the bits of v's elements (in
 * row-major order; ALL_ELEMS for any of a larger value) that hold the batch size (read by Shape), derived[v] 1
 * where some of them are computed from it, not copied. */
static int rows_walk(const ptq_graph *g, const ptq_value *at1, const ptq_value *at2, unsigned char *kind,
                     uint64_t *sized, unsigned char *derived)
{
    for (int v = 0; v < g->n_values; v++) {
        const int is_const = at1[v].data != NULL || (at1[v].producer < 0 && !(at1[v].flags & PTQ_VALUE_INPUT));
        const int is_input = (at1[v].flags & PTQ_VALUE_INPUT) && at1[v].ndim >= 1 && at1[v].dims[0] <= 0;
        kind[v] = is_const ? ROWS_SAME : is_input ? ROWS_BATCH : (unsigned char)rows_kind(&at1[v], &at2[v]);
        sized[v] = 0;
        derived[v] = 0;
        if (kind[v] == ROWS_UNKNOWN)
            return 0;
    }
    for (int i = 0; i < g->n_inputs; i++) /* the passes split inputs and outputs along dim 0 */
        if (kind[g->inputs[i]] != ROWS_BATCH)
            return 0;
    for (int i = 0; i < g->n_outputs; i++)
        if (kind[g->outputs[i]] != ROWS_BATCH)
            return 0;
    for (int k = 0; k < g->n_nodes; k++) { /* in the order they run: producers first */
        const ptq_node *n = &g->nodes[k];
        int rows_in = 0;
        uint64_t sized_out;
        unsigned char derived_out = 0;
        for (int i = 0; i < n->n_inputs; i++)
            rows_in |= n->inputs[i] >= 0 && kind[n->inputs[i]] >= ROWS_BATCH;
        if (strcmp(n->op_type, "Shape") == 0) { /* the batch size, where its [start, end) takes the batch's axis */
            const int v0 = n->inputs[0], ndim = v0 >= 0 ? g->values[v0].ndim : 0;
            const int b = v0 >= 0 && kind[v0] >= ROWS_BATCH ? kind[v0] - ROWS_BATCH : -1;
            int64_t start = attr_axis(n, "start", 0, ndim);
            start = start < 0 ? 0 : start;
            sized_out = b >= 0 && start <= b && attr_axis(n, "end", ndim, ndim) > b ? (uint64_t)1 << (b - start) : 0;
        } else {
            for (int i = 0; i < n->n_outputs; i++) /* a row-wise input, an output of fixed shape: a reduction */
                if (rows_in && n->outputs[i] >= 0 && kind[n->outputs[i]] < ROWS_BATCH)
                    return 0;
            if (mixes_rows(g, at1, n, kind))
                return 0;
            sized_out = sized_elems(g, at1, n, sized, derived, &derived_out);
        }
        for (int i = 0; i < n->n_outputs; i++) {
            const int v = n->outputs[i];
            if (v < 0 || !(sized_out & elems_below(n_elems(&at1[v]))))
                continue;
            /* the batch size in a float, in a row-wise value (a Range over it) or in an output: a number
               that a pass of fewer samples would change */
            const ptq_dtype dt = at1[v].dtype;
            if ((dt != PTQ_DT_INT64 && dt != PTQ_DT_INT32 && dt != PTQ_DT_BOOL) || kind[v] >= ROWS_BATCH ||
                (at1[v].flags & PTQ_VALUE_OUTPUT))
                return 0;
            sized[v] = sized_out & elems_below(n_elems(&at1[v]));
            derived[v] = derived_out;
        }
    }
    return 1;
}

int ptq_graph_rows_independent(const ptq_graph *g, const ptq_value *at1, const ptq_value *at2)
{
    unsigned char *kind = malloc(2 * (size_t)g->n_values + 1);
    uint64_t *sized = malloc(((size_t)g->n_values + 1) * sizeof *sized);
    const int ok = kind && sized && rows_walk(g, at1, at2, kind, sized, kind + g->n_values);
    free(kind);
    free(sized);
    return ok;
}
