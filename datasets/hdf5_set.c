/* HDF5 image sets: images uint8/float32 as [N,H,W], [N,H,W,C] or [N,C,H,W]
 * and integer labels [N], read a hyperslab of a few MiB at a time so only
 * the requested samples come off disk; and sets of named arrays (token ids,
 * masks) read as stored. Covered by tests/test_datasets.c,
 * tests/datasets_test.py, tests/test_named_inputs.c and
 * tests/named_inputs_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/parallel.h"
#include "datasets/datasets_internal.h"

#define READ_PIECE_BYTES ((size_t)16 << 20) /* scratch bound per hyperslab read */
#define CHUNK_CACHE_MAX_BYTES ((size_t)32 << 20) /* chunk cache: two chunks, at most this */
#define SAMPLE_MAX_BYTES ((uint64_t)1 << 31) /* largest image of one sample ptq reads */

/* Bytes of two chunks of dataset key (at most CHUNK_CACHE_MAX_BYTES; HDF5's
 * default 1 MiB when it is not chunked or cannot be asked). */
static size_t images_chunk_cache_bytes(hid_t file, const char *key)
{
    size_t bytes = (size_t)1 << 20;
    hid_t d = H5Dopen2(file, key, H5P_DEFAULT);
    hid_t dcpl = d >= 0 ? H5Dget_create_plist(d) : -1;
    hid_t type = d >= 0 ? H5Dget_type(d) : -1;
    hsize_t chunk[PTQ_MAX_DIMS];
    int rank = dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED ? H5Pget_chunk(dcpl, PTQ_MAX_DIMS, chunk) : -1;
    if (rank > 0 && rank <= PTQ_MAX_DIMS && type >= 0) { /* H5Pget_chunk returns the rank, fills at most chunk[] */
        double chunk_bytes = (double)H5Tget_size(type);
        for (int i = 0; i < rank; i++)
            chunk_bytes *= (double)chunk[i];
        bytes = 2 * chunk_bytes < (double)CHUNK_CACHE_MAX_BYTES ? (size_t)(2 * chunk_bytes) : CHUNK_CACHE_MAX_BYTES;
        if (bytes < ((size_t)1 << 20))
            bytes = (size_t)1 << 20;
    }
    if (type >= 0)
        H5Tclose(type);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (d >= 0)
        H5Dclose(d);
    return bytes;
}

struct ds_hdf5 {
    hid_t file, images, labels; /* labels < 0: unlabelled; images < 0 in a set of arrays */
    hid_t *arrays;              /* [n_arrays] (ptq_dataset_open_arrays) */
    int n_arrays;
    char *images_key, *labels_key;
    ptq_dtype dtype;            /* PTQ_DT_UINT8 or PTQ_DT_FLOAT */
    int rank;
    hsize_t dims[4];            /* images' stored shape */
    int labels_rank;            /* 1: [N]; 2: [N,1] */
    int planar;                 /* 1: [N,C,H,W] */
    size_t sample_bytes;
    void *scratch;              /* read_piece samples of sample_bytes */
    size_t scratch_cap;
    char **ext_files;           /* [n_ext_files] the other files it reads (allow_external_data), for its hash */
    int n_ext_files;
};

void ds_hdf5_free(ds_hdf5 *h)
{
    if (!h)
        return;
    ds_h5_quiet q;
    ds_h5_quiet_begin(&q);
    if (h->labels >= 0)
        H5Dclose(h->labels);
    for (int i = 0; i < h->n_arrays; i++)
        if (h->arrays[i] >= 0)
            H5Dclose(h->arrays[i]);
    free(h->arrays);
    if (h->images >= 0)
        H5Dclose(h->images);
    if (h->file >= 0)
        H5Fclose(h->file);
    ds_h5_quiet_end(&q);
    free(h->images_key);
    free(h->labels_key);
    free(h->scratch);
    ptq_dataset_files_free(h->ext_files, h->n_ext_files);
    free(h);
}

ptq_status ds_hdf5_content_sha256(ptq_ctx *ctx, const ptq_dataset *ds, char hex[65])
{
    return ds_h5_content_sha256(ctx, ds->path, ds->h5->ext_files, ds->h5->n_ext_files, hex);
}

