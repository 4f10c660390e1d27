/* onnx TensorProto decoding (onnx/onnx.proto: raw_data, the typed *_data
 * fields, external data) and ptq_tensor_load_pb for the .pb files of ONNX's
 * backend test data. Covered by tests/test_onnx_load.c and tests/test_onnx_malformed.c. */
#define _XOPEN_SOURCE 700

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/pb.h"
#include "ptq/graph.h"
#include "ptq/fileio.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ptq reads little-endian tensor data in place: big-endian hosts are not supported"
#endif

enum {
    F_DIMS = 1, F_DATA_TYPE = 2, F_SEGMENT = 3, F_FLOAT = 4, F_INT32 = 5, F_STRING = 6, F_INT64 = 7, F_NAME = 8,
    F_RAW = 9, F_DOUBLE = 10, F_UINT64 = 11, F_EXTERNAL = 13, F_LOCATION = 14, F_TYPED_MAX = 12
};

static const char *const tensor_fields[] = {
    NULL, "dims", "data_type", "segment", "float_data", "int32_data", "string_data", "int64_data", "name",
    "raw_data", "double_data", "uint64_data", "doc_string", "external_data", "data_location", NULL,
    "metadata_props"};
const ptq_pb_desc ptq_pb_tensor_desc = {"TensorProto", 17, tensor_fields};

static const char *const entry_fields[] = {NULL, "key", "value"};
const ptq_pb_desc ptq_pb_entry_desc = {"StringStringEntryProto", 3, entry_fields};

size_t ptq_pb_dtype_align(ptq_dtype dt)
{
    if (dt == PTQ_DT_COMPLEX64)
        return 4;
    size_t s = ptq_dtype_size(dt);
    return s > 8 ? 8 : (s ? s : 1);
}

/* The typed field onnx.proto assigns to a dtype, and how many values per element. */
static uint32_t typed_field_for(ptq_dtype dt, int *per_elem)
{
    *per_elem = 1;
    switch (dt) {
    case PTQ_DT_COMPLEX64: *per_elem = 2; return F_FLOAT;
    case PTQ_DT_FLOAT: return F_FLOAT;
    case PTQ_DT_COMPLEX128: *per_elem = 2; return F_DOUBLE;
    case PTQ_DT_DOUBLE: return F_DOUBLE;
    case PTQ_DT_INT64: return F_INT64;
    case PTQ_DT_UINT32: case PTQ_DT_UINT64: return F_UINT64;
    default: return F_INT32;
    }
}

static ptq_pb_kind field_kind(uint32_t num)
{
    return num == F_FLOAT ? PTQ_PB_KIND_FIXED32 : num == F_DOUBLE ? PTQ_PB_KIND_FIXED64 : PTQ_PB_KIND_VARINT;
}

