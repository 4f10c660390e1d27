/* The pipeline every command shares, in the library: a session (a model,
 * its executor on a device, a data source and the preprocessing that fits
 * one to the other), a pick of the source's samples (the first N, or N at
 * random by a seed, then shard I of N), and the runner, which reads and
 * preprocesses batches on a worker thread while the executor computes and
 * hands each batch to consumers: observers (calibration), accuracy and
 * confusion counts, the FP32-against-quantized comparison, logits writers.
 * runtime/session.c, runtime/runner.c; covered by tests/test_runner.c and
 * every cli_*_test.py. */
#ifndef PTQ_RUNNER_H
#define PTQ_RUNNER_H

#include "ptq/export_api.h"

#include <stdint.h>

#include "ptq/dataset.h"
#include "ptq/graph.h"
#include "ptq/runtime.h"
#include "ptq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "cpu", "ref", "cuda" or "gpu" (this process's GPU:
 * PTQ_CUDA_DEVICE_LOCAL), "cuda:N" into a device and GPU ordinal; NULL
 * means cpu. PTQ_ERR_INVALID_ARG names anything else. */
#define PTQ_CUDA_DEVICE_LOCAL (-1)
PTQ_API ptq_status ptq_device_parse(ptq_ctx *ctx, const char *name, ptq_device *device, int *cuda_device);

/* Which HDF5 dataset feeds which model input (--input NAME=DATASET). */
typedef struct ptq_input_map {
    const char *input;   /* a model input's name */
    const char *dataset; /* the HDF5 dataset that feeds it */
} ptq_input_map;

typedef struct ptq_session_opts {
    const char *model;        /* ONNX file */
    const char *data;         /* HDF5 file or PNG folder; NULL: no data (the session only runs the model) */
    ptq_device device;        /* 0: PTQ_DEVICE_CPU, as a NULL name is for ptq_device_parse */
    int cuda_device;          /* GPU ordinal for PTQ_DEVICE_CUDA; PTQ_CUDA_DEVICE_LOCAL: the node-local MPI rank
                                 modulo the GPUs visible (GPU 0 outside an MPI job, include/ptq/dist.h) */
    int cpu_fallback;         /* 1: no usable GPU runs on the CPU (ptq_session_notice says so); 0: PTQ_ERR_NO_DEVICE */
    const char *preprocess;   /* overrides on top of the model's ptq.preprocess metadata, or NULL */
    ptq_dataset_opts dataset; /* HDF5 keys and layout */
    int profile;              /* time each node exactly (synchronises the GPU after each) */
    ptq_math math;            /* GPU math (the CPU computes FP32; ptq_session_notes says so) */
    const char *output;       /* the graph output holding the logits, by name; NULL: the only output, else the
                                 only float32 output of rank 2 ([N, classes]) */
    const ptq_input_map *inputs; /* [n_inputs] (may be NULL): the dataset of each model input named; an input
                                    not named reads the dataset of its own name. An image model (one float32
                                    input of rank 4) reads images as before: an entry for its input names the
                                    images dataset (as dataset.images_key) */
    int n_inputs;
} ptq_session_opts;

typedef struct ptq_session ptq_session;

/* Loads the model (the logits output picked by opts->output or by its
 * shape, see ptq_session_logits_output), opens the data and checks it fits
 * the model's inputs, then creates the executor. Errors name the model or
 * data path.
 * A model of one float32 image input of rank 4 reads images (HDF5 or a
 * folder): the preprocessing comes from the model's metadata, then
 * opts->preprocess; channels, height and width from the model's input,
 * else from the data.
 * Any other model has named inputs, each fed as stored from an HDF5
 * dataset ([N, ...], ptq_dataset_open_arrays; opts->inputs says which, by
 * default the one of the input's name), without preprocessing
 * (opts->preprocess is refused): int64 inputs take any integer or bool
 * data that fits (int32 converted), int32 inputs integers up to 32 bits,
 * bool inputs bool, uint8 inputs uint8 or bool, float32 inputs float16-64;
 * a float dataset for an integer input or the reverse is PTQ_ERR_DATA. The
 * samples' shape must match the input's dims past the batch (a dynamic dim
 * takes the data's, and the graph's input records it), else PTQ_ERR_SHAPE.
 * These errors name the input, the dataset and the file. */
PTQ_API ptq_status ptq_session_open(ptq_ctx *ctx, const ptq_session_opts *opts, ptq_session **out);
PTQ_API void ptq_session_close(ptq_session *s);

