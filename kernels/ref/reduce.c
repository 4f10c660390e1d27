/* Reference ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum
 * and ReduceLogSumExp over any set of axes, CumSum, ArgMax and ArgMin along one, and LayerNormalization over the
 * trailing axes; float32 sums of the reductions in double. tests/ops_reduce_test.py (onnxruntime) covers the ones
 * after ReduceMax. Covered by tests/test_ops_zoo.c and the ONNX
 * conformance run. */
#include <math.h>
#include <stdint.h>

#include "kernels/kernels.h"

/* A running reduction: floats in double, integers as int64 (max, min) or wrapping as two's complement (sums and
 * products, as onnxruntime's, without the C overflow). */
typedef struct red_acc {
    double f;
    int64_t best;
    uint64_t i;
} red_acc;

/* The accumulator over no element: 0, 1 for Prod; Max's -Inf or the type's least value, Min's +Inf or greatest;
 * LogSum's and LogSumExp's log(0) = -Inf comes out of red_put. */
static red_acc red_init(ptq_k_reduce op, ptq_k_elem et)
{
    red_acc a = {op == PTQ_K_RED_PROD ? 1.0 : 0.0, 0, op == PTQ_K_RED_PROD ? 1u : 0u};
    if (op == PTQ_K_RED_MAX) {
        a.f = -INFINITY;
        a.best = et == PTQ_K_I32 ? INT32_MIN : INT64_MIN;
    } else if (op == PTQ_K_RED_MIN) {
        a.f = INFINITY;
        a.best = et == PTQ_K_I32 ? INT32_MAX : INT64_MAX;
    }
    return a;
}

/* Adds x[off]; top is LogSumExp's max (exp(v - top) neither overflows nor loses a large set to 0). Max and Min
 * propagate NaN; the others keep the first NaN they meet. */
static void red_add(red_acc *a, ptq_k_reduce op, ptq_k_elem et, const void *x, int64_t off, double top)
{
    if (et == PTQ_K_F32 || et == PTQ_K_F64) {
        const double v = et == PTQ_K_F64 ? ((const double *)x)[off] : (double)((const float *)x)[off];
        /* a sum or product keeps its first NaN: of two NaN operands an add returns the one the compiler put first,
           which it may swap (it did at -O1, the sanitizer build) */
        if (isnan(a->f) && op != PTQ_K_RED_MAX && op != PTQ_K_RED_MIN)
            return;
        switch (op) {
        case PTQ_K_RED_MAX: a->f = isnan(a->f) || v <= a->f ? a->f : v; break;
        case PTQ_K_RED_MIN: a->f = isnan(a->f) || v >= a->f ? a->f : v; break;
        case PTQ_K_RED_PROD: a->f *= v; break;
        case PTQ_K_RED_L1: a->f += fabs(v); break;
        case PTQ_K_RED_L2:
        case PTQ_K_RED_SUM_SQUARE: a->f += v * v; break;
        case PTQ_K_RED_LOG_SUM_EXP: a->f += exp(v - top); break;
        default: a->f += v; break; /* Mean, Sum, LogSum */
        }
        return;
    }
    const int64_t v = et == PTQ_K_I64 ? ((const int64_t *)x)[off] : (int64_t)((const int32_t *)x)[off];
    const uint64_t u = (uint64_t)v;
    switch (op) {
    case PTQ_K_RED_MAX: a->best = v > a->best ? v : a->best; break;
    case PTQ_K_RED_MIN: a->best = v < a->best ? v : a->best; break;
    case PTQ_K_RED_PROD: a->i *= u; break;
    case PTQ_K_RED_L1: a->i += v < 0 ? 0u - u : u; break;
    case PTQ_K_RED_SUM_SQUARE: a->i += u * u; break;
    default: a->i += u; break;
    }
}

