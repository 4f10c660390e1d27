/* Reference unary activations (Relu, LeakyRelu, Clip, Sigmoid, HardSigmoid,
 * HardSwish, Tanh, Gelu exact and tanh) and Erf as ONNX defines them, NaN
 * passed through as numpy does; Gelu in forms that do not cancel for x < 0.
 * Sigmoid's and Gelu (tanh)'s exp is kernels/exp_poly.h's, which the CPU kernels run on vectors.
 * The spec kernels/cpu/unary.c is checked against in tests/parity_elementwise.c. */
#include <math.h>

#include "kernels/exp_poly.h"
#include "kernels/kernels.h"

static float unop(ptq_unop op, float alpha, float beta, float x)
{
    float t;
    switch (op) {
    case PTQ_UN_RELU: return x < 0.0f ? 0.0f : x;
    case PTQ_UN_LEAKY_RELU: return x < 0.0f ? alpha * x : x;
    case PTQ_UN_CLIP:
        t = x < alpha ? alpha : x;
        return t > beta ? beta : t; /* min > max gives max, as ONNX says */
    case PTQ_UN_SIGMOID: return ptq_sigmoid_poly(x);
    case PTQ_UN_HARD_SIGMOID:
        t = alpha * x + beta;
        t = t > 1.0f ? 1.0f : t;
        return t < 0.0f ? 0.0f : t;
    case PTQ_UN_HARD_SWISH:
        t = x * (1.0f / 6.0f) + 0.5f;
        t = t > 1.0f ? 1.0f : t;
        return x * (t < 0.0f ? 0.0f : t);
    case PTQ_UN_TANH: return tanhf(x);
    case PTQ_UN_ERF: return erff(x);
    case PTQ_UN_GELU: return 0.5f * x * erfcf(x * -PTQ_GELU_SQRT1_2);
    case PTQ_UN_GELU_TANH: return ptq_gelu_tanh_poly(x);
    }
    return x;
}

/* x, y: [n]; x == y allowed. */
void ptq_k_unary_ref(ptq_unop op, float alpha, float beta, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = unop(op, alpha, beta, x[i]);
}
