/* Parity of kernels/cpu/observe.c with kernels/ref/observe.c: stats and
 * histograms on seeded data with zeros, -0, NaN, Inf and subnormals, sizes
 * from 0 to 1M+, bin counts 2048..65536, ranges whose scale needs double,
 * and pool sizes 1, 2 and 5; Relu-like data whose zero extreme's sign
 * depends on the zeros seen. Integer counts and min/max must be bit-exact. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "kernels/kernels.h"
#include "testlib.h"


static int same_stats(const ptq_observe_stats *a, const ptq_observe_stats *b)
{
    return a->count == b->count && a->n_zero == b->n_zero && a->n_nan == b->n_nan && a->n_inf == b->n_inf &&
           memcmp(&a->min, &b->min, sizeof a->min) == 0 && memcmp(&a->max, &b->max, sizeof a->max) == 0;
}

/* The exponent e with every finite |x| < 2^e, as the observer picks it. */
static int range_exponent(const float *x, int64_t n)
{
    float amax = 0.0f;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(x[i]))
            amax = fmaxf(amax, fabsf(x[i]));
    int e = 0;
    frexpf(amax, &e);
    return e;
}

typedef struct range_case {
    float amax;
    int extra_e; /* bins over a range 2^extra_e wider than needed */
} range_case;

