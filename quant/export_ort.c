/* ONNX Runtime's TensorRT-EP tables byte for byte as its write_calibration_table
 * writes them: calibration.flatbuffers (laid out as Python's flatbuffers Builder
 * does), .cache and .json (Python's json.dumps). Covered by tests/test_export.c
 * and tests/export_test.py (compared with ORT's writer). */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptq/export.h"

/* ---- a minimal flatbuffers builder: the data grows down from the end of
 * buf, offsets count from that end, as in flatbuffers/builder.py ---- */

#define FB_MAX_FIELDS 2
#define FB_MAX_VTABLES 4
#define FB_MAX_BYTES ((size_t)1 << 31)

typedef struct fb_vtable {
    int n_key;                       /* field count, trailing absent fields trimmed */
    uint16_t key[FB_MAX_FIELDS];     /* field offsets from the object start, 0 = absent */
    uint32_t off;                    /* where the vtable was written */
} fb_vtable;

typedef struct fb_builder {
    ptq_ctx *ctx;
    uint8_t *buf; /* [cap]: the data is buf[head, cap) */
    size_t cap, head;
    size_t minalign;
    int n_fields;
    uint32_t fields[FB_MAX_FIELDS]; /* offset of each field's value, 0 = absent */
    uint32_t object_end;
    fb_vtable vtables[FB_MAX_VTABLES];
    int n_vtables;
} fb_builder;

static uint32_t fb_offset(const fb_builder *fb)
{
    return (uint32_t)(fb->cap - fb->head);
}

static ptq_status fb_grow(fb_builder *fb)
{
    size_t cap = fb->cap ? fb->cap * 2 : 1024;
    if (cap > FB_MAX_BYTES)
        return ptq_fail(fb->ctx, PTQ_ERR_INVALID_ARG, "calibration table exceeds the 2 GiB a flatbuffer can hold");
    uint8_t *p = malloc(cap);
    if (!p)
        return ptq_fail(fb->ctx, PTQ_ERR_NOMEM, "out of memory for a %zu-byte flatbuffer", cap);
    size_t used = fb->cap - fb->head;
    if (used)
        memcpy(p + cap - used, fb->buf + fb->head, used);
    free(fb->buf);
    fb->buf = p;
    fb->head = cap - used;
    fb->cap = cap;
    return PTQ_OK;
}

/* Pads so that after additional_bytes more the head is aligned to size. */
static ptq_status fb_prep(fb_builder *fb, size_t size, size_t additional_bytes)
{
    if (size > fb->minalign)
        fb->minalign = size;
    size_t align = (0 - ((size_t)fb_offset(fb) + additional_bytes)) & (size - 1);
    while (fb->head < align + size + additional_bytes) {
        ptq_status st = fb_grow(fb);
        if (st != PTQ_OK)
            return st;
    }
    fb->head -= align;
    memset(fb->buf + fb->head, 0, align);
    return PTQ_OK;
}

static void fb_place(fb_builder *fb, uint32_t x, int n_bytes)
{
    fb->head -= (size_t)n_bytes;
    for (int i = 0; i < n_bytes; i++)
        fb->buf[fb->head + (size_t)i] = (uint8_t)(x >> (8 * i)); /* little-endian */
}

static void fb_write32(fb_builder *fb, size_t at, uint32_t x)
{
    for (int i = 0; i < 4; i++)
        fb->buf[at + (size_t)i] = (uint8_t)(x >> (8 * i));
}

static ptq_status fb_prepend_uoffset(fb_builder *fb, uint32_t off)
{
    ptq_status st = fb_prep(fb, 4, 0);
    if (st == PTQ_OK)
        fb_place(fb, fb_offset(fb) - off + 4, 4);
    return st;
}

static ptq_status fb_prepend_u16(fb_builder *fb, uint32_t x)
{
    ptq_status st = fb_prep(fb, 2, 0);
    if (st == PTQ_OK)
        fb_place(fb, x, 2);
    return st;
}

static ptq_status fb_string(fb_builder *fb, const char *s, uint32_t *out)
{
    size_t len = strlen(s);
    ptq_status st = fb_prep(fb, 4, len + 1);
    if (st != PTQ_OK)
        return st;
    fb_place(fb, 0, 1);
    fb->head -= len;
    memcpy(fb->buf + fb->head, s, len);
    fb_place(fb, (uint32_t)len, 4);
    *out = fb_offset(fb);
    return PTQ_OK;
}

static void fb_start_object(fb_builder *fb, int n_fields)
{
    fb->n_fields = n_fields;
    memset(fb->fields, 0, sizeof fb->fields);
    fb->object_end = fb_offset(fb);
}

