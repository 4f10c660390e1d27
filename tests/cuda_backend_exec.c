/* The cuda backend through ptq_backend: memory round trips, then hand-built
 * single nodes (Conv, Gemm, MatMul, activations, elementwise, Pow, Sqrt,
 * pools, BN, Softmax, ReduceMean, Where, Expand, Split, Slice, Gather, copies) run by
 * supports()/run() against the op's run_ref on the host, and nodes it must
 * decline. Exit 77 without a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptq/runtime.h"
#include "runtime/backend.h"
#include "testlib.h"

static ptq_ctx ctx;
static ptq_backend *be;

static ptq_attr attr_int(const char *name, int64_t v)
{
    ptq_attr a = {.name = name, .type = PTQ_ATTR_INT, .i = v};
    return a;
}

static ptq_attr attr_float(const char *name, float v)
{
    ptq_attr a = {.name = name, .type = PTQ_ATTR_FLOAT, .f = v};
    return a;
}

static ptq_attr attr_ints(const char *name, const int64_t *v, int64_t n)
{
    ptq_attr a = {.name = name, .type = PTQ_ATTR_INTS, .n = n, .ints = v};
    return a;
}

/* A host float tensor of the given shape, uniform in [lo, hi). */
static ptq_tensor host_float(int ndim, const int64_t *dims, float lo, float hi)
{
    ptq_tensor t = {PTQ_DT_FLOAT, ndim, {0}, NULL, PTQ_MEM_HOST, 0};
    memcpy(t.dims, dims, (size_t)ndim * sizeof *dims);
    t.cap_bytes = ptq_tensor_bytes(&t);
    t.data = malloc(t.cap_bytes ? t.cap_bytes : 1);
    test_fill_uniform(t.data, ptq_tensor_numel(&t), lo, hi);
    return t;
}

/* A host int64 / bool tensor holding v[0..n). */
static ptq_tensor host_typed(ptq_dtype dt, int ndim, const int64_t *dims, const void *v)
{
    ptq_tensor t = {dt, ndim, {0}, NULL, PTQ_MEM_HOST, 0};
    memcpy(t.dims, dims, (size_t)ndim * sizeof *dims);
    t.cap_bytes = ptq_tensor_bytes(&t);
    t.data = malloc(t.cap_bytes ? t.cap_bytes : 1);
    memcpy(t.data, v, t.cap_bytes);
    return t;
}

typedef struct node_case {
    const char *label;
    const char *op_type;
    int64_t opset;
    int n_attrs;
    ptq_attr attrs[8];
    int n_in;
    ptq_tensor in[6]; /* data NULL: an omitted optional input */
    int n_out;
    float rtol, atol;
} node_case;

/* A one-node graph around c: inputs are values 0..n_in-1, outputs follow. */
typedef struct one_node {
    ptq_graph g;
    ptq_node n;
    int in_idx[6], out_idx[4];
} one_node;

static void one_node_init(one_node *o, const node_case *c)
{
    memset(o, 0, sizeof *o);
    o->g.opset = c->opset;
    o->n.name = c->label;
    o->n.op_type = c->op_type;
    o->n.domain = "";
    o->n.n_inputs = c->n_in;
    o->n.n_outputs = c->n_out;
    for (int i = 0; i < c->n_in; i++)
        o->in_idx[i] = c->in[i].data ? i : -1;
    for (int i = 0; i < c->n_out; i++)
        o->out_idx[i] = c->n_in + i;
    o->n.inputs = o->in_idx;
    o->n.outputs = o->out_idx;
    o->n.n_attrs = c->n_attrs;
    o->n.attrs = c->attrs;
}

