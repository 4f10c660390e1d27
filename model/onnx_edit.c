/* ONNX editing at the wire level: the file is kept as bytes; the writer
 * re-encodes only the GraphProto (added/dropped initializers and nodes, renamed
 * node inputs and outputs) and the ModelProto's ir_version/opset_import fields, and copies
 * every other field's bytes in order. Tensors in external data are read
 * through model/tensor_pb.c's checks (inside the model's folder) and written
 * inline, or, past INLINE_MAX_BYTES, to "<output>.data" beside the output.
 * Covered by tests/test_onnx_edit.c, tests/onnx_edit_test.py (onnx.checker +
 * onnxruntime on a Q/DQ'd model) and tests/qdq_external_data_test.py. */
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
static const char *const sparse_fields[] = {NULL, "values", "indices"};
static const ptq_pb_desc sparse_desc = {"SparseTensorProto", 3, sparse_fields};

/* Subgraphs nested deeper than this are refused rather than recursed into. */
#define MAX_DEPTH 64

/* The output rule (ptq_onnx_edit_write, README "ptq export"): the written
 * model holds every tensor inline when it stays at most INLINE_MAX_BYTES
 * (protobuf refuses messages of 2 GiB or more; the margin leaves room for
 * tools that load and save it again). Past that, every graph initializer
 * that was in external data or has EXTERNAL_MIN_BYTES or more goes to one
 * file "<output>.data" beside the output, at offsets aligned to
 * DATA_ALIGN_BYTES (PAGE_ALIGN_BYTES from PAGE_ALIGN_MIN_BYTES up, so
 * readers can map them); other tensors, such as Constant values, are
 * written inline (onnxruntime cannot infer shapes from external ones).
 * PTQ_TEST_ONNX_INLINE_MAX=N in the environment lowers INLINE_MAX_BYTES to
 * N bytes (tests reach the external branch without writing 2 GB); it
 * cannot raise it. */
#define INLINE_MAX_BYTES ((uint64_t)2000000000)
#define PROTOBUF_MAX_BYTES ((uint64_t)INT32_MAX)
#define EXTERNAL_MIN_BYTES 1024 /* onnx's size_threshold default */
#define DATA_ALIGN_BYTES 16
#define PAGE_ALIGN_BYTES 4096
#define PAGE_ALIGN_MIN_BYTES ((size_t)1 << 20)
#define COPY_CHUNK_BYTES ((size_t)4 << 20) /* external data is copied in pieces this big */

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
    /* ptq_onnx_edit_attr_to_input, n_moved times: the attributes dropped, the inputs appended in order */
    int n_moved;
    char **drop_attr, **add_input;
    char **out_to; /* [n_out] ptq_onnx_edit_rename_output: the name output j is written as (NULL: its own) */
    char *set_attr; /* ptq_onnx_edit_set_int_attr_of: an int attribute written in place of any of its name */
    int64_t set_value;
} enode;

typedef struct einit { /* a graph initializer of the file */
    char *name;
    int removed;
    uint64_t ext_bytes; /* its bytes in external data; 0 when inline */
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
    int node_k;             /* >= 0: only existing node node_k (ptq_onnx_edit_rename_input_of), node unused */
} erename;

