/* Q/DQ ONNX export of a precision plan (include/ptq/qdq.h), written with
 * the protobuf-level editor (model/onnx_edit.c) so everything the plan does
 * not touch stays byte for byte as it was. Weight codes and FP16 bits come
 * from the same C references the simulated quantization uses
 * (kernels/ref/numfmt.c); FP16 activations are a Cast pair, so onnxruntime
 * rounds where the simulation does; uint8 activations carry their zero
 * point, a reduce_range plan's INT8 weight codes lie in [-64, 64], and
 * an ort-cpu plan's biases become int32 (quant/bias.c); attributes that
 * the opset written takes as inputs (a reduction's axes, Clip's min and max,
 * Dropout's ratio) become inputs, on every node of the file, folded or not.
 * Covered by tests/qdq_export_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/numfmt.h"
#include "ptq/onnx_edit.h"
#include "ptq/qdq.h"
#include "quant/quant_internal.h"

enum { ONNX_FLOAT = 1, ONNX_INT32 = 6, ONNX_INT64 = 7, ONNX_FLOAT16 = 10, ONNX_DOUBLE = 11 };

/* The ONNX element type of p's codes (the format table's). */
static int onnx_type_of(ptq_prec p)
{
    return ptq_numfmt_get(p)->onnx_dtype;
}

/* How many node inputs read value v (a node reading it twice counts twice). */
static int n_reads(const ptq_graph *g, int v)
{
    int n = 0;
    for (int k = 0; k < g->n_nodes; k++)
        for (int i = 0; i < g->nodes[k].n_inputs; i++)
            n += g->nodes[k].inputs[i] == v;
    return n;
}

static int has_consumer(const ptq_graph *g, int v)
{
    return n_reads(g, v) > 0;
}

/* names[i] = "ptq_qdq/<tensor>/<suffix[i]>" for i < n, carved from one
 * allocation the caller frees (returned; NULL when out of memory). */
static char *qdq_names(const char *tensor, int n, const char *const *suffix, char **names)
{
    const size_t len = strlen(tensor) + 32;
    char *buf = malloc((size_t)n * len);
    for (int i = 0; buf && i < n; i++) {
        names[i] = buf + (size_t)i * len;
        snprintf(names[i], len, "ptq_qdq/%s/%s", tensor, suffix[i]);
    }
    return buf;
}

/* Makes room in the file for what the export computes weight w (value v of g) as, and sets *out to the name to
 * write it as (*buf: the allocation behind it). Where the file's nodes read w as often as ptq's graph does, *out is
 * w: an initializer is removed, and a weight folded at load (ptq_graph_fold_constants) keeps its node, which writes
 * "ptq_qdq/<w>/folded" that nothing reads. Where a node ptq folded at load reads w too (a tied weight), that node
 * read w's float values in the simulation: w stays as it is for it, *out is "ptq_qdq/<w>/<suffix>", and the nodes
 * of ptq's graph that read w read that instead. */
