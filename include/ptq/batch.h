/* The default batch size: the largest power of two up to a cap whose input
 * buffers and activations fit the memory limit (ptq/memory.h), estimated
 * as the runner checks --batch. In runtime/batch_size.c; covered by
 * tests/badinput_test.py ("flags: --max-memory 3M without --batch"). */
#ifndef PTQ_BATCH_H
#define PTQ_BATCH_H

#include <stdint.h>

#include "ptq/export_api.h"
#include "ptq/runner.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes a batch of `batch` samples of session s takes: n_bufs input buffers
 * (of float32 images, or of every named input in its dtype) and the executor's activations alive at once at the
 * worst step (by tensor liveness), the figure the runner checks against
 * the memory limit before it allocates anything. */
PTQ_API double ptq_batch_bytes(const ptq_session *s, int64_t batch, int n_bufs);
/* The same plus n_kept copies of every activation of a run: what
 * sensitivity and the planners that measure (ptq plan --budget, --method
 * auto) hold at once, keeping the FP32 and the default plan's values. */
PTQ_API double ptq_batch_bytes_keeping(const ptq_session *s, int64_t batch, int n_bufs, int n_kept);

/* The largest power of two <= max_batch (>= 1) whose ptq_batch_bytes fits
 * the memory limit; 1 when none does (the runner then refuses it with a
 * message). */
PTQ_API int64_t ptq_batch_default(const ptq_session *s, int64_t max_batch, int n_bufs);
/* The same with ptq_batch_bytes_keeping's estimate. */
PTQ_API int64_t ptq_batch_default_keeping(const ptq_session *s, int64_t max_batch, int n_bufs, int n_kept);

#ifdef __cplusplus
}
#endif
#endif
