/* The op table: one entry per supported ONNX op, giving its traits (name,
 * domain, weights, quantizable tensors, fusions: model/op_traits.h), shape/
 * dtype inference and the reference and fast CPU implementations; other
 * backends index their own kernels by the op's id (runtime/backend_cuda.c)
 * and reuse infer and the parameter parsers below. A graph's nodes are
 * resolved to entries once, at load (ptq_op_resolve). Covered by
 * tests/test_op_table.c, tests/test_ops_dense.c, tests/test_ops_shape.c and
 * the ONNX conformance run. */
#ifndef PTQ_RUNTIME_OP_H
#define PTQ_RUNTIME_OP_H

#include "kernels/kernels.h"
#include "model/op_traits.h"
#include "ptq/graph.h"
#include "ptq/tensor.h"

typedef struct ptq_op_def ptq_op_def;

/* What one node invocation sees, however many inputs and outputs the node
 * has. in[i] is NULL where an optional input is omitted; inputs live where
 * the backend runs (host for ref/cpu), except the ones named in the op's
 * host_inputs mask, which are always on the host. */
typedef struct ptq_op_io {
    const ptq_graph *graph;
    const ptq_node *node;
    int n_in, n_out;
    const ptq_tensor **in; /* [n_in] */
    ptq_tensor **out;      /* [n_out]; infer sets dtype/ndim/dims; the executor then allocates data */
    const ptq_op_def *op;  /* node's entry from ptq_op_resolve; NULL: found by its domain and op_type */
    /* bit i: input / output i is stored channels last ([N, H, W, C] in
     * memory, its dims still [N, C, H, W]): only on a device, only where
     * the executor's layout plan put it (runtime/layout.c) */
    unsigned nhwc_in, nhwc_out;
} ptq_op_io;

/* Room for one invocation's views, grown to the largest node seen and
 * reused: in_views [n_in] for the caller to fill, out_views [n_out] zeroed,
 * and io.in / io.out pointing at them (io.in[i] NULL until set). */
typedef struct ptq_op_frame {
    ptq_op_io io;
    ptq_tensor *in_views;  /* [n_in] */
    ptq_tensor *out_views; /* [n_out] */
    void *block;           /* one allocation holding all four arrays */
    size_t block_bytes;
} ptq_op_frame;

/* Sets f up for a node of n_in inputs and n_out outputs (graph, node and op
 * left to the caller); PTQ_ERR_NOMEM when it cannot grow. */
ptq_status ptq_op_frame_reserve(ptq_ctx *ctx, ptq_op_frame *f, int n_in, int n_out);
void ptq_op_frame_free(ptq_op_frame *f);

/* Multiply-adds one run of io's node takes, once infer has set its outputs: Conv, ConvTranspose, Gemm and MatMul
 * (saturating: sizes from a file); 0 for the other ops, whose work goes with their outputs' size. */
uint64_t ptq_op_macs(const ptq_op_io *io);
/* Einsum: the iterations its kernel takes (every label's index), 0 when its equation does not parse. */
uint64_t ptq_op_einsum_work(const ptq_op_io *io);
/* What a node computed from constants alone may take at load (shape inference, runtime/fold.c): past it, the node
 * runs with the data instead, so that a small hostile file (a Conv of two large constants) cannot keep every
 * command, `ptq info` too, busy for minutes before it reads any data. About a second with the reference kernels. */
#define PTQ_FOLD_MAX_MACS ((uint64_t)1 << 28)

/* The traits of op ID (the part after PTQ_OP_), for the entries' initializers. */
#define PTQ_OP_TRAITS(ID) (&ptq_op_traits_table[PTQ_OP_##ID])

