/* The HDF5 check beside a thread inside libhdf5 (datasets/h5vet.c): libhdf5
 * (thread-safe, as Debian builds it) holds one lock through every call, and
 * a forked child that inherits it held by another thread waits for ever, so
 * the wall limit refused a sound file. This program calls
 * ptq_hdf5_check_main first, as the ptq command does, so the check runs in
 * a fresh process: while a thread holds the lock in turns (an iteration
 * callback that sleeps), every open of another sound file succeeds.
 * PTQ_TEST_VET_STALL=1 stalls each open's first child under a 2 s alarm:
 * the second one, the real check, then has 2 s, not 120, so a stuck check
 * fails here in seconds. */
#define _GNU_SOURCE
#include <hdf5.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ptq/dataset.h"
#include "hdf5_holder.h"
#include "testlib.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    ptq_hdf5_check_main(argc, argv);
    char dir[] = "/tmp/ptq-h5vet-XXXXXX", a[300], b[300];
    if (!mkdtemp(dir))
        return 1;
    snprintf(a, sizeof a, "%s/a.h5", dir);
    snprintf(b, sizeof b, "%s/b.h5", dir);
    static uint8_t pixels[4 * 8 * 8];
    const int64_t dims[3] = {4, 8, 8};
    ptq_tensor images = {PTQ_DT_UINT8, 3, {dims[0], dims[1], dims[2]}, pixels, PTQ_MEM_HOST, 0};
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    CHECK_MSG(ptq_dataset_write_hdf5(&ctx, a, &images, NULL, NULL) == PTQ_OK, "%s", ctx.msg);
    CHECK_MSG(ptq_dataset_write_hdf5(&ctx, b, &images, NULL, NULL) == PTQ_OK, "%s", ctx.msg);
    setenv("PTQ_TEST_VET_STALL", "1", 1);
    pthread_t t;
    const int started = pthread_create(&t, NULL, holder, a) == 0;
    CHECK(started);
    while (started && atomic_load(&turns) < 2)
        usleep(1000);
    for (int i = 0; i < 2; i++) {
        ptq_dataset *ds = NULL;
        ptq_ctx_init(&ctx);
        const double t0 = now_s();
        const ptq_status st = ptq_dataset_open(&ctx, b, NULL, &ds);
        CHECK_MSG(st == PTQ_OK && ptq_dataset_count(ds) == 4, "open %d beside a thread in libhdf5: %s (%.1f s)", i,
                  ctx.msg, now_s() - t0);
        ptq_dataset_close(ds);
    }
    CHECK_MSG(atomic_load(&turns) > 10, "the thread took libhdf5's lock %d times", atomic_load(&turns));
    atomic_store(&stop, 1);
    if (started)
        pthread_join(t, NULL);
    unlink(a);
    unlink(b);
    rmdir(dir);
    return test_done("test_h5vet_threads");
}
