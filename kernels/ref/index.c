/* Reference Gather, Slice, Expand, Where, ScatterND, Trilu (byte copies on any
 * fixed-size dtype; ScatterND's reductions on the numeric dtypes), Cast
 * between the numeric dtypes, Equal, Greater, Less, GreaterOrEqual, LessOrEqual, Mod, Range on them, and Not
 * and And and Or, as ONNX defines them; their CPU path too (the shape arithmetic of exported
 * models runs them on small int64 tensors). Covered by tests/test_ops_zoo.c,
 * tests/test_ops_transformer.c and the ONNX conformance run. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/numfmt.h"
#include "ptq/tensor.h"

void ptq_k_gather_ref(size_t elem_bytes, int64_t outer, int64_t len, int64_t inner, int64_t n_idx,
                      const int64_t *idx, const void *x, void *y)
{
    const size_t row = (size_t)inner * elem_bytes;
    const unsigned char *src = x;
    unsigned char *dst = y;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < n_idx; j++, dst += row)
            if (row)
                memcpy(dst, src + ((size_t)o * (size_t)len + (size_t)idx[j]) * row, row);
}

void ptq_k_slice_ref(size_t elem_bytes, int ndim, const int64_t *in_dims, const int64_t *out_dims,
                     const int64_t *start, const int64_t *step, const void *x, void *y)
{
    int64_t in_stride[8], n = 1;
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        in_stride[d] = s;
        s *= in_dims[d];
        n *= out_dims[d];
    }
    const unsigned char *src = x;
    unsigned char *dst = y;
    for (int64_t i = 0; i < n; i++, dst += elem_bytes) {
        int64_t off = 0, r = i;
        for (int d = ndim - 1; d >= 0; d--) {
            off += (start[d] + (r % out_dims[d]) * step[d]) * in_stride[d];
            r /= out_dims[d];
        }
        memcpy(dst, src + (size_t)off * elem_bytes, elem_bytes);
    }
}

static int is_float(ptq_cast_kind k)
{
    return k == PTQ_CAST_F32 || k == PTQ_CAST_F64 || k == PTQ_CAST_F16 || k == PTQ_CAST_BF16;
}

static double load_f(ptq_cast_kind k, const void *p, int64_t i)
{
    switch (k) {
    case PTQ_CAST_F32: return (double)((const float *)p)[i];
    case PTQ_CAST_F16: return (double)ptq_k_fp16_to_float_ref(((const uint16_t *)p)[i]);
    case PTQ_CAST_BF16: return (double)ptq_k_bf16_to_float_ref(((const uint16_t *)p)[i]);
    default: return ((const double *)p)[i];
    }
}

/* The integer (or bool) at p[i] as the 64-bit pattern of its value. */
static uint64_t load_i(ptq_cast_kind k, const void *p, int64_t i)
{
    switch (k) {
    case PTQ_CAST_I8: return (uint64_t)(int64_t)((const int8_t *)p)[i];
    case PTQ_CAST_U8: return ((const uint8_t *)p)[i];
    case PTQ_CAST_BOOL: return ((const uint8_t *)p)[i] != 0;
    case PTQ_CAST_I16: return (uint64_t)(int64_t)((const int16_t *)p)[i];
    case PTQ_CAST_U16: return ((const uint16_t *)p)[i];
    case PTQ_CAST_I32: return (uint64_t)(int64_t)((const int32_t *)p)[i];
    case PTQ_CAST_U32: return ((const uint32_t *)p)[i];
    case PTQ_CAST_I64: return (uint64_t)((const int64_t *)p)[i];
    default: return ((const uint64_t *)p)[i];
    }
}

static int is_signed(ptq_cast_kind k)
{
    return k == PTQ_CAST_I8 || k == PTQ_CAST_I16 || k == PTQ_CAST_I32 || k == PTQ_CAST_I64;
}

/* v truncated toward zero and saturated into [lo, hi] (NaN: 0). */
static double sat(double v, double lo, double hi)
{
    if (isnan(v))
        return 0.0;
    v = trunc(v);
    return v < lo ? lo : v > hi ? hi : v;
}

