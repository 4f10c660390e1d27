/* Pooling on the GPU, mirroring kernels/ref: GlobalAveragePool (one warp per
 * row, summed in double like the ref), MaxPool and AveragePool (one thread
 * per output element walking its window; 2-D windows with 32-bit indices,
 * 3x3 MaxPool with its taps unrolled); channels-last forms of the global
 * and 2-D pools for the executor's [N, H, W, C] tensors, each output with
 * the bits of its [N, C, H, W] form.
 * Covered by tests/cuda_parity_kernels.c. */
#include <limits.h>
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

/* global_avgpool_kernel on channels-last x [n, hw, c] -> y [n, c]: block
 * (c0 / 32, image) has thread (j, t) sum channel c0 + j over positions t,
 * t + 32, ... in double, then folds the 32 partial sums in the order of
 * global_avgpool_kernel's shuffles, so each mean has its bits. */
static __global__ void global_avgpool_nhwc_kernel(int64_t hw, int64_t c, const float *x, float *y)
{
    __shared__ double part[32][33];
    const int j = threadIdx.x, t = threadIdx.y;
    const int64_t ch = (int64_t)blockIdx.x * 32 + j, img = blockIdx.y;
    double sum = 0.0;
    if (ch < c)
        for (int64_t s = t; s < hw; s += 32)
            sum += (double)x[(img * hw + s) * c + ch];
    part[t][j] = sum;
    __syncthreads();
    for (int offset = 16; offset > 0; offset /= 2) {
        if (t < offset)
            part[t][j] += part[t + offset][j];
        __syncthreads();
    }
    if (t == 0 && ch < c)
        y[img * c + ch] = hw ? (float)(part[0][j] / (double)hw) : 0.0f;
}

extern "C" ptq_status ptq_k_global_avgpool_nhwc_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t n, int64_t hw, int64_t c,
                                                     const float *x, float *y)
{
    if (n <= 0 || c <= 0)
        return PTQ_OK;
    if (n > 65535 || (c + 31) / 32 > INT_MAX)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "global average pool: %lld images a launch, at most 65535",
                        (long long)n);
    global_avgpool_nhwc_kernel<<<dim3((unsigned)((c + 31) / 32), (unsigned)n), dim3(32, 32), 0, d->stream>>>(hw, c, x,
                                                                                                           y);
    PTQ_CUDA_LAUNCHED(ctx, "global_avgpool_nhwc_kernel");
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

/* A 2-D window (in[0] = out[0] = k[0] = 1, no pad on dim 0) in ints:
 * plane2d_fits (and ptq_k_pool_nhwc_cuda's size check) said every index
 * and product fits. */
struct win2d {
    int ih, iw, oh, ow, kh, kw, sh, sw, dh, dw, plh, plw, phh, phw, count_include_pad;
};

static win2d win2d_of(const ptq_pool_params *p)
{
    win2d w = {(int)p->in[1],     (int)p->in[2],     (int)p->out[1],    (int)p->out[2],    (int)p->k[1],
               (int)p->k[2],      (int)p->stride[1], (int)p->stride[2], (int)p->dil[1],    (int)p->dil[2],
               (int)p->pad_lo[1], (int)p->pad_lo[2], (int)p->pad_hi[1], (int)p->pad_hi[2], p->count_include_pad};
    return w;
}

/* A MaxPool or AveragePool accumulator over 1 (float) or 4 (float4) channels. */
static __device__ void acc_init(float *best, double *sum, int lanes)
{
    for (int l = 0; l < lanes; l++) {
        best[l] = -INFINITY;
        sum[l] = 0.0;
    }
}

template <bool MAX>
static __device__ void acc_take(float *best, double *sum, const float *v, int lanes)
{
    for (int l = 0; l < lanes; l++) {
        if (MAX) {
            if (v[l] > best[l] || isnan(v[l]))
                best[l] = v[l];
        } else {
            sum[l] += (double)v[l];
        }
    }
}

/* Output (o1, o2) of window w over 1 or 4 channels into out: the taps in
 * pool_kernel's order, each read by load(i1 * iw + i2, values). */
