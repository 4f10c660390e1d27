/* The CPU's Erf (kernels/cpu/unary.c, erf_rows) against glibc's erff and
 * against erf in double rounded to float, on every float in [0, 4.5]: how
 * many differ and by how many ulps; then the time an element of N(0, 1)
 * data takes, the CPU kernel on one thread against a loop of erff, best of
 * 5 in this thread's CPU time. build/bench/erf_cpu [--quick: every 64th
 * float]; about a minute in full. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/cpu_bench.h"
#include "core/parallel.h"
#include "kernels/kernels.h"

static float (*volatile erff_call)(float) = erff; /* a call per element, as kernels/ref makes it */

int main(int argc, char **argv)
{
    const uint32_t step = argc > 1 && strcmp(argv[1], "--quick") == 0 ? 64 : 1;
    enum { BLOCK = 1 << 16 };
    float *x = malloc(BLOCK * sizeof *x), *y = malloc(BLOCK * sizeof *y);
    if (!x || !y)
        return 1;
    ptq_par_set_workers(1);
    unsigned long long n = 0, off_cr = 0, off_glibc = 0, glibc_off_cr = 0;
    long long worst_cr = 0, worst_glibc = 0;
    const uint32_t end = bits_of(4.5f);
    for (uint32_t u0 = 0; u0 < end; u0 += BLOCK * step) {
        int m = 0;
        for (uint32_t u = u0; m < BLOCK && u < end && u >= u0; u += step)
            memcpy(&x[m++], &u, sizeof u);
        ptq_k_unary_cpu(PTQ_UN_ERF, 0, 0, m, x, y);
        for (int i = 0; i < m; i++) {
            const float cr = (float)erf((double)x[i]), g = erff(x[i]);
            const long long d_cr = llabs((long long)bits_of(y[i]) - (long long)bits_of(cr));
            const long long d_g = llabs((long long)bits_of(y[i]) - (long long)bits_of(g));
            off_cr += d_cr != 0, off_glibc += d_g != 0, glibc_off_cr += g != cr;
            worst_cr = d_cr > worst_cr ? d_cr : worst_cr, worst_glibc = d_g > worst_glibc ? d_g : worst_glibc;
            n++;
        }
    }
    printf("floats in [0, 4.5]%s: %llu\n", step > 1 ? " (every 64th)" : "", n);
    printf("ptq's CPU Erf not the nearest float to erf in double: %llu (at most %lld ulp)\n", off_cr, worst_cr);
    printf("glibc's erff not the nearest float to erf in double:  %llu\n", glibc_off_cr);
    printf("ptq's CPU Erf and glibc's erff differ: %llu (at most %lld ulp)\n", off_glibc, worst_glibc);

    /* N(0, 1) data, as the inputs of a transformer's Gelu are, through Box-Muller on a fixed sequence */
    const int n_t = 1 << 20;
    float *a = malloc((size_t)n_t * sizeof *a), *b = malloc((size_t)n_t * sizeof *b);
    if (!a || !b)
        return 1;
    for (int i = 0; i < n_t; i++) {
        const double u1 = ((double)((uint32_t)i * 2654435761u % 1000003u) + 0.5) / 1000003.0;
        const double u2 = ((double)((uint32_t)i * 40503u % 999983u) + 0.5) / 999983.0;
        a[i] = (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    }
    double best_ptq = 1e30, best_glibc = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = thread_seconds();
        ptq_k_unary_cpu(PTQ_UN_ERF, 0, 0, n_t, a, b);
        double t1 = thread_seconds();
        best_ptq = t1 - t0 < best_ptq ? t1 - t0 : best_ptq;
        float (*f)(float) = erff_call;
        t0 = thread_seconds();
        for (int i = 0; i < n_t; i++)
            b[i] = f(a[i]);
        t1 = thread_seconds();
        best_glibc = t1 - t0 < best_glibc ? t1 - t0 : best_glibc;
    }
    printf("N(0, 1) data, one thread: ptq's CPU Erf %.2f ns an element, glibc's erff %.2f (%.2fx)\n",
           1e9 * best_ptq / n_t, 1e9 * best_glibc / n_t, best_glibc / best_ptq);
    free(x), free(y), free(a), free(b);
    return 0;
}
