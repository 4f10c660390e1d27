/* The two text lists an image folder may come with: a class map
 * (--classes: class folder name -> model output index) and a labels list
 * (--labels: "PATH LABEL" lines, as ImageNet validation lists are given).
 * Every refusal names the file and the line. Covered by
 * tests/test_datasets.c and tests/jpeg_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "datasets/datasets_internal.h"
#include "ptq/memory.h"

#define MAX_LIST_BYTES ((uint64_t)1 << 30)

int ds_image_kind(const char *name)
{
    size_t n = strlen(name);
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name || dot[1] == '\0' || n - (size_t)(dot - name) > 5)
        return DS_IMG_NONE;
    char ext[5] = "";
    for (int i = 0; dot[1 + i]; i++)
        ext[i] = (char)tolower((unsigned char)dot[1 + i]);
    if (!strcmp(ext, "png"))
        return DS_IMG_PNG;
    if (!strcmp(ext, "jpg") || !strcmp(ext, "jpeg"))
        return DS_IMG_JPEG;
    return DS_IMG_NONE;
}

/* The whole file as a NUL-terminated string (a NUL inside is refused). */
static ptq_status read_text(ptq_ctx *ctx, const char *path, const char *what, char **out, size_t *n_out)
{
    FILE *f = NULL;
    struct stat sb;
    *out = NULL;
    PTQ_TRY_RET(ptq_file_fopen_read(ctx, path, &f));
    ptq_status st = PTQ_OK;
    char *buf = NULL;
    if (fstat(fileno(f), &sb) != 0 || (uint64_t)sb.st_size > MAX_LIST_BYTES) {
        st = ptq_fail(ctx, PTQ_ERR_DATA, "%s file %s is over 1 GiB or unreadable", what, path);
        goto done;
    }
    size_t n = (size_t)sb.st_size;
    PTQ_TRY(st, ptq_memory_check(ctx, n + 1, path), done);
    if (!(buf = malloc(n + 1))) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "reading %s: out of memory", path);
        goto done;
    }
    size_t got = fread(buf, 1, n, f);
    if (got != n || ferror(f)) {
        st = ptq_fail(ctx, PTQ_ERR_IO, "cannot read %s (or it changed while read)", path);
        goto done;
    }
    buf[n] = '\0';
    if (n >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3)) { /* a UTF-8 byte-order mark (Windows editors) is no text */
        memmove(buf, buf + 3, n - 2);
        n -= 3;
    }
    if (memchr(buf, '\0', n)) {
        st = ptq_fail(ctx, PTQ_ERR_DATA, "%s file %s holds a NUL byte; expected text", what, path);
        goto done;
    }
    *out = buf;
    *n_out = n;
    buf = NULL;
done:
    free(buf);
    fclose(f);
    return st;
}

/* The next line of the text at *cursor, split off in place and trimmed of
 * surrounding white space (a '\r' before '\n' included) into *line;
 * 0 at the end of the text. */
static int64_t next_line(char **cursor, char **line)
{
    char *s = *cursor;
    if (!s || !*s)
        return 0;
    char *nl = strchr(s, '\n');
    if (nl) {
        *nl = '\0';
        *cursor = nl + 1;
    } else {
        *cursor = s + strlen(s);
    }
    size_t len = strlen(s);
    while (len > 0 && isspace((unsigned char)s[len - 1]))
        s[--len] = '\0';
    while (*s && isspace((unsigned char)*s))
        s++;
    *line = s;
    return 1;
}

/* The last blank-separated field of line: line itself when it has one field. */
static char *last_field(char *line)
{
    char *f = line + strlen(line);
    while (f > line && !isspace((unsigned char)f[-1]))
        f--;
    return f;
}

/* Ends line before field (a pointer into it), the blanks between them dropped: line keeps the fields before. */
static void cut_before(char *line, char *field)
{
    while (field > line && isspace((unsigned char)field[-1]))
        field--;
    *field = '\0';
}

/* A decimal integer in [0, DS_MAX_CLASS_INDEX] filling tok; -1 otherwise. */
static int32_t parse_index(const char *tok)
{
    if (!*tok || strlen(tok) > 9)
        return -1;
    for (const char *c = tok; *c; c++)
        if (!isdigit((unsigned char)*c))
            return -1;
    long v = strtol(tok, NULL, 10);
    return v <= DS_MAX_CLASS_INDEX ? (int32_t)v : -1;
}

void ds_classes_free(ds_classes *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++)
        free(c->names[i]);
    free(c->names);
    free(c->index);
    free(c->path);
    memset(c, 0, sizeof *c);
}

