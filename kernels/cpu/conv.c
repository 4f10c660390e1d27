/* Fast CPU convolution: 1-D and 2-D convolutions of several taps on a CPU
 * with AVX2 and FMA run directly (kernels/cpu/conv_direct.c); the others as
 * im2col tiles + cblas_sgemm per (image, group,
 * column tile), threads over those tiles, the same GEMM shapes for every
 * image whatever the batch; 1x1 stride-1 unpadded convs feed
 * the input to the GEMM as is, an image a call: kernels/cpu/gemm.c's FMA
 * tiles on AVX-512 (1.2x to 1.8x sgemm's speed there; on AVX2 they were
 * slower: build/bench/conv_cpu_layers), else sgemm; 1-D and 2-D depthwise convolutions run directly,
 * a plane per work item (kernels/cpu/conv_depthwise.c). Mirrors kernels/ref/conv.c; checked against it
 * in tests/parity_conv.c. */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "kernels/kernels.h"

enum {
    CONV_COL_BYTES = 1 << 20, /* im2col tile per thread: stays in cache while sgemm reads it */
    CONV_TILE_MIN = 64,       /* fewest output columns in a tile */
    CONV_SCRATCH_MAX = 256 << 20 /* the workers' im2col tiles together; past it the reference loops run */
};

/* Whether im2col_shifted can build p's im2col rows: a 2D convolution (one
 * plane: in0 = out0 = k0 = 1, no padding there) of stride 1 whose output rows
 * are as wide as the input's, the usual "same" padding. */
static int shifted_rows(const ptq_conv_params *p)
{
    return p->in[0] == 1 && p->out[0] == 1 && p->k[0] == 1 && p->pad_lo[0] == 0 && p->stride[1] == 1 &&
           p->stride[2] == 1 && p->out[2] == p->in[2];
}

/* im2col's columns for a shifted_rows convolution, the same values: output
 * position j of tap (k1, k2) reads the input plane at j + dy * w + dx, so each
 * row of the matrix is one copy of the plane from that offset, zeros where that
 * falls outside the plane (the output rows whose tap row is above or below the
 * image), then zeros in the first -dx or the last dx columns of each output row
 * (taps left or right of the image, which the copy took from the next row). */
static void im2col_shifted(const ptq_conv_params *p, const float *xg, int64_t cg_in, int64_t j0, int64_t nj,
                           float *col, int64_t ld)
{
    const int64_t h = p->in[1], w = p->in[2], plane = h * w;
    const int64_t r_first = j0 / w, r_last = (j0 + nj - 1) / w; /* the output rows the tile touches */
    float *row = col;
    for (int64_t c = 0; c < cg_in; c++)
        for (int64_t k1 = 0; k1 < p->k[1]; k1++)
            for (int64_t k2 = 0; k2 < p->k[2]; k2++, row += ld) {
                const int64_t dy = k1 * p->dil[1] - p->pad_lo[1], dx = k2 * p->dil[2] - p->pad_lo[2];
                const int64_t shift = dy * w + dx;
                /* tile columns [a, b) read inside the plane */
                int64_t a = -shift - j0, b = plane - shift - j0;
                a = a < 0 ? 0 : (a > nj ? nj : a);
                b = b > nj ? nj : (b < a ? a : b);
                memset(row, 0, (size_t)a * sizeof *row);
                if (b > a)
                    memcpy(row + a, xg + c * plane + j0 + shift + a, (size_t)(b - a) * sizeof *row);
                memset(row + b, 0, (size_t)(nj - b) * sizeof *row);
                const int64_t lo = dx < 0 ? -dx : 0, hi = dx > 0 ? w - dx : w; /* the row's columns in the image */
                for (int64_t r = r_first; r <= r_last; r++) {
                    const int64_t s = r * w - j0 < 0 ? 0 : r * w - j0;
                    const int64_t e = (r + 1) * w - j0 > nj ? nj : (r + 1) * w - j0;
                    for (int64_t j = s; j < e && j + j0 - r * w < lo; j++)
                        row[j] = 0.0f;
                    for (int64_t j = e - 1; j >= s && j + j0 - r * w >= hi; j--)
                        row[j] = 0.0f;
                }
            }
}

