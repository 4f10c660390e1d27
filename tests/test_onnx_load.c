/* ONNX loading: the fixtures of scripts/make_test_models.py (topological
 * order, optional inputs/outputs, constants, typed and unpacked fields,
 * external data, TensorProto files) and every model of Debian's
 * libonnx-testdata (exit 77 when it is missing and the fixtures pass). */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ptq/graph.h"
#include "testlib.h"

#define TESTDATA "/usr/include/onnx/backend/test/data"

static char fixture_dir[1024];

static const char *fixture(const char *name)
{
    static char path[2048];
    snprintf(path, sizeof path, "%s/%s", fixture_dir, name);
    return path;
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static ptq_graph *load(const char *path)
{
    ptq_ctx ctx;
    ptq_graph *g = NULL;
    ptq_ctx_init(&ctx);
    ptq_status st = ptq_graph_load_onnx(&ctx, path, &g);
    CHECK_MSG(st == PTQ_OK, "%s: %s", path, ctx.msg);
    return g;
}

static const ptq_value *value_named(const ptq_graph *g, const char *name)
{
    int k = ptq_graph_find_value(g, name);
    return k >= 0 ? &g->values[k] : NULL;
}

static int dims_are(const ptq_value *v, int ndim, const int64_t *dims)
{
    if (!v || v->ndim != ndim)
        return 0;
    for (int i = 0; i < ndim; i++)
        if (v->dims[i] != dims[i])
            return 0;
    return 1;
}

/* What graph.h promises of every loaded graph; returns 1 if all holds. */
static int check_invariants(const ptq_graph *g, const char *label)
{
    int before = ptq_test_failures;
    for (int k = 0; k < g->n_nodes; k++) {
        const ptq_node *n = &g->nodes[k];
        CHECK_MSG(n->name && n->name[0] && n->op_type[0] && n->domain, "%s: node %d names", label, k);
        for (int j = 0; j < n->n_inputs; j++) {
            int v = n->inputs[j];
            CHECK_MSG(v >= -1 && v < g->n_values, "%s: node %d input %d", label, k, j);
            if (v >= 0)
                CHECK_MSG(g->values[v].producer < k, "%s: node %s reads '%s' before it is produced", label, n->name,
                          g->values[v].name);
        }
        for (int j = 0; j < n->n_outputs; j++) {
            int v = n->outputs[j];
            CHECK_MSG(v >= -1 && v < g->n_values, "%s: node %d output %d", label, k, j);
            if (v >= 0)
                CHECK_MSG(g->values[v].producer == k, "%s: '%s' producer", label, g->values[v].name);
        }
        for (int j = 0; j < n->n_attrs; j++) {
            const ptq_attr *a = &n->attrs[j];
            CHECK_MSG(a->name[0] && ptq_node_attr(n, a->name) == a, "%s: node %s attribute %d", label, n->name, j);
            if (a->type == PTQ_ATTR_TENSOR)
                CHECK_MSG(a->tensor >= 0 && a->tensor < g->n_values &&
                              (g->values[a->tensor].flags & PTQ_VALUE_CONSTANT),
                          "%s: node %s attribute %s tensor", label, n->name, a->name);
        }
    }
    for (int i = 0; i < g->n_values; i++) {
        const ptq_value *v = &g->values[i];
        int is_const = (v->flags & (PTQ_VALUE_INITIALIZER | PTQ_VALUE_CONSTANT)) != 0;
        CHECK_MSG(v->name && v->name[0], "%s: value %d has no name", label, i);
        CHECK_MSG(v->ndim >= -1 && v->ndim <= PTQ_MAX_DIMS, "%s: value %s ndim %d", label, v->name, v->ndim);
        if (is_const) {
            ptq_tensor t = {.dtype = v->dtype, .ndim = v->ndim};
            memcpy(t.dims, v->dims, sizeof t.dims);
            CHECK_MSG(v->data && v->n_bytes == ptq_tensor_bytes(&t) && v->producer == -1,
                      "%s: constant %s has %zu bytes", label, v->name, v->n_bytes);
        } else {
            CHECK_MSG(!v->data, "%s: %s has data", label, v->name);
        }
        if (!(v->flags & PTQ_VALUE_CONSTANT))
            CHECK_MSG(ptq_graph_find_value(g, v->name) == i, "%s: find_value(%s)", label, v->name);
    }
    for (int i = 0; i < g->n_inputs; i++)
        CHECK_MSG(g->values[g->inputs[i]].flags == PTQ_VALUE_INPUT ||
                      g->values[g->inputs[i]].flags == (PTQ_VALUE_INPUT | PTQ_VALUE_OUTPUT),
                  "%s: input %d flags", label, i);
    for (int i = 0; i < g->n_outputs; i++)
        CHECK_MSG(g->values[g->outputs[i]].flags & PTQ_VALUE_OUTPUT, "%s: output %d flags", label, i);
    return ptq_test_failures == before;
}

static void test_features(void)
{
    ptq_graph *g = load(fixture("graph_features.onnx"));
    if (!g)
        return;
    check_invariants(g, "graph_features");
    CHECK(g->ir_version == 7 && g->opset == 13 && strcmp(g->producer, "ptq-tests") == 0);
    CHECK(strcmp(g->name, "features") == 0);
    CHECK(g->n_opsets == 2 && strcmp(g->opsets[1].domain, "com.example") == 0 && g->opsets[1].version == 1);
    CHECK(g->n_meta == 2);
    CHECK(ptq_graph_meta(g, "ptq.preprocess") && strcmp(ptq_graph_meta(g, "ptq.preprocess"), "scale=1") == 0);
    CHECK(ptq_graph_meta(g, "author") && strcmp(ptq_graph_meta(g, "author"), "ptq tests") == 0);
    CHECK(ptq_graph_meta(g, "missing") == NULL);

    /* "w" is both an input and an initializer: only "x" is fed */
    CHECK(g->n_inputs == 1 && strcmp(g->values[g->inputs[0]].name, "x") == 0);
    const int64_t x_dims[] = {-1, 3}, z_dims[] = {-1, 4}, w_dims[] = {3, 4}, c_dims[] = {4};
    CHECK(dims_are(value_named(g, "x"), 2, x_dims) && value_named(g, "x")->dtype == PTQ_DT_FLOAT);
    const ptq_value *w = value_named(g, "w");
    CHECK(w && w->flags == PTQ_VALUE_INITIALIZER && dims_are(w, 2, w_dims) && w->n_bytes == 48);
    if (w && w->data)
        for (int i = 0; i < 12; i++)
            CHECK(((const float *)w->data)[i] == 0.5f * (float)i - 1.0f);
    CHECK(g->n_outputs == 2);
    const ptq_value *z = value_named(g, "z"), *s = value_named(g, "s");
    CHECK(z && z->flags == PTQ_VALUE_OUTPUT && dims_are(z, 2, z_dims));
    CHECK(s && (s->flags & PTQ_VALUE_OUTPUT) && s->ndim == -1 && s->dtype == PTQ_DT_FLOAT);
    CHECK(value_named(g, "h") && value_named(g, "h")->ndim == -1 && value_named(g, "h")->dtype == PTQ_DT_UNDEFINED);
    CHECK(dims_are(value_named(g, "mm"), 2, z_dims)); /* from value_info */

    /* file order relu, (Add), matmul, const, drop, clip, scale; Kahn keeps file order among ready nodes */
    static const char *const order[] = {"matmul", "const", "Add_2", "relu", "drop", "clip", "scale"};
    CHECK(g->n_nodes == 7);
    for (int i = 0; i < g->n_nodes && i < 7; i++)
        CHECK_MSG(strcmp(g->nodes[i].name, order[i]) == 0, "node %d is %s, want %s", i, g->nodes[i].name, order[i]);
    int k_mm = -1;
    test_node_named(g, "matmul", &k_mm);
    CHECK(value_named(g, "mm") && value_named(g, "mm")->producer == k_mm && k_mm == 0);

    const ptq_node *drop = test_node_named(g, "drop", NULL), *clip = test_node_named(g, "clip", NULL);
    CHECK(drop && drop->n_outputs == 2 && drop->outputs[1] == -1);
    CHECK(clip && clip->n_inputs == 3 && clip->inputs[1] == -1 && clip->inputs[2] == ptq_graph_find_value(g, "cmax"));
    const ptq_value *cmax = value_named(g, "cmax");
    CHECK(cmax && cmax->ndim == 0 && cmax->n_bytes == 4 && cmax->data && *(const float *)cmax->data == 6.0f);

    const ptq_node *cn = test_node_named(g, "const", NULL);
    const ptq_attr *val = cn ? ptq_node_attr(cn, "value") : NULL;
    CHECK(val && val->type == PTQ_ATTR_TENSOR);
    if (val && val->tensor >= 0) {
        const ptq_value *cv = &g->values[val->tensor];
        CHECK(cv->flags == PTQ_VALUE_CONSTANT && dims_are(cv, 1, c_dims) && cv->dtype == PTQ_DT_FLOAT);
        for (int i = 0; i < 4; i++)
            CHECK(((const float *)cv->data)[i] == (float)(i + 1));
        CHECK(ptq_graph_find_value(g, cv->name) == -1); /* attribute tensors are not graph-scope names */
    }

    const ptq_node *sc = test_node_named(g, "scale", NULL);
    CHECK(sc && strcmp(sc->domain, "com.example") == 0 && strcmp(sc->op_type, "Scale") == 0);
    if (sc) {
        CHECK(ptq_node_attr_float(sc, "alpha", 9.0f) == 0.5f);
        CHECK(ptq_node_attr_int(sc, "count", 9) == 3);
        CHECK(ptq_node_attr_int(sc, "alpha", 9) == 9); /* wrong type: the default */
        CHECK(ptq_node_attr_float(sc, "missing", 2.5f) == 2.5f && ptq_node_attr(sc, "missing") == NULL);
        const ptq_attr *a = ptq_node_attr(sc, "mode");
        CHECK(a && a->type == PTQ_ATTR_STRING && a->s_len == 4 && strcmp(a->s, "fast") == 0);
        a = ptq_node_attr(sc, "weights");
        CHECK(a && a->type == PTQ_ATTR_FLOATS && a->n == 2 && a->floats[0] == 1.5f && a->floats[1] == -2.0f);
        a = ptq_node_attr(sc, "axes");
        CHECK(a && a->type == PTQ_ATTR_INTS && a->n == 3 && a->ints[0] == 0 && a->ints[1] == -1 && a->ints[2] == 2);
        a = ptq_node_attr(sc, "names");
        CHECK(a && a->type == PTQ_ATTR_STRINGS && a->n == 2 && strcmp(a->strings[0], "a") == 0 &&
              strcmp(a->strings[1], "bc") == 0);
    }
    ptq_graph_free(g);
}

static void test_typed_fields(void)
{
    ptq_graph *g = load(fixture("typed_fields.onnx"));
    if (!g)
        return;
    check_invariants(g, "typed_fields");
    const ptq_value *v;
    const int64_t d23[] = {2, 3}, d03[] = {0, 3};
    CHECK((v = value_named(g, "f32_unpacked")) && dims_are(v, 2, d23) && v->dtype == PTQ_DT_FLOAT);
    for (int i = 0; v && i < 6; i++)
        CHECK(((const float *)v->data)[i] == 0.25f * (float)i - 1.0f);
    const float split[] = {1.5f, -2.0f, 3.25f, 0.0f};
    CHECK((v = value_named(g, "f32_split")) && v->n_bytes == 16 && memcmp(v->data, split, 16) == 0);
    const int64_t i64p[] = {-3, 0, 7, (int64_t)1 << 40, -((int64_t)1 << 62)}, i64u[] = {-1, 2, -300};
    CHECK((v = value_named(g, "i64_packed")) && v->n_bytes == 40 && memcmp(v->data, i64p, 40) == 0);
    CHECK((v = value_named(g, "i64_unpacked")) && v->n_bytes == 24 && memcmp(v->data, i64u, 24) == 0);
    const int8_t i8[] = {-128, -1, 0, 127};
    const uint8_t u8[] = {0, 200, 255}, b[] = {1, 0, 1};
    const int16_t i16[] = {-32768, 32767};
    const uint16_t f16[] = {0x3C00, 0xC100, 0x7BFF}, bf16[] = {0x3F80, 0xC020};
    CHECK((v = value_named(g, "i8")) && v->dtype == PTQ_DT_INT8 && memcmp(v->data, i8, 4) == 0);
    CHECK((v = value_named(g, "u8")) && v->dtype == PTQ_DT_UINT8 && memcmp(v->data, u8, 3) == 0);
    CHECK((v = value_named(g, "i16")) && v->dtype == PTQ_DT_INT16 && memcmp(v->data, i16, 4) == 0);
    CHECK((v = value_named(g, "f16")) && v->dtype == PTQ_DT_FLOAT16 && memcmp(v->data, f16, 6) == 0);
    CHECK((v = value_named(g, "bf16")) && v->dtype == PTQ_DT_BFLOAT16 && memcmp(v->data, bf16, 4) == 0);
    CHECK((v = value_named(g, "boolean")) && v->dtype == PTQ_DT_BOOL && memcmp(v->data, b, 3) == 0);
    const double f64[] = {3.5, -1e300};
    const uint32_t u32[] = {0, 4294967295u};
    const uint64_t u64[] = {UINT64_MAX};
    CHECK((v = value_named(g, "f64")) && v->dtype == PTQ_DT_DOUBLE && memcmp(v->data, f64, 16) == 0);
    CHECK((v = value_named(g, "u32")) && v->dtype == PTQ_DT_UINT32 && memcmp(v->data, u32, 8) == 0);
    CHECK((v = value_named(g, "u64")) && v->dtype == PTQ_DT_UINT64 && memcmp(v->data, u64, 8) == 0);
    CHECK((v = value_named(g, "scalar")) && v->ndim == 0 && *(const float *)v->data == 42.0f);
    CHECK((v = value_named(g, "empty")) && dims_are(v, 2, d03) && v->n_bytes == 0 && v->data);

    const ptq_node *n = test_node_named(g, "Attrs_1", NULL); /* unnamed, second in order */
    CHECK(n && strcmp(n->domain, "com.example") == 0);
    if (n) {
        const ptq_attr *a = ptq_node_attr(n, "ints_packed");
        CHECK(a && a->type == PTQ_ATTR_INTS && a->n == 3 && a->ints[0] == 1 && a->ints[1] == -2 && a->ints[2] == 300);
        a = ptq_node_attr(n, "floats_packed");
        CHECK(a && a->type == PTQ_ATTR_FLOATS && a->n == 2 && a->floats[0] == 0.5f && a->floats[1] == -1.25f);
        CHECK(ptq_node_attr_int(n, "untyped_int", 0) == 7); /* no type field: told from the value */
        a = ptq_node_attr(n, "untyped_floats");
        CHECK(a && a->type == PTQ_ATTR_FLOATS && a->n == 2 && a->floats[1] == 4.0f);
    }
    ptq_graph_free(g);
}

static void check_external_values(const ptq_graph *g)
{
    const ptq_value *a = value_named(g, "ext_a"), *b = value_named(g, "ext_b");
    CHECK(a && a->n_bytes == 24 && b && b->n_bytes == 32);
    for (int i = 0; a && i < 6; i++)
        CHECK(((const float *)a->data)[i] == 1.5f * (float)i);
    for (int i = 0; b && i < 4; i++)
        CHECK(((const int64_t *)b->data)[i] == 10 * (i + 1));
}

static unsigned char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    long len;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)len + 1);
        if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
            free(buf);
            buf = NULL;
        }
        *n = (size_t)len;
    }
    fclose(f);
    return buf;
}

