/* Fast CPU unary activations: one vectorisable loop per op, split over
 * the CPU pool (core/parallel.h) on large tensors. Same arithmetic as kernels/ref/unary.c,
 * so bit-exact in tests/parity_elementwise.c, but for Erf (erf_rows: within 1 ulp). */
#include <math.h>
#include <string.h>

#include "core/parallel.h"
#include "kernels/exp_poly.h"
#include "kernels/kernels.h"

enum {
    UN_PARALLEL_MIN = 1 << 15,     /* cheap ops: below this many elements stay on one thread */
    UN_PARALLEL_MIN_EXP = 1 << 12  /* ops calling expf, tanhf, erff, erfcf */
};

#define UN_CLONES __attribute__((target_clones("avx512f", "avx2", "default"), optimize("no-trapping-math")))

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

/* Erf in double, on the CPU's widest vectors (glibc's erff is a scalar call): |x| < 1: x P(x^2); 1 <= |x| < 4:
 * 1 - exp(-x^2) Q(|x|), Q fitting erfc(x) exp(x^2); |x| >= 4: +-1 (erf rounds to 1 in float from 3.92 on). P, Q:
 * Chebyshev interpolants from scripts/erf_coefficients.py (relative errors 9e-13 and 2e-10); exp: kernels/exp_poly.h.
 * Rounded to float, within 1 ulp of erf's correctly rounded value and equal to it on all but 9,911 of the 1.08e9
 * floats in [0, 4.5] (glibc's erff: 63 million differ), and odd, so erf(-0) = -0; NaN passes. 1.89 ns an element of
 * N(0, 1) data on one thread against erff's 5.27 (build/bench/erf_cpu). No FMA contraction (ISO C), so every clone
 * gives the same bits. kernels/ref keeps erff: parity_elementwise allows this one op 1 ulp. */
static const double ERF_SMALL[9] = {
    0.9654687386698673, -0.14053608901553188, 0.019852496688660258, -0.0022854856569336727, 0.00021751716035374902,
    -1.7536824729018507e-05, 1.2233672195978863e-06, -7.557490441753586e-08, 4.13647681291993e-09
};
static const double ERF_BIG[15] = {
    0.2108063640611436, -0.11152102073476088, 0.05611049362976063, -0.027005276189744354, 0.01248936700079338,
    -0.005570925693607461, 0.002403721451080501, -0.0010047997001988746, 0.00040873798595246475,
    -0.00016447866403796163, 6.340933229062602e-05, -2.050470840301931e-05, 7.66530081754953e-06,
    -5.053533408902687e-06, 1.7581148051902643e-06
};

UN_CLONES static void erf_rows(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) {
        const float xf = x[i];
        const double a = fabs((double)xf), t = a * a; /* exact */
        const double us = t * 2.0 - 1.0, ub = (a - 2.5) * (2.0 / 3.0);
        /* Estrin's scheme: short dependency chains (Horner's were the loop's latency) */
        const double us2 = us * us, us4 = us2 * us2, ub2 = ub * ub, ub4 = ub2 * ub2, ub8 = ub4 * ub4;
        const double *S = ERF_SMALL, *B = ERF_BIG;
        const double s01 = S[0] + S[1] * us, s23 = S[2] + S[3] * us, s45 = S[4] + S[5] * us, s67 = S[6] + S[7] * us;
        const double ps = (s01 + s23 * us2) + (s45 + s67 * us2) * us4 + S[8] * (us4 * us4);
        const double b01 = B[0] + B[1] * ub, b23 = B[2] + B[3] * ub, b45 = B[4] + B[5] * ub, b67 = B[6] + B[7] * ub;
        const double b89 = B[8] + B[9] * ub, b1011 = B[10] + B[11] * ub, b1213 = B[12] + B[13] * ub;
        const double pb = ((b01 + b23 * ub2) + (b45 + b67 * ub2) * ub4) +
                          ((b89 + b1011 * ub2) + (b1213 + B[14] * ub2) * ub4) * ub8;
        /* exp(-t); t past 16 (NaN too) only where the sum is not picked */
        const double te = t < 16.0 ? t : 16.0;
        const double scaled = ptq_exp_poly(-te);
        /* both sides computed, then picked: a select the loop vectorizes */
        const double small = a * ps, big = 1.0 - scaled * pb;
        double e = a < 1.0 ? small : big;
        e = a >= 4.0 ? 1.0 : e;
        const float v = copysignf((float)e, xf);
        y[i] = xf != xf ? xf : v;
    }
}

