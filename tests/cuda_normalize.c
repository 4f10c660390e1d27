/* 8-bit images normalized on the GPU (kernels/cuda/normalize.cu) against
 * ptq_preprocess_image, the host reference, bit for bit: gray, gray+alpha,
 * RGB and RGBA sources into 1- and 3-channel inputs, interleaved and
 * planar storage, RGB and BGR, NCHW and NHWC (the executor's side:
 * tests/test_exec_u8.c). Exit 77 without a GPU. */
#include <stdlib.h>
#include <string.h>

#include "ptq/dataset.h"
#include "testlib.h"

#ifndef PTQ_CUDA

int main(void)
{
    printf("cuda_normalize: skipped: ptq was built without CUDA\n");
    return PTQ_TEST_SKIP;
}

#else

#include "kernels/cuda/cuda_kernels.h"

static void fill_bytes(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(test_rand_u64() >> 56);
}

/* The host reference for n images. */
static void reference(const ptq_preprocess *p, const uint8_t *src, int64_t n, int64_t h, int64_t w, int64_t c,
                      int planar, float *out)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    for (int64_t i = 0; i < n; i++)
        CHECK(ptq_preprocess_image(&ctx, p, src + i * h * w * c, PTQ_DT_UINT8, h, w, c, planar,
                                   out + i * p->n_channels * h * w) == PTQ_OK);
}

static int kernel_cases(ptq_cuda_dev *d)
{
    enum { N = 5, H = 17, W = 23 };
    static const int combos[][2] = {{1, 1}, {1, 3}, {2, 1}, {2, 3}, {3, 3}, {3, 1}, {4, 3}, {4, 1}}; /* c, n_out */
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    uint8_t *src = malloc((size_t)N * H * W * 4), *d_src = NULL;
    float *want = malloc((size_t)N * H * W * 3 * sizeof *want), *got = malloc((size_t)N * H * W * 3 * sizeof *got);
    float *d_dst = NULL;
    CHECK(ptq_cuda_alloc(&ctx, d, (size_t)N * H * W * 4, (void **)&d_src) == PTQ_OK);
    CHECK(ptq_cuda_alloc(&ctx, d, (size_t)N * H * W * 3 * sizeof(float), (void **)&d_dst) == PTQ_OK);
    int n_cases = 0, n_same = 0;
    for (size_t k = 0; k < sizeof combos / sizeof combos[0]; k++)
        for (int planar = 0; planar < 2; planar++)
            for (int bgr = 0; bgr < 2; bgr++)
                for (int nhwc = 0; nhwc < 2; nhwc++) {
                    const int c = combos[k][0], n_out = combos[k][1];
                    ptq_preprocess p;
                    ptq_preprocess_default(&p);
                    p.height = H;
                    p.width = W;
                    p.n_channels = n_out;
                    p.bgr = bgr;
                    p.nhwc = nhwc;
                    p.scale = k % 2 ? 1.0f / 255.0f : 0.00392156862745098f * 1.5f;
                    for (int i = 0; i < 3; i++) {
                        p.mean[i] = test_rand_uniform(-0.5f, 0.9f);
                        p.std[i] = test_rand_uniform(0.1f, 1.3f);
                    }
                    fill_bytes(src, (size_t)N * H * W * c);
                    reference(&p, src, N, H, W, c, planar, want);
                    ptq_norm_params np = {N, H, W, c, planar, n_out, bgr, nhwc, p.scale, {0}, {0}};
                    memcpy(np.mean, p.mean, sizeof np.mean);
                    memcpy(np.std, p.std, sizeof np.std);
                    const size_t n_out_floats = (size_t)N * H * W * n_out;
                    CHECK(ptq_cuda_upload(&ctx, d, d_src, src, (size_t)N * H * W * c) == PTQ_OK);
                    CHECK(ptq_k_normalize_u8_cuda(&ctx, d, &np, d_src, d_dst) == PTQ_OK);
                    CHECK(ptq_cuda_download(&ctx, d, got, d_dst, n_out_floats * sizeof(float)) == PTQ_OK);
                    const int same = memcmp(got, want, n_out_floats * sizeof(float)) == 0;
                    CHECK_MSG(same, "c %d into %d channels, planar %d, bgr %d, nhwc %d: floats differ", c, n_out,
                              planar, bgr, nhwc);
                    n_cases++;
                    n_same += same;
                }
    printf("    cuda_normalize: %d of %d kernel cases bit-identical to ptq_preprocess_image\n", n_same, n_cases);
    ptq_cuda_release(d, d_src);
    ptq_cuda_release(d, d_dst);
    free(src);
    free(want);
    free(got);
    return 0;
}

int main(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    char why[256];
    if (ptq_cuda_device_count(why, sizeof why) < 1) {
        printf("cuda_normalize: skipped: %s\n", why);
        return PTQ_TEST_SKIP;
    }
    ptq_cuda_dev *d = NULL;
    if (ptq_cuda_dev_create(&ctx, 0, &d) != PTQ_OK) {
        printf("cuda_normalize: skipped: %s\n", ctx.msg);
        return PTQ_TEST_SKIP;
    }
    test_rand_seed(7);
    kernel_cases(d);
    ptq_cuda_dev_free(d);
    return test_done("cuda_normalize");
}

#endif
