/* Every kernels/cuda entry point against its kernels/ref twin on seeded random
 * inputs over many shapes, device outputs NaN-poisoned before each run; one
 * line per kernel (cases, worst error, tolerance), failing cases with their
 * shapes. Exit 77 without a GPU. Run: build/tests/cuda_parity_kernels */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "runtime/op.h"
#include "testlib.h"

#ifndef PTQ_CUDA

int main(void)
{
    printf("cuda_parity_kernels: skipped: ptq was built without CUDA\n");
    return PTQ_TEST_SKIP;
}

#else

#include "kernels/cuda/cuda_kernels.h"

static ptq_ctx ctx;
static ptq_cuda_dev *dev;

/* Per-kernel tally. A kernel passes when every element has
 * |got - want| <= atol + rtol * |want| (NaN matching NaN); rtol = atol = 0
 * demands identical bits. */
typedef struct kstat {
    const char *name;
    float rtol, atol;
    int cases, failed;
    double max_abs, max_ratio;
    int64_t n_elems, n_same; /* elements compared, of them with the ref's bits */
} kstat;

static float *host_alloc(int64_t n)
{
    float *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    if (!p) {
        fprintf(stderr, "cuda_parity_kernels: out of host memory for %lld floats\n", (long long)n);
        exit(1);
    }
    return p;
}

static float *host_uniform(int64_t n, float lo, float hi)
{
    float *p = host_alloc(n);
    test_fill_uniform(p, n, lo, hi);
    return p;
}

/* A device buffer of n_bytes, filled from host (or NaN-poisoned when host is NULL). */
static void *dev_buf(const void *host, size_t n_bytes)
{
    void *p = NULL;
    if (ptq_cuda_alloc(&ctx, dev, n_bytes, &p) != PTQ_OK) {
        fprintf(stderr, "cuda_parity_kernels: %s (%s)\n", ctx.msg, ctx.where);
        exit(1);
    }
    ptq_status st = host ? ptq_cuda_upload(&ctx, dev, p, host, n_bytes)
                         : ptq_cuda_fill_bytes(&ctx, dev, p, 0xFF, n_bytes);
    if (st != PTQ_OK) {
        fprintf(stderr, "cuda_parity_kernels: %s (%s)\n", ctx.msg, ctx.where);
        exit(1);
    }
    return p;
}

static float *dev_floats(const float *host, int64_t n)
{
    return dev_buf(host, (size_t)(n > 0 ? n : 1) * sizeof(float));
}

/* Checks the kernel's status, downloads n floats from d_got and compares them with want. */
static void check_case(kstat *k, ptq_status st, const float *d_got, const float *want, int64_t n, const char *what)
{
    k->cases++;
    ptq_test_checks++;
    float *got = host_alloc(n);
    if (st == PTQ_OK)
        st = ptq_cuda_download(&ctx, dev, got, d_got, (size_t)n * sizeof(float));
    if (st != PTQ_OK) {
        fprintf(stderr, "  FAIL %s [%s]: %s (%s)\n", k->name, what, ctx.msg, ctx.where);
        k->failed++;
        ptq_test_failures++;
        free(got);
        return;
    }
    int64_t worst = -1;
    double worst_ratio = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double ratio;
        k->n_elems++;
        k->n_same += memcmp(&got[i], &want[i], sizeof(float)) == 0;
        if (isnan(got[i]) || isnan(want[i]))
            ratio = isnan(got[i]) && isnan(want[i]) ? 0.0 : INFINITY;
        else if (k->rtol == 0.0f && k->atol == 0.0f)
            ratio = memcmp(&got[i], &want[i], sizeof(float)) == 0 ? 0.0 : INFINITY;
        else if (got[i] == want[i])
            ratio = 0.0; /* equal infinities too */
        else {
            double err = fabs((double)got[i] - (double)want[i]);
            ratio = err / (k->atol + k->rtol * fabs((double)want[i]));
            if (err > k->max_abs)
                k->max_abs = err;
        }
        if (worst < 0 || ratio > worst_ratio) {
            worst = i;
            worst_ratio = ratio;
        }
    }
    if (worst_ratio > k->max_ratio)
        k->max_ratio = worst_ratio;
    if (worst_ratio > 1.0) {
        fprintf(stderr, "  FAIL %s [%s]: element %lld of %lld: got %.9g want %.9g (err/tol %.3g)\n", k->name, what,
                (long long)worst, (long long)n, got[worst], want[worst], worst_ratio);
        k->failed++;
        ptq_test_failures++;
    }
    free(got);
}

static void report(const kstat *k)
{
    printf("%-16s %3d cases  max |err| %-9.3g max err/tol %-9.3g (rtol %g, atol %g)  ref's bits %.4f  %s\n",
           k->name, k->cases, k->max_abs, k->max_ratio, k->rtol, k->atol,
           k->n_elems ? (double)k->n_same / (double)k->n_elems : 1.0, k->failed ? "FAIL" : "ok");
}

/* ---- conv ---- */

/* "in 1x16x16 k 1x3x3 stride 1x1x1 dil 1x1x1 pads 0x1x1/0x1x1" */
static void window_str(char *buf, size_t n_buf, const int64_t *in, const int64_t *k, const int64_t *stride,
                       const int64_t *dil, const int64_t *pad_lo, const int64_t *pad_hi)
{
    char s[6][48];
    snprintf(buf, n_buf, "in %s k %s stride %s dil %s pads %s/%s", ptq_dims_str(in, 3, s[0], sizeof s[0]),
             ptq_dims_str(k, 3, s[1], sizeof s[1]), ptq_dims_str(stride, 3, s[2], sizeof s[2]),
             ptq_dims_str(dil, 3, s[3], sizeof s[3]), ptq_dims_str(pad_lo, 3, s[4], sizeof s[4]),
             ptq_dims_str(pad_hi, 3, s[5], sizeof s[5]));
}

typedef struct conv_case {
    int64_t n, c_in, c_out, group;
    int64_t in[3], k[3], stride[3], dil[3], pad_lo[3], pad_hi[3];
    int bias;
} conv_case;

static const conv_case conv_cases[] = {
    {2, 3, 8, 1, {1, 16, 16}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},      /* 3x3 same */
    {2, 8, 16, 1, {1, 15, 17}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 0},     /* stride 2, odd */
    {3, 16, 32, 1, {1, 8, 8}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1},      /* pointwise: no im2col */
    {2, 8, 8, 1, {1, 9, 9}, {1, 1, 1}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1},        /* 1x1 stride 2 */
    {2, 16, 16, 16, {1, 12, 12}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},   /* depthwise */
    {2, 8, 16, 8, {1, 11, 13}, {1, 5, 5}, {1, 2, 2}, {1, 1, 1}, {0, 2, 2}, {0, 2, 2}, 0},     /* depthwise x2 */
    {2, 16, 8, 4, {1, 10, 10}, {1, 3, 3}, {1, 1, 1}, {1, 2, 2}, {0, 2, 2}, {0, 2, 2}, 1},     /* grouped, dilated */
    {1, 12, 6, 3, {1, 7, 7}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1},       /* grouped pointwise */
    {2, 4, 6, 1, {1, 9, 8}, {1, 2, 3}, {1, 1, 2}, {1, 1, 1}, {0, 0, 1}, {0, 1, 0}, 1},        /* asymmetric pads */
    {2, 3, 5, 1, {1, 1, 50}, {1, 1, 5}, {1, 1, 3}, {1, 1, 2}, {0, 0, 2}, {0, 0, 1}, 1},       /* 1-D */
    {2, 3, 4, 1, {6, 7, 8}, {3, 2, 3}, {1, 2, 1}, {1, 1, 1}, {1, 0, 1}, {1, 1, 1}, 1},        /* 3-D */
    {4, 1, 24, 1, {1, 28, 28}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 0},     /* demo stem, c_in 1 */
    {8, 64, 64, 1, {1, 14, 14}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},    /* k = 576 */
    {2, 24, 48, 1, {1, 28, 28}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 0},    /* demo downsample */
    {1, 5, 7, 1, {1, 4, 4}, {1, 5, 5}, {1, 1, 1}, {1, 1, 1}, {0, 2, 2}, {0, 2, 2}, 1},        /* kernel > input */
    {3, 64, 4, 1, {1, 256, 256}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},   /* im2col in chunks */
};

