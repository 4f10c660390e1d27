/* Infer + run of the shape ops (Reshape 0/-1/allowzero, Flatten, Transpose,
 * Concat, Identity, Dropout, Constant) and the opset-dependent semantics of
 * Softmax, Clip and the binary ops (runtime/ops_{shape,softmax,activation,
 * elementwise}.c), with ptq_op_io built by hand; errors must name the node. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/op_util.h"
#include "testlib.h"

extern const ptq_op_def ptq_op_Add, ptq_op_Sub, ptq_op_Mul, ptq_op_Div, ptq_op_Relu, ptq_op_LeakyRelu, ptq_op_Clip,
    ptq_op_HardSigmoid, ptq_op_HardSwish, ptq_op_Softmax, ptq_op_Flatten, ptq_op_Reshape, ptq_op_Transpose,
    ptq_op_Concat, ptq_op_Identity, ptq_op_Dropout, ptq_op_Constant;

static float seq[120];

static void check_reshape(void)
{
    test_op_case c;
    const int64_t x_dims[] = {2, 3, 4};
    static const struct {
        int n;
        int64_t shape[4];
        int want_ndim;
        int64_t want[4];
    } ok_cases[] = {
        {2, {0, -1}, 2, {2, 12}},
        {4, {2, 0, 1, -1}, 4, {2, 3, 1, 4}},
        {4, {2, 0, 4, 1}, 4, {2, 3, 4, 1}},
        {1, {-1}, 1, {24}},
        {4, {-1, 2, 3, 4}, 4, {1, 2, 3, 4}},
        {3, {4, 2, 3}, 3, {4, 2, 3}},
    };
    for (size_t k = 0; k < sizeof ok_cases / sizeof ok_cases[0]; k++) {
        int64_t n = ok_cases[k].n;
        test_case_init(&c, "Reshape", 14, NULL, 0, 2, 1);
        test_case_input(&c, 0, PTQ_DT_FLOAT, seq, 3, x_dims);
        test_case_input(&c, 1, PTQ_DT_INT64, ok_cases[k].shape, 1, &n);
        CHECK_MSG(test_case_run(&c, &ptq_op_Reshape, 0) == PTQ_OK, "reshape case %zu: %s", k, c.ctx.msg);
        CHECK_MSG(test_dims_are(&c.out[0], ok_cases[k].want_ndim, ok_cases[k].want), "reshape case %zu", k);
        CHECK(c.out[0].dtype == PTQ_DT_FLOAT && memcmp(c.out[0].data, seq, 24 * sizeof(float)) == 0);
        test_case_free(&c);
    }

    /* allowzero=1 keeps a 0 as a zero-size dim: [0,3,4] -> [3,4,0]; without it the 0 copies dim 2 and fails */
    const ptq_attr allowzero = {.name = "allowzero", .type = PTQ_ATTR_INT, .i = 1};
    const int64_t empty_dims[] = {0, 3, 4}, target[] = {3, 4, 0}, three = 3;
    test_case_init(&c, "Reshape", 14, &allowzero, 1, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, seq, 3, empty_dims);
    test_case_input(&c, 1, PTQ_DT_INT64, target, 1, &three);
    CHECK_MSG(test_case_run(&c, &ptq_op_Reshape, 0) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(test_dims_are(&c.out[0], 3, target));
    test_case_free(&c);
    test_case_init(&c, "Reshape", 14, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, seq, 3, empty_dims);
    test_case_input(&c, 1, PTQ_DT_INT64, target, 1, &three);
    CHECK_MSG(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Reshape, 0), PTQ_ERR_SHAPE), "%s", c.ctx.msg);
    test_case_free(&c);

    /* errors: two -1, wrong count, allowzero with 0 and -1 */
    static const int64_t bad[][3] = {{-1, -1, 2}, {5, 5, -2}, {2, 3, 5}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        test_case_init(&c, "Reshape", 14, NULL, 0, 2, 1);
        test_case_input(&c, 0, PTQ_DT_FLOAT, seq, 3, x_dims);
        test_case_input(&c, 1, PTQ_DT_INT64, bad[k], 1, &three);
        CHECK_MSG(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Reshape, 0), PTQ_ERR_SHAPE), "bad %zu: %s", k,
                  c.ctx.msg);
        test_case_free(&c);
    }
    const int64_t zero_and_infer[] = {0, -1, 4};
    test_case_init(&c, "Reshape", 14, &allowzero, 1, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, seq, 3, x_dims);
    test_case_input(&c, 1, PTQ_DT_INT64, zero_and_infer, 1, &three);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Reshape, 0), PTQ_ERR_SHAPE));
    test_case_free(&c);

    /* targets whose element count wraps int64 (2^80, or 2^64 = 0 mod 2^64), in any order, fail cleanly */
    const int64_t t40 = (int64_t)1 << 40, t32 = (int64_t)1 << 32;
    const int64_t huge[][3] = {{t40, t40, 0}, {t40, t40, -1}, {t32, t32, -1}, {0, t40, t40}};
    for (size_t k = 0; k < sizeof huge / sizeof huge[0]; k++)
        for (int az = 0; az < 2; az++) {
            test_case_init(&c, "Reshape", 14, az ? &allowzero : NULL, az, 2, 1);
            test_case_input(&c, 0, PTQ_DT_FLOAT, seq, 3, az ? empty_dims : x_dims);
            test_case_input(&c, 1, PTQ_DT_INT64, huge[k], 1, &three);
            ptq_status st = test_case_run(&c, &ptq_op_Reshape, 0);
            CHECK_MSG(test_fails_naming_node(&c, st, PTQ_ERR_SHAPE) && strstr(c.ctx.msg, "more elements than int64"),
                      "huge %zu allowzero %d: %s", k, az, c.ctx.msg);
            test_case_free(&c);
        }

    /* opset 4: the shape attribute, on int64 data (8-byte elements) */
    static const int64_t attr_shape[] = {6, -1};
    const ptq_attr shape_attr = {.name = "shape", .type = PTQ_ATTR_INTS, .n = 2, .ints = attr_shape};
    int64_t idata[24];
    for (int i = 0; i < 24; i++)
        idata[i] = 1000 + i;
    test_case_init(&c, "Reshape", 4, &shape_attr, 1, 1, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, idata, 3, x_dims);
    CHECK_MSG(test_case_run(&c, &ptq_op_Reshape, 0) == PTQ_OK, "%s", c.ctx.msg);
    const int64_t want64[] = {6, 4};
    CHECK(test_dims_are(&c.out[0], 2, want64) && c.out[0].dtype == PTQ_DT_INT64);
    CHECK(memcmp(c.out[0].data, idata, sizeof idata) == 0);
    test_case_free(&c);
}

