/* Fast CPU transposed convolution: per (image, group, block of output
 * channels) one cblas_sgemm per tile of input positions, W^T x into a
 * column buffer [channels x taps, positions], then col2im adds each column
 * where its tap lands. Threads over the (image, group, block) items, which
 * write disjoint outputs; tiles and blocks follow the layer's shape only, so
 * an image's result does not depend on its batch. Mirrors
 * kernels/ref/conv_transpose.c; checked against it in
 * tests/parity_conv.c. */
#include <cblas.h>
#include <stdlib.h>

#include "core/parallel.h"
#include "kernels/kernels.h"

enum {
    CT_COL_BYTES = 1 << 20, /* column tile per thread: stays in cache while col2im reads it */
    CT_TILE_MIN = 64,       /* fewest input positions in a tile */
    CT_BLOCK_ROWS = 256     /* column rows (channels x taps) per item, at least one channel */
};

/* What every pool thread needs to run items of one transposed convolution. */
typedef struct ct_job {
    const ptq_conv_params *p;
    const float *x, *w, *b;
    float *y;
    int64_t m_block, n_blocks, tile;
    float *scratch; /* [workers, col_per] */
    size_t col_per;
} ct_job;

/* Adds col [n_m * k0 * k1 * k2, nj] (input positions [j0, j0 + nj) of one
 * image and group, channels' taps as rows) into yb [n_m, out0, out1, out2].
 * Walks input positions row by row with running indices; along the last
 * axis the positions landing inside the output are one strided run. */
static void col2im(const ptq_conv_params *p, const float *col, int64_t n_m, int64_t j0, int64_t nj, float *yb)
{
    const int64_t in12 = p->in[1] * p->in[2], out_size = p->out[0] * p->out[1] * p->out[2];
    const int64_t s2 = p->stride[2];
    const int64_t start0 = j0 / in12, start1 = j0 % in12 / p->in[2], start2 = j0 % p->in[2];
    const float *row = col;
    for (int64_t m = 0; m < n_m; m++)
        for (int64_t k0 = 0; k0 < p->k[0]; k0++)
            for (int64_t k1 = 0; k1 < p->k[1]; k1++)
                for (int64_t k2 = 0; k2 < p->k[2]; k2++, row += nj) {
                    float *ym = yb + m * out_size;
                    const int64_t base = k2 * p->dil[2] - p->pad_lo[2]; /* output o2 = i2 * s2 + base */
                    /* input i2 in [lo, hi) lands inside the row */
                    const int64_t lo = base >= 0 ? 0 : (-base + s2 - 1) / s2;
                    const int64_t hi = p->out[2] - 1 - base < 0 ? 0 : (p->out[2] - 1 - base) / s2 + 1;
                    const float *src = row;
                    int64_t i0 = start0, i1 = start1, i2 = start2;
                    for (int64_t left = nj; left > 0;) {
                        const int64_t i_end = p->in[2] - i2 < left ? p->in[2] : i2 + left;
                        const int64_t o0 = i0 * p->stride[0] + k0 * p->dil[0] - p->pad_lo[0];
                        const int64_t o1 = i1 * p->stride[1] + k1 * p->dil[1] - p->pad_lo[1];
                        if (o0 >= 0 && o0 < p->out[0] && o1 >= 0 && o1 < p->out[1]) {
                            float *dst = ym + (o0 * p->out[1] + o1) * p->out[2];
                            const int64_t a = lo > i2 ? lo : i2, e = hi < i_end ? hi : i_end;
                            for (int64_t i = a; i < e; i++)
                                dst[i * s2 + base] += src[i - i2];
                        }
                        src += i_end - i2;
                        left -= i_end - i2;
                        i2 = 0;
                        if (++i1 == p->in[1]) {
                            i1 = 0;
                            i0++;
                        }
                    }
                }
}

/* One item: output channels [m0, m0 + n_m) of group g, image n0, bias first,
 * then every tile of input positions. col: [n_m * taps, tile] scratch. */
