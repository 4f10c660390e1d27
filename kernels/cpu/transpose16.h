/* A 16 x 16 block of floats transposed in AVX-512 registers: the CPU Softmax's short rows (kernels/cpu/softmax.c),
 * LayerNormalization's 16-row blocks (kernels/cpu/layernorm.c) and Transpose's swapped last two dims
 * (kernels/cpu/transpose.c). PTQ_TRANSPOSE16 where the compiler has it; whether the CPU does is
 * ptq_k_conv_cpu_isa() >= 2 (which tests may narrow), as for every CPU kernel. */
#ifndef PTQ_KERNELS_CPU_TRANSPOSE16_H
#define PTQ_KERNELS_CPU_TRANSPOSE16_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define PTQ_TRANSPOSE16 1

/* v[16] rows of 16 floats -> v[16] columns, in registers: pairs of rows interleaved, then pairs of pairs, then the
 * 128-bit lanes of four vectors regrouped twice. */
__attribute__((target("avx512f"), always_inline)) static inline void transpose16(__m512 *v)
{
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(v[i], v[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(v[i], v[i + 1]);
    }
    /* u[4 g + j], lane k: column 4 k + j of rows 4 g .. 4 g + 3 */
    __m512 u[16];
    for (int i = 0; i < 16; i += 4) {
        const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
        const __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
        u[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        u[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        u[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        u[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    for (int j = 0; j < 4; j++) {
        const __m512 a0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88), a1 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xdd);
        const __m512 b0 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88);
        const __m512 b1 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xdd);
        v[j] = _mm512_shuffle_f32x4(a0, b0, 0x88);
        v[4 + j] = _mm512_shuffle_f32x4(a1, b1, 0x88);
        v[8 + j] = _mm512_shuffle_f32x4(a0, b0, 0xdd);
        v[12 + j] = _mm512_shuffle_f32x4(a1, b1, 0xdd);
    }
}
#endif

#endif