/* FP32 sums against the ref's double ones: within 1e-4 relative */
#define F32_RTOL 1e-4f
#define F32_ATOL 1e-5f
/* --math fp64 sums in double and rounds once, as the ref: within one float
 * ulp of it (the two double sums differ by ~1e-16 relative, then each is
 * rounded), plus 1e-11 for outputs near 0 after cancellation */
#define F64_RTOL 1.2e-7f
#define F64_ATOL 1e-11f

/* name: "conv" through cuDNN when the device loaded it, "conv im2col" with it off */
static void test_conv(const char *name, float rtol, float atol)
{
    kstat k = {name, rtol, atol, 0, 0, 0, 0, 0, 0};
    for (size_t c = 0; c < sizeof conv_cases / sizeof conv_cases[0]; c++) {
        const conv_case *cc = &conv_cases[c];
        ptq_conv_params p;
        memset(&p, 0, sizeof p);
        p.n = cc->n;
        p.c_in = cc->c_in;
        p.c_out = cc->c_out;
        p.group = cc->group;
        for (int s = 0; s < PTQ_SPATIAL; s++) {
            p.in[s] = cc->in[s];
            p.k[s] = cc->k[s];
            p.stride[s] = cc->stride[s];
            p.dil[s] = cc->dil[s];
            p.pad_lo[s] = cc->pad_lo[s];
            p.pad_hi[s] = cc->pad_hi[s];
            p.out[s] = (p.in[s] + p.pad_lo[s] + p.pad_hi[s] - p.dil[s] * (p.k[s] - 1) - 1) / p.stride[s] + 1;
        }
        int64_t k_sz = p.k[0] * p.k[1] * p.k[2], fan_in = p.c_in / p.group * k_sz;
        int64_t n_x = p.n * p.c_in * p.in[0] * p.in[1] * p.in[2];
        int64_t n_w = p.c_out * fan_in;
        int64_t n_y = p.n * p.c_out * p.out[0] * p.out[1] * p.out[2];
        /* weights scaled like a trained layer's so outputs stay O(1) */
        float scale = 1.0f / sqrtf((float)fan_in);
        float *x = host_uniform(n_x, -1.0f, 1.0f), *w = host_uniform(n_w, -scale, scale);
        float *b = cc->bias ? host_uniform(p.c_out, -0.5f, 0.5f) : NULL, *y = host_alloc(n_y);
        ptq_k_conv_ref(&p, x, w, b, y);
        float *dx = dev_floats(x, n_x), *dw = dev_floats(w, n_w), *db = b ? dev_floats(b, p.c_out) : NULL;
        float *dy = dev_floats(NULL, n_y);
        char what[240];
        window_str(what, sizeof what, p.in, p.k, p.stride, p.dil, p.pad_lo, p.pad_hi);
        snprintf(what + strlen(what), sizeof what - strlen(what), " n %lld c %lld->%lld group %lld%s", (long long)p.n,
                 (long long)p.c_in, (long long)p.c_out, (long long)p.group, b ? " bias" : "");
        check_case(&k, ptq_k_conv_cuda(&ctx, dev, &p, dx, dw, db, dy), dy, y, n_y, what);
        ptq_cuda_release(dev, dx);
        ptq_cuda_release(dev, dw);
        ptq_cuda_release(dev, db);
        ptq_cuda_release(dev, dy);
        free(x);
        free(w);
        free(b);
        free(y);
    }
    report(&k);
}

/* ---- gemm ---- */

static void test_gemm(const char *name, float rtol, float atol)
{
    kstat k = {name, rtol, atol, 0, 0, 0, 0, 0, 0};
    /* 4500 rows of 300: a full block of rows and a padded one */
    const int64_t shapes[][3] = {{1, 1, 1},      {7, 5, 3},       {64, 10, 96}, {33, 65, 129},
                                 {128, 256, 512}, {5, 4, 0},      {4500, 300, 64}};
    const float ab[][2] = {{1.0f, 0.0f}, {0.5f, 1.0f}, {-2.0f, 0.25f}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++)
            for (size_t v = 0; v < sizeof ab / sizeof ab[0]; v++) {
                ptq_gemm_params p = {shapes[s][0], shapes[s][1], shapes[s][2], t & 1, t >> 1, ab[v][0], ab[v][1]};
                float scale = p.k ? 1.0f / sqrtf((float)p.k) : 1.0f;
                float *a = host_uniform(p.m * p.k, -1.0f, 1.0f), *b = host_uniform(p.k * p.n, -scale, scale);
                float *y0 = host_uniform(p.m * p.n, -1.0f, 1.0f), *y = host_alloc(p.m * p.n);
                memcpy(y, y0, (size_t)(p.m * p.n) * sizeof *y);
                ptq_k_gemm_ref(&p, a, b, y);
                float *da = dev_floats(a, p.m * p.k), *dbm = dev_floats(b, p.k * p.n);
                float *dy = dev_floats(p.beta != 0.0f ? y0 : NULL, p.m * p.n); /* beta 0: y must not be read */
                char what[160];
                snprintf(what, sizeof what, "m %lld n %lld k %lld trans_a %d trans_b %d alpha %g beta %g",
                         (long long)p.m, (long long)p.n, (long long)p.k, p.trans_a, p.trans_b, p.alpha, p.beta);
                check_case(&k, ptq_k_gemm_cuda(&ctx, dev, &p, da, dbm, dy), dy, y, p.m * p.n, what);
                ptq_cuda_release(dev, da);
                ptq_cuda_release(dev, dbm);
                ptq_cuda_release(dev, dy);
                free(a);
                free(b);
                free(y0);
                free(y);
            }
    report(&k);
}

