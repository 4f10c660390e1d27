/* Malformed ONNX input must give an error with a message, never a crash or
 * an out-of-bounds read: every truncation and thousands of seeded byte
 * corruptions of real models, plus handcrafted bad encodings. Worth running
 * under -fsanitize=address,undefined (buffers are malloc'd to the exact size). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ptq/graph.h"
#include "testlib.h"

#define TESTDATA "/usr/include/onnx/backend/test/data"

static char fixture_dir[1024];

/* ---- a tiny protobuf writer for handcrafted models ---- */

typedef struct buf {
    unsigned char b[8192];
    size_t n;
} buf;

static void put_raw(buf *o, const void *p, size_t n)
{
    if (o->n + n <= sizeof o->b) {
        memcpy(o->b + o->n, p, n);
        o->n += n;
    }
}

static void put_varint(buf *o, uint64_t v)
{
    do {
        unsigned char c = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            c |= 0x80;
        put_raw(o, &c, 1);
    } while (v);
}

static void put_key(buf *o, unsigned num, unsigned wire)
{
    put_varint(o, ((uint64_t)num << 3) | wire);
}

static void put_int(buf *o, unsigned num, int64_t v)
{
    put_key(o, num, 0);
    put_varint(o, (uint64_t)v);
}

static void put_bytes(buf *o, unsigned num, const void *p, size_t n)
{
    put_key(o, num, 2);
    put_varint(o, n);
    put_raw(o, p, n);
}

static void put_str(buf *o, unsigned num, const char *s)
{
    put_bytes(o, num, s, strlen(s));
}

static void put_msg(buf *o, unsigned num, const buf *m)
{
    put_bytes(o, num, m->b, m->n);
}

/* ValueInfoProto of a float tensor with the given dims. */
static void put_value_info(buf *o, unsigned num, const char *name, int ndim, const int64_t *dims)
{
    buf shape = {0}, tt = {0}, type = {0}, vi = {0};
    for (int i = 0; i < ndim; i++) {
        buf dim = {0};
        put_int(&dim, 1, dims[i]);
        put_msg(&shape, 1, &dim);
    }
    put_int(&tt, 1, 1);
    put_msg(&tt, 2, &shape);
    put_msg(&type, 1, &tt);
    put_str(&vi, 1, name);
    put_msg(&vi, 2, &type);
    put_msg(o, num, &vi);
}

static void put_node(buf *o, const char *op, const char *in0, const char *in1, const char *out)
{
    buf n = {0};
    if (in0)
        put_str(&n, 1, in0);
    if (in1)
        put_str(&n, 1, in1);
    put_str(&n, 2, out);
    put_str(&n, 4, op);
    put_msg(o, 1, &n);
}

/* ModelProto(ir 7, opset 13, graph). */
static void wrap_model(buf *model, const buf *graph)
{
    buf opset = {0};
    put_int(&opset, 2, 13);
    model->n = 0;
    put_int(model, 1, 7);
    put_msg(model, 8, &opset);
    put_msg(model, 7, graph);
}

/* Graph: x[2,2] -> Add(x, w) -> y, plus the initializer tensor given. */
static void graph_with_init(buf *graph, const buf *init)
{
    const int64_t d[] = {2, 2};
    graph->n = 0;
    put_node(graph, "Add", "x", "w", "y");
    put_msg(graph, 5, init);
    put_value_info(graph, 11, "x", 2, d);
    put_value_info(graph, 12, "y", 2, d);
}

/* TensorProto "w": float dims, data appended by the caller. */
static void tensor_head(buf *t, int64_t dtype, int ndim, const int64_t *dims)
{
    t->n = 0;
    put_str(t, 8, "w");
    put_int(t, 2, dtype);
    for (int i = 0; i < ndim; i++)
        put_int(t, 1, dims[i]);
}

/* ---- running one input ---- */

/* Loads bytes from an exact-size heap copy; any result but a crash is fine
 * as long as an error carries a message and a success is a sound graph. */
