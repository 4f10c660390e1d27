/* `ptq validate`: the model over a labelled image set in FP32 and under a
 * precision plan (simulated quantization, quant/fake_quant.c), side by side:
 * what quantization changed overall and class by class, as JSON and
 * Markdown in a report folder and a short summary on the terminal. Covered
 * by tests/cli_validate_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "ptq/fake_quant.h"
#include "ptq/plan.h"
#include "ptq/validate_report.h"

static const char validate_help[] =
    "usage: ptq validate --model M.onnx --plan plan.json --data D --report DIR [options]\n"
    "\n"
    "Runs the model over a labelled image set twice, in FP32 and as the plan\n"
    "says (activations rounded as each is produced, weights per output channel,\n"
    "FP16 tensors rounded to half), and reports FP32 and quantized top-1/top-5,\n"
    "the share of images whose prediction changed, per-class precision/recall/F1\n"
    "with deltas, the FP32, quantized and difference confusion matrices, classes\n"
    "whose recall fell by more than --recall-drop points (listed first), and the\n"
    "logits' SQNR and KL against FP32. Writes DIR/validate.json and\n"
    "DIR/validate.md and prints a summary.\n"
    "\n"
    "  --model FILE         the model the plan was made for (SHA-256 checked)\n"
    "  --plan FILE          a plan from `ptq plan` (or edited by hand)\n"
    "  --data PATH          labelled HDF5 file or PNG folder\n"
    "  --report DIR         folder for validate.json and validate.md (made if missing)\n"
    "  --recall-drop PTS    flag classes whose recall fell by more than this (default 1.0)\n"
    "  --device, --batch, --threads, --limit, --preprocess, --images-key, --labels-key,\n"
    "  --layout, --progress, --allow-external-data as for `ptq eval`; --json prints the JSON report on stdout\n"
    "  --logits FILE        also write the quantized logits as a float32 .npy array [N, classes]\n";

enum { VALIDATE_MAX_BATCH = 1 << 16 };

static ptq_device device_of(const ptq_exec *e)
{
    const char *name = ptq_exec_device_name(e);
    return strncmp(name, "cuda", 4) == 0 ? PTQ_DEVICE_CUDA : strcmp(name, "ref") == 0 ? PTQ_DEVICE_REF : PTQ_DEVICE_CPU;
}

/* The plan read and checked against model (loaded into *g), the quantizer
 * patched into *g, and an executor of *g on device with its tap. */
static ptq_status quantized_exec(ptq_ctx *ctx, const char *model, const char *plan_path, ptq_device device,
                                 ptq_graph **g, ptq_plan **plan, ptq_fq **fq, ptq_exec **e)
{
    PTQ_TRY_RET(cli_load_plan(ctx, plan_path, model, g, plan));
    PTQ_TRY_RET(ptq_fq_create(ctx, *g, *plan, fq));
    ptq_exec_params ep = {device, 0, ptq_fq_tap, *fq, 0};
    PTQ_TRY_RET(ptq_exec_create(ctx, *g, &ep, e));
    return ptq_fq_bind(ctx, *fq, *e);
}