/* Runs c on the host (run_ref) and through the backend; compares every output. */
static void run_case(node_case *c)
{
    one_node o;
    one_node_init(&o, c);
    const ptq_op_def *op = ptq_op_find("", c->op_type);
    ptq_tensor h_out[4], d_in[6], d_out[4];
    const ptq_tensor *h_in_ptr[6] = {0}, *d_in_ptr[6] = {0};
    ptq_tensor *h_out_ptr[4] = {0}, *d_out_ptr[4] = {0};
    ptq_op_io hio = {&o.g, &o.n, c->n_in, c->n_out, h_in_ptr, h_out_ptr, op, 0, 0};
    ptq_op_io dio = {&o.g, &o.n, c->n_in, c->n_out, d_in_ptr, d_out_ptr, op, 0, 0};
    memset(h_out, 0, sizeof h_out);
    if (!op) {
        CHECK_MSG(0, "%s: op %s not in the op table", c->label, c->op_type);
        return;
    }
    for (int i = 0; i < c->n_in; i++)
        hio.in[i] = c->in[i].data ? &c->in[i] : NULL;
    for (int i = 0; i < c->n_out; i++)
        hio.out[i] = &h_out[i];
    ptq_status st = op->infer(&ctx, &hio);
    CHECK_MSG(st == PTQ_OK, "%s: infer: %s", c->label, ctx.msg);
    if (st != PTQ_OK)
        return;
    for (int i = 0; i < c->n_out; i++) {
        h_out[i].cap_bytes = ptq_tensor_bytes(&h_out[i]);
        h_out[i].data = calloc(1, h_out[i].cap_bytes + 1);
    }
    st = op->run_ref(&ctx, &hio);
    CHECK_MSG(st == PTQ_OK, "%s: run_ref: %s", c->label, ctx.msg);

    /* device side: inputs uploaded unless the op reads them on the host; outputs poisoned */
    for (int i = 0; i < c->n_in; i++) {
        dio.in[i] = NULL;
        if (!c->in[i].data)
            continue;
        d_in[i] = c->in[i];
        if (!ptq_op_host_input(op, i)) {
            size_t n_bytes = ptq_tensor_bytes(&c->in[i]);
            CHECK(be->alloc(be, &ctx, n_bytes, &d_in[i].data) == PTQ_OK);
            CHECK(be->upload(be, &ctx, d_in[i].data, c->in[i].data, n_bytes) == PTQ_OK);
            d_in[i].mem = PTQ_MEM_CUDA;
        }
        dio.in[i] = &d_in[i];
    }
    for (int i = 0; i < c->n_out; i++) {
        size_t n_bytes = h_out[i].cap_bytes;
        unsigned char *poison = malloc(n_bytes + 1);
        memset(poison, 0xFF, n_bytes + 1);
        d_out[i] = h_out[i];
        d_out[i].mem = PTQ_MEM_CUDA;
        CHECK(be->alloc(be, &ctx, n_bytes, &d_out[i].data) == PTQ_OK);
        CHECK(be->upload(be, &ctx, d_out[i].data, poison, n_bytes) == PTQ_OK);
        dio.out[i] = &d_out[i];
        free(poison);
    }
    int supported = be->supports(be, &dio);
    CHECK_MSG(supported, "%s: the cuda backend declines it", c->label);
    int ok = supported && st == PTQ_OK;
    if (ok) {
        st = be->run(be, &ctx, &dio);
        CHECK_MSG(st == PTQ_OK, "%s: run: %s (%s)", c->label, ctx.msg, ctx.where);
        ok = st == PTQ_OK;
    }
    for (int i = 0; ok && i < c->n_out; i++) {
        size_t n_bytes = h_out[i].cap_bytes;
        void *got = malloc(n_bytes + 1);
        st = be->download(be, &ctx, got, d_out[i].data, n_bytes);
        CHECK_MSG(st == PTQ_OK, "%s: download: %s", c->label, ctx.msg);
        char label[160];
        snprintf(label, sizeof label, "%s output %d", c->label, i);
        if (st != PTQ_OK)
            ok = 0;
        else if (h_out[i].dtype == PTQ_DT_FLOAT)
            ok = test_close(label, got, h_out[i].data, ptq_tensor_numel(&h_out[i]), c->rtol, c->atol);
        else {
            ok = memcmp(got, h_out[i].data, n_bytes) == 0;
            CHECK_MSG(ok, "%s: bytes differ", label);
        }
        free(got);
    }
    char dims[96];
    printf("  %-44s -> %-16s %s\n", c->label, ptq_dims_str(h_out[0].dims, h_out[0].ndim, dims, sizeof dims),
           ok ? "ok" : "FAIL");
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i].data && d_in[i].mem == PTQ_MEM_CUDA)
            be->release(be, d_in[i].data);
    for (int i = 0; i < c->n_out; i++) {
        be->release(be, d_out[i].data);
        free(h_out[i].data);
    }
}

