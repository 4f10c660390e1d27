/* Labelled image sets, streamed in batches: HDF5 files and image folders
 * (root/<class>/<file>.png|.jpg|.jpeg, class index = sorted folder names, a
 * classes file's map, or a labels file's labels), one
 * preprocessing description applied the same way to every source, and the
 * IDX (.gz) converter behind `ptq data convert`. Covered by
 * tests/test_datasets.c and tests/datasets_test.py. */
#ifndef PTQ_DATASET_H
#define PTQ_DATASET_H

#include <stdint.h>

#include "ptq/export_api.h"
#include "ptq/status.h"
#include "ptq/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a stored image becomes a model input. Order of operations:
 * 1. to float: uint8 samples as is (0..255); uint16 samples (16-bit PNG)
 *    divided by 257, so they land on the same 0..255 range and one `scale`
 *    (1/255) serves 8- and 16-bit images alike; float samples as is.
 * 2. channels: gray -> RGB replicates, RGB -> gray by ITU-R 601 luma
 *    (0.299 R + 0.587 G + 0.114 B), alpha dropped (not blended), palette
 *    expanded (by the PNG decoder); into 4 channels (RGBA) the image's
 *    alpha is kept, and an image without one is opaque (see n_channels).
 * 3. size, on the decoded channels (before step 2): with resize > 0, every
 *    image, already height x width or not, as torchvision's Resize(resize)
 *    then CenterCrop((height, width)) on a PIL image: shorter side to
 *    `resize`, the longer int(resize * long / short), Pillow's antialiased
 *    bilinear (ImagingResample; uint8 images bit for bit, in its fixed
 *    point and rounded to uint8 after each pass; uint16 and float ones in
 *    floating point), crop offsets round((resized - crop) / 2) with ties
 *    to even; with resize 0 an image of another size fails with
 *    PTQ_ERR_SHAPE (never stretched), and the dataset readers name the file.
 * 4. x * scale, then (x - mean[c]) / std[c], c the output channel index.
 * 5. channel order (bgr) and layout (nhwc). */
typedef struct ptq_preprocess {
    float scale;           /* 1/255 for 8- and 16-bit images (see 1.); 1 for float data already in range */
    int n_channels;        /* channels the model takes: 1, 3 or 4 (RGBA: alpha from the image's, else opaque:
                              255 for 8- and 16-bit images, 1/scale for float ones) */
    float mean[4], std[4]; /* per output channel (in the model's order, BGR when bgr), after scale */
    int64_t height, width; /* the model's input size */
    int64_t resize;        /* shorter side before the center crop; 0 = images must be height x width */
    int bgr;               /* 1: channel order BGR */
    int nhwc;              /* 1: output [N,H,W,C]; 0: [N,C,H,W] */
    int to_convert;        /* 1: for `data convert` (a set, not a model's input): an image may have 256 Mpx
                              whatever the output size (else 64 times it), and messages name --resize */
} ptq_preprocess;

/* Defaults: scale 1/255, 1 channel, mean 0, std 1, RGB, NCHW, resize 0;
 * height and width 0 (must be set before reading). */
PTQ_API void ptq_preprocess_default(ptq_preprocess *p);
/* Parses space-separated key=value items onto p (keys not named keep their
 * value; p is untouched on failure), e.g. the demo model's `ptq.preprocess`
 * metadata "scale=0.0039 mean=0.286 std=0.353 layout=NCHW channels=1":
 *   scale=F or A/B     mean=F[,F,F]   std=F[,F,F] (one value, or one per channel)
 *   channels=1|3|4     layout=NCHW|NHWC           order=RGB|BGR (BGRA with 4)
 *   size=HxW or S      height=H   width=W         resize=S (0: no resizing)
 * and two presets, items without '=' that later items refine:
 *   imagenet            resize=256, crop to the size set (224x224 when none),
 *                       channels=3 order=RGB scale=1/255
 *                       mean=0.485,0.456,0.406 std=0.229,0.224,0.225
 *   imagenet-bgr-caffe  the same geometry, order=BGR scale=1
 *                       mean=103.939,116.779,123.68 (B,G,R) std=1
 * mean/std must give one value or one per channel of p->n_channels as it
 * stands after the items (callers start from the model's channels), in the
 * channel order the items end with (B,G,R with order=BGR). A preset's
 * means and stds are per colour: an order= after it in the same spec keeps
 * them with their colours ("imagenet-bgr-caffe order=RGB": R 123.68).
 * An unknown key or a bad value fails with PTQ_ERR_INVALID_ARG naming it, as
 * does a key given twice or size= with height= or width= (the last would win). */
