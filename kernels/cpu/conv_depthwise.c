/* Depthwise convolutions on the CPU (1-D and 2-D, one input channel a group, any channel multiplier), directly:
 * a work item is one output plane (image, output channel). It first copies its input plane into a worker's
 * buffer with the padding as zeros, split by stride phase as kernels/cpu/conv_direct.c does: phase (a, b) holds
 * the padded plane's rows a, a + s1, ... and columns b, b + s2, ..., hq x wq of them. Tap (t1, t2) of output
 * (o1, o2) then reads phase ((t1 d1) % s1, (t2 d2) % s2) at row o1 + (t1 d1) / s1, column o2 + (t2 d2) / s2: with
 * q = o1 * wq + o2, every tap reads the copy from a fixed offset plus q, so one loop over q sums the whole plane
 * to the widest vectors (the columns o2 >= the output width are summed and dropped). Rows of 4 to 28 outputs
 * would leave a 16-float vector little to do a row at a time.
 *
 * Every output is the bias plus each tap's weight times what it reads, in (k1, k2) order, a multiply then an add
 * (no fused multiply-add: the sums are those of the kernels before this file), then the chain's Add and Relu or
 * Clip: the same operations whatever the batch, the thread, the stride or the vector width, so the AVX-512 kernels
 * below and the portable C give the same bits (tests/parity_conv.c checks them against each other and against
 * kernels/ref/conv.c). Fused multiply-adds were no faster here: the loads a tap makes across cache lines bound
 * the sums. A geometry whose phases would be far larger than the padded plane (a stride past the kernel's span
 * and the plane) runs the plane a row at a time from a plain padded copy (rows_padded), the same sums. On AVX-512,
 * stride 1 with an output as wide as the input needs no copy: output q's tap k reads the input plane at q plus a
 * fixed offset, and masked loads give the zeros where that is padding (plane_in_place_512), the same sums again;
 * a 3x3 with padding 1 on rows of 5 to 16 goes a row (or two) a vector, its masks the same for every row
 * (plane_rows_512), and with stride 2 two output rows a vector, each tap's columns permuted out of the input rows
 * (plane_rows_s2_512), no copy split by phase either. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "kernels/cpu/epilogue512.h"
#include "kernels/cpu/phase_copy.h"
#include "kernels/kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DW_X86 1
#endif

enum {
    DW_VEC = 16,  /* floats the flat sums are rounded up to: an AVX-512 vector */
    DW_SLACK = 32 /* floats after the copy that the flat sums read past its end (dropped columns) */
};

typedef struct dw_job {
    const ptq_conv_params *p;
    const float *x, *w, *b, *z;
    float lo, hi; /* the chain's Relu or Clip */
    float *y;
    float *copy;      /* [workers][per]: each worker's copy of a plane (zeros where nothing is copied), DW_SLACK
                         floats, then the flat sums */
    int64_t *off;     /* [taps]: where tap k reads in the copy, for q = 0 (phases) */
    int64_t taps;     /* k1 * k2 */
    int64_t hq, wq;   /* phases: each phase's rows and columns; rows: the padded plane's */
    int64_t s1, s2;   /* phases: the strides (1, 1 for a plain padded copy) */
    int64_t flat;     /* phases: sums a plane, q up to the last output's, to a multiple of DW_VEC; 0: rows */
    int64_t per;      /* floats a worker */
    int isa;          /* ptq_k_conv_cpu_isa: 2 the AVX-512 kernels, else the portable C */
    /* in place (plane_in_place_512): output vector v's lanes that tap k reads inside the image, masks[v * taps +
       k], and where it reads, x's plane + 16 v + off[k]; n_vec vectors a plane; 0: the copies */
    const uint16_t *masks;
    int64_t n_vec;
    int rows3; /* in place a row at a time instead (plane_rows_512): 3x3, rows of 5 to 16, rows3 of them a vector */
    int rows3s2; /* in place two output rows a vector, 3x3 with stride 2 (plane_rows_s2_512): */
    int32_t s2_idx[3][16]; /* tap column t2's permute indices (lane L: slot L / 8's row, column 2 (L % 8) + t2 - 1) */
    uint16_t s2_col[3];    /* and its lanes inside the image */
    uint16_t s2_out;       /* the lanes of output columns */
} dw_job;