/* c must be declined by supports() after a successful infer; supports() sees the inputs it does not read on the
 * host as the GPU's unless on_host (it reads no data but host inputs). */
static void expect_declined(node_case *c, int on_host)
{
    one_node o;
    one_node_init(&o, c);
    const ptq_op_def *op = ptq_op_find("", c->op_type);
    ptq_tensor h_out[4], seen[6];
    const ptq_tensor *in_ptr[6] = {0};
    ptq_tensor *out_ptr[4] = {0};
    ptq_op_io io = {&o.g, &o.n, c->n_in, c->n_out, in_ptr, out_ptr, op, 0, 0};
    memset(h_out, 0, sizeof h_out);
    for (int i = 0; i < c->n_in; i++)
        io.in[i] = c->in[i].data ? &c->in[i] : NULL;
    for (int i = 0; i < c->n_out; i++)
        io.out[i] = &h_out[i];
    ptq_status st = op ? op->infer(&ctx, &io) : PTQ_ERR_UNSUPPORTED;
    CHECK_MSG(st == PTQ_OK, "%s: infer: %s", c->label, ctx.msg);
    for (int i = 0; i < c->n_in; i++)
        if (io.in[i] && !on_host && !ptq_op_host_input(op, i)) {
            seen[i] = c->in[i];
            seen[i].mem = PTQ_MEM_CUDA;
            io.in[i] = &seen[i];
        }
    int declined = st == PTQ_OK && !be->supports(be, &io);
    CHECK_MSG(declined, "%s: the cuda backend should decline it", c->label);
    printf("  %-44s declined: %s\n", c->label, declined ? "ok" : "FAIL");
}

static void free_case(node_case *c)
{
    for (int i = 0; i < c->n_in; i++)
        free(c->in[i].data);
}

static void test_memory(void)
{
    float host[1000], back[1000];
    void *a = NULL, *b = NULL, *empty = NULL;
    for (int i = 0; i < 1000; i++)
        host[i] = (float)i * 0.5f - 7.0f;
    CHECK(be->mem == PTQ_MEM_CUDA);
    CHECK_MSG(strncmp(be->name, "cuda (", 6) == 0, "name '%s'", be->name);
    CHECK(be->alloc(be, &ctx, sizeof host, &a) == PTQ_OK);
    CHECK(be->alloc(be, &ctx, sizeof host, &b) == PTQ_OK);
    CHECK(be->alloc(be, &ctx, 0, &empty) == PTQ_OK && empty != NULL);
    CHECK(be->upload(be, &ctx, a, host, sizeof host) == PTQ_OK);
    CHECK(be->copy(be, &ctx, b, a, sizeof host) == PTQ_OK);
    memset(back, 0, sizeof back);
    CHECK(be->download(be, &ctx, back, b, sizeof back) == PTQ_OK);
    CHECK(memcmp(back, host, sizeof host) == 0);
    CHECK(be->sync(be, &ctx) == PTQ_OK);
    be->release(be, a);
    be->release(be, b);
    be->release(be, empty);
    be->release(be, NULL);
    ptq_backend *bad = NULL;
    ptq_ctx c2;
    ptq_ctx_init(&c2);
    CHECK(ptq_backend_cuda_create(&c2, 999, &bad) == PTQ_ERR_NO_DEVICE && bad == NULL);
    printf("  memory round trip, copy, sync, bad GPU index (\"%s\"): %s\n", c2.msg,
           ptq_test_failures ? "FAIL" : "ok");
}