static ptq_status detach_weight(ptq_ctx *ctx, ptq_onnx_edit *ed, const ptq_graph *g, int v, const char *suffix,
                                const char **out, char **buf)
{
    const ptq_value *w = &g->values[v];
    const char *const sfx[2] = {"folded", suffix};
    char *n[2];
    *out = w->name;
    if (!(*buf = qdq_names(w->name, 2, sfx, n)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory exporting weight '%s'", w->name);
    if (ptq_onnx_edit_reads(ed, w->name) <= n_reads(g, v))
        return w->flags & PTQ_VALUE_FOLDED ? ptq_onnx_edit_rename_output(ctx, ed, w->name, n[0])
                                           : ptq_onnx_edit_remove_initializer(ctx, ed, w->name);
    *out = n[1];
    for (int k = 0; k < g->n_nodes; k++)
        for (int i = 0; i < g->nodes[k].n_inputs; i++)
            if (g->nodes[k].inputs[i] == v) {
                PTQ_TRY_RET(ptq_onnx_edit_rename_input_of(ctx, ed, w->name, n[1],
                                                          g->values[ptq_node_first_output(&g->nodes[k])].name));
                break;
            }
    return PTQ_OK;
}

/* The scales [n] (float32) and zero points [n] (the entry's: 0, or a uint8
 * activation's own) of entry e as initializers. */
static ptq_status add_scale_zp(ptq_ctx *ctx, ptq_onnx_edit *ed, const ptq_plan_entry *e, const char *scale_name,
                               const char *zp_name)
{
    const int64_t n = e->n_scales;
    unsigned char *zeros = calloc((size_t)n + 1, 1);
    if (!zeros)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory exporting '%s'", e->name);
    if (e->prec == PTQ_PREC_UINT8)
        memset(zeros, e->zero_point, (size_t)n);
    /* per tensor: scalars; per channel: [n] */
    const int ndim = e->axis >= 0 ? 1 : 0;
    ptq_status st = ptq_onnx_edit_add_initializer(ctx, ed, scale_name, ONNX_FLOAT, ndim, &n, e->scales,
                                                  (size_t)n * sizeof(float));
    if (st == PTQ_OK)
        st = ptq_onnx_edit_add_initializer(ctx, ed, zp_name, onnx_type_of(e->prec), ndim, &n, zeros, (size_t)n);
    free(zeros);
    return st;
}

/* x -> Q -> DQ -> every consumer of x. In place (x a graph output): x's
 * producer writes "ptq_qdq/x/float" instead and the DQ writes x, so the
 * graph's output and its readers alike hold the rounded value ptq validate
 * simulates. */
static ptq_status add_activation(ptq_ctx *ctx, ptq_onnx_edit *ed, const ptq_plan_entry *e, int in_place)
{
    static const char *const suffix[] = {"scale", "zero_point", "q", "dq", "float"};
    char *n[5], *buf = qdq_names(e->name, 5, suffix, n);
    if (!buf)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory exporting '%s'", e->name);
    char *scale = n[0], *zp = n[1], *q = n[2];
    const char *x = in_place ? n[4] : e->name, *dq = in_place ? e->name : n[3];
    const char *q_in[] = {x, scale, zp}, *dq_in[] = {q, scale, zp};
    ptq_status st = add_scale_zp(ctx, ed, e, scale, zp);
    if (st == PTQ_OK && in_place)
        st = ptq_onnx_edit_rename_output(ctx, ed, e->name, x);
    if (st == PTQ_OK)
        st = ptq_onnx_edit_add_node(ctx, ed, "QuantizeLinear", q, 3, q_in, 1, (const char *const *)&q, 0, 0);
    if (st == PTQ_OK)
        st = ptq_onnx_edit_add_node(ctx, ed, "DequantizeLinear", n[3], 3, dq_in, 1, &dq, 0, 0);
    if (st == PTQ_OK && !in_place)
        st = ptq_onnx_edit_rename_input(ctx, ed, e->name, dq, NULL);
    free(buf);
    return st;
}

/* x -> Cast(float16) -> Cast(float) -> every consumer of x: the half-precision
 * rounding the simulation applies (ptq_k_round_fp16_ref), done by the runtime;
 * in place for a graph output as add_activation. */
static ptq_status add_fp16_activation(ptq_ctx *ctx, ptq_onnx_edit *ed, const ptq_plan_entry *e, int in_place)
{
    static const char *const suffix[] = {"half", "fp16", "cast_half", "cast_float", "float"};
    char *n[5], *buf = qdq_names(e->name, 5, suffix, n);
    if (!buf)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory exporting '%s'", e->name);
    char *half = n[0], *to_half = n[2], *to_float = n[3];
    const char *x = in_place ? n[4] : e->name, *back = in_place ? e->name : n[1];
    const char *in0[] = {x}, *in1[] = {half};
    ptq_status st = PTQ_OK;
    if (in_place)
        st = ptq_onnx_edit_rename_output(ctx, ed, e->name, x);
    if (st == PTQ_OK)
        st = ptq_onnx_edit_add_node_attr(ctx, ed, "Cast", to_half, 1, in0, 1, (const char *const *)&half, "to",
                                         ONNX_FLOAT16);
    if (st == PTQ_OK)
        st = ptq_onnx_edit_add_node_attr(ctx, ed, "Cast", to_float, 1, in1, 1, &back, "to", ONNX_FLOAT);
    if (st == PTQ_OK && !in_place)
        st = ptq_onnx_edit_rename_input(ctx, ed, e->name, back, NULL);
    free(buf);
    return st;
}

/* The float weight w (value v of g) becomes a float16 initializer -> Cast(float) -> w (detach_weight). */
static ptq_status add_fp16_weight(ptq_ctx *ctx, ptq_onnx_edit *ed, const ptq_graph *g, int v, const ptq_plan_entry *e)
{
    const ptq_value *w = &g->values[v];
    int64_t total = 1;
    for (int d = 0; d < w->ndim; d++)
        total *= w->dims[d];
    static const char *const suffix[] = {"half", "cast_float"};
    char *n[2], *buf = qdq_names(e->name, 2, suffix, n);
    uint16_t *bits = malloc(((size_t)total + 1) * sizeof *bits);
    char *out_buf = NULL;
    ptq_status st = PTQ_OK;
    if (!bits || !buf) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory exporting weight '%s'", e->name);
        goto done;
    }
    char *half = n[0], *cast = n[1];
    const float *x = w->data;
    for (int64_t i = 0; i < total; i++)
        bits[i] = ptq_k_fp16_from_float_ref(x[i]);
    const char *in[] = {half}, *out[] = {e->name};
    PTQ_TRY(st, detach_weight(ctx, ed, g, v, "float", out, &out_buf), done);
    PTQ_TRY(st, ptq_onnx_edit_add_initializer(ctx, ed, half, ONNX_FLOAT16, w->ndim, w->dims, bits,
                                              (size_t)total * sizeof *bits), done);
    PTQ_TRY(st, ptq_onnx_edit_add_node_attr(ctx, ed, "Cast", cast, 1, in, 1, out, "to", ONNX_FLOAT), done);
done:
    free(bits);
    free(buf);
    free(out_buf);
    return st;
}

/* The float weight w (value v of g) becomes codes -> DQ (per channel) -> w (detach_weight), so its consumers read
 * it unchanged; INT8 codes in [-qmax, qmax] (ptq_plan_weight_qmax: 64 for a reduce_range plan). */
static ptq_status add_weight(ptq_ctx *ctx, ptq_onnx_edit *ed, const ptq_graph *g, int v, const ptq_plan_entry *e,
                             int32_t qmax)
{
    const ptq_value *w = &g->values[v];
    const weight_runs wr = weight_runs_of(w, e->axis);
    const int64_t total = wr.n_runs * wr.inner, inner = wr.inner;
    static const char *const suffix[] = {"scale", "zero_point", "q"};
    char *n[3], *buf = qdq_names(e->name, 3, suffix, n);
    unsigned char *codes = malloc((size_t)total + 1);
    char *out_buf = NULL;
    ptq_status st = PTQ_OK;
    if (!codes || !buf) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory exporting weight '%s'", e->name);
        goto done;
    }
    char *scale = n[0], *zp = n[1], *q = n[2];
    const float *x = w->data;
    for (int64_t r = 0; r < wr.n_runs; r++) {
        const float s = e->scales[r % wr.n_ch];
        if (e->prec == PTQ_PREC_INT8)
            ptq_k_quantize_int8_ref(x + r * inner, inner, s, qmax, (int8_t *)codes + r * inner);
        else
            ptq_k_quantize_fp8_ref(e->prec, x + r * inner, inner, s, codes + r * inner);
    }
    const char *dq_in[] = {q, scale, zp}, *dq_out[] = {e->name};
    PTQ_TRY(st, detach_weight(ctx, ed, g, v, "dq", dq_out, &out_buf), done);
    PTQ_TRY(st, ptq_onnx_edit_add_initializer(ctx, ed, q, onnx_type_of(e->prec), w->ndim, w->dims, codes,
                                              (size_t)total), done);
    PTQ_TRY(st, add_scale_zp(ctx, ed, e, scale, zp), done);
    PTQ_TRY(st, ptq_onnx_edit_add_node(ctx, ed, "DequantizeLinear", e->name, 3, dq_in, 1, dq_out, e->axis >= 0,
                                       e->axis), done);
done:
    free(codes);
    free(buf);
    free(out_buf);
    return st;
}

