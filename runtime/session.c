/* A model ready to run on a data set (include/ptq/runner.h): the graph,
 * its executor on the requested device (the CPU, with a note, when no GPU
 * is usable and that is allowed; a note when the GPU runs without cuDNN),
 * the preprocessing from the model's metadata and the caller's overrides,
 * and the input geometry checked against the data; or, for a model that is
 * not one image input, each input fed from a named HDF5 dataset, its dtype
 * and shape checked. Covered by tests/test_runner.c, tests/cli_test.py,
 * tests/test_named_inputs.c and tests/named_inputs_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/parallel.h"
#include "datasets/datasets_internal.h"
#include "ptq/dist.h"
#include "ptq/runner.h"
#include "runtime/backend.h"
#ifdef PTQ_CUDA
#include "kernels/cuda/cuda_kernels.h"
#endif

enum {
    PASS_BYTES = 2 << 20, /* what the values alive at once in a pass over a long batch on one CPU thread may take */
    PASS_ROWS_MIN = 4     /* the fewest samples in such a pass */
};

struct ptq_session {
    ptq_graph *graph;
    ptq_exec *exec;
    ptq_dataset *data;
    ptq_preprocess pre;
    int64_t channels, height, width; /* the model input's sample shape */
    int64_t n_samples;
    ptq_ctx shapes;  /* how inferring the shapes at batch 1 went (code PTQ_OK, or the failure) */
    int logits;      /* index into graph->outputs of the logits, when logits_st.code is PTQ_OK */
    ptq_ctx logits_st; /* how picking the logits output went */
    int64_t fixed_batch; /* the input's dim 0 when the model fixes it, else 0 */
    int named;           /* 1: the inputs are fed from named datasets (in_meta, in_keys) */
    ptq_tensor *in_meta; /* [g->n_inputs] named inputs: dtype and shape, dims[0] 0 */
    char **in_keys;      /* [g->n_inputs] the dataset feeding each */
    char notes[2048]; /* several notes can apply at once (device, preprocessing, data) */
};

ptq_status ptq_device_parse(ptq_ctx *ctx, const char *name, ptq_device *device, int *cuda_device)
{
    *cuda_device = 0;
    if (!name || strcmp(name, "cpu") == 0) {
        *device = PTQ_DEVICE_CPU;
    } else if (strcmp(name, "ref") == 0) {
        *device = PTQ_DEVICE_REF;
    } else if (strcmp(name, "cuda") == 0 || strcmp(name, "gpu") == 0) {
        *device = PTQ_DEVICE_CUDA;
        *cuda_device = PTQ_CUDA_DEVICE_LOCAL;
    } else if (strncmp(name, "cuda:", 5) == 0) {
        char *end = NULL;
        long n = strtol(name + 5, &end, 10);
        /* digits only: strtol would also take "cuda: 0" and "cuda:+0" */
        if (!isdigit((unsigned char)name[5]) || !end || *end || n > 1023)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "--device cuda:N wants a GPU number N in [0, 1023], got '%s'",
                            name);
        *device = PTQ_DEVICE_CUDA;
        *cuda_device = (int)n;
    } else {
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "--device must be cpu, cuda (or gpu), cuda:N or ref, got '%s'", name);
    }
    return PTQ_OK;
}

static void note(ptq_session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(ptq_session *s, const char *fmt, ...)
{
    size_t used = strlen(s->notes);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->notes + used, sizeof s->notes - used, fmt, ap);
    va_end(ap);
}

/* The device to run on: a GPU the opts ask for and the machine has, else
 * the CPU when falling back is allowed. */
static ptq_status pick_device(ptq_ctx *ctx, const ptq_session_opts *o, ptq_session *s, ptq_device *device,
                              int *ordinal)
{
    *device = o->device;
    *ordinal = o->cuda_device;
    if (o->device != PTQ_DEVICE_CUDA)
        return PTQ_OK;
    char why[256] = "";
    int n = ptq_cuda_n_devices(why, sizeof why);
    if (o->cuda_device == PTQ_CUDA_DEVICE_LOCAL) /* one GPU per rank of the node, in turn */
        *ordinal = n > 0 ? ptq_dist_local_rank() % n : 0;
    if (n > *ordinal)
        return PTQ_OK;
    if (n > 0)
        snprintf(why, sizeof why, "cuda:%d asked for, but only %d GPU%s visible", *ordinal, n, n == 1 ? " is" : "s are");
    if (!o->cpu_fallback || n > 0)
        return ptq_fail(ctx, PTQ_ERR_NO_DEVICE, "%s", why);
    note(s, "no usable GPU (%s); running on the CPU\n", why);
    *device = PTQ_DEVICE_CPU;
    return PTQ_OK;
}

/* What the model's nodes say of its image input id's layout: 0 (NCHW) where one reads it as the first input of an op
 * that ONNX defines on [N, C, H, W] (a Conv, a pooling, a BatchNormalization), 1 (NHWC) where one is a Transpose
 * taking it to NCHW (perm 0,3,1,2, as tf2onnx and Keras exports begin), -1 where none says. */
static int layout_from_readers(const ptq_graph *g, int id)
{
    static const char *const nchw_ops[] = {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool",
                                           "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "BatchNormalization",
                                           "InstanceNormalization", "LRN", "DepthToSpace", "SpaceToDepth"};
    static const int64_t to_nchw[4] = {0, 3, 1, 2};
    for (int i = 0; i < g->n_nodes; i++) {
        const ptq_node *n = &g->nodes[i];
        if ((n->domain[0] && strcmp(n->domain, "ai.onnx")) || n->n_inputs < 1 || n->inputs[0] != id)
            continue;
        for (size_t k = 0; k < sizeof nchw_ops / sizeof *nchw_ops; k++)
            if (!strcmp(n->op_type, nchw_ops[k]))
                return 0;
        const ptq_attr *perm = strcmp(n->op_type, "Transpose") ? NULL : ptq_node_attr(n, "perm");
        if (perm && perm->n == 4 && perm->ints && !memcmp(perm->ints, to_nchw, sizeof to_nchw))
            return 1;
    }
    return -1;
}

