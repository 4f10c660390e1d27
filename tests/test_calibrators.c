/* Calibrators (calib/) on hand-made histograms with known answers, for INT8
 * and FP8: minmax, entropy, percentile (interpolation, zeros, Inf, bad p),
 * mse (uniform vs heavy tail, the FP8 code walk vs per-value conversion),
 * degenerate and no-finite inputs, batch-split invariance, and the FP8
 * conversion edge cases (kernels/ref/fp8.c). `test_calibrators --kl FILE`
 * and `--sum FILE` are the drivers of the numpy oracle tests/calibrators_test.py. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calibrator_internal.h"
#include "kernels/kernels.h"
#include "ptq/calibrator.h"
#include "testlib.h"

#define N_BINS 2048 /* e = 11 makes the bin width 1 */
#define E_UNIT 11

static void *alloc_or_die(size_t n_bytes)
{
    void *p = calloc(1, n_bytes ? n_bytes : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static ptq_observer *make(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_observer *o = NULL;
    if (ptq_observer_init(&ctx, N_BINS, &o) != PTQ_OK) {
        fprintf(stderr, "observer init: %s\n", ctx.msg);
        exit(1);
    }
    return o;
}

/* An observer of N_BINS bins of width 1 holding hist ([N_BINS]); max|x| = top. */
static ptq_observer *make_state(const int64_t *hist, int64_t n_zero, int64_t n_nan, int64_t n_inf, float top)
{
    ptq_observer *o = make();
    ptq_observer_stats st = {0};
    for (int64_t k = 0; k < N_BINS; k++)
        st.n_binned += hist[k];
    st.n_zero = n_zero;
    st.n_nan = n_nan;
    st.n_inf = n_inf;
    st.count = st.n_binned + n_zero + n_nan + n_inf;
    const int finite = st.n_binned + n_zero > 0;
    st.min = finite ? (n_zero ? 0.0f : 0.25f) : INFINITY;
    st.max = finite ? top : -INFINITY;
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    if (ptq_observer_set_state(&ctx, o, &st, st.n_binned ? E_UNIT : 0, hist) != PTQ_OK) {
        fprintf(stderr, "set_state: %s\n", ctx.msg);
        exit(1);
    }
    return o;
}

static ptq_calib_range calib(const ptq_observer *o, ptq_calib_method m, ptq_qformat f, double pct)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_calib_params p = {.method = m, .format = f, .percentile = pct};
    ptq_calib_range r;
    ptq_status st = ptq_calib_compute(&ctx, &p, o, &r);
    CHECK_MSG(st == PTQ_OK, "%s/%s: %s", ptq_calib_method_name(m), ptq_qformat_name(f), ctx.msg);
    return r;
}

static int near(double got, double want, double tol)
{
    return fabs(got - want) <= tol * fmax(1.0, fabs(want));
}

static void check_names(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_calib_method m;
    ptq_qformat f;
    CHECK(ptq_calib_method_parse(&ctx, "entropy", &m) == PTQ_OK && m == PTQ_CALIB_ENTROPY);
    CHECK(ptq_calib_method_parse(&ctx, "mse", &m) == PTQ_OK && m == PTQ_CALIB_MSE);
    CHECK(ptq_calib_method_parse(&ctx, "kl", &m) == PTQ_ERR_INVALID_ARG);
    CHECK_MSG(strstr(ctx.msg, "'kl'") && strstr(ctx.msg, "percentile"), "message: %s", ctx.msg);
    CHECK(ptq_qformat_parse(&ctx, "fp8", &f) == PTQ_OK && f == PTQ_QFORMAT_FP8_E4M3);
    CHECK(ptq_qformat_parse(&ctx, "fp8-e5m2", &f) == PTQ_OK && f == PTQ_QFORMAT_FP8_E5M2);
    CHECK(ptq_qformat_parse(&ctx, "int4", &f) == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "fp8-e4m3"));
    for (int k = 0; k <= PTQ_CALIB_MSE; k++)
        CHECK(ptq_calib_method_parse(&ctx, ptq_calib_method_name((ptq_calib_method)k), &m) == PTQ_OK && (int)m == k);
    /* a method as a plan records it: a name, or percentile=P */
    double pct = -1.0;
    CHECK(ptq_calib_spec_parse(&ctx, "percentile=99.9", &m, &pct) == PTQ_OK && m == PTQ_CALIB_PERCENTILE &&
          pct == 99.9);
    CHECK(ptq_calib_spec_parse(&ctx, "percentile", &m, &pct) == PTQ_OK && m == PTQ_CALIB_PERCENTILE && pct == 0.0);
    CHECK(ptq_calib_spec_parse(&ctx, "mse", &m, &pct) == PTQ_OK && m == PTQ_CALIB_MSE && pct == 0.0);
    CHECK(ptq_calib_spec_parse(&ctx, "minmax=1", &m, &pct) == PTQ_ERR_INVALID_ARG &&
          strstr(ctx.msg, "only percentile takes a value"));
    const char *bad[] = {"percentile=", "percentile=0", "percentile=100.01", "percentile=99x", "percentile=nan",
                         /* numbers as the number flags take them: no space, sign or hex float */
                         "percentile= 99", "percentile=+99", "percentile=0x63"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        CHECK_MSG(ptq_calib_spec_parse(&ctx, bad[k], &m, &pct) == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, bad[k]) &&
                      strstr(ctx.msg, "(0, 100]"),
                  "%s: %s", bad[k], ctx.msg);
    for (int k = PTQ_QFORMAT_INT8; k <= PTQ_QFORMAT_FP8_E5M2; k++)
        CHECK(ptq_qformat_parse(&ctx, ptq_qformat_name((ptq_qformat)k), &f) == PTQ_OK && (int)f == k);
    CHECK(ptq_qformat_max(PTQ_QFORMAT_INT8) == 127.0 && ptq_qformat_max(PTQ_QFORMAT_FP8_E4M3) == 448.0 &&
          ptq_qformat_max(PTQ_QFORMAT_FP8_E5M2) == 57344.0);
}

