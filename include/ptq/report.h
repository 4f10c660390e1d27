/* Classification metrics: top-1/top-5, the confusion matrix and per-class
 * precision/recall/F1, accumulated batch by batch with integer counts (so
 * shards merge exactly), and their renderings as text tables and JSON.
 * Covered by tests/test_report.c. */
#ifndef PTQ_REPORT_H
#define PTQ_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "ptq/export_api.h"
#include "ptq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ptq_eval_stats {
    int n_classes;
    int64_t n;          /* samples counted */
    int64_t top1, top5; /* samples whose label was the argmax / among the 5 largest */
    int64_t *confusion; /* [n_classes, n_classes]: row = true label, column = prediction */
    int64_t no_prediction; /* samples whose logits hold a NaN or an infinity: counted in n as wrong (not in
                              top1 or top5) and in no cell of the confusion matrix */
    int64_t *no_prediction_by_label; /* [n_classes]: those samples by label, in the support and as misses in recall */
} ptq_eval_stats;

typedef struct ptq_class_metrics {
    double precision, recall, f1; /* 0 where undefined (no predictions / no samples) */
    int64_t support;              /* samples with this label (those with no prediction too: a miss in recall) */
    int64_t predicted;            /* samples predicted as this class */
} ptq_class_metrics;

PTQ_API ptq_status ptq_eval_stats_init(ptq_ctx *ctx, int n_classes, ptq_eval_stats *s);
PTQ_API void ptq_eval_stats_free(ptq_eval_stats *s);

/* Counts a batch. logits: [n, n_classes]; labels: [n], each in
 * [0, n_classes) (else PTQ_ERR_DATA naming sample first_index + i);
 * pred: [n] argmax per sample (first index on ties), may be NULL. */
PTQ_API ptq_status ptq_eval_stats_update(ptq_ctx *ctx, ptq_eval_stats *s, const float *logits, const int32_t *labels,
                                         int64_t n, int64_t first_index, int32_t *pred);

/* dst += src, shards of one run: every field is an integer count and no
 * result depends on sample order (first_index only names samples in
 * errors), so shards merged in any order give exactly the single run's
 * stats. Class counts must match (else PTQ_ERR_INVALID_ARG). */
PTQ_API ptq_status ptq_eval_stats_merge(ptq_ctx *ctx, ptq_eval_stats *dst, const ptq_eval_stats *src);

/* metrics: [s->n_classes]. */
PTQ_API void ptq_eval_class_metrics(const ptq_eval_stats *s, ptq_class_metrics *metrics);

/* Text report for a terminal: accuracy, per-class table, confusion matrix.
 * class_names may be NULL (indices are used). Returns a malloc'd string. */
PTQ_API ptq_status ptq_eval_format_text(ptq_ctx *ctx, const ptq_eval_stats *s, const char *const *class_names,
                                        char **out);

/* The text report prints the per-class table and the confusion matrix up to
 * this many classes; above, the PTQ_EVAL_TEXT_TOP classes of lowest recall
 * and the PTQ_EVAL_TEXT_TOP largest off-diagonal cells (top confusions). */
#define PTQ_EVAL_TEXT_MAX_CLASSES 20
#define PTQ_EVAL_TEXT_TOP 10

/* JSON reports hold "confusion" as k rows of k counts up to this many
 * classes; above, "confusion_sparse": {"rows": k, "cols": k, "cells":
 * [[true, predicted, count], ...]}, the nonzero cells in row-major order. */
#define PTQ_JSON_DENSE_MAX_CLASSES 100

/* Streams matrix m [k, k] minus sub [k, k] (sub may be NULL) to f as the
 * value of key `key` (dense rows) or key_sparse (above
 * PTQ_JSON_DENSE_MAX_CLASSES), preceded by ",\n\t"; 0 on a write error. */
PTQ_API int ptq_json_write_confusion(FILE *f, const char *key, const char *key_sparse, int k, const int64_t *m,
                                     const int64_t *sub);

/* The JSON report written to f (named path in messages) as it is made: the
 * k x k confusion matrix goes out row by row (or as nonzero cells), never
 * held as JSON. */
PTQ_API ptq_status ptq_eval_write_json(ptq_ctx *ctx, const ptq_eval_stats *s, const char *const *class_names,
                                       const char *header_json, FILE *f, const char *path);

/* JSON object {"samples", "top1", "top5", "no_prediction", "classes": [...], "confusion": [[...]]}
 * ("confusion_sparse" above PTQ_JSON_DENSE_MAX_CLASSES classes)
 * merged into the caller's header fields (a JSON object text, may be NULL).
 * Returns a malloc'd string. */
PTQ_API ptq_status ptq_eval_format_json(ptq_ctx *ctx, const ptq_eval_stats *s, const char *const *class_names,
                                        const char *header_json, char **out);

#ifdef __cplusplus
}
#endif
#endif
