/* datasets/: preprocessing, PNGs of every color type/depth, HDF5 variants and
 * errors, the IDX converter, Fashion-MNIST round trips (HDF5 = PNG folder = IDX).
 * `test_datasets` runs all (fixtures in a mkdtemp dir); `test_datasets OUT.h5
 * [OTHER.h5]` converts to OUT.h5 and checks OTHER.h5, and `test_datasets
 * --bad-h5 FILE...` expects each to be refused, for datasets_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "ptq/dataset.h"
#include "ptq/memory.h"
#include "testlib.h"

/* Fashion-MNIST's test split: PTQ_FMNIST_DIR (set by the GPU bundle) or Debian's package */
static char FM_DIR[2048] = "/usr/share/datasets/fashion-mnist";
static char FM_IMAGES[2304], FM_LABELS[2304];

static void fm_paths(void)
{
    const char *dir = getenv("PTQ_FMNIST_DIR");
    if (dir && *dir)
        snprintf(FM_DIR, sizeof FM_DIR, "%s", dir);
    snprintf(FM_IMAGES, sizeof FM_IMAGES, "%s/t10k-images-idx3-ubyte.gz", FM_DIR);
    snprintf(FM_LABELS, sizeof FM_LABELS, "%s/t10k-labels-idx1-ubyte.gz", FM_DIR);
}

static const char *const fm_classes[10] = {"0_T-shirt_top", "1_Trouser", "2_Pullover", "3_Dress", "4_Coat",
                                           "5_Sandal",      "6_Shirt",   "7_Sneaker",  "8_Bag",   "9_Ankle_boot"};

static char g_tmp[64];

static const char *tpath(char *buf, size_t n, const char *rel)
{
    snprintf(buf, n, "%s/%s", g_tmp, rel);
    return buf;
}

static int has(const char *haystack, const char *needle)
{
    return strstr(haystack, needle) != NULL;
}

/* ---- preprocess ---- */

