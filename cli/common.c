/* The ptq command's shared plumbing: exit codes, error lines, option
 * parsing and progress. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ptq/dataset.h"
#include "ptq/fileio.h"
#include "ptq/hash.h"
#include "ptq/memory.h"

int cli_exit_code(ptq_status st)
{
    switch (st) {
    case PTQ_OK: return EXIT_OK_;
    case PTQ_ERR_INVALID_ARG: return EXIT_USAGE;
    case PTQ_ERR_IO: return EXIT_IO;
    case PTQ_ERR_FORMAT: return EXIT_FORMAT;
    case PTQ_ERR_UNSUPPORTED: return EXIT_UNSUPPORTED;
    case PTQ_ERR_SHAPE: return EXIT_SHAPE;
    case PTQ_ERR_DATA: return EXIT_DATA;
    case PTQ_ERR_NO_DEVICE: return EXIT_NO_DEVICE;
    case PTQ_ERR_CUDA: return EXIT_CUDA;
    case PTQ_ERR_NOMEM: return EXIT_NOMEM;
    case PTQ_ERR_INTERNAL: return EXIT_INTERNAL;
    }
    return EXIT_INTERNAL;
}

int cli_report(const char *cmd, const ptq_ctx *ctx, ptq_status st)
{
    if (st == PTQ_OK)
        return 0;
    if (!cli_is_writer()) /* the job's one message comes from rank 0 */
        return cli_exit_code(st);
    char msg[4 * PTQ_MSG_BYTES]; /* names from files are printed escaped */
    ptq_escape(ctx->msg[0] ? ctx->msg : ptq_status_name(st), msg, sizeof msg);
    fprintf(stderr, "ptq %s: error: %s\n", cmd, msg);
    if (getenv("PTQ_DEBUG") && ctx->where[0])
        fprintf(stderr, "ptq %s: (raised at %s, status %s)\n", cmd, ctx->where, ptq_status_name(st));
    return cli_exit_code(st);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    if (!cli_is_writer())
        return EXIT_USAGE;
    fprintf(stderr, "ptq %s: error: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see `ptq %s --help`)\n", cmd);
    return EXIT_USAGE;
}

ptq_status cli_tmp_open(ptq_ctx *ctx, const char *path, char *tmp, size_t n_tmp, FILE **f)
{
    return ptq_atomic_fopen(ctx, path, tmp, n_tmp, f);
}

ptq_status cli_tmp_close(ptq_ctx *ctx, FILE **f, char *tmp, const char *path)
{
    int bad = fclose(*f) != 0;
    int e = errno;
    *f = NULL;
    if (bad) {
        ptq_atomic_discard(tmp);
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", path, strerror(e));
    }
    return PTQ_OK;
}

ptq_status cli_tmp_commit(ptq_ctx *ctx, FILE **f, const char *tmp, const char *path)
{
    char name[PTQ_TMP_NAME_BYTES];
    snprintf(name, sizeof name, "%s", tmp);
    ptq_status st = cli_tmp_close(ctx, f, name, path);
    return st == PTQ_OK ? ptq_atomic_commit(ctx, name, path) : st;
}

ptq_status cli_write_text(ptq_ctx *ctx, const char *path, const char *text)
{
    size_t n = strlen(text);
    char *buf = malloc(n + 2);
    if (!buf)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory writing %s", path);
    memcpy(buf, text, n);
    buf[n] = '\n';
    ptq_status st = ptq_atomic_write(ctx, path, buf, n + 1);
    free(buf);
    return st;
}

/* The data options the last cli_parse saw: the files a data set reads are
 * inputs of the command too (cli_check_outputs). */
static struct {
    const char *model, *data, *labels, *classes;
    int allow_external_data;
} parsed_data;

void cli_data_inputs_set(const char *data, const char *labels, const char *classes, int allow_external_data)
{
    parsed_data.data = data;
    parsed_data.labels = labels;
    parsed_data.classes = classes;
    parsed_data.allow_external_data = allow_external_data;
}

