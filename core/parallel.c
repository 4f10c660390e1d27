/* CPU thread pool: a fixed set of pthreads woken per loop; items are
 * claimed with an atomic counter and the caller returns once all are done.
 * See core/parallel.h. Covered by tests/test_parallel.c. */
#define _GNU_SOURCE /* sched_getaffinity */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/parallel.h"

#define PAR_MAX_THREADS 256
#define PAR_SPIN 20000 /* polls of the job counter before a worker sleeps */

typedef struct par_pool {
    pthread_mutex_t mu;
    pthread_cond_t wake;  /* a new job was published */
    pthread_cond_t idle;  /* the last worker left a job */
    int n_threads;        /* threads a loop uses, the caller included */
    int n_started;        /* worker threads created (ids 1..n_started) */
    int active;           /* workers inside the current job */
    atomic_uint_fast64_t gen; /* job number */
    atomic_flag busy;     /* a loop is running */
    ptq_par_body body;
    void *arg;
    int64_t n, grain;
    atomic_int_fast64_t next; /* first unclaimed item */
    atomic_int_fast64_t done; /* items finished */
    void (*thread_start)(void); /* run once per worker thread */
    atomic_uint thread_start_gen;
} par_pool;

static par_pool pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0,
                        ATOMIC_FLAG_INIT, NULL, NULL, 0, 0, 0, 0, NULL, 0};

/* The pool thread this thread is (0: the caller of a loop, and any thread outside the pool): a loop run inline
 * within a piece of another (nested) gives its pieces this worker, whose scratch the outer piece's thread owns. */
static _Thread_local int this_worker;
/* 1 while the thread runs a piece of a loop: loops it starts then run inline as one worker (ptq_par_workers() is 1
 * there), so their scratch, sized by ptq_par_workers(), is the thread's own and small, and kernels do not split
 * their work for threads that are busy with pieces of their own. */
static _Thread_local int in_piece;

int ptq_par_worker_now(void)
{
    return this_worker;
}

static void run_pieces(ptq_par_body body, void *arg, int64_t n, int64_t grain, int worker)
{
    this_worker = worker;
    for (;;) {
        int64_t begin = atomic_fetch_add(&pool.next, grain);
        if (begin >= n)
            return;
        int64_t end = n - begin < grain ? n : begin + grain;
        in_piece = 1;
        body(arg, begin, end, worker);
        in_piece = 0;
        atomic_fetch_add(&pool.done, end - begin);
    }
}

static void *worker_main(void *p)
{
    const int id = (int)(intptr_t)p;
    uint_fast64_t seen = 0;
    unsigned started_gen = 0; /* thread_start generation this thread has run */
    for (;;) {
        for (int spin = 0; spin < PAR_SPIN && atomic_load(&pool.gen) == seen; spin++)
            if (spin % 64 == 63)
                sched_yield();
        pthread_mutex_lock(&pool.mu);
        while (atomic_load(&pool.gen) == seen)
            pthread_cond_wait(&pool.wake, &pool.mu);
        seen = atomic_load(&pool.gen);
        if (id >= pool.n_threads) { /* the pool shrank: sit this one out */
            pthread_mutex_unlock(&pool.mu);
            continue;
        }
        pool.active++;
        void (*start)(void) = pool.thread_start;
        unsigned start_gen = atomic_load(&pool.thread_start_gen);
        ptq_par_body body = pool.body;
        void *arg = pool.arg;
        int64_t n = pool.n, grain = pool.grain;
        pthread_mutex_unlock(&pool.mu);
        if (start && started_gen != start_gen) {
            start();
            started_gen = start_gen;
        }
        run_pieces(body, arg, n, grain, id);
        pthread_mutex_lock(&pool.mu);
        if (--pool.active == 0)
            pthread_cond_signal(&pool.idle);
        pthread_mutex_unlock(&pool.mu);
    }
    return NULL;
}

void ptq_par_on_thread_start(void (*fn)(void))
{
    pthread_mutex_lock(&pool.mu);
    pool.thread_start = fn;
    atomic_fetch_add(&pool.thread_start_gen, 1);
    pthread_mutex_unlock(&pool.mu);
}

int ptq_par_workers(void)
{
    if (in_piece)
        return 1;
    pthread_mutex_lock(&pool.mu);
    if (pool.n_threads == 0) { /* the CPUs this process may run on (taskset, cpusets), else those online */
        cpu_set_t set;
        long n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
        pool.n_threads = n < 1 ? 1 : (n > PAR_MAX_THREADS ? PAR_MAX_THREADS : (int)n);
    }
    int n = pool.n_threads;
    pthread_mutex_unlock(&pool.mu);
    return n;
}

void ptq_par_set_workers(int n)
{
    pthread_mutex_lock(&pool.mu);
    pool.n_threads = n < 1 ? 1 : (n > PAR_MAX_THREADS ? PAR_MAX_THREADS : n);
    pthread_mutex_unlock(&pool.mu);
}

int64_t ptq_par_grain(int64_t n, int per_worker, int64_t min_grain)
{
    int64_t pieces = (int64_t)ptq_par_workers() * (per_worker < 1 ? 1 : per_worker);
    int64_t g = (n + pieces - 1) / pieces;
    return g < min_grain ? min_grain : (g < 1 ? 1 : g);
}

void ptq_parallel_for(int64_t n, int64_t grain, ptq_par_body body, void *arg)
{
    if (n <= 0)
        return;
    if (grain < 1)
        grain = 1;
    const int n_threads = ptq_par_workers();
    if (n_threads <= 1 || n <= grain || atomic_flag_test_and_set(&pool.busy)) {
        body(arg, 0, n, 0); /* in a piece of another loop: one worker there (ptq_par_workers), its scratch its own */
        return;
    }
    pthread_mutex_lock(&pool.mu);
    while (pool.n_started < n_threads - 1) { /* threads start on first use and stay */
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int bad = pthread_create(&t, &attr, worker_main, (void *)(intptr_t)(pool.n_started + 1));
        pthread_attr_destroy(&attr);
        if (bad)
            break; /* fewer threads: the loop still completes */
        pool.n_started++;
    }
    while (pool.active > 0) /* stragglers of the last loop leave before its fields change */
        pthread_cond_wait(&pool.idle, &pool.mu);
    pool.body = body;
    pool.arg = arg;
    pool.n = n;
    pool.grain = grain;
    atomic_store(&pool.next, 0);
    atomic_store(&pool.done, 0);
    atomic_fetch_add(&pool.gen, 1);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.mu);
    run_pieces(body, arg, n, grain, 0);
    for (int spin = 0; atomic_load(&pool.done) < n; spin++)
        if (spin % 64 == 63)
            sched_yield();
    atomic_flag_clear(&pool.busy);
}
