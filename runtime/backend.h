/* Backend interface: where tensors live and which nodes a device runs.
 * The executor (runtime/exec.c) allocates through it, moves data between
 * host and device, and falls back to the CPU for nodes a backend declines.
 * Implementations: runtime/backend_cpu.c (ref and cpu), runtime/backend_cuda.c. */
#ifndef PTQ_RUNTIME_BACKEND_H
#define PTQ_RUNTIME_BACKEND_H

#include "ptq/runtime.h"
#include "runtime/op.h"

typedef struct ptq_backend ptq_backend;

struct ptq_backend {
    const char *name; /* "ref", "cpu", "cuda" */
    ptq_mem mem;      /* where its tensors live */
    void *impl;
    struct ptq_cuda_dev *cuda; /* the GPU context of a cuda backend, else NULL */
    ptq_status (*alloc)(ptq_backend *b, ptq_ctx *ctx, size_t n_bytes, void **out);
    void (*release)(ptq_backend *b, void *p);
    ptq_status (*upload)(ptq_backend *b, ptq_ctx *ctx, void *dst, const void *host_src, size_t n_bytes);
    /* Queued only: host_src stays unchanged until the next sync. NULL on the host. */
    ptq_status (*upload_async)(ptq_backend *b, ptq_ctx *ctx, void *dst, const void *host_src, size_t n_bytes);
    /* Host memory the device copies from fastest (page-locked); NULL on the host. */
    ptq_status (*host_alloc)(ptq_backend *b, ptq_ctx *ctx, size_t n_bytes, void **out);
    void (*host_free)(ptq_backend *b, void *p);
    ptq_status (*download)(ptq_backend *b, ptq_ctx *ctx, void *host_dst, const void *src, size_t n_bytes);
    ptq_status (*copy)(ptq_backend *b, ptq_ctx *ctx, void *dst, const void *src, size_t n_bytes); /* same memory */
    /* Waits for queued work (no-op on the host). */
    ptq_status (*sync)(ptq_backend *b, ptq_ctx *ctx);
    /* 1 if run() handles this node with these input shapes/dtypes. */
    int (*supports)(ptq_backend *b, const ptq_op_io *io);
    /* Computes io's outputs (already allocated in this backend's memory). */
    ptq_status (*run)(ptq_backend *b, ptq_ctx *ctx, const ptq_op_io *io);
    /* Conv node io with a following Add of residual z (its output's shape, or
     * NULL) and a clamp of each output to [lo, hi] (t = y < lo ? lo : y, then
     * t > hi ? hi : t, as the Clip node rounds it; Relu: [0, +Inf], none:
     * [-Inf, +Inf]) in one kernel, into io's output 0: *done = 1; or *done = 0
     * and nothing run (also for a clamp the backend has no kernel for). NULL
     * where the backend has no such path. */
    ptq_status (*conv_epilogue)(ptq_backend *b, ptq_ctx *ctx, const ptq_op_io *io, const ptq_tensor *z, float lo,
                                float hi, int *done);
    /* A Conv's output c with its chain's Add (z, or NULL) and Relu into y,
     * feeding device observers of the three values from one read
     * (ptq_k_observe_chain_cuda). NULL where the backend has no such path. */
    ptq_status (*observe_chain)(ptq_backend *b, ptq_ctx *ctx, void *const states[3], int64_t n_bins, const float *c,
                                const float *z, int z_first, int relu, float *y, int64_t n);
    /* A MatMul's product c with its bias row [cols] added into y, feeding observers of c and y from one read
     * (ptq_k_observe_bias_cuda). NULL where the backend has no such path. */
    ptq_status (*observe_bias)(ptq_backend *b, ptq_ctx *ctx, void *const states[2], int64_t n_bins, const float *c,
                               const float *bias, int64_t cols, int bias_first, float *y, int64_t n);
    /* An exact GELU of x into y (the Add's output a written too), feeding observers of its five values in two
     * passes (ptq_k_observe_gelu_cuda). NULL where the backend has no such path. */
    ptq_status (*observe_gelu)(ptq_backend *b, ptq_ctx *ctx, void *const states[5], int64_t n_bins, const float *x,
                               float *a, float *y, int64_t n, float c_div, float c_add, float c_mul);
    /* y = (x * (erff(x / c_div) + c_add)) * c_mul over n floats, as the Div, Erf, Add, Mul and Mul nodes of an
     * exported exact GELU compute it (ptq_k_erf_gelu_cuda). NULL where the backend has no such path. */
    ptq_status (*erf_gelu)(ptq_backend *b, ptq_ctx *ctx, const float *x, float *y, int64_t n, float c_div,
                           float c_add, float c_mul);
    /* io's MatMul (its weights io->in[1] a [K, N] matrix) with bias [N] added to every row of the product, into
     * io->out[0], in the GEMM's epilogue: *done = 1; *done = 0 and nothing queued where the backend does not take
     * it (ptq_k_gemm_bias_cuda). NULL where the backend has no such path. */
    ptq_status (*matmul_bias)(ptq_backend *b, ptq_ctx *ctx, const ptq_op_io *io, const ptq_tensor *bias, int *done);
    void (*destroy)(ptq_backend *b);
};

