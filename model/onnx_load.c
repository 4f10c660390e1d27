/* ONNX model loader: ModelProto/GraphProto/NodeProto/AttributeProto/
 * ValueInfoProto (onnx/onnx.proto) into the graph IR of ptq/graph.h, nodes
 * sorted topologically (Kahn, stable in file order), weights borrowed from
 * the mapped file where aligned. Covered by tests/test_onnx_load.c and tests/test_onnx_malformed.c. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/graph_store.h"
#include "model/keras.h"
#include "model/pb.h"
#include "ptq/fileio.h"

#define WEIGHT_ALIGN 64

static const char *const model_fields[] = {
    NULL, "ir_version", "producer_name", "producer_version", "domain", "model_version", "doc_string", "graph",
    "opset_import", NULL, NULL, NULL, NULL, NULL, "metadata_props", NULL, NULL, NULL, NULL, NULL, "training_info",
    NULL, NULL, NULL, NULL, "functions"};
static const ptq_pb_desc model_desc = {"ModelProto", 26, model_fields};
static const char *const graph_fields[] = {
    NULL, "node", "name", NULL, NULL, "initializer", NULL, NULL, NULL, NULL, "doc_string", "input", "output",
    "value_info", "quantization_annotation", "sparse_initializer", "metadata_props"};
static const ptq_pb_desc graph_desc = {"GraphProto", 17, graph_fields};
static const char *const node_fields[] = {NULL,     "input",      "output",       "name",          "op_type",
                                          "attribute", "doc_string", "domain",     "overload", "metadata_props"};
static const ptq_pb_desc node_desc = {"NodeProto", 10, node_fields};
static const char *const attr_fields[] = {
    NULL, "name", "f", "i", "s", "t", "g", "floats", "ints", "strings", "tensors", "graphs", NULL, "doc_string",
    "tp", "type_protos", NULL, NULL, NULL, NULL, "type", "ref_attr_name", "sparse_tensor", "sparse_tensors"};
static const ptq_pb_desc attr_desc = {"AttributeProto", 24, attr_fields};
static const char *const vi_fields[] = {NULL, "name", "type", "doc_string"};
static const ptq_pb_desc vi_desc = {"ValueInfoProto", 4, vi_fields};
static const char *const type_fields[] = {NULL,           "tensor_type", NULL, NULL, "sequence_type", "map_type",
                                          "denotation",   NULL, "sparse_tensor_type", "optional_type"};
static const ptq_pb_desc type_desc = {"TypeProto", 10, type_fields};
static const char *const ttype_fields[] = {NULL, "elem_type", "shape"};
static const ptq_pb_desc ttype_desc = {"TypeProto.Tensor", 3, ttype_fields};
static const char *const shape_fields[] = {NULL, "dim"};
static const ptq_pb_desc shape_desc = {"TensorShapeProto", 2, shape_fields};
static const char *const dim_fields[] = {NULL, "dim_value", "dim_param", "denotation"};
static const ptq_pb_desc dim_desc = {"TensorShapeProto.Dimension", 4, dim_fields};
static const char *const opset_fields[] = {NULL, "domain", "version"};
static const ptq_pb_desc opset_desc = {"OperatorSetIdProto", 3, opset_fields};

/* A node as parsed, before sorting. */
typedef struct pnode {
    const char *name, *op_type, *domain;
    int n_in, n_out, n_attrs;
    const char **in_names, **out_names;
    int *in, *out; /* value indices, filled once values exist */
    ptq_attr *attrs;
    size_t at; /* byte offset, for messages */
} pnode;

/* A constant tensor: an initializer or a tensor-valued attribute. */
typedef struct pconst {
    ptq_pb_tensor t;
    int value;       /* index into values */
    int node;        /* attribute constants: file index of the node */
    ptq_attr *attr;  /* attribute constants: the attribute to point at the value */
} pconst;

/* A declared type from a ValueInfoProto. */
typedef struct pdecl {
    const char *name;
    int is_tensor; /* 0: sequence, map, optional or sparse type */
    ptq_dtype dtype;
    int ndim;
    int64_t dims[PTQ_MAX_DIMS];
    const uint8_t *dim_param[PTQ_MAX_DIMS]; /* a symbolic dim's name in the file's bytes (NULL: none), its length */
    size_t dim_param_len[PTQ_MAX_DIMS];
} pdecl;

typedef struct loader {
    ptq_ctx *ctx;
    const char *path; /* for messages */
    const char *base_dir;
    ptq_graph_store *s;
    ptq_graph *g;
    pnode *nodes;
    int n_nodes;
    pconst *inits; /* initializers */
    int n_init;
    pconst *consts; /* tensor-valued attributes */
    int n_consts, cap_consts;
    pdecl *inputs, *outputs, *infos;
    int n_inputs, n_outputs, n_infos;
    ptq_value *values;
    int n_values;
} loader;

/* More fields of one kind than this in one message is not a model we load. */
#define MAX_COUNT (1 << 28)

static ptq_status oom(loader *L)
{
    return ptq_fail(L->ctx, PTQ_ERR_NOMEM, "%s: out of memory", L->path);
}

/* ONNX strings are UTF-8 (protobuf's string type, which onnx.load checks):
 * a tensor or node name that is not is refused, so no plan, report or
 * export carries bytes a JSON reader rejects. */
static ptq_status names_utf8(loader *L)
{
    char esc[256];
    for (int i = 0; i < L->n_values; i++)
        if (!ptq_utf8_valid(L->values[i].name))
            return ptq_fail(L->ctx, PTQ_ERR_FORMAT, "%s: tensor name \"%s\" is not UTF-8 (ONNX names are UTF-8)",
                            L->path, ptq_escape(L->values[i].name, esc, sizeof esc));
    for (int i = 0; i < L->n_nodes; i++)
        for (int k = 0; k < 3; k++) {
            const char *s = k == 0 ? L->nodes[i].name : k == 1 ? L->nodes[i].op_type : L->nodes[i].domain;
            if (s && !ptq_utf8_valid(s))
                return ptq_fail(L->ctx, PTQ_ERR_FORMAT, "%s: node %d's %s \"%s\" is not UTF-8 (ONNX names are UTF-8)",
                                L->path, i, k == 0 ? "name" : k == 1 ? "op_type" : "domain",
                                ptq_escape(s, esc, sizeof esc));
        }
    return PTQ_OK;
}

static ptq_status count_field(const ptq_pb *r, const ptq_pb_field *f, int *n)
{
    if (*n >= MAX_COUNT)
        return ptq_pb_fail(r, f->at, PTQ_ERR_UNSUPPORTED, "more than %d repeated fields", MAX_COUNT);
    (*n)++;
    return PTQ_OK;
}