/* Phase (a, b) of the input plane xp into its place ph of the copy: only the positions inside the image, as the
 * rest (the padding, rows and columns no output reads) stays the zeros the copy was allocated with, the same
 * positions for every plane of the call. */
static void copy_phase(const dw_job *j, const float *xp, int64_t a, int64_t b, float *ph)
{
    const ptq_conv_params *p = j->p;
    const int64_t h = p->in[1], w = p->in[2], s1 = j->s1, s2 = j->s2, l1 = p->pad_lo[1], l2 = p->pad_lo[2];
    int64_t lo, hi; /* the phase's columns inside the image */
    ptq_phase_cols(w, l2, b, s2, j->wq, &lo, &hi);
    if (hi == lo)
        return;
    for (int64_t i = 0; i < j->hq; i++) {
        const int64_t r = i * s1 + a - l1;
        if (r >= 0 && r < h)
            ptq_phase_row(ph + i * j->wq, xp + r * w, lo, hi, b, s2, l2);
    }
}

/* The flat sums of one plane from its copy xq: acc[q] = bias, then + wm[k] * xq[off[k] + q] for each tap in
 * order, q < len (a multiple of DW_VEC). 9 taps (3x3) in one register a column; others through acc. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
flat_sums(const float *restrict xq, const int64_t *off, int64_t taps, const float *wm, float bias, float *restrict acc,
          int64_t len)
{
    if (taps == 9) {
        const float *t0 = xq + off[0], *t1 = xq + off[1], *t2 = xq + off[2], *t3 = xq + off[3], *t4 = xq + off[4];
        const float *t5 = xq + off[5], *t6 = xq + off[6], *t7 = xq + off[7], *t8 = xq + off[8];
        for (int64_t q = 0; q < len; q++) {
            float v = bias;
            v += wm[0] * t0[q];
            v += wm[1] * t1[q];
            v += wm[2] * t2[q];
            v += wm[3] * t3[q];
            v += wm[4] * t4[q];
            v += wm[5] * t5[q];
            v += wm[6] * t6[q];
            v += wm[7] * t7[q];
            v += wm[8] * t8[q];
            acc[q] = v;
        }
        return;
    }
    for (int64_t q = 0; q < len; q++)
        acc[q] = bias;
    for (int64_t k = 0; k < taps; k++) {
        const float *t = xq + off[k], wk = wm[k];
        for (int64_t q = 0; q < len; q++)
            acc[q] += wk * t[q];
    }
}

/* rows rows of n outputs y (n apart) from the sums a (lda apart): v = a (+ z), then clamped, t = v < lo ? lo :
 * v, t > hi ? hi : t (the Add, Relu and Clip nodes' roundings). */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
store_rows(float *y, const float *a, int64_t lda, const float *z, float lo, float hi, int64_t rows, int64_t n)
{
    for (int64_t r = 0; r < rows; r++, y += n, a += lda, z = z ? z + n : NULL)
        for (int64_t i = 0; i < n; i++) {
            const float v = z ? a[i] + z[i] : a[i], t = v < lo ? lo : v;
            y[i] = t > hi ? hi : t;
        }
}

/* One output plane a row at a time from a plain padded copy xq (hq x wq): each output the bias plus every tap's
 * weight times what it reads, in (k1, k2) order, as flat_sums sums them; then the chain's Add and clamp. */
static void rows_padded(const dw_job *j, const float *xq, const float *wm, float bias, const float *z, float *yp)
{
    const ptq_conv_params *p = j->p;
    const int64_t oh = p->out[1], ow = p->out[2], pw = j->wq;
    const int64_t s1 = p->stride[1], s2 = p->stride[2], d1 = p->dil[1], d2 = p->dil[2];
    for (int64_t o1 = 0; o1 < oh; o1++) {
        float *yr = yp + o1 * ow;
        const float *r0 = xq + o1 * s1 * pw;
        for (int64_t o2 = 0; o2 < ow; o2++) {
            float acc = bias;
            for (int64_t k1 = 0; k1 < p->k[1]; k1++)
                for (int64_t k2 = 0; k2 < p->k[2]; k2++)
                    acc += wm[k1 * p->k[2] + k2] * r0[k1 * d1 * pw + o2 * s2 + k2 * d2];
            yr[o2] = acc;
        }
    }
    store_rows(yp, yp, p->out[1] * p->out[2], z, j->lo, j->hi, 1, p->out[1] * p->out[2]);
}