static void red_put(const red_acc *a, ptq_k_reduce op, ptq_k_elem et, int64_t n, double top, void *y, int64_t o)
{
    double f = a->f;
    if (op == PTQ_K_RED_MEAN)
        f /= (double)n;
    else if (op == PTQ_K_RED_L2)
        f = sqrt(f);
    else if (op == PTQ_K_RED_LOG_SUM)
        f = log(f);
    else if (op == PTQ_K_RED_LOG_SUM_EXP)
        f = isfinite(top) ? top + log(f) : top; /* empty or all -Inf, an +Inf, a NaN */
    const int64_t i = op == PTQ_K_RED_MAX || op == PTQ_K_RED_MIN ? a->best : (int64_t)a->i;
    switch (et) {
    case PTQ_K_F32: ((float *)y)[o] = (float)f; break;
    case PTQ_K_F64: ((double *)y)[o] = f; break;
    case PTQ_K_I64: ((int64_t *)y)[o] = i; break;
    case PTQ_K_I32: ((int32_t *)y)[o] = (int32_t)(uint32_t)(uint64_t)i; break;
    }
}

void ptq_k_reduce_ref(ptq_k_reduce op, int ndim, const int64_t *dims, const unsigned char *reduced, ptq_k_elem et,
                      const void *x, void *y)
{
    int64_t stride[8], n_out = 1, n_red = 1;
    int kept[8], red[8], n_kept = 0, n_redax = 0;
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        stride[d] = s;
        s *= dims[d];
    }
    for (int d = 0; d < ndim; d++) {
        if (reduced[d]) {
            red[n_redax++] = d;
            n_red *= dims[d];
        } else {
            kept[n_kept++] = d;
            n_out *= dims[d];
        }
    }
    for (int64_t o = 0; o < n_out; o++) {
        int64_t base = 0, r = o;
        for (int k = n_kept - 1; k >= 0; k--) {
            base += (r % dims[kept[k]]) * stride[kept[k]];
            r /= dims[kept[k]];
        }
        /* LogSumExp takes two passes: the max, then the sum */
        red_acc top = red_init(PTQ_K_RED_MAX, et), a = red_init(op, et);
        for (int pass = op == PTQ_K_RED_LOG_SUM_EXP ? 0 : 1; pass < 2; pass++)
            for (int64_t j = 0; j < n_red; j++) {
                int64_t off = base, q = j;
                for (int k = n_redax - 1; k >= 0; k--) {
                    off += (q % dims[red[k]]) * stride[red[k]];
                    q /= dims[red[k]];
                }
                if (pass == 0)
                    red_add(&top, PTQ_K_RED_MAX, et, x, off, 0.0);
                else
                    red_add(&a, op, et, x, off, top.f);
            }
        red_put(&a, op, et, n_red, top.f, y, o);
    }
}

void ptq_k_reduce_mean_ref(int ndim, const int64_t *dims, const unsigned char *reduced, const float *x, float *y)
{
    ptq_k_reduce_ref(PTQ_K_RED_MEAN, ndim, dims, reduced, PTQ_K_F32, x, y);
}

/* Whether x[a] comes before x[b] in ArgMax's order (greater; min: less), elements of type et compared in their type
 * (int64 exactly), a float NaN before any number either way (numpy's argmax and argmin take the first NaN). */
static int is_before(ptq_k_elem et, int min, const void *x, int64_t a, int64_t b)
{
    switch (et) {
    case PTQ_K_F32: {
        const float u = ((const float *)x)[a], v = ((const float *)x)[b];
        return (min ? u < v : u > v) || (isnan(u) && !isnan(v));
    }
    case PTQ_K_F64: {
        const double u = ((const double *)x)[a], v = ((const double *)x)[b];
        return (min ? u < v : u > v) || (isnan(u) && !isnan(v));
    }
    case PTQ_K_I64: {
        const int64_t u = ((const int64_t *)x)[a], v = ((const int64_t *)x)[b];
        return min ? u < v : u > v;
    }
    case PTQ_K_I32: {
        const int32_t u = ((const int32_t *)x)[a], v = ((const int32_t *)x)[b];
        return min ? u < v : u > v;
    }
    }
    return 0;
}

