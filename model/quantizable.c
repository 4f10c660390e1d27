/* Which tensors of a graph a plan may quantize (include/ptq/graph.h): the
 * activations and weights `ptq info` lists and `ptq calibrate` observes by
 * default. Covered by tests/test_calib_set.c and tests/cli_test.py. */
#include <string.h>

#include "ptq/graph.h"

int ptq_op_is_weighted(const char *op_type)
{
    return strcmp(op_type, "Conv") == 0 || strcmp(op_type, "Gemm") == 0 || strcmp(op_type, "MatMul") == 0;
}

static int is_const(const ptq_value *v)
{
    return (v->flags & (PTQ_VALUE_INITIALIZER | PTQ_VALUE_CONSTANT)) != 0;
}

void ptq_graph_quantizable(const ptq_graph *g, unsigned char *act, unsigned char *wt)
{
    if (act)
        memset(act, 0, (size_t)g->n_values);
    if (wt)
        memset(wt, 0, (size_t)g->n_values);
    for (int k = 0; k < g->n_nodes; k++) {
        const ptq_node *n = &g->nodes[k];
        if (act && strcmp(n->op_type, "Constant") != 0)
            for (int i = 0; i < n->n_outputs; i++)
                if (n->outputs[i] >= 0 && g->values[n->outputs[i]].dtype == PTQ_DT_FLOAT)
                    act[n->outputs[i]] = 1;
        if (!ptq_op_is_weighted(n->op_type))
            continue;
        for (int i = 0; i < n->n_inputs && i < 2; i++) {
            int v = n->inputs[i];
            if (v < 0 || g->values[v].dtype != PTQ_DT_FLOAT)
                continue;
            if (is_const(&g->values[v])) {
                if (wt)
                    wt[v] = 1;
            } else if (act) {
                act[v] = 1;
            }
        }
    }
}
