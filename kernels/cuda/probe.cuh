/* Probes for the tuners that pick a faster kernel only where it gives the
 * reference kernel's bits (cudnn.cu's tune(), gemm.cu's lt_tune()): random
 * inputs with groups near the bottom of the float range, the layout of the
 * probe's buffers in one allocation, and the comparison of two results.
 * Included by those .cu files only. */
#ifndef PTQ_CUDA_PROBE_CUH
#define PTQ_CUDA_PROBE_CUH

#include <stdint.h>

#include "kernels/cuda/cuda_common.cuh"

/* p[n] uniform in [-scale, scale), but every 8th group of group_len
 * values (an image of x, a channel of b) scaled by odd_scale: inputs near
 * the bottom of the float range (products and sums in subnormals, where a
 * kernel that flushes them shows) and zero biases that hide nothing. */
static __global__ void probe_fill_kernel(float *p, int64_t n, uint32_t seed, float scale, int64_t group_len,
                                         float odd_scale)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 0x9E3779B1u ^ (uint32_t)(i >> 32) * 0x85EBCA77u ^ seed;
        h ^= h >> 16;
        h *= 0x7FEB352Du;
        h ^= h >> 15;
        h *= 0x846CA68Bu;
        h ^= h >> 16;
        const float s = (i / group_len) % 8 == 7 ? scale * odd_scale : scale;
        p[i] = s * ((float)(h >> 8) * (1.0f / 8388608.0f) - 1.0f);
    }
}

/* *out += the number of i < n where a[i] != b[i] (*out zeroed by the caller) */
static __global__ void count_diff_kernel(const uint32_t *a, const uint32_t *b, int64_t n, unsigned long long *out)
{
    unsigned long long c = 0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        c += a[i] != b[i];
    if (c)
        atomicAdd(out, c);
}

/* The offsets at[i] of n probe buffers of room[i] floats each, laid one
 * after another from 0 at 256-byte boundaries; returns the bytes they take. */
static size_t carve(const int64_t *room, int n, size_t *at)
{
    size_t bytes = 0;
    for (int i = 0; i < n; i++) {
        at[i] = bytes;
        bytes += ((size_t)room[i] * sizeof(float) + 255) / 256 * 256;
    }
    return bytes;
}

/* 1 when y has y_ref's bits over n floats, 0 when not, -1 when the GPU failed (waits for d's stream; diff: one
 * word of device memory) */
static int probe_same_bits(ptq_cuda_dev *d, const float *y_ref, const float *y, int64_t n, unsigned long long *diff)
{
    unsigned long long host = 1;
    cudaError_t e = cudaMemsetAsync(diff, 0, sizeof *diff, d->stream);
    if (e == cudaSuccess) {
        count_diff_kernel<<<ptq_cuda_blocks(n), PTQ_CUDA_BLOCK, 0, d->stream>>>((const uint32_t *)y_ref,
                                                                                (const uint32_t *)y, n, diff);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(&host, diff, sizeof host, cudaMemcpyDeviceToHost, d->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(d->stream);
    return e != cudaSuccess ? -1 : host == 0;
}

#endif