static ptq_status try_load(const unsigned char *bytes, size_t n, const char *base_dir, ptq_ctx *ctx)
{
    unsigned char *copy = malloc(n ? n : 1);
    ptq_graph *g = NULL;
    if (!copy)
        return PTQ_ERR_NOMEM;
    if (n)
        memcpy(copy, bytes, n);
    ptq_ctx_init(ctx);
    ptq_status st = ptq_graph_load_onnx_bytes(ctx, copy, n, base_dir, &g);
    if (st != PTQ_OK) {
        CHECK_MSG(ctx->msg[0] != '\0' && g == NULL, "error %s without a message", ptq_status_name(st));
    } else {
        /* touch everything the graph points at */
        size_t sum = 0;
        for (int i = 0; i < g->n_values; i++) {
            const ptq_value *v = &g->values[i];
            sum += strlen(v->name);
            for (size_t k = 0; v->data && k < v->n_bytes; k++)
                sum += ((const unsigned char *)v->data)[k];
        }
        for (int i = 0; i < g->n_nodes; i++) {
            const ptq_node *nd = &g->nodes[i];
            sum += strlen(nd->name) + strlen(nd->op_type) + strlen(nd->domain);
            for (int j = 0; j < nd->n_inputs; j++)
                CHECK(nd->inputs[j] >= -1 && nd->inputs[j] < g->n_values &&
                      (nd->inputs[j] < 0 || g->values[nd->inputs[j]].producer < i));
            for (int j = 0; j < nd->n_outputs; j++)
                CHECK(nd->outputs[j] >= -1 && nd->outputs[j] < g->n_values);
            for (int j = 0; j < nd->n_attrs; j++) {
                const ptq_attr *a = &nd->attrs[j];
                sum += strlen(a->name) + a->s_len;
                for (int64_t k = 0; k < a->n && a->type == PTQ_ATTR_STRINGS; k++)
                    sum += strlen(a->strings[k]);
                for (int64_t k = 0; k < a->n && a->type == PTQ_ATTR_INTS; k++)
                    sum += (size_t)a->ints[k];
                if (a->type == PTQ_ATTR_TENSOR)
                    CHECK(a->tensor >= 0 && a->tensor < g->n_values);
            }
        }
        for (int i = 0; i < g->n_inputs; i++)
            CHECK(g->inputs[i] >= 0 && g->inputs[i] < g->n_values);
        for (int i = 0; i < g->n_outputs; i++)
            CHECK(g->outputs[i] >= 0 && g->outputs[i] < g->n_values);
        ptq_test_checks += sum == (size_t)-1; /* keeps the reads */
        ptq_graph_free(g);
    }
    free(copy);
    return st;
}

static void expect_error(const char *what, const buf *model, const char *base_dir, ptq_status want,
                         const char *want_text)
{
    ptq_ctx ctx;
    ptq_status st = try_load(model->b, model->n, base_dir, &ctx);
    CHECK_MSG(st == want && strstr(ctx.msg, want_text), "%s: got %s '%s', want %s with '%s'", what,
              ptq_status_name(st), ctx.msg, ptq_status_name(want), want_text);
}

