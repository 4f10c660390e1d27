/* Direct CPU convolution of 1-D and 2-D convolutions on x86-64 with AVX2 and
 * FMA (AVX-512 where there is one): a GEMM of the packed weights by im2col's
 * columns, where each column is read in place from a copy of the input
 * planes instead of being gathered into an im2col matrix (that OpenBLAS then
 * packed again). A work item (image, group, band of output rows) first
 * copies the band's input rows, with the padding as zeros, split by stride
 * phase: phase (a, b) holds rows a, a + s1, ... and columns b, b + s2, ...
 * of the padded input. In that copy, tap (t1, t2) of output (o1, o2) reads
 * phase ((t1 d1) % s1, (t2 d2) % s2) at row o1 + (t1 d1) / s1 and column
 * o2 + (t2 d2) / s2: with column index q = o1 * wq + o2 (wq the phases'
 * width, wider than the output's), every row of the GEMM's right-hand side
 * is the copy from a fixed offset, so the kernel loads its vectors straight
 * from there. The columns o2 >= the output width are computed and dropped.
 * On AVX-512 the tile is the one computing the fewest outputs: output
 * channels by columns (tiles of 6 or 8 channels), or 32 channels abreast by
 * a row's outputs (kernel_cv: no dropped column computed; each tap's input
 * broadcast; the tile transposed on its way to y), which small planes favor.
 *
 * Every output is one register summed over the taps in the weights' order,
 * acc = fma(w_k, x_k, acc) from acc = 0, then the bias added, then the
 * chain's Add and Relu: the same operations whatever the batch, the band,
 * the thread or the vector width, so the AVX2 and AVX-512 kernels give the
 * same bits, and an image's outputs do not depend on the batch it came in.
 * Mirrors kernels/ref/conv.c; checked against it, and each kernel against
 * the other, in tests/parity_conv.c. */
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "kernels/cpu/fma_tile.h"
#include "kernels/cpu/epilogue512.h"
#include "kernels/cpu/phase_copy.h"
#include "kernels/cpu/transpose16.h"
#include "kernels/kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

enum {
    MIN_TAPS = 32,               /* fewest taps (input channels times kernel positions) run here */
    BAND_BYTES = 1 << 20,        /* a band's copy of the input: about the size of a core's L2 */
    BAND_BYTES_MAX = 8 << 20,    /* a single output row needing more than this runs the im2col path */
    COPIES_BYTES_MAX = 256 << 20 /* and so does a call whose workers' copies would take more than this */
};

static int isa_wanted = -1;  /* ptq_k_conv_cpu_set_isa: -1 the best there is */
static int tile_wanted = -1; /* ptq_k_conv_cpu_set_tile: -1 the one with the fewest dropped outputs */

void ptq_k_conv_cpu_set_isa(int isa)
{
    isa_wanted = isa;
}

void ptq_k_conv_cpu_set_tile(int tile)
{
    tile_wanted = tile;
}

/* The AVX-512 tiles. Rows (rows 0): mr output channels by nv vectors of 16 columns, as many accumulators (24) for 6
 * or 8 channels, or 16 for 8 channels by 32 columns (small planes). Channels (kernel_cv): nv vectors of 16 output
 * channels by rows x p outputs of a band's output rows, none of the columns a row drops computed (28 accumulators:
 * 1 row of 14, 2 of 7; 14 the first of equals, a little faster on VGG's 14 x 14 layers in conv_cpu_layers). */
static const struct {
    int mr, nv, rows, p;
} tiles_512[] = {{MR, NR_512 / 16, 0, 0}, {8, 3, 0, 0}, {8, 2, 0, 0}, {32, 2, 1, 14}, {32, 2, 2, 7}};

__attribute__((target("avx512f"))) static void kernel_512_8x3(const float *a, const int64_t *off, int64_t kc,
                                                              const float *base, float *tile, int accumulate)
{
    kernel_512_mn(a, off, kc, base, tile, accumulate, 8, 3);
}

__attribute__((target("avx512f"))) static void kernel_512_8x2(const float *a, const int64_t *off, int64_t kc,
                                                              const float *base, float *tile, int accumulate)
{
    kernel_512_mn(a, off, kc, base, tile, accumulate, 8, 2);
}

static int isa_have(void)
{
    return __builtin_cpu_supports("avx512f")                                   ? ISA_AVX512
           : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? ISA_AVX2
                                                                               : ISA_NONE;
}

