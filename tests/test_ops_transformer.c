/* The ops transformer exports need (runtime/ops_transformer.c, Gelu and Erf
 * in runtime/ops_activation.c): Gelu (exact and tanh against double, no
 * cancellation for x < 0, opset 20 only), Split (input, attribute and
 * num_outputs forms), Where and Expand (broadcasting), Range (float, int,
 * the int64 extremes), Equal (NaN, -0), Mod (fmod 0 and 1, INT64_MIN % -1,
 * zero divisors), ConstantOfShape (float32 0 by default, an int64 and a bool
 * value, a scalar and an empty output), Not (nonzero bytes are true),
 * ScatterND (rows, elements and whole-data tuples, negative indices, the
 * last of equal tuples wins, add / mul / max / min with onnxruntime's NaN
 * rule, integer and bool reductions; indices out of range, shapes that do
 * not fit and reductions outside their opsets refused naming the node),
 * errors naming the node; then one small graph of them all
 * whose Range length comes from Shape: known at shape inference, run with two
 * batch sizes on ref and cpu (and cuda when there is a GPU: the shape ops
 * fall back to the CPU there) against a hand computation; and an Expand
 * whose shape is read from the data, held to the memory limit before its
 * output is allocated (a shape past size_t bytes refused, not run). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/onnx_build.h"
#include "ptq/memory.h"
#include "ptq/runtime.h"
#include "testlib.h"

extern const ptq_op_def ptq_op_Gelu, ptq_op_Erf, ptq_op_Split, ptq_op_Where, ptq_op_Expand, ptq_op_Range,
    ptq_op_Equal, ptq_op_Mod, ptq_op_ConstantOfShape, ptq_op_Not, ptq_op_ScatterND, ptq_op_ReduceSum, ptq_op_CumSum,
    ptq_op_Neg, ptq_op_Abs, ptq_op_Greater, ptq_op_Less,
    ptq_op_GreaterOrEqual, ptq_op_LessOrEqual, ptq_op_And, ptq_op_Or, ptq_op_Trilu, ptq_op_ReduceMax, ptq_op_ArgMax;

static double gelu_exact(double x)
{
    return 0.5 * x * erfc(-x / sqrt(2.0));
}

/* x/2 (1 + tanh(u)) = x / (1 + exp(-2u)), the form that does not cancel for x < 0 */
static double gelu_tanh(double x)
{
    return x / (1.0 + exp(-2.0 * sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}

static void check_gelu_erf(void)
{
    test_op_case c;
    enum { N = 4099 };
    static float x[N], ref[N];
    test_rand_seed(7);
    test_fill_uniform(x, N, -12.0f, 12.0f);
    const float specials[] = {0.0f, -0.0f, -10.0f, -5.0f, 3.0f, NAN, INFINITY};
    memcpy(x, specials, sizeof specials);
    const ptq_attr tanh_attr[] = {{.name = "approximate", .type = PTQ_ATTR_STRING, .s = "tanh"}};
    const ptq_attr none_attr[] = {{.name = "approximate", .type = PTQ_ATTR_STRING, .s = "none"}};
    for (int form = 0; form < 3; form++) { /* default, "none", "tanh" */
        for (int fast = 0; fast < 2; fast++) {
            test_case_init(&c, "Gelu", 20, form == 2 ? tanh_attr : none_attr, form ? 1 : 0, 1, 1);
            test_case_input(&c, 0, PTQ_DT_FLOAT, x, 1, DIMS(N));
            CHECK_MSG(test_case_run(&c, &ptq_op_Gelu, fast) == PTQ_OK, "%s", c.ctx.msg);
            const float *y = c.out[0].data;
            int n_bad = 0;
            for (int i = 0; i < N; i++) {
                if (isnan(x[i]) || isinf(x[i]))
                    continue;
                const double want = form == 2 ? gelu_tanh(x[i]) : gelu_exact(x[i]);
                /* relative even where 1 + erf cancels; below -5 erfc magnifies the rounding of x/sqrt(2) */
                n_bad += !(fabs(y[i] - want) <= 1e-37 + (x[i] < -5.0f ? 1e-4 : 4e-6) * fabs(want));
            }
            CHECK_MSG(n_bad == 0, "gelu form %d fast %d: %d values off", form, fast, n_bad);
            CHECK(isnan(y[5]) && y[6] == INFINITY && y[2] < 0.0f && y[2] > -1e-20f);
            if (!fast)
                memcpy(ref, y, sizeof ref);
            else
                CHECK_MSG(memcmp(ref, y, sizeof ref) == 0, "gelu form %d: cpu differs from ref", form);
            test_case_free(&c);
        }
    }
    const ptq_attr bad[] = {{.name = "approximate", .type = PTQ_ATTR_STRING, .s = "fast"}};
    test_case_init(&c, "Gelu", 20, bad, 1, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, x, 1, DIMS(N));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Gelu, 0), PTQ_ERR_FORMAT) &&
          strstr(c.ctx.msg, "fast"));
    test_case_free(&c);
    /* Gelu is an opset-20 op: a graph at 17 is refused naming the node */
    const ptq_op_def **ops = NULL;
    test_case_init(&c, "Gelu", 17, NULL, 0, 1, 1);
    c.graph.nodes = &c.node;
    c.graph.n_nodes = 1;
    CHECK(ptq_op_resolve(&c.ctx, &c.graph, &ops) == PTQ_ERR_UNSUPPORTED && strstr(c.ctx.msg, "node_under_test") &&
          strstr(c.ctx.msg, "opset 20"));
    free(ops);
    c.graph.opset = 20;
    CHECK(ptq_op_resolve(&c.ctx, &c.graph, &ops) == PTQ_OK && ops && ops[0] == &ptq_op_Gelu);
    free(ops);

    /* Erf runs the unary kernels: erf itself to float precision on both, ref and cpu within 1 ulp of each other
     * (glibc's erff against the CPU's own, kernels/cpu/unary.c) */
    for (int fast = 0; fast < 2; fast++) {
        test_case_init(&c, "Erf", 13, NULL, 0, 1, 1);
        test_case_input(&c, 0, PTQ_DT_FLOAT, x, 1, DIMS(N));
        CHECK_MSG(test_case_run(&c, &ptq_op_Erf, fast) == PTQ_OK, "%s", c.ctx.msg);
        const float *y = c.out[0].data;
        int n_bad = 0;
        for (int i = 7; i < N; i++)
            n_bad += !(fabs(y[i] - erf(x[i])) <= 2e-7 * fabs(erf(x[i])) + 1e-37);
        CHECK_MSG(n_bad == 0, "erf fast %d: %d values off", fast, n_bad);
        if (!fast)
            memcpy(ref, y, sizeof ref);
        else
            for (int i = 0; i < N; i++)
                CHECK_MSG(y[i] == ref[i] || nextafterf(ref[i], y[i]) == y[i] || (isnan(y[i]) && isnan(ref[i])),
                          "erf(%.9g): cpu %.9g, ref %.9g", x[i], y[i], ref[i]);
        test_case_free(&c);
    }
}

static void check_split(void)
{
    test_op_case c;
    /* [2, 3] split [2, 1] along axis 1 (opset 13, the sizes an input) */
    const float x[] = {0, 1, 2, 10, 11, 12};
    const int64_t sizes[] = {2, 1};
    const ptq_attr ax1[] = {{.name = "axis", .type = PTQ_ATTR_INT, .i = -1}};
    test_case_init(&c, "Split", 13, ax1, 1, 2, 2);
    test_case_input(&c, 0, PTQ_DT_FLOAT, x, 2, DIMS(2, 3));
    test_case_input(&c, 1, PTQ_DT_INT64, sizes, 1, DIMS(2));
    CHECK_MSG(test_case_run(&c, &ptq_op_Split, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float want0[] = {0, 1, 10, 11}, want1[] = {2, 12};
    CHECK(test_dims_are(&c.out[0], 2, DIMS(2, 2)) && memcmp(c.out[0].data, want0, sizeof want0) == 0);
    CHECK(test_dims_are(&c.out[1], 2, DIMS(2, 1)) && memcmp(c.out[1].data, want1, sizeof want1) == 0);
    CHECK(ptq_op_host_input(&ptq_op_Split, 1) && !ptq_op_host_input(&ptq_op_Split, 0));
    test_case_free(&c);
    /* opset 18: num_outputs 3 of 7 int64 values -> 3, 3, 1 */
    const int64_t v[] = {1, 2, 3, 4, 5, 6, 7};
    const ptq_attr num3[] = {{.name = "num_outputs", .type = PTQ_ATTR_INT, .i = 3}};
    test_case_init(&c, "Split", 18, num3, 1, 1, 3);
    test_case_input(&c, 0, PTQ_DT_INT64, v, 1, DIMS(7));
    CHECK_MSG(test_case_run(&c, &ptq_op_Split, 0) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(test_dims_are(&c.out[0], 1, DIMS(3)) && test_dims_are(&c.out[1], 1, DIMS(3)) &&
          test_dims_are(&c.out[2], 1, DIMS(1)));
    CHECK(((int64_t *)c.out[1].data)[0] == 4 && ((int64_t *)c.out[2].data)[0] == 7);
    test_case_free(&c);
    /* before 18 equal parts must divide the axis; opset 11 takes the sizes as an attribute, including 0 */
    test_case_init(&c, "Split", 13, NULL, 0, 1, 3);
    test_case_input(&c, 0, PTQ_DT_INT64, v, 1, DIMS(7));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Split, 0), PTQ_ERR_SHAPE));
    test_case_free(&c);
    const int64_t s043[] = {0, 4, 3};
    const ptq_attr split_attr[] = {{.name = "split", .type = PTQ_ATTR_INTS, .n = 3, .ints = s043}};
    test_case_init(&c, "Split", 11, split_attr, 1, 1, 3);
    test_case_input(&c, 0, PTQ_DT_INT64, v, 1, DIMS(7));
    CHECK_MSG(test_case_run(&c, &ptq_op_Split, 0) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(test_dims_are(&c.out[0], 1, DIMS(0)) && ((int64_t *)c.out[2].data)[0] == 5);
    test_case_free(&c);
    /* sizes that do not add up are named */
    const int64_t short_sizes[] = {2, 2};
    test_case_init(&c, "Split", 13, ax1, 1, 2, 2);
    test_case_input(&c, 0, PTQ_DT_FLOAT, x, 2, DIMS(2, 3));
    test_case_input(&c, 1, PTQ_DT_INT64, short_sizes, 1, DIMS(2));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Split, 0), PTQ_ERR_SHAPE) &&
          strstr(c.ctx.msg, "add up to 4"));
    test_case_free(&c);
    /* sizes whose sum wraps int64 to the axis' 0 are refused, not split into [0, INT64_MAX] outputs */
    const int64_t wrap_sizes[] = {INT64_MAX, INT64_MAX, 2};
    test_case_init(&c, "Split", 13, ax1, 1, 2, 3);
    test_case_input(&c, 0, PTQ_DT_FLOAT, NULL, 2, DIMS(0, 0));
    test_case_input(&c, 1, PTQ_DT_INT64, wrap_sizes, 1, DIMS(3));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Split, 0), PTQ_ERR_SHAPE) &&
          strstr(c.ctx.msg, "more than int64"));
    test_case_free(&c);
}

