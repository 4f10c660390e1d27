/* datasets/: JPEG folders (datasets/jpeg_codec.c, datasets/image_folder.c):
 * pixels against TurboJPEG's own decode, mixed PNG/JPEG folders, the DCT
 * scale picked for a resize, corrupt/truncated/huge JPEGs, labels and
 * classes files (good and every refusal), the content hash, and
 * ptq_data_convert_folder. Fixtures in a mkdtemp dir. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "datasets/datasets_internal.h"
#include "ptq/dataset.h"
#include "testlib.h"

static char g_tmp[64];

static void write_text(const char *path, const char *text)
{
    test_write_bytes(path, text, strlen(text));
}

/* A smooth test pattern [h, w, c] with some detail, so DCT scaling changes it. */
static uint8_t *pattern(int h, int w, int c, int seed)
{
    uint8_t *px = malloc((size_t)h * w * c);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int k = 0; k < c; k++)
                px[((size_t)y * w + x) * c + k] =
                    (uint8_t)((x * 7 + y * 3 + k * 50 + seed * 31 + ((x / 4 + y / 4) % 2) * 40) & 0xff);
    return px;
}

/* Encodes px [h, w, c] (c 1 or 3) as a JPEG; TurboJPEG-allocated bytes the caller tjFree's. */
static unsigned char *encode(const uint8_t *px, int h, int w, int c, int quality, int subsamp, unsigned long *n)
{
    tjhandle tj = tjInitCompress();
    unsigned char *out = NULL;
    *n = 0;
    int ok = tj && tjCompress2(tj, px, w, 0, h, c == 1 ? TJPF_GRAY : TJPF_RGB, &out, n, c == 1 ? TJSAMP_GRAY : subsamp,
                               quality, 0) == 0;
    CHECK_MSG(ok, "tjCompress2: %s", tj ? tjGetErrorStr2(tj) : "no handle");
    if (tj)
        tjDestroy(tj);
    return ok ? out : NULL;
}

static unsigned long write_jpeg(const char *path, int h, int w, int c, int seed)
{
    uint8_t *px = pattern(h, w, c, seed);
    unsigned long n = 0;
    unsigned char *jpg = encode(px, h, w, c, 90, TJSAMP_420, &n);
    if (jpg)
        test_write_bytes(path, jpg, n);
    tjFree(jpg);
    free(px);
    return n;
}

/* TurboJPEG's decode of path at w x h (its own scaling): the reference. */
static uint8_t *ref_decode(const char *path, int w, int h, int c)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)n);
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    uint8_t *px = malloc((size_t)w * h * c);
    tjhandle tj = tjInitDecompress();
    int ok = got == (size_t)n &&
             tjDecompress2(tj, buf, (unsigned long)n, px, w, 0, h, c == 1 ? TJPF_GRAY : TJPF_RGB, 0) == 0;
    tjDestroy(tj);
    free(buf);
    if (!ok) {
        free(px);
        return NULL;
    }
    return px;
}

static ptq_preprocess raw_pp(int c, int64_t h, int64_t w)
{
    ptq_preprocess p;
    ptq_preprocess_default(&p);
    p.scale = 1.0f;
    p.n_channels = c;
    p.height = h;
    p.width = w;
    p.nhwc = 1;
    return p;
}

static const char *tpath(char *buf, size_t n, const char *rel)
{
    snprintf(buf, n, "%s/%s", g_tmp, rel);
    return buf;
}

static void mkdirs(const char *root, const char *const *subs, int n)
{
    char p[512];
    mkdir(root, 0777);
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/%s", root, subs[i]);
        mkdir(p, 0777);
    }
}