/* Entry e's Q/DQ on "ptq_qdq/<e's tensor>/biased", the Add split_float_bias
 * put after its producer. */
static ptq_status add_biased_activation(ptq_ctx *ctx, ptq_onnx_edit *ed, const ptq_plan_entry *e)
{
    const char *suffix[1] = {"biased"};
    char *nm[1] = {NULL};
    char *names = qdq_names(e->name, 1, suffix, nm);
    if (!names)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory exporting '%s'", e->name);
    ptq_plan_entry biased = *e;
    biased.name = nm[0];
    ptq_status st = add_activation(ctx, ed, &biased, 0);
    free(names);
    return st;
}

/* For a TensorRT target (which adds a quantized Conv's bias in float): node
 * k, a Conv, ConvTranspose or Gemm (beta 1) reading a quantized activation with quantized
 * weights, gets a zero bias and an Add of its float bias after it, which its
 * consumers read. onnxruntime would otherwise round the bias to int32 at
 * input scale x weight scale (its WeightBiasQuantization), which neither
 * TensorRT nor ptq's simulation does; TensorRT fuses the Add back into the
 * convolution. A quantized output is then quantized after the Add
 * (*split = 1: the caller quantizes "ptq_qdq/<output>/biased"). The node is
 * found by its output, as it may have no name in the file (the loader's
 * "<op_type>_<k>" is not there). Nodes whose output is a graph output or
 * kept in FP16 keep their bias. */
