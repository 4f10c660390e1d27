/* `ptq sensitivity`: per tensor, what quantizing only it costs against FP32
 * and what keeping only it in float (FP16, FP32 for ort-cpu) recovers from the default plan, class by
 * class (quant/sensitivity.c over the library runner). Writes the JSON and
 * a Markdown table sorted by harm. Covered by tests/cli_sensitivity_test.py
 * (--reduce-range: tests/cli_plan_test.py). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "ptq/hash.h"
#include "ptq/html_report.h"
#include "ptq/sensitivity.h"

static const char sensitivity_help[] =
    "usage: ptq sensitivity --model M.onnx --calib calib.h5 --data V --out sens.json [options]\n"
    "\n"
    "For every activation and weight the default plan covers: (a) only it quantized\n"
    "in the core format (with --target ort-cpu: activations uint8 with a zero point),\n"
    "the rest FP32 — the logits' SQNR and KL against FP32, top-1 agreement with FP32,\n"
    "the top-1 delta and each class's recall delta; (b) the default plan with only it\n"
    "in FP16 (FP32 with --target ort-cpu) — the top-1 it recovers. Each batch runs\n"
    "FP32 once and every (a) run starts from the kept FP32 values at the node that\n"
    "makes the tensor; the default plan runs once and every (b) run starts from its\n"
    "kept values the same way. Writes sens.json and, next to it, sens.md (sorted\n"
    "by harm) and sens.html (a self-contained page: both modes as bars, the table,\n"
    "the |x| histograms of the 8 most harmful activations), all three or none.\n"
    "\n"
    "  --model FILE         the model the archive was made from\n"
    "  --calib FILE         its calibration archive (scales come from it)\n"
    "  --data PATH          labelled HDF5 file or PNG or JPEG folder\n"
    "  --out FILE           the JSON report (FILE with .md for the Markdown table, .html for the page)\n"
    "  --samples N          measure on N samples picked at random by --seed (default 1000; 0: all)\n"
    "  --seed S             that pick's seed (default 0; not with --samples 0)\n"
    "  --core P             int8 (default), fp8 (= fp8-e4m3) or fp8-e5m2\n"
    "  --method M           the calibrator for activation scales, as for `ptq plan` (default percentile)\n"
    "  --placement P        the default plan's placement, as for `ptq plan` (default trt; ort\n"
    "                       with --target ort-cpu)\n"
    "  --target T           the default plan's target, as for `ptq plan`: trt (default) or ort-cpu;\n"
    "                       the report records it, and `ptq plan --budget` takes the report only\n"
    "                       for a plan of the same target\n"
    "  --reduce-range       the INT8 weights on onnxruntime's reduce_range grid [-64, 64], as for\n"
    "                       `ptq plan` (--core int8); the report records it, and `ptq plan --budget`\n"
    "                       takes the report only for a plan made with --reduce-range too\n"
    "  --device, --math, --batch, --threads, --preprocess, --progress,\n"
    "  " CLI_DATA_NAMES ",\n"
    "  --input NAME=DATASET (repeatable) as for `ptq eval`;\n"
    "  --json prints the JSON on stdout\n"
    "\n"
    "Under mpirun or srun (MPI builds) the ranks share the work and rank 0 writes the same\n"
    "outputs one process would (README \"Running across GPUs\").\n";

/* This rank's part of an MPI job's work: the samples are split while each
 * share keeps at least one full batch, the tensors over the ranks that share
 * the same samples. ids[*n_ids] becomes this rank's samples. */
static ptq_status share_work(ptq_ctx *ctx, ptq_sensitivity *sens, int64_t batch, int64_t **ids, int64_t *n_ids)
{
    const int size = ptq_dist_size();
    int n_shards = 1;
    for (int d = size; d > 1 && n_shards == 1; d--)
        if (size % d == 0 && *n_ids / d >= batch)
            n_shards = d;
    const int n_groups = size / n_shards, shard = ptq_dist_rank() / n_groups;
    int64_t lo, hi;
    ptq_dist_share(*n_ids, shard, n_shards, &lo, &hi);
    if (hi == lo)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "no samples to measure on");
    memmove(*ids, *ids + lo, (size_t)(hi - lo) * sizeof **ids);
    *n_ids = hi - lo;
    return ptq_sens_share(ctx, sens, ptq_dist_rank() % n_groups, n_groups);
}

