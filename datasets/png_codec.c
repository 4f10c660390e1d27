/* PNG decode (every color type, 1-16 bit, tRNS, interlaced; 16-bit kept)
 * and 8-bit gray encode through libpng. libpng errors longjmp into a small
 * *_core function whose caller owns every resource: nothing leaks, nothing
 * is printed. Covered by tests/test_datasets.c. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datasets/datasets_internal.h"
#include "ptq/memory.h"

#define MAX_IMAGE_BYTES ((size_t)1 << 30)

typedef struct png_err {
    int too_big;         /* the header declares more pixels than max_pixels */
    uint64_t over_limit; /* the bytes its pixels need, when more than the memory limit (--max-memory) */
    char msg[256];
} png_err;

static void on_error(png_structp png, png_const_charp msg)
{
    png_err *e = png_get_error_ptr(png);
    snprintf(e->msg, sizeof e->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

void ds_image_free(ds_image *img)
{
    if (!img)
        return;
    free(img->data);
    memset(img, 0, sizeof *img);
}

/* Returns 1 on success, 0 after a libpng error (message in the error ptr). */
static int decode_core(png_structp png, png_infop info, FILE *f, ds_image *img, int header_only,
                       uint64_t max_pixels)
{
    if (setjmp(png_jmpbuf(png)))
        return 0;
    png_init_io(png, f);
    png_read_info(png, info);
    png_uint_32 w, h;
    int depth, color, interlace;
    png_get_IHDR(png, info, &w, &h, &depth, &color, &interlace, NULL, NULL);
    if (max_pixels && (uint64_t)w * h > max_pixels) { /* before a byte of pixels is inflated */
        png_err *e = png_get_error_ptr(png);
        e->too_big = 1;
        png_error(png, "too large");
    }
    if (color == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS))
        png_set_tRNS_to_alpha(png);
    int passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);
    img->height = h;
    img->width = w;
    img->channels = png_get_channels(png, info);
    img->dtype = png_get_bit_depth(png, info) == 16 ? PTQ_DT_UINT16 : PTQ_DT_UINT8;
    if (header_only)
        return 1;
    size_t row_bytes = png_get_rowbytes(png, info);
    if (row_bytes == 0 || (size_t)h > MAX_IMAGE_BYTES / row_bytes)
        png_error(png, "image too large");
    size_t bytes = row_bytes * h;
    if (bytes > img->cap_bytes && bytes > ptq_memory_budget()) { /* as a JPEG's are (ds_jpeg_decode) */
        png_err *e = png_get_error_ptr(png);
        e->over_limit = bytes;
        png_error(png, "over the memory limit");
    }
    if (bytes > img->cap_bytes) {
        void *grown = realloc(img->data, bytes);
        if (!grown)
            png_error(png, "out of memory");
        img->data = grown;
        img->cap_bytes = bytes;
    }
    uint8_t *rows = img->data;
    for (int pass = 0; pass < passes; pass++)
        for (png_uint_32 y = 0; y < h; y++)
            png_read_row(png, rows + (size_t)y * row_bytes, NULL);
    png_read_end(png, NULL);
    if (img->dtype == PTQ_DT_UINT16) { /* PNG stores big-endian; make host-order uint16 in place */
        uint16_t *s = img->data;
        for (size_t i = 0; i < bytes / 2; i++)
            s[i] = (uint16_t)(rows[2 * i] << 8 | rows[2 * i + 1]);
    }
    return 1;
}

ptq_status ds_png_decode(ptq_ctx *ctx, const char *path, ds_image *img, int header_only, uint64_t max_pixels,
                         const char *cap_why)
{
    png_err err = {0, 0, ""};
    FILE *f = NULL;
    PTQ_TRY_RET(ptq_file_fopen_read(ctx, path, &f));
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &err, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    ptq_status st = PTQ_OK;
    if (!info)
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "decoding %s: out of memory", path);
    else if (!decode_core(png, info, f, img, header_only, max_pixels) && err.too_big)
        /* the pixel count is named, not decoded */
        st = ptq_fail(ctx, PTQ_ERR_SHAPE,
                      "PNG %s declares %llu x %llu pixels (width x height), more than %llu (%s); refusing to decode "
                      "it", path, (unsigned long long)png_get_image_width(png, info),
                      (unsigned long long)png_get_image_height(png, info), (unsigned long long)max_pixels, cap_why);
    else if (err.over_limit)
        st = ptq_memory_check(ctx, err.over_limit, path);
    else if (err.msg[0])
        st = ptq_fail(ctx, PTQ_ERR_DATA, "cannot decode PNG %s: %s", path, err.msg);
    png_destroy_read_struct(png ? &png : NULL, info ? &info : NULL, NULL);
    fclose(f);
    return st;
}

static int write_core(png_structp png, png_infop info, FILE *f, const uint8_t *pixels, int64_t h, int64_t w)
{
    if (setjmp(png_jmpbuf(png)))
        return 0;
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int64_t y = 0; y < h; y++)
        png_write_row(png, pixels + y * w);
    png_write_end(png, NULL);
    return 1;
}

ptq_status ds_png_write_gray8(ptq_ctx *ctx, const char *path, const uint8_t *pixels, int64_t h, int64_t w)
{
    png_err err = {0, 0, ""};
    if (h < 1 || w < 1 || h > 0x7fffffff || w > 0x7fffffff)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "cannot write a %lldx%lld PNG %s", (long long)h, (long long)w,
                        path);
    /* inside a temporary folder of ours: a new file, never a symlink planted there */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        ptq_status st = ptq_fail(ctx, PTQ_ERR_IO, "cannot create %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return st;
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &err, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    ptq_status st = PTQ_OK;
    if (!info)
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "encoding %s: out of memory", path);
    else if (!write_core(png, info, f, pixels, h, w))
        st = ptq_fail(ctx, PTQ_ERR_IO, "cannot write PNG %s: %s", path, err.msg);
    png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
    if (fclose(f) != 0 && st == PTQ_OK)
        st = ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    return st;
}
