/* Number formats on the GPU (kernels/numfmt.h) through NVIDIA's own
 * conversions: __nv_cvt_float_to_fp8(.., __NV_SATFINITE, ..) (the
 * cvt.rn.satfinite instruction on sm_89+), __float2half_rn,
 * __float2bfloat16_rn, __fdiv_rn and __float2int_rn; bit for bit
 * kernels/ref/numfmt.c. Covered by tests/cuda_parity_numfmt.c (all 2^32
 * floats for FP8, FP16 and BF16). */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/numfmt.h"

static __device__ __nv_fp8_interpretation_t interp(ptq_fp8_kind kind)
{
    return kind == PTQ_FP8_E5M2 ? __NV_E5M2 : __NV_E4M3;
}

/* x / scale as one IEEE division, whatever -prec-div says; NaN saturates low, as in the reference */
static __device__ int int8_code(float x, float scale)
{
    const float v = __fdiv_rn(x, scale);
    if (isnan(v))
        return PTQ_K_INT8_QMIN;
    const int r = __float2int_rn(v); /* beyond int range saturates */
    return r > PTQ_K_INT8_QMAX ? PTQ_K_INT8_QMAX : r < PTQ_K_INT8_QMIN ? PTQ_K_INT8_QMIN : r;
}

static __device__ uint8_t fp8_code(float v, ptq_fp8_kind kind)
{
    return (uint8_t)__nv_cvt_float_to_fp8(v, __NV_SATFINITE, interp(kind));
}

static __device__ float fp8_value(uint8_t code, ptq_fp8_kind kind)
{
    return __half2float(__half(__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)code, interp(kind))));
}

#define GRID_STRIDE(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* x: [n] -> q, y: [n] in every kernel below; x == y allowed */
static __global__ void quantize_int8_kernel(int64_t n, const float *x, float scale, int8_t *q)
{
    GRID_STRIDE(i, n) q[i] = (int8_t)int8_code(x[i], scale);
}

static __global__ void fake_quant_int8_kernel(int64_t n, const float *x, float scale, float *y)
{
    GRID_STRIDE(i, n) y[i] = __fmul_rn((float)int8_code(x[i], scale), scale);
}

static __global__ void quantize_fp8_kernel(ptq_fp8_kind kind, int64_t n, const float *x, float scale, uint8_t *q)
{
    GRID_STRIDE(i, n) q[i] = fp8_code(__fdiv_rn(x[i], scale), kind);
}

static __global__ void fake_quant_fp8_kernel(ptq_fp8_kind kind, int64_t n, const float *x, float scale, float *y)
{
    GRID_STRIDE(i, n) y[i] = __fmul_rn(fp8_value(fp8_code(__fdiv_rn(x[i], scale), kind), kind), scale);
}

static __global__ void fp8_from_float_kernel(ptq_fp8_kind kind, int64_t n, const float *x, uint8_t *q)
{
    GRID_STRIDE(i, n) q[i] = fp8_code(x[i], kind);
}

static __global__ void fp16_from_float_kernel(int64_t n, const float *x, uint16_t *h)
{
    GRID_STRIDE(i, n) h[i] = __half_as_ushort(__float2half_rn(x[i]));
}

static __global__ void round_fp16_kernel(int64_t n, const float *x, float *y)
{
    GRID_STRIDE(i, n) y[i] = __half2float(__float2half_rn(x[i]));
}

static __global__ void bf16_from_float_kernel(int64_t n, const float *x, uint16_t *b)
{
    GRID_STRIDE(i, n) b[i] = __bfloat16_as_ushort(__float2bfloat16_rn(x[i]));
}

static __global__ void round_bf16_kernel(int64_t n, const float *x, float *y)
{
    GRID_STRIDE(i, n) y[i] = __bfloat162float(__float2bfloat16_rn(x[i]));
}

#define LAUNCH(ctx, d, n, kernel, ...)                                                             \
    do {                                                                                           \
        if ((n) > 0) {                                                                             \
            kernel<<<ptq_cuda_blocks(n), PTQ_CUDA_BLOCK, 0, (d)->stream>>>(__VA_ARGS__);            \
            PTQ_CUDA_LAUNCHED(ctx, #kernel);                                                       \
        }                                                                                          \
    } while (0)

static ptq_status check_kind(ptq_ctx *ctx, ptq_fp8_kind kind)
{
    if (kind != PTQ_FP8_E4M3 && kind != PTQ_FP8_E5M2)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "fp8: unknown kind %d", (int)kind);
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_quantize_int8_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n, float scale,
                                               int8_t *q)
{
    LAUNCH(ctx, d, n, quantize_int8_kernel, n, x, scale, q);
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_fake_quant_int8_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n,
                                                 float scale, float *y)
{
    LAUNCH(ctx, d, n, fake_quant_int8_kernel, n, x, scale, y);
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_quantize_fp8_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, ptq_fp8_kind kind, const float *x,
                                              int64_t n, float scale, uint8_t *q)
{
    if (check_kind(ctx, kind) != PTQ_OK)
        return ctx->code;
    LAUNCH(ctx, d, n, quantize_fp8_kernel, kind, n, x, scale, q);
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_fake_quant_fp8_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, ptq_fp8_kind kind, const float *x,
                                                int64_t n, float scale, float *y)
{
    if (check_kind(ctx, kind) != PTQ_OK)
        return ctx->code;
    LAUNCH(ctx, d, n, fake_quant_fp8_kernel, kind, n, x, scale, y);
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_round_fp16_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n, float *y)
{
    LAUNCH(ctx, d, n, round_fp16_kernel, n, x, y);
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_fp8_from_float_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, ptq_fp8_kind kind, const float *x,
                                                int64_t n, uint8_t *q)
{
    if (check_kind(ctx, kind) != PTQ_OK)
        return ctx->code;
    LAUNCH(ctx, d, n, fp8_from_float_kernel, kind, n, x, q);
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_fp16_from_float_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n,
                                                 uint16_t *h)
{
    LAUNCH(ctx, d, n, fp16_from_float_kernel, n, x, h);
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_round_bf16_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n, float *y)
{
    LAUNCH(ctx, d, n, round_bf16_kernel, n, x, y);
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_bf16_from_float_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n,
                                                 uint16_t *b)
{
    LAUNCH(ctx, d, n, bf16_from_float_kernel, n, x, b);
    return PTQ_OK;
}