static void check_flatten(void)
{
    test_op_case c;
    const int64_t x_dims[] = {2, 3, 4, 5};
    static const struct {
        int64_t axis;
        int64_t want[2];
    } cases[] = {{0, {1, 120}}, {1, {2, 60}}, {3, {24, 5}}, {4, {120, 1}}, {-1, {24, 5}}, {-3, {2, 60}}, {-4, {1, 120}}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const ptq_attr axis = {.name = "axis", .type = PTQ_ATTR_INT, .i = cases[k].axis};
        test_case_init(&c, "Flatten", 13, &axis, 1, 1, 1);
        test_case_input(&c, 0, PTQ_DT_FLOAT, seq, 4, x_dims);
        CHECK_MSG(test_case_run(&c, &ptq_op_Flatten, 0) == PTQ_OK, "%s", c.ctx.msg);
        CHECK_MSG(test_dims_are(&c.out[0], 2, cases[k].want), "flatten axis %lld", (long long)cases[k].axis);
        CHECK(memcmp(c.out[0].data, seq, sizeof seq) == 0);
        test_case_free(&c);
    }
    test_case_init(&c, "Flatten", 13, NULL, 0, 1, 1); /* default axis 1 */
    test_case_input(&c, 0, PTQ_DT_FLOAT, seq, 4, x_dims);
    CHECK(test_case_run(&c, &ptq_op_Flatten, 0) == PTQ_OK && c.out[0].dims[0] == 2 && c.out[0].dims[1] == 60);
    test_case_free(&c);
    const ptq_attr bad = {.name = "axis", .type = PTQ_ATTR_INT, .i = -5};
    test_case_init(&c, "Flatten", 13, &bad, 1, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, seq, 4, x_dims);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Flatten, 0), PTQ_ERR_SHAPE));
    test_case_free(&c);
}

