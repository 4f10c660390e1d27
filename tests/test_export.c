/* The range exporters: exact TensorRT-cache bytes and headers, ':' warnings,
 * refusals, FP8 and degenerate ranges, the flatbuffer walked by hand, ORT's
 * text files, ptq's JSON parsed back, repr formatting, determinism. With
 * `--write DIR` it writes every format for tests/export_test.py instead. */
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "ptq/export.h"
#include "testlib.h"

static ptq_tensor_range rng(const char *name, double amax)
{
    ptq_tensor_range t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.r.amax = amax;
    t.r.scale = amax / 127.0;
    t.r.degenerate = amax == 0;
    t.method = PTQ_CALIB_ENTROPY;
    t.format = PTQ_QFORMAT_INT8;
    return t;
}

static int buf_is(const ptq_buf *b, const char *want)
{
    size_t n = strlen(want);
    if (b->n_bytes == n && b->data && memcmp(b->data, want, n) == 0)
        return 1;
    fprintf(stderr, "got  %zu bytes: \"%.*s\"\nwant %zu bytes: \"%s\"\n", b->n_bytes, (int)b->n_bytes,
            b->data ? b->data : "", n, want);
    return 0;
}

static uint32_t rd32(const ptq_buf *b, size_t at)
{
    const unsigned char *p = (const unsigned char *)b->data + at;
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t rd16(const ptq_buf *b, size_t at)
{
    const unsigned char *p = (const unsigned char *)b->data + at;
    return (uint16_t)(p[0] | p[1] << 8);
}

/* A flatbuffers string field of the table at t (field index f), or NULL. */
static const char *fb_field_string(const ptq_buf *b, size_t t, int f, uint32_t *len)
{
    size_t vt = (size_t)((int64_t)t - (int32_t)rd32(b, t));
    uint16_t vt_bytes = rd16(b, vt);
    if ((size_t)(4 + 2 * f) >= vt_bytes)
        return NULL;
    uint16_t off = rd16(b, vt + 4 + 2 * (size_t)f);
    if (!off)
        return NULL;
    size_t s = t + off + rd32(b, t + off);
    *len = rd32(b, s);
    return b->data + s + 4;
}

static void test_format_double(void)
{
    static const struct {
        double x;
        const char *want;
    } cases[] = {
        {0.1, "0.1"},         {1.0, "1.0"},          {100.0, "100.0"},       {1e-05, "1e-05"},
        {0.0001, "0.0001"},   {1.5e-7, "1.5e-07"},   {1e15, "1000000000000000.0"},
        {1e16, "1e+16"},      {1.5e16, "1.5e+16"},   {123456789.125, "123456789.125"},
        {-2.5, "-2.5"},       {-0.0, "-0.0"},        {0.0, "0.0"},           {5e-324, "5e-324"},
        {1.7976931348623157e308, "1.7976931348623157e+308"},
        {(double)0.1f, "0.10000000149011612"},       {1e100, "1e+100"},
        {9.5367431640625e-07, "9.5367431640625e-07"},
        {2.2250738585072014e-308, "2.2250738585072014e-308"},                {0.3, "0.3"},
        {2.0 / 3.0, "0.6666666666666666"},           {1234.5678, "1234.5678"},
    };
    char out[40];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = ptq_export_format_double(cases[i].x, out, sizeof out);
        CHECK_MSG(n == strlen(cases[i].want) && strcmp(out, cases[i].want) == 0, "%.17g -> \"%s\", want \"%s\"",
                  cases[i].x, out, cases[i].want);
    }
    CHECK(ptq_export_format_double(NAN, out, sizeof out) == 0);
    CHECK(ptq_export_format_double(INFINITY, out, sizeof out) == 0);
    CHECK(ptq_export_format_double(1.0, out, 16) == 0);
}

