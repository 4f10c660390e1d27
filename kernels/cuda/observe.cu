/* Observer passes on the GPU, mirroring kernels/ref/observe.c: per-block
 * min/max and special-value counts combined on the host with
 * ptq_observe_stats_combine (so the result is the ref's, whatever the
 * grid), and the |x| histogram added into a device histogram through
 * per-block shared-memory counts. Binning is the ref's exact double
 * product. Covered by tests/cuda_parity_observe.c. */
#include <math.h>

#include "kernels/cuda/cuda_common.cuh"

#define OBS_MAX_BLOCKS 1024
#define OBS_SHARED_BINS 8192 /* histograms up to this size count in shared memory first */

/* a orders before b; -0 before +0 (the ref's rule) */
static __device__ bool precedes(float a, float b)
{
    return a < b || (a == b && signbit(a) && !signbit(b));
}

/* One partial per block: [gridDim.x] into part. */
static __global__ void stats_kernel(const float *x, int64_t n, ptq_observe_stats *part)
{
    __shared__ unsigned long long zero[PTQ_CUDA_BLOCK], nan_[PTQ_CUDA_BLOCK], inf_[PTQ_CUDA_BLOCK];
    __shared__ float lo[PTQ_CUDA_BLOCK], hi[PTQ_CUDA_BLOCK];
    unsigned long long z = 0, nn = 0, ni = 0;
    float mn = INFINITY, mx = -INFINITY;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float v = x[i];
        if (isnan(v)) {
            nn++;
        } else if (isinf(v)) {
            ni++;
        } else {
            z += v == 0.0f;
            if (precedes(v, mn))
                mn = v;
            if (precedes(mx, v))
                mx = v;
        }
    }
    const int t = threadIdx.x;
    zero[t] = z;
    nan_[t] = nn;
    inf_[t] = ni;
    lo[t] = mn;
    hi[t] = mx;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (t < s) {
            zero[t] += zero[t + s];
            nan_[t] += nan_[t + s];
            inf_[t] += inf_[t + s];
            if (precedes(lo[t + s], lo[t]))
                lo[t] = lo[t + s];
            if (precedes(hi[t], hi[t + s]))
                hi[t] = hi[t + s];
        }
        __syncthreads();
    }
    if (t == 0) {
        part[blockIdx.x].count = 0;
        part[blockIdx.x].n_zero = (int64_t)zero[0];
        part[blockIdx.x].n_nan = (int64_t)nan_[0];
        part[blockIdx.x].n_inf = (int64_t)inf_[0];
        part[blockIdx.x].min = lo[0];
        part[blockIdx.x].max = hi[0];
    }
}

/* hist: [n_bins] device counts += the bins of x's finite nonzero |x|. With
 * shared counts each block sees at most 2^31 elements (see the launch). */
static __global__ void hist_kernel(const float *x, int64_t n, double scale, int64_t n_bins, int use_shared,
                                   unsigned long long *hist)
{
    extern __shared__ unsigned int local[];
    if (use_shared) {
        for (int64_t b = threadIdx.x; b < n_bins; b += blockDim.x)
            local[b] = 0;
        __syncthreads();
    }
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float v = x[i];
        if (!isfinite(v) || v == 0.0f)
            continue;
        const int64_t bin = (int64_t)(fabs((double)v) * scale);
        if (use_shared)
            atomicAdd(&local[bin], 1u);
        else
            atomicAdd(&hist[bin], 1ull);
    }
    if (use_shared) {
        __syncthreads();
        for (int64_t b = threadIdx.x; b < n_bins; b += blockDim.x)
            if (local[b])
                atomicAdd(&hist[b], (unsigned long long)local[b]);
    }
}

static unsigned obs_blocks(int64_t n)
{
    unsigned b = ptq_cuda_blocks(n);
    return b > OBS_MAX_BLOCKS ? OBS_MAX_BLOCKS : b;
}

extern "C" ptq_status ptq_k_observe_stats_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n,
                                               ptq_observe_stats *s)
{
    ptq_observe_stats_clear(s);
    s->count = n;
    if (n <= 0)
        return PTQ_OK;
    const unsigned blocks = obs_blocks(n);
    void *scratch = NULL;
    ptq_status st = ptq_cuda_scratch(ctx, d, blocks * sizeof(ptq_observe_stats), &scratch);
    if (st != PTQ_OK)
        return st;
    stats_kernel<<<blocks, PTQ_CUDA_BLOCK, 0, d->stream>>>(x, n, (ptq_observe_stats *)scratch);
    PTQ_CUDA_LAUNCHED(ctx, "stats_kernel");
    ptq_observe_stats part[OBS_MAX_BLOCKS];
    st = ptq_cuda_download(ctx, d, part, scratch, blocks * sizeof(ptq_observe_stats));
    if (st != PTQ_OK)
        return st;
    for (unsigned b = 0; b < blocks; b++)
        ptq_observe_stats_combine(s, &part[b]);
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_observe_hist_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const float *x, int64_t n, double scale,
                                              int64_t n_bins, unsigned long long *hist)
{
    if (n <= 0)
        return PTQ_OK;
    unsigned blocks = obs_blocks(n);
    const int use_shared = n_bins <= OBS_SHARED_BINS;
    /* 32-bit shared counts: no block may see 2^31 elements */
    while (use_shared && (n + blocks - 1) / blocks >= ((int64_t)1 << 31) && blocks < 65535u)
        blocks *= 2;
    const size_t shared = use_shared ? (size_t)n_bins * sizeof(unsigned int) : 0;
    hist_kernel<<<blocks, PTQ_CUDA_BLOCK, shared, d->stream>>>(x, n, scale, n_bins, use_shared, hist);
    PTQ_CUDA_LAUNCHED(ctx, "hist_kernel");
    return PTQ_OK;
}
