/* The GPU kernels of the ops transformer and opset-13 convnext exports add
 * (Pow, Sqrt, ReduceMean, Where, Expand) against kernels/ref on seeded inputs
 * of odd sizes, device outputs NaN-poisoned first; then a small graph of
 * them (a decomposed LayerNorm, Expand, Where, an unequal Split along a
 * middle axis, a middle-axis ReduceMean) through the CUDA executor against
 * the CPU one, no node falling back. Tolerances, in floats apart (ulp; two
 * NaNs match whatever their bits):
 *   Sqrt, Where, Expand: 0 (sqrtf is correctly rounded on both; copies);
 *   ReduceMean: 0 when inner > 1 (the same double sum in the same order),
 *     1 for rows (inner 1): double sums in another order differ far below a
 *     float ulp, so only the final rounding to float may differ;
 *   Pow: 5 (CUDA documents powf within 4 ulp, glibc's is within 1).
 * Graph: rtol 1e-5, atol 1e-6. Exit 77 without a GPU.
 * Run: build/tests/cuda_parity_transformer_ops */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptq/runtime.h"
#include "runtime/op.h"
#include "testlib.h"

#ifndef PTQ_CUDA

int main(void)
{
    printf("cuda_parity_transformer_ops: skipped: ptq was built without CUDA\n");
    return PTQ_TEST_SKIP;
}

#else

#include "kernels/cuda/cuda_kernels.h"

static ptq_ctx ctx;
static ptq_cuda_dev *dev;

/* A failure of the harness itself (not of a kernel): say so and stop. */
static void must(ptq_status st, const char *what)
{
    if (st != PTQ_OK) {
        fprintf(stderr, "cuda_parity_transformer_ops: %s: %s (%s)\n", what, ctx.msg, ctx.where);
        exit(1);
    }
}

static void *xmalloc(size_t n_bytes)
{
    void *p = calloc(1, n_bytes ? n_bytes : 1);
    if (!p) {
        fprintf(stderr, "cuda_parity_transformer_ops: out of host memory for %zu bytes\n", n_bytes);
        exit(1);
    }
    return p;
}

/* x: [n] uniform in [lo, hi) */
static float *uniform(int64_t n, float lo, float hi)
{
    float *x = xmalloc((size_t)n * sizeof *x);
    test_fill_uniform(x, n, lo, hi);
    return x;
}

/* A device copy of host's n_bytes, or n_bytes of NaN when host is NULL. */
static void *on_dev(const void *host, size_t n_bytes)
{
    void *p = NULL;
    must(ptq_cuda_alloc(&ctx, dev, n_bytes ? n_bytes : 1, &p), "cudaMalloc");
    must(host ? ptq_cuda_upload(&ctx, dev, p, host, n_bytes) : ptq_cuda_fill_bytes(&ctx, dev, p, 0xFF, n_bytes),
         "upload");
    return p;
}

/* Floats in order as integers: adjacent floats differ by 1, -0 sits just below +0. */
static int64_t float_rank(float v)
{
    int32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits >= 0 ? (int64_t)bits : -1 - (int64_t)(bits & 0x7fffffff);
}

/* One kernel's cases and its tolerance in ulp. */
typedef struct tally {
    const char *name;
    int64_t max_ulp;
    int cases, failed;
    int64_t worst; /* largest distance seen over all cases */
} tally;