/* Prepends a uoffset field value and records it in slot i. */
static ptq_status fb_add_offset_field(fb_builder *fb, int i, uint32_t off)
{
    ptq_status st = fb_prepend_uoffset(fb, off);
    fb->fields[i] = fb_offset(fb);
    return st;
}

/* The object's soffset, then its vtable unless an equal one was written. */
static ptq_status fb_end_object(fb_builder *fb, uint32_t *out)
{
    ptq_status st = fb_prep(fb, 4, 0);
    if (st != PTQ_OK)
        return st;
    fb_place(fb, fb_offset(fb) + 4, 4); /* overwritten below */
    uint32_t object = fb_offset(fb);
    fb_vtable vt = {0};
    for (int i = 0; i < fb->n_fields; i++) {
        vt.key[i] = (uint16_t)(fb->fields[i] ? object - fb->fields[i] : 0);
        if (fb->fields[i])
            vt.n_key = i + 1;
    }
    const fb_vtable *same = NULL;
    for (int j = 0; j < fb->n_vtables && !same; j++) {
        const fb_vtable *o = &fb->vtables[j];
        if (o->n_key == vt.n_key && memcmp(o->key, vt.key, (size_t)vt.n_key * sizeof vt.key[0]) == 0)
            same = o;
    }
    if (same) {
        fb->head = fb->cap - object;
        fb_write32(fb, fb->head, (uint32_t)((int32_t)same->off - (int32_t)object));
    } else {
        if (fb->n_vtables == FB_MAX_VTABLES)
            return ptq_fail(fb->ctx, PTQ_ERR_INTERNAL, "flatbuffer builder: too many vtables");
        for (int i = vt.n_key - 1; i >= 0; i--) {
            if ((st = fb_prepend_u16(fb, vt.key[i])) != PTQ_OK)
                return st;
        }
        if ((st = fb_prepend_u16(fb, object - fb->object_end)) != PTQ_OK ||
            (st = fb_prepend_u16(fb, (uint32_t)(vt.n_key + 2) * 2)) != PTQ_OK)
            return st;
        fb_write32(fb, fb->cap - object, fb_offset(fb) - object);
        vt.off = fb_offset(fb);
        fb->vtables[fb->n_vtables++] = vt;
    }
    *out = object;
    return PTQ_OK;
}

static ptq_status fb_finish(fb_builder *fb, uint32_t root)
{
    ptq_status st = fb_prep(fb, fb->minalign, 4);
    if (st != PTQ_OK)
        return st;
    return fb_prepend_uoffset(fb, root);
}

/* ---- the tables ---- */

static int cmp_range_names(const void *a, const void *b)
{
    const ptq_tensor_range *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

static int is_degenerate(const ptq_tensor_range *t)
{
    return t->r.degenerate || t->r.amax == 0;
}

/* The number ORT's write_calibration_table writes for a range: max(highest,
 * lowest), which is amax for a symmetric range and highest for an
 * asymmetric one (target ort-cpu, as ORT's own MinMax ranges are). */
static double table_value(const ptq_tensor_range *t)
{
    return t->asymmetric ? fmax((double)t->highest, (double)t->lowest) : t->r.amax;
}

int ptq_export_range_no_positive(const ptq_tensor_range *t)
{
    return !is_degenerate(t) && t->asymmetric && !(table_value(t) > 0);
}

int ptq_export_range_tiny(const ptq_tensor_range *t)
{
    const double v = table_value(t);
    return !is_degenerate(t) && v > 0 && !((float)(v / ptq_qformat_max(PTQ_QFORMAT_INT8)) >= FLT_MIN);
}

/* The checks of the TensorRT-facing tables, then the ranges they hold
 * (degenerate, no-positive and tiny ones left out, counted) in ascending byte order of the names. */
static ptq_status trt_facing_sorted(ptq_ctx *ctx, const ptq_tensor_range *ranges, int64_t n, ptq_export_stats *s,
                                    const ptq_tensor_range ***sorted, int64_t *n_sorted)
{
    *sorted = NULL;
    *n_sorted = 0;
    ptq_status st = ptq_export_check_lines(ctx, ranges, n, s);
    if (st != PTQ_OK)
        return st;
    for (int64_t i = 0; i < n; i++) {
        const ptq_tensor_range *t = &ranges[i];
        if (t->format != PTQ_QFORMAT_INT8)
            return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED,
                            "tensor \"%s\": ONNX Runtime's TensorRT calibration table holds INT8 ranges only, "
                            "this range is %s (export FP8 ranges as a Q/DQ model)",
                            t->name, ptq_qformat_name(t->format));
        float v = (float)table_value(t);
        s->n_no_positive += ptq_export_range_no_positive(t);
        s->n_tiny += ptq_export_range_tiny(t);
        if (!is_degenerate(t) && !ptq_export_range_no_positive(t) && !ptq_export_range_tiny(t) &&
            (!(v >= FLT_MIN) || isinf(v)))
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                            "tensor \"%s\": %s %.17g is not a normal, finite float32 as the TensorRT EP needs",
                            t->name,
                            t->asymmetric ? "highest" : "amax", table_value(t));
    }
    const ptq_tensor_range **v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory sorting %" PRId64 " tensor names", n);
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!is_degenerate(&ranges[i]) && !ptq_export_range_no_positive(&ranges[i]) &&
            !ptq_export_range_tiny(&ranges[i]))
            v[m++] = &ranges[i];
    }
    qsort(v, (size_t)m, sizeof *v, cmp_range_names);
    *sorted = v;
    *n_sorted = m;
    return PTQ_OK;
}