#ifdef DW_X86
/* Lanes [lo, hi) of 32 (lo, hi clamped to [0, 32]). */
static uint32_t lanes32(int64_t lo, int64_t hi)
{
    const uint64_t below_hi = hi <= 0 ? 0 : hi >= 32 ? 0xffffffffu : (1ull << hi) - 1;
    const uint64_t below_lo = lo <= 0 ? 0 : lo >= 32 ? 0xffffffffu : (1ull << lo) - 1;
    return (uint32_t)(below_hi & ~below_lo);
}

/* The plane xp into the copy xq, as copy_phase puts it there, for column strides 1 and 2, with AVX-512 masked loads
 * and stores, each input row once, to its row phase. Stride 2: phase columns k .. k + 15 read the padded row's 32
 * floats from 2 k, input columns 2 k - l2 on (the lanes outside the image masked to zeros; a masked lane is never
 * read), whose even and odd floats go to the two column phases, padding zeros included. */
__attribute__((target("avx512f"))) static void copy_plane_512(const dw_job *j, const float *xp, float *xq)
{
    const ptq_conv_params *p = j->p;
    const int64_t h = p->in[1], w = p->in[2], l1 = p->pad_lo[1], l2 = p->pad_lo[2], s1 = j->s1, s2 = j->s2;
    const int64_t wq = j->wq, phase = j->hq * wq;
    /* input columns [0, cols) land in the padded row's first s2 wq, all the phases hold */
    const int64_t cols = s2 * wq - l2 < w ? s2 * wq - l2 : w;
    if (cols <= 0)
        return;
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    /* input row r is the padded plane's row r + l1: row i of row phase a; counted, not divided, row by row */
    for (int64_t r = 0, i = l1 / s1, a = l1 % s1; r < h && i < j->hq; r++, a = a + 1 == s1 ? 0 : a + 1, i += !a) {
        const float *src = xp + r * w;
        if (s2 == 1) {
            float *dst = xq + a * phase + i * wq + l2;
            for (int64_t c = 0; c < cols; c += 16)
                _mm512_mask_storeu_ps(dst + c, ptq_lanes16(cols - c),
                                      _mm512_maskz_loadu_ps(ptq_lanes16(cols - c), src + c));
            continue;
        }
        float *d0 = xq + 2 * a * phase + i * wq, *d1 = d0 + phase;
        for (int64_t k = 0; k < wq; k += 16) {
            /* lanes L of the 32 read input column 2 k - l2 + L: inside for L in [l2 - 2 k, cols + l2 - 2 k) */
            const uint32_t m = lanes32(l2 - 2 * k, cols + l2 - 2 * k);
            const uintptr_t at = (uintptr_t)src + (uintptr_t)((2 * k - l2) * (int64_t)sizeof *src);
            const __m512 v0 = _mm512_maskz_loadu_ps((__mmask16)(m & 0xffff), (const void *)at);
            const __m512 v1 = _mm512_maskz_loadu_ps((__mmask16)(m >> 16), (const void *)(at + 16 * sizeof *src));
            _mm512_mask_storeu_ps(d0 + k, ptq_lanes16(wq - k), _mm512_permutex2var_ps(v0, even, v1));
            _mm512_mask_storeu_ps(d1 + k, ptq_lanes16(wq - k), _mm512_permutex2var_ps(v0, odd, v1));
        }
    }
}