static void test_gemm_batched(const char *name, float rtol, float atol)
{
    kstat k = {name, rtol, atol, 0, 0, 0, 0, 0, 0};
    /* batch, m, n, k, a repeated (stride 0), b repeated */
    const int64_t cases[][6] = {{4, 8, 5, 7, 0, 0}, {3, 16, 16, 32, 1, 0}, {6, 3, 9, 4, 0, 1}, {1, 5, 5, 5, 0, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t nb = cases[c][0];
        ptq_gemm_params p = {cases[c][1], cases[c][2], cases[c][3], 0, 0, 1.0f, 0.0f};
        int a_rep = (int)cases[c][4], b_rep = (int)cases[c][5];
        int64_t a_stride = a_rep ? 0 : p.m * p.k, b_stride = b_rep ? 0 : p.k * p.n;
        int64_t n_a = a_rep ? p.m * p.k : nb * p.m * p.k, n_b = b_rep ? p.k * p.n : nb * p.k * p.n;
        float *a = host_uniform(n_a, -1.0f, 1.0f), *b = host_uniform(n_b, -0.3f, 0.3f), *y = host_alloc(nb * p.m * p.n);
        int64_t *a_off = malloc((size_t)nb * sizeof *a_off), *b_off = malloc((size_t)nb * sizeof *b_off);
        for (int64_t i = 0; i < nb; i++) {
            a_off[i] = i * a_stride;
            b_off[i] = i * b_stride;
        }
        ptq_k_gemm_batched_ref(&p, nb, a_off, b_off, a, b, y);
        float *da = dev_floats(a, n_a), *dbm = dev_floats(b, n_b), *dy = dev_floats(NULL, nb * p.m * p.n);
        char what[160];
        snprintf(what, sizeof what, "batch %lld m %lld n %lld k %lld%s%s", (long long)nb, (long long)p.m,
                 (long long)p.n, (long long)p.k, a_rep ? " a repeated" : "", b_rep ? " b repeated" : "");
        check_case(&k, ptq_k_gemm_batched_cuda(&ctx, dev, &p, nb, da, a_stride, dbm, b_stride, dy, p.m * p.n), dy, y,
                   nb * p.m * p.n, what);
        ptq_cuda_release(dev, da);
        ptq_cuda_release(dev, dbm);
        ptq_cuda_release(dev, dy);
        free(a);
        free(b);
        free(y);
        free(a_off);
        free(b_off);
    }
    report(&k);
}

/* FP32 and TF32 math: a row's bits do not depend on the GEMM it came in (a batch of 9,000 rows, against runs of
 * 1, 7, 300, 4,096 and 4,596 rows, each from its own offset), for a Gemm's weights ([n, k], the bias via beta),
 * for a MatMul's ([k, n], y not read) and through the bias epilogue (ptq_k_gemm_bias_cuda); the first two as one
 * cuBLASLt call where it takes them, else as blocks of rows (two full and a padded one), the third through
 * cuBLASLt only (counted). Algorithms chosen with PTQ_GEMM_TUNE=1, and the 9,000 rows at once also against a
 * device whose algorithms were chosen with PTQ_GEMM_TUNE=0: tuning picks a faster algorithm only with the same
 * bits. */
static void test_gemm_row_invariance(const char *math, int math_id)
{
    setenv("PTQ_GEMM_TUNE", "1", 1);
    ptq_cuda_dev *plain = NULL;
    CHECK_MSG(ptq_cuda_dev_create(&ctx, 0, &plain) == PTQ_OK, "%s", ctx.msg);
    if (!plain)
        return;
    ptq_cuda_dev_set_math(plain, math_id);
    static const struct {
        int64_t n, k;
        int trans_b, bias;
        float beta;
    } shapes[] = {{768, 96, 1, 0, 1.0f}, {256, 768, 0, 0, 0.0f}, {768, 96, 1, 1, 0.0f}, {2304, 64, 0, 1, 0.0f}};
    const int64_t runs[] = {1, 7, 300, 4096, 4596}, m = 9000;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        ptq_gemm_params g = {m, shapes[s].n, shapes[s].k, 0, shapes[s].trans_b, 1.0f, shapes[s].beta};
        const int64_t n_a = g.m * g.k, n_out = g.m * g.n;
        float *a = host_uniform(n_a, -1.0f, 1.0f), *c = host_uniform(n_out, -1.0f, 1.0f);
        float *bm = host_uniform(g.n * g.k, -0.1f, 0.1f), *bias = host_uniform(g.n, -1.0f, 1.0f);
        float *got = host_alloc(n_out), *got1 = host_alloc(n_out);
        float *da = dev_floats(a, n_a), *dbm = dev_floats(bm, g.n * g.k), *dc = dev_floats(c, n_out);
        float *dc1 = dev_floats(c, n_out), *dbias = dev_floats(bias, g.n);
        const int64_t lt_before = ptq_cuda_dev_lt_runs(dev, NULL);
        int done = 0, all_done = 1;
        if (shapes[s].bias)
            CHECK_MSG(ptq_k_gemm_bias_cuda(&ctx, dev, &g, da, dbm, dbias, dc, &done) == PTQ_OK, "%s", ctx.msg);
        else
            CHECK_MSG(ptq_k_gemm_cuda(&ctx, dev, &g, da, dbm, dc) == PTQ_OK, "%s", ctx.msg);
        all_done &= done;
        const char *tuning = "";
        ptq_cuda_dev_lt_runs(dev, &tuning);
        char tuning_copy[160];
        snprintf(tuning_copy, sizeof tuning_copy, "%s", tuning);
        float *dplain = dev_floats(c, n_out), *got_plain = host_alloc(n_out);
        setenv("PTQ_GEMM_TUNE", "0", 1);
        if (shapes[s].bias)
            CHECK_MSG(ptq_k_gemm_bias_cuda(&ctx, plain, &g, da, dbm, dbias, dplain, &done) == PTQ_OK, "%s", ctx.msg);
        else
            CHECK_MSG(ptq_k_gemm_cuda(&ctx, plain, &g, da, dbm, dplain) == PTQ_OK, "%s", ctx.msg);
        setenv("PTQ_GEMM_TUNE", "1", 1);
        CHECK_MSG(ptq_cuda_sync(&ctx, plain) == PTQ_OK, "%s", ctx.msg);
        CHECK_MSG(ptq_cuda_download(&ctx, dev, got_plain, dplain, (size_t)n_out * sizeof(float)) == PTQ_OK, "%s",
                  ctx.msg);
        int64_t r0 = 0;
        for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
            ptq_gemm_params part = g;
            part.m = runs[i];
            const float *pa = da + r0 * g.k;
            float *py = dc1 + r0 * g.n;
            if (shapes[s].bias)
                CHECK_MSG(ptq_k_gemm_bias_cuda(&ctx, dev, &part, pa, dbm, dbias, py, &done) == PTQ_OK, "%s", ctx.msg);
            else
                CHECK_MSG(ptq_k_gemm_cuda(&ctx, dev, &part, pa, dbm, py) == PTQ_OK, "%s", ctx.msg);
            all_done &= done;
            r0 += runs[i];
        }
        const int64_t lt = ptq_cuda_dev_lt_runs(dev, NULL) - lt_before;
        CHECK(r0 == g.m);
        CHECK_MSG(ptq_cuda_download(&ctx, dev, got, dc, (size_t)n_out * sizeof(float)) == PTQ_OK, "%s", ctx.msg);
        CHECK_MSG(ptq_cuda_download(&ctx, dev, got1, dc1, (size_t)n_out * sizeof(float)) == PTQ_OK, "%s", ctx.msg);
        const int same = memcmp(got, got1, (size_t)n_out * sizeof(float)) == 0;
        const int same_plain = memcmp(got, got_plain, (size_t)n_out * sizeof(float)) == 0;
        CHECK_MSG(same, "gemm %s n %lld k %lld%s: 9000 rows at once differ from runs of 1, 7, 300, 4096 and 4596",
                  math, (long long)g.n, (long long)g.k, shapes[s].bias ? " bias epilogue" : "");
        CHECK_MSG(same_plain, "gemm %s n %lld k %lld%s: tuned differs from PTQ_GEMM_TUNE=0 (%s)", math,
                  (long long)g.n, (long long)g.k, shapes[s].bias ? " bias epilogue" : "", tuning_copy);
        if (shapes[s].bias) {
            CHECK_MSG(all_done && lt == 6, "gemm %s bias epilogue: cuBLASLt took %lld of 6 calls", math,
                      (long long)lt);
            /* against the reference: y prefilled with the bias on every row, beta 1 */
            for (int64_t r = 0; r < g.m; r++)
                memcpy(c + r * g.n, bias, (size_t)g.n * sizeof *c);
            ptq_gemm_params ref = g;
            ref.beta = 1.0f;
            ptq_k_gemm_ref(&ref, a, bm, c);
            char label[96];
            snprintf(label, sizeof label, "gemm %s bias epilogue n %lld k %lld vs ref", math, (long long)g.n,
                     (long long)g.k);
            test_close(label, got, c, n_out, 1e-4f, strcmp(math, "tf32") == 0 ? 1e-2f : 1e-4f);
        }
        printf("%s gemm row invariance (9000 rows, n %lld k %lld%s, against runs of 1, 7, 300, 4096, 4596; %lld of 6 "
               "calls through cuBLASLt): %s; against PTQ_GEMM_TUNE=0: %s; cuBLASLt's plan: %s\n", math,
               (long long)g.n, (long long)g.k, shapes[s].bias ? ", bias epilogue" : "", (long long)lt,
               same ? "same bits" : "FAIL", same_plain ? "same bits" : "FAIL", lt ? tuning_copy : "none");
        ptq_cuda_release(dev, dplain);
        free(got_plain);
        ptq_cuda_release(dev, da);
        ptq_cuda_release(dev, dbm);
        ptq_cuda_release(dev, dc);
        ptq_cuda_release(dev, dc1);
        ptq_cuda_release(dev, dbias);
        free(a);
        free(c);
        free(bm);
        free(bias);
        free(got);
        free(got1);
    }
    ptq_cuda_dev_free(plain);
    unsetenv("PTQ_GEMM_TUNE");
}

/* --math fp64: an image's (a row's) bits do not depend on the batch it came
 * in, as calibration archives need: 37 images (a padded last chunk) against
 * each image alone, a Gemm of 300 rows against each row alone. */
