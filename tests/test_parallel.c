/* The CPU pool: every item runs exactly once whatever the grain and worker
 * count, worker ids stay in range, nested and repeated loops work (a loop in a
 * piece of another sees one worker, ptq_par_workers() 1, and runs inline as
 * worker 0; ptq_par_worker_now() names the piece's thread), and a pool of one
 * runs inline. */
#include <stdatomic.h>
#include <stdlib.h>

#include "core/parallel.h"
#include "testlib.h"

typedef struct loop_arg {
    atomic_int *hits; /* [n] */
    atomic_int bad_worker;
    atomic_int nested_ok;
    atomic_int calls;
    int nest;
    int n_workers; /* ptq_par_workers() where the loop was started */
} loop_arg;

static void body(void *p, int64_t begin, int64_t end, int worker)
{
    loop_arg *a = p;
    atomic_fetch_add(&a->calls, 1);
    if (worker < 0 || worker >= a->n_workers || (a->n_workers > 1 && worker != ptq_par_worker_now()))
        atomic_fetch_add(&a->bad_worker, 1);
    for (int64_t i = begin; i < end; i++)
        atomic_fetch_add(&a->hits[i], 1);
    if (a->nest) { /* a loop inside a loop runs inline on this thread */
        atomic_int inner[8] = {0};
        loop_arg b = {inner, 0, 0, 0, 0, ptq_par_workers()};
        ptq_parallel_for(8, 1, body, &b);
        int ok = b.n_workers == 1 && atomic_load(&b.bad_worker) == 0 && ptq_par_worker_now() == worker;
        for (int i = 0; i < 8; i++)
            ok &= atomic_load(&inner[i]) == 1;
        if (ok)
            atomic_fetch_add(&a->nested_ok, 1);
    }
}

static int run(int64_t n, int64_t grain, int nest)
{
    atomic_int *hits = calloc((size_t)n + 1, sizeof *hits);
    loop_arg a = {hits, 0, 0, 0, nest, ptq_par_workers()};
    ptq_parallel_for(n, grain, body, &a);
    int ok = atomic_load(&a.bad_worker) == 0;
    for (int64_t i = 0; i < n; i++)
        ok &= atomic_load(&hits[i]) == 1;
    if (nest)
        ok &= atomic_load(&a.nested_ok) == atomic_load(&a.calls) && atomic_load(&a.calls) >= 1;
    free(hits);
    return ok;
}

int main(void)
{
    const int64_t sizes[] = {0, 1, 2, 7, 64, 1000, 100003};
    const int64_t grains[] = {1, 3, 64, 5000};
    for (int w = 1; w <= 5; w += 2) {
        ptq_par_set_workers(w);
        CHECK(ptq_par_workers() == w);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (size_t g = 0; g < sizeof grains / sizeof grains[0]; g++)
                CHECK_MSG(run(sizes[s], grains[g], 0), "workers %d n %lld grain %lld", w, (long long)sizes[s],
                          (long long)grains[g]);
        CHECK_MSG(run(40, 4, 1), "nested loops with %d workers", w);
        int all = 1;
        for (int r = 0; r < 2000; r++) /* many short loops back to back */
            all &= run(37, 2, 0);
        CHECK_MSG(all, "2000 back-to-back loops with %d workers", w);
    }
    ptq_par_set_workers(4);
    CHECK(ptq_par_grain(1000, 4, 1) == 63 && ptq_par_grain(10, 4, 8) == 8);
    return test_done("test_parallel");
}