static void check_transpose(void)
{
    test_op_case c;
    const int64_t x_dims[] = {2, 3, 4};
    /* default perm reverses: y[k][j][i] = x[i][j][k] */
    test_case_init(&c, "Transpose", 13, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, seq, 3, x_dims);
    CHECK_MSG(test_case_run(&c, &ptq_op_Transpose, 0) == PTQ_OK, "%s", c.ctx.msg);
    const int64_t rev[] = {4, 3, 2};
    CHECK(test_dims_are(&c.out[0], 3, rev));
    int ok = 1;
    const float *y = c.out[0].data;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                ok &= y[(k * 3 + j) * 2 + i] == seq[(i * 3 + j) * 4 + k];
    CHECK(ok);
    test_case_free(&c);

    /* perm [1, 2, 0] on 1-byte and 8-byte elements: y[j][k][i] = x[i][j][k] */
    static const int64_t perm[] = {1, 2, 0};
    const ptq_attr perm_attr = {.name = "perm", .type = PTQ_ATTR_INTS, .n = 3, .ints = perm};
    uint8_t bytes[24];
    int64_t longs[24];
    for (int i = 0; i < 24; i++) {
        bytes[i] = (uint8_t)(i * 7);
        longs[i] = -(int64_t)i * 100000000000LL;
    }
    const int64_t want_dims[] = {3, 4, 2};
    test_case_init(&c, "Transpose", 13, &perm_attr, 1, 1, 1);
    test_case_input(&c, 0, PTQ_DT_UINT8, bytes, 3, x_dims);
    CHECK(test_case_run(&c, &ptq_op_Transpose, 0) == PTQ_OK && test_dims_are(&c.out[0], 3, want_dims));
    const uint8_t *yb = c.out[0].data;
    ok = 1;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                ok &= yb[(j * 4 + k) * 2 + i] == bytes[(i * 3 + j) * 4 + k];
    CHECK(ok);
    test_case_free(&c);
    test_case_init(&c, "Transpose", 13, &perm_attr, 1, 1, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, longs, 3, x_dims);
    CHECK(test_case_run(&c, &ptq_op_Transpose, 0) == PTQ_OK);
    const int64_t *yl = c.out[0].data;
    ok = 1;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                ok &= yl[(j * 4 + k) * 2 + i] == longs[(i * 3 + j) * 4 + k];
    CHECK(ok);
    test_case_free(&c);

    static const int64_t not_perm[] = {0, 0, 1};
    const ptq_attr bad = {.name = "perm", .type = PTQ_ATTR_INTS, .n = 3, .ints = not_perm};
    test_case_init(&c, "Transpose", 13, &bad, 1, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, seq, 3, x_dims);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Transpose, 0), PTQ_ERR_FORMAT));
    test_case_free(&c);
}

static void check_concat(void)
{
    test_op_case c;
    /* axis -1 over [2,3], [2,1], [2,4] -> [2,8] */
    const ptq_attr axis_m1 = {.name = "axis", .type = PTQ_ATTR_INT, .i = -1};
    const int64_t d0[] = {2, 3}, d1[] = {2, 1}, d2[] = {2, 4};
    const float a[] = {1, 2, 3, 4, 5, 6}, b[] = {7, 8}, e[] = {9, 10, 11, 12, 13, 14, 15, 16};
    test_case_init(&c, "Concat", 13, &axis_m1, 1, 3, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, a, 2, d0);
    test_case_input(&c, 1, PTQ_DT_FLOAT, b, 2, d1);
    test_case_input(&c, 2, PTQ_DT_FLOAT, e, 2, d2);
    CHECK_MSG(test_case_run(&c, &ptq_op_Concat, 0) == PTQ_OK, "%s", c.ctx.msg);
    const int64_t want_dims[] = {2, 8};
    const float want[] = {1, 2, 3, 7, 9, 10, 11, 12, 4, 5, 6, 8, 13, 14, 15, 16};
    CHECK(test_dims_are(&c.out[0], 2, want_dims) && memcmp(c.out[0].data, want, sizeof want) == 0);
    test_case_free(&c);

    /* axis 0 on int64 with an empty input in the middle: [2], [0], [3] -> [5] */
    const ptq_attr axis0 = {.name = "axis", .type = PTQ_ATTR_INT, .i = 0};
    const int64_t i0[] = {1, 2}, i2[] = {3, 4, 5}, n2 = 2, n0 = 0, n3 = 3;
    test_case_init(&c, "Concat", 13, &axis0, 1, 3, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, i0, 1, &n2);
    test_case_input(&c, 1, PTQ_DT_INT64, NULL, 1, &n0);
    test_case_input(&c, 2, PTQ_DT_INT64, i2, 1, &n3);
    CHECK_MSG(test_case_run(&c, &ptq_op_Concat, 0) == PTQ_OK, "%s", c.ctx.msg);
    const int64_t want_i[] = {1, 2, 3, 4, 5};
    CHECK(c.out[0].ndim == 1 && c.out[0].dims[0] == 5 && memcmp(c.out[0].data, want_i, sizeof want_i) == 0);
    test_case_free(&c);

    /* 70 inputs (no fixed limit on a node's inputs): input i is [1, 2] of {i, -i} -> [1, 140] */
    static float many[70][2];
    const int64_t d12[] = {1, 2};
    test_case_init(&c, "Concat", 13, &axis_m1, 1, 70, 1);
    for (int i = 0; i < 70; i++) {
        many[i][0] = (float)i;
        many[i][1] = (float)-i;
        test_case_input(&c, i, PTQ_DT_FLOAT, many[i], 2, d12);
    }
    CHECK_MSG(test_case_run(&c, &ptq_op_Concat, 0) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(c.out[0].ndim == 2 && c.out[0].dims[1] == 140 && memcmp(c.out[0].data, many, sizeof many) == 0);
    test_case_free(&c);

    /* a dim other than axis differs: SHAPE naming the node and the input */
    const int64_t d_bad[] = {3, 1};
    test_case_init(&c, "Concat", 13, &axis_m1, 1, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, a, 2, d0);
    test_case_input(&c, 1, PTQ_DT_FLOAT, a, 2, d_bad);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Concat, 0), PTQ_ERR_SHAPE) &&
          strstr(c.ctx.msg, "input 1"));
    test_case_free(&c);
    /* empty inputs whose dims along axis wrap int64 to 0: refused, not [0, 0] */
    const int64_t d_huge[] = {0, INT64_MAX}, d_two[] = {0, 2};
    test_case_init(&c, "Concat", 13, &axis_m1, 1, 3, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, NULL, 2, d_huge);
    test_case_input(&c, 1, PTQ_DT_FLOAT, NULL, 2, d_huge);
    test_case_input(&c, 2, PTQ_DT_FLOAT, NULL, 2, d_two);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Concat, 0), PTQ_ERR_SHAPE) &&
          strstr(c.ctx.msg, "more than int64"));
    test_case_free(&c);
    /* axis is required from opset 4; before, it defaults to 1 */
    test_case_init(&c, "Concat", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, a, 2, d0);
    test_case_input(&c, 1, PTQ_DT_FLOAT, b, 2, d1);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Concat, 0), PTQ_ERR_FORMAT));
    test_case_free(&c);
    test_case_init(&c, "Concat", 1, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, a, 2, d0);
    test_case_input(&c, 1, PTQ_DT_FLOAT, b, 2, d1);
    CHECK(test_case_run(&c, &ptq_op_Concat, 0) == PTQ_OK && c.out[0].dims[1] == 4);
    test_case_free(&c);
}