static void test_trt_cache(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_buf b = {0};
    ptq_export_stats s;
    /* 1/127 as float32 is 0x3c010204 (REFERENCE.md's example); 127 -> 1.0, 63.5 -> 0.5, 254 -> 2.0 */
    ptq_tensor_range r[] = {rng("input", 1.0), rng("conv1_out", 127.0), rng("relu", 63.5), rng("fc", 254.0)};
    CHECK(ptq_export_trt_cache(&ctx, NULL, r, 4, &b, &s) == PTQ_OK);
    CHECK(buf_is(&b, "TRT-100300-EntropyCalibration2\ninput: 3c010204\nconv1_out: 3f800000\nrelu: 3f000000\n"
                     "fc: 40000000\n"));
    CHECK(s.n_written == 4 && s.n_degenerate == 0 && s.n_colon_names == 0);
    CHECK(b.data && b.data[b.n_bytes] == '\0');

    /* a value that is not exact: the float32 of amax/127 computed in double */
    double amax = 3.14159;
    float scale = (float)(amax / 127.0);
    uint32_t bits;
    memcpy(&bits, &scale, sizeof bits);
    char want[128];
    snprintf(want, sizeof want, "TRT-8601-MinMaxCalibration\npi: %08" PRIx32 "\n", bits);
    ptq_tensor_range pi = rng("pi", amax);
    ptq_trt_cache_params p = {ptq_trt_cache_version(8, 6, 1), "MinMaxCalibration"};
    ptq_buf_free(&b);
    CHECK(ptq_export_trt_cache(&ctx, &p, &pi, 1, &b, NULL) == PTQ_OK);
    CHECK(buf_is(&b, want));
    CHECK(ptq_trt_cache_version(8, 6, 1) == 8601 && ptq_trt_cache_version(10, 3, 0) == 100300 &&
          ptq_trt_cache_version(7, 1, 3) == 7103 && ptq_trt_cache_version(10, 13, 2) == 101302);

    /* version 0 / algorithm NULL mean the defaults; bad headers are refused */
    ptq_trt_cache_params dflt = {0, NULL};
    ptq_buf_free(&b);
    CHECK(ptq_export_trt_cache(&ctx, &dflt, &pi, 1, &b, NULL) == PTQ_OK);
    CHECK(b.n_bytes > 31 && memcmp(b.data, "TRT-100300-EntropyCalibration2\n", 31) == 0);
    ptq_buf_free(&b);
    const char *bad_alg[] = {"", "a:b", "Entropy Calibration", "x\n", "\xc3\xa9"};
    for (size_t i = 0; i < sizeof bad_alg / sizeof bad_alg[0]; i++) {
        ptq_trt_cache_params q = {100300, bad_alg[i]};
        CHECK_MSG(ptq_export_trt_cache(&ctx, &q, &pi, 1, &b, NULL) == PTQ_ERR_INVALID_ARG, "algorithm \"%s\"",
                  bad_alg[i]);
        CHECK(b.data == NULL && b.n_bytes == 0);
    }
    ptq_trt_cache_params neg = {-1, NULL};
    CHECK(ptq_export_trt_cache(&ctx, &neg, &pi, 1, &b, NULL) == PTQ_ERR_INVALID_ARG);

    /* ':' in a name: written, flagged, counted */
    CHECK(ptq_export_name_warns("onnx::Conv_3") == 1 && ptq_export_name_warns("conv/out.0") == 0);
    CHECK(ptq_export_name_warns(NULL) == 0);
    ptq_tensor_range colon[] = {rng("onnx::Conv_3", 127.0), rng("a:b", 254.0), rng("plain", 127.0)};
    CHECK(ptq_export_trt_cache(&ctx, NULL, colon, 3, &b, &s) == PTQ_OK);
    CHECK(s.n_colon_names == 2 && s.n_written == 3);
    CHECK(b.data && strstr(b.data, "\nonnx::Conv_3: 3f800000\na:b: 40000000\n"));
    ptq_buf_free(&b);

    /* degenerate: left out, counted; a header-only cache when nothing else */
    ptq_tensor_range deg[] = {rng("zeros", 0.0), rng("x", 127.0), rng("flagged", 127.0)};
    deg[2].r.degenerate = 1;
    CHECK(ptq_export_trt_cache(&ctx, NULL, deg, 3, &b, &s) == PTQ_OK);
    CHECK(buf_is(&b, "TRT-100300-EntropyCalibration2\nx: 3f800000\n"));
    CHECK(s.n_degenerate == 2 && s.n_written == 1);
    ptq_buf_free(&b);
    CHECK(ptq_export_trt_cache(&ctx, NULL, deg, 1, &b, &s) == PTQ_OK);
    CHECK(buf_is(&b, "TRT-100300-EntropyCalibration2\n"));
    ptq_buf_free(&b);
    CHECK(ptq_export_trt_cache(&ctx, NULL, NULL, 0, &b, &s) == PTQ_OK && s.n_written == 0);
    ptq_buf_free(&b);

    /* FP8 is refused, naming the tensor and the format */
    ptq_tensor_range f8[] = {rng("x", 127.0), rng("fp8_act", 448.0)};
    f8[1].format = PTQ_QFORMAT_FP8_E4M3;
    CHECK(ptq_export_trt_cache(&ctx, NULL, f8, 2, &b, &s) == PTQ_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(ctx.msg, "fp8_act") && strstr(ctx.msg, "fp8-e4m3"), "message: %s", ctx.msg);
    CHECK(b.data == NULL && s.n_written == 0);

    /* a scale under float32's smallest normal: left out, counted, as a degenerate range (it was refused);
     * 127 * 2^-126 is the least amax kept */
    ptq_tensor_range tiny[] = {rng("tiny", 1e-37), rng("x", 127.0), rng("edge", 127.0 * FLT_MIN),
                               rng("below", 126.0 * FLT_MIN)};
    CHECK(ptq_export_range_tiny(&tiny[0]) && !ptq_export_range_tiny(&tiny[1]) && !ptq_export_range_tiny(&tiny[2]) &&
          ptq_export_range_tiny(&tiny[3]) && !ptq_export_range_tiny(&deg[0]));
    CHECK(ptq_export_trt_cache(&ctx, NULL, tiny, 4, &b, &s) == PTQ_OK);
    CHECK(buf_is(&b, "TRT-100300-EntropyCalibration2\nx: 3f800000\nedge: 00800000\n"));
    CHECK(s.n_tiny == 2 && s.n_written == 2 && s.n_degenerate == 0);
    ptq_buf_free(&b);
    /* a scale past float32: refused */
    ptq_tensor_range huge = rng("huge", 1e300);
    CHECK(ptq_export_trt_cache(&ctx, NULL, &huge, 1, &b, NULL) == PTQ_ERR_INVALID_ARG);
    CHECK_MSG(strstr(ctx.msg, "huge"), "message: %s", ctx.msg);
    CHECK(b.data == NULL);
}

