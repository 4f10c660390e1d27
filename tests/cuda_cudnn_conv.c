/* Convolution through cuDNN (kernels/cuda/cudnn.cu) against kernels/ref
 * over many shapes (groups, depthwise, strides, pads, dilations, 1x1 to
 * 7x7, 1-D/2-D/3-D; a k = 4608 case that TF32 math would fail; and the
 * same under PTQ_CONV_SPLIT=1024, layers of more than 1,024 taps summed in
 * slices of input channels, with the invariance checks below), which
 * shapes cuDNN took or declined (declined ones run through im2col +
 * cuBLAS), and batch invariance: an image's output identical bit for bit in
 * batches of 1, 7, 299 and 300 (sub-batches starting at any image, aligned
 * or not; every 8th image scaled to 2^-120, so its sums are subnormal),
 * run twice, with cuDNN and without, and with cuDNN's tuned plans (another
 * algorithm, 256 images a call; PTQ_CUDNN_TUNE=always, so they run whenever
 * a candidate gives the reference's bits) against PTQ_CUDNN_TUNE=0; under TF32,
 * ResNet-50's layers at 256 images a call give each image the same bits in a
 * batch of 512 and in batches of 100, in both layouts. Exit 77 without a GPU or
 * without cuDNN (PTQ_CUDNN_DIR names its folder). Run: build/tests/cuda_cudnn_conv */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "testlib.h"

#ifndef PTQ_CUDA

int main(void)
{
    printf("cuda_cudnn_conv: skipped: ptq was built without CUDA\n");
    return PTQ_TEST_SKIP;
}

#else

#include "kernels/cuda/cuda_kernels.h"

static ptq_ctx ctx;
static ptq_cuda_dev *dev;

/* expect: 1 cuDNN must take the shape, 0 it must decline it, 2 either */
typedef struct conv_case {
    const char *what;
    int64_t n, c_in, c_out, group;
    int64_t in[3], k[3], stride[3], dil[3], pad_lo[3], pad_hi[3];
    int bias, expect;
} conv_case;