/* "images, labels, meta": the root's link names, for "no dataset" messages. */
static void list_root(hid_t file, char *buf, size_t n_buf)
{
    H5G_info_t info;
    size_t used = 0;
    snprintf(buf, n_buf, "nothing"); /* a file with no datasets (it has: nothing) */
    if (H5Gget_info(file, &info) < 0)
        return;
    for (hsize_t i = 0; i < info.nlinks && used + 1 < n_buf; i++) {
        char name[128], esc[160]; /* a name from the file, escaped for the terminal */
        if (H5Lget_name_by_idx(file, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name, H5P_DEFAULT) < 0)
            break;
        int w = snprintf(buf + used, n_buf - used, "%s%s", i ? ", " : "", ptq_escape(name, esc, sizeof esc));
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

int ds_h5_exists(hid_t file, const char *key)
{
    char part[1024];
    size_t len = strlen(key);
    if (len == 0 || len >= sizeof part)
        return 0;
    for (size_t i = 1; i <= len; i++)
        if (key[i] == '/' || key[i] == '\0') {
            memcpy(part, key, i);
            part[i] = '\0';
            if (H5Lexists(file, part, H5P_DEFAULT) <= 0)
                return 0;
        }
    return H5Oexists_by_name(file, key, H5P_DEFAULT) > 0;
}

/* PTQ_OK unless key (the given one, else each candidate) is a link whose
 * target cannot be reached: then what it points to (an external link's
 * file, a soft link's path), so a missing file is not called a missing
 * dataset. */
static ptq_status check_dangling(ptq_ctx *ctx, hid_t file, const char *given, const char *const *candidates,
                                 const char *path)
{
    for (int i = 0; given ? i == 0 : candidates[i] != NULL; i++) {
        const char *key = given ? given : candidates[i];
        H5L_info_t info;
        if (strchr(key, '/') || H5Lexists(file, key, H5P_DEFAULT) <= 0 ||
            H5Oexists_by_name(file, key, H5P_DEFAULT) > 0 || H5Lget_info(file, key, &info, H5P_DEFAULT) < 0)
            continue;
        char val[1024] = "";
        const char *target_file = NULL, *target_obj = NULL;
        unsigned flags = 0;
        if (info.type == H5L_TYPE_SOFT && info.u.val_size <= sizeof val &&
            H5Lget_val(file, key, val, sizeof val, H5P_DEFAULT) >= 0)
            return ptq_fail(ctx, PTQ_ERR_DATA, "'%s' in %s is a soft link to %.*s, which is not there", key, path,
                            (int)sizeof val, val);
        if (info.type == H5L_TYPE_EXTERNAL && info.u.val_size <= sizeof val &&
            H5Lget_val(file, key, val, sizeof val, H5P_DEFAULT) >= 0 &&
            H5Lunpack_elink_val(val, info.u.val_size, &flags, &target_file, &target_obj) >= 0)
            return ptq_fail(ctx, PTQ_ERR_IO, "'%s' in %s is an external link to %s:%s, which cannot be opened (a "
                            "missing or unreadable file, or no such object in it)", key, path, target_file,
                            target_obj);
    }
    return PTQ_OK;
}

/* Picks the given key or the first candidate present; NULL when none. */
static const char *find_key(hid_t file, const char *given, const char *const *candidates)
{
    if (given)
        return ds_h5_exists(file, given) ? given : NULL;
    for (int i = 0; candidates[i]; i++)
        if (ds_h5_exists(file, candidates[i]))
            return candidates[i];
    return NULL;
}

static void type_name(hid_t t, char *buf, size_t n)
{
    H5T_class_t cls = H5Tget_class(t);
    size_t bits = H5Tget_size(t) * 8;
    if (cls == H5T_INTEGER)
        snprintf(buf, n, "%sint%zu", H5Tget_sign(t) == H5T_SGN_NONE ? "u" : "", bits);
    else if (cls == H5T_FLOAT)
        snprintf(buf, n, "float%zu", bits);
    else if (cls == H5T_STRING)
        snprintf(buf, n, "strings");
    else
        snprintf(buf, n, "a compound or other non-numeric type");
}

static void shape_str(const hsize_t *dims, int rank, char *buf, size_t n)
{
    int64_t d[PTQ_MAX_DIMS];
    for (int i = 0; i < rank && i < PTQ_MAX_DIMS; i++)
        d[i] = (int64_t)dims[i];
    ptq_dims_str(d, rank < PTQ_MAX_DIMS ? rank : PTQ_MAX_DIMS, buf, n);
}

static int channels_like(hsize_t d)
{
    return d == 1 || d == 3 || d == 4;
}

/* Whether reading [N,H,W,C] (nhwc) or [N,C,H,W] fits the model input opts->fit_*: 2 its size (a size not
 * known to the caller fits), 1 its channels only, 0 neither. */
static int layout_fit(const hsize_t *d, int nhwc, const ptq_dataset_opts *opts)
{
    hsize_t hh = nhwc ? d[1] : d[2], ww = nhwc ? d[2] : d[3], cc = nhwc ? d[3] : d[1];
    if ((opts->fit_height <= 0 || hh == (hsize_t)opts->fit_height) &&
        (opts->fit_width <= 0 || ww == (hsize_t)opts->fit_width) && (opts->fit_height > 0 || opts->fit_width > 0))
        return 2;
    return opts->fit_channels > 0 && cc == (hsize_t)opts->fit_channels;
}

/* The layout of a rank-4 set no flag names: where both ends could be channels, the reading that fits the model
 * (opts->fit_*), else 1 or 3 channels rather than RGBA ([N,3,4,4] is NCHW), else NHWC, with a note saying so. */
static const char *guess_layout(ptq_dataset *ds, const ds_hdf5 *h, const ptq_dataset_opts *opts, const char *shape)
{
    const hsize_t *d = h->dims;
    if (!channels_like(d[1]))
        return channels_like(d[3]) ? "NHWC" : NULL;
    if (!channels_like(d[3]))
        return "NCHW";
    const char *guess = d[3] == 4 && d[1] != 4 ? "NCHW" : "NHWC", *other = guess[1] == 'H' ? "NCHW" : "NHWC";
    if (d[1] == 1 && d[2] == 1 && d[3] == 1)
        return guess; /* [N,1,1,1]: one gray pixel either way */
    int fit_nhwc = layout_fit(d, 1, opts), fit_nchw = layout_fit(d, 0, opts);
    if (fit_nhwc != fit_nchw)
        return fit_nhwc > fit_nchw ? "NHWC" : "NCHW";
    if (opts->fit_height > 0 || opts->fit_width > 0 || opts->fit_channels > 0)
        snprintf(ds->notes, sizeof ds->notes,
                 "images '%s' [%s] in %s fit the model input %s as NHWC %s as NCHW; read as %s (the guess for "
                 "that shape): give --layout %s if they are stored so\n",
                 h->images_key, shape, ds->path, fit_nhwc ? "alike" : "neither", fit_nhwc ? "and" : "nor", guess,
                 other);
    return guess;
}

/* Sets planar and the (height, width, channels) of ds from the layout. */
static ptq_status pick_layout(ptq_ctx *ctx, ptq_dataset *ds, ds_hdf5 *h, const ptq_dataset_opts *opts)
{
    const hsize_t *d = h->dims;
    const char *layout = opts->layout;
    char shape[96];
    shape_str(d, h->rank, shape, sizeof shape);
    if (!layout) {
        layout = h->rank == 3 ? "NHW" : guess_layout(ds, h, opts, shape);
        if (!layout)
            return ptq_fail(ctx, PTQ_ERR_FORMAT,
                            "cannot guess the layout of images '%s' [%s] in %s: give NHW, NHWC or NCHW",
                            h->images_key, shape, ds->path);
    }
    int want_rank = !strcmp(layout, "NHW") ? 3 : (!strcmp(layout, "NHWC") || !strcmp(layout, "NCHW")) ? 4 : 0;
    if (!want_rank)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "unknown image layout '%s' (NHW, NHWC or NCHW)", layout);
    if (want_rank != h->rank)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "layout %s does not fit images '%s' [%s] in %s", layout,
                        h->images_key, shape, ds->path);
    h->planar = !strcmp(layout, "NCHW");
    hsize_t hh = h->planar ? d[2] : d[1], ww = h->planar ? d[3] : d[2];
    hsize_t cc = h->rank == 3 ? 1 : h->planar ? d[1] : d[3];
    if (cc < 1 || cc > 4 || hh < 1 || ww < 1)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "images '%s' [%s] in %s as %s: need 1-4 channels and a non-empty image",
                        h->images_key, shape, ds->path, layout);
    /* Sparse or chunked files can declare any shape in a few KiB; bound one
     * sample before any size_t arithmetic on it (read_piece divides by it). */
    uint64_t bytes = 0;
    if (__builtin_mul_overflow((uint64_t)hh, (uint64_t)ww, &bytes) ||
        __builtin_mul_overflow(bytes, (uint64_t)cc, &bytes) ||
        __builtin_mul_overflow(bytes, (uint64_t)ptq_dtype_size(h->dtype), &bytes) || bytes > SAMPLE_MAX_BYTES)
        return ptq_fail(ctx, PTQ_ERR_FORMAT,
                        "images '%s' [%s] in %s as %s: one image would take over %llu bytes; ptq reads smaller images",
                        h->images_key, shape, ds->path, layout, (unsigned long long)SAMPLE_MAX_BYTES);
    ds->height = (int64_t)hh;
    ds->width = (int64_t)ww;
    ds->channels = (int64_t)cc;
    h->sample_bytes = (size_t)bytes;
    return PTQ_OK;
}

