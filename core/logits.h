/* Per-image logit figures shared by validation (reports/validate_report.c)
 * and sensitivity (quant/sensitivity.c), so both count the same way.
 * core/logits.c; covered by tests/test_validate_report.c. */
#ifndef PTQ_CORE_LOGITS_H
#define PTQ_CORE_LOGITS_H

#include <stdint.h>

/* The first index of the largest value of x[k]; -1 (no prediction) when
 * any value is NaN or infinite: such a row ranks no class. */
int ptq_logits_argmax(const float *x, int k);
/* One image's terms against FP32 logits f[k]: sum f^2, sum (q - f)^2 and
 * KL(softmax(f) || softmax(q)) in nats (clamped at 0), all in double from
 * this image's rows alone. Returns 0 (terms untouched) when any value of
 * either row is not finite. */
int ptq_logits_terms(const float *f, const float *q, int k, double *signal_sq, double *noise_sq, double *kl);

#endif
