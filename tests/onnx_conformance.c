/* ONNX backend conformance: `onnx_conformance <suite dir>` runs every case
 * folder (model.onnx + test_data_set_*) of onnx's backend test data through
 * ptq_exec on the ref and cpu devices and compares like onnx's backend test
 * (|got-want| <= atol + rtol*|want|, rtol 1e-3, atol 1e-7; integers exactly).
 * Each case runs in a child process, so a crash is one failure, not the end. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptq/graph.h"
#include "ptq/runtime.h"
#include "runtime/op.h"

#define RTOL 1e-3
#define ATOL 1e-7
#define CASE_TIMEOUT_S 120
#define MAX_REASONS 15

enum { CASE_PASS = 0, CASE_FAIL = 1, CASE_SKIP = 2 };

/* What a child reports about one case. */
typedef struct case_result {
    int outcome;
    char key[96];   /* skips: the op type (or kind of refusal) they are grouped by */
    char msg[1200]; /* why it failed or was skipped */
    char ops[512];  /* the graph's op types, each once, comma-separated and comma-ended ("Add,Mul,") */
} case_result;

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* "a/b" into buf; 0 when it does not fit. */
static int join_path(char *buf, size_t n_buf, const char *a, const char *b)
{
    int w = snprintf(buf, n_buf, "%s/%s", a, b);
    return w >= 0 && (size_t)w < n_buf;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted entries of dir whose name starts with prefix; NULL-terminated, caller frees. */
static char **list_dir(const char *dir, const char *prefix, int *n_out)
{
    DIR *d = opendir(dir);
    char **names = NULL;
    int n = 0, cap = 0;
    *n_out = 0;
    if (!d)
        return NULL;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        if (n + 1 >= cap) {
            cap = cap ? 2 * cap : 64;
            char **grown = realloc(names, (size_t)cap * sizeof *names);
            if (!grown)
                break;
            names = grown;
        }
        if (!(names[n] = strdup(e->d_name)))
            break;
        n++;
    }
    closedir(d);
    if (names) {
        qsort(names, (size_t)n, sizeof *names, cmp_str);
        names[n] = NULL;
    }
    *n_out = n;
    return names;
}

static void free_list(char **names)
{
    for (int i = 0; names && names[i]; i++)
        free(names[i]);
    free(names);
}

/* ---- skip reasons ---- */

/* The op type a refusal is about: the node the message names, else the
 * first node ptq has no op for, else the kind of refusal. */
static void skip_key(const ptq_graph *g, const char *msg, char *key, size_t n_key)
{
    const char *p = strstr(msg, "node '");
    if (p && g) {
        p += 6;
        const char *q = strchr(p, '\'');
        for (int i = 0; q && i < g->n_nodes; i++) {
            const ptq_node *n = &g->nodes[i];
            if (strlen(n->name) == (size_t)(q - p) && strncmp(n->name, p, (size_t)(q - p)) == 0) {
                if (n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
                    snprintf(key, n_key, "%s:%s", n->domain, n->op_type);
                else
                    snprintf(key, n_key, "%s", n->op_type);
                return;
            }
        }
    }
    if (p && (p = strstr(p, " (")) != NULL) { /* the loader's "node 'x' (Op): ..." */
        p += 2;
        size_t len = strcspn(p, ",):");
        snprintf(key, n_key, "%.*s", (int)(len < 60 ? len : 60), p);
        return;
    }
    if (strstr(msg, "contradicts its declared dims")) {
        snprintf(key, n_key, "(test data contradicts declared dims)");
        return;
    }
    if (strstr(msg, "is not a tensor")) {
        snprintf(key, n_key, "(non-tensor graph input/output)");
        return;
    }
    for (int i = 0; g && i < g->n_nodes; i++)
        if (!ptq_op_find(g->nodes[i].domain, g->nodes[i].op_type)) {
            snprintf(key, n_key, "%s", g->nodes[i].op_type);
            return;
        }
    snprintf(key, n_key, "(other)");
}

/* ---- comparing tensors ---- */

static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 0x400, e - 25);
    return (h & 0x8000) ? -v : v;
}

static double elem_as_double(const ptq_tensor *t, int64_t i)
{
    const unsigned char *p = t->data;
    switch (t->dtype) {
    case PTQ_DT_FLOAT: {
        float f;
        memcpy(&f, p + 4 * i, 4);
        return f;
    }
    case PTQ_DT_DOUBLE: {
        double d;
        memcpy(&d, p + 8 * i, 8);
        return d;
    }
    case PTQ_DT_FLOAT16: {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        return half_to_double(h);
    }
    default: { /* bfloat16: the top half of a float32 */
        uint16_t h;
        uint32_t bits;
        float f;
        memcpy(&h, p + 2 * i, 2);
        bits = (uint32_t)h << 16;
        memcpy(&f, &bits, 4);
        return f;
    }
    }
}

