/* The protobuf-level ONNX editor: a no-edit round trip is byte-identical,
 * edits load back through ptq_graph_load_onnx with the expected graph, added
 * nodes land before their consumers, an attribute moved to an input,
 * refusals. Driver modes for
 * tests/onnx_edit_test.py: `--copy IN OUT` (no edits) and `--qdq IN OUT`
 * (Q/DQ on every Conv/Gemm activation input, int8 per-channel weights). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptq/graph.h"
#include "ptq/onnx_edit.h"
#include "ptq/runtime.h"
#include "testlib.h"

static char model_path[2048];
static char tmp_dir[] = "/tmp/ptq_onnx_edit_XXXXXX";

static const char *tmp_file(const char *name)
{
    static char path[2048];
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    return path;
}

static unsigned char *read_all(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    unsigned char *buf = NULL;
    *n = 0;
    if (!fp)
        return NULL;
    if (fseek(fp, 0, SEEK_END) == 0) {
        long len = ftell(fp);
        if (len >= 0 && fseek(fp, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len + 1)))
            *n = fread(buf, 1, (size_t)len, fp);
    }
    fclose(fp);
    return buf;
}

static const char *in_name(const ptq_graph *g, const ptq_node *n, int j)
{
    return n && j < n->n_inputs && n->inputs[j] >= 0 ? g->values[n->inputs[j]].name : "";
}

/* Offset of the first occurrence of s in the bytes, or -1. */
static long find_bytes(const unsigned char *b, size_t n, const char *s)
{
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(b + i, s, k) == 0)
            return (long)i;
    return -1;
}

static void test_round_trip(void)
{
    ptq_ctx ctx;
    ptq_onnx_edit *e = NULL;
    void *out = NULL;
    size_t n_in = 0, n_out = 0;
    ptq_ctx_init(&ctx);
    unsigned char *in = read_all(model_path, &n_in);
    CHECK(in && n_in > 0);
    CHECK_MSG(ptq_onnx_edit_open(&ctx, model_path, &e) == PTQ_OK, "%s", ctx.msg);
    if (!e || !in) {
        free(in);
        return;
    }
    CHECK_MSG(ptq_onnx_edit_encode(&ctx, e, &out, &n_out) == PTQ_OK, "%s", ctx.msg);
    CHECK_MSG(n_out == n_in && out && memcmp(out, in, n_in) == 0, "no-edit encode: %zu bytes, input %zu", n_out, n_in);
    free(out);
    /* the opset is 13 already and ir_version 7: requiring those changes nothing */
    CHECK(ptq_onnx_edit_require_opset(&ctx, e, 13, 7) == PTQ_OK);
    CHECK(ptq_onnx_edit_encode(&ctx, e, &out, &n_out) == PTQ_OK);
    CHECK(n_out == n_in && out && memcmp(out, in, n_in) == 0);
    free(out);
    CHECK_MSG(ptq_onnx_edit_write(&ctx, e, tmp_file("copy.onnx")) == PTQ_OK, "%s", ctx.msg);
    size_t n_copy = 0;
    unsigned char *copy = read_all(tmp_file("copy.onnx"), &n_copy);
    CHECK(copy && n_copy == n_in && memcmp(copy, in, n_in) == 0);
    free(copy);
    ptq_onnx_edit_free(e);
    free(in);
}

