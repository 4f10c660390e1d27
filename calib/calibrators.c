/* Calibrators' public entry (ptq/calibrator.h): names, parsing, minmax,
 * percentile and the clipped share here; entropy in calib/kl.c, mse in
 * calib/mse.c. Everything works in units of the bin width, which is exact
 * (a power of two). Covered by tests/test_calibrators.c. */
#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calibrator_internal.h"
#include "core/c_locale.h"

const char *ptq_calib_method_name(ptq_calib_method m)
{
    switch (m) {
    case PTQ_CALIB_MINMAX: return "minmax";
    case PTQ_CALIB_ENTROPY: return "entropy";
    case PTQ_CALIB_PERCENTILE: return "percentile";
    case PTQ_CALIB_MSE: return "mse";
    }
    return "unknown";
}

/* The table's entry of f when f takes scales and no zero point, else NULL. */
static const ptq_numfmt *scaled_format(ptq_qformat f)
{
    const ptq_numfmt *nf = ptq_numfmt_get(f);
    return nf && nf->scaled && !nf->zero_point ? nf : NULL;
}

const char *ptq_qformat_name(ptq_qformat f)
{
    const ptq_numfmt *nf = scaled_format(f);
    return nf ? nf->name : "unknown";
}

ptq_status ptq_calib_method_parse(ptq_ctx *ctx, const char *s, ptq_calib_method *out)
{
    static const ptq_calib_method all[] = {PTQ_CALIB_MINMAX, PTQ_CALIB_ENTROPY, PTQ_CALIB_PERCENTILE, PTQ_CALIB_MSE};
    for (size_t k = 0; s && k < sizeof all / sizeof all[0]; k++) {
        if (strcmp(s, ptq_calib_method_name(all[k])) == 0) {
            *out = all[k];
            return PTQ_OK;
        }
    }
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "unknown calibration method '%s' (choices: minmax, entropy, percentile, mse)",
                    s ? s : "(null)");
}

ptq_status ptq_calib_spec_parse(ptq_ctx *ctx, const char *s, ptq_calib_method *method, double *percentile)
{
    *percentile = 0.0;
    const char *eq = s ? strchr(s, '=') : NULL;
    if (!eq)
        return ptq_calib_method_parse(ctx, s, method);
    char name[32];
    snprintf(name, sizeof name, "%.*s", (int)(eq - s), s);
    PTQ_TRY_RET(ptq_calib_method_parse(ctx, name, method));
    if (*method != PTQ_CALIB_PERCENTILE)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "calibration method '%s': only percentile takes a value", s);
    char *end = NULL;
    const char *p = eq + 1;
    *percentile = ptq_strtod_c(p, &end);
    /* a plain decimal, as the number flags take it: strtod would also read " 99", "+99" and hex floats (0x63) */
    const int plain = (isdigit((unsigned char)p[0]) || p[0] == '.') && p[strspn(p, "0123456789.eE+-")] == '\0';
    if (!plain || end == p || *end || !(*percentile > 0 && *percentile <= 100))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "calibration method '%s': the percentile must be a number in (0, 100]",
                        s);
    return PTQ_OK;
}

ptq_status ptq_qformat_parse(ptq_ctx *ctx, const char *s, ptq_qformat *out)
{
    const ptq_numfmt *nf = scaled_format(ptq_numfmt_find(s) ? ptq_numfmt_find(s)->id : PTQ_FMT_FP32);
    if (nf) {
        *out = nf->id;
        return PTQ_OK;
    }
    if (s && strcmp(s, "fp8") == 0) {
        *out = PTQ_QFORMAT_FP8_E4M3;
        return PTQ_OK;
    }
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "unknown quantization format '%s' (choices: int8, fp8, fp8-e4m3, fp8-e5m2)",
                    s ? s : "(null)");
}

double ptq_qformat_max(ptq_qformat f)
{
    const ptq_numfmt *nf = scaled_format(f);
    return nf ? nf->max_finite : ptq_numfmt_get(PTQ_FMT_INT8)->max_finite;
}

/* The histogram as the calibrators see it, in units of the bin width w.
 * Bin k holds values spread evenly over [k, k + 1), except the last
 * non-empty one, which ends at max|x| (top): nothing lies above it. */
