/* Executing a graph on a batch: ptq_exec runs every node through a backend
 * (ref, cpu or cuda) and calls a tap on every tensor a node produces, which
 * is where observers and fake-quantization hang. Covered by tests/test_exec.c,
 * tests/onnx_conformance.c and tests/cuda_exec.c. */
#ifndef PTQ_RUNTIME_H
#define PTQ_RUNTIME_H

#include "ptq/export_api.h"

#include <stdint.h>

#include "ptq/graph.h"
#include "ptq/status.h"
#include "ptq/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU is 0, so a zeroed ptq_exec_params or ptq_session_opts runs where
 * the command's default (--device cpu) does, not on the slow reference. */
typedef enum ptq_device {
    PTQ_DEVICE_CPU = 0, /* kernels/cpu: OpenBLAS and threads (the default) */
    PTQ_DEVICE_REF = 1, /* kernels/ref: plain loops, one thread */
    PTQ_DEVICE_CUDA = 2
} ptq_device;

/* Called once per produced tensor, after the node ran; t may be on the
 * device (t->mem). A non-OK return stops the run with that status. A graph
 * input made by ptq_exec_run_u8 is tapped too, with node_index -1. */
typedef ptq_status (*ptq_tap_fn)(void *user, ptq_ctx *ctx, const ptq_graph *g, int node_index, int value_index,
                                 const ptq_tensor *t);

/* The math GPU convolutions and matrix products run in. FP32 (the default)
 * is exact FP32 FMA; TF32 uses the tensor cores' 10-bit-mantissa products
 * (FP32 sums); FP64 keeps the tensors FP32 but sums each product in double
 * and rounds it once, as the reference kernels do (slower; the FP32 sums'
 * order no longer moves the result). The CPU computes FP32 whatever is asked. */
typedef enum ptq_math { PTQ_MATH_FP32 = 0, PTQ_MATH_TF32 = 1, PTQ_MATH_FP64 = 2 } ptq_math;
/* "fp32" | "tf32" | "fp64" into a ptq_math; PTQ_ERR_INVALID_ARG names anything else. */
PTQ_API ptq_status ptq_math_parse(ptq_ctx *ctx, const char *name, ptq_math *out);
PTQ_API const char *ptq_math_name(ptq_math m);

typedef struct ptq_exec_params {
    ptq_device device; /* 0: PTQ_DEVICE_CPU */
    int cuda_device; /* GPU ordinal (--device cuda:N) */
    ptq_tap_fn tap;  /* a first tap, or NULL; more with ptq_exec_add_tap */
    void *tap_user;
    int profile;     /* 1: wait for each node's device work so ptq_exec_node_seconds is exact */
    ptq_math math;   /* on the GPU; the CPU computes FP32 */
} ptq_exec_params;

typedef struct ptq_exec ptq_exec;

/* A quantization overlay: what the executor substitutes and rounds while the
 * graph itself stays untouched, so one executor (weights uploaded once) runs
 * FP32 and any number of overlays in turn. quant/fake_quant.c makes one
 * from a precision plan. Everything it points at must stay valid and
 * unchanged while it is set on an executor. */
typedef struct ptq_overlay {
    void *user;
    /* Replacement data for constant value v (float32, the value's shape,
     * host memory), or NULL to use the graph's; *source names its owner
     * (ptq_overlay_new_id): device copies are cached by (source, v), so one
     * source must always give the same data for a value. */
    const float *(*weight)(void *user, int value_index, uint64_t *source);
    /* Rounds t (value v, float32, on the host or on e's device) in place. */
    ptq_status (*round)(void *user, ptq_ctx *ctx, const ptq_exec *e, int value_index, ptq_tensor *t);
    const unsigned char *rounds; /* [g->n_values]: 1 where round applies (produced tensors and graph inputs) */
    /* Computes node k in place of its op where runs[k] is 1 (runs NULL: nowhere), on the host whatever the
     * executor's device: in [n_in] the node's inputs (NULL where omitted) and out [n_out] its outputs, host
     * tensors, the outputs shaped and allocated as for the op; rounding and taps follow as for any node.
     * Called from several threads at once when the executor runs passes side by side. */
    ptq_status (*run)(void *user, ptq_ctx *ctx, int node_index, const ptq_tensor *const *in, int n_in,
                      ptq_tensor *const *out, int n_out);
    const unsigned char *runs; /* [g->n_nodes] */
} ptq_overlay;

/* A process-unique id for an overlay's weight source (thread-safe). */
PTQ_API uint64_t ptq_overlay_new_id(void);

