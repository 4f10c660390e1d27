/* exp in double, written so a loop calling it vectorizes (no table, no
 * call, no branch): the CPU kernels' Erf (kernels/cpu/unary.c), and
 * Softmax, Sigmoid and Gelu (tanh) of kernels/ref and kernels/cpu, which
 * call the same inline code and so give the same bits on every target (ISO
 * C: no FMA contraction). u = k ln 2 + r, |r| <= ln 2 / 2, with ln 2 in two parts
 * (fdlibm's); exp(r) by its degree-9 Taylor polynomial (relative error below
 * 8e-12, Estrin's scheme); 2^k made from k's bits. ptq_expf_poly, on every
 * float in [-104, 89]: the float nearest exp in double on all but 626 of the
 * 1.12e9 in [-104, 0] (glibc's expf: 97,052) and 659 of the 1.12e9 in
 * (0, 89] (glibc's: 73,596), within 1 ulp of it everywhere
 * (build/bench/softmax_cpu). */
#ifndef PTQ_KERNELS_EXP_POLY_H
#define PTQ_KERNELS_EXP_POLY_H

#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h" /* PTQ_GELU_TANH_K, PTQ_GELU_TANH_C */

/* exp(u) for u in [-708, 0] (2^k stays a normal double); NaN and other u:
 * callers pick another result for them. */
__attribute__((always_inline)) static inline double ptq_exp_poly(double u)
{
    /* 2^52 + 2^51: adding it rounds to an integer kept in the low mantissa bits */
    const double shift = 0x1.8p52, log2e = 0x1.71547652b82fep0, ln2_hi = 6.93147180369123816490e-01,
                 ln2_lo = 1.90821492927058770002e-10;
    uint64_t shift_bits;
    memcpy(&shift_bits, &shift, sizeof shift_bits);
    const double kd = u * log2e + shift, nd = kd - shift;
    const double r = (u - nd * ln2_hi) - nd * ln2_lo;
    const double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
    const double e01 = 1.0 + r, e23 = 0.5 + r * (1.0 / 6.0), e45 = 1.0 / 24.0 + r * (1.0 / 120.0);
    const double e67 = 1.0 / 720.0 + r * (1.0 / 5040.0), e89 = 1.0 / 40320.0 + r * (1.0 / 362880.0);
    const double pe = (e01 + e23 * r2) + (e45 + e67 * r2) * r4 + e89 * r8;
    uint64_t kb;
    memcpy(&kb, &kd, sizeof kb);
    const uint64_t sb = (kb - shift_bits + 1023) << 52;
    double scale;
    memcpy(&scale, &sb, sizeof scale);
    return pe * scale;
}

/* exp(t) as a float for any float t: t below -150 (-Inf too) gives 0, t past 89 +Inf (float's exp overflows from
 * 88.73 on), NaN passes. */
__attribute__((always_inline)) static inline float ptq_expf_poly(float t)
{
    const double u = t > -150.0f ? (t < 89.0f ? (double)t : 89.0) : -150.0;
    const float e = (float)ptq_exp_poly(u);
    return t != t ? t : e;
}

/* Sigmoid and Gelu (tanh) as kernels/ref/unary.c and kernels/cpu/unary.c both compute them with this exp: one
 * expression, so the same bits; a NaN input is its own output (whichever NaN vector arithmetic would keep). */
__attribute__((always_inline)) static inline float ptq_sigmoid_poly(float x)
{
    const float s = 1.0f / (1.0f + ptq_expf_poly(-x));
    return x != x ? x : s;
}

__attribute__((always_inline)) static inline float ptq_gelu_tanh_poly(float x)
{
    const float t = PTQ_GELU_TANH_K * (x + PTQ_GELU_TANH_C * (x * x * x));
    const float g = x / (1.0f + ptq_expf_poly(-2.0f * t));
    return x != x ? x : g;
}

#endif