int main(void)
{
    const int saved = ptq_par_workers();
    static const int64_t sizes[] = {0, 1, 2, 3, 7, 17, 255, 1000, 4097, 32767, 32768, 65537, 300001, (1 << 20) + 3};
    static const int64_t bin_counts[] = {2048, 4096, 65536};
    static const range_case ranges[] = {{1.0f, 0}, {6.0f, 3}, {1e30f, 0}, {3e38f, 0}, {1e-30f, 0}, {1e-36f, 1}, {1e-39f, 0}};
    static const int pools[] = {1, 2, 5};
    const int64_t n_max = (1 << 20) + 3;
    float *x = malloc(sizeof(float) * (size_t)n_max);
    int64_t *h_ref = malloc(sizeof(int64_t) * 65536), *h_cpu = malloc(sizeof(int64_t) * 65536);
    int64_t *g_ref = malloc(sizeof(int64_t) * 65536), *g_cpu = malloc(sizeof(int64_t) * 65536);
    int n_fused = 0, n_over_cases = 0;
    if (!x || !h_ref || !h_cpu || !g_ref || !g_cpu) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    int n_cases = 0, n_double_scale = 0;
    test_rand_seed(42);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
            const int64_t n = sizes[s];
            test_fill_specials(x, n, ranges[r].amax, r % 2 ? 0.3f : 0.01f);
            const int e = range_exponent(x, n) + ranges[r].extra_e;
            ptq_observe_stats ref, cpu;
            ptq_k_observe_stats_ref(x, n, &ref);
            for (size_t b = 0; b < sizeof bin_counts / sizeof bin_counts[0]; b++) {
                const int64_t n_bins = bin_counts[b];
                int log2_bins = 0;
                while (((int64_t)1 << log2_bins) < n_bins)
                    log2_bins++;
                const double scale = ldexp(1.0, log2_bins - e);
                n_double_scale += n > 0 && scale > (double)FLT_MAX;
                for (int64_t i = 0; i < n_bins; i++) /* both add into the same prior counts */
                    h_ref[i] = h_cpu[i] = (int64_t)(i * 7 % 13);
                ptq_k_observe_hist_ref(x, n, scale, n_bins, h_ref);
                for (size_t p = 0; p < sizeof pools / sizeof pools[0]; p++) {
                    ptq_par_set_workers(pools[p]);
                    ptq_k_observe_stats_cpu(x, n, &cpu);
                    CHECK_MSG(same_stats(&cpu, &ref), "stats: n %lld amax %g workers %d", (long long)n,
                              ranges[r].amax, pools[p]);
                    for (int64_t i = 0; i < n_bins; i++)
                        h_cpu[i] = (int64_t)(i * 7 % 13);
                    ptq_k_observe_hist_cpu(x, n, scale, n_bins, h_cpu);
                    CHECK_MSG(memcmp(h_cpu, h_ref, sizeof(int64_t) * (size_t)n_bins) == 0,
                              "hist: n %lld amax %g e %d bins %lld workers %d", (long long)n, ranges[r].amax, e,
                              (long long)n_bins, pools[p]);
                    n_cases++;
                    /* the fused pass at the full range and at a quarter of it (values left
                     * over), and the pass that bins those left-over values */
                    for (int k = 0; k < 2 && n > 0; k++) {
                        const float limit = ldexpf(1.0f, e - 2 * k);
                        const double sc = ldexp(1.0, log2_bins - (e - 2 * k));
                        ptq_observe_stats fs_ref, fs_cpu;
                        int64_t over_ref = -1, over_cpu = -2;
                        for (int64_t i = 0; i < n_bins; i++)
                            g_ref[i] = g_cpu[i] = (int64_t)(i * 5 % 11);
                        ptq_k_observe_fused_ref(x, n, sc, limit, n_bins, g_ref, &fs_ref, &over_ref);
                        ptq_k_observe_fused_cpu(x, n, sc, limit, n_bins, g_cpu, &fs_cpu, &over_cpu);
                        CHECK_MSG(same_stats(&fs_cpu, &fs_ref) && same_stats(&fs_ref, &ref) && over_cpu == over_ref &&
                                      memcmp(g_cpu, g_ref, sizeof(int64_t) * (size_t)n_bins) == 0,
                                  "fused: n %lld amax %g e %d limit 2^%d bins %lld workers %d", (long long)n,
                                  ranges[r].amax, e, e - 2 * k, (long long)n_bins, pools[p]);
                        n_over_cases += over_ref > 0;
                        n_fused++;
                    }
                    const float lo = ldexpf(1.0f, e - 2);
                    for (int64_t i = 0; i < n_bins; i++)
                        g_ref[i] = g_cpu[i] = (int64_t)(i * 3 % 7);
                    ptq_k_observe_hist_from_ref(x, n, scale, lo, n_bins, g_ref);
                    ptq_k_observe_hist_from_cpu(x, n, scale, lo, n_bins, g_cpu);
                    CHECK_MSG(memcmp(g_cpu, g_ref, sizeof(int64_t) * (size_t)n_bins) == 0,
                              "hist_from: n %lld amax %g e %d bins %lld workers %d", (long long)n, ranges[r].amax, e,
                              (long long)n_bins, pools[p]);
                }
            }
            /* the ref itself: counts add up, min/max are finite extremes */
            int64_t binned = 0;
            for (int64_t i = 0; i < n; i++)
                binned += isfinite(x[i]) && x[i] != 0.0f;
            CHECK(ref.count == n && ref.count - ref.n_zero - ref.n_nan - ref.n_inf == binned);
            CHECK(n == 0 || ref.n_nan + ref.n_inf == n || (isfinite(ref.min) && isfinite(ref.max) && ref.min <= ref.max));
        }
    }
    /* a zero extreme's sign: Relu-like data (>= 0, or <= 0 negated) whose zeros are all +0, all -0 or both, every
     * element in the fused pass's vector blocks or some in its tail */
    static const int64_t relu_sizes[] = {17, 1024, 65537};
    for (size_t s = 0; s < sizeof relu_sizes / sizeof relu_sizes[0]; s++)
        for (int zeros = 0; zeros < 3; zeros++)
            for (int side = 0; side < 2; side++) {
                const int64_t n = relu_sizes[s];
                test_fill_uniform(x, n, 0.0f, 1.0f);
                for (int64_t i = 0; i < n; i++) {
                    if (i % 3 == 0)
                        x[i] = zeros == 0 ? 0.0f : zeros == 1 ? -0.0f : (i % 2 ? -0.0f : 0.0f);
                    x[i] = side ? -x[i] : x[i];
                }
                ptq_observe_stats ref, fs_ref, fs_cpu;
                int64_t over_ref = -1, over_cpu = -2;
                ptq_k_observe_stats_ref(x, n, &ref);
                for (size_t p = 0; p < 2; p++) {
                    ptq_par_set_workers(pools[p]);
                    for (int64_t i = 0; i < 2048; i++)
                        g_ref[i] = g_cpu[i] = 0;
                    ptq_k_observe_fused_ref(x, n, 2048.0, 1.0f, 2048, g_ref, &fs_ref, &over_ref);
                    ptq_k_observe_fused_cpu(x, n, 2048.0, 1.0f, 2048, g_cpu, &fs_cpu, &over_cpu);
                    CHECK_MSG(same_stats(&fs_cpu, &fs_ref) && same_stats(&fs_ref, &ref) && over_cpu == over_ref &&
                                  memcmp(g_cpu, g_ref, sizeof(int64_t) * 2048) == 0,
                              "fused, signed zeros: n %lld zeros %d side %d workers %d", (long long)n, zeros, side,
                              pools[p]);
                }
            }
    /* tiny ranges (1e-36 and subnormal data) need scales beyond float: the cpu kernel's double path */
    CHECK(n_double_scale > 0);
    CHECK(n_over_cases > 0);
    printf("parity_observe: %d kernel comparisons, %d sizes x bin counts with a scale beyond float; "
           "%d fused-pass comparisons, %d with values beyond the range\n",
           n_cases, n_double_scale, n_fused, n_over_cases);
    ptq_par_set_workers(saved);
    free(x);
    free(h_ref);
    free(h_cpu);
    free(g_ref);
    free(g_cpu);
    return test_done("parity_observe");
}