static ptq_status open_images(ptq_ctx *ctx, ptq_dataset *ds, ds_hdf5 *h, const ptq_dataset_opts *opts)
{
    static const char *const candidates[] = {"images", "x", "data", "X", NULL};
    char names[512], why[256], tname[64];
    const char *key = find_key(h->file, opts->images_key, candidates);
    if (!key) {
        PTQ_TRY_RET(check_dangling(ctx, h->file, opts->images_key, candidates, ds->path));
        list_root(h->file, names, sizeof names);
        if (opts->images_key)
            return ptq_fail(ctx, PTQ_ERR_DATA, "no images dataset '%s' in %s (it has: %s)", opts->images_key,
                            ds->path, names);
        return ptq_fail(ctx, PTQ_ERR_DATA, "no images dataset in %s (looked for images, x, data, X; it has: %s)",
                        ds->path, names);
    }
    if (!(h->images_key = strdup(key)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "opening %s: out of memory", ds->path);
    /* samples are read in ascending runs, so a chunk is done with once the
     * reads pass it: the cache holds two chunks (a read may straddle them),
     * not more, and memory stays the same however many samples are read */
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    if (dapl >= 0)
        H5Pset_chunk_cache(dapl, 12421, images_chunk_cache_bytes(h->file, key), 0.75);
    h->images = H5Dopen2(h->file, key, dapl >= 0 ? dapl : H5P_DEFAULT);
    if (h->images < 0)
        ds_h5_error(why, sizeof why);
    if (dapl >= 0)
        H5Pclose(dapl);
    if (h->images < 0)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "images '%s' in %s is not a readable dataset: %s", key, ds->path, why);
    PTQ_TRY_RET(ds_h5_check_filters(ctx, h->images, key, ds->path));
    PTQ_TRY_RET(ds_h5_check_sources(ctx, h->images, key, ds->path));
    PTQ_TRY_RET(ds_h5_check_chunk(ctx, h->images, "a chunk of the images", ds->path));

    hid_t type = H5Dget_type(h->images);
    hid_t space = H5Dget_space(h->images);
    int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    if (rank >= 3 && rank <= 4)
        H5Sget_simple_extent_dims(space, h->dims, NULL);
    h->rank = rank;
    H5T_class_t cls = H5Tget_class(type);
    size_t size = H5Tget_size(type);
    if (cls == H5T_INTEGER && size == 1 && H5Tget_sign(type) == H5T_SGN_NONE)
        h->dtype = PTQ_DT_UINT8;
    else if (cls == H5T_FLOAT && size == 4)
        h->dtype = PTQ_DT_FLOAT;
    type_name(type, tname, sizeof tname);
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    if (h->dtype == PTQ_DT_UNDEFINED)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "images '%s' in %s are %s; ptq reads uint8 or float32 images", key,
                        ds->path, tname);
    if (rank < 3 || rank > 4)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "images '%s' in %s have rank %d; expected [N,H,W], [N,H,W,C] or [N,C,H,W]",
                        key, ds->path, rank);
    ptq_status st = pick_layout(ctx, ds, h, opts);
    if (st != PTQ_OK)
        return st;
    if (h->dims[0] > (hsize_t)INT64_MAX)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "images '%s' in %s declare %llu images; too many to index", key,
                        ds->path, (unsigned long long)h->dims[0]);
    ds->count = (int64_t)h->dims[0];
    if (ds->count == 0)
        return ptq_fail(ctx, PTQ_ERR_DATA, "no images in %s ('%s' is empty)", ds->path, key);
    /* a few KiB can declare billions of images (chunks never written read as
     * fill values): what is declared must fit what the file could hold */
    struct stat sb;
    double declared = (double)ds->count * (double)h->sample_bytes;
    if (stat(ds->path, &sb) == 0 && declared > (double)sb.st_size * DS_H5_MAX_COMPRESSION)
        return ptq_fail(ctx, PTQ_ERR_FORMAT,
                        "images '%s' in %s declare %lld images (%.3g bytes) in a file of %lld bytes: more than "
                        "any compression could hold; a truncated or forged file",
                        key, ds->path, (long long)ds->count, declared, (long long)sb.st_size);
    return PTQ_OK;
}