/* A Gather run on the GPU checks its indices as the CPU does: index 3 of an axis of 3 fails, naming the node. */
static void test_gather_bad_index(void)
{
    const int64_t dims[] = {3, 4}, s1[] = {1}, bad[] = {3};
    node_case c = {"Gather index 3 of 3", "Gather", 13, 1, {attr_int("axis", 0)}, 2,
                   {host_float(2, dims, -1, 1), host_typed(PTQ_DT_INT64, 1, s1, bad)}, 1, 0, 0};
    one_node o;
    one_node_init(&o, &c);
    const ptq_op_def *op = ptq_op_find("", "Gather");
    ptq_tensor d_in[2], y = {0};
    const ptq_tensor *in_ptr[2] = {&d_in[0], &d_in[1]};
    ptq_tensor *out_ptr[1] = {&y};
    ptq_op_io io = {&o.g, &o.n, 2, 1, in_ptr, out_ptr, op, 0, 0};
    d_in[0] = c.in[0];
    d_in[1] = c.in[1];
    ptq_status st = op->infer(&ctx, &io);
    CHECK_MSG(st == PTQ_OK, "%s: infer: %s", c.label, ctx.msg);
    for (int i = 0; i < 2; i++) {
        size_t n_bytes = ptq_tensor_bytes(&c.in[i]);
        CHECK(be->alloc(be, &ctx, n_bytes, &d_in[i].data) == PTQ_OK);
        CHECK(be->upload(be, &ctx, d_in[i].data, c.in[i].data, n_bytes) == PTQ_OK);
        d_in[i].mem = PTQ_MEM_CUDA;
    }
    y.mem = PTQ_MEM_CUDA;
    CHECK(be->alloc(be, &ctx, 16, &y.data) == PTQ_OK);
    int supported = be->supports(be, &io);
    ptq_ctx_init(&ctx);
    st = supported ? be->run(be, &ctx, &io) : PTQ_OK;
    CHECK_MSG(supported && st == PTQ_ERR_DATA && strstr(ctx.msg, "index 3 is out of range") &&
                  strstr(ctx.msg, "Gather index 3 of 3"),
              "supported %d, status %d, '%s'", supported, (int)st, ctx.msg);
    printf("  %-44s -> fails: %s\n", c.label, st == PTQ_ERR_DATA ? ctx.msg : "FAIL");
    ptq_ctx_init(&ctx);
    for (int i = 0; i < 2; i++)
        be->release(be, d_in[i].data);
    be->release(be, y.data);
    free_case(&c);
}

