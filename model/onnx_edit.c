/* ONNX editing at the wire level: the file is kept as bytes; the writer
 * re-encodes only the GraphProto (added/dropped initializers and nodes, renamed
 * node inputs) and the ModelProto's ir_version/opset_import fields, and copies
 * every other field's bytes in order. Covered by tests/test_onnx_edit.c and
 * tests/onnx_edit_test.py (onnx.checker + onnxruntime on a Q/DQ'd model). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/keras.h"
#include "model/pb.h"
#include "ptq/fileio.h"
#include "ptq/buf.h"
#include "ptq/onnx_edit.h"

static const char *const model_fields[] = {NULL, "ir_version", NULL, NULL, NULL, NULL, NULL, "graph", "opset_import"};
static const ptq_pb_desc model_desc = {"ModelProto", 9, model_fields};
static const char *const graph_fields[] = {NULL, "node", "name", NULL, NULL, "initializer", NULL, NULL, NULL, NULL,
                                           NULL, "input", "output", "value_info", NULL, "sparse_initializer"};
static const ptq_pb_desc graph_desc = {"GraphProto", 16, graph_fields};
static const char *const node_fields[] = {NULL, "input", "output", "name", "op_type", "attribute"};
static const ptq_pb_desc node_desc = {"NodeProto", 6, node_fields};
static const char *const attr_fields[] = {NULL, "name", NULL, NULL, NULL, "t", "g", NULL, NULL, NULL, "tensors",
                                          "graphs"};
static const ptq_pb_desc attr_desc = {"AttributeProto", 12, attr_fields};
static const char *const tensor_fields[] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "name", NULL,
                                            NULL, NULL, NULL, "external_data", "data_location"};
static const ptq_pb_desc tensor_desc = {"TensorProto", 15, tensor_fields};
static const char *const vi_fields[] = {NULL, "name"};
static const ptq_pb_desc vi_desc = {"ValueInfoProto", 2, vi_fields};
static const char *const opset_fields[] = {NULL, "domain", "version"};
static const ptq_pb_desc opset_desc = {"OperatorSetIdProto", 3, opset_fields};
static const char *const func_fields[] = {NULL, "name", NULL, NULL, NULL, NULL, NULL, "node"};
static const ptq_pb_desc func_desc = {"FunctionProto", 8, func_fields};

/* Subgraphs nested deeper than this are refused rather than recursed into. */
#define MAX_DEPTH 64

/* ---- string -> int map (open addressing; keys borrowed) ---- */

typedef struct smap {
    const char **keys;
    int *vals;
    size_t cap, n;
} smap;

static size_t str_hash(const char *s)
{
    size_t h = 1469598103934665603u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static int *smap_find(const smap *m, const char *k)
{
    if (!m->cap)
        return NULL;
    for (size_t i = str_hash(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i])
            return NULL;
        if (strcmp(m->keys[i], k) == 0)
            return &m->vals[i];
    }
}

static int smap_get(const smap *m, const char *k, int dflt)
{
    int *v = smap_find(m, k);
    return v ? *v : dflt;
}

/* The value slot of k, inserted with v when absent; NULL when out of memory. */
static int *smap_put(smap *m, const char *k, int v)
{
    int *slot = smap_find(m, k);
    if (slot)
        return slot;
    if (2 * (m->n + 1) > m->cap) {
        smap bigger = {NULL, NULL, m->cap ? 2 * m->cap : 64, 0};
        bigger.keys = calloc(bigger.cap, sizeof *bigger.keys);
        bigger.vals = calloc(bigger.cap, sizeof *bigger.vals);
        if (!bigger.keys || !bigger.vals) {
            free(bigger.keys);
            free(bigger.vals);
            return NULL;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i])
                *smap_put(&bigger, m->keys[i], m->vals[i]) = m->vals[i];
        free(m->keys);
        free(m->vals);
        *m = bigger;
    }
    size_t i = str_hash(k) & (m->cap - 1);
    while (m->keys[i])
        i = (i + 1) & (m->cap - 1);
    m->keys[i] = k;
    m->vals[i] = v;
    m->n++;
    return &m->vals[i];
}

