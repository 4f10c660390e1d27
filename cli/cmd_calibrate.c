/* `ptq calibrate`: runs the calibration set through the model once with
 * observers on every tensor a plan may quantize and writes the calibration
 * archive (calib.h5). Covered by tests/cli_calib_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ptq/calib.h"
#include "ptq/hash.h"
#include "ptq/observer.h"

static const char calibrate_help[] =
    "usage: ptq calibrate --model M.onnx --data D --out calib.h5 [options]\n"
    "\n"
    "Runs the images of D through the model once, with exact observers (min,\n"
    "max, counts of zeros/NaN/Inf, a mergeable |x| histogram) on every tensor\n"
    "a plan may quantize, and writes them with their provenance to an HDF5\n"
    "calibration archive. `ptq export` turns the archive into ranges with any\n"
    "method; `ptq merge` adds archives of disjoint shards exactly. On one device\n"
    "the archive is the same bytes whatever the batch size, threads or sharding\n"
    "(devices round activations differently: cpu, ref and cuda archives differ).\n"
    "\n"
    "  --model FILE         ONNX model or Keras .h5 (one float32 image input, or inputs fed by --input)\n"
    "  --data PATH          HDF5 file or PNG or JPEG folder root/<class>/*.{png,jpg,jpeg} (labels not needed)\n"
    "  --out FILE           the archive to write (written whole or not at all)\n"
    "  --samples N          observe N samples picked at random (by --seed) from D (default: all)\n"
    "  --seed S             seed of that pick (default 0; only with --samples)\n"
    "  --shard I/N          observe only shard I (0-based) of N equal, contiguous shares of the\n"
    "                       picked samples; merging the N archives gives the whole one\n"
    "  --ops LIST           observe only tensors produced or consumed by these op types, e.g. Conv,Gemm\n"
    "                       (case-sensitive; an op type neither ptq nor the model has is refused)\n"
    "  --tensors LIST       observe only tensors whose name matches one of these glob patterns\n"
    "                       (default: float inputs of Conv/Gemm/MatMul and every activation)\n"
    "  --bins N             histogram bins, a power of two in [2048, 16777216] (default 4096)\n"
    "  --device DEV         cpu (default), cuda (= gpu: GPU 0), cuda:N (GPU N), or ref (plain reference\n"
    "                       kernels); the CPU with a notice when there is no GPU\n"
    "  --math M             GPU convolutions and matrix products in fp32 (default, exact), tf32 (tensor\n"
    "                       cores), or fp64 (FP32 tensors, products summed in double as --device ref does;\n"
    "                       slower); recorded in the output. The CPU computes fp32\n"
    "  --batch N            images per batch (default 256, or the largest power of two below it that\n"
    "                       fits the memory limit); results do not depend on it\n"
    "  --threads N          CPU threads (default: every CPU the process may run on)\n"
    "  --preprocess SPEC    override the model's ptq.preprocess metadata (see `ptq eval --help`)\n"
    CLI_DATA_HELP
    "                       (labels are not needed, but --labels and --labels-key are checked when given;\n"
    "                       --output is refused: calibration reads no logits, it observes every output)\n"
    "  --json               print the summary as JSON on stdout\n"
    "  --progress           force the progress line (default: only on a terminal)\n"
    "  --profile            print the time per op type and in the observers on stderr, with the observers'\n"
    "                       time on each op type's outputs (waits for the GPU after each node and each\n"
    "                       tensor's observer, which slows the run), then the command's timeline\n"
    "\n"
    "Under mpirun or srun (MPI builds) the ranks share the work and rank 0 writes the same\n"
    "outputs one process would (README \"Running across GPUs\").\n";


static void print_summary(const ptq_calib_set *set, const cli_session *s, const char *out, const char *data,
                          int64_t n_ids, double secs, double steady_rate, int as_json)
{
    ptq_calib_provenance pv;
    ptq_calib_set_provenance(set, &pv);
    const int64_t n = ptq_calib_set_n_tensors(set);
    if (as_json) {
        cli_json *o = cli_json_header("calibrate", NULL);
        cli_json_str(o, "archive", out);
        cli_json_str(o, "device", ptq_exec_device_name(s->exec));
        cli_json_str(o, "math", pv.math);
        cli_json_num(o, "samples", (double)n_ids);
        cli_json_num(o, "tensors", (double)n);
        cli_json_num(o, "seconds", secs);
        cli_json_num(o, "images_per_s", secs > 0 ? (double)n_ids / secs : 0.0);
        if (steady_rate > 0) /* after the first batch */
            cli_json_num(o, "images_per_s_steady", steady_rate);
        if (cli_peak_rss_mib() > 0)
            cli_json_num(o, "peak_rss_mib", cli_peak_rss_mib());
        cli_json_str(o, "model_sha256", pv.model_sha256);
        cli_json_str(o, "sample_ids_sha256", pv.sample_ids_sha256);
        char *text = cli_json_done(o);
        if (text)
            printf("%s\n", text);
        free(text);
        return;
    }
    printf("archive  %s\ndata     %s (%lld samples, ids sha256 %.16s...)\ndevice   %s  (%.0f img/s)\n"
           "tensors  %lld observed, %lld bins each\n\n",
           cli_shown(out), cli_shown(data), (long long)n_ids, pv.sample_ids_sha256, ptq_exec_device_name(s->exec),
           secs > 0 ? (double)n_ids / secs : 0.0, (long long)n, (long long)pv.n_bins);
    printf("  %-36s %12s %12s %12s %8s %8s\n", "tensor", "values", "min", "max", "zeros", "nan/inf");
    for (int64_t i = 0; i < n; i++) {
        ptq_observer_stats st;
        char esc[1024]; /* a name from the model, control characters escaped */
        ptq_observer_get_stats(ptq_calib_set_observer(set, i), &st);
        printf("  %s %12lld %12.5g %12.5g %7.2f%% %8lld\n", cli_padded(ptq_calib_set_name(set, i), 36, esc, sizeof esc),
               (long long)st.count,
               (double)st.min, (double)st.max, st.count ? 100.0 * (double)st.n_zero / (double)st.count : 0.0,
               (long long)(st.n_nan + st.n_inf));
    }
}

