/* Constant folding at load: every node whose inputs are all constants (initializers, tensor attributes, results
 * folded before it) is computed once with the reference kernels and its outputs become constants
 * (PTQ_VALUE_FOLDED); the node leaves the graph. A weight a model stores in float16 and casts, an Identity or
 * Transpose of an initializer, a Constant node's value: each is then a weight like an initializer (planned per
 * channel, simulated and exported as one). Nodes are left to run with the data where the model names an op ptq
 * cannot run (the executor reports it), where a node writes a graph output, where computing it fails (the run
 * reports why), where its outputs would be larger than FOLD_GROWTH times its inputs and FOLD_SMALL_BYTES (an
 * Expand or ConstantOfShape of a hostile size is the run's to plan under --max-memory), or where they would take
 * the values folded so far past FOLD_KEPT_GROWTH times the model's constants plus FOLD_SMALL_BYTES (every folded value
 * stays in the graph's store: a chain of Expands, each 4x the last, or a thousand Identities of one weight would
 * otherwise grow a small file into gigabytes at load), or where it takes over PTQ_FOLD_MAX_MACS multiply-adds
 * (runtime/op.h). Covered by tests/fold_test.py. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptq/runtime.h"
#include "runtime/op.h"

#define FOLD_SMALL_BYTES ((size_t)1 << 20)
#define FOLD_GROWTH 4
/* what all folded values may take, times the model's constants: a float16 weight cast, transposed and reshaped
 * takes 6x */
#define FOLD_KEPT_GROWTH 8

static size_t add_sat(size_t a, size_t b)
{
    return b > SIZE_MAX - a ? SIZE_MAX : a + b;
}

/* The bytes folding may add to g's store: FOLD_KEPT_GROWTH times its initializers and Constant values, plus
 * FOLD_SMALL_BYTES. */
static size_t fold_budget(const ptq_graph *g)
{
    size_t const_bytes = 0;
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v].flags & (PTQ_VALUE_INITIALIZER | PTQ_VALUE_CONSTANT))
            const_bytes = add_sat(const_bytes, g->values[v].n_bytes);
    const size_t grown = const_bytes > SIZE_MAX / FOLD_KEPT_GROWTH ? SIZE_MAX : const_bytes * FOLD_KEPT_GROWTH;
    return add_sat(grown, FOLD_SMALL_BYTES);
}

/* 1 when every input node k names is a constant and none of its outputs is a graph output. */
static int foldable(const ptq_graph *g, const ptq_node *n, size_t *in_bytes)
{
    *in_bytes = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        const int v = n->inputs[i];
        if (v < 0)
            continue;
        if (!(g->values[v].flags & PTQ_VALUE_HAS_DATA) || (!g->values[v].data && g->values[v].n_bytes))
            return 0;
        *in_bytes = add_sat(*in_bytes, g->values[v].n_bytes);
    }
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i] >= 0 && (g->values[n->outputs[i]].flags & PTQ_VALUE_OUTPUT))
            return 0;
    return 1;
}

/* Computes node k into frame's out views (data malloc'd) when it folds within *left bytes, taking its outputs'
 * bytes from *left; *done = 1 then. Errors of the node's own (attributes, shapes, data) leave it to run; only
 * running out of memory is an error. */
static ptq_status fold_node(ptq_ctx *ctx, ptq_graph *g, int k, const ptq_op_def *op, ptq_op_frame *frame,
                            size_t *left, int *done)
{
    const ptq_node *n = &g->nodes[k];
    *done = 0;
    size_t in_bytes = 0;
    if (!foldable(g, n, &in_bytes))
        return PTQ_OK;
    PTQ_TRY_RET(ptq_op_frame_reserve(ctx, frame, n->n_inputs, n->n_outputs));
    ptq_op_io io = frame->io;
    io.graph = g;
    io.node = n;
    io.op = op;
    for (int i = 0; i < n->n_inputs; i++) {
        const int v = n->inputs[i];
        if (v < 0)
            continue;
        ptq_tensor *t = &frame->in_views[i];
        const ptq_value *val = &g->values[v];
        memset(t, 0, sizeof *t);
        t->dtype = val->dtype;
        t->ndim = val->ndim < 0 ? 0 : val->ndim;
        memcpy(t->dims, val->dims, sizeof t->dims);
        t->data = (void *)val->data;
        io.in[i] = t;
    }
    ptq_ctx quiet; /* a node that does not fold here is the run's to report */
    ptq_ctx_init(&quiet);
    if (op->infer(&quiet, &io) != PTQ_OK)
        return PTQ_OK;
    size_t out_bytes = 0;
    for (int i = 0; i < n->n_outputs; i++)
        out_bytes = add_sat(out_bytes, ptq_tensor_bytes(io.out[i]));
    if ((out_bytes > FOLD_SMALL_BYTES && out_bytes / FOLD_GROWTH > in_bytes) || out_bytes > *left ||
        ptq_op_macs(&io) > PTQ_FOLD_MAX_MACS)
        return PTQ_OK;
    ptq_status st = PTQ_OK;
    for (int i = 0; i < n->n_outputs; i++)
        if (!(io.out[i]->data = malloc(ptq_tensor_bytes(io.out[i]) + 1))) {
            st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory folding node '%s' (%s)", n->name, n->op_type);
            goto done;
        }
    if (op->run_ref(&quiet, &io) != PTQ_OK)
        goto done;
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i] >= 0)
            PTQ_TRY(st, ptq_graph_set_folded(ctx, g, n->outputs[i], io.out[i]), done);
    *left -= out_bytes;
    *done = 1;
done:
    for (int i = 0; i < n->n_outputs; i++) {
        free(io.out[i]->data);
        io.out[i]->data = NULL;
    }
    return st;
}

ptq_status ptq_graph_fold_constants(ptq_ctx *ctx, ptq_graph *g)
{
    const ptq_op_def **ops = NULL;
    ptq_ctx quiet;
    ptq_ctx_init(&quiet);
    if (ptq_op_resolve(&quiet, g, &ops) != PTQ_OK)
        return PTQ_OK; /* an op ptq cannot run: the executor names it; nothing is folded */
    ptq_op_frame frame;
    memset(&frame, 0, sizeof frame);
    ptq_status st = PTQ_OK;
    int n_folded = 0;
    size_t left = fold_budget(g);
    for (int k = 0; k < g->n_nodes; k++) {
        int done = 0;
        PTQ_TRY(st, fold_node(ctx, g, k, ops[k], &frame, &left, &done), out);
        n_folded += done;
    }
    if (n_folded)
        ptq_graph_drop_folded(g);
out:
    ptq_op_frame_free(&frame);
    free(ops);
    return st;
}

ptq_status ptq_model_load(ptq_ctx *ctx, const char *path, ptq_graph **out)
{
    PTQ_TRY_RET(ptq_graph_load_onnx(ctx, path, out));
    ptq_status st = ptq_graph_fold_constants(ctx, *out);
    if (st != PTQ_OK) {
        ptq_graph_free(*out);
        *out = NULL;
    }
    return st;
}
