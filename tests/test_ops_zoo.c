/* The ops torchvision's exports need beyond the dense core
 * (runtime/ops_{reduce,math,index}.c): ReduceMean (any axes, keepdims, the
 * CPU pooling path against the reference), LayerNormalization (Mean and
 * InvStdDev outputs), Pow, Sqrt, Shape (start/end; its input's data never
 * read), Gather (negative indices, out of range refused), Slice (negative
 * steps, clamping, opset 1 attributes) and Cast (saturation, NaN, wrapping),
 * against values worked out by hand or in double; errors name the node. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/op_util.h"
#include "testlib.h"

extern const ptq_op_def ptq_op_ReduceMean, ptq_op_LayerNormalization, ptq_op_Pow, ptq_op_Sqrt, ptq_op_Shape,
    ptq_op_Gather, ptq_op_Slice, ptq_op_Cast;

static float x234[24];

static void check_reduce_mean(void)
{
    test_op_case c;
    /* axes {0, 2} of [2, 3, 4], keepdims 0 -> [3]: mean over i and k of x[i][j][k] = i*12 + j*4 + k */
    const int64_t ax02[] = {0, 2};
    const ptq_attr a02[] = {{.name = "axes", .type = PTQ_ATTR_INTS, .n = 2, .ints = ax02},
                            {.name = "keepdims", .type = PTQ_ATTR_INT, .i = 0}};
    test_case_init(&c, "ReduceMean", 13, a02, 2, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, x234, 3, DIMS(2, 3, 4));
    CHECK_MSG(test_case_run(&c, &ptq_op_ReduceMean, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float *y = c.out[0].data;
    CHECK(test_dims_are(&c.out[0], 1, DIMS(3)) && y[0] == 7.5f && y[1] == 11.5f && y[2] == 15.5f);
    test_case_free(&c);

    /* trailing axes [2, 3] of [2, 3, 2, 2] with keepdims: the CPU pooling path equals the reference */
    static float big[2 * 3 * 2 * 2];
    test_rand_seed(3);
    test_fill_uniform(big, 24, -2.0f, 2.0f);
    const int64_t ax23[] = {2, 3};
    const ptq_attr a23[] = {{.name = "axes", .type = PTQ_ATTR_INTS, .n = 2, .ints = ax23}};
    float ref[6];
    for (int fast = 0; fast < 2; fast++) {
        test_case_init(&c, "ReduceMean", 13, a23, 1, 1, 1);
        test_case_input(&c, 0, PTQ_DT_FLOAT, big, 4, DIMS(2, 3, 2, 2));
        CHECK_MSG(test_case_run(&c, &ptq_op_ReduceMean, fast) == PTQ_OK, "%s", c.ctx.msg);
        CHECK(test_dims_are(&c.out[0], 4, DIMS(2, 3, 1, 1)));
        y = c.out[0].data;
        for (int i = 0; i < 6; i++) {
            double s = 0;
            for (int k = 0; k < 4; k++)
                s += big[i * 4 + k];
            CHECK_MSG(fabsf(y[i] - (float)(s / 4)) <= 1e-6f, "fast %d row %d: %g vs %g", fast, i, y[i], s / 4);
            if (!fast)
                ref[i] = y[i];
            else
                CHECK(fabsf(y[i] - ref[i]) <= 1e-6f);
        }
        test_case_free(&c);
    }

    /* opset 18: axes as input 1; none given reduces everything; a repeated axis is refused naming the node */
    const int64_t ax_dup[] = {1, -2};
    test_case_init(&c, "ReduceMean", 18, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, x234, 3, DIMS(2, 3, 4));
    test_case_input(&c, 1, PTQ_DT_INT64, ax_dup, 1, DIMS(2));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_ReduceMean, 0), PTQ_ERR_SHAPE));
    test_case_free(&c);
    test_case_init(&c, "ReduceMean", 18, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, x234, 3, DIMS(2, 3, 4));
    CHECK_MSG(test_case_run(&c, &ptq_op_ReduceMean, 1) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(test_dims_are(&c.out[0], 3, DIMS(1, 1, 1)) && *(float *)c.out[0].data == 11.5f);
    test_case_free(&c);
}

