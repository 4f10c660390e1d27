/* The commands' view of a library session (include/ptq/runner.h): the
 * device flag parsed, the session's notes printed (once for an MPI job,
 * tests/mpi_test.py), and --profile's table. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* "NAME=DATASET" (--input) into m, split at the first '='; names[] holds NAME. */
static ptq_status parse_input_map(ptq_ctx *ctx, const char *arg, ptq_input_map *m, char *name, size_t n_name)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1] || (size_t)(eq - arg) >= n_name)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "--input wants NAME=DATASET (a model input and an HDF5 dataset), got '%s'",
                        arg);
    memcpy(name, arg, (size_t)(eq - arg));
    name[eq - arg] = '\0';
    m->input = name;
    m->dataset = eq + 1;
    return PTQ_OK;
}

/* The library's session options and the --input map they point into. */
typedef struct session_args {
    ptq_session_opts po;
    ptq_input_map map[CLI_MAX_REPEAT];
    char names[CLI_MAX_REPEAT][256];
} session_args;

/* o into a: --input NAME=DATASET, --device and --math (what reads no file), then, with files, the files and
 * how to read them. */
static ptq_status session_args_parse(ptq_ctx *ctx, const cli_session_opts *o, session_args *a, int files)
{
    ptq_session_opts *po = &a->po;
    memset(po, 0, sizeof *po);
    for (int i = 0; i < o->n_inputs && i < CLI_MAX_REPEAT; i++)
        PTQ_TRY_RET(parse_input_map(ctx, o->inputs[i], &a->map[i], a->names[i], 256));
    po->inputs = a->map;
    po->n_inputs = o->n_inputs < CLI_MAX_REPEAT ? o->n_inputs : CLI_MAX_REPEAT;
    PTQ_TRY_RET(ptq_device_parse(ctx, o->device, &po->device, &po->cuda_device));
    PTQ_TRY_RET(ptq_math_parse(ctx, o->math, &po->math));
    if (!files)
        return PTQ_OK;
    po->model = o->model;
    po->data = o->data;
    po->preprocess = o->preprocess;
    po->dataset.images_key = o->images_key;
    po->dataset.labels_key = o->labels_key;
    po->dataset.layout = o->layout;
    po->dataset.allow_external_data = o->allow_external_data;
    po->dataset.labels_file = o->labels_file;
    po->dataset.classes_file = o->classes_file;
    po->output = o->output;
    return PTQ_OK;
}

ptq_status cli_session_opts_check(ptq_ctx *ctx, const cli_session_opts *o)
{
    session_args a;
    return session_args_parse(ctx, o, &a, 0);
}

ptq_status cli_session_check_data(ptq_ctx *ctx, const cli_session_opts *o, int labelled, int *named)
{
    session_args a;
    if (named)
        *named = 0;
    PTQ_TRY_RET(session_args_parse(ctx, o, &a, 1));
    a.po.device = PTQ_DEVICE_CPU; /* the device is the stages' to open (a missing GPU is their note or exit 8) */
    ptq_session *ps = NULL;
    ptq_status st = ptq_session_open(ctx, &a.po, &ps);
    if (st == PTQ_OK && labelled && !ptq_dataset_has_labels(ptq_session_dataset(ps)))
        st = ptq_fail(ctx, PTQ_ERR_DATA, "%s has no labels; sensitivity and validation compare predictions with them",
                      o->data);
    int logits = -1;
    if (st == PTQ_OK && labelled) /* several [N, classes] outputs and no --output: the stages' exit 5 */
        st = ptq_session_logits_output(ctx, ps, &logits);
    if (st == PTQ_OK && named)
        *named = ptq_session_named_inputs(ps);
    ptq_session_close(ps);
    return st;
}

/* The length of the note at line (without its '\n'); *next: where the following one starts. */
static int line_len(const char *line, const char **next)
{
    const char *end = strchr(line, '\n');
    const int len = end ? (int)(end - line) : (int)strlen(line);
    *next = line + len + (end != NULL);
    return len;
}

/* Which line of notes line[len] is (0 the first), or -1 when none is. */
static int line_index(const char *notes, const char *line, int len)
{
    int i = 0;
    for (const char *at = notes, *next; *at; at = next, i++) {
        if (line_len(at, &next) == len && memcmp(at, line, (size_t)len) == 0)
            return i;
    }
    return -1;
}

/* "ptq CMD: note: LINE" on stderr, the rank named when rank >= 0; a line the session starts with "warning: " is
 * printed as one ("ptq CMD: warning: ..."), not as "note: warning: ...". */
