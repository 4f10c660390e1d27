/* The "cuda" backend: device memory, copies and node execution on one GPU
 * through kernels/cuda, with parameters from the CPU ops' shared parsers; a
 * node run() would reject is declined by supports() and runs on the CPU, as
 * every op without a kernel here does (the shape and index ops: Shape,
 * Cast, Range, Equal, Mod, ...), and as a node does whose inputs are all
 * integers already on the host (shape computations).
 * Without PTQ_CUDA it only says why. Covered by tests/cuda_backend_exec.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptq/runtime.h"
#include "runtime/backend.h"

#ifndef PTQ_CUDA

ptq_status ptq_backend_cuda_create(ptq_ctx *ctx, int device_index, ptq_backend **out)
{
    (void)device_index;
    *out = NULL;
    return ptq_fail(ctx, PTQ_ERR_NO_DEVICE, "ptq was built without CUDA");
}

int ptq_cuda_available(char *why, size_t n_why)
{
    if (why && n_why)
        snprintf(why, n_why, "ptq was built without CUDA");
    return 0;
}

int ptq_cuda_n_devices(char *why, size_t n_why)
{
    return ptq_cuda_available(why, n_why);
}

void ptq_backend_cuda_set_math(ptq_backend *b, int math)
{
    (void)b;
    (void)math;
}

int ptq_backend_cuda_has_cudnn(ptq_backend *b)
{
    (void)b;
    return 0;
}

ptq_status ptq_backend_cuda_normalize_u8(ptq_backend *b, ptq_ctx *ctx, const struct ptq_norm_params *p,
                                         const void *src, void *dst)
{
    (void)b;
    (void)p;
    (void)src;
    (void)dst;
    return ptq_fail(ctx, PTQ_ERR_NO_DEVICE, "ptq was built without CUDA");
}

#else

#include "kernels/cuda/cuda_kernels.h"
#include "runtime/layout.h"
#include "runtime/op_util.h"

typedef struct cuda_backend {
    ptq_backend b;
    ptq_cuda_dev *dev;
    char name[300]; /* "cuda (NVIDIA H200)": what the executor reports as its device */
} cuda_backend;

static cuda_backend *impl_of(ptq_backend *b)
{
    return (cuda_backend *)b->impl;
}

int ptq_cuda_available(char *why, size_t n_why)
{
    return ptq_cuda_device_count(why, n_why) > 0;
}

int ptq_cuda_n_devices(char *why, size_t n_why)
{
    return ptq_cuda_device_count(why, n_why);
}

static ptq_status cuda_alloc(ptq_backend *b, ptq_ctx *ctx, size_t n_bytes, void **out)
{
    return ptq_cuda_alloc(ctx, impl_of(b)->dev, n_bytes, out);
}

static void cuda_release(ptq_backend *b, void *p)
{
    ptq_cuda_release(impl_of(b)->dev, p);
}

static ptq_status cuda_upload(ptq_backend *b, ptq_ctx *ctx, void *dst, const void *host_src, size_t n_bytes)
{
    return ptq_cuda_upload(ctx, impl_of(b)->dev, dst, host_src, n_bytes);
}

static ptq_status cuda_download(ptq_backend *b, ptq_ctx *ctx, void *host_dst, const void *src, size_t n_bytes)
{
    return ptq_cuda_download(ctx, impl_of(b)->dev, host_dst, src, n_bytes);
}

static ptq_status cuda_copy(ptq_backend *b, ptq_ctx *ctx, void *dst, const void *src, size_t n_bytes)
{
    return ptq_cuda_copy(ctx, impl_of(b)->dev, dst, src, n_bytes);
}

static ptq_status cuda_upload_async(ptq_backend *b, ptq_ctx *ctx, void *dst, const void *host_src, size_t n_bytes)
{
    return ptq_cuda_upload_async(ctx, impl_of(b)->dev, dst, host_src, n_bytes);
}

static ptq_status cuda_host_alloc(ptq_backend *b, ptq_ctx *ctx, size_t n_bytes, void **out)
{
    (void)b;
    return ptq_cuda_host_alloc(ctx, n_bytes, out);
}

static void cuda_host_free(ptq_backend *b, void *p)
{
    (void)b;
    ptq_cuda_host_free(p);
}

static ptq_status cuda_sync(ptq_backend *b, ptq_ctx *ctx)
{
    return ptq_cuda_sync(ctx, impl_of(b)->dev);
}

/* Every node runner below validates first and, when dry, stops there:
 * supports() is a dry run, so it accepts exactly what run() can do. */
typedef ptq_status (*node_fn)(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry);

static const float *fdata(const ptq_tensor *t)
{
    return (const float *)t->data;
}

static float *fout(const ptq_op_io *io, int i)
{
    return (float *)io->out[i]->data;
}

