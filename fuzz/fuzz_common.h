/* Shared by the libFuzzer harnesses under fuzz/: readers that take a path
 * get the input written to a temporary file first. Built by
 * scripts/fuzz.sh (clang, -fsanitize=fuzzer,address,undefined). */
#ifndef PTQ_FUZZ_COMMON_H
#define PTQ_FUZZ_COMMON_H

#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptq/memory.h"

/* Writes data to a fresh temporary file whose name ends in suffix; its path
 * into path[n_path]; 0 on success. The caller unlinks it. */
static int fuzz_write_tmp(const uint8_t *data, size_t size, const char *suffix, char *path, size_t n_path)
{
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(path, n_path, "%s/ptq-fuzz-XXXXXX%s", dir, suffix);
    int fd = mkstemps(path, (int)strlen(suffix));
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    close(fd);
    return done == size ? 0 : -1;
}

/* The input as a NUL-terminated string for the text readers (JSON); NULL when
 * out of memory. The caller frees it. */
static char *fuzz_text(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text) {
        memcpy(text, data, size);
        text[size] = '\0';
    }
    return text;
}

/* A memory limit well under libFuzzer's -rss_limit_mb: what a reader plans
 * past it must be refused, not allocated. */
static void fuzz_limit_memory(void)
{
    ptq_memory_set_budget((uint64_t)512 << 20);
}

/* What every harness does first: the memory limit, a fresh ctx and, when
 * suffix is not NULL, the input in a temporary file (path[n_path]); 0 on success. */
static int fuzz_begin(const uint8_t *data, size_t size, const char *suffix, char *path, size_t n_path, ptq_ctx *ctx)
{
    fuzz_limit_memory();
    ptq_ctx_init(ctx);
    return suffix ? fuzz_write_tmp(data, size, suffix, path, n_path) : 0;
}

#endif