static void print_note(const char *cmd, int rank, const char *line, int len)
{
    const int warning = len >= 9 && strncmp(line, "warning: ", 9) == 0;
    const char *kind = warning ? "warning" : "note";
    if (warning) {
        line += 9;
        len -= 9;
    }
    if (rank >= 0)
        fprintf(stderr, "ptq %s: %s: rank %d of %d: %.*s\n", cmd, kind, rank, ptq_dist_size(), len, line);
    else
        fprintf(stderr, "ptq %s: %s: %.*s\n", cmd, kind, len, line);
}

void cli_session_notes_agree(const char *cmd, const cli_session *s)
{
    enum { NOTES_BYTES = 4096, NOTES_LINES = 64 }; /* more than a session holds (runtime/session.c) */
    if (!cli_ranks_split())
        return;
    const int rank = ptq_dist_rank();
    const char *mine = s->ps ? ptq_session_notes(s->ps) : "";
    char zero[NOTES_BYTES] = ""; /* rank 0's notes */
    int64_t shared[NOTES_LINES]; /* whether rank 0's line i is every other rank's too: a MIN over the ranks */
    if (rank == 0)
        snprintf(zero, sizeof zero, "%s", mine);
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = ptq_dist_bcast(&ctx, zero, sizeof zero, 0);
    zero[sizeof zero - 1] = '\0';
    int n = 0;
    for (const char *at = zero, *next; *at && n < NOTES_LINES; at = next, n++) {
        const int len = line_len(at, &next);
        shared[n] = !s->ps || line_index(mine, at, len) >= 0;
    }
    for (int i = n; i < NOTES_LINES; i++)
        shared[i] = 0;
    const ptq_status rst = ptq_dist_allreduce_i64(&ctx, shared, NOTES_LINES, PTQ_DIST_MIN); /* on every rank */
    for (const char *at = mine, *next; *at; at = next) {
        const int len = line_len(at, &next);
        const int i = line_index(zero, at, len);
        if (st != PTQ_OK || rst != PTQ_OK || i < 0 || i >= n || !shared[i]) /* this rank's own (or unknown) */
            print_note(cmd, rank, at, len);
        else if (rank == 0) /* every rank's: once */
            print_note(cmd, -1, at, len);
    }
}

ptq_status cli_session_open(ptq_ctx *ctx, const char *cmd, const cli_session_opts *o, cli_session *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->cmd, sizeof s->cmd, "%s", cmd);
    session_args a;
    PTQ_TRY_RET(session_args_parse(ctx, o, &a, 1));
    a.po.cpu_fallback = 1;
    a.po.profile = o->profile;
    cli_hash_ahead(o->model, NULL); /* for the reports (and a plan's check), while the session opens */
    PTQ_TRY_RET(ptq_session_open(ctx, &a.po, &s->ps));
    for (const char *line = ptq_session_notes(s->ps), *next; *line && !cli_ranks_split(); line = next) {
        const int len = line_len(line, &next); /* split over ranks: cli_session_notes_agree prints them */
        print_note(cmd, -1, line, len);
    }
    s->graph = ptq_session_graph(s->ps);
    if (strcmp(cmd, "eval") != 0 && strcmp(cmd, "smooth") != 0) /* calibrate, plan, sensitivity, validate */
        PTQ_TRY_RET(ptq_graph_check_unquantized(ctx, s->graph, cmd)); /* the caller closes s */
    s->exec = ptq_session_exec(s->ps);
    s->data = ptq_session_dataset(s->ps);
    s->pre = *ptq_session_preprocess(s->ps);
    ptq_session_data_spec(s->ps, s->data_spec, sizeof s->data_spec);
    ptq_session_input_shape(s->ps, &s->channels, &s->height, &s->width);
    s->n_samples = ptq_session_n_samples(s->ps);
    cli_hash_ahead(NULL, s->data); /* for the reports, while the command works */
    cli_mark("opening the model, data and device");
    return PTQ_OK;
}

ptq_status cli_session_open_labelled(ptq_ctx *ctx, const char *cmd, const cli_session_opts *o, const char *why,
                                     cli_session *s)
{
    PTQ_TRY_RET(cli_session_open(ctx, cmd, o, s));
    if (!ptq_dataset_has_labels(s->data))
        return ptq_fail(ctx, PTQ_ERR_DATA, "%s has no labels; %s", o->data, why);
    return ptq_session_shapes(ctx, s->ps);
}