int ptq_k_conv_cpu_isa(void)
{
    const int isa = isa_have();
    return isa_wanted >= 0 && isa_wanted < isa ? isa_wanted : isa;
}

/* What every pool thread needs to run work items of one convolution. */
typedef struct dc_job {
    const ptq_conv_params *p;
    const float *x, *b, *z;
    float lo, hi; /* the chain's Relu or Clip */
    float *y;
    const float *wp;       /* weights [group][m_blocks][taps][mr], rows past cg_out zero */
    const int64_t *off;    /* [taps]: where tap k's row starts in a band's copy */
    int64_t taps, cg_in, cg_out, m_blocks;
    int64_t wq, hq;        /* a phase's columns, and rows in a band's copy (band + the taps' reach) */
    int64_t band, n_bands; /* output rows a band */
    float *copy;           /* [workers][per_worker] */
    size_t per_worker;
    int mr, nr, isa, tile; /* the tile's rows and columns; tiles_512's index on AVX-512 */
} dc_job;

/* tile[rows][p][16 nv] (+)= a[kc][16 nv] times, for output r, c, what tap k reads, base[off[k] + r wq + c]: 16 nv
 * output channels abreast, each output one lane summed over k in order, acc = fma(a_k, x_k, acc) from acc = 0, as
 * kernel_512_mn sums it, so the same bits; nv, rows and p constants where it is inlined. */
__attribute__((target("avx512f"), always_inline)) static inline void
kernel_cv(const float *a, const int64_t *off, int64_t kc, const float *base, int64_t wq, float *tile, int accumulate,
          const int nv, const int rows, const int p)
{
    __m512 c[2][14][2];
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < p; i++)
            for (int v = 0; v < nv; v++)
                c[r][i][v] = accumulate ? _mm512_loadu_ps(tile + ((r * p + i) * nv + v) * 16) : _mm512_setzero_ps();
    for (int64_t k = 0; k < kc; k++, a += 16 * nv) {
        __m512 w[2];
        for (int v = 0; v < nv; v++)
            w[v] = _mm512_loadu_ps(a + 16 * v);
        for (int r = 0; r < rows; r++) {
            const float *s = base + off[k] + r * wq;
            for (int i = 0; i < p; i++) {
                const __m512 x = _mm512_set1_ps(s[i]);
                for (int v = 0; v < nv; v++)
                    c[r][i][v] = _mm512_fmadd_ps(w[v], x, c[r][i][v]);
            }
        }
    }
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < p; i++)
            for (int v = 0; v < nv; v++)
                _mm512_storeu_ps(tile + ((r * p + i) * nv + v) * 16, c[r][i][v]);
}

__attribute__((target("avx512f"))) static void kernel_cv_2x7(const float *a, const int64_t *off, int64_t kc,
                                                             const float *base, int64_t wq, float *tile, int acc)
{
    kernel_cv(a, off, kc, base, wq, tile, acc, 2, 2, 7);
}

__attribute__((target("avx512f"))) static void kernel_cv_1x7(const float *a, const int64_t *off, int64_t kc,
                                                             const float *base, int64_t wq, float *tile, int acc)
{
    kernel_cv(a, off, kc, base, wq, tile, acc, 2, 1, 7);
}

__attribute__((target("avx512f"))) static void kernel_cv_1x14(const float *a, const int64_t *off, int64_t kc,
                                                              const float *base, int64_t wq, float *tile, int acc)
{
    kernel_cv(a, off, kc, base, wq, tile, acc, 2, 1, 14);
}

/* The input rows band r0 reads of one image's group of channels xg into the phases of copy (see the top of the
 * file). The columns outside the image are never written: calloc's zeros (every item of a call copies the same
 * columns); rows outside it are zeroed. */
static void copy_band(const dc_job *j, const float *xg, int64_t r0, float *copy)
{
    const ptq_conv_params *p = j->p;
    const int64_t h = p->in[1], w = p->in[2], s1 = p->stride[1], s2 = p->stride[2];
    const int64_t l1 = p->pad_lo[1], l2 = p->pad_lo[2], wq = j->wq, plane = j->hq * wq;
    float *q = copy;
    for (int64_t c = 0; c < j->cg_in; c++)
        for (int64_t a = 0; a < s1; a++)
            for (int64_t ph = 0; ph < s2; ph++, q += plane) {
                int64_t lo, hi; /* the phase's columns inside the image */
                ptq_phase_cols(w, l2, ph, s2, wq, &lo, &hi);
                for (int64_t i = 0; i < j->hq; i++) {
                    float *row = q + i * wq;
                    const int64_t r = (r0 + i) * s1 + a - l1;
                    if (r < 0 || r >= h) {
                        memset(row, 0, (size_t)wq * sizeof *row);
                        continue;
                    }
                    if (hi > lo)
                        ptq_phase_row(row, xg + (c * h + r) * w, lo, hi, ph, s2, l2);
                }
            }
}