static char *sdup(loader *L, const ptq_pb_field *f)
{
    return ptq_store_strndup(L->s, f->data, f->len);
}

static const char *node_label(const pnode *n, char *buf, size_t n_buf)
{
    if (n->name && n->name[0])
        snprintf(buf, n_buf, "node '%s' (%s)", n->name, n->op_type ? n->op_type : "?");
    else
        snprintf(buf, n_buf, "unnamed node at byte %zu (%s)", n->at, n->op_type ? n->op_type : "?");
    return buf;
}

/* ---- declarations: ValueInfoProto -> TypeProto -> Tensor -> TensorShapeProto ---- */

static ptq_status parse_shape(const ptq_pb *tr, const ptq_pb_field *sf, pdecl *d, int *too_many)
{
    ptq_status st = PTQ_OK;
    ptq_pb sr, dr;
    ptq_pb_field f, df;
    ptq_pb_sub(tr, sf, &shape_desc, &sr);
    d->ndim = 0;
    while (ptq_pb_more(&sr)) {
        PTQ_TRY(st, ptq_pb_next(&sr, &f), done);
        if (f.num != 1)
            continue;
        PTQ_TRY(st, ptq_pb_expect(&sr, &f, PTQ_PB_LEN), done);
        int64_t v = -1;
        const uint8_t *param = NULL;
        size_t param_len = 0;
        ptq_pb_sub(&sr, &f, &dim_desc, &dr);
        while (ptq_pb_more(&dr)) {
            PTQ_TRY(st, ptq_pb_next(&dr, &df), done);
            if (df.num == 1) {
                PTQ_TRY(st, ptq_pb_get_int64(&dr, &df, &v), done);
                if (v < 0)
                    v = -1;
                param = NULL;
            } else if (df.num == 2) {
                PTQ_TRY(st, ptq_pb_expect(&dr, &df, PTQ_PB_LEN), done);
                v = -1;
                param = df.len ? df.data : NULL;
                param_len = df.len;
            }
        }
        if (d->ndim == PTQ_MAX_DIMS) {
            *too_many = 1;
            continue;
        }
        d->dim_param[d->ndim] = param;
        d->dim_param_len[d->ndim] = param_len;
        d->dims[d->ndim++] = v;
    }
done:
    return st;
}

static ptq_status parse_decl(loader *L, const ptq_pb *gr, const ptq_pb_field *vf, const char *what, pdecl *d)
{
    ptq_status st = PTQ_OK;
    ptq_pb vr, tr, ttr;
    ptq_pb_field f, tf, ttf;
    int64_t elem = 0;
    int too_many = 0;
    memset(d, 0, sizeof *d);
    d->ndim = -1;
    d->is_tensor = 1;
    d->name = "";
    ptq_pb_sub(gr, vf, &vi_desc, &vr);
    while (ptq_pb_more(&vr)) {
        PTQ_TRY(st, ptq_pb_next(&vr, &f), done);
        if (f.num == 1) {
            PTQ_TRY(st, ptq_pb_expect(&vr, &f, PTQ_PB_LEN), done);
            if (!(d->name = sdup(L, &f)))
                return oom(L);
        } else if (f.num == 2) {
            PTQ_TRY(st, ptq_pb_expect(&vr, &f, PTQ_PB_LEN), done);
            ptq_pb_sub(&vr, &f, &type_desc, &tr);
            while (ptq_pb_more(&tr)) {
                PTQ_TRY(st, ptq_pb_next(&tr, &tf), done);
                if (tf.num == 4 || tf.num == 5 || tf.num == 8 || tf.num == 9) {
                    d->is_tensor = 0;
                } else if (tf.num == 1) {
                    PTQ_TRY(st, ptq_pb_expect(&tr, &tf, PTQ_PB_LEN), done);
                    d->is_tensor = 1;
                    ptq_pb_sub(&tr, &tf, &ttype_desc, &ttr);
                    while (ptq_pb_more(&ttr)) {
                        PTQ_TRY(st, ptq_pb_next(&ttr, &ttf), done);
                        if (ttf.num == 1) {
                            PTQ_TRY(st, ptq_pb_get_int64(&ttr, &ttf, &elem), done);
                        } else if (ttf.num == 2) {
                            PTQ_TRY(st, ptq_pb_expect(&ttr, &ttf, PTQ_PB_LEN), done);
                            PTQ_TRY(st, parse_shape(&ttr, &ttf, d, &too_many), done);
                        }
                    }
                }
            }
        }
    }
    if (!d->name[0])
        return ptq_pb_fail(gr, vf->at, PTQ_ERR_FORMAT, "%s without a name", what);
    if (elem < 0)
        return ptq_fail(L->ctx, PTQ_ERR_FORMAT, "%s: %s '%s': invalid elem_type %lld", L->path, what, d->name,
                        (long long)elem);
    if (elem > PTQ_DT_INT4)
        return ptq_fail(L->ctx, PTQ_ERR_UNSUPPORTED, "%s: %s '%s': unknown elem_type %lld", L->path, what, d->name,
                        (long long)elem);
    if (too_many)
        return ptq_fail(L->ctx, PTQ_ERR_UNSUPPORTED, "%s: %s '%s': rank above %d is not supported", L->path, what,
                        d->name, PTQ_MAX_DIMS);
    d->dtype = (ptq_dtype)elem;
done:
    return st;
}

/* ---- attributes ---- */

static const char *const attr_type_names[] = {"UNDEFINED", "FLOAT",    "INT",           "STRING",         "TENSOR",
                                              "GRAPH",     "FLOATS",   "INTS",          "STRINGS",        "TENSORS",
                                              "GRAPHS",    "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO",
                                              "TYPE_PROTOS"};

static ptq_status add_const(loader *L, const pconst *c)
{
    if (L->n_consts == L->cap_consts) {
        int cap = L->cap_consts ? 2 * L->cap_consts : 16;
        pconst *p = realloc(L->consts, (size_t)cap * sizeof *p);
        if (!p)
            return oom(L);
        L->consts = p;
        L->cap_consts = cap;
    }
    L->consts[L->n_consts++] = *c;
    return PTQ_OK;
}

