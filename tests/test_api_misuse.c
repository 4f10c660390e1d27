/* libptq's public API used as a program would after a failure: a run
 * that fails after its first batch (here a consumer refusing the second;
 * in use an unreadable image, the smoothing tap's NaN, a label out of
 * range) leaves the session's executor as it was, no tap of its
 * consumers behind, so the calibration set or smoothing state the caller
 * frees next is not fed by the runs after it; the frees take NULL
 * (ptq_dataset_files_free with any count); an HDF5 open in a program that
 * ignores SIGCHLD, or reaps every child itself, gets the check's verdict
 * all the same. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptq/calib.h"
#include "ptq/consumers.h"
#include "ptq/dataset.h"
#include "ptq/runner.h"
#include "ptq/runtime.h"
#include "ptq/smooth.h"
#include "testlib.h"

enum { N_IMAGES = 24, SIDE = 28 };

/* A host's reaper thread: waits for any child of the process until told to stop. */
static void *reaper(void *arg)
{
    atomic_int *stop = arg;
    while (!atomic_load(stop))
        if (waitpid(-1, NULL, 0) < 0 && errno == ECHILD)
            usleep(100);
    return NULL;
}

/* Values the set's observers saw, over all its tensors. */
static int64_t observed(const ptq_calib_set *set)
{
    int64_t n = 0;
    for (int64_t i = 0; i < ptq_calib_set_n_tensors(set); i++) {
        ptq_observer_stats st;
        ptq_observer_get_stats(ptq_calib_set_observer(set, i), &st);
        n += st.count;
    }
    return n;
}

/* Counts the batches it sees; fails from batch fail_at on (-1: never). */
typedef struct failer {
    int64_t fail_at;
    int n_batches;
} failer;

static ptq_status fail_after(void *user, ptq_ctx *ctx, ptq_runner *r, ptq_batch *b)
{
    failer *f = user;
    (void)r;
    f->n_batches++;
    if (f->fail_at >= 0 && b->index >= f->fail_at)
        return ptq_fail(ctx, PTQ_ERR_DATA, "batch %lld refused by the test", (long long)b->index);
    return PTQ_OK;
}

/* A run of all images in batches of 8 with consumers c[n] and a counter that fails from batch fail_at on. */
static ptq_status run(ptq_ctx *ctx, ptq_session *s, const ptq_consumer *c, int n, int64_t fail_at)
{
    int64_t ids[N_IMAGES];
    for (int i = 0; i < N_IMAGES; i++)
        ids[i] = i;
    failer f = {fail_at, 0};
    ptq_runner_params rp = {.session = s, .ids = ids, .n_ids = N_IMAGES, .batch = 8, .prefetch = 1};
    for (int k = 0; k < n; k++)
        rp.consumers[rp.n_consumers++] = c[k];
    rp.consumers[rp.n_consumers++] = (ptq_consumer){&f, NULL, fail_after, NULL};
    ptq_ctx_init(ctx);
    return ptq_runner_run(ctx, &rp);
}

/* The calibration set's tap after a run that failed at its second batch: gone, so a later run leaves the set as
 * the failure left it (the caller would free it). */
static void test_failed_calibration(ptq_session *s)
{
    ptq_ctx ctx;
    ptq_calib_set *ref = NULL, *set = NULL, *again = NULL;
    ptq_ctx_init(&ctx);
    const ptq_calib_select all = {NULL, NULL};
    CHECK_MSG(ptq_calib_set_create(&ctx, ptq_session_graph(s), &all, 0, &ref) == PTQ_OK &&
              ptq_calib_set_create(&ctx, ptq_session_graph(s), &all, 0, &set) == PTQ_OK &&
              ptq_calib_set_create(&ctx, ptq_session_graph(s), &all, 0, &again) == PTQ_OK, "%s", ctx.msg);
    if (!ref || !set || !again)
        goto done;
    ptq_consumer c = ptq_calib_set_consumer(ref);
    CHECK_MSG(run(&ctx, s, &c, 1, -1) == PTQ_OK, "calibrating: %s", ctx.msg);
    c = ptq_calib_set_consumer(set);
    CHECK_MSG(run(&ctx, s, &c, 1, 1) == PTQ_ERR_DATA, "the failing run: %s", ctx.msg);
    const int64_t after_failure = observed(set);
    CHECK_MSG(after_failure > 0 && after_failure < observed(ref), "the failed run observed %lld values of %lld",
              (long long)after_failure, (long long)observed(ref));
    CHECK_MSG(run(&ctx, s, NULL, 0, -1) == PTQ_OK, "a run after it: %s", ctx.msg);
    CHECK_MSG(observed(set) == after_failure, "a run after the failed calibration fed its set: %lld values, %lld "
              "before", (long long)observed(set), (long long)after_failure);
    c = ptq_calib_set_consumer(again);
    CHECK_MSG(run(&ctx, s, &c, 1, -1) == PTQ_OK, "calibrating again: %s", ctx.msg);
    CHECK_MSG(observed(set) == after_failure, "calibrating again fed the failed set too");
    CHECK_MSG(observed(again) == observed(ref), "calibrating again observed %lld values, the first time %lld",
              (long long)observed(again), (long long)observed(ref));
done:
    ptq_calib_set_free(again);
    ptq_calib_set_free(set);
    ptq_calib_set_free(ref);
    ptq_calib_set_free(NULL);
}

