/* Parity of the CUDA observer passes (kernels/cuda/observe.cu) with
 * kernels/ref/observe.c: stats (counts, min/max bits) and |x| histograms
 * bit-exact on seeded data with zeros, -0, NaN, Inf and subnormals, sizes
 * 0..4M, 2048..65536 bins (shared- and global-memory paths), ranges whose
 * scale needs double, and counts added into a histogram already holding
 * some. Exit 77 without a GPU. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ptq/runtime.h"
#include "testlib.h"

#ifndef PTQ_CUDA

int main(void)
{
    printf("cuda_parity_observe: skipped: ptq was built without CUDA\n");
    return PTQ_TEST_SKIP;
}

#else

#include "kernels/cuda/cuda_kernels.h"


int main(void)
{
    char why[256];
    if (!ptq_cuda_available(why, sizeof why)) {
        printf("cuda_parity_observe: skipped: %s\n", why);
        return PTQ_TEST_SKIP;
    }
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_cuda_dev *dev = NULL;
    if (ptq_cuda_dev_create(&ctx, 0, &dev) != PTQ_OK) {
        fprintf(stderr, "cuda_parity_observe: %s\n", ctx.msg);
        return 1;
    }
    static const int64_t sizes[] = {0, 1, 3, 255, 4097, 65537, 1000003, 4 << 20};
    static const int64_t bin_counts[] = {2048, 4096, 8192, 65536};
    static const float ranges[] = {1.0f, 6.0f, 1e30f, 3e38f, 1e-30f, 1e-39f};
    const int64_t n_max = 4 << 20;
    float *x = malloc(sizeof(float) * (size_t)n_max);
    int64_t *h_ref = malloc(sizeof(int64_t) * 65536);
    unsigned long long *h_dev = malloc(sizeof(unsigned long long) * 65536);
    void *x_dev = NULL, *hist_dev = NULL;
    if (!x || !h_ref || !h_dev || ptq_cuda_alloc(&ctx, dev, sizeof(float) * (size_t)n_max, &x_dev) != PTQ_OK ||
        ptq_cuda_alloc(&ctx, dev, sizeof(unsigned long long) * 65536, &hist_dev) != PTQ_OK) {
        fprintf(stderr, "cuda_parity_observe: out of memory (%s)\n", ctx.msg);
        return 1;
    }
    int n_cases = 0, n_stats_bad = 0, n_hist_bad = 0;
    test_rand_seed(7);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
            const int64_t n = sizes[s];
            test_fill_specials(x, n, ranges[r], r % 2 ? 0.3f : 0.01f);
            CHECK(ptq_cuda_upload(&ctx, dev, x_dev, x, sizeof(float) * (size_t)n) == PTQ_OK);
            ptq_observe_stats ref, got;
            ptq_k_observe_stats_ref(x, n, &ref);
            CHECK(ptq_k_observe_stats_cuda(&ctx, dev, x_dev, n, &got) == PTQ_OK);
            int same = ref.count == got.count && ref.n_zero == got.n_zero && ref.n_nan == got.n_nan &&
                       ref.n_inf == got.n_inf && memcmp(&ref.min, &got.min, sizeof ref.min) == 0 &&
                       memcmp(&ref.max, &got.max, sizeof ref.max) == 0;
            CHECK_MSG(same, "stats n %lld range %g: ref min %a max %a zero %lld nan %lld inf %lld; cuda min %a max %a "
                      "zero %lld nan %lld inf %lld", (long long)n, ranges[r], ref.min, ref.max, (long long)ref.n_zero,
                      (long long)ref.n_nan, (long long)ref.n_inf, got.min, got.max, (long long)got.n_zero,
                      (long long)got.n_nan, (long long)got.n_inf);
            n_stats_bad += !same;
            float amax = fmaxf(-ref.min, ref.max);
            int e = 0;
            frexpf(amax, &e);
            for (size_t b = 0; b < sizeof bin_counts / sizeof bin_counts[0]; b++) {
                const int64_t n_bins = bin_counts[b];
                int log2b = 0;
                while (((int64_t)1 << log2b) < n_bins)
                    log2b++;
                const double scale = ldexp(1.0, log2b - e);
                /* start from the same nonzero counts on both sides */
                for (int64_t i = 0; i < n_bins; i++) {
                    h_ref[i] = i % 7;
                    h_dev[i] = (unsigned long long)(i % 7);
                }
                CHECK(ptq_cuda_upload(&ctx, dev, hist_dev, h_dev, sizeof *h_dev * (size_t)n_bins) == PTQ_OK);
                ptq_k_observe_hist_ref(x, n, scale, n_bins, h_ref);
                CHECK(ptq_k_observe_hist_cuda(&ctx, dev, x_dev, n, scale, n_bins, hist_dev) == PTQ_OK);
                CHECK(ptq_cuda_download(&ctx, dev, h_dev, hist_dev, sizeof *h_dev * (size_t)n_bins) == PTQ_OK);
                int equal = 1;
                for (int64_t i = 0; i < n_bins; i++)
                    equal &= h_ref[i] == (int64_t)h_dev[i];
                CHECK_MSG(equal, "hist n %lld range %g bins %lld differs", (long long)n, ranges[r], (long long)n_bins);
                n_hist_bad += !equal;
                n_cases++;
            }
        }
    printf("cuda_parity_observe: GPU %s: %d histogram cases, %d differ; %d stats cases differ (all must be 0)\n",
           ptq_cuda_dev_name(dev), n_cases, n_hist_bad, n_stats_bad);
    ptq_cuda_release(dev, x_dev);
    ptq_cuda_release(dev, hist_dev);
    ptq_cuda_dev_free(dev);
    free(x);
    free(h_ref);
    free(h_dev);
    return test_done("cuda_parity_observe");
}

#endif
