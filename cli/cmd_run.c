/* `ptq run`: the main job in one command, into one folder: calibrate ->
 * sensitivity -> plan (budgeted with --budget, else the default) ->
 * validate -> exports (TensorRT cache, ONNX Runtime tables, JSON ranges,
 * Q/DQ ONNX). It resumes: each stage's key is the SHA-256 of its settings
 * (canonical: defaults filled in, paths by their contents or relative to
 * DIR, --preprocess by the preprocessing it gives the model, --input sorted)
 * and of its inputs' contents (outputs of earlier stages included),
 * kept in DIR/run.json with the SHA-256 of each file the stage wrote; a
 * stage whose key matches and whose outputs are those files is skipped, so
 * a changed input reruns exactly what depends on it. Each stage is the
 * command of its name. Covered by tests/cli_run_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "ptq/export.h"
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
    "(TensorRT), ort/ (ONNX Runtime tables), ranges.json, model_qdq.onnx. Every flag\n"
    "value, and each data set as the stages will read it, is checked before the first\n"
    "stage: a refused one writes nothing. A second run with the same inputs skips the\n"
    "stages that are done (DIR/run.json holds each stage's key, the SHA-256 of its\n"
    "settings with the defaults filled in and of its inputs' contents, whatever the\n"
    "paths' spelling, --preprocess by the preprocessing it gives the model, whatever\n"
    "its spelling, and the SHA-256 of each file it wrote); a changed input reruns\n"
    "what depends on it, and an output that is missing or not the file its stage wrote\n"
    "(damaged, edited) reruns that stage. Exit codes are the failing stage's; 11 when\n"
    "no plan met --budget (the best one is validated and exported all the same).\n"
    "\n"
    "  --model FILE         ONNX model or Keras .h5\n"
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
    "  --seed S             the seed of both picks (calibration, validation; default 0)\n"
    "  --core P             int8 (default), fp8 (= fp8-e4m3) or fp8-e5m2; ranges.json is on its grid,\n"
    "                       calib.cache and ort/ hold INT8 ranges (their formats take no other)\n"
    "  --method M           calibrator for the plan and the exports, as for `ptq plan` (default\n"
    "                       percentile)\n"
    "  --target T           trt (default) or ort-cpu: the plan's number formats, as for `ptq plan`\n"
    "                       (ort-cpu: uint8 activations; sensitivity measures them, --budget\n"
    "                       moves tensors to FP32, and ort/ and ranges.json hold onnxruntime's\n"
    "                       uint8 ranges, as `ptq export --target ort-cpu`; calib.cache stays\n"
    "                       TensorRT's INT8)\n"
    "  --placement P        where activations are quantized, as for `ptq plan` (default trt; ort\n"
    "                       with --target ort-cpu), in sensitivity and the plan\n"
    "  --reduce-range       INT8 weights on onnxruntime's reduce_range grid [-64, 64], as for\n"
    "                       `ptq plan` (onnxruntime on CPUs without VNNI), in sensitivity and the\n"
    "                       plan alike, so --budget measures the weights onnxruntime will run\n"
    "  --device, --batch, --threads, --preprocess, --output, --progress as for `ptq eval`\n"
    "  --math M             fp32 (default), tf32 or fp64: the GPU math of calibrate, sensitivity,\n"
    "                       the budgeted plan and validate, as for `ptq eval`, and in their keys (the\n"
    "                       CPU computes FP32 whatever M, with eval's note)\n"
    "  --images-key KEY, --layout L, --allow-external-data  how the data sets' HDF5 files are\n"
    "                       read, as for `ptq eval`; --labels-key KEY: --data's labels (the stages\n"
    "                       that read an image folder do not get them; refused with two folders)\n"
    "  --input NAME=DATASET  (repeatable) the HDF5 dataset feeding a model input, in both data sets,\n"
    "                       as for `ptq eval` (default: the dataset of the input's name)\n"
    "  --smooth ALPHA       first move activation outliers into the weights (`ptq smooth --alpha\n"
    "                       ALPHA` on --calib-data's samples) and run every stage on that model,\n"
    "                       DIR/model_smooth.onnx (FP32 results unchanged to rounding)\n"
    "  --reference FILE     the FP32 logits of `ptq eval --logits FILE` on --data: validate runs FP32\n"
    "                       on its first batch only, checked against them (`ptq validate --reference`)\n"
    "  --force              run every stage again\n"
    "  --json               the stages' output on stderr, and on stdout a JSON summary: the exit code, each\n"
    "                       stage ran, skipped (up to date), failed or not run, the files in DIR, and\n"
    "                       validate's FP32 and quantized top-1\n"
    "\n"
    "Under mpirun or srun (MPI builds) the ranks share the work and rank 0 writes the same\n"
    "outputs one process would (README \"Running across GPUs\").\n";


enum { MAX_ARGS = 72 + 2 * CLI_MAX_REPEAT, MAX_UNKEYED = 12 };

/* How an argument enters its stage's key: as written (a setting, in the canonical form run gives it), as a
 * placeholder for a file whose contents the stage's inputs hash, as the SHA-256 of a small file's contents
 * (--labels, --classes), as an output's path relative to DIR, or (--preprocess's spec) as the preprocessing it
 * gives the stage's model (pre_key). Spellings of the same file, another working folder, DIR moved or another
 * spelling of the same preprocessing key the same. */
typedef enum { KEY_AS_IS, KEY_INPUT, KEY_CONTENTS, KEY_IN_DIR, KEY_PREPROCESS } key_kind;

/* One stage: the command and its arguments, the files it reads (hashed
 * into its key) and writes (all must exist, with the SHA-256s run.json
 * recorded when the stage wrote them, for it to count as done). */
typedef struct stage {
    const char *name;
    int (*cmd)(int argc, char **argv);
    const char *argv[MAX_ARGS];
    key_kind kind[MAX_ARGS]; /* how argv[i] enters the key */
    unsigned char value[MAX_ARGS]; /* argv[i] is the value of the option argv[i - 1] */
    int argc;
    const char *inputs[7];
    const ptq_dataset_opts *input_opts[7]; /* how a data set input is read (NULL: the defaults) */
    int n_inputs;
    const char *outputs[CLI_REPORT_FILES];
    int n_outputs;
    const char *side_output; /* "<model>.data": a written model's weights past protobuf's size (onnx_edit.c), made
                                only then; an output of the stage when it is there */
    int by_classes; /* outputs are validate's report (outputs[0] validate.json): as many as its class count calls for */
    const char *unkeyed[MAX_UNKEYED]; /* options the outputs do not depend on (--threads, --progress): passed on,
                                         not in the key */
    int n_unkeyed;
} stage;

static void arg_as(stage *s, const char *a, key_kind kind)
{
    if (a && s->argc < MAX_ARGS - 1) {
        s->kind[s->argc] = kind;
        s->argv[s->argc++] = a;
    }
}

static void arg(stage *s, const char *a)
{
    arg_as(s, a, KEY_AS_IS);
}

static void opt_as(stage *s, const char *name, const char *value, key_kind kind)
{
    if (value && s->argc < MAX_ARGS - 2) {
        arg(s, name);
        arg_as(s, value, kind);
        s->value[s->argc - 1] = 1;
    }
}

