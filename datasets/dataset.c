/* ptq_dataset: open (a folder is an image folder, a file HDF5; a set of
 * named arrays), close, the accessors, and the reads' argument checks
 * before they dispatch to the format's reader. Covered by
 * tests/test_datasets.c and tests/test_named_inputs.c. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datasets/datasets_internal.h"
#include "ptq/hash.h"

void ptq_dataset_close(ptq_dataset *ds)
{
    if (!ds)
        return;
    ds_hdf5_free(ds->h5);
    ds_folder_free(ds->folder);
    ds_strings_free(ds->class_names, ds->n_classes);
    for (int i = 0; i < ds->n_arrays; i++)
        free((char *)ds->arrays[i].key);
    free(ds->arrays);
    free(ds->path);
    free(ds);
}

/* A dataset for path (kind and format fields to fill; classes unknown). */
static ptq_status ds_new(ptq_ctx *ctx, const char *path, ptq_dataset **out)
{
    ptq_dataset *ds = calloc(1, sizeof *ds);
    if (!ds || !(ds->path = strdup(path))) {
        free(ds);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "opening %s: out of memory", path);
    }
    ds->n_classes = -1;
    *out = ds;
    return PTQ_OK;
}

/* Fails unless path opens for reading as a regular file. */
static ptq_status check_readable(ptq_ctx *ctx, const char *path)
{
    int fd;
    PTQ_TRY_RET(ptq_file_open_read(ctx, path, &fd));
    close(fd);
    return PTQ_OK;
}

/* Fails when opts names what only an HDF5 file has (an images or labels dataset, a layout, external data) for the
 * image folder at path, naming each as the command line gives it: it would be ignored. */
static ptq_status check_hdf5_only(ptq_ctx *ctx, const char *path, const ptq_dataset_opts *opts)
{
    const char *const names[] = {"--images-key", "--labels-key", "--layout", "--allow-external-data"};
    const char *const values[] = {opts->images_key, opts->labels_key, opts->layout,
                                  opts->allow_external_data ? "" : NULL};
    char given[1024] = "";
    size_t used = 0;
    int n = 0;
    for (int i = 0; i < 4; i++)
        if (values[i] && used < sizeof given) {
            used += (size_t)snprintf(given + used, sizeof given - used, "%s%s%s%s", n++ ? ", " : "", names[i],
                                     values[i][0] ? " " : "", values[i]);
        }
    if (!n)
        return PTQ_OK;
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s is an image folder, but %s %s only to an HDF5 file (it would be "
                    "ignored)", path, given, n == 1 ? "applies" : "apply");
}

ptq_status ptq_dataset_open(ptq_ctx *ctx, const char *path, const ptq_dataset_opts *opts, ptq_dataset **out)
{
    static const ptq_dataset_opts no_opts = {NULL, NULL, NULL, 0, NULL, NULL, 0, 0, 0};
    ptq_status st = PTQ_OK;
    struct stat sb;
    *out = NULL;
    if (!path || !*path)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "no data set path given");
    if (stat(path, &sb) != 0)
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot open data set %s: %s", path, strerror(errno));
    if (!opts)
        opts = &no_opts;
    if (!S_ISDIR(sb.st_mode) && (opts->labels_file || opts->classes_file))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "a %s file (%s) applies to image folders; %s is a file",
                        opts->labels_file ? "labels" : "classes",
                        opts->labels_file ? opts->labels_file : opts->classes_file, path);
    if (S_ISDIR(sb.st_mode))
        PTQ_TRY_RET(check_hdf5_only(ctx, path, opts));
    else
        PTQ_TRY_RET(check_readable(ctx, path));
    ptq_dataset *ds = NULL;
    PTQ_TRY_RET(ds_new(ctx, path, &ds));
    if (S_ISDIR(sb.st_mode)) {
        ds->kind = "image-folder";
        st = ds_folder_open(ctx, ds, opts);
    } else {
        ds->kind = "hdf5";
        st = ds_hdf5_open(ctx, ds, opts);
    }
    if (st != PTQ_OK) {
        ptq_dataset_close(ds);
        return st;
    }
    *out = ds;
    return PTQ_OK;
}

ptq_status ptq_dataset_open_arrays(ptq_ctx *ctx, const char *path, const ptq_dataset_opts *opts,
                                   const char *const *keys, int n_keys, ptq_dataset **out)
{
    static const ptq_dataset_opts no_opts = {NULL, NULL, NULL, 0, NULL, NULL, 0, 0, 0};
    struct stat sb;
    *out = NULL;
    if (!opts)
        opts = &no_opts;
    if (!path || !*path)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "no data set path given");
    if (n_keys < 1 || n_keys > PTQ_DATASET_MAX_ARRAYS || !keys)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: %d datasets asked for; 1 to %d can be read", path, n_keys,
                        PTQ_DATASET_MAX_ARRAYS);
    for (int i = 0; i < n_keys; i++)
        if (!keys[i] || !keys[i][0])
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s: dataset %d has no name", path, i);
    if (opts->images_key || opts->layout || opts->labels_file || opts->classes_file)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                        "%s: a set of named arrays has no images, so no images key, layout, labels or classes file",
                        path);
    if (stat(path, &sb) != 0)
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot open data set %s: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s is a folder; named model inputs are read from an HDF5 file",
                        path);
    PTQ_TRY_RET(check_readable(ctx, path));
    ptq_dataset *ds = NULL;
    PTQ_TRY_RET(ds_new(ctx, path, &ds));
    ds->kind = "hdf5";
    ptq_status st = ds_hdf5_open_arrays(ctx, ds, opts, keys, n_keys);
    if (st != PTQ_OK) {
        ptq_dataset_close(ds);
        return st;
    }
    *out = ds;
    return PTQ_OK;
}

