/* UINT8 asymmetric quantize and fake-quant on the GPU
 * (kernels/cuda/numfmt_uint8.cu) against kernels/ref/numfmt.c, bit for bit:
 * seeded arrays with specials (NaN, +-Inf, subnormals, +-0) and exact .5
 * ties after the division, several scales and zero points (0, 1, 128, 200,
 * 255), out of place and in place; then a bad zero point is refused.
 * Exit 77 without a GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/numfmt.h"
#include "ptq/runtime.h"
#include "testlib.h"

#ifndef PTQ_CUDA

int main(void)
{
    printf("cuda_parity_uint8: skipped: ptq was built without CUDA\n");
    return PTQ_TEST_SKIP;
}

#else

#include "kernels/cuda/cuda_kernels.h"

static void *alloc_or_die(size_t n_bytes)
{
    void *p = malloc(n_bytes);
    if (!p) {
        fprintf(stderr, "cuda_parity_uint8: out of memory\n");
        exit(1);
    }
    return p;
}

static void arrays(ptq_ctx *ctx, ptq_cuda_dev *dev)
{
    const int64_t n = 1 << 20;
    static const float scales[] = {1.0f, 0.5f, 0x1p-7f, 0.1f, 6.0f / 255.0f, 3.7e-3f, 1e-40f, 1e30f};
    static const int32_t zps[] = {0, 1, 128, 200, 255};
    const int n_scales = (int)(sizeof scales / sizeof scales[0]), n_zps = (int)(sizeof zps / sizeof zps[0]);
    float *x = alloc_or_die(sizeof *x * (size_t)n), *y_ref = alloc_or_die(sizeof *x * (size_t)n);
    float *y_dev = alloc_or_die(sizeof *x * (size_t)n);
    uint8_t *q_ref = alloc_or_die((size_t)n), *q_dev = alloc_or_die((size_t)n);
    void *x_d = NULL, *y_d = NULL, *q_d = NULL;
    int64_t n_ties = 0, n_values = 0, n_sat = 0, bad_q = 0, bad_fq = 0, bad_inplace = 0;
    if (ptq_cuda_alloc(ctx, dev, sizeof *x * (size_t)n, &x_d) != PTQ_OK ||
        ptq_cuda_alloc(ctx, dev, sizeof *x * (size_t)n, &y_d) != PTQ_OK ||
        ptq_cuda_alloc(ctx, dev, (size_t)n, &q_d) != PTQ_OK) {
        CHECK_MSG(0, "arrays: %s", ctx->msg);
        goto done;
    }
    for (int s = 0; s < n_scales; s++)
        for (int z = 0; z < n_zps; z++)
            for (int kind = 0; kind < 2; kind++) {
                const float scale = scales[s];
                const int32_t zp = zps[z];
                test_rand_seed(2000u + 31u * (uint64_t)s + 7u * (uint64_t)z + (uint64_t)kind);
                if (kind == 0) /* specials over the whole code range and beyond on both sides */
                    test_fill_specials(x, n, 400.0f * scale, 0.02f);
                else /* (k + 0.5) * scale: exact ties after the division whenever the product was exact */
                    for (int64_t i = 0; i < n; i++)
                        x[i] = ((float)(int)test_rand_uniform(-300.0f, 300.0f) + 0.5f) * scale;
                for (int64_t i = 0; i < n; i++) {
                    const float v = x[i] / scale;
                    n_ties += isfinite(v) && v - floorf(v) == 0.5f;
                }
                int ok = ptq_cuda_upload(ctx, dev, x_d, x, sizeof *x * (size_t)n) == PTQ_OK;
                ptq_k_quantize_uint8_ref(x, n, scale, zp, q_ref);
                ok = ok && ptq_k_quantize_uint8_cuda(ctx, dev, x_d, n, scale, zp, q_d) == PTQ_OK &&
                     ptq_cuda_download(ctx, dev, q_dev, q_d, (size_t)n) == PTQ_OK;
                for (int64_t i = 0; ok && i < n; i++) {
                    bad_q += q_ref[i] != q_dev[i];
                    n_sat += q_ref[i] == 0 || q_ref[i] == 255;
                }
                ptq_k_fake_quant_uint8_ref(x, n, scale, zp, y_ref);
                ok = ok && ptq_k_fake_quant_uint8_cuda(ctx, dev, x_d, n, scale, zp, y_d) == PTQ_OK &&
                     ptq_cuda_download(ctx, dev, y_dev, y_d, sizeof *x * (size_t)n) == PTQ_OK;
                if (ok) /* UINT8 fake-quant never gives NaN: bits */
                    for (int64_t i = 0; i < n; i++)
                        bad_fq += memcmp(&y_ref[i], &y_dev[i], sizeof *y_ref) != 0;
                ok = ok && ptq_k_fake_quant_uint8_cuda(ctx, dev, x_d, n, scale, zp, x_d) == PTQ_OK &&
                     ptq_cuda_download(ctx, dev, y_dev, x_d, sizeof *x * (size_t)n) == PTQ_OK;
                if (ok)
                    bad_inplace += memcmp(y_ref, y_dev, sizeof *x * (size_t)n) != 0;
                CHECK_MSG(ok, "arrays: scale %a zp %d: %s", (double)scale, (int)zp, ctx->msg);
                n_values += n;
            }
    printf("cuda_parity_uint8: %lld values (%d scales x %d zero points), %lld exact .5 ties, %lld saturated codes; "
           "differing: quantize %lld, fake-quant %lld, in-place arrays %lld (all must be 0)\n",
           (long long)n_values, n_scales, n_zps, (long long)n_ties, (long long)n_sat, (long long)bad_q,
           (long long)bad_fq, (long long)bad_inplace);
    CHECK(n_ties > 0 && n_sat > 0);
    CHECK(bad_q == 0 && bad_fq == 0 && bad_inplace == 0);
    CHECK(ptq_k_fake_quant_uint8_cuda(ctx, dev, x_d, n, 1.0f, 256, y_d) == PTQ_ERR_INVALID_ARG);
    CHECK(ptq_k_quantize_uint8_cuda(ctx, dev, x_d, n, 1.0f, -1, q_d) == PTQ_ERR_INVALID_ARG);
done:
    ptq_cuda_release(dev, x_d);
    ptq_cuda_release(dev, y_d);
    ptq_cuda_release(dev, q_d);
    free(x);
    free(y_ref);
    free(y_dev);
    free(q_ref);
    free(q_dev);
}

int main(void)
{
    char why[256];
    if (!ptq_cuda_available(why, sizeof why)) {
        printf("cuda_parity_uint8: skipped: %s\n", why);
        return PTQ_TEST_SKIP;
    }
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_cuda_dev *dev = NULL;
    if (ptq_cuda_dev_create(&ctx, 0, &dev) != PTQ_OK) {
        fprintf(stderr, "cuda_parity_uint8: %s\n", ctx.msg);
        return 1;
    }
    printf("cuda_parity_uint8: GPU %s\n", ptq_cuda_dev_name(dev));
    arrays(&ctx, dev);
    ptq_cuda_dev_free(dev);
    return test_done("cuda_parity_uint8");
}

#endif