int32_t ds_classes_find(const ds_classes *c, const char *name)
{
    int lo = 0, hi = c->n; /* names are sorted */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2, cmp = strcmp(c->names[mid], name);
        if (cmp == 0)
            return c->index[mid];
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* One class line while the file is read. */
typedef struct class_entry {
    char *name;
    int32_t index;
    int64_t line;
} class_entry;

static int cmp_by_name(const void *a, const void *b)
{
    return strcmp(((const class_entry *)a)->name, ((const class_entry *)b)->name);
}

static int cmp_by_index(const void *a, const void *b)
{
    int32_t x = ((const class_entry *)a)->index, y = ((const class_entry *)b)->index;
    return (x > y) - (x < y);
}

ptq_status ds_classes_read(ptq_ctx *ctx, const char *path, ds_classes *out)
{
    ptq_status st = PTQ_OK;
    char *text = NULL, *cursor, *line;
    size_t n_bytes = 0;
    class_entry *e = NULL;
    int n = 0, cap = 0, form = 0; /* form 1: "NAME"; 2: "NAME INDEX" */
    memset(out, 0, sizeof *out);
    PTQ_TRY(st, read_text(ctx, path, "classes", &text, &n_bytes), done);
    if (!(out->path = strdup(path)))
        goto nomem;
    cursor = text;
    for (int64_t ln = 1; next_line(&cursor, &line); ln++) {
        if (!*line || *line == '#')
            continue;
        /* as in a labels file, the index is the last field, so a name may hold spaces ("my class 3"); a
         * last field that does not look like a number, or any line of a one-name-per-line file, is all name */
        char *name = line, *idx_tok = line + strlen(line), *last = last_field(line);
        const char c0 = *last;
        if (last > line && form != 1 && (isdigit((unsigned char)c0) || c0 == '-' || c0 == '+')) {
            idx_tok = last;
            cut_before(line, last);
        }
        const int this_form = *idx_tok ? 2 : 1;
        if (form && this_form != form) { /* only "NAME" after "NAME INDEX": form 1 reads every line whole */
            st = ptq_fail(ctx, PTQ_ERR_DATA,
                          "classes file %s line %lld: '%s' gives no index but earlier lines do; use one form, "
                          "\"NAME\" per line in index order or \"NAME INDEX\"",
                          path, (long long)ln, name);
            goto done;
        }
        form = this_form;
        int32_t index = form == 1 ? n : parse_index(idx_tok);
        if (index < 0 || index > DS_MAX_CLASS_INDEX) {
            st = ptq_fail(ctx, PTQ_ERR_DATA,
                          "classes file %s line %lld: index '%s' of class '%s' is not an integer in 0..%d", path,
                          (long long)ln, form == 1 ? "(line rank)" : idx_tok, name, DS_MAX_CLASS_INDEX);
            goto done;
        }
        if (name[0] == '.' || strchr(name, '/')) {
            st = ptq_fail(ctx, PTQ_ERR_DATA, "classes file %s line %lld: '%s' cannot name a class folder", path,
                          (long long)ln, name);
            goto done;
        }
        if (n == cap) {
            int grown_cap = cap ? 2 * cap : 64;
            class_entry *grown = realloc(e, (size_t)grown_cap * sizeof *grown);
            if (!grown)
                goto nomem;
            e = grown;
            cap = grown_cap;
        }
        e[n++] = (class_entry){name, index, ln};
    }
    if (n == 0) {
        st = ptq_fail(ctx, PTQ_ERR_DATA, "classes file %s names no class", path);
        goto done;
    }
    qsort(e, (size_t)n, sizeof *e, cmp_by_index);
    for (int k = 1; k < n; k++)
        if (e[k - 1].index == e[k].index) {
            const class_entry *first = e[k - 1].line < e[k].line ? &e[k - 1] : &e[k];
            const class_entry *again = first == &e[k] ? &e[k - 1] : &e[k];
            st = ptq_fail(ctx, PTQ_ERR_DATA,
                          "classes file %s line %lld: index %d of class '%s' already given to '%s' on line %lld", path,
                          (long long)again->line, again->index, again->name, first->name, (long long)first->line);
            goto done;
        }
    out->n_classes = e[n - 1].index + 1;
    qsort(e, (size_t)n, sizeof *e, cmp_by_name);
    for (int k = 1; k < n; k++)
        if (!strcmp(e[k - 1].name, e[k].name)) {
            const class_entry *first = e[k - 1].line < e[k].line ? &e[k - 1] : &e[k];
            const class_entry *again = first == &e[k] ? &e[k - 1] : &e[k];
            st = ptq_fail(ctx, PTQ_ERR_DATA, "classes file %s line %lld: class '%s' already given on line %lld", path,
                          (long long)again->line, again->name, (long long)first->line);
            goto done;
        }
    if (!(out->names = calloc((size_t)n, sizeof *out->names)) || !(out->index = malloc((size_t)n * sizeof *out->index)))
        goto nomem;
    for (; out->n < n; out->n++) {
        if (!(out->names[out->n] = strdup(e[out->n].name)))
            goto nomem;
        out->index[out->n] = e[out->n].index;
    }
    goto done;
nomem:
    st = ptq_fail(ctx, PTQ_ERR_NOMEM, "reading %s: out of memory", path);
done:
    free(e);
    free(text);
    if (st != PTQ_OK)
        ds_classes_free(out);
    return st;
}

ptq_status ds_classes_by_index(ptq_ctx *ctx, const ds_classes *c, char ***out)
{
    *out = calloc((size_t)c->n_classes, sizeof **out);
    if (!*out)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "reading %s: out of memory", c->path);
    for (int i = 0; i < c->n; i++)
        if (!((*out)[c->index[i]] = strdup(c->names[i]))) {
            ds_strings_free(*out, c->n_classes);
            *out = NULL;
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "reading %s: out of memory", c->path);
        }
    return PTQ_OK;
}