/* A folder mixing PNG and JPEG (gray and RGB, .jpg/.JPEG/.jpeg): order, labels, and pixels equal to TurboJPEG's. */
static void test_mixed_folder(void)
{
    char root[256], p[512];
    tpath(root, sizeof root, "mixed");
    const char *subs[] = {"a", "b"};
    mkdirs(root, subs, 2);
    snprintf(p, sizeof p, "%s/a/1.jpg", root);
    write_jpeg(p, 16, 16, 3, 1);
    snprintf(p, sizeof p, "%s/a/2.JPEG", root);
    write_jpeg(p, 16, 16, 1, 2);
    snprintf(p, sizeof p, "%s/b/0.jpeg", root);
    write_jpeg(p, 16, 16, 3, 3);
    uint8_t gray[16 * 16];
    for (int i = 0; i < 256; i++)
        gray[i] = (uint8_t)i;
    snprintf(p, sizeof p, "%s/b/1.png", root);
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    CHECK(ds_png_write_gray8(&ctx, p, gray, 16, 16) == PTQ_OK);
    snprintf(p, sizeof p, "%s/b/notes.jpg.txt", root);
    write_text(p, "not an image");

    ptq_dataset *ds = NULL;
    CHECK_MSG(ptq_dataset_open(&ctx, root, NULL, &ds) == PTQ_OK, "%s", ctx.msg);
    if (!ds)
        return;
    int64_t h, w, c;
    ptq_dataset_geometry(ds, &h, &w, &c);
    CHECK(ptq_dataset_count(ds) == 4 && h == 16 && w == 16 && c == 3);
    CHECK(ptq_dataset_n_classes(ds) == 2 && !strcmp(ptq_dataset_class_name(ds, 1), "b"));
    ptq_preprocess pp = raw_pp(3, 16, 16);
    float x[4 * 16 * 16 * 3];
    int32_t labels[4];
    CHECK_MSG(ptq_dataset_read(&ctx, ds, 0, 4, &pp, x, labels) == PTQ_OK, "%s", ctx.msg);
    CHECK(labels[0] == 0 && labels[1] == 0 && labels[2] == 1 && labels[3] == 1);
    const char *files[3] = {"a/1.jpg", "a/2.JPEG", "b/0.jpeg"};
    const int chans[3] = {3, 1, 3};
    for (int s = 0; s < 3; s++) {
        snprintf(p, sizeof p, "%s/%s", root, files[s]);
        uint8_t *ref = ref_decode(p, 16, 16, chans[s]);
        CHECK(ref != NULL);
        int bad = 0;
        for (int i = 0; ref && i < 16 * 16; i++)
            for (int k = 0; k < 3; k++)
                bad += x[(s * 256 + i) * 3 + k] != (float)ref[i * chans[s] + (chans[s] == 1 ? 0 : k)];
        CHECK_MSG(bad == 0, "%s: %d samples differ from TurboJPEG's decode", files[s], bad);
        free(ref);
    }
    int bad = 0;
    for (int i = 0; i < 256; i++)
        bad += x[(3 * 256 + i) * 3] != (float)gray[i];
    CHECK(bad == 0);
    ptq_dataset_close(ds);
}

/* The DCT scale: the smallest M/8 whose shorter side still covers the resize; none when the image is the
 * model's size. */
