/* Calibration sets (calib/): tensor selection on the demo model, observers
 * fed through the CPU executor's tap identical whatever the batch split and
 * device (ref, cpu), archive write -> read round trip bit for bit with its
 * provenance, merge refusing other models/settings/shared samples while
 * leaving the destination untouched, unreadable archives, calls out of
 * order refused as the caller's error, and range errors naming the tensor;
 * a merge whose allocations fail (injected) leaves the destination as it was. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "calib/calib_internal.h"
#include "ptq/calib.h"
#include "ptq/runtime.h"
#include "ptq/version.h"
#include "testlib.h"

/* Allocation failure injection (this test links with --wrap for malloc, calloc, realloc and strdup,
 * tests/CMakeLists.txt): when fail_alloc_after is n > 0, the n-th allocation from then on returns NULL. */
static int fail_alloc_after;

static int alloc_fails(void)
{
    return fail_alloc_after > 0 && --fail_alloc_after == 0;
}

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);

void *__wrap_malloc(size_t n)
{
    return alloc_fails() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return alloc_fails() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    return alloc_fails() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
    return alloc_fails() ? NULL : __real_strdup(s);
}

static int same_observer(const ptq_observer *a, const ptq_observer *b)
{
    ptq_observer_stats sa, sb;
    ptq_observer_get_stats(a, &sa);
    ptq_observer_get_stats(b, &sb);
    return memcmp(&sa, &sb, sizeof sa) == 0 && ptq_observer_exponent(a) == ptq_observer_exponent(b) &&
           ptq_observer_n_bins(a) == ptq_observer_n_bins(b) &&
           memcmp(ptq_observer_hist(a), ptq_observer_hist(b), (size_t)ptq_observer_n_bins(a) * sizeof(int64_t)) == 0;
}

static int same_sets(const ptq_calib_set *a, const ptq_calib_set *b)
{
    if (ptq_calib_set_n_tensors(a) != ptq_calib_set_n_tensors(b))
        return 0;
    for (int64_t i = 0; i < ptq_calib_set_n_tensors(a); i++)
        if (strcmp(ptq_calib_set_name(a, i), ptq_calib_set_name(b, i)) != 0 ||
            !same_observer(ptq_calib_set_observer(a, i), ptq_calib_set_observer(b, i)))
            return 0;
    return 1;
}

static int64_t count_selected(ptq_ctx *ctx, const ptq_graph *g, const char *ops, const char *pats, ptq_status *st)
{
    unsigned char *keep = calloc((size_t)g->n_values, 1);
    ptq_calib_select sel = {ops, pats};
    int64_t n = -1;
    *st = ptq_calib_select_tensors(ctx, g, &sel, keep, &n);
    free(keep);
    return n;
}

/* Observes images [0, n) of x (28x28 each) on device dev, split into batches of `batch`. */
static ptq_calib_set *observe(ptq_ctx *ctx, const ptq_graph *g, ptq_device dev, const float *x, int64_t n,
                              int64_t batch, const ptq_calib_select *sel)
{
    ptq_calib_set *s = NULL;
    ptq_exec *e = NULL;
    ptq_exec_params p = {dev, 0, NULL, NULL, 0, PTQ_MATH_FP32};
    if (ptq_calib_set_create(ctx, g, sel, 0, &s) != PTQ_OK || ptq_exec_create(ctx, g, &p, &e) != PTQ_OK)
        goto fail;
    ptq_exec_set_tap(e, ptq_calib_set_tap, s);
    if (ptq_calib_set_bind(ctx, s, e) != PTQ_OK)
        goto fail;
    for (int64_t i = 0; i < n; i += batch) {
        int64_t k = n - i < batch ? n - i : batch;
        ptq_tensor in = {PTQ_DT_FLOAT, 4, {k, 1, 28, 28}, (void *)(x + i * 784), PTQ_MEM_HOST, 0};
        ptq_tensor out;
        if (ptq_calib_set_observe_inputs(ctx, s, &in) != PTQ_OK || ptq_exec_run(ctx, e, &in, &out) != PTQ_OK)
            goto fail;
    }
    if (ptq_calib_set_sync(ctx, s) != PTQ_OK)
        goto fail;
    ptq_exec_free(e);
    return s;
fail:
    fprintf(stderr, "observe: %s\n", ctx->msg);
    ptq_exec_free(e);
    ptq_calib_set_free(s);
    return NULL;
}