/* flat_sums on AVX-512, the same operations (a multiply, then an add, in tap order): 64 sums abreast. */
__attribute__((target("avx512f"))) static void flat_sums_512(const float *xq, const int64_t *off, int64_t taps,
                                                              const float *wm, float bias, float *acc, int64_t len)
{
    const __m512 bv = _mm512_set1_ps(bias);
    int64_t q = 0;
    for (; q + 64 <= len; q += 64) {
        __m512 v0 = bv, v1 = bv, v2 = bv, v3 = bv;
        for (int64_t k = 0; k < taps; k++) {
            const float *t = xq + off[k] + q;
            const __m512 wk = _mm512_set1_ps(wm[k]);
            v0 = _mm512_add_ps(v0, _mm512_mul_ps(wk, _mm512_loadu_ps(t)));
            v1 = _mm512_add_ps(v1, _mm512_mul_ps(wk, _mm512_loadu_ps(t + 16)));
            v2 = _mm512_add_ps(v2, _mm512_mul_ps(wk, _mm512_loadu_ps(t + 32)));
            v3 = _mm512_add_ps(v3, _mm512_mul_ps(wk, _mm512_loadu_ps(t + 48)));
        }
        _mm512_storeu_ps(acc + q, v0);
        _mm512_storeu_ps(acc + q + 16, v1);
        _mm512_storeu_ps(acc + q + 32, v2);
        _mm512_storeu_ps(acc + q + 48, v3);
    }
    for (; q < len; q += 16) {
        __m512 v = bv;
        for (int64_t k = 0; k < taps; k++)
            v = _mm512_add_ps(v, _mm512_mul_ps(_mm512_set1_ps(wm[k]), _mm512_loadu_ps(xq + off[k] + q)));
        _mm512_storeu_ps(acc + q, v);
    }
}

/* store_rows on AVX-512 with masked rows: its operations (epilogue512.h). */
__attribute__((target("avx512f"))) static void store_rows_512(float *y, const float *a, int64_t lda, const float *z,
                                                               float lo, float hi, int64_t rows, int64_t n)
{
    const __m512 lov = _mm512_set1_ps(lo), hiv = _mm512_set1_ps(hi);
    for (int64_t r = 0; r < rows; r++, y += n, a += lda, z = z ? z + n : NULL)
        for (int64_t c = 0; c < n; c += 16) {
            const __mmask16 m = ptq_lanes16(n - c);
            const __m512 v = _mm512_maskz_loadu_ps(m, a + c);
            _mm512_mask_storeu_ps(y + c, m, ptq_epilogue_512(v, m, z ? z + c : NULL, 0, v, lov, hiv));
        }
}

/* One output plane yp read in place from its input plane xp, 16 outputs a vector in the plane's order, for stride 1
 * and an output as wide as the input: output q, tap k reads xp[q + off[k]] where the masks say it is inside the
 * image, else a zero, so the same operations as flat_sums (the bias, then a multiply and an add a tap, in tap
 * order) with no copy; then store_rows_512's Add and clamp, to y directly. taps: j->taps, a constant where it is
 * inlined (3x3: the weights stay in registers). */
__attribute__((target("avx512f"), always_inline)) static inline void
in_place_taps(const dw_job *j, const float *xp, const float *wm, float bias, const float *z, float *yp,
              const int64_t taps)
{
    const int64_t n = j->p->out[1] * j->p->out[2];
    const __m512 bv = _mm512_set1_ps(bias), lov = _mm512_set1_ps(j->lo), hiv = _mm512_set1_ps(j->hi);
    const uint16_t *mk = j->masks;
    __m512 w[64];
    for (int64_t k = 0; k < taps; k++)
        w[k] = _mm512_set1_ps(wm[k]);
    for (int64_t v = 0; v < j->n_vec; v++, mk += taps) {
        const int64_t q = 16 * v;
        __m512 acc = bv;
        for (int64_t k = 0; k < taps; k++) {
            const uintptr_t at = (uintptr_t)xp + (uintptr_t)((q + j->off[k]) * (int64_t)sizeof *xp);
            acc = _mm512_add_ps(acc, _mm512_mul_ps(w[k], _mm512_maskz_loadu_ps((__mmask16)mk[k], (const void *)at)));
        }
        const __mmask16 m = ptq_lanes16(n - q);
        _mm512_mask_storeu_ps(yp + q, m, ptq_epilogue_512(acc, m, z ? z + q : NULL, 0, acc, lov, hiv));
    }
}

