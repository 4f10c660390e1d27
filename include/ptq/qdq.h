/* Q/DQ ONNX export of a precision plan (REFERENCE.md "Q/DQ ONNX"):
 * every INT8/UINT8/FP8 activation the plan names becomes x -> QuantizeLinear ->
 * DequantizeLinear -> its consumers (per tensor, zero point 0, or a uint8
 * activation's own zero point); an ort-cpu plan's Conv/Gemm biases
 * become int32 codes -> DequantizeLinear (scale input scale x weight
 * scale, axis 0), as quantize_static writes them (a bias several of them
 * read gets codes at each one's scales, which onnxruntime's fused kernels take); every
 * INT8/FP8 weight becomes an int8 (or FLOAT8E4M3FN / FLOAT8E5M2) initializer
 * feeding a per-channel DequantizeLinear that takes the weight's name, so
 * its consumers are unchanged; every FP16 activation becomes x -> Cast(float16)
 * -> Cast(float) -> its consumers and every FP16 weight a float16 initializer
 * -> Cast(float), so a runtime rounds as the simulation does; FP32 tensors
 * stay as they are. A graph output (read by nodes or not) is rounded in
 * place: its producer writes "ptq_qdq/<name>/float" and the Q/DQ or Cast pair
 * writes the output's own name, so the model returns what the simulation
 * computes (a graph input passed through as an output cannot be, and is
 * PTQ_ERR_UNSUPPORTED). The opset
 * is raised to 13 (per-axis DequantizeLinear), or 19 with IR 9 when the plan
 * has FP8. quant/qdq_export.c on model/onnx_edit.c; covered by
 * tests/qdq_export_test.py (onnx.checker, onnxruntime against ptq validate). */
#ifndef PTQ_QDQ_H
#define PTQ_QDQ_H

#include "ptq/export_api.h"
#include "ptq/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* g: model_path loaded with shapes inferred; p: checked against it. The
 * model is written to out_path through a temporary file and a rename.
 * opset: the default-domain opset to write, or 0 for the lowest that fits
 * (13, or 19 for FP8); one below the model's own, or below 13, or below 19
 * with FP8 in the plan, is PTQ_ERR_UNSUPPORTED naming what needs more. */
PTQ_API ptq_status ptq_export_qdq(ptq_ctx *ctx, const char *model_path, const ptq_graph *g, const ptq_plan *p,
                                  int64_t opset, const char *out_path);

#ifdef __cplusplus
}
#endif
#endif
