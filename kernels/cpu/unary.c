/* Fast CPU unary activations: one vectorisable loop per op, split over
 * OpenMP threads on large tensors. Same arithmetic as kernels/ref/unary.c,
 * so bit-exact in tests/parity_elementwise.c. */
#include <math.h>

#include "kernels/kernels.h"

enum {
    UN_PARALLEL_MIN = 1 << 15,     /* cheap ops: below this many elements stay on one thread */
    UN_PARALLEL_MIN_EXP = 1 << 12  /* ops calling expf/tanhf */
};

#define UN_LOOP(min_n, EXPR)                                                   \
    do {                                                                       \
        const int par = n >= (min_n);                                          \
        _Pragma("omp parallel for schedule(static) if (par)")                  \
        for (int64_t i = 0; i < n; i++) {                                      \
            const float v = x[i];                                              \
            y[i] = (EXPR);                                                     \
        }                                                                      \
    } while (0)

/* hard sigmoid clamp; comparisons (not fminf/fmaxf) so NaN passes through */
static inline float clamp01(float t)
{
    t = t > 1.0f ? 1.0f : t;
    return t < 0.0f ? 0.0f : t;
}

static inline float clip(float v, float lo, float hi)
{
    float t = v < lo ? lo : v;
    return t > hi ? hi : t;
}

/* x, y: [n]; x == y allowed. */
void ptq_k_unary_cpu(ptq_unop op, float alpha, float beta, int64_t n, const float *x, float *y)
{
    switch (op) {
    case PTQ_UN_RELU: UN_LOOP(UN_PARALLEL_MIN, v < 0.0f ? 0.0f : v); break;
    case PTQ_UN_LEAKY_RELU: UN_LOOP(UN_PARALLEL_MIN, v < 0.0f ? alpha * v : v); break;
    case PTQ_UN_CLIP: UN_LOOP(UN_PARALLEL_MIN, clip(v, alpha, beta)); break;
    case PTQ_UN_SIGMOID: UN_LOOP(UN_PARALLEL_MIN_EXP, 1.0f / (1.0f + expf(-v))); break;
    case PTQ_UN_HARD_SIGMOID: UN_LOOP(UN_PARALLEL_MIN, clamp01(alpha * v + beta)); break;
    case PTQ_UN_HARD_SWISH: UN_LOOP(UN_PARALLEL_MIN, v * clamp01(v * (1.0f / 6.0f) + 0.5f)); break;
    case PTQ_UN_TANH: UN_LOOP(UN_PARALLEL_MIN_EXP, tanhf(v)); break;
    }
}
