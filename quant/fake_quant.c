/* Simulated quantization under a plan (include/ptq/fake_quant.h) as an
 * executor overlay: weights quantized-dequantized per channel (and an
 * ort-cpu plan's biases rounded to int32, quant/bias.c; a reduce_range
 * plan's INT8 weights on [-64, 64]) into owned
 * buffers the executor reads instead of the graph's, activations rounded in
 * place as the executor produces them (host:
 * kernels/ref/numfmt.c; device: kernels/cuda/numfmt.cu, bit-exact with it),
 * and a Softmax whose input and output are both 8-bit computed on the host as
 * onnxruntime's QLinearSoftmax (kernels/ref/qlinear_softmax.c), which its
 * Q/DQ fusion runs there. Covered by tests/test_fake_quant.c,
 * tests/cuda_fake_quant.c and tests/qlinear_softmax_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "kernels/numfmt.h"
#include "ptq/fake_quant.h"
#include "quant/quant_internal.h"
#include "runtime/backend.h"

typedef struct fq_act {
    ptq_prec prec;
    float scale;
    int32_t zero_point; /* uint8 only */
} fq_act;

struct ptq_fq {
    const ptq_graph *g;
    fq_act *act;              /* [g->n_values]: the plan's rounding of each activation (fp32: none) */
    unsigned char *rounds;    /* [g->n_values]: 1 where act is not fp32 */
    unsigned char *qsoftmax;  /* [g->n_nodes]: 1 for a Softmax onnxruntime runs as QLinearSoftmax (ort_qlinear) */
    float **weight;           /* [g->n_values]: quantized-dequantized weights, NULL where the graph's stand */
    uint64_t source;          /* the weights' id for the executors' device copies */
    ptq_overlay ov;
};

void ptq_fq_free(ptq_fq *fq)
{
    if (!fq)
        return;
    if (fq->weight)
        for (int v = 0; v < fq->g->n_values; v++)
            free(fq->weight[v]);
    free(fq->weight);
    free(fq->act);
    free(fq->rounds);
    free(fq->qsoftmax);
    free(fq);
}

/* The weight of entry e (value v) quantized-dequantized channel by channel into a new buffer, INT8 codes in
 * [-qmax, qmax] (ptq_plan_weight_qmax). Both backends read it: the GPU gets a copy. */
static ptq_status weight_rounded(ptq_ctx *ctx, const ptq_value *v, const ptq_plan_entry *e, int32_t qmax, float **out)
{
    *out = NULL;
    if (v->dtype != PTQ_DT_FLOAT || !v->data || v->ndim < 0)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "weight '%s' is not a float32 constant with data", v->name);
    const weight_runs wr = weight_runs_of(v, e->axis);
    const int64_t total = wr.n_runs * wr.inner;
    float *y = malloc(((size_t)total + 1) * sizeof *y);
    if (!y)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for weight '%s'", v->name);
    const float *x = v->data;
    if (e->prec == PTQ_PREC_FP16 || e->prec == PTQ_PREC_FP32 || wr.n_ch == 1) {
        ptq_k_round_cpu(e->prec, e->n_scales ? e->scales[0] : 1.0f, e->zero_point, qmax, x, total, y);
    } else {
        ptq_k_round_channels_cpu(e->prec, e->scales, wr.n_ch, qmax, wr.n_runs, wr.inner, x, y);
    }
    *out = y;
    return PTQ_OK;
}

/* Node k's bias as the int32 codes an ort-cpu export holds, dequantized,
 * into weight[bias] (quant/bias.c says which biases). */
static ptq_status bias_rounded(ptq_ctx *ctx, const ptq_graph *g, const ptq_plan *p, int k, float **weight)
{
    int b = -1;
    float *scales = NULL;
    PTQ_TRY_RET(quant_int32_bias(ctx, g, p, k, &b, &scales));
    if (b < 0 || weight[b]) {
        free(scales);
        return PTQ_OK;
    }
    const int64_t n = g->values[b].dims[0];
    int32_t *q = malloc(((size_t)n + 1) * sizeof *q);
    float *y = malloc(((size_t)n + 1) * sizeof *y);
    if (!q || !y) {
        free(scales);
        free(q);
        free(y);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for bias '%s'", g->values[b].name);
    }
    quant_int32_bias_codes(g->values[b].data, n, scales, q);
    for (int64_t c = 0; c < n; c++)
        y[c] = (float)q[c] * scales[c]; /* DequantizeLinear: (float)(q - 0) * scale */
    weight[b] = y;
    free(scales);
    free(q);
    return PTQ_OK;
}

