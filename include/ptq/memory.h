/* The host memory limit ptq's readers check declared sizes against before
 * they allocate (--max-memory): by default what the system reports as
 * available (MemAvailable in /proc/meminfo, else free physical pages; read
 * again once the last reading is 50 ms old).
 * Implemented in core/memory.c; covered by tests/test_memory.c and
 * tests/badinput_test.py. */
#ifndef PTQ_MEMORY_H
#define PTQ_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "ptq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The limit in bytes: the one set, or the system's available memory. */
PTQ_API uint64_t ptq_memory_budget(void);
/* Sets the limit for the process; 0 goes back to the default. */
PTQ_API void ptq_memory_set_budget(uint64_t bytes);
/* PTQ_OK when bytes fit the limit, else PTQ_ERR_NOMEM: "<what> needs N MiB,
 * more than the memory limit of M MiB (--max-memory)" (sizes as ptq_memory_str). */
PTQ_API ptq_status ptq_memory_check(ptq_ctx *ctx, uint64_t bytes, const char *what);
/* Parses "512M", "2G", "1.5GiB", "1000000" (bytes; K/M/G/T binary) into *bytes; 0 on success. */
PTQ_API int ptq_memory_parse(const char *text, uint64_t *bytes);
/* bytes for a message, to about three digits, into buf [n]: "512.0 KiB" below 1 MiB, "1.50 MiB" below 10 MiB,
 * "300 MiB" above (so a limit of 1K does not read "0 MiB"); returns buf. */
PTQ_API const char *ptq_memory_str(double bytes, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
