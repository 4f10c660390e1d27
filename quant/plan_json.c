/* Precision plans as JSON (include/ptq/plan.h):
 *   {"format": "ptq-plan", "format_version": 1,
 *    "model": {"name": ..., "sha256": ...}, "archive": ..., "method": ..., "core": "int8",
 *    "tensors": [{"name": ..., "kind": "activation" | "weight", "precision": "int8" | "fp8-e4m3" |
 *                 "fp8-e5m2" | "fp16" | "fp32", "axis": -1 | k, "scales": [...], "source": ...,
 *                 "rule": ...}, ...]}
 * "placement" (after "core") and each entry's "rule" are written for plans
 * placed by trt or ort, not for --placement all (whose plans are as before);
 * both are optional when read, but a rule must be one of the table's, of
 * the plan's placement (or, without one, of one placement), of the entry's
 * kind, and ort.removed-activation of target ort-cpu, and placement one of
 * trt, ort, all; "core", when there, is int8 or an fp8 (absent: the format
 * of the first quantized entry but a uint8 one, int8 without one);
 * every optional string field is a string when present. "target": "ort-cpu" follows (absent: trt),
 * then "reduce_range": true for a plan whose INT8 weights use onnxruntime's
 * reduce_range grid (absent: false), and a uint8 entry has "zero_point": n after "scales" (absent: 0).
 * An entry with blocks (block_size > 0) also has "block_size": n and
 * "block_scales": [...] after "scales"; entries without have neither.
 * Numbers are the shortest decimals that read back to the same value.
 * Covered by tests/test_plan.c and tests/cli_plan_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/json.h"
#include "ptq/export.h"
#include "ptq/plan.h"
#include "quant/placement.h"

#define PLAN_FORMAT "ptq-plan"
#define PLAN_VERSION 1

static cJSON *number(double x)
{
    char text[40];
    ptq_export_format_double(x, text, sizeof text);
    return cJSON_CreateRaw(text);
}

/* Appends x[n] to the array arr as shortest decimals; 0 when out of memory. */
static int add_numbers(cJSON *arr, const float *x, int64_t n)
{
    for (int64_t c = 0; c < n; c++) {
        cJSON *v = number((double)x[c]);
        if (!v || !cJSON_AddItemToArray(arr, v)) {
            cJSON_Delete(v);
            return 0;
        }
    }
    return 1;
}

ptq_status ptq_plan_to_json(ptq_ctx *ctx, const ptq_plan *p, char **out)
{
    *out = NULL;
    /* every item joins its parent as it is made, so deleting root frees all */
    cJSON *root = cJSON_CreateObject();
    cJSON *model = root ? cJSON_AddObjectToObject(root, "model") : NULL;
    int ok = model && cJSON_AddStringToObject(root, "format", PLAN_FORMAT) &&
             cJSON_AddNumberToObject(root, "format_version", PLAN_VERSION) &&
             ptq_json_add_text(model, "name", p->model_name) &&
             cJSON_AddStringToObject(model, "sha256", p->model_sha256) &&
             ptq_json_add_text(root, "archive", p->archive) &&
             cJSON_AddStringToObject(root, "method", p->method ? p->method : "") &&
             cJSON_AddStringToObject(root, "core", ptq_prec_name(p->core));
    /* plans of --placement all stay byte for byte as ptq wrote them before placement existed */
    const int placed = p->placement && p->placement[0] && strcmp(p->placement, "all") != 0;
    ok = ok && (!placed || cJSON_AddStringToObject(root, "placement", p->placement));
    ok = ok && (p->target == PTQ_TARGET_TRT || cJSON_AddStringToObject(root, "target", ptq_target_name(p->target)));
    ok = ok && (!p->reduce_range || cJSON_AddTrueToObject(root, "reduce_range"));
    cJSON *tensors = ok ? cJSON_AddArrayToObject(root, "tensors") : NULL;
    ok = ok && tensors;
    for (int64_t i = 0; ok && i < p->n; i++) {
        const ptq_plan_entry *e = &p->e[i];
        cJSON *t = cJSON_CreateObject();
        ok = t && cJSON_AddItemToArray(tensors, t);
        if (!ok) {
            cJSON_Delete(t);
            break;
        }
        cJSON *scales = NULL;
        ok = cJSON_AddStringToObject(t, "name", e->name) &&
             cJSON_AddStringToObject(t, "kind", e->is_weight ? "weight" : "activation") &&
             cJSON_AddStringToObject(t, "precision", ptq_prec_name(e->prec)) &&
             cJSON_AddNumberToObject(t, "axis", e->axis) && (scales = cJSON_AddArrayToObject(t, "scales")) != NULL;
        ok = ok && add_numbers(scales, e->scales, e->n_scales);
        if (ok && (e->prec == PTQ_PREC_UINT8 || e->zero_point != 0))
            ok = cJSON_AddNumberToObject(t, "zero_point", e->zero_point) != NULL;
        if (ok && e->block_size > 0) {
            cJSON *blocks = NULL;
            ok = cJSON_AddNumberToObject(t, "block_size", (double)e->block_size) &&
                 (blocks = cJSON_AddArrayToObject(t, "block_scales")) != NULL &&
                 add_numbers(blocks, e->block_scales, e->n_block_scales);
        }
        ok = ok && cJSON_AddStringToObject(t, "source", e->source ? e->source : "");
        if (ok && placed && e->rule && e->rule[0])
            ok = cJSON_AddStringToObject(t, "rule", e->rule) != NULL;
    }
    char *text = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory writing a plan");
    *out = text;
    return PTQ_OK;
}

