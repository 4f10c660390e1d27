/* Internals shared inside datasets/: the ptq_dataset object, the per-format
 * readers it dispatches to, PNG decode/encode, JPEG decode, the labels and
 * classes lists of image folders, IDX reading and HDF5 helpers.
 * Not installed. Covered through the public API by tests/test_datasets.c. */
#ifndef PTQ_DATASETS_INTERNAL_H
#define PTQ_DATASETS_INTERNAL_H

#include <hdf5.h>
#include <pthread.h>
#include <stdint.h>
#include <zlib.h>

#include "ptq/dataset.h"
#include "ptq/fileio.h"

#define DS_ZSTD_FILTER_ID 32015 /* registered HDF5 filter id of zstd */
/* Declared bytes per byte of an HDF5 file, at most: no compression reaches
 * it (zstd of zeros ~30000:1), yet chunks never written read as fill values,
 * so a few KiB can declare terabytes. */
#define DS_H5_MAX_COMPRESSION 65536.0

typedef struct ds_hdf5 ds_hdf5;
typedef struct ds_folder ds_folder;

struct ptq_dataset {
    const char *kind;              /* "hdf5" or "image-folder" */
    char *path;
    int64_t count;
    int64_t height, width, channels;
    int has_labels;
    int n_classes;                 /* -1: unknown */
    char **class_names;            /* [n_classes] or NULL */
    ptq_value_range range;         /* float images: what the value probe saw; all 0 otherwise */
    ptq_dataset_array *arrays;     /* [n_arrays] (ptq_dataset_open_arrays), keys owned; else NULL, 0 */
    int n_arrays;
    char notes[512];               /* ptq_dataset_notes */
    ds_hdf5 *h5;                   /* exactly one of h5 and folder is set */
    ds_folder *folder;
};

/* Per-format open (fills every field of ds but path/kind), read (x and
 * labels laid out as in ptq_dataset_read) and free. */
ptq_status ds_hdf5_open(ptq_ctx *ctx, ptq_dataset *ds, const ptq_dataset_opts *opts);
/* An HDF5 set of arrays[n_keys] instead of images (ptq_dataset_open_arrays). */
ptq_status ds_hdf5_open_arrays(ptq_ctx *ctx, ptq_dataset *ds, const ptq_dataset_opts *opts, const char *const *keys,
                               int n_keys);
ptq_status ds_hdf5_read_arrays(ptq_ctx *ctx, ptq_dataset *ds, int64_t start, int64_t n, const ptq_dtype *as,
                               void *const *out, int32_t *labels);
ptq_status ds_hdf5_read(ptq_ctx *ctx, ptq_dataset *ds, int64_t start, int64_t n, const ptq_preprocess *p, float *x,
                        int32_t *labels);
void ds_hdf5_free(ds_hdf5 *h);
int ds_hdf5_u8(const ds_hdf5 *h, int *planar);
ptq_status ds_hdf5_read_u8(ptq_ctx *ctx, ptq_dataset *ds, int64_t start, int64_t n, uint8_t *out, int32_t *labels);
/* Image folders (PNG and JPEG files): opts' labels_file and classes_file are read here. */
ptq_status ds_folder_open(ptq_ctx *ctx, ptq_dataset *ds, const ptq_dataset_opts *opts);
ptq_status ds_folder_read(ptq_ctx *ctx, ptq_dataset *ds, int64_t start, int64_t n, const ptq_preprocess *p,
                          float *x, int32_t *labels);
void ds_folder_free(ds_folder *f);
/* ptq_dataset_read_kinds of an image folder (adds to the counts). */
void ds_folder_kinds(const ptq_dataset *ds, int64_t by_channels[5], int64_t *n_16bit);
/* ptq_dataset_content_sha256 of an image folder. */
ptq_status ds_folder_content_sha256(ptq_ctx *ctx, const ptq_dataset *ds, char hex[65]);
/* ptq_dataset_label_origin of each format */
void ds_folder_label_origin(const ptq_dataset *ds, int64_t i, char *buf, size_t n);
void ds_hdf5_label_origin(const ptq_dataset *ds, char *buf, size_t n);

/* An image folder's file kinds, by suffix (any case). */
enum { DS_IMG_NONE = 0, DS_IMG_PNG = 1, DS_IMG_JPEG = 2 };
int ds_image_kind(const char *name); /* DS_IMG_PNG for *.png, DS_IMG_JPEG for *.jpg / *.jpeg, else NONE */