static void test_f64_batch_invariance(void)
{
    ptq_conv_params p;
    memset(&p, 0, sizeof p);
    p.n = 37, p.c_in = 64, p.c_out = 48, p.group = 1;
    for (int s = 0; s < PTQ_SPATIAL; s++) {
        p.in[s] = p.out[s] = s ? 14 : 1;
        p.k[s] = s ? 3 : 1;
        p.stride[s] = p.dil[s] = 1;
        p.pad_lo[s] = p.pad_hi[s] = s ? 1 : 0;
    }
    const int64_t n_x = p.n * p.c_in * 196, n_w = p.c_out * p.c_in * 9, n_y = p.n * p.c_out * 196;
    float *x = host_uniform(n_x, -1.0f, 1.0f), *w = host_uniform(n_w, -0.05f, 0.05f), *b = host_uniform(p.c_out, -1, 1);
    float *y = host_alloc(n_y), *y1 = host_alloc(n_y);
    float *dx = dev_floats(x, n_x), *dw = dev_floats(w, n_w), *db = dev_floats(b, p.c_out), *dy = dev_floats(NULL, n_y);
    CHECK_MSG(ptq_k_conv_cuda(&ctx, dev, &p, dx, dw, db, dy) == PTQ_OK, "%s", ctx.msg);
    CHECK_MSG(ptq_cuda_download(&ctx, dev, y, dy, (size_t)n_y * sizeof(float)) == PTQ_OK, "%s", ctx.msg);
    const int64_t n_all = p.n, x_img = p.c_in * 196, y_img = p.c_out * 196;
    p.n = 1;
    for (int64_t i = 0; i < n_all; i++)
        CHECK_MSG(ptq_k_conv_cuda(&ctx, dev, &p, dx + i * x_img, dw, db, dy + i * y_img) == PTQ_OK, "%s", ctx.msg);
    CHECK_MSG(ptq_cuda_download(&ctx, dev, y1, dy, (size_t)n_y * sizeof(float)) == PTQ_OK, "%s", ctx.msg);
    CHECK_MSG(memcmp(y, y1, (size_t)n_y * sizeof(float)) == 0, "conv fp64: 37 images at once differ from one at a time");
    ptq_cuda_release(dev, dx);
    ptq_cuda_release(dev, dy);
    free(x);
    free(y);
    free(y1);

    ptq_gemm_params g = {300, 96, 64, 0, 1, 1.0f, 1.0f}; /* b given [n, k], as a Gemm's weights; the bias via beta */
    const int64_t n_a = g.m * g.k, n_out = g.m * g.n;
    float *a = host_uniform(n_a, -1.0f, 1.0f), *c = host_uniform(n_out, -1.0f, 1.0f);
    float *got = host_alloc(n_out), *got1 = host_alloc(n_out);
    float *da = dev_floats(a, n_a), *dc = dev_floats(c, n_out), *dc1 = dev_floats(c, n_out);
    float *bm = host_uniform(g.n * g.k, -0.1f, 0.1f), *dbm = dev_floats(bm, g.n * g.k);
    CHECK_MSG(ptq_k_gemm_cuda(&ctx, dev, &g, da, dbm, dc) == PTQ_OK, "%s", ctx.msg);
    const int64_t m_all = g.m;
    g.m = 1;
    for (int64_t r = 0; r < m_all; r++)
        CHECK_MSG(ptq_k_gemm_cuda(&ctx, dev, &g, da + r * g.k, dbm, dc1 + r * g.n) == PTQ_OK, "%s", ctx.msg);
    CHECK_MSG(ptq_cuda_download(&ctx, dev, got, dc, (size_t)n_out * sizeof(float)) == PTQ_OK, "%s", ctx.msg);
    CHECK_MSG(ptq_cuda_download(&ctx, dev, got1, dc1, (size_t)n_out * sizeof(float)) == PTQ_OK, "%s", ctx.msg);
    CHECK_MSG(memcmp(got, got1, (size_t)n_out * sizeof(float)) == 0, "gemm fp64: 300 rows at once differ from one at a time");
    printf("fp64 batch invariance (conv 37 images, gemm 300 rows, against one at a time): %s\n",
           memcmp(got, got1, (size_t)n_out * sizeof(float)) == 0 ? "same bits" : "FAIL");
    ptq_cuda_release(dev, dw);
    ptq_cuda_release(dev, db);
    ptq_cuda_release(dev, da);
    ptq_cuda_release(dev, dc);
    ptq_cuda_release(dev, dc1);
    ptq_cuda_release(dev, dbm);
    free(w);
    free(b);
    free(a);
    free(c);
    free(got);
    free(got1);
    free(bm);
}

/* ---- binary and expand ---- */

typedef struct shape {
    int ndim;
    int64_t dims[6];
} shape;

static const shape bin_shapes[][2] = {
    {{4, {2, 3, 4, 5}}, {4, {2, 3, 4, 5}}},
    {{4, {2, 3, 4, 5}}, {1, {5}}},
    {{4, {2, 3, 4, 5}}, {3, {3, 1, 1}}},
    {{4, {1, 3, 1, 5}}, {4, {2, 1, 4, 1}}},
    {{0, {0}}, {2, {7, 9}}},
    {{2, {8, 1}}, {2, {1, 8}}},
    {{4, {2, 16, 7, 7}}, {4, {1, 16, 1, 1}}},
    {{4, {4, 64, 32, 32}}, {3, {64, 1, 1}}},
    {{6, {2, 1, 3, 1, 2, 5}}, {5, {4, 1, 6, 2, 1}}},
    {{1, {1000003}}, {1, {1000003}}},
};

static void test_binary(void)
{
    static const char *const names[] = {"add", "sub", "mul", "div"};
    kstat k = {"binary", 0.0f, 0.0f, 0, 0, 0, 0, 0, 0}; /* IEEE + - * / round the same everywhere */
    for (size_t s = 0; s < sizeof bin_shapes / sizeof bin_shapes[0]; s++) {
        ptq_tensor ta = {PTQ_DT_FLOAT, bin_shapes[s][0].ndim, {0}, NULL, PTQ_MEM_HOST, 0};
        ptq_tensor tb = {PTQ_DT_FLOAT, bin_shapes[s][1].ndim, {0}, NULL, PTQ_MEM_HOST, 0};
        memcpy(ta.dims, bin_shapes[s][0].dims, sizeof bin_shapes[s][0].dims);
        memcpy(tb.dims, bin_shapes[s][1].dims, sizeof bin_shapes[s][1].dims);
        ptq_bcast bc;
        if (ptq_op_bcast(&ctx, &ta, &tb, &bc) != PTQ_OK) {
            CHECK_MSG(0, "ptq_op_bcast: %s", ctx.msg);
            continue;
        }
        int64_t n_a = ptq_tensor_numel(&ta), n_b = ptq_tensor_numel(&tb), n_y = ptq_dims_prod(bc.out_dims, 0, bc.ndim);
        float *a = host_uniform(n_a, -4.0f, 4.0f), *b = host_uniform(n_b, 0.25f, 2.0f), *y = host_alloc(n_y);
        for (int64_t i = 0; i < n_b; i += 2)
            b[i] = -b[i]; /* both signs, never near 0 (Div) */
        float *da = dev_floats(a, n_a), *dbv = dev_floats(b, n_b);
        char sa[96], sb[96];
        for (int op = PTQ_BIN_ADD; op <= PTQ_BIN_DIV; op++) {
            float *dy = dev_floats(NULL, n_y);
            char what[240];
            snprintf(what, sizeof what, "%s %s with %s", names[op], ptq_dims_str(ta.dims, ta.ndim, sa, sizeof sa),
                     ptq_dims_str(tb.dims, tb.ndim, sb, sizeof sb));
            ptq_k_binary_ref((ptq_binop)op, &bc, a, b, y);
            check_case(&k, ptq_k_binary_cuda(&ctx, dev, (ptq_binop)op, &bc, da, dbv, dy), dy, y, n_y, what);
            ptq_cuda_release(dev, dy);
        }
        ptq_cuda_release(dev, da);
        ptq_cuda_release(dev, dbv);
        free(a);
        free(b);
        free(y);
    }
    report(&k);
}

