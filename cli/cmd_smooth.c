/* `ptq smooth`: SmoothQuant-style migration of activation outliers into
 * the weights (include/ptq/smooth.h), measured on calibration samples on
 * the CPU, written as a new ONNX model for the rest of the pipeline.
 * Covered by tests/smooth_test.py. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "ptq/smooth.h"

static const char smooth_help[] =
    "usage: ptq smooth --model M.onnx --data C --out M_smooth.onnx [options]\n"
    "\n"
    "Moves activation outliers into the weights, as SmoothQuant does: for each\n"
    "LayerNormalization whose output X feeds only MatMul/Gemm nodes with constant\n"
    "weights W, s[c] = max|X[..., c]|^alpha / max|W[c, :]|^(1 - alpha); the\n"
    "LayerNorm's scale and bias are divided by s and W's rows multiplied by it.\n"
    "FP32 results are unchanged (to rounding); X's channels even out, so a\n"
    "per-tensor INT8 or FP8 scale fits them better. max|X| is measured on the\n"
    "CPU over --samples samples of C. Calibrate, plan and validate the written\n"
    "model as any other.\n"
    "\n"
    "  --model FILE         ONNX model or Keras .h5\n"
    "  --data PATH          calibration samples (HDF5 or image folder; labels not needed)\n"
    "  --out FILE           the smoothed model\n"
    "  --alpha A            migration strength in [0, 1] (default 0.5), the exponent of\n"
    "                       s = max|X|^A / max|W|^(1-A): 1 divides each channel of X by its range,\n"
    "                       0 by its weights' range only (X's own range then plays no part)\n"
    "  --samples N          samples picked at random by --seed (default 512; 0: all)\n"
    "  --seed S             that pick's seed (default 0)\n"
    "  --batch N            samples per batch (default 64, or the largest power of two below it that\n"
    "                       fits the memory limit, with a note)\n"
    "  --threads, --preprocess, --progress, --input, --images-key, --labels-key, --layout,\n"
    "  --allow-external-data, --labels, --classes as for `ptq eval` (no --output: smooth reads no\n"
    "  logits); --json prints what was done as JSON\n";

int cli_alpha_parse(const char *cmd, const char *flag, const char *value, double *alpha)
{
    char *end;
    const double x = strtod(value, &end);
    if (!cli_plain_number(value) || end == value || *end || !(x >= 0.0 && x <= 1.0))
        return cli_usage_error(cmd, "--%s wants a number in [0, 1], got '%s'", flag, value);
    *alpha = x;
    return 0;
}

int cmd_smooth(int argc, char **argv)
{
    cli_opt opts[] = {{"model", 1, NULL},  {"data", 1, NULL},    {"out", 1, NULL},        {"alpha", 1, NULL},
                      {"samples", 1, NULL}, {"seed", 1, NULL},   {"batch", 1, NULL},      {"threads", 1, NULL},
                      {"preprocess", 1, NULL}, {"json", 0, NULL}, {"progress", 0, NULL},  {"help", 0, NULL},
                      CLI_DATA_OPTS};
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    const char *pos[1];
    int n_pos = 0, rc = cli_parse("smooth", argc, argv, opts, n_opts, pos, &n_pos, 0);
    if (rc)
        return rc;
    if (cli_get(opts, n_opts, "help")) {
        fputs(smooth_help, stdout);
        return 0;
    }
    static const char *const logits_only[] = {"output", NULL};
    if ((rc = cli_refuse_unused("smooth", opts, n_opts, logits_only, CLI_OUTPUT_UNUSED)))
        return rc;
    const char *model = cli_get(opts, n_opts, "model"), *data = cli_get(opts, n_opts, "data");
    const char *out = cli_get(opts, n_opts, "out");
    if (!model || !data || !out)
        return cli_usage_error("smooth", "--model, --data and --out are required");
    const char *inputs[] = {model, data};
    char data_out[4200]; /* the "<out>.data" a large model's weights go to: checked whether or not written */
    snprintf(data_out, sizeof data_out, "%s.data", out);
    const char *outputs[] = {out, data_out};
    if ((rc = cli_check_outputs("smooth", inputs, 2, outputs, 2)) || (rc = cli_output_dir_ok("smooth", out)))
        return rc;
    double alpha = 0.5;
    const char *alpha_arg = cli_get(opts, n_opts, "alpha");
    if (alpha_arg && (rc = cli_alpha_parse("smooth", "alpha", alpha_arg, &alpha)))
        return rc;
    int64_t batch, n_samples, seed, threads;
    if ((rc = cli_get_int("smooth", opts, n_opts, "batch", 64, 1, &batch)) ||
        (rc = cli_get_int("smooth", opts, n_opts, "samples", 512, 0, &n_samples)) ||
        (rc = cli_get_int("smooth", opts, n_opts, "seed", 0, 0, &seed)) ||
        (rc = cli_get_int("smooth", opts, n_opts, "threads", 0, 1, &threads)))
        return rc;
    if (threads > 0)
        ptq_cpu_set_threads((int)threads);

    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = PTQ_OK;
    cli_session s;
    memset(&s, 0, sizeof s);
    ptq_smooth *sm = NULL;
    int64_t *ids = NULL, n_ids = 0;
    cli_session_opts so = cli_session_opts_from(opts, n_opts);
    so.device = "cpu"; /* the tap reads activations on the host */
    PTQ_TRY(st, cli_session_open(&ctx, "smooth", &so, &s), done);
    PTQ_TRY(st, ptq_smooth_create(&ctx, s.graph, &sm), done); /* before any sample is read */
    ptq_pick pick = {0, n_samples, (uint64_t)seed, 0, 0};
    PTQ_TRY(st, ptq_pick_samples(&ctx, s.n_samples, &pick, &ids, &n_ids), done);
    batch = cli_default_batch("smooth", s.ps, batch, n_ids, cli_get(opts, n_opts, "batch") != NULL, 0);
    cli_progress prog;
    cli_progress_start(&prog, "smooth", "sample", n_ids, cli_get(opts, n_opts, "progress") != NULL);
    ptq_runner_params rp = {.session = s.ps, .ids = ids, .n_ids = n_ids, .batch = batch, .prefetch = 1,
                            .progress = cli_progress_cb, .progress_user = &prog};
    rp.consumers[rp.n_consumers++] = ptq_smooth_consumer(sm);
    PTQ_TRY(st, ptq_runner_run(&ctx, &rp), done);
    cli_progress_end(&prog, n_ids);
    PTQ_TRY(st, ptq_smooth_write(&ctx, sm, model, alpha, out), done);

    const int n = ptq_smooth_n_groups(sm);
    if (cli_get(opts, n_opts, "json")) {
        cli_json *o = cli_json_header("smooth", "cpu");
        cli_json_str(o, "model", model);
        cli_json_str(o, "out", out);
        cli_json_num(o, "alpha", alpha);
        cli_json_num(o, "samples", (double)n_ids);
        cJSON *arr = o ? cJSON_AddArrayToObject(o, "groups") : NULL;
        for (int i = 0; arr && i < n; i++) { /* each activation: its max/median channel before and after */
            int64_t c;
            int n_cons;
            double before, after;
            const char *name = ptq_smooth_group_name(sm, i, &c, &n_cons);
            ptq_smooth_spread(sm, i, alpha, &before, &after);
            cJSON *gj = cJSON_CreateObject();
            cJSON_AddStringToObject(gj, "activation", name);
            cJSON_AddNumberToObject(gj, "channels", (double)c);
            cJSON_AddNumberToObject(gj, "consumers", n_cons);
            cJSON_AddNumberToObject(gj, "spread_before", before);
            cJSON_AddNumberToObject(gj, "spread_after", after);
            cJSON_AddItemToArray(arr, gj);
        }
        char *text = cli_json_done(o);
        if (text)
            printf("%s\n", text);
        free(text);
    } else {
        char esc[1024];
        printf("wrote %s: %d LayerNorm output%s smoothed (alpha %g, max|x| per channel over %lld samples)\n\n"
               "  %-48s %8s %9s %22s\n",
               cli_shown(out), n, n == 1 ? "" : "s", alpha, (long long)n_ids, "activation", "channels", "consumers",
               "max/median channel");
        for (int i = 0; i < n; i++) {
            int64_t c;
            int n_cons;
            double before, after;
            const char *name = ptq_smooth_group_name(sm, i, &c, &n_cons);
            ptq_smooth_spread(sm, i, alpha, &before, &after);
            printf("  %s %8lld %9d %10.1f -> %8.1f\n", cli_padded(name, 48, esc, sizeof esc), (long long)c, n_cons,
                   before, after);
        }
    }
done:
    free(ids);
    ptq_smooth_free(sm);
    cli_session_close(&s);
    return cli_report("smooth", &ctx, st);
}