int cmd_calibrate(int argc, char **argv)
{
    cli_opt opts[] = {{"model", 1, NULL},  {"data", 1, NULL},       {"out", 1, NULL},        {"samples", 1, NULL},
                      {"seed", 1, NULL},   {"shard", 1, NULL},      {"ops", 1, NULL},        {"tensors", 1, NULL},
                      {"bins", 1, NULL},   {"device", 1, NULL}, {"math", 1, NULL},     {"batch", 1, NULL},      {"threads", 1, NULL},
                      {"preprocess", 1, NULL}, {"json", 0, NULL},   {"progress", 0, NULL},   {"help", 0, NULL},
                      {"profile", 0, NULL},    CLI_DATA_OPTS};
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    const char *pos[1];
    int n_pos = 0, rc = cli_parse("calibrate", argc, argv, opts, n_opts, pos, &n_pos, 0);
    if (rc)
        return rc;
    if (cli_get(opts, n_opts, "help")) {
        fputs(calibrate_help, stdout);
        return 0;
    }
    static const char *const logits_only[] = {"output", NULL};
    if ((rc = cli_refuse_unused("calibrate", opts, n_opts, logits_only, CLI_OUTPUT_UNUSED)))
        return rc;
    const char *out = cli_get(opts, n_opts, "out");
    if (!cli_get(opts, n_opts, "model") || !cli_get(opts, n_opts, "data") || !out)
        return cli_usage_error("calibrate", "--model, --data and --out are required");
    const char *calib_inputs[] = {cli_get(opts, n_opts, "model"), cli_get(opts, n_opts, "data")};
    if ((rc = cli_rank0_rc(cli_is_writer() ? cli_check_outputs("calibrate", calib_inputs, 2, &out, 1) : 0)))
        return rc;
    int64_t batch, n_samples, seed, threads, bins, shard = 0, n_shards = 1;
    if ((rc = cli_get_int("calibrate", opts, n_opts, "batch", 256, 1, &batch)) ||
        (rc = cli_get_int("calibrate", opts, n_opts, "samples", 0, 1, &n_samples)) ||
        (rc = cli_get_int("calibrate", opts, n_opts, "seed", 0, 0, &seed)) ||
        (rc = cli_get_int("calibrate", opts, n_opts, "threads", 0, 1, &threads)))
        return rc;
    if (cli_get(opts, n_opts, "seed") && !cli_get(opts, n_opts, "samples"))
        return cli_usage_error("calibrate", "--seed picks the --samples N observed; without --samples every sample "
                               "is observed and it would do nothing");
    /* one message for every bad --bins, 0 and 12abc as 3000: the rule, not cli_get_int's [1, 2^63 - 1] */
    const char *bins_arg = cli_get(opts, n_opts, "bins");
    const size_t bins_digits = bins_arg ? strspn(bins_arg, "0123456789") : 0;
    bins = bins_arg && bins_digits > 0 && bins_digits < 10 && !bins_arg[bins_digits] ? strtoll(bins_arg, NULL, 10) : 0;
    if (bins_arg && (bins < PTQ_OBSERVER_MIN_BINS || bins > PTQ_OBSERVER_MAX_BINS || (bins & (bins - 1)) != 0))
        return cli_usage_error("calibrate", "--bins wants a power of two in [%d, %d] (the histograms' bin count), "
                               "got '%s'", PTQ_OBSERVER_MIN_BINS, PTQ_OBSERVER_MAX_BINS, bins_arg);
    const char *shard_arg = cli_get(opts, n_opts, "shard");
    if (shard_arg) {
        long long a, b;
        char tail;
        const size_t n_i = strspn(shard_arg, "0123456789"); /* digits: sscanf would also take " 0/2" and "+0/+2" */
        if (n_i == 0 || shard_arg[n_i] != '/' || !isdigit((unsigned char)shard_arg[n_i + 1]) ||
            sscanf(shard_arg, "%lld/%lld%c", &a, &b, &tail) != 2 || b < 1 || b > PTQ_MAX_SHARDS || a < 0 || a >= b)
            return cli_usage_error("calibrate", "--shard wants I/N with 0 <= I < N <= %lld, got '%s'",
                                   (long long)PTQ_MAX_SHARDS, shard_arg);
        shard = a;
        n_shards = b;
    }
    if (threads > 0)
        ptq_cpu_set_threads((int)threads);

    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = PTQ_OK;
    ptq_calib_set *set = NULL;
    int64_t *ids = NULL, *all_ids = NULL, n_ids = 0, n_picked = 0;
    cli_progress prog;
    double t0 = 0;
    struct ptq_runner_steady steady = {0, 0.0}; /* after the first batch */
    char sha[65], tmp[PTQ_TMP_NAME_BYTES] = "";
    cli_rank_read reads[2] = {{NULL, ""}, {NULL, ""}}; /* what the ranks compare: the model and the data's size */
    cli_session s;
    memset(&s, 0, sizeof s);
    const char *model = cli_get(opts, n_opts, "model");
    ptq_calib_select sel = {cli_get(opts, n_opts, "ops"), cli_get(opts, n_opts, "tensors")};

    cli_session_opts so = cli_session_opts_from(opts, n_opts);
    so.profile = cli_get(opts, n_opts, "profile") != NULL;
    /* the archive's temporary exists (and the folder is known writable) before the long part */
    if (cli_is_writer())
        PTQ_TRY(st, ptq_atomic_create(&ctx, out, tmp, sizeof tmp, NULL), ready);
    PTQ_TRY(st, cli_session_open(&ctx, "calibrate", &so, &s), ready);
    PTQ_TRY(st, cli_rank_read_file(&ctx, model, 1, &reads[0]), ready);
    cli_rank_read_count(so.data, s.n_samples, &reads[1]);
    /* the selection (which needs every tensor's dtype) is checked before any data is read */
    PTQ_TRY(st, ptq_session_shapes(&ctx, s.ps), ready);
    PTQ_TRY(st, ptq_calib_set_create(&ctx, s.graph, &sel, bins, &set), ready);
    PTQ_TRY(st, ptq_calib_set_math(&ctx, set, ptq_math_name(ptq_exec_math(s.exec))), ready);
    if (n_samples > s.n_samples && cli_is_writer())
        fprintf(stderr, "ptq calibrate: note: --samples %lld, but %s holds %lld: observing all of them\n",
                (long long)n_samples, cli_get(opts, n_opts, "data"), (long long)s.n_samples);
    if (n_samples == 0 || n_samples > s.n_samples)
        n_samples = s.n_samples;
    ptq_pick pick = {0, n_samples, (uint64_t)seed, shard, n_shards};
    PTQ_TRY(st, ptq_pick_samples(&ctx, s.n_samples, &pick, &ids, &n_ids), ready);
    if (n_ids == 0) {
        st = ptq_fail(&ctx, PTQ_ERR_DATA, "shard %lld/%lld of %lld samples is empty", (long long)shard,
                      (long long)n_shards, (long long)n_samples);
        goto ready;
    }
    if (cli_is_writer()) { /* the archive records the whole pick (its source after the run); each rank observes its share */
        if (!(all_ids = malloc((size_t)n_ids * sizeof *all_ids))) {
            st = ptq_fail(&ctx, PTQ_ERR_NOMEM, "out of memory for %lld sample ids", (long long)n_ids);
            goto ready;
        }
        memcpy(all_ids, ids, (size_t)n_ids * sizeof *all_ids);
    }
    n_picked = n_ids;
    PTQ_TRY(st, cli_rank_ids(&ctx, &ids, &n_ids, 0), ready);
ready: /* every rank passes here once, and learns whether any failed or read another model or data set */
    cli_session_notes_agree("calibrate", &s);
    PTQ_TRY(st, cli_ranks_agree_read(&ctx, st, reads, 2), done);

    char stage[64];
    cli_progress_start(&prog, cli_rank_stage("calibrate", stage, sizeof stage), "img", n_ids,
                       cli_get(opts, n_opts, "progress") != NULL);
    batch = cli_default_batch("calibrate", s.ps, batch, n_ids, cli_get(opts, n_opts, "batch") != NULL, 0);
    ptq_runner_params rp = {.session = s.ps, .ids = ids, .n_ids = n_ids, .batch = batch, .prefetch = 1,
                            .progress = cli_progress_cb, .progress_user = &prog, .steady = &steady};
    rp.consumers[rp.n_consumers++] = ptq_calib_set_consumer(set);
    t0 = cli_now_s();
    PTQ_TRY(st, ptq_runner_run(&ctx, &rp), run_done);
    cli_progress_end(&prog, n_ids);
    st = cli_rank_read_data(&ctx, so.data, s.data, &reads[1]); /* hashed while the images ran */
run_done: /* every rank passes here once, and learns whether any failed or observed other data */
    PTQ_TRY(st, cli_ranks_agree_read(&ctx, st, &reads[1], 1), done);
    PTQ_TRY(st, ptq_calib_set_allreduce(&ctx, set), done);
    PTQ_TRY(st, ptq_dist_agree(&ctx, st), done);
    double secs = cli_now_s() - t0;
    int64_t bad = ptq_calib_set_first_nonfinite(set);
    if (bad >= 0) { /* the same on every rank, the set being the whole one */
        ptq_observer_stats os;
        ptq_observer_get_stats(ptq_calib_set_observer(set, bad), &os);
        st = ptq_fail(&ctx, PTQ_ERR_DATA,
                      "tensor '%s' holds no finite value (%lld NaN, %lld Inf of %lld): it cannot be calibrated; "
                      "no archive written",
                      ptq_calib_set_name(set, bad), (long long)os.n_nan, (long long)os.n_inf, (long long)os.count);
        goto done;
    }
    if (cli_is_writer()) {
        /* the model's and the data's SHA-256, hashed on worker threads while the images ran (cli/hash_ahead.c) */
        const char *base = strrchr(model, '/');
        char data_sha[65]; /* the source by content, so merge knows it under any path */
        st = cli_model_sha256(&ctx, model, sha);
        if (st == PTQ_OK)
            st = ptq_calib_set_describe(&ctx, set, sha, base ? base + 1 : model, s.data_spec);
        if (st == PTQ_OK)
            st = cli_dataset_sha256(&ctx, s.data, data_sha);
        if (st == PTQ_OK)
            st = ptq_calib_set_add_source(&ctx, set, so.data, data_sha, all_ids, n_picked);
        if (st == PTQ_OK)
            st = ptq_calib_set_write(&ctx, set, tmp);
        if (st == PTQ_OK)
            st = ptq_atomic_commit(&ctx, tmp, out);
    }
    PTQ_TRY(st, ptq_dist_agree(&ctx, st), done);
    const double steady_rate = steady.seconds > 0 ? (double)steady.samples / steady.seconds : 0.0;
    print_summary(set, &s, out, so.data, n_picked, secs, steady_rate, cli_get(opts, n_opts, "json") != NULL);
    if (so.profile && cli_is_writer())
        cli_profile_print(&s, n_ids, secs);
done:
    if (st != PTQ_OK)
        ptq_atomic_blame_output(&ctx, tmp, out); /* the archive is written to tmp by name */
    ptq_atomic_discard(tmp);
    cli_session_close(&s);
    ptq_calib_set_free(set);
    free(ids);
    free(all_ids);
    return cli_report("calibrate", &ctx, st);
}