static const conv_case cases[] = {
    {"3x3 same", 2, 3, 8, 1, {1, 16, 16}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1, 1},
    {"3x3 stride 2, odd", 2, 8, 16, 1, {1, 15, 17}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 0, 1},
    {"pointwise", 3, 16, 32, 1, {1, 8, 8}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1, 1},
    {"1x1 stride 2", 2, 8, 8, 1, {1, 9, 9}, {1, 1, 1}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1, 1},
    {"depthwise 3x3", 2, 16, 16, 16, {1, 12, 12}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1, 1},
    {"depthwise x2 5x5 s2", 2, 8, 16, 8, {1, 11, 13}, {1, 5, 5}, {1, 2, 2}, {1, 1, 1}, {0, 2, 2}, {0, 2, 2}, 0, 1},
    {"grouped dilated", 2, 16, 8, 4, {1, 10, 10}, {1, 3, 3}, {1, 1, 1}, {1, 2, 2}, {0, 2, 2}, {0, 2, 2}, 1, 1},
    {"grouped pointwise", 1, 12, 6, 3, {1, 7, 7}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1, 1},
    {"asymmetric pads", 2, 4, 6, 1, {1, 9, 8}, {1, 2, 3}, {1, 1, 2}, {1, 1, 1}, {0, 0, 1}, {0, 1, 0}, 1, 0},
    {"1-D", 2, 3, 5, 1, {1, 1, 50}, {1, 1, 5}, {1, 1, 3}, {1, 1, 2}, {0, 0, 2}, {0, 0, 2}, 1, 2},
    {"1-D grouped dilated", 2, 6, 6, 3, {1, 1, 40}, {1, 1, 3}, {1, 1, 1}, {1, 1, 4}, {0, 0, 4}, {0, 0, 4}, 1, 2},
    {"3-D", 2, 3, 4, 1, {6, 7, 8}, {3, 2, 3}, {1, 2, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1, 2},
    {"3-D grouped dilated", 2, 4, 8, 2, {5, 6, 7}, {3, 3, 3}, {1, 1, 1}, {1, 2, 1}, {1, 2, 1}, {1, 2, 1}, 0, 2},
    {"stem c_in 1", 4, 1, 24, 1, {1, 28, 28}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 0, 1},
    {"resnet stem 7x7 s2", 2, 3, 64, 1, {1, 32, 32}, {1, 7, 7}, {1, 2, 2}, {1, 1, 1}, {0, 3, 3}, {0, 3, 3}, 1, 1},
    {"3x3 k 576", 8, 64, 64, 1, {1, 14, 14}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1, 1},
    {"3x3 k 4608 (TF32 fails)", 2, 512, 32, 1, {1, 7, 7}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1, 1},
    {"bottleneck 1x1 256->64", 5, 256, 64, 1, {1, 14, 14}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1, 1},
    {"kernel > input", 1, 5, 7, 1, {1, 4, 4}, {1, 5, 5}, {1, 1, 1}, {1, 1, 1}, {0, 2, 2}, {0, 2, 2}, 1, 1},
    {"odd batch, 3 chunks", 150, 4, 4, 1, {1, 64, 64}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1, 1},
    /* a patch embedding (the kernel tiles the input, 64 or more taps a channel) goes to im2col + cuBLAS */
    {"ViT patches 16x16 s16", 3, 3, 40, 1, {1, 64, 48}, {1, 16, 16}, {1, 16, 16}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1,
     0},
    {"patches 8x8 s8, 3-D", 2, 2, 8, 1, {8, 16, 16}, {8, 8, 1}, {8, 8, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 0, 0},
    {"patches 4x4 s4 (cuDNN)", 3, 3, 16, 1, {1, 32, 32}, {1, 4, 4}, {1, 4, 4}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1, 1},
    {"16x16 s16 padded (cuDNN)", 2, 3, 16, 1, {1, 30, 30}, {1, 16, 16}, {1, 16, 16}, {1, 1, 1}, {0, 1, 1},
     {0, 1, 1}, 1, 1},
    /* more than 1,024 taps: under PTQ_CONV_SPLIT=1024, input channels in slices, the last one shorter */
    {"1x1 2048->64 (2 slices)", 3, 2048, 64, 1, {1, 7, 7}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1, 1},
    {"3x3 130->24 s2 (72 + 58)", 5, 130, 24, 1, {1, 11, 9}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 0,
     1},
};

static void fail_ctx(const char *what)
{
    fprintf(stderr, "cuda_cudnn_conv: %s: %s (%s)\n", what, ctx.msg, ctx.where);
    exit(1);
}

static float *host_floats(int64_t n)
{
    float *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    if (!p) {
        fprintf(stderr, "cuda_cudnn_conv: out of host memory\n");
        exit(1);
    }
    return p;
}

/* device copy of host[n], or n NaN floats when host is NULL */
static float *dev_floats(const float *host, int64_t n)
{
    void *p = NULL;
    size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
    if (ptq_cuda_alloc(&ctx, dev, bytes, &p) != PTQ_OK)
        fail_ctx("alloc");
    if ((host ? ptq_cuda_upload(&ctx, dev, p, host, bytes) : ptq_cuda_fill_bytes(&ctx, dev, p, 0xFF, bytes)) !=
        PTQ_OK)
        fail_ctx("upload");
    return p;
}

/* A case's device buffers, then its host ones (up to a NULL; b may be NULL before it). */
static void release_case(float *dx, float *dw, float *db, float *dy, float **host)
{
    ptq_cuda_release(dev, dx);
    ptq_cuda_release(dev, dw);
    ptq_cuda_release(dev, db);
    ptq_cuda_release(dev, dy);
    for (int i = 0; i < 3 || host[i]; i++) /* x, w, b (maybe NULL), then the outputs */
        free(host[i]);
}

static void params_of(const conv_case *cc, int64_t n, ptq_conv_params *p)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    p->c_in = cc->c_in;
    p->c_out = cc->c_out;
    p->group = cc->group;
    for (int s = 0; s < PTQ_SPATIAL; s++) {
        p->in[s] = cc->in[s];
        p->k[s] = cc->k[s];
        p->stride[s] = cc->stride[s];
        p->dil[s] = cc->dil[s];
        p->pad_lo[s] = cc->pad_lo[s];
        p->pad_hi[s] = cc->pad_hi[s];
        p->out[s] = (p->in[s] + p->pad_lo[s] + p->pad_hi[s] - p->dil[s] * (p->k[s] - 1) - 1) / p->stride[s] + 1;
    }
}

static int64_t x_numel(const ptq_conv_params *p)
{
    return p->c_in * p->in[0] * p->in[1] * p->in[2];
}

static int64_t y_numel(const ptq_conv_params *p)
{
    return p->c_out * p->out[0] * p->out[1] * p->out[2];
}

static int64_t w_numel(const ptq_conv_params *p)
{
    return p->c_out * (p->c_in / p->group) * p->k[0] * p->k[1] * p->k[2];
}

/* Every case against the reference; returns how many cuDNN took. split_on:
 * under PTQ_CONV_SPLIT=1024 (cudnn.cu's conv_split), else unset. */
static int test_parity(int split_on)
{
    if (split_on)
        setenv("PTQ_CONV_SPLIT", "1024", 1);
    else
        unsetenv("PTQ_CONV_SPLIT");
    int taken = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const conv_case *cc = &cases[c];
        ptq_conv_params p;
        params_of(cc, cc->n, &p);
        const int64_t n_x = p.n * x_numel(&p), n_y = p.n * y_numel(&p), n_w = w_numel(&p);
        const float scale = 1.0f / sqrtf((float)(n_w / p.c_out)); /* trained-like weights: outputs O(1) */
        float *x = host_floats(n_x), *w = host_floats(n_w), *b = cc->bias ? host_floats(p.c_out) : NULL;
        float *want = host_floats(n_y), *got = host_floats(n_y);
        test_fill_uniform(x, n_x, -1.0f, 1.0f);
        test_fill_uniform(w, n_w, -scale, scale);
        if (b)
            test_fill_uniform(b, p.c_out, -0.5f, 0.5f);
        ptq_k_conv_ref(&p, x, w, b, want);
        float *dx = dev_floats(x, n_x), *dw = dev_floats(w, n_w), *db = b ? dev_floats(b, p.c_out) : NULL;
        float *dy = dev_floats(NULL, n_y);
        const char *last = "";
        const int64_t runs = ptq_cuda_dev_cudnn_runs(dev, NULL), splits = ptq_cuda_dev_cudnn_splits(dev);
        ptq_status st = ptq_k_conv_cuda(&ctx, dev, &p, dx, dw, db, dy);
        if (st == PTQ_OK)
            st = ptq_cuda_download(&ctx, dev, got, dy, (size_t)n_y * sizeof(float));
        const int took = ptq_cuda_dev_cudnn_runs(dev, &last) > runs;
        const int split = ptq_cuda_dev_cudnn_splits(dev) > splits;
        const int wants_split = split_on && p.group == 1 && w_numel(&p) / p.c_out > 1024;
        taken += took;
        CHECK_MSG(!took || split == wants_split, "%s: %s, expected %s", cc->what, split ? "split" : "run whole",
                  wants_split ? "slices of input channels" : "one convolution");
        CHECK_MSG(st == PTQ_OK, "%s: %s (%s)", cc->what, ctx.msg, ctx.where);
        char label[160];
        snprintf(label, sizeof label, "cuda_cudnn_conv %s%s", cc->what, split_on ? " (PTQ_CONV_SPLIT=1024)" : "");
        int ok = st == PTQ_OK && test_close(label, got, want, n_y, 1e-4f, 1e-5f);
        CHECK_MSG(ok, "%s: outputs differ from kernels/ref%s", cc->what, split_on ? " under PTQ_CONV_SPLIT=1024" : "");
        CHECK_MSG(cc->expect == 2 || took == cc->expect, "%s: cuDNN %s the shape, expected %s", cc->what,
                  took ? "took" : "declined", cc->expect ? "to take it" : "a decline");
        printf("  %-26s n %-3lld %-4s %s%s%s\n", cc->what, (long long)p.n, ok ? "ok" : "FAIL",
               took ? "cuDNN " : "im2col + cuBLAS", split ? "in slices of input channels, the last: " : "",
               took ? last : "");
        release_case(dx, dw, db, dy, (float *[]){x, w, b, want, got, NULL});
    }
    return taken;
}

