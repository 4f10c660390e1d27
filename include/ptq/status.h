/* ptq status codes and the error context every fallible call records into.
 * Library code never prints or exits: it returns a ptq_status and leaves a
 * message ("what, with which name/path") plus the source location in ctx.
 * Covered by tests/test_status.c.
 *
 * What every header of include/ptq assumes of its caller (breaking it is
 * undefined behaviour, not an error status): a pointer argument points at
 * a valid object unless its comment says it may be NULL; an index lies in
 * the range its comment gives (ptq_calib_set_name's i in [0,
 * ptq_calib_set_n_tensors)); an object is not used after its _free or
 * _close, which take NULL as a no-op. Objects hold no lock: one thread at a
 * time uses an object, and separate objects (each from its own _open,
 * _create or _load) may be used on separate threads at once, with the
 * results one thread gets. ptq_cpu_set_threads, ptq_memory_set_budget and
 * ptq_sha256_accel set the whole process's. */
#ifndef PTQ_STATUS_H
#define PTQ_STATUS_H

#include <stddef.h>

#include "ptq/export_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ptq_status {
    PTQ_OK = 0,
    PTQ_ERR_INVALID_ARG = 1, /* a caller passed something out of range */
    PTQ_ERR_IO = 2,          /* missing or unreadable file, failed write */
    PTQ_ERR_FORMAT = 3,      /* malformed file: truncated, bad wire type, overflow */
    PTQ_ERR_UNSUPPORTED = 4, /* an op, dtype or attribute ptq does not implement */
    PTQ_ERR_SHAPE = 5,       /* shapes that do not fit together */
    PTQ_ERR_DATA = 6,        /* bad data set content: empty, label out of range, undecodable image */
    PTQ_ERR_NOMEM = 7,
    PTQ_ERR_CUDA = 8,        /* a CUDA runtime or cuBLAS call failed */
    PTQ_ERR_NO_DEVICE = 9,   /* CUDA asked for but no usable GPU */
    PTQ_ERR_INTERNAL = 10
} ptq_status;

#define PTQ_MSG_BYTES 1024

/* Per-thread-of-work error context: the last failure's code, message and
 * where in the source it was raised. Zero-initialise or ptq_ctx_init(). */
typedef struct ptq_ctx {
    ptq_status code;
    char msg[PTQ_MSG_BYTES];
    char where[128]; /* "model/onnx_load.c:123" */
} ptq_ctx;

PTQ_API void ptq_ctx_init(ptq_ctx *ctx);
PTQ_API const char *ptq_status_name(ptq_status st);

/* s with control characters (bytes below 0x20, and 0x7f; the C1 controls
 * U+0080..U+009F, U+2028, U+2029 and the bidi formatting characters
 * U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069 byte by byte) and bytes that
 * start no UTF-8 character written as \xNN, so a name from a file cannot
 * drive a terminal or make a message invalid UTF-8; cut to fit buf[n_buf]
 * (between characters). Returns buf. */
PTQ_API const char *ptq_escape(const char *s, char *buf, size_t n_buf);
/* A malloc'd copy of s ("" for NULL) in which each byte that starts no valid
 * UTF-8 character (strict: no overlong forms, surrogates or values above
 * U+10FFFF) is U+FFFD, so a name from a file (a class folder, an HDF5
 * class_names entry) cannot make a JSON, Markdown or HTML report invalid;
 * valid UTF-8 is copied as is. NULL when out of memory. */
PTQ_API char *ptq_utf8_dup(const char *s);
/* 1 when s is strict UTF-8 throughout (the same rule), 0 otherwise. */
PTQ_API int ptq_utf8_valid(const char *s);
/* The terminal columns UTF-8 s takes, for padding tables of names: 2 for each East Asian wide or fullwidth
 * character and emoji, 0 for combining marks, zero-width and bidi formatting characters, 1 for any other
 * character (and for a byte that starts none). */
PTQ_API int ptq_utf8_width(const char *s);

/* Records a failure and returns its code; use through ptq_fail(). */
PTQ_API ptq_status ptq_fail_at(ptq_ctx *ctx, const char *file, int line, ptq_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

#define ptq_fail(ctx, code, ...) ptq_fail_at((ctx), __FILE__, __LINE__, (code), __VA_ARGS__)

/* Evaluate a fallible call; on failure store its status in st and jump. */
#define PTQ_TRY(st, call, label) \
    do {                         \
        (st) = (call);           \
        if ((st) != PTQ_OK)      \
            goto label;          \
    } while (0)

/* Evaluate a fallible call; on failure return its status. */
#define PTQ_TRY_RET(call)          \
    do {                           \
        ptq_status st_ = (call);   \
        if (st_ != PTQ_OK)         \
            return st_;            \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