static void test_parse(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_preprocess p;
    ptq_preprocess_default(&p);
    CHECK(p.scale == 1.0f / 255.0f && p.n_channels == 1 && p.std[0] == 1.0f && !p.nhwc && !p.bgr);
    CHECK(ptq_preprocess_parse(&ctx, "scale=0.0039 mean=0.286 std=0.353 layout=NCHW channels=1", &p) == PTQ_OK);
    CHECK(p.scale == 0.0039f && p.mean[0] == 0.286f && p.std[0] == 0.353f && p.n_channels == 1 && !p.nhwc);
    CHECK(ptq_preprocess_parse(&ctx,
                               "  scale=1/255 channels=3 mean=0.485,0.456,0.406 std=0.229,0.224,0.225\tlayout=nhwc "
                               "order=BGR size=224 resize=256 ",
                               &p) == PTQ_OK);
    CHECK(p.scale == (float)(1.0 / 255.0) && p.n_channels == 3 && p.nhwc && p.bgr);
    CHECK(p.mean[1] == 0.456f && p.std[2] == 0.225f && p.height == 224 && p.width == 224 && p.resize == 256);
    CHECK(ptq_preprocess_parse(&ctx, "size=32x48", &p) == PTQ_OK && p.height == 32 && p.width == 48);
    CHECK(ptq_preprocess_parse(&ctx, "height=7 width=9 order=rgb", &p) == PTQ_OK && p.height == 7 && p.width == 9 &&
          !p.bgr);
    CHECK(ptq_preprocess_parse(&ctx, "", &p) == PTQ_OK && p.height == 7);
    CHECK(ptq_preprocess_parse(&ctx, "mean=-.5 std=.5", &p) == PTQ_OK && p.mean[0] == -0.5f && p.std[0] == 0.5f);

    /* presets: the documented values; a size already set (the model's) is
     * kept, else 224; later items refine them */
    ptq_preprocess q;
    ptq_preprocess_default(&q);
    CHECK(ptq_preprocess_parse(&ctx, "imagenet", &q) == PTQ_OK);
    CHECK(q.scale == 1.0f / 255.0f && q.n_channels == 3 && !q.bgr && !q.nhwc && q.resize == 256 &&
          q.height == 224 && q.width == 224);
    CHECK(q.mean[0] == 0.485f && q.mean[1] == 0.456f && q.mean[2] == 0.406f && q.std[0] == 0.229f &&
          q.std[1] == 0.224f && q.std[2] == 0.225f);
    ptq_preprocess_default(&q);
    q.height = q.width = 299;
    q.nhwc = 1;
    CHECK(ptq_preprocess_parse(&ctx, "ImageNet resize=342", &q) == PTQ_OK && q.height == 299 && q.width == 299 &&
          q.resize == 342 && q.nhwc && q.mean[2] == 0.406f);
    ptq_preprocess_default(&q);
    CHECK(ptq_preprocess_parse(&ctx, "imagenet-bgr-caffe", &q) == PTQ_OK);
    CHECK(q.scale == 1.0f && q.n_channels == 3 && q.bgr && q.resize == 256 && q.height == 224 &&
          q.mean[0] == 103.939f && q.mean[1] == 116.779f && q.mean[2] == 123.68f && q.std[0] == 1.0f &&
          q.std[2] == 1.0f);
    char fmt[512];
    CHECK(has(ptq_preprocess_format(&q, fmt, sizeof fmt),
              "scale=1 mean=103.939003,116.778999,123.68 std=1,1,1 channels=3 layout=NCHW order=BGR size=224x224 "
              "resize=256"));
    /* an order= after a preset keeps its means and stds with their colours; a preset after order= sets its
     * own; a mean= or std= list is per model channel, in the order the spec ends with */
    ptq_preprocess_default(&q);
    CHECK(ptq_preprocess_parse(&ctx, "imagenet-bgr-caffe order=RGB", &q) == PTQ_OK && !q.bgr &&
          q.mean[0] == 123.68f && q.mean[1] == 116.779f && q.mean[2] == 103.939f && q.scale == 1.0f);
    ptq_preprocess_default(&q);
    CHECK(ptq_preprocess_parse(&ctx, "imagenet order=BGR", &q) == PTQ_OK && q.bgr && q.mean[0] == 0.406f &&
          q.mean[2] == 0.485f && q.std[0] == 0.225f && q.std[1] == 0.224f && q.std[2] == 0.229f);
    ptq_preprocess_default(&q);
    CHECK(ptq_preprocess_parse(&ctx, "order=RGB imagenet-bgr-caffe", &q) == PTQ_OK && q.bgr &&
          q.mean[0] == 103.939f && q.mean[2] == 123.68f);
    ptq_preprocess_default(&q);
    CHECK(ptq_preprocess_parse(&ctx, "imagenet order=BGR mean=1,2,3", &q) == PTQ_OK && q.bgr && q.mean[0] == 1.0f &&
          q.mean[2] == 3.0f && q.std[0] == 0.225f && q.std[2] == 0.229f);
    ptq_preprocess_default(&q);
    q.n_channels = 3;
    CHECK(ptq_preprocess_parse(&ctx, "mean=1,2,3 std=4,5,6 order=BGR", &q) == PTQ_OK && q.bgr && q.mean[0] == 1.0f &&
          q.mean[2] == 3.0f && q.std[0] == 4.0f && q.std[2] == 6.0f);
    /* a 3-channel start takes three means without channels=3 */
    ptq_preprocess_default(&q);
    q.n_channels = 3;
    CHECK(ptq_preprocess_parse(&ctx, "mean=0.485,0.456,0.406 std=0.229,0.224,0.225", &q) == PTQ_OK &&
          q.n_channels == 3 && q.mean[1] == 0.456f);
    ptq_ctx_init(&ctx);
    CHECK(ptq_preprocess_parse(&ctx, "imagenet-rgb", &q) == PTQ_ERR_INVALID_ARG && has(ctx.msg, "'imagenet-rgb'"));

    const ptq_preprocess before = p;
    static const struct {
        const char *spec, *needle;
    } bad[] = {
        {"scale=1 foo=2", "'foo'"},       {"scale=abc", "'scale'"},          {"channels=2", "'channels'"},
        {"mean=1,2", "2/1 values"},       {"layout=NCWH", "'layout'"},       {"novalue", "'novalue'"},
        {"std=0", "std"},                 {"size=0x5", "'size'"},            {"resize=-1", "'resize'"},
        {"mean=1,2,3,4,5", "'mean'"},     {"order=GBR", "'order'"},          {"=3", "'=3'"},
        {"scale=0", "scale must be > 0"}, {"scale=-1", "scale must be > 0"}, {"std=1e-45", "must be finite"},
        {"mean=3e38 std=1e-38", "must be finite"},
        /* numbers written in decimal, as the number flags take them: no '+', hex float or sign after the '/' */
        {"scale=0x10", "'0x10'"},         {"scale=+1", "'+1'"},              {"scale=1/+255", "'1/+255'"},
        {"mean=0,+0.2,0", "'mean'"},     {"resize=+30", "'resize'"},        {"scale=1/0x10", "'scale'"},
        /* a key given twice, or two keys setting one thing: the last would win, silently */
        {"mean=0.5 std=2 mean=0.2", "key 'mean' is given twice (mean=0.5, then mean=0.2)"},
        {"resize=0 resize=0", "'resize' is given twice"},
        {"size=28 height=30", "keys 'size' and 'height' both set the height (size=28, then height=30)"},
        {"width=9 size=4x5", "keys 'width' and 'size' both set the width"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ptq_ctx_init(&ctx);
        ptq_status st = ptq_preprocess_parse(&ctx, bad[i].spec, &p);
        CHECK_MSG(st == PTQ_ERR_INVALID_ARG && has(ctx.msg, bad[i].needle), "spec '%s': %d '%s'", bad[i].spec,
                  (int)st, ctx.msg);
        CHECK(memcmp(&p, &before, sizeof p) == 0);
    }
}

static ptq_preprocess raw_pp(int channels, int64_t h, int64_t w)
{
    ptq_preprocess p;
    ptq_preprocess_default(&p);
    p.scale = 1.0f;
    p.n_channels = channels;
    p.height = h;
    p.width = w;
    return p;
}

static void test_preprocess_image(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    float out[3 * 8 * 8];

    /* identity, then scale/mean/std */
    const uint8_t g[6] = {0, 10, 20, 30, 40, 255}; /* [2,3] gray */
    ptq_preprocess p = raw_pp(1, 2, 3);
    CHECK(ptq_preprocess_image(&ctx, &p, g, PTQ_DT_UINT8, 2, 3, 1, 0, out) == PTQ_OK);
    for (int i = 0; i < 6; i++)
        CHECK(out[i] == (float)g[i]);
    p.scale = 1.0f / 255.0f;
    p.mean[0] = 0.5f;
    p.std[0] = 0.25f;
    CHECK(ptq_preprocess_image(&ctx, &p, g, PTQ_DT_UINT8, 2, 3, 1, 0, out) == PTQ_OK);
    for (int i = 0; i < 6; i++)
        CHECK(out[i] == ((float)g[i] * (1.0f / 255.0f) - 0.5f) / 0.25f);

    /* the planar rows' vector path (datasets/preprocess.c rows_direct) against the general loop, which an [H, W, C]
     * output takes: the same bits for every byte value, with BGR order, gray replicated and RGBA's alpha kept */
    {
        enum { H = 5, W = 37 };
        static uint8_t img[4 * H * W];
        static float planar[4 * H * W], nhwc[4 * H * W];
        for (int i = 0; i < 4 * H * W; i++)
            img[i] = (uint8_t)(i * 7 + 3);
        const int cases[][3] = {{3, 3, 1}, {3, 1, 0}, {4, 4, 0}, {3, 4, 1}}; /* model channels, image channels, bgr */
        for (int k = 0; k < 4; k++) {
            ptq_preprocess q = raw_pp(cases[k][0], H, W);
            q.scale = 1.0f / 255.0f;
            q.bgr = cases[k][2];
            for (int c = 0; c < 4; c++) {
                q.mean[c] = 0.485f - 0.03f * (float)c;
                q.std[c] = 0.229f + 0.01f * (float)c;
            }
            CHECK(ptq_preprocess_image(&ctx, &q, img, PTQ_DT_UINT8, H, W, cases[k][1], 1, planar) == PTQ_OK);
            q.nhwc = 1;
            CHECK(ptq_preprocess_image(&ctx, &q, img, PTQ_DT_UINT8, H, W, cases[k][1], 1, nhwc) == PTQ_OK);
            int same = 1;
            for (int c = 0; c < cases[k][0]; c++)
                for (int i = 0; i < H * W; i++)
                    same &= memcmp(&planar[c * H * W + i], &nhwc[i * cases[k][0] + c], sizeof(float)) == 0;
            CHECK(same);
            if (k == 1) /* gray: channel 0's mean and std in every channel's place of the source */
                CHECK(planar[0] == ((float)img[0] * (1.0f / 255.0f) - 0.485f) / 0.229f);
        }
    }

    /* gray -> RGB replicates; NHWC interleaves */
    p = raw_pp(3, 2, 3);
    CHECK(ptq_preprocess_image(&ctx, &p, g, PTQ_DT_UINT8, 2, 3, 1, 0, out) == PTQ_OK);
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < 6; i++)
            CHECK(out[c * 6 + i] == (float)g[i]);
    p.nhwc = 1;
    CHECK(ptq_preprocess_image(&ctx, &p, g, PTQ_DT_UINT8, 2, 3, 1, 0, out) == PTQ_OK);
    for (int i = 0; i < 6; i++)
        CHECK(out[i * 3] == (float)g[i] && out[i * 3 + 2] == (float)g[i]);

    /* RGB -> gray luma; BGR order; per-channel mean; RGBA drops alpha */
    const uint8_t rgba[8] = {10, 20, 30, 99, 200, 100, 50, 7}; /* [1,2,4] */
    p = raw_pp(1, 1, 2);
    CHECK(ptq_preprocess_image(&ctx, &p, rgba, PTQ_DT_UINT8, 1, 2, 4, 0, out) == PTQ_OK);
    CHECK(out[0] == 0.299f * 10.0f + 0.587f * 20.0f + 0.114f * 30.0f);
    CHECK(out[1] == 0.299f * 200.0f + 0.587f * 100.0f + 0.114f * 50.0f);
    p = raw_pp(3, 1, 2);
    p.bgr = 1;
    p.mean[0] = 1.0f; /* output channel 0 = B */
    CHECK(ptq_preprocess_image(&ctx, &p, rgba, PTQ_DT_UINT8, 1, 2, 4, 0, out) == PTQ_OK);
    CHECK(out[0] == 29.0f && out[1] == 49.0f && out[2] == 20.0f && out[4] == 10.0f && out[5] == 200.0f);

    /* 16-bit samples land on 0..255 (v / 257) */
    const uint16_t g16[3] = {65535, 257 * 7, 1000};
    p = raw_pp(1, 1, 3);
    CHECK(ptq_preprocess_image(&ctx, &p, g16, PTQ_DT_UINT16, 1, 3, 1, 0, out) == PTQ_OK);
    CHECK(out[0] == 255.0f && out[1] == 7.0f && out[2] == 1000.0f / 257.0f);

    /* planar float [C,H,W] */
    const float pl[6] = {1, 2, 3, 4, 5, 6}; /* [3,1,2] */
    p = raw_pp(3, 1, 2);
    p.nhwc = 1;
    CHECK(ptq_preprocess_image(&ctx, &p, pl, PTQ_DT_FLOAT, 1, 2, 3, 1, out) == PTQ_OK);
    CHECK(out[0] == 1 && out[1] == 3 && out[2] == 5 && out[3] == 2 && out[4] == 4 && out[5] == 6);

    /* 2x downscale of 2x2 blocks, as Pillow's antialiased bilinear gives it: inside, the 4-tap triangle
     * (1/8, 3/8, 3/8, 1/8) of a linear ramp is the block's value; at the top and bottom edges the taps
     * outside are dropped and the rest renormalized (row 0: 2/1.75 -> 1 more, row 7: one less) */
    uint8_t big[16 * 16];
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++)
            big[y * 16 + x] = (uint8_t)((y / 2) * 8 + x / 2);
    p = raw_pp(1, 8, 8);
    p.resize = 8;
    CHECK(ptq_preprocess_image(&ctx, &p, big, PTQ_DT_UINT8, 16, 16, 1, 0, out) == PTQ_OK);
    int exact = 1;
    for (int i = 0; i < 64; i++)
        exact &= out[i] == (float)(i + (i < 8) - (i >= 56));
    CHECK(exact);

    /* center crop: 10x8 image, shorter side 8 -> 8 (no scaling), crop 4x4 at (3, 2) */
    uint8_t tall[10 * 8];
    for (int i = 0; i < 80; i++)
        tall[i] = (uint8_t)i;
    p = raw_pp(1, 4, 4);
    p.resize = 8;
    CHECK(ptq_preprocess_image(&ctx, &p, tall, PTQ_DT_UINT8, 10, 8, 1, 0, out) == PTQ_OK);
    exact = 1;
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++)
            exact &= out[y * 4 + x] == (float)tall[(y + 3) * 8 + x + 2];
    CHECK(exact);
    /* resize + crop: 20x16, shorter side 16 -> 8 gives 10x8, then the same crop of the 2x2 block means */
    uint8_t tall2[20 * 16];
    for (int y = 0; y < 20; y++)
        for (int x = 0; x < 16; x++)
            tall2[y * 16 + x] = (uint8_t)((y / 2) * 8 + x / 2);
    CHECK(ptq_preprocess_image(&ctx, &p, tall2, PTQ_DT_UINT8, 20, 16, 1, 0, out) == PTQ_OK);
    exact = 1;
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++)
            exact &= out[y * 4 + x] == (float)((y + 3) * 8 + x + 2);
    CHECK(exact);

    /* 2x upscale: half-pixel centres, edges clamped */
    const uint8_t sq[4] = {0, 100, 100, 200};
    p = raw_pp(1, 4, 4);
    p.resize = 4;
    CHECK(ptq_preprocess_image(&ctx, &p, sq, PTQ_DT_UINT8, 2, 2, 1, 0, out) == PTQ_OK);
    const float want_up[16] = {0, 25, 75, 100, 25, 50, 100, 125, 75, 100, 150, 175, 100, 125, 175, 200};
    test_close("bilinear 2x2 -> 4x4", out, want_up, 16, 0, 1e-4f);

    /* errors */
    p = raw_pp(1, 4, 4);
    p.resize = 3;
    CHECK(ptq_preprocess_image(&ctx, &p, tall, PTQ_DT_UINT8, 10, 8, 1, 0, out) == PTQ_ERR_INVALID_ARG &&
          has(ctx.msg, "smaller than the crop"));
    /* another size without resize is refused, never stretched */
    p.resize = 0;
    CHECK(ptq_preprocess_image(&ctx, &p, tall, PTQ_DT_UINT8, 10, 8, 1, 0, out) == PTQ_ERR_SHAPE &&
          has(ctx.msg, "image is 8x10 (width x height) but the model takes 4x4") && has(ctx.msg, "resize="));
    p = raw_pp(1, 2, 3);
    CHECK(ptq_preprocess_image(&ctx, &p, g, PTQ_DT_INT16, 2, 3, 1, 0, out) == PTQ_ERR_UNSUPPORTED);
    CHECK(ptq_preprocess_image(&ctx, &p, g, PTQ_DT_UINT8, 2, 3, 5, 0, out) == PTQ_ERR_INVALID_ARG);
    p.height = 0;
    CHECK(ptq_preprocess_image(&ctx, &p, g, PTQ_DT_UINT8, 2, 3, 1, 0, out) == PTQ_ERR_INVALID_ARG);
}