/* Layout, channels and size of g's image input in: the layout its readers give (layout_from_readers), else from its
 * shape: dims[1] of 1 or 3 is NCHW, else dims[3] of 1, 3 or 4 is NHWC, else NCHW; unknown dims (< 1) leave the
 * defaults. 1 when the readers gave the layout. */
static int input_geometry(const ptq_graph *g, const ptq_value *in, ptq_preprocess *p)
{
    const int64_t *d = in->dims;
    const int said = layout_from_readers(g, (int)(in - g->values));
    p->nhwc = said >= 0 ? said : !(d[1] == 1 || d[1] == 3) && (d[3] == 1 || d[3] == 3 || d[3] == 4);
    int64_t c = p->nhwc ? d[3] : d[1], h = p->nhwc ? d[1] : d[2], w = p->nhwc ? d[2] : d[3];
    if (c == 1 || c == 3 || c == 4)
        p->n_channels = (int)c;
    if (h > 0 && w > 0) {
        p->height = h;
        p->width = w;
    }
    return said >= 0;
}

/* "'a' float32 [?x10], 'b' float32 [?x5]": values ids[n] of g (its outputs, its inputs) for a message; declared
 * (NULL: none) [n] the values as loaded, before shapes were inferred: a dim they declare symbolic (a batch N) shows
 * as ?, as the inputs show theirs, not as its size at batch 1. */
static void list_values(const ptq_graph *g, const int *ids, int n, const ptq_value *declared, char *buf, size_t n_buf)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used + 1 < n_buf; i++) {
        ptq_value v = g->values[ids[i]];
        for (int d = 0; declared && declared[i].ndim == v.ndim && d < v.ndim; d++)
            if (declared[i].dims[d] < 0)
                v.dims[d] = -1;
        char dims[96];
        int k = snprintf(buf + used, n_buf - used, "%s'%s' %s [%s]", i ? ", " : "", v.name,
                         ptq_dtype_name(v.dtype), v.ndim >= 0 ? ptq_dims_str(v.dims, v.ndim, dims, sizeof dims) : "?");
        if (k < 0)
            break;
        used += (size_t)k < n_buf - used ? (size_t)k : n_buf - used - 1;
    }
}

/* Which output holds the logits (ptq_session_logits_output): the one named,
 * the only one, or the only float32 output of rank 2 (shapes at batch 1). */
static ptq_status pick_logits(ptq_ctx *ctx, ptq_session *s, const char *model, const char *name,
                              const ptq_value *declared)
{
    const ptq_graph *g = s->graph;
    char outs[1024];
    list_values(g, g->outputs, g->n_outputs, declared, outs, sizeof outs);
    if (name) {
        for (int i = 0; i < g->n_outputs; i++)
            if (strcmp(g->values[g->outputs[i]].name, name) == 0) {
                s->logits = i;
                return PTQ_OK;
            }
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: the model has no output '%s' (--output); its outputs: %s", model,
                        name, outs);
    }
    if (g->n_outputs == 1) {
        s->logits = 0;
        return PTQ_OK;
    }
    int found = -1, n_found = 0;
    for (int i = 0; i < g->n_outputs; i++) {
        const ptq_value *v = &g->values[g->outputs[i]];
        if (v->dtype == PTQ_DT_FLOAT && v->ndim == 2) {
            found = i;
            n_found++;
        }
    }
    if (n_found != 1)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED,
                        "%s: the model has %d outputs and %s of them is float32 [N, classes]: %s; pass --output NAME "
                        "to say which holds the logits",
                        model, g->n_outputs, n_found ? "more than one" : "none", outs);
    s->logits = found;
    note(s, "the model has %d outputs; reading logits from '%s' (the only [N, classes] one; --output picks another)\n",
         g->n_outputs, g->values[g->outputs[found]].name);
    return PTQ_OK;
}

/* 1 when the preprocess spec names key (as "key=..."). */
static int spec_names(const char *spec, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = spec; p && (p = strstr(p, key)); p += n)
        if ((p == spec || isspace((unsigned char)p[-1])) && p[n] == '=')
            return 1;
    return 0;
}

/* Float images: [0, 1] (scale 1) or 0..255 pixels (the spec's scale), from
 * the range of the first samples' finite values, always said in a note. A
 * range that is nearly all in [0, 1] with a few values above (max <= 1.5,
 * or fewer than 1 in 1,000 above 1) could be either: refused unless
 * --preprocess names scale=. README "Preprocessing" states the rule. */
static ptq_status pick_float_scale(ptq_ctx *ctx, ptq_session *s, const ptq_session_opts *o)
{
    ptq_value_range r;
    ptq_dataset_value_range(s->data, &r);
    if (r.n_samples <= 0)
        return PTQ_OK;
    if (r.n_nonfinite > 0)
        note(s, "%lld of the %lld values in the first %lld samples of %s are NaN or Inf: passed to the model as "
             "they are, left out of the range check\n", (long long)r.n_nonfinite, (long long)r.n_values,
             (long long)r.n_samples, o->data);
    if (r.n_nonfinite == r.n_values || s->pre.scale == 1.0f || spec_names(o->preprocess, "scale"))
        return PTQ_OK;
    const int64_t n_finite = r.n_values - r.n_nonfinite;
    if (r.hi <= 1.0f) {
        note(s, "float images already in [%g, %g] (first %lld samples): not scaled again (scale=1 instead of %g; "
             "name scale= in --preprocess to override)\n", (double)r.lo, (double)r.hi, (long long)r.n_samples,
             (double)s->pre.scale);
        s->pre.scale = 1.0f;
        return PTQ_OK;
    }
    if (r.hi <= 1.5f || r.n_above_one * 1000 < n_finite)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                        "%s: float images in [%g, %g] (first %lld samples) with %lld of %lld values above 1: "
                        "ambiguous between [0, 1] and 0..255 pixels; name the scale in --preprocess (scale=1 "
                        "for [0, 1], scale=1/255 for 0..255)", o->data, (double)r.lo, (double)r.hi,
                        (long long)r.n_samples, (long long)r.n_above_one, (long long)n_finite);
    note(s, "float images in [%g, %g] (first %lld samples): taken as 0..255 pixels, scale=%g (name scale= in "
         "--preprocess to override)\n", (double)r.lo, (double)r.hi, (long long)r.n_samples, (double)s->pre.scale);
    return PTQ_OK;
}

