/* The SHA-256s the reports record (model file, data set), computed on a
 * worker thread from the moment a session opens, while the command reads,
 * runs and writes, and remembered for the process: a digest is asked for
 * when the report is written, and validate asks for the model's twice (the
 * plan check, the provenance). Covered by tests/cli_test.py and
 * tests/cli_validate_test.py (the recorded digests against hashlib's). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ptq/hash.h"

enum { N_SLOTS = 8 };

typedef struct slot {
    int used, started, joined;
    char *path;              /* a file, or NULL for ds */
    const ptq_dataset *ds;   /* a data set (ptq_dataset_content_sha256) */
    pthread_t thread;
    ptq_ctx ctx;             /* the worker's status and message */
    ptq_status st;
    char hex[65];
} slot;

static slot slots[N_SLOTS];

static void *work(void *arg)
{
    slot *s = arg;
    ptq_ctx_init(&s->ctx);
    s->st = s->path ? ptq_sha256_file(&s->ctx, s->path, s->hex) : ptq_dataset_content_sha256(&s->ctx, s->ds, s->hex);
    return NULL;
}

static slot *find(const char *path, const ptq_dataset *ds)
{
    for (int i = 0; i < N_SLOTS; i++)
        if (slots[i].used && (path ? slots[i].path && strcmp(slots[i].path, path) == 0 : slots[i].ds == ds))
            return &slots[i];
    return NULL;
}

/* Starts hashing path (or ds) on a thread, unless it is known or started; with no free slot or thread it is
 * simply computed when asked. */
static void ahead(const char *path, const ptq_dataset *ds)
{
    if ((path ? !path[0] : !ds) || find(path, ds))
        return;
    for (int i = 0; i < N_SLOTS; i++) {
        slot *s = &slots[i];
        if (s->used)
            continue;
        memset(s, 0, sizeof *s);
        if (path && !(s->path = strdup(path)))
            return;
        s->ds = ds;
        s->used = 1;
        s->started = pthread_create(&s->thread, NULL, work, s) == 0;
        if (!s->started) {
            free(s->path);
            memset(s, 0, sizeof *s);
        }
        return;
    }
}

void cli_hash_ahead(const char *model, const ptq_dataset *ds)
{
    if (model)
        ahead(model, NULL);
    if (ds)
        ahead(NULL, ds);
}

static ptq_status join(ptq_ctx *ctx, slot *s, char hex[65])
{
    if (s->started && !s->joined) {
        pthread_join(s->thread, NULL);
        s->joined = 1;
    }
    if (s->st != PTQ_OK) {
        *ctx = s->ctx;
        return s->st;
    }
    memcpy(hex, s->hex, 65);
    return PTQ_OK;
}

ptq_status cli_sha256_file(ptq_ctx *ctx, const char *path, char hex[65])
{
    slot *s = find(path, NULL);
    return s ? join(ctx, s, hex) : ptq_sha256_file(ctx, path, hex);
}

ptq_status cli_dataset_sha256(ptq_ctx *ctx, const ptq_dataset *ds, char hex[65])
{
    slot *s = find(NULL, ds);
    return s ? join(ctx, s, hex) : ptq_dataset_content_sha256(ctx, ds, hex);
}

void cli_hash_forget(const ptq_dataset *ds)
{
    for (int i = 0; i < N_SLOTS; i++) {
        slot *s = &slots[i];
        if (!s->used || (ds && s->ds != ds))
            continue;
        if (s->started && !s->joined)
            pthread_join(s->thread, NULL);
        free(s->path);
        memset(s, 0, sizeof *s);
    }
}