/* 1 when got matches want; else why says where. */
static int tensors_match(const ptq_tensor *got, const ptq_tensor *want, char *why, size_t n_why)
{
    char a[96], b[96];
    if (got->mem != PTQ_MEM_HOST || (!got->data && ptq_tensor_bytes(want) > 0)) {
        snprintf(why, n_why, "output is not a host tensor");
        return 0;
    }
    /* ONNX's data for a bfloat16 output (test_cast_FLOAT_to_BFLOAT16) stores the codes as uint16, and ONNX 1.13
       made them by truncation where ptq rounds to nearest even, as onnxruntime and __float2bfloat16_rn do: each
       code equal or one above (away from zero), any NaN for a NaN */
    const int bf16_codes = got->dtype == PTQ_DT_BFLOAT16 && want->dtype == PTQ_DT_UINT16;
    if (got->dtype != want->dtype && !bf16_codes) {
        snprintf(why, n_why, "dtype %s, want %s", ptq_dtype_name(got->dtype), ptq_dtype_name(want->dtype));
        return 0;
    }
    int same_shape = got->ndim == want->ndim;
    for (int i = 0; same_shape && i < got->ndim; i++)
        same_shape = got->dims[i] == want->dims[i];
    if (!same_shape) {
        snprintf(why, n_why, "shape %s, want %s", ptq_dims_str(got->dims, got->ndim, a, sizeof a),
                 ptq_dims_str(want->dims, want->ndim, b, sizeof b));
        return 0;
    }
    int64_t n = ptq_tensor_numel(want);
    if (want->dtype == PTQ_DT_FLOAT || want->dtype == PTQ_DT_DOUBLE || want->dtype == PTQ_DT_FLOAT16 ||
        want->dtype == PTQ_DT_BFLOAT16) {
        int64_t n_bad = 0, worst_at = -1;
        double worst = 0;
        for (int64_t i = 0; i < n; i++) {
            double g = elem_as_double(got, i), w = elem_as_double(want, i), r;
            if (isnan(w) || isnan(g))
                r = isnan(w) && isnan(g) ? 0 : INFINITY;
            else if (isinf(w) || isinf(g))
                r = g == w ? 0 : INFINITY;
            else
                r = fabs(g - w) / (ATOL + RTOL * fabs(w));
            if (r > 1) {
                n_bad++;
                if (r > worst || worst_at < 0) {
                    worst = r;
                    worst_at = i;
                }
            }
        }
        if (n_bad) {
            snprintf(why, n_why, "%lld of %lld values off, worst at %lld: got %.9g want %.9g (err/tol %.3g)",
                     (long long)n_bad, (long long)n, (long long)worst_at, elem_as_double(got, worst_at),
                     elem_as_double(want, worst_at), worst);
            return 0;
        }
        return 1;
    }
    for (int64_t i = 0; bf16_codes && i < n; i++) {
        const uint16_t g = ((const uint16_t *)got->data)[i], w = ((const uint16_t *)want->data)[i];
        const int both_nan = (g & 0x7FFF) > 0x7F80 && (w & 0x7FFF) > 0x7F80;
        if (g != w && g != w + 1 && !both_nan) {
            snprintf(why, n_why, "bfloat16 code %#x at %lld, want %#x (or one above)", g, (long long)i, w);
            return 0;
        }
    }
    if (bf16_codes)
        return 1;
    size_t es = ptq_dtype_size(want->dtype);
    for (int64_t i = 0; i < n; i++)
        if (memcmp((const char *)got->data + i * es, (const char *)want->data + i * es, es) != 0) {
            snprintf(why, n_why, "%s values differ first at %lld", ptq_dtype_name(want->dtype), (long long)i);
            return 0;
        }
    return 1;
}

/* ---- one case ---- */

