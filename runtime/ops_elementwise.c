/* Add, Sub, Mul, Div with numpy broadcasting (and opset < 7 broadcast/axis)
 * plus ptq_op_bcast, the layout every backend uses. float32 runs
 * kernels/{ref,cpu}/binary.c; float64, int32, int64, uint8 a host loop here.
 * Covered by tests/test_ops_shape.c and the ONNX conformance run. */
#include <stdint.h>
#include <string.h>

#include "runtime/op_util.h"

/* numpy broadcasting of a [a_dims] with b [b_dims], right-aligned; 0 if
 * they do not fit, -1 if an input's or the output's element count passes
 * int64 (dims come from files). */
static int bcast_layout(int a_ndim, const int64_t *a_dims, int b_ndim, const int64_t *b_dims, ptq_bcast *bc)
{
    int nd = a_ndim > b_ndim ? a_ndim : b_ndim;
    if (nd > PTQ_MAX_DIMS)
        return 0;
    int64_t sa = 1, sb = 1, so = 1;
    for (int d = nd - 1; d >= 0; d--) {
        int64_t da = d - (nd - a_ndim) >= 0 ? a_dims[d - (nd - a_ndim)] : 1;
        int64_t db = d - (nd - b_ndim) >= 0 ? b_dims[d - (nd - b_ndim)] : 1;
        if (da != db && da != 1 && db != 1)
            return 0;
        bc->out_dims[d] = da == 1 ? db : da;
        bc->a_stride[d] = da == 1 ? 0 : sa;
        bc->b_stride[d] = db == 1 ? 0 : sb;
        const int64_t dout = bc->out_dims[d];
        if ((da > 0 && sa > INT64_MAX / da) || (db > 0 && sb > INT64_MAX / db) || (dout > 0 && so > INT64_MAX / dout))
            return -1;
        sa *= da;
        sb *= db;
        so *= dout;
    }
    bc->ndim = nd;
    return 1;
}

ptq_status ptq_op_bcast(ptq_ctx *ctx, const ptq_tensor *a, const ptq_tensor *b, ptq_bcast *bc)
{
    const int fit = bcast_layout(a->ndim, a->dims, b->ndim, b->dims, bc);
    if (fit > 0)
        return PTQ_OK;
    char sa[96], sb[96];
    return ptq_fail(ctx, PTQ_ERR_SHAPE, fit < 0 ? "shapes %s and %s hold more than 2^63 elements"
                                                : "cannot broadcast %s with %s",
                    ptq_dims_str(a->dims, a->ndim, sa, sizeof sa), ptq_dims_str(b->dims, b->ndim, sb, sizeof sb));
}

/* The node's layout. Opset < 7 broadcasts B only with broadcast=1, its dims
 * placed from `axis` on (trailing by default), so they are padded with
 * trailing 1s before the numpy rule applies. */
static ptq_status binary_layout(ptq_ctx *ctx, const ptq_op_io *io, ptq_bcast *bc)
{
    const ptq_tensor *a = io->in[0], *b = io->in[1];
    int64_t b_dims[PTQ_MAX_DIMS];
    int b_ndim = b->ndim;
    char sa[96], sb[96];
    memcpy(b_dims, b->dims, sizeof b_dims);
    if (io->graph->opset < 7) {
        int same = a->ndim == b->ndim && memcmp(a->dims, b->dims, (size_t)a->ndim * sizeof a->dims[0]) == 0;
        const ptq_attr *axis = ptq_node_attr(io->node, "axis");
        if (!ptq_node_attr_int(io->node, "broadcast", 0) && !same)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "shapes %s and %s differ and broadcast is 0",
                               ptq_dims_str(a->dims, a->ndim, sa, sizeof sa),
                               ptq_dims_str(b->dims, b->ndim, sb, sizeof sb));
        if (axis && ptq_node_attr_int(io->node, "broadcast", 0)) {
            int64_t ax = axis->i < 0 ? axis->i + a->ndim : axis->i;
            if (ax < 0 || ax + b->ndim > a->ndim)
                return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %lld does not place B %s inside A %s",
                                   (long long)axis->i, ptq_dims_str(b->dims, b->ndim, sb, sizeof sb),
                                   ptq_dims_str(a->dims, a->ndim, sa, sizeof sa));
            for (int d = b->ndim; d < a->ndim - ax; d++)
                b_dims[d] = 1;
            b_ndim = (int)(a->ndim - ax);
        }
    }
    if (bcast_layout(a->ndim, a->dims, b_ndim, b_dims, bc) <= 0)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "cannot broadcast input 0 (%s) with input 1 (%s)",
                           ptq_dims_str(a->dims, a->ndim, sa, sizeof sa),
                           ptq_dims_str(b->dims, b->ndim, sb, sizeof sb));
    return PTQ_OK;
}

static ptq_binop binop_of(const ptq_op_io *io)
{
    switch (ptq_op_of(io)->traits->id) {
    case PTQ_OP_SUB: return PTQ_BIN_SUB;
    case PTQ_OP_MUL: return PTQ_BIN_MUL;
    case PTQ_OP_DIV: return PTQ_BIN_DIV;
    default: return PTQ_BIN_ADD;
    }
}

