/* `ptq run`: the main job in one command, into one folder: calibrate ->
 * sensitivity -> plan (budgeted with --budget, else the default) ->
 * validate -> exports (TensorRT cache, ONNX Runtime tables, JSON ranges,
 * Q/DQ ONNX). It resumes: each stage's key is the SHA-256 of its settings
 * and of its inputs' contents (outputs of earlier stages included), kept in
 * DIR/run.json; a stage whose key and outputs are there is skipped, so a
 * changed input reruns exactly what depends on it. Each stage is the
 * command of its name. Covered by tests/cli_run_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "ptq/hash.h"

int cmd_smooth(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_sensitivity(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_export(int argc, char **argv);

static const char run_help[] =
    "usage: ptq run --model M.onnx --calib-data C --data V --out DIR [options]\n"
    "\n"
    "Every stage into DIR: calibrate on C (calib.h5), sensitivity on V (sens.json,\n"
    "sens.md, sens.html), the plan (plan.json: within --budget when given, else the\n"
    "default), its validation against FP32 on V (report/, whose report.html also\n"
    "shows the sensitivity and the planner's moves), and the exports: calib.cache\n"
    "(TensorRT), ort/ (ONNX Runtime tables), ranges.json, model_qdq.onnx. A second\n"
    "run with the same inputs skips the stages that are done (DIR/run.json holds\n"
    "each stage's key: its settings and the SHA-256 of its inputs); a changed\n"
    "input reruns what depends on it. Exit codes are the failing stage's; 11 when\n"
    "no plan met --budget (the best one is validated and exported all the same).\n"
    "\n"
    "  --model FILE         ONNX model\n"
    "  --calib-data PATH    calibration images (HDF5 or PNG/JPEG folder; labels not needed)\n"
    "  --data PATH          labelled validation images\n"
    "  --labels FILE, --classes FILE  how --data's image folder is labelled, as for `ptq eval`\n"
    "  --calib-labels FILE, --calib-classes FILE  the same for --calib-data (e.g. a flat folder\n"
    "                       listed by a labels file)\n"
    "  --out DIR            the folder for everything (made if missing)\n"
    "  --budget PTS         top-1 points the plan may lose against FP32 (default: the default plan)\n"
    "  --class-budget PTS   recall points any one class may lose (with --budget)\n"
    "  --calib-samples N    calibration images picked at random (default 512; 0: all)\n"
    "  --samples N          validation images sensitivity and the budget use (default 1000; 0: all)\n"
    "  --core P             int8 (default), fp8 or fp8-e5m2\n"
    "  --method M           calibrator for the plan, as for `ptq plan` (default percentile)\n"
    "  --target T           trt (default) or ort-cpu: the plan's number formats, as for `ptq plan`\n"
    "                       (ort-cpu: uint8 activations; sensitivity measures them, and --budget\n"
    "                       moves tensors to FP32)\n"
    "  --reduce-range       INT8 weights on onnxruntime's reduce_range grid [-64, 64], as for\n"
    "                       `ptq plan` (onnxruntime on CPUs without VNNI), in sensitivity and the\n"
    "                       plan alike, so --budget measures the weights onnxruntime will run\n"
    "  --device, --batch, --threads, --preprocess, --output as for `ptq eval`\n"
    "  --input NAME=DATASET  (repeatable) the HDF5 dataset feeding a model input, in both data sets,\n"
    "                       as for `ptq eval` (default: the dataset of the input's name)\n"
    "  --smooth ALPHA       first move activation outliers into the weights (`ptq smooth --alpha\n"
    "                       ALPHA` on --calib-data's samples) and run every stage on that model,\n"
    "                       DIR/model_smooth.onnx (FP32 results unchanged to rounding)\n"
    "  --reference FILE     the FP32 logits of `ptq eval --logits FILE` on --data: validate runs FP32\n"
    "                       on its first batch only, checked against them (`ptq validate --reference`)\n"
    "  --force              run every stage again\n"
    "\n"
    "Under mpirun or srun (MPI builds) the ranks share the work and rank 0 writes the same\n"
    "outputs one process would (README \"Running across GPUs\").\n";


enum { MAX_ARGS = 48 + 2 * CLI_MAX_REPEAT };

/* One stage: the command and its arguments, the files it reads (hashed
 * into its key) and writes (all must exist for it to count as done). */
