/* Which tensors of a graph a plan may quantize (include/ptq/graph.h): the
 * activations and weights `ptq info` lists and `ptq calibrate` observes by
 * default, as the op traits table (model/op_traits.c) says. Covered by
 * tests/test_calib_set.c, tests/test_op_table.c and tests/cli_test.py. */
#include <string.h>

#include "model/op_traits.h"
#include "ptq/graph.h"

ptq_status ptq_graph_check_unquantized(ptq_ctx *ctx, const ptq_graph *g, const char *what)
{
    for (int k = 0; k < g->n_nodes; k++) {
        const ptq_node *n = &g->nodes[k];
        const ptq_op_traits *t = ptq_op_traits_find(n->domain, n->op_type);
        if (t && (t->id == PTQ_OP_QUANTIZELINEAR || t->id == PTQ_OP_DEQUANTIZELINEAR))
            return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED,
                            "node '%s' is a %s: the model is quantized already (ptq export --format qdq, "
                            "quantize_static, ModelOpt), and %s takes the float model it was made from: run it on "
                            "that one (ptq eval and ptq info run this one)",
                            n->name, n->op_type, what);
    }
    return PTQ_OK;
}

int ptq_op_is_weighted(const char *op_type)
{
    const ptq_op_traits *t = ptq_op_traits_find(NULL, op_type);
    return t && (t->flags & PTQ_OPF_WEIGHTED);
}

static int is_const(const ptq_value *v)
{
    return (v->flags & PTQ_VALUE_HAS_DATA) != 0;
}

void ptq_graph_quantizable(const ptq_graph *g, unsigned char *act, unsigned char *wt)
{
    if (act)
        memset(act, 0, (size_t)g->n_values);
    if (wt)
        memset(wt, 0, (size_t)g->n_values);
    for (int k = 0; k < g->n_nodes; k++) {
        const ptq_node *n = &g->nodes[k];
        const ptq_op_traits *t = ptq_op_traits_find(n->domain, n->op_type);
        /* an op ptq does not know: its float outputs are activations still */
        const unsigned q_out = t ? t->quant_outputs : PTQ_OP_ALL_IO, q_in = t ? t->quant_inputs : 0;
        if (act)
            for (int i = 0; i < n->n_outputs; i++)
                if (ptq_op_mask_has(q_out, i) && n->outputs[i] >= 0 && g->values[n->outputs[i]].dtype == PTQ_DT_FLOAT)
                    act[n->outputs[i]] = 1;
        for (int i = 0; i < n->n_inputs; i++) {
            int v = n->inputs[i];
            if (!ptq_op_mask_has(q_in, i) || v < 0 || g->values[v].dtype != PTQ_DT_FLOAT)
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
