/* The calibration archive (calib.h5), readable with h5py + hdf5plugin:
 *   /                 attrs format ("ptq calibration archive"), format_version,
 *                     ptq_version, model_sha256, model_name, preprocess,
 *                     selection, n_bins, sample_ids_sha256, n_samples, sources,
 *                     math ("tf32" or "fp64" as --math asked; absent: fp32),
 *                     sources_sha256 (each source's content SHA-256; absent in
 *                     archives written before it existed, whose sources are keyed by name)
 *   /samples/source   [n_samples] int32, index into the sources attribute
 *   /samples/id       [n_samples] int64, sample index within its source
 *   /tensors/name     [n_tensors] UTF-8 strings
 *   /tensors/count, n_zero, n_nan, n_inf, n_binned   [n_tensors] int64
 *   /tensors/min, max [n_tensors] float32;  /tensors/exponent [n_tensors] int32
 *   /tensors/hist     [n_tensors, n_bins] int64, one zstd (32015) chunk per tensor;
 *                     bin i of tensor t covers [i, i+1) * 2^exponent[t] / n_bins of |x|.
 * Covered by tests/test_calib_set.c and tests/calib_archive_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "calib/calib_internal.h"
#include "ptq/memory.h"
#include "datasets/datasets_internal.h"

#define ARCHIVE_FORMAT "ptq calibration archive"

/* The archive being written or read, for messages. */
typedef struct h5f {
    ptq_ctx *ctx;
    hid_t file;
    const char *path;
} h5f;

static ptq_status io_fail(h5f *w, const char *what)
{
    char why[256];
    return ptq_fail(w->ctx, PTQ_ERR_IO, "cannot write %s to %s: %s", what, w->path, ds_h5_error(why, sizeof why));
}

static ptq_status attr_str(h5f *w, const char *name, const char *value)
{
    return ds_h5_write_strings_attr(w->ctx, w->file, name, &value, 1, 1, w->path);
}

