/* Sessions on models with several outputs or a fixed batch (runtime/session.c,
 * runtime/runner.c): the logits output by name, by shape (the only
 * [N, classes] one) or refused with the outputs named; a fixed batch of 4
 * runs in fours whatever the runner's batch, with a note, and a pick that is
 * no multiple of 4 is refused; 4-channel (RGBA) preprocessing. Models from scripts/make_test_models.py
 * (tests/data/onnx); the oracle side is tests/multiio_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptq/runner.h"
#include "testlib.h"

enum { N = 12 };

static char model_dir[1024], data_path[1024];

static ptq_status open_session(ptq_ctx *ctx, const char *model, const char *output, ptq_session **s)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", model_dir, model);
    ptq_session_opts o;
    memset(&o, 0, sizeof o);
    o.model = path;
    o.data = data_path;
    o.cpu_fallback = 1;
    o.preprocess = "scale=1";
    o.output = output;
    ptq_ctx_init(ctx);
    return ptq_session_open(ctx, &o, s);
}

typedef struct seen {
    int64_t n_batches, max_n, samples;
    int logits_output;
    double sum_logits; /* of every logit: logits[i] = (m, 2m), m the mean of sample i's 4 pixels */
    int64_t n_classes;
} seen;

static ptq_status after(void *user, ptq_ctx *ctx, ptq_runner *r, ptq_batch *b)
{
    seen *sn = user;
    (void)ctx, (void)r;
    sn->n_batches++;
    sn->max_n = b->n > sn->max_n ? b->n : sn->max_n;
    sn->samples += b->n;
    sn->logits_output = b->logits_output;
    sn->n_classes = b->n_classes;
    for (int64_t i = 0; i < b->n * b->n_classes; i++)
        sn->sum_logits += b->logits[i];
    return PTQ_OK;
}

static ptq_status run(ptq_ctx *ctx, ptq_session *s, int64_t n_ids, int64_t batch, seen *sn)
{
    int64_t ids[N];
    for (int64_t i = 0; i < N; i++)
        ids[i] = i;
    memset(sn, 0, sizeof *sn);
    ptq_runner_params p;
    memset(&p, 0, sizeof p);
    p.session = s;
    p.ids = ids;
    p.n_ids = n_ids;
    p.batch = batch;
    p.need_logits = 1;
    p.consumers[p.n_consumers++] = (ptq_consumer){sn, NULL, after, NULL};
    ptq_ctx_init(ctx);
    return ptq_runner_run(ctx, &p);
}

/* sample i's pixels are i, i, i, i + 4, so its mean is i + 1 and its logits (i + 1, 2i + 2) */
static double want_sum(int64_t n)
{
    double sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum += 3.0 * (double)(i + 1);
    return sum;
}

static void test_outputs(void)
{
    ptq_ctx ctx;
    ptq_session *s = NULL;
    seen sn;
    int idx = -1;
    /* gap [N,1,1,1] and logits [N,2]: the only rank-2 one, with a note */
    CHECK_MSG(open_session(&ctx, "gap_and_logits.onnx", NULL, &s) == PTQ_OK, "%s", ctx.msg);
    if (s) {
        CHECK(ptq_session_logits_output(&ctx, s, &idx) == PTQ_OK && idx == 1);
        CHECK_MSG(strstr(ptq_session_notes(s), "reading logits from 'logits'"), "%s", ptq_session_notes(s));
        CHECK_MSG(run(&ctx, s, N, 5, &sn) == PTQ_OK, "%s", ctx.msg);
        CHECK(sn.logits_output == 1 && sn.n_classes == 2 && sn.samples == N && sn.max_n == 5);
        CHECK_MSG(sn.sum_logits == want_sum(N), "%g vs %g", sn.sum_logits, want_sum(N));
        ptq_session_close(s);
        s = NULL;
    }
    /* pooled [N,1] and logits [N,2]: ambiguous, the session opens, a logits run is refused */
    CHECK_MSG(open_session(&ctx, "two_outputs.onnx", NULL, &s) == PTQ_OK, "%s", ctx.msg);
    if (s) {
        CHECK(ptq_session_logits_output(&ctx, s, &idx) == PTQ_ERR_UNSUPPORTED);
        CHECK_MSG(strstr(ctx.msg, "'pooled'") && strstr(ctx.msg, "'logits'") && strstr(ctx.msg, "--output"), "%s",
                  ctx.msg);
        CHECK(run(&ctx, s, N, 5, &sn) == PTQ_ERR_UNSUPPORTED && sn.n_batches == 0);
        ptq_session_close(s);
        s = NULL;
    }
    /* named: either output */
    CHECK_MSG(open_session(&ctx, "two_outputs.onnx", "pooled", &s) == PTQ_OK, "%s", ctx.msg);
    if (s) {
        CHECK(ptq_session_logits_output(&ctx, s, &idx) == PTQ_OK && idx == 0);
        CHECK_MSG(run(&ctx, s, N, 4, &sn) == PTQ_OK, "%s", ctx.msg);
        CHECK_MSG(sn.n_classes == 1 && sn.sum_logits == want_sum(N) / 3.0, "%lld classes, sum %g",
                  (long long)sn.n_classes, sn.sum_logits);
        ptq_session_close(s);
        s = NULL;
    }
    CHECK(open_session(&ctx, "two_outputs.onnx", "nope", &s) == PTQ_ERR_INVALID_ARG && !s);
    CHECK_MSG(strstr(ctx.msg, "no output 'nope'") && strstr(ctx.msg, "'pooled'"), "%s", ctx.msg);
}