static ptq_status open_labels(ptq_ctx *ctx, ptq_dataset *ds, ds_hdf5 *h, const ptq_dataset_opts *opts)
{
    static const char *const candidates[] = {"labels", "y", "Y", "targets", NULL};
    char names[512], why[256], tname[64], shape[96];
    hsize_t dims[2] = {0, 0};
    const char *key = find_key(h->file, opts->labels_key, candidates);
    if (!key) {
        PTQ_TRY_RET(check_dangling(ctx, h->file, opts->labels_key, candidates, ds->path));
        if (!opts->labels_key)
            return PTQ_OK; /* an unlabelled set, fine for calibration */
        list_root(h->file, names, sizeof names);
        return ptq_fail(ctx, PTQ_ERR_DATA, "no labels dataset '%s' in %s (it has: %s)", opts->labels_key, ds->path,
                        names);
    }
    if (!(h->labels_key = strdup(key)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "opening %s: out of memory", ds->path);
    h->labels = H5Dopen2(h->file, key, H5P_DEFAULT);
    if (h->labels < 0)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "labels '%s' in %s is not a readable dataset: %s", key, ds->path,
                        ds_h5_error(why, sizeof why));
    PTQ_TRY_RET(ds_h5_check_filters(ctx, h->labels, key, ds->path));
    PTQ_TRY_RET(ds_h5_check_sources(ctx, h->labels, key, ds->path));
    PTQ_TRY_RET(ds_h5_check_chunk(ctx, h->labels, "a chunk of the labels", ds->path));
    hid_t type = H5Dget_type(h->labels);
    hid_t space = H5Dget_space(h->labels);
    int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    if (rank >= 1 && rank <= 2)
        H5Sget_simple_extent_dims(space, dims, NULL);
    /* an integer type may declare any width; libhdf5 then sizes its buffers by it */
    int is_int = H5Tget_class(type) == H5T_INTEGER && H5Tget_size(type) <= 8;
    type_name(type, tname, sizeof tname);
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    if (!is_int)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "labels '%s' in %s are %s; ptq reads integer labels of 8 to 64 bits", key, ds->path,
                        tname);
    shape_str(dims, rank, shape, sizeof shape);
    if (rank < 1 || rank > 2 || (rank == 2 && dims[1] != 1))
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "labels '%s' in %s have shape [%s]; expected [N] or [N,1]", key,
                        ds->path, shape);
    h->labels_rank = rank;
    if ((int64_t)dims[0] != ds->count && h->images_key)
        return ptq_fail(ctx, PTQ_ERR_DATA, "labels '%s' in %s has %lld entries for %lld images in '%s'", key,
                        ds->path, (long long)dims[0], (long long)ds->count, h->images_key);
    if ((int64_t)dims[0] != ds->count)
        return ptq_fail(ctx, PTQ_ERR_DATA, "labels '%s' in %s has %lld entries for %lld samples in '%s'", key,
                        ds->path, (long long)dims[0], (long long)ds->count, ds->arrays[0].key);
    ds->has_labels = 1;
    return PTQ_OK;
}

static ptq_status read_class_names(ptq_ctx *ctx, ptq_dataset *ds, ds_hdf5 *h, int *scalar);
static int select_samples(hid_t dset, int rank, const hsize_t *dims, int64_t start, int64_t n, hid_t *fspace,
                          hid_t *mspace);
static void close_spaces(hid_t fspace, hid_t mspace);

/* One class_names string "cat, dog,bird" (as some writers store a list)
 * becomes the list {"cat", "dog", "bird"}, each name trimmed; an empty
 * name fails, naming what. */
static ptq_status split_joined_names(ptq_ctx *ctx, ptq_dataset *ds, const char *what)
{
    const char *joined = ds->class_names[0];
    int n = 1;
    for (const char *c = joined; *c; c++)
        n += *c == ',';
    char **names = calloc((size_t)n + 1, sizeof *names);
    if (!names)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "reading %s: out of memory", what);
    const char *tok = joined;
    for (int i = 0; i < n; i++) {
        const char *end = strchr(tok, ',');
        if (!end)
            end = tok + strlen(tok);
        const char *a = tok, *b = end;
        while (a < b && isspace((unsigned char)*a))
            a++;
        while (b > a && isspace((unsigned char)b[-1]))
            b--;
        if (a == b || !(names[i] = strndup(a, (size_t)(b - a)))) {
            ds_strings_free(names, n);
            return a == b ? ptq_fail(ctx, PTQ_ERR_FORMAT, "%s is one comma-joined string with an empty name %d", what, i)
                          : ptq_fail(ctx, PTQ_ERR_NOMEM, "reading %s: out of memory", what);
        }
        tok = *end ? end + 1 : end;
    }
    ds_strings_free(ds->class_names, ds->n_classes);
    ds->class_names = names;
    ds->n_classes = n;
    return PTQ_OK;
}

/* class_names: root attribute, images attribute or root dataset; one
 * comma-joined string (a scalar, as h5py stores a str) is read as the list it
 * joins. An array of one string is one name, commas and all: that is how a
 * one-class folder named "cats, dogs" comes out of data convert. */
static ptq_status open_class_names(ptq_ctx *ctx, ptq_dataset *ds, ds_hdf5 *h)
{
    int scalar = 0;
    ptq_status st = read_class_names(ctx, ds, h, &scalar);
    if (st == PTQ_OK && scalar && ds->n_classes == 1 && ds->class_names && strchr(ds->class_names[0], ','))
        st = split_joined_names(ctx, ds, ds->path);
    return st;
}

/* Samples checked for the stored value range of float images: enough to
 * tell 0..1 from 0..255 data, cheap to read at open. */
#define RANGE_PROBE_SAMPLES 256

/* Float images: the min and max of the first samples (at most
 * RANGE_PROBE_SAMPLES and 16 MiB), for ptq_dataset_value_range. */