static ptq_status parse_attr(loader *L, const ptq_pb *nr, const ptq_pb_field *af, int node_index, const pnode *pn,
                             ptq_attr *a)
{
    ptq_status st = PTQ_OK;
    ptq_pb ar;
    ptq_pb_field f, t_field;
    ptq_pb_scalars it;
    int64_t type = 0, n_floats = 0, n_ints = 0;
    int n_strings = 0, has_s = 0, has_t = 0, has_g = 0, has_i = 0, has_f = 0, other = 0;
    char label[320];

    ptq_pb_sub(nr, af, &attr_desc, &ar);
    a->name = "";
    a->tensor = -1;
    while (ptq_pb_more(&ar)) {
        int64_t n = 0;
        PTQ_TRY(st, ptq_pb_next(&ar, &f), done);
        switch (f.num) {
        case 1:
            PTQ_TRY(st, ptq_pb_expect(&ar, &f, PTQ_PB_LEN), done);
            if (!(a->name = sdup(L, &f)))
                return oom(L);
            break;
        case 2: PTQ_TRY(st, ptq_pb_get_float(&ar, &f, &a->f), done); has_f = 1; break;
        case 3: PTQ_TRY(st, ptq_pb_get_int64(&ar, &f, &a->i), done); has_i = 1; break;
        case 4:
            PTQ_TRY(st, ptq_pb_expect(&ar, &f, PTQ_PB_LEN), done);
            if (!(a->s = sdup(L, &f)))
                return oom(L);
            a->s_len = f.len;
            has_s = 1;
            break;
        case 5:
            PTQ_TRY(st, ptq_pb_expect(&ar, &f, PTQ_PB_LEN), done);
            t_field = f;
            has_t = 1;
            break;
        case 6: case 11: PTQ_TRY(st, ptq_pb_expect(&ar, &f, PTQ_PB_LEN), done); has_g = 1; break;
        case 7:
            PTQ_TRY(st, ptq_pb_scalars_begin(&ar, &f, PTQ_PB_KIND_FIXED32, &it, &n), done);
            n_floats += n;
            break;
        case 8:
            PTQ_TRY(st, ptq_pb_scalars_begin(&ar, &f, PTQ_PB_KIND_VARINT, &it, &n), done);
            n_ints += n;
            break;
        case 9:
            PTQ_TRY(st, ptq_pb_expect(&ar, &f, PTQ_PB_LEN), done);
            PTQ_TRY(st, count_field(&ar, &f, &n_strings), done);
            break;
        case 10: case 14: case 15: case 22: case 23: other = (int)f.num; break;
        case 20: PTQ_TRY(st, ptq_pb_get_int64(&ar, &f, &type), done); break;
        default: break;
        }
    }
    node_label(pn, label, sizeof label);
    if (!a->name[0])
        return ptq_fail(L->ctx, PTQ_ERR_FORMAT, "%s: %s: attribute at byte %zu has no name", L->path, label, af->at);
    if (type == 0) { /* IR version 1 files carry no type: tell it from the field that is set */
        type = n_floats ? PTQ_ATTR_FLOATS
               : n_ints ? PTQ_ATTR_INTS
               : n_strings ? PTQ_ATTR_STRINGS
               : has_t ? PTQ_ATTR_TENSOR
               : has_g ? PTQ_ATTR_GRAPH
               : has_s ? PTQ_ATTR_STRING
               : has_i ? PTQ_ATTR_INT
               : has_f ? PTQ_ATTR_FLOAT
               : other ? -1
                       : 0;
        if (type == 0)
            return ptq_fail(L->ctx, PTQ_ERR_FORMAT, "%s: %s: attribute '%s' has neither a type nor a value", L->path,
                            label, a->name);
        if (type == -1)
            return ptq_fail(L->ctx, PTQ_ERR_UNSUPPORTED, "%s: %s: attribute '%s' holds %s, which ptq does not "
                                                         "support", L->path, label, a->name, attr_fields[other]);
    }
    if (type == 10) {
        type = PTQ_ATTR_GRAPH; /* subgraphs are recorded, not loaded */
    } else if (type > PTQ_ATTR_STRINGS && type <= 14) {
        return ptq_fail(L->ctx, PTQ_ERR_UNSUPPORTED, "%s: %s: attribute '%s' of type %s is not supported", L->path,
                        label, a->name, attr_type_names[type]);
    } else if (type < 0 || type > 14) {
        return ptq_fail(L->ctx, PTQ_ERR_FORMAT, "%s: %s: attribute '%s' has unknown type %lld", L->path, label,
                        a->name, (long long)type);
    }
    a->type = (ptq_attr_type)type;
    if (a->type == PTQ_ATTR_TENSOR && !has_t)
        return ptq_fail(L->ctx, PTQ_ERR_FORMAT, "%s: %s: attribute '%s' has type TENSOR but no tensor", L->path,
                        label, a->name);
    if (!a->s) {
        a->s = "";
        a->s_len = 0;
    }
    if (n_floats > MAX_COUNT || n_ints > MAX_COUNT)
        return ptq_fail(L->ctx, PTQ_ERR_UNSUPPORTED, "%s: %s: attribute '%s' has too many values", L->path, label,
                        a->name);

    /* second pass: the repeated values */
    float *floats = ptq_store_alloc(L->s, (size_t)n_floats * sizeof *floats);
    int64_t *ints = ptq_store_alloc(L->s, (size_t)n_ints * sizeof *ints);
    const char **strings = ptq_store_alloc(L->s, (size_t)n_strings * sizeof *strings);
    if (!floats || !ints || !strings)
        return oom(L);
    int64_t k_f = 0, k_i = 0;
    int k_s = 0;
    ptq_pb_sub(nr, af, &attr_desc, &ar);
    while (ptq_pb_more(&ar)) {
        int64_t n = 0;
        uint64_t v;
        PTQ_TRY(st, ptq_pb_next(&ar, &f), done);
        if (f.num == 7) {
            PTQ_TRY(st, ptq_pb_scalars_begin(&ar, &f, PTQ_PB_KIND_FIXED32, &it, &n), done);
            while (ptq_pb_scalars_next(&it, &v)) {
                uint32_t bits = (uint32_t)v;
                memcpy(&floats[k_f++], &bits, sizeof bits);
            }
        } else if (f.num == 8) {
            PTQ_TRY(st, ptq_pb_scalars_begin(&ar, &f, PTQ_PB_KIND_VARINT, &it, &n), done);
            while (ptq_pb_scalars_next(&it, &v))
                ints[k_i++] = (int64_t)v;
        } else if (f.num == 9) {
            if (!(strings[k_s++] = sdup(L, &f)))
                return oom(L);
        }
    }
    a->n = a->type == PTQ_ATTR_FLOATS ? n_floats : a->type == PTQ_ATTR_INTS ? n_ints
                                                 : a->type == PTQ_ATTR_STRINGS ? n_strings : 0;
    a->floats = floats;
    a->ints = ints;
    a->strings = (const char *const *)strings;

    if (has_t && a->type == PTQ_ATTR_TENSOR) {
        pconst c;
        ptq_pb tr;
        char role[400];
        memset(&c, 0, sizeof c);
        snprintf(role, sizeof role, "%s attribute '%s' tensor", label, a->name);
        ptq_pb_sub(&ar, &t_field, &ptq_pb_tensor_desc, &tr);
        PTQ_TRY(st, ptq_pb_tensor_parse(&tr, role, &c.t), done);
        c.value = -1;
        c.node = node_index;
        c.attr = a;
        PTQ_TRY(st, add_const(L, &c), done);
    }
done:
    return st;
}

