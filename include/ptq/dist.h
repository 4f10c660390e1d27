/* Running one job as several processes (ranks) under an MPI launcher
 * (mpirun, srun): who this process is, which part of a list is its share,
 * exact integer reductions, and agreeing on failures. Every MPI call of ptq
 * is in runtime/dist.c; built without MPI (or not started by a launcher)
 * the same functions describe one process of one and reduce nothing.
 * Collectives must be called by every rank in the same order. Covered by
 * tests/test_dist.c and tests/mpi_test.py. */
#ifndef PTQ_DIST_H
#define PTQ_DIST_H

#include "ptq/export_api.h"

#include <stddef.h>
#include <stdint.h>

#include "ptq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Joins the job when a launcher started this process (Open MPI's, PMI's,
 * PMIx's or Slurm's environment); a plain start stays one process without
 * touching MPI. Call once, before anything else of this header, from the
 * main thread (MPI calls come only from it). argc/argv may be NULL. */
PTQ_API ptq_status ptq_dist_init(ptq_ctx *ctx, int *argc, char ***argv);
/* Leaves the job (MPI_Finalize). A no-op without a job. */
PTQ_API void ptq_dist_finalize(void);

/* 1 when built with MPI. */
PTQ_API int ptq_dist_built(void);
/* "Open MPI v4.1.4, ..." (the MPI library's first line), or "" without MPI. */
PTQ_API const char *ptq_dist_library(void);

PTQ_API int ptq_dist_rank(void);       /* 0 .. size - 1 */
PTQ_API int ptq_dist_size(void);       /* ranks in the job, 1 without one */
PTQ_API int ptq_dist_local_rank(void); /* among the ranks of this node: picks its GPU */
PTQ_API int ptq_dist_local_size(void); /* ranks on this node */

/* The share [*lo, *hi) of n items of part `part` of n_parts: equal,
 * contiguous, floor(n * part / n_parts) boundaries (as ptq_pick_samples'
 * shards). */
PTQ_API void ptq_dist_share(int64_t n, int64_t part, int64_t n_parts, int64_t *lo, int64_t *hi);

typedef enum ptq_dist_op { PTQ_DIST_SUM, PTQ_DIST_MIN, PTQ_DIST_MAX } ptq_dist_op;

/* buf[n] on every rank becomes op over the ranks' buf, element by element,
 * exactly (integers; a SUM must not overflow). PTQ_ERR_INTERNAL with MPI's
 * message when a call fails. */
PTQ_API ptq_status ptq_dist_allreduce_i64(ptq_ctx *ctx, int64_t *buf, int64_t n, ptq_dist_op op);
/* buf[bytes] of rank root on every rank. */
PTQ_API ptq_status ptq_dist_bcast(ptq_ctx *ctx, void *buf, size_t bytes, int root);

/* Every rank passes its own status of the stage just done; every rank gets
 * the lowest failing rank's status, its message prefixed "rank R of N: ",
 * in ctx (and PTQ_OK when none failed). One process: st unchanged. For
 * tests, PTQ_DIST_FAIL_RANK=R[:K] makes rank R fail the K-th (0-based,
 * default 0) agreement of the process. */
PTQ_API ptq_status ptq_dist_agree(ptq_ctx *ctx, ptq_status st);

/* What the collectives of this process cost so far: calls, bytes reduced
 * or broadcast (this rank's buffers), seconds waiting for the other ranks
 * to arrive (measured by a barrier first, only with PTQ_DIST_STATS set) and
 * seconds in the collectives themselves. */
typedef struct ptq_dist_stats {
    int64_t calls;
    int64_t bytes;
    double wait_s;
    double reduce_s;
} ptq_dist_stats;

PTQ_API void ptq_dist_get_stats(ptq_dist_stats *out);

#ifdef __cplusplus
}
#endif
#endif