static void opt(stage *s, const char *name, const char *value)
{
    opt_as(s, name, value, KEY_AS_IS);
}

/* An option the outputs do not depend on (value NULL: a flag): passed on after the key is made. */
static void unkeyed(stage *s, const char *name, const char *value)
{
    if (s->n_unkeyed + 2 <= MAX_UNKEYED) {
        s->unkeyed[s->n_unkeyed++] = name;
        if (value)
            s->unkeyed[s->n_unkeyed++] = value;
    }
}

/* --threads, or --batch when keyed is 0: the stage's outputs are the same bytes whatever its value (README: the
 * executors run every GEMM with the same shape whatever the batch), so changing it reruns nothing. */
static void opt_unkeyed(stage *s, const char *name, const char *value, int keyed)
{
    if (keyed)
        opt(s, name, value);
    else if (value)
        unkeyed(s, name, value);
}

/* The stage's command line as its parser takes it: an option's value that starts with "--" (a path such as
 * --data=--set.h5) joined to its name, "--data=--set.h5", since the parser reads "--data --set.h5" as an option
 * with no value. NULL-terminated, its count in *argc; one block for free(), NULL when out of memory. */
static char **stage_command(const stage *s, int *argc)
{
    size_t bytes = (size_t)(s->argc + 1) * sizeof(char *);
    for (int i = 1; i < s->argc; i++)
        if (s->value[i] && strncmp(s->argv[i], "--", 2) == 0)
            bytes += strlen(s->argv[i - 1]) + strlen(s->argv[i]) + 2;
    char **v = malloc(bytes);
    if (!v)
        return NULL;
    char *joined = (char *)(v + s->argc + 1);
    *argc = 0;
    for (int i = 0; i < s->argc; i++) {
        if (i + 1 < s->argc && s->value[i + 1] && strncmp(s->argv[i + 1], "--", 2) == 0) {
            v[(*argc)++] = joined;
            joined += sprintf(joined, "%s=%s", s->argv[i], s->argv[i + 1]) + 1;
            i++;
        } else {
            v[(*argc)++] = (char *)s->argv[i];
        }
    }
    v[*argc] = NULL;
    return v;
}

/* The content SHA-256 of a file, or of a data set folder (ptq_dataset_content_sha256, which covers the
 * labels and classes files of dopts); an HDF5 set read with --allow-external-data with the files it reads. */
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
    return ptq_dataset_file_sha256(ctx, path, dopts && dopts->allow_external_data, hex);
}

/* p in full, every field (ptq_preprocess_format leaves out the means and stds past its channel count), floats
 * exact, then whether float images keep its scale (only where it is not 1: else they keep it whatever the spec). */
static void pre_canon(const ptq_preprocess *p, int scale_kept, char *buf, size_t n_buf)
{
    snprintf(buf, n_buf, "scale=%.9g mean=%.9g,%.9g,%.9g,%.9g std=%.9g,%.9g,%.9g,%.9g channels=%d layout=%s order=%s "
             "size=%lldx%lld resize=%lld convert=%d scale-kept=%d", (double)p->scale, (double)p->mean[0],
             (double)p->mean[1], (double)p->mean[2], (double)p->mean[3], (double)p->std[0], (double)p->std[1],
             (double)p->std[2], (double)p->std[3], p->n_channels, p->nhwc ? "NHWC" : "NCHW", p->bgr ? "BGR" : "RGB",
             (long long)p->height, (long long)p->width, (long long)p->resize, p->to_convert,
             scale_kept && p->scale != 1.0f);
}

/* The last pre_key's model path and result: the stages after smooth share their model, which no stage rewrites
 * once they run. */
typedef struct pre_memo {
    char model[4300], key[512];
} pre_memo;

/* --preprocess SPEC as the stage with model M gets it: the preprocessing SPEC gives M's input on top of its
 * metadata (ptq_model_preprocess), in full, so that key order, spacing, 0.5 for .5 or 5e-1, 1/255 for its
 * decimal, a preset for its values, or a key the metadata already says key the same; "" when that is what M gets
 * without --preprocess (the key of a run without it). */
static ptq_status pre_key(ptq_ctx *ctx, pre_memo *memo, const char *model, const char *spec, char *out, size_t n_out)
{
    if (memo->model[0] && strcmp(model, memo->model) == 0) {
        snprintf(out, n_out, "%s", memo->key);
        return PTQ_OK;
    }
    ptq_graph *g = NULL;
    PTQ_TRY_RET(ptq_model_load(ctx, model, &g));
    ptq_preprocess with, without;
    int kept = 0, kept_none = 0;
    ptq_status st = ptq_model_preprocess(ctx, g, spec, &with, &kept);
    if (st == PTQ_OK)
        st = ptq_model_preprocess(ctx, g, NULL, &without, &kept_none);
    ptq_graph_free(g);
    if (st != PTQ_OK)
        return st;
    char a[512], b[512];
    pre_canon(&with, kept, a, sizeof a);
    pre_canon(&without, kept_none, b, sizeof b);
    snprintf(out, n_out, "%s", strcmp(a, b) == 0 ? "" : a);
    if (strlen(model) < sizeof memo->model) {
        snprintf(memo->model, sizeof memo->model, "%s", model);
        snprintf(memo->key, sizeof memo->key, "%s", out);
    }
    return PTQ_OK;
}

/* The stage's key: its name, its arguments as their kinds say, and its inputs' contents. dir_len: the length of
 * DIR, which every output path starts with, then '/'. */
static ptq_status stage_key(ptq_ctx *ctx, const stage *s, size_t dir_len, pre_memo *memo, char key[65])
{
    ptq_sha256 h;
    ptq_sha256_init(&h);
    for (int i = 0; i < s->argc; i++) {
        const char *a = s->argv[i];
        char hex[65], pre[512];
        if (i + 1 < s->argc && s->kind[i + 1] == KEY_PREPROCESS) { /* "--preprocess SPEC" */
            PTQ_TRY_RET(pre_key(ctx, memo, s->inputs[0], s->argv[i + 1], pre, sizeof pre));
            if (!pre[0]) { /* what the model gets without it: keyed as no --preprocess */
                i++;
                continue;
            }
            ptq_sha256_update(&h, a, strlen(a) + 1);
            a = pre;
            i++;
        } else if (s->kind[i] == KEY_INPUT)
            a = "<input>"; /* its contents are hashed below */
        else if (s->kind[i] == KEY_IN_DIR)
            a += dir_len + 1;
        else if (s->kind[i] == KEY_CONTENTS) {
            PTQ_TRY_RET(ptq_sha256_file(ctx, a, hex));
            a = hex;
        }
        ptq_sha256_update(&h, a, strlen(a) + 1);
    }
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

/* How many of the stage's outputs it writes: all, or validate's report files for its class count (-1 when
 * validate.json cannot be read). */
static int n_written(ptq_ctx *ctx, const stage *s)
{
    if (!s->by_classes)
        return s->n_outputs;
    const int64_t k = report_classes(ctx, s->outputs[0]);
    return k < 0 ? -1 : cli_report_n_files(k);
}

/* The stage's outputs as run.json records them, {path relative to DIR: SHA-256}, into *out (the caller's). */
static ptq_status outputs_digest(ptq_ctx *ctx, const stage *s, size_t dir_len, cJSON **out)
{
    *out = NULL;
    const int n = n_written(ctx, s);
    if (n < 0)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "%s: cannot read the class count of the report just written",
                        s->outputs[0]);
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        char hex[65];
        ptq_status st = ptq_sha256_file(ctx, s->outputs[i], hex);
        if (st != PTQ_OK) {
            cJSON_Delete(o);
            return st;
        }
        cJSON_AddStringToObject(o, s->outputs[i] + dir_len + 1, hex);
    }
    struct stat stt;
    if (s->side_output && stat(s->side_output, &stt) == 0) {
        char hex[65];
        ptq_status st = ptq_sha256_file(ctx, s->side_output, hex);
        if (st != PTQ_OK) {
            cJSON_Delete(o);
            return st;
        }
        cJSON_AddStringToObject(o, s->side_output + dir_len + 1, hex);
    }
    *out = o;
    return PTQ_OK;
}