/* Checks st, then compares the n floats at d_got with want (see the tolerances above). */
static void expect(tally *t, ptq_status st, const float *d_got, const float *want, int64_t n, const char *what)
{
    float *got = xmalloc((size_t)n * sizeof *got);
    t->cases++;
    ptq_test_checks++;
    if (st == PTQ_OK)
        st = ptq_cuda_download(&ctx, dev, got, d_got, (size_t)n * sizeof *got);
    int64_t at = -1, far = 0;
    for (int64_t i = 0; st == PTQ_OK && i < n; i++) {
        int64_t dist = INT64_MAX;
        if (isnan(got[i]) || isnan(want[i]))
            dist = isnan(got[i]) && isnan(want[i]) ? 0 : INT64_MAX;
        else
            dist = llabs(float_rank(got[i]) - float_rank(want[i]));
        if (dist > far) {
            far = dist;
            at = i;
        }
    }
    if (far > t->worst)
        t->worst = far;
    if (st != PTQ_OK || far > t->max_ulp) {
        t->failed++;
        ptq_test_failures++;
        if (st != PTQ_OK)
            fprintf(stderr, "  FAIL %s [%s]: %s (%s)\n", t->name, what, ctx.msg, ctx.where);
        else
            fprintf(stderr, "  FAIL %s [%s]: element %lld of %lld: got %.9g want %.9g (%lld ulp apart, %lld allowed)\n",
                    t->name, what, (long long)at, (long long)n, got[at], want[at], (long long)far,
                    (long long)t->max_ulp);
    }
    free(got);
}

static void summary(const tally *t)
{
    printf("%-22s %3d cases  worst %lld ulp (%lld allowed)  %s\n", t->name, t->cases, (long long)t->worst,
           (long long)t->max_ulp, t->failed ? "FAIL" : "ok");
}

/* A float tensor description (no data) for ptq_op_bcast. */
static ptq_tensor desc(int ndim, const int64_t *dims)
{
    ptq_tensor t = {PTQ_DT_FLOAT, ndim, {0}, NULL, PTQ_MEM_HOST, 0};
    memcpy(t.dims, dims, (size_t)ndim * sizeof *dims);
    return t;
}

typedef struct shape {
    int ndim;
    int64_t dims[4];
} shape;

/* ---- Pow ---- */

/* Base and exponent shapes; the exponent's values: > 0 one constant, else uniform in [-3, 3). */
static const struct {
    shape a, b;
    float b_const;
} pow_cases[] = {
    {{1, {1}}, {0, {0}}, 2.0f},
    {{1, {7}}, {0, {0}}, 2.0f},
    {{1, {1000003}}, {0, {0}}, 2.0f},
    {{1, {7}}, {1, {1}}, 0.5f},
    {{3, {3, 7, 1000}}, {0, {0}}, 0.5f},
    {{3, {7, 1, 33}}, {2, {5, 1}}, 0.0f},
    {{1, {1000003}}, {1, {1000003}}, 0.0f},
    {{4, {2, 1, 3, 1}}, {4, {1, 4, 1, 5}}, 0.0f},
};

static void test_pow(void)
{
    tally t = {"pow", 5, 0, 0, 0};
    const float specials[] = {NAN,  INFINITY, -INFINITY, -0.0f, 0.0f,  1.0f,   -1.0f,  1e20f,
                              -3.0f, 1e-20f,  1e-30f,    4.0f,  65536.0f, -0.5f, 1e-38f, -2.5f};
    for (size_t c = 0; c < sizeof pow_cases / sizeof pow_cases[0]; c++) {
        const ptq_tensor ta = desc(pow_cases[c].a.ndim, pow_cases[c].a.dims);
        const ptq_tensor tb = desc(pow_cases[c].b.ndim, pow_cases[c].b.dims);
        ptq_bcast bc;
        must(ptq_op_bcast(&ctx, &ta, &tb, &bc), "bcast");
        const int64_t n_a = ptq_tensor_numel(&ta), n_b = ptq_tensor_numel(&tb);
        const int64_t n_y = ptq_dims_prod(bc.out_dims, 0, bc.ndim);
        float *a = uniform(n_a, -4.0f, 4.0f), *b = uniform(n_b, -3.0f, 3.0f), *y = xmalloc((size_t)n_y * sizeof *y);
        for (int64_t i = 0; i < n_a && n_a > 1 && i < (int64_t)(sizeof specials / sizeof specials[0]); i++)
            a[i] = specials[i];
        for (int64_t i = 0; i < n_b; i++) {
            if (pow_cases[c].b_const > 0.0f)
                b[i] = pow_cases[c].b_const;
            else if (i % 3 == 0)
                b[i] = rintf(b[i]); /* integer exponents give negative bases a real result */
        }
        ptq_k_pow_ref(&bc, a, b, y);
        float *da = on_dev(a, (size_t)n_a * sizeof *a), *db = on_dev(b, (size_t)n_b * sizeof *b);
        float *dy = on_dev(NULL, (size_t)n_y * sizeof *y);
        char sa[64], sb[64], what[200];
        snprintf(what, sizeof what, "%s ^ %s%s", ptq_dims_str(ta.dims, ta.ndim, sa, sizeof sa),
                 ptq_dims_str(tb.dims, tb.ndim, sb, sizeof sb),
                 pow_cases[c].b_const == 2.0f ? " (2)" : pow_cases[c].b_const == 0.5f ? " (0.5)" : "");
        expect(&t, ptq_k_pow_cuda(&ctx, dev, &bc, da, db, dy), dy, y, n_y, what);
        ptq_cuda_release(dev, da);
        ptq_cuda_release(dev, db);
        ptq_cuda_release(dev, dy);
        free(a);
        free(b);
        free(y);
    }
    summary(&t);
}