static void check_minmax(void)
{
    ptq_observer *o = make();
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    const float x[] = {-3.5f, 2.0f, 0.0f, NAN, 0.125f, INFINITY};
    CHECK(ptq_observer_update(&ctx, o, x, 6) == PTQ_OK);
    for (int f = PTQ_QFORMAT_INT8; f <= PTQ_QFORMAT_FP8_E5M2; f++) {
        ptq_calib_range r = calib(o, PTQ_CALIB_MINMAX, (ptq_qformat)f, 0);
        CHECK(r.amax == 3.5 && r.scale == 3.5 / ptq_qformat_max((ptq_qformat)f) && !r.degenerate);
        CHECK_MSG(r.clipped_fraction == 1.0 / 5.0, "clipped %g: only the Inf of 5 non-NaN", r.clipped_fraction);
    }
    ptq_observer_free(o);
}

/* Data reaching +-FLT_MAX: entropy's and mse's amax is a bin edge up to one bin past max|x|, here 2^128, which is
 * Inf as a float32 (ptq export --format ort refused it, the JSON wrote 3.4028236692093846e+38); every method's amax
 * is now at most FLT_MAX */
static void check_float_max(void)
{
    ptq_observer *o = make();
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    float x[4096];
    for (int k = 0; k < 4096; k++)
        x[k] = (float)((k % 2 ? -1 : 1) * (double)FLT_MAX * (k + 1) / 4096.0); /* uniform up to +-FLT_MAX */
    CHECK(ptq_observer_update(&ctx, o, x, 4096) == PTQ_OK);
    for (int m = PTQ_CALIB_MINMAX; m <= PTQ_CALIB_MSE; m++) {
        for (int f = PTQ_QFORMAT_INT8; f <= PTQ_QFORMAT_FP8_E5M2; f++) {
            ptq_calib_range r = calib(o, (ptq_calib_method)m, (ptq_qformat)f, 0);
            CHECK_MSG(r.amax > 0 && r.amax <= FLT_MAX && isfinite((float)r.amax) &&
                          r.scale == r.amax / ptq_qformat_max((ptq_qformat)f),
                      "%s/%s: amax %.17g past float32", ptq_calib_method_name((ptq_calib_method)m),
                      ptq_qformat_name((ptq_qformat)f), r.amax);
            if (m == PTQ_CALIB_ENTROPY) /* the top candidate, 2^128: float32's largest value instead */
                CHECK_MSG(r.amax == FLT_MAX, "entropy/%s: amax %.17g", ptq_qformat_name((ptq_qformat)f), r.amax);
        }
    }
    ptq_observer_free(o);
}

