/* kernels/ref/numfmt.c against NVIDIA's conversions (kernels/cuda/numfmt.cu):
 * FP8 E4M3, E5M2, FP16 and BF16 codes of all 2^32 float bit patterns, mismatches
 * counted per input class (must all be 0), the CPU side on the core/parallel.h
 * pool; then INT8/FP8 quantize and fake-quant and the FP16/BF16 round trips on
 * seeded arrays with specials and exact .5 ties, several scales, bit for bit
 * (NaN outputs compared as NaN). Exit 77 without a GPU. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/parallel.h"
#include "kernels/numfmt.h"
#include "ptq/runtime.h"
#include "testlib.h"

#ifndef PTQ_CUDA

int main(void)
{
    printf("cuda_parity_numfmt: skipped: ptq was built without CUDA\n");
    return PTQ_TEST_SKIP;
}

#else

#include "kernels/cuda/cuda_kernels.h"

#define LOG2_CHUNK 28
#define CHUNK ((int64_t)1 << LOG2_CHUNK)
#define N_EXAMPLES 4

enum { FMT_E4M3, FMT_E5M2, FMT_FP16, FMT_BF16, N_FMT };
static const char *const fmt_names[N_FMT] = {"e4m3", "e5m2", "fp16", "bf16"};

/* Input classes relative to the target format. tie: in range and exactly
 * halfway between two codes (taken out of subnormal/normal/underflow). */
enum { C_ZERO, C_F32_SUB, C_UNDERFLOW, C_SUB, C_NORMAL, C_TIE, C_OVERFLOW, C_INF, C_NAN, N_CLASS };
static const char *const class_names[N_CLASS] = {"zero",   "f32-subnormal", "underflow", "subnormal", "normal",
                                                 "tie",    "overflow",      "inf",       "nan"};

typedef struct fmt_layout {
    int man_bits, emin;  /* stored mantissa bits; exponent of the smallest normal */
    uint32_t max_bits;   /* float bits of the largest finite value */
} fmt_layout;

static const fmt_layout layouts[N_FMT] = {
    {3, -6, 0x43E00000u},  /* 448 */
    {2, -14, 0x47600000u}, /* 57344 */
    {10, -14, 0x477FE000u}, /* 65504 */
    {7, -126, 0x7F7F0000u}  /* 3.3895e38 */
};

static int classify(const fmt_layout *f, uint32_t u)
{
    const uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u)
        return C_NAN;
    if (a == 0x7F800000u)
        return C_INF;
    if (a == 0)
        return C_ZERO;
    if (a < 0x00800000u)
        return C_F32_SUB;
    if (a > f->max_bits)
        return C_OVERFLOW;
    const int e = (int)(a >> 23) - 127;
    const uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
    /* bits of m below the format's quantum at this exponent */
    const int k = 23 - f->man_bits + (e < f->emin ? f->emin - e : 0);
    if (k > 24)
        return C_UNDERFLOW; /* below half the smallest subnormal */
    if ((m & ((1u << k) - 1u)) == 1u << (k - 1))
        return C_TIE; /* half the smallest subnormal too */
    return e < f->emin ? C_SUB : C_NORMAL;
}

typedef struct worker_tally {
    int64_t n[N_FMT][N_CLASS];
    int64_t bad[N_FMT][N_CLASS];
    int64_t n_bad[N_FMT];
    uint32_t example_x[N_FMT][N_EXAMPLES];
    uint32_t example_dev[N_FMT][N_EXAMPLES];
    int64_t nan_codes[N_FMT][2][65536]; /* device codes for NaN inputs, by input sign */
} worker_tally;

typedef struct chunk_job {
    uint32_t base;
    uint32_t *x;
    const uint8_t *dev_e4m3, *dev_e5m2;
    const uint16_t *dev_fp16, *dev_bf16;
    worker_tally *tally; /* [ptq_par_workers()] */
} chunk_job;

static void fill_body(void *arg, int64_t begin, int64_t end, int worker)
{
    chunk_job *j = arg;
    for (int64_t i = begin; i < end; i++)
        j->x[i] = j->base + (uint32_t)i;
}

