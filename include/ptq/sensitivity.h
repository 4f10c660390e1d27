/* Per-tensor sensitivity to quantization: for every activation and every
 * weight a plan may quantize, (a) the model with only that tensor in the
 * core format and everything else FP32, and (b) the default plan with only
 * that tensor kept in FP16, each against FP32 on labelled data, class by
 * class. A runner consumer (include/ptq/runner.h): the FP32 run of each
 * batch keeps what the perturbed runs need, and each (a) run starts at the
 * node that makes the perturbed tensor, so the FP32 prefix is computed once
 * per batch. quant/sensitivity.c; covered by tests/test_sensitivity.c and
 * tests/cli_sensitivity_test.py. */
#ifndef PTQ_SENSITIVITY_H
#define PTQ_SENSITIVITY_H

#include "ptq/export_api.h"

#include <stdint.h>

#include "ptq/calib.h"
#include "ptq/plan.h"
#include "ptq/runner.h"
#include "ptq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ptq_sensitivity ptq_sensitivity;

/* Figures of one configuration over the samples seen. */
typedef struct ptq_sens_figures {
    int64_t n;            /* samples */
    int64_t top1;         /* correct top-1 */
    int64_t agree;        /* same top-1 prediction as FP32 */
    double sqnr_db;       /* of the logits against FP32 (INFINITY when identical, NAN with no finite image) */
    double kl_nats;       /* mean KL(softmax FP32 || softmax this) */
    const int64_t *tp;    /* [n_classes] correct predictions per true class */
} ptq_sens_figures;

typedef struct ptq_sens_tensor {
    const char *name;
    int is_weight;
    int value;            /* graph value index */
    int start_node;       /* the node an (a) run starts at */
    ptq_prec prec_default;/* its precision in the default plan */
    int measured_a;       /* 0: it has no core range (saw only zeros) and was not measured */
    int measured_b;       /* 0: already in float in the default plan, (b) equals the default plan */
    ptq_sens_figures a;   /* only this tensor quantized */
    ptq_sens_figures b;   /* the default plan with this tensor in FP16 (FP32 for target ort-cpu) */
} ptq_sens_tensor;

/* The analysis of graph g (shapes inferred) against the default plan
 * (ptq_plan_make_target of the same archive: its scales and its float
 * edges, FP16, or FP32 for target ort-cpu, which (b) keeps tensors in too),
 * quantizing each tensor in `core` with the scales of `core_plan`, a plan
 * with every tensor in the core format (ptq_sens_core_plan). flags:
 * PTQ_SENS_ONLY measures only (a), for activations only (what
 * `ptq plan --method auto` compares calibrators by). */
#define PTQ_SENS_ONLY 1u
PTQ_API ptq_status ptq_sens_create(ptq_ctx *ctx, const ptq_graph *g, const ptq_plan *default_plan,
                                   const ptq_plan *core_plan, unsigned flags, ptq_sensitivity **out);
PTQ_API void ptq_sens_free(ptq_sensitivity *s);

/* The default plan's tensors all in its core format: the float edges get
 * their core scales (activations from archive s by the plan's method, as
 * uint8 with a zero point for target ort-cpu; weights max|w| per output
 * channel); tensors that saw only zeros stay in float. */
PTQ_API ptq_status ptq_sens_core_plan(ptq_ctx *ctx, const ptq_graph *g, const ptq_calib_set *s,
                                      const ptq_plan *default_plan, ptq_plan **out);

/* The consumer that measures each batch (labels and logits needed). */
PTQ_API ptq_consumer ptq_sens_consumer(ptq_sensitivity *s);

/* Across the ranks of a job (include/ptq/dist.h): ptq_sens_share, before
 * the run, keeps for this process the tensors of group `group` of n_groups
 * (the same split on every rank: costliest first, each to the group with
 * the least work so far, work being the multiply-adds of Conv, Gemm and
 * MatMul and the output elements of other nodes, from the model's shapes
 * at batch 1, or a node count where they are unknown); group 0 also
 * counts FP32 and the default plan. ptq_sens_allreduce, after it (a
 * collective), adds every rank's counts and exact sums, so each rank holds
 * the figures one process over all samples and tensors would have; the
 * class count must be the same on every rank. */