int cmd_sensitivity(int argc, char **argv)
{
    cli_opt opts[] = {{"model", 1, NULL},      {"calib", 1, NULL},       {"data", 1, NULL},    {"out", 1, NULL},
                      {"samples", 1, NULL},    {"seed", 1, NULL},        {"core", 1, NULL},    {"method", 1, NULL},
                      {"device", 1, NULL}, {"math", 1, NULL},     {"batch", 1, NULL},       {"threads", 1, NULL}, {"preprocess", 1, NULL},
                      {"progress", 0, NULL},
                      {"json", 0, NULL},       CLI_DATA_OPTS,               {"help", 0, NULL},
                      {"placement", 1, NULL},  {"reduce-range", 0, NULL}, {"target", 1, NULL}};
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    const char *pos[1];
    int n_pos = 0, rc = cli_parse("sensitivity", argc, argv, opts, n_opts, pos, &n_pos, 0);
    if (rc)
        return rc;
    if (cli_get(opts, n_opts, "help")) {
        fputs(sensitivity_help, stdout);
        return 0;
    }
    const char *model = cli_get(opts, n_opts, "model"), *calib = cli_get(opts, n_opts, "calib");
    const char *out = cli_get(opts, n_opts, "out"), *data = cli_get(opts, n_opts, "data");
    if (!model || !calib || !data || !out)
        return cli_usage_error("sensitivity", "--model, --calib, --data and --out are required");
    char md_path[4200], html_path[4200];
    cli_sibling_path(out, ".md", md_path, sizeof md_path);
    cli_sibling_path(out, ".html", html_path, sizeof html_path);
    const char *inputs[] = {model, calib, data}, *outputs[] = {out, md_path, html_path};
    if ((rc = cli_rank0_rc(cli_is_writer() ? cli_check_outputs("sensitivity", inputs, 3, outputs, 3) : 0)))
        return rc;
    int64_t batch, n_samples, seed, threads;
    if ((rc = cli_get_int("sensitivity", opts, n_opts, "batch", 256, 1, &batch)) ||
        (rc = cli_get_int("sensitivity", opts, n_opts, "samples", 1000, 0, &n_samples)) ||
        (rc = cli_get_int("sensitivity", opts, n_opts, "seed", 0, 0, &seed)) ||
        (rc = cli_get_int("sensitivity", opts, n_opts, "threads", 0, 1, &threads)))
        return rc;
    if (cli_get(opts, n_opts, "seed") && n_samples == 0) /* as calibrate refuses --seed without --samples */
        return cli_usage_error("sensitivity", "--seed picks the --samples N measured; with --samples 0 every sample "
                               "is measured and it would do nothing");
    if (threads > 0)
        ptq_cpu_set_threads((int)threads);

    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = PTQ_OK;
    cli_session s;
    memset(&s, 0, sizeof s);
    ptq_calib_set *archive = NULL;
    ptq_plan *def = NULL, *core = NULL;
    ptq_sensitivity *sens = NULL;
    int64_t *ids = NULL, n_ids = 0, n_picked = 0;
    double t0 = 0;
    const char **names = NULL;
    char *json = NULL, *md = NULL, *html = NULL, *header = NULL, *md_header = NULL;
    ptq_html_hist *hists = NULL;
    int64_t n_hists = 0;
    cli_rank_read reads[3] = {{NULL, ""}, {NULL, ""}, {NULL, ""}}; /* the model, the archive, the data's size */
    if (cli_is_writer()) /* rank 0 writes the report */
        PTQ_TRY(st, cli_output_dir_check(&ctx, out), ready); /* before any image */
    cli_session_opts so = cli_session_opts_from(opts, n_opts);
    PTQ_TRY(st, cli_session_open_labelled(&ctx, "sensitivity", &so, "sensitivity compares predictions with them", &s),
            ready);
    PTQ_TRY(st, cli_rank_read_file(&ctx, model, 1, &reads[0]), ready);
    PTQ_TRY(st, cli_rank_read_file(&ctx, calib, 0, &reads[1]), ready);
    cli_rank_read_count(data, s.n_samples, &reads[2]);
    PTQ_TRY(st, cli_default_plan_target(&ctx, model, s.graph, calib, cli_get(opts, n_opts, "method"),
                                        cli_get(opts, n_opts, "core"), cli_get(opts, n_opts, "placement"),
                                        cli_get(opts, n_opts, "target"), cli_get(opts, n_opts, "reduce-range") != NULL,
                                        &archive, &def),
            ready);
    PTQ_TRY(st, ptq_sens_core_plan(&ctx, s.graph, archive, def, &core), ready);
    PTQ_TRY(st, ptq_sens_create(&ctx, s.graph, def, core, 0, &sens), ready);
    ptq_pick pick = {0, n_samples, (uint64_t)seed, 0, 0};
    PTQ_TRY(st, ptq_pick_samples(&ctx, s.n_samples, &pick, &ids, &n_ids), ready);
    n_picked = n_ids;
    batch = cli_default_batch("sensitivity", s.ps, batch, n_ids, cli_get(opts, n_opts, "batch") != NULL, 2);
    PTQ_TRY(st, share_work(&ctx, sens, batch, &ids, &n_ids), ready);
ready: /* every rank passes here once, and learns whether any failed or read another model, archive or data set */
    cli_session_notes_agree("sensitivity", &s);
    PTQ_TRY(st, cli_ranks_agree_read(&ctx, st, reads, 3), done);

    cli_progress prog;
    char stage[64];
    cli_progress_start(&prog, cli_rank_stage("sensitivity", stage, sizeof stage), "img", n_ids,
                       cli_get(opts, n_opts, "progress") != NULL);
    ptq_runner_params rp = {.session = s.ps, .ids = ids, .n_ids = n_ids, .batch = batch, .need_labels = 1,
                            .need_logits = 1, .prefetch = 1, .progress = cli_progress_cb, .progress_user = &prog};
    rp.consumers[rp.n_consumers++] = ptq_sens_consumer(sens);
    t0 = cli_now_s();
    PTQ_TRY(st, ptq_runner_run(&ctx, &rp), run_done);
    cli_progress_end(&prog, n_ids);
    if (getenv("PTQ_DIST_STATS") && ptq_dist_size() > 1) { /* this rank's share, before the sums mix them */
        const ptq_sens_seconds ph = ptq_sens_time(sens);
        int64_t n_runs, nodes_run, nodes_full;
        ptq_sens_work(sens, &n_runs, &nodes_run, &nodes_full);
        fprintf(stderr, "ptq: dist: rank %d of %d: sensitivity on %lld samples, %lld runs, %lld nodes, busy %.3f s "
                "(read %.3f, fp32 %.3f, only %.3f, default plan %.3f, all but %.3f)\n", ptq_dist_rank(),
                ptq_dist_size(), (long long)n_ids, (long long)n_runs, (long long)nodes_run,
                ph.read + ph.fp32 + ph.only + ph.default_plan + ph.all_but, ph.read, ph.fp32, ph.only,
                ph.default_plan, ph.all_but);
    }
    st = cli_rank_read_data(&ctx, data, s.data, &reads[2]); /* hashed while the images ran */
run_done: /* every rank passes here once, and learns whether any failed or measured on other data */
    PTQ_TRY(st, cli_ranks_agree_read(&ctx, st, &reads[2], 1), done);
    PTQ_TRY(st, ptq_sens_allreduce(&ctx, sens), done);
    PTQ_TRY(st, ptq_dist_agree(&ctx, st), done);
    const double secs = cli_now_s() - t0;
    n_ids = n_picked;
    if (!cli_is_writer()) /* rank 0 writes the report */
        goto written;
    const int k = ptq_sens_n_classes(sens);
    names = cli_class_names(s.data, k);
    int64_t n_runs, nodes_run, nodes_full;
    ptq_sens_work(sens, &n_runs, &nodes_run, &nodes_full);
    ptq_calib_provenance pv;
    ptq_calib_set_provenance(archive, &pv);
    cli_json *hdr = cli_json_header("sensitivity", ptq_exec_device_name(s.exec));
    cli_json_str(hdr, "math", ptq_math_name(ptq_exec_math(s.exec)));
    st = cli_json_provenance(&ctx, hdr, model, data, s.data, s.data_spec);
    if (st != PTQ_OK) {
        free(cli_json_done(hdr));
        goto written;
    }
    cli_json_str(hdr, "archive", calib);
    cli_json_str(hdr, "archive_sample_ids_sha256", pv.sample_ids_sha256);
    cli_json_str(hdr, "core", ptq_prec_name(def->core));
    cli_json_str(hdr, "placement", def->placement); /* the default plan's, whose "all but" runs these are */
    if (def->reduce_range) /* as in a plan: absent means false */
        cJSON_AddTrueToObject(hdr, "reduce_range");
    if (def->target != PTQ_TARGET_TRT) /* as in a plan: absent means trt */
        cli_json_str(hdr, "target", ptq_target_name(def->target));
    cli_json_str(hdr, "method", def->method);
    cli_json_num(hdr, "seed", (double)seed);
    /* sens.md lists what it was measured on, not how long it took (the same bytes on any number of ranks) */
    if (!(md_header = hdr ? cJSON_PrintUnformatted(hdr) : NULL)) {
        free(cli_json_done(hdr));
        st = ptq_fail(&ctx, PTQ_ERR_NOMEM, "out of memory");
        goto written;
    }
    cli_json_num(hdr, "seconds", secs);
    cli_json_num(hdr, "runs", (double)n_runs);
    cli_json_num(hdr, "nodes_run", (double)nodes_run);
    cli_json_num(hdr, "nodes_if_every_run_were_whole", (double)nodes_full);
    const ptq_sens_seconds ph = ptq_sens_time(sens);
    cli_json_num(hdr, "seconds_read", ph.read);
    cli_json_num(hdr, "seconds_fp32_runs", ph.fp32);
    cli_json_num(hdr, "seconds_only_runs", ph.only);
    cli_json_num(hdr, "seconds_default_plan_runs", ph.default_plan);
    cli_json_num(hdr, "seconds_all_but_runs", ph.all_but);
    if (!(header = cli_json_done(hdr))) {
        st = ptq_fail(&ctx, PTQ_ERR_NOMEM, "out of memory");
        goto written;
    }
    PTQ_TRY(st, ptq_sens_format_json(&ctx, sens, header, names, &json), written);
    PTQ_TRY(st, ptq_sens_format_markdown(&ctx, sens, md_header, names, &md), written);
    PTQ_TRY(st, ptq_html_hists_ranked(&ctx, archive, def, json, 0, &hists, &n_hists), written);
    ptq_html_extra hx = {.calib = calib, .hists = hists, .n_hists = n_hists, .hists_ranked = 1};
    PTQ_TRY(st, ptq_sens_format_html(&ctx, json, &hx, &html), written);
    const cli_out_file files[] = {{out, json, strlen(json), 1}, {md_path, md, strlen(md), 1},
                                  {html_path, html, strlen(html), 0}};
    PTQ_TRY(st, cli_write_files(&ctx, files, 3), written);
    if (cli_get(opts, n_opts, "json")) {
        printf("%s\n", json);
    } else {
        ptq_sens_figures f32, dp;
        const int64_t *support;
        ptq_sens_baselines(sens, &f32, &dp, &support);
        printf("model    %s\narchive  %s (core %s%s%s, %s)\ndata     %s (%lld samples)\n"
               "device   %s  (%.1f s: read %.1f, "
               "FP32 %.1f, only %.1f, default plan %.1f, all but %.1f)\n\n"
               "top-1    FP32 %.2f%%, default plan %.2f%%\ntensors  %lld measured in %lld runs; nodes run %lld of "
               "%lld (%.0f%%) thanks to the kept prefixes\nreport   %s, %s, %s\n",
               cli_shown(model), cli_shown(calib), ptq_prec_name(def->core), def->reduce_range ? " reduce_range" : "",
               def->target != PTQ_TARGET_TRT ? ", target ort-cpu" : "", def->method, cli_shown(data),
               (long long)n_ids, ptq_exec_device_name(s.exec), secs, ph.read, ph.fp32, ph.only, ph.default_plan,
               ph.all_but, f32.n ? 100.0 * (double)f32.top1 / (double)f32.n : 0.0,
               dp.n ? 100.0 * (double)dp.top1 / (double)dp.n : 0.0, (long long)ptq_sens_n_tensors(sens),
               (long long)n_runs, (long long)nodes_run, (long long)nodes_full,
               nodes_full ? 100.0 * (double)nodes_run / (double)nodes_full : 0.0, cli_shown(out),
               cli_shown(md_path), cli_shown(html_path));
    }
written: /* and every rank learns whether that went well */
    st = ptq_dist_agree(&ctx, st);
done:
    free(json);
    free(md);
    free(html);
    ptq_html_hists_free(hists, n_hists);
    free(header);
    free(md_header);
    free(names);
    free(ids);
    ptq_sens_free(sens);
    ptq_plan_free(core);
    ptq_plan_free(def);
    ptq_calib_set_free(archive);
    cli_session_close(&s);
    return cli_report("sensitivity", &ctx, st);
}