static void smap_free(smap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* protobuf bytes go into the shared buffer (include/ptq/buf.h) through
 * model/pb.h's writers; a failed put sticks, so a whole message is checked once */
typedef ptq_buf obuf;

/* ---- the editor ---- */

typedef struct enode { /* a NodeProto of the file */
    char *name;
    int n_in, n_out;
    char **in, **out;
    char *drop_attr, *add_input; /* ptq_onnx_edit_attr_to_input: the attribute dropped, the input appended */
} enode;

typedef struct einit { /* a graph initializer of the file */
    char *name;
    int removed;
} einit;

typedef struct anode { /* an added node, encoded */
    int n_in, n_out;
    char **in, **out;
    char *name;
    uint8_t *enc;
    size_t enc_bytes;
} anode;

typedef struct ainit { /* an added initializer, encoded as a TensorProto */
    char *name;
    uint8_t *enc;
    size_t enc_bytes;
} ainit;

typedef struct erename {
    char *from, *to, *node; /* node NULL: every existing node */
} erename;

struct ptq_onnx_edit {
    char *path; /* for messages */
    uint8_t *bytes;
    size_t n_bytes;
    enode *nodes;
    int n_nodes;
    einit *inits;
    int n_inits;
    char **inputs; /* graph input names */
    int n_inputs;
    anode *added;
    int n_added, cap_added;
    ainit *new_inits;
    int n_new_inits, cap_new_inits;
    erename *renames;
    int n_renames, cap_renames;
    int64_t opset, ir_version; /* required minimums; 0: none */
    smap defined; /* name -> count of definitions (initializers, node outputs, graph inputs) */
};

static ptq_status oom(ptq_ctx *ctx, const ptq_onnx_edit *e)
{
    return ptq_fail(ctx, PTQ_ERR_NOMEM, "%s: out of memory", e->path);
}

static char *dup_field(const ptq_pb_field *f)
{
    char *s = malloc(f->len + 1);
    if (s) {
        memcpy(s, f->data, f->len);
        s[f->len] = '\0';
    }
    return s;
}

static void free_names(char **names, int n)
{
    for (int i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

void ptq_onnx_edit_free(ptq_onnx_edit *e)
{
    if (!e)
        return;
    for (int i = 0; i < e->n_nodes; i++) {
        free(e->nodes[i].name);
        free(e->nodes[i].drop_attr);
        free(e->nodes[i].add_input);
        free_names(e->nodes[i].in, e->nodes[i].n_in);
        free_names(e->nodes[i].out, e->nodes[i].n_out);
    }
    for (int i = 0; i < e->n_inits; i++)
        free(e->inits[i].name);
    for (int i = 0; i < e->n_added; i++) {
        free(e->added[i].name);
        free(e->added[i].enc);
        free_names(e->added[i].in, e->added[i].n_in);
        free_names(e->added[i].out, e->added[i].n_out);
    }
    for (int i = 0; i < e->n_new_inits; i++) {
        free(e->new_inits[i].name);
        free(e->new_inits[i].enc);
    }
    for (int i = 0; i < e->n_renames; i++) {
        free(e->renames[i].from);
        free(e->renames[i].to);
        free(e->renames[i].node);
    }
    free_names(e->inputs, e->n_inputs);
    smap_free(&e->defined);
    free(e->nodes);
    free(e->inits);
    free(e->added);
    free(e->new_inits);
    free(e->renames);
    free(e->bytes);
    free(e->path);
    free(e);
}

/* ---- reading: external data checks ---- */

static ptq_status scan_graph(ptq_pb *gr, int depth);

static ptq_status scan_tensor(ptq_pb *tr)
{
    ptq_status st = PTQ_OK;
    ptq_pb_field f;
    while (ptq_pb_more(tr)) {
        PTQ_TRY_RET(ptq_pb_next(tr, &f));
        if (f.num == 13 || (f.num == 14 && f.wire == PTQ_PB_VARINT && f.u == 1))
            return ptq_pb_fail(tr, f.at, PTQ_ERR_UNSUPPORTED,
                               "tensor with external data: editing such models is not supported yet");
    }
    return st;
}

/* Tensors of a SparseTensorProto: values=1, indices=2. */
static ptq_status scan_sparse(ptq_pb *sr)
{
    ptq_pb_field f;
    ptq_pb tr;
    while (ptq_pb_more(sr)) {
        PTQ_TRY_RET(ptq_pb_next(sr, &f));
        if ((f.num == 1 || f.num == 2) && f.wire == PTQ_PB_LEN) {
            ptq_pb_sub(sr, &f, &tensor_desc, &tr);
            PTQ_TRY_RET(scan_tensor(&tr));
        }
    }
    return PTQ_OK;
}

static ptq_status scan_node(ptq_pb *nr, int depth)
{
    ptq_pb_field f, af;
    ptq_pb ar, sub;
    while (ptq_pb_more(nr)) {
        PTQ_TRY_RET(ptq_pb_next(nr, &f));
        if (f.num != 5)
            continue;
        PTQ_TRY_RET(ptq_pb_expect(nr, &f, PTQ_PB_LEN));
        ptq_pb_sub(nr, &f, &attr_desc, &ar);
        while (ptq_pb_more(&ar)) {
            PTQ_TRY_RET(ptq_pb_next(&ar, &af));
            if (af.wire != PTQ_PB_LEN)
                continue;
            if (af.num == 5 || af.num == 10) {
                ptq_pb_sub(&ar, &af, &tensor_desc, &sub);
                PTQ_TRY_RET(scan_tensor(&sub));
            } else if (af.num == 22 || af.num == 23) {
                ptq_pb_sub(&ar, &af, NULL, &sub);
                PTQ_TRY_RET(scan_sparse(&sub));
            } else if (af.num == 6 || af.num == 11) {
                if (depth >= MAX_DEPTH)
                    return ptq_pb_fail(&ar, af.at, PTQ_ERR_UNSUPPORTED, "subgraphs nested over %d deep", MAX_DEPTH);
                ptq_pb_sub(&ar, &af, &graph_desc, &sub);
                PTQ_TRY_RET(scan_graph(&sub, depth + 1));
            }
        }
    }
    return PTQ_OK;
}

static ptq_status scan_graph(ptq_pb *gr, int depth)
{
    ptq_pb_field f;
    ptq_pb sub;
    while (ptq_pb_more(gr)) {
        PTQ_TRY_RET(ptq_pb_next(gr, &f));
        if (f.num == 1 || f.num == 5 || f.num == 15)
            PTQ_TRY_RET(ptq_pb_expect(gr, &f, PTQ_PB_LEN));
        if (f.num == 1) {
            ptq_pb_sub(gr, &f, &node_desc, &sub);
            PTQ_TRY_RET(scan_node(&sub, depth));
        } else if (f.num == 5) {
            ptq_pb_sub(gr, &f, &tensor_desc, &sub);
            PTQ_TRY_RET(scan_tensor(&sub));
        } else if (f.num == 15) {
            ptq_pb_sub(gr, &f, NULL, &sub);
            PTQ_TRY_RET(scan_sparse(&sub));
        }
    }
    return PTQ_OK;
}

static ptq_status scan_function(ptq_pb *fr)
{
    ptq_pb_field f;
    ptq_pb sub;
    while (ptq_pb_more(fr)) {
        PTQ_TRY_RET(ptq_pb_next(fr, &f));
        if (f.num == 7) {
            PTQ_TRY_RET(ptq_pb_expect(fr, &f, PTQ_PB_LEN));
            ptq_pb_sub(fr, &f, &node_desc, &sub);
            PTQ_TRY_RET(scan_node(&sub, 0));
        }
    }
    return PTQ_OK;
}

/* ---- reading: the top-level graph ---- */

/* The last string field num of a message (ValueInfoProto.name=1, TensorProto.name=8); "" without one. */
static ptq_status read_name(ptq_ctx *ctx, const ptq_onnx_edit *e, ptq_pb *r, uint32_t num, char **name)
{
    ptq_pb_field f;
    *name = NULL;
    while (ptq_pb_more(r)) {
        PTQ_TRY_RET(ptq_pb_next(r, &f));
        if (f.num != num)
            continue;
        PTQ_TRY_RET(ptq_pb_expect(r, &f, PTQ_PB_LEN));
        free(*name);
        if (!(*name = dup_field(&f)))
            return oom(ctx, e);
    }
    if (!*name && !(*name = calloc(1, 1)))
        return oom(ctx, e);
    return PTQ_OK;
}

static ptq_status push_name(ptq_ctx *ctx, const ptq_onnx_edit *e, const ptq_pb_field *f, char ***names, int *n)
{
    char **grown = realloc(*names, ((size_t)*n + 1) * sizeof *grown);
    if (!grown)
        return oom(ctx, e);
    *names = grown;
    if (!(grown[*n] = dup_field(f)))
        return oom(ctx, e);
    (*n)++;
    return PTQ_OK;
}

static ptq_status read_node(ptq_ctx *ctx, const ptq_onnx_edit *e, ptq_pb *nr, enode *n)
{
    ptq_pb_field f;
    while (ptq_pb_more(nr)) {
        PTQ_TRY_RET(ptq_pb_next(nr, &f));
        if (f.num == 1 || f.num == 2 || f.num == 3)
            PTQ_TRY_RET(ptq_pb_expect(nr, &f, PTQ_PB_LEN));
        if (f.num == 1) {
            PTQ_TRY_RET(push_name(ctx, e, &f, &n->in, &n->n_in));
        } else if (f.num == 2) {
            PTQ_TRY_RET(push_name(ctx, e, &f, &n->out, &n->n_out));
        } else if (f.num == 3) {
            free(n->name);
            if (!(n->name = dup_field(&f)))
                return oom(ctx, e);
        }
    }
    if (!n->name && !(n->name = calloc(1, 1)))
        return oom(ctx, e);
    return PTQ_OK;
}

static ptq_status define(ptq_ctx *ctx, ptq_onnx_edit *e, const char *name)
{
    if (!name[0])
        return PTQ_OK;
    int *v = smap_put(&e->defined, name, 0);
    if (!v)
        return oom(ctx, e);
    (*v)++;
    return PTQ_OK;
}

static ptq_status read_graph(ptq_ctx *ctx, ptq_onnx_edit *e, ptq_pb *gr_in)
{
    ptq_pb gr = *gr_in, sub;
    ptq_pb_field f;
    int n_nodes = 0, n_inits = 0, n_inputs = 0;
    PTQ_TRY_RET(scan_graph(&gr, 0));
    gr = *gr_in;
    while (ptq_pb_more(&gr)) {
        PTQ_TRY_RET(ptq_pb_next(&gr, &f));
        n_nodes += f.num == 1;
        n_inits += f.num == 5;
        n_inputs += f.num == 11;
    }
    e->nodes = calloc((size_t)n_nodes + 1, sizeof *e->nodes);
    e->inits = calloc((size_t)n_inits + 1, sizeof *e->inits);
    e->inputs = calloc((size_t)n_inputs + 1, sizeof *e->inputs);
    if (!e->nodes || !e->inits || !e->inputs)
        return oom(ctx, e);
    gr = *gr_in;
    while (ptq_pb_more(&gr)) {
        PTQ_TRY_RET(ptq_pb_next(&gr, &f));
        if (f.num == 1) {
            enode *n = &e->nodes[e->n_nodes++];
            ptq_pb_sub(&gr, &f, &node_desc, &sub);
            PTQ_TRY_RET(read_node(ctx, e, &sub, n));
            for (int j = 0; j < n->n_out; j++)
                PTQ_TRY_RET(define(ctx, e, n->out[j]));
        } else if (f.num == 5) {
            einit *t = &e->inits[e->n_inits++];
            ptq_pb_sub(&gr, &f, &tensor_desc, &sub);
            PTQ_TRY_RET(read_name(ctx, e, &sub, 8, &t->name));
            PTQ_TRY_RET(define(ctx, e, t->name));
        } else if (f.num == 11) {
            PTQ_TRY_RET(ptq_pb_expect(&gr, &f, PTQ_PB_LEN));
            ptq_pb_sub(&gr, &f, &vi_desc, &sub);
            PTQ_TRY_RET(read_name(ctx, e, &sub, 1, &e->inputs[e->n_inputs]));
            PTQ_TRY_RET(define(ctx, e, e->inputs[e->n_inputs++]));
        }
    }
    return PTQ_OK;
}

/* Checks the ModelProto (and the external data refusal) and reads its graph. */
static ptq_status read_model(ptq_ctx *ctx, ptq_onnx_edit *e)
{
    ptq_pb mr, sub;
    ptq_pb_field f, gf;
    int has_graph = 0;
    ptq_pb_init(&mr, ctx, e->path, e->bytes, e->n_bytes, &model_desc);
    while (ptq_pb_more(&mr)) {
        PTQ_TRY_RET(ptq_pb_next(&mr, &f));
        if (f.num == 1) {
            PTQ_TRY_RET(ptq_pb_expect(&mr, &f, PTQ_PB_VARINT));
        } else if (f.num == 7 || f.num == 8 || f.num == 25) {
            PTQ_TRY_RET(ptq_pb_expect(&mr, &f, PTQ_PB_LEN));
            if (f.num == 7) {
                if (has_graph)
                    return ptq_pb_fail(&mr, f.at, PTQ_ERR_FORMAT, "a second graph field");
                has_graph = 1;
                gf = f;
            } else if (f.num == 8) {
                ptq_pb_field sf;
                ptq_pb_sub(&mr, &f, &opset_desc, &sub);
                while (ptq_pb_more(&sub)) {
                    PTQ_TRY_RET(ptq_pb_next(&sub, &sf));
                    if (sf.num == 1 || sf.num == 2)
                        PTQ_TRY_RET(ptq_pb_expect(&sub, &sf, sf.num == 1 ? PTQ_PB_LEN : PTQ_PB_VARINT));
                }
            } else {
                ptq_pb_sub(&mr, &f, &func_desc, &sub);
                PTQ_TRY_RET(scan_function(&sub));
            }
        }
    }
    if (!has_graph)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "%s: not an ONNX model: ModelProto has no graph (%zu bytes)", e->path,
                        e->n_bytes);
    ptq_pb_sub(&mr, &gf, &graph_desc, &sub);
    return read_graph(ctx, e, &sub);
}

ptq_status ptq_onnx_edit_open_bytes(ptq_ctx *ctx, const void *bytes, size_t n_bytes, const char *path,
                                    ptq_onnx_edit **out)
{
    ptq_status st = PTQ_OK;
    ptq_onnx_edit *e = NULL;
    *out = NULL;
    if (!path)
        path = "<memory>";
    if (!bytes && n_bytes)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "ptq_onnx_edit_open_bytes: NULL bytes");
    if (!n_bytes)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "%s: empty file, not an ONNX model", path);
    e = calloc(1, sizeof *e);
    if (!e || !(e->path = strdup(path)) || !(e->bytes = malloc(n_bytes))) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    memcpy(e->bytes, bytes, n_bytes);
    e->n_bytes = n_bytes;
    PTQ_TRY(st, read_model(ctx, e), done);
    *out = e;
    e = NULL;
done:
    ptq_onnx_edit_free(e);
    return st;
}

