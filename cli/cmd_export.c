/* `ptq export`: ranges from a calibration archive by any calibrator,
 * written as a TensorRT calibration cache, ONNX Runtime's TensorRT-EP
 * tables or ptq's JSON, without running the model again. Covered by
 * tests/cli_calib_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ptq/calib.h"
#include "ptq/calibrator.h"
#include "ptq/export.h"
#include "ptq/hash.h"
#include "ptq/plan.h"
#include "ptq/qdq.h"

static const char export_help[] =
    "usage: ptq export calib.h5 --method M --format F --out PATH [options]\n"
    "       ptq export --format qdq --plan plan.json --model M.onnx --out M_qdq.onnx\n"
    "\n"
    "Turns the observers of a calibration archive (`ptq calibrate`) into one\n"
    "range (amax) per tensor and writes them for another runtime.\n"
    "\n"
    "  --method M           minmax: amax = max|x|\n"
    "                       entropy: TensorRT's KL-divergence search (as NVIDIA's ModelOpt does it)\n"
    "                       percentile[=P]: the P-th percentile of |x| (default 99.99)\n"
    "                       mse: the amax with the least quantize-dequantize squared error\n"
    "  --format F           trt: TensorRT INT8 calibration cache (one file; TensorRT <= 10)\n"
    "                       ort: ONNX Runtime TensorRT-EP tables: PATH is a folder that gets\n"
    "                            calibration.flatbuffers, calibration.json and calibration.cache\n"
    "                       json: ptq's ranges: amax, scale, method, target, clipped fraction\n"
    "                       qdq: the model with the plan as QuantizeLinear/DequantizeLinear\n"
    "                            (activations per tensor, weights per output channel, FP16\n"
    "                            tensors as Casts to float16 and back; opset 13, or 19 for FP8)\n"
    "  --plan FILE          qdq: the precision plan (from `ptq plan`)\n"
    "  --opset N            qdq: the opset to write (default: the lowest that fits, 13, or 19\n"
    "                       for FP8); one that cannot express the plan exits 5\n"
    "  --out PATH           file (trt, json) or folder (ort); written whole or not at all\n"
    "  --target T           int8 (default), fp8-e4m3 or fp8-e5m2: the grid entropy and mse\n"
    "                       search over and the scale's divisor (127, 448, 57344); TensorRT\n"
    "                       caches and ORT's flatbuffers/cache tables are INT8 only; ort-cpu:\n"
    "                       the int8 search, then the observed [min, max] clipped to [-amax, amax]\n"
    "                       (what `ptq plan --target ort-cpu` uses) as calibration.json's and the\n"
    "                       json's lowest/highest, from which quantize_static derives the same uint8\n"
    "                       scale and zero point (not with --format trt)\n"
    "  --model FILE         check that the archive was made from this model (SHA-256)\n"
    "  --trt-version V      TensorRT version in the cache header: 10.3.0 (default, written\n"
    "                       100300), 8.6.1 (8601), or the number itself\n"
    "  --trt-algorithm A    cache header algorithm (default EntropyCalibration2, which\n"
    "                       trtexec --calib expects; MinMaxCalibration for that calibrator)\n"
    "  --json               print the ranges as JSON on stdout instead of the table\n"
    "  --quiet              print nothing but warnings and errors\n";

static ptq_status parse_trt_version(ptq_ctx *ctx, const char *s, int *out)
{
    int major, minor, patch;
    char tail;
    if (!isdigit((unsigned char)s[0]) || s[strspn(s, "0123456789.")] != '\0') /* sscanf, strtol: " 10", "+10" too */
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "--trt-version wants MAJOR.MINOR.PATCH or a number, got '%s'", s);
    /* field widths keep sscanf and the version number inside int */
    if (sscanf(s, "%4d.%2d.%2d%c", &major, &minor, &patch, &tail) == 3 && major > 0 && minor >= 0 && minor < 100 &&
        patch >= 0 && patch < 100) {
        *out = ptq_trt_cache_version(major, minor, patch);
        return PTQ_OK;
    }
    long v;
    char *end = NULL;
    errno = 0;
    v = strtol(s, &end, 10);
    if (!errno && end && !*end && end != s && v > 0 && v < 100000000) {
        *out = (int)v;
        return PTQ_OK;
    }
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "--trt-version wants MAJOR.MINOR.PATCH or a number, got '%s'", s);
}