static ptq_status split_float_bias(ptq_ctx *ctx, ptq_onnx_edit *ed, const ptq_graph *g, const ptq_plan *p, int k,
                                   int *split)
{
    *split = 0;
    const ptq_node *n = &g->nodes[k];
    const int conv = strcmp(n->op_type, "Conv") == 0 || strcmp(n->op_type, "ConvTranspose") == 0;
    const int gemm = strcmp(n->op_type, "Gemm") == 0;
    if (p->target == PTQ_TARGET_ORT_CPU || (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0) ||
        !(conv || gemm) || n->n_inputs < 3 || n->n_outputs != 1 || n->inputs[0] < 0 ||
        n->inputs[1] < 0 || n->inputs[2] < 0 || n->outputs[0] < 0 || !has_consumer(g, n->outputs[0]))
        return PTQ_OK;
    if (gemm && (ptq_node_attr_float(n, "beta", 1.0f) != 1.0f || ptq_node_attr_int(n, "transA", 0)))
        return PTQ_OK;
    const ptq_value *b = &g->values[n->inputs[2]], *y = &g->values[n->outputs[0]];
    const ptq_plan_entry *x = quant_plan_entry(p, g->values[n->inputs[0]].name, 0);
    const ptq_plan_entry *w = quant_plan_entry(p, g->values[n->inputs[1]].name, 1);
    const ptq_plan_entry *out = quant_plan_entry(p, y->name, 0);
    if (!x || !ptq_prec_is_quantized(x->prec) || !w || !ptq_prec_is_quantized(w->prec) ||
        (out && out->prec == PTQ_PREC_FP16) || !(b->flags & (PTQ_VALUE_INITIALIZER | PTQ_VALUE_FOLDED)) ||
        b->dtype != PTQ_DT_FLOAT ||
        !b->data || b->ndim != 1 || (conv && (y->ndim < 2 || y->ndim > PTQ_MAX_DIMS)))
        return PTQ_OK;
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == n->outputs[0])
            return PTQ_OK;
    ptq_status st = PTQ_OK;
    const int64_t c = b->dims[0];
    const char *suffix[3] = {"bias_zero", "bias", "biased"};
    char *nm[3] = {NULL, NULL, NULL};
    float *zeros = calloc((size_t)c + 1, sizeof *zeros);
    char *names = qdq_names(y->name, 3, suffix, nm);
    if (!zeros || !names) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory exporting the bias of '%s'", n->name);
        goto done;
    }
    int64_t dims[PTQ_MAX_DIMS];
    const int ndim = conv ? y->ndim : 1; /* [1, c, 1, ...] against the Conv's output, [c] against Gemm's */
    for (int d = 0; d < ndim; d++)
        dims[d] = conv ? (d == 1 ? c : 1) : c;
    PTQ_TRY(st, ptq_onnx_edit_add_initializer(ctx, ed, nm[0], ONNX_FLOAT, 1, &c, zeros, (size_t)c * sizeof *zeros),
            done);
    PTQ_TRY(st, ptq_onnx_edit_add_initializer(ctx, ed, nm[1], ONNX_FLOAT, ndim, dims, b->data,
                                              (size_t)c * sizeof(float)), done);
    PTQ_TRY(st, ptq_onnx_edit_rename_input_of(ctx, ed, b->name, nm[0], y->name), done);
    /* read by this node alone (in the file: a node folded at load may read it too): the Add's copy replaces it; a
     * bias folded at load keeps its node, which nothing reads then */
    if ((b->flags & PTQ_VALUE_INITIALIZER) && ptq_onnx_edit_reads(ed, b->name) == 0)
        PTQ_TRY(st, ptq_onnx_edit_remove_initializer(ctx, ed, b->name), done);
    PTQ_TRY(st, ptq_onnx_edit_rename_input(ctx, ed, y->name, nm[2], NULL), done);
    const char *add_in[2] = {y->name, nm[1]};
    PTQ_TRY(st, ptq_onnx_edit_add_node(ctx, ed, "Add", nm[1], 2, add_in, 1, (const char *const *)&nm[2], 0, 0), done);
    *split = 1;
done:
    free(zeros);
    free(names);
    return st;
}

/* Bias b, quantized at node k's scales s (codes q) and dequantized into name, may be read by later Conv/Gemm nodes
 * too: ptq's simulation adds q * s in each of them (quant/fake_quant.c's bias_rounded), but onnxruntime's fused
 * integer kernels take a bias's int32 codes at their own input x weight scale. So each later reader whose scales
 * differ gets codes of its own for those values, read from "ptq_qdq/<its output>/bias_dq" instead of name. */
static ptq_status add_shared_bias(ptq_ctx *ctx, ptq_onnx_edit *ed, const ptq_graph *g, const ptq_plan *p, int k,
                                  int b, const float *s, const int32_t *q, const char *name)
{
    static const char *const suffix[] = {"bias_q", "bias_scale", "bias_zero_point", "bias_dq"};
    const int64_t n = g->values[b].dims[0];
    ptq_status st = PTQ_OK;
    for (int j = k + 1; j < g->n_nodes && st == PTQ_OK; j++) {
        const ptq_node *nj = &g->nodes[j];
        int bj = -1, same = 1;
        float *sj = NULL, *y = NULL;
        int32_t *codes = NULL, *zeros = NULL;
        char *nm[4], *buf = NULL;
        PTQ_TRY_RET(quant_int32_bias(ctx, g, p, j, &bj, &sj));
        for (int64_t c = 0; bj == b && c < n; c++)
            same = same && sj[c] == s[c];
        if (bj != b || same || nj->n_outputs < 1 || nj->outputs[0] < 0)
            goto next;
        const char *out = g->values[nj->outputs[0]].name;
        buf = qdq_names(out, 4, suffix, nm);
        y = malloc(((size_t)n + 1) * sizeof *y);
        codes = malloc(((size_t)n + 1) * sizeof *codes);
        zeros = calloc((size_t)n + 1, sizeof *zeros);
        if (!buf || !y || !codes || !zeros) {
            st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory exporting bias '%s' of '%s'", g->values[b].name, out);
            goto next;
        }
        for (int64_t c = 0; c < n; c++)
            y[c] = (float)q[c] * s[c];
        quant_int32_bias_codes(y, n, sj, codes);
        const char *dq_in[] = {nm[0], nm[1], nm[2]}, *dq_out[] = {nm[3]};
        PTQ_TRY(st, ptq_onnx_edit_add_initializer(ctx, ed, nm[0], ONNX_INT32, 1, &n, codes, (size_t)n * sizeof *codes),
                next);
        PTQ_TRY(st, ptq_onnx_edit_add_initializer(ctx, ed, nm[1], ONNX_FLOAT, 1, &n, sj, (size_t)n * sizeof *sj), next);
        PTQ_TRY(st, ptq_onnx_edit_add_initializer(ctx, ed, nm[2], ONNX_INT32, 1, &n, zeros, (size_t)n * sizeof *zeros),
                next);
        PTQ_TRY(st, ptq_onnx_edit_add_node(ctx, ed, "DequantizeLinear", nm[3], 3, dq_in, 1, dq_out, 1, 0), next);
        PTQ_TRY(st, ptq_onnx_edit_rename_input_of(ctx, ed, name, nm[3], out), next);
next:
        free(sj);
        free(y);
        free(codes);
        free(zeros);
        free(buf);
    }
    return st;
}