static void store_f(ptq_cast_kind k, void *p, int64_t i, double v)
{
    switch (k) {
    case PTQ_CAST_F32: /* past float's range: FLT_MAX up to the midpoint to 2^128, then Inf (round to nearest even) */
        if (isfinite(v) && fabs(v) > FLT_MAX)
            ((float *)p)[i] = copysignf(fabs(v) < 0x1.ffffffp127 ? FLT_MAX : INFINITY, (float)(v < 0 ? -1 : 1));
        else
            ((float *)p)[i] = (float)v;
        break;
    case PTQ_CAST_F64: ((double *)p)[i] = v; break;
    case PTQ_CAST_F16: ((uint16_t *)p)[i] = ptq_k_fp16_from_float_ref((float)v); break;
    case PTQ_CAST_BF16: ((uint16_t *)p)[i] = ptq_k_bf16_from_float_ref((float)v); break;
    case PTQ_CAST_BOOL: ((uint8_t *)p)[i] = v != 0.0; break;
    case PTQ_CAST_I8: ((int8_t *)p)[i] = (int8_t)sat(v, INT8_MIN, INT8_MAX); break;
    case PTQ_CAST_U8: ((uint8_t *)p)[i] = (uint8_t)sat(v, 0, UINT8_MAX); break;
    case PTQ_CAST_I16: ((int16_t *)p)[i] = (int16_t)sat(v, INT16_MIN, INT16_MAX); break;
    case PTQ_CAST_U16: ((uint16_t *)p)[i] = (uint16_t)sat(v, 0, UINT16_MAX); break;
    case PTQ_CAST_I32: ((int32_t *)p)[i] = (int32_t)sat(v, INT32_MIN, INT32_MAX); break;
    case PTQ_CAST_U32: ((uint32_t *)p)[i] = (uint32_t)sat(v, 0, UINT32_MAX); break;
    /* 2^63 and 2^64 are exact doubles; the largest doubles below them fit */
    case PTQ_CAST_I64: {
        double t = sat(v, -9223372036854775808.0, 9223372036854775808.0);
        ((int64_t *)p)[i] = t >= 9223372036854775808.0 ? INT64_MAX : (int64_t)t;
        break;
    }
    case PTQ_CAST_U64: {
        double t = sat(v, 0.0, 18446744073709551616.0);
        ((uint64_t *)p)[i] = t >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)t;
        break;
    }
    }
}

/* u: the source integer's value as a 64-bit pattern (sign-extended when signed). */
static void store_i(ptq_cast_kind k, void *p, int64_t i, uint64_t u, int from_signed)
{
    switch (k) {
    case PTQ_CAST_F32: ((float *)p)[i] = from_signed ? (float)(int64_t)u : (float)u; break;
    case PTQ_CAST_F64: ((double *)p)[i] = from_signed ? (double)(int64_t)u : (double)u; break;
    case PTQ_CAST_F16: case PTQ_CAST_BF16: store_f(k, p, i, from_signed ? (double)(int64_t)u : (double)u); break;
    case PTQ_CAST_BOOL: ((uint8_t *)p)[i] = u != 0; break;
    case PTQ_CAST_I8: case PTQ_CAST_U8: ((uint8_t *)p)[i] = (uint8_t)u; break;
    case PTQ_CAST_I16: case PTQ_CAST_U16: ((uint16_t *)p)[i] = (uint16_t)u; break;
    case PTQ_CAST_I32: case PTQ_CAST_U32: ((uint32_t *)p)[i] = (uint32_t)u; break;
    case PTQ_CAST_I64: case PTQ_CAST_U64: ((uint64_t *)p)[i] = u; break;
    }
}

void ptq_k_cast_ref(ptq_cast_kind from, ptq_cast_kind to, int64_t n, const void *x, void *y)
{
    for (int64_t i = 0; i < n; i++) {
        if (is_float(from))
            store_f(to, y, i, load_f(from, x, i));
        else
            store_i(to, y, i, load_i(from, x, i), is_signed(from));
    }
}

void ptq_k_expand_ref(size_t elem_bytes, const ptq_bcast *bc, const void *a, void *y)
{
    const int64_t n = ptq_dims_prod(bc->out_dims, 0, bc->ndim);
    const unsigned char *src = a;
    unsigned char *dst = y;
    for (int64_t i = 0; i < n; i++, dst += elem_bytes) {
        int64_t ia, ib;
        ptq_bcast_offsets(bc, i, &ia, &ib);
        memcpy(dst, src + (size_t)ia * elem_bytes, elem_bytes);
    }
}

