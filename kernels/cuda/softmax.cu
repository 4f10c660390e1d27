/* Softmax on the GPU, mirroring ptq_k_softmax_ref: one thread per (outer,
 * inner) line takes its max, sums exp(x - max) in double, then divides.
 * Contiguous lines (inner 1, the last axis: attention's rows) of up to
 * SOFTMAX_ROW_MAX go one warp each: coalesced reads, the max and the exps
 * across the lanes, the exps kept in shared memory and summed by lane 0 in
 * the reference's order, so the bits are the per-thread kernel's.
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

#define SOFTMAX_ROW_MAX 1024
#define SOFTMAX_WARPS 8

/* x, y: [rows, len], len <= SOFTMAX_ROW_MAX; blockDim.x = 32 * SOFTMAX_WARPS */
static __global__ void softmax_rows_kernel(int64_t rows, int len, const float *x, float *y)
{
    __shared__ float ex[SOFTMAX_WARPS][SOFTMAX_ROW_MAX];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float *e = ex[warp];
    for (int64_t row = (int64_t)blockIdx.x * SOFTMAX_WARPS + warp; row < rows;
         row += (int64_t)gridDim.x * SOFTMAX_WARPS) {
        const float *xr = x + row * len;
        float *yr = y + row * len;
        float top = -INFINITY;
        for (int j = lane; j < len; j += 32)
            top = fmaxf(top, xr[j]);
        for (int o = 16; o > 0; o >>= 1)
            top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, o));
        for (int j = lane; j < len; j += 32)
            e[j] = expf(xr[j] - top);
        __syncwarp();
        double sum = 0.0;
        if (lane == 0)
            for (int j = 0; j < len; j++)
                sum += (double)e[j];
        sum = __shfl_sync(0xffffffffu, sum, 0);
        for (int j = lane; j < len; j += 32)
            yr[j] = (float)((double)e[j] / sum);
        __syncwarp();
    }
}

extern "C" ptq_status ptq_k_softmax_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t outer, int64_t len, int64_t inner,
                                         const float *x, float *y)
{
    int64_t lines = outer * inner;
    if (lines <= 0 || len <= 0)
        return PTQ_OK;
    if (inner == 1 && len <= SOFTMAX_ROW_MAX) {
        const int64_t blocks = (outer + SOFTMAX_WARPS - 1) / SOFTMAX_WARPS;
        softmax_rows_kernel<<<(unsigned)(blocks < (1 << 20) ? blocks : (1 << 20)), 32 * SOFTMAX_WARPS, 0,
                              d->stream>>>(outer, (int)len, x, y);
        PTQ_CUDA_LAUNCHED(ctx, "softmax_rows_kernel");
        return PTQ_OK;
    }
    softmax_kernel<<<ptq_cuda_blocks(lines), PTQ_CUDA_BLOCK, 0, d->stream>>>(outer, len, inner, x, y);
    PTQ_CUDA_LAUNCHED(ctx, "softmax_kernel");
    return PTQ_OK;
}
