/* QuantizeLinear and DequantizeLinear (opsets 10, 13 with axis, 19 with saturate and FP8, 21 with block_size and
 * 16-bit codes): per tensor, per axis and blocked, float32 on the float side; int8, uint8, int16, uint16, FLOAT8E4M3FN
 * and FLOAT8E5M2 codes (and int32 into DequantizeLinear), so that a Q/DQ model (ptq's own export, onnxruntime's
 * quantize_static, ModelOpt) runs. Through ptq_k_quantize_linear_ref / ptq_k_dequantize_linear_ref
 * (kernels/ref/qdq.c), their CPU path too; the CUDA backend hands them to the CPU. Covered by tests/ops_qdq_test.py
 * (onnxruntime) and the ONNX conformance run. */
#include "runtime/op_util.h"

/* The code kind of dtype dt; 0 when the ops take none of it (4-bit, FNUZ, float types). */
static int qdq_kind_of(ptq_dtype dt, ptq_qdq_kind *kind)
{
    switch (dt) {
    case PTQ_DT_INT8: *kind = PTQ_QDQ_INT8; return 1;
    case PTQ_DT_UINT8: *kind = PTQ_QDQ_UINT8; return 1;
    case PTQ_DT_INT16: *kind = PTQ_QDQ_INT16; return 1;
    case PTQ_DT_UINT16: *kind = PTQ_QDQ_UINT16; return 1;
    case PTQ_DT_INT32: *kind = PTQ_QDQ_INT32; return 1;
    case PTQ_DT_FLOAT8E4M3FN: *kind = PTQ_QDQ_E4M3FN; return 1;
    case PTQ_DT_FLOAT8E5M2: *kind = PTQ_QDQ_E5M2; return 1;
    default: return 0;
    }
}

/* Int attribute name of io's node (dflt when absent); anything but an int is refused naming the node. */
static ptq_status attr_int(ptq_ctx *ctx, const ptq_op_io *io, const char *name, int64_t dflt, int64_t *v)
{
    const ptq_attr *a = ptq_node_attr(io->node, name);
    if (a && a->type != PTQ_ATTR_INT)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the %s attribute is %s, not an INT", name,
                           ptq_op_attr_type_name(a->type));
    *v = a ? a->i : dflt;
    return PTQ_OK;
}

/* The view of io's input 0 against its scale (input 1) and zero point (input 2, optional), and the codes' kind:
 * for QuantizeLinear the zero point's dtype, else output_dtype (opset 21), else uint8; for DequantizeLinear input
 * 0's. Every dtype, shape and attribute checked naming the node. */