struct ptq_op_def {
    const ptq_op_traits *traits; /* &ptq_op_traits_table[id]: id, op_type, domain, weights, fusions */
    int since_opset;      /* oldest default-domain opset this implementation follows */
    unsigned host_inputs; /* bit i: input i is read by infer (shape-like data) and must be on the host */
    /* Validates attributes and dtypes (PTQ_ERR_UNSUPPORTED naming node, op and
     * what is missing) and sets every output's dtype and shape. */
    ptq_status (*infer)(ptq_ctx *ctx, ptq_op_io *io);
    /* Computes outputs on the host with kernels/ref. */
    ptq_status (*run_ref)(ptq_ctx *ctx, const ptq_op_io *io);
    /* Same with kernels/cpu; NULL when the reference is the CPU path. */
    ptq_status (*run_cpu)(ptq_ctx *ctx, const ptq_op_io *io);
    /* bit i: only input i's dtype and shape are read, never its data (Shape):
     * a value computed from it alone is known before the run (shape
     * inference folds it) and the input is not moved between memories */
    unsigned meta_inputs;
    /* bit i (also in host_inputs): infer reads only the dtype and size of host input i and takes it without data,
     * so it may be computed at run time (Clip's min and max); it is on the host when the node runs */
    unsigned late_inputs;
};

/* 1 if op reads input i on the host (host_inputs; inputs past bit 31 never). */
static inline int ptq_op_host_input(const ptq_op_def *op, int i)
{
    return i >= 0 && i < 32 && ((op->host_inputs >> i) & 1u);
}

/* 1 if host input i of op may be computed at run time (late_inputs). */
static inline int ptq_op_late_input(const ptq_op_def *op, int i)
{
    return ptq_op_host_input(op, i) && ((op->late_inputs >> i) & 1u);
}

/* 1 if op reads only the dtype and shape of input i (meta_inputs). */
static inline int ptq_op_meta_input(const ptq_op_def *op, int i)
{
    return i >= 0 && i < 32 && ((op->meta_inputs >> i) & 1u);
}

/* NULL when ptq has no implementation of (domain, op_type). */
const ptq_op_def *ptq_op_find(const char *domain, const char *op_type);
/* The entry of op id (0 <= id < PTQ_OP_COUNT). */
const ptq_op_def *ptq_op_get(ptq_op_id id);
/* io->op, or the entry found by io->node's domain and op_type when the
 * caller left io->op NULL; NULL when ptq has none. */
const ptq_op_def *ptq_op_of(const ptq_op_io *io);

/* Resolves every node of g to its entry, once, before anything runs:
 * (*out)[k] is node k's (free() the array). PTQ_ERR_UNSUPPORTED naming
 * every node ptq cannot run (as many as a message holds), each with its op,
 * domain and the model's opset: an unknown op, or an opset older than the
 * entry's since_opset; then a torch.onnx.export hint when one applies. */
ptq_status ptq_op_resolve(ptq_ctx *ctx, const ptq_graph *g, const ptq_op_def ***out);

/* Parameter parsers shared by every backend; each assumes infer succeeded
 * and reads data only of host_inputs, so a device backend may call it too. */
ptq_status ptq_op_conv_params(ptq_ctx *ctx, const ptq_op_io *io, ptq_conv_params *p);
ptq_status ptq_op_gemm_params(ptq_ctx *ctx, const ptq_op_io *io, ptq_gemm_params *p);
/* A MatMul with a bias row (backend.h's matmul_bias) as one GEMM: *p with every batch's rows stacked in p->m, and
 * *ok = 1 where the shapes take it (weights one [K, N] matrix, bias N long, a untransposed, some rows). */
ptq_status ptq_op_matmul_bias_params(ptq_ctx *ctx, const ptq_op_io *io, const ptq_tensor *bias, ptq_gemm_params *p,
                                     int *ok);
/* MaxPool / AveragePool: float32 input 0, no Indices output, window into *p. */
ptq_status ptq_op_pool_params(ptq_ctx *ctx, const ptq_op_io *io, ptq_pool_params *p);
/* Broadcast layout of two inputs to out's shape (numpy rules). */
ptq_status ptq_op_bcast(ptq_ctx *ctx, const ptq_tensor *a, const ptq_tensor *b, ptq_bcast *bc);
/* Float activations (input 0 float32): the ptq_unop and its alpha/beta, Clip's
 * min/max from attributes before opset 11, from scalar inputs 1, 2 after;
 * Gelu's approximate attribute picks PTQ_UN_GELU or PTQ_UN_GELU_TANH. */
