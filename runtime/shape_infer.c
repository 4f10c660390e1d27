/* Static shape and dtype inference over a whole graph: each node's infer
 * from runtime/op.h on tensors that carry shapes but no data, except
 * constants and small results computed from constants and from shapes only
 * (Constant nodes, Shape and the arithmetic after it), which are folded on
 * the host so that shape-carrying inputs such as Reshape's shape are known
 * (for the batch given; the executor recomputes them each run). Covered by tests/test_shape_infer.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptq/runtime.h"
#include "runtime/op.h"

/* Results from constants below this size are folded (kept as data), those over FOLD_SHAPE_BYTES (larger than
 * any shape-like input) while all such held stay within FOLD_HELD_BYTES: every folded result is held until the end,
 * and a small file of a thousand Identities of one 1 MiB weight would otherwise take a gigabyte. */
#define FOLD_MAX_BYTES ((size_t)1 << 20)
#define FOLD_SHAPE_BYTES ((size_t)4096)
#define FOLD_HELD_BYTES ((size_t)16 << 20)

/* any_dim: an unknown input dim past the batch is any_dim (ptq_graph_infer_types) rather than an error; 0: an
 * error. */
static ptq_status infer(ptq_ctx *ctx, ptq_graph *g, int64_t batch, int64_t any_dim)
{
    ptq_status st = PTQ_OK;
    ptq_op_frame frame;
    memset(&frame, 0, sizeof frame);
    ptq_tensor *t = calloc((size_t)g->n_values + 1, sizeof *t);
    unsigned char *owned = calloc((size_t)g->n_values + 1, 1);
    if (!t || !owned) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory inferring shapes");
        goto done;
    }
    for (int v = 0; v < g->n_values; v++) {
        const ptq_value *val = &g->values[v];
        t[v].dtype = val->dtype;
        t[v].ndim = val->ndim < 0 ? 0 : val->ndim;
        memcpy(t[v].dims, val->dims, sizeof t[v].dims);
        if (val->flags & PTQ_VALUE_HAS_DATA)
            t[v].data = (void *)val->data;
    }
    for (int i = 0; i < g->n_inputs; i++) {
        ptq_tensor *x = &t[g->inputs[i]];
        const ptq_value *val = &g->values[g->inputs[i]];
        for (int d = 0; d < x->ndim; d++) {
            if (x->dims[d] >= 0)
                continue;
            if (d > 0 && !any_dim) {
                st = ptq_fail(ctx, PTQ_ERR_SHAPE, "input '%s': dim %d is unknown; only the batch dim may be", val->name, d);
                goto done;
            }
            x->dims[d] = d > 0 ? any_dim : batch;
        }
        if (val->ndim < 0) {
            st = ptq_fail(ctx, PTQ_ERR_SHAPE, "input '%s' has no declared rank; shapes cannot be inferred", val->name);
            goto done;
        }
    }
    size_t held = 0; /* bytes of the results over FOLD_SHAPE_BYTES folded so far */
    for (int k = 0; k < g->n_nodes; k++) {
        const ptq_node *n = &g->nodes[k];
        const ptq_op_def *op = ptq_op_find(n->domain, n->op_type);
        if (!op) {
            st = ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "node '%s': op %s is not supported by ptq", n->name, n->op_type);
            goto done;
        }
        if (!ptq_node_has_output(n)) { /* output 0, or an RNN's Y_h with Y left out */
            st = ptq_fail(ctx, PTQ_ERR_FORMAT, "node '%s' (%s) has no output", n->name, n->op_type);
            goto done;
        }
        PTQ_TRY(st, ptq_op_frame_reserve(ctx, &frame, n->n_inputs, n->n_outputs), done);
        ptq_op_io io = frame.io;
        ptq_tensor *outs = frame.out_views;
        io.graph = g;
        io.node = n;
        int all_data = 1;
        for (int i = 0; i < n->n_inputs; i++) {
            if (n->inputs[i] < 0)
                continue;
            io.in[i] = &t[n->inputs[i]];
            if (!t[n->inputs[i]].data && !ptq_op_meta_input(op, i)) {
                all_data = 0;
                if (ptq_op_host_input(op, i) && !ptq_op_late_input(op, i)) {
                    st = ptq_fail(ctx, PTQ_ERR_UNSUPPORTED,
                                  "node '%s' (%s): input '%s' (input %d) is computed at run time, but ptq needs it "
                                  "before the run (a shape or parameter its shape inference reads): it must come "
                                  "from initializers, Constant nodes or Shape and arithmetic on them",
                                  n->name, n->op_type,
                                  g->values[n->inputs[i]].name, i);
                    goto done;
                }
            }
        }
        PTQ_TRY(st, op->infer(ctx, &io), done);
        size_t out_bytes = 0;
        for (int i = 0; i < n->n_outputs; i++) { /* saturating: sizes from a file */
            const size_t b = ptq_tensor_bytes(&outs[i]);
            out_bytes = b > SIZE_MAX - out_bytes ? SIZE_MAX : out_bytes + b;
        }
        const int large = out_bytes > FOLD_SHAPE_BYTES;
        int fold = all_data && out_bytes <= FOLD_MAX_BYTES && (!large || out_bytes <= FOLD_HELD_BYTES - held) &&
                   ptq_op_macs(&io) <= PTQ_FOLD_MAX_MACS;
        for (int i = 0; fold && i < n->n_outputs; i++) {
            outs[i].data = malloc(ptq_tensor_bytes(&outs[i]) + 1);
            if (!outs[i].data)
                fold = 0;
        }
        if (fold && op->run_ref(ctx, &io) != PTQ_OK)
            fold = 0; /* not foldable here; the shapes still stand */
        if (fold && large)
            held += out_bytes;
        for (int i = 0; i < n->n_outputs; i++) {
            int v = n->outputs[i];
            if (v < 0 || !fold) {
                free(outs[i].data);
                outs[i].data = NULL;
            }
            if (v < 0)
                continue;
            t[v] = outs[i];
            owned[v] = outs[i].data != NULL;
            ptq_value *val = &g->values[v];
            val->dtype = outs[i].dtype;
            val->ndim = outs[i].ndim;
            memcpy(val->dims, outs[i].dims, sizeof val->dims);
        }
    }
