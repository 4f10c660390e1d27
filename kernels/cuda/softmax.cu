/* Softmax on the GPU, mirroring ptq_k_softmax_ref: one thread per (outer,
 * inner) line takes its max, sums exp(x - max) in double, then divides.
 * Contiguous lines (inner 1, the last axis: attention's rows) go a warp
 * each: coalesced reads, the max and the double sum across the lanes (a
 * butterfly, so every lane holds the same sum whatever the row's place in
 * the batch), the exps computed again for the quotients.
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

#define SOFTMAX_ROW_WARPS 8

/* x, y: [rows, len]; softmax along len, a warp a row; blockDim.x = 32 * SOFTMAX_ROW_WARPS */
static __global__ void softmax_rows_kernel(int64_t rows, int64_t len, const float *x, float *y)
{
    const int lane = threadIdx.x % 32;
    const int64_t n_warps = (int64_t)gridDim.x * SOFTMAX_ROW_WARPS;
    for (int64_t row = (int64_t)blockIdx.x * SOFTMAX_ROW_WARPS + threadIdx.x / 32; row < rows; row += n_warps) {
        const float *xr = x + row * len;
        float *yr = y + row * len;
        float top = -INFINITY;
        for (int64_t j = lane; j < len; j += 32)
            top = fmaxf(top, xr[j]);
        for (int o = 16; o > 0; o >>= 1)
            top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, o));
        double sum = 0.0;
        for (int64_t j = lane; j < len; j += 32)
            sum += (double)expf(xr[j] - top);
        for (int o = 16; o > 0; o >>= 1)
            sum += __shfl_xor_sync(0xffffffffu, sum, o);
        for (int64_t j = lane; j < len; j += 32)
            yr[j] = (float)((double)expf(xr[j] - top) / sum);
    }
}

extern "C" ptq_status ptq_k_softmax_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t outer, int64_t len, int64_t inner,
                                         const float *x, float *y)
{
    int64_t lines = outer * inner;
    if (lines <= 0 || len <= 0)
        return PTQ_OK;
    if (inner == 1 && len >= 32) {
        const int64_t blocks = (outer + SOFTMAX_ROW_WARPS - 1) / SOFTMAX_ROW_WARPS;
        softmax_rows_kernel<<<(unsigned)(blocks < (1 << 20) ? blocks : (1 << 20)), 32 * SOFTMAX_ROW_WARPS, 0,
                              d->stream>>>(outer, len, x, y);
        PTQ_CUDA_LAUNCHED(ctx, "softmax_rows_kernel");
        return PTQ_OK;
    }
    softmax_kernel<<<ptq_cuda_blocks(lines), PTQ_CUDA_BLOCK, 0, d->stream>>>(outer, len, inner, x, y);
    PTQ_CUDA_LAUNCHED(ctx, "softmax_kernel");
    return PTQ_OK;
}