/* ---- PNG color types ---- */

typedef struct png_spec {
    const char *name;
    int color, depth, interlace;
    int n_palette, n_trans;
    png_color palette[4];
    png_byte trans[4];
    png_color_16 trans_color;
    int has_trans_color;
} png_spec;

#define IMG_H 3
#define IMG_W 4

/* Sample c of pixel i (= y*IMG_W + x) as stored, for each test image. */
static unsigned stored(const png_spec *s, int i, int c)
{
    if (!strcmp(s->name, "a_gray8") || !strcmp(s->name, "c_graya8") || !strcmp(s->name, "l_gray8_trns"))
        return c == 0 ? (unsigned)(i * 20) : (unsigned)(255 - i);
    if (!strcmp(s->name, "b_gray16"))
        return (unsigned)(i * 5000 + 123);
    if (!strcmp(s->name, "d_rgb8") || !strcmp(s->name, "k_rgb8_adam7")) {
        const unsigned v[3] = {(unsigned)(i * 20), (unsigned)(255 - i * 20), (unsigned)(i * 7)};
        return v[c];
    }
    if (!strcmp(s->name, "e_rgb16")) {
        const unsigned v[3] = {(unsigned)(i * 5000), (unsigned)(65535 - i * 5000), (unsigned)(i * 3000 + 1)};
        return v[c];
    }
    if (!strcmp(s->name, "f_rgba8")) {
        const unsigned v[4] = {(unsigned)(i * 20), (unsigned)(i * 10), (unsigned)(255 - i * 20), (unsigned)(i * 3)};
        return v[c];
    }
    if (!strcmp(s->name, "g_palette2_trns"))
        return (unsigned)(i % 4);
    if (!strcmp(s->name, "h_gray1"))
        return (unsigned)((i / IMG_W + i % IMG_W) % 2);
    if (!strcmp(s->name, "i_gray2"))
        return (unsigned)(i % 4);
    return (unsigned)(i % 16); /* j_gray4 */
}

/* Expected RGB value (scale 1) of channel c at pixel i after decoding. */
static float expected_rgb(const png_spec *s, int i, int c)
{
    if (s->color == PNG_COLOR_TYPE_PALETTE) {
        const png_color *e = &s->palette[stored(s, i, 0)];
        return (float)(c == 0 ? e->red : c == 1 ? e->green : e->blue);
    }
    int gray = !(s->color & PNG_COLOR_MASK_COLOR);
    unsigned v = stored(s, i, gray ? 0 : c);
    if (s->depth == 16)
        return (float)v / 257.0f;
    if (s->depth < 8)
        return (float)(v * (255u / ((1u << s->depth) - 1)));
    return (float)v;
}

static int write_test_png(const char *path, const png_spec *s)
{
    int channels = s->color == PNG_COLOR_TYPE_RGB ? 3 : s->color == PNG_COLOR_TYPE_RGBA ? 4
                   : s->color == PNG_COLOR_TYPE_GRAY_ALPHA ? 2 : 1;
    png_byte rows[IMG_H][IMG_W * 4 * 2];
    png_bytep row_ptrs[IMG_H];
    memset(rows, 0, sizeof rows);
    for (int y = 0; y < IMG_H; y++) {
        row_ptrs[y] = rows[y];
        for (int x = 0; x < IMG_W; x++)
            for (int c = 0; c < channels; c++) {
                unsigned v = stored(s, y * IMG_W + x, c);
                if (s->depth == 16) {
                    rows[y][(x * channels + c) * 2] = (png_byte)(v >> 8);
                    rows[y][(x * channels + c) * 2 + 1] = (png_byte)v;
                } else if (s->depth == 8) {
                    rows[y][x * channels + c] = (png_byte)v;
                } else { /* packed, most significant bits first */
                    int per_byte = 8 / s->depth, bit = 8 - s->depth * (x % per_byte + 1);
                    rows[y][x / per_byte] |= (png_byte)(v << bit);
                }
            }
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    int ok = 0;
    if (!setjmp(png_jmpbuf(png))) {
        png_init_io(png, f);
        png_set_IHDR(png, info, IMG_W, IMG_H, s->depth, s->color, s->interlace, PNG_COMPRESSION_TYPE_DEFAULT,
                     PNG_FILTER_TYPE_DEFAULT);
        if (s->n_palette)
            png_set_PLTE(png, info, s->palette, s->n_palette);
        if (s->n_trans || s->has_trans_color)
            png_set_tRNS(png, info, s->n_trans ? s->trans : NULL, s->n_trans,
                         s->has_trans_color ? &s->trans_color : NULL);
        png_write_info(png, info);
        png_write_image(png, row_ptrs);
        png_write_end(png, NULL);
        ok = 1;
    }
    png_destroy_write_struct(&png, &info);
    fclose(f);
    return ok;
}

static void test_png_types(void)
{
    static const png_spec specs[] = {
        {"a_gray8", PNG_COLOR_TYPE_GRAY, 8, PNG_INTERLACE_NONE, 0, 0, {{0}}, {0}, {0}, 0},
        {"b_gray16", PNG_COLOR_TYPE_GRAY, 16, PNG_INTERLACE_NONE, 0, 0, {{0}}, {0}, {0}, 0},
        {"c_graya8", PNG_COLOR_TYPE_GRAY_ALPHA, 8, PNG_INTERLACE_NONE, 0, 0, {{0}}, {0}, {0}, 0},
        {"d_rgb8", PNG_COLOR_TYPE_RGB, 8, PNG_INTERLACE_NONE, 0, 0, {{0}}, {0}, {0}, 0},
        {"e_rgb16", PNG_COLOR_TYPE_RGB, 16, PNG_INTERLACE_NONE, 0, 0, {{0}}, {0}, {0}, 0},
        {"f_rgba8", PNG_COLOR_TYPE_RGBA, 8, PNG_INTERLACE_NONE, 0, 0, {{0}}, {0}, {0}, 0},
        {"g_palette2_trns", PNG_COLOR_TYPE_PALETTE, 2, PNG_INTERLACE_NONE, 4, 4,
         {{0, 255, 30}, {60, 195, 31}, {120, 135, 32}, {180, 75, 33}}, {0, 128, 255, 64}, {0}, 0},
        {"h_gray1", PNG_COLOR_TYPE_GRAY, 1, PNG_INTERLACE_NONE, 0, 0, {{0}}, {0}, {0}, 0},
        {"i_gray2", PNG_COLOR_TYPE_GRAY, 2, PNG_INTERLACE_NONE, 0, 0, {{0}}, {0}, {0}, 0},
        {"j_gray4", PNG_COLOR_TYPE_GRAY, 4, PNG_INTERLACE_NONE, 0, 0, {{0}}, {0}, {0}, 0},
        {"k_rgb8_adam7", PNG_COLOR_TYPE_RGB, 8, PNG_INTERLACE_ADAM7, 0, 0, {{0}}, {0}, {0}, 0},
        {"l_gray8_trns", PNG_COLOR_TYPE_GRAY, 8, PNG_INTERLACE_NONE, 0, 0, {{0}}, {0}, {0, 0, 0, 0, 40}, 1},
    };
    const int n_specs = (int)(sizeof specs / sizeof specs[0]);
    static const int64_t want_channels[] = {1, 1, 2, 3, 3, 4, 4, 1, 1, 1, 3, 2};
    char root[256], path[512];
    tpath(root, sizeof root, "types");
    mkdir(root, 0777);
    snprintf(path, sizeof path, "%s/c0", root);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/c1", root);
    mkdir(path, 0777);
    for (int i = 0; i < n_specs; i++) {
        snprintf(path, sizeof path, "%s/c0/%s.png", root, specs[i].name);
        CHECK_MSG(write_test_png(path, &specs[i]), "writing %s", path);
    }
    snprintf(path, sizeof path, "%s/c1/only.PNG", root);
    CHECK(write_test_png(path, &specs[0]));
    snprintf(path, sizeof path, "%s/c1/notes.txt", root);
    test_write_bytes(path, "x", 1);
    snprintf(path, sizeof path, "%s/.hidden", root);
    mkdir(path, 0777);

    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_dataset *ds = NULL;
    CHECK_MSG(ptq_dataset_open(&ctx, root, NULL, &ds) == PTQ_OK, "%s", ctx.msg);
    if (!ds)
        return;
    int64_t h, w, c;
    ptq_dataset_geometry(ds, &h, &w, &c);
    CHECK(ptq_dataset_count(ds) == n_specs + 1 && h == IMG_H && w == IMG_W && c == 1);
    CHECK(ptq_dataset_n_classes(ds) == 2 && !strcmp(ptq_dataset_class_name(ds, 1), "c1"));
    CHECK(ptq_dataset_class_name(ds, 2) == NULL && !strcmp(ptq_dataset_kind(ds), "image-folder"));
    CHECK(ptq_dataset_has_labels(ds));

    ptq_preprocess p = raw_pp(3, IMG_H, IMG_W);
    const int64_t per = 3 * IMG_H * IMG_W;
    float *x = malloc(sizeof(float) * (size_t)per * (size_t)(n_specs + 1));
    int32_t labels[16];
    CHECK_MSG(ptq_dataset_read(&ctx, ds, 0, n_specs + 1, &p, x, labels) == PTQ_OK, "%s", ctx.msg);
    for (int s = 0; s < n_specs; s++) {
        float want[3 * IMG_H * IMG_W];
        for (int ch = 0; ch < 3; ch++)
            for (int i = 0; i < IMG_H * IMG_W; i++)
                want[ch * IMG_H * IMG_W + i] = expected_rgb(&specs[s], i, ch);
        test_close(specs[s].name, x + s * per, want, per, 0, 0);
        CHECK(labels[s] == 0);
    }
    CHECK(labels[n_specs] == 1);
    /* gray model input from an RGB image: luma */
    p = raw_pp(1, IMG_H, IMG_W);
    CHECK(ptq_dataset_read(&ctx, ds, 3, 1, &p, x, NULL) == PTQ_OK);
    CHECK(x[5] == 0.299f * expected_rgb(&specs[3], 5, 0) + 0.587f * expected_rgb(&specs[3], 5, 1) +
                      0.114f * expected_rgb(&specs[3], 5, 2));
    free(x);
    ptq_dataset_close(ds);

    /* geometry reports channels after palette/tRNS expansion */
    for (int i = 0; i < n_specs; i++) {
        char one[256];
        snprintf(one, sizeof one, "%s/one_%d", g_tmp, i);
        snprintf(path, sizeof path, "%s/k", one);
        mkdir(one, 0777);
        mkdir(path, 0777);
        snprintf(path, sizeof path, "%s/k/a.png", one);
        write_test_png(path, &specs[i]);
        CHECK(ptq_dataset_open(&ctx, one, NULL, &ds) == PTQ_OK);
        if (ds) {
            ptq_dataset_geometry(ds, &h, &w, &c);
            CHECK_MSG(c == want_channels[i], "%s: %lld channels", specs[i].name, (long long)c);
        }
        ptq_dataset_close(ds);
        ds = NULL;
    }
}

/* An 8-bit gray PNG of h x w pixels (values are a ramp). */
static int write_gray_png(const char *path, int h, int w)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    png_byte row[256];
    int ok = 0;
    if (w <= (int)sizeof row && !setjmp(png_jmpbuf(png))) {
        png_init_io(png, f);
        png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
        png_write_info(png, info);
        for (int y = 0; y < h; y++) {
            for (int x = 0; x < w; x++)
                row[x] = (png_byte)(y * w + x);
            png_write_row(png, row);
        }
        png_write_end(png, NULL);
        ok = 1;
    }
    png_destroy_write_struct(&png, &info);
    fclose(f);
    return ok;
}