/* Every exporter refuses the same bad ranges, naming the tensor. */
static void test_refusals(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    struct {
        ptq_tensor_range r[2];
        const char *needle;
    } bad[] = {
        {{rng("ok", 1), rng("nan_amax", NAN)}, "nan_amax"},
        {{rng("ok", 1), rng("neg_amax", -1)}, "neg_amax"},
        {{rng("ok", 1), rng("inf_amax", INFINITY)}, "inf_amax"},
        {{rng("ok", 1), rng("", 1)}, "tensor 1"},
        {{rng("ok", 1), rng(NULL, 1)}, "tensor 1"},
        {{rng("ok", 1), rng("two\nlines", 1)}, "line break"},
        {{rng("ok", 1), rng("cr\r", 1)}, "line break"},
        {{rng("ok", 1), rng("bad\xff utf8", 1)}, "UTF-8"},
        {{rng("ok", 1), rng("overlong\xc0\xaf", 1)}, "UTF-8"},
        {{rng("ok", 1), rng("surrogate\xed\xa0\x80", 1)}, "UTF-8"},
        {{rng("dup", 1), rng("dup", 2)}, "dup"},
        {{rng("ok", 1), rng("bad_clip", 1)}, "bad_clip"},
        {{rng("ok", 1), rng("bad_pct", 1)}, "bad_pct"},
        {{rng("ok", 1), rng("bad_method", 1)}, "bad_method"},
        {{rng("ok", 1), rng("bad_scale", 1)}, "bad_scale"},
    };
    bad[11].r[1].r.clipped_fraction = 1.5;
    bad[12].r[1].method = PTQ_CALIB_PERCENTILE;
    bad[12].r[1].percentile = 0;
    bad[13].r[1].method = (ptq_calib_method)7;
    bad[14].r[1].r.scale = -1;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ptq_buf b = {0};
        ptq_export_stats s = {1, 1, 1, 1, 1};
        ptq_status st[5];
        st[0] = ptq_export_trt_cache(&ctx, NULL, bad[i].r, 2, &b, &s);
        st[1] = ptq_export_ort_flatbuffers(&ctx, bad[i].r, 2, &b, &s);
        st[2] = ptq_export_ort_cache(&ctx, bad[i].r, 2, &b, &s);
        st[3] = ptq_export_ort_json(&ctx, bad[i].r, 2, &b, &s);
        for (int k = 0; k < 4; k++)
            CHECK_MSG(st[k] == PTQ_ERR_INVALID_ARG, "case %zu exporter %d: %s", i, k, ptq_status_name(st[k]));
        CHECK_MSG(strstr(ctx.msg, bad[i].needle), "case %zu message \"%s\" lacks \"%s\"", i, ctx.msg, bad[i].needle);
        CHECK(b.data == NULL && b.n_bytes == 0 && s.n_written == 0 && s.n_degenerate == 0);
        CHECK(ptq_export_check_lines(&ctx, bad[i].r, 2, NULL) == PTQ_ERR_INVALID_ARG);
        /* a line break: refused by the line- and key-based files, which name the formats that carry it */
        const int lines_only = strcmp(bad[i].needle, "line break") == 0;
        if (lines_only)
            CHECK_MSG(strstr(ctx.msg, "--format json or qdq"), "message: %s", ctx.msg);
        st[4] = ptq_export_json(&ctx, NULL, bad[i].r, 2, &b, &s);
        CHECK_MSG(st[4] == (lines_only ? PTQ_OK : PTQ_ERR_INVALID_ARG), "case %zu ptq JSON: %s", i,
                  ptq_status_name(st[4]));
        CHECK((ptq_export_check(&ctx, bad[i].r, 2, NULL) == PTQ_OK) == lines_only);
        ptq_buf_free(&b);
    }
    /* ptq's JSON carries the name, escaped */
    ptq_tensor_range nl[] = {rng("two\nlines\r", 1)};
    ptq_buf j = {0};
    CHECK(ptq_export_json(&ctx, NULL, nl, 1, &j, NULL) == PTQ_OK);
    CHECK_MSG(j.data && strstr(j.data, "\"two\\nlines\\r\""), "JSON: %.*s", (int)j.n_bytes, j.data ? j.data : "");
    ptq_buf_free(&j);
    ptq_tensor_range ok[] = {rng("a", 1), rng("b", 0)};
    ptq_export_stats s;
    CHECK(ptq_export_check(&ctx, ok, 2, &s) == PTQ_OK && s.n_degenerate == 1 && s.n_written == 0);
    CHECK(ptq_export_check(&ctx, ok, -1, &s) == PTQ_ERR_INVALID_ARG);
    CHECK(ptq_export_name_valid("\xe5\xbc\xa0\xf0\x9f\x98\x80") == 1 && ptq_export_name_valid("") == 0);
}

