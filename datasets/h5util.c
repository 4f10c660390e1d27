/* HDF5 helpers for the dataset reader and writers: silencing HDF5's own
 * error printing, its innermost error message, string arrays (variable- or
 * fixed-length) and chunked, compressed dataset creation.
 * Covered by tests/test_datasets.c and tests/datasets_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datasets/datasets_internal.h"
#include "ptq/memory.h"

void ds_h5_quiet_begin(ds_h5_quiet *q)
{
    H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void ds_h5_quiet_end(const ds_h5_quiet *q)
{
    H5Eset_auto2(H5E_DEFAULT, q->func, q->data);
}

typedef struct err_buf {
    char *buf;
    size_t n;
} err_buf;

static herr_t innermost_error(unsigned n, const H5E_error2_t *e, void *data)
{
    err_buf *b = data;
    if (n == 0 && e->desc)
        snprintf(b->buf, b->n, "%s", e->desc);
    return 0;
}

const char *ds_h5_error(char *buf, size_t n_buf)
{
    err_buf b = {buf, n_buf};
    buf[0] = '\0';
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost_error, &b);
    if (!buf[0])
        snprintf(buf, n_buf, "HDF5 call failed");
    for (char *c = buf; *c; c++) /* HDF5's write errors span lines: ptq's errors are one */
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = ' ';
    return buf;
}

hid_t ds_h5_mem_create(const char *path)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    hid_t file = -1;
    /* 1 MiB growth steps; backing_store 0: the file is never written by HDF5 */
    if (fapl >= 0 && H5Pset_fapl_core(fapl, (size_t)1 << 20, 0) >= 0)
        file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (fapl >= 0)
        H5Pclose(fapl);
    return file;
}

ptq_status ds_h5_mem_save(ptq_ctx *ctx, hid_t *file, const char *path)
{
    char why[256];
    ptq_status st = PTQ_OK;
    void *image = NULL;
    ssize_t n = H5Fflush(*file, H5F_SCOPE_GLOBAL) >= 0 ? H5Fget_file_image(*file, NULL, 0) : -1;
    if (n > 0 && (image = malloc((size_t)n)) != NULL && H5Fget_file_image(*file, image, (size_t)n) == n) {
        /* the temporary the caller made, or a new file; only a file made here is removed on failure */
        int created = 0, fd = open(path, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT) {
            fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
            created = fd >= 0;
        }
        if (fd < 0)
            st = ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", path, strerror(errno));
        else {
            st = ptq_file_write_all(ctx, fd, image, (size_t)n, path);
            if (close(fd) != 0 && st == PTQ_OK)
                st = ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", path, strerror(errno));
            if (st != PTQ_OK && created)
                unlink(path);
        }
    } else {
        st = ptq_fail(ctx, n > 0 && !image ? PTQ_ERR_NOMEM : PTQ_ERR_INTERNAL, "cannot finish HDF5 file %s: %s",
                      path, n > 0 && !image ? "out of memory" : ds_h5_error(why, sizeof why));
    }
    free(image);
    H5Fclose(*file); /* in memory: nothing left to fail */
    *file = -1;
    return st;
}

void ds_strings_free(char **strs, int n)
{
    if (!strs)
        return;
    for (int i = 0; i < n; i++)
        free(strs[i]);
    free(strs);
}

/* Copies at most n bytes of s up to its first NUL; a space-padded fixed-length string (H5T_STR_SPACEPAD) also
 * drops its trailing spaces, the padding. Other strings keep theirs: they are content (a tensor "x " is not "x"). */