/* A folder root (named name) of one class "cls": a.png of the model's size and b.png of h x w, whose path goes into
 * path. */
static void two_png_folder(const char *name, int h, int w, char *root, size_t n_root, char *path, size_t n_path)
{
    tpath(root, n_root, name);
    mkdir(root, 0777);
    snprintf(path, n_path, "%s/cls", root);
    mkdir(path, 0777);
    snprintf(path, n_path, "%s/cls/a.png", root);
    CHECK(write_gray_png(path, IMG_H, IMG_W));
    snprintf(path, n_path, "%s/cls/b.png", root);
    CHECK(write_gray_png(path, h, w));
}

/* A folder whose first image fits the model and a later one does not: the
 * odd one fails with PTQ_ERR_SHAPE naming it unless resize is set. */
static void test_png_mixed_sizes(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_dataset *ds = NULL;
    char root[256], path[512];
    two_png_folder("mixed", 5, 7, root, sizeof root, path, sizeof path);
    CHECK_MSG(ptq_dataset_open(&ctx, root, NULL, &ds) == PTQ_OK, "%s", ctx.msg);
    if (!ds)
        return;
    ptq_preprocess p = raw_pp(1, IMG_H, IMG_W);
    float x[2 * IMG_H * IMG_W];
    CHECK_MSG(ptq_dataset_read(&ctx, ds, 0, 1, &p, x, NULL) == PTQ_OK, "%s", ctx.msg);
    CHECK_MSG(ptq_dataset_read(&ctx, ds, 0, 2, &p, x, NULL) == PTQ_ERR_SHAPE && has(ctx.msg, "cls/b.png") &&
                  has(ctx.msg, "image is 7x5 (width x height) but the model takes 4x3") && has(ctx.msg, "resize="),
              "%s", ctx.msg);
    /* with resize: 5x7 -> shorter side 3 gives 3x4, the crop is the whole image */
    p.resize = 3;
    CHECK_MSG(ptq_dataset_read(&ctx, ds, 0, 2, &p, x, NULL) == PTQ_OK, "%s", ctx.msg);
    CHECK(x[0] == 0.0f && x[IMG_H * IMG_W - 1] == (float)(IMG_H * IMG_W - 1));
    ptq_dataset_close(ds);
}

/* A PNG whose pixels need more than the memory limit (8192 x 256 gray, 2 MiB, under 1 MiB) is refused before
 * they are allocated, naming it and the limit, as a JPEG is: it was decoded whatever --max-memory said. */
static void test_png_memory_limit(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_dataset *ds = NULL;
    char root[256], path[512];
    two_png_folder("pngmem", 8192, 256, root, sizeof root, path, sizeof path);
    CHECK_MSG(ptq_dataset_open(&ctx, root, NULL, &ds) == PTQ_OK, "%s", ctx.msg);
    if (!ds)
        return;
    ptq_preprocess p = raw_pp(1, IMG_H, IMG_W);
    p.resize = 4;
    p.to_convert = 1; /* data convert's pixel cap (256 Mpx), not 64 times the model's */
    float x[2 * IMG_H * IMG_W];
    ptq_memory_set_budget((uint64_t)1 << 20);
    CHECK_MSG(ptq_dataset_read(&ctx, ds, 0, 1, &p, x, NULL) == PTQ_OK, "%s", ctx.msg);
    CHECK_MSG(ptq_dataset_read(&ctx, ds, 1, 1, &p, x, NULL) == PTQ_ERR_NOMEM && has(ctx.msg, "cls/b.png") &&
                  has(ctx.msg, "memory limit"), "%s", ctx.msg);
    ptq_memory_set_budget(0);
    CHECK_MSG(ptq_dataset_read(&ctx, ds, 1, 1, &p, x, NULL) == PTQ_OK, "%s", ctx.msg);
    ptq_dataset_close(ds);
}

/* An image swapped for a FIFO after the folder was listed: the read fails
 * naming it instead of waiting forever for a writer (alarm: a hang fails). */
static void test_png_swapped_fifo(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_dataset *ds = NULL;
    char root[256], path[512];
    two_png_folder("swapped", IMG_H, IMG_W, root, sizeof root, path, sizeof path);
    CHECK_MSG(ptq_dataset_open(&ctx, root, NULL, &ds) == PTQ_OK, "%s", ctx.msg);
    if (!ds)
        return;
    unlink(path);
    CHECK(mkfifo(path, 0666) == 0);
    ptq_preprocess p = raw_pp(1, IMG_H, IMG_W);
    float x[2 * IMG_H * IMG_W];
    alarm(30);
    CHECK_MSG(ptq_dataset_read(&ctx, ds, 0, 2, &p, x, NULL) == PTQ_ERR_IO && has(ctx.msg, "cls/b.png") &&
                  has(ctx.msg, "FIFO"),
              "%s", ctx.msg);
    alarm(0);
    ptq_dataset_close(ds);
}

