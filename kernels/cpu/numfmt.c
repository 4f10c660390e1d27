/* Rounding to a plan's precisions on the CPU (kernels/numfmt.h): the
 * reference kernels on pieces of the array across the thread pool. Each
 * element is rounded on its own, so the result is the reference's bit for
 * bit (tests/parity_elementwise.c). */
#include <string.h>

#include "core/parallel.h"
#include "kernels/numfmt.h"
#include "ptq/plan.h"

enum { ROUND_PARALLEL_MIN = 1 << 15 }; /* floats a piece at least: below it a thread costs more than it saves */

typedef struct round_job {
    ptq_prec prec;
    float scale;
    int32_t zp, qmax;
    const float *x;
    float *y;
    const float *scales; /* per channel: runs of inner floats */
    int64_t n_ch, inner;
} round_job;

static void round_span(ptq_prec prec, float scale, int32_t zp, int32_t qmax, const float *x, int64_t n, float *y)
{
    switch (prec) {
    case PTQ_PREC_FP16: ptq_k_round_fp16_ref(x, n, y); break;
    case PTQ_PREC_INT8: ptq_k_fake_quant_int8_ref(x, n, scale, qmax, y); break;
    case PTQ_PREC_UINT8: ptq_k_fake_quant_uint8_ref(x, n, scale, zp, y); break;
    case PTQ_PREC_FP8_E4M3: ptq_k_fake_quant_fp8_ref(PTQ_FP8_E4M3, x, n, scale, y); break;
    case PTQ_PREC_FP8_E5M2: ptq_k_fake_quant_fp8_ref(PTQ_FP8_E5M2, x, n, scale, y); break;
    case PTQ_PREC_FP32:
    case PTQ_FMT_BF16:
        if (x != y)
            memcpy(y, x, (size_t)n * sizeof *y);
        break;
    }
}

static void round_piece(void *arg, int64_t begin, int64_t end, int worker)
{
    const round_job *j = arg;
    (void)worker;
    round_span(j->prec, j->scale, j->zp, j->qmax, j->x + begin, end - begin, j->y + begin);
}

void ptq_k_round_cpu(ptq_fmt prec, float scale, int32_t zp, int32_t qmax, const float *x, int64_t n, float *y)
{
    round_job job = {.prec = prec, .scale = scale, .zp = zp, .qmax = qmax, .x = x, .y = y};
    ptq_parallel_for(n, ptq_par_grain(n, 4, ROUND_PARALLEL_MIN), round_piece, &job);
}

static void channels_piece(void *arg, int64_t begin, int64_t end, int worker)
{
    const round_job *j = arg;
    (void)worker;
    for (int64_t r = begin; r < end; r++)
        round_span(j->prec, j->scales[r % j->n_ch], 0, j->qmax, j->x + r * j->inner, j->inner, j->y + r * j->inner);
}

void ptq_k_round_channels_cpu(ptq_fmt prec, const float *scales, int64_t n_ch, int32_t qmax, int64_t n_runs,
                              int64_t inner, const float *x, float *y)
{
    round_job job = {.prec = prec, .qmax = qmax, .x = x, .y = y, .scales = scales, .n_ch = n_ch, .inner = inner};
    const int64_t min_runs = inner > 0 && inner < ROUND_PARALLEL_MIN ? ROUND_PARALLEL_MIN / inner : 1;
    ptq_parallel_for(n_runs, ptq_par_grain(n_runs, 4, min_runs), channels_piece, &job);
}