done:
    ptq_op_frame_free(&frame);
    for (int v = 0; t && owned && v < g->n_values; v++)
        if (owned[v])
            free(t[v].data);
    free(t);
    free(owned);
    return st;
}

ptq_status ptq_graph_infer_shapes(ptq_ctx *ctx, ptq_graph *g, int64_t batch)
{
    if (batch < 1)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "shape inference at batch %lld: the batch must be at least 1",
                        (long long)batch);
    return infer(ctx, g, batch, 0);
}

/* The largest unknown input dim tried: a sequence length (BERT's 512) that a graph which folds the sequence (a
 * Reshape to [N, L / 2, 2 * H]) or cuts it into windows needs a multiple of. */
#define TYPES_MAX_DIM 512

ptq_status ptq_graph_infer_types_at(ptq_ctx *ctx, ptq_graph *g, int64_t *dim)
{
    ptq_status st = infer(ctx, g, 1, 1);
    int64_t d = 1;
    /* a shape that does not fit at 1 may at a longer sequence; another failure is no matter of the dim */
    for (int64_t next = 2; st == PTQ_ERR_SHAPE && next <= TYPES_MAX_DIM; next *= 2) {
        ptq_ctx scratch;
        ptq_ctx_init(&scratch);
        if (infer(&scratch, g, 1, next) == PTQ_OK) {
            d = next;
            st = PTQ_OK;
        }
    }
    if (st != PTQ_OK) /* none fits: 1's error, and g's shapes as far as 1 got */
        st = infer(ctx, g, 1, 1);
    if (dim)
        *dim = st == PTQ_OK ? d : 0;
    return st;
}

ptq_status ptq_graph_infer_types(ptq_ctx *ctx, ptq_graph *g)
{
    return ptq_graph_infer_types_at(ctx, g, NULL);
}
