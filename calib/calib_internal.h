/* What calib/calib_set.c and calib/archive.c share: the set's layout. */
#ifndef PTQ_CALIB_INTERNAL_H
#define PTQ_CALIB_INTERNAL_H

#include "ptq/calib.h"

struct ptq_cuda_dev;
struct ptq_observer_dev;

/* One data set's observed samples. */
typedef struct calib_source {
    char *name;
    char sha256[65];  /* content SHA-256 (ptq_dataset_content_sha256); "" when unknown (older archives) */
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
    const struct ptq_exec *exec; /* while the consumer runs: the executor whose runs the tap sees, or NULL */
    /* Passes side by side on the CPU (ptq_exec_tap_lanes): pool worker w > 0 observes into lane_obs[w][i], made
     * on its first value, folded into obs in worker order by ptq_calib_set_sync (the histograms are exact and
     * mergeable, so the archive is the same bytes). */
    ptq_observer ***lane_obs;  /* [n_lanes], [0] unused; each [n] or NULL */
    int n_lanes;
    /* A tensor without a batch dimension (a positional slice, a constant mask) is observed once per sample of the
     * batch, so that its counts are the same whatever the batching, ranks or shards: it has as many elements in a
     * batch of batch_n samples as at the batch of the graph's inferred shapes, batch_shapes. A tapped value's
     * batch is the samples of the executor's run that made it (a pass over part of the batch on the CPU). */
    int64_t *numel_shapes;     /* [n] elements at batch_shapes, -1 when unknown; NULL when read from a file */
    float *fetched;            /* host room for such a tensor made on the GPU, observed on the host: [fetched_cap] */
    int64_t fetched_cap;
    /* The output of a Reshape, Flatten, Squeeze, Unsqueeze, Identity or Transpose holds its input's values in
     * another order: its min, max, counts and histogram are its input's. alias_of[i] is the observed tensor whose
     * observer stands for tensor i (the first of such a chain), which is then not observed itself: ptq_calib_set_sync
     * copies that observer into obs[i]. -1 for a tensor observed itself; NULL when read from a file, unless the runner
     * consumer asked for it (calib_set_aliases), or under PTQ_OBSERVE_ALIAS=0. */
    int64_t *alias_of;
    int64_t batch_shapes;      /* the first input's batch in the inferred shapes (1 when it is dynamic) */
    int64_t batch_n;           /* samples in the batch being observed (set by the consumer) */
    char model_sha256[65];
    char *model_name, *ptq_version, *preprocess, *selection;
    char math[8]; /* "fp32", "tf32" or "fp64": the GPU math of the observed runs */
    int n_sources;
    calib_source *sources;     /* [n_sources] sorted by calib_source_key */
    const char **source_names; /* [n_sources], the names above in the same order */
    const char **source_sha256s; /* [n_sources], their content hashes in the same order */
};

/* Sets s->alias_of (once; not under PTQ_OBSERVE_ALIAS=0): from then on the tap leaves the outputs of permuting
 * nodes to their input's observer, and only ptq_calib_set_sync gives them their state, so a caller that reads the
 * set without syncing must not ask for it (the runner consumer syncs at its end). */
ptq_status calib_set_aliases(ptq_ctx *ctx, ptq_calib_set *s);
/* Room for the observers of n_lanes pool threads (passes side by side, ptq_exec_tap_lanes). */
ptq_status calib_set_lanes(ptq_ctx *ctx, ptq_calib_set *s, int n_lanes);
/* An empty set of n tensors (names unset) with observers of n_bins. */
ptq_status calib_set_alloc(ptq_ctx *ctx, int64_t n, int64_t n_bins, ptq_calib_set **out);
/* What identifies a source: its content SHA-256, or its name when that is unknown. */
const char *calib_source_key(const calib_source *src);
/* The set's ptq_tap_dev_state_fn (runtime/backend.h): the device state of
 * value v's observer, made on the bound GPU if need be; NULL when the set
 * does not observe v (or an alias's input observer stands for it), NULL
 * with *n_bins = -1 when n values of v make no device update (a tensor
 * without the batch's dimension: observed on the host, once a sample). */
ptq_status calib_set_dev_state(void *user, ptq_ctx *ctx, int v, int64_t n, void **state, int64_t *n_bins);
/* Records samples ids[n] of a source (content SHA-256 sha256, NULL or "" when unknown). */
ptq_status calib_set_add_source(ptq_ctx *ctx, ptq_calib_set *s, const char *name, const char *sha256,
                                const int64_t *ids, int64_t n);
/* SHA-256 over each source (sorted by key): its key, a NUL, its id count
 * and ids (ascending) as 64-bit little-endian integers; and the total count. */
void calib_sample_hash(const ptq_calib_set *s, char hex[65], int64_t *n_samples);

#endif