static void test_external(void)
{
    ptq_graph *g = load(fixture("external/model.onnx"));
    if (g) {
        check_invariants(g, "external");
        check_external_values(g);
        ptq_graph_free(g);
    }
    /* from memory: the folder comes from the caller, or there is none */
    size_t n = 0;
    unsigned char *bytes = read_all(fixture("external/model.onnx"), &n);
    CHECK(bytes != NULL);
    if (!bytes)
        return;
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = ptq_graph_load_onnx_bytes(&ctx, bytes, n, NULL, &g);
    CHECK_MSG(st == PTQ_ERR_INVALID_ARG && g == NULL && strstr(ctx.msg, "weights.bin"), "%s", ctx.msg);
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/external", fixture_dir);
    st = ptq_graph_load_onnx_bytes(&ctx, bytes, n, dir, &g);
    CHECK_MSG(st == PTQ_OK, "%s", ctx.msg);
    if (g) {
        CHECK(strcmp(g->path, "<memory>") == 0);
        check_external_values(g);
        ptq_graph_free(g);
    }
    free(bytes);
}

static void test_tensor_pb_fixture(void)
{
    ptq_ctx ctx;
    ptq_tensor t;
    char *name = NULL;
    ptq_ctx_init(&ctx);
    ptq_status st = ptq_tensor_load_pb(&ctx, fixture("tensor_int32.pb"), &t, &name);
    CHECK_MSG(st == PTQ_OK, "%s", ctx.msg);
    if (st != PTQ_OK)
        return;
    const int32_t want[] = {-5, -1, 0, 1, 7, 2147483647};
    CHECK(t.dtype == PTQ_DT_INT32 && t.ndim == 2 && t.dims[0] == 2 && t.dims[1] == 3 && t.mem == PTQ_MEM_HOST);
    CHECK(ptq_tensor_bytes(&t) == 24 && t.cap_bytes >= 24 && memcmp(t.data, want, 24) == 0);
    CHECK(name && strcmp(name, "t") == 0);
    free(name);
    ptq_tensor_free_host(&t);
    st = ptq_tensor_load_pb(&ctx, fixture("no_such.pb"), &t, NULL);
    CHECK(st == PTQ_ERR_IO && strstr(ctx.msg, "no_such.pb"));
    st = ptq_graph_load_onnx(&ctx, fixture("no_such.onnx"), &(ptq_graph *){NULL});
    CHECK(st == PTQ_ERR_IO && strstr(ctx.msg, "no_such.onnx"));
}

