/* Reads a sensitivity report and a planner trace back from their JSON for
 * the HTML pages (reports/sens_view.h): the input is hostile, so every
 * field is checked for its type, a missing figure is NAN (drawn as "not
 * measured"), and a wrong shape fails with PTQ_ERR_FORMAT naming what is
 * off. Covered by tests/test_sens_html.c. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "reports/sens_view.h"

#define MAX_CLASSES (1 << 20)

static double num(const cJSON *o, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(x) && isfinite(x->valuedouble) ? x->valuedouble : NAN;
}

static char *dup_str(const cJSON *o, const char *key, int *oom)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(x))
        return NULL;
    char *s = strdup(x->valuestring);
    *oom |= !s;
    return s;
}

/* o[key] into dst when it is a string of 64 characters (a SHA-256 in hex), else "". */
static void copy_sha256(char dst[65], const cJSON *o, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    dst[0] = '\0';
    if (cJSON_IsString(x) && strlen(x->valuestring) == 64)
        memcpy(dst, x->valuestring, 65);
}

/* A class index in [0, k), else -1. */
static int class_index(const cJSON *o, int k)
{
    const double i = num(o, "index");
    return i >= 0 && i < k && i == floor(i) ? (int)i : -1;
}

/* json parsed when it is an object of this "format" whose key is a
 * non-empty array (*arr); else NULL and PTQ_ERR_FORMAT in ctx. */
static cJSON *parse_report(ptq_ctx *ctx, const char *json, const char *format, const char *key, const char *what,
                           const cJSON **arr)
{
    cJSON *root = cJSON_Parse(json);
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    *arr = cJSON_GetObjectItemCaseSensitive(root, key);
    if (cJSON_IsObject(root) && cJSON_IsString(fmt) && strcmp(fmt->valuestring, format) == 0 && cJSON_IsArray(*arr) &&
        cJSON_GetArraySize(*arr) > 0)
        return root;
    cJSON_Delete(root);
    ptq_fail(ctx, PTQ_ERR_FORMAT, "not a %s (format \"%s\" with %s)", what, format, key);
    return NULL;
}

void sens_view_free(sens_view *v)
{
    if (!v)
        return;
    for (int64_t i = 0; v->t && i < v->n; i++)
        free(v->t[i].name);
    for (int c = 0; v->class_names && c < v->k; c++)
        free(v->class_names[c]);
    free(v->class_names);
    free(v->t);
    free(v->harm);
    free(v->header_json);
    memset(v, 0, sizeof *v);
}

const char *sens_view_class(const sens_view *v, int c, char *buf, int n_bytes)
{
    if (c >= 0 && c < v->k && v->class_names[c])
        return v->class_names[c];
    snprintf(buf, (size_t)n_bytes, "%d", c);
    return buf;
}

/* 1 when a comes before b in harm order (as sens.md): measured first, then
 * more top-1 lost, then lower SQNR. */
static int more_harmful(const sens_row *a, const sens_row *b)
{
    if (a->measured_a != b->measured_a)
        return a->measured_a;
    const double da = isnan(a->only_delta_pts) ? 0 : a->only_delta_pts;
    const double db = isnan(b->only_delta_pts) ? 0 : b->only_delta_pts;
    if (da != db)
        return da < db;
    const double x = isnan(a->only_sqnr_db) ? INFINITY : a->only_sqnr_db;
    const double y = isnan(b->only_sqnr_db) ? INFINITY : b->only_sqnr_db;
    return x < y;
}