__attribute__((target("avx512f"))) static void plane_in_place_512(const dw_job *j, const float *xp, const float *wm,
                                                                   float bias, const float *z, float *yp)
{
    if (j->taps == 9)
        in_place_taps(j, xp, wm, bias, z, yp, 9);
    else
        in_place_taps(j, xp, wm, bias, z, yp, j->taps);
}
#endif

#ifdef DW_X86
/* One output plane yp of a 3x3 convolution (dilation 1, padding 1, stride 1: the output the input's size, w
 * wide, 4 < w <= 16) read in place a row at a time, rows output rows a vector (slots of 16 / rows lanes): each
 * tap's lanes loaded from its input row with the masks of its column (the same for every row, kept in registers),
 * zeros for a row outside the image, so the same operations as flat_sums in the same order; then store_rows_512's
 * Add and clamp, to y directly. No per-vector masks to fetch (plane_in_place_512's cost). */
__attribute__((target("avx512f"), always_inline)) static inline void
rows3_body(const dw_job *j, const float *xp, const float *wm, float bias, const float *z, float *yp, const int rows)
{
    const int64_t h = j->p->in[1], w = j->p->in[2], slot = 16 / rows;
    __m512 wk[9];
    for (int k = 0; k < 9; k++)
        wk[k] = _mm512_set1_ps(wm[k]);
    /* tap column t2's lanes of slot g: its columns inside the row */
    __mmask16 col[3][2];
    for (int g = 0; g < rows; g++) {
        const int64_t at = g * slot;
        col[0][g] = (__mmask16)(ptq_lanes16(at + w) & ~ptq_lanes16(at + 1));
        col[1][g] = (__mmask16)(ptq_lanes16(at + w) & ~ptq_lanes16(at));
        col[2][g] = (__mmask16)(ptq_lanes16(at + w - 1) & ~ptq_lanes16(at));
    }
    const __m512 bv = _mm512_set1_ps(bias), lov = _mm512_set1_ps(j->lo), hiv = _mm512_set1_ps(j->hi);
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t o = 0; o < h; o += rows) {
        __m512 acc = bv;
        for (int64_t t1 = 0; t1 < 3; t1++) {
            __m512 x[3] = {zero, zero, zero};
            for (int g = 0; g < rows; g++) {
                const int64_t r = o + g + t1 - 1;
                if (o + g >= h || r < 0 || r >= h)
                    continue;
                /* lane L of slot g reads column L - g slot (+ the tap's -1, 0, +1) of row r */
                const uintptr_t s = (uintptr_t)xp + (uintptr_t)((r * w - g * slot - 1) * (int64_t)sizeof *xp);
                for (int t2 = 0; t2 < 3; t2++)
                    x[t2] = _mm512_mask_loadu_ps(x[t2], col[t2][g], (const void *)(s + (uintptr_t)t2 * sizeof *xp));
            }
            for (int t2 = 0; t2 < 3; t2++)
                acc = _mm512_add_ps(acc, _mm512_mul_ps(wk[3 * t1 + t2], x[t2]));
        }
        for (int g = 0; g < rows && o + g < h; g++) {
            const uintptr_t at = (uintptr_t)((o + g) * w - g * slot) * sizeof *yp;
            const float *zg = z ? (const float *)((uintptr_t)z + at) : NULL;
            _mm512_mask_storeu_ps((void *)((uintptr_t)yp + at), col[1][g],
                                  ptq_epilogue_512(acc, col[1][g], zg, 0, acc, lov, hiv));
        }
    }
}

/* One output plane yp of a 3x3 convolution with stride 2 (dilation 1, padding 1 before; input rows of at most 16,
 * output rows of at most 8) read in place, two output rows a vector (slots of 8 lanes): the three input rows each
 * output row reads, one vector each (zeros outside the image), and each tap's columns picked from the two slots'
 * rows by one permute, its lanes outside the image zeros; the same operations as flat_sums in the same order, then
 * store_rows_512's Add and clamp to y. No copy of the plane split by stride phase. */
