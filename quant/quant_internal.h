/* What the quant/ sources share: which op makes a value a weight, its
 * per-channel scales, and how a weight's elements fall into channels. */
#ifndef PTQ_QUANT_INTERNAL_H
#define PTQ_QUANT_INTERNAL_H

#include "core/xsum.h"
#include "model/op_traits.h"
#include "ptq/runner.h"
#include "ptq/sensitivity.h"
#include "ptq/graph.h"
#include "ptq/plan.h"
#include "ptq/status.h"

/* The op (traits table) that makes value v a weight, with the node and
 * input slot, or NULL: the first node taking v as an input it quantizes. */
const ptq_op_traits *quant_weight_user(const ptq_graph *g, int v, const ptq_node **node, int *input);
/* The per-channel scales of weight v in precision prec along axis (-1: one
 * for the whole tensor; 1 for a channel of zeros), qmax the grid's largest
 * code (ptq_plan_weight_qmax): INT8, max|w| over channel c / qmax (127, or
 * 64 with reduce_range); FP8, max|w| / qmax (the format's largest value)
 * times 2^(k / 16), k in [0, 16) the one whose rounding leaves channel c the
 * least squared error. *out malloc'd [*n_out]. quant/plan.c. */
ptq_status quant_weight_scales(ptq_ctx *ctx, const ptq_value *v, int axis, ptq_prec prec, double qmax, float **out,
                               int64_t *n_out);

/* Activation entry e quantized in prec from obs's calibrated range r: uint8 (target ort-cpu) the scale and zero
 * point of the observed range [min, max] clipped to the calibrator's [-amax, amax], any other format r's scale.
 * *normal 0, e untouched, when that scale is no normal float32 (|x| below about 1e-36, or past float's range):
 * TensorRT and onnxruntime take no such scale, and the plan keeps the tensor in FP32 (the plan and sensitivity's
 * trial plan both decide here). quant/plan.c. */
ptq_status quant_entry_act_scale(ptq_ctx *ctx, ptq_plan_entry *e, ptq_prec prec, const ptq_observer *obs,
                                 const ptq_calib_range *r, int *normal);
/* The plan's rule for a Softmax output (value v of g): its whole observed range (min-max) into *r, *whole 1, where
 * calibrator cp would clip it; else *whole 0 and *r untouched. The plan and sensitivity's trial plan both take it
 * here. quant/plan.c. */
ptq_status quant_softmax_range(ptq_ctx *ctx, const ptq_graph *g, int v, const ptq_calib_params *cp,
                               const ptq_observer *obs, ptq_calib_range *r, int *whole);
/* Where target t keeps a tensor out of quantization: FP16, or FP32 for
 * ort-cpu (onnxruntime's CPU kernels have no FP16 arithmetic). quant/plan.c. */
ptq_prec quant_target_float(ptq_target t);
/* Entry e out of quantization in precision high: its scales, axis and zero
 * point dropped (source and rule left to the caller). quant/plan.c. */
void quant_entry_unquantize(ptq_plan_entry *e, ptq_prec high);

/* The plan's entry for the activation (is_weight 0) or weight named name, or NULL. */
const ptq_plan_entry *quant_plan_entry(const ptq_plan *p, const char *name, int is_weight);
/* Rule PTQ_RULE_WEIGHT_FOLLOWS over plan p of graph g: a quantized weight
 * whose op reads no quantized activation (every activation input it
 * quantizes has no entry or one in high precision) joins that precision
 * (FP16; FP32 for target ort-cpu), its scales dropped. quant/plan.c. */
ptq_status quant_plan_weights_follow(ptq_ctx *ctx, const ptq_graph *g, ptq_plan *p);
/* Node k's bias when plan p (target ort-cpu) rounds it to int32: a Conv or
 * ConvTranspose, or a Gemm with beta 1, whose input runs in uint8, weight
 * in int8 (a scale per channel, or one) and whose bias is a float
 * initializer [channels]: *bias its value index and *scales malloc'd
 * [channels] = input scale x weight scale[c] (or the one; float); else
 * *bias = -1, *scales NULL. quant/bias.c. */
ptq_status quant_int32_bias(ptq_ctx *ctx, const ptq_graph *g, const ptq_plan *p, int k, int *bias, float **scales);
/* Plan p (target ort-cpu) with each int8 weight scale whose int32 bias scale (input scale x weight scale) would
 * saturate that bias's codes raised so they fit, by onnxruntime's rule (_adjust_weight_scale_for_int32_bias:
 * bias scale >= 1.0001 x 2 |bias| / (2^32 - 2), per channel, or over the whole bias for one scale), as its
 * quantize_static does; the weight's source says so. The simulation and the export both read the raised scale.
 * quant/bias.c. */
ptq_status quant_plan_fit_int32_biases(ptq_ctx *ctx, const ptq_graph *g, ptq_plan *p);
/* q[c] = round_half_even(b[c] / scales[c]) in double, saturated to int32; b, scales, q: [n]. */
void quant_int32_bias_codes(const float *b, int64_t n, const float *scales, int32_t *q);

/* A deep copy of plan p (entries, names, scales; block scales dropped):
 * *out is set even on failure, for the caller to free. quant/sensitivity.c. */
ptq_status quant_plan_copy(ptq_ctx *ctx, const ptq_plan *p, ptq_plan **out);

/* One quantized configuration's counts against FP32 (quant/figures.c). */
typedef struct qfig {
    int64_t n, top1, agree, n_measured;
    ptq_xsum signal_sq, noise_sq, kl;
    int64_t *tp; /* [k] correct predictions per true class */
} qfig;

ptq_status qfig_init(ptq_ctx *ctx, qfig *a, int k);
void qfig_free(qfig *a);
/* Adds n images: q logits [n, k] against the FP32 ones (and their argmax pred_fp32) and the labels. */
void qfig_add(qfig *a, int k, int64_t n, const int32_t *labels, const float *fp32, const int32_t *pred_fp32,
              const float *q);
void qfig_figures(const qfig *a, ptq_sens_figures *f);

/* A batch's FP32 side, kept for the runs that compare with it: the logits
 * copied (the next run overwrites the executor's), each image's FP32
 * prediction, the labels checked and counted per class over the run. */
typedef struct qfig_fp32 {
    int k;             /* classes, from the first batch */
    float *logits;     /* [cap, k] this batch's */
    int32_t *pred;     /* [cap] */
    int64_t *support;  /* [k] images per true class so far */
    int64_t cap;
} qfig_fp32;

ptq_status qfig_fp32_take(ptq_ctx *ctx, qfig_fp32 *f, const ptq_batch *b);
void qfig_fp32_free(qfig_fp32 *f);

/* Weight v along channel axis (-1: the whole tensor one channel): n_runs runs
 * of `inner` contiguous elements (row-major), run r in channel r % n_ch. */
typedef struct weight_runs {
    int64_t n_runs, inner, n_ch;
} weight_runs;

static inline weight_runs weight_runs_of(const ptq_value *v, int axis)
{
    weight_runs w = {1, 1, axis >= 0 ? v->dims[axis] : 1};
    for (int d = 0; d < v->ndim; d++) {
        if (axis >= 0 && d > axis)
            w.inner *= v->dims[d];
        else
            w.n_runs *= v->dims[d];
    }
    if (axis < 0) { /* one run: the whole tensor */
        w.inner = w.n_runs;
        w.n_runs = 1;
    }
    return w;
}

#endif
