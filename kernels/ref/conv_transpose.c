/* Reference N-D grouped transposed convolution (ONNX ConvTranspose): for
 * every output element, the input positions and taps that scatter into it,
 * summed in double. The spec kernels/cpu/conv_transpose.c is checked against
 * in tests/parity_conv.c. */
#include "kernels/kernels.h"

/* The input index whose tap lands on scatter position f = i * stride, or -1
 * when none does (f off the stride grid or outside [0, n)). */
static int64_t source(int64_t f, int64_t stride, int64_t n)
{
    if (f < 0 || f % stride != 0)
        return -1;
    return f / stride < n ? f / stride : -1;
}

/* What output position o (3 axes) of one output channel gathers: xg [cg_in,
 * in0, in1, in2] (the group's input channels), wm [cg_in, w_stride] with the
 * channel's taps [k0, k1, k2] at the start of each row. */
static double gather(const ptq_conv_params *p, const float *xg, const float *wm, int64_t cg_in, int64_t w_stride,
                     const int64_t *o)
{
    const int64_t in_size = p->in[0] * p->in[1] * p->in[2];
    double acc = 0.0;
    for (int64_t k0 = 0; k0 < p->k[0]; k0++) {
        const int64_t i0 = source(o[0] + p->pad_lo[0] - k0 * p->dil[0], p->stride[0], p->in[0]);
        for (int64_t k1 = 0; i0 >= 0 && k1 < p->k[1]; k1++) {
            const int64_t i1 = source(o[1] + p->pad_lo[1] - k1 * p->dil[1], p->stride[1], p->in[1]);
            for (int64_t k2 = 0; i1 >= 0 && k2 < p->k[2]; k2++) {
                const int64_t i2 = source(o[2] + p->pad_lo[2] - k2 * p->dil[2], p->stride[2], p->in[2]);
                if (i2 < 0)
                    continue;
                const int64_t at = (i0 * p->in[1] + i1) * p->in[2] + i2, tap = (k0 * p->k[1] + k1) * p->k[2] + k2;
                for (int64_t c = 0; c < cg_in; c++)
                    acc += (double)xg[c * in_size + at] * (double)wm[c * w_stride + tap];
            }
        }
    }
    return acc;
}

/* x: [n, c_in, in0, in1, in2]; w: [c_in, c_out/group, k0, k1, k2];
 * b: [c_out] or NULL; y: [n, c_out, out0, out1, out2], written in order. */
void ptq_k_conv_transpose_ref(const ptq_conv_params *p, const float *x, const float *w, const float *b, float *y)
{
    const int64_t cg_in = p->c_in / p->group, cg_out = p->c_out / p->group;
    const int64_t in_size = p->in[0] * p->in[1] * p->in[2], taps = p->k[0] * p->k[1] * p->k[2];
    for (int64_t nm = 0; nm < p->n * p->c_out; nm++) {
        const int64_t n = nm / p->c_out, m = nm % p->c_out, g = m / cg_out;
        const float *xg = x + (n * p->c_in + g * cg_in) * in_size;
        const float *wm = w + (g * cg_in * cg_out + m % cg_out) * taps;
        int64_t o[PTQ_SPATIAL];
        for (o[0] = 0; o[0] < p->out[0]; o[0]++)
            for (o[1] = 0; o[1] < p->out[1]; o[1]++)
                for (o[2] = 0; o[2] < p->out[2]; o[2]++)
                    *y++ = (float)((b ? b[m] : 0.0) + gather(p, xg, wm, cg_in, cg_out * taps, o));
    }
}
