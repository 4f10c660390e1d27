/* Image folders root/<class>/<file>.{png,jpg,jpeg}: class index = folder
 * names sorted by strcmp (or a classes file's map), files sorted within a
 * class, samples class by class; or, with a labels file, the files it lists
 * in its order with its labels. Only the file names are kept in memory; each
 * read decodes just its samples, spread over the CPU pool. Covered by
 * tests/test_datasets.c and tests/jpeg_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/parallel.h"
#include "datasets/datasets_internal.h"
#include "ptq/hash.h"

/* One decoding thread's buffers, kept from read to read. */
typedef struct folder_worker {
    char *path;         /* path_cap bytes */
    ds_image img;
    ds_jpeg jpeg;
} folder_worker;

struct ds_folder {
    char *names;        /* "<class>/<file>\0" one after another */
    size_t names_bytes, names_cap;
    int64_t *name_at;   /* [count] offsets into names */
    int32_t *label;     /* [count] class index */
    int64_t *line;      /* [count] the labels file line of each sample; 0 for a scanned folder */
    char *labels_path;  /* the labels file, or NULL */
    char *classes_path; /* the classes file, or NULL */
    int64_t cap;
    size_t path_cap;    /* root + '/' + the longest relative name + NUL */
    folder_worker *workers;
    int n_workers;
    int hash_labels;    /* labels or classes came from a file: the content hash covers them */
    uint8_t *kind;      /* [count]: 0 not decoded yet, else its channels (1-4), + KIND_16BIT for 16 bits */
};
enum { KIND_16BIT = 8 };

void ds_folder_free(ds_folder *f)
{
    if (!f)
        return;
    for (int t = 0; t < f->n_workers; t++) {
        free(f->workers[t].path);
        ds_image_free(&f->workers[t].img);
        ds_jpeg_free(&f->workers[t].jpeg);
    }
    free(f->workers);
    free(f->names);
    free(f->name_at);
    free(f->label);
    free(f->line);
    free(f->labels_path);
    free(f->classes_path);
    free(f->kind);
    free(f);
}

/* Grows the pool towards n workers; returns how many exist (0 only when none could be made). */
static int grow_workers(ds_folder *f, int n)
{
    if (n <= f->n_workers)
        return f->n_workers;
    folder_worker *w = realloc(f->workers, (size_t)n * sizeof *w);
    if (!w)
        return f->n_workers;
    f->workers = w;
    for (; f->n_workers < n; f->n_workers++) {
        memset(&w[f->n_workers], 0, sizeof *w);
        if (!(w[f->n_workers].path = malloc(f->path_cap)))
            break;
    }
    return f->n_workers;
}

/* A growable list of names read from one folder. */
typedef struct name_list {
    char **items;
    int64_t n, cap;
} name_list;

static void name_list_free(name_list *l)
{
    for (int64_t i = 0; i < l->n; i++)
        free(l->items[i]);
    free(l->items);
    memset(l, 0, sizeof *l);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists the non-hidden entries of dir that are folders (want_dirs) or
 * regular image files (ds_image_kind), sorted; symlinks are followed. An
 * entry that could be one but cannot be stat'ed (a dangling symlink) is an
 * error: skipping it would drop a sample or renumber the classes. */
static ptq_status list_dir(ptq_ctx *ctx, const char *dir, int want_dirs, name_list *out)
{
    ptq_status st = PTQ_OK;
    DIR *d = opendir(dir);
    char *full = NULL;
    if (!d)
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot read folder %s: %s", dir, strerror(errno));
    size_t dir_len = strlen(dir);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || (!want_dirs && ds_image_kind(e->d_name) == DS_IMG_NONE))
            continue;
        size_t need = dir_len + strlen(e->d_name) + 2;
        char *grown = realloc(full, need);
        if (!grown)
            goto nomem;
        full = grown;
        snprintf(full, need, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (stat(full, &sb) != 0) {
            const int err = errno;
            const int link = lstat(full, &sb) == 0 && S_ISLNK(sb.st_mode);
            st = ptq_fail(ctx, PTQ_ERR_IO, "cannot read %s: %s%s", full, strerror(err),
                          link ? " (a symlink whose target cannot be reached)" : "");
            goto done;
        }
        if (want_dirs ? !S_ISDIR(sb.st_mode) : !S_ISREG(sb.st_mode))
            continue;
        if (out->n == out->cap) {
            int64_t cap = out->cap ? 2 * out->cap : 64;
            char **items = realloc(out->items, (size_t)cap * sizeof *items);
            if (!items)
                goto nomem;
            out->items = items;
            out->cap = cap;
        }
        if (!(out->items[out->n] = strdup(e->d_name)))
            goto nomem;
        out->n++;
    }
    if (out->n > 1)
        qsort(out->items, (size_t)out->n, sizeof *out->items, cmp_names);
    goto done;
nomem:
    st = ptq_fail(ctx, PTQ_ERR_NOMEM, "listing %s: out of memory", dir);
done:
    free(full);
    closedir(d);
    return st;
}

