/* An ONNX ModelProto written from scratch with model/pb.h's field writers
 * (field numbers: onnx.proto, summarised in REFERENCE.md). Used by the Keras
 * importer; covered by tests/test_keras.c and tests/keras_test.py. */
#include <stdio.h>
#include <string.h>

#include "model/onnx_build.h"
#include "model/pb.h"

/* b gets field num holding the bytes of sub, which is freed. */
static void put_sub(ptq_buf *b, uint32_t num, ptq_buf *sub)
{
    if (sub->failed)
        b->failed = 1;
    ptq_pb_put_len(b, num, sub->data ? sub->data : "", sub->n_bytes);
    ptq_buf_free(sub);
}

static void put_attr(ptq_buf *node, const ptq_ob_attr *a)
{
    ptq_buf ab = {0};
    ptq_pb_put_str(&ab, 1, a->name);
    switch (a->type) {
    case PTQ_ATTR_FLOAT: {
        uint32_t bits;
        memcpy(&bits, &a->f, 4);
        uint8_t le[4] = {(uint8_t)bits, (uint8_t)(bits >> 8), (uint8_t)(bits >> 16), (uint8_t)(bits >> 24)};
        ptq_pb_put_key(&ab, 2, PTQ_PB_I32);
        ptq_buf_put(&ab, le, 4);
        break;
    }
    case PTQ_ATTR_INT: ptq_pb_put_int(&ab, 3, a->i); break;
    case PTQ_ATTR_STRING: ptq_pb_put_str(&ab, 4, a->s); break;
    case PTQ_ATTR_INTS:
        for (int k = 0; k < a->n; k++)
            ptq_pb_put_int(&ab, 8, a->ints[k]);
        break;
    default: ab.failed = 1; break; /* the importer writes no other kind */
    }
    ptq_pb_put_int(&ab, 20, a->type);
    put_sub(node, 5, &ab);
}

void ptq_ob_node(ptq_onnx_builder *b, const char *op_type, const char *name, int n_in, const char *const *inputs,
                 int n_out, const char *const *outputs, int n_attrs, const ptq_ob_attr *attrs)
{
    ptq_buf nb = {0};
    for (int i = 0; i < n_in; i++)
        ptq_pb_put_str(&nb, 1, inputs[i]);
    for (int i = 0; i < n_out; i++)
        ptq_pb_put_str(&nb, 2, outputs[i]);
    ptq_pb_put_str(&nb, 3, name);
    ptq_pb_put_str(&nb, 4, op_type);
    for (int i = 0; i < n_attrs; i++)
        put_attr(&nb, &attrs[i]);
    put_sub(&b->graph, 1, &nb);
}

void ptq_ob_initializer(ptq_onnx_builder *b, const char *name, int data_type, int ndim, const int64_t *dims,
                        const void *raw, size_t n_bytes)
{
    ptq_buf tb = {0};
    for (int d = 0; d < ndim; d++)
        ptq_pb_put_int(&tb, 1, dims[d]);
    ptq_pb_put_int(&tb, 2, data_type);
    ptq_pb_put_str(&tb, 8, name);
    ptq_pb_put_len(&tb, 9, n_bytes ? raw : "", n_bytes);
    put_sub(&b->graph, 5, &tb);
}

void ptq_ob_value(ptq_onnx_builder *b, int is_output, const char *name, int ndim, const int64_t *dims)
{
    ptq_buf shape = {0}, ttype = {0}, type = {0}, vi = {0};
    for (int d = 0; d < ndim; d++) {
        ptq_buf dim = {0};
        if (dims[d] >= 0) {
            ptq_pb_put_int(&dim, 1, dims[d]);
        } else {
            char param[16] = "N";
            if (d)
                snprintf(param, sizeof param, "d%d", d);
            ptq_pb_put_str(&dim, 2, param);
        }
        put_sub(&shape, 1, &dim);
    }
    ptq_pb_put_int(&ttype, 1, 1); /* FLOAT */
    put_sub(&ttype, 2, &shape);
    put_sub(&type, 1, &ttype);
    ptq_pb_put_str(&vi, 1, name);
    put_sub(&vi, 2, &type);
    put_sub(&b->graph, is_output ? 12 : 11, &vi);
}

void ptq_ob_meta(ptq_onnx_builder *b, const char *key, const char *value)
{
    ptq_buf e = {0};
    ptq_pb_put_str(&e, 1, key);
    ptq_pb_put_str(&e, 2, value);
    put_sub(&b->meta, 14, &e);
}

void ptq_ob_free(ptq_onnx_builder *b)
{
    ptq_buf_free(&b->graph);
    ptq_buf_free(&b->meta);
}

ptq_status ptq_ob_finish(ptq_ctx *ctx, ptq_onnx_builder *b, const char *graph_name, const char *producer,
                         int64_t opset, void **bytes, size_t *n_bytes)
{
    ptq_buf m = {0}, op = {0};
    *bytes = NULL;
    *n_bytes = 0;
    ptq_pb_put_str(&b->graph, 2, graph_name);
    ptq_pb_put_int(&m, 1, 7); /* ir_version */
    ptq_pb_put_str(&m, 2, producer);
    put_sub(&m, 7, &b->graph);
    ptq_pb_put_str(&op, 1, "");
    ptq_pb_put_int(&op, 2, opset);
    put_sub(&m, 8, &op);
    if (b->meta.failed)
        m.failed = 1;
    ptq_buf_put(&m, b->meta.data ? b->meta.data : "", b->meta.n_bytes);
    ptq_ob_free(b);
    size_t n = m.n_bytes;
    char *data = ptq_buf_take(&m);
    if (!data)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory writing the ONNX form of %s", graph_name);
    *bytes = data;
    *n_bytes = n;
    return PTQ_OK;
}