static void test_ort_flatbuffers(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_buf b = {0};
    ptq_export_stats s;
    ptq_tensor_range r[] = {rng("b", 2.5), rng("a", 0.1), rng("zero", 0), rng("c:0", 1e-3), rng("A", 300.0)};
    CHECK(ptq_export_ort_flatbuffers(&ctx, r, 5, &b, &s) == PTQ_OK);
    CHECK(s.n_written == 4 && s.n_degenerate == 1 && s.n_colon_names == 1);
    CHECK(b.n_bytes % 4 == 0 && b.n_bytes > 16);
    if (b.n_bytes < 16)
        return;
    /* root -> TrtTable -> dict vector; entries in descending key order as ORT writes them */
    size_t root = rd32(&b, 0);
    uint32_t len;
    size_t vt = (size_t)((int64_t)root - (int32_t)rd32(&b, root));
    CHECK(rd16(&b, vt) == 6 && rd16(&b, vt + 4) == 4); /* one field at offset 4 */
    size_t vec = root + 4 + rd32(&b, root + 4);
    CHECK(rd32(&b, vec) == 4);
    const char *keys[] = {"c:0", "b", "a", "A"};
    const char *values[] = {"0.0010000000474974513", "2.5", "0.10000000149011612", "300.0"};
    for (uint32_t i = 0; i < 4 && i < rd32(&b, vec); i++) {
        size_t at = vec + 4 + 4 * i;
        size_t t = at + rd32(&b, at);
        const char *k = fb_field_string(&b, t, 0, &len);
        CHECK_MSG(k && len == strlen(keys[i]) && memcmp(k, keys[i], len) == 0 && k[len] == '\0', "key %u", i);
        const char *v = fb_field_string(&b, t, 1, &len);
        CHECK_MSG(v && len == strlen(values[i]) && memcmp(v, values[i], len) == 0, "value %u: %.*s", i, (int)len,
                  v ? v : "");
    }
    ptq_buf again = {0};
    CHECK(ptq_export_ort_flatbuffers(&ctx, r, 5, &again, NULL) == PTQ_OK);
    CHECK(again.n_bytes == b.n_bytes && memcmp(again.data, b.data, b.n_bytes) == 0);
    ptq_buf_free(&again);
    ptq_buf_free(&b);

    /* an empty table: root offset, vtable, table, empty vector */
    CHECK(ptq_export_ort_flatbuffers(&ctx, NULL, 0, &b, &s) == PTQ_OK && s.n_written == 0);
    CHECK(b.n_bytes == 24 && rd32(&b, 0) == 12 && rd32(&b, 20) == 0);
    ptq_buf_free(&b);

    /* FP8 and float32-overflowing ranges are refused; too-small ones left out, counted (they were refused) */
    ptq_tensor_range f8 = rng("e5", 57344.0);
    f8.format = PTQ_QFORMAT_FP8_E5M2;
    CHECK(ptq_export_ort_flatbuffers(&ctx, &f8, 1, &b, NULL) == PTQ_ERR_UNSUPPORTED);
    CHECK(ptq_export_ort_cache(&ctx, &f8, 1, &b, NULL) == PTQ_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(ctx.msg, "e5") && strstr(ctx.msg, "fp8-e5m2"), "message: %s", ctx.msg);
    ptq_tensor_range big = rng("big", 1e39), small[] = {rng("small", 1e-39), rng("sub", 1e-37), rng("a", 2.5)};
    CHECK(ptq_export_ort_flatbuffers(&ctx, &big, 1, &b, NULL) == PTQ_ERR_INVALID_ARG);
    CHECK(b.data == NULL);
    CHECK(ptq_export_ort_cache(&ctx, small, 3, &b, &s) == PTQ_OK);
    CHECK(buf_is(&b, "a 2.5\n") && s.n_tiny == 2 && s.n_written == 1);
    ptq_buf_free(&b);
    CHECK(ptq_export_ort_flatbuffers(&ctx, small, 3, &b, &s) == PTQ_OK && s.n_tiny == 2 && s.n_written == 1);
    ptq_buf_free(&b);
    CHECK(ptq_export_ort_json(&ctx, small, 3, &b, NULL) == PTQ_OK && strstr(b.data, "\"small\"") &&
          strstr(b.data, "\"sub\""));
    ptq_buf_free(&b);
}