/* Calls out of order are the caller's error (PTQ_ERR_INVALID_ARG) naming the call to make first, not
 * PTQ_ERR_INTERNAL: a GPU tensor tapped (or a device observer asked for) before ptq_calib_set_bind, a write
 * while a tensor's device observer is not folded in by ptq_calib_set_sync (a stand-in pointer here: a CPU build
 * makes no device observer; tests/cuda_calib.c syncs real ones), a set read from an archive or tapped on another
 * graph. The device tensor's data is never read. */
static void test_order(const ptq_graph *g, ptq_calib_set *described, ptq_calib_set *read_back)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_calib_set *s = NULL;
    CHECK(ptq_calib_set_create(&ctx, g, NULL, 0, &s) == PTQ_OK);
    if (!s)
        return;
    float dummy = 0.0f;
    const int v = g->inputs[0];
    ptq_tensor on_gpu = {PTQ_DT_FLOAT, 4, {1, 1, 28, 28}, &dummy, PTQ_MEM_CUDA, 0};
    ptq_status st = ptq_calib_set_tap(s, &ctx, g, -1, v, &on_gpu);
    CHECK_MSG(st == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "'input'") && strstr(ctx.msg, "call ptq_calib_set_bind"),
              "a GPU tensor before bind: status %d, '%s'", (int)st, ctx.msg);
    void *state = NULL;
    int64_t n_bins = 0;
    st = calib_set_dev_state(s, &ctx, v, 784, &state, &n_bins);
    CHECK_MSG(st == PTQ_ERR_INVALID_ARG && !state && strstr(ctx.msg, "call ptq_calib_set_bind"),
              "a device observer before bind: status %d, '%s'", (int)st, ctx.msg);
    ptq_calib_set_free(s);

    char file[256];
    snprintf(file, sizeof file, "/tmp/ptq-test-calib-order-%ld.h5", (long)getpid());
    static int stand_in;
    described->dev_obs[3] = (struct ptq_observer_dev *)(void *)&stand_in;
    st = ptq_calib_set_write(&ctx, described, file);
    described->dev_obs[3] = NULL;
    CHECK_MSG(st == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "call ptq_calib_set_sync first") &&
                  strstr(ctx.msg, ptq_calib_set_name(described, 3)) && access(file, F_OK) != 0,
              "a write before sync: status %d, '%s'", (int)st, ctx.msg);

    ptq_tensor host = {PTQ_DT_FLOAT, 4, {1, 1, 28, 28}, &dummy, PTQ_MEM_HOST, 0};
    ptq_graph other = *g;
    st = ptq_calib_set_tap(described, &ctx, &other, -1, v, &host);
    CHECK_MSG(st == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "not made for"), "another graph: status %d, '%s'",
              (int)st, ctx.msg);
    st = ptq_calib_set_tap(read_back, &ctx, g, -1, v, &host);
    CHECK_MSG(st == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "read from an archive"),
              "a read set tapped: status %d, '%s'", (int)st, ctx.msg);
    st = ptq_calib_set_observe_inputs(&ctx, read_back, &host);
    CHECK_MSG(st == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "read from an archive"),
              "a read set's inputs observed: status %d, '%s'", (int)st, ctx.msg);
}

/* ptq_calib_set_ranges' errors name the tensor at fault and what it holds: all NaN (the first tensor), nothing
 * seen (the next, with finite inputs); bad params are no tensor's fault (*bad -1, the value named). */