/* str(float(numpy.float32(v))), as ORT writes a table value. */
static void ort_value(double v, char out[40])
{
    ptq_export_format_double((double)(float)v, out, 40);
}

ptq_status ptq_export_ort_flatbuffers(ptq_ctx *ctx, const ptq_tensor_range *ranges, int64_t n, ptq_buf *out,
                                      ptq_export_stats *stats)
{
    ptq_status st = PTQ_OK;
    ptq_export_stats s;
    const ptq_tensor_range **sorted = NULL;
    int64_t m = 0;
    uint32_t *kv = NULL;
    fb_builder fb = {.ctx = ctx, .minalign = 1};
    memset(out, 0, sizeof *out);
    if (stats)
        memset(stats, 0, sizeof *stats);
    PTQ_TRY(st, trt_facing_sorted(ctx, ranges, n, &s, &sorted, &m), done);
    kv = malloc((size_t)(m > 0 ? m : 1) * sizeof *kv);
    if (!kv) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for %" PRId64 " table entries", m);
        goto done;
    }
    PTQ_TRY(st, fb_grow(&fb), done);
    for (int64_t i = 0; i < m; i++) {
        char value[40];
        uint32_t key_off, value_off;
        ort_value(table_value(sorted[i]), value);
        PTQ_TRY(st, fb_string(&fb, sorted[i]->name, &key_off), done);
        PTQ_TRY(st, fb_string(&fb, value, &value_off), done);
        fb_start_object(&fb, 2);
        PTQ_TRY(st, fb_add_offset_field(&fb, 0, key_off), done);
        PTQ_TRY(st, fb_add_offset_field(&fb, 1, value_off), done);
        PTQ_TRY(st, fb_end_object(&fb, &kv[i]), done);
    }
    /* the vector: room for m offsets, then each prepended in ascending key
     * order, which leaves them in descending order, as ORT's writer does */
    PTQ_TRY(st, fb_prep(&fb, 4, 4 * (size_t)m), done);
    for (int64_t i = 0; i < m; i++)
        PTQ_TRY(st, fb_prepend_uoffset(&fb, kv[i]), done);
    fb_place(&fb, (uint32_t)m, 4);
    uint32_t dict = fb_offset(&fb), table;
    fb_start_object(&fb, 1);
    PTQ_TRY(st, fb_add_offset_field(&fb, 0, dict), done);
    PTQ_TRY(st, fb_end_object(&fb, &table), done);
    PTQ_TRY(st, fb_finish(&fb, table), done);
    PTQ_TRY(st, ptq_buf_append(ctx, out, fb.buf + fb.head, fb.cap - fb.head), done);
    s.n_written = m;
    if (stats)
        *stats = s;
done:
    if (st != PTQ_OK)
        ptq_buf_free(out);
    free(fb.buf);
    free(kv);
    free(sorted);
    return st;
}

ptq_status ptq_export_ort_cache(ptq_ctx *ctx, const ptq_tensor_range *ranges, int64_t n, ptq_buf *out,
                                ptq_export_stats *stats)
{
    ptq_status st = PTQ_OK;
    ptq_export_stats s;
    const ptq_tensor_range **sorted = NULL;
    int64_t m = 0;
    memset(out, 0, sizeof *out);
    if (stats)
        memset(stats, 0, sizeof *stats);
    PTQ_TRY(st, trt_facing_sorted(ctx, ranges, n, &s, &sorted, &m), done);
    PTQ_TRY(st, ptq_buf_append(ctx, out, "", 0), done); /* an empty table is "", not NULL */
    for (int64_t i = 0; i < m; i++) {
        char value[40];
        ort_value(table_value(sorted[i]), value);
        PTQ_TRY(st, ptq_buf_appendf(ctx, out, "%s %s\n", sorted[i]->name, value), done);
    }
    s.n_written = m;
    if (stats)
        *stats = s;
done:
    if (st != PTQ_OK)
        ptq_buf_free(out);
    free(sorted);
    return st;
}

