/* Fast CPU observer passes: the batch is cut into pieces on the CPU pool
 * (core/parallel.h); stats combine per worker, histograms count into one
 * private histogram per worker and are summed at the end. Integer sums and
 * order-free min/max, so bit-exact with kernels/ref/observe.c for any thread
 * count (tests/parity_observe.c). */
#include <math.h>
#include <stdlib.h>

#include "core/parallel.h"
#include "kernels/kernels.h"

enum {
    OBS_PARALLEL_MIN = 1 << 15 /* elements below which a pass stays on one thread */
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

/* x: [n] into hist: [n_bins] (see ptq_k_observe_hist_ref). When scale is a
 * float the product is taken in float, which gives the same bins: a product
 * >= 1 is |v| * 2^k in float's normal range, so exact; one below 1 may round
 * when it is subnormal but stays below 1, so truncates to 0 like the exact
 * value. Larger scales (ranges below 2^(log2(n_bins) - 127)) use double,
 * exact as in the ref. */
static void hist_serial(const float *x, int64_t n, double scale, int64_t *hist)
{
    if (scale <= 0x1p127) {
        const float scale_f = (float)scale;
        for (int64_t i = 0; i < n; i++) {
            const float a = fabsf(x[i]);
            if (a > 0.0f && a <= 0x1.fffffep127f) /* NaN fails both */
                hist[(int64_t)(a * scale_f)]++;
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            const float a = fabsf(x[i]);
            if (a > 0.0f && a <= 0x1.fffffep127f)
                hist[(int64_t)((double)a * scale)]++;
        }
    }
}

typedef struct hist_job {
    const float *x;
    double scale;
    int64_t **hist; /* [workers] of [n_bins]; worker 0 counts into the caller's */
} hist_job;

static void hist_piece(void *arg, int64_t begin, int64_t end, int worker)
{
    const hist_job *j = arg;
    hist_serial(j->x + begin, end - begin, j->scale, j->hist[worker]);
}

void ptq_k_observe_hist_cpu(const float *x, int64_t n, double scale, int64_t n_bins, int64_t *hist)
{
    const int n_workers = ptq_par_workers();
    /* private histograms pay off when summing them (workers x bins) costs
     * less than a pass over the batch; they also stay below its size */
    if (n < OBS_PARALLEL_MIN || n_workers < 2 || n < n_bins * n_workers) {
        hist_serial(x, n, scale, hist);
        return;
    }
    int64_t **hists = calloc((size_t)n_workers, sizeof *hists);
    int64_t *priv = calloc((size_t)(n_workers - 1) * (size_t)n_bins, sizeof *priv);
    if (!hists || !priv) {
        free(hists);
        free(priv);
        hist_serial(x, n, scale, hist);
        return;
    }
    hists[0] = hist;
    for (int w = 1; w < n_workers; w++)
        hists[w] = priv + (size_t)(w - 1) * (size_t)n_bins;
    hist_job job = {x, scale, hists};
    ptq_parallel_for(n, ptq_par_grain(n, 4, OBS_PARALLEL_MIN), hist_piece, &job);
    for (int w = 1; w < n_workers; w++)
        for (int64_t b = 0; b < n_bins; b++)
            hist[b] += hists[w][b];
    free(priv);
    free(hists);
}
