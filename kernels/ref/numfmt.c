/* Reference number formats (kernels/numfmt.h): INT8 symmetric, UINT8
 * asymmetric (onnxruntime's compute_scale_zp for its parameters), FP8 arrays on
 * kernels/ref/fp8.c's scalar codes, FP16 and BF16 by integer bit manipulation. The
 * executable spec of kernels/cuda/numfmt.cu; covered by tests/test_numfmt.c
 * and, over all 2^32 floats against NVIDIA's conversions, tests/cuda_parity_numfmt.c. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/numfmt.h"

/* The NaN CUDA's __half2float and __nv_cvt_fp8_to_halfraw + __half2float
 * give for every NaN code: sign and payload dropped, all mantissa bits set. */
#define CUDA_FLOAT_NAN_BITS 0x7FFFFFFFu

static uint32_t float_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* rintf rounds half to even in the default rounding mode, which ptq never
 * changes; the clamp happens in float, so no out-of-range float -> int. NaN
 * saturates low, as onnxruntime's QuantizeLinear (MLAS clamps with max(v, lo)
 * first, which gives lo for a NaN) and ONNX's reference implementation do. */
static int8_t int8_from_scaled(float v, int32_t qmax)
{
    const int32_t lo = qmax == PTQ_K_INT8_QMAX ? PTQ_K_INT8_QMIN : -qmax;
    if (isnan(v))
        return (int8_t)lo;
    const float r = rintf(v);
    if (r >= (float)qmax)
        return (int8_t)qmax;
    if (r <= (float)lo)
        return (int8_t)lo;
    return (int8_t)(int)r;
}

void ptq_k_quantize_int8_ref(const float *x, int64_t n, float scale, int32_t qmax, int8_t *q)
{
    for (int64_t i = 0; i < n; i++)
        q[i] = int8_from_scaled(x[i] / scale, qmax);
}

void ptq_k_dequantize_int8_ref(const int8_t *q, int64_t n, float scale, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = (float)q[i] * scale;
}

void ptq_k_fake_quant_int8_ref(const float *x, int64_t n, float scale, int32_t qmax, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = (float)int8_from_scaled(x[i] / scale, qmax) * scale;
}

#define UINT8_QMAX 255

/* round_half_even(v) + zp clamped to [0, 255] in float, exact for these
 * integers; NaN saturates low to 0, as onnxruntime's QuantizeLinear does. */
static uint8_t uint8_from_scaled(float v, int32_t zp)
{
    if (isnan(v))
        return 0;
    const float r = rintf(v);
    if (r >= (float)(UINT8_QMAX - zp))
        return UINT8_QMAX;
    if (r <= (float)-zp)
        return 0;
    return (uint8_t)((int)r + zp);
}

void ptq_k_quantize_uint8_ref(const float *x, int64_t n, float scale, int32_t zp, uint8_t *q)
{
    for (int64_t i = 0; i < n; i++)
        q[i] = uint8_from_scaled(x[i] / scale, zp);
}

void ptq_k_dequantize_uint8_ref(const uint8_t *q, int64_t n, float scale, int32_t zp, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = (float)((int32_t)q[i] - zp) * scale;
}

void ptq_k_fake_quant_uint8_ref(const float *x, int64_t n, float scale, int32_t zp, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = (float)((int32_t)uint8_from_scaled(x[i] / scale, zp) - zp) * scale;
}

void ptq_k_uint8_params_ref(float lo, float hi, float *scale, int32_t *zp)
{
    const double rmin = lo < 0.0f ? (double)lo : 0.0, rmax = hi > 0.0f ? (double)hi : 0.0;
    const double s = (rmax - rmin) / (double)UINT8_QMAX;
    if (s < (double)FLT_MIN) {
        *scale = 1.0f;
        *zp = 0;
        return;
    }
    /* 0 <= -rmin / s <= 255 since -rmin <= rmax - rmin; rint: numpy.round's half to even */
    *zp = (int32_t)rint(-rmin / s);
    *scale = (float)s;
}

uint8_t ptq_k_fp8_from_float_ref(ptq_fp8_kind kind, float x)
{
    return kind == PTQ_FP8_E5M2 ? ptq_k_fp8_e5m2_from_float_ref(x) : ptq_k_fp8_e4m3_from_float_ref(x);
}