ptq_status ptq_backend_cpu_create(ptq_ctx *ctx, int reference_only, ptq_backend **out);
/* PTQ_ERR_NO_DEVICE with the reason when there is no usable GPU or no CUDA build. */
ptq_status ptq_backend_cuda_create(ptq_ctx *ctx, int device_index, ptq_backend **out);
/* The math a cuda backend's convolutions and matrix products run in (ptq_math). */
void ptq_backend_cuda_set_math(ptq_backend *b, int math);
/* 1 when b's convolutions run through cuDNN (loaded and on). */
int ptq_backend_cuda_has_cudnn(ptq_backend *b);
/* 8-bit images (device memory) into the float input (device memory): kernels/cuda/normalize.cu. */
struct ptq_norm_params;
ptq_status ptq_backend_cuda_normalize_u8(ptq_backend *b, ptq_ctx *ctx, const struct ptq_norm_params *p,
                                         const void *src, void *dst);
void ptq_backend_free(ptq_backend *b);

/* A tap that observes on the device can say so: fn gives the device state
 * (kernels/cuda/cuda_kernels.h's layout, *n_bins bins) of the observer the
 * tap would feed value v's n device values to in one update, creating it if
 * need be; *state = NULL when the tap does not look at v, and NULL with
 * *n_bins = -1 when it must see v itself (it would not update one device
 * state with those values: a tensor without the batch's dimension, counted
 * once a sample on the host). The executor may then feed a Conv -> [Add] ->
 * [Relu] chain's values, a MatMul's product and its bias Add's output, or
 * an exact GELU's five values, to those observers in device passes of their
 * own (backend.observe_chain, observe_bias, observe_gelu) and not call the
 * tap for them: bit-identical to the tap's own updates. tap/tap_user: a tap
 * already added. */
typedef ptq_status (*ptq_tap_dev_state_fn)(void *user, ptq_ctx *ctx, int v, int64_t n, void **state,
                                           int64_t *n_bins);
ptq_status ptq_exec_tap_dev_state(ptq_ctx *ctx, ptq_exec *e, ptq_tap_fn tap, void *tap_user, ptq_tap_dev_state_fn fn);
/* Values e keeps channels last on its GPU (runtime/layout.h), 0 on the host. */
int64_t ptq_exec_n_channels_last(const ptq_exec *e);
/* Chains run so (run_observed_chain), over e's life. */
int64_t ptq_exec_n_observed_chains(const ptq_exec *e);
/* MatMul -> Add(bias) pairs and exact GELUs whose values the tap's device observers were fed in passes of their
 * own (run_observed_bias, run_observed_gelu), over e's life. */
int64_t ptq_exec_n_observed_biases(const ptq_exec *e);
int64_t ptq_exec_n_observed_gelus(const ptq_exec *e);
/* Reshape, Flatten, Squeeze, Unsqueeze and Identity nodes (on the GPU, or on the CPU of an executor without one)
 * whose output took its input's buffer over (the input's last reader; no copy), over all runs so far;
 * PTQ_VIEW_ALIAS=0 at create turns it off. */
int64_t ptq_exec_n_view_handovers(const ptq_exec *e);
/* Exact GELUs (Div, Erf, Add, Mul, Mul as exporters write them) run in one GPU pass (run_gelu), over all runs;
 * PTQ_FUSE_GELU=0 at create turns it off. */
