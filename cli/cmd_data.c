/* `ptq data convert`: IDX (.gz) image/label files into an HDF5 set
 * (zstd, filter 32015) or a PNG folder, or a PNG/JPEG image folder into an
 * HDF5 set. Covered by tests/cli_test.py, tests/datasets_test.py and
 * tests/jpeg_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static const char data_help[] =
    "usage: ptq data convert --images IMAGES-idx3-ubyte[.gz] --labels LABELS-idx1-ubyte[.gz] --out PATH\n"
    "                        [--format hdf5|png] [--zstd-level N] [--class-names a,b,...|fashion-mnist]\n"
    "       ptq data convert --images FOLDER --out SET.h5 [--resize WxH|N] [--channels 1|3]\n"
    "                        [--labels FILE] [--classes FILE] [--zstd-level N]\n"
    "\n"
    "Converts IDX files (MNIST / Fashion-MNIST format) into an HDF5 image set\n"
    "(datasets images uint8 [N,H,W] and labels int64 [N], chunked, zstd-compressed\n"
    "with HDF5 filter 32015, readable by h5py + hdf5plugin) or a PNG folder\n"
    "PATH/<class>/<index>.png. The format defaults to hdf5 when PATH ends in .h5\n"
    "or .hdf5, else png. Nothing is left behind on failure.\n"
    "\n"
    "  --zstd-level N       zstd compression level 1..22 (default 3) of the HDF5 set\n"
    "  --class-names LIST   comma-separated class names in label order, or fashion-mnist\n"
    "                       (PNG folders sort classes by name: give names that sort in label order;\n"
    "                       fashion-mnist names get an index prefix there, e.g. 0_T-shirt_top)\n"
    "\n"
    "With --images a folder, packs that PNG/JPEG folder (FOLDER/<class>/*.{png,jpg,jpeg}, read as\n"
    "`ptq eval --data FOLDER` reads it) into an HDF5 set: images uint8 [N,H,W] (gray) or [N,H,W,3],\n"
    "labels int64 [N], class_names the class folder names (or --classes' names by index).\n"
    "  --resize WxH | N     resize each image (shorter side to max(W,H), bilinear) and center-crop\n"
    "                       to WxH (N: NxN); default: every image must have the first one's size\n"
    "  --channels 1|3       gray or RGB (default: the first image's)\n"
    "  --labels FILE        \"PATH LABEL\" lines: the images and labels to pack (see `ptq eval --help`)\n"
    "  --classes FILE       class folder name -> index map (see `ptq eval --help`)\n";

static const char *const fashion_names[] = {"T-shirt_top", "Trouser", "Pullover", "Dress", "Coat",
                                            "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle_boot"};

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* "WxH" or "N" into *w, *h (1..65535); 0 or -1. */
static int parse_size(const char *v, int64_t *w, int64_t *h)
{
    char *end = NULL;
    errno = 0;
    long a = strtol(v, &end, 10), b = a;
    if (!isdigit((unsigned char)v[0]) || errno) /* digits: strtol would also take " 4" and "+4" */
        return -1;
    if (*end == 'x' || *end == 'X') {
        const char *rest = end + 1;
        b = strtol(rest, &end, 10);
        if (!isdigit((unsigned char)rest[0]) || errno)
            return -1;
    }
    if (*end || a < 1 || b < 1 || a > 65535 || b > 65535)
        return -1;
    *w = a;
    *h = b;
    return 0;
}

/* Splits the comma-separated buf in place into names[*n], each trimmed of
 * surrounding spaces (as readers trim them); 0, or the 1-based position of
 * the first empty item, which would shift every later label's name. */
static int split_names(char *buf, const char **names, int *n)
{
    *n = 0;
    for (char *item = buf;;) {
        char *end = strchr(item, ',');
        char *stop = end ? end : item + strlen(item);
        while (item < stop && isspace((unsigned char)*item))
            item++;
        while (stop > item && isspace((unsigned char)stop[-1]))
            stop--;
        if (stop == item)
            return *n + 1;
        names[(*n)++] = item;
        *stop = '\0';
        if (!end)
            return 0;
        item = end + 1;
    }
}

/* --images FOLDER: the folder into an HDF5 set. */
static int convert_folder(const cli_opt *opts, int n_opts, const char *images, const char *out, int64_t level)
{
    const char *format = cli_get(opts, n_opts, "format"), *resize = cli_get(opts, n_opts, "resize");
    if (format && strcmp(format, "hdf5") != 0)
        return cli_usage_error("data convert", "an image folder converts to hdf5 only, not '%s'", format);
    if (cli_get(opts, n_opts, "class-names"))
        return cli_usage_error("data convert", "--class-names is for IDX input; an image folder's classes are its "
                               "folder names or --classes");
    ptq_convert_folder_params cp = {0, 0, 0, (int)level};
    if (resize && parse_size(resize, &cp.width, &cp.height) != 0)
        return cli_usage_error("data convert", "--resize wants WxH or N (1..65535), got '%s'", resize);
    int64_t channels;
    int rc = cli_get_int("data convert", opts, n_opts, "channels", 0, 1, &channels);
    if (rc)
        return rc;
    if (channels != 0 && channels != 1 && channels != 3)
        return cli_usage_error("data convert", "--channels must be 1 or 3, got %lld", (long long)channels);
    cp.channels = (int)channels;
    ptq_dataset_opts dopts = {NULL, NULL, NULL, 0, cli_get(opts, n_opts, "labels"), cli_get(opts, n_opts, "classes"),
                              0, 0, 0};
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = ptq_data_convert_folder(&ctx, images, &dopts, out, &cp);
    if (st == PTQ_OK)
        printf("wrote %s (hdf5, zstd)\n", cli_shown(out));
    return cli_report("data convert", &ctx, st);
}

