/* Reference normalisations ptq_k_instancenorm_ref's neighbours: GroupNormalization, its CPU path too, the statistics
 * in double as InstanceNormalization's (a NaN in a group makes the group's outputs NaN). Covered by
 * tests/ops_norm_test.py (onnxruntime) and the ONNX conformance run. */
#include <math.h>
#include <stdint.h>

#include "kernels/kernels.h"

void ptq_k_groupnorm_ref(int64_t n, int64_t groups, int64_t per_group, int64_t spatial, int per_channel,
                         const float *x, const float *scale, const float *bias, float eps, float *y)
{
    const int64_t len = per_group * spatial; /* a group's channels are contiguous */
    for (int64_t i = 0; i < n * groups; i++) {
        const float *xs = x + i * len;
        float *ys = y + i * len;
        const int64_t g = i % groups;
        double sum = 0.0, sq = 0.0;
        for (int64_t j = 0; j < len; j++)
            sum += xs[j];
        const double mean = len > 0 ? sum / (double)len : 0.0;
        for (int64_t j = 0; j < len; j++)
            sq += ((double)xs[j] - mean) * ((double)xs[j] - mean);
        const double inv_std = 1.0 / sqrt((len > 0 ? sq / (double)len : 0.0) + (double)eps);
        for (int64_t j = 0; j < len; j++) {
            const int64_t at = per_channel ? g * per_group + j / spatial : g;
            ys[j] = (float)(((double)xs[j] - mean) * inv_std * scale[at] + bias[at]);
        }
    }
}
