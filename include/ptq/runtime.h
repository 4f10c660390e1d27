/* Executing a graph on a batch: ptq_exec runs every node through a backend
 * (ref, cpu or cuda) and calls a tap on every tensor a node produces, which
 * is where observers and fake-quantization hang. Covered by tests/test_exec.c,
 * tests/onnx_conformance.c and tests/cuda_exec.c. */
#ifndef PTQ_RUNTIME_H
#define PTQ_RUNTIME_H

#include "ptq/export_api.h"
#include "ptq/graph.h"
#include "ptq/status.h"
#include "ptq/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ptq_device {
    PTQ_DEVICE_REF = 0, /* kernels/ref: plain loops, one thread */
    PTQ_DEVICE_CPU = 1, /* kernels/cpu: OpenBLAS and threads */
    PTQ_DEVICE_CUDA = 2
} ptq_device;

/* Called once per produced tensor, after the node ran; t may be on the
 * device (t->mem). A non-OK return stops the run with that status. */
typedef ptq_status (*ptq_tap_fn)(void *user, ptq_ctx *ctx, const ptq_graph *g, int node_index, int value_index,
                                 const ptq_tensor *t);

typedef struct ptq_exec_params {
    ptq_device device;
    int cuda_device; /* GPU ordinal */
    ptq_tap_fn tap;  /* may be NULL */
    void *tap_user;
    int profile;     /* 1: wait for each node's device work so ptq_exec_node_seconds is exact */
} ptq_exec_params;

typedef struct ptq_exec ptq_exec;

/* Checks that every node is supported (PTQ_ERR_UNSUPPORTED names the node,
 * op type, domain and opset otherwise) and prepares the device; weights
 * are uploaded once. */
PTQ_API ptq_status ptq_exec_create(ptq_ctx *ctx, const ptq_graph *g, const ptq_exec_params *p, ptq_exec **out);
/* Runs one batch. inputs: [g->n_inputs] host tensors matching the graph
 * inputs in order. outputs: [g->n_outputs], filled with host tensors owned
 * by the executor, valid until the next run or ptq_exec_free. */
PTQ_API ptq_status ptq_exec_run(ptq_ctx *ctx, ptq_exec *e, const ptq_tensor *inputs, ptq_tensor *outputs);
/* Replaces the tap the executor was created with (tap may be NULL). */
PTQ_API void ptq_exec_set_tap(ptq_exec *e, ptq_tap_fn tap, void *tap_user);
/* "cpu", "ref" or "cuda (NVIDIA H200)". */
PTQ_API const char *ptq_exec_device_name(const ptq_exec *e);
/* Number of nodes the GPU declined and the CPU ran (0 on CPU backends). */
PTQ_API int ptq_exec_n_fallback_nodes(const ptq_exec *e);
/* Seconds spent in node node_index's kernels over all runs so far (the
 * backend's run call; on a GPU only with params.profile, else launch time). */
PTQ_API double ptq_exec_node_seconds(const ptq_exec *e, int node_index);
PTQ_API void ptq_exec_free(ptq_exec *e);

/* Checks one node of g (op known, opset, attributes as far as can be seen
 * without shapes); used by ptq_exec_create and `ptq info`. */
PTQ_API ptq_status ptq_graph_check_supported(ptq_ctx *ctx, const ptq_graph *g);

/* Static shape and dtype inference: sets dtype, ndim and dims of every
 * node output in g->values, with the graph inputs' unknown (symbolic) dims
 * set to batch. Results computed from constants alone are folded so that
 * shape inputs (Reshape's shape) are known; a shape that depends on run-time
 * data gives PTQ_ERR_UNSUPPORTED. */
PTQ_API ptq_status ptq_graph_infer_shapes(ptq_ctx *ctx, ptq_graph *g, int64_t batch);

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

/* 1 when a CUDA build sees a usable GPU; else 0 with why filled in (why may be NULL). */
PTQ_API int ptq_cuda_available(char *why, size_t n_why);

#ifdef __cplusplus
}
#endif
#endif