/* realpath of the nearest existing folder above path (a name that may not
 * exist yet, its folders neither), malloc'd; NULL when none resolves. */
static char *existing_folder_of(const char *path)
{
    char *dir = strdup(path), *real = NULL;
    while (dir && !real) {
        char *slash = strrchr(dir, '/');
        if (!slash) {
            real = realpath(".", NULL);
            break;
        }
        *slash = '\0';
        while (slash > dir && slash[-1] == '/') /* "a//b" */
            *--slash = '\0';
        real = realpath(slash == dir ? "/" : dir, NULL);
    }
    free(dir);
    return real;
}

/* 1 when output would be written inside the folder root (in it or any folder
 * below): in an image folder, it would replace one of its images or become one. */
static int in_folder(const char *root, const char *output)
{
    char *real_root = realpath(root, NULL), *dir = existing_folder_of(output);
    size_t n = real_root ? strlen(real_root) : 0;
    int in = real_root && dir && strncmp(dir, real_root, n) == 0 &&
             (dir[n] == '\0' || dir[n] == '/' || (n == 1 && real_root[0] == '/'));
    free(real_root);
    free(dir);
    return in;
}

/* The data set's files among the inputs (cli_check_outputs): an output in an
 * image folder --data, or one that is its --labels or --classes file or a
 * file an HDF5 set with --allow-external-data reads. 0, or an exit code. */
static int check_data_outputs(const char *cmd, const char *const *outputs, int n_outputs)
{
    struct stat sb;
    const char *data = parsed_data.data;
    const char *lists[] = {parsed_data.labels, parsed_data.classes};
    char **files = NULL;
    int n_files = 0, rc = 0;
    const int folder = data && stat(data, &sb) == 0 && S_ISDIR(sb.st_mode);
    if (data && !folder && parsed_data.allow_external_data) {
        ptq_ctx ctx;
        ptq_ctx_init(&ctx);
        ptq_status st = ptq_dataset_external_files(&ctx, data, &files, &n_files);
        if (st != PTQ_OK)
            return cli_report(cmd, &ctx, st);
    }
    for (int j = 0; j < n_outputs && !rc; j++) {
        if (!outputs[j])
            continue;
        if (folder && in_folder(data, outputs[j])) {
            if (cli_is_writer())
                fprintf(stderr, "ptq %s: error: output %s is in the input image folder %s, whose images it would "
                        "replace or join; refusing to write it there\n", cmd, outputs[j], data);
            rc = EXIT_USAGE;
        }
        for (int i = 0; i < 2 && !rc; i++)
            if (lists[i] && ptq_file_same(lists[i], outputs[j])) {
                if (cli_is_writer())
                    fprintf(stderr, "ptq %s: error: output %s is the input %s (--%s); refusing to overwrite it\n",
                            cmd, outputs[j], lists[i], i ? "classes" : "labels");
                rc = EXIT_USAGE;
            }
        for (int i = 0; i < n_files && !rc; i++)
            if (ptq_file_same(files[i], outputs[j])) {
                if (cli_is_writer())
                    fprintf(stderr, "ptq %s: error: output %s is the input %s, which the data set %s reads; "
                            "refusing to overwrite it\n", cmd, outputs[j], files[i], data);
                rc = EXIT_USAGE;
            }
    }
    ptq_dataset_files_free(files, n_files);
    return rc;
}

/* An output that would replace a file the --model's ONNX external data is read from (its weights), or that is one
 * (a symlink or a hard link to it), which an inode check of the model file alone misses. Such files resolve inside
 * the model's folder (the loader refuses others), so the model is looked at only when an output is there, leads
 * there or has other links. 0, or an exit code. */
