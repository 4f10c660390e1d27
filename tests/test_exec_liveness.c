/* Host memory by tensor liveness (runtime/exec.c) on a hand-built chain
 * whose tensors grow stage by stage (h -> Relu -> Add -> Concat with the
 * input): the CPU executor's peak run memory (ptq_exec_peak_bytes), on the
 * first run as on planned ones, stays within what is alive at once at the
 * worst step, far below the sum of all tensors; steady runs allocate
 * nothing; outputs, tapped tensors and ptq_exec_run_from from kept values
 * equal a direct computation, bit for bit; the runner's --max-memory
 * estimate (ptq_exec_live_estimate) is that liveness peak. */
#include <stdlib.h>
#include <string.h>

#include "ptq/runtime.h"
#include "runtime/backend.h"
#include "testlib.h"

/* L stages; h_k has C * (k + 1) channels: r_k = Relu(h_k), m_k = Add(h_k, r_k),
 * h_{k+1} = Concat(m_k, x) on the channels. Values: x, then per stage r, m, h. */
enum { L = 12, C = 2, HW = 8, N = 4, N_VALUES = 1 + 3 * L, N_NODES = 3 * L };
#define V_R(k) (1 + 3 * (k))
#define V_M(k) (2 + 3 * (k))
#define V_H(k) ((k) == 0 ? 0 : 3 * (k)) /* h_0 is x; h_{k+1} = 3 * (k + 1) */

static ptq_value values[N_VALUES];
static ptq_node nodes[N_NODES];
static int node_in[N_NODES][2], node_out[N_NODES];
static const ptq_attr concat_attrs[] = {{.name = "axis", .type = PTQ_ATTR_INT, .i = 1}};
static const int g_inputs[] = {0}, g_outputs[] = {V_H(L)};
static float *ref[N_VALUES]; /* each value's data, [N, channels, HW, HW] */

static int64_t channels(int v)
{
    if (v == 0)
        return C;
    const int k = (v - 1) / 3; /* r_k, m_k, h_{k+1} are v = 1 + 3k, 2 + 3k, 3 + 3k */
    return C * (int64_t)(k + ((v - 1) % 3 == 2 ? 2 : 1));
}

static size_t value_bytes(int v)
{
    return (size_t)(N * channels(v) * HW * HW) * sizeof(float);
}

static void set_value(int v, const char *name, int producer, unsigned flags)
{
    values[v] = (ptq_value){name, PTQ_DT_FLOAT, 4, {-1, channels(v), HW, HW}, NULL, 0, producer, flags};
}

static void set_node(int k, const char *op, int a, int b, int out)
{
    static char names[N_NODES][16];
    snprintf(names[k], sizeof names[k], "%s_%d", op, k);
    node_in[k][0] = a;
    node_in[k][1] = b;
    node_out[k] = out;
    nodes[k] = (ptq_node){names[k], op, "", b < 0 ? 1 : 2, 1, node_in[k], &node_out[k], 0, NULL};
    if (!strcmp(op, "Concat")) {
        nodes[k].n_attrs = 1;
        nodes[k].attrs = concat_attrs;
    }
}

static ptq_graph make_graph(void)
{
    static char names[N_VALUES][16];
    set_value(0, "x", -1, PTQ_VALUE_INPUT);
    for (int k = 0; k < L; k++) {
        snprintf(names[V_R(k)], 16, "r%d", k);
        snprintf(names[V_M(k)], 16, "m%d", k);
        snprintf(names[V_H(k + 1)], 16, "h%d", k + 1);
        set_value(V_R(k), names[V_R(k)], 3 * k, 0);
        set_value(V_M(k), names[V_M(k)], 3 * k + 1, 0);
        set_value(V_H(k + 1), names[V_H(k + 1)], 3 * k + 2, k + 1 == L ? PTQ_VALUE_OUTPUT : 0);
        set_node(3 * k, "Relu", V_H(k), -1, V_R(k));
        set_node(3 * k + 1, "Add", V_H(k), V_R(k), V_M(k));
        set_node(3 * k + 2, "Concat", V_M(k), 0, V_H(k + 1));
    }
    ptq_graph g;
    memset(&g, 0, sizeof g);
    g.name = "chain";
    g.opset = 13;
    g.n_values = N_VALUES;
    g.values = values;
    g.n_nodes = N_NODES;
    g.nodes = nodes;
    g.n_inputs = 1;
    g.inputs = g_inputs;
    g.n_outputs = 1;
    g.outputs = g_outputs;
    return g;
}

