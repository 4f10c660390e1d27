/* The op table: one entry per supported ONNX op, giving shape/dtype
 * inference and the reference and fast CPU implementations. Backends other
 * than the CPU (runtime/backend_cuda.c) reuse infer and the parameter
 * parsers below. Covered by tests/test_ops_dense.c, tests/test_ops_shape.c and the ONNX conformance run. */
#ifndef PTQ_RUNTIME_OP_H
#define PTQ_RUNTIME_OP_H

#include "kernels/kernels.h"
#include "ptq/graph.h"
#include "ptq/tensor.h"

#define PTQ_OP_MAX_IO 16

/* What one node invocation sees. in[i] is NULL where an optional input is
 * omitted; inputs live where the backend runs (host for ref/cpu), except the
 * ones named in the op's host_inputs mask, which are always on the host. */
typedef struct ptq_op_io {
    const ptq_graph *graph;
    const ptq_node *node;
    int n_in, n_out;
    const ptq_tensor *in[PTQ_OP_MAX_IO];
    ptq_tensor *out[PTQ_OP_MAX_IO]; /* infer sets dtype/ndim/dims; the executor then allocates data */
} ptq_op_io;

typedef struct ptq_op_def {
    const char *op_type;
    int since_opset;      /* oldest default-domain opset this implementation follows */
    unsigned host_inputs; /* bit i: input i is read by infer (shape-like data) and must be on the host */
    /* Validates attributes and dtypes (PTQ_ERR_UNSUPPORTED naming node, op and
     * what is missing) and sets every output's dtype and shape. */
    ptq_status (*infer)(ptq_ctx *ctx, ptq_op_io *io);
    /* Computes outputs on the host with kernels/ref. */
    ptq_status (*run_ref)(ptq_ctx *ctx, const ptq_op_io *io);
    /* Same with kernels/cpu; NULL when the reference is the CPU path. */
    ptq_status (*run_cpu)(ptq_ctx *ctx, const ptq_op_io *io);
} ptq_op_def;

/* NULL when ptq has no implementation of (domain, op_type). */
const ptq_op_def *ptq_op_find(const char *domain, const char *op_type);

/* Parameter parsers shared by every backend; each assumes infer succeeded
 * and reads data only of host_inputs, so a device backend may call it too. */
ptq_status ptq_op_conv_params(ptq_ctx *ctx, const ptq_op_io *io, ptq_conv_params *p);
ptq_status ptq_op_gemm_params(ptq_ctx *ctx, const ptq_op_io *io, ptq_gemm_params *p);
/* MaxPool / AveragePool: float32 input 0, no Indices output, window into *p. */
ptq_status ptq_op_pool_params(ptq_ctx *ctx, const ptq_op_io *io, ptq_pool_params *p);
/* Broadcast layout of two inputs to out's shape (numpy rules). */
ptq_status ptq_op_bcast(ptq_ctx *ctx, const ptq_tensor *a, const ptq_tensor *b, ptq_bcast *bc);
/* Float activations (input 0 float32): the ptq_unop and its alpha/beta, Clip's
 * min/max from attributes before opset 11, from scalar inputs 1, 2 after. */
ptq_status ptq_op_unary_params(ptq_ctx *ctx, const ptq_op_io *io, ptq_unop *op, float *alpha, float *beta);
/* Softmax: input 0 viewed as [outer, len, inner], normalised over len. */
ptq_status ptq_op_softmax_view(ptq_ctx *ctx, const ptq_op_io *io, int64_t *outer, int64_t *len, int64_t *inner);
/* Transpose: perm [input 0's rank], the attribute or the reversed dims. */
ptq_status ptq_op_transpose_perm(ptq_ctx *ctx, const ptq_op_io *io, int64_t *perm);
/* Concat: the axis in 0..rank-1. */
ptq_status ptq_op_concat_axis(ptq_ctx *ctx, const ptq_op_io *io, int *axis);
/* Dropout: fails unless it acts as inference (training_mode false or ratio
 * 0); *has_mask: the optional mask output 1 is named. */
ptq_status ptq_op_dropout_check(ptq_ctx *ctx, const ptq_op_io *io, int *has_mask);
/* BatchNormalization: the inference form, X [N, C, ...] and scale, B, mean,
 * var [C], all float32, without training mode or its outputs. */
ptq_status ptq_op_batchnorm_check(ptq_ctx *ctx, const ptq_op_io *io);

#endif
