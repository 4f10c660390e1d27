/* JPEG decode through libjpeg-turbo's TurboJPEG API: gray stays 1 channel,
 * everything else but CMYK becomes RGB, with DCT-domain downscaling to the
 * smallest factor that still covers what preprocessing resizes to. The size
 * the header declares is checked before a pixel buffer is made. Covered by
 * tests/test_datasets.c, tests/jpeg_test.py and fuzz/fuzz_jpeg.c. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "datasets/datasets_internal.h"
#include "ptq/memory.h"

#define MAX_IMAGE_BYTES ((size_t)1 << 30)

void ds_jpeg_free(ds_jpeg *dec)
{
    if (!dec)
        return;
    if (dec->tj)
        tjDestroy(dec->tj);
    free(dec->file);
    memset(dec, 0, sizeof *dec);
}

/* The whole file into dec->file (grown as needed); *n_bytes its size. */
static ptq_status read_file(ptq_ctx *ctx, const char *path, ds_jpeg *dec, size_t *n_bytes)
{
    int fd;
    struct stat sb;
    PTQ_TRY_RET(ptq_file_open_read(ctx, path, &fd));
    ptq_status st = PTQ_OK;
    if (fstat(fd, &sb) != 0) {
        st = ptq_fail(ctx, PTQ_ERR_IO, "cannot read %s: %s", path, strerror(errno));
        goto done;
    }
    if ((uint64_t)sb.st_size > DS_JPEG_MAX_FILE_BYTES) {
        st = ptq_fail(ctx, PTQ_ERR_DATA, "JPEG %s is %llu bytes, more than the %llu ptq reads", path,
                      (unsigned long long)sb.st_size, (unsigned long long)DS_JPEG_MAX_FILE_BYTES);
        goto done;
    }
    size_t n = (size_t)sb.st_size;
    if (n + 1 > dec->file_cap) {
        PTQ_TRY(st, ptq_memory_check(ctx, n + 1, path), done);
        unsigned char *grown = realloc(dec->file, n + 1);
        if (!grown) {
            st = ptq_fail(ctx, PTQ_ERR_NOMEM, "reading %s: out of memory", path);
            goto done;
        }
        dec->file = grown;
        dec->file_cap = n + 1;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, dec->file + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    if (got != n)
        st = ptq_fail(ctx, PTQ_ERR_IO, "cannot read %s (or it changed while read)", path);
    *n_bytes = got;
done:
    close(fd);
    return st;
}

/* The smallest TurboJPEG scaling factor <= 1 whose scaled shorter side is
 * still >= min_short (1/1 when none is, or min_short is 0). */
static tjscalingfactor pick_scale(int w, int h, int64_t min_short)
{
    tjscalingfactor best = {1, 1};
    int n = 0;
    const tjscalingfactor *sf = min_short > 0 ? tjGetScalingFactors(&n) : NULL;
    for (int i = 0; sf && i < n; i++) {
        if (sf[i].num > sf[i].denom) /* upscaling: never */
            continue;
        int sw = TJSCALED(w, sf[i]), sh = TJSCALED(h, sf[i]);
        if ((sw < sh ? sw : sh) < min_short)
            continue;
        if ((int64_t)sf[i].num * best.denom < (int64_t)best.num * sf[i].denom)
            best = sf[i];
    }
    return best;
}

ptq_status ds_jpeg_decode(ptq_ctx *ctx, const char *path, ds_jpeg *dec, ds_image *img, int header_only,
                          const ptq_preprocess *p, uint64_t max_pixels, const char *cap_why)
{
    size_t n_bytes = 0;
    PTQ_TRY_RET(read_file(ctx, path, dec, &n_bytes));
    if (!dec->tj && !(dec->tj = tjInitDecompress()))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "decoding %s: cannot make a JPEG decoder", path);
    int w = 0, h = 0, subsamp = 0, cs = 0;
    if (tjDecompressHeader3(dec->tj, dec->file, (unsigned long)n_bytes, &w, &h, &subsamp, &cs) != 0)
        return ptq_fail(ctx, PTQ_ERR_DATA, "cannot decode JPEG %s: %s", path, tjGetErrorStr2(dec->tj));
    if (w < 1 || h < 1)
        return ptq_fail(ctx, PTQ_ERR_DATA, "cannot decode JPEG %s: it declares %d x %d pixels (width x height)", path,
                        w, h);
    if (cs == TJCS_CMYK || cs == TJCS_YCCK)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "JPEG %s is CMYK; ptq reads gray and RGB JPEGs", path);
    const int gray = cs == TJCS_GRAY;
    /* with a resize, the smallest DCT scale that does not go below the resized shorter side; an image
     * already the model's size is decoded whole (its resize can only enlarge it, or is refused) */
    const int keep = !p || p->resize <= 0 || ((int64_t)h == p->height && (int64_t)w == p->width);
    const tjscalingfactor sf = pick_scale(w, h, keep ? 0 : p->resize);
    const int sw = TJSCALED(w, sf), sh = TJSCALED(h, sf);
    img->channels = gray ? 1 : 3;
    img->dtype = PTQ_DT_UINT8;
    if (header_only) {
        img->height = h;
        img->width = w;
        return PTQ_OK;
    }
    if (max_pixels && (uint64_t)sw * (uint64_t)sh > max_pixels) { /* before a byte of pixels is decoded */
        char scaled[64] = "";
        if (sf.num != sf.denom)
            snprintf(scaled, sizeof scaled, ", %d x %d at DCT scale %d/%d", sw, sh, sf.num, sf.denom);
        return ptq_fail(ctx, PTQ_ERR_SHAPE,
                        "JPEG %s declares %d x %d pixels (width x height%s), more than %llu (%s); refusing to decode "
                        "it", path, w, h, scaled, (unsigned long long)max_pixels, cap_why);
    }
    size_t bytes = (size_t)sw * (size_t)sh * (size_t)img->channels;
    if (bytes > MAX_IMAGE_BYTES)
        return ptq_fail(ctx, PTQ_ERR_SHAPE, "JPEG %s declares %d x %d pixels (width x height), too large to decode",
                        path, w, h);
    if (bytes > img->cap_bytes) {
        PTQ_TRY_RET(ptq_memory_check(ctx, bytes, path));
        void *grown = realloc(img->data, bytes);
        if (!grown)
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "decoding %s: out of memory", path);
        img->data = grown;
        img->cap_bytes = bytes;
    }
    /* a warning (truncated data, garbage between markers) is a failure: never half an image; at most 500
     * progressive scans, so a crafted file cannot make one decode run for minutes */
    const int flags = TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS;
    if (tjDecompress2(dec->tj, dec->file, (unsigned long)n_bytes, img->data, sw, 0, sh, gray ? TJPF_GRAY : TJPF_RGB,
                      flags) != 0)
        return ptq_fail(ctx, PTQ_ERR_DATA, "cannot decode JPEG %s: %s", path, tjGetErrorStr2(dec->tj));
    img->height = sh;
    img->width = sw;
    return PTQ_OK;
}
