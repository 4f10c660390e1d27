/* The reports' runner consumers (include/ptq/consumers.h): accuracy and
 * confusion counts, and FP32 against an overlay on one executor. Covered
 * by tests/test_runner.c, tests/cli_test.py and tests/cli_validate_test.py. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptq/consumers.h"

static ptq_status eval_after(void *user, ptq_ctx *ctx, ptq_runner *r, ptq_batch *b)
{
    ptq_eval_stats *stats = user;
    (void)r;
    if (!stats->n_classes)
        PTQ_TRY_RET(ptq_eval_stats_init(ctx, (int)b->n_classes, stats));
    return ptq_eval_stats_update(ctx, stats, b->logits, b->labels, b->n, b->start, NULL);
}

ptq_consumer ptq_eval_consumer(ptq_eval_stats *stats)
{
    ptq_consumer c = {stats, NULL, eval_after, NULL};
    return c;
}

static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ref's rows of b's samples into out [b->n, cols]. */
static ptq_status ref_rows(ptq_ctx *ctx, const ptq_validate_ref *ref, const ptq_batch *b, float *out)
{
    if (b->n_classes != ref->cols)
        return ptq_fail(ctx, PTQ_ERR_SHAPE, "%s has %lld logits a row, the model's output %lld", ref->name,
                        (long long)ref->cols, (long long)b->n_classes);
    for (int64_t i = 0; i < b->n; i++) {
        const int64_t *at = bsearch(&b->ids[i], ref->ids, (size_t)ref->n, sizeof *ref->ids, cmp_i64);
        if (!at)
            return ptq_fail(ctx, PTQ_ERR_DATA, "%s has no row for sample %lld", ref->name, (long long)b->ids[i]);
        memcpy(out + i * ref->cols, ref->logits + (at - ref->ids) * ref->cols, (size_t)ref->cols * sizeof *out);
    }
    return PTQ_OK;
}

/* The first batch's FP32 logits against ref's rows (already in want). */
static ptq_status ref_check(ptq_ctx *ctx, ptq_validate_ref *ref, const ptq_batch *b, const float *want)
{
    double *rel = malloc((size_t)b->n * sizeof *rel);
    if (!rel)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < b->n; i++) {
        double d = 0, w = 0;
        for (int64_t c = 0; c < ref->cols; c++) {
            const double x = b->logits[i * ref->cols + c], y = want[i * ref->cols + c];
            d += (x - y) * (x - y);
            w += y * y;
        }
        rel[i] = d == 0 ? 0 : w > 0 && isfinite(d) ? sqrt(d / w) : INFINITY;
    }
    qsort(rel, (size_t)b->n, sizeof *rel, cmp_double);
    ref->checked_median = rel[b->n / 2];
    free(rel);
    const double tol = ref->tolerance > 0 ? ref->tolerance : 1e-3;
    if (!(ref->checked_median <= tol))
        return ptq_fail(ctx, PTQ_ERR_DATA, "%s does not hold this model's FP32 logits on this data: on the first %lld "
                        "images they differ from this run's by a median %.3g relative (more than %g); make it "
                        "again with `ptq eval --logits` on the same model, --data, --limit and --preprocess",
                        ref->name, (long long)b->n, ref->checked_median, tol);
    return PTQ_OK;
}

static ptq_status validate_after(void *user, ptq_ctx *ctx, ptq_runner *r, ptq_batch *b)
{
    ptq_validate_run *run = user;
    ptq_exec *e = ptq_session_exec(ptq_runner_session(r));
    const ptq_graph *g = ptq_exec_graph(e);
    const int64_t n_logits = b->n * b->n_classes;
    if (!run->stats) {
        PTQ_TRY_RET(ptq_validate_stats_init(ctx, (int)b->n_classes, &run->stats));
        run->n_classes = b->n_classes;
    }
    if (!run->outputs && !(run->outputs = calloc((size_t)g->n_outputs + 1, sizeof *run->outputs)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
    if (run->fp32_cap < n_logits) {
        float *f = realloc(run->fp32, (size_t)n_logits * sizeof *f);
        if (!f)
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for %lld logits", (long long)n_logits);
        run->fp32 = f;
        run->fp32_cap = n_logits;
    }
    if (run->ref) {
        PTQ_TRY_RET(ref_rows(ctx, run->ref, b, run->fp32));
        if (b->index > 0) /* the overlay is set since the first batch: b is the quantized run */
            return ptq_validate_stats_add(ctx, run->stats, b->n, b->labels, run->fp32, b->logits);
        PTQ_TRY_RET(ref_check(ctx, run->ref, b, run->fp32));
    } else {
        memcpy(run->fp32, b->logits, (size_t)n_logits * sizeof *run->fp32);
    }
    ptq_exec_set_overlay(e, run->overlay);
    ptq_status st = ptq_runner_rerun(ctx, r, b, run->outputs);
    if (!run->ref) /* with ref it stays for the batches to come */
        ptq_exec_set_overlay(e, NULL);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *q = &run->outputs[b->logits_output];
    if (q->dtype != PTQ_DT_FLOAT || ptq_tensor_numel(q) != n_logits)
        return ptq_fail(ctx, PTQ_ERR_SHAPE, "output '%s' has another shape under the plan than in FP32",
                        g->values[g->outputs[b->logits_output]].name);
    PTQ_TRY_RET(ptq_validate_stats_add(ctx, run->stats, b->n, b->labels, run->fp32, q->data));
    b->outputs = run->outputs;
    b->logits = q->data;
    return PTQ_OK;
}

static ptq_status validate_end(void *user, ptq_ctx *ctx, ptq_runner *r)
{
    (void)user;
    (void)ctx;
    ptq_exec_set_overlay(ptq_session_exec(ptq_runner_session(r)), NULL);
    return PTQ_OK;
}

ptq_consumer ptq_validate_consumer(ptq_validate_run *run)
{
    ptq_consumer c = {run, NULL, validate_after, run->ref ? validate_end : NULL};
    return c;
}

void ptq_validate_run_free(ptq_validate_run *run)
{
    if (!run)
        return;
    ptq_validate_stats_free(run->stats);
    free(run->fp32);
    free(run->outputs);
    run->stats = NULL;
    run->fp32 = NULL;
    run->outputs = NULL;
    run->fp32_cap = 0;
}
