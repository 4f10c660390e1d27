/* Protobuf wire-format reader and writer (developers.google.com/protocol-buffers/docs/encoding):
 * every read is checked against the end of its message, so malformed input
 * gives PTQ_ERR_FORMAT with the byte offset, never a read out of bounds.
 * Covered by tests/test_onnx_malformed.c and tests/test_onnx_load.c. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "model/pb.h"

static const char *const wire_names[] = {"varint", "fixed64", "length-delimited", "start-group", "end-group",
                                         "fixed32", "6", "7"};

void ptq_pb_init(ptq_pb *r, ptq_ctx *ctx, const char *path, const void *bytes, size_t n_bytes,
                 const ptq_pb_desc *desc)
{
    r->ctx = ctx;
    r->path = path;
    r->base = bytes;
    r->p = bytes;
    r->end = r->p + n_bytes;
    r->desc = desc;
    r->parent = NULL;
    r->in_field = 0;
}

void ptq_pb_sub(const ptq_pb *r, const ptq_pb_field *f, const ptq_pb_desc *desc, ptq_pb *child)
{
    child->ctx = r->ctx;
    child->path = r->path;
    child->base = r->base;
    child->p = f->data;
    child->end = f->data + f->len;
    child->desc = desc;
    child->parent = r;
    child->in_field = f->num;
}

int ptq_pb_more(const ptq_pb *r)
{
    return r->p < r->end;
}

static const char *field_name(const ptq_pb_desc *d, uint32_t num)
{
    if (d && num < (uint32_t)d->n_names && d->field_names[num])
        return d->field_names[num];
    return NULL;
}

/* "ModelProto.graph.node" into buf; returns buf. */
static const char *pb_where(const ptq_pb *r, char *buf, size_t n_buf)
{
    /* walk up to the root, then print root name and each field on the way down */
    const ptq_pb *chain[32];
    int n = 0;
    for (const ptq_pb *q = r; q && n < 32; q = q->parent)
        chain[n++] = q;
    size_t used = 0;
    buf[0] = '\0';
    const ptq_pb *root = chain[n - 1];
    int w = snprintf(buf, n_buf, "%s", root->desc ? root->desc->name : "message");
    used = w > 0 ? (size_t)w : 0;
    for (int i = n - 2; i >= 0 && used < n_buf; i--) {
        const char *fname = field_name(chain[i + 1]->desc, chain[i]->in_field);
        w = fname ? snprintf(buf + used, n_buf - used, ".%s", fname)
                  : snprintf(buf + used, n_buf - used, ".field%u", (unsigned)chain[i]->in_field);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return buf;
}

ptq_status ptq_pb_fail(const ptq_pb *r, size_t at, ptq_status code, const char *fmt, ...)
{
    char what[512], where[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ptq_fail(r->ctx, code, "%s: %s at byte %zu inside %s", r->path, what, at,
                    pb_where(r, where, sizeof where));
}

/* 0 ok, 1 ran past end, 2 more than 10 bytes or over 64 bits. */
static int read_varint(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
    const uint8_t *p = *pp;
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (p >= end)
            return 1;
        uint8_t b = *p++;
        if (i == 9 && b > 1)
            return 2;
        x |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = x;
            *pp = p;
            return 0;
        }
    }
    return 2;
}

static uint64_t load_le(const uint8_t *p, int n)
{
    uint64_t x = 0;
    for (int i = n - 1; i >= 0; i--)
        x = (x << 8) | p[i];
    return x;
}

static ptq_status varint_fail(const ptq_pb *r, const uint8_t *at, int why, const char *what)
{
    size_t off = (size_t)(at - r->base);
    if (why == 1)
        return ptq_pb_fail(r, off, PTQ_ERR_FORMAT, "truncated %s", what);
    return ptq_pb_fail(r, off, PTQ_ERR_FORMAT, "%s longer than 10 bytes or over 64 bits", what);
}

ptq_status ptq_pb_next(ptq_pb *r, ptq_pb_field *f)
{
    const uint8_t *start = r->p;
    uint64_t key = 0;
    int why = read_varint(&r->p, r->end, &key);
    if (why)
        return varint_fail(r, start, why, "varint field key");
    memset(f, 0, sizeof *f);
    f->at = (size_t)(start - r->base);
    f->wire = (int)(key & 7);
    if ((key >> 3) == 0 || (key >> 3) > 0x1fffffffu)
        return ptq_pb_fail(r, f->at, PTQ_ERR_FORMAT, "invalid field number %llu", (unsigned long long)(key >> 3));
    f->num = (uint32_t)(key >> 3);
    size_t left = (size_t)(r->end - r->p);
    switch (f->wire) {
    case PTQ_PB_VARINT:
        why = read_varint(&r->p, r->end, &f->u);
        if (why)
            return varint_fail(r, start, why, "varint value");
        return PTQ_OK;
    case PTQ_PB_I64:
    case PTQ_PB_I32: {
        size_t n = f->wire == PTQ_PB_I64 ? 8 : 4;
        if (left < n)
            return ptq_pb_fail(r, f->at, PTQ_ERR_FORMAT, "truncated %s field %u", wire_names[f->wire], f->num);
        f->u = load_le(r->p, (int)n);
        r->p += n;
        return PTQ_OK;
    }
    case PTQ_PB_LEN: {
        uint64_t len = 0;
        why = read_varint(&r->p, r->end, &len);
        if (why)
            return varint_fail(r, start, why, "varint length");
        left = (size_t)(r->end - r->p);
        if (len > left) {
            const char *fname = field_name(r->desc, f->num);
            char num[24];
            snprintf(num, sizeof num, "field %u", f->num);
            return ptq_pb_fail(r, f->at, PTQ_ERR_FORMAT, "truncated: %s claims %llu bytes, %zu left",
                               fname ? fname : num, (unsigned long long)len, left);
        }
        f->data = r->p;
        f->len = (size_t)len;
        r->p += len;
        return PTQ_OK;
    }
    default:
        return ptq_pb_fail(r, f->at, PTQ_ERR_FORMAT, "unsupported wire type %d (%s) for field %u", f->wire,
                           wire_names[f->wire], f->num);
    }
}

