/* The reports' runner consumers (include/ptq/consumers.h): accuracy and
 * confusion counts, and FP32 against an overlay on one executor. Covered
 * by tests/test_runner.c, tests/cli_test.py and tests/cli_validate_test.py. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ptq/consumers.h"

/* The runner hands logits and labels only when its params ask for them. */
static ptq_status need_logits_labels(ptq_ctx *ctx, const char *consumer, const ptq_batch *b)
{
    if (!b->logits || !b->labels)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the %s consumer needs the %s: set %s in ptq_runner_params",
                        consumer, !b->logits ? "logits" : "labels", !b->logits ? "need_logits" : "need_labels");
    return PTQ_OK;
}

static ptq_status eval_after(void *user, ptq_ctx *ctx, ptq_runner *r, ptq_batch *b)
{
    ptq_eval_stats *stats = user;
    (void)r;
    PTQ_TRY_RET(need_logits_labels(ctx, "eval", b));
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

/* One batch's labels and logits, copied, whose figures a worker thread adds
 * to the stats while the runner goes on with the next batch. */
struct ptq_validate_job {
    pthread_t thread;
    int running;
    ptq_validate_stats *stats;
    int64_t n, cap;      /* images in the batch; rows the buffers hold */
    int32_t *labels;
    float *fp32, *q;
    ptq_ctx ctx;         /* the worker's status and message */
    ptq_status st;
};

static void *job_run(void *arg)
{
    struct ptq_validate_job *j = arg;
    j->st = ptq_validate_stats_add(&j->ctx, j->stats, j->n, j->labels, j->fp32, j->q);
    return NULL;
}

/* Waits for the batch in flight; its error, in ctx. */
static ptq_status job_join(ptq_ctx *ctx, struct ptq_validate_job *j)
{
    if (!j || !j->running)
        return PTQ_OK;
    pthread_join(j->thread, NULL);
    j->running = 0;
    if (j->st != PTQ_OK)
        return ptq_fail(ctx, j->st, "%s", j->ctx.msg);
    return PTQ_OK;
}

/* The figures of n images: after the batch before is added, on a worker
 * thread (in the caller's if none starts). */
static ptq_status stats_add_async(ptq_ctx *ctx, ptq_validate_run *run, int64_t n, int64_t k, const int32_t *labels,
                                  const float *fp32, const float *q)
{
    if (!run->job && !(run->job = calloc(1, sizeof *run->job)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
    struct ptq_validate_job *j = run->job;
    PTQ_TRY_RET(job_join(ctx, j));
    if (j->cap < n) { /* nothing in them is kept */
        free(j->labels);
        free(j->fp32);
        free(j->q);
        j->labels = malloc((size_t)n * sizeof *j->labels);
        j->fp32 = malloc((size_t)(n * k) * sizeof *j->fp32);
        j->q = malloc((size_t)(n * k) * sizeof *j->q);
        j->cap = j->labels && j->fp32 && j->q ? n : 0;
        if (!j->cap)
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for %lld logits", (long long)(n * k));
    }
    memcpy(j->labels, labels, (size_t)n * sizeof *labels);
    memcpy(j->fp32, fp32, (size_t)(n * k) * sizeof *fp32);
    memcpy(j->q, q, (size_t)(n * k) * sizeof *q);
    j->stats = run->stats;
    j->n = n;
    ptq_ctx_init(&j->ctx);
    if (pthread_create(&j->thread, NULL, job_run, j) == 0) {
        j->running = 1;
        return PTQ_OK;
    }
    return ptq_validate_stats_add(ctx, run->stats, n, j->labels, j->fp32, j->q);
}

static ptq_status validate_after(void *user, ptq_ctx *ctx, ptq_runner *r, ptq_batch *b)
{
    ptq_validate_run *run = user;
    ptq_exec *e = ptq_session_exec(ptq_runner_session(r));
    const ptq_graph *g = ptq_exec_graph(e);
    const int64_t n_logits = b->n * b->n_classes;
    PTQ_TRY_RET(need_logits_labels(ctx, "validate", b));
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
            return stats_add_async(ctx, run, b->n, b->n_classes, b->labels, run->fp32, b->logits);
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
    PTQ_TRY_RET(stats_add_async(ctx, run, b->n, b->n_classes, b->labels, run->fp32, q->data));
    b->outputs = run->outputs;
    b->logits = q->data;
    return PTQ_OK;
}

static ptq_status validate_end(void *user, ptq_ctx *ctx, ptq_runner *r)
{
    ptq_validate_run *run = user;
    ptq_exec_set_overlay(ptq_session_exec(ptq_runner_session(r)), NULL);
    return job_join(ctx, run->job);
}

ptq_consumer ptq_validate_consumer(ptq_validate_run *run)
{
    ptq_consumer c = {run, NULL, validate_after, validate_end};
    return c;
}

void ptq_validate_run_free(ptq_validate_run *run)
{
    if (!run)
        return;
    if (run->job) {
        ptq_ctx ignored;
        ptq_ctx_init(&ignored);
        (void)job_join(&ignored, run->job);
        free(run->job->labels);
        free(run->job->fp32);
        free(run->job->q);
        free(run->job);
        run->job = NULL;
    }
    ptq_validate_stats_free(run->stats);
    free(run->fp32);
    free(run->outputs);
    run->stats = NULL;
    run->fp32 = NULL;
    run->outputs = NULL;
    run->fp32_cap = 0;
}
