/* The FMA micro-kernels of the CPU's direct convolution (kernels/cpu/conv_direct.c) and GEMM (kernels/cpu/gemm.c):
 * a tile of MR rows by NR columns, each output one register summed over k in order, acc = fma(a_k, b_k, acc) from
 * acc = 0 (or from the tile's partial sums when accumulating: a float stored and loaded back is the same float). The
 * same operations whatever the vector width, so the AVX2 and AVX-512 kernels give the same bits, and a row's outputs
 * do not depend on which rows share its tile. */
#ifndef PTQ_KERNELS_CPU_FMA_TILE_H
#define PTQ_KERNELS_CPU_FMA_TILE_H

#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define PTQ_FMA_TILE 1

enum {
    MR = 6,      /* rows a kernel call computes */
    NR_512 = 64, /* and columns: 4 AVX-512 vectors */
    NR_256 = 16, /* or 2 AVX2 vectors */
    KC = 256     /* k a kernel call sums before its partial sums go back to the tile */
};

enum { ISA_NONE = 0, ISA_AVX2 = 1, ISA_AVX512 = 2 }; /* ptq_k_conv_cpu_isa's answers */

/* tile[mr][16 nv] (+)= a[kc][mr] times the kc rows base + off[k], 16 nv columns each: kernel_512's body for mr <= 8
 * rows and nv <= 4 vectors, each a compile-time constant where it is inlined, so the arrays are registers. */
__attribute__((target("avx512f"), always_inline)) static inline void
kernel_512_mn(const float *a, const int64_t *off, int64_t kc, const float *base, float *tile, int accumulate,
              const int mr, const int nv)
{
    __m512 c[8][4];
    for (int m = 0; m < mr; m++)
        for (int v = 0; v < nv; v++)
            c[m][v] = accumulate ? _mm512_loadu_ps(tile + (m * nv + v) * 16) : _mm512_setzero_ps();
    for (int64_t k = 0; k < kc; k++, a += mr) {
        const float *s = base + off[k];
        __m512 b[4];
        for (int v = 0; v < nv; v++)
            b[v] = _mm512_loadu_ps(s + 16 * v);
        for (int m = 0; m < mr; m++) {
            const __m512 w = _mm512_set1_ps(a[m]);
            for (int v = 0; v < nv; v++)
                c[m][v] = _mm512_fmadd_ps(w, b[v], c[m][v]);
        }
    }
    for (int m = 0; m < mr; m++)
        for (int v = 0; v < nv; v++)
            _mm512_storeu_ps(tile + (m * nv + v) * 16, c[m][v]);
}

/* tile[MR][NR] (+)= a[kc][MR] times the kc rows base + off[k], NR columns each. */
__attribute__((target("avx512f"))) static inline void kernel_512(const float *a, const int64_t *off, int64_t kc,
                                                           const float *base, float *tile, int accumulate)
{
    kernel_512_mn(a, off, kc, base, tile, accumulate, MR, NR_512 / 16);
}

__attribute__((target("avx2,fma"))) static inline void kernel_256(const float *a, const int64_t *off, int64_t kc,
                                                            const float *base, float *tile, int accumulate)
{
    __m256 c[MR][2];
    for (int m = 0; m < MR; m++)
        for (int v = 0; v < 2; v++)
            c[m][v] = accumulate ? _mm256_loadu_ps(tile + m * NR_256 + 8 * v) : _mm256_setzero_ps();
    for (int64_t k = 0; k < kc; k++, a += MR) {
        const float *s = base + off[k];
        const __m256 b0 = _mm256_loadu_ps(s), b1 = _mm256_loadu_ps(s + 8);
        for (int m = 0; m < MR; m++) {
            const __m256 w = _mm256_broadcast_ss(a + m);
            c[m][0] = _mm256_fmadd_ps(w, b0, c[m][0]);
            c[m][1] = _mm256_fmadd_ps(w, b1, c[m][1]);
        }
    }
    for (int m = 0; m < MR; m++)
        for (int v = 0; v < 2; v++)
            _mm256_storeu_ps(tile + m * NR_256 + 8 * v, c[m][v]);
}

#endif
#endif
