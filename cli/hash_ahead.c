/* The SHA-256s the reports record (model, data set), computed on a
 * worker thread from the moment a session opens, while the command reads,
 * runs and writes, and remembered for the process: a digest is asked for
 * when the report is written, and validate asks for the model's twice (the
 * plan check, the provenance). A model with ONNX external data is hashed
 * with its data files (model_digest). Covered by tests/cli_validate_test.py
 * (the recorded digests against hashlib's) and tests/qdq_external_data_test.py
 * (new weights under the same file names are another model). */
#define _GNU_SOURCE /* memmem */
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ptq/fileio.h"
#include "ptq/hash.h"
#include "ptq/onnx_edit.h"

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

enum { CHUNK = 1 << 16 };

/* Feeds path's bytes into h (NULL: reads them only; buf: CHUNK + 8 bytes of scratch); *n: how many. With found not
 * NULL, *found is set when the bytes hold "location", the key every ONNX external-data entry has (without it a model
 * refers to no external data), across chunk boundaries too. */
static ptq_status feed(ptq_ctx *ctx, const char *path, ptq_sha256 *h, unsigned char *buf, uint64_t *n, int *found)
{
    static const char key[] = "location";
    enum { KEEP = sizeof key - 2 }; /* a chunk's last bytes, kept before the next one's for the search */
    FILE *f = NULL;
    PTQ_TRY_RET(ptq_file_fopen_read(ctx, path, &f));
    size_t got, keep = 0;
    *n = 0;
    while ((got = fread(buf + keep, 1, CHUNK, f)) > 0) {
        if (h)
            ptq_sha256_update(h, buf + keep, got);
        *n += got;
        const size_t len = keep + got;
        if (found && !*found)
            *found = memmem(buf, len, key, sizeof key - 1) != NULL;
        keep = len < KEEP ? len : KEEP;
        memmove(buf, buf + len - keep, keep);
    }
    const int failed = ferror(f);
    fclose(f);
    return failed ? ptq_fail(ctx, PTQ_ERR_IO, "cannot read %s", path) : PTQ_OK;
}

/* What reports, archives and plans call the model's SHA-256: the file's own, or for an ONNX model with external
 * data, the SHA-256 of "ptq-model-external-data", a NUL, the file's hex digest, then each external data file in the
 * order the model first names it as its size (8 bytes, little-endian) and bytes, so that new weights under the
 * same file names make another model. */
static ptq_status model_digest(ptq_ctx *ctx, const char *path, char hex[65])
{
    unsigned char *buf = malloc(CHUNK + 8);
    if (!buf)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory hashing %s", path);
    ptq_sha256 h;
    ptq_sha256_init(&h);
    uint64_t n;
    int external = 0, n_files = 0;
    ptq_onnx_edit *e = NULL;
    ptq_status st = feed(ctx, path, &h, buf, &n, &external);
    if (st == PTQ_OK)
        ptq_sha256_final_hex(&h, hex);
    if (st == PTQ_OK && external) /* external data it cannot read is an error there too */
        st = ptq_onnx_edit_open(ctx, path, &e);
    const char *const *files = e ? ptq_onnx_edit_external_files(e, &n_files) : NULL;
    if (st == PTQ_OK && n_files > 0) {
        static const char tag[] = "ptq-model-external-data";
        ptq_sha256_init(&h);
        ptq_sha256_update(&h, tag, sizeof tag); /* with its NUL */
        ptq_sha256_update(&h, hex, 64);
        for (int i = 0; i < n_files && st == PTQ_OK; i++) {
            struct stat sb;
            const uint64_t size = stat(files[i], &sb) == 0 ? (uint64_t)sb.st_size : 0;
            unsigned char le[8];
            for (int b = 0; b < 8; b++)
                le[b] = (unsigned char)(size >> (8 * b));
            ptq_sha256_update(&h, le, 8);
            if ((st = feed(ctx, files[i], &h, buf, &n, NULL)) == PTQ_OK && n != size)
                st = ptq_fail(ctx, PTQ_ERR_IO, "%s, external data of %s, changed while read", files[i], path);
        }
        if (st == PTQ_OK)
            ptq_sha256_final_hex(&h, hex);
    }
    ptq_onnx_edit_free(e);
    free(buf);
    return st;
}

ptq_status cli_model_external_files(ptq_ctx *ctx, const char *path, ptq_onnx_edit **e)
{
    unsigned char *buf = malloc(CHUNK + 8);
    uint64_t n;
    int external = 0;
    *e = NULL;
    if (!buf)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory reading %s", path);
    ptq_status st = feed(ctx, path, NULL, buf, &n, &external);
    free(buf);
    return st == PTQ_OK && external ? ptq_onnx_edit_open(ctx, path, e) : st;
}

static void *work(void *arg)
{
    slot *s = arg;
    ptq_ctx_init(&s->ctx);
    s->st = s->path ? model_digest(&s->ctx, s->path, s->hex) : ptq_dataset_content_sha256(&s->ctx, s->ds, s->hex);
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

ptq_status cli_model_sha256(ptq_ctx *ctx, const char *path, char hex[65])
{
    slot *s = find(path, NULL);
    return s ? join(ctx, s, hex) : model_digest(ctx, path, hex);
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