int64_t ptq_exec_n_gelus(const ptq_exec *e);
/* MatMul -> Add(bias) pairs run as one GEMM with the bias in its epilogue (run_matmul_bias), over all runs;
 * PTQ_FUSE_BIAS=0 at create turns it off. */
int64_t ptq_exec_n_biases(const ptq_exec *e);

/* The GPU context e's device tensors live on (for observers that run their
 * own kernels on the same stream), or NULL when e runs on the host. */
struct ptq_cuda_dev *ptq_exec_cuda_dev(const ptq_exec *e);

/* Bytes of the values alive at once at the worst step of a run of e's
 * graph at this batch, by tensor liveness as the memory plan places them,
 * each value's size as ptq_exec_set_value_bytes gave it, else from the
 * shapes in the graph (dim 0 taken as the batch, unknown dims as 1; scalars
 * and shapes not known left out): what the runner checks --max-memory
 * against before a batch is allocated. */
double ptq_exec_live_estimate(const ptq_exec *e, int64_t batch);
/* Bytes of every activation of one run at this batch, alive or not, sized
 * as above: what one kept copy of a whole run costs at most (sensitivity
 * keeps the FP32 and the default plan's values between its runs). */
double ptq_exec_total_estimate(const ptq_exec *e, int64_t batch);
/* Sizes each value for the two estimates above as bytes_1[v] + (batch - 1) * per_sample[v] ([n_values] each,
 * copied; what shape inference at batches 1 and 2 gives, so a value whose batch is not dim 0, such as a
 * sequence-first [L, N, D], counts whole) instead of by dim 0; bytes_1 NULL goes back to dim 0. */
ptq_status ptq_exec_set_value_bytes(ptq_ctx *ctx, ptq_exec *e, const double *bytes_1, const double *per_sample);

/* 1 when g computes every sample of a batch on its own (runtime/batch_rows.c), from its values' shapes inferred
 * at batch 1 (at1) and batch 2 (at2), [n_values] each: every input and output has the batch as dim 0, every value
 * either that or a shape that does not follow the batch, no op that reduces, gathers or normalizes across dim 0,
 * and the batch size read by Shape only in shapes. 0 when it cannot show that (or out of memory). */
int ptq_graph_rows_independent(const ptq_graph *g, const ptq_value *at1, const ptq_value *at2);
/* Marks tap (with tap_user) as one that may see a batch in passes (ptq_exec_set_pass_rows): it counts a value's
 * samples by ptq_exec_this_run_samples, not by the batch. Unmarked taps keep their runs whole. */
void ptq_exec_tap_passes(ptq_exec *e, ptq_tap_fn tap, void *tap_user);
/* ptq_exec_set_pass_rows for the passes a session chose (ptq_session_open): on several threads they run side by side
 * when nothing taps the run, and a run with taps stays whole there (one after another, each pass's nodes split over
 * the pool again, was slower: bench/results/2026-12-05-cpu-passes-vm.md). */
void ptq_exec_set_pass_auto(ptq_exec *e, int64_t rows);
/* Marks tap (with tap_user) as ptq_exec_tap_passes does, and as one that may see passes side by side: called from
 * several pool threads at once (each its own worker, ptq_par_worker_now()), each value of a pass through an
 * executor of that thread's; it counts a value's samples by ptq_exec_this_run_samples. Unmarked taps keep the
 * passes one after another (or the batch whole, ptq_exec_set_pass_auto). */
void ptq_exec_tap_lanes(ptq_exec *e, ptq_tap_fn tap, void *tap_user);
/* Saves e's taps and overlay, and puts them back: ptq_runner_run does so when a run fails, since consumers add a tap
 * or set an overlay at the first batch and undo it in their end callback, which a failed run does not reach; a tap
 * left behind would feed (after the caller freed it) the calibration set or smoothing state of the failed run in
 * every later run of the session. One saved state per executor. */
void ptq_exec_hooks_save(ptq_exec *e);
void ptq_exec_hooks_restore(ptq_exec *e);
/* Inside a tap: the samples of the run (or pass) that made the value, on whichever executor the calling thread
 * runs; 0 outside a run. */
int64_t ptq_exec_this_run_samples(void);

#endif