typedef struct calib_hist {
    const int64_t *bins; /* [n]: the histogram truncated after its last non-empty bin */
    int64_t n;
    int64_t first;       /* the first non-empty bin */
    double top;          /* max|x| / w, in [n - 1, n) */
    double w;            /* bin width, a power of two */
} calib_hist;

static double bin_hi(const calib_hist *h, int64_t k)
{
    return k == h->n - 1 ? h->top : (double)(k + 1);
}

/* obs's histogram (st: its stats) as the calibrators read it. */
static calib_hist hist_of(const ptq_observer *obs, const ptq_observer_stats *st)
{
    const int64_t n_bins = ptq_observer_n_bins(obs);
    int log2_bins = 0;
    while (((int64_t)1 << log2_bins) < n_bins)
        log2_bins++;
    calib_hist h = {.bins = ptq_observer_hist(obs), .n = n_bins, .first = -1};
    while (h.n > 0 && h.bins[h.n - 1] == 0)
        h.n--;
    for (int64_t k = 0; k < h.n && h.first < 0; k++)
        if (h.bins[k])
            h.first = k;
    h.w = ldexp(1.0, ptq_observer_exponent(obs) - log2_bins);
    h.top = fmax(fabs((double)st->min), fabs((double)st->max)) / h.w;
    return h;
}

/* a: amax / w. The values of bins above a, with a linear share of a straddled bin. */
static double count_above(const calib_hist *h, double a)
{
    double above = 0.0;
    for (int64_t k = h->n - 1; k >= 0 && bin_hi(h, k) > a; k--) {
        if (!h->bins[k])
            continue;
        const double lo = (double)k, hi = bin_hi(h, k);
        above += lo >= a ? (double)h->bins[k] : (double)h->bins[k] * (hi - a) / (hi - lo);
    }
    return above;
}

/* ptq_calib_zero_fraction on the histogram h of stats st. */
static double zero_fraction(const calib_hist *h, const ptq_observer_stats *st, double scale, ptq_qformat f)
{
    const ptq_numfmt *nf = ptq_numfmt_get(f);
    if (st->n_binned == 0 || !(scale > 0) || !nf)
        return 0.0;
    const double smallest = nf->is_float ? ldexp(1.0, 2 - (1 << (nf->exp_bits - 1)) - nf->man_bits) : 1.0;
    const double below = (double)st->n_binned - count_above(h, 0.5 * smallest * scale / h->w);
    return below / (double)st->n_binned;
}

/* Percentile p of the non-NaN |x| (zeros at 0, Inf above all), in units of w,
 * kept within [first non-empty bin's right edge, top]. */
static double percentile_units(const calib_hist *h, const ptq_observer_stats *st, double p)
{
    const double n_values = (double)(st->n_zero + st->n_binned + st->n_inf);
    const double target = p / 100.0 * n_values;
    double a = h->top; /* the target falls among the Inf: keep every finite value */
    double below = (double)st->n_zero;
    for (int64_t k = 0; k < h->n; k++) {
        if (!h->bins[k])
            continue;
        const double c = (double)h->bins[k];
        if (below + c >= target) {
            const double frac = target > below ? (target - below) / c : 0.0;
            a = (double)k + frac * (bin_hi(h, k) - (double)k);
            break;
        }
        below += c;
    }
    const double floor_units = fmin((double)(h->first + 1), h->top);
    return fmin(fmax(a, floor_units), h->top);
}

ptq_status ptq_calib_params_check(ptq_ctx *ctx, const ptq_calib_params *p)
{
    if ((unsigned)p->method > PTQ_CALIB_MSE)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "calibration: unknown method %d", (int)p->method);
    if (!scaled_format(p->format))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "calibration: unknown format %d", (int)p->format);
    const double pct = p->percentile == 0.0 ? PTQ_CALIB_DEFAULT_PERCENTILE : p->percentile;
    if (p->method == PTQ_CALIB_PERCENTILE && !(pct > 0.0 && pct <= 100.0))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "calibration: percentile must be in (0, 100], got %g", p->percentile);
    return PTQ_OK;
}

