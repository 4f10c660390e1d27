/* Graph IR: named values (activations, inputs, initializers), nodes in
 * topological order, attributes. Loaded from ONNX by ptq_graph_load_onnx;
 * mirrors onnx.proto's GraphProto/NodeProto/AttributeProto closely enough
 * that a writer can round-trip it. Covered by tests/test_onnx_load.c. */
#ifndef PTQ_GRAPH_H
#define PTQ_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "ptq/export_api.h"
#include "ptq/status.h"
#include "ptq/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Attribute kinds, numbered as onnx AttributeProto.AttributeType. */
typedef enum ptq_attr_type {
    PTQ_ATTR_UNDEFINED = 0,
    PTQ_ATTR_FLOAT = 1,
    PTQ_ATTR_INT = 2,
    PTQ_ATTR_STRING = 3,
    PTQ_ATTR_TENSOR = 4,
    PTQ_ATTR_GRAPH = 5,
    PTQ_ATTR_FLOATS = 6,
    PTQ_ATTR_INTS = 7,
    PTQ_ATTR_STRINGS = 8
} ptq_attr_type;

typedef struct ptq_attr {
    const char *name;
    ptq_attr_type type;
    float f;
    int64_t i;
    const char *s; /* NUL-terminated copy; s_len excludes the NUL */
    size_t s_len;
    int64_t n;     /* element count of floats / ints / strings */
    const float *floats;
    const int64_t *ints;
    const char *const *strings;
    int tensor;    /* PTQ_ATTR_TENSOR: index into graph->values (a constant value) */
} ptq_attr;

enum {
    PTQ_VALUE_INPUT = 1u << 0,       /* a graph input fed by the caller */
    PTQ_VALUE_OUTPUT = 1u << 1,      /* a graph output */
    PTQ_VALUE_INITIALIZER = 1u << 2, /* constant data from the file */
    PTQ_VALUE_CONSTANT = 1u << 3,    /* constant data from a tensor attribute */
    PTQ_VALUE_FOLDED = 1u << 4       /* constant data ptq computed at load from constants (ptq_graph_fold_constants);
                                      * a node of the file makes it, which the graph no longer holds */
};
/* The flags of a value whose data the graph holds. */
#define PTQ_VALUE_HAS_DATA (PTQ_VALUE_INITIALIZER | PTQ_VALUE_CONSTANT | PTQ_VALUE_FOLDED)

/* A named tensor. For activations ndim/dims come from the file's declared
 * types (value_info, inputs, outputs); a dim of -1 is unknown or symbolic
 * (dim_param). Constant values carry their data, little-endian, row-major. */
typedef struct ptq_value {
    const char *name;
    ptq_dtype dtype;
    int ndim; /* -1: rank unknown */
    int64_t dims[PTQ_MAX_DIMS];
    const void *data; /* constants only: borrowed from the mapped file or the graph's weight block */
    size_t n_bytes;
    int producer;     /* node index, -1 for inputs and constants */
    unsigned flags;   /* PTQ_VALUE_* */
} ptq_value;

typedef struct ptq_node {
    const char *name;    /* may be "" in the file; the loader names it "<op_type>_<index>" then */
    const char *op_type;
    const char *domain;  /* "" for the default ONNX domain */
    int n_inputs;
    int n_outputs;
    const int *inputs;   /* [n_inputs] value indices; -1 for an omitted optional input */
    const int *outputs;  /* [n_outputs] value indices; -1 for an omitted optional output */
    int n_attrs;
    const ptq_attr *attrs;
} ptq_node;

/* The newest opset of ONNX's default domain ptq knows (ONNX 1.19); a model past it is refused, as onnxruntime does */
#define PTQ_ONNX_OPSET_NEWEST 24

typedef struct ptq_opset {
    const char *domain; /* "" or "ai.onnx" for the default domain */
    int64_t version;
} ptq_opset;

typedef struct ptq_meta {
    const char *key;
    const char *value;
} ptq_meta;

typedef struct ptq_graph {
    const char *path;  /* the file it was loaded from */
    const char *name;
    int64_t ir_version;
    const char *producer;
    int n_opsets;
    const ptq_opset *opsets;
    int64_t opset;     /* version of the default domain */
    int n_meta;
    const ptq_meta *meta;
    int n_values;
    ptq_value *values;
    int n_nodes;
    const ptq_node *nodes; /* topological order */
    int n_inputs;
    const int *inputs;  /* value indices of the caller-fed inputs (initializers excluded) */
    int n_outputs;
    const int *outputs;
    struct ptq_graph_store *store; /* owns every allocation above and the file mapping */
} ptq_graph;

/* Loads an ONNX model. External data files are resolved next to path.
 * Malformed input gives PTQ_ERR_FORMAT with the byte offset at fault. A
 * file that starts with the HDF5 signature is loaded as a Keras model
 * instead (ptq_graph_load_keras), so every caller takes both. */