static const float *fq_weight(void *user, int value_index, uint64_t *source)
{
    const ptq_fq *fq = user;
    *source = fq->source;
    return fq->weight[value_index];
}

/* Rounds tensor t (value v) in place, on the host or e's device. */
static ptq_status fq_round(void *user, ptq_ctx *ctx, const ptq_exec *e, int v, ptq_tensor *t)
{
    const ptq_fq *fq = user;
    const fq_act a = fq->act[v];
    if (a.prec == PTQ_PREC_FP32)
        return PTQ_OK;
    if (t->dtype != PTQ_DT_FLOAT)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the plan rounds '%s', which is %s, not float32", fq->g->values[v].name,
                        ptq_dtype_name(t->dtype));
    const int64_t n = ptq_tensor_numel(t);
    float *x = t->data;
    if (t->mem == PTQ_MEM_HOST) {
        ptq_k_round_cpu(a.prec, a.scale, a.zero_point, PTQ_K_INT8_QMAX, x, n, x);
        return PTQ_OK;
    }
#ifdef PTQ_CUDA
    struct ptq_cuda_dev *cuda = ptq_exec_cuda_dev(e);
    if (!cuda)
        return ptq_fail(ctx, PTQ_ERR_INTERNAL, "'%s' is on a GPU the executor does not run on", fq->g->values[v].name);
    switch (a.prec) {
    case PTQ_PREC_FP16: return ptq_k_round_fp16_cuda(ctx, cuda, x, n, x);
    case PTQ_PREC_INT8: return ptq_k_fake_quant_int8_cuda(ctx, cuda, x, n, a.scale, x);
    case PTQ_PREC_UINT8: return ptq_k_fake_quant_uint8_cuda(ctx, cuda, x, n, a.scale, a.zero_point, x);
    case PTQ_PREC_FP8_E4M3: return ptq_k_fake_quant_fp8_cuda(ctx, cuda, PTQ_FP8_E4M3, x, n, a.scale, x);
    case PTQ_PREC_FP8_E5M2: return ptq_k_fake_quant_fp8_cuda(ctx, cuda, PTQ_FP8_E5M2, x, n, a.scale, x);
    case PTQ_PREC_FP32:
    case PTQ_FMT_BF16: break; /* not a plan precision (ptq_plan_check) */
    }
    return PTQ_OK;
#else
    (void)e;
    return ptq_fail(ctx, PTQ_ERR_INTERNAL, "'%s' is on a device in a build without CUDA", fq->g->values[v].name);
#endif
}

/* 1 if onnxruntime (its CPU provider, ORT_ENABLE_EXTENDED and up) runs Softmax node k of the plan's Q/DQ export
 * as QLinearSoftmax: the export puts a DequantizeLinear before it and a QuantizeLinear, its only reader, after it
 * when the plan rounds its input and its output (one nothing reads and no graph output lists has none), and the
 * fusion takes such a group at any opset and axis when both are the same 8-bit type (qdq_selectors.cc's
 * UnaryNodeGroupSelector). */
static int ort_qlinear(const ptq_graph *g, const fq_act *act, int k)
{
    const ptq_node *n = &g->nodes[k];
    if (strcmp(n->op_type, "Softmax") != 0 || (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0) ||
        n->n_inputs < 1 || n->n_outputs < 1 || n->inputs[0] < 0 || n->outputs[0] < 0)
        return 0;
    const int x = n->inputs[0], y = n->outputs[0];
    if (act[x].prec != act[y].prec || (act[x].prec != PTQ_PREC_UINT8 && act[x].prec != PTQ_PREC_INT8))
        return 0;
    if (g->values[y].flags & PTQ_VALUE_OUTPUT)
        return 1;
    for (int j = 0; j < g->n_nodes; j++)
        for (int i = 0; i < g->nodes[j].n_inputs; i++)
            if (g->nodes[j].inputs[i] == y)
                return 1;
    return 0;
}

/* a's codes of the floats x [n] (already on its grid: quantizing them again gives their codes) as uint8, an int8
 * code + 128 (kernels.h's ptq_k_qlinear_softmax_ref says why). */
static void codes_uint8(fq_act a, const float *x, int64_t n, uint8_t *q)
{
    if (a.prec == PTQ_PREC_UINT8) {
        ptq_k_quantize_uint8_ref(x, n, a.scale, a.zero_point, q);
        return;
    }
    ptq_k_quantize_int8_ref(x, n, a.scale, PTQ_K_INT8_QMAX, (int8_t *)q);
    for (int64_t i = 0; i < n; i++)
        q[i] = (uint8_t)(((int8_t *)q)[i] + 128);
}