/* The layouts of a Conv's x and y (its residual's is y's) for cuDNN. */
static int64_t conv_layout(const ptq_op_io *io)
{
    return ((io->nhwc_in & 1u) ? PTQ_NHWC_X : 0) | ((io->nhwc_out & 1u) ? PTQ_NHWC_Y : 0);
}

static ptq_status run_conv(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    ptq_conv_params p;
    ptq_status st = ptq_op_conv_params(ctx, io, &p);
    if (st != PTQ_OK || dry)
        return st;
    p.nhwc = conv_layout(io);
    const ptq_tensor *b = io->n_in > 2 ? io->in[2] : NULL; /* [c_out] */
    return ptq_k_conv_cuda(ctx, d, &p, fdata(io->in[0]), fdata(io->in[1]), b ? fdata(b) : NULL, fout(io, 0));
}

static ptq_status cuda_conv_epilogue(ptq_backend *bk, ptq_ctx *ctx, const ptq_op_io *io, const ptq_tensor *z, float lo,
                                    float hi, int *done)
{
    ptq_conv_params p;
    *done = 0;
    const ptq_tensor *b = io->n_in > 2 ? io->in[2] : NULL;
    const int relu = lo == 0.0f;
    if (hi != INFINITY || !(relu || lo == -INFINITY)) /* cuDNN's epilogue has a Relu, no other clamp */
        return PTQ_OK;
    if (!b || ptq_op_conv_params(ctx, io, &p) != PTQ_OK)
        return PTQ_OK; /* the executor runs the node apart, which reports any error */
    p.nhwc = conv_layout(io);
    return ptq_k_conv_epilogue_cuda(ctx, impl_of(bk)->dev, &p, fdata(io->in[0]), fdata(io->in[1]), fdata(b),
                                    z ? fdata(z) : NULL, relu, fout(io, 0), done);
}

static ptq_status cuda_observe_chain(ptq_backend *bk, ptq_ctx *ctx, void *const states[3], int64_t n_bins,
                                     const float *c, const float *z, int z_first, int relu, float *y, int64_t n)
{
    return ptq_k_observe_chain_cuda(ctx, impl_of(bk)->dev, states, n_bins, c, z, z_first, relu, y, n);
}

static ptq_status cuda_observe_bias(ptq_backend *bk, ptq_ctx *ctx, void *const states[2], int64_t n_bins,
                                    const float *c, const float *bias, int64_t cols, int bias_first, float *y,
                                    int64_t n)
{
    return ptq_k_observe_bias_cuda(ctx, impl_of(bk)->dev, states, n_bins, c, bias, cols, bias_first, y, n);
}

static ptq_status cuda_observe_gelu(ptq_backend *bk, ptq_ctx *ctx, void *const states[5], int64_t n_bins,
                                    const float *x, float *a, float *y, int64_t n, float c_div, float c_add,
                                    float c_mul)
{
    return ptq_k_observe_gelu_cuda(ctx, impl_of(bk)->dev, states, n_bins, x, a, y, n, c_div, c_add, c_mul);
}

/* Y [M, N] = alpha op(A) op(B) + beta C, C broadcast into Y first as the ref does. */
static ptq_status run_gemm(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    ptq_gemm_params p;
    ptq_bcast bc;
    ptq_status st = ptq_op_gemm_params(ctx, io, &p);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *c = io->n_in > 2 ? io->in[2] : NULL;
    if (p.beta != 0.0f) {
        if ((st = ptq_op_need_float(ctx, io, 2)) != PTQ_OK || (st = ptq_op_bcast(ctx, c, io->out[0], &bc)) != PTQ_OK)
            return st;
        if (c->ndim > 2 || bc.ndim != 2 || bc.out_dims[0] != p.m || bc.out_dims[1] != p.n)
            return ptq_op_unsupported(ctx, io, "C does not broadcast to Y [%lld, %lld]", (long long)p.m,
                                      (long long)p.n);
    }
    if (dry)
        return PTQ_OK;
    if (p.beta == 1.0f && c->ndim >= 1 && ptq_tensor_numel(c) == p.n && c->dims[c->ndim - 1] == p.n) {
        /* a bias row (C [n] or [1, n]): added in the GEMM's epilogue where cuBLASLt takes it */
        ptq_gemm_params pb = p;
        pb.beta = 0.0f;
        int done = 0;
        if ((st = ptq_k_gemm_bias_cuda(ctx, d, &pb, fdata(io->in[0]), fdata(io->in[1]), fdata(c), fout(io, 0),
                                       &done)) != PTQ_OK || done)
            return st;
    }
    if (p.beta != 0.0f && (st = ptq_k_expand_cuda(ctx, d, &bc, fdata(c), fout(io, 0))) != PTQ_OK)
        return st;
    return ptq_k_gemm_cuda(ctx, d, &p, fdata(io->in[0]), fdata(io->in[1]), fout(io, 0));
}