/* Appends "<cls>/<file>" (just file when cls is "") with label k from labels file line (0: none) to the
 * sample list. */
static int add_sample(ds_folder *f, int64_t count, const char *cls, const char *file, int32_t k, int64_t line)
{
    size_t len = strlen(cls) + strlen(file) + 2;
    if (f->names_bytes + len > f->names_cap) {
        size_t cap = f->names_cap ? 2 * f->names_cap : 4096;
        while (cap < f->names_bytes + len)
            cap *= 2;
        char *grown = realloc(f->names, cap);
        if (!grown)
            return 0;
        f->names = grown;
        f->names_cap = cap;
    }
    if (count == f->cap) {
        int64_t cap = f->cap ? 2 * f->cap : 1024;
        int64_t *at = realloc(f->name_at, (size_t)cap * sizeof *at);
        if (at)
            f->name_at = at;
        int32_t *lab = realloc(f->label, (size_t)cap * sizeof *lab);
        if (lab)
            f->label = lab;
        int64_t *ln = realloc(f->line, (size_t)cap * sizeof *ln);
        if (ln)
            f->line = ln;
        if (!at || !lab || !ln)
            return 0;
        f->cap = cap;
    }
    snprintf(f->names + f->names_bytes, len, "%s%s%s", cls, *cls ? "/" : "", file);
    f->name_at[count] = (int64_t)f->names_bytes;
    f->label[count] = k;
    f->line[count] = line;
    f->names_bytes += len;
    return 1;
}

/* The samples of a labels file, in its order; classes (may be NULL) must give each label. */
static ptq_status open_listed(ptq_ctx *ctx, ptq_dataset *ds, const char *labels_path, const ds_classes *classes)
{
    ds_labels list;
    PTQ_TRY_RET(ds_labels_read(ctx, labels_path, &list));
    ptq_status st = PTQ_OK;
    ds_folder *f = ds->folder;
    char *full = NULL;
    for (int64_t i = 0; i < list.n; i++) {
        const ds_labels_line *l = &list.items[i];
        if (classes && (l->label >= classes->n_classes || !ds->class_names[l->label])) {
            st = ptq_fail(ctx, PTQ_ERR_DATA, "labels file %s line %lld: label %d is no index of classes file %s",
                          labels_path, (long long)l->line, l->label, classes->path);
            goto done;
        }
        size_t need = strlen(ds->path) + strlen(l->path) + 2;
        char *grown = realloc(full, need);
        if (!grown) {
            st = ptq_fail(ctx, PTQ_ERR_NOMEM, "opening %s: out of memory", ds->path);
            goto done;
        }
        full = grown;
        snprintf(full, need, "%s/%s", ds->path, l->path);
        struct stat sb;
        const int missing = stat(full, &sb) != 0; /* named now, not half-way through a run */
        if (missing || !S_ISREG(sb.st_mode)) {
            st = ptq_fail(ctx, PTQ_ERR_IO, "labels file %s line %lld: %s: %s", labels_path, (long long)l->line, full,
                          missing ? strerror(errno) : "not a regular file");
            goto done;
        }
        if (!add_sample(f, ds->count, "", l->path, l->label, l->line)) {
            st = ptq_fail(ctx, PTQ_ERR_NOMEM, "opening %s: out of memory", ds->path);
            goto done;
        }
        ds->count++;
    }
done:
    free(full);
    ds_labels_free(&list);
    return st;
}

