/* Counting one quantized configuration against FP32 over labelled samples
 * (quant/quant_internal.h): integer counts and exact sums, so the figures
 * do not depend on batch size or order. Used by the sensitivity analysis
 * and the budgeted planner; covered by tests/cli_sensitivity_test.py. */
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

void qfig_fp32_free(qfig_fp32 *f)
{
    free(f->logits);
    free(f->pred);
    free(f->support);
    memset(f, 0, sizeof *f);
}

ptq_status qfig_fp32_take(ptq_ctx *ctx, qfig_fp32 *f, const ptq_batch *b)
{
    if (!f->k) {
        if (b->n_classes < 1 || b->n_classes > (1 << 20))
            return ptq_fail(ctx, PTQ_ERR_DATA, "%lld classes: not a classifier's logits", (long long)b->n_classes);
        f->k = (int)b->n_classes;
        if (!(f->support = calloc((size_t)f->k, sizeof *f->support)))
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
    }
    const int k = f->k;
    if (b->n > f->cap) {
        float *l = realloc(f->logits, (size_t)(b->n * k) * sizeof *l);
        if (l)
            f->logits = l;
        int32_t *p = realloc(f->pred, (size_t)b->n * sizeof *p);
        if (p)
            f->pred = p;
        if (!l || !p)
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for a batch of logits");
        f->cap = b->n;
    }
    for (int64_t i = 0; i < b->n; i++)
        if (b->labels[i] < 0 || b->labels[i] >= k)
            return ptq_fail(ctx, PTQ_ERR_DATA, "sample %lld: label %d is out of range [0, %d)", (long long)b->ids[i],
                            b->labels[i], k);
    memcpy(f->logits, b->logits, (size_t)(b->n * k) * sizeof *f->logits);
    for (int64_t i = 0; i < b->n; i++) {
        f->pred[i] = ptq_logits_argmax(f->logits + i * k, k);
        f->support[b->labels[i]]++;
    }
    return PTQ_OK;
}