static void test_dct_scale(void)
{
    char p[512];
    tpath(p, sizeof p, "big.jpg");
    write_jpeg(p, 192, 256, 3, 4);
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ds_jpeg dec;
    ds_image img;
    memset(&dec, 0, sizeof dec);
    memset(&img, 0, sizeof img);
    static const struct {
        int64_t resize, h, w;
        int64_t want_h, want_w;
    } cases[] = {
        {24, 24, 24, 24, 32},     /* 1/8 */
        {50, 48, 48, 72, 96},     /* 3/8: 2/8 gives 48 < 50 */
        {96, 96, 96, 96, 128},    /* 4/8 */
        {180, 160, 160, 192, 256}, /* 8/8: 7/8 gives 168 < 180 */
        {400, 224, 224, 192, 256}, /* already smaller than the resize: full size, never upscaled */
        {0, 192, 256, 192, 256},   /* no resize */
        {96, 192, 256, 192, 256},  /* the model's own size: as is */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ptq_preprocess pp = raw_pp(3, cases[i].h, cases[i].w);
        pp.resize = cases[i].resize;
        CHECK_MSG(ds_jpeg_decode(&ctx, p, &dec, &img, 0, &pp, 0, NULL) == PTQ_OK, "%s", ctx.msg);
        CHECK_MSG(img.height == cases[i].want_h && img.width == cases[i].want_w,
                  "resize %lld into %lldx%lld: decoded %lldx%lld, want %lldx%lld", (long long)cases[i].resize,
                  (long long)cases[i].h, (long long)cases[i].w, (long long)img.height, (long long)img.width,
                  (long long)cases[i].want_h, (long long)cases[i].want_w);
        uint8_t *ref = ref_decode(p, (int)cases[i].want_w, (int)cases[i].want_h, 3);
        CHECK(ref && !memcmp(ref, img.data, (size_t)(cases[i].want_h * cases[i].want_w * 3)));
        free(ref);
    }
    /* header only: the stored size whatever the resize */
    ptq_preprocess pp = raw_pp(3, 24, 24);
    pp.resize = 24;
    CHECK(ds_jpeg_decode(&ctx, p, &dec, &img, 1, &pp, 0, NULL) == PTQ_OK && img.height == 192 && img.width == 256);
    /* the pixel bound applies to what is decoded: 24x32 fits 24*24*2, 192x256 does not */
    CHECK(ds_jpeg_decode(&ctx, p, &dec, &img, 0, &pp, 24 * 24 * 2, "a test cap") == PTQ_OK);
    pp.resize = 0;
    CHECK(ds_jpeg_decode(&ctx, p, &dec, &img, 0, &pp, 24 * 24 * 2, "a test cap") == PTQ_ERR_SHAPE &&
          strstr(ctx.msg, "refusing to decode") && strstr(ctx.msg, "big.jpg"));
    ds_jpeg_free(&dec);
    ds_image_free(&img);
}