/* Columns [j0, j0+nj) of one group's im2col matrix.
 * xg: [cg_in, in0, in1, in2] (one image, one group); col: [cg_in*k0*k1*k2, nj] with row stride ld.
 * Walks output positions row by row with running indices (no divisions in
 * the inner loops); a row segment's valid middle part is a strided gather,
 * a plain copy for stride 1. */
static void im2col(const ptq_conv_params *p, const float *xg, int64_t cg_in, int64_t j0, int64_t nj, float *col,
                   int64_t ld)
{
    if (shifted_rows(p)) {
        im2col_shifted(p, xg, cg_in, j0, nj, col, ld);
        return;
    }
    const int64_t in_size = p->in[0] * p->in[1] * p->in[2];
    const int64_t out12 = p->out[1] * p->out[2];
    const int64_t s2 = p->stride[2];
    const int64_t start0 = j0 / out12, start1 = j0 % out12 / p->out[2], start2 = j0 % p->out[2];
    float *row = col;
    for (int64_t c = 0; c < cg_in; c++)
        for (int64_t k0 = 0; k0 < p->k[0]; k0++)
            for (int64_t k1 = 0; k1 < p->k[1]; k1++)
                for (int64_t k2 = 0; k2 < p->k[2]; k2++, row += ld) {
                    float *dst = row;
                    const int64_t base = k2 * p->dil[2] - p->pad_lo[2];
                    /* output columns o2 in [lo, hi) read inside the row */
                    const int64_t lo = base >= 0 ? 0 : (-base + s2 - 1) / s2;
                    const int64_t hi = p->in[2] - 1 - base < 0 ? 0 : (p->in[2] - 1 - base) / s2 + 1;
                    int64_t o0 = start0, o1 = start1, o2 = start2;
                    for (int64_t left = nj; left > 0;) {
                        const int64_t o_end = p->out[2] - o2 < left ? p->out[2] : o2 + left;
                        const int64_t i0 = o0 * p->stride[0] - p->pad_lo[0] + k0 * p->dil[0];
                        const int64_t i1 = o1 * p->stride[1] - p->pad_lo[1] + k1 * p->dil[1];
                        int64_t o = o2;
                        if (i0 >= 0 && i0 < p->in[0] && i1 >= 0 && i1 < p->in[1]) {
                            const float *src = xg + c * in_size + (i0 * p->in[1] + i1) * p->in[2] + base;
                            const int64_t a = lo < o ? o : (lo > o_end ? o_end : lo);
                            const int64_t e = hi > o_end ? o_end : (hi < a ? a : hi);
                            for (; o < a; o++)
                                *dst++ = 0.0f;
                            if (s2 == 1)
                                for (; o < e; o++)
                                    *dst++ = src[o];
                            else
                                for (; o < e; o++)
                                    *dst++ = src[o * s2];
                        }
                        for (; o < o_end; o++)
                            *dst++ = 0.0f;
                        left -= o_end - o2;
                        o2 = 0;
                        if (++o1 == p->out[1]) {
                            o1 = 0;
                            o0++;
                        }
                    }
                }
}

/* A chain's Add and Relu or Clip on n outputs of the Conv, in place: y + z (z: the residual at y's positions, or
 * NULL), then t = y < lo ? lo : y, t > hi ? hi : t (Relu: lo 0, hi +Inf, the same bits as Relu's y < 0 ? 0 : y), each
 * rounded as the Add, Relu and Clip nodes round them (kernels/cpu/binary.c, unary.c), so the same bits. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
epilogue(float *y, const float *z, float lo, float hi, int64_t n)
{
    if (z)
        for (int64_t i = 0; i < n; i++)
            y[i] = y[i] + z[i];
    if (lo > -INFINITY || hi < INFINITY)
        for (int64_t i = 0; i < n; i++) {
            const float t = y[i] < lo ? lo : y[i];
            y[i] = t > hi ? hi : t;
        }
}

/* The reference convolution and then the chain's Add and Relu: what a void kernel falls back on when it finds
 * no room for its scratch (it cannot report NOMEM; the reference loops need none). */