static void check_layernorm(void)
{
    test_op_case c;
    /* rows {1, 2, 3} and {-2, 0, 2}: mean 2 and 0, variance 2/3 and 8/3 */
    const float x[] = {1, 2, 3, -2, 0, 2}, scale[] = {1, 2, 0.5f}, bias[] = {0, 1, -1};
    const ptq_attr eps[] = {{.name = "epsilon", .type = PTQ_ATTR_FLOAT, .f = 1e-3f}};
    test_case_init(&c, "LayerNormalization", 17, eps, 1, 3, 3);
    test_case_input(&c, 0, PTQ_DT_FLOAT, x, 2, DIMS(2, 3));
    test_case_input(&c, 1, PTQ_DT_FLOAT, scale, 1, DIMS(3));
    test_case_input(&c, 2, PTQ_DT_FLOAT, bias, 1, DIMS(3));
    CHECK_MSG(test_case_run(&c, &ptq_op_LayerNormalization, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float *y = c.out[0].data, *mean = c.out[1].data, *inv = c.out[2].data;
    const double mu[2] = {2, 0}, var[2] = {2.0 / 3, 8.0 / 3};
    for (int r = 0; r < 2; r++) {
        double is = 1 / sqrt(var[r] + 1e-3);
        CHECK(fabs(mean[r] - mu[r]) < 1e-6 && fabs(inv[r] - is) < 1e-5);
        for (int k = 0; k < 3; k++)
            CHECK_MSG(fabs(y[r * 3 + k] - ((x[r * 3 + k] - mu[r]) * is * scale[k] + bias[k])) < 1e-5, "y[%d]",
                      r * 3 + k);
    }
    CHECK(test_dims_are(&c.out[1], 2, DIMS(2, 1)) && test_dims_are(&c.out[2], 2, DIMS(2, 1)));
    test_case_free(&c);
    /* a scale that does not cover the normalized axes is named */
    test_case_init(&c, "LayerNormalization", 17, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, x, 2, DIMS(2, 3));
    test_case_input(&c, 1, PTQ_DT_FLOAT, scale, 1, DIMS(2));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_LayerNormalization, 0), PTQ_ERR_UNSUPPORTED));
    test_case_free(&c);
}

static void check_pow_sqrt(void)
{
    test_op_case c;
    const float a[] = {1, 2, 3, 4, -2, 9}, two = 2.0f;
    test_case_init(&c, "Pow", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, a, 2, DIMS(2, 3));
    test_case_input(&c, 1, PTQ_DT_FLOAT, &two, 0, NULL);
    CHECK_MSG(test_case_run(&c, &ptq_op_Pow, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float want[] = {1, 4, 9, 16, 4, 81};
    CHECK(test_dims_are(&c.out[0], 2, DIMS(2, 3)) && memcmp(c.out[0].data, want, sizeof want) == 0);
    test_case_free(&c);
    const float e[] = {0.5f, 3.0f};
    test_case_init(&c, "Pow", 13, NULL, 0, 2, 1); /* [3, 1] ^ [2] -> [3, 2] */
    test_case_input(&c, 0, PTQ_DT_FLOAT, a + 3, 2, DIMS(3, 1));
    test_case_input(&c, 1, PTQ_DT_FLOAT, e, 1, DIMS(2));
    CHECK_MSG(test_case_run(&c, &ptq_op_Pow, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float *y = c.out[0].data;
    CHECK(test_dims_are(&c.out[0], 2, DIMS(3, 2)) && y[0] == 2 && y[1] == 64 && isnan(y[2]) && y[3] == -8 &&
          y[4] == 3 && y[5] == 729);
    test_case_free(&c);
    /* an integer exponent from opset 12 (2 and 3 as products, others pow in double); other dtypes and older
     * opsets refused naming the node */
    const int64_t three = 3;
    const int32_t e32[] = {-1, 0, 5};
    test_case_init(&c, "Pow", 15, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, a, 2, DIMS(2, 3));
    test_case_input(&c, 1, PTQ_DT_INT64, &three, 0, NULL);
    CHECK_MSG(test_case_run(&c, &ptq_op_Pow, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float cubes[] = {1, 8, 27, 64, -8, 729};
    CHECK(test_dims_are(&c.out[0], 2, DIMS(2, 3)) && memcmp(c.out[0].data, cubes, sizeof cubes) == 0);
    test_case_free(&c);
    test_case_init(&c, "Pow", 12, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, a, 2, DIMS(2, 3));
    test_case_input(&c, 1, PTQ_DT_INT32, e32, 1, DIMS(3));
    CHECK_MSG(test_case_run(&c, &ptq_op_Pow, 0) == PTQ_OK, "%s", c.ctx.msg);
    y = c.out[0].data;
    CHECK(y[0] == 1 && y[1] == 1 && y[2] == 243 && y[3] == 0.25f && y[4] == 1 && y[5] == 59049);
    test_case_free(&c);
    const uint8_t e8 = 2;
    test_case_init(&c, "Pow", 11, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, a, 2, DIMS(2, 3));
    test_case_input(&c, 1, PTQ_DT_INT64, &three, 0, NULL);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Pow, 0), PTQ_ERR_UNSUPPORTED));
    CHECK_MSG(strstr(c.ctx.msg, "opset 12"), "%s", c.ctx.msg);
    test_case_free(&c);
    test_case_init(&c, "Pow", 15, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, a, 2, DIMS(2, 3));
    test_case_input(&c, 1, PTQ_DT_UINT8, &e8, 0, NULL);
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Pow, 0), PTQ_ERR_UNSUPPORTED));
    test_case_free(&c);
    test_case_init(&c, "Sqrt", 13, NULL, 0, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, a + 3, 1, DIMS(3));
    CHECK_MSG(test_case_run(&c, &ptq_op_Sqrt, 0) == PTQ_OK, "%s", c.ctx.msg);
    y = c.out[0].data;
    CHECK(y[0] == 2 && isnan(y[1]) && y[2] == 3);
    test_case_free(&c);
}

