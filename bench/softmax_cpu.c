/* The kernels' exp (kernels/exp_poly.h, ptq_expf_poly) against exp in
 * double rounded to float and against glibc's expf, on every float in
 * [-104, 89] (below, float's exp is 0; above, +Inf): how many differ and by
 * how many ulps. Then the CPU softmax (kernels/cpu/softmax.c) on one thread against
 * the reference (kernels/ref/softmax.c) and against the same loops calling
 * glibc's expf (the kernels' arithmetic before exp_poly.h), in ns an
 * element, best of 5 in this thread's CPU time, on a ViT's attention rows
 * (16 long), longer rows and a softmax over a middle axis; and Sigmoid
 * (kernels/cpu/unary.c) against a loop of the expression with glibc's expf.
 * build/bench/softmax_cpu [--quick: every 64th float]; about 25 seconds. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/cpu_bench.h"
#include "core/parallel.h"
#include "kernels/exp_poly.h"
#include "kernels/kernels.h"

static float (*volatile expf_call)(float) = expf; /* a call per element, as the kernels made it */

/* The reference's loops with glibc's expf: the arithmetic both kernels had before exp_poly.h. */
static void softmax_expf(int64_t outer, int64_t len, int64_t inner, const float *x, float *y)
{
    float (*e)(float) = expf_call;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const float *xs = x + o * len * inner + i;
            float *ys = y + o * len * inner + i;
            float max = -INFINITY;
            for (int64_t l = 0; l < len; l++)
                if (xs[l * inner] > max)
                    max = xs[l * inner];
            double sum = 0.0;
            for (int64_t l = 0; l < len; l++) {
                ys[l * inner] = e(xs[l * inner] - max);
                sum += ys[l * inner];
            }
            for (int64_t l = 0; l < len; l++)
                ys[l * inner] = (float)(ys[l * inner] / sum);
        }
}

static long long ulps(float a, float b)
{
    return llabs((long long)bits_of(a) - (long long)bits_of(b));
}

/* ptq_expf_poly against exp in double rounded to float and against expf on the floats whose bits run from first to
 * last (every step-th). */
static void accuracy(const char *what, uint32_t first, uint32_t last, uint32_t step)
{
    unsigned long long n = 0, off_cr = 0, off_glibc = 0, glibc_off_cr = 0;
    long long worst_cr = 0, worst_glibc = 0;
    for (uint32_t u = first; u <= last && u >= first; u += step) {
        float t;
        memcpy(&t, &u, sizeof t);
        const float got = ptq_expf_poly(t), cr = (float)exp((double)t), g = expf(t);
        off_cr += got != cr, off_glibc += got != g, glibc_off_cr += g != cr;
        worst_cr = ulps(got, cr) > worst_cr ? ulps(got, cr) : worst_cr;
        worst_glibc = ulps(got, g) > worst_glibc ? ulps(got, g) : worst_glibc;
        n++;
    }
    printf("floats in %s%s: %llu\n", what, step > 1 ? " (every 64th)" : "", n);
    printf("  ptq's exp not the nearest float to exp in double: %llu (at most %lld ulp)\n", off_cr, worst_cr);
    printf("  glibc's expf not the nearest float to exp in double: %llu\n", glibc_off_cr);
    printf("  ptq's exp and glibc's expf differ: %llu (at most %lld ulp)\n", off_glibc, worst_glibc);
}

int main(int argc, char **argv)
{
    const uint32_t step = argc > 1 && strcmp(argv[1], "--quick") == 0 ? 64 : 1;
    ptq_par_set_workers(1);
    accuracy("[-104, 0]", bits_of(-0.0f), bits_of(-104.0f), step); /* negative floats: bits grow with |t| */
    accuracy("(0, 89]", bits_of(0.0f) + 1, bits_of(89.0f), step);

    static const int64_t shapes[][3] = {{4096, 16, 1}, {512, 128, 1}, {128, 512, 1}, {64, 16, 64}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t outer = shapes[s][0], len = shapes[s][1], inner = shapes[s][2], n_el = outer * len * inner;
        float *x = malloc((size_t)n_el * sizeof *x), *y = malloc((size_t)n_el * sizeof *y);
        if (!x || !y)
            return 1;
        for (int64_t i = 0; i < n_el; i++) /* attention scores' spread, on a fixed sequence */
            x[i] = (float)((uint32_t)i * 2654435761u % 100003u) / 10000.0f - 5.0f;
        double best[3] = {1e30, 1e30, 1e30};
        for (int r = 0; r < 5; r++) {
            for (int k = 0; k < 3; k++) {
                const double t0 = thread_seconds();
                if (k == 0)
                    ptq_k_softmax_cpu(outer, len, inner, x, y);
                else if (k == 1)
                    ptq_k_softmax_ref(outer, len, inner, x, y);
                else
                    softmax_expf(outer, len, inner, x, y);
                const double t = thread_seconds() - t0;
                best[k] = t < best[k] ? t : best[k];
            }
        }
        printf("softmax [%lld, %lld, %lld], one thread: ptq's CPU kernel %.2f ns an element, its reference %.2f, "
               "the loops with glibc's expf %.2f (%.2fx)\n",
               (long long)outer, (long long)len, (long long)inner, 1e9 * best[0] / (double)n_el,
               1e9 * best[1] / (double)n_el, 1e9 * best[2] / (double)n_el, best[2] / best[0]);
        free(x), free(y);
    }
    enum { N_SIG = 1 << 20 };
    float *x = malloc(N_SIG * sizeof *x), *y = malloc(N_SIG * sizeof *y);
    if (!x || !y)
        return 1;
    for (int i = 0; i < N_SIG; i++) /* activations' spread */
        x[i] = (float)((uint32_t)i * 2654435761u % 100003u) / 5000.0f - 10.0f;
    double best[2] = {1e30, 1e30};
    for (int r = 0; r < 5; r++) {
        double t0 = thread_seconds();
        ptq_k_unary_cpu(PTQ_UN_SIGMOID, 0.0f, 0.0f, N_SIG, x, y);
        best[0] = fmin(best[0], thread_seconds() - t0);
        float (*e)(float) = expf_call;
        t0 = thread_seconds();
        for (int i = 0; i < N_SIG; i++)
            y[i] = 1.0f / (1.0f + e(-x[i]));
        best[1] = fmin(best[1], thread_seconds() - t0);
    }
    printf("sigmoid, one thread: ptq's CPU kernel %.2f ns an element, the loop with glibc's expf %.2f (%.2fx)\n",
           1e9 * best[0] / N_SIG, 1e9 * best[1] / N_SIG, best[1] / best[0]);
    free(x), free(y);
    return 0;
}
