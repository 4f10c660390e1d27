/* Calibration sets: one observer per tensor a plan may quantize, fed by the
 * executor's tap (on the host or, through device observers, on the GPU),
 * with the provenance that makes an archive checkable, written to and read
 * from the HDF5 calibration archive (calib.h5) and merged exactly across
 * shards. calib/select.c, calib/calib_set.c, calib/archive.c; covered by
 * tests/test_calib_set.c, tests/calib_archive_test.py and tests/cli_calib_test.py. */
#ifndef PTQ_CALIB_H
#define PTQ_CALIB_H

#include "ptq/export_api.h"

#include <stdint.h>

#include "ptq/calibrator.h"
#include "ptq/graph.h"
#include "ptq/observer.h"
#include "ptq/runner.h"
#include "ptq/runtime.h"
#include "ptq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PTQ_CALIB_ARCHIVE_VERSION 1
/* The most data sets (sources) one set records: each `ptq calibrate` run adds one, so only merges of that many
 * archives of distinct data come near it. The archive's compact 'sources' attribute holds no more, and matching
 * sources takes time quadratic in their number: an archive listing more is malformed, and a merge or an add that
 * would pass it is refused. */
#define PTQ_CALIB_MAX_SOURCES 4000

/* Which tensors to observe, among the quantizable ones (float non-constant
 * inputs of Conv/Gemm/MatMul and every float node output, as
 * ptq_graph_quantizable says). ops: comma-separated op types; a quantizable
 * tensor is kept when a node of one of them produces or consumes it.
 * tensors: comma-separated glob patterns (fnmatch) on tensor names. Both
 * NULL or "": every quantizable tensor. */
typedef struct ptq_calib_select {
    const char *ops;
    const char *tensors;
} ptq_calib_select;

/* Marks in keep[g->n_values] the tensors sel picks. PTQ_ERR_INVALID_ARG
 * when they are none, naming the ops and patterns, and for an empty item of
 * ops or one that is an op type neither ptq nor g has; *n_kept gets the count. */
PTQ_API ptq_status ptq_calib_select_tensors(ptq_ctx *ctx, const ptq_graph *g, const ptq_calib_select *sel,
                                    unsigned char *keep, int64_t *n_kept);

/* Where the observed data came from; strings owned by the set. */
typedef struct ptq_calib_provenance {
    char model_sha256[65];   /* of the model file's bytes */
    const char *model_name;  /* the file name it was calibrated from (informative) */
    const char *ptq_version;
    const char *preprocess;  /* the preprocessing spec applied to every image */
    const char *math;        /* "fp32", "tf32" or "fp64": the math of the observed runs (ptq_math_name) */
    const char *selection;   /* "ops=...;tensors=..." as canonicalised by the set */
    int64_t n_bins;          /* observer bins */
    char sample_ids_sha256[65]; /* over the sources (sorted) and their sorted sample ids, see calib/calib_set.c */
    int64_t n_samples;
    int n_sources;
    const char *const *sources; /* [n_sources] data sets, as given on the command line, sorted by key */
    const char *const *sources_sha256; /* [n_sources] their content SHA-256 (ptq_dataset_content_sha256);
                                          "" for a source of an archive that predates them */
} ptq_calib_provenance;

typedef struct ptq_calib_set ptq_calib_set;

/* An empty set over the tensors sel picks in g (which must outlive the set
 * while it observes). n_bins: 0 for the default. */
PTQ_API ptq_status ptq_calib_set_create(ptq_ctx *ctx, const ptq_graph *g, const ptq_calib_select *sel, int64_t n_bins,
                                ptq_calib_set **out);
PTQ_API void ptq_calib_set_free(ptq_calib_set *s);

/* Records the model (its SHA-256 and name), ptq's version and the
 * preprocessing spec (copied). */
PTQ_API ptq_status ptq_calib_set_describe(ptq_ctx *ctx, ptq_calib_set *s, const char *model_sha256, const char *model_name,
                                  const char *preprocess);
/* Records the math the observed runs computed in: "fp32" (the default), "fp64" or
 * "tf32"; archives of different math do not merge. */
PTQ_API ptq_status ptq_calib_set_math(ptq_ctx *ctx, ptq_calib_set *s, const char *math);
/* Records that samples ids[n] of data set source were observed (before or
 * after observing them). The same sample of one source twice is
 * PTQ_ERR_DATA: it would be counted twice; a negative n or id
 * PTQ_ERR_INVALID_ARG. */
PTQ_API ptq_status ptq_calib_set_add_samples(ptq_ctx *ctx, ptq_calib_set *s, const char *source, const int64_t *ids, int64_t n);
/* The same with the content SHA-256 of the source (64 lowercase hex digits,
 * ptq_dataset_content_sha256): sources are then told apart by content, not
 * by name, so the same data under two paths is one source and two files of
 * one name are two. A source is keyed by its hash, or by its name when it
 * has none (archives from before hashes); the keys order the sources and go
 * into sample_ids_sha256. */
PTQ_API ptq_status ptq_calib_set_add_source(ptq_ctx *ctx, ptq_calib_set *s, const char *source, const char *content_sha256,
                                    const int64_t *ids, int64_t n);

/* Observing: pass ptq_calib_set_tap and the set as the executor's tap and
 * tap_user, bind the executor once created (device observers live on its
 * GPU), and per batch call observe_inputs with the batch's graph inputs
 * before ptq_exec_run. sync waits for device observers and folds them into
 * the host state; call it before reading, writing or merging the set.
 * Called out of that order (a GPU tensor observed before bind, a write
 * before sync): PTQ_ERR_INVALID_ARG naming the call that must come first;
 * the same for a set tapped on a graph other than its own, or read from
 * an archive (which cannot observe). */