/* Corrupt, truncated, not-a-JPEG, huge declared size, CMYK: refused, the file named. */
static void test_bad_jpegs(void)
{
    char root[256], p[512];
    tpath(root, sizeof root, "bad");
    const char *subs[] = {"a"};
    mkdirs(root, subs, 1);
    uint8_t *px = pattern(64, 64, 3, 5);
    unsigned long n = 0;
    unsigned char *jpg = encode(px, 64, 64, 3, 90, TJSAMP_444, &n);
    free(px);
    if (!jpg)
        return;
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ds_jpeg dec;
    ds_image img;
    memset(&dec, 0, sizeof dec);
    memset(&img, 0, sizeof img);
    snprintf(p, sizeof p, "%s/a/trunc.jpg", root);
    test_write_bytes(p, jpg, n / 2);
    CHECK(ds_jpeg_decode(&ctx, p, &dec, &img, 0, NULL, 0, NULL) == PTQ_ERR_DATA &&
          strstr(ctx.msg, "cannot decode JPEG") && strstr(ctx.msg, "trunc.jpg"));
    snprintf(p, sizeof p, "%s/a/notjpeg.jpg", root);
    write_text(p, "GIF89a not a jpeg");
    CHECK(ds_jpeg_decode(&ctx, p, &dec, &img, 1, NULL, 0, NULL) == PTQ_ERR_DATA && strstr(ctx.msg, "notjpeg.jpg"));
    snprintf(p, sizeof p, "%s/a/empty.jpg", root);
    test_write_bytes(p, "", 0);
    CHECK(ds_jpeg_decode(&ctx, p, &dec, &img, 0, NULL, 0, NULL) == PTQ_ERR_DATA);
    /* scan data garbled (entropy-coded bytes past the headers set to 0xff 0x00 ... ): a decode error or warning */
    unsigned char *garbled = malloc(n);
    memcpy(garbled, jpg, n);
    for (unsigned long i = n / 2; i < n - 2; i++)
        garbled[i] = (unsigned char)(i % 3 == 0 ? 0xff : i * 37);
    snprintf(p, sizeof p, "%s/a/garbled.jpg", root);
    test_write_bytes(p, garbled, n);
    CHECK_MSG(ds_jpeg_decode(&ctx, p, &dec, &img, 0, NULL, 0, NULL) == PTQ_ERR_DATA && strstr(ctx.msg, "garbled.jpg"),
              "%s", ctx.msg);
    /* SOF patched to declare 60000 x 50000: refused before any pixel buffer */
    memcpy(garbled, jpg, n);
    int patched = 0;
    for (unsigned long i = 2; i + 8 < n; i++)
        if (garbled[i] == 0xff && (garbled[i + 1] == 0xc0 || garbled[i + 1] == 0xc2)) {
            garbled[i + 5] = 60000 >> 8, garbled[i + 6] = 60000 & 0xff; /* height */
            garbled[i + 7] = 50000 >> 8, garbled[i + 8] = 50000 & 0xff; /* width */
            patched = 1;
            break;
        }
    CHECK(patched);
    snprintf(p, sizeof p, "%s/a/huge.jpg", root);
    test_write_bytes(p, garbled, n);
    ptq_preprocess pp = raw_pp(3, 64, 64);
    CHECK(ds_jpeg_decode(&ctx, p, &dec, &img, 0, &pp, 64 * 64 * DS_PNG_MAX_UPSCALE, "a test cap") == PTQ_ERR_SHAPE &&
          strstr(ctx.msg, "50000 x 60000 pixels (width x height)") && strstr(ctx.msg, "refusing to decode"));
    CHECK(img.cap_bytes < (size_t)64 << 20);
    /* with a resize the smallest scale 1/8 still leaves 6250 x 7500 pixels (width x height): refused as well */
    pp.resize = 64;
    CHECK(ds_jpeg_decode(&ctx, p, &dec, &img, 0, &pp, 64 * 64 * DS_PNG_MAX_UPSCALE, "a test cap") == PTQ_ERR_SHAPE &&
          strstr(ctx.msg, "6250 x 7500 at DCT scale 1/8"));
    /* CMYK: refused as unsupported, not misread */
    uint8_t cmyk[8 * 8 * 4];
    memset(cmyk, 90, sizeof cmyk);
    tjhandle tj = tjInitCompress();
    unsigned char *cj = NULL;
    unsigned long cn = 0;
    CHECK(tj && tjCompress2(tj, cmyk, 8, 0, 8, TJPF_CMYK, &cj, &cn, TJSAMP_444, 90, 0) == 0);
    snprintf(p, sizeof p, "%s/cmyk.jpg", g_tmp);
    test_write_bytes(p, cj, cn);
    CHECK(ds_jpeg_decode(&ctx, p, &dec, &img, 0, NULL, 0, NULL) == PTQ_ERR_UNSUPPORTED && strstr(ctx.msg, "CMYK"));
    tjFree(cj);
    tjDestroy(tj);
    /* through the folder reader: the first bad sample in index order is the one reported (here a/empty.jpg) */
    ptq_dataset *ds = NULL;
    snprintf(p, sizeof p, "%s/a/0.jpg", root);
    test_write_bytes(p, jpg, n);
    CHECK_MSG(ptq_dataset_open(&ctx, root, NULL, &ds) == PTQ_OK, "%s", ctx.msg);
    if (ds) {
        float *x = malloc(sizeof(float) * 6 * 64 * 64 * 3);
        pp.resize = 0;
        CHECK(ptq_dataset_read(&ctx, ds, 0, 1, &pp, x, NULL) == PTQ_OK);
        CHECK(ptq_dataset_read(&ctx, ds, 0, ptq_dataset_count(ds), &pp, x, NULL) == PTQ_ERR_DATA &&
              strstr(ctx.msg, "a/empty.jpg"));
        free(x);
        ptq_dataset_close(ds);
    }
    free(garbled);
    tjFree(jpg);
    ds_jpeg_free(&dec);
    ds_image_free(&img);
}

static ptq_status open_with(ptq_ctx *ctx, const char *root, const char *labels, const char *classes,
                            ptq_dataset **ds)
{
    ptq_dataset_opts o = {NULL, NULL, NULL, 0, labels, classes, 0, 0, 0};
    *ds = NULL;
    ptq_ctx_init(ctx);
    return ptq_dataset_open(ctx, root, &o, ds);
}

