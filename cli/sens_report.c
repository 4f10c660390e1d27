/* The sensitivity report `ptq plan --budget` and `ptq validate --sensitivity`
 * read: one reader (ptq_sens_read, ptq_sens_check) for both, every failure
 * naming the file. Covered by tests/cli_sensitivity_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"

ptq_status cli_sens_load(ptq_ctx *ctx, const char *path, const ptq_graph *g, const char *model_sha256,
                         ptq_sens_summary *sens, char **text)
{
    char *t = NULL;
    ptq_sens_summary s;
    memset(&s, 0, sizeof s);
    ptq_status st = cli_read_text(ctx, path, &t);
    if (st != PTQ_OK)
        return st;
    st = ptq_sens_read(ctx, t, &s);
    if (st == PTQ_OK)
        st = ptq_sens_check(ctx, &s, g, model_sha256);
    if (st != PTQ_OK) {
        char why[PTQ_MSG_BYTES];
        snprintf(why, sizeof why, "%s", ctx->msg);
        ptq_fail(ctx, st, "%s: %s", path, why);
    }
    if (st == PTQ_OK && sens) {
        *sens = s; /* ownership moves to the caller */
        memset(&s, 0, sizeof s);
    }
    if (st == PTQ_OK && text) {
        *text = t;
        t = NULL;
    }
    ptq_sens_summary_free(&s);
    free(t);
    return st;
}

ptq_status cli_sens_fits(ptq_ctx *ctx, const char *path, const ptq_sens_summary *sens, ptq_target target,
                         ptq_prec core, int reduce_range)
{
    char esc[64];
    if (sens->target != target) /* its figures are of other formats (uint8 with zero points, FP32 kept) */
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s was measured for target %s, the plan's is %s (make the report "
                        "with the plan's --target)", path, ptq_target_name(sens->target), ptq_target_name(target));
    if (strcmp(sens->core, ptq_prec_name(core)) != 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s was measured for core %s, the plan's is %s", path,
                        ptq_escape(sens->core, esc, sizeof esc), ptq_prec_name(core));
    if ((sens->reduce_range != 0) != (reduce_range != 0)) /* its gains were measured on other weights */
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s was measured %s --reduce-range, the plan is made %s it (both "
                        "or neither must have it)", path, sens->reduce_range ? "with" : "without",
                        reduce_range ? "with" : "without");
    return PTQ_OK;
}

ptq_status cli_sens_method_fits(ptq_ctx *ctx, const char *cmd, const char *path, const char *text, const char *method,
                                const char *placement, int quiet)
{
    cJSON *root = cJSON_Parse(text); /* ptq_sens_read has read it strictly */
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "method");
    const cJSON *pl = cJSON_GetObjectItemCaseSensitive(root, "placement");
    ptq_status st = PTQ_OK;
    char esc[256];
    /* its "all but" runs left tensors out of the default plan of its placement (absent: a report from before
     * sensitivity recorded it, taken as the plan's) */
    if (pl && !cJSON_IsString(pl)) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "%s: \"placement\" is not a string", path);
    } else if (pl && placement && strcmp(pl->valuestring, placement) != 0) {
        st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s was measured with --placement %s, the plan's is %s (make the "
                      "report with the plan's --placement)", path, ptq_escape(pl->valuestring, esc, sizeof esc),
                      placement);
    } else if (cJSON_IsString(m) && method && strcmp(m->valuestring, method) != 0) {
        st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s was measured with --method %s, the plan's is %s (make the report "
                      "with the plan's --method)", path, ptq_escape(m->valuestring, esc, sizeof esc), method);
    } else if (m && !cJSON_IsString(m)) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "%s: \"method\" is not a string", path);
    } else if (!m && method && !quiet) {
        fprintf(stderr, "%s: note: %s records no method; its figures are taken as measured with the plan's, %s\n",
                cmd, path, method);
    }
    cJSON_Delete(root);
    return st;
}