ptq_status ptq_onnx_edit_open(ptq_ctx *ctx, const char *path, ptq_onnx_edit **out)
{
    ptq_status st = PTQ_OK;
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    *out = NULL;
    FILE *fp = NULL;
    PTQ_TRY_RET(ptq_file_fopen_read(ctx, path, &fp));
    for (;;) {
        if (n == cap) {
            size_t grown_cap = cap ? 2 * cap : (size_t)1 << 20;
            uint8_t *grown = realloc(buf, grown_cap);
            if (!grown) {
                st = ptq_fail(ctx, PTQ_ERR_NOMEM, "%s: out of memory", path);
                goto done;
            }
            buf = grown;
            cap = grown_cap;
        }
        size_t got = fread(buf + n, 1, cap - n, fp);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(fp)) {
        st = ptq_fail(ctx, PTQ_ERR_IO, "%s: read failed", path);
        goto done;
    }
    if (ptq_keras_is_hdf5(buf, n)) { /* a Keras model is edited in its ONNX form */
        free(buf);
        buf = NULL;
        PTQ_TRY(st, ptq_keras_to_onnx(ctx, path, (void **)&buf, &n), done);
    }
    st = ptq_onnx_edit_open_bytes(ctx, buf, n, path, out);
done:
    fclose(fp);
    free(buf);
    return st;
}