static int check_model_outputs(const char *cmd, const char *const *outputs, int n_outputs)
{
    const char *model = parsed_data.model;
    char *dir = model ? strdup(model) : NULL, *slash = dir ? strrchr(dir, '/') : NULL;
    int there = 0, rc = 0;
    if (slash)
        slash[slash == dir] = '\0'; /* "/m.onnx": "/" */
    const char *root = slash ? dir : ".";
    for (int j = 0; j < n_outputs && dir && !there; j++) {
        struct stat sb;
        char *real = outputs[j] ? realpath(outputs[j], NULL) : NULL;
        there = outputs[j] && (in_folder(root, outputs[j]) || (real && in_folder(root, real)) ||
                               (stat(outputs[j], &sb) == 0 && sb.st_nlink > 1));
        free(real);
    }
    free(dir);
    ptq_onnx_edit *e = NULL;
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    if (!there || cli_model_external_files(&ctx, model, &e) != PTQ_OK || !e)
        return 0; /* a model that cannot be read fails where it is loaded, with its message */
    int n_files = 0;
    const char *const *files = ptq_onnx_edit_external_files(e, &n_files);
    for (int j = 0; j < n_outputs && !rc; j++)
        for (int i = 0; i < n_files && !rc; i++)
            if (outputs[j] && ptq_file_same(files[i], outputs[j])) {
                if (cli_is_writer())
                    fprintf(stderr, "ptq %s: error: output %s is %s, the external data being read for the model %s; "
                            "refusing to overwrite it\n", cmd, outputs[j], files[i], model);
                rc = EXIT_USAGE;
            }
    ptq_onnx_edit_free(e);
    return rc;
}

int cli_check_outputs(const char *cmd, const char *const *inputs, int n_inputs, const char *const *outputs,
                      int n_outputs)
{
    for (int j = 0; j < n_outputs; j++) {
        if (!outputs[j])
            continue;
        ptq_ctx ctx;
        ptq_ctx_init(&ctx);
        if (ptq_file_check_output(&ctx, outputs[j]) != PTQ_OK) /* a device or FIFO: before any work */
            return cli_report(cmd, &ctx, PTQ_ERR_IO);
        for (int i = 0; i < n_inputs; i++)
            if (inputs[i] && ptq_file_same(inputs[i], outputs[j])) {
                if (cli_is_writer())
                    fprintf(stderr, "ptq %s: error: output %s is the input %s; refusing to overwrite it\n", cmd,
                        outputs[j], inputs[i]);
                return EXIT_USAGE;
            }
        for (int k = 0; k < j; k++)
            if (outputs[k] && ptq_file_same(outputs[k], outputs[j])) {
                if (cli_is_writer())
                    fprintf(stderr, "ptq %s: error: outputs %s and %s are the same file\n", cmd, outputs[k], outputs[j]);
                return EXIT_USAGE;
            }
    }
    int rc = check_data_outputs(cmd, outputs, n_outputs);
    if (!rc)
        rc = check_model_outputs(cmd, outputs, n_outputs);
    for (int j = 0; j < n_outputs && !rc; j++) {
        struct stat sb;
        ptq_ctx ctx;
        ptq_ctx_init(&ctx);
        if (!outputs[j] || lstat(outputs[j], &sb) != 0)
            continue;
        /* a folder: the rename after the work fails; a symlink to one: it would replace the user's link */
        const int link = S_ISLNK(sb.st_mode);
        if (S_ISDIR(sb.st_mode) || (link && stat(outputs[j], &sb) == 0 && S_ISDIR(sb.st_mode)))
            rc = cli_report(cmd, &ctx, ptq_fail(&ctx, PTQ_ERR_IO, "cannot write %s: it is %s; name a file",
                                                outputs[j], link ? "a symlink to a folder" : "a folder"));
    }
    return rc;
}

/* The values of the repeatable options the last cli_parse saw (one command
 * parses at a time; `ptq run` reads its own before its stages parse). */
static struct {
    const char *name;
    const char *values[CLI_MAX_REPEAT];
    int n;
} repeats[4];

int cli_get_all(const char *name, const char **values)
{
    for (size_t k = 0; k < sizeof repeats / sizeof repeats[0]; k++)
        if (repeats[k].name && strcmp(repeats[k].name, name) == 0) {
            memcpy(values, repeats[k].values, (size_t)repeats[k].n * sizeof *values);
            return repeats[k].n;
        }
    return 0;
}