static char *dup_unpadded(const char *s, size_t n, int space_padded)
{
    size_t len = strnlen(s, n);
    while (space_padded && len > 0 && s[len - 1] == ' ')
        len--;
    char *d = malloc(len + 1);
    if (d) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

static herr_t read_obj(hid_t obj, int is_attr, hid_t mem, void *buf)
{
    return is_attr ? H5Aread(obj, mem, buf) : H5Dread(obj, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
}

static herr_t reclaim_vlen(hid_t mem, hid_t space, void *buf)
{
#if H5_VERSION_GE(1, 12, 0)
    return H5Treclaim(mem, space, H5P_DEFAULT, buf);
#else
    return H5Dvlen_reclaim(mem, space, H5P_DEFAULT, buf);
#endif
}

/* The size of the file obj lives in; 0 when libhdf5 cannot say. */
static hsize_t file_bytes_of(hid_t obj)
{
    hsize_t n = 0;
    hid_t fid = H5Iget_file_id(obj);
    if (fid >= 0) {
        H5Fget_filesize(fid, &n);
        H5Fclose(fid);
    }
    return n;
}

ptq_status ds_h5_read_strings(ptq_ctx *ctx, hid_t obj, int is_attr, const char *what, char ***out, int *n_out)
{
    ptq_status st = PTQ_OK;
    hid_t type = is_attr ? H5Aget_type(obj) : H5Dget_type(obj);
    hid_t space = is_attr ? H5Aget_space(obj) : H5Dget_space(obj);
    hid_t mem = -1;
    char **strs = NULL, **raw = NULL, *fixed = NULL;
    int n = 0;
    *out = NULL;
    *n_out = 0;
    if (type < 0 || space < 0 || H5Tget_class(type) != H5T_STRING || H5Sget_simple_extent_ndims(space) > 1) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "%s is not a 1-D string array", what);
        goto done;
    }
    hssize_t n_points = H5Sget_simple_extent_npoints(space);
    if (n_points < 0 || n_points > (1 << 24)) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "%s has %lld strings", what, (long long)n_points);
        goto done;
    }
    n = (int)n_points;
    /* what the dataspace declares must fit the file (a vlen string takes a
     * 16-byte heap reference; attributes are never compressed) and memory */
    const int vlen = H5Tis_variable_str(type) > 0;
    const double per_string = vlen ? 16.0 : (double)H5Tget_size(type);
    const hsize_t file_bytes = file_bytes_of(obj);
    if (file_bytes > 0 && (double)n * per_string > (double)file_bytes * (is_attr ? 1.0 : DS_H5_MAX_COMPRESSION)) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "%s declares %d strings of %.0f bytes in a file of %llu bytes", what, n,
                      per_string, (unsigned long long)file_bytes);
        goto done;
    }
    PTQ_TRY(st, ptq_memory_check(ctx, (uint64_t)((double)n * (per_string + 64)), what), done);
    strs = calloc((size_t)n + 1, sizeof *strs);
    mem = H5Tcopy(type);
    if (!strs || mem < 0) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "reading %s: out of memory", what);
        goto done;
    }
    if (vlen) {
        raw = calloc((size_t)n + 1, sizeof *raw);
        if (!raw || read_obj(obj, is_attr, mem, raw) < 0) {
            st = ptq_fail(ctx, PTQ_ERR_FORMAT, "cannot read the strings of %s", what);
            goto done;
        }
        for (int i = 0; i < n; i++)
            strs[i] = dup_unpadded(raw[i] ? raw[i] : "", (size_t)-1, 0);
        reclaim_vlen(mem, space, raw);
    } else {
        size_t size = H5Tget_size(type);
        const int space_padded = H5Tget_strpad(type) == H5T_STR_SPACEPAD;
        fixed = malloc((size_t)n * size + 1);
        if (!fixed || read_obj(obj, is_attr, mem, fixed) < 0) {
            st = ptq_fail(ctx, PTQ_ERR_FORMAT, "cannot read the strings of %s", what);
            goto done;
        }
        for (int i = 0; i < n; i++)
            strs[i] = dup_unpadded(fixed + (size_t)i * size, size, space_padded);
    }
    for (int i = 0; i < n; i++)
        if (!strs[i]) {
            st = ptq_fail(ctx, PTQ_ERR_NOMEM, "reading %s: out of memory", what);
            goto done;
        }
    *out = strs;
    *n_out = n;
    strs = NULL;
done:
    ds_strings_free(strs, n);
    free(raw);
    free(fixed);
    if (mem >= 0)
        H5Tclose(mem);
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    return st;
}

ptq_status ds_h5_write_strings_attr(ptq_ctx *ctx, hid_t loc, const char *name, const char *const *strs, int n,
                                    int scalar, const char *path)
{
    ptq_status st = PTQ_OK;
    hsize_t dim = (hsize_t)n;
    hid_t type = H5Tcopy(H5T_C_S1), space = -1, attr = -1;
    char why[256];
    if (type < 0 || H5Tset_size(type, H5T_VARIABLE) < 0 || H5Tset_cset(type, H5T_CSET_UTF8) < 0)
        goto fail;
    space = scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &dim, NULL);
    if (space < 0)
        goto fail;
    if (H5Aexists(loc, name) > 0 && H5Adelete(loc, name) < 0)
        goto fail;
    attr = H5Acreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr < 0 || (n > 0 && H5Awrite(attr, type, strs) < 0)) /* none: HDF5 refuses a write of nothing */
        goto fail;
    goto done;
fail:
    st = ptq_fail(ctx, PTQ_ERR_IO, "cannot write attribute %s to %s: %s", name, path, ds_h5_error(why, sizeof why));
done:
    if (attr >= 0)
        H5Aclose(attr);
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    return st;
}

