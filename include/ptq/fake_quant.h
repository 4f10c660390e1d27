/* Simulated quantization of a graph under a precision plan: weights are
 * quantized and dequantized once (per output channel), activations in place
 * as each is produced, graph inputs on a copy, all as an overlay the
 * executor consults; the CPU uses kernels/ref/numfmt.c, the GPU the CUDA versions that
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

/* The plan p (checked with ptq_plan_check first) as an overlay on g
 * (shapes inferred; never edited): the quantized-dequantized weights in
 * buffers the fq owns, the rounding of every planned activation and graph
 * input. Set it on any executor of g with ptq_exec_set_overlay; g and the
 * fq must outlive that use. */
PTQ_API ptq_status ptq_fq_create(ptq_ctx *ctx, const ptq_graph *g, const ptq_plan *p, ptq_fq **out);
PTQ_API const ptq_overlay *ptq_fq_overlay(const ptq_fq *fq);
PTQ_API void ptq_fq_free(ptq_fq *fq);

#ifdef __cplusplus
}
#endif
#endif
