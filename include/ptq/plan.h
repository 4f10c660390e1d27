/* Precision plans: per activation tensor and per weight, the number format
 * it runs in and its scale(s), with where each came from. Plans are JSON
 * (format "ptq-plan", documented in README.md), written by `ptq plan` from a
 * calibration archive and editable by hand; ptq checks a plan against the
 * model before using it. quant/plan.c, quant/plan_json.c; covered by
 * tests/test_plan.c. */
#ifndef PTQ_PLAN_H
#define PTQ_PLAN_H

#include <stdint.h>

#include "ptq/export_api.h"
#include "ptq/calib.h"
#include "ptq/calibrator.h"
#include "ptq/graph.h"
#include "ptq/numfmt.h"
#include "ptq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A plan entry's number format (include/ptq/numfmt.h): one whose table
 * entry has in_plans (fp32, fp16, int8, fp8-e4m3, fp8-e5m2, and uint8 for
 * activations). */
typedef ptq_fmt ptq_prec;
#define PTQ_PREC_FP32 PTQ_FMT_FP32
#define PTQ_PREC_FP16 PTQ_FMT_FP16
#define PTQ_PREC_INT8 PTQ_FMT_INT8
#define PTQ_PREC_FP8_E4M3 PTQ_FMT_FP8_E4M3
#define PTQ_PREC_FP8_E5M2 PTQ_FMT_FP8_E5M2
#define PTQ_PREC_UINT8 PTQ_FMT_UINT8

/* The format's name from the table: "fp32", "fp16", "int8", "fp8-e4m3", "fp8-e5m2", "uint8"; "?" for none. */
PTQ_API const char *ptq_prec_name(ptq_prec p);
/* A plan precision by name (and "fp8" for fp8-e4m3); PTQ_ERR_INVALID_ARG listing the choices otherwise. */
PTQ_API ptq_status ptq_prec_parse(ptq_ctx *ctx, const char *s, ptq_prec *out);
/* 1 for int8, uint8, fp8-e4m3 and fp8-e5m2: the plan precisions that take scales. */
PTQ_API int ptq_prec_is_quantized(ptq_prec p);

typedef struct ptq_plan_entry {
    char *name;     /* the ONNX tensor (activation) or initializer (weight) name */
    int is_weight;  /* 1: a Conv/Gemm/MatMul weight initializer */
    ptq_prec prec;
    int axis;       /* weights: the channel axis the scales run along (0 for Conv, the output axis for
                       Gemm/MatMul); -1: one scale for the whole tensor (activations) */
    int64_t n_scales;
    float *scales;  /* [n_scales], each finite and > 0; none (n_scales 0) for fp32/fp16 */
    char *source;   /* where the scales came from: "archive entropy", "weights max|w|", "edited", ...,
                       PTQ_PLAN_SOURCE_SOFTMAX */
    int64_t block_size;     /* 0: no blocks; else each run of block_size elements (row-major) has its own
                               scale, multiplying scales[channel] (formats whose table entry has block_scaled) */
    int64_t n_block_scales;
    float *block_scales;    /* [n_block_scales] = [numel / block_size], each finite and > 0; NULL without blocks */
    char *rule;     /* the placement rule that chose the precision ("trt.weighted-input", "edge", ...; see
                       ptq_placement_rule_why); NULL when the plan does not say (hand-written or older plans) */
    int32_t zero_point; /* uint8 (activations only): the code of 0.0, in [0, 255]; 0 for every other format */
} ptq_plan_entry;

/* The source of a Softmax output's scale: its min-max range, whatever the calibrator (values in [0, 1],
 * the few largest being the attention a percentile would clip). */
#define PTQ_PLAN_SOURCE_SOFTMAX "archive minmax: a Softmax output, its largest values kept"

/* What runs the exported model, which decides the number formats: TRT (the
 * default) symmetric INT8/FP8 activations with zero point 0, as TensorRT
 * (and onnxruntime's symmetric Q/DQ) take them; ORT_CPU asymmetric UINT8
 * activations with a zero point and INT8 per-channel weights, what
 * onnxruntime's fast CPU kernels (QLinearConv, QLinearMatMul, ...) take, the
 * high-precision edges left FP32 (the CPU has no FP16 arithmetic) and the
 * biases of quantized Conv/Gemm exported as int32 with scale input scale x
 * weight scale, as quantize_static writes them (which its Q/DQ fusions need),
 * and simulated so. */