/* ---- Debian's libonnx-testdata ---- */

static void test_conv_case(void)
{
    const char *dir = TESTDATA "/node/test_conv_with_strides_padding";
    char path[512];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    ptq_graph *g = load(path);
    if (!g)
        return;
    const int64_t x_dims[] = {1, 1, 7, 5}, y_dims[] = {1, 1, 4, 3};
    CHECK(g->ir_version == 6 && g->opset == 11 && g->n_nodes == 1 && g->n_inputs == 2 && g->n_outputs == 1);
    CHECK(dims_are(&g->values[g->inputs[0]], 4, x_dims) && dims_are(&g->values[g->outputs[0]], 4, y_dims));
    const ptq_node *n = &g->nodes[0];
    const ptq_attr *k = ptq_node_attr(n, "kernel_shape"), *p = ptq_node_attr(n, "pads"), *s = ptq_node_attr(n, "strides");
    CHECK(strcmp(n->op_type, "Conv") == 0 && strcmp(n->name, "Conv_0") == 0);
    CHECK(k && k->n == 2 && k->ints[0] == 3 && k->ints[1] == 3);
    CHECK(p && p->n == 4 && p->ints[0] == 1 && p->ints[3] == 1);
    CHECK(s && s->n == 2 && s->ints[0] == 2 && s->ints[1] == 2);
    ptq_graph_free(g);

    /* onnx's conv test: x = arange(35), W = ones(3x3), y = the padded strided sums */
    ptq_ctx ctx;
    ptq_tensor x, w, y;
    char *name = NULL;
    ptq_ctx_init(&ctx);
    snprintf(path, sizeof path, "%s/test_data_set_0/input_0.pb", dir);
    ptq_status st = ptq_tensor_load_pb(&ctx, path, &x, &name);
    CHECK_MSG(st == PTQ_OK, "%s", ctx.msg);
    if (st == PTQ_OK) {
        CHECK(x.dtype == PTQ_DT_FLOAT && x.ndim == 4 && x.dims[2] == 7 && x.dims[3] == 5 && strcmp(name, "x") == 0);
        for (int i = 0; i < 35; i++)
            CHECK(((const float *)x.data)[i] == (float)i);
        free(name);
        snprintf(path, sizeof path, "%s/test_data_set_0/input_1.pb", dir);
        st = ptq_tensor_load_pb(&ctx, path, &w, NULL);
        CHECK_MSG(st == PTQ_OK, "%s", ctx.msg);
        snprintf(path, sizeof path, "%s/test_data_set_0/output_0.pb", dir);
        if (st == PTQ_OK && (st = ptq_tensor_load_pb(&ctx, path, &y, NULL)) == PTQ_OK) {
            /* recompute y from x and w: 3x3 window, stride 2, pad 1 */
            float want[12];
            for (int oh = 0; oh < 4; oh++)
                for (int ow = 0; ow < 3; ow++) {
                    float acc = 0;
                    for (int kh = 0; kh < 3; kh++)
                        for (int kw = 0; kw < 3; kw++) {
                            int ih = oh * 2 - 1 + kh, iw = ow * 2 - 1 + kw;
                            if (ih >= 0 && ih < 7 && iw >= 0 && iw < 5)
                                acc += ((const float *)x.data)[ih * 5 + iw] * ((const float *)w.data)[kh * 3 + kw];
                        }
                    want[oh * 3 + ow] = acc;
                }
            CHECK(y.ndim == 4 && y.dims[2] == 4 && y.dims[3] == 3);
            test_close("conv output_0.pb", y.data, want, 12, 0.0f, 0.0f);
            ptq_tensor_free_host(&y);
        }
        CHECK_MSG(st == PTQ_OK, "%s", ctx.msg);
        ptq_tensor_free_host(&w);
        ptq_tensor_free_host(&x);
    }
}