/* ---- edits ---- */

static ptq_status dup_names(ptq_ctx *ctx, const ptq_onnx_edit *e, int n, const char *const *src, char ***dst)
{
    *dst = calloc((size_t)n + 1, sizeof **dst);
    if (!*dst)
        return oom(ctx, e);
    for (int i = 0; i < n; i++)
        if (!((*dst)[i] = strdup(src[i])))
            return oom(ctx, e);
    return PTQ_OK;
}

/* Element bytes of the data types raw_data can carry; 0 for the others. */
static size_t elem_bytes(int data_type)
{
    switch (data_type) {
    case 1: case 6: case 12: return 4;
    case 2: case 3: case 9: case 17: case 18: case 19: case 20: return 1;
    case 4: case 5: case 10: case 16: return 2;
    case 7: case 11: case 13: return 8;
    default: return 0;
    }
}

ptq_status ptq_onnx_edit_add_initializer(ptq_ctx *ctx, ptq_onnx_edit *e, const char *name, int data_type, int ndim,
                                         const int64_t *dims, const void *raw, size_t n_bytes)
{
    ptq_status st = PTQ_OK;
    obuf b = {0};
    size_t width = elem_bytes(data_type);
    if (!name || !name[0])
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: initializer needs a name", e->path);
    if (!width)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "%s: initializer '%s': data type %d cannot be written as raw_data",
                        e->path, name, data_type);
    if (ndim < 0 || (ndim > 0 && !dims))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: initializer '%s': bad ndim %d", e->path, name, ndim);
    uint64_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] < 0 || (dims[i] > 0 && numel > UINT64_MAX / (uint64_t)dims[i]))
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: initializer '%s': bad dim %d = %lld", e->path, name, i,
                            (long long)dims[i]);
        numel *= (uint64_t)dims[i];
    }
    if (numel > SIZE_MAX / width || numel * width != n_bytes || (n_bytes && !raw))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: initializer '%s': %zu bytes given, dims need %llu x %zu",
                        e->path, name, n_bytes, (unsigned long long)numel, width);
    if (smap_get(&e->defined, name, 0) > 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: initializer '%s': the name is taken", e->path, name);
    if (e->n_new_inits == e->cap_new_inits) {
        int cap = e->cap_new_inits ? 2 * e->cap_new_inits : 16;
        ainit *grown = realloc(e->new_inits, (size_t)cap * sizeof *grown);
        if (!grown)
            return oom(ctx, e);
        e->new_inits = grown;
        e->cap_new_inits = cap;
    }
    /* TensorProto: dims=1 (unpacked, as proto2 writes them), data_type=2, name=8, raw_data=9 */
    for (int i = 0; i < ndim; i++)
        ptq_pb_put_int(&b, 1, dims[i]);
    ptq_pb_put_int(&b, 2, data_type);
    ptq_pb_put_str(&b, 8, name);
    ptq_pb_put_len(&b, 9, raw, n_bytes);
    ainit *t = &e->new_inits[e->n_new_inits];
    memset(t, 0, sizeof *t);
    if (b.failed || !(t->name = strdup(name))) {
        free(b.data);
        return oom(ctx, e);
    }
    t->enc = (uint8_t *)b.data;
    t->enc_bytes = b.n_bytes;
    e->n_new_inits++;
    PTQ_TRY(st, define(ctx, e, t->name), done);
done:
    return st;
}