/* Node k's bias, when an ort-cpu plan rounds it (quant/bias.c), becomes
 * int32 codes -> DequantizeLinear (scale [C], zero point int32 0, axis 0) ->
 * the bias's name (detach_weight: a bias folded at load, or one a folded node
 * reads too, as a weight): what quantize_static writes and onnxruntime's
 * fusions into QLinearConv/QGemm need. done[g->n_values] marks biases written. */
static ptq_status add_bias(ptq_ctx *ctx, ptq_onnx_edit *ed, const ptq_graph *g, const ptq_plan *p, int k,
                           unsigned char *done_bias)
{
    int b = -1;
    float *scales = NULL;
    PTQ_TRY_RET(quant_int32_bias(ctx, g, p, k, &b, &scales));
    if (b < 0 || done_bias[b]) {
        free(scales);
        return PTQ_OK;
    }
    done_bias[b] = 1;
    const ptq_value *v = &g->values[b];
    const int64_t n = v->dims[0];
    static const char *const suffix[] = {"scale", "zero_point", "q"};
    char *nm[3], *buf = qdq_names(v->name, 3, suffix, nm), *out_buf = NULL;
    int32_t *codes = calloc((size_t)n + 1, sizeof *codes), *zeros = calloc((size_t)n + 1, sizeof *zeros);
    ptq_status st = PTQ_OK;
    if (!buf || !codes || !zeros) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory exporting bias '%s'", v->name);
        goto done;
    }
    quant_int32_bias_codes(v->data, n, scales, codes);
    const char *dq_in[] = {nm[2], nm[0], nm[1]}, *dq_out[] = {v->name};
    PTQ_TRY(st, detach_weight(ctx, ed, g, b, "dq", dq_out, &out_buf), done);
    PTQ_TRY(st, ptq_onnx_edit_add_initializer(ctx, ed, nm[2], ONNX_INT32, 1, &n, codes, (size_t)n * sizeof *codes),
            done);
    PTQ_TRY(st, ptq_onnx_edit_add_initializer(ctx, ed, nm[0], ONNX_FLOAT, 1, &n, scales, (size_t)n * sizeof *scales),
            done);
    PTQ_TRY(st, ptq_onnx_edit_add_initializer(ctx, ed, nm[1], ONNX_INT32, 1, &n, zeros, (size_t)n * sizeof *zeros),
            done);
    PTQ_TRY(st, ptq_onnx_edit_add_node(ctx, ed, "DequantizeLinear", v->name, 3, dq_in, 1, dq_out, 1, 0), done);
    PTQ_TRY(st, add_shared_bias(ctx, ed, g, p, k, b, scales, codes, dq_out[0]), done);
done:
    free(scales);
    free(codes);
    free(zeros);
    free(buf);
    free(out_buf);
    return st;
}

/* Attributes that became inputs at an opset: a model written below it and exported at or above it (per-channel
 * weights need 13, FP8 19) has each moved to an initializer, appended as the node's next input in the order listed,
 * as onnx's version converter does. Integer lists become int64 [n] (Unsqueeze's, Squeeze's axes, Split's split
 * and ReduceSum's axes at 13, the other reductions' axes at 18, Slice's starts, ends and axes at 10), a float a
 * scalar of the node's input type (Clip's min and max at 11) or float32 (Dropout's ratio at 12). An absent attribute
 * before a present one of its node takes its default (Clip's min, the lowest float); one after every present one is
 * left out (an omitted optional input). ptq runs Pad from opset 11 and no TopK: theirs never come here. A Split
 * without sizes written at 18 or later gets num_outputs, as the converter's Split 17 -> 18 adapter gives it. */
