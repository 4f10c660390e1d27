/* The CPU thread pool behind every parallel kernel loop. Unlike an OpenMP
 * team, a loop completes when its items are done, not when every pool
 * thread has checked in: a thread the OS has not scheduled yet (an
 * oversubscribed VM) never holds the others up. Covered by
 * tests/test_parallel.c and every parity test. */
#ifndef PTQ_CORE_PARALLEL_H
#define PTQ_CORE_PARALLEL_H

#include <stdint.h>

/* One piece of a loop: items [begin, end), on pool thread `worker`
 * (0 = the caller, < ptq_par_workers()); per-worker scratch is indexed by it. */
typedef void (*ptq_par_body)(void *arg, int64_t begin, int64_t end, int worker);

/* Runs body over [0, n) in pieces of `grain` items (the last may be shorter)
 * on the pool, the caller taking part. Runs inline on the caller when the
 * pool has one thread, when n <= grain, or when the pool is busy with another
 * loop (nested or concurrent calls), as worker 0. */
void ptq_parallel_for(int64_t n, int64_t grain, ptq_par_body body, void *arg);

/* The pool worker the calling thread is (0 outside any loop, and on the thread that started one): the index of its
 * scratch in the loop under way. */
int ptq_par_worker_now(void);

/* Threads a loop may use, the caller included (default: the CPUs the process
 * may run on); 1 on a thread running a piece of a loop, where a loop runs
 * inline (scratch sized by it is then that piece's own). */
int ptq_par_workers(void);
void ptq_par_set_workers(int n);

/* fn runs once on every pool thread before its next piece of work (e.g. to
 * make a library's per-thread settings match the caller's); one at a time. */
void ptq_par_on_thread_start(void (*fn)(void));

/* A grain giving each worker about `per_worker` pieces of an n-item loop, at least min_grain. */
int64_t ptq_par_grain(int64_t n, int per_worker, int64_t min_grain);

#endif
