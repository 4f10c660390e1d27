/* What the commands write besides their reports: JSON built with cJSON
 * (every string escaped), and the logits .npy writer as a runner consumer.
 * Covered by tests/cli_test.py and tests/cli_calib_test.py. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"

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
    if (o)
        cJSON_AddStringToObject(o, key, value ? value : "");
}

void cli_json_num(cli_json *o, const char *key, double value)
{
    if (o)
        cJSON_AddNumberToObject(o, key, value);
}

char *cli_json_done(cli_json *o)
{
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return text;
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
