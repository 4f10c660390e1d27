/* Edits an ONNX model at the protobuf level: adds initializers and nodes,
 * drops initializers, renames node inputs and outputs, moves or sets node attributes, raises the opset/IR
 * version, and
 * copies every other byte of the file as it was (the base of Q/DQ export).
 * model/onnx_edit.c; covered by tests/test_onnx_edit.c and tests/onnx_edit_test.py. */
#ifndef PTQ_ONNX_EDIT_H
#define PTQ_ONNX_EDIT_H

#include <stddef.h>
#include <stdint.h>

#include "ptq/export_api.h"
#include "ptq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ptq_onnx_edit ptq_onnx_edit;

/* Reads and checks the model at path. Tensors in external data (in the
 * graph, its subgraphs or functions) are checked as ptq's ONNX reader checks
 * them: the location relative, without '..', resolving (symlinks followed)
 * inside the model's folder, offset and length inside the file
 * (PTQ_ERR_FORMAT or PTQ_ERR_IO otherwise); their bytes are read when the
 * model is written. */
PTQ_API ptq_status ptq_onnx_edit_open(ptq_ctx *ctx, const char *path, ptq_onnx_edit **out);
/* The same from bytes in memory (copied); path names them in messages.
 * Without a folder, a model with external data is refused
 * (PTQ_ERR_UNSUPPORTED). */
PTQ_API ptq_status ptq_onnx_edit_open_bytes(ptq_ctx *ctx, const void *bytes, size_t n_bytes, const char *path,
                                            ptq_onnx_edit **out);
PTQ_API void ptq_onnx_edit_free(ptq_onnx_edit *e);
/* The files holding the model's external data, resolved (realpath), each
 * once, in the order the model first refers to them; *n of them (0: none). */
PTQ_API const char *const *ptq_onnx_edit_external_files(const ptq_onnx_edit *e, int *n);

/* Adds a graph initializer. data_type is onnx's TensorProto.DataType
 * (1 FLOAT, 3 INT8, 10 FLOAT16, 17 FLOAT8E4M3FN, 19 FLOAT8E5M2, ...; not
 * STRING, INT4/UINT4 or complex). dims: [ndim] (ndim 0: a scalar); raw:
 * n_bytes little-endian row-major elements, exactly numel * element size.
 * A name some initializer, node output or graph input already has is
 * PTQ_ERR_INVALID_ARG. */
PTQ_API ptq_status ptq_onnx_edit_add_initializer(ptq_ctx *ctx, ptq_onnx_edit *e, const char *name, int data_type,
                                                 int ndim, const int64_t *dims, const void *raw, size_t n_bytes);
/* Drops an existing initializer (and a graph input of the same name, as
 * IR < 4 models declare them); an unknown name is PTQ_ERR_INVALID_ARG. */
PTQ_API ptq_status ptq_onnx_edit_remove_initializer(ptq_ctx *ctx, ptq_onnx_edit *e, const char *name);
/* How many node inputs of the file (as renamed so far) and of the added nodes read name: a value ptq's graph no
 * longer reads may still be read by a node ptq folded at load (ptq_graph_fold_constants). */
PTQ_API int ptq_onnx_edit_reads(const ptq_onnx_edit *e, const char *name);
/* Adds a default-domain node; inputs [n_in] ("" for an omitted optional one),
 * outputs [n_out] by name; an int attribute "axis" when has_axis. An output
 * name that already exists is PTQ_ERR_INVALID_ARG. The writer places it
 * right before the first existing node that reads one of its outputs (after
 * renames), or after the last node, so the file stays topologically sorted. */
PTQ_API ptq_status ptq_onnx_edit_add_node(ptq_ctx *ctx, ptq_onnx_edit *e, const char *op_type, const char *name,
                                          int n_in, const char *const *inputs, int n_out, const char *const *outputs,
                                          int has_axis, int64_t axis);
/* The same with one int attribute attr_name = attr_value (none when
 * attr_name is NULL), e.g. Cast's "to". */
