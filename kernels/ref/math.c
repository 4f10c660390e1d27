/* Reference Sqrt and Pow (numpy broadcasting) on float32, as ONNX defines
 * them, Pow with an integer exponent as onnxruntime computes it, Neg on the signed numeric kinds and Abs on all;
 * their CPU path too. Covered by tests/test_ops_zoo.c, tests/test_ops_transformer.c, the ONNX conformance run,
 * tests/pow_int_test.py and tests/seq_models_test.py (onnxruntime as the oracle).
 * PRelu, Max, Min and the ptq_fn functions (Exp ... Mish, Log, Reciprocal) too: the conformance run and
 * tests/ops_breadth_test.py; Tan ... Atanh, Sign, ThresholdedRelu and Shrink: tests/ops_reduce_test.py. */
#include <math.h>
#include <stdint.h>

#include "kernels/kernels.h"

void ptq_k_sqrt_ref(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = sqrtf(x[i]);
}

#define NEG_LOOP(T, UT) \
    for (int64_t i = 0; i < n; i++) \
        ((T *)y)[i] = (T)(UT)(0u - (UT)((const T *)x)[i]) /* wraps: -INT_MIN is INT_MIN */

void ptq_k_neg_ref(ptq_cast_kind kind, int64_t n, const void *x, void *y)
{
    switch (kind) {
    case PTQ_CAST_F32:
        for (int64_t i = 0; i < n; i++)
            ((float *)y)[i] = -((const float *)x)[i];
        break;
    case PTQ_CAST_F64:
        for (int64_t i = 0; i < n; i++)
            ((double *)y)[i] = -((const double *)x)[i];
        break;
    case PTQ_CAST_I8: NEG_LOOP(int8_t, uint8_t); break;
    case PTQ_CAST_I16: NEG_LOOP(int16_t, uint16_t); break;
    case PTQ_CAST_I32: NEG_LOOP(int32_t, uint32_t); break;
    case PTQ_CAST_I64: NEG_LOOP(int64_t, uint64_t); break;
    default: break; /* the op takes no other kind */
    }
}

#define ABS_LOOP(T, UT) \
    for (int64_t i = 0; i < n; i++) { \
        const T v = ((const T *)x)[i]; \
        ((T *)y)[i] = v < 0 ? (T)(UT)(0u - (UT)v) : v; /* wraps: |INT_MIN| is INT_MIN */ \
    }
#define COPY_LOOP(T) \
    for (int64_t i = 0; i < n; i++) \
        ((T *)y)[i] = ((const T *)x)[i]

void ptq_k_abs_ref(ptq_cast_kind kind, int64_t n, const void *x, void *y)
{
    switch (kind) {
    case PTQ_CAST_F32:
        for (int64_t i = 0; i < n; i++)
            ((float *)y)[i] = fabsf(((const float *)x)[i]);
        break;
    case PTQ_CAST_F64:
        for (int64_t i = 0; i < n; i++)
            ((double *)y)[i] = fabs(((const double *)x)[i]);
        break;
    case PTQ_CAST_I8: ABS_LOOP(int8_t, uint8_t); break;
    case PTQ_CAST_I16: ABS_LOOP(int16_t, uint16_t); break;
    case PTQ_CAST_I32: ABS_LOOP(int32_t, uint32_t); break;
    case PTQ_CAST_I64: ABS_LOOP(int64_t, uint64_t); break;
    case PTQ_CAST_U8: COPY_LOOP(uint8_t); break;
    case PTQ_CAST_U16: COPY_LOOP(uint16_t); break;
    case PTQ_CAST_U32: COPY_LOOP(uint32_t); break;
    case PTQ_CAST_U64: COPY_LOOP(uint64_t); break;
    default: break; /* the op takes no other kind */
    }
}

void ptq_k_pow_ref(const ptq_bcast *bc, const float *a, const float *b, float *y)
{
    int64_t n = 1;
    for (int d = 0; d < bc->ndim; d++)
        n *= bc->out_dims[d];
    for (int64_t i = 0; i < n; i++) {
        int64_t ia, ib;
        ptq_bcast_offsets(bc, i, &ia, &ib);
        y[i] = powf(a[ia], b[ib]);
    }
}

void ptq_k_pow_int_ref(const ptq_bcast *bc, const float *a, const void *b, int b_int64, float *y)
{
    int64_t n = 1;
    int inner = -1; /* the innermost output axis of more than one element */
    for (int d = 0; d < bc->ndim; d++) {
        n *= bc->out_dims[d];
        if (bc->out_dims[d] > 1)
            inner = d;
    }
    /* onnxruntime walks the output in runs along that axis; in a run where the exponent is one value and the
     * base is not, it computes 2 and 3 as products in float32 */
    const int b_per_run = inner >= 0 && bc->b_stride[inner] == 0 && bc->a_stride[inner] != 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t ia, ib;
        ptq_bcast_offsets(bc, i, &ia, &ib);
        const int64_t e = b_int64 ? ((const int64_t *)b)[ib] : (int64_t)((const int32_t *)b)[ib];
        const float x = a[ia];
        if (b_per_run && e == 2)
            y[i] = x * x;
        else if (b_per_run && e == 3)
            y[i] = x * x * x;
        else
            y[i] = (float)pow((double)x, (double)e);
    }
}

