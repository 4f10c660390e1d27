/* Fast CPU unary activations: one vectorisable loop per op, split over
 * the CPU pool (core/parallel.h) on large tensors. Same arithmetic as kernels/ref/unary.c,
 * so bit-exact in tests/parity_elementwise.c. */
#include <math.h>

#include "core/parallel.h"
#include "kernels/kernels.h"

enum {
    UN_PARALLEL_MIN = 1 << 15,     /* cheap ops: below this many elements stay on one thread */
    UN_PARALLEL_MIN_EXP = 1 << 12  /* ops calling expf, tanhf, erff, erfcf */
};

#define UN_LOOP(EXPR)                  \
    do {                               \
        for (int64_t i = 0; i < n; i++) { \
            const float v = x[i];      \
            y[i] = (EXPR);             \
        }                              \
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

/* x, y: [n] on this thread. */
static void unary_serial(ptq_unop op, float alpha, float beta, int64_t n, const float *x, float *y)
{
    switch (op) {
    case PTQ_UN_RELU: UN_LOOP(v < 0.0f ? 0.0f : v); break;
    case PTQ_UN_LEAKY_RELU: UN_LOOP(v < 0.0f ? alpha * v : v); break;
    case PTQ_UN_CLIP: UN_LOOP(clip(v, alpha, beta)); break;
    case PTQ_UN_SIGMOID: UN_LOOP(1.0f / (1.0f + expf(-v))); break;
    case PTQ_UN_HARD_SIGMOID: UN_LOOP(clamp01(alpha * v + beta)); break;
    case PTQ_UN_HARD_SWISH: UN_LOOP(v * clamp01(v * (1.0f / 6.0f) + 0.5f)); break;
    case PTQ_UN_TANH: UN_LOOP(tanhf(v)); break;
    case PTQ_UN_ERF: UN_LOOP(erff(v)); break;
    case PTQ_UN_GELU: UN_LOOP(0.5f * v * erfcf(v * -PTQ_GELU_SQRT1_2)); break;
    case PTQ_UN_GELU_TANH:
        UN_LOOP(v / (1.0f + expf(-2.0f * (PTQ_GELU_TANH_K * (v + PTQ_GELU_TANH_C * (v * v * v)))))); break;
    }
}

typedef struct unary_job {
    ptq_unop op;
    float alpha, beta;
    const float *x;
    float *y;
} unary_job;

static void unary_piece(void *arg, int64_t begin, int64_t end, int worker)
{
    const unary_job *j = arg;
    unary_serial(j->op, j->alpha, j->beta, end - begin, j->x + begin, j->y + begin);
}

/* x, y: [n]; x == y allowed. */
void ptq_k_unary_cpu(ptq_unop op, float alpha, float beta, int64_t n, const float *x, float *y)
{
    const int64_t min_n = op == PTQ_UN_RELU || op == PTQ_UN_LEAKY_RELU || op == PTQ_UN_CLIP ||
                                  op == PTQ_UN_HARD_SIGMOID || op == PTQ_UN_HARD_SWISH
                              ? UN_PARALLEL_MIN
                              : UN_PARALLEL_MIN_EXP;
    unary_job job = {op, alpha, beta, x, y};
    ptq_parallel_for(n, ptq_par_grain(n, 4, min_n), unary_piece, &job);
}