static void check_degenerate(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_calib_params p = {.method = PTQ_CALIB_ENTROPY, .format = PTQ_QFORMAT_INT8};
    ptq_calib_range r;

    ptq_observer *o = make();
    CHECK(ptq_calib_compute(&ctx, &p, o, &r) == PTQ_ERR_DATA && strstr(ctx.msg, "no finite values"));
    const float nans[] = {NAN, -NAN, INFINITY, -INFINITY};
    CHECK(ptq_observer_update(&ctx, o, nans, 4) == PTQ_OK);
    for (int m = 0; m <= PTQ_CALIB_MSE; m++) {
        p.method = (ptq_calib_method)m;
        ptq_ctx_init(&ctx);
        CHECK(ptq_calib_compute(&ctx, &p, o, &r) == PTQ_ERR_DATA);
        CHECK_MSG(strstr(ctx.msg, "no finite values") != NULL, "message: %s", ctx.msg);
    }
    const float zeros[] = {0.0f, -0.0f, 0.0f};
    CHECK(ptq_observer_update(&ctx, o, zeros, 3) == PTQ_OK);
    for (int m = 0; m <= PTQ_CALIB_MSE; m++)
        for (int f = PTQ_QFORMAT_INT8; f <= PTQ_QFORMAT_FP8_E5M2; f++) {
            r = calib(o, (ptq_calib_method)m, (ptq_qformat)f, 0);
            CHECK(r.degenerate == 1 && r.amax == 0.0 && r.scale == 0.0);
            CHECK_MSG(r.clipped_fraction == 2.0 / 5.0, "clipped %g: the 2 Inf of 3 zeros + 2 Inf", r.clipped_fraction);
        }
    ptq_observer_free(o);

    p.method = PTQ_CALIB_MINMAX;
    p.format = (ptq_qformat)7;
    o = make();
    CHECK(ptq_observer_update(&ctx, o, zeros, 3) == PTQ_OK);
    CHECK(ptq_calib_compute(&ctx, &p, o, &r) == PTQ_ERR_INVALID_ARG);
    ptq_observer_free(o);
}

/* Uniform over bins 0..n-1: P and Q agree exactly only when nothing is
 * folded into the last bin, so every format keeps all n bins. */
static void check_entropy_uniform(void)
{
    static const int64_t lengths[] = {1025, 1500, 2048};
    for (int t = 0; t < 3; t++) {
        int64_t *h = alloc_or_die(N_BINS * sizeof *h);
        for (int64_t k = 0; k < lengths[t]; k++)
            h[k] = 1000;
        ptq_observer *o = make_state(h, 0, 0, 0, (float)lengths[t] - 0.5f);
        for (int f = PTQ_QFORMAT_INT8; f <= PTQ_QFORMAT_FP8_E5M2; f++) {
            ptq_calib_range r = calib(o, PTQ_CALIB_ENTROPY, (ptq_qformat)f, 0);
            CHECK_MSG(r.amax == (double)lengths[t], "%s uniform %lld: amax %g", ptq_qformat_name((ptq_qformat)f),
                      (long long)lengths[t], r.amax);
            CHECK(r.clipped_fraction == 0.0);
        }
        ptq_observer_free(o);
        free(h);
    }
}

/* A dense body over bins 0..299 and a thin tail to 1999: the search clips the
 * tail; the clipped share is what lies above amax. */
static void check_entropy_tail(void)
{
    int64_t *h = alloc_or_die(N_BINS * sizeof *h);
    int64_t total = 0;
    for (int64_t k = 0; k < 2000; k++)
        total += h[k] = k < 300 ? 100000 - 300 * k : (k % 7 == 0 || k == 1999);
    ptq_observer *o = make_state(h, 5000, 3, 0, 1999.75f);
    for (int f = PTQ_QFORMAT_INT8; f <= PTQ_QFORMAT_FP8_E5M2; f++) {
        ptq_calib_range r = calib(o, PTQ_CALIB_ENTROPY, (ptq_qformat)f, 0);
        CHECK_MSG(r.amax >= 128 && r.amax < 1000 && r.amax == floor(r.amax), "%s tail: amax %g",
                  ptq_qformat_name((ptq_qformat)f), r.amax);
        int64_t above = 0;
        for (int64_t k = (int64_t)r.amax; k < 2000; k++)
            above += h[k];
        CHECK_MSG(near(r.clipped_fraction, (double)above / (double)(total + 5000), 1e-12), "clipped %g",
                  r.clipped_fraction);
        CHECK(r.scale == r.amax / ptq_qformat_max((ptq_qformat)f));
    }
    ptq_observer_free(o);
    free(h);
}

/* Every bin below 1200 empty: ModelOpt's Q is 0/0 there, its divergence NaN,
 * and numpy's argmin takes the NaN: amax is the first non-empty bin's left edge. */
static void check_entropy_empty_start(void)
{
    int64_t *h = alloc_or_die(N_BINS * sizeof *h);
    for (int64_t k = 1200; k < 1300; k++)
        h[k] = 50;
    ptq_observer *o = make_state(h, 0, 0, 0, 1299.5f);
    for (int f = PTQ_QFORMAT_INT8; f <= PTQ_QFORMAT_FP8_E5M2; f++) {
        ptq_calib_range r = calib(o, PTQ_CALIB_ENTROPY, (ptq_qformat)f, 0);
        /* candidates with nothing below them lose (P > 0 where Q = 0): amax stays inside the band */
        CHECK_MSG(r.amax > 1200.0 && r.amax <= 1300.0 && r.clipped_fraction < 0.5, "%s: amax %g clipped %g",
                  ptq_qformat_name((ptq_qformat)f), r.amax, r.clipped_fraction);
    }
    ptq_observer_free(o);
    /* below 128 bins the search has no candidate: the whole histogram */
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    int64_t i = 0;
    CHECK(ptq_calib_kl_choose(&ctx, h + 1200, 100, PTQ_QFORMAT_INT8, &i) == PTQ_OK && i == 100);
    free(h);
}