/* n outputs of a tile row: t (+ bias when has_bias) (+ z when z), then clamped to [lo, hi] (t < lo ? lo : t, then
 * > hi ? hi; Relu: lo 0, hi +Inf), each rounded as the Conv, Add, Relu and Clip nodes round them
 * (kernels/cpu/binary.c, unary.c); one pass, to the CPU's widest vectors. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
store_row(float *y, const float *t, const float *z, int has_bias, float bias, float lo, float hi, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float v = has_bias ? t[i] + bias : t[i];
        if (z)
            v = v + z[i];
        v = v < lo ? lo : v;
        y[i] = v > hi ? hi : v;
    }
}

/* The pieces of output rows in tile columns [q0, qe): piece i is tile column at[i] - q0 (of the band's columns) to
 * y + to[i] (an image's plane of channel 0), len[i] outputs; a row's dropped columns have no place in y. Returns the
 * count, at most qe - q0. */
static int tile_pieces(const dc_job *j, int64_t r0, int64_t q0, int64_t qe, int64_t *at, int64_t *to, int64_t *len)
{
    const int64_t wo = j->p->out[2], wq = j->wq;
    int count = 0;
    for (int64_t q = q0, o1 = q0 / wq, o2 = q0 % wq; q < qe; o1++, o2 = 0) {
        const int64_t seg = wq - o2 < qe - q ? wq - o2 : qe - q;
        const int64_t valid = o2 >= wo ? 0 : (wo - o2 < seg ? wo - o2 : seg);
        if (valid > 0) {
            at[count] = q - q0;
            to[count] = (r0 + o1) * wo + o2;
            len[count++] = valid;
        }
        q += seg;
    }
    return count;
}

/* store_row on AVX-512 vectors (epilogue512.h), a short one's lanes masked: the same operations, without the scalar
 * loop a compiled clone ends each row with. */
__attribute__((target("avx512f"), always_inline)) static inline void
store_row_512(float *y, const float *t, const float *z, int has_bias, __m512 bias, __m512 lo, __m512 hi, int64_t n)
{
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 k = ptq_lanes16(n - i);
        const __m512 v = _mm512_maskz_loadu_ps(k, t + i);
        _mm512_mask_storeu_ps(y + i, k, ptq_epilogue_512(v, k, z ? z + i : NULL, has_bias, bias, lo, hi));
    }
}

/* Output channels [m0, m0 + rows) of tile columns [q0, qe) of image n, group g, into y: store_row over each piece
 * (tile_pieces), store_row_512 on AVX-512. */
__attribute__((target("avx512f"))) static void store_tile_512(const dc_job *j, const float *tile, int64_t n,
                                                              int64_t g, int64_t r0, int64_t m0, int64_t rows,
                                                              int64_t q0, int64_t qe)
{
    int64_t at[NR_512], to[NR_512], len[NR_512];
    const int pieces = tile_pieces(j, r0, q0, qe, at, to, len);
    const __m512 lo = _mm512_set1_ps(j->lo), hi = _mm512_set1_ps(j->hi);
    const int64_t plane = j->p->out[1] * j->p->out[2];
    for (int64_t m = 0; m < rows; m++) {
        const int64_t ch = g * j->cg_out + m0 + m, y0 = (n * j->p->c_out + ch) * plane;
        const __m512 bias = _mm512_set1_ps(j->b ? j->b[ch] : 0.0f);
        for (int i = 0; i < pieces; i++)
            store_row_512(j->y + y0 + to[i], tile + m * j->nr + at[i], j->z ? j->z + y0 + to[i] : NULL, j->b != NULL,
                          bias, lo, hi, len[i]);
    }
}

/* A kernel_cv tile (nv 2) of rows x p outputs, output rows o1 .., columns o2 .. o2 + valid, channels [m0, m0 +
 * chans) of image n, group g, into y: each 16 channels' p outputs transposed in registers (transpose16.h), then
 * store_row_512's operations a channel at a time, on the lanes of its valid outputs. */
