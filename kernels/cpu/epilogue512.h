/* A convolution chain's epilogue on AVX-512 vectors, shared by the CPU's direct and depthwise convolutions and the
 * GEMM's pointwise stores (kernels/cpu/conv_direct.c, conv_depthwise.c, gemm.c), and the lane masks of a row's last
 * vector (pool.c too). Each step one IEEE operation, as the Conv, Add, Relu and Clip nodes round them
 * (kernels/cpu/conv.c's epilogue), so the same bits as their passes. */
#ifndef PTQ_KERNELS_CPU_EPILOGUE512_H
#define PTQ_KERNELS_CPU_EPILOGUE512_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <stdint.h>

/* The first n lanes of 16 (none for n <= 0). */
static inline __mmask16 ptq_lanes16(int64_t n)
{
    return n <= 0 ? 0 : n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u);
}

/* v plus bias (has_bias), plus z's lanes k (z NULL: none), then t = v < lo ? lo : v, t > hi ? hi : t (the
 * compares false on NaN, so a NaN stays; -0 stays -0 against a bound of 0). */
__attribute__((target("avx512f"), always_inline)) static inline __m512
ptq_epilogue_512(__m512 v, __mmask16 k, const float *z, int has_bias, __m512 bias, __m512 lo, __m512 hi)
{
    if (has_bias)
        v = _mm512_add_ps(v, bias);
    if (z)
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, z));
    v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, lo, _CMP_LT_OQ), lo);
    return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, hi, _CMP_GT_OQ), hi);
}
#endif

#endif
