/* Internal to model/: what a loaded ptq_graph owns (the file mapping, one
 * arena for strings/nodes/attributes/index arrays and the graph itself, one
 * block for copied weights) and the name -> value index behind
 * ptq_graph_find_value. Filled by model/onnx_load.c; covered by tests/test_onnx_load.c. */
#ifndef PTQ_MODEL_GRAPH_STORE_H
#define PTQ_MODEL_GRAPH_STORE_H

#include <stddef.h>

#include "ptq/graph.h"

typedef struct ptq_store_chunk ptq_store_chunk;

typedef struct ptq_graph_store {
    void *map; /* the mmapped model file; NULL when loaded from caller bytes */
    size_t map_bytes;
    void *owned; /* malloc'd model bytes the graph borrows from (a Keras model's ONNX form), or NULL */
    void *weights; /* copied or decoded constants, 64-byte aligned slots */
    size_t weight_bytes;
    ptq_store_chunk *chunks; /* the arena */
    int *name_slots;         /* open addressing over graph values; -1 empty */
    size_t n_name_slots;     /* a power of two */
    const char *(*input_dim_names)[PTQ_MAX_DIMS]; /* [graph's n_inputs]: each dim's dim_param, NULL where none */
} ptq_graph_store;

/* NULL when out of memory. */
ptq_graph_store *ptq_store_create(void);
/* Unmaps, frees the weight block and the arena (and so the graph in it). */
void ptq_store_free(ptq_graph_store *s);
/* Zeroed, aligned for any type; NULL when out of memory. */
void *ptq_store_alloc(ptq_graph_store *s, size_t n_bytes);
/* n bytes of p plus a NUL; NULL when out of memory. */
char *ptq_store_strndup(ptq_graph_store *s, const void *p, size_t n);

/* Sizes the name index for up to n_names names; 0 when out of memory. */
int ptq_store_index_init(ptq_graph_store *s, size_t n_names);
/* Value index of name among values, or -1. */
int ptq_store_index_find(const ptq_graph_store *s, const ptq_value *values, const char *name);
/* Adds values[index] under its name (which must not be there yet). */
void ptq_store_index_add(ptq_graph_store *s, const ptq_value *values, int index);

#endif