/* --preprocess layout=, channels= or size= naming other than what the model's input fixes (model: the
 * geometry input_geometry read from it; said: its readers gave the layout) would be dropped or misread: refused,
 * naming the input. */
static ptq_status check_geometry(ptq_ctx *ctx, const char *spec, const ptq_value *in, const ptq_preprocess *model,
                                 int said, const ptq_preprocess *p)
{
    const int64_t *d = in->dims;
    /* 4 is RGBA only where the other end is no channel count: [N,3,4,4] is NCHW, [N,4,4,3] NHWC */
    const int as_nchw = d[1] == 1 || d[1] == 3 || (d[1] == 4 && d[3] != 1 && d[3] != 3);
    const int as_nhwc = d[3] == 1 || d[3] == 3 || (d[3] == 4 && d[1] != 1 && d[1] != 3);
    const int64_t c = model->nhwc ? d[3] : d[1];
    char item[64] = "";
    if ((said || as_nchw != as_nhwc) && spec_names(spec, "layout") && p->nhwc != model->nhwc)
        snprintf(item, sizeof item, "layout=%s", p->nhwc ? "NHWC" : "NCHW");
    else if ((c == 1 || c == 3 || c == 4) && spec_names(spec, "channels") && p->n_channels != c)
        snprintf(item, sizeof item, "channels=%d", p->n_channels);
    else if (model->height > 0 && (p->height != model->height || p->width != model->width) &&
             (spec_names(spec, "size") || spec_names(spec, "height") || spec_names(spec, "width")))
        snprintf(item, sizeof item, "size=%lldx%lld", (long long)p->height, (long long)p->width);
    char dims[96];
    /* a preset's means (and imagenet's stds) are per colour: on one channel only R's (or B's) would be applied */
    const char *named = c == 1 ? ds_preprocess_spec_preset(spec) : NULL;
    const int caffe = named && !strcmp(named, "imagenet-bgr-caffe");
    if (!item[0] && named && (!spec_names(spec, "mean") || (!caffe && !spec_names(spec, "std"))))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "--preprocess %s: its means%s are per colour (%s), but the "
                        "model input '%s' [%s] takes 1 channel, which would be normalized as %s alone; name mean=%s "
                        "for that channel after the preset", named, caffe ? "" : " and stds",
                        caffe ? "B, G, R" : "R, G, B", in->name, ptq_dims_str(d, in->ndim, dims, sizeof dims),
                        caffe ? "B" : "R", caffe ? "" : " and std=");
    if (!item[0])
        return PTQ_OK;
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "--preprocess %s contradicts the model input '%s' [%s] (%s, %lld "
                    "channel%s, %lldx%lld); drop it", item, in->name, ptq_dims_str(d, in->ndim, dims, sizeof dims),
                    model->nhwc ? "NHWC" : "NCHW", (long long)c, c == 1 ? "" : "s", (long long)model->height,
                    (long long)model->width);
}

/* --preprocess order= reversing the metadata's channel order, naming no mean= (std=) while the metadata's means
 * (stds) differ between the first and last channel: whether they are per colour (a preset's, B's mean going with
 * B) or per model channel cannot be told, and either reading feeds the model other pixels than the other.
 * Refused, saying how to say which. from_meta: the spec before --preprocess; named: its DS_PRE_* bits. */
static ptq_status check_order_flip(ptq_ctx *ctx, const char *spec, const char *meta, const ptq_preprocess *from_meta,
                                   const ptq_preprocess *p, int named)
{
    if (!meta || p->bgr == from_meta->bgr || p->n_channels < 3)
        return PTQ_OK;
    const int mean_open = !(named & DS_PRE_MEAN) && from_meta->mean[0] != from_meta->mean[2];
    const int std_open = !(named & DS_PRE_STD) && from_meta->std[0] != from_meta->std[2];
    if (!mean_open && !std_open)
        return PTQ_OK;
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                    "--preprocess '%s' turns the model's %s channel order (ptq.preprocess '%s') into %s, but its "
                    "per-channel %s could be per colour or per model channel: name %s in --preprocess (per model "
                    "channel, %s order), or, where the metadata came from a preset, repeat it before order=",
                    spec, from_meta->bgr ? "BGR" : "RGB", meta, p->bgr ? "BGR" : "RGB",
                    mean_open && std_open ? "means and stds" : mean_open ? "means" : "stds",
                    mean_open && std_open ? "mean= and std=" : mean_open ? "mean=" : "std=", p->bgr ? "BGR" : "RGB");
}

/* 1 for the model ptq reads images into: one float32 input of rank 4. */
static int image_model(const ptq_graph *g)
{
    return g->n_inputs == 1 && g->values[g->inputs[0]].dtype == PTQ_DT_FLOAT && g->values[g->inputs[0]].ndim == 4;
}

/* The preprocessing of image model g's input before any data is read: the input's layout, channels and size, then
 * its ptq.preprocess metadata, then spec (NULL: none), each overriding only the keys it names, with spec's
 * refusals. *normalizes: whether the metadata or spec names scale, mean, std, order or a preset (a Keras import's
 * metadata gives only its layout). *square: 1 when the input's size is dynamic and resize=R names no crop, which
 * is then R x R (torchvision's Resize(R) alone gives each image its own size; a batch needs one). */