struct ptq_onnx_edit {
    char *path;     /* for messages */
    char *base_dir; /* the model's folder, where external data is; NULL when opened from memory */
    char **src_files; /* the files holding its external data, resolved (realpath) */
    int n_src_files;
    int64_t n_external; /* tensors in external data, anywhere in the model */
    uint64_t ext_bytes; /* their bytes */
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

/* items, an array of n of width bytes and capacity *cap, with room for one more (the capacity doubling from 16),
   or NULL with items untouched when memory runs out */
static void *reserve_one(void *items, int n, int *cap, size_t width)
{
    if (n < *cap)
        return items;
    int grown_cap = *cap ? 2 * *cap : 16;
    void *grown = realloc(items, (size_t)grown_cap * width);
    if (grown)
        *cap = grown_cap;
    return grown;
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
        for (int j = 0; j < e->nodes[i].n_moved; j++) {
            free(e->nodes[i].drop_attr[j]);
            free(e->nodes[i].add_input[j]);
        }
        free(e->nodes[i].drop_attr);
        free(e->nodes[i].add_input);
        free(e->nodes[i].set_attr);
        free_names(e->nodes[i].in, e->nodes[i].n_in);
        free_names(e->nodes[i].out, e->nodes[i].n_out);
        free_names(e->nodes[i].out_to, e->nodes[i].n_out);
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
    free_names(e->src_files, e->n_src_files);
    smap_free(&e->defined);
    free(e->nodes);
    free(e->inits);
    free(e->added);
    free(e->new_inits);
    free(e->renames);
    free(e->bytes);
    free(e->base_dir);
    free(e->path);
    free(e);
}

/* ---- reading: where tensors sit, and the external data checks ---- */

/* The messages that can hold a TensorProto, down to it. */
typedef enum mkind { MK_NONE, MK_GRAPH, MK_NODE, MK_ATTR, MK_SPARSE, MK_FUNCTION, MK_TENSOR } mkind;

static const ptq_pb_desc *kind_desc(mkind k)
{
    switch (k) {
    case MK_GRAPH: return &graph_desc;
    case MK_NODE: return &node_desc;
    case MK_ATTR: return &attr_desc;
    case MK_SPARSE: return &sparse_desc;
    case MK_FUNCTION: return &func_desc;
    default: return &tensor_desc;
    }
}

/* The kind of message field f of a kind-k message holds (MK_NONE: none that
 * can hold a tensor). GraphProto's node/initializer/sparse_initializer,
 * NodeProto's attribute and FunctionProto's node must be length-delimited;
 * an AttributeProto's or SparseTensorProto's field that is not is skipped. */
static ptq_status child_of(const ptq_pb *r, mkind k, const ptq_pb_field *f, mkind *child)
{
    uint32_t n = f->num;
    int strict = k == MK_GRAPH || k == MK_NODE || k == MK_FUNCTION;
    switch (k) {
    case MK_GRAPH: *child = n == 1 ? MK_NODE : n == 5 ? MK_TENSOR : n == 15 ? MK_SPARSE : MK_NONE; break;
    case MK_NODE: *child = n == 5 ? MK_ATTR : MK_NONE; break;
    case MK_ATTR:
        *child = n == 5 || n == 10   ? MK_TENSOR
                 : n == 6 || n == 11 ? MK_GRAPH
                 : n == 22 || n == 23 ? MK_SPARSE
                                      : MK_NONE;
        break;
    case MK_SPARSE: *child = n == 1 || n == 2 ? MK_TENSOR : MK_NONE; break;
    case MK_FUNCTION: *child = n == 7 ? MK_NODE : MK_NONE; break;
    default: *child = MK_NONE; break;
    }
    if (*child != MK_NONE && f->wire != PTQ_PB_LEN) {
        if (strict)
            return ptq_pb_expect(r, f, PTQ_PB_LEN);
        *child = MK_NONE;
    }
    return PTQ_OK;
}

/* 1 when tensor tr has external_data entries or data_location EXTERNAL. */
static ptq_status has_external_fields(const ptq_pb *tr, int *has)
{
    ptq_pb r = *tr;
    ptq_pb_field f;
    *has = 0;
    while (ptq_pb_more(&r)) {
        PTQ_TRY_RET(ptq_pb_next(&r, &f));
        *has |= f.num == 13 || (f.num == 14 && f.wire == PTQ_PB_VARINT && f.u == 1);
    }
    return PTQ_OK;
}

/* Parses tensor tr when it has external data fields; *is_external: its data
 * is in external data (data_location EXTERNAL; external_data entries without
 * it are ignored, as ptq's reader and onnxruntime do). */
static ptq_status parse_if_external(const ptq_pb *tr, ptq_pb_tensor *t, int *is_external)
{
    ptq_pb r = *tr;
    int has;
    *is_external = 0;
    PTQ_TRY_RET(has_external_fields(tr, &has));
    if (!has)
        return PTQ_OK;
    r.desc = &ptq_pb_tensor_desc;
    PTQ_TRY_RET(ptq_pb_tensor_parse(&r, "tensor", t));
    *is_external = t->kind == PTQ_PB_DATA_EXTERNAL;
    return PTQ_OK;
}

const char *const *ptq_onnx_edit_external_files(const ptq_onnx_edit *e, int *n)
{
    *n = e->n_src_files;
    return (const char *const *)e->src_files;
}

/* Remembers the resolved path of a file holding external data (once). */
static ptq_status note_src_file(ptq_ctx *ctx, ptq_onnx_edit *e, char *full)
{
    for (int i = 0; i < e->n_src_files; i++)
        if (strcmp(e->src_files[i], full) == 0) {
            free(full);
            return PTQ_OK;
        }
    char **grown = realloc(e->src_files, ((size_t)e->n_src_files + 1) * sizeof *grown);
    if (!grown) {
        free(full);
        return oom(ctx, e);
    }
    e->src_files = grown;
    e->src_files[e->n_src_files++] = full;
    return PTQ_OK;
}

/* A tensor with external data must be readable as ptq's reader reads it
 * (model/tensor_pb.c: inside the model's folder, symlinks followed, no '..'
 * or absolute location, offset + length inside the file); *n_ext: its bytes
 * there (0 when inline). */
static ptq_status scan_tensor(ptq_onnx_edit *e, ptq_pb *tr, uint64_t *n_ext)
{
    ptq_pb_tensor t;
    int has, is_external, fd;
    char *full;
    *n_ext = 0;
    PTQ_TRY_RET(has_external_fields(tr, &has));
    if (has && !e->base_dir)
        return ptq_pb_fail(tr, (size_t)(tr->p - tr->base), PTQ_ERR_UNSUPPORTED,
                           "tensor with external data: only a model opened from its file (whose folder holds "
                           "the data) can be edited with it");
    PTQ_TRY_RET(parse_if_external(tr, &t, &is_external));
    if (!is_external)
        return PTQ_OK;
    PTQ_TRY_RET(ptq_pb_tensor_open_external(&t, "tensor", e->base_dir, &fd, &full));
    close(fd);
    PTQ_TRY_RET(note_src_file(tr->ctx, e, full));
    e->n_external++;
    e->ext_bytes += t.n_bytes;
    *n_ext = t.n_bytes;
    return PTQ_OK;
}

/* Checks every tensor inside message r of kind k (subgraphs to MAX_DEPTH). */
static ptq_status scan(ptq_onnx_edit *e, mkind k, ptq_pb *r, int depth)
{
    ptq_pb_field f;
    ptq_pb sub;
    mkind child;
    uint64_t n_ext;
    if (k == MK_TENSOR)
        return scan_tensor(e, r, &n_ext);
    while (ptq_pb_more(r)) {
        PTQ_TRY_RET(ptq_pb_next(r, &f));
        PTQ_TRY_RET(child_of(r, k, &f, &child));
        if (child == MK_NONE)
            continue;
        if (child == MK_GRAPH && depth >= MAX_DEPTH)
            return ptq_pb_fail(r, f.at, PTQ_ERR_UNSUPPORTED, "subgraphs nested over %d deep", MAX_DEPTH);
        ptq_pb_sub(r, &f, kind_desc(child), &sub);
        PTQ_TRY_RET(scan(e, child, &sub, depth + (child == MK_GRAPH)));
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
        mkind child;
        PTQ_TRY_RET(ptq_pb_next(&gr, &f));
        PTQ_TRY_RET(child_of(&gr, MK_GRAPH, &f, &child));
        if (child != MK_NONE)
            ptq_pb_sub(&gr, &f, kind_desc(child), &sub);
        if (f.num == 1) {
            enode *n = &e->nodes[e->n_nodes++];
            ptq_pb scanned = sub;
            PTQ_TRY_RET(scan(e, MK_NODE, &scanned, 0));
            PTQ_TRY_RET(read_node(ctx, e, &sub, n));
            for (int j = 0; j < n->n_out; j++)
                PTQ_TRY_RET(define(ctx, e, n->out[j]));
        } else if (f.num == 5) {
            einit *t = &e->inits[e->n_inits++];
            ptq_pb scanned = sub;
            PTQ_TRY_RET(scan_tensor(e, &scanned, &t->ext_bytes));
            PTQ_TRY_RET(read_name(ctx, e, &sub, 8, &t->name));
            PTQ_TRY_RET(define(ctx, e, t->name));
        } else if (f.num == 11) {
            PTQ_TRY_RET(ptq_pb_expect(&gr, &f, PTQ_PB_LEN));
            ptq_pb_sub(&gr, &f, &vi_desc, &sub);
            PTQ_TRY_RET(read_name(ctx, e, &sub, 1, &e->inputs[e->n_inputs]));
            PTQ_TRY_RET(define(ctx, e, e->inputs[e->n_inputs++]));
        } else if (f.num == 15) {
            PTQ_TRY_RET(scan(e, MK_SPARSE, &sub, 0));
        }
    }
    return PTQ_OK;
}

/* Checks the ModelProto (and every tensor's external data) and reads its graph. */
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
                PTQ_TRY_RET(scan(e, MK_FUNCTION, &sub, 0));
            }
        }
    }
    if (!has_graph)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "%s: not an ONNX model: ModelProto has no graph (%zu bytes)", e->path,
                        e->n_bytes);
    ptq_pb_sub(&mr, &gf, &graph_desc, &sub);
    return read_graph(ctx, e, &sub);
}