static ptq_status binary_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_status st = PTQ_OK;
    ptq_bcast bc;
    if ((st = ptq_op_need_input(ctx, io, 0)) != PTQ_OK || (st = ptq_op_need_input(ctx, io, 1)) != PTQ_OK)
        return st;
    ptq_dtype dt = io->in[0]->dtype;
    if (io->in[1]->dtype != dt)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "inputs are %s and %s; they must have one dtype",
                           ptq_dtype_name(dt), ptq_dtype_name(io->in[1]->dtype));
    if (dt != PTQ_DT_FLOAT && dt != PTQ_DT_DOUBLE && dt != PTQ_DT_INT32 && dt != PTQ_DT_INT64 && dt != PTQ_DT_UINT8)
        return ptq_op_unsupported(ctx, io, "dtype %s; supported: float32, float64, int32, int64, uint8",
                                  ptq_dtype_name(dt));
    if ((st = binary_layout(ctx, io, &bc)) != PTQ_OK)
        return st;
    io->out[0]->dtype = dt;
    io->out[0]->ndim = bc.ndim;
    memcpy(io->out[0]->dims, bc.out_dims, (size_t)bc.ndim * sizeof bc.out_dims[0]);
    return PTQ_OK;
}

/* Integer ops wrap as two's complement (computed in the unsigned type U);
 * Div truncates toward zero and reports division by zero with 0. */
#define DEFINE_INT_BINOP(NAME, T, U, IS_SIGNED)                       \
    static int NAME(ptq_binop op, T a, T b, T *y)                     \
    {                                                                 \
        switch (op) {                                                 \
        case PTQ_BIN_ADD: *y = (T)((U)a + (U)b); break;               \
        case PTQ_BIN_SUB: *y = (T)((U)a - (U)b); break;               \
        case PTQ_BIN_MUL: *y = (T)((U)a * (U)b); break;               \
        case PTQ_BIN_DIV:                                             \
            if (b == 0)                                               \
                return 0;                                             \
            *y = (IS_SIGNED && b == (T)-1) ? (T)(0 - (U)a) : (T)(a / b); \
            break;                                                    \
        }                                                             \
        return 1;                                                     \
    }
DEFINE_INT_BINOP(binop_i32, int32_t, uint32_t, 1)
DEFINE_INT_BINOP(binop_i64, int64_t, uint64_t, 1)
DEFINE_INT_BINOP(binop_u8, uint8_t, uint8_t, 0)

static double binop_f64(ptq_binop op, double a, double b)
{
    switch (op) {
    case PTQ_BIN_ADD: return a + b;
    case PTQ_BIN_SUB: return a - b;
    case PTQ_BIN_MUL: return a * b;
    case PTQ_BIN_DIV: return a / b;
    }
    return 0.0;
}

#define HOST_INT_LOOP(T, FN)                                                                       \
    do {                                                                                           \
        const T *a = io->in[0]->data, *b = io->in[1]->data;                                        \
        T *y = io->out[0]->data;                                                                   \
        for (int64_t i = 0; i < n; i++) {                                                          \
            int64_t ia, ib;                                                                        \
            ptq_bcast_offsets(bc, i, &ia, &ib);                                                   \
            if (!FN(op, a[ia], b[ib], &y[i]))                                                      \
                return ptq_op_fail(ctx, io, PTQ_ERR_DATA, "integer division by zero at output element %lld", \
                                   (long long)i);                                                  \
        }                                                                                          \
    } while (0)

/* Non-float32 dtypes on the host: y: [bc->out_dims]; a, b as bc's strides say. */
static ptq_status binary_run_host(ptq_ctx *ctx, const ptq_op_io *io, ptq_binop op, const ptq_bcast *bc)
{
    int64_t n = ptq_dims_prod(bc->out_dims, 0, bc->ndim);
    switch (io->in[0]->dtype) {
    case PTQ_DT_INT32: HOST_INT_LOOP(int32_t, binop_i32); break;
    case PTQ_DT_INT64: HOST_INT_LOOP(int64_t, binop_i64); break;
    case PTQ_DT_UINT8: HOST_INT_LOOP(uint8_t, binop_u8); break;
    default: {
        const double *a = io->in[0]->data, *b = io->in[1]->data;
        double *y = io->out[0]->data;
        for (int64_t i = 0; i < n; i++) {
            int64_t ia, ib;
            ptq_bcast_offsets(bc, i, &ia, &ib);
            y[i] = binop_f64(op, a[ia], b[ib]);
        }
        break;
    }
    }
    return PTQ_OK;
}

static ptq_status binary_run(ptq_ctx *ctx, const ptq_op_io *io, int fast)
{
    ptq_bcast bc;
    ptq_status st = binary_layout(ctx, io, &bc);
    if (st != PTQ_OK)
        return st;
    ptq_binop op = binop_of(io);
    if (io->in[0]->dtype != PTQ_DT_FLOAT)
        return binary_run_host(ctx, io, op, &bc);
    if (fast)
        ptq_k_binary_cpu(op, &bc, io->in[0]->data, io->in[1]->data, io->out[0]->data);
    else
        ptq_k_binary_ref(op, &bc, io->in[0]->data, io->in[1]->data, io->out[0]->data);
    return PTQ_OK;
}

static ptq_status binary_run_ref(ptq_ctx *ctx, const ptq_op_io *io)
{
    return binary_run(ctx, io, 0);
}

static ptq_status binary_run_cpu(ptq_ctx *ctx, const ptq_op_io *io)
{
    return binary_run(ctx, io, 1);
}

const ptq_op_def ptq_op_Add = {PTQ_OP_TRAITS(ADD), 1, 0, binary_infer, binary_run_ref, binary_run_cpu, 0, 0};
const ptq_op_def ptq_op_Sub = {PTQ_OP_TRAITS(SUB), 1, 0, binary_infer, binary_run_ref, binary_run_cpu, 0, 0};
const ptq_op_def ptq_op_Mul = {PTQ_OP_TRAITS(MUL), 1, 0, binary_infer, binary_run_ref, binary_run_cpu, 0, 0};
const ptq_op_def ptq_op_Div = {PTQ_OP_TRAITS(DIV), 1, 0, binary_infer, binary_run_ref, binary_run_cpu, 0, 0};