template <bool MAX, int LANES, typename Load>
static __device__ void pool2d_taps(const win2d &w, int o1, int o2, Load load, float *out)
{
    const int s1 = o1 * w.sh - w.plh, s2 = o2 * w.sw - w.plw;
    float best[LANES], v[LANES];
    double sum[LANES];
    acc_init(best, sum, LANES);
    int n_in = 0, n_padded = 0;
    for (int q1 = 0; q1 < w.kh; q1++) {
        const int i1 = s1 + q1 * w.dh;
        if (i1 < -w.plh || i1 >= w.ih + w.phh)
            continue;
        for (int q2 = 0; q2 < w.kw; q2++) {
            const int i2 = s2 + q2 * w.dw;
            if (i2 < -w.plw || i2 >= w.iw + w.phw)
                continue;
            n_padded++;
            if (i1 < 0 || i1 >= w.ih || i2 < 0 || i2 >= w.iw)
                continue;
            load(i1 * w.iw + i2, v);
            n_in++;
            acc_take<MAX>(best, sum, v, LANES);
        }
    }
    /* count_include_pad counts taps on the padding, not those past it (ceil_mode) */
    const int divisor = w.count_include_pad ? n_padded : n_in;
    for (int l = 0; l < LANES; l++)
        out[l] = MAX ? best[l] : divisor ? (float)(sum[l] / (double)divisor) : 0.0f;
}

/* pool_kernel for 2-D windows of sizes small enough for 32-bit indices
 * (plane2d_fits): the same taps in the same order, with one 32-bit
 * division an output instead of int64 ones. Block row y: planes (n*c) y,
 * y + gridDim.y, ... */
template <bool MAX>
static __global__ void pool2d_kernel(win2d w, int64_t planes, const float *x, float *y)
{
    const int out_sz = w.oh * w.ow;
    for (int64_t plane = blockIdx.y; plane < planes; plane += gridDim.y) {
        const float *xs = x + plane * ((int64_t)w.ih * w.iw);
        float *ys = y + plane * out_sz;
        for (int o = (int)(blockIdx.x * blockDim.x + threadIdx.x); o < out_sz; o += (int)(gridDim.x * blockDim.x)) {
            const int o1 = o / w.ow;
            pool2d_taps<MAX, 1>(w, o1, o - o1 * w.ow, [&](int at, float *v) { v[0] = xs[at]; }, &ys[o]);
        }
    }
}

/* pool2d_kernel's MaxPool for 3x3 windows: the nine taps loaded at once
 * (-Inf for one outside the input, which no comparison below takes), then
 * taken in pool_kernel's order. */
static __global__ void maxpool3x3_kernel(ptq_pool_params p, int64_t planes, const float *x, float *y)
{
    const int ih = (int)p.in[1], iw = (int)p.in[2], oh = (int)p.out[1], ow = (int)p.out[2];
    const int sh = (int)p.stride[1], sw = (int)p.stride[2], dh = (int)p.dil[1], dw = (int)p.dil[2];
    const int plh = (int)p.pad_lo[1], plw = (int)p.pad_lo[2];
    const int out_sz = oh * ow;
    for (int64_t plane = blockIdx.y; plane < planes; plane += gridDim.y) {
        const float *xs = x + plane * ((int64_t)ih * iw);
        float *ys = y + plane * out_sz;
        for (int o = (int)(blockIdx.x * blockDim.x + threadIdx.x); o < out_sz; o += (int)(gridDim.x * blockDim.x)) {
            const int o1 = o / ow, o2 = o - o1 * ow;
            const int s1 = o1 * sh - plh, s2 = o2 * sw - plw;
            float v[9];
#pragma unroll
            for (int q1 = 0; q1 < 3; q1++) {
                const int i1 = s1 + q1 * dh;
                const bool row = i1 >= 0 && i1 < ih;
#pragma unroll
                for (int q2 = 0; q2 < 3; q2++) {
                    const int i2 = s2 + q2 * dw;
                    v[3 * q1 + q2] = row && i2 >= 0 && i2 < iw ? __ldg(&xs[i1 * iw + i2]) : -INFINITY;
                }
            }
            float best = -INFINITY;
#pragma unroll
            for (int t = 0; t < 9; t++)
                if (v[t] > best || isnan(v[t]))
                    best = v[t];
            ys[o] = best;
        }
    }
}

/* p is a 2-D pool whose every index and partial sum pool2d_kernel makes
 * fits an int (each size at most 2^14, the planes' elements below 2^31). */
static int plane2d_fits(const ptq_pool_params *p)
{
    const int64_t lim = (int64_t)1 << 14;
    if (p->in[0] != 1 || p->out[0] != 1 || p->k[0] != 1 || p->pad_lo[0] != 0)
        return 0;
    for (int s = 1; s < 3; s++)
        if (p->in[s] > lim || p->out[s] > lim || p->k[s] > lim || p->stride[s] > lim || p->dil[s] > lim ||
            p->pad_lo[s] > lim || p->pad_hi[s] > lim)
            return 0;
    return p->in[1] * p->in[2] < INT_MAX && p->out[1] * p->out[2] < INT_MAX;
}