void ds_labels_free(ds_labels *l)
{
    if (!l)
        return;
    free(l->items);
    free(l->text);
    memset(l, 0, sizeof *l);
}

/* NULL when rel is a path inside the root; else why it is not. */
static const char *bad_rel_path(const char *rel)
{
    if (rel[0] == '/')
        return "is absolute";
    for (const char *c = rel; *c;) {
        const char *slash = strchr(c, '/');
        size_t len = slash ? (size_t)(slash - c) : strlen(c);
        if (len == 0)
            return "has an empty component";
        if (c[0] == '.')
            return len == 2 && c[1] == '.' ? "leaves the data root (..)" : "has a hidden ('.'-led) component";
        c += len + (slash != NULL);
        if (slash && !*c)
            return "ends in '/'";
    }
    return ds_image_kind(rel) == DS_IMG_NONE ? "is not a .png, .jpg or .jpeg file" : NULL;
}

static int cmp_line_path(const void *a, const void *b)
{
    const ds_labels_line *x = *(ds_labels_line *const *)a, *y = *(ds_labels_line *const *)b;
    int c = strcmp(x->path, y->path);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

ptq_status ds_labels_read(ptq_ctx *ctx, const char *path, ds_labels *out)
{
    ptq_status st = PTQ_OK;
    char *cursor, *line;
    size_t n_bytes = 0;
    int64_t cap = 0;
    ds_labels_line **sorted = NULL;
    memset(out, 0, sizeof *out);
    PTQ_TRY(st, read_text(ctx, path, "labels", &out->text, &n_bytes), done);
    cursor = out->text;
    for (int64_t ln = 1; next_line(&cursor, &line); ln++) {
        if (!*line || *line == '#')
            continue;
        char *last = last_field(line);
        if (last == line) {
            st = ptq_fail(ctx, PTQ_ERR_DATA, "labels file %s line %lld: expected \"PATH LABEL\", got '%s'", path,
                          (long long)ln, line);
            goto done;
        }
        int32_t label = parse_index(last);
        if (label < 0) {
            st = ptq_fail(ctx, PTQ_ERR_DATA, "labels file %s line %lld: label '%s' is not an integer in 0..%d", path,
                          (long long)ln, last, DS_MAX_CLASS_INDEX);
            goto done;
        }
        cut_before(line, last);
        const char *why = bad_rel_path(line);
        if (why) {
            st = ptq_fail(ctx, PTQ_ERR_DATA, "labels file %s line %lld: path '%s' %s; paths are relative to the "
                          "data root and name an image inside it", path, (long long)ln, line, why);
            goto done;
        }
        if (out->n == cap) {
            int64_t grown_cap = cap ? 2 * cap : 1024;
            ds_labels_line *items = realloc(out->items, (size_t)grown_cap * sizeof *items);
            if (!items)
                goto nomem;
            out->items = items;
            cap = grown_cap;
        }
        out->items[out->n++] = (ds_labels_line){ln, label, line};
    }
    if (out->n == 0) {
        st = ptq_fail(ctx, PTQ_ERR_DATA, "labels file %s lists no image", path);
        goto done;
    }
    if (!(sorted = malloc((size_t)out->n * sizeof *sorted)))
        goto nomem;
    for (int64_t i = 0; i < out->n; i++)
        sorted[i] = &out->items[i];
    qsort(sorted, (size_t)out->n, sizeof *sorted, cmp_line_path);
    for (int64_t i = 1; i < out->n; i++)
        if (!strcmp(sorted[i - 1]->path, sorted[i]->path)) {
            st = ptq_fail(ctx, PTQ_ERR_DATA, "labels file %s line %lld: '%s' already listed on line %lld", path,
                          (long long)sorted[i]->line, sorted[i]->path, (long long)sorted[i - 1]->line);
            goto done;
        }
    goto done;
nomem:
    st = ptq_fail(ctx, PTQ_ERR_NOMEM, "reading %s: out of memory", path);
done:
    free(sorted);
    if (st != PTQ_OK)
        ds_labels_free(out);
    return st;
}
