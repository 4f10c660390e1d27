/* Ranks of one job (include/ptq/dist.h): every MPI call of ptq. MPI is
 * joined only when a launcher started the process, on a duplicate of
 * MPI_COMM_WORLD that returns errors instead of aborting; the node's ranks
 * come from an MPI-3 shared-memory split (whatever the launcher). The
 * collectives are non-blocking ones polled with a sleep that grows to 1 ms,
 * so ranks waiting for a slower one leave the CPU to it. Without PTQ_MPI
 * the same API is one process of one. Covered by tests/test_dist.c and
 * tests/mpi_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef PTQ_MPI
#include <mpi.h>
#endif

#include "ptq/dist.h"

static struct {
    int joined; /* MPI_Init done by us */
    int rank, size, local_rank, local_size;
    int n_agree; /* agreements so far (PTQ_DIST_FAIL_RANK's K) */
    int timed;   /* PTQ_DIST_STATS: barrier before each collective */
    ptq_dist_stats stats;
    char library[256];
#ifdef PTQ_MPI
    MPI_Comm comm;
#endif
} dist = {.size = 1, .local_size = 1};

void ptq_dist_share(int64_t n, int64_t part, int64_t n_parts, int64_t *lo, int64_t *hi)
{
    if (n_parts < 1)
        n_parts = 1;
    /* floor(n * i / n_parts) without overflow for n_parts <= 2^31: n = q * n_parts + r, r * i < 2^62 */
    *lo = n / n_parts * part + n % n_parts * part / n_parts;
    *hi = n / n_parts * (part + 1) + n % n_parts * (part + 1) / n_parts;
}

int ptq_dist_built(void)
{
#ifdef PTQ_MPI
    return 1;
#else
    return 0;
#endif
}

int ptq_dist_rank(void)
{
    return dist.rank;
}

int ptq_dist_size(void)
{
    return dist.size;
}

int ptq_dist_local_rank(void)
{
    return dist.local_rank;
}

int ptq_dist_local_size(void)
{
    return dist.local_size;
}

void ptq_dist_get_stats(ptq_dist_stats *out)
{
    *out = dist.stats;
}

#ifdef PTQ_MPI

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Any of the variables Open MPI's, PMI's or PMIx's launchers set. */
static int launched(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]))
            return 1;
    return 0;
}

static ptq_status mpi_fail(ptq_ctx *ctx, int err, const char *what)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(err, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", err);
    return ptq_fail(ctx, PTQ_ERR_INTERNAL, "%s failed on rank %d of %d: %s", what, dist.rank, dist.size, text);
}

/* Waits for req, sleeping a little longer each time it is not done. */
static int wait_polling(MPI_Request *req)
{
    int done = 0, err;
    long sleep_ns = 1000;
    for (int spins = 0;; spins++) {
        if ((err = MPI_Test(req, &done, MPI_STATUS_IGNORE)) != MPI_SUCCESS || done)
            return err;
        if (spins < 64)
            continue;
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        if (sleep_ns < 1000000)
            sleep_ns *= 2;
    }
}

/* With PTQ_DIST_STATS: the time until every rank has arrived. */
static int wait_for_all(void)
{
    if (!dist.timed)
        return MPI_SUCCESS;
    const double t0 = now_s();
    MPI_Request req;
    int err = MPI_Ibarrier(dist.comm, &req);
    if (err == MPI_SUCCESS)
        err = wait_polling(&req);
    dist.stats.wait_s += now_s() - t0;
    return err;
}

ptq_status ptq_dist_init(ptq_ctx *ctx, int *argc, char ***argv)
{
    int len = 0;
    if (MPI_Get_library_version(dist.library, &len) != MPI_SUCCESS)
        dist.library[0] = '\0';
    dist.library[strcspn(dist.library, "\n")] = '\0';
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized || !launched())
        return PTQ_OK;
    int provided = 0;
    int err = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    if (err != MPI_SUCCESS)
        return ptq_fail(ctx, PTQ_ERR_INTERNAL, "MPI_Init_thread failed (error %d)", err);
    dist.joined = 1;
    MPI_Comm local;
    if ((err = MPI_Comm_dup(MPI_COMM_WORLD, &dist.comm)) != MPI_SUCCESS ||
        (err = MPI_Comm_set_errhandler(dist.comm, MPI_ERRORS_RETURN)) != MPI_SUCCESS ||
        (err = MPI_Comm_rank(dist.comm, &dist.rank)) != MPI_SUCCESS ||
        (err = MPI_Comm_size(dist.comm, &dist.size)) != MPI_SUCCESS ||
        (err = MPI_Comm_split_type(dist.comm, MPI_COMM_TYPE_SHARED, dist.rank, MPI_INFO_NULL, &local)) != MPI_SUCCESS)
        return mpi_fail(ctx, err, "joining the MPI job");
    MPI_Comm_rank(local, &dist.local_rank);
    MPI_Comm_size(local, &dist.local_size);
    MPI_Comm_free(&local);
    dist.timed = getenv("PTQ_DIST_STATS") != NULL;
    return PTQ_OK;
}

void ptq_dist_finalize(void)
{
    if (!dist.joined)
        return;
    MPI_Comm_free(&dist.comm);
    MPI_Finalize();
    dist.joined = 0;
}

const char *ptq_dist_library(void)
{
    return dist.library;
}

