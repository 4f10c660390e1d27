/* The channels-last plan (runtime/layout.h): the candidates by producer
 * and readers, then the ops that must read and write one layout pull their
 * tensors back to [N, C, H, W] together until nothing changes. */
#include "runtime/layout.h"

#include <string.h>

static ptq_op_id op_id(const ptq_op_def *const *ops, int k)
{
    return ops[k]->traits->id;
}

/* A float32 activation of 4 dims, all known past the batch. */
static int plain_4d(const ptq_graph *g, int v)
{
    const ptq_value *val = &g->values[v];
    if (val->flags & (PTQ_VALUE_INPUT | PTQ_VALUE_OUTPUT | PTQ_VALUE_HAS_DATA))
        return 0;
    if (val->dtype != PTQ_DT_FLOAT || val->ndim != 4)
        return 0;
    for (int d = 1; d < 4; d++)
        if (val->dims[d] <= 0)
            return 0;
    return 1;
}

static int same_dims(const ptq_graph *g, int a, int b)
{
    return a >= 0 && b >= 0 && memcmp(g->values[a].dims + 1, g->values[b].dims + 1, 3 * sizeof g->values[a].dims[0]) == 0;
}

ptq_layout_take ptq_layout_takes(ptq_op_id id)
{
    switch (id) {
    case PTQ_OP_CONV:
    case PTQ_OP_GLOBALAVERAGEPOOL: return PTQ_LAYOUT_READS;
    case PTQ_OP_RELU:
    case PTQ_OP_CLIP: /* its min and max are scalars */
    case PTQ_OP_LEAKYRELU:
    case PTQ_OP_SIGMOID:
    case PTQ_OP_HARDSIGMOID:
    case PTQ_OP_HARDSWISH:
    case PTQ_OP_TANH:
    case PTQ_OP_MAXPOOL:
    case PTQ_OP_AVERAGEPOOL:
    case PTQ_OP_ADD: return PTQ_LAYOUT_TIED;
    default: return PTQ_LAYOUT_NONE;
    }
}

/* The PTQ_LAYOUT_TIED ops, with their data values in vals (-1 where
 * absent): 1; -1 for such an op in a form that cannot tie them (a
 * broadcasting Add, a MaxPool's indices); 0 for any other op. */
static int tied(const ptq_graph *g, const ptq_op_def *const *ops, int k, int vals[3])
{
    const ptq_node *n = &g->nodes[k];
    vals[0] = vals[1] = vals[2] = -1;
    if (ptq_layout_takes(op_id(ops, k)) != PTQ_LAYOUT_TIED)
        return 0;
    if (op_id(ops, k) == PTQ_OP_ADD) {
        if (n->n_inputs != 2 || n->n_outputs != 1)
            return -1;
        vals[0] = n->inputs[0];
        vals[1] = n->inputs[1];
        vals[2] = n->outputs[0];
        return same_dims(g, vals[0], vals[1]) && same_dims(g, vals[0], vals[2]) ? 1 : -1;
    }
    if (n->n_inputs < 1 || n->n_outputs < 1 || (n->n_outputs > 1 && n->outputs[1] >= 0))
        return -1;
    vals[0] = n->inputs[0];
    vals[1] = n->outputs[0];
    return 1;
}

/* Node k may read value v as its input i when v is channels last. */
static int reads_nhwc(const ptq_graph *g, const ptq_op_def *const *ops, int k, int i)
{
    int vals[3];
    const ptq_op_id id = op_id(ops, k);
    if (ptq_layout_takes(id) == PTQ_LAYOUT_READS)
        return i == 0 && (id != PTQ_OP_CONV || g->nodes[k].n_outputs == 1);
    return tied(g, ops, k, vals) == 1 && (i == 0 || (i == 1 && id == PTQ_OP_ADD));
}

/* Node k may make its output o channels last. */
static int makes_nhwc(const ptq_graph *g, const ptq_op_def *const *ops, int k, int o)
{
    int vals[3];
    if (o != 0)
        return 0;
    if (op_id(ops, k) == PTQ_OP_CONV)
        return g->nodes[k].n_outputs == 1;
    return tied(g, ops, k, vals) == 1;
}

int ptq_layout_nhwc(const ptq_graph *g, const ptq_op_def *const *ops, unsigned char *nhwc)
{
    for (int v = 0; v < g->n_values; v++)
        nhwc[v] = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        const ptq_node *n = &g->nodes[k];
        for (int o = 0; o < n->n_outputs; o++) {
            const int v = n->outputs[o];
            if (v >= 0 && g->values[v].producer == k && plain_4d(g, v) && makes_nhwc(g, ops, k, o))
                nhwc[v] = 1;
        }
    }
    for (int k = 0; k < g->n_nodes; k++) { /* every reader must take it */
        const ptq_node *n = &g->nodes[k];
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] >= 0 && !reads_nhwc(g, ops, k, i))
                nhwc[n->inputs[i]] = 0;
    }
    for (int changed = 1; changed;) {
        changed = 0;
        for (int k = 0; k < g->n_nodes; k++) {
            int vals[3], all = 1;
            if (tied(g, ops, k, vals) != 1)
                continue;
            for (int j = 0; j < 3; j++)
                if (vals[j] >= 0 && !nhwc[vals[j]])
                    all = 0;
            for (int j = 0; j < 3 && !all; j++)
                if (vals[j] >= 0 && nhwc[vals[j]]) {
                    nhwc[vals[j]] = 0;
                    changed = 1;
                }
        }
    }
    int count = 0;
    for (int v = 0; v < g->n_values; v++)
        count += nhwc[v];
    return count;
}