static void test_handcrafted(void)
{
    buf model, graph, t, m2;
    ptq_ctx ctx;
    const int64_t d22[] = {2, 2};
    const float four[4] = {1, 2, 3, 4};

    /* the baseline loads: the cases below each break one thing */
    tensor_head(&t, 1, 2, d22);
    put_bytes(&t, 9, four, 16);
    graph_with_init(&graph, &t);
    wrap_model(&model, &graph);
    CHECK_MSG(try_load(model.b, model.n, NULL, &ctx) == PTQ_OK, "baseline: %s", ctx.msg);

    /* the default domain's opset, checked as onnxruntime does: imported when an ai.onnx node is there, at
     * version 1 to 24; a graph of other domains' nodes needs none, and IR version < 3 means opset 1 */
    buf acme = {0}, v0 = {0}, v24 = {0}, v25 = {0}, frob = {0}, g_acme = {0};
    const buf *no_default[] = {&acme, NULL};
    put_str(&acme, 1, "com.acme");
    put_int(&acme, 2, 1);
    put_int(&v0, 2, 0);
    put_int(&v24, 2, 24);
    put_int(&v25, 2, 25);
    put_str(&frob, 1, "x");
    put_str(&frob, 2, "y");
    put_str(&frob, 4, "Frob");
    put_str(&frob, 7, "com.acme");
    put_msg(&g_acme, 1, &frob);
    put_value_info(&g_acme, 11, "x", 2, d22);
    put_value_info(&g_acme, 12, "y", 2, d22);
    for (int k = 0; k < 2; k++) {
        m2.n = 0;
        put_int(&m2, 1, 7);
        if (no_default[k])
            put_msg(&m2, 8, no_default[k]);
        put_msg(&m2, 7, &graph);
        expect_error("no ai.onnx opset", &m2, NULL, PTQ_ERR_FORMAT,
                     k ? "model imports no ai.onnx opset (its opset_import is empty)"
                       : "model imports no ai.onnx opset, but unnamed node at byte");
    }
    const struct {
        const buf *opset, *graph;
        int64_t ir;
        ptq_status want;
        const char *text;
    } opsets[] = {
        {&v0, &graph, 7, PTQ_ERR_FORMAT, "model imports no ai.onnx opset (it imports version 0)"},
        {&v25, &graph, 7, PTQ_ERR_UNSUPPORTED, "model is at ai.onnx opset 25; the newest ONNX opset ptq knows is 24"},
        {&v24, &graph, 7, PTQ_OK, ""},
        {&acme, &g_acme, 7, PTQ_OK, ""},
        {NULL, &graph, 2, PTQ_OK, ""},
    };
    for (size_t k = 0; k < sizeof opsets / sizeof opsets[0]; k++) {
        m2.n = 0;
        put_int(&m2, 1, opsets[k].ir);
        if (opsets[k].opset)
            put_msg(&m2, 8, opsets[k].opset);
        put_msg(&m2, 7, opsets[k].graph);
        if (opsets[k].want != PTQ_OK)
            expect_error("opset", &m2, NULL, opsets[k].want, opsets[k].text);
        else
            CHECK_MSG(try_load(m2.b, m2.n, NULL, &ctx) == PTQ_OK, "opset case %zu: %s", k, ctx.msg);
    }

    /* empty input and a bare ModelProto */
    m2.n = 0;
    expect_error("empty", &m2, NULL, PTQ_ERR_FORMAT, "no graph");
    put_int(&m2, 1, 7);
    expect_error("no graph", &m2, NULL, PTQ_ERR_FORMAT, "no graph");

    /* wrong wire type: graph as a varint */
    m2.n = 0;
    put_int(&m2, 1, 7);
    put_int(&m2, 7, 5);
    expect_error("graph as varint", &m2, NULL, PTQ_ERR_FORMAT, "wrong wire type varint for ModelProto.graph");
    /* wrong wire type inside a tensor: raw_data as fixed32 */
    tensor_head(&t, 1, 2, d22);
    put_key(&t, 9, 5);
    put_raw(&t, four, 4);
    graph_with_init(&graph, &t);
    wrap_model(&model, &graph);
    expect_error("raw_data as fixed32", &model, NULL, PTQ_ERR_FORMAT, "TensorProto.raw_data");

    /* length past the end */
    m2.n = 0;
    put_int(&m2, 1, 7);
    put_key(&m2, 7, 2);
    put_varint(&m2, 100);
    put_raw(&m2, "abc", 3);
    expect_error("length past end", &m2, NULL, PTQ_ERR_FORMAT, "graph claims 100 bytes, 3 left");

    /* 11-byte varint, and a 10-byte one over 64 bits */
    m2.n = 0;
    put_key(&m2, 1, 0);
    for (int i = 0; i < 10; i++)
        put_raw(&m2, "\xff", 1);
    put_raw(&m2, "\x01", 1);
    expect_error("11-byte varint", &m2, NULL, PTQ_ERR_FORMAT, "longer than 10 bytes");
    m2.n = 0;
    put_key(&m2, 1, 0);
    for (int i = 0; i < 9; i++)
        put_raw(&m2, "\xff", 1);
    put_raw(&m2, "\x02", 1);
    expect_error("65-bit varint", &m2, NULL, PTQ_ERR_FORMAT, "over 64 bits");
    /* truncated varint */
    m2.n = 0;
    put_key(&m2, 1, 0);
    put_raw(&m2, "\xff\xff", 2);
    expect_error("truncated varint", &m2, NULL, PTQ_ERR_FORMAT, "truncated");

    /* group wire types, field 0 */
    m2.n = 0;
    put_key(&m2, 3, 3);
    expect_error("start group", &m2, NULL, PTQ_ERR_FORMAT, "start-group");
    m2.n = 0;
    put_raw(&m2, "\x00\x01", 2);
    expect_error("field 0", &m2, NULL, PTQ_ERR_FORMAT, "invalid field number 0");

    /* dims whose product overflows int64 */
    const int64_t huge[] = {(int64_t)1 << 40, (int64_t)1 << 40};
    tensor_head(&t, 1, 2, huge);
    put_bytes(&t, 9, four, 16);
    graph_with_init(&graph, &t);
    wrap_model(&model, &graph);
    expect_error("dims overflow", &model, NULL, PTQ_ERR_FORMAT, "overflows int64");
    /* bytes past size_t though the product fits int64 */
    const int64_t big[] = {(int64_t)1 << 62};
    tensor_head(&t, 1, 1, big);
    graph_with_init(&graph, &t);
    wrap_model(&model, &graph);
    expect_error("bytes overflow", &model, NULL, PTQ_ERR_FORMAT, "do not fit");

    /* raw_data size mismatch: the message says what and where */
    tensor_head(&t, 1, 2, d22);
    put_bytes(&t, 9, four, 12);
    graph_with_init(&graph, &t);
    wrap_model(&model, &graph);
    expect_error("raw_data size", &model, NULL, PTQ_ERR_FORMAT,
                 "<memory>: initializer 'w': raw_data has 12 bytes, dims 2x2 float32 need 16");

    /* typed data count and field mismatches */
    tensor_head(&t, 1, 2, d22);
    put_bytes(&t, 4, four, 12);
    graph_with_init(&graph, &t);
    wrap_model(&model, &graph);
    expect_error("float_data count", &model, NULL, PTQ_ERR_FORMAT, "float_data has 3 values");
    tensor_head(&t, 1, 2, d22);
    put_int(&t, 7, 1);
    graph_with_init(&graph, &t);
    wrap_model(&model, &graph);
    expect_error("int64_data for float", &model, NULL, PTQ_ERR_FORMAT, "int64_data cannot hold float32");
    tensor_head(&t, 1, 2, d22);
    graph_with_init(&graph, &t);
    wrap_model(&model, &graph);
    expect_error("no data", &model, NULL, PTQ_ERR_FORMAT, "has no data");
    tensor_head(&t, 1, 2, d22);
    put_bytes(&t, 9, four, 16);
    put_bytes(&t, 4, four, 16);
    graph_with_init(&graph, &t);
    wrap_model(&model, &graph);
    expect_error("two data sources", &model, NULL, PTQ_ERR_FORMAT, "more than one place");
    tensor_head(&t, 1, 2, d22);
    put_bytes(&t, 4, four, 15);
    graph_with_init(&graph, &t);
    wrap_model(&model, &graph);
    expect_error("packed float run", &model, NULL, PTQ_ERR_FORMAT, "not a multiple of 4");

    /* more than PTQ_MAX_DIMS dims, negative dims, unknown / missing data_type */
    const int64_t nine[] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, neg[] = {2, -2};
    tensor_head(&t, 1, 9, nine);
    put_bytes(&t, 9, four, 4);
    graph_with_init(&graph, &t);
    wrap_model(&model, &graph);
    expect_error("9 dims", &model, NULL, PTQ_ERR_UNSUPPORTED, "9 dims");
    tensor_head(&t, 1, 2, neg);
    graph_with_init(&graph, &t);
    wrap_model(&model, &graph);
    expect_error("negative dim", &model, NULL, PTQ_ERR_FORMAT, "negative");
    tensor_head(&t, 99, 2, d22);
    put_bytes(&t, 9, four, 16);
    graph_with_init(&graph, &t);
    wrap_model(&model, &graph);
    expect_error("data_type 99", &model, NULL, PTQ_ERR_UNSUPPORTED, "unknown data_type 99");
    tensor_head(&t, 0, 2, d22);
    graph_with_init(&graph, &t);
    wrap_model(&model, &graph);
    expect_error("data_type 0", &model, NULL, PTQ_ERR_FORMAT, "data_type is missing");

    /* external data outside the model's folder, or past the end of its file */
    char ext_dir[1100];
    snprintf(ext_dir, sizeof ext_dir, "%s/external", fixture_dir);
    static const struct {
        const char *location, *offset, *length, *text;
        ptq_status code;
    } ext[] = {
        {"../graph_features.onnx", NULL, NULL, "'..' component", PTQ_ERR_FORMAT},
        {"sub/../../x.bin", NULL, NULL, "'..' component", PTQ_ERR_FORMAT},
        {"/etc/passwd", NULL, NULL, "is absolute", PTQ_ERR_FORMAT},
        {"weights.bin", "50", NULL, "runs past its end", PTQ_ERR_FORMAT},
        {"weights.bin", "0", "20", "external data length 20", PTQ_ERR_FORMAT},
        {"weights.bin", "-1", NULL, "not a non-negative integer", PTQ_ERR_FORMAT},
        {"weights.bin", "9223372036854775808", NULL, "past the largest offset or length", PTQ_ERR_FORMAT},
        {"weights.bin", "9223372036854775807", NULL, "offset 9223372036854775807 + 16 bytes runs past its end",
         PTQ_ERR_FORMAT},
        {"weights.bin", "0", "9223372036854775804", "external data length 9223372036854775804", PTQ_ERR_FORMAT},
        {".", NULL, NULL, "is the model's folder", PTQ_ERR_FORMAT},
        {"missing.bin", NULL, NULL, "cannot open external data file", PTQ_ERR_IO},
        {"weights.bin", "8", "16", "", PTQ_OK},
    };
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        buf entry = {0};
        tensor_head(&t, 1, 2, d22);
        put_str(&entry, 1, "location");
        put_str(&entry, 2, ext[i].location);
        put_msg(&t, 13, &entry);
        if (ext[i].offset) {
            entry.n = 0;
            put_str(&entry, 1, "offset");
            put_str(&entry, 2, ext[i].offset);
            put_msg(&t, 13, &entry);
        }
        if (ext[i].length) {
            entry.n = 0;
            put_str(&entry, 1, "length");
            put_str(&entry, 2, ext[i].length);
            put_msg(&t, 13, &entry);
        }
        put_int(&t, 14, 1);
        graph_with_init(&graph, &t);
        wrap_model(&model, &graph);
        expect_error(ext[i].location, &model, ext_dir, ext[i].code, ext[i].text);
    }

    /* graph structure: a cycle, a dangling input, a tensor produced twice, a missing output */
    const int64_t d[] = {2};
    graph.n = 0;
    put_node(&graph, "Relu", "b", NULL, "a");
    put_node(&graph, "Relu", "a", NULL, "b");
    put_value_info(&graph, 12, "a", 1, d);
    wrap_model(&model, &graph);
    expect_error("cycle", &model, NULL, PTQ_ERR_FORMAT, "cycle");
    graph.n = 0;
    put_node(&graph, "Relu", "nowhere", NULL, "a");
    put_value_info(&graph, 12, "a", 1, d);
    wrap_model(&model, &graph);
    expect_error("dangling input", &model, NULL, PTQ_ERR_FORMAT, "input 'nowhere' is not produced");
    graph.n = 0;
    put_value_info(&graph, 11, "x", 1, d);
    put_node(&graph, "Relu", "x", NULL, "a");
    put_node(&graph, "Neg", "x", NULL, "a");
    put_value_info(&graph, 12, "a", 1, d);
    wrap_model(&model, &graph);
    expect_error("produced twice", &model, NULL, PTQ_ERR_FORMAT, "output 'a' is already");
    graph.n = 0;
    put_value_info(&graph, 11, "x", 1, d);
    put_node(&graph, "Relu", "x", NULL, "a");
    put_value_info(&graph, 12, "zzz", 1, d);
    wrap_model(&model, &graph);
    expect_error("missing output", &model, NULL, PTQ_ERR_FORMAT, "graph output 'zzz'");
    graph.n = 0;
    put_msg(&graph, 15, &t);
    wrap_model(&model, &graph);
    expect_error("sparse initializer", &model, NULL, PTQ_ERR_UNSUPPORTED, "sparse_initializer");
    graph.n = 0;
    put_str(&graph, 1, "\x12\x01y"); /* a node with an output and no op_type */
    wrap_model(&model, &graph);
    expect_error("no op_type", &model, NULL, PTQ_ERR_FORMAT, "no op_type");
}