void ptq_k_where_ref(size_t elem_bytes, int ndim, const int64_t *out_dims, const int64_t *c_stride,
                     const int64_t *x_stride, const int64_t *y_stride, const uint8_t *cond, const void *x,
                     const void *y, void *out)
{
    const int64_t n = ptq_dims_prod(out_dims, 0, ndim);
    const unsigned char *xs = x, *ys = y;
    unsigned char *dst = out;
    for (int64_t i = 0; i < n; i++, dst += elem_bytes) {
        int64_t ic = 0, ix = 0, iy = 0, r = i;
        for (int d = ndim - 1; d >= 0; d--) {
            const int64_t idx = r % out_dims[d];
            r /= out_dims[d];
            ic += idx * c_stride[d];
            ix += idx * x_stride[d];
            iy += idx * y_stride[d];
        }
        memcpy(dst, cond[ic] ? xs + (size_t)ix * elem_bytes : ys + (size_t)iy * elem_bytes, elem_bytes);
    }
}

/* -1, 0 or 1 as u is less than, equal to or greater than v; 2 when either is NaN (unordered). */
static int compare_one(ptq_cast_kind kind, const void *a, int64_t ia, const void *b, int64_t ib)
{
    if (is_float(kind)) {
        const double u = load_f(kind, a, ia), v = load_f(kind, b, ib);
        return u < v ? -1 : u > v ? 1 : u == v ? 0 : 2;
    }
    const uint64_t u = load_i(kind, a, ia), v = load_i(kind, b, ib);
    if (is_signed(kind))
        return (int64_t)u < (int64_t)v ? -1 : (int64_t)u > (int64_t)v;
    return u < v ? -1 : u > v;
}

/* Whether a comparison whose compare_one is c holds for op. */
static int compare_holds(ptq_compare op, int c)
{
    switch (op) {
    case PTQ_CMP_EQ: return c == 0;
    case PTQ_CMP_GT: return c == 1;
    case PTQ_CMP_LT: return c == -1;
    case PTQ_CMP_GE: return c == 0 || c == 1;
    case PTQ_CMP_LE: return c == 0 || c == -1;
    }
    return 0;
}

void ptq_k_compare_ref(ptq_compare op, ptq_cast_kind kind, const ptq_bcast *bc, const void *a, const void *b,
                       uint8_t *y)
{
    const int64_t n = ptq_dims_prod(bc->out_dims, 0, bc->ndim);
    for (int64_t i = 0; i < n; i++) {
        int64_t ia, ib;
        ptq_bcast_offsets(bc, i, &ia, &ib);
        y[i] = (uint8_t)compare_holds(op, compare_one(kind, a, ia, b, ib));
    }
}

/* a mod b of integers held as 64-bit patterns (sign-extended when signed); b != 0. */
static uint64_t int_mod(uint64_t a, uint64_t b, int is_signed_kind, int fmod_sign)
{
    if (!is_signed_kind)
        return a % b;
    const int64_t sa = (int64_t)a, sb = (int64_t)b;
    if (sb == -1)
        return 0; /* INT64_MIN % -1 overflows in C */
    int64_t r = sa % sb;
    if (!fmod_sign && r != 0 && (r < 0) != (sb < 0))
        r += sb;
    return (uint64_t)r;
}

int64_t ptq_k_mod_ref(ptq_cast_kind kind, int fmod_sign, const ptq_bcast *bc, const void *a, const void *b, void *y)
{
    const int64_t n = ptq_dims_prod(bc->out_dims, 0, bc->ndim);
    int64_t zero_at = -1;
    for (int64_t i = 0; i < n; i++) {
        int64_t ia, ib;
        ptq_bcast_offsets(bc, i, &ia, &ib);
        if (is_float(kind)) {
            store_f(kind, y, i, fmod(load_f(kind, a, ia), load_f(kind, b, ib)));
            continue;
        }
        const uint64_t ub = load_i(kind, b, ib);
        if (ub == 0 && zero_at < 0)
            zero_at = i;
        store_i(kind, y, i, ub == 0 ? 0 : int_mod(load_i(kind, a, ia), ub, is_signed(kind), fmod_sign), 1);
    }
    return zero_at;
}