static ptq_status tensor_fail(const ptq_pb *r, const char *role, const ptq_pb_tensor *t, ptq_status code,
                              const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static ptq_status tensor_fail(const ptq_pb *r, const char *role, const ptq_pb_tensor *t, ptq_status code,
                              const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    int name_len = t->name_len > 200 ? 200 : (int)t->name_len;
    return ptq_fail(r->ctx, code, "%s: %s '%.*s': %s", r->path, role, name_len, t->name ? (const char *)t->name : "",
                    what);
}

/* Strict non-negative decimal, as onnx writes external data offsets and lengths. */
/* 1: s[n] is a decimal integer in [0, INT64_MAX], in *v; 0: not one; -1: its digits pass INT64_MAX. */
static int parse_decimal(const uint8_t *s, size_t n, int64_t *v)
{
    int64_t x = 0;
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    for (size_t i = 0; i < n; i++) {
        if (x > (INT64_MAX - (s[i] - '0')) / 10)
            return -1;
        x = x * 10 + (s[i] - '0');
    }
    *v = x;
    return 1;
}

static int key_is(const uint8_t *k, size_t n, const char *want)
{
    return n == strlen(want) && memcmp(k, want, n) == 0;
}

static ptq_status parse_external_entry(ptq_pb *r, const ptq_pb_field *f, ptq_pb_tensor *t)
{
    ptq_status st = PTQ_OK;
    ptq_pb e;
    ptq_pb_field ef;
    const uint8_t *key = NULL, *val = NULL;
    size_t key_len = 0, val_len = 0;
    ptq_pb_sub(r, f, &ptq_pb_entry_desc, &e);
    while (ptq_pb_more(&e)) {
        PTQ_TRY(st, ptq_pb_next(&e, &ef), done);
        if (ef.num == 1 || ef.num == 2) {
            PTQ_TRY(st, ptq_pb_expect(&e, &ef, PTQ_PB_LEN), done);
            if (ef.num == 1) {
                key = ef.data;
                key_len = ef.len;
            } else {
                val = ef.data;
                val_len = ef.len;
            }
        }
    }
    if (!key)
        return ptq_pb_fail(r, f->at, PTQ_ERR_FORMAT, "external_data entry without a key");
    if (!val)
        val = f->data; /* empty value: any non-NULL pointer with length 0 */
    if (key_is(key, key_len, "location")) {
        t->ext_location = val;
        t->ext_location_len = val_len;
    } else if (key_is(key, key_len, "offset") || key_is(key, key_len, "length")) {
        int64_t v = 0;
        const int parsed = parse_decimal(val, val_len, &v);
        if (parsed != 1)
            return ptq_pb_fail(r, f->at, PTQ_ERR_FORMAT, "external_data %.*s '%.*s' is %s", (int)key_len,
                               (const char *)key, val_len > 40 ? 40 : (int)val_len, (const char *)val,
                               parsed ? "past the largest offset or length (2^63 - 1)" : "not a non-negative integer");
        if (key_is(key, key_len, "offset"))
            t->ext_offset = v;
        else
            t->ext_length = v;
    }
done:
    return st;
}

ptq_status ptq_pb_tensor_parse(ptq_pb *r, const char *role, ptq_pb_tensor *t)
{
    ptq_status st = PTQ_OK;
    ptq_pb_field f;
    ptq_pb_scalars it;
    int64_t data_type = 0, location = 0, n_dims = 0, n_strings = 0;
    int64_t n_typed[F_TYPED_MAX] = {0};
    int occurrences[F_TYPED_MAX] = {0};
    const uint8_t *packed[F_TYPED_MAX] = {NULL};
    const uint8_t *raw = NULL;
    size_t raw_len = 0;
    int has_raw = 0;

    memset(t, 0, sizeof *t);
    t->ext_length = -1;
    t->msg = *r;
    t->msg.parent = NULL; /* decode runs after the parent readers are gone */
    while (ptq_pb_more(r)) {
        PTQ_TRY(st, ptq_pb_next(r, &f), done);
        switch (f.num) {
        case F_DIMS: {
            int64_t n = 0;
            uint64_t v;
            PTQ_TRY(st, ptq_pb_scalars_begin(r, &f, PTQ_PB_KIND_VARINT, &it, &n), done);
            while (ptq_pb_scalars_next(&it, &v)) {
                if (n_dims < PTQ_MAX_DIMS)
                    t->dims[n_dims] = (int64_t)v;
                n_dims++;
            }
            break;
        }
        case F_DATA_TYPE: PTQ_TRY(st, ptq_pb_get_int64(r, &f, &data_type), done); break;
        case F_SEGMENT:
            return ptq_pb_fail(r, f.at, PTQ_ERR_UNSUPPORTED, "segmented TensorProto (field segment) is not supported");
        case F_FLOAT: case F_INT32: case F_INT64: case F_DOUBLE: case F_UINT64: {
            int64_t n = 0;
            PTQ_TRY(st, ptq_pb_scalars_begin(r, &f, field_kind(f.num), &it, &n), done);
            n_typed[f.num] += n;
            occurrences[f.num]++;
            packed[f.num] = f.wire == PTQ_PB_LEN ? f.data : NULL;
            break;
        }
        case F_STRING: PTQ_TRY(st, ptq_pb_expect(r, &f, PTQ_PB_LEN), done); n_strings++; break;
        case F_NAME:
            PTQ_TRY(st, ptq_pb_expect(r, &f, PTQ_PB_LEN), done);
            t->name = f.data;
            t->name_len = f.len;
            break;
        case F_RAW:
            PTQ_TRY(st, ptq_pb_expect(r, &f, PTQ_PB_LEN), done);
            raw = f.data;
            raw_len = f.len;
            has_raw = 1;
            break;
        case F_EXTERNAL:
            PTQ_TRY(st, ptq_pb_expect(r, &f, PTQ_PB_LEN), done);
            PTQ_TRY(st, parse_external_entry(r, &f, t), done);
            break;
        case F_LOCATION:
            PTQ_TRY(st, ptq_pb_get_int64(r, &f, &location), done);
            if (location != 0 && location != 1)
                return ptq_pb_fail(r, f.at, PTQ_ERR_FORMAT, "data_location %lld is neither DEFAULT nor EXTERNAL",
                                   (long long)location);
            break;
        default: break;
        }
    }

    if (data_type == 0)
        return tensor_fail(r, role, t, PTQ_ERR_FORMAT, "data_type is missing (UNDEFINED)");
    if (data_type < 0)
        return tensor_fail(r, role, t, PTQ_ERR_FORMAT, "invalid data_type %lld", (long long)data_type);
    if (data_type > PTQ_DT_INT4)
        return tensor_fail(r, role, t, PTQ_ERR_UNSUPPORTED, "unknown data_type %lld", (long long)data_type);
    t->dtype = (ptq_dtype)data_type;
    if (t->dtype == PTQ_DT_STRING || ptq_dtype_size(t->dtype) == 0)
        return tensor_fail(r, role, t, PTQ_ERR_UNSUPPORTED, "%s tensors are not supported",
                           ptq_dtype_name(t->dtype));
    if (n_dims > PTQ_MAX_DIMS)
        return tensor_fail(r, role, t, PTQ_ERR_UNSUPPORTED, "%lld dims, ptq supports at most %d", (long long)n_dims,
                           PTQ_MAX_DIMS);
    t->ndim = (int)n_dims;
    t->numel = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->dims[i] < 0)
            return tensor_fail(r, role, t, PTQ_ERR_FORMAT, "dim %d is negative (%lld)", i, (long long)t->dims[i]);
        if (t->dims[i] > 0 && t->numel > INT64_MAX / t->dims[i])
            return tensor_fail(r, role, t, PTQ_ERR_FORMAT, "the product of the dims overflows int64");
        t->numel *= t->dims[i];
    }
    size_t esize = ptq_dtype_size(t->dtype);
    if ((uint64_t)t->numel > SIZE_MAX / esize)
        return tensor_fail(r, role, t, PTQ_ERR_FORMAT, "%lld elements of %s do not fit in memory",
                           (long long)t->numel, ptq_dtype_name(t->dtype));
    t->n_bytes = (size_t)t->numel * esize;

    char dims[128];
    ptq_dims_str(t->dims, t->ndim, dims, sizeof dims);
    const char *dt_name = ptq_dtype_name(t->dtype);
    int n_sources = has_raw + (location == 1) + (n_strings > 0);
    uint32_t typed = 0;
    for (uint32_t k = 1; k < F_TYPED_MAX; k++)
        if (occurrences[k]) {
            n_sources++;
            typed = k;
        }
    if (n_sources > 1)
        return tensor_fail(r, role, t, PTQ_ERR_FORMAT, "has data in more than one place (raw_data, typed fields, "
                                                       "external data)");
    if (n_strings > 0)
        return tensor_fail(r, role, t, PTQ_ERR_FORMAT, "string_data cannot hold %s data", dt_name);
    if (location == 1) {
        if (!t->ext_location)
            return tensor_fail(r, role, t, PTQ_ERR_FORMAT, "external data without a location");
        if (t->ext_length >= 0 && (uint64_t)t->ext_length != (uint64_t)t->n_bytes)
            return tensor_fail(r, role, t, PTQ_ERR_FORMAT, "external data length %lld, dims %s %s need %zu",
                               (long long)t->ext_length, dims, dt_name, t->n_bytes);
        t->kind = PTQ_PB_DATA_EXTERNAL;
    } else if (has_raw) {
        if (raw_len != t->n_bytes)
            return tensor_fail(r, role, t, PTQ_ERR_FORMAT, "raw_data has %zu bytes, dims %s %s need %zu", raw_len,
                               dims, dt_name, t->n_bytes);
        t->kind = PTQ_PB_DATA_RAW;
        t->raw = raw;
    } else if (typed) {
        int per_elem = 1;
        uint32_t want = typed_field_for(t->dtype, &per_elem);
        if (typed != want)
            return tensor_fail(r, role, t, PTQ_ERR_FORMAT, "%s cannot hold %s data (expected %s)",
                               tensor_fields[typed], dt_name, tensor_fields[want]);
        if (n_typed[typed] != t->numel * per_elem)
            return tensor_fail(r, role, t, PTQ_ERR_FORMAT, "%s has %lld values, dims %s %s need %lld",
                               tensor_fields[typed], (long long)n_typed[typed], dims, dt_name,
                               (long long)(t->numel * per_elem));
        if (occurrences[typed] == 1 && packed[typed] && (typed == F_FLOAT || typed == F_DOUBLE)) {
            /* one packed run of fixed-width values is raw little-endian data already */
            t->kind = PTQ_PB_DATA_RAW;
            t->raw = packed[typed];
        } else {
            t->kind = PTQ_PB_DATA_TYPED;
            t->typed_field = typed;
        }
    } else if (t->numel > 0) {
        return tensor_fail(r, role, t, PTQ_ERR_FORMAT, "has no data, dims %s %s need %zu bytes", dims, dt_name,
                           t->n_bytes);
    }
