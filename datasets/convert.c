/* `ptq data convert`: IDX images + labels -> an HDF5 set (zstd, chunked) or
 * a PNG folder, streamed one chunk of images at a time, written under a
 * temporary name (ptq_atomic_create / ptq_atomic_mkdir) and renamed into
 * place only when complete.
 * Covered by tests/test_datasets.c and tests/datasets_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zstd.h>

#include "datasets/datasets_internal.h"
#include "ptq/fileio.h"
#include "ptq/memory.h"

/* What one conversion reads and writes. */
typedef struct conv_job {
    ds_idx images, labels;
    int64_t n, h, w;             /* images [n, h, w] */
    uint8_t *label;              /* [n] */
    uint8_t *block;              /* [block_n, h, w] */
    int64_t block_n;
    const char *const *class_names;
    int n_classes;
    const char *tmp;             /* the temporary file or folder, already made */
} conv_job;

/* A PNG folder's class index is its folder's rank by name, so folder names
 * must sort in label order for the labels to survive the round trip. */
static ptq_status check_class_names(ptq_ctx *ctx, const char *const *names, int n, ptq_convert_format fmt)
{
    if (n < 0 || (n > 0 && !names))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%d class names given without names", n);
    for (int i = 0; i < n; i++) {
        if (!names[i] || !names[i][0])
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "class name %d is empty", i);
        if (fmt == PTQ_CONVERT_PNG && (strchr(names[i], '/') || names[i][0] == '.'))
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "class name '%s' cannot name a folder", names[i]);
        if (fmt == PTQ_CONVERT_PNG && i > 0 && strcmp(names[i - 1], names[i]) >= 0)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                            "class names '%s' and '%s' do not sort in label order, so a PNG folder would renumber "
                            "the classes (prefix them, e.g. 0_%s)",
                            names[i - 1], names[i], names[i - 1]);
        for (int j = 0; j < i; j++)
            if (!strcmp(names[i], names[j]))
                return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "class name '%s' given twice", names[i]);
    }
    return PTQ_OK;
}

/* Folder of class k: its name, or k zero-padded to the digits of
 * n_classes - 1 (IDX labels are bytes: at most 256 classes). */
static const char *class_folder(const conv_job *job, int k, char *buf, size_t n_buf)
{
    if (job->class_names)
        return job->class_names[k];
    if (job->n_classes > 100)
        snprintf(buf, n_buf, "%03d", k & 0xff);
    else if (job->n_classes > 10)
        snprintf(buf, n_buf, "%02d", k & 0xff);
    else
        snprintf(buf, n_buf, "%d", k & 0xff);
    return buf;
}

/* Reads the next m images into job->block. */
static ptq_status read_block(ptq_ctx *ctx, conv_job *job, int64_t m)
{
    return ds_idx_read(ctx, &job->images, job->block, (size_t)(m * job->h * job->w));
}

