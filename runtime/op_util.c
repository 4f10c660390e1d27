/* Node-naming failures and small checks shared by runtime/ops_*.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/op_util.h"

static ptq_status op_fail_v(ptq_ctx *ctx, const char *file, int line, const ptq_op_io *io, ptq_status code,
                            const char *fmt, va_list ap)
{
    char what[768];
    vsnprintf(what, sizeof what, fmt, ap);
    const ptq_node *n = io->node;
    const char *domain = n->domain && n->domain[0] ? n->domain : "ai.onnx";
    long long opset = io->graph ? (long long)io->graph->opset : -1;
    return ptq_fail_at(ctx, file, line, code, "node '%s' (%s, domain %s, opset %lld): %s", n->name, n->op_type,
                       domain, opset, what);
}

ptq_status ptq_op_unsupported_at(ptq_ctx *ctx, const char *file, int line, const ptq_op_io *io, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ptq_status st = op_fail_v(ctx, file, line, io, PTQ_ERR_UNSUPPORTED, fmt, ap);
    va_end(ap);
    return st;
}

ptq_status ptq_op_fail_at(ptq_ctx *ctx, const char *file, int line, const ptq_op_io *io, ptq_status code,
                          const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ptq_status st = op_fail_v(ctx, file, line, io, code, fmt, ap);
    va_end(ap);
    return st;
}

ptq_status ptq_op_need_input(ptq_ctx *ctx, const ptq_op_io *io, int i)
{
    if (i >= io->n_in || !io->in[i])
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input %d is missing", i);
    return PTQ_OK;
}

ptq_status ptq_op_need_float(ptq_ctx *ctx, const ptq_op_io *io, int i)
{
    ptq_status st = ptq_op_need_input(ctx, io, i);
    if (st != PTQ_OK)
        return st;
    if (io->in[i]->dtype != PTQ_DT_FLOAT)
        return ptq_op_unsupported(ctx, io, "input %d is %s; only float32 is supported", i,
                                  ptq_dtype_name(io->in[i]->dtype));
    return PTQ_OK;
}

ptq_status ptq_op_need_sized(ptq_ctx *ctx, const ptq_op_io *io, int i)
{
    ptq_status st = ptq_op_need_input(ctx, io, i);
    if (st == PTQ_OK && ptq_dtype_size(io->in[i]->dtype) == 0)
        return ptq_op_unsupported(ctx, io, "input %d is %s; only fixed-size dtypes are supported", i,
                                  ptq_dtype_name(io->in[i]->dtype));
    return st;
}

void ptq_op_same_shape(ptq_tensor *dst, const ptq_tensor *src)
{
    dst->dtype = src->dtype;
    dst->ndim = src->ndim;
    for (int d = 0; d < src->ndim; d++)
        dst->dims[d] = src->dims[d];
}

ptq_status ptq_op_frame_reserve(ptq_ctx *ctx, ptq_op_frame *f, int n_in, int n_out)
{
    const size_t n_i = n_in > 0 ? (size_t)n_in : 0, n_o = n_out > 0 ? (size_t)n_out : 0;
    const size_t views = (n_i + n_o) * sizeof(ptq_tensor), ptrs = (n_i + n_o) * sizeof(void *);
    if (!f->block || views + ptrs > f->block_bytes) {
        size_t want = (views + ptrs) * 2 + sizeof(ptq_tensor);
        void *p = realloc(f->block, want);
        if (!p)
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for a node of %d inputs and %d outputs", n_in, n_out);
        f->block = p;
        f->block_bytes = want;
    }
    memset(f->block, 0, views + ptrs);
    f->in_views = f->block;
    f->out_views = f->in_views + n_i;
    f->io.in = (const ptq_tensor **)(void *)(f->out_views + n_o);
    f->io.out = (ptq_tensor **)(void *)(f->io.in + n_i);
    f->io.n_in = n_in;
    f->io.n_out = n_out;
    for (size_t i = 0; i < n_o; i++)
        f->io.out[i] = &f->out_views[i];
    return PTQ_OK;
}

static uint64_t numel_u64(const ptq_tensor *t)
{
    uint64_t n = 1;
    for (int d = 0; t && d < t->ndim; d++)
        if (t->dims[d] < 0 || __builtin_mul_overflow(n, (uint64_t)t->dims[d], &n))
            return UINT64_MAX;
    return t ? n : 0;
}

uint64_t ptq_op_macs(const ptq_op_io *io)
{
    const char *op = io->node->op_type;
    const ptq_tensor *a = io->n_in > 0 ? io->in[0] : NULL, *w = io->n_in > 1 ? io->in[1] : NULL;
    const ptq_tensor *y = io->n_out > 0 ? io->out[0] : NULL;
    if (!a || !w || !y)
        return 0;
    uint64_t rows = 0, per = 0; /* rows multiply-adds of per each */
    if (!strcmp(op, "Conv") || !strcmp(op, "ConvTranspose")) {
        if (w->ndim < 1 || w->dims[0] <= 0)
            return 0;
        /* a Conv's C_in/group x kernel for each output, a ConvTranspose's C_out/group x kernel for each input */
        per = numel_u64(w) / (uint64_t)w->dims[0];
        rows = !strcmp(op, "Conv") ? numel_u64(y) : numel_u64(a);
    } else if (!strcmp(op, "Gemm") && a->ndim == 2) {
        const int64_t k = ptq_node_attr_int(io->node, "transA", 0) ? a->dims[0] : a->dims[1];
        per = k > 0 ? (uint64_t)k : 0;
        rows = numel_u64(y);
    } else if (!strcmp(op, "MatMul") && a->ndim >= 1) {
        const int64_t k = a->dims[a->ndim - 1];
        per = k > 0 ? (uint64_t)k : 0;
        rows = numel_u64(y);
    } else if (!strcmp(op, "Einsum")) {
        rows = ptq_op_einsum_work(io); /* one multiply-add per input at every label's index */
        per = (uint64_t)io->n_in;
    } else if ((!strcmp(op, "LSTM") || !strcmp(op, "GRU") || !strcmp(op, "RNN")) && a->ndim == 3 && a->dims[2] > 0) {
        const ptq_tensor *r = io->n_in > 2 ? io->in[2] : NULL; /* each step of each sample: X W^T and H R^T */
        rows = numel_u64(a) / (uint64_t)a->dims[2];
        per = numel_u64(w) + (r ? numel_u64(r) : 0);
    }
    uint64_t macs;
    return __builtin_mul_overflow(rows, per, &macs) ? UINT64_MAX : macs;
}