/* base_dir: the folder external data is relative to; NULL refuses external data. */
static ptq_status open_model(ptq_ctx *ctx, const void *bytes, size_t n_bytes, const char *path, const char *base_dir,
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
    if (!e || !(e->path = strdup(path)) || (base_dir && !(e->base_dir = strdup(base_dir))) ||
        !(e->bytes = malloc(n_bytes))) {
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

ptq_status ptq_onnx_edit_open_bytes(ptq_ctx *ctx, const void *bytes, size_t n_bytes, const char *path,
                                    ptq_onnx_edit **out)
{
    return open_model(ctx, bytes, n_bytes, path, NULL, out);
}

ptq_status ptq_onnx_edit_open(ptq_ctx *ctx, const char *path, ptq_onnx_edit **out)
{
    ptq_status st = PTQ_OK;
    uint8_t *buf = NULL;
    char *dir = NULL;
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
    if (ptq_keras_is_hdf5(buf, n)) { /* a Keras model is edited in its ONNX form, which has no external data */
        free(buf);
        buf = NULL;
        PTQ_TRY(st, ptq_keras_to_onnx(ctx, path, (void **)&buf, &n), done);
    } else if (!(dir = ptq_pb_dirname(path))) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    st = open_model(ctx, buf, n, path, dir, out);
done:
    fclose(fp);
    free(buf);
    free(dir);
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
    ainit *grown = reserve_one(e->new_inits, e->n_new_inits, &e->cap_new_inits, sizeof *grown);
    if (!grown)
        return oom(ctx, e);
    e->new_inits = grown;
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
    anode *grown = reserve_one(e->added, e->n_added, &e->cap_added, sizeof *grown);
    if (!grown)
        return oom(ctx, e);
    e->added = grown;
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

/* The existing node that writes output, or -1. */
static int node_writing(const ptq_onnx_edit *e, const char *output)
{
    for (int k = 0; k < e->n_nodes; k++)
        for (int j = 0; j < e->nodes[k].n_out; j++)
            if (strcmp(e->nodes[k].out[j], output) == 0)
                return k;
    return -1;
}

/* Records the rename of input from to to in the existing nodes named node_name (NULL: all), or in node node_k
 * alone when node_k >= 0 (what names it in messages: where). */
static ptq_status add_rename(ptq_ctx *ctx, ptq_onnx_edit *e, const char *from, const char *to, const char *node_name,
                             int node_k, const char *where)
{
    int found = 0;
    if (!from || !to || !from[0] || !to[0])
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: rename_input needs two non-empty names", e->path);
    for (int i = 0; i < e->n_nodes && !found; i++) {
        const enode *n = &e->nodes[i];
        if ((node_k >= 0 && i != node_k) || (node_k < 0 && node_name && strcmp(n->name, node_name) != 0))
            continue;
        for (int j = 0; j < n->n_in && !found; j++)
            found = strcmp(n->in[j], from) == 0;
    }
    /* an earlier rename may have made from an input */
    for (int i = 0; i < e->n_renames && !found; i++)
        found = strcmp(e->renames[i].to, from) == 0;
    if (!found)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: rename_input '%s' -> '%s': no existing node%s%s reads '%s'",
                        e->path, from, to, where ? " " : "", where ? where : "", from);
    erename *grown = reserve_one(e->renames, e->n_renames, &e->cap_renames, sizeof *grown);
    if (!grown)
        return oom(ctx, e);
    e->renames = grown;
    erename *r = &e->renames[e->n_renames];
    memset(r, 0, sizeof *r);
    r->node_k = node_k;
    e->n_renames++;
    if (!(r->from = strdup(from)) || !(r->to = strdup(to)) || (node_name && !(r->node = strdup(node_name))))
        return oom(ctx, e);
    return PTQ_OK;
}

ptq_status ptq_onnx_edit_rename_input(ptq_ctx *ctx, ptq_onnx_edit *e, const char *from, const char *to,
                                      const char *node_name)
{
    char where[64 + PTQ_MSG_BYTES / 4];
    if (node_name)
        snprintf(where, sizeof where, "named %s", node_name);
    return add_rename(ctx, e, from, to, node_name, -1, node_name ? where : NULL);
}

ptq_status ptq_onnx_edit_rename_input_of(ptq_ctx *ctx, ptq_onnx_edit *e, const char *from, const char *to,
                                         const char *node_output)
{
    if (!node_output || !node_output[0])
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: rename_input_of needs the name of a node's output", e->path);
    const int k = node_writing(e, node_output);
    if (k < 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: rename_input_of '%s' -> '%s': no existing node writes '%s'",
                        e->path, from ? from : "", to ? to : "", node_output);
    char where[64 + PTQ_MSG_BYTES / 4];
    snprintf(where, sizeof where, "writing %s", node_output);
    return add_rename(ctx, e, from, to, NULL, k, where);
}

ptq_status ptq_onnx_edit_rename_output(ptq_ctx *ctx, ptq_onnx_edit *e, const char *from, const char *to)
{
    if (!from || !to || !from[0] || !to[0])
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: rename_output needs two non-empty names", e->path);
    if (smap_get(&e->defined, to, 0) > 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: rename_output '%s' -> '%s': '%s' already exists", e->path, from,
                        to, to);
    for (int k = 0; k < e->n_nodes; k++) {
        enode *n = &e->nodes[k];
        for (int j = 0; j < n->n_out; j++) {
            if (strcmp(n->out[j], from) != 0 || (n->out_to && n->out_to[j]))
                continue;
            if (!n->out_to && !(n->out_to = calloc((size_t)n->n_out, sizeof *n->out_to)))
                return oom(ctx, e);
            if (!(n->out_to[j] = strdup(to)))
                return oom(ctx, e);
            (*smap_find(&e->defined, from))--; /* defined by this node when read; an added node defines it again */
            return define(ctx, e, n->out_to[j]);
        }
    }
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: rename_output '%s' -> '%s': no existing node produces '%s'",
                    e->path, from, to, from);
}

/* Node n (what names it in messages: label) loses attr and reads input as one more, last input. */
static ptq_status move_attr(ptq_ctx *ctx, ptq_onnx_edit *e, enode *n, const char *label, const char *attr,
                            const char *input)
{
    for (int j = 0; j < n->n_moved; j++)
        if (!strcmp(n->drop_attr[j], attr))
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: attr_to_input: node '%s' already moves '%s'", e->path,
                            label, attr);
    char **d = realloc(n->drop_attr, (size_t)(n->n_moved + 1) * sizeof *d);
    if (d)
        n->drop_attr = d;
    char **a = d ? realloc(n->add_input, (size_t)(n->n_moved + 1) * sizeof *a) : NULL;
    if (a)
        n->add_input = a;
    char *ds = a ? strdup(attr) : NULL, *as = ds ? strdup(input) : NULL;
    if (!as) {
        free(ds);
        return oom(ctx, e);
    }
    n->drop_attr[n->n_moved] = ds;
    n->add_input[n->n_moved++] = as;
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
    return move_attr(ctx, e, n, node_name, attr, input);
}