static void check_identity_dropout(void)
{
    test_op_case c;
    const int64_t dims[] = {3, 4};
    test_case_init(&c, "Identity", 16, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, seq, 2, dims);
    CHECK(test_case_run(&c, &ptq_op_Identity, 0) == PTQ_OK && test_dims_are(&c.out[0], 2, dims));
    CHECK(memcmp(c.out[0].data, seq, 12 * sizeof(float)) == 0);
    test_case_free(&c);
    test_case_init(&c, "Identity", 16, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_STRING, seq, 2, dims);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Identity, 0), PTQ_ERR_UNSUPPORTED));
    test_case_free(&c);

    /* opset 13 with the mask: a copy and an all-true bool mask */
    test_case_init(&c, "Dropout", 13, NULL, 0, 1, 2);
    test_case_input(&c, 0, PTQ_DT_FLOAT, seq, 2, dims);
    CHECK_MSG(test_case_run(&c, &ptq_op_Dropout, 0) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(memcmp(c.out[0].data, seq, 12 * sizeof(float)) == 0 && c.out[1].dtype == PTQ_DT_BOOL);
    int all_true = test_dims_are(&c.out[1], 2, dims);
    for (int i = 0; i < 12; i++)
        all_true &= ((const uint8_t *)c.out[1].data)[i] == 1;
    CHECK(all_true);
    test_case_free(&c);
    /* training_mode true: fine with ratio 0, refused with ratio 0.5 */
    const uint8_t yes = 1;
    const float ratios[] = {0.0f, 0.5f};
    for (int k = 0; k < 2; k++) {
        test_case_init(&c, "Dropout", 13, NULL, 0, 3, 1);
        test_case_input(&c, 0, PTQ_DT_FLOAT, seq, 2, dims);
        test_case_input(&c, 1, PTQ_DT_FLOAT, &ratios[k], 0, NULL);
        test_case_input(&c, 2, PTQ_DT_BOOL, &yes, 0, NULL);
        ptq_status st = test_case_run(&c, &ptq_op_Dropout, 0);
        if (k == 0)
            CHECK_MSG(st == PTQ_OK && memcmp(c.out[0].data, seq, 12 * sizeof(float)) == 0, "%s", c.ctx.msg);
        else
            CHECK(test_fails_naming_node(&c, st, PTQ_ERR_UNSUPPORTED));
        test_case_free(&c);
    }
    /* opset 7: the mask has the input's dtype */
    test_case_init(&c, "Dropout", 7, NULL, 0, 1, 2);
    test_case_input(&c, 0, PTQ_DT_FLOAT, seq, 2, dims);
    CHECK(test_case_run(&c, &ptq_op_Dropout, 0) == PTQ_OK && c.out[1].dtype == PTQ_DT_FLOAT);
    CHECK(((const float *)c.out[1].data)[11] == 1.0f);
    test_case_free(&c);
}