static void check_where_expand(void)
{
    test_op_case c;
    /* cond [3, 1] with x [1, 2] (int64) and y a scalar -> [3, 2] */
    const unsigned char cond[] = {1, 0, 1};
    const int64_t x[] = {7, 8}, y = -1;
    test_case_init(&c, "Where", 16, NULL, 0, 3, 1);
    test_case_input(&c, 0, PTQ_DT_BOOL, cond, 2, DIMS(3, 1));
    test_case_input(&c, 1, PTQ_DT_INT64, x, 2, DIMS(1, 2));
    test_case_input(&c, 2, PTQ_DT_INT64, &y, 0, NULL);
    CHECK_MSG(test_case_run(&c, &ptq_op_Where, 0) == PTQ_OK, "%s", c.ctx.msg);
    const int64_t want[] = {7, 8, -1, -1, 7, 8};
    CHECK(c.out[0].dtype == PTQ_DT_INT64 && test_dims_are(&c.out[0], 2, DIMS(3, 2)) &&
          memcmp(c.out[0].data, want, sizeof want) == 0);
    test_case_free(&c);
    /* a float condition, and shapes that do not broadcast, are named */
    const float fcond[] = {1, 0, 1};
    for (int k = 0; k < 2; k++) {
        test_case_init(&c, "Where", 16, NULL, 0, 3, 1);
        test_case_input(&c, 0, k ? PTQ_DT_BOOL : PTQ_DT_FLOAT, k ? (const void *)cond : fcond, 1, DIMS(3));
        test_case_input(&c, 1, PTQ_DT_INT64, x, 1, DIMS(2));
        test_case_input(&c, 2, PTQ_DT_INT64, &y, 0, NULL);
        CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Where, 0), k ? PTQ_ERR_SHAPE : PTQ_ERR_FORMAT));
        test_case_free(&c);
    }

    /* Expand [3, 1] to shape [2, 1, 4] -> [2, 3, 4]; a 1 in the shape keeps the input's dim */
    const float e[] = {1, 2, 3};
    const int64_t shape[] = {2, 1, 4}, ones[] = {1, 1}, neg[] = {-2};
    test_case_init(&c, "Expand", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, e, 2, DIMS(3, 1));
    test_case_input(&c, 1, PTQ_DT_INT64, shape, 1, DIMS(3));
    CHECK_MSG(test_case_run(&c, &ptq_op_Expand, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float *ye = c.out[0].data;
    CHECK(test_dims_are(&c.out[0], 3, DIMS(2, 3, 4)) && ye[0] == 1 && ye[3] == 1 && ye[4] == 2 && ye[11] == 3 &&
          ye[12] == 1 && ye[23] == 3);
    test_case_free(&c);
    test_case_init(&c, "Expand", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, e, 2, DIMS(1, 3));
    test_case_input(&c, 1, PTQ_DT_INT64, ones, 1, DIMS(2));
    CHECK(test_case_run(&c, &ptq_op_Expand, 0) == PTQ_OK && test_dims_are(&c.out[0], 2, DIMS(1, 3)) &&
          memcmp(c.out[0].data, e, sizeof e) == 0);
    test_case_free(&c);
    test_case_init(&c, "Expand", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, e, 2, DIMS(1, 3));
    test_case_input(&c, 1, PTQ_DT_INT64, neg, 1, DIMS(1));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Expand, 0), PTQ_ERR_SHAPE));
    test_case_free(&c);
}

/* Range of three scalars of dtype dt into c->out[0]. */
static ptq_status run_range(test_op_case *c, ptq_dtype dt, const void *start, const void *limit, const void *delta)
{
    test_case_init(c, "Range", 11, NULL, 0, 3, 1);
    test_case_input(c, 0, dt, start, 0, NULL);
    test_case_input(c, 1, dt, limit, 0, NULL);
    test_case_input(c, 2, dt, delta, 0, NULL);
    return test_case_run(c, &ptq_op_Range, 0);
}

static void check_range(void)
{
    test_op_case c;
    const int64_t s = 0, l = 10, d = 3;
    CHECK(run_range(&c, PTQ_DT_INT64, &s, &l, &d) == PTQ_OK);
    const int64_t *y = c.out[0].data;
    CHECK(test_dims_are(&c.out[0], 1, DIMS(4)) && y[0] == 0 && y[3] == 9);
    test_case_free(&c);
    const int32_t s32 = 10, l32 = 4, d32 = -3;
    CHECK(run_range(&c, PTQ_DT_INT32, &s32, &l32, &d32) == PTQ_OK);
    const int32_t *y32 = c.out[0].data;
    CHECK(c.out[0].dtype == PTQ_DT_INT32 && test_dims_are(&c.out[0], 1, DIMS(2)) && y32[0] == 10 &&
          y32[1] == 7);
    test_case_free(&c);
    const float sf = 1.0f, lf = 5.0f, df = 1.5f;
    CHECK(run_range(&c, PTQ_DT_FLOAT, &sf, &lf, &df) == PTQ_OK);
    const float *yf = c.out[0].data;
    CHECK(test_dims_are(&c.out[0], 1, DIMS(3)) && yf[0] == 1.0f && yf[1] == 2.5f && yf[2] == 4.0f);
    test_case_free(&c);
    /* empty, and from INT64_MIN to INT64_MAX without overflow */
    const int64_t l_low = -5, mn = INT64_MIN, mx = INT64_MAX;
    CHECK(run_range(&c, PTQ_DT_INT64, &s, &l_low, &d) == PTQ_OK && test_dims_are(&c.out[0], 1, DIMS(0)));
    test_case_free(&c);
    CHECK(run_range(&c, PTQ_DT_INT64, &mn, &mx, &mx) == PTQ_OK);
    y = c.out[0].data;
    CHECK(test_dims_are(&c.out[0], 1, DIMS(3)) && y[0] == INT64_MIN && y[1] == -1 && y[2] == INT64_MAX - 1);
    test_case_free(&c);
    /* delta 0, and a range too long to hold, are named */
    const int64_t zero = 0;
    CHECK(test_fails_naming_node(&c, run_range(&c, PTQ_DT_INT64, &s, &l, &zero), PTQ_ERR_DATA));
    test_case_free(&c);
    const float tiny = 1e-30f;
    CHECK(test_fails_naming_node(&c, run_range(&c, PTQ_DT_FLOAT, &sf, &lf, &tiny), PTQ_ERR_DATA));
    test_case_free(&c);
    CHECK(ptq_op_Range.host_inputs == 7u);
}

static void check_equal_mod(void)
{
    test_op_case c;
    /* float Equal: -0 == 0, NaN never; broadcast [2, 1] with [3] */
    const float a[] = {0.0f, NAN}, b[] = {-0.0f, NAN, 1.0f};
    test_case_init(&c, "Equal", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, a, 2, DIMS(2, 1));
    test_case_input(&c, 1, PTQ_DT_FLOAT, b, 1, DIMS(3));
    CHECK_MSG(test_case_run(&c, &ptq_op_Equal, 0) == PTQ_OK, "%s", c.ctx.msg);
    const unsigned char want_eq[] = {1, 0, 0, 0, 0, 0};
    CHECK(c.out[0].dtype == PTQ_DT_BOOL && test_dims_are(&c.out[0], 2, DIMS(2, 3)) &&
          memcmp(c.out[0].data, want_eq, sizeof want_eq) == 0);
    test_case_free(&c);
    const int64_t ia[] = {3, -1, 3}, ib = 3;
    test_case_init(&c, "Equal", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, ia, 1, DIMS(3));
    test_case_input(&c, 1, PTQ_DT_INT64, &ib, 0, NULL);
    CHECK(test_case_run(&c, &ptq_op_Equal, 0) == PTQ_OK);
    const unsigned char *eq = c.out[0].data;
    CHECK(eq[0] == 1 && eq[1] == 0 && eq[2] == 1);
    test_case_free(&c);
    test_case_init(&c, "Equal", 13, NULL, 0, 2, 1); /* mixed dtypes are named */
    test_case_input(&c, 0, PTQ_DT_INT64, ia, 1, DIMS(3));
    test_case_input(&c, 1, PTQ_DT_FLOAT, b, 1, DIMS(3));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Equal, 0), PTQ_ERR_FORMAT));
    test_case_free(&c);

    /* Mod on int32: fmod 0 takes the divisor's sign (Python's %), fmod 1 the dividend's (C's %) */
    const int32_t ma[] = {-4, 4, -4, 4, 7}, mb[] = {3, -3, -3, 3, 7};
    const int32_t want_py[] = {2, -2, -1, 1, 0}, want_c[] = {-1, 1, -1, 1, 0};
    const ptq_attr fmod1[] = {{.name = "fmod", .type = PTQ_ATTR_INT, .i = 1}};
    for (int f = 0; f < 2; f++) {
        test_case_init(&c, "Mod", 13, fmod1, f, 2, 1);
        test_case_input(&c, 0, PTQ_DT_INT32, ma, 1, DIMS(5));
        test_case_input(&c, 1, PTQ_DT_INT32, mb, 1, DIMS(5));
        CHECK_MSG(test_case_run(&c, &ptq_op_Mod, 0) == PTQ_OK, "%s", c.ctx.msg);
        CHECK_MSG(memcmp(c.out[0].data, f ? want_c : want_py, sizeof want_py) == 0, "fmod %d", f);
        test_case_free(&c);
    }
    /* INT64_MIN % -1 is 0, not a trap; uint8 stays unsigned */
    const int64_t big[] = {INT64_MIN, -7}, m1[] = {-1, 2};
    test_case_init(&c, "Mod", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, big, 1, DIMS(2));
    test_case_input(&c, 1, PTQ_DT_INT64, m1, 1, DIMS(2));
    CHECK(test_case_run(&c, &ptq_op_Mod, 0) == PTQ_OK && ((int64_t *)c.out[0].data)[0] == 0 &&
          ((int64_t *)c.out[0].data)[1] == 1);
    test_case_free(&c);
    const uint8_t ua[] = {250, 7}, ub = 8;
    test_case_init(&c, "Mod", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_UINT8, ua, 1, DIMS(2));
    test_case_input(&c, 1, PTQ_DT_UINT8, &ub, 0, NULL);
    CHECK(test_case_run(&c, &ptq_op_Mod, 0) == PTQ_OK && ((uint8_t *)c.out[0].data)[0] == 2 &&
          ((uint8_t *)c.out[0].data)[1] == 7);
    test_case_free(&c);
    /* floats: fmod 1 is C's fmod; fmod 0 is refused as ONNX says */
    const float fa[] = {5.5f, -5.5f}, fb[] = {-2.0f, 2.0f};
    test_case_init(&c, "Mod", 13, fmod1, 1, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, fa, 1, DIMS(2));
    test_case_input(&c, 1, PTQ_DT_FLOAT, fb, 1, DIMS(2));
    CHECK(test_case_run(&c, &ptq_op_Mod, 0) == PTQ_OK && ((float *)c.out[0].data)[0] == 1.5f &&
          ((float *)c.out[0].data)[1] == -1.5f);
    test_case_free(&c);
    test_case_init(&c, "Mod", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, fa, 1, DIMS(2));
    test_case_input(&c, 1, PTQ_DT_FLOAT, fb, 1, DIMS(2));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Mod, 0), PTQ_ERR_FORMAT));
    test_case_free(&c);
    /* an integer zero divisor is named with the element */
    const int32_t zb[] = {3, 0, 3, 3, 3};
    test_case_init(&c, "Mod", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_INT32, ma, 1, DIMS(5));
    test_case_input(&c, 1, PTQ_DT_INT32, zb, 1, DIMS(5));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Mod, 0), PTQ_ERR_DATA) &&
          strstr(c.ctx.msg, "element 1"));
    test_case_free(&c);
}

