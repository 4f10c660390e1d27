/* `ptq data convert`: IDX (.gz) image/label files into an HDF5 set
 * (zstd, filter 32015) or a PNG folder. Covered by tests/cli_test.py and
 * tests/datasets_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char data_help[] =
    "usage: ptq data convert --images IMAGES-idx3-ubyte[.gz] --labels LABELS-idx1-ubyte[.gz] --out PATH\n"
    "                        [--format hdf5|png] [--zstd-level N] [--class-names a,b,...|fashion-mnist]\n"
    "\n"
    "Converts IDX files (MNIST / Fashion-MNIST format) into an HDF5 image set\n"
    "(datasets images uint8 [N,H,W] and labels int64 [N], chunked, zstd-compressed\n"
    "with HDF5 filter 32015, readable by h5py + hdf5plugin) or a PNG folder\n"
    "PATH/<class>/<index>.png. The format defaults to hdf5 when PATH ends in .h5\n"
    "or .hdf5, else png. Nothing is left behind on failure.\n"
    "\n"
    "  --zstd-level N       zstd compression level 1..22 (default 3)\n"
    "  --class-names LIST   comma-separated class names in label order, or fashion-mnist\n"
    "                       (PNG folders sort classes by name: give names that sort in label order;\n"
    "                       fashion-mnist names get an index prefix there, e.g. 0_T-shirt_top)\n";

static const char *const fashion_names[] = {"T-shirt_top", "Trouser", "Pullover", "Dress", "Coat",
                                            "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle_boot"};

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int data_convert(int argc, char **argv)
{
    cli_opt opts[] = {{"images", 1, NULL}, {"labels", 1, NULL},      {"out", 1, NULL},  {"format", 1, NULL},
                      {"zstd-level", 1, NULL}, {"class-names", 1, NULL}, {"help", 0, NULL}};
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
    if (!images || !labels || !out)
        return cli_usage_error("data convert", "--images, --labels and --out are required");
    ptq_convert_format fmt = ends_with(out, ".h5") || ends_with(out, ".hdf5") ? PTQ_CONVERT_HDF5 : PTQ_CONVERT_PNG;
    if (format && strcmp(format, "hdf5") == 0)
        fmt = PTQ_CONVERT_HDF5;
    else if (format && strcmp(format, "png") == 0)
        fmt = PTQ_CONVERT_PNG;
    else if (format)
        return cli_usage_error("data convert", "--format must be hdf5 or png, got '%s'", format);
    int64_t level;
    if ((rc = cli_get_int("data convert", opts, n_opts, "zstd-level", 3, 1, &level)))
        return rc;
    if (level > 22)
        return cli_usage_error("data convert", "--zstd-level must be 1..22, got %lld", (long long)level);

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
        for (char *tok = strtok(names_buf, ","); tok; tok = strtok(NULL, ","))
            names[n_names++] = tok;
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
        printf("wrote %s (%s)\n", out, fmt == PTQ_CONVERT_HDF5 ? "hdf5, zstd" : "png folder");
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