/* Checks that every node is supported (PTQ_ERR_UNSUPPORTED names the node,
 * op type, domain and opset otherwise) and prepares the device; weights
 * are uploaded once. */
PTQ_API ptq_status ptq_exec_create(ptq_ctx *ctx, const ptq_graph *g, const ptq_exec_params *p, ptq_exec **out);
/* Runs one batch. inputs: [g->n_inputs] host tensors matching the graph
 * inputs in order (never written: an input the overlay rounds is copied
 * first). outputs: [g->n_outputs], filled with host tensors owned by the
 * executor, valid until the next run or ptq_exec_free. */
PTQ_API ptq_status ptq_exec_run(ptq_ctx *ctx, ptq_exec *e, const ptq_tensor *inputs, ptq_tensor *outputs);
/* Runs nodes node_begin.. only, reading every value produced before
 * node_begin (and the graph inputs) from the copies the last ptq_exec_run
 * kept (ptq_exec_keep); with node_begin 0 the kept inputs are rounded again
 * by the overlay. Kept copies are never changed by it, so a shared prefix
 * is computed once and each suffix run from it in turn. A value needed but
 * not kept fails with PTQ_ERR_INVALID_ARG naming it. */
PTQ_API ptq_status ptq_exec_run_from(ptq_ctx *ctx, ptq_exec *e, int node_begin, ptq_tensor *outputs);
/* Runs the whole graph again on the kept inputs under the current overlay
 * and, unlike ptq_exec_run_from, replaces the kept copies of produced
 * values with this run's (the kept inputs stay as given): later
 * ptq_exec_run_from calls then share this run's prefix, e.g. a quantized
 * plan's, instead of the FP32 one. */
PTQ_API ptq_status ptq_exec_rerun(ptq_ctx *ctx, ptq_exec *e, ptq_tensor *outputs);
/* Lets ptq_exec_run on the CPU run a batch of more than `rows` samples in passes of at most `rows` (0, the
 * default: whole batches), each pass's values small enough to stay in the CPU's caches. Only for a graph that
 * computes each sample on its own, which gives the same bytes either way: ptq_session_open checks that from
 * the shapes at batches 1 and 2 and sets it (PTQ_PASS_ROWS in the environment overrides its choice; 0 turns
 * the passes off). Runs with kept values, taps that ptq does not mark, and other devices, stay whole. */
PTQ_API void ptq_exec_set_pass_rows(ptq_exec *e, int64_t rows);
/* The samples per pass set (0: none), and in *n_passes (when not NULL) the passes run over e's life. */
PTQ_API int64_t ptq_exec_pass_rows(const ptq_exec *e, int64_t *n_passes);
/* How ptq_exec_run has run passes over e's life: 0 never, 1 one after another only, N > 1 side by side on N pool
 * threads in some run (each thread's passes through an executor of its own, each node on that thread alone; without
 * taps only: a run with taps has its passes one after another). The passes of a batch shorter than N times the
 * rows set are made shorter, so that every thread has one. The same bytes every way. */
PTQ_API int ptq_exec_pass_threads(const ptq_exec *e);
/* With the passes ptq_session_open chose, on three threads or more: the first seven runs of one batch size run whole
 * batches and passes side by side in turn, the first three to warm up, and later runs keep the faster of each way's
 * best timed run (which depends on the model and the CPU; the same bytes either way). On two threads passes run
 * side by side from the first run, untimed. Returns 0 before that choice, 1 whole batches, 2 side by side; *whole_s
 * and *side_s (when not NULL) the seconds a sample each took (both 0 when nothing was timed). */
PTQ_API int ptq_exec_pass_choice(const ptq_exec *e, double *whole_s, double *side_s);
/* 8-bit images of the model's input size, as a graph input. */
typedef struct ptq_u8_batch {
    const uint8_t *data; /* host memory: [n, h, w, c] interleaved, or [n, c, h, w] when planar */
    int64_t n, h, w, c;  /* c: 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA */
    int planar;
} ptq_u8_batch;
typedef struct ptq_preprocess ptq_preprocess; /* include/ptq/dataset.h */
/* ptq_exec_run for a model of one input made from 8-bit images by p
 * (without resizing: p->height x p->width images, p->resize 0 or their
 * shorter side, else PTQ_ERR_INVALID_ARG): on a GPU the bytes are
 * uploaded (4x less than floats) and normalized there, elsewhere by
 * ptq_preprocess_image; the input is the same floats either way. Kept
 * and rounded like any input; ptq_exec_run_from reuses it. */
PTQ_API ptq_status ptq_exec_run_u8(ptq_ctx *ctx, ptq_exec *e, const ptq_u8_batch *images, const ptq_preprocess *p,
                                   ptq_tensor *outputs);