/* Every range is a float32 amax, and the plan's scale (float)(amax / qmax) is the float32 quotient a runtime
 * derives from that amax: onnxruntime's TensorRT EP reads the flatbuffers table's amax with stof, TensorRT divides
 * it by 127 in float. A percentile within a bin is no float32 by itself (1999.5 - 0.5 * 1.995 / 10 is not): before,
 * its scale amax / 127 in double differed by an ulp from the one the table's amax gives. */
static void check_float32_amax(void)
{
    int64_t *h = alloc_or_die(N_BINS * sizeof *h);
    for (int64_t k = 5; k < 2000; k++)
        h[k] = 10 + k % 7;
    ptq_observer *o = make_state(h, 300, 0, 3, 1999.5f);
    static const ptq_calib_method methods[] = {PTQ_CALIB_MINMAX, PTQ_CALIB_ENTROPY, PTQ_CALIB_PERCENTILE,
                                               PTQ_CALIB_MSE};
    static const ptq_qformat formats[] = {PTQ_QFORMAT_INT8, PTQ_QFORMAT_FP8_E4M3, PTQ_QFORMAT_FP8_E5M2};
    static const double pcts[] = {99.99, 99.9, 99.0, 97.3, 50.0, 12.345};
    int64_t bad = 0, n = 0;
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
            for (size_t k = 0; k < (methods[m] == PTQ_CALIB_PERCENTILE ? sizeof pcts / sizeof pcts[0] : 1); k++) {
                const ptq_calib_range r = calib(o, methods[m], formats[f], pcts[k]);
                const float amax = (float)r.amax, qmax = (float)ptq_qformat_max(formats[f]);
                const int ok = (double)amax == r.amax && (float)r.scale == amax / qmax;
                CHECK_MSG(ok, "%s=%g/%s: amax %.17g, scale %.17g", ptq_calib_method_name(methods[m]), pcts[k],
                          ptq_qformat_name(formats[f]), r.amax, r.scale);
                bad += !ok;
                n++;
            }
        }
    }
    CHECK_MSG(bad == 0 && n == 3 * 3 + 3 * 6, "%lld of %lld ranges are no float32", (long long)bad, (long long)n);
    ptq_observer_free(o);
    free(h);
}

static void check_percentile(void)
{
    int64_t *h = alloc_or_die(N_BINS * sizeof *h);
    for (int64_t k = 5; k < 2000; k++)
        h[k] = 10; /* 19950 values, bin k over [k, k+1); the last ends at max|x| 1999.5 */
    ptq_observer *o = make_state(h, 0, 7, 0, 1999.5f);
    ptq_calib_range r = calib(o, PTQ_CALIB_PERCENTILE, PTQ_QFORMAT_INT8, 50.0);
    CHECK_MSG(near(r.amax, 1002.5, 1e-12), "median %.17g", r.amax); /* 9975 values: bins 5..1001 and half of 1002 */
    CHECK(near(r.clipped_fraction, 0.5, 1e-12));
    r = calib(o, PTQ_CALIB_PERCENTILE, PTQ_QFORMAT_INT8, 100.0 * 9980.0 / 19950.0);
    CHECK_MSG(near(r.amax, 1003.0, 1e-9), "bin edge %.17g", r.amax);
    r = calib(o, PTQ_CALIB_PERCENTILE, PTQ_QFORMAT_FP8_E4M3, 100.0);
    CHECK(r.amax == 1999.5 && r.clipped_fraction == 0.0 && r.scale == 1999.5 / 448.0);
    r = calib(o, PTQ_CALIB_PERCENTILE, PTQ_QFORMAT_INT8, 100.0 - 100.0 * 5.0 / 19950.0);
    CHECK_MSG(near(r.amax, 1999.25, 1e-9), "in the last bin, up to max|x|: %.17g", r.amax);
    r = calib(o, PTQ_CALIB_PERCENTILE, PTQ_QFORMAT_INT8, 0); /* default 99.99: 1.995 values from the top */
    CHECK_MSG(r.amax == (float)(1999.5 - 0.5 * 1.995 / 10.0), "99.99 (as a float32): %.17g", r.amax);
    r = calib(o, PTQ_CALIB_PERCENTILE, PTQ_QFORMAT_INT8, 1e-6);
    CHECK_MSG(r.amax == 6.0, "floor at the first non-empty bin's right edge: %g", r.amax);
    ptq_observer_free(o);

    /* zeros count as values at 0, Inf above everything */
    o = make_state(h, 19950, 0, 100, 1999.5f);
    r = calib(o, PTQ_CALIB_PERCENTILE, PTQ_QFORMAT_INT8, 100.0 * (19950.0 + 9975.0) / 40000.0);
    CHECK_MSG(near(r.amax, 1002.5, 1e-9), "with zeros: %.17g", r.amax);
    CHECK(near(r.clipped_fraction, (9975.0 + 100.0) / 40000.0, 1e-12));
    r = calib(o, PTQ_CALIB_PERCENTILE, PTQ_QFORMAT_INT8, 40.0);
    CHECK_MSG(r.amax == 6.0, "among the zeros: %g", r.amax);
    r = calib(o, PTQ_CALIB_PERCENTILE, PTQ_QFORMAT_INT8, 99.9);
    CHECK_MSG(r.amax == 1999.5, "among the Inf: max|x|, got %g", r.amax);
    CHECK(near(r.clipped_fraction, 100.0 / 40000.0, 1e-15));

    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    static const double bad[] = {-1.0, 100.5, NAN, INFINITY};
    for (int k = 0; k < 4; k++) {
        ptq_calib_params p = {.method = PTQ_CALIB_PERCENTILE, .format = PTQ_QFORMAT_INT8, .percentile = bad[k]};
        CHECK(ptq_calib_compute(&ctx, &p, o, &r) == PTQ_ERR_INVALID_ARG);
        CHECK_MSG(strstr(ctx.msg, "percentile") != NULL, "message: %s", ctx.msg);
    }
    ptq_observer_free(o);
    free(h);
}