static void test_ort_text(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_buf b = {0};
    ptq_export_stats s;
    ptq_tensor_range r[] = {rng("b", 2.5), rng("a", 0.1), rng("zero", 0), rng("\xc3\xa9", 1e-5), rng("A", 1e20)};
    CHECK(ptq_export_ort_cache(&ctx, r, 5, &b, &s) == PTQ_OK);
    CHECK(buf_is(&b, "A 1.0000000200408773e+20\na 0.10000000149011612\nb 2.5\n\xc3\xa9 9.999999747378752e-06\n"));
    CHECK(s.n_written == 4 && s.n_degenerate == 1);
    ptq_buf_free(&b);
    CHECK(ptq_export_ort_cache(&ctx, NULL, 0, &b, &s) == PTQ_OK && b.n_bytes == 0 && b.data);
    ptq_buf_free(&b);

    /* calibration.json: given order, degenerate kept, json.dumps escaping */
    ptq_tensor_range j[] = {rng("q\"\\\t/\x7f\xc3\xa9\xf0\x9f\x98\x80", 2.5), rng("zero", 0), rng("fp8", 448.0)};
    j[2].format = PTQ_QFORMAT_FP8_E4M3;
    CHECK(ptq_export_ort_json(&ctx, j, 3, &b, &s) == PTQ_OK);
    CHECK(buf_is(&b, "{\"CLS\": \"TensorsData\", \"data\": {\"q\\\"\\\\\\t/\\u007f\\u00e9\\ud83d\\ude00\": "
                     "{\"lowest\": -2.5, \"highest\": 2.5, \"CLS\": \"TensorData\"}, \"zero\": {\"lowest\": -0.0, "
                     "\"highest\": 0.0, \"CLS\": \"TensorData\"}, \"fp8\": {\"lowest\": -448.0, \"highest\": 448.0, "
                     "\"CLS\": \"TensorData\"}}, \"calibration_method\": {\"CLS\": \"CalibrationMethod\", \"value\": "
                     "\"CalibrationMethod.Entropy\"}}"));
    CHECK(s.n_written == 3 && s.n_degenerate == 1);
    ptq_buf_free(&b);
    j[1].method = PTQ_CALIB_PERCENTILE;
    j[1].percentile = 99.99;
    CHECK(ptq_export_ort_json(&ctx, j, 3, &b, NULL) == PTQ_OK);
    CHECK(b.data && strstr(b.data, "\"CalibrationMethod.MinMax\"}}")); /* mixed methods */
    ptq_buf_free(&b);
    for (int i = 0; i < 3; i++) {
        j[i].method = PTQ_CALIB_PERCENTILE;
        j[i].percentile = 99.9;
    }
    CHECK(ptq_export_ort_json(&ctx, j, 3, &b, NULL) == PTQ_OK);
    CHECK(b.data && strstr(b.data, "\"CalibrationMethod.Percentile\"}}"));
    ptq_buf_free(&b);
    CHECK(ptq_export_ort_json(&ctx, NULL, 0, &b, NULL) == PTQ_OK);
    CHECK(buf_is(&b, "{\"CLS\": \"TensorsData\", \"data\": {}, \"calibration_method\": {\"CLS\": "
                     "\"CalibrationMethod\", \"value\": \"CalibrationMethod.MinMax\"}}"));
    ptq_buf_free(&b);
    ptq_tensor_range over = rng("over", 1e39);
    CHECK(ptq_export_ort_json(&ctx, &over, 1, &b, NULL) == PTQ_ERR_INVALID_ARG && b.data == NULL);
}

/* Asymmetric ranges (--target ort-cpu): calibration.json and ptq's JSON
 * carry the range itself; a range that is not finite and ordered is refused. */