/* The samples of root/<class>/<image>: class index = rank of the folder
 * name, or classes' index for it (a folder it does not name is refused). */
static ptq_status open_scanned(ptq_ctx *ctx, ptq_dataset *ds, const ds_classes *classes)
{
    ptq_status st = PTQ_OK;
    name_list dirs = {0}, files = {0};
    char *dir = NULL;
    ds_folder *f = ds->folder;
    PTQ_TRY(st, list_dir(ctx, ds->path, 1, &dirs), done);
    if (dirs.n > DS_MAX_CLASS_INDEX + 1) {
        st = ptq_fail(ctx, PTQ_ERR_DATA, "too many class folders in %s (more than %d)", ds->path,
                      DS_MAX_CLASS_INDEX + 1);
        goto done;
    }
    for (int64_t k = 0; k < dirs.n; k++) {
        int32_t label = (int32_t)k;
        if (classes && (label = ds_classes_find(classes, dirs.items[k])) < 0) {
            st = ptq_fail(ctx, PTQ_ERR_DATA, "class folder %s/%s is not in classes file %s", ds->path,
                          dirs.items[k], classes->path);
            goto done;
        }
        size_t need = strlen(ds->path) + strlen(dirs.items[k]) + 2;
        char *grown = realloc(dir, need);
        if (!grown)
            goto nomem;
        dir = grown;
        snprintf(dir, need, "%s/%s", ds->path, dirs.items[k]);
        name_list_free(&files);
        PTQ_TRY(st, list_dir(ctx, dir, 0, &files), done);
        for (int64_t i = 0; i < files.n; i++) {
            if (!add_sample(f, ds->count, dirs.items[k], files.items[i], label, 0))
                goto nomem;
            ds->count++;
        }
    }
    if (ds->count == 0) {
        st = ptq_fail(ctx, PTQ_ERR_DATA,
                      "no images in %s (expected %s/<class>/*.png, *.jpg or *.jpeg, or a labels file listing them)",
                      ds->path, ds->path);
        goto done;
    }
    if (!classes) {
        ds->n_classes = (int)dirs.n;
        ds->class_names = dirs.items;
        dirs.items = NULL;
        dirs.n = 0;
    }
    goto done;
nomem:
    st = ptq_fail(ctx, PTQ_ERR_NOMEM, "opening %s: out of memory", ds->path);
done:
    free(dir);
    name_list_free(&files);
    name_list_free(&dirs);
    return st;
}

void ds_folder_label_origin(const ptq_dataset *ds, int64_t i, char *buf, size_t n)
{
    const ds_folder *f = ds->folder;
    const char *rel = f->names + f->name_at[i];
    if (f->labels_path)
        snprintf(buf, n, "labels file %s line %lld (%s)", f->labels_path, (long long)f->line[i], rel);
    else if (f->classes_path)
        snprintf(buf, n, "%s/%s, its class folder's index in classes file %s", ds->path, rel, f->classes_path);
    else
        snprintf(buf, n, "%s/%s, its class folder's rank", ds->path, rel);
}

/* The format of the image at path by its first bytes, as PIL and torchvision's ImageFolder open it (a PNG named
 * .jpg is a PNG), else by its name's extension (the decoder then says what is wrong); an empty file is
 * PTQ_ERR_DATA naming it; one that cannot be opened as a regular file is PTQ_ERR_IO. */
static ptq_status image_kind(ptq_ctx *ctx, const char *path, const char *rel, int *kind)
{
    unsigned char head[4] = {0};
    FILE *fp = NULL;
    PTQ_TRY_RET(ptq_file_fopen_read(ctx, path, &fp)); /* a FIFO put in its place since the listing: refused */
    const size_t n = fread(head, 1, sizeof head, fp);
    fclose(fp);
    if (n == 0)
        return ptq_fail(ctx, PTQ_ERR_DATA, "cannot decode %s: the file is empty", path);
    if (n >= 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF)
        *kind = DS_IMG_JPEG;
    else if (n == 4 && memcmp(head, "\x89PNG", 4) == 0)
        *kind = DS_IMG_PNG;
    else
        *kind = ds_image_kind(rel);
    return PTQ_OK;
}