/* The mse error of candidate i with per-value conversion (the spec the
 * code-table walk of calib/mse.c must equal). */
static double mse_brute(const int64_t *bins, int64_t n, ptq_qformat f, int64_t i)
{
    const double fmax = ptq_qformat_max(f), to_fp8 = fmax / (double)i, back = (double)i / fmax;
    double err = 0.0;
    for (int64_t j = 0; j < n; j++) {
        if (!bins[j])
            continue;
        const double c = (double)j + 0.5, v = c * to_fp8;
        const double qv = f == PTQ_QFORMAT_FP8_E4M3 ? ptq_k_fp8_e4m3_to_float_ref(ptq_k_fp8_e4m3_from_double_ref(v))
                                                    : ptq_k_fp8_e5m2_to_float_ref(ptq_k_fp8_e5m2_from_double_ref(v));
        const double d = qv * back - c;
        err += (double)bins[j] * d * d;
    }
    return err;
}

static void check_mse(void)
{
    enum { N = 1 << 20 };
    float *x = alloc_or_die(N * sizeof *x);
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    test_rand_seed(11);
    test_fill_uniform(x, N, -3.0f, 3.0f);
    ptq_observer *uni = make();
    CHECK(ptq_observer_update(&ctx, uni, x, N) == PTQ_OK);
    for (int64_t k = 0; k < N; k++) { /* a Laplace body (b = 1, max near 14) and rare far outliers */
        const double u = test_rand_uniform(0.0f, 1.0f), v = -log(1.0 - test_rand_uniform(0.0f, 1.0f));
        x[k] = (float)(u < 0.5 ? -v : v);
    }
    for (int64_t k = 0; k < 4; k++)
        x[k * 99991] = test_rand_uniform(60.0f, 100.0f);
    ptq_observer *heavy = make();
    CHECK(ptq_observer_update(&ctx, heavy, x, N) == PTQ_OK);
    const ptq_calib_range mu = calib(uni, PTQ_CALIB_MINMAX, PTQ_QFORMAT_INT8, 0);
    const ptq_calib_range mh = calib(heavy, PTQ_CALIB_MINMAX, PTQ_QFORMAT_INT8, 0);
    for (int f = PTQ_QFORMAT_INT8; f <= PTQ_QFORMAT_FP8_E5M2; f++) {
        ptq_calib_range r = calib(uni, PTQ_CALIB_MSE, (ptq_qformat)f, 0);
        CHECK_MSG(r.amax > 0.9 * mu.amax && r.amax <= mu.amax * 1.01, "%s uniform: mse %g, max %g",
                  ptq_qformat_name((ptq_qformat)f), r.amax, mu.amax);
        r = calib(heavy, PTQ_CALIB_MSE, (ptq_qformat)f, 0);
        if (f == PTQ_QFORMAT_INT8)
            CHECK_MSG(r.amax < 0.5 * mh.amax && r.clipped_fraction > 0, "int8 heavy tail: mse %g, max %g", r.amax,
                      mh.amax);
        else
            CHECK_MSG(r.amax > 0 && r.amax <= mh.amax * 1.01, "%s heavy tail: mse %g, max %g",
                      ptq_qformat_name((ptq_qformat)f), r.amax, mh.amax);
    }
    ptq_observer_free(uni);
    ptq_observer_free(heavy);
    free(x);

    /* the FP8 walk equals per-value conversion, on random sparse histograms */
    int64_t h[600];
    for (int t = 0; t < 6; t++) {
        for (int k = 0; k < 600; k++)
            h[k] = test_rand_uniform(0.0f, 1.0f) < 0.3f ? (int64_t)test_rand_uniform(1.0f, 1000.0f) : 0;
        h[599] = 1;
        for (int f = PTQ_QFORMAT_FP8_E4M3; f <= PTQ_QFORMAT_FP8_E5M2; f++) {
            int64_t got = 0, want = 600;
            double best = INFINITY;
            for (int64_t i = 1; i <= 600; i++) {
                const double e = mse_brute(h, 600, (ptq_qformat)f, i);
                if (e <= best) {
                    best = e;
                    want = i;
                }
            }
            ptq_calib_mse_choose(h, 600, (ptq_qformat)f, &got);
            CHECK_MSG(got == want, "%s walk: %lld, per-value conversion %lld", ptq_qformat_name((ptq_qformat)f),
                      (long long)got, (long long)want);
        }
    }
    /* one spike: INT8 puts level 127 on an edge next to its centre 1500.5 */
    int64_t spike[N_BINS] = {0};
    spike[1500] = 1000;
    int64_t i = 0;
    ptq_calib_mse_choose(spike, 1501, PTQ_QFORMAT_INT8, &i);
    CHECK_MSG(i == 1500 || i == 1501, "spike: %lld", (long long)i);
}

