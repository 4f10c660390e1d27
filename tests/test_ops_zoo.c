/* The ops torchvision's exports need beyond the dense core
 * (runtime/ops_{reduce,math,index}.c): ReduceMean (any axes, keepdims, the
 * CPU pooling path against the reference), LayerNormalization (Mean and
 * InvStdDev outputs), Pow, Sqrt, Shape (start/end; its input's data never
 * read), Gather (negative indices, out of range refused), Slice (negative
 * steps, clamping, opset 1 attributes) and Cast (saturation, NaN, wrapping),
 * against values worked out by hand or in double; errors name the node. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/op_util.h"
#include "testlib.h"

extern const ptq_op_def ptq_op_ReduceMean, ptq_op_LayerNormalization, ptq_op_Pow, ptq_op_Sqrt, ptq_op_Shape,
    ptq_op_Gather, ptq_op_Slice, ptq_op_Cast;

#define N_IO 6
static const int io_index[N_IO] = {0, 1, 2, 3, 4, 5};

typedef struct op_case {
    ptq_graph graph;
    ptq_node node;
    ptq_op_io io;
    ptq_tensor in[N_IO], out[3];
    const ptq_tensor *in_ptr[N_IO];
    ptq_tensor *out_ptr[3];
    ptq_ctx ctx;
} op_case;

static void case_init(op_case *c, const char *op_type, int64_t opset, const ptq_attr *attrs, int n_attrs, int n_in,
                      int n_out)
{
    memset(c, 0, sizeof *c);
    c->graph.opset = opset;
    c->node.name = "node_under_test";
    c->node.op_type = op_type;
    c->node.domain = "";
    c->node.n_inputs = n_in;
    c->node.n_outputs = n_out;
    c->node.inputs = io_index;
    c->node.outputs = io_index;
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

static void case_input(op_case *c, int i, ptq_dtype dt, const void *data, int ndim, const int64_t *dims)
{
    c->in[i].dtype = dt;
    c->in[i].ndim = ndim;
    for (int d = 0; d < ndim; d++)
        c->in[i].dims[d] = dims[d];
    c->in[i].data = (void *)data;
}

static ptq_status case_run(op_case *c, const ptq_op_def *op, int fast)
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

static void case_free(op_case *c)
{
    for (int i = 0; i < 3; i++)
        ptq_tensor_free_host(&c->out[i]);
}

static int dims_are(const ptq_tensor *t, int ndim, const int64_t *dims)
{
    if (t->ndim != ndim)
        return 0;
    for (int d = 0; d < ndim; d++)
        if (t->dims[d] != dims[d])
            return 0;
    return 1;
}

static int fails_naming_node(op_case *c, ptq_status st, ptq_status want)
{
    return st == want && strstr(c->ctx.msg, "'node_under_test'") != NULL;
}

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

static float x234[24];

static void check_reduce_mean(void)
{
    op_case c;
    /* axes {0, 2} of [2, 3, 4], keepdims 0 -> [3]: mean over i and k of x[i][j][k] = i*12 + j*4 + k */
    const int64_t ax02[] = {0, 2};
    const ptq_attr a02[] = {{.name = "axes", .type = PTQ_ATTR_INTS, .n = 2, .ints = ax02},
                            {.name = "keepdims", .type = PTQ_ATTR_INT, .i = 0}};
    case_init(&c, "ReduceMean", 13, a02, 2, 1, 1);
    case_input(&c, 0, PTQ_DT_FLOAT, x234, 3, DIMS(2, 3, 4));
    CHECK_MSG(case_run(&c, &ptq_op_ReduceMean, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float *y = c.out[0].data;
    CHECK(dims_are(&c.out[0], 1, DIMS(3)) && y[0] == 7.5f && y[1] == 11.5f && y[2] == 15.5f);
    case_free(&c);

    /* trailing axes [2, 3] of [2, 3, 2, 2] with keepdims: the CPU pooling path equals the reference */
    static float big[2 * 3 * 2 * 2];
    test_rand_seed(3);
    test_fill_uniform(big, 24, -2.0f, 2.0f);
    const int64_t ax23[] = {2, 3};
    const ptq_attr a23[] = {{.name = "axes", .type = PTQ_ATTR_INTS, .n = 2, .ints = ax23}};
    float ref[6];
    for (int fast = 0; fast < 2; fast++) {
        case_init(&c, "ReduceMean", 13, a23, 1, 1, 1);
        case_input(&c, 0, PTQ_DT_FLOAT, big, 4, DIMS(2, 3, 2, 2));
        CHECK_MSG(case_run(&c, &ptq_op_ReduceMean, fast) == PTQ_OK, "%s", c.ctx.msg);
        CHECK(dims_are(&c.out[0], 4, DIMS(2, 3, 1, 1)));
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
        case_free(&c);
    }

    /* opset 18: axes as input 1; none given reduces everything; a repeated axis is refused naming the node */
    const int64_t ax_dup[] = {1, -2};
    case_init(&c, "ReduceMean", 18, NULL, 0, 2, 1);
    case_input(&c, 0, PTQ_DT_FLOAT, x234, 3, DIMS(2, 3, 4));
    case_input(&c, 1, PTQ_DT_INT64, ax_dup, 1, DIMS(2));
    CHECK(fails_naming_node(&c, case_run(&c, &ptq_op_ReduceMean, 0), PTQ_ERR_SHAPE));
    case_free(&c);
    case_init(&c, "ReduceMean", 18, NULL, 0, 1, 1);
    case_input(&c, 0, PTQ_DT_FLOAT, x234, 3, DIMS(2, 3, 4));
    CHECK_MSG(case_run(&c, &ptq_op_ReduceMean, 1) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(dims_are(&c.out[0], 3, DIMS(1, 1, 1)) && *(float *)c.out[0].data == 11.5f);
    case_free(&c);
}

static void check_layernorm(void)
{
    op_case c;
    /* rows {1, 2, 3} and {-2, 0, 2}: mean 2 and 0, variance 2/3 and 8/3 */
    const float x[] = {1, 2, 3, -2, 0, 2}, scale[] = {1, 2, 0.5f}, bias[] = {0, 1, -1};
    const ptq_attr eps[] = {{.name = "epsilon", .type = PTQ_ATTR_FLOAT, .f = 1e-3f}};
    case_init(&c, "LayerNormalization", 17, eps, 1, 3, 3);
    case_input(&c, 0, PTQ_DT_FLOAT, x, 2, DIMS(2, 3));
    case_input(&c, 1, PTQ_DT_FLOAT, scale, 1, DIMS(3));
    case_input(&c, 2, PTQ_DT_FLOAT, bias, 1, DIMS(3));
    CHECK_MSG(case_run(&c, &ptq_op_LayerNormalization, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float *y = c.out[0].data, *mean = c.out[1].data, *inv = c.out[2].data;
    const double mu[2] = {2, 0}, var[2] = {2.0 / 3, 8.0 / 3};
    for (int r = 0; r < 2; r++) {
        double is = 1 / sqrt(var[r] + 1e-3);
        CHECK(fabs(mean[r] - mu[r]) < 1e-6 && fabs(inv[r] - is) < 1e-5);
        for (int k = 0; k < 3; k++)
            CHECK_MSG(fabs(y[r * 3 + k] - ((x[r * 3 + k] - mu[r]) * is * scale[k] + bias[k])) < 1e-5, "y[%d]",
                      r * 3 + k);
    }
    CHECK(dims_are(&c.out[1], 2, DIMS(2, 1)) && dims_are(&c.out[2], 2, DIMS(2, 1)));
    case_free(&c);
    /* a scale that does not cover the normalized axes is named */
    case_init(&c, "LayerNormalization", 17, NULL, 0, 2, 1);
    case_input(&c, 0, PTQ_DT_FLOAT, x, 2, DIMS(2, 3));
    case_input(&c, 1, PTQ_DT_FLOAT, scale, 1, DIMS(2));
    CHECK(fails_naming_node(&c, case_run(&c, &ptq_op_LayerNormalization, 0), PTQ_ERR_UNSUPPORTED));
    case_free(&c);
}

static void check_pow_sqrt(void)
{
    op_case c;
    const float a[] = {1, 2, 3, 4, -2, 9}, two = 2.0f;
    case_init(&c, "Pow", 13, NULL, 0, 2, 1);
    case_input(&c, 0, PTQ_DT_FLOAT, a, 2, DIMS(2, 3));
    case_input(&c, 1, PTQ_DT_FLOAT, &two, 0, NULL);
    CHECK_MSG(case_run(&c, &ptq_op_Pow, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float want[] = {1, 4, 9, 16, 4, 81};
    CHECK(dims_are(&c.out[0], 2, DIMS(2, 3)) && memcmp(c.out[0].data, want, sizeof want) == 0);
    case_free(&c);
    const float e[] = {0.5f, 3.0f};
    case_init(&c, "Pow", 13, NULL, 0, 2, 1); /* [3, 1] ^ [2] -> [3, 2] */
    case_input(&c, 0, PTQ_DT_FLOAT, a + 3, 2, DIMS(3, 1));
    case_input(&c, 1, PTQ_DT_FLOAT, e, 1, DIMS(2));
    CHECK_MSG(case_run(&c, &ptq_op_Pow, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float *y = c.out[0].data;
    CHECK(dims_are(&c.out[0], 2, DIMS(3, 2)) && y[0] == 2 && y[1] == 64 && isnan(y[2]) && y[3] == -8 && y[4] == 3 &&
          y[5] == 729);
    case_free(&c);
    case_init(&c, "Sqrt", 13, NULL, 0, 1, 1);
    case_input(&c, 0, PTQ_DT_FLOAT, a + 3, 1, DIMS(3));
    CHECK_MSG(case_run(&c, &ptq_op_Sqrt, 0) == PTQ_OK, "%s", c.ctx.msg);
    y = c.out[0].data;
    CHECK(y[0] == 2 && isnan(y[1]) && y[2] == 3);
    case_free(&c);
}

static void check_shape_gather(void)
{
    op_case c;
    /* Shape reads no data: the input has none */
    const ptq_attr se[] = {{.name = "start", .type = PTQ_ATTR_INT, .i = 1}, {.name = "end", .type = PTQ_ATTR_INT, .i = -1}};
    case_init(&c, "Shape", 15, se, 2, 1, 1);
    case_input(&c, 0, PTQ_DT_FLOAT, NULL, 4, DIMS(5, 6, 7, 8));
    CHECK_MSG(case_run(&c, &ptq_op_Shape, 0) == PTQ_OK, "%s", c.ctx.msg);
    const int64_t *s = c.out[0].data;
    CHECK(c.out[0].dtype == PTQ_DT_INT64 && dims_are(&c.out[0], 1, DIMS(2)) && s[0] == 6 && s[1] == 7);
    CHECK(ptq_op_Shape.meta_inputs == 1u);
    case_free(&c);
    case_init(&c, "Shape", 13, se, 2, 1, 1); /* start/end arrive at opset 15 */
    case_input(&c, 0, PTQ_DT_FLOAT, NULL, 4, DIMS(5, 6, 7, 8));
    CHECK(case_run(&c, &ptq_op_Shape, 0) == PTQ_OK && c.out[0].dims[0] == 4);
    case_free(&c);

    /* Gather axis 1 of [2, 3] with indices [2, 2] holding {-1, 0, 2, 1} -> [2, 2, 2] */
    const float d[] = {10, 11, 12, 20, 21, 22};
    const int64_t idx[] = {-1, 0, 2, 1};
    const ptq_attr ax1[] = {{.name = "axis", .type = PTQ_ATTR_INT, .i = 1}};
    case_init(&c, "Gather", 13, ax1, 1, 2, 1);
    case_input(&c, 0, PTQ_DT_FLOAT, d, 2, DIMS(2, 3));
    case_input(&c, 1, PTQ_DT_INT64, idx, 2, DIMS(2, 2));
    CHECK_MSG(case_run(&c, &ptq_op_Gather, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float want[] = {12, 10, 12, 11, 22, 20, 22, 21};
    CHECK(dims_are(&c.out[0], 3, DIMS(2, 2, 2)) && memcmp(c.out[0].data, want, sizeof want) == 0);
    case_free(&c);
    /* a scalar index of an int64 shape drops the axis (torch's x.size(1)) */
    const int64_t shape[] = {8, 116, 28, 28}, one = 1;
    case_init(&c, "Gather", 13, NULL, 0, 2, 1);
    case_input(&c, 0, PTQ_DT_INT64, shape, 1, DIMS(4));
    case_input(&c, 1, PTQ_DT_INT64, &one, 0, NULL);
    CHECK_MSG(case_run(&c, &ptq_op_Gather, 0) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(c.out[0].ndim == 0 && *(int64_t *)c.out[0].data == 116);
    case_free(&c);
    const int32_t bad[] = {3};
    case_init(&c, "Gather", 13, ax1, 1, 2, 1);
    case_input(&c, 0, PTQ_DT_FLOAT, d, 2, DIMS(2, 3));
    case_input(&c, 1, PTQ_DT_INT32, bad, 1, DIMS(1));
    CHECK(fails_naming_node(&c, case_run(&c, &ptq_op_Gather, 0), PTQ_ERR_DATA) && strstr(c.ctx.msg, "index 3"));
    case_free(&c);
}

static void check_slice(void)
{
    op_case c;
    /* x[i][j][k] = i*12 + j*4 + k over [2, 3, 4]: axes {2, 1}, starts {-1, 0}, ends {-100, 99}, steps {-2, 2}
     * -> k = 3, 1 and j = 0, 2: [2, 2, 2] */
    const int64_t starts[] = {-1, 0}, ends[] = {-100, 99}, axes[] = {2, 1}, steps[] = {-2, 2};
    case_init(&c, "Slice", 13, NULL, 0, 5, 1);
    case_input(&c, 0, PTQ_DT_FLOAT, x234, 3, DIMS(2, 3, 4));
    case_input(&c, 1, PTQ_DT_INT64, starts, 1, DIMS(2));
    case_input(&c, 2, PTQ_DT_INT64, ends, 1, DIMS(2));
    case_input(&c, 3, PTQ_DT_INT64, axes, 1, DIMS(2));
    case_input(&c, 4, PTQ_DT_INT64, steps, 1, DIMS(2));
    CHECK_MSG(case_run(&c, &ptq_op_Slice, 0) == PTQ_OK, "%s", c.ctx.msg);
    const float want[] = {3, 1, 11, 9, 15, 13, 23, 21};
    CHECK(dims_are(&c.out[0], 3, DIMS(2, 2, 2)) && memcmp(c.out[0].data, want, sizeof want) == 0);
    case_free(&c);
    /* opset 1: attributes; an empty range gives a 0-size axis */
    const int64_t s1[] = {2}, e1[] = {1}, a1[] = {0};
    const ptq_attr attrs[] = {{.name = "starts", .type = PTQ_ATTR_INTS, .n = 1, .ints = s1},
                              {.name = "ends", .type = PTQ_ATTR_INTS, .n = 1, .ints = e1},
                              {.name = "axes", .type = PTQ_ATTR_INTS, .n = 1, .ints = a1}};
    case_init(&c, "Slice", 1, attrs, 3, 1, 1);
    case_input(&c, 0, PTQ_DT_FLOAT, x234, 3, DIMS(2, 3, 4));
    CHECK_MSG(case_run(&c, &ptq_op_Slice, 0) == PTQ_OK, "%s", c.ctx.msg);
    CHECK(dims_are(&c.out[0], 3, DIMS(0, 3, 4)));
    case_free(&c);
    /* step 0 is refused naming the node */
    const int64_t zero = 0, st0[] = {0}, en0[] = {2}, ax0[] = {0};
    case_init(&c, "Slice", 13, NULL, 0, 5, 1);
    case_input(&c, 0, PTQ_DT_FLOAT, x234, 3, DIMS(2, 3, 4));
    case_input(&c, 1, PTQ_DT_INT64, st0, 1, DIMS(1));
    case_input(&c, 2, PTQ_DT_INT64, en0, 1, DIMS(1));
    case_input(&c, 3, PTQ_DT_INT64, ax0, 1, DIMS(1));
    case_input(&c, 4, PTQ_DT_INT64, &zero, 1, DIMS(1));
    CHECK(fails_naming_node(&c, case_run(&c, &ptq_op_Slice, 0), PTQ_ERR_FORMAT));
    case_free(&c);
}

static void check_cast(void)
{
    op_case c;
    const float f[] = {-1.7f, 2.9f, 300.0f, -1e30f, NAN, 0.0f};
    const ptq_attr to_i8[] = {{.name = "to", .type = PTQ_ATTR_INT, .i = PTQ_DT_INT8}};
    case_init(&c, "Cast", 13, to_i8, 1, 1, 1);
    case_input(&c, 0, PTQ_DT_FLOAT, f, 1, DIMS(6));
    CHECK_MSG(case_run(&c, &ptq_op_Cast, 0) == PTQ_OK, "%s", c.ctx.msg);
    const int8_t want_i8[] = {-1, 2, 127, -128, 0, 0};
    CHECK(c.out[0].dtype == PTQ_DT_INT8 && memcmp(c.out[0].data, want_i8, sizeof want_i8) == 0);
    case_free(&c);
    /* int64 -> float32 and -> uint8 (wraps), bool */
    const int64_t i[] = {-1, 256 + 7, 1 << 24 | 1, 0};
    const ptq_attr to_f[] = {{.name = "to", .type = PTQ_ATTR_INT, .i = PTQ_DT_FLOAT}};
    const ptq_attr to_u8[] = {{.name = "to", .type = PTQ_ATTR_INT, .i = PTQ_DT_UINT8}};
    const ptq_attr to_b[] = {{.name = "to", .type = PTQ_ATTR_INT, .i = PTQ_DT_BOOL}};
    case_init(&c, "Cast", 13, to_f, 1, 1, 1);
    case_input(&c, 0, PTQ_DT_INT64, i, 1, DIMS(4));
    CHECK(case_run(&c, &ptq_op_Cast, 0) == PTQ_OK);
    const float *y = c.out[0].data;
    CHECK(y[0] == -1 && y[1] == 263 && y[2] == 16777216.0f && y[3] == 0);
    case_free(&c);
    case_init(&c, "Cast", 13, to_u8, 1, 1, 1);
    case_input(&c, 0, PTQ_DT_INT64, i, 1, DIMS(4));
    CHECK(case_run(&c, &ptq_op_Cast, 0) == PTQ_OK);
    const uint8_t *u = c.out[0].data;
    CHECK(u[0] == 255 && u[1] == 7 && u[2] == 1 && u[3] == 0);
    case_free(&c);
    case_init(&c, "Cast", 13, to_b, 1, 1, 1);
    case_input(&c, 0, PTQ_DT_FLOAT, f, 1, DIMS(6));
    CHECK(case_run(&c, &ptq_op_Cast, 0) == PTQ_OK);
    u = c.out[0].data;
    CHECK(u[0] == 1 && u[4] == 1 && u[5] == 0 && c.out[0].dtype == PTQ_DT_BOOL);
    case_free(&c);
    /* double past float's range: Inf, or FLT_MAX when it rounds there */
    const double big[] = {1e300, -1e300, 3.4028235e38}; /* the last: past FLT_MAX, below the midpoint to 2^128 */
    case_init(&c, "Cast", 13, to_f, 1, 1, 1);
    case_input(&c, 0, PTQ_DT_DOUBLE, big, 1, DIMS(3));
    CHECK(case_run(&c, &ptq_op_Cast, 0) == PTQ_OK);
    y = c.out[0].data;
    CHECK(isinf(y[0]) && y[0] > 0 && isinf(y[1]) && y[1] < 0 && y[2] == 3.4028234663852886e38f);
    case_free(&c);
    /* float16 is not a Cast ptq runs: unsupported, naming the node */
    const ptq_attr to_h[] = {{.name = "to", .type = PTQ_ATTR_INT, .i = PTQ_DT_FLOAT16}};
    case_init(&c, "Cast", 13, to_h, 1, 1, 1);
    case_input(&c, 0, PTQ_DT_FLOAT, f, 1, DIMS(6));
    CHECK(fails_naming_node(&c, case_run(&c, &ptq_op_Cast, 0), PTQ_ERR_UNSUPPORTED));
    case_free(&c);
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