static void test_png_errors(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_dataset *ds = NULL;
    char root[256], path[512], good[512];
    tpath(root, sizeof root, "bad");
    mkdir(root, 0777);
    snprintf(path, sizeof path, "%s/cls", root);
    mkdir(path, 0777);
    png_spec gray = {"a_gray8", PNG_COLOR_TYPE_GRAY, 8, PNG_INTERLACE_NONE, 0, 0, {{0}}, {0}, {0}, 0};
    snprintf(good, sizeof good, "%s/cls/a.png", root);
    CHECK(write_test_png(good, &gray));
    /* b: random bytes; c: the first half of a good PNG */
    uint8_t junk[100];
    for (int i = 0; i < 100; i++)
        junk[i] = (uint8_t)(i * 37 + 11);
    snprintf(path, sizeof path, "%s/cls/b.png", root);
    test_write_bytes(path, junk, sizeof junk);
    FILE *f = fopen(good, "rb");
    uint8_t whole[4096];
    size_t n = f ? fread(whole, 1, sizeof whole, f) : 0;
    if (f)
        fclose(f);
    snprintf(path, sizeof path, "%s/cls/c.png", root);
    test_write_bytes(path, whole, n / 2);

    CHECK_MSG(ptq_dataset_open(&ctx, root, NULL, &ds) == PTQ_OK, "%s", ctx.msg);
    if (ds) {
        ptq_preprocess p = raw_pp(1, IMG_H, IMG_W);
        float x[3 * IMG_H * IMG_W];
        CHECK(ptq_dataset_read(&ctx, ds, 0, 1, &p, x, NULL) == PTQ_OK);
        CHECK(ptq_dataset_read(&ctx, ds, 1, 1, &p, x, NULL) == PTQ_ERR_DATA && has(ctx.msg, "cls/b.png"));
        CHECK(ptq_dataset_read(&ctx, ds, 2, 1, &p, x, NULL) == PTQ_ERR_DATA && has(ctx.msg, "cls/c.png"));
        /* several bad samples in one batch: the lowest index is reported, whatever the thread count */
        CHECK(ptq_dataset_read(&ctx, ds, 0, 3, &p, x, NULL) == PTQ_ERR_DATA && has(ctx.msg, "cls/b.png"));
        CHECK(ptq_dataset_read(&ctx, ds, 2, 2, &p, x, NULL) == PTQ_ERR_INVALID_ARG && has(ctx.msg, "out of range"));
        CHECK(ptq_dataset_read(&ctx, ds, -1, 1, &p, x, NULL) == PTQ_ERR_INVALID_ARG);
        /* the message names the request as given: start + n overflowed int64 (undefined behaviour) */
        CHECK_MSG(ptq_dataset_read(&ctx, ds, INT64_MAX, 2, &p, x, NULL) == PTQ_ERR_INVALID_ARG &&
                      has(ctx.msg, "2 samples from sample 9223372036854775807 out of range") && !has(ctx.msg, "-9"),
                  "%s", ctx.msg);
        p.height = 0;
        CHECK(ptq_dataset_read(&ctx, ds, 0, 1, &p, x, NULL) == PTQ_ERR_INVALID_ARG);
        ptq_dataset_close(ds);
        ds = NULL;
    }
    /* an undecodable first image fails at open, naming it */
    unlink(good);
    CHECK(ptq_dataset_open(&ctx, root, NULL, &ds) == PTQ_ERR_DATA && has(ctx.msg, "cls/b.png") && !ds);

    /* empty folder, class folders without PNGs, PNGs without class folders */
    tpath(root, sizeof root, "empty");
    mkdir(root, 0777);
    CHECK(ptq_dataset_open(&ctx, root, NULL, &ds) == PTQ_ERR_DATA && has(ctx.msg, "no images in") &&
          has(ctx.msg, "empty"));
    snprintf(path, sizeof path, "%s/cls", root);
    mkdir(path, 0777);
    CHECK(ptq_dataset_open(&ctx, root, NULL, &ds) == PTQ_ERR_DATA && has(ctx.msg, "no images in"));
    tpath(root, sizeof root, "flat");
    mkdir(root, 0777);
    snprintf(path, sizeof path, "%s/a.png", root);
    CHECK(write_test_png(path, &gray));
    CHECK(ptq_dataset_open(&ctx, root, NULL, &ds) == PTQ_ERR_DATA && has(ctx.msg, "no images in"));

    /* missing path; a file that is not HDF5 */
    tpath(path, sizeof path, "missing.h5");
    CHECK(ptq_dataset_open(&ctx, path, NULL, &ds) == PTQ_ERR_IO && has(ctx.msg, "missing.h5"));
    tpath(path, sizeof path, "text.h5");
    test_write_bytes(path, "not hdf5 at all\n", 16);
    CHECK(ptq_dataset_open(&ctx, path, NULL, &ds) == PTQ_ERR_FORMAT && has(ctx.msg, "text.h5") &&
          has(ctx.msg, "not an HDF5 file"));
    CHECK(!ds);
}

/* ---- HDF5 variants ---- */

static ptq_tensor host_tensor(ptq_dtype dt, int ndim, const int64_t *dims, void *data)
{
    ptq_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.ndim = ndim;
    for (int i = 0; i < ndim; i++)
        t.dims[i] = dims[i];
    t.data = data;
    t.mem = PTQ_MEM_HOST;
    return t;
}

static ptq_status open_err(const char *path, const ptq_dataset_opts *o, ptq_ctx *ctx)
{
    ptq_dataset *ds = NULL;
    ptq_status st = ptq_dataset_open(ctx, path, o, &ds);
    ptq_dataset_close(ds);
    return st;
}