/* From the next ptq_exec_run on, keep (1) or stop keeping (0) a copy of
 * value v as that run produced it (after the overlay's rounding). */
PTQ_API ptq_status ptq_exec_keep(ptq_ctx *ctx, ptq_exec *e, int value_index, int keep);
/* Keeps every value ptq_exec_run_from(node_begin) reads: graph inputs and
 * values produced before node_begin that a node from node_begin on (or a
 * graph output) consumes. */
PTQ_API ptq_status ptq_exec_keep_for(ptq_ctx *ctx, ptq_exec *e, int node_begin);
/* Sets the overlay later runs apply (NULL: plain FP32). ov is copied; what
 * it points at is not. Device copies of replacement weights are kept for
 * the PTQ_EXEC_WEIGHT_SOURCES sources used last, so overlays that draw on
 * a few sources upload each weight once. */
#define PTQ_EXEC_WEIGHT_SOURCES 4
PTQ_API void ptq_exec_set_overlay(ptq_exec *e, const ptq_overlay *ov);
/* Adds a tap, called after the overlay's rounding, in the order added, on
 * every produced tensor. At most PTQ_EXEC_MAX_TAPS. */
#define PTQ_EXEC_MAX_TAPS 8
PTQ_API ptq_status ptq_exec_add_tap(ptq_ctx *ctx, ptq_exec *e, ptq_tap_fn tap, void *tap_user);
/* Removes the tap added with this function and user (if any). */
PTQ_API void ptq_exec_remove_tap(ptq_exec *e, ptq_tap_fn tap, void *tap_user);
/* Replaces every tap with this one (tap may be NULL: none). */
PTQ_API void ptq_exec_set_tap(ptq_exec *e, ptq_tap_fn tap, void *tap_user);
PTQ_API const ptq_graph *ptq_exec_graph(const ptq_exec *e);
/* "cpu", "ref" or "cuda (NVIDIA H200)". */
PTQ_API const char *ptq_exec_device_name(const ptq_exec *e);
/* The math the executor's device runs in (FP32 on the CPU whatever was asked). */
PTQ_API ptq_math ptq_exec_math(const ptq_exec *e);
/* PTQ_DEVICE_REF, _CPU or _CUDA: where the executor runs. */
PTQ_API ptq_device ptq_exec_device(const ptq_exec *e);
/* Number of nodes the GPU declined and the CPU ran (0 on CPU backends). */
PTQ_API int ptq_exec_n_fallback_nodes(const ptq_exec *e);
/* Seconds spent in node node_index's kernels over all runs so far (the
 * backend's run call; on a GPU only with params.profile, else launch time). */
PTQ_API double ptq_exec_node_seconds(const ptq_exec *e, int node_index);
/* With params.profile: seconds spent after the nodes' kernels in the plan's
 * rounding (fake quantization) and in the taps (calibration's observers),
 * summed over all runs so far; 0 without it. */
PTQ_API double ptq_exec_round_seconds(const ptq_exec *e);
PTQ_API double ptq_exec_tap_seconds(const ptq_exec *e);
/* With params.profile: the part of ptq_exec_tap_seconds spent on node
 * node_index's outputs (a fused Conv chain's observers count as the Conv's). */
PTQ_API double ptq_exec_node_tap_seconds(const ptq_exec *e, int node_index);
/* Allocations the executor made (host and device, buffers and copies) since
 * it was created: steady runs of one batch size add none. */
PTQ_API int64_t ptq_exec_n_allocs(const ptq_exec *e);
/* The most bytes of run buffers (the values passed between nodes and the
 * scratch of omitted outputs, the planned arena included; kept copies,
 * weights and kernels' own scratch not) e has held at once in memory mem
 * since it was created. Bounded by tensor liveness: a buffer is released
 * or reused once its value's last consumer has run, on the host from the
 * first run on, on a device from the first planned run on. */
PTQ_API size_t ptq_exec_peak_bytes(const ptq_exec *e, ptq_mem mem);
/* Conv -> Add -> Relu chains run so far as one kernel, where no tap,
 * rounding or kept copy needs the values between them: on a GPU cuDNN's
 * epilogue (the Conv's bias, a residual Add and a Relu), on the CPU the Add
 * and Relu on each output tile right after its GEMM (the bits of the nodes
 * run apart). PTQ_EPILOGUE=0 in the environment turns this off; always 0 on
 * the reference backend (PTQ_DEVICE_REF). */
