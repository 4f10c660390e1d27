/* Reference Resize (ONNX Resize 10 to 19 and Upsample 7 and 9: nearest, linear and cubic on any axes, separable as
 * ONNX defines them), float32; coordinates and taps computed in float as onnxruntime's, each output a sum in double
 * of the tensor product of each axis's taps. The CPU path of Resize and Upsample (runtime/ops_resize.c); covered by
 * the ONNX conformance run and tests/ops_resize_test.py. */
#include <math.h>

#include "kernels/kernels.h"

/* Up to 4 input indices and their weights along one axis for one output coordinate. */
typedef struct axis_taps {
    int n;
    int64_t idx[4];
    float w[4];
    int outside; /* TF_CROP_AND_RESIZE: the coordinate falls outside the input (the output is extrapolation) */
} axis_taps;

/* The input coordinate that output coordinate o of axis d maps back to. */
static float original_coord(const ptq_resize_params *p, int d, int64_t o)
{
    const float x = (float)o, scale = p->scales[d];
    const float len_in = (float)p->in_dims[d], len_out = (float)p->out_dims[d];
    switch (p->coord) {
    case PTQ_RESIZE_HALF_PIXEL: return (x + 0.5f) / scale - 0.5f;
    case PTQ_RESIZE_HALF_PIXEL_SYMMETRIC: {
        const float adjustment = len_out / (scale * len_in), center = len_in / 2;
        return center * (1 - adjustment) + (x + 0.5f) / scale - 0.5f;
    }
    case PTQ_RESIZE_PYTORCH_HALF_PIXEL: return p->out_dims[d] > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case PTQ_RESIZE_ALIGN_CORNERS: return p->out_dims[d] == 1 ? 0.0f : x * (len_in - 1) / (len_out - 1);
    case PTQ_RESIZE_ASYMMETRIC: return x / scale;
    case PTQ_RESIZE_TF_HALF_PIXEL_FOR_NN: return (x + 0.5f) / scale;
    case PTQ_RESIZE_TF_CROP_AND_RESIZE: {
        const float start = p->roi_start[d], end = p->roi_end[d];
        return p->out_dims[d] > 1 ? start * (len_in - 1) + (x * (end - start) * (len_in - 1)) / (len_out - 1)
                                  : 0.5f * (start + end) * (len_in - 1);
    }
    }
    return x / scale;
}

static int64_t clamp_index(int64_t i, int64_t len)
{
    return i < 0 ? 0 : i >= len ? len - 1 : i;
}

/* Nearest's input index for coordinate c, as nearest_mode rounds it (onnxruntime's rules, C's round halves away
 * from zero). */
static int64_t nearest_index(const ptq_resize_params *p, int d, float c)
{
    switch (p->round) {
    case PTQ_RESIZE_ROUND_PREFER_FLOOR:
        return c == (float)(int64_t)c + 0.5f ? (int64_t)floorf(c) : (int64_t)roundf(c);
    case PTQ_RESIZE_ROUND_PREFER_CEIL: return (int64_t)roundf(c);
    case PTQ_RESIZE_FLOOR: return (int64_t)floorf(c);
    case PTQ_RESIZE_CEIL: return (int64_t)ceilf(c);
    case PTQ_RESIZE_SIMPLE: return p->scales[d] < 1 ? (int64_t)ceilf(c) : (int64_t)c;
    }
    return (int64_t)c;
}

/* Keys' cubic convolution weights of the taps at -1, 0, 1 and 2 from floor(c), r = c - floor(c). */
static void cubic_weights(float a, float r, float *w)
{
    const float s = r + 1, t = 1 - r, u = 2 - r;
    w[0] = ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
    w[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
    w[2] = ((a + 2) * t - (a + 3)) * t * t + 1;
    w[3] = ((a * u - 5 * a) * u + 8 * a) * u - 4 * a;
}

static void taps_of(const ptq_resize_params *p, int d, int64_t o, axis_taps *t)
{
    const int64_t len = p->in_dims[d];
    float c = original_coord(p, d, o);
    t->outside = p->coord == PTQ_RESIZE_TF_CROP_AND_RESIZE && !(c >= 0 && c <= (float)(len - 1));
    if (t->outside) { /* no tap read; c may be far out of int64_t's range */
        t->n = 1;
        t->idx[0] = 0;
        t->w[0] = 0;
    } else if (p->mode == PTQ_RESIZE_NEAREST) {
        t->n = 1;
        t->idx[0] = clamp_index(nearest_index(p, d, c), len);
        t->w[0] = 1;
    } else if (p->mode == PTQ_RESIZE_LINEAR) {
        c = c < 0 ? 0 : c > (float)(len - 1) ? (float)(len - 1) : c;
        const int64_t i0 = (int64_t)c;
        const float r = c - (float)i0;
        t->n = 0;
        if (r < 1) { /* a weight of 0 is no tap: an axis the node does not resize reads one element */
            t->idx[t->n] = i0;
            t->w[t->n++] = 1 - r;
        }
        if (r > 0) {
            t->idx[t->n] = clamp_index(i0 + 1, len);
            t->w[t->n++] = r;
        }
    } else {
        const float f = floorf(c);
        float w[4], sum = 0;
        cubic_weights(p->cubic_a, c - f, w);
        t->n = 0;
        for (int k = 0; k < 4; k++) {
            const int64_t i = (int64_t)f + k - 1;
            if (p->exclude_outside && (i < 0 || i >= len))
                w[k] = 0;
            sum += w[k];
        }
        for (int k = 0; k < 4; k++) {
            if (w[k] == 0)
                continue;
            t->idx[t->n] = clamp_index((int64_t)f + k - 1, len);
            t->w[t->n++] = p->exclude_outside && sum != 0 ? w[k] / sum : w[k];
        }
    }
}

void ptq_k_resize_ref(const ptq_resize_params *p, const float *x, float *y)
{
    const int nd = p->ndim;
    int64_t out_n = 1, stride[PTQ_K_RESIZE_MAX_DIMS], at[PTQ_K_RESIZE_MAX_DIMS] = {0};
    axis_taps taps[PTQ_K_RESIZE_MAX_DIMS];
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        stride[d] = s;
        s *= p->in_dims[d];
        out_n *= p->out_dims[d];
    }
    if (out_n == 0)
        return;
    for (int d = 0; d < nd; d++)
        taps_of(p, d, 0, &taps[d]);
    for (int64_t e = 0; e < out_n; e++) {
        int outside = 0;
        for (int d = 0; d < nd; d++)
            outside |= taps[d].outside || taps[d].n == 0;
        if (outside) {
            y[e] = p->extrapolation;
        } else { /* every combination of one tap per axis, as an odometer */
            int k[PTQ_K_RESIZE_MAX_DIMS] = {0};
            double sum = 0;
            for (;;) {
                int64_t off = 0;
                double w = 1;
                for (int d = 0; d < nd; d++) {
                    off += taps[d].idx[k[d]] * stride[d];
                    w *= taps[d].w[k[d]];
                }
                sum += w * x[off];
                int d = nd - 1;
                while (d >= 0 && ++k[d] == taps[d].n)
                    k[d--] = 0;
                if (d < 0)
                    break;
            }
            y[e] = (float)sum;
        }
        int d = nd - 1; /* the next output index; the taps of the axes that moved */
        while (d >= 0 && ++at[d] == p->out_dims[d])
            at[d--] = 0;
        for (int j = d < 0 ? 0 : d; j < nd; j++)
            taps_of(p, j, at[j], &taps[j]);
    }
}