/* Adds value to repeatable option o's list; 0, or an exit code. */
static int add_repeat(const char *cmd, const cli_opt *o, const char *value)
{
    for (size_t k = 0; k < sizeof repeats / sizeof repeats[0]; k++) {
        if (repeats[k].name && strcmp(repeats[k].name, o->name) != 0)
            continue;
        if (repeats[k].n == CLI_MAX_REPEAT)
            return cli_usage_error(cmd, "--%s is given more than %d times", o->name, CLI_MAX_REPEAT);
        repeats[k].name = o->name;
        repeats[k].values[repeats[k].n++] = value;
        return 0;
    }
    return cli_usage_error(cmd, "too many repeatable options");
}

/* 1 when a is an option ("--name"), which a value given as the next argument never is: `--batch --limit 5`
 * lacks --batch's value (one that starts with "--" is given as --name=VALUE). */
static int is_option(const char *a)
{
    return strncmp(a, "--", 2) == 0 && a[2] != '\0';
}

/* The value of option `name` (its "--name=" part at eq, or the next argument, taken: *i moves on), or NULL
 * with the problem printed: none, another option in its place, or an empty one. */
static const char *option_value(const char *cmd, const char *name, const char *eq, int argc, char **argv, int *i)
{
    const char *v = eq ? eq + 1 : NULL;
    if (!eq) {
        if (*i + 1 >= argc) {
            cli_usage_error(cmd, "option '--%s' needs a value", name);
            return NULL;
        }
        if (is_option(argv[*i + 1])) {
            cli_usage_error(cmd, "option '--%s' needs a value (got the option '%s'; write --%s=VALUE for a value "
                            "that starts with --)", name, argv[*i + 1], name);
            return NULL;
        }
        v = argv[++*i];
    }
    if (!v[0]) {
        cli_usage_error(cmd, "option '--%s' is empty: it needs a value (a path, number or name)", name);
        return NULL;
    }
    return v;
}

int cli_parse(const char *cmd, int argc, char **argv, cli_opt *opts, int n_opts, const char **pos, int *n_pos,
              int max_pos)
{
    *n_pos = 0;
    memset(repeats, 0, sizeof repeats);
    memset(&parsed_data, 0, sizeof parsed_data);
    int seen_max_memory = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!is_option(a)) {
            if (*n_pos >= max_pos)
                return cli_usage_error(cmd, "unexpected argument '%s'", a);
            pos[(*n_pos)++] = a;
            continue;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        if (len == 10 && strncmp(name, "max-memory", 10) == 0) { /* every command's */
            if (seen_max_memory++)
                return cli_usage_error(cmd, "option '--max-memory' is given twice");
            const char *v = option_value(cmd, "max-memory", eq, argc, argv, &i);
            uint64_t bytes;
            if (!v)
                return EXIT_USAGE;
            if (ptq_memory_parse(v, &bytes) != 0)
                return cli_usage_error(cmd, "--max-memory wants a size such as 512M or 4G, got '%s'", v);
            ptq_memory_set_budget(bytes);
            continue;
        }
        cli_opt *o = NULL;
        for (int k = 0; k < n_opts; k++)
            if (strlen(opts[k].name) == len && strncmp(opts[k].name, name, len) == 0)
                o = &opts[k];
        if (!o)
            return cli_usage_error(cmd, "unknown option '--%.*s'", (int)len, name);
        if (o->value && o->takes_value != CLI_REPEAT) /* the last one would win, silently */
            return cli_usage_error(cmd, "option '--%s' is given twice", o->name);
        if (!o->takes_value) {
            if (eq)
                return cli_usage_error(cmd, "option '--%s' takes no value", o->name);
            o->value = "1";
        } else if (!(o->value = option_value(cmd, o->name, eq, argc, argv, &i))) {
            return EXIT_USAGE;
        }
        if (o->takes_value == CLI_REPEAT && add_repeat(cmd, o, o->value) != 0)
            return EXIT_USAGE;
    }
    parsed_data.model = cli_get(opts, n_opts, "model");
    parsed_data.data = cli_get(opts, n_opts, "data");
    parsed_data.labels = cli_get(opts, n_opts, "labels");
    parsed_data.classes = cli_get(opts, n_opts, "classes");
    parsed_data.allow_external_data = cli_get(opts, n_opts, "allow-external-data") != NULL;
    return 0;
}