static void test_asymmetric(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_buf b = {0};
    ptq_tensor_range r[] = {rng("relu", 6.0), rng("conv", 3.0)};
    r[0].asymmetric = r[1].asymmetric = 1;
    r[0].lowest = 0.0f;
    r[0].highest = 5.75f;
    r[1].lowest = -1.5f;
    r[1].highest = 3.0f;
    CHECK(ptq_export_ort_json(&ctx, r, 2, &b, NULL) == PTQ_OK);
    CHECK(b.data && strstr(b.data, "\"relu\": {\"lowest\": 0.0, \"highest\": 5.75,") &&
          strstr(b.data, "\"conv\": {\"lowest\": -1.5, \"highest\": 3.0,"));
    ptq_buf_free(&b);
    CHECK(ptq_export_json(&ctx, NULL, r, 2, &b, NULL) == PTQ_OK);
    CHECK(b.data && strstr(b.data, "\"lowest\":\t-1.5") && strstr(b.data, "\"highest\":\t5.75"));
    ptq_buf_free(&b);
    /* no positive value: the TensorRT EP's amax (max(highest, lowest)) would be 0 or negative, so the
     * TensorRT-facing tables leave the range out and count it, as they do degenerate ones; calibration.json keeps it */
    ptq_export_stats s;
    for (int widened = 0; widened < 2; widened++) {
        r[1].lowest = -4.4375f;
        r[1].highest = widened ? 0.0f : -0.5f;
        CHECK(ptq_export_range_no_positive(&r[1]) && !ptq_export_range_no_positive(&r[0]));
        CHECK(ptq_export_ort_cache(&ctx, r, 2, &b, &s) == PTQ_OK && s.n_written == 1 && s.n_no_positive == 1 &&
              s.n_degenerate == 0 && b.data && strcmp(b.data, "relu 5.75\n") == 0);
        ptq_buf_free(&b);
        CHECK(ptq_export_ort_flatbuffers(&ctx, r, 2, &b, &s) == PTQ_OK && s.n_written == 1 && s.n_no_positive == 1);
        ptq_buf_free(&b);
        CHECK(ptq_export_ort_json(&ctx, r, 2, &b, NULL) == PTQ_OK && b.data && strstr(b.data, "\"conv\": {\"lowest\""));
        ptq_buf_free(&b);
    }
    r[1].highest = 3.0f;
    r[1].lowest = 4.0f; /* above highest */
    CHECK(ptq_export_ort_json(&ctx, r, 2, &b, NULL) == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "conv") && !b.data);
    r[1].lowest = NAN;
    CHECK(ptq_export_json(&ctx, NULL, r, 2, &b, NULL) == PTQ_ERR_INVALID_ARG && !b.data);
}