__attribute__((target("avx512f"))) static void store_cv_512(const dc_job *j, const float *tile, int64_t n, int64_t g,
                                                            int64_t o1, int rows, int p, int64_t o2, int64_t valid,
                                                            int64_t m0, int64_t chans)
{
    const int64_t wo = j->p->out[2], plane = j->p->out[1] * wo;
    const __m512 lo = _mm512_set1_ps(j->lo), hi = _mm512_set1_ps(j->hi);
    const __mmask16 k = ptq_lanes16(valid);
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < 2 && 16 * v < chans; v++) {
            __m512 t[16];
            for (int i = 0; i < 16; i++)
                t[i] = i < p ? _mm512_loadu_ps(tile + ((r * p + i) * 2 + v) * 16) : _mm512_setzero_ps();
            transpose16(t);
            for (int i = 0; i < 16 && 16 * v + i < chans; i++) {
                const int64_t ch = g * j->cg_out + m0 + 16 * v + i;
                const int64_t y0 = (n * j->p->c_out + ch) * plane + (o1 + r) * wo + o2;
                const __m512 bias = _mm512_set1_ps(j->b ? j->b[ch] : 0.0f);
                _mm512_mask_storeu_ps(j->y + y0, k,
                                      ptq_epilogue_512(t[i], k, j->z ? j->z + y0 : NULL, j->b != NULL, bias, lo, hi));
            }
        }
}

/* One band (output rows r0 .. r0 + out_rows of image n, group g, its copy made) through the kernel_cv tile
 * j->tile: rows of tiles_512's rows at a time (a last odd one alone), p outputs of a row at a time. */
__attribute__((target("avx512f"))) static void cv_band(const dc_job *j, const float *copy, int64_t n, int64_t g,
                                                       int64_t r0, int64_t out_rows, float *tile)
{
    const int p = tiles_512[j->tile].p, wo = (int)j->p->out[2];
    for (int64_t mb = 0; mb < j->m_blocks; mb++) {
        const float *a = j->wp + (g * j->m_blocks + mb) * j->taps * j->mr;
        const int64_t m0 = mb * j->mr, chans = j->cg_out - m0 < j->mr ? j->cg_out - m0 : j->mr;
        for (int64_t o = 0, rr; o < out_rows; o += rr) {
            rr = out_rows - o >= tiles_512[j->tile].rows ? tiles_512[j->tile].rows : 1;
            for (int64_t o2 = 0; o2 < wo; o2 += p) {
                const float *base = copy + o * j->wq + o2;
                for (int64_t k0 = 0; k0 < j->taps; k0 += KC) {
                    const int64_t kc = j->taps - k0 < KC ? j->taps - k0 : KC;
                    if (rr == 2)
                        kernel_cv_2x7(a + k0 * j->mr, j->off + k0, kc, base, j->wq, tile, k0 > 0);
                    else if (p == 7)
                        kernel_cv_1x7(a + k0 * j->mr, j->off + k0, kc, base, j->wq, tile, k0 > 0);
                    else
                        kernel_cv_1x14(a + k0 * j->mr, j->off + k0, kc, base, j->wq, tile, k0 > 0);
                }
                store_cv_512(j, tile, n, g, r0 + o, (int)rr, p, o2, wo - o2 < p ? wo - o2 : p, m0, chans);
            }
        }
    }
}

static void store_tile(const dc_job *j, const float *tile, int64_t n, int64_t g, int64_t r0, int64_t m0,
                       int64_t rows, int64_t q0, int64_t qe)
{
    int64_t at[NR_512], to[NR_512], len[NR_512];
    const int pieces = tile_pieces(j, r0, q0, qe, at, to, len);
    const int64_t plane = j->p->out[1] * j->p->out[2];
    for (int64_t m = 0; m < rows; m++) {
        const int64_t ch = g * j->cg_out + m0 + m, y0 = (n * j->p->c_out + ch) * plane;
        const float bias = j->b ? j->b[ch] : 0.0f;
        for (int i = 0; i < pieces; i++)
            store_row(j->y + y0 + to[i], tile + m * j->nr + at[i], j->z ? j->z + y0 + to[i] : NULL, j->b != NULL,
                      bias, j->lo, j->hi, len[i]);
    }
}