int cli_refuse_unused(const char *cmd, const cli_opt *opts, int n_opts, const char *const *names, const char *why)
{
    char given[512] = "";
    size_t used = 0;
    int n = 0;
    for (int i = 0; names[i]; i++)
        if (cli_get(opts, n_opts, names[i]) && used < sizeof given) {
            int k = snprintf(given + used, sizeof given - used, "%s--%s", n++ ? ", " : "", names[i]);
            used += k > 0 ? (size_t)k : 0;
        }
    return n ? cli_usage_error(cmd, "%s %s %s", given, n > 1 ? "are" : "is", why) : 0;
}

int cli_plain_number(const char *v)
{
    return (isdigit((unsigned char)v[0]) || v[0] == '.') && v[strspn(v, "0123456789.eE+-%")] == '\0';
}

const char *cli_get(const cli_opt *opts, int n_opts, const char *name)
{
    for (int k = 0; k < n_opts; k++)
        if (strcmp(opts[k].name, name) == 0)
            return opts[k].value;
    return NULL;
}

/* Upper bounds of integer options, so a value past them is refused rather
 * than wrapped (--threads 4294967297 is not 1 thread). */
static const struct {
    const char *name;
    int64_t max;
} int_max[] = {{"threads", 4096}, {"batch", CLI_MAX_BATCH}, {"zstd-level", 22}};

int cli_get_int(const char *cmd, const cli_opt *opts, int n_opts, const char *name, int64_t dflt, int64_t lo,
                int64_t *out)
{
    const char *v = cli_get(opts, n_opts, name);
    *out = dflt;
    if (!v)
        return 0;
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    int64_t hi = INT64_MAX;
    for (size_t k = 0; k < sizeof int_max / sizeof int_max[0]; k++)
        if (strcmp(int_max[k].name, name) == 0)
            hi = int_max[k].max;
    /* digits only, as written: strtoll would also take " 8" and "+8" */
    const int digits = isdigit((unsigned char)v[0]) || (v[0] == '-' && isdigit((unsigned char)v[1]));
    if (!digits || errno || !end || *end || end == v || x < lo || x > hi)
        return cli_usage_error(cmd, "--%s wants an integer in [%lld, %lld], got '%s'", name, (long long)lo,
                               (long long)hi, v);
    *out = x;
    return 0;
}

double cli_peak_rss_mib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) {
            kib = strtod(line + 6, NULL);
            break;
        }
    if (f)
        fclose(f);
    return kib / 1024.0;
}

double cli_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { MAX_MARKS = 16 };
static struct {
    const char *what;
    double t;
} marks[MAX_MARKS];
static int n_marks;

void cli_mark(const char *what)
{
    if (n_marks < MAX_MARKS) {
        marks[n_marks].what = what;
        marks[n_marks++].t = cli_now_s();
    }
}

void cli_marks_print(void)
{
    if (n_marks == 0)
        return;
    const double now = cli_now_s();
    fprintf(stderr, "timeline (ms each phase took, from the start):");
    for (int i = 1; i < n_marks; i++)
        fprintf(stderr, "%s %s %.0f", i > 1 ? ";" : "", marks[i].what, 1e3 * (marks[i].t - marks[i - 1].t));
    fprintf(stderr, "; until this line %.0f; total %.0f\n", 1e3 * (now - marks[n_marks - 1].t),
            1e3 * (now - marks[0].t));
}

void cli_progress_start(cli_progress *p, const char *stage, const char *unit, int64_t total, int force)
{
    cli_mark("until the first image");
    memset(p, 0, sizeof *p);
    p->stage = stage;
    p->unit = unit;
    p->total = total;
    p->t_start = p->t_last = cli_now_s();
    p->enabled = cli_is_writer() && (force || isatty(STDERR_FILENO));
}

