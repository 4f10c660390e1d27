/* Reference MaxPool / AveragePool / LpPool / GlobalAveragePool: loops over every tap.
 * Padding never wins a max, NaN in a window gives NaN; averages sum in double
 * over the taps in the input (count_include_pad: in the explicitly padded input,
 * not a ceil_mode overhang), LpPool's |x|^p likewise (padding adds 0). The spec kernels/cpu/pool.c meets in
 * tests/parity_pool.c; LpPool (no cpu kernel) is checked against onnxruntime by tests/ops_norm_test.py. */
#include <math.h>

#include "kernels/kernels.h"

typedef enum { POOL_MAX, POOL_AVG, POOL_LP } pool_kind;

/* x: [n, c, in0, in1, in2]; y: [n, c, out0, out1, out2]. */
static void pool_ref(pool_kind kind, const ptq_pool_params *p, int64_t lp, const float *x, float *y)
{
    const int64_t in_size = p->in[0] * p->in[1] * p->in[2];
    for (int64_t nc = 0; nc < p->n * p->c; nc++) {
        const float *xp = x + nc * in_size;
        for (int64_t o0 = 0; o0 < p->out[0]; o0++)
            for (int64_t o1 = 0; o1 < p->out[1]; o1++)
                for (int64_t o2 = 0; o2 < p->out[2]; o2++) {
                    const int64_t o[PTQ_SPATIAL] = {o0, o1, o2};
                    float m = -INFINITY;
                    double sum = 0.0;
                    int64_t n_in = 0, n_padded = 0;
                    for (int64_t k0 = 0; k0 < p->k[0]; k0++)
                        for (int64_t k1 = 0; k1 < p->k[1]; k1++)
                            for (int64_t k2 = 0; k2 < p->k[2]; k2++) {
                                const int64_t t[PTQ_SPATIAL] = {k0, k1, k2};
                                int64_t i[PTQ_SPATIAL];
                                int inside = 1, in_padded = 1;
                                for (int s = 0; s < PTQ_SPATIAL; s++) {
                                    i[s] = o[s] * p->stride[s] - p->pad_lo[s] + t[s] * p->dil[s];
                                    inside &= i[s] >= 0 && i[s] < p->in[s];
                                    in_padded &= i[s] < p->in[s] + p->pad_hi[s];
                                }
                                n_padded += in_padded;
                                if (!inside)
                                    continue;
                                const float v = xp[(i[0] * p->in[1] + i[1]) * p->in[2] + i[2]];
                                if (!isnan(m) && (v > m || isnan(v)))
                                    m = v;
                                sum += kind == POOL_LP ? pow(fabs((double)v), (double)lp) : (double)v;
                                n_in++;
                            }
                    const int64_t count = p->count_include_pad ? n_padded : n_in;
                    float *yo = &y[((nc * p->out[0] + o0) * p->out[1] + o1) * p->out[2] + o2];
                    if (kind == POOL_LP)
                        *yo = (float)pow(sum, 1.0 / (double)lp);
                    else
                        *yo = kind == POOL_MAX ? m : (count ? (float)(sum / (double)count) : 0.0f);
                }
    }
}

void ptq_k_maxpool_ref(const ptq_pool_params *p, const float *x, float *y)
{
    pool_ref(POOL_MAX, p, 1, x, y);
}

void ptq_k_avgpool_ref(const ptq_pool_params *p, const float *x, float *y)
{
    pool_ref(POOL_AVG, p, 1, x, y);
}

void ptq_k_lppool_ref(const ptq_pool_params *p, int64_t lp, const float *x, float *y)
{
    pool_ref(POOL_LP, p, lp, x, y);
}

/* x: [n_rows, n_cols]; y: [n_rows]. */
void ptq_k_global_avgpool_ref(int64_t n_rows, int64_t n_cols, const float *x, float *y)
{
    for (int64_t r = 0; r < n_rows; r++) {
        double sum = 0.0;
        for (int64_t j = 0; j < n_cols; j++)
            sum += x[r * n_cols + j];
        y[r] = n_cols ? (float)(sum / (double)n_cols) : 0.0f;
    }
}
