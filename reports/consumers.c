/* The reports' runner consumers (include/ptq/consumers.h): accuracy and
 * confusion counts, and FP32 against an overlay on one executor. Covered
 * by tests/test_runner.c, tests/cli_test.py and tests/cli_validate_test.py. */
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
    memcpy(run->fp32, b->logits, (size_t)n_logits * sizeof *run->fp32);
    ptq_exec_set_overlay(e, run->overlay);
    ptq_status st = ptq_runner_rerun(ctx, r, b, run->outputs);
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

ptq_consumer ptq_validate_consumer(ptq_validate_run *run)
{
    ptq_consumer c = {run, NULL, validate_after, NULL};
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