static ptq_status probe_float_range(ptq_ctx *ctx, ptq_dataset *ds, ds_hdf5 *h)
{
    if (h->dtype != PTQ_DT_FLOAT || h->sample_bytes > READ_PIECE_BYTES) /* huge samples: range left unknown */
        return PTQ_OK;
    int64_t m = (int64_t)(READ_PIECE_BYTES / h->sample_bytes);
    if (m < 1)
        m = 1;
    if (m > RANGE_PROBE_SAMPLES)
        m = RANGE_PROBE_SAMPLES;
    if (m > ds->count)
        m = ds->count;
    size_t n_floats = (size_t)m * h->sample_bytes / sizeof(float);
    float *buf = malloc((size_t)m * h->sample_bytes);
    if (!buf)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "reading %s: out of memory", ds->path);
    hid_t fspace, mspace;
    char why[256];
    int ok = select_samples(h->images, h->rank, h->dims, 0, m, &fspace, &mspace) &&
             H5Dread(h->images, H5T_NATIVE_FLOAT, mspace, fspace, H5P_DEFAULT, buf) >= 0;
    if (!ok)
        ds_h5_error(why, sizeof why);
    close_spaces(fspace, mspace);
    if (!ok) {
        free(buf);
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "cannot read images 0..%lld of '%s' in %s: %s", (long long)(m - 1),
                        h->images_key, ds->path, why);
    }
    ptq_value_range *r = &ds->range;
    int have = 0;
    for (size_t i = 0; i < n_floats; i++) { /* NaN and Inf are counted, left to the model, and decide nothing */
        const float v = buf[i];
        if (!isfinite(v)) {
            r->n_nonfinite++;
            continue;
        }
        r->lo = !have || v < r->lo ? v : r->lo;
        r->hi = !have || v > r->hi ? v : r->hi;
        r->n_above_one += v > 1.0f;
        have = 1;
    }
    free(buf);
    r->n_values = (int64_t)n_floats;
    r->n_samples = m;
    return PTQ_OK;
}

/* 1 when attribute (is_attr) or dataset obj holds one value, not an array. */
static int scalar_space(hid_t obj, int is_attr)
{
    hid_t space = is_attr ? H5Aget_space(obj) : H5Dget_space(obj);
    int scalar = space >= 0 && H5Sget_simple_extent_type(space) == H5S_SCALAR;
    if (space >= 0)
        H5Sclose(space);
    return scalar;
}

static ptq_status read_class_names(ptq_ctx *ctx, ptq_dataset *ds, ds_hdf5 *h, int *scalar)
{
    char what[600];
    ptq_status st = PTQ_OK;
    hid_t holders[2] = {h->file, h->images};
    for (int i = 0; i < 2; i++)
        if (holders[i] >= 0 && H5Aexists(holders[i], "class_names") > 0) {
            hid_t a = H5Aopen(holders[i], "class_names", H5P_DEFAULT);
            snprintf(what, sizeof what, "attribute class_names of %s in %s", i ? h->images_key : "/", ds->path);
            st = a < 0 ? ptq_fail(ctx, PTQ_ERR_FORMAT, "cannot open %s", what)
                       : ds_h5_read_strings(ctx, a, 1, what, &ds->class_names, &ds->n_classes);
            if (a >= 0) {
                *scalar = scalar_space(a, 1);
                H5Aclose(a);
            }
            return st;
        }
    if (ds_h5_exists(h->file, "class_names")) {
        hid_t d = H5Dopen2(h->file, "class_names", H5P_DEFAULT);
        snprintf(what, sizeof what, "dataset class_names in %s", ds->path);
        st = d < 0 ? ptq_fail(ctx, PTQ_ERR_FORMAT, "cannot open %s", what)
                   : ds_h5_read_strings(ctx, d, 0, what, &ds->class_names, &ds->n_classes);
        if (d >= 0) {
            *scalar = scalar_space(d, 0);
            H5Dclose(d);
        }
    }
    return st;
}

/* Opens ds->path into ds->h5 (errors quiet already), refusing a file that
 * refers to other files unless opts allows it. */
static ptq_status open_file(ptq_ctx *ctx, ptq_dataset *ds, const ptq_dataset_opts *opts)
{
    char why[256];
    PTQ_TRY_RET(ptq_h5_register_zstd(ctx));
    if (H5Fis_hdf5(ds->path) <= 0)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "%s is not an HDF5 file", ds->path);
    PTQ_TRY_RET(ds_h5_vet(ctx, ds->path, 0));
    ds_hdf5 *h = calloc(1, sizeof *h);
    if (!h)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "opening %s: out of memory", ds->path);
    h->file = h->images = h->labels = -1;
    ds->h5 = h;
    h->file = H5Fopen(ds->path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (h->file < 0) /* it was readable and has HDF5's signature: what fails is its content (truncated, corrupt) */
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "cannot open HDF5 file %s: %s", ds->path, ds_h5_error(why, sizeof why));
    if (!opts->allow_external_data)
        return ds_h5_check_self_contained(ctx, h->file, ds->path,
                                          "refusing to read it (allow it with --allow-external-data)");
    /* listed now, on the opening thread: the content hash runs beside the reads and covers them */
    return ds_h5_external_files(ctx, h->file, ds->path, &h->ext_files, &h->n_ext_files);
}

ptq_status ds_hdf5_open(ptq_ctx *ctx, ptq_dataset *ds, const ptq_dataset_opts *opts)
{
    ptq_status st = PTQ_OK;
    ds_h5_quiet q;
    ds_h5_quiet_begin(&q);
    PTQ_TRY(st, open_file(ctx, ds, opts), done);
    PTQ_TRY(st, open_images(ctx, ds, ds->h5, opts), done);
    PTQ_TRY(st, open_labels(ctx, ds, ds->h5, opts), done);
    PTQ_TRY(st, open_class_names(ctx, ds, ds->h5), done);
    PTQ_TRY(st, probe_float_range(ctx, ds, ds->h5), done);
done:
    ds_h5_quiet_end(&q);
    return st;
}