/* Gemm's C broadcast into Y: checked against ref Add of a zero Y. */
static void test_expand(void)
{
    kstat k = {"expand", 0.0f, 0.0f, 0, 0, 0, 0, 0, 0};
    const shape cases[][2] = {{{1, {10}}, {2, {4, 10}}},  {{2, {4, 1}}, {2, {4, 10}}}, {{0, {0}}, {2, {3, 5}}},
                              {{2, {1, 7}}, {2, {9, 7}}}, {{2, {6, 3}}, {2, {6, 3}}}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ptq_tensor tc = {PTQ_DT_FLOAT, cases[c][0].ndim, {0}, NULL, PTQ_MEM_HOST, 0};
        ptq_tensor ty = {PTQ_DT_FLOAT, cases[c][1].ndim, {0}, NULL, PTQ_MEM_HOST, 0};
        memcpy(tc.dims, cases[c][0].dims, sizeof cases[c][0].dims);
        memcpy(ty.dims, cases[c][1].dims, sizeof cases[c][1].dims);
        ptq_bcast bc;
        if (ptq_op_bcast(&ctx, &tc, &ty, &bc) != PTQ_OK) {
            CHECK_MSG(0, "ptq_op_bcast: %s", ctx.msg);
            continue;
        }
        int64_t n_c = ptq_tensor_numel(&tc), n_y = ptq_tensor_numel(&ty);
        float *cv = host_uniform(n_c, 0.5f, 3.0f), *zero = calloc((size_t)n_y, sizeof(float)), *y = host_alloc(n_y);
        ptq_k_binary_ref(PTQ_BIN_ADD, &bc, cv, zero, y);
        float *dc = dev_floats(cv, n_c), *dy = dev_floats(NULL, n_y);
        char sc[96], sy[96], what[220];
        snprintf(what, sizeof what, "%s into %s", ptq_dims_str(tc.dims, tc.ndim, sc, sizeof sc),
                 ptq_dims_str(ty.dims, ty.ndim, sy, sizeof sy));
        check_case(&k, ptq_k_expand_cuda(&ctx, dev, &bc, dc, dy), dy, y, n_y, what);
        ptq_cuda_release(dev, dc);
        ptq_cuda_release(dev, dy);
        free(cv);
        free(zero);
        free(y);
    }
    report(&k);
}

/* ---- unary ---- */

static void test_unary(void)
{
    static const struct {
        ptq_unop op;
        const char *name;
        float alpha, beta;
        int tol; /* 0: transcendental; 1: comparisons and single roundings only, identical bits; 2: through erfcf */
    } ops[] = {
        {PTQ_UN_RELU, "relu", 0, 0, 1},
        {PTQ_UN_LEAKY_RELU, "leaky_relu 0.1", 0.1f, 0, 1},
        {PTQ_UN_LEAKY_RELU, "leaky_relu 0.01", 0.01f, 0, 1},
        {PTQ_UN_CLIP, "clip -0.5..0.7", -0.5f, 0.7f, 1},
        {PTQ_UN_CLIP, "clip min > max", 1.0f, -1.0f, 1},
        {PTQ_UN_SIGMOID, "sigmoid", 0, 0, 0},
        {PTQ_UN_HARD_SIGMOID, "hard_sigmoid", 0.2f, 0.5f, 1},
        {PTQ_UN_HARD_SIGMOID, "hard_sigmoid 0.3 0.4", 0.3f, 0.4f, 1},
        {PTQ_UN_HARD_SWISH, "hard_swish", 0, 0, 1},
        {PTQ_UN_TANH, "tanh", 0, 0, 0},
        {PTQ_UN_ERF, "erf", 0, 0, 0},
        {PTQ_UN_GELU, "gelu", 0, 0, 2},
        {PTQ_UN_GELU_TANH, "gelu tanh", 0, 0, 0},
    };
    kstat exact = {"unary (exact)", 0.0f, 0.0f, 0, 0, 0, 0, 0, 0};
    /* CUDA's expf/tanhf/erff: <= 2 ulp; 1e-6 is about 8 ulp */
    kstat transc = {"unary (exp/tanh/erf)", 1e-6f, 1e-7f, 0, 0, 0, 0, 0, 0};
    /* CUDA's erfcf is within 4 ulp, the host's within 3: together they may pass 1e-6; softmax's tolerance */
    kstat erfc = {"unary (erfc)", 1e-5f, 1e-7f, 0, 0, 0, 0, 0, 0};
    const int64_t sizes[] = {1, 777, (1 << 20) + 3};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int64_t n = sizes[s];
        float *x = host_uniform(n, -6.0f, 6.0f), *y = host_alloc(n);
        const float special[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 3.0f, -3.0f, 1e-30f, -88.0f, 88.0f};
        for (int64_t i = 0; n > 1 && i < (int64_t)(sizeof special / sizeof special[0]) && i < n; i++)
            x[i] = special[i];
        float *dx = dev_floats(x, n);
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            ptq_k_unary_ref(ops[o].op, ops[o].alpha, ops[o].beta, n, x, y);
            float *dy = dev_floats(NULL, n);
            char what[120];
            snprintf(what, sizeof what, "%s n %lld", ops[o].name, (long long)n);
            check_case(ops[o].tol == 1 ? &exact : ops[o].tol == 2 ? &erfc : &transc,
                       ptq_k_unary_cuda(&ctx, dev, ops[o].op, ops[o].alpha, ops[o].beta, n, dx, dy), dy, y, n, what);
            ptq_cuda_release(dev, dy);
        }
        /* in place, as the contract allows */
        ptq_k_unary_ref(PTQ_UN_RELU, 0, 0, n, x, y);
        char what[80];
        snprintf(what, sizeof what, "relu in place n %lld", (long long)n);
        check_case(&exact, ptq_k_unary_cuda(&ctx, dev, PTQ_UN_RELU, 0, 0, n, dx, dx), dx, y, n, what);
        ptq_cuda_release(dev, dx);
        free(x);
        free(y);
    }
    report(&exact);
    report(&transc);
    report(&erfc);
}

/* ---- pools ---- */

static void test_global_avgpool(void)
{
    kstat k = {"global_avgpool", 1e-6f, 1e-7f, 0, 0, 0, 0, 0, 0}; /* both sum in double */
    const int64_t cases[][2] = {{1, 1}, {6, 49}, {128, 1}, {96 * 64, 49}, {3, 100003}, {1000, 33}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t rows = cases[c][0], cols = cases[c][1];
        float *x = host_uniform(rows * cols, -2.0f, 3.0f), *y = host_alloc(rows);
        ptq_k_global_avgpool_ref(rows, cols, x, y);
        float *dx = dev_floats(x, rows * cols), *dy = dev_floats(NULL, rows);
        char what[80];
        snprintf(what, sizeof what, "rows %lld cols %lld", (long long)rows, (long long)cols);
        check_case(&k, ptq_k_global_avgpool_cuda(&ctx, dev, rows, cols, dx, dy), dy, y, rows, what);
        ptq_cuda_release(dev, dx);
        ptq_cuda_release(dev, dy);
        free(x);
        free(y);
    }
    report(&k);
}

/* [n, c, hw] -> [n, hw, c] */
static void to_nhwc(const float *x, int64_t n, int64_t c, int64_t hw, float *out)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t s = 0; s < hw; s++)
                out[(i * hw + s) * c + ch] = x[(i * c + ch) * hw + s];
}

/* The channels-last global average pool gives the [N, C, H, W] kernel's bits. */
static void test_global_avgpool_nhwc(void)
{
    kstat k = {"global_avgpool nhwc (bits of nchw)", 0.0f, 0.0f, 0, 0, 0, 0, 0, 0};
    const int64_t cases[][3] = {{1, 1, 1}, {2, 49, 3}, {4, 49, 2048}, {1, 100003, 3}, {3, 33, 1000}, {128, 1, 7}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int64_t n = cases[c][0], hw = cases[c][1], ch = cases[c][2];
        float *x = host_uniform(n * ch * hw, -2.0f, 3.0f), *xt = host_alloc(n * ch * hw), *want = host_alloc(n * ch);
        to_nhwc(x, n, ch, hw, xt);
        float *dx = dev_floats(x, n * ch * hw), *dxt = dev_floats(xt, n * ch * hw), *dy = dev_floats(NULL, n * ch);
        char what[96];
        snprintf(what, sizeof what, "n %lld hw %lld c %lld", (long long)n, (long long)hw, (long long)ch);
        ptq_status st = ptq_k_global_avgpool_cuda(&ctx, dev, n * ch, hw, dx, dy);
        if (st == PTQ_OK)
            st = ptq_cuda_download(&ctx, dev, want, dy, (size_t)(n * ch) * sizeof(float));
        if (st == PTQ_OK)
            st = ptq_k_global_avgpool_nhwc_cuda(&ctx, dev, n, hw, ch, dxt, dy);
        check_case(&k, st, dy, want, n * ch, what);
        ptq_cuda_release(dev, dx);
        ptq_cuda_release(dev, dxt);
        ptq_cuda_release(dev, dy);
        free(x);
        free(xt);
        free(want);
    }
    report(&k);
}