static void set_result(case_result *r, int outcome, const ptq_graph *g, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static void set_result(case_result *r, int outcome, const ptq_graph *g, const char *fmt, ...)
{
    va_list ap;
    r->outcome = outcome;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
    if (outcome == CASE_SKIP)
        skip_key(g, r->msg, r->key, sizeof r->key);
}

/* Loads the files <set>/<prefix>_0.pb, _1.pb, ... into t (n_want of them; more
 * or fewer files is an error). */
static ptq_status load_tensors(ptq_ctx *ctx, const char *set, const char *prefix, int n_want, ptq_tensor *t,
                               int *n_loaded, char *why, size_t n_why)
{
    char path[4096], name[64];
    *n_loaded = 0;
    int n_files = 0;
    for (;; n_files++) {
        snprintf(name, sizeof name, "%s_%d.pb", prefix, n_files);
        if (!join_path(path, sizeof path, set, name) || !exists(path))
            break;
    }
    if (n_files != n_want) {
        snprintf(why, n_why, "%d %s files for %d graph %ss", n_files, prefix, n_want, prefix);
        return PTQ_ERR_DATA;
    }
    for (int i = 0; i < n_want; i++) {
        snprintf(name, sizeof name, "%s_%d.pb", prefix, i);
        join_path(path, sizeof path, set, name);
        ptq_status st = ptq_tensor_load_pb(ctx, path, &t[i], NULL);
        if (st != PTQ_OK) {
            snprintf(why, n_why, "%.900s", ctx->msg);
            return st;
        }
        (*n_loaded)++;
    }
    return PTQ_OK;
}

static void run_on_device(const char *dir, const ptq_graph *g, ptq_device device, case_result *r)
{
    static const char *const dev_names[] = {[PTQ_DEVICE_CPU] = "cpu", [PTQ_DEVICE_REF] = "ref",
                                            [PTQ_DEVICE_CUDA] = "cuda"};
    const char *dev = dev_names[device];
    ptq_ctx ctx;
    ptq_exec *e = NULL;
    ptq_exec_params p;
    char why[1024];
    int n_sets = 0;
    char **sets = list_dir(dir, "test_data_set_", &n_sets);
    ptq_tensor *in = calloc((size_t)g->n_inputs + 1, sizeof *in);
    ptq_tensor *want = calloc((size_t)g->n_outputs + 1, sizeof *want);
    ptq_tensor *got = calloc((size_t)g->n_outputs + 1, sizeof *got);

    ptq_ctx_init(&ctx);
    memset(&p, 0, sizeof p);
    p.device = device;
    if (!in || !want || !got) {
        set_result(r, CASE_FAIL, g, "out of memory");
        goto done;
    }
    if (n_sets == 0) {
        set_result(r, CASE_FAIL, g, "no test_data_set_* folder");
        goto done;
    }
    ptq_status st = ptq_exec_create(&ctx, g, &p, &e);
    if (st != PTQ_OK) {
        set_result(r, st == PTQ_ERR_UNSUPPORTED ? CASE_SKIP : CASE_FAIL, g, "[%s] create: %s: %s", dev,
                   ptq_status_name(st), ctx.msg);
        goto done;
    }
    for (int s = 0; s < n_sets && r->outcome == CASE_PASS; s++) {
        char set[4096];
        int n_in = 0, n_want = 0;
        if (!join_path(set, sizeof set, dir, sets[s])) {
            set_result(r, CASE_FAIL, g, "path too long: %s/%s", dir, sets[s]);
            break;
        }
        st = load_tensors(&ctx, set, "input", g->n_inputs, in, &n_in, why, sizeof why);
        /* numpy has no bfloat16: onnx stores such inputs as uint16 bit patterns */
        for (int i = 0; i < n_in; i++)
            if (g->values[g->inputs[i]].dtype == PTQ_DT_BFLOAT16 && in[i].dtype == PTQ_DT_UINT16)
                in[i].dtype = PTQ_DT_BFLOAT16;
        if (st == PTQ_OK)
            st = load_tensors(&ctx, set, "output", g->n_outputs, want, &n_want, why, sizeof why);
        int declared = -1; /* an input whose test data contradicts its declared dims (castlike_*_expanded) */
        for (int i = 0; st == PTQ_OK && declared < 0 && i < n_in; i++) {
            const ptq_value *v = &g->values[g->inputs[i]];
            if (v->ndim >= 0 && v->ndim != in[i].ndim)
                declared = i;
            for (int d = 0; v->ndim == in[i].ndim && d < v->ndim; d++)
                if (v->dims[d] >= 0 && v->dims[d] != in[i].dims[d])
                    declared = i;
        }
        if (st != PTQ_OK) {
            set_result(r, st == PTQ_ERR_UNSUPPORTED ? CASE_SKIP : CASE_FAIL, g, "[%s] %s: test data: %s", dev,
                       sets[s], why);
        } else if (declared >= 0) {
            set_result(r, CASE_SKIP, g, "[%s] %s: the test data of input '%s' contradicts its declared dims", dev,
                       sets[s], g->values[g->inputs[declared]].name);
        } else if ((st = ptq_exec_run(&ctx, e, in, got)) != PTQ_OK) {
            set_result(r, st == PTQ_ERR_UNSUPPORTED ? CASE_SKIP : CASE_FAIL, g, "[%s] %s: run: %s: %s", dev,
                       sets[s], ptq_status_name(st), ctx.msg);
        } else {
            for (int k = 0; k < g->n_outputs; k++)
                if (!tensors_match(&got[k], &want[k], why, sizeof why)) {
                    set_result(r, CASE_FAIL, g, "[%s] %s: output %d '%s': %s", dev, sets[s], k,
                               g->values[g->outputs[k]].name, why);
                    break;
                }
        }
        for (int i = 0; i < n_in; i++)
            ptq_tensor_free_host(&in[i]);
        for (int i = 0; i < n_want; i++)
            ptq_tensor_free_host(&want[i]);
    }
done:
    ptq_exec_free(e);
    free(in);
    free(want);
    free(got);
    free_list(sets);
}

static void run_case(const char *dir, case_result *r)
{
    char path[4096];
    ptq_ctx ctx;
    ptq_graph *g = NULL;
    ptq_ctx_init(&ctx);
    memset(r, 0, sizeof *r);
    if (!join_path(path, sizeof path, dir, "model.onnx")) {
        set_result(r, CASE_FAIL, NULL, "path too long: %s", dir);
        return;
    }
    ptq_status st = ptq_graph_load_onnx(&ctx, path, &g);
    if (st != PTQ_OK) {
        set_result(r, st == PTQ_ERR_UNSUPPORTED ? CASE_SKIP : CASE_FAIL, NULL, "load: %s: %s", ptq_status_name(st),
                   ctx.msg);
        return;
    }
    for (int k = 0; k < g->n_nodes; k++) {
        char item[96];
        snprintf(item, sizeof item, "%s,", g->nodes[k].op_type);
        const size_t used = strlen(r->ops);
        if (!strstr(r->ops, item) && used + strlen(item) < sizeof r->ops)
            memcpy(r->ops + used, item, strlen(item) + 1);
    }
    static const ptq_device devices[] = {PTQ_DEVICE_REF, PTQ_DEVICE_CPU};
    for (size_t d = 0; d < sizeof devices / sizeof devices[0] && r->outcome == CASE_PASS; d++)
        run_on_device(dir, g, devices[d], r);
    ptq_graph_free(g);
}

/* Runs one case in a child; a crash or a hang is a failure of that case. */
static void run_case_isolated(const char *dir, case_result *r)
{
    int fds[2];
    memset(r, 0, sizeof *r);
    fflush(stdout);
    if (pipe(fds) != 0) {
        r->outcome = CASE_FAIL;
        snprintf(r->msg, sizeof r->msg, "pipe: %s", strerror(errno));
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        r->outcome = CASE_FAIL;
        snprintf(r->msg, sizeof r->msg, "fork: %s", strerror(errno));
        return;
    }
    if (pid == 0) {
        case_result mine;
        close(fds[0]);
        alarm(CASE_TIMEOUT_S);
        run_case(dir, &mine);
        ssize_t w = write(fds[1], &mine, sizeof mine);
        _exit(w == (ssize_t)sizeof mine ? 0 : 3);
    }
    close(fds[1]);
    size_t got = 0;
    while (got < sizeof *r) {
        ssize_t k = read(fds[0], (char *)r + got, sizeof *r - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (got != sizeof *r) {
        memset(r, 0, sizeof *r);
        r->outcome = CASE_FAIL;
        if (WIFSIGNALED(status))
            snprintf(r->msg, sizeof r->msg, "%s (signal %d)",
                     WTERMSIG(status) == SIGALRM ? "timed out" : "crashed", WTERMSIG(status));
        else
            snprintf(r->msg, sizeof r->msg, "child exited with status %d without a result", WEXITSTATUS(status));
    }
}

/* ---- the suite ---- */

typedef struct reason {
    char key[96];
    int count;
    char example[256]; /* "<case>: <message>" */
} reason;

static int cmp_reason(const void *a, const void *b)
{
    const reason *x = a, *y = b;
    if (x->count != y->count)
        return y->count - x->count;
    return strcmp(x->key, y->key);
}

int main(int argc, char **argv)
{
    if (argc != 2 && !(argc == 4 && strcmp(argv[2], "--require") == 0)) {
        fprintf(stderr, "usage: onnx_conformance <suite dir> [--require OP,OP,...]   (e.g. "
                        "/usr/include/onnx/backend/test/data/node)\n"
                        "  --require: fail unless each op is in at least one passing case\n");
        return 2;
    }
    /* the required ops and how many passing cases hold each (argv[3] is split in place); more than MAX_REQUIRED
       fails rather than dropping the rest unchecked */
    enum { MAX_REQUIRED = 512 };
    int n_req = 0, req_count[MAX_REQUIRED] = {0};
    const char *req_name[MAX_REQUIRED];
    if (argc == 4) {
        for (char *save = NULL, *t = strtok_r(argv[3], ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            if (n_req == MAX_REQUIRED) {
                fprintf(stderr, "onnx_conformance: more than %d required ops\n", MAX_REQUIRED);
                return 2;
            }
            req_name[n_req++] = t;
        }
    }
    const char *suite_dir = argv[1];
    const char *suite = strrchr(suite_dir, '/') ? strrchr(suite_dir, '/') + 1 : suite_dir;
    struct stat sb;
    if (stat(suite_dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        printf("onnx conformance: %s not found (Debian's libonnx-testdata): skipped\n", suite_dir);
        return 77;
    }
    int n_dirs = 0, n_cases = 0, n_pass = 0, n_fail = 0, n_skip = 0, n_reasons = 0;
    char **dirs = list_dir(suite_dir, "", &n_dirs);
    reason *reasons = calloc((size_t)n_dirs + 1, sizeof *reasons);
    if (!reasons) {
        free_list(dirs);
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (int i = 0; i < n_dirs; i++) {
        char dir[4096], model[4096];
        if (!join_path(dir, sizeof dir, suite_dir, dirs[i]) || !join_path(model, sizeof model, dir, "model.onnx") ||
            !exists(model))
            continue;
        case_result r;
        n_cases++;
        run_case_isolated(dir, &r);
        if (r.outcome == CASE_PASS) {
            n_pass++;
            for (int q = 0; q < n_req; q++) {
                char item[96];
                snprintf(item, sizeof item, "%s,", req_name[q]);
                /* a whole name: at the start of the list or after a comma */
                for (const char *at = strstr(r.ops, item); at; at = strstr(at + 1, item))
                    if (at == r.ops || at[-1] == ',') {
                        req_count[q]++;
                        break;
                    }
            }
        } else if (r.outcome == CASE_FAIL) {
            n_fail++;
            printf("FAIL %s: %s\n", dirs[i], r.msg);
        } else {
            n_skip++;
            int k = 0;
            while (k < n_reasons && strcmp(reasons[k].key, r.key) != 0)
                k++;
            if (k == n_reasons) {
                n_reasons++;
                snprintf(reasons[k].key, sizeof reasons[k].key, "%s", r.key);
                snprintf(reasons[k].example, sizeof reasons[k].example, "%.60s: %.180s", dirs[i], r.msg);
            }
            reasons[k].count++;
        }
    }
    printf("onnx conformance %s: %d ran, %d passed, %d failed, %d skipped as unsupported (%d cases)\n", suite,
           n_pass + n_fail, n_pass, n_fail, n_skip, n_cases);
    qsort(reasons, (size_t)n_reasons, sizeof *reasons, cmp_reason);
    for (int k = 0; k < n_reasons && k < MAX_REASONS; k++)
        printf("  skipped %-32s %4d  e.g. %s\n", reasons[k].key, reasons[k].count, reasons[k].example);
    if (n_reasons > MAX_REASONS) {
        int rest = 0;
        for (int k = MAX_REASONS; k < n_reasons; k++)
            rest += reasons[k].count;
        printf("  ... %d more reasons for %d skipped cases\n", n_reasons - MAX_REASONS, rest);
    }
    int n_missing = 0;
    if (n_req) {
        printf("required ops, passing cases that hold each:");
        for (int q = 0; q < n_req; q++) {
            printf(" %s %d", req_name[q], req_count[q]);
            n_missing += req_count[q] == 0;
        }
        printf("\n");
        for (int q = 0; q < n_req; q++)
            if (req_count[q] == 0)
                printf("FAIL required op %s: in no passing case\n", req_name[q]);
    }
    free(reasons);
    free_list(dirs);
    return n_fail || n_missing ? 1 : 0;
}