/* The ptq dtype of an array's stored type; PTQ_DT_UNDEFINED when ptq does
 * not read it (uint64, which int64 cannot hold, compounds, strings, other
 * enums than h5py's 1-byte bool). */
static ptq_dtype array_dtype(hid_t type)
{
    const H5T_class_t cls = H5Tget_class(type);
    const size_t size = H5Tget_size(type);
    if (cls == H5T_ENUM)
        return size == 1 ? PTQ_DT_BOOL : PTQ_DT_UNDEFINED;
    if (cls == H5T_FLOAT)
        return size == 2 ? PTQ_DT_FLOAT16 : size == 4 ? PTQ_DT_FLOAT : size == 8 ? PTQ_DT_DOUBLE : PTQ_DT_UNDEFINED;
    if (cls != H5T_INTEGER)
        return PTQ_DT_UNDEFINED;
    if (H5Tget_sign(type) == H5T_SGN_NONE)
        return size == 1 ? PTQ_DT_UINT8 : size == 2 ? PTQ_DT_UINT16 : size == 4 ? PTQ_DT_UINT32 : PTQ_DT_UNDEFINED;
    return size == 1 ? PTQ_DT_INT8 : size == 2 ? PTQ_DT_INT16 : size == 4 ? PTQ_DT_INT32 : size == 8 ? PTQ_DT_INT64
                                                                                               : PTQ_DT_UNDEFINED;
}

/* Array i of ds from dataset key: its dtype and shape checked against what
 * one sample may take and what the file could hold. */
static ptq_status open_array(ptq_ctx *ctx, ptq_dataset *ds, ds_hdf5 *h, int i, const char *key)
{
    ptq_dataset_array *a = &ds->arrays[i];
    char names[512], why[256], tname[64], shape[96];
    if (!ds_h5_exists(h->file, key)) {
        PTQ_TRY_RET(check_dangling(ctx, h->file, key, NULL, ds->path));
        list_root(h->file, names, sizeof names);
        return ptq_fail(ctx, PTQ_ERR_DATA, "no dataset '%s' in %s (it has: %s)", key, ds->path, names);
    }
    if (!(a->key = strdup(key)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "opening %s: out of memory", ds->path);
    h->arrays[i] = H5Dopen2(h->file, key, H5P_DEFAULT);
    if (h->arrays[i] < 0)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "'%s' in %s is not a readable dataset: %s", key, ds->path,
                        ds_h5_error(why, sizeof why));
    PTQ_TRY_RET(ds_h5_check_filters(ctx, h->arrays[i], key, ds->path));
    PTQ_TRY_RET(ds_h5_check_sources(ctx, h->arrays[i], key, ds->path));
    PTQ_TRY_RET(ds_h5_check_chunk(ctx, h->arrays[i], key, ds->path));
    hid_t type = H5Dget_type(h->arrays[i]), space = H5Dget_space(h->arrays[i]);
    hsize_t dims[PTQ_MAX_DIMS];
    const int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    if (rank >= 1 && rank <= PTQ_MAX_DIMS)
        H5Sget_simple_extent_dims(space, dims, NULL);
    a->dtype = type >= 0 ? array_dtype(type) : PTQ_DT_UNDEFINED;
    if (type >= 0)
        type_name(type, tname, sizeof tname);
    else
        snprintf(tname, sizeof tname, "an unreadable type");
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    if (a->dtype == PTQ_DT_UNDEFINED) /* a type ptq does not read (uint64, strings) is unsupported, not malformed */
        return ptq_fail(ctx, type >= 0 ? PTQ_ERR_UNSUPPORTED : PTQ_ERR_FORMAT,
                        "dataset '%s' in %s is %s; ptq reads int8-64, uint8-32, bool and float16-64 arrays", key,
                        ds->path, tname);
    if (rank < 1 || rank > PTQ_MAX_DIMS)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "dataset '%s' in %s has rank %d; ptq reads [N, ...] of rank 1 to %d", key,
                        ds->path, rank, PTQ_MAX_DIMS);
    shape_str(dims, rank, shape, sizeof shape);
    /* a sample bounded before any size arithmetic, as 8-byte elements (the widest a model takes) */
    uint64_t per = 8;
    for (int d = 1; d < rank; d++)
        if (dims[d] == 0 || __builtin_mul_overflow(per, (uint64_t)dims[d], &per) || per > SAMPLE_MAX_BYTES)
            return ptq_fail(ctx, PTQ_ERR_FORMAT,
                            "dataset '%s' [%s] in %s: %s; ptq reads samples of 1 to %llu bytes", key, shape, ds->path,
                            dims[d] == 0 ? "its samples are empty" : "one sample is too large",
                            (unsigned long long)SAMPLE_MAX_BYTES);
    if (dims[0] == 0 || dims[0] > (hsize_t)INT64_MAX)
        return ptq_fail(ctx, PTQ_ERR_DATA, "dataset '%s' [%s] in %s holds no samples", key, shape, ds->path);
    struct stat sb;
    const double declared = (double)dims[0] * (double)(per / 8) * (double)ptq_dtype_size(a->dtype);
    if (stat(ds->path, &sb) == 0 && declared > (double)sb.st_size * DS_H5_MAX_COMPRESSION)
        return ptq_fail(ctx, PTQ_ERR_FORMAT,
                        "dataset '%s' [%s] in %s declares %.3g bytes in a file of %lld bytes: more than any "
                        "compression could hold; a truncated or forged file",
                        key, shape, ds->path, declared, (long long)sb.st_size);
    a->ndim = rank;
    for (int d = 0; d < rank; d++)
        a->dims[d] = (int64_t)dims[d];
    if (i > 0 && a->dims[0] != ds->count)
        return ptq_fail(ctx, PTQ_ERR_DATA, "dataset '%s' in %s has %lld samples but '%s' has %lld", key, ds->path,
                        (long long)a->dims[0], ds->arrays[0].key, (long long)ds->count);
    ds->count = a->dims[0];
    return PTQ_OK;
}