ptq_status ds_h5_write_class_names(ptq_ctx *ctx, hid_t file, const char *const *names, int n, const char *path)
{
    char why[256];
    /* an appended file's earlier names, in the other form, would be read first or clash */
    if ((H5Lexists(file, "class_names", H5P_DEFAULT) > 0 && H5Ldelete(file, "class_names", H5P_DEFAULT) < 0) ||
        (n > DS_H5_MAX_NAMES_ATTR && H5Aexists(file, "class_names") > 0 && H5Adelete(file, "class_names") < 0))
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot replace class_names in %s: %s", path, ds_h5_error(why, sizeof why));
    if (n <= DS_H5_MAX_NAMES_ATTR)
        return ds_h5_write_strings_attr(ctx, file, "class_names", names, n, 0, path);
    return ds_h5_write_strings_dataset(file, "class_names", names, n)
               ? PTQ_OK
               : ptq_fail(ctx, PTQ_ERR_IO, "cannot write dataset class_names (%d names) to %s: %s", n, path,
                          ds_h5_error(why, sizeof why));
}

int ds_h5_write_strings_dataset(hid_t loc, const char *key, const char *const *strs, int64_t n)
{
    hsize_t dim = (hsize_t)n;
    hid_t type = H5Tcopy(H5T_C_S1), space = -1, dcpl = -1, d = -1;
    int ok = type >= 0 && H5Tset_size(type, H5T_VARIABLE) >= 0 && H5Tset_cset(type, H5T_CSET_UTF8) >= 0 &&
             (space = H5Screate_simple(1, &dim, NULL)) >= 0 && (dcpl = H5Pcreate(H5P_DATASET_CREATE)) >= 0 &&
             H5Pset_obj_track_times(dcpl, 0) >= 0 &&
             (d = H5Dcreate2(loc, key, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT)) >= 0 &&
             (n == 0 || H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, strs) >= 0);
    if (d >= 0)
        H5Dclose(d);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    return ok;
}

int64_t ds_h5_chunk_samples(int64_t n, size_t sample_bytes)
{
    int64_t k = (int64_t)(((size_t)4 << 20) / (sample_bytes ? sample_bytes : 1));
    if (k > 1024)
        k = 1024;
    if (k > n)
        k = n;
    return k < 1 ? 1 : k;
}

ptq_status ds_h5_create_dataset(ptq_ctx *ctx, hid_t file, const char *key, hid_t ftype, int rank,
                                const int64_t *dims, int64_t chunk_n, ptq_h5_compress compress, int level,
                                const char *path, hid_t *out)
{
    hsize_t hdims[PTQ_MAX_DIMS], chunk[PTQ_MAX_DIMS];
    unsigned cd = (unsigned)level;
    hid_t space = -1, dcpl = -1, lcpl = -1;
    char why[256];
    *out = -1;
    for (int i = 0; i < rank; i++) {
        hdims[i] = (hsize_t)dims[i];
        chunk[i] = i == 0 ? (hsize_t)chunk_n : (hsize_t)(dims[i] > 0 ? dims[i] : 1);
    }
    space = H5Screate_simple(rank, hdims, NULL);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    lcpl = H5Pcreate(H5P_LINK_CREATE);
    /* no modification times: the same content gives the same bytes */
    if (space >= 0 && dcpl >= 0 && lcpl >= 0 && H5Pset_chunk(dcpl, rank, chunk) >= 0 &&
        H5Pset_obj_track_times(dcpl, 0) >= 0 &&
        H5Pset_create_intermediate_group(lcpl, 1) >= 0 &&
        (compress == PTQ_H5_NONE ||
         (compress == PTQ_H5_ZSTD && H5Pset_filter(dcpl, DS_ZSTD_FILTER_ID, H5Z_FLAG_MANDATORY, 1, &cd) >= 0) ||
         (compress == PTQ_H5_GZIP && H5Pset_deflate(dcpl, (unsigned)level) >= 0)))
        *out = H5Dcreate2(file, key, ftype, space, lcpl, dcpl, H5P_DEFAULT);
    if (*out < 0)
        ds_h5_error(why, sizeof why);
    if (lcpl >= 0)
        H5Pclose(lcpl);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (space >= 0)
        H5Sclose(space);
    if (*out < 0)
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot create dataset '%s' in %s: %s", key, path, why);
    return PTQ_OK;
}

/* What the link walk found first: the object and what it points to. */
typedef struct ext_found {
    char obj[512], target[1024];
    const char *kind; /* NULL: nothing found */
} ext_found;

/* A dataset whose raw data lives in other files: external storage, or a
 * virtual dataset mapping another file. */
