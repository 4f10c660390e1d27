/* The device observer (observers/observer_cuda.h): owns the state allocation
 * that kernels/cuda/observe.cu updates and reads; hands what it read to
 * ptq_observer_set_state. Without PTQ_CUDA it only says why. Covered by
 * tests/cuda_observer_dev.c. */
#include <stdio.h>
#include <stdlib.h>

#include "observers/observer_cuda.h"

#ifndef PTQ_CUDA

ptq_status ptq_observer_dev_init(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t n_bins, ptq_observer_dev **out)
{
    (void)d;
    (void)n_bins;
    *out = NULL;
    return ptq_fail(ctx, PTQ_ERR_NO_DEVICE, "device observer: ptq was built without CUDA");
}

ptq_status ptq_observer_dev_update(ptq_ctx *ctx, ptq_observer_dev *od, const float *x, int64_t n)
{
    (void)od;
    (void)x;
    (void)n;
    return ptq_fail(ctx, PTQ_ERR_NO_DEVICE, "device observer: ptq was built without CUDA");
}

ptq_status ptq_observer_dev_read(ptq_ctx *ctx, ptq_observer_dev *od, ptq_observer *dst)
{
    (void)od;
    (void)dst;
    return ptq_fail(ctx, PTQ_ERR_NO_DEVICE, "device observer: ptq was built without CUDA");
}

ptq_status ptq_observer_dev_fetch(ptq_ctx *ctx, ptq_cuda_dev *d, float *dst, const float *x, int64_t n)
{
    (void)d;
    (void)dst;
    (void)x;
    (void)n;
    return ptq_fail(ctx, PTQ_ERR_NO_DEVICE, "device observer: ptq was built without CUDA");
}

void *ptq_observer_dev_state(ptq_observer_dev *od)
{
    (void)od;
    return NULL;
}

int64_t ptq_observer_dev_n_bins(const ptq_observer_dev *od)
{
    (void)od;
    return 0;
}

void ptq_observer_dev_free(ptq_observer_dev *od)
{
    (void)od;
}

#else

struct ptq_observer_dev {
    ptq_cuda_dev *d; /* not owned */
    int64_t n_bins;
    void *state;     /* device, ptq_k_observe_dev_bytes(n_bins) */
};

ptq_status ptq_observer_dev_init(ptq_ctx *ctx, ptq_cuda_dev *d, int64_t n_bins, ptq_observer_dev **out)
{
    ptq_status st = PTQ_OK;
    ptq_observer_dev *od = NULL;
    *out = NULL;
    if (!d)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "device observer: no CUDA device given");
    if (n_bins == 0)
        n_bins = PTQ_OBSERVER_DEFAULT_BINS;
    if (n_bins < PTQ_OBSERVER_MIN_BINS || n_bins > PTQ_OBSERVER_MAX_BINS || (n_bins & (n_bins - 1)) != 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                        "device observer bin count must be a power of two in [%d, %d], got %lld",
                        PTQ_OBSERVER_MIN_BINS, PTQ_OBSERVER_MAX_BINS, (long long)n_bins);
    od = calloc(1, sizeof *od);
    if (!od)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for a device observer");
    od->d = d;
    od->n_bins = n_bins;
    PTQ_TRY(st, ptq_cuda_alloc(ctx, d, ptq_k_observe_dev_bytes(n_bins), &od->state), done);
    PTQ_TRY(st, ptq_k_observe_dev_clear_cuda(ctx, d, od->state, n_bins), done);
    *out = od;
    od = NULL;
done:
    ptq_observer_dev_free(od);
    return st;
}

ptq_status ptq_observer_dev_update(ptq_ctx *ctx, ptq_observer_dev *od, const float *x, int64_t n)
{
    if (n < 0 || (n > 0 && !x))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "device observer update: bad batch (%lld values at %p)",
                        (long long)n, (const void *)x);
    return ptq_k_observe_dev_update_cuda(ctx, od->d, od->state, od->n_bins, x, n);
}

ptq_status ptq_observer_dev_read(ptq_ctx *ctx, ptq_observer_dev *od, ptq_observer *dst)
{
    if (ptq_observer_n_bins(dst) != od->n_bins)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                        "device observer read: destination has %lld bins, the device observer %lld",
                        (long long)ptq_observer_n_bins(dst), (long long)od->n_bins);
    int64_t *hist = malloc((size_t)od->n_bins * sizeof *hist);
    if (!hist)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory reading a device observer of %lld bins",
                        (long long)od->n_bins);
    ptq_observe_stats s;
    int e = 0;
    ptq_status st = ptq_k_observe_dev_read_cuda(ctx, od->d, od->state, od->n_bins, &s, &e, hist);
    if (st == PTQ_OK) {
        const ptq_observer_stats os = {
            .count = s.count,
            .n_zero = s.n_zero,
            .n_nan = s.n_nan,
            .n_inf = s.n_inf,
            .n_binned = s.count - s.n_zero - s.n_nan - s.n_inf,
            .min = s.min,
            .max = s.max,
        };
        st = ptq_observer_set_state(ctx, dst, &os, e, hist);
        if (st != PTQ_OK) { /* the device computed a state no observer reaches: a bug here, not bad input */
            char why[PTQ_MSG_BYTES];
            snprintf(why, sizeof why, "%s", ctx->msg);
            st = ptq_fail(ctx, PTQ_ERR_INTERNAL, "device observer read back an impossible state: %s", why);
        }
    }
    free(hist);
    return st;
}

ptq_status ptq_observer_dev_fetch(ptq_ctx *ctx, ptq_cuda_dev *d, float *dst, const float *x, int64_t n)
{
    if (n < 0 || (n > 0 && (!x || !dst)))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "device observer fetch: bad tensor (%lld values at %p)",
                        (long long)n, (const void *)x);
    return ptq_cuda_download(ctx, d, dst, x, (size_t)n * sizeof *dst);
}

void *ptq_observer_dev_state(ptq_observer_dev *od)
{
    return od->state;
}

int64_t ptq_observer_dev_n_bins(const ptq_observer_dev *od)
{
    return od->n_bins;
}

void ptq_observer_dev_free(ptq_observer_dev *od)
{
    if (!od)
        return;
    ptq_cuda_release(od->d, od->state);
    free(od);
}

#endif
