/* Fast CPU inference BatchNormalization: one per-channel factor
 * scale/sqrt(var+eps), then a vectorisable (x - mean)*a + bias loop per
 * plane, planes over the CPU pool. Mirrors kernels/ref/batchnorm.c;
 * checked against it in tests/parity_pool.c. */
#include <math.h>

#include "core/parallel.h"
#include "kernels/kernels.h"

enum { BN_PARALLEL_MIN = 1 << 15 /* elements below which one thread is faster */ };

typedef struct bn_job {
    int64_t c, spatial;
    const float *x, *scale, *bias, *mean, *var;
    float eps;
    float *y;
} bn_job;

/* Planes [begin, end) of [n*c] planes of `spatial` elements. */
static void bn_planes(void *arg, int64_t begin, int64_t end, int worker)
{
    const bn_job *j = arg;
    for (int64_t plane = begin; plane < end; plane++) {
        const int64_t ch = plane % j->c;
        const float a = (float)((double)j->scale[ch] / sqrt((double)j->var[ch] + (double)j->eps));
        const float m = j->mean[ch], b = j->bias[ch];
        const float *xp = j->x + plane * j->spatial;
        float *yp = j->y + plane * j->spatial;
        for (int64_t k = 0; k < j->spatial; k++)
            yp[k] = (xp[k] - m) * a + b;
    }
}

/* x, y: [n, c, spatial]; scale, bias, mean, var: [c]. x == y allowed. */
void ptq_k_batchnorm_cpu(int64_t n, int64_t c, int64_t spatial, const float *x, const float *scale,
                         const float *bias, const float *mean, const float *var, float eps, float *y)
{
    bn_job job = {c, spatial, x, scale, bias, mean, var, eps, y};
    int64_t grain = n * c * spatial >= BN_PARALLEL_MIN ? ptq_par_grain(n * c, 4, 1) : n * c;
    ptq_parallel_for(n * c, grain, bn_planes, &job);
}
