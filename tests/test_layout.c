/* The channels-last plan (runtime/layout.c) on the bundled models: which
 * values it marks, that no marked value reaches an op that does not take
 * the layout (checked here against an independent list), that a graph's
 * inputs, outputs and constants are never marked, and that one reader that
 * does not take the layout pulls back the whole tied group (Add, its
 * inputs, the Relu after it). */
#include <stdlib.h>
#include <string.h>

#include "ptq/runtime.h"
#include "runtime/layout.h"
#include "testlib.h"

static int is_any(const char *op_type, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(op_type, *list) == 0)
            return 1;
    return 0;
}

static const char *const elementwise[] = {"Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",
                                          "Add", "MaxPool", "AveragePool", NULL};
static const char *const makers[] = {"Conv", "Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish",
                                     "Tanh", "Add", "MaxPool", "AveragePool", NULL};

/* Every marked value: an activation of 4 dims made by a maker and read only
 * as a Conv's or pool's data input or by an elementwise op whose data
 * values are all marked. Returns the failures. */
static int check_invariants(const char *label, const ptq_graph *g, const unsigned char *nhwc)
{
    int bad = 0;
    for (int v = 0; v < g->n_values; v++) {
        const ptq_value *val = &g->values[v];
        if (!nhwc[v])
            continue;
        if (val->flags & (PTQ_VALUE_INPUT | PTQ_VALUE_OUTPUT | PTQ_VALUE_INITIALIZER | PTQ_VALUE_CONSTANT) ||
            val->ndim != 4 || val->producer < 0 || !is_any(g->nodes[val->producer].op_type, makers)) {
            fprintf(stderr, "%s: '%s' marked but not an activation a maker made\n", label, val->name);
            bad++;
        }
    }
    for (int k = 0; k < g->n_nodes; k++) {
        const ptq_node *n = &g->nodes[k];
        const int ew = is_any(n->op_type, elementwise);
        for (int i = 0; i < n->n_inputs; i++) {
            const int v = n->inputs[i];
            if (v < 0 || !nhwc[v])
                continue;
            const int data_input = i == 0 || (i == 1 && strcmp(n->op_type, "Add") == 0);
            const int takes = data_input && (strcmp(n->op_type, "Conv") == 0 ||
                                             strcmp(n->op_type, "GlobalAveragePool") == 0 || ew);
            if (!takes) {
                fprintf(stderr, "%s: '%s' marked but read by %s '%s' as input %d\n", label, g->values[v].name,
                        n->op_type, n->name, i);
                bad++;
            }
            if (ew && !nhwc[n->outputs[0]]) {
                fprintf(stderr, "%s: %s '%s' reads a marked value into an unmarked one\n", label, n->op_type, n->name);
                bad++;
            }
        }
        if (ew && nhwc[n->outputs[0]] && (n->inputs[0] < 0 || !nhwc[n->inputs[0]])) {
            fprintf(stderr, "%s: %s '%s' makes a marked value from an unmarked one\n", label, n->op_type, n->name);
            bad++;
        }
    }
    return bad;
}

static int value_named(const ptq_graph *g, const char *name)
{
    for (int v = 0; v < g->n_values; v++)
        if (strcmp(g->values[v].name, name) == 0)
            return v;
    return -1;
}

static int load(const char *file, ptq_graph **g, const ptq_op_def ***ops)
{
    const char *src = getenv("PTQ_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/models/%s", src ? src : ".", file);
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    *g = NULL;
    *ops = NULL;
    if (ptq_graph_load_onnx(&ctx, path, g) != PTQ_OK || ptq_graph_infer_shapes(&ctx, *g, 1) != PTQ_OK ||
        ptq_op_resolve(&ctx, *g, ops) != PTQ_OK) {
        fprintf(stderr, "test_layout: %s: %s\n", path, ctx.msg);
        return 0;
    }
    return 1;
}

int main(void)
{
    ptq_graph *g = NULL;
    const ptq_op_def **ops = NULL;
    CHECK(load("fmnist_resnet.onnx", &g, &ops));
    if (!g || !ops)
        return test_done("test_layout");
    unsigned char *nhwc = calloc((size_t)g->n_values, 1);
    CHECK(nhwc != NULL);
    /* every Conv, Relu and Add output: 9 + 7 + 3 */
    CHECK(ptq_layout_nhwc(g, ops, nhwc) == 19);
    int n_made = 0;
    for (int k = 0; k < g->n_nodes; k++)
        if (is_any(g->nodes[k].op_type, makers))
            n_made += nhwc[g->nodes[k].outputs[0]];
    CHECK(n_made == 19);
    CHECK(check_invariants("fmnist_resnet", g, nhwc) == 0);
    CHECK(!nhwc[value_named(g, "input")]);
    CHECK(!nhwc[value_named(g, "/GlobalAveragePool_output_0")]);
    CHECK(!nhwc[value_named(g, "logits")]);
    CHECK(nhwc[value_named(g, "/layers/layers.2/Relu_1_output_0")]); /* GlobalAveragePool reads it as it is */

    /* the GlobalAveragePool replaced by an op that does not take the layout:
     * its input (the last Relu's output), the Add before that Relu and both
     * of the Add's inputs (two Conv outputs) go back to [N, C, H, W] */
    int gap = -1;
    CHECK(test_node_named(g, "/GlobalAveragePool", &gap) != NULL);
    const ptq_op_def *saved = gap >= 0 ? ops[gap] : NULL;
    if (gap >= 0) {
        ops[gap] = ptq_op_find("", "Flatten");
        CHECK(ptq_layout_nhwc(g, ops, nhwc) == 15);
        CHECK(!nhwc[value_named(g, "/layers/layers.2/Relu_1_output_0")]);
        CHECK(!nhwc[value_named(g, "/layers/layers.2/Add_output_0")]);
        CHECK(!nhwc[value_named(g, "/layers/layers.2/c2/Conv_output_0")]);
        CHECK(!nhwc[value_named(g, "/layers/layers.2/skip/skip.0/Conv_output_0")]);
        CHECK(nhwc[value_named(g, "/layers/layers.2/Relu_output_0")]); /* a Conv reads it: untouched */
        ops[gap] = saved;
    }
    free(nhwc);
    free(ops);
    ptq_graph_free(g);

    /* MobileNet: Clip(0, 6) between the Convs, residual Adds */
    CHECK(load("fmnist_mobilenet.onnx", &g, &ops));
    if (g && ops) {
        nhwc = calloc((size_t)g->n_values, 1);
        const int n = ptq_layout_nhwc(g, ops, nhwc);
        int convs = 0;
        for (int k = 0; k < g->n_nodes; k++)
            convs += strcmp(g->nodes[k].op_type, "Conv") == 0;
        printf("test_layout: fmnist_mobilenet: %d values channels last (%d Convs)\n", n, convs);
        CHECK(n >= convs); /* each Conv's output, and the Clips' */
        CHECK(check_invariants("fmnist_mobilenet", g, nhwc) == 0);
        free(nhwc);
    }
    free(ops);
    ptq_graph_free(g);
    return test_done("test_layout");
}