static ptq_status image_preprocess(ptq_ctx *ctx, const ptq_graph *g, const char *spec, ptq_preprocess *p,
                                   int *normalizes, int *square)
{
    const ptq_value *in = &g->values[g->inputs[0]];
    ptq_preprocess_default(p);
    const int said = input_geometry(g, in, p);
    const ptq_preprocess model_geometry = *p;
    const char *meta = ptq_graph_meta(g, "ptq.preprocess");
    int meta_normalizes = 0, named = 0;
    if (meta)
        PTQ_TRY_RET(ds_preprocess_parse(ctx, meta, p, &meta_normalizes));
    if (spec) {
        const ptq_preprocess from_meta = *p;
        PTQ_TRY_RET(ds_preprocess_parse(ctx, spec, p, &named));
        PTQ_TRY_RET(check_geometry(ctx, spec, in, &model_geometry, said, p));
        PTQ_TRY_RET(check_order_flip(ctx, spec, meta, &from_meta, p, named));
    }
    *normalizes = meta_normalizes || named;
    *square = model_geometry.height <= 0 && p->resize > 0 && (p->height <= 0 || p->width <= 0);
    if (*square) {
        p->height = p->height > 0 ? p->height : p->resize;
        p->width = p->width > 0 ? p->width : p->resize;
    }
    return PTQ_OK;
}

ptq_status ptq_model_preprocess(ptq_ctx *ctx, const ptq_graph *g, const char *spec, ptq_preprocess *p,
                                int *scale_kept)
{
    int normalizes = 0, square = 0;
    *scale_kept = 0;
    if (!image_model(g)) {
        ptq_preprocess_default(p);
        if (spec)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "--preprocess applies to image inputs; the model's %d input%s "
                            "are fed as stored", g->n_inputs, g->n_inputs == 1 ? "" : "s");
        return PTQ_OK;
    }
    ptq_preprocess q;
    PTQ_TRY_RET(image_preprocess(ctx, g, spec, &q, &normalizes, &square));
    *p = q;
    *scale_kept = spec_names(spec, "scale");
    return PTQ_OK;
}

/* Each --input entry names a model input, once, and a dataset. */
static ptq_status check_input_map(ptq_ctx *ctx, const ptq_session_opts *o, const ptq_graph *g)
{
    char ins[1024];
    if (o->n_inputs < 0 || (o->n_inputs > 0 && !o->inputs))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "bad input map: %d entries", o->n_inputs);
    for (int k = 0; k < o->n_inputs; k++) {
        const ptq_input_map *m = &o->inputs[k];
        int found = 0;
        for (int i = 0; m->input && i < g->n_inputs; i++)
            found |= strcmp(g->values[g->inputs[i]].name, m->input) == 0;
        if (!found) {
            list_values(g, g->inputs, g->n_inputs, NULL, ins, sizeof ins);
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: the model has no input '%s' (--input); its inputs: %s",
                            o->model, m->input ? m->input : "", ins);
        }
        if (!m->dataset || !m->dataset[0])
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "--input %s= names no dataset", m->input);
        for (int j = 0; j < k; j++)
            if (strcmp(o->inputs[j].input, m->input) == 0)
                return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "--input names the model input '%s' twice", m->input);
    }
    return PTQ_OK;
}

/* The dataset feeding model input name: its --input entry, else its own name. */
static const char *input_key(const ptq_session_opts *o, const char *name)
{
    for (int k = 0; k < o->n_inputs; k++)
        if (strcmp(o->inputs[k].input, name) == 0)
            return o->inputs[k].dataset;
    return name;
}

/* The dtype data stored as `stored` is read as for a model input of dtype
 * `model`: the input's own, when every stored value fits it (int64 takes
 * any integer ptq reads, int32 those up to 32 bits but uint32); else
 * PTQ_DT_UNDEFINED. */
static ptq_dtype read_as(ptq_dtype model, ptq_dtype stored)
{
    const int small_int = stored == PTQ_DT_INT8 || stored == PTQ_DT_INT16 || stored == PTQ_DT_INT32 ||
                          stored == PTQ_DT_UINT8 || stored == PTQ_DT_UINT16 || stored == PTQ_DT_BOOL;
    switch (model) {
    case PTQ_DT_INT64: return small_int || stored == PTQ_DT_INT64 || stored == PTQ_DT_UINT32 ? model : PTQ_DT_UNDEFINED;
    case PTQ_DT_INT32: return small_int ? model : PTQ_DT_UNDEFINED;
    case PTQ_DT_UINT8: return stored == PTQ_DT_UINT8 || stored == PTQ_DT_BOOL ? model : PTQ_DT_UNDEFINED;
    case PTQ_DT_BOOL: return stored == PTQ_DT_BOOL ? model : PTQ_DT_UNDEFINED;
    case PTQ_DT_FLOAT:
        return stored == PTQ_DT_FLOAT || stored == PTQ_DT_FLOAT16 || stored == PTQ_DT_DOUBLE ? model : PTQ_DT_UNDEFINED;
    default: return PTQ_DT_UNDEFINED;
    }
}

/* Named input i against array a of the data: dtype (read_as) and the
 * sample shape; the input's dynamic dims past the batch take the data's,
 * in the graph too, so shapes inferred later are the run's. */
