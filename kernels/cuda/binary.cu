/* Broadcasting Add/Sub/Mul/Div on the GPU, mirroring ptq_k_binary_ref, and
 * the one-input broadcast copy (Gemm's C into Y); layouts are simplified on
 * the host first (size-1 dims dropped, contiguous dims merged), so most calls
 * index 1-3 dims. Covered by tests/cuda_parity_kernels.c. */
#include <limits.h>

#include "kernels/cuda/cuda_common.cuh"

template <ptq_binop OP>
static __device__ float apply(float a, float b)
{
    switch (OP) {
    case PTQ_BIN_ADD: return a + b;
    case PTQ_BIN_SUB: return a - b;
    case PTQ_BIN_MUL: return a * b;
    case PTQ_BIN_DIV: return a / b;
    }
    return 0.0f;
}

/* y: [bc.out_dims] row-major; a, b read through bc's strides */
template <ptq_binop OP, typename I>
static __global__ void binary_kernel(ptq_bcast bc, I total, const float *a, const float *b, float *y)
{
    for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < total; i += (I)gridDim.x * (I)blockDim.x) {
        I rest = i, ia = 0, ib = 0;
        for (int dim = bc.ndim - 1; dim >= 0; dim--) {
            I size = (I)bc.out_dims[dim];
            I at = rest % size;
            rest /= size;
            ia += at * (I)bc.a_stride[dim];
            ib += at * (I)bc.b_stride[dim];
        }
        y[i] = apply<OP>(a[ia], b[ib]);
    }
}

/* y: [total] with a and b both laid out like y: no index arithmetic */
template <ptq_binop OP>
static __global__ void binary_flat_kernel(int64_t total, const float *a, const float *b, float *y)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = apply<OP>(a[i], b[i]);
}

/* y: [bc.out_dims] row-major = a read through bc.a_stride */
static __global__ void expand_kernel(ptq_bcast bc, int64_t total, const float *a, float *y)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t rest = i, ia = 0;
        for (int dim = bc.ndim - 1; dim >= 0; dim--) {
            ia += (rest % bc.out_dims[dim]) * bc.a_stride[dim];
            rest /= bc.out_dims[dim];
        }
        y[i] = a[ia];
    }
}

/* Drops size-1 dims and merges dim d into d+1 when a, b and y all step over
 * them as one (stride[d] == stride[d+1] * size[d+1] for each). */
static ptq_bcast simplify(const ptq_bcast *in)
{
    ptq_bcast s;
    s.ndim = 0;
    for (int dim = 0; dim < in->ndim; dim++) {
        if (in->out_dims[dim] == 1)
            continue;
        s.out_dims[s.ndim] = in->out_dims[dim];
        s.a_stride[s.ndim] = in->a_stride[dim];
        s.b_stride[s.ndim] = in->b_stride[dim];
        s.ndim++;
    }
    int w = 0;
    for (int dim = 1; dim < s.ndim; dim++) {
        int64_t size = s.out_dims[dim];
        if (s.a_stride[w] == s.a_stride[dim] * size && s.b_stride[w] == s.b_stride[dim] * size) {
            s.out_dims[w] *= size;
            s.a_stride[w] = s.a_stride[dim];
            s.b_stride[w] = s.b_stride[dim];
        } else {
            w++;
            s.out_dims[w] = size;
            s.a_stride[w] = s.a_stride[dim];
            s.b_stride[w] = s.b_stride[dim];
        }
    }
    s.ndim = s.ndim ? w + 1 : 0;
    return s;
}

template <ptq_binop OP>
static ptq_status launch(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_bcast *bc, const float *a, const float *b,
                         float *y)
{
    ptq_bcast s = simplify(bc);
    int64_t total = 1;
    for (int dim = 0; dim < bc->ndim; dim++)
        total *= bc->out_dims[dim];
    if (total == 0)
        return PTQ_OK;
    unsigned blocks = ptq_cuda_blocks(total);
    if (s.ndim == 1 && s.a_stride[0] == 1 && s.b_stride[0] == 1) {
        binary_flat_kernel<OP><<<blocks, PTQ_CUDA_BLOCK, 0, d->stream>>>(total, a, b, y);
        PTQ_CUDA_LAUNCHED(ctx, "binary_flat_kernel");
        return PTQ_OK;
    }
    /* 32-bit index math where every offset and i + the grid stride fit */
    int64_t a_span = 0, b_span = 0;
    for (int dim = 0; dim < s.ndim; dim++) {
        a_span += (s.out_dims[dim] - 1) * s.a_stride[dim];
        b_span += (s.out_dims[dim] - 1) * s.b_stride[dim];
    }
    int64_t limit = INT_MAX - (int64_t)blocks * PTQ_CUDA_BLOCK;
    if (total <= limit && a_span <= INT_MAX && b_span <= INT_MAX)
        binary_kernel<OP, int><<<blocks, PTQ_CUDA_BLOCK, 0, d->stream>>>(s, (int)total, a, b, y);
    else
        binary_kernel<OP, int64_t><<<blocks, PTQ_CUDA_BLOCK, 0, d->stream>>>(s, total, a, b, y);
    PTQ_CUDA_LAUNCHED(ctx, "binary_kernel");
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_binary_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, ptq_binop op, const ptq_bcast *bc,
                                        const float *a, const float *b, float *y)
{
    if (bc->ndim < 0 || bc->ndim > 8)
        return ptq_fail(ctx, PTQ_ERR_SHAPE, "binary: %d dims; at most 8", bc->ndim);
    switch (op) {
    case PTQ_BIN_ADD: return launch<PTQ_BIN_ADD>(ctx, d, bc, a, b, y);
    case PTQ_BIN_SUB: return launch<PTQ_BIN_SUB>(ctx, d, bc, a, b, y);
    case PTQ_BIN_MUL: return launch<PTQ_BIN_MUL>(ctx, d, bc, a, b, y);
    case PTQ_BIN_DIV: return launch<PTQ_BIN_DIV>(ctx, d, bc, a, b, y);
    }
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "binary: unknown op %d", (int)op);
}

extern "C" ptq_status ptq_k_expand_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_bcast *bc, const float *a, float *y)
{
    if (bc->ndim < 0 || bc->ndim > 8)
        return ptq_fail(ctx, PTQ_ERR_SHAPE, "expand: %d dims; at most 8", bc->ndim);
    ptq_bcast s = simplify(bc);
    int64_t total = 1;
    for (int dim = 0; dim < bc->ndim; dim++)
        total *= bc->out_dims[dim];
    if (total == 0)
        return PTQ_OK;
    expand_kernel<<<ptq_cuda_blocks(total), PTQ_CUDA_BLOCK, 0, d->stream>>>(s, total, a, y);
    PTQ_CUDA_LAUNCHED(ctx, "expand_kernel");
    return PTQ_OK;
}