ptq_status ptq_onnx_edit_remove_initializer(ptq_ctx *ctx, ptq_onnx_edit *e, const char *name)
{
    if (!name)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: remove_initializer needs a name", e->path);
    for (int i = 0; i < e->n_inits; i++) {
        einit *t = &e->inits[i];
        if (t->removed || strcmp(t->name, name) != 0)
            continue;
        t->removed = 1;
        int *v = smap_find(&e->defined, name);
        if (v) /* the initializer and a graph input of its name, if any, go */
            *v = 0;
        return PTQ_OK;
    }
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: no initializer '%s' to remove", e->path, name);
}

ptq_status ptq_onnx_edit_add_node(ptq_ctx *ctx, ptq_onnx_edit *e, const char *op_type, const char *name, int n_in,
                                  const char *const *inputs, int n_out, const char *const *outputs, int has_axis,
                                  int64_t axis)
{
    return ptq_onnx_edit_add_node_attr(ctx, e, op_type, name, n_in, inputs, n_out, outputs, has_axis ? "axis" : NULL,
                                       axis);
}

ptq_status ptq_onnx_edit_add_node_attr(ptq_ctx *ctx, ptq_onnx_edit *e, const char *op_type, const char *name,
                                       int n_in, const char *const *inputs, int n_out, const char *const *outputs,
                                       const char *attr_name, int64_t attr_value)
{
    ptq_status st = PTQ_OK;
    obuf b = {0};
    if (!op_type || !op_type[0] || n_in < 0 || n_out < 1 || (n_in && !inputs) || !outputs)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: add_node '%s': needs an op_type and outputs", e->path,
                        name ? name : "");
    for (int i = 0; i < n_out; i++) {
        if (!outputs[i] || (outputs[i][0] && smap_get(&e->defined, outputs[i], 0) > 0))
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: add_node '%s' (%s): output '%s' already exists", e->path,
                            name ? name : "", op_type, outputs[i] ? outputs[i] : "(null)");
        for (int j = 0; j < i; j++)
            if (outputs[i][0] && strcmp(outputs[i], outputs[j]) == 0)
                return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: add_node '%s': output '%s' twice", e->path,
                                name ? name : "", outputs[i]);
    }
    for (int i = 0; i < n_in; i++)
        if (!inputs[i])
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: add_node '%s': input %d is NULL", e->path,
                            name ? name : "", i);
    if (e->n_added == e->cap_added) {
        int cap = e->cap_added ? 2 * e->cap_added : 16;
        anode *grown = realloc(e->added, (size_t)cap * sizeof *grown);
        if (!grown)
            return oom(ctx, e);
        e->added = grown;
        e->cap_added = cap;
    }
    anode *a = &e->added[e->n_added];
    memset(a, 0, sizeof *a);
    e->n_added++; /* counted now so ptq_onnx_edit_free releases it if what follows fails */
    a->n_in = n_in;
    a->n_out = n_out;
    PTQ_TRY(st, dup_names(ctx, e, n_in, inputs, &a->in), done);
    PTQ_TRY(st, dup_names(ctx, e, n_out, outputs, &a->out), done);
    if (!(a->name = strdup(name ? name : "")))
        return oom(ctx, e);
    /* NodeProto: input=1 output=2 name=3 op_type=4 attribute=5 {name=1 i=3 type=20 (INT=2)} */
    for (int i = 0; i < n_in; i++)
        ptq_pb_put_str(&b, 1, inputs[i]);
    for (int i = 0; i < n_out; i++)
        ptq_pb_put_str(&b, 2, outputs[i]);
    if (a->name[0])
        ptq_pb_put_str(&b, 3, a->name);
    ptq_pb_put_str(&b, 4, op_type);
    if (attr_name) {
        obuf at = {0};
        ptq_pb_put_str(&at, 1, attr_name);
        ptq_pb_put_int(&at, 3, attr_value);
        ptq_pb_put_int(&at, 20, 2);
        ptq_pb_put_len(&b, 5, at.data, at.n_bytes);
        b.failed |= at.failed;
        free(at.data);
    }
    if (b.failed) {
        free(b.data);
        return oom(ctx, e);
    }
    a->enc = (uint8_t *)b.data;
    a->enc_bytes = b.n_bytes;
    for (int i = 0; i < n_out; i++)
        PTQ_TRY(st, define(ctx, e, a->out[i]), done);
done:
    return st;
}

