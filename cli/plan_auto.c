/* `ptq plan calib.h5 --model M --method auto --data V`: the calibrator
 * chosen per activation on measured evidence. For each of min-max,
 * entropy, percentile and MSE, every activation is quantized alone with
 * that method's range (the rest FP32) over --data (quant/sensitivity.c,
 * PTQ_SENS_ONLY); each activation takes the method that kept clearly more
 * top-1 (over 3 images) or, within that, 1 dB more logits SQNR; otherwise
 * the earlier of percentile (the default), mse, entropy, min-max. The
 * plan records the method and its evidence in each entry's source.
 * Covered by tests/cli_sensitivity_test.py (with --reduce-range:
 * tests/cli_plan_test.py). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ptq/hash.h"
#include "ptq/sensitivity.h"

/* percentile first: the default wins ties */
static const char *const METHODS[] = {"percentile", "mse", "entropy", "minmax"};
enum { N_METHODS = 4 };

/* Measures every activation of the plan of `method` for `target` alone over
 * ids (in the target's format: uint8 with a zero point for ort-cpu). The
 * plan's INT8 weights are on the reduce_range grid when reduce_range is 1:
 * percentile's plan becomes the one written. */
static ptq_status measure(ptq_ctx *ctx, cli_session *s, const char *model, const char *archive_path,
                          const char *method, const char *core, const char *placement, const char *target,
                          int reduce_range, const int64_t *ids, int64_t n_ids, int64_t batch, ptq_plan **plan,
                          ptq_sensitivity **sens)
{
    ptq_calib_set *archive = NULL;
    ptq_plan *core_plan = NULL;
    ptq_status st = cli_default_plan_target(ctx, model, s->graph, archive_path, method, core, placement, target,
                                            reduce_range, &archive, plan);
    if (st == PTQ_OK)
        st = ptq_sens_core_plan(ctx, s->graph, archive, *plan, &core_plan);
    if (st == PTQ_OK)
        st = ptq_sens_create(ctx, s->graph, *plan, core_plan, PTQ_SENS_ONLY, sens);
    if (st == PTQ_OK) {
        ptq_runner_params rp = {.session = s->ps, .ids = ids, .n_ids = n_ids, .batch = batch, .need_labels = 1,
                                .need_logits = 1, .prefetch = 1};
        rp.consumers[rp.n_consumers++] = ptq_sens_consumer(*sens);
        st = ptq_runner_run(ctx, &rp);
    }
    ptq_plan_free(core_plan);
    ptq_calib_set_free(archive);
    return st;
}

/* 1 when figures a are clearly better than b: more than 3 images more
 * top-1, or as many within 3 images and at least 1 dB more logits SQNR;
 * differences below that are noise, and the earlier method keeps it. */
static int better(const ptq_sens_figures *a, const ptq_sens_figures *b)
{
    if (a->top1 > b->top1 + 3)
        return 1;
    if (a->top1 < b->top1 - 3)
        return 0;
    const double x = isnan(a->sqnr_db) ? -INFINITY : a->sqnr_db, y = isnan(b->sqnr_db) ? -INFINITY : b->sqnr_db;
    return x >= y + 1.0;
}

