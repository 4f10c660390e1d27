/* Fast CPU observer passes: the batch is cut into pieces on the CPU pool
 * (core/parallel.h); stats combine per worker, histograms count into
 * OBS_COPIES private copies per worker, summed at the end. Integer sums and
 * order-free min/max, so bit-exact with kernels/ref/observe.c for any thread
 * count (tests/parity_observe.c). */
#include <math.h>
#include <stdlib.h>

#include "core/parallel.h"
#include "kernels/kernels.h"

enum {
    OBS_PARALLEL_MIN = 1 << 15, /* elements below which a pass stays on one thread */
    /* histogram copies a pass counts into in turn (a power of two): a run of values in one bin (a Relu's zeros)
     * is then that many independent chains of increments, not one chain through one counter */
    OBS_COPIES = 4
};

typedef struct stats_job {
    const float *x;
    ptq_observe_stats *part; /* [workers] */
} stats_job;

static void stats_piece(void *arg, int64_t begin, int64_t end, int worker)
{
    const stats_job *j = arg;
    ptq_observe_stats s;
    ptq_k_observe_stats_ref(j->x + begin, end - begin, &s);
    ptq_observe_stats_combine(&j->part[worker], &s);
}

void ptq_k_observe_stats_cpu(const float *x, int64_t n, ptq_observe_stats *s)
{
    const int n_workers = ptq_par_workers();
    ptq_observe_stats *part = n >= OBS_PARALLEL_MIN && n_workers > 1 ? malloc((size_t)n_workers * sizeof *part) : NULL;
    if (!part) {
        ptq_k_observe_stats_ref(x, n, s);
        return;
    }
    for (int w = 0; w < n_workers; w++)
        ptq_observe_stats_clear(&part[w]);
    stats_job job = {x, part};
    ptq_parallel_for(n, ptq_par_grain(n, 4, OBS_PARALLEL_MIN), stats_piece, &job);
    ptq_observe_stats_clear(s);
    for (int w = 0; w < n_workers; w++)
        ptq_observe_stats_combine(s, &part[w]);
    free(part);
}

/* Bin of a finite |v| > 0 (a), floor(a * scale). When scale is a float the
 * product is taken in float, which gives the same bins: a product >= 1 is
 * a * 2^k in float's normal range, so exact; one below 1 may round when it
 * is subnormal but stays below 1, so truncates to 0 like the exact value.
 * Larger scales (ranges below 2^(log2(n_bins) - 127)) use double, exact as
 * in the ref. */
typedef struct binner {
    double scale;
    float scale_f;
    int in_double;
} binner;

static binner binner_make(double scale)
{
    binner b = {scale, (float)scale, scale > 0x1p127};
    return b;
}

static inline int64_t bin_of(const binner *b, float a)
{
    return b->in_double ? (int64_t)((double)a * b->scale) : (int64_t)(a * b->scale_f);
}

/* finite |v| >= lo (lo > 0, or 0 meaning every nonzero); element i counts into copy i % OBS_COPIES */
static void hist_serial(const float *x, int64_t n, const binner *b, float lo, int64_t *const *hist)
{
    for (int64_t i = 0; i < n; i++) {
        const float a = fabsf(x[i]);
        const int ok = a > 0.0f && a >= lo && a <= 0x1.fffffep127f; /* NaN fails all */
        hist[i & (OBS_COPIES - 1)][bin_of(b, ok ? a : 0.0f)] += ok; /* no branch: zeros come at random */
    }
}

/* One read: stats, the |v| < limit binned, the rest of the finite nonzero counted. */
static void fused_serial(const float *x, int64_t n, const binner *b, float limit, int64_t *const *hist,
                         ptq_observe_stats *s, int64_t *n_over)
{
    float mn = INFINITY, mx = -INFINITY;
    int64_t n_zero = 0, n_nan = 0, n_inf = 0, over = 0;
    int neg_zero = 0, pos_zero = 0;
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i], a = fabsf(v);
        if (a < limit) { /* finite: NaN and Inf fail, limit may be +Inf */
            /* no branch on zero (ReLU outputs are zero at random): a zero adds 0 to bin 0 */
            const int z = a == 0.0f, neg = signbit(v) != 0;
            hist[i & (OBS_COPIES - 1)][bin_of(b, a)] += !z;
            n_zero += z;
            neg_zero |= z & neg;
            pos_zero |= z & !neg;
        } else if (a != a) {
            n_nan++;
            continue;
        } else if (a == INFINITY) {
            n_inf++;
            continue;
        } else {
            over++;
        }
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
    }
    /* -0 orders below +0 (kernels/ref/observe.c): a zero extreme takes the sign that makes it so */
    if (mn == 0.0f)
        mn = neg_zero ? -0.0f : 0.0f;
    if (mx == 0.0f)
        mx = pos_zero ? 0.0f : -0.0f;
    s->count = n;
    s->n_zero = n_zero;
    s->n_nan = n_nan;
    s->n_inf = n_inf;
    s->min = mn;
    s->max = mx;
    *n_over = over;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* hist_serial 16 elements at a time: the bins and what counts in vectors, the counts one at a time. */
