/* The command under an MPI launcher (include/ptq/dist.h): joining the job,
 * rank 0 as the only writer and printer (the other ranks' stdout goes to
 * /dev/null; their errors reach rank 0 through ptq_dist_agree), the CPU
 * threads shared by the ranks of a node, and the commands that run on rank
 * 0 alone. Covered by tests/mpi_test.py. */
#define _GNU_SOURCE /* sched_getaffinity */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ptq/dist.h"

int cli_is_writer(void)
{
    return ptq_dist_rank() == 0;
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
    return cli_rank0_rc(cli_is_writer() ? fn(argc, argv) : 0);
}

ptq_status cli_rank_ids(ptq_ctx *ctx, int64_t **ids, int64_t *n_ids)
{
    const int size = ptq_dist_size();
    if (size == 1)
        return PTQ_OK;
    if (*n_ids < size)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%lld samples cannot be shared by %d ranks: run fewer ranks",
                        (long long)*n_ids, size);
    int64_t lo, hi;
    ptq_dist_share(*n_ids, ptq_dist_rank(), size, &lo, &hi);
    memmove(*ids, *ids + lo, (size_t)(hi - lo) * sizeof **ids);
    *n_ids = hi - lo;
    return PTQ_OK;
}