PTQ_API int64_t ptq_exec_n_epilogues(const ptq_exec *e);
/* Host memory for e's inputs: page-locked on a GPU, so uploads from it run
 * at full speed beside the host; plain malloc elsewhere. Free it with
 * ptq_exec_host_free on the same executor. */
PTQ_API ptq_status ptq_exec_host_alloc(ptq_ctx *ctx, ptq_exec *e, size_t n_bytes, void **out);
PTQ_API void ptq_exec_host_free(ptq_exec *e, void *p);
PTQ_API void ptq_exec_free(ptq_exec *e);

/* Checks one node of g (op known, opset, attributes as far as can be seen
 * without shapes); used by ptq_exec_create and `ptq info`. */
PTQ_API ptq_status ptq_graph_check_supported(ptq_ctx *ctx, const ptq_graph *g);

/* Constant folding (runtime/fold.c): every node whose inputs are all constants is computed once, with the
 * reference kernels, and leaves the graph, its outputs constants (PTQ_VALUE_FOLDED): a weight the model stores in
 * float16 and casts, or an Identity, Transpose or Constant node's output, is then a weight like an initializer.
 * Left to run: a node of an op ptq cannot run (nothing folds then), one writing a graph output, one that fails
 * (its run reports why), one whose outputs exceed 4x its inputs and 1 MiB, or would take what folding keeps past
 * 8x the model's constants plus 1 MiB. Errors only when out of memory, which leaves g half folded: free it. */
PTQ_API ptq_status ptq_graph_fold_constants(ptq_ctx *ctx, ptq_graph *g);
/* ptq_graph_load_onnx (ONNX or Keras), then ptq_graph_fold_constants: how every command loads a model, so that
 * plans, sessions and exports see one graph. */
PTQ_API ptq_status ptq_model_load(ptq_ctx *ctx, const char *path, ptq_graph **out);

/* Static shape and dtype inference: sets dtype, ndim and dims of every
 * node output in g->values, with the graph inputs' unknown (symbolic) dims
 * set to batch. Results computed from constants alone are folded so that
 * shape inputs (Reshape's shape) are known; a shape that depends on run-time
 * data gives PTQ_ERR_UNSUPPORTED; a batch below 1 PTQ_ERR_INVALID_ARG. */
PTQ_API ptq_status ptq_graph_infer_shapes(ptq_ctx *ctx, ptq_graph *g, int64_t batch);
/* Every value's dtype and rank, for what needs no data (plans, exports,
 * info): ptq_graph_infer_shapes at batch 1 with every other unknown input
 * dim (a text model's sequence length) taken as 1 too, so the dims it
 * leaves in g are those of that smallest input, not of the data; where the
 * shapes do not fit together at 1 (a Reshape of the sequence to [N, L / 2,
 * 2 * H]), the smallest of 2, 4, ..., 512 at which they do. */
PTQ_API ptq_status ptq_graph_infer_types(ptq_ctx *ctx, ptq_graph *g);
/* The same, and *dim (may be NULL) the value the unknown dims took (0 on failure). */
PTQ_API ptq_status ptq_graph_infer_types_at(ptq_ctx *ctx, ptq_graph *g, int64_t *dim);

/* Threads the CPU path uses (ptq's pool; OpenBLAS runs single-threaded on
 * each); the default is every online core. */
PTQ_API void ptq_cpu_set_threads(int n_threads);
/* The OpenBLAS kernel set in use ("SkylakeX", "Haswell", "Prescott", ...). */
PTQ_API const char *ptq_cpu_blas_core(void);
/* A faster kernel set this CPU supports when OpenBLAS fell back to a generic
 * one (it does not know every new processor), else NULL. OpenBLAS reads its
 * choice from the OPENBLAS_CORETYPE environment variable when it loads, so a
 * program acts on this before it starts (cli/main.c re-executes itself). */
PTQ_API const char *ptq_cpu_blas_core_suggested(void);
/* 1 when this CPU has VNNI (AVX512-VNNI or AVX-VNNI), whose integer dot
 * products onnxruntime's uint8 x int8 CPU kernels use; 0 on an x86-64 CPU
 * without it, where those kernels sum pairs of products in int16 with
 * saturation (plan with reduce_range, ptq_plan_reduce_range); -1 where
 * ptq cannot tell (not x86-64). */
PTQ_API int ptq_cpu_has_vnni(void);

/* 1 when a CUDA build sees a usable GPU; else 0 with why filled in (why may be NULL). */
PTQ_API int ptq_cuda_available(char *why, size_t n_why);
/* Number of usable GPUs (0 with why filled in when none). */
PTQ_API int ptq_cuda_n_devices(char *why, size_t n_why);

#ifdef __cplusplus
}
#endif
#endif