int main(void)
{
    char why[256];
    if (!ptq_cuda_available(why, sizeof why)) {
        printf("cuda_backend_exec: skipped: no GPU: %s\n", why);
        return PTQ_TEST_SKIP;
    }
    ptq_ctx_init(&ctx);
    if (ptq_backend_cuda_create(&ctx, 0, &be) != PTQ_OK) {
        fprintf(stderr, "cuda_backend_exec: %s (%s)\n", ctx.msg, ctx.where);
        return 1;
    }
    printf("cuda_backend_exec: backend %s, each node against its run_ref\n", be->name);
    test_memory();
    test_rand_seed(77);

    static const int64_t k33[] = {3, 3}, k22[] = {2, 2}, s22[] = {2, 2}, p1111[] = {1, 1, 1, 1},
                         p0101[] = {0, 1, 0, 1}, perm0231[] = {0, 2, 3, 1};
    const int64_t x4[] = {2, 8, 9, 9}, w4[] = {16, 8, 3, 3}, b1[] = {16}, wdw[] = {8, 1, 3, 3}, c8[] = {8};
    const int64_t a2[] = {5, 12}, bt2[] = {7, 12}, c1[] = {7}, c2[] = {5, 7}, bn2[] = {12, 7}, r4[] = {2, 3, 4, 5};
    const int64_t mm_a[] = {2, 3, 4, 5}, mm_b[] = {5, 6}, mm_a3[] = {2, 4, 5}, mm_b3[] = {2, 5, 3}, b5[] = {5};
    const int64_t s1[] = {1}, c31[] = {3, 1, 1}, gap[] = {4, 16, 7, 7}, sm[] = {3, 10}, cc1[] = {2, 3, 4},
                  cc2[] = {2, 5, 4}, shape2[] = {2};
    const int64_t reshape_to[] = {6, -1};
    const unsigned char no[] = {0}, cond5[] = {1, 0, 1, 1, 0};
    const float lo[] = {-0.25f}, hi[] = {0.5f}, two[] = {2.0f}, half[] = {0.5f};
    /* the transformer and opset-13 convnext ops (Pow 5 ulp, ReduceMean summed in double: 1 ulp) */
    const int64_t pw_a[] = {7, 1, 33}, pw_b[] = {5, 1}, rm4[] = {2, 7, 5, 33}, rm1[] = {2, 7, 1, 5}, c151[] = {1, 5, 1};
    const int64_t v33[] = {33}, e71[] = {7, 1}, e_to[] = {2, 7, 33}, sp3[] = {3, 7, 33}, sp_sizes[] = {1, 2, 4};
    const int64_t ax_last[] = {-1}, ax_12[] = {1, 2}, ax_13[] = {1, 3}, ax_1[] = {1}, three[] = {3};
    const int64_t sl3[] = {3, 7, 24}, sl_8[] = {8}, sl_16[] = {16}, sl_s2[] = {6, 20}, sl_e2[] = {0, 2}, two2[] = {2};
    const int64_t sl_k2[] = {-2, -3}, sl_i2[] = {2, 5}, sl_i[] = {3, -8, 0, 41, 7, 1, 2, 99, -1, 6}, sl_1[] = {1};
    const int64_t sl_4[] = {4}, sl_09s[] = {0, 1}, sl_09e[] = {3, 21}, sl_09a[] = {0, 2};
    const int64_t g_idx[] = {-1, 0}, two2x2[] = {2, 2};
    const int32_t g_idx32[] = {23, 0, -24, 5};
    const int64_t ax_02[] = {0, 2}, to_25[] = {2, 5};
    node_case cases[] = {
        {"Conv 3x3 pad 1 stride 2 bias", "Conv", 13, 3,
         {attr_ints("kernel_shape", k33, 2), attr_ints("pads", p1111, 4), attr_ints("strides", s22, 2)}, 3,
         {host_float(4, x4, -1, 1), host_float(4, w4, -0.1f, 0.1f), host_float(1, b1, -1, 1)}, 1, 1e-4f, 1e-5f},
        {"Conv depthwise group 8 no bias", "Conv", 13, 2, {attr_ints("pads", p1111, 4), attr_int("group", 8)}, 2,
         {host_float(4, x4, -1, 1), host_float(4, wdw, -0.3f, 0.3f)}, 1, 1e-4f, 1e-5f},
        {"Gemm transB C[N]", "Gemm", 13, 1, {attr_int("transB", 1)}, 3,
         {host_float(2, a2, -1, 1), host_float(2, bt2, -0.3f, 0.3f), host_float(1, c1, -1, 1)}, 1, 1e-4f, 1e-5f},
        {"Gemm alpha beta C[M,N]", "Gemm", 13, 2, {attr_float("alpha", 0.5f), attr_float("beta", -2.0f)}, 3,
         {host_float(2, a2, -1, 1), host_float(2, bn2, -0.3f, 0.3f), host_float(2, c2, -1, 1)}, 1, 1e-4f, 1e-5f},
        {"Gemm no C", "Gemm", 13, 0, {{0}}, 2, {host_float(2, a2, -1, 1), host_float(2, bn2, -0.3f, 0.3f)}, 1, 1e-4f,
         1e-5f},
        {"MatMul [2,3,4,5] x [5,6]", "MatMul", 13, 0, {{0}}, 2,
         {host_float(4, mm_a, -1, 1), host_float(2, mm_b, -1, 1)}, 1, 1e-4f, 1e-5f},
        {"MatMul [2,4,5] x [2,5,3]", "MatMul", 13, 0, {{0}}, 2,
         {host_float(3, mm_a3, -1, 1), host_float(3, mm_b3, -1, 1)}, 1, 1e-4f, 1e-5f},
        {"MatMul [5] x [5,6] (1-D A)", "MatMul", 13, 0, {{0}}, 2,
         {host_float(1, b5, -1, 1), host_float(2, mm_b, -1, 1)}, 1, 1e-4f, 1e-5f},
        {"Relu", "Relu", 13, 0, {{0}}, 1, {host_float(4, r4, -1, 1)}, 1, 0, 1e-30f},
        {"LeakyRelu alpha 0.2", "LeakyRelu", 13, 1, {attr_float("alpha", 0.2f)}, 1, {host_float(4, r4, -1, 1)}, 1, 0,
         1e-30f},
        {"Clip opset 13 host bounds", "Clip", 13, 0, {{0}}, 3,
         {host_float(4, r4, -1, 1), host_typed(PTQ_DT_FLOAT, 0, s1, lo), host_typed(PTQ_DT_FLOAT, 0, s1, hi)}, 1, 0,
         1e-30f},
        {"Clip opset 6 attributes", "Clip", 6, 2, {attr_float("min", -0.1f), attr_float("max", 0.3f)}, 1,
         {host_float(4, r4, -1, 1)}, 1, 0, 1e-30f},
        {"Sigmoid", "Sigmoid", 13, 0, {{0}}, 1, {host_float(4, r4, -8, 8)}, 1, 1e-6f, 1e-7f},
        {"HardSwish", "HardSwish", 14, 0, {{0}}, 1, {host_float(4, r4, -5, 5)}, 1, 0, 1e-30f},
        {"Tanh", "Tanh", 13, 0, {{0}}, 1, {host_float(4, r4, -3, 3)}, 1, 1e-6f, 1e-7f},
        {"Add broadcast [3,1,1]", "Add", 13, 0, {{0}}, 2, {host_float(4, r4, -1, 1), host_float(3, c31, -1, 1)}, 1, 0,
         1e-30f},
        {"Mul broadcast scalar", "Mul", 13, 0, {{0}}, 2, {host_float(4, r4, -1, 1), host_float(0, s1, -2, 2)}, 1, 0,
         1e-30f},
        {"Div same shape", "Div", 13, 0, {{0}}, 2, {host_float(4, r4, -1, 1), host_float(4, r4, 0.5f, 2)}, 1, 0,
         1e-30f},
        {"GlobalAveragePool", "GlobalAveragePool", 13, 0, {{0}}, 1, {host_float(4, gap, -1, 2)}, 1, 1e-6f, 1e-7f},
        {"MaxPool 3x3 s2 p1", "MaxPool", 13, 3,
         {attr_ints("kernel_shape", k33, 2), attr_ints("strides", s22, 2), attr_ints("pads", p1111, 4)}, 1,
         {host_float(4, x4, -1, 1)}, 1, 0, 1e-30f},
        {"AveragePool 2x2 ceil count_include_pad", "AveragePool", 13, 5,
         {attr_ints("kernel_shape", k22, 2), attr_ints("strides", s22, 2), attr_ints("pads", p0101, 4),
          attr_int("ceil_mode", 1), attr_int("count_include_pad", 1)},
         1, {host_float(4, x4, -1, 1)}, 1, 1e-6f, 1e-7f},
        {"BatchNormalization", "BatchNormalization", 15, 1, {attr_float("epsilon", 1e-3f)}, 5,
         {host_float(4, x4, -2, 2), host_float(1, c8, -1, 1), host_float(1, c8, -1, 1), host_float(1, c8, -1, 1),
          host_float(1, c8, 0.1f, 2)},
         1, 1e-5f, 1e-6f},
        {"Softmax opset 13", "Softmax", 13, 0, {{0}}, 1, {host_float(2, sm, -5, 5)}, 1, 1e-5f, 1e-7f},
        {"Softmax opset 11 axis 1 of 4-D", "Softmax", 11, 0, {{0}}, 1, {host_float(4, r4, -5, 5)}, 1, 1e-5f, 1e-7f},
        {"Flatten", "Flatten", 13, 0, {{0}}, 1, {host_float(4, x4, -1, 1)}, 1, 0, 1e-30f},
        {"Reshape host shape", "Reshape", 13, 0, {{0}}, 2,
         {host_float(4, r4, -1, 1), host_typed(PTQ_DT_INT64, 1, shape2, reshape_to)}, 1, 0, 1e-30f},
        {"Identity", "Identity", 13, 0, {{0}}, 1, {host_float(4, r4, -1, 1)}, 1, 0, 1e-30f},
        {"Dropout with mask, training false", "Dropout", 13, 0, {{0}}, 3,
         {host_float(4, r4, -1, 1), {0}, host_typed(PTQ_DT_BOOL, 0, s1, no)}, 2, 0, 1e-30f},
        {"Transpose perm 0,2,3,1", "Transpose", 13, 1, {attr_ints("perm", perm0231, 4)}, 1,
         {host_float(4, r4, -1, 1)}, 1, 0, 1e-30f},
        {"Concat axis 1", "Concat", 13, 1, {attr_int("axis", 1)}, 2,
         {host_float(3, cc1, -1, 1), host_float(3, cc2, -1, 1)}, 1, 0, 1e-30f},
        {"Pow exponent 2 (scalar)", "Pow", 13, 0, {{0}}, 2,
         {host_float(4, r4, -3, 3), host_typed(PTQ_DT_FLOAT, 0, s1, two)}, 1, 1e-6f, 1e-30f},
        {"Pow exponent 0.5 [1]", "Pow", 13, 0, {{0}}, 2,
         {host_float(4, r4, 0, 9), host_typed(PTQ_DT_FLOAT, 1, s1, half)}, 1, 1e-6f, 1e-30f},
        {"Pow [7,1,33] ^ [5,1]", "Pow", 13, 0, {{0}}, 2, {host_float(3, pw_a, 0.1f, 4), host_float(2, pw_b, -3, 3)},
         1, 1e-6f, 1e-30f},
        {"Sqrt", "Sqrt", 13, 0, {{0}}, 1, {host_float(4, r4, 0, 50)}, 1, 0, 1e-30f},
        {"ReduceMean axes -1 keepdims 1", "ReduceMean", 13, 1, {attr_ints("axes", ax_last, 1)}, 1,
         {host_float(4, rm4, -2, 3)}, 1, 1e-6f, 1e-7f},
        {"ReduceMean axes 1,2 keepdims 0", "ReduceMean", 13, 2, {attr_ints("axes", ax_12, 2), attr_int("keepdims", 0)},
         1, {host_float(4, rm4, -2, 3)}, 1, 1e-6f, 1e-7f},
        {"ReduceMean axes 1,3 around a size-1 axis", "ReduceMean", 13, 1, {attr_ints("axes", ax_13, 2)}, 1,
         {host_float(4, rm1, -2, 3)}, 1, 1e-6f, 1e-7f},
        {"ReduceMean opset 18 axes input 1 keepdims 0", "ReduceMean", 18, 1, {attr_int("keepdims", 0)}, 2,
         {host_float(4, rm4, -2, 3), host_typed(PTQ_DT_INT64, 1, s1, ax_1)}, 1, 1e-6f, 1e-7f},
        {"ReduceMean opset 18 no axes: all", "ReduceMean", 18, 0, {{0}}, 1, {host_float(4, rm4, -2, 3)}, 1, 1e-6f,
         1e-7f},
        {"ReduceMean noop_with_empty_axes", "ReduceMean", 18, 1, {attr_int("noop_with_empty_axes", 1)}, 1,
         {host_float(4, r4, -2, 3)}, 1, 0, 1e-30f},
        {"Where cond [1,5,1] x [7,1,33] y [33]", "Where", 13, 0, {{0}}, 3,
         {host_typed(PTQ_DT_BOOL, 3, c151, cond5), host_float(3, pw_a, -1, 1), host_float(1, v33, 2, 3)}, 1, 0,
         1e-30f},
        {"Expand [7,1] to [2,7,33]", "Expand", 13, 0, {{0}}, 2,
         {host_float(2, e71, -1, 1), host_typed(PTQ_DT_INT64, 1, three, e_to)}, 1, 0, 1e-30f},
        {"Split axis 1 sizes 1,2,4", "Split", 13, 1, {attr_int("axis", 1)}, 2,
         {host_float(3, sp3, -1, 1), host_typed(PTQ_DT_INT64, 1, three, sp_sizes)}, 3, 0, 1e-30f},
        {"Split opset 18 num_outputs 3 axis -2", "Split", 18, 2, {attr_int("axis", -2), attr_int("num_outputs", 3)},
         1, {host_float(3, sp3, -1, 1)}, 3, 0, 1e-30f},
        {"Slice 8:16 of the last axis (a 2-D copy)", "Slice", 13, 0, {{0}}, 4,
         {host_float(3, sl3, -1, 1), host_typed(PTQ_DT_INT64, 1, sl_1, sl_8), host_typed(PTQ_DT_INT64, 1, sl_1, sl_16),
          host_typed(PTQ_DT_INT64, 1, sl_1, ax_last)},
         1, 0, 1e-30f},
        {"Slice axes 1,2 steps -2,-3 (the gather)", "Slice", 13, 0, {{0}}, 5,
         {host_float(3, sl3, -1, 1), host_typed(PTQ_DT_INT64, 1, two2, sl_s2), host_typed(PTQ_DT_INT64, 1, two2, sl_e2),
          host_typed(PTQ_DT_INT64, 1, two2, ax_12), host_typed(PTQ_DT_INT64, 1, two2, sl_k2)},
         1, 0, 1e-30f},
        {"Slice int64 [2,5] 1:4 of axis 1", "Slice", 13, 0, {{0}}, 4,
         {host_typed(PTQ_DT_INT64, 2, sl_i2, sl_i), host_typed(PTQ_DT_INT64, 1, sl_1, sl_1),
          host_typed(PTQ_DT_INT64, 1, sl_1, sl_4), host_typed(PTQ_DT_INT64, 1, sl_1, ax_1)},
         1, 0, 0},
        {"Gather scalar index 1 of axis 0 (packed q, k, v)", "Gather", 13, 1, {attr_int("axis", 0)}, 2,
         {host_float(3, sl3, -1, 1), host_typed(PTQ_DT_INT64, 0, s1, sl_1)}, 1, 0, 1e-30f},
        {"Gather indices [2] -1,0 of axis 1", "Gather", 13, 1, {attr_int("axis", 1)}, 2,
         {host_float(3, sl3, -1, 1), host_typed(PTQ_DT_INT64, 1, two2, g_idx)}, 1, 0, 1e-30f},
        {"Gather int32 indices [2,2] of axis -1", "Gather", 13, 1, {attr_int("axis", -1)}, 2,
         {host_float(3, sl3, -1, 1), host_typed(PTQ_DT_INT32, 2, two2x2, g_idx32)}, 1, 0, 1e-30f},
        {"Slice opset 9 attributes", "Slice", 9, 3,
         {attr_ints("starts", sl_09s, 2), attr_ints("ends", sl_09e, 2), attr_ints("axes", sl_09a, 2)}, 1,
         {host_float(3, sl3, -1, 1)}, 1, 0, 1e-30f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_case(&cases[i]);
        free_case(&cases[i]);
    }

    const int64_t i64_vals[2] = {4, -9};
    const int32_t i32_vals[5] = {-3, 7, 0, 2, 9};
    const int64_t mm_mixa[] = {2, 1, 3, 4}, mm_mixb[] = {1, 5, 4, 2};
    node_case declined[] = {
        {"Add on int64", "Add", 13, 0, {{0}}, 2,
         {host_typed(PTQ_DT_INT64, 1, shape2, i64_vals), host_typed(PTQ_DT_INT64, 1, s1, i64_vals)}, 1, 0, 0},
        {"Clip on int32", "Clip", 13, 0, {{0}}, 1, {host_typed(PTQ_DT_INT32, 1, b5, i32_vals)}, 1, 0, 0},
        {"MatMul mixed batch broadcast", "MatMul", 13, 0, {{0}}, 2,
         {host_float(4, mm_mixa, -1, 1), host_float(4, mm_mixb, -1, 1)}, 1, 0, 0},
        {"Add opset 6 with broadcast attr", "Add", 6, 1, {attr_int("broadcast", 1)}, 2,
         {host_float(4, r4, -1, 1), host_float(1, b5, -1, 1)}, 1, 0, 0},
        {"ReduceMean axes 0,2: not adjacent", "ReduceMean", 13, 1, {attr_ints("axes", ax_02, 2)}, 1,
         {host_float(4, r4, -1, 1)}, 1, 0, 0},
        {"Where on int64", "Where", 13, 0, {{0}}, 3,
         {host_typed(PTQ_DT_BOOL, 0, s1, cond5), host_typed(PTQ_DT_INT64, 1, shape2, i64_vals),
          host_typed(PTQ_DT_INT64, 1, s1, i64_vals)},
         1, 0, 0},
        {"Expand on int32", "Expand", 13, 0, {{0}}, 2,
         {host_typed(PTQ_DT_INT32, 1, b5, i32_vals), host_typed(PTQ_DT_INT64, 1, shape2, to_25)}, 1, 0, 0},
    };
    for (size_t i = 0; i < sizeof declined / sizeof declined[0]; i++) {
        expect_declined(&declined[i], 0);
        free_case(&declined[i]);
    }
    /* a shape computation: integers already on the host stay there, though the GPU could concatenate them */
    node_case shape_concat = {
        "Concat of int64 on the host", "Concat", 13, 1, {attr_int("axis", 0)}, 2,
        {host_typed(PTQ_DT_INT64, 1, shape2, i64_vals), host_typed(PTQ_DT_INT64, 1, s1, i64_vals)}, 1, 0, 0};
    expect_declined(&shape_concat, 1);
    free_case(&shape_concat);
    test_gather_bad_index();
    CHECK_MSG(be->sync(be, &ctx) == PTQ_OK, "%s", ctx.msg);
    ptq_backend_free(be);
    return test_done("cuda_backend_exec");
}