static void progress_draw(cli_progress *p, int64_t done, double now)
{
    double el = now - p->t_start;
    double rate = el > 0 ? (double)done / el : 0;
    double eta = rate > 0 ? (double)(p->total - done) / rate : 0;
    fprintf(stderr, "\r%s: %lld/%lld %s  %.0f %s/s  ETA %.0f s   ", p->stage, (long long)done,
            (long long)p->total, p->unit, rate, p->unit, eta);
    fflush(stderr);
}

void cli_progress_update(cli_progress *p, int64_t done)
{
    if (p->first_done == 0 && done > 0) {
        p->first_done = done;
        cli_mark("first batch");
    }
    if (!p->enabled)
        return;
    double now = cli_now_s();
    if (now - p->t_last < 0.2)
        return;
    p->t_last = now;
    progress_draw(p, done, now);
}

void cli_progress_end(cli_progress *p, int64_t done)
{
    cli_mark("the other batches");
    if (!p->enabled) /* a run shorter than the first draw still gets its end line */
        return;
    progress_draw(p, done, cli_now_s());
    fprintf(stderr, "\n");
}

ptq_status cli_read_text(ptq_ctx *ctx, const char *path, char **out)
{
    *out = NULL;
    FILE *f = NULL;
    PTQ_TRY_RET(ptq_file_fopen_read(ctx, path, &f));
    char *buf = NULL;
    size_t n = 0, cap = 0, got = 0;
    do {
        if (n == cap) {
            char *grown = cap < ((size_t)1 << 30) ? realloc(buf, cap ? 2 * cap + 1 : 65537) : NULL;
            if (!grown) {
                free(buf);
                fclose(f);
                return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory reading %s (or it is over 1 GiB)", path);
            }
            buf = grown;
            cap = cap ? 2 * cap : 65536;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot read %s", path);
    }
    const char *nul = memchr(buf, '\0', n);
    if (nul) { /* the text would end there and the rest go unread: a JSON value followed by anything */
        const long long at = (long long)(nul - buf);
        free(buf);
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "%s holds a NUL byte (at byte %lld): not a text file", path, at);
    }
    buf[n] = '\0';
    *out = buf;
    return PTQ_OK;
}

/* Writes the .npy header for a float32 C-order [rows, cols] array. */
int cli_npy_header(FILE *f, int64_t rows, int64_t cols)
{
    char dict[128];
    int len = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (%lld, %lld), }",
                       (long long)rows, (long long)cols);
    int total = 10 + len + 1;
    int pad = (64 - total % 64) % 64;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    int hlen = len + pad + 1;
    pre[8] = (unsigned char)(hlen & 0xff);
    pre[9] = (unsigned char)(hlen >> 8);
    if (fwrite(pre, 1, 10, f) != 10 || fwrite(dict, 1, (size_t)len, f) != (size_t)len)
        return -1;
    for (int i = 0; i < pad; i++)
        fputc(' ', f);
    fputc('\n', f);
    return ferror(f) ? -1 : 0;
}

/* What follows key and its colon in the .npy header dict h, or NULL. */
static const char *npy_after_key(const char *h, const char *key)
{
    const char *k = strstr(h, key);
    if (!k)
        return NULL;
    k += strlen(key);
    while (*k == ' ' || *k == ':')
        k++;
    return k;
}