void ptq_k_range_ref(ptq_cast_kind kind, int64_t n, const void *start, const void *delta, void *y)
{
    if (kind == PTQ_CAST_F32) { /* in float, as numpy's arange of float32 scalars */
        const float s = *(const float *)start, d = *(const float *)delta;
        for (int64_t i = 0; i < n; i++)
            ((float *)y)[i] = s + (float)i * d;
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        if (is_float(kind))
            store_f(kind, y, i, load_f(kind, start, 0) + (double)i * load_f(kind, delta, 0));
        else /* wraps like the type's own arithmetic */
            store_i(kind, y, i, load_i(kind, start, 0) + (uint64_t)i * load_i(kind, delta, 0), 1);
    }
}

void ptq_k_trilu_ref(size_t elem_bytes, int64_t n_mat, int64_t rows, int64_t cols, int64_t k, int upper,
                     const void *x, void *y)
{
    const unsigned char *src = x;
    unsigned char *dst = y;
    for (int64_t m = 0; m < n_mat; m++)
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++, src += elem_bytes, dst += elem_bytes) {
                /* j - i and k compared, never k + i: k may be any int64 */
                if (upper ? j - i >= k : j - i <= k)
                    memmove(dst, src, elem_bytes);
                else
                    memset(dst, 0, elem_bytes);
            }
}

void ptq_k_not_ref(int64_t n, const uint8_t *x, uint8_t *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] == 0;
}

void ptq_k_logic_ref(ptq_logic op, const ptq_bcast *bc, const uint8_t *a, const uint8_t *b, uint8_t *y)
{
    const int64_t n = ptq_dims_prod(bc->out_dims, 0, bc->ndim);
    for (int64_t i = 0; i < n; i++) {
        int64_t ia, ib;
        ptq_bcast_offsets(bc, i, &ia, &ib);
        const int u = a[ia] != 0, v = b[ib] != 0;
        y[i] = (uint8_t)(op == PTQ_LOGIC_AND ? u && v : op == PTQ_LOGIC_OR ? u || v : u != v);
    }
}

/* y[i] combined with u of one integer (or bool) kind, held as 64-bit patterns (sign-extended when signed) */
static uint64_t scatter_int(ptq_cast_kind k, ptq_scatter_reduction red, uint64_t y, uint64_t u)
{
    const int gt = is_signed(k) ? (int64_t)y > (int64_t)u : y > u, lt = is_signed(k) ? (int64_t)y < (int64_t)u : y < u;
    switch (red) {
    case PTQ_SCATTER_ADD: return y + u; /* wraps as the type's own arithmetic once stored */
    case PTQ_SCATTER_MUL: return y * u;
    case PTQ_SCATTER_MAX: return gt ? y : u;
    case PTQ_SCATTER_MIN: return lt ? y : u;
    default: return u;
    }
}

/* float32 in float, float64 in double: the type's own rounding, as onnxruntime computes */
#define SCATTER_FLOAT(T, red, a, b) \
    ((red) == PTQ_SCATTER_ADD ? (T)((a) + (b)) : (red) == PTQ_SCATTER_MUL ? (T)((a) * (b)) \
     : (red) == PTQ_SCATTER_MAX ? ((a) > (b) ? (a) : (b)) : (red) == PTQ_SCATTER_MIN ? ((a) < (b) ? (a) : (b)) : (b))

void ptq_k_scatter_nd_ref(ptq_cast_kind kind, ptq_scatter_reduction red, size_t elem_bytes, int64_t n_slices,
                          int64_t n_slice, const int64_t *offset, const void *u, void *y)
{
    const size_t slice_bytes = (size_t)n_slice * elem_bytes;
    unsigned char *yb = y;
    const unsigned char *ub = u;
    for (int64_t j = 0; j < n_slices; j++) {
        const int64_t at = offset[j], from = j * n_slice;
        if (red == PTQ_SCATTER_NONE) {
            if (slice_bytes)
                memcpy(yb + (size_t)at * elem_bytes, ub + (size_t)from * elem_bytes, slice_bytes);
            continue;
        }
        for (int64_t e = 0; e < n_slice; e++) {
            if (kind == PTQ_CAST_F32) {
                float *py = (float *)y + at + e;
                const float pu = ((const float *)u)[from + e];
                *py = SCATTER_FLOAT(float, red, *py, pu);
            } else if (kind == PTQ_CAST_F64) {
                double *py = (double *)y + at + e;
                const double pu = ((const double *)u)[from + e];
                *py = SCATTER_FLOAT(double, red, *py, pu);
            } else {
                store_i(kind, y, at + e, scatter_int(kind, red, load_i(kind, y, at + e), load_i(kind, u, from + e)), 1);
            }
        }
    }
}
