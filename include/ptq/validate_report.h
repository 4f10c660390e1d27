/* The comparison report of `ptq validate`: FP32 and quantized logits of the
 * same labelled images, accumulated batch by batch in bounded memory (two
 * ptq_eval_stats, a changed-prediction count, SQNR/KL sums), rendered as
 * JSON, Markdown and a terminal summary. In reports/validate_report.c;
 * covered by tests/test_validate_report.c.
 *
 * Definitions:
 *   prediction   argmax of a logit row, ties to the lowest index (as eval);
 *                "changed" when the FP32 and quantized argmax differ.
 *   SQNR (dB)    10 log10(sum fp32^2 / sum (q - fp32)^2) over all logits of
 *                the measured images; +inf when the logits are equal.
 *   KL (nats)    mean over measured images of KL(softmax(fp32) || softmax(q)),
 *                log-sum-exp in double; a row's rounding below 0 counts as 0.
 *   sums         each image's terms in double from its own logits, summed
 *                exactly over images and rounded once: independent of batch
 *                size, order and sharding.
 *   measured     images whose FP32 and quantized rows are all finite; the
 *                others still count for accuracy (NaN never wins an argmax
 *                unless it sits at index 0) and are reported, with the NaN
 *                logits of each side.
 *   deltas       quantized - fp32, in percentage points.
 *   flagged      classes whose recall fell by more than recall_drop_flag
 *                points, largest drop first (then by index); every output
 *                lists them first.
 *   difference   confusion matrix quantized - fp32 counts (signed).
 *   collapsed    the quantized outputs carry no information, so accuracy
 *                deltas mean nothing: every quantized row constant (all
 *                zero, say) while some FP32 row is not; SQNR <= 0 dB; or
 *                every image (2 or more) predicted as one class while FP32
 *                spreads those it predicts (logits without NaN or infinity)
 *                over more than one. */
#ifndef PTQ_VALIDATE_REPORT_H
#define PTQ_VALIDATE_REPORT_H

#include "ptq/export_api.h"

#include <stdint.h>
#include <stdio.h>

#include "ptq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ptq_validate_stats ptq_validate_stats;

/* n_classes in [2, 100000]. */
PTQ_API ptq_status ptq_validate_stats_init(ptq_ctx *ctx, int n_classes, ptq_validate_stats **out);
PTQ_API void ptq_validate_stats_free(ptq_validate_stats *s); /* NULL is a no-op */

/* Counts one batch. labels: [n], each in [0, n_classes) (else PTQ_ERR_DATA
 * naming the sample's index counted from the first image this stats saw);
 * logits_fp32, logits_q: [n, n_classes] row-major float32. A rejected batch
 * counts nothing. */
PTQ_API ptq_status ptq_validate_stats_add(ptq_ctx *ctx, ptq_validate_stats *s, int64_t n, const int32_t *labels,
                                  const float *logits_fp32, const float *logits_q);

/* dst += src (shards of one run): counts, confusion matrices and the exact
 * SQNR/KL sums, so shards merged in any order and split give a report
 * byte-identical to the single run's. Class counts must match (else
 * PTQ_ERR_INVALID_ARG, dst unchanged). */
PTQ_API ptq_status ptq_validate_stats_merge(ptq_ctx *ctx, ptq_validate_stats *dst, const ptq_validate_stats *src);

/* Every rank's stats become the sum over the ranks of a job
 * (include/ptq/dist.h), exactly as merging them: counts and confusion
 * matrices by integer SUM, the SQNR/KL sums as exact accumulators added
 * as integers. A collective; the class count must be the same on every
 * rank. A no-op in one process. */
PTQ_API ptq_status ptq_validate_stats_allreduce(ptq_ctx *ctx, ptq_validate_stats *s);