static void test_ranges_errors(const ptq_graph *g)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    float x[784];
    const char *const want[] = {"tensor 'input': calibration: no finite values (784 seen: 784 NaN, 0 Inf)", NULL};
    for (int k = 0; k < 2; k++) {
        ptq_calib_set *s = NULL;
        CHECK(ptq_calib_set_create(&ctx, g, NULL, 0, &s) == PTQ_OK);
        if (!s)
            return;
        for (int i = 0; i < 784; i++)
            x[i] = k ? 0.25f * (float)(i % 7) : NAN;
        ptq_tensor in = {PTQ_DT_FLOAT, 4, {1, 1, 28, 28}, x, PTQ_MEM_HOST, 0};
        CHECK(ptq_calib_set_observe_inputs(&ctx, s, &in) == PTQ_OK);
        const int64_t n = ptq_calib_set_n_tensors(s);
        ptq_calib_range *r = calloc((size_t)n, sizeof *r);
        ptq_calib_params cp = {PTQ_CALIB_MINMAX, PTQ_QFORMAT_INT8, 0};
        int64_t bad = -2;
        char second[256];
        snprintf(second, sizeof second, "tensor '%s': calibration: no finite values (0 seen: 0 NaN, 0 Inf)",
                 ptq_calib_set_name(s, 1));
        ptq_status st = ptq_calib_set_ranges(&ctx, s, &cp, r, &bad);
        CHECK_MSG(st == PTQ_ERR_DATA && bad == k && strstr(ctx.msg, k ? second : want[k]),
                  "ranges of %s: status %d, bad %lld, '%s'", k ? "unseen tensors" : "NaN", (int)st, (long long)bad,
                  ctx.msg);
        /* the ranges an export and a plan share: with no model, a tensor never seen is empty (no error); with the
         * model, whose shapes have no dim of size 0, it stays an error; the input's NaN is an error either way */
        unsigned char *empty = calloc((size_t)n, 1);
        memset(r, 0xff, (size_t)n * sizeof *r);
        st = ptq_calib_set_ranges_empty(&ctx, s, NULL, &cp, r, empty, &bad);
        CHECK_MSG(k ? st == PTQ_OK && !empty[0] && r[0].amax == 1.5f && empty[1] && empty[n - 1] &&
                          r[1].degenerate && r[1].amax == 0.0
                    : st == PTQ_ERR_DATA && bad == 0 && strstr(ctx.msg, want[0]),
                  "no model, %s: status %d, bad %lld, empty %d %d, '%s'", k ? "unseen tensors" : "NaN", (int)st,
                  (long long)bad, empty[0], empty[1], ctx.msg);
        st = ptq_calib_set_ranges_empty(&ctx, s, g, &cp, r, empty, &bad);
        CHECK_MSG(st == PTQ_ERR_DATA && bad == k && strstr(ctx.msg, k ? second : want[0]) && !empty[1],
                  "the model, %s: status %d, bad %lld, '%s'", k ? "unseen tensors" : "NaN", (int)st, (long long)bad,
                  ctx.msg);
        free(empty);
        cp.method = PTQ_CALIB_PERCENTILE;
        cp.percentile = 120;
        st = ptq_calib_set_ranges(&ctx, s, &cp, r, &bad);
        CHECK_MSG(st == PTQ_ERR_INVALID_ARG && bad == -1 && strstr(ctx.msg, "got 120") && !strstr(ctx.msg, "tensor"),
                  "percentile 120: status %d, bad %lld, '%s'", (int)st, (long long)bad, ctx.msg);
        free(r);
        ptq_calib_set_free(s);
    }
}

