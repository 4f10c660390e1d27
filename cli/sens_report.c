/* The sensitivity report `ptq plan --budget` and `ptq validate --sensitivity`
 * read: one reader (ptq_sens_read, ptq_sens_check) for both, every failure
 * naming the file. Covered by tests/cli_sensitivity_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