/* ---- real models: every truncation and seeded corruptions ---- */

static unsigned char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    unsigned char *b = NULL;
    long len;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        b = malloc((size_t)len + 1);
        if (b && fread(b, 1, (size_t)len, f) != (size_t)len) {
            free(b);
            b = NULL;
        }
        *n = (size_t)len;
    }
    fclose(f);
    return b;
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static uint64_t next_rand(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1Dull;
}

static void fuzz_model(const char *path, const char *base_dir, int n_corrupt)
{
    size_t n = 0;
    unsigned char *orig = read_all(path, &n);
    if (!orig) {
        CHECK_MSG(0, "cannot read %s", path);
        return;
    }
    ptq_ctx ctx;
    int trunc_err = 0, n_ok = 0, n_err = 0;
    CHECK_MSG(try_load(orig, n, base_dir, &ctx) == PTQ_OK, "%s: %s", path, ctx.msg);
    /* every proper prefix */
    for (size_t len = 0; len < n; len++)
        trunc_err += try_load(orig, len, base_dir, &ctx) != PTQ_OK;
    unsigned char *bytes = malloc(n);
    if (!bytes) {
        free(orig);
        return;
    }
    for (int i = 0; i < n_corrupt; i++) {
        memcpy(bytes, orig, n);
        int n_bytes = 1 + (int)(next_rand() % 4);
        for (int k = 0; k < n_bytes; k++) {
            uint64_t r = next_rand();
            size_t at = (size_t)(r % n);
            /* mostly small edits to lengths/keys, sometimes any byte */
            bytes[at] = (r >> 32) & 1 ? (unsigned char)(r >> 40) : (unsigned char)(bytes[at] ^ (1u << ((r >> 40) & 7)));
        }
        ptq_status st = try_load(bytes, n, base_dir, &ctx);
        n_ok += st == PTQ_OK;
        n_err += st != PTQ_OK;
    }
    printf("%s: %zu truncations, %d rejected; %d corruptions, %d rejected, %d still valid\n", path, n, trunc_err,
           n_corrupt, n_err, n_ok);
    /* most truncations must be caught; a cut exactly between top-level fields can still be a model */
    CHECK(trunc_err > (int)n / 2);
    free(bytes);
    free(orig);
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

int main(void)
{
    const char *src = getenv("PTQ_SOURCE_DIR");
    char path[1200], ext_dir[1100];
    snprintf(fixture_dir, sizeof fixture_dir, "%s/tests/data/onnx", src ? src : ".");
    snprintf(path, sizeof path, "%s/graph_features.onnx", fixture_dir);
    if (!exists(path)) {
        printf("test_onnx_malformed: fixtures not found under %s (set PTQ_SOURCE_DIR): skipped\n", fixture_dir);
        return PTQ_TEST_SKIP;
    }
    test_handcrafted();
    fuzz_model(path, fixture_dir, 3000);
    snprintf(path, sizeof path, "%s/typed_fields.onnx", fixture_dir);
    fuzz_model(path, fixture_dir, 3000);
    snprintf(ext_dir, sizeof ext_dir, "%s/external", fixture_dir);
    snprintf(path, sizeof path, "%s/model.onnx", ext_dir);
    fuzz_model(path, ext_dir, 1000);
    static const char *const real[] = {"pytorch-converted/test_Conv2d", "pytorch-operator/test_operator_conv",
                                       "node/test_constant", "node/test_if"};
    for (size_t i = 0; i < sizeof real / sizeof real[0]; i++) {
        snprintf(path, sizeof path, "%s/%s/model.onnx", TESTDATA, real[i]);
        if (exists(path))
            fuzz_model(path, NULL, 1000);
    }
    return test_done("test_onnx_malformed");
}
