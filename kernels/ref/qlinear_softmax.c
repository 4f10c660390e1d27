/* onnxruntime's QLinearSoftmax (com.microsoft; its CPU kernel in 1.32,
 * contrib_ops/cpu/quantization/qlinear_softmax.cc, which its Q/DQ fusion runs
 * for DequantizeLinear -> Softmax -> QuantizeLinear), rebuilt from what it
 * computes: exp from a 256-entry float table, float sums in order, the output
 * scale taken as floor(1 / y_scale). quant/fake_quant.c simulates such a
 * Softmax with it. Covered by tests/test_qlinear_softmax.c (hand-worked
 * values) and tests/qlinear_softmax_test.py (onnxruntime itself). */
#include <float.h>
#include <math.h>

#include "kernels/kernels.h"

void ptq_k_qlinear_softmax_table_ref(float x_scale, int64_t len, float *table)
{
    /* the largest entry keeps len of them (and 5 nats more) under FLT_MAX; the log is taken in float */
    const double shift = (double)logf(FLT_MAX / (float)len);
    const double bias = fmax(0.0, shift - 5.0) / (double)x_scale;
    for (int i = 0; i < 256; i++) /* onnxruntime's entry i is exp((i - 255 + bias) * x_scale), i = 255 - d */
        table[255 - i] = (float)exp(((double)i - 255.0 + bias) * (double)x_scale);
}

void ptq_k_qlinear_softmax_ref(int64_t outer, int64_t len, int64_t inner, const uint8_t *x, float x_scale,
                               float y_scale, int32_t y_zp, uint8_t *y)
{
    float table[256];
    if (len <= 0)
        return;
    ptq_k_qlinear_softmax_table_ref(x_scale, len, table);
    const double y_mult = (double)floorf(1.0f / y_scale);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            const uint8_t *xs = x + o * len * inner + i;
            uint8_t *ys = y + o * len * inner + i;
            int top = 0;
            for (int64_t l = 0; l < len; l++)
                if (xs[l * inner] > top)
                    top = xs[l * inner];
            float sum = 0.0f;
            for (int64_t l = 0; l < len; l++)
                sum += table[top - xs[l * inner]];
            for (int64_t l = 0; l < len; l++) {
                /* rint: nearbyint in the default rounding mode, half to even; the clamp in double */
                const double r = rint((double)table[top - xs[l * inner]] * y_mult / (double)sum);
                ys[l * inner] = r >= (double)(255 - y_zp) ? (uint8_t)255 : (uint8_t)((int32_t)r + y_zp);
            }
        }
    }
}