/* A classes file that refuses: the status, and fragments of its message. */
static void classes_refused(const char *root, const char *text, ptq_status want, const char *frag1,
                            const char *frag2)
{
    char cls[512];
    tpath(cls, sizeof cls, "classes.txt");
    write_text(cls, text);
    ptq_ctx ctx;
    ptq_dataset *ds = NULL;
    ptq_status st = open_with(&ctx, root, NULL, cls, &ds);
    CHECK_MSG(st == want && strstr(ctx.msg, frag1) && (!frag2 || strstr(ctx.msg, frag2)),
              "classes \"%s\": status %d, message: %s", text, (int)st, ctx.msg);
    ptq_dataset_close(ds);
}

static void labels_refused(const char *root, const char *text, const char *classes_text, ptq_status want,
                           const char *frag1, const char *frag2)
{
    char lab[512], cls[512];
    tpath(lab, sizeof lab, "labels.txt");
    tpath(cls, sizeof cls, "classes2.txt");
    write_text(lab, text);
    if (classes_text)
        write_text(cls, classes_text);
    ptq_ctx ctx;
    ptq_dataset *ds = NULL;
    ptq_status st = open_with(&ctx, root, lab, classes_text ? cls : NULL, &ds);
    CHECK_MSG(st == want && strstr(ctx.msg, frag1) && (!frag2 || strstr(ctx.msg, frag2)),
              "labels \"%s\": status %d, message: %s", text, (int)st, ctx.msg);
    ptq_dataset_close(ds);
}

static void test_classes_file(void)
{
    char root[256], p[512], cls[512];
    tpath(root, sizeof root, "synsets");
    const char *subs[] = {"n01440764", "n01443537", "n99999999"};
    mkdirs(root, subs, 3);
    for (int k = 0; k < 3; k++) {
        snprintf(p, sizeof p, "%s/%s/x.jpg", root, subs[k]);
        write_jpeg(p, 8, 8, 3, k);
    }
    tpath(cls, sizeof cls, "classes.txt");
    ptq_ctx ctx;
    ptq_dataset *ds = NULL;
    /* "NAME INDEX" lines, sparse indices, comments and CRLF */
    write_text(cls, "# synset index\r\nn99999999 7\r\n\r\nn01440764 0\r\nn01443537 5\r\n");
    CHECK_MSG(open_with(&ctx, root, NULL, cls, &ds) == PTQ_OK, "%s", ctx.msg);
    if (ds) {
        int32_t labels[3];
        ptq_preprocess pp = raw_pp(3, 8, 8);
        float x[3 * 8 * 8 * 3];
        CHECK(ptq_dataset_read(&ctx, ds, 0, 3, &pp, x, labels) == PTQ_OK);
        CHECK(labels[0] == 0 && labels[1] == 5 && labels[2] == 7);
        CHECK(ptq_dataset_n_classes(ds) == 8 && !strcmp(ptq_dataset_class_name(ds, 5), "n01443537") &&
              ptq_dataset_class_name(ds, 3) == NULL);
        ptq_dataset_close(ds);
    }
    /* one name per line in index order, folders not all present in the file's order */
    write_text(cls, "n01440764\nn00000001\nn01443537\nn99999999\n");
    CHECK_MSG(open_with(&ctx, root, NULL, cls, &ds) == PTQ_OK, "%s", ctx.msg);
    if (ds) {
        int32_t labels[3];
        ptq_preprocess pp = raw_pp(3, 8, 8);
        float x[3 * 8 * 8 * 3];
        CHECK(ptq_dataset_read(&ctx, ds, 0, 3, &pp, x, labels) == PTQ_OK);
        CHECK(labels[0] == 0 && labels[1] == 2 && labels[2] == 3 && ptq_dataset_n_classes(ds) == 4);
        ptq_dataset_close(ds);
    }
    classes_refused(root, "n01440764 0\nn01443537 1\n", PTQ_ERR_DATA, "class folder", "n99999999");
    classes_refused(root, "n01440764 0\nn01443537 1\nn01440764 2\nn99999999 3\n", PTQ_ERR_DATA, "line 3",
                    "already given on line 1");
    classes_refused(root, "n01440764 0\nn01443537 0\nn99999999 3\n", PTQ_ERR_DATA, "line 2",
                    "index 0 of class 'n01443537' already given to 'n01440764' on line 1");
    classes_refused(root, "n01440764 0\nn01443537 -1\n", PTQ_ERR_DATA, "line 2", "not an integer in 0..1048575");
    classes_refused(root, "n01440764 0\nn01443537 1048576\n", PTQ_ERR_DATA, "line 2", "1048576");
    classes_refused(root, "n01440764 0\nn01443537 1x\n", PTQ_ERR_DATA, "line 2", "'1x'");
    classes_refused(root, "n01440764 0\nn01443537\n", PTQ_ERR_DATA, "line 2",
                    "'n01443537' gives no index but earlier lines do; use one form");
    /* names with spaces, in both forms: the index is the last field, else the whole line is the name */
    classes_refused(root, "n01440764 0\nn01443537 1\nmy class 2\n", PTQ_ERR_DATA, "class folder", "n99999999");
    classes_refused(root, "n01440764\nn01443537\nmy class 7\n", PTQ_ERR_DATA, "class folder", "n99999999");
    classes_refused(root, "# nothing\n\n", PTQ_ERR_DATA, "names no class", NULL);
    classes_refused(root, "../etc 0\n", PTQ_ERR_DATA, "cannot name a class folder", NULL);
    char missing[512];
    tpath(missing, sizeof missing, "no-such-classes.txt");
    CHECK(open_with(&ctx, root, NULL, missing, &ds) == PTQ_ERR_IO && strstr(ctx.msg, "no-such-classes.txt"));
    ptq_dataset_close(ds);
}