static void conv_ref_epilogue(const ptq_conv_params *p, const float *x, const float *w, const float *b,
                              const float *z, float lo, float hi, float *y)
{
    ptq_k_conv_ref(p, x, w, b, y);
    epilogue(y, z, lo, hi, p->n * p->c_out * p->out[0] * p->out[1] * p->out[2]);
}

/* Row m of y (rows ld floats apart) to n copies of b[m], for GEMMs that add to it; to the widest stores. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
fill_rows(float *y, const float *b, int64_t rows, int64_t n, int64_t ld)
{
    for (int64_t m = 0; m < rows; m++)
        for (int64_t j = 0; j < n; j++)
            y[m * ld + j] = b[m];
}

/* One work item: output columns [j0, j0+nj) of image n0, group g: one GEMM
 * writing y directly (bias pre-filled). col: [rows, nj] scratch, unused for
 * pointwise convs. Every image of a layer runs the same GEMM shapes, so its
 * result does not depend on the batch it came in (OpenBLAS rounds
 * differently for other shapes). */
static void conv_item(const ptq_conv_params *p, const float *x, const float *w, const float *b, const float *z,
                      float lo, float hi, float *y, int64_t n0, int64_t g, int64_t j0, int64_t nj, int pointwise,
                      float *col)
{
    const int64_t cg_in = p->c_in / p->group, cg_out = p->c_out / p->group;
    const int64_t in_size = p->in[0] * p->in[1] * p->in[2];
    const int64_t out_size = p->out[0] * p->out[1] * p->out[2];
    const int64_t rows = cg_in * p->k[0] * p->k[1] * p->k[2];
    const float *wg = w + g * cg_out * rows;
    const float *bg = b ? b + g * cg_out : NULL;
    const float *xg = x + (n0 * p->c_in + g * cg_in) * in_size;
    if (!pointwise)
        im2col(p, xg, cg_in, j0, nj, col, nj);
    float *yg = y + (n0 * p->c_out + g * cg_out) * out_size + j0;
    if (pointwise && ptq_k_conv_cpu_isa() >= 2) {
        /* a whole image (a pointwise conv's one tile: nj = out_size = in_size): kernels/cpu/gemm.c's FMA tiles, the
           bias, the Add and the clamp in their stores (the same bits as the bias held in y, beta 1, then the
           epilogue's passes) */
        const ptq_gemm_params gp = {cg_out, nj, rows, 0, 0, 1.0f, 0.0f};
        const ptq_gemm_epi e = {bg, z ? z + (yg - y) : NULL, lo, hi};
        ptq_k_gemm_rows_epi_cpu(&gp, wg, xg, &e, yg);
        return;
    }
    if (bg)
        fill_rows(yg, bg, cg_out, nj, out_size);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)cg_out, (blasint)nj, (blasint)rows, 1.0f, wg,
                (blasint)rows, pointwise ? xg + j0 : col, (blasint)(pointwise ? in_size : nj), bg ? 1.0f : 0.0f, yg,
                (blasint)out_size);
    for (int64_t m = 0; m < cg_out; m++)
        epilogue(yg + m * out_size, z ? z + (yg - y) + m * out_size : NULL, lo, hi, nj);
}

/* What every pool thread needs to run work items of one convolution. */
typedef struct conv_job {
    const ptq_conv_params *p;
    const float *x, *w, *b, *z;
    float lo, hi; /* the chain's Relu or Clip (epilogue) */
    float *y;
    int64_t n_tiles, tile;
    int pointwise;
    float *scratch; /* [workers, col_per] */
    size_t col_per;
} conv_job;

static void conv_items(void *arg, int64_t begin, int64_t end, int worker)
{
    const conv_job *c = arg;
    const ptq_conv_params *p = c->p;
    const int64_t out_size = p->out[0] * p->out[1] * p->out[2];
    float *mine = c->scratch ? c->scratch + (size_t)worker * c->col_per : NULL;
    for (int64_t it = begin; it < end; it++) {
        const int64_t t = it % c->n_tiles, g = it / c->n_tiles % p->group, n0 = it / c->n_tiles / p->group;
        const int64_t j0 = t * c->tile, nj = out_size - j0 < c->tile ? out_size - j0 : c->tile;
        conv_item(p, c->x, c->w, c->b, c->z, c->lo, c->hi, c->y, n0, g, j0, nj, c->pointwise, mine);
    }
}