/* ---- nodes ---- */

static int cmp_attr_name(const void *a, const void *b)
{
    return strcmp((*(const ptq_attr *const *)a)->name, (*(const ptq_attr *const *)b)->name);
}

/* Attribute names are unique within a node (sorted copy: no quadratic scan). */
static ptq_status check_attr_names(loader *L, const pnode *pn)
{
    char label[320];
    if (pn->n_attrs < 2)
        return PTQ_OK;
    const ptq_attr **sorted = malloc((size_t)pn->n_attrs * sizeof *sorted);
    if (!sorted)
        return oom(L);
    for (int i = 0; i < pn->n_attrs; i++)
        sorted[i] = &pn->attrs[i];
    qsort(sorted, (size_t)pn->n_attrs, sizeof *sorted, cmp_attr_name);
    ptq_status st = PTQ_OK;
    for (int i = 1; i < pn->n_attrs && st == PTQ_OK; i++)
        if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0)
            st = ptq_fail(L->ctx, PTQ_ERR_FORMAT, "%s: %s: attribute '%s' appears twice", L->path,
                          node_label(pn, label, sizeof label), sorted[i]->name);
    free(sorted);
    return st;
}

static ptq_status parse_node(loader *L, const ptq_pb *gr, const ptq_pb_field *nf, int node_index, pnode *pn)
{
    ptq_status st = PTQ_OK;
    ptq_pb nr;
    ptq_pb_field f;

    memset(pn, 0, sizeof *pn);
    pn->name = pn->op_type = pn->domain = "";
    pn->at = nf->at;
    ptq_pb_sub(gr, nf, &node_desc, &nr);
    while (ptq_pb_more(&nr)) {
        PTQ_TRY(st, ptq_pb_next(&nr, &f), done);
        if (f.num <= 5 || f.num == 7)
            PTQ_TRY(st, ptq_pb_expect(&nr, &f, PTQ_PB_LEN), done);
        switch (f.num) {
        case 1: PTQ_TRY(st, count_field(&nr, &f, &pn->n_in), done); break;
        case 2: PTQ_TRY(st, count_field(&nr, &f, &pn->n_out), done); break;
        case 5: PTQ_TRY(st, count_field(&nr, &f, &pn->n_attrs), done); break;
        case 3: case 4: case 7: {
            char *str = sdup(L, &f);
            if (!str)
                return oom(L);
            if (f.num == 3)
                pn->name = str;
            else if (f.num == 4)
                pn->op_type = str;
            else
                pn->domain = str;
            break;
        }
        default: break;
        }
    }
    if (!pn->op_type[0])
        return ptq_pb_fail(gr, nf->at, PTQ_ERR_FORMAT, "node %d ('%s') has no op_type", node_index, pn->name);
    pn->in_names = ptq_store_alloc(L->s, (size_t)pn->n_in * sizeof *pn->in_names);
    pn->out_names = ptq_store_alloc(L->s, (size_t)pn->n_out * sizeof *pn->out_names);
    pn->in = ptq_store_alloc(L->s, (size_t)pn->n_in * sizeof *pn->in);
    pn->out = ptq_store_alloc(L->s, (size_t)pn->n_out * sizeof *pn->out);
    pn->attrs = ptq_store_alloc(L->s, (size_t)pn->n_attrs * sizeof *pn->attrs);
    if (!pn->in_names || !pn->out_names || !pn->in || !pn->out || !pn->attrs)
        return oom(L);
    int k_in = 0, k_out = 0, k_attr = 0;
    ptq_pb_sub(gr, nf, &node_desc, &nr);
    while (ptq_pb_more(&nr)) {
        PTQ_TRY(st, ptq_pb_next(&nr, &f), done);
        if (f.num == 1 || f.num == 2) {
            char *str = sdup(L, &f);
            if (!str)
                return oom(L);
            if (f.num == 1)
                pn->in_names[k_in++] = str;
            else
                pn->out_names[k_out++] = str;
        } else if (f.num == 5) {
            PTQ_TRY(st, parse_attr(L, &nr, &f, node_index, pn, &pn->attrs[k_attr++]), done);
        }
    }
    PTQ_TRY(st, check_attr_names(L, pn), done);
done:
    return st;
}

/* ---- ModelProto and GraphProto ---- */

static ptq_status parse_graph(loader *L, const ptq_pb *mr, const ptq_pb_field *gf)
{
    ptq_status st = PTQ_OK;
    ptq_pb gr;
    ptq_pb_field f;
    int n_nodes = 0, n_init = 0;

    ptq_pb_sub(mr, gf, &graph_desc, &gr);
    while (ptq_pb_more(&gr)) {
        PTQ_TRY(st, ptq_pb_next(&gr, &f), done);
        switch (f.num) {
        case 1: case 5: case 11: case 12: case 13:
            PTQ_TRY(st, ptq_pb_expect(&gr, &f, PTQ_PB_LEN), done);
            PTQ_TRY(st, count_field(&gr, &f,
                                    f.num == 1   ? &n_nodes
                                    : f.num == 5 ? &n_init
                                    : f.num == 11 ? &L->n_inputs
                                    : f.num == 12 ? &L->n_outputs
                                                  : &L->n_infos),
                    done);
            break;
        case 2:
            PTQ_TRY(st, ptq_pb_expect(&gr, &f, PTQ_PB_LEN), done);
            if (!(L->g->name = sdup(L, &f)))
                return oom(L);
            break;
        case 15:
            return ptq_pb_fail(&gr, f.at, PTQ_ERR_UNSUPPORTED, "sparse_initializer is not supported");
        default: break;
        }
    }
    L->nodes = calloc((size_t)n_nodes + 1, sizeof *L->nodes);
    L->inputs = calloc((size_t)L->n_inputs + 1, sizeof *L->inputs);
    L->outputs = calloc((size_t)L->n_outputs + 1, sizeof *L->outputs);
    L->infos = calloc((size_t)L->n_infos + 1, sizeof *L->infos);
    L->inits = calloc((size_t)n_init + 1, sizeof *L->inits);
    if (!L->nodes || !L->inputs || !L->outputs || !L->infos || !L->inits)
        return oom(L);
    int k_in = 0, k_out = 0, k_info = 0;
    ptq_pb_sub(mr, gf, &graph_desc, &gr);
    while (ptq_pb_more(&gr)) {
        PTQ_TRY(st, ptq_pb_next(&gr, &f), done);
        if (f.num == 1) {
            PTQ_TRY(st, parse_node(L, &gr, &f, L->n_nodes, &L->nodes[L->n_nodes]), done);
            L->n_nodes++;
        } else if (f.num == 5) {
            ptq_pb tr;
            pconst *c = &L->inits[L->n_init++];
            ptq_pb_sub(&gr, &f, &ptq_pb_tensor_desc, &tr);
            PTQ_TRY(st, ptq_pb_tensor_parse(&tr, "initializer", &c->t), done);
            c->value = -1;
            c->node = -1;
        } else if (f.num == 11) {
            PTQ_TRY(st, parse_decl(L, &gr, &f, "graph input", &L->inputs[k_in++]), done);
        } else if (f.num == 12) {
            PTQ_TRY(st, parse_decl(L, &gr, &f, "graph output", &L->outputs[k_out++]), done);
        } else if (f.num == 13) {
            PTQ_TRY(st, parse_decl(L, &gr, &f, "value_info", &L->infos[k_info++]), done);
        }
    }
done:
    return st;
}