/* Sum over the smoothing groups of their channels' median max|X| (ptq_smooth_spread's before). */
static double spread(const ptq_smooth *sm)
{
    double sum = 0.0;
    for (int i = 0; i < ptq_smooth_n_groups(sm); i++) {
        double before, after;
        ptq_smooth_spread(sm, i, 0.5, &before, &after);
        sum += before;
    }
    return sum;
}

/* The same for the smoothing state (include/ptq/smooth.h), on the ViT, whose LayerNorms feed MatMuls. */
static void test_failed_smoothing(const char *model, const char *data)
{
    ptq_ctx ctx;
    ptq_session *s = NULL;
    ptq_smooth *sm = NULL;
    ptq_ctx_init(&ctx);
    ptq_session_opts o;
    memset(&o, 0, sizeof o);
    o.model = model;
    o.data = data;
    CHECK_MSG(ptq_session_open(&ctx, &o, &s) == PTQ_OK &&
              ptq_smooth_create(&ctx, ptq_session_graph(s), &sm) == PTQ_OK, "%s", ctx.msg);
    CHECK(sm && ptq_smooth_n_groups(sm) > 0);
    if (sm && ptq_smooth_n_groups(sm) > 0) {
        const ptq_consumer c = ptq_smooth_consumer(sm);
        CHECK_MSG(run(&ctx, s, &c, 1, 1) == PTQ_ERR_DATA, "the failing smoothing run: %s", ctx.msg);
        const double after_failure = spread(sm);
        CHECK_MSG(run(&ctx, s, NULL, 0, -1) == PTQ_OK, "a run after it: %s", ctx.msg);
        CHECK_MSG(spread(sm) == after_failure, "a run after the failed smoothing fed its state: %g, %g before",
                  spread(sm), after_failure);
    }
    ptq_smooth_free(sm);
    ptq_smooth_free(NULL);
    ptq_session_close(s);
}