static ptq_status write_hdf5(ptq_ctx *ctx, conv_job *job, int zstd_level, const char *images_path,
                             const char *labels_path)
{
    ptq_status st = PTQ_OK;
    hid_t file = -1, images = -1, labels = -1, fspace = -1, mspace = -1;
    int64_t *wide = NULL;
    char why[256];
    ds_h5_quiet q;
    ds_h5_quiet_begin(&q);
    PTQ_TRY(st, ptq_h5_register_zstd(ctx), done);
    file = ds_h5_mem_create(job->tmp);
    if (file < 0) {
        st = ptq_fail(ctx, PTQ_ERR_IO, "cannot create %s: %s", job->tmp, ds_h5_error(why, sizeof why));
        goto done;
    }
    const int64_t dims[3] = {job->n, job->h, job->w};
    PTQ_TRY(st, ds_h5_create_dataset(ctx, file, "images", H5T_STD_U8LE, 3, dims, job->block_n, PTQ_H5_ZSTD,
                                     zstd_level, job->tmp, &images), done);
    PTQ_TRY(st, ds_h5_create_dataset(ctx, file, "labels", H5T_STD_I64LE, 1, dims,
                                     ds_h5_chunk_samples(job->n, sizeof(int64_t)), PTQ_H5_ZSTD, zstd_level, job->tmp,
                                     &labels), done);
    if (!(wide = malloc((size_t)job->n * sizeof *wide))) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "converting %s: out of memory", labels_path);
        goto done;
    }
    for (int64_t i = 0; i < job->n; i++)
        wide[i] = job->label[i];
    if (H5Dwrite(labels, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, wide) < 0)
        goto write_failed;
    if ((fspace = H5Dget_space(images)) < 0)
        goto write_failed;
    for (int64_t at = 0; at < job->n; at += job->block_n) {
        int64_t m = job->n - at < job->block_n ? job->n - at : job->block_n;
        hsize_t off[3] = {(hsize_t)at, 0, 0}, count[3] = {(hsize_t)m, (hsize_t)job->h, (hsize_t)job->w};
        PTQ_TRY(st, read_block(ctx, job, m), done);
        if (mspace >= 0)
            H5Sclose(mspace);
        mspace = H5Screate_simple(3, count, NULL);
        if (mspace < 0 || H5Sselect_hyperslab(fspace, H5S_SELECT_SET, off, NULL, count, NULL) < 0 ||
            H5Dwrite(images, H5T_NATIVE_UINT8, mspace, fspace, H5P_DEFAULT, job->block) < 0)
            goto write_failed;
    }
    if (job->class_names)
        PTQ_TRY(st, ds_h5_write_class_names(ctx, file, job->class_names, job->n_classes, job->tmp), done);
    PTQ_TRY(st, ds_h5_write_strings_attr(ctx, file, "source_images", &images_path, 1, 1, job->tmp), done);
    PTQ_TRY(st, ds_h5_write_strings_attr(ctx, file, "source_labels", &labels_path, 1, 1, job->tmp), done);
    goto done;
write_failed:
    st = ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", job->tmp, ds_h5_error(why, sizeof why));
done:
    free(wide);
    if (mspace >= 0)
        H5Sclose(mspace);
    if (fspace >= 0)
        H5Sclose(fspace);
    if (labels >= 0)
        H5Dclose(labels);
    if (images >= 0)
        H5Dclose(images);
    if (file >= 0 && st == PTQ_OK)
        st = ds_h5_mem_save(ctx, &file, job->tmp);
    if (file >= 0)
        H5Fclose(file);
    ds_h5_quiet_end(&q);
    return st;
}

static ptq_status write_png(ptq_ctx *ctx, conv_job *job)
{
    ptq_status st = PTQ_OK;
    size_t cap = strlen(job->tmp) + 64;
    for (int k = 0; job->class_names && k < job->n_classes; k++)
        if (strlen(job->tmp) + strlen(job->class_names[k]) + 64 > cap)
            cap = strlen(job->tmp) + strlen(job->class_names[k]) + 64;
    char *path = malloc(cap), num[24];
    if (!path)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "converting to %s: out of memory", job->tmp);
    for (int k = 0; k < job->n_classes; k++) {
        snprintf(path, cap, "%s/%s", job->tmp, class_folder(job, k, num, sizeof num));
        if (mkdir(path, 0777) != 0) {
            st = ptq_fail(ctx, PTQ_ERR_IO, "cannot create folder %s: %s", path, strerror(errno));
            goto done;
        }
    }
    for (int64_t at = 0; at < job->n; at += job->block_n) {
        int64_t m = job->n - at < job->block_n ? job->n - at : job->block_n;
        PTQ_TRY(st, read_block(ctx, job, m), done);
        for (int64_t j = 0; j < m; j++) {
            snprintf(path, cap, "%s/%s/%05lld.png", job->tmp, class_folder(job, job->label[at + j], num, sizeof num),
                     (long long)(at + j));
            PTQ_TRY(st, ds_png_write_gray8(ctx, path, job->block + j * job->h * job->w, job->h, job->w), done);
        }
    }
done:
    free(path);
    return st;
}