static float softplus(float x)
{
    return x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x));
}

static float fn(ptq_fn op, float alpha, float gamma, float x)
{
    switch (op) {
    case PTQ_FN_EXP: return expf(x);
    case PTQ_FN_FLOOR: return floorf(x);
    case PTQ_FN_CEIL: return ceilf(x);
    case PTQ_FN_ROUND: return nearbyintf(x); /* the default rounding mode: half to even */
    case PTQ_FN_SIN: return sinf(x);
    case PTQ_FN_COS: return cosf(x);
    case PTQ_FN_SOFTPLUS: return softplus(x);
    case PTQ_FN_SOFTSIGN: return x / (1.0f + fabsf(x));
    case PTQ_FN_ELU: return x < 0.0f ? alpha * expm1f(x) : x;
    case PTQ_FN_SELU: return x <= 0.0f ? gamma * (alpha * expf(x) - alpha) : gamma * x;
    case PTQ_FN_CELU: return x < 0.0f ? alpha * expm1f(x / alpha) : x;
    case PTQ_FN_MISH: return x * tanhf(softplus(x));
    case PTQ_FN_LOG: return logf(x);
    case PTQ_FN_RECIPROCAL: return 1.0f / x;
    case PTQ_FN_TAN: return tanf(x);
    case PTQ_FN_ASIN: return asinf(x);
    case PTQ_FN_ACOS: return acosf(x);
    case PTQ_FN_ATAN: return atanf(x);
    case PTQ_FN_SINH: return sinhf(x);
    case PTQ_FN_COSH: return coshf(x);
    case PTQ_FN_ASINH: return asinhf(x);
    case PTQ_FN_ACOSH: return acoshf(x);
    case PTQ_FN_ATANH: return atanhf(x);
    case PTQ_FN_SIGN: return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x;
    case PTQ_FN_THRESHOLDED_RELU: return x > alpha ? x : 0.0f;
    case PTQ_FN_SHRINK: return x < -alpha ? x + gamma : x > alpha ? x - gamma : 0.0f;
    }
    return x;
}

void ptq_k_fn_ref(ptq_fn op, float alpha, float gamma, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = fn(op, alpha, gamma, x[i]);
}

void ptq_k_prelu_ref(const ptq_bcast *bc, const float *x, const float *slope, float *y)
{
    int64_t n = 1;
    for (int d = 0; d < bc->ndim; d++)
        n *= bc->out_dims[d];
    for (int64_t i = 0; i < n; i++) {
        int64_t ix, is;
        ptq_bcast_offsets(bc, i, &ix, &is);
        y[i] = x[ix] < 0.0f ? slope[is] * x[ix] : x[ix];
    }
}

#define MINMAX_LOOP(T, PICK)                              \
    do {                                                  \
        const T *bt = b;                                  \
        T *yt = y;                                        \
        for (int64_t i = 0; i < n; i++) {                 \
            int64_t iy, ib;                               \
            ptq_bcast_offsets(bc, i, &iy, &ib);           \
            const T u = yt[i], v = bt[ib];                \
            (void)u; /* TAKE reads b alone */             \
            yt[i] = (PICK);                               \
        }                                                 \
    } while (0)

void ptq_k_minmax_ref(ptq_minmax op, ptq_minmax_elem elem, const ptq_bcast *bc, const void *b, void *y)
{
    int64_t n = 1;
    for (int d = 0; d < bc->ndim; d++)
        n *= bc->out_dims[d];
    if (elem == PTQ_MINMAX_F32) {
        if (op == PTQ_MINMAX_TAKE)
            MINMAX_LOOP(float, v);
        else if (op == PTQ_MINMAX_MAX)
            MINMAX_LOOP(float, isnan(u) ? u : (u > v ? u : v)); /* v when v is NaN */
        else
            MINMAX_LOOP(float, isnan(u) ? u : (u < v ? u : v));
    } else if (elem == PTQ_MINMAX_I32) {
        MINMAX_LOOP(int32_t, op == PTQ_MINMAX_TAKE ? v : op == PTQ_MINMAX_MAX ? (u > v ? u : v) : (u < v ? u : v));
    } else {
        MINMAX_LOOP(int64_t, op == PTQ_MINMAX_TAKE ? v : op == PTQ_MINMAX_MAX ? (u > v ? u : v) : (u < v ? u : v));
    }
}