static void test_hdf5(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    enum { N = 5, C = 3, H = 4, W = 6 };
    static float nchw[N * C * H * W], nhwc[N * H * W * C];
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    float v = (float)(n * 1000 + c * 100 + y * 10 + x) * 0.5f;
                    nchw[((n * C + c) * H + y) * W + x] = v;
                    nhwc[((n * H + y) * W + x) * C + c] = v;
                }
    int16_t lab16[N] = {2, 0, 1, 2, 1};
    const int64_t d_nchw[4] = {N, C, H, W}, d_nhwc[4] = {N, H, W, C}, d_lab[1] = {N};
    ptq_tensor t_nchw = host_tensor(PTQ_DT_FLOAT, 4, d_nchw, nchw);
    ptq_tensor t_nhwc = host_tensor(PTQ_DT_FLOAT, 4, d_nhwc, nhwc);
    ptq_tensor t_lab = host_tensor(PTQ_DT_INT16, 1, d_lab, lab16);
    const char *names[3] = {"cat", "dog", "bird"};
    char p1[256], p2[256], p3[256];
    tpath(p1, sizeof p1, "nchw_gzip.h5");
    tpath(p2, sizeof p2, "nhwc_plain.h5");
    ptq_h5_write_opts o = {NULL, NULL, PTQ_H5_GZIP, 4, names, 3, 0};
    CHECK_MSG(ptq_dataset_write_hdf5(&ctx, p1, &t_nchw, &t_lab, &o) == PTQ_OK, "%s", ctx.msg);
    o.compress = PTQ_H5_NONE;
    o.images_key = "x";
    o.labels_key = "y";
    o.n_class_names = 0;
    CHECK_MSG(ptq_dataset_write_hdf5(&ctx, p2, &t_nhwc, &t_lab, &o) == PTQ_OK, "%s", ctx.msg);

    ptq_preprocess p = raw_pp(3, H, W);
    static float got1[N * C * H * W], got2[N * C * H * W];
    int32_t l1[N], l2[N];
    ptq_dataset *ds = NULL;
    CHECK_MSG(ptq_dataset_open(&ctx, p1, NULL, &ds) == PTQ_OK, "%s", ctx.msg);
    if (ds) {
        int64_t h, w, c;
        ptq_dataset_geometry(ds, &h, &w, &c);
        CHECK(h == H && w == W && c == C && ptq_dataset_count(ds) == N && !strcmp(ptq_dataset_kind(ds), "hdf5"));
        CHECK(ptq_dataset_n_classes(ds) == 3 && !strcmp(ptq_dataset_class_name(ds, 2), "bird"));
        CHECK(ptq_dataset_read(&ctx, ds, 0, N, &p, got1, l1) == PTQ_OK);
        CHECK(memcmp(got1, nchw, sizeof nchw) == 0);
        CHECK(l1[0] == 2 && l1[1] == 0 && l1[4] == 1);
        ptq_dataset_close(ds);
    }
    CHECK_MSG(ptq_dataset_open(&ctx, p2, NULL, &ds) == PTQ_OK, "%s", ctx.msg);
    if (ds) {
        CHECK(ptq_dataset_n_classes(ds) == -1 && ptq_dataset_class_name(ds, 0) == NULL);
        CHECK(ptq_dataset_read(&ctx, ds, 1, N - 1, &p, got2, l2) == PTQ_OK);
        CHECK(memcmp(got2, nchw + C * H * W, sizeof(float) * (N - 1) * C * H * W) == 0);
        CHECK(l2[0] == 0 && l2[3] == 1);
        ptq_dataset_close(ds);
    }
    /* an explicit layout that does not fit, an unknown one */
    ptq_dataset_opts bad_layout = {NULL, NULL, "NHW", 0, NULL, NULL, 0, 0, 0};
    CHECK(open_err(p2, &bad_layout, &ctx) == PTQ_ERR_FORMAT && has(ctx.msg, "layout NHW"));
    bad_layout.layout = "CHWN";
    CHECK(open_err(p2, &bad_layout, &ctx) == PTQ_ERR_INVALID_ARG);

    /* wrong keys: images, labels */
    ptq_dataset_opts keys = {"imgs", NULL, NULL, 0, NULL, NULL, 0, 0, 0};
    CHECK(open_err(p2, &keys, &ctx) == PTQ_ERR_DATA && has(ctx.msg, "'imgs'") && has(ctx.msg, "it has: x, y"));
    keys.images_key = NULL;
    keys.labels_key = "lbl";
    CHECK(open_err(p2, &keys, &ctx) == PTQ_ERR_DATA && has(ctx.msg, "'lbl'"));

    /* labels count mismatch; int16 images; an ambiguous layout; no images */
    tpath(p3, sizeof p3, "mismatch.h5");
    const int64_t d_lab4[1] = {N - 1};
    ptq_tensor t_lab4 = host_tensor(PTQ_DT_INT16, 1, d_lab4, lab16);
    CHECK(ptq_dataset_write_hdf5(&ctx, p3, &t_nchw, &t_lab4, NULL) == PTQ_OK);
    CHECK(open_err(p3, NULL, &ctx) == PTQ_ERR_DATA && has(ctx.msg, "4 entries for 5 images") &&
          has(ctx.msg, "mismatch.h5"));
    static int16_t i16[N * H * W];
    const int64_t d_nhw[3] = {N, H, W};
    ptq_tensor t_i16 = host_tensor(PTQ_DT_INT16, 3, d_nhw, i16);
    tpath(p3, sizeof p3, "int16.h5");
    CHECK(ptq_dataset_write_hdf5(&ctx, p3, &t_i16, NULL, NULL) == PTQ_OK);
    CHECK(open_err(p3, NULL, &ctx) == PTQ_ERR_FORMAT && has(ctx.msg, "int16") && has(ctx.msg, "uint8 or float32"));
    static float odd[N * 5 * 6 * 7];
    const int64_t d_odd[4] = {N, 5, 6, 7};
    ptq_tensor t_odd = host_tensor(PTQ_DT_FLOAT, 4, d_odd, odd);
    tpath(p3, sizeof p3, "ambiguous.h5");
    CHECK(ptq_dataset_write_hdf5(&ctx, p3, &t_odd, NULL, NULL) == PTQ_OK);
    CHECK(open_err(p3, NULL, &ctx) == PTQ_ERR_FORMAT && has(ctx.msg, "cannot guess the layout"));
    /* a shape either layout fits: [N,3,4,4] (and [N,1,4,4]) is 4x4 RGB (gray) in NCHW, not 3x4 (1x4) RGBA in NHWC,
     * which had been fed as a 4x4 model's input under a resize (exit 0), or refused as 'images are 4x3' */
    for (int c3 = 1; c3 <= 3; c3 += 2) {
        static uint8_t tiny[N * 3 * 4 * 4];
        const int64_t d_tiny[4] = {N, c3, 4, 4};
        ptq_tensor t_tiny = host_tensor(PTQ_DT_UINT8, 4, d_tiny, tiny);
        tpath(p3, sizeof p3, "tiny_nchw.h5");
        CHECK(ptq_dataset_write_hdf5(&ctx, p3, &t_tiny, NULL, NULL) == PTQ_OK);
        CHECK_MSG(ptq_dataset_open(&ctx, p3, NULL, &ds) == PTQ_OK, "%s", ctx.msg);
        if (ds) {
            int64_t gh = 0, gw = 0, gc = 0;
            ptq_dataset_geometry(ds, &gh, &gw, &gc);
            CHECK_MSG(gh == 4 && gw == 4 && gc == c3, "[N,%d,4,4] read as %lldx%lld with %lld channels", c3,
                      (long long)gw, (long long)gh, (long long)gc);
            ptq_dataset_close(ds);
        }
    }
    /* shapes both layouts fit, and a model that tells them apart: [N,1,3,3] into a 3x3 gray input is NCHW (the
     * shape alone reads 1x3 RGB, then refused as 'images are 3x1'); [N,3,4,4] into a 4-channel input of unknown
     * size is 3x4 RGBA (NHWC); [N,3,3,3] into a 3x3 RGB input fits both: the guess, and a note naming --layout */
    static const struct {
        int64_t d1, d2, d3, fit_h, fit_w, fit_c, want_h, want_w, want_c;
        const char *note;
    } fits[] = {{1, 3, 3, 3, 3, 1, 3, 3, 1, ""},
                {1, 3, 3, 0, 0, 0, 1, 3, 3, ""},
                {3, 4, 4, 0, 0, 4, 3, 4, 4, ""},
                {3, 4, 4, 3, 4, 0, 3, 4, 4, ""},
                {3, 4, 4, 4, 4, 3, 4, 4, 3, ""},
                {3, 3, 3, 3, 3, 3, 3, 3, 3, "fit the model input alike as NHWC and as NCHW; read as NHWC"},
                {3, 4, 4, 0, 0, 1, 4, 4, 3, "fit the model input neither as NHWC nor as NCHW; read as NCHW"}};
    for (size_t i = 0; i < sizeof fits / sizeof fits[0]; i++) {
        static uint8_t tiny[N * 4 * 4 * 4];
        const int64_t d_tiny[4] = {N, fits[i].d1, fits[i].d2, fits[i].d3};
        ptq_tensor t_tiny = host_tensor(PTQ_DT_UINT8, 4, d_tiny, tiny);
        tpath(p3, sizeof p3, "fit.h5");
        CHECK(ptq_dataset_write_hdf5(&ctx, p3, &t_tiny, NULL, NULL) == PTQ_OK);
        ptq_dataset_opts fit = {NULL, NULL, NULL, 0, NULL, NULL, fits[i].fit_h, fits[i].fit_w, fits[i].fit_c};
        CHECK_MSG(ptq_dataset_open(&ctx, p3, &fit, &ds) == PTQ_OK, "%s", ctx.msg);
        if (ds) {
            int64_t gh = 0, gw = 0, gc = 0;
            ptq_dataset_geometry(ds, &gh, &gw, &gc);
            const char *note = ptq_dataset_notes(ds);
            CHECK_MSG(gh == fits[i].want_h && gw == fits[i].want_w && gc == fits[i].want_c,
                      "[N,%lld,%lld,%lld] for %lldx%lld, %lld channels: read as %lldx%lld with %lld channels",
                      (long long)fits[i].d1, (long long)fits[i].d2, (long long)fits[i].d3, (long long)fits[i].fit_h,
                      (long long)fits[i].fit_w, (long long)fits[i].fit_c, (long long)gh, (long long)gw, (long long)gc);
            CHECK_MSG(*fits[i].note ? has(note, fits[i].note) && has(note, "fit.h5") && has(note, "--layout N")
                                    : !*note, "case %zu: note '%s'", i, note);
            ptq_dataset_close(ds);
        }
    }
    const int64_t d_empty[3] = {0, H, W};
    ptq_tensor t_empty = host_tensor(PTQ_DT_UINT8, 3, d_empty, NULL);
    tpath(p3, sizeof p3, "empty.h5");
    CHECK(ptq_dataset_write_hdf5(&ctx, p3, &t_empty, NULL, NULL) == PTQ_OK);
    CHECK(open_err(p3, NULL, &ctx) == PTQ_ERR_DATA && has(ctx.msg, "no images in"));

    /* an unlabelled uint8 set; negative labels and labels past class_names */
    static uint8_t u8[N * H * W];
    for (int i = 0; i < N * H * W; i++)
        u8[i] = (uint8_t)(i * 3);
    ptq_tensor t_u8 = host_tensor(PTQ_DT_UINT8, 3, d_nhw, u8);
    tpath(p3, sizeof p3, "unlabelled.h5");
    CHECK(ptq_dataset_write_hdf5(&ctx, p3, &t_u8, NULL, NULL) == PTQ_OK);
    p = raw_pp(1, H, W);
    CHECK_MSG(ptq_dataset_open(&ctx, p3, NULL, &ds) == PTQ_OK, "%s", ctx.msg);
    if (ds) {
        CHECK(!ptq_dataset_has_labels(ds));
        CHECK(ptq_dataset_read(&ctx, ds, 0, 2, &p, got1, l1) == PTQ_ERR_DATA && has(ctx.msg, "no labels"));
        CHECK(ptq_dataset_read(&ctx, ds, 3, 2, &p, got1, NULL) == PTQ_OK);
        CHECK(got1[0] == (float)u8[3 * H * W] && got1[2 * H * W - 1] == (float)u8[N * H * W - 1]);
        ptq_dataset_close(ds);
    }
    int64_t lab64[N] = {0, 1, -3, 1, 7};
    ptq_tensor t_lab64 = host_tensor(PTQ_DT_INT64, 1, d_lab, lab64);
    tpath(p3, sizeof p3, "badlabels.h5");
    o = (ptq_h5_write_opts){NULL, NULL, PTQ_H5_ZSTD, 1, names, 3, 0};
    CHECK(ptq_dataset_write_hdf5(&ctx, p3, &t_u8, &t_lab64, &o) == PTQ_OK);
    CHECK_MSG(ptq_dataset_open(&ctx, p3, NULL, &ds) == PTQ_OK, "%s", ctx.msg);
    if (ds) {
        CHECK(ptq_dataset_read(&ctx, ds, 0, 2, &p, got1, l1) == PTQ_OK && l1[1] == 1);
        CHECK(ptq_dataset_read(&ctx, ds, 1, 2, &p, got1, l1) == PTQ_ERR_DATA && has(ctx.msg, "sample 2") &&
              has(ctx.msg, "negative"));
        CHECK(ptq_dataset_read(&ctx, ds, 4, 1, &p, got1, l1) == PTQ_ERR_DATA && has(ctx.msg, "sample 4") &&
              has(ctx.msg, "class_names"));
        ptq_dataset_close(ds);
    }
    /* append a second set to the same file and pick it by key */
    o = (ptq_h5_write_opts){"more/images", "more/labels", PTQ_H5_ZSTD, 9, NULL, 0, 1};
    CHECK_MSG(ptq_dataset_write_hdf5(&ctx, p3, &t_u8, &t_lab, &o) == PTQ_OK, "%s", ctx.msg);
    keys = (ptq_dataset_opts){"more/images", "more/labels", "NHW", 0, NULL, NULL, 0, 0, 0};
    CHECK_MSG(ptq_dataset_open(&ctx, p3, &keys, &ds) == PTQ_OK, "%s", ctx.msg);
    if (ds) {
        CHECK(ptq_dataset_read(&ctx, ds, 0, N, &p, got1, l1) == PTQ_OK && l1[0] == 2 && l1[2] == 1);
        ptq_dataset_close(ds);
    }
    /* writer argument checks */
    o = (ptq_h5_write_opts){NULL, NULL, PTQ_H5_ZSTD, 99, NULL, 0, 0};
    CHECK(ptq_dataset_write_hdf5(&ctx, p3, &t_u8, NULL, &o) == PTQ_ERR_INVALID_ARG && has(ctx.msg, "zstd level"));
    CHECK(ptq_dataset_write_hdf5(&ctx, p3, &t_u8, &t_nchw, NULL) == PTQ_ERR_INVALID_ARG);
}

