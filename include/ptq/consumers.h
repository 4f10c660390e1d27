/* Runner consumers (include/ptq/runner.h) for the reports: accuracy and
 * confusion counts of the FP32 run (ptq eval), and the comparison of FP32
 * with a quantization overlay on the same executor (ptq validate).
 * reports/consumers.c; covered by tests/test_runner.c,
 * tests/cli_test.py and tests/cli_validate_test.py. */
#ifndef PTQ_CONSUMERS_H
#define PTQ_CONSUMERS_H

#include "ptq/export_api.h"

#include "ptq/report.h"
#include "ptq/runner.h"
#include "ptq/validate_report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Counts each batch's logits against its labels into *stats, which must
 * be zeroed; it is initialised at the first batch with the logits' width
 * (ptq_eval_stats_free it afterwards). Both consumers read logits and
 * labels: a run without need_logits and need_labels set in
 * ptq_runner_params fails at its first batch with PTQ_ERR_INVALID_ARG
 * naming the one missing. */
PTQ_API ptq_consumer ptq_eval_consumer(ptq_eval_stats *stats);

/* FP32 against an overlay: each batch's FP32 logits are kept, the batch is
 * run again under `overlay` on the same executor (the overlay is unset
 * again afterwards) and both go into `stats` (made at the first batch).
 * Consumers after this one see the quantized outputs and logits.
 *
 * With ref set (the FP32 logits of an earlier run over the same pick, e.g.
 * `ptq eval --logits`), the FP32 side is ref's rows: the first batch runs
 * in FP32 as above and must match ref (median over its images of
 * ||fp32 - ref|| / ||ref|| at most ref_tolerance, else PTQ_ERR_DATA), then
 * the overlay stays set, so every later batch runs once, quantized (the end
 * callback unsets it; a failed run puts back the overlay the executor had
 * before it). */
typedef struct ptq_validate_ref {
    const float *logits;   /* [n, cols]: row i is the sample ids[i] */
    const int64_t *ids;    /* [n] ascending sample ids: the pick the logits were made on */
    int64_t n, cols;
    double tolerance;      /* 0: 1e-3 */
    const char *name;      /* for messages: the file the rows came from */
    double checked_median; /* out: the first batch's median relative difference */
} ptq_validate_ref;

typedef struct ptq_validate_run {
    const ptq_overlay *overlay;
    ptq_validate_ref *ref;      /* optional: FP32 logits to compare with instead of running FP32 */
    ptq_validate_stats *stats;  /* set at the first batch */
    int64_t n_classes;          /* the logits' width, set at the first batch */
    float *fp32;                /* scratch: one batch of FP32 logits */
    int64_t fp32_cap;           /* floats at fp32 */
    ptq_tensor *outputs;        /* scratch: the quantized run's outputs */
    struct ptq_validate_job *job; /* a batch's figures, added on a worker thread while the next batch runs */
} ptq_validate_run;

/* The figures of each batch are added to stats on a worker thread while the
 * next batch runs (in batch order, so the same sums); the end callback waits
 * for the last, and a batch's error (a label out of range) fails the batch
 * after it or the end. */
PTQ_API ptq_consumer ptq_validate_consumer(ptq_validate_run *run);
/* Waits for the worker, frees the stats and scratch; the struct can be zeroed and reused. */
PTQ_API void ptq_validate_run_free(ptq_validate_run *run);

#ifdef __cplusplus
}
#endif
#endif