/* ---- Sqrt ---- */

static void test_sqrt(void)
{
    tally t = {"sqrt", 0, 0, 0, 0};
    const int64_t sizes[] = {1, 7, 1000003};
    const float specials[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, -1.0f, 1e-45f, 1e-38f, 3.4e38f, 2.0f};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const int64_t n = sizes[s];
        float *x = uniform(n, 0.0f, 100.0f), *y = xmalloc((size_t)n * sizeof *y);
        for (int64_t i = 0; n > 1 && i < n && i < (int64_t)(sizeof specials / sizeof specials[0]); i++)
            x[i] = specials[i];
        ptq_k_sqrt_ref(n, x, y);
        float *dx = on_dev(x, (size_t)n * sizeof *x), *dy = on_dev(NULL, (size_t)n * sizeof *y);
        char what[64];
        snprintf(what, sizeof what, "n %lld", (long long)n);
        expect(&t, ptq_k_sqrt_cuda(&ctx, dev, n, dx, dy), dy, y, n, what);
        snprintf(what, sizeof what, "n %lld in place", (long long)n);
        expect(&t, ptq_k_sqrt_cuda(&ctx, dev, n, dx, dx), dx, y, n, what);
        ptq_cuda_release(dev, dx);
        ptq_cuda_release(dev, dy);
        free(x);
        free(y);
    }
    summary(&t);
}

/* ---- ReduceMean ---- */

/* x's shape and the reduced axes lo..hi-1 */
static const struct {
    shape x;
    int lo, hi;
} reduce_cases[] = {
    {{2, {7, 33}}, 1, 2},          /* last axis: rows */
    {{1, {1000003}}, 0, 1},        /* one long row */
    {{3, {5, 1, 768}}, 1, 3},      /* a size-1 axis among the reduced */
    {{3, {3, 7, 5}}, 1, 2},        /* middle axis: columns */
    {{4, {2, 3, 4, 5}}, 1, 3},     /* middle axes */
    {{4, {2, 96, 7, 7}}, 1, 2},    /* convnext's channels */
    {{3, {100003, 2, 1}}, 0, 1},   /* leading axis, two long columns */
    {{1, {1}}, 0, 1},              /* one element */
    {{2, {1, 7}}, 0, 2},           /* every axis */
    {{3, {5, 0, 3}}, 1, 2},        /* empty: NaN */
    {{2, {4, 0}}, 1, 2},           /* empty rows: NaN */
};

