/* Resize (opset 10, 11, 13, 18, 19: modes nearest, linear and cubic on any axes; every coordinate_transformation_mode
 * and nearest_mode; cubic_coeff_a, exclude_outside, extrapolation_value; scales or sizes, an empty one as absent;
 * axes and keep_aspect_ratio_policy from 18; antialias refused) and Upsample (opset 7 with its scales attribute, 9
 * with a scales input; nearest and linear) on float32, through kernels/ref/resize.c, the CPU path too; the CUDA
 * backend hands them to the CPU. torch's F.interpolate and nn.Upsample export these (UNet, FPN). Before opset 11 and
 * in Upsample, coordinates are x / scale and nearest takes onnxruntime's rule (ceil where the axis shrinks, else
 * floor). Covered by the ONNX conformance run, tests/ops_resize_test.py and tests/badinput_test.py. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/op_util.h"

#define RESIZE_MAX_ELEMS ((int64_t)1 << 40) /* an output past this is a hostile scales or sizes input */

/* The index in names [n] of string attribute `name` (dflt when absent); UNSUPPORTED listing names otherwise. */
static ptq_status attr_choice(ptq_ctx *ctx, const ptq_op_io *io, const char *name, const char *const *names, int n,
                              int dflt, int *out)
{
    const ptq_attr *a = ptq_node_attr(io->node, name);
    char list[256] = "";
    *out = dflt;
    if (!a)
        return PTQ_OK;
    for (int k = 0; k < n; k++) {
        if (a->type == PTQ_ATTR_STRING && strcmp(a->s, names[k]) == 0) {
            *out = k;
            return PTQ_OK;
        }
        const size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s", k ? ", " : "", names[k]);
    }
    return ptq_op_unsupported(ctx, io, "%s must be one of %s, got '%s'", name, list,
                              a->type == PTQ_ATTR_STRING ? a->s : "(not a string)");
}

/* Input i when present with elements (an empty name or an empty tensor is absent, as ONNX allows), else NULL. */
static const ptq_tensor *given(const ptq_op_io *io, int i)
{
    const ptq_tensor *t = i < io->n_in ? io->in[i] : NULL;
    return t && ptq_tensor_numel(t) > 0 ? t : NULL;
}

/* The attributes (mode, coordinates, rounding, cubic's) into *p; *axes [PTQ_MAX_DIMS] and *n_axes the axes resized
 * (every axis but from opset 18's axes attribute). */
