/* ptq's CPU convolution paths layer by layer, on one thread: the im2col +
 * OpenBLAS path, and kernels/cpu/conv_direct.c's AVX2 and AVX-512 kernels
 * (ptq_k_conv_cpu_set_isa; a CPU without one runs the next narrower), each
 * with the chain's Relu, best of 5 calls in this thread's CPU time. Shapes:
 * the demo model's layers (64 images of 28x28 Fashion-MNIST), a MobileNet's
 * pointwise layers, ResNet-50's (2 images of 224x224), and the bundled
 * MobileNet's depthwise layers (18 images, a CPU pass of it; their columns:
 * kernels/cpu/conv_depthwise.c's portable C, then its AVX-512 kernels under
 * "direct AVX-512"). Markdown on
 * stdout. build/bench/conv_cpu_layers; record:
 * bench/results/2026-12-05-cpu-speed-2-vm.md. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/parallel.h"
#include "kernels/kernels.h"

typedef struct layer {
    const char *what;
    int n, c_in, c_out, h, k, stride;
    int depthwise; /* one input channel a group (c_in = c_out) */
} layer;

static const layer layers[] = {
    {"demo stem", 64, 1, 24, 28, 3, 1, 0},         {"demo 3x3", 64, 24, 24, 28, 3, 1, 0},
    {"demo 3x3 /2", 64, 24, 48, 28, 3, 2, 0},      {"demo 3x3", 64, 48, 48, 14, 3, 1, 0},
    {"demo 1x1 /2", 64, 24, 48, 28, 1, 2, 0},      {"demo 3x3 /2", 64, 48, 96, 14, 3, 2, 0},
    {"demo 3x3", 64, 96, 96, 7, 3, 1, 0},          {"MobileNet 1x1", 64, 16, 96, 14, 1, 1, 0},
    {"MobileNet 1x1", 64, 96, 24, 14, 1, 1, 0},    {"ResNet-50 3x3", 2, 64, 64, 56, 3, 1, 0},
    {"ResNet-50 1x1", 2, 256, 64, 56, 1, 1, 0},    {"ResNet-50 3x3", 2, 128, 128, 28, 3, 1, 0},
    {"ResNet-50 3x3", 2, 256, 256, 14, 3, 1, 0},   {"ResNet-50 3x3", 2, 512, 512, 7, 3, 1, 0},
    {"ResNet-50 1x1", 2, 2048, 512, 7, 1, 1, 0},    {"MobileNet dw 3x3", 18, 64, 64, 14, 3, 1, 1},
    {"MobileNet dw 3x3 /2", 18, 64, 64, 14, 3, 2, 1}, {"MobileNet dw 3x3", 18, 128, 128, 7, 3, 1, 1},
    {"MobileNet dw 3x3 /2", 18, 128, 128, 7, 3, 2, 1}, {"VGG 3x3", 64, 16, 16, 28, 3, 1, 0},
    {"VGG 3x3", 64, 16, 32, 14, 3, 1, 0},            {"VGG 3x3", 64, 32, 32, 14, 3, 1, 0},
    {"VGG 3x3", 64, 32, 64, 7, 3, 1, 0},             {"VGG 3x3", 64, 64, 64, 7, 3, 1, 0},
};

static double thread_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The best of 5 calls with the chain's Relu, seconds. */
static double best_of_5(const ptq_conv_params *p, const float *x, const float *w, const float *b, float *y)
{
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        const double t0 = thread_s();
        ptq_k_conv_cpu_epilogue(p, x, w, b, NULL, 0.0f, INFINITY, y);
        const double t = thread_s() - t0;
        best = t < best ? t : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    /* --tiles: the direct AVX-512 path's tiles (ptq_k_conv_cpu_set_tile) on its layers instead of the paths */
    const int tiles = argc > 1 && strcmp(argv[1], "--tiles") == 0;
    static const char *const names[] = {"im2col + OpenBLAS", "direct AVX2", "direct AVX-512"};
    static const char *const tile_names[] = {"6x64", "8x48", "8x32", "32ch x 14", "32ch x 2x7", "chosen"};
    ptq_par_set_workers(1);
    printf("| layer | images | in -> out | size | kernel, stride |");
    for (int s = 0; s < (tiles ? 6 : 3); s++)
        printf(tiles ? " tile %s ms (GFLOP/s) |" : " %s ms (GFLOP/s) |", tiles ? tile_names[s] : names[s]);
    printf("%s\n|---|---|---|---|---|---|---|---|---|%s\n", tiles ? "" : " direct / im2col |", tiles ? "---|---|" : "");
    for (size_t l = 0; l < sizeof layers / sizeof layers[0]; l++) {
        const layer *c = &layers[l];
        if (tiles && (c->depthwise || c->k == 1))
            continue;
        const int pad = c->k / 2;
        ptq_conv_params p = {0};
        p.n = c->n;
        p.c_in = c->c_in;
        p.c_out = c->c_out;
        p.group = c->depthwise ? c->c_in : 1;
        for (int i = 0; i < PTQ_SPATIAL; i++)
            p.in[i] = p.out[i] = p.k[i] = p.stride[i] = p.dil[i] = 1;
        for (int i = 1; i < 3; i++) {
            p.in[i] = c->h;
            p.k[i] = c->k;
            p.stride[i] = c->stride;
            p.pad_lo[i] = p.pad_hi[i] = pad;
            p.out[i] = (c->h + 2 * pad - c->k) / c->stride + 1;
        }
        const size_t n_x = (size_t)c->n * (size_t)c->c_in * (size_t)(c->h * c->h);
        const size_t n_y = (size_t)c->n * (size_t)c->c_out * (size_t)(p.out[1] * p.out[2]);
        const size_t n_w = (size_t)c->c_out * (size_t)(c->c_in / p.group) * (size_t)(c->k * c->k);
        float *x = malloc(n_x * sizeof *x), *w = malloc(n_w * sizeof *w), *b = malloc((size_t)c->c_out * sizeof *b);
        float *y = malloc(n_y * sizeof *y);
        if (!x || !w || !b || !y) {
            fprintf(stderr, "conv_cpu_layers: out of memory\n");
            return 1;
        }
        for (size_t i = 0; i < n_x; i++)
            x[i] = (float)(i % 17) * 0.1f - 0.8f;
        for (size_t i = 0; i < n_w; i++)
            w[i] = (float)(i % 13) * 0.05f - 0.3f;
        for (int i = 0; i < c->c_out; i++)
            b[i] = 0.1f;
        double best[6];
        for (int s = 0; s < (tiles ? 6 : 3); s++) {
            ptq_k_conv_cpu_set_isa(tiles ? 2 : s);
            ptq_k_conv_cpu_set_tile(tiles && s < 5 ? s : -1);
            best[s] = best_of_5(&p, x, w, b, y);
        }
        const double flop = 2.0 * (double)n_y * (double)(c->c_in / p.group * c->k * c->k);
        printf("| %s | %d | %d -> %d | %dx%d | %dx%d, %d |", c->what, c->n, c->c_in, c->c_out, c->h, c->h, c->k, c->k,
               c->stride);
        for (int s = 0; s < (tiles ? 6 : 3); s++)
            printf(" %.2f (%.0f) |", best[s] * 1e3, flop / best[s] * 1e-9);
        if (tiles)
            printf("\n");
        else
            printf(" %.2fx |\n", best[0] / best[2]);
        free(x);
        free(w);
        free(b);
        free(y);
    }
    ptq_k_conv_cpu_set_isa(-1);
    ptq_k_conv_cpu_set_tile(-1);
    return 0;
}