ptq_status ptq_pb_expect(const ptq_pb *r, const ptq_pb_field *f, int wire)
{
    if (f->wire == wire)
        return PTQ_OK;
    const char *fname = field_name(r->desc, f->num);
    return ptq_pb_fail(r, f->at, PTQ_ERR_FORMAT, "wrong wire type %s for %s.%s (field %u), expected %s",
                       wire_names[f->wire], r->desc ? r->desc->name : "message", fname ? fname : "?", f->num,
                       wire_names[wire]);
}

ptq_status ptq_pb_get_int64(const ptq_pb *r, const ptq_pb_field *f, int64_t *v)
{
    ptq_status st = ptq_pb_expect(r, f, PTQ_PB_VARINT);
    if (st == PTQ_OK)
        *v = (int64_t)f->u;
    return st;
}

ptq_status ptq_pb_get_float(const ptq_pb *r, const ptq_pb_field *f, float *v)
{
    ptq_status st = ptq_pb_expect(r, f, PTQ_PB_I32);
    if (st == PTQ_OK) {
        uint32_t bits = (uint32_t)f->u;
        memcpy(v, &bits, sizeof *v);
    }
    return st;
}

static const int kind_wire[] = {PTQ_PB_VARINT, PTQ_PB_I32, PTQ_PB_I64};

ptq_status ptq_pb_scalars_begin(const ptq_pb *r, const ptq_pb_field *f, ptq_pb_kind kind, ptq_pb_scalars *it,
                                int64_t *n_values)
{
    memset(it, 0, sizeof *it);
    it->kind = kind;
    if (f->wire == kind_wire[kind]) {
        it->single_left = 1;
        it->single = f->u;
        *n_values = 1;
        return PTQ_OK;
    }
    if (f->wire != PTQ_PB_LEN)
        return ptq_pb_expect(r, f, kind_wire[kind]);
    it->p = f->data;
    it->end = f->data + f->len;
    if (kind == PTQ_PB_KIND_VARINT) {
        int64_t n = 0;
        for (const uint8_t *q = it->p; q < it->end; n++) {
            uint64_t v;
            int why = read_varint(&q, it->end, &v);
            if (why)
                return varint_fail(r, q, why, "packed varint");
        }
        *n_values = n;
        return PTQ_OK;
    }
    size_t width = kind == PTQ_PB_KIND_FIXED32 ? 4 : 8;
    if (f->len % width)
        return ptq_pb_fail(r, f->at, PTQ_ERR_FORMAT, "packed field %u has %zu bytes, not a multiple of %zu", f->num,
                           f->len, width);
    *n_values = (int64_t)(f->len / width);
    return PTQ_OK;
}

int ptq_pb_scalars_next(ptq_pb_scalars *it, uint64_t *v)
{
    if (it->single_left) {
        it->single_left = 0;
        *v = it->single;
        return 1;
    }
    if (it->p >= it->end)
        return 0;
    if (it->kind == PTQ_PB_KIND_VARINT)
        return read_varint(&it->p, it->end, v) == 0;
    int width = it->kind == PTQ_PB_KIND_FIXED32 ? 4 : 8;
    *v = load_le(it->p, width);
    it->p += width;
    return 1;
}

void ptq_pb_put_varint(ptq_buf *b, uint64_t v)
{
    uint8_t tmp[10];
    int n = 0;
    do {
        tmp[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            tmp[n] |= 0x80;
        n++;
    } while (v);
    ptq_buf_put(b, tmp, (size_t)n);
}

void ptq_pb_put_key(ptq_buf *b, uint32_t num, int wire)
{
    ptq_pb_put_varint(b, ((uint64_t)num << 3) | (uint64_t)wire);
}

void ptq_pb_put_len(ptq_buf *b, uint32_t num, const void *data, size_t n)
{
    ptq_pb_put_key(b, num, PTQ_PB_LEN);
    ptq_pb_put_varint(b, n);
    ptq_buf_put(b, data, n);
}

void ptq_pb_put_str(ptq_buf *b, uint32_t num, const char *s)
{
    ptq_pb_put_len(b, num, s, strlen(s));
}

void ptq_pb_put_int(ptq_buf *b, uint32_t num, int64_t v)
{
    ptq_pb_put_key(b, num, PTQ_PB_VARINT);
    ptq_pb_put_varint(b, (uint64_t)v);
}