int cli_plan_auto(const cli_opt *opts, int n_opts, const char *archive_path)
{
    const char *model = cli_get(opts, n_opts, "model"), *out = cli_get(opts, n_opts, "out");
    const char *data = cli_get(opts, n_opts, "data"), *core = cli_get(opts, n_opts, "core");
    if (!data)
        return cli_usage_error("plan", "--method auto measures each calibrator on --data (labelled images)");
    int64_t batch, n_samples, seed;
    int rc;
    if ((rc = cli_get_int("plan", opts, n_opts, "batch", 256, 1, &batch)) ||
        (rc = cli_get_int("plan", opts, n_opts, "samples", 1000, 0, &n_samples)) ||
        (rc = cli_get_int("plan", opts, n_opts, "seed", 0, 0, &seed)))
        return rc;
    const char *inputs[] = {model, archive_path, data};
    if ((rc = cli_check_outputs("plan", inputs, 3, &out, 1)) || (rc = cli_output_dir_ok("plan", out)))
        return rc; /* before the calibrators are measured */
    const int quiet = cli_get(opts, n_opts, "quiet") != NULL;
    const int reduce_range = cli_get(opts, n_opts, "reduce-range") != NULL;

    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = PTQ_OK;
    cli_session s;
    memset(&s, 0, sizeof s);
    ptq_plan *plans[N_METHODS] = {NULL};
    ptq_sensitivity *sens[N_METHODS] = {NULL};
    int64_t *ids = NULL, n_ids = 0;
    char *text = NULL, sha[65];
    cli_session_opts so = cli_session_opts_from(opts, n_opts);
    PTQ_TRY(st, cli_session_open_labelled(&ctx, "plan", &so, "--method auto compares predictions with them", &s), done);
    ptq_pick pick = {0, n_samples, (uint64_t)seed, 0, 0};
    PTQ_TRY(st, ptq_pick_samples(&ctx, s.n_samples, &pick, &ids, &n_ids), done);
    batch = cli_default_batch("plan", s.ps, batch, n_ids, cli_get(opts, n_opts, "batch") != NULL, 2);
    for (int m = 0; m < N_METHODS; m++) {
        if (!quiet)
            fprintf(stderr, "plan: measuring %s on %lld images\n", METHODS[m], (long long)n_ids);
        PTQ_TRY(st, measure(&ctx, &s, model, archive_path, METHODS[m], core, cli_get(opts, n_opts, "placement"),
                            cli_get(opts, n_opts, "target"), reduce_range, ids, n_ids, batch, &plans[m], &sens[m]),
                done);
    }
    ptq_plan *p = plans[0];
    int64_t chosen[N_METHODS] = {0};
    for (int64_t i = 0; i < p->n; i++) {
        ptq_plan_entry *e = &p->e[i];
        const ptq_sens_tensor *t0 = ptq_sens_tensor_at(sens[0], i);
        /* a Softmax output has its min-max range in every method's plan */
        if (e->is_weight || !ptq_prec_is_quantized(e->prec) || !t0->measured_a ||
            strcmp(e->source, PTQ_PLAN_SOURCE_SOFTMAX) == 0)
            continue;
        int best = 0;
        for (int m = 1; m < N_METHODS; m++)
            if (strcmp(plans[m]->e[i].name, e->name) == 0 && ptq_prec_is_quantized(plans[m]->e[i].prec) &&
                better(&ptq_sens_tensor_at(sens[m], i)->a, &ptq_sens_tensor_at(sens[best], i)->a))
                best = m;
        const ptq_sens_figures *f = &ptq_sens_tensor_at(sens[best], i)->a;
        char source[256];
        snprintf(source, sizeof source, "auto: archive %s (only it quantized: top-1 %.2f%%, SQNR %.2f dB)",
                 METHODS[best], f->n ? 100.0 * (double)f->top1 / (double)f->n : 0.0, f->sqnr_db);
        char *src = strdup(source);
        if (!src) {
            st = ptq_fail(&ctx, PTQ_ERR_NOMEM, "out of memory");
            goto done;
        }
        free(e->source);
        e->source = src;
        e->scales[0] = plans[best]->e[i].scales[0];
        e->zero_point = plans[best]->e[i].zero_point; /* uint8 (ort-cpu): the method's range, not only its width */
        chosen[best]++;
    }
    free(p->method);
    if (!(p->method = strdup("auto"))) {
        st = ptq_fail(&ctx, PTQ_ERR_NOMEM, "out of memory");
        goto done;
    }
    PTQ_TRY(st, cli_model_sha256(&ctx, model, sha), done);
    PTQ_TRY(st, ptq_plan_check(&ctx, p, s.graph, sha), done);
    PTQ_TRY(st, ptq_plan_to_json(&ctx, p, &text), done);
    PTQ_TRY(st, cli_write_text(&ctx, out, text), done);
    if (!quiet) {
        printf("%s: the calibrator chosen per activation:", cli_shown(out));
        for (int m = 0; m < N_METHODS; m++)
            printf(" %s %lld", METHODS[m], (long long)chosen[m]);
        printf("%s\nwrote %s\n", p->reduce_range ? "; weights reduce_range [-64, 64]" : "", cli_shown(out));
    }
done:
    free(text);
    free(ids);
    for (int m = 0; m < N_METHODS; m++) {
        ptq_sens_free(sens[m]);
        ptq_plan_free(plans[m]);
    }
    cli_session_close(&s);
    return cli_report("plan", &ctx, st);
}