ptq_status ds_hdf5_open_arrays(ptq_ctx *ctx, ptq_dataset *ds, const ptq_dataset_opts *opts, const char *const *keys,
                               int n_keys)
{
    ptq_status st = PTQ_OK;
    ds_h5_quiet q;
    ds_h5_quiet_begin(&q);
    PTQ_TRY(st, open_file(ctx, ds, opts), done);
    ds_hdf5 *h = ds->h5;
    ds->arrays = calloc((size_t)n_keys, sizeof *ds->arrays);
    h->arrays = malloc((size_t)n_keys * sizeof *h->arrays);
    if (!ds->arrays || !h->arrays) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "opening %s: out of memory", ds->path);
        goto done;
    }
    for (int i = 0; i < n_keys; i++)
        h->arrays[i] = -1;
    ds->n_arrays = h->n_arrays = n_keys;
    for (int i = 0; i < n_keys; i++)
        PTQ_TRY(st, open_array(ctx, ds, h, i, keys[i]), done);
    PTQ_TRY(st, open_labels(ctx, ds, h, opts), done);
    PTQ_TRY(st, open_class_names(ctx, ds, h), done);
done:
    ds_h5_quiet_end(&q);
    return st;
}

/* Selects samples [start, start+n) of a dataset of rank rank and shape dims
 * in its file space; makes the matching memory space. */
static int select_samples(hid_t dset, int rank, const hsize_t *dims, int64_t start, int64_t n, hid_t *fspace,
                          hid_t *mspace)
{
    hsize_t off[PTQ_MAX_DIMS] = {0}, count[PTQ_MAX_DIMS];
    for (int i = 0; i < rank; i++)
        count[i] = dims[i];
    off[0] = (hsize_t)start;
    count[0] = (hsize_t)n;
    *fspace = H5Dget_space(dset);
    *mspace = H5Screate_simple(rank, count, NULL);
    return *fspace >= 0 && *mspace >= 0 && H5Sselect_hyperslab(*fspace, H5S_SELECT_SET, off, NULL, count, NULL) >= 0;
}

static void close_spaces(hid_t fspace, hid_t mspace)
{
    if (fspace >= 0)
        H5Sclose(fspace);
    if (mspace >= 0)
        H5Sclose(mspace);
}

void ds_hdf5_label_origin(const ptq_dataset *ds, char *buf, size_t n)
{
    snprintf(buf, n, "labels '%s' in %s", ds->h5->labels_key, ds->path);
}

/* Labels start..start+n-1, read as int64 (an int32 read would clamp a
 * larger one to INT32_MAX) and checked. */
static ptq_status read_labels(ptq_ctx *ctx, ptq_dataset *ds, int64_t start, int64_t n, int32_t *labels)
{
    ds_hdf5 *h = ds->h5;
    hsize_t dims[2] = {(hsize_t)ds->count, 1};
    hid_t fspace, mspace;
    char why[256];
    int64_t *wide = malloc((size_t)n * sizeof *wide);
    if (!wide)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "reading labels of %s: out of memory", ds->path);
    int ok = select_samples(h->labels, h->labels_rank, dims, start, n, &fspace, &mspace) &&
             H5Dread(h->labels, H5T_NATIVE_INT64, mspace, fspace, H5P_DEFAULT, wide) >= 0;
    if (!ok)
        ds_h5_error(why, sizeof why);
    close_spaces(fspace, mspace);
    ptq_status st = ok ? PTQ_OK
                       : ptq_fail(ctx, PTQ_ERR_FORMAT, "cannot read labels %lld..%lld of '%s' in %s: %s",
                                  (long long)start, (long long)(start + n - 1), h->labels_key, ds->path, why);
    for (int64_t i = 0; st == PTQ_OK && i < n; i++) {
        if (wide[i] < 0 || wide[i] > INT32_MAX)
            st = ptq_fail(ctx, PTQ_ERR_DATA, "label %lld of sample %lld in labels '%s' in %s is %s", (long long)wide[i],
                          (long long)(start + i), h->labels_key, ds->path,
                          wide[i] < 0 ? "negative" : "larger than any class index (at most 2147483647)");
        else if (ds->n_classes >= 0 && wide[i] >= ds->n_classes)
            st = ptq_fail(ctx, PTQ_ERR_DATA, "label %lld of sample %lld in labels '%s' in %s is past its %d "
                          "class_names", (long long)wide[i], (long long)(start + i), h->labels_key, ds->path,
                          ds->n_classes);
        else
            labels[i] = (int32_t)wide[i];
    }
    free(wide);
    return st;
}

typedef struct h5_job {
    const ptq_dataset *ds;
    const ptq_preprocess *p;
    float *x;
    int64_t per_sample;
    ds_first_error bad;
} h5_job;

static void h5_samples(void *arg, int64_t begin, int64_t end, int worker)
{
    h5_job *job = arg;
    const ptq_dataset *ds = job->ds;
    const ds_hdf5 *h = ds->h5;
    for (int64_t j = begin; j < end; j++) {
        ptq_ctx local;
        ptq_ctx_init(&local);
        if (ptq_preprocess_image(&local, job->p, (const char *)h->scratch + (size_t)j * h->sample_bytes, h->dtype,
                                 ds->height, ds->width, ds->channels, h->planar,
                                 job->x + j * job->per_sample) != PTQ_OK) {
            ds_first_error_note(&job->bad, j, &local);
        }
    }
}

/* Preprocesses the m samples in scratch into x: [m, per-sample floats] on
 * the CPU pool; the lowest failing sample's error is the one reported. */
static ptq_status preprocess_piece(ptq_ctx *ctx, ptq_dataset *ds, int64_t m, const ptq_preprocess *p, float *x)
{
    h5_job job;
    memset(&job, 0, sizeof job);
    job.ds = ds;
    job.p = p;
    job.x = x;
    job.per_sample = (int64_t)p->n_channels * p->height * p->width;
    ds_first_error_init(&job.bad, m);
    ptq_parallel_for(m, ptq_par_grain(m, 4, 8), h5_samples, &job);
    ds_first_error_free(&job.bad);
    if (job.bad.index == m)
        return PTQ_OK;
    return ptq_fail(ctx, job.bad.err.code, "%s: %s", ds->path, job.bad.err.msg);
}

