/* The PNG confusion heatmaps (reports/heatmap_png.c) at 10 and 100 classes,
 * written to a file and decoded by libpng's reader (png_image, as RGB):
 * the size the layout says; the pixels equal
 * the raster drawn; known cells in their colours (the largest count the
 * scale's end, zero white, the diverging map's ends red and blue); every
 * row and column label inked inside its own row or column band with a clear
 * line between neighbours (readable at 100 classes, glyphs at least 5x8
 * pixels); the colour bar from white to the end colour; long and non-ASCII
 * names cut; a bad class count refused. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <png.h>

#include "ptq/html_report.h"
#include "reports/heatmap_png.h"
#include "testlib.h"

static const uint8_t BLUE_END[3] = {8, 69, 148}, RED_END[3] = {178, 24, 43}, DIV_BLUE_END[3] = {33, 102, 172},
                     WHITE[3] = {255, 255, 255};

typedef struct image {
    uint8_t *data; /* [height, width, 3] */
    int width, height, rgb;
} image;

static const uint8_t *px(const image *im, int x, int y)
{
    return im->data + ((size_t)y * (size_t)im->width + (size_t)x) * 3;
}

static int same(const uint8_t *a, const uint8_t *b)
{
    return a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
}

static int ink(const uint8_t *p)
{
    return p[0] < 120 && p[1] < 120 && p[2] < 120;
}

/* Writes the PNG to a file and decodes the file as 8-bit RGB; 0 on failure. */
static int round_trip(const void *png, size_t n_bytes, image *im)
{
    char path[] = "/tmp/ptq-heatmap-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 0;
    int ok = write(fd, png, n_bytes) == (ssize_t)n_bytes;
    close(fd);
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    if (ok && png_image_begin_read_from_file(&pi, path)) {
        im->rgb = (pi.format & PNG_FORMAT_FLAG_COLOR) && !(pi.format & PNG_FORMAT_FLAG_ALPHA) &&
                  !(pi.format & PNG_FORMAT_FLAG_COLORMAP);
        pi.format = PNG_FORMAT_RGB;
        im->width = (int)pi.width;
        im->height = (int)pi.height;
        im->data = malloc(PNG_IMAGE_SIZE(pi));
        ok = im->data && png_image_finish_read(&pi, NULL, im->data, 0, NULL);
    } else {
        ok = 0;
    }
    CHECK_MSG(ok, "decoding %s: %s", path, pi.message);
    png_image_free(&pi);
    unlink(path);
    return ok;
}

/* Label bands: every row label inked within its row band, no ink on the
 * lines between bands; every column label likewise. */
static void check_labels(const image *im, const heat_layout *L)
{
    int rows_inked = 0, cols_inked = 0, ink_on_row_lines = 0, ink_on_col_lines = 0;
    for (int r = 0; r < L->k; r++) {
        int any = 0;
        for (int y = L->y0 + r * L->cell; y < L->y0 + (r + 1) * L->cell; y++)
            for (int x = 0; x < L->x0 - 2; x++)
                any |= ink(px(im, x, y));
        rows_inked += any;
        for (int x = 0; r > 0 && x < L->x0 - 2; x++)
            ink_on_row_lines += ink(px(im, x, L->y0 + r * L->cell));
    }
    for (int j = 0; j < L->k; j++) {
        int any = 0;
        for (int x = L->x0 + j * L->cell; x < L->x0 + (j + 1) * L->cell; x++)
            for (int y = 30; y < L->y0 - 2; y++) /* below the title */
                any |= ink(px(im, x, y));
        cols_inked += any;
        for (int y = 30; j > 0 && y < L->y0 - 2; y++)
            ink_on_col_lines += ink(px(im, L->x0 + j * L->cell, y));
    }
    CHECK_MSG(rows_inked == L->k && cols_inked == L->k, "k %d: %d rows and %d columns labelled", L->k, rows_inked,
              cols_inked);
    CHECK_MSG(ink_on_row_lines == 0 && ink_on_col_lines == 0, "k %d: %d and %d inked pixels between labels", L->k,
              ink_on_row_lines, ink_on_col_lines);
    CHECK_MSG(L->scale >= 1 && L->cell >= HEAT_GLYPH_H * L->scale + 4, "k %d: cell %d px, glyphs %dx%d", L->k,
              L->cell, HEAT_GLYPH_W * L->scale, HEAT_GLYPH_H * L->scale);
}

