/* Fast CPU convolution: im2col tiles + cblas_sgemm per (image, group,
 * column tile), threads over those tiles; 1x1 stride-1 unpadded convs feed
 * the input to sgemm as is. Mirrors kernels/ref/conv.c; checked against it
 * in tests/parity_conv.c. */
#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

enum {
    CONV_COL_BYTES = 1 << 21, /* im2col tile per thread: stays in cache while sgemm reads it */
    CONV_TILE_MIN = 64,       /* fewest output columns in a tile */
    CONV_ITEMS_PER_THREAD = 2 /* tiles a thread needs before we thread over tiles rather than inside sgemm */
};

/* One row segment of im2col: output columns o2 in [o_begin, o_end) of the
 * input row src (in2 floats, NULL when the row lies in the padding) read at
 * o2*s2 + base; [lo, hi) is where that index falls inside the row. */
static float *im2col_segment(float *dst, const float *src, int64_t o_begin, int64_t o_end, int64_t s2, int64_t base,
                             int64_t lo, int64_t hi)
{
    int64_t o = o_begin;
    if (src) {
        const int64_t a = lo > o_end ? o_end : lo;
        const int64_t e = hi > o_end ? o_end : hi;
        for (; o < a; o++)
            *dst++ = 0.0f;
        if (s2 == 1 && e > o) {
            memcpy(dst, src + o + base, (size_t)(e - o) * sizeof *dst);
            dst += e - o;
            o = e;
        }
        for (; o < e; o++)
            *dst++ = src[o * s2 + base];
    }
    for (; o < o_end; o++)
        *dst++ = 0.0f;
    return dst;
}

/* Columns [j0, j0+nj) of one group's im2col matrix.
 * xg: [cg_in, in0, in1, in2] (one image, one group); col: [cg_in*k0*k1*k2, nj]. */
static void im2col(const ptq_conv_params *p, const float *xg, int64_t cg_in, int64_t j0, int64_t nj, float *col)
{
    const int64_t in_size = p->in[0] * p->in[1] * p->in[2];
    const int64_t out12 = p->out[1] * p->out[2];
    const int64_t s2 = p->stride[2];
    float *dst = col;
    for (int64_t c = 0; c < cg_in; c++)
        for (int64_t k0 = 0; k0 < p->k[0]; k0++)
            for (int64_t k1 = 0; k1 < p->k[1]; k1++)
                for (int64_t k2 = 0; k2 < p->k[2]; k2++) {
                    const int64_t base = k2 * p->dil[2] - p->pad_lo[2];
                    const int64_t lo = base >= 0 ? 0 : (-base + s2 - 1) / s2;
                    const int64_t hi = p->in[2] - 1 - base < 0 ? 0 : (p->in[2] - 1 - base) / s2 + 1;
                    for (int64_t j = j0; j < j0 + nj;) {
                        const int64_t o0 = j / out12, o1 = j % out12 / p->out[2], o2 = j % p->out[2];
                        const int64_t left = j0 + nj - j;
                        const int64_t o_end = p->out[2] - o2 < left ? p->out[2] : o2 + left;
                        const int64_t i0 = o0 * p->stride[0] - p->pad_lo[0] + k0 * p->dil[0];
                        const int64_t i1 = o1 * p->stride[1] - p->pad_lo[1] + k1 * p->dil[1];
                        const int inside = i0 >= 0 && i0 < p->in[0] && i1 >= 0 && i1 < p->in[1];
                        const float *src = inside ? xg + c * in_size + (i0 * p->in[1] + i1) * p->in[2] : NULL;
                        dst = im2col_segment(dst, src, o2, o_end, s2, base, lo, hi);
                        j += o_end - o2;
                    }
                }
}

/* One work item: output columns [j0, j0+nj) of image n, group g.
 * col: [rows, nj] scratch, unused for pointwise convs. */