ptq_status ptq_onnx_edit_rename_input(ptq_ctx *ctx, ptq_onnx_edit *e, const char *from, const char *to,
                                      const char *node_name)
{
    int found = 0;
    if (!from || !to || !from[0] || !to[0])
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: rename_input needs two non-empty names", e->path);
    for (int i = 0; i < e->n_nodes && !found; i++) {
        const enode *n = &e->nodes[i];
        if (node_name && strcmp(n->name, node_name) != 0)
            continue;
        for (int j = 0; j < n->n_in && !found; j++)
            found = strcmp(n->in[j], from) == 0;
    }
    /* an earlier rename may have made from an input */
    for (int i = 0; i < e->n_renames && !found; i++)
        found = strcmp(e->renames[i].to, from) == 0;
    if (!found)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: rename_input '%s' -> '%s': no existing node%s%s reads '%s'",
                        e->path, from, to, node_name ? " named " : "", node_name ? node_name : "", from);
    if (e->n_renames == e->cap_renames) {
        int cap = e->cap_renames ? 2 * e->cap_renames : 16;
        erename *grown = realloc(e->renames, (size_t)cap * sizeof *grown);
        if (!grown)
            return oom(ctx, e);
        e->renames = grown;
        e->cap_renames = cap;
    }
    erename *r = &e->renames[e->n_renames];
    memset(r, 0, sizeof *r);
    e->n_renames++;
    if (!(r->from = strdup(from)) || !(r->to = strdup(to)) || (node_name && !(r->node = strdup(node_name))))
        return oom(ctx, e);
    return PTQ_OK;
}

ptq_status ptq_onnx_edit_attr_to_input(ptq_ctx *ctx, ptq_onnx_edit *e, const char *node_name, const char *attr,
                                       const char *input)
{
    if (!node_name || !node_name[0] || !attr || !input || !input[0])
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: attr_to_input needs a node name, an attribute and an input",
                        e->path);
    enode *n = NULL;
    for (int i = 0; i < e->n_nodes; i++)
        if (strcmp(e->nodes[i].name, node_name) == 0) {
            if (n)
                return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: attr_to_input: two nodes are named '%s'", e->path,
                                node_name);
            n = &e->nodes[i];
        }
    if (!n)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: attr_to_input: no existing node is named '%s'", e->path,
                        node_name);
    if (n->drop_attr)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: attr_to_input: node '%s' already moves '%s'", e->path,
                        node_name, n->drop_attr);
    if (!(n->drop_attr = strdup(attr)) || !(n->add_input = strdup(input)))
        return oom(ctx, e);
    return PTQ_OK;
}

ptq_status ptq_onnx_edit_require_opset(ptq_ctx *ctx, ptq_onnx_edit *e, int64_t opset, int64_t ir_version)
{
    if (opset < 0 || ir_version < 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: require_opset %lld, ir_version %lld", e->path,
                        (long long)opset, (long long)ir_version);
    if (opset > e->opset)
        e->opset = opset;
    if (ir_version > e->ir_version)
        e->ir_version = ir_version;
    return PTQ_OK;
}

/* ---- writing ---- */

/* The name existing node k reads as input j once the renames apply. */
static const char *renamed_input(const ptq_onnx_edit *e, int k, int j)
{
    const enode *n = &e->nodes[k];
    const char *s = n->in[j];
    for (int r = 0; r < e->n_renames; r++) {
        const erename *rn = &e->renames[r];
        if ((!rn->node || strcmp(rn->node, n->name) == 0) && strcmp(s, rn->from) == 0)
            s = rn->to;
    }
    return s;
}

/* Where each added node goes: pos[a] = the existing node it precedes
 * (n_nodes: after the last), order = added nodes in dependency order. */
static ptq_status place_added(ptq_ctx *ctx, const ptq_onnx_edit *e, int *pos, int *order)
{
    ptq_status st = PTQ_OK;
    smap first_use = {0}, producer = {0};
    int n = e->n_added;
    int *n_deps = calloc((size_t)n + 1, sizeof *n_deps);
    if (!n_deps)
        return oom(ctx, e);
    for (int k = 0; k < e->n_nodes; k++)
        for (int j = 0; j < e->nodes[k].n_in; j++)
            if (!smap_put(&first_use, renamed_input(e, k, j), k)) {
                st = oom(ctx, e);
                goto done;
            }
    for (int a = 0; a < n; a++)
        for (int j = 0; j < e->added[a].n_out; j++)
            if (e->added[a].out[j][0] && !smap_put(&producer, e->added[a].out[j], a)) {
                st = oom(ctx, e);
                goto done;
            }
    /* Kahn over added-to-added edges, stable in the order of addition */
    for (int b = 0; b < n; b++)
        for (int j = 0; j < e->added[b].n_in; j++)
            n_deps[b] += e->added[b].in[j][0] && smap_get(&producer, e->added[b].in[j], -1) >= 0;
    int n_done = 0;
    while (n_done < n) {
        int picked = -1;
        for (int b = 0; b < n && picked < 0; b++)
            if (n_deps[b] == 0)
                picked = b;
        if (picked < 0) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: the added nodes form a cycle", e->path);
            goto done;
        }
        n_deps[picked] = -1;
        order[n_done++] = picked;
        const anode *pa = &e->added[picked];
        for (int b = 0; b < n; b++)
            for (int j = 0; j < e->added[b].n_in; j++)
                for (int o = 0; o < pa->n_out; o++)
                    if (pa->out[o][0] && strcmp(e->added[b].in[j], pa->out[o]) == 0)
                        n_deps[b]--;
    }
    /* backwards through the order: an added node goes no later than its consumers */
    for (int i = n - 1; i >= 0; i--) {
        int a = order[i];
        int p = e->n_nodes;
        for (int o = 0; o < e->added[a].n_out; o++) {
            int k = e->added[a].out[o][0] ? smap_get(&first_use, e->added[a].out[o], e->n_nodes) : e->n_nodes;
            if (k < p)
                p = k;
        }
        for (int i2 = i + 1; i2 < n; i2++) {
            int b = order[i2];
            for (int j = 0; j < e->added[b].n_in; j++)
                for (int o = 0; o < e->added[a].n_out; o++)
                    if (e->added[a].out[o][0] && strcmp(e->added[b].in[j], e->added[a].out[o]) == 0 && pos[b] < p)
                        p = pos[b];
        }
        pos[a] = p;
    }
