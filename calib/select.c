/* Which tensors a calibration observes (include/ptq/calib.h): the graph's
 * quantizable tensors, narrowed by op types and by name patterns.
 * Covered by tests/test_calib_set.c and tests/cli_calib_test.py. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/op_traits.h"
#include "ptq/calib.h"

/* 1 when word (len bytes) is one of list's comma-separated items. */
static int in_list(const char *list, const char *word, size_t len)
{
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && strncmp(p, word, len) == 0)
            return 1;
        p += n + (end ? 1 : 0);
    }
    return 0;
}

static int matches_any(const char *patterns, const char *name)
{
    char pat[512];
    for (const char *p = patterns; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > 0 && n < sizeof pat) {
            memcpy(pat, p, n);
            pat[n] = '\0';
            if (fnmatch(pat, name, 0) == 0)
                return 1;
        }
        p += n + (end ? 1 : 0);
    }
    return 0;
}

/* Fails on an item of the op list ops that is empty or names an op type neither ptq nor any node of g has (a typo
 * or another case, "Gemmm", "conv"): it would select nothing, silently, beside the others. */
static ptq_status check_ops(ptq_ctx *ctx, const ptq_graph *g, const char *ops)
{
    char op[128];
    for (const char *p = ops;;) {
        const char *end = strchr(p, ',');
        const size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 0)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "op types '%s' hold an empty item", ops);
        snprintf(op, sizeof op, "%.*s", (int)(n < sizeof op ? n : sizeof op - 1), p);
        int in_model = 0;
        for (int k = 0; k < g->n_nodes && !in_model; k++)
            in_model = strlen(g->nodes[k].op_type) == n && strncmp(g->nodes[k].op_type, p, n) == 0;
        if (!in_model && (n >= sizeof op || !ptq_op_traits_find(NULL, op)))
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "op types '%s': '%s' is no ONNX op type ptq knows, nor one of "
                            "the model's (they are case-sensitive: Conv, Gemm, MatMul)", ops, op);
        if (!end)
            return PTQ_OK;
        p = end + 1;
    }
}

ptq_status ptq_calib_select_tensors(ptq_ctx *ctx, const ptq_graph *g, const ptq_calib_select *sel,
                                    unsigned char *keep, int64_t *n_kept)
{
    const char *ops = sel && sel->ops && sel->ops[0] ? sel->ops : NULL;
    const char *pats = sel && sel->tensors && sel->tensors[0] ? sel->tensors : NULL;
    *n_kept = 0;
    if (ops)
        PTQ_TRY_RET(check_ops(ctx, g, ops));
    ptq_graph_quantizable(g, keep, NULL);
    if (ops) {
        unsigned char *by_op = calloc((size_t)g->n_values + 1, 1);
        if (!by_op)
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory selecting tensors");
        for (int k = 0; k < g->n_nodes; k++) {
            const ptq_node *n = &g->nodes[k];
            if (!in_list(ops, n->op_type, strlen(n->op_type)))
                continue;
            for (int i = 0; i < n->n_outputs; i++)
                if (n->outputs[i] >= 0)
                    by_op[n->outputs[i]] = 1;
            for (int i = 0; i < n->n_inputs; i++)
                if (n->inputs[i] >= 0)
                    by_op[n->inputs[i]] = 1;
        }
        /* a kept input is a float non-constant one: quantizable already says which */
        for (int v = 0; v < g->n_values; v++)
            keep[v] = keep[v] && by_op[v];
        free(by_op);
    }
    for (int v = 0; v < g->n_values; v++) {
        if (keep[v] && pats && !matches_any(pats, g->values[v].name))
            keep[v] = 0;
        *n_kept += keep[v];
    }
    if (*n_kept == 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "no quantizable tensor of the model matches%s%s%s%s%s%s",
                        ops ? " op types '" : "", ops ? ops : "", ops ? "'" : "", pats ? " name patterns '" : "",
                        pats ? pats : "", pats ? "'" : "");
    return PTQ_OK;
}