int ds_hdf5_u8(const ds_hdf5 *h, int *planar)
{
    *planar = h->planar;
    return h->dtype == PTQ_DT_UINT8;
}

ptq_status ds_hdf5_read_u8(ptq_ctx *ctx, ptq_dataset *ds, int64_t start, int64_t n, uint8_t *out, int32_t *labels)
{
    ds_hdf5 *h = ds->h5;
    ptq_status st = PTQ_OK;
    ds_h5_quiet q;
    ds_h5_quiet_begin(&q);
    hid_t fspace, mspace;
    char why[256];
    int ok = select_samples(h->images, h->rank, h->dims, start, n, &fspace, &mspace) &&
             H5Dread(h->images, H5T_NATIVE_UINT8, mspace, fspace, H5P_DEFAULT, out) >= 0;
    if (!ok)
        ds_h5_error(why, sizeof why);
    close_spaces(fspace, mspace);
    if (!ok)
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "cannot read images %lld..%lld of '%s' in %s: %s", (long long)start,
                      (long long)(start + n - 1), h->images_key, ds->path, why);
    else if (labels)
        st = read_labels(ctx, ds, start, n, labels);
    ds_h5_quiet_end(&q);
    return st;
}

ptq_status ds_hdf5_read(ptq_ctx *ctx, ptq_dataset *ds, int64_t start, int64_t n, const ptq_preprocess *p, float *x,
                        int32_t *labels)
{
    ds_hdf5 *h = ds->h5;
    ptq_status st = PTQ_OK;
    const int64_t per_sample = (int64_t)p->n_channels * p->height * p->width; /* floats of one model input */
    int64_t piece = (int64_t)(READ_PIECE_BYTES / h->sample_bytes);
    if (piece < 1)
        piece = 1;
    if (piece > n)
        piece = n;
    size_t need = (size_t)piece * h->sample_bytes;
    if (need > h->scratch_cap) {
        void *grown = realloc(h->scratch, need);
        if (!grown)
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "reading %s: out of memory for %zu bytes", ds->path, need);
        h->scratch = grown;
        h->scratch_cap = need;
    }
    hid_t mem_type = h->dtype == PTQ_DT_UINT8 ? H5T_NATIVE_UINT8 : H5T_NATIVE_FLOAT;
    ds_h5_quiet q;
    ds_h5_quiet_begin(&q);
    for (int64_t done_n = 0; done_n < n;) {
        int64_t m = n - done_n < piece ? n - done_n : piece;
        hid_t fspace, mspace;
        char why[256];
        int ok = select_samples(h->images, h->rank, h->dims, start + done_n, m, &fspace, &mspace) &&
                 H5Dread(h->images, mem_type, mspace, fspace, H5P_DEFAULT, h->scratch) >= 0;
        if (!ok)
            ds_h5_error(why, sizeof why);
        close_spaces(fspace, mspace);
        if (!ok) {
            st = ptq_fail(ctx, PTQ_ERR_FORMAT, "cannot read images %lld..%lld of '%s' in %s: %s",
                          (long long)(start + done_n), (long long)(start + done_n + m - 1), h->images_key, ds->path,
                          why);
            goto done;
        }
        PTQ_TRY(st, preprocess_piece(ctx, ds, m, p, x + done_n * per_sample), done);
        done_n += m;
    }
    if (labels)
        st = read_labels(ctx, ds, start, n, labels);
done:
    ds_h5_quiet_end(&q);
    return st;
}

/* The HDF5 memory type of a dtype ptq_dataset_read_arrays converts to. */
static hid_t array_mem_type(ptq_dtype as)
{
    switch (as) {
    case PTQ_DT_INT64: return H5T_NATIVE_INT64;
    case PTQ_DT_INT32: return H5T_NATIVE_INT32;
    case PTQ_DT_UINT8:
    case PTQ_DT_BOOL: return H5T_NATIVE_UINT8;
    case PTQ_DT_FLOAT: return H5T_NATIVE_FLOAT;
    default: return -1;
    }
}

ptq_status ds_hdf5_read_arrays(ptq_ctx *ctx, ptq_dataset *ds, int64_t start, int64_t n, const ptq_dtype *as,
                               void *const *out, int32_t *labels)
{
    ds_hdf5 *h = ds->h5;
    ptq_status st = PTQ_OK;
    ds_h5_quiet q;
    ds_h5_quiet_begin(&q);
    for (int i = 0; i < h->n_arrays && st == PTQ_OK; i++) {
        const ptq_dataset_array *a = &ds->arrays[i];
        const hid_t mem = array_mem_type(as[i]);
        if (mem < 0) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "cannot read dataset '%s' of %s as %s", a->key, ds->path,
                          ptq_dtype_name(as[i]));
            break;
        }
        hsize_t dims[PTQ_MAX_DIMS];
        for (int d = 0; d < a->ndim; d++)
            dims[d] = (hsize_t)a->dims[d];
        hid_t fspace, mspace;
        char why[256];
        int ok = select_samples(h->arrays[i], a->ndim, dims, start, n, &fspace, &mspace) &&
                 H5Dread(h->arrays[i], mem, mspace, fspace, H5P_DEFAULT, out[i]) >= 0;
        if (!ok)
            ds_h5_error(why, sizeof why);
        close_spaces(fspace, mspace);
        if (!ok)
            st = ptq_fail(ctx, PTQ_ERR_FORMAT, "cannot read samples %lld..%lld of '%s' in %s as %s: %s",
                          (long long)start, (long long)(start + n - 1), a->key, ds->path, ptq_dtype_name(as[i]), why);
    }
    if (st == PTQ_OK && labels)
        st = read_labels(ctx, ds, start, n, labels);
    ds_h5_quiet_end(&q);
    return st;
}