void ptq_op_frame_free(ptq_op_frame *f)
{
    if (!f)
        return;
    free(f->block);
    memset(f, 0, sizeof *f);
}

int ptq_op_cast_kind(ptq_dtype dt, ptq_cast_kind *k)
{
    switch (dt) {
    case PTQ_DT_FLOAT: *k = PTQ_CAST_F32; return 1;
    case PTQ_DT_DOUBLE: *k = PTQ_CAST_F64; return 1;
    case PTQ_DT_INT8: *k = PTQ_CAST_I8; return 1;
    case PTQ_DT_UINT8: *k = PTQ_CAST_U8; return 1;
    case PTQ_DT_INT16: *k = PTQ_CAST_I16; return 1;
    case PTQ_DT_UINT16: *k = PTQ_CAST_U16; return 1;
    case PTQ_DT_INT32: *k = PTQ_CAST_I32; return 1;
    case PTQ_DT_UINT32: *k = PTQ_CAST_U32; return 1;
    case PTQ_DT_INT64: *k = PTQ_CAST_I64; return 1;
    case PTQ_DT_UINT64: *k = PTQ_CAST_U64; return 1;
    case PTQ_DT_BOOL: *k = PTQ_CAST_BOOL; return 1;
    default: return 0;
    }
}

ptq_status ptq_op_axes(ptq_ctx *ctx, const ptq_op_io *io, int64_t input_opset, const int64_t **axes, int64_t *n)
{
    *axes = NULL;
    *n = -1;
    if (io->graph->opset < input_opset) {
        const ptq_attr *a = ptq_node_attr(io->node, "axes");
        if (a && a->type == PTQ_ATTR_INTS) {
            *axes = a->ints;
            *n = a->n;
        }
    } else if (io->n_in > 1 && io->in[1]) {
        const ptq_tensor *t = io->in[1];
        if (t->dtype != PTQ_DT_INT64 || t->ndim != 1)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "axes must be 1-D int64, got %s of rank %d",
                               ptq_dtype_name(t->dtype), t->ndim);
        *axes = t->data;
        *n = t->dims[0];
    }
    return PTQ_OK;
}

ptq_status ptq_op_int_list(ptq_ctx *ctx, const ptq_op_io *io, int i, int64_t *v, int64_t *n)
{
    *n = -1;
    if (i >= io->n_in || !io->in[i])
        return PTQ_OK;
    const ptq_tensor *t = io->in[i];
    if ((t->dtype != PTQ_DT_INT64 && t->dtype != PTQ_DT_INT32) || t->ndim != 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "input %d must be 1-D int32 or int64, got %s of rank %d", i,
                           ptq_dtype_name(t->dtype), t->ndim);
    if (t->dims[0] > PTQ_MAX_DIMS)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input %d has %lld entries, more than a rank-%d tensor's axes", i,
                           (long long)t->dims[0], PTQ_MAX_DIMS);
    *n = t->dims[0];
    for (int64_t k = 0; k < *n; k++)
        v[k] = t->dtype == PTQ_DT_INT64 ? ((const int64_t *)t->data)[k] : ((const int32_t *)t->data)[k];
    return PTQ_OK;
}

int64_t ptq_op_int_scalar(const ptq_tensor *t)
{
    switch (t->dtype) {
    case PTQ_DT_INT8: return *(const int8_t *)t->data;
    case PTQ_DT_UINT8: return *(const uint8_t *)t->data;
    case PTQ_DT_INT16: return *(const int16_t *)t->data;
    case PTQ_DT_INT32: return *(const int32_t *)t->data;
    default: return *(const int64_t *)t->data;
    }
}

const char *ptq_op_attr_type_name(ptq_attr_type t)
{
    static const char *const names[] = {"UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR",
                                        "GRAPH",     "FLOATS", "INTS", "STRINGS"};
    return (size_t)t < sizeof names / sizeof names[0] ? names[t] : "UNDEFINED";
}
