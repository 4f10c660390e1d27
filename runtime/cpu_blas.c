/* The CPU path's thread count, which OpenBLAS kernel set it runs, and a better one when
 * OpenBLAS's DYNAMIC_ARCH did not recognise the processor (OpenBLAS 0.3.21,
 * Debian 12's, takes Emerald Rapids for a generic "Prescott" core and runs
 * SSE3 kernels, 2.5x slower). Used by cli/main.c; covered by tests/test_exec.c. */
#include <string.h>

#include <cblas.h>

#include "core/parallel.h"
#include "kernels/kernels.h"
#include "ptq/runtime.h"

const char *ptq_cpu_blas_core(void)
{
    const char *name = openblas_get_corename();
    return name ? name : "unknown";
}

const char *ptq_cpu_blas_core_suggested(void)
{
    const char *core = ptq_cpu_blas_core();
    if (strcmp(core, "Prescott") != 0 && strcmp(core, "Core2") != 0 && strcmp(core, "Nehalem") != 0 &&
        strcmp(core, "unknown") != 0)
        return NULL;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512bf16"))
        return "Cooperlake";
    if (__builtin_cpu_supports("avx512f"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2"))
        return "Haswell";
#endif
    return NULL;
}

int ptq_cpu_has_vnni(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vnni") || __builtin_cpu_supports("avxvnni");
#else
    return -1;
#endif
}

void ptq_cpu_set_threads(int n_threads)
{
    if (n_threads < 1)
        return;
    ptq_par_set_workers(n_threads);
}