/* The same values observed in one batch, in uneven batches and as merged
 * shards give bit-identical ranges for every method and format. */
/* Entropy and mse on an observer of more bins search the default 4096-bin
 * histogram: the same ranges as an observer of 4096 bins fed the same data. */
static void check_fine_bins(void)
{
    enum { N = 200000 };
    float *x = alloc_or_die(N * sizeof *x);
    test_rand_seed(9);
    for (int64_t k = 0; k < N; k++)
        x[k] = (float)(-log(1.0 - test_rand_uniform(0.0f, 1.0f)) * 0.9);
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_observer *coarse = NULL, *fine = NULL;
    CHECK(ptq_observer_init(&ctx, 4096, &coarse) == PTQ_OK && ptq_observer_init(&ctx, 1 << 16, &fine) == PTQ_OK);
    CHECK(ptq_observer_update(&ctx, coarse, x, N) == PTQ_OK && ptq_observer_update(&ctx, fine, x, N) == PTQ_OK);
    static const ptq_calib_method methods[] = {PTQ_CALIB_ENTROPY, PTQ_CALIB_MSE};
    for (int m = 0; m < 2; m++)
        for (int f = PTQ_QFORMAT_INT8; f <= PTQ_QFORMAT_FP8_E5M2; f++) {
            const ptq_calib_range a = calib(coarse, methods[m], (ptq_qformat)f, 0);
            const ptq_calib_range b = calib(fine, methods[m], (ptq_qformat)f, 0);
            CHECK_MSG(a.amax == b.amax && a.amax > 0, "%s/%s: 4096 bins %.17g, 65536 bins %.17g",
                      ptq_calib_method_name(methods[m]), ptq_qformat_name((ptq_qformat)f), a.amax, b.amax);
        }
    ptq_observer_free(coarse);
    ptq_observer_free(fine);
    free(x);
}

static void check_invariance(void)
{
    enum { N = 300000 };
    float *x = alloc_or_die(N * sizeof *x);
    test_rand_seed(5);
    for (int64_t k = 0; k < N; k++) {
        const float u = test_rand_uniform(0.0f, 1.0f);
        x[k] = u < 0.4f ? 0.0f : (float)(-log(1.0 - test_rand_uniform(0.0f, 1.0f)) * 0.7);
    }
    test_fill_specials(x, 1000, 3.0f, 0.3f);
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_observer *whole = make(), *batched = make(), *shard_a = make(), *shard_b = make();
    CHECK(ptq_observer_update(&ctx, whole, x, N) == PTQ_OK);
    for (int64_t at = 0; at < N;) {
        int64_t len = 1 + (int64_t)test_rand_uniform(0.0f, 20000.0f);
        if (len > N - at)
            len = N - at;
        CHECK(ptq_observer_update(&ctx, batched, x + at, len) == PTQ_OK);
        at += len;
    }
    CHECK(ptq_observer_update(&ctx, shard_a, x + N / 3, N - N / 3) == PTQ_OK);
    CHECK(ptq_observer_update(&ctx, shard_b, x, N / 3) == PTQ_OK);
    CHECK(ptq_observer_merge(&ctx, shard_a, shard_b) == PTQ_OK);
    for (int m = 0; m <= PTQ_CALIB_MSE; m++)
        for (int f = PTQ_QFORMAT_INT8; f <= PTQ_QFORMAT_FP8_E5M2; f++) {
            const ptq_calib_range a = calib(whole, (ptq_calib_method)m, (ptq_qformat)f, 99.9);
            const ptq_calib_range b = calib(batched, (ptq_calib_method)m, (ptq_qformat)f, 99.9);
            const ptq_calib_range c = calib(shard_a, (ptq_calib_method)m, (ptq_qformat)f, 99.9);
            CHECK_MSG(memcmp(&a, &b, sizeof a) == 0 && memcmp(&a, &c, sizeof a) == 0, "%s/%s: %.17g %.17g %.17g",
                      ptq_calib_method_name((ptq_calib_method)m), ptq_qformat_name((ptq_qformat)f), a.amax, b.amax,
                      c.amax);
            CHECK(a.amax > 0 && !a.degenerate && a.clipped_fraction >= 0 && a.clipped_fraction < 1);
        }
    ptq_observer_free(whole);
    ptq_observer_free(batched);
    ptq_observer_free(shard_a);
    ptq_observer_free(shard_b);
    free(x);
}

