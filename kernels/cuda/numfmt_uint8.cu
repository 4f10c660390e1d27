/* UINT8 asymmetric quantization on the GPU (kernels/numfmt.h): x / scale as
 * one IEEE division (__fdiv_rn), rounded half to even (__float2int_rn: beyond
 * int saturates), plus the zero point, clamped to [0, 255] (NaN to 0); bit for
 * bit kernels/ref/numfmt.c's ptq_k_*_uint8_ref. Covered by
 * tests/cuda_parity_uint8.c. */
#include "kernels/cuda/cuda_common.cuh"
#include "kernels/numfmt.h"

#define UINT8_QMAX 255

/* NaN gives 0, as the reference does (onnxruntime saturates it low; __float2int_rn(NaN) would be 0, the zero
 * point's code). Inf and huge values saturate in __float2int_rn to +-2^31 (-1), which the 64-bit sum keeps away
 * from overflow. */
static __device__ int uint8_code(float x, float scale, int32_t zp)
{
    const float v = __fdiv_rn(x, scale);
    if (isnan(v))
        return 0;
    const long long r = (long long)__float2int_rn(v) + zp;
    return r > UINT8_QMAX ? UINT8_QMAX : r < 0 ? 0 : (int)r;
}

#define GRID_STRIDE(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* x: [n] -> q, y: [n]; x == y allowed */
static __global__ void quantize_uint8_kernel(int64_t n, const float *x, float scale, int32_t zp, uint8_t *q)
{
    GRID_STRIDE(i, n) q[i] = (uint8_t)uint8_code(x[i], scale, zp);
}

static __global__ void fake_quant_uint8_kernel(int64_t n, const float *x, float scale, int32_t zp, float *y)
{
    GRID_STRIDE(i, n) y[i] = __fmul_rn((float)(uint8_code(x[i], scale, zp) - zp), scale);
}

static ptq_status check_zp(ptq_ctx *ctx, int32_t zp)
{
    if (zp < 0 || zp > UINT8_QMAX)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "uint8: zero point %d is not in [0, 255]", (int)zp);
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_quantize_uint8_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n, float scale,
                                                int32_t zp, uint8_t *q)
{
    if (check_zp(ctx, zp) != PTQ_OK)
        return ctx->code;
    if (n > 0) {
        quantize_uint8_kernel<<<ptq_cuda_blocks(n), PTQ_CUDA_BLOCK, 0, d->stream>>>(n, x, scale, zp, q);
        PTQ_CUDA_LAUNCHED(ctx, "quantize_uint8_kernel");
    }
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_fake_quant_uint8_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n,
                                                  float scale, int32_t zp, float *y)
{
    if (check_zp(ctx, zp) != PTQ_OK)
        return ctx->code;
    if (n > 0) {
        fake_quant_uint8_kernel<<<ptq_cuda_blocks(n), PTQ_CUDA_BLOCK, 0, d->stream>>>(n, x, scale, zp, y);
        PTQ_CUDA_LAUNCHED(ctx, "fake_quant_uint8_kernel");
    }
    return PTQ_OK;
}