/* A class map (--classes): class folder names and the model output index
 * each stands for. Lines "NAME" (index = the line's rank among class lines)
 * or "NAME INDEX", one form throughout; '#' lines and blank lines skipped. */
#define DS_MAX_CLASS_INDEX ((1 << 20) - 1) /* largest class index a classes or labels file may give */
typedef struct ds_classes {
    char **names;   /* [n] sorted by strcmp */
    int32_t *index; /* [n] the index of names[i] */
    int n;
    int n_classes;  /* largest index + 1 */
    char *path;     /* the file, for messages */
} ds_classes;
ptq_status ds_classes_read(ptq_ctx *ctx, const char *path, ds_classes *out);
/* The index of name, or -1. */
int32_t ds_classes_find(const ds_classes *c, const char *name);
/* The names by index: [c->n_classes] strdup'd strings (NULL where no line gives the index). */
ptq_status ds_classes_by_index(ptq_ctx *ctx, const ds_classes *c, char ***out);
void ds_classes_free(ds_classes *c);

/* A labels list (--labels): "PATH LABEL" lines, PATH relative to the data
 * root (may hold spaces; LABEL is the last field), no absolute path, no
 * empty, '.'-led or '..' component, an image suffix; each path once. */
typedef struct ds_labels_line {
    int64_t line; /* 1-based, for messages */
    int32_t label;
    char *path;   /* points into the list's text */
} ds_labels_line;
typedef struct ds_labels {
    ds_labels_line *items;
    int64_t n;
    char *text;   /* the file's bytes, NUL-split */
} ds_labels;
ptq_status ds_labels_read(ptq_ctx *ctx, const char *path, ds_labels *out);
void ds_labels_free(ds_labels *l);

/* Checks a preprocess description once per batch; names the bad field. */
ptq_status ds_preprocess_check(ptq_ctx *ctx, const ptq_preprocess *p);
/* What a preprocess spec names of the normalization (ds_preprocess_parse): */
enum {
    DS_PRE_NORM = 1, /* scale=, mean=, std=, order= or a preset */
    DS_PRE_MEAN = 2, /* mean= or a preset */
    DS_PRE_STD = 4   /* std= or a preset */
};
/* ptq_preprocess_parse, and on success *normalizes: the DS_PRE_* bits of what spec names, 0 when only geometry
 * (the normalization stays what p had: runtime/session.c warns for a default one). */
ptq_status ds_preprocess_parse(ptq_ctx *ctx, const char *spec, ptq_preprocess *p, int *normalizes);
/* The preset spec names ("imagenet" or "imagenet-bgr-caffe", any case), in its canonical spelling; NULL when none. */
const char *ds_preprocess_spec_preset(const char *spec);

/* A decoded PNG or JPEG, reused from image to image: data holds height x
 * width x channels samples, interleaved [H,W,C], uint8 or host-order uint16. */
typedef struct ds_image {
    void *data;
    size_t cap_bytes;
    int64_t height, width, channels;
    ptq_dtype dtype; /* PTQ_DT_UINT8 or PTQ_DT_UINT16 */
} ds_image;

/* Decodes any PNG (every color type, bit depths 1-16, tRNS, interlace):
 * palette -> RGB(A), gray below 8 bits -> 8 bits, 16 bits kept.
 * header_only: fills the geometry without decoding pixels.
 * An undecodable file gives PTQ_ERR_DATA naming path. */
/* The failure of the lowest sample index in a read spread over the CPU pool,
 * so the error reported does not depend on the thread count. */
typedef struct ds_first_error {
    pthread_mutex_t mu; /* guards index and err */
    int64_t index;      /* n (none) until a sample fails */
    ptq_ctx err;
} ds_first_error;

void ds_first_error_init(ds_first_error *e, int64_t n);
/* Keeps err when sample i precedes the one recorded; any pool thread may call it. */
void ds_first_error_note(ds_first_error *e, int64_t i, const ptq_ctx *err);
void ds_first_error_free(ds_first_error *e);

/* max_pixels: 0, or a PNG whose header declares more pixels is refused
 * (PTQ_ERR_SHAPE) before any is decoded: a few KiB can inflate to GiBs;
 * cap_why says in the message where the cap comes from. */
