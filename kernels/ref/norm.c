/* Reference normalisations beside ptq_k_instancenorm_ref: GroupNormalization, MeanVarianceNormalization,
 * LpNormalization and Hardmax, the statistics in double as InstanceNormalization's (a NaN in a group makes the group's
 * outputs NaN), and IsNaN, IsInf and BitShift; each the CPU path too. Covered by tests/ops_norm_test.py (onnxruntime)
 * and the ONNX conformance run. */
#include <math.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "ptq/tensor.h"

void ptq_k_groupnorm_ref(int64_t n, int64_t groups, int64_t per_group, int64_t spatial, int per_channel,
                         const float *x, const float *scale, const float *bias, float eps, float *y)
{
    const int64_t len = per_group * spatial; /* a group's channels are contiguous */
    if (len == 0) /* nothing to write; with no channels, groups may be as large as any int64 (each divides 0) */
        return;
    for (int64_t i = 0; i < n * groups; i++) {
        const float *xs = x + i * len;
        float *ys = y + i * len;
        const int64_t g = i % groups;
        double sum = 0.0, sq = 0.0;
        for (int64_t j = 0; j < len; j++)
            sum += xs[j];
        const double mean = len > 0 ? sum / (double)len : 0.0;
        for (int64_t j = 0; j < len; j++)
            sq += ((double)xs[j] - mean) * ((double)xs[j] - mean);
        const double inv_std = 1.0 / sqrt((len > 0 ? sq / (double)len : 0.0) + (double)eps);
        for (int64_t j = 0; j < len; j++) {
            const int64_t at = per_channel ? g * per_group + j / spatial : g;
            ys[j] = (float)(((double)xs[j] - mean) * inv_std * scale[at] + bias[at]);
        }
    }
}

/* Offset of the idx-th element of the sub-grid over the n_ax axes ax (last fastest) of a tensor of dims and strides. */
static int64_t grid_offset(int64_t idx, int n_ax, const int *ax, const int64_t *dims, const int64_t *strides)
{
    int64_t off = 0;
    for (int k = n_ax - 1; k >= 0; k--) {
        off += idx % dims[ax[k]] * strides[ax[k]];
        idx /= dims[ax[k]];
    }
    return off;
}

void ptq_k_mvn_ref(int ndim, const int64_t *dims, unsigned axes, const float *x, float *y)
{
    int kept[PTQ_K_NORM_MAX_DIMS], red[PTQ_K_NORM_MAX_DIMS], n_kept = 0, n_red = 0;
    int64_t strides[PTQ_K_NORM_MAX_DIMS], n_outer = 1, len = 1, stride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= dims[d];
    }
    for (int d = 0; d < ndim; d++) {
        if (axes >> d & 1u) {
            red[n_red++] = d;
            len *= dims[d];
        } else {
            kept[n_kept++] = d;
            n_outer *= dims[d];
        }
    }
    if (len == 0) /* an empty x: nothing to write, however many the kept positions */
        return;
    for (int64_t o = 0; o < n_outer; o++) {
        const int64_t base = grid_offset(o, n_kept, kept, dims, strides);
        double sum = 0.0, sq = 0.0;
        for (int64_t j = 0; j < len; j++)
            sum += x[base + grid_offset(j, n_red, red, dims, strides)];
        const double mean = len > 0 ? sum / (double)len : 0.0;
        for (int64_t j = 0; j < len; j++) {
            const double d = (double)x[base + grid_offset(j, n_red, red, dims, strides)] - mean;
            sq += d * d;
        }
        const double den = sqrt(len > 0 ? sq / (double)len : 0.0) + 1e-9;
        for (int64_t j = 0; j < len; j++) {
            const int64_t at = base + grid_offset(j, n_red, red, dims, strides);
            y[at] = (float)(((double)x[at] - mean) / den);
        }
    }
}

void ptq_k_lpnorm_ref(int64_t outer, int64_t len, int64_t inner, int p, const float *x, float *y)
{
    if (len == 0) /* an empty x: nothing to write, however many outer x inner rows */
        return;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const float *xs = x + o * len * inner + i;
            float *ys = y + o * len * inner + i;
            double norm = 0.0;
            for (int64_t j = 0; j < len; j++)
                norm += p == 1 ? fabs((double)xs[j * inner]) : (double)xs[j * inner] * xs[j * inner];
            if (p == 2)
                norm = sqrt(norm);
            for (int64_t j = 0; j < len; j++)
                ys[j * inner] = norm == 0.0 ? 0.0f : (float)((double)xs[j * inner] / norm);
        }
}

void ptq_k_hardmax_ref(int64_t outer, int64_t len, int64_t inner, const float *x, float *y)
{
    if (len == 0) /* an empty x: nothing to write, however many outer x inner rows */
        return;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const float *xs = x + o * len * inner + i;
            float *ys = y + o * len * inner + i;
            int64_t best = 0;
            for (int64_t j = 1; j < len && !isnan(xs[best * inner]); j++)
                if (xs[j * inner] > xs[best * inner] || isnan(xs[j * inner]))
                    best = j;
            for (int64_t j = 0; j < len; j++)
                ys[j * inner] = j == best ? 1.0f : 0.0f;
        }
}

void ptq_k_isnan_ref(int64_t n, int dbl, const void *x, uint8_t *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = (uint8_t)(dbl ? isnan(((const double *)x)[i]) : isnan(((const float *)x)[i]));
}

void ptq_k_isinf_ref(int64_t n, int dbl, int positive, int negative, const void *x, uint8_t *y)
{
    for (int64_t i = 0; i < n; i++) {
        const double v = dbl ? ((const double *)x)[i] : (double)((const float *)x)[i];
        y[i] = (uint8_t)(isinf(v) && (v > 0 ? positive : negative));
    }
}

/* v shifted by s bits within bits: 0 once s reaches the width (numpy's, so ONNX's reference, rule). */
static uint64_t shift_bits(uint64_t v, uint64_t s, int bits, int left)
{
    if (s >= (uint64_t)bits)
        return 0;
    const uint64_t mask = bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
    return (left ? v << s : v >> s) & mask;
}

void ptq_k_bitshift_ref(int bytes, int left, const ptq_bcast *bc, const void *a, const void *b, void *y)
{
    const int64_t n = ptq_dims_prod(bc->out_dims, 0, bc->ndim);
    for (int64_t i = 0; i < n; i++) {
        int64_t ia, ib;
        ptq_bcast_offsets(bc, i, &ia, &ib);
        switch (bytes) {
        case 1:
            ((uint8_t *)y)[i] = (uint8_t)shift_bits(((const uint8_t *)a)[ia], ((const uint8_t *)b)[ib], 8, left);
            break;
        case 2:
            ((uint16_t *)y)[i] = (uint16_t)shift_bits(((const uint16_t *)a)[ia], ((const uint16_t *)b)[ib], 16, left);
            break;
        case 4:
            ((uint32_t *)y)[i] = (uint32_t)shift_bits(((const uint32_t *)a)[ia], ((const uint32_t *)b)[ib], 32, left);
            break;
        default:
            ((uint64_t *)y)[i] = shift_bits(((const uint64_t *)a)[ia], ((const uint64_t *)b)[ib], 64, left);
            break;
        }
    }
}