ptq_status cli_npy_read(ptq_ctx *ctx, const char *path, int64_t *rows, int64_t *cols, float **data)
{
    *data = NULL;
    *rows = *cols = 0;
    FILE *f = NULL;
    PTQ_TRY_RET(ptq_file_fopen_read(ctx, path, &f)); /* a regular file: no FIFO or device to block on */
    ptq_status st = PTQ_OK;
    char head[4096];
    unsigned char pre[12];
    if (fseek(f, 0, SEEK_END) != 0) {
        st = ptq_fail(ctx, PTQ_ERR_IO, "cannot read %s: %s", path, strerror(errno));
        goto done;
    }
    const long size = ftell(f);
    rewind(f);
    if (size < 10 || fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0 || pre[6] < 1 || pre[6] > 3) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "%s is not a .npy file (no \\x93NUMPY version 1-3 header)", path);
        goto done;
    }
    long hlen = pre[8] | (long)pre[9] << 8, off = 10;
    if (pre[6] >= 2) { /* a 4-byte length */
        if (size < 12 || fread(pre + 10, 1, 2, f) != 2) {
            st = ptq_fail(ctx, PTQ_ERR_FORMAT, "%s: truncated .npy header", path);
            goto done;
        }
        hlen |= (long)pre[10] << 16 | (long)pre[11] << 24;
        off = 12;
    }
    if (hlen <= 0 || hlen >= (long)sizeof head || off + hlen > size || fread(head, 1, (size_t)hlen, f) != (size_t)hlen) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "%s: a .npy header of %ld bytes in a file of %ld", path, hlen, size);
        goto done;
    }
    head[hlen] = '\0';
    for (long i = hlen - 1; i >= 0 && (head[i] == ' ' || head[i] == '\n'); i--)
        head[i] = '\0'; /* the padding, out of messages */
    const char *d = npy_after_key(head, "'descr'"), *fo = npy_after_key(head, "'fortran_order'");
    const char *sh = npy_after_key(head, "'shape'");
    long long r = -1, c = -1;
    if (!d || strncmp(d, "'<f4'", 5) != 0 || !fo || strncmp(fo, "False", 5) != 0 || !sh ||
        sscanf(sh, "( %lld , %lld )", &r, &c) != 2 || r < 1 || c < 1) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "%s holds %s, not a little-endian float32 C-order 2-D array [rows, classes]",
                      path, head);
        goto done;
    }
    const long long avail = (long long)(size - off - hlen);
    if (r > avail / 4 || c > avail / 4 / r || r * c * 4 != avail) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "%s: shape (%lld, %lld) does not match its %lld bytes of float32 data",
                      path, r, c, avail);
        goto done;
    }
    float *v = malloc((size_t)(r * c) * sizeof *v);
    if (!v) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for %s (%lld x %lld floats)", path, r, c);
        goto done;
    }
    if (fread(v, sizeof *v, (size_t)(r * c), f) != (size_t)(r * c)) {
        free(v);
        st = ptq_fail(ctx, PTQ_ERR_IO, "cannot read %s: %s", path, ferror(f) ? strerror(errno) : "truncated");
        goto done;
    }
    *data = v;
    *rows = r;
    *cols = c;
done:
    fclose(f);
    return st;
}

ptq_status cli_plan_for(ptq_ctx *ctx, const char *plan_path, const char *model_path, const ptq_graph *g,
                        ptq_plan **plan)
{
    char sha[65], *text = NULL;
    *plan = NULL;
    PTQ_TRY_RET(cli_model_sha256(ctx, model_path, sha));
    PTQ_TRY_RET(cli_read_text(ctx, plan_path, &text));
    ptq_status st = ptq_plan_from_json(ctx, text, plan);
    free(text);
    if (st == PTQ_OK)
        st = ptq_plan_check(ctx, *plan, g, sha);
    if (st != PTQ_OK) {
        char why[PTQ_MSG_BYTES];
        snprintf(why, sizeof why, "%s", ctx->msg);
        ptq_fail(ctx, st, "%s: %s", plan_path, why);
    }
    return st;
}

ptq_status cli_load_plan(ptq_ctx *ctx, const char *plan_path, const char *model_path, ptq_graph **g,
                         ptq_plan **plan)
{
    *g = NULL;
    *plan = NULL;
    PTQ_TRY_RET(ptq_model_load(ctx, model_path, g));
    PTQ_TRY_RET(ptq_graph_check_unquantized(ctx, *g, "a plan"));
    PTQ_TRY_RET(ptq_graph_infer_types(ctx, *g));
    return cli_plan_for(ctx, plan_path, model_path, *g, plan);
}