static void arg_ref(int min, int64_t outer, int64_t len, int64_t inner, ptq_k_elem et, int last, const void *x,
                    int64_t *y)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const int64_t base = o * len * inner + i;
            int64_t best = 0;
            for (int64_t j = 1; j < len; j++) {
                const int64_t at = base + j * inner, at_best = base + best * inner;
                if (is_before(et, min, x, at, at_best) || (last && !is_before(et, min, x, at_best, at)))
                    best = j;
            }
            y[o * inner + i] = best;
        }
}

void ptq_k_argmax_ref(int64_t outer, int64_t len, int64_t inner, ptq_k_elem et, int last, const void *x, int64_t *y)
{
    arg_ref(0, outer, len, inner, et, last, x, y);
}

void ptq_k_argmin_ref(int64_t outer, int64_t len, int64_t inner, ptq_k_elem et, int last, const void *x, int64_t *y)
{
    arg_ref(1, outer, len, inner, et, last, x, y);
}

/* A running sum of one element type: float32 in float32 (onnxruntime's order and rounding), float64 in double,
 * integers wrapping as two's complement. */
typedef struct run_sum {
    float f;
    double d;
    uint64_t i;
} run_sum;

static void run_add(run_sum *s, ptq_k_elem et, const void *x, int64_t at)
{
    switch (et) {
    case PTQ_K_F32: s->f += ((const float *)x)[at]; break;
    case PTQ_K_F64: s->d += ((const double *)x)[at]; break;
    case PTQ_K_I64: s->i += (uint64_t)((const int64_t *)x)[at]; break;
    case PTQ_K_I32: s->i += (uint64_t)(int64_t)((const int32_t *)x)[at]; break;
    }
}

static void run_put(const run_sum *s, ptq_k_elem et, void *y, int64_t at)
{
    switch (et) {
    case PTQ_K_F32: ((float *)y)[at] = s->f; break;
    case PTQ_K_F64: ((double *)y)[at] = s->d; break;
    case PTQ_K_I64: ((int64_t *)y)[at] = (int64_t)s->i; break;
    case PTQ_K_I32: ((int32_t *)y)[at] = (int32_t)(uint32_t)s->i; break;
    }
}

void ptq_k_cumsum_ref(int64_t outer, int64_t len, int64_t inner, ptq_k_elem et, int exclusive, int reverse,
                      const void *x, void *y)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            run_sum s = {0.0f, 0.0, 0};
            for (int64_t k = 0; k < len; k++) {
                const int64_t at = (o * len + (reverse ? len - 1 - k : k)) * inner + i;
                if (!exclusive)
                    run_add(&s, et, x, at);
                run_put(&s, et, y, at);
                if (exclusive)
                    run_add(&s, et, x, at);
            }
        }
}

void ptq_k_layernorm_ref(int64_t n_rows, int64_t n_cols, const float *x, const float *scale, const float *bias,
                         float eps, float *y, float *mean, float *inv_std)
{
    for (int64_t r = 0; r < n_rows; r++) {
        const float *xr = x + r * n_cols;
        float *yr = y + r * n_cols;
        double sum = 0.0, sq = 0.0;
        for (int64_t c = 0; c < n_cols; c++)
            sum += xr[c];
        const double mu = n_cols ? sum / (double)n_cols : 0.0;
        for (int64_t c = 0; c < n_cols; c++)
            sq += ((double)xr[c] - mu) * ((double)xr[c] - mu);
        const double var = n_cols ? sq / (double)n_cols : 0.0, inv = 1.0 / sqrt(var + (double)eps);
        for (int64_t c = 0; c < n_cols; c++)
            yr[c] = (float)(((double)xr[c] - mu) * inv * (double)scale[c] + (bias ? (double)bias[c] : 0.0));
        if (mean)
            mean[r] = (float)mu;
        if (inv_std)
            inv_std[r] = (float)inv;
    }
}
