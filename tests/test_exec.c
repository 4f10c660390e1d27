/* The executor on a hand-built graph (Conv -> Relu -> Add -> GAP -> Flatten):
 * the tap sees every produced tensor, ref and cpu agree, repeated runs with
 * other batch sizes give the same per-sample results, and bad inputs or
 * unknown ops fail with messages naming the input / node; zeroed params run
 * on the CPU; ptq_cpu_has_vnni agrees with /proc/cpuinfo. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptq/runtime.h"
#include "testlib.h"

enum { V_X, V_W, V_B, V_Y1, V_Y2, V_C, V_Y3, V_Y4, V_OUT, N_VALUES };

static float w_data[3 * 2 * 3 * 3], b_data[3], c_data[3];
static const int64_t pads[4] = {1, 1, 1, 1};
static const ptq_attr conv_attrs[] = {{.name = "pads", .type = PTQ_ATTR_INTS, .n = 4, .ints = pads}};
static const int conv_in[] = {V_X, V_W, V_B}, conv_out[] = {V_Y1};
static const int relu_in[] = {V_Y1}, relu_out[] = {V_Y2};
static const int add_in[] = {V_Y2, V_C}, add_out[] = {V_Y3};
static const int gap_in[] = {V_Y3}, gap_out[] = {V_Y4};
static const int flat_in[] = {V_Y4}, flat_out[] = {V_OUT};
static const int g_inputs[] = {V_X}, g_outputs[] = {V_OUT};

static ptq_value values[N_VALUES];
static ptq_node nodes[5];

static void set_value(int i, const char *name, int ndim, const int64_t *dims, const void *data, size_t n_bytes,
                      int producer, unsigned flags)
{
    values[i].name = name;
    values[i].dtype = PTQ_DT_FLOAT;
    values[i].ndim = ndim;
    for (int d = 0; d < ndim; d++)
        values[i].dims[d] = dims[d];
    values[i].data = data;
    values[i].n_bytes = n_bytes;
    values[i].producer = producer;
    values[i].flags = flags;
}

static void set_node(int k, const char *name, const char *op, const int *in, int n_in, const int *out,
                     const ptq_attr *attrs, int n_attrs)
{
    nodes[k] = (ptq_node){name, op, "", n_in, 1, in, out, n_attrs, attrs};
}

static ptq_graph make_graph(void)
{
    test_fill_uniform(w_data, (int64_t)(sizeof w_data / sizeof w_data[0]), -1, 1);
    test_fill_uniform(b_data, 3, -0.5f, 0.5f);
    test_fill_uniform(c_data, 3, -0.5f, 0.5f);
    const int64_t x_dims[] = {-1, 2, 5, 5}, w_dims[] = {3, 2, 3, 3}, b_dims[] = {3}, c_dims[] = {3, 1, 1};
    const int64_t out_dims[] = {-1, 3};
    set_value(V_X, "x", 4, x_dims, NULL, 0, -1, PTQ_VALUE_INPUT);
    set_value(V_W, "w", 4, w_dims, w_data, sizeof w_data, -1, PTQ_VALUE_INITIALIZER);
    set_value(V_B, "b", 1, b_dims, b_data, sizeof b_data, -1, PTQ_VALUE_INITIALIZER);
    set_value(V_Y1, "y1", -1, NULL, NULL, 0, 0, 0);
    set_value(V_Y2, "y2", -1, NULL, NULL, 0, 1, 0);
    set_value(V_C, "c", 3, c_dims, c_data, sizeof c_data, -1, PTQ_VALUE_INITIALIZER);
    set_value(V_Y3, "y3", -1, NULL, NULL, 0, 2, 0);
    set_value(V_Y4, "y4", -1, NULL, NULL, 0, 3, 0);
    set_value(V_OUT, "out", 2, out_dims, NULL, 0, 4, PTQ_VALUE_OUTPUT);
    set_node(0, "conv", "Conv", conv_in, 3, conv_out, conv_attrs, 1);
    set_node(1, "relu", "Relu", relu_in, 1, relu_out, NULL, 0);
    set_node(2, "add", "Add", add_in, 2, add_out, NULL, 0);
    set_node(3, "gap", "GlobalAveragePool", gap_in, 1, gap_out, NULL, 0);
    set_node(4, "flat", "Flatten", flat_in, 1, flat_out, NULL, 0);
    ptq_graph g;
    memset(&g, 0, sizeof g);
    g.name = "test";
    g.opset = 13;
    g.n_values = N_VALUES;
    g.values = values;
    g.n_nodes = 5;
    g.nodes = nodes;
    g.n_inputs = 1;
    g.inputs = g_inputs;
    g.n_outputs = 1;
    g.outputs = g_outputs;
    return g;
}

typedef struct tap_log {
    int calls;
    int seen[N_VALUES];
} tap_log;

static ptq_status tap(void *user, ptq_ctx *ctx, const ptq_graph *g, int node, int value, const ptq_tensor *t)
{
    tap_log *log = user;
    log->calls++;
    log->seen[value]++;
    CHECK(t->mem == PTQ_MEM_HOST && t->data != NULL);
    CHECK(g->values[value].producer == node);
    return PTQ_OK;
}

/* Runs n samples of x through a fresh executor on device; copies the output to out. */
static ptq_status run_once(ptq_ctx *ctx, const ptq_graph *g, ptq_device device, const float *x, int64_t n, float *out,
                           tap_log *log)
{
    ptq_exec *e = NULL;
    ptq_exec_params p = {device, 0, log ? tap : NULL, log, 0, PTQ_MATH_FP32};
    ptq_status st = ptq_exec_create(ctx, g, &p, &e);
    if (st != PTQ_OK)
        return st;
    ptq_tensor in = {PTQ_DT_FLOAT, 4, {n, 2, 5, 5}, (void *)x, PTQ_MEM_HOST, 0};
    ptq_tensor y;
    st = ptq_exec_run(ctx, e, &in, &y);
    if (st == PTQ_OK) {
        CHECK(y.ndim == 2 && y.dims[0] == n && y.dims[1] == 3);
        memcpy(out, y.data, (size_t)(n * 3) * sizeof(float));
    }
    ptq_exec_free(e);
    return st;
}