static void test_edits(void)
{
    ptq_ctx ctx;
    ptq_onnx_edit *e = NULL;
    ptq_graph *g0 = NULL, *g = NULL;
    ptq_ctx_init(&ctx);
    CHECK(ptq_graph_load_onnx(&ctx, model_path, &g0) == PTQ_OK);
    CHECK_MSG(ptq_onnx_edit_open(&ctx, model_path, &e) == PTQ_OK, "%s", ctx.msg);
    if (!e || !g0)
        goto done;
    float scale = 0.0625f;
    int8_t zp = 0;
    /* added in the wrong order on purpose: DQ first, then Q */
    const char *dq_in[] = {"input_q", "edit_scale", "edit_zp"}, *dq_out[] = {"input_dq"};
    const char *q_in[] = {"input", "edit_scale", "edit_zp"}, *q_out[] = {"input_q"};
    CHECK_MSG(ptq_onnx_edit_add_initializer(&ctx, e, "edit_scale", 1, 0, NULL, &scale, 4) == PTQ_OK, "%s", ctx.msg);
    CHECK(ptq_onnx_edit_add_initializer(&ctx, e, "edit_zp", 3, 0, NULL, &zp, 1) == PTQ_OK);
    CHECK(ptq_onnx_edit_rename_input(&ctx, e, "input", "input_dq", NULL) == PTQ_OK);
    CHECK(ptq_onnx_edit_add_node(&ctx, e, "DequantizeLinear", "edit_dq", 3, dq_in, 1, dq_out, 0, 0) == PTQ_OK);
    CHECK(ptq_onnx_edit_add_node(&ctx, e, "QuantizeLinear", "edit_q", 3, q_in, 1, q_out, 0, 0) == PTQ_OK);
    /* fc.weight [10, C] replaced by a float copy scaled by 2 under the same name */
    int k_fc = ptq_graph_find_value(g0, "fc.weight");
    CHECK(k_fc >= 0);
    if (k_fc < 0)
        goto done;
    const ptq_value *w = &g0->values[k_fc];
    size_t n_w = w->n_bytes / 4;
    float *w2 = malloc(w->n_bytes);
    CHECK(w2 != NULL);
    if (!w2)
        goto done;
    memcpy(w2, w->data, w->n_bytes);
    for (size_t i = 0; i < n_w; i++)
        w2[i] *= 2;
    CHECK(ptq_onnx_edit_add_initializer(&ctx, e, "fc.weight", 1, w->ndim, w->dims, w2, w->n_bytes) ==
          PTQ_ERR_INVALID_ARG);
    CHECK(ptq_onnx_edit_remove_initializer(&ctx, e, "fc.weight") == PTQ_OK);
    CHECK_MSG(ptq_onnx_edit_add_initializer(&ctx, e, "fc.weight", 1, w->ndim, w->dims, w2, w->n_bytes) == PTQ_OK,
              "%s", ctx.msg);
    CHECK(ptq_onnx_edit_require_opset(&ctx, e, 19, 9) == PTQ_OK);
    void *bytes = NULL;
    size_t n_bytes = 0;
    CHECK_MSG(ptq_onnx_edit_encode(&ctx, e, &bytes, &n_bytes) == PTQ_OK, "%s", ctx.msg);
    /* file order: Q, then DQ, then the stem Conv that reads input_dq */
    long at_q = find_bytes(bytes, n_bytes, "edit_q"), at_dq = find_bytes(bytes, n_bytes, "edit_dq");
    long at_conv = find_bytes(bytes, n_bytes, "/stem/stem.0/Conv");
    CHECK_MSG(at_q >= 0 && at_q < at_dq && at_dq < at_conv, "q %ld dq %ld conv %ld", at_q, at_dq, at_conv);
    free(bytes);
    CHECK_MSG(ptq_onnx_edit_write(&ctx, e, tmp_file("edited.onnx")) == PTQ_OK, "%s", ctx.msg);
    CHECK_MSG(ptq_graph_load_onnx(&ctx, tmp_file("edited.onnx"), &g) == PTQ_OK, "%s", ctx.msg);
    if (!g)
        goto done;
    CHECK(g->n_nodes == g0->n_nodes + 2);
    CHECK(g->opset == 19 && g->ir_version == 9);
    CHECK(g->n_inputs == 1 && strcmp(g->values[g->inputs[0]].name, "input") == 0);
    CHECK(g->n_outputs == 1 && strcmp(g->values[g->outputs[0]].name, "logits") == 0);
    int i_q = -1, i_dq = -1, i_conv = -1;
    const ptq_node *q = test_node_named(g, "edit_q", &i_q), *dq = test_node_named(g, "edit_dq", &i_dq);
    const ptq_node *conv = test_node_named(g, "/stem/stem.0/Conv", &i_conv);
    CHECK(q && dq && conv && i_q < i_dq && i_dq < i_conv);
    CHECK(q && strcmp(q->op_type, "QuantizeLinear") == 0 && strcmp(in_name(g, q, 0), "input") == 0);
    CHECK(dq && strcmp(in_name(g, dq, 0), "input_q") == 0 && strcmp(in_name(g, dq, 2), "edit_zp") == 0);
    CHECK(conv && strcmp(in_name(g, conv, 0), "input_dq") == 0 && strcmp(in_name(g, conv, 1), "onnx::Conv_89") == 0);
    int k = ptq_graph_find_value(g, "edit_scale");
    CHECK(k >= 0 && g->values[k].dtype == PTQ_DT_FLOAT && g->values[k].ndim == 0 &&
          *(const float *)g->values[k].data == 0.0625f);
    k = ptq_graph_find_value(g, "edit_zp");
    CHECK(k >= 0 && g->values[k].dtype == PTQ_DT_INT8 && g->values[k].n_bytes == 1);
    k = ptq_graph_find_value(g, "fc.weight");
    CHECK(k >= 0 && g->values[k].n_bytes == w->n_bytes && memcmp(g->values[k].data, w2, w->n_bytes) == 0);
    /* the other nodes and initializers are as they were */
    for (int i = 0; i < g0->n_nodes; i++) {
        const ptq_node *a = &g0->nodes[i], *b = test_node_named(g, a->name, NULL);
        CHECK_MSG(b && strcmp(a->op_type, b->op_type) == 0 && a->n_inputs == b->n_inputs && a->n_attrs == b->n_attrs,
                  "node %s", a->name);
    }
    free(w2);
done:
    ptq_graph_free(g);
    ptq_graph_free(g0);
    ptq_onnx_edit_free(e);
}

