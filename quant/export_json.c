/* ptq's own JSON of ranges (cJSON for the structure; numbers written as the
 * shortest decimal that reads back to the same double, since cJSON's own
 * printing accepts 15 digits that are only close). Covered by
 * tests/test_export.c and tests/export_test.py. */
#include <inttypes.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/json.h"
#include "ptq/export.h"
#include "ptq/version.h"

/* Adds a number (raw text) or a string/null; a failed allocation leaves
 * the object short, which ptq_export_json detects by counting. */
static int add_number(cJSON *obj, const char *key, double x)
{
    char text[40];
    ptq_export_format_double(x, text, sizeof text);
    return cJSON_AddRawToObject(obj, key, text) != NULL;
}

/* s is a path from the command line: any bytes, made valid UTF-8 */
static int add_path_or_null(cJSON *obj, const char *key, const char *s)
{
    return (s ? ptq_json_add_text(obj, key, s) : cJSON_AddNullToObject(obj, key)) != NULL;
}

static int add_string_or_null(cJSON *obj, const char *key, const char *s)
{
    return (s ? cJSON_AddStringToObject(obj, key, s) : cJSON_AddNullToObject(obj, key)) != NULL;
}

static int sha256_valid(const char *s)
{
    if (strlen(s) != 64)
        return 0;
    for (; *s; s++) {
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
            return 0;
    }
    return 1;
}

ptq_status ptq_export_json(ptq_ctx *ctx, const ptq_export_json_meta *meta, const ptq_tensor_range *ranges,
                           int64_t n, ptq_buf *out, ptq_export_stats *stats)
{
    ptq_status st = PTQ_OK;
    ptq_export_stats s;
    ptq_export_json_meta none = {NULL, NULL, NULL};
    cJSON *root = NULL, *model = NULL, *archive = NULL, *tensors = NULL;
    char *text = NULL;
    int ok;
    memset(out, 0, sizeof *out);
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (!meta)
        meta = &none;
    PTQ_TRY(st, ptq_export_check(ctx, ranges, n, &s), done);
    if (meta->model_path && !meta->model_path[0])
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the model path is empty");
    if (meta->archive_path && !meta->archive_path[0])
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the archive path is empty");
    if (meta->model_sha256 && !sha256_valid(meta->model_sha256))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "model sha256 \"%s\" is not 64 lowercase hex digits",
                        meta->model_sha256);

    ok = (root = cJSON_CreateObject()) != NULL;
    ok = ok && cJSON_AddStringToObject(root, "format", "ptq-ranges");
    ok = ok && cJSON_AddRawToObject(root, "format_version", "1");
    ok = ok && cJSON_AddStringToObject(root, "ptq_version", PTQ_VERSION_STRING);
    ok = ok && (model = cJSON_AddObjectToObject(root, "model")) != NULL;
    ok = ok && add_path_or_null(model, "path", meta->model_path);
    ok = ok && add_string_or_null(model, "sha256", meta->model_sha256);
    ok = ok && (archive = cJSON_AddObjectToObject(root, "archive")) != NULL;
    ok = ok && add_path_or_null(archive, "path", meta->archive_path);
    ok = ok && (tensors = cJSON_AddArrayToObject(root, "tensors")) != NULL;
    for (int64_t i = 0; ok && i < n; i++) {
        const ptq_tensor_range *t = &ranges[i];
        int degenerate = t->r.degenerate || t->r.amax == 0;
        cJSON *e = cJSON_CreateObject();
        ok = e && cJSON_AddItemToArray(tensors, e);
        if (!ok) {
            cJSON_Delete(e);
            break;
        }
        ok = ok && cJSON_AddStringToObject(e, "name", t->name);
        ok = ok && add_number(e, "amax", degenerate ? 0.0 : t->r.amax);
        if (t->asymmetric) {
            ok = ok && add_number(e, "lowest", (double)t->lowest);
            ok = ok && add_number(e, "highest", (double)t->highest);
        }
        ok = ok && add_number(e, "scale", degenerate ? 0.0 : t->r.scale);
        ok = ok && cJSON_AddStringToObject(e, "method", ptq_calib_method_name(t->method));
        if (t->method == PTQ_CALIB_PERCENTILE)
            ok = ok && add_number(e, "percentile", t->percentile);
        ok = ok && cJSON_AddStringToObject(e, "format", ptq_qformat_name(t->format));
        ok = ok && add_number(e, "clipped_fraction", t->r.clipped_fraction);
        ok = ok && cJSON_AddBoolToObject(e, "degenerate", degenerate);
        s.n_written += ok;
    }
    if (ok)
        ok = (text = cJSON_Print(root)) != NULL;
    if (!ok) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory writing the JSON of %" PRId64 " ranges", n);
        goto done;
    }
    PTQ_TRY(st, ptq_buf_append(ctx, out, text, strlen(text)), done);
    PTQ_TRY(st, ptq_buf_append(ctx, out, "\n", 1), done);
    if (stats)
        *stats = s;
done:
    if (st != PTQ_OK)
        ptq_buf_free(out);
    cJSON_free(text);
    cJSON_Delete(root);
    return st;
}