typedef struct stage {
    const char *name;
    int (*cmd)(int argc, char **argv);
    const char *argv[MAX_ARGS];
    int argc;
    const char *inputs[7];
    const ptq_dataset_opts *input_opts[7]; /* how a data set input is read (NULL: the defaults) */
    int n_inputs;
    const char *outputs[CLI_REPORT_FILES];
    int n_outputs;
    int by_classes; /* outputs are validate's report (outputs[0] validate.json): as many as its class count calls for */
    const char *unkeyed[4]; /* options the outputs do not depend on (--threads, --batch): passed on, not in the key */
    int n_unkeyed;
} stage;

static void arg(stage *s, const char *a)
{
    if (a && s->argc < MAX_ARGS - 1)
        s->argv[s->argc++] = a;
}

static void opt(stage *s, const char *name, const char *value)
{
    if (value) {
        arg(s, name);
        arg(s, value);
    }
}

/* --threads, or --batch when keyed is 0: the stage's outputs are the same bytes whatever its value (README: the
 * executors run every GEMM with the same shape whatever the batch), so changing it reruns nothing. */
static void opt_unkeyed(stage *s, const char *name, const char *value, int keyed)
{
    if (keyed)
        opt(s, name, value);
    else if (value && s->n_unkeyed + 2 <= (int)(sizeof s->unkeyed / sizeof s->unkeyed[0])) {
        s->unkeyed[s->n_unkeyed++] = name;
        s->unkeyed[s->n_unkeyed++] = value;
    }
}

/* Every value of a repeatable option. */
static void opts_all(stage *s, const char *name, const char *const *values, int n)
{
    for (int i = 0; i < n; i++)
        opt(s, name, values[i]);
}

/* The content SHA-256 of a file, or of a data set folder (ptq_dataset_content_sha256, which covers the
 * labels and classes files of dopts). */
static ptq_status content_sha(ptq_ctx *ctx, const char *path, const ptq_dataset_opts *dopts, char hex[65])
{
    struct stat stt;
    if (stat(path, &stt) == 0 && S_ISDIR(stt.st_mode)) {
        ptq_dataset *ds = NULL;
        PTQ_TRY_RET(ptq_dataset_open(ctx, path, dopts, &ds));
        ptq_status st = ptq_dataset_content_sha256(ctx, ds, hex);
        ptq_dataset_close(ds);
        return st;
    }
    return ptq_sha256_file(ctx, path, hex);
}

/* The stage's key: its name, arguments and its inputs' contents. */
static ptq_status stage_key(ptq_ctx *ctx, const stage *s, char key[65])
{
    ptq_sha256 h;
    ptq_sha256_init(&h);
    for (int i = 0; i < s->argc; i++)
        ptq_sha256_update(&h, s->argv[i], strlen(s->argv[i]) + 1);
    for (int i = 0; i < s->n_inputs; i++) {
        char hex[65];
        if (i == 0) /* every stage's first input is the model: with its external data, if any */
            PTQ_TRY_RET(cli_model_sha256(ctx, s->inputs[i], hex));
        else
            PTQ_TRY_RET(content_sha(ctx, s->inputs[i], s->input_opts[i], hex));
        ptq_sha256_update(&h, hex, 64);
    }
    ptq_sha256_final_hex(&h, key);
    return PTQ_OK;
}

/* The classes of the report validate.json at path ("classes": one entry per class), or -1. */
static int64_t report_classes(ptq_ctx *ctx, const char *path)
{
    char *text = NULL;
    if (cli_read_text(ctx, path, &text) != PTQ_OK)
        return -1;
    cJSON *root = cJSON_Parse(text);
    const cJSON *classes = cJSON_GetObjectItemCaseSensitive(root, "classes");
    const int64_t k = cJSON_IsArray(classes) ? cJSON_GetArraySize(classes) : -1;
    cJSON_Delete(root);
    free(text);
    return k;
}

