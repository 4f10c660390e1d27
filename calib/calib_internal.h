/* What calib/calib_set.c and calib/archive.c share: the set's layout. */
#ifndef PTQ_CALIB_INTERNAL_H
#define PTQ_CALIB_INTERNAL_H

#include "ptq/calib.h"

struct ptq_cuda_dev;
struct ptq_observer_dev;

/* One data set's observed samples. */
typedef struct calib_source {
    char *name;
    int64_t *ids; /* [n_ids], ascending, distinct */
    int64_t n_ids;
} calib_source;

struct ptq_calib_set {
    const ptq_graph *g;        /* the graph observed; NULL for a set read from a file */
    int64_t n;                 /* tensors */
    int64_t n_bins;
    char **names;              /* [n] */
    ptq_observer **obs;        /* [n] host state */
    struct ptq_observer_dev **dev_obs; /* [n] device state not yet folded in by sync, or NULL */
    int *value_index;          /* [n] graph value index, -1 when read from a file */
    int64_t *index_of_value;   /* [g->n_values] set index or -1; NULL when read from a file */
    struct ptq_cuda_dev *cuda; /* the bound executor's GPU, or NULL */
    char model_sha256[65];
    char *model_name, *ptq_version, *preprocess, *selection;
    int n_sources;
    calib_source *sources;     /* [n_sources] sorted by name */
    const char **source_names; /* [n_sources], the names above in the same order */
};

/* An empty set of n tensors (names unset) with observers of n_bins. */
ptq_status calib_set_alloc(ptq_ctx *ctx, int64_t n, int64_t n_bins, ptq_calib_set **out);
/* SHA-256 over each source (sorted by name): its name, a NUL, its id count
 * and ids (ascending) as 64-bit little-endian integers; and the total count. */
void calib_sample_hash(const ptq_calib_set *s, char hex[65], int64_t *n_samples);

#endif
