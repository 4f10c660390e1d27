/* What the commands write besides their reports: JSON built with cJSON
 * (every string escaped) with the reports' provenance header, the class names
 * as reports take them, paths as the summaries print them (cli_shown), and
 * the logits .npy writer as a runner consumer.
 * Covered by tests/cli_test.py and tests/cli_calib_test.py. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "ptq/batch.h"
#include "ptq/hash.h"
#include "ptq/memory.h"

cli_json *cli_json_header(const char *command, const char *device)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "command", command);
    cJSON_AddStringToObject(o, "ptq_version", ptq_version());
    if (device)
        cJSON_AddStringToObject(o, "device", device);
    return o;
}

void cli_json_str(cli_json *o, const char *key, const char *value)
{
    char *fixed = o ? ptq_utf8_dup(value) : NULL; /* paths may hold any bytes; JSON is UTF-8 */
    if (fixed)
        cJSON_AddStringToObject(o, key, fixed);
    free(fixed);
}

void cli_json_num(cli_json *o, const char *key, double value)
{
    if (o)
        cJSON_AddNumberToObject(o, key, value);
}

const char *cli_shown(const char *s)
{
    enum { N_BUFS = 8, BUF_BYTES = 4 * 4096 + 1 }; /* a path of PATH_MAX bytes, each escaped to \xNN */
    static char bufs[N_BUFS][BUF_BYTES];
    static int next;
    char *buf = bufs[next];
    next = (next + 1) % N_BUFS;
    return ptq_escape(s ? s : "", buf, BUF_BYTES);
}

const char *cli_padded(const char *s, int width, char *buf, size_t n_buf)
{
    ptq_escape(s ? s : "", buf, n_buf);
    size_t used = strlen(buf);
    for (int w = ptq_utf8_width(buf); w < width && used + 1 < n_buf; w++)
        buf[used++] = ' ';
    if (n_buf)
        buf[used] = '\0';
    return buf;
}

char *cli_json_done(cli_json *o)
{
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return text;
}

int64_t cli_default_batch(const char *cmd, const ptq_session *ps, int64_t batch, int64_t n_ids, int given,
                          int n_kept)
{
    const int64_t runs = n_ids > 0 && n_ids < batch ? n_ids : batch; /* what the runner allocates */
    const double need = ptq_batch_bytes_keeping(ps, runs, 2, n_kept);
    if (given || need <= (double)ptq_memory_budget())
        return batch;
    const int64_t fit = ptq_batch_default_keeping(ps, runs, 2, n_kept);
    char need_s[32], limit_s[32];
    if (fit < batch && cli_is_writer())
        fprintf(stderr,
                "ptq %s: note: batch %lld (the largest power of two that fits): a batch of %lld would need about %s "
                "(input buffers and activations%s), more than the memory limit of %s (--max-memory)\n",
                cmd, (long long)fit, (long long)runs, ptq_memory_str(need, need_s, sizeof need_s),
                n_kept ? ", and the FP32 and default-plan values kept between runs" : "",
                ptq_memory_str((double)ptq_memory_budget(), limit_s, sizeof limit_s));
    return fit;
}

ptq_status cli_json_provenance(ptq_ctx *ctx, cli_json *o, const char *model, const char *data,
                               const ptq_dataset *ds, const char *spec)
{
    char model_sha[65], data_sha[65];
    PTQ_TRY_RET(cli_model_sha256(ctx, model, model_sha));
    PTQ_TRY_RET(cli_dataset_sha256(ctx, ds, data_sha));
    cli_json_str(o, "model", model);
    cli_json_str(o, "model_sha256", model_sha);
    cli_json_str(o, "data", data);
    cli_json_str(o, "data_kind", ptq_dataset_kind(ds));
    cli_json_str(o, "data_sha256", data_sha);
    cli_json_str(o, "preprocess", spec);
    return PTQ_OK;
}

const char **cli_class_names(const ptq_dataset *ds, int64_t k)
{
    size_t n_bytes = ((size_t)k + 1) * sizeof(char *); /* the pointers, then the names they point into */
    for (int64_t c = 0; c < k; c++) {
        const char *name = ptq_dataset_class_name(ds, (int)c);
        n_bytes += name ? 3 * strlen(name) + 1 : 0; /* ptq_utf8_dup's most */
    }
    const char **names = calloc(1, n_bytes);
    char *at = names ? (char *)(names + k + 1) : NULL;
    for (int64_t c = 0; names && c < k; c++) {
        const char *name = ptq_dataset_class_name(ds, (int)c);
        char *fixed = name ? ptq_utf8_dup(name) : NULL;
        if (name && !fixed) {
            free(names);
            return NULL;
        }
        if (fixed) {
            names[c] = strcpy(at, fixed);
            at += strlen(fixed) + 1;
            free(fixed);
        }
    }
    return names;
}

static ptq_status npy_after(void *user, ptq_ctx *ctx, ptq_runner *r, ptq_batch *b)
{
    cli_npy_writer *w = user;
    (void)r;
    const size_t n = (size_t)(b->n * b->n_classes);
    if (b->index == 0 && cli_npy_header(w->f, w->rows, b->n_classes))
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", w->path, strerror(errno));
    if (fwrite(b->logits, sizeof(float), n, w->f) != n)
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", w->path, strerror(errno));
    return PTQ_OK;
}

ptq_consumer cli_npy_consumer(cli_npy_writer *w)
{
    ptq_consumer c = {w, NULL, npy_after, NULL};
    return c;
}

void cli_sibling_path(const char *path, const char *suffix, char *out, size_t n_out)
{
    size_t len = strlen(path);
    if (len > 5 && strcmp(path + len - 5, ".json") == 0)
        len -= 5;
    snprintf(out, n_out, "%.*s%s", (int)len, path, suffix);
}