#define DS_PNG_MAX_UPSCALE 64 /* pixels an image may have per pixel of the model's input */
#define DS_CONVERT_MAX_PIXELS ((uint64_t)256 << 20) /* data convert's cap on one image, whatever --resize */
ptq_status ds_png_decode(ptq_ctx *ctx, const char *path, ds_image *img, int header_only, uint64_t max_pixels,
                         const char *cap_why);

/* One JPEG decoder (a TurboJPEG handle and the file's bytes), reused from
 * image to image on one thread. */
typedef struct ds_jpeg {
    void *tj;            /* tjhandle, made on first use */
    unsigned char *file; /* file_cap bytes */
    size_t file_cap;
} ds_jpeg;
#define DS_JPEG_MAX_FILE_BYTES ((uint64_t)256 << 20) /* a larger JPEG is refused unread (PTQ_ERR_DATA) */
/* Decodes a gray (1 channel) or color (RGB, 3 channels; CMYK is
 * PTQ_ERR_UNSUPPORTED) JPEG into img, uint8. With p (may be NULL) asking
 * for a resize and the image not already p's height x width, decodes at the
 * smallest DCT scale M/8 whose shorter side is still >= p->resize.
 * header_only: the stored geometry, nothing decoded. max_pixels: 0, or
 * more decoded pixels than that is PTQ_ERR_SHAPE before any is decoded
 * (cap_why, in the message, says why).
 * Undecodable, truncated or corrupt data is PTQ_ERR_DATA naming path. */
ptq_status ds_jpeg_decode(ptq_ctx *ctx, const char *path, ds_jpeg *dec, ds_image *img, int header_only,
                          const ptq_preprocess *p, uint64_t max_pixels, const char *cap_why);
void ds_jpeg_free(ds_jpeg *dec);
void ds_image_free(ds_image *img);
/* Writes pixels: [h, w] 8-bit gray as a PNG at path. */
ptq_status ds_png_write_gray8(ptq_ctx *ctx, const char *path, const uint8_t *pixels, int64_t h, int64_t w);

/* An IDX file (optionally gzip-compressed), read sequentially. */
typedef struct ds_idx {
    gzFile gz;
    const char *path;
    int ndim;
    int64_t dims[3];
} ds_idx;

/* Opens path and checks its magic: unsigned bytes with ndim dimensions.
 * Call ds_idx_close even when it fails. */
ptq_status ds_idx_open(ptq_ctx *ctx, const char *path, int ndim, ds_idx *idx);
/* Reads the next n_bytes of data; a short file is PTQ_ERR_FORMAT. */
ptq_status ds_idx_read(ptq_ctx *ctx, ds_idx *idx, void *buf, size_t n_bytes);
void ds_idx_close(ds_idx *idx);

/* HDF5's automatic error printing is switched off while ptq calls it and
 * restored afterwards: the library never prints. */
typedef struct ds_h5_quiet {
    H5E_auto2_t func;
    void *data;
} ds_h5_quiet;
void ds_h5_quiet_begin(ds_h5_quiet *q);
void ds_h5_quiet_end(const ds_h5_quiet *q);
/* The innermost message on HDF5's error stack ("" when empty), for ptq's messages. */
const char *ds_h5_error(char *buf, size_t n_buf);

/* Reads a string array (variable- or fixed-length strings) from an
 * attribute (is_attr 1) or a dataset into *out: [*n_out] malloc'd strings
 * in one malloc'd array; what names it in messages. */
ptq_status ds_h5_read_strings(ptq_ctx *ctx, hid_t obj, int is_attr, const char *what, char ***out, int *n_out);
/* Writes strs as a variable-length UTF-8 string attribute of loc: a 1-D
 * array of n, or a scalar when scalar is 1 (n must be 1). */
ptq_status ds_h5_write_strings_attr(ptq_ctx *ctx, hid_t loc, const char *name, const char *const *strs, int n,
                                    int scalar, const char *path);
/* Class names of a set ptq writes: the root attribute class_names, or,
 * beyond DS_H5_MAX_NAMES_ATTR names (a compact attribute holds at most
 * 64 KiB, 16 bytes a name), the root dataset class_names; readers take
 * either (hdf5_set.c read_class_names). */
#define DS_H5_MAX_NAMES_ATTR 4000
ptq_status ds_h5_write_class_names(ptq_ctx *ctx, hid_t file, const char *const *names, int n, const char *path);
/* Writes strs[n] as the 1-D variable-length UTF-8 string dataset key of
 * loc, without times (the same content, the same bytes); 1, or 0 with the
 * error in HDF5's stack (ds_h5_error). */
