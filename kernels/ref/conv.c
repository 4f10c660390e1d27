/* Reference N-D grouped convolution (ONNX Conv): direct loops over every
 * output element and window tap, summed in double; taps in the padding read
 * zero. The spec kernels/cpu/conv.c is checked against in tests/parity_conv.c. */
#include "kernels/kernels.h"

/* x: [n, c_in, in0, in1, in2]; w: [c_out, c_in/group, k0, k1, k2];
 * b: [c_out] or NULL; y: [n, c_out, out0, out1, out2]. */
void ptq_k_conv_ref(const ptq_conv_params *p, const float *x, const float *w, const float *b, float *y)
{
    const int64_t cg_in = p->c_in / p->group, cg_out = p->c_out / p->group;
    const int64_t in_size = p->in[0] * p->in[1] * p->in[2];
    const int64_t k_size = p->k[0] * p->k[1] * p->k[2];
    for (int64_t n = 0; n < p->n; n++)
        for (int64_t m = 0; m < p->c_out; m++) {
            const int64_t g = m / cg_out;
            for (int64_t o0 = 0; o0 < p->out[0]; o0++)
                for (int64_t o1 = 0; o1 < p->out[1]; o1++)
                    for (int64_t o2 = 0; o2 < p->out[2]; o2++) {
                        double acc = b ? b[m] : 0.0;
                        for (int64_t c = 0; c < cg_in; c++) {
                            const float *xc = x + (n * p->c_in + g * cg_in + c) * in_size;
                            const float *wc = w + (m * cg_in + c) * k_size;
                            for (int64_t k0 = 0; k0 < p->k[0]; k0++) {
                                const int64_t i0 = o0 * p->stride[0] - p->pad_lo[0] + k0 * p->dil[0];
                                if (i0 < 0 || i0 >= p->in[0])
                                    continue;
                                for (int64_t k1 = 0; k1 < p->k[1]; k1++) {
                                    const int64_t i1 = o1 * p->stride[1] - p->pad_lo[1] + k1 * p->dil[1];
                                    if (i1 < 0 || i1 >= p->in[1])
                                        continue;
                                    for (int64_t k2 = 0; k2 < p->k[2]; k2++) {
                                        const int64_t i2 = o2 * p->stride[2] - p->pad_lo[2] + k2 * p->dil[2];
                                        if (i2 < 0 || i2 >= p->in[2])
                                            continue;
                                        acc += (double)xc[(i0 * p->in[1] + i1) * p->in[2] + i2] *
                                               (double)wc[(k0 * p->k[1] + k1) * p->k[2] + k2];
                                    }
                                }
                            }
                        }
                        y[((n * p->c_out + m) * p->out[0] + o0) * p->out[1] * p->out[2] + o1 * p->out[2] + o2] =
                            (float)acc;
                    }
        }
}
