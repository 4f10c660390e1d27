/* What the CPU kernel benchmarks (bench/erf_cpu.c, bench/softmax_cpu.c)
 * share: a float's bits, and this thread's CPU time. Include after defining
 * _POSIX_C_SOURCE. */
#ifndef PTQ_BENCH_CPU_BENCH_H
#define PTQ_BENCH_CPU_BENCH_H

#include <stdint.h>
#include <string.h>
#include <time.h>

static inline uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline double thread_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