/* Product of the dims before the last two (1 for rank <= 2). */
static int64_t batch_of(const ptq_tensor *t)
{
    return t->ndim > 2 ? ptq_dims_prod(t->dims, 0, t->ndim - 2) : 1;
}

/* MatMul when each operand's batch dims are either all of the output's or
 * absent/all 1 (a stride or a repeat); mixed broadcasts go to the CPU. */
static ptq_status run_matmul(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    ptq_gemm_params p;
    ptq_status st = ptq_op_gemm_params(ctx, io, &p);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *a = io->in[0], *b = io->in[1];
    const int64_t mn = p.m * p.n;
    const int64_t n_batch = mn ? ptq_tensor_numel(io->out[0]) / mn : 0;
    const int64_t a_batch = batch_of(a), b_batch = batch_of(b);
    if ((a_batch != 1 && a_batch != n_batch) || (b_batch != 1 && b_batch != n_batch))
        return ptq_op_unsupported(ctx, io, "batch dims broadcast within both inputs");
    const int stack_rows = b_batch == 1 && a_batch == n_batch;
    if (stack_rows && p.m * n_batch > INT32_MAX)
        return ptq_op_unsupported(ctx, io, "%lld stacked rows exceed cuBLAS's int range", (long long)(p.m * n_batch));
    if (dry || n_batch == 0)
        return PTQ_OK;
    if (stack_rows) {
        /* A's slices are stacked rows sharing B: one GEMM of n_batch*M rows */
        p.m *= n_batch;
        return ptq_k_gemm_cuda(ctx, d, &p, fdata(a), fdata(b), fout(io, 0));
    }
    return ptq_k_gemm_batched_cuda(ctx, d, &p, n_batch, fdata(a), a_batch == 1 ? 0 : p.m * p.k, fdata(b),
                                   b_batch == 1 ? 0 : p.k * p.n, fout(io, 0), mn);
}

/* float32 only: an integer Clip is declined and runs on the CPU. */
static ptq_status run_unary(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    ptq_unop op;
    float alpha, beta; /* ptq_unop's parameters; Clip's min and max */
    ptq_status st = ptq_op_need_float(ctx, io, 0);
    if (st != PTQ_OK || (st = ptq_op_unary_params(ctx, io, &op, &alpha, &beta)) != PTQ_OK || dry)
        return st;
    return ptq_k_unary_cuda(ctx, d, op, alpha, beta, ptq_tensor_numel(io->in[0]), fdata(io->in[0]), fout(io, 0));
}

/* float32 only, as ptq_k_sqrt_ref. */
static ptq_status run_sqrt(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    ptq_status st = ptq_op_need_float(ctx, io, 0);
    if (st != PTQ_OK || dry)
        return st;
    return ptq_k_sqrt_cuda(ctx, d, ptq_tensor_numel(io->in[0]), fdata(io->in[0]), fout(io, 0));
}

/* Add, Sub, Mul, Div and Pow on float32 with numpy broadcasting. */
static ptq_status run_binary(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    ptq_bcast bc;
    ptq_binop op = PTQ_BIN_ADD; /* unused for Pow */
    ptq_status st;
    const ptq_op_id id = ptq_op_of(io)->traits->id;
    switch (id) {
    case PTQ_OP_ADD: op = PTQ_BIN_ADD; break;
    case PTQ_OP_SUB: op = PTQ_BIN_SUB; break;
    case PTQ_OP_MUL: op = PTQ_BIN_MUL; break;
    case PTQ_OP_DIV: op = PTQ_BIN_DIV; break;
    case PTQ_OP_POW: break;
    default: return ptq_op_unsupported(ctx, io, "not an elementwise op the GPU runs");
    }
    if ((st = ptq_op_need_float(ctx, io, 0)) != PTQ_OK || (st = ptq_op_need_float(ctx, io, 1)) != PTQ_OK)
        return st;
    const ptq_tensor *a = io->in[0], *b = io->in[1];
    int same = a->ndim == b->ndim && memcmp(a->dims, b->dims, (size_t)a->ndim * sizeof a->dims[0]) == 0;
    if (io->graph->opset < 7 && !same)
        return ptq_op_unsupported(ctx, io, "opset < 7 broadcast/axis attributes");
    if ((st = ptq_op_bcast(ctx, a, b, &bc)) != PTQ_OK)
        return st;
    if (dry)
        return PTQ_OK;
    if (id == PTQ_OP_POW)
        return ptq_k_pow_cuda(ctx, d, &bc, fdata(a), fdata(b), fout(io, 0));
    return ptq_k_binary_cuda(ctx, d, op, &bc, fdata(a), fdata(b), fout(io, 0));
}

/* Where: float32 X and Y, a bool condition; out [shape] = cond ? X : Y with
 * each input read at its broadcast strides. */