ptq_status ptq_calib_compute(ptq_ctx *ctx, const ptq_calib_params *p, const ptq_observer *obs, ptq_calib_range *out)
{
    if (!p || !obs || !out)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "calibration: params, observer and output must not be NULL");
    memset(out, 0, sizeof *out);
    PTQ_TRY_RET(ptq_calib_params_check(ctx, p));
    const double pct = p->percentile == 0.0 ? PTQ_CALIB_DEFAULT_PERCENTILE : p->percentile;

    ptq_observer_stats st;
    ptq_observer_get_stats(obs, &st);
    const int64_t n_finite = st.count - st.n_nan - st.n_inf;
    if (n_finite <= 0)
        return ptq_fail(ctx, PTQ_ERR_DATA, "calibration: no finite values (%lld seen: %lld NaN, %lld Inf)",
                        (long long)st.count, (long long)st.n_nan, (long long)st.n_inf);
    const double n_values = (double)(st.n_zero + st.n_binned + st.n_inf);
    if (st.n_binned == 0) { /* only zeros (and maybe Inf): nothing to scale */
        out->degenerate = 1;
        out->clipped_fraction = (double)st.n_inf / n_values;
        return PTQ_OK;
    }

    const int64_t n_bins = ptq_observer_n_bins(obs);
    const calib_hist h = hist_of(obs, &st);
    const double max_abs = h.top * h.w;

    /* entropy and mse search in O(bins^2): at most the default resolution,
     * an archive with more bins regrouped first exactly as a default-bin
     * observer of the same range would have counted */
    const int64_t group = n_bins > PTQ_OBSERVER_DEFAULT_BINS ? n_bins / PTQ_OBSERVER_DEFAULT_BINS : 1;
    const int64_t *search = h.bins;
    const int64_t n_search = (h.n + group - 1) / group;
    int64_t *coarse = NULL;
    if (group > 1 && (p->method == PTQ_CALIB_ENTROPY || p->method == PTQ_CALIB_MSE)) {
        if (!(coarse = calloc((size_t)n_search, sizeof *coarse)))
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "calibration: out of memory");
        for (int64_t k = 0; k < h.n; k++)
            coarse[k / group] += h.bins[k];
        search = coarse;
    }
    double a = 0.0; /* amax / w */
    int64_t i = 0;
    ptq_status s = PTQ_OK;
    switch (p->method) {
    case PTQ_CALIB_MINMAX:
        a = h.top;
        break;
    case PTQ_CALIB_ENTROPY:
        s = ptq_calib_kl_choose(ctx, search, n_search, p->format, &i);
        a = (double)(i * group);
        break;
    case PTQ_CALIB_PERCENTILE:
        a = percentile_units(&h, &st, pct);
        break;
    case PTQ_CALIB_MSE:
        ptq_calib_mse_choose(search, n_search, p->format, &i);
        a = (double)(i * group);
        break;
    }
    free(coarse);
    if (s != PTQ_OK)
        return s;
    out->amax = p->method == PTQ_CALIB_MINMAX ? max_abs : a * h.w;
    if (out->amax > FLT_MAX) /* a bin edge past max|x| near float's limit: float32's largest value, >= max|x| */
        out->amax = FLT_MAX;
    /* a float32 (a percentile within a bin is none by itself), as the range files carry it: the scale below,
     * rounded to float32, is then the quotient a runtime derives from that amax in float (onnxruntime's TensorRT
     * EP reads the flatbuffers table with stof, TensorRT divides by 127) */
    out->amax = (double)(float)out->amax;
    a = out->amax / h.w;
    out->scale = out->amax / ptq_qformat_max(p->format);
    out->clipped_fraction = ((double)st.n_inf + count_above(&h, a)) / n_values;
    out->zero_fraction = zero_fraction(&h, &st, out->scale, p->format);
    return PTQ_OK;
}

double ptq_calib_zero_fraction(const ptq_observer *obs, double scale, ptq_qformat f)
{
    ptq_observer_stats st;
    ptq_observer_get_stats(obs, &st);
    const calib_hist h = hist_of(obs, &st);
    return zero_fraction(&h, &st, scale, f);
}

void ptq_calib_clip_range(const ptq_observer *obs, double amax, float *lo, float *hi)
{
    ptq_observer_stats os;
    ptq_observer_get_stats(obs, &os);
    const double lo_clip = (double)os.min > -amax ? (double)os.min : -amax;
    const double hi_clip = (double)os.max < amax ? (double)os.max : amax;
    *lo = (float)(lo_clip < 0 ? lo_clip : 0.0); /* widened to hold 0, as compute_scale_zp does */
    *hi = (float)(hi_clip > 0 ? hi_clip : 0.0);
}
