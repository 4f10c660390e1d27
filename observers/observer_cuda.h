/* Internal: an observer whose state lives on one GPU (kernels/cuda/observe.cu),
 * fed device tensors without a host sync per batch and read back into a host
 * ptq_observer, bit-identical to feeding that observer the same values.
 * Covered by tests/cuda_observer_dev.c. */
#ifndef PTQ_OBSERVER_CUDA_H
#define PTQ_OBSERVER_CUDA_H

#include <stdint.h>

#include "kernels/cuda/cuda_kernels.h"
#include "ptq/observer.h"

typedef struct ptq_observer_dev ptq_observer_dev;

/* d: not owned, must outlive the observer. n_bins as ptq_observer_init.
 * PTQ_ERR_NO_DEVICE when ptq was built without CUDA. */
ptq_status ptq_observer_dev_init(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t n_bins, ptq_observer_dev **out);

/* x: [n] float32 in device memory, left alone until d's stream reaches the
 * work; queued on d's stream, returns without waiting for the GPU. A batch
 * is read once while its values stay below the range already held (2^e);
 * when some reach it, the range grows on the device and only when more than
 * 65536 values did is x read a second time. So a tensor's first batch of
 * more than 65536 finite nonzero values is read twice (it has no range). An
 * error from here leaves od's state unknown: free it. */
ptq_status ptq_observer_dev_update(ptq_ctx *ctx, ptq_observer_dev *od, const float *x, int64_t n);

/* Waits for d's stream, then copies x: [n] float32 in device memory into
 * dst: [n] on the host (a small tensor the host observes instead:
 * calib_set.c's copies). */
ptq_status ptq_observer_dev_fetch(ptq_ctx *ctx, ptq_cuda_dev *d, float *dst, const float *x, int64_t n);

/* Waits, downloads, and makes dst's state equal to everything od saw (dst
 * has od's n_bins, else PTQ_ERR_INVALID_ARG and dst is left as it was). */
ptq_status ptq_observer_dev_read(ptq_ctx *ctx, ptq_observer_dev *od, ptq_observer *dst);

/* The state kernels/cuda/observe.cu updates (ptq_k_observe_dev_bytes of
 * the n_bins bins), for passes that feed several observers at once. */
void *ptq_observer_dev_state(ptq_observer_dev *od);
int64_t ptq_observer_dev_n_bins(const ptq_observer_dev *od);

/* Waits for queued work first; NULL-safe. */
void ptq_observer_dev_free(ptq_observer_dev *od);

#endif
