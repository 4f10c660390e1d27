/* `ptq plan calib.h5 --model M --sensitivity sens.json --budget PTS --data V`:
 * the accuracy-budgeted plan (quant/planner.c), its trace on the terminal and
 * next to the plan (PLAN.trace.json), and exit 11 when no plan met the
 * budget (the best one found is written). Covered by
 * tests/cli_sensitivity_test.py (with --reduce-range: tests/cli_plan_test.py). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "ptq/hash.h"
#include "ptq/sensitivity.h"

typedef struct step_printer {
    const char *const *names; /* [n_names] class names as the reports take them (cli_class_names) */
    int n_names;
    const char *high; /* what the moves go to: "fp16", "fp32" (target ort-cpu) */
    int quiet;
} step_printer;

static void print_step(void *user, int step, const char *moved, double drop, int worst, double worst_drop,
                       int64_t n_float, int64_t n_tensors)
{
    const step_printer *sp = user;
    if (sp->quiet)
        return;
    const char *cname = worst >= 0 && worst < sp->n_names ? sp->names[worst] : NULL;
    char wname[256], mname[256], wpart[320]; /* names from the files, control characters escaped */
    if (cname)
        ptq_escape(cname, wname, sizeof wname);
    else
        snprintf(wname, sizeof wname, "%d", worst);
    /* both as drops (points lost), as the trace writes them; + 0.0 prints no "-0.00" */
    if (worst_drop > 0)
        snprintf(wpart, sizeof wpart, "worst class %s drop %.2f pts", wname, worst_drop + 0.0);
    else /* no class lost recall: none is the worst */
        snprintf(wpart, sizeof wpart, "no class lost recall");
    fprintf(stderr, "plan: step %3d  %s top-1 drop %6.2f pts  %s  %s %lld/%lld\n", step,
            cli_padded(moved ? moved : "(the default plan)", 44, mname, sizeof mname), drop + 0.0, wpart, sp->high,
            (long long)n_float, (long long)n_tensors);
}

int cli_points_parse(const char *cmd, const char *flag, const char *value, double *out)
{
    char *end = NULL;
    const double x = strtod(value, &end);
    if (!cli_plain_number(value) || !end || end == value || (*end && strcmp(end, "%") != 0) || !isfinite(x) || x < 0)
        return cli_usage_error(cmd, "--%s wants points of %s >= 0 (e.g. 0.3; a trailing %% means the same), got '%s'",
                               flag, strcmp(flag, "class-budget") == 0 ? "a class's recall" : "top-1", value);
    *out = x;
    return 0;
}

/* A finite points value >= 0 from flag name, or NAN with a message printed. */
static double points_flag(const cli_opt *opts, int n_opts, const char *name, double dflt)
{
    const char *v = cli_get(opts, n_opts, name);
    double x = dflt;
    return v && cli_points_parse("plan", name, v, &x) ? NAN : x;
}