/* 1 when every file the stage writes is there. */
static int outputs_exist(ptq_ctx *ctx, const stage *s)
{
    struct stat stt;
    int n = s->n_outputs;
    if (s->by_classes) {
        const int64_t k = report_classes(ctx, s->outputs[0]);
        if (k < 0)
            return 0;
        n = cli_report_n_files(k);
    }
    for (int i = 0; i < n; i++)
        if (stat(s->outputs[i], &stt) != 0)
            return 0;
    return 1;
}

static ptq_status write_manifest(ptq_ctx *ctx, const char *path, cJSON *manifest)
{
    char *text = cJSON_Print(manifest);
    if (!text)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
    ptq_status st = cli_write_text(ctx, path, text);
    free(text);
    return st;
}

/* Every flag's value checked by the parser of the command that takes it, and --reference's file, before the first
 * stage runs: a typo costs no calibration. Returns 0 or the exit code, printed. */
static int check_flags(const cli_opt *opts, int n_opts, const char *const *inputs, int n_inputs)
{
    static const char *const points[] = {"budget", "class-budget"};
    double x;
    int64_t n;
    int rc = 0;
    for (int i = 0; i < 2 && !rc; i++) {
        const char *v = cli_get(opts, n_opts, points[i]);
        rc = v ? cli_points_parse("run", points[i], v, &x) : 0;
    }
    const char *alpha = cli_get(opts, n_opts, "smooth");
    if (rc || (alpha && (rc = cli_alpha_parse("run", "smooth", alpha, &x))))
        return rc;
    if ((rc = cli_get_int("run", opts, n_opts, "calib-samples", 0, 0, &n)) ||
        (rc = cli_get_int("run", opts, n_opts, "samples", 0, 0, &n)) ||
        (rc = cli_get_int("run", opts, n_opts, "threads", 0, 1, &n)) ||
        (rc = cli_get_int("run", opts, n_opts, "batch", 1, 1, &n)))
        return rc;
    if (n > CLI_SENS_MAX_BATCH)
        return cli_usage_error("run", "--batch must be at most %d, got %lld", CLI_SENS_MAX_BATCH, (long long)n);
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    cli_plan_settings ps;
    ptq_status st = cli_plan_settings_parse(&ctx, cli_get(opts, n_opts, "method"), cli_get(opts, n_opts, "core"), NULL,
                                            cli_get(opts, n_opts, "target"),
                                            cli_get(opts, n_opts, "reduce-range") != NULL, &ps);
    cli_session_opts so = {.device = cli_get(opts, n_opts, "device"), .n_inputs = n_inputs};
    for (int i = 0; i < n_inputs && i < CLI_MAX_REPEAT; i++)
        so.inputs[i] = inputs[i];
    if (st == PTQ_OK)
        st = cli_session_opts_check(&ctx, &so);
    const char *reference = cli_get(opts, n_opts, "reference");
    if (st == PTQ_OK && reference)
        st = ptq_file_check_regular(&ctx, reference);
    return cli_report("run", &ctx, st);
}

