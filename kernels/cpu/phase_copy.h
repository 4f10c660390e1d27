/* Copies of an input plane split by stride phase, shared by the direct and depthwise convolutions
 * (kernels/cpu/conv_direct.c, conv_depthwise.c): phase column i of column phase b (column stride s2, left padding
 * l2) reads input column i * s2 + b - l2. */
#ifndef PTQ_KERNELS_CPU_PHASE_COPY_H
#define PTQ_KERNELS_CPU_PHASE_COPY_H

#include <stdint.h>
#include <string.h>

/* The columns [*lo, *hi) of phase b, wq wide, that read inside an input row w wide (*lo == *hi: none). */
static inline void ptq_phase_cols(int64_t w, int64_t l2, int64_t b, int64_t s2, int64_t wq, int64_t *lo, int64_t *hi)
{
    int64_t l = l2 - b <= 0 ? 0 : (l2 - b + s2 - 1) / s2;
    int64_t h = w + l2 - b <= 0 ? 0 : (w + l2 - b + s2 - 1) / s2;
    l = l > wq ? wq : l;
    h = h > wq ? wq : (h < l ? l : h);
    *lo = l;
    *hi = h;
}

/* Phase columns [lo, hi) of row from the input row src (its column 0). */
static inline void ptq_phase_row(float *row, const float *src, int64_t lo, int64_t hi, int64_t b, int64_t s2,
                                 int64_t l2)
{
    src += lo * s2 + b - l2;
    if (s2 == 1)
        memcpy(row + lo, src, (size_t)(hi - lo) * sizeof *row);
    else
        for (int64_t i = lo; i < hi; i++, src += s2)
            row[i] = *src;
}

#endif