static const char *get_string(const cJSON *o, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

/* The optional string o[key] into *out (NULL when absent); anything but a string is refused, naming the
 * tensor (entry) or, without one, the plan. */
static ptq_status opt_string(ptq_ctx *ctx, const cJSON *o, const char *key, const char *entry, const char **out)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = cJSON_IsString(x) ? x->valuestring : NULL;
    if (!x || *out)
        return PTQ_OK;
    if (entry)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "plan tensor '%s': \"%s\" is not a string", entry, key);
    return ptq_fail(ctx, PTQ_ERR_FORMAT, "plan: \"%s\" is not a string", key);
}

static ptq_status bad(ptq_ctx *ctx, const char *what, int64_t entry)
{
    if (entry < 0)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "not a ptq plan: %s", what);
    return ptq_fail(ctx, PTQ_ERR_FORMAT, "plan tensor %lld: %s", (long long)entry, what);
}

/* The n numbers of JSON array arr into out[n]; what names one ("scale") for errors on tensor name. */
static ptq_status read_numbers(ptq_ctx *ctx, const cJSON *arr, int n, const char *name, const char *what, float *out)
{
    int c = 0;
    const cJSON *x = NULL;
    cJSON_ArrayForEach(x, arr) /* ->next: cJSON_GetArrayItem in a loop is quadratic */
    {
        if (c == n || !cJSON_IsNumber(x))
            return ptq_fail(ctx, PTQ_ERR_FORMAT, "plan tensor '%s': %s [%d] is not a number", name, what, c);
        out[c++] = (float)x->valuedouble;
    }
    return PTQ_OK;
}

