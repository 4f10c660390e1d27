/* Counting one quantized configuration against FP32 over labelled samples
 * (quant/quant_internal.h): integer counts and exact sums, so the figures
 * do not depend on batch size or order. Used by the sensitivity analysis
 * and the budgeted planner; covered by tests/test_sensitivity.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/logits.h"
#include "quant/quant_internal.h"

ptq_status qfig_init(ptq_ctx *ctx, qfig *a, int k)
{
    memset(a, 0, sizeof *a);
    ptq_xsum_init(&a->signal_sq);
    ptq_xsum_init(&a->noise_sq);
    ptq_xsum_init(&a->kl);
    if (!(a->tp = calloc((size_t)k + 1, sizeof *a->tp)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for quantization figures");
    return PTQ_OK;
}

void qfig_free(qfig *a)
{
    free(a->tp);
    a->tp = NULL;
}

void qfig_add(qfig *a, int k, int64_t n, const int32_t *labels, const float *fp32, const int32_t *pred_fp32,
              const float *q)
{
    for (int64_t i = 0; i < n; i++) {
        const float *f = fp32 + i * k, *qi = q + i * k;
        const int pred = ptq_logits_argmax(qi, k);
        a->n++;
        a->agree += pred == pred_fp32[i];
        if (pred == labels[i]) {
            a->top1++;
            a->tp[labels[i]]++;
        }
        double sig, noise, kl;
        if (ptq_logits_terms(f, qi, k, &sig, &noise, &kl)) {
            ptq_xsum_add(&a->signal_sq, sig);
            ptq_xsum_add(&a->noise_sq, noise);
            ptq_xsum_add(&a->kl, kl);
            a->n_measured++;
        }
    }
}

void qfig_figures(const qfig *a, ptq_sens_figures *f)
{
    const double sig = ptq_xsum_value(&a->signal_sq), noise = ptq_xsum_value(&a->noise_sq);
    f->n = a->n;
    f->top1 = a->top1;
    f->agree = a->agree;
    f->sqnr_db = a->n_measured == 0 ? NAN : noise == 0 ? INFINITY : 10.0 * log10(sig / noise);
    f->kl_nats = a->n_measured ? ptq_xsum_value(&a->kl) / (double)a->n_measured : NAN;
    f->tp = a->tp;
}
