/* The device observer (observers/observer_cuda.c, kernels/cuda/observe.cu)
 * against the CPU observer: seeded batch sequences (sizes 1 to 1M; an
 * all-zero first batch; NaN/Inf; subnormals; -0/+0; ranges that grow by
 * small and huge factors through the settle path and, past the 65536-value
 * overflow buffer, the rescue pass) for 2048 to 2^20 bins (shared- and
 * global-memory counts); every state read back bit for bit. The observed
 * Conv -> Add -> Relu chain pass (ptq_k_observe_chain_cuda) the same way,
 * its output too, and the transformer passes (ptq_k_observe_bias_cuda,
 * ptq_k_observe_gelu_cuda). Exit 77 without a GPU. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "observers/observer_cuda.h"
#include "ptq/observer.h"
#include "ptq/runtime.h"
#include "testlib.h"

#ifndef PTQ_CUDA

int main(void)
{
    printf("cuda_observer_dev: skipped: ptq was built without CUDA\n");
    return PTQ_TEST_SKIP;
}

#else

enum {
    BATCH_MAX = 1 << 20, /* largest batch below */
    OVERFLOW_CAP = 65536 /* kernels/cuda/observe.cu's overflow buffer */
};

typedef enum fill_kind {
    FILL_ZEROS,     /* +0 and -0 alternating */
    FILL_UNIFORM,   /* uniform in [-amax, amax) */
    FILL_SPECIALS,  /* test_fill_specials(amax, special) */
    FILL_NONFINITE, /* NaN, +Inf, -Inf */
    FILL_CONST,     /* +/-amax alternating */
    FILL_SCALED     /* one uniform value per batch of 1, times 2^k for a random k */
} fill_kind;

typedef struct batch {
    int64_t n;
    fill_kind kind;
    float amax;
    float special; /* FILL_SPECIALS' rate */
} batch;

static void fill(float *x, const batch *b)
{
    switch (b->kind) {
    case FILL_ZEROS:
        for (int64_t i = 0; i < b->n; i++)
            x[i] = i % 2 ? -0.0f : 0.0f;
        break;
    case FILL_UNIFORM:
        test_fill_uniform(x, b->n, -b->amax, b->amax);
        break;
    case FILL_SPECIALS:
        test_fill_specials(x, b->n, b->amax, b->special);
        break;
    case FILL_NONFINITE:
        for (int64_t i = 0; i < b->n; i++)
            x[i] = i % 3 == 0 ? NAN : i % 3 == 1 ? INFINITY : -INFINITY;
        break;
    case FILL_CONST:
        for (int64_t i = 0; i < b->n; i++)
            x[i] = i % 2 ? -b->amax : b->amax;
        break;
    case FILL_SCALED:
        for (int64_t i = 0; i < b->n; i++) {
            const int k = (int)test_rand_uniform(-149.0f, 127.0f);
            x[i] = ldexpf(test_rand_uniform(-1.0f, 1.0f), k);
        }
        break;
    }
}

typedef struct sequence {
    const char *name;
    int n_batches;
    batch b[48];
    int compare_every; /* compare after every compare_every-th batch (and the last) */
} sequence;

static int n_compared, n_differ;

/* One check per part: stats, range, histogram. */
static void compare(const char *what, const ptq_observer *cpu, const ptq_observer *dev)
{
    ptq_observer_stats a, b;
    ptq_observer_get_stats(cpu, &a);
    ptq_observer_get_stats(dev, &b);
    const int same_stats = a.count == b.count && a.n_zero == b.n_zero && a.n_nan == b.n_nan && a.n_inf == b.n_inf &&
                           a.n_binned == b.n_binned && memcmp(&a.min, &b.min, sizeof a.min) == 0 &&
                           memcmp(&a.max, &b.max, sizeof a.max) == 0;
    CHECK_MSG(same_stats,
              "%s: cpu count %lld zero %lld nan %lld inf %lld min %a max %a; dev count %lld zero %lld nan %lld inf "
              "%lld min %a max %a",
              what, (long long)a.count, (long long)a.n_zero, (long long)a.n_nan, (long long)a.n_inf, a.min, a.max,
              (long long)b.count, (long long)b.n_zero, (long long)b.n_nan, (long long)b.n_inf, b.min, b.max);
    const int same_range = ptq_observer_exponent(cpu) == ptq_observer_exponent(dev) &&
                           ptq_observer_range_max(cpu) == ptq_observer_range_max(dev);
    CHECK_MSG(same_range, "%s: cpu e %d, dev e %d", what, ptq_observer_exponent(cpu), ptq_observer_exponent(dev));
    const int64_t n_bins = ptq_observer_n_bins(cpu);
    const int64_t *hc = ptq_observer_hist(cpu), *hd = ptq_observer_hist(dev);
    int64_t first = -1;
    for (int64_t i = 0; i < n_bins && first < 0; i++)
        if (hc[i] != hd[i])
            first = i;
    CHECK_MSG(first < 0, "%s: bin %lld: cpu %lld, dev %lld", what, (long long)first,
              (long long)(first < 0 ? 0 : hc[first]), (long long)(first < 0 ? 0 : hd[first]));
    n_compared++;
    n_differ += !(same_stats && same_range && first < 0);
}