static ptq_status fit_named_input(ptq_ctx *ctx, ptq_session *s, const char *data, int i, const ptq_dataset_array *a)
{
    ptq_value *v = &s->graph->values[s->graph->inputs[i]];
    ptq_tensor *m = &s->in_meta[i];
    char want[96], got[96];
    const ptq_dtype as = read_as(v->dtype, a->dtype);
    if (as == PTQ_DT_UNDEFINED)
        return ptq_fail(ctx, PTQ_ERR_DATA,
                        "model input '%s' is %s but dataset '%s' in %s is %s; ptq feeds integer inputs from integer "
                        "or bool data that fits and float inputs from float data",
                        v->name, ptq_dtype_name(v->dtype), a->key, data, ptq_dtype_name(a->dtype));
    int ok = v->ndim < 0 || v->ndim == a->ndim;
    for (int d = 1; ok && v->ndim >= 0 && d < v->ndim; d++)
        ok = v->dims[d] < 0 || v->dims[d] == a->dims[d];
    if (!ok)
        return ptq_fail(ctx, PTQ_ERR_SHAPE, "model input '%s' takes [%s] but dataset '%s' in %s is [%s]", v->name,
                        v->ndim >= 0 ? ptq_dims_str(v->dims, v->ndim, want, sizeof want) : "?", a->key, data,
                        ptq_dims_str(a->dims, a->ndim, got, sizeof got));
    if (v->ndim < 0) {
        v->ndim = a->ndim;
        v->dims[0] = -1;
    }
    for (int d = 1; d < v->ndim; d++)
        v->dims[d] = a->dims[d];
    m->dtype = as;
    m->ndim = v->ndim;
    memcpy(m->dims, v->dims, sizeof m->dims);
    m->dims[0] = 0;
    if (as != a->dtype)
        note(s, "dataset '%s' (%s) is fed to the model input '%s' as %s\n", a->key, ptq_dtype_name(a->dtype), v->name,
             ptq_dtype_name(as));
    return PTQ_OK;
}

/* Inputs whose declarations name a dim alike (input_ids and attention_mask both [N, L]) are fed datasets of one size
 * there, else refused naming both: the model would otherwise fail in some node that mixes them (exit 6, "cannot
 * broadcast"), or run on mismatched rows. The batch dim is the datasets' shared count already. */
static ptq_status check_shared_dims(ptq_ctx *ctx, const ptq_session *s, const char *data)
{
    const ptq_graph *g = s->graph;
    for (int i = 0; i < g->n_inputs; i++)
        for (int a = 1; a < g->values[g->inputs[i]].ndim; a++) {
            const char *name = ptq_graph_input_dim_name(g, i, a);
            for (int j = i; name && j < g->n_inputs; j++)
                for (int b = 1; b < g->values[g->inputs[j]].ndim; b++) {
                    const char *other = ptq_graph_input_dim_name(g, j, b);
                    const ptq_dataset_array *x = ptq_dataset_array_info(s->data, i);
                    const ptq_dataset_array *y = ptq_dataset_array_info(s->data, j);
                    if ((j == i && b <= a) || !other || strcmp(name, other) || x->dims[a] == y->dims[b])
                        continue;
                    char esc[160], xd[96], yd[96];
                    return ptq_fail(ctx, PTQ_ERR_SHAPE,
                                    "model inputs '%s' (dim %d) and '%s' (dim %d) share the dim '%s', but dataset "
                                    "'%s' in %s is [%s] and dataset '%s' is [%s]", g->values[g->inputs[i]].name, a,
                                    g->values[g->inputs[j]].name, b, ptq_escape(name, esc, sizeof esc), x->key, data,
                                    ptq_dims_str(x->dims, x->ndim, xd, sizeof xd), y->key,
                                    ptq_dims_str(y->dims, y->ndim, yd, sizeof yd));
                }
        }
    return PTQ_OK;
}

/* A model that is not one image input: every input from its dataset. */
static ptq_status open_named(ptq_ctx *ctx, ptq_session *s, const ptq_session_opts *o)
{
    ptq_graph *g = s->graph;
    s->named = 1;
    if (o->preprocess)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                        "%s: --preprocess applies to image inputs; the model's %d input%s are fed as stored", o->model,
                        g->n_inputs, g->n_inputs == 1 ? "" : "s");
    if (g->n_inputs < 1 || g->n_inputs > PTQ_DATASET_MAX_ARRAYS)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "%s: the model has %d inputs; ptq feeds 1 to %d", o->model,
                        g->n_inputs, PTQ_DATASET_MAX_ARRAYS);
    s->in_meta = calloc((size_t)g->n_inputs, sizeof *s->in_meta);
    s->in_keys = calloc((size_t)g->n_inputs, sizeof *s->in_keys);
    if (!s->in_meta || !s->in_keys)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory opening a session");
    for (int i = 0; i < g->n_inputs; i++) {
        const ptq_value *v = &g->values[g->inputs[i]];
        if (read_as(v->dtype, v->dtype) == PTQ_DT_UNDEFINED)
            return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED,
                            "%s: input '%s' is %s; ptq feeds int64, int32, uint8, bool and float32 inputs", o->model,
                            v->name, ptq_dtype_name(v->dtype));
        if (!(s->in_keys[i] = strdup(input_key(o, v->name))))
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory opening a session");
        s->in_meta[i].dtype = v->dtype;
        s->in_meta[i].ndim = v->ndim;
        memcpy(s->in_meta[i].dims, v->dims, sizeof v->dims);
        s->in_meta[i].dims[0] = 0;
    }
    if (!o->data)
        return PTQ_OK;
    ptq_status st = ptq_dataset_open_arrays(ctx, o->data, &o->dataset, (const char *const *)s->in_keys,
                                            g->n_inputs, &s->data);
    if (st == PTQ_ERR_DATA && strncmp(ctx->msg, "no dataset ", 11) == 0) { /* say where the name came from */
        char why[PTQ_MSG_BYTES];
        snprintf(why, sizeof why, "%s", ctx->msg);
        return ptq_fail(ctx, st, "%s; each model input reads the dataset of its name unless --input NAME=DATASET "
                        "names another", why);
    }
    if (st != PTQ_OK)
        return st;
    for (int i = 0; i < g->n_inputs; i++)
        PTQ_TRY_RET(fit_named_input(ctx, s, o->data, i, ptq_dataset_array_info(s->data, i)));
    PTQ_TRY_RET(check_shared_dims(ctx, s, o->data));
    s->n_samples = ptq_dataset_count(s->data);
    return PTQ_OK;
}