static void ct_item(const ct_job *c, int64_t n0, int64_t g, int64_t blk, float *col)
{
    const ptq_conv_params *p = c->p;
    const int64_t cg_in = p->c_in / p->group, cg_out = p->c_out / p->group;
    const int64_t in_size = p->in[0] * p->in[1] * p->in[2], out_size = p->out[0] * p->out[1] * p->out[2];
    const int64_t taps = p->k[0] * p->k[1] * p->k[2];
    const int64_t m0 = blk * c->m_block, n_m = cg_out - m0 < c->m_block ? cg_out - m0 : c->m_block;
    const float *xg = c->x + (n0 * p->c_in + g * cg_in) * in_size;
    const float *wg = c->w + g * cg_in * cg_out * taps + m0 * taps; /* rows of [cg_in, cg_out * taps] */
    float *yb = c->y + (n0 * p->c_out + g * cg_out + m0) * out_size;
    for (int64_t m = 0; m < n_m; m++) {
        const float v = c->b ? c->b[g * cg_out + m0 + m] : 0.0f;
        for (int64_t o = 0; o < out_size; o++)
            yb[m * out_size + o] = v;
    }
    for (int64_t j0 = 0; j0 < in_size; j0 += c->tile) {
        const int64_t nj = in_size - j0 < c->tile ? in_size - j0 : c->tile;
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)(n_m * taps), (blasint)nj, (blasint)cg_in,
                    1.0f, wg, (blasint)(cg_out * taps), xg + j0, (blasint)in_size, 0.0f, col, (blasint)nj);
        col2im(p, col, n_m, j0, nj, yb);
    }
}

static void ct_items(void *arg, int64_t begin, int64_t end, int worker)
{
    const ct_job *c = arg;
    float *mine = c->scratch + (size_t)worker * c->col_per;
    for (int64_t it = begin; it < end; it++) {
        const int64_t blk = it % c->n_blocks, g = it / c->n_blocks % c->p->group, n0 = it / c->n_blocks / c->p->group;
        ct_item(c, n0, g, blk, mine);
    }
}

/* x: [n, c_in, in0, in1, in2]; w: [c_in, c_out/group, k0, k1, k2];
 * b: [c_out] or NULL; y: [n, c_out, out0, out1, out2]. */
void ptq_k_conv_transpose_cpu(const ptq_conv_params *p, const float *x, const float *w, const float *b, float *y)
{
    const int64_t cg_in = p->c_in / p->group, cg_out = p->c_out / p->group;
    const int64_t in_size = p->in[0] * p->in[1] * p->in[2], out_size = p->out[0] * p->out[1] * p->out[2];
    const int64_t taps = p->k[0] * p->k[1] * p->k[2];
    if (p->n == 0 || cg_out == 0 || out_size == 0)
        return;
    if (cg_in == 0) { /* no input channels: the output is the bias */
        for (int64_t i = 0; i < p->n * p->c_out * out_size; i++)
            y[i] = b ? b[i / out_size % p->c_out] : 0.0f;
        return;
    }
    ptq_k_blas_single_thread();
    int64_t m_block = CT_BLOCK_ROWS / taps;
    m_block = m_block < 1 ? 1 : (m_block > cg_out ? cg_out : m_block);
    const int64_t rows = m_block * taps;
    int64_t tile = (int64_t)(CT_COL_BYTES / sizeof(float)) / rows;
    tile = tile < CT_TILE_MIN ? CT_TILE_MIN : tile;
    tile = tile > in_size ? in_size : tile;
    const int64_t n_blocks = (cg_out + m_block - 1) / m_block;
    const int n_workers = ptq_par_workers();
    const size_t col_per = (size_t)rows * (size_t)tile;
    float *scratch = malloc((size_t)n_workers * col_per * sizeof *scratch);
    if (!scratch) { /* a void kernel cannot report NOMEM: the direct loops need no scratch */
        ptq_k_conv_transpose_ref(p, x, w, b, y);
        return;
    }
    ct_job job = {p, x, w, b, y, m_block, n_blocks, tile, scratch, col_per};
    /* one item at a time: items are whole GEMM sequences; sgemm runs single-threaded on each pool thread */
    ptq_parallel_for(p->n * p->group * n_blocks, 1, ct_items, &job);
    free(scratch);
}