/* ReduceSum and CumSum on the types a masked mean and position ids take: int32 sums wrap as onnxruntime's, float32
 * CumSum sums in float32 in order (reverse from the end), the axis input is named when it is not one integer. */
static void check_reduce_sum_cumsum(void)
{
    test_op_case c;
    const int32_t xi[] = {INT32_MAX, 1, -5, 7, 2, -3};
    const int64_t axes1[] = {1};
    test_case_init(&c, "ReduceSum", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_INT32, xi, 2, DIMS(2, 3));
    test_case_input(&c, 1, PTQ_DT_INT64, axes1, 1, DIMS(1));
    CHECK_MSG(test_case_run(&c, &ptq_op_ReduceSum, 0) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(c.out[0].dtype == PTQ_DT_INT32 && test_dims_are(&c.out[0], 2, DIMS(2, 1)) &&
          ((int32_t *)c.out[0].data)[0] == INT32_MAX - 4 && /* INT32_MAX + 1 - 5, wrapped */
          ((int32_t *)c.out[0].data)[1] == 6);
    test_case_free(&c);
    const ptq_attr keep0[] = {{.name = "keepdims", .type = PTQ_ATTR_INT, .i = 0}};
    const float xf[] = {1.0f, 2.0f, 3.0f, 4.0f};
    const int64_t axis0 = 0;
    test_case_init(&c, "ReduceSum", 11, NULL, 0, 1, 1); /* no axes before 13: every axis */
    test_case_input(&c, 0, PTQ_DT_FLOAT, xf, 2, DIMS(2, 2));
    CHECK(test_case_run(&c, &ptq_op_ReduceSum, 0) == PTQ_OK && test_dims_are(&c.out[0], 2, DIMS(1, 1)) &&
          ((float *)c.out[0].data)[0] == 10.0f);
    test_case_free(&c);
    test_case_init(&c, "ReduceSum", 13, keep0, 1, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, xf, 2, DIMS(2, 2));
    test_case_input(&c, 1, PTQ_DT_INT64, &axis0, 1, DIMS(1));
    CHECK(test_case_run(&c, &ptq_op_ReduceSum, 0) == PTQ_OK && test_dims_are(&c.out[0], 1, DIMS(2)) &&
          ((float *)c.out[0].data)[0] == 4.0f && ((float *)c.out[0].data)[1] == 6.0f);
    test_case_free(&c);

    /* float32 in float32, in order from the end: 1e8 + 1 + 1 is 1e8 at each step, 1 + 1 + 1e8 is 1e8 + 2 */
    const float big[] = {1e8f, 1.0f, 1.0f};
    const ptq_attr reverse[] = {{.name = "reverse", .type = PTQ_ATTR_INT, .i = 1}};
    test_case_init(&c, "CumSum", 14, reverse, 1, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, big, 1, DIMS(3));
    test_case_input(&c, 1, PTQ_DT_INT64, &axis0, 0, NULL);
    CHECK_MSG(test_case_run(&c, &ptq_op_CumSum, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float *cf = c.out[0].data;
    CHECK(cf[2] == 1.0f && cf[1] == 2.0f && cf[0] == 1e8f + 2.0f);
    test_case_free(&c);
    const ptq_attr exclusive[] = {{.name = "exclusive", .type = PTQ_ATTR_INT, .i = 1}};
    const int32_t mask[] = {1, 1, 0, 1, 1, 1}, axis_i32 = -1;
    test_case_init(&c, "CumSum", 14, exclusive, 1, 2, 1);
    test_case_input(&c, 0, PTQ_DT_INT32, mask, 2, DIMS(2, 3));
    test_case_input(&c, 1, PTQ_DT_INT32, &axis_i32, 1, DIMS(1));
    CHECK_MSG(test_case_run(&c, &ptq_op_CumSum, 0) == PTQ_OK, "%s", c.ctx.msg);
    const int32_t want_ex[] = {0, 1, 2, 0, 1, 2};
    CHECK(c.out[0].dtype == PTQ_DT_INT32 && memcmp(c.out[0].data, want_ex, sizeof want_ex) == 0);
    test_case_free(&c);
    const int64_t two_axes[] = {0, 1};
    test_case_init(&c, "CumSum", 14, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_INT32, mask, 2, DIMS(2, 3));
    test_case_input(&c, 1, PTQ_DT_INT64, two_axes, 1, DIMS(2));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_CumSum, 0), PTQ_ERR_FORMAT));
    test_case_free(&c);
    const int64_t axis5 = 5;
    test_case_init(&c, "CumSum", 14, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_INT32, mask, 2, DIMS(2, 3));
    test_case_input(&c, 1, PTQ_DT_INT64, &axis5, 0, NULL);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_CumSum, 0), PTQ_ERR_SHAPE));
    test_case_free(&c);
    const unsigned char bools[] = {1, 0};
    test_case_init(&c, "CumSum", 14, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_BOOL, bools, 1, DIMS(2));
    test_case_input(&c, 1, PTQ_DT_INT64, &axis0, 0, NULL);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_CumSum, 0), PTQ_ERR_UNSUPPORTED));
    test_case_free(&c);
}

/* Neg as rotate_half takes it (float32, -0 kept) and on integers (T5's -min(rel, 0)): INT32_MIN wraps to itself as
 * onnxruntime's; unsigned and bool inputs are refused naming the node. */
static void check_neg(void)
{
    test_op_case c;
    const float xf[] = {1.5f, -2.0f, 0.0f, -0.0f};
    test_case_init(&c, "Neg", 13, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, xf, 2, DIMS(2, 2));
    CHECK_MSG(test_case_run(&c, &ptq_op_Neg, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float *yf = c.out[0].data;
    CHECK(c.out[0].dtype == PTQ_DT_FLOAT && test_dims_are(&c.out[0], 2, DIMS(2, 2)) && yf[0] == -1.5f &&
          yf[1] == 2.0f && yf[2] == 0.0f && signbit(yf[2]) && yf[3] == 0.0f && !signbit(yf[3]));
    test_case_free(&c);
    const int32_t xi[] = {INT32_MIN, -7, 0, INT32_MAX};
    test_case_init(&c, "Neg", 13, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_INT32, xi, 1, DIMS(4));
    CHECK_MSG(test_case_run(&c, &ptq_op_Neg, 0) == PTQ_OK, "%s", c.ctx.msg);
    const int32_t want_i[] = {INT32_MIN, 7, 0, -INT32_MAX};
    CHECK(c.out[0].dtype == PTQ_DT_INT32 && memcmp(c.out[0].data, want_i, sizeof want_i) == 0);
    test_case_free(&c);
    const int64_t xl[] = {3, INT64_MIN};
    test_case_init(&c, "Neg", 13, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, xl, 1, DIMS(2));
    CHECK(test_case_run(&c, &ptq_op_Neg, 0) == PTQ_OK && ((int64_t *)c.out[0].data)[0] == -3 &&
          ((int64_t *)c.out[0].data)[1] == INT64_MIN);
    test_case_free(&c);
    const uint8_t xu[] = {1, 2};
    test_case_init(&c, "Neg", 13, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_UINT8, xu, 1, DIMS(2));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Neg, 0), PTQ_ERR_UNSUPPORTED));
    test_case_free(&c);
}

/* ReduceMax as a 1-D CNN's max over time takes it ([N, C, L] over axis 2, axes an attribute before opset 18, an
 * input from 18): NaN wins, an empty axis gives -Inf (int32: INT32_MIN) as onnxruntime's, int64 exact; a bool input
 * is refused naming the node. */