typedef enum ptq_target { PTQ_TARGET_TRT = 0, PTQ_TARGET_ORT_CPU } ptq_target;

/* "trt", "ort-cpu"; "?" for none. */
PTQ_API const char *ptq_target_name(ptq_target t);
/* A target by name; PTQ_ERR_INVALID_ARG listing the choices otherwise. */
PTQ_API ptq_status ptq_target_parse(ptq_ctx *ctx, const char *s, ptq_target *out);

typedef struct ptq_plan {
    char model_sha256[65];
    char *model_name;
    char *archive;     /* the calibration archive the activation ranges came from ("" if none) */
    char *method;      /* the calibrator used for them, e.g. "entropy" */
    ptq_prec core;     /* the precision of the core (int8 or an fp8) */
    int64_t n;
    ptq_plan_entry *e; /* [n] */
    char *placement;   /* the placement that made it ("trt", "ort", "all"); NULL when unknown. JSON carries it and
                          the entries' rules except for "all", whose plans stay as ptq wrote them before */
    ptq_target target; /* JSON "target", written for ort-cpu only (absent: trt) */
    int reduce_range;  /* 1: INT8 weights on onnxruntime's reduce_range grid [-64, 64] (ptq_plan_reduce_range);
                          JSON "reduce_range": true, written only when set (absent: 0) */
} ptq_plan;

/* onnxruntime's reduce_range grid for INT8 weights (quant_utils.py,
 * ONNX_INT_TYPE_REDUCED_RANGE): codes in [-64, 64], scale max|w| / 64. */
#define PTQ_PLAN_REDUCED_INT8_QMAX 64

PTQ_API void ptq_plan_free(ptq_plan *p);

/* Where a plan quantizes activations (README "Where quantization happens";
 * the rules are the table in quant/placement.c): TRT (the default) where
 * TensorRT does, at the inputs of Conv/Gemm/MatMul and the residual input of
 * an Add it fuses into a Conv, never inside a fused Conv+BatchNorm+activation;
 * ORT as onnxruntime's quantize_static (QDQ, symmetric activations) does, at
 * the inputs and outputs of the ops of its registry; ALL every activation the
 * archive observed (ptq before placement existed). */
typedef enum ptq_placement { PTQ_PLACEMENT_TRT = 0, PTQ_PLACEMENT_ORT, PTQ_PLACEMENT_ALL } ptq_placement;

/* "trt", "ort", "all"; "?" for none. */
PTQ_API const char *ptq_placement_name(ptq_placement p);
/* A placement by name; PTQ_ERR_INVALID_ARG listing the choices otherwise. */
PTQ_API ptq_status ptq_placement_parse(ptq_ctx *ctx, const char *s, ptq_placement *out);
/* The one-line reason of the placement rule named rule (a plan entry's
 * `rule`); NULL for a name the table does not have. */
PTQ_API const char *ptq_placement_rule_why(const char *rule);

/* The plan for graph g (shapes inferred) from calibration set s (an
 * archive read back), its activations placed by `placement`: the first and
 * last compute layers (Conv, Gemm, MatMul in graph order), the activations
 * feeding them and their outputs run in FP16; every other activation of s
 * the placement quantizes and every other weight runs in core (int8,
 * fp8-e4m3 or fp8-e5m2); the activations of s it does not quantize are
 * entries in fp32, each entry naming its rule. Activation scales come from calibrator
 * `method` run for the core's grid (the plan's method reads
 * "percentile=P" with the P used, PTQ_CALIB_DEFAULT_PERCENTILE when method
 * gives none; a tensor that saw only zeros stays
 * FP16); weight scales are per output channel, max|w| / the format's
 * largest level (a channel of zeros gets scale 1). model_sha256: the model
 * file's, which must be the archive's (PTQ_ERR_INVALID_ARG otherwise). */
PTQ_API ptq_status ptq_plan_make(ptq_ctx *ctx, const ptq_graph *g, const char *model_sha256, const char *model_name,
                                 const ptq_calib_set *s, const char *archive_path, const ptq_calib_params *method,
                                 ptq_prec core, ptq_placement placement, ptq_plan **out);