/* The default domain's opset, as onnxruntime checks it: from IR version 3 a
 * model imports it when any node is in it (else ptq would read each op at a
 * version the model never meant), at version 1 or more, and at most the
 * newest ptq knows; a model with no opset_import at all is refused too. */
static ptq_status check_opset(loader *L, int have_default)
{
    const ptq_graph *g = L->g;
    char label[PTQ_MSG_BYTES / 2];
    if (have_default || g->ir_version < 3) {
        if (g->opset < 1)
            return ptq_fail(L->ctx, PTQ_ERR_FORMAT, "%s: model imports no ai.onnx opset (it imports version %lld)",
                            L->path, (long long)g->opset);
        if (g->opset > PTQ_ONNX_OPSET_NEWEST)
            return ptq_fail(L->ctx, PTQ_ERR_UNSUPPORTED,
                            "%s: model is at ai.onnx opset %lld; the newest ONNX opset ptq knows is %d", L->path,
                            (long long)g->opset, PTQ_ONNX_OPSET_NEWEST);
        return PTQ_OK;
    }
    if (g->n_opsets == 0)
        return ptq_fail(L->ctx, PTQ_ERR_FORMAT, "%s: model imports no ai.onnx opset (its opset_import is empty)",
                        L->path);
    for (int i = 0; i < L->n_nodes; i++) {
        const char *domain = L->nodes[i].domain;
        if (!domain || !domain[0] || strcmp(domain, "ai.onnx") == 0)
            return ptq_fail(L->ctx, PTQ_ERR_FORMAT, "%s: model imports no ai.onnx opset, but %s is an ai.onnx op",
                            L->path, node_label(&L->nodes[i], label, sizeof label));
    }
    return PTQ_OK;
}

static ptq_status parse_model(loader *L, const uint8_t *bytes, size_t n_bytes)
{
    ptq_status st = PTQ_OK;
    ptq_pb mr, sr;
    ptq_pb_field f, sf, gf;
    int has_graph = 0, n_opsets = 0, n_meta = 0;
    ptq_graph *g = L->g;

    ptq_pb_init(&mr, L->ctx, L->path, bytes, n_bytes, &model_desc);
    while (ptq_pb_more(&mr)) {
        PTQ_TRY(st, ptq_pb_next(&mr, &f), done);
        switch (f.num) {
        case 1: PTQ_TRY(st, ptq_pb_get_int64(&mr, &f, &g->ir_version), done); break;
        case 2:
            PTQ_TRY(st, ptq_pb_expect(&mr, &f, PTQ_PB_LEN), done);
            if (!(g->producer = sdup(L, &f)))
                return oom(L);
            break;
        case 7:
            PTQ_TRY(st, ptq_pb_expect(&mr, &f, PTQ_PB_LEN), done);
            if (has_graph)
                return ptq_pb_fail(&mr, f.at, PTQ_ERR_FORMAT, "a second graph field");
            gf = f;
            has_graph = 1;
            break;
        case 8: case 14:
            PTQ_TRY(st, ptq_pb_expect(&mr, &f, PTQ_PB_LEN), done);
            PTQ_TRY(st, count_field(&mr, &f, f.num == 8 ? &n_opsets : &n_meta), done);
            break;
        default: break;
        }
    }
    if (!has_graph)
        return ptq_fail(L->ctx, PTQ_ERR_FORMAT, "%s: not an ONNX model: ModelProto has no graph (%zu bytes)", L->path,
                        n_bytes);
    ptq_opset *opsets = ptq_store_alloc(L->s, (size_t)n_opsets * sizeof *opsets);
    ptq_meta *meta = ptq_store_alloc(L->s, (size_t)n_meta * sizeof *meta);
    if (!opsets || !meta)
        return oom(L);
    g->opsets = opsets;
    g->meta = meta;
    int have_default = 0;
    ptq_pb_init(&mr, L->ctx, L->path, bytes, n_bytes, &model_desc);
    while (ptq_pb_more(&mr)) {
        PTQ_TRY(st, ptq_pb_next(&mr, &f), done);
        if (f.num != 8 && f.num != 14)
            continue;
        const char *a = "", *b = "";
        int64_t version = 0;
        ptq_pb_sub(&mr, &f, f.num == 8 ? &opset_desc : &ptq_pb_entry_desc, &sr);
        while (ptq_pb_more(&sr)) {
            PTQ_TRY(st, ptq_pb_next(&sr, &sf), done);
            if (sf.num == 1 || (sf.num == 2 && f.num == 14)) {
                PTQ_TRY(st, ptq_pb_expect(&sr, &sf, PTQ_PB_LEN), done);
                char *str = sdup(L, &sf);
                if (!str)
                    return oom(L);
                *(sf.num == 1 ? &a : &b) = str;
            } else if (sf.num == 2) {
                PTQ_TRY(st, ptq_pb_get_int64(&sr, &sf, &version), done);
            }
        }
        if (f.num == 8) {
            opsets[g->n_opsets].domain = a;
            opsets[g->n_opsets++].version = version;
            if (!a[0] || strcmp(a, "ai.onnx") == 0) {
                g->opset = version;
                have_default = 1;
            }
        } else {
            meta[g->n_meta].key = a;
            meta[g->n_meta++].value = b;
        }
    }
    if (!have_default) /* IR version < 3 predates opset_import and means opset 1 */
        g->opset = g->ir_version < 3 ? 1 : 0;
    PTQ_TRY(st, parse_graph(L, &mr, &gf), done);
    st = check_opset(L, have_default);
done:
    return st;
}

/* ---- values, topological order, weights ---- */