PTQ_API ptq_status ptq_sens_share(ptq_ctx *ctx, ptq_sensitivity *s, int group, int n_groups);
PTQ_API ptq_status ptq_sens_allreduce(ptq_ctx *ctx, ptq_sensitivity *s);

/* Results, valid until ptq_sens_free: tensors in plan order. */
PTQ_API int64_t ptq_sens_n_tensors(const ptq_sensitivity *s);
PTQ_API const ptq_sens_tensor *ptq_sens_tensor_at(const ptq_sensitivity *s, int64_t i);
PTQ_API int ptq_sens_n_classes(const ptq_sensitivity *s);
/* FP32 and the default plan over the same samples; fp32 has sqnr INFINITY. */
PTQ_API void ptq_sens_baselines(const ptq_sensitivity *s, ptq_sens_figures *fp32, ptq_sens_figures *default_plan,
                                const int64_t **support);
/* Runs done per batch so far (FP32, the default plan, (a) and (b) runs) and
 * the nodes they executed, against what full runs would have executed. */
PTQ_API void ptq_sens_work(const ptq_sensitivity *s, int64_t *n_runs, int64_t *nodes_run, int64_t *nodes_full);
/* Wall seconds so far by phase: reading and preprocessing (waited for),
 * the FP32 runs, the (a) runs (with their figures), the default-plan runs,
 * the (b) runs. */
typedef struct {
    double read, fp32, only, default_plan, all_but;
} ptq_sens_seconds;
PTQ_API ptq_sens_seconds ptq_sens_time(const ptq_sensitivity *s);

/* The "format_version" of the report's JSON. */
#define PTQ_SENS_FORMAT_VERSION 1

/* The report as JSON (format "ptq-sensitivity", described in README.md) and
 * as Markdown sorted by harm (top-1 lost when only the tensor is
 * quantized, then SQNR). header_json: an object merged at the top of the
 * JSON and listed at the top of the Markdown (model, archive, data...), may
 * be NULL; class_names [n_classes] may be NULL. */
PTQ_API ptq_status ptq_sens_format_json(ptq_ctx *ctx, const ptq_sensitivity *s, const char *header_json,
                                        const char *const *class_names, char **out);
PTQ_API ptq_status ptq_sens_format_markdown(ptq_ctx *ctx, const ptq_sensitivity *s, const char *header_json,
                                            const char *const *class_names, char **out);

/* What the budgeted planner reads back from a sensitivity report. */
typedef struct ptq_sens_entry {
    char *name;
    int is_weight;
    double recovered_pts;   /* all_but: top-1 the default plan gains with this tensor in float */
    double only_delta_pts;  /* only: top-1 change with only this tensor quantized (NAN if not measured) */
    double only_sqnr_db;    /* only: the logits' SQNR (NAN if not measured, INFINITY if identical) */
} ptq_sens_entry;

typedef struct ptq_sens_summary {
    char model_sha256[65];
    char archive_sample_ids_sha256[65];
    char core[16];
    int reduce_range;   /* 1: measured with INT8 weights on onnxruntime's reduce_range grid ("reduce_range": true) */
    ptq_target target;  /* the default plan's target ("target", written for ort-cpu only; absent: trt) */
    int64_t n_samples;  /* images the report measured on */
    int64_t n;
    ptq_sens_entry *e; /* [n] */
} ptq_sens_summary;

/* Reads a report of ptq_sens_format_json as strictly as a plan: one JSON
 * value (no trailing data, no key twice), format "ptq-sensitivity" of
 * version PTQ_SENS_FORMAT_VERSION (another: PTQ_ERR_UNSUPPORTED), "samples" a
 * count >= 0, at least one tensor, each with a unique name, kind activation or
 * weight, an "all_but" object ("measured", "recovered_pts" a number) and
 * "only" an object (its "top1_delta_pts" a number, "sqnr_db" a number or
 * null) or null (not measured); else PTQ_ERR_FORMAT naming the tensor.
 * ptq_sens_summary_free releases it. */