static ptq_status qdq_plan(ptq_ctx *ctx, const ptq_op_io *io, int quantize, ptq_qdq_kind *kind, ptq_qdq_view *v,
                           int *saturate)
{
    PTQ_TRY_RET(ptq_op_need_input(ctx, io, 0));
    if (io->n_in < 2 || !io->in[1])
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input 1 (the scale) is missing");
    const ptq_tensor *x = io->in[0], *s = io->in[1];
    const ptq_tensor *zp = io->n_in > 2 ? io->in[2] : NULL;
    if (quantize)
        PTQ_TRY_RET(ptq_op_need_float(ctx, io, 0));
    else if (!qdq_kind_of(x->dtype, kind))
        return ptq_op_unsupported(ctx, io, "input 0 is %s; ptq dequantizes int8, uint8, int16, uint16, int32, "
                                  "FLOAT8E4M3FN and FLOAT8E5M2", ptq_dtype_name(x->dtype));
    if (s->dtype != PTQ_DT_FLOAT)
        return ptq_op_unsupported(ctx, io, "the scale (input 1) is %s; only float32 is supported",
                                  ptq_dtype_name(s->dtype));
    int64_t out_dt = 0, axis = 1, block = 0, sat = 1;
    if (quantize) {
        PTQ_TRY_RET(attr_int(ctx, io, "output_dtype", 0, &out_dt));
        PTQ_TRY_RET(attr_int(ctx, io, "saturate", 1, &sat));
        int64_t precision = 0;
        PTQ_TRY_RET(attr_int(ctx, io, "precision", 0, &precision));
        if (precision != 0 && precision != PTQ_DT_FLOAT)
            return ptq_op_unsupported(ctx, io, "precision %lld: only float32 (1) is supported", (long long)precision);
        if (sat != 0 && sat != 1)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "saturate %lld must be 0 or 1", (long long)sat);
        const ptq_dtype want = zp ? zp->dtype : out_dt ? (ptq_dtype)out_dt : PTQ_DT_UINT8;
        if (zp && out_dt && out_dt != (int64_t)zp->dtype)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "output_dtype %lld is not the zero point's dtype %s",
                               (long long)out_dt, ptq_dtype_name(zp->dtype));
        if (out_dt < 0 || out_dt > PTQ_DT_INT4 || !qdq_kind_of(want, kind) || *kind == PTQ_QDQ_INT32)
            return ptq_op_unsupported(ctx, io, "quantizing to %s (dtype %lld) is not supported: ptq quantizes to "
                                      "int8, uint8, int16, uint16, FLOAT8E4M3FN and FLOAT8E5M2",
                                      ptq_dtype_name(want), (long long)want);
    } else {
        PTQ_TRY_RET(attr_int(ctx, io, "output_dtype", 0, &out_dt));
        if (out_dt != 0 && out_dt != PTQ_DT_FLOAT)
            return ptq_op_unsupported(ctx, io, "output_dtype %lld: only float32 (1) is supported", (long long)out_dt);
        if (zp && zp->dtype != x->dtype)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the zero point is %s, input 0 %s: they must be alike",
                               ptq_dtype_name(zp->dtype), ptq_dtype_name(x->dtype));
    }
    *saturate = (int)sat;
    PTQ_TRY_RET(attr_int(ctx, io, "axis", 1, &axis));
    PTQ_TRY_RET(attr_int(ctx, io, "block_size", 0, &block));
    if (block < 0)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "block_size %lld must not be negative", (long long)block);
    const int64_t n_scale = ptq_tensor_numel(s);
    const int per_tensor = block == 0 && (s->ndim == 0 || (s->ndim == 1 && n_scale == 1));
    if (zp && !(per_tensor && zp->ndim <= 1 && ptq_tensor_numel(zp) == 1)) { /* [] beside [1] as onnxruntime */
        int same = zp->ndim == s->ndim;
        for (int d = 0; same && d < s->ndim; d++)
            same = zp->dims[d] == s->dims[d];
        if (!same) {
            char zs[96], ss[96];
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "the zero point's shape [%s] is not the scale's [%s]",
                               ptq_dims_str(zp->dims, zp->ndim, zs, sizeof zs),
                               ptq_dims_str(s->dims, s->ndim, ss, sizeof ss));
        }
    }
    *v = (ptq_qdq_view){1, ptq_tensor_numel(x), 1, 1, 0, 0, 0};
    if (per_tensor)
        return PTQ_OK; /* per tensor (a 1-element scale too, as onnxruntime takes it) */
    if (axis < -x->ndim || axis >= x->ndim)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %lld is out of range for input 0 of rank %d",
                           (long long)axis, x->ndim);
    const int a = (int)(axis < 0 ? axis + x->ndim : axis);
    v->outer = ptq_dims_prod(x->dims, 0, a);
    v->len = x->dims[a];
    v->inner = ptq_dims_prod(x->dims, a + 1, x->ndim);
    if (block == 0) {
        if (s->ndim != 1 || s->dims[0] != v->len)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "the scale has %lld elements (rank %d); per axis it takes "
                               "input 0's %lld along axis %d, per tensor one",
                               (long long)n_scale, s->ndim, (long long)v->len, a);
        v->s_len = 1;
        return PTQ_OK;
    }
    const int64_t n_blocks = v->len / block + (v->len % block != 0);
    int fits = s->ndim == x->ndim;
    for (int d = 0; fits && d < x->ndim; d++)
        fits = s->dims[d] == (d == a ? n_blocks : x->dims[d]);
    if (!fits) {
        char xs[96], ss[96];
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "block_size %lld along axis %d: the scale [%s] must be input 0's "
                           "shape [%s] with %lld blocks on that axis", (long long)block, a,
                           ptq_dims_str(s->dims, s->ndim, ss, sizeof ss),
                           ptq_dims_str(x->dims, x->ndim, xs, sizeof xs), (long long)n_blocks);
    }
    v->block = block;
    v->s_outer = n_blocks * v->inner;
    v->s_len = v->inner;
    v->s_inner = 1;
    return PTQ_OK;
}