done:
    return st;
}

static void put_value(ptq_dtype dt, uint8_t *dst, uint64_t v)
{
    uint8_t b8 = (uint8_t)v;
    uint16_t b16 = (uint16_t)v;
    uint32_t b32 = (uint32_t)v;
    switch (dt) {
    case PTQ_DT_DOUBLE: case PTQ_DT_COMPLEX128: case PTQ_DT_INT64: case PTQ_DT_UINT64: memcpy(dst, &v, 8); break;
    case PTQ_DT_FLOAT: case PTQ_DT_COMPLEX64: case PTQ_DT_INT32: case PTQ_DT_UINT32: memcpy(dst, &b32, 4); break;
    case PTQ_DT_INT16: case PTQ_DT_UINT16: case PTQ_DT_FLOAT16: case PTQ_DT_BFLOAT16: memcpy(dst, &b16, 2); break;
    case PTQ_DT_BOOL: *dst = v != 0; break;
    default: *dst = b8; break;
    }
}

void ptq_pb_tensor_decode(const ptq_pb_tensor *t, void *dst)
{
    if (t->kind == PTQ_PB_DATA_RAW) {
        memcpy(dst, t->raw, t->n_bytes);
        return;
    }
    if (t->kind != PTQ_PB_DATA_TYPED)
        return;
    size_t width = t->dtype == PTQ_DT_COMPLEX64    ? 4
                   : t->dtype == PTQ_DT_COMPLEX128 ? 8
                                                   : ptq_dtype_size(t->dtype);
    uint8_t *out = dst, *out_end = out + t->n_bytes;
    ptq_pb r = t->msg; /* parse validated every field: these reads cannot fail */
    ptq_pb_field f;
    ptq_pb_scalars it;
    while (ptq_pb_more(&r) && ptq_pb_next(&r, &f) == PTQ_OK) {
        int64_t n;
        uint64_t v;
        if (f.num != t->typed_field || ptq_pb_scalars_begin(&r, &f, field_kind(f.num), &it, &n) != PTQ_OK)
            continue;
        while (out < out_end && ptq_pb_scalars_next(&it, &v)) {
            put_value(t->dtype, out, v);
            out += width;
        }
    }
}