/* Softmax node k as QLinearSoftmax: its input's codes in, its output's codes dequantized out (host float32). */
static ptq_status fq_run(void *user, ptq_ctx *ctx, int k, const ptq_tensor *const *in, int n_in,
                         ptq_tensor *const *out, int n_out)
{
    const ptq_fq *fq = user;
    const ptq_node *n = &fq->g->nodes[k];
    const fq_act ax = fq->act[n->inputs[0]], ay = fq->act[n->outputs[0]];
    const ptq_tensor *x = in[0];
    ptq_tensor *y = out[0];
    const ptq_tensor *ins[1] = {x};
    ptq_tensor *outs[1] = {y};
    const ptq_op_io io = {.graph = fq->g, .node = n, .n_in = 1, .n_out = 1, .in = ins, .out = outs};
    int64_t outer = 0, len = 0, inner = 0;
    (void)n_in;
    (void)n_out;
    if (x->dtype != PTQ_DT_FLOAT || x->mem != PTQ_MEM_HOST || y->mem != PTQ_MEM_HOST)
        return ptq_fail(ctx, PTQ_ERR_INTERNAL, "Softmax '%s': QLinearSoftmax's simulation takes host float32", n->name);
    PTQ_TRY_RET(ptq_op_softmax_view(ctx, &io, &outer, &len, &inner));
    const int64_t total = ptq_tensor_numel(x);
    uint8_t *q = malloc(2 * (size_t)total + 1);
    if (!q)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for Softmax '%s'", n->name);
    uint8_t *qy = q + total;
    codes_uint8(ax, x->data, total, q);
    const int32_t y_zp = ay.prec == PTQ_PREC_UINT8 ? ay.zero_point : ay.zero_point + 128;
    ptq_k_qlinear_softmax_ref(outer, len, inner, q, ax.scale, ay.scale, y_zp, qy);
    float *yd = y->data;
    for (int64_t i = 0; i < total; i++) /* DequantizeLinear: (float)(q - zp) * scale */
        yd[i] = (float)((int32_t)qy[i] - y_zp) * ay.scale;
    free(q);
    return PTQ_OK;
}

ptq_status ptq_fq_create(ptq_ctx *ctx, const ptq_graph *g, const ptq_plan *p, ptq_fq **out)
{
    ptq_status st = PTQ_OK;
    *out = NULL;
    ptq_fq *fq = calloc(1, sizeof *fq);
    if (!fq)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for simulated quantization");
    fq->g = g;
    fq->act = calloc((size_t)g->n_values + 1, sizeof *fq->act);
    fq->rounds = calloc((size_t)g->n_values + 1, sizeof *fq->rounds);
    fq->weight = calloc((size_t)g->n_values + 1, sizeof *fq->weight);
    fq->qsoftmax = calloc((size_t)g->n_nodes + 1, 1);
    if (!fq->act || !fq->rounds || !fq->weight || !fq->qsoftmax) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for simulated quantization");
        goto done;
    }
    for (int64_t i = 0; i < p->n; i++) {
        const ptq_plan_entry *e = &p->e[i];
        const int v = ptq_graph_find_value(g, e->name);
        if (v < 0) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the plan names '%s', which the model does not have", e->name);
            goto done;
        }
        if (!e->is_weight) {
            fq->act[v].prec = e->prec;
            fq->act[v].scale = e->n_scales ? e->scales[0] : 1.0f;
            fq->act[v].zero_point = e->zero_point;
            fq->rounds[v] = e->prec != PTQ_PREC_FP32;
            continue;
        }
        if (e->prec == PTQ_PREC_FP32 || fq->weight[v])
            continue;
        PTQ_TRY(st, weight_rounded(ctx, &g->values[v], e, (int32_t)ptq_plan_weight_qmax(p, e->prec), &fq->weight[v]),
                done);
    }
    for (int k = 0; k < g->n_nodes; k++)
        PTQ_TRY(st, bias_rounded(ctx, g, p, k, fq->weight), done);
    for (int k = 0; k < g->n_nodes; k++)
        fq->qsoftmax[k] = (unsigned char)ort_qlinear(g, fq->act, k);
    fq->source = ptq_overlay_new_id();
    fq->ov.user = fq;
    fq->ov.weight = fq_weight;
    fq->ov.round = fq_round;
    fq->ov.rounds = fq->rounds;
    fq->ov.run = fq_run;
    fq->ov.runs = fq->qsoftmax;
    *out = fq;
    fq = NULL;
done:
    ptq_fq_free(fq);
    return st;
}

const ptq_overlay *ptq_fq_overlay(const ptq_fq *fq)
{
    return &fq->ov;
}
