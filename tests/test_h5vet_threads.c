/* The HDF5 check's child process (datasets/h5vet.c) in a program that reads
 * HDF5 on another thread: every ptq_dataset_open returns at once. Before,
 * a fork while the other thread was inside libhdf5 (holding its lock) left
 * the child waiting for ever, and about one open in a hundred took the
 * check's 120 s wall-clock alarm. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "ptq/dataset.h"
#include "testlib.h"

enum { N_IMG = 256, N_OPENS = 600, SLOW_S = 20 };

typedef struct reader_job {
    const char *path;
    atomic_int stop;
    int64_t n_reads;
    ptq_status st;
    ptq_ctx ctx;
} reader_job;

/* Reads every image of the set, again and again, until told to stop. */
static void *reader(void *arg)
{
    reader_job *j = arg;
    ptq_dataset *ds = NULL;
    uint8_t *px = malloc((size_t)N_IMG * 28 * 28);
    ptq_ctx_init(&j->ctx);
    j->st = px ? ptq_dataset_open(&j->ctx, j->path, NULL, &ds) : PTQ_ERR_NOMEM;
    while (j->st == PTQ_OK && !atomic_load(&j->stop)) {
        j->st = ptq_dataset_read_u8(&j->ctx, ds, 0, N_IMG, px, NULL);
        j->n_reads++;
    }
    ptq_dataset_close(ds);
    free(px);
    return NULL;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    char path[256];
    snprintf(path, sizeof path, "/tmp/ptq-test-h5vet-threads-%ld.h5", (long)getpid());
    uint8_t *img = malloc((size_t)N_IMG * 28 * 28);
    test_rand_seed(5);
    for (int64_t i = 0; i < (int64_t)N_IMG * 28 * 28; i++)
        img[i] = (uint8_t)(test_rand_u64() % 256);
    ptq_tensor ti = {PTQ_DT_UINT8, 3, {N_IMG, 28, 28}, img, PTQ_MEM_HOST, 0};
    CHECK_MSG(ptq_dataset_write_hdf5(&ctx, path, &ti, NULL, NULL) == PTQ_OK, "%s", ctx.msg);
    reader_job job = {.path = path};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, reader, &job) == 0);
    double slowest_s = 0;
    int n_ok = 0, n_tried = 0;
    for (; n_tried < N_OPENS && slowest_s < SLOW_S; n_tried++) {
        ptq_dataset *ds = NULL;
        const double t0 = now_s();
        const ptq_status st = ptq_dataset_open(&ctx, path, NULL, &ds);
        const double took_s = now_s() - t0;
        slowest_s = took_s > slowest_s ? took_s : slowest_s;
        n_ok += st == PTQ_OK;
        ptq_dataset_close(ds);
    }
    atomic_store(&job.stop, 1);
    pthread_join(t, NULL);
    CHECK_MSG(slowest_s < SLOW_S, "an open beside a reading thread took %.1f s (the check's child was stuck)",
              slowest_s);
    CHECK_MSG(n_ok == n_tried, "%d of %d opens failed: %s", n_tried - n_ok, n_tried, ctx.msg);
    CHECK_MSG(job.st == PTQ_OK && job.n_reads > 0, "reader: %lld reads, %s", (long long)job.n_reads, job.ctx.msg);
    remove(path);
    free(img);
    return test_done("test_h5vet_threads");
}
