/* `ptq data convert --images FOLDER`: a PNG/JPEG image folder (optionally
 * with a labels or classes file) packed into an HDF5 set, every image
 * brought to one size and channel count by ptq_preprocess_image (scale 1, no
 * normalisation, rounded back to uint8), decoded a block at a time on the
 * CPU pool, written under a temporary name and renamed when complete.
 * Covered by tests/test_datasets.c and tests/jpeg_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zstd.h>

#include "datasets/datasets_internal.h"
#include "ptq/fileio.h"
#include "ptq/memory.h"

/* The class names to record, by index (a classes file may leave gaps: those
 * get their index as name); NULL when the set has none. */
static ptq_status class_names(ptq_ctx *ctx, const ptq_dataset *ds, char ***out)
{
    *out = NULL;
    if (ds->n_classes <= 0 || !ds->class_names)
        return PTQ_OK;
    char **names = calloc((size_t)ds->n_classes, sizeof *names);
    for (int i = 0; names && i < ds->n_classes; i++) {
        char num[16];
        snprintf(num, sizeof num, "%d", i);
        if (!(names[i] = strdup(ds->class_names[i] ? ds->class_names[i] : num))) {
            ds_strings_free(names, ds->n_classes);
            names = NULL;
        }
    }
    if (!names)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "converting %s: out of memory", ds->path);
    *out = names;
    return PTQ_OK;
}

