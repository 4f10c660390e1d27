/* Number formats of quantization (the table: include/ptq/numfmt.h): INT8
 * symmetric, UINT8 asymmetric (kernels/cuda/numfmt_uint8.cu on the GPU), FP8 (E4M3FN, E5M2), FP16 and BF16, as plain-C references
 * (kernels/ref/numfmt.c, on top of kernels/ref/fp8.c's scalar codes) and
 * CUDA versions (kernels/cuda/numfmt.cu) built on
 * NVIDIA's own conversions, bit for bit equal. Covered by
 * tests/test_numfmt.c and tests/cuda_parity_numfmt.c (all 2^32 floats). */
#ifndef PTQ_KERNELS_NUMFMT_H
#define PTQ_KERNELS_NUMFMT_H

#include <stdint.h>

#include "ptq/numfmt.h"
#include "ptq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which FP8 format (include/ptq/numfmt.h): PTQ_FMT_FP8_E4M3 (E4M3FN: max
 * 448, no Inf, NaN 0x7F/0xFF) or PTQ_FMT_FP8_E5M2 (max 57344, Inf 0x7C/0xFC,
 * NaN 0x7D-0x7F/0xFD-0xFF). */
typedef ptq_fmt ptq_fp8_kind;
#define PTQ_FP8_E4M3 PTQ_FMT_FP8_E4M3
#define PTQ_FP8_E5M2 PTQ_FMT_FP8_E5M2

/* The scaled quantizers compute v = x / scale as one IEEE float division
 * rounded to nearest even (ONNX QuantizeLinear's x / y_scale; never x *
 * (1/scale), which rounds twice), then round v to the format. Any scale is
 * taken and follows IEEE arithmetic (scale 0 sends x != 0 to +-Inf, hence to
 * the format's saturation, and 0 to NaN); callers pass positive finite ones.
 * Fake-quant is y = decode(q) * scale, one float multiplication. */

/* INT8's largest code. The scale is symmetric (amax / 127), but a value
 * below -127.5 scale saturates to -128, as ONNX QuantizeLinear (onnxruntime,
 * TensorRT) does: the full grid is [-128, 127]. */
#define PTQ_K_INT8_QMAX 127
#define PTQ_K_INT8_QMIN (-128)

/* INT8 symmetric: q = clamp(round_half_even(x / scale), lo, qmax), qmax in
 * [1, 127]: PTQ_K_INT8_QMAX with lo = -128 (QuantizeLinear's saturation), or
 * 64 with lo = -64 for weights on onnxruntime's reduce_range grid
 * (ptq_plan_weight_qmax), or another qmax with lo = -qmax. NaN (x NaN, or
 * 0/0, Inf/Inf) -> lo, as onnxruntime's QuantizeLinear saturates it (ONNX
 * leaves it open); +Inf -> qmax, -Inf -> lo. x, y: [n] floats; q: [n]. */
void ptq_k_quantize_int8_ref(const float *x, int64_t n, float scale, int32_t qmax, int8_t *q);
void ptq_k_dequantize_int8_ref(const int8_t *q, int64_t n, float scale, float *y);
void ptq_k_fake_quant_int8_ref(const float *x, int64_t n, float scale, int32_t qmax, float *y);

/* UINT8 asymmetric, ONNX QuantizeLinear/DequantizeLinear with a uint8 zero
 * point zp in [0, 255] (onnxruntime's CPU activations): q = clamp(
 * round_half_even(x / scale) + zp, 0, 255), the clamp done on the rounded
 * float (no out-of-range float -> int); NaN -> 0, as onnxruntime saturates
 * it; +Inf -> 255, -Inf -> 0. Dequantize: y = (float)(q - zp) * scale. x, y: [n]; q: [n]. */
void ptq_k_quantize_uint8_ref(const float *x, int64_t n, float scale, int32_t zp, uint8_t *q);
void ptq_k_dequantize_uint8_ref(const uint8_t *q, int64_t n, float scale, int32_t zp, float *y);
void ptq_k_fake_quant_uint8_ref(const float *x, int64_t n, float scale, int32_t zp, float *y);
/* The scale and zero point of the float range [lo, hi] for UINT8, as
 * onnxruntime's compute_scale_zp(lo, hi, 0, 255) (quant_utils.py, asymmetric)
 * computes them: the range widened to hold 0 (lo = min(lo, 0), hi = max(hi,
 * 0)); s = (hi - lo) / 255 in double; zp = round_half_even(-lo / s) in
 * double; scale = (float)s; a range whose s is under FLT_MIN (all zeros)
 * gives scale 1, zp 0. lo, hi finite. */
void ptq_k_uint8_params_ref(float lo, float hi, float *scale, int32_t *zp);

/* FP8: q = the saturating round-to-nearest-even code of x / scale
 * (ptq_k_fp8_*_from_float_ref: +-Inf and beyond max -> +-max, NaN -> 0x7F).
 * to_float decodes exactly, a NaN code to 0x7FFFFFFF as CUDA's
 * __nv_cvt_fp8_to_halfraw + __half2float do. x, y: [n] floats; q: [n] codes. */