typedef enum { AI_INTS, AI_FLOAT_AS_INPUT, AI_FLOAT32 } ai_kind;
static const struct {
    const char *op_type, *attr;
    int64_t input_since;
    ai_kind kind;
    double dflt; /* where absent before a present one; NAN: required */
} attr_inputs[] = {
    {"Unsqueeze", "axes", 13, AI_INTS, NAN}, {"Squeeze", "axes", 13, AI_INTS, NAN},
    {"Split", "split", 13, AI_INTS, NAN}, {"ReduceSum", "axes", 13, AI_INTS, NAN},
    {"ReduceMean", "axes", 18, AI_INTS, NAN}, {"ReduceMax", "axes", 18, AI_INTS, NAN},
    {"ReduceMin", "axes", 18, AI_INTS, NAN}, {"ReduceProd", "axes", 18, AI_INTS, NAN},
    {"ReduceL1", "axes", 18, AI_INTS, NAN}, {"ReduceL2", "axes", 18, AI_INTS, NAN},
    {"ReduceLogSum", "axes", 18, AI_INTS, NAN}, {"ReduceLogSumExp", "axes", 18, AI_INTS, NAN},
    {"ReduceSumSquare", "axes", 18, AI_INTS, NAN}, {"Slice", "starts", 10, AI_INTS, NAN},
    {"Slice", "ends", 10, AI_INTS, NAN}, {"Slice", "axes", 10, AI_INTS, NAN},
    {"Clip", "min", 11, AI_FLOAT_AS_INPUT, -FLT_MAX}, {"Clip", "max", 11, AI_FLOAT_AS_INPUT, FLT_MAX},
    {"Dropout", "ratio", 12, AI_FLOAT32, 0.5},
};

static int64_t model_opset(const ptq_graph *g)
{
    int64_t model = 0;
    for (int i = 0; i < g->n_opsets; i++)
        if (!g->opsets[i].domain[0] || strcmp(g->opsets[i].domain, "ai.onnx") == 0)
            model = g->opsets[i].version;
    return model;
}

/* Before opset 13 Softmax, LogSoftmax and Hardmax normalize over every dim from axis on together, from 13 over
 * axis alone: the same where every dim after axis is 1 (the last dim, say). Elsewhere the export at 13 or later
 * would change what the node computes: refused, naming it. */
static ptq_status check_softmax_axis(ptq_ctx *ctx, const ptq_graph *g, const ptq_node *n, int64_t model,
                                     int64_t write_opset)
{
    if ((strcmp(n->op_type, "Softmax") != 0 && strcmp(n->op_type, "LogSoftmax") != 0 &&
         strcmp(n->op_type, "Hardmax") != 0) || model >= 13 || write_opset < 13 || n->n_inputs < 1 ||
        n->inputs[0] < 0)
        return PTQ_OK;
    const ptq_attr *a = ptq_node_attr(n, "axis");
    const ptq_value *x = &g->values[n->inputs[0]];
    const int64_t axis = a && a->type == PTQ_ATTR_INT ? (a->i < 0 ? a->i + x->ndim : a->i) : 1;
    int same = x->ndim > 0 && axis >= 0 && axis < x->ndim; /* the dims after axis all known 1 */
    for (int d = (int)axis + 1; same && d < x->ndim; d++)
        same = x->dims[d] == 1;
    if (same)
        return PTQ_OK;
    return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "node '%s' (%s, opset %lld) normalizes dims %lld and after of its "
                    "rank-%d input together; the Q/DQ export is written at opset %lld, where %s normalizes over one "
                    "dim, so it would compute something else: export the model at opset 13 or later", n->name,
                    n->op_type, (long long)model, (long long)axis, x->ndim, (long long)write_opset, n->op_type);
}

/* The initializer holding node n's attribute rule r (attr_inputs; a, or its default where a is NULL) as input, named
 * name; x: the value of n's input 0 in g, or NULL. */
static ptq_status attr_initializer(ptq_ctx *ctx, ptq_onnx_edit *ed, const ptq_node *n, size_t r, const ptq_attr *a,
                                   const ptq_value *x, const char *name)
{
    const ai_kind kind = attr_inputs[r].kind;
    if (!a && isnan(attr_inputs[r].dflt))
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "node '%s' (%s) has no '%s' attribute, which it needs", n->name,
                        n->op_type, attr_inputs[r].attr);
    if (a && a->type != (kind == AI_INTS ? PTQ_ATTR_INTS : PTQ_ATTR_FLOAT))
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "node '%s' (%s): attribute '%s' has the wrong type", n->name, n->op_type,
                        attr_inputs[r].attr);
    if (kind == AI_INTS) {
        const int64_t n_vals = a->n;
        return ptq_onnx_edit_add_initializer(ctx, ed, name, ONNX_INT64, 1, &n_vals, a->ints,
                                             (size_t)n_vals * sizeof(int64_t));
    }
    const double v = a ? (double)a->f : attr_inputs[r].dflt;
    const ptq_dtype dt = kind == AI_FLOAT_AS_INPUT && x ? x->dtype : PTQ_DT_FLOAT;
    if (dt == PTQ_DT_DOUBLE)
        return ptq_onnx_edit_add_initializer(ctx, ed, name, ONNX_DOUBLE, 0, NULL, &v, sizeof v);
    if (dt == PTQ_DT_FLOAT16) {
        const uint16_t h = ptq_k_fp16_from_float_ref((float)v);
        return ptq_onnx_edit_add_initializer(ctx, ed, name, ONNX_FLOAT16, 0, NULL, &h, sizeof h);
    }
    const float f = (float)v;
    return ptq_onnx_edit_add_initializer(ctx, ed, name, ONNX_FLOAT, 0, NULL, &f, sizeof f);
}