/* s as Python's json.dumps writes a str (ensure_ascii): '"', '\\' and the
 * short escapes, everything outside ' '..'~' as \uXXXX (UTF-16 pairs above
 * U+FFFF). s is valid UTF-8 (ptq_export_check). */
static ptq_status json_ascii_string(ptq_ctx *ctx, ptq_buf *b, const char *s)
{
    ptq_status st = ptq_buf_append(ctx, b, "\"", 1);
    const unsigned char *c = (const unsigned char *)s;
    while (st == PTQ_OK && *c) {
        unsigned cp = *c;
        int n = cp < 0x80 ? 0 : cp < 0xE0 ? 1 : cp < 0xF0 ? 2 : 3;
        if (n)
            cp &= 0x3Fu >> n;
        for (int i = 1; i <= n; i++)
            cp = (cp << 6) | (c[i] & 0x3Fu);
        c += n + 1;
        const char *esc = cp == '"' ? "\\\"" : cp == '\\' ? "\\\\" : cp == '\n' ? "\\n" : cp == '\r' ? "\\r"
                        : cp == '\t' ? "\\t" : cp == '\b' ? "\\b" : cp == '\f' ? "\\f" : NULL;
        if (esc) {
            st = ptq_buf_append(ctx, b, esc, 2);
        } else if (cp >= ' ' && cp <= '~') {
            char ch = (char)cp;
            st = ptq_buf_append(ctx, b, &ch, 1);
        } else if (cp < 0x10000) {
            st = ptq_buf_appendf(ctx, b, "\\u%04x", cp);
        } else {
            cp -= 0x10000;
            st = ptq_buf_appendf(ctx, b, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
        }
    }
    if (st == PTQ_OK)
        st = ptq_buf_append(ctx, b, "\"", 1);
    return st;
}

static const char *ort_method_name(const ptq_tensor_range *ranges, int64_t n)
{
    ptq_calib_method m = n > 0 ? ranges[0].method : PTQ_CALIB_MINMAX;
    for (int64_t i = 1; i < n; i++) {
        if (ranges[i].method != m)
            return "MinMax";
    }
    switch (m) {
    case PTQ_CALIB_ENTROPY: return "Entropy";
    case PTQ_CALIB_PERCENTILE: return "Percentile";
    default: return "MinMax";
    }
}

ptq_status ptq_export_ort_json(ptq_ctx *ctx, const ptq_tensor_range *ranges, int64_t n, ptq_buf *out,
                               ptq_export_stats *stats)
{
    ptq_status st = PTQ_OK;
    ptq_export_stats s;
    memset(out, 0, sizeof *out);
    if (stats)
        memset(stats, 0, sizeof *stats);
    PTQ_TRY(st, ptq_export_check_lines(ctx, ranges, n, &s), done);
    PTQ_TRY(st, ptq_buf_appendf(ctx, out, "{\"CLS\": \"TensorsData\", \"data\": {"), done);
    for (int64_t i = 0; i < n; i++) {
        const ptq_tensor_range *t = &ranges[i];
        float amax = is_degenerate(t) ? 0.0f : (float)t->r.amax;
        if (isinf(amax)) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "tensor \"%s\": amax %.17g overflows float32", t->name, t->r.amax);
            goto done;
        }
        char lowest[40], highest[40];
        ptq_export_format_double(t->asymmetric ? (double)t->lowest : -(double)amax, lowest, sizeof lowest);
        ptq_export_format_double(t->asymmetric ? (double)t->highest : (double)amax, highest, sizeof highest);
        if (i > 0)
            PTQ_TRY(st, ptq_buf_append(ctx, out, ", ", 2), done);
        PTQ_TRY(st, json_ascii_string(ctx, out, t->name), done);
        PTQ_TRY(st,
                ptq_buf_appendf(ctx, out, ": {\"lowest\": %s, \"highest\": %s, \"CLS\": \"TensorData\"}", lowest,
                                highest),
                done);
        s.n_written++;
    }
    PTQ_TRY(st,
            ptq_buf_appendf(ctx, out,
                            "}, \"calibration_method\": {\"CLS\": \"CalibrationMethod\", \"value\": "
                            "\"CalibrationMethod.%s\"}}",
                            ort_method_name(ranges, n)),
            done);
    if (stats)
        *stats = s;
done:
    if (st != PTQ_OK)
        ptq_buf_free(out);
    return st;
}