static ptq_status attr_i64(h5f *w, const char *name, int64_t value)
{
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t a = space < 0 ? -1 : H5Acreate2(w->file, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
    int ok = a >= 0 && H5Awrite(a, H5T_NATIVE_INT64, &value) >= 0;
    if (a >= 0)
        H5Aclose(a);
    if (space >= 0)
        H5Sclose(space);
    return ok ? PTQ_OK : io_fail(w, name);
}

/* A 1-D dataset of n values of mem_type stored as file_type (zstd, chunked). */
static ptq_status write_1d(h5f *w, const char *key, hid_t file_type, hid_t mem_type, int64_t n, const void *data)
{
    hid_t d;
    const int64_t dims[1] = {n};
    PTQ_TRY_RET(ds_h5_create_dataset(w->ctx, w->file, key, file_type, 1, dims, n > 65536 ? 65536 : (n ? n : 1),
                                     PTQ_H5_ZSTD, 3, w->path, &d));
    int ok = n == 0 || H5Dwrite(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0;
    H5Dclose(d);
    return ok ? PTQ_OK : io_fail(w, key);
}

/* The groups, without modification times (as every dataset): the same
 * content gives the same bytes. */
static ptq_status write_groups(h5f *w)
{
    static const char *const groups[] = {"samples", "tensors"};
    hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
    int ok = gcpl >= 0 && H5Pset_obj_track_times(gcpl, 0) >= 0;
    for (int i = 0; ok && i < 2; i++) {
        hid_t g = H5Gcreate2(w->file, groups[i], H5P_DEFAULT, gcpl, H5P_DEFAULT);
        ok = g >= 0 && H5Gclose(g) >= 0;
    }
    if (gcpl >= 0)
        H5Pclose(gcpl);
    return ok ? PTQ_OK : io_fail(w, "the samples and tensors groups");
}

static ptq_status write_names(h5f *w, const ptq_calib_set *s)
{
    return ds_h5_write_strings_dataset(w->file, "tensors/name", (const char *const *)s->names, s->n)
               ? PTQ_OK
               : io_fail(w, "tensors/name");
}

static ptq_status write_hist(h5f *w, const ptq_calib_set *s)
{
    hid_t d, mspace = -1, fspace = -1;
    const int64_t dims[2] = {s->n, s->n_bins};
    PTQ_TRY_RET(ds_h5_create_dataset(w->ctx, w->file, "tensors/hist", H5T_STD_I64LE, 2, dims, 1, PTQ_H5_ZSTD, 3,
                                     w->path, &d));
    hsize_t row[2] = {1, (hsize_t)s->n_bins};
    int ok = (mspace = H5Screate_simple(2, row, NULL)) >= 0 && (fspace = H5Dget_space(d)) >= 0;
    for (int64_t i = 0; ok && i < s->n; i++) {
        hsize_t start[2] = {(hsize_t)i, 0};
        ok = H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, row, NULL) >= 0 &&
             H5Dwrite(d, H5T_NATIVE_INT64, mspace, fspace, H5P_DEFAULT, ptq_observer_hist(s->obs[i])) >= 0;
    }
    if (fspace >= 0)
        H5Sclose(fspace);
    if (mspace >= 0)
        H5Sclose(mspace);
    H5Dclose(d);
    return ok ? PTQ_OK : io_fail(w, "tensors/hist");
}

/* Per-tensor statistics, one column at a time. */
typedef struct stat_cols {
    int64_t *count, *n_zero, *n_nan, *n_inf, *n_binned;
    float *min, *max;
    int32_t *exponent;
} stat_cols;

static void stat_cols_free(stat_cols *c)
{
    free(c->count);
    free(c->n_zero);
    free(c->n_nan);
    free(c->n_inf);
    free(c->n_binned);
    free(c->min);
    free(c->max);
    free(c->exponent);
}

static int stat_cols_alloc(stat_cols *c, int64_t n)
{
    size_t k = (size_t)n + 1;
    c->count = malloc(k * 8);
    c->n_zero = malloc(k * 8);
    c->n_nan = malloc(k * 8);
    c->n_inf = malloc(k * 8);
    c->n_binned = malloc(k * 8);
    c->min = malloc(k * 4);
    c->max = malloc(k * 4);
    c->exponent = malloc(k * 4);
    return c->count && c->n_zero && c->n_nan && c->n_inf && c->n_binned && c->min && c->max && c->exponent;
}

static ptq_status write_samples(h5f *w, const ptq_calib_set *s, int64_t n_samples)
{
    ptq_status st = PTQ_OK;
    int32_t *src = malloc(((size_t)n_samples + 1) * sizeof *src);
    int64_t *ids = malloc(((size_t)n_samples + 1) * sizeof *ids);
    if (!src || !ids) {
        st = ptq_fail(w->ctx, PTQ_ERR_NOMEM, "out of memory for %lld sample ids", (long long)n_samples);
        goto done;
    }
    int64_t k = 0;
    for (int i = 0; i < s->n_sources; i++)
        for (int64_t j = 0; j < s->sources[i].n_ids; j++, k++) {
            src[k] = i;
            ids[k] = s->sources[i].ids[j];
        }
    PTQ_TRY(st, write_1d(w, "samples/source", H5T_STD_I32LE, H5T_NATIVE_INT32, n_samples, src), done);
    PTQ_TRY(st, write_1d(w, "samples/id", H5T_STD_I64LE, H5T_NATIVE_INT64, n_samples, ids), done);
done:
    free(src);
    free(ids);
    return st;
}

ptq_status ptq_calib_set_write(ptq_ctx *ctx, const ptq_calib_set *s, const char *path)
{
    ptq_status st = PTQ_OK;
    stat_cols c = {0};
    ds_h5_quiet q;
    ptq_calib_provenance pv;
    for (int64_t i = 0; i < s->n; i++)
        if (s->dev_obs[i])
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "calibration set for %s written before ptq_calib_set_sync: call "
                            "ptq_calib_set_sync first (tensor '%s' still has state on the GPU)", path, s->names[i]);
    if (!s->model_sha256[0]) /* the reader refuses an archive without it */
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "calibration set for %s names no model: ptq_calib_set_describe "
                        "records the model's SHA-256 before ptq_calib_set_write", path);
    PTQ_TRY_RET(ptq_h5_register_zstd(ctx));
    ptq_calib_set_provenance(s, &pv);
    ds_h5_quiet_begin(&q);
    h5f w = {ctx, ds_h5_mem_create(path), path};
    if (w.file < 0) {
        char why[256];
        st = ptq_fail(ctx, PTQ_ERR_IO, "cannot create %s: %s", path, ds_h5_error(why, sizeof why));
        goto done;
    }
    PTQ_TRY(st, attr_str(&w, "format", ARCHIVE_FORMAT), done);
    PTQ_TRY(st, attr_i64(&w, "format_version", PTQ_CALIB_ARCHIVE_VERSION), done);
    PTQ_TRY(st, attr_str(&w, "ptq_version", pv.ptq_version), done);
    PTQ_TRY(st, attr_str(&w, "model_sha256", pv.model_sha256), done);
    PTQ_TRY(st, attr_str(&w, "model_name", pv.model_name), done);
    PTQ_TRY(st, attr_str(&w, "preprocess", pv.preprocess), done);
    if (strcmp(pv.math, "fp32") != 0) /* fp32 archives stay as they were */
        PTQ_TRY(st, attr_str(&w, "math", pv.math), done);
    PTQ_TRY(st, attr_str(&w, "selection", pv.selection), done);
    PTQ_TRY(st, attr_i64(&w, "n_bins", pv.n_bins), done);
    PTQ_TRY(st, attr_str(&w, "sample_ids_sha256", pv.sample_ids_sha256), done);
    PTQ_TRY(st, attr_i64(&w, "n_samples", pv.n_samples), done);
    PTQ_TRY(st, ds_h5_write_strings_attr(ctx, w.file, "sources", pv.sources, pv.n_sources, 0, path), done);
    PTQ_TRY(st, ds_h5_write_strings_attr(ctx, w.file, "sources_sha256", pv.sources_sha256, pv.n_sources, 0, path),
            done);
    PTQ_TRY(st, write_groups(&w), done);
    PTQ_TRY(st, write_samples(&w, s, pv.n_samples), done);
    PTQ_TRY(st, write_names(&w, s), done);
    if (!stat_cols_alloc(&c, s->n)) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int64_t i = 0; i < s->n; i++) {
        ptq_observer_stats os;
        ptq_observer_get_stats(s->obs[i], &os);
        c.count[i] = os.count;
        c.n_zero[i] = os.n_zero;
        c.n_nan[i] = os.n_nan;
        c.n_inf[i] = os.n_inf;
        c.n_binned[i] = os.n_binned;
        c.min[i] = os.min;
        c.max[i] = os.max;
        c.exponent[i] = ptq_observer_exponent(s->obs[i]);
    }
    static const char *const i64_keys[] = {"tensors/count", "tensors/n_zero", "tensors/n_nan", "tensors/n_inf",
                                           "tensors/n_binned"};
    const int64_t *i64_cols[] = {c.count, c.n_zero, c.n_nan, c.n_inf, c.n_binned};
    for (int k = 0; k < 5; k++)
        PTQ_TRY(st, write_1d(&w, i64_keys[k], H5T_STD_I64LE, H5T_NATIVE_INT64, s->n, i64_cols[k]), done);
    PTQ_TRY(st, write_1d(&w, "tensors/min", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, s->n, c.min), done);
    PTQ_TRY(st, write_1d(&w, "tensors/max", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, s->n, c.max), done);
    PTQ_TRY(st, write_1d(&w, "tensors/exponent", H5T_STD_I32LE, H5T_NATIVE_INT32, s->n, c.exponent), done);
    PTQ_TRY(st, write_hist(&w, s), done);
    /* written out by ptq, not HDF5: a file it had to make is removed again on failure */
    st = ds_h5_mem_save(ctx, &w.file, path);
