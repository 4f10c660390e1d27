/* `ptq validate`: the model over a labelled image set in FP32 and under a
 * precision plan (simulated quantization, quant/fake_quant.c), side by side:
 * what quantization changed overall and class by class, as JSON and
 * Markdown in a report folder and a short summary on the terminal. Covered
 * by tests/cli_validate_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "ptq/fake_quant.h"
#include "ptq/hash.h"
#include "ptq/html_report.h"
#include "ptq/plan.h"
#include "ptq/consumers.h"

static const char validate_help[] =
    "usage: ptq validate --model M.onnx --plan plan.json --data D --report DIR [options]\n"
    "\n"
    "Runs the model over a labelled image set twice, in FP32 and as the plan\n"
    "says (activations rounded as each is produced, weights per output channel,\n"
    "FP16 tensors rounded to half), and reports FP32 and quantized top-1/top-5,\n"
    "the share of images whose prediction changed, per-class precision/recall/F1\n"
    "with deltas, the FP32, quantized and difference confusion matrices, classes\n"
    "whose recall fell by more than --recall-drop points (listed first), and the\n"
    "logits' SQNR and KL against FP32. Writes DIR/validate.json,\n"
    "DIR/validate.md, DIR/report.html (one self-contained page with charts) and\n"
    "the three confusion heatmaps as DIR/confusion-{fp32,quant,delta}.png (up to\n"
    "100 classes), all or none of them, and prints a summary and what it wrote.\n"
    "\n"
    "  --model FILE         the model the plan was made for (SHA-256 checked)\n"
    "  --plan FILE          a plan from `ptq plan` (or edited by hand)\n"
    "  --data PATH          labelled HDF5 file or PNG or JPEG folder\n"
    "  --report DIR         folder for validate.json, validate.md, report.html and the PNG heatmaps (made\n"
    "                       if missing, before any image is read)\n"
    "  --calib FILE         the calibration archive: report.html shows the |x| histograms of the first 8\n"
    "                       quantized activations with each calibrator's threshold\n"
    "  --sensitivity FILE   a report of `ptq sensitivity` on the same model: report.html adds its per-tensor\n"
    "                       bars and table, and the histograms (with --calib) are of its 8 most harmful\n"
    "                       activations\n"
    "  --trace FILE         PLAN.trace.json of `ptq plan --budget`: report.html adds the planner's moves\n"
    "  --recall-drop PTS    flag classes whose recall fell by more than this (default 1.0)\n"
    "  --device, --math, --batch, --threads, --limit, --preprocess, --progress,\n"
    "  " CLI_DATA_NAMES ",\n"
    "  --input NAME=DATASET (repeatable) as for `ptq eval`;\n"
    "  --json prints the JSON report on stdout\n"
    "  --logits FILE        also write the quantized logits as a float32 .npy array [N, classes]\n"
    "  --reference FILE     the FP32 logits of `ptq eval --logits FILE` with the same model, --data, --limit\n"
    "                       and --preprocess: FP32 runs on the first batch only, where it must match FILE\n"
    "                       (median relative difference at most 1e-3, else exit 7), and the report compares\n"
    "                       the plan with FILE's logits; every later batch runs once, under the plan\n"
    "  --profile            print the time per op type and in the plan's rounding on stderr (waits for the\n"
    "                       GPU after each node, which slows the run), then the command's timeline\n"
    "\n"
    "Exits 12 after writing the report when the quantized outputs collapse (constant\n"
    "logits, SQNR <= 0 dB, or every image predicted as one class while FP32 is not).\n"
    "\n"
    "Under mpirun or srun (MPI builds) the ranks share the work and rank 0 writes the same\n"
    "outputs one process would (README \"Running across GPUs\").\n";


/* st with path put before its message. */
static ptq_status named(ptq_ctx *ctx, ptq_status st, const char *path)
{
    if (st == PTQ_OK)
        return st;
    char why[PTQ_MSG_BYTES];
    snprintf(why, sizeof why, "%s", ctx->msg);
    return ptq_fail(ctx, st, "%s: %s", path, why);
}