/* Bytes of each value of g [n_values] at the batch its shapes were inferred at (0 where unknown). */
static void values_bytes(const ptq_graph *g, double *bytes)
{
    for (int v = 0; v < g->n_values; v++) {
        const ptq_value *val = &g->values[v];
        const size_t elem = ptq_dtype_size(val->dtype);
        double b = val->ndim < 0 ? 0.0 : (double)(elem ? elem : 4);
        for (int d = 0; d < val->ndim; d++)
            b *= val->dims[d] > 0 ? (double)val->dims[d] : 0.0;
        bytes[v] = b;
    }
}

/* What each value of g takes at batch 1 (*bytes_1) and per further sample (*per_sample), from its shapes
 * inferred at batches 1 and 2, for the runner's memory estimate: a value whose batch is not dim 0 (a
 * sequence-first [L, N, D]) counts whole. g's shapes are batch 1's again after. Both NULL when batch 2's
 * cannot be inferred (the estimate then takes dim 0 as the batch). */
static void batch_scaling(ptq_graph *g, double **bytes_1, double **per_sample, int *rows_independent)
{
    ptq_ctx scratch;
    double *b1 = malloc(((size_t)g->n_values + 1) * sizeof *b1), *b2 = malloc(((size_t)g->n_values + 1) * sizeof *b2);
    ptq_value *at2 = malloc(((size_t)g->n_values + 1) * sizeof *at2); /* the shapes at batch 2 */
    *bytes_1 = *per_sample = NULL;
    *rows_independent = 0;
    int ok = b1 && b2 && at2;
    if (ok) {
        values_bytes(g, b1);
        ptq_ctx_init(&scratch);
        ok = ptq_graph_infer_shapes(&scratch, g, 2) == PTQ_OK;
        if (ok) {
            values_bytes(g, b2);
            memcpy(at2, g->values, (size_t)g->n_values * sizeof *at2);
        }
        ptq_ctx_init(&scratch);
        ok = ptq_graph_infer_shapes(&scratch, g, 1) == PTQ_OK && ok; /* batch 1's shapes back, whatever 2 did */
    }
    if (ok)
        *rows_independent = ptq_graph_rows_independent(g, g->values, at2);
    free(at2);
    if (!ok) {
        free(b1);
        free(b2);
        return;
    }
    for (int v = 0; v < g->n_values; v++)
        b2[v] = b2[v] > b1[v] ? b2[v] - b1[v] : 0.0;
    *bytes_1 = b1;
    *per_sample = b2;
}

/* Samples per pass of a long batch on the CPU: as many as keep the values alive at once within PASS_BYTES, by the
 * executor's estimate, and at least PASS_ROWS_MIN (ptq_exec_set_pass_auto: on several threads the passes run side
 * by side, and runs with taps whole). PTQ_PASS_ROWS, when set, instead (0: whole batches; N: passes of N on any
 * number of threads, with taps too: ptq_exec_set_pass_rows). */
static void set_pass_rows(ptq_exec *e)
{
    const char *env = getenv("PTQ_PASS_ROWS");
    if (env && *env) {
        char *end;
        const long long v = strtoll(env, &end, 10);
        ptq_exec_set_pass_rows(e, *end == '\0' && v > 0 ? (int64_t)v : 0);
        return;
    }
    const double per = ptq_exec_live_estimate(e, 2) - ptq_exec_live_estimate(e, 1);
    const int64_t least = PASS_ROWS_MIN;
    if (!(per > 0.0))
        return;
    const double fit = (double)PASS_BYTES / per;
    ptq_exec_set_pass_auto(e, fit < (double)least ? least : fit > 4096.0 ? 4096 : (int64_t)fit);
}

