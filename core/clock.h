/* The monotonic wall clock the library times its work with (runner, executor
 * profile, sensitivity phases). */
#ifndef PTQ_CORE_CLOCK_H
#define PTQ_CORE_CLOCK_H

#include <time.h>

static inline double ptq_clock_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
