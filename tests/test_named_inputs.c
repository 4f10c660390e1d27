/* Named model inputs (datasets/hdf5_set.c ptq_dataset_open_arrays and
 * ptq_dataset_read_arrays, runtime/session.c, runtime/runner.c): an HDF5
 * set of input_ids, attention_mask and labels feeds tests/data/onnx/
 * text_ids.onnx (scripts/make_test_models.py) batch by batch, int32 data
 * converted for the int64 inputs, --input's map for renamed datasets, the
 * data spec reports record, integer inputs never selected for calibration,
 * and the refusals, each naming the input, dataset and file: a missing
 * dataset, a float dataset, a wrong sample shape, sample counts that
 * differ, a size the file could not hold. The oracle side is
 * tests/named_inputs_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptq/calib.h"
#include "ptq/runner.h"
#include "testlib.h"

enum { N = 6, L = 4 };

static char model_path[1024], dir[64];
static int64_t ids[N][L];
static int32_t mask[N][L];

/* Writes dataset name [dims] of mem_type from data into file. */
static void put(hid_t file, const char *name, hid_t mem_type, int rank, const hsize_t *dims, const void *data)
{
    hid_t space = H5Screate_simple(rank, dims, NULL);
    hid_t d = H5Dcreate2(file, name, mem_type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(d >= 0 && H5Dwrite(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
    H5Dclose(d);
    H5Sclose(space);
}

/* A set at dir/name: input_ids int64 [n_ids, L] under ids_key, attention_mask int32 [N, mask_len] under
 * mask_key (float32 when mask_float), labels int64 [N]. */
static const char *make_set(const char *name, const char *ids_key, const char *mask_key, int64_t n_ids,
                            int64_t mask_len, int mask_float)
{
    static char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(f >= 0);
    hsize_t d_ids[2] = {(hsize_t)n_ids, L}, d_mask[2] = {N, (hsize_t)mask_len}, d_lab[1] = {N};
    put(f, ids_key, H5T_NATIVE_INT64, 2, d_ids, ids);
    int64_t lab[N];
    int32_t packed[N * (L + 1)]; /* [N, mask_len]: the mask, 1 past L */
    float packed_f[N * (L + 1)];
    for (int i = 0; i < N; i++) {
        lab[i] = i % 2;
        for (int l = 0; l < mask_len; l++)
            packed_f[i * mask_len + l] = (float)(packed[i * mask_len + l] = l < L ? mask[i][l] : 1);
    }
    if (mask_float)
        put(f, mask_key, H5T_NATIVE_FLOAT, 2, d_mask, packed_f);
    else
        put(f, mask_key, H5T_NATIVE_INT32, 2, d_mask, packed);
    put(f, "labels", H5T_NATIVE_INT64, 1, d_lab, lab);
    H5Fclose(f);
    return path;
}

/* logits of sample i: pooled[d] = mean over l of (ids + 0.1 d) * mask, logits = (p0 + p2/2, p1 + p2/2) */
static void want_logits(int i, double out[2])
{
    double p[3] = {0, 0, 0};
    for (int d = 0; d < 3; d++) {
        for (int l = 0; l < L; l++)
            p[d] += ((double)ids[i][l] + 0.1 * d) * mask[i][l];
        p[d] /= L;
    }
    out[0] = p[0] + 0.5 * p[2];
    out[1] = p[1] + 0.5 * p[2];
}

static ptq_status open_session(ptq_ctx *ctx, const char *data, const ptq_input_map *map, int n_map, ptq_session **s)
{
    ptq_session_opts o;
    memset(&o, 0, sizeof o);
    o.model = model_path;
    o.data = data;
    o.cpu_fallback = 1;
    o.inputs = map;
    o.n_inputs = n_map;
    ptq_ctx_init(ctx);
    return ptq_session_open(ctx, &o, s);
}

typedef struct seen {
    int64_t n_batches, samples;
    int inputs_ok;
    double worst; /* largest |logit - want| */
} seen;

static ptq_status before(void *user, ptq_ctx *ctx, ptq_runner *r, ptq_batch *b)
{
    seen *sn = user;
    (void)ctx, (void)r;
    const ptq_tensor *t = b->inputs;
    int ok = t && t[0].dtype == PTQ_DT_INT64 && t[1].dtype == PTQ_DT_INT64 && t[0].ndim == 2 &&
             t[0].dims[0] == b->n && t[0].dims[1] == L && t[1].dims[0] == b->n && t[1].dims[1] == L;
    for (int64_t i = 0; ok && i < b->n; i++)
        for (int l = 0; l < L; l++)
            ok &= ((const int64_t *)t[0].data)[i * L + l] == ids[b->ids[i]][l] &&
                  ((const int64_t *)t[1].data)[i * L + l] == mask[b->ids[i]][l];
    sn->inputs_ok &= ok;
    return PTQ_OK;
}

static ptq_status after(void *user, ptq_ctx *ctx, ptq_runner *r, ptq_batch *b)
{
    seen *sn = user;
    (void)ctx, (void)r;
    sn->n_batches++;
    sn->samples += b->n;
    for (int64_t i = 0; i < b->n; i++) {
        double want[2];
        want_logits((int)b->ids[i], want);
        for (int k = 0; k < 2; k++) {
            double err = fabs(b->logits[i * 2 + k] - want[k]);
            sn->worst = err > sn->worst ? err : sn->worst;
        }
    }
    return PTQ_OK;
}

static ptq_status run(ptq_ctx *ctx, ptq_session *s, int64_t batch, int prefetch, seen *sn)
{
    int64_t pick[N];
    for (int64_t i = 0; i < N; i++)
        pick[i] = i;
    memset(sn, 0, sizeof *sn);
    sn->inputs_ok = 1;
    ptq_runner_params p;
    memset(&p, 0, sizeof p);
    p.session = s;
    p.ids = pick;
    p.n_ids = N;
    p.batch = batch;
    p.need_logits = 1;
    p.need_labels = 1;
    p.prefetch = prefetch;
    p.consumers[p.n_consumers++] = (ptq_consumer){sn, before, after, NULL};
    ptq_ctx_init(ctx);
    return ptq_runner_run(ctx, &p);
}

static void test_run(void)
{
    ptq_ctx ctx;
    ptq_session *s = NULL;
    seen sn;
    const char *data = make_set("text.h5", "input_ids", "attention_mask", N, L, 0);
    CHECK_MSG(open_session(&ctx, data, NULL, 0, &s) == PTQ_OK, "%s", ctx.msg);
    if (!s)
        return;
    CHECK(ptq_session_named_inputs(s) == 1 && ptq_session_n_samples(s) == N);
    ptq_tensor meta;
    const char *key = NULL;
    CHECK(ptq_session_input_meta(&ctx, s, 1, &meta, &key) == PTQ_OK && meta.dtype == PTQ_DT_INT64 &&
          meta.ndim == 2 && meta.dims[0] == 0 && meta.dims[1] == L && key && strcmp(key, "attention_mask") == 0);
    CHECK(ptq_session_input_meta(&ctx, s, 2, &meta, &key) == PTQ_ERR_INVALID_ARG);
    char spec[256];
    CHECK_MSG(strcmp(ptq_session_data_spec(s, spec, sizeof spec),
                     "inputs=input_ids:input_ids,attention_mask:attention_mask") == 0, "%s", spec);
    CHECK_MSG(strstr(ptq_session_notes(s), "'attention_mask' (int32) is fed to the model input 'attention_mask' as "
                                           "int64"), "%s", ptq_session_notes(s));
    for (int prefetch = 0; prefetch < 2; prefetch++) {
        CHECK_MSG(run(&ctx, s, 4, prefetch, &sn) == PTQ_OK, "%s", ctx.msg);
        CHECK(sn.n_batches == 2 && sn.samples == N && sn.inputs_ok);
        CHECK_MSG(sn.worst < 1e-5, "logits off by %g", sn.worst);
    }
    /* calibration selects float tensors only: never the int64 inputs */
    const ptq_graph *g = ptq_session_graph(s);
    CHECK_MSG(ptq_session_shapes(&ctx, s) == PTQ_OK, "%s", ctx.msg);
    unsigned char *keep = calloc((size_t)g->n_values, 1);
    int64_t n_kept = 0;
    CHECK(keep && ptq_calib_select_tensors(&ctx, g, NULL, keep, &n_kept) == PTQ_OK && n_kept > 0);
    for (int i = 0; keep && i < g->n_inputs; i++)
        CHECK_MSG(!keep[g->inputs[i]], "input '%s' selected", g->values[g->inputs[i]].name);
    free(keep);
    ptq_session_close(s);

    /* the set read directly: stored dtypes and shapes, converted reads, no images */
    ptq_dataset *ds = NULL;
    const char *keys[] = {"attention_mask", "input_ids"};
    ptq_ctx_init(&ctx);
    CHECK_MSG(ptq_dataset_open_arrays(&ctx, data, NULL, keys, 2, &ds) == PTQ_OK, "%s", ctx.msg);
    if (ds) {
        const ptq_dataset_array *a = ptq_dataset_array_info(ds, 0);
        CHECK(ptq_dataset_n_arrays(ds) == 2 && a && a->dtype == PTQ_DT_INT32 && a->ndim == 2 && a->dims[0] == N &&
              a->dims[1] == L && ptq_dataset_array_info(ds, 2) == NULL && ptq_dataset_has_labels(ds));
        int64_t m64[2 * L], i64[2 * L];
        int32_t lab[2];
        void *out[2] = {m64, i64};
        const ptq_dtype as[2] = {PTQ_DT_INT64, PTQ_DT_INT64};
        CHECK_MSG(ptq_dataset_read_arrays(&ctx, ds, 3, 2, as, out, lab) == PTQ_OK, "%s", ctx.msg);
        CHECK(m64[0] == mask[3][0] && m64[2 * L - 1] == mask[4][L - 1] && i64[L] == ids[4][0] && lab[0] == 1 &&
              lab[1] == 0);
        CHECK(ptq_dataset_read_arrays(&ctx, ds, 5, 2, as, out, NULL) == PTQ_ERR_INVALID_ARG);
        float x[16];
        ptq_preprocess p;
        ptq_preprocess_default(&p);
        p.height = p.width = 2;
        CHECK(ptq_dataset_read(&ctx, ds, 0, 1, &p, x, NULL) == PTQ_ERR_INVALID_ARG);
        ptq_dataset_close(ds);
    }
}

static void test_map_and_refusals(void)
{
    ptq_ctx ctx;
    ptq_session *s = NULL;
    seen sn;
    /* renamed datasets through the map */
    const char *data = make_set("renamed.h5", "tokens", "mask", N, L, 0);
    const ptq_input_map map[] = {{"input_ids", "tokens"}, {"attention_mask", "mask"}};
    CHECK_MSG(open_session(&ctx, data, map, 2, &s) == PTQ_OK, "%s", ctx.msg);
    if (s) {
        CHECK_MSG(run(&ctx, s, 5, 1, &sn) == PTQ_OK && sn.inputs_ok && sn.worst < 1e-5, "%s", ctx.msg);
        ptq_session_close(s);
        s = NULL;
    }
    CHECK(open_session(&ctx, data, map, 1, &s) == PTQ_ERR_DATA && !s);
    CHECK_MSG(strstr(ctx.msg, "no dataset 'attention_mask'") && strstr(ctx.msg, data), "%s", ctx.msg);
    const ptq_input_map wrong[] = {{"token_ids", "tokens"}};
    CHECK(open_session(&ctx, data, wrong, 1, &s) == PTQ_ERR_INVALID_ARG && !s);
    CHECK_MSG(strstr(ctx.msg, "'token_ids'") && strstr(ctx.msg, "'input_ids' int64"), "%s", ctx.msg);

    data = make_set("float_mask.h5", "input_ids", "attention_mask", N, L, 1);
    CHECK(open_session(&ctx, data, NULL, 0, &s) == PTQ_ERR_DATA && !s);
    CHECK_MSG(strstr(ctx.msg, "input 'attention_mask' is int64") && strstr(ctx.msg, "float32") &&
              strstr(ctx.msg, data), "%s", ctx.msg);
    data = make_set("long_mask.h5", "input_ids", "attention_mask", N, L + 1, 0);
    CHECK(open_session(&ctx, data, NULL, 0, &s) == PTQ_ERR_SHAPE && !s);
    CHECK_MSG(strstr(ctx.msg, "'attention_mask'") && strstr(ctx.msg, "6x5") && strstr(ctx.msg, data), "%s", ctx.msg);
    data = make_set("short_ids.h5", "input_ids", "attention_mask", N - 1, L, 0);
    CHECK(open_session(&ctx, data, NULL, 0, &s) == PTQ_ERR_DATA && !s);
    CHECK_MSG(strstr(ctx.msg, "has 6 samples but 'input_ids' has 5") && strstr(ctx.msg, data), "%s", ctx.msg);

    /* a chunked dataset declaring 2^40 samples in a tiny file */
    char path[1200];
    snprintf(path, sizeof path, "%s/forged.h5", dir);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[2] = {(hsize_t)1 << 40, L}, chunk[2] = {1, L};
    hid_t space = H5Screate_simple(2, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    hid_t d = H5Dcreate2(f, "input_ids", H5T_NATIVE_INT64, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    CHECK(d >= 0);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Fclose(f);
    ptq_dataset *ds = NULL;
    const char *keys[] = {"input_ids"};
    ptq_ctx_init(&ctx);
    CHECK(ptq_dataset_open_arrays(&ctx, path, NULL, keys, 1, &ds) == PTQ_ERR_FORMAT && !ds);
    CHECK_MSG(strstr(ctx.msg, "'input_ids'") && strstr(ctx.msg, "forged") && strstr(ctx.msg, path), "%s", ctx.msg);
    /* options that only images have */
    ptq_dataset_opts img = {"images", NULL, NULL, 0, NULL, NULL, 0, 0, 0};
    CHECK(ptq_dataset_open_arrays(&ctx, path, &img, keys, 1, &ds) == PTQ_ERR_INVALID_ARG && !ds);
    CHECK(ptq_dataset_open_arrays(&ctx, path, NULL, keys, 0, &ds) == PTQ_ERR_INVALID_ARG && !ds);
}

int main(void)
{
    const char *src = getenv("PTQ_SOURCE_DIR");
    snprintf(model_path, sizeof model_path, "%s/tests/data/onnx/text_ids.onnx", src ? src : ".");
    snprintf(dir, sizeof dir, "/tmp/ptq_named_inputs_XXXXXX");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "test_named_inputs: no temporary folder\n");
        return 1;
    }
    for (int i = 0; i < N; i++)
        for (int l = 0; l < L; l++) {
            ids[i][l] = (i * 3 + l) % 10;
            mask[i][l] = l <= i % L;
        }
    test_run();
    test_map_and_refusals();
    test_remove_tree(dir);
    return test_done("test_named_inputs");
}