done:
    if (w.file >= 0)
        H5Fclose(w.file);
    ds_h5_quiet_end(&q);
    stat_cols_free(&c);
    return st;
}

/* Reading */

static ptq_status bad(h5f *r, const char *what)
{
    char why[256];
    return ptq_fail(r->ctx, PTQ_ERR_FORMAT, "%s is not a ptq calibration archive: %s (%s)", r->path, what,
                    ds_h5_error(why, sizeof why));
}

/* A value read fine but off: no HDF5 error to add. */
static ptq_status off(h5f *r, const char *what)
{
    return ptq_fail(r->ctx, PTQ_ERR_FORMAT, "%s is not a ptq calibration archive: %s", r->path, what);
}

static ptq_status read_attr_str(h5f *r, const char *name, char **out)
{
    char **strs = NULL;
    int n = 0;
    char what[160];
    *out = NULL;
    hid_t a = H5Aopen(r->file, name, H5P_DEFAULT);
    if (a < 0) {
        snprintf(what, sizeof what, "no '%s' attribute", name);
        return bad(r, what);
    }
    snprintf(what, sizeof what, "attribute '%s' of %s", name, r->path);
    ptq_status st = ds_h5_read_strings(r->ctx, a, 1, what, &strs, &n);
    H5Aclose(a);
    if (st != PTQ_OK)
        return st;
    if (n != 1) {
        ds_strings_free(strs, n);
        return ptq_fail(r->ctx, PTQ_ERR_FORMAT, "%s holds %d strings, not one", what, n);
    }
    *out = strs[0];
    free(strs);
    return PTQ_OK;
}