static void check_constant(void)
{
    test_op_case c;
    const float cdata[] = {1.5f, -2.5f, 3.5f, 4.5f, 5.5f, 6.5f};
    ptq_value values[2];
    memset(values, 0, sizeof values);
    values[1].name = "c";
    values[1].dtype = PTQ_DT_FLOAT;
    values[1].ndim = 2;
    values[1].dims[0] = 2;
    values[1].dims[1] = 3;
    values[1].data = cdata;
    values[1].n_bytes = sizeof cdata;
    values[1].flags = PTQ_VALUE_CONSTANT;
    const ptq_attr value = {.name = "value", .type = PTQ_ATTR_TENSOR, .tensor = 1};
    test_case_init(&c, "Constant", 13, &value, 1, 0, 1);
    c.graph.n_values = 2;
    c.graph.values = values;
    CHECK_MSG(test_case_run(&c, &ptq_op_Constant, 0) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(test_dims_are(&c.out[0], 2, values[1].dims) && memcmp(c.out[0].data, cdata, sizeof cdata) == 0);
    test_case_free(&c);

    const ptq_attr vf = {.name = "value_float", .type = PTQ_ATTR_FLOAT, .f = 0.25f};
    test_case_init(&c, "Constant", 13, &vf, 1, 0, 1);
    CHECK(test_case_run(&c, &ptq_op_Constant, 0) == PTQ_OK && c.out[0].ndim == 0 && c.out[0].dtype == PTQ_DT_FLOAT);
    CHECK(*(const float *)c.out[0].data == 0.25f);
    test_case_free(&c);
    static const int64_t ints[] = {7, -8, 9};
    const ptq_attr vi = {.name = "value_ints", .type = PTQ_ATTR_INTS, .n = 3, .ints = ints};
    test_case_init(&c, "Constant", 13, &vi, 1, 0, 1);
    CHECK(test_case_run(&c, &ptq_op_Constant, 0) == PTQ_OK && c.out[0].ndim == 1 && c.out[0].dims[0] == 3);
    CHECK(c.out[0].dtype == PTQ_DT_INT64 && memcmp(c.out[0].data, ints, sizeof ints) == 0);
    test_case_free(&c);
    /* a value_* attribute of another type than its name says is refused, naming it: value_float holding an
     * int gave 0, value_ints holding floats read their count of int64s from the empty ints (past the end) */
    const ptq_attr vf_int = {.name = "value_float", .type = PTQ_ATTR_INT, .i = 2};
    test_case_init(&c, "Constant", 13, &vf_int, 1, 0, 1);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Constant, 0), PTQ_ERR_FORMAT));
    CHECK_MSG(strstr(c.ctx.msg, "value_float attribute is of type INT, not FLOAT"), "%s", c.ctx.msg);
    test_case_free(&c);
    static const float floats[] = {1.0f, 2.0f, 3.0f};
    const ptq_attr vi_floats = {.name = "value_ints", .type = PTQ_ATTR_FLOATS, .n = 3, .floats = floats, .ints = ints};
    test_case_init(&c, "Constant", 13, &vi_floats, 1, 0, 1);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Constant, 0), PTQ_ERR_FORMAT));
    CHECK_MSG(strstr(c.ctx.msg, "value_ints attribute is of type FLOATS, not INTS"), "%s", c.ctx.msg);
    test_case_free(&c);
    const ptq_attr vfs_ints = {.name = "value_floats", .type = PTQ_ATTR_INTS, .n = 3, .ints = ints, .floats = floats};
    test_case_init(&c, "Constant", 13, &vfs_ints, 1, 0, 1);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Constant, 0), PTQ_ERR_FORMAT));
    test_case_free(&c);
    const ptq_attr vs = {.name = "value_string", .type = PTQ_ATTR_STRING, .s = "x", .s_len = 1};
    test_case_init(&c, "Constant", 13, &vs, 1, 0, 1);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Constant, 0), PTQ_ERR_UNSUPPORTED));
    test_case_free(&c);
}