PTQ_API ptq_status ptq_preprocess_parse(ptq_ctx *ctx, const char *spec, ptq_preprocess *p);
/* The spec of p in that syntax, every key given, floats round-trip exact
 * ("scale=0.0039215689 mean=0.286 std=0.353 channels=1 layout=NCHW order=RGB
 * size=28x28 resize=0"): what calibration archives record. Returns buf. */
PTQ_API char *ptq_preprocess_format(const ptq_preprocess *p, char *buf, size_t n_buf);
/* Applies p (steps 1-5 above) to one decoded image.
 * img: h x w x c samples of dtype PTQ_DT_UINT8, PTQ_DT_UINT16 or PTQ_DT_FLOAT,
 *      interleaved [H,W,C] (planar 0) or planar [C,H,W] (planar 1); c is
 *      1 gray, 2 gray+alpha, 3 RGB or 4 RGBA.
 * out: [n_channels, height, width] floats, or [height, width, n_channels] when p->nhwc.
 * Both dataset readers go through this function. */
PTQ_API ptq_status ptq_preprocess_image(ptq_ctx *ctx, const ptq_preprocess *p, const void *img, ptq_dtype dtype,
                                        int64_t h, int64_t w, int64_t c, int planar, float *out);

typedef struct ptq_dataset_opts {
    const char *images_key; /* HDF5 dataset with the images; NULL: "images", then "x", "data", "X" */
    const char *labels_key; /* HDF5 dataset with integer labels; NULL: "labels", then "y", "Y", "targets",
                               and none found means an unlabelled set */
    const char *layout;     /* "NHW", "NHWC" or "NCHW"; NULL: guessed (rank 3 -> NHW; a last dim of
                               1/3/4 -> NHWC, but NCHW where it is 4 and dim 1 is 1 or 3; else a dim 1 of
                               1/3/4 -> NCHW; see fit_height) */
    int allow_external_data; /* 0: an HDF5 file that refers to other files (external links, external
                                storage, virtual datasets) is refused with PTQ_ERR_FORMAT; 1: read */
    /* The four above are HDF5 files' only: an image folder with any set is PTQ_ERR_INVALID_ARG. */
    /* Image folders only (an HDF5 file with either is PTQ_ERR_INVALID_ARG); NULL: none.
     * labels_file: "PATH LABEL" lines ('#' lines and blank lines skipped), PATH relative to the
     *   folder (spaces allowed; no absolute path, no '..' or '.'-led component; a .png, .jpg or
     *   .jpeg file), LABEL an integer 0..1048575, each PATH once. The samples are the listed
     *   files in the file's order, with those labels; class folders are then not scanned.
     * classes_file: the model output index of each class folder name: lines "NAME" (the
     *   index is the line's rank among class lines, e.g. a synset list in index order) or
     *   "NAME INDEX", one form throughout; names and indices unique, indices 0..1048575. A
     *   class folder it does not name is refused; with labels_file, every label must be one of
     *   its indices. The set's class count is the largest index + 1, class names by index.
     * Any refusal is PTQ_ERR_DATA naming the file and line. */
    const char *labels_file;
    const char *classes_file;
    /* The model input's height, width and channels (0: unknown, a dynamic or resized size; all 0: no model).
     * HDF5 images with no layout whose shape both NHWC and NCHW fit ([N,3,4,4], [N,1,3,3], [N,4,4,4]: both
     * ends 1, 3 or 4) take the reading whose height and width, else whose channels, are the model's; where
     * both or neither are, the guess above stands and ptq_dataset_notes names the set and --layout. */
    int64_t fit_height, fit_width, fit_channels;
} ptq_dataset_opts;

