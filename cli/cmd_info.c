/* `ptq info`: a model's inputs/outputs, op counts, parameter count, and
 * the tensors a calibration would observe (float inputs of Conv, Gemm and
 * MatMul plus every activation output), and the output eval reads logits
 * from. A model ptq cannot run (an unsupported node, shapes that do not
 * infer, inputs a session refuses) exits with eval's code after the
 * summary. Covered by tests/cli_test.py and tests/badinput_test.py. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"

static const char info_help[] =
    "usage: ptq info MODEL.onnx [--json]\n"
    "\n"
    "Prints the model's inputs and outputs with shapes, op counts, parameter\n"
    "count, whether ptq supports every node, and the tensors a later stage\n"
    "would quantize (activations and weights). Exits non-zero, with the code\n"
    "`ptq eval` would give, when ptq cannot run the model (every unsupported\n"
    "node is named).\n";

static cJSON *value_json(const ptq_value *v)
{
    cJSON *o = cJSON_CreateObject();
    cli_json_str(o, "name", v->name); /* names and paths from files: made UTF-8 */
    cJSON_AddStringToObject(o, "dtype", ptq_dtype_name(v->dtype));
    if (v->ndim >= 0) {
        cJSON *dims = cJSON_AddArrayToObject(o, "shape");
        for (int d = 0; d < v->ndim; d++)
            cJSON_AddItemToArray(dims, v->dims[d] < 0 ? cJSON_CreateNull() : cJSON_CreateNumber((double)v->dims[d]));
    }
    return o;
}

/* Graph output v as shown: its inferred dtype and shape, with each dim the file declares unknown or symbolic (a
 * batch N) unknown again, as the inputs show theirs; declared: v as loaded, before shapes were inferred at batch 1. */
/* The first QuantizeLinear or DequantizeLinear left after folding (one of constants alone is a float weight then),
 * or NULL: a model that holds one is quantized already, and calibrate, plan, sensitivity, validate and export refuse
 * it (ptq_graph_check_unquantized). */
static const ptq_node *first_qdq(const ptq_graph *g)
{
    for (int k = 0; k < g->n_nodes; k++) {
        const ptq_node *n = &g->nodes[k];
        if ((!n->domain[0] || strcmp(n->domain, "ai.onnx") == 0) &&
            (strcmp(n->op_type, "QuantizeLinear") == 0 || strcmp(n->op_type, "DequantizeLinear") == 0))
            return n;
    }
    return NULL;
}

static ptq_value shown_output(const ptq_value *v, const ptq_value *declared)
{
    ptq_value s = *v;
    for (int d = 0; declared->ndim == v->ndim && d < v->ndim; d++)
        if (declared->dims[d] < 0)
            s.dims[d] = -1;
    return s;
}

