/* Reference inference BatchNormalization (ONNX): y = scale * (x - mean) /
 * sqrt(var + eps) + bias per channel, in double. The spec kernels/cpu/batchnorm.c
 * is checked against in tests/parity_pool.c. InstanceNormalization, the statistics of each sample's channel, its
 * CPU path too (tests/ops_breadth_test.py against onnxruntime). */
#include <math.h>

#include "kernels/kernels.h"

/* x, y: [n, c, spatial]; scale, bias, mean, var: [c]. */
void ptq_k_batchnorm_ref(int64_t n, int64_t c, int64_t spatial, const float *x, const float *scale,
                         const float *bias, const float *mean, const float *var, float eps, float *y)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t j = 0; j < spatial; j++) {
                const int64_t at = (i * c + ch) * spatial + j;
                const double norm = ((double)x[at] - mean[ch]) / sqrt((double)var[ch] + (double)eps);
                y[at] = (float)(norm * scale[ch] + bias[ch]);
            }
}

/* x, y: [n, c, spatial]; scale, bias: [c]: GroupNormalization with a group a channel (the same sums, in the same
 * order). */
void ptq_k_instancenorm_ref(int64_t n, int64_t c, int64_t spatial, const float *x, const float *scale,
                            const float *bias, float eps, float *y)
{
    ptq_k_groupnorm_ref(n, c, 1, spatial, 1, x, scale, bias, eps, y);
}