static ptq_status run_where(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    ptq_tensor shape;
    ptq_bcast in_bc[3];
    ptq_status st = ptq_op_where_layout(ctx, io, &shape, in_bc);
    if (st != PTQ_OK)
        return st;
    if (shape.dtype != PTQ_DT_FLOAT)
        return ptq_op_unsupported(ctx, io, "dtype %s; the GPU selects float32", ptq_dtype_name(shape.dtype));
    if (dry)
        return PTQ_OK;
    return ptq_k_where_cuda(ctx, d, shape.ndim, shape.dims, in_bc[0].a_stride, in_bc[1].a_stride, in_bc[2].a_stride,
                            io->in[0]->data, fdata(io->in[1]), fdata(io->in[2]), fout(io, 0));
}

/* Expand: float32 input 0 broadcast to the host shape input 1. */
static ptq_status run_expand(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    ptq_bcast bc;
    ptq_status st = ptq_op_need_float(ctx, io, 0);
    if (st != PTQ_OK || (st = ptq_op_expand_layout(ctx, io, &bc)) != PTQ_OK || dry)
        return st;
    return ptq_k_expand_cuda(ctx, d, &bc, fdata(io->in[0]), fout(io, 0));
}

/* x: [N, C, spatial...] -> y: [N, C, 1...], each (n, c) row averaged */
static ptq_status run_global_avgpool(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    ptq_status st = ptq_op_need_float(ctx, io, 0);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0];
    if (x->ndim < 2)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input rank %d; [N, C, ...] expected", x->ndim);
    if (dry)
        return PTQ_OK;
    if (io->nhwc_in & 1u) /* y [N, C, 1, 1] is the same in either layout */
        return ptq_k_global_avgpool_nhwc_cuda(ctx, d, x->dims[0], ptq_dims_prod(x->dims, 2, x->ndim), x->dims[1],
                                              fdata(x), fout(io, 0));
    return ptq_k_global_avgpool_cuda(ctx, d, x->dims[0] * x->dims[1], ptq_dims_prod(x->dims, 2, x->ndim), fdata(x),
                                     fout(io, 0));
}

static ptq_status run_pool(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    ptq_pool_params p;
    ptq_status st = ptq_op_pool_params(ctx, io, &p);
    if (st != PTQ_OK)
        return st;
    const int nhwc = (io->nhwc_in & 1u) != 0; /* and the output's (takes_layout) */
    if (nhwc && io->in[0]->ndim != 4)
        return ptq_op_unsupported(ctx, io, "channels-last pooling takes 2-D [N, H, W, C] tensors");
    if (dry)
        return PTQ_OK;
    if (nhwc)
        return ptq_k_pool_nhwc_cuda(ctx, d, ptq_op_of(io)->traits->id == PTQ_OP_MAXPOOL, &p, fdata(io->in[0]),
                                    fout(io, 0));
    if (ptq_op_of(io)->traits->id == PTQ_OP_MAXPOOL)
        return ptq_k_maxpool_cuda(ctx, d, &p, fdata(io->in[0]), fout(io, 0));
    return ptq_k_avgpool_cuda(ctx, d, &p, fdata(io->in[0]), fout(io, 0));
}

/* [lo, hi): the block of input 0's axes ReduceMean averages over, size-1
 * axes set aside (kept or reduced, they move nothing); UNSUPPORTED when a
 * kept axis lies inside it. Empty (lo == hi) when every reduced axis has size 1. */
static ptq_status reduced_block(ptq_ctx *ctx, const ptq_op_io *io, const unsigned char *reduced, int *lo, int *hi)
{
    const ptq_tensor *x = io->in[0];
    *lo = *hi = x->ndim;
    for (int dim = 0; dim < x->ndim; dim++)
        if (reduced[dim] && x->dims[dim] != 1) {
            *lo = *lo < dim ? *lo : dim;
            *hi = dim + 1;
        }
    for (int dim = *lo; dim < *hi; dim++)
        if (!reduced[dim] && x->dims[dim] != 1)
            return ptq_op_unsupported(ctx, io, "kept axis %d lies between reduced ones", dim);
    return PTQ_OK;
}

/* ReduceMean on float32: x viewed as [outer, len, inner] around the reduced
 * block (reduced_block); y: [outer, inner] whatever keepdims says. */
static ptq_status run_reduce_mean(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    unsigned char reduced[PTQ_MAX_DIMS];
    int noop = 0, lo = 0, hi = 0;
    ptq_status st = ptq_op_need_float(ctx, io, 0);
    if (st == PTQ_OK)
        st = ptq_op_reduce_axes(ctx, io, reduced, &noop);
    if (st != PTQ_OK || (!noop && (st = reduced_block(ctx, io, reduced, &lo, &hi)) != PTQ_OK) || dry)
        return st;
    const ptq_tensor *x = io->in[0];
    if (noop)
        return ptq_cuda_copy(ctx, d, io->out[0]->data, x->data, ptq_tensor_bytes(x));
    return ptq_k_reduce_mean_cuda(ctx, d, ptq_dims_prod(x->dims, 0, lo), ptq_dims_prod(x->dims, lo, hi),
                                  ptq_dims_prod(x->dims, hi, x->ndim), fdata(x), fout(io, 0));
}