__attribute__((target("avx512f"))) static void hist_512(const float *x, int64_t n, const binner *b, float lo,
                                                        int64_t *const *hist)
{
    const __m512 scale = _mm512_set1_ps(b->scale_f), vlo = _mm512_set1_ps(lo), zero = _mm512_setzero_ps();
    const __m512 big = _mm512_set1_ps(0x1.fffffep127f);
    int32_t bin[16];
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 a = _mm512_abs_ps(_mm512_loadu_ps(x + i));
        const __mmask16 ok = _mm512_cmp_ps_mask(a, zero, _CMP_GT_OQ) & _mm512_cmp_ps_mask(a, vlo, _CMP_GE_OQ) &
                             _mm512_cmp_ps_mask(a, big, _CMP_LE_OQ); /* NaN fails all */
        _mm512_storeu_si512(bin, _mm512_cvttps_epi32(_mm512_mul_ps(_mm512_maskz_mov_ps(ok, a), scale)));
        for (int t = 0; t < 16; t++)
            hist[t & (OBS_COPIES - 1)][bin[t]] += ok >> t & 1;
    }
    hist_serial(x + i, n - i, b, lo, hist);
}

/* fused_serial 16 elements at a time where all 16 are below the limit (every element, in a typical activation):
 * the bins, zeros, signs, min and max in vectors, the counts one at a time; other blocks and the tail through
 * fused_serial, and the parts combined as the pool's workers' are. Min and max lane by lane are v < mn ? v : mn
 * as fused_serial takes them, order-free on finite values, and a zero extreme gets its sign from the zeros seen,
 * so the same stats. */
__attribute__((target("avx512f"))) static void fused_512(const float *x, int64_t n, const binner *b, float limit,
                                                         int64_t *const *hist, ptq_observe_stats *s,
                                                         int64_t *n_over)
{
    const __m512 scale = _mm512_set1_ps(b->scale_f), vlim = _mm512_set1_ps(limit), zero = _mm512_setzero_ps();
    const __m512i sign = _mm512_set1_epi32(INT32_MIN);
    __m512 mn = _mm512_set1_ps(INFINITY), mx = _mm512_set1_ps(-INFINITY);
    int64_t n_zero = 0, n_vec = 0, over = 0, part_over;
    int neg_zero = 0, pos_zero = 0;
    int32_t bin[16];
    ptq_observe_stats part;
    ptq_observe_stats_clear(s);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(x + i), a = _mm512_abs_ps(v);
        if (_mm512_cmp_ps_mask(a, vlim, _CMP_LT_OQ) != 0xFFFF) { /* NaN, Inf or over the limit among them */
            fused_serial(x + i, 16, b, limit, hist, &part, &part_over);
            ptq_observe_stats_combine(s, &part);
            over += part_over;
            continue;
        }
        const __mmask16 z = _mm512_cmp_ps_mask(a, zero, _CMP_EQ_OQ);
        if (z) {
            const __mmask16 neg = _mm512_test_epi32_mask(_mm512_castps_si512(v), sign);
            n_zero += __builtin_popcount(z);
            neg_zero |= (z & neg) != 0;
            pos_zero |= (z & ~neg & 0xFFFF) != 0;
        }
        _mm512_storeu_si512(bin, _mm512_cvttps_epi32(_mm512_mul_ps(a, scale)));
        for (int t = 0; t < 16; t++) /* a zero adds 0 to bin 0 */
            hist[t & (OBS_COPIES - 1)][bin[t]] += !(z >> t & 1);
        mn = _mm512_min_ps(v, mn);
        mx = _mm512_max_ps(v, mx);
        n_vec += 16;
    }
    if (n_vec > 0) {
        ptq_observe_stats_clear(&part);
        part.count = n_vec;
        part.n_zero = n_zero;
        part.min = _mm512_reduce_min_ps(mn);
        part.max = _mm512_reduce_max_ps(mx);
        if (part.min == 0.0f)
            part.min = neg_zero ? -0.0f : 0.0f;
        if (part.max == 0.0f)
            part.max = pos_zero ? 0.0f : -0.0f;
        ptq_observe_stats_combine(s, &part);
    }
    fused_serial(x + i, n - i, b, limit, hist, &part, &part_over);
    ptq_observe_stats_combine(s, &part);
    *n_over = over + part_over;
}

static int have_512(void)
{
    return __builtin_cpu_supports("avx512f");
}
#else
static void hist_512(const float *x, int64_t n, const binner *b, float lo, int64_t *const *hist)
{
    hist_serial(x, n, b, lo, hist);
}

static void fused_512(const float *x, int64_t n, const binner *b, float limit, int64_t *const *hist,
                      ptq_observe_stats *s, int64_t *n_over)
{
    fused_serial(x, n, b, limit, hist, s, n_over);
}

static int have_512(void)
{
    return 0;
}
#endif

