/* Broadcasting Add/Sub/Mul/Div and Pow on the GPU, mirroring ptq_k_binary_ref
 * and ptq_k_pow_ref, Where's select (ptq_k_where_ref) and the one-input
 * broadcast copy (Gemm's C into Y, Expand); layouts are simplified on the
 * host first (size-1 dims dropped, contiguous dims merged), so most calls
 * index 1-3 dims. Covered by tests/cuda_parity_kernels.c and
 * tests/cuda_parity_transformer_ops.c. */
#include <limits.h>

#include "kernels/cuda/cuda_common.cuh"

/* Pow is no ptq_binop (the CPU runs it through ptq_k_pow_ref): this file's code for it */
enum { BIN_POW = PTQ_BIN_DIV + 1 };

/* powf for Pow, as the ref calls it, with no special case for any exponent:
 * CUDA's is within 4 ulp of the exact result (no fast-math), glibc's within 1 */
template <int OP>
static __device__ float apply(float a, float b)
{
    switch (OP) {
    case PTQ_BIN_ADD: return a + b;
    case PTQ_BIN_SUB: return a - b;
    case PTQ_BIN_MUL: return a * b;
    case PTQ_BIN_DIV: return a / b;
    case BIN_POW: return powf(a, b);
    }
    return 0.0f;
}

/* An output of dims [ndim], row-major, read from K operands at their
 * strides [K][ndim] (0 on broadcast dims). */
template <int K>
struct layout {
    int ndim;
    int64_t dims[8];
    int64_t stride[K][8];
};

/* off [K]: each operand's offset for output element i */
template <int K, typename I>
static __device__ void offsets_of(const layout<K> &s, I i, I *off)
{
#pragma unroll
    for (int k = 0; k < K; k++)
        off[k] = 0;
    for (int dim = s.ndim - 1; dim >= 0; dim--) {
        I size = (I)s.dims[dim];
        I at = i % size;
        i /= size;
#pragma unroll
        for (int k = 0; k < K; k++)
            off[k] += at * (I)s.stride[k][dim];
    }
}

/* y: [s.dims] row-major = a OP b, a and b read through s's strides 0 and 1 */
template <int OP, typename I>
static __global__ void binary_kernel(layout<2> s, I total, const float *a, const float *b, float *y)
{
    for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < total; i += (I)gridDim.x * (I)blockDim.x) {
        I off[2];
        offsets_of(s, i, off);
        y[i] = apply<OP>(a[off[0]], b[off[1]]);
    }
}

/* y: [total] with a and b both laid out like y: no index arithmetic */
template <int OP>
static __global__ void binary_flat_kernel(int64_t total, const float *a, const float *b, float *y)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = apply<OP>(a[i], b[i]);
}

/* y: [s.dims] row-major = a read through s's strides */
template <typename I>
static __global__ void expand_kernel(layout<1> s, I total, const float *a, float *y)
{
    for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < total; i += (I)gridDim.x * (I)blockDim.x) {
        I off[1];
        offsets_of(s, i, off);
        y[i] = a[off[0]];
    }
}

/* out: [s.dims] row-major = cond ? x : y, read through s's strides 0, 1, 2 */
template <typename I>
static __global__ void where_kernel(layout<3> s, I total, const uint8_t *cond, const float *x, const float *y,
                                    float *out)
{
    for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < total; i += (I)gridDim.x * (I)blockDim.x) {
        I off[3];
        offsets_of(s, i, off);
        out[i] = cond[off[0]] ? x[off[1]] : y[off[2]];
    }
}

/* bc's output and its first K operands (a, then b). */
template <int K>
static layout<K> layout_of(const ptq_bcast *bc)
{
    layout<K> l;
    l.ndim = bc->ndim;
    for (int dim = 0; dim < bc->ndim; dim++) {
        l.dims[dim] = bc->out_dims[dim];
        l.stride[0][dim] = bc->a_stride[dim];
        if (K > 1)
            l.stride[K - 1][dim] = bc->b_stride[dim];
    }
    return l;
}

/* Drops size-1 dims and merges dim d into d+1 when every operand steps over
 * them as one (stride[d] == stride[d+1] * size[d+1] for each). */
template <int K>
static layout<K> simplify(const layout<K> &in)
{
    layout<K> s;
    s.ndim = 0;
    for (int dim = 0; dim < in.ndim; dim++) {
        if (in.dims[dim] == 1)
            continue;
        s.dims[s.ndim] = in.dims[dim];
        for (int k = 0; k < K; k++)
            s.stride[k][s.ndim] = in.stride[k][dim];
        s.ndim++;
    }
    int w = 0;
    for (int dim = 1; dim < s.ndim; dim++) {
        const int64_t size = s.dims[dim];
        int merge = 1;
        for (int k = 0; k < K; k++)
            merge = merge && s.stride[k][w] == s.stride[k][dim] * size;
        if (merge) {
            s.dims[w] *= size;
        } else {
            w++;
            s.dims[w] = size;
        }
        for (int k = 0; k < K; k++)
            s.stride[k][w] = s.stride[k][dim];
    }
    s.ndim = s.ndim ? w + 1 : 0;
    return s;
}

static int64_t total_of(int ndim, const int64_t *dims)
{
    int64_t total = 1;
    for (int dim = 0; dim < ndim; dim++)
        total *= dims[dim];
    return total;
}

