/* Reference ONNX QuantizeLinear / DequantizeLinear (kernels/kernels.h): per tensor, per axis and blocked, integer
 * codes rounded half to even and saturated as onnxruntime's MLAS does (in float, exact for these integers), FP8
 * through kernels/ref/fp8.c's encoders. The CPU path too. Covered by tests/ops_qdq_test.py (onnxruntime) and the ONNX
 * conformance run. */
#include <math.h>

#include "kernels/kernels.h"

/* The zero point at index k of zp (of kind), as an int64; 0 without one. */
static int64_t zp_int(ptq_qdq_kind kind, const void *zp, int64_t k)
{
    if (!zp)
        return 0;
    switch (kind) {
    case PTQ_QDQ_INT8: return ((const int8_t *)zp)[k];
    case PTQ_QDQ_UINT8: return ((const uint8_t *)zp)[k];
    case PTQ_QDQ_INT16: return ((const int16_t *)zp)[k];
    case PTQ_QDQ_UINT16: return ((const uint16_t *)zp)[k];
    case PTQ_QDQ_INT32: return ((const int32_t *)zp)[k];
    default: return 0;
    }
}

static float fp8_decode(ptq_qdq_kind kind, uint8_t code)
{
    return kind == PTQ_QDQ_E5M2 ? ptq_k_fp8_e5m2_to_float_ref(code) : ptq_k_fp8_e4m3_to_float_ref(code);
}

static float zp_float(ptq_qdq_kind kind, const void *zp, int64_t k)
{
    return zp ? fp8_decode(kind, ((const uint8_t *)zp)[k]) : 0.0f;
}

/* The FP8 code of v: round to nearest even, saturating; without saturate, a value whose rounding passes the
 * largest finite one (E4M3FN past 464, the tie with 480 going to even 448; E5M2 from 61440, the tie going to
 * 65536) and +-Inf become NaN (E4M3FN has no Inf) or +-Inf. */
static uint8_t fp8_encode(ptq_qdq_kind kind, int saturate, float v)
{
    const int e5 = kind == PTQ_QDQ_E5M2;
    const uint8_t code = e5 ? ptq_k_fp8_e5m2_from_float_ref(v) : ptq_k_fp8_e4m3_from_float_ref(v);
    if (saturate || isnan(v))
        return code;
    const float a = fabsf(v);
    const uint8_t sign = signbit(v) ? 0x80 : 0x00;
    if (e5 ? a >= 61440.0f : a > 464.0f)
        return (uint8_t)(sign | (e5 ? 0x7C : 0x7F));
    return code;
}

static void quantize_int(ptq_qdq_kind kind, float v, int64_t zp, void *y, int64_t j)
{
    float lo = -128.0f, hi = 127.0f;
    if (kind == PTQ_QDQ_UINT8)
        lo = 0.0f, hi = 255.0f;
    else if (kind == PTQ_QDQ_INT16)
        lo = -32768.0f, hi = 32767.0f;
    else if (kind == PTQ_QDQ_UINT16)
        lo = 0.0f, hi = 65535.0f;
    float r = rintf(v) + (float)zp; /* exact wherever it is not clamped */
    if (isnan(r) || r < lo)
        r = lo;
    if (r > hi)
        r = hi;
    switch (kind) {
    case PTQ_QDQ_INT8: ((int8_t *)y)[j] = (int8_t)r; break;
    case PTQ_QDQ_UINT8: ((uint8_t *)y)[j] = (uint8_t)r; break;
    case PTQ_QDQ_INT16: ((int16_t *)y)[j] = (int16_t)r; break;
    default: ((uint16_t *)y)[j] = (uint16_t)r; break;
    }
}

void ptq_k_quantize_linear_ref(ptq_qdq_kind kind, int saturate, const ptq_qdq_view *v, const float *x,
                               const float *scale, const void *zp, void *y)
{
    const int fp8 = kind == PTQ_QDQ_E4M3FN || kind == PTQ_QDQ_E5M2;
    int64_t j = 0;
    for (int64_t o = 0; o < v->outer; o++)
        for (int64_t l = 0; l < v->len; l++)
            for (int64_t i = 0; i < v->inner; i++, j++) {
                const int64_t k = o * v->s_outer + (l / v->block) * v->s_len + i * v->s_inner;
                if (fp8)
                    ((uint8_t *)y)[j] = fp8_encode(kind, saturate, x[j] / scale[k] + zp_float(kind, zp, k));
                else
                    quantize_int(kind, x[j] / scale[k], zp_int(kind, zp, k), y, j);
            }
}

void ptq_k_dequantize_linear_ref(ptq_qdq_kind kind, const ptq_qdq_view *v, const void *x, const float *scale,
                                 const void *zp, float *y)
{
    const int fp8 = kind == PTQ_QDQ_E4M3FN || kind == PTQ_QDQ_E5M2;
    int64_t j = 0;
    for (int64_t o = 0; o < v->outer; o++)
        for (int64_t l = 0; l < v->len; l++)
            for (int64_t i = 0; i < v->inner; i++, j++) {
                const int64_t k = o * v->s_outer + (l / v->block) * v->s_len + i * v->s_inner;
                if (fp8)
                    y[j] = (fp8_decode(kind, ((const uint8_t *)x)[j]) - zp_float(kind, zp, k)) * scale[k];
                else
                    y[j] = (float)(zp_int(kind, x, j) - zp_int(kind, zp, k)) * scale[k];
            }
}
