/* Pooling on the GPU, mirroring kernels/ref: GlobalAveragePool (one warp per
 * row, summed in double like the ref), MaxPool and AveragePool (one thread
 * per output element walking its window). Covered by tests/cuda_parity_kernels.c. */
#include <math.h>

#include "kernels/cuda/cuda_common.cuh"

#define GAP_WARPS 8 /* rows per block of the global average pool */

/* x: [n_rows, n_cols] -> y: [n_rows]; lane j sums columns j, j+32, ... in
 * double; an empty row gives 0 like the ref */
static __global__ void global_avgpool_kernel(int64_t n_rows, int64_t n_cols, const float *x, float *y)
{
    const int lane = threadIdx.x % 32;
    for (int64_t row = (int64_t)blockIdx.x * GAP_WARPS + threadIdx.x / 32; row < n_rows;
         row += (int64_t)gridDim.x * GAP_WARPS) {
        const float *xr = x + row * n_cols;
        double sum = 0.0;
        for (int64_t col = lane; col < n_cols; col += 32)
            sum += (double)xr[col];
        for (int offset = 16; offset > 0; offset /= 2)
            sum += __shfl_down_sync(0xffffffffu, sum, offset);
        if (lane == 0)
            y[row] = n_cols ? (float)(sum / (double)n_cols) : 0.0f;
    }
}

extern "C" ptq_status ptq_k_global_avgpool_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t n_rows, int64_t n_cols,
                                                const float *x, float *y)
{
    if (n_rows <= 0)
        return PTQ_OK;
    int64_t blocks = (n_rows + GAP_WARPS - 1) / GAP_WARPS;
    if (blocks > 65536)
        blocks = 65536;
    global_avgpool_kernel<<<(unsigned)blocks, GAP_WARPS * 32, 0, d->stream>>>(n_rows, n_cols, x, y);
    PTQ_CUDA_LAUNCHED(ctx, "global_avgpool_kernel");
    return PTQ_OK;
}

/* x: [n, c, in0, in1, in2] -> y: [n, c, out0, out1, out2]; MAX picks the
 * largest in-bounds tap, otherwise the mean of the taps (see divisor). */
template <bool MAX>
static __global__ void pool_kernel(ptq_pool_params p, const float *x, float *y)
{
    const int64_t out_sz = p.out[0] * p.out[1] * p.out[2];
    const int64_t in_sz = p.in[0] * p.in[1] * p.in[2];
    const int64_t total = p.n * p.c * out_sz;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t o = i % out_sz;
        const float *xs = x + (i / out_sz) * in_sz;
        int64_t o2 = o % p.out[2], o1 = (o / p.out[2]) % p.out[1], o0 = o / (p.out[2] * p.out[1]);
        int64_t s0 = o0 * p.stride[0] - p.pad_lo[0], s1 = o1 * p.stride[1] - p.pad_lo[1],
                s2 = o2 * p.stride[2] - p.pad_lo[2];
        float best = -INFINITY;
        double sum = 0.0;
        int64_t n_in = 0, n_padded = 0;
        for (int64_t q0 = 0; q0 < p.k[0]; q0++) {
            int64_t i0 = s0 + q0 * p.dil[0];
            if (i0 < -p.pad_lo[0] || i0 >= p.in[0] + p.pad_hi[0])
                continue;
            for (int64_t q1 = 0; q1 < p.k[1]; q1++) {
                int64_t i1 = s1 + q1 * p.dil[1];
                if (i1 < -p.pad_lo[1] || i1 >= p.in[1] + p.pad_hi[1])
                    continue;
                for (int64_t q2 = 0; q2 < p.k[2]; q2++) {
                    int64_t i2 = s2 + q2 * p.dil[2];
                    if (i2 < -p.pad_lo[2] || i2 >= p.in[2] + p.pad_hi[2])
                        continue;
                    n_padded++;
                    if (i0 < 0 || i0 >= p.in[0] || i1 < 0 || i1 >= p.in[1] || i2 < 0 || i2 >= p.in[2])
                        continue;
                    float v = xs[(i0 * p.in[1] + i1) * p.in[2] + i2];
                    n_in++;
                    if (MAX) {
                        if (v > best || isnan(v))
                            best = v;
                    } else {
                        sum += (double)v;
                    }
                }
            }
        }
        if (MAX) {
            y[i] = best;
        } else {
            /* count_include_pad counts taps on the padding, not those past it (ceil_mode) */
            int64_t divisor = p.count_include_pad ? n_padded : n_in;
            y[i] = divisor ? (float)(sum / (double)divisor) : 0.0f;
        }
    }
}

template <bool MAX>
static ptq_status launch(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_pool_params *p, const float *x, float *y)
{
    int64_t total = p->n * p->c * p->out[0] * p->out[1] * p->out[2];
    if (total <= 0)
        return PTQ_OK;
    pool_kernel<MAX><<<ptq_cuda_blocks(total), PTQ_CUDA_BLOCK, 0, d->stream>>>(*p, x, y);
    PTQ_CUDA_LAUNCHED(ctx, MAX ? "pool_kernel<max>" : "pool_kernel<avg>");
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_maxpool_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_pool_params *p, const float *x,
                                         float *y)
{
    return launch<true>(ctx, d, p, x, y);
}

extern "C" ptq_status ptq_k_avgpool_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_pool_params *p, const float *x,
                                         float *y)
{
    return launch<false>(ctx, d, p, x, y);
}