ptq_status ptq_onnx_edit_attr_to_input_of(ptq_ctx *ctx, ptq_onnx_edit *e, const char *node_output, const char *attr,
                                          const char *input)
{
    if (!node_output || !node_output[0] || !attr || !input || !input[0])
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                        "%s: attr_to_input_of needs a node's output, an attribute and an input", e->path);
    const int k = node_writing(e, node_output);
    if (k < 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: attr_to_input_of: no existing node writes '%s'", e->path,
                        node_output);
    return move_attr(ctx, e, &e->nodes[k], e->nodes[k].name[0] ? e->nodes[k].name : node_output, attr, input);
}

ptq_status ptq_onnx_edit_set_int_attr_of(ptq_ctx *ctx, ptq_onnx_edit *e, const char *node_output, const char *attr,
                                         int64_t value)
{
    if (!node_output || !node_output[0] || !attr || !attr[0])
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: set_int_attr_of needs a node's output and an attribute",
                        e->path);
    const int k = node_writing(e, node_output);
    if (k < 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: set_int_attr_of: no existing node writes '%s'", e->path,
                        node_output);
    char *name = strdup(attr);
    if (!name)
        return oom(ctx, e);
    free(e->nodes[k].set_attr);
    e->nodes[k].set_attr = name;
    e->nodes[k].set_value = value;
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
        const int here = rn->node_k >= 0 ? rn->node_k == k : !rn->node || strcmp(rn->node, n->name) == 0;
        if (here && strcmp(s, rn->from) == 0)
            s = rn->to;
    }
    return s;
}

