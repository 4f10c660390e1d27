/* The command under an MPI launcher (include/ptq/dist.h): joining the job,
 * rank 0 as the only writer and printer (the other ranks' stdout goes to
 * /dev/null; their errors reach rank 0 through ptq_dist_agree), the CPU
 * threads shared by the ranks of a node, and the commands that run on rank
 * 0 alone. Covered by tests/mpi_test.py. */
#define _GNU_SOURCE /* sched_getaffinity */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ptq/dist.h"
#include "ptq/hash.h"

static int rank0_alone; /* 1 while cli_on_rank0 runs a command on rank 0 alone */

int cli_is_writer(void)
{
    return ptq_dist_rank() == 0;
}

int cli_ranks_split(void)
{
    return ptq_dist_size() > 1 && !rank0_alone;
}

int cli_dist_start(int *argc, char ***argv)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = ptq_dist_init(&ctx, argc, argv);
    if (st != PTQ_OK)
        return cli_report("mpi", &ctx, st);
    if (ptq_dist_size() == 1)
        return 0;
    if (!cli_is_writer() && !freopen("/dev/null", "w", stdout))
        return cli_report("mpi", &ctx, ptq_fail(&ctx, PTQ_ERR_IO, "cannot send rank %d's output to /dev/null",
                                                ptq_dist_rank()));
    /* the node's CPUs shared by its ranks, unless the launcher bound each to fewer (--threads overrides) */
    cpu_set_t set;
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    long mine = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : online;
    long share = online / ptq_dist_local_size();
    ptq_cpu_set_threads((int)(share < 1 ? 1 : share < mine ? share : mine));
    return 0;
}

void cli_dist_stop(void)
{
    if (getenv("PTQ_DIST_STATS") && ptq_dist_size() > 1) {
        ptq_dist_stats ds;
        ptq_dist_get_stats(&ds);
        fprintf(stderr, "ptq: dist: rank %d of %d: %lld collectives, %lld bytes, waiting %.6f s, reducing %.6f s\n",
                ptq_dist_rank(), ptq_dist_size(), (long long)ds.calls, (long long)ds.bytes, ds.wait_s, ds.reduce_s);
    }
    ptq_dist_finalize();
}

int cli_rank0_rc(int rc)
{
    int64_t v = rc;
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = ptq_dist_bcast(&ctx, &v, sizeof v, 0);
    return st != PTQ_OK ? cli_report("mpi", &ctx, st) : (int)v;
}

int cli_on_rank0(int (*fn)(int argc, char **argv), int argc, char **argv)
{
    int rc = 0;
    if (cli_is_writer()) {
        const int was = rank0_alone; /* `ptq run` runs its plan stage this way */
        rank0_alone = 1;
        rc = fn(argc, argv);
        rank0_alone = was;
    }
    return cli_rank0_rc(rc);
}

ptq_status cli_rank_ids(ptq_ctx *ctx, int64_t **ids, int64_t *n_ids, int64_t head)
{
    (void)ctx;
    const int size = ptq_dist_size(), rank = ptq_dist_rank();
    if (size == 1)
        return PTQ_OK;
    int64_t lo, hi;
    ptq_dist_share(*n_ids, 0, size, &lo, &hi);
    if (head > *n_ids)
        head = *n_ids;
    if (hi >= head) { /* equal shares, some empty when there are fewer ids than ranks */
        ptq_dist_share(*n_ids, rank, size, &lo, &hi);
    } else if (rank == 0) { /* the head, then the rest shared by the other ranks */
        lo = 0, hi = head;
    } else {
        ptq_dist_share(*n_ids - head, rank - 1, size - 1, &lo, &hi);
        lo += head, hi += head;
    }
    memmove(*ids, *ids + lo, (size_t)(hi - lo) * sizeof **ids);
    *n_ids = hi - lo;
    return PTQ_OK;
}

ptq_status cli_ranks_agree_read(ptq_ctx *ctx, ptq_status st, const cli_rank_read *reads, int n)
{
    if (ptq_dist_size() == 1 || n > CLI_RANK_READS)
        return ptq_dist_agree(ctx, st);
    char theirs[CLI_RANK_READS][sizeof reads->what]; /* rank 0's; every rank takes part, whatever its status */
    memset(theirs, 0, sizeof theirs);
    for (int i = 0; i < n && cli_is_writer(); i++)
        memcpy(theirs[i], reads[i].what, sizeof theirs[i]);
    ptq_ctx mpi_ctx;
    ptq_ctx_init(&mpi_ctx);
    ptq_status mst = ptq_dist_bcast(&mpi_ctx, theirs, sizeof theirs, 0);
    if (st == PTQ_OK && mst != PTQ_OK)
        st = ptq_fail(ctx, mst, "%s", mpi_ctx.msg);
    for (int i = 0; i < n && st == PTQ_OK; i++) {
        theirs[i][sizeof theirs[i] - 1] = '\0';
        if (reads[i].path && strcmp(reads[i].what, theirs[i]) != 0)
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s is not the file rank 0 read (%.24s here, %.24s on rank 0): "
                          "every rank must read the same files (put them on a file system all nodes share)",
                          reads[i].path, reads[i].what, theirs[i]);
    }
    return ptq_dist_agree(ctx, st);
}

ptq_status cli_rank_read_file(ptq_ctx *ctx, const char *path, int model, cli_rank_read *r)
{
    char hex[65];
    r->path = NULL;
    if (ptq_dist_size() == 1 || !path) /* nothing to compare */
        return PTQ_OK;
    PTQ_TRY_RET(model ? cli_model_sha256(ctx, path, hex) : ptq_sha256_file(ctx, path, hex));
    r->path = path;
    snprintf(r->what, sizeof r->what, "SHA-256 %s", hex);
    return PTQ_OK;
}

ptq_status cli_rank_read_data(ptq_ctx *ctx, const char *path, const ptq_dataset *ds, cli_rank_read *r)
{
    char hex[65];
    r->path = NULL;
    if (ptq_dist_size() == 1)
        return PTQ_OK;
    PTQ_TRY_RET(cli_dataset_sha256(ctx, ds, hex));
    r->path = path;
    snprintf(r->what, sizeof r->what, "SHA-256 %s", hex);
    return PTQ_OK;
}

void cli_rank_read_count(const char *path, int64_t n, cli_rank_read *r)
{
    r->path = path;
    snprintf(r->what, sizeof r->what, "%lld sample%s", (long long)n, n == 1 ? "" : "s");
}

const char *cli_rank_stage(const char *stage, char *buf, size_t n_buf)
{
    if (ptq_dist_size() == 1)
        return stage;
    snprintf(buf, n_buf, "%s, rank 0's share", stage);
    return buf;
}
