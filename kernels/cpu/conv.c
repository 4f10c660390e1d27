/* Fast CPU convolution: 1-D and 2-D convolutions of several taps on a CPU
 * with AVX2 and FMA run directly (kernels/cpu/conv_direct.c); the others as
 * im2col tiles + cblas_sgemm per (image, group,
 * column tile), threads over those tiles, the same GEMM shapes for every
 * image whatever the batch; 1x1 stride-1 unpadded convs feed
 * the input to sgemm as is; 1-D and 2-D depthwise convolutions run directly,
 * a plane per work item. Mirrors kernels/ref/conv.c; checked against it
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
    CONV_SCRATCH_MAX = 256 << 20, /* the workers' im2col tiles together; past it the reference loops run */
    DW_SLACK = 32             /* floats after a padded plane that dw_plane_3x3 reads past it (dropped sums) */
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

/* epilogue's outputs from the sums a (not y), rows rows of n (a's rows lda apart, y's and z's n): y = a (+ z),
 * clamped, in one pass, one call a plane. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
epilogue_from(float *y, const float *a, int64_t lda, const float *z, float lo, float hi, int64_t rows, int64_t n)
{
    for (int64_t r = 0; r < rows; r++, y += n, a += lda, z = z ? z + n : NULL)
        for (int64_t i = 0; i < n; i++) {
            const float v = z ? a[i] + z[i] : a[i], t = v < lo ? lo : v;
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

/* What depthwise_planes takes: several groups of one input channel each (depthwise, with any channel multiplier;
 * a convolution of a single input channel stays one GEMM an image), 1-D or 2-D (one plane: in0 = out0 = k0 = 1,
 * no padding there). */
static int depthwise_2d(const ptq_conv_params *p)
{
    return p->c_in == p->group && p->group > 1 && p->in[0] == 1 && p->out[0] == 1 && p->k[0] == 1 &&
           p->pad_lo[0] == 0;
}

typedef struct dw_job {
    const ptq_conv_params *p;
    const float *x, *w, *b, *z;
    float lo, hi; /* the chain's Relu or Clip (epilogue) */
    float *y;
    float *pad;        /* [workers][per]: each worker's copy of a plane with its padding as zeros, DW_SLACK
                          floats, then (flat) dw_plane_3x3's sums */
    int64_t ph, pw;    /* that copy's rows and columns: every position a tap reads */
    int64_t flat, per; /* 3x3, stride 1, undilated: dw_plane_3x3's sums, flat floats of them */
} dw_job;

/* The plane xp into the padded copy xq (j->ph x j->pw): only the positions a tap reads inside the image, as the
 * rest (the padding, and the slack past the plane) stays the zeros the worker's copy was allocated with. */
static void dw_pad_plane(const dw_job *j, const float *xp, float *xq)
{
    const ptq_conv_params *p = j->p;
    const int64_t h = p->in[1], w_in = p->in[2], l1 = p->pad_lo[1], l2 = p->pad_lo[2];
    const int64_t c0 = l2 < j->pw ? l2 : j->pw; /* copied columns [c0, c1) */
    const int64_t c1 = w_in + l2 < j->pw ? w_in + l2 : j->pw;
    const int64_t r0 = l1 > 0 ? l1 : 0, r1 = h + l1 < j->ph ? h + l1 : j->ph; /* copied rows [r0, r1) */
    if (c1 <= c0)
        return;
    for (int64_t r = r0; r < r1; r++)
        memcpy(xq + r * j->pw + c0, xp + (r - l1) * w_in + (c0 - l2), (size_t)(c1 - c0) * sizeof *xq);
}

/* A 3x3 stride-1 undilated depthwise plane from its padded copy xq, pw wide: acc[q] for q = o1 * pw + o2 (o2 <
 * pw, the columns o2 >= the output's width dropped by the caller), the bias plus every tap's weight times what it
 * reads, in (k1, k2) order, in one register, as dw_rows_padded sums them. One loop over the whole plane rather
 * than a row at a time: rows of 7 to 28 outputs leave the widest vectors little to do; len a multiple of 16 (xq
 * has the slack its reads past the plane take). To the CPU's widest vectors (the same bits: C rounds each product
 * and sum). */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
dw_plane_3x3(const float *xq, int64_t pw, const float *wm, float bias, float *acc, int64_t len)
{
    const float *r0 = xq, *r1 = xq + pw, *r2 = xq + 2 * pw;
    for (int64_t q = 0; q < len; q++) {
        float v = bias;
        v += wm[0] * r0[q];
        v += wm[1] * r0[q + 1];
        v += wm[2] * r0[q + 2];
        v += wm[3] * r1[q];
        v += wm[4] * r1[q + 1];
        v += wm[5] * r1[q + 2];
        v += wm[6] * r2[q];
        v += wm[7] * r2[q + 1];
        v += wm[8] * r2[q + 2];
        acc[q] = v;
    }
}

/* Output rows of plane item from its padded copy xq: each output the bias plus every tap's weight times what it
 * reads, in (k1, k2) order, in one register; 3x3 kernels unrolled so the columns vectorize. */