/* The batch-invariance shapes: each image's bits must not depend on the
 * batch (1, 7 or 300 images, sub-batches starting at any image) nor on the run. */
static const conv_case inv_cases[] = {
    {"3x3 64->64 14x14", 0, 64, 64, 1, {1, 14, 14}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1, 1},
    {"1x1 s2 32->64", 0, 32, 64, 1, {1, 15, 15}, {1, 1, 1}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1, 1},
    {"7x7 s2 stem", 0, 3, 16, 1, {1, 30, 30}, {1, 7, 7}, {1, 2, 2}, {1, 1, 1}, {0, 3, 3}, {0, 3, 3}, 1, 1},
    {"depthwise 3x3", 0, 24, 24, 24, {1, 9, 9}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 0, 1},
    {"grouped", 0, 16, 32, 4, {1, 10, 10}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1, 1},
    {"1-D", 0, 3, 5, 1, {1, 1, 33}, {1, 1, 5}, {1, 1, 1}, {1, 1, 1}, {0, 0, 2}, {0, 0, 2}, 1, 2},
    /* chunks below 256 images: the tuning may run 256 a call */
    {"3x3 16->32 72x72", 0, 16, 32, 1, {1, 72, 72}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1, 1},
    {"1x1 64->64 96x96", 0, 64, 64, 1, {1, 96, 96}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1, 1},
    /* split into slices of input channels, each added into the output */
    {"3x3 136->32 10x10 split", 0, 136, 32, 1, {1, 10, 10}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1,
     1},
};

