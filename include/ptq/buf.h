/* The byte buffer every writer shares (core/buf.c): exporters, reports,
 * the ONNX editor. Covered by tests/test_export.c and tests/test_report.c. */
#ifndef PTQ_BUF_H
#define PTQ_BUF_H

#include "ptq/export_api.h"

#include <stddef.h>

#include "ptq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes, malloc'd and NUL-terminated (the NUL is not counted in n_bytes).
 * Zero-initialise; ptq_buf_free releases. The put functions are for writers
 * that check once at the end: a failed put sets failed and later ones do
 * nothing. */
typedef struct ptq_buf {
    char *data;
    size_t n_bytes;
    size_t cap_bytes;
    int failed;  /* a put ran out of memory (or a format failed) */
} ptq_buf;

PTQ_API void ptq_buf_free(ptq_buf *b); /* NULL and an empty buf are no-ops; leaves b zeroed */
PTQ_API ptq_status ptq_buf_append(ptq_ctx *ctx, ptq_buf *b, const void *data, size_t n_bytes);
PTQ_API ptq_status ptq_buf_appendf(ptq_ctx *ctx, ptq_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
PTQ_API void ptq_buf_put(ptq_buf *b, const void *data, size_t n_bytes);
PTQ_API void ptq_buf_putf(ptq_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The data, moved out to the caller (who frees it); NULL when a put failed
 * (the data is freed then). b is left zeroed. */
PTQ_API char *ptq_buf_take(ptq_buf *b);

#ifdef __cplusplus
}
#endif
#endif