static void check_reduce_max(void)
{
    test_op_case c;
    const float xf[] = {1.0f, -3.0f, 2.5f, -1.0f, NAN, 0.0f};
    const int64_t axes2[] = {2}, axis_last = -1;
    const ptq_attr keep0_axes2[] = {{.name = "keepdims", .type = PTQ_ATTR_INT, .i = 0},
                                    {.name = "axes", .type = PTQ_ATTR_INTS, .n = 1, .ints = axes2}};
    test_case_init(&c, "ReduceMax", 13, keep0_axes2, 2, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, xf, 3, DIMS(1, 2, 3));
    CHECK_MSG(test_case_run(&c, &ptq_op_ReduceMax, 0) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(test_dims_are(&c.out[0], 2, DIMS(1, 2)) && ((float *)c.out[0].data)[0] == 2.5f &&
          isnan(((float *)c.out[0].data)[1]));
    test_case_free(&c);
    test_case_init(&c, "ReduceMax", 18, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, xf, 2, DIMS(2, 0));
    test_case_input(&c, 1, PTQ_DT_INT64, &axis_last, 1, DIMS(1));
    CHECK_MSG(test_case_run(&c, &ptq_op_ReduceMax, 0) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(test_dims_are(&c.out[0], 2, DIMS(2, 1)) && isinf(((float *)c.out[0].data)[0]) &&
          ((float *)c.out[0].data)[1] < 0);
    test_case_free(&c);
    const int64_t xl[] = {INT64_MAX - 1, INT64_MAX, INT64_MIN, -5};
    test_case_init(&c, "ReduceMax", 18, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, xl, 2, DIMS(2, 2));
    test_case_input(&c, 1, PTQ_DT_INT64, &axis_last, 1, DIMS(1));
    CHECK_MSG(test_case_run(&c, &ptq_op_ReduceMax, 0) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(c.out[0].dtype == PTQ_DT_INT64 && ((int64_t *)c.out[0].data)[0] == INT64_MAX &&
          ((int64_t *)c.out[0].data)[1] == -5);
    test_case_free(&c);
    const int32_t xi[] = {7};
    test_case_init(&c, "ReduceMax", 13, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_INT32, xi, 2, DIMS(1, 0));
    CHECK_MSG(test_case_run(&c, &ptq_op_ReduceMax, 0) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(c.out[0].dtype == PTQ_DT_INT32 && ((int32_t *)c.out[0].data)[0] == INT32_MIN);
    test_case_free(&c);
    const unsigned char bools[] = {1, 0};
    test_case_init(&c, "ReduceMax", 13, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_BOOL, bools, 1, DIMS(2));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_ReduceMax, 0), PTQ_ERR_UNSUPPORTED));
    test_case_free(&c);
}

/* ArgMax as a decoder classifier's pooling takes it (int32 from eq(ids, pad).int(), axis -1, keepdims 0): ties give
 * the first index, or the last with select_last_index; a float NaN counts as the largest (numpy's argmax); int64
 * output; an empty axis is refused naming the node. */
static void check_argmax(void)
{
    test_op_case c;
    const int32_t xi[] = {0, 0, 1, 1, 0, 0, 0, 0}; /* [2, 4]: row 1 has no pad, so index 0 */
    const ptq_attr last_keep0[] = {{.name = "axis", .type = PTQ_ATTR_INT, .i = -1},
                                   {.name = "keepdims", .type = PTQ_ATTR_INT, .i = 0}};
    test_case_init(&c, "ArgMax", 13, last_keep0, 2, 1, 1);
    test_case_input(&c, 0, PTQ_DT_INT32, xi, 2, DIMS(2, 4));
    CHECK_MSG(test_case_run(&c, &ptq_op_ArgMax, 0) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(c.out[0].dtype == PTQ_DT_INT64 && test_dims_are(&c.out[0], 1, DIMS(2)) &&
          ((int64_t *)c.out[0].data)[0] == 2 && ((int64_t *)c.out[0].data)[1] == 0);
    test_case_free(&c);
    const ptq_attr sel_last[] = {{.name = "axis", .type = PTQ_ATTR_INT, .i = -1},
                                 {.name = "keepdims", .type = PTQ_ATTR_INT, .i = 0},
                                 {.name = "select_last_index", .type = PTQ_ATTR_INT, .i = 1}};
    test_case_init(&c, "ArgMax", 13, sel_last, 3, 1, 1);
    test_case_input(&c, 0, PTQ_DT_INT32, xi, 2, DIMS(2, 4));
    CHECK_MSG(test_case_run(&c, &ptq_op_ArgMax, 0) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(((int64_t *)c.out[0].data)[0] == 3 && ((int64_t *)c.out[0].data)[1] == 3);
    test_case_free(&c);
    const float xf[] = {1.0f, 5.0f, -2.0f, 7.0f, NAN, 0.5f}; /* [2, 3] over axis 0 (default), kept */
    test_case_init(&c, "ArgMax", 13, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, xf, 2, DIMS(2, 3));
    CHECK_MSG(test_case_run(&c, &ptq_op_ArgMax, 0) == PTQ_OK, "%s", c.ctx.msg);
    const int64_t want_f[] = {1, 1, 1};
    CHECK(test_dims_are(&c.out[0], 2, DIMS(1, 3)) && memcmp(c.out[0].data, want_f, sizeof want_f) == 0);
    test_case_free(&c);
    test_case_init(&c, "ArgMax", 13, last_keep0, 2, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, xf, 2, DIMS(3, 0));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_ArgMax, 0), PTQ_ERR_SHAPE));
    test_case_free(&c);
}

/* Trilu as torch exports tril/triu for causal masks: a bool upper triangle above the diagonal (k = 1), the lower
 * triangle of a batch of float matrices (k absent, and k = -1), k at the int64 extremes keeping or clearing all;
 * rank 1 and an int32 k are refused naming the node. */
static void check_trilu(void)
{
    test_op_case c;
    const unsigned char ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    const int64_t k1 = 1, km1 = -1, kmin = INT64_MIN, kmax = INT64_MAX;
    test_case_init(&c, "Trilu", 14, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_BOOL, ones, 2, DIMS(3, 3));
    test_case_input(&c, 1, PTQ_DT_INT64, &k1, 0, NULL);
    CHECK_MSG(test_case_run(&c, &ptq_op_Trilu, 0) == PTQ_OK, "%s", c.ctx.msg);
    const unsigned char want_triu1[9] = {0, 1, 1, 0, 0, 1, 0, 0, 0};
    CHECK(c.out[0].dtype == PTQ_DT_BOOL && test_dims_are(&c.out[0], 2, DIMS(3, 3)) &&
          memcmp(c.out[0].data, want_triu1, sizeof want_triu1) == 0);
    test_case_free(&c);
    const ptq_attr lower[] = {{.name = "upper", .type = PTQ_ATTR_INT, .i = 0}};
    const float xf[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}; /* [2, 2, 3] */
    test_case_init(&c, "Trilu", 14, lower, 1, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, xf, 3, DIMS(2, 2, 3));
    CHECK_MSG(test_case_run(&c, &ptq_op_Trilu, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float want_tril[12] = {1, 0, 0, 4, 5, 0, 7, 0, 0, 10, 11, 0};
    CHECK(test_dims_are(&c.out[0], 3, DIMS(2, 2, 3)) && memcmp(c.out[0].data, want_tril, sizeof want_tril) == 0);
    test_case_free(&c);
    test_case_init(&c, "Trilu", 14, lower, 1, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, xf, 3, DIMS(2, 2, 3));
    test_case_input(&c, 1, PTQ_DT_INT64, &km1, 0, NULL);
    CHECK_MSG(test_case_run(&c, &ptq_op_Trilu, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float want_tril_m1[12] = {0, 0, 0, 4, 0, 0, 0, 0, 0, 10, 0, 0};
    CHECK(memcmp(c.out[0].data, want_tril_m1, sizeof want_tril_m1) == 0);
    test_case_free(&c);
    for (int e = 0; e < 2; e++) { /* upper with k = INT64_MIN keeps all, k = INT64_MAX clears all */
        test_case_init(&c, "Trilu", 14, NULL, 0, 2, 1);
        test_case_input(&c, 0, PTQ_DT_FLOAT, xf, 2, DIMS(3, 4));
        test_case_input(&c, 1, PTQ_DT_INT64, e ? &kmax : &kmin, 0, NULL);
        CHECK_MSG(test_case_run(&c, &ptq_op_Trilu, 0) == PTQ_OK, "%s", c.ctx.msg);
        int same = 0, zero = 0;
        for (int i = 0; i < 12; i++) {
            same += ((float *)c.out[0].data)[i] == xf[i];
            zero += ((float *)c.out[0].data)[i] == 0.0f;
        }
        CHECK_MSG(e ? zero == 12 : same == 12, "k %s", e ? "INT64_MAX" : "INT64_MIN");
        test_case_free(&c);
    }
    test_case_init(&c, "Trilu", 14, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, xf, 1, DIMS(12));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Trilu, 0), PTQ_ERR_SHAPE));
    test_case_free(&c);
    const int32_t k32 = 1;
    test_case_init(&c, "Trilu", 14, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, xf, 2, DIMS(3, 4));
    test_case_input(&c, 1, PTQ_DT_INT32, &k32, 0, NULL);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Trilu, 0), PTQ_ERR_FORMAT));
    test_case_free(&c);
}

/* Abs as T5's relative position buckets take it (|i - j| of int64 positions), INT64_MIN wrapping to itself as
 * onnxruntime's; float32 -0 to 0 and NaN kept; uint8 copied; bool refused naming the node. */
static void check_abs(void)
{
    test_op_case c;
    const int64_t xl[] = {-3, 0, 5, INT64_MIN, INT64_MAX, -INT64_MAX};
    test_case_init(&c, "Abs", 13, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, xl, 2, DIMS(2, 3));
    CHECK_MSG(test_case_run(&c, &ptq_op_Abs, 0) == PTQ_OK, "%s", c.ctx.msg);
    const int64_t want_l[] = {3, 0, 5, INT64_MIN, INT64_MAX, INT64_MAX};
    CHECK(c.out[0].dtype == PTQ_DT_INT64 && test_dims_are(&c.out[0], 2, DIMS(2, 3)) &&
          memcmp(c.out[0].data, want_l, sizeof want_l) == 0);
    test_case_free(&c);
    const int32_t xi[] = {INT32_MIN, -7, 7};
    test_case_init(&c, "Abs", 13, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_INT32, xi, 1, DIMS(3));
    CHECK(test_case_run(&c, &ptq_op_Abs, 0) == PTQ_OK && ((int32_t *)c.out[0].data)[0] == INT32_MIN &&
          ((int32_t *)c.out[0].data)[1] == 7 && ((int32_t *)c.out[0].data)[2] == 7);
    test_case_free(&c);
    const float xf[] = {-1.5f, -0.0f, NAN, -INFINITY};
    test_case_init(&c, "Abs", 6, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, xf, 1, DIMS(4));
    CHECK_MSG(test_case_run(&c, &ptq_op_Abs, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float *yf = c.out[0].data;
    CHECK(c.out[0].dtype == PTQ_DT_FLOAT && yf[0] == 1.5f && yf[1] == 0.0f && !signbit(yf[1]) && isnan(yf[2]) &&
          yf[3] == INFINITY);
    test_case_free(&c);
    const uint8_t xu[] = {0, 200};
    test_case_init(&c, "Abs", 13, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_UINT8, xu, 1, DIMS(2));
    CHECK(test_case_run(&c, &ptq_op_Abs, 0) == PTQ_OK && memcmp(c.out[0].data, xu, sizeof xu) == 0);
    test_case_free(&c);
    const uint8_t xb[] = {0, 1};
    test_case_init(&c, "Abs", 13, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_BOOL, xb, 1, DIMS(2));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Abs, 0), PTQ_ERR_UNSUPPORTED));
    test_case_free(&c);
}

/* Greater as T5's relative position buckets take it: int64 [3, 1] > [1] scalar 0, broadcast to [3, 3] with the
 * int64 extremes; float32 NaN neither greater nor less, -0 not greater than 0; uint32 values past INT32_MAX
 * compared unsigned; bool and mixed dtypes refused naming the node. */