PTQ_API ptq_graph *ptq_session_graph(const ptq_session *s);
PTQ_API ptq_exec *ptq_session_exec(const ptq_session *s);
PTQ_API ptq_dataset *ptq_session_dataset(const ptq_session *s); /* NULL without data */
PTQ_API const ptq_preprocess *ptq_session_preprocess(const ptq_session *s);
/* Samples in the data set (0 without data). */
PTQ_API int64_t ptq_session_n_samples(const ptq_session *s);
/* The model input's per-sample shape: channels, height, width (0, 0, 0 with named inputs). */
PTQ_API void ptq_session_input_shape(const ptq_session *s, int64_t *channels, int64_t *height, int64_t *width);
/* 1 when the model's inputs are fed from named datasets, 0 for images. */
PTQ_API int ptq_session_named_inputs(const ptq_session *s);
/* Model input i as the runner feeds it: dtype, rank and dims with dims[0]
 * (the batch) 0 and data NULL; the image input's [0, C, H, W] (or NHWC).
 * With named inputs, *dataset (may be NULL) gets the HDF5 dataset feeding
 * it, else NULL. PTQ_ERR_INVALID_ARG when i is not an input. */
PTQ_API ptq_status ptq_session_input_meta(ptq_ctx *ctx, const ptq_session *s, int i, ptq_tensor *meta,
                                          const char **dataset);
/* What the data goes through on its way into the model, as reports and
 * calibration archives record it: the images' preprocessing
 * (ptq_preprocess_format), or with named inputs "inputs=NAME:DATASET,..."
 * for every model input in order. Into buf[n_buf]; returns buf. */
PTQ_API char *ptq_session_data_spec(const ptq_session *s, char *buf, size_t n_buf);
/* The preprocessing ptq_session_open gives the image input of model g before it reads any data: the input's
 * layout, channels and size, then g's ptq.preprocess metadata, then spec (NULL: none), each overriding the keys it
 * names, with the session's refusals of spec (PTQ_ERR_INVALID_ARG: a bad item, one contradicting the input, a
 * spec for a model that is not one image input). *scale_kept: 1 when spec names scale=, which float images then
 * keep; otherwise, where p->scale is not 1, the session picks 1 or p->scale from their values. The data decides
 * nothing else but a dynamic input's channels and size; so two specs giving equal *p and *scale_kept (or p->scale
 * 1) preprocess every image alike, however they are written (ptq run's resume keys compare them so). A model that
 * is not one image input gives the defaults. */
PTQ_API ptq_status ptq_model_preprocess(ptq_ctx *ctx, const ptq_graph *g, const char *spec, ptq_preprocess *p,
                                        int *scale_kept);
/* How inferring the graph's shapes at batch 1 went when the session
 * opened: PTQ_OK, or that failure again in ctx. For callers that need every
 * tensor's dtype and shape (tensor selection, plans). */
PTQ_API ptq_status ptq_session_shapes(ptq_ctx *ctx, const ptq_session *s);
/* Notes the caller may show, one per line ("no usable GPU (...); running
 * on the CPU", "converting 4-channel images to the model's 3"), or "". */
PTQ_API const char *ptq_session_notes(const ptq_session *s);
/* Which graph output holds the logits: *index into g->outputs. The one
 * opts->output names; without a name the only output, else the only
 * float32 output of rank 2 ([N, classes]) when exactly one is. A name the
 * graph lacks (PTQ_ERR_INVALID_ARG) or several candidates or none
 * (PTQ_ERR_UNSUPPORTED) fail with a message listing the outputs and their
 * shapes. Runs that read logits fail so; the others (calibration) observe
 * every tensor whichever it is. */
PTQ_API ptq_status ptq_session_logits_output(ptq_ctx *ctx, const ptq_session *s, int *index);
/* The model input's batch dimension when the model fixes it (dim 0 a
 * number, not a symbol), else 0. The runner then runs batches of exactly
 * that many samples whatever ptq_runner_params.batch asks (a note in
 * ptq_session_notes says so), and refuses a pick that is not a multiple of
 * it (PTQ_ERR_SHAPE): the last batch is never padded, since padding would
 * reach the observers' histograms. */
PTQ_API int64_t ptq_session_fixed_batch(const ptq_session *s);

/* Which samples a run reads: all of them, the first `limit`, or `samples`
 * picked at random by `seed` (a seeded partial Fisher-Yates shuffle,
 * splitmix64), in ascending order; then shard `shard` of `n_shards` equal
 * contiguous shares (floor(n * i / n_shards) boundaries). */
typedef struct ptq_pick {
    int64_t limit;     /* 0: no limit */
    int64_t samples;   /* 0: no random pick */
    uint64_t seed;
    int64_t shard, n_shards; /* n_shards 0 or 1: the whole pick */
} ptq_pick;

#define PTQ_MAX_SHARDS ((int64_t)1 << 31)

