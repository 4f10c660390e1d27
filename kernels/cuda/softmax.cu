/* Softmax on the GPU, mirroring ptq_k_softmax_ref: one thread per (outer,
 * inner) line takes its max, sums exp(x - max) in double, then divides.
 * Covered by tests/cuda_parity_kernels.c. */
#include "kernels/cuda/cuda_common.cuh"

/* x, y: [outer, len, inner]; softmax along len */
static __global__ void softmax_kernel(int64_t outer, int64_t len, int64_t inner, const float *x, float *y)
{
    for (int64_t line = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; line < outer * inner;
         line += (int64_t)gridDim.x * blockDim.x) {
        int64_t base = (line / inner) * len * inner + line % inner;
        float top = -INFINITY;
        for (int64_t j = 0; j < len; j++)
            top = fmaxf(top, x[base + j * inner]);
        double sum = 0.0;
        for (int64_t j = 0; j < len; j++)
            sum += (double)expf(x[base + j * inner] - top);
        for (int64_t j = 0; j < len; j++)
            y[base + j * inner] = (float)((double)expf(x[base + j * inner] - top) / sum);
    }
}

extern "C" ptq_status ptq_k_softmax_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t outer, int64_t len, int64_t inner,
                                         const float *x, float *y)
{
    int64_t lines = outer * inner;
    if (lines <= 0 || len <= 0)
        return PTQ_OK;
    softmax_kernel<<<ptq_cuda_blocks(lines), PTQ_CUDA_BLOCK, 0, d->stream>>>(outer, len, inner, x, y);
    PTQ_CUDA_LAUNCHED(ctx, "softmax_kernel");
    return PTQ_OK;
}