typedef struct fp8_case {
    float x;
    uint8_t e4m3, e5m2;
} fp8_case;

static void check_fp8(void)
{
    static const fp8_case cases[] = {
        {0.0f, 0x00, 0x00},
        {-0.0f, 0x80, 0x80},
        {1.0f, 0x38, 0x3C},
        {-1.5f, 0xBC, 0xBE},
        {1.0625f, 0x38, 0x3C},   /* E4M3 tie 1 | 1.125 -> even 0x38 */
        {1.1875f, 0x3A, 0x3D},   /* E4M3 tie 1.125 | 1.25 -> even 0x3A */
        {1.125f, 0x39, 0x3C},    /* E5M2 tie 1 | 1.25 -> even 0x3C */
        {1.375f, 0x3B, 0x3E},    /* E5M2 tie 1.25 | 1.5 -> even 0x3E */
        {240.0f, 0x77, 0x5C},    /* E5M2 tie 224 | 256 -> even */
        {448.0f, 0x7E, 0x5F},
        {449.0f, 0x7E, 0x5F},
        {464.0f, 0x7E, 0x5F},    /* E4M3 max + half ulp: saturates */
        {480.0f, 0x7E, 0x60},
        {-1e9f, 0xFE, 0xFB},
        {57344.0f, 0x7E, 0x7B},
        {61440.0f, 0x7E, 0x7B},  /* E5M2 max + half ulp */
        {65536.0f, 0x7E, 0x7B},
        {INFINITY, 0x7E, 0x7B},
        {-INFINITY, 0xFE, 0xFB},
        {NAN, 0x7F, 0x7F},
        {-NAN, 0x7F, 0x7F},
        {0x1p-6f, 0x08, 0x24},   /* E4M3 smallest normal */
        {0x1p-9f, 0x01, 0x18},   /* E4M3 smallest subnormal */
        {0x1p-10f, 0x00, 0x14},  /* half of it: ties to 0 */
        {0x1.000002p-10f, 0x01, 0x14},
        {-0x1p-10f, 0x80, 0x94},
        {0x1.8p-9f, 0x02, 0x1A}, /* 1.5 subnormal steps: tie -> even 2 */
        {0x1.4p-8f, 0x02, 0x1D}, /* 2.5 steps: tie -> 2 */
        {0x1.cp-8f, 0x04, 0x1F}, /* 3.5 steps: tie -> 4 */
        {0x1.ep-7f, 0x08, 0x24}, /* 7.5 steps: rounds up into the first normal */
        {0x1p-14f, 0x00, 0x04},  /* E5M2 smallest normal */
        {0x1p-16f, 0x00, 0x01},  /* E5M2 smallest subnormal */
        {0x1p-17f, 0x00, 0x00},  /* half of it */
        {0x1.8p-16f, 0x00, 0x02},
        {1e-30f, 0x00, 0x00},
        {0x1p-149f, 0x00, 0x00},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const uint8_t a = ptq_k_fp8_e4m3_from_float_ref(cases[k].x), b = ptq_k_fp8_e5m2_from_float_ref(cases[k].x);
        CHECK_MSG(a == cases[k].e4m3 && b == cases[k].e5m2, "%a: e4m3 0x%02X (want 0x%02X), e5m2 0x%02X (want 0x%02X)",
                  (double)cases[k].x, a, cases[k].e4m3, b, cases[k].e5m2);
    }
    CHECK(ptq_k_fp8_e4m3_to_float_ref(0x7E) == 448.0f && ptq_k_fp8_e4m3_to_float_ref(0xFE) == -448.0f);
    CHECK(ptq_k_fp8_e5m2_to_float_ref(0x7B) == 57344.0f && ptq_k_fp8_e5m2_to_float_ref(0x7C) == INFINITY);
    CHECK(ptq_k_fp8_e4m3_to_float_ref(0x01) == 0x1p-9f && ptq_k_fp8_e5m2_to_float_ref(0x01) == 0x1p-16f);
    CHECK(isnan(ptq_k_fp8_e4m3_to_float_ref(0x7F)) && isnan(ptq_k_fp8_e4m3_to_float_ref(0xFF)));
    CHECK(isnan(ptq_k_fp8_e5m2_to_float_ref(0x7D)) && isnan(ptq_k_fp8_e5m2_to_float_ref(0xFF)));
    CHECK(ptq_k_fp8_e5m2_to_float_ref(0xFC) == -INFINITY);
    /* every finite code decodes to a value that encodes back to it, in increasing order */
    int ok = 1;
    for (int c = 0; c < 256; c++) {
        const float a = ptq_k_fp8_e4m3_to_float_ref((uint8_t)c), b = ptq_k_fp8_e5m2_to_float_ref((uint8_t)c);
        if (!isnan(a) && ptq_k_fp8_e4m3_from_float_ref(a) != c)
            ok = 0;
        if (isfinite(b) && ptq_k_fp8_e5m2_from_float_ref(b) != c)
            ok = 0;
        if (c > 0 && c < 0x7E && !(ptq_k_fp8_e4m3_to_float_ref((uint8_t)c) > ptq_k_fp8_e4m3_to_float_ref((uint8_t)(c - 1))))
            ok = 0;
        if (c > 0 && c <= 0x7C && !(ptq_k_fp8_e5m2_to_float_ref((uint8_t)c) > ptq_k_fp8_e5m2_to_float_ref((uint8_t)(c - 1))))
            ok = 0;
    }
    CHECK_MSG(ok, "fp8 code round trip / order");
}

