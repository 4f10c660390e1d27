/* The CPU path's thread count, which OpenBLAS kernel set it runs, and a better one when
 * OpenBLAS's DYNAMIC_ARCH did not recognise the processor (OpenBLAS 0.3.21,
 * Debian 12's, takes Emerald Rapids for a generic "Prescott" core and runs
 * SSE3 kernels, 2.5x slower). Used by cli/main.c; covered by tests/test_exec.c. */
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

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

#if defined(__x86_64__) && defined(__GNUC__)
/* The register state the OS saves (XCR0) holds every bit of mask. */
static int os_saves(unsigned mask)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    return (lo & mask) == mask;
}
#endif

/* From CPUID rather than __builtin_cpu_supports, whose "avxvnni" clang 14
 * (the fuzzing build's compiler) does not know: AVX512_VNNI is leaf 7 ECX
 * bit 11 (with the ZMM state saved), AVX-VNNI leaf 7 subleaf 1 EAX bit 4
 * (with the YMM state saved). */
int ptq_cpu_has_vnni(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)) || !os_saves(0x6)) /* OSXSAVE; XMM and YMM */
        return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    const int avx512_vnni = (c >> 11 & 1) && os_saves(0xe6); /* and the opmask and ZMM state */
    const int avx_vnni = __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1);
    return avx512_vnni || avx_vnni;
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
