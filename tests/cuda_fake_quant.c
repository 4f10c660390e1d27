/* Simulated quantization on the GPU (quant/fake_quant.c through
 * kernels/cuda/numfmt.cu): the demo model on the CUDA executor under an INT8
 * plan and an FP8 plan; at every planned activation the tensor is copied
 * down before and after the quantizer rounds it on the device, and the
 * device's result must equal the C reference's rounding of the copy, bit for
 * bit. Exit 77 without a GPU. */
#include <stdlib.h>
#include <string.h>

#include "kernels/numfmt.h"
#include "ptq/fake_quant.h"
#include "testlib.h"

#ifndef PTQ_CUDA

int main(void)
{
    printf("cuda_fake_quant: skipped: ptq was built without CUDA\n");
    return PTQ_TEST_SKIP;
}

#else

#include "kernels/cuda/cuda_kernels.h"
#include "runtime/backend.h"

static const char SHA[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

typedef struct watch {
    ptq_fq *fq;
    const ptq_plan *plan;
    ptq_exec *e;
    int64_t n_values, n_differ;
    int n_tensors;
} watch;

static ptq_status tap(void *user, ptq_ctx *ctx, const ptq_graph *g, int node, int value, const ptq_tensor *t)
{
    watch *w = user;
    const ptq_plan_entry *pe = NULL;
    for (int64_t i = 0; i < w->plan->n && !pe; i++)
        if (strcmp(w->plan->e[i].name, g->values[value].name) == 0)
            pe = &w->plan->e[i];
    const ptq_overlay *ov = ptq_fq_overlay(w->fq);
    ptq_tensor x = *t;
    if (!ov->rounds[value])
        return PTQ_OK;
    if (!pe || t->mem != PTQ_MEM_CUDA || pe->prec == PTQ_PREC_FP32)
        return ov->round(ov->user, ctx, w->e, value, &x);
    const int64_t n = ptq_tensor_numel(t);
    float *before = malloc((size_t)n * sizeof *before), *after = malloc((size_t)n * sizeof *after);
    if (!before || !after)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
    ptq_cuda_dev *d = ptq_exec_cuda_dev(w->e);
    ptq_status st = ptq_cuda_download(ctx, d, before, t->data, (size_t)n * sizeof(float));
    if (st == PTQ_OK)
        st = ov->round(ov->user, ctx, w->e, value, &x);
    if (st == PTQ_OK)
        st = ptq_cuda_download(ctx, d, after, t->data, (size_t)n * sizeof(float));
    if (st == PTQ_OK) {
        const float scale = pe->n_scales ? pe->scales[0] : 1.0f;
        switch (pe->prec) {
        case PTQ_PREC_FP16: ptq_k_round_fp16_ref(before, n, before); break;
        case PTQ_PREC_INT8: ptq_k_fake_quant_int8_ref(before, n, scale, PTQ_K_INT8_QMAX, before); break;
        case PTQ_PREC_UINT8: ptq_k_fake_quant_uint8_ref(before, n, scale, pe->zero_point, before); break;
        case PTQ_PREC_FP8_E4M3: ptq_k_fake_quant_fp8_ref(PTQ_FP8_E4M3, before, n, scale, before); break;
        case PTQ_PREC_FP8_E5M2: ptq_k_fake_quant_fp8_ref(PTQ_FP8_E5M2, before, n, scale, before); break;
        case PTQ_PREC_FP32:
        case PTQ_FMT_BF16: break; /* not a plan precision */
        }
        for (int64_t i = 0; i < n; i++)
            w->n_differ += memcmp(&before[i], &after[i], sizeof(float)) != 0;
        w->n_values += n;
        w->n_tensors++;
    }
    free(before);
    free(after);
    return st;
}

int main(void)
{
    char why[256];
    if (!ptq_cuda_available(why, sizeof why)) {
        printf("cuda_fake_quant: skipped: %s\n", why);
        return PTQ_TEST_SKIP;
    }
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_graph *g = test_load_demo_model("cuda_fake_quant");
    if (!g)
        return 1;
    ptq_calib_set *s = NULL;
    float obs[1000];
    test_rand_seed(6);
    test_fill_uniform(obs, 1000, -6.0f, 6.0f);
    CHECK(ptq_calib_set_create(&ctx, g, NULL, 0, &s) == PTQ_OK && ptq_calib_set_describe(&ctx, s, SHA, "m", "p") == PTQ_OK);
    for (int v = 0; v < g->n_values; v++) {
        ptq_tensor t = {PTQ_DT_FLOAT, 1, {1000}, obs, PTQ_MEM_HOST, 0};
        CHECK(ptq_calib_set_tap(s, &ctx, g, -1, v, &t) == PTQ_OK);
    }
    const int64_t n = 100;
    float *x = malloc((size_t)n * 784 * sizeof *x);
    /* the last: target ort-cpu, every activation but the FP32 edges in asymmetric uint8 */
    static const ptq_prec cores[] = {PTQ_PREC_INT8, PTQ_PREC_FP8_E4M3, PTQ_PREC_FP8_E5M2, PTQ_PREC_INT8};
    for (int c = 0; c < 4; c++) {
        const ptq_target target = c == 3 ? PTQ_TARGET_ORT_CPU : PTQ_TARGET_TRT;
        ptq_calib_params cp = {PTQ_CALIB_MINMAX, PTQ_QFORMAT_INT8, 0};
        ptq_plan *plan = NULL;
        ptq_fq *fq = NULL;
        ptq_exec *e = NULL;
        /* --placement all: every observed activation rounded, the most the overlay does */
        CHECK(ptq_plan_make_target(&ctx, g, SHA, "m", s, "a.h5", &cp, cores[c], PTQ_PLACEMENT_ALL, target, &plan) ==
              PTQ_OK);
        int n_uint8 = 0; /* produced activations in uint8 (the graph input is an edge) */
        for (int64_t i = 0; plan && i < plan->n; i++)
            n_uint8 += !plan->e[i].is_weight && plan->e[i].prec == PTQ_PREC_UINT8;
        CHECK(plan && ptq_fq_create(&ctx, g, plan, &fq) == PTQ_OK);
        watch w = {fq, plan, NULL, 0, 0, 0};
        ptq_exec_params p = {PTQ_DEVICE_CUDA, 0, tap, &w, 0, PTQ_MATH_FP32};
        CHECK_MSG(fq && ptq_exec_create(&ctx, g, &p, &e) == PTQ_OK, "%s", ctx.msg);
        w.e = e;
        if (e) { /* the tap rounds through the overlay's own entry point, before and after on the GPU */
            test_fill_uniform(x, n * 784, -0.81f, 2.03f);
            ptq_tensor in = {PTQ_DT_FLOAT, 4, {n, 1, 28, 28}, x, PTQ_MEM_HOST, 0}, out;
            CHECK_MSG(ptq_exec_run(&ctx, e, &in, &out) == PTQ_OK, "%s", ctx.msg);
        }
        printf("cuda_fake_quant: core %s, target %s: %d planned activations rounded on the GPU, %lld values, %lld differ from "
               "the C reference (must be 0)\n",
               ptq_prec_name(cores[c]), ptq_target_name(target), w.n_tensors, (long long)w.n_values, (long long)w.n_differ);
        CHECK(w.n_tensors == (target == PTQ_TARGET_ORT_CPU ? n_uint8 : 22) && w.n_differ == 0);
        CHECK(target == PTQ_TARGET_TRT || n_uint8 > 10);
        ptq_exec_free(e);
        ptq_fq_free(fq);
        ptq_plan_free(plan);
    }
    free(x);
    ptq_calib_set_free(s);
    ptq_graph_free(g);
    return test_done("cuda_fake_quant");
}

#endif