static void check_greater(void)
{
    test_op_case c;
    const int64_t ga[] = {-1, 0, INT64_MAX}, gb[] = {INT64_MIN, 0, 1};
    test_case_init(&c, "Greater", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, ga, 2, DIMS(3, 1));
    test_case_input(&c, 1, PTQ_DT_INT64, gb, 1, DIMS(3));
    CHECK_MSG(test_case_run(&c, &ptq_op_Greater, 0) == PTQ_OK, "%s", c.ctx.msg);
    const unsigned char want_gt[] = {1, 0, 0, 1, 0, 0, 1, 1, 1};
    CHECK(c.out[0].dtype == PTQ_DT_BOOL && test_dims_are(&c.out[0], 2, DIMS(3, 3)) &&
          memcmp(c.out[0].data, want_gt, sizeof want_gt) == 0);
    test_case_free(&c);
    const float fa[] = {NAN, 1.0f, -0.0f, 2.0f}, fb[] = {1.0f, NAN, 0.0f, -INFINITY};
    test_case_init(&c, "Greater", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, fa, 1, DIMS(4));
    test_case_input(&c, 1, PTQ_DT_FLOAT, fb, 1, DIMS(4));
    CHECK_MSG(test_case_run(&c, &ptq_op_Greater, 0) == PTQ_OK, "%s", c.ctx.msg);
    const unsigned char want_f[] = {0, 0, 0, 1};
    CHECK(memcmp(c.out[0].data, want_f, sizeof want_f) == 0);
    test_case_free(&c);
    const uint32_t ua[] = {0x80000000u, 1}, ub[] = {1, 0x80000000u};
    test_case_init(&c, "Greater", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_UINT32, ua, 1, DIMS(2));
    test_case_input(&c, 1, PTQ_DT_UINT32, ub, 1, DIMS(2));
    CHECK(test_case_run(&c, &ptq_op_Greater, 0) == PTQ_OK && ((unsigned char *)c.out[0].data)[0] == 1 &&
          ((unsigned char *)c.out[0].data)[1] == 0);
    test_case_free(&c);
    const int32_t ia[] = {INT32_MIN, 5}, ib[] = {INT32_MAX, 5};
    test_case_init(&c, "Greater", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_INT32, ib, 1, DIMS(2));
    test_case_input(&c, 1, PTQ_DT_INT32, ia, 1, DIMS(2));
    CHECK(test_case_run(&c, &ptq_op_Greater, 0) == PTQ_OK && ((unsigned char *)c.out[0].data)[0] == 1 &&
          ((unsigned char *)c.out[0].data)[1] == 0);
    test_case_free(&c);
    const uint8_t bb[] = {1, 0};
    test_case_init(&c, "Greater", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_BOOL, bb, 1, DIMS(2));
    test_case_input(&c, 1, PTQ_DT_BOOL, bb, 1, DIMS(2));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Greater, 0), PTQ_ERR_FORMAT));
    test_case_free(&c);
    test_case_init(&c, "Greater", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, ga, 1, DIMS(3));
    test_case_input(&c, 1, PTQ_DT_FLOAT, fb, 1, DIMS(3));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Greater, 0), PTQ_ERR_FORMAT));
    test_case_free(&c);
}

/* Less as T5's buckets take it (|j - i| < 2: int64 [2, 2] against a scalar), float32 NaN and -0, uint64 past
 * INT64_MAX compared unsigned; bool refused naming the node. */
static void check_less(void)
{
    test_op_case c;
    const int64_t la[] = {0, 1, 2, INT64_MIN}, lb = 2;
    test_case_init(&c, "Less", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, la, 2, DIMS(2, 2));
    test_case_input(&c, 1, PTQ_DT_INT64, &lb, 0, NULL);
    CHECK_MSG(test_case_run(&c, &ptq_op_Less, 0) == PTQ_OK, "%s", c.ctx.msg);
    const unsigned char want_l[] = {1, 1, 0, 1};
    CHECK(c.out[0].dtype == PTQ_DT_BOOL && test_dims_are(&c.out[0], 2, DIMS(2, 2)) &&
          memcmp(c.out[0].data, want_l, sizeof want_l) == 0);
    test_case_free(&c);
    const float fa[] = {NAN, 1.0f, -0.0f, -INFINITY}, fb[] = {1.0f, NAN, 0.0f, 2.0f};
    test_case_init(&c, "Less", 9, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, fa, 1, DIMS(4));
    test_case_input(&c, 1, PTQ_DT_FLOAT, fb, 1, DIMS(4));
    CHECK_MSG(test_case_run(&c, &ptq_op_Less, 0) == PTQ_OK, "%s", c.ctx.msg);
    const unsigned char want_f[] = {0, 0, 0, 1};
    CHECK(memcmp(c.out[0].data, want_f, sizeof want_f) == 0);
    test_case_free(&c);
    const uint64_t ua[] = {1, UINT64_MAX}, ub[] = {UINT64_MAX, 1};
    test_case_init(&c, "Less", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_UINT64, ua, 1, DIMS(2));
    test_case_input(&c, 1, PTQ_DT_UINT64, ub, 1, DIMS(2));
    CHECK(test_case_run(&c, &ptq_op_Less, 0) == PTQ_OK && ((unsigned char *)c.out[0].data)[0] == 1 &&
          ((unsigned char *)c.out[0].data)[1] == 0);
    test_case_free(&c);
    const uint8_t bb[] = {0, 1};
    test_case_init(&c, "Less", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_BOOL, bb, 1, DIMS(2));
    test_case_input(&c, 1, PTQ_DT_BOOL, bb, 1, DIMS(2));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Less, 0), PTQ_ERR_FORMAT));
    test_case_free(&c);
}

/* GreaterOrEqual (torch's ge): int32 [2, 1] >= [3] with ties, float32 -0 >= 0 and NaN >= NaN false. */
static void check_greater_or_equal(void)
{
    test_op_case c;
    const int32_t a[] = {1, INT32_MIN}, b[] = {0, 1, INT32_MIN};
    test_case_init(&c, "GreaterOrEqual", 16, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_INT32, a, 2, DIMS(2, 1));
    test_case_input(&c, 1, PTQ_DT_INT32, b, 1, DIMS(3));
    CHECK_MSG(test_case_run(&c, &ptq_op_GreaterOrEqual, 0) == PTQ_OK, "%s", c.ctx.msg);
    const unsigned char want[] = {1, 1, 1, 0, 0, 1};
    CHECK(c.out[0].dtype == PTQ_DT_BOOL && test_dims_are(&c.out[0], 2, DIMS(2, 3)) &&
          memcmp(c.out[0].data, want, sizeof want) == 0);
    test_case_free(&c);
    const float fa[] = {-0.0f, NAN, 1.0f}, fb[] = {0.0f, NAN, 2.0f};
    test_case_init(&c, "GreaterOrEqual", 12, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, fa, 1, DIMS(3));
    test_case_input(&c, 1, PTQ_DT_FLOAT, fb, 1, DIMS(3));
    CHECK_MSG(test_case_run(&c, &ptq_op_GreaterOrEqual, 0) == PTQ_OK, "%s", c.ctx.msg);
    const unsigned char want_f[] = {1, 0, 0};
    CHECK(memcmp(c.out[0].data, want_f, sizeof want_f) == 0);
    test_case_free(&c);
}

/* LessOrEqual (torch's le): int64 [3] <= a scalar with ties and INT64_MAX, float32 0 <= -0 true, NaN false. */
static void check_less_or_equal(void)
{
    test_op_case c;
    const int64_t a[] = {1, 2, INT64_MAX}, b = 2;
    test_case_init(&c, "LessOrEqual", 16, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, a, 1, DIMS(3));
    test_case_input(&c, 1, PTQ_DT_INT64, &b, 0, NULL);
    CHECK_MSG(test_case_run(&c, &ptq_op_LessOrEqual, 0) == PTQ_OK, "%s", c.ctx.msg);
    const unsigned char want[] = {1, 1, 0};
    CHECK(c.out[0].dtype == PTQ_DT_BOOL && test_dims_are(&c.out[0], 1, DIMS(3)) &&
          memcmp(c.out[0].data, want, sizeof want) == 0);
    test_case_free(&c);
    const float fa[] = {0.0f, NAN, 3.0f}, fb[] = {-0.0f, 1.0f, 2.0f};
    test_case_init(&c, "LessOrEqual", 12, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, fa, 1, DIMS(3));
    test_case_input(&c, 1, PTQ_DT_FLOAT, fb, 1, DIMS(3));
    CHECK_MSG(test_case_run(&c, &ptq_op_LessOrEqual, 0) == PTQ_OK, "%s", c.ctx.msg);
    const unsigned char want_f[] = {1, 0, 0};
    CHECK(memcmp(c.out[0].data, want_f, sizeof want_f) == 0);
    test_case_free(&c);
}

/* And: bool [2, 1] with [2] broadcast to [2, 2] (a nonzero byte is true, the output 0 or 1); int32 refused naming
 * the node. */
static void check_and(void)
{
    test_op_case c;
    const uint8_t a[] = {0, 7}, b[] = {1, 2};
    test_case_init(&c, "And", 7, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_BOOL, a, 2, DIMS(2, 1));
    test_case_input(&c, 1, PTQ_DT_BOOL, b, 1, DIMS(2));
    CHECK_MSG(test_case_run(&c, &ptq_op_And, 0) == PTQ_OK, "%s", c.ctx.msg);
    const unsigned char want[] = {0, 0, 1, 1};
    CHECK(c.out[0].dtype == PTQ_DT_BOOL && test_dims_are(&c.out[0], 2, DIMS(2, 2)) &&
          memcmp(c.out[0].data, want, sizeof want) == 0);
    test_case_free(&c);
    const uint8_t z[] = {0, 1};
    test_case_init(&c, "And", 7, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_BOOL, z, 1, DIMS(2));
    test_case_input(&c, 1, PTQ_DT_BOOL, z, 1, DIMS(2));
    CHECK(test_case_run(&c, &ptq_op_And, 0) == PTQ_OK && ((unsigned char *)c.out[0].data)[0] == 0 &&
          ((unsigned char *)c.out[0].data)[1] == 1);
    test_case_free(&c);
    const int32_t xi[] = {1, 0};
    test_case_init(&c, "And", 7, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_INT32, xi, 1, DIMS(2));
    test_case_input(&c, 1, PTQ_DT_INT32, xi, 1, DIMS(2));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_And, 0), PTQ_ERR_FORMAT));
    test_case_free(&c);
}

/* Or: bool [2] with a scalar, each way (a nonzero byte true); float32 refused naming the node. */
static void check_or(void)
{
    test_op_case c;
    const uint8_t a[] = {0, 9}, f = 0, t = 5;
    for (int k = 0; k < 2; k++) {
        test_case_init(&c, "Or", 7, NULL, 0, 2, 1);
        test_case_input(&c, 0, PTQ_DT_BOOL, a, 1, DIMS(2));
        test_case_input(&c, 1, PTQ_DT_BOOL, k ? &t : &f, 0, NULL);
        CHECK_MSG(test_case_run(&c, &ptq_op_Or, 0) == PTQ_OK, "%s", c.ctx.msg);
        const unsigned char *y = c.out[0].data;
        CHECK(c.out[0].dtype == PTQ_DT_BOOL && test_dims_are(&c.out[0], 1, DIMS(2)) && y[0] == k && y[1] == 1);
        test_case_free(&c);
    }
    const float xf[] = {1.0f, 0.0f};
    test_case_init(&c, "Or", 7, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, xf, 1, DIMS(2));
    test_case_input(&c, 1, PTQ_DT_FLOAT, xf, 1, DIMS(2));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Or, 0), PTQ_ERR_FORMAT));
    test_case_free(&c);
}

/* ---- the graph ---- */

enum { SEQ = 4, HID = 6, SPLIT0 = 2 };
static const float bias6[HID] = {0.5f, -1, 0.25f, 2, -0.5f, 1}, ln_scale[HID] = {1, 2, 0.5f, 1, 1, -1},
                   ln_bias[HID] = {0, 0.1f, 0, -0.2f, 0, 0.3f};