/* An image folder's conversions, counted over the images the command read (a folder can mix gray, colour, alpha
 * and 16-bit PNGs, so the first image speaks for none of the rest). Split over ranks, each read its share: the
 * counts are summed over the job (a collective every rank makes, with or without a data set) and rank 0 prints
 * them, as one process would. */
static void folder_notes(const cli_session *s)
{
    int64_t by[6] = {0}, n_read = 0; /* by[c]: images of c channels read (1 to 4); by[5]: 16-bit PNGs */
    if (s->data)
        ptq_dataset_read_kinds(s->data, by, &by[5]);
    if (cli_ranks_split()) {
        ptq_ctx ctx;
        ptq_ctx_init(&ctx);
        if (ptq_dist_allreduce_i64(&ctx, by, 6, PTQ_DIST_SUM) != PTQ_OK || ptq_dist_rank() != 0)
            return;
    }
    if (!s->data)
        return;
    for (int c = 1; c <= 4; c++)
        n_read += by[c];
    const int64_t n_16bit = by[5];
    const int m = s->pre.n_channels;
    char line[512];
    for (int c = 1; c <= 4; c++) {
        const char *what = NULL;
        if (!by[c] || c == m || (c == 4 && m == 3) || (c == 2 && m == 1))
            continue;
        if (m == 3)
            what = c == 1 ? "gray: the gray value replicated to R, G and B"
                          : "gray+alpha: the gray value replicated to R, G and B, alpha dropped";
        else if (m == 4)
            what = c == 1   ? "gray: the gray value replicated to R, G and B, alpha opaque"
                   : c == 2 ? "gray+alpha: the gray value replicated to R, G and B, alpha kept"
                            : "RGB: alpha opaque";
        else
            what = c == 4 ? "RGBA: gray by ITU-R 601 luma (0.299 R + 0.587 G + 0.114 B, after any resize and not "
                            "rounded), alpha dropped"
                          : "RGB: gray by ITU-R 601 luma (0.299 R + 0.587 G + 0.114 B, after any resize and not "
                            "rounded)";
        const int len = snprintf(line, sizeof line, "%lld of the %lld images read %s %s, into the model's %d "
                                 "channel%s", (long long)by[c], (long long)n_read, by[c] == 1 ? "was" : "were", what,
                                 m, m == 1 ? "" : "s");
        print_note(s->cmd, -1, line, len < (int)sizeof line ? len : (int)sizeof line - 1);
    }
    if (n_16bit) {
        const int len = snprintf(line, sizeof line, "%lld of the %lld images read %s 16-bit PNGs: each sample v "
                                 "read as v / 257 on the 8-bit scale (PIL clips 16-bit gray at 255; see the README)",
                                 (long long)n_16bit, (long long)n_read, n_16bit == 1 ? "was" : "were");
        print_note(s->cmd, -1, line, len < (int)sizeof line ? len : (int)sizeof line - 1);
    }
}

void cli_session_close(cli_session *s)
{
    if (s->data || cli_ranks_split())
        folder_notes(s);
    cli_hash_forget(NULL); /* before the data set goes; a later stage of `ptq run` may rewrite a file */
    ptq_session_close(s->ps);
    memset(s, 0, sizeof *s);
}

void cli_progress_cb(void *user, int64_t done, int64_t total)
{
    (void)total;
    cli_progress_update(user, done);
}