/* ---- a hand-built model: Relu(x) -> y, no opset_import ---- */

typedef struct hb {
    unsigned char p[1024];
    size_t n;
} hb;

static void hb_varint(hb *b, uint64_t v)
{
    do {
        b->p[b->n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
}

static void hb_len(hb *b, int num, const void *data, size_t n)
{
    hb_varint(b, (uint64_t)num << 3 | 2);
    hb_varint(b, n);
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void hb_str(hb *b, int num, const char *s)
{
    hb_len(b, num, s, strlen(s));
}

static void hb_int(hb *b, int num, uint64_t v)
{
    hb_varint(b, (uint64_t)num << 3);
    hb_varint(b, v);
}

/* external: give the graph one initializer with data_location EXTERNAL */
static size_t tiny_model(unsigned char *out, int external)
{
    hb node = {{0}, 0}, vi_x = {{0}, 0}, vi_y = {{0}, 0}, graph = {{0}, 0}, model = {{0}, 0}, t = {{0}, 0};
    hb_str(&node, 1, "x");
    hb_str(&node, 2, "y");
    hb_str(&node, 3, "relu");
    hb_str(&node, 4, "Relu");
    hb_str(&vi_x, 1, "x");
    hb_str(&vi_y, 1, "y");
    hb_len(&graph, 1, node.p, node.n);
    hb_str(&graph, 2, "tiny");
    if (external) {
        hb_int(&t, 1, 1);
        hb_int(&t, 2, 1);
        hb_str(&t, 8, "w");
        hb_int(&t, 14, 1);
        hb_len(&graph, 5, t.p, t.n);
    }
    hb_len(&graph, 11, vi_x.p, vi_x.n);
    hb_len(&graph, 12, vi_y.p, vi_y.n);
    hb_str(&model, 2, "hand");
    hb_len(&model, 7, graph.p, graph.n);
    hb_str(&model, 20, "unknown field kept"); /* not an onnx field today: carried over as bytes */
    memcpy(out, model.p, model.n);
    return model.n;
}

static void test_tiny(void)
{
    ptq_ctx ctx;
    ptq_onnx_edit *e = NULL;
    ptq_graph *g = NULL;
    unsigned char m[1024];
    void *bytes = NULL;
    size_t n_bytes = 0, n = tiny_model(m, 0);
    ptq_ctx_init(&ctx);
    CHECK_MSG(ptq_onnx_edit_open_bytes(&ctx, m, n, "tiny", &e) == PTQ_OK, "%s", ctx.msg);
    if (!e)
        return;
    /* no ir_version, no opset_import: both are added */
    CHECK(ptq_onnx_edit_require_opset(&ctx, e, 13, 7) == PTQ_OK);
    const char *in[] = {"y"}, *out[] = {"z"};
    CHECK(ptq_onnx_edit_add_node(&ctx, e, "Neg", "neg", 1, in, 1, out, 1, -1) == PTQ_OK);
    CHECK_MSG(ptq_onnx_edit_encode(&ctx, e, &bytes, &n_bytes) == PTQ_OK, "%s", ctx.msg);
    CHECK(find_bytes(bytes, n_bytes, "unknown field kept") > 0);
    CHECK_MSG(ptq_graph_load_onnx_bytes(&ctx, bytes, n_bytes, NULL, &g) == PTQ_OK, "%s", ctx.msg);
    if (g) {
        CHECK(g->opset == 13 && g->ir_version == 7 && g->n_nodes == 2 && strcmp(g->name, "tiny") == 0);
        const ptq_node *neg = test_node_named(g, "neg", NULL);
        CHECK(neg && ptq_node_attr_int(neg, "axis", 0) == -1 && strcmp(in_name(g, neg, 0), "y") == 0);
        CHECK(strcmp(g->values[g->outputs[0]].name, "y") == 0);
    }
    ptq_graph_free(g);
    free(bytes);
    ptq_onnx_edit_free(e);

    e = NULL;
    n = tiny_model(m, 1);
    CHECK(ptq_onnx_edit_open_bytes(&ctx, m, n, "tiny-external", &e) == PTQ_ERR_UNSUPPORTED && !e);
    CHECK(strstr(ctx.msg, "external data") != NULL);
}

static void test_refusals(void)
{
    ptq_ctx ctx;
    ptq_onnx_edit *e = NULL;
    void *bytes = NULL;
    size_t n_bytes = 0, n_in = 0;
    ptq_ctx_init(&ctx);
    CHECK(ptq_onnx_edit_open(&ctx, tmp_file("missing.onnx"), &e) == PTQ_ERR_IO && !e);
    unsigned char *in = read_all(model_path, &n_in);
    if (!in)
        return;
    /* truncated anywhere: inside the graph, or at the very end of a field */
    CHECK(ptq_onnx_edit_open_bytes(&ctx, in, n_in / 2, "half", &e) == PTQ_ERR_FORMAT && !e);
    CHECK(ptq_onnx_edit_open_bytes(&ctx, in, n_in - 1, "short", &e) == PTQ_ERR_FORMAT && !e);
    CHECK(ptq_onnx_edit_open_bytes(&ctx, in, 0, "empty", &e) == PTQ_ERR_FORMAT && !e);
    CHECK(ptq_onnx_edit_open_bytes(&ctx, "\x0a\x05hello", 7, "text", &e) == PTQ_ERR_FORMAT && !e);
    CHECK(ptq_onnx_edit_open_bytes(&ctx, in, n_in, "ok", &e) == PTQ_OK && e);
    free(in);
    if (!e)
        return;
    float one = 1;
    int64_t dims2[] = {2, 3};
    CHECK(ptq_onnx_edit_add_initializer(&ctx, e, "onnx::Conv_89", 1, 0, NULL, &one, 4) == PTQ_ERR_INVALID_ARG);
    CHECK(strstr(ctx.msg, "onnx::Conv_89") != NULL);
    CHECK(ptq_onnx_edit_add_initializer(&ctx, e, "input", 1, 0, NULL, &one, 4) == PTQ_ERR_INVALID_ARG);
    CHECK(ptq_onnx_edit_add_initializer(&ctx, e, "logits", 1, 0, NULL, &one, 4) == PTQ_ERR_INVALID_ARG);
    CHECK(ptq_onnx_edit_add_initializer(&ctx, e, "six", 1, 2, dims2, &one, 4) == PTQ_ERR_INVALID_ARG);
    CHECK(ptq_onnx_edit_add_initializer(&ctx, e, "str", 8, 0, NULL, &one, 4) == PTQ_ERR_UNSUPPORTED);
    CHECK(ptq_onnx_edit_add_initializer(&ctx, e, "a", 1, 0, NULL, &one, 4) == PTQ_OK);
    CHECK(ptq_onnx_edit_add_initializer(&ctx, e, "a", 1, 0, NULL, &one, 4) == PTQ_ERR_INVALID_ARG);
    const char *in1[] = {"a"}, *out_taken[] = {"logits"}, *out_a[] = {"a"}, *out_b[] = {"b"};
    CHECK(ptq_onnx_edit_add_node(&ctx, e, "Neg", "n1", 1, in1, 1, out_taken, 0, 0) == PTQ_ERR_INVALID_ARG);
    CHECK(ptq_onnx_edit_add_node(&ctx, e, "Neg", "n1", 1, in1, 1, out_a, 0, 0) == PTQ_ERR_INVALID_ARG);
    CHECK(ptq_onnx_edit_remove_initializer(&ctx, e, "no_such") == PTQ_ERR_INVALID_ARG);
    CHECK(ptq_onnx_edit_rename_input(&ctx, e, "no_such", "a", NULL) == PTQ_ERR_INVALID_ARG);
    CHECK(ptq_onnx_edit_rename_input(&ctx, e, "input", "a", "no_such_node") == PTQ_ERR_INVALID_ARG);
    /* renaming into a name nothing defines yet is allowed until the model is written */
    CHECK(ptq_onnx_edit_rename_input(&ctx, e, "input", "b", "/stem/stem.0/Conv") == PTQ_OK);
    CHECK(ptq_onnx_edit_encode(&ctx, e, &bytes, &n_bytes) == PTQ_ERR_INVALID_ARG && !bytes);
    CHECK(strstr(ctx.msg, "'b'") != NULL);
    CHECK(ptq_onnx_edit_add_node(&ctx, e, "Neg", "n1", 1, in1, 1, out_b, 0, 0) == PTQ_OK);
    CHECK_MSG(ptq_onnx_edit_encode(&ctx, e, &bytes, &n_bytes) == PTQ_OK, "%s", ctx.msg);
    free(bytes);
    bytes = NULL;
    /* an attribute moved to an input nothing defines yet; a node that is not there; one attribute moved twice; two
     * moves on one node append two inputs in order */
    const int64_t one_axis = 1;
    CHECK(ptq_onnx_edit_attr_to_input(&ctx, e, "no_such_node", "axes", "ax") == PTQ_ERR_INVALID_ARG);
    CHECK(ptq_onnx_edit_attr_to_input(&ctx, e, "/stem/stem.0/Conv", "group", "ax") == PTQ_OK);
    CHECK(ptq_onnx_edit_attr_to_input(&ctx, e, "/stem/stem.0/Conv", "group", "ax") == PTQ_ERR_INVALID_ARG);
    CHECK(ptq_onnx_edit_attr_to_input(&ctx, e, "/stem/stem.0/Conv", "strides", "ax") == PTQ_OK);
    CHECK(ptq_onnx_edit_encode(&ctx, e, &bytes, &n_bytes) == PTQ_ERR_INVALID_ARG && !bytes);
    CHECK(strstr(ctx.msg, "'ax'") != NULL);
    CHECK(ptq_onnx_edit_add_initializer(&ctx, e, "ax", 7, 1, &one_axis, &one_axis, 8) == PTQ_OK);
    CHECK_MSG(ptq_onnx_edit_encode(&ctx, e, &bytes, &n_bytes) == PTQ_OK, "%s", ctx.msg);
    {
        ptq_graph *g = NULL;
        CHECK_MSG(ptq_graph_load_onnx_bytes(&ctx, bytes, n_bytes, NULL, &g) == PTQ_OK, "%s", ctx.msg);
        const ptq_node *conv = NULL;
        for (int k = 0; g && k < g->n_nodes; k++)
            if (strcmp(g->nodes[k].name, "/stem/stem.0/Conv") == 0)
                conv = &g->nodes[k];
        CHECK_MSG(conv && !ptq_node_attr(conv, "group") && !ptq_node_attr(conv, "strides") &&
                      ptq_node_attr(conv, "pads") && conv->n_inputs == 5 &&
                      strcmp(g->values[conv->inputs[3]].name, "ax") == 0 &&
                      strcmp(g->values[conv->inputs[4]].name, "ax") == 0,
                  "attr_to_input: both attributes dropped, an input appended for each");
        ptq_graph_free(g);
    }
    free(bytes);
    bytes = NULL;
    /* a node addressed by its output, as the Q/DQ export does (a node may have no name): a bias read by the
     * stem Conv alone becomes a copy; an output nothing writes, an input the node does not read, refused */
    CHECK(ptq_onnx_edit_rename_input_of(&ctx, e, "onnx::Conv_90", "a", "no_such_output") == PTQ_ERR_INVALID_ARG);
    CHECK(strstr(ctx.msg, "no_such_output") != NULL);
    CHECK(ptq_onnx_edit_rename_input_of(&ctx, e, "fc.bias", "a", "/stem/stem.0/Conv_output_0") ==
          PTQ_ERR_INVALID_ARG);
    CHECK(ptq_onnx_edit_attr_to_input_of(&ctx, e, "no_such_output", "axes", "ax") == PTQ_ERR_INVALID_ARG);
    {
        const int64_t n_bias = 24;
        float bias[24] = {0};
        CHECK(ptq_onnx_edit_add_initializer(&ctx, e, "bias_copy", 1, 1, &n_bias, bias, sizeof bias) == PTQ_OK);
        const char *stem_out = "/stem/stem.0/Conv_output_0";
        CHECK_MSG(ptq_onnx_edit_rename_input_of(&ctx, e, "onnx::Conv_90", "bias_copy", stem_out) == PTQ_OK, "%s",
                  ctx.msg);
        CHECK_MSG(ptq_onnx_edit_encode(&ctx, e, &bytes, &n_bytes) == PTQ_OK, "%s", ctx.msg);
        ptq_graph *g = NULL;
        CHECK_MSG(ptq_graph_load_onnx_bytes(&ctx, bytes, n_bytes, NULL, &g) == PTQ_OK, "%s", ctx.msg);
        const int v = g ? ptq_graph_find_value(g, "bias_copy") : -1;
        int n_readers = 0, stem_reads = 0;
        for (int k = 0; g && v >= 0 && k < g->n_nodes; k++)
            for (int i = 0; i < g->nodes[k].n_inputs; i++)
                if (g->nodes[k].inputs[i] == v) {
                    n_readers++;
                    stem_reads += strcmp(g->nodes[k].name, "/stem/stem.0/Conv") == 0;
                }
        CHECK_MSG(n_readers == 1 && stem_reads == 1, "rename_input_of: %d readers, the stem Conv %d", n_readers,
                  stem_reads);
        ptq_graph_free(g);
        free(bytes);
        bytes = NULL;
    }
    /* an initializer removed while a node still reads it */
    CHECK(ptq_onnx_edit_remove_initializer(&ctx, e, "fc.bias") == PTQ_OK);
    CHECK(ptq_onnx_edit_remove_initializer(&ctx, e, "fc.bias") == PTQ_ERR_INVALID_ARG);
    CHECK(ptq_onnx_edit_encode(&ctx, e, &bytes, &n_bytes) == PTQ_ERR_INVALID_ARG && !bytes);
    CHECK(strstr(ctx.msg, "fc.bias") != NULL);
    CHECK(ptq_onnx_edit_write(&ctx, e, tmp_file("refused.onnx")) == PTQ_ERR_INVALID_ARG);
    CHECK(access(tmp_file("refused.onnx"), F_OK) != 0);
    ptq_onnx_edit_free(e);
    ptq_onnx_edit_free(NULL);
}

/* ---- --qdq driver ---- */

static int qdq_weight(ptq_ctx *ctx, ptq_onnx_edit *e, const ptq_value *w, int axis, const char *consumer)
{
    char name_q[1024], name_s[1024], name_dq[1024];
    int64_t n_ch = w->dims[axis], inner = 1, numel = (int64_t)(w->n_bytes / 4);
    for (int d = axis + 1; d < w->ndim; d++)
        inner *= w->dims[d];
    const float *x = w->data;
    int8_t *q = malloc((size_t)numel);
    float *scale = calloc((size_t)n_ch, sizeof *scale);
    if (!q || !scale)
        return 1;
    for (int64_t i = 0; i < numel; i++) {
        int64_t c = (i / inner) % n_ch;
        if (fabsf(x[i]) > scale[c])
            scale[c] = fabsf(x[i]);
    }
    for (int64_t c = 0; c < n_ch; c++)
        scale[c] = scale[c] > 0 ? scale[c] / 127.0f : 1.0f;
    for (int64_t i = 0; i < numel; i++) {
        float v = nearbyintf(x[i] / scale[(i / inner) % n_ch]); /* round half even (default mode) */
        q[i] = (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
    }
    snprintf(name_q, sizeof name_q, "%s_int8", w->name);
    snprintf(name_s, sizeof name_s, "%s_scale", w->name);
    snprintf(name_dq, sizeof name_dq, "%s_dq", w->name);
    const char *dq_in[] = {name_q, name_s}, *dq_out[] = {name_dq};
    ptq_status st = ptq_onnx_edit_remove_initializer(ctx, e, w->name);
    if (st == PTQ_OK)
        st = ptq_onnx_edit_add_initializer(ctx, e, name_q, 3, w->ndim, w->dims, q, (size_t)numel);
    if (st == PTQ_OK)
        st = ptq_onnx_edit_add_initializer(ctx, e, name_s, 1, 1, &n_ch, scale, (size_t)n_ch * 4);
    if (st == PTQ_OK)
        st = ptq_onnx_edit_add_node(ctx, e, "DequantizeLinear", name_dq, 2, dq_in, 1, dq_out, 1, axis);
    if (st == PTQ_OK)
        st = ptq_onnx_edit_rename_input(ctx, e, w->name, name_dq, NULL);
    free(q);
    free(scale);
    if (st != PTQ_OK)
        fprintf(stderr, "weight %s of %s: %s\n", w->name, consumer, ctx->msg);
    return st != PTQ_OK;
}

static int qdq_activation(ptq_ctx *ctx, ptq_onnx_edit *e, const char *x)
{
    char name_q[1024], name_dq[1024], name_s[1024], name_zp[1024];
    float scale = 8.0f / 127.0f;
    int8_t zp = 0;
    snprintf(name_q, sizeof name_q, "%s_QuantizeLinear", x);
    snprintf(name_dq, sizeof name_dq, "%s_DequantizeLinear", x);
    snprintf(name_s, sizeof name_s, "%s_scale", x);
    snprintf(name_zp, sizeof name_zp, "%s_zero_point", x);
    const char *q_in[] = {x, name_s, name_zp}, *q_out[] = {name_q};
    const char *dq_in[] = {name_q, name_s, name_zp}, *dq_out[] = {name_dq};
    ptq_status st = ptq_onnx_edit_add_initializer(ctx, e, name_s, 1, 0, NULL, &scale, 4);
    if (st == PTQ_OK)
        st = ptq_onnx_edit_add_initializer(ctx, e, name_zp, 3, 0, NULL, &zp, 1);
    if (st == PTQ_OK)
        st = ptq_onnx_edit_add_node(ctx, e, "QuantizeLinear", name_q, 3, q_in, 1, q_out, 0, 0);
    if (st == PTQ_OK)
        st = ptq_onnx_edit_add_node(ctx, e, "DequantizeLinear", name_dq, 3, dq_in, 1, dq_out, 0, 0);
    if (st == PTQ_OK)
        st = ptq_onnx_edit_rename_input(ctx, e, x, name_dq, NULL);
    if (st != PTQ_OK)
        fprintf(stderr, "activation %s: %s\n", x, ctx->msg);
    return st != PTQ_OK;
}

static int run_driver(const char *mode, const char *in, const char *out)
{
    ptq_ctx ctx;
    ptq_graph *g = NULL;
    ptq_onnx_edit *e = NULL;
    int bad = 0, n_act = 0, n_wt = 0;
    unsigned char *seen = NULL;
    ptq_ctx_init(&ctx);
    /* dtypes of activations without value_info come from shape inference */
    if (ptq_onnx_edit_open(&ctx, in, &e) != PTQ_OK || ptq_graph_load_onnx(&ctx, in, &g) != PTQ_OK ||
        ptq_graph_infer_shapes(&ctx, g, 1) != PTQ_OK) {
        fprintf(stderr, "%s\n", ctx.msg);
        bad = 1;
        goto done;
    }
    if (strcmp(mode, "--qdq") == 0) {
        seen = calloc((size_t)g->n_values + 1, 1);
        bad = !seen || ptq_onnx_edit_require_opset(&ctx, e, 13, 7) != PTQ_OK;
        for (int k = 0; k < g->n_nodes && !bad; k++) {
            const ptq_node *n = &g->nodes[k];
            int is_conv = strcmp(n->op_type, "Conv") == 0, is_gemm = strcmp(n->op_type, "Gemm") == 0;
            if ((!is_conv && !is_gemm) || n->domain[0] || n->n_inputs < 2)
                continue;
            int x = n->inputs[0], w = n->inputs[1];
            const ptq_value *vx = x >= 0 ? &g->values[x] : NULL, *vw = w >= 0 ? &g->values[w] : NULL;
            if (vx && vx->dtype == PTQ_DT_FLOAT && !vx->data && !seen[x]) {
                seen[x] = 1;
                n_act++;
                bad |= qdq_activation(&ctx, e, vx->name);
            }
            if (vw && vw->dtype == PTQ_DT_FLOAT && (vw->flags & PTQ_VALUE_INITIALIZER) && !seen[w] && vw->ndim >= 2) {
                seen[w] = 1;
                n_wt++;
                int axis = is_conv || ptq_node_attr_int(n, "transB", 0) ? 0 : 1;
                bad |= qdq_weight(&ctx, e, vw, axis, n->name);
            }
        }
    }
    if (!bad && ptq_onnx_edit_write(&ctx, e, out) != PTQ_OK) {
        fprintf(stderr, "%s\n", ctx.msg);
        bad = 1;
    }
    if (!bad)
        printf("%s: %d activations, %d weights quantized -> %s\n", mode, n_act, n_wt, out);
done:
    free(seen);
    ptq_graph_free(g);
    ptq_onnx_edit_free(e);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc == 4 && (strcmp(argv[1], "--qdq") == 0 || strcmp(argv[1], "--copy") == 0))
        return run_driver(argv[1], argv[2], argv[3]);
    const char *src = getenv("PTQ_SOURCE_DIR");
    snprintf(model_path, sizeof model_path, "%s/models/fmnist_resnet.onnx", src ? src : ".");
    if (access(model_path, R_OK) != 0) {
        fprintf(stderr, "test_onnx_edit: skipped: %s missing (set PTQ_SOURCE_DIR)\n", model_path);
        return PTQ_TEST_SKIP;
    }
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_round_trip();
    test_edits();
    test_tiny();
    test_refusals();
    const char *files[] = {"copy.onnx", "edited.onnx"};
    for (int i = 0; i < 2; i++)
        unlink(tmp_file(files[i]));
    rmdir(tmp_dir);
    return test_done("test_onnx_edit");
}
