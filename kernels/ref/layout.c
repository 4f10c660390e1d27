/* Reference DepthToSpace (DCR and CRD), SpaceToDepth and Tile (byte copies on any fixed-size dtype), GlobalMaxPool
 * and the variadic Sum and Mean (float32, numpy broadcasting), as ONNX defines them; their CPU path too. Covered by
 * the ONNX node suite (tests/onnx_conformance.c) and tests/ops_shape_test.py against onnxruntime. */
#include <string.h>

#include "kernels/kernels.h"

void ptq_k_depth_to_space_ref(size_t elem_bytes, int64_t n, int64_t c_out, int64_t h, int64_t w, int64_t block,
                              int crd, const void *x, void *y)
{
    const unsigned char *src = x;
    unsigned char *dst = y;
    const int64_t c_in = c_out * block * block;
    for (int64_t b = 0; b < n; b++)
        for (int64_t c = 0; c < c_out; c++)
            for (int64_t oh = 0; oh < h * block; oh++)
                for (int64_t ow = 0; ow < w * block; ow++, dst += elem_bytes) {
                    const int64_t i = oh % block, j = ow % block;
                    /* DCR: the block offset is the channel's high part; CRD: its low part */
                    const int64_t ci = crd ? c * block * block + i * block + j : (i * block + j) * c_out + c;
                    memcpy(dst, src + (((b * c_in + ci) * h + oh / block) * w + ow / block) * elem_bytes,
                           elem_bytes);
                }
}

void ptq_k_space_to_depth_ref(size_t elem_bytes, int64_t n, int64_t c_in, int64_t h_out, int64_t w_out,
                              int64_t block, const void *x, void *y)
{
    const unsigned char *src = x;
    unsigned char *dst = y;
    const int64_t h = h_out * block, w = w_out * block;
    for (int64_t b = 0; b < n; b++)
        for (int64_t co = 0; co < c_in * block * block; co++)
            for (int64_t oh = 0; oh < h_out; oh++)
                for (int64_t ow = 0; ow < w_out; ow++, dst += elem_bytes) {
                    const int64_t c = co % c_in, i = co / c_in / block, j = co / c_in % block;
                    memcpy(dst, src + (((b * c_in + c) * h + oh * block + i) * w + ow * block + j) * elem_bytes,
                           elem_bytes);
                }
}

void ptq_k_tile_ref(size_t elem_bytes, int ndim, const int64_t *in_dims, const int64_t *out_dims, const void *x,
                    void *y)
{
    const unsigned char *src = x;
    unsigned char *dst = y;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= out_dims[d];
    for (int64_t i = 0; i < n; i++, dst += elem_bytes) {
        int64_t rest = i, at = 0, stride = 1;
        for (int d = ndim - 1; d >= 0; d--) {
            at += rest % out_dims[d] % in_dims[d] * stride;
            rest /= out_dims[d];
            stride *= in_dims[d];
        }
        memcpy(dst, src + at * (int64_t)elem_bytes, elem_bytes);
    }
}

void ptq_k_global_maxpool_ref(int64_t n_rows, int64_t n_cols, const float *x, float *y)
{
    for (int64_t r = 0; r < n_rows; r++) {
        const float *row = x + r * n_cols;
        float m = row[0];
        for (int64_t c = 1; c < n_cols; c++)
            m = row[c] > m ? row[c] : m;
        y[r] = m;
    }
}

void ptq_k_sum_ref(int first, float divisor, const ptq_bcast *bc, const float *b, float *y)
{
    int64_t n = 1;
    for (int d = 0; d < bc->ndim; d++)
        n *= bc->out_dims[d];
    for (int64_t i = 0; i < n; i++) {
        int64_t iy, ib;
        ptq_bcast_offsets(bc, i, &iy, &ib);
        y[i] = first ? b[ib] : y[i] + b[ib];
        if (divisor != 0.0f)
            y[i] /= divisor;
    }
}