uint8_t ptq_k_fp8_from_float_ref(ptq_fp8_kind kind, float x);
float ptq_k_fp8_to_float_ref(ptq_fp8_kind kind, uint8_t code);
void ptq_k_quantize_fp8_ref(ptq_fp8_kind kind, const float *x, int64_t n, float scale, uint8_t *q);
void ptq_k_dequantize_fp8_ref(ptq_fp8_kind kind, const uint8_t *q, int64_t n, float scale, float *y);
void ptq_k_fake_quant_fp8_ref(ptq_fp8_kind kind, const float *x, int64_t n, float scale, float *y);

/* FP16 (IEEE binary16), CUDA's __float2half_rn: round to nearest even,
 * subnormals kept; |x| >= 65520 (max 65504 plus half an ulp) -> +-Inf as
 * IEEE rounding does (no saturation: FP16 edges keep Inf); every NaN ->
 * 0x7FFF, the NaN __float2half_rn gives, sign and payload dropped. to_float
 * is exact; every NaN code gives 0x7FFFFFFF, as __half2float does.
 * round: y = to_float(from_float(x)); x, y: [n], x == y allowed. */
uint16_t ptq_k_fp16_from_float_ref(float x);
float ptq_k_fp16_to_float_ref(uint16_t h);
void ptq_k_round_fp16_ref(const float *x, int64_t n, float *y);

/* y[n] = x rounded as a plan's precision prec (FP16: round to half; INT8
 * with largest code qmax, UINT8 with zero point zp, FP8: fake-quant with
 * scale; FP32: a copy; qmax and zp are ignored by the formats that do not
 * take them) by the reference kernels above, on pieces across the CPU
 * thread pool (kernels/cpu/numfmt.c): bit for bit the reference. x == y allowed. */
void ptq_k_round_cpu(ptq_fmt prec, float scale, int32_t zp, int32_t qmax, const float *x, int64_t n, float *y);
/* The same, per channel: x, y are n_runs runs of `inner` floats, run r rounded with scales[r % n_ch] and
 * zero point 0 (a weight's channels, ptq_fq_create), the runs spread across the threads. */
void ptq_k_round_channels_cpu(ptq_fmt prec, const float *scales, int64_t n_ch, int32_t qmax, int64_t n_runs,
                              int64_t inner, const float *x, float *y);

/* BF16 (bfloat16, float32's top 16 bits): round to nearest even on the 16
 * dropped bits, subnormals kept, overflow past the largest finite
 * (0x7F7F) to +-Inf as IEEE rounding does; every NaN stays a NaN as the
 * canonical 0x7FFF (what __float2bfloat16_rn gives). to_float is exact (the
 * code shifted up 16 bits). round: y = to_float(from_float(x)); x == y allowed. */
uint16_t ptq_k_bf16_from_float_ref(float x);
float ptq_k_bf16_to_float_ref(uint16_t b);
void ptq_k_round_bf16_ref(const float *x, int64_t n, float *y);

#ifdef PTQ_CUDA
/* The same on the GPU, queued on d's stream; pointers are device memory;
 * INT8 on the full grid (activations: a plan's weights are rounded on the
 * host for either backend, ptq_fq_create). FP8 encodes with __nv_cvt_float_to_fp8(.., __NV_SATFINITE, ..), FP16
 * with __float2half_rn, BF16 with __float2bfloat16_rn, divisions with __fdiv_rn, INT8 rounding with
 * __float2int_rn then a clamp. */
typedef struct ptq_cuda_dev ptq_cuda_dev;

ptq_status ptq_k_quantize_int8_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n, float scale,
                                    int8_t *q);
ptq_status ptq_k_fake_quant_int8_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n, float scale,
                                      float *y);
/* UINT8 (kernels/cuda/numfmt_uint8.cu): __fdiv_rn, __float2int_rn, the clamp after adding zp. */
ptq_status ptq_k_quantize_uint8_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n, float scale,
                                     int32_t zp, uint8_t *q);
ptq_status ptq_k_fake_quant_uint8_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n, float scale,
                                       int32_t zp, float *y);
ptq_status ptq_k_quantize_fp8_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, ptq_fp8_kind kind, const float *x, int64_t n,
                                   float scale, uint8_t *q);
ptq_status ptq_k_fake_quant_fp8_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, ptq_fp8_kind kind, const float *x, int64_t n,
                                     float scale, float *y);
ptq_status ptq_k_round_fp16_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n, float *y);
ptq_status ptq_k_round_bf16_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n, float *y);
/* Unscaled conversions of x's exact bit patterns (no division, which would
 * canonicalise NaN payloads): what the exhaustive parity test drives. */
ptq_status ptq_k_fp8_from_float_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, ptq_fp8_kind kind, const float *x, int64_t n,
                                     uint8_t *q);
ptq_status ptq_k_fp16_from_float_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n, uint16_t *h);
ptq_status ptq_k_bf16_from_float_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n, uint16_t *b);
#endif

#ifdef __cplusplus
}
#endif
#endif
