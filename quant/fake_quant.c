/* Simulated quantization under a plan (include/ptq/fake_quant.h): weights
 * quantized-dequantized per channel into owned buffers patched into the
 * graph, activations rounded in place as the executor produces them (host:
 * kernels/ref/numfmt.c; device: kernels/cuda/numfmt.cu, bit-exact with it).
 * Covered by tests/test_fake_quant.c and tests/cuda_fake_quant.c. */
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
} fq_act;

struct ptq_fq {
    ptq_graph *g;
    fq_act *act;              /* [g->n_values]: the plan's rounding of each activation (fp32: none) */
    int n_patched;
    int *patched;             /* [n_patched] value indices whose data fq replaced */
    const void **original;    /* [n_patched] their data before */
    float **owned;            /* [n_patched] the replacement buffers */
    struct ptq_cuda_dev *cuda; /* the bound executor's GPU, or NULL */
};

void ptq_fq_free(ptq_fq *fq)
{
    if (!fq)
        return;
    for (int i = 0; i < fq->n_patched; i++) {
        fq->g->values[fq->patched[i]].data = fq->original[i];
        free(fq->owned[i]);
    }
    free(fq->act);
    free(fq->patched);
    free(fq->original);
    free(fq->owned);
    free(fq);
}

/* y[n] = x rounded as prec with scale (host, reference kernels); x == y allowed. */
static void round_host(ptq_prec prec, float scale, const float *x, int64_t n, float *y)
{
    switch (prec) {
    case PTQ_PREC_FP16: ptq_k_round_fp16_ref(x, n, y); break;
    case PTQ_PREC_INT8: ptq_k_fake_quant_int8_ref(x, n, scale, y); break;
    case PTQ_PREC_FP8_E4M3: ptq_k_fake_quant_fp8_ref(PTQ_FP8_E4M3, x, n, scale, y); break;
    case PTQ_PREC_FP8_E5M2: ptq_k_fake_quant_fp8_ref(PTQ_FP8_E5M2, x, n, scale, y); break;
    case PTQ_PREC_FP32:
    case PTQ_FMT_BF16: /* not a plan precision (ptq_plan_check) */
        if (x != y)
            memcpy(y, x, (size_t)n * sizeof *y);
        break;
    }
}

/* The weight of entry e (value v) quantized-dequantized channel by channel into a new buffer. */
static ptq_status weight_rounded(ptq_ctx *ctx, const ptq_value *v, const ptq_plan_entry *e, float **out)
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
        round_host(e->prec, e->n_scales ? e->scales[0] : 1.0f, x, total, y);
    } else {
        for (int64_t r = 0; r < wr.n_runs; r++)
            round_host(e->prec, e->scales[r % wr.n_ch], x + r * wr.inner, wr.inner, y + r * wr.inner);
    }
    *out = y;
    return PTQ_OK;
}

ptq_status ptq_fq_create(ptq_ctx *ctx, ptq_graph *g, const ptq_plan *p, ptq_fq **out)
{
    ptq_status st = PTQ_OK;
    *out = NULL;
    ptq_fq *fq = calloc(1, sizeof *fq);
    if (!fq)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for simulated quantization");
    fq->g = g;
    fq->act = calloc((size_t)g->n_values + 1, sizeof *fq->act);
    fq->patched = calloc((size_t)p->n + 1, sizeof *fq->patched);
    fq->original = calloc((size_t)p->n + 1, sizeof *fq->original);
    fq->owned = calloc((size_t)p->n + 1, sizeof *fq->owned);
    if (!fq->act || !fq->patched || !fq->original || !fq->owned) {
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
            continue;
        }
        if (e->prec == PTQ_PREC_FP32)
            continue;
        float *y = NULL;
        PTQ_TRY(st, weight_rounded(ctx, &g->values[v], e, &y), done);
        fq->patched[fq->n_patched] = v;
        fq->original[fq->n_patched] = g->values[v].data;
        fq->owned[fq->n_patched] = y;
        fq->n_patched++;
        g->values[v].data = y;
    }
    *out = fq;
    fq = NULL;
done:
    ptq_fq_free(fq);
    return st;
}

ptq_status ptq_fq_bind(ptq_ctx *ctx, ptq_fq *fq, ptq_exec *e)
{
    (void)ctx;
    fq->cuda = ptq_exec_cuda_dev(e);
    return PTQ_OK;
}

/* Rounds tensor t (value v) in place, on the host or its device. */
static ptq_status round_tensor(ptq_ctx *ctx, const ptq_fq *fq, int v, const ptq_tensor *t)
{
    const fq_act a = fq->act[v];
    if (a.prec == PTQ_PREC_FP32)
        return PTQ_OK;
    if (t->dtype != PTQ_DT_FLOAT)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the plan rounds '%s', which is %s, not float32", fq->g->values[v].name,
                        ptq_dtype_name(t->dtype));
    const int64_t n = ptq_tensor_numel(t);
    float *x = t->data;
    if (t->mem == PTQ_MEM_HOST) {
        round_host(a.prec, a.scale, x, n, x);
        return PTQ_OK;
    }
#ifdef PTQ_CUDA
    if (!fq->cuda)
        return ptq_fail(ctx, PTQ_ERR_INTERNAL, "'%s' is on the GPU but the quantizer is not bound to an executor",
                        fq->g->values[v].name);
    switch (a.prec) {
    case PTQ_PREC_FP16: return ptq_k_round_fp16_cuda(ctx, fq->cuda, x, n, x);
    case PTQ_PREC_INT8: return ptq_k_fake_quant_int8_cuda(ctx, fq->cuda, x, n, a.scale, x);
    case PTQ_PREC_FP8_E4M3: return ptq_k_fake_quant_fp8_cuda(ctx, fq->cuda, PTQ_FP8_E4M3, x, n, a.scale, x);
    case PTQ_PREC_FP8_E5M2: return ptq_k_fake_quant_fp8_cuda(ctx, fq->cuda, PTQ_FP8_E5M2, x, n, a.scale, x);
    case PTQ_PREC_FP32:
    case PTQ_FMT_BF16: break; /* not a plan precision (ptq_plan_check) */
    }
    return PTQ_OK;
#else
    return ptq_fail(ctx, PTQ_ERR_INTERNAL, "'%s' is on a device in a build without CUDA", fq->g->values[v].name);
#endif
}

ptq_status ptq_fq_tap(void *user, ptq_ctx *ctx, const ptq_graph *g, int node_index, int value_index,
                      const ptq_tensor *t)
{
    const ptq_fq *fq = user;
    (void)node_index;
    if (g != fq->g)
        return ptq_fail(ctx, PTQ_ERR_INTERNAL, "quantizer tapped on a graph it was not made for");
    return round_tensor(ctx, fq, value_index, t);
}

ptq_status ptq_fq_apply_inputs(ptq_ctx *ctx, ptq_fq *fq, ptq_tensor *inputs)
{
    for (int k = 0; k < fq->g->n_inputs; k++)
        PTQ_TRY_RET(round_tensor(ctx, fq, fq->g->inputs[k], &inputs[k]));
    return PTQ_OK;
}