ptq_status ptq_session_open(ptq_ctx *ctx, const ptq_session_opts *o, ptq_session **out)
{
    ptq_status st = PTQ_OK;
    double *bytes_1 = NULL, *per_sample = NULL; /* [n_values], for the memory estimate */
    int rows_independent = 0; /* ptq_graph_rows_independent */
    *out = NULL;
    ptq_session *s = calloc(1, sizeof *s);
    if (!s)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory opening a session");
    ptq_device device = PTQ_DEVICE_CPU;
    int ordinal = 0;
    PTQ_TRY(st, pick_device(ctx, o, s, &device, &ordinal), fail);
    PTQ_TRY(st, ptq_model_load(ctx, o->model, &s->graph), fail);
    const ptq_graph *g = s->graph;
    if (g->n_outputs < 1) {
        st = ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "%s: the model has no outputs", o->model);
        goto fail;
    }
    const char *half = ptq_graph_meta(g, "keras_dtype_policy");
    if (half && g->producer && !strcmp(g->producer, "ptq keras import"))
        note(s, "%s: Keras computes this model in reduced precision (dtype policy %s); ptq computes it in float32, so "
             "its FP32 outputs differ from Keras's by that rounding\n", o->model, half);
    PTQ_TRY(st, check_input_map(ctx, o, g), fail);
    const ptq_value *in = g->n_inputs > 0 ? &g->values[g->inputs[0]] : NULL;
    if (!image_model(g)) {
        PTQ_TRY(st, open_named(ctx, s, o), fail);
        goto shapes;
    }
    ptq_dataset_opts dopts = o->dataset;
    if (o->n_inputs == 1) { /* --input IMAGE=KEY names the images dataset */
        struct stat sb;
        if (o->data && stat(o->data, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s is an image folder, but --input %s=%s names a dataset of an "
                          "HDF5 file (it would be ignored)", o->data, o->inputs[0].input, o->inputs[0].dataset);
            goto fail;
        }
        if (dopts.images_key && strcmp(dopts.images_key, o->inputs[0].dataset) != 0) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "--input %s=%s and --images-key %s name different datasets",
                          o->inputs[0].input, o->inputs[0].dataset, dopts.images_key);
            goto fail;
        }
        dopts.images_key = o->inputs[0].dataset;
    }
    const char *meta = ptq_graph_meta(g, "ptq.preprocess");
    int normalizes = 0, square = 0;
    PTQ_TRY(st, image_preprocess(ctx, g, o->preprocess, &s->pre, &normalizes, &square), fail);
    if (!normalizes)
        note(s,
             "warning: the model%s and %s; assuming pixels scaled to [0, 1] "
             "(scale=1/255 mean=0 std=1 order=RGB layout=%s); %s (e.g. imagenet) if the model was trained "
             "otherwise\n",
             meta ? "'s ptq.preprocess metadata names no normalization" : " has no ptq.preprocess metadata",
             o->preprocess ? "--preprocess names only geometry (no scale=, mean=, std=, order= nor preset)"
                           : "no --preprocess was given",
             s->pre.nhwc ? "NHWC" : "NCHW", o->preprocess ? "name them in --preprocess" : "pass --preprocess");
    int c_axis = s->pre.nhwc ? 3 : 1, h_axis = s->pre.nhwc ? 1 : 2, w_axis = s->pre.nhwc ? 2 : 3;
    s->channels = in->dims[c_axis];
    s->height = in->dims[h_axis];
    s->width = in->dims[w_axis];

    if (o->data) {
        if (s->pre.resize == 0) { /* the size tells NHWC from NCHW where the shape fits both */
            dopts.fit_height = s->height > 0 ? s->height : s->pre.height;
            dopts.fit_width = s->width > 0 ? s->width : s->pre.width;
        }
        dopts.fit_channels = s->channels > 0 ? s->channels : 0;
        PTQ_TRY(st, ptq_dataset_open(ctx, o->data, &dopts, &s->data), fail);
        note(s, "%s", ptq_dataset_notes(s->data));
        s->n_samples = ptq_dataset_count(s->data);
        if (s->n_samples <= 0) {
            st = ptq_fail(ctx, PTQ_ERR_DATA, "%s: the data set holds no samples", o->data);
            goto fail;
        }
        int64_t dh, dw, dc;
        ptq_dataset_geometry(s->data, &dh, &dw, &dc);
        if (s->channels < 0)
            s->channels = dc;
        const int first_size = (s->height < 0 && s->pre.height <= 0) || (s->width < 0 && s->pre.width <= 0);
        if (s->height < 0) /* a dynamic input: the crop a spec, preset or resize= set, else the images' size */
            s->height = s->pre.height > 0 ? s->pre.height : dh;
        if (s->width < 0)
            s->width = s->pre.width > 0 ? s->pre.width : dw;
        char dims[96];
        if (square)
            note(s, "the model input '%s' [%s] has a dynamic size: resize=%lld with no size= crops %lldx%lld "
                 "(width x height; torchvision's Resize + CenterCrop); name size=HxW in --preprocess for another "
                 "crop\n", in->name, ptq_dims_str(in->dims, in->ndim, dims, sizeof dims), (long long)s->pre.resize,
                 (long long)s->width, (long long)s->height);
        else if (first_size)
            note(s, "the model input '%s' [%s] has a dynamic size: it runs at the first image's size %lldx%lld "
                 "(width x height) of %s; name size=HxW (and resize=) in --preprocess for another\n", in->name,
                 ptq_dims_str(in->dims, in->ndim, dims, sizeof dims), (long long)s->width, (long long)s->height,
                 o->data);
        if ((dh != s->height || dw != s->width) && s->pre.resize == 0) {
            st = ptq_fail(ctx, PTQ_ERR_SHAPE,
                          "%s: images are %lldx%lld (width x height) but the model input '%s' takes %lldx%lld; pass "
                          "--preprocess resize=<shorter side> to resize and center-crop",
                          o->data, (long long)dw, (long long)dh, in->name, (long long)s->width, (long long)s->height);
            goto fail;
        }
        /* an image folder can mix channel counts, so its first image speaks for none of the rest: the commands
         * count them as they read (ptq_dataset_read_kinds) */
        const int hdf5 = strcmp(ptq_dataset_kind(s->data), "hdf5") == 0;
        if (hdf5 && (dc == 1 || dc == 2) && s->channels == 3)
            note(s, "grayscale images into the model's 3 channels: the gray value is replicated to R, G and B\n");
        else if (hdf5 && dc != s->channels && s->channels == 4)
            note(s, "%lld-channel images into the model's 4 channels (RGBA): %s\n", (long long)dc,
                 dc == 1   ? "the gray value replicated to R, G and B, alpha opaque"
                 : dc == 2 ? "the gray value replicated to R, G and B, alpha kept"
                           : "alpha opaque");
        else if (hdf5 && dc != s->channels && !(dc == 4 && s->channels == 3) && !(dc == 2 && s->channels == 1))
            note(s, "%lld-channel images into the model's 1 channel: gray by ITU-R 601 luma (0.299 R + 0.587 G + "
                 "0.114 B, after any resize and not rounded)%s\n", (long long)dc, dc == 4 ? ", alpha dropped" : "");
        PTQ_TRY(st, pick_float_scale(ctx, s, o), fail);
    }
    if (s->channels != 1 && s->channels != 3 && s->channels != 4) {
        st = ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "%s: input '%s' [%s] has %lld channels; images give 1, 3 or 4", o->model,
                      in->name, s->pre.nhwc ? "N,H,W,C" : "N,C,H,W", (long long)s->channels);
        goto fail;
    }
    s->pre.n_channels = (int)s->channels;
    s->pre.height = s->height;
    s->pre.width = s->width;
    if (s->height > 0 && s->width > 0) { /* a dynamic size is the run's from here on, in the graph too (as
                                            fit_named_input does for other inputs): shapes inferred later are
                                            the run's */
        int64_t *dims = s->graph->values[s->graph->inputs[0]].dims;
        dims[c_axis] = s->channels;
        dims[h_axis] = s->height;
        dims[w_axis] = s->width;
    }