static ptq_status resize_attrs(ptq_ctx *ctx, const ptq_op_io *io, int legacy, ptq_resize_params *p, int *axes,
                               int *n_axes)
{
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const coords[] = {"half_pixel",  "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                         "asymmetric",  "tf_half_pixel_for_nn", "tf_crop_and_resize"};
    static const char *const rounds[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    const int64_t opset = io->graph->opset;
    const int rank = p->ndim;
    int k = 0;
    PTQ_TRY_RET(attr_choice(ctx, io, "mode", modes, legacy ? 2 : 3, 0, &k));
    p->mode = (ptq_resize_mode)k;
    *n_axes = rank;
    for (int d = 0; d < rank; d++)
        axes[d] = d;
    if (legacy) { /* Upsample, Resize 10 */
        p->coord = PTQ_RESIZE_ASYMMETRIC;
        p->round = PTQ_RESIZE_SIMPLE;
        return PTQ_OK;
    }
    PTQ_TRY_RET(attr_choice(ctx, io, "coordinate_transformation_mode", coords, 7, 0, &k));
    p->coord = (ptq_resize_coord)k;
    if (p->coord == PTQ_RESIZE_TF_HALF_PIXEL_FOR_NN && opset >= 13)
        return ptq_op_unsupported(ctx, io, "coordinate_transformation_mode tf_half_pixel_for_nn is Resize 11's only "
                                  "(removed in opset 13)");
    if (p->coord == PTQ_RESIZE_HALF_PIXEL_SYMMETRIC && opset < 19)
        return ptq_op_unsupported(ctx, io, "coordinate_transformation_mode half_pixel_symmetric comes in opset 19");
    PTQ_TRY_RET(attr_choice(ctx, io, "nearest_mode", rounds, 4, 0, &k));
    p->round = (ptq_resize_round)k;
    p->cubic_a = ptq_node_attr_float(io->node, "cubic_coeff_a", -0.75f);
    p->extrapolation = ptq_node_attr_float(io->node, "extrapolation_value", 0.0f);
    const int64_t exclude = ptq_node_attr_int(io->node, "exclude_outside", 0);
    if (exclude != 0 && exclude != 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "exclude_outside must be 0 or 1, got %lld", (long long)exclude);
    p->exclude_outside = (int)exclude;
    if (!isfinite(p->cubic_a))
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "cubic_coeff_a must be finite, got %g", (double)p->cubic_a);
    if (ptq_node_attr_int(io->node, "antialias", 0) != 0)
        return ptq_op_unsupported(ctx, io, "antialias is not supported (torch's F.interpolate(antialias=True))");
    const ptq_attr *a = ptq_node_attr(io->node, "axes");
    if (a) {
        unsigned char seen[PTQ_MAX_DIMS] = {0};
        if (a->type != PTQ_ATTR_INTS || a->n < 1 || a->n > rank)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "axes must be 1 to %d ints for rank %d", rank, rank);
        for (int64_t i = 0; i < a->n; i++) {
            const int64_t v = a->ints[i];
            if (v < -rank || v >= rank || seen[v < 0 ? v + rank : v])
                return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "axes entry %lld is out of range for rank %d or repeated",
                                   (long long)v, rank);
            axes[i] = (int)(v < 0 ? v + rank : v);
            seen[axes[i]] = 1;
        }
        *n_axes = (int)a->n;
    }
    return PTQ_OK;
}

/* The scales: the attribute (Upsample before opset 9) or the float32 input s, n_axes values, finite and > 0 (1 or
 * more for Upsample), into p->scales at the axes; output dims floor(in * scale) in float as onnxruntime's. */
static ptq_status resize_scales(ptq_ctx *ctx, const ptq_op_io *io, const ptq_tensor *s, const int *axes, int n_axes,
                                int upsample, ptq_resize_params *p)
{
    const float *v = NULL;
    int64_t n = 0;
    if (s) {
        if (s->dtype != PTQ_DT_FLOAT || s->ndim != 1)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "scales must be 1-D float32, got %s of rank %d",
                               ptq_dtype_name(s->dtype), s->ndim);
        v = s->data;
        n = s->dims[0];
    } else {
        const ptq_attr *a = ptq_node_attr(io->node, "scales");
        if (!a || a->type != PTQ_ATTR_FLOATS)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the scales attribute (floats) is missing");
        v = a->floats;
        n = a->n;
    }
    if (n != n_axes)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "scales has %lld values for %d axes", (long long)n, n_axes);
    for (int i = 0; i < n_axes; i++) {
        const int d = axes[i];
        if (!isfinite(v[i]) || v[i] <= 0 || (upsample && v[i] < 1))
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "scale %g of axis %d must be finite and %s", (double)v[i], d,
                               upsample ? "1 or more (Upsample)" : "above 0");
        const float out = v[i] * (float)p->in_dims[d];
        if (!(out < (float)RESIZE_MAX_ELEMS))
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "scale %g makes axis %d of %lld longer than 2^40", (double)v[i],
                               d, (long long)p->in_dims[d]);
        /* ONNX's align_corners (its reference, onnx/onnx#2462) divides by in * scale, torch and onnxruntime by
         * the output's length: where the two differ, neither answer is safe to give */
        if (p->coord == PTQ_RESIZE_ALIGN_CORNERS && out != floorf(out))
            return ptq_op_unsupported(ctx, io, "align_corners with scale %g on axis %d of %lld (%g, not whole): ONNX "
                                      "divides by that length, torch and onnxruntime by the %lld made; export with "
                                      "size= (sizes) instead", (double)v[i], d, (long long)p->in_dims[d], (double)out,
                                      (long long)out);
        p->scales[d] = v[i];
        p->out_dims[d] = (int64_t)out;
    }
    return PTQ_OK;
}