static void direct_items(void *arg, int64_t begin, int64_t end, int worker)
{
    const dc_job *j = arg;
    const ptq_conv_params *p = j->p;
    float *copy = j->copy + (size_t)worker * j->per_worker;
    float tile[8 * NR_512];
    for (int64_t it = begin; it < end; it++) {
        const int64_t bd = it % j->n_bands, g = it / j->n_bands % p->group, n = it / j->n_bands / p->group;
        const int64_t r0 = bd * j->band, out_rows = p->out[1] - r0 < j->band ? p->out[1] - r0 : j->band;
        copy_band(j, j->x + (n * p->c_in + g * j->cg_in) * p->in[1] * p->in[2], r0, copy);
        if (j->isa == ISA_AVX512 && tiles_512[j->tile].rows) {
            cv_band(j, copy, n, g, r0, out_rows, tile);
            continue;
        }
        const int64_t cols = out_rows * j->wq;
        for (int64_t q0 = 0; q0 < cols; q0 += j->nr) {
            for (int64_t mb = 0; mb < j->m_blocks; mb++) {
                const float *a = j->wp + (g * j->m_blocks + mb) * j->taps * j->mr;
                for (int64_t k0 = 0; k0 < j->taps; k0 += KC) {
                    const int64_t kc = j->taps - k0 < KC ? j->taps - k0 : KC;
                    const float *ak = a + k0 * j->mr;
                    if (j->isa != ISA_AVX512)
                        kernel_256(ak, j->off + k0, kc, copy + q0, tile, k0 > 0);
                    else if (j->tile == 0)
                        kernel_512(ak, j->off + k0, kc, copy + q0, tile, k0 > 0);
                    else if (j->tile == 1)
                        kernel_512_8x3(ak, j->off + k0, kc, copy + q0, tile, k0 > 0);
                    else
                        kernel_512_8x2(ak, j->off + k0, kc, copy + q0, tile, k0 > 0);
                }
                const int64_t m0 = mb * j->mr, rows = j->cg_out - m0 < j->mr ? j->cg_out - m0 : j->mr;
                (j->isa == ISA_AVX512 ? store_tile_512 : store_tile)(j, tile, n, g, r0, m0, rows, q0,
                                                                     q0 + j->nr < cols ? q0 + j->nr : cols);
            }
        }
    }
}