ptq_status ptq_op_unary_params(ptq_ctx *ctx, const ptq_op_io *io, ptq_unop *op, float *alpha, float *beta);
/* Softmax: input 0 viewed as [outer, len, inner], normalised over len. */
ptq_status ptq_op_softmax_view(ptq_ctx *ctx, const ptq_op_io *io, int64_t *outer, int64_t *len, int64_t *inner);
/* LayerNormalization (float32 X, scale, optional bias over the normalized
 * axes, at most 3 outputs): X viewed as [rows, cols] split at *axis (made
 * non-negative), and the epsilon attribute. */
ptq_status ptq_op_layernorm_view(ptq_ctx *ctx, const ptq_op_io *io, int *axis, int64_t *rows, int64_t *cols,
                                 float *eps);
/* Transpose: perm [input 0's rank], the attribute or the reversed dims. */
ptq_status ptq_op_transpose_perm(ptq_ctx *ctx, const ptq_op_io *io, int64_t *perm);
/* Concat: the axis in 0..rank-1. */
ptq_status ptq_op_concat_axis(ptq_ctx *ctx, const ptq_op_io *io, int *axis);
/* Dropout: fails unless it acts as inference (training_mode false or ratio
 * 0); *has_mask: the optional mask output 1 is named. */
ptq_status ptq_op_dropout_check(ptq_ctx *ctx, const ptq_op_io *io, int *has_mask);
/* ReduceMean: reduced [PTQ_MAX_DIMS], reduced[d] = 1 for each of input 0's
 * axes the node averages over (the axes attribute before opset 18, input 1
 * from 18, all axes when none are given); *noop = 1 when it passes the
 * input through (noop_with_empty_axes with no axes). */
ptq_status ptq_op_reduce_axes(ptq_ctx *ctx, const ptq_op_io *io, unsigned char *reduced, int *noop);
/* Split: the axis in 0..rank-1 and sizes [io->n_out], each output's length
 * along it (the split attribute or input, else num_outputs or equal parts). */
#define PTQ_SPLIT_MAX_OUTPUTS 1024
ptq_status ptq_op_split_plan(ptq_ctx *ctx, const ptq_op_io *io, int *axis, int64_t *sizes);
/* Gather: *axis in 0..rank-1 and, unless idx_data is NULL, at [the indices'
 * count]: the indices (idx_data, io->in[1]'s values on the host, int32 or
 * int64) each checked against the axis's length and made non-negative. */
ptq_status ptq_op_gather_plan(ptq_ctx *ctx, const ptq_op_io *io, const void *idx_data, int *axis, int64_t *at);
/* ScatterND's and ScatterElements' reduction attribute (from opset 16: none, add, mul; max and min from 18; none
 * before 16) and, where there is one, the kind of data (input 0) it computes in. */
ptq_status ptq_op_scatter_reduction(ptq_ctx *ctx, const ptq_op_io *io, ptq_scatter_reduction *red,
                                    ptq_cast_kind *kind);
/* Slice: start, step and out_dims [PTQ_MAX_DIMS], per axis of input 0 where
 * the output starts, its stride in elements and its length (axes the node
 * does not name: 0, 1 and the whole length), from the attributes before
 * opset 10, the host inputs 1-4 from 10. */
ptq_status ptq_op_slice_plan(ptq_ctx *ctx, const ptq_op_io *io, int64_t *start, int64_t *step, int64_t *out_dims);
/* Where: *shape gets the output's dtype and dims (bool condition, X and Y
 * broadcast together); per_input [3] (or NULL): each input's layout in that
 * shape, its strides in a_stride. */
ptq_status ptq_op_where_layout(ptq_ctx *ctx, const ptq_op_io *io, ptq_tensor *shape, ptq_bcast *per_input);
/* Expand: input 0 broadcast with the host shape input 1 (both ways, as
 * numpy's x * ones(shape)); the output's dims and input 0's strides in *bc. */
ptq_status ptq_op_expand_layout(ptq_ctx *ctx, const ptq_op_io *io, ptq_bcast *bc);
/* BatchNormalization: the inference form, X [N, C, ...] and scale, B, mean,
 * var [C], all float32, without training mode or its outputs. */
ptq_status ptq_op_batchnorm_check(ptq_ctx *ctx, const ptq_op_io *io);

#endif