static void check_softmax(void)
{
    /* [2,3,4] at axis 1: opset 11 normalises each batch's 12 values, opset 13 each column of 3 */
    test_op_case c;
    const int64_t dims[] = {2, 3, 4};
    const ptq_attr axis1 = {.name = "axis", .type = PTQ_ATTR_INT, .i = 1};
    for (int fast = 0; fast < 2; fast++) {
        test_case_init(&c, "Softmax", 11, &axis1, 1, 1, 1);
        test_case_input(&c, 0, PTQ_DT_FLOAT, seq, 3, dims);
        CHECK(test_case_run(&c, &ptq_op_Softmax, fast) == PTQ_OK);
        const float *y = c.out[0].data;
        double s = 0;
        for (int i = 0; i < 12; i++)
            s += y[i];
        CHECK_MSG(fabs(s - 1.0) < 1e-6, "opset 11 batch sum %g", s);
        test_case_free(&c);

        test_case_init(&c, "Softmax", 13, &axis1, 1, 1, 1);
        test_case_input(&c, 0, PTQ_DT_FLOAT, seq, 3, dims);
        CHECK(test_case_run(&c, &ptq_op_Softmax, fast) == PTQ_OK);
        y = c.out[0].data;
        s = (double)y[0] + y[4] + y[8];
        CHECK_MSG(fabs(s - 1.0) < 1e-6, "opset 13 column sum %g", s);
        test_case_free(&c);

        /* defaults: axis 1 (coerced to 2-D) before 13, -1 from 13 */
        test_case_init(&c, "Softmax", 11, NULL, 0, 1, 1);
        test_case_input(&c, 0, PTQ_DT_FLOAT, seq, 3, dims);
        CHECK(test_case_run(&c, &ptq_op_Softmax, fast) == PTQ_OK);
        y = c.out[0].data;
        s = 0;
        for (int i = 12; i < 24; i++)
            s += y[i];
        CHECK(fabs(s - 1.0) < 1e-6);
        test_case_free(&c);
        test_case_init(&c, "Softmax", 13, NULL, 0, 1, 1);
        test_case_input(&c, 0, PTQ_DT_FLOAT, seq, 3, dims);
        CHECK(test_case_run(&c, &ptq_op_Softmax, fast) == PTQ_OK);
        y = c.out[0].data;
        s = (double)y[20] + y[21] + y[22] + y[23];
        CHECK(fabs(s - 1.0) < 1e-6);
        test_case_free(&c);
    }
    const ptq_attr bad = {.name = "axis", .type = PTQ_ATTR_INT, .i = 3};
    test_case_init(&c, "Softmax", 13, &bad, 1, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, seq, 3, dims);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Softmax, 0), PTQ_ERR_SHAPE));
    test_case_free(&c);
}