typedef struct ptq_dataset ptq_dataset;

/* A folder is read as an image folder; a file as HDF5 (images uint8 or
 * float32; labels any integer type, read as int32, one per image; the zstd
 * filter 32015 is registered on open, gzip and uncompressed work as they
 * are). Fails with PTQ_ERR_IO (missing/unreadable), PTQ_ERR_FORMAT (not
 * HDF5, unsupported dtype/rank/layout) or PTQ_ERR_DATA (no images, a
 * missing images/labels dataset, labels count mismatch), naming the path.
 * Image folders: sample order is class by class (folder names sorted by
 * strcmp), files (*.png, *.jpg, *.jpeg, any case; a folder may mix them)
 * sorted by strcmp within a class; hidden entries and anything but folders
 * and regular files (symlinks followed) are skipped; with a labels file, its
 * order. opts may be NULL. One reader at a time per dataset. */
PTQ_API ptq_status ptq_dataset_open(ptq_ctx *ctx, const char *path, const ptq_dataset_opts *opts, ptq_dataset **out);
PTQ_API void ptq_dataset_close(ptq_dataset *ds);

PTQ_API int64_t ptq_dataset_count(const ptq_dataset *ds);
/* Stored image geometry: height, width, channels (image folders: of the
 * first image, after palette expansion; 2 and 4 mean gray+alpha and RGBA;
 * JPEGs are 1 (gray) or 3). */
PTQ_API void ptq_dataset_geometry(const ptq_dataset *ds, int64_t *height, int64_t *width, int64_t *channels);
/* What opening guessed that the caller should tell the user (lines ending in '\n'), or "". */
PTQ_API const char *ptq_dataset_notes(const ptq_dataset *ds);
/* Image folders: of the distinct images read so far (ptq_dataset_read), by_channels[c] how many had c channels
 * (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA; by_channels[0] is 0) and *n_16bit how many were 16-bit PNGs; counted as
 * they are decoded, for notes that cover the whole set (an image folder can mix them). HDF5 sets: all 0 (one
 * dtype and channel count, ptq_dataset_geometry's). */
PTQ_API void ptq_dataset_read_kinds(const ptq_dataset *ds, int64_t by_channels[5], int64_t *n_16bit);
/* 1 when samples carry labels (always for image folders). */
PTQ_API int ptq_dataset_has_labels(const ptq_dataset *ds);
/* Number of classes: image folders, their count (with a classes file, its
 * largest index + 1; with a labels file alone, -1); HDF5, the length of a
 * `class_names` attribute (on the root or the images dataset) or root
 * dataset when the file has one, else -1. */
PTQ_API int ptq_dataset_n_classes(const ptq_dataset *ds);
/* Class name of index i (folder name, classes file name, or the HDF5 class_names entry); NULL if unknown. */
PTQ_API const char *ptq_dataset_class_name(const ptq_dataset *ds, int i);
/* What the value probe of a float set saw (see ptq_dataset_value_range). */
typedef struct ptq_value_range {
    int64_t n_samples;   /* samples probed (the first, at most 256); 0 for integer images */
    int64_t n_values;    /* values in them */
    int64_t n_nonfinite; /* NaN or Inf among them: left out of lo, hi and n_above_one */
    int64_t n_above_one; /* finite values > 1 */
    float lo, hi;        /* smallest and largest finite value; 0, 0 when none is finite */
} ptq_value_range;
/* Sets stored as float (HDF5 float32): the value range of the first
 * samples (at most 256), read at open; n_samples 0 for integer images
 * (their range is their type's). The session uses it to tell float data
 * already in [0, 1] from 0..255 pixels. */
PTQ_API void ptq_dataset_value_range(const ptq_dataset *ds, ptq_value_range *out);
PTQ_API const char *ptq_dataset_kind(const ptq_dataset *ds); /* "hdf5" or "image-folder" */
/* Where the label of sample i (0..count-1) comes from, for messages, into
 * buf[n]: "labels 'labels' in set.h5", "labels file L line 3 (a/0.png)",
 * or the image and its class folder. */