typedef struct pool_case {
    int64_t n, c;
    int64_t in[3], k[3], stride[3], dil[3], pad_lo[3], pad_hi[3];
    int ceil_mode;
} pool_case;

static const pool_case pool_cases[] = {
    {2, 3, {1, 16, 16}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 0},  /* 3x3 s2 p1 */
    {2, 4, {1, 8, 8}, {1, 2, 2}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 0},    /* 2x2 s2 */
    {1, 2, {1, 7, 7}, {1, 2, 2}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1},    /* ceil: last window overhangs */
    {2, 3, {1, 9, 10}, {1, 3, 2}, {1, 1, 3}, {1, 1, 1}, {0, 1, 0}, {0, 2, 1}, 1},   /* asymmetric pads, ceil */
    {1, 5, {1, 12, 12}, {1, 3, 3}, {1, 1, 1}, {1, 2, 2}, {0, 2, 2}, {0, 2, 2}, 0},  /* dilated */
    {3, 2, {1, 1, 31}, {1, 1, 4}, {1, 1, 3}, {1, 1, 1}, {0, 0, 1}, {0, 0, 2}, 0},   /* 1-D */
    {1, 2, {5, 6, 7}, {2, 3, 2}, {2, 1, 2}, {1, 1, 1}, {1, 1, 0}, {0, 1, 1}, 0},    /* 3-D */
    {4, 48, {1, 14, 14}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 0}, /* stride 1 same */
    {2, 3, {1, 11, 12}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},  /* 3x3 s2 p1 ceil */
    {1, 65600, {1, 3, 3}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 0}, /* planes past a grid's rows */
    {2, 64, {1, 112, 112}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 0}, /* ResNet's stem */
    {3, 8, {1, 9, 9}, {1, 2, 3}, {1, 2, 1}, {1, 2, 1}, {0, 0, 1}, {0, 1, 1}, 1},    /* 4 channels a thread, dilated, ceil */
};

static void test_pools(void)
{
    kstat km = {"maxpool", 0.0f, 0.0f, 0, 0, 0, 0, 0, 0};         /* a max is one of the inputs: exact */
    kstat ka = {"avgpool", 1e-6f, 1e-7f, 0, 0, 0, 0, 0, 0};       /* sums in double */
    kstat kn = {"max/avgpool nhwc (bits of nchw)", 0.0f, 0.0f, 0, 0, 0, 0, 0, 0};
    for (size_t c = 0; c < sizeof pool_cases / sizeof pool_cases[0]; c++) {
        const pool_case *pc = &pool_cases[c];
        ptq_pool_params p;
        memset(&p, 0, sizeof p);
        p.n = pc->n;
        p.c = pc->c;
        for (int s = 0; s < PTQ_SPATIAL; s++) {
            p.in[s] = pc->in[s];
            p.k[s] = pc->k[s];
            p.stride[s] = pc->stride[s];
            p.dil[s] = pc->dil[s];
            p.pad_lo[s] = pc->pad_lo[s];
            p.pad_hi[s] = pc->pad_hi[s];
            int64_t span = p.in[s] + p.pad_lo[s] + p.pad_hi[s] - p.dil[s] * (p.k[s] - 1) - 1;
            p.out[s] = (pc->ceil_mode ? (span + p.stride[s] - 1) / p.stride[s] : span / p.stride[s]) + 1;
            /* ONNX: a ceil-mode window must start inside the input or the left pad */
            if (pc->ceil_mode && (p.out[s] - 1) * p.stride[s] >= p.in[s] + p.pad_lo[s])
                p.out[s]--;
        }
        int64_t n_x = p.n * p.c * p.in[0] * p.in[1] * p.in[2], n_y = p.n * p.c * p.out[0] * p.out[1] * p.out[2];
        float *x = host_uniform(n_x, -3.0f, 2.0f), *y = host_alloc(n_y), *xm = host_alloc(n_x);
        for (int64_t i = 0; i < n_x; i++) /* MaxPool's input: NaN, -Inf and both zeros among the values */
            xm[i] = i % 29 == 3 ? NAN : i % 31 == 5 ? -INFINITY : i % 23 == 7 ? -0.0f : i % 19 == 2 ? 0.0f : x[i];
        float *dx = dev_floats(x, n_x), *dxm = dev_floats(xm, n_x);
        char what[240];
        for (int variant = 0; variant < 3; variant++) {
            float *dy = dev_floats(NULL, n_y);
            p.count_include_pad = variant == 2;
            window_str(what, sizeof what, p.in, p.k, p.stride, p.dil, p.pad_lo, p.pad_hi);
            snprintf(what + strlen(what), sizeof what - strlen(what), " %s n %lld c %lld%s%s", variant ? "avg" : "max",
                     (long long)p.n, (long long)p.c, pc->ceil_mode ? " ceil" : "",
                     variant == 2 ? " count_include_pad" : "");
            if (variant == 0) {
                ptq_k_maxpool_ref(&p, xm, y);
                check_case(&km, ptq_k_maxpool_cuda(&ctx, dev, &p, dxm, dy), dy, y, n_y, what);
            } else {
                ptq_k_avgpool_ref(&p, x, y);
                check_case(&ka, ptq_k_avgpool_cuda(&ctx, dev, &p, dx, dy), dy, y, n_y, what);
            }
            if (p.in[0] == 1 && p.k[0] == 1 && p.pad_lo[0] == 0 && p.pad_hi[0] == 0 && p.n * p.c <= 4096) {
                /* channels last: the bits of the [N, C, H, W] kernel, transposed */
                const int64_t hw_in = p.in[1] * p.in[2], hw_out = p.out[1] * p.out[2];
                float *got = host_alloc(n_y), *want = host_alloc(n_y), *xt = host_alloc(n_x);
                ptq_status st = ptq_cuda_download(&ctx, dev, got, dy, (size_t)n_y * sizeof(float));
                to_nhwc(got, p.n, p.c, hw_out, want);
                to_nhwc(variant == 0 ? xm : x, p.n, p.c, hw_in, xt);
                float *dxt = dev_floats(xt, n_x);
                if (st == PTQ_OK)
                    st = ptq_k_pool_nhwc_cuda(&ctx, dev, variant == 0, &p, dxt, dy);
                check_case(&kn, st, dy, want, n_y, what);
                ptq_cuda_release(dev, dxt);
                free(got);
                free(want);
                free(xt);
            }
            ptq_cuda_release(dev, dy);
        }
        ptq_cuda_release(dev, dx);
        ptq_cuda_release(dev, dxm);
        free(x);
        free(xm);
        free(y);
    }
    report(&kn);
    report(&km);
    report(&ka);
}

/* ---- batchnorm, softmax, transpose ---- */

static void test_batchnorm(void)
{
    kstat k = {"batchnorm", 1e-5f, 1e-6f, 0, 0, 0, 0, 0, 0};
    const int64_t cases[][3] = {{2, 16, 49}, {1, 3, 1}, {4, 64, 1024}, {7, 5, 13}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t n = cases[c][0], ch = cases[c][1], sp = cases[c][2], total = n * ch * sp;
        float *x = host_uniform(total, -3.0f, 3.0f), *y = host_alloc(total);
        float *scale = host_uniform(ch, -2.0f, 2.0f), *bias = host_uniform(ch, -1.0f, 1.0f);
        float *mean = host_uniform(ch, -1.0f, 1.0f), *var = host_uniform(ch, 0.01f, 4.0f);
        ptq_k_batchnorm_ref(n, ch, sp, x, scale, bias, mean, var, 1e-5f, y);
        float *dx = dev_floats(x, total), *dy = dev_floats(NULL, total), *ds = dev_floats(scale, ch);
        float *dbi = dev_floats(bias, ch), *dm = dev_floats(mean, ch), *dv = dev_floats(var, ch);
        char what[80];
        snprintf(what, sizeof what, "n %lld c %lld spatial %lld", (long long)n, (long long)ch, (long long)sp);
        check_case(&k, ptq_k_batchnorm_cuda(&ctx, dev, n, ch, sp, dx, ds, dbi, dm, dv, 1e-5f, dy), dy, y, total, what);
        void *bufs[] = {dx, dy, ds, dbi, dm, dv};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            ptq_cuda_release(dev, bufs[i]);
        free(x);
        free(y);
        free(scale);
        free(bias);
        free(mean);
        free(var);
    }
    report(&k);
}