/* Inference form: X [N, C, ...], scale/B/mean/var [C]; no running-stat outputs. */
static ptq_status run_batchnorm(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    ptq_status st = ptq_op_batchnorm_check(ctx, io);
    if (st != PTQ_OK || dry)
        return st;
    const ptq_tensor *x = io->in[0];
    return ptq_k_batchnorm_cuda(ctx, d, x->dims[0], x->dims[1], ptq_dims_prod(x->dims, 2, x->ndim), fdata(x),
                                fdata(io->in[1]), fdata(io->in[2]), fdata(io->in[3]), fdata(io->in[4]),
                                ptq_node_attr_float(io->node, "epsilon", 1e-5f), fout(io, 0));
}

static ptq_status run_softmax(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    int64_t outer = 0, len = 0, inner = 0;
    ptq_status st = ptq_op_need_float(ctx, io, 0);
    if (st != PTQ_OK || (st = ptq_op_softmax_view(ctx, io, &outer, &len, &inner)) != PTQ_OK || dry)
        return st;
    return ptq_k_softmax_cuda(ctx, d, outer, len, inner, fdata(io->in[0]), fout(io, 0));
}

/* X viewed as [rows, cols]; the optional Mean and InvStdDev outputs [rows]. */
static ptq_status run_layernorm(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    int axis = 0;
    int64_t rows = 0, cols = 0;
    float eps = 1e-5f;
    ptq_status st = ptq_op_layernorm_view(ctx, io, &axis, &rows, &cols, &eps);
    if (st != PTQ_OK || dry)
        return st;
    const ptq_tensor *b = io->n_in > 2 ? io->in[2] : NULL;
    return ptq_k_layernorm_cuda(ctx, d, rows, cols, fdata(io->in[0]), fdata(io->in[1]), b ? fdata(b) : NULL, eps,
                                fout(io, 0), io->n_out > 1 ? fout(io, 1) : NULL, io->n_out > 2 ? fout(io, 2) : NULL);
}

/* Flatten, Reshape, Identity: output 0 is input 0's bytes under new dims. */
static ptq_status run_copy(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    ptq_status st = ptq_op_need_input(ctx, io, 0);
    if (st != PTQ_OK)
        return st;
    if (ptq_dtype_size(io->in[0]->dtype) == 0)
        return ptq_op_unsupported(ctx, io, "dtype %s", ptq_dtype_name(io->in[0]->dtype));
    if (dry)
        return PTQ_OK;
    return ptq_cuda_copy(ctx, d, io->out[0]->data, io->in[0]->data, ptq_tensor_bytes(io->in[0]));
}

/* Inference Dropout: a copy, and an all-true bool mask when one is named. */
static ptq_status run_dropout(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    int mask;
    ptq_status st = ptq_op_dropout_check(ctx, io, &mask);
    if (st != PTQ_OK)
        return st;
    if (mask && io->out[1]->dtype != PTQ_DT_BOOL)
        return ptq_op_unsupported(ctx, io, "a %s mask", ptq_dtype_name(io->out[1]->dtype));
    if ((st = run_copy(ctx, d, io, dry)) != PTQ_OK || dry || !mask)
        return st;
    return ptq_cuda_fill_bytes(ctx, d, io->out[1]->data, 1, ptq_tensor_bytes(io->out[1]));
}

static ptq_status run_transpose(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    int64_t perm[PTQ_MAX_DIMS];
    ptq_status st = ptq_op_need_input(ctx, io, 0);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0];
    size_t elem = ptq_dtype_size(x->dtype);
    if (elem != 1 && elem != 2 && elem != 4 && elem != 8)
        return ptq_op_unsupported(ctx, io, "dtype %s", ptq_dtype_name(x->dtype));
    if ((st = ptq_op_transpose_perm(ctx, io, perm)) != PTQ_OK || dry)
        return st;
    return ptq_k_transpose_cuda(ctx, d, elem, x->ndim, x->dims, perm, x->data, io->out[0]->data);
}

/* y: [outer, sum of the axis dims, inner]: input i fills a column band of
 * rows outer, one strided 2-D copy each. */
