/* `ptq eval`: FP32 top-1/top-5, per-class precision/recall/F1 and the
 * confusion matrix of a model on a labelled image set. Covered by
 * tests/cli_test.py and tests/eval_ort_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ptq/consumers.h"

static const char eval_help[] =
    "usage: ptq eval --model M.onnx --data D [options]\n"
    "\n"
    "Runs the model over a labelled image set (HDF5 file or PNG/JPEG folder) and\n"
    "prints top-1/top-5 accuracy, per-class precision/recall/F1 and the\n"
    "confusion matrix.\n"
    "\n"
    "  --model FILE         ONNX model or Keras .h5 (one float32 image input, or inputs fed by --input; logits\n"
    "                       output)\n"
    "  --data PATH          HDF5 file or image folder root/<class>/*.{png,jpg,jpeg}\n"
    "  --device DEV         cpu (default), cuda (= gpu: GPU 0), cuda:N (GPU N), or ref (plain reference\n"
    "                       kernels); the CPU with a notice when there is no GPU\n"
    "  --math M             GPU convolutions and matrix products in fp32 (default, exact), tf32 (tensor\n"
    "                       cores), or fp64 (FP32 tensors, products summed in double as --device ref does;\n"
    "                       slower); recorded in the output. The CPU computes fp32\n"
    "  --batch N            images per batch (default 256, or the largest power of two below it that\n"
    "                       fits the memory limit, with a note)\n"
    "  --threads N          CPU threads (default: every CPU the process may run on)\n"
    "  --limit N            evaluate only the first N images\n"
    "  --preprocess SPEC    override the keys it names of the model's ptq.preprocess metadata (layout,\n"
    "                       channels and size come from the model's input), e.g.\n"
    "                       \"mean=0.485,0.456,0.406 std=0.229,0.224,0.225 resize=256\", or a preset:\n"
    "                       imagenet, imagenet-bgr-caffe (refined by further items: \"imagenet resize=232\")\n"
    CLI_DATA_HELP
    "  --json               print the report as JSON on stdout\n"
    "  --report FILE        also write the JSON report to FILE\n"
    "  --logits FILE        write the logits as a float32 .npy array [N, classes]\n"
    "  --progress           force the progress line (default: only on a terminal)\n"
    "  --profile            print the time spent per op type on stderr (waits for the GPU after each node),\n"
    "                       then the command's timeline (opening, first batch, the rest, reports)\n";

int cmd_eval(int argc, char **argv)
{
    cli_opt opts[] = {{"model", 1, NULL},      {"data", 1, NULL},       {"device", 1, NULL}, {"math", 1, NULL},  {"batch", 1, NULL},
                      {"limit", 1, NULL},      {"preprocess", 1, NULL}, {"json", 0, NULL},    {"report", 1, NULL},
                      {"logits", 1, NULL},     {"progress", 0, NULL},   {"profile", 0, NULL},
                      {"threads", 1, NULL},    {"help", 0, NULL},       CLI_DATA_OPTS};
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    const char *pos[1];
    int n_pos = 0, rc = cli_parse("eval", argc, argv, opts, n_opts, pos, &n_pos, 0);
    if (rc)
        return rc;
    if (cli_get(opts, n_opts, "help")) {
        fputs(eval_help, stdout);
        return 0;
    }
    if (!cli_get(opts, n_opts, "model") || !cli_get(opts, n_opts, "data"))
        return cli_usage_error("eval", "--model and --data are required");
    int64_t batch, limit, threads;
    if ((rc = cli_get_int("eval", opts, n_opts, "batch", 256, 1, &batch)) ||
        (rc = cli_get_int("eval", opts, n_opts, "limit", 0, 1, &limit)) ||
        (rc = cli_get_int("eval", opts, n_opts, "threads", 0, 1, &threads)))
        return rc;
    if (threads > 0)
        ptq_cpu_set_threads((int)threads);
    const char *logits_path = cli_get(opts, n_opts, "logits");
    const char *report_path = cli_get(opts, n_opts, "report");
    int as_json = cli_get(opts, n_opts, "json") != NULL;
    const char *eval_inputs[] = {cli_get(opts, n_opts, "model"), cli_get(opts, n_opts, "data")};
    const char *eval_outputs[] = {report_path, logits_path};
    if ((rc = cli_check_outputs("eval", eval_inputs, 2, eval_outputs, 2)) ||
        (report_path && (rc = cli_output_dir_ok("eval", report_path))))
        return rc;

    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = PTQ_OK;
    cli_session s;
    ptq_eval_stats stats = {0};
    int64_t *ids = NULL, n_total = 0;
    FILE *lf = NULL, *rf = NULL;
    char logits_tmp[4096] = "", report_tmp[4096] = "";
    char *text = NULL, *header = NULL;
    const char **names = NULL;
    cli_session_opts so = cli_session_opts_from(opts, n_opts);
    so.profile = cli_get(opts, n_opts, "profile") != NULL;
    PTQ_TRY(st, cli_session_open(&ctx, "eval", &so, &s), done_early);
    ptq_pick pick = {limit, 0, 0, 0, 0};
    PTQ_TRY(st, ptq_pick_samples(&ctx, s.n_samples, &pick, &ids, &n_total), done);
    cli_npy_writer npy = {NULL, NULL, 0};
    if (logits_path) {
        PTQ_TRY(st, cli_tmp_open(&ctx, logits_path, logits_tmp, sizeof logits_tmp, &lf), done);
        npy = (cli_npy_writer){lf, logits_path, n_total};
    }
    cli_progress prog;
    cli_progress_start(&prog, "eval", "img", n_total, cli_get(opts, n_opts, "progress") != NULL);
    struct ptq_runner_steady steady = {0, 0.0};
    batch = cli_default_batch("eval", s.ps, batch, n_total, cli_get(opts, n_opts, "batch") != NULL, 0);
    ptq_runner_params rp = {.session = s.ps, .ids = ids, .n_ids = n_total, .batch = batch, .need_labels = 1,
                            .steady = &steady,
                            .need_logits = 1, .prefetch = 1, .progress = cli_progress_cb, .progress_user = &prog};
    rp.consumers[rp.n_consumers++] = ptq_eval_consumer(&stats);
    if (lf)
        rp.consumers[rp.n_consumers++] = cli_npy_consumer(&npy);
    double t0 = cli_now_s();
    PTQ_TRY(st, ptq_runner_run(&ctx, &rp), done);
    const int64_t k = stats.n_classes;
    if (stats.n > 0 && stats.no_prediction == stats.n) { /* nothing to report: a broken model, not an accuracy */
        st = ptq_fail(&ctx, PTQ_ERR_DATA, "the logits of every one of the %lld %s hold a NaN or an infinity: "
                      "the model computes no prediction on this data; no report written",
                      (long long)stats.n, ptq_session_named_inputs(s.ps) ? "samples" : "images");
        goto done;
    }
    double secs = cli_now_s() - t0;
    cli_progress_end(&prog, n_total);
    if (so.profile)
        cli_profile_print(&s, n_total, secs);
    names = cli_class_names(s.data, k);
    cli_json *hdr = cli_json_header("eval", ptq_exec_device_name(s.exec));
    cli_json_str(hdr, "math", ptq_math_name(ptq_exec_math(s.exec)));
    if ((st = cli_json_provenance(&ctx, hdr, so.model, so.data, s.data, s.data_spec)) != PTQ_OK) {
        free(cli_json_done(hdr));
        goto done;
    }
    cli_json_num(hdr, "batch", (double)batch);
    cli_json_num(hdr, "seconds", secs);
    cli_json_num(hdr, "images_per_s", secs > 0 ? (double)n_total / secs : 0.0);
    if (steady.seconds > 0) /* after the first batch: warm plans and memory, as peers time themselves */
        cli_json_num(hdr, "images_per_s_steady", (double)steady.samples / steady.seconds);
    if (cli_peak_rss_mib() > 0)
        cli_json_num(hdr, "peak_rss_mib", cli_peak_rss_mib());
    header = cli_json_done(hdr);
    if (!header) {
        st = ptq_fail(&ctx, PTQ_ERR_NOMEM, "out of memory");
        goto done;
    }
    if (report_path) { /* JSON only when asked for, streamed: k x k can be large */
        PTQ_TRY(st, cli_tmp_open(&ctx, report_path, report_tmp, sizeof report_tmp, &rf), done);
        PTQ_TRY(st, ptq_eval_write_json(&ctx, &stats, names, header, rf, report_path), done);
        if (fputc('\n', rf) == EOF) {
            st = ptq_fail(&ctx, PTQ_ERR_IO, "cannot write %s: %s", report_path, strerror(errno));
            goto done;
        }
    }
    /* every output complete: only now do they take their names, together (a failed rename puts back what the
     * names held) */
    {
        char *tmps[2];
        const char *paths[2];
        int n_out = 0;
        if (rf) {
            PTQ_TRY(st, cli_tmp_close(&ctx, &rf, report_tmp, report_path), done);
            tmps[n_out] = report_tmp, paths[n_out++] = report_path;
        }
        if (lf) {
            PTQ_TRY(st, cli_tmp_close(&ctx, &lf, logits_tmp, logits_path), done);
            tmps[n_out] = logits_tmp, paths[n_out++] = logits_path;
        }
        if (n_out)
            PTQ_TRY(st, ptq_atomic_commit_all(&ctx, tmps, paths, n_out), done);
        report_tmp[0] = logits_tmp[0] = '\0';
    }
    if (as_json) {
        PTQ_TRY(st, ptq_eval_write_json(&ctx, &stats, names, header, stdout, "standard output"), done);
        putchar('\n');
    } else {
        PTQ_TRY(st, ptq_eval_format_text(&ctx, &stats, names, &text), done);
        const int named = ptq_session_named_inputs(s.ps);
        printf("model    %s\ndata     %s (%s, %lld %s)\ndevice   %s  (%.0f %s/s)\n", cli_shown(so.model),
               cli_shown(so.data), ptq_dataset_kind(s.data), (long long)n_total, named ? "samples" : "images",
               ptq_exec_device_name(s.exec), secs > 0 ? (double)n_total / secs : 0.0, named ? "samples" : "img");
        fputs(text, stdout);
    }
    if (stats.no_prediction > 0)
        fprintf(stderr,
                "ptq eval: warning: the logits of %lld of the %lld %s hold a NaN or an infinity: they rank no "
                "class and count as wrong (top-1, top-5, their class's recall); the confusion matrix leaves them out "
                "(\"no_prediction\" in the JSON report)\n",
                (long long)stats.no_prediction, (long long)stats.n,
                ptq_session_named_inputs(s.ps) ? "samples" : "images");
    /* below chance by more than 3 standard deviations of a chance-level
     * count: labels that do not match the outputs, not noise */
    const double chance = k >= 2 ? 1.0 / (double)k : 0.0, short_of = (double)stats.n * chance - (double)stats.top1;
    if (k >= 2 && short_of > 0 && short_of * short_of > 9.0 * (double)stats.n * chance * (1.0 - chance))
        fprintf(stderr,
                "ptq eval: hint: FP32 top-1 %.2f%% is below chance (%.2f%% for %lld classes): the labels or the "
                "class map (class folder order, class_names) probably do not match the model's outputs\n",
                100.0 * (double)stats.top1 / (double)stats.n, 100.0 / (double)k, (long long)k);
done:
    if (lf)
        fclose(lf);
    if (rf)
        fclose(rf);
    if (logits_tmp[0])
        remove(logits_tmp);
    if (report_tmp[0])
        remove(report_tmp);
    cli_session_close(&s);
done_early:
    free(text);
    free(header);
    free(names);
    free(ids);
    ptq_eval_stats_free(&stats);
    return cli_report("eval", &ctx, st);
}