PTQ_API ptq_status ptq_sens_read(ptq_ctx *ctx, const char *json, ptq_sens_summary *out);
/* A report read by ptq_sens_read checked against model g, whose file's
 * SHA-256 is model_sha256: measured on that model, and every tensor it names
 * one of g's of its kind, a float activation or a Conv/Gemm/MatMul weight as
 * ptq_plan_check takes them (PTQ_ERR_INVALID_ARG naming the first that is
 * not). */
PTQ_API ptq_status ptq_sens_check(ptq_ctx *ctx, const ptq_sens_summary *s, const ptq_graph *g,
                                  const char *model_sha256);

/* PTQ_OK when s has an entry for every tensor plan quantizes, which
 * ptq_plan_budgeted needs (it runs this first); PTQ_ERR_INVALID_ARG naming
 * the count and the first one missing otherwise. */
PTQ_API ptq_status ptq_sens_covers(ptq_ctx *ctx, const ptq_sens_summary *s, const ptq_plan *plan);
PTQ_API void ptq_sens_summary_free(ptq_sens_summary *s);

/* The budgeted planner: from `start` (the default plan), tensors move to
 * FP16 (FP32 for target ort-cpu, zero point cleared, as its edges are; there
 * a weight takes its layer's quantized activation inputs along, since
 * onnxruntime quantizes a float weight under a quantized input itself) one
 * at a time in order of accuracy bought per unit of cost, each
 * move validated on the session's data (samples ids), until the top-1 drop
 * against FP32 is within budget_pts and, when class_budget_pts >= 0, no
 * class loses more recall than that.
 *   gain: the larger of the sensitivity report's recovered_pts (the default
 *         plan with only that tensor in FP16) and the top-1 lost with only it
 *         quantized; a gain of at most 3 images' worth (300 / samples points)
 *         is within noise and counts as none
 *   cost: bytes per image that stay in float instead of the core format: an
 *         activation's elements per sample, a weight's elements (both at one
 *         byte per element of difference)
 * Tensors with no gain move last, lowest SQNR first. */
typedef struct ptq_budget {
    double budget_pts;       /* >= 0 */
    double class_budget_pts; /* < 0: no per-class budget */
    int64_t max_moves;       /* at most this many tensors moved to float; < 0: no limit */
    int64_t batch;
    /* after each validation: the step (0 = start), the tensor just moved (NULL at 0) and its figures */
    void (*on_step)(void *user, int step, const char *moved, double top1_drop_pts, int worst_class,
                    double worst_class_drop_pts, int64_t n_float, int64_t n_tensors);
    void *on_step_user;
} ptq_budget;

/* One line of the planner's trace. */
typedef struct ptq_budget_step {
    char *moved;             /* NULL for the start */
    double top1, top1_drop_pts;
    int worst_class;
    double worst_class_drop_pts;
    int64_t n_fp16;          /* tensors in the moves' precision after this step: FP16, or FP32 for target ort-cpu
                                (its unquantized activations included) */
} ptq_budget_step;

typedef struct ptq_budget_result {
    int met;                 /* 1: the returned plan is within the budget */
    double top1_fp32;
    int64_t n_steps;
    ptq_budget_step *steps;  /* [n_steps] */
} ptq_budget_result;

/* *out: the first plan within budget, else the one with the smallest top-1
 * drop (result->met 0). The caller frees it and the result. */
PTQ_API ptq_status ptq_plan_budgeted(ptq_ctx *ctx, ptq_session *s, const int64_t *ids, int64_t n_ids,
                                     const ptq_plan *start, const ptq_sens_summary *sens, const ptq_budget *b,
                                     ptq_plan **out, ptq_budget_result *result);
PTQ_API void ptq_budget_result_free(ptq_budget_result *r);

#ifdef __cplusplus
}
#endif
#endif