PTQ_API ptq_status ptq_onnx_edit_add_node_attr(ptq_ctx *ctx, ptq_onnx_edit *e, const char *op_type, const char *name,
                                               int n_in, const char *const *inputs, int n_out,
                                               const char *const *outputs, const char *attr_name, int64_t attr_value);
/* In the existing nodes (never the added ones) whose NodeProto.name is
 * node_name, or in all of them when node_name is NULL, inputs equal to from
 * read to instead. Graph outputs and producers keep their names. from must
 * be an input of such a node; to may be defined later (an added node or
 * initializer) but must exist when the model is written. Renames apply in
 * call order, and only to top-level nodes, not to subgraphs. */
PTQ_API ptq_status ptq_onnx_edit_rename_input(ptq_ctx *ctx, ptq_onnx_edit *e, const char *from, const char *to,
                                              const char *node_name);
/* The same in the one existing node that writes node_output, whatever its
 * NodeProto.name (which ONNX lets be empty or repeated). */
PTQ_API ptq_status ptq_onnx_edit_rename_input_of(ptq_ctx *ctx, ptq_onnx_edit *e, const char *from, const char *to,
                                                 const char *node_output);
/* The existing node that produces from writes to (a new name) instead. from
 * keeps its name everywhere else (graph outputs, readers, value_info), so an
 * added node must define it again before the model is written: a Q/DQ pair
 * or Cast pair from to back to from quantizes a graph output in place. */
PTQ_API ptq_status ptq_onnx_edit_rename_output(ptq_ctx *ctx, ptq_onnx_edit *e, const char *from, const char *to);
/* The existing node named node_name loses its attribute attr and reads
 * input (an initializer the caller adds) as one more, last input: an
 * attribute that a newer opset takes as an input (ReduceMean's axes from
 * opset 18). Called again on one node, each call appends one more input in
 * call order (Clip's min, then max); an attribute the node lacks drops
 * nothing, its input is appended all the same. */
PTQ_API ptq_status ptq_onnx_edit_attr_to_input(ptq_ctx *ctx, ptq_onnx_edit *e, const char *node_name,
                                               const char *attr, const char *input);
/* The same on the existing node that writes node_output, named or not. */
PTQ_API ptq_status ptq_onnx_edit_attr_to_input_of(ptq_ctx *ctx, ptq_onnx_edit *e, const char *node_output,
                                                  const char *attr, const char *input);
/* The existing node that writes node_output gets the int attribute attr = value, in place of any attribute of
 * that name it has: one a newer opset requires (Split's num_outputs from opset 18). Called again on one node, the
 * last call's attribute is the one written. */
PTQ_API ptq_status ptq_onnx_edit_set_int_attr_of(ptq_ctx *ctx, ptq_onnx_edit *e, const char *node_output,
                                                 const char *attr, int64_t value);
/* Raises the default-domain opset import to at least opset (adding the
 * import when there is none) and ir_version to at least ir_version. */
PTQ_API ptq_status ptq_onnx_edit_require_opset(ptq_ctx *ctx, ptq_onnx_edit *e, int64_t opset, int64_t ir_version);

/* The edited model: malloc'd bytes the caller frees / written to path
 * through a temporary file in the same folder and a rename. Checks that
 * every renamed-to name and added node input exists (PTQ_ERR_INVALID_ARG).
 * encode puts every tensor inline (PTQ_ERR_UNSUPPORTED past protobuf's
 * 2 GB). write does too while the model stays under 2,000,000,000 bytes;
 * past that, the graph initializers of 1 KiB or more and those that were in
 * external data go to "<path>.data" beside it (location "<name>.data"),
 * both files written whole or neither. An output, or its data file, that
 * would replace a file the model's external data is read from is
 * PTQ_ERR_INVALID_ARG. */
PTQ_API ptq_status ptq_onnx_edit_encode(ptq_ctx *ctx, const ptq_onnx_edit *e, void **bytes, size_t *n_bytes);
PTQ_API ptq_status ptq_onnx_edit_write(ptq_ctx *ctx, const ptq_onnx_edit *e, const char *path);

#ifdef __cplusplus
}
#endif
#endif
