/* Transpose on the GPU for 1, 2, 4 and 8-byte elements, mirroring
 * ptq_k_transpose_ref: one thread per output element gathers its input
 * element through the permuted strides. Covered by tests/cuda_parity_kernels.c. */
#include "kernels/cuda/cuda_common.cuh"

/* Output dims and, per output dim, the input stride it walks. */
typedef struct perm_layout {
    int ndim;
    int64_t out_dims[8];
    int64_t in_stride[8];
} perm_layout;

/* x: [in_dims] row-major; y: [out_dims] row-major, T-sized elements */
template <typename T>
static __global__ void transpose_kernel(perm_layout l, int64_t total, const T *x, T *y)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t rest = i, src = 0;
        for (int dim = l.ndim - 1; dim >= 0; dim--) {
            src += (rest % l.out_dims[dim]) * l.in_stride[dim];
            rest /= l.out_dims[dim];
        }
        y[i] = x[src];
    }
}

template <typename T>
static ptq_status launch(ptq_ctx *ctx, ptq_cuda_dev *d, const perm_layout *l, int64_t total, const void *x, void *y)
{
    transpose_kernel<T><<<ptq_cuda_blocks(total), PTQ_CUDA_BLOCK, 0, d->stream>>>(*l, total, (const T *)x, (T *)y);
    PTQ_CUDA_LAUNCHED(ctx, "transpose_kernel");
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_transpose_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, size_t elem_bytes, int ndim,
                                           const int64_t *in_dims, const int64_t *perm, const void *x, void *y)
{
    if (ndim < 0 || ndim > 8)
        return ptq_fail(ctx, PTQ_ERR_SHAPE, "transpose: %d dims; at most 8", ndim);
    perm_layout l;
    int64_t in_stride[8], total = 1;
    for (int dim = ndim - 1; dim >= 0; dim--) {
        in_stride[dim] = total;
        total *= in_dims[dim];
    }
    l.ndim = ndim;
    for (int dim = 0; dim < ndim; dim++) {
        if (perm[dim] < 0 || perm[dim] >= ndim)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "transpose: perm[%d] = %lld is out of range", dim,
                            (long long)perm[dim]);
        l.out_dims[dim] = in_dims[perm[dim]];
        l.in_stride[dim] = in_stride[perm[dim]];
    }
    if (total == 0)
        return PTQ_OK;
    switch (elem_bytes) {
    case 1: return launch<uint8_t>(ctx, d, &l, total, x, y);
    case 2: return launch<uint16_t>(ctx, d, &l, total, x, y);
    case 4: return launch<uint32_t>(ctx, d, &l, total, x, y);
    case 8: return launch<uint64_t>(ctx, d, &l, total, x, y);
    }
    return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "transpose: %zu-byte elements; the GPU takes 1, 2, 4 or 8", elem_bytes);
}