static void test_softmax(void)
{
    kstat k = {"softmax", 1e-5f, 1e-7f, 0, 0, 0, 0, 0, 0}; /* expf differs by <= 2 ulp */
    /* inner 1 and 32 or more long: a warp a row (attention's 197, rows past the 32 lanes); shorter, or inner > 1: a
     * thread a line */
    const int64_t cases[][3] = {{1, 10, 1},   {64, 10, 1},   {2, 1000, 1}, {3, 7, 5},     {1, 1, 1},
                                {4, 3, 257},  {300, 197, 1}, {9, 33, 1},   {5, 1024, 1}, {3, 1025, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t outer = cases[c][0], len = cases[c][1], inner = cases[c][2], total = outer * len * inner;
        float *x = host_uniform(total, -10.0f, 10.0f), *y = host_alloc(total);
        ptq_k_softmax_ref(outer, len, inner, x, y);
        float *dx = dev_floats(x, total), *dy = dev_floats(NULL, total);
        char what[80];
        snprintf(what, sizeof what, "outer %lld len %lld inner %lld", (long long)outer, (long long)len,
                 (long long)inner);
        check_case(&k, ptq_k_softmax_cuda(&ctx, dev, outer, len, inner, dx, dy), dy, y, total, what);
        ptq_cuda_release(dev, dx);
        ptq_cuda_release(dev, dy);
        free(x);
        free(y);
    }
    report(&k);
}

/* Rows of every length class: one element, under a warp, under a block, many blocks' worth of columns. */
static void test_layernorm(void)
{
    kstat k = {"layernorm", 1e-6f, 1e-6f, 0, 0, 0, 0, 0, 0}; /* double sums in another order: float rounding only */
    const int64_t cases[][2] = {{1, 1}, {7, 5}, {64, 768}, {3, 1000}, {2, 257}, {70000, 8}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int64_t rows = cases[c][0], cols = cases[c][1], total = rows * cols;
        float *x = host_uniform(total, -4.0f, 6.0f), *scale = host_uniform(cols, -2.0f, 2.0f);
        float *bias = host_uniform(cols, -1.0f, 1.0f), *y = host_alloc(total), *mean = host_alloc(rows);
        float *inv = host_alloc(rows);
        float *dx = dev_floats(x, total), *ds = dev_floats(scale, cols), *db = dev_floats(bias, cols);
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            ptq_k_layernorm_ref(rows, cols, x, scale, with_bias ? bias : NULL, 1e-5f, y, mean, inv);
            float *dy = dev_floats(NULL, total), *dm = dev_floats(NULL, rows), *di = dev_floats(NULL, rows);
            ptq_status st = ptq_k_layernorm_cuda(&ctx, dev, rows, cols, dx, ds, with_bias ? db : NULL, 1e-5f, dy, dm,
                                                 di);
            char what[96];
            snprintf(what, sizeof what, "rows %lld cols %lld%s", (long long)rows, (long long)cols,
                     with_bias ? " bias" : "");
            check_case(&k, st, dy, y, total, what);
            check_case(&k, st, dm, mean, rows, what);
            check_case(&k, st, di, inv, rows, what);
            ptq_cuda_release(dev, dy);
            ptq_cuda_release(dev, dm);
            ptq_cuda_release(dev, di);
        }
        /* without the optional outputs */
        float *dy = dev_floats(NULL, total);
        check_case(&k, ptq_k_layernorm_cuda(&ctx, dev, rows, cols, dx, ds, db, 1e-5f, dy, NULL, NULL), dy, y, total,
                   "no mean/inv_std");
        ptq_cuda_release(dev, dy);
        ptq_cuda_release(dev, dx);
        ptq_cuda_release(dev, ds);
        ptq_cuda_release(dev, db);
        free(x);
        free(scale);
        free(bias);
        free(y);
        free(mean);
        free(inv);
    }
    report(&k);
}

/* Byte-exact for every element size: random bytes in, compared as bytes
 * (reinterpreted as floats only to reuse the tally, NaN bit patterns included). */
/* One byte-exact case of k: unless st already failed, device dy's first dy_bytes downloaded into got, whose first
 * n_bytes must equal want's; dy released. */
static void check_bytes(kstat *k, const char *what, ptq_status st, void *dy, unsigned char *got,
                        const unsigned char *want, size_t n_bytes, size_t dy_bytes)
{
    k->cases++;
    ptq_test_checks++;
    if (st == PTQ_OK)
        st = ptq_cuda_download(&ctx, dev, got, dy, dy_bytes);
    if (st != PTQ_OK || memcmp(got, want, n_bytes) != 0) {
        fprintf(stderr, "  FAIL %s [%s]: %s\n", k->name, what, st != PTQ_OK ? ctx.msg : "bytes differ");
        k->failed++;
        ptq_test_failures++;
        k->max_ratio = INFINITY;
    }
    ptq_cuda_release(dev, dy);
}

static void test_transpose(void)
{
    kstat k = {"transpose", 0.0f, 0.0f, 0, 0, 0, 0, 0, 0};
    static const struct {
        int ndim;
        int64_t dims[5], perm[5];
    } cases[] = {{2, {7, 5}, {1, 0}},
                 {4, {2, 3, 4, 5}, {0, 2, 3, 1}},
                 {4, {2, 3, 4, 5}, {3, 2, 1, 0}},
                 {3, {64, 1, 33}, {2, 0, 1}},
                 {5, {2, 3, 1, 4, 2}, {4, 1, 3, 0, 2}},
                 {1, {9}, {0}},
                 {5, {2, 5, 3, 4, 8}, {2, 0, 3, 1, 4}}, /* a packed q/k/v projection split into heads */
                 {4, {3, 4, 5, 6}, {0, 2, 3, 1}},       /* dims 2 and 3 walk x contiguously: merged */
                 {3, {2, 3, 4}, {0, 1, 2}},             /* no move at all: one dim */
                 {4, {1, 6, 1, 7}, {2, 3, 0, 1}},       /* size-1 dims dropped */
                 {4, {3, 37, 5, 64}, {0, 2, 1, 3}},     /* heads split: rows of 64 moved in 16-byte units */
                 {4, {2, 6, 9, 10}, {0, 2, 1, 3}},      /* rows of 10: 8-byte units for 4-byte elements */
                 {4, {3, 5, 37, 64}, {0, 1, 3, 2}},     /* K^T: 32 x 32 tiles, the last ones partial */
                 {3, {2, 45, 70}, {0, 2, 1}},           /* tiles partial both ways */
                 {3, {40, 3, 50}, {2, 1, 0}}};          /* tiles with a batch dim between j and the last */
    const size_t elems[] = {1, 2, 4, 8};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t e = 0; e < sizeof elems / sizeof elems[0]; e++) {
            int64_t n = ptq_dims_prod(cases[c].dims, 0, cases[c].ndim);
            size_t n_bytes = (size_t)n * elems[e], n_floats = (n_bytes + 3) / 4;
            unsigned char *x = malloc(n_bytes), *y = calloc(n_floats, 4), *got = calloc(n_floats, 4);
            for (size_t i = 0; i < n_bytes; i++)
                x[i] = (unsigned char)(test_rand_uniform(0.0f, 256.0f));
            ptq_k_transpose_ref(elems[e], cases[c].ndim, cases[c].dims, cases[c].perm, x, y);
            void *dx = dev_buf(x, n_bytes), *dy = dev_buf(NULL, n_floats * 4);
            ptq_status st =
                ptq_k_transpose_cuda(&ctx, dev, elems[e], cases[c].ndim, cases[c].dims, cases[c].perm, dx, dy);
            char dims[96], what[160];
            snprintf(what, sizeof what, "%zu-byte elements, %s", elems[e],
                     ptq_dims_str(cases[c].dims, cases[c].ndim, dims, sizeof dims));
            check_bytes(&k, what, st, dy, got, y, n_bytes, n_floats * 4);
            ptq_cuda_release(dev, dx);
            free(x);
            free(y);
            free(got);
        }
    report(&k);
}

