/* Reference LRN across channels, its CPU path too. Covered by tests/ops_reduce_test.py (onnxruntime) and the ONNX
 * conformance run. */
#include <math.h>
#include <stdint.h>

#include "kernels/kernels.h"

void ptq_k_lrn_ref(int64_t n, int64_t c, int64_t inner, int64_t size, float alpha, float beta, float bias,
                   const float *x, float *y)
{
    const int64_t before = (size - 1) / 2, after = size - 1 - before; /* floor and ceil of (size - 1) / 2 */
    for (int64_t b = 0; b < n; b++)
        for (int64_t ch = 0; ch < c; ch++) {
            const int64_t lo = ch - before > 0 ? ch - before : 0, hi = after < c - 1 - ch ? ch + after : c - 1;
            for (int64_t i = 0; i < inner; i++) {
                double sq = 0.0;
                for (int64_t k = lo; k <= hi; k++) {
                    const double v = x[(b * c + k) * inner + i];
                    sq += v * v;
                }
                const int64_t at = (b * c + ch) * inner + i;
                y[at] = (float)(x[at] / pow((double)bias + (double)alpha / (double)size * sq, (double)beta));
            }
        }
}
