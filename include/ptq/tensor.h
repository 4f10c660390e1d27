/* Element types (numbered as ONNX TensorProto.DataType) and the runtime
 * tensor: a dtype, a shape and one buffer on the host or a device.
 * Covered by tests/test_status.c. */
#ifndef PTQ_TENSOR_H
#define PTQ_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "ptq/export_api.h"
#include "ptq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PTQ_MAX_DIMS 8

typedef enum ptq_dtype {
    PTQ_DT_UNDEFINED = 0,
    PTQ_DT_FLOAT = 1,
    PTQ_DT_UINT8 = 2,
    PTQ_DT_INT8 = 3,
    PTQ_DT_UINT16 = 4,
    PTQ_DT_INT16 = 5,
    PTQ_DT_INT32 = 6,
    PTQ_DT_INT64 = 7,
    PTQ_DT_STRING = 8,
    PTQ_DT_BOOL = 9,
    PTQ_DT_FLOAT16 = 10,
    PTQ_DT_DOUBLE = 11,
    PTQ_DT_UINT32 = 12,
    PTQ_DT_UINT64 = 13,
    PTQ_DT_COMPLEX64 = 14,
    PTQ_DT_COMPLEX128 = 15,
    PTQ_DT_BFLOAT16 = 16,
    PTQ_DT_FLOAT8E4M3FN = 17,
    PTQ_DT_FLOAT8E4M3FNUZ = 18,
    PTQ_DT_FLOAT8E5M2 = 19,
    PTQ_DT_FLOAT8E5M2FNUZ = 20,
    PTQ_DT_UINT4 = 21,
    PTQ_DT_INT4 = 22
} ptq_dtype;

/* Bytes per element; 0 for types without a fixed size (string, 4-bit). */
PTQ_API size_t ptq_dtype_size(ptq_dtype dt);
PTQ_API const char *ptq_dtype_name(ptq_dtype dt);

typedef enum ptq_mem { PTQ_MEM_HOST = 0, PTQ_MEM_CUDA = 1 } ptq_mem;

/* A runtime tensor. data holds prod(dims) elements, row-major (C order).
 * ndim 0 is a scalar with one element. */
typedef struct ptq_tensor {
    ptq_dtype dtype;
    int ndim;
    int64_t dims[PTQ_MAX_DIMS];
    void *data;
    ptq_mem mem;      /* where data lives */
    size_t cap_bytes; /* bytes allocated at data (>= ptq_tensor_bytes) */
} ptq_tensor;

PTQ_API int64_t ptq_tensor_numel(const ptq_tensor *t);
/* numel times the element size; SIZE_MAX when that does not fit a size_t. */
PTQ_API size_t ptq_tensor_bytes(const ptq_tensor *t);
/* Product of dims[lo..hi); 1 when lo >= hi; 0 when a dim is 0; INT64_MAX (INT64_MIN for a negative
 * product) when it does not fit int64. */
PTQ_API int64_t ptq_dims_prod(const int64_t *dims, int lo, int hi);
/* Frees a host tensor's data (malloc'd); NULL-safe. */
PTQ_API void ptq_tensor_free_host(ptq_tensor *t);
/* "1x3x224x224" into buf; returns buf. */
PTQ_API char *ptq_dims_str(const int64_t *dims, int ndim, char *buf, size_t n_buf);

#ifdef __cplusplus
}
#endif
#endif