PTQ_API void ptq_dataset_label_origin(const ptq_dataset *ds, int64_t i, char *buf, size_t n);
/* What the samples are, whatever path names them: for an HDF5 file
 * ptq_dataset_file_sha256 (its bytes, and those of the files it reads when
 * opened with allow_external_data); for an image folder, over its samples in order, each one's
 * relative name "<class>/<file>", a NUL, its byte count (64-bit little-
 * endian) and its bytes, and, when a labels or classes file was given, its
 * label (32-bit little-endian) and class name and a NUL. Reads every byte
 * once; 64 hex digits into hex. */
PTQ_API ptq_status ptq_dataset_content_sha256(ptq_ctx *ctx, const ptq_dataset *ds, char hex[65]);

/* Reads samples [start, start+n) preprocessed into x: [n, C, H, W] floats
 * (or [n, H, W, C] when p->nhwc) and their labels into labels: [n] (may be
 * NULL; must be NULL for an unlabelled set). Only those samples are read
 * from disk (HDF5: hyperslabs of at most 16 MiB at a time; image folders:
 * decoded on the CPU pool, JPEGs at the smallest DCT scale M/8 whose shorter
 * side still covers p->resize when the image needs resizing). A PNG or JPEG
 * that fails to decode (corrupt, truncated) gives PTQ_ERR_DATA naming the
 * file, one whose header declares more than 64 times p's height x width
 * pixels (JPEG: at that DCT scale) PTQ_ERR_SHAPE before it is decoded; a
 * negative label (or one past class_names) PTQ_ERR_DATA naming the sample. */
PTQ_API ptq_status ptq_dataset_read(ptq_ctx *ctx, ptq_dataset *ds, int64_t start, int64_t n, const ptq_preprocess *p,
                                    float *x, int32_t *labels);

/* 1 when the set stores 8-bit images that ptq_dataset_read_u8 can hand
 * over as they are (an HDF5 set of uint8), with *planar 1 for [N,C,H,W]
 * storage and 0 for [N,H,W,C] (or [N,H,W]); 0 otherwise. */
PTQ_API int ptq_dataset_u8(const ptq_dataset *ds, int *planar);
/* Samples [start, start+n) as stored, into out: [n, height, width,
 * channels] bytes (planar: [n, channels, height, width]), and their labels
 * as ptq_dataset_read does. PTQ_ERR_UNSUPPORTED when ptq_dataset_u8 is 0. */
PTQ_API ptq_status ptq_dataset_read_u8(ptq_ctx *ctx, ptq_dataset *ds, int64_t start, int64_t n, uint8_t *out,
                                       int32_t *labels);

/* Sets of model inputs that are not images (token ids, attention masks):
 * an HDF5 file of several datasets, each [N, ...] with one sample per row,
 * read as stored (no preprocessing) beside the labels ([N], found as
 * ptq_dataset_open finds them) and the root's class_names. */
typedef struct ptq_dataset_array {
    const char *key;            /* its HDF5 name */
    ptq_dtype dtype;            /* as stored: PTQ_DT_INT8/16/32/64, PTQ_DT_UINT8/16/32, PTQ_DT_BOOL (h5py's
                                   bool enum), PTQ_DT_FLOAT16, PTQ_DT_FLOAT or PTQ_DT_DOUBLE */
    int ndim;                   /* >= 1 */
    int64_t dims[PTQ_MAX_DIMS]; /* dims[0]: the samples, the same for every array */
} ptq_dataset_array;

/* Opens the HDF5 file path for ptq_dataset_read_arrays over the datasets
 * keys[n_keys] (1..PTQ_DATASET_MAX_ARRAYS, in that order); the file needs
 * no images. opts as for ptq_dataset_open (images_key, layout, labels_file
 * and classes_file must be NULL: PTQ_ERR_INVALID_ARG); external links and
 * storage are refused likewise. A missing dataset or unreadable labels
 * are PTQ_ERR_DATA, a dtype or shape ptq cannot read PTQ_ERR_FORMAT, sample
 * counts that differ between the arrays or the labels PTQ_ERR_DATA, and a
 * declared size the file could not hold PTQ_ERR_FORMAT; every message
 * names the dataset and path. */