#define INV_BATCH 300

/* PTQ_CUDNN_TUNE for the next plans: "always" (any tuned configuration with the reference's bits), "0" (none) */
static void tune_mode(const char *mode)
{
    setenv("PTQ_CUDNN_TUNE", mode, 1);
    ptq_cuda_dev_drop_conv_plans(dev);
}

static void test_invariance(const char *path, int cudnn)
{
    /* sub-batches [start, start + n): images at the start, the end, and
     * ones that are not 16-byte aligned in x */
    static const int64_t subs[][2] = {{0, 1}, {5, 1}, {299, 1}, {0, 7}, {3, 7}, {293, 7}, {128, 7}, {1, 299}};
    for (size_t c = 0; c < sizeof inv_cases / sizeof inv_cases[0]; c++) {
        const conv_case *cc = &inv_cases[c];
        ptq_conv_params p;
        params_of(cc, INV_BATCH, &p);
        const int64_t xi = x_numel(&p), yi = y_numel(&p), n_w = w_numel(&p);
        float *x = host_floats(INV_BATCH * xi), *w = host_floats(n_w), *b = host_floats(p.c_out);
        float *whole = host_floats(INV_BATCH * yi), *again = host_floats(INV_BATCH * yi);
        float *part = host_floats(INV_BATCH * yi);
        test_fill_uniform(x, INV_BATCH * xi, -1.0f, 1.0f);
        for (int64_t i = 7; i < INV_BATCH; i += 8) /* images whose products and sums are subnormal */
            for (int64_t j = 0; j < xi; j++)
                x[i * xi + j] = ldexpf(x[i * xi + j], -120);
        test_fill_uniform(w, n_w, -0.2f, 0.2f);
        test_fill_uniform(b, p.c_out, -0.5f, 0.5f);
        float *dx = dev_floats(x, INV_BATCH * xi), *dw = dev_floats(w, n_w), *db = dev_floats(b, p.c_out);
        float *dy = dev_floats(NULL, INV_BATCH * yi);
        if (ptq_k_conv_cuda(&ctx, dev, &p, dx, dw, cc->bias ? db : NULL, dy) != PTQ_OK ||
            ptq_cuda_download(&ctx, dev, whole, dy, (size_t)(INV_BATCH * yi) * sizeof(float)) != PTQ_OK ||
            ptq_k_conv_cuda(&ctx, dev, &p, dx, dw, cc->bias ? db : NULL, dy) != PTQ_OK ||
            ptq_cuda_download(&ctx, dev, again, dy, (size_t)(INV_BATCH * yi) * sizeof(float)) != PTQ_OK)
            fail_ctx(cc->what);
        int bad = memcmp(whole, again, (size_t)(INV_BATCH * yi) * sizeof(float)) != 0;
        CHECK_MSG(!bad, "%s (%s): two runs of batch %d differ", cc->what, path, INV_BATCH);
        char plan[256] = "";
        if (cudnn) { /* the tuned plan (cudnn.cu's tune()) against the reference configuration alone */
            const char *last = "";
            (void)ptq_cuda_dev_cudnn_runs(dev, &last);
            snprintf(plan, sizeof plan, "%s", last);
            tune_mode("0");
            if (ptq_k_conv_cuda(&ctx, dev, &p, dx, dw, cc->bias ? db : NULL, dy) != PTQ_OK ||
                ptq_cuda_download(&ctx, dev, again, dy, (size_t)(INV_BATCH * yi) * sizeof(float)) != PTQ_OK)
                fail_ctx(cc->what);
            tune_mode("always");
            const int untuned = memcmp(whole, again, (size_t)(INV_BATCH * yi) * sizeof(float)) != 0;
            CHECK_MSG(!untuned, "%s (%s): batch %d differs with PTQ_CUDNN_TUNE=0 (plan: %s)", cc->what, path,
                      INV_BATCH, plan);
            bad |= untuned;
        }
        for (size_t s = 0; s < sizeof subs / sizeof subs[0]; s++) {
            ptq_conv_params ps = p;
            ps.n = subs[s][1];
            if (ptq_cuda_fill_bytes(&ctx, dev, dy, 0xFF, (size_t)(INV_BATCH * yi) * sizeof(float)) != PTQ_OK ||
                ptq_k_conv_cuda(&ctx, dev, &ps, dx + subs[s][0] * xi, dw, cc->bias ? db : NULL, dy) != PTQ_OK ||
                ptq_cuda_download(&ctx, dev, part, dy, (size_t)(ps.n * yi) * sizeof(float)) != PTQ_OK)
                fail_ctx(cc->what);
            int differs = memcmp(part, whole + subs[s][0] * yi, (size_t)(ps.n * yi) * sizeof(float)) != 0;
            CHECK_MSG(!differs, "%s (%s): images %lld..%lld in a batch of %lld differ from the batch of %d",
                      cc->what, path, (long long)subs[s][0], (long long)(subs[s][0] + ps.n - 1), (long long)ps.n,
                      INV_BATCH);
            bad |= differs;
        }
        printf("  %-26s %-9s batches 1, 7, 299, 300 (twice%s): %s%s\n", cc->what, path, cudnn ? ", and untuned" : "",
               bad ? "DIFFER" : "identical bits", strstr(plan, "; tuned:") ? " (a tuned plan)" : "");
        release_case(dx, dw, db, dy, (float *[]){x, w, b, whole, again, part, NULL});
    }
}

