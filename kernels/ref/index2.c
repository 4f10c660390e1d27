/* Reference TopK, GatherElements, GatherND, ScatterElements, OneHot, EyeLike and ReverseSequence as ONNX defines
 * them (runtime/ops_index2.c checks every index before calling; these only read and write where told), their CPU
 * path too. Covered by tests/ops_index_test.py against onnxruntime and the ONNX conformance run. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"

/* Whether element a of x comes before element b in TopK's order: the larger first (largest) or the smaller, a
 * float NaN counting as larger than any number (numpy's sort puts it last); equal ones keep their order. */
static int topk_before(ptq_k_elem et, int largest, const void *x, int64_t a, int64_t b)
{
    switch (et) {
    case PTQ_K_F32: {
        const float u = ((const float *)x)[a], v = ((const float *)x)[b];
        if (isnan(u) || isnan(v))
            return largest ? isnan(u) && !isnan(v) : isnan(v) && !isnan(u);
        return largest ? u > v : u < v;
    }
    case PTQ_K_F64: {
        const double u = ((const double *)x)[a], v = ((const double *)x)[b];
        if (isnan(u) || isnan(v))
            return largest ? isnan(u) && !isnan(v) : isnan(v) && !isnan(u);
        return largest ? u > v : u < v;
    }
    case PTQ_K_I64: {
        const int64_t u = ((const int64_t *)x)[a], v = ((const int64_t *)x)[b];
        return largest ? u > v : u < v;
    }
    case PTQ_K_I32: {
        const int32_t u = ((const int32_t *)x)[a], v = ((const int32_t *)x)[b];
        return largest ? u > v : u < v;
    }
    }
    return 0;
}

void ptq_k_topk_ref(ptq_k_elem et, int64_t outer, int64_t len, int64_t inner, int64_t k, int largest, const void *x,
                    void *values, int64_t *indices, int64_t *scratch)
{
    const size_t eb = et == PTQ_K_F64 || et == PTQ_K_I64 ? 8 : 4;
    int64_t *a = scratch, *b = scratch + len;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const int64_t base = o * len * inner + i;
            for (int64_t j = 0; j < len; j++)
                a[j] = j;
            /* bottom-up merge sort of the positions: stable, so equal values keep the lower index first */
            int64_t *src = a, *dst = b;
            for (int64_t w = 1; w < len; w *= 2) {
                for (int64_t lo = 0; lo < len; lo += 2 * w) {
                    const int64_t mid = lo + w < len ? lo + w : len, hi = lo + 2 * w < len ? lo + 2 * w : len;
                    int64_t p = lo, q = mid, t = lo;
                    while (p < mid && q < hi)
                        dst[t++] = topk_before(et, largest, x, base + src[q] * inner, base + src[p] * inner) ? src[q++]
                                                                                                             : src[p++];
                    while (p < mid)
                        dst[t++] = src[p++];
                    while (q < hi)
                        dst[t++] = src[q++];
                }
                int64_t *swap = src;
                src = dst;
                dst = swap;
            }
            for (int64_t j = 0; j < k; j++) {
                const int64_t out = (o * k + j) * inner + i;
                indices[out] = src[j];
                memcpy((unsigned char *)values + (size_t)out * eb,
                       (const unsigned char *)x + (size_t)(base + src[j] * inner) * eb, eb);
            }
        }
}

void ptq_k_gather_at_ref(size_t elem_bytes, int64_t n, int64_t n_slice, const int64_t *offset, const void *x, void *y)
{
    const size_t slice_bytes = (size_t)n_slice * elem_bytes;
    for (int64_t j = 0; j < n && slice_bytes; j++)
        memcpy((unsigned char *)y + (size_t)j * slice_bytes, (const unsigned char *)x + (size_t)offset[j] * elem_bytes,
               slice_bytes);
}

void ptq_k_onehot_ref(size_t elem_bytes, int64_t outer, int64_t depth, int64_t inner, const int64_t *idx,
                      const void *off, const void *on, void *y)
{
    unsigned char *dst = y;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t d = 0; d < depth; d++)
            for (int64_t i = 0; i < inner; i++, dst += elem_bytes)
                memcpy(dst, idx[o * inner + i] == d ? on : off, elem_bytes);
}

void ptq_k_eye_ref(size_t elem_bytes, int64_t rows, int64_t cols, int64_t k, const void *one, void *y)
{
    unsigned char *dst = y;
    if (rows * cols > 0)
        memset(dst, 0, (size_t)(rows * cols) * elem_bytes);
    if (k >= cols || k <= -rows) /* no diagonal element (and -k could not be taken of INT64_MIN) */
        return;
    for (int64_t i = k < 0 ? -k : 0; i < rows && i + k < cols; i++)
        memcpy(dst + (size_t)(i * cols + i + k) * elem_bytes, one, elem_bytes);
}

void ptq_k_reverse_sequence_ref(size_t elem_bytes, int time_first, int64_t n_time, int64_t n_batch, int64_t inner,
                                const int64_t *lens, const void *x, void *y)
{
    const size_t row = (size_t)inner * elem_bytes;
    for (int64_t t = 0; t < n_time && row; t++)
        for (int64_t b = 0; b < n_batch; b++) {
            const int64_t from = t < lens[b] ? lens[b] - 1 - t : t;
            const int64_t at = time_first ? t * n_batch + b : b * n_time + t;
            const int64_t src = time_first ? from * n_batch + b : b * n_time + from;
            memcpy((unsigned char *)y + (size_t)at * row, (const unsigned char *)x + (size_t)src * row, row);
        }
}