static char *profile_table(const cli_session *s)
{
    const ptq_graph *g = s->graph;
    const char **ops = calloc((size_t)g->n_nodes + 1, sizeof *ops);
    double *secs = calloc((size_t)g->n_nodes + 1, sizeof *secs);
    double *obs = calloc((size_t)g->n_nodes + 1, sizeof *obs);
    int *count = calloc((size_t)g->n_nodes + 1, sizeof *count);
    char *out = malloc((size_t)g->n_nodes * 96 + 320);
    int n_ops = 0;
    double total = 0;
    if (!ops || !secs || !obs || !count || !out) {
        free(out);
        out = NULL;
        goto done;
    }
    for (int k = 0; k < g->n_nodes; k++) {
        int j = 0;
        while (j < n_ops && strcmp(ops[j], g->nodes[k].op_type) != 0)
            j++;
        if (j == n_ops)
            ops[n_ops++] = g->nodes[k].op_type;
        secs[j] += ptq_exec_node_seconds(s->exec, k);
        obs[j] += ptq_exec_node_tap_seconds(s->exec, k);
        count[j]++;
        total += ptq_exec_node_seconds(s->exec, k);
    }
    const double round_s = ptq_exec_round_seconds(s->exec), tap_s = ptq_exec_tap_seconds(s->exec);
    total += round_s + tap_s;
    const int observed = tap_s >= 5e-5; /* a column of the observers' time on each op type's outputs */
    size_t used = (size_t)sprintf(out, "%-20s %6s %10s %7s%s\n", "op", "nodes", "ms", "share",
                                  observed ? "   observers ms" : "");
    for (int r = 0; r < n_ops; r++) {
        int best = r;
        for (int j = r + 1; j < n_ops; j++)
            if (secs[j] > secs[best])
                best = j;
        const char *o = ops[best];
        double t = secs[best], ob = obs[best];
        int c = count[best];
        ops[best] = ops[r], secs[best] = secs[r], obs[best] = obs[r], count[best] = count[r];
        ops[r] = o, secs[r] = t, obs[r] = ob, count[r] = c;
        used += (size_t)sprintf(out + used, "%-20.20s %6d %10.1f %6.1f%%", o, c, 1e3 * t,
                                total > 0 ? 100 * t / total : 0.0);
        used += (size_t)(observed ? sprintf(out + used, " %15.1f\n", 1e3 * ob) : sprintf(out + used, "\n"));
    }
    const char *extra_name[2] = {"(plan rounding)", "(observers)"};
    const double extra_s[2] = {round_s, tap_s};
    for (int i = 0; i < 2; i++)
        if (extra_s[i] >= 5e-5) /* none below the table's 0.1 ms */
            used += (size_t)sprintf(out + used, "%-20s %6s %10.1f %6.1f%%\n", extra_name[i], "", 1e3 * extra_s[i],
                                    total > 0 ? 100 * extra_s[i] / total : 0.0);
    sprintf(out + used, "%-20s %6d %10.1f\n", "total", g->n_nodes, 1e3 * total);
done:
    free(ops);
    free(secs);
    free(obs);
    free(count);
    return out;
}

void cli_profile_print(const cli_session *s, int64_t n_images, double loop_s)
{
    char *table = profile_table(s);
    if (!table)
        return;
    if (loop_s >= 0)
        fprintf(stderr, "time per op type, %lld images on %s (loop total %.1f ms):\n%s", (long long)n_images,
                ptq_exec_device_name(s->exec), 1e3 * loop_s, table);
    else
        fprintf(stderr, "time per op type, %lld images twice (FP32, plan) on %s:\n%s", (long long)n_images,
                ptq_exec_device_name(s->exec), table);
    free(table);
    int64_t passes = 0;
    const int64_t rows = ptq_exec_pass_rows(s->exec, &passes);
    const int threads = ptq_exec_pass_threads(s->exec);
    double whole_s = 0, side_s = 0;
    const int pick = ptq_exec_pass_choice(s->exec, &whole_s, &side_s);
    if (passes > 0) /* ptq_graph_rows_independent */
        fprintf(stderr, "batches longer than %lld samples ran in passes of that many%s (%lld passes), each pass's "
                "values in the caches%s\n", (long long)rows, threads > 1 ? " or fewer" : "", (long long)passes,
                threads > 1 ? "; side by side on the threads, each op's time above summed over them" : "");
    if (pick && whole_s > 0) /* timed on the first batches */
        fprintf(stderr, "passes side by side: %.1f us a sample, whole batches %.1f: %s kept\n", 1e6 * side_s,
                1e6 * whole_s, pick == 2 ? "passes" : "whole batches");
    else if (pick == 2)
        fprintf(stderr, "passes side by side from the first batch (two threads: no trial of whole batches)\n");
    cli_marks_print();
}

cli_session_opts cli_session_opts_from(const cli_opt *opts, int n_opts)
{
    cli_session_opts o = {cli_get(opts, n_opts, "model"),      cli_get(opts, n_opts, "data"),
                          cli_get(opts, n_opts, "device"),     cli_get(opts, n_opts, "preprocess"),
                          cli_get(opts, n_opts, "images-key"), cli_get(opts, n_opts, "labels-key"),
                          cli_get(opts, n_opts, "layout"),     0,
                          cli_get(opts, n_opts, "allow-external-data") != NULL, cli_get(opts, n_opts, "math"),
                          cli_get(opts, n_opts, "labels"),     cli_get(opts, n_opts, "classes"),
                          cli_get(opts, n_opts, "output"),     {NULL},
                          0};
    o.n_inputs = cli_get(opts, n_opts, "input") ? cli_get_all("input", o.inputs) : 0;
    return o;
}