/* The optional "block_size" (an integer >= 1) and "block_scales" of entry t. */
static ptq_status read_blocks(ptq_ctx *ctx, const cJSON *t, const char *name, ptq_plan_entry *e)
{
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(t, "block_size");
    const cJSON *blocks = cJSON_GetObjectItemCaseSensitive(t, "block_scales");
    if (!size && !blocks)
        return PTQ_OK;
    if (!size || !(cJSON_IsNumber(size) && size->valuedouble == floor(size->valuedouble) && size->valuedouble >= 1 &&
                   size->valuedouble < 9007199254740992.0))
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "plan tensor '%s': \"block_size\" is not an integer >= 1", name);
    if (!cJSON_IsArray(blocks))
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "plan tensor '%s': \"block_scales\" is not an array", name);
    const int n = cJSON_GetArraySize(blocks);
    e->block_size = (int64_t)size->valuedouble;
    if (!(e->block_scales = malloc(((size_t)n + 1) * sizeof *e->block_scales)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory reading a plan");
    e->n_block_scales = n;
    return read_numbers(ctx, blocks, n, name, "block scale", e->block_scales);
}

static ptq_status read_entry(ptq_ctx *ctx, const cJSON *t, int64_t i, ptq_plan_entry *e)
{
    const char *name = get_string(t, "name"), *kind = get_string(t, "kind"), *prec = get_string(t, "precision");
    const cJSON *axis = cJSON_GetObjectItemCaseSensitive(t, "axis");
    const cJSON *scales = cJSON_GetObjectItemCaseSensitive(t, "scales");
    if (!cJSON_IsObject(t) || !name || !name[0] || !kind || !prec)
        return bad(ctx, "wants a non-empty \"name\", \"kind\" and \"precision\"", i);
    if (strcmp(kind, "activation") != 0 && strcmp(kind, "weight") != 0)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "plan tensor '%s': kind '%s' is neither activation nor weight", name, kind);
    if (ptq_prec_parse(ctx, prec, &e->prec) != PTQ_OK)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "plan tensor '%s': unknown precision '%s'", name, prec);
    if (axis && !(cJSON_IsNumber(axis) && axis->valuedouble == floor(axis->valuedouble) &&
                  fabs(axis->valuedouble) < 64))
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "plan tensor '%s': \"axis\" is not a small integer", name);
    if (scales && !cJSON_IsArray(scales))
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "plan tensor '%s': \"scales\" is not an array", name);
    const char *source = NULL, *rule = NULL;
    PTQ_TRY_RET(opt_string(ctx, t, "source", name, &source));
    PTQ_TRY_RET(opt_string(ctx, t, "rule", name, &rule));
    if (rule && !ptq_placement_rule_why(rule))
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "plan tensor '%s': \"rule\" '%s' is no placement rule ptq has (`ptq "
                                             "plan --explain` lists them; leave it out of a hand-made entry)",
                        name, rule);
    e->is_weight = strcmp(kind, "weight") == 0;
    e->axis = axis ? (int)axis->valuedouble : -1;
    e->name = strdup(name);
    e->source = strdup(source ? source : "edited");
    const cJSON *zp = cJSON_GetObjectItemCaseSensitive(t, "zero_point");
    if (zp && !(cJSON_IsNumber(zp) && zp->valuedouble == floor(zp->valuedouble) && fabs(zp->valuedouble) < 65536))
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "plan tensor '%s': \"zero_point\" is not an integer", name);
    e->zero_point = zp ? (int32_t)zp->valuedouble : 0;
    if (rule && !(e->rule = strdup(rule)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory reading a plan");
    const int n = scales ? cJSON_GetArraySize(scales) : 0;
    e->scales = malloc(((size_t)n + 1) * sizeof *e->scales);
    if (!e->name || !e->source || !e->scales)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory reading a plan");
    e->n_scales = n;
    ptq_status st = read_numbers(ctx, scales, n, name, "scale", e->scales);
    return st == PTQ_OK ? read_blocks(ctx, t, name, e) : st;
}

/* Every entry's rule one of the plan's placement (when it names none, the placement of the first entry whose rule
 * belongs to one), of its kind (no weight rule on an activation, no activation rule on a weight), and
 * ort.removed-activation only in a plan of target ort-cpu, whose uint8 activations quantize_static's removal
 * needs: a rule of another placement or kind would explain the entry by a decision the placement never makes. */
static ptq_status check_rules(ptq_ctx *ctx, const ptq_plan *p)
{
    ptq_placement placed = PTQ_PLACEMENT_TRT;
    int owner = p->placement && ptq_placement_parse(ctx, p->placement, &placed) == PTQ_OK ? (int)placed : -1;
    const char *said = NULL; /* the entry that decided the placement when the plan names none */
    for (int64_t i = 0; i < p->n; i++) {
        const ptq_plan_entry *e = &p->e[i];
        int weights_only = 0;
        const int of = e->rule ? ptq_placement_rule_owner(e->rule, &weights_only) : -1;
        if (e->rule && (weights_only != 0) != (e->is_weight != 0) && (weights_only || of >= 0))
            return ptq_fail(ctx, PTQ_ERR_FORMAT, "plan tensor '%s': \"rule\" '%s' is a rule of %s, and the entry is "
                            "%s", e->name, e->rule, weights_only ? "weights" : "activations",
                            e->is_weight ? "a weight" : "an activation");
        if (of >= 0 && owner >= 0 && of != owner && said)
            return ptq_fail(ctx, PTQ_ERR_FORMAT, "plan tensor '%s': \"rule\" '%s' is a rule of placement %s, and "
                            "tensor '%s' has one of placement %s: one placement places a plan (`ptq plan --explain` "
                            "lists the rules; leave the rule out of a hand-made entry)", e->name, e->rule,
                            ptq_placement_name((ptq_placement)of), said, ptq_placement_name((ptq_placement)owner));
        if (of >= 0 && owner >= 0 && of != owner)
            return ptq_fail(ctx, PTQ_ERR_FORMAT, "plan tensor '%s': \"rule\" '%s' is a rule of placement %s, not of "
                            "the plan's %s (`ptq plan --explain` lists the rules; leave the rule out of a hand-made "
                            "entry)", e->name, e->rule, ptq_placement_name((ptq_placement)of),
                            ptq_placement_name((ptq_placement)owner));
        if (of >= 0 && owner < 0) {
            owner = of;
            said = e->name;
        }
        if (e->rule && strcmp(e->rule, "ort.removed-activation") == 0 && p->target != PTQ_TARGET_ORT_CPU)
            return ptq_fail(ctx, PTQ_ERR_FORMAT, "plan tensor '%s': \"rule\" '%s' is for target ort-cpu (uint8 "
                            "activations), and the plan's target is %s", e->name, e->rule,
                            ptq_target_name(p->target));
    }
    return PTQ_OK;
}

ptq_status ptq_plan_from_json(ptq_ctx *ctx, const char *text, ptq_plan **out)
{
    ptq_status st = PTQ_OK;
    *out = NULL;
    cJSON *root = NULL;
    PTQ_TRY_RET(ptq_json_parse(ctx, text, "not a ptq plan", &root));
    ptq_plan *p = calloc(1, sizeof *p);
    if (!p) {
        cJSON_Delete(root);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory reading a plan");
    }
    const char *format = get_string(root, "format");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "format_version");
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(root, "tensors");
    const char *sha = model ? get_string(model, "sha256") : NULL;
    if (!format || strcmp(format, PLAN_FORMAT) != 0 || !cJSON_IsNumber(version)) {
        st = bad(ctx, "no \"format\": \"ptq-plan\" with a \"format_version\"", -1);
        goto done;
    }
    if (version->valuedouble != PLAN_VERSION) {
        st = ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "a version %g plan; this ptq reads version %d", version->valuedouble,
                      PLAN_VERSION);
        goto done;
    }
    if (!sha || strlen(sha) != 64 || !cJSON_IsArray(tensors)) {
        st = bad(ctx, "wants \"model\": {\"sha256\": 64 hex digits} and a \"tensors\" array", -1);
        goto done;
    }
    memcpy(p->model_sha256, sha, 65);
    const char *model_name = NULL, *archive = NULL, *method = NULL, *placement = NULL, *core = NULL;
    ptq_placement placed;
    ptq_prec core_prec = PTQ_PREC_INT8;
    if ((st = opt_string(ctx, model, "name", NULL, &model_name)) != PTQ_OK ||
        (st = opt_string(ctx, root, "archive", NULL, &archive)) != PTQ_OK ||
        (st = opt_string(ctx, root, "method", NULL, &method)) != PTQ_OK ||
        (st = opt_string(ctx, root, "placement", NULL, &placement)) != PTQ_OK ||
        (st = opt_string(ctx, root, "core", NULL, &core)) != PTQ_OK)
        goto done;
    if (placement && ptq_placement_parse(ctx, placement, &placed) != PTQ_OK) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "plan: \"placement\" '%s' is not one of trt, ort, all", placement);
        goto done;
    }
    /* the core precisions ptq_plan_settings_check allows */
    if (core && (ptq_prec_parse(ctx, core, &core_prec) != PTQ_OK ||
                 !(core_prec == PTQ_PREC_INT8 || core_prec == PTQ_PREC_FP8_E4M3 || core_prec == PTQ_PREC_FP8_E5M2))) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "plan: \"core\" '%s' is not a core precision (int8, fp8-e4m3, fp8-e5m2)",
                      core);
        goto done;
    }
    p->core = core_prec;
    p->model_name = strdup(model_name ? model_name : "");
    p->archive = strdup(archive ? archive : "");
    p->method = strdup(method ? method : "");
    if (placement && !(p->placement = strdup(placement))) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory reading a plan");
        goto done;
    }
    if (!p->model_name || !p->archive || !p->method) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory reading a plan");
        goto done;
    }
    const char *target = get_string(root, "target");
    if (cJSON_GetObjectItemCaseSensitive(root, "target") && (!target || ptq_target_parse(ctx, target, &p->target) != PTQ_OK)) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "plan: \"target\" is not one of trt, ort-cpu");
        goto done;
    }
    const cJSON *reduce_range = cJSON_GetObjectItemCaseSensitive(root, "reduce_range");
    if (reduce_range && !cJSON_IsBool(reduce_range)) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "plan: \"reduce_range\" is not true or false");
        goto done;
    }
    p->reduce_range = cJSON_IsTrue(reduce_range);
    const int n = cJSON_GetArraySize(tensors);
    if (!(p->e = calloc((size_t)n + 1, sizeof *p->e))) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory reading a plan");
        goto done;
    }
    int i = 0;
    const cJSON *t = NULL;
    cJSON_ArrayForEach(t, tensors)
    {
        p->n = i + 1; /* the entry is freed with the plan from here on */
        PTQ_TRY(st, read_entry(ctx, t, i, &p->e[i]), done);
        i++;
    }
    PTQ_TRY(st, check_rules(ctx, p), done);
    /* without "core", the format its entries quantize in (ptq_plan_check wants them all in it); int8 for none */
    for (int64_t k = 0; !core && k < p->n; k++)
        if (ptq_prec_is_quantized(p->e[k].prec) && p->e[k].prec != PTQ_PREC_UINT8) {
            p->core = p->e[k].prec;
            break;
        }
    *out = p;
    p = NULL;
done:
    cJSON_Delete(root);
    ptq_plan_free(p);
    return st;
}