int cmd_info(int argc, char **argv)
{
    cli_opt opts[] = {{"json", 0, NULL}, {"help", 0, NULL}};
    const int n_opts = 2;
    const char *pos[1];
    int n_pos = 0, rc = cli_parse("info", argc, argv, opts, n_opts, pos, &n_pos, 1);
    if (rc)
        return rc;
    if (cli_get(opts, n_opts, "help")) {
        fputs(info_help, stdout);
        return 0;
    }
    if (n_pos != 1)
        return cli_usage_error("info", "give one model file");
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_graph *g = NULL;
    ptq_status st = ptq_graph_load_onnx(&ctx, pos[0], &g);
    if (st != PTQ_OK)
        return cli_report("info", &ctx, st);
    ptq_value *declared = calloc((size_t)g->n_outputs + 1, sizeof *declared); /* the outputs before inference */
    if (!declared) {
        ptq_graph_free(g);
        return cli_report("info", &ctx, ptq_fail(&ctx, PTQ_ERR_NOMEM, "out of memory"));
    }
    for (int i = 0; i < g->n_outputs; i++)
        declared[i] = g->values[g->outputs[i]];

    /* op counts in first-seen order, of the file's nodes (before folding) */
    const char **ops = calloc((size_t)g->n_nodes + 1, sizeof *ops);
    int *counts = calloc((size_t)g->n_nodes + 1, sizeof *counts);
    /* tensors to observe: activation outputs, float non-constant inputs of weighted ops, their weights */
    unsigned char *act = calloc((size_t)g->n_values + 1, 1), *wt = calloc((size_t)g->n_values + 1, 1);
    if (!ops || !counts || !act || !wt) {
        free(declared);
        free(ops);
        free(counts);
        free(act);
        free(wt);
        ptq_graph_free(g);
        return cli_report("info", &ctx, ptq_fail(&ctx, PTQ_ERR_NOMEM, "out of memory"));
    }
    int n_ops = 0;
    const int n_nodes = g->n_nodes;
    for (int k = 0; k < g->n_nodes; k++) {
        const ptq_node *n = &g->nodes[k];
        int j = 0;
        while (j < n_ops && strcmp(ops[j], n->op_type) != 0)
            j++;
        if (j == n_ops)
            ops[n_ops++] = n->op_type;
        counts[j]++;
    }
    ptq_ctx support_ctx;
    ptq_ctx_init(&support_ctx);
    ptq_status supported = ptq_graph_check_supported(&support_ctx, g);
    /* activation shapes at batch 1; a model ptq cannot run keeps its declared shapes */
    ptq_ctx shape_ctx;
    ptq_ctx_init(&shape_ctx);
    ptq_status shapes = supported == PTQ_OK ? ptq_graph_infer_shapes(&shape_ctx, g, 1) : supported;
    /* an input dim past the batch left unknown (a sequence length) comes from the data: shapes at 1 for it */
    int64_t dims_at = 0; /* the value of those dims, 1 unless the graph's shapes need more (an even length) */
    if (shapes == PTQ_ERR_SHAPE) {
        ptq_ctx types_ctx;
        ptq_ctx_init(&types_ctx);
        if (ptq_graph_infer_types_at(&types_ctx, g, &dims_at) == PTQ_OK)
            shapes = PTQ_OK;
    }
    /* the checks eval makes of a model before it reads data: its inputs, and which output holds the logits; eval
     * makes them whether or not shapes infer at batch 1, so their failure is the one info exits with */
    ptq_ctx run_ctx;
    ptq_ctx_init(&run_ctx);
    ptq_status runnable = supported;
    int logits = -1;
    char logits_note[PTQ_MSG_BYTES] = "";
    if (supported == PTQ_OK) {
        ptq_session_opts so = {.model = pos[0], .device = PTQ_DEVICE_CPU};
        ptq_session *ps = NULL;
        runnable = ptq_session_open(&run_ctx, &so, &ps);
        if (runnable == PTQ_OK) {
            ptq_ctx out_ctx;
            ptq_ctx_init(&out_ctx);
            if (ptq_session_logits_output(&out_ctx, ps, &logits) != PTQ_OK) {
                logits = -1;
                snprintf(logits_note, sizeof logits_note, "%s", out_ctx.msg);
            }
        }
        ptq_session_close(ps);
    }
    int64_t n_params = 0;
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v].flags & PTQ_VALUE_INITIALIZER)
            n_params += g->values[v].ndim >= 0 ? ptq_dims_prod(g->values[v].dims, 0, g->values[v].ndim) : 0;

    /* what every other command sees: the nodes computed from constants alone folded (ptq_model_load) */
    PTQ_TRY(st, ptq_graph_fold_constants(&ctx, g), done);
    ptq_graph_quantizable(g, act, wt);
    const ptq_node *qdq = first_qdq(g);
    int n_act = 0, n_wt = 0;
    for (int v = 0; v < g->n_values; v++) {
        n_act += act[v];
        n_wt += wt[v];
    }
    if (cli_get(opts, n_opts, "json")) {
        cJSON *root = cJSON_CreateObject();
        cli_json_str(root, "model", pos[0]);
        cJSON_AddNumberToObject(root, "ir_version", (double)g->ir_version);
        cJSON_AddNumberToObject(root, "opset", (double)g->opset);
        cli_json_str(root, "producer", g->producer);
        cJSON *ins = cJSON_AddArrayToObject(root, "inputs"), *outs = cJSON_AddArrayToObject(root, "outputs");
        for (int i = 0; i < g->n_inputs; i++)
            cJSON_AddItemToArray(ins, value_json(&g->values[g->inputs[i]]));
        for (int i = 0; i < g->n_outputs; i++) {
            const ptq_value shown = shown_output(&g->values[g->outputs[i]], &declared[i]);
            cJSON_AddItemToArray(outs, value_json(&shown));
        }
        cJSON *opc = cJSON_AddObjectToObject(root, "ops");
        for (int j = 0; j < n_ops; j++)
            cJSON_AddNumberToObject(opc, ops[j], counts[j]);
        cJSON_AddNumberToObject(root, "nodes", n_nodes);
        cJSON_AddNumberToObject(root, "parameters", (double)n_params);
        cJSON_AddBoolToObject(root, "supported", supported == PTQ_OK);
        if (supported != PTQ_OK)
            cli_json_str(root, "unsupported", support_ctx.msg);
        if (shapes == PTQ_OK)
            cJSON_AddNumberToObject(root, "shapes_at_batch", 1);
        else
            cli_json_str(root, "shape_inference", shape_ctx.msg);
        if (dims_at)
            cJSON_AddNumberToObject(root, "shapes_at_unknown_input_dims", (double)dims_at);
        cJSON_AddBoolToObject(root, "runnable", runnable == PTQ_OK);
        if (supported == PTQ_OK && runnable != PTQ_OK)
            cli_json_str(root, "not_runnable", run_ctx.msg);
        if (logits >= 0)
            cli_json_str(root, "logits_output", g->values[g->outputs[logits]].name);
        cJSON_AddBoolToObject(root, "quantized", qdq != NULL);
        if (qdq)
            cli_json_str(root, "first_qdq_node", qdq->name);
        else if (logits_note[0])
            cli_json_str(root, "logits_output_note", logits_note);
        cJSON *qa = cJSON_AddArrayToObject(root, "quantizable_activations");
        cJSON *qw = cJSON_AddArrayToObject(root, "quantizable_weights");
        for (int v = 0; v < g->n_values; v++) {
            if (act[v])
                cJSON_AddItemToArray(qa, value_json(&g->values[v]));
            if (wt[v])
                cJSON_AddItemToArray(qw, value_json(&g->values[v]));
        }
        char *txt = cJSON_Print(root);
        if (txt)
            printf("%s\n", txt);
        free(txt);
        cJSON_Delete(root);
    } else {
        char dims[128], esc[4 * PTQ_MSG_BYTES], esc2[1024]; /* names from the file, printed escaped */
        printf("model      %s\nproducer   %s\nir_version %lld, opset %lld\n", cli_shown(pos[0]),
               ptq_escape(g->producer ? g->producer : "", esc, sizeof esc),
               (long long)g->ir_version, (long long)g->opset);
        for (int i = 0; i < g->n_inputs; i++) {
            const ptq_value *v = &g->values[g->inputs[i]];
            printf("input      %s  %s [%s]\n", ptq_escape(v->name, esc, sizeof esc), ptq_dtype_name(v->dtype), ptq_dims_str(v->dims, v->ndim, dims, sizeof dims));
        }
        for (int i = 0; i < g->n_outputs; i++) {
            const ptq_value v = shown_output(&g->values[g->outputs[i]], &declared[i]);
            printf("output     %s  %s [%s]\n", ptq_escape(v.name, esc, sizeof esc), ptq_dtype_name(v.dtype),
                   ptq_dims_str(v.dims, v.ndim, dims, sizeof dims));
        }
        printf("nodes      %d\nparameters %lld\nops       ", n_nodes, (long long)n_params);
        for (int j = 0; j < n_ops; j++)
            printf(" %s x%d", ptq_escape(ops[j], esc, sizeof esc), counts[j]);
        /* every op known, but a dtype one takes here not (a Cast from float16): not "yes" */
        const int dtype_unsupported = supported == PTQ_OK && shapes == PTQ_ERR_UNSUPPORTED;
        if (dtype_unsupported)
            printf("\nsupported  no: %s\n", ptq_escape(shape_ctx.msg, esc, sizeof esc));
        else
            printf("\nsupported  %s\n",
                   supported == PTQ_OK ? "yes, every node" : ptq_escape(support_ctx.msg, esc, sizeof esc));
        if (shapes != PTQ_OK && supported == PTQ_OK && !dtype_unsupported)
            printf("shapes     not inferred: %s\n", ptq_escape(shape_ctx.msg, esc, sizeof esc));
        if (dims_at)
            printf("shapes     at batch 1, and %lld for the inputs' other unknown dims (a sequence length: the data "
                   "gives it)\n", (long long)dims_at);
        if (supported == PTQ_OK && runnable != PTQ_OK)
            printf("runnable   no: %s\n", ptq_escape(run_ctx.msg, esc, sizeof esc));
        if (logits >= 0)
            printf("logits     %s\n", ptq_escape(g->values[g->outputs[logits]].name, esc, sizeof esc));
        else if (logits_note[0])
            printf("logits     %s\n",
                   ptq_escape(logits_note, esc, sizeof esc));
        if (qdq)
            printf("quantized  already: node '%s' is a %s; calibrate, plan, sensitivity, validate and export take the "
                   "float model it was made from (ptq eval runs this one), so the lists below are for reading only\n",
                   ptq_escape(qdq->name, esc, sizeof esc), qdq->op_type);
        char at[64];
        snprintf(at, sizeof at, ", shapes at batch 1 and unknown input dims %lld", (long long)dims_at);
        printf("\nquantizable activations (%d)%s:\n", n_act,
               dims_at ? at : shapes == PTQ_OK ? ", shapes at batch 1" : "");
        for (int v = 0; v < g->n_values; v++)
            if (act[v])
                printf("  %s %-18s [%s]\n", cli_padded(g->values[v].name, 40, esc, sizeof esc),
                       ptq_escape(g->values[v].producer >= 0 ? g->nodes[g->values[v].producer].op_type : "(graph input)",
                                  esc2, sizeof esc2),
                       ptq_dims_str(g->values[v].dims, g->values[v].ndim, dims, sizeof dims));
        printf("quantizable weights (%d):\n", n_wt);
        for (int v = 0; v < g->n_values; v++)
            if (wt[v])
                printf("  %s [%s]\n", cli_padded(g->values[v].name, 40, esc, sizeof esc),
                       ptq_dims_str(g->values[v].dims, g->values[v].ndim, dims, sizeof dims));
    }
done:
    free(declared);
    free(ops);
    free(counts);
    free(act);
    free(wt);
    ptq_graph_free(g);
    /* a model eval could not run exits as eval would, after its summary */
    if (st == PTQ_OK && supported != PTQ_OK)
        return cli_report("info", &support_ctx, supported);
    if (st == PTQ_OK && runnable != PTQ_OK)
        return cli_report("info", &run_ctx, runnable);
    if (st == PTQ_OK && shapes != PTQ_OK)
        return cli_report("info", &shape_ctx, shapes);
    return cli_report("info", &ctx, st);
}
