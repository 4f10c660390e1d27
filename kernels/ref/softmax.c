/* Reference softmax over the middle dim of [outer, len, inner]: subtracts
 * the max, exponentiates to float (kernels/exp_poly.h's exp, which
 * kernels/cpu/softmax.c runs on vectors), sums in double. The spec
 * kernels/cpu/softmax.c is checked against in tests/parity_elementwise.c. LogSoftmax likewise, with libm's exp and
 * log (its CPU path too; tests/ops_breadth_test.py against onnxruntime). */
#include <math.h>

#include "kernels/exp_poly.h"
#include "kernels/kernels.h"

/* The largest of len values inner apart (-Inf for none; a NaN is passed over). */
static float strided_max(const float *xs, int64_t len, int64_t inner)
{
    float max = -INFINITY;
    for (int64_t l = 0; l < len; l++)
        if (xs[l * inner] > max)
            max = xs[l * inner];
    return max;
}

/* x, y: [outer, len, inner], row-major. */
void ptq_k_softmax_ref(int64_t outer, int64_t len, int64_t inner, const float *x, float *y)
{
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            const float *xs = x + o * len * inner + i;
            float *ys = y + o * len * inner + i;
            const float max = strided_max(xs, len, inner);
            double sum = 0.0;
            for (int64_t l = 0; l < len; l++)
                sum += ptq_expf_poly(xs[l * inner] - max);
            for (int64_t l = 0; l < len; l++)
                ys[l * inner] = (float)(ptq_expf_poly(xs[l * inner] - max) / sum);
        }
    }
}

/* x, y: [outer, len, inner], row-major. */
void ptq_k_log_softmax_ref(int64_t outer, int64_t len, int64_t inner, const float *x, float *y)
{
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            const float *xs = x + o * len * inner + i;
            float *ys = y + o * len * inner + i;
            const float max = strided_max(xs, len, inner);
            double sum = 0.0;
            for (int64_t l = 0; l < len; l++)
                sum += expf(xs[l * inner] - max);
            const float log_sum = (float)log(sum);
            for (int64_t l = 0; l < len; l++)
                ys[l * inner] = (xs[l * inner] - max) - log_sum;
        }
    }
}