typedef struct hist_job {
    const float *x;
    binner b;
    float lo, limit;          /* hist_from: lo; fused: limit */
    int fused;
    int64_t **hist;           /* [workers * OBS_COPIES] of [n_bins]; worker 0's first copy is the caller's */
    ptq_observe_stats *part;  /* fused: [workers] */
    int64_t *over;            /* fused: [workers] */
} hist_job;

static void hist_piece(void *arg, int64_t begin, int64_t end, int worker)
{
    const hist_job *j = arg;
    int64_t *const *h = j->hist + (size_t)worker * OBS_COPIES;
    const int wide = !j->b.in_double && have_512(); /* in_double: the bins need double products */
    if (!j->fused) {
        (wide ? hist_512 : hist_serial)(j->x + begin, end - begin, &j->b, j->lo, h);
        return;
    }
    ptq_observe_stats s;
    int64_t over;
    (wide ? fused_512 : fused_serial)(j->x + begin, end - begin, &j->b, j->limit, h, &s, &over);
    ptq_observe_stats_combine(&j->part[worker], &s);
    j->over[worker] += over;
}

/* Runs job over x on the pool with private histograms per worker, or on
 * the caller alone when that pays better; sums into the caller's hist. */
static void hist_run(hist_job *j, int64_t n, int64_t n_bins, int64_t *hist, ptq_observe_stats *s, int64_t *n_over)
{
    const int n_workers = ptq_par_workers();
    ptq_observe_stats part1;
    int64_t over1 = 0, *hists1[OBS_COPIES];
    /* private histograms pay off when summing them (copies x workers x bins)
     * costs less than a pass over the batch; they also stay below its size */
    int pooled = n >= OBS_PARALLEL_MIN && n_workers > 1 && n >= n_bins * n_workers * OBS_COPIES;
    const int copies = n >= n_bins * OBS_COPIES ? OBS_COPIES : 1; /* one: every copy is the caller's */
    const size_t n_priv = (size_t)(pooled ? n_workers : 1) * (size_t)copies - 1;
    int64_t **hists = pooled ? calloc((size_t)n_workers * OBS_COPIES, sizeof *hists) : NULL;
    int64_t *priv = n_priv ? calloc(n_priv * (size_t)n_bins, sizeof *priv) : NULL;
    ptq_observe_stats *part = pooled ? malloc((size_t)n_workers * sizeof *part) : NULL;
    int64_t *over = pooled ? calloc((size_t)n_workers, sizeof *over) : NULL;
    if ((pooled && (!hists || !part || !over)) || (n_priv && !priv)) {
        free(hists);
        free(priv);
        free(part);
        free(over);
        priv = NULL;
        pooled = 0;
    }
    if (!pooled) {
        hists = hists1;
        part = &part1;
        over = &over1;
    }
    const int n_parts = pooled ? n_workers : 1;
    for (int w = 0; w < n_parts; w++)
        ptq_observe_stats_clear(&part[w]);
    for (int c = 0; c < n_parts * OBS_COPIES; c++) { /* copy c of worker c / OBS_COPIES */
        const int k = priv ? c / OBS_COPIES * copies + c % copies : 0;
        hists[c] = k == 0 ? hist : priv + (size_t)(k - 1) * (size_t)n_bins;
    }
    j->hist = hists;
    j->part = part;
    j->over = over;
    if (pooled)
        ptq_parallel_for(n, ptq_par_grain(n, 4, OBS_PARALLEL_MIN), hist_piece, j);
    else
        hist_piece(j, 0, n, 0);
    if (s) {
        ptq_observe_stats_clear(s);
        *n_over = 0;
    }
    for (size_t k = 0; k < (priv ? n_priv : 0); k++)
        for (int64_t b = 0; b < n_bins; b++)
            hist[b] += priv[k * (size_t)n_bins + (size_t)b];
    for (int w = 0; s && w < n_parts; w++) {
        ptq_observe_stats_combine(s, &part[w]);
        *n_over += over[w];
    }
    free(priv);
    if (pooled) {
        free(hists);
        free(part);
        free(over);
    }
}

void ptq_k_observe_hist_cpu(const float *x, int64_t n, double scale, int64_t n_bins, int64_t *hist)
{
    ptq_k_observe_hist_from_cpu(x, n, scale, 0.0f, n_bins, hist);
}

void ptq_k_observe_hist_from_cpu(const float *x, int64_t n, double scale, float lo, int64_t n_bins, int64_t *hist)
{
    hist_job j = {x, binner_make(scale), lo, 0.0f, 0, NULL, NULL, NULL};
    hist_run(&j, n, n_bins, hist, NULL, NULL);
}

void ptq_k_observe_fused_cpu(const float *x, int64_t n, double scale, float limit, int64_t n_bins, int64_t *hist,
                             ptq_observe_stats *s, int64_t *n_over)
{
    hist_job j = {x, binner_make(scale), 0.0f, limit, 1, NULL, NULL, NULL};
    hist_run(&j, n, n_bins, hist, s, n_over);
}