int ptq_onnx_edit_reads(const ptq_onnx_edit *e, const char *name)
{
    /* an input reads name as renamed only if it was name or some rename leads to name: the renames are walked
     * for those inputs alone (the export asks once per weight and bias) */
    int renamed_to = 0;
    for (int r = 0; r < e->n_renames && !renamed_to; r++)
        renamed_to = strcmp(e->renames[r].to, name) == 0;
    int n = 0;
    for (int k = 0; k < e->n_nodes; k++)
        for (int j = 0; j < e->nodes[k].n_in; j++)
            if (renamed_to || strcmp(e->nodes[k].in[j], name) == 0)
                n += strcmp(renamed_input(e, k, j), name) == 0;
    for (int a = 0; a < e->n_added; a++)
        for (int j = 0; j < e->added[a].n_in; j++)
            n += strcmp(e->added[a].in[j], name) == 0;
    return n;
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
    for (int k = 0; k < e->n_nodes; k++)
        for (int j = 0; e->nodes[k].out_to && j < e->nodes[k].n_out; j++)
            if (e->nodes[k].out_to[j] && smap_get(&e->defined, e->nodes[k].out[j], 0) <= 0)
                return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                                "%s: output '%s' renamed to '%s', but no added node defines '%s' again", e->path,
                                e->nodes[k].out[j], e->nodes[k].out_to[j], e->nodes[k].out[j]);
    for (int r = 0; r < e->n_renames; r++)
        if (smap_get(&e->defined, e->renames[r].to, 0) <= 0)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                            "%s: input '%s' renamed to '%s', but no initializer, node or graph input defines it",
                            e->path, e->renames[r].from, e->renames[r].to);
    for (int k = 0; k < e->n_nodes; k++)
        for (int j = 0; j < e->nodes[k].n_moved; j++)
            if (smap_get(&e->defined, e->nodes[k].add_input[j], 0) <= 0)
                return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: node '%s' gets input '%s', which nothing defines",
                                e->path, e->nodes[k].name, e->nodes[k].add_input[j]);
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
    if (e->nodes[k].n_moved || e->nodes[k].out_to || e->nodes[k].set_attr)
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

/* ---- writing: where tensor data goes ---- */

/* How one encoding places tensor data. */
typedef struct wctx {
    ptq_ctx *ctx;
    const ptq_onnx_edit *e;
    int relocate;          /* the model has external data: every message that can hold a tensor is walked */
    int fd;                /* -1: every tensor inline; else the data file's temporary, written up to offset */
    const char *data_path; /* the data file, for messages */
    const char *location;  /* its name as the model refers to it (it sits beside the model) */
    uint64_t offset;
    uint8_t *chunk; /* COPY_CHUNK_BYTES for copying external data; malloc'd on first use */
} wctx;

static size_t varint_bytes(uint64_t v)
{
    size_t n = 1;
    for (; v >= 0x80; v >>= 7)
        n++;
    return n;
}

static ptq_status data_put(wctx *w, const void *data, size_t n_bytes)
{
    PTQ_TRY_RET(ptq_file_write_all(w->ctx, w->fd, data, n_bytes, w->data_path));
    w->offset += n_bytes;
    return PTQ_OK;
}

/* Zeros up to where a tensor of n_bytes starts. */
static ptq_status data_align(wctx *w, size_t n_bytes)
{
    static const uint8_t zeros[PAGE_ALIGN_BYTES];
    uint64_t align = n_bytes >= PAGE_ALIGN_MIN_BYTES ? PAGE_ALIGN_BYTES : DATA_ALIGN_BYTES;
    uint64_t pad = (align - w->offset % align) % align;
    return pad ? data_put(w, zeros, (size_t)pad) : PTQ_OK;
}

/* Copies external tensor t's bytes, opened through the reader's checks
 * again (the file may have changed since the model was opened): appended
 * to out, or to the data file when out is NULL. */