#define PTQ_DATASET_MAX_ARRAYS 16
PTQ_API ptq_status ptq_dataset_open_arrays(ptq_ctx *ctx, const char *path, const ptq_dataset_opts *opts,
                                           const char *const *keys, int n_keys, ptq_dataset **out);
/* Arrays of a set opened by ptq_dataset_open_arrays (0 for an image set),
 * and array i's key, stored dtype and shape (NULL when i is out of range). */
PTQ_API int ptq_dataset_n_arrays(const ptq_dataset *ds);
PTQ_API const ptq_dataset_array *ptq_dataset_array_info(const ptq_dataset *ds, int i);
/* Samples [start, start+n) of every array: out[i] gets [n, dims[1..]] of
 * array i converted by HDF5 to as[i] (PTQ_DT_INT64, PTQ_DT_INT32,
 * PTQ_DT_UINT8, PTQ_DT_BOOL or PTQ_DT_FLOAT; the caller picks a type that
 * holds the stored one), and the labels as ptq_dataset_read reads them
 * (labels may be NULL). Only those samples are read from disk. */
PTQ_API ptq_status ptq_dataset_read_arrays(ptq_ctx *ctx, ptq_dataset *ds, int64_t start, int64_t n,
                                           const ptq_dtype *as, void *const *out, int32_t *labels);

/* The other files the HDF5 file path reads when opened with
 * allow_external_data, for a command's check that no output replaces an
 * input: the files its external links lead to (and, through a link to a
 * group, that group's), and its datasets' external raw storage and
 * virtual-dataset source files, each where libhdf5 1.10 finds it (the
 * HDF5_EXT_PREFIX, HDF5_VDS_PREFIX and HDF5_EXTFILE_PREFIX variables
 * heeded); only files that exist, path itself not among them. None for a
 * path that is not an HDF5 file or does not open (ptq_dataset_open says
 * why). *files[*n_files]: free with ptq_dataset_files_free. PTQ_ERR_FORMAT
 * for a malformed file (as ptq_dataset_open refuses it) or one naming more
 * than 4096 files. */
PTQ_API ptq_status ptq_dataset_external_files(ptq_ctx *ctx, const char *path, char ***files, int *n_files);
PTQ_API void ptq_dataset_files_free(char **files, int n_files);
/* The content SHA-256 of the file path (an HDF5 set, or any file): the
 * SHA-256 of its bytes; with allow_external_data and an HDF5 file that
 * reads other files (ptq_dataset_external_files), the SHA-256 of
 * "ptq-hdf5-external-data", a NUL, that digest in hex, then each of those
 * files in that order as its size (64-bit little-endian) and bytes, so that
 * new samples in a source file make another set. What
 * ptq_dataset_content_sha256 gives the set opened with the same flag. */
PTQ_API ptq_status ptq_dataset_file_sha256(ptq_ctx *ctx, const char *path, int allow_external_data, char hex[65]);

typedef enum ptq_convert_format { PTQ_CONVERT_HDF5 = 0, PTQ_CONVERT_PNG = 1 } ptq_convert_format;

/* IDX (optionally .gz) images (ubyte, [N,H,W]) + labels (ubyte, [N]) -> an
 * HDF5 set (datasets "images" uint8 [N,H,W] and "labels" int64 [N],
 * chunked, zstd-compressed with filter 32015 at zstd_level; root attributes
 * class_names (when given), source_images, source_labels) or a PNG folder
 * out/<class>/<5-digit sample index>.png (8-bit gray) with class folders
 * named by class_names, which must then sort (strcmp) in label order since
 * a PNG folder numbers its classes by sorted name (NULL: "0".."K-1" zero-
 * padded to one width, K = max label + 1). Refuses an
 * existing out_path; writes a temporary beside it (ptq_atomic_create /
 * ptq_atomic_mkdir) and renames, so a failure leaves nothing behind. Bad IDX magic, dims or an images/labels count
 * mismatch fail with PTQ_ERR_FORMAT naming the file(s). */
PTQ_API ptq_status ptq_data_convert_idx(ptq_ctx *ctx, const char *images_path, const char *labels_path,
                                        const char *out_path, ptq_convert_format fmt, const char *const *class_names,
                                        int n_class_names, int zstd_level);

