/* SmoothQuant-style migration of activation outliers into the weights
 * (Xiao et al. 2023): for a LayerNormalization whose output X [..., C]
 * feeds only MatMul/Gemm nodes with constant weights W (input channel c),
 * s[c] = max|X[..., c]|^alpha / max|W[c, :]|^(1 - alpha) over every
 * consumer; the LayerNorm's scale and bias are divided by s and each W's
 * rows multiplied by it, so X W is unchanged in exact arithmetic while X's
 * channels even out for per-tensor quantization. The per-channel maxima
 * of X come from a run over calibration samples (a runner consumer).
 * quant/smooth.c; covered by tests/smooth_test.py. */
#ifndef PTQ_SMOOTH_H
#define PTQ_SMOOTH_H

#include <stdint.h>

#include "ptq/export_api.h"
#include "ptq/graph.h"
#include "ptq/runner.h"
#include "ptq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ptq_smooth ptq_smooth;

/* Finds g's smoothable groups: a LayerNormalization over the last axis
 * with initializer scale (and bias) [C] that no other node reads, whose
 * output is no graph output and is read only as input A of MatMul (B an
 * initializer [C, K]) or Gemm (transA 0, B an initializer [C, K], or
 * [K, C] with transB) whose B no other node reads. None found is
 * PTQ_ERR_UNSUPPORTED saying why nothing can be smoothed. */
PTQ_API ptq_status ptq_smooth_create(ptq_ctx *ctx, const ptq_graph *g, ptq_smooth **out);
PTQ_API void ptq_smooth_free(ptq_smooth *s);

PTQ_API int ptq_smooth_n_groups(const ptq_smooth *s);
/* Group i: its activation's name, channel count C and consumer count. */
PTQ_API const char *ptq_smooth_group_name(const ptq_smooth *s, int i, int64_t *n_channels, int *n_consumers);

/* Observes the per-channel max|X| of every group on the batches it runs
 * (host tensors: run the session on the CPU; NaN and Inf fail naming the
 * tensor). */
PTQ_API ptq_consumer ptq_smooth_consumer(ptq_smooth *s);

/* After the run: group i's max/median per-channel max|X| before and after
 * the migration by alpha (how uneven its channels are). */
PTQ_API void ptq_smooth_spread(const ptq_smooth *s, int i, double alpha, double *before, double *after);

/* Writes the model at model_path (ONNX) with the migration by alpha
 * (0 <= alpha <= 1) applied to every group, to out_path (atomically). */
PTQ_API ptq_status ptq_smooth_write(ptq_ctx *ctx, const ptq_smooth *s, const char *model_path, double alpha,
                                    const char *out_path);

#ifdef __cplusplus
}
#endif
#endif