/* The int64 sizes input s (n_axes values, 0 to 2^40) into p->out_dims at the axes, scales out / in; with
 * keep_aspect_ratio_policy not_larger / not_smaller one scale for the axes, the least / largest of out / in, and
 * each size round(scale * in). */
static ptq_status resize_sizes(ptq_ctx *ctx, const ptq_op_io *io, const ptq_tensor *s, const int *axes, int n_axes,
                               ptq_resize_params *p)
{
    static const char *const policies[] = {"stretch", "not_larger", "not_smaller"};
    int policy = 0;
    if (s->dtype != PTQ_DT_INT64 || s->ndim != 1 || s->dims[0] != n_axes)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "sizes must be 1-D int64 of %d values, got %s of %lld", n_axes,
                           ptq_dtype_name(s->dtype), (long long)ptq_tensor_numel(s));
    PTQ_TRY_RET(attr_choice(ctx, io, "keep_aspect_ratio_policy", policies, 3, 0, &policy));
    const int64_t *v = s->data;
    float ratio = policy == 1 ? INFINITY : 0;
    for (int i = 0; i < n_axes; i++) {
        const int d = axes[i];
        if (v[i] < 0 || v[i] > RESIZE_MAX_ELEMS)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "size %lld of axis %d is out of range (0 to 2^40)",
                               (long long)v[i], d);
        if (p->in_dims[d] == 0 && v[i] > 0)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %d is empty: nothing to resize to %lld", d,
                               (long long)v[i]);
        const float r = p->in_dims[d] ? (float)v[i] / (float)p->in_dims[d] : 1.0f;
        ratio = policy == 1 ? fminf(ratio, r) : fmaxf(ratio, r);
        p->out_dims[d] = v[i];
        p->scales[d] = r;
    }
    for (int i = 0; policy != 0 && i < n_axes; i++) {
        const int d = axes[i];
        const float out = roundf(ratio * (float)p->in_dims[d]);
        if (!(ratio > 0) || !(out < (float)RESIZE_MAX_ELEMS))
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "keep_aspect_ratio_policy %s gives axis %d a scale of %g",
                               policies[policy], d, (double)ratio);
        p->scales[d] = ratio;
        p->out_dims[d] = (int64_t)out;
    }
    return PTQ_OK;
}

/* tf_crop_and_resize's roi (float32 or float64, the starts then the ends of the axes) into p. */
static ptq_status resize_roi(ptq_ctx *ctx, const ptq_op_io *io, const ptq_tensor *roi, const int *axes, int n_axes,
                             ptq_resize_params *p)
{
    if (!roi)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "tf_crop_and_resize needs the roi input");
    if ((roi->dtype != PTQ_DT_FLOAT && roi->dtype != PTQ_DT_DOUBLE) || roi->ndim != 1 || roi->dims[0] != 2 * n_axes)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "roi must be 1-D float32 or float64 of %d values, got %s of %lld",
                           2 * n_axes, ptq_dtype_name(roi->dtype), (long long)ptq_tensor_numel(roi));
    for (int i = 0; i < 2 * n_axes; i++) {
        const double v = roi->dtype == PTQ_DT_FLOAT ? ((const float *)roi->data)[i] : ((const double *)roi->data)[i];
        if (!isfinite(v) || fabs(v) > 1e6)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "roi value %g is not finite or past 1e6", v);
        if (i < n_axes)
            p->roi_start[axes[i]] = (float)v;
        else
            p->roi_end[axes[i - n_axes]] = (float)v;
    }
    return PTQ_OK;
}

