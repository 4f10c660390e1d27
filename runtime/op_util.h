/* Helpers every op implementation shares: failures that name the node,
 * input checks, attribute reads. Covered through tests/test_ops_*.c. */
#ifndef PTQ_RUNTIME_OP_UTIL_H
#define PTQ_RUNTIME_OP_UTIL_H

#include "runtime/op.h"

/* PTQ_ERR_UNSUPPORTED: "node 'conv1' (Conv, domain ai.onnx, opset 13): <what>". */
ptq_status ptq_op_unsupported_at(ptq_ctx *ctx, const char *file, int line, const ptq_op_io *io, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
/* PTQ_ERR_SHAPE (or another code) with the same node prefix. */
ptq_status ptq_op_fail_at(ptq_ctx *ctx, const char *file, int line, const ptq_op_io *io, ptq_status code,
                          const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
#define ptq_op_unsupported(ctx, io, ...) ptq_op_unsupported_at((ctx), __FILE__, __LINE__, (io), __VA_ARGS__)
#define ptq_op_fail(ctx, io, code, ...) ptq_op_fail_at((ctx), __FILE__, __LINE__, (io), (code), __VA_ARGS__)

/* Input i is present and float32 (else UNSUPPORTED / SHAPE naming it). */
ptq_status ptq_op_need_float(ptq_ctx *ctx, const ptq_op_io *io, int i);
/* Input i is present (else SHAPE: "input i missing"). */
ptq_status ptq_op_need_input(ptq_ctx *ctx, const ptq_op_io *io, int i);
/* Input i is present and of a fixed-size dtype (else UNSUPPORTED naming it). */
ptq_status ptq_op_need_sized(ptq_ctx *ctx, const ptq_op_io *io, int i);
/* Copies dtype and shape of src into dst. */
void ptq_op_same_shape(ptq_tensor *dst, const ptq_tensor *src);
/* ONNX dtype -> the kernels' element kind (kernels/ref/index.c); 0 when
 * none (float16, bfloat16, FP8, strings, 4-bit). */
int ptq_op_cast_kind(ptq_dtype dt, ptq_cast_kind *k);
/* The values of input i, 1-D int32 or int64 of at most PTQ_MAX_DIMS
 * entries, as int64 into v [PTQ_MAX_DIMS]; *n = -1 when it is omitted. */
ptq_status ptq_op_int_list(ptq_ctx *ctx, const ptq_op_io *io, int i, int64_t *v, int64_t *n);
/* An op's axes: its `axes` attribute (a list of ints; any other type is
 * taken as absent) before opset input_opset, else its optional input 1,
 * 1-D int64 on the host (PTQ_ERR_FORMAT otherwise). *axes points at them;
 * *n = -1 when none are given. */
ptq_status ptq_op_axes(ptq_ctx *ctx, const ptq_op_io *io, int64_t input_opset, const int64_t **axes, int64_t *n);
/* ONNX's name of an attribute type ("FLOAT", "INTS"; "UNDEFINED" for any other value). */
const char *ptq_op_attr_type_name(ptq_attr_type t);
/* The first element of host tensor t, of int8, uint8, int16, int32 or (any other dtype read as) int64. */
int64_t ptq_op_int_scalar(const ptq_tensor *t);

#endif
