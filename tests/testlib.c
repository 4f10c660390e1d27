/* Shared helpers for the C tests: checks, seeded random data, tolerance compare. */
#define _POSIX_C_SOURCE 200809L
#include "testlib.h"

#include "ptq/runtime.h"

#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

int ptq_test_failures;
int ptq_test_checks;

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

void test_rand_seed(uint64_t seed)
{
    rng_state = seed ? seed : 0x9E3779B97F4A7C15ull;
}

uint64_t test_rand_u64(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

float test_rand_uniform(float lo, float hi)
{
    return lo + (hi - lo) * (float)((test_rand_u64() >> 40) * (1.0 / 16777216.0));
}

void test_fill_uniform(float *x, int64_t n, float lo, float hi)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = test_rand_uniform(lo, hi);
}

void test_fill_specials(float *x, int64_t n, float amax, float special)
{
    for (int64_t i = 0; i < n; i++) {
        float u = test_rand_uniform(0.0f, 1.0f);
        float v = test_rand_uniform(-amax, amax);
        if (u < special) {
            switch ((int)(test_rand_uniform(0.0f, 6.0f))) {
            case 0: v = 0.0f; break;
            case 1: v = -0.0f; break;
            case 2: v = NAN; break;
            case 3: v = test_rand_uniform(0.0f, 1.0f) < 0.5f ? INFINITY : -INFINITY; break;
            case 4: v = test_rand_uniform(-1e-38f, 1e-38f); break; /* mostly subnormal */
            default: v = amax > 1e38f ? -FLT_MAX : amax * 0x1.fffffep-1f; break; /* the top bin */
            }
        }
        x[i] = v;
    }
}

int test_close(const char *label, const float *got, const float *ref, int64_t n, float rtol, float atol)
{
    double worst = 0;
    int64_t at = -1;
    for (int64_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - (double)ref[i]);
        double lim = atol + rtol * fabs((double)ref[i]);
        double r;
        if (isnan(got[i]) || isnan(ref[i]))
            r = isnan(got[i]) && isnan(ref[i]) ? 0 : INFINITY;
        else if (err == 0)
            r = 0; /* equal, infinities included */
        else
            r = lim > 0 ? err / lim : INFINITY;
        if (r > worst || at < 0) {
            worst = r;
            at = i;
        }
    }
    ptq_test_checks++;
    if (n > 0 && worst > 1.0) {
        ptq_test_failures++;
        fprintf(stderr, "%s: mismatch at %lld: got %.9g want %.9g (err/tol %.3g)\n", label, (long long)at,
                got[at], ref[at], worst);
        return 0;
    }
    return 1;
}

int test_done(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, ptq_test_checks, ptq_test_failures);
    return ptq_test_failures ? 1 : 0;
}

const ptq_node *test_node_named(const ptq_graph *g, const char *name, int *index)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i].name, name) == 0) {
            if (index)
                *index = i;
            return &g->nodes[i];
        }
    return NULL;
}

ptq_graph *test_load_demo_model(const char *test)
{
    return test_load_model(test, "fmnist_resnet.onnx");
}

ptq_graph *test_load_model(const char *test, const char *file)
{
    const char *src = getenv("PTQ_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/models/%s", src ? src : ".", file);
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_graph *g = NULL;
    if (ptq_graph_load_onnx(&ctx, path, &g) != PTQ_OK || ptq_graph_infer_shapes(&ctx, g, 1) != PTQ_OK) {
        fprintf(stderr, "%s: %s\n", test, ctx.msg);
        ptq_graph_free(g);
        return NULL;
    }
    return g;
}

int64_t test_count_str(const char *hay, const char *needle)
{
    int64_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

int test_contains_ci(const char *hay, const char *needle)
{
    const size_t n = strlen(needle);
    for (const char *p = hay; *p; p++)
        if (strncasecmp(p, needle, n) == 0)
            return 1;
    return 0;
}

void test_remove_tree(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return;
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        for (struct dirent *e; d && (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char child[1024];
            snprintf(child, sizeof child, "%s/%s", path, e->d_name);
            test_remove_tree(child);
        }
        if (d)
            closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

void test_write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        CHECK(fwrite(data, 1, n, f) == n);
        fclose(f);
    }
}

static int case_io_index[TEST_CASE_MAX_IN > TEST_CASE_MAX_OUT ? TEST_CASE_MAX_IN : TEST_CASE_MAX_OUT];

void test_case_init(test_op_case *c, const char *op_type, int64_t opset, const ptq_attr *attrs, int n_attrs,
                    int n_in, int n_out)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < sizeof case_io_index / sizeof case_io_index[0]; i++)
        case_io_index[i] = (int)i;
    c->graph.opset = opset;
    c->node.name = "node_under_test";
    c->node.op_type = op_type;
    c->node.domain = "";
    c->node.n_inputs = n_in;
    c->node.n_outputs = n_out;
    c->node.inputs = case_io_index;
    c->node.outputs = case_io_index;
    c->node.attrs = attrs;
    c->node.n_attrs = n_attrs;
    c->io.graph = &c->graph;
    c->io.node = &c->node;
    c->io.n_in = n_in;
    c->io.n_out = n_out;
    c->io.in = c->in_ptr;
    c->io.out = c->out_ptr;
    for (int i = 0; i < n_in; i++)
        c->io.in[i] = &c->in[i];
    for (int i = 0; i < n_out; i++)
        c->io.out[i] = &c->out[i];
    ptq_ctx_init(&c->ctx);
}

void test_case_input(test_op_case *c, int i, ptq_dtype dt, const void *data, int ndim, const int64_t *dims)
{
    c->in[i].dtype = dt;
    c->in[i].ndim = ndim;
    for (int d = 0; d < ndim; d++)
        c->in[i].dims[d] = dims[d];
    c->in[i].data = (void *)data;
}

ptq_status test_case_run(test_op_case *c, const ptq_op_def *op, int fast)
{
    ptq_status st = op->infer(&c->ctx, &c->io);
    if (st != PTQ_OK)
        return st;
    for (int i = 0; i < c->io.n_out; i++) {
        size_t n_bytes = ptq_tensor_bytes(&c->out[i]);
        c->out[i].data = calloc(n_bytes ? n_bytes : 1, 1);
        c->out[i].cap_bytes = n_bytes;
    }
    return fast && op->run_cpu ? op->run_cpu(&c->ctx, &c->io) : op->run_ref(&c->ctx, &c->io);
}

void test_case_free(test_op_case *c)
{
    for (int i = 0; i < TEST_CASE_MAX_OUT; i++)
        ptq_tensor_free_host(&c->out[i]);
}

int test_dims_are(const ptq_tensor *t, int ndim, const int64_t *dims)
{
    if (t->ndim != ndim)
        return 0;
    for (int d = 0; d < ndim; d++)
        if (t->dims[d] != dims[d])
            return 0;
    return 1;
}

int test_fails_naming_node(const test_op_case *c, ptq_status st, ptq_status want)
{
    return st == want && strstr(c->ctx.msg, "'node_under_test'") != NULL;
}