static ptq_status copy_external(wctx *w, const ptq_pb_tensor *t, obuf *out)
{
    ptq_status st = PTQ_OK;
    int fd;
    char *full;
    if (!w->chunk && !(w->chunk = malloc(COPY_CHUNK_BYTES)))
        return oom(w->ctx, w->e);
    PTQ_TRY_RET(ptq_pb_tensor_open_external(t, "tensor", w->e->base_dir, &fd, &full));
    for (size_t got = 0; got < t->n_bytes;) {
        size_t n = t->n_bytes - got < COPY_CHUNK_BYTES ? t->n_bytes - got : COPY_CHUNK_BYTES;
        ssize_t k = pread(fd, w->chunk, n, (off_t)((uint64_t)t->ext_offset + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            st = ptq_fail(w->ctx, PTQ_ERR_IO, "%s: reading external data '%s': %s", w->e->path, full,
                          k < 0 ? strerror(errno) : "unexpected end of file");
            break;
        }
        if (out)
            ptq_buf_put(out, w->chunk, (size_t)k);
        else if ((st = data_put(w, w->chunk, (size_t)k)) != PTQ_OK)
            break;
        got += (size_t)k;
    }
    close(fd);
    free(full);
    return st;
}

/* TensorProto fields that hold or locate the data: the typed fields, raw_data, external_data, data_location. */
static int is_data_field(uint32_t num)
{
    return num == 4 || num == 5 || num == 7 || num == 9 || num == 10 || num == 11 || num == 13 || num == 14;
}

/* A StringStringEntryProto {key, value} as TensorProto.external_data. */
static void put_entry(obuf *b, const char *key, const char *value)
{
    obuf eb = {0};
    ptq_pb_put_str(&eb, 1, key);
    ptq_pb_put_str(&eb, 2, value);
    ptq_pb_put_len(b, 13, eb.data, eb.n_bytes);
    b->failed |= eb.failed;
    free(eb.data);
}

/* Tensor tr again as field num of out. With the data file, a movable one
 * (a graph initializer) goes there when it was in external data or has
 * EXTERNAL_MIN_BYTES or more inline. Any other tensor in external data gets
 * its data inline (onnxruntime cannot infer shapes from a Constant whose
 * value is external). Every other tensor, and one ptq cannot decode (a
 * string tensor), is copied as it is. */
static ptq_status emit_tensor(wctx *w, const ptq_pb *tr, uint32_t num, int movable, obuf *out)
{
    ptq_status st = PTQ_OK;
    ptq_pb_tensor t;
    ptq_pb r;
    ptq_pb_field f;
    obuf head = {0}, tail = {0};
    uint8_t *decoded = NULL;
    size_t n_msg = (size_t)(tr->end - tr->p);
    uint64_t offset;
    char num_str[24];
    int move, to_file = movable && w->fd >= 0;
    PTQ_TRY_RET(parse_if_external(tr, &t, &move));
    if (!move && to_file && n_msg >= EXTERNAL_MIN_BYTES) {
        ptq_ctx quiet;
        ptq_ctx_init(&quiet);
        r = *tr;
        r.ctx = &quiet;
        r.desc = &ptq_pb_tensor_desc;
        move = ptq_pb_tensor_parse(&r, "tensor", &t) == PTQ_OK && t.kind != PTQ_PB_DATA_NONE &&
               t.n_bytes >= EXTERNAL_MIN_BYTES;
        t.msg.ctx = w->ctx;
    }
    if (!move) {
        ptq_pb_put_len(out, num, tr->p, n_msg);
        return PTQ_OK;
    }
    r = *tr; /* the fields but the data's, as they were */
    while (ptq_pb_more(&r)) {
        const uint8_t *start = r.p;
        PTQ_TRY(st, ptq_pb_next(&r, &f), done);
        if (!is_data_field(f.num))
            ptq_buf_put(&head, start, (size_t)(r.p - start));
    }
    if (!to_file) { /* then raw_data=9, streamed from the external file */
        ptq_pb_put_key(out, num, PTQ_PB_LEN);
        ptq_pb_put_varint(out, head.n_bytes + varint_bytes(9 << 3 | PTQ_PB_LEN) + varint_bytes(t.n_bytes) + t.n_bytes);
        ptq_buf_put(out, head.data, head.n_bytes);
        ptq_pb_put_key(out, 9, PTQ_PB_LEN);
        ptq_pb_put_varint(out, t.n_bytes);
        PTQ_TRY(st, copy_external(w, &t, out), done);
        goto done;
    }
    PTQ_TRY(st, data_align(w, t.n_bytes), done);
    offset = w->offset;
    if (t.kind == PTQ_PB_DATA_EXTERNAL) {
        PTQ_TRY(st, copy_external(w, &t, NULL), done);
    } else if (t.kind == PTQ_PB_DATA_RAW) {
        PTQ_TRY(st, data_put(w, t.raw, t.n_bytes), done);
    } else {
        if (!(decoded = malloc(t.n_bytes))) {
            st = oom(w->ctx, w->e);
            goto done;
        }
        ptq_pb_tensor_decode(&t, decoded);
        PTQ_TRY(st, data_put(w, decoded, t.n_bytes), done);
    }
    put_entry(&tail, "location", w->location);
    snprintf(num_str, sizeof num_str, "%llu", (unsigned long long)offset);
    put_entry(&tail, "offset", num_str);
    snprintf(num_str, sizeof num_str, "%zu", t.n_bytes);
    put_entry(&tail, "length", num_str);
    ptq_pb_put_int(&tail, 14, 1); /* data_location EXTERNAL */
    ptq_pb_put_key(out, num, PTQ_PB_LEN);
    ptq_pb_put_varint(out, head.n_bytes + tail.n_bytes);
    ptq_buf_put(out, head.data, head.n_bytes);
    ptq_buf_put(out, tail.data, tail.n_bytes);
done:
    if (st == PTQ_OK && (head.failed || tail.failed))
        st = oom(w->ctx, w->e);
    free(head.data);
    free(tail.data);
    free(decoded);
    return st;
}

/* Message r of kind k again as field num of out, the tensors inside it
 * through emit_tensor (not movable) and every other field copied. */
static ptq_status copy_walk(wctx *w, mkind k, ptq_pb *r, uint32_t num, obuf *out)
{
    ptq_status st = PTQ_OK;
    ptq_pb_field f;
    ptq_pb sub;
    mkind child;
    obuf mb = {0};
    if (k == MK_TENSOR)
        return emit_tensor(w, r, num, 0, out);
    while (ptq_pb_more(r)) {
        const uint8_t *start = r->p;
        PTQ_TRY(st, ptq_pb_next(r, &f), done);
        PTQ_TRY(st, child_of(r, k, &f, &child), done);
        if (child == MK_NONE) {
            ptq_buf_put(&mb, start, (size_t)(r->p - start));
            continue;
        }
        ptq_pb_sub(r, &f, kind_desc(child), &sub);
        PTQ_TRY(st, copy_walk(w, child, &sub, f.num, &mb), done);
    }
    ptq_pb_put_len(out, num, mb.data, mb.n_bytes);
    out->failed |= mb.failed;
done:
    free(mb.data);
    return st;
}

/* ---- writing: the model ---- */

/* Node k again, its input and output fields renamed (and an attribute moved to a last
 * input, an int attribute set), every other field copied (attributes through copy_walk when the
 * model has external data). */
static ptq_status encode_node(wctx *w, int k, ptq_pb *nr, obuf *b)
{
    ptq_status st = PTQ_OK;
    const ptq_onnx_edit *e = w->e;
    obuf nb = {0};
    ptq_pb_field f;
    int j = 0, j_out = 0;
    while (ptq_pb_more(nr)) {
        const uint8_t *start = nr->p;
        int drop = 0;
        PTQ_TRY(st, ptq_pb_next(nr, &f), done);
        for (int m = 0; f.num == 5 && !drop && m < e->nodes[k].n_moved; m++)
            PTQ_TRY(st, attr_named(nr, &f, e->nodes[k].drop_attr[m], &drop), done);
        if (f.num == 5 && !drop && e->nodes[k].set_attr)
            PTQ_TRY(st, attr_named(nr, &f, e->nodes[k].set_attr, &drop), done);
        if (f.num == 1) {
            ptq_pb_put_str(&nb, 1, renamed_input(e, k, j++));
        } else if (f.num == 2 && e->nodes[k].out_to) {
            const char *to = e->nodes[k].out_to[j_out];
            ptq_pb_put_str(&nb, 2, to ? to : e->nodes[k].out[j_out]);
            j_out++;
        } else if (f.num == 5 && w->relocate && !drop) {
            ptq_pb ar;
            ptq_pb_sub(nr, &f, &attr_desc, &ar);
            PTQ_TRY(st, copy_walk(w, MK_ATTR, &ar, 5, &nb), done);
        } else if (!drop) {
            ptq_buf_put(&nb, start, (size_t)(nr->p - start));
        }
    }
    for (int m = 0; m < e->nodes[k].n_moved; m++)
        ptq_pb_put_str(&nb, 1, e->nodes[k].add_input[m]);
    if (e->nodes[k].set_attr) { /* AttributeProto {name=1 i=3 type=20 (INT=2)} */
        obuf at = {0};
        ptq_pb_put_str(&at, 1, e->nodes[k].set_attr);
        ptq_pb_put_int(&at, 3, e->nodes[k].set_value);
        ptq_pb_put_int(&at, 20, 2);
        ptq_pb_put_len(&nb, 5, at.data, at.n_bytes);
        nb.failed |= at.failed;
        free(at.data);
    }
    ptq_pb_put_len(b, 1, nb.data, nb.n_bytes);
    b->failed |= nb.failed;
done:
    free(nb.data);
    return st;
}

/* The added initializers, after the file's. */
static ptq_status emit_new_inits(wctx *w, obuf *b)
{
    const ptq_onnx_edit *e = w->e;
    for (int i = 0; i < e->n_new_inits; i++) {
        ptq_pb r;
        if (w->fd < 0) {
            ptq_pb_put_len(b, 5, e->new_inits[i].enc, e->new_inits[i].enc_bytes);
            continue;
        }
        ptq_pb_init(&r, w->ctx, e->path, e->new_inits[i].enc, e->new_inits[i].enc_bytes, &ptq_pb_tensor_desc);
        PTQ_TRY_RET(emit_tensor(w, &r, 5, 1, b));
    }
    return PTQ_OK;
}

static ptq_status encode_graph(wctx *w, ptq_pb *gr, obuf *b)
{
    ptq_status st = PTQ_OK;
    const ptq_onnx_edit *e = w->e;
    ptq_ctx *ctx = w->ctx;
    ptq_pb_field f;
    ptq_pb sub;
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
            ptq_pb_sub(gr, &f, &node_desc, &sub);
            if (node_renamed(e, k_node))
                PTQ_TRY(st, encode_node(w, k_node, &sub, b), done);
            else if (w->relocate)
                PTQ_TRY(st, copy_walk(w, MK_NODE, &sub, 1, b), done);
            else
                ptq_buf_put(b, start, n_field);
            if (++k_node == e->n_nodes)
                emit_added(e, pos, order, e->n_nodes, b);
        } else if (f.num == 5) {
            if (!e->inits[k_init].removed) {
                if (w->relocate || w->fd >= 0) {
                    ptq_pb_sub(gr, &f, &tensor_desc, &sub);
                    PTQ_TRY(st, emit_tensor(w, &sub, 5, 1, b), done);
                } else {
                    ptq_buf_put(b, start, n_field);
                }
            }
            if (++k_init == e->n_inits)
                PTQ_TRY(st, emit_new_inits(w, b), done);
        } else if (f.num == 11) {
            int removed = 0;
            for (int i = 0; i < e->n_inits && !removed; i++)
                removed = e->inits[i].removed && strcmp(e->inits[i].name, e->inputs[k_input]) == 0;
            if (!removed)
                ptq_buf_put(b, start, n_field);
            k_input++;
        } else if (f.num == 15 && w->relocate) {
            ptq_pb_sub(gr, &f, &sparse_desc, &sub);
            PTQ_TRY(st, copy_walk(w, MK_SPARSE, &sub, 15, b), done);
        } else {
            ptq_buf_put(b, start, n_field);
        }
    }
    if (!e->n_nodes)
        emit_added(e, pos, order, 0, b);
    if (!e->n_inits)
        PTQ_TRY(st, emit_new_inits(w, b), done);
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

