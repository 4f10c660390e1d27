/* Probes for the tuners that pick a faster kernel only where it gives the
 * reference kernel's bits (cudnn.cu's tune(), gemm.cu's lt_tune()): random
 * inputs with groups near the bottom of the float range, and a count of
 * the words two results differ in. Included by those .cu files only. */
#ifndef PTQ_CUDA_PROBE_CUH
#define PTQ_CUDA_PROBE_CUH

#include <stdint.h>

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

#endif