static int new_value(loader *L, const char *name, unsigned flags, int producer)
{
    int k = L->n_values++;
    ptq_value *v = &L->values[k];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->ndim = -1;
    v->producer = producer;
    v->flags = flags;
    return k;
}

static void apply_decl(ptq_value *v, const pdecl *d)
{
    if (d->dtype != PTQ_DT_UNDEFINED)
        v->dtype = d->dtype;
    if (d->ndim >= 0) {
        v->ndim = d->ndim;
        memcpy(v->dims, d->dims, sizeof v->dims);
    }
}

static void set_const_value(ptq_value *v, const ptq_pb_tensor *t)
{
    v->dtype = t->dtype;
    v->ndim = t->ndim;
    memcpy(v->dims, t->dims, sizeof v->dims);
    v->n_bytes = t->n_bytes;
}

static ptq_status build_values(loader *L)
{
    char label[320];
    int64_t n_max = (int64_t)L->n_init + L->n_inputs + L->n_consts;
    for (int i = 0; i < L->n_nodes; i++)
        n_max += L->nodes[i].n_out;
    if (n_max > MAX_COUNT)
        return ptq_fail(L->ctx, PTQ_ERR_UNSUPPORTED, "%s: %lld tensors is more than ptq loads", L->path,
                        (long long)n_max);
    L->values = ptq_store_alloc(L->s, (size_t)n_max * sizeof *L->values);
    if (!L->values || !ptq_store_index_init(L->s, (size_t)n_max))
        return oom(L);

    for (int i = 0; i < L->n_init; i++) {
        pconst *c = &L->inits[i];
        char *name = ptq_store_strndup(L->s, c->t.name ? c->t.name : (const uint8_t *)"", c->t.name_len);
        if (!name)
            return oom(L);
        if (!name[0])
            return ptq_fail(L->ctx, PTQ_ERR_FORMAT, "%s: initializer %d has no name", L->path, i);
        if (ptq_store_index_find(L->s, L->values, name) >= 0)
            return ptq_fail(L->ctx, PTQ_ERR_FORMAT, "%s: initializer '%s' appears twice", L->path, name);
        c->value = new_value(L, name, PTQ_VALUE_INITIALIZER, -1);
        set_const_value(&L->values[c->value], &c->t);
        ptq_store_index_add(L->s, L->values, c->value);
    }

    int *inputs = ptq_store_alloc(L->s, (size_t)L->n_inputs * sizeof *inputs);
    const char *(*dim_names)[PTQ_MAX_DIMS] = ptq_store_alloc(L->s, ((size_t)L->n_inputs + 1) * sizeof *dim_names);
    if (!inputs || !dim_names)
        return oom(L);
    L->s->input_dim_names = dim_names;
    L->g->inputs = inputs;
    for (int i = 0; i < L->n_inputs; i++) {
        const pdecl *d = &L->inputs[i];
        int k = ptq_store_index_find(L->s, L->values, d->name);
        if (k >= 0 && (L->values[k].flags & PTQ_VALUE_INITIALIZER))
            continue; /* old exporters list initializers among the inputs: they are not fed */
        if (k >= 0)
            return ptq_fail(L->ctx, PTQ_ERR_FORMAT, "%s: graph input '%s' is listed twice", L->path, d->name);
        if (!d->is_tensor)
            return ptq_fail(L->ctx, PTQ_ERR_UNSUPPORTED, "%s: graph input '%s' is not a tensor (sequence, map, "
                                                         "optional or sparse)", L->path, d->name);
        k = new_value(L, d->name, PTQ_VALUE_INPUT, -1);
        apply_decl(&L->values[k], d);
        ptq_store_index_add(L->s, L->values, k);
        for (int a = 0; a < d->ndim; a++) /* ptq_graph_input_dim_name */
            if (d->dim_param[a] && !(dim_names[L->g->n_inputs][a] =
                                         ptq_store_strndup(L->s, d->dim_param[a], d->dim_param_len[a])))
                return oom(L);
        inputs[L->g->n_inputs++] = k;
    }

    /* node outputs, producer = file index of the node for now */
    for (int i = 0; i < L->n_nodes; i++) {
        pnode *pn = &L->nodes[i];
        for (int j = 0; j < pn->n_out; j++) {
            const char *name = pn->out_names[j];
            pn->out[j] = -1;
            if (!name[0])
                continue;
            int k = ptq_store_index_find(L->s, L->values, name);
            if (k >= 0) {
                const ptq_value *v = &L->values[k];
                char other[320];
                if (v->producer >= 0)
                    node_label(&L->nodes[v->producer], other, sizeof other);
                return ptq_fail(L->ctx, PTQ_ERR_FORMAT, "%s: %s: output '%s' is already %s%s", L->path,
                                node_label(pn, label, sizeof label), name,
                                v->producer >= 0 ? "produced by " : "",
                                v->producer >= 0                         ? other
                                : (v->flags & PTQ_VALUE_INITIALIZER)     ? "an initializer"
                                                                         : "a graph input");
            }
            pn->out[j] = new_value(L, name, 0, i);
            ptq_store_index_add(L->s, L->values, pn->out[j]);
        }
    }
    for (int i = 0; i < L->n_nodes; i++) {
        pnode *pn = &L->nodes[i];
        for (int j = 0; j < pn->n_in; j++) {
            const char *name = pn->in_names[j];
            pn->in[j] = name[0] ? ptq_store_index_find(L->s, L->values, name) : -1;
            if (name[0] && pn->in[j] < 0)
                return ptq_fail(L->ctx, PTQ_ERR_FORMAT, "%s: %s: input '%s' is not produced by any node, graph "
                                                        "input or initializer", L->path,
                                node_label(pn, label, sizeof label), name);
        }
    }
    return PTQ_OK;
}

static void heap_push(int *heap, int *n, int v)
{
    int i = (*n)++;
    while (i > 0 && heap[(i - 1) / 2] > v) {
        heap[i] = heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    heap[i] = v;
}

static int heap_pop(int *heap, int *n)
{
    int top = heap[0], last = heap[--(*n)], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && heap[c + 1] < heap[c])
            c++;
        if (heap[c] >= last)
            break;
        heap[i] = heap[c];
        i = c;
    }
    if (*n > 0)
        heap[i] = last;
    return top;
}

/* Kahn's algorithm; among ready nodes the one earliest in the file goes first,
 * so a file already in order keeps its order. order[k] = file index of the k-th node. */
