/* The memory limit (include/ptq/memory.h): set by --max-memory, else the
 * available memory the kernel reports. Covered by tests/test_memory.c. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/c_locale.h"
#include "ptq/memory.h"

static _Atomic uint64_t budget_bytes; /* 0: the system's available memory */

/* The last reading of the available memory and when it was taken (CLOCK_MONOTONIC ns, 0: none yet). Host nodes
 * check each output against the limit, so a run of a small model asks thousands of times a second; /proc/meminfo
 * is read again once a reading is AVAIL_FRESH_NS old. */
enum { AVAIL_FRESH_NS = 50 * 1000 * 1000 };
static _Atomic uint64_t avail_cached, avail_at_ns;

static uint64_t available_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kib = 0;
    int found = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
            found = 1;
            break;
        }
    if (f)
        fclose(f);
    if (found && kib > 0)
        return (uint64_t)kib * 1024;
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
        return (uint64_t)pages * (uint64_t)page;
    return (uint64_t)1 << 32; /* nothing to ask: 4 GiB */
}

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t ptq_memory_budget(void)
{
    const uint64_t b = atomic_load(&budget_bytes);
    if (b)
        return b;
    const uint64_t now = monotonic_ns(), at = atomic_load(&avail_at_ns);
    if (at && now - at < AVAIL_FRESH_NS)
        return atomic_load(&avail_cached);
    const uint64_t avail = available_bytes();
    atomic_store(&avail_cached, avail); /* a racing reader may pair the old time with this value: both fresh */
    atomic_store(&avail_at_ns, now ? now : 1);
    return avail;
}

void ptq_memory_set_budget(uint64_t bytes)
{
    atomic_store(&budget_bytes, bytes);
}

const char *ptq_memory_str(double bytes, char *buf, size_t n)
{
    if (bytes < 1048576.0)
        snprintf(buf, n, "%.1f KiB", bytes / 1024.0);
    else
        snprintf(buf, n, "%.*f MiB", bytes < 10485760.0 ? 2 : 0, bytes / 1048576.0);
    return buf;
}

ptq_status ptq_memory_check(ptq_ctx *ctx, uint64_t bytes, const char *what)
{
    uint64_t limit = ptq_memory_budget();
    if (bytes <= limit)
        return PTQ_OK;
    char need[32], have[32];
    return ptq_fail(ctx, PTQ_ERR_NOMEM, "%s needs %s, more than the memory limit of %s (--max-memory)", what,
                    ptq_memory_str((double)bytes, need, sizeof need), ptq_memory_str((double)limit, have, sizeof have));
}

int ptq_memory_parse(const char *text, uint64_t *bytes)
{
    char *end = NULL;
    if (!text || !isdigit((unsigned char)text[0]) || strpbrk(text, "xX")) /* no hex float: 0x10 is not 16 bytes */
        return -1;
    double v = ptq_strtod_c(text, &end);
    double unit = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': unit = 1024.0; end++; break;
    case 'M': unit = 1048576.0; end++; break;
    case 'G': unit = 1073741824.0; end++; break;
    case 'T': unit = 1099511627776.0; end++; break;
    default: break;
    }
    if (unit > 1 && (!strcmp(end, "iB") || !strcmp(end, "B")))
        end += strlen(end);
    if (*end || !isfinite(v) || v * unit < 1 || v * unit >= 18446744073709551615.0)
        return -1;
    *bytes = (uint64_t)(v * unit);
    return 0;
}