/* --kl FILE: each line "n c_0 .. c_{n-1}"; prints per line the entropy
 * choice for int8, fp8-e4m3, fp8-e5m2, then the mse choice for the same. */
static int run_driver(const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "cannot open %s\n", path);
        return 2;
    }
    long long n;
    while (fscanf(fp, "%lld", &n) == 1) {
        if (n < 1 || n > (1ll << 26)) {
            fprintf(stderr, "%s: bad bin count %lld\n", path, n);
            fclose(fp);
            return 2;
        }
        int64_t *bins = alloc_or_die((size_t)n * sizeof *bins);
        for (long long k = 0; k < n; k++) {
            long long c;
            if (fscanf(fp, "%lld", &c) != 1) {
                fprintf(stderr, "%s: truncated histogram\n", path);
                fclose(fp);
                return 2;
            }
            bins[k] = c;
        }
        for (int f = PTQ_QFORMAT_INT8; f <= PTQ_QFORMAT_FP8_E5M2; f++) {
            ptq_ctx ctx;
            ptq_ctx_init(&ctx);
            int64_t i = -1;
            if (ptq_calib_kl_choose(&ctx, bins, n, (ptq_qformat)f, &i) != PTQ_OK) {
                fprintf(stderr, "kl: %s\n", ctx.msg);
                fclose(fp);
                return 2;
            }
            printf("%lld ", (long long)i);
        }
        for (int f = PTQ_QFORMAT_INT8; f <= PTQ_QFORMAT_FP8_E5M2; f++) {
            int64_t i = -1;
            ptq_calib_mse_choose(bins, n, (ptq_qformat)f, &i);
            printf(f == PTQ_QFORMAT_FP8_E5M2 ? "%lld\n" : "%lld ", (long long)i);
        }
        free(bins);
    }
    fclose(fp);
    return 0;
}

/* --sum FILE: each line "n x_0 .. x_{n-1}" (hex floats); prints ptq_calib_np_sum as a hex float. */
static int run_sum(const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "cannot open %s\n", path);
        return 2;
    }
    long long n;
    int rc = 0;
    while (rc == 0 && fscanf(fp, "%lld", &n) == 1) {
        double *x = alloc_or_die((size_t)(n > 0 ? n : 0) * sizeof *x);
        for (long long k = 0; k < n && rc == 0; k++)
            if (fscanf(fp, "%lf", &x[k]) != 1)
                rc = 2;
        if (rc == 0)
            printf("%a\n", ptq_calib_np_sum(x, n));
        free(x);
    }
    fclose(fp);
    if (rc)
        fprintf(stderr, "%s: truncated line\n", path);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--kl") == 0)
        return run_driver(argv[2]);
    if (argc == 3 && strcmp(argv[1], "--sum") == 0)
        return run_sum(argv[2]);
    check_names();
    check_fp8();
    check_minmax();
    check_degenerate();
    check_float_max();
    check_entropy_uniform();
    check_entropy_tail();
    check_entropy_empty_start();
    check_percentile();
    check_float32_amax();
    check_mse();
    check_invariance();
    check_fine_bins();
    return test_done("test_calibrators");
}