static void check_map(int k, int diverging)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    char **names = calloc((size_t)k, sizeof *names);
    int64_t *cells = calloc((size_t)k * (size_t)k, sizeof *cells);
    for (int c = 0; c < k; c++) {
        names[c] = malloc(64);
        snprintf(names[c], 64, c == 1 ? "a very long class name that is cut" : c == 2 ? "caf\xC3\xA9 %d" : "class %d",
                 c);
    }
    /* the diagonal 10 * (r + 1); (1, 0) holds the extreme: +500 (or -500 at (0, 1) when diverging) */
    for (int r = 0; r < k; r++)
        cells[(int64_t)r * k + r] = 10 * (r % 40 + 1);
    cells[(int64_t)1 * k + 0] = 500;
    if (diverging)
        cells[(int64_t)0 * k + 1] = -500;
    void *png = NULL;
    size_t n_bytes = 0;
    ptq_status st = ptq_heatmap_png(&ctx, k, (const char *const *)names, cells, diverging, "a title", &png, &n_bytes);
    CHECK_MSG(st == PTQ_OK && n_bytes > 8 && memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0, "k %d: %s", k, ctx.msg);
    uint8_t *rgb = NULL;
    heat_layout L;
    CHECK(heat_raster(&ctx, k, (const char *const *)names, cells, diverging, "a title", &rgb, &L) == PTQ_OK);
    image im;
    memset(&im, 0, sizeof im);
    if (st == PTQ_OK && rgb && round_trip(png, n_bytes, &im)) {
        CHECK_MSG(im.width == L.width && im.height == L.height && im.rgb, "k %d: %dx%d (rgb %d), layout %dx%d", k,
                  im.width, im.height, im.rgb, L.width, L.height);
        CHECK_MSG(memcmp(im.data, rgb, (size_t)L.width * (size_t)L.height * 3) == 0, "k %d: decoded pixels differ", k);
        const int c = L.cell;
        const uint8_t *hot = px(&im, L.x0 + 0 * c + 2, L.y0 + 1 * c + 2);   /* (1, 0): +500 */
        const uint8_t *zero = px(&im, L.x0 + 2 * c + 2, L.y0 + 0 * c + 2);  /* (0, 2): 0 */
        CHECK_MSG(same(hot, diverging ? RED_END : BLUE_END), "k %d: the largest cell is rgb(%d,%d,%d)", k, hot[0],
                  hot[1], hot[2]);
        CHECK_MSG(same(zero, WHITE), "k %d: a zero cell is rgb(%d,%d,%d)", k, zero[0], zero[1], zero[2]);
        if (diverging) {
            const uint8_t *cold = px(&im, L.x0 + 1 * c + 2, L.y0 + 0 * c + 2);
            CHECK_MSG(same(cold, DIV_BLUE_END), "k %d: the most negative cell is rgb(%d,%d,%d)", k, cold[0], cold[1],
                      cold[2]);
        } else {
            const uint8_t *mid = px(&im, L.x0 + 0 * c + 2, L.y0 + 0 * c + 2); /* 10 of 500: light blue */
            CHECK_MSG(mid[2] > mid[0] && mid[0] < 255 && mid[0] > BLUE_END[0], "k %d: (0,0) is rgb(%d,%d,%d)", k,
                      mid[0], mid[1], mid[2]);
        }
        const int ly = L.legend_y + L.legend_h / 2;
        const uint8_t *l0 = px(&im, L.legend_x, ly), *l1 = px(&im, L.legend_x + L.legend_w - 1, ly);
        CHECK_MSG(same(l0, diverging ? DIV_BLUE_END : WHITE) && same(l1, diverging ? RED_END : BLUE_END),
                  "k %d: legend from rgb(%d,%d,%d) to rgb(%d,%d,%d)", k, l0[0], l0[1], l0[2], l1[0], l1[1], l1[2]);
        check_labels(&im, &L);
    }
    if (k == 100)
        CHECK_MSG(L.cell >= 12 && L.width < 1600 && L.height < 1700, "100 classes: cells %d px, %dx%d", L.cell,
                  L.width, L.height);
    free(im.data);
    free(rgb);
    free(png);
    for (int c = 0; c < k; c++)
        free(names[c]);
    free(names);
    free(cells);
}

int main(void)
{
    for (int diverging = 0; diverging < 2; diverging++) {
        check_map(10, diverging);
        check_map(100, diverging);
    }
    check_map(3, 0);
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    void *png = NULL;
    size_t n = 0;
    int64_t cell = 0;
    CHECK(ptq_heatmap_png(&ctx, 0, NULL, &cell, 0, "t", &png, &n) == PTQ_ERR_INVALID_ARG && !png);
    CHECK(ptq_heatmap_png(&ctx, 1, NULL, &cell, 0, "t", &png, &n) == PTQ_OK && png && n > 0);
    free(png);
    return test_done("test_heatmap_png");
}
