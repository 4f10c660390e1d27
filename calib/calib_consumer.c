/* Calibration as a runner consumer (include/ptq/calib.h): the set's tap on
 * the session's executor for the run, the graph inputs observed before each
 * batch runs, device observers folded in at the end (and the outputs of
 * permuting nodes given their input's state, calib_set_aliases). Covered by
 * tests/cli_calib_test.py and tests/cuda_calib.c. */
#include "calib/calib_internal.h"
#include "core/parallel.h"
#include "ptq/calib.h"
#include "ptq/runner.h"
#include "runtime/backend.h"

static ptq_status calib_before(void *user, ptq_ctx *ctx, ptq_runner *r, ptq_batch *b)
{
    ptq_calib_set *set = user;
    ptq_exec *e = ptq_session_exec(ptq_runner_session(r));
    set->batch_n = b->n;
    set->exec = e; /* the tap counts a value's samples by e's run, a pass over part of the batch on the CPU */
    if (b->index == 0) {
        PTQ_TRY_RET(ptq_calib_set_bind(ctx, set, e));
        PTQ_TRY_RET(calib_set_aliases(ctx, set)); /* calib_end syncs: permuted copies may take their input's state */
        ptq_exec_remove_tap(e, ptq_calib_set_tap, set);
        PTQ_TRY_RET(ptq_exec_add_tap(ctx, e, ptq_calib_set_tap, set));
        /* it counts by the run's samples, and observes into each pool thread's observers when passes run side by
           side (folded in by ptq_calib_set_sync at the end) */
        PTQ_TRY_RET(calib_set_lanes(ctx, set, ptq_par_workers()));
        ptq_exec_tap_lanes(e, ptq_calib_set_tap, set);
        if (ptq_exec_cuda_dev(e)) /* the set's device observers may be fed a Conv chain's values in one pass */
            PTQ_TRY_RET(ptq_exec_tap_dev_state(ctx, e, ptq_calib_set_tap, set, calib_set_dev_state));
    }
    /* 8-bit images normalized on the GPU reach the set through its tap */
    return b->inputs ? ptq_calib_set_observe_inputs(ctx, set, b->inputs) : PTQ_OK;
}

static ptq_status calib_end(void *user, ptq_ctx *ctx, ptq_runner *r)
{
    ptq_calib_set *set = user;
    ptq_exec_remove_tap(ptq_session_exec(ptq_runner_session(r)), ptq_calib_set_tap, set);
    set->exec = NULL;
    return ptq_calib_set_sync(ctx, set);
}

ptq_consumer ptq_calib_set_consumer(ptq_calib_set *set)
{
    ptq_consumer c = {set, calib_before, NULL, calib_end};
    return c;
}