int ds_h5_write_strings_dataset(hid_t loc, const char *key, const char *const *strs, int64_t n);
void ds_strings_free(char **strs, int n);
/* HDF5 files that ptq writes are built in memory (the core driver, no
 * backing store) and written out by ptq itself: a full disk is then an
 * ordinary write error, never an HDF5 close that fails and leaves HDF5's
 * exit handler to crash on it. ds_h5_mem_create: the file id (path only
 * names it), or -1. ds_h5_mem_save: writes its image over path (an
 * existing temporary, not followed if a symlink) and closes *file (-1). */
hid_t ds_h5_mem_create(const char *path);
ptq_status ds_h5_mem_save(ptq_ctx *ctx, hid_t *file, const char *path);
/* Creates a dataset of file type ftype and shape dims[rank], chunked by
 * chunk_n samples along dim 0 and compressed per compress/level. */
ptq_status ds_h5_create_dataset(ptq_ctx *ctx, hid_t file, const char *key, hid_t ftype, int rank,
                                const int64_t *dims, int64_t chunk_n, ptq_h5_compress compress, int level,
                                const char *path, hid_t *out);
/* PTQ_OK when file refers to no other file: no external link anywhere in
 * it, no dataset with external storage or a virtual dataset mapping another
 * file. Else PTQ_ERR_FORMAT naming path, the object and its target, then hint. */
ptq_status ds_h5_check_self_contained(ptq_ctx *ctx, hid_t file, const char *path, const char *hint);
/* PTQ_OK when a forked child could open path with libhdf5 and read every
 * attribute, string and compact dataset in it (every dataset when
 * all_datasets) within its memory and time limits (or could not open it:
 * the caller's open says why); PTQ_ERR_FORMAT naming path when the child
 * crashed, ran out of either, or tripped a sanitizer. Called before every
 * HDF5 file ptq reads is opened (datasets/h5vet.c). */
ptq_status ds_h5_vet(ptq_ctx *ctx, const char *path, int all_datasets);
/* A chunked dataset d's chunk, which libhdf5 allocates whole on every read
 * that touches it: PTQ_ERR_FORMAT when larger than the file could hold
 * compressed, PTQ_ERR_NOMEM past the memory limit; PTQ_OK otherwise and for
 * unchunked datasets. what names d in the message. */
ptq_status ds_h5_check_chunk(ptq_ctx *ctx, hid_t d, const char *what, const char *path);
/* PTQ_ERR_UNSUPPORTED naming the filter when dataset key of d needs one
 * this libhdf5 does not have (h5py's lzf, blosc): said at open, not as a
 * plugin-path error at the first read. */
ptq_status ds_h5_check_filters(ptq_ctx *ctx, hid_t d, const char *key, const char *path);
/* PTQ_OK unless d (dataset key of path) is a virtual dataset one of whose
 * sources libhdf5 would not find (datasets/h5sources.c: a missing file, or
 * one without the mapped dataset), which it reads as fill values:
 * PTQ_ERR_IO naming the source. */
ptq_status ds_h5_check_sources(ptq_ctx *ctx, hid_t d, const char *key, const char *path);
/* The other files the open HDF5 file reads (ptq_dataset_external_files) into *files[*n_files] (free with
 * ptq_dataset_files_free); PTQ_ERR_FORMAT naming path when it names too many. */
ptq_status ds_h5_external_files(ptq_ctx *ctx, hid_t file, const char *path, char ***files, int *n_files);
/* The content SHA-256 of the HDF5 file path that reads files[n_files] (ptq_dataset_file_sha256). */
ptq_status ds_h5_content_sha256(ptq_ctx *ctx, const char *path, char *const *files, int n_files, char hex[65]);
/* ptq_dataset_content_sha256 of an HDF5 set: over the files it read at open too. */
ptq_status ds_hdf5_content_sha256(ptq_ctx *ctx, const ptq_dataset *ds, char hex[65]);
/* 1 when key names an object in file ("a/b" checked link by link, so a
 * dangling link on the way is "no", not a libhdf5 error). */
int ds_h5_exists(hid_t file, const char *key);
/* Samples per chunk: about 4 MiB of sample_bytes-sized samples, 1..1024, at most n. */
int64_t ds_h5_chunk_samples(int64_t n, size_t sample_bytes);

#endif