PTQ_API ptq_status ptq_calib_set_tap(void *user, ptq_ctx *ctx, const ptq_graph *g, int node_index, int value_index,
                             const ptq_tensor *t);
PTQ_API ptq_status ptq_calib_set_bind(ptq_ctx *ctx, ptq_calib_set *s, ptq_exec *e);
PTQ_API ptq_status ptq_calib_set_observe_inputs(ptq_ctx *ctx, ptq_calib_set *s, const ptq_tensor *inputs);
PTQ_API ptq_status ptq_calib_set_sync(ptq_ctx *ctx, ptq_calib_set *s);
/* The same as a runner consumer (include/ptq/runner.h): the tap is on the
 * session's executor from the first batch to the end of the run. */
PTQ_API ptq_consumer ptq_calib_set_consumer(ptq_calib_set *s);

PTQ_API int64_t ptq_calib_set_n_tensors(const ptq_calib_set *s);
/* Tensor i of the set, i in [0, ptq_calib_set_n_tensors(s)): its name and observer. */
PTQ_API const char *ptq_calib_set_name(const ptq_calib_set *s, int64_t i);
PTQ_API const ptq_observer *ptq_calib_set_observer(const ptq_calib_set *s, int64_t i);
/* The provenance, valid until the set changes or is freed. */
PTQ_API void ptq_calib_set_provenance(const ptq_calib_set *s, ptq_calib_provenance *out);

/* Index of the tensor called name, or -1. */
PTQ_API int64_t ptq_calib_set_find(const ptq_calib_set *s, const char *name);

/* The first tensor (in set order) that saw values but no finite one (all
 * NaN/Inf), or -1. */
PTQ_API int64_t ptq_calib_set_first_nonfinite(const ptq_calib_set *s);

/* out[i] = the range of tensor i by p (ptq_calib_compute), the tensors in
 * parallel on the CPU pool. On failure *bad is the lowest failing tensor's
 * index and ctx holds its message, which names it ("tensor 'NAME': ...")
 * and what it holds; PTQ_ERR_DATA for a tensor without a finite value
 * (with its NaN and Inf counts). A bad p is refused before any tensor
 * (PTQ_ERR_INVALID_ARG naming the value, *bad -1). out:
 * [ptq_calib_set_n_tensors(s)]. */
PTQ_API ptq_status ptq_calib_set_ranges(ptq_ctx *ctx, const ptq_calib_set *s, const ptq_calib_params *p, ptq_calib_range *out,
                                int64_t *bad);
/* ptq_calib_set_ranges, but a tensor always empty is no error: empty[i] 1 and out[i] degenerate (all zero), the
 * other tensors' ranges as ever (a failure of one of them stands, *bad its index). Always empty: the set saw no
 * values of it and, with g, g's shapes give it a dim of size 0 (at batch 1; one empty only there, such as a Slice
 * of the batch, saw values at the set's batch); without g (NULL: the model is not at hand), any tensor the set saw
 * no values of (a Split's part of size 0, a Slice of none). empty: [ptq_calib_set_n_tensors(s)]. */
PTQ_API ptq_status ptq_calib_set_ranges_empty(ptq_ctx *ctx, const ptq_calib_set *s, const ptq_graph *g,
                                              const ptq_calib_params *p, ptq_calib_range *out, unsigned char *empty,
                                              int64_t *bad);

/* The archive: HDF5 at path, created or truncated (the caller picks a
 * temporary name, ptq_atomic_create, and renames; a failed write removes
 * path). Layout in calib/archive.c. A set never described
 * (ptq_calib_set_describe: the model's SHA-256) is PTQ_ERR_INVALID_ARG and
 * nothing is written; a set with no samples recorded writes (and reads back)
 * with no sources. Reading refuses (PTQ_ERR_FORMAT) an archive with
 * external links or external storage. */
PTQ_API ptq_status ptq_calib_set_write(ptq_ctx *ctx, const ptq_calib_set *s, const char *path);
/* PTQ_ERR_IO, or PTQ_ERR_FORMAT naming the path and what is off. */
PTQ_API ptq_status ptq_calib_set_read(ptq_ctx *ctx, const char *path, ptq_calib_set **out);

/* dst += src exactly. Both must come from the same model (SHA-256), the same
 * observer settings (bins, selection, preprocessing) and the same tensors,
 * and share no sample (sources matched by content hash, or by name when
 * either lacks one); otherwise PTQ_ERR_INVALID_ARG saying which differs.
 * On any failure (PTQ_ERR_NOMEM too) dst is unchanged: all that the merge
 * allocates is allocated before dst changes. */
PTQ_API ptq_status ptq_calib_set_merge(ptq_ctx *ctx, ptq_calib_set *dst, const ptq_calib_set *src);

/* Every rank's set becomes the sum of all ranks' observers, exactly what
 * merging them would give (calib/calib_dist.c); tensors and bins must be
 * the same on every rank, provenance is left as it is. A collective
 * (include/ptq/dist.h): every rank calls it, after agreeing on the run;
 * a no-op in one process. */
PTQ_API ptq_status ptq_calib_set_allreduce(ptq_ctx *ctx, ptq_calib_set *s);

#ifdef __cplusplus
}
#endif
#endif
