/* LayerNormalization on the GPU, mirroring ptq_k_layernorm_ref: one block
 * per row sums x, then (x - mean)^2, in double (a fixed tree, so the result
 * does not depend on timing), and writes y in double like the ref; the _rn
 * intrinsics keep nvcc from fusing what the ref rounds twice. Covered by
 * tests/cuda_parity_kernels.c. */
#include "kernels/cuda/cuda_common.cuh"

#define LN_MAX_BLOCKS 65535

/* The sum of every thread's v over the block (blockDim.x == PTQ_CUDA_BLOCK, a power of two). */
static __device__ double block_sum(double v, double *shared)
{
    shared[threadIdx.x] = v;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            shared[threadIdx.x] += shared[threadIdx.x + half];
        __syncthreads();
    }
    double total = shared[0];
    __syncthreads(); /* shared is reused by the next sum */
    return total;
}

/* x, y: [n_rows, n_cols]; scale, bias: [n_cols] (bias NULL: 0); mean, inv_std: [n_rows] or NULL */
static __global__ void layernorm_kernel(int64_t n_rows, int64_t n_cols, const float *x, const float *scale,
                                        const float *bias, float eps, float *y, float *mean, float *inv_std)
{
    __shared__ double shared[PTQ_CUDA_BLOCK];
    for (int64_t r = blockIdx.x; r < n_rows; r += gridDim.x) {
        const float *xr = x + r * n_cols;
        float *yr = y + r * n_cols;
        double part = 0.0;
        for (int64_t c = threadIdx.x; c < n_cols; c += blockDim.x)
            part += (double)xr[c];
        const double mu = n_cols ? block_sum(part, shared) / (double)n_cols : 0.0;
        part = 0.0;
        for (int64_t c = threadIdx.x; c < n_cols; c += blockDim.x) {
            const double dv = (double)xr[c] - mu;
            part = __dadd_rn(part, __dmul_rn(dv, dv));
        }
        const double var = n_cols ? block_sum(part, shared) / (double)n_cols : 0.0;
        const double inv = 1.0 / sqrt(var + (double)eps);
        for (int64_t c = threadIdx.x; c < n_cols; c += blockDim.x) {
            const double v = __dmul_rn(__dmul_rn((double)xr[c] - mu, inv), (double)scale[c]);
            yr[c] = (float)__dadd_rn(v, bias ? (double)bias[c] : 0.0);
        }
        if (threadIdx.x == 0 && mean)
            mean[r] = (float)mu;
        if (threadIdx.x == 0 && inv_std)
            inv_std[r] = (float)inv;
    }
}

extern "C" ptq_status ptq_k_layernorm_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t n_rows, int64_t n_cols,
                                           const float *x, const float *scale, const float *bias, float eps,
                                           float *y, float *mean, float *inv_std)
{
    if (n_rows <= 0)
        return PTQ_OK;
    const unsigned blocks = (unsigned)(n_rows < LN_MAX_BLOCKS ? n_rows : LN_MAX_BLOCKS);
    layernorm_kernel<<<blocks, PTQ_CUDA_BLOCK, 0, d->stream>>>(n_rows, n_cols, x, scale, bias, eps, y, mean,
                                                               inv_std);
    PTQ_CUDA_LAUNCHED(ctx, "layernorm_kernel");
    return PTQ_OK;
}