static const ptq_dtype kind_dtype[] = {
    [PTQ_QDQ_INT8] = PTQ_DT_INT8,     [PTQ_QDQ_UINT8] = PTQ_DT_UINT8,         [PTQ_QDQ_INT16] = PTQ_DT_INT16,
    [PTQ_QDQ_UINT16] = PTQ_DT_UINT16, [PTQ_QDQ_INT32] = PTQ_DT_INT32,         [PTQ_QDQ_E4M3FN] = PTQ_DT_FLOAT8E4M3FN,
    [PTQ_QDQ_E5M2] = PTQ_DT_FLOAT8E5M2,
};

static ptq_status quantize_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_qdq_kind kind = PTQ_QDQ_UINT8;
    ptq_qdq_view v;
    int saturate = 1;
    PTQ_TRY_RET(qdq_plan(ctx, io, 1, &kind, &v, &saturate));
    ptq_op_same_shape(io->out[0], io->in[0]);
    io->out[0]->dtype = kind_dtype[kind];
    return PTQ_OK;
}

static ptq_status quantize_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_qdq_kind kind = PTQ_QDQ_UINT8;
    ptq_qdq_view v;
    int saturate = 1;
    PTQ_TRY_RET(qdq_plan(ctx, io, 1, &kind, &v, &saturate));
    const ptq_tensor *zp = io->n_in > 2 ? io->in[2] : NULL;
    ptq_k_quantize_linear_ref(kind, saturate, &v, io->in[0]->data, io->in[1]->data, zp ? zp->data : NULL,
                              io->out[0]->data);
    return PTQ_OK;
}

static ptq_status dequantize_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_qdq_kind kind = PTQ_QDQ_UINT8;
    ptq_qdq_view v;
    int saturate = 1;
    PTQ_TRY_RET(qdq_plan(ctx, io, 0, &kind, &v, &saturate));
    ptq_op_same_shape(io->out[0], io->in[0]);
    io->out[0]->dtype = PTQ_DT_FLOAT;
    return PTQ_OK;
}

static ptq_status dequantize_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_qdq_kind kind = PTQ_QDQ_UINT8;
    ptq_qdq_view v;
    int saturate = 1;
    PTQ_TRY_RET(qdq_plan(ctx, io, 0, &kind, &v, &saturate));
    const ptq_tensor *zp = io->n_in > 2 ? io->in[2] : NULL;
    ptq_k_dequantize_linear_ref(kind, &v, io->in[0]->data, io->in[1]->data, zp ? zp->data : NULL, io->out[0]->data);
    return PTQ_OK;
}

const ptq_op_def ptq_op_QuantizeLinear = {PTQ_OP_TRAITS(QUANTIZELINEAR), 10, 0, quantize_infer, quantize_run, NULL,
                                          0, 0};
const ptq_op_def ptq_op_DequantizeLinear = {PTQ_OP_TRAITS(DEQUANTIZELINEAR), 10, 0, dequantize_infer, dequantize_run,
                                            NULL, 0, 0};