static void dataset_outside(hid_t d, const char *name, ext_found *f)
{
    hid_t dcpl = H5Dget_create_plist(d);
    if (dcpl < 0)
        return;
    if (H5Pget_external_count(dcpl) > 0) {
        off_t offset;
        hsize_t size;
        f->target[0] = '\0';
        H5Pget_external(dcpl, 0, sizeof f->target, f->target, &offset, &size);
        f->target[sizeof f->target - 1] = '\0';
        f->kind = "a dataset with external storage in";
    } else if (H5Pget_layout(dcpl) == H5D_VIRTUAL) {
        size_t n = 0;
        H5Pget_virtual_count(dcpl, &n);
        for (size_t i = 0; i < n && !f->kind; i++) {
            f->target[0] = '\0';
            H5Pget_virtual_filename(dcpl, i, f->target, sizeof f->target);
            f->target[sizeof f->target - 1] = '\0';
            if (strcmp(f->target, ".") != 0)
                f->kind = "a virtual dataset mapping";
        }
    }
    if (f->kind)
        snprintf(f->obj, sizeof f->obj, "%s", name);
    H5Pclose(dcpl);
}

static herr_t visit_link(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    ext_found *f = data;
    if (info->type == H5L_TYPE_EXTERNAL) {
        char val[1024];
        const char *file = "?", *obj = "?";
        unsigned flags;
        if (info->u.val_size <= sizeof val && H5Lget_val(group, name, val, sizeof val, H5P_DEFAULT) >= 0)
            H5Lunpack_elink_val(val, info->u.val_size, &flags, &file, &obj);
        snprintf(f->obj, sizeof f->obj, "%s", name);
        snprintf(f->target, sizeof f->target, "%s:%s", file, obj);
        f->kind = "an external link to";
        return 1;
    }
    if (info->type != H5L_TYPE_HARD)
        return 0; /* a soft link names a path in this file, whose links are walked too */
    hid_t o = H5Oopen(group, name, H5P_DEFAULT);
    if (o < 0)
        return 0;
    if (H5Iget_type(o) == H5I_DATASET)
        dataset_outside(o, name, f);
    H5Oclose(o);
    return f->kind ? 1 : 0;
}

ptq_status ds_h5_check_self_contained(ptq_ctx *ctx, hid_t file, const char *path, const char *hint)
{
    ext_found f;
    memset(&f, 0, sizeof f);
    if (H5Lvisit(file, H5_INDEX_NAME, H5_ITER_INC, visit_link, &f) < 0 && !f.kind) {
        char why[256];
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "cannot list the objects of %s: %s", path, ds_h5_error(why, sizeof why));
    }
    if (!f.kind)
        return PTQ_OK;
    return ptq_fail(ctx, PTQ_ERR_FORMAT, "%s refers to data outside itself: '%s' is %s '%s'; %s", path, f.obj, f.kind,
                    f.target, hint);
}

ptq_status ds_h5_check_filters(ptq_ctx *ctx, hid_t d, const char *key, const char *path)
{
    hid_t dcpl = H5Dget_create_plist(d);
    const int n = dcpl >= 0 ? H5Pget_nfilters(dcpl) : 0;
    ptq_status st = PTQ_OK;
    for (int i = 0; st == PTQ_OK && i < n; i++) {
        unsigned flags = 0;
        size_t n_values = 0;
        char name[64] = "";
        const H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &n_values, NULL, sizeof name, name, NULL);
        if (id >= 0 && H5Zfilter_avail(id) <= 0) /* h5py marks lzf optional, yet its chunks need it */
            st = ptq_fail(ctx, PTQ_ERR_UNSUPPORTED,
                          "'%s' in %s is compressed with HDF5 filter %d (%s), which ptq cannot decode; repack it "
                          "with gzip or zstd (h5repack -f GZIP=4 IN OUT)", key, path, (int)id,
                          name[0] ? name : "unnamed");
    }
    if (dcpl >= 0)
        H5Pclose(dcpl);
    return st;
}

ptq_status ds_h5_check_chunk(ptq_ctx *ctx, hid_t d, const char *what, const char *path)
{
    hsize_t dims[H5S_MAX_RANK];
    hid_t dcpl = H5Dget_create_plist(d), type = H5Dget_type(d);
    const int rank = dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED ? H5Pget_chunk(dcpl, H5S_MAX_RANK, dims) : 0;
    double bytes = type >= 0 ? (double)H5Tget_size(type) : 0.0;
    for (int i = 0; i < rank; i++)
        bytes *= (double)dims[i];
    if (type >= 0)
        H5Tclose(type);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (rank <= 0)
        return PTQ_OK;
    const hsize_t file_bytes = file_bytes_of(d);
    if (file_bytes > 0 && bytes > (double)file_bytes * DS_H5_MAX_COMPRESSION)
        return ptq_fail(ctx, PTQ_ERR_FORMAT,
                        "%s in %s is stored in chunks of %.3g bytes in a file of %llu bytes: more than any "
                        "compression could hold; a truncated or forged file",
                        what, path, bytes, (unsigned long long)file_bytes);
    /* libhdf5 allocates a whole chunk on every read that touches it */
    return ptq_memory_check(ctx, bytes >= 1.8e19 ? UINT64_MAX : (uint64_t)bytes, what);
}