static void row_read(const cJSON *t, int k, sens_row *r, int *oom)
{
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(t, "kind");
    const cJSON *prec = cJSON_GetObjectItemCaseSensitive(t, "precision_default");
    const cJSON *only = cJSON_GetObjectItemCaseSensitive(t, "only");
    const cJSON *all_but = cJSON_GetObjectItemCaseSensitive(t, "all_but");
    r->name = dup_str(t, "name", oom);
    r->is_weight = cJSON_IsString(kind) && strcmp(kind->valuestring, "weight") == 0;
    snprintf(r->prec_default, sizeof r->prec_default, "%s", cJSON_IsString(prec) ? prec->valuestring : "?");
    r->measured_a = cJSON_IsObject(only);
    r->only_delta_pts = num(only, "top1_delta_pts");
    r->only_sqnr_db = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(only, "sqnr_infinite")) ? INFINITY
                                                                                          : num(only, "sqnr_db");
    r->only_kl_nats = num(only, "kl_nats");
    r->only_agreement = num(only, "agreement");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(only, "worst_class");
    r->worst = class_index(w, k);
    r->worst_drop_pts = num(w, "recall_drop_pts");
    const cJSON *mb = cJSON_GetObjectItemCaseSensitive(all_but, "measured");
    r->measured_b = cJSON_IsTrue(mb);
    r->recovered_pts = r->measured_b ? num(all_but, "recovered_pts") : NAN;
}

/* Where a report's or trace's plans keep a tensor out of quantization:
 * FP32 for target ort-cpu (onnxruntime's CPU kernels have no FP16), else FP16. */
static const char *kept_in(const cJSON *root)
{
    const cJSON *target = cJSON_GetObjectItemCaseSensitive(root, "target");
    return cJSON_IsString(target) && strcmp(target->valuestring, "ort-cpu") == 0 ? "FP32" : "FP16";
}

ptq_status sens_view_read(ptq_ctx *ctx, const char *json, sens_view *v)
{
    ptq_status st = PTQ_OK;
    int oom = 0;
    memset(v, 0, sizeof *v);
    const cJSON *arr;
    cJSON *root = parse_report(ctx, json, "ptq-sensitivity", "tensors", "ptq sensitivity report", &arr);
    if (!root)
        return PTQ_ERR_FORMAT;
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(root, "class_names");
    const double k = num(root, "classes");
    if (!(k >= 1 && k <= MAX_CLASSES && k == floor(k))) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "sensitivity report: \"classes\" must be a count in [1, %d]", MAX_CLASSES);
        goto done;
    }
    v->k = (int)k;
    copy_sha256(v->model_sha256, root, "model_sha256");
    copy_sha256(v->archive_sample_ids_sha256, root, "archive_sample_ids_sha256");
    const double samples = num(root, "samples");
    v->samples = samples >= 0 && samples < 9e18 ? (int64_t)samples : 0;
    v->top1_fp32 = num(root, "top1_fp32");
    v->top1_default = num(cJSON_GetObjectItemCaseSensitive(root, "default_plan"), "top1");
    v->n = cJSON_GetArraySize(arr);
    v->class_names = calloc((size_t)v->k, sizeof *v->class_names);
    v->t = calloc((size_t)v->n + 1, sizeof *v->t);
    v->harm = calloc((size_t)v->n + 1, sizeof *v->harm);
    if (!v->class_names || !v->t || !v->harm) {
        oom = 1;
        goto done;
    }
    const cJSON *nm = cJSON_IsArray(names) ? names->child : NULL; /* ->next: cJSON_GetArrayItem is quadratic */
    for (int c = 0; c < v->k && nm; c++, nm = nm->next)
        if (cJSON_IsString(nm))
            oom |= !(v->class_names[c] = strdup(nm->valuestring));
    int64_t i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, arr)
    {
        if (!cJSON_IsObject(t) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(t, "name"))) {
            st = ptq_fail(ctx, PTQ_ERR_FORMAT, "sensitivity report: tensor %lld is not an object with a name",
                          (long long)i);
            goto done;
        }
        row_read(t, v->k, &v->t[i], &oom);
        int64_t j = i; /* insertion sort: stable, report order among equals */
        while (j > 0 && more_harmful(&v->t[i], &v->t[v->harm[j - 1]])) {
            v->harm[j] = v->harm[j - 1];
            j--;
        }
        v->harm[j] = i++;
    }
    v->kept_in = kept_in(root);
    /* the header: the report's own string and number fields (and reduce_range, written only when true), for the
     * summary; not seconds or runs: the page is the same whatever the machine or process count */
    cJSON *hdr = cJSON_CreateObject();
    static const char *const keys[] = {"model", "model_sha256", "archive", "data", "data_sha256", "preprocess",
                                       "core", "reduce_range", "target", "method", "device", "seed", "math", "ptq_version"};
    for (size_t q = 0; hdr && q < sizeof keys / sizeof keys[0]; q++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(root, keys[q]);
        if (cJSON_IsString(x) || cJSON_IsNumber(x) || cJSON_IsTrue(x))
            cJSON_AddItemToObject(hdr, keys[q], cJSON_Duplicate(x, 0));
    }
    v->header_json = hdr ? cJSON_PrintUnformatted(hdr) : NULL;
    oom |= !v->header_json;
    cJSON_Delete(hdr);