/* ptq_cpu_has_vnni (CPUID) against the kernel's flags in /proc/cpuinfo: the
 * same answer on the VM (AMD, no VNNI) and on the GPU host (Intel, both). */
static void check_vnni(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192];
    int flags = -1;
    while (f && flags < 0 && fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0)
            flags = strstr(line, " avx512_vnni") != NULL || strstr(line, " avx_vnni") != NULL;
    if (f)
        fclose(f);
    if (flags >= 0)
        CHECK_MSG(ptq_cpu_has_vnni() == flags, "ptq_cpu_has_vnni %d, /proc/cpuinfo %d", ptq_cpu_has_vnni(), flags);
}

int main(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    test_rand_seed(7);
    ptq_graph g = make_graph();
    enum { N = 6 };
    static float x[N * 2 * 5 * 5], y_ref[N * 3], y_cpu[N * 3], y_part[N * 3];
    test_fill_uniform(x, N * 50, -2, 2);

    tap_log log = {0};
    CHECK(run_once(&ctx, &g, PTQ_DEVICE_REF, x, N, y_ref, &log) == PTQ_OK);
    CHECK_MSG(log.calls == 5, "tap called %d times, want 5", log.calls);
    CHECK(log.seen[V_Y1] == 1 && log.seen[V_Y2] == 1 && log.seen[V_Y3] == 1 && log.seen[V_Y4] == 1 &&
          log.seen[V_OUT] == 1);

    /* a direct computation of sample 0, class 1 */
    double acc = 0;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) {
            double s = b_data[1];
            for (int c = 0; c < 2; c++)
                for (int ki = 0; ki < 3; ki++)
                    for (int kj = 0; kj < 3; kj++) {
                        int ii = i + ki - 1, jj = j + kj - 1;
                        if (ii >= 0 && ii < 5 && jj >= 0 && jj < 5)
                            s += (double)x[c * 25 + ii * 5 + jj] * w_data[((1 * 2 + c) * 3 + ki) * 3 + kj];
                    }
            acc += (s > 0 ? s : 0) + c_data[1];
        }
    CHECK_MSG(fabs(acc / 25 - y_ref[1]) < 1e-5, "direct %.7f vs ref %.7f", acc / 25, y_ref[1]);

    CHECK(run_once(&ctx, &g, PTQ_DEVICE_CPU, x, N, y_cpu, NULL) == PTQ_OK);
    test_close("cpu vs ref", y_cpu, y_ref, N * 3, 1e-5f, 1e-6f);

    /* the same executor reused with different batch sizes */
    ptq_exec *e = NULL;
    ptq_exec_params p = {PTQ_DEVICE_CPU, 0, NULL, NULL, 1, PTQ_MATH_FP32};
    CHECK(ptq_exec_create(&ctx, &g, &p, &e) == PTQ_OK);
    for (int64_t start = 0; e && start < N;) {
        int64_t n = start == 0 ? 4 : N - start;
        ptq_tensor in = {PTQ_DT_FLOAT, 4, {n, 2, 5, 5}, x + start * 50, PTQ_MEM_HOST, 0};
        ptq_tensor y;
        CHECK(ptq_exec_run(&ctx, e, &in, &y) == PTQ_OK);
        memcpy(y_part + start * 3, y.data, (size_t)(n * 3) * sizeof(float));
        start += n;
    }
    test_close("split batches vs whole", y_part, y_cpu, N * 3, 1e-6f, 1e-7f);
    double conv_s = e ? ptq_exec_node_seconds(e, 0) : 0;
    CHECK_MSG(conv_s > 0 && conv_s < 10, "conv node time %g s", conv_s);
    CHECK(e && ptq_exec_node_seconds(e, 99) == 0.0);
    CHECK(strlen(ptq_cpu_blas_core()) > 0);
    check_vnni();

    /* a wrong input shape names the input and both shapes */
    ptq_tensor bad = {PTQ_DT_FLOAT, 4, {1, 3, 5, 5}, x, PTQ_MEM_HOST, 0};
    ptq_tensor y;
    ptq_status st = e ? ptq_exec_run(&ctx, e, &bad, &y) : PTQ_ERR_INTERNAL;
    CHECK(st == PTQ_ERR_SHAPE);
    CHECK_MSG(strstr(ctx.msg, "'x'") && strstr(ctx.msg, "1x3x5x5"), "message: %s", ctx.msg);
    /* the symbolic batch dim takes any size but no negative one (the run wrote past its buffers), a rank past
     * PTQ_MAX_DIMS is refused before its dims are read, and so is a tensor in device memory */
    const ptq_tensor refused[] = {{PTQ_DT_FLOAT, 4, {-2, 2, 5, 5}, x, PTQ_MEM_HOST, 0},
                                  {PTQ_DT_FLOAT, PTQ_MAX_DIMS + 1, {1, 2, 5, 5}, x, PTQ_MEM_HOST, 0},
                                  {PTQ_DT_FLOAT, 4, {1, 2, 5, 5}, x, PTQ_MEM_CUDA, 0}};
    const char *const why[] = {"dim 0 is -2, negative", "rank 9 is not in [0, 8]", "host tensors"};
    for (int k = 0; k < 3; k++) {
        ptq_ctx_init(&ctx);
        st = e ? ptq_exec_run(&ctx, e, &refused[k], &y) : PTQ_ERR_INTERNAL;
        CHECK_MSG(st == (k == 2 ? PTQ_ERR_INVALID_ARG : PTQ_ERR_SHAPE) && strstr(ctx.msg, "'x'") &&
                      strstr(ctx.msg, why[k]),
                  "input %d: status %d, message: %s", k, (int)st, ctx.msg);
    }
    ptq_exec_free(e);

    /* a device or math that is no value of its enum is refused, not run as the CPU's FP32 under that number */
    const ptq_exec_params odd[] = {{(ptq_device)7, 0, NULL, NULL, 0, PTQ_MATH_FP32},
                                   {PTQ_DEVICE_CPU, 0, NULL, NULL, 0, (ptq_math)9}};
    for (int k = 0; k < 2; k++) {
        ptq_exec *odd_e = NULL;
        ptq_ctx_init(&ctx);
        st = ptq_exec_create(&ctx, &g, &odd[k], &odd_e);
        CHECK_MSG(st == PTQ_ERR_INVALID_ARG && !odd_e && strstr(ctx.msg, k ? "math 9" : "device 7"),
                  "params %d: status %d, '%s'", k, (int)st, ctx.msg);
        ptq_exec_free(odd_e);
    }
    /* zeroed params run on the CPU, the command's default; the reference backend is asked for by name */
    ptq_exec_params zero;
    memset(&zero, 0, sizeof zero);
    for (int k = 0; k < 2; k++) {
        ptq_exec *ze = NULL;
        zero.device = k ? PTQ_DEVICE_REF : zero.device;
        ptq_ctx_init(&ctx);
        st = ptq_exec_create(&ctx, &g, &zero, &ze);
        CHECK_MSG(st == PTQ_OK && ptq_exec_device(ze) == (k ? PTQ_DEVICE_REF : PTQ_DEVICE_CPU) &&
                      strcmp(ptq_exec_device_name(ze), k ? "ref" : "cpu") == 0,
                  "%s params: status %d, device %s, '%s'", k ? "ref" : "zeroed", (int)st,
                  ze ? ptq_exec_device_name(ze) : "none", ctx.msg);
        ptq_exec_free(ze);
    }

    /* an op ptq does not know names the node, op, domain and opset */
    nodes[1].op_type = "FancyAct";
    nodes[1].domain = "com.example";
    ptq_ctx_init(&ctx);
    st = run_once(&ctx, &g, PTQ_DEVICE_CPU, x, N, y_cpu, NULL);
    CHECK(st == PTQ_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(ctx.msg, "'relu'") && strstr(ctx.msg, "FancyAct") && strstr(ctx.msg, "com.example") &&
                  strstr(ctx.msg, "opset 13"),
              "message: %s", ctx.msg);
    return test_done("test_exec");
}