/* ResNet-50's layers (stride 1 and 2) at 256 images a call under TF32: each image's bits the
 * same in one batch of 512 and in batches of 100 (cudnn.cu's
 * position_guard leaves the positions that would differ empty), in both
 * layouts; the same with PTQ_CUDNN_GUARD=0 is shown, not required. */
static const conv_case tf32_cases[] = {
    {"1x1 512->2048 7x7", 0, 512, 2048, 1, {1, 7, 7}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1, 1},
    {"3x3 512->512 7x7", 0, 512, 512, 1, {1, 7, 7}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1, 1},
    {"1x1 2048->512 7x7", 0, 2048, 512, 1, {1, 7, 7}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1, 1},
    {"1x1 1024->256 14x14", 0, 1024, 256, 1, {1, 14, 14}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1, 1},
    {"3x3 256->256 14x14", 0, 256, 256, 1, {1, 14, 14}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1, 1},
    {"1x1 256->1024 14x14", 0, 256, 1024, 1, {1, 14, 14}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1, 1},
    {"1x1 128->512 28x28", 0, 128, 512, 1, {1, 28, 28}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1, 1},
    {"stem 7x7 s2 3->64", 0, 3, 64, 1, {1, 224, 224}, {1, 7, 7}, {1, 2, 2}, {1, 1, 1}, {0, 3, 3}, {0, 3, 3}, 1, 1},
    {"1x1 64->256 56x56", 0, 64, 256, 1, {1, 56, 56}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1, 1},
    {"3x3 128 s2 56->28", 0, 128, 128, 1, {1, 56, 56}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1, 1},
    {"1x1 256->512 s2 56", 0, 256, 512, 1, {1, 56, 56}, {1, 1, 1}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1, 1},
    {"3x3 256 s2 28->14", 0, 256, 256, 1, {1, 28, 28}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1, 1},
    {"1x1 512->1024 s2 28", 0, 512, 1024, 1, {1, 28, 28}, {1, 1, 1}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1, 1},
    {"3x3 512 s2 14->7", 0, 512, 512, 1, {1, 14, 14}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1, 1},
    {"1x1 1024->2048 s2 14", 0, 1024, 2048, 1, {1, 14, 14}, {1, 1, 1}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1, 1},
};