/* The trace (ptq_html_inputs_check has read it) is of a plan of this one's target and weight grid: it records them
 * as a plan does (absent: trt, not reduce_range); one of another would show moves this plan never made. */
static ptq_status trace_fits(ptq_ctx *ctx, const char *trace_text, const ptq_plan *plan)
{
    cJSON *root = cJSON_Parse(trace_text);
    const cJSON *target = cJSON_GetObjectItemCaseSensitive(root, "target");
    const char *theirs = cJSON_IsString(target) ? target->valuestring : "trt";
    const int reduce_range = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "reduce_range"));
    char esc[64];
    ptq_status st = PTQ_OK;
    if (strcmp(theirs, ptq_target_name(plan->target)) != 0)
        st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the planner's trace is of a plan for target %s, this plan's is %s",
                      ptq_escape(theirs, esc, sizeof esc), ptq_target_name(plan->target));
    else if (reduce_range != (plan->reduce_range != 0))
        st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the planner's trace is of a plan %s --reduce-range, this one %s",
                      reduce_range ? "with" : "without", plan->reduce_range ? "has it" : "has not");
    cJSON_Delete(root);
    return st;
}

int cmd_validate(int argc, char **argv)
{
    cli_opt opts[] = {{"model", 1, NULL},      {"plan", 1, NULL},       {"data", 1, NULL},     {"report", 1, NULL},
                      {"recall-drop", 1, NULL}, {"device", 1, NULL}, {"math", 1, NULL},    {"batch", 1, NULL},    {"threads", 1, NULL},
                      {"limit", 1, NULL},      {"preprocess", 1, NULL}, CLI_DATA_OPTS,
                      {"progress", 0, NULL}, {"json", 0, NULL},
                      {"logits", 1, NULL},     {"help", 0, NULL},
                      {"calib", 1, NULL}, {"sensitivity", 1, NULL},
                      {"trace", 1, NULL},      {"profile", 0, NULL}, {"reference", 1, NULL}};
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    const char *pos[1];
    int n_pos = 0, rc = cli_parse("validate", argc, argv, opts, n_opts, pos, &n_pos, 0);
    if (rc)
        return rc;
    if (cli_get(opts, n_opts, "help")) {
        fputs(validate_help, stdout);
        return 0;
    }
    const char *model = cli_get(opts, n_opts, "model"), *plan_path = cli_get(opts, n_opts, "plan");
    const char *report = cli_get(opts, n_opts, "report");
    if (!model || !plan_path || !cli_get(opts, n_opts, "data") || !report)
        return cli_usage_error("validate", "--model, --plan, --data and --report are required");
    enum { N_REPORT = CLI_REPORT_FILES };
    char report_paths[N_REPORT][4200];
    for (int i = 0; i < N_REPORT; i++)
        snprintf(report_paths[i], sizeof report_paths[i], "%s/%s", report, cli_report_names[i]);
    const char *calib_path = cli_get(opts, n_opts, "calib"), *sens_path = cli_get(opts, n_opts, "sensitivity");
    const char *trace_path = cli_get(opts, n_opts, "trace");
    const char *ref_path = cli_get(opts, n_opts, "reference");
    const char *val_inputs[] = {model,     plan_path,  cli_get(opts, n_opts, "data"), calib_path, sens_path,
                                trace_path, ref_path};
    const char *val_outputs[N_REPORT + 1] = {cli_get(opts, n_opts, "logits")};
    for (int i = 0; i < N_REPORT; i++)
        val_outputs[i + 1] = report_paths[i];
    if ((rc = cli_rank0_rc(cli_is_writer() ? cli_check_outputs("validate", val_inputs, 7, val_outputs, N_REPORT + 1)
                                           : 0)))
        return rc;
    int64_t batch, limit, threads;
    if ((rc = cli_get_int("validate", opts, n_opts, "batch", 256, 1, &batch)) ||
        (rc = cli_get_int("validate", opts, n_opts, "limit", 0, 1, &limit)) ||
        (rc = cli_get_int("validate", opts, n_opts, "threads", 0, 1, &threads)))
        return rc;
    ptq_validate_opts vo = PTQ_VALIDATE_OPTS_INIT;
    const char *drop = cli_get(opts, n_opts, "recall-drop");
    if (drop) {
        char *end = NULL;
        vo.recall_drop_flag = strtod(drop, &end);
        if (!cli_plain_number(drop) || !end || *end || end == drop ||
            !(vo.recall_drop_flag >= 0 && vo.recall_drop_flag <= 100))
            return cli_usage_error("validate", "--recall-drop wants points in [0, 100], got '%s'", drop);
    }
    if (threads > 0)
        ptq_cpu_set_threads((int)threads);
    if (cli_get(opts, n_opts, "logits") && ptq_dist_size() > 1)
        return cli_usage_error("validate", "--logits is written by one process only: run it without mpirun");

    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = PTQ_OK;
    cli_session s;
    memset(&s, 0, sizeof s);
    ptq_plan *plan = NULL;
    ptq_fq *fq = NULL;
    ptq_validate_run vr;
    memset(&vr, 0, sizeof vr);
    int64_t *ids = NULL, n_total = 0, n_picked = 0;
    const char **names = NULL;
    char *json = NULL, *md = NULL, *html = NULL, *summary = NULL, *header = NULL, logits_tmp[4096] = "";
    char *sens_text = NULL, *trace_text = NULL;
    void *png[3] = {NULL, NULL, NULL};
    size_t png_bytes[3] = {0, 0, 0};
    int made_dir = 0;
    unsigned collapsed = 0;
    ptq_calib_set *archive = NULL;
    ptq_validate_ref ref = {.name = ref_path};
    float *ref_logits = NULL;
    int64_t *ref_ids = NULL, ref_rows = 0;
    ptq_html_hist *hists = NULL;
    int64_t n_hists = 0;
    const char *logits_path = cli_get(opts, n_opts, "logits");
    FILE *lfile = NULL;
    cli_rank_read reads[4] = {{NULL, ""}, {NULL, ""}, {NULL, ""}, {NULL, ""}}; /* model, plan, reference, data */
    cli_session_opts so = cli_session_opts_from(opts, n_opts);
    so.profile = cli_get(opts, n_opts, "profile") != NULL;
    PTQ_TRY(st, cli_session_open_labelled(&ctx, "validate", &so, "validation compares predictions with them", &s),
            ready);
    PTQ_TRY(st, cli_rank_read_file(&ctx, model, 1, &reads[0]), ready);
    PTQ_TRY(st, cli_rank_read_file(&ctx, plan_path, 0, &reads[1]), ready);
    PTQ_TRY(st, cli_rank_read_file(&ctx, ref_path, 0, &reads[2]), ready);
    cli_rank_read_count(so.data, s.n_samples, &reads[3]);
    /* one model: the plan is checked against the session's graph and runs as an overlay on its executor */
    PTQ_TRY(st, cli_plan_for(&ctx, plan_path, model, s.graph, &plan), ready);
    cli_mark("reading the plan");
    PTQ_TRY(st, ptq_fq_create(&ctx, s.graph, plan, &fq), ready);
    cli_mark("preparing its rounding");
    /* before any image: a bad archive, report or trace fails at once */
    if (sens_path) { /* as strictly as `ptq plan --budget` reads it, and measured for this plan's formats */
        ptq_sens_summary sens;
        memset(&sens, 0, sizeof sens);
        st = cli_sens_load(&ctx, sens_path, s.graph, plan->model_sha256, &sens, &sens_text);
        if (st == PTQ_OK)
            st = cli_sens_fits(&ctx, sens_path, &sens, plan->target, plan->core, plan->reduce_range);
        if (st == PTQ_OK)
            st = cli_sens_method_fits(&ctx, "validate", sens_path, sens_text, plan->method, plan->placement,
                                      !cli_is_writer()); /* its note once, from rank 0 under mpirun */
        ptq_sens_summary_free(&sens);
        if (st != PTQ_OK)
            goto ready;
    }
    if (trace_path)
        PTQ_TRY(st, cli_read_text(&ctx, trace_path, &trace_text), ready);
    PTQ_TRY(st, named(&ctx, ptq_html_inputs_check(&ctx, plan->model_sha256, sens_text, NULL), sens_path), ready);
    PTQ_TRY(st, named(&ctx, ptq_html_inputs_check(&ctx, plan->model_sha256, NULL, trace_text), trace_path), ready);
    if (trace_text)
        PTQ_TRY(st, named(&ctx, trace_fits(&ctx, trace_text, plan), trace_path), ready);
    if (calib_path) {
        PTQ_TRY(st, ptq_calib_set_read(&ctx, calib_path, &archive), ready);
        if (sens_text)
            PTQ_TRY(st, named(&ctx, ptq_html_hists_ranked(&ctx, archive, plan, sens_text, 0, &hists, &n_hists),
                              calib_path), ready);
        else
            PTQ_TRY(st, ptq_html_hists_make(&ctx, archive, plan, 0, &hists, &n_hists), ready);
    }
    if (cli_is_writer()) /* rank 0 writes the report */
        PTQ_TRY(st, cli_report_dir(&ctx, report, &made_dir), ready);
    ptq_pick pick = {limit, 0, 0, 0, 0};
    PTQ_TRY(st, ptq_pick_samples(&ctx, s.n_samples, &pick, &ids, &n_total), ready);
    n_picked = n_total;
    if (ref_path) { /* its rows are the whole pick's, in order, whichever rank runs them */
        PTQ_TRY(st, cli_npy_read(&ctx, ref_path, &ref_rows, &ref.cols, &ref_logits), ready);
        if (ref_rows != n_picked) {
            st = ptq_fail(&ctx, PTQ_ERR_DATA, "%s has %lld rows of logits, this run %lld images of %s: give the "
                          "logits of `ptq eval --logits` with the same --data and --limit", ref_path,
                          (long long)ref_rows, (long long)n_picked, so.data);
            goto ready;
        }
        if (!(ref_ids = malloc((size_t)n_picked * sizeof *ref_ids))) {
            st = ptq_fail(&ctx, PTQ_ERR_NOMEM, "out of memory");
            goto ready;
        }
        memcpy(ref_ids, ids, (size_t)n_picked * sizeof *ref_ids);
        cli_mark("reading the reference");
        ref.logits = ref_logits;
        ref.ids = ref_ids;
        ref.n = n_picked;
        vr.ref = &ref;
    }
    /* the job's batch, whatever share a rank runs: with --reference the job's first batch is checked, on rank 0 */
    batch = cli_default_batch("validate", s.ps, batch, n_picked, cli_get(opts, n_opts, "batch") != NULL, 0);
    PTQ_TRY(st, cli_rank_ids(&ctx, &ids, &n_total, ref_path ? batch : 0), ready);
    if (!cli_is_writer())
        ref.tolerance = INFINITY; /* this rank's first batch is not the job's */
    cli_npy_writer npy = {NULL, NULL, n_total};
    if (logits_path) {
        PTQ_TRY(st, cli_tmp_open(&ctx, logits_path, logits_tmp, sizeof logits_tmp, &lfile), ready);
        npy.f = lfile;
        npy.path = logits_path;
    }
ready: /* every rank passes here once, and learns whether any failed or read another model, plan or data set */
    cli_session_notes_agree("validate", &s);
    PTQ_TRY(st, cli_ranks_agree_read(&ctx, st, reads, 4), done);
    vr.overlay = ptq_fq_overlay(fq);
    cli_progress prog;
    char stage[64];
    cli_progress_start(&prog, cli_rank_stage("validate", stage, sizeof stage), "img", n_total,
                       cli_get(opts, n_opts, "progress") != NULL);
    ptq_runner_params rp = {.session = s.ps, .ids = ids, .n_ids = n_total, .batch = batch, .need_labels = 1,
                            .need_logits = 1, .prefetch = 1, .progress = cli_progress_cb, .progress_user = &prog};
    rp.consumers[rp.n_consumers++] = ptq_validate_consumer(&vr);
    if (lfile) /* after the comparison: the quantized logits */
        rp.consumers[rp.n_consumers++] = cli_npy_consumer(&npy);
    st = ptq_runner_run(&ctx, &rp);
    ptq_exec_set_overlay(s.exec, NULL); /* a failed run with --reference leaves it set */
    if (st != PTQ_OK)
        goto run_done;
    cli_progress_end(&prog, n_total);
    st = cli_rank_read_data(&ctx, so.data, s.data, &reads[3]); /* hashed while the images ran */
run_done: /* every rank passes here once, and learns whether any failed or ran other data */
    PTQ_TRY(st, cli_ranks_agree_read(&ctx, st, &reads[3], 1), done);
    if (ptq_dist_size() > 1) { /* a rank with no samples (fewer than ranks) adds empty figures of the others' classes */
        int64_t k = vr.n_classes;
        PTQ_TRY(st, ptq_dist_allreduce_i64(&ctx, &k, 1, PTQ_DIST_MAX), done);
        if (!vr.stats)
            st = ptq_validate_stats_init(&ctx, (int)k, &vr.stats);
        vr.n_classes = k;
        /* a rank that could not make them (the confusion matrix past its memory limit) stops every rank here,
           before the reduction would read its figures */
        PTQ_TRY(st, ptq_dist_agree(&ctx, st), done);
    }
    PTQ_TRY(st, ptq_validate_stats_allreduce(&ctx, vr.stats), done);
    PTQ_TRY(st, ptq_dist_agree(&ctx, st), done);
    if (!cli_is_writer()) /* rank 0 writes the report */
        goto written;
    n_total = n_picked;
    const int64_t k = vr.n_classes;
    ptq_validate_stats *vs = vr.stats;
    const ptq_exec *eq = s.exec;
    names = cli_class_names(s.data, k);
    vo.class_names = names;
    cli_json *hdr = cli_json_header("validate", ptq_exec_device_name(eq));
    cli_json_str(hdr, "math", ptq_math_name(ptq_exec_math(eq)));
    if ((st = cli_json_provenance(&ctx, hdr, model, so.data, s.data, s.data_spec)) != PTQ_OK) {
        free(cli_json_done(hdr));
        goto written;
    }
    cli_json_str(hdr, "plan", plan_path);
    cli_json_str(hdr, "plan_core", ptq_prec_name(plan->core));
    cli_json_str(hdr, "plan_method", plan->method ? plan->method : "");
    cli_json_num(hdr, "plan_tensors", (double)plan->n);
    if (ref_path) { /* where the FP32 side came from, and how well the first batch matched it */
        char sha[65];
        if ((st = ptq_sha256_file(&ctx, ref_path, sha)) != PTQ_OK) {
            free(cli_json_done(hdr));
            goto written;
        }
        cli_json_str(hdr, "fp32_reference", ref_path);
        cli_json_str(hdr, "fp32_reference_sha256", sha);
        cli_json_num(hdr, "fp32_reference_checked_images", (double)(batch < n_total ? batch : n_total));
        cli_json_num(hdr, "fp32_reference_median_rel_diff", ref.checked_median);
    }
    if (!(header = cli_json_done(hdr))) {
        st = ptq_fail(&ctx, PTQ_ERR_NOMEM, "out of memory");
        goto written;
    }
    vo.header_json = header;
    PTQ_TRY(st, ptq_validate_format_json(&ctx, vs, &vo, &json), written);
    PTQ_TRY(st, ptq_validate_format_markdown(&ctx, vs, &vo, &md), written);
    PTQ_TRY(st, ptq_validate_format_summary(&ctx, vs, &vo, &summary), written);
    ptq_html_extra hx = {model,     plan_path, so.data,   calib_path,       hists,
                         n_hists,   sens_text, trace_text, sens_text != NULL};
    PTQ_TRY(st, ptq_validate_format_html(&ctx, vs, &vo, &hx, &html), written);
    const int n_png = cli_report_n_files(k) - 3;
    for (int i = 0; i < n_png; i++)
        PTQ_TRY(st, ptq_validate_format_png(&ctx, vs, &vo, i, &png[i], &png_bytes[i]), written);
    cli_out_file files[N_REPORT] = {{report_paths[0], json, strlen(json), 1},
                                    {report_paths[1], md, strlen(md), 1},
                                    {report_paths[2], html, strlen(html), 0}};
    for (int i = 0; i < n_png; i++)
        files[3 + i] = (cli_out_file){report_paths[3 + i], png[i], png_bytes[i], 0};
    /* the report and the logits take their names together: a failed rename leaves both as they were */
    char *done_tmp[1] = {logits_tmp};
    const char *done_paths[1] = {logits_path};
    const int n_done = lfile != NULL;
    if (lfile)
        PTQ_TRY(st, cli_tmp_close(&ctx, &lfile, logits_tmp, logits_path), written);
    PTQ_TRY(st, cli_write_files_with(&ctx, files, 3 + n_png, done_tmp, done_paths, n_done), written);
    made_dir = 0; /* it holds the report now */
    for (int i = 3 + n_png; i < N_REPORT; i++) /* no heatmaps above 100 classes: none of an earlier report either */
        if (unlink(report_paths[i]) != 0 && errno != ENOENT)
            fprintf(stderr, "ptq validate: warning: cannot remove %s, a heatmap of an earlier report: %s\n",
                    cli_shown(report_paths[i]), strerror(errno));
    ptq_atomic_forget_dir(report);
    ptq_validate_totals vt;
    ptq_validate_stats_totals(vs, &vt);
    collapsed = vt.collapsed;
    if (cli_get(opts, n_opts, "json")) {
        printf("%s\n", json);
    } else {
        printf("model    %s\nplan     %s (core %s)\ndata     %s (%lld %s)\ndevice   %s\n\n%s\n"
               "report   %s:",
               cli_shown(model), cli_shown(plan_path), ptq_prec_name(plan->core), cli_shown(so.data),
               (long long)n_total,
               ptq_session_named_inputs(s.ps) ? "samples" : "images", ptq_exec_device_name(eq),
               summary, cli_shown(report));
        for (int i = 0; i < 3 + n_png; i++)
            printf(" %s%s", cli_report_names[i], i + 1 < 3 + n_png ? "," : "\n");
        printf("open     %s\n", cli_shown(report_paths[2]));
    }
    if (so.profile) /* the FP32 and the quantized run of every batch, together */
        cli_profile_print(&s, n_total, -1.0);
written: /* and every rank learns whether that went well */
    st = ptq_dist_agree(&ctx, st);
done:
    if (made_dir && st != PTQ_OK) {
        ptq_atomic_forget_dir(report);
        rmdir(report); /* made for this run, still empty */
    }
    if (lfile)
        fclose(lfile);
    if (logits_tmp[0])
        remove(logits_tmp);
    free(json);
    free(md);
    free(html);
    free(sens_text);
    free(trace_text);
    for (int i = 0; i < 3; i++)
        free(png[i]);
    ptq_html_hists_free(hists, n_hists);
    ptq_calib_set_free(archive);
    free(summary);
    free(header);
    free(names);
    free(ids);
    free(ref_ids);
    free(ref_logits);
    ptq_validate_run_free(&vr);
    ptq_fq_free(fq);
    ptq_plan_free(plan);
    cli_session_close(&s);
    if (st == PTQ_OK && ptq_dist_size() > 1) { /* rank 0 alone made the report: every rank exits as it does */
        int64_t c = collapsed;
        st = ptq_dist_bcast(&ctx, &c, sizeof c, 0);
        collapsed = (unsigned)c;
    }
    if (st == PTQ_OK && collapsed) { /* the report says so too; a pipeline gates on the code */
        char why[160];
        if (cli_is_writer())
            fprintf(stderr, "ptq validate: error: the quantized outputs collapsed (%s): the accuracy deltas mean "
                            "nothing; keep more tensors in FP16 or FP32 (look at the logits' range: FP16 flushes "
                            "values below 6e-8 to zero)\n", ptq_validate_collapse_text(collapsed, why, sizeof why));
        return EXIT_COLLAPSED;
    }
    return cli_report("validate", &ctx, st);
}
