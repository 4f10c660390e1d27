/* Reference transpose for elements of any fixed size: walks the output in
 * order with an odometer over its dims. Transpose's on the ref backend
 * (runtime/ops_shape.c); covered by tests/test_ops_shape.c, and
 * kernels/cpu/transpose.c checked against it in tests/parity_transpose.c. */
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"

/* Fixed sizes let the compiler turn the copy into one load and store. */
static inline void copy_elem(size_t elem_bytes, unsigned char *dst, const unsigned char *src)
{
    switch (elem_bytes) {
    case 1: memcpy(dst, src, 1); break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    default: memcpy(dst, src, elem_bytes); break;
    }
}

/* x: [in_dims], row-major, elem_bytes each; y: [in_dims[perm[0]], ..., in_dims[perm[ndim-1]]];
 * perm: [ndim], a permutation of 0..ndim-1. */
void ptq_k_transpose_ref(size_t elem_bytes, int ndim, const int64_t *in_dims, const int64_t *perm, const void *x,
                         void *y)
{
    int64_t in_stride[8], out_dims[8], step[8], idx[8] = {0};
    int64_t n = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        in_stride[d] = n;
        n *= in_dims[d];
    }
    for (int d = 0; d < ndim; d++) {
        out_dims[d] = in_dims[perm[d]];
        step[d] = in_stride[perm[d]]; /* input elements per step along output dim d */
    }
    const unsigned char *src = x;
    unsigned char *dst = y;
    int64_t off = 0; /* input element offset of output element i */
    for (int64_t i = 0; i < n; i++) {
        copy_elem(elem_bytes, dst + (size_t)i * elem_bytes, src + (size_t)off * elem_bytes);
        for (int d = ndim - 1; d >= 0; d--) {
            off += step[d];
            if (++idx[d] < out_dims[d])
                break;
            off -= step[d] * out_dims[d];
            idx[d] = 0;
        }
    }
}
