/* ptq_dataset_write_hdf5: an in-memory image set to an HDF5 file, stored
 * exactly as given (so tests can also build sets the reader rejects).
 * Covered by tests/test_datasets.c. */
#include <string.h>

#include <zstd.h>

#include "datasets/datasets_internal.h"

/* Little-endian file type and native memory type of dt; 0 if unsupported. */
static int h5_types(ptq_dtype dt, hid_t *file_type, hid_t *mem_type)
{
    switch (dt) {
    case PTQ_DT_UINT8: *file_type = H5T_STD_U8LE; *mem_type = H5T_NATIVE_UINT8; return 1;
    case PTQ_DT_INT8: *file_type = H5T_STD_I8LE; *mem_type = H5T_NATIVE_INT8; return 1;
    case PTQ_DT_UINT16: *file_type = H5T_STD_U16LE; *mem_type = H5T_NATIVE_UINT16; return 1;
    case PTQ_DT_INT16: *file_type = H5T_STD_I16LE; *mem_type = H5T_NATIVE_INT16; return 1;
    case PTQ_DT_UINT32: *file_type = H5T_STD_U32LE; *mem_type = H5T_NATIVE_UINT32; return 1;
    case PTQ_DT_INT32: *file_type = H5T_STD_I32LE; *mem_type = H5T_NATIVE_INT32; return 1;
    case PTQ_DT_UINT64: *file_type = H5T_STD_U64LE; *mem_type = H5T_NATIVE_UINT64; return 1;
    case PTQ_DT_INT64: *file_type = H5T_STD_I64LE; *mem_type = H5T_NATIVE_INT64; return 1;
    case PTQ_DT_FLOAT: *file_type = H5T_IEEE_F32LE; *mem_type = H5T_NATIVE_FLOAT; return 1;
    case PTQ_DT_DOUBLE: *file_type = H5T_IEEE_F64LE; *mem_type = H5T_NATIVE_DOUBLE; return 1;
    default: return 0;
    }
}

/* Writes tensor t ([N, ...], host) as dataset key, chunked by sample. */
static ptq_status write_tensor(ptq_ctx *ctx, hid_t file, const char *key, const ptq_tensor *t,
                               const ptq_h5_write_opts *o, const char *path)
{
    hid_t file_type, mem_type, dset;
    char why[256];
    h5_types(t->dtype, &file_type, &mem_type);
    size_t sample_bytes = (size_t)ptq_dims_prod(t->dims, 1, t->ndim) * ptq_dtype_size(t->dtype);
    ptq_status st = ds_h5_create_dataset(ctx, file, key, file_type, t->ndim, t->dims,
                                         ds_h5_chunk_samples(t->dims[0], sample_bytes), o->compress, o->level, path,
                                         &dset);
    if (st != PTQ_OK)
        return st;
    if (ptq_tensor_numel(t) > 0 && H5Dwrite(dset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, t->data) < 0)
        st = ptq_fail(ctx, PTQ_ERR_IO, "cannot write dataset '%s' to %s: %s", key, path,
                      ds_h5_error(why, sizeof why));
    H5Dclose(dset);
    return st;
}

static ptq_status check_args(ptq_ctx *ctx, const char *path, const ptq_tensor *images, const ptq_tensor *labels,
                             const ptq_h5_write_opts *o)
{
    hid_t ft, mt;
    if (!path || !*path)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "no output path for the HDF5 image set");
    if (!images || images->mem != PTQ_MEM_HOST || images->ndim < 3 || images->ndim > 4 ||
        !h5_types(images->dtype, &ft, &mt))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "images for %s must be a host tensor of rank 3 or 4 and a numeric "
                        "dtype", path);
    if (labels && (labels->mem != PTQ_MEM_HOST || labels->ndim != 1 || labels->dtype == PTQ_DT_FLOAT ||
                   labels->dtype == PTQ_DT_DOUBLE || !h5_types(labels->dtype, &ft, &mt)))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "labels for %s must be a 1-D host tensor of integers", path);
    if (o->compress == PTQ_H5_ZSTD && (o->level < ZSTD_minCLevel() || o->level > ZSTD_maxCLevel()))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "zstd level %d out of range %d..%d", o->level, ZSTD_minCLevel(),
                        ZSTD_maxCLevel());
    if (o->compress == PTQ_H5_GZIP && (o->level < 0 || o->level > 9))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "gzip level %d out of range 0..9", o->level);
    if (o->compress != PTQ_H5_NONE && o->compress != PTQ_H5_ZSTD && o->compress != PTQ_H5_GZIP)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "unknown compression %d", (int)o->compress);
    return PTQ_OK;
}

ptq_status ptq_dataset_write_hdf5(ptq_ctx *ctx, const char *path, const ptq_tensor *images, const ptq_tensor *labels,
                                  const ptq_h5_write_opts *opts)
{
    static const ptq_h5_write_opts defaults = {NULL, NULL, PTQ_H5_ZSTD, 3, NULL, 0, 0};
    const ptq_h5_write_opts *o = opts ? opts : &defaults;
    ptq_status st = check_args(ctx, path, images, labels, o);
    char why[256];
    if (st != PTQ_OK)
        return st;
    ds_h5_quiet q;
    ds_h5_quiet_begin(&q);
    hid_t file = -1;
    char tmp[PTQ_TMP_NAME_BYTES] = ""; /* a new file is written whole or not at all */
    PTQ_TRY(st, ptq_h5_register_zstd(ctx), done);
    if (!o->append)
        PTQ_TRY(st, ptq_atomic_create(ctx, path, tmp, sizeof tmp, NULL), done);
    file = o->append ? H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT) : ds_h5_mem_create(tmp);
    if (file < 0) {
        st = ptq_fail(ctx, PTQ_ERR_IO, "cannot %s HDF5 file %s: %s", o->append ? "open" : "create", path,
                      ds_h5_error(why, sizeof why));
        goto done;
    }
    PTQ_TRY(st, write_tensor(ctx, file, o->images_key ? o->images_key : "images", images, o, path), done);
    if (labels)
        PTQ_TRY(st, write_tensor(ctx, file, o->labels_key ? o->labels_key : "labels", labels, o, path), done);
    if (o->n_class_names > 0)
        PTQ_TRY(st, ds_h5_write_class_names(ctx, file, o->class_names, o->n_class_names, path), done);
done:
    if (file >= 0 && !o->append && st == PTQ_OK)
        st = ds_h5_mem_save(ctx, &file, tmp);
    if (file >= 0 && H5Fclose(file) < 0 && st == PTQ_OK)
        st = ptq_fail(ctx, PTQ_ERR_IO, "cannot finish HDF5 file %s: %s", path, ds_h5_error(why, sizeof why));
    if (st == PTQ_OK && tmp[0])
        st = ptq_atomic_commit(ctx, tmp, path);
    if (st != PTQ_OK)
        ptq_atomic_blame_output(ctx, tmp, path);
    ptq_atomic_discard(tmp);
    ds_h5_quiet_end(&q);
    return st;
}