/* Writes buf to a temporary file next to path; the temporary's name into tmp. */
static ptq_status write_tmp(ptq_ctx *ctx, const char *path, const ptq_buf *b, char *tmp, size_t n_tmp)
{
    FILE *f = NULL;
    PTQ_TRY_RET(cli_tmp_open(ctx, path, tmp, n_tmp, &f));
    int bad = fwrite(b->data, 1, b->n_bytes, f) != b->n_bytes;
    bad |= fclose(f) != 0;
    if (bad)
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    return PTQ_OK;
}

enum { MAX_OUT_FILES = 3 };

/* What --format ort writes into its folder. */
const char *const cli_ort_names[CLI_ORT_FILES] = {"calibration.flatbuffers", "calibration.json", "calibration.cache"};

typedef struct out_file {
    char path[4096], tmp[PTQ_TMP_NAME_BYTES];
    ptq_buf buf;
} out_file;

/* Every file complete before any takes its name; on failure none is left, and the files the names held before
 * are put back (ptq_atomic_commit_all). */
static ptq_status commit_all(ptq_ctx *ctx, out_file *f, int n)
{
    ptq_status st = PTQ_OK;
    for (int i = 0; i < n && st == PTQ_OK; i++)
        st = write_tmp(ctx, f[i].path, &f[i].buf, f[i].tmp, sizeof f[i].tmp);
    char *tmps[MAX_OUT_FILES];
    const char *paths[MAX_OUT_FILES];
    for (int i = 0; i < n; i++)
        tmps[i] = f[i].tmp, paths[i] = f[i].path;
    if (st == PTQ_OK)
        st = ptq_atomic_commit_all(ctx, tmps, paths, n);
    for (int i = 0; i < n; i++)
        ptq_atomic_discard(f[i].tmp);
    return st;
}

static void print_ranges(const ptq_tensor_range *r, int64_t n, const char *method, const char *target)
{
    printf("method %s, target %s, %lld tensors\n\n  %-40s %12s %14s %9s\n", method, target, (long long)n, "tensor",
           "amax", "scale", "clipped");
    char esc[1024]; /* a name from the archive, control characters escaped */
    for (int64_t i = 0; i < n; i++)
        printf("  %s %12.6g %14.6g %8.4f%%%s\n", cli_padded(r[i].name, 40, esc, sizeof esc), r[i].r.amax,
               r[i].r.scale, 100.0 * r[i].r.clipped_fraction, r[i].r.degenerate ? "  (all zeros)" : "");
}

/* --format qdq: the plan read and checked against the model, then the Q/DQ model written. */
static int export_qdq(const char *plan_path, const char *model, int64_t opset, const char *out, int quiet)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = PTQ_OK;
    ptq_graph *g = NULL;
    ptq_plan *plan = NULL;
    st = cli_load_plan(&ctx, plan_path, model, &g, &plan);
    if (st != PTQ_OK) {
        char why[PTQ_MSG_BYTES];
        snprintf(why, sizeof why, "%s", ctx.msg);
        ptq_fail(&ctx, st, "%s; nothing written", why);
        goto done;
    }
    st = ptq_export_qdq(&ctx, model, g, plan, opset, out);
    if (st != PTQ_OK) {
        char why[PTQ_MSG_BYTES];
        snprintf(why, sizeof why, "%s", ctx.msg);
        ptq_fail(&ctx, st, "%s; nothing written", why);
        goto done;
    }
    if (!quiet)
        printf("wrote %s (%lld planned tensors, core %s)\n", cli_shown(out), (long long)plan->n,
               ptq_prec_name(plan->core));
done:
    ptq_plan_free(plan);
    ptq_graph_free(g);
    return cli_report("export", &ctx, st);
}

