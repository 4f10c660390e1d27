/* MSE calibration: the bin right edge whose quantize-dequantize of the bin
 * centres has the least count-weighted squared error, for INT8 and FP8
 * (ptq/calibrator.h). O(bins x candidates); FP8 walks the code table instead
 * of converting each value. Covered by tests/test_calibrators.c. */
#include <math.h>

#include "calib/calibrator_internal.h"
#include "kernels/kernels.h"

#define FP8_CODES 128 /* positive codes; the largest finite is below 0x7F */

/* Error of candidate i with INT8: scale i/127, round half to even, clamp to 127. */
static double int8_error(const int64_t *bins, int64_t n, int64_t i)
{
    const double qmax = ptq_qformat_max(PTQ_QFORMAT_INT8);
    const double scale = (double)i / qmax;
    double err = 0.0;
    for (int64_t j = 0; j < n; j++) {
        if (!bins[j])
            continue;
        const double c = (double)j + 0.5;
        double q = nearbyint(c / scale);
        if (q > qmax)
            q = qmax;
        const double d = q * scale - c;
        err += (double)bins[j] * d * d;
    }
    return err;
}

typedef struct fp8_table {
    double value[FP8_CODES]; /* [code] for codes 0..max_code */
    double mid[FP8_CODES];   /* [code]: halfway to the next code (exact: FP8 values have few bits) */
    int max_code;
    double max;
} fp8_table;

static void fp8_table_fill(ptq_qformat f, fp8_table *t)
{
    t->max_code = f == PTQ_QFORMAT_FP8_E4M3 ? 0x7E : 0x7B;
    for (int k = 0; k <= t->max_code; k++)
        t->value[k] = f == PTQ_QFORMAT_FP8_E4M3 ? ptq_k_fp8_e4m3_to_float_ref((uint8_t)k)
                                                : ptq_k_fp8_e5m2_to_float_ref((uint8_t)k);
    for (int k = 0; k < t->max_code; k++)
        t->mid[k] = 0.5 * (t->value[k] + t->value[k + 1]);
    t->max = t->value[t->max_code];
}

/* Error of candidate i with FP8: x * (max / i) rounded to nearest even and
 * saturated, times i / max. The bin centres rise with j, so the code only
 * moves up: the walk gives what ptq_k_fp8_*_from_double_ref gives. */
static double fp8_error(const fp8_table *t, const int64_t *bins, int64_t n, int64_t i)
{
    const double to_fp8 = t->max / (double)i, back = (double)i / t->max;
    double err = 0.0;
    int k = 0;
    for (int64_t j = 0; j < n; j++) {
        if (!bins[j])
            continue;
        const double c = (double)j + 0.5, v = c * to_fp8;
        while (k < t->max_code && (v > t->mid[k] || (v == t->mid[k] && (k & 1))))
            k++;
        const double d = t->value[k] * back - c;
        err += (double)bins[j] * d * d;
    }
    return err;
}

void ptq_calib_mse_choose(const int64_t *bins, int64_t n, ptq_qformat f, int64_t *out_i)
{
    fp8_table t;
    if (f != PTQ_QFORMAT_INT8)
        fp8_table_fill(f, &t);
    double best = INFINITY;
    *out_i = n;
    for (int64_t i = 1; i <= n; i++) {
        const double err = f == PTQ_QFORMAT_INT8 ? int8_error(bins, n, i) : fp8_error(&t, bins, n, i);
        if (err <= best) {
            best = err;
            *out_i = i;
        }
    }
}