#define TF32_BATCH 512

/* 1 when every image of the batch of TF32_BATCH in dy_whole (host) comes out the same in batches of 100. */
static int tf32_split_same(const ptq_conv_params *p, const float *dx, const float *dw, const float *db, float *dy,
                           const float *whole, float *part)
{
    const int64_t xi = x_numel(p), yi = y_numel(p);
    for (int64_t at = 0; at < TF32_BATCH; at += 100) {
        ptq_conv_params ps = *p;
        ps.n = TF32_BATCH - at < 100 ? TF32_BATCH - at : 100;
        if (ptq_k_conv_cuda(&ctx, dev, &ps, dx + at * xi, dw, db, dy + at * yi) != PTQ_OK)
            fail_ctx("tf32 split");
    }
    if (ptq_cuda_download(&ctx, dev, part, dy, (size_t)(TF32_BATCH * yi) * sizeof(float)) != PTQ_OK)
        fail_ctx("tf32 download");
    return memcmp(part, whole, (size_t)(TF32_BATCH * yi) * sizeof(float)) == 0;
}

static void test_tf32_positions(void)
{
    ptq_cuda_dev_set_math(dev, PTQ_CUDA_MATH_TF32);
    for (size_t c = 0; c < sizeof tf32_cases / sizeof tf32_cases[0]; c++)
        for (int nhwc = 0; nhwc < 2; nhwc++) {
            const conv_case *cc = &tf32_cases[c];
            ptq_conv_params p;
            params_of(cc, TF32_BATCH, &p);
            p.nhwc = nhwc ? PTQ_NHWC_X | PTQ_NHWC_Y : 0;
            const int64_t xi = x_numel(&p), yi = y_numel(&p), n_w = w_numel(&p);
            float *x = host_floats(TF32_BATCH * xi), *w = host_floats(n_w), *b = host_floats(p.c_out);
            float *whole = host_floats(TF32_BATCH * yi), *part = host_floats(TF32_BATCH * yi);
            test_fill_uniform(x, TF32_BATCH * xi, -1.0f, 1.0f);
            test_fill_uniform(w, n_w, -0.05f, 0.05f);
            test_fill_uniform(b, p.c_out, -0.5f, 0.5f);
            float *dx = dev_floats(x, TF32_BATCH * xi), *dw = dev_floats(w, n_w), *db = dev_floats(b, p.c_out);
            float *dy = dev_floats(NULL, TF32_BATCH * yi);
            int same[2] = {0, 0};
            int64_t guards = 0, positional = 0;
            for (int off = 0; off < 2; off++) { /* 0: PTQ_CUDNN_GUARD=0, 1: the default */
                if (off == 0)
                    setenv("PTQ_CUDNN_GUARD", "0", 1);
                else
                    unsetenv("PTQ_CUDNN_GUARD");
                ptq_cuda_dev_drop_conv_plans(dev);
                if (ptq_k_conv_cuda(&ctx, dev, &p, dx, dw, db, dy) != PTQ_OK ||
                    ptq_cuda_download(&ctx, dev, whole, dy, (size_t)(TF32_BATCH * yi) * sizeof(float)) != PTQ_OK)
                    fail_ctx(cc->what);
                same[off] = tf32_split_same(&p, dx, dw, db, dy, whole, part);
                if (off == 1)
                    guards = ptq_cuda_dev_cudnn_guards(dev, &positional);
            }
            CHECK_MSG(same[1], "%s %s (tf32): batches of 100 differ from one of %d", cc->what, nhwc ? "NHWC" : "NCHW",
                      TF32_BATCH);
            printf("  %-22s %s tf32: batches of 100 %s one of %d (%lld plan guarded, %lld positions differed in its "
                   "probe; with PTQ_CUDNN_GUARD=0: %s)\n",
                   cc->what, nhwc ? "NHWC" : "NCHW", same[1] ? "bit-identical to" : "DIFFER from", TF32_BATCH,
                   (long long)guards, (long long)positional, same[0] ? "identical" : "differ");
            release_case(dx, dw, db, dy, (float *[]){x, w, b, whole, part, NULL});
        }
    ptq_cuda_dev_set_math(dev, PTQ_CUDA_MATH_FP32);
    ptq_cuda_dev_drop_conv_plans(dev);
}