/* What kernels/cpu/conv_depthwise.c takes: several groups of one input channel each (depthwise, with any channel
 * multiplier; a convolution of a single input channel stays one GEMM an image), 1-D or 2-D (one plane: in0 = out0 =
 * k0 = 1, no padding there). */
static int depthwise_2d(const ptq_conv_params *p)
{
    return p->c_in == p->group && p->group > 1 && p->in[0] == 1 && p->out[0] == 1 && p->k[0] == 1 &&
           p->pad_lo[0] == 0;
}

void ptq_k_conv_cpu(const ptq_conv_params *p, const float *x, const float *w, const float *b, float *y)
{
    ptq_k_conv_cpu_epilogue(p, x, w, b, NULL, -INFINITY, INFINITY, y);
}

/* x: [n, c_in, in0, in1, in2]; w: [c_out, c_in/group, k0, k1, k2];
 * b: [c_out] or NULL; z: y's shape or NULL; y: [n, c_out, out0, out1, out2]; each output clamped to [lo, hi]. */
void ptq_k_conv_cpu_epilogue(const ptq_conv_params *p, const float *x, const float *w, const float *b,
                             const float *z, float lo, float hi, float *y)
{
    const int64_t cg_in = p->c_in / p->group;
    const int64_t out_size = p->out[0] * p->out[1] * p->out[2];
    const int64_t rows = cg_in * p->k[0] * p->k[1] * p->k[2];
    int pointwise = 1;
    for (int s = 0; s < PTQ_SPATIAL; s++)
        pointwise &= p->k[s] == 1 && p->stride[s] == 1 && p->pad_lo[s] == 0 && p->pad_hi[s] == 0;
    if (p->n == 0 || p->c_out == 0 || out_size == 0)
        return;
    if (depthwise_2d(p)) { /* a GEMM per channel of 1 x taps weights would be all call overhead */
        if (!ptq_k_conv_cpu_depthwise(p, x, w, b, z, lo, hi, y)) /* no room for its copies: the reference loops */
            conv_ref_epilogue(p, x, w, b, z, lo, hi, y);
        return;
    }
    if (rows > 0 && ptq_k_conv_cpu_direct(p, x, w, b, z, lo, hi, y))
        return;
    ptq_k_blas_single_thread();
    if (rows == 0) { /* no input channels: the output is the bias */
        for (int64_t i = 0; i < p->n * p->c_out * out_size; i++)
            y[i] = b ? b[i / out_size % p->c_out] : 0.0f;
        epilogue(y, z, lo, hi, p->n * p->c_out * out_size);
        return;
    }
    /* columns per GEMM: a tile of one image */
    const int64_t col_floats = (int64_t)(CONV_COL_BYTES / sizeof(float)) / rows;
    int64_t tile = out_size;
    if (!pointwise) {
        tile = col_floats < CONV_TILE_MIN ? CONV_TILE_MIN : col_floats;
        tile = tile > out_size ? out_size : tile;
    }
    const int64_t n_tiles = (out_size + tile - 1) / tile;
    const int64_t n_items = p->n * p->group * n_tiles;
    const int n_workers = ptq_par_workers();
    const size_t col_per = pointwise ? 0 : (size_t)rows * (size_t)tile;
    float *scratch = NULL;
    if (col_per) {
        /* a tile of CONV_TILE_MIN columns of huge rows (a hostile model's kernel of 2^20 taps: 256 MiB a worker) */
        if ((double)n_workers * (double)col_per * sizeof *scratch > (double)CONV_SCRATCH_MAX) {
            conv_ref_epilogue(p, x, w, b, z, lo, hi, y);
            return;
        }
        scratch = malloc((size_t)n_workers * col_per * sizeof *scratch);
        if (!scratch) {
            conv_ref_epilogue(p, x, w, b, z, lo, hi, y);
            return;
        }
    }
    conv_job job = {p, x, w, b, z, lo, hi, y, n_tiles, tile, pointwise, scratch, col_per};
    /* one item at a time: items are whole GEMMs; sgemm runs single-threaded on each pool thread */
    ptq_parallel_for(n_items, 1, conv_items, &job);
    free(scratch);
}