static void test_constant_case(void)
{
    /* the Constant node's tensor must equal the expected output of the model */
    ptq_graph *g = load(TESTDATA "/node/test_constant/model.onnx");
    if (!g)
        return;
    ptq_ctx ctx;
    ptq_tensor want;
    ptq_ctx_init(&ctx);
    ptq_status st = ptq_tensor_load_pb(&ctx, TESTDATA "/node/test_constant/test_data_set_0/output_0.pb", &want, NULL);
    CHECK_MSG(st == PTQ_OK, "%s", ctx.msg);
    const ptq_attr *a = g->n_nodes == 1 ? ptq_node_attr(&g->nodes[0], "value") : NULL;
    CHECK(a && a->type == PTQ_ATTR_TENSOR);
    if (st == PTQ_OK && a) {
        const ptq_value *v = &g->values[a->tensor];
        CHECK(v->ndim == 2 && v->dims[0] == 5 && v->dims[1] == 5 && v->n_bytes == ptq_tensor_bytes(&want));
        CHECK(memcmp(v->data, want.data, v->n_bytes) == 0);
    }
    if (st == PTQ_OK)
        ptq_tensor_free_host(&want);
    ptq_graph_free(g);
}

static void test_old_exporter_case(void)
{
    /* IR version 3: the weights are listed among the graph inputs */
    ptq_graph *g = load(TESTDATA "/pytorch-converted/test_Conv2d/model.onnx");
    if (!g)
        return;
    const int64_t w_dims[] = {4, 3, 3, 2};
    CHECK(g->ir_version == 3 && g->opset == 6 && strcmp(g->producer, "pytorch") == 0);
    CHECK(g->n_inputs == 1 && strcmp(g->values[g->inputs[0]].name, "0") == 0);
    const ptq_value *w = value_named(g, "1");
    CHECK(w && w->flags == PTQ_VALUE_INITIALIZER && dims_are(w, 4, w_dims) && w->n_bytes == 288);
    CHECK(g->n_nodes == 1 && ptq_node_attr(&g->nodes[0], "kernel_shape")->ints[1] == 2);
    ptq_graph_free(g);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every model of a suite loads (or is refused as a non-tensor graph) and keeps the invariants. */
static void test_suite(const char *suite)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", TESTDATA, suite);
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "cannot open %s", dir);
    if (!d)
        return;
    char **names = NULL;
    int n = 0, cap = 0, loaded = 0, refused = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            char **grown = realloc(names, (size_t)cap * sizeof *names);
            if (!grown)
                break;
            names = grown;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s/model.onnx", dir, names[i]);
        if (exists(path)) {
            ptq_ctx ctx;
            ptq_graph *g = NULL;
            ptq_ctx_init(&ctx);
            ptq_status st = ptq_graph_load_onnx(&ctx, path, &g);
            if (st == PTQ_OK) {
                loaded++;
                check_invariants(g, names[i]);
                ptq_graph_free(g);
            } else {
                refused++;
                CHECK_MSG(st == PTQ_ERR_UNSUPPORTED && strstr(ctx.msg, "is not a tensor"), "%s: %s: %s", names[i],
                          ptq_status_name(st), ctx.msg);
            }
        }
        free(names[i]);
    }
    free(names);
    printf("%s: %d models loaded, %d refused (non-tensor inputs/outputs)\n", suite, loaded, refused);
    CHECK(loaded > 0);
}

int main(void)
{
    const char *src = getenv("PTQ_SOURCE_DIR");
    snprintf(fixture_dir, sizeof fixture_dir, "%s/tests/data/onnx", src ? src : ".");
    if (!exists(fixture("graph_features.onnx"))) {
        printf("test_onnx_load: fixtures not found under %s (set PTQ_SOURCE_DIR): skipped\n", fixture_dir);
        return PTQ_TEST_SKIP;
    }
    test_features();
    test_typed_fields();
    test_external();
    test_tensor_pb_fixture();
    if (!exists(TESTDATA)) {
        printf("test_onnx_load: %s missing (Debian's libonnx-testdata)\n", TESTDATA);
        return ptq_test_failures ? test_done("test_onnx_load") : PTQ_TEST_SKIP;
    }
    test_conv_case();
    test_constant_case();
    test_old_exporter_case();
    test_suite("node");
    test_suite("pytorch-converted");
    test_suite("pytorch-operator");
    test_suite("simple");
    return test_done("test_onnx_load");
}