static ptq_status topo_sort(loader *L, int *order)
{
    ptq_status st = PTQ_OK;
    int n = L->n_nodes, n_heap = 0, n_done = 0;
    int64_t n_edges = 0;
    for (int i = 0; i < n; i++)
        n_edges += L->nodes[i].n_in;
    if (n_edges > MAX_COUNT)
        return ptq_fail(L->ctx, PTQ_ERR_UNSUPPORTED, "%s: %lld node inputs is more than ptq loads", L->path,
                        (long long)n_edges);
    int *indeg = calloc((size_t)n + 1, sizeof *indeg);
    int *first = calloc((size_t)n + 2, sizeof *first);
    int *adj = calloc((size_t)n_edges + 1, sizeof *adj);
    int *heap = calloc((size_t)n + 1, sizeof *heap);
    int *fill = calloc((size_t)n + 1, sizeof *fill);
    if (!indeg || !first || !adj || !heap || !fill) {
        st = oom(L);
        goto done;
    }
    for (int j = 0; j < n; j++)
        for (int k = 0; k < L->nodes[j].n_in; k++) {
            int v = L->nodes[j].in[k];
            int p = v >= 0 ? L->values[v].producer : -1;
            if (p >= 0) {
                indeg[j]++;
                first[p + 1]++;
            }
        }
    for (int i = 0; i < n; i++)
        first[i + 1] += first[i];
    for (int j = 0; j < n; j++)
        for (int k = 0; k < L->nodes[j].n_in; k++) {
            int v = L->nodes[j].in[k];
            int p = v >= 0 ? L->values[v].producer : -1;
            if (p >= 0)
                adj[first[p] + fill[p]++] = j;
        }
    for (int i = 0; i < n; i++)
        if (indeg[i] == 0)
            heap_push(heap, &n_heap, i);
    while (n_heap > 0) {
        int i = heap_pop(heap, &n_heap);
        order[n_done++] = i;
        for (int e = first[i]; e < first[i + 1]; e++)
            if (--indeg[adj[e]] == 0)
                heap_push(heap, &n_heap, adj[e]);
    }
    if (n_done < n) {
        char a[320], b[320];
        for (int j = 0; j < n; j++) {
            if (indeg[j] == 0)
                continue;
            const pnode *pn = &L->nodes[j];
            for (int k = 0; k < pn->n_in; k++) {
                int v = pn->in[k];
                int p = v >= 0 ? L->values[v].producer : -1;
                if (p >= 0 && indeg[p] > 0) {
                    st = ptq_fail(L->ctx, PTQ_ERR_FORMAT, "%s: the graph has a cycle: %s needs '%s' from %s, which "
                                                          "depends on it", L->path, node_label(pn, a, sizeof a),
                                  L->values[v].name, node_label(&L->nodes[p], b, sizeof b));
                    goto done;
                }
            }
        }
        st = ptq_fail(L->ctx, PTQ_ERR_INTERNAL, "%s: topological sort stalled", L->path);
    }
done:
    free(indeg);
    free(first);
    free(adj);
    free(heap);
    free(fill);
    return st;
}

static ptq_status finish_nodes(loader *L, const int *order)
{
    int n = L->n_nodes;
    ptq_node *nodes = ptq_store_alloc(L->s, (size_t)n * sizeof *nodes);
    int *pos = calloc((size_t)n + 1, sizeof *pos);
    if (!nodes || !pos) {
        free(pos);
        return oom(L);
    }
    for (int k = 0; k < n; k++)
        pos[order[k]] = k;
    for (int k = 0; k < L->n_values; k++)
        if (L->values[k].producer >= 0)
            L->values[k].producer = pos[L->values[k].producer];
    free(pos);
    for (int k = 0; k < n; k++) {
        pnode *pn = &L->nodes[order[k]];
        if (!pn->name[0]) {
            size_t len = strlen(pn->op_type) + 16;
            char *name = ptq_store_alloc(L->s, len);
            if (!name)
                return oom(L);
            snprintf(name, len, "%s_%d", pn->op_type, k);
            pn->name = name;
        }
        ptq_node *nd = &nodes[k];
        nd->name = pn->name;
        nd->op_type = pn->op_type;
        nd->domain = pn->domain;
        nd->n_inputs = pn->n_in;
        nd->n_outputs = pn->n_out;
        nd->inputs = pn->in;
        nd->outputs = pn->out;
        nd->n_attrs = pn->n_attrs;
        nd->attrs = pn->attrs;
    }
    L->g->nodes = nodes;
    L->g->n_nodes = n;

    /* tensor-valued attributes become constant values, outside the name index */
    for (int i = 0; i < L->n_consts; i++) {
        pconst *c = &L->consts[i];
        const pnode *pn = &L->nodes[c->node];
        char *name;
        if (c->t.name_len) {
            name = ptq_store_strndup(L->s, c->t.name, c->t.name_len);
        } else {
            size_t len = strlen(pn->name) + 1 + strlen(c->attr->name);
            name = ptq_store_alloc(L->s, len + 1);
            if (name)
                snprintf(name, len + 1, "%s.%s", pn->name, c->attr->name);
        }
        if (!name)
            return oom(L);
        c->value = new_value(L, name, PTQ_VALUE_CONSTANT, -1);
        set_const_value(&L->values[c->value], &c->t);
        c->attr->tensor = c->value;
    }
    return PTQ_OK;
}

static ptq_status finish_decls(loader *L)
{
    for (int i = 0; i < L->n_infos; i++) {
        int k = ptq_store_index_find(L->s, L->values, L->infos[i].name);
        if (k >= 0 && L->values[k].producer >= 0 && L->infos[i].is_tensor)
            apply_decl(&L->values[k], &L->infos[i]);
    }
    int *outputs = ptq_store_alloc(L->s, (size_t)L->n_outputs * sizeof *outputs);
    if (!outputs)
        return oom(L);
    for (int i = 0; i < L->n_outputs; i++) {
        const pdecl *d = &L->outputs[i];
        int k = ptq_store_index_find(L->s, L->values, d->name);
        if (k < 0)
            return ptq_fail(L->ctx, PTQ_ERR_FORMAT, "%s: graph output '%s' is not produced by any node, graph input "
                                                    "or initializer", L->path, d->name);
        if (!d->is_tensor)
            return ptq_fail(L->ctx, PTQ_ERR_UNSUPPORTED, "%s: graph output '%s' is not a tensor (sequence, map, "
                                                         "optional or sparse)", L->path, d->name);
        L->values[k].flags |= PTQ_VALUE_OUTPUT;
        if (L->values[k].producer >= 0)
            apply_decl(&L->values[k], d);
        outputs[i] = k;
    }
    L->g->outputs = outputs;
    L->g->n_outputs = L->n_outputs;
    return PTQ_OK;
}

/* Constant data: borrowed from the file bytes where aligned for the dtype,
 * else copied or decoded into one weight block of 64-byte aligned slots. */
static const char *const_role(const loader *L, const pconst *c, char *buf, size_t n_buf)
{
    char label[320];
    if (c->attr)
        snprintf(buf, n_buf, "%s attribute '%s' tensor", node_label(&L->nodes[c->node], label, sizeof label),
                 c->attr->name);
    else
        snprintf(buf, n_buf, "initializer");
    return buf;
}

