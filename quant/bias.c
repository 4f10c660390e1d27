/* The int32 biases of an ort-cpu plan (include/ptq/plan.h PTQ_TARGET_ORT_CPU):
 * a Conv or ConvTranspose (or Gemm with beta 1) reading a uint8 activation
 * with int8 weights (per channel, or one scale) has its float bias (an
 * initializer, or a value folded at load: a Constant node's, an Identity's) rounded
 * to int32 with scale activation scale x weight scale and zero point 0, as
 * onnxruntime's quantize_bias_static_impl does; its Q/DQ fusions into
 * QLinearConv/QGemm need that int32 bias. quant/fake_quant.c simulates it,
 * quant/qdq_export.c writes it. A weight scale too small for its bias to fit
 * int32 is raised when the plan is made (quant_plan_fit_int32_biases). Covered by
 * tests/test_fake_quant.c, tests/test_plan.c, tests/qdq_placement_test.py and tests/convtranspose_test.py. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
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
        /* 0/0 (a bias of 0 at a scale that underflowed to 0) is NaN, which no int32 holds: 0, as any code times 0 */
        q[c] = isnan(r) ? 0 : r >= 2147483647.0 ? INT32_MAX : r <= -2147483648.0 ? INT32_MIN : (int32_t)r;
    }
}

/* onnxruntime's _adjust_weight_scale_for_int32_bias (quantization/qdq_quantizer.py), for a weight quantized
 * symmetric int8: the smallest bias scale whose codes of |bias| <= absmax fit int32, with its margin of 1.0001 over
 * the range INT32_MIN + 1 .. INT32_MAX, in float64 as numpy computes it. */
static double int32_bias_scale_min(double absmax)
{
    return 1.0001 * (2.0 * absmax) / ((double)INT32_MAX - ((double)INT32_MIN + 1.0));
}

/* Weight scale w_scale raised, as onnxruntime raises it, so that the bias scale x_scale * w_scale is at least
 * int32_bias_scale_min(absmax); unchanged where it already is. */
static float int32_bias_weight_scale(float x_scale, float w_scale, double absmax)
{
    const double want = int32_bias_scale_min(absmax), have = (double)x_scale * (double)w_scale;
    if (!(have < want && have > 0.0))
        return w_scale;
    return (float)((double)w_scale * (want / have));
}

ptq_status quant_plan_fit_int32_biases(ptq_ctx *ctx, const ptq_graph *g, ptq_plan *p)
{
    for (int k = 0; k < g->n_nodes; k++) {
        int b = -1;
        float *bias_scales = NULL;
        PTQ_TRY_RET(quant_int32_bias(ctx, g, p, k, &b, &bias_scales));
        free(bias_scales);
        if (b < 0)
            continue;
        const ptq_node *n = &g->nodes[k];
        const float x_scale = quant_plan_entry(p, g->values[n->inputs[0]].name, 0)->scales[0];
        ptq_plan_entry *w = &p->e[quant_plan_entry(p, g->values[n->inputs[1]].name, 1) - p->e];
        const ptq_value *bv = &g->values[b];
        const float *bias = bv->data;
        int64_t n_raised = 0;
        if (w->n_scales == 1) { /* one scale: the whole bias's range, 0 included */
            double absmax = 0.0;
            for (int64_t c = 0; c < bv->dims[0]; c++)
                absmax = fmax(absmax, fabs((double)bias[c]));
            const float s = int32_bias_weight_scale(x_scale, w->scales[0], absmax);
            n_raised += s != w->scales[0];
            w->scales[0] = s;
        } else {
            for (int64_t c = 0; c < w->n_scales; c++) {
                const float s = int32_bias_weight_scale(x_scale, w->scales[c], fabs((double)bias[c]));
                n_raised += s != w->scales[c];
                w->scales[c] = s;
            }
        }
        if (n_raised == 0)
            continue;
        char *source = malloc(strlen(w->source ? w->source : "") + strlen(bv->name) + 96);
        if (!source)
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory building a plan");
        sprintf(source, "%s; %lld scale%s raised for the int32 bias '%s' (as quantize_static)",
                w->source ? w->source : "", (long long)n_raised, n_raised == 1 ? "" : "s", bv->name);
        free(w->source);
        w->source = source;
    }
    return PTQ_OK;
}