typedef struct ptq_convert_folder_params {
    int64_t height, width; /* 0, 0: every image keeps the first image's size (another size fails with
                              PTQ_ERR_SHAPE naming the file); else each is resized, shorter side to
                              max(height, width), and center-cropped to height x width (as
                              ptq_preprocess step 3) */
    int channels;          /* 1 or 3; 0: the first image's (gray or gray+alpha 1, else 3) */
    int zstd_level;        /* 1..22 */
} ptq_convert_folder_params;

/* An image folder (PNG and JPEG, read as ptq_dataset_open reads it with
 * opts, which may be NULL) -> an HDF5 set: "images" uint8 [N,H,W] (1
 * channel) or [N,H,W,3], "labels" int64 [N], chunked and zstd-compressed as
 * ptq_data_convert_idx's; root attributes class_names (the folder names, or
 * the classes file's by index, a gap named by its index; none with a labels
 * file alone), source_images (folder) and source_labels (the labels file,
 * when given). Pixels go through ptq_preprocess_image at scale 1 with no
 * normalisation, rounded to the nearest integer. Refuses an existing
 * out_path; written whole or not at all. */
PTQ_API ptq_status ptq_data_convert_folder(ptq_ctx *ctx, const char *folder, const ptq_dataset_opts *opts,
                                           const char *out_path, const ptq_convert_folder_params *cp);

typedef enum ptq_h5_compress { PTQ_H5_NONE = 0, PTQ_H5_ZSTD = 1, PTQ_H5_GZIP = 2 } ptq_h5_compress;

typedef struct ptq_h5_write_opts {
    const char *images_key, *labels_key;  /* NULL: "images", "labels" */
    ptq_h5_compress compress;
    int level;                            /* zstd 1..22, gzip 0..9 */
    const char *const *class_names;       /* stored as the root attribute class_names; may be NULL */
    int n_class_names;
    int append;                           /* 1: add the datasets to an existing file */
} ptq_h5_write_opts;

/* Writes an in-memory image set to an HDF5 file, for tests, fixtures and
 * small tools that have no HDF5 headers. images: host tensor [N,H,W],
 * [N,H,W,C] or [N,C,H,W] of any fixed-size numeric dtype; labels: host
 * integer tensor [M] or NULL. Stored as given, chunked by sample and
 * compressed per opts (NULL: zstd level 3); counts and dtypes are checked
 * when the file is opened, so tests can build bad sets too. A new file is
 * written whole or not at all (ptq_atomic_create); append edits in place. */
PTQ_API ptq_status ptq_dataset_write_hdf5(ptq_ctx *ctx, const char *path, const ptq_tensor *images, const ptq_tensor *labels,
                                  const ptq_h5_write_opts *opts);

/* Registers the zstd HDF5 filter (id 32015) with the HDF5 library; idempotent. */
PTQ_API ptq_status ptq_h5_register_zstd(ptq_ctx *ctx);
/* Call first in main() of a program that links libptq (the ptq command does): when argv is the library's HDF5
 * check (it reads every HDF5 file it is given in a child process first, under memory and time limits, so that a
 * malformed file that crashes or hangs libhdf5 is refused), runs it and exits; otherwise returns at once, and from
 * then on the library starts that child as a fresh process of this program (posix_spawn of /proc/self/exe)
 * instead of a fork of the caller. A fork inherits the locks the caller's other threads hold at that moment
 * (libhdf5's one lock while another thread reads a file, an allocator's), and its child can wait on them for
 * ever, refusing a sound file when its time limit ends it. Programs that do not call it get the fork, made from
 * inside a libhdf5 call so that no other thread holds libhdf5's lock then (an allocator's still can, under a
 * sanitizer). Either way ptq waits for its child; in a program that ignores SIGCHLD (SIG_IGN, SA_NOCLDWAIT), whose
 * children the kernel reaps before their status can be read, that child runs the check in a child of its own,
 * waits for it and writes its verdict to a pipe ptq reads: the signal's disposition is not touched. */
PTQ_API void ptq_hdf5_check_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
