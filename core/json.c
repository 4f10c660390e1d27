/* Strict JSON reading on top of cJSON: nothing after the value, no key twice
 * in one object; and paths written as valid UTF-8 (core/json.h). Covered by
 * tests/test_plan.c, tests/badinput_test.py, tests/keras_badinput_test.py
 * and tests/cli_paths_test.py. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "ptq/memory.h"

cJSON *ptq_json_add_text(cJSON *obj, const char *key, const char *s)
{
    char *fixed = ptq_utf8_dup(s);
    cJSON *item = fixed ? cJSON_AddStringToObject(obj, key, fixed) : NULL;
    free(fixed);
    return item;
}

typedef struct dup_key {
    const cJSON *item; /* the second of two members with one key, or NULL */
    const char *name;  /* the nearest string "name" on the way to it, or NULL */
    char path[256];    /* where the object holding it is: "config.layers[1].config" */
} dup_key;

static int cmp_keys(const void *a, const void *b)
{
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

/* Fills d for the first object in j (at path, used bytes of d->path) with a key twice; -1 when out of memory.
 * O(n log n) in the keys; cJSON bounds the depth. */
static int find_dup(const cJSON *j, size_t used, const char *name, dup_key *d)
{
    const cJSON *c = NULL;
    if (cJSON_IsObject(j)) {
        const cJSON *own = cJSON_GetObjectItemCaseSensitive(j, "name");
        name = cJSON_IsString(own) ? own->valuestring : name;
        int n = cJSON_GetArraySize(j), k = 0;
        const cJSON **keys = malloc(((size_t)n + 1) * sizeof *keys);
        if (!keys)
            return -1;
        cJSON_ArrayForEach(c, j) keys[k++] = c;
        qsort(keys, (size_t)n, sizeof *keys, cmp_keys);
        for (k = 1; k < n && !d->item; k++)
            if (strcmp(keys[k]->string, keys[k - 1]->string) == 0) {
                d->item = keys[k];
                d->name = name;
                d->path[used] = '\0';
            }
        free(keys);
        if (d->item)
            return 0;
    }
    int i = 0;
    cJSON_ArrayForEach(c, j)
    {
        int w = c->string ? snprintf(d->path + used, sizeof d->path - used, "%s%s", used ? "." : "", c->string)
                          : snprintf(d->path + used, sizeof d->path - used, "[%d]", i);
        size_t at = w < 0 || used + (size_t)w >= sizeof d->path ? sizeof d->path - 1 : used + (size_t)w; /* cut */
        if (find_dup(c, at, name, d) < 0)
            return -1;
        if (d->item)
            return 0;
        i++;
    }
    return 0;
}

/* The offset of the first \\u0000 escape inside a string of JSON text (valid JSON), or -1: cJSON would end
 * that string there, so a name "a\\u0000b" would read as "a". */
static long long nul_escape_at(const char *text)
{
    int in_string = 0;
    for (const char *c = text; *c; c++) {
        if (*c == '"') {
            in_string = !in_string;
        } else if (in_string && *c == '\\') {
            if (c[1] == 'u' && strncmp(c + 2, "0000", 4) == 0)
                return (long long)(c - text);
            if (c[1])
                c++; /* the escaped character, which may be a quote */
        }
    }
    return -1;
}

ptq_status ptq_json_parse(ptq_ctx *ctx, const char *text, const char *what, cJSON **out)
{
    *out = NULL;
    /* cJSON takes up to ~32 bytes of nodes per byte of text ("[0,0,0..." is a 64-byte node per 2) */
    PTQ_TRY_RET(ptq_memory_check(ctx, (uint64_t)strlen(text) * 32, "parsing JSON"));
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 0);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "%s: not valid JSON (at byte %lld)", what,
                        at && at >= text ? (long long)(at - text) : -1LL);
    }
    while (*end && (unsigned char)*end <= ' ') /* white space as cJSON sees it */
        end++;
    if (*end) {
        cJSON_Delete(root);
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "%s: not valid JSON: unexpected data after the value at byte %lld", what,
                        (long long)(end - text));
    }
    const long long nul = nul_escape_at(text);
    if (nul >= 0) {
        cJSON_Delete(root);
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "%s: a string holds the character U+0000 (\\u0000 at byte %lld), at "
                                             "which ptq would cut it short", what, nul);
    }
    dup_key d;
    memset(&d, 0, sizeof d);
    if (find_dup(root, 0, NULL, &d) < 0) {
        cJSON_Delete(root);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory reading %s", what);
    }
    if (d.item) {
        char key[80], name[80];
        ptq_escape(d.item->string, key, sizeof key);
        ptq_escape(d.name ? d.name : "", name, sizeof name);
        ptq_status st = ptq_fail(ctx, PTQ_ERR_FORMAT, "%s: key \"%s\" appears twice in one object (at %s%s%s%s)",
                                 what, key, d.path[0] ? d.path : "the top", d.name ? ", in '" : "", name,
                                 d.name ? "'" : "");
        cJSON_Delete(root);
        return st;
    }
    *out = root;
    return PTQ_OK;
}
