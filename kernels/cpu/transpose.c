/* Fast CPU transpose: the output as rows of its last dim, spread over the
 * CPU pool (core/parallel.h); each piece finds its first row's input offset
 * once, then walks an odometer a row at a time, copying a row whose input is
 * contiguous with one memcpy and gathering the others element by element at
 * the row's input stride; 4-byte elements whose last two dims swap, on
 * AVX-512, 16 rows at a time through 16 x 16 blocks transposed in
 * registers (tr_block). A copy, so the same bytes as
 * kernels/ref/transpose.c (tests/parity_transpose.c). */
#include <stdint.h>
#include <string.h>

#include "core/parallel.h"
#include "kernels/cpu/transpose16.h"
#include "kernels/kernels.h"

enum {
    TR_PARALLEL_MIN = 1 << 14, /* elements a piece copies, at least */
    TR_SHORT_ROW = 256         /* bytes of a contiguous row copied without a call to memcpy, at most */
};

typedef struct tr_job {
    size_t eb; /* bytes an element */
    int ndim;
    int64_t out_dims[8], step[8]; /* step[d]: input elements per step along output dim d */
    int64_t cols;
    int blocks; /* 4-byte elements whose last two dims swap (keys transposed) on AVX-512: tr_block */
    const unsigned char *x;
    unsigned char *y;
} tr_job;

/* One output row: cols elements, the input's from element off on, step apart. */
static void tr_row(const tr_job *j, unsigned char *dst, int64_t off, int64_t step)
{
    const unsigned char *src = j->x + (size_t)off * j->eb;
    if (step == 1) {
        const size_t n = (size_t)j->cols * j->eb;
        if (n > TR_SHORT_ROW) {
            memcpy(dst, src, n);
            return;
        }
        size_t i = 0; /* rows of a few heads' 16 floats: 16 bytes at a time, no call to memcpy */
        for (; i + 16 <= n; i += 16)
            memcpy(dst + i, src + i, 16);
        for (; i + 8 <= n; i += 8)
            memcpy(dst + i, src + i, 8);
        for (; i < n; i++)
            dst[i] = src[i];
        return;
    }
    switch (j->eb) {
    case 1:
        for (int64_t c = 0; c < j->cols; c++)
            dst[c] = src[c * step];
        break;
    case 2:
        for (int64_t c = 0; c < j->cols; c++)
            memcpy(dst + 2 * c, src + 2 * c * step, 2);
        break;
    case 4:
        for (int64_t c = 0; c < j->cols; c++)
            memcpy(dst + 4 * c, src + 4 * c * step, 4);
        break;
    case 8:
        for (int64_t c = 0; c < j->cols; c++)
            memcpy(dst + 8 * c, src + 8 * c * step, 8);
        break;
    default:
        for (int64_t c = 0; c < j->cols; c++)
            memcpy(dst + (size_t)c * j->eb, src + (size_t)(c * step) * j->eb, j->eb);
        break;
    }
}

#ifdef PTQ_TRANSPOSE16
/* 16 output rows from element off of the input on, consecutive in it (the second-last output dim has step 1): each
 * 16 columns (step apart in the input) are 16 input runs of 16 floats, transposed in registers. */
__attribute__((target("avx512f"))) static void tr_block(const tr_job *j, float *dst, int64_t off, int64_t step)
{
    const float *src = (const float *)(const void *)j->x + off;
    const int64_t cols = j->cols;
    for (int64_t c0 = 0; c0 < cols; c0 += 16) {
        const int64_t n = cols - c0 < 16 ? cols - c0 : 16;
        __m512 v[16];
        for (int64_t t = 0; t < 16; t++)
            v[t] = t < n ? _mm512_loadu_ps(src + (c0 + t) * step) : _mm512_setzero_ps();
        transpose16(v);
        const __mmask16 m = (__mmask16)((1u << n) - 1u);
        for (int r = 0; r < 16; r++)
            _mm512_mask_storeu_ps(dst + r * cols + c0, m, v[r]);
    }
}
#endif

