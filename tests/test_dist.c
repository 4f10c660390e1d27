/* runtime/dist.c in one process (the MPI side is tests/mpi_test.py): the
 * shares tile a list exactly, reductions leave buffers as they are, and an
 * agreement passes a status through, failing on PTQ_DIST_FAIL_RANK's cue. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "ptq/dist.h"
#include "testlib.h"

static void test_share(void)
{
    const int64_t sizes[] = {0, 1, 2, 7, 100, 50000, (int64_t)1 << 40};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int64_t parts = 1; parts <= 9; parts++) {
            int64_t prev_hi = 0, smallest = INT64_MAX, largest = 0;
            for (int64_t p = 0; p < parts; p++) {
                int64_t lo, hi;
                ptq_dist_share(sizes[i], p, parts, &lo, &hi);
                CHECK_MSG(lo == prev_hi && hi >= lo, "share %lld of %lld over %lld: [%lld, %lld)", (long long)p,
                          (long long)parts, (long long)sizes[i], (long long)lo, (long long)hi);
                prev_hi = hi;
                smallest = hi - lo < smallest ? hi - lo : smallest;
                largest = hi - lo > largest ? hi - lo : largest;
            }
            CHECK_MSG(prev_hi == sizes[i] && largest - smallest <= 1, "%lld parts of %lld: end %lld, sizes %lld..%lld",
                      (long long)parts, (long long)sizes[i], (long long)prev_hi, (long long)smallest,
                      (long long)largest);
        }
}

static void test_one_process(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    CHECK(ptq_dist_init(&ctx, NULL, NULL) == PTQ_OK);
    CHECK(ptq_dist_rank() == 0 && ptq_dist_size() == 1 && ptq_dist_local_rank() == 0 && ptq_dist_local_size() == 1);
    int64_t buf[3] = {5, -7, INT64_MAX};
    CHECK(ptq_dist_allreduce_i64(&ctx, buf, 3, PTQ_DIST_SUM) == PTQ_OK);
    CHECK(buf[0] == 5 && buf[1] == -7 && buf[2] == INT64_MAX);
    CHECK(ptq_dist_bcast(&ctx, buf, sizeof buf, 0) == PTQ_OK && buf[1] == -7);

    /* agreements 0.. of this process: OK passes, a failure keeps its message */
    CHECK(ptq_dist_agree(&ctx, PTQ_OK) == PTQ_OK);
    ptq_fail(&ctx, PTQ_ERR_IO, "cannot read x.h5");
    CHECK(ptq_dist_agree(&ctx, PTQ_ERR_IO) == PTQ_ERR_IO && strcmp(ctx.msg, "cannot read x.h5") == 0);
    /* the third (index 2) is told to fail on rank 0; the fourth is not */
    setenv("PTQ_DIST_FAIL_RANK", "0:2", 1);
    ptq_ctx_init(&ctx);
    CHECK(ptq_dist_agree(&ctx, PTQ_OK) == PTQ_ERR_INTERNAL && strstr(ctx.msg, "injected failure") != NULL);
    CHECK(ptq_dist_agree(&ctx, PTQ_OK) == PTQ_OK);
    setenv("PTQ_DIST_FAIL_RANK", "1", 1); /* another rank's cue */
    CHECK(ptq_dist_agree(&ctx, PTQ_OK) == PTQ_OK);
    unsetenv("PTQ_DIST_FAIL_RANK");

    ptq_dist_stats s;
    ptq_dist_get_stats(&s);
    CHECK(s.calls == 0 && s.bytes == 0); /* nothing moves in one process */
    CHECK(ptq_dist_built() == (ptq_dist_library()[0] != '\0'));
    ptq_dist_finalize();
}

int main(void)
{
    test_share();
    test_one_process();
    return test_done("test_dist");
}