done:
    free(n_deps);
    smap_free(&first_use);
    smap_free(&producer);
    return st;
}

/* Every name the edited graph reads must be defined. */
static ptq_status check_names(ptq_ctx *ctx, const ptq_onnx_edit *e)
{
    for (int r = 0; r < e->n_renames; r++)
        if (smap_get(&e->defined, e->renames[r].to, 0) <= 0)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                            "%s: input '%s' renamed to '%s', but no initializer, node or graph input defines it",
                            e->path, e->renames[r].from, e->renames[r].to);
    for (int k = 0; k < e->n_nodes; k++)
        if (e->nodes[k].add_input && smap_get(&e->defined, e->nodes[k].add_input, 0) <= 0)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: node '%s' gets input '%s', which nothing defines", e->path,
                            e->nodes[k].name, e->nodes[k].add_input);
    for (int a = 0; a < e->n_added; a++)
        for (int j = 0; j < e->added[a].n_in; j++)
            if (e->added[a].in[j][0] && smap_get(&e->defined, e->added[a].in[j], 0) <= 0)
                return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: added node '%s' reads '%s', which nothing defines",
                                e->path, e->added[a].name, e->added[a].in[j]);
    /* a removed initializer must not be read any more (a name absent from the map was never defined here) */
    for (int k = 0; k < e->n_nodes; k++)
        for (int j = 0; j < e->nodes[k].n_in; j++) {
            const char *s = renamed_input(e, k, j);
            if (s[0] && smap_get(&e->defined, s, 1) <= 0)
                return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: node '%s' still reads removed initializer '%s'",
                                e->path, e->nodes[k].name, s);
        }
    return PTQ_OK;
}

static void emit_added(const ptq_onnx_edit *e, const int *pos, const int *order, int at, obuf *b)
{
    for (int i = 0; i < e->n_added; i++)
        if (pos[order[i]] == at)
            ptq_pb_put_len(b, 1, e->added[order[i]].enc, e->added[order[i]].enc_bytes);
}

static int node_renamed(const ptq_onnx_edit *e, int k)
{
    if (e->nodes[k].drop_attr)
        return 1;
    for (int j = 0; j < e->nodes[k].n_in; j++)
        if (renamed_input(e, k, j) != e->nodes[k].in[j])
            return 1;
    return 0;
}

/* 1 if attribute field f (an AttributeProto) is named name. */
static ptq_status attr_named(const ptq_pb *nr, const ptq_pb_field *f, const char *name, int *is)
{
    ptq_pb ar;
    ptq_pb_field af;
    *is = 0;
    PTQ_TRY_RET(ptq_pb_expect(nr, f, PTQ_PB_LEN));
    ptq_pb_sub(nr, f, &attr_desc, &ar);
    while (ptq_pb_more(&ar)) {
        PTQ_TRY_RET(ptq_pb_next(&ar, &af));
        if (af.num == 1 && af.wire == PTQ_PB_LEN)
            *is = af.len == strlen(name) && memcmp(af.data, name, af.len) == 0;
    }
    return PTQ_OK;
}

/* Node k again, its input fields renamed (and an attribute moved to a last
 * input), every other field copied. */
static ptq_status encode_node(const ptq_onnx_edit *e, int k, ptq_pb *nr, obuf *b)
{
    obuf nb = {0};
    ptq_pb_field f;
    int j = 0;
    while (ptq_pb_more(nr)) {
        const uint8_t *start = nr->p;
        int drop = 0;
        PTQ_TRY_RET(ptq_pb_next(nr, &f));
        if (f.num == 5 && e->nodes[k].drop_attr)
            PTQ_TRY_RET(attr_named(nr, &f, e->nodes[k].drop_attr, &drop));
        if (f.num == 1)
            ptq_pb_put_str(&nb, 1, renamed_input(e, k, j++));
        else if (!drop)
            ptq_buf_put(&nb, start, (size_t)(nr->p - start));
    }
    if (e->nodes[k].add_input)
        ptq_pb_put_str(&nb, 1, e->nodes[k].add_input);
    ptq_pb_put_len(b, 1, nb.data, nb.n_bytes);
    b->failed |= nb.failed;
    free(nb.data);
    return PTQ_OK;
}

static ptq_status encode_graph(ptq_ctx *ctx, const ptq_onnx_edit *e, ptq_pb *gr, obuf *b)
{
    ptq_status st = PTQ_OK;
    ptq_pb_field f;
    int k_node = 0, k_init = 0, k_input = 0;
    int *pos = calloc((size_t)e->n_added + 1, sizeof *pos);
    int *order = calloc((size_t)e->n_added + 1, sizeof *order);
    if (!pos || !order) {
        st = oom(ctx, e);
        goto done;
    }
    PTQ_TRY(st, place_added(ctx, e, pos, order), done);
    while (ptq_pb_more(gr)) {
        const uint8_t *start = gr->p;
        PTQ_TRY(st, ptq_pb_next(gr, &f), done);
        size_t n_field = (size_t)(gr->p - start);
        if (f.num == 1) {
            emit_added(e, pos, order, k_node, b);
            if (node_renamed(e, k_node)) {
                ptq_pb nr;
                ptq_pb_sub(gr, &f, &node_desc, &nr);
                PTQ_TRY(st, encode_node(e, k_node, &nr, b), done);
            } else {
                ptq_buf_put(b, start, n_field);
            }
            if (++k_node == e->n_nodes)
                emit_added(e, pos, order, e->n_nodes, b);
        } else if (f.num == 5) {
            if (!e->inits[k_init].removed)
                ptq_buf_put(b, start, n_field);
            if (++k_init == e->n_inits)
                for (int i = 0; i < e->n_new_inits; i++)
                    ptq_pb_put_len(b, 5, e->new_inits[i].enc, e->new_inits[i].enc_bytes);
        } else if (f.num == 11) {
            int removed = 0;
            for (int i = 0; i < e->n_inits && !removed; i++)
                removed = e->inits[i].removed && strcmp(e->inits[i].name, e->inputs[k_input]) == 0;
            if (!removed)
                ptq_buf_put(b, start, n_field);
            k_input++;
        } else {
            ptq_buf_put(b, start, n_field);
        }
    }
    if (!e->n_nodes)
        emit_added(e, pos, order, 0, b);
    if (!e->n_inits)
        for (int i = 0; i < e->n_new_inits; i++)
            ptq_pb_put_len(b, 5, e->new_inits[i].enc, e->new_inits[i].enc_bytes);
done:
    free(pos);
    free(order);
    return st;
}

