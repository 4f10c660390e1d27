/* Simulated quantization of a graph under a precision plan: weights are
 * quantized and dequantized once (per output channel), activations in place
 * as each is produced (through the executor's tap), graph inputs before a
 * run; the CPU uses kernels/ref/numfmt.c, the GPU the CUDA versions that
 * tests/cuda_parity_numfmt.c holds bit-exact to them. quant/fake_quant.c;
 * covered by tests/test_fake_quant.c and tests/cuda_fake_quant.c. */
#ifndef PTQ_FAKE_QUANT_H
#define PTQ_FAKE_QUANT_H

#include "ptq/export_api.h"
#include "ptq/plan.h"
#include "ptq/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ptq_fq ptq_fq;

/* Prepares g (shapes inferred) for plan p (checked with ptq_plan_check
 * first): the quantized-dequantized weights go into buffers the fq owns and
 * g's weight values point at them until ptq_fq_free restores them. Create
 * the executor from g afterwards; g serves one fq at a time. */
PTQ_API ptq_status ptq_fq_create(ptq_ctx *ctx, ptq_graph *g, const ptq_plan *p, ptq_fq **out);
PTQ_API void ptq_fq_free(ptq_fq *fq);

/* Pass ptq_fq_tap and the fq as the executor's tap; bind once the executor
 * exists (device tensors are rounded on its GPU); before each run, round the
 * graph inputs the plan names (host tensors, in place). */
PTQ_API ptq_status ptq_fq_tap(void *user, ptq_ctx *ctx, const ptq_graph *g, int node_index, int value_index,
                              const ptq_tensor *t);
PTQ_API ptq_status ptq_fq_bind(ptq_ctx *ctx, ptq_fq *fq, ptq_exec *e);
PTQ_API ptq_status ptq_fq_apply_inputs(ptq_ctx *ctx, ptq_fq *fq, ptq_tensor *inputs);

#ifdef __cplusplus
}
#endif
#endif