PTQ_API ptq_status ptq_graph_load_onnx(ptq_ctx *ctx, const char *path, ptq_graph **out);
/* The same from bytes in memory; they must outlive the graph (weights are borrowed).
 * base_dir resolves external data (may be NULL: external data then fails). */
PTQ_API ptq_status ptq_graph_load_onnx_bytes(ptq_ctx *ctx, const void *bytes, size_t n_bytes, const char *base_dir,
                                             ptq_graph **out);
PTQ_API void ptq_graph_free(ptq_graph *g);

/* Loads a Keras model saved as HDF5 (model.save("x.h5"), Keras 3 or tf.keras
 * 2.x): the root model_config JSON (Sequential or functional) and the
 * weights under /model_weights, translated to ONNX ops (model/keras.c; the
 * layers it knows are listed in README.md). The graph keeps Keras's NHWC
 * input and output layout and runs NCHW inside (Transpose at the edges, before
 * Flatten and Reshape); value names come from layer names ("conv1", weights
 * "conv1/kernel", a layer's inner steps "conv1/Conv"). An HDF5 file that is
 * not a Keras model, a weights-only file, a missing weight or one whose shape
 * the config contradicts: PTQ_ERR_FORMAT naming it; a layer (or layer
 * option) ptq does not implement: PTQ_ERR_UNSUPPORTED naming the layer. */
PTQ_API ptq_status ptq_graph_load_keras(ptq_ctx *ctx, const char *path, ptq_graph **out);
/* The ONNX ModelProto (opset 13) ptq_graph_load_keras builds from path,
 * malloc'd into *bytes (the caller frees); ptq_onnx_edit_open uses it. */
PTQ_API ptq_status ptq_keras_to_onnx(ptq_ctx *ctx, const char *path, void **bytes, size_t *n_bytes);

/* The tensors a plan may quantize (model/quantizable.c, from the op table
 * model/op_traits.c: each op's quantized inputs and outputs): act[v] = 1 for the
 * float non-constant inputs of Conv/Gemm/MatMul and every float node output
 * (Constant nodes' excepted); wt[v] = 1 for their float constant inputs 0
 * and 1 (the weights). act and wt: [g->n_values], overwritten; either may be NULL. */
PTQ_API void ptq_graph_quantizable(const ptq_graph *g, unsigned char *act, unsigned char *wt);
/* PTQ_ERR_UNSUPPORTED naming g's first QuantizeLinear or DequantizeLinear node (ONNX domain) that runs on data (one
 * of constants alone is folded at load: its output is a float weight): such a model is quantized already, and a
 * plan of it would round its tensors twice. what names the command ("calibrate"); PTQ_OK for a float model. */
PTQ_API ptq_status ptq_graph_check_unquantized(ptq_ctx *ctx, const ptq_graph *g, const char *what);
/* 1 for the op types whose inputs are quantized with their weights: Conv, Gemm, MatMul. */
PTQ_API int ptq_op_is_weighted(const char *op_type);

/* Lookups: NULL / -1 when absent. */
PTQ_API const ptq_attr *ptq_node_attr(const ptq_node *n, const char *name);
PTQ_API int64_t ptq_node_attr_int(const ptq_node *n, const char *name, int64_t dflt);
PTQ_API float ptq_node_attr_float(const ptq_node *n, const char *name, float dflt);
PTQ_API int ptq_graph_find_value(const ptq_graph *g, const char *name);
PTQ_API const char *ptq_graph_meta(const ptq_graph *g, const char *key);
/* The symbolic name the file gives dim axis of input i (g->inputs[i]; ONNX's dim_param, "N", "sequence"), or NULL
 * where it gives a number or none: inputs that name a dim alike must be fed the same size there. */
PTQ_API const char *ptq_graph_input_dim_name(const ptq_graph *g, int i, int axis);

/* Constant folding's two steps on a loaded graph (the computing is the runtime's: ptq_graph_fold_constants).
 * ptq_graph_set_folded makes value v, a node's output, a constant: a copy of t's data, dtype and shape in the
 * graph's store, flagged PTQ_VALUE_FOLDED, with no producer. ptq_graph_drop_folded then removes every node whose
 * outputs are all folded (or omitted) and renumbers the producers. Covered by tests/fold_test.py. */
PTQ_API ptq_status ptq_graph_set_folded(ptq_ctx *ctx, ptq_graph *g, int v, const ptq_tensor *t);
PTQ_API void ptq_graph_drop_folded(ptq_graph *g);

/* Reads a serialized onnx TensorProto (the .pb files of ONNX's test data)
 * into a host tensor the caller frees with ptq_tensor_free_host. name_out
 * (optional) receives a malloc'd copy of the tensor's name. */
PTQ_API ptq_status ptq_tensor_load_pb(ptq_ctx *ctx, const char *path, ptq_tensor *out, char **name_out);

#ifdef __cplusplus
}
#endif
#endif
