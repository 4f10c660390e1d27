/* Fast CPU inference BatchNormalization: one per-channel factor
 * scale/sqrt(var+eps), then a vectorisable (x - mean)*a + bias loop per
 * plane, planes over OpenMP threads. Mirrors kernels/ref/batchnorm.c;
 * checked against it in tests/parity_pool.c. */
#include <math.h>

#include "kernels/kernels.h"

enum { BN_PARALLEL_MIN = 1 << 15 /* elements below which one thread is faster */ };

/* x, y: [n, c, spatial]; scale, bias, mean, var: [c]. x == y allowed. */
void ptq_k_batchnorm_cpu(int64_t n, int64_t c, int64_t spatial, const float *x, const float *scale,
                         const float *bias, const float *mean, const float *var, float eps, float *y)
{
    const int par = n * c * spatial >= BN_PARALLEL_MIN;
#pragma omp parallel for schedule(static) if (par)
    for (int64_t plane = 0; plane < n * c; plane++) {
        const int64_t ch = plane % c;
        const float a = (float)((double)scale[ch] / sqrt((double)var[ch] + (double)eps));
        const float m = mean[ch], b = bias[ch];
        const float *xp = x + plane * spatial;
        float *yp = y + plane * spatial;
        for (int64_t j = 0; j < spatial; j++)
            yp[j] = (xp[j] - m) * a + b;
    }
}
