/* ptq_ctx error recording: the message and the source location of the
 * failure. Covered by tests/test_status.c. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/utf8.h"
#include "ptq/status.h"

void ptq_ctx_init(ptq_ctx *ctx)
{
    memset(ctx, 0, sizeof *ctx);
}

const char *ptq_status_name(ptq_status st)
{
    switch (st) {
    case PTQ_OK: return "ok";
    case PTQ_ERR_INVALID_ARG: return "invalid argument";
    case PTQ_ERR_IO: return "i/o error";
    case PTQ_ERR_FORMAT: return "malformed file";
    case PTQ_ERR_UNSUPPORTED: return "unsupported";
    case PTQ_ERR_SHAPE: return "shape mismatch";
    case PTQ_ERR_DATA: return "bad data";
    case PTQ_ERR_NOMEM: return "out of memory";
    case PTQ_ERR_CUDA: return "cuda error";
    case PTQ_ERR_NO_DEVICE: return "no cuda device";
    case PTQ_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

ptq_status ptq_fail_at(ptq_ctx *ctx, const char *file, int line, ptq_status code, const char *fmt, ...)
{
    if (!ctx)
        return code;
    /* keep only the path below the source root: "model/onnx_load.c" */
    const char *short_file = file;
    static const char *const roots[] = {"/core/", "/model/", "/datasets/", "/runtime/", "/kernels/",
                                        "/observers/", "/calib/", "/quant/", "/reports/", "/cli/"};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        const char *hit = strstr(file, roots[i]);
        if (hit) {
            short_file = hit + 1;
            break;
        }
    }
    ctx->code = code;
    snprintf(ctx->where, sizeof ctx->where, "%s:%d", short_file, line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->msg, sizeof ctx->msg, fmt, ap);
    va_end(ap);
    return code;
}

const char *ptq_escape(const char *s, char *buf, size_t n_buf)
{
    static const char hex[] = "0123456789abcdef";
    size_t used = 0;
    if (n_buf == 0)
        return buf;
    for (size_t n; s && *s; s += n) {
        unsigned char c = (unsigned char)*s;
        unsigned cp = c;
        n = c < 0x80 ? 1 : ptq_utf8_decode(s, &cp); /* a byte that starts no UTF-8 character is escaped too */
        /* C1 controls U+0080..U+009F (NEL, CSI, ...) and U+2028/U+2029 break lines or drive terminals too, and
         * the bidi formatting characters (U+061C, U+200E/F, U+202A..U+202E, U+2066..U+2069) reorder what
         * follows them on the line (a name that shows as another): each of their bytes escaped */
        const int unseen = (cp >= 0x80 && cp < 0xA0) || cp == 0x2028 || cp == 0x2029 || cp == 0x061C ||
                           cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
                           (cp >= 0x2066 && cp <= 0x2069);
        int esc = c < 0x20 || c == 0x7f || n == 0 || unseen;
        if (n == 0)
            n = 1;
        if (used + (esc ? 4 * n : n) >= n_buf)
            break;
        if (esc) {
            for (size_t k = 0; k < n; k++) {
                const unsigned char b = (unsigned char)s[k];
                buf[used++] = '\\';
                buf[used++] = 'x';
                buf[used++] = hex[b >> 4];
                buf[used++] = hex[b & 15];
            }
        } else {
            memcpy(buf + used, s, n);
            used += n;
        }
    }
    buf[used] = '\0';
    return buf;
}
