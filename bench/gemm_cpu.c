/* ptq's CPU GEMM (kernels/cpu/gemm.c) on the Fashion-MNIST ViT's shapes at a batch of 256 (4,096 token rows): the
 * FMA tiles (and, for the attention's [16, 16] slices, the narrow rows), and one GEMM of a long k (a classifier's
 * fc layer), against the OpenBLAS path the same code takes
 * on a CPU without AVX2 (ptq_k_conv_cpu_set_isa(0): cblas_sgemm in 16-row calls), best of 20 calls (5) in wall time on
 * one thread and on two, with each path's outputs compared (the bits differ: the tiles fma-sum each output from 0
 * in k order; OpenBLAS's kernels order their sums their own way). Markdown on stdout. build/bench/gemm_cpu [THREADS];
 * record: bench/results/2026-12-07-cpu-gemm-vm.md. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/parallel.h"
#include "kernels/kernels.h"

typedef struct shape {
    const char *what;
    int64_t m, n, k, slices; /* slices > 0: batched [m, k] x [n, k]^T, that many */
} shape;

static const shape shapes[] = {
    {"qkv [4096, 64] x [64, 192]", 4096, 192, 64, 0},  {"proj [4096, 64] x [64, 64]", 4096, 64, 64, 0},
    {"mlp1 [4096, 64] x [64, 128]", 4096, 128, 64, 0}, {"mlp2 [4096, 128] x [128, 64]", 4096, 64, 128, 0},
    {"embed [4096, 49] x [49, 64]", 4096, 64, 49, 0},  {"attention 1024 x [16, 16] x [16, 16]^T", 16, 16, 16, 1024},
    {"wide k: [256, 4096] x [4096, 1024]", 256, 1024, 4096, 0},
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Best of 20 runs of s's GEMM into y (5 past a GFLOP), in seconds. */
static double best_s(const shape *s, const float *a, const float *b, const int64_t *offs, float *y)
{
    double best = 1e30;
    const int runs = 2.0 * (double)s->m * (double)s->n * (double)s->k > 1e9 ? 5 : 20;
    for (int r = 0; r < runs; r++) {
        const double t0 = now_s();
        if (s->slices) {
            const ptq_gemm_params p = {s->m, s->n, s->k, 0, 1, 1.0f, 0.0f};
            ptq_k_gemm_batched_cpu(&p, s->slices, offs, offs, a, b, y);
        } else {
            const ptq_gemm_params p = {s->m, s->n, s->k, 0, 0, 1.0f, 0.0f};
            ptq_k_gemm_cpu(&p, a, b, y);
        }
        const double t = now_s() - t0;
        best = t < best ? t : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    const int threads = argc > 1 ? atoi(argv[1]) : 1;
    ptq_par_set_workers(threads < 1 ? 1 : threads);
    printf("| shape (%d thread%s) | FMA tiles ms (GFLOP/s) | OpenBLAS 16-row calls ms (GFLOP/s) | speed-up | largest "
           "difference |\n|---|---|---|---|---|\n", threads, threads == 1 ? "" : "s");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const shape *s = &shapes[i];
        const int64_t slices = s->slices ? s->slices : 1, n_a = slices * s->m * s->k;
        const int64_t n_b = slices * s->n * s->k, n_y = slices * s->m * s->n;
        float *a = malloc((size_t)n_a * sizeof *a), *b = malloc((size_t)n_b * sizeof *b);
        float *y0 = malloc((size_t)n_y * sizeof *y0), *y1 = malloc((size_t)n_y * sizeof *y1);
        int64_t *offs = malloc((size_t)slices * sizeof *offs);
        if (!a || !b || !y0 || !y1 || !offs) {
            fprintf(stderr, "gemm_cpu: out of memory\n");
            return 1;
        }
        for (int64_t j = 0; j < n_a; j++)
            a[j] = (float)(j % 7) * 0.1f - 0.3f;
        for (int64_t j = 0; j < n_b; j++)
            b[j] = (float)(j % 5) * 0.1f - 0.2f;
        for (int64_t j = 0; j < slices; j++)
            offs[j] = j * s->m * s->k; /* m = n: a's and b's slices alike in size */
        const double tiles = best_s(s, a, b, offs, y0);
        ptq_k_conv_cpu_set_isa(0);
        const double blas = best_s(s, a, b, offs, y1);
        ptq_k_conv_cpu_set_isa(-1);
        double diff = 0.0;
        for (int64_t j = 0; j < n_y; j++)
            diff = fabs((double)y0[j] - (double)y1[j]) > diff ? fabs((double)y0[j] - (double)y1[j]) : diff;
        const double flop = 2.0 * (double)slices * (double)s->m * (double)s->n * (double)s->k;
        printf("| %s | %.3f (%.0f) | %.3f (%.0f) | %.2fx | %.2g |\n", s->what, tiles * 1e3, flop / tiles * 1e-9,
               blas * 1e3, flop / blas * 1e-9, blas / tiles, diff);
        free(a);
        free(b);
        free(y0);
        free(y1);
        free(offs);
    }
    return 0;
}