int cmd_validate(int argc, char **argv)
{
    cli_opt opts[] = {{"model", 1, NULL},      {"plan", 1, NULL},       {"data", 1, NULL},     {"report", 1, NULL},
                      {"recall-drop", 1, NULL}, {"device", 1, NULL},    {"batch", 1, NULL},    {"threads", 1, NULL},
                      {"limit", 1, NULL},      {"preprocess", 1, NULL}, {"images-key", 1, NULL},
                      {"labels-key", 1, NULL}, {"layout", 1, NULL},     {"progress", 0, NULL}, {"json", 0, NULL},
                      {"logits", 1, NULL},     {"help", 0, NULL},
                      {"allow-external-data", 0, NULL}};
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
    char report_json[4096], report_md[4096];
    snprintf(report_json, sizeof report_json, "%s/validate.json", report);
    snprintf(report_md, sizeof report_md, "%s/validate.md", report);
    const char *val_inputs[] = {model, plan_path, cli_get(opts, n_opts, "data")};
    const char *val_outputs[] = {cli_get(opts, n_opts, "logits"), report_json, report_md};
    if ((rc = cli_check_outputs("validate", val_inputs, 3, val_outputs, 3)))
        return rc;
    int64_t batch, limit, threads;
    if ((rc = cli_get_int("validate", opts, n_opts, "batch", 256, 1, &batch)) ||
        (rc = cli_get_int("validate", opts, n_opts, "limit", 0, 1, &limit)) ||
        (rc = cli_get_int("validate", opts, n_opts, "threads", 0, 1, &threads)))
        return rc;
    if (batch > VALIDATE_MAX_BATCH)
        return cli_usage_error("validate", "--batch must be at most %d, got %lld", VALIDATE_MAX_BATCH, (long long)batch);
    ptq_validate_opts vo = PTQ_VALIDATE_OPTS_INIT;
    const char *drop = cli_get(opts, n_opts, "recall-drop");
    if (drop) {
        char *end = NULL;
        vo.recall_drop_flag = strtod(drop, &end);
        if (!end || *end || end == drop || !(vo.recall_drop_flag >= 0 && vo.recall_drop_flag <= 100))
            return cli_usage_error("validate", "--recall-drop wants points in [0, 100], got '%s'", drop);
    }
    if (threads > 0)
        ptq_cpu_set_threads((int)threads);

    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = PTQ_OK;
    cli_session s;
    memset(&s, 0, sizeof s);
    ptq_graph *gq = NULL;
    ptq_plan *plan = NULL;
    ptq_fq *fq = NULL;
    ptq_exec *eq = NULL;
    ptq_validate_stats *vs = NULL;
    float *x = NULL, *xq = NULL, *lf = NULL;
    int32_t *labels = NULL;
    const char **names = NULL;
    char *json = NULL, *md = NULL, *summary = NULL, logits_tmp[4096] = "";
    const char *logits_path = cli_get(opts, n_opts, "logits");
    FILE *lfile = NULL;
    cli_session_opts so = cli_session_opts_from(opts, n_opts);
    PTQ_TRY(st, cli_session_open(&ctx, "validate", &so, &s), done);
    if (!ptq_dataset_has_labels(s.data)) {
        st = ptq_fail(&ctx, PTQ_ERR_DATA, "%s has no labels; validation compares predictions with them", so.data);
        goto done;
    }
    PTQ_TRY(st, quantized_exec(&ctx, model, plan_path, device_of(s.exec), &gq, &plan, &fq, &eq), done);
    const int64_t n_total = limit && limit < s.n_samples ? limit : s.n_samples;
    const int64_t sample = s.channels * s.height * s.width;
    x = malloc((size_t)batch * (size_t)sample * sizeof *x);
    xq = malloc((size_t)batch * (size_t)sample * sizeof *xq);
    labels = malloc((size_t)batch * sizeof *labels);
    if (!x || !xq || !labels) {
        st = ptq_fail(&ctx, PTQ_ERR_NOMEM, "out of memory for a batch of %lld images", (long long)batch);
        goto done;
    }
    cli_progress prog;
    cli_progress_start(&prog, "validate", "img", n_total, cli_get(opts, n_opts, "progress") != NULL);
    int64_t k = 0;
    for (int64_t start = 0; start < n_total; start += batch) {
        const int64_t n = n_total - start < batch ? n_total - start : batch;
        PTQ_TRY(st, ptq_dataset_read(&ctx, s.data, start, n, &s.pre, x, labels), done);
        memcpy(xq, x, (size_t)(n * sample) * sizeof *x);
        ptq_tensor in = {PTQ_DT_FLOAT, 4, {n, s.channels, s.height, s.width}, x, PTQ_MEM_HOST, 0};
        if (s.pre.nhwc) {
            in.dims[1] = s.height;
            in.dims[2] = s.width;
            in.dims[3] = s.channels;
        }
        ptq_tensor inq = in, out[8], outq[8];
        inq.data = xq;
        if (s.graph->n_outputs > 8) {
            st = ptq_fail(&ctx, PTQ_ERR_UNSUPPORTED, "the model has %d outputs; at most 8", s.graph->n_outputs);
            goto done;
        }
        PTQ_TRY(st, ptq_exec_run(&ctx, s.exec, &in, out), done);
        const ptq_tensor *lg = &out[0];
        if (lg->dtype != PTQ_DT_FLOAT || lg->ndim < 1 || lg->dims[0] != n ||
            (k && ptq_tensor_numel(lg) / n != k)) {
            st = ptq_fail(&ctx, PTQ_ERR_SHAPE, "output '%s' is not a float32 [batch, classes] logits tensor of one width",
                          s.graph->values[s.graph->outputs[0]].name);
            goto done;
        }
        if (!k) {
            k = ptq_tensor_numel(lg) / n;
            const int dk = ptq_dataset_n_classes(s.data);
            if (dk > k || k < 2 || k > (1 << 20)) {
                st = ptq_fail(&ctx, PTQ_ERR_DATA, "%s has %d classes but the model outputs %lld scores", so.data, dk,
                              (long long)k);
                goto done;
            }
            PTQ_TRY(st, ptq_validate_stats_init(&ctx, (int)k, &vs), done);
            if (!(lf = malloc((size_t)(batch * k) * sizeof *lf))) {
                st = ptq_fail(&ctx, PTQ_ERR_NOMEM, "out of memory");
                goto done;
            }
            if (logits_path) {
                PTQ_TRY(st, cli_tmp_open(&ctx, logits_path, logits_tmp, sizeof logits_tmp, &lfile), done);
                if (cli_npy_header(lfile, n_total, k)) {
                    st = ptq_fail(&ctx, PTQ_ERR_IO, "cannot write %s: %s", logits_tmp, strerror(errno));
                    goto done;
                }
            }
        }
        memcpy(lf, lg->data, (size_t)(n * k) * sizeof *lf);
        PTQ_TRY(st, ptq_fq_apply_inputs(&ctx, fq, &inq), done);
        PTQ_TRY(st, ptq_exec_run(&ctx, eq, &inq, outq), done);
        PTQ_TRY(st, ptq_validate_stats_add(&ctx, vs, n, labels, lf, outq[0].data), done);
        if (lfile && fwrite(outq[0].data, sizeof(float), (size_t)(n * k), lfile) != (size_t)(n * k)) {
            st = ptq_fail(&ctx, PTQ_ERR_IO, "cannot write %s: %s", logits_tmp, strerror(errno));
            goto done;
        }
        cli_progress_update(&prog, start + n);
    }
    cli_progress_end(&prog, n_total);
    names = calloc((size_t)k + 1, sizeof *names);
    for (int c = 0; names && c < k; c++)
        names[c] = ptq_dataset_class_name(s.data, c);
    vo.class_names = names;
    char header[2048];
    snprintf(header, sizeof header,
             "{\"command\":\"validate\",\"ptq_version\":\"%s\",\"device\":\"%s\",\"plan_core\":\"%s\","
             "\"plan_method\":\"%s\",\"plan_tensors\":%lld}",
             PTQ_VERSION, ptq_exec_device_name(eq), ptq_prec_name(plan->core), plan->method ? plan->method : "",
             (long long)plan->n);
    vo.header_json = header;
    PTQ_TRY(st, ptq_validate_format_json(&ctx, vs, &vo, &json), done);
    PTQ_TRY(st, ptq_validate_format_markdown(&ctx, vs, &vo, &md), done);
    PTQ_TRY(st, ptq_validate_format_summary(&ctx, vs, &vo, &summary), done);
    if (mkdir(report, 0777) != 0 && errno != EEXIST) {
        st = ptq_fail(&ctx, PTQ_ERR_IO, "cannot create folder %s: %s", report, strerror(errno));
        goto done;
    }
    char json_path[4096], md_path[4096];
    snprintf(json_path, sizeof json_path, "%s/validate.json", report);
    snprintf(md_path, sizeof md_path, "%s/validate.md", report);
    PTQ_TRY(st, cli_write_text(&ctx, json_path, json), done);
    st = cli_write_text(&ctx, md_path, md);
    if (st == PTQ_OK && lfile) {
        st = cli_tmp_commit(&ctx, &lfile, logits_tmp, logits_path);
        logits_tmp[0] = st == PTQ_OK ? '\0' : logits_tmp[0];
    }
    if (st != PTQ_OK) {
        remove(json_path);
        remove(md_path);
        goto done;
    }
    if (cli_get(opts, n_opts, "json"))
        printf("%s\n", json);
    else
        printf("model    %s\nplan     %s (core %s)\ndata     %s (%lld images)\ndevice   %s\n\n%s\nreport   %s, %s\n",
               model, plan_path, ptq_prec_name(plan->core), so.data, (long long)n_total, ptq_exec_device_name(eq),
               summary, json_path, md_path);
done:
    if (lfile)
        fclose(lfile);
    if (logits_tmp[0])
        remove(logits_tmp);
    free(json);
    free(md);
    free(summary);
    free(names);
    free(x);
    free(xq);
    free(lf);
    free(labels);
    ptq_validate_stats_free(vs);
    ptq_exec_free(eq);
    ptq_fq_free(fq);
    ptq_plan_free(plan);
    ptq_graph_free(gq);
    cli_session_close(&s);
    return cli_report("validate", &ctx, st);
}