static void note(worker_tally *t, int fmt, uint32_t u, uint32_t dev, uint32_t ref)
{
    const int c = classify(&layouts[fmt], u);
    t->n[fmt][c]++;
    if (c == C_NAN)
        t->nan_codes[fmt][u >> 31][dev]++;
    if (dev != ref) {
        if (t->n_bad[fmt] < N_EXAMPLES) {
            t->example_x[fmt][t->n_bad[fmt]] = u;
            t->example_dev[fmt][t->n_bad[fmt]] = dev;
        }
        t->n_bad[fmt]++;
        t->bad[fmt][c]++;
    }
}

static void compare_body(void *arg, int64_t begin, int64_t end, int worker)
{
    chunk_job *j = arg;
    worker_tally *t = &j->tally[worker];
    for (int64_t i = begin; i < end; i++) {
        const uint32_t u = j->base + (uint32_t)i;
        float x;
        memcpy(&x, &u, sizeof x);
        note(t, FMT_E4M3, u, j->dev_e4m3[i], ptq_k_fp8_from_float_ref(PTQ_FP8_E4M3, x));
        note(t, FMT_E5M2, u, j->dev_e5m2[i], ptq_k_fp8_from_float_ref(PTQ_FP8_E5M2, x));
        note(t, FMT_FP16, u, j->dev_fp16[i], ptq_k_fp16_from_float_ref(x));
        note(t, FMT_BF16, u, j->dev_bf16[i], ptq_k_bf16_from_float_ref(x));
    }
}

