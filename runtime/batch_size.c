/* The default batch size sized to the memory limit (include/ptq/batch.h):
 * the same estimate the runner checks --batch with (runtime/runner.c,
 * batch_fits). Covered by tests/badinput_test.py and
 * tests/cli_sensitivity_test.py (the kept copies). */
#include "ptq/batch.h"
#include "ptq/memory.h"
#include "runtime/backend.h"

/* Input bytes of one sample: the image's floats, or every named input's. */
static double sample_bytes(const ptq_session *s)
{
    int64_t c, h, w;
    ptq_session_input_shape(s, &c, &h, &w);
    if (!ptq_session_named_inputs(s))
        return (double)(c * h * w) * sizeof(float);
    double bytes = 0;
    for (int i = 0; i < ptq_session_graph(s)->n_inputs; i++) {
        ptq_ctx ctx;
        ptq_tensor meta;
        ptq_ctx_init(&ctx);
        if (ptq_session_input_meta(&ctx, s, i, &meta, NULL) == PTQ_OK) {
            meta.dims[0] = 1;
            bytes += (double)ptq_tensor_bytes(&meta);
        }
    }
    return bytes;
}

double ptq_batch_bytes(const ptq_session *s, int64_t batch, int n_bufs)
{
    return ptq_batch_bytes_keeping(s, batch, n_bufs, 0);
}

double ptq_batch_bytes_keeping(const ptq_session *s, int64_t batch, int n_bufs, int n_kept)
{
    const ptq_exec *e = ptq_session_exec(s);
    return (double)batch * (double)n_bufs * sample_bytes(s) + ptq_exec_live_estimate(e, batch) +
           (n_kept > 0 ? n_kept * ptq_exec_total_estimate(e, batch) : 0.0);
}

int64_t ptq_batch_default(const ptq_session *s, int64_t max_batch, int n_bufs)
{
    return ptq_batch_default_keeping(s, max_batch, n_bufs, 0);
}

int64_t ptq_batch_default_keeping(const ptq_session *s, int64_t max_batch, int n_bufs, int n_kept)
{
    int64_t b = 1;
    while (b * 2 <= max_batch)
        b *= 2;
    const double budget = (double)ptq_memory_budget();
    while (b > 1 && ptq_batch_bytes_keeping(s, b, n_bufs, n_kept) > budget)
        b /= 2;
    return b;
}