/* Totals for callers (the CLI's exit code, tests). */
typedef struct ptq_validate_totals {
    int64_t n;                       /* images counted */
    int64_t top1_fp32, top1_q;       /* images whose label was the argmax */
    int64_t top5_fp32, top5_q;
    int64_t changed;                 /* images whose argmax differs */
    int64_t n_measured;              /* images in SQNR and KL (all logits finite on both sides) */
    int64_t nan_fp32, nan_q;         /* NaN logits seen on each side */
    double sqnr_db;                  /* +inf when equal; NaN when nothing was measured */
    double kl_nats;                  /* NaN when nothing was measured */
    int64_t const_rows_fp32, const_rows_q; /* images whose logits are all equal */
    int64_t top_class_fp32, top_class_q;   /* the most images predicted as one class */
    unsigned collapsed;                    /* PTQ_COLLAPSE_* bits; 0: not collapsed */
} ptq_validate_totals;

/* Why the quantized outputs count as collapsed (ptq_validate_totals.collapsed). */
enum {
    PTQ_COLLAPSE_CONSTANT = 1u << 0,  /* every quantized logit row is constant */
    PTQ_COLLAPSE_SQNR = 1u << 1,      /* logits SQNR <= 0 dB */
    PTQ_COLLAPSE_ONE_CLASS = 1u << 2  /* every image predicted as the same class */
};

/* "constant logits, SQNR <= 0 dB, ..." for the bits of `collapsed` into buf[n]; returns buf. */
PTQ_API const char *ptq_validate_collapse_text(unsigned collapsed, char *buf, size_t n);

PTQ_API void ptq_validate_stats_totals(const ptq_validate_stats *s, ptq_validate_totals *t);

typedef struct ptq_validate_opts {
    double recall_drop_flag;          /* points, >= 0; PTQ_VALIDATE_OPTS_INIT sets 1.0 */
    const char *const *class_names;   /* [n_classes], may be NULL (indices are used) */
    const char *header_json;          /* a JSON object merged at the top (model, plan, device...), may be NULL */
} ptq_validate_opts;

#define PTQ_VALIDATE_OPTS_INIT {1.0, NULL, NULL}

/* Each returns a malloc'd NUL-terminated string; opts may be NULL (defaults).
 *
 * JSON: header fields, then "samples", "recall_drop_flag_pts",
 * "top1_fp32"/"top1_quant" (fractions), "top1_delta_pts", the same for top5,
 * "changed_predictions", "changed_fraction", "logits" {"sqnr_db" (null when
 * infinite or unmeasured), "sqnr_infinite", "kl_nats", "measured_images",
 * "nonfinite_images", "nan_logits_fp32", "nan_logits_quant"}, "flagged"
 * (class indices, worst first), "classes" (flagged first, then by index:
 * index, name, flagged, support, {precision,recall,f1}_{fp32,quant,delta_pts}),
 * "collapsed" (bool) and "collapse" (reasons: "constant_logits",
 * "sqnr_at_most_0_db", "single_class"; empty when not collapsed),
 * "fp32" and "quant" (each ptq_eval_format_json's object, with its
 * "confusion"), and "confusion_delta" (quant - fp32); above
 * PTQ_JSON_DENSE_MAX_CLASSES classes "confusion_sparse" and
 * "confusion_delta_sparse", their nonzero cells (include/ptq/report.h). */
/* The same object written to f (named path in messages) as it is made, the
 * confusion matrices row by row (ptq_validate_format_json holds it as text). */
PTQ_API ptq_status ptq_validate_write_json(ptq_ctx *ctx, const ptq_validate_stats *s, const ptq_validate_opts *opts,
                                           FILE *f, const char *path);
PTQ_API ptq_status ptq_validate_format_json(ptq_ctx *ctx, const ptq_validate_stats *s, const ptq_validate_opts *opts,
                                    char **out);

/* Markdown: header fields, summary table, flagged classes, per-class table
 * (flagged first), the FP32, quantized and difference confusion matrices;
 * above 100 classes the 20 largest difference cells instead (the JSON keeps
 * the full matrices). */
PTQ_API ptq_status ptq_validate_format_markdown(ptq_ctx *ctx, const ptq_validate_stats *s, const ptq_validate_opts *opts,
                                        char **out);

/* A few lines for the terminal: top-1 fp32 -> quant (delta), changed
 * predictions, SQNR and KL, NaN counts when any, the worst flagged classes. */
PTQ_API ptq_status ptq_validate_format_summary(ptq_ctx *ctx, const ptq_validate_stats *s, const ptq_validate_opts *opts,
                                       char **out);

#ifdef __cplusplus
}
#endif
#endif