static ptq_status place_weights(loader *L)
{
    static const uint64_t empty_data[1];
    ptq_status st = PTQ_OK;
    char role[400];
    size_t total = 0;
    int n_all = L->n_init + L->n_consts;
    size_t *slot = calloc((size_t)n_all + 1, sizeof *slot);
    if (!slot)
        return oom(L);
    for (int i = 0; i < n_all; i++) {
        pconst *c = i < L->n_init ? &L->inits[i] : &L->consts[i - L->n_init];
        ptq_value *v = &L->values[c->value];
        slot[i] = SIZE_MAX;
        if (c->t.n_bytes == 0) {
            v->data = empty_data;
        } else if (c->t.kind == PTQ_PB_DATA_RAW && (uintptr_t)c->t.raw % ptq_pb_dtype_align(c->t.dtype) == 0) {
            v->data = c->t.raw;
        } else {
            size_t need = (c->t.n_bytes + WEIGHT_ALIGN - 1) / WEIGHT_ALIGN * WEIGHT_ALIGN;
            if (c->t.kind == PTQ_PB_DATA_EXTERNAL)
                PTQ_TRY(st, ptq_pb_tensor_check_external(&c->t, const_role(L, c, role, sizeof role), L->base_dir),
                        done);
            if (need < c->t.n_bytes || total > SIZE_MAX - need) {
                st = ptq_fail(L->ctx, PTQ_ERR_NOMEM, "%s: constants need more than %zu bytes", L->path, SIZE_MAX);
                goto done;
            }
            slot[i] = total;
            total += need;
        }
    }
    if (total) {
        L->s->weights = aligned_alloc(WEIGHT_ALIGN, total);
        if (!L->s->weights) {
            st = ptq_fail(L->ctx, PTQ_ERR_NOMEM, "%s: out of memory for %zu bytes of weights", L->path, total);
            goto done;
        }
        L->s->weight_bytes = total;
    }
    for (int i = 0; i < n_all; i++) {
        if (slot[i] == SIZE_MAX)
            continue;
        pconst *c = i < L->n_init ? &L->inits[i] : &L->consts[i - L->n_init];
        uint8_t *dst = (uint8_t *)L->s->weights + slot[i];
        if (c->t.kind == PTQ_PB_DATA_EXTERNAL) {
            PTQ_TRY(st, ptq_pb_tensor_read_external(&c->t, const_role(L, c, role, sizeof role), L->base_dir, dst),
                    done);
        } else {
            ptq_pb_tensor_decode(&c->t, dst);
        }
        L->values[c->value].data = dst;
    }
done:
    free(slot);
    return st;
}

static void loader_free(loader *L)
{
    free(L->nodes);
    free(L->inits);
    free(L->consts);
    free(L->inputs);
    free(L->outputs);
    free(L->infos);
}

/* Takes ownership of map (may be NULL) whatever happens. */
static ptq_status load(ptq_ctx *ctx, const char *path, const uint8_t *bytes, size_t n_bytes, const char *base_dir,
                       void *map, ptq_graph **out)
{
    ptq_status st = PTQ_OK;
    loader L;
    int *order = NULL;
    memset(&L, 0, sizeof L);
    L.ctx = ctx;
    L.path = path;
    L.base_dir = base_dir;
    *out = NULL;
    L.s = ptq_store_create();
    if (!L.s) {
        if (map)
            munmap(map, n_bytes);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "%s: out of memory", path);
    }
    L.s->map = map;
    L.s->map_bytes = map ? n_bytes : 0;
    L.g = ptq_store_alloc(L.s, sizeof *L.g);
    if (!L.g || !(L.g->path = ptq_store_strndup(L.s, path, strlen(path)))) {
        st = oom(&L);
        goto done;
    }
    L.g->store = L.s;
    L.g->name = L.g->producer = "";
    PTQ_TRY(st, parse_model(&L, bytes, n_bytes), done);
    PTQ_TRY(st, build_values(&L), done);
    PTQ_TRY(st, names_utf8(&L), done);
    order = calloc((size_t)L.n_nodes + 1, sizeof *order);
    if (!order) {
        st = oom(&L);
        goto done;
    }
    PTQ_TRY(st, topo_sort(&L, order), done);
    PTQ_TRY(st, finish_nodes(&L, order), done);
    PTQ_TRY(st, finish_decls(&L), done);
    PTQ_TRY(st, place_weights(&L), done);
    L.g->values = L.values;
    L.g->n_values = L.n_values;
    *out = L.g;
    L.s = NULL; /* the graph owns its store now */
done:
    free(order);
    loader_free(&L);
    ptq_store_free(L.s);
    return st;
}

ptq_status ptq_graph_load_onnx_bytes(ptq_ctx *ctx, const void *bytes, size_t n_bytes, const char *base_dir,
                                     ptq_graph **out)
{
    *out = NULL;
    if (!bytes && n_bytes)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "ptq_graph_load_onnx_bytes: NULL bytes");
    return load(ctx, "<memory>", bytes ? bytes : (const void *)"", n_bytes, base_dir, NULL, out);
}

ptq_status ptq_graph_load_onnx_owned(ptq_ctx *ctx, const char *path, void *bytes, size_t n_bytes, ptq_graph **out)
{
    ptq_status st = load(ctx, path, bytes, n_bytes, NULL, NULL, out);
    if (st == PTQ_OK)
        (*out)->store->owned = bytes;
    else
        free(bytes);
    return st;
}

ptq_status ptq_graph_load_onnx(ptq_ctx *ctx, const char *path, ptq_graph **out)
{
    struct stat sb;
    *out = NULL;
    int fd;
    PTQ_TRY_RET(ptq_file_open_read(ctx, path, &fd));
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return ptq_fail(ctx, PTQ_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    }
    if (sb.st_size == 0) {
        close(fd);
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "%s: empty file, not an ONNX model", path);
    }
    size_t n = (size_t)sb.st_size;
    void *map = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd);
    if (map == MAP_FAILED)
        return ptq_fail(ctx, PTQ_ERR_IO, "%s: cannot map %zu bytes: %s", path, n, strerror(map_errno));
    if (ptq_keras_is_hdf5(map, n)) { /* a Keras model: its ONNX form is built and loaded instead */
        munmap(map, n);
        return ptq_graph_load_keras(ctx, path, out);
    }
    char *dir = ptq_pb_dirname(path);
    if (!dir) {
        munmap(map, n);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "%s: out of memory", path);
    }
    ptq_status st = load(ctx, path, map, n, dir, map, out);
    free(dir);
    return st;
}