/* The edited model's bytes, its tensor data placed as w says. */
static ptq_status encode_model(wctx *w, void **bytes, size_t *n_bytes)
{
    ptq_status st = PTQ_OK;
    ptq_ctx *ctx = w->ctx;
    const ptq_onnx_edit *e = w->e;
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
            PTQ_TRY(st, encode_graph(w, &sub, &gb), done);
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
        } else if (f.num == 25 && w->relocate) {
            ptq_pb_sub(&mr, &f, &func_desc, &sub);
            PTQ_TRY(st, copy_walk(w, MK_FUNCTION, &sub, 25, &b), done);
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


ptq_status ptq_onnx_edit_encode(ptq_ctx *ctx, const ptq_onnx_edit *e, void **bytes, size_t *n_bytes)
{
    wctx w = {ctx, e, e->n_external > 0, -1, NULL, NULL, 0, NULL};
    ptq_status st = encode_model(&w, bytes, n_bytes);
    free(w.chunk);
    if (st == PTQ_OK && *n_bytes > PROTOBUF_MAX_BYTES) {
        st = ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "%s: the edited model is %zu bytes, past protobuf's 2 GB; "
                                                "ptq_onnx_edit_write puts its tensors in external data instead",
                      e->path, *n_bytes);
        free(*bytes);
        *bytes = NULL;
        *n_bytes = 0;
    }
    return st;
}