/* ptq_plan_make for a target. PTQ_TARGET_ORT_CPU takes core int8 (the
 * weights'); its activations run in uint8 with the scale and zero point of
 * ptq_k_uint8_params_ref over [max(min, -amax), min(max, amax)]: the
 * calibrator's amax clipped to the observed range (minmax: exactly
 * quantize_static's MinMax U8 parameters); edges and all-zero tensors stay
 * FP32. With PTQ_PLACEMENT_ORT the placement is quantize_static's with
 * asymmetric activations: the Relu/Clip it removes (the one reader of a
 * quantized tensor) leave their input unquantized, the QuantizeLinear after
 * them clamping as they did. */
PTQ_API ptq_status ptq_plan_make_target(ptq_ctx *ctx, const ptq_graph *g, const char *model_sha256,
                                        const char *model_name, const ptq_calib_set *s, const char *archive_path,
                                        const ptq_calib_params *method, ptq_prec core, ptq_placement placement,
                                        ptq_target target, ptq_plan **out);
/* What ptq_plan_make_target and ptq_plan_reduce_range (reduce_range 1) refuse
 * in their settings alone, checked before any file is read: a core that is
 * not int8 or an fp8, uint8 as a core, ort-cpu with a core other than int8,
 * reduce_range with one other than int8 (PTQ_ERR_INVALID_ARG naming it). */
PTQ_API ptq_status ptq_plan_settings_check(ptq_ctx *ctx, ptq_prec core, ptq_placement placement, ptq_target target,
                                           int reduce_range);
/* ptq_plan_make with the default placement, PTQ_PLACEMENT_TRT. */
PTQ_API ptq_status ptq_plan_default(ptq_ctx *ctx, const ptq_graph *g, const char *model_sha256, const char *model_name,
                                    const ptq_calib_set *s, const char *archive_path, const ptq_calib_params *method,
                                    ptq_prec core, ptq_plan **out);

/* onnxruntime's quantize_static(..., reduce_range=True) on plan p of graph g
 * (core int8; PTQ_ERR_INVALID_ARG otherwise): every INT8 weight's scales
 * become max|w| / 64 per channel (a channel of zeros 1), its codes in
 * [-64, 64], the simulation and the Q/DQ export both; p->reduce_range is
 * set. Activations are unchanged: static Q/DQ reduces only the weights. For
 * CPUs without VNNI, whose uint8 x int8 kernels (VPMADDUBSW) saturate the
 * int16 sum of two products when weights use the full grid. */
PTQ_API ptq_status ptq_plan_reduce_range(ptq_ctx *ctx, const ptq_graph *g, ptq_plan *p);
/* The largest code of a weight of plan p in precision prec: PTQ_PLAN_REDUCED_INT8_QMAX for INT8 when
 * p->reduce_range, else the format's largest value (127, 448, 57344). */
PTQ_API double ptq_plan_weight_qmax(const ptq_plan *p, ptq_prec prec);

/* Checks p against the model: its SHA-256, every name a float activation or
 * a Conv/Gemm/MatMul weight of g (unknown names listed), no name twice, the
 * scales finite and > 0, one per channel along a valid axis for weights and
 * one for activations, none for fp16/fp32, a precision plans may use (uint8
 * for activations only, with a zero point in [0, 255]; other formats zero
 * point 0); an ort-cpu plan's core int8 and none in FP8; a reduce_range
 * plan's core int8; a
 * block size > 0 dividing the tensor with one finite scale > 0 per block,
 * on a format that takes block scales, none otherwise. PTQ_ERR_INVALID_ARG
 * naming the first fault. */
PTQ_API ptq_status ptq_plan_check(ptq_ctx *ctx, const ptq_plan *p, const ptq_graph *g, const char *model_sha256);

/* The plan as JSON ("ptq-plan", version 1; README.md documents it), the
 * same plan giving the same bytes; and back. Reading checks the format and
 * every field's type and value (PTQ_ERR_FORMAT naming the entry), not the
 * model: that is ptq_plan_check's job. */
PTQ_API ptq_status ptq_plan_to_json(ptq_ctx *ctx, const ptq_plan *p, char **out);
PTQ_API ptq_status ptq_plan_from_json(ptq_ctx *ctx, const char *text, ptq_plan **out);

#ifdef __cplusplus
}
#endif
#endif