static ptq_status read_attr_i64(h5f *r, const char *name, int64_t *out)
{
    hid_t a = H5Aopen(r->file, name, H5P_DEFAULT);
    hid_t space = a < 0 ? -1 : H5Aget_space(a);
    int ok = space >= 0 && H5Sget_simple_extent_npoints(space) == 1 && H5Aread(a, H5T_NATIVE_INT64, out) >= 0;
    if (space >= 0)
        H5Sclose(space);
    if (a >= 0)
        H5Aclose(a);
    if (ok)
        return PTQ_OK;
    char what[160];
    snprintf(what, sizeof what, "no integer '%s' attribute", name);
    return bad(r, what);
}

/* Reads a dataset whose shape must be exactly dims[rank] into data. */
static ptq_status read_exact(h5f *r, const char *key, hid_t mem_type, int rank, const int64_t *dims, void *data)
{
    char what[200];
    hid_t d = H5Dopen2(r->file, key, H5P_DEFAULT);
    hid_t space = d < 0 ? -1 : H5Dget_space(d);
    hsize_t got[2] = {0, 0};
    int ok = space >= 0 && H5Sget_simple_extent_ndims(space) == rank && H5Sget_simple_extent_dims(space, got, NULL) == rank;
    for (int i = 0; ok && i < rank; i++)
        ok = got[i] == (hsize_t)dims[i];
    int shape_ok = ok;
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    ok = ok && (n == 0 || H5Dread(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
    if (space >= 0)
        H5Sclose(space);
    if (d >= 0)
        H5Dclose(d);
    if (ok)
        return PTQ_OK;
    if (d < 0)
        snprintf(what, sizeof what, "no '%s' dataset", key);
    else if (!shape_ok)
        snprintf(what, sizeof what, "'%s' is not of shape [%lld%s%lld]", key, (long long)dims[0], rank > 1 ? ", " : "",
                 rank > 1 ? (long long)dims[1] : 0LL);
    else
        snprintf(what, sizeof what, "cannot read '%s'", key);
    return bad(r, what);
}

/* The length of 1-D dataset key. */
static ptq_status dataset_len(h5f *r, const char *key, int64_t *n)
{
    hid_t d = H5Dopen2(r->file, key, H5P_DEFAULT);
    hid_t space = d < 0 ? -1 : H5Dget_space(d);
    hsize_t got = 0;
    int ok = space >= 0 && H5Sget_simple_extent_ndims(space) == 1 && H5Sget_simple_extent_dims(space, &got, NULL) == 1;
    if (space >= 0)
        H5Sclose(space);
    if (d >= 0)
        H5Dclose(d);
    *n = (int64_t)got;
    if (ok)
        return PTQ_OK;
    char what[160];
    snprintf(what, sizeof what, "no 1-D '%s' dataset", key);
    return bad(r, what);
}

static int cmp_name_ptrs(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Tensor names are the graph's value names: non-empty, UTF-8 (as ONNX names, which the model reader checks) and
 * distinct. */
static ptq_status names_distinct(h5f *r, const ptq_calib_set *s)
{
    char what[200];
    char **sorted = malloc(((size_t)s->n + 1) * sizeof *sorted);
    if (!sorted)
        return ptq_fail(r->ctx, PTQ_ERR_NOMEM, "out of memory for %lld tensor names", (long long)s->n);
    memcpy(sorted, s->names, (size_t)s->n * sizeof *sorted);
    qsort(sorted, (size_t)s->n, sizeof *sorted, cmp_name_ptrs);
    what[0] = '\0';
    for (int64_t i = 0; i < s->n && !what[0]; i++) {
        if (!sorted[i][0])
            snprintf(what, sizeof what, "a tensor without a name in 'tensors/name'");
        else if (!ptq_utf8_valid(sorted[i]))
            snprintf(what, sizeof what, "tensor '%.120s' in 'tensors/name' is not UTF-8", sorted[i]);
        else if (i > 0 && strcmp(sorted[i], sorted[i - 1]) == 0)
            snprintf(what, sizeof what, "tensor '%.120s' listed twice in 'tensors/name'", sorted[i]);
    }
    free(sorted);
    return what[0] ? off(r, what) : PTQ_OK;
}

static ptq_status read_names(h5f *r, ptq_calib_set *s)
{
    char **strs = NULL, what[160];
    int n = 0;
    hid_t d = H5Dopen2(r->file, "tensors/name", H5P_DEFAULT);
    if (d < 0)
        return bad(r, "no 'tensors/name' dataset");
    snprintf(what, sizeof what, "'tensors/name' of %s", r->path);
    ptq_status st = ds_h5_read_strings(r->ctx, d, 0, what, &strs, &n);
    H5Dclose(d);
    if (st != PTQ_OK)
        return st;
    if (n != s->n) {
        ds_strings_free(strs, n);
        return ptq_fail(r->ctx, PTQ_ERR_FORMAT, "%s: %d tensor names for %lld tensors", r->path, n, (long long)s->n);
    }
    for (int64_t i = 0; i < s->n; i++) {
        s->names[i] = strs[i];
        strs[i] = NULL;
    }
    ds_strings_free(strs, n);
    return names_distinct(r, s);
}

/* The content hashes of the sources, when the archive records them ([n] "" or 64 hex digits). */
static ptq_status read_source_hashes(h5f *r, int n, char ***out)
{
    char **shas = NULL;
    int n_shas = 0;
    *out = NULL;
    if (H5Aexists(r->file, "sources_sha256") <= 0)
        return PTQ_OK;
    hid_t a = H5Aopen(r->file, "sources_sha256", H5P_DEFAULT);
    if (a < 0)
        return bad(r, "cannot open attribute 'sources_sha256'");
    ptq_status st = ds_h5_read_strings(r->ctx, a, 1, "attribute 'sources_sha256'", &shas, &n_shas);
    H5Aclose(a);
    if (st != PTQ_OK)
        return st;
    for (int i = 0; i < n_shas && st == PTQ_OK; i++)
        if (shas[i][0] && (strlen(shas[i]) != 64 || strspn(shas[i], "0123456789abcdef") != 64))
            st = off(r, "a 'sources_sha256' entry is not 64 lowercase hex digits");
    if (st == PTQ_OK && n_shas != n)
        st = off(r, "'sources_sha256' and 'sources' differ in length");
    if (st != PTQ_OK) {
        ds_strings_free(shas, n_shas);
        return st;
    }
    *out = shas;
    return PTQ_OK;
}

static ptq_status read_samples(h5f *r, ptq_calib_set *s, int64_t n_samples)
{
    ptq_status st = PTQ_OK;
    char **names = NULL, **shas = NULL;
    int n_names = 0;
    hid_t a = H5Aopen(r->file, "sources", H5P_DEFAULT);
    if (a < 0)
        return bad(r, "no 'sources' attribute");
    st = ds_h5_read_strings(r->ctx, a, 1, "attribute 'sources'", &names, &n_names);
    H5Aclose(a);
    if (st == PTQ_OK && n_names > PTQ_CALIB_MAX_SOURCES) { /* before the matching, quadratic in their number */
        char why[160];
        snprintf(why, sizeof why, "attribute 'sources' lists %d data sets, more than the %d an archive may record",
                 n_names, PTQ_CALIB_MAX_SOURCES);
        st = off(r, why);
    }
    if (st == PTQ_OK)
        st = read_source_hashes(r, n_names, &shas);
    if (st != PTQ_OK) {
        ds_strings_free(names, n_names);
        return st;
    }
    int32_t *src = malloc(((size_t)n_samples + 1) * sizeof *src);
    int64_t *ids = malloc(((size_t)n_samples + 1) * sizeof *ids);
    const int64_t dims[1] = {n_samples};
    if (!src || !ids) {
        st = ptq_fail(r->ctx, PTQ_ERR_NOMEM, "out of memory for %lld sample ids", (long long)n_samples);
        goto done;
    }
    PTQ_TRY(st, read_exact(r, "samples/source", H5T_NATIVE_INT32, 1, dims, src), done);
    PTQ_TRY(st, read_exact(r, "samples/id", H5T_NATIVE_INT64, 1, dims, ids), done);
    for (int64_t i = 0, lo = 0, hi; i < n_names; i++, lo = hi) { /* unordered sources fail below */
        while (lo < n_samples && src[lo] < i)
            lo++;
        for (hi = lo; hi < n_samples && src[hi] == i;)
            hi++;
        st = calib_set_add_source(r->ctx, s, names[i], shas ? shas[i] : NULL, ids + lo, hi - lo);
        if (st == PTQ_ERR_DATA) {
            char why[PTQ_MSG_BYTES];
            snprintf(why, sizeof why, "%s", r->ctx->msg);
            st = off(r, why);
        }
        if (st != PTQ_OK)
            goto done;
    }
    for (int64_t k = 0; k < n_samples; k++)
        if (src[k] < 0 || src[k] >= n_names || (k > 0 && src[k] < src[k - 1])) {
            st = ptq_fail(r->ctx, PTQ_ERR_FORMAT, "%s: samples/source[%lld] = %d is not a source index in order",
                          r->path, (long long)k, (int)src[k]);
            goto done;
        }
done:
    ds_strings_free(names, n_names);
    ds_strings_free(shas, shas ? n_names : 0);
    free(src);
    free(ids);
    return st;
}

/* tensors/hist is [n, n_bins] (checked before observers of n_bins are made for it). */
static ptq_status hist_shape_ok(h5f *r, int64_t n, int64_t n_bins)
{
    hid_t d = H5Dopen2(r->file, "tensors/hist", H5P_DEFAULT);
    hid_t space = d < 0 ? -1 : H5Dget_space(d);
    hsize_t got[2] = {0, 0};
    int ok = space >= 0 && H5Sget_simple_extent_ndims(space) == 2 && H5Sget_simple_extent_dims(space, got, NULL) == 2 &&
             got[0] == (hsize_t)n && got[1] == (hsize_t)n_bins;
    if (space >= 0)
        H5Sclose(space);
    if (d >= 0)
        H5Dclose(d);
    return ok ? PTQ_OK : bad(r, "'tensors/hist' is missing or not [tensors, n_bins]");
}

static ptq_status read_tensors(h5f *r, ptq_calib_set *s)
{
    ptq_status st = PTQ_OK;
    stat_cols c = {0};
    int64_t *hist = malloc((size_t)s->n_bins * sizeof *hist);
    hid_t d = -1, mspace = -1, fspace = -1;
    if (!hist || !stat_cols_alloc(&c, s->n)) {
        st = ptq_fail(r->ctx, PTQ_ERR_NOMEM, "out of memory");
        goto done;
    }
    const int64_t dims[1] = {s->n};
    static const char *const i64_keys[] = {"tensors/count", "tensors/n_zero", "tensors/n_nan", "tensors/n_inf",
                                           "tensors/n_binned"};
    int64_t *i64_cols[] = {c.count, c.n_zero, c.n_nan, c.n_inf, c.n_binned};
    for (int k = 0; k < 5; k++)
        PTQ_TRY(st, read_exact(r, i64_keys[k], H5T_NATIVE_INT64, 1, dims, i64_cols[k]), done);
    PTQ_TRY(st, read_exact(r, "tensors/min", H5T_NATIVE_FLOAT, 1, dims, c.min), done);
    PTQ_TRY(st, read_exact(r, "tensors/max", H5T_NATIVE_FLOAT, 1, dims, c.max), done);
    PTQ_TRY(st, read_exact(r, "tensors/exponent", H5T_NATIVE_INT32, 1, dims, c.exponent), done);
    d = H5Dopen2(r->file, "tensors/hist", H5P_DEFAULT);
    fspace = d < 0 ? -1 : H5Dget_space(d);
    hsize_t got[2] = {0, 0}, row[2] = {1, (hsize_t)s->n_bins};
    if (fspace < 0 || H5Sget_simple_extent_ndims(fspace) != 2 || H5Sget_simple_extent_dims(fspace, got, NULL) != 2 ||
        got[0] != (hsize_t)s->n || got[1] != (hsize_t)s->n_bins) {
        st = bad(r, "'tensors/hist' is missing or not [tensors, n_bins]");
        goto done;
    }
    mspace = H5Screate_simple(2, row, NULL);
    for (int64_t i = 0; i < s->n; i++) {
        hsize_t start[2] = {(hsize_t)i, 0};
        if (mspace < 0 || H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, row, NULL) < 0 ||
            H5Dread(d, H5T_NATIVE_INT64, mspace, fspace, H5P_DEFAULT, hist) < 0) {
            st = bad(r, "cannot read 'tensors/hist' (a chunk that is corrupt or would decompress past the memory "
                        "limit, or no zstd filter 32015)");
            goto done;
        }
        ptq_observer_stats os = {c.count[i], c.n_zero[i], c.n_nan[i], c.n_inf[i], c.n_binned[i], c.min[i], c.max[i]};
        st = ptq_observer_set_state(r->ctx, s->obs[i], &os, c.exponent[i], hist);
        if (st != PTQ_OK) {
            char why[PTQ_MSG_BYTES];
            snprintf(why, sizeof why, "%s", r->ctx->msg);
            ptq_fail(r->ctx, st, "%s, tensor '%s': %s", r->path, s->names[i], why);
            goto done;
        }
    }
done:
    if (mspace >= 0)
        H5Sclose(mspace);
    if (fspace >= 0)
        H5Sclose(fspace);
    if (d >= 0)
        H5Dclose(d);
    free(hist);
    stat_cols_free(&c);
    return st;
}

/* A few KiB of HDF5 can declare millions of tensors or samples (chunks never
 * written read as zeros): what the archive declares must fit what its file
 * could hold, and what reading it allocates must fit the memory limit. */
static ptq_status declared_fits(h5f *r, int64_t n_tensors, int64_t n_bins, int64_t n_samples)
{
    struct stat sb;
    const double hist_bytes = (double)n_tensors * (double)n_bins * 8, ids_bytes = (double)n_samples * 12;
    if (stat(r->path, &sb) == 0 && hist_bytes + ids_bytes > (double)sb.st_size * DS_H5_MAX_COMPRESSION) {
        char what[200];
        snprintf(what, sizeof what, "it declares %lld tensors of %lld bins and %lld samples in %lld bytes",
                 (long long)n_tensors, (long long)n_bins, (long long)n_samples, (long long)sb.st_size);
        return off(r, what);
    }
    /* observers (histogram + names), sample ids and the reading's scratch copy */
    const double need = (double)n_tensors * ((double)n_bins * 8 * 2 + 512) + (double)n_samples * 32;
    return ptq_memory_check(r->ctx, need >= 1.8e19 ? UINT64_MAX : (uint64_t)need, "reading the calibration archive");
}

ptq_status ptq_calib_set_read(ptq_ctx *ctx, const char *path, ptq_calib_set **out)
{
    ptq_status st = PTQ_OK;
    ptq_calib_set *s = NULL;
    char *format = NULL, *sha = NULL, *hash_stored = NULL;
    int64_t version = 0, n_bins = 0, n_tensors = 0, n_samples = 0, n_samples_attr = 0;
    ds_h5_quiet q;
    *out = NULL;
    PTQ_TRY_RET(ptq_h5_register_zstd(ctx));
    PTQ_TRY_RET(ptq_file_check_regular(ctx, path));
    PTQ_TRY_RET(ds_h5_vet(ctx, path, 1));
    ds_h5_quiet_begin(&q);
    h5f r = {ctx, H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), path};
    if (r.file < 0) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "%s is not an HDF5 file", path);
        goto done;
    }
    PTQ_TRY(st, ds_h5_check_self_contained(ctx, r.file, path, "a ptq calibration archive never does"), done);
    PTQ_TRY(st, read_attr_str(&r, "format", &format), done);
    if (strcmp(format, ARCHIVE_FORMAT) != 0) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "%s is an HDF5 file but not a ptq calibration archive (format '%s')", path,
                      format);
        goto done;
    }
    PTQ_TRY(st, read_attr_i64(&r, "format_version", &version), done);
    if (version != PTQ_CALIB_ARCHIVE_VERSION) {
        st = ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "%s is a version %lld calibration archive; this ptq reads version %d",
                      path, (long long)version, PTQ_CALIB_ARCHIVE_VERSION);
        goto done;
    }
    PTQ_TRY(st, read_attr_i64(&r, "n_bins", &n_bins), done);
    PTQ_TRY(st, dataset_len(&r, "tensors/name", &n_tensors), done);
    PTQ_TRY(st, dataset_len(&r, "samples/id", &n_samples), done);
    /* what ptq_observer_init takes, less its 0 for the default; before observers of n_bins are made */
    if (n_bins < PTQ_OBSERVER_MIN_BINS || n_bins > PTQ_OBSERVER_MAX_BINS || (n_bins & (n_bins - 1)) != 0) {
        char what[160];
        snprintf(what, sizeof what, "n_bins %lld is not a power of two in [%d, %d]", (long long)n_bins,
                 PTQ_OBSERVER_MIN_BINS, PTQ_OBSERVER_MAX_BINS);
        st = off(&r, what);
        goto done;
    }
    if (n_tensors == 0) {
        st = off(&r, "it holds no tensor");
        goto done;
    }
    PTQ_TRY(st, hist_shape_ok(&r, n_tensors, n_bins), done);
    PTQ_TRY(st, declared_fits(&r, n_tensors, n_bins, n_samples), done);
    PTQ_TRY(st, calib_set_alloc(ctx, n_tensors, n_bins, &s), done);
    free(s->ptq_version);
    s->ptq_version = NULL;
    PTQ_TRY(st, read_attr_str(&r, "ptq_version", &s->ptq_version), done);
    PTQ_TRY(st, read_attr_str(&r, "model_sha256", &sha), done);
    if (strlen(sha) != 64 || strspn(sha, "0123456789abcdef") != 64) {
        st = off(&r, "model_sha256 is not 64 lowercase hex digits");
        goto done;
    }
    memcpy(s->model_sha256, sha, 65);
    free(s->model_name);
    free(s->preprocess);
    free(s->selection);
    s->model_name = s->preprocess = s->selection = NULL;
    PTQ_TRY(st, read_attr_str(&r, "model_name", &s->model_name), done);
    PTQ_TRY(st, read_attr_str(&r, "preprocess", &s->preprocess), done);
    PTQ_TRY(st, read_attr_str(&r, "selection", &s->selection), done);
    if (H5Aexists(r.file, "math") > 0) {
        char *math = NULL;
        PTQ_TRY(st, read_attr_str(&r, "math", &math), done);
        const int known = strcmp(math, "tf32") == 0 || strcmp(math, "fp64") == 0;
        if (known)
            snprintf(s->math, sizeof s->math, "%s", math);
        free(math);
        if (!known) {
            st = off(&r, "its 'math' attribute is neither tf32 nor fp64 (fp32 archives have none)");
            goto done;
        }
    }
    PTQ_TRY(st, read_attr_i64(&r, "n_samples", &n_samples_attr), done);
    PTQ_TRY(st, read_attr_str(&r, "sample_ids_sha256", &hash_stored), done);
    PTQ_TRY(st, read_samples(&r, s, n_samples), done);
    char hash[65];
    int64_t n_counted;
    calib_sample_hash(s, hash, &n_counted);
    if (n_counted != n_samples_attr || strcmp(hash, hash_stored) != 0) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "%s: the sample ids do not match the recorded count/SHA-256 (%lld, %s)", path,
                      (long long)n_samples_attr, hash_stored);
        goto done;
    }
    PTQ_TRY(st, read_names(&r, s), done);
    PTQ_TRY(st, read_tensors(&r, s), done);
    *out = s;
    s = NULL;
done:
    if (r.file >= 0)
        H5Fclose(r.file);
    ds_h5_quiet_end(&q);
    free(format);
    free(sha);
    free(hash_stored);
    ptq_calib_set_free(s);
    return st;
}
