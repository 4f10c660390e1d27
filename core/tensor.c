/* dtype sizes and names, tensor element counts. Covered by tests/test_status.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ptq/tensor.h"

size_t ptq_dtype_size(ptq_dtype dt)
{
    switch (dt) {
    case PTQ_DT_FLOAT: case PTQ_DT_INT32: case PTQ_DT_UINT32: return 4;
    case PTQ_DT_UINT8: case PTQ_DT_INT8: case PTQ_DT_BOOL:
    case PTQ_DT_FLOAT8E4M3FN: case PTQ_DT_FLOAT8E4M3FNUZ:
    case PTQ_DT_FLOAT8E5M2: case PTQ_DT_FLOAT8E5M2FNUZ: return 1;
    case PTQ_DT_UINT16: case PTQ_DT_INT16: case PTQ_DT_FLOAT16: case PTQ_DT_BFLOAT16: return 2;
    case PTQ_DT_INT64: case PTQ_DT_DOUBLE: case PTQ_DT_UINT64: case PTQ_DT_COMPLEX64: return 8;
    case PTQ_DT_COMPLEX128: return 16;
    default: return 0;
    }
}

const char *ptq_dtype_name(ptq_dtype dt)
{
    static const char *const names[] = {"undefined", "float32", "uint8", "int8", "uint16", "int16", "int32",
                                        "int64", "string", "bool", "float16", "float64", "uint32", "uint64",
                                        "complex64", "complex128", "bfloat16", "float8e4m3fn", "float8e4m3fnuz",
                                        "float8e5m2", "float8e5m2fnuz", "uint4", "int4"};
    if ((unsigned)dt < sizeof names / sizeof names[0])
        return names[dt];
    return "unknown";
}

int64_t ptq_dims_prod(const int64_t *dims, int lo, int hi)
{
    int64_t p = 1;
    int over = 0, neg = 0; /* dims from a file: past int64 saturates, keeping the sign; a later 0 still wins */
    for (int i = lo; i < hi; i++) {
        if (dims[i] == 0)
            return 0;
        neg ^= dims[i] < 0;
        over = over || __builtin_mul_overflow(p, dims[i], &p);
    }
    return over ? (neg ? INT64_MIN : INT64_MAX) : p;
}

int64_t ptq_tensor_numel(const ptq_tensor *t)
{
    return ptq_dims_prod(t->dims, 0, t->ndim);
}

size_t ptq_tensor_bytes(const ptq_tensor *t)
{
    const int64_t n = ptq_tensor_numel(t);
    const size_t elem = ptq_dtype_size(t->dtype);
    if (n < 0 || (elem > 0 && (uint64_t)n > SIZE_MAX / elem))
        return SIZE_MAX; /* dims from a file: saturated, never wrapped to a small size */
    return (size_t)n * elem;
}

char *ptq_dims_str(const int64_t *dims, int ndim, char *buf, size_t n_buf)
{
    size_t used = 0;
    buf[0] = '\0';
    if (ndim < 0) {
        snprintf(buf, n_buf, "?");
        return buf;
    }
    if (ndim == 0) {
        snprintf(buf, n_buf, "scalar");
        return buf;
    }
    for (int i = 0; i < ndim && used < n_buf; i++) {
        int w = dims[i] < 0 ? snprintf(buf + used, n_buf - used, "%s?", i ? "x" : "")
                            : snprintf(buf + used, n_buf - used, "%s%lld", i ? "x" : "", (long long)dims[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return buf;
}

void ptq_tensor_free_host(ptq_tensor *t)
{
    if (!t)
        return;
    free(t->data);
    t->data = NULL;
    t->cap_bytes = 0;
}
