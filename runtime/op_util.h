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
/* Copies dtype and shape of src into dst. */
void ptq_op_same_shape(ptq_tensor *dst, const ptq_tensor *src);

#endif
