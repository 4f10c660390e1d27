/* Opens a model and a data set for the commands that run one over the
 * other (eval now; calibrate and validate later): picks the device,
 * derives the preprocessing, and checks the data fits the model input. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static ptq_status pick_device(ptq_ctx *ctx, const char *cmd, const char *name, ptq_device *out)
{
    if (!name || strcmp(name, "cpu") == 0) {
        *out = PTQ_DEVICE_CPU;
    } else if (strcmp(name, "ref") == 0) {
        *out = PTQ_DEVICE_REF;
    } else if (strcmp(name, "cuda") == 0 || strcmp(name, "gpu") == 0) {
        char why[256];
        *out = PTQ_DEVICE_CUDA;
        if (!ptq_cuda_available(why, sizeof why)) {
            fprintf(stderr, "ptq %s: no usable GPU (%s); running on the CPU\n", cmd, why);
            *out = PTQ_DEVICE_CPU;
        }
    } else {
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "--device must be cpu, cuda or ref, got '%s'", name);
    }
    return PTQ_OK;
}

ptq_status cli_session_open(ptq_ctx *ctx, const char *cmd, const cli_session_opts *o, cli_session *s)
{
    ptq_status st = PTQ_OK;
    memset(s, 0, sizeof *s);
    ptq_device device = PTQ_DEVICE_CPU;
    PTQ_TRY(st, pick_device(ctx, cmd, o->device, &device), fail);
    PTQ_TRY(st, ptq_graph_load_onnx(ctx, o->model, &s->graph), fail);
    const ptq_graph *g = s->graph;
    if (g->n_inputs != 1 || g->n_outputs < 1) {
        st = ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "%s: the model has %d inputs and %d outputs; ptq %s needs one image input",
                      o->model, g->n_inputs, g->n_outputs, cmd);
        goto fail;
    }
    const ptq_value *in = &g->values[g->inputs[0]];
    if (in->dtype != PTQ_DT_FLOAT || in->ndim != 4) {
        char dims[96];
        st = ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "%s: input '%s' is %s [%s]; ptq %s needs a float32 image batch of rank 4",
                      o->model, in->name, ptq_dtype_name(in->dtype), ptq_dims_str(in->dims, in->ndim, dims, sizeof dims),
                      cmd);
        goto fail;
    }
    ptq_preprocess_default(&s->pre);
    const char *meta = ptq_graph_meta(g, "ptq.preprocess");
    if (meta)
        PTQ_TRY(st, ptq_preprocess_parse(ctx, meta, &s->pre), fail);
    if (o->preprocess)
        PTQ_TRY(st, ptq_preprocess_parse(ctx, o->preprocess, &s->pre), fail);
    int c_axis = s->pre.nhwc ? 3 : 1, h_axis = s->pre.nhwc ? 1 : 2, w_axis = s->pre.nhwc ? 2 : 3;
    s->channels = in->dims[c_axis];
    s->height = in->dims[h_axis];
    s->width = in->dims[w_axis];

    ptq_dataset_opts dopts = {o->images_key, o->labels_key, o->layout, o->allow_external_data};
    PTQ_TRY(st, ptq_dataset_open(ctx, o->data, &dopts, &s->data), fail);
    s->n_samples = ptq_dataset_count(s->data);
    if (s->n_samples <= 0) {
        st = ptq_fail(ctx, PTQ_ERR_DATA, "%s: the data set holds no samples", o->data);
        goto fail;
    }
    int64_t dh, dw, dc;
    ptq_dataset_geometry(s->data, &dh, &dw, &dc);
    if (s->channels < 0)
        s->channels = dc;
    if (s->height < 0)
        s->height = dh;
    if (s->width < 0)
        s->width = dw;
    if (s->channels != 1 && s->channels != 3) {
        st = ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "%s: input '%s' has %lld channels; images give 1 or 3", o->model,
                      in->name, (long long)s->channels);
        goto fail;
    }
    if ((dh != s->height || dw != s->width) && s->pre.resize == 0) {
        st = ptq_fail(ctx, PTQ_ERR_SHAPE,
                      "%s: images are %lldx%lld but the model input '%s' takes %lldx%lld; pass --preprocess "
                      "resize=<shorter side> to resize and center-crop",
                      o->data, (long long)dh, (long long)dw, in->name, (long long)s->height, (long long)s->width);
        goto fail;
    }
    if (dc != s->channels && !(dc == 4 && s->channels == 3) && !(dc == 2 && s->channels == 1))
        fprintf(stderr, "ptq %s: note: converting %lld-channel images to the model's %lld channels\n", cmd,
                (long long)dc, (long long)s->channels);
    s->pre.n_channels = (int)s->channels;
    s->pre.height = s->height;
    s->pre.width = s->width;
    ptq_exec_params ep = {device, 0, NULL, NULL, o->profile};
    PTQ_TRY(st, ptq_exec_create(ctx, g, &ep, &s->exec), fail);
    return PTQ_OK;
fail:
    cli_session_close(s);
    return st;
}

void cli_session_close(cli_session *s)
{
    ptq_exec_free(s->exec);
    ptq_dataset_close(s->data);
    ptq_graph_free(s->graph);
    memset(s, 0, sizeof *s);
}

char *cli_profile_table(const cli_session *s)
{
    const ptq_graph *g = s->graph;
    const char **ops = calloc((size_t)g->n_nodes + 1, sizeof *ops);
    double *secs = calloc((size_t)g->n_nodes + 1, sizeof *secs);
    int *count = calloc((size_t)g->n_nodes + 1, sizeof *count);
    char *out = malloc((size_t)g->n_nodes * 80 + 160);
    int n_ops = 0;
    double total = 0;
    if (!ops || !secs || !count || !out) {
        free(out);
        out = NULL;
        goto done;
    }
    for (int k = 0; k < g->n_nodes; k++) {
        int j = 0;
        while (j < n_ops && strcmp(ops[j], g->nodes[k].op_type) != 0)
            j++;
        if (j == n_ops)
            ops[n_ops++] = g->nodes[k].op_type;
        secs[j] += ptq_exec_node_seconds(s->exec, k);
        count[j]++;
        total += ptq_exec_node_seconds(s->exec, k);
    }
    size_t used = (size_t)sprintf(out, "%-20s %6s %10s %7s\n", "op", "nodes", "ms", "share");
    for (int r = 0; r < n_ops; r++) {
        int best = r;
        for (int j = r + 1; j < n_ops; j++)
            if (secs[j] > secs[best])
                best = j;
        const char *o = ops[best];
        double t = secs[best];
        int c = count[best];
        ops[best] = ops[r], secs[best] = secs[r], count[best] = count[r];
        ops[r] = o, secs[r] = t, count[r] = c;
        used += (size_t)sprintf(out + used, "%-20.20s %6d %10.1f %6.1f%%\n", o, c, 1e3 * t,
                                total > 0 ? 100 * t / total : 0.0);
    }
    sprintf(out + used, "%-20s %6d %10.1f\n", "total", g->n_nodes, 1e3 * total);
done:
    free(ops);
    free(secs);
    free(count);
    return out;
}

cli_session_opts cli_session_opts_from(const cli_opt *opts, int n_opts)
{
    cli_session_opts o = {cli_get(opts, n_opts, "model"),      cli_get(opts, n_opts, "data"),
                          cli_get(opts, n_opts, "device"),     cli_get(opts, n_opts, "preprocess"),
                          cli_get(opts, n_opts, "images-key"), cli_get(opts, n_opts, "labels-key"),
                          cli_get(opts, n_opts, "layout"),     0,
                          cli_get(opts, n_opts, "allow-external-data") != NULL};
    return o;
}