/* INLINE_MAX_BYTES, or less under PTQ_TEST_ONNX_INLINE_MAX (see there). */
static uint64_t inline_max_bytes(void)
{
    const char *s = getenv("PTQ_TEST_ONNX_INLINE_MAX");
    char *end;
    if (s && *s >= '0' && *s <= '9') {
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (!*end && !errno && v < INLINE_MAX_BYTES)
            return (uint64_t)v;
    }
    return INLINE_MAX_BYTES;
}

/* About how big the model is with every tensor inline, from above (the
 * source, its external data less the removed initializers', what was added),
 * so that a model far past the limit is not first built in memory; the
 * encoded size is what decides. */
static uint64_t inline_estimate(const ptq_onnx_edit *e)
{
    uint64_t n = e->n_bytes + e->ext_bytes + 64 * (uint64_t)e->n_external;
    for (int i = 0; i < e->n_inits; i++)
        if (e->inits[i].removed)
            n -= e->inits[i].ext_bytes;
    for (int i = 0; i < e->n_new_inits; i++)
        n += e->new_inits[i].enc_bytes + 16;
    for (int i = 0; i < e->n_added; i++)
        n += e->added[i].enc_bytes + 16;
    return n;
}

/* The model to path and its big tensors to "<path>.data" beside it: both
 * written under temporary names, the data file renamed first, and the data
 * file removed again should the model's rename fail, so a failure leaves
 * neither. */
static ptq_status write_external(ptq_ctx *ctx, const ptq_onnx_edit *e, const char *path)
{
    ptq_status st = PTQ_OK;
    char tmp_data[PTQ_TMP_NAME_BYTES] = "", tmp_model[PTQ_TMP_NAME_BYTES] = "";
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    size_t n_data_path = strlen(path) + sizeof ".data";
    char *data_path = malloc(n_data_path);
    void *bytes = NULL;
    size_t n_bytes = 0;
    int model_fd = -1;
    wctx w = {ctx, e, e->n_external > 0, -1, NULL, NULL, 0, NULL};
    if (!data_path)
        return oom(ctx, e);
    if (!*name) {
        st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: the output '%s' names a folder, not a file", e->path, path);
        goto done;
    }
    snprintf(data_path, n_data_path, "%s.data", path);
    for (int i = 0; i < e->n_src_files; i++)
        if (ptq_file_same(e->src_files[i], data_path)) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: the output's data file %s would replace '%s', which holds "
                                                    "the external data being read; choose another output name",
                          e->path, data_path, e->src_files[i]);
            goto done;
        }
    w.data_path = data_path;
    w.location = data_path + (name - path);
    PTQ_TRY(st, ptq_atomic_create(ctx, data_path, tmp_data, sizeof tmp_data, &w.fd), done);
    PTQ_TRY(st, encode_model(&w, &bytes, &n_bytes), done);
    if (n_bytes > PROTOBUF_MAX_BYTES) {
        st = ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "%s: even with its initializers in external data the edited model "
                                                "is %zu bytes, past protobuf's 2 GB", e->path, n_bytes);
        goto done;
    }
    int rc = close(w.fd);
    w.fd = -1;
    if (rc != 0) {
        st = ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", data_path, strerror(errno));
        goto done;
    }
    PTQ_TRY(st, ptq_atomic_create(ctx, path, tmp_model, sizeof tmp_model, &model_fd), done);
    PTQ_TRY(st, ptq_file_write_all(ctx, model_fd, bytes, n_bytes, path), done);
    rc = close(model_fd);
    model_fd = -1;
    if (rc != 0) {
        st = ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", path, strerror(errno));
        goto done;
    }
    { /* both or neither: a failed rename puts back the data file the name held, the old model's */
        char *tmps[2] = {tmp_data, tmp_model};
        const char *paths[2] = {data_path, path};
        st = ptq_atomic_commit_all(ctx, tmps, paths, 2);
    }
done:
    if (w.fd >= 0)
        close(w.fd);
    if (model_fd >= 0)
        close(model_fd);
    ptq_atomic_discard(tmp_data);
    ptq_atomic_discard(tmp_model);
    free(w.chunk);
    free(bytes);
    free(data_path);
    return st;
}

ptq_status ptq_onnx_edit_write(ptq_ctx *ctx, const ptq_onnx_edit *e, const char *path)
{
    if (!path || !*path)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: no output path given", e->path);
    for (int i = 0; i < e->n_src_files; i++)
        if (ptq_file_same(e->src_files[i], path))
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: the output %s would replace '%s', which holds the "
                                                      "external data being read", e->path, path, e->src_files[i]);
    uint64_t limit = inline_max_bytes();
    if (inline_estimate(e) <= limit) {
        void *bytes = NULL;
        size_t n_bytes = 0;
        wctx w = {ctx, e, e->n_external > 0, -1, NULL, NULL, 0, NULL};
        ptq_status st = encode_model(&w, &bytes, &n_bytes);
        free(w.chunk);
        if (st == PTQ_OK && n_bytes <= limit)
            st = ptq_atomic_write(ctx, path, bytes, n_bytes);
        free(bytes);
        if (st != PTQ_OK || n_bytes <= limit)
            return st;
    }
    return write_external(ctx, e, path);
}
