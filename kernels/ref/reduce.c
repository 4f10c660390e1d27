/* Reference ReduceMean over any set of axes and LayerNormalization over the
 * trailing axes, float32 with double accumulation. Covered by
 * tests/test_ops_zoo.c and the ONNX conformance run. */
#include <math.h>

#include "kernels/kernels.h"

void ptq_k_reduce_mean_ref(int ndim, const int64_t *dims, const unsigned char *reduced, const float *x, float *y)
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
        double sum = 0.0;
        for (int64_t j = 0; j < n_red; j++) {
            int64_t off = base, q = j;
            for (int k = n_redax - 1; k >= 0; k--) {
                off += (q % dims[red[k]]) * stride[red[k]];
                q /= dims[red[k]];
            }
            sum += x[off];
        }
        y[o] = (float)(sum / (double)n_red);
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