/* The picked ids of a set of `total` samples, ascending: *ids (malloc'd,
 * the caller frees) and *n_ids. PTQ_ERR_INVALID_ARG on a bad shard or a
 * negative count. */
PTQ_API ptq_status ptq_pick_samples(ptq_ctx *ctx, int64_t total, const ptq_pick *p, int64_t **ids, int64_t *n_ids);

typedef struct ptq_runner ptq_runner;

/* One batch as the consumers see it. */
typedef struct ptq_batch {
    int64_t index;            /* batch number */
    int64_t start;            /* position of its first sample in the pick */
    int64_t n;                /* samples */
    const int64_t *ids;       /* [n] sample ids in the data set */
    ptq_tensor *inputs;       /* [g->n_inputs] host tensors: input 0 the preprocessed images [n, C, H, W] (or NHWC),
                               * or each named input as read ([n, ...], ptq_session_input_meta);
                               * NULL when images holds the batch instead */
    const ptq_u8_batch *images; /* the 8-bit images when the executor normalizes them on the GPU
                                 * (ptq_exec_run_u8, which taps the input with node_index -1), else NULL */
    const int32_t *labels;    /* [n], or NULL for unlabelled data */
    ptq_tensor *outputs;      /* [g->n_outputs] the executor's outputs (after), valid during the call */
    const float *logits;      /* [n, n_classes]: the logits output (after) */
    int64_t n_classes;        /* its width, the same for every batch */
    int logits_output;        /* which of outputs holds the logits (ptq_session_logits_output); 0 when
                                 the run reads no logits */
} ptq_batch;

/* A consumer: any callback may be NULL. before runs ahead of the
 * executor (the inputs are ready), after once it ran (outputs and logits
 * set); a consumer may run the executor again (another overlay) but must
 * copy what it needs of the outputs first. end runs once after the last
 * batch. A non-OK return stops the run with that status. */
typedef struct ptq_consumer {
    void *user;
    ptq_status (*before)(void *user, ptq_ctx *ctx, ptq_runner *r, ptq_batch *b);
    ptq_status (*after)(void *user, ptq_ctx *ctx, ptq_runner *r, ptq_batch *b);
    ptq_status (*end)(void *user, ptq_ctx *ctx, ptq_runner *r);
} ptq_consumer;

#define PTQ_RUNNER_MAX_CONSUMERS 8

typedef struct ptq_runner_params {
    ptq_session *session;
    const int64_t *ids;       /* [n_ids] samples to run, ascending and distinct (ptq_pick_samples); others are
                                 PTQ_ERR_INVALID_ARG naming the first position out of order */
    int64_t n_ids;
    int64_t batch;            /* samples per batch (>= 1); a model with a fixed batch runs its own
                                 (ptq_session_fixed_batch) */
    int need_labels;          /* 1: labels are read (unlabelled data fails with PTQ_ERR_DATA); 0: not read */
    int need_logits;          /* 1: the logits output (ptq_session_logits_output) must be float32
                                 [batch, classes] with classes >= the data's
                                 (batch.logits is set only then) */
    int prefetch;             /* 1: read and preprocess the next batch on a worker thread while this one runs */
    ptq_consumer consumers[PTQ_RUNNER_MAX_CONSUMERS];
    int n_consumers;
    /* called after each batch with the samples done so far; may be NULL */
    void (*progress)(void *user, int64_t done, int64_t total);
    void *progress_user;
    /* when not NULL, filled at the end: samples and seconds after the first
     * batch (warm plans, memory and caches: the steady rate) */
    struct ptq_runner_steady {
        int64_t samples;
        double seconds;
    } *steady;
} ptq_runner_params;

/* Runs every batch through the session's executor and its consumers. A
 * run that fails (the consumers' end callbacks then do not run) leaves the
 * executor with the taps and overlay it had before, so none of the
 * consumers' taps feeds a calibration set or smoothing state the caller
 * frees next. */
PTQ_API ptq_status ptq_runner_run(ptq_ctx *ctx, const ptq_runner_params *p);

/* Inside a callback: the session, and seconds spent so far reading and
 * preprocessing (waiting for it, with prefetch) and running the executor. */
PTQ_API ptq_session *ptq_runner_session(const ptq_runner *r);
PTQ_API void ptq_runner_seconds(const ptq_runner *r, double *read_s, double *exec_s);
/* Inside a callback: runs batch b again under the executor's current
 * overlay (from b->inputs or b->images, whichever it has). */
PTQ_API ptq_status ptq_runner_rerun(ptq_ctx *ctx, ptq_runner *r, const ptq_batch *b, ptq_tensor *outputs);

#ifdef __cplusplus
}
#endif
#endif