/* Decodes sample s with worker w's buffers into w->img (header only: its geometry). */
static ptq_status decode_sample(ptq_ctx *ctx, const ptq_dataset *ds, folder_worker *w, int64_t s, int header_only,
                                const ptq_preprocess *p)
{
    const ds_folder *f = ds->folder;
    const char *rel = f->names + f->name_at[s];
    snprintf(w->path, f->path_cap, "%s/%s", ds->path, rel);
    /* data convert's cap does not shrink with --resize: shrinking large photos is what it is for */
    const uint64_t max_pixels = !p              ? 0
                                : p->to_convert ? DS_CONVERT_MAX_PIXELS
                                                : (uint64_t)p->height * (uint64_t)p->width * DS_PNG_MAX_UPSCALE;
    const char *why = p && p->to_convert ? "data convert's limit for one image" : "64 times the model's input";
    int kind = DS_IMG_NONE;
    PTQ_TRY_RET(image_kind(ctx, w->path, rel, &kind));
    if (kind == DS_IMG_JPEG)
        return ds_jpeg_decode(ctx, w->path, &w->jpeg, &w->img, header_only, p, max_pixels, why);
    return ds_png_decode(ctx, w->path, &w->img, header_only, max_pixels, why);
}

ptq_status ds_folder_open(ptq_ctx *ctx, ptq_dataset *ds, const ptq_dataset_opts *opts)
{
    ptq_status st = PTQ_OK;
    ds_classes classes;
    memset(&classes, 0, sizeof classes);
    ds_folder *f = calloc(1, sizeof *f);
    if (!f)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "opening %s: out of memory", ds->path);
    ds->folder = f;
    if (opts->classes_file) {
        PTQ_TRY(st, ds_classes_read(ctx, opts->classes_file, &classes), done);
        PTQ_TRY(st, ds_classes_by_index(ctx, &classes, &ds->class_names), done);
        ds->n_classes = classes.n_classes;
    }
    if (opts->labels_file)
        PTQ_TRY(st, open_listed(ctx, ds, opts->labels_file, opts->classes_file ? &classes : NULL), done);
    else
        PTQ_TRY(st, open_scanned(ctx, ds, opts->classes_file ? &classes : NULL), done);
    f->hash_labels = opts->labels_file || opts->classes_file;
    if ((opts->labels_file && !(f->labels_path = strdup(opts->labels_file))) ||
        (opts->classes_file && !(f->classes_path = strdup(opts->classes_file)))) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "opening %s: out of memory", ds->path);
        goto done;
    }
    size_t longest = 0;
    for (int64_t i = 0; i < ds->count; i++) {
        size_t len = strlen(f->names + f->name_at[i]);
        longest = len > longest ? len : longest;
    }
    f->path_cap = strlen(ds->path) + longest + 2;
    if (grow_workers(f, 1) < 1) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "opening %s: out of memory", ds->path);
        goto done;
    }
    if (!(f->kind = calloc((size_t)ds->count + 1, 1))) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "opening %s: out of memory", ds->path);
        goto done;
    }
    ds->has_labels = 1;
    folder_worker *w0 = &f->workers[0];
    PTQ_TRY(st, decode_sample(ctx, ds, w0, 0, 1, NULL), done);
    ds->height = w0->img.height;
    ds->width = w0->img.width;
    ds->channels = w0->img.channels;
done:
    ds_classes_free(&classes);
    return st;
}

/* One read spread over the CPU pool; the lowest failing sample wins. */
typedef struct folder_job {
    ptq_dataset *ds;
    int64_t start, per_sample;
    const ptq_preprocess *p;
    float *x;
    int32_t *labels;
    ds_first_error bad;
} folder_job;

static void folder_samples(void *arg, int64_t begin, int64_t end, int worker)
{
    folder_job *j = arg;
    ds_folder *f = j->ds->folder;
    folder_worker *w = &f->workers[worker];
    for (int64_t i = begin; i < end; i++) {
        ptq_ctx local;
        ptq_ctx_init(&local);
        int64_t s = j->start + i;
        ptq_status st = decode_sample(&local, j->ds, w, s, 0, j->p);
        if (st == PTQ_OK) { /* sample s is this worker's alone in this read */
            f->kind[s] = (uint8_t)(w->img.channels | (w->img.dtype == PTQ_DT_UINT16 ? KIND_16BIT : 0));
            st = ptq_preprocess_image(&local, j->p, w->img.data, w->img.dtype, w->img.height, w->img.width,
                                      w->img.channels, 0, j->x + i * j->per_sample);
            if (st != PTQ_OK) { /* name the image: a folder can mix sizes */
                char why[PTQ_MSG_BYTES];
                snprintf(why, sizeof why, "%s", local.msg);
                ptq_fail(&local, st, "%s: %s", w->path, why);
            }
        }
        if (j->labels)
            j->labels[i] = f->label[s];
        if (st != PTQ_OK) {
            ds_first_error_note(&j->bad, i, &local);
        }
    }
}