/* x [N, 4, 6] -> y: rows i with Range(0, dim 1)[i] % 2 == 0 keep x, the others 0 (Where), plus a bias
 * Expanded to Shape(x), Split [2, 4] on the last axis, Gelu (tanh) on the second part, Concat,
 * LayerNormalization. opset: 20, or 17 to see Gelu refused. */
static ptq_graph *build_graph(ptq_ctx *ctx, int64_t opset)
{
    ptq_onnx_builder b;
    memset(&b, 0, sizeof b);
    const int64_t zero = 0, one = 1, two = 2, ax1[] = {1}, split[] = {SPLIT0, HID - SPLIT0};
    const float zf = 0.0f;
    ptq_ob_value(&b, 0, "x", 3, DIMS(-1, SEQ, HID));
    ptq_ob_initializer(&b, "zero", 7, 0, NULL, &zero, sizeof zero);
    ptq_ob_initializer(&b, "one", 7, 0, NULL, &one, sizeof one);
    ptq_ob_initializer(&b, "two", 7, 0, NULL, &two, sizeof two);
    ptq_ob_initializer(&b, "ax1", 7, 1, DIMS(1), ax1, sizeof ax1);
    ptq_ob_initializer(&b, "split", 7, 1, DIMS(2), split, sizeof split);
    ptq_ob_initializer(&b, "zf", 1, 0, NULL, &zf, sizeof zf);
    ptq_ob_initializer(&b, "bias", 1, 3, DIMS(1, 1, HID), bias6, sizeof bias6);
    ptq_ob_initializer(&b, "ln_scale", 1, 1, DIMS(HID), ln_scale, sizeof ln_scale);
    ptq_ob_initializer(&b, "ln_bias", 1, 1, DIMS(HID), ln_bias, sizeof ln_bias);
    const ptq_ob_attr axis_last = {.name = "axis", .type = PTQ_ATTR_INT, .i = -1};
    const ptq_ob_attr tanh_form = {.name = "approximate", .type = PTQ_ATTR_STRING, .s = "tanh"};
#define NODE(OP, INS, OUTS, N_ATTRS, ATTRS)                                                                      \
    ptq_ob_node(&b, OP, OP "_0", (int)(sizeof INS / sizeof INS[0]), INS, (int)(sizeof OUTS / sizeof OUTS[0]), \
                OUTS, N_ATTRS, ATTRS)
    const char *in_shape[] = {"x"}, *out_shape[] = {"s"};
    const char *in_gather[] = {"s", "one"}, *out_gather[] = {"seq"};
    const char *in_range[] = {"zero", "seq", "one"}, *out_range[] = {"r"};
    const char *in_mod[] = {"r", "two"}, *out_mod[] = {"m"};
    const char *in_eq[] = {"m", "zero"}, *out_eq[] = {"e"};
    const char *in_unsq[] = {"e", "ax1"}, *out_unsq[] = {"e2"};
    const char *in_where[] = {"e2", "x", "zf"}, *out_where[] = {"w"};
    const char *in_expand[] = {"bias", "s"}, *out_expand[] = {"ex"};
    const char *in_add[] = {"w", "ex"}, *out_add[] = {"a"};
    const char *in_split[] = {"a", "split"}, *out_split[] = {"p0", "p1"};
    const char *in_gelu[] = {"p1"}, *out_gelu[] = {"g"};
    const char *in_cat[] = {"p0", "g"}, *out_cat[] = {"c"};
    const char *in_ln[] = {"c", "ln_scale", "ln_bias"}, *out_ln[] = {"y"};
    NODE("Shape", in_shape, out_shape, 0, NULL);
    NODE("Gather", in_gather, out_gather, 0, NULL);
    NODE("Range", in_range, out_range, 0, NULL);
    NODE("Mod", in_mod, out_mod, 0, NULL);
    NODE("Equal", in_eq, out_eq, 0, NULL);
    NODE("Unsqueeze", in_unsq, out_unsq, 0, NULL);
    NODE("Where", in_where, out_where, 0, NULL);
    NODE("Expand", in_expand, out_expand, 0, NULL);
    NODE("Add", in_add, out_add, 0, NULL);
    NODE("Split", in_split, out_split, 1, &axis_last);
    NODE("Gelu", in_gelu, out_gelu, 1, &tanh_form);
    NODE("Concat", in_cat, out_cat, 1, &axis_last);
    NODE("LayerNormalization", in_ln, out_ln, 1, &axis_last);
#undef NODE
    ptq_ob_value(&b, 1, "y", 3, DIMS(-1, SEQ, HID));
    void *bytes = NULL;
    size_t n_bytes = 0;
    ptq_graph *g = NULL;
    if (ptq_ob_finish(ctx, &b, "transformer_ops", "test_ops_transformer", opset, &bytes, &n_bytes) != PTQ_OK ||
        ptq_graph_load_onnx_bytes(ctx, bytes, n_bytes, NULL, &g) != PTQ_OK)
        g = NULL;
    free(bytes);
    return g;
}

/* y [n, SEQ, HID] for x as build_graph's graph computes it, in double. */
static void graph_expected(int64_t n, const float *x, double *y)
{
    for (int64_t r = 0; r < n * SEQ; r++) {
        double row[HID], mu = 0, var = 0;
        for (int j = 0; j < HID; j++) {
            row[j] = ((r % SEQ) % 2 == 0 ? x[r * HID + j] : 0.0) + bias6[j];
            if (j >= SPLIT0)
                row[j] = gelu_tanh(row[j]);
            mu += row[j] / HID;
        }
        for (int j = 0; j < HID; j++)
            var += (row[j] - mu) * (row[j] - mu) / HID;
        for (int j = 0; j < HID; j++)
            y[r * HID + j] = (row[j] - mu) / sqrt(var + 1e-5) * ln_scale[j] + ln_bias[j];
    }
}

static void check_graph(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_graph *g = build_graph(&ctx, 20);
    CHECK_MSG(g != NULL, "%s", ctx.msg);
    if (!g)
        return;
    /* shape inference folds Shape -> Gather -> Range -> Mod -> Equal: Range's length is known at load */
    CHECK_MSG(ptq_graph_infer_shapes(&ctx, g, 2) == PTQ_OK, "%s", ctx.msg);
    const int r = ptq_graph_find_value(g, "r"), y = ptq_graph_find_value(g, "y"), e = ptq_graph_find_value(g, "e");
    CHECK(r >= 0 && g->values[r].ndim == 1 && g->values[r].dims[0] == SEQ && g->values[r].dtype == PTQ_DT_INT64);
    CHECK(e >= 0 && g->values[e].dtype == PTQ_DT_BOOL);
    CHECK(y >= 0 && g->values[y].ndim == 3 && g->values[y].dims[0] == 2 && g->values[y].dims[2] == HID);
    const int v_ex = ptq_graph_find_value(g, "ex"), p1 = ptq_graph_find_value(g, "p1");
    CHECK(v_ex >= 0 && g->values[v_ex].ndim == 3 && g->values[v_ex].dims[0] == 2 && g->values[v_ex].dims[1] == SEQ);
    CHECK(p1 >= 0 && g->values[p1].ndim == 3 && g->values[p1].dims[2] == HID - SPLIT0);

    char why[256];
    const int n_dev = ptq_cuda_available(why, sizeof why) ? 3 : 2;
    static const ptq_device devices[] = {PTQ_DEVICE_REF, PTQ_DEVICE_CPU, PTQ_DEVICE_CUDA};
    for (int d = 0; d < n_dev; d++) {
        ptq_exec_params p;
        ptq_exec *ex = NULL;
        memset(&p, 0, sizeof p);
        p.device = devices[d];
        CHECK_MSG(ptq_exec_create(&ctx, g, &p, &ex) == PTQ_OK, "device %d: %s", d, ctx.msg);
        for (int64_t n = 2; ex && n <= 3; n++) { /* the batch stays dynamic */
            float x[3 * SEQ * HID];
            double want[3 * SEQ * HID];
            test_fill_uniform(x, n * SEQ * HID, -3.0f, 3.0f);
            graph_expected(n, x, want);
            ptq_tensor in = {.dtype = PTQ_DT_FLOAT, .ndim = 3, .dims = {n, SEQ, HID}, .data = x, .mem = PTQ_MEM_HOST};
            ptq_tensor out;
            memset(&out, 0, sizeof out);
            ptq_status st = ptq_exec_run(&ctx, ex, &in, &out);
            CHECK_MSG(st == PTQ_OK, "device %d batch %lld: %s", d, (long long)n, ctx.msg);
            if (st != PTQ_OK)
                continue;
            CHECK(test_dims_are(&out, 3, DIMS(n, SEQ, HID)));
            int n_bad = 0;
            for (int64_t i = 0; i < n * SEQ * HID; i++)
                n_bad += !(fabs(((const float *)out.data)[i] - want[i]) <= 1e-5 + 1e-5 * fabs(want[i]));
            CHECK_MSG(n_bad == 0, "device %d batch %lld: %d values off", d, (long long)n, n_bad);
        }
        ptq_exec_free(ex);
    }
    ptq_graph_free(g);

    /* the same graph at opset 17: Gelu is not an op there */
    g = build_graph(&ctx, 17);
    CHECK_MSG(g != NULL, "%s", ctx.msg);
    ptq_exec_params p;
    ptq_exec *ex = NULL;
    memset(&p, 0, sizeof p);
    CHECK(g && ptq_exec_create(&ctx, g, &p, &ex) == PTQ_ERR_UNSUPPORTED && strstr(ctx.msg, "Gelu"));
    ptq_exec_free(ex);
    ptq_graph_free(g);
}

/* x [N, 2] -> y = x + mean(Expand(1, int64(x[0]))): the Expand's shape is the data's first row. The graph
 * borrows *bytes: free them after it. */
static ptq_graph *build_data_shape_graph(ptq_ctx *ctx, void **bytes)
{
    ptq_onnx_builder b;
    memset(&b, 0, sizeof b);
    const int64_t zero = 0, one = 1;
    const ptq_ob_attr to_int64 = {.name = "to", .type = PTQ_ATTR_INT, .i = 7};
    const ptq_ob_attr to_float = {.name = "to", .type = PTQ_ATTR_INT, .i = 1};
    const ptq_ob_attr keep0 = {.name = "keepdims", .type = PTQ_ATTR_INT, .i = 0};
    ptq_ob_value(&b, 0, "x", 2, DIMS(-1, 2));
    ptq_ob_initializer(&b, "zero", 7, 0, NULL, &zero, sizeof zero);
    ptq_ob_initializer(&b, "one", 7, 0, NULL, &one, sizeof one);
    const char *in_cast[] = {"x"}, *out_cast[] = {"xi"}, *in_row[] = {"xi", "zero"}, *out_row[] = {"shape"};
    const char *in_expand[] = {"one", "shape"}, *out_expand[] = {"big"}, *in_castf[] = {"big"}, *out_castf[] = {"bf"};
    const char *in_mean[] = {"bf"}, *out_mean[] = {"m"}, *in_add[] = {"x", "m"}, *out_add[] = {"y"};
    ptq_ob_node(&b, "Cast", "to_int", 1, in_cast, 1, out_cast, 1, &to_int64);
    ptq_ob_node(&b, "Gather", "first_row", 2, in_row, 1, out_row, 0, NULL);
    ptq_ob_node(&b, "Expand", "expand_from_data", 2, in_expand, 1, out_expand, 0, NULL);
    ptq_ob_node(&b, "Cast", "to_float", 1, in_castf, 1, out_castf, 1, &to_float);
    ptq_ob_node(&b, "ReduceMean", "mean", 1, in_mean, 1, out_mean, 1, &keep0);
    ptq_ob_node(&b, "Add", "add", 2, in_add, 1, out_add, 0, NULL);
    ptq_ob_value(&b, 1, "y", 2, DIMS(-1, 2));
    size_t n_bytes = 0;
    ptq_graph *g = NULL;
    *bytes = NULL;
    if (ptq_ob_finish(ctx, &b, "data_shape", "test_ops_transformer", 13, bytes, &n_bytes) != PTQ_OK ||
        ptq_graph_load_onnx_bytes(ctx, *bytes, n_bytes, NULL, &g) != PTQ_OK)
        g = NULL;
    return g;
}

