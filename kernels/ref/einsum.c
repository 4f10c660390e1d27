/* Reference Einsum over labels laid out by runtime/ops_einsum.c (kernels/kernels.h's ptq_einsum_params): for each
 * output element, the sum over every summed label's index of the inputs' product, in double (floats) or wrapping
 * int64 (integers). The CPU path too; tests/ops_rnn_test.py against onnxruntime and the ONNX conformance run. */
#include <string.h>

#include "kernels/kernels.h"

static double read_f(ptq_cast_kind k, const void *x, int64_t at)
{
    return k == PTQ_CAST_F32 ? (double)((const float *)x)[at] : ((const double *)x)[at];
}

static uint64_t read_i(ptq_cast_kind k, const void *x, int64_t at)
{
    return k == PTQ_CAST_I32 ? (uint64_t)(int64_t)((const int32_t *)x)[at] : (uint64_t)((const int64_t *)x)[at];
}

void ptq_k_einsum_ref(const ptq_einsum_params *p, ptq_cast_kind kind, const void *const *in, void *y)
{
    const int is_float = kind == PTQ_CAST_F32 || kind == PTQ_CAST_F64;
    int64_t idx[PTQ_EINSUM_MAX_LABELS], off[PTQ_EINSUM_MAX_INPUTS];
    int64_t n_y = 1, n_sum = 1;
    for (int l = 0; l < p->n_labels; l++) {
        if (p->size[l] == 0)
            n_sum = 0;
        if (l < p->n_out)
            n_y *= p->size[l];
        else if (n_sum)
            n_sum *= p->size[l];
    }
    memset(idx, 0, sizeof idx);
    for (int64_t e = 0; e < n_y; e++) { /* idx[0..n_out) is output element e's index */
        double acc_f = 0.0;
        uint64_t acc_i = 0;
        memset(idx + p->n_out, 0, (size_t)(p->n_labels - p->n_out) * sizeof idx[0]);
        for (int64_t s = 0; s < n_sum; s++) {
            for (int i = 0; i < p->n_in; i++) {
                off[i] = 0;
                for (int l = 0; l < p->n_labels; l++)
                    off[i] += idx[l] * p->stride[i][l];
            }
            if (is_float) {
                double prod = 1.0;
                for (int i = 0; i < p->n_in; i++)
                    prod *= read_f(kind, in[i], off[i]);
                acc_f += prod;
            } else {
                uint64_t prod = 1;
                for (int i = 0; i < p->n_in; i++)
                    prod *= read_i(kind, in[i], off[i]);
                acc_i += prod;
            }
            for (int l = p->n_labels - 1; l >= p->n_out && ++idx[l] == p->size[l]; l--) /* the next summed index */
                idx[l] = 0;
        }
        if (kind == PTQ_CAST_F32)
            ((float *)y)[e] = (float)acc_f;
        else if (kind == PTQ_CAST_F64)
            ((double *)y)[e] = acc_f;
        else if (kind == PTQ_CAST_I32)
            ((int32_t *)y)[e] = (int32_t)(uint32_t)acc_i;
        else
            ((int64_t *)y)[e] = (int64_t)acc_i;
        for (int l = p->n_out - 1; l >= 0 && ++idx[l] == p->size[l]; l--) /* the next output index */
            idx[l] = 0;
    }
}