static void check_clip_and_activations(void)
{
    test_op_case c;
    const float x[] = {NAN, -3.0f, -0.5f, 0.25f, 2.0f, 7.0f};
    const int64_t n = 6;
    /* opset 6: min/max attributes */
    const ptq_attr attrs6[] = {{.name = "min", .type = PTQ_ATTR_FLOAT, .f = -1.0f},
                               {.name = "max", .type = PTQ_ATTR_FLOAT, .f = 1.0f}};
    for (int fast = 0; fast < 2; fast++) {
        test_case_init(&c, "Clip", 6, attrs6, 2, 1, 1);
        test_case_input(&c, 0, PTQ_DT_FLOAT, x, 1, &n);
        CHECK(test_case_run(&c, &ptq_op_Clip, fast) == PTQ_OK);
        const float *y = c.out[0].data;
        CHECK(isnan(y[0]) && y[1] == -1.0f && y[2] == -0.5f && y[4] == 1.0f && y[5] == 1.0f);
        test_case_free(&c);
    }
    /* opset 11: scalar inputs; attributes ignored; omitted min leaves the low side alone */
    const float hi = 2.5f, lo = 0.0f;
    test_case_init(&c, "Clip", 11, attrs6, 2, 3, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, x, 1, &n);
    c.io.in[1] = NULL;
    test_case_input(&c, 2, PTQ_DT_FLOAT, &hi, 0, NULL);
    CHECK_MSG(test_case_run(&c, &ptq_op_Clip, 1) == PTQ_OK, "%s", c.ctx.msg);
    const float *y = c.out[0].data;
    CHECK(y[1] == -3.0f && y[4] == 2.0f && y[5] == 2.5f);
    test_case_free(&c);
    test_case_init(&c, "Clip", 13, NULL, 0, 3, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, x, 1, &n);
    test_case_input(&c, 1, PTQ_DT_FLOAT, &lo, 0, NULL);
    test_case_input(&c, 2, PTQ_DT_FLOAT, &hi, 0, NULL);
    CHECK(test_case_run(&c, &ptq_op_Clip, 0) == PTQ_OK);
    y = c.out[0].data;
    CHECK(isnan(y[0]) && y[1] == 0.0f && y[3] == 0.25f && y[5] == 2.5f);
    test_case_free(&c);
    /* no bounds at all: values pass through */
    test_case_init(&c, "Clip", 13, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, x, 1, &n);
    CHECK(test_case_run(&c, &ptq_op_Clip, 0) == PTQ_OK && ((const float *)c.out[0].data)[5] == 7.0f);
    test_case_free(&c);
    /* a bound that is not a scalar */
    const float two[] = {0.0f, 1.0f};
    const int64_t n2 = 2;
    test_case_init(&c, "Clip", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, x, 1, &n);
    test_case_input(&c, 1, PTQ_DT_FLOAT, two, 1, &n2);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Clip, 0), PTQ_ERR_SHAPE));
    test_case_free(&c);
    /* int8 with only max */
    const int8_t xi[] = {-128, -5, 0, 5, 127, 100};
    const int8_t max_i = 6;
    test_case_init(&c, "Clip", 13, NULL, 0, 3, 1);
    test_case_input(&c, 0, PTQ_DT_INT8, xi, 1, &n);
    c.io.in[1] = NULL;
    test_case_input(&c, 2, PTQ_DT_INT8, &max_i, 0, NULL);
    CHECK_MSG(test_case_run(&c, &ptq_op_Clip, 1) == PTQ_OK, "%s", c.ctx.msg);
    const int8_t want_i[] = {-128, -5, 0, 5, 6, 6};
    CHECK(memcmp(c.out[0].data, want_i, sizeof want_i) == 0);
    test_case_free(&c);

    /* defaults: LeakyRelu alpha 0.01, HardSigmoid 0.2/0.5 */
    test_case_init(&c, "LeakyRelu", 16, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, x, 1, &n);
    CHECK(test_case_run(&c, &ptq_op_LeakyRelu, 1) == PTQ_OK && ((const float *)c.out[0].data)[1] == -3.0f * 0.01f);
    test_case_free(&c);
    test_case_init(&c, "HardSigmoid", 6, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, x, 1, &n);
    CHECK(test_case_run(&c, &ptq_op_HardSigmoid, 1) == PTQ_OK);
    y = c.out[0].data;
    CHECK(y[2] == 0.2f * -0.5f + 0.5f && y[5] == 1.0f);
    test_case_free(&c);
    /* an unsupported dtype names the node */
    const int64_t xl[] = {1, 2};
    test_case_init(&c, "Relu", 14, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, xl, 1, &n2);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Relu, 0), PTQ_ERR_UNSUPPORTED));
    test_case_free(&c);
}

