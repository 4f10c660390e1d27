/* Per-image logit figures (core/logits.h). Covered by
 * tests/test_validate_report.c and tests/test_sensitivity.c. */
#include <math.h>

#include "core/logits.h"

int ptq_logits_argmax(const float *x, int k)
{
    int best = 0;
    for (int c = 0; c < k; c++) {
        if (!isfinite(x[c]))
            return -1;
        if (x[c] > x[best])
            best = c;
    }
    return best;
}

static double log_sum_exp(const float *x, int k)
{
    double mx = x[0];
    for (int c = 1; c < k; c++)
        if (x[c] > mx)
            mx = x[c];
    double sum = 0;
    for (int c = 0; c < k; c++)
        sum += exp((double)x[c] - mx);
    return mx + log(sum);
}

int ptq_logits_terms(const float *f, const float *q, int k, double *signal_sq, double *noise_sq, double *kl)
{
    for (int c = 0; c < k; c++)
        if (!isfinite(f[c]) || !isfinite(q[c]))
            return 0;
    double lse_f = log_sum_exp(f, k), lse_q = log_sum_exp(q, k);
    double sig = 0, noise = 0, d_kl = 0;
    for (int c = 0; c < k; c++) {
        double fc = f[c], d = (double)q[c] - fc;
        double logp = fc - lse_f, logq = (double)q[c] - lse_q;
        sig += fc * fc;
        noise += d * d;
        d_kl += exp(logp) * (logp - logq);
    }
    *signal_sq = sig;
    *noise_sq = noise;
    *kl = d_kl > 0 ? d_kl : 0;
    return 1;
}