int main(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_graph *g = test_load_demo_model("test_calib_set");
    if (!g)
        return 1;

    /* selection */
    ptq_status st;
    CHECK(count_selected(&ctx, g, NULL, NULL, &st) == 23 && st == PTQ_OK);
    CHECK(count_selected(&ctx, g, "Conv", NULL, &st) == 16 && st == PTQ_OK); /* 9 outputs + 7 distinct inputs */
    CHECK(count_selected(&ctx, g, "Gemm", NULL, &st) == 2 && st == PTQ_OK);   /* its input and the logits */
    CHECK(count_selected(&ctx, g, NULL, "*Relu*", &st) == 7 && st == PTQ_OK);
    CHECK(count_selected(&ctx, g, "Conv,Gemm", "*Relu*,logits", &st) == 7 && st == PTQ_OK); /* 6 Relus feed convs */
    CHECK(count_selected(&ctx, g, "LSTM", NULL, &st) == 0 && st == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "LSTM"));
    CHECK(count_selected(&ctx, g, NULL, "nothing*", &st) == 0 && st == PTQ_ERR_INVALID_ARG &&
          strstr(ctx.msg, "nothing*"));
    /* an op type misspelt, in another case, or an empty item beside good ones: refused (they selected nothing) */
    CHECK(count_selected(&ctx, g, "Conv,Gemmm", NULL, &st) == 0 && st == PTQ_ERR_INVALID_ARG &&
          strstr(ctx.msg, "'Gemmm' is no ONNX op type ptq knows"));
    CHECK(count_selected(&ctx, g, "Gemm,conv", NULL, &st) == 0 && st == PTQ_ERR_INVALID_ARG &&
          strstr(ctx.msg, "'conv'"));
    CHECK(count_selected(&ctx, g, "Conv,,Gemm", NULL, &st) == 0 && st == PTQ_ERR_INVALID_ARG &&
          strstr(ctx.msg, "empty item"));
    CHECK(count_selected(&ctx, g, "Conv,Softmax", NULL, &st) == 16 && st == PTQ_OK); /* known, not in the model */

    /* the same images in different batches and on ref/cpu: identical observers */
    const int64_t n = 40;
    float *x = malloc((size_t)n * 784 * sizeof *x);
    test_rand_seed(3);
    test_fill_uniform(x, n * 784, -0.81f, 2.03f);
    ptq_calib_set *whole = observe(&ctx, g, PTQ_DEVICE_CPU, x, n, 40, NULL);
    ptq_calib_set *split = observe(&ctx, g, PTQ_DEVICE_CPU, x, n, 7, NULL);
    ptq_calib_set *ones = observe(&ctx, g, PTQ_DEVICE_CPU, x, n, 1, NULL);
    ptq_calib_set *ref = observe(&ctx, g, PTQ_DEVICE_REF, x, 10, 3, NULL);
    ptq_calib_set *ref1 = observe(&ctx, g, PTQ_DEVICE_REF, x, 10, 10, NULL);
    CHECK(whole && split && ones && ref && ref1);
    if (!whole || !split || !ones || !ref || !ref1)
        return test_done("test_calib_set");
    CHECK_MSG(same_sets(whole, split), "batches of 40 and of 7 differ");
    CHECK_MSG(same_sets(whole, ones), "batches of 40 and of 1 differ");
    CHECK_MSG(same_sets(ref, ref1), "ref: batches of 3 and of 10 differ");
    ptq_observer_stats s0;
    ptq_observer_get_stats(ptq_calib_set_observer(whole, 0), &s0);
    CHECK(s0.count == n * 784 && strcmp(ptq_calib_set_name(whole, 0), "input") == 0);

    /* provenance, write -> read */
    static const char sha[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    /* a set never described is refused before anything is written (its archive could not be read back); one of
     * no recorded samples writes and reads back (HDF5 refused the write of its empty 'sources') */
    char no_samples[256];
    snprintf(no_samples, sizeof no_samples, "/tmp/ptq-test-calib-nosamples-%ld.h5", (long)getpid());
    st = ptq_calib_set_write(&ctx, split, no_samples);
    CHECK_MSG(st == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "ptq_calib_set_describe") && access(no_samples, F_OK) != 0,
              "an undescribed set: status %d, '%s'", (int)st, ctx.msg);
    CHECK(ptq_calib_set_describe(&ctx, split, sha, "fmnist_resnet.onnx", "scale=1") == PTQ_OK);
    CHECK_MSG(ptq_calib_set_write(&ctx, split, no_samples) == PTQ_OK, "no samples recorded: %s", ctx.msg);
    ptq_calib_set *back0 = NULL;
    CHECK_MSG(ptq_calib_set_read(&ctx, no_samples, &back0) == PTQ_OK, "no samples recorded, read back: %s", ctx.msg);
    if (back0) {
        ptq_calib_provenance p0;
        ptq_calib_set_provenance(back0, &p0);
        CHECK(same_sets(split, back0) && p0.n_sources == 0 && p0.n_samples == 0);
    }
    ptq_calib_set_free(back0);
    remove(no_samples);
    int64_t ids[40];
    for (int i = 0; i < 40; i++)
        ids[i] = 1000 - 3 * i;
    CHECK(ptq_calib_set_describe(&ctx, whole, sha, "fmnist_resnet.onnx", "scale=1") == PTQ_OK);
    CHECK(ptq_calib_set_add_samples(&ctx, whole, "b.h5", ids, 30) == PTQ_OK);
    CHECK(ptq_calib_set_add_samples(&ctx, whole, "a.h5", ids + 30, 10) == PTQ_OK);
    CHECK(ptq_calib_set_add_samples(&ctx, whole, "b.h5", ids + 29, 2) == PTQ_ERR_DATA); /* 913 again */
    CHECK(ptq_calib_set_describe(&ctx, whole, "abc", "m", "p") == PTQ_ERR_INVALID_ARG);
    CHECK(ptq_calib_set_describe(&ctx, whole, "z123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "m",
                                 "p") == PTQ_ERR_INVALID_ARG); /* 64 characters, not hex: an archive could not be read */
    char file[256];
    snprintf(file, sizeof file, "/tmp/ptq-test-calib-%ld.h5", (long)getpid());
    CHECK_MSG(ptq_calib_set_write(&ctx, whole, file) == PTQ_OK, "%s", ctx.msg);
    ptq_calib_set *back = NULL;
    CHECK_MSG(ptq_calib_set_read(&ctx, file, &back) == PTQ_OK, "%s", ctx.msg);
    if (back) {
        CHECK(same_sets(whole, back));
        ptq_calib_provenance pa, pb;
        ptq_calib_set_provenance(whole, &pa);
        ptq_calib_set_provenance(back, &pb);
        CHECK(strcmp(pa.model_sha256, pb.model_sha256) == 0 && strcmp(pb.model_sha256, sha) == 0);
        CHECK(strcmp(pa.sample_ids_sha256, pb.sample_ids_sha256) == 0 && pb.n_samples == 40);
        CHECK(pb.n_sources == 2 && strcmp(pb.sources[0], "a.h5") == 0 && strcmp(pb.sources[1], "b.h5") == 0);
        CHECK(strcmp(pb.preprocess, "scale=1") == 0 && strcmp(pb.selection, pa.selection) == 0 &&
              strcmp(pb.ptq_version, PTQ_VERSION_STRING) == 0 && pb.n_bins == 4096);
        CHECK(ptq_calib_set_find(back, "logits") == 22 && ptq_calib_set_find(back, "nope") == -1);
    }

    /* merge: split halves add up to the whole; bad pairs leave dst alone */
    ptq_calib_set *h0 = observe(&ctx, g, PTQ_DEVICE_CPU, x, 25, 8, NULL);
    ptq_calib_set *h1 = observe(&ctx, g, PTQ_DEVICE_CPU, x + 25 * 784, 15, 4, NULL);
    ptq_calib_select conv = {"Conv", NULL};
    ptq_calib_set *other = observe(&ctx, g, PTQ_DEVICE_CPU, x, 2, 2, &conv);
    CHECK(h0 && h1 && other);
    if (h0 && h1 && other && back) {
        ptq_calib_set_describe(&ctx, h0, sha, "m", "scale=2");
        ptq_calib_set_describe(&ctx, h1, sha, "m", "scale=2");
        ptq_calib_set_add_samples(&ctx, h0, "a.h5", ids, 25);
        ptq_calib_set_add_samples(&ctx, h1, "a.h5", ids + 25, 15);
        ptq_calib_provenance before, after;
        ptq_calib_set_provenance(h0, &before);
        CHECK(ptq_calib_set_merge(&ctx, h0, h0) == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "count twice"));
        CHECK(ptq_calib_set_merge(&ctx, h0, back) == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "preprocessing"));
        CHECK(ptq_calib_set_merge(&ctx, h0, other) == PTQ_ERR_INVALID_ARG);
        ptq_calib_set_provenance(h0, &after);
        CHECK(strcmp(before.sample_ids_sha256, after.sample_ids_sha256) == 0 && after.n_samples == 25);
        CHECK_MSG(ptq_calib_set_merge(&ctx, h0, h1) == PTQ_OK, "%s", ctx.msg);
        CHECK(same_sets(h0, whole));
        ptq_calib_set_provenance(h0, &after);
        CHECK(after.n_samples == 40);
    }

    /* an unhashed source (an archive of an older ptq) matched by name by two hashed ones of that name (one file
     * name, two contents): refused either way round, dst untouched; before, both unions were taken against the one
     * source, the second replacing the first's ids under the count of both (ids lost, the ids array over-read) */
    {
        static const char sha1[] = "1111111111111111111111111111111111111111111111111111111111111111";
        static const char sha2[] = "2222222222222222222222222222222222222222222222222222222222222222";
        const int64_t u_ids[2] = {0, 1}, b_ids[3] = {10, 11, 12}, c_ids[1] = {20};
        ptq_calib_set *legacy = observe(&ctx, g, PTQ_DEVICE_CPU, x, 2, 2, NULL);
        ptq_calib_set *two = observe(&ctx, g, PTQ_DEVICE_CPU, x + 2 * 784, 2, 2, NULL);
        CHECK(legacy && two);
        if (legacy && two) {
            ptq_calib_set_describe(&ctx, legacy, sha, "m", "scale=2");
            ptq_calib_set_describe(&ctx, two, sha, "m", "scale=2");
            CHECK(ptq_calib_set_add_samples(&ctx, legacy, "a.h5", u_ids, 2) == PTQ_OK);
            CHECK(ptq_calib_set_add_source(&ctx, two, "a.h5", sha1, b_ids, 3) == PTQ_OK);
            CHECK(ptq_calib_set_add_source(&ctx, two, "a.h5", sha2, c_ids, 1) == PTQ_OK);
            ptq_calib_provenance before, after;
            ptq_calib_set_provenance(legacy, &before);
            char before_ids[65];
            snprintf(before_ids, sizeof before_ids, "%s", before.sample_ids_sha256);
            st = ptq_calib_set_merge(&ctx, legacy, two);
            CHECK_MSG(st == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "a.h5") && strstr(ctx.msg, "content hash"),
                      "unhashed source matched by two: status %d, '%s'", (int)st, ctx.msg);
            ptq_calib_set_provenance(legacy, &after);
            CHECK(after.n_samples == 2 && after.n_sources == 1 && strcmp(after.sample_ids_sha256, before_ids) == 0);
            ptq_calib_provenance tb, ta;
            ptq_calib_set_provenance(two, &tb);
            snprintf(before_ids, sizeof before_ids, "%s", tb.sample_ids_sha256);
            st = ptq_calib_set_merge(&ctx, two, legacy);
            CHECK_MSG(st == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "a.h5") && strstr(ctx.msg, "content hash"),
                      "two hashed sources matched by one: status %d, '%s'", (int)st, ctx.msg);
            ptq_calib_set_provenance(two, &ta);
            CHECK(ta.n_samples == 4 && ta.n_sources == 2 && strcmp(ta.sample_ids_sha256, before_ids) == 0);
        }
        ptq_calib_set_free(legacy);
        ptq_calib_set_free(two);
    }

    /* an allocation failing anywhere in a merge leaves dst as it was: the n-th allocation made in the merge fails,
     * for every n until the merge makes no more (a source dst lacks, one content under a smaller name, a smaller
     * model name: all that the merge allocates); before, a failure after the first source was moved in left dst
     * with some sources merged and the observers not */
    {
        static const char sha1[] = "1111111111111111111111111111111111111111111111111111111111111111";
        static const char sha3[] = "3333333333333333333333333333333333333333333333333333333333333333";
        const int64_t d_ids[3] = {0, 1, 2}, s_ids[2] = {3, 4}, c_ids[2] = {7, 8};
        ptq_calib_set *dst = observe(&ctx, g, PTQ_DEVICE_CPU, x, 3, 3, NULL);
        ptq_calib_set *twin = observe(&ctx, g, PTQ_DEVICE_CPU, x, 3, 3, NULL);
        ptq_calib_set *src = observe(&ctx, g, PTQ_DEVICE_CPU, x + 3 * 784, 4, 4, NULL);
        CHECK(dst && twin && src);
        for (ptq_calib_set **t = (ptq_calib_set *[]){dst, twin}, **end = t + 2; dst && twin && src && t < end; t++) {
            CHECK(ptq_calib_set_describe(&ctx, *t, sha, "m2", "scale=2") == PTQ_OK);
            CHECK(ptq_calib_set_add_source(&ctx, *t, "b.h5", sha1, d_ids, 3) == PTQ_OK);
        }
        if (dst && twin && src) {
            CHECK(ptq_calib_set_describe(&ctx, src, sha, "m1", "scale=2") == PTQ_OK);
            CHECK(ptq_calib_set_add_source(&ctx, src, "a.h5", sha1, s_ids, 2) == PTQ_OK);
            CHECK(ptq_calib_set_add_source(&ctx, src, "c.h5", sha3, c_ids, 2) == PTQ_OK);
            st = PTQ_ERR_NOMEM;
            int k = 1;
            for (; st == PTQ_ERR_NOMEM && k < 200; k++) {
                fail_alloc_after = k;
                st = ptq_calib_set_merge(&ctx, dst, src);
                fail_alloc_after = 0;
                ptq_calib_provenance pd, pr;
                ptq_calib_set_provenance(dst, &pd);
                ptq_calib_set_provenance(twin, &pr);
                if (st == PTQ_OK)
                    break;
                CHECK_MSG(st == PTQ_ERR_NOMEM, "allocation %d failing: status %d, '%s'", k, (int)st, ctx.msg);
                CHECK_MSG(same_sets(dst, twin) && strcmp(pd.model_name, pr.model_name) == 0 &&
                              strcmp(pd.sample_ids_sha256, pr.sample_ids_sha256) == 0 &&
                              pd.n_samples == pr.n_samples && pd.n_sources == 1 &&
                              strcmp(pd.sources[0], "b.h5") == 0,
                          "allocation %d failing changed dst: %s, %lld samples, %d sources, model %s", k,
                          same_sets(dst, twin) ? "same observers" : "observers merged", (long long)pd.n_samples,
                          pd.n_sources, pd.model_name);
                if (!same_sets(dst, twin) || pd.n_samples != pr.n_samples)
                    break;
            }
            CHECK_MSG(st == PTQ_OK && k > 3, "merge: status %d after %d allocations", (int)st, k);
            CHECK(ptq_calib_set_merge(&ctx, twin, src) == PTQ_OK && same_sets(dst, twin));
            ptq_calib_provenance pd, pr;
            ptq_calib_set_provenance(dst, &pd);
            ptq_calib_set_provenance(twin, &pr);
            CHECK(pd.n_samples == 7 && pd.n_sources == 2 && strcmp(pd.sources[0], "a.h5") == 0 &&
                  strcmp(pd.sources[1], "c.h5") == 0 && strcmp(pd.model_name, "m1") == 0 &&
                  strcmp(pd.sample_ids_sha256, pr.sample_ids_sha256) == 0);
        }
        ptq_calib_set_free(dst);
        ptq_calib_set_free(twin);
        ptq_calib_set_free(src);
    }

    /* at most PTQ_CALIB_MAX_SOURCES data sets: one more is refused, naming it */
    {
        ptq_calib_set *crowd = observe(&ctx, g, PTQ_DEVICE_CPU, x, 1, 1, NULL);
        int added = 0;
        for (int i = 0; crowd && i < PTQ_CALIB_MAX_SOURCES; i++) {
            char name[32];
            const int64_t id = i;
            snprintf(name, sizeof name, "s%05d.h5", i);
            added += ptq_calib_set_add_samples(&ctx, crowd, name, &id, 1) == PTQ_OK;
        }
        const int64_t id = 0;
        CHECK(added == PTQ_CALIB_MAX_SOURCES);
        CHECK_MSG(crowd && ptq_calib_set_add_samples(&ctx, crowd, "one-more.h5", &id, 1) == PTQ_ERR_DATA &&
                      strstr(ctx.msg, "one-more.h5") && strstr(ctx.msg, "4000"),
                  "%s", ctx.msg);
        ptq_calib_set_free(crowd);
    }

    /* --math: fp64 and tf32 archives say so, read back, and merge with no other math */
    ptq_math m = PTQ_MATH_FP32;
    CHECK(ptq_math_parse(&ctx, "fp64", &m) == PTQ_OK && m == PTQ_MATH_FP64 && strcmp(ptq_math_name(m), "fp64") == 0);
    CHECK(ptq_math_parse(&ctx, "fp16", &m) == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "fp64"));
    CHECK(ptq_calib_set_math(&ctx, whole, "fp16") == PTQ_ERR_INVALID_ARG);
    CHECK_MSG(ptq_calib_set_math(&ctx, whole, "fp64") == PTQ_OK, "%s", ctx.msg);
    CHECK_MSG(ptq_calib_set_write(&ctx, whole, file) == PTQ_OK, "%s", ctx.msg);
    ptq_calib_set *back64 = NULL;
    CHECK_MSG(ptq_calib_set_read(&ctx, file, &back64) == PTQ_OK, "%s", ctx.msg);
    if (back64 && back) {
        ptq_calib_provenance p64;
        ptq_calib_set_provenance(back64, &p64);
        CHECK(strcmp(p64.math, "fp64") == 0);
        CHECK(ptq_calib_set_merge(&ctx, back64, back) == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "math"));
    }
    ptq_calib_set_free(back64);
    if (back)
        test_order(g, whole, back);
    test_ranges_errors(g);

    /* unreadable archives (the model file is no archive) */
    char path[4096];
    snprintf(path, sizeof path, "%s/models/fmnist_resnet.onnx", getenv("PTQ_SOURCE_DIR") ? getenv("PTQ_SOURCE_DIR") : ".");
    ptq_calib_set *bad = NULL;
    CHECK(ptq_calib_set_read(&ctx, "/nonexistent/calib.h5", &bad) == PTQ_ERR_IO && !bad);
    CHECK(ptq_calib_set_read(&ctx, path, &bad) == PTQ_ERR_FORMAT && !bad && strstr(ctx.msg, "fmnist_resnet.onnx"));
    CHECK(ptq_calib_set_write(&ctx, whole, "/nonexistent/dir/calib.h5") == PTQ_ERR_IO);
    char dir[256]; /* a path that cannot be created is left as it was, not removed */
    snprintf(dir, sizeof dir, "/tmp/ptq-test-calib-dir-%ld", (long)getpid());
    CHECK(mkdir(dir, 0700) == 0);
    CHECK(ptq_calib_set_write(&ctx, whole, dir) == PTQ_ERR_IO);
    CHECK_MSG(rmdir(dir) == 0, "a failed write removed %s, which it did not create", dir);

    remove(file);
    free(x);
    ptq_calib_set_free(whole);
    ptq_calib_set_free(split);
    ptq_calib_set_free(ones);
    ptq_calib_set_free(ref);
    ptq_calib_set_free(ref1);
    ptq_calib_set_free(back);
    ptq_calib_set_free(h0);
    ptq_calib_set_free(h1);
    ptq_calib_set_free(other);
    ptq_graph_free(g);
    return test_done("test_calib_set");
}