static int has_dotdot(const uint8_t *s, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++)
        if (i == n || s[i] == '/' || s[i] == '\\') {
            if (i - start == 2 && s[start] == '.' && s[start + 1] == '.')
                return 1;
            start = i + 1;
        }
    return 0;
}

/* *path (malloc'd, replaced by its realpath) must resolve inside base_dir:
 * a symlink in the model's folder may not lead elsewhere. */
static ptq_status resolve_inside(const ptq_pb_tensor *t, const char *role, const char *base_dir, char **path)
{
    const ptq_pb *r = &t->msg;
    char *real = realpath(*path, NULL);
    int real_errno = errno;
    char *dir = realpath(base_dir, NULL);
    ptq_status st = PTQ_OK;
    size_t n_dir = dir ? strlen(dir) : 0;
    if (!dir)
        st = tensor_fail(r, role, t, PTQ_ERR_IO, "cannot resolve the model's folder '%s': %s", base_dir,
                         strerror(errno));
    else if (!real)
        st = tensor_fail(r, role, t, PTQ_ERR_IO, "cannot open external data file '%s': %s", *path,
                         strerror(real_errno));
    else if (strcmp(real, dir) == 0)
        st = tensor_fail(r, role, t, PTQ_ERR_FORMAT, "external data '%s' is the model's folder '%s' itself, not a file "
                                                     "in it", *path, dir);
    else if (strncmp(real, dir, n_dir) != 0 || (real[n_dir] != '/' && !(n_dir == 1 && dir[0] == '/')))
        st = tensor_fail(r, role, t, PTQ_ERR_FORMAT, "external data '%s' resolves to '%s', outside the model's "
                                                     "folder '%s'; refusing to read it", *path, real, dir);
    if (st == PTQ_OK) {
        free(*path);
        *path = real;
        real = NULL;
    }
    free(real);
    free(dir);
    return st;
}