static double now_s(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *alloc_or_die(size_t n_bytes)
{
    void *p = calloc(1, n_bytes);
    if (!p) {
        fprintf(stderr, "cuda_parity_numfmt: out of memory (%zu bytes)\n", n_bytes);
        exit(1);
    }
    return p;
}

static void report_exhaustive(const worker_tally *tally, int n_workers)
{
    for (int f = 0; f < N_FMT; f++) {
        int64_t n[N_CLASS] = {0}, bad[N_CLASS] = {0}, total_bad = 0;
        for (int w = 0; w < n_workers; w++)
            for (int c = 0; c < N_CLASS; c++) {
                n[c] += tally[w].n[f][c];
                bad[c] += tally[w].bad[f][c];
            }
        printf("  %s mismatches:", fmt_names[f]);
        for (int c = 0; c < N_CLASS; c++) {
            printf(" %s %lld/%lld", class_names[c], (long long)bad[c], (long long)n[c]);
            total_bad += bad[c];
        }
        printf("\n");
        CHECK_MSG(total_bad == 0, "%s: %lld of 2^32 codes differ from the GPU's", fmt_names[f], (long long)total_bad);
        int shown = 0;
        for (int w = 0; w < n_workers && shown < 8; w++)
            for (int e = 0; e < N_EXAMPLES && e < tally[w].n_bad[f]; e++, shown++) {
                const uint32_t u = tally[w].example_x[f][e];
                float x;
                memcpy(&x, &u, sizeof x);
                const uint32_t ref = f == FMT_FP16   ? ptq_k_fp16_from_float_ref(x)
                                     : f == FMT_BF16 ? ptq_k_bf16_from_float_ref(x)
                                                     : ptq_k_fp8_from_float_ref(f ? PTQ_FP8_E5M2 : PTQ_FP8_E4M3, x);
                printf("    %s: x 0x%08x (%a, %s): GPU 0x%x, ref 0x%x\n", fmt_names[f], u, (double)x,
                       class_names[classify(&layouts[f], u)], tally[w].example_dev[f][e], ref);
            }
        /* what NVIDIA gives for NaN inputs, by sign: the codes and how often */
        for (int s = 0; s < 2; s++) {
            printf("    %s GPU codes for %cNaN:", fmt_names[f], s ? '-' : '+');
            int listed = 0;
            for (uint32_t code = 0; code < 65536 && listed < 6; code++) {
                int64_t cnt = 0;
                for (int w = 0; w < n_workers; w++)
                    cnt += tally[w].nan_codes[f][s][code];
                if (cnt) {
                    printf(" 0x%x x%lld", code, (long long)cnt);
                    listed++;
                }
            }
            printf("\n");
        }
    }
}

/* All 2^32 floats in chunks: GPU codes for each format, then the reference on
 * the pool, chunk by chunk. */
static int exhaustive(ptq_ctx *ctx, ptq_cuda_dev *dev)
{
    const int n_workers = ptq_par_workers();
    worker_tally *tally = alloc_or_die(sizeof *tally * (size_t)n_workers);
    uint32_t *x = alloc_or_die(sizeof *x * (size_t)CHUNK);
    uint8_t *e4m3 = alloc_or_die((size_t)CHUNK), *e5m2 = alloc_or_die((size_t)CHUNK);
    uint16_t *fp16 = alloc_or_die(sizeof *fp16 * (size_t)CHUNK), *bf16 = alloc_or_die(sizeof *bf16 * (size_t)CHUNK);
    void *x_dev = NULL, *q_dev = NULL;
    int ok = ptq_cuda_alloc(ctx, dev, sizeof *x * (size_t)CHUNK, &x_dev) == PTQ_OK &&
             ptq_cuda_alloc(ctx, dev, sizeof *fp16 * (size_t)CHUNK, &q_dev) == PTQ_OK;
    double gpu_s = 0.0, cpu_s = 0.0;
    const double t0 = now_s();
    for (int64_t c = 0; ok && c < ((int64_t)1 << (32 - LOG2_CHUNK)); c++) {
        chunk_job j = {(uint32_t)(c << LOG2_CHUNK), x, e4m3, e5m2, fp16, bf16, tally};
        double t = now_s();
        ptq_parallel_for(CHUNK, ptq_par_grain(CHUNK, 4, 1 << 16), fill_body, &j);
        ok = ptq_cuda_upload(ctx, dev, x_dev, x, sizeof *x * (size_t)CHUNK) == PTQ_OK &&
             ptq_k_fp8_from_float_cuda(ctx, dev, PTQ_FP8_E4M3, x_dev, CHUNK, q_dev) == PTQ_OK &&
             ptq_cuda_download(ctx, dev, e4m3, q_dev, (size_t)CHUNK) == PTQ_OK &&
             ptq_k_fp8_from_float_cuda(ctx, dev, PTQ_FP8_E5M2, x_dev, CHUNK, q_dev) == PTQ_OK &&
             ptq_cuda_download(ctx, dev, e5m2, q_dev, (size_t)CHUNK) == PTQ_OK &&
             ptq_k_fp16_from_float_cuda(ctx, dev, x_dev, CHUNK, q_dev) == PTQ_OK &&
             ptq_cuda_download(ctx, dev, fp16, q_dev, sizeof *fp16 * (size_t)CHUNK) == PTQ_OK &&
             ptq_k_bf16_from_float_cuda(ctx, dev, x_dev, CHUNK, q_dev) == PTQ_OK &&
             ptq_cuda_download(ctx, dev, bf16, q_dev, sizeof *bf16 * (size_t)CHUNK) == PTQ_OK;
        gpu_s += now_s() - t;
        t = now_s();
        if (ok)
            ptq_parallel_for(CHUNK, ptq_par_grain(CHUNK, 8, 1 << 16), compare_body, &j);
        cpu_s += now_s() - t;
    }
    CHECK_MSG(ok, "exhaustive: %s", ctx->msg);
    if (ok) {
        printf("cuda_parity_numfmt: all 2^32 floats, %d chunks of 2^%d: %.1f s (fill + GPU + copies %.1f s, "
               "CPU reference and compare %.1f s on %d threads)\n",
               1 << (32 - LOG2_CHUNK), LOG2_CHUNK, now_s() - t0, gpu_s, cpu_s, n_workers);
        report_exhaustive(tally, n_workers);
    }
    ptq_cuda_release(dev, x_dev);
    ptq_cuda_release(dev, q_dev);
    free(tally);
    free(x);
    free(e4m3);
    free(e5m2);
    free(fp16);
    free(bf16);
    return ok;
}

static int same_float(float a, float b)
{
    return isnan(a) ? isnan(b) : memcmp(&a, &b, sizeof a) == 0;
}

static int64_t count_diff_floats(const float *a, const float *b, int64_t n, int64_t *n_nan_bits)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        bad += !same_float(a[i], b[i]);
        *n_nan_bits += isnan(a[i]) && isnan(b[i]) && memcmp(&a[i], &b[i], sizeof a[i]) != 0;
    }
    return bad;
}