/* 1 when an OperatorSetIdProto names the default domain ("" or "ai.onnx"). */
static ptq_status opset_is_default(ptq_pb *sr, int *is_default, int64_t *version)
{
    ptq_pb_field f;
    *is_default = 1;
    *version = 0;
    while (ptq_pb_more(sr)) {
        PTQ_TRY_RET(ptq_pb_next(sr, &f));
        if (f.num == 1)
            *is_default = f.len == 0 || (f.len == 7 && memcmp(f.data, "ai.onnx", 7) == 0);
        else if (f.num == 2)
            *version = (int64_t)f.u;
    }
    return PTQ_OK;
}

ptq_status ptq_onnx_edit_encode(ptq_ctx *ctx, const ptq_onnx_edit *e, void **bytes, size_t *n_bytes)
{
    ptq_status st = PTQ_OK;
    obuf b = {0}, gb = {0};
    ptq_pb mr, sub;
    ptq_pb_field f;
    int has_ir = 0, has_default = 0, n_opsets = 0, k_opset = 0;
    *bytes = NULL;
    *n_bytes = 0;
    PTQ_TRY(st, check_names(ctx, e), done);
    /* first pass: which of ir_version and the default opset exist */
    ptq_pb_init(&mr, ctx, e->path, e->bytes, e->n_bytes, &model_desc);
    while (ptq_pb_more(&mr)) {
        PTQ_TRY(st, ptq_pb_next(&mr, &f), done);
        has_ir |= f.num == 1;
        if (f.num == 8) {
            int is_default;
            int64_t v;
            n_opsets++;
            ptq_pb_sub(&mr, &f, &opset_desc, &sub);
            PTQ_TRY(st, opset_is_default(&sub, &is_default, &v), done);
            has_default |= is_default;
        }
    }
    if (!has_ir && e->ir_version > 0)
        ptq_pb_put_int(&b, 1, e->ir_version);
    ptq_pb_init(&mr, ctx, e->path, e->bytes, e->n_bytes, &model_desc);
    while (ptq_pb_more(&mr)) {
        const uint8_t *start = mr.p;
        PTQ_TRY(st, ptq_pb_next(&mr, &f), done);
        size_t n_field = (size_t)(mr.p - start);
        if (f.num == 1 && (int64_t)f.u < e->ir_version) {
            ptq_pb_put_int(&b, 1, e->ir_version);
        } else if (f.num == 7) {
            ptq_pb_sub(&mr, &f, &graph_desc, &sub);
            PTQ_TRY(st, encode_graph(ctx, e, &sub, &gb), done);
            ptq_pb_put_len(&b, 7, gb.data, gb.n_bytes);
        } else if (f.num == 8) {
            int is_default;
            int64_t v;
            ptq_pb_sub(&mr, &f, &opset_desc, &sub);
            PTQ_TRY(st, opset_is_default(&sub, &is_default, &v), done);
            if (is_default && v < e->opset) {
                /* the entry again, version replaced, other fields copied */
                obuf ob = {0};
                ptq_pb_field sf;
                ptq_pb_sub(&mr, &f, &opset_desc, &sub);
                while (ptq_pb_more(&sub)) {
                    const uint8_t *s0 = sub.p;
                    PTQ_TRY(st, ptq_pb_next(&sub, &sf), done);
                    if (sf.num != 2)
                        ptq_buf_put(&ob, s0, (size_t)(sub.p - s0));
                }
                ptq_pb_put_int(&ob, 2, e->opset);
                ptq_pb_put_len(&b, 8, ob.data, ob.n_bytes);
                b.failed |= ob.failed;
                free(ob.data);
            } else {
                ptq_buf_put(&b, start, n_field);
            }
            if (++k_opset == n_opsets && !has_default && e->opset > 0) {
                obuf ob = {0};
                ptq_pb_put_str(&ob, 1, "");
                ptq_pb_put_int(&ob, 2, e->opset);
                ptq_pb_put_len(&b, 8, ob.data, ob.n_bytes);
                b.failed |= ob.failed;
                free(ob.data);
            }
        } else {
            ptq_buf_put(&b, start, n_field);
        }
    }
    if (!n_opsets && e->opset > 0) {
        obuf ob = {0};
        ptq_pb_put_str(&ob, 1, "");
        ptq_pb_put_int(&ob, 2, e->opset);
        ptq_pb_put_len(&b, 8, ob.data, ob.n_bytes);
        b.failed |= ob.failed;
        free(ob.data);
    }
    if (b.failed || gb.failed) {
        st = oom(ctx, e);
        goto done;
    }
    *bytes = (uint8_t *)b.data;
    *n_bytes = b.n_bytes;
    b.data = NULL;
done:
    free(b.data);
    free(gb.data);
    return st;
}

ptq_status ptq_onnx_edit_write(ptq_ctx *ctx, const ptq_onnx_edit *e, const char *path)
{
    void *bytes = NULL;
    size_t n_bytes = 0;
    ptq_status st = ptq_onnx_edit_encode(ctx, e, &bytes, &n_bytes);
    if (st == PTQ_OK)
        st = ptq_atomic_write(ctx, path, bytes, n_bytes);
    free(bytes);
    return st;
}