/* 1 when 32-bit index math suffices: every offset, and i plus the grid stride, fit in an int */
template <int K>
static int narrow(const layout<K> &s, int64_t total, unsigned blocks)
{
    if (total > INT_MAX - (int64_t)blocks * PTQ_CUDA_BLOCK)
        return 0;
    for (int k = 0; k < K; k++) {
        int64_t span = 0;
        for (int dim = 0; dim < s.ndim; dim++)
            span += (s.dims[dim] - 1) * s.stride[k][dim];
        if (span > INT_MAX)
            return 0;
    }
    return 1;
}

template <int OP>
static ptq_status launch(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_bcast *bc, const float *a, const float *b,
                         float *y)
{
    const layout<2> s = simplify(layout_of<2>(bc));
    const int64_t total = total_of(bc->ndim, bc->out_dims);
    if (total == 0)
        return PTQ_OK;
    const unsigned blocks = ptq_cuda_blocks(total);
    if (s.ndim == 1 && s.stride[0][0] == 1 && s.stride[1][0] == 1) {
        binary_flat_kernel<OP><<<blocks, PTQ_CUDA_BLOCK, 0, d->stream>>>(total, a, b, y);
        PTQ_CUDA_LAUNCHED(ctx, "binary_flat_kernel");
        return PTQ_OK;
    }
    if (narrow(s, total, blocks))
        binary_kernel<OP, int><<<blocks, PTQ_CUDA_BLOCK, 0, d->stream>>>(s, (int)total, a, b, y);
    else
        binary_kernel<OP, int64_t><<<blocks, PTQ_CUDA_BLOCK, 0, d->stream>>>(s, total, a, b, y);
    PTQ_CUDA_LAUNCHED(ctx, "binary_kernel");
    return PTQ_OK;
}

static ptq_status check_ndim(ptq_ctx *ctx, const char *what, int ndim)
{
    if (ndim < 0 || ndim > 8)
        return ptq_fail(ctx, PTQ_ERR_SHAPE, "%s: %d dims; at most 8", what, ndim);
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_binary_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, ptq_binop op, const ptq_bcast *bc,
                                        const float *a, const float *b, float *y)
{
    PTQ_TRY_RET(check_ndim(ctx, "binary", bc->ndim));
    switch (op) {
    case PTQ_BIN_ADD: return launch<PTQ_BIN_ADD>(ctx, d, bc, a, b, y);
    case PTQ_BIN_SUB: return launch<PTQ_BIN_SUB>(ctx, d, bc, a, b, y);
    case PTQ_BIN_MUL: return launch<PTQ_BIN_MUL>(ctx, d, bc, a, b, y);
    case PTQ_BIN_DIV: return launch<PTQ_BIN_DIV>(ctx, d, bc, a, b, y);
    }
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "binary: unknown op %d", (int)op);
}

extern "C" ptq_status ptq_k_pow_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_bcast *bc, const float *a,
                                     const float *b, float *y)
{
    PTQ_TRY_RET(check_ndim(ctx, "pow", bc->ndim));
    return launch<BIN_POW>(ctx, d, bc, a, b, y);
}

extern "C" ptq_status ptq_k_expand_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_bcast *bc, const float *a, float *y)
{
    PTQ_TRY_RET(check_ndim(ctx, "expand", bc->ndim));
    const layout<1> s = simplify(layout_of<1>(bc));
    const int64_t total = total_of(bc->ndim, bc->out_dims);
    if (total == 0)
        return PTQ_OK;
    const unsigned blocks = ptq_cuda_blocks(total);
    if (narrow(s, total, blocks))
        expand_kernel<int><<<blocks, PTQ_CUDA_BLOCK, 0, d->stream>>>(s, (int)total, a, y);
    else
        expand_kernel<int64_t><<<blocks, PTQ_CUDA_BLOCK, 0, d->stream>>>(s, total, a, y);
    PTQ_CUDA_LAUNCHED(ctx, "expand_kernel");
    return PTQ_OK;
}

extern "C" ptq_status ptq_k_where_cuda(ptq_ctx *ctx, ptq_cuda_dev *d, int ndim, const int64_t *out_dims,
                                       const int64_t *c_stride, const int64_t *x_stride, const int64_t *y_stride,
                                       const uint8_t *cond, const float *x, const float *y, float *out)
{
    PTQ_TRY_RET(check_ndim(ctx, "where", ndim));
    layout<3> l;
    l.ndim = ndim;
    for (int dim = 0; dim < ndim; dim++) {
        l.dims[dim] = out_dims[dim];
        l.stride[0][dim] = c_stride[dim];
        l.stride[1][dim] = x_stride[dim];
        l.stride[2][dim] = y_stride[dim];
    }
    const layout<3> s = simplify(l);
    const int64_t total = total_of(ndim, out_dims);
    if (total == 0)
        return PTQ_OK;
    const unsigned blocks = ptq_cuda_blocks(total);
    if (narrow(s, total, blocks))
        where_kernel<int><<<blocks, PTQ_CUDA_BLOCK, 0, d->stream>>>(s, (int)total, cond, x, y, out);
    else
        where_kernel<int64_t><<<blocks, PTQ_CUDA_BLOCK, 0, d->stream>>>(s, total, cond, x, y, out);
    PTQ_CUDA_LAUNCHED(ctx, "where_kernel");
    return PTQ_OK;
}