/* Everything the kernel needs, checked: float32 X of rank 1 or more, the attributes, scales or sizes, the roi. */
static ptq_status resize_params(ptq_ctx *ctx, const ptq_op_io *io, ptq_resize_params *p)
{
    const int upsample = strcmp(io->node->op_type, "Upsample") == 0;
    const int64_t opset = io->graph->opset;
    int axes[PTQ_MAX_DIMS], n_axes = 0;
    PTQ_TRY_RET(ptq_op_need_float(ctx, io, 0));
    const ptq_tensor *x = io->in[0];
    if (upsample && opset >= 10)
        return ptq_op_unsupported(ctx, io, "Upsample is deprecated from opset 10 (onnxruntime refuses it too); "
                                  "export Resize instead");
    if (x->ndim < 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input 0 is a scalar; it needs rank 1 or more");
    memset(p, 0, sizeof *p);
    p->ndim = x->ndim;
    for (int d = 0; d < x->ndim; d++) {
        p->in_dims[d] = p->out_dims[d] = x->dims[d];
        p->scales[d] = 1;
        p->roi_end[d] = 1;
    }
    const int legacy = upsample || opset < 11;
    PTQ_TRY_RET(resize_attrs(ctx, io, legacy, p, axes, &n_axes));
    if (legacy) {
        const ptq_tensor *s = upsample && opset < 9 ? NULL : given(io, 1);
        if (!s && !(upsample && opset < 9))
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "input 1 (scales) is missing or empty");
        PTQ_TRY_RET(resize_scales(ctx, io, s, axes, n_axes, upsample, p));
    } else {
        const ptq_tensor *scales = given(io, 2), *sizes = given(io, 3);
        if (!scales == !sizes)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "give one of scales (input 2) and sizes (input 3), not %s",
                               scales ? "both" : "neither");
        /* keep_aspect_ratio_policy applies to sizes; beside scales only its default, stretch, passes onnx's shape
           inference (and so onnxruntime), and torch 2.x's exporter writes it on every Resize */
        const ptq_attr *policy = ptq_node_attr(io->node, "keep_aspect_ratio_policy");
        if (scales && policy && !(policy->type == PTQ_ATTR_STRING && strcmp(policy->s, "stretch") == 0))
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "keep_aspect_ratio_policy %s applies to sizes, not scales",
                               policy->type == PTQ_ATTR_STRING ? policy->s : "(not a string)");
        if (scales && p->coord == PTQ_RESIZE_TF_CROP_AND_RESIZE)
            return ptq_op_unsupported(ctx, io, "tf_crop_and_resize with scales: ONNX sizes the output by the roi, "
                                      "onnxruntime does not; give sizes");
        if (scales)
            PTQ_TRY_RET(resize_scales(ctx, io, scales, axes, n_axes, 0, p));
        else
            PTQ_TRY_RET(resize_sizes(ctx, io, sizes, axes, n_axes, p));
        if (p->coord == PTQ_RESIZE_TF_CROP_AND_RESIZE)
            PTQ_TRY_RET(resize_roi(ctx, io, given(io, 1), axes, n_axes, p));
    }
    int64_t n = 1;
    for (int d = 0; d < p->ndim; d++) {
        if (p->out_dims[d] > 0 && p->in_dims[d] == 0)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %d is empty: nothing to resize to %lld", d,
                               (long long)p->out_dims[d]);
        if (p->out_dims[d] && n > RESIZE_MAX_ELEMS / p->out_dims[d])
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "the output would hold more than 2^40 elements");
        n *= p->out_dims[d];
    }
    return PTQ_OK;
}

static ptq_status resize_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_resize_params p;
    PTQ_TRY_RET(resize_params(ctx, io, &p));
    ptq_tensor *y = io->out[0];
    y->dtype = PTQ_DT_FLOAT;
    y->ndim = p.ndim;
    memcpy(y->dims, p.out_dims, (size_t)p.ndim * sizeof y->dims[0]);
    return PTQ_OK;
}

static ptq_status resize_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_resize_params p;
    PTQ_TRY_RET(resize_params(ctx, io, &p));
    ptq_k_resize_ref(&p, io->in[0]->data, io->out[0]->data);
    return PTQ_OK;
}

/* roi, scales and sizes (Resize) and scales (Upsample 9) are read on the host */
const ptq_op_def ptq_op_Resize = {PTQ_OP_TRAITS(RESIZE), 10, 1u << 1 | 1u << 2 | 1u << 3, resize_infer, resize_run,
                                  NULL, 0, 0};
const ptq_op_def ptq_op_Upsample = {PTQ_OP_TRAITS(UPSAMPLE), 7, 1u << 1, resize_infer, resize_run, NULL, 0, 0};
