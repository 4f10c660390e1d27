/* Parity of ptq_k_conv_cpu (im2col + sgemm, threaded) with ptq_k_conv_ref on
 * seeded random data: 1-D/2-D/3-D, groups (depthwise, with multiplier),
 * strides, asymmetric pads, dilations, 1x1, odd sizes, multi-tile images, both
 * threading paths, the shifted-plane im2col of stride-1 "same" rows, direct
 * depthwise convolutions, each with the chain's Add and Relu fused (ref, then
 * + z, then Relu; and a Clip), each on the im2col path and on conv_direct.c's AVX2 and
 * AVX-512 kernels (the same bits; for depthwise, conv_depthwise.c's portable C and
 * AVX-512 kernels), an image's bits alone those in its batch
 * on every path; and of ptq_k_conv_transpose_cpu (sgemm + col2im) with
 * ptq_k_conv_transpose_ref: the same and output_padding, negative pads (zero
 * positions output_shape adds), kernels below the stride, several channel
 * blocks and input tiles per image. Tolerance: rtol 1e-4, atol 1e-5 (inputs
 * in [-1, 1]; times taps / 256 for a Conv summing more than 256 taps); ONNX's known values of both ops exactly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "testlib.h"

#define RTOL 1e-4f
#define ATOL 1e-5f

typedef struct conv_case {
    int n_sp; /* spatial dims used, right-aligned in the 3 slots */
    int64_t n, c_in, c_out, group;
    int64_t in[3], k[3], stride[3], dil[3], pad_lo[3], pad_hi[3]; /* first n_sp entries */
    int bias;
} conv_case;

