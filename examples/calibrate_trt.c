/* Calibrates an ONNX model on a set of images and writes a TensorRT INT8
 * calibration cache, through libptq's public API only: what `ptq calibrate`
 * followed by `ptq export --format trt` does, without the archive between.
 *   cc calibrate_trt.c $(pkg-config --cflags --libs ptq) -o calibrate_trt
 *   ./calibrate_trt model.onnx images.h5 calib.cache [entropy|minmax|percentile|mse]
 * Covered by tests/install_test.py. */
#include <stdio.h>
#include <stdlib.h>

#include "ptq/calib.h"
#include "ptq/dataset.h"
#include "ptq/export.h"
#include "ptq/fileio.h"
#include "ptq/runtime.h"

enum { BATCH = 64 };

static ptq_status calibrate(ptq_ctx *ctx, const char *model, const char *data, const char *method, ptq_buf *cache)
{
    ptq_status st = PTQ_OK;
    ptq_graph *g = NULL;
    ptq_dataset *ds = NULL;
    ptq_exec *e = NULL;
    ptq_calib_set *set = NULL;
    ptq_calib_range *r = NULL;
    ptq_tensor_range *tr = NULL;
    float *x = NULL;
    ptq_calib_params cp = {PTQ_CALIB_ENTROPY, PTQ_QFORMAT_INT8, 0.0};
    PTQ_TRY(st, ptq_calib_method_parse(ctx, method, &cp.method), done);
    PTQ_TRY(st, ptq_model_load(ctx, model, &g), done);
    PTQ_TRY(st, ptq_graph_infer_shapes(ctx, g, 1), done);
    PTQ_TRY(st, ptq_dataset_open(ctx, data, NULL, &ds), done);

    /* the model's preprocessing (its ptq.preprocess metadata) at its input size */
    ptq_preprocess pre;
    ptq_preprocess_default(&pre);
    if (ptq_graph_meta(g, "ptq.preprocess"))
        PTQ_TRY(st, ptq_preprocess_parse(ctx, ptq_graph_meta(g, "ptq.preprocess"), &pre), done);
    const int64_t *dims = g->values[g->inputs[0]].dims; /* [N, C, H, W] or [N, H, W, C] */
    pre.n_channels = (int)dims[pre.nhwc ? 3 : 1];
    pre.height = dims[pre.nhwc ? 1 : 2];
    pre.width = dims[pre.nhwc ? 2 : 3];

    /* observers on every tensor a plan may quantize, fed by the executor's tap */
    PTQ_TRY(st, ptq_calib_set_create(ctx, g, &(ptq_calib_select){NULL, NULL}, 0, &set), done);
    ptq_exec_params ep = {PTQ_DEVICE_CPU, 0, ptq_calib_set_tap, set, 0, PTQ_MATH_FP32};
    PTQ_TRY(st, ptq_exec_create(ctx, g, &ep, &e), done);
    PTQ_TRY(st, ptq_calib_set_bind(ctx, set, e), done);
    const int64_t n_images = ptq_dataset_count(ds), sample = pre.n_channels * pre.height * pre.width;
    if (!(x = malloc(BATCH * (size_t)sample * sizeof *x))) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for a batch of %d images", BATCH);
        goto done;
    }
    for (int64_t start = 0; start < n_images; start += BATCH) {
        int64_t n = n_images - start < BATCH ? n_images - start : BATCH;
        PTQ_TRY(st, ptq_dataset_read(ctx, ds, start, n, &pre, x, NULL), done);
        ptq_tensor in = {PTQ_DT_FLOAT, 4, {n, pre.n_channels, pre.height, pre.width}, x, PTQ_MEM_HOST, 0};
        if (pre.nhwc)
            in.dims[1] = pre.height, in.dims[2] = pre.width, in.dims[3] = pre.n_channels;
        ptq_tensor out[8]; /* owned by the executor */
        PTQ_TRY(st, ptq_calib_set_observe_inputs(ctx, set, &in), done);
        PTQ_TRY(st, ptq_exec_run(ctx, e, &in, out), done);
    }
    PTQ_TRY(st, ptq_calib_set_sync(ctx, set), done);

    /* ranges by the calibrator, then the cache (TensorRT 10.3.0, EntropyCalibration2 header) */
    const int64_t n = ptq_calib_set_n_tensors(set);
    r = calloc((size_t)n, sizeof *r);
    tr = calloc((size_t)n, sizeof *tr);
    if (!r || !tr) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for %lld ranges", (long long)n);
        goto done;
    }
    int64_t bad = -1;
    PTQ_TRY(st, ptq_calib_set_ranges(ctx, set, &cp, r, &bad), done);
    for (int64_t i = 0; i < n; i++)
        tr[i] = (ptq_tensor_range){.name = ptq_calib_set_name(set, i), .r = r[i], .method = cp.method,
                                   .format = cp.format, .percentile = 99.99};
    PTQ_TRY(st, ptq_export_trt_cache(ctx, NULL, tr, n, cache, NULL), done);
    printf("%lld images, %lld tensors, %s ranges\n", (long long)n_images, (long long)n, method);
done:
    free(x);
    free(r);
    free(tr);
    ptq_exec_free(e);
    ptq_calib_set_free(set);
    ptq_dataset_close(ds);
    ptq_graph_free(g);
    return st;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: %s model.onnx images.h5 calib.cache [entropy|minmax|percentile|mse]\n", argv[0]);
        return 2;
    }
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_buf cache = {0};
    ptq_status st = PTQ_OK;
    /* refused before any work: a cache path naming an input, or a FIFO or device the rename would replace */
    if (ptq_file_same(argv[3], argv[1]) || ptq_file_same(argv[3], argv[2]))
        st = ptq_fail(&ctx, PTQ_ERR_INVALID_ARG, "%s is an input; name a new file for the cache", argv[3]);
    if (st == PTQ_OK)
        st = ptq_file_check_output(&ctx, argv[3]);
    if (st == PTQ_OK)
        st = calibrate(&ctx, argv[1], argv[2], argc > 4 ? argv[4] : "entropy", &cache);
    /* whole or not at all: a full disk leaves no partial cache, and an old one stays as it was */
    if (st == PTQ_OK)
        st = ptq_atomic_write(&ctx, argv[3], cache.data, cache.n_bytes);
    ptq_buf_free(&cache);
    if (st != PTQ_OK)
        fprintf(stderr, "calibrate_trt: %s (%s, %s)\n", ctx.msg, ptq_status_name(st), ctx.where);
    return st == PTQ_OK ? 0 : 1;
}