static void test_labels_file(void)
{
    char root[256], p[512], lab[512];
    tpath(root, sizeof root, "flat");
    const char *subs[] = {"sub"};
    mkdirs(root, subs, 1);
    const char *names[] = {"ILSVRC2012_val_00000001.JPEG", "ILSVRC2012_val_00000002.JPEG", "with space.jpg",
                           "sub/deeper.png"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", root, names[i]);
        write_jpeg(p, 8, 8, i == 2 ? 1 : 3, i);
    }
    snprintf(p, sizeof p, "%s/%s", root, names[3]);
    uint8_t gray[64] = {0};
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    CHECK(ds_png_write_gray8(&ctx, p, gray, 8, 8) == PTQ_OK);
    tpath(lab, sizeof lab, "labels.txt");
    write_text(lab, "# ImageNet style\nILSVRC2012_val_00000002.JPEG 65\nILSVRC2012_val_00000001.JPEG 970\n"
                    "with space.jpg\t3\r\nsub/deeper.png 0\n");
    ptq_dataset *ds = NULL;
    CHECK_MSG(open_with(&ctx, root, lab, NULL, &ds) == PTQ_OK, "%s", ctx.msg);
    char hex1[65] = "", hex2[65] = "";
    if (ds) {
        int32_t labels[4];
        ptq_preprocess pp = raw_pp(3, 8, 8);
        float x[4 * 8 * 8 * 3];
        CHECK(ptq_dataset_count(ds) == 4 && ptq_dataset_n_classes(ds) == -1 && ptq_dataset_has_labels(ds));
        CHECK_MSG(ptq_dataset_read(&ctx, ds, 0, 4, &pp, x, labels) == PTQ_OK, "%s", ctx.msg);
        CHECK(labels[0] == 65 && labels[1] == 970 && labels[2] == 3 && labels[3] == 0);
        CHECK(ptq_dataset_content_sha256(&ctx, ds, hex1) == PTQ_OK);
        ptq_dataset_close(ds);
    }
    /* the same files with one label changed: another content hash */
    write_text(lab, "ILSVRC2012_val_00000002.JPEG 65\nILSVRC2012_val_00000001.JPEG 971\nwith space.jpg 3\n"
                    "sub/deeper.png 0\n");
    CHECK(open_with(&ctx, root, lab, NULL, &ds) == PTQ_OK && ptq_dataset_content_sha256(&ctx, ds, hex2) == PTQ_OK);
    CHECK(hex1[0] && hex2[0] && strcmp(hex1, hex2) != 0);
    ptq_dataset_close(ds);

    labels_refused(root, "ILSVRC2012_val_00000001.JPEG 1\n../flat/with space.jpg 2\n", NULL, PTQ_ERR_DATA,
                   "line 2", "leaves the data root");
    labels_refused(root, "/etc/passwd.jpg 1\n", NULL, PTQ_ERR_DATA, "line 1", "is absolute");
    labels_refused(root, "sub//deeper.png 1\n", NULL, PTQ_ERR_DATA, "line 1", "empty component");
    labels_refused(root, ".hidden/x.jpg 1\n", NULL, PTQ_ERR_DATA, "line 1", "hidden");
    labels_refused(root, "notes.txt 1\n", NULL, PTQ_ERR_DATA, "line 1", "not a .png, .jpg or .jpeg");
    labels_refused(root, "ILSVRC2012_val_00000001.JPEG\n", NULL, PTQ_ERR_DATA, "line 1", "expected \"PATH LABEL\"");
    labels_refused(root, "ILSVRC2012_val_00000001.JPEG cat\n", NULL, PTQ_ERR_DATA, "line 1", "'cat'");
    labels_refused(root, "ILSVRC2012_val_00000001.JPEG 2000000\n", NULL, PTQ_ERR_DATA, "line 1", "0..1048575");
    labels_refused(root, "ILSVRC2012_val_00000001.JPEG 1\nwith space.jpg 1\nILSVRC2012_val_00000001.JPEG 2\n", NULL,
                   PTQ_ERR_DATA, "line 3", "already listed on line 1");
    labels_refused(root, "ILSVRC2012_val_00000001.JPEG 1\nmissing.jpg 1\n", NULL, PTQ_ERR_IO, "line 2",
                   "missing.jpg");
    labels_refused(root, "sub 1\n", NULL, PTQ_ERR_DATA, "line 1", "not a .png");
    labels_refused(root, "\n# none\n", NULL, PTQ_ERR_DATA, "lists no image", NULL);
    labels_refused(root, "ILSVRC2012_val_00000001.JPEG 1\nwith space.jpg 4\n", "a\nb\nc\n", PTQ_ERR_DATA, "line 2",
                   "no index of classes file");
    /* labels and classes together: the names by index */
    labels_refused(root, "ILSVRC2012_val_00000001.JPEG 1\n", "a\nb\n", PTQ_OK, "", NULL);
    /* an HDF5 set takes neither */
    char h5[512];
    tpath(h5, sizeof h5, "labels.txt");
    CHECK(open_with(&ctx, h5, lab, NULL, &ds) == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "applies to image folders"));
    ptq_dataset_close(ds);
}