int cmd_export(int argc, char **argv)
{
    cli_opt opts[] = {{"method", 1, NULL}, {"format", 1, NULL},      {"out", 1, NULL}, {"plan", 1, NULL}, {"opset", 1, NULL},
                      {"target", 1, NULL}, {"model", 1, NULL},       {"trt-version", 1, NULL},
                      {"trt-algorithm", 1, NULL}, {"json", 0, NULL}, {"quiet", 0, NULL},
                      {"help", 0, NULL}};
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    const char *pos[1];
    int n_pos = 0, rc = cli_parse("export", argc, argv, opts, n_opts, pos, &n_pos, 1);
    if (rc)
        return rc;
    if (cli_get(opts, n_opts, "help")) {
        fputs(export_help, stdout);
        return 0;
    }
    const char *format = cli_get(opts, n_opts, "format"), *out = cli_get(opts, n_opts, "out");
    const char *method_arg = cli_get(opts, n_opts, "method");
    /* a flag the format does not use is refused, not ignored */
    static const char *const ranges_only[] = {"method", "target", "json", NULL}, *const qdq_only[] = {"plan", "opset",
                                                                                                     NULL};
    static const char *const trt_only[] = {"trt-version", "trt-algorithm", NULL};
    if (format && strcmp(format, "qdq") == 0) {
        if ((rc = cli_refuse_unused("export", opts, n_opts, ranges_only, "used only with --format trt, ort or json "
                                    "(a Q/DQ model takes its ranges and precisions from --plan)")) ||
            (rc = cli_refuse_unused("export", opts, n_opts, trt_only, "used only with --format trt")))
            return rc;
        if (n_pos != 0 || !out || !cli_get(opts, n_opts, "plan") || !cli_get(opts, n_opts, "model"))
            return cli_usage_error("export", "--format qdq takes --plan, --model and --out (no archive)");
        int64_t opset;
        const char *qdq_inputs[] = {cli_get(opts, n_opts, "plan"), cli_get(opts, n_opts, "model")};
        char data_out[4200]; /* the "<out>.data" a large model's weights go to: checked whether or not written */
        snprintf(data_out, sizeof data_out, "%s.data", out);
        const char *qdq_outputs[] = {out, data_out};
        if ((rc = cli_get_int("export", opts, n_opts, "opset", 0, 1, &opset)) ||
            (rc = cli_check_outputs("export", qdq_inputs, 2, qdq_outputs, 2)) ||
            (rc = cli_output_dir_ok("export", out)))
            return rc;
        return export_qdq(cli_get(opts, n_opts, "plan"), cli_get(opts, n_opts, "model"), opset, out,
                          cli_get(opts, n_opts, "quiet") != NULL);
    }
    if (n_pos != 1 || !format || !out || !method_arg)
        return cli_usage_error("export", "an archive, --method, --format and --out are required");
    const int fmt_trt = strcmp(format, "trt") == 0, fmt_ort = strcmp(format, "ort") == 0,
              fmt_json = strcmp(format, "json") == 0;
    if (!fmt_trt && !fmt_ort && !fmt_json)
        return cli_usage_error("export", "--format must be trt, ort, json or qdq, got '%s'", format);
    if (cli_get(opts, n_opts, "json") && cli_get(opts, n_opts, "quiet")) /* one of them would be ignored */
        return cli_usage_error("export", "--json prints the ranges and --quiet prints nothing: give one of them");
    if ((rc = cli_refuse_unused("export", opts, n_opts, qdq_only, "used only with --format qdq")) ||
        (!fmt_trt && (rc = cli_refuse_unused("export", opts, n_opts, trt_only, "used only with --format trt"))))
        return rc;
    char ort_paths[3][4096], ort_dir[4000];
    if (fmt_ort) { /* a folder ptq makes: "ort/" names the same one as "ort" (the check below wants its parent) */
        size_t n = strlen(out);
        while (n > 1 && out[n - 1] == '/')
            n--;
        if (n >= sizeof ort_dir)
            return cli_usage_error("export", "--out %.100s... is too long", out);
        snprintf(ort_dir, sizeof ort_dir, "%.*s", (int)n, out);
        out = ort_dir;
    }
    const char *outputs[3] = {out, NULL, NULL}, *inputs[] = {pos[0], cli_get(opts, n_opts, "model")};
    for (int k = 0; fmt_ort && k < 3; k++) {
        snprintf(ort_paths[k], sizeof ort_paths[k], "%s/%s", out, cli_ort_names[k]);
        outputs[k] = ort_paths[k];
    }
    if ((rc = cli_check_outputs("export", inputs, 2, outputs, 3)) || (rc = cli_output_dir_ok("export", out)))
        return rc;

    int tables = 0; /* 1 while the exporters run: their messages are about the archive's ranges, named at done */
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = PTQ_OK;
    ptq_calib_set *set = NULL;
    ptq_tensor_range *ranges = NULL;
    unsigned char *unseen = NULL; /* [n]: 1 for a tensor the archive holds no values of */
    out_file files[MAX_OUT_FILES];
    int n_files = 0, made_dir = 0;
    memset(files, 0, sizeof files);
    ptq_calib_params cp = {PTQ_CALIB_MINMAX, PTQ_QFORMAT_INT8, 0.0};
    ptq_trt_cache_params tp = {0, cli_get(opts, n_opts, "trt-algorithm")};
    PTQ_TRY(st, ptq_calib_spec_parse(&ctx, method_arg, &cp.method, &cp.percentile), done);
    const char *target = cli_get(opts, n_opts, "target");
    const int asymmetric = target && strcmp(target, "ort-cpu") == 0;
    if (asymmetric && fmt_trt) {
        st = ptq_fail(&ctx, PTQ_ERR_INVALID_ARG, "--target ort-cpu: a TensorRT cache holds symmetric ranges only");
        goto done;
    }
    if (target && !asymmetric)
        PTQ_TRY(st, ptq_qformat_parse(&ctx, target, &cp.format), done);
    if (cli_get(opts, n_opts, "trt-version"))
        PTQ_TRY(st, parse_trt_version(&ctx, cli_get(opts, n_opts, "trt-version"), &tp.version), done);

    PTQ_TRY(st, ptq_calib_set_read(&ctx, pos[0], &set), done);
    ptq_calib_provenance pv;
    ptq_calib_set_provenance(set, &pv);
    const char *model = cli_get(opts, n_opts, "model");
    if (model) {
        char sha[65];
        PTQ_TRY(st, cli_model_sha256(&ctx, model, sha), done);
        if (strcmp(sha, pv.model_sha256) != 0) {
            st = ptq_fail(&ctx, PTQ_ERR_INVALID_ARG,
                          "%s was calibrated on another model: its SHA-256 is %.16s..., %s's is %.16s...; nothing "
                          "written",
                          pos[0], pv.model_sha256, model, sha);
            goto done;
        }
    }
    const int64_t n = ptq_calib_set_n_tensors(set);
    ranges = calloc((size_t)n + 1, sizeof *ranges);
    if (!ranges) {
        st = ptq_fail(&ctx, PTQ_ERR_NOMEM, "out of memory");
        goto done;
    }
    ptq_calib_range *computed = calloc((size_t)n + 1, sizeof *computed);
    unseen = calloc((size_t)n + 1, 1);
    if (!computed || !unseen) {
        free(computed);
        st = ptq_fail(&ctx, PTQ_ERR_NOMEM, "out of memory");
        goto done;
    }
    /* a tensor the archive holds no values of (always empty: a Split's part of size 0, a Slice of none) has no
     * range and needs none: degenerate, left out of the tables as all-zero ones are; any other failure stands */
    int64_t bad = -1, n_unseen = 0;
    st = ptq_calib_set_ranges_empty(&ctx, set, NULL, &cp, computed, unseen, &bad);
    for (int64_t i = 0; i < n; i++)
        n_unseen += unseen[i];
    for (int64_t i = 0; i < n; i++) {
        ptq_tensor_range *r = &ranges[i];
        r->name = ptq_calib_set_name(set, i);
        r->r = computed[i];
        r->method = cp.method;
        r->format = cp.format;
        r->percentile = cp.percentile > 0 ? cp.percentile : PTQ_CALIB_DEFAULT_PERCENTILE;
        r->asymmetric = asymmetric;
        if (asymmetric)
            ptq_calib_clip_range(ptq_calib_set_observer(set, i), computed[i].amax, &r->lowest, &r->highest);
    }
    free(computed);
    if (st != PTQ_OK && bad >= 0) {
        char why[PTQ_MSG_BYTES];
        snprintf(why, sizeof why, "%s", ctx.msg);
        ptq_fail(&ctx, st, "%s: %s; nothing written", pos[0], why); /* the message names the tensor */
    }
    if (st != PTQ_OK)
        goto done;
    ptq_export_stats es = {0};
    tables = 1;
    if (fmt_ort) {
        for (int k = 0; k < 3; k++)
            memcpy(files[k].path, ort_paths[k], sizeof files[k].path);
        PTQ_TRY(st, ptq_export_ort_flatbuffers(&ctx, ranges, n, &files[0].buf, &es), done);
        PTQ_TRY(st, ptq_export_ort_json(&ctx, ranges, n, &files[1].buf, NULL), done);
        PTQ_TRY(st, ptq_export_ort_cache(&ctx, ranges, n, &files[2].buf, NULL), done);
        n_files = 3;
        tables = 0;
        /* the folder only once the tables are made, and gone again if they cannot be written */
        struct stat sb;
        if (mkdir(out, 0777) == 0) {
            made_dir = 1;
            ptq_atomic_track_dir(out); /* a signal before the tables are in removes it again */
        } else if (errno != EEXIST || stat(out, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            st = ptq_fail(&ctx, PTQ_ERR_IO, "cannot create folder %s: %s", out,
                          errno == EEXIST ? "it exists and is not a folder" : strerror(errno));
            goto done;
        }
    } else {
        snprintf(files[0].path, sizeof files[0].path, "%s", out);
        if (fmt_trt) {
            PTQ_TRY(st, ptq_export_trt_cache(&ctx, &tp, ranges, n, &files[0].buf, &es), done);
        } else {
            ptq_export_json_meta meta = {model ? model : pv.model_name, pv.model_sha256, pos[0]};
            PTQ_TRY(st, ptq_export_json(&ctx, &meta, ranges, n, &files[0].buf, &es), done);
        }
        n_files = 1;
    }
    tables = 0;
    PTQ_TRY(st, commit_all(&ctx, files, n_files), done);
    char esc[1024]; /* names from the archive in the warnings, control characters escaped */
    if (fmt_trt && es.n_colon_names > 0) /* the EP cuts a TensorRT cache's lines; the other files keep keys whole */
        for (int64_t i = 0; i < n; i++)
            if (ptq_export_name_warns(ranges[i].name))
                fprintf(stderr, "ptq export: warning: tensor '%s' has ':' in its name; ONNX Runtime's TensorRT-EP "
                                "cache parser cuts names at the first ':'\n",
                        ptq_escape(ranges[i].name, esc, sizeof esc));
    if (es.n_no_positive > 0)
        for (int64_t i = 0; i < n; i++)
            if (ptq_export_range_no_positive(&ranges[i]))
                fprintf(stderr, "ptq export: warning: tensor '%s' has no positive values (its ort-cpu range is "
                                "[%.9g, 0]): the TensorRT EP would read an amax of 0, so it was left out of "
                                "calibration.flatbuffers and calibration.cache (calibration.json keeps it)\n",
                        ptq_escape(ranges[i].name, esc, sizeof esc), (double)ranges[i].lowest);
    if (es.n_tiny > 0)
        for (int64_t i = 0; i < n; i++)
            if (ptq_export_range_tiny(&ranges[i]))
                fprintf(stderr, "ptq export: warning: tensor '%s': %s %.9g gives no normal float32 INT8 scale (|x| "
                                "below about 1.5e-36), which TensorRT cannot take: left out of %s, as all-zero "
                                "tensors are (ptq plan keeps it FP32)\n",
                        ptq_escape(ranges[i].name, esc, sizeof esc), ranges[i].asymmetric ? "highest" : "amax",
                        ranges[i].asymmetric ? (double)ranges[i].highest : ranges[i].r.amax,
                        fmt_trt ? "the TensorRT cache" : "calibration.flatbuffers and calibration.cache "
                                                         "(calibration.json keeps it)");
    for (int64_t i = 0; i < n; i++)
        if (!ranges[i].r.degenerate && ranges[i].r.zero_fraction > PTQ_CALIB_ZERO_WARN)
            fprintf(stderr, "ptq export: warning: tensor '%s': amax %g rounds %.1f%% of the nonzero values the archive "
                            "saw to 0: the range sits far above the bulk of the tensor (an outlier?)\n",
                    ptq_escape(ranges[i].name, esc, sizeof esc), ranges[i].r.amax, 100.0 * ranges[i].r.zero_fraction);
    if (es.n_degenerate - n_unseen > 0 && !fmt_json)
        fprintf(stderr, "ptq export: warning: %lld tensors saw only zeros and were left out of the INT8 tables\n",
                (long long)(es.n_degenerate - n_unseen));
    for (int64_t i = 0; n_unseen > 0 && i < n; i++) {
        if (unseen[i])
            fprintf(stderr, "ptq export: warning: tensor '%s': the archive holds no values of it (a tensor always "
                            "empty, such as a Split's part of size 0): %s\n",
                    ptq_escape(ranges[i].name, esc, sizeof esc),
                    fmt_json ? "written with amax 0, degenerate" : "left out of the tables, as it needs no range");
    }
    if (cli_get(opts, n_opts, "json")) {
        ptq_buf jb = {0};
        ptq_export_json_meta meta = {model ? model : pv.model_name, pv.model_sha256, pos[0]};
        PTQ_TRY(st, ptq_export_json(&ctx, &meta, ranges, n, &jb, NULL), done);
        fputs(jb.data, stdout);
        ptq_buf_free(&jb);
    } else if (!cli_get(opts, n_opts, "quiet")) {
        print_ranges(ranges, n, method_arg, ptq_qformat_name(cp.format));
        printf("\nwrote %s\n", cli_shown(out));
    }
done:
    if (st != PTQ_OK && tables) {
        char why[PTQ_MSG_BYTES];
        snprintf(why, sizeof why, "%s", ctx.msg);
        ptq_fail(&ctx, st, "%s: %s; nothing written", pos[0], why);
    }
    if (made_dir)
        ptq_atomic_forget_dir(out);
    if (st != PTQ_OK && made_dir)
        rmdir(out);
    for (int k = 0; k < MAX_OUT_FILES; k++)
        ptq_buf_free(&files[k].buf);
    free(ranges);
    free(unseen);
    ptq_calib_set_free(set);
    return cli_report("export", &ctx, st);
}