/* Opens both IDX files, checks they agree and reads every label. */
static ptq_status read_inputs(ptq_ctx *ctx, conv_job *job, const char *images_path, const char *labels_path)
{
    ptq_status st;
    if ((st = ds_idx_open(ctx, images_path, 3, &job->images)) != PTQ_OK ||
        (st = ds_idx_open(ctx, labels_path, 1, &job->labels)) != PTQ_OK)
        return st;
    job->n = job->images.dims[0];
    job->h = job->images.dims[1];
    job->w = job->images.dims[2];
    if (job->labels.dims[0] != job->n)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "%s has %lld images but %s has %lld labels", images_path,
                        (long long)job->n, labels_path, (long long)job->labels.dims[0]);
    if (job->n == 0)
        return ptq_fail(ctx, PTQ_ERR_DATA, "no images in %s", images_path);
    if (job->h * job->w > (int64_t)1 << 30)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "IDX images in %s are %lldx%lld, too large", images_path,
                        (long long)job->h, (long long)job->w);
    /* the labels (bytes, and int64 for HDF5) and one block of images, however well the file compressed them */
    job->block_n = ds_h5_chunk_samples(job->n, (size_t)(job->h * job->w));
    PTQ_TRY_RET(ptq_memory_check(ctx, (uint64_t)job->n * 9 + (uint64_t)(job->block_n * job->h * job->w),
                                 images_path));
    if (!(job->label = malloc((size_t)job->n)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "converting %s: out of memory", labels_path);
    if ((st = ds_idx_read(ctx, &job->labels, job->label, (size_t)job->n)) != PTQ_OK)
        return st;
    int max_label = 0;
    for (int64_t i = 0; i < job->n; i++) {
        if (job->class_names && job->label[i] >= job->n_classes)
            return ptq_fail(ctx, PTQ_ERR_DATA, "label %d of sample %lld in %s has no class name (%d given)",
                            job->label[i], (long long)i, labels_path, job->n_classes);
        max_label = job->label[i] > max_label ? job->label[i] : max_label;
    }
    if (!job->class_names)
        job->n_classes = max_label + 1;
    if (!(job->block = malloc((size_t)(job->block_n * job->h * job->w))))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "converting %s: out of memory", images_path);
    return PTQ_OK;
}

ptq_status ptq_data_convert_idx(ptq_ctx *ctx, const char *images_path, const char *labels_path, const char *out_path,
                                ptq_convert_format fmt, const char *const *class_names, int n_class_names,
                                int zstd_level)
{
    ptq_status st = PTQ_OK;
    conv_job job;
    memset(&job, 0, sizeof job);
    char tmp[PTQ_TMP_NAME_BYTES] = "";
    struct stat sb;
    if (!images_path || !labels_path || !out_path || !*out_path)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "convert needs images, labels and an output path");
    if (fmt != PTQ_CONVERT_HDF5 && fmt != PTQ_CONVERT_PNG)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "unknown output format %d", (int)fmt);
    if (fmt == PTQ_CONVERT_HDF5 && (zstd_level < ZSTD_minCLevel() || zstd_level > ZSTD_maxCLevel()))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "zstd level %d out of range %d..%d", zstd_level, ZSTD_minCLevel(),
                        ZSTD_maxCLevel());
    if ((st = check_class_names(ctx, class_names, n_class_names, fmt)) != PTQ_OK)
        return st;
    if (stat(out_path, &sb) == 0)
        return ptq_fail(ctx, PTQ_ERR_IO, "%s already exists; not overwriting it", out_path);
    job.class_names = n_class_names > 0 ? class_names : NULL;
    job.n_classes = n_class_names;
    PTQ_TRY(st, read_inputs(ctx, &job, images_path, labels_path), done);
    job.tmp = tmp;
    if (fmt == PTQ_CONVERT_HDF5) {
        PTQ_TRY(st, ptq_atomic_create(ctx, out_path, tmp, sizeof tmp, NULL), done);
        PTQ_TRY(st, write_hdf5(ctx, &job, zstd_level, images_path, labels_path), done);
    } else {
        PTQ_TRY(st, ptq_atomic_mkdir(ctx, out_path, tmp, sizeof tmp), done);
        PTQ_TRY(st, write_png(ctx, &job), done);
    }
    st = ptq_atomic_commit_new(ctx, tmp, out_path); /* nor one put there since the check above */
done:
    if (st != PTQ_OK)
        ptq_atomic_blame_output(ctx, tmp, out_path);
    ptq_atomic_discard(tmp);
    ds_idx_close(&job.images);
    ds_idx_close(&job.labels);
    free(job.label);
    free(job.block);
    return st;
}