static void test_reduce_mean(void)
{
    tally rows = {"reduce_mean (rows)", 1, 0, 0, 0}, cols = {"reduce_mean (columns)", 0, 0, 0, 0};
    for (size_t c = 0; c < sizeof reduce_cases / sizeof reduce_cases[0]; c++) {
        const shape *xs = &reduce_cases[c].x;
        const int lo = reduce_cases[c].lo, hi = reduce_cases[c].hi;
        unsigned char reduced[PTQ_MAX_DIMS] = {0};
        for (int d = lo; d < hi; d++)
            reduced[d] = 1;
        const int64_t outer = ptq_dims_prod(xs->dims, 0, lo), len = ptq_dims_prod(xs->dims, lo, hi);
        const int64_t inner = ptq_dims_prod(xs->dims, hi, xs->ndim), n_x = outer * len * inner;
        float *x = uniform(n_x, -2.0f, 3.0f), *y = xmalloc((size_t)(outer * inner) * sizeof *y);
        ptq_k_reduce_mean_ref(xs->ndim, xs->dims, reduced, x, y);
        float *dx = on_dev(x, (size_t)n_x * sizeof *x), *dy = on_dev(NULL, (size_t)(outer * inner) * sizeof *y);
        char dims[64], what[120];
        snprintf(what, sizeof what, "%s over axes %d..%d", ptq_dims_str(xs->dims, xs->ndim, dims, sizeof dims), lo,
                 hi - 1);
        expect(inner == 1 && len > 0 ? &rows : &cols, ptq_k_reduce_mean_cuda(&ctx, dev, outer, len, inner, dx, dy),
               dy, y, outer * inner, what);
        ptq_cuda_release(dev, dx);
        ptq_cuda_release(dev, dy);
        free(x);
        free(y);
    }
    summary(&rows);
    summary(&cols);
}

/* ---- Where, Expand ---- */

/* Where's condition, X and Y; Expand takes X to Where's output shape */
static const shape where_cases[][3] = {
    {{3, {1, 5, 1}}, {3, {7, 1, 33}}, {1, {33}}},
    {{1, {1000003}}, {1, {1000003}}, {0, {0}}},
    {{0, {0}}, {1, {1}}, {1, {7}}},
    {{4, {2, 1, 3, 1}}, {4, {1, 4, 1, 5}}, {4, {2, 4, 3, 1}}},
    {{1, {1}}, {2, {3, 1}}, {2, {1, 1}}},
    {{0, {0}}, {1, {1}}, {0, {0}}},
};