static void test_fixed_batch(void)
{
    ptq_ctx ctx;
    ptq_session *s = NULL;
    seen sn;
    CHECK_MSG(open_session(&ctx, "fixed_batch4.onnx", NULL, &s) == PTQ_OK, "%s", ctx.msg);
    if (!s)
        return;
    CHECK(ptq_session_fixed_batch(s) == 4);
    CHECK_MSG(strstr(ptq_session_notes(s), "fixed batch of 4"), "%s", ptq_session_notes(s));
    CHECK_MSG(run(&ctx, s, N, 64, &sn) == PTQ_OK, "%s", ctx.msg);
    CHECK(sn.n_batches == 3 && sn.max_n == 4 && sn.samples == N);
    CHECK_MSG(sn.sum_logits == want_sum(N), "%g vs %g", sn.sum_logits, want_sum(N));
    CHECK(run(&ctx, s, 10, 64, &sn) == PTQ_ERR_SHAPE && sn.n_batches == 0);
    CHECK_MSG(strstr(ctx.msg, "fixed batch of 4") && strstr(ctx.msg, "'x'"), "%s", ctx.msg);
    ptq_session_close(s);
}

static int near(float a, float b)
{
    return fabsf(a - b) <= 1e-6f;
}

/* Into 4 channels (RGBA, NHWC and NCHW, BGRA): the image's alpha, else opaque. */
static void test_rgba(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_preprocess p;
    ptq_preprocess_default(&p);
    p.n_channels = 4;
    p.height = 1;
    p.width = 2;
    p.nhwc = 1;
    const uint8_t rgb[6] = {10, 20, 30, 40, 50, 60}, rgba[8] = {10, 20, 30, 7, 40, 50, 60, 9}, ga[4] = {5, 6, 7, 8};
    float out[8];
    CHECK_MSG(ptq_preprocess_image(&ctx, &p, rgb, PTQ_DT_UINT8, 1, 2, 3, 0, out) == PTQ_OK, "%s", ctx.msg);
    CHECK(near(out[0], 10.0f / 255.0f) && near(out[2], 30.0f / 255.0f) && near(out[3], 1.0f) && near(out[7], 1.0f));
    CHECK_MSG(ptq_preprocess_image(&ctx, &p, rgba, PTQ_DT_UINT8, 1, 2, 4, 0, out) == PTQ_OK, "%s", ctx.msg);
    CHECK(near(out[3], 7.0f / 255.0f) && near(out[7], 9.0f / 255.0f) && near(out[4], 40.0f / 255.0f));
    CHECK_MSG(ptq_preprocess_image(&ctx, &p, ga, PTQ_DT_UINT8, 1, 2, 2, 0, out) == PTQ_OK, "%s", ctx.msg);
    CHECK(near(out[0], 5.0f / 255.0f) && near(out[1], 5.0f / 255.0f) && near(out[2], 5.0f / 255.0f) &&
          near(out[3], 6.0f / 255.0f));
    p.nhwc = 0;
    p.bgr = 1;
    p.scale = 1.0f;
    CHECK_MSG(ptq_preprocess_image(&ctx, &p, rgba, PTQ_DT_UINT8, 1, 2, 4, 0, out) == PTQ_OK, "%s", ctx.msg);
    /* planes B, G, R, A of the two pixels */
    CHECK(out[0] == 30 && out[1] == 60 && out[2] == 20 && out[4] == 10 && out[5] == 40 && out[6] == 7 && out[7] == 9);
    const float frgb[6] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
    CHECK_MSG(ptq_preprocess_image(&ctx, &p, frgb, PTQ_DT_FLOAT, 1, 2, 3, 0, out) == PTQ_OK, "%s", ctx.msg);
    CHECK(out[6] == 1.0f && out[7] == 1.0f); /* float images: opaque is what scale (1) takes to 1 */
    CHECK(ptq_preprocess_parse(&ctx, "channels=4 mean=1,2,3,4", &p) == PTQ_OK && p.n_channels == 4 && p.mean[3] == 4);
    char spec[256];
    CHECK_MSG(strstr(ptq_preprocess_format(&p, spec, sizeof spec), "mean=1,2,3,4 ") != NULL, "%s", spec);
}

int main(void)
{
    const char *src = getenv("PTQ_SOURCE_DIR");
    snprintf(model_dir, sizeof model_dir, "%s/tests/data/onnx", src ? src : ".");
    char dir[] = "/tmp/ptq_multi_io_XXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(stderr, "test_multi_io: no temporary folder\n");
        return 1;
    }
    snprintf(data_path, sizeof data_path, "%s/set.h5", dir);
    float px[N * 4];
    int32_t lab[N];
    for (int i = 0; i < N; i++) {
        px[4 * i] = px[4 * i + 1] = px[4 * i + 2] = (float)i;
        px[4 * i + 3] = (float)i + 4.0f;
        lab[i] = i % 2;
    }
    ptq_tensor images = {PTQ_DT_FLOAT, 3, {N, 2, 2}, px, PTQ_MEM_HOST, sizeof px};
    ptq_tensor labels = {PTQ_DT_INT32, 1, {N}, lab, PTQ_MEM_HOST, sizeof lab};
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    CHECK_MSG(ptq_dataset_write_hdf5(&ctx, data_path, &images, &labels, NULL) == PTQ_OK, "%s", ctx.msg);
    test_outputs();
    test_fixed_batch();
    test_rgba();
    unlink(data_path);
    rmdir(dir);
    return test_done("test_multi_io");
}