int main(void)
{
    char why[256];
    if (ptq_cuda_device_count(why, sizeof why) == 0) {
        printf("cuda_cudnn_conv: skipped: no GPU: %s\n", why);
        return PTQ_TEST_SKIP;
    }
    ptq_ctx_init(&ctx);
    if (ptq_cuda_dev_create(&ctx, 0, &dev) != PTQ_OK)
        fail_ctx("ptq_cuda_dev_create");
    if (!ptq_cuda_dev_set_cudnn(dev, 1)) {
        printf("cuda_cudnn_conv: skipped: %s\n", ptq_cuda_dev_note(dev));
        ptq_cuda_dev_free(dev);
        return PTQ_TEST_SKIP;
    }
    printf("cuda_cudnn_conv: GPU 0 (%s), cuDNN against kernels/ref (rtol 1e-4, atol 1e-5)\n",
           ptq_cuda_dev_name(dev));
    test_rand_seed(20261201);
    int taken = test_parity(0);
    printf("cuDNN took %d of %zu shapes; the rest ran through im2col + cuBLAS\n", taken,
           sizeof cases / sizeof cases[0]);
    printf("PTQ_CONV_SPLIT=1024:\n");
    (void)test_parity(1); /* also sets it for the invariance cases */
    printf("batch invariance:\n");
    /* tuned plans whenever a candidate gives the reference's bits, faster or not, so the tuned path runs */
    const char *env = getenv("PTQ_CUDNN_TUNE");
    char *saved = env ? strdup(env) : NULL;
    tune_mode("always");
    const int64_t tuned_before = ptq_cuda_dev_cudnn_tuned_runs(dev);
    test_invariance("cuDNN", 1);
    const int64_t tuned = ptq_cuda_dev_cudnn_tuned_runs(dev) - tuned_before;
    printf("convolutions that ran tuned chunks (PTQ_CUDNN_TUNE=always): %lld\n", (long long)tuned);
    CHECK_MSG(tuned > 0, "no convolution ran a tuned configuration under PTQ_CUDNN_TUNE=always");
    if (saved)
        setenv("PTQ_CUDNN_TUNE", saved, 1);
    else
        unsetenv("PTQ_CUDNN_TUNE");
    free(saved);
    unsetenv("PTQ_CONV_SPLIT");
    ptq_cuda_dev_drop_conv_plans(dev);
    printf("TF32 positions:\n");
    test_tf32_positions();
    ptq_cuda_dev_set_cudnn(dev, 0);
    test_invariance("im2col", 0);
    CHECK_MSG(ptq_cuda_sync(&ctx, dev) == PTQ_OK, "%s", ctx.msg);
    ptq_cuda_dev_free(dev);
    return test_done("cuda_cudnn_conv");
}

#endif