static int data_convert(int argc, char **argv)
{
    cli_opt opts[] = {{"images", 1, NULL}, {"labels", 1, NULL},      {"out", 1, NULL},  {"format", 1, NULL},
                      {"zstd-level", 1, NULL}, {"class-names", 1, NULL}, {"help", 0, NULL}, {"resize", 1, NULL},
                      {"channels", 1, NULL}, {"classes", 1, NULL}};
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    const char *pos[1];
    int n_pos = 0, rc = cli_parse("data convert", argc, argv, opts, n_opts, pos, &n_pos, 0);
    if (rc)
        return rc;
    if (cli_get(opts, n_opts, "help")) {
        fputs(data_help, stdout);
        return 0;
    }
    const char *images = cli_get(opts, n_opts, "images"), *labels = cli_get(opts, n_opts, "labels");
    const char *out = cli_get(opts, n_opts, "out"), *format = cli_get(opts, n_opts, "format");
    int64_t level;
    if ((rc = cli_get_int("data convert", opts, n_opts, "zstd-level", 3, 1, &level)))
        return rc;
    struct stat sb;
    if (images && stat(images, &sb) != 0) { /* a typo in the path: not a missing --labels */
        ptq_ctx ctx;
        ptq_ctx_init(&ctx);
        return cli_report("data convert", &ctx, ptq_fail(&ctx, PTQ_ERR_IO, "--images %s: %s", images, strerror(errno)));
    }
    if (images && out && S_ISDIR(sb.st_mode))
        return convert_folder(opts, n_opts, images, out, level);
    if (!images || !labels || !out)
        return cli_usage_error("data convert", "--images, --labels and --out are required (--labels is optional "
                               "when --images is an image folder)");
    if (cli_get(opts, n_opts, "resize") || cli_get(opts, n_opts, "channels") || cli_get(opts, n_opts, "classes"))
        return cli_usage_error("data convert", "--resize, --channels and --classes are for an image folder; %s is "
                               "not a folder", images);
    ptq_convert_format fmt = ends_with(out, ".h5") || ends_with(out, ".hdf5") ? PTQ_CONVERT_HDF5 : PTQ_CONVERT_PNG;
    if (format && strcmp(format, "hdf5") == 0)
        fmt = PTQ_CONVERT_HDF5;
    else if (format && strcmp(format, "png") == 0)
        fmt = PTQ_CONVERT_PNG;
    else if (format)
        return cli_usage_error("data convert", "--format must be hdf5 or png, got '%s'", format);
    static const char *const hdf5_only[] = {"zstd-level", NULL};
    if (fmt == PTQ_CONVERT_PNG &&
        (rc = cli_refuse_unused("data convert", opts, n_opts, hdf5_only, "used only with --format hdf5 (a PNG folder "
                                "holds PNG files, not zstd chunks)")))
        return rc;

    const char *names_opt = cli_get(opts, n_opts, "class-names");
    const char **names = NULL;
    int n_names = 0;
    char *names_buf = NULL;
    if (names_opt && strcmp(names_opt, "fashion-mnist") == 0) {
        names = (const char **)fashion_names;
        n_names = 10;
    } else if (names_opt) {
        names_buf = strdup(names_opt);
        names = calloc(strlen(names_opt) + 1, sizeof *names);
        if (!names_buf || !names) {
            free(names_buf);
            free(names);
            return cli_usage_error("data convert", "out of memory");
        }
        int empty = split_names(names_buf, names, &n_names);
        if (empty) {
            free(names_buf);
            free(names);
            return cli_usage_error("data convert", "--class-names item %d is empty (in '%s'); every label needs a "
                                   "name, in label order", empty, names_opt);
        }
    }
    /* a PNG folder numbers classes by sorted folder name: keep label order with an index prefix */
    char prefixed[10][32];
    const char *prefixed_names[10];
    if (fmt == PTQ_CONVERT_PNG && names == (const char **)fashion_names) {
        for (int c = 0; c < 10; c++) {
            snprintf(prefixed[c], sizeof prefixed[c], "%d_%s", c, fashion_names[c]);
            prefixed_names[c] = prefixed[c];
        }
        names = prefixed_names;
    }
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = ptq_data_convert_idx(&ctx, images, labels, out, fmt, names, n_names, (int)level);
    if (st == PTQ_OK)
        printf("wrote %s (%s)\n", cli_shown(out), fmt == PTQ_CONVERT_HDF5 ? "hdf5, zstd" : "png folder");
    if (names_buf) {
        free(names_buf);
        free(names);
    }
    return cli_report("data convert", &ctx, st);
}

int cmd_data(int argc, char **argv)
{
    if (argc >= 1 && strcmp(argv[0], "convert") == 0)
        return data_convert(argc - 1, argv + 1);
    if (argc >= 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "help") == 0)) {
        fputs(data_help, stdout);
        return 0;
    }
    return cli_usage_error("data", "the only data subcommand is 'convert'");
}