/* Every value computed directly (Relu, Add and Concat are exact in float here: no rounding, no subnormals). */
static void compute_ref(void)
{
    const int64_t plane = HW * HW;
    for (int k = 0; k < L; k++) {
        const float *h = ref[V_H(k)];
        float *r = ref[V_R(k)], *m = ref[V_M(k)], *h1 = ref[V_H(k + 1)];
        const int64_t n_el = N * channels(V_R(k)) * plane;
        for (int64_t i = 0; i < n_el; i++) {
            r[i] = h[i] > 0.0f ? h[i] : 0.0f;
            m[i] = h[i] + r[i];
        }
        const int64_t cm = channels(V_M(k)) * plane, cx = C * plane;
        for (int64_t n = 0; n < N; n++) {
            memcpy(h1 + n * (cm + cx), m + n * cm, (size_t)cm * sizeof(float));
            memcpy(h1 + n * (cm + cx) + cm, ref[0] + n * cx, (size_t)cx * sizeof(float));
        }
    }
}

typedef struct tap_check {
    int n_calls, n_wrong;
} tap_check;

/* A tapped tensor holds its value while the tap runs. */
static ptq_status check_tap(void *user, ptq_ctx *ctx, const ptq_graph *g, int node, int value, const ptq_tensor *t)
{
    tap_check *c = user;
    (void)ctx, (void)g, (void)node;
    c->n_calls++;
    if (ptq_tensor_bytes(t) != value_bytes(value) || memcmp(t->data, ref[value], value_bytes(value)))
        c->n_wrong++;
    return PTQ_OK;
}

static int run_is_ref(ptq_exec *e, const ptq_tensor *in, int from)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_tensor out;
    ptq_status st = from < 0 ? ptq_exec_run(&ctx, e, in, &out) : ptq_exec_run_from(&ctx, e, from, &out);
    if (st != PTQ_OK) {
        fprintf(stderr, "run (from %d): %s\n", from, ctx.msg);
        return 0;
    }
    return ptq_tensor_bytes(&out) == value_bytes(V_H(L)) && !memcmp(out.data, ref[V_H(L)], value_bytes(V_H(L)));
}