static const conv_case cases[] = {
    /* 2-D basics */
    {2, 1, 1, 1, 1, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0},
    {2, 2, 3, 4, 1, {7, 5}, {3, 2}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 1},
    {2, 3, 5, 7, 1, {9, 11}, {3, 3}, {2, 2}, {1, 1}, {1, 0}, {1, 0}, 1},
    {2, 2, 4, 6, 1, {8, 8}, {3, 3}, {2, 3}, {2, 2}, {1, 2}, {2, 1}, 1},
    {2, 4, 6, 5, 1, {13, 7}, {5, 3}, {3, 1}, {1, 2}, {2, 0}, {0, 3}, 0},
    /* groups, depthwise, depthwise with multiplier */
    {2, 2, 4, 6, 2, {6, 5}, {3, 2}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 1},
    {2, 3, 8, 8, 8, {10, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 2, 4, 8, 4, {6, 6}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {1, 1}, 1},
    {2, 5, 6, 9, 3, {7, 9}, {3, 3}, {1, 2}, {2, 1}, {2, 1}, {2, 1}, 0},
    /* 1x1: pointwise (no im2col), strided, padded */
    {2, 3, 16, 8, 1, {7, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 1},
    {2, 3, 16, 8, 2, {7, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 0},
    /* pointwise through kernels/cpu/gemm.c's tiles on AVX-512: 64-column panels and a narrow one, whole and partial
     * blocks of 6 output channels */
    {2, 3, 24, 96, 1, {14, 14}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 1},
    {2, 2, 20, 13, 1, {8, 9}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 0},
    {2, 3, 8, 12, 1, {9, 9}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, 1},
    {2, 2, 4, 4, 1, {5, 6}, {1, 1}, {1, 1}, {1, 1}, {1, 0}, {0, 2}, 1},
    /* pads >= kernel, kernel larger than the input, window in padding only */
    {2, 2, 3, 2, 1, {3, 4}, {2, 2}, {1, 1}, {1, 1}, {3, 2}, {3, 2}, 1},
    {2, 1, 2, 3, 1, {2, 2}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, 1},
    /* 1-D */
    {1, 2, 4, 5, 1, {10}, {3}, {1}, {1}, {0}, {0}, 1},
    {1, 2, 4, 5, 1, {10}, {3}, {2}, {2}, {1}, {2}, 1},
    {1, 2, 4, 6, 2, {6}, {3}, {1}, {1}, {1}, {1}, 0},
    {1, 1, 4, 4, 1, {1}, {5}, {1}, {1}, {2}, {2}, 1},
    {1, 7, 3, 3, 3, {33}, {4}, {3}, {3}, {0}, {5}, 1},
    /* 3-D */
    {3, 2, 3, 4, 1, {3, 4, 5}, {2, 3, 4}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1},
    {3, 2, 3, 4, 1, {5, 5, 5}, {2, 2, 2}, {2, 2, 2}, {2, 2, 2}, {1, 0, 1}, {1, 1, 0}, 0},
    {3, 2, 4, 6, 2, {4, 5, 4}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
    {3, 1, 4, 4, 4, {6, 3, 7}, {3, 1, 2}, {1, 2, 3}, {2, 1, 1}, {2, 0, 1}, {1, 0, 2}, 1},
    /* one image, one group: sgemm threads itself (no threading over items) */
    {2, 1, 8, 16, 1, {12, 12}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
    /* many im2col tiles per image (rows * tile > the per-thread budget) */
    {2, 1, 96, 8, 1, {45, 47}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 3, 64, 16, 2, {38, 41}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
    /* stride 1, output rows as wide as the input's: im2col copies shifted planes (conv.c's im2col_shifted):
     * dilated, taps only right / only left of the output column, rows past the top or the bottom, 1x1 padded in
     * height only, many tiles that start mid-row */
    {2, 2, 3, 5, 1, {9, 10}, {3, 3}, {1, 1}, {2, 2}, {2, 2}, {2, 2}, 1},
    {2, 2, 3, 4, 1, {8, 7}, {3, 3}, {1, 1}, {1, 1}, {2, 0}, {0, 2}, 1},
    {2, 2, 3, 4, 1, {8, 7}, {3, 3}, {1, 1}, {1, 1}, {0, 2}, {3, 0}, 1},
    {2, 2, 4, 4, 1, {5, 6}, {1, 1}, {1, 1}, {1, 1}, {1, 0}, {2, 0}, 1},
    {2, 2, 80, 6, 1, {33, 50}, {3, 5}, {1, 1}, {2, 1}, {2, 2}, {2, 2}, 1},
    /* depthwise (one input channel per group), 1-D and 2-D, run directly: strided, dilated, one-sided and large
     * pads, a channel multiplier, a kernel wider than the input, a large plane */
    {2, 2, 6, 6, 6, {9, 11}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 2, 4, 12, 4, {10, 9}, {3, 5}, {1, 2}, {2, 1}, {2, 0}, {0, 3}, 0},
    {2, 1, 3, 3, 3, {4, 3}, {5, 5}, {1, 1}, {1, 1}, {2, 3}, {2, 3}, 1},
    {2, 3, 16, 16, 16, {56, 57}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
    {1, 2, 5, 10, 5, {17}, {5}, {2}, {1}, {2}, {1}, 1},
    /* 3x3 stride-1 depthwise as one loop over the plane: no bias, one-sided pads, a 1-wide output */
    {2, 2, 5, 5, 5, {7, 9}, {3, 3}, {1, 1}, {1, 1}, {0, 2}, {2, 0}, 0},
    {2, 3, 4, 4, 4, {6, 1}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
    /* 3x3 stride-2 depthwise: a MobileNet's, even and odd sizes, no pads
     * and one-sided ones, a channel multiplier, a 1-wide output */
    {2, 2, 64, 64, 64, {14, 14}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 3, 32, 32, 32, {7, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 2, 5, 5, 5, {8, 9}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, 0},
    {2, 2, 4, 8, 4, {10, 7}, {3, 3}, {2, 2}, {1, 1}, {0, 2}, {2, 0}, 1},
    {2, 1, 3, 3, 3, {5, 2}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 0}, 1},
    /* kernels/cpu/conv_depthwise.c's phases: stride-2 rows of several AVX-512 vectors, left pads of 2 and 3 (the
     * masked lanes before the row), stride 3 (the portable copy), dilation 2 with stride 2, and a stride past the
     * padded plane (a plain padded copy, a row at a time) */
    {2, 2, 6, 6, 6, {11, 70}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 2, 3, 3, 3, {9, 37}, {3, 3}, {2, 2}, {1, 1}, {2, 3}, {1, 2}, 1},
    {2, 2, 4, 4, 4, {13, 14}, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 1, 5, 5, 5, {15, 17}, {3, 3}, {2, 2}, {2, 2}, {2, 2}, {2, 2}, 0},
    {2, 2, 4, 4, 4, {2, 2}, {1, 1}, {3, 3}, {1, 1}, {0, 0}, {0, 0}, 1},
    /* conv_depthwise.c in place (stride 1, outputs as wide as the inputs): dilated, a 1-D with a channel
     * multiplier, 5x5 taps, a plane of one vector and a part, rows fewer than the kernel's */
    {2, 2, 6, 6, 6, {9, 11}, {3, 3}, {1, 1}, {2, 2}, {2, 2}, {2, 2}, 1},
    {1, 2, 4, 8, 4, {20}, {3}, {1}, {2}, {2}, {2}, 1},
    {2, 2, 3, 6, 3, {12, 13}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, 0},
    {2, 3, 4, 4, 4, {4, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 2, 4, 4, 4, {2, 7}, {5, 3}, {1, 1}, {1, 1}, {2, 1}, {2, 1}, 1},
    /* and a row at a time (3x3, padding 1, rows of 5 to 16): one row a vector, two (7x7, an odd count), a channel
     * multiplier on 16-wide rows, 5-wide rows of one line, no bias */
    {2, 2, 5, 5, 5, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 3, 6, 6, 6, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 2, 4, 8, 4, {9, 16}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 2, 3, 3, 3, {1, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0},
    /* and two output rows a vector with stride 2 (3x3, padding 1 before): 16 columns in, 8 out, an odd count of
     * output rows, a channel multiplier, no padding after */
    {2, 2, 3, 6, 3, {11, 16}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 1},
    /* demo-model-like layers */
    {2, 8, 1, 24, 1, {28, 28}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0},
    {2, 8, 24, 48, 1, {28, 28}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 0},
    {2, 8, 24, 48, 1, {28, 28}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, 0},
    /* conv_direct.c: taps reaching past its tile's slack (dilation 40), stride 3 (nine phases), bands of rows (a
     * copy of 256 channels over the band budget), one image split into bands for the threads, channels not a
     * multiple of the kernel's 6 */
    {1, 2, 3, 5, 1, {100}, {3}, {1}, {40}, {0}, {0}, 1},
    {2, 2, 5, 7, 1, {17, 19}, {4, 3}, {3, 3}, {1, 2}, {1, 2}, {2, 1}, 1},
    {2, 2, 256, 13, 1, {40, 40}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 1, 20, 11, 1, {30, 9}, {3, 3}, {1, 1}, {1, 1}, {0, 1}, {2, 1}, 1},
    /* VGG-like layers, where the AVX-512 tiles of 8 rows drop no channel: 8x48 on 28x28, 8x32 on 7x7 */
    {2, 3, 16, 16, 1, {28, 28}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 3, 64, 64, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
};

/* ConvTranspose cases: out = stride * (in - 1) + (k - 1) * dil + 1 + extra - pad_lo - pad_hi. */
typedef struct ct_case {
    conv_case c;
    int64_t extra[3]; /* output_padding */
} ct_case;

static const ct_case ct_cases[] = {
    /* 2-D basics: no pads, stride 2 upsampling, crops, output_padding */
    {{2, 1, 1, 2, 1, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 0}, {0, 0}},
    {{2, 2, 3, 4, 1, {5, 6}, {4, 4}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1}, {0, 0}},
    {{2, 2, 3, 4, 1, {7, 6}, {3, 3}, {3, 2}, {1, 1}, {1, 1}, {1, 1}, 1}, {1, 1}},
    {{2, 3, 5, 7, 1, {4, 9}, {3, 2}, {2, 3}, {2, 1}, {2, 0}, {0, 3}, 0}, {1, 2}},
    /* negative pads: zero positions before and after the scatter */
    {{2, 1, 2, 3, 1, {3, 3}, {3, 3}, {3, 2}, {1, 1}, {-1, 0}, {-2, -1}, 1}, {0, 0}},
    /* kernel smaller than the stride: gaps between taps */
    {{2, 2, 3, 2, 1, {4, 5}, {1, 2}, {3, 3}, {1, 1}, {0, 0}, {0, 0}, 1}, {0, 0}},
    /* groups, depthwise, depthwise with multiplier */
    {{2, 2, 4, 6, 2, {6, 5}, {3, 2}, {2, 1}, {1, 1}, {1, 0}, {0, 0}, 1}, {1, 0}},
    {{2, 3, 8, 8, 8, {5, 5}, {4, 4}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1}, {0, 0}},
    {{2, 2, 4, 8, 4, {6, 6}, {3, 3}, {2, 2}, {2, 2}, {2, 1}, {1, 2}, 0}, {1, 1}},
    /* 1x1 kernels */
    {{2, 3, 16, 8, 1, {7, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 1}, {0, 0}},
    {{2, 3, 16, 8, 2, {7, 7}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, 0}, {1, 1}},
    /* 1-D */
    {{1, 2, 4, 5, 1, {10}, {3}, {1}, {1}, {0}, {0}, 1}, {0}},
    {{1, 2, 4, 5, 1, {10}, {3}, {2}, {2}, {1}, {2}, 1}, {1}},
    {{1, 2, 4, 6, 2, {6}, {5}, {3}, {1}, {-2}, {3}, 0}, {2}},
    /* 3-D */
    {{3, 1, 1, 2, 1, {3, 4, 5}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 0}, {0, 0, 0}},
    {{3, 2, 3, 4, 1, {3, 4, 3}, {2, 3, 2}, {2, 1, 2}, {1, 2, 1}, {1, 0, 1}, {0, 1, 1}, 1}, {1, 0, 0}},
    {{3, 2, 4, 6, 2, {3, 3, 4}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1}, {1, 1, 1}},
    /* several channel blocks per group (channels x taps > 256 rows), several input tiles per image */
    {{2, 2, 8, 96, 1, {9, 11}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1}, {1, 1}},
    {{2, 1, 16, 8, 1, {160, 170}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, 1}, {0, 0}},
    {{2, 3, 64, 64, 2, {20, 23}, {4, 4}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1}, {0, 0}},
};

/* cc's parameter block; extra: [n_sp] output_padding of a ConvTranspose
 * case, NULL for a Conv case (out as each op computes it). */
static void case_params(const conv_case *cc, const int64_t *extra, ptq_conv_params *p)
{
    memset(p, 0, sizeof *p);
    p->n = cc->n;
    p->c_in = cc->c_in;
    p->c_out = cc->c_out;
    p->group = cc->group;
    for (int s = 0; s < PTQ_SPATIAL; s++)
        p->in[s] = p->out[s] = p->k[s] = p->stride[s] = p->dil[s] = 1;
    for (int i = 0; i < cc->n_sp; i++) {
        const int s = PTQ_SPATIAL - cc->n_sp + i;
        const int64_t span = (cc->k[i] - 1) * cc->dil[i] + 1;
        p->in[s] = cc->in[i];
        p->k[s] = cc->k[i];
        p->stride[s] = cc->stride[i];
        p->dil[s] = cc->dil[i];
        p->pad_lo[s] = cc->pad_lo[i];
        p->pad_hi[s] = cc->pad_hi[i];
        if (extra)
            p->out[s] = cc->stride[i] * (cc->in[i] - 1) + span + extra[i] - cc->pad_lo[i] - cc->pad_hi[i];
        else
            p->out[s] = (cc->in[i] + cc->pad_lo[i] + cc->pad_hi[i] - span) / cc->stride[i] + 1;
    }
}

typedef void (*conv_kernel)(const ptq_conv_params *, const float *, const float *, const float *, float *);

/* ptq_k_conv_cpu_set_isa's settings: the im2col path, the direct path's AVX2 and AVX-512 kernels (the widest
 * the CPU has when it lacks one), the AVX-512 kernels with each of their tiles (ptq_k_conv_cpu_set_tile) */
static const int isas[] = {0, 1, 2, 2, 2, 2, 2};
static const int tiles[] = {-1, -1, 0, 1, 2, 3, 4};
static const char *const isa_names[] = {"im2col",
                                        "direct avx2",
                                        "direct avx512 6x64",
                                        "direct avx512 8x48",
                                        "direct avx512 8x32",
                                        "direct avx512 32 channels x 14",
                                        "direct avx512 32 channels x 2 x 7"};

/* Setting s of isas and tiles; -1 the defaults. */
static void set_path(int s)
{
    ptq_k_conv_cpu_set_isa(s < 0 ? -1 : isas[s]);
    ptq_k_conv_cpu_set_tile(s < 0 ? -1 : tiles[s]);
}

/* ref and cpu (Conv, or ConvTranspose with extra) on seeded random data; a Conv under every isas setting, the
 * direct path's kernels giving the same bits (but a pointwise Conv's: kernels/cpu/gemm.c's tiles on AVX-512,
 * OpenBLAS's sums on AVX2). */
static void run_case(const char *label, uint64_t seed, const conv_case *cc, const int64_t *extra)
{
    ptq_conv_params p;
    case_params(cc, extra, &p);
    const conv_kernel ref = extra ? ptq_k_conv_transpose_ref : ptq_k_conv_ref;
    const conv_kernel cpu = extra ? ptq_k_conv_transpose_cpu : ptq_k_conv_cpu;
    const int64_t n_x = p.n * p.c_in * p.in[0] * p.in[1] * p.in[2];
    const int64_t n_w = p.c_out * (p.c_in / p.group) * p.k[0] * p.k[1] * p.k[2]; /* = c_in * c_out / group * k */
    const int64_t n_y = p.n * p.c_out * p.out[0] * p.out[1] * p.out[2];
    float *x = malloc((size_t)n_x * sizeof *x), *w = malloc((size_t)n_w * sizeof *w);
    float *b = malloc((size_t)p.c_out * sizeof *b);
    float *y_ref = malloc((size_t)n_y * sizeof *y_ref), *y_cpu = malloc((size_t)n_y * sizeof *y_cpu);
    CHECK(x && w && b && y_ref && y_cpu);
    if (x && w && b && y_ref && y_cpu) {
        test_rand_seed(seed);
        test_fill_uniform(x, n_x, -1.0f, 1.0f);
        test_fill_uniform(w, n_w, -1.0f, 1.0f);
        test_fill_uniform(b, p.c_out, -1.0f, 1.0f);
        for (int64_t i = 0; i < n_y; i++)
            y_ref[i] = y_cpu[i] = NAN; /* every output must be written */
        ref(&p, x, w, cc->bias ? b : NULL, y_ref);
        int finite = 1;
        for (int64_t i = 0; i < n_y; i++)
            finite &= isfinite(y_ref[i]) != 0;
        CHECK_MSG(finite, "%s: ref left an output unwritten", label);
        float *z = extra ? NULL : malloc((size_t)n_y * sizeof *z), *chain = z ? malloc((size_t)n_y * sizeof *z) : NULL;
        float *direct = z ? malloc(2 * (size_t)n_y * sizeof *direct) : NULL;
        CHECK(extra || (z && chain && direct));
        if (z && chain && direct) { /* the chain's Add and Relu (ptq_k_conv_cpu_epilogue): ref, + z, Relu */
            test_fill_uniform(z, n_y, -1.0f, 1.0f);
            for (int64_t i = 0; i < n_y; i++) {
                const float v = y_ref[i] + z[i];
                chain[i] = v < 0.0f ? 0.0f : v;
            }
        }
        /* float sums of more terms round further from the ref's: the tolerance grows with the taps past 256 */
        const int64_t taps = extra ? 0 : n_w / p.c_out;
        int pointwise = !(p.c_in == p.group && p.group > 1); /* depthwise 1x1 takes the depthwise path */
        for (int d = 0; d < 3; d++)
            pointwise &= p.k[d] == 1 && p.stride[d] == 1 && p.pad_lo[d] == 0 && p.pad_hi[d] == 0;
        const float atol = taps > 256 ? ATOL * (float)taps / 256.0f : ATOL;
        for (int s = 0; s < (extra ? 1 : (int)(sizeof isas / sizeof isas[0])); s++) {
            char what[160];
            set_path(s);
            for (int64_t i = 0; i < n_y; i++)
                y_cpu[i] = NAN; /* every output must be written */
            cpu(&p, x, w, cc->bias ? b : NULL, y_cpu);
            snprintf(what, sizeof what, "%s%s%s", label, extra ? "" : ", ", extra ? "" : isa_names[s]);
            test_close(what, y_cpu, y_ref, n_y, RTOL, atol);
            if (!(z && chain && direct))
                continue;
            if (s > 1 && !pointwise) {
                snprintf(what, sizeof what, "%s, %s against %s: the same bits", label, isa_names[s], isa_names[1]);
                test_close(what, y_cpu, direct, n_y, 0, 0);
            } else if (s == 1) {
                memcpy(direct, y_cpu, (size_t)n_y * sizeof *y_cpu);
            }
            ptq_k_conv_cpu_epilogue(&p, x, w, cc->bias ? b : NULL, z, 0.0f, INFINITY, y_cpu);
            snprintf(what, sizeof what, "%s with Add and Relu, %s", label, isa_names[s]);
            test_close(what, y_cpu, chain, n_y, RTOL, atol);
            if (s > 1 && !pointwise) {
                snprintf(what, sizeof what, "%s with Add and Relu, %s against %s: the same bits", label,
                         isa_names[s], isa_names[1]);
                test_close(what, y_cpu, direct + n_y, n_y, 0, 0);
            } else if (s == 1) {
                memcpy(direct + n_y, y_cpu, (size_t)n_y * sizeof *y_cpu);
            }
            /* a Clip to [-0.25, 0.5] (ReLU6's form) for the Relu: ref, + z, then the Clip node's clamp */
            ptq_k_conv_cpu_epilogue(&p, x, w, cc->bias ? b : NULL, z, -0.25f, 0.5f, y_cpu);
            int clipped = 1;
            for (int64_t i = 0; i < n_y; i++) {
                const float v = y_ref[i] + z[i], t = v < -0.25f ? -0.25f : v, want = t > 0.5f ? 0.5f : t;
                clipped &= fabsf(y_cpu[i] - want) <= atol + RTOL * fabsf(want);
            }
            CHECK_MSG(clipped, "%s with Add and Clip, %s", label, isa_names[s]);
        }
        set_path(-1);
        free(chain);
        free(direct);
        free(z);
    }
    free(x);
    free(w);
    free(b);
    free(y_ref);
    free(y_cpu);
}

/* An image's outputs in a batch of cc->n are its outputs alone, bit for bit, on every path. */
static void batch_case(const char *label, uint64_t seed, const conv_case *cc)
{
    ptq_conv_params p, one;
    case_params(cc, NULL, &p);
    one = p;
    one.n = 1;
    const int64_t n_x = p.n * p.c_in * p.in[0] * p.in[1] * p.in[2], x_one = n_x / p.n;
    const int64_t n_w = p.c_out * (p.c_in / p.group) * p.k[0] * p.k[1] * p.k[2];
    const int64_t n_y = p.n * p.c_out * p.out[0] * p.out[1] * p.out[2], y_one = n_y / p.n;
    float *x = malloc((size_t)n_x * sizeof *x), *w = malloc((size_t)n_w * sizeof *w);
    float *b = malloc((size_t)p.c_out * sizeof *b), *y = malloc((size_t)(n_y + y_one) * sizeof *y);
    CHECK(x && w && b && y);
    if (x && w && b && y) {
        test_rand_seed(seed);
        test_fill_uniform(x, n_x, -1.0f, 1.0f);
        test_fill_uniform(w, n_w, -1.0f, 1.0f);
        test_fill_uniform(b, p.c_out, -1.0f, 1.0f);
        for (int s = 0; s < (int)(sizeof isas / sizeof isas[0]); s++) {
            char what[160];
            set_path(s);
            ptq_k_conv_cpu(&p, x, w, b, y);
            ptq_k_conv_cpu(&one, x + (p.n - 1) * x_one, w, b, y + n_y);
            snprintf(what, sizeof what, "%s, %s: the last image alone gives its bits in the batch", label,
                     isa_names[s]);
            test_close(what, y + n_y, y + n_y - y_one, y_one, 0, 0);
        }
        set_path(-1);
    }
    free(x);
    free(w);
    free(b);
    free(y);
}

/* Strides, dilations and pads near 2^31 (the most a model may give) around a few outputs: the direct path's copy of
 * a row (32 channels times 2^62 stride phases) and the depthwise path's padded plane (2^32 x 2^32) are past any
 * memory, and must be reckoned without wrapping: the im2col path or the ref's loops run them (these wrapped to 0:
 * a division by zero, and writes far outside the plane's copy). */
static void huge_geometry(void)
{
    const int64_t big = (int64_t)1 << 31;
    const ptq_conv_params cases_huge[] = {
        {1, 32, 4, 1, {1, 1, 1}, {1, 1, 1}, {1, 1, 2}, {1, big, big}, {1, 1, 1}, {0, 0, 0}, {0, 0, 1}, 0},
        {1, 2, 2, 2, {1, 1, 1}, {1, 2, 2}, {1, 2, 2}, {1, big, big}, {1, big - 1, big - 1}, {0, big, big},
         {0, big - 1, big - 1}, 0},
    };
    float x[32], w[256], b[4], y_ref[8], y_cpu[8];
    test_rand_seed(4000);
    test_fill_uniform(x, 32, -1.0f, 1.0f);
    test_fill_uniform(w, 256, -1.0f, 1.0f);
    test_fill_uniform(b, 4, -1.0f, 1.0f);
    for (int c = 0; c < (int)(sizeof cases_huge / sizeof cases_huge[0]); c++) {
        const ptq_conv_params *p = &cases_huge[c];
        const int64_t n_y = p->n * p->c_out * p->out[1] * p->out[2];
        ptq_k_conv_ref(p, x, w, b, y_ref);
        for (int s = 0; s < (int)(sizeof isas / sizeof isas[0]); s++) {
            char what[96];
            set_path(s);
            for (int64_t i = 0; i < n_y; i++)
                y_cpu[i] = NAN;
            ptq_k_conv_cpu(p, x, w, b, y_cpu);
            snprintf(what, sizeof what, "huge geometry %d, %s", c, isa_names[s]);
            test_close(what, y_cpu, y_ref, n_y, RTOL, ATOL);
        }
        set_path(-1);
    }
}

int main(void)
{
    char label[64];
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++)
        if (cases[i].n > 1 && cases[i].c_in != cases[i].group) {
            snprintf(label, sizeof label, "conv case %d", i);
            batch_case(label, 3000 + (uint64_t)i, &cases[i]);
        }
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        snprintf(label, sizeof label, "conv case %d", i);
        run_case(label, 1000 + (uint64_t)i, &cases[i], NULL);
    }
    for (int i = 0; i < (int)(sizeof ct_cases / sizeof ct_cases[0]); i++) {
        snprintf(label, sizeof label, "conv_transpose case %d", i);
        run_case(label, 2000 + (uint64_t)i, &ct_cases[i].c, ct_cases[i].extra);
    }
    /* known values: x = 0..24, all-ones weights */
    {
        float x[25], w[18], y_ref[50], y_cpu[50];
        for (int i = 0; i < 25; i++)
            x[i] = (float)i;
        for (int i = 0; i < 18; i++)
            w[i] = 1.0f;
        /* a 3x3 kernel over [1, 1, 5, 5] with pad 1 (ONNX basic_conv_with_padding) */
        ptq_conv_params p = {1, 1, 1, 1, {1, 5, 5}, {1, 5, 5}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 0};
        ptq_k_conv_ref(&p, x, w, NULL, y_ref);
        ptq_k_conv_cpu(&p, x, w, NULL, y_cpu);
        CHECK(y_ref[0] == 12.0f && y_ref[12] == 108.0f && y_ref[24] == 84.0f);
        CHECK(y_cpu[0] == 12.0f && y_cpu[12] == 108.0f && y_cpu[24] == 84.0f);
        /* ONNX's test_convtranspose: x 0..8 as [1, 1, 3, 3] into 2 channels of 3x3 kernels, no pads */
        static const float want[25] = {0,  1,  3,  3,  2,  3,  8,  15, 12, 7,  9,  21, 36,
                                       27, 15, 9,  20, 33, 24, 13, 6,  13, 21, 15, 8};
        ptq_conv_params t = {1, 1, 2, 1, {1, 3, 3}, {1, 5, 5}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 0};
        ptq_k_conv_transpose_ref(&t, x, w, NULL, y_ref);
        ptq_k_conv_transpose_cpu(&t, x, w, NULL, y_cpu);
        test_close("test_convtranspose channel 0 (ref)", y_ref, want, 25, 0, 0);
        test_close("test_convtranspose channel 1 (ref)", y_ref + 25, want, 25, 0, 0);
        test_close("test_convtranspose (cpu)", y_cpu, y_ref, 50, 0, 0);
    }
    huge_geometry();
    return test_done("parity_conv");
}
