/* The int32 biases of an ort-cpu plan (include/ptq/plan.h PTQ_TARGET_ORT_CPU):
 * a Conv or ConvTranspose (or Gemm with beta 1) reading a uint8 activation
 * with int8 weights (per channel, or one scale) has its float bias (an
 * initializer, or a value folded at load: a Constant node's, an Identity's) rounded
 * to int32 with scale activation scale x weight scale and zero point 0, as
 * onnxruntime's quantize_bias_static_impl does; its Q/DQ fusions into
 * QLinearConv/QGemm need that int32 bias. quant/fake_quant.c simulates it,
 * quant/qdq_export.c writes it. Covered by tests/test_fake_quant.c,
 * tests/qdq_placement_test.py and tests/convtranspose_test.py. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant_internal.h"

const ptq_plan_entry *quant_plan_entry(const ptq_plan *p, const char *name, int is_weight)
{
    for (int64_t i = 0; i < p->n; i++)
        if (p->e[i].is_weight == is_weight && strcmp(p->e[i].name, name) == 0)
            return &p->e[i];
    return NULL;
}

ptq_status quant_int32_bias(ptq_ctx *ctx, const ptq_graph *g, const ptq_plan *p, int k, int *bias, float **scales)
{
    *bias = -1;
    *scales = NULL;
    const ptq_node *n = &g->nodes[k];
    const int conv = strcmp(n->op_type, "Conv") == 0 || strcmp(n->op_type, "ConvTranspose") == 0;
    const int gemm = strcmp(n->op_type, "Gemm") == 0;
    if (p->target != PTQ_TARGET_ORT_CPU || (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0) ||
        !(conv || gemm) || n->n_inputs < 3 || n->inputs[0] < 0 || n->inputs[1] < 0 || n->inputs[2] < 0)
        return PTQ_OK;
    if (gemm && ptq_node_attr_float(n, "beta", 1.0f) != 1.0f)
        return PTQ_OK;
    const ptq_value *b = &g->values[n->inputs[2]];
    const ptq_plan_entry *x = quant_plan_entry(p, g->values[n->inputs[0]].name, 0);
    const ptq_plan_entry *w = quant_plan_entry(p, g->values[n->inputs[1]].name, 1);
    if (!x || x->prec != PTQ_PREC_UINT8 || !w || w->prec != PTQ_PREC_INT8 ||
        !(b->flags & (PTQ_VALUE_INITIALIZER | PTQ_VALUE_FOLDED)) || b->dtype != PTQ_DT_FLOAT || !b->data ||
        b->ndim != 1 || (b->dims[0] != w->n_scales && w->n_scales != 1))
        return PTQ_OK;
    float *s = malloc(((size_t)b->dims[0] + 1) * sizeof *s);
    if (!s)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for the bias scales of '%s'", b->name);
    for (int64_t c = 0; c < b->dims[0]; c++) /* float32, as numpy multiplies the two float32 arrays */
        s[c] = x->scales[0] * w->scales[w->n_scales == 1 ? 0 : c];
    *bias = n->inputs[2];
    *scales = s;
    return PTQ_OK;
}

void quant_int32_bias_codes(const float *b, int64_t n, const float *scales, int32_t *q)
{
    for (int64_t c = 0; c < n; c++) {
        const double r = rint((double)b[c] / (double)scales[c]); /* numpy round: half to even */
        q[c] = r >= 2147483647.0 ? INT32_MAX : r <= -2147483648.0 ? INT32_MIN : (int32_t)r;
    }
}