static void tr_rows(void *arg, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    const tr_job *j = arg;
    const int last = j->ndim - 1;
    int64_t idx[8] = {0}, off = 0;
    for (int64_t d = last - 1, r = begin; d >= 0; d--) { /* row begin's place in the dims before the last */
        idx[d] = r % j->out_dims[d];
        r /= j->out_dims[d];
        off += idx[d] * j->step[d];
    }
    for (int64_t row = begin; row < end; row++) {
#ifdef PTQ_TRANSPOSE16
        /* 16 rows of the second-last dim from its start, within the piece: a block (the odometer steps 16 rows) */
        if (j->blocks && idx[last - 1] % 16 == 0 && idx[last - 1] + 16 <= j->out_dims[last - 1] && row + 16 <= end) {
            tr_block(j, (float *)(void *)(j->y + (size_t)(row * j->cols) * j->eb), off, j->step[last]);
            row += 15;
            idx[last - 1] += 15;
            off += 15;
        } else
#endif
            tr_row(j, j->y + (size_t)(row * j->cols) * j->eb, off, j->step[last]);
        for (int d = last - 1; d >= 0; d--) {
            off += j->step[d];
            if (++idx[d] < j->out_dims[d])
                break;
            off -= j->step[d] * j->out_dims[d];
            idx[d] = 0;
        }
    }
}

/* ptq_k_transpose_ref's contract. */
void ptq_k_transpose_cpu(size_t elem_bytes, int ndim, const int64_t *in_dims, const int64_t *perm, const void *x,
                         void *y)
{
    if (ndim < 1 || ndim > 8) {
        ptq_k_transpose_ref(elem_bytes, ndim, in_dims, perm, x, y);
        return;
    }
    tr_job j = {.eb = elem_bytes, .ndim = ndim, .x = x, .y = y};
    int64_t in_stride[8], n = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        in_stride[d] = n;
        n *= in_dims[d];
    }
    for (int d = 0; d < ndim; d++) {
        j.out_dims[d] = in_dims[perm[d]];
        j.step[d] = in_stride[perm[d]];
    }
    j.cols = j.out_dims[ndim - 1];
    if (n == 0)
        return;
#ifdef PTQ_TRANSPOSE16
    j.blocks = elem_bytes == 4 && ndim >= 2 && j.step[ndim - 2] == 1 && j.step[ndim - 1] != 1 &&
               j.out_dims[ndim - 2] >= 16 && ptq_k_conv_cpu_isa() >= 2;
#endif
    const int64_t rows = n / j.cols, min_rows = TR_PARALLEL_MIN / j.cols + 1;
    ptq_parallel_for(rows, ptq_par_grain(rows, 4, min_rows), tr_rows, &j);
}

enum { COPY_PIECE = 1 << 18 /* bytes a thread copies at least: below two of these, one memcpy */ };

typedef struct copy_job {
    const unsigned char *x;
    unsigned char *y;
    size_t n_bytes;
} copy_job;

static void copy_pieces(void *arg, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    const copy_job *j = arg;
    const size_t lo = (size_t)begin * COPY_PIECE, hi = (size_t)end * COPY_PIECE;
    memcpy(j->y + lo, j->x + lo, (hi < j->n_bytes ? hi : j->n_bytes) - lo);
}

/* y = x, n_bytes of them (not overlapping), in pieces over the CPU pool: the byte-copy ops (Reshape, Flatten,
 * Squeeze, Unsqueeze, Identity) of a batch. */
void ptq_k_copy_cpu(size_t n_bytes, const void *x, void *y)
{
    if (n_bytes < 2 * (size_t)COPY_PIECE) {
        if (n_bytes)
            memcpy(y, x, n_bytes);
        return;
    }
    copy_job j = {x, y, n_bytes};
    const int64_t n_pieces = (int64_t)((n_bytes + COPY_PIECE - 1) / COPY_PIECE);
    ptq_parallel_for(n_pieces, ptq_par_grain(n_pieces, 2, 1), copy_pieces, &j);
}