static void dw_rows_padded(const dw_job *j, const float *xq, const float *wm, float bias, float *yp)
{
    const ptq_conv_params *p = j->p;
    const int64_t oh = p->out[1], ow = p->out[2], pw = j->pw;
    const int64_t s1 = p->stride[1], s2 = p->stride[2], d1 = p->dil[1], d2 = p->dil[2];
    for (int64_t o1 = 0; o1 < oh; o1++) {
        float *yr = yp + o1 * ow;
        const float *r0 = xq + o1 * s1 * pw;
        if (p->k[1] == 3 && p->k[2] == 3) {
            const float *r1 = r0 + d1 * pw, *r2 = r1 + d1 * pw;
            for (int64_t o2 = 0; o2 < ow; o2++) {
                const int64_t c = o2 * s2;
                float acc = bias;
                acc += wm[0] * r0[c];
                acc += wm[1] * r0[c + d2];
                acc += wm[2] * r0[c + 2 * d2];
                acc += wm[3] * r1[c];
                acc += wm[4] * r1[c + d2];
                acc += wm[5] * r1[c + 2 * d2];
                acc += wm[6] * r2[c];
                acc += wm[7] * r2[c + d2];
                acc += wm[8] * r2[c + 2 * d2];
                yr[o2] = acc;
            }
            continue;
        }
        for (int64_t o2 = 0; o2 < ow; o2++) {
            float acc = bias;
            for (int64_t k1 = 0; k1 < p->k[1]; k1++)
                for (int64_t k2 = 0; k2 < p->k[2]; k2++)
                    acc += wm[k1 * p->k[2] + k2] * r0[k1 * d1 * pw + o2 * s2 + k2 * d2];
            yr[o2] = acc;
        }
    }
}

/* Output planes [begin, end) (image n, output channel m: item n * c_out + m) of a depthwise_2d convolution,
 * directly, from the worker's padded copy of the plane (dw_rows_padded), then the chain's Add and Relu. Float
 * sums: within parity_conv's tolerance of the ref's, the same whatever the batch. */
static void depthwise_planes(void *arg, int64_t begin, int64_t end, int worker)
{
    const dw_job *j = arg;
    const ptq_conv_params *p = j->p;
    const int64_t plane = p->in[1] * p->in[2], out_plane = p->out[1] * p->out[2];
    const int64_t mult = p->c_out / p->group, taps = p->k[1] * p->k[2];
    float *xq = j->pad + (size_t)worker * (size_t)j->per, *acc = xq + j->ph * j->pw + DW_SLACK;
    int64_t padded = -1; /* the plane xq holds: image * c_in + channel */
    for (int64_t it = begin; it < end; it++) {
        const int64_t n = it / p->c_out, m = it % p->c_out, c = n * p->c_in + m / mult;
        if (padded != c) /* a channel multiplier reads one plane several times */
            dw_pad_plane(j, j->x + c * plane, xq);
        padded = c;
        float *yp = j->y + it * out_plane;
        if (j->flat) {
            dw_plane_3x3(xq, j->pw, j->w + m * taps, j->b ? j->b[m] : 0.0f, acc, j->flat);
            epilogue_from(yp, acc, j->pw, j->z ? j->z + it * out_plane : NULL, j->lo, j->hi, p->out[1], p->out[2]);
        } else {
            dw_rows_padded(j, xq, j->w + m * taps, j->b ? j->b[m] : 0.0f, yp);
            epilogue(yp, j->z ? j->z + it * out_plane : NULL, j->lo, j->hi, out_plane);
        }
    }
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
        dw_job job = {p, x, w, b, z, lo, hi, y, NULL, 0, 0, 0, 0};
        job.ph = (p->out[1] - 1) * p->stride[1] + (p->k[1] - 1) * p->dil[1] + 1;
        job.pw = (p->out[2] - 1) * p->stride[2] + (p->k[2] - 1) * p->dil[2] + 1;
        /* a copy no allocation holds (strides, dilations or pads near 2^31 around a few outputs, where ph * pw
           would wrap): the reference loops, as when there is no memory for it */
        if ((double)job.ph * (double)job.pw * (double)ptq_par_workers() > (double)(PTRDIFF_MAX / sizeof *job.pad / 2)) {
            conv_ref_epilogue(p, x, w, b, z, lo, hi, y);
            return;
        }
        if (p->k[1] == 3 && p->k[2] == 3 && p->stride[1] == 1 && p->stride[2] == 1 && p->dil[1] == 1 &&
            p->dil[2] == 1) /* rows up to the last output's, then to a multiple of 16 */
            job.flat = ((p->out[1] - 1) * job.pw + p->out[2] + 15) / 16 * 16;
        job.per = job.ph * job.pw + DW_SLACK + job.flat;
        job.pad = calloc((size_t)ptq_par_workers() * (size_t)job.per, sizeof *job.pad);
        if (!job.pad) {
            conv_ref_epilogue(p, x, w, b, z, lo, hi, y);
            return;
        }
        ptq_parallel_for(p->n * p->c_out, ptq_par_grain(p->n * p->c_out, 4, 1), depthwise_planes, &job);
        free(job.pad);
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