__attribute__((target("avx512f"))) static void plane_rows_s2_512(const dw_job *j, const float *xp, const float *wm,
                                                                  float bias, const float *z, float *yp)
{
    const int64_t h = j->p->in[1], w = j->p->in[2], ho = j->p->out[1], wo = j->p->out[2];
    __m512 wk[9];
    for (int k = 0; k < 9; k++)
        wk[k] = _mm512_set1_ps(wm[k]);
    const __m512i idx[3] = {_mm512_loadu_si512(j->s2_idx[0]), _mm512_loadu_si512(j->s2_idx[1]),
                            _mm512_loadu_si512(j->s2_idx[2])};
    const __mmask16 col[3] = {j->s2_col[0], j->s2_col[1], j->s2_col[2]}, out = j->s2_out;
    const __mmask16 row_in = ptq_lanes16(w);
    const __m512 bv = _mm512_set1_ps(bias), lov = _mm512_set1_ps(j->lo), hiv = _mm512_set1_ps(j->hi);
    for (int64_t o = 0; o < ho; o += 2) {
        __m512 acc = bv;
        for (int64_t t1 = 0; t1 < 3; t1++) {
            __m512 r[2];
            for (int g = 0; g < 2; g++) {
                const int64_t ri = 2 * (o + g) + t1 - 1;
                const int inside = o + g < ho && ri >= 0 && ri < h;
                r[g] = inside ? _mm512_maskz_loadu_ps(row_in, xp + ri * w) : _mm512_setzero_ps();
            }
            for (int t2 = 0; t2 < 3; t2++)
                acc = _mm512_add_ps(acc, _mm512_mul_ps(wk[3 * t1 + t2],
                                                       _mm512_maskz_permutex2var_ps(col[t2], r[0], idx[t2], r[1])));
        }
        for (int g = 0; g < 2 && o + g < ho; g++) {
            const __mmask16 k = (__mmask16)(out & (g ? 0xff00u : 0x00ffu));
            const uintptr_t at = (uintptr_t)((o + g) * wo - g * 8) * sizeof *yp;
            const float *zg = z ? (const float *)((uintptr_t)z + at) : NULL;
            _mm512_mask_storeu_ps((void *)((uintptr_t)yp + at), k, ptq_epilogue_512(acc, k, zg, 0, acc, lov, hiv));
        }
    }
}

__attribute__((target("avx512f"))) static void plane_rows_512(const dw_job *j, const float *xp, const float *wm,
                                                               float bias, const float *z, float *yp)
{
    if (j->rows3 == 1)
        rows3_body(j, xp, wm, bias, z, yp, 1);
    else
        rows3_body(j, xp, wm, bias, z, yp, 2);
}
#endif

/* The plane xp into the copy xq. */
static void copy_plane(const dw_job *j, const float *xp, float *xq)
{
#ifdef DW_X86
    if (j->isa == 2 && j->s2 <= 2) {
        copy_plane_512(j, xp, xq);
        return;
    }
#endif
    for (int64_t a = 0; a < j->s1; a++)
        for (int64_t b = 0; b < j->s2; b++)
            copy_phase(j, xp, a, b, xq + (a * j->s2 + b) * j->hq * j->wq);
}

