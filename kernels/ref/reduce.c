/* Reference ReduceMean, ReduceSum and ReduceMax over any set of axes, CumSum and ArgMax along one,
 * and LayerNormalization over the trailing axes; float32 sums of the
 * reductions in double. Covered by tests/test_ops_zoo.c and the ONNX
 * conformance run. */
#include <math.h>
#include <stdint.h>

#include "kernels/kernels.h"

/* What reduce_ref computes and in which type. */
enum { RED_MEAN_F32, RED_SUM_F32, RED_SUM_F64, RED_SUM_I64, RED_SUM_I32, RED_MAX_F32, RED_MAX_F64, RED_MAX_I64,
       RED_MAX_I32 };

/* The element off of x as a double (floats) or an int64 (integers), for the max. */
static double elem_f(int kind, const void *x, int64_t off)
{
    return kind == RED_MAX_F64 ? ((const double *)x)[off] : (double)((const float *)x)[off];
}

static int64_t elem_i(int kind, const void *x, int64_t off)
{
    return kind == RED_MAX_I64 ? ((const int64_t *)x)[off] : (int64_t)((const int32_t *)x)[off];
}

/* Over the axes with reduced[d] != 0 of x: floats summed in double (then divided for the mean), integers summed
 * with two's-complement wrap (as onnxruntime's, without the C overflow); the max of floats NaN where any is NaN,
 * -Inf (floats) or the type's least value (integers) over no element. */
static void reduce_ref(int kind, int ndim, const int64_t *dims, const unsigned char *reduced, const void *x, void *y)
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
        double sum = 0.0, best = -INFINITY;
        uint64_t isum = 0;
        int64_t ibest = kind == RED_MAX_I32 ? INT32_MIN : INT64_MIN;
        for (int64_t j = 0; j < n_red; j++) {
            int64_t off = base, q = j;
            for (int k = n_redax - 1; k >= 0; k--) {
                off += (q % dims[red[k]]) * stride[red[k]];
                q /= dims[red[k]];
            }
            if (kind == RED_MAX_F32 || kind == RED_MAX_F64) {
                const double v = elem_f(kind, x, off);
                best = v > best || isnan(v) ? (isnan(best) ? best : v) : best;
            } else if (kind == RED_MAX_I64 || kind == RED_MAX_I32) {
                const int64_t v = elem_i(kind, x, off);
                ibest = v > ibest ? v : ibest;
            } else if (kind == RED_SUM_I64)
                isum += (uint64_t)((const int64_t *)x)[off];
            else if (kind == RED_SUM_I32)
                isum += (uint64_t)(int64_t)((const int32_t *)x)[off];
            else if (kind == RED_SUM_F64)
                sum += ((const double *)x)[off];
            else
                sum += ((const float *)x)[off];
        }
        if (kind == RED_MAX_F32)
            ((float *)y)[o] = (float)best;
        else if (kind == RED_MAX_F64)
            ((double *)y)[o] = best;
        else if (kind == RED_MAX_I64)
            ((int64_t *)y)[o] = ibest;
        else if (kind == RED_MAX_I32)
            ((int32_t *)y)[o] = (int32_t)ibest;
        else if (kind == RED_MEAN_F32)
            ((float *)y)[o] = (float)(sum / (double)n_red);
        else if (kind == RED_SUM_F32)
            ((float *)y)[o] = (float)sum;
        else if (kind == RED_SUM_F64)
            ((double *)y)[o] = sum;
        else if (kind == RED_SUM_I64)
            ((int64_t *)y)[o] = (int64_t)isum;
        else
            ((int32_t *)y)[o] = (int32_t)(uint32_t)isum;
    }
}

void ptq_k_reduce_mean_ref(int ndim, const int64_t *dims, const unsigned char *reduced, const float *x, float *y)
{
    reduce_ref(RED_MEAN_F32, ndim, dims, reduced, x, y);
}

void ptq_k_reduce_sum_ref(int ndim, const int64_t *dims, const unsigned char *reduced, ptq_k_elem et, const void *x,
                          void *y)
{
    const int kind = et == PTQ_K_I64 ? RED_SUM_I64 : et == PTQ_K_I32 ? RED_SUM_I32 : et == PTQ_K_F64 ? RED_SUM_F64
                                                                                               : RED_SUM_F32;
    reduce_ref(kind, ndim, dims, reduced, x, y);
}

void ptq_k_reduce_max_ref(int ndim, const int64_t *dims, const unsigned char *reduced, ptq_k_elem et, const void *x,
                          void *y)
{
    const int kind = et == PTQ_K_I64 ? RED_MAX_I64 : et == PTQ_K_I32 ? RED_MAX_I32 : et == PTQ_K_F64 ? RED_MAX_F64
                                                                                               : RED_MAX_F32;
    reduce_ref(kind, ndim, dims, reduced, x, y);
}

/* Whether x[a] > x[b], elements of type et compared in their type (int64 exactly), a float NaN above any number. */
static int is_greater(ptq_k_elem et, const void *x, int64_t a, int64_t b)
{
    switch (et) {
    case PTQ_K_F32: {
        const float u = ((const float *)x)[a], v = ((const float *)x)[b];
        return u > v || (isnan(u) && !isnan(v));
    }
    case PTQ_K_F64: {
        const double u = ((const double *)x)[a], v = ((const double *)x)[b];
        return u > v || (isnan(u) && !isnan(v));
    }
    case PTQ_K_I64: return ((const int64_t *)x)[a] > ((const int64_t *)x)[b];
    case PTQ_K_I32: return ((const int32_t *)x)[a] > ((const int32_t *)x)[b];
    }
    return 0;
}

static int is_equal(ptq_k_elem et, const void *x, int64_t a, int64_t b)
{
    return !is_greater(et, x, a, b) && !is_greater(et, x, b, a);
}

void ptq_k_argmax_ref(int64_t outer, int64_t len, int64_t inner, ptq_k_elem et, int last, const void *x, int64_t *y)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const int64_t base = o * len * inner + i;
            int64_t best = 0;
            for (int64_t j = 1; j < len; j++)
                if (is_greater(et, x, base + j * inner, base + best * inner) ||
                    (last && is_equal(et, x, base + j * inner, base + best * inner)))
                    best = j;
            y[o * inner + i] = best;
        }
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