ptq_status ptq_pb_tensor_open_external(const ptq_pb_tensor *t, const char *role, const char *base_dir, int *fd,
                                       char **full)
{
    const ptq_pb *r = &t->msg;
    const uint8_t *loc = t->ext_location;
    size_t n = t->ext_location_len;
    int shown = n > 200 ? 200 : (int)n;
    *fd = -1;
    *full = NULL;
    if (n == 0)
        return tensor_fail(r, role, t, PTQ_ERR_FORMAT, "external data location is empty");
    if (memchr(loc, '\0', n))
        return tensor_fail(r, role, t, PTQ_ERR_FORMAT, "external data location contains a NUL byte");
    if (loc[0] == '/' || loc[0] == '\\' || (n > 1 && loc[1] == ':'))
        return tensor_fail(r, role, t, PTQ_ERR_FORMAT, "external data location '%.*s' is absolute; it must be "
                                                       "relative to the model's folder", shown, (const char *)loc);
    if (has_dotdot(loc, n))
        return tensor_fail(r, role, t, PTQ_ERR_FORMAT, "external data location '%.*s' has a '..' component; it "
                                                       "must stay inside the model's folder", shown, (const char *)loc);
    if (!base_dir)
        return tensor_fail(r, role, t, PTQ_ERR_INVALID_ARG, "external data '%.*s' needs the model's folder, but "
                                                            "the model was loaded from memory without one",
                           shown, (const char *)loc);
    size_t n_path = strlen(base_dir) + 1 + n + 1;
    char *path = malloc(n_path);
    if (!path)
        return ptq_fail(r->ctx, PTQ_ERR_NOMEM, "%s: out of memory", r->path);
    snprintf(path, n_path, "%s/%.*s", base_dir, (int)n, (const char *)loc);
    ptq_status st = PTQ_OK;
    struct stat sb;
    int f = -1;
    PTQ_TRY(st, resolve_inside(t, role, base_dir, &path), done);
    ptq_ctx why;
    ptq_ctx_init(&why);
    if (ptq_file_open_read(&why, path, &f) != PTQ_OK) {
        st = tensor_fail(r, role, t, PTQ_ERR_IO, "external data: %s", why.msg);
        goto done;
    }
    if (fstat(f, &sb) != 0) {
        st = tensor_fail(r, role, t, PTQ_ERR_IO, "cannot stat external data file '%s': %s", path, strerror(errno));
        goto done;
    }
    uint64_t size = (uint64_t)sb.st_size, off = (uint64_t)t->ext_offset;
    if (off > size || size - off < t->n_bytes) {
        st = tensor_fail(r, role, t, PTQ_ERR_FORMAT, "external data '%s' has %llu bytes; offset %llu + %zu bytes "
                                                     "runs past its end",
                         path, (unsigned long long)size, (unsigned long long)off, t->n_bytes);
        goto done;
    }
    *fd = f;
    *full = path;
    return PTQ_OK;
done:
    if (f >= 0)
        close(f);
    free(path);
    return st;
}

ptq_status ptq_pb_tensor_check_external(const ptq_pb_tensor *t, const char *role, const char *base_dir)
{
    int fd;
    char *full;
    ptq_status st = ptq_pb_tensor_open_external(t, role, base_dir, &fd, &full);
    if (st == PTQ_OK) {
        close(fd);
        free(full);
    }
    return st;
}