done:
    cJSON_Delete(root);
    if (st == PTQ_OK && oom)
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory reading a sensitivity report");
    if (st != PTQ_OK)
        sens_view_free(v);
    return st;
}

void trace_view_free(trace_view *v)
{
    if (!v)
        return;
    for (int64_t i = 0; v->s && i < v->n; i++) {
        free(v->s[i].moved);
        free(v->s[i].worst_name);
    }
    free(v->s);
    memset(v, 0, sizeof *v);
}

ptq_status trace_view_read(ptq_ctx *ctx, const char *json, trace_view *v)
{
    ptq_status st = PTQ_OK;
    int oom = 0;
    memset(v, 0, sizeof *v);
    const cJSON *arr;
    cJSON *root = parse_report(ctx, json, "ptq-plan-trace", "steps", "ptq plan trace", &arr);
    if (!root)
        return PTQ_ERR_FORMAT;
    copy_sha256(v->model_sha256, cJSON_GetObjectItemCaseSensitive(root, "model"), "sha256");
    v->budget_pts = num(root, "budget_pts");
    v->class_budget_pts = num(root, "class_budget_pts");
    v->met = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "met"));
    v->top1_fp32 = num(root, "top1_fp32");
    v->kept_in = kept_in(root);
    const int n = cJSON_GetArraySize(arr);
    if (!(v->s = calloc((size_t)n, sizeof *v->s))) {
        oom = 1;
        goto done;
    }
    const cJSON *o;
    cJSON_ArrayForEach(o, arr)
    {
        if (!cJSON_IsObject(o)) {
            st = ptq_fail(ctx, PTQ_ERR_FORMAT, "plan trace: step %lld is not an object", (long long)v->n);
            goto done;
        }
        trace_step *s = &v->s[v->n++];
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, "worst_class");
        s->moved = dup_str(o, "moved_to_fp16", &oom);
        if (!s->moved) /* target ort-cpu moves to FP32 */
            s->moved = dup_str(o, "moved_to_fp32", &oom);
        s->top1 = num(o, "top1");
        s->top1_drop_pts = num(o, "top1_drop_pts");
        const double wi = num(w, "index");
        s->worst = wi >= 0 && wi < MAX_CLASSES && wi == floor(wi) ? (int)wi : -1;
        s->worst_name = dup_str(w, "name", &oom);
        s->worst_drop_pts = num(w, "recall_drop_pts");
        const double f = cJSON_GetObjectItemCaseSensitive(o, "fp32_tensors") ? num(o, "fp32_tensors")
                                                                               : num(o, "fp16_tensors");
        s->n_fp16 = f >= 0 && f < 9e18 ? (int64_t)f : -1;
    }
done:
    cJSON_Delete(root);
    if (st == PTQ_OK && oom)
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory reading a plan trace");
    if (st != PTQ_OK)
        trace_view_free(v);
    return st;
}