/* Decodes and preprocesses samples on the CPU pool (one decoder state per
 * pool thread); the failure of the lowest sample index is the one
 * reported, so errors do not depend on the thread count. */
ptq_status ds_folder_read(ptq_ctx *ctx, ptq_dataset *ds, int64_t start, int64_t n, const ptq_preprocess *p,
                          float *x, int32_t *labels)
{
    ds_folder *f = ds->folder;
    const int n_workers = ptq_par_workers();
    if (grow_workers(f, n_workers) < n_workers)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "reading %s: out of memory", ds->path);
    folder_job job;
    memset(&job, 0, sizeof job);
    job.ds = ds;
    job.start = start;
    job.per_sample = (int64_t)p->n_channels * p->height * p->width; /* floats of one model input */
    job.p = p;
    job.x = x;
    job.labels = labels;
    ds_first_error_init(&job.bad, n);
    ptq_parallel_for(n, 4, folder_samples, &job);
    ds_first_error_free(&job.bad);
    if (job.bad.index == n)
        return PTQ_OK;
    if (ctx)
        *ctx = job.bad.err;
    return job.bad.err.code;
}

ptq_status ds_folder_content_sha256(ptq_ctx *ctx, const ptq_dataset *ds, char hex[65])
{
    const ds_folder *f = ds->folder;
    ptq_sha256 h;
    unsigned char buf[1 << 16];
    ptq_status st = PTQ_OK;
    char *path = malloc(f->path_cap);
    if (!path)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "hashing %s: out of memory", ds->path);
    ptq_sha256_init(&h);
    for (int64_t i = 0; i < ds->count && st == PTQ_OK; i++) {
        const char *rel = f->names + f->name_at[i];
        FILE *in = NULL;
        snprintf(path, f->path_cap, "%s/%s", ds->path, rel);
        PTQ_TRY(st, ptq_file_fopen_read(ctx, path, &in), done);
        ptq_sha256_update(&h, rel, strlen(rel) + 1);
        struct stat sb;
        uint64_t n = fstat(fileno(in), &sb) == 0 ? (uint64_t)sb.st_size : 0, got_total = 0;
        unsigned char le[8];
        for (int b = 0; b < 8; b++)
            le[b] = (unsigned char)(n >> (8 * b));
        ptq_sha256_update(&h, le, 8); /* the length first: names and bytes cannot run into each other */
        for (size_t got; (got = fread(buf, 1, sizeof buf, in)) > 0; got_total += got)
            ptq_sha256_update(&h, buf, got);
        if (ferror(in) || got_total != n)
            st = ptq_fail(ctx, PTQ_ERR_IO, "cannot read %s (or it changed while read)", path);
        fclose(in);
        if (f->hash_labels) { /* labels from a file: a changed label is a changed set */
            const char *name = ptq_dataset_class_name(ds, f->label[i]);
            for (int b = 0; b < 4; b++)
                le[b] = (unsigned char)((uint32_t)f->label[i] >> (8 * b));
            ptq_sha256_update(&h, le, 4);
            ptq_sha256_update(&h, name ? name : "", strlen(name ? name : "") + 1);
        }
    }
    if (st == PTQ_OK)
        ptq_sha256_final_hex(&h, hex);
done:
    free(path);
    return st;
}

void ds_folder_kinds(const ptq_dataset *ds, int64_t by_channels[5], int64_t *n_16bit)
{
    for (int64_t i = 0; i < ds->count; i++) {
        const int k = ds->folder->kind[i];
        by_channels[k & 7] += k != 0;
        *n_16bit += (k & KIND_16BIT) != 0;
    }
}
