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