static void check_data_shape_limit(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    void *bytes = NULL;
    ptq_graph *g = build_data_shape_graph(&ctx, &bytes);
    CHECK_MSG(g != NULL, "%s", ctx.msg);
    if (!g) {
        free(bytes);
        return;
    }
    ptq_exec_params p;
    ptq_exec *ex = NULL;
    memset(&p, 0, sizeof p);
    p.device = PTQ_DEVICE_CPU;
    CHECK_MSG(ptq_exec_create(&ctx, g, &p, &ex) == PTQ_OK, "%s", ctx.msg);
    /* rows: a small shape (runs), 2^24 x 2 int64 (256 MiB, over a 64 MiB limit), 2^61 x 2 (2^65 bytes) */
    const float rows[3][2] = {{3, 2}, {16777216.0f, 2}, {2305843009213693952.0f, 2}};
    ptq_memory_set_budget((uint64_t)64 << 20);
    for (int r = 0; ex && r < 3; r++) {
        float x[2 * 2] = {rows[r][0], rows[r][1], 5, 6};
        ptq_tensor in = {.dtype = PTQ_DT_FLOAT, .ndim = 2, .dims = {2, 2}, .data = x, .mem = PTQ_MEM_HOST};
        ptq_tensor out;
        memset(&out, 0, sizeof out);
        ptq_status st = ptq_exec_run(&ctx, ex, &in, &out);
        if (r == 0) {
            CHECK_MSG(st == PTQ_OK && ((const float *)out.data)[3] == 7.0f, "%s", ctx.msg);
        } else {
            CHECK_MSG(st == PTQ_ERR_NOMEM && strstr(ctx.msg, "expand_from_data") && strstr(ctx.msg, "'big'") &&
                          strstr(ctx.msg, "--max-memory"),
                      "row %d: status %d: %s", r, (int)st, ctx.msg);
        }
    }
    ptq_memory_set_budget(0);
    ptq_exec_free(ex);
    ptq_graph_free(g);
    free(bytes);
}

static void check_constant_of_shape(void)
{
    test_op_case c;
    /* no value: float32 zeros of the shape */
    const int64_t shape23[] = {2, 3};
    test_case_init(&c, "ConstantOfShape", 9, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, shape23, 1, DIMS(2));
    CHECK_MSG(test_case_run(&c, &ptq_op_ConstantOfShape, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float zeros[6] = {0};
    CHECK(c.out[0].dtype == PTQ_DT_FLOAT && test_dims_are(&c.out[0], 2, DIMS(2, 3)) &&
          memcmp(c.out[0].data, zeros, sizeof zeros) == 0);
    CHECK(ptq_op_host_input(&ptq_op_ConstantOfShape, 0));
    test_case_free(&c);
    /* value int64 [1] = -7 (torch's zeros_like / full of an index); bool true (a mask); float 1.5 */
    const int64_t seven = -7;
    const uint8_t yes = 1;
    const float one_half = 1.5f;
    ptq_value values[4];
    memset(values, 0, sizeof values);
    const struct { ptq_dtype dt; const void *data; size_t n_bytes; } fills[] = {
        {PTQ_DT_INT64, &seven, sizeof seven}, {PTQ_DT_BOOL, &yes, 1}, {PTQ_DT_FLOAT, &one_half, sizeof one_half}};
    for (int k = 0; k < 3; k++) {
        values[k + 1].name = "value";
        values[k + 1].dtype = fills[k].dt;
        values[k + 1].ndim = 1;
        values[k + 1].dims[0] = 1;
        values[k + 1].data = fills[k].data;
        values[k + 1].n_bytes = fills[k].n_bytes;
        values[k + 1].flags = PTQ_VALUE_CONSTANT;
    }
    for (int k = 0; k < 3; k++) {
        const ptq_attr value = {.name = "value", .type = PTQ_ATTR_TENSOR, .tensor = k + 1};
        const int64_t shape[] = {3, 1, 2};
        test_case_init(&c, "ConstantOfShape", 9, &value, 1, 1, 1);
        c.graph.n_values = 4;
        c.graph.values = values;
        test_case_input(&c, 0, PTQ_DT_INT64, shape, 1, DIMS(3));
        CHECK_MSG(test_case_run(&c, &ptq_op_ConstantOfShape, 0) == PTQ_OK, "%s", c.ctx.msg);
        CHECK(c.out[0].dtype == fills[k].dt && test_dims_are(&c.out[0], 3, DIMS(3, 1, 2)));
        const size_t elem = fills[k].n_bytes;
        for (int i = 0; i < 6; i++)
            CHECK_MSG(memcmp((const char *)c.out[0].data + i * elem, fills[k].data, elem) == 0, "fill %d elem %d", k,
                      i);
        test_case_free(&c);
    }
    /* an empty shape gives a scalar; a 0 entry an empty tensor */
    const ptq_attr value = {.name = "value", .type = PTQ_ATTR_TENSOR, .tensor = 1};
    test_case_init(&c, "ConstantOfShape", 9, &value, 1, 1, 1);
    c.graph.n_values = 4;
    c.graph.values = values;
    test_case_input(&c, 0, PTQ_DT_INT64, shape23, 1, DIMS(0));
    CHECK_MSG(test_case_run(&c, &ptq_op_ConstantOfShape, 0) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(c.out[0].ndim == 0 && *(const int64_t *)c.out[0].data == -7);
    test_case_free(&c);
    const int64_t shape40[] = {4, 0};
    test_case_init(&c, "ConstantOfShape", 9, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, shape40, 1, DIMS(2));
    CHECK_MSG(test_case_run(&c, &ptq_op_ConstantOfShape, 0) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(test_dims_are(&c.out[0], 2, DIMS(4, 0)));
    test_case_free(&c);
    /* refused, naming the node: a negative entry, a value of two elements, a float16 value */
    const int64_t neg[] = {2, -1};
    test_case_init(&c, "ConstantOfShape", 9, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, neg, 1, DIMS(2));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_ConstantOfShape, 0), PTQ_ERR_SHAPE) &&
          strstr(c.ctx.msg, "-1"));
    test_case_free(&c);
    values[1].dims[0] = 2;
    values[1].n_bytes = 2 * sizeof seven;
    test_case_init(&c, "ConstantOfShape", 9, &value, 1, 1, 1);
    c.graph.n_values = 4;
    c.graph.values = values;
    test_case_input(&c, 0, PTQ_DT_INT64, shape23, 1, DIMS(2));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_ConstantOfShape, 0), PTQ_ERR_FORMAT) &&
          strstr(c.ctx.msg, "one element"));
    test_case_free(&c);
    const uint16_t half_one = 0x3c00;
    values[1].dims[0] = 1;
    values[1].dtype = PTQ_DT_FLOAT16;
    values[1].data = &half_one;
    values[1].n_bytes = sizeof half_one;
    test_case_init(&c, "ConstantOfShape", 9, &value, 1, 1, 1);
    c.graph.n_values = 4;
    c.graph.values = values;
    test_case_input(&c, 0, PTQ_DT_INT64, shape23, 1, DIMS(2));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_ConstantOfShape, 0), PTQ_ERR_UNSUPPORTED) &&
          strstr(c.ctx.msg, "float16"));
    test_case_free(&c);
}

static void check_not(void)
{
    test_op_case c;
    const uint8_t x[] = {0, 1, 2, 255, 0, 1};
    const uint8_t want[] = {1, 0, 0, 0, 1, 0};
    test_case_init(&c, "Not", 1, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_BOOL, x, 2, DIMS(2, 3));
    CHECK_MSG(test_case_run(&c, &ptq_op_Not, 0) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(c.out[0].dtype == PTQ_DT_BOOL && test_dims_are(&c.out[0], 2, DIMS(2, 3)) &&
          memcmp(c.out[0].data, want, sizeof want) == 0);
    test_case_free(&c);
    const float f[] = {0.0f, 1.0f};
    test_case_init(&c, "Not", 1, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, f, 1, DIMS(2));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Not, 0), PTQ_ERR_FORMAT) && strstr(c.ctx.msg, "bool"));
    test_case_free(&c);
}

/* ScatterND(data, indices, updates) at opset with the reduction attribute red (NULL: none) into c, run on ref. */
static ptq_status scatter(test_op_case *c, int64_t opset, const char *red, ptq_dtype dt, const void *x, int x_nd,
                          const int64_t *x_dims, const int64_t *idx, int i_nd, const int64_t *i_dims, const void *u,
                          int u_nd, const int64_t *u_dims)
{
    static ptq_attr attr;
    attr = (ptq_attr){.name = "reduction", .type = PTQ_ATTR_STRING, .s = red};
    test_case_init(c, "ScatterND", opset, &attr, red ? 1 : 0, 3, 1);
    test_case_input(c, 0, dt, x, x_nd, x_dims);
    test_case_input(c, 1, PTQ_DT_INT64, idx, i_nd, i_dims);
    test_case_input(c, 2, dt, u, u_nd, u_dims);
    return test_case_run(c, &ptq_op_ScatterND, 1);
}