/* Sigmoid and Gelu (tanh): kernels/exp_poly.h's expressions, the reference's, on the widest vectors. */
UN_CLONES static void sigmoid_rows(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = ptq_sigmoid_poly(x[i]);
}

UN_CLONES static void gelu_tanh_rows(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = ptq_gelu_tanh_poly(x[i]);
}

/* x, y: [n] on this thread. */
static void unary_serial(ptq_unop op, float alpha, float beta, int64_t n, const float *x, float *y)
{
    switch (op) {
    case PTQ_UN_RELU: UN_LOOP(v < 0.0f ? 0.0f : v); break;
    case PTQ_UN_LEAKY_RELU: UN_LOOP(v < 0.0f ? alpha * v : v); break;
    case PTQ_UN_CLIP: UN_LOOP(clip(v, alpha, beta)); break;
    case PTQ_UN_SIGMOID: sigmoid_rows(n, x, y); break;
    case PTQ_UN_HARD_SIGMOID: UN_LOOP(clamp01(alpha * v + beta)); break;
    case PTQ_UN_HARD_SWISH: UN_LOOP(v * clamp01(v * (1.0f / 6.0f) + 0.5f)); break;
    case PTQ_UN_TANH: UN_LOOP(tanhf(v)); break;
    case PTQ_UN_ERF: erf_rows(n, x, y); break;
    case PTQ_UN_GELU: UN_LOOP(0.5f * v * erfcf(v * -PTQ_GELU_SQRT1_2)); break;
    case PTQ_UN_GELU_TANH: gelu_tanh_rows(n, x, y); break;
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

/* x, y: [n] on this thread, in blocks of ERF_GELU_BLOCK: t = x / c_div, erf_rows(t), then the rest, each step one
 * IEEE operation as the binary kernels make it. */
enum { ERF_GELU_BLOCK = 1024 };

UN_CLONES static void erf_gelu_serial(int64_t n, float c_div, float c_add, float c_mul, const float *x, float *y)
{
    float t[ERF_GELU_BLOCK];
    for (int64_t b = 0; b < n; b += ERF_GELU_BLOCK) {
        const int64_t m = n - b < ERF_GELU_BLOCK ? n - b : ERF_GELU_BLOCK;
        for (int64_t i = 0; i < m; i++)
            t[i] = x[b + i] / c_div;
        erf_rows(m, t, t);
        for (int64_t i = 0; i < m; i++)
            y[b + i] = (x[b + i] * (t[i] + c_add)) * c_mul;
    }
}

typedef struct erf_gelu_job {
    float c_div, c_add, c_mul;
    const float *x;
    float *y;
} erf_gelu_job;

static void erf_gelu_piece(void *arg, int64_t begin, int64_t end, int worker)
{
    const erf_gelu_job *j = arg;
    (void)worker;
    erf_gelu_serial(end - begin, j->c_div, j->c_add, j->c_mul, j->x + begin, j->y + begin);
}

void ptq_k_erf_gelu_cpu(int64_t n, float c_div, float c_add, float c_mul, const float *x, float *y)
{
    erf_gelu_job job = {c_div, c_add, c_mul, x, y};
    ptq_parallel_for(n, ptq_par_grain(n, 4, UN_PARALLEL_MIN_EXP), erf_gelu_piece, &job);
}
