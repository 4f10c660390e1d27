/* OpenBLAS runs single-threaded inside ptq: the CPU pool (core/parallel.h)
 * spreads whole GEMMs over its threads, and an OpenBLAS team started from a
 * pool thread would oversubscribe the cores. OpenBLAS's OpenMP build takes
 * its thread count from each calling thread's OpenMP setting, so every pool
 * thread sets it too. Covered by tests/parity_gemm.c. */
#include <pthread.h>

#include <cblas.h>

#include "core/parallel.h"
#include "kernels/kernels.h"

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void blas_one_thread(void)
{
    openblas_set_num_threads(1);
}

static void blas_setup(void)
{
    blas_one_thread();
    ptq_par_on_thread_start(blas_one_thread);
}

void ptq_k_blas_single_thread(void)
{
    pthread_once(&blas_once, blas_setup);
}
