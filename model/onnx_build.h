/* Internal to model/: builds an ONNX ModelProto from scratch (nodes,
 * float/int64 initializers, typed graph inputs and outputs, metadata), the
 * form the Keras importer (model/keras.c) gives its graph so the ONNX loader
 * and the Q/DQ exporter read it like any ONNX file. model/onnx_build.c;
 * covered by tests/test_keras.c and tests/keras_test.py (onnxruntime runs it). */
#ifndef PTQ_MODEL_ONNX_BUILD_H
#define PTQ_MODEL_ONNX_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "ptq/buf.h"
#include "ptq/graph.h"

/* One node attribute: INT (i), FLOAT (f), STRING (s) or INTS (ints[n]). */
typedef struct ptq_ob_attr {
    const char *name;
    ptq_attr_type type;
    int64_t i;
    float f;
    const char *s;
    int n;
    const int64_t *ints;
} ptq_ob_attr;

/* Zero-initialise. Every put sticks its out-of-memory in the buffers' failed
 * flag; ptq_ob_finish reports it once. */
typedef struct ptq_onnx_builder {
    ptq_buf graph; /* GraphProto fields so far */
    ptq_buf meta;  /* ModelProto metadata_props so far */
} ptq_onnx_builder;

void ptq_ob_node(ptq_onnx_builder *b, const char *op_type, const char *name, int n_in, const char *const *inputs,
                 int n_out, const char *const *outputs, int n_attrs, const ptq_ob_attr *attrs);
/* An initializer of onnx data_type (1 FLOAT, 7 INT64), dims [ndim], raw
 * little-endian row-major bytes. */
void ptq_ob_initializer(ptq_onnx_builder *b, const char *name, int data_type, int ndim, const int64_t *dims,
                        const void *raw, size_t n_bytes);
/* A float32 graph input (is_output 0) or output (1); a dim < 0 is written
 * as the dim_param "N" for axis 0 and "d<axis>" for the others. */
void ptq_ob_value(ptq_onnx_builder *b, int is_output, const char *name, int ndim, const int64_t *dims);
void ptq_ob_meta(ptq_onnx_builder *b, const char *key, const char *value);
/* The ModelProto (IR version 7, the default opset `opset`), malloc'd into
 * *bytes; frees the builder's buffers whatever happens. */
ptq_status ptq_ob_finish(ptq_ctx *ctx, ptq_onnx_builder *b, const char *graph_name, const char *producer,
                         int64_t opset, void **bytes, size_t *n_bytes);
void ptq_ob_free(ptq_onnx_builder *b);

#endif