static void conv_item(const ptq_conv_params *p, const float *x, const float *w, const float *b, float *y,
                      int64_t n, int64_t g, int64_t j0, int64_t nj, int pointwise, float *col)
{
    const int64_t cg_in = p->c_in / p->group, cg_out = p->c_out / p->group;
    const int64_t in_size = p->in[0] * p->in[1] * p->in[2];
    const int64_t out_size = p->out[0] * p->out[1] * p->out[2];
    const int64_t rows = cg_in * p->k[0] * p->k[1] * p->k[2];
    const float *xg = x + (n * p->c_in + g * cg_in) * in_size;
    float *yg = y + (n * p->c_out + g * cg_out) * out_size + j0;
    const float *bmat = pointwise ? xg + j0 : col;
    const int64_t ldb = pointwise ? in_size : nj;
    if (!pointwise)
        im2col(p, xg, cg_in, j0, nj, col);
    if (b)
        for (int64_t m = 0; m < cg_out; m++)
            for (int64_t j = 0; j < nj; j++)
                yg[m * out_size + j] = b[g * cg_out + m];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)cg_out, (blasint)nj, (blasint)rows, 1.0f,
                w + g * cg_out * rows, (blasint)rows, bmat, (blasint)ldb, b ? 1.0f : 0.0f, yg, (blasint)out_size);
}

/* x: [n, c_in, in0, in1, in2]; w: [c_out, c_in/group, k0, k1, k2];
 * b: [c_out] or NULL; y: [n, c_out, out0, out1, out2]. */
void ptq_k_conv_cpu(const ptq_conv_params *p, const float *x, const float *w, const float *b, float *y)
{
    const int64_t cg_in = p->c_in / p->group;
    const int64_t out_size = p->out[0] * p->out[1] * p->out[2];
    const int64_t rows = cg_in * p->k[0] * p->k[1] * p->k[2];
    int pointwise = 1;
    for (int s = 0; s < PTQ_SPATIAL; s++)
        pointwise &= p->k[s] == 1 && p->stride[s] == 1 && p->pad_lo[s] == 0 && p->pad_hi[s] == 0;
    if (p->n == 0 || p->c_out == 0 || out_size == 0)
        return;
    if (rows == 0) { /* no input channels: the output is the bias */
        for (int64_t i = 0; i < p->n * p->c_out * out_size; i++)
            y[i] = b ? b[i / out_size % p->c_out] : 0.0f;
        return;
    }
    int64_t tile = out_size;
    if (!pointwise) {
        tile = (int64_t)(CONV_COL_BYTES / sizeof(float)) / rows;
        tile = tile < CONV_TILE_MIN ? CONV_TILE_MIN : tile;
        tile = tile > out_size ? out_size : tile;
    }
    const int64_t n_tiles = (out_size + tile - 1) / tile;
    const int64_t n_items = p->n * p->group * n_tiles;
    const int n_threads = omp_get_max_threads();
    const int over_items = n_threads > 1 && n_items >= (int64_t)n_threads * CONV_ITEMS_PER_THREAD;
    const int n_cols = over_items ? n_threads : 1;
    float *cols = NULL;
    if (!pointwise) {
        cols = malloc((size_t)n_cols * (size_t)rows * (size_t)tile * sizeof *cols);
        if (!cols) { /* a void kernel cannot report NOMEM: the direct loops need no scratch */
            ptq_k_conv_ref(p, x, w, b, y);
            return;
        }
    }
    const int blas_threads = openblas_get_num_threads();
    if (over_items) /* one sgemm per thread at a time: OpenBLAS's own threads would oversubscribe the cores */
        openblas_set_num_threads(1);
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads) if (over_items)
    for (int64_t it = 0; it < n_items; it++) {
        const int64_t t = it % n_tiles, g = it / n_tiles % p->group, n = it / n_tiles / p->group;
        const int64_t j0 = t * tile, nj = out_size - j0 < tile ? out_size - j0 : tile;
        float *col = cols ? cols + (size_t)omp_get_thread_num() * (size_t)rows * (size_t)tile : NULL;
        conv_item(p, x, w, b, y, n, g, j0, nj, pointwise, col);
    }
    if (over_items)
        openblas_set_num_threads(blas_threads);
    free(cols);
}