int main(void)
{
    char dir[] = "/tmp/ptq-api-misuse-XXXXXX", data[300], model[512], vit[512], forged[512];
    if (!mkdtemp(dir))
        return 1;
    snprintf(data, sizeof data, "%s/set.h5", dir);
    const char *src = getenv("PTQ_SOURCE_DIR") ? getenv("PTQ_SOURCE_DIR") : ".";
    snprintf(model, sizeof model, "%s/models/fmnist_resnet.onnx", src);
    snprintf(vit, sizeof vit, "%s/models/fmnist_vit.onnx", src);
    snprintf(forged, sizeof forged, "%s/tests/data/badinput/archive_zero_chunk_dim.h5", src);
    static uint8_t pixels[N_IMAGES * SIDE * SIDE];
    test_rand_seed(3);
    for (size_t i = 0; i < sizeof pixels; i++)
        pixels[i] = (uint8_t)test_rand_u64();
    const ptq_tensor images = {PTQ_DT_UINT8, 3, {N_IMAGES, SIDE, SIDE}, pixels, PTQ_MEM_HOST, 0};
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    CHECK_MSG(ptq_dataset_write_hdf5(&ctx, data, &images, NULL, NULL) == PTQ_OK, "%s", ctx.msg);
    ptq_session_opts o;
    memset(&o, 0, sizeof o);
    o.model = model;
    o.data = data;
    ptq_session *s = NULL;
    CHECK_MSG(ptq_session_open(&ctx, &o, &s) == PTQ_OK, "%s", ctx.msg);
    if (s)
        test_failed_calibration(s);
    ptq_session_close(s);
    test_failed_smoothing(vit, data);
    ptq_session_close(NULL);
    ptq_dataset_files_free(NULL, 3); /* the count of a list that is not there (it crashed) */
    /* counts and ids out of range are refused, not taken as something else: a batch below 1 (left the batch
     * symbolic), a negative shard count (read as no shards), a negative sample count (copied (size_t)-1 ids) or
     * id */
    ptq_graph *g = NULL;
    CHECK_MSG(ptq_model_load(&ctx, model, &g) == PTQ_OK, "%s", ctx.msg);
    CHECK(g && ptq_graph_infer_shapes(&ctx, g, -3) == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "batch -3"));
    CHECK_MSG(g && ptq_graph_infer_shapes(&ctx, g, 2) == PTQ_OK, "%s", ctx.msg);
    int64_t *picked = NULL, n_picked = 0;
    const ptq_pick bad_pick = {.n_shards = -2};
    CHECK(ptq_pick_samples(&ctx, 10, &bad_pick, &picked, &n_picked) == PTQ_ERR_INVALID_ARG && !picked);
    ptq_calib_set *set = NULL;
    CHECK_MSG(g && ptq_calib_set_create(&ctx, g, NULL, 2048, &set) == PTQ_OK, "%s", ctx.msg);
    const int64_t ids[] = {3, -1, 5};
    CHECK(set && ptq_calib_set_add_samples(&ctx, set, "d.h5", ids, -1) == PTQ_ERR_INVALID_ARG);
    CHECK_MSG(set && ptq_calib_set_add_samples(&ctx, set, "d.h5", ids, 3) == PTQ_ERR_INVALID_ARG &&
              strstr(ctx.msg, "sample id -1"), "%s", ctx.msg);
    CHECK_MSG(set && ptq_calib_set_add_samples(&ctx, set, "d.h5", ids, 1) == PTQ_OK, "%s", ctx.msg);
    ptq_calib_set_free(set);
    ptq_graph_free(g);
    /* a program that ignores SIGCHLD (or sets SA_NOCLDWAIT): its children are reaped before their status is read;
     * the HDF5 check's verdict comes back through a supervising child, for a sound file and for a forged one */
    for (int how = 0; how < 2; how++) {
        struct sigaction sa = {0}, old;
        sa.sa_handler = how ? SIG_DFL : SIG_IGN;
        sa.sa_flags = how ? SA_NOCLDWAIT : 0;
        sigaction(SIGCHLD, &sa, &old);
        const char *why = how ? "SA_NOCLDWAIT" : "SIG_IGN";
        ptq_dataset *ds = NULL;
        CHECK_MSG(ptq_dataset_open(&ctx, data, NULL, &ds) == PTQ_OK && ds && ptq_dataset_count(ds) == N_IMAGES,
                  "open with SIGCHLD %s: %s", why, ctx.msg);
        ptq_dataset_close(ds);
        ds = NULL;
        CHECK_MSG(ptq_dataset_open(&ctx, forged, NULL, &ds) == PTQ_ERR_FORMAT && strstr(ctx.msg, "libhdf5 crashed"),
                  "forged file with SIGCHLD %s: %s", why, ctx.msg);
        ptq_dataset_close(ds);
        sigaction(SIGCHLD, &old, NULL);
    }
    /* a program whose own thread reaps every child (waitpid(-1)) as it ends: it raced the check's wait4 for the
     * child's status, and won about half the time ("wait4: No child processes") */
    atomic_int stop = 0;
    pthread_t t;
    const int started = pthread_create(&t, NULL, reaper, &stop) == 0;
    CHECK(started);
    for (int i = 0; started && i < 16; i++) {
        ptq_dataset *ds = NULL;
        CHECK_MSG(ptq_dataset_open(&ctx, i % 2 ? forged : data, NULL, &ds) == (i % 2 ? PTQ_ERR_FORMAT : PTQ_OK),
                  "open %d beside a reaper thread: %s", i, ctx.msg);
        ptq_dataset_close(ds);
    }
    atomic_store(&stop, 1);
    if (started)
        pthread_join(t, NULL);
    unlink(data);
    rmdir(dir);
    return test_done("test_api_misuse");
}