/* An image folder packed into HDF5: pixels as the folder reader gives them at scale 1, labels, class names. */
static void test_convert_folder(void)
{
    char root[256], p[512], out[512], out2[512];
    tpath(root, sizeof root, "conv");
    const char *subs[] = {"cat", "dog"};
    mkdirs(root, subs, 2);
    snprintf(p, sizeof p, "%s/cat/a.jpg", root);
    write_jpeg(p, 32, 40, 3, 7);
    snprintf(p, sizeof p, "%s/dog/b.jpg", root);
    write_jpeg(p, 32, 40, 3, 8);
    snprintf(p, sizeof p, "%s/dog/c.jpeg", root);
    write_jpeg(p, 32, 40, 1, 9);
    tpath(out, sizeof out, "conv.h5");
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_convert_folder_params cp = {0, 0, 0, 3};
    CHECK_MSG(ptq_data_convert_folder(&ctx, root, NULL, out, &cp) == PTQ_OK, "%s", ctx.msg);
    CHECK(ptq_data_convert_folder(&ctx, root, NULL, out, &cp) == PTQ_ERR_IO && strstr(ctx.msg, "already exists"));
    ptq_dataset *src = NULL, *dst = NULL;
    CHECK(ptq_dataset_open(&ctx, root, NULL, &src) == PTQ_OK);
    CHECK_MSG(ptq_dataset_open(&ctx, out, NULL, &dst) == PTQ_OK, "%s", ctx.msg);
    if (src && dst) {
        int64_t h, w, c;
        ptq_dataset_geometry(dst, &h, &w, &c);
        CHECK(ptq_dataset_count(dst) == 3 && h == 32 && w == 40 && c == 3);
        CHECK(ptq_dataset_n_classes(dst) == 2 && !strcmp(ptq_dataset_class_name(dst, 1), "dog"));
        ptq_preprocess pp = raw_pp(3, 32, 40);
        float a[3 * 32 * 40 * 3], b[3 * 32 * 40 * 3];
        int32_t la[3], lb[3];
        CHECK(ptq_dataset_read(&ctx, src, 0, 3, &pp, a, la) == PTQ_OK);
        CHECK(ptq_dataset_read(&ctx, dst, 0, 3, &pp, b, lb) == PTQ_OK);
        CHECK(!memcmp(a, b, sizeof a) && !memcmp(la, lb, sizeof la) && lb[0] == 0 && lb[2] == 1);
    }
    ptq_dataset_close(dst);
    /* resized to 16x20 (WxH 16x20: height 20, width 16), gray */
    tpath(out2, sizeof out2, "conv16.h5");
    cp = (ptq_convert_folder_params){20, 16, 1, 3};
    CHECK_MSG(ptq_data_convert_folder(&ctx, root, NULL, out2, &cp) == PTQ_OK, "%s", ctx.msg);
    CHECK(ptq_dataset_open(&ctx, out2, NULL, &dst) == PTQ_OK);
    if (src && dst) {
        int64_t h, w, c;
        ptq_dataset_geometry(dst, &h, &w, &c);
        CHECK(h == 20 && w == 16 && c == 1);
        ptq_preprocess pp = raw_pp(1, 20, 16);
        pp.resize = 20;
        float a[3 * 20 * 16], b[3 * 20 * 16];
        CHECK(ptq_dataset_read(&ctx, src, 0, 3, &pp, a, NULL) == PTQ_OK);
        ptq_preprocess same = raw_pp(1, 20, 16);
        CHECK(ptq_dataset_read(&ctx, dst, 0, 3, &same, b, NULL) == PTQ_OK);
        float worst = 0;
        for (int i = 0; i < 3 * 20 * 16; i++) {
            float d = a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
            worst = d > worst ? d : worst;
        }
        CHECK_MSG(worst <= 0.5f, "stored pixels are the reader's rounded: worst %g", (double)worst);
    }
    ptq_dataset_close(dst);
    ptq_dataset_close(src);
    /* a mixed-size folder without a resize: refused, naming the odd image; nothing left behind */
    snprintf(p, sizeof p, "%s/dog/d.jpg", root);
    write_jpeg(p, 16, 16, 3, 10);
    tpath(out2, sizeof out2, "conv_mixed.h5");
    cp = (ptq_convert_folder_params){0, 0, 0, 3};
    CHECK(ptq_data_convert_folder(&ctx, root, NULL, out2, &cp) == PTQ_ERR_SHAPE && strstr(ctx.msg, "dog/d.jpg"));
    struct stat sb;
    CHECK(stat(out2, &sb) != 0);
    cp = (ptq_convert_folder_params){20, 0, 0, 3};
    CHECK(ptq_data_convert_folder(&ctx, root, NULL, out2, &cp) == PTQ_ERR_INVALID_ARG);
}

int main(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/ptq_jpeg_XXXXXX");
    if (!mkdtemp(g_tmp)) {
        perror("mkdtemp");
        return 1;
    }
    test_mixed_folder();
    test_dct_scale();
    test_bad_jpegs();
    test_classes_file();
    test_labels_file();
    test_convert_folder();
    test_remove_tree(g_tmp);
    return test_done("test_jpeg");
}