static ptq_status write_set(ptq_ctx *ctx, ptq_dataset *ds, const ptq_preprocess *p, const char *tmp,
                            int zstd_level, const char *labels_file)
{
    ptq_status st = PTQ_OK;
    hid_t file = -1, images = -1, labels = -1, fspace = -1, mspace = -1;
    const int64_t n = ds->count, c = p->n_channels, per = c * p->height * p->width;
    const int64_t block_n = ds_h5_chunk_samples(n, (size_t)per);
    float *x = NULL;
    uint8_t *u8 = NULL;
    int32_t *lab = NULL;
    int64_t *wide = NULL;
    char **names = NULL, why[256];
    ds_h5_quiet q;
    ds_h5_quiet_begin(&q);
    PTQ_TRY(st, ptq_memory_check(ctx, (uint64_t)block_n * (uint64_t)per * 5 + (uint64_t)n * 12, ds->path), done);
    x = malloc((size_t)(block_n * per) * sizeof *x);
    u8 = malloc((size_t)(block_n * per));
    lab = malloc((size_t)n * sizeof *lab);
    wide = malloc((size_t)n * sizeof *wide);
    if (!x || !u8 || !lab || !wide) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "converting %s: out of memory", ds->path);
        goto done;
    }
    PTQ_TRY(st, ptq_h5_register_zstd(ctx), done);
    file = ds_h5_mem_create(tmp);
    if (file < 0) {
        st = ptq_fail(ctx, PTQ_ERR_IO, "cannot create %s: %s", tmp, ds_h5_error(why, sizeof why));
        goto done;
    }
    const int rank = c == 1 ? 3 : 4;
    const int64_t dims[4] = {n, p->height, p->width, c};
    PTQ_TRY(st, ds_h5_create_dataset(ctx, file, "images", H5T_STD_U8LE, rank, dims, block_n, PTQ_H5_ZSTD,
                                     zstd_level, tmp, &images), done);
    if ((fspace = H5Dget_space(images)) < 0)
        goto write_failed;
    for (int64_t at = 0; at < n; at += block_n) {
        const int64_t m = n - at < block_n ? n - at : block_n;
        PTQ_TRY(st, ptq_dataset_read(ctx, ds, at, m, p, x, lab + at), done);
        for (int64_t i = 0; i < m * per; i++) { /* preprocessing at scale 1: 0..255, fractional after a resize */
            float v = nearbyintf(x[i]);
            u8[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
        hsize_t off[4] = {(hsize_t)at, 0, 0, 0};
        hsize_t count[4] = {(hsize_t)m, (hsize_t)p->height, (hsize_t)p->width, (hsize_t)c};
        if (mspace >= 0)
            H5Sclose(mspace);
        mspace = H5Screate_simple(rank, count, NULL);
        if (mspace < 0 || H5Sselect_hyperslab(fspace, H5S_SELECT_SET, off, NULL, count, NULL) < 0 ||
            H5Dwrite(images, H5T_NATIVE_UINT8, mspace, fspace, H5P_DEFAULT, u8) < 0)
            goto write_failed;
    }
    for (int64_t i = 0; i < n; i++)
        wide[i] = lab[i];
    PTQ_TRY(st, ds_h5_create_dataset(ctx, file, "labels", H5T_STD_I64LE, 1, dims,
                                     ds_h5_chunk_samples(n, sizeof(int64_t)), PTQ_H5_ZSTD, zstd_level, tmp, &labels),
            done);
    if (H5Dwrite(labels, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, wide) < 0)
        goto write_failed;
    PTQ_TRY(st, class_names(ctx, ds, &names), done);
    if (names)
        PTQ_TRY(st, ds_h5_write_class_names(ctx, file, (const char *const *)names, ds->n_classes, tmp), done);
    const char *src = ds->path;
    PTQ_TRY(st, ds_h5_write_strings_attr(ctx, file, "source_images", &src, 1, 1, tmp), done);
    if (labels_file)
        PTQ_TRY(st, ds_h5_write_strings_attr(ctx, file, "source_labels", &labels_file, 1, 1, tmp), done);
    goto done;
write_failed:
    st = ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", tmp, ds_h5_error(why, sizeof why));
done:
    if (names)
        ds_strings_free(names, ds->n_classes);
    free(x);
    free(u8);
    free(lab);
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
        st = ds_h5_mem_save(ctx, &file, tmp);
    if (file >= 0)
        H5Fclose(file);
    ds_h5_quiet_end(&q);
    return st;
}

ptq_status ptq_data_convert_folder(ptq_ctx *ctx, const char *folder, const ptq_dataset_opts *opts,
                                   const char *out_path, const ptq_convert_folder_params *cp)
{
    ptq_status st = PTQ_OK;
    ptq_dataset *ds = NULL;
    char tmp[PTQ_TMP_NAME_BYTES] = "";
    struct stat sb;
    if (!folder || !out_path || !*out_path || !cp)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "convert needs an image folder, parameters and an output path");
    if (cp->zstd_level < ZSTD_minCLevel() || cp->zstd_level > ZSTD_maxCLevel())
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "zstd level %d out of range %d..%d", cp->zstd_level,
                        ZSTD_minCLevel(), ZSTD_maxCLevel());
    if (cp->height < 0 || cp->width < 0 || (cp->height == 0) != (cp->width == 0) || cp->height > 65535 ||
        cp->width > 65535)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "resize to %lldx%lld: give both sides, 1..65535",
                        (long long)cp->width, (long long)cp->height);
    if (cp->channels != 0 && cp->channels != 1 && cp->channels != 3)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "channels must be 1 or 3, got %d", cp->channels);
    if (stat(folder, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return ptq_fail(ctx, PTQ_ERR_IO, "%s is not an image folder", folder);
    if (stat(out_path, &sb) == 0)
        return ptq_fail(ctx, PTQ_ERR_IO, "%s already exists; not overwriting it", out_path);
    PTQ_TRY(st, ptq_dataset_open(ctx, folder, opts, &ds), done);
    ptq_preprocess p;
    ptq_preprocess_default(&p);
    p.scale = 1.0f;
    p.nhwc = 1;
    p.to_convert = 1;
    p.n_channels = cp->channels ? cp->channels : ds->channels <= 2 ? 1 : 3;
    p.height = cp->height ? cp->height : ds->height;
    p.width = cp->width ? cp->width : ds->width;
    p.resize = cp->height ? (cp->height > cp->width ? cp->height : cp->width) : 0;
    PTQ_TRY(st, ptq_atomic_create(ctx, out_path, tmp, sizeof tmp, NULL), done);
    PTQ_TRY(st, write_set(ctx, ds, &p, tmp, cp->zstd_level, opts ? opts->labels_file : NULL), done);
    st = ptq_atomic_commit_new(ctx, tmp, out_path); /* nor one put there since the check above */
done:
    if (st != PTQ_OK)
        ptq_atomic_blame_output(ctx, tmp, out_path);
    ptq_atomic_discard(tmp);
    ptq_dataset_close(ds);
    return st;
}