/* ---- IDX converter ---- */

static void idx_header(uint8_t *b, int ndim, const uint32_t *dims)
{
    b[0] = b[1] = 0;
    b[2] = 0x08;
    b[3] = (uint8_t)ndim;
    for (int i = 0; i < ndim; i++) {
        b[4 + 4 * i] = (uint8_t)(dims[i] >> 24);
        b[5 + 4 * i] = (uint8_t)(dims[i] >> 16);
        b[6 + 4 * i] = (uint8_t)(dims[i] >> 8);
        b[7 + 4 * i] = (uint8_t)dims[i];
    }
}

static int leftovers(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        n += strstr(e->d_name, ".tmp-") != NULL;
    if (d)
        closedir(d);
    return n;
}

static void test_convert_small(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    enum { N = 12, H = 3, W = 5 };
    uint8_t img[16 + N * H * W], lab[8 + N], lab_short[8 + N - 1];
    const uint32_t di[3] = {N, H, W}, dl[1] = {N}, dl_short[1] = {N - 1};
    idx_header(img, 3, di);
    idx_header(lab, 1, dl);
    idx_header(lab_short, 1, dl_short);
    for (int i = 0; i < N * H * W; i++)
        img[16 + i] = (uint8_t)(i * 7);
    for (int i = 0; i < N; i++)
        lab[8 + i] = (uint8_t)(i % 11); /* 11 classes: folders 00..10 must keep label order */
    memcpy(lab_short + 8, lab + 8, N - 1);
    char pi[256], pl[256], ps[256], out[256], bad[256];
    tpath(pi, sizeof pi, "small-images-idx3-ubyte");
    tpath(pl, sizeof pl, "small-labels-idx1-ubyte");
    tpath(ps, sizeof ps, "short-labels-idx1-ubyte");
    test_write_bytes(pi, img, sizeof img);
    test_write_bytes(pl, lab, sizeof lab);
    test_write_bytes(ps, lab_short, sizeof lab_short);

    tpath(out, sizeof out, "small_png");
    CHECK_MSG(ptq_data_convert_idx(&ctx, pi, pl, out, PTQ_CONVERT_PNG, NULL, 0, 3) == PTQ_OK, "%s", ctx.msg);
    ptq_dataset *ds = NULL;
    CHECK_MSG(ptq_dataset_open(&ctx, out, NULL, &ds) == PTQ_OK, "%s", ctx.msg);
    if (ds) {
        CHECK(ptq_dataset_n_classes(ds) == 11 && !strcmp(ptq_dataset_class_name(ds, 10), "10") &&
              !strcmp(ptq_dataset_class_name(ds, 2), "02"));
        float x[N * H * W];
        int32_t l[N];
        ptq_preprocess p = raw_pp(1, H, W);
        CHECK(ptq_dataset_read(&ctx, ds, 0, N, &p, x, l) == PTQ_OK);
        /* order: class by class, index order within a class: labels 0,0,1,... (i%11 -> samples 0 and 11 are class 0) */
        CHECK(l[0] == 0 && l[1] == 0 && l[2] == 1 && l[11] == 10);
        CHECK(x[H * W] == (float)img[16 + 11 * H * W] && x[2 * H * W + 1] == (float)img[16 + 1 * H * W + 1]);
        ptq_dataset_close(ds);
    }
    /* exists -> refused */
    CHECK(ptq_data_convert_idx(&ctx, pi, pl, out, PTQ_CONVERT_PNG, NULL, 0, 3) == PTQ_ERR_IO &&
          has(ctx.msg, "already exists"));
    /* count mismatch names both files; nothing left behind */
    tpath(out, sizeof out, "convert_fail.h5");
    CHECK(ptq_data_convert_idx(&ctx, pi, ps, out, PTQ_CONVERT_HDF5, NULL, 0, 3) == PTQ_ERR_FORMAT &&
          has(ctx.msg, "small-images-idx3-ubyte") && has(ctx.msg, "short-labels-idx1-ubyte"));
    /* labels given where images are expected: wrong dims */
    CHECK(ptq_data_convert_idx(&ctx, pl, pl, out, PTQ_CONVERT_HDF5, NULL, 0, 3) == PTQ_ERR_FORMAT &&
          has(ctx.msg, "dimensions"));
    /* bad magic; truncated images (fails mid-write, after the temporary exists) */
    tpath(bad, sizeof bad, "bad-magic");
    test_write_bytes(bad, "\x01\x02\x08\x03xxxxxxxxxxxx", 16);
    CHECK(ptq_data_convert_idx(&ctx, bad, pl, out, PTQ_CONVERT_HDF5, NULL, 0, 3) == PTQ_ERR_FORMAT &&
          has(ctx.msg, "not an IDX file"));
    tpath(bad, sizeof bad, "truncated-images");
    test_write_bytes(bad, img, sizeof img - 10);
    CHECK(ptq_data_convert_idx(&ctx, bad, pl, out, PTQ_CONVERT_HDF5, NULL, 0, 3) == PTQ_ERR_FORMAT &&
          has(ctx.msg, "truncated"));
    tpath(out, sizeof out, "truncated_png");
    CHECK(ptq_data_convert_idx(&ctx, bad, pl, out, PTQ_CONVERT_PNG, NULL, 0, 3) == PTQ_ERR_FORMAT);
    struct stat sb;
    CHECK(stat(out, &sb) != 0);
    CHECK(leftovers(g_tmp) == 0);
    /* missing input; class names that would renumber a PNG folder; too few names */
    tpath(bad, sizeof bad, "nope.gz");
    CHECK(ptq_data_convert_idx(&ctx, bad, pl, out, PTQ_CONVERT_PNG, NULL, 0, 3) == PTQ_ERR_IO &&
          has(ctx.msg, "nope.gz"));
    const char *unsorted[2] = {"zebra", "apple"};
    CHECK(ptq_data_convert_idx(&ctx, pi, pl, out, PTQ_CONVERT_PNG, unsorted, 2, 3) == PTQ_ERR_INVALID_ARG &&
          has(ctx.msg, "label order"));
    CHECK(ptq_data_convert_idx(&ctx, pi, pl, out, PTQ_CONVERT_HDF5, unsorted, 2, 3) == PTQ_ERR_DATA &&
          has(ctx.msg, "no class name"));
    CHECK(ptq_data_convert_idx(&ctx, pi, pl, out, PTQ_CONVERT_HDF5, NULL, 0, 1000) == PTQ_ERR_INVALID_ARG);
    CHECK(leftovers(g_tmp) == 0);
    /* one 4096x4096 image (16 MiB) past a 1 MiB memory limit: refused before its block is allocated, with the
     * limit named (it was converted whatever --max-memory said) */
    const uint32_t big[3] = {1, 4096, 4096}, one[1] = {1};
    uint8_t big_hdr[16], one_lab[9] = {0};
    idx_header(big_hdr, 3, big);
    idx_header(one_lab, 1, one);
    tpath(bad, sizeof bad, "big-images-idx3-ubyte");
    FILE *bf = fopen(bad, "wb");
    CHECK(bf && fwrite(big_hdr, 1, sizeof big_hdr, bf) == sizeof big_hdr &&
          fseek(bf, 4096L * 4096 - 1, SEEK_CUR) == 0 && fputc(0, bf) == 0 && fclose(bf) == 0);
    tpath(ps, sizeof ps, "one-label-idx1-ubyte");
    test_write_bytes(ps, one_lab, sizeof one_lab);
    tpath(out, sizeof out, "big.h5");
    ptq_memory_set_budget((uint64_t)1 << 20);
    CHECK_MSG(ptq_data_convert_idx(&ctx, bad, ps, out, PTQ_CONVERT_HDF5, NULL, 0, 3) == PTQ_ERR_NOMEM &&
              has(ctx.msg, "memory limit") && has(ctx.msg, "big-images-idx3-ubyte"), "%s", ctx.msg);
    ptq_memory_set_budget(0);
    CHECK(stat(out, &sb) != 0 && leftovers(g_tmp) == 0);
}

/* ---- Fashion-MNIST round trips ---- */

/* Reads a whole gzip'd IDX file's data (after the header of ndim dims). */
static uint8_t *read_idx(const char *path, int ndim, int64_t *count)
{
    gzFile gz = gzopen(path, "rb");
    if (!gz)
        return NULL;
    uint8_t hdr[16];
    int want = 4 + 4 * ndim;
    uint8_t *data = NULL;
    if (gzread(gz, hdr, (unsigned)want) == want) {
        int64_t n = 1;
        for (int i = 0; i < ndim; i++)
            n *= (int64_t)hdr[4 + 4 * i] << 24 | hdr[5 + 4 * i] << 16 | hdr[6 + 4 * i] << 8 | hdr[7 + 4 * i];
        *count = (int64_t)hdr[4] << 24 | hdr[5] << 16 | hdr[6] << 8 | hdr[7];
        data = malloc((size_t)n);
        if (data && gzread(gz, data, (unsigned)n) != (int)n) {
            free(data);
            data = NULL;
        }
    }
    gzclose(gz);
    return data;
}