static ptq_status run_concat(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    ptq_status st = PTQ_OK;
    int axis;
    for (int i = 0; i < io->n_in; i++)
        if ((st = ptq_op_need_input(ctx, io, i)) != PTQ_OK)
            return st;
    const ptq_tensor *y = io->out[0];
    size_t elem = ptq_dtype_size(y->dtype);
    if (elem == 0)
        return ptq_op_unsupported(ctx, io, "dtype %s", ptq_dtype_name(y->dtype));
    if ((st = ptq_op_concat_axis(ctx, io, &axis)) != PTQ_OK || dry)
        return st;
    const int64_t outer = ptq_dims_prod(y->dims, 0, axis);
    const size_t inner_bytes = (size_t)ptq_dims_prod(y->dims, axis + 1, y->ndim) * elem;
    const size_t y_row = (size_t)y->dims[axis] * inner_bytes;
    size_t at = 0;
    for (int i = 0; i < io->n_in && st == PTQ_OK; i++) {
        size_t x_row = (size_t)io->in[i]->dims[axis] * inner_bytes;
        st = ptq_cuda_copy_2d(ctx, d, (unsigned char *)y->data + at, y_row, io->in[i]->data, x_row, x_row, outer);
        at += x_row;
    }
    return st;
}

/* x: [outer, sum of the outputs' axis dims, inner]: output j takes its
 * column band of the outer rows, one strided 2-D copy each (Concat's inverse). */
static ptq_status run_split(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    int axis;
    int64_t sizes[PTQ_SPLIT_MAX_OUTPUTS];
    ptq_status st = ptq_op_split_plan(ctx, io, &axis, sizes);
    if (st != PTQ_OK || dry)
        return st;
    const ptq_tensor *x = io->in[0];
    const int64_t outer = ptq_dims_prod(x->dims, 0, axis);
    const size_t inner_bytes = (size_t)ptq_dims_prod(x->dims, axis + 1, x->ndim) * ptq_dtype_size(x->dtype);
    const size_t x_row = (size_t)x->dims[axis] * inner_bytes;
    size_t at = 0;
    for (int j = 0; j < io->n_out && st == PTQ_OK; j++) {
        const size_t y_row = (size_t)sizes[j] * inner_bytes;
        st = ptq_cuda_copy_2d(ctx, d, io->out[j]->data, y_row, (const unsigned char *)x->data + at, x_row, y_row,
                              outer);
        at += y_row;
    }
    return st;
}

/* Slice of any fixed-size dtype of 1, 2, 4 or 8 bytes (the starts, ends, axes and steps on the host). */
static ptq_status run_slice(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    int64_t start[PTQ_MAX_DIMS], step[PTQ_MAX_DIMS], dims[PTQ_MAX_DIMS];
    ptq_status st = ptq_op_slice_plan(ctx, io, start, step, dims);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0];
    const size_t width = ptq_dtype_size(x->dtype);
    if (width != 1 && width != 2 && width != 4 && width != 8)
        return ptq_op_unsupported(ctx, io, "%zu-byte elements; the GPU slices 1, 2, 4 or 8", width);
    if (dry)
        return PTQ_OK;
    return ptq_k_slice_cuda(ctx, d, width, x->ndim, x->dims, dims, start, step, x->data, io->out[0]->data);
}

/* Gather of a few indices (the q, k and v of a packed attention projection, a class token): the indices come
 * to the host to be checked, then each index's block of the data is one strided 2-D copy. More indices (an
 * embedding lookup) run on the CPU. */
#define GATHER_GPU_MAX 64
static ptq_status run_gather(ptq_ctx *ctx, ptq_cuda_dev *d, const ptq_op_io *io, int dry)
{
    int axis;
    int64_t raw[GATHER_GPU_MAX], at[GATHER_GPU_MAX];
    ptq_status st = ptq_op_gather_plan(ctx, io, NULL, &axis, NULL);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0], *idx = io->in[1];
    const int64_t n = ptq_tensor_numel(idx);
    if (n > GATHER_GPU_MAX)
        return ptq_op_unsupported(ctx, io, "%lld indices; the GPU gathers at most %d", (long long)n, GATHER_GPU_MAX);
    if (dry || n == 0 || ptq_tensor_numel(io->out[0]) == 0)
        return PTQ_OK;
    const void *idx_host = idx->data;
    if (idx->mem != PTQ_MEM_HOST) {
        if ((st = ptq_cuda_download(ctx, d, raw, idx->data, ptq_tensor_bytes(idx))) != PTQ_OK)
            return st;
        idx_host = raw;
    }
    if ((st = ptq_op_gather_plan(ctx, io, idx_host, &axis, at)) != PTQ_OK)
        return st;
    const int64_t outer = ptq_dims_prod(x->dims, 0, axis);
    const size_t block = (size_t)ptq_dims_prod(x->dims, axis + 1, x->ndim) * ptq_dtype_size(x->dtype);
    const size_t x_row = (size_t)x->dims[axis] * block, y_row = (size_t)n * block;
    for (int64_t j = 0; j < n && st == PTQ_OK; j++)
        st = ptq_cuda_copy_2d(ctx, d, (unsigned char *)io->out[0]->data + (size_t)j * block, y_row,
                              (const unsigned char *)x->data + (size_t)at[j] * block, x_row, block, outer);
    return st;
}