int cmd_run(int argc, char **argv)
{
    cli_opt opts[] = {{"model", 1, NULL},   {"calib-data", 1, NULL},    {"data", 1, NULL},      {"out", 1, NULL},
                      {"budget", 1, NULL},  {"class-budget", 1, NULL},  {"calib-samples", 1, NULL},
                      {"samples", 1, NULL}, {"core", 1, NULL},          {"method", 1, NULL},    {"device", 1, NULL},
                      {"batch", 1, NULL},   {"threads", 1, NULL},       {"preprocess", 1, NULL}, {"force", 0, NULL},
                      {"help", 0, NULL},    {"target", 1, NULL},        {"labels", 1, NULL},    {"classes", 1, NULL},
                      {"calib-labels", 1, NULL}, {"calib-classes", 1, NULL}, {"output", 1, NULL},
                      {"input", CLI_REPEAT, NULL}, {"smooth", 1, NULL}, {"reference", 1, NULL},
                      {"reduce-range", 0, NULL}};
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    const char *pos[1];
    int n_pos = 0, rc = cli_parse("run", argc, argv, opts, n_opts, pos, &n_pos, 0);
    if (rc)
        return rc;
    const char *inputs[CLI_MAX_REPEAT]; /* read before the stages parse theirs */
    const int n_inputs = cli_get_all("input", inputs);
    if (cli_get(opts, n_opts, "help")) {
        fputs(run_help, stdout);
        return 0;
    }
    const char *model = cli_get(opts, n_opts, "model"), *cdata = cli_get(opts, n_opts, "calib-data");
    const char *data = cli_get(opts, n_opts, "data"), *dir = cli_get(opts, n_opts, "out");
    if (!model || !cdata || !data || !dir)
        return cli_usage_error("run", "--model, --calib-data, --data and --out are required");
    const char *budget = cli_get(opts, n_opts, "budget"), *class_budget = cli_get(opts, n_opts, "class-budget");
    if (class_budget && !budget)
        return cli_usage_error("run", "--class-budget needs --budget");
    if ((rc = cli_rank0_rc(check_flags(opts, n_opts, inputs, n_inputs))) != 0)
        return rc;
    const char *target = cli_get(opts, n_opts, "target");
    const int reduce_range = cli_get(opts, n_opts, "reduce-range") != NULL;
    const char *csamples = cli_get(opts, n_opts, "calib-samples") ? cli_get(opts, n_opts, "calib-samples") : "512";
    const char *vsamples = cli_get(opts, n_opts, "samples") ? cli_get(opts, n_opts, "samples") : "1000";
    const char *device = cli_get(opts, n_opts, "device"), *batch = cli_get(opts, n_opts, "batch");
    const char *threads = cli_get(opts, n_opts, "threads"), *pre = cli_get(opts, n_opts, "preprocess");
    const char *core = cli_get(opts, n_opts, "core"), *method = cli_get(opts, n_opts, "method");
    const char *labels = cli_get(opts, n_opts, "labels"), *classes = cli_get(opts, n_opts, "classes");
    const char *clabels = cli_get(opts, n_opts, "calib-labels"), *cclasses = cli_get(opts, n_opts, "calib-classes");
    const char *output = cli_get(opts, n_opts, "output");
    const ptq_dataset_opts data_opts = {.labels_file = labels, .classes_file = classes};
    const ptq_dataset_opts cdata_opts = {.labels_file = clabels, .classes_file = cclasses};
    const int made = !cli_is_writer() || mkdir(dir, 0777) == 0 || errno == EEXIST; /* rank 0 writes */
    if (!made)
        fprintf(stderr, "ptq run: error: cannot create folder %s: %s\n", dir, strerror(errno));
    if (cli_rank0_rc(made ? 0 : EXIT_IO))
        return EXIT_IO;
    char p_smooth[4200], p_calib[4200], p_sens[4200], p_plan[4200], p_report[4200], p_cache[4200], p_ort[4200],
        p_ranges[4200], p_qdq[4200], p_manifest[4200], p_sens_md[4200], p_trace[4200], p_sens_html[4200],
        p_report_files[CLI_REPORT_FILES][4300], p_ort_files[CLI_ORT_FILES][4300];
    snprintf(p_smooth, sizeof p_smooth, "%s/model_smooth.onnx", dir);
    snprintf(p_calib, sizeof p_calib, "%s/calib.h5", dir);
    snprintf(p_sens, sizeof p_sens, "%s/sens.json", dir);
    snprintf(p_sens_md, sizeof p_sens_md, "%s/sens.md", dir);
    snprintf(p_sens_html, sizeof p_sens_html, "%s/sens.html", dir);
    snprintf(p_plan, sizeof p_plan, "%s/plan.json", dir);
    snprintf(p_trace, sizeof p_trace, "%s/plan.trace.json", dir);
    snprintf(p_report, sizeof p_report, "%s/report", dir);
    for (int i = 0; i < CLI_REPORT_FILES; i++)
        snprintf(p_report_files[i], sizeof p_report_files[i], "%s/%s", p_report, cli_report_names[i]);
    snprintf(p_cache, sizeof p_cache, "%s/calib.cache", dir);
    snprintf(p_ort, sizeof p_ort, "%s/ort", dir);
    for (int i = 0; i < CLI_ORT_FILES; i++)
        snprintf(p_ort_files[i], sizeof p_ort_files[i], "%s/%s", p_ort, cli_ort_names[i]);
    snprintf(p_ranges, sizeof p_ranges, "%s/ranges.json", dir);
    snprintf(p_qdq, sizeof p_qdq, "%s/model_qdq.onnx", dir);
    snprintf(p_manifest, sizeof p_manifest, "%s/run.json", dir);

    /* on a GPU a MatMul of two batched inputs runs at the batch's shape, so there --batch may change the bits */
    const int gpu = device && strncmp(device, "cuda", 4) == 0;
    stage st[9];
    memset(st, 0, sizeof st);
    int n_st = 0;
    stage *s = NULL;
    const char *smooth = cli_get(opts, n_opts, "smooth"), *reference = cli_get(opts, n_opts, "reference");
    if (smooth) { /* every later stage runs on the smoothed model */
        s = &st[n_st++];
        *s = (stage){.name = "smooth", .cmd = cmd_smooth, .inputs = {model, cdata}, .input_opts = {NULL, &cdata_opts},
                     .n_inputs = 2, .outputs = {p_smooth}, .n_outputs = 1};
        arg(s, "smooth");
        opt(s, "--model", model), opt(s, "--data", cdata), opt(s, "--out", p_smooth), opt(s, "--alpha", smooth);
        opt(s, "--labels", clabels), opt(s, "--classes", cclasses), opt(s, "--samples", csamples);
        opt_unkeyed(s, "--batch", batch, gpu), opt_unkeyed(s, "--threads", threads, 0), opt(s, "--preprocess", pre);
        opts_all(s, "--input", inputs, n_inputs);
        model = p_smooth;
    }
    s = &st[n_st++];
    *s = (stage){.name = "calibrate", .cmd = cmd_calibrate, .inputs = {model, cdata}, .input_opts = {NULL, &cdata_opts},
                 .n_inputs = 2, .outputs = {p_calib}, .n_outputs = 1};
    arg(s, "calibrate");
    opt(s, "--model", model), opt(s, "--data", cdata), opt(s, "--out", p_calib);
    opt(s, "--labels", clabels), opt(s, "--classes", cclasses);
    if (strcmp(csamples, "0") != 0) /* calibrate reads every image without --samples */
        opt(s, "--samples", csamples);
    opt(s, "--device", device), opt_unkeyed(s, "--batch", batch, gpu), opt_unkeyed(s, "--threads", threads, 0);
    opt(s, "--preprocess", pre);
    opts_all(s, "--input", inputs, n_inputs);
    s = &st[n_st++];
    *s = (stage){.name = "sensitivity", .cmd = cmd_sensitivity, .inputs = {model, p_calib, data},
                 .input_opts = {NULL, NULL, &data_opts}, .n_inputs = 3, .outputs = {p_sens, p_sens_md, p_sens_html},
                 .n_outputs = 3};
    arg(s, "sensitivity");
    opt(s, "--model", model), opt(s, "--calib", p_calib), opt(s, "--data", data), opt(s, "--out", p_sens);
    opt(s, "--labels", labels), opt(s, "--classes", classes);
    opt(s, "--samples", vsamples), opt(s, "--core", core), opt(s, "--method", method), opt(s, "--output", output);
    opt(s, "--device", device), opt_unkeyed(s, "--batch", batch, gpu), opt_unkeyed(s, "--threads", threads, 0);
    opt(s, "--preprocess", pre);
    opts_all(s, "--input", inputs, n_inputs);
    opt(s, "--target", target); /* in its key too: a report of the other target's formats is measured again */
    if (reduce_range) /* in its arguments, so in its key: a report of the other weights is measured again */
        arg(s, "--reduce-range");
    s = &st[n_st++];
    *s = (stage){.name = "plan", .cmd = cmd_plan, .inputs = {model, p_calib, p_sens, data},
                 .input_opts = {NULL, NULL, NULL, &data_opts}, .n_inputs = budget ? 4 : 2, .outputs = {p_plan, p_trace},
                 .n_outputs = budget ? 2 : 1};
    arg(s, "plan");
    arg(s, p_calib);
    opt(s, "--model", model), opt(s, "--out", p_plan), opt(s, "--core", core), opt(s, "--method", method);
    opt(s, "--target", target);
    if (reduce_range)
        arg(s, "--reduce-range");
    if (budget) {
        opt(s, "--sensitivity", p_sens), opt(s, "--budget", budget), opt(s, "--class-budget", class_budget);
        opt(s, "--data", data), opt(s, "--samples", vsamples), opt(s, "--device", device);
        opt_unkeyed(s, "--batch", batch, gpu), opt_unkeyed(s, "--threads", threads, 0), opt(s, "--preprocess", pre);
        opt(s, "--labels", labels), opt(s, "--classes", classes), opt(s, "--output", output);
        opts_all(s, "--input", inputs, n_inputs);
    }
    s = &st[n_st++];
    *s = (stage){.name = "validate", .cmd = cmd_validate, .inputs = {model, p_plan, data, p_calib, p_sens, p_trace},
                 .input_opts = {NULL, NULL, &data_opts}, .n_inputs = budget ? 6 : 5, .n_outputs = CLI_REPORT_FILES,
                 .by_classes = 1};
    for (int i = 0; i < CLI_REPORT_FILES; i++)
        s->outputs[i] = p_report_files[i];
    if (reference) /* FP32 from eval's logits: the file is one more input */
        s->inputs[s->n_inputs++] = reference;
    arg(s, "validate");
    opt(s, "--reference", reference);
    opt(s, "--model", model), opt(s, "--plan", p_plan), opt(s, "--data", data), opt(s, "--report", p_report);
    opt(s, "--labels", labels), opt(s, "--classes", classes), opt(s, "--output", output);
    opt(s, "--calib", p_calib), opt(s, "--device", device), opt_unkeyed(s, "--threads", threads, 0);
    /* with --reference FP32 runs on the first batch only, whose size the report records */
    opt_unkeyed(s, "--batch", batch, gpu || reference);
    opt(s, "--preprocess", pre), opt(s, "--sensitivity", p_sens), opt(s, "--trace", budget ? p_trace : NULL);
    opts_all(s, "--input", inputs, n_inputs);
    const char *export_method = method ? method : "percentile";
    struct {
        const char *fmt, *path;
    } ex[] = {{"trt", p_cache}, {"ort", p_ort}, {"json", p_ranges}};
    for (int i = 0; i < 3; i++) {
        s = &st[n_st++];
        *s = (stage){.name = ex[i].fmt, .cmd = cmd_export, .inputs = {model, p_calib}, .n_inputs = 2,
                     .outputs = {ex[i].path}, .n_outputs = 1};
        if (ex[i].path == p_ort) /* a folder: done when its every file is there */
            for (s->n_outputs = 0; s->n_outputs < CLI_ORT_FILES; s->n_outputs++)
                s->outputs[s->n_outputs] = p_ort_files[s->n_outputs];
        arg(s, "export");
        arg(s, p_calib);
        opt(s, "--model", model), opt(s, "--method", export_method), opt(s, "--format", ex[i].fmt);
        opt(s, "--out", ex[i].path), arg(s, "--quiet");
    }
    s = &st[n_st++];
    *s = (stage){.name = "qdq", .cmd = cmd_export, .inputs = {model, p_plan}, .n_inputs = 2, .outputs = {p_qdq},
                 .n_outputs = 1};
    arg(s, "export");
    opt(s, "--format", "qdq"), opt(s, "--plan", p_plan), opt(s, "--model", model), opt(s, "--out", p_qdq);

    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    cJSON *manifest = NULL;
    char *old_text = NULL;
    if (cli_is_writer() && !cli_get(opts, n_opts, "force") && cli_read_text(&ctx, p_manifest, &old_text) == PTQ_OK)
        manifest = cJSON_Parse(old_text);
    free(old_text);
    if (!manifest || !cJSON_IsObject(manifest)) {
        cJSON_Delete(manifest);
        manifest = cJSON_CreateObject();
    }
    cJSON_DeleteItemFromObjectCaseSensitive(manifest, "format");
    cJSON_AddStringToObject(manifest, "format", "ptq-run");
    int budget_missed = 0, collapsed = 0;
    rc = 0;
    for (int i = 0; i < n_st && rc == 0; i++) {
        s = &st[i];
        char key[65] = "";
        int up_to_date = 0; /* rank 0 decides, for every rank */
        if (cli_is_writer()) {
            ptq_status kst = stage_key(&ctx, s, key);
            const cJSON *done_key = cJSON_GetObjectItemCaseSensitive(manifest, s->name);
            rc = kst != PTQ_OK ? cli_report("run", &ctx, kst) : 0;
            up_to_date = kst == PTQ_OK && cJSON_IsString(done_key) && strcmp(done_key->valuestring, key) == 0 &&
                         outputs_exist(&ctx, s);
        }
        if ((rc = cli_rank0_rc(rc)) != 0)
            break;
        if (cli_rank0_rc(up_to_date)) {
            printf("== %s: up to date, skipped\n", s->name);
            if (strcmp(s->name, "plan") == 0)
                budget_missed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(manifest, "plan_budget_missed"));
            if (strcmp(s->name, "validate") == 0)
                collapsed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(manifest, "validate_collapsed"));
            continue;
        }
        printf("== %s\n", s->name);
        fflush(stdout);
        cJSON_DeleteItemFromObjectCaseSensitive(manifest, s->name);
        for (int j = 0; j < s->n_unkeyed; j++)
            arg(s, s->unkeyed[j]);
        s->argv[s->argc] = NULL;
        const int spread = s->cmd == cmd_calibrate || s->cmd == cmd_sensitivity || s->cmd == cmd_validate;
        rc = spread ? s->cmd(s->argc - 1, (char **)s->argv + 1) : cli_on_rank0(s->cmd, s->argc - 1, (char **)s->argv + 1);
        fflush(stdout);
        if (rc == EXIT_BUDGET && strcmp(s->name, "plan") == 0) { /* the best plan was written: go on */
            budget_missed = 1;
            rc = 0;
        }
        if (rc == EXIT_COLLAPSED && strcmp(s->name, "validate") == 0) { /* the report was written: go on */
            collapsed = 1;
            rc = 0;
        }
        if (rc == 0)
            cJSON_AddStringToObject(manifest, s->name, key);
        if (rc == 0 && strcmp(s->name, "plan") == 0) {
            cJSON_DeleteItemFromObjectCaseSensitive(manifest, "plan_budget_missed");
            cJSON_AddBoolToObject(manifest, "plan_budget_missed", budget_missed);
        }
        if (rc == 0 && strcmp(s->name, "validate") == 0) {
            cJSON_DeleteItemFromObjectCaseSensitive(manifest, "validate_collapsed");
            cJSON_AddBoolToObject(manifest, "validate_collapsed", collapsed);
        }
        ptq_status mst = cli_is_writer() ? write_manifest(&ctx, p_manifest, manifest) : PTQ_OK;
        if (mst != PTQ_OK && rc == 0)
            rc = cli_report("run", &ctx, mst);
        rc = cli_rank0_rc(rc);
    }
    cJSON_Delete(manifest);
    if (rc == 0)
        printf("== done: %s (run.json, %scalib.h5, sens.json, sens.md, sens.html, plan.json, report/, calib.cache, ort/, "
               "ranges.json, model_qdq.onnx); open %s\n",
               cli_shown(dir), smooth ? "model_smooth.onnx, " : "", cli_shown(p_report_files[2]));
    if (rc == 0 && collapsed)
        rc = EXIT_COLLAPSED; /* before a missed budget: no accuracy figure of this run means anything */
    else if (rc == 0 && budget_missed)
        rc = EXIT_BUDGET;
    return cli_rank0_rc(rc);
}