static void check_scatter_nd(void)
{
    test_op_case c;
    /* data [3, 2]: rows 2 and 0 (as -3) replaced; the input is left as it was */
    const float x[] = {1, 2, 3, 4, 5, 6};
    const int64_t rows[] = {2, -3};
    const float u_rows[] = {10, 11, 12, 13};
    CHECK_MSG(scatter(&c, 11, NULL, PTQ_DT_FLOAT, x, 2, DIMS(3, 2), rows, 2, DIMS(2, 1), u_rows, 2, DIMS(2, 2)) ==
                  PTQ_OK, "%s", c.ctx.msg);
    const float want_rows[] = {12, 13, 3, 4, 10, 11};
    CHECK(c.out[0].dtype == PTQ_DT_FLOAT && test_dims_are(&c.out[0], 2, DIMS(3, 2)) &&
          memcmp(c.out[0].data, want_rows, sizeof want_rows) == 0 && x[0] == 1);
    test_case_free(&c);
    /* elements (k = rank), [1, 2, 2] tuples; equal tuples: the last in index order wins, as onnxruntime */
    const int64_t elems[] = {0, 1, 2, 0, 0, 1, -1, -1};
    const float u_elems[] = {7, 8, 9, 10};
    CHECK_MSG(scatter(&c, 13, NULL, PTQ_DT_FLOAT, x, 2, DIMS(3, 2), elems, 3, DIMS(1, 4, 2), u_elems, 2,
                      DIMS(1, 4)) == PTQ_OK, "%s", c.ctx.msg);
    const float want_elems[] = {1, 9, 3, 4, 8, 10};
    CHECK(memcmp(c.out[0].data, want_elems, sizeof want_elems) == 0);
    test_case_free(&c);
    /* k = 0: each tuple addresses the whole of data, the last update stays */
    const float u_whole[] = {0, 0, 0, 0, 0, 0, 21, 22, 23, 24, 25, 26};
    CHECK_MSG(scatter(&c, 16, "none", PTQ_DT_FLOAT, x, 2, DIMS(3, 2), rows, 2, DIMS(2, 0), u_whole, 3,
                      DIMS(2, 3, 2)) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(memcmp(c.out[0].data, u_whole + 6, 6 * sizeof(float)) == 0);
    test_case_free(&c);
    /* reductions over equal tuples, in index order: add, mul; max and min take a NaN update and replace a NaN
     * in data (onnxruntime keeps data's element only where it is strictly greater / less) */
    const float xr[] = {2, NAN, 5};
    const int64_t twice[] = {0, 0, 1, 2};
    const float ur[] = {3, 4, 1, NAN};
    const char *reds[] = {"add", "mul", "max", "min"};
    const float want_red[4][3] = {{9, NAN, NAN}, {24, NAN, NAN}, {4, 1, NAN}, {2, 1, NAN}};
    for (int r = 0; r < 4; r++) {
        CHECK_MSG(scatter(&c, 18, reds[r], PTQ_DT_FLOAT, xr, 1, DIMS(3), twice, 2, DIMS(4, 1), ur, 1, DIMS(4)) ==
                      PTQ_OK, "%s: %s", reds[r], c.ctx.msg);
        const float *y = c.out[0].data;
        CHECK_MSG(y[0] == want_red[r][0] && (y[1] == want_red[r][1] || (isnan(y[1]) && r < 2)) && isnan(y[2]),
                  "%s: %g %g %g", reds[r], y[0], y[1], y[2]);
        test_case_free(&c);
    }
    /* float64, int32 (wrapping add, signed max), uint8 (unsigned max) and bool (add is or, mul is and) */
    const double xd[] = {0.1, 0.2};
    const int64_t one_at0[] = {0};
    const double ud[] = {0.2};
    CHECK(scatter(&c, 16, "add", PTQ_DT_DOUBLE, xd, 1, DIMS(2), one_at0, 2, DIMS(1, 1), ud, 1, DIMS(1)) == PTQ_OK &&
          ((const double *)c.out[0].data)[0] == 0.1 + 0.2);
    test_case_free(&c);
    const int32_t xi[] = {INT32_MAX, -5};
    const int64_t both[] = {0, 1};
    const int32_t ui[] = {1, -7};
    CHECK(scatter(&c, 16, "add", PTQ_DT_INT32, xi, 1, DIMS(2), both, 2, DIMS(2, 1), ui, 1, DIMS(2)) == PTQ_OK &&
          ((const int32_t *)c.out[0].data)[0] == INT32_MIN && ((const int32_t *)c.out[0].data)[1] == -12);
    test_case_free(&c);
    CHECK(scatter(&c, 18, "max", PTQ_DT_INT32, xi, 1, DIMS(2), both, 2, DIMS(2, 1), ui, 1, DIMS(2)) == PTQ_OK &&
          ((const int32_t *)c.out[0].data)[0] == INT32_MAX && ((const int32_t *)c.out[0].data)[1] == -5);
    test_case_free(&c);
    const uint8_t xu[] = {200, 3}, uu[] = {100, 250};
    CHECK(scatter(&c, 18, "max", PTQ_DT_UINT8, xu, 1, DIMS(2), both, 2, DIMS(2, 1), uu, 1, DIMS(2)) == PTQ_OK &&
          ((const uint8_t *)c.out[0].data)[0] == 200 && ((const uint8_t *)c.out[0].data)[1] == 250);
    test_case_free(&c);
    const uint8_t xb[] = {1, 0}, ub[] = {1, 1};
    CHECK(scatter(&c, 16, "add", PTQ_DT_BOOL, xb, 1, DIMS(2), both, 2, DIMS(2, 1), ub, 1, DIMS(2)) == PTQ_OK &&
          ((const uint8_t *)c.out[0].data)[0] == 1 && ((const uint8_t *)c.out[0].data)[1] == 1);
    test_case_free(&c);
    /* none on a dtype without arithmetic (float16 bytes) */
    const uint16_t xh[] = {0x3c00, 0x4000}, uh[] = {0x4200};
    CHECK(scatter(&c, 13, NULL, PTQ_DT_FLOAT16, xh, 1, DIMS(2), one_at0, 2, DIMS(1, 1), uh, 1, DIMS(1)) == PTQ_OK &&
          ((const uint16_t *)c.out[0].data)[0] == 0x4200 && ((const uint16_t *)c.out[0].data)[1] == 0x4000);
    test_case_free(&c);

    /* refused naming the node: an index past either end (3 and -4 for 3 rows, INT64_MIN), in any tuple */
    const int64_t bad_idx[][2] = {{0, 3}, {-4, 0}, {1, INT64_MIN}};
    for (int b = 0; b < 3; b++) {
        CHECK(test_fails_naming_node(&c, scatter(&c, 13, NULL, PTQ_DT_FLOAT, x, 2, DIMS(3, 2), bad_idx[b], 2,
                                                 DIMS(2, 1), u_rows, 2, DIMS(2, 2)), PTQ_ERR_DATA) &&
              strstr(c.ctx.msg, "out of range") && strstr(c.ctx.msg, "size 3"));
        test_case_free(&c);
    }
    /* updates of the wrong shape, indices deeper than data, rank-0 indices, int32 indices, mixed dtypes */
    CHECK(test_fails_naming_node(&c, scatter(&c, 13, NULL, PTQ_DT_FLOAT, x, 2, DIMS(3, 2), rows, 2, DIMS(2, 1),
                                             u_rows, 2, DIMS(1, 4)), PTQ_ERR_SHAPE) &&
          strstr(c.ctx.msg, "updates are 1x4") && strstr(c.ctx.msg, "= 2x2"));
    test_case_free(&c);
    CHECK(test_fails_naming_node(&c, scatter(&c, 13, NULL, PTQ_DT_FLOAT, x, 2, DIMS(3, 2), elems, 2, DIMS(1, 3),
                                             u_rows, 1, DIMS(1)), PTQ_ERR_SHAPE) && strstr(c.ctx.msg, "rank 2"));
    test_case_free(&c);
    CHECK(test_fails_naming_node(&c, scatter(&c, 13, NULL, PTQ_DT_FLOAT, x, 2, DIMS(3, 2), rows, 0, NULL, u_rows,
                                             0, NULL), PTQ_ERR_SHAPE));
    test_case_free(&c);
    test_case_init(&c, "ScatterND", 13, NULL, 0, 3, 1);
    const int32_t rows32[] = {2, 0};
    test_case_input(&c, 0, PTQ_DT_FLOAT, x, 2, DIMS(3, 2));
    test_case_input(&c, 1, PTQ_DT_INT32, rows32, 2, DIMS(2, 1));
    test_case_input(&c, 2, PTQ_DT_FLOAT, u_rows, 2, DIMS(2, 2));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_ScatterND, 0), PTQ_ERR_FORMAT) &&
          strstr(c.ctx.msg, "int64"));
    test_case_free(&c);
    test_case_init(&c, "ScatterND", 13, NULL, 0, 3, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, x, 2, DIMS(3, 2));
    test_case_input(&c, 1, PTQ_DT_INT64, rows, 2, DIMS(2, 1));
    test_case_input(&c, 2, PTQ_DT_DOUBLE, xd, 2, DIMS(2, 2));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_ScatterND, 0), PTQ_ERR_FORMAT) &&
          strstr(c.ctx.msg, "float64"));
    test_case_free(&c);
    /* reductions: max and min only from opset 18, unknown names, arithmetic on float16 */
    CHECK(test_fails_naming_node(&c, scatter(&c, 16, "max", PTQ_DT_FLOAT, xr, 1, DIMS(3), twice, 2, DIMS(4, 1), ur,
                                             1, DIMS(4)), PTQ_ERR_FORMAT) && strstr(c.ctx.msg, "opset 16"));
    test_case_free(&c);
    CHECK(test_fails_naming_node(&c, scatter(&c, 18, "sum", PTQ_DT_FLOAT, xr, 1, DIMS(3), twice, 2, DIMS(4, 1), ur,
                                             1, DIMS(4)), PTQ_ERR_FORMAT) && strstr(c.ctx.msg, "'sum'"));
    test_case_free(&c);
    CHECK(test_fails_naming_node(&c, scatter(&c, 16, "add", PTQ_DT_FLOAT16, xh, 1, DIMS(2), one_at0, 2, DIMS(1, 1),
                                             uh, 1, DIMS(1)), PTQ_ERR_UNSUPPORTED) && strstr(c.ctx.msg, "float16"));
    test_case_free(&c);
    /* the reduction attribute before opset 16 is refused at load, as ONNX's checker refuses it */
    const ptq_op_def **ops = NULL;
    const ptq_attr add = {.name = "reduction", .type = PTQ_ATTR_STRING, .s = "add"};
    test_case_init(&c, "ScatterND", 13, &add, 1, 3, 1);
    c.graph.nodes = &c.node;
    c.graph.n_nodes = 1;
    CHECK(ptq_op_resolve(&c.ctx, &c.graph, &ops) == PTQ_ERR_FORMAT && strstr(c.ctx.msg, "node_under_test") &&
          strstr(c.ctx.msg, "reduction"));
    free(ops);
    c.graph.opset = 16;
    CHECK(ptq_op_resolve(&c.ctx, &c.graph, &ops) == PTQ_OK && ops && ops[0] == &ptq_op_ScatterND);
    free(ops);
}

int main(void)
{
    check_gelu_erf();
    check_split();
    check_where_expand();
    check_range();
    check_equal_mod();
    check_constant_of_shape();
    check_not();
    check_scatter_nd();
    check_reduce_sum_cumsum();
    check_neg();
    check_abs();
    check_greater();
    check_less();
    check_greater_or_equal();
    check_less_or_equal();
    check_and();
    check_or();
    check_trilu();
    check_reduce_max();
    check_argmax();
    check_graph();
    check_data_shape_limit();
    return test_done("test_ops_transformer");
}
