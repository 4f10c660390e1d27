/* The shared byte buffer (include/ptq/buf.h): grows by doubling, always
 * NUL-terminated, with checked (ctx) and sticky (put) appends. Covered by
 * tests/test_export.c, tests/test_report.c and tests/test_onnx_edit.c. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/c_locale.h"
#include "ptq/buf.h"

void ptq_buf_free(ptq_buf *b)
{
    if (!b)
        return;
    free(b->data);
    memset(b, 0, sizeof *b);
}

/* Room for more_bytes and a NUL; 0, or -1 when out of memory. */
static int reserve(ptq_buf *b, size_t more_bytes)
{
    if (more_bytes > SIZE_MAX / 2 - b->n_bytes - 1)
        return -1;
    size_t need = b->n_bytes + more_bytes + 1;
    if (need <= b->cap_bytes)
        return 0;
    size_t cap = b->cap_bytes ? b->cap_bytes : 256;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return -1;
    b->data = p;
    b->cap_bytes = cap;
    return 0;
}

void ptq_buf_put(ptq_buf *b, const void *data, size_t n_bytes)
{
    if (b->failed)
        return;
    if (reserve(b, n_bytes) != 0) {
        b->failed = 1;
        return;
    }
    if (n_bytes)
        memcpy(b->data + b->n_bytes, data, n_bytes);
    b->n_bytes += n_bytes;
    b->data[b->n_bytes] = '\0';
}

static void put_v(ptq_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    void *locale = ptq_c_locale_enter(); /* files' numbers: "0.5" whatever the program's LC_NUMERIC */
    int len = vsnprintf(NULL, 0, fmt, ap);
    if (len < 0 || reserve(b, (size_t)len) != 0) {
        b->failed = 1;
    } else {
        vsnprintf(b->data + b->n_bytes, (size_t)len + 1, fmt, ap2);
        b->n_bytes += (size_t)len;
    }
    ptq_c_locale_leave(locale);
    va_end(ap2);
}

void ptq_buf_putf(ptq_buf *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    put_v(b, fmt, ap);
    va_end(ap);
}

ptq_status ptq_buf_append(ptq_ctx *ctx, ptq_buf *b, const void *data, size_t n_bytes)
{
    ptq_buf_put(b, data, n_bytes);
    if (b->failed)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory growing a %zu-byte buffer by %zu bytes", b->n_bytes,
                        n_bytes);
    return PTQ_OK;
}

ptq_status ptq_buf_appendf(ptq_ctx *ctx, ptq_buf *b, const char *fmt, ...)
{
    if (!b->failed) {
        va_list ap;
        va_start(ap, fmt);
        put_v(b, fmt, ap);
        va_end(ap);
    }
    if (b->failed)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory (or a bad format) appending to a %zu-byte buffer",
                        b->n_bytes);
    return PTQ_OK;
}

char *ptq_buf_take(ptq_buf *b)
{
    char *p = b->failed ? NULL : b->data;
    if (b->failed)
        free(b->data);
    memset(b, 0, sizeof *b);
    return p;
}