static void test_ptq_json(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_buf b = {0}, again = {0};
    ptq_export_stats s;
    ptq_tensor_range r[] = {rng("conv1/out", 0.1 + 1e-17), rng("zero", 0), rng("act:0", 3.0)};
    r[0].method = PTQ_CALIB_PERCENTILE;
    r[0].percentile = 99.99;
    r[0].r.clipped_fraction = 1e-4;
    r[2].format = PTQ_QFORMAT_FP8_E4M3;
    r[2].r.scale = 3.0 / 448.0;
    r[2].method = PTQ_CALIB_MSE;
    const char *sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    ptq_export_json_meta meta = {"models/m.onnx", sha, "calib.h5"};
    CHECK(ptq_export_json(&ctx, &meta, r, 3, &b, &s) == PTQ_OK);
    CHECK(s.n_written == 3 && s.n_degenerate == 1 && s.n_colon_names == 1);
    CHECK(ptq_export_json(&ctx, &meta, r, 3, &again, NULL) == PTQ_OK);
    CHECK(again.n_bytes == b.n_bytes && memcmp(again.data, b.data, b.n_bytes) == 0);
    CHECK(b.n_bytes > 0 && b.data[b.n_bytes - 1] == '\n');
    cJSON *root = b.data ? cJSON_Parse(b.data) : NULL;
    CHECK(root != NULL);
    if (root) {
        CHECK(strcmp(cJSON_GetObjectItem(root, "format")->valuestring, "ptq-ranges") == 0);
        CHECK(cJSON_GetObjectItem(root, "format_version")->valuedouble == 1);
        CHECK(cJSON_IsString(cJSON_GetObjectItem(root, "ptq_version")));
        CHECK(strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "model"), "sha256")->valuestring, sha) == 0);
        CHECK(strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "archive"), "path")->valuestring, "calib.h5") == 0);
        cJSON *t = cJSON_GetObjectItem(root, "tensors");
        CHECK(cJSON_GetArraySize(t) == 3);
        cJSON *t0 = cJSON_GetArrayItem(t, 0), *t1 = cJSON_GetArrayItem(t, 1), *t2 = cJSON_GetArrayItem(t, 2);
        CHECK(strcmp(cJSON_GetObjectItem(t0, "name")->valuestring, "conv1/out") == 0);
        CHECK(cJSON_GetObjectItem(t0, "amax")->valuedouble == r[0].r.amax); /* exact round trip */
        CHECK(cJSON_GetObjectItem(t0, "scale")->valuedouble == r[0].r.scale);
        CHECK(strcmp(cJSON_GetObjectItem(t0, "method")->valuestring, "percentile") == 0);
        CHECK(cJSON_GetObjectItem(t0, "percentile")->valuedouble == 99.99);
        CHECK(strcmp(cJSON_GetObjectItem(t0, "format")->valuestring, "int8") == 0);
        CHECK(cJSON_GetObjectItem(t0, "clipped_fraction")->valuedouble == 1e-4);
        CHECK(cJSON_IsFalse(cJSON_GetObjectItem(t0, "degenerate")));
        CHECK(cJSON_IsTrue(cJSON_GetObjectItem(t1, "degenerate")) && cJSON_GetObjectItem(t1, "amax")->valuedouble == 0);
        CHECK(cJSON_GetObjectItem(t1, "percentile") == NULL);
        CHECK(strcmp(cJSON_GetObjectItem(t2, "format")->valuestring, "fp8-e4m3") == 0);
        CHECK(strcmp(cJSON_GetObjectItem(t2, "method")->valuestring, "mse") == 0);
        CHECK(cJSON_GetObjectItem(t2, "scale")->valuedouble == 3.0 / 448.0);
    }
    cJSON_Delete(root);
    ptq_buf_free(&b);
    ptq_buf_free(&again);

    CHECK(ptq_export_json(&ctx, NULL, NULL, 0, &b, &s) == PTQ_OK);
    root = b.data ? cJSON_Parse(b.data) : NULL;
    CHECK(root && cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "model"), "path")) &&
          cJSON_GetArraySize(cJSON_GetObjectItem(root, "tensors")) == 0);
    cJSON_Delete(root);
    ptq_buf_free(&b);
    ptq_export_json_meta bad_sha = {NULL, "ABC", NULL}, empty_path = {"", NULL, NULL};
    CHECK(ptq_export_json(&ctx, &bad_sha, r, 3, &b, NULL) == PTQ_ERR_INVALID_ARG && b.data == NULL);
    CHECK(ptq_export_json(&ctx, &empty_path, r, 3, &b, NULL) == PTQ_ERR_INVALID_ARG && b.data == NULL);
    /* paths may hold any bytes: a line break escaped, a byte that starts no UTF-8 character as U+FFFD */
    ptq_export_json_meta odd_paths = {"a\nb\xff.onnx", NULL, "c\xfe.h5"};
    CHECK_MSG(ptq_export_json(&ctx, &odd_paths, r, 3, &b, NULL) == PTQ_OK, "%s", ctx.msg);
    root = b.data ? cJSON_Parse(b.data) : NULL;
    const cJSON *odd_model = root ? cJSON_GetObjectItem(cJSON_GetObjectItem(root, "model"), "path") : NULL;
    const cJSON *odd_archive = root ? cJSON_GetObjectItem(cJSON_GetObjectItem(root, "archive"), "path") : NULL;
    CHECK(b.data && ptq_utf8_valid(b.data) && cJSON_IsString(odd_model) && cJSON_IsString(odd_archive) &&
          strcmp(odd_model->valuestring, "a\nb\xef\xbf\xbd.onnx") == 0 &&
          strcmp(odd_archive->valuestring, "c\xef\xbf\xbd.h5") == 0);
    cJSON_Delete(root);
    ptq_buf_free(&b);
}

/* ---- --write DIR: the fixed set tests/export_test.py checks ---- */

static uint64_t sm_state = 20261129;