static double now_s(void)
{
    struct timespec t;
    timespec_get(&t, TIME_UTC);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Feeds seq to a device and a CPU observer of n_bins; returns the batches fed. */
static int run_sequence(ptq_ctx *ctx, ptq_cuda_dev *dev, const sequence *seq, int64_t n_bins, float *x,
                        float *x_dev)
{
    ptq_observer *cpu = NULL, *got = NULL;
    ptq_observer_dev *od = NULL;
    if (ptq_observer_init(ctx, n_bins, &cpu) != PTQ_OK || ptq_observer_init(ctx, n_bins, &got) != PTQ_OK ||
        ptq_observer_dev_init(ctx, dev, n_bins, &od) != PTQ_OK) {
        CHECK_MSG(0, "%s bins %lld: init: %s", seq->name, (long long)n_bins, ctx->msg);
        ptq_observer_free(cpu);
        ptq_observer_free(got);
        ptq_observer_dev_free(od);
        return 0;
    }
    for (int k = 0; k < seq->n_batches; k++) {
        const batch *b = &seq->b[k];
        fill(x, b);
        CHECK(ptq_cuda_upload(ctx, dev, x_dev, x, sizeof *x * (size_t)b->n) == PTQ_OK);
        CHECK(ptq_observer_update(ctx, cpu, x, b->n) == PTQ_OK);
        const ptq_status st = ptq_observer_dev_update(ctx, od, x_dev, b->n);
        CHECK_MSG(st == PTQ_OK, "%s: dev update: %s", seq->name, ctx->msg);
        if ((k + 1) % seq->compare_every == 0 || k + 1 == seq->n_batches) {
            const ptq_status rd = ptq_observer_dev_read(ctx, od, got);
            CHECK_MSG(rd == PTQ_OK, "%s: dev read: %s", seq->name, ctx->msg);
            char what[128];
            snprintf(what, sizeof what, "%s, %lld bins, after batch %d (n %lld)", seq->name, (long long)n_bins, k,
                     (long long)b->n);
            compare(what, cpu, got);
        }
    }
    ptq_observer_free(cpu);
    ptq_observer_free(got);
    ptq_observer_dev_free(od);
    return seq->n_batches;
}

/* Batches of random sizes whose scale wanders up (mostly) and down. */
static void make_random(sequence *s)
{
    static const int64_t sizes[] = {1, 3, 255, 4097, 65537, 70001, 300001};
    s->name = "random walk";
    s->n_batches = 40;
    s->compare_every = 1;
    float amax = 1e-3f;
    for (int k = 0; k < s->n_batches; k++) {
        const int step = (int)test_rand_uniform(-4.0f, 13.0f);
        amax = ldexpf(amax, step);
        amax = fminf(fmaxf(amax, 1e-40f), 3e38f);
        s->b[k] = (batch){sizes[(int)test_rand_uniform(0.0f, 7.0f)], FILL_SPECIALS, amax, 0.02f};
    }
}

/* Error paths: bad bin counts, bad batches, a destination of another size. */
static void check_args(ptq_ctx *ctx, ptq_cuda_dev *dev)
{
    ptq_observer_dev *od = NULL;
    CHECK(ptq_observer_dev_init(ctx, dev, 3000, &od) == PTQ_ERR_INVALID_ARG && od == NULL);
    CHECK(ptq_observer_dev_init(ctx, dev, 1024, &od) == PTQ_ERR_INVALID_ARG && od == NULL);
    CHECK(ptq_observer_dev_init(ctx, NULL, 4096, &od) == PTQ_ERR_INVALID_ARG && od == NULL);
    if (ptq_observer_dev_init(ctx, dev, 0, &od) != PTQ_OK) {
        CHECK_MSG(0, "init with the default bins: %s", ctx->msg);
        return;
    }
    ptq_observer *other = NULL;
    CHECK(ptq_observer_dev_update(ctx, od, NULL, 5) == PTQ_ERR_INVALID_ARG);
    CHECK(ptq_observer_dev_update(ctx, od, NULL, 0) == PTQ_OK);
    if (ptq_observer_init(ctx, 8192, &other) == PTQ_OK) {
        CHECK(ptq_observer_dev_read(ctx, od, other) == PTQ_ERR_INVALID_ARG);
        ptq_observer_stats s;
        ptq_observer_get_stats(other, &s);
        CHECK(s.count == 0);
    }
    ptq_observer_free(other);
    ptq_observer_dev_free(od);
    ptq_observer_dev_free(NULL);
}

/* One large tensor observed repeatedly after its range is set (one read per
 * update), against the CPU state merged as often; prints the time per update
 * beside the two-pass, host-synced kernels. */
static void check_steady(ptq_ctx *ctx, ptq_cuda_dev *dev)
{
    const int64_t n = 1 << 24;
    const int reps = 20;
    float *x = malloc(sizeof *x * (size_t)n);
    void *x_dev = NULL, *hist_dev = NULL;
    ptq_observer *one = NULL, *cpu = NULL, *got = NULL;
    ptq_observer_dev *od = NULL;
    if (!x || ptq_cuda_alloc(ctx, dev, sizeof *x * (size_t)n, &x_dev) != PTQ_OK ||
        ptq_cuda_alloc(ctx, dev, sizeof(unsigned long long) * 4096, &hist_dev) != PTQ_OK ||
        ptq_observer_init(ctx, 4096, &one) != PTQ_OK || ptq_observer_init(ctx, 4096, &cpu) != PTQ_OK ||
        ptq_observer_init(ctx, 4096, &got) != PTQ_OK || ptq_observer_dev_init(ctx, dev, 4096, &od) != PTQ_OK) {
        CHECK_MSG(0, "steady case setup: %s", ctx->msg);
        goto done;
    }
    test_fill_specials(x, n, 4.0f, 0.01f);
    CHECK(ptq_cuda_upload(ctx, dev, x_dev, x, sizeof *x * (size_t)n) == PTQ_OK);
    CHECK(ptq_observer_update(ctx, one, x, n) == PTQ_OK);
    CHECK_MSG(ptq_observer_dev_update(ctx, od, x_dev, n) == PTQ_OK, "steady update: %s", ctx->msg);
    CHECK_MSG(ptq_cuda_sync(ctx, dev) == PTQ_OK, "steady sync: %s", ctx->msg);
    double t0 = now_s();
    for (int r = 0; r < reps; r++)
        CHECK_MSG(ptq_observer_dev_update(ctx, od, x_dev, n) == PTQ_OK, "steady update: %s", ctx->msg);
    CHECK_MSG(ptq_cuda_sync(ctx, dev) == PTQ_OK, "steady sync: %s", ctx->msg);
    const double fused_s = (now_s() - t0) / reps;
    const double scale = ldexp(1.0, 12 - ptq_observer_exponent(one)); /* 4096 bins over one's range */
    t0 = now_s();
    for (int r = 0; r < reps; r++) {
        ptq_observe_stats s;
        CHECK_MSG(ptq_k_observe_stats_cuda(ctx, dev, x_dev, n, &s) == PTQ_OK, "stats pass: %s", ctx->msg);
        CHECK_MSG(ptq_k_observe_hist_cuda(ctx, dev, x_dev, n, scale, 4096, hist_dev) == PTQ_OK, "hist pass: %s",
                  ctx->msg);
    }
    CHECK_MSG(ptq_cuda_sync(ctx, dev) == PTQ_OK, "two-pass sync: %s", ctx->msg);
    const double two_pass_s = (now_s() - t0) / reps;
    for (int r = 0; r <= reps; r++)
        CHECK(ptq_observer_merge(ctx, cpu, one) == PTQ_OK);
    CHECK_MSG(ptq_observer_dev_read(ctx, od, got) == PTQ_OK, "steady read: %s", ctx->msg);
    compare("steady, 2^24 values x 21", cpu, got);
    printf("cuda_observer_dev: 2^24 floats per update: device observer %.3f ms (%.0f GB/s); stats + hist passes "
           "%.3f ms\n",
           1e3 * fused_s, 4.0 * (double)n / fused_s * 1e-9, 1e3 * two_pass_s);
done:
    ptq_observer_dev_free(od);
    ptq_observer_free(one);
    ptq_observer_free(cpu);
    ptq_observer_free(got);
    ptq_cuda_release(dev, x_dev);
    ptq_cuda_release(dev, hist_dev);
    free(x);
}

/* Both NaN, or the same bits (NaN payloads of a sum differ between GPU and CPU). */
static int same_float(float a, float b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

/* The observed chain (ptq_k_observe_chain_cuda): y = relu?(c + z) written
 * and observers of c, c + z and y fed from one read, against CPU observers
 * fed the values computed here: with and without the Add (either operand
 * order) and the Relu, with c's observer left out, at 16-byte aligned and
 * unaligned addresses, odd sizes, first batches past the overflow buffer
 * (rescue, re-made from c and z), growing ranges (settle) and specials;
 * y bit for bit. Then one steady chain pass over 2^24 values timed against
 * three observer updates. */
/* Device observer od (NULL: none) read back and compared with cpu (what names them); both freed. */
static void compare_dev(ptq_ctx *ctx, const char *what, ptq_observer *cpu, ptq_observer_dev *od, int64_t n_bins)
{
    ptq_observer *back = NULL;
    if (od && ptq_observer_init(ctx, n_bins, &back) == PTQ_OK) {
        CHECK_MSG(ptq_observer_dev_read(ctx, od, back) == PTQ_OK, "%s: read: %s", what, ctx->msg);
        compare(what, cpu, back);
    }
    ptq_observer_free(back);
    ptq_observer_free(cpu);
    ptq_observer_dev_free(od);
}

/* The fused passes' batches: rescue, settle, specials. */
static const batch chain_seq[] = {
    {70001, FILL_SPECIALS, 2.0f, 0.05f},  /* first batch past the buffer: rescue */
    {4099, FILL_UNIFORM, 3.0f, 0},        /* some reach 2^1: settle */
    {1, FILL_UNIFORM, 0.5f, 0},
    {300001, FILL_SPECIALS, 1e4f, 0.02f}, /* far past the range: rescue */
    {257, FILL_NONFINITE, 0, 0},
    {100003, FILL_SPECIALS, 6e3f, 0.3f},  /* within the range: one read */
};
enum { CHAIN_SEQ = sizeof chain_seq / sizeof chain_seq[0], CHAIN_N_MAX = 300001 };

static void check_chain(ptq_ctx *ctx, ptq_cuda_dev *dev)
{
    static const int64_t bins[] = {2048, 4096, 8192, 16384};
    const batch *seq = chain_seq;
    const int64_t n_max = CHAIN_N_MAX;
    float *c = malloc(sizeof *c * (size_t)n_max), *z = malloc(sizeof *z * (size_t)n_max);
    float *a = malloc(sizeof *a * (size_t)n_max), *y = malloc(sizeof *y * (size_t)n_max);
    float *got = malloc(sizeof *got * (size_t)n_max);
    void *c_dev = NULL, *z_dev = NULL, *y_dev = NULL;
    const size_t dev_bytes = sizeof(float) * (size_t)(n_max + 4);
    if (!c || !z || !a || !y || !got || ptq_cuda_alloc(ctx, dev, dev_bytes, &c_dev) != PTQ_OK ||
        ptq_cuda_alloc(ctx, dev, dev_bytes, &z_dev) != PTQ_OK || ptq_cuda_alloc(ctx, dev, dev_bytes, &y_dev) != PTQ_OK) {
        CHECK_MSG(0, "chain setup: %s", ctx->msg);
        goto done;
    }
    int n_cases = 0, y_differ = 0, compared_before = n_compared, differ_before = n_differ;
    for (size_t bi = 0; bi < sizeof bins / sizeof bins[0]; bi++)
        for (int mode = 0; mode < 12; mode++) {
            const int has_z = mode % 3 != 0, z_first = mode % 3 == 2, relu = (mode / 3) % 2, skip_c = mode / 6;
            const int off = (int)((mode + bi) % 2); /* 0: 16-byte aligned; 1: one float past */
            const int used[3] = {!skip_c, has_z, relu};
            ptq_observer *cpu[3] = {NULL, NULL, NULL};
            ptq_observer_dev *od[3] = {NULL, NULL, NULL};
            void *states[3] = {NULL, NULL, NULL};
            for (int i = 0; i < 3; i++)
                if (used[i]) {
                    CHECK(ptq_observer_init(ctx, bins[bi], &cpu[i]) == PTQ_OK);
                    CHECK(ptq_observer_dev_init(ctx, dev, bins[bi], &od[i]) == PTQ_OK);
                    states[i] = od[i] ? ptq_observer_dev_state(od[i]) : NULL;
                }
            test_rand_seed(77 + (unsigned)mode);
            for (size_t k = 0; k < CHAIN_SEQ; k++) {
                const int64_t n = seq[k].n;
                fill(c, &seq[k]);
                fill(z, &seq[k]);
                for (int64_t i = 0; i < n; i++) {
                    a[i] = !has_z ? c[i] : z_first ? z[i] + c[i] : c[i] + z[i];
                    y[i] = relu && a[i] < 0.0f ? 0.0f : a[i];
                }
                float *cd = (float *)c_dev + off, *zd = (float *)z_dev + off, *yd = (float *)y_dev + off;
                CHECK(ptq_cuda_upload(ctx, dev, cd, c, sizeof *c * (size_t)n) == PTQ_OK);
                CHECK(ptq_cuda_upload(ctx, dev, zd, z, sizeof *z * (size_t)n) == PTQ_OK);
                CHECK_MSG(ptq_k_observe_chain_cuda(ctx, dev, states, bins[bi], cd, has_z ? zd : NULL, z_first, relu,
                                                   yd, n) == PTQ_OK,
                          "chain pass: %s", ctx->msg);
                CHECK(ptq_cuda_download(ctx, dev, got, yd, sizeof *got * (size_t)n) == PTQ_OK);
                int64_t bad = -1;
                for (int64_t i = 0; i < n && bad < 0; i++)
                    if (!same_float(got[i], y[i]))
                        bad = i;
                CHECK_MSG(bad < 0, "chain mode %d, %lld bins, batch %zu: y[%lld] %a, want %a", mode,
                          (long long)bins[bi], k, (long long)bad, bad < 0 ? 0.0 : got[bad], bad < 0 ? 0.0 : y[bad]);
                y_differ += bad >= 0;
                const float *vals[3] = {c, a, y};
                for (int i = 0; i < 3; i++)
                    if (cpu[i])
                        CHECK(ptq_observer_update(ctx, cpu[i], vals[i], n) == PTQ_OK);
            }
            static const char *const names[3] = {"c", "c + z", "y"};
            for (int i = 0; i < 3; i++) {
                char what[128];
                snprintf(what, sizeof what, "chain (Add %s, Relu %s, offset %d), %lld bins, observer of %s",
                         has_z ? (z_first ? "z + c" : "c + z") : "none", relu ? "yes" : "no", off,
                         (long long)bins[bi], names[i]);
                compare_dev(ctx, what, cpu[i], od[i], bins[bi]);
            }
            n_cases++;
        }
    printf("cuda_observer_dev: chain: %d cases, %d observer states compared, %d differ, %d outputs differ (all must "
           "be 0)\n",
           n_cases, n_compared - compared_before, n_differ - differ_before, y_differ);
done:
    free(c);
    free(z);
    free(a);
    free(y);
    free(got);
    ptq_cuda_release(dev, c_dev);
    ptq_cuda_release(dev, z_dev);
    ptq_cuda_release(dev, y_dev);
}

/* Whether device y: [n] holds want's bits (NaNs alike); names the first that differs. */
static int same_output(ptq_ctx *ctx, ptq_cuda_dev *dev, const char *what, const void *y_dev, const float *want,
                       float *got, int64_t n)
{
    CHECK(ptq_cuda_download(ctx, dev, got, y_dev, sizeof *got * (size_t)n) == PTQ_OK);
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++)
        if (!same_float(got[i], want[i]))
            bad = i;
    CHECK_MSG(bad < 0, "%s: [%lld] %a, want %a", what, (long long)bad, bad < 0 ? 0.0 : got[bad],
              bad < 0 ? 0.0 : want[bad]);
    return bad < 0;
}

/* The transformer passes against CPU observers fed the values computed here (the Erf's by its node's kernel on the
 * GPU, ptq_k_unary_cuda): the bias pass (ptq_k_observe_bias_cuda: y = c + a row of cols values, either operand
 * order; rows of 768, whole float4s, and of 30, not) and the exact GELU's two passes (ptq_k_observe_gelu_cuda; all
 * five observers, or d's and m's left out), at 16-byte aligned and unaligned addresses, through the chain's batches
 * (rescue, settle, specials), with 2048 bins (shared counts) and 16384 (the f64 form); the outputs bit for bit. */
static void check_transformer(ptq_ctx *ctx, ptq_cuda_dev *dev)
{
    static const int64_t bins[] = {2048, 16384};
    const float c_div = 1.41421354f, c_add = 1.0f, c_mul = 0.5f;
    const int64_t n_max = CHAIN_N_MAX + 768;
    float *x = malloc(sizeof *x * (size_t)n_max), *row = malloc(sizeof *row * 768), *got = malloc(sizeof *got *
                                                                                                     (size_t)n_max);
    float *v[5];
    for (int i = 0; i < 5; i++)
        v[i] = malloc(sizeof *v[i] * (size_t)n_max);
    void *x_dev = NULL, *row_dev = NULL, *a_dev = NULL, *y_dev = NULL;
    const size_t dev_bytes = sizeof(float) * (size_t)(n_max + 4);
    if (!x || !row || !got || !v[0] || !v[1] || !v[2] || !v[3] || !v[4] ||
        ptq_cuda_alloc(ctx, dev, dev_bytes, &x_dev) != PTQ_OK ||
        ptq_cuda_alloc(ctx, dev, sizeof(float) * 772, &row_dev) != PTQ_OK ||
        ptq_cuda_alloc(ctx, dev, dev_bytes, &a_dev) != PTQ_OK || ptq_cuda_alloc(ctx, dev, dev_bytes, &y_dev) != PTQ_OK) {
        CHECK_MSG(0, "transformer setup: %s", ctx->msg);
        goto done;
    }
    int n_cases = 0, y_differ = 0, compared_before = n_compared, differ_before = n_differ;
    for (size_t bi = 0; bi < sizeof bins / sizeof bins[0]; bi++)
        for (int mode = 0; mode < 6; mode++) {
            const int gelu = mode >= 3, off = mode % 2, bias_first = mode == 1;
            const int64_t cols = mode == 2 ? 30 : 768;
            const int n_obs = gelu ? 5 : 2;
            const int used[5] = {!(gelu && mode == 5), 1, 1, !(gelu && mode == 5), 1};
            ptq_observer *cpu[5] = {NULL, NULL, NULL, NULL, NULL};
            ptq_observer_dev *od[5] = {NULL, NULL, NULL, NULL, NULL};
            void *states[5] = {NULL, NULL, NULL, NULL, NULL};
            for (int i = 0; i < n_obs; i++)
                if (used[i]) {
                    CHECK(ptq_observer_init(ctx, bins[bi], &cpu[i]) == PTQ_OK);
                    CHECK(ptq_observer_dev_init(ctx, dev, bins[bi], &od[i]) == PTQ_OK);
                    states[i] = od[i] ? ptq_observer_dev_state(od[i]) : NULL;
                }
            test_rand_seed(91 + (unsigned)mode);
            for (size_t k = 0; k < CHAIN_SEQ; k++) {
                batch b = chain_seq[k];
                if (!gelu) /* whole rows */
                    b.n = b.n < cols ? cols : b.n / cols * cols;
                const int64_t n = b.n;
                fill(x, &b);
                float *xd = (float *)x_dev + off, *ad = (float *)a_dev + off, *yd = (float *)y_dev + off;
                CHECK(ptq_cuda_upload(ctx, dev, xd, x, sizeof *x * (size_t)n) == PTQ_OK);
                char what[160];
                if (!gelu) {
                    batch rb = {cols, FILL_UNIFORM, b.amax > 0.0f ? b.amax : 1.0f, 0};
                    fill(row, &rb);
                    CHECK(ptq_cuda_upload(ctx, dev, row_dev, row, sizeof *row * (size_t)cols) == PTQ_OK);
                    for (int64_t i = 0; i < n; i++) {
                        v[0][i] = x[i];
                        v[1][i] = bias_first ? row[i % cols] + x[i] : x[i] + row[i % cols];
                    }
                    CHECK_MSG(ptq_k_observe_bias_cuda(ctx, dev, states, bins[bi], xd, row_dev, cols, bias_first, yd,
                                                      n) == PTQ_OK, "bias pass: %s", ctx->msg);
                    snprintf(what, sizeof what, "bias pass (cols %lld, %s, offset %d), %lld bins, batch %zu, y",
                             (long long)cols, bias_first ? "bias + c" : "c + bias", off, (long long)bins[bi], k);
                    y_differ += !same_output(ctx, dev, what, yd, v[1], got, n);
                } else {
                    for (int64_t i = 0; i < n; i++)
                        v[0][i] = x[i] / c_div;
                    /* e: the Erf node's kernel on d (y_dev as scratch, before the pass writes it) */
                    CHECK(ptq_cuda_upload(ctx, dev, yd, v[0], sizeof *v[0] * (size_t)n) == PTQ_OK);
                    CHECK(ptq_k_unary_cuda(ctx, dev, PTQ_UN_ERF, 0.0f, 0.0f, n, yd, ad) == PTQ_OK);
                    CHECK(ptq_cuda_download(ctx, dev, v[1], ad, sizeof *v[1] * (size_t)n) == PTQ_OK);
                    for (int64_t i = 0; i < n; i++) {
                        v[2][i] = v[1][i] + c_add;
                        v[3][i] = x[i] * v[2][i];
                        v[4][i] = v[3][i] * c_mul;
                    }
                    CHECK_MSG(ptq_k_observe_gelu_cuda(ctx, dev, states, bins[bi], xd, ad, yd, n, c_div, c_add,
                                                      c_mul) == PTQ_OK, "GELU passes: %s", ctx->msg);
                    snprintf(what, sizeof what, "GELU passes (offset %d, mode %d), %lld bins, batch %zu, a", off, mode,
                             (long long)bins[bi], k);
                    y_differ += !same_output(ctx, dev, what, ad, v[2], got, n);
                    what[strlen(what) - 1] = 'y';
                    y_differ += !same_output(ctx, dev, what, yd, v[4], got, n);
                }
                for (int i = 0; i < n_obs; i++)
                    if (cpu[i])
                        CHECK(ptq_observer_update(ctx, cpu[i], v[i], n) == PTQ_OK);
            }
            static const char *const bias_names[2] = {"c", "c + bias"}, *const gelu_names[5] = {"d", "e", "a", "m",
                                                                                                    "y"};
            for (int i = 0; i < n_obs; i++) {
                char what[128];
                snprintf(what, sizeof what, "%s (mode %d, offset %d), %lld bins, observer of %s",
                         gelu ? "GELU passes" : "bias pass", mode, off, (long long)bins[bi],
                         gelu ? gelu_names[i] : bias_names[i]);
                compare_dev(ctx, what, cpu[i], od[i], bins[bi]);
            }
            n_cases++;
        }
    printf("cuda_observer_dev: bias and GELU passes: %d cases, %d observer states compared, %d differ, %d outputs "
           "differ (all must be 0)\n",
           n_cases, n_compared - compared_before, n_differ - differ_before, y_differ);
done:
    free(x);
    free(row);
    free(got);
    for (int i = 0; i < 5; i++)
        free(v[i]);
    ptq_cuda_release(dev, x_dev);
    ptq_cuda_release(dev, row_dev);
    ptq_cuda_release(dev, a_dev);
    ptq_cuda_release(dev, y_dev);
}

/* A Conv -> Add -> Relu chain's observers in steady state (ranges set):
 * one chain pass against three observer updates of the same tensors (the
 * Add and Relu passes not counted). */
static void time_chain(ptq_ctx *ctx, ptq_cuda_dev *dev)
{
    const int64_t n = 1 << 24;
    const int reps = 20;
    float *x = malloc(sizeof *x * (size_t)n);
    void *c_dev = NULL, *z_dev = NULL, *y_dev = NULL, *states[3] = {NULL, NULL, NULL};
    ptq_observer_dev *od[3] = {NULL, NULL, NULL};
    int ok = x && ptq_cuda_alloc(ctx, dev, sizeof *x * (size_t)n, &c_dev) == PTQ_OK &&
             ptq_cuda_alloc(ctx, dev, sizeof *x * (size_t)n, &z_dev) == PTQ_OK &&
             ptq_cuda_alloc(ctx, dev, sizeof *x * (size_t)n, &y_dev) == PTQ_OK;
    for (int i = 0; i < 3 && ok; i++) {
        ok = ptq_observer_dev_init(ctx, dev, 4096, &od[i]) == PTQ_OK;
        states[i] = ok ? ptq_observer_dev_state(od[i]) : NULL;
    }
    if (!ok) {
        CHECK_MSG(0, "chain timing setup: %s", ctx->msg);
        goto done;
    }
    test_fill_uniform(x, n, -4.0f, 4.0f);
    CHECK(ptq_cuda_upload(ctx, dev, c_dev, x, sizeof *x * (size_t)n) == PTQ_OK);
    test_fill_uniform(x, n, -4.0f, 4.0f);
    CHECK(ptq_cuda_upload(ctx, dev, z_dev, x, sizeof *x * (size_t)n) == PTQ_OK);
    CHECK(ptq_k_observe_chain_cuda(ctx, dev, states, 4096, c_dev, z_dev, 0, 1, y_dev, n) == PTQ_OK);
    CHECK(ptq_cuda_sync(ctx, dev) == PTQ_OK);
    double t0 = now_s();
    for (int r = 0; r < reps; r++)
        CHECK(ptq_k_observe_chain_cuda(ctx, dev, states, 4096, c_dev, z_dev, 0, 1, y_dev, n) == PTQ_OK);
    CHECK(ptq_cuda_sync(ctx, dev) == PTQ_OK);
    const double chain_s = (now_s() - t0) / reps;
    t0 = now_s();
    for (int r = 0; r < reps; r++) {
        CHECK(ptq_observer_dev_update(ctx, od[0], c_dev, n) == PTQ_OK);
        CHECK(ptq_observer_dev_update(ctx, od[1], z_dev, n) == PTQ_OK);
        CHECK(ptq_observer_dev_update(ctx, od[2], y_dev, n) == PTQ_OK);
    }
    CHECK(ptq_cuda_sync(ctx, dev) == PTQ_OK);
    const double apart_s = (now_s() - t0) / reps;
    printf("cuda_observer_dev: Conv->Add->Relu chain over 2^24 values, 3 observers: one chain pass %.3f ms (Add and "
           "Relu included); three observer updates %.3f ms\n",
           1e3 * chain_s, 1e3 * apart_s);
done:
    for (int i = 0; i < 3; i++)
        ptq_observer_dev_free(od[i]);
    ptq_cuda_release(dev, c_dev);
    ptq_cuda_release(dev, z_dev);
    ptq_cuda_release(dev, y_dev);
    free(x);
}

int main(void)
{
    char why[256];
    if (!ptq_cuda_available(why, sizeof why)) {
        printf("cuda_observer_dev: skipped: %s\n", why);
        return PTQ_TEST_SKIP;
    }
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_cuda_dev *dev = NULL;
    if (ptq_cuda_dev_create(&ctx, 0, &dev) != PTQ_OK) {
        fprintf(stderr, "cuda_observer_dev: %s\n", ctx.msg);
        return 1;
    }
    float *x = malloc(sizeof *x * BATCH_MAX);
    void *x_dev = NULL;
    if (!x || ptq_cuda_alloc(&ctx, dev, sizeof *x * BATCH_MAX, &x_dev) != PTQ_OK) {
        fprintf(stderr, "cuda_observer_dev: out of memory (%s)\n", ctx.msg);
        return 1;
    }
    test_rand_seed(20240611);
    static sequence seqs[8] = {
        {"zeros first, small then huge growth", 9, {
            {1000, FILL_ZEROS, 0, 0},
            {1, FILL_UNIFORM, 0.5f, 0},
            {4097, FILL_SPECIALS, 1.0f, 0.01f},
            {65537, FILL_UNIFORM, 3.0f, 0},             /* a third reach 2^1: settle */
            {BATCH_MAX, FILL_SPECIALS, 1e30f, 0.01f},   /* ~all reach it: rescue */
            {333, FILL_UNIFORM, 1e-39f, 0},             /* subnormals */
            {17, FILL_NONFINITE, 0, 0},
            {255, FILL_SPECIALS, 3e38f, 0.3f},          /* -FLT_MAX, 2^128 */
            {4097, FILL_ZEROS, 0, 0},
        }, 1},
        {"large first batch, doubling", 7, {
            {BATCH_MAX, FILL_SPECIALS, 6.0f, 0.3f},     /* first batch past the buffer: rescue */
            {100003, FILL_UNIFORM, 12.0f, 0},           /* half reach 2^3: settle */
            {300001, FILL_UNIFORM, 24.0f, 0},           /* half reach 2^4, past the buffer: rescue */
            {1, FILL_UNIFORM, 1e-3f, 0},
            {3, FILL_CONST, 40.0f, 0},
            {BATCH_MAX, FILL_SPECIALS, 50.0f, 0.05f},   /* no growth: one read */
            {4097, FILL_CONST, 64.0f, 0},               /* exactly 2^6: grows by one */
        }, 1},
        {"subnormal start, jump to FLT_MAX", 7, {
            {4097, FILL_UNIFORM, 1e-40f, 0},
            {3, FILL_UNIFORM, 1e-39f, 0},
            {1, FILL_CONST, 1.4e-45f, 0},               /* the smallest subnormal */
            {1000, FILL_UNIFORM, 1e-30f, 0},
            {1000, FILL_UNIFORM, 1e30f, 0},             /* k beyond log2(bins), settle: all to bin 0 */
            {100000, FILL_SPECIALS, 3e38f, 0.3f},       /* k small, past the buffer: rescue */
            {7, FILL_CONST, FLT_MAX, 0},
        }, 1},
        {"buffer edge", 5, {
            {1, FILL_CONST, 0.5f, 0},                   /* e = 0 */
            {OVERFLOW_CAP, FILL_CONST, 1.5f, 0},        /* exactly fills the buffer: settle */
            {OVERFLOW_CAP + 1, FILL_CONST, 3.5f, 0},    /* one past: rescue */
            {OVERFLOW_CAP - 1, FILL_CONST, 7.5f, 0},
            {OVERFLOW_CAP + 2, FILL_ZEROS, 0, 0},
        }, 1},
        {"shrinking", 5, {
            {65537, FILL_UNIFORM, 1e6f, 0},
            {4097, FILL_UNIFORM, 1.0f, 0},
            {1, FILL_UNIFORM, 1e-20f, 0},
            {200000, FILL_SPECIALS, 1e5f, 0.05f},
            {255, FILL_SPECIALS, 1e-38f, 0.5f},
        }, 1},
        {"nonfinite first", 4, {
            {17, FILL_NONFINITE, 0, 0},
            {5, FILL_ZEROS, 0, 0},
            {OVERFLOW_CAP + 100, FILL_SPECIALS, 2.0f, 0.2f},
            {1, FILL_NONFINITE, 0, 0},
        }, 1},
        {"one at a time", 0, {{0, FILL_SCALED, 0, 0}}, 0},
        {"random walk", 0, {{0, FILL_ZEROS, 0, 0}}, 0},
    };
    /* "one at a time": 48 batches of one value each at wildly varying scales (frequent settles) */
    seqs[6].n_batches = 48;
    seqs[6].compare_every = 8;
    for (int k = 0; k < 48; k++)
        seqs[6].b[k] = (batch){1, FILL_SCALED, 0, 0};
    make_random(&seqs[7]);

    check_args(&ctx, dev);
    static const int64_t bin_counts[] = {2048, 4096, 8192, 16384, 1 << 20};
    int n_cases = 0, n_batches = 0;
    for (size_t bc = 0; bc < sizeof bin_counts / sizeof bin_counts[0]; bc++)
        for (size_t s = 0; s < sizeof seqs / sizeof seqs[0]; s++) {
            test_rand_seed(1000 + s); /* the same values for every bin count */
            n_batches += run_sequence(&ctx, dev, &seqs[s], bin_counts[bc], x, x_dev);
            n_cases++;
        }
    check_steady(&ctx, dev);
    n_cases++;
    check_chain(&ctx, dev);
    check_transformer(&ctx, dev);
    time_chain(&ctx, dev);
    printf("cuda_observer_dev: GPU %s: %d cases (%d batches), %d states compared, %d differ (must be 0)\n",
           ptq_cuda_dev_name(dev), n_cases, n_batches, n_compared, n_differ);
    ptq_cuda_release(dev, x_dev);
    ptq_cuda_dev_free(dev);
    free(x);
    return test_done("cuda_observer_dev");
}

#endif