/* Node n's attributes that opset write_opset takes as inputs (attr_inputs), moved; g: the graph the export planned
 * on, for the type of n's input. */
static ptq_status upgrade_node(ptq_ctx *ctx, ptq_onnx_edit *ed, const ptq_graph *g, const ptq_graph *file,
                               const ptq_node *n, int64_t model, int64_t write_opset)
{
    if ((n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0) || n->n_outputs < 1 || n->outputs[0] < 0)
        return PTQ_OK;
    const char *out = file->values[n->outputs[0]].name;
    /* from 18 a Split without sizes (an input, or an attribute moved to one above) says how many parts it makes */
    if (!strcmp(n->op_type, "Split") && model < 18 && write_opset >= 18 && (n->n_inputs < 2 || n->inputs[1] < 0) &&
        !(model < 13 && ptq_node_attr(n, "split")))
        PTQ_TRY_RET(ptq_onnx_edit_set_int_attr_of(ctx, ed, out, "num_outputs", n->n_outputs));
    size_t last = SIZE_MAX; /* n's last rule whose attribute it has */
    for (size_t r = 0; r < sizeof attr_inputs / sizeof attr_inputs[0]; r++)
        if (!strcmp(n->op_type, attr_inputs[r].op_type) && model < attr_inputs[r].input_since &&
            write_opset >= attr_inputs[r].input_since && ptq_node_attr(n, attr_inputs[r].attr))
            last = r;
    if (last == SIZE_MAX)
        return PTQ_OK;
    const int xv = n->n_inputs > 0 && n->inputs[0] >= 0 ? ptq_graph_find_value(g, file->values[n->inputs[0]].name) : -1;
    for (size_t r = 0; r <= last; r++) {
        if (strcmp(n->op_type, attr_inputs[r].op_type) != 0)
            continue;
        const char *const suffix[] = {attr_inputs[r].attr};
        char *name, *buf = qdq_names(out, 1, suffix, &name);
        if (!buf)
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory exporting '%s'", n->name);
        ptq_status st = attr_initializer(ctx, ed, n, r, ptq_node_attr(n, attr_inputs[r].attr),
                                         xv >= 0 ? &g->values[xv] : NULL, name);
        if (st == PTQ_OK)
            st = ptq_onnx_edit_attr_to_input_of(ctx, ed, out, attr_inputs[r].attr, name);
        free(buf);
        if (st != PTQ_OK)
            return st;
    }
    return PTQ_OK;
}

/* Every node of the model file with an attribute opset write_opset takes as an input instead (attr_inputs), the
 * attribute moved; a Softmax whose meaning the new opset changes refused. The nodes ptq folded at load are not in
 * g but are still in the file: where g has folded values, the file's nodes come from loading it again unfolded. */
static ptq_status upgrade_attrs(ptq_ctx *ctx, ptq_onnx_edit *ed, const char *model_path, const ptq_graph *g,
                                int64_t write_opset)
{
    const int64_t model = model_opset(g);
    if (model >= write_opset)
        return PTQ_OK;
    for (int k = 0; k < g->n_nodes; k++)
        if (!g->nodes[k].domain || !g->nodes[k].domain[0] || !strcmp(g->nodes[k].domain, "ai.onnx"))
            PTQ_TRY_RET(check_softmax_axis(ctx, g, &g->nodes[k], model, write_opset));
    int folded = 0;
    for (int v = 0; v < g->n_values && !folded; v++)
        folded = (g->values[v].flags & PTQ_VALUE_FOLDED) != 0;
    ptq_graph *raw = NULL;
    if (folded)
        PTQ_TRY_RET(ptq_graph_load_onnx(ctx, model_path, &raw));
    const ptq_graph *file = raw ? raw : g;
    ptq_status st = PTQ_OK;
    for (int k = 0; st == PTQ_OK && k < file->n_nodes; k++)
        st = upgrade_node(ctx, ed, g, file, &file->nodes[k], model, write_opset);
    ptq_graph_free(raw);
    return st;
}

/* The opset to write: at least what the model has, what per-axis
 * DequantizeLinear needs (13) and, with FP8, what its types need (19). */
