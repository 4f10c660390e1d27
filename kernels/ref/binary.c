/* Reference binary elementwise kernel (Add, Sub, Mul, Div) with numpy
 * broadcasting: one output element at a time, its input offsets from the
 * ptq_bcast strides. The spec kernels/cpu/binary.c is checked against in
 * tests/parity_elementwise.c. */
#include "kernels/kernels.h"

static float binop(ptq_binop op, float a, float b)
{
    switch (op) {
    case PTQ_BIN_ADD: return a + b;
    case PTQ_BIN_SUB: return a - b;
    case PTQ_BIN_MUL: return a * b;
    case PTQ_BIN_DIV: return a / b;
    }
    return 0.0f;
}

/* a, b: laid out as bc->a_stride / bc->b_stride describe; y: [bc->out_dims], row-major. */
void ptq_k_binary_ref(ptq_binop op, const ptq_bcast *bc, const float *a, const float *b, float *y)
{
    int64_t n = 1;
    for (int d = 0; d < bc->ndim; d++)
        n *= bc->out_dims[d];
    for (int64_t i = 0; i < n; i++) {
        int64_t rest = i, ia = 0, ib = 0;
        for (int d = bc->ndim - 1; d >= 0; d--) {
            int64_t idx = rest % bc->out_dims[d];
            rest /= bc->out_dims[d];
            ia += idx * bc->a_stride[d];
            ib += idx * bc->b_stride[d];
        }
        y[i] = binop(op, a[ia], b[ib]);
    }
}