ptq_status ptq_pb_tensor_read_external(const ptq_pb_tensor *t, const char *role, const char *base_dir, void *dst)
{
    int fd;
    char *full;
    ptq_status st = ptq_pb_tensor_open_external(t, role, base_dir, &fd, &full);
    if (st != PTQ_OK)
        return st;
    for (size_t got = 0; got < t->n_bytes;) {
        ssize_t k = pread(fd, (uint8_t *)dst + got, t->n_bytes - got, (off_t)(t->ext_offset + (int64_t)got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            st = tensor_fail(&t->msg, role, t, PTQ_ERR_IO, "reading external data '%s': %s", full,
                             k < 0 ? strerror(errno) : "unexpected end of file");
            break;
        }
        got += (size_t)k;
    }
    close(fd);
    free(full);
    return st;
}

char *ptq_pb_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

/* Reads a whole file into a malloc'd buffer. */
static ptq_status read_file(ptq_ctx *ctx, const char *path, uint8_t **out, size_t *n_out)
{
    ptq_status st = PTQ_OK;
    uint8_t *buf = NULL;
    struct stat sb;
    int fd;
    PTQ_TRY_RET(ptq_file_open_read(ctx, path, &fd));
    if (fstat(fd, &sb) != 0) {
        st = ptq_fail(ctx, PTQ_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        goto done;
    }
    size_t n = (size_t)sb.st_size;
    buf = malloc(n ? n : 1);
    if (!buf) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "%s: out of memory for %zu bytes", path, n);
        goto done;
    }
    for (size_t got = 0; got < n;) {
        ssize_t k = read(fd, buf + got, n - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            st = ptq_fail(ctx, PTQ_ERR_IO, "%s: read failed: %s", path, k < 0 ? strerror(errno) : "file shrank");
            goto done;
        }
        got += (size_t)k;
    }
    *out = buf;
    *n_out = n;
    buf = NULL;
done:
    free(buf);
    close(fd);
    return st;
}

ptq_status ptq_tensor_load_pb(ptq_ctx *ctx, const char *path, ptq_tensor *out, char **name_out)
{
    ptq_status st = PTQ_OK;
    uint8_t *bytes = NULL;
    size_t n_bytes = 0;
    char *dir = NULL, *name = NULL;
    void *data = NULL;
    ptq_pb r;
    ptq_pb_tensor t;

    memset(out, 0, sizeof *out);
    if (name_out)
        *name_out = NULL;
    PTQ_TRY(st, read_file(ctx, path, &bytes, &n_bytes), done);
    ptq_pb_init(&r, ctx, path, bytes, n_bytes, &ptq_pb_tensor_desc);
    PTQ_TRY(st, ptq_pb_tensor_parse(&r, "tensor", &t), done);
    data = malloc(t.n_bytes ? t.n_bytes : 1);
    if (name_out && (name = malloc(t.name_len + 1)) != NULL) { /* the name may end the buffer: no str* reads */
        if (t.name_len)
            memcpy(name, t.name, t.name_len);
        name[t.name_len] = '\0';
    }
    if (!data || (name_out && !name)) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "%s: out of memory for %zu bytes", path, t.n_bytes);
        goto done;
    }
    if (t.kind == PTQ_PB_DATA_EXTERNAL) {
        dir = ptq_pb_dirname(path);
        if (!dir) {
            st = ptq_fail(ctx, PTQ_ERR_NOMEM, "%s: out of memory", path);
            goto done;
        }
        PTQ_TRY(st, ptq_pb_tensor_read_external(&t, "tensor", dir, data), done);
    } else {
        ptq_pb_tensor_decode(&t, data);
    }
    out->dtype = t.dtype;
    out->ndim = t.ndim;
    memcpy(out->dims, t.dims, sizeof t.dims);
    out->data = data;
    out->mem = PTQ_MEM_HOST;
    out->cap_bytes = t.n_bytes ? t.n_bytes : 1;
    data = NULL;
    if (name_out) {
        *name_out = name;
        name = NULL;
    }
done:
    free(data);
    free(name);
    free(dir);
    free(bytes);
    return st;
}