static void test_where_expand(void)
{
    tally t = {"where", 0, 0, 0, 0}, te = {"expand", 0, 0, 0, 0};
    for (size_t c = 0; c < sizeof where_cases / sizeof where_cases[0]; c++) {
        ptq_tensor in[3], out;
        ptq_bcast bc[3];
        for (int i = 0; i < 3; i++)
            in[i] = desc(where_cases[c][i].ndim, where_cases[c][i].dims);
        /* X with Y, then the condition with both, as ONNX broadcasts the three */
        must(ptq_op_bcast(&ctx, &in[1], &in[2], &bc[0]), "bcast");
        out = desc(bc[0].ndim, bc[0].out_dims);
        must(ptq_op_bcast(&ctx, &in[0], &out, &bc[0]), "bcast");
        out = desc(bc[0].ndim, bc[0].out_dims);
        for (int i = 1; i < 3; i++)
            must(ptq_op_bcast(&ctx, &in[i], &out, &bc[i]), "bcast");
        const int64_t n_c = ptq_tensor_numel(&in[0]), n_x = ptq_tensor_numel(&in[1]), n_y = ptq_tensor_numel(&in[2]);
        const int64_t n_out = ptq_tensor_numel(&out);
        uint8_t *cond = xmalloc((size_t)n_c);
        for (int64_t i = 0; i < n_c; i++)
            cond[i] = (uint8_t)(test_rand_u64() & 1);
        if (n_c == 1)
            cond[0] = 1;
        float *x = uniform(n_x, -1.0f, 1.0f), *y = uniform(n_y, 5.0f, 6.0f), *want = xmalloc((size_t)n_out * 4);
        ptq_k_where_ref(sizeof(float), out.ndim, out.dims, bc[0].a_stride, bc[1].a_stride, bc[2].a_stride, cond, x, y,
                        want);
        uint8_t *dc = on_dev(cond, (size_t)n_c);
        float *dx = on_dev(x, (size_t)n_x * 4), *dyv = on_dev(y, (size_t)n_y * 4);
        float *dout = on_dev(NULL, (size_t)n_out * 4);
        char s[3][64], what[220];
        snprintf(what, sizeof what, "cond %s x %s y %s", ptq_dims_str(in[0].dims, in[0].ndim, s[0], sizeof s[0]),
                 ptq_dims_str(in[1].dims, in[1].ndim, s[1], sizeof s[1]),
                 ptq_dims_str(in[2].dims, in[2].ndim, s[2], sizeof s[2]));
        expect(&t,
               ptq_k_where_cuda(&ctx, dev, out.ndim, out.dims, bc[0].a_stride, bc[1].a_stride, bc[2].a_stride, dc, dx,
                                dyv, dout),
               dout, want, n_out, what);
        ptq_k_expand_ref(sizeof(float), &bc[1], x, want);
        must(ptq_cuda_fill_bytes(&ctx, dev, dout, 0xFF, (size_t)n_out * 4), "poison");
        snprintf(what, sizeof what, "%s to %s", s[1], ptq_dims_str(out.dims, out.ndim, s[0], sizeof s[0]));
        expect(&te, ptq_k_expand_cuda(&ctx, dev, &bc[1], dx, dout), dout, want, n_out, what);
        void *bufs[] = {dc, dx, dyv, dout};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            ptq_cuda_release(dev, bufs[i]);
        free(cond);
        free(x);
        free(y);
        free(want);
    }
    summary(&t);
    summary(&te);
}

/* ---- a graph of them through the executor ---- */

enum {
    V_X, V_TWO, V_EPS, V_COND, V_SHAPE, V_SPLIT, V_MEAN, V_D, V_SQ, V_VAR, V_VE, V_SD, V_NRM, V_E, V_W, V_S1, V_S2,
    V_S3, V_MID, V_OUT, N_VALUES
};
#define G_CH 6
#define G_LEN 33

static ptq_value g_values[N_VALUES];

static void value(int v, const char *name, ptq_dtype dt, int ndim, const int64_t *dims, const void *data,
                  size_t n_bytes, int producer, unsigned flags)
{
    ptq_value *p = &g_values[v];
    p->name = name;
    p->dtype = dt;
    p->ndim = ndim;
    for (int d = 0; d < ndim; d++)
        p->dims[d] = dims[d];
    p->data = data;
    p->n_bytes = n_bytes;
    p->producer = producer;
    p->flags = flags;
}

/* x [N, 6, 33] -> LayerNorm over the last axis written out (ReduceMean, Sub,
 * Pow 2, ReduceMean, Add, Sqrt, Div), Where(cond [6, 1], it, Expand(mean)),
 * Split along axis 1 into 1, 2, 3 rows, the mean of the 3 over axis 1, and
 * Concat(s2, that mean, s1) -> [N, 4, 33]. Opset 13. */