/* Checks every sample of the HDF5 set at path against the first samples of
 * the IDX bytes (scale 1: floats equal bytes), reading in odd batches. */
static void check_h5_against_idx(const char *path, const uint8_t *img, const uint8_t *lab, int64_t n_idx)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_dataset *ds = NULL;
    CHECK_MSG(ptq_dataset_open(&ctx, path, NULL, &ds) == PTQ_OK, "%s", ctx.msg);
    if (!ds)
        return;
    int64_t n = ptq_dataset_count(ds), h, w, c;
    ptq_dataset_geometry(ds, &h, &w, &c);
    CHECK(n > 0 && n <= n_idx && h == 28 && w == 28 && c == 1);
    CHECK(ptq_dataset_n_classes(ds) == 10 && !strcmp(ptq_dataset_class_name(ds, 0), fm_classes[0]) &&
          !strcmp(ptq_dataset_class_name(ds, 9), fm_classes[9]));
    ptq_preprocess p = raw_pp(1, 28, 28);
    enum { B = 997 };
    float *x = malloc(sizeof(float) * B * 784);
    int32_t l[B];
    int64_t bad_px = 0, bad_lab = 0;
    for (int64_t at = 0; x && at < n; at += B) {
        int64_t m = n - at < B ? n - at : B;
        if (ptq_dataset_read(&ctx, ds, at, m, &p, x, l) != PTQ_OK) {
            CHECK_MSG(0, "%s", ctx.msg);
            break;
        }
        for (int64_t i = 0; i < m * 784; i++)
            bad_px += x[i] != (float)img[at * 784 + i];
        for (int64_t i = 0; i < m; i++)
            bad_lab += l[i] != lab[at + i];
    }
    CHECK_MSG(bad_px == 0 && bad_lab == 0, "%s: %lld pixels and %lld labels differ from the IDX files", path,
              (long long)bad_px, (long long)bad_lab);
    free(x);
    ptq_dataset_close(ds);
}

static void test_fashion(const uint8_t *img, const uint8_t *lab, int64_t n)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    char h5[256], png[256];
    tpath(h5, sizeof h5, "fm.h5");
    tpath(png, sizeof png, "fm_png");
    CHECK_MSG(ptq_data_convert_idx(&ctx, FM_IMAGES, FM_LABELS, h5, PTQ_CONVERT_HDF5, fm_classes, 10, 3) == PTQ_OK,
              "%s", ctx.msg);
    CHECK_MSG(ptq_data_convert_idx(&ctx, FM_IMAGES, FM_LABELS, png, PTQ_CONVERT_PNG, fm_classes, 10, 3) == PTQ_OK,
              "%s", ctx.msg);
    CHECK(leftovers(g_tmp) == 0);
    check_h5_against_idx(h5, img, lab, n);

    /* the last 3 samples and a read across the first chunk boundary */
    ptq_dataset *a = NULL, *b = NULL;
    CHECK_MSG(ptq_dataset_open(&ctx, h5, NULL, &a) == PTQ_OK, "%s", ctx.msg);
    CHECK_MSG(ptq_dataset_open(&ctx, png, NULL, &b) == PTQ_OK, "%s", ctx.msg);
    if (!a || !b) {
        ptq_dataset_close(a);
        ptq_dataset_close(b);
        return;
    }
    ptq_preprocess p = raw_pp(1, 28, 28);
    float x[3 * 784];
    int32_t l[3];
    CHECK(ptq_dataset_read(&ctx, a, n - 3, 3, &p, x, l) == PTQ_OK);
    int same = 1;
    for (int i = 0; i < 3 * 784; i++)
        same &= x[i] == (float)img[(n - 3) * 784 + i];
    CHECK(same && l[0] == lab[n - 3] && l[2] == lab[n - 1]);
    CHECK(ptq_dataset_read(&ctx, a, 1023, 2, &p, x, l) == PTQ_OK);
    same = 1;
    for (int i = 0; i < 2 * 784; i++)
        same &= x[i] == (float)img[1023 * 784 + i];
    CHECK(same && l[1] == lab[1024]);

    /* PNG folder vs HDF5: the PNG order is class by class, index order within a
     * class; the demo model's preprocessing must give bit-identical batches */
    CHECK(ptq_dataset_count(b) == n && ptq_dataset_n_classes(b) == 10 &&
          !strcmp(ptq_dataset_class_name(b, 3), fm_classes[3]));
    CHECK(ptq_preprocess_parse(&ctx, "scale=1/255 mean=0.286 std=0.353 size=28", &p) == PTQ_OK);
    int64_t *order = malloc(sizeof(int64_t) * (size_t)n);
    float *xa = malloc(sizeof(float) * 784 * (size_t)n);
    int32_t *la = malloc(sizeof(int32_t) * (size_t)n);
    enum { B = 613 };
    float *xb = malloc(sizeof(float) * 784 * B);
    int32_t lb[B];
    if (order && xa && la && xb && ptq_dataset_read(&ctx, a, 0, n, &p, xa, la) == PTQ_OK) {
        int64_t k = 0;
        for (int c = 0; c < 10; c++)
            for (int64_t i = 0; i < n; i++)
                if (lab[i] == c)
                    order[k++] = i;
        CHECK(k == n);
        int64_t bad_samples = 0, bad_labels = 0;
        for (int64_t at = 0; at < n; at += B) {
            int64_t m = n - at < B ? n - at : B;
            if (ptq_dataset_read(&ctx, b, at, m, &p, xb, lb) != PTQ_OK) {
                CHECK_MSG(0, "%s", ctx.msg);
                break;
            }
            for (int64_t j = 0; j < m; j++) {
                int64_t i = order[at + j];
                bad_samples += memcmp(xb + j * 784, xa + i * 784, sizeof(float) * 784) != 0;
                bad_labels += lb[j] != la[i];
            }
        }
        CHECK_MSG(bad_samples == 0 && bad_labels == 0, "png vs hdf5: %lld samples, %lld labels differ",
                  (long long)bad_samples, (long long)bad_labels);
        CHECK(xa[0] == ((float)img[0] * (float)(1.0 / 255.0) - 0.286f) / 0.353f);
    } else {
        CHECK_MSG(0, "reading %s: %s", h5, ctx.msg);
    }
    free(order);
    free(xa);
    free(la);
    free(xb);
    ptq_dataset_close(a);
    ptq_dataset_close(b);
}

/* Helper mode for datasets_test.py: each FILE (h5py-made, e.g. sparse images
 * of absurd shape) must fail to open with PTQ_ERR_FORMAT naming it and 'images'. */
static int check_bad_h5(int n_files, char **files)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    for (int i = 0; i < n_files; i++) {
        ptq_status st = open_err(files[i], NULL, &ctx);
        CHECK_MSG(st == PTQ_ERR_FORMAT && has(ctx.msg, files[i]) && has(ctx.msg, "'images'"), "%s: status %d: %s",
                  files[i], (int)st, ctx.msg);
        printf("test_datasets: %s: %s\n", files[i], ctx.msg);
    }
    return test_done("test_datasets (bad HDF5)");
}

int main(int argc, char **argv)
{
    int64_t n = 0, n_lab = 0;
    if (argc > 1 && !strcmp(argv[1], "--bad-h5"))
        return check_bad_h5(argc - 2, argv + 2);
    fm_paths();
    uint8_t *img = read_idx(FM_IMAGES, 3, &n);
    uint8_t *lab = read_idx(FM_LABELS, 1, &n_lab);
    if (argc > 1) { /* helper mode for tests/datasets_test.py */
        ptq_ctx ctx;
        ptq_ctx_init(&ctx);
        if (!img || !lab) {
            printf("test_datasets: %s missing, skipped\n", FM_DIR);
            return PTQ_TEST_SKIP;
        }
        CHECK_MSG(ptq_data_convert_idx(&ctx, FM_IMAGES, FM_LABELS, argv[1], PTQ_CONVERT_HDF5, fm_classes, 10, 3) ==
                      PTQ_OK,
                  "%s", ctx.msg);
        if (argc > 2)
            check_h5_against_idx(argv[2], img, lab, n);
        free(img);
        free(lab);
        return test_done("test_datasets (helper)");
    }
    snprintf(g_tmp, sizeof g_tmp, "/tmp/ptq_datasets_XXXXXX");
    if (!mkdtemp(g_tmp)) {
        perror("mkdtemp");
        return 1;
    }
    test_parse();
    test_preprocess_image();
    test_png_types();
    test_png_errors();
    test_png_mixed_sizes();
    test_png_memory_limit();
    test_png_swapped_fifo();
    test_hdf5();
    test_convert_small();
    int skipped = !img || !lab || n != n_lab;
    if (!skipped)
        test_fashion(img, lab, n);
    else
        printf("test_datasets: %s missing, Fashion-MNIST round trips skipped\n", FM_DIR);
    free(img);
    free(lab);
    test_remove_tree(g_tmp);
    int rc = test_done("test_datasets");
    return rc == 0 && skipped ? PTQ_TEST_SKIP : rc;
}
