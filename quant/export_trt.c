/* TensorRT INT8 calibration cache ("TRT-<version>-<algorithm>", then
 * "name: <hex bits of the float32 scale amax/127>" per tensor), the text
 * TensorRT's IInt8Calibrator::readCalibrationCache and ORT's TensorRT EP
 * read (REFERENCE.md). Covered by tests/test_export.c, tests/export_test.py. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "ptq/export.h"

int ptq_trt_cache_version(int major, int minor, int patch)
{
    return major >= 10 ? major * 10000 + minor * 100 + patch : major * 1000 + minor * 100 + patch;
}

static ptq_status check_params(ptq_ctx *ctx, const ptq_trt_cache_params *p, int *version, const char **algorithm)
{
    *version = p && p->version ? p->version : PTQ_TRT_CACHE_VERSION_DEFAULT;
    *algorithm = p && p->algorithm ? p->algorithm : PTQ_TRT_CACHE_ALGORITHM_DEFAULT;
    if (*version < 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "TensorRT cache version must be > 0, got %d", *version);
    if (!(*algorithm)[0])
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "TensorRT cache algorithm is empty");
    for (const unsigned char *c = (const unsigned char *)*algorithm; *c; c++) {
        if (*c == ':' || *c <= ' ' || *c >= 0x7F)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                            "TensorRT cache algorithm \"%s\" may hold no ':', whitespace or non-ASCII byte",
                            *algorithm);
    }
    return PTQ_OK;
}

ptq_status ptq_export_trt_cache(ptq_ctx *ctx, const ptq_trt_cache_params *p, const ptq_tensor_range *ranges,
                                int64_t n, ptq_buf *out, ptq_export_stats *stats)
{
    ptq_status st = PTQ_OK;
    ptq_export_stats s;
    ptq_buf b = {0};
    int version;
    const char *algorithm;
    memset(out, 0, sizeof *out);
    if (stats)
        memset(stats, 0, sizeof *stats);
    PTQ_TRY(st, check_params(ctx, p, &version, &algorithm), done);
    PTQ_TRY(st, ptq_export_check_lines(ctx, ranges, n, &s), done);
    for (int64_t i = 0; i < n; i++) {
        const ptq_tensor_range *t = &ranges[i];
        if (t->format != PTQ_QFORMAT_INT8) {
            st = ptq_fail(ctx, PTQ_ERR_UNSUPPORTED,
                          "tensor \"%s\": a TensorRT calibration cache holds INT8 scales only, this range is %s "
                          "(export FP8 ranges as a Q/DQ model)",
                          t->name, ptq_qformat_name(t->format));
            goto done;
        }
    }
    PTQ_TRY(st, ptq_buf_appendf(ctx, &b, "TRT-%d-%s\n", version, algorithm), done);
    for (int64_t i = 0; i < n; i++) {
        const ptq_tensor_range *t = &ranges[i];
        if (t->r.degenerate || t->r.amax == 0)
            continue;
        if (ptq_export_range_tiny(t)) {
            s.n_tiny++;
            continue;
        }
        float scale = (float)(t->r.amax / ptq_qformat_max(PTQ_QFORMAT_INT8));
        if (!(scale >= FLT_MIN) || isinf(scale)) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                          "tensor \"%s\": amax %.9g gives the scale %.9g, not a normal float32 as TensorRT needs",
                          t->name, t->r.amax, (double)scale);
            goto done;
        }
        uint32_t bits;
        memcpy(&bits, &scale, sizeof bits);
        PTQ_TRY(st, ptq_buf_appendf(ctx, &b, "%s: %08" PRIx32 "\n", t->name, bits), done);
        s.n_written++;
    }
    *out = b;
    b = (ptq_buf){0};
    if (stats)
        *stats = s;
done:
    ptq_buf_free(&b);
    return st;
}