/* The CUDA kernel of each op, by op id; NULL: the op always runs on the CPU. */
static const node_fn node_fns[PTQ_OP_COUNT] = {
    [PTQ_OP_CONV] = run_conv,
    [PTQ_OP_GEMM] = run_gemm,
    [PTQ_OP_MATMUL] = run_matmul,
    [PTQ_OP_RELU] = run_unary,
    [PTQ_OP_LEAKYRELU] = run_unary,
    [PTQ_OP_CLIP] = run_unary,
    [PTQ_OP_SIGMOID] = run_unary,
    [PTQ_OP_HARDSIGMOID] = run_unary,
    [PTQ_OP_HARDSWISH] = run_unary,
    [PTQ_OP_TANH] = run_unary,
    [PTQ_OP_ERF] = run_unary,
    [PTQ_OP_GELU] = run_unary,
    [PTQ_OP_ADD] = run_binary,
    [PTQ_OP_SUB] = run_binary,
    [PTQ_OP_MUL] = run_binary,
    [PTQ_OP_DIV] = run_binary,
    [PTQ_OP_POW] = run_binary,
    [PTQ_OP_SQRT] = run_sqrt,
    [PTQ_OP_REDUCEMEAN] = run_reduce_mean,
    [PTQ_OP_WHERE] = run_where,
    [PTQ_OP_EXPAND] = run_expand,
    [PTQ_OP_SPLIT] = run_split,
    [PTQ_OP_SLICE] = run_slice,
    [PTQ_OP_GATHER] = run_gather,
    [PTQ_OP_GLOBALAVERAGEPOOL] = run_global_avgpool,
    [PTQ_OP_MAXPOOL] = run_pool,
    [PTQ_OP_AVERAGEPOOL] = run_pool,
    [PTQ_OP_BATCHNORMALIZATION] = run_batchnorm,
    [PTQ_OP_SOFTMAX] = run_softmax,
    [PTQ_OP_LAYERNORMALIZATION] = run_layernorm,
    [PTQ_OP_FLATTEN] = run_copy,
    [PTQ_OP_RESHAPE] = run_copy,
    [PTQ_OP_SQUEEZE] = run_copy,
    [PTQ_OP_UNSQUEEZE] = run_copy,
    [PTQ_OP_IDENTITY] = run_copy,
    [PTQ_OP_DROPOUT] = run_dropout,
    [PTQ_OP_TRANSPOSE] = run_transpose,
    [PTQ_OP_CONCAT] = run_concat,
};

/* The node's resolved op (io->op, filled by the executor) picks the kernel. */
static node_fn find_fn(const ptq_op_io *io)
{
    const ptq_op_def *op = ptq_op_of(io);
    return op ? node_fns[op->traits->id] : NULL;
}

/* Channels-last tensors go only to the ops that take them
 * (ptq_layout_takes): a same-shape Add or an elementwise activation reads
 * and writes them as it would [N, C, H, W] ones. */
static int takes_layout(const ptq_op_io *io)
{
    if (!io->nhwc_in && !io->nhwc_out)
        return 1;
    const ptq_op_def *op = ptq_op_of(io);
    switch (op ? ptq_layout_takes(op->traits->id) : PTQ_LAYOUT_NONE) {
    case PTQ_LAYOUT_READS: return 1;
    case PTQ_LAYOUT_TIED:
        if (op->traits->id != PTQ_OP_ADD)
            return io->nhwc_in == 1u && io->nhwc_out == 1u;
        return io->nhwc_in == 3u && io->nhwc_out == 1u && io->in[0]->ndim == io->in[1]->ndim &&
               memcmp(io->in[0]->dims, io->in[1]->dims, (size_t)io->in[0]->ndim * sizeof io->in[0]->dims[0]) == 0;
    default: return 0;
    }
}

/* 1 when every input the node has is an integer (or bool) tensor on the host: a shape computation (Shape ->
 * Gather -> Unsqueeze -> Concat -> a Reshape's shape), which would cross to the GPU and back for a few bytes. */
static int host_integers(const ptq_op_io *io)
{
    int n = 0;
    for (int i = 0; i < io->n_in; i++) {
        const ptq_tensor *t = io->in[i];
        if (!t)
            continue;
        if (t->mem != PTQ_MEM_HOST || t->dtype == PTQ_DT_FLOAT || t->dtype == PTQ_DT_FLOAT16 ||
            t->dtype == PTQ_DT_DOUBLE || t->dtype == PTQ_DT_BFLOAT16)
            return 0;
        n++;
    }
    return n > 0;
}

static int cuda_supports(ptq_backend *b, const ptq_op_io *io)
{
    node_fn fn = find_fn(io);
    if (!takes_layout(io) || host_integers(io))
        return 0;
    ptq_ctx scratch; /* a declined node is not an error: the CPU takes it */
    ptq_ctx_init(&scratch);
    return fn && fn(&scratch, impl_of(b)->dev, io, 1) == PTQ_OK;
}