float ptq_k_fp8_to_float_ref(ptq_fp8_kind kind, uint8_t code)
{
    const float v = kind == PTQ_FP8_E5M2 ? ptq_k_fp8_e5m2_to_float_ref(code) : ptq_k_fp8_e4m3_to_float_ref(code);
    return isnan(v) ? bits_float(CUDA_FLOAT_NAN_BITS) : v;
}

void ptq_k_quantize_fp8_ref(ptq_fp8_kind kind, const float *x, int64_t n, float scale, uint8_t *q)
{
    for (int64_t i = 0; i < n; i++)
        q[i] = ptq_k_fp8_from_float_ref(kind, x[i] / scale);
}

void ptq_k_dequantize_fp8_ref(ptq_fp8_kind kind, const uint8_t *q, int64_t n, float scale, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = ptq_k_fp8_to_float_ref(kind, q[i]) * scale;
}

void ptq_k_fake_quant_fp8_ref(ptq_fp8_kind kind, const float *x, int64_t n, float scale, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = ptq_k_fp8_to_float_ref(kind, ptq_k_fp8_from_float_ref(kind, x[i] / scale)) * scale;
}

/* Float fields: sign 1, exponent 8 (bias 127), mantissa 23; half: 1, 5 (bias
 * 15), 10. Rebiasing the exponent is subtracting (127 - 15) << 23. */
uint16_t ptq_k_fp16_from_float_ref(float x)
{
    const uint32_t u = float_bits(x);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u)
        return 0x7FFF;
    if (a >= 0x477FF000u) /* >= 65520 = max + half an ulp, a tie that goes to the even Inf; Inf itself */
        return (uint16_t)(sign | 0x7C00u);
    uint32_t h, rem, half;
    if (a >= 0x38800000u) { /* >= 2^-14: a normal half */
        h = (a - 0x38000000u) >> 13;
        rem = a & 0x1FFFu;
        half = 0x1000u;
    } else if (a <= 0x33000000u) { /* <= 2^-25, half the smallest subnormal: ties to the even 0 */
        return sign;
    } else { /* subnormal half: a = m * 2^(e - 150), in units of 2^-24 that is m >> (126 - e) */
        const uint32_t e = a >> 23, m = (a & 0x7FFFFFu) | 0x800000u;
        const uint32_t shift = 126u - e; /* 14..24 */
        h = m >> shift;
        rem = m & ((1u << shift) - 1u);
        half = 1u << (shift - 1u);
    }
    /* a carry out of the mantissa moves into the exponent, which is right */
    if (rem > half || (rem == half && (h & 1u)))
        h++;
    return (uint16_t)(sign | h);
}

float ptq_k_fp16_to_float_ref(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t man = h & 0x3FFu;
    if (exp == 0x1F)
        return bits_float(man ? CUDA_FLOAT_NAN_BITS : sign | 0x7F800000u);
    if (exp != 0)
        return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
    if (man == 0)
        return bits_float(sign);
    /* subnormal: man * 2^-24, normalised into a float */
    uint32_t e = 113;
    while (!(man & 0x400u)) {
        man <<= 1;
        e--;
    }
    return bits_float(sign | (e << 23) | ((man & 0x3FFu) << 13));
}

void ptq_k_round_fp16_ref(const float *x, int64_t n, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = ptq_k_fp16_to_float_ref(ptq_k_fp16_from_float_ref(x[i]));
}

/* BF16 is float32's top half: add just under half of the dropped 16 bits,
 * plus the kept lowest bit (ties to even), and truncate; a carry moves into
 * the exponent and past the largest finite into Inf, as IEEE rounding does. */
uint16_t ptq_k_bf16_from_float_ref(float x)
{
    const uint32_t u = float_bits(x);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return 0x7FFF;
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

float ptq_k_bf16_to_float_ref(uint16_t b)
{
    return bits_float((uint32_t)b << 16);
}

void ptq_k_round_bf16_ref(const float *x, int64_t n, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = ptq_k_bf16_to_float_ref(ptq_k_bf16_from_float_ref(x[i]));
}