static uint64_t splitmix(void)
{
    uint64_t z = (sm_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform01(void)
{
    return (double)(splitmix() >> 11) * (1.0 / 9007199254740992.0);
}

static int write_file(const char *dir, const char *name, const void *data, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        return 0;
    }
    return 1;
}

static int write_all(const char *dir)
{
    enum { N = 56 };
    static char names[N][400];
    static const char *fixed[] = {
        "input", "output", "onnx::Conv_12", "/layer1/layer1.0/conv1/Conv_output_0", "conv1:0", "a", "a.b", "a/b",
        "ab", "A", "B_upper", "r\xc3\xa9sum\xc3\xa9", "\xe5\xbc\xa0\xe9\x87\x8f", "emoji_\xf0\x9f\x98\x80",
        "with space", "q\"uote\\back", "tab\there", "del\x7f", "x.1", "x.10", "x.2", "~tilde", "zero_a", "zero_b",
    };
    ptq_tensor_range r[N];
    int n_fixed = (int)(sizeof fixed / sizeof fixed[0]);
    for (int i = 0; i < N; i++) {
        if (i < n_fixed) {
            snprintf(names[i], sizeof names[i], "%s", fixed[i]);
        } else if (i == n_fixed) {
            memset(names[i], 'L', 300); /* a long name */
            names[i][300] = '\0';
        } else {
            static const char *pat[] = {"/blocks.%d/attn/MatMul_output_0", "onnx::Add_%d", "feat:%d", "t%d.\xce\xbb"};
            snprintf(names[i], sizeof names[i], pat[i % 4], i);
        }
        /* amax log-uniform over 1e-6 .. 1e6, with exact and awkward values mixed in */
        double amax = exp(log(1e-6) + uniform01() * (log(1e6) - log(1e-6)));
        static const double special[] = {1.0, 127.0, 0.1, 1e-5, 3e38, 1e16, 123456.75, 1e-30};
        if (i % 7 == 3)
            amax = special[(i / 7) % 8];
        r[i] = rng(names[i], amax);
        r[i].method = (ptq_calib_method)(i % 4);
        r[i].percentile = r[i].method == PTQ_CALIB_PERCENTILE ? (i % 8 == 2 ? 99.99 : 99.999) : 0;
        r[i].r.clipped_fraction = uniform01() * 1e-3;
        if (strncmp(names[i], "zero_", 5) == 0) {
            r[i].r.amax = r[i].r.scale = r[i].r.clipped_fraction = 0;
            r[i].r.degenerate = 1;
        }
    }
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_buf b = {0};
    int ok = 1;
    struct {
        const char *file;
        int which;
    } outs[] = {{"trt.cache", 0}, {"calibration.flatbuffers", 1}, {"calibration.cache", 2},
                {"calibration.json", 3}, {"ranges.json", 4}};
    ptq_export_json_meta meta = {"models/fmnist_resnet.onnx",
                                 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "calib.h5"};
    for (size_t k = 0; k < sizeof outs / sizeof outs[0]; k++) {
        ptq_status st = PTQ_OK;
        switch (outs[k].which) {
        case 0: st = ptq_export_trt_cache(&ctx, NULL, r, N, &b, NULL); break;
        case 1: st = ptq_export_ort_flatbuffers(&ctx, r, N, &b, NULL); break;
        case 2: st = ptq_export_ort_cache(&ctx, r, N, &b, NULL); break;
        case 3: st = ptq_export_ort_json(&ctx, r, N, &b, NULL); break;
        default: st = ptq_export_json(&ctx, &meta, r, N, &b, NULL); break;
        }
        if (st != PTQ_OK) {
            fprintf(stderr, "%s: %s: %s (%s)\n", outs[k].file, ptq_status_name(st), ctx.msg, ctx.where);
            return 0;
        }
        ok = ok && write_file(dir, outs[k].file, b.data, b.n_bytes);
        ptq_buf_free(&b);
    }
    /* ranges.txt: "amax degenerate method percentile name" per line, amax and p exact */
    for (int i = 0; i < N && ok; i++) {
        ok = ptq_buf_appendf(&ctx, &b, "%a %d %d %a %s\n", r[i].r.amax, r[i].r.degenerate, (int)r[i].method,
                             r[i].percentile, r[i].name) == PTQ_OK;
    }
    ok = ok && write_file(dir, "ranges.txt", b.data, b.n_bytes);
    ptq_buf_free(&b);
    /* repr.txt: "hexfloat repr" for doubles of every kind, compared with Python's repr */
    for (int i = 0; i < 20000 && ok; i++) {
        double x;
        uint64_t bits = splitmix();
        switch (i % 5) {
        case 0: memcpy(&x, &bits, sizeof x); break;                                         /* any bits */
        case 1: x = (double)(float)(uniform01() * pow(10, (int)(bits % 80) - 40)); break; /* float32s */
        case 2: x = (double)(bits % 100000) / pow(10, (int)(bits >> 60)); break;          /* decimals */
        case 3: x = ldexp(1.0, (int)(bits % 2098) - 1074); break;                         /* powers of 2 */
        default: x = uniform01() * pow(10, (int)(bits % 40) - 20); break;
        }
        if (!isfinite(x))
            continue;
        char s[40];
        ptq_export_format_double(x, s, sizeof s);
        ok = ptq_buf_appendf(&ctx, &b, "%a %s\n", x, s) == PTQ_OK;
    }
    ok = ok && write_file(dir, "repr.txt", b.data, b.n_bytes);
    ptq_buf_free(&b);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--write") == 0) {
        mkdir(argv[2], 0777);
        return write_all(argv[2]) ? 0 : 1;
    }
    test_format_double();
    test_trt_cache();
    test_refusals();
    test_ort_flatbuffers();
    test_ort_text();
    test_ptq_json();
    test_asymmetric();
    return test_done("test_export");
}
