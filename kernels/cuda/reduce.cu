/* ReduceMean over a block of adjacent axes on the GPU, x viewed as [outer,
 * len, inner], summed in double like ptq_k_reduce_mean_ref: rows (inner 1,
 * a transformer's last axis) one warp each through the global average pool's
 * kernel, so within 1 ulp of the ref; columns (inner > 1, the channels of a
 * convnext LayerNorm) one thread each, adding in the ref's order, so bit for
 * bit the ref. Covered by tests/cuda_parity_transformer_ops.c. */
#include "kernels/cuda/cuda_common.cuh"

/* x: [outer, len, inner] -> y: [outer, inner]; thread q adds column q's len
 * values in order (neighbouring threads read neighbouring floats); len 0
 * gives 0/0, NaN, as in the ref */
static __global__ void reduce_mean_cols_kernel(int64_t outer, int64_t len, int64_t inner, const float *x, float *y)
{
    const int64_t n_out = outer * inner;
    for (int64_t q = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; q < n_out; q += (int64_t)gridDim.x * blockDim.x) {
        const float *xc = x + (q / inner) * len * inner + q % inner;
        double sum = 0.0;
        for (int64_t r = 0; r < len; r++)
            sum += (double)xc[r * inner];
        y[q] = (float)(sum / (double)len);
    }
}

extern "C" ptq_status ptq_k_reduce_mean_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t outer, int64_t len,
                                             int64_t inner, const float *x, float *y)
{
    if (outer <= 0 || inner <= 0)
        return PTQ_OK;
    if (inner == 1 && len > 0)
        return ptq_k_global_avgpool_cuda(ctx, d, outer, len, x, y);
    reduce_mean_cols_kernel<<<ptq_cuda_blocks(outer * inner), PTQ_CUDA_BLOCK, 0, d->stream>>>(outer, len, inner, x,
                                                                                              y);
    PTQ_CUDA_LAUNCHED(ctx, "reduce_mean_cols_kernel");
    return PTQ_OK;
}