static void check_shape_gather(void)
{
    test_op_case c;
    /* Shape reads no data: the input has none */
    const ptq_attr se[] = {{.name = "start", .type = PTQ_ATTR_INT, .i = 1}, {.name = "end", .type = PTQ_ATTR_INT, .i = -1}};
    test_case_init(&c, "Shape", 15, se, 2, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, NULL, 4, DIMS(5, 6, 7, 8));
    CHECK_MSG(test_case_run(&c, &ptq_op_Shape, 0) == PTQ_OK, "%s", c.ctx.msg);
    const int64_t *s = c.out[0].data;
    CHECK(c.out[0].dtype == PTQ_DT_INT64 && test_dims_are(&c.out[0], 1, DIMS(2)) && s[0] == 6 && s[1] == 7);
    CHECK(ptq_op_Shape.meta_inputs == 1u);
    test_case_free(&c);
    test_case_init(&c, "Shape", 13, se, 2, 1, 1); /* start/end arrive at opset 15 */
    test_case_input(&c, 0, PTQ_DT_FLOAT, NULL, 4, DIMS(5, 6, 7, 8));
    CHECK(test_case_run(&c, &ptq_op_Shape, 0) == PTQ_OK && c.out[0].dims[0] == 4);
    test_case_free(&c);

    /* Gather axis 1 of [2, 3] with indices [2, 2] holding {-1, 0, 2, 1} -> [2, 2, 2] */
    const float d[] = {10, 11, 12, 20, 21, 22};
    const int64_t idx[] = {-1, 0, 2, 1};
    const ptq_attr ax1[] = {{.name = "axis", .type = PTQ_ATTR_INT, .i = 1}};
    test_case_init(&c, "Gather", 13, ax1, 1, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, d, 2, DIMS(2, 3));
    test_case_input(&c, 1, PTQ_DT_INT64, idx, 2, DIMS(2, 2));
    CHECK_MSG(test_case_run(&c, &ptq_op_Gather, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float want[] = {12, 10, 12, 11, 22, 20, 22, 21};
    CHECK(test_dims_are(&c.out[0], 3, DIMS(2, 2, 2)) && memcmp(c.out[0].data, want, sizeof want) == 0);
    test_case_free(&c);
    /* a scalar index of an int64 shape drops the axis (torch's x.size(1)) */
    const int64_t shape[] = {8, 116, 28, 28}, one = 1;
    test_case_init(&c, "Gather", 13, NULL, 0, 2, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, shape, 1, DIMS(4));
    test_case_input(&c, 1, PTQ_DT_INT64, &one, 0, NULL);
    CHECK_MSG(test_case_run(&c, &ptq_op_Gather, 0) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(c.out[0].ndim == 0 && *(int64_t *)c.out[0].data == 116);
    test_case_free(&c);
    /* axis 0 on the CPU path (contiguous blocks, over the pool) gives the ref's bytes: [3, 5, 4] by {2, -3, 2, 1},
     * blocks of 20 floats; axis 1 stays the ref's gather; a scalar index drops the axis (a ViT's q, k, v) */
    float blk[60];
    for (int i = 0; i < 60; i++)
        blk[i] = (float)i;
    const int64_t picks[] = {2, -3, 2, 1}, pick1 = 1;
    for (int ax = 0; ax < 2; ax++)
        for (int scalar = 0; scalar < 2; scalar++) {
            const ptq_attr axis_attr[] = {{.name = "axis", .type = PTQ_ATTR_INT, .i = ax}};
            float got[2][80];
            for (int fast = 0; fast < 2; fast++) {
                test_case_init(&c, "Gather", 13, axis_attr, 1, 2, 1);
                test_case_input(&c, 0, PTQ_DT_FLOAT, blk, 3, DIMS(3, 5, 4));
                if (scalar)
                    test_case_input(&c, 1, PTQ_DT_INT64, &pick1, 0, NULL);
                else
                    test_case_input(&c, 1, PTQ_DT_INT64, picks, 1, DIMS(4));
                CHECK_MSG(test_case_run(&c, &ptq_op_Gather, fast) == PTQ_OK, "%s", c.ctx.msg);
                const int64_t n_out = ptq_tensor_numel(&c.out[0]);
                CHECK(n_out == (scalar ? (ax ? 12 : 20) : (ax ? 48 : 80)));
                memcpy(got[fast], c.out[0].data, (size_t)n_out * sizeof(float));
                if (fast)
                    CHECK_MSG(memcmp(got[0], got[1], (size_t)n_out * sizeof(float)) == 0, "gather axis %d, %s", ax,
                              scalar ? "scalar index" : "4 indices");
                test_case_free(&c);
            }
            if (ax == 0 && !scalar) /* rows 2, 0, 2, 1 of 20 floats each */
                CHECK(got[1][0] == 40 && got[1][20] == 0 && got[1][40] == 40 && got[1][60] == 20 && got[1][79] == 39);
        }
    const int32_t bad[] = {3};
    test_case_init(&c, "Gather", 13, ax1, 1, 2, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, d, 2, DIMS(2, 3));
    test_case_input(&c, 1, PTQ_DT_INT32, bad, 1, DIMS(1));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Gather, 0), PTQ_ERR_DATA) &&
          strstr(c.ctx.msg, "index 3"));
    test_case_free(&c);
}