int ptq_dataset_n_arrays(const ptq_dataset *ds)
{
    return ds->n_arrays;
}

const ptq_dataset_array *ptq_dataset_array_info(const ptq_dataset *ds, int i)
{
    return i >= 0 && i < ds->n_arrays ? &ds->arrays[i] : NULL;
}

/* [start, start+n) within ds, and labels only from a labelled set. */
static ptq_status check_range(ptq_ctx *ctx, const ptq_dataset *ds, int64_t start, int64_t n, const int32_t *labels)
{
    if (start < 0 || n < 0 || start > ds->count || n > ds->count - start)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%lld samples from sample %lld out of range: %s has %lld",
                        (long long)n, (long long)start, ds->path, (long long)ds->count); /* start + n may overflow */
    if (labels && !ds->has_labels)
        return ptq_fail(ctx, PTQ_ERR_DATA, "%s has no labels", ds->path);
    return PTQ_OK;
}

ptq_status ptq_dataset_read_arrays(ptq_ctx *ctx, ptq_dataset *ds, int64_t start, int64_t n, const ptq_dtype *as,
                                   void *const *out, int32_t *labels)
{
    if (!ds->n_arrays)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s was opened as an image set, not as named arrays", ds->path);
    PTQ_TRY_RET(check_range(ctx, ds, start, n, labels));
    if (n == 0)
        return PTQ_OK;
    for (int i = 0; i < ds->n_arrays; i++)
        if (!out || !out[i] || !as)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "no output buffer for dataset '%s' of %s", ds->arrays[i].key,
                            ds->path);
    return ds_hdf5_read_arrays(ctx, ds, start, n, as, out, labels);
}

ptq_status ptq_dataset_content_sha256(ptq_ctx *ctx, const ptq_dataset *ds, char hex[65])
{
    return ds->h5 ? ds_hdf5_content_sha256(ctx, ds, hex) : ds_folder_content_sha256(ctx, ds, hex);
}

void ptq_dataset_label_origin(const ptq_dataset *ds, int64_t i, char *buf, size_t n)
{
    if (ds->h5)
        ds_hdf5_label_origin(ds, buf, n);
    else
        ds_folder_label_origin(ds, i, buf, n);
}

int64_t ptq_dataset_count(const ptq_dataset *ds)
{
    return ds->count;
}

void ptq_dataset_geometry(const ptq_dataset *ds, int64_t *height, int64_t *width, int64_t *channels)
{
    *height = ds->height;
    *width = ds->width;
    *channels = ds->channels;
}

const char *ptq_dataset_notes(const ptq_dataset *ds)
{
    return ds->notes;
}

void ptq_dataset_read_kinds(const ptq_dataset *ds, int64_t by_channels[5], int64_t *n_16bit)
{
    memset(by_channels, 0, 5 * sizeof *by_channels);
    *n_16bit = 0;
    if (ds->folder)
        ds_folder_kinds(ds, by_channels, n_16bit);
}

int ptq_dataset_has_labels(const ptq_dataset *ds)
{
    return ds->has_labels;
}

int ptq_dataset_n_classes(const ptq_dataset *ds)
{
    return ds->n_classes;
}

const char *ptq_dataset_class_name(const ptq_dataset *ds, int i)
{
    return ds->class_names && i >= 0 && i < ds->n_classes ? ds->class_names[i] : NULL;
}

void ptq_dataset_value_range(const ptq_dataset *ds, ptq_value_range *out)
{
    *out = ds->range;
}

const char *ptq_dataset_kind(const ptq_dataset *ds)
{
    return ds->kind;
}

ptq_status ptq_dataset_read(ptq_ctx *ctx, ptq_dataset *ds, int64_t start, int64_t n, const ptq_preprocess *p,
                            float *x, int32_t *labels)
{
    if (ds->n_arrays)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%s was opened as named arrays; it holds no images", ds->path);
    PTQ_TRY_RET(check_range(ctx, ds, start, n, labels));
    ptq_status st = ds_preprocess_check(ctx, p);
    if (st != PTQ_OK || n == 0)
        return st;
    if (!x)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "no output buffer for %lld samples of %s", (long long)n, ds->path);
    return ds->h5 ? ds_hdf5_read(ctx, ds, start, n, p, x, labels) : ds_folder_read(ctx, ds, start, n, p, x, labels);
}

int ptq_dataset_u8(const ptq_dataset *ds, int *planar)
{
    *planar = 0;
    return ds->h5 ? ds_hdf5_u8(ds->h5, planar) : 0;
}

ptq_status ptq_dataset_read_u8(ptq_ctx *ctx, ptq_dataset *ds, int64_t start, int64_t n, uint8_t *out,
                               int32_t *labels)
{
    int planar;
    if (!ptq_dataset_u8(ds, &planar))
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "%s does not store 8-bit images ptq can read as they are", ds->path);
    PTQ_TRY_RET(check_range(ctx, ds, start, n, labels));
    return n == 0 ? PTQ_OK : ds_hdf5_read_u8(ctx, ds, start, n, out, labels);
}

void ds_first_error_init(ds_first_error *e, int64_t n)
{
    pthread_mutex_init(&e->mu, NULL);
    e->index = n;
    ptq_ctx_init(&e->err);
}

void ds_first_error_note(ds_first_error *e, int64_t i, const ptq_ctx *err)
{
    pthread_mutex_lock(&e->mu);
    if (i < e->index) {
        e->index = i;
        e->err = *err;
    }
    pthread_mutex_unlock(&e->mu);
}

void ds_first_error_free(ds_first_error *e)
{
    pthread_mutex_destroy(&e->mu);
}
