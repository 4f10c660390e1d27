/* libptq in a program of its own, as include/ptq/status.h promises it: one
 * that does not call ptq_hdf5_check_main (so the HDF5 check forks) and runs
 * separate objects on separate threads at once. An HDF5 open beside a
 * thread inside libhdf5 succeeds (the fork inherited that thread's lock and
 * refused the sound file), and two calibrations of two models on two threads
 * at once give the ranges they give one after the other, bit for bit. */
#define _GNU_SOURCE
#include <hdf5.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptq/calib.h"
#include "ptq/dataset.h"
#include "ptq/runner.h"
#include "hdf5_holder.h"
#include "testlib.h"

enum { N_IMAGES = 96, SIDE = 28 };

/* The forked check of b beside a thread in libhdf5 on a: PTQ_TEST_VET_STALL=1 stalls the first child under a 2 s
 * alarm, so the second, the real check, has 2 s (not 120) to finish. */
static void test_fork_beside_hdf5(const char *a, const char *b)
{
    setenv("PTQ_TEST_VET_STALL", "1", 1);
    pthread_t t;
    const int started = pthread_create(&t, NULL, holder, (void *)a) == 0;
    CHECK(started);
    while (started && atomic_load(&turns) < 2)
        usleep(1000);
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_dataset *ds = NULL;
    const ptq_status st = ptq_dataset_open(&ctx, b, NULL, &ds);
    CHECK_MSG(st == PTQ_OK && ptq_dataset_count(ds) == N_IMAGES, "open beside a thread in libhdf5: %s", ctx.msg);
    ptq_dataset_close(ds);
    atomic_store(&stop, 1);
    if (started)
        pthread_join(t, NULL);
    unsetenv("PTQ_TEST_VET_STALL");
}

typedef struct job {
    const char *model, *data;
    uint64_t seed;
    int64_t n_tensors;
    double *amax; /* [2 * n_tensors]: minmax's, then percentile's */
    ptq_status st;
    ptq_ctx ctx;
} job;

/* Calibrates j->model on 32 images of j->data picked by j->seed, through the session and the runner. */
static void *calibrate(void *arg)
{
    job *j = arg;
    ptq_ctx *ctx = &j->ctx;
    ptq_session *s = NULL;
    ptq_calib_set *set = NULL;
    ptq_calib_range *r = NULL;
    int64_t *ids = NULL, n_ids = 0;
    ptq_status st = PTQ_OK;
    ptq_ctx_init(ctx);
    ptq_session_opts o;
    memset(&o, 0, sizeof o);
    o.model = j->model;
    o.data = j->data;
    PTQ_TRY(st, ptq_session_open(ctx, &o, &s), done);
    PTQ_TRY(st, ptq_session_shapes(ctx, s), done);
    PTQ_TRY(st, ptq_calib_set_create(ctx, ptq_session_graph(s), &(ptq_calib_select){NULL, NULL}, 0, &set), done);
    const ptq_pick pick = {0, 32, j->seed, 0, 0};
    PTQ_TRY(st, ptq_pick_samples(ctx, ptq_session_n_samples(s), &pick, &ids, &n_ids), done);
    ptq_runner_params rp = {.session = s, .ids = ids, .n_ids = n_ids, .batch = 8, .prefetch = 1};
    rp.consumers[rp.n_consumers++] = ptq_calib_set_consumer(set);
    PTQ_TRY(st, ptq_runner_run(ctx, &rp), done);
    j->n_tensors = ptq_calib_set_n_tensors(set);
    r = calloc((size_t)j->n_tensors, sizeof *r);
    j->amax = calloc(2 * (size_t)j->n_tensors, sizeof *j->amax);
    if (!r || !j->amax) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int m = 0; m < 2; m++) {
        const ptq_calib_params cp = {m ? PTQ_CALIB_PERCENTILE : PTQ_CALIB_MINMAX, PTQ_QFORMAT_INT8, 0.0};
        int64_t bad = -1;
        PTQ_TRY(st, ptq_calib_set_ranges(ctx, set, &cp, r, &bad), done);
        for (int64_t i = 0; i < j->n_tensors; i++)
            j->amax[m * j->n_tensors + i] = r[i].amax;
    }
done:
    j->st = st;
    free(r);
    free(ids);
    ptq_calib_set_free(set);
    ptq_session_close(s);
    return NULL;
}

static int same_job(const job *a, const job *b)
{
    return a->st == PTQ_OK && b->st == PTQ_OK && a->n_tensors == b->n_tensors && a->n_tensors > 0 &&
           memcmp(a->amax, b->amax, 2 * (size_t)a->n_tensors * sizeof *a->amax) == 0;
}

static void test_two_calibrations(const char *data)
{
    const char *src = getenv("PTQ_SOURCE_DIR") ? getenv("PTQ_SOURCE_DIR") : ".";
    char m1[512], m2[512];
    snprintf(m1, sizeof m1, "%s/models/fmnist_resnet.onnx", src);
    snprintf(m2, sizeof m2, "%s/models/fmnist_mobilenet.onnx", src);
    job serial[2] = {{m1, data, 1, 0, NULL, PTQ_OK, {0}}, {m2, data, 2, 0, NULL, PTQ_OK, {0}}};
    job both[2] = {serial[0], serial[1]};
    for (int k = 0; k < 2; k++) {
        calibrate(&serial[k]);
        CHECK_MSG(serial[k].st == PTQ_OK, "%s: %s", serial[k].model, serial[k].ctx.msg);
    }
    pthread_t t[2];
    int started[2];
    for (int k = 0; k < 2; k++)
        started[k] = pthread_create(&t[k], NULL, calibrate, &both[k]) == 0;
    for (int k = 0; k < 2; k++) {
        if (started[k])
            pthread_join(t[k], NULL);
        CHECK_MSG(started[k] && same_job(&serial[k], &both[k]), "%s on a thread beside another: %s",
                  serial[k].model, both[k].ctx.msg);
        free(serial[k].amax);
        free(both[k].amax);
    }
}

int main(void)
{
    char dir[] = "/tmp/ptq-api-threads-XXXXXX", a[300], b[300];
    if (!mkdtemp(dir))
        return 1;
    snprintf(a, sizeof a, "%s/a.h5", dir);
    snprintf(b, sizeof b, "%s/b.h5", dir);
    static uint8_t pixels[N_IMAGES * SIDE * SIDE];
    static int32_t labels[N_IMAGES];
    test_rand_seed(7);
    for (size_t i = 0; i < sizeof pixels; i++)
        pixels[i] = (uint8_t)test_rand_u64();
    for (int i = 0; i < N_IMAGES; i++)
        labels[i] = i % 10;
    const ptq_tensor images = {PTQ_DT_UINT8, 3, {N_IMAGES, SIDE, SIDE}, pixels, PTQ_MEM_HOST, 0};
    const ptq_tensor lab = {PTQ_DT_INT32, 1, {N_IMAGES}, labels, PTQ_MEM_HOST, 0};
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    CHECK_MSG(ptq_dataset_write_hdf5(&ctx, a, &images, &lab, NULL) == PTQ_OK, "%s", ctx.msg);
    CHECK_MSG(ptq_dataset_write_hdf5(&ctx, b, &images, &lab, NULL) == PTQ_OK, "%s", ctx.msg);
    test_fork_beside_hdf5(a, b);
    test_two_calibrations(b);
    unlink(a);
    unlink(b);
    rmdir(dir);
    return test_done("test_api_threads");
}