static void check_slice(void)
{
    test_op_case c;
    /* x[i][j][k] = i*12 + j*4 + k over [2, 3, 4]: axes {2, 1}, starts {-1, 0}, ends {-100, 99}, steps {-2, 2}
     * -> k = 3, 1 and j = 0, 2: [2, 2, 2] */
    const int64_t starts[] = {-1, 0}, ends[] = {-100, 99}, axes[] = {2, 1}, steps[] = {-2, 2};
    test_case_init(&c, "Slice", 13, NULL, 0, 5, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, x234, 3, DIMS(2, 3, 4));
    test_case_input(&c, 1, PTQ_DT_INT64, starts, 1, DIMS(2));
    test_case_input(&c, 2, PTQ_DT_INT64, ends, 1, DIMS(2));
    test_case_input(&c, 3, PTQ_DT_INT64, axes, 1, DIMS(2));
    test_case_input(&c, 4, PTQ_DT_INT64, steps, 1, DIMS(2));
    CHECK_MSG(test_case_run(&c, &ptq_op_Slice, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float want[] = {3, 1, 11, 9, 15, 13, 23, 21};
    CHECK(test_dims_are(&c.out[0], 3, DIMS(2, 2, 2)) && memcmp(c.out[0].data, want, sizeof want) == 0);
    test_case_free(&c);
    /* opset 1: attributes; an empty range gives a 0-size axis */
    const int64_t s1[] = {2}, e1[] = {1}, a1[] = {0};
    const ptq_attr attrs[] = {{.name = "starts", .type = PTQ_ATTR_INTS, .n = 1, .ints = s1},
                              {.name = "ends", .type = PTQ_ATTR_INTS, .n = 1, .ints = e1},
                              {.name = "axes", .type = PTQ_ATTR_INTS, .n = 1, .ints = a1}};
    test_case_init(&c, "Slice", 1, attrs, 3, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, x234, 3, DIMS(2, 3, 4));
    CHECK_MSG(test_case_run(&c, &ptq_op_Slice, 0) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(test_dims_are(&c.out[0], 3, DIMS(0, 3, 4)));
    test_case_free(&c);
    /* steps at the ends of int64 take one element (no overflow counting them): x[:, :, 0:MAX:MAX] = k 0 and
     * x[:, :, -1:MIN:MIN] = k 3, each [2, 3, 1] */
    for (int neg = 0; neg < 2; neg++) {
        const int64_t sx[] = {neg ? -1 : 0}, ex[] = {neg ? INT64_MIN : INT64_MAX}, ax[] = {2};
        const int64_t kx[] = {neg ? INT64_MIN : INT64_MAX};
        test_case_init(&c, "Slice", 13, NULL, 0, 5, 1);
        test_case_input(&c, 0, PTQ_DT_FLOAT, x234, 3, DIMS(2, 3, 4));
        test_case_input(&c, 1, PTQ_DT_INT64, sx, 1, DIMS(1));
        test_case_input(&c, 2, PTQ_DT_INT64, ex, 1, DIMS(1));
        test_case_input(&c, 3, PTQ_DT_INT64, ax, 1, DIMS(1));
        test_case_input(&c, 4, PTQ_DT_INT64, kx, 1, DIMS(1));
        CHECK_MSG(test_case_run(&c, &ptq_op_Slice, 0) == PTQ_OK, "%s", c.ctx.msg);
        int ok = test_dims_are(&c.out[0], 3, DIMS(2, 3, 1));
        for (int i = 0; ok && i < 6; i++)
            ok = ((const float *)c.out[0].data)[i] == x234[i * 4 + (neg ? 3 : 0)];
        CHECK_MSG(ok, "step %s", neg ? "INT64_MIN" : "INT64_MAX");
        test_case_free(&c);
    }
    /* step 0 is refused naming the node */
    const int64_t zero = 0, st0[] = {0}, en0[] = {2}, ax0[] = {0};
    test_case_init(&c, "Slice", 13, NULL, 0, 5, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, x234, 3, DIMS(2, 3, 4));
    test_case_input(&c, 1, PTQ_DT_INT64, st0, 1, DIMS(1));
    test_case_input(&c, 2, PTQ_DT_INT64, en0, 1, DIMS(1));
    test_case_input(&c, 3, PTQ_DT_INT64, ax0, 1, DIMS(1));
    test_case_input(&c, 4, PTQ_DT_INT64, &zero, 1, DIMS(1));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Slice, 0), PTQ_ERR_FORMAT));
    test_case_free(&c);
}