static void check_binary(void)
{
    test_op_case c;
    /* float broadcast [2,3] + [3] through both paths */
    const float a[] = {1, 2, 3, 4, 5, 6}, b3[] = {10, 20, 30};
    const int64_t d23[] = {2, 3}, d3[] = {3}, d4[] = {4};
    for (int fast = 0; fast < 2; fast++) {
        test_case_init(&c, "Sub", 14, NULL, 0, 2, 1);
        test_case_input(&c, 0, PTQ_DT_FLOAT, a, 2, d23);
        test_case_input(&c, 1, PTQ_DT_FLOAT, b3, 1, d3);
        CHECK(test_case_run(&c, &ptq_op_Sub, fast) == PTQ_OK && test_dims_are(&c.out[0], 2, d23));
        const float want[] = {-9, -18, -27, -6, -15, -24};
        CHECK(memcmp(c.out[0].data, want, sizeof want) == 0);
        test_case_free(&c);
    }
    /* shapes that do not broadcast: SHAPE naming the node and both shapes */
    test_case_init(&c, "Add", 14, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, a, 2, d23);
    test_case_input(&c, 1, PTQ_DT_FLOAT, a, 1, d4);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Add, 0), PTQ_ERR_SHAPE));
    CHECK_MSG(strstr(c.ctx.msg, "2x3") && strstr(c.ctx.msg, "(4)"), "%s", c.ctx.msg);
    test_case_free(&c);
    /* mixed dtypes */
    const int64_t l3[] = {1, 2, 3};
    test_case_init(&c, "Add", 14, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, a, 2, d23);
    test_case_input(&c, 1, PTQ_DT_INT64, l3, 1, d3);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Add, 0), PTQ_ERR_FORMAT));
    test_case_free(&c);

    /* opset 6: broadcast=1 with axis places B [3] at dim 0 of A [3,2]; without broadcast shapes must match */
    const ptq_attr legacy[] = {{.name = "broadcast", .type = PTQ_ATTR_INT, .i = 1},
                               {.name = "axis", .type = PTQ_ATTR_INT, .i = 0}};
    const int64_t d32[] = {3, 2};
    test_case_init(&c, "Mul", 6, legacy, 2, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, a, 2, d32);
    test_case_input(&c, 1, PTQ_DT_FLOAT, b3, 1, d3);
    CHECK_MSG(test_case_run(&c, &ptq_op_Mul, 1) == PTQ_OK && test_dims_are(&c.out[0], 2, d32), "%s", c.ctx.msg);
    const float want_m[] = {10, 20, 60, 80, 150, 180};
    CHECK(memcmp(c.out[0].data, want_m, sizeof want_m) == 0);
    test_case_free(&c);
    test_case_init(&c, "Mul", 6, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, a, 2, d23);
    test_case_input(&c, 1, PTQ_DT_FLOAT, b3, 1, d3);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Mul, 0), PTQ_ERR_SHAPE));
    test_case_free(&c);

    /* int64 shape arithmetic: wraps, Div truncates toward zero, division by zero is a data error */
    const int64_t la[] = {INT64_MAX, -7, 7, INT64_MIN}, lb[] = {1, 2, -2, -1}, d4b[] = {4};
    test_case_init(&c, "Add", 14, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, la, 1, d4b);
    test_case_input(&c, 1, PTQ_DT_INT64, lb, 1, d4b);
    CHECK(test_case_run(&c, &ptq_op_Add, 1) == PTQ_OK);
    const int64_t want_add[] = {INT64_MIN, -5, 5, INT64_MAX};
    CHECK(memcmp(c.out[0].data, want_add, sizeof want_add) == 0);
    test_case_free(&c);
    test_case_init(&c, "Div", 14, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, la, 1, d4b);
    test_case_input(&c, 1, PTQ_DT_INT64, lb, 1, d4b);
    CHECK(test_case_run(&c, &ptq_op_Div, 1) == PTQ_OK);
    const int64_t want_div[] = {INT64_MAX, -3, -3, INT64_MIN};
    CHECK(memcmp(c.out[0].data, want_div, sizeof want_div) == 0);
    test_case_free(&c);
    const int32_t ia[] = {6, 7}, ib[] = {3, 0};
    const int64_t d2[] = {2};
    test_case_init(&c, "Div", 14, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_INT32, ia, 1, d2);
    test_case_input(&c, 1, PTQ_DT_INT32, ib, 1, d2);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Div, 0), PTQ_ERR_DATA));
    test_case_free(&c);
    /* uint8 wraps; float64 broadcasts a scalar */
    const uint8_t ua[] = {250, 3}, ub[] = {10, 4};
    test_case_init(&c, "Mul", 14, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_UINT8, ua, 1, d2);
    test_case_input(&c, 1, PTQ_DT_UINT8, ub, 1, d2);
    CHECK(test_case_run(&c, &ptq_op_Mul, 0) == PTQ_OK);
    CHECK(((const uint8_t *)c.out[0].data)[0] == (uint8_t)2500 && ((const uint8_t *)c.out[0].data)[1] == 12);
    test_case_free(&c);
    const double da[] = {1.0, 2.0}, ds = 0.5;
    test_case_init(&c, "Div", 14, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_DOUBLE, da, 1, d2);
    test_case_input(&c, 1, PTQ_DT_DOUBLE, &ds, 0, NULL);
    CHECK(test_case_run(&c, &ptq_op_Div, 0) == PTQ_OK && ((const double *)c.out[0].data)[1] == 4.0);
    test_case_free(&c);
    /* bool is not arithmetic */
    test_case_init(&c, "Add", 14, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_BOOL, ua, 1, d2);
    test_case_input(&c, 1, PTQ_DT_BOOL, ub, 1, d2);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Add, 0), PTQ_ERR_UNSUPPORTED));
    test_case_free(&c);
}

int main(void)
{
    for (int i = 0; i < 120; i++)
        seq[i] = (float)i * 0.5f - 7.0f;
    check_reshape();
    check_flatten();
    check_transpose();
    check_concat();
    check_identity_dropout();
    check_constant();
    check_softmax();
    check_clip_and_activations();
    check_binary();
    return test_done("test_ops_shape");
}