static ptq_status pick_opset(ptq_ctx *ctx, const ptq_graph *g, const ptq_plan *p, int64_t asked, int64_t *out)
{
    const int64_t model = model_opset(g);
    /* the first entry whose format needs the newest Q/DQ (FP8: 19) */
    const ptq_plan_entry *fp8 = NULL;
    int64_t fp8_opset = 13;
    for (int64_t i = 0; i < p->n; i++) {
        const ptq_numfmt *nf = ptq_numfmt_get(p->e[i].prec);
        if (nf && nf->qdq_opset > fp8_opset) {
            fp8 = &p->e[i];
            fp8_opset = nf->qdq_opset;
        }
    }
    int64_t need = fp8_opset;
    if (model > need)
        need = model;
    if (asked && fp8 && asked < fp8_opset)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED,
                        "opset %lld cannot express %s ('%s' in the plan): FP8 QuantizeLinear/DequantizeLinear need opset %lld",
                        (long long)asked, ptq_prec_name(fp8->prec), fp8->name, (long long)fp8_opset);
    if (asked && asked < 13)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED,
                        "opset %lld cannot express per-channel weights: DequantizeLinear takes an axis from opset 13",
                        (long long)asked);
    if (asked > PTQ_ONNX_OPSET_NEWEST)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "opset %lld does not exist yet: the newest ONNX opset ptq knows is %d",
                        (long long)asked, PTQ_ONNX_OPSET_NEWEST);
    if (asked && asked < model)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "opset %lld is below the model's own opset %lld", (long long)asked,
                        (long long)model);
    *out = asked ? asked : need;
    return PTQ_OK;
}

/* Entry e on graph output v (also read by nodes, or not): rounded in place
 * after its producer. A graph input listed as an output has no producer to
 * write another name, so it cannot carry the plan's precision. */
static ptq_status output_in_place(ptq_ctx *ctx, ptq_onnx_edit *ed, const ptq_graph *g, int v,
                                  const ptq_plan_entry *e, const char *model_path)
{
    if (g->values[v].producer < 0)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED,
                        "the plan puts graph output '%s' of %s at %s, but no node produces it (a graph input passed "
                        "through): the Q/DQ export cannot round it; keep it fp32", e->name, model_path,
                        ptq_prec_name(e->prec));
    return e->prec == PTQ_PREC_FP16 ? add_fp16_activation(ctx, ed, e, 1) : add_activation(ctx, ed, e, 1);
}

ptq_status ptq_export_qdq(ptq_ctx *ctx, const char *model_path, const ptq_graph *g, const ptq_plan *p,
                          int64_t opset, const char *out_path)
{
    ptq_status st = PTQ_OK;
    ptq_onnx_edit *ed = NULL;
    unsigned char *done_bias = NULL;
    int64_t write_opset = 0;
    PTQ_TRY_RET(pick_opset(ctx, g, p, opset, &write_opset));
    PTQ_TRY_RET(ptq_onnx_edit_open(ctx, model_path, &ed));
    if (!(done_bias = calloc((size_t)g->n_values + 1, 1))) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory exporting biases");
        goto done;
    }
    for (int k = 0; k < g->n_nodes; k++) { /* done_bias[v]: v's producer has its bias split off */
        int split = 0;
        PTQ_TRY(st, split_float_bias(ctx, ed, g, p, k, &split), done);
        if (split)
            done_bias[g->nodes[k].outputs[0]] = 1;
    }
    for (int64_t i = 0; i < p->n; i++) {
        const ptq_plan_entry *e = &p->e[i];
        const int fp16 = e->prec == PTQ_PREC_FP16;
        if (!ptq_prec_is_quantized(e->prec) && !fp16)
            continue;
        const int v = ptq_graph_find_value(g, e->name);
        if (v < 0) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the plan names '%s', which %s does not have", e->name, model_path);
            goto done;
        }
        if (e->is_weight)
            PTQ_TRY(st, fp16 ? add_fp16_weight(ctx, ed, g, v, e)
                             : add_weight(ctx, ed, g, v, e, (int32_t)ptq_plan_weight_qmax(p, e->prec)),
                    done);
        else if (done_bias[v]) /* quantized after the Add of its bias */
            PTQ_TRY(st, add_biased_activation(ctx, ed, e), done);
        else if (g->values[v].flags & PTQ_VALUE_OUTPUT) /* rounded where made: the output and its readers agree */
            PTQ_TRY(st, output_in_place(ctx, ed, g, v, e, model_path), done);
        else if (has_consumer(g, v)) /* a tensor nothing reads and no output lists: nothing to round */
            PTQ_TRY(st, fp16 ? add_fp16_activation(ctx, ed, e, 0) : add_activation(ctx, ed, e, 0), done);
    }
    if (p->target == PTQ_TARGET_ORT_CPU) {
        memset(done_bias, 0, (size_t)g->n_values + 1);
        for (int k = 0; k < g->n_nodes; k++)
            PTQ_TRY(st, add_bias(ctx, ed, g, p, k, done_bias), done);
    }
    PTQ_TRY(st, upgrade_attrs(ctx, ed, model_path, g, write_opset), done);
    PTQ_TRY(st, ptq_onnx_edit_require_opset(ctx, ed, write_opset, write_opset >= 19 ? 9 : 7), done);
    PTQ_TRY(st, ptq_onnx_edit_write(ctx, ed, out_path), done);
done:
    free(done_bias);
    ptq_onnx_edit_free(ed);
    return st;
}