static void check_cast(void)
{
    test_op_case c;
    const float f[] = {-1.7f, 2.9f, 300.0f, -1e30f, NAN, 0.0f};
    const ptq_attr to_i8[] = {{.name = "to", .type = PTQ_ATTR_INT, .i = PTQ_DT_INT8}};
    test_case_init(&c, "Cast", 13, to_i8, 1, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, f, 1, DIMS(6));
    CHECK_MSG(test_case_run(&c, &ptq_op_Cast, 0) == PTQ_OK, "%s", c.ctx.msg);
    const int8_t want_i8[] = {-1, 2, 127, -128, 0, 0};
    CHECK(c.out[0].dtype == PTQ_DT_INT8 && memcmp(c.out[0].data, want_i8, sizeof want_i8) == 0);
    test_case_free(&c);
    /* int64 -> float32 and -> uint8 (wraps), bool */
    const int64_t i[] = {-1, 256 + 7, 1 << 24 | 1, 0};
    const ptq_attr to_f[] = {{.name = "to", .type = PTQ_ATTR_INT, .i = PTQ_DT_FLOAT}};
    const ptq_attr to_u8[] = {{.name = "to", .type = PTQ_ATTR_INT, .i = PTQ_DT_UINT8}};
    const ptq_attr to_b[] = {{.name = "to", .type = PTQ_ATTR_INT, .i = PTQ_DT_BOOL}};
    test_case_init(&c, "Cast", 13, to_f, 1, 1, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, i, 1, DIMS(4));
    CHECK(test_case_run(&c, &ptq_op_Cast, 0) == PTQ_OK);
    const float *y = c.out[0].data;
    CHECK(y[0] == -1 && y[1] == 263 && y[2] == 16777216.0f && y[3] == 0);
    test_case_free(&c);
    test_case_init(&c, "Cast", 13, to_u8, 1, 1, 1);
    test_case_input(&c, 0, PTQ_DT_INT64, i, 1, DIMS(4));
    CHECK(test_case_run(&c, &ptq_op_Cast, 0) == PTQ_OK);
    const uint8_t *u = c.out[0].data;
    CHECK(u[0] == 255 && u[1] == 7 && u[2] == 1 && u[3] == 0);
    test_case_free(&c);
    test_case_init(&c, "Cast", 13, to_b, 1, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, f, 1, DIMS(6));
    CHECK(test_case_run(&c, &ptq_op_Cast, 0) == PTQ_OK);
    u = c.out[0].data;
    CHECK(u[0] == 1 && u[4] == 1 && u[5] == 0 && c.out[0].dtype == PTQ_DT_BOOL);
    test_case_free(&c);
    /* double past float's range: Inf, or FLT_MAX when it rounds there */
    const double big[] = {1e300, -1e300, 3.4028235e38}; /* the last: past FLT_MAX, below the midpoint to 2^128 */
    test_case_init(&c, "Cast", 13, to_f, 1, 1, 1);
    test_case_input(&c, 0, PTQ_DT_DOUBLE, big, 1, DIMS(3));
    CHECK(test_case_run(&c, &ptq_op_Cast, 0) == PTQ_OK);
    y = c.out[0].data;
    CHECK(isinf(y[0]) && y[0] > 0 && isinf(y[1]) && y[1] < 0 && y[2] == 3.4028234663852886e38f);
    test_case_free(&c);
    /* float16 and bfloat16: round to nearest even (a tie each: 1 + 2^-11 down to 1, 1 + 3 * 2^-11 up; bfloat16's
       1 + 2^-8 down, 1 + 3 * 2^-8 up), past the largest finite to Inf, back exactly */
    const float g[] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65520.0f, -0.1f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f};
    const ptq_attr to_h[] = {{.name = "to", .type = PTQ_ATTR_INT, .i = PTQ_DT_FLOAT16}};
    const ptq_attr to_bf[] = {{.name = "to", .type = PTQ_ATTR_INT, .i = PTQ_DT_BFLOAT16}};
    test_case_init(&c, "Cast", 13, to_h, 1, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, g, 1, DIMS(6));
    CHECK(test_case_run(&c, &ptq_op_Cast, 0) == PTQ_OK && c.out[0].dtype == PTQ_DT_FLOAT16);
    uint16_t h[6];
    memcpy(h, c.out[0].data, sizeof h);
    CHECK(h[0] == 0x3C00 && h[1] == 0x3C02 && h[2] == 0x7C00 && h[3] == 0xAE66);
    test_case_free(&c);
    test_case_init(&c, "Cast", 13, to_bf, 1, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, g, 1, DIMS(6));
    CHECK(test_case_run(&c, &ptq_op_Cast, 0) == PTQ_OK && c.out[0].dtype == PTQ_DT_BFLOAT16);
    uint16_t b16[6];
    memcpy(b16, c.out[0].data, sizeof b16);
    CHECK(b16[4] == 0x3F80 && b16[5] == 0x3F82 && b16[3] == 0xBDCD);
    test_case_free(&c);
    test_case_init(&c, "Cast", 13, to_f, 1, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT16, h, 1, DIMS(4));
    CHECK(test_case_run(&c, &ptq_op_Cast, 0) == PTQ_OK);
    y = c.out[0].data;
    CHECK(y[0] == 1.0f && y[1] == 1.0f + 0x1p-9f && isinf(y[2]) && y[3] == -0.0999755859375f);
    test_case_free(&c);
    /* FP8 is not a Cast ptq runs: unsupported, naming the node */
    const ptq_attr to_f8[] = {{.name = "to", .type = PTQ_ATTR_INT, .i = PTQ_DT_FLOAT8E4M3FN}};
    test_case_init(&c, "Cast", 13, to_f8, 1, 1, 1);
    test_case_input(&c, 0, PTQ_DT_FLOAT, f, 1, DIMS(6));
    CHECK(test_fails_naming_node(&c, test_case_run(&c, &ptq_op_Cast, 0), PTQ_ERR_UNSUPPORTED));
    test_case_free(&c);
}

int main(void)
{
    for (int i = 0; i < 24; i++)
        x234[i] = (float)i;
    check_reduce_mean();
    check_layernorm();
    check_pow_sqrt();
    check_shape_gather();
    check_slice();
    check_cast();
    return test_done("test_ops_zoo");
}