enum { OUTPUTS_SAME, OUTPUTS_MISSING, OUTPUTS_CHANGED };

/* Whether every file the stage writes is there with the SHA-256 recorded (an object of outputs_digest) when the
 * stage wrote it: OUTPUTS_SAME; OUTPUTS_MISSING when one is not there (or none was recorded); OUTPUTS_CHANGED,
 * with *which, when one is another file (damaged, or edited). The side output counts where it was recorded. */
static int outputs_state(ptq_ctx *ctx, const stage *s, size_t dir_len, const cJSON *recorded, const char **which)
{
    struct stat stt;
    const int n = n_written(ctx, s);
    *which = NULL;
    if (n < 0 || !cJSON_IsObject(recorded))
        return OUTPUTS_MISSING;
    const char *files[CLI_REPORT_FILES + 1];
    int n_files = 0;
    for (int i = 0; i < n; i++)
        files[n_files++] = s->outputs[i];
    if (s->side_output && cJSON_GetObjectItemCaseSensitive(recorded, s->side_output + dir_len + 1))
        files[n_files++] = s->side_output;
    for (int i = 0; i < n_files; i++)
        if (stat(files[i], &stt) != 0)
            return OUTPUTS_MISSING;
    for (int i = 0; i < n_files; i++) {
        const cJSON *was = cJSON_GetObjectItemCaseSensitive(recorded, files[i] + dir_len + 1);
        char hex[65];
        if (!cJSON_IsString(was))
            return OUTPUTS_MISSING;
        if (ptq_sha256_file(ctx, files[i], hex) != PTQ_OK || strcmp(hex, was->valuestring) != 0) {
            *which = files[i];
            return OUTPUTS_CHANGED;
        }
    }
    return OUTPUTS_SAME;
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

/* run's settings as the stages get them: each number as the integer or the shortest decimal it parses to, each
 * name in its canonical spelling with the default filled in. The stages read what run checked, and a key does
 * not depend on how a setting was spelled (--device gpu, --method percentile, --calib-samples 00). */
typedef struct run_settings {
    char calib_samples[24], samples[24], seed[24], batch[24], threads[24]; /* batch, threads: "" when not given */
    char method[64], budget[40], class_budget[40], alpha[40];           /* "" when not given */
    char device[16];
    const char *core, *placement, *target;
    const char *math; /* "tf32", "fp64"; NULL for fp32, the default, whose keys are those of a run without --math */
    const char *ort_grid, *json_grid; /* export --target of ort/ and ranges.json (calib.cache: int8) */
    int64_t n_calib_samples;
    int gpu;
} run_settings;

/* x as the shortest decimal that reads back to it, into out[40]. */
static void canon_double(double x, char out[40])
{
    if (!ptq_export_format_double(x, out, 40))
        snprintf(out, 40, "%.17g", x);
}

/* Every flag's value checked by the parser of the command that takes it, and --reference's file, before the first
 * stage runs: a typo costs no calibration. Fills rs. Returns 0 or the exit code, printed. */
static int check_flags(const cli_opt *opts, int n_opts, const char *const *inputs, int n_inputs, run_settings *rs)
{
    static const char *const points[] = {"budget", "class-budget"};
    char *const points_out[] = {rs->budget, rs->class_budget};
    double x;
    int64_t n;
    int rc = 0;
    memset(rs, 0, sizeof *rs);
    for (int i = 0; i < 2 && !rc; i++) {
        const char *v = cli_get(opts, n_opts, points[i]);
        rc = v ? cli_points_parse("run", points[i], v, &x) : 0;
        if (v && !rc)
            canon_double(x, points_out[i]);
    }
    const char *alpha = cli_get(opts, n_opts, "smooth");
    if (rc || (alpha && (rc = cli_alpha_parse("run", "smooth", alpha, &x))))
        return rc;
    if (alpha)
        canon_double(x, rs->alpha);
    if ((rc = cli_get_int("run", opts, n_opts, "calib-samples", 512, 0, &rs->n_calib_samples)))
        return rc;
    snprintf(rs->calib_samples, sizeof rs->calib_samples, "%lld", (long long)rs->n_calib_samples);
    if ((rc = cli_get_int("run", opts, n_opts, "samples", 1000, 0, &n)))
        return rc;
    snprintf(rs->samples, sizeof rs->samples, "%lld", (long long)n);
    if ((rc = cli_get_int("run", opts, n_opts, "seed", 0, 0, &n)))
        return rc;
    snprintf(rs->seed, sizeof rs->seed, "%lld", (long long)n);
    if ((rc = cli_get_int("run", opts, n_opts, "threads", 0, 1, &n)))
        return rc;
    if (cli_get(opts, n_opts, "threads"))
        snprintf(rs->threads, sizeof rs->threads, "%lld", (long long)n);
    if ((rc = cli_get_int("run", opts, n_opts, "batch", 1, 1, &n)))
        return rc;
    if (cli_get(opts, n_opts, "batch"))
        snprintf(rs->batch, sizeof rs->batch, "%lld", (long long)n);
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    cli_plan_settings ps;
    ptq_status st = cli_plan_settings_parse(&ctx, cli_get(opts, n_opts, "method"), cli_get(opts, n_opts, "core"),
                                            cli_get(opts, n_opts, "placement"), cli_get(opts, n_opts, "target"),
                                            cli_get(opts, n_opts, "reduce-range") != NULL, &ps);
    cli_session_opts so = {.device = cli_get(opts, n_opts, "device"), .math = cli_get(opts, n_opts, "math"),
                           .n_inputs = n_inputs};
    for (int i = 0; i < n_inputs && i < CLI_MAX_REPEAT; i++)
        so.inputs[i] = inputs[i];
    if (st == PTQ_OK)
        st = cli_session_opts_check(&ctx, &so);
    const char *reference = cli_get(opts, n_opts, "reference");
    if (st == PTQ_OK && reference)
        st = ptq_file_check_regular(&ctx, reference);
    ptq_device device = PTQ_DEVICE_CPU;
    int ordinal = 0;
    ptq_math math = PTQ_MATH_FP32;
    if (st == PTQ_OK)
        st = ptq_device_parse(&ctx, so.device, &device, &ordinal);
    if (st == PTQ_OK)
        st = ptq_math_parse(&ctx, so.math, &math);
    if (st != PTQ_OK)
        return cli_report("run", &ctx, st);
    if (ps.cp.method == PTQ_CALIB_PERCENTILE) { /* the plan's "percentile=99.99" when no P is given */
        char p[40];
        canon_double(ps.cp.percentile > 0 ? ps.cp.percentile : PTQ_CALIB_DEFAULT_PERCENTILE, p);
        snprintf(rs->method, sizeof rs->method, "percentile=%s", p);
    } else {
        snprintf(rs->method, sizeof rs->method, "%s", ptq_calib_method_name(ps.cp.method));
    }
    if (device != PTQ_DEVICE_CUDA)
        snprintf(rs->device, sizeof rs->device, "%s", device == PTQ_DEVICE_REF ? "ref" : "cpu");
    else if (ordinal == PTQ_CUDA_DEVICE_LOCAL)
        snprintf(rs->device, sizeof rs->device, "cuda");
    else
        snprintf(rs->device, sizeof rs->device, "cuda:%d", ordinal);
    rs->gpu = device == PTQ_DEVICE_CUDA;
    rs->math = math == PTQ_MATH_FP32 ? NULL : ptq_math_name(math);
    rs->core = ptq_prec_name(ps.core);
    rs->placement = ptq_placement_name(ps.placement);
    rs->target = ptq_target_name(ps.target);
    rs->ort_grid = ps.target == PTQ_TARGET_ORT_CPU ? "ort-cpu" : "int8";
    rs->json_grid = ps.target == PTQ_TARGET_ORT_CPU ? "ort-cpu" : rs->core;
    return 0;
}

/* 1 when path is a folder: an image-folder data set. */
static int is_folder(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Which data set gets the options that say how an HDF5 file is read (--images-key, --layout,
 * --allow-external-data, an image model's --input): each, but an image folder when the other set is an HDF5
 * file (C a folder and V an HDF5 file, or the reverse: the options are the file's). With both sets folders
 * they go to both, whose stages refuse them (README: an option that applies only to HDF5 files, with an image
 * folder, is exit 2). */
typedef struct hdf5_opts_to {
    int calib, val;
} hdf5_opts_to;

static hdf5_opts_to hdf5_opts_for(const char *cdata, const char *data)
{
    const int cfolder = is_folder(cdata), vfolder = is_folder(data);
    return (hdf5_opts_to){.calib = !cfolder || vfolder, .val = !vfolder || cfolder};
}

/* o without the options only an HDF5 file takes (hdf5_opts_to), but --labels-key: the labels of --data alone. */
static void drop_hdf5_opts(cli_session_opts *o)
{
    o->images_key = o->layout = NULL;
    o->allow_external_data = 0;
    o->n_inputs = 0;
}

/* The data flags checked as the stages that read each data set will read it (cli_session_check_data):
 * calibrate's (and smooth's) on C, the labelled ones on V; *named: whether the model's inputs are named (1) or
 * one image input (0). Returns 0 or the exit code, printed. */
static int check_data(const cli_opt *opts, int n_opts, const char *const *inputs, int n_inputs, hdf5_opts_to to,
                      int *named)
{
    cli_session_opts so = cli_session_opts_from(opts, n_opts);
    so.device = NULL;
    so.n_inputs = n_inputs < CLI_MAX_REPEAT ? n_inputs : CLI_MAX_REPEAT;
    for (int i = 0; i < so.n_inputs; i++)
        so.inputs[i] = inputs[i];
    cli_session_opts co = so; /* calibrate reads C with run's --calib-labels and --calib-classes, and no logits */
    co.data = cli_get(opts, n_opts, "calib-data");
    co.labels_key = NULL;
    co.labels_file = cli_get(opts, n_opts, "calib-labels");
    co.classes_file = cli_get(opts, n_opts, "calib-classes");
    co.output = NULL;
    if (!to.calib)
        drop_hdf5_opts(&co);
    if (!to.val)
        drop_hdf5_opts(&so);
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = cli_session_check_data(&ctx, &co, 0, named);
    if (st == PTQ_OK)
        st = cli_session_check_data(&ctx, &so, 1, NULL);
    return st == PTQ_OK ? 0 : cli_report("run", &ctx, st);
}

/* --input NAME=NAME for a model of named inputs (named 1): the dataset the input reads without it, so the stages
 * get no such entry and key as without it (a default spelled out). An image model's entry names its images
 * dataset, which without it is the first of images, x, data, X the file has: kept. */
static int input_is_default(const char *entry, int named)
{
    const char *eq = strchr(entry, '=');
    return named && eq && strlen(eq + 1) == (size_t)(eq - entry) && strncmp(entry, eq + 1, (size_t)(eq - entry)) == 0;
}

/* The options that say how a data set is read, for a stage that reads one: with hdf5 (hdf5_opts_to) --input (but
 * a default one, see input_is_default), --images-key and --layout; for V (labelled 1), --labels-key;
 * --allow-external-data (with hdf5) and --progress (with_progress) do not change outputs. */
static void data_opts(stage *s, const cli_opt *opts, int n_opts, const char *const *inputs, int n_inputs, int named,
                      int labelled, int hdf5, int with_progress)
{
    for (int i = 0; i < n_inputs && hdf5; i++)
        if (!input_is_default(inputs[i], named))
            opt(s, "--input", inputs[i]);
    if (hdf5)
        opt(s, "--images-key", cli_get(opts, n_opts, "images-key"));
    if (labelled)
        opt(s, "--labels-key", cli_get(opts, n_opts, "labels-key"));
    if (hdf5)
        opt(s, "--layout", cli_get(opts, n_opts, "layout"));
    if (hdf5 && cli_get(opts, n_opts, "allow-external-data"))
        unkeyed(s, "--allow-external-data", NULL);
    if (with_progress && cli_get(opts, n_opts, "progress"))
        unkeyed(s, "--progress", NULL);
}

/* --json: {"command": "run", ..., "out", "exit", "stages": [{"name", "status"}], "budget_missed", "collapsed",
 * "files": [the stages' outputs there now, relative to DIR], and validate.json's top-1 figures when it ran or was
 * up to date} on stdout. */
static void print_summary(const char *dir, size_t dir_len, const stage *st, int n_st, const char *const *status,
                          const char *manifest, const char *validate_json, int rc, int budget_missed, int collapsed)
{
    cli_json *o = cli_json_header("run", NULL);
    cli_json_str(o, "out", dir);
    cli_json_num(o, "exit", rc);
    cJSON *stages = cJSON_AddArrayToObject(o, "stages"), *files = cJSON_CreateArray();
    int validated = 0;
    struct stat sb;
    if (stat(manifest, &sb) == 0)
        cJSON_AddItemToArray(files, cJSON_CreateString("run.json"));
    for (int i = 0; i < n_st; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", st[i].name);
        cJSON_AddStringToObject(e, "status", status[i]);
        cJSON_AddItemToArray(stages, e);
        const int done = strcmp(status[i], "ran") == 0 || strcmp(status[i], "skipped") == 0;
        validated |= done && strcmp(st[i].name, "validate") == 0;
        for (int j = 0; done && j <= st[i].n_outputs; j++) {
            const char *path = j < st[i].n_outputs ? st[i].outputs[j] : st[i].side_output;
            char *rel = path ? ptq_utf8_dup(path + dir_len + 1) : NULL;
            if (rel && stat(path, &sb) == 0)
                cJSON_AddItemToArray(files, cJSON_CreateString(rel));
            free(rel);
        }
    }
    cJSON_AddBoolToObject(o, "budget_missed", budget_missed);
    cJSON_AddBoolToObject(o, "collapsed", collapsed);
    cJSON_AddItemToObject(o, "files", files);
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    char *text = NULL;
    cJSON *v = validated && cli_read_text(&ctx, validate_json, &text) == PTQ_OK ? cJSON_Parse(text) : NULL;
    free(text);
    static const char *const figures[] = {"top1_fp32", "top1_quant", "top1_delta_pts"};
    for (int i = 0; i < 3; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(v, figures[i]);
        if (cJSON_IsNumber(x))
            cli_json_num(o, figures[i], x->valuedouble);
    }
    cJSON_Delete(v);
    text = cli_json_done(o);
    if (text)
        printf("%s\n", text);
    free(text);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Under mpirun the stages after the first read, on every rank, what earlier ones wrote in dir (calib.h5, sens.json,
 * the plan): dir must be one folder to all ranks, not one on rank 0's node alone. Rank 0 makes a file of a random
 * name in it, and every rank looks for that name. 0 or the exit code, on every rank. */
static int dir_shared(const char *dir)
{
    if (ptq_dist_size() == 1)
        return 0;
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = PTQ_OK;
    char probe[PTQ_TMP_NAME_BYTES] = "", path[PTQ_TMP_NAME_BYTES];
    if (cli_is_writer()) {
        snprintf(path, sizeof path, "%s/run.json", dir);
        st = ptq_atomic_create(&ctx, path, probe, sizeof probe, NULL);
    }
    ptq_status bst = ptq_dist_bcast(&ctx, probe, sizeof probe, 0);
    probe[sizeof probe - 1] = '\0';
    struct stat sb;
    if (st == PTQ_OK)
        st = bst;
    if (st == PTQ_OK && !cli_is_writer() && stat(probe, &sb) != 0)
        st = ptq_fail(&ctx, PTQ_ERR_INVALID_ARG, "--out %s is not the folder rank 0 writes (%s is not there): the "
                      "stages read what the earlier ones wrote in it, on every rank (put it on a file system all "
                      "nodes share)", dir, probe);
    st = ptq_dist_agree(&ctx, st);
    ptq_atomic_discard(probe); /* rank 0's; the others' name is not theirs to remove */
    return cli_report("run", &ctx, st);
}

/* 1 when s is ".tmp-" and 32 lowercase hex digits, the suffix of ptq_atomic_create's temporaries. */
static int is_tmp_suffix(const char *s)
{
    if (strncmp(s, ".tmp-", 5) != 0)
        return 0;
    int n = 0;
    for (s += 5; (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'); s++)
        n++;
    return n == 32 && !*s;
}

/* The temporaries "<output>.tmp-<32 hex>" an earlier run left beside outputs[] when SIGKILL ended it (the one
 * signal that leaves them; a killed calibration's can be as large as the archive): removed while this run holds
 * the folder's lock, so none is another run's. */
static void remove_stale_tmps(const char *const *outputs, int n_outputs)
{
    for (int i = 0; i < n_outputs; i++) {
        const char *slash = strrchr(outputs[i], '/');
        char folder[4300], path[8600];
        snprintf(folder, sizeof folder, "%.*s", (int)(slash - outputs[i]), outputs[i]);
        const size_t n_base = strlen(slash + 1);
        DIR *d = opendir(folder);
        for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d))
            if (strncmp(e->d_name, slash + 1, n_base) == 0 && is_tmp_suffix(e->d_name + n_base)) {
                snprintf(path, sizeof path, "%s/%s", folder, e->d_name);
                unlink(path);
            }
        if (d)
            closedir(d);
    }
}

/* One run at a time in dir: each reads run.json when it starts and rewrites it after every stage, so two at once
 * would each record files the other wrote (and read them: a plan beside the other's sensitivity). An exclusive
 * flock on the folder itself, held until the run ends (the kernel drops it however the process ends, SIGKILL
 * included); where the file system takes no flock on a folder (some NFS mounts) the run goes on without one.
 * 0, or prints and returns EXIT_IO when another process holds it. */
static int dir_lock(const char *dir, int *fd)
{
    *fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (*fd < 0 || flock(*fd, LOCK_EX | LOCK_NB) == 0)
        return 0;
    const int busy = errno == EWOULDBLOCK;
    close(*fd);
    *fd = -1; /* not held */
    if (busy)
        fprintf(stderr, "ptq run: error: --out %s is in use by another ptq run (it holds the folder's lock): one "
                        "run at a time in a folder; wait for it, or give another --out\n", dir);
    return busy ? EXIT_IO : 0;
}

int cmd_run(int argc, char **argv)
{
    cli_opt opts[] = {{"model", 1, NULL},   {"calib-data", 1, NULL},    {"data", 1, NULL},      {"out", 1, NULL},
                      {"budget", 1, NULL},  {"class-budget", 1, NULL},  {"calib-samples", 1, NULL},
                      {"samples", 1, NULL}, {"core", 1, NULL},          {"method", 1, NULL},    {"device", 1, NULL},
                      {"batch", 1, NULL},   {"threads", 1, NULL},       {"preprocess", 1, NULL}, {"force", 0, NULL},
                      {"help", 0, NULL},    {"target", 1, NULL},        {"calib-labels", 1, NULL},
                      {"calib-classes", 1, NULL}, CLI_DATA_OPTS,       {"smooth", 1, NULL},    {"reference", 1, NULL},
                      {"reduce-range", 0, NULL}, {"seed", 1, NULL},    {"placement", 1, NULL}, {"progress", 0, NULL},
                      {"math", 1, NULL},    {"json", 0, NULL}};
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    const char *pos[1];
    int n_pos = 0, rc = cli_parse("run", argc, argv, opts, n_opts, pos, &n_pos, 0);
    if (rc)
        return rc;
    const char *inputs[CLI_MAX_REPEAT]; /* read before the stages parse theirs */
    const int n_inputs = cli_get_all("input", inputs);
    /* in one order, the stages' and their keys': each names another model input, and where it stands in the
     * command line changes nothing but which of two bad ones a message names */
    qsort(inputs, (size_t)(n_inputs < CLI_MAX_REPEAT ? n_inputs : CLI_MAX_REPEAT), sizeof inputs[0], cmp_str);
    if (cli_get(opts, n_opts, "help")) {
        fputs(run_help, stdout);
        return 0;
    }
    const char *model = cli_get(opts, n_opts, "model"), *cdata = cli_get(opts, n_opts, "calib-data");
    const char *data = cli_get(opts, n_opts, "data"), *out_arg = cli_get(opts, n_opts, "out");
    if (!model || !cdata || !data || !out_arg)
        return cli_usage_error("run", "--model, --calib-data, --data and --out are required");
    const char *budget = cli_get(opts, n_opts, "budget");
    if (cli_get(opts, n_opts, "class-budget") && !budget)
        return cli_usage_error("run", "--class-budget needs --budget");
    run_settings rs;
    if ((rc = cli_rank0_rc(check_flags(opts, n_opts, inputs, n_inputs, &rs))) != 0)
        return rc;
    const hdf5_opts_to to = hdf5_opts_for(cdata, data);
    int named = 0; /* rank 0's, the one that keys the stages (another rank passes a default --input on, as read) */
    if ((rc = cli_rank0_rc(cli_is_writer() ? check_data(opts, n_opts, inputs, n_inputs, to, &named) : 0)) != 0)
        return rc;
    /* --out without its trailing slashes: DIR/calib.h5, not DIR//calib.h5; a DIR that starts with "--" as ./DIR,
       since the archive is the plan and export stages' argument, which the parser would take for an option */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s%s", strncmp(out_arg, "--", 2) == 0 ? "./" : "", out_arg);
    for (size_t len = strlen(dir); len > 1 && dir[len - 1] == '/'; len--)
        dir[len - 1] = '\0';
    const size_t dir_len = strlen(dir);
    const int reduce_range = cli_get(opts, n_opts, "reduce-range") != NULL;
    const char *batch = rs.batch[0] ? rs.batch : NULL, *threads = rs.threads[0] ? rs.threads : NULL;
    const char *pre = cli_get(opts, n_opts, "preprocess"), *output = cli_get(opts, n_opts, "output");
    const char *labels = cli_get(opts, n_opts, "labels"), *classes = cli_get(opts, n_opts, "classes");
    const char *clabels = cli_get(opts, n_opts, "calib-labels"), *cclasses = cli_get(opts, n_opts, "calib-classes");
    const ptq_dataset_opts hdf5_opts = {.images_key = cli_get(opts, n_opts, "images-key"),
                                        .layout = cli_get(opts, n_opts, "layout"),
                                        .allow_external_data = cli_get(opts, n_opts, "allow-external-data") != NULL};
    ptq_dataset_opts data_opts_v = to.val ? hdf5_opts : (ptq_dataset_opts){0};
    data_opts_v.labels_key = cli_get(opts, n_opts, "labels-key");
    data_opts_v.labels_file = labels;
    data_opts_v.classes_file = classes;
    ptq_dataset_opts cdata_opts = to.calib ? hdf5_opts : (ptq_dataset_opts){0};
    cdata_opts.labels_file = clabels;
    cdata_opts.classes_file = cclasses;
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
    /* every file the stages will write (run.json too) against every input, and no output in an image-folder data
       set or on its lists: before the folder is made (a clash found by a late stage would cost the earlier ones) */
    char p_qdq_data[4300], p_smooth_data[4300];
    snprintf(p_qdq_data, sizeof p_qdq_data, "%s.data", p_qdq);
    snprintf(p_smooth_data, sizeof p_smooth_data, "%s.data", p_smooth);
    const char *all_in[] = {model, cdata, data, cli_get(opts, n_opts, "reference"), labels, classes, clabels, cclasses};
    const char *all_out[CLI_REPORT_FILES + CLI_ORT_FILES + 14] = {
        p_manifest, p_smooth, p_smooth_data, p_calib, p_sens, p_sens_md, p_sens_html, p_plan, p_trace, p_cache,
        p_ranges, p_qdq, p_qdq_data};
    int n_out = 13;
    for (int i = 0; i < CLI_REPORT_FILES; i++)
        all_out[n_out++] = p_report_files[i];
    for (int i = 0; i < CLI_ORT_FILES; i++)
        all_out[n_out++] = p_ort_files[i];
    if (cli_is_writer()) {
        rc = cli_check_outputs("run", all_in, 8, all_out, n_out); /* --data's folder and lists (cli_parse's) */
        if (!rc) { /* and --calib-data's: the files above are checked */
            cli_data_inputs_set(cdata, clabels, cclasses, cdata_opts.allow_external_data);
            rc = cli_check_outputs("run", NULL, 0, all_out, n_out);
        }
    }
    if ((rc = cli_rank0_rc(rc)) != 0)
        return rc;
    /* on a GPU a MatMul of two batched inputs runs at the batch's shape, so there --batch may change the bits */
    const int gpu = rs.gpu;
    stage st[9];
    memset(st, 0, sizeof st);
    int n_st = 0;
    stage *s = NULL;
    const char *smooth = rs.alpha[0] ? rs.alpha : NULL, *reference = cli_get(opts, n_opts, "reference");
    if (smooth) { /* every later stage runs on the smoothed model */
        s = &st[n_st++];
        *s = (stage){.name = "smooth", .cmd = cmd_smooth, .inputs = {model, cdata}, .input_opts = {NULL, &cdata_opts},
                     .n_inputs = 2, .outputs = {p_smooth}, .n_outputs = 1, .side_output = p_smooth_data};
        arg(s, "smooth");
        opt_as(s, "--model", model, KEY_INPUT), opt_as(s, "--data", cdata, KEY_INPUT);
        opt_as(s, "--out", p_smooth, KEY_IN_DIR), opt(s, "--alpha", smooth);
        opt_as(s, "--labels", clabels, KEY_CONTENTS), opt_as(s, "--classes", cclasses, KEY_CONTENTS);
        opt(s, "--samples", rs.calib_samples), opt(s, "--seed", rs.seed);
        opt_unkeyed(s, "--batch", batch, gpu), opt_unkeyed(s, "--threads", threads, 0);
        opt_as(s, "--preprocess", pre, KEY_PREPROCESS);
        data_opts(s, opts, n_opts, inputs, n_inputs, named, 0, to.calib, 1);
        model = p_smooth;
    }
    /* the model is DIR's from here on with --smooth: an output of the smooth stage, keyed by its contents */
    s = &st[n_st++];
    *s = (stage){.name = "calibrate", .cmd = cmd_calibrate, .inputs = {model, cdata}, .input_opts = {NULL, &cdata_opts},
                 .n_inputs = 2, .outputs = {p_calib}, .n_outputs = 1};
    arg(s, "calibrate");
    opt_as(s, "--model", model, KEY_INPUT), opt_as(s, "--data", cdata, KEY_INPUT);
    opt_as(s, "--out", p_calib, KEY_IN_DIR);
    opt_as(s, "--labels", clabels, KEY_CONTENTS), opt_as(s, "--classes", cclasses, KEY_CONTENTS);
    if (rs.n_calib_samples > 0) /* calibrate reads every image without --samples (and refuses --seed then) */
        opt(s, "--samples", rs.calib_samples), opt(s, "--seed", rs.seed);
    opt(s, "--device", rs.device), opt(s, "--math", rs.math), opt_unkeyed(s, "--batch", batch, gpu);
    opt_unkeyed(s, "--threads", threads, 0), opt_as(s, "--preprocess", pre, KEY_PREPROCESS);
    data_opts(s, opts, n_opts, inputs, n_inputs, named, 0, to.calib, 1);
    s = &st[n_st++];
    *s = (stage){.name = "sensitivity", .cmd = cmd_sensitivity, .inputs = {model, p_calib, data},
                 .input_opts = {NULL, NULL, &data_opts_v}, .n_inputs = 3, .outputs = {p_sens, p_sens_md, p_sens_html},
                 .n_outputs = 3};
    arg(s, "sensitivity");
    opt_as(s, "--model", model, KEY_INPUT), opt_as(s, "--calib", p_calib, KEY_INPUT);
    opt_as(s, "--data", data, KEY_INPUT), opt_as(s, "--out", p_sens, KEY_IN_DIR);
    opt_as(s, "--labels", labels, KEY_CONTENTS), opt_as(s, "--classes", classes, KEY_CONTENTS);
    opt(s, "--samples", rs.samples), opt(s, "--core", rs.core);
    if (strcmp(rs.samples, "0") != 0) /* --samples 0 measures every sample (and refuses --seed then) */
        opt(s, "--seed", rs.seed);
    opt(s, "--method", rs.method), opt(s, "--output", output);
    opt(s, "--device", rs.device), opt(s, "--math", rs.math), opt_unkeyed(s, "--batch", batch, gpu);
    opt_unkeyed(s, "--threads", threads, 0);
    opt_as(s, "--preprocess", pre, KEY_PREPROCESS);
    data_opts(s, opts, n_opts, inputs, n_inputs, named, 1, to.val, 1);
    /* in its key too: a report of another target's formats, placement or weights is measured again */
    opt(s, "--target", rs.target), opt(s, "--placement", rs.placement);
    if (reduce_range)
        arg(s, "--reduce-range");
    s = &st[n_st++];
    *s = (stage){.name = "plan", .cmd = cmd_plan, .inputs = {model, p_calib, p_sens, data},
                 .input_opts = {NULL, NULL, NULL, &data_opts_v}, .n_inputs = budget ? 4 : 2,
                 .outputs = {p_plan, p_trace}, .n_outputs = budget ? 2 : 1};
    arg(s, "plan");
    arg_as(s, p_calib, KEY_INPUT);
    opt_as(s, "--model", model, KEY_INPUT), opt_as(s, "--out", p_plan, KEY_IN_DIR), opt(s, "--core", rs.core);
    opt(s, "--method", rs.method), opt(s, "--target", rs.target), opt(s, "--placement", rs.placement);
    if (reduce_range)
        arg(s, "--reduce-range");
    if (budget) {
        opt_as(s, "--sensitivity", p_sens, KEY_INPUT), opt(s, "--budget", rs.budget);
        opt(s, "--class-budget", rs.class_budget[0] ? rs.class_budget : NULL);
        opt_as(s, "--data", data, KEY_INPUT), opt(s, "--samples", rs.samples), opt(s, "--seed", rs.seed);
        opt(s, "--device", rs.device), opt(s, "--math", rs.math);
        opt_unkeyed(s, "--batch", batch, gpu), opt_unkeyed(s, "--threads", threads, 0);
        opt_as(s, "--preprocess", pre, KEY_PREPROCESS);
        opt_as(s, "--labels", labels, KEY_CONTENTS), opt_as(s, "--classes", classes, KEY_CONTENTS);
        opt(s, "--output", output);
        data_opts(s, opts, n_opts, inputs, n_inputs, named, 1, to.val, 0); /* plan has no progress line */
    }
    s = &st[n_st++];
    *s = (stage){.name = "validate", .cmd = cmd_validate, .inputs = {model, p_plan, data, p_calib, p_sens, p_trace},
                 .input_opts = {NULL, NULL, &data_opts_v}, .n_inputs = budget ? 6 : 5, .n_outputs = CLI_REPORT_FILES,
                 .by_classes = 1};
    for (int i = 0; i < CLI_REPORT_FILES; i++)
        s->outputs[i] = p_report_files[i];
    if (reference) /* FP32 from eval's logits: the file is one more input */
        s->inputs[s->n_inputs++] = reference;
    arg(s, "validate");
    opt_as(s, "--reference", reference, KEY_INPUT);
    opt_as(s, "--model", model, KEY_INPUT), opt_as(s, "--plan", p_plan, KEY_INPUT);
    opt_as(s, "--data", data, KEY_INPUT), opt_as(s, "--report", p_report, KEY_IN_DIR);
    opt_as(s, "--labels", labels, KEY_CONTENTS), opt_as(s, "--classes", classes, KEY_CONTENTS);
    opt(s, "--output", output);
    opt_as(s, "--calib", p_calib, KEY_INPUT), opt(s, "--device", rs.device), opt(s, "--math", rs.math);
    opt_unkeyed(s, "--threads", threads, 0);
    /* with --reference FP32 runs on the first batch only, whose size the report records */
    opt_unkeyed(s, "--batch", batch, gpu || reference);
    opt_as(s, "--preprocess", pre, KEY_PREPROCESS), opt_as(s, "--sensitivity", p_sens, KEY_INPUT);
    opt_as(s, "--trace", budget ? p_trace : NULL, KEY_INPUT);
    data_opts(s, opts, n_opts, inputs, n_inputs, named, 1, to.val, 1);
    /* the ranges on the plan's grid where the format holds it: ranges.json FP8 with --core fp8, and ort/ and
     * ranges.json onnxruntime's uint8 ranges with --target ort-cpu; a TensorRT cache holds INT8 only */
    struct {
        const char *fmt, *path, *grid;
    } ex[] = {{"trt", p_cache, "int8"}, {"ort", p_ort, rs.ort_grid}, {"json", p_ranges, rs.json_grid}};
    for (int i = 0; i < 3; i++) {
        s = &st[n_st++];
        *s = (stage){.name = ex[i].fmt, .cmd = cmd_export, .inputs = {model, p_calib}, .n_inputs = 2,
                     .outputs = {ex[i].path}, .n_outputs = 1};
        if (ex[i].path == p_ort) /* a folder: done when its every file is there */
            for (s->n_outputs = 0; s->n_outputs < CLI_ORT_FILES; s->n_outputs++)
                s->outputs[s->n_outputs] = p_ort_files[s->n_outputs];
        arg(s, "export");
        arg_as(s, p_calib, KEY_INPUT);
        opt_as(s, "--model", model, KEY_INPUT), opt(s, "--method", rs.method), opt(s, "--format", ex[i].fmt);
        opt(s, "--target", ex[i].grid), opt_as(s, "--out", ex[i].path, KEY_IN_DIR), arg(s, "--quiet");
    }
    s = &st[n_st++];
    *s = (stage){.name = "qdq", .cmd = cmd_export, .inputs = {model, p_plan}, .n_inputs = 2, .outputs = {p_qdq},
                 .n_outputs = 1, .side_output = p_qdq_data};
    arg(s, "export");
    opt(s, "--format", "qdq"), opt_as(s, "--plan", p_plan, KEY_INPUT), opt_as(s, "--model", model, KEY_INPUT);
    opt_as(s, "--out", p_qdq, KEY_IN_DIR);

    /* --json: what the stages print goes to stderr, stdout keeps the summary (rank 0's: the others' is discarded);
       from here every way out passes the end, which puts stdout back and prints the summary */
    const int as_json = cli_get(opts, n_opts, "json") != NULL, move_stdout = as_json && cli_is_writer();
    int json_fd = -1;
    fflush(stdout);
    if (move_stdout && ((json_fd = dup(STDOUT_FILENO)) < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)) {
        fprintf(stderr, "ptq run: error: cannot move the stages' output to stderr for --json: %s\n", strerror(errno));
        if (json_fd >= 0)
            close(json_fd); /* stdout was not moved */
        json_fd = -1;
        rc = 1;
    }
    struct stat dst;
    int created = 0, lock_fd = -1;
    if (rc == 0 && cli_is_writer()) { /* rank 0 writes */
        created = mkdir(dir, 0777) == 0;
        if (!created && errno != EEXIST) {
            fprintf(stderr, "ptq run: error: cannot create folder %s: %s\n", dir, strerror(errno));
            rc = EXIT_IO;
        } else if (stat(dir, &dst) != 0 || !S_ISDIR(dst.st_mode)) {
            fprintf(stderr, "ptq run: error: --out %s is not a folder\n", dir);
            rc = EXIT_IO;
        } else if ((rc = dir_lock(dir, &lock_fd)) == 0 && lock_fd >= 0) {
            remove_stale_tmps(all_out, n_out);
        }
    }
    if ((rc = cli_rank0_rc(rc)) == 0 && (rc = dir_shared(dir)) != 0 && created)
        rmdir(dir); /* made for this run, still empty */
    if (rc == 0 && created)
        ptq_atomic_track_dir(dir); /* a signal before the first stage wrote anything removes it again */

    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    cJSON *manifest = NULL;
    pre_memo memo = {"", ""};
    char *old_text = NULL;
    if (rc == 0 && cli_is_writer() && !cli_get(opts, n_opts, "force") &&
        cli_read_text(&ctx, p_manifest, &old_text) == PTQ_OK)
        manifest = cJSON_Parse(old_text);
    free(old_text);
    if (!manifest || !cJSON_IsObject(manifest)) {
        cJSON_Delete(manifest);
        manifest = cJSON_CreateObject();
    }
    cJSON_DeleteItemFromObjectCaseSensitive(manifest, "format");
    cJSON_AddStringToObject(manifest, "format", "ptq-run");
    cJSON *written = cJSON_GetObjectItemCaseSensitive(manifest, "outputs"); /* {stage: outputs_digest} */
    if (!cJSON_IsObject(written)) {
        cJSON_DeleteItemFromObjectCaseSensitive(manifest, "outputs");
        written = cJSON_AddObjectToObject(manifest, "outputs");
    }
    int budget_missed = 0, collapsed = 0;
    const char *status[9]; /* each stage's, for --json */
    for (int i = 0; i < n_st; i++)
        status[i] = "not run";
    for (int i = 0; i < n_st && rc == 0; i++) {
        s = &st[i];
        char key[65] = "";
        int up_to_date = 0; /* rank 0 decides, for every rank */
        if (cli_is_writer()) {
            ptq_status kst = stage_key(&ctx, s, dir_len, &memo, key);
            const cJSON *done_key = cJSON_GetObjectItemCaseSensitive(manifest, s->name);
            rc = kst != PTQ_OK ? cli_report("run", &ctx, kst) : 0;
            const char *which = NULL;
            const int same_key = kst == PTQ_OK && cJSON_IsString(done_key) && strcmp(done_key->valuestring, key) == 0;
            const int state = same_key ? outputs_state(&ctx, s, dir_len,
                                                       cJSON_GetObjectItemCaseSensitive(written, s->name), &which)
                                       : OUTPUTS_MISSING;
            up_to_date = same_key && state == OUTPUTS_SAME;
            if (state == OUTPUTS_CHANGED)
                fprintf(stderr,
                        "ptq run: note: %s is not the file the %s stage wrote (its SHA-256 differs from the one in "
                        "%s: damaged or edited): running the stage again\n",
                        which, s->name, p_manifest);
        }
        if ((rc = cli_rank0_rc(rc)) != 0)
            break;
        if (cli_rank0_rc(up_to_date)) {
            printf("== %s: up to date, skipped\n", s->name);
            status[i] = "skipped";
            if (strcmp(s->name, "plan") == 0)
                budget_missed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(manifest, "plan_budget_missed"));
            if (strcmp(s->name, "validate") == 0)
                collapsed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(manifest, "validate_collapsed"));
            continue;
        }
        printf("== %s\n", s->name);
        fflush(stdout);
        cJSON_DeleteItemFromObjectCaseSensitive(manifest, s->name);
        cJSON_DeleteItemFromObjectCaseSensitive(written, s->name);
        if (s->side_output && cli_is_writer()) /* an earlier run's, beside the model this one may write inline */
            unlink(s->side_output);
        for (int j = 0; j < s->n_unkeyed; j++)
            arg(s, s->unkeyed[j]);
        int cmd_argc = 0;
        char **cmd_argv = stage_command(s, &cmd_argc);
        const int spread = s->cmd == cmd_calibrate || s->cmd == cmd_sensitivity || s->cmd == cmd_validate;
        if (!cmd_argv) {
            fprintf(stderr, "ptq run: error: out of memory for the %s stage's arguments\n", s->name);
            rc = EXIT_NOMEM;
        } else {
            rc = spread ? s->cmd(cmd_argc - 1, cmd_argv + 1) : cli_on_rank0(s->cmd, cmd_argc - 1, cmd_argv + 1);
        }
        free(cmd_argv);
        fflush(stdout);
        if (rc == EXIT_BUDGET && strcmp(s->name, "plan") == 0) { /* the best plan was written: go on */
            budget_missed = 1;
            rc = 0;
        }
        if (rc == EXIT_COLLAPSED && strcmp(s->name, "validate") == 0) { /* the report was written: go on */
            collapsed = 1;
            rc = 0;
        }
        cJSON *digest = NULL;
        if (rc == 0 && cli_is_writer()) {
            ptq_status dst_ = outputs_digest(&ctx, s, dir_len, &digest);
            rc = dst_ != PTQ_OK ? cli_report("run", &ctx, dst_) : 0;
        }
        status[i] = rc == 0 ? "ran" : "failed";
        if (rc == 0) {
            cJSON_AddStringToObject(manifest, s->name, key);
            if (digest)
                cJSON_AddItemToObject(written, s->name, digest);
        }
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
    if (rc == 0 && strcmp(rs.json_grid, "int8") != 0 && cli_is_writer()) /* README: ptq run, --core and --target */
        fprintf(stderr, "ptq run: note: %s INT8 ranges, the only ones %s; %s plan.json and model_qdq.onnx follow "
                        "the %s%s plan\n",
                strcmp(rs.ort_grid, "int8") == 0 ? "calib.cache (TensorRT) and ort/ (ONNX Runtime) hold"
                                                 : "calib.cache (TensorRT) holds symmetric",
                strcmp(rs.ort_grid, "int8") == 0 ? "those formats take" : "its format takes",
                strcmp(rs.ort_grid, "int8") == 0 ? "ranges.json," : "ort/, ranges.json,",
                strcmp(rs.json_grid, "ort-cpu") == 0 ? "--target " : "", rs.json_grid);
    if (rc == 0 && collapsed)
        rc = EXIT_COLLAPSED; /* before a missed budget: no accuracy figure of this run means anything */
    else if (rc == 0 && budget_missed)
        rc = EXIT_BUDGET;
    rc = cli_rank0_rc(rc);
    if (move_stdout) {
        fflush(stdout);
        if (json_fd >= 0) {
            dup2(json_fd, STDOUT_FILENO);
            close(json_fd);
        }
        print_summary(dir, dir_len, st, n_st, status, p_manifest, p_report_files[0], rc, budget_missed, collapsed);
    }
    if (created)
        ptq_atomic_forget_dir(dir);
    if (lock_fd >= 0)
        close(lock_fd); /* the lock goes with it */
    return rc;
}
