/* Inference BatchNormalization on the GPU, mirroring ptq_k_batchnorm_ref:
 * y = (x - mean) / sqrt(var + eps) * scale + bias per channel in double, one
 * thread per element; the _rn intrinsics keep nvcc from fusing what the ref
 * rounds twice. Covered by tests/cuda_parity_kernels.c. */
#include "kernels/cuda/cuda_common.cuh"

/* x, y: [n, c, spatial]; scale, bias, mean, var: [c] */
static __global__ void batchnorm_kernel(int64_t total, int64_t c, int64_t spatial, const float *x, const float *scale,
                                        const float *bias, const float *mean, const float *var, float eps, float *y)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ch = (i / spatial) % c;
        double norm = ((double)x[i] - (double)mean[ch]) / sqrt((double)var[ch] + (double)eps);
        y[i] = (float)__dadd_rn(__dmul_rn(norm, (double)scale[ch]), (double)bias[ch]);
    }
}

extern "C" ptq_status ptq_k_batchnorm_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t n, int64_t c, int64_t spatial,
                                           const float *x, const float *scale, const float *bias, const float *mean,
                                           const float *var, float eps, float *y)
{
    int64_t total = n * c * spatial;
    if (total <= 0)
        return PTQ_OK;
    batchnorm_kernel<<<ptq_cuda_blocks(total), PTQ_CUDA_BLOCK, 0, d->stream>>>(total, c, spatial, x, scale, bias,
                                                                                mean, var, eps, y);
    PTQ_CUDA_LAUNCHED(ctx, "batchnorm_kernel");
    return PTQ_OK;
}