/* Seeded arrays, each element's x / scale checked for an exact .5 tie so
 * the report says how many ties were compared. */
static void arrays(ptq_ctx *ctx, ptq_cuda_dev *dev)
{
    const int64_t n = 1 << 20;
    static const float scales[] = {1.0f, 0.5f, 0x1p-7f, 0.1f, 1.0f / 127.0f, 3.7e-3f, 2.0f / 448.0f, 1e-40f, 1e30f};
    const int n_scales = (int)(sizeof scales / sizeof scales[0]);
    float *x = alloc_or_die(sizeof *x * (size_t)n), *y_ref = alloc_or_die(sizeof *x * (size_t)n);
    float *y_dev = alloc_or_die(sizeof *x * (size_t)n);
    uint8_t *q_ref = alloc_or_die((size_t)n), *q_dev = alloc_or_die((size_t)n);
    void *x_d = NULL, *y_d = NULL, *q_d = NULL;
    int64_t n_cases = 0, n_ties = 0, n_values = 0, bad[8] = {0}, nan_bits = 0;
    if (ptq_cuda_alloc(ctx, dev, sizeof *x * (size_t)n, &x_d) != PTQ_OK ||
        ptq_cuda_alloc(ctx, dev, sizeof *x * (size_t)n, &y_d) != PTQ_OK ||
        ptq_cuda_alloc(ctx, dev, (size_t)n, &q_d) != PTQ_OK) {
        CHECK_MSG(0, "arrays: %s", ctx->msg);
        goto done;
    }
    for (int s = 0; s < n_scales; s++)
        for (int kind = 0; kind < 3; kind++) {
            const float scale = scales[s];
            test_rand_seed(1000u + 17u * (uint64_t)s + (uint64_t)kind);
            if (kind == 0) /* specials over the INT8 range and well beyond */
                test_fill_specials(x, n, 300.0f * scale, 0.02f);
            else if (kind == 1) /* over the FP8 E5M2 range, beyond E4M3's */
                test_fill_specials(x, n, 60000.0f * scale, 0.02f);
            else /* (k + 0.5) * scale: exact ties after the division whenever the product was exact */
                for (int64_t i = 0; i < n; i++)
                    x[i] = ((float)(int)test_rand_uniform(-140.0f, 140.0f) + 0.5f) * scale;
            for (int64_t i = 0; i < n; i++) {
                const float v = x[i] / scale;
                n_ties += isfinite(v) && v - floorf(v) == 0.5f;
            }
            int ok = ptq_cuda_upload(ctx, dev, x_d, x, sizeof *x * (size_t)n) == PTQ_OK;
            /* INT8 quantize, INT8 fake-quant */
            ptq_k_quantize_int8_ref(x, n, scale, PTQ_K_INT8_QMAX, (int8_t *)q_ref);
            ok = ok && ptq_k_quantize_int8_cuda(ctx, dev, x_d, n, scale, q_d) == PTQ_OK &&
                 ptq_cuda_download(ctx, dev, q_dev, q_d, (size_t)n) == PTQ_OK;
            for (int64_t i = 0; ok && i < n; i++)
                bad[0] += q_ref[i] != q_dev[i];
            ptq_k_fake_quant_int8_ref(x, n, scale, PTQ_K_INT8_QMAX, y_ref);
            ok = ok && ptq_k_fake_quant_int8_cuda(ctx, dev, x_d, n, scale, y_d) == PTQ_OK &&
                 ptq_cuda_download(ctx, dev, y_dev, y_d, sizeof *x * (size_t)n) == PTQ_OK;
            if (ok)
                for (int64_t i = 0; i < n; i++) /* INT8 fake-quant never gives NaN: bits */
                    bad[1] += memcmp(&y_ref[i], &y_dev[i], sizeof *y_ref) != 0;
            /* FP8 quantize and fake-quant, both kinds */
            for (int k = 0; k < 2; k++) {
                const ptq_fp8_kind fk = k ? PTQ_FP8_E5M2 : PTQ_FP8_E4M3;
                ptq_k_quantize_fp8_ref(fk, x, n, scale, q_ref);
                ok = ok && ptq_k_quantize_fp8_cuda(ctx, dev, fk, x_d, n, scale, q_d) == PTQ_OK &&
                     ptq_cuda_download(ctx, dev, q_dev, q_d, (size_t)n) == PTQ_OK;
                for (int64_t i = 0; ok && i < n; i++)
                    bad[2 + 2 * k] += q_ref[i] != q_dev[i];
                ptq_k_fake_quant_fp8_ref(fk, x, n, scale, y_ref);
                ok = ok && ptq_k_fake_quant_fp8_cuda(ctx, dev, fk, x_d, n, scale, y_d) == PTQ_OK &&
                     ptq_cuda_download(ctx, dev, y_dev, y_d, sizeof *x * (size_t)n) == PTQ_OK;
                if (ok)
                    bad[3 + 2 * k] += count_diff_floats(y_ref, y_dev, n, &nan_bits);
            }
            /* BF16 round trip (out of place), then FP16 in place on the device */
            ptq_k_round_bf16_ref(x, n, y_ref);
            ok = ok && ptq_k_round_bf16_cuda(ctx, dev, x_d, n, y_d) == PTQ_OK &&
                 ptq_cuda_download(ctx, dev, y_dev, y_d, sizeof *x * (size_t)n) == PTQ_OK;
            if (ok)
                bad[7] += count_diff_floats(y_ref, y_dev, n, &nan_bits);
            ptq_k_round_fp16_ref(x, n, y_ref);
            ok = ok && ptq_k_round_fp16_cuda(ctx, dev, x_d, n, x_d) == PTQ_OK &&
                 ptq_cuda_download(ctx, dev, y_dev, x_d, sizeof *x * (size_t)n) == PTQ_OK;
            if (ok)
                bad[6] += count_diff_floats(y_ref, y_dev, n, &nan_bits);
            CHECK_MSG(ok, "arrays: scale %a: %s", (double)scale, ctx->msg);
            n_cases++;
            n_values += n;
        }
    printf("cuda_parity_numfmt: %lld arrays (%d scales), %lld values, %lld exact .5 ties after the division; "
           "differing: int8 quantize %lld, int8 fake-quant %lld, e4m3 quantize %lld, e4m3 fake-quant %lld, "
           "e5m2 quantize %lld, e5m2 fake-quant %lld, fp16 round %lld, bf16 round %lld (all must be 0); "
           "NaN outputs with other NaN bits %lld (not compared)\n",
           (long long)n_cases, n_scales, (long long)n_values, (long long)n_ties, (long long)bad[0], (long long)bad[1],
           (long long)bad[2], (long long)bad[3], (long long)bad[4], (long long)bad[5], (long long)bad[6],
           (long long)bad[7], (long long)nan_bits);
    CHECK(n_ties > 0);
    for (int k = 0; k < 8; k++)
        CHECK_MSG(bad[k] == 0, "array check %d: %lld values differ", k, (long long)bad[k]);
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
        printf("cuda_parity_numfmt: skipped: %s\n", why);
        return PTQ_TEST_SKIP;
    }
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_cuda_dev *dev = NULL;
    if (ptq_cuda_dev_create(&ctx, 0, &dev) != PTQ_OK) {
        fprintf(stderr, "cuda_parity_numfmt: %s\n", ctx.msg);
        return 1;
    }
    printf("cuda_parity_numfmt: GPU %s\n", ptq_cuda_dev_name(dev));
    arrays(&ctx, dev);
    exhaustive(&ctx, dev);
    ptq_cuda_dev_free(dev);
    return test_done("cuda_parity_numfmt");
}

#endif