template <bool MAX>
static ptq_status launch(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_pool_params *p, const float *x, float *y)
{
    int64_t total = p->n * p->c * p->out[0] * p->out[1] * p->out[2];
    if (total <= 0)
        return PTQ_OK;
    if (plane2d_fits(p)) {
        const int64_t planes = p->n * p->c, out_sz = p->out[1] * p->out[2];
        const unsigned bx = ptq_cuda_blocks(out_sz);
        const unsigned by = planes < 65535 ? (unsigned)planes : 65535u;
        if (MAX && p->k[1] == 3 && p->k[2] == 3) {
            maxpool3x3_kernel<<<dim3(bx, by), PTQ_CUDA_BLOCK, 0, d->stream>>>(*p, planes, x, y);
            PTQ_CUDA_LAUNCHED(ctx, "maxpool3x3_kernel");
            return PTQ_OK;
        }
        pool2d_kernel<MAX><<<dim3(bx, by), PTQ_CUDA_BLOCK, 0, d->stream>>>(win2d_of(p), planes, x, y);
        PTQ_CUDA_LAUNCHED(ctx, MAX ? "pool2d_kernel<max>" : "pool2d_kernel<avg>");
        return PTQ_OK;
    }
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

/* pool2d_kernel on channels-last x [n, in1, in2, c] -> y [n, out1, out2, c],
 * LANES (1 or 4, c a multiple of it) channels a thread along c: each
 * channel's taps in the same order, so each output has pool2d_kernel's bits. */
template <bool MAX, int LANES>
static __global__ void pool2d_nhwc_kernel(win2d w, int n, int c, const float *x, float *y)
{
    const int cl = c / LANES, total = n * w.oh * w.ow * cl;
    for (int i = (int)(blockIdx.x * blockDim.x + threadIdx.x); i < total; i += (int)(gridDim.x * blockDim.x)) {
        const int ch = i % cl, pos = i / cl;
        const int o2 = pos % w.ow, o1 = (pos / w.ow) % w.oh, img = pos / (w.ow * w.oh);
        const float *xs = x + ((int64_t)img * w.ih * w.iw * c + (int64_t)ch * LANES);
        float out[LANES];
        if (LANES == 4)
            pool2d_taps<MAX, LANES>(w, o1, o2, [&](int at, float *v) {
                const float4 q = __ldg((const float4 *)(xs + (int64_t)at * c));
                v[0] = q.x;
                v[1] = q.y;
                v[2] = q.z;
                v[3] = q.w;
            }, out);
        else
            pool2d_taps<MAX, LANES>(w, o1, o2, [&](int at, float *v) { v[0] = __ldg(xs + (int64_t)at * c); }, out);
        for (int l = 0; l < LANES; l++)
            y[(int64_t)i * LANES + l] = out[l];
    }
}

template <bool MAX, int LANES>
static ptq_status launch_nhwc(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_pool_params *p, const float *x, float *y)
{
    const int64_t threads = p->n * p->c * p->out[1] * p->out[2] / LANES;
    pool2d_nhwc_kernel<MAX, LANES><<<ptq_cuda_blocks(threads), PTQ_CUDA_BLOCK, 0, d->stream>>>(win2d_of(p), (int)p->n,
                                                                                                  (int)p->c, x, y);
    PTQ_CUDA_LAUNCHED(ctx, "pool2d_nhwc_kernel");
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_pool_nhwc_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int max, const ptq_pool_params *p,
                                           const float *x, float *y)
{
    const int64_t total = p->n * p->c * p->out[1] * p->out[2];
    if (total <= 0)
        return PTQ_OK;
    if (!plane2d_fits(p) || p->pad_hi[0] != 0 || p->n * p->c * p->in[1] * p->in[2] >= INT_MAX / 2 ||
        total >= INT_MAX / 2)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED,
                        "channels-last pooling takes 2-D windows of tensors under 2^30 elements; PTQ_NHWC=0 keeps "
                        "every tensor [N, C, H, W]");
    const int vec4 = p->c % 4 == 0 && ((uintptr_t)x & 15) == 0 && ((uintptr_t)y & 15) == 0;
    if (max)
        return vec4 ? launch_nhwc<true, 4>(ctx, d, p, x, y) : launch_nhwc<true, 1>(ctx, d, p, x, y);
    return vec4 ? launch_nhwc<false, 4>(ctx, d, p, x, y) : launch_nhwc<false, 1>(ctx, d, p, x, y);
}