shapes:
    /* shapes at batch 1, once: for the runner's memory estimate and the
     * commands that need every tensor's dtype (ptq_session_shapes); a graph
     * whose shapes depend on its data keeps them unknown (the executor
     * infers its own) */
    ptq_ctx_init(&s->shapes); /* a statement first: a label before a declaration is C23, refused by clang's C11 */
    ptq_value *declared = malloc((size_t)s->graph->n_outputs * sizeof *declared + 1); /* NULL: messages at batch 1 */
    for (int i = 0; declared && i < s->graph->n_outputs; i++)
        declared[i] = s->graph->values[s->graph->outputs[i]];
    s->shapes.code = ptq_graph_infer_shapes(&s->shapes, s->graph, 1);
    if (s->shapes.code == PTQ_OK)
        batch_scaling(s->graph, &bytes_1, &per_sample, &rows_independent);
    ptq_ctx_init(&s->logits_st);
    s->logits_st.code = pick_logits(&s->logits_st, s, o->model, o->output, declared);
    free(declared);
    if (s->logits_st.code == PTQ_ERR_INVALID_ARG) { /* a name that is not there is a mistake whatever runs */
        *ctx = s->logits_st;
        st = s->logits_st.code;
        goto fail;
    }
    if (in->dims[0] > 0) {
        s->fixed_batch = in->dims[0];
        note(s, "the model input '%s' has a fixed batch of %lld: running %lld sample%s at a time\n", in->name,
             (long long)s->fixed_batch, (long long)s->fixed_batch, s->fixed_batch == 1 ? "" : "s");
    }
    ptq_exec_params ep = {device, ordinal, NULL, NULL, o->profile, o->math};
    if (o->math != PTQ_MATH_FP32 && device != PTQ_DEVICE_CUDA)
        note(s, "--math %s applies to the GPU; %s\n", ptq_math_name(o->math),
             device == PTQ_DEVICE_REF ? "the reference kernels sum their products in double"
             : o->math == PTQ_MATH_FP64 ? "the CPU computes in FP32 (--device ref sums in double)"
                                        : "the CPU computes in FP32");
    PTQ_TRY(st, ptq_exec_create(ctx, g, &ep, &s->exec), fail);
    if (bytes_1)
        PTQ_TRY(st, ptq_exec_set_value_bytes(ctx, s->exec, bytes_1, per_sample), fail);
    free(bytes_1);
    free(per_sample);
    bytes_1 = per_sample = NULL;
    if (rows_independent && s->fixed_batch == 0)
        set_pass_rows(s->exec);
#ifdef PTQ_CUDA
    struct ptq_cuda_dev *gpu = ptq_exec_cuda_dev(s->exec);
    if (gpu && ptq_cuda_dev_note(gpu)[0]) /* cuDNN missing: the GPU runs, convolutions slower */
        note(s, "%s\n", ptq_cuda_dev_note(gpu));
#endif
    *out = s;
    return PTQ_OK;
fail:
    free(bytes_1);
    free(per_sample);
    ptq_session_close(s);
    return st;
}

void ptq_session_close(ptq_session *s)
{
    if (!s)
        return;
    ptq_exec_free(s->exec);
    ptq_dataset_close(s->data);
    for (int i = 0; s->in_keys && i < s->graph->n_inputs; i++)
        free(s->in_keys[i]);
    free(s->in_keys);
    free(s->in_meta);
    ptq_graph_free(s->graph);
    free(s);
}

ptq_graph *ptq_session_graph(const ptq_session *s)
{
    return s->graph;
}

ptq_exec *ptq_session_exec(const ptq_session *s)
{
    return s->exec;
}

ptq_dataset *ptq_session_dataset(const ptq_session *s)
{
    return s->data;
}

const ptq_preprocess *ptq_session_preprocess(const ptq_session *s)
{
    return &s->pre;
}

int64_t ptq_session_n_samples(const ptq_session *s)
{
    return s->n_samples;
}

void ptq_session_input_shape(const ptq_session *s, int64_t *channels, int64_t *height, int64_t *width)
{
    *channels = s->channels;
    *height = s->height;
    *width = s->width;
}

ptq_status ptq_session_shapes(ptq_ctx *ctx, const ptq_session *s)
{
    if (s->shapes.code != PTQ_OK)
        *ctx = s->shapes;
    return s->shapes.code;
}

const char *ptq_session_notes(const ptq_session *s)
{
    return s->notes;
}

ptq_status ptq_session_logits_output(ptq_ctx *ctx, const ptq_session *s, int *index)
{
    *index = s->logits;
    if (s->logits_st.code != PTQ_OK)
        *ctx = s->logits_st;
    return s->logits_st.code;
}

int64_t ptq_session_fixed_batch(const ptq_session *s)
{
    return s->fixed_batch;
}

int ptq_session_named_inputs(const ptq_session *s)
{
    return s->named;
}

ptq_status ptq_session_input_meta(ptq_ctx *ctx, const ptq_session *s, int i, ptq_tensor *meta, const char **dataset)
{
    if (dataset)
        *dataset = NULL;
    if (i < 0 || i >= s->graph->n_inputs)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the model has no input %d (it has %d)", i, s->graph->n_inputs);
    if (s->named) {
        *meta = s->in_meta[i];
        if (dataset)
            *dataset = s->in_keys[i];
        return PTQ_OK;
    }
    const int64_t c = s->channels, h = s->height, w = s->width;
    ptq_tensor t = {PTQ_DT_FLOAT, 4, {0, c, h, w}, NULL, PTQ_MEM_HOST, 0};
    if (s->pre.nhwc) {
        t.dims[1] = h;
        t.dims[2] = w;
        t.dims[3] = c;
    }
    *meta = t;
    return PTQ_OK;
}

char *ptq_session_data_spec(const ptq_session *s, char *buf, size_t n_buf)
{
    if (!s->named)
        return ptq_preprocess_format(&s->pre, buf, n_buf);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < s->graph->n_inputs && used + 1 < n_buf; i++) {
        int k = snprintf(buf + used, n_buf - used, "%s%s:%s", i ? "," : "inputs=",
                         s->graph->values[s->graph->inputs[i]].name, s->in_keys[i]);
        if (k < 0)
            break;
        used += (size_t)k < n_buf - used ? (size_t)k : n_buf - used - 1;
    }
    return buf;
}