static void test_graph(void)
{
    static const float two = 2.0f, eps = 1e-5f;
    static const uint8_t cond[G_CH] = {1, 0, 1, 1, 0, 1};
    static const int64_t expand_to[3] = {1, G_CH, G_LEN}, split[3] = {1, 2, 3}, last[1] = {-1}, middle[1] = {1};
    static const int64_t x_dims[3] = {-1, G_CH, G_LEN}, cond_dims[2] = {G_CH, 1}, three[1] = {3};
    static const int64_t out_dims[3] = {-1, 4, G_LEN};
    static const ptq_attr mean_last[] = {{.name = "axes", .type = PTQ_ATTR_INTS, .n = 1, .ints = last}};
    static const ptq_attr mean_mid[] = {{.name = "axes", .type = PTQ_ATTR_INTS, .n = 1, .ints = middle}};
    static const ptq_attr axis1[] = {{.name = "axis", .type = PTQ_ATTR_INT, .i = 1}};
    static const int in0[] = {V_X}, out0[] = {V_MEAN}, in1[] = {V_X, V_MEAN}, out1[] = {V_D}, in2[] = {V_D, V_TWO},
                     out2[] = {V_SQ}, in3[] = {V_SQ}, out3[] = {V_VAR}, in4[] = {V_VAR, V_EPS}, out4[] = {V_VE},
                     in5[] = {V_VE}, out5[] = {V_SD}, in6[] = {V_D, V_SD}, out6[] = {V_NRM},
                     in7[] = {V_MEAN, V_SHAPE}, out7[] = {V_E}, in8[] = {V_COND, V_NRM, V_E}, out8[] = {V_W},
                     in9[] = {V_W, V_SPLIT}, out9[] = {V_S1, V_S2, V_S3}, in10[] = {V_S3}, out10[] = {V_MID},
                     in11[] = {V_S2, V_MID, V_S1}, out11[] = {V_OUT};
    static const int g_inputs[] = {V_X}, g_outputs[] = {V_OUT};
    const ptq_node nodes[] = {
        {"mean", "ReduceMean", "", 1, 1, in0, out0, 1, mean_last},
        {"sub", "Sub", "", 2, 1, in1, out1, 0, NULL},
        {"pow", "Pow", "", 2, 1, in2, out2, 0, NULL},
        {"var", "ReduceMean", "", 1, 1, in3, out3, 1, mean_last},
        {"add", "Add", "", 2, 1, in4, out4, 0, NULL},
        {"sqrt", "Sqrt", "", 1, 1, in5, out5, 0, NULL},
        {"div", "Div", "", 2, 1, in6, out6, 0, NULL},
        {"expand", "Expand", "", 2, 1, in7, out7, 0, NULL},
        {"where", "Where", "", 3, 1, in8, out8, 0, NULL},
        {"split", "Split", "", 2, 3, in9, out9, 1, axis1},
        {"mid", "ReduceMean", "", 1, 1, in10, out10, 1, mean_mid},
        {"concat", "Concat", "", 3, 1, in11, out11, 1, axis1},
    };
    const int n_nodes = (int)(sizeof nodes / sizeof nodes[0]);
    static const char *const names[N_VALUES] = {"x",   "two", "eps", "cond", "shape", "split", "mean",
                                                "d",   "sq",  "var", "ve",   "sd",    "nrm",   "e",
                                                "w",   "s1",  "s2",  "s3",   "mid",   "out"};
    memset(g_values, 0, sizeof g_values);
    for (int v = 0; v < N_VALUES; v++)
        value(v, names[v], PTQ_DT_FLOAT, -1, NULL, NULL, 0, -1, 0);
    for (int k = 0; k < n_nodes; k++)
        for (int o = 0; o < nodes[k].n_outputs; o++)
            g_values[nodes[k].outputs[o]].producer = k;
    value(V_X, "x", PTQ_DT_FLOAT, 3, x_dims, NULL, 0, -1, PTQ_VALUE_INPUT);
    value(V_TWO, "two", PTQ_DT_FLOAT, 0, NULL, &two, sizeof two, -1, PTQ_VALUE_INITIALIZER);
    value(V_EPS, "eps", PTQ_DT_FLOAT, 0, NULL, &eps, sizeof eps, -1, PTQ_VALUE_INITIALIZER);
    value(V_COND, "cond", PTQ_DT_BOOL, 2, cond_dims, cond, sizeof cond, -1, PTQ_VALUE_INITIALIZER);
    value(V_SHAPE, "shape", PTQ_DT_INT64, 1, three, expand_to, sizeof expand_to, -1, PTQ_VALUE_INITIALIZER);
    value(V_SPLIT, "split", PTQ_DT_INT64, 1, three, split, sizeof split, -1, PTQ_VALUE_INITIALIZER);
    value(V_OUT, "out", PTQ_DT_FLOAT, 3, out_dims, NULL, 0, n_nodes - 1, PTQ_VALUE_OUTPUT);
    const ptq_graph g = {.name = "transformer_ops", .opset = 13, .n_values = N_VALUES, .values = g_values,
                         .n_nodes = n_nodes, .nodes = nodes, .n_inputs = 1, .inputs = g_inputs, .n_outputs = 1,
                         .outputs = g_outputs};

    ptq_exec *cpu = NULL, *gpu = NULL;
    ptq_exec_params pc = {PTQ_DEVICE_CPU, 0, NULL, NULL, 0, PTQ_MATH_FP32};
    ptq_exec_params pg = {PTQ_DEVICE_CUDA, 0, NULL, NULL, 0, PTQ_MATH_FP32};
    CHECK_MSG(ptq_exec_create(&ctx, &g, &pc, &cpu) == PTQ_OK, "cpu executor: %s", ctx.msg);
    CHECK_MSG(ptq_exec_create(&ctx, &g, &pg, &gpu) == PTQ_OK, "cuda executor: %s", ctx.msg);
    const int64_t batches[] = {7, 1};
    for (size_t b = 0; cpu && gpu && b < sizeof batches / sizeof batches[0]; b++) {
        const int64_t n = batches[b], n_out = n * 4 * G_LEN;
        float *x = uniform(n * G_CH * G_LEN, -3.0f, 5.0f), *want = xmalloc((size_t)n_out * sizeof *want);
        ptq_tensor in = {PTQ_DT_FLOAT, 3, {n, G_CH, G_LEN}, x, PTQ_MEM_HOST, 0}, out;
        ptq_status st = ptq_exec_run(&ctx, cpu, &in, &out);
        CHECK_MSG(st == PTQ_OK, "cpu run: %s", ctx.msg);
        if (st == PTQ_OK)
            memcpy(want, out.data, (size_t)n_out * sizeof *want);
        if (st == PTQ_OK && (st = ptq_exec_run(&ctx, gpu, &in, &out)) != PTQ_OK)
            CHECK_MSG(0, "cuda run: %s", ctx.msg);
        char label[64];
        snprintf(label, sizeof label, "graph batch %lld gpu vs cpu", (long long)n);
        const int ok = st == PTQ_OK && out.ndim == 3 && out.dims[0] == n && out.dims[1] == 4 &&
                       test_close(label, out.data, want, n_out, 1e-5f, 1e-6f);
        CHECK_MSG(ok, "%s", label);
        const int fallback = ptq_exec_n_fallback_nodes(gpu);
        CHECK_MSG(fallback == 0, "%d of %d nodes fell back to the CPU", fallback, n_nodes);
        printf("%-22s batch %lld: %s, %d nodes fell back to the CPU\n", "graph", (long long)n,
               ok ? "matches the CPU" : "DIFFERS", fallback);
        free(x);
        free(want);
    }
    ptq_exec_free(cpu);
    ptq_exec_free(gpu);
}

int main(void)
{
    char why[256];
    if (ptq_cuda_device_count(why, sizeof why) == 0) {
        printf("cuda_parity_transformer_ops: skipped: no GPU: %s\n", why);
        return PTQ_TEST_SKIP;
    }
    ptq_ctx_init(&ctx);
    must(ptq_cuda_dev_create(&ctx, 0, &dev), "GPU 0");
    printf("cuda_parity_transformer_ops: GPU 0 (%s) against kernels/ref\n", ptq_cuda_dev_name(dev));
    test_rand_seed(20250213);
    test_pow();
    test_sqrt();
    test_reduce_mean();
    test_where_expand();
    must(ptq_cuda_sync(&ctx, dev), "sync");
    ptq_cuda_dev_free(dev);
    test_graph();
    return test_done("cuda_parity_transformer_ops");
}

#endif
