/* Graph IR lookups (attributes, values by name, metadata), the graph store's
 * arena and name index, and ptq_graph_free. Covered by tests/test_onnx_load.c. */
#define _POSIX_C_SOURCE 200809L

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "model/graph_store.h"

#define CHUNK_BYTES ((size_t)64 * 1024)

struct ptq_store_chunk {
    ptq_store_chunk *next;
    size_t used, cap;
    alignas(max_align_t) unsigned char data[];
};

ptq_graph_store *ptq_store_create(void)
{
    return calloc(1, sizeof(ptq_graph_store));
}

void ptq_store_free(ptq_graph_store *s)
{
    if (!s)
        return;
    if (s->map)
        munmap(s->map, s->map_bytes);
    free(s->weights);
    free(s->owned);
    free(s->name_slots);
    for (ptq_store_chunk *c = s->chunks, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(s);
}

void *ptq_store_alloc(ptq_graph_store *s, size_t n_bytes)
{
    const size_t align = alignof(max_align_t);
    if (n_bytes > SIZE_MAX / 2)
        return NULL;
    n_bytes = (n_bytes + align - 1) / align * align;
    ptq_store_chunk *c = s->chunks;
    if (!c || c->cap - c->used < n_bytes) {
        size_t cap = n_bytes > CHUNK_BYTES ? n_bytes : CHUNK_BYTES;
        ptq_store_chunk *fresh = malloc(sizeof *fresh + cap);
        if (!fresh)
            return NULL;
        fresh->used = 0;
        fresh->cap = cap;
        if (c && cap > CHUNK_BYTES) {
            /* a big one-off block goes behind the current chunk, which keeps filling */
            fresh->next = c->next;
            c->next = fresh;
        } else {
            fresh->next = c;
            s->chunks = fresh;
        }
        c = fresh;
    }
    void *p = c->data + c->used;
    c->used += n_bytes;
    memset(p, 0, n_bytes);
    return p;
}

char *ptq_store_strndup(ptq_graph_store *s, const void *p, size_t n)
{
    if (n == SIZE_MAX)
        return NULL;
    char *d = ptq_store_alloc(s, n + 1);
    if (d && n)
        memcpy(d, p, n);
    return d;
}

static uint64_t name_hash(const char *name)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

int ptq_store_index_init(ptq_graph_store *s, size_t n_names)
{
    size_t cap = 16;
    while (cap < 2 * n_names + 1) {
        if (cap > SIZE_MAX / 4 / sizeof(int))
            return 0;
        cap *= 2;
    }
    free(s->name_slots);
    s->name_slots = malloc(cap * sizeof(int));
    if (!s->name_slots) {
        s->n_name_slots = 0;
        return 0;
    }
    for (size_t i = 0; i < cap; i++)
        s->name_slots[i] = -1;
    s->n_name_slots = cap;
    return 1;
}

int ptq_store_index_find(const ptq_graph_store *s, const ptq_value *values, const char *name)
{
    if (!s->n_name_slots)
        return -1;
    size_t mask = s->n_name_slots - 1;
    for (size_t i = (size_t)name_hash(name) & mask;; i = (i + 1) & mask) {
        int v = s->name_slots[i];
        if (v < 0)
            return -1;
        if (strcmp(values[v].name, name) == 0)
            return v;
    }
}

void ptq_store_index_add(ptq_graph_store *s, const ptq_value *values, int index)
{
    size_t mask = s->n_name_slots - 1;
    size_t i = (size_t)name_hash(values[index].name) & mask;
    while (s->name_slots[i] >= 0)
        i = (i + 1) & mask;
    s->name_slots[i] = index;
}

void ptq_graph_free(ptq_graph *g)
{
    /* the graph lives in its own store's arena */
    if (g)
        ptq_store_free(g->store);
}

const ptq_attr *ptq_node_attr(const ptq_node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

int64_t ptq_node_attr_int(const ptq_node *n, const char *name, int64_t dflt)
{
    const ptq_attr *a = ptq_node_attr(n, name);
    return a && a->type == PTQ_ATTR_INT ? a->i : dflt;
}

float ptq_node_attr_float(const ptq_node *n, const char *name, float dflt)
{
    const ptq_attr *a = ptq_node_attr(n, name);
    return a && a->type == PTQ_ATTR_FLOAT ? a->f : dflt;
}

int ptq_graph_find_value(const ptq_graph *g, const char *name)
{
    if (g->store && g->store->n_name_slots)
        return ptq_store_index_find(g->store, g->values, name);
    /* a graph assembled by hand (tests) has no index */
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i].name && strcmp(g->values[i].name, name) == 0 && !(g->values[i].flags & PTQ_VALUE_CONSTANT))
            return i;
    return -1;
}

ptq_status ptq_graph_set_folded(ptq_ctx *ctx, ptq_graph *g, int v, const ptq_tensor *t)
{
    if (v < 0 || v >= g->n_values || !g->store || t->ndim < 0 || t->ndim > PTQ_MAX_DIMS)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "ptq_graph_set_folded: no value %d or no store", v);
    const size_t n_bytes = ptq_tensor_bytes(t), align = 64;
    /* 64-byte aligned, like the loader's weights */
    unsigned char *raw = n_bytes <= SIZE_MAX - 2 * align ? ptq_store_alloc(g->store, n_bytes + align) : NULL;
    if (!raw)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory folding '%s' (%zu bytes)", g->values[v].name, n_bytes);
    unsigned char *data = raw + (align - (uintptr_t)raw % align) % align;
    if (n_bytes)
        memcpy(data, t->data, n_bytes);
    ptq_value *val = &g->values[v];
    val->dtype = t->dtype;
    val->ndim = t->ndim;
    memcpy(val->dims, t->dims, sizeof val->dims);
    val->data = data;
    val->n_bytes = n_bytes;
    val->producer = -1;
    val->flags |= PTQ_VALUE_FOLDED;
    return PTQ_OK;
}

void ptq_graph_drop_folded(ptq_graph *g)
{
    ptq_node *nodes = (ptq_node *)g->nodes; /* the store's own: the graph owns them */
    int kept = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        int folded = 0, live = 0;
        for (int i = 0; i < nodes[k].n_outputs; i++) {
            const int v = nodes[k].outputs[i];
            if (v >= 0 && (g->values[v].flags & PTQ_VALUE_FOLDED))
                folded = 1;
            else if (v >= 0)
                live = 1;
        }
        if (folded && !live)
            continue;
        nodes[kept++] = nodes[k];
    }
    g->n_nodes = kept;
    for (int v = 0; v < g->n_values; v++)
        if (!(g->values[v].flags & PTQ_VALUE_FOLDED))
            g->values[v].producer = -1;
    for (int k = 0; k < g->n_nodes; k++)
        for (int i = 0; i < nodes[k].n_outputs; i++)
            if (nodes[k].outputs[i] >= 0)
                g->values[nodes[k].outputs[i]].producer = k;
}

const char *ptq_graph_input_dim_name(const ptq_graph *g, int i, int axis)
{
    if (!g || !g->store || !g->store->input_dim_names || i < 0 || i >= g->n_inputs || axis < 0 ||
        axis >= PTQ_MAX_DIMS)
        return NULL;
    return g->store->input_dim_names[i][axis];
}

const char *ptq_graph_meta(const ptq_graph *g, const char *key)
{
    for (int i = 0; i < g->n_meta; i++)
        if (strcmp(g->meta[i].key, key) == 0)
            return g->meta[i].value;
    return NULL;
}