int ptq_k_conv_cpu_direct(const ptq_conv_params *p, const float *x, const float *w, const float *b,
                          const float *z, float lo, float hi, float *y)
{
    const int isa = ptq_k_conv_cpu_isa();
    /* one plane (1-D or 2-D), channels first, more than one tap, enough taps in all: OpenBLAS's packed GEMM is
       faster on 1x1 convolutions, whose rows here would be whole planes apart, and on a few taps (the kernel's
       tiles are all setup and stores then) */
    if (isa == ISA_NONE || p->nhwc || p->in[0] != 1 || p->out[0] != 1 || p->k[0] != 1 || p->pad_lo[0] != 0 ||
        p->k[1] * p->k[2] == 1 || p->c_in / p->group * p->k[1] * p->k[2] < MIN_TAPS)
        return 0;
    dc_job j = {.p = p, .x = x, .b = b, .z = z, .lo = lo, .hi = hi, .y = y, .isa = isa};
    j.cg_in = p->c_in / p->group;
    j.cg_out = p->c_out / p->group;
    j.taps = j.cg_in * p->k[1] * p->k[2];
    const int64_t s1 = p->stride[1], s2 = p->stride[2], phases = s1 * s2;
    const int64_t reach1 = (p->k[1] - 1) * p->dil[1] / s1, reach2 = (p->k[2] - 1) * p->dil[2] / s2;
    j.wq = p->out[2] + reach2;
    /* rows a band: its copy within BAND_BYTES, and enough items for every worker; a single output row's copy past
       BAND_BYTES_MAX runs the im2col path, reckoned without wrapping (strides, dilations and pads up to 2^31 give
       phases and reaches of up to 2^62) */
    const int64_t max_floats = (int64_t)(BAND_BYTES_MAX / sizeof(float));
    int64_t row_floats;
    if (__builtin_mul_overflow(j.cg_in, phases, &row_floats) || __builtin_mul_overflow(row_floats, j.wq, &row_floats) ||
        row_floats > max_floats || reach1 >= max_floats / row_floats)
        return 0;
    int64_t band = (int64_t)(BAND_BYTES / sizeof(float)) / row_floats - reach1;
    band = band < 1 ? 1 : band;
    const int64_t want = 2 * (int64_t)ptq_par_workers(), per_image = p->n * p->group;
    if (per_image < want) {
        const int64_t split = (want + per_image - 1) / per_image, even = (p->out[1] + split - 1) / split;
        band = band < even ? band : even;
    }
    j.band = band > p->out[1] ? p->out[1] : band;
    j.n_bands = (p->out[1] + j.band - 1) / j.band;
    j.hq = j.band + reach1;
    /* the tile: on AVX-512 the one computing the fewest outputs for a band, rows rounded up to its rows, columns
       (the band's rows wq wide) to its columns; the first of equals */
    j.mr = MR;
    j.nr = NR_256;
    if (isa == ISA_AVX512) {
        const int n_tiles = (int)(sizeof tiles_512 / sizeof tiles_512[0]);
        const int64_t cols = j.band * j.wq;
        int pick = tile_wanted < n_tiles ? tile_wanted : -1;
        int64_t best = -1;
        for (int t = 0; pick < 0 && t < n_tiles; t++) {
            const int64_t mr = tiles_512[t].mr, nr = 16 * tiles_512[t].nv, tp = tiles_512[t].p;
            const int64_t work = (j.cg_out + mr - 1) / mr * mr *
                                 (tp ? j.band * ((p->out[2] + tp - 1) / tp * tp) : (cols + nr - 1) / nr * nr);
            if (best < 0 || work < best) {
                best = work;
                j.tile = t;
            }
        }
        j.tile = pick >= 0 ? pick : j.tile;
        j.mr = tiles_512[j.tile].mr;
        j.nr = 16 * tiles_512[j.tile].nv;
    }
    j.m_blocks = (j.cg_out + j.mr - 1) / j.mr;
    /* and after it, what the last tile's vectors read past the last phase's rows (dropped columns) */
    j.per_worker = (size_t)(row_floats * j.hq + reach2 + j.nr);
    const int n_workers = ptq_par_workers();
    if ((double)n_workers * (double)j.per_worker * sizeof(float) > (double)COPIES_BYTES_MAX)
        return 0;
    float *wp = malloc((size_t)(p->group * j.m_blocks * j.taps * j.mr) * sizeof *wp);
    int64_t *off = malloc((size_t)j.taps * sizeof *off);
    j.copy = calloc((size_t)n_workers * j.per_worker, sizeof *j.copy);
    if (!wp || !off || !j.copy) {
        free(wp);
        free(off);
        free(j.copy);
        return 0;
    }
    for (int64_t g = 0; g < p->group; g++)
        for (int64_t mb = 0; mb < j.m_blocks; mb++)
            for (int64_t k = 0; k < j.taps; k++)
                for (int64_t r = 0; r < j.mr; r++) {
                    const int64_t m = mb * j.mr + r;
                    wp[((g * j.m_blocks + mb) * j.taps + k) * j.mr + r] =
                        m < j.cg_out ? w[(g * j.cg_out + m) * j.taps + k] : 0.0f;
                }
    for (int64_t c = 0, k = 0; c < j.cg_in; c++)
        for (int64_t t1 = 0; t1 < p->k[1]; t1++)
            for (int64_t t2 = 0; t2 < p->k[2]; t2++, k++) {
                const int64_t v1 = t1 * p->dil[1], v2 = t2 * p->dil[2];
                const int64_t phase = c * phases + v1 % s1 * s2 + v2 % s2;
                off[k] = phase * j.hq * j.wq + v1 / s1 * j.wq + v2 / s2;
            }
    j.wp = wp;
    j.off = off;
    ptq_parallel_for(p->n * p->group * j.n_bands, 1, direct_items, &j);
    free(wp);
    free(off);
    free(j.copy);
    return 1;
}

#else

void ptq_k_conv_cpu_set_isa(int isa)
{
    (void)isa;
}

void ptq_k_conv_cpu_set_tile(int tile)
{
    (void)tile;
}

int ptq_k_conv_cpu_isa(void)
{
    return 0;
}

int ptq_k_conv_cpu_direct(const ptq_conv_params *p, const float *x, const float *w, const float *b,
                          const float *z, float lo, float hi, float *y)
{
    (void)p, (void)x, (void)w, (void)b, (void)z, (void)lo, (void)hi, (void)y;
    return 0;
}

#endif