static char *trace_json(const ptq_budget_result *r, const step_printer *sp, double budget, double class_budget,
                        const ptq_plan *plan)
{
    /* ort-cpu moves to FP32: its own keys, so that a reader of moved_to_fp16 never takes an FP32 move for one */
    const int ort_cpu = plan->target == PTQ_TARGET_ORT_CPU;
    const char *moved_key = ort_cpu ? "moved_to_fp32" : "moved_to_fp16", *count_key = ort_cpu ? "fp32_tensors"
                                                                                                : "fp16_tensors";
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "ptq-plan-trace");
    /* whose plan it traces: ptq validate --trace refuses the trace of another model's plan */
    cJSON *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(model, "name", plan->model_name ? plan->model_name : "");
    cJSON_AddStringToObject(model, "sha256", plan->model_sha256);
    if (ort_cpu) /* as in the plan: absent means trt */
        cJSON_AddStringToObject(root, "target", ptq_target_name(plan->target));
    if (plan->reduce_range) /* as in the plan: every plan measured had its INT8 weights on [-64, 64] */
        cJSON_AddTrueToObject(root, "reduce_range");
    cJSON_AddNumberToObject(root, "budget_pts", budget);
    if (class_budget >= 0)
        cJSON_AddNumberToObject(root, "class_budget_pts", class_budget);
    cJSON_AddBoolToObject(root, "met", r->met);
    cJSON_AddNumberToObject(root, "top1_fp32", r->top1_fp32);
    cJSON *arr = cJSON_AddArrayToObject(root, "steps");
    for (int64_t i = 0; arr && i < r->n_steps; i++) {
        const ptq_budget_step *s = &r->steps[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, o);
        if (s->moved)
            cJSON_AddStringToObject(o, moved_key, s->moved);
        else
            cJSON_AddNullToObject(o, moved_key);
        cJSON_AddNumberToObject(o, "top1", s->top1);
        cJSON_AddNumberToObject(o, "top1_drop_pts", s->top1_drop_pts);
        const char *cname = s->worst_class >= 0 && s->worst_class < sp->n_names ? sp->names[s->worst_class] : NULL;
        cJSON *w = cJSON_AddObjectToObject(o, "worst_class");
        cJSON_AddNumberToObject(w, "index", s->worst_class);
        if (cname)
            cJSON_AddStringToObject(w, "name", cname);
        cJSON_AddNumberToObject(w, "recall_drop_pts", s->worst_class_drop_pts);
        cJSON_AddNumberToObject(o, count_key, (double)s->n_fp16);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

int cli_plan_budgeted(const cli_opt *opts, int n_opts, const char *archive_path)
{
    const char *model = cli_get(opts, n_opts, "model"), *out = cli_get(opts, n_opts, "out");
    const char *sens_path = cli_get(opts, n_opts, "sensitivity"), *data = cli_get(opts, n_opts, "data");
    if (!sens_path || !cli_get(opts, n_opts, "budget") || !data)
        return cli_usage_error("plan", "a budgeted plan needs --sensitivity, --budget and --data (labelled)");
    const double budget = points_flag(opts, n_opts, "budget", 0), class_budget = points_flag(opts, n_opts, "class-budget", -1);
    if (isnan(budget) || isnan(class_budget))
        return EXIT_USAGE;
    int64_t batch, n_samples, seed, max_moves;
    int rc;
    if ((rc = cli_get_int("plan", opts, n_opts, "max-moves", -1, 0, &max_moves)) ||
        (rc = cli_get_int("plan", opts, n_opts, "batch", 256, 1, &batch)) ||
        (rc = cli_get_int("plan", opts, n_opts, "samples", 1000, 0, &n_samples)) ||
        (rc = cli_get_int("plan", opts, n_opts, "seed", 0, 0, &seed)))
        return rc;
    char trace_path[4200];
    cli_sibling_path(out, ".trace.json", trace_path, sizeof trace_path);
    const char *inputs[] = {model, archive_path, sens_path, data}, *outputs[] = {out, trace_path};
    if ((rc = cli_check_outputs("plan", inputs, 4, outputs, 2)) || (rc = cli_output_dir_ok("plan", out)))
        return rc; /* before the search, which takes minutes */

    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = PTQ_OK;
    cli_session s;
    memset(&s, 0, sizeof s);
    ptq_calib_set *archive = NULL;
    ptq_plan *def = NULL, *plan = NULL;
    ptq_sens_summary sens;
    memset(&sens, 0, sizeof sens);
    ptq_budget_result res;
    memset(&res, 0, sizeof res);
    const char **names = NULL;
    int64_t *ids = NULL, n_ids = 0;
    char *text = NULL, *trace = NULL, *sens_text = NULL, sha[65];
    const int quiet = cli_get(opts, n_opts, "quiet") != NULL;
    const int reduce_range = cli_get(opts, n_opts, "reduce-range") != NULL;
    /* everything checked before any image is read */
    cli_session_opts so = cli_session_opts_from(opts, n_opts);
    PTQ_TRY(st, cli_session_open_labelled(&ctx, "plan", &so,
                                          class_budget >= 0 ? "a budget compares predictions with them (and "
                                                              "--class-budget needs per-class labels)"
                                                            : "a budget compares predictions with them",
                                          &s),
            done);
    PTQ_TRY(st, cli_default_plan_target(&ctx, model, s.graph, archive_path, cli_get(opts, n_opts, "method"),
                                        cli_get(opts, n_opts, "core"), cli_get(opts, n_opts, "placement"),
                                        cli_get(opts, n_opts, "target"), reduce_range, &archive, &def),
            done);
    PTQ_TRY(st, cli_model_sha256(&ctx, model, sha), done);
    PTQ_TRY(st, cli_sens_load(&ctx, sens_path, s.graph, sha, &sens, &sens_text), done);
    ptq_calib_provenance pv;
    ptq_calib_set_provenance(archive, &pv);
    if (strcmp(sens.archive_sample_ids_sha256, pv.sample_ids_sha256) != 0) {
        st = ptq_fail(&ctx, PTQ_ERR_INVALID_ARG, "%s was measured with another calibration archive than %s", sens_path,
                      archive_path);
        goto done;
    }
    PTQ_TRY(st, cli_sens_fits(&ctx, sens_path, &sens, def->target, def->core, def->reduce_range), done);
    PTQ_TRY(st, cli_sens_method_fits(&ctx, "plan", sens_path, sens_text, def->method, def->placement, quiet),
            done);
    if (ptq_sens_covers(&ctx, &sens, def) != PTQ_OK) {
        char why[PTQ_MSG_BYTES];
        snprintf(why, sizeof why, "%s", ctx.msg);
        st = ptq_fail(&ctx, PTQ_ERR_INVALID_ARG, "%s: %s", sens_path, why);
        goto done;
    }
    ptq_pick pick = {0, n_samples, (uint64_t)seed, 0, 0};
    PTQ_TRY(st, ptq_pick_samples(&ctx, s.n_samples, &pick, &ids, &n_ids), done);
    batch = cli_default_batch("plan", s.ps, batch, n_ids, cli_get(opts, n_opts, "batch") != NULL, 2);
    const char *high = def->target == PTQ_TARGET_ORT_CPU ? "fp32" : "fp16";
    const int n_names = ptq_dataset_n_classes(s.data) > 0 ? ptq_dataset_n_classes(s.data) : 0;
    if (!(names = cli_class_names(s.data, n_names))) {
        st = ptq_fail(&ctx, PTQ_ERR_NOMEM, "out of memory");
        goto done;
    }
    step_printer sp = {names, n_names, high, quiet};
    ptq_budget b = {budget, class_budget, max_moves, batch, print_step, &sp};
    PTQ_TRY(st, ptq_plan_budgeted(&ctx, s.ps, ids, n_ids, def, &sens, &b, &plan, &res), done);
    PTQ_TRY(st, ptq_plan_check(&ctx, plan, s.graph, sha), done);
    PTQ_TRY(st, ptq_plan_to_json(&ctx, plan, &text), done);
    if (!(trace = trace_json(&res, &sp, budget, class_budget, plan))) {
        st = ptq_fail(&ctx, PTQ_ERR_NOMEM, "out of memory");
        goto done;
    }
    /* both or neither, the trace renamed first: a failure leaves the files that were there (removing a plan just
     * written over one lost the old plan) */
    const cli_out_file files[] = {{trace_path, trace, strlen(trace), 1}, {out, text, strlen(text), 1}};
    PTQ_TRY(st, cli_write_files(&ctx, files, 2), done);
    if (!quiet) {
        const ptq_budget_step *best = &res.steps[0];
        for (int64_t i = 1; i < res.n_steps; i++)
            if (res.met ? i == res.n_steps - 1 : res.steps[i].top1_drop_pts < best->top1_drop_pts)
                best = &res.steps[i];
        char class_part[400] = "", wname[256];
        if (class_budget >= 0) { /* the other budget, which a plan within the top-1 one may miss */
            const int w = best->worst_class;
            if (w >= 0 && w < n_names && names[w])
                ptq_escape(names[w], wname, sizeof wname);
            else
                snprintf(wname, sizeof wname, "%d", w);
            if (best->worst_class_drop_pts > 0)
                snprintf(class_part, sizeof class_part, ", worst class %s lost %.2f pts of recall (class budget %.2f)",
                         wname, best->worst_class_drop_pts, class_budget);
            else
                snprintf(class_part, sizeof class_part, ", no class lost recall (class budget %.2f)", class_budget);
        }
        printf("%s: top-1 %.2f%% against FP32 %.2f%% (%.2f pts lost, budget %.2f)%s, %lld of %lld tensors in %s%s%s\n"
               "wrote %s and %s\n",
               res.met ? "budget met" : "NO PLAN MET THE BUDGET; the best one found", 100 * best->top1,
               100 * res.top1_fp32, best->top1_drop_pts + 0.0, budget, class_part, (long long)best->n_fp16,
               (long long)plan->n,
               def->target == PTQ_TARGET_ORT_CPU ? "FP32" : "FP16",
               def->target == PTQ_TARGET_ORT_CPU ? " (target ort-cpu)" : "",
               plan->reduce_range ? ", weights reduce_range [-64, 64]" : "", cli_shown(out),
               cli_shown(trace_path));
    }
done:;
    const int met = res.met;
    free(text);
    free(trace);
    free(sens_text);
    free(ids);
    free(names);
    ptq_budget_result_free(&res);
    ptq_sens_summary_free(&sens);
    ptq_plan_free(plan);
    ptq_plan_free(def);
    ptq_calib_set_free(archive);
    cli_session_close(&s);
    rc = cli_report("plan", &ctx, st);
    if (rc == 0 && !met) {
        if (class_budget >= 0)
            fprintf(stderr, "ptq plan: no plan met the budgets of %.2f points of top-1 and %.2f of a class's recall; "
                    "the best one found was written (exit %d)\n", budget, class_budget, EXIT_BUDGET);
        else
            fprintf(stderr, "ptq plan: no plan met the budget of %.2f points; the best one found was written "
                    "(exit %d)\n", budget, EXIT_BUDGET);
        return EXIT_BUDGET;
    }
    return rc;
}