static ptq_status cuda_run(ptq_backend *b, ptq_ctx *ctx, const ptq_op_io *io)
{
    node_fn fn = find_fn(io);
    if (!fn)
        return ptq_op_unsupported(ctx, io, "the CUDA backend does not run this op");
    if (!takes_layout(io))
        return ptq_op_unsupported(ctx, io, "this op does not take channels-last tensors");
    return fn(ctx, impl_of(b)->dev, io, 0);
}

/* io's MatMul with a bias row, its weights one [K, N] matrix: the rows of every batch stacked, one GEMM whose
 * epilogue adds the bias (ptq_k_gemm_bias_cuda; *done = 0 where it does not take the shapes). */
static ptq_status cuda_matmul_bias(ptq_backend *b, ptq_ctx *ctx, const ptq_op_io *io, const ptq_tensor *bias,
                                   int *done)
{
    *done = 0;
    ptq_gemm_params p;
    int ok;
    const ptq_status st = ptq_op_matmul_bias_params(ctx, io, bias, &p, &ok);
    if (st != PTQ_OK || !ok || p.m > INT32_MAX)
        return st;
    return ptq_k_gemm_bias_cuda(ctx, impl_of(b)->dev, &p, fdata(io->in[0]), fdata(io->in[1]), fdata(bias),
                                fout(io, 0), done);
}

static ptq_status cuda_erf_gelu(ptq_backend *b, ptq_ctx *ctx, const float *x, float *y, int64_t n, float c_div,
                                float c_add, float c_mul)
{
    return ptq_k_erf_gelu_cuda(ctx, impl_of(b)->dev, n, c_div, c_add, c_mul, x, y);
}

static void cuda_destroy(ptq_backend *b)
{
    if (!b)
        return;
    cuda_backend *cb = impl_of(b);
    ptq_cuda_dev_free(cb->dev);
    free(cb);
}

int ptq_backend_cuda_has_cudnn(ptq_backend *b)
{
    return ptq_cuda_dev_note(impl_of(b)->dev)[0] == 0;
}

void ptq_backend_cuda_set_math(ptq_backend *b, int math)
{
    ptq_cuda_dev_set_math(impl_of(b)->dev, math == PTQ_MATH_TF32   ? PTQ_CUDA_MATH_TF32
                                           : math == PTQ_MATH_FP64 ? PTQ_CUDA_MATH_FP64
                                                                   : PTQ_CUDA_MATH_FP32);
}

ptq_status ptq_backend_cuda_normalize_u8(ptq_backend *b, ptq_ctx *ctx, const struct ptq_norm_params *p,
                                         const void *src, void *dst)
{
    return ptq_k_normalize_u8_cuda(ctx, impl_of(b)->dev, p, (const uint8_t *)src, (float *)dst);
}

ptq_status ptq_backend_cuda_create(ptq_ctx *ctx, int device_index, ptq_backend **out)
{
    char why[256];
    *out = NULL;
    const int n_devices = ptq_cuda_device_count(why, sizeof why);
    if (n_devices == 0)
        return ptq_fail(ctx, PTQ_ERR_NO_DEVICE, "%s", why);
    if (device_index < 0 || device_index >= n_devices)
        return ptq_fail(ctx, PTQ_ERR_NO_DEVICE, "GPU %d asked for, but %d %s visible", device_index, n_devices,
                        n_devices == 1 ? "is" : "are");
    cuda_backend *cb = calloc(1, sizeof *cb);
    if (!cb)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory creating the cuda backend");
    ptq_status st = ptq_cuda_dev_create(ctx, device_index, &cb->dev);
    if (st != PTQ_OK) {
        free(cb);
        return st;
    }
    snprintf(cb->name, sizeof cb->name, "cuda (%s)", ptq_cuda_dev_name(cb->dev));
    ptq_backend *b = &cb->b;
    b->name = cb->name;
    b->mem = PTQ_MEM_CUDA;
    b->impl = cb;
    b->cuda = cb->dev;
    b->alloc = cuda_alloc;
    b->release = cuda_release;
    b->upload = cuda_upload;
    b->upload_async = cuda_upload_async;
    b->host_alloc = cuda_host_alloc;
    b->host_free = cuda_host_free;
    b->download = cuda_download;
    b->copy = cuda_copy;
    b->sync = cuda_sync;
    b->supports = cuda_supports;
    b->run = cuda_run;
    b->conv_epilogue = cuda_conv_epilogue;
    b->observe_chain = cuda_observe_chain;
    b->observe_bias = cuda_observe_bias;
    b->observe_gelu = cuda_observe_gelu;
    b->erf_gelu = cuda_erf_gelu;
    b->matmul_bias = cuda_matmul_bias;
    b->destroy = cuda_destroy;
    *out = b;
    return PTQ_OK;
}

#endif