ptq_status ptq_dist_allreduce_i64(ptq_ctx *ctx, int64_t *buf, int64_t n, ptq_dist_op op)
{
    if (dist.size == 1 || n <= 0)
        return PTQ_OK;
    int err = wait_for_all();
    const double t0 = now_s();
    const MPI_Op mop = op == PTQ_DIST_SUM ? MPI_SUM : op == PTQ_DIST_MIN ? MPI_MIN : MPI_MAX;
    const int64_t chunk = (int64_t)1 << 27; /* MPI counts are int */
    for (int64_t at = 0; at < n && err == MPI_SUCCESS; at += chunk) {
        MPI_Request req;
        const int count = (int)(n - at < chunk ? n - at : chunk);
        err = MPI_Iallreduce(MPI_IN_PLACE, buf + at, count, MPI_INT64_T, mop, dist.comm, &req);
        if (err == MPI_SUCCESS)
            err = wait_polling(&req);
    }
    dist.stats.reduce_s += now_s() - t0;
    dist.stats.calls++;
    dist.stats.bytes += n * (int64_t)sizeof *buf;
    return err == MPI_SUCCESS ? PTQ_OK : mpi_fail(ctx, err, "a reduction");
}

ptq_status ptq_dist_bcast(ptq_ctx *ctx, void *buf, size_t bytes, int root)
{
    if (dist.size == 1 || bytes == 0)
        return PTQ_OK;
    int err = wait_for_all();
    const double t0 = now_s();
    const size_t chunk = (size_t)1 << 30;
    for (size_t at = 0; at < bytes && err == MPI_SUCCESS; at += chunk) {
        MPI_Request req;
        const int count = (int)(bytes - at < chunk ? bytes - at : chunk);
        err = MPI_Ibcast((char *)buf + at, count, MPI_BYTE, root, dist.comm, &req);
        if (err == MPI_SUCCESS)
            err = wait_polling(&req);
    }
    dist.stats.reduce_s += now_s() - t0;
    dist.stats.calls++;
    dist.stats.bytes += (int64_t)bytes;
    return err == MPI_SUCCESS ? PTQ_OK : mpi_fail(ctx, err, "a broadcast");
}

#else /* one process */

ptq_status ptq_dist_init(ptq_ctx *ctx, int *argc, char ***argv)
{
    (void)ctx;
    (void)argc;
    (void)argv;
    return PTQ_OK;
}

void ptq_dist_finalize(void)
{
}

const char *ptq_dist_library(void)
{
    return dist.library;
}

ptq_status ptq_dist_allreduce_i64(ptq_ctx *ctx, int64_t *buf, int64_t n, ptq_dist_op op)
{
    (void)ctx;
    (void)buf;
    (void)n;
    (void)op;
    return PTQ_OK;
}

ptq_status ptq_dist_bcast(ptq_ctx *ctx, void *buf, size_t bytes, int root)
{
    (void)ctx;
    (void)buf;
    (void)bytes;
    (void)root;
    return PTQ_OK;
}

#endif

/* PTQ_DIST_FAIL_RANK=R[:K]: whether this is rank R's K-th agreement. */
static int injected_failure(int k, const char **spec)
{
    const char *v = getenv("PTQ_DIST_FAIL_RANK");
    *spec = v;
    if (!v || !*v)
        return 0;
    char *end = NULL;
    long r = strtol(v, &end, 10), at = 0;
    if (end && *end == ':')
        at = strtol(end + 1, &end, 10);
    return end && *end == '\0' && r == dist.rank && at == k;
}

/* What a failing rank sends the others. */
typedef struct agreed_failure {
    int64_t code;
    char msg[PTQ_MSG_BYTES];
    char where[128];
} agreed_failure;

ptq_status ptq_dist_agree(ptq_ctx *ctx, ptq_status st)
{
    const char *spec;
    if (st == PTQ_OK && injected_failure(dist.n_agree, &spec))
        st = ptq_fail(ctx, PTQ_ERR_INTERNAL, "injected failure (PTQ_DIST_FAIL_RANK=%s)", spec);
    dist.n_agree++;
    if (dist.size == 1)
        return st;
    int64_t first = st != PTQ_OK ? dist.rank : dist.size;
    ptq_ctx mpi_ctx;
    ptq_ctx_init(&mpi_ctx);
    ptq_status mst = ptq_dist_allreduce_i64(&mpi_ctx, &first, 1, PTQ_DIST_MIN);
    if (mst != PTQ_OK) {
        *ctx = mpi_ctx;
        return mst;
    }
    if (first == dist.size)
        return PTQ_OK;
    agreed_failure *f = calloc(1, sizeof *f);
    if (!f) /* every rank will fail this agreement (and hold its own message) */
        return st != PTQ_OK ? st : ptq_fail(ctx, PTQ_ERR_NOMEM, "rank %lld of %d failed", (long long)first, dist.size);
    if (dist.rank == first) {
        f->code = ctx->code != PTQ_OK ? ctx->code : st;
        snprintf(f->msg, sizeof f->msg, "%s", ctx->msg[0] ? ctx->msg : ptq_status_name(st));
        snprintf(f->where, sizeof f->where, "%s", ctx->where);
    }
    mst = ptq_dist_bcast(&mpi_ctx, f, sizeof *f, (int)first);
    if (mst != PTQ_OK) {
        free(f);
        *ctx = mpi_ctx;
        return mst;
    }
    f->msg[sizeof f->msg - 1] = f->where[sizeof f->where - 1] = '\0';
    const ptq_status code = f->code > PTQ_OK && f->code <= PTQ_ERR_INTERNAL ? (ptq_status)f->code : PTQ_ERR_INTERNAL;
    ptq_fail(ctx, code, "rank %lld of %d: %s", (long long)first, dist.size, f->msg);
    snprintf(ctx->where, sizeof ctx->where, "%s", f->where);
    free(f);
    return code;
}