/* Transposes past 2^30 elements (one byte each) through both walks that take int64 offsets: 33,000 x 33,000 in
 * tiles, and 300,000,000 x 4 -> 4 x 300,000,000 (an innermost dim of 4 bytes, too short for a tile) in the
 * int64 index kernel; byte for byte against ptq_k_transpose_ref. */
static void test_transpose_wide(void)
{
    kstat k = {"transpose int64 indices", 0.0f, 0.0f, 0, 0, 0, 0, 0, 0};
    const int64_t shapes[2][2] = {{33000, 33000}, {4, 300000000}}, perm[2] = {1, 0};
    for (int c = 0; c < 2; c++) {
        const int64_t *dims = shapes[c], n = dims[0] * dims[1];
        unsigned char *x = malloc((size_t)n), *y = malloc((size_t)n), *got = malloc((size_t)n);
        CHECK(x && y && got);
        if (x && y && got) {
            for (int64_t i = 0; i < n; i++)
                x[i] = (unsigned char)(i * 131 + (i >> 17));
            ptq_k_transpose_ref(1, 2, dims, perm, x, y);
            void *dx = dev_buf(x, (size_t)n), *dy = dev_buf(NULL, (size_t)n);
            ptq_status st = ptq_k_transpose_cuda(&ctx, dev, 1, 2, dims, perm, dx, dy);
            char what[64];
            snprintf(what, sizeof what, "1-byte elements, %lldx%lld", (long long)dims[0], (long long)dims[1]);
            check_bytes(&k, what, st, dy, got, y, (size_t)n, (size_t)n);
            ptq_cuda_release(dev, dx);
        }
        free(x);
        free(y);
        free(got);
    }
    report(&k);
}

/* Slice: each case through both GPU paths (one block of rows as a 2-D copy; strided gather), byte for byte
 * against ptq_k_slice_ref, with y poisoned first so a byte the GPU leaves unwritten shows. */
static void test_slice(void)
{
    kstat k = {"slice", 0.0f, 0.0f, 0, 0, 0, 0, 0, 0};
    static const struct {
        int ndim;
        int64_t dims[4], start[4], step[4], out[4];
    } cases[] = {
        {3, {5, 7, 24}, {0, 0, 8}, {1, 1, 1}, {5, 7, 8}},    /* q/k/v thirds of a packed projection: rows */
        {3, {5, 7, 24}, {2, 0, 0}, {1, 1, 1}, {2, 7, 24}},   /* leading dim: one block */
        {3, {5, 7, 24}, {0, 3, 0}, {1, 1, 1}, {5, 1, 24}},   /* a middle dim: x[:, 3:4] */
        {3, {5, 7, 24}, {0, 0, 0}, {1, 1, 1}, {5, 7, 24}},   /* the whole tensor */
        {3, {5, 7, 24}, {1, 2, 3}, {2, 1, 5}, {2, 4, 4}},    /* three dims, steps */
        {3, {5, 7, 24}, {4, 6, 23}, {-1, -2, -3}, {5, 4, 8}}, /* reversed */
        {2, {6, 9}, {0, 1}, {1, 2}, {6, 4}},                 /* one dim with a step: the gather */
        {1, {9}, {8}, {-1}, {9}},
        {2, {4, 5}, {0, 2}, {1, 1}, {4, 0}},                 /* empty */
    };
    const size_t elems[] = {1, 2, 4, 8};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t e = 0; e < sizeof elems / sizeof elems[0]; e++) {
            const int nd = cases[c].ndim;
            const int64_t n = ptq_dims_prod(cases[c].dims, 0, nd), n_out = ptq_dims_prod(cases[c].out, 0, nd);
            const size_t n_bytes = (size_t)n * elems[e], out_bytes = (size_t)n_out * elems[e] + 8;
            unsigned char *x = malloc(n_bytes), *y = malloc(out_bytes), *got = malloc(out_bytes);
            for (size_t i = 0; i < n_bytes; i++)
                x[i] = (unsigned char)(test_rand_uniform(0.0f, 256.0f));
            memset(y, 0xA5, out_bytes);
            ptq_k_slice_ref(elems[e], nd, cases[c].dims, cases[c].out, cases[c].start, cases[c].step, x, y);
            void *dx = dev_buf(x, n_bytes), *dy = dev_buf(NULL, out_bytes);
            ptq_status st = ptq_cuda_fill_bytes(&ctx, dev, dy, 0xA5, out_bytes);
            if (st == PTQ_OK)
                st = ptq_k_slice_cuda(&ctx, dev, elems[e], nd, cases[c].dims, cases[c].out, cases[c].start,
                                      cases[c].step, dx, dy);
            char dims[96], what[160];
            snprintf(what, sizeof what, "case %zu, %zu-byte elements, %s", c, elems[e],
                     ptq_dims_str(cases[c].dims, nd, dims, sizeof dims));
            check_bytes(&k, what, st, dy, got, y, out_bytes, out_bytes);
            ptq_cuda_release(dev, dx);
            free(x);
            free(y);
            free(got);
        }
    report(&k);
}

int main(void)
{
    char why[256];
    if (ptq_cuda_device_count(why, sizeof why) == 0) {
        printf("cuda_parity_kernels: skipped: no GPU: %s\n", why);
        return PTQ_TEST_SKIP;
    }
    ptq_ctx_init(&ctx);
    if (ptq_cuda_dev_create(&ctx, 0, &dev) != PTQ_OK) {
        fprintf(stderr, "cuda_parity_kernels: %s (%s)\n", ctx.msg, ctx.where);
        return 1;
    }
    printf("cuda_parity_kernels: GPU 0 (%s) against kernels/ref; err/tol <= 1 passes\n", ptq_cuda_dev_name(dev));
    test_rand_seed(20240611);
    const int cudnn = ptq_cuda_dev_set_cudnn(dev, 1);
    test_conv(cudnn ? "conv cuDNN" : "conv", F32_RTOL, F32_ATOL);
    if (cudnn) {
        ptq_cuda_dev_set_cudnn(dev, 0);
        test_conv("conv im2col", F32_RTOL, F32_ATOL);
        setenv("PTQ_KSPLIT", "7", 1); /* K summed 7 taps an SGEMM: blocks and a remainder */
        test_conv("conv im2col, PTQ_KSPLIT=7", F32_RTOL, F32_ATOL);
        unsetenv("PTQ_KSPLIT");
        ptq_cuda_dev_set_cudnn(dev, 1);
    } else {
        printf("conv: %s\n", ptq_cuda_dev_note(dev));
    }
    test_gemm("gemm", F32_RTOL, F32_ATOL);
    test_gemm_batched("gemm_batched", F32_RTOL, F32_ATOL);
    /* --math fp64 (cuDNN loaded or not: that math never calls it) */
    ptq_cuda_dev_set_math(dev, PTQ_CUDA_MATH_FP64);
    test_conv("conv fp64", F64_RTOL, F64_ATOL);
    test_gemm("gemm fp64", F64_RTOL, F64_ATOL);
    test_gemm_batched("gemm_batched fp64", F64_RTOL, F64_ATOL);
    test_f64_batch_invariance();
    ptq_cuda_dev_set_math(dev, PTQ_CUDA_MATH_TF32);
    test_gemm_row_invariance("tf32", PTQ_CUDA_MATH_TF32);
    ptq_cuda_dev_set_math(dev, PTQ_CUDA_MATH_FP32);
    test_gemm_row_invariance("fp32", PTQ_CUDA_MATH_FP32);
    test_binary();
    test_expand();
    test_unary();
    test_global_avgpool();
    test_global_avgpool_nhwc();
    test_pools();
    test_batchnorm();
    test_softmax();
    test_layernorm();
    test_transpose();
    test_transpose_wide();
    test_slice();
    CHECK_MSG(ptq_cuda_sync(&ctx, dev) == PTQ_OK, "%s", ctx.msg);
    ptq_cuda_dev_free(dev);
    return test_done("cuda_parity_kernels");
}

#endif