int main(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    test_rand_seed(11);
    ptq_graph g = make_graph();
    size_t sum = 0, live_peak = 0;
    for (int v = 0; v < N_VALUES; v++) {
        CHECK((ref[v] = malloc(value_bytes(v))) != NULL);
        if (v > 0)
            sum += value_bytes(v);
    }
    test_fill_uniform(ref[0], N * C * HW * HW, -1.5f, 1.5f);
    compute_ref();
    for (int k = 0; k < L; k++) { /* at Add k: h_k (x for k = 0, the caller's), r_k and m_k */
        size_t at_add = (k ? value_bytes(V_H(k)) : 0) + value_bytes(V_R(k)) + value_bytes(V_M(k));
        size_t at_concat = value_bytes(V_M(k)) + value_bytes(V_H(k + 1));
        live_peak = at_add > live_peak ? at_add : live_peak;
        live_peak = at_concat > live_peak ? at_concat : live_peak;
    }
    const size_t slack = 3 * 256; /* the plan rounds each of the (at most 3) buffers alive at once to 256 bytes */

    ptq_exec_params p = {PTQ_DEVICE_CPU, 0, NULL, NULL, 0, PTQ_MATH_FP32};
    ptq_exec *e = NULL;
    CHECK(ptq_exec_create(&ctx, &g, &p, &e) == PTQ_OK);
    if (!e)
        return test_done("test_exec_liveness");
    ptq_tensor in = {PTQ_DT_FLOAT, 4, {N, C, HW, HW}, ref[0], PTQ_MEM_HOST, 0};

    /* the first run, unplanned, holds what is alive at once and no more */
    CHECK_MSG(run_is_ref(e, &in, -1), "the first run's output differs from the direct computation");
    const size_t first = ptq_exec_peak_bytes(e, PTQ_MEM_HOST);
    CHECK_MSG(first >= live_peak && first <= live_peak + slack,
              "first run: peak %zu bytes, alive at once %zu, all tensors %zu", first, live_peak, sum);
    /* the planned runs: one arena within the same bound, then no allocation */
    CHECK(run_is_ref(e, &in, -1));
    const int64_t allocs = ptq_exec_n_allocs(e);
    for (int i = 0; i < 3; i++)
        CHECK_MSG(run_is_ref(e, &in, -1), "planned run %d differs from the direct computation", i);
    const size_t planned = ptq_exec_peak_bytes(e, PTQ_MEM_HOST);
    CHECK_MSG(ptq_exec_n_allocs(e) == allocs, "steady runs allocated %lld times",
              (long long)(ptq_exec_n_allocs(e) - allocs));
    CHECK_MSG(planned <= live_peak + slack, "planned: peak %zu bytes, alive at once %zu", planned, live_peak);
    CHECK_MSG(4 * planned < sum, "peak %zu bytes is not well below the %zu of all tensors", planned, sum);
    CHECK(ptq_exec_peak_bytes(e, PTQ_MEM_CUDA) == 0);
    /* the runner's estimate is the same liveness peak, the graph input (read by every Concat) counted too */
    const double est = ptq_exec_live_estimate(e, N);
    CHECK_MSG(est == (double)(live_peak + value_bytes(0)), "estimate %.0f, alive %zu + the input %zu", est,
              live_peak, value_bytes(0));

    /* taps see every produced tensor intact, and change nothing */
    tap_check tc = {0, 0};
    CHECK(ptq_exec_add_tap(&ctx, e, check_tap, &tc) == PTQ_OK);
    CHECK(run_is_ref(e, &in, -1) && run_is_ref(e, &in, -1));
    CHECK_MSG(tc.n_calls == 2 * N_NODES && tc.n_wrong == 0, "taps: %d calls, %d tensors wrong", tc.n_calls,
              tc.n_wrong);
    ptq_exec_remove_tap(e, check_tap, &tc);
    CHECK(ptq_exec_n_allocs(e) == allocs && ptq_exec_peak_bytes(e, PTQ_MEM_HOST) == planned);

    /* kept values survive the plan's reuse: each suffix from them equals the full run */
    const int starts[] = {N_NODES - 1, 2 * L, L + 1, 1};
    for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++)
        CHECK(ptq_exec_keep_for(&ctx, e, starts[i]) == PTQ_OK);
    CHECK(run_is_ref(e, &in, -1));
    for (int rep = 0; rep < 2; rep++)
        for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++)
            CHECK_MSG(run_is_ref(e, NULL, starts[i]), "run_from(%d) differs from the direct computation", starts[i]);
    CHECK_MSG(ptq_exec_peak_bytes(e, PTQ_MEM_HOST) <= live_peak + slack, "with kept values: peak %zu bytes",
              ptq_exec_peak_bytes(e, PTQ_MEM_HOST));

    printf("test_exec_liveness: %d tensors, %zu bytes in all, %zu alive at once; executor peak %zu bytes on the "
           "first run, %zu planned; estimate %.0f; %lld allocations, none in steady runs\n",
           N_VALUES - 1, sum, live_peak, first, planned, est, (long long)allocs);
    ptq_exec_free(e);
    for (int v = 0; v < N_VALUES; v++)
        free(ref[v]);
    return test_done("test_exec_liveness");
}