/* Output planes [begin, end) (image n, output channel m: item n * c_out + m). */
static void planes(void *arg, int64_t begin, int64_t end, int worker)
{
    const dw_job *j = arg;
    const ptq_conv_params *p = j->p;
    const int64_t plane = p->in[1] * p->in[2], out_plane = p->out[1] * p->out[2], mult = p->c_out / p->group;
    float *xq = j->copy + (size_t)worker * (size_t)j->per, *acc = xq + j->s1 * j->s2 * j->hq * j->wq + DW_SLACK;
    int64_t copied = -1; /* the plane xq holds: image * c_in + channel */
    for (int64_t it = begin; it < end; it++) {
        const int64_t n = it / p->c_out, m = it % p->c_out, c = n * p->c_in + m / mult;
        const float *wm = j->w + m * j->taps, bias = j->b ? j->b[m] : 0.0f;
        const float *z = j->z ? j->z + it * out_plane : NULL;
        float *yp = j->y + it * out_plane;
#ifdef DW_X86
        if (j->rows3) {
            plane_rows_512(j, j->x + c * plane, wm, bias, z, yp);
            continue;
        }
        if (j->rows3s2) {
            plane_rows_s2_512(j, j->x + c * plane, wm, bias, z, yp);
            continue;
        }
        if (j->masks) {
            plane_in_place_512(j, j->x + c * plane, wm, bias, z, yp);
            continue;
        }
#endif
        if (copied != c) /* a channel multiplier reads one plane several times */
            copy_plane(j, j->x + c * plane, xq);
        copied = c;
        if (!j->flat) {
            rows_padded(j, xq, wm, bias, z, yp);
            continue;
        }
#ifdef DW_X86
        if (j->isa == 2) {
            flat_sums_512(xq, j->off, j->taps, wm, bias, acc, j->flat);
            store_rows_512(yp, acc, j->wq, z, j->lo, j->hi, p->out[1], p->out[2]);
            continue;
        }
#endif
        flat_sums(xq, j->off, j->taps, wm, bias, acc, j->flat);
        store_rows(yp, acc, j->wq, z, j->lo, j->hi, p->out[1], p->out[2]);
    }
}

#ifdef DW_X86
/* ptq_k_conv_cpu_depthwise in place (plane_in_place_512): the masks and offsets, then the planes. */
static int in_place(dw_job *j)
{
    const ptq_conv_params *p = j->p;
    const int64_t h = p->in[1], w = p->in[2], n_out = p->out[1] * p->out[2];
    if (p->k[1] == 3 && p->k[2] == 3 && p->dil[1] == 1 && p->dil[2] == 1 && p->pad_lo[1] == 1 && p->pad_lo[2] == 1 &&
        p->out[1] == h && w > 4 && w <= 16) {
        j->rows3 = w > 8 ? 1 : 2;
        ptq_parallel_for(p->n * p->c_out, ptq_par_grain(p->n * p->c_out, 4, 1), planes, j);
        return 1;
    }
    j->n_vec = (n_out + 15) / 16;
    uint16_t *masks = malloc((size_t)(j->n_vec * j->taps) * sizeof *masks);
    j->off = malloc((size_t)j->taps * sizeof *j->off);
    if (!masks || !j->off) {
        free(masks);
        free(j->off);
        return 0;
    }
    for (int64_t t1 = 0, k = 0; t1 < p->k[1]; t1++)
        for (int64_t t2 = 0; t2 < p->k[2]; t2++, k++) {
            const int64_t dr = t1 * p->dil[1] - p->pad_lo[1], dc = t2 * p->dil[2] - p->pad_lo[2];
            j->off[k] = dr * w + dc;
            for (int64_t v = 0; v < j->n_vec; v++) {
                uint16_t m = 0;
                for (int64_t i = 0, q = 16 * v; i < 16 && q < n_out; i++, q++) {
                    const int64_t r = q / w + dr, c = q % w + dc;
                    m |= (uint16_t)((r >= 0 && r < h && c >= 0 && c < w) << i);
                }
                masks[v * j->taps + k] = m;
            }
        }
    j->masks = masks;
    ptq_parallel_for(p->n * p->c_out, ptq_par_grain(p->n * p->c_out, 4, 1), planes, j);
    free(masks);
    free(j->off);
    return 1;
}
#endif

