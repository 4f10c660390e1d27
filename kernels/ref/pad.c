/* Reference Pad (ONNX Pad, modes constant, edge and reflect) for elements
 * of any fixed size: walks the output in order with an odometer and maps
 * each index back to the input. The CPU path of Pad (runtime/ops_pad.c);
 * covered by tests/test_ops_shape.c and the ONNX conformance run. */
#include <string.h>

#include "kernels/kernels.h"
#include "ptq/tensor.h"

/* The input index of output index o along a dim of n elements padded by
 * `before`; -1 when it reads the constant. */
static int64_t source_index(ptq_pad_mode mode, int64_t o, int64_t before, int64_t n)
{
    int64_t i = o - before;
    if (i >= 0 && i < n)
        return i;
    switch (mode) {
    case PTQ_PAD_EDGE: return i < 0 ? 0 : n - 1;
    case PTQ_PAD_REFLECT:
        if (n == 1)
            return 0;
        while (i < 0 || i >= n) /* pads longer than the dim bounce back and forth */
            i = i < 0 ? -i : 2 * (n - 1) - i;
        return i;
    case PTQ_PAD_CONSTANT: break;
    }
    return -1;
}

void ptq_k_pad_ref(ptq_pad_mode mode, size_t elem_bytes, int ndim, const int64_t *in_dims, const int64_t *pads,
                   const void *value, const void *x, void *y)
{
    int64_t out_dims[PTQ_MAX_DIMS], idx[PTQ_MAX_DIMS] = {0}, in_stride[PTQ_MAX_DIMS];
    int64_t n_out = 1, stride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        in_stride[d] = stride;
        stride *= in_dims[d];
        out_dims[d] = in_dims[d] + pads[d] + pads[ndim + d];
        n_out *= out_dims[d];
    }
    if (stride == 0)
        mode = PTQ_PAD_CONSTANT; /* nothing to read: every element is the constant */
    const unsigned char *src = x;
    unsigned char *dst = y;
    for (int64_t k = 0; k < n_out; k++, dst += elem_bytes) {
        int64_t at = 0;
        for (int d = 0; d < ndim && at >= 0; d++) {
            int64_t i = source_index(mode, idx[d], pads[d], in_dims[d]);
            at = i < 0 ? -1 : at + i * in_stride[d];
        }
        memcpy(dst, at < 0 ? value : src + (size_t)at * elem_bytes, elem_bytes);
        for (int d = ndim - 1; d >= 0; d--) {
            if (++idx[d] < out_dims[d])
                break;
            idx[d] = 0;
        }
    }
}
