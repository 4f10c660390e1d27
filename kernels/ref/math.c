/* Reference Sqrt and Pow (numpy broadcasting) on float32, as ONNX defines
 * them; their CPU path too. Covered by tests/test_ops_zoo.c and the ONNX
 * conformance run. */
#include <math.h>

#include "kernels/kernels.h"

void ptq_k_sqrt_ref(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = sqrtf(x[i]);
}

void ptq_k_pow_ref(const ptq_bcast *bc, const float *a, const float *b, float *y)
{
    int64_t n = 1;
    for (int d = 0; d < bc->ndim; d++)
        n *= bc->out_dims[d];
    for (int64_t i = 0; i < n; i++) {
        int64_t ia, ib;
        ptq_bcast_offsets(bc, i, &ia, &ib);
        y[i] = powf(a[ia], b[ib]);
    }
}