int ptq_k_conv_cpu_depthwise(const ptq_conv_params *p, const float *x, const float *w, const float *b,
                             const float *z, float lo, float hi, float *y)
{
    dw_job j = {.p = p, .x = x, .w = w, .b = b, .z = z, .lo = lo, .hi = hi, .y = y, .s1 = 1, .s2 = 1};
    const int64_t s1 = p->stride[1], s2 = p->stride[2];
    const int64_t span1 = (p->k[1] - 1) * p->dil[1], span2 = (p->k[2] - 1) * p->dil[2];
    /* the padded plane: every position a tap reads; in doubles, as strides, dilations and pads up to 2^31 around a
       few outputs give sizes past any memory (then the caller's reference loops run) */
    const double ph = (double)(p->out[1] - 1) * (double)s1 + (double)span1 + 1;
    const double pw = (double)(p->out[2] - 1) * (double)s2 + (double)span2 + 1;
    const double workers = (double)ptq_par_workers(), most = (double)(PTRDIFF_MAX / sizeof(float) / 4);
    j.taps = p->k[1] * p->k[2];
    if (ph * pw * workers > most || (double)j.taps > most)
        return 0;
    /* phases: each at most the padded plane's size over the strides plus a row and a column (s1 hq <= ph + s1 -
       1), so the copy stays near the plane's size while the strides are within it */
    const int phased = (double)s1 <= ph && (double)s2 <= pw;
    if (phased) {
        j.s1 = s1;
        j.s2 = s2;
        j.hq = p->out[1] + span1 / s1;
        j.wq = p->out[2] + span2 / s2;
        j.flat = ((p->out[1] - 1) * j.wq + p->out[2] + DW_VEC - 1) / DW_VEC * DW_VEC;
        if ((double)(s1 * s2) * (double)j.hq * (double)j.wq * workers > most)
            return 0;
    } else {
        j.hq = (int64_t)ph;
        j.wq = (int64_t)pw;
    }
#ifdef DW_X86
    j.isa = ptq_k_conv_cpu_isa();
    /* in place: AVX-512, stride 1, an output as wide as the input, planes of up to 2^20 outputs */
    const int64_t n_out = p->out[1] * p->out[2];
    if (j.isa == 2 && s1 == 1 && s2 == 1 && p->out[2] == p->in[2] && n_out <= (1 << 20) && j.taps <= 64)
        return in_place(&j);
    /* two output rows a vector: 3x3 with stride 2 and padding 1 before, rows of at most 16 in, 8 out */
    if (j.isa == 2 && s1 == 2 && s2 == 2 && p->k[1] == 3 && p->k[2] == 3 && p->dil[1] == 1 && p->dil[2] == 1 &&
        p->pad_lo[1] == 1 && p->pad_lo[2] == 1 && p->in[2] <= 16 && p->out[2] <= 8) {
        j.rows3s2 = 1;
        /* tap column t2 of lane L (slot g = L / 8, output column c = L % 8) reads input column 2 c + t2 - 1 of slot
           g's row: lane g 16 + 2 c + t2 - 1 of the two rows' vectors */
        for (int t2 = 0; t2 < 3; t2++)
            for (int l = 0; l < 16; l++) {
                const int64_t c = l % 8, src = 2 * c + t2 - 1;
                const int inside = c < p->out[2] && src >= 0 && src < p->in[2];
                j.s2_idx[t2][l] = inside ? (int32_t)(l / 8 * 16 + src) : 0;
                j.s2_col[t2] |= (uint16_t)(inside << l);
                j.s2_out |= (uint16_t)((c < p->out[2]) << l);
            }
        ptq_parallel_for(p->n * p->c_out, ptq_par_grain(p->n * p->c_out, 4, 1), planes, &j);
        return 1;
    }
#endif
    j.per = j.s1 * j.s2 * j.hq * j.wq + DW_SLACK + j.flat;
    j.copy = calloc((size_t)ptq_par_workers() * (size_t)j.per, sizeof *j.copy);
    j.off = phased ? malloc((size_t)j.taps * sizeof *j.off) : NULL;
    if (!j.copy || (phased && !j.off)) {
        free(j.copy);
        free(j.off);
        return 0;
    }
    for (int64_t t1 = 0, k = 0; phased && t1 < p->k[1]; t1++)
        for (int64_t t2 = 0; t2 < p->k[2]; t2++, k++) {
            const int64_t v1 = t1 * p->dil[1], v2 = t2 * p->dil[2];
            j.off[k] = (v1 % s1 * s2 + v2 % s2) * j.hq * j.wq + v1 / s1 * j.wq + v2 / s2;
        }
    ptq_parallel_for(p->n * p->c_out, ptq_par_grain(p->n * p->c_out, 4, 1), planes, &j);
    free(j.copy);
    free(j.off);
    return 1;
}
