/* Confusion heatmaps as PNG (for slides): the same colours as the HTML
 * heatmaps (html_heat_rgb), labels in a built-in 5x7 bitmap font (no font
 * file, the same pixels everywhere), a colour bar with its ends' values, and
 * the counts in cells large enough to hold them; encoded by libpng into
 * memory, so the caller writes the file whole or not at all. Declared in
 * include/ptq/html_report.h and reports/heatmap_png.h; covered by
 * tests/test_heatmap_png.c and tests/cli_html_test.py. */
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptq/buf.h"
#include "ptq/html_report.h"
#include "reports/heatmap_png.h"
#include "reports/html.h"

#define MARGIN 10
#define TITLE_SCALE 2
#define MAX_K 256

static const uint8_t INK[3] = {34, 34, 34}, WHITE[3] = {255, 255, 255}, GRID[3] = {225, 225, 225},
                     DIAG[3] = {153, 153, 153}, BORDER[3] = {170, 170, 170};

/* What the font can draw of a UTF-8 label: ASCII kept, any other character
 * as '?', control characters as spaces; cut to max_chars ending in "..". */
static void ascii_label(const char *s, char *out, int max_chars)
{
    int n = 0, total = 0;
    char tmp[4 * HEAT_LABEL_CHARS + 8];
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if ((*p & 0xC0) == 0x80)
            continue; /* a continuation byte: its character is already counted */
        const char c = *p >= 0x80 ? '?' : *p < 0x20 || *p == 0x7F ? ' ' : (char)*p;
        if (n < (int)sizeof tmp - 1)
            tmp[n++] = c;
        total++;
    }
    tmp[n] = '\0';
    if (total > max_chars) {
        memcpy(out, tmp, (size_t)max_chars - 2);
        memcpy(out + max_chars - 2, "..", 3);
    } else {
        memcpy(out, tmp, (size_t)n + 1);
    }
}

void heat_layout_make(int k, int max_chars, heat_layout *L)
{
    memset(L, 0, sizeof *L);
    L->k = k;
    L->cell = k <= 10 ? 48 : k <= 20 ? 32 : k <= 50 ? 18 : k <= 100 ? 12 : 8;
    L->scale = L->cell >= 32 ? 2 : 1;
    const int label_px = max_chars * HEAT_ADVANCE * L->scale + 8;
    L->x0 = MARGIN + label_px;
    L->y0 = MARGIN + HEAT_GLYPH_H * TITLE_SCALE + 10 + label_px;
    const int grid = k * L->cell;
    L->legend_x = L->x0;
    L->legend_y = L->y0 + grid + 14;
    L->legend_w = grid < 200 ? 200 : grid > 320 ? 320 : grid;
    L->legend_h = 12;
    const int right = L->x0 + (grid > L->legend_w ? grid : L->legend_w) + 40; /* room for the legend's last value */
    L->width = right + MARGIN;
    L->height = L->legend_y + L->legend_h + 4 + HEAT_GLYPH_H * L->scale + MARGIN;
}

typedef struct canvas {
    uint8_t *px;
    int w, h;
} canvas;

static void put(canvas *c, int x, int y, const uint8_t rgb[3])
{
    if (x >= 0 && y >= 0 && x < c->w && y < c->h)
        memcpy(c->px + ((size_t)y * (size_t)c->w + (size_t)x) * 3, rgb, 3);
}

static void fill(canvas *c, int x, int y, int w, int h, const uint8_t rgb[3])
{
    for (int j = y; j < y + h; j++)
        for (int i = x; i < x + w; i++)
            put(c, i, j, rgb);
}

static void frame(canvas *c, int x, int y, int w, int h, const uint8_t rgb[3])
{
    fill(c, x, y, w, 1, rgb);
    fill(c, x, y + h - 1, w, 1, rgb);
    fill(c, x, y, 1, h, rgb);
    fill(c, x + w - 1, y, 1, h, rgb);
}

static int text_px(const char *s, int scale)
{
    return (int)strlen(s) * HEAT_ADVANCE * scale - scale; /* no gap after the last glyph */
}

/* ASCII text s with its top-left corner at (x, y); with vertical, turned a
 * quarter left: it reads bottom to top from (x, y), y its lowest row. */
static void text(canvas *c, int x, int y, const char *s, int scale, const uint8_t rgb[3], int vertical)
{
    for (int i = 0; s[i]; i++) {
        const unsigned char ch = (unsigned char)s[i];
        const uint8_t *g = heat_font5x7[ch >= 32 && ch < 127 ? ch - 32 : '?' - 32];
        for (int gy = 0; gy < HEAT_GLYPH_H; gy++)
            for (int gx = 0; gx < HEAT_GLYPH_W; gx++) {
                if (!(g[gy] >> (HEAT_GLYPH_W - 1 - gx) & 1))
                    continue;
                const int along = (i * HEAT_ADVANCE + gx) * scale;
                for (int dy = 0; dy < scale; dy++)
                    for (int dx = 0; dx < scale; dx++) {
                        if (vertical)
                            put(c, x + gy * scale + dy, y - along - dx, rgb);
                        else
                            put(c, x + along + dx, y + gy * scale + dy, rgb);
                    }
            }
    }
}

static void legend(canvas *c, const heat_layout *L, int64_t x_max, int diverging)
{
    for (int i = 0; i < L->legend_w; i++) {
        const double f = L->legend_w > 1 ? (double)i / (L->legend_w - 1) : 1;
        uint8_t rgb[3];
        html_heat_rgb((double)x_max * (diverging ? 2 * f - 1 : f), (double)x_max, diverging, rgb);
        fill(c, L->legend_x + i, L->legend_y, 1, L->legend_h, rgb);
    }
    frame(c, L->legend_x - 1, L->legend_y - 1, L->legend_w + 2, L->legend_h + 2, BORDER);
    char lo[32], hi[32];
    snprintf(lo, sizeof lo, diverging ? "-%lld" : "0", (long long)x_max);
    snprintf(hi, sizeof hi, diverging ? "+%lld" : "%lld", (long long)x_max);
    const int y = L->legend_y + L->legend_h + 4, right = L->legend_x + L->legend_w;
    text(c, L->legend_x, y, lo, L->scale, INK, 0);
    text(c, right - text_px(hi, L->scale), y, hi, L->scale, INK, 0);
    if (diverging)
        text(c, L->legend_x + L->legend_w / 2 - text_px("0", L->scale) / 2, y, "0", L->scale, INK, 0);
}

/* The count in its cell, when it fits: scale 2 in large cells, else 1. */
static void cell_count(canvas *c, const heat_layout *L, int x, int y, int64_t v, int diverging, double t)
{
    char s[32];
    snprintf(s, sizeof s, diverging && v > 0 ? "+%lld" : "%lld", (long long)v);
    int scale = 2;
    while (scale > 0 && (text_px(s, scale) > L->cell - 6 || HEAT_GLYPH_H * scale > L->cell - 6 || L->cell < 24))
        scale--;
    if (scale == 0)
        return;
    text(c, x + (L->cell - text_px(s, scale)) / 2, y + (L->cell - HEAT_GLYPH_H * scale) / 2, s, scale,
         t > 0.6 ? WHITE : INK, 0);
}

ptq_status heat_raster(ptq_ctx *ctx, int k, const char *const *labels, const int64_t *cells, int diverging,
                       const char *title, uint8_t **rgb, heat_layout *L)
{
    *rgb = NULL;
    if (k < 1 || k > MAX_K)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "a PNG heatmap takes 1 to %d classes, got %d", MAX_K, k);
    char(*names)[HEAT_LABEL_CHARS + 1] = calloc((size_t)k, sizeof *names);
    if (!names)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for a %d-class heatmap", k);
    int max_chars = 1;
    for (int r = 0; r < k; r++) {
        char idx[16];
        snprintf(idx, sizeof idx, "%d", r);
        ascii_label(labels && labels[r] ? labels[r] : idx, names[r], HEAT_LABEL_CHARS);
        if ((int)strlen(names[r]) > max_chars)
            max_chars = (int)strlen(names[r]);
    }
    heat_layout_make(k, max_chars, L);
    char head[128];
    ascii_label(title, head, (int)sizeof head - 1);
    const int title_w = MARGIN + text_px(head, TITLE_SCALE) + MARGIN;
    if (L->width < title_w)
        L->width = title_w;
    canvas c = {malloc((size_t)L->width * (size_t)L->height * 3), L->width, L->height};
    if (!c.px) {
        free(names);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for a %dx%d heatmap image", L->width, L->height);
    }
    memset(c.px, 255, (size_t)L->width * (size_t)L->height * 3);
    text(&c, MARGIN, MARGIN, head, TITLE_SCALE, INK, 0);
    int64_t x_max = 0;
    for (int64_t i = 0; i < (int64_t)k * k; i++)
        if (llabs((long long)cells[i]) > x_max)
            x_max = llabs((long long)cells[i]);
    const int s = L->scale, cell = L->cell, glyph_h = HEAT_GLYPH_H * s;
    for (int j = 0; j < k; j++) /* column labels, centred on their column, ending above the grid */
        text(&c, L->x0 + j * cell + (cell - glyph_h) / 2, L->y0 - 6, names[j], s, INK, 1);
    for (int r = 0; r < k; r++) {
        const int y = L->y0 + r * cell;
        text(&c, L->x0 - 6 - text_px(names[r], s), y + (cell - glyph_h) / 2, names[r], s, INK, 0);
        for (int j = 0; j < k; j++) {
            const int64_t v = cells[(int64_t)r * k + j];
            uint8_t col[3];
            html_heat_rgb((double)v, (double)x_max, diverging, col);
            const int x = L->x0 + j * cell;
            fill(&c, x, y, cell, cell, col);
            if (cell >= 12) { /* a light line between cells */
                fill(&c, x + cell - 1, y, 1, cell, GRID);
                fill(&c, x, y + cell - 1, cell, 1, GRID);
            }
            if (v != 0)
                cell_count(&c, L, x, y, v, diverging, sqrt((double)llabs((long long)v) / (double)x_max));
        }
    }
    for (int r = 0; r < k; r++)
        frame(&c, L->x0 + r * cell, L->y0 + r * cell, cell, cell, DIAG);
    frame(&c, L->x0 - 1, L->y0 - 1, k * cell + 2, k * cell + 2, BORDER);
    legend(&c, L, x_max, diverging);
    free(names);
    *rgb = c.px;
    return PTQ_OK;
}

typedef struct png_sink {
    ptq_buf b;
    char msg[256];
} png_sink;

static void on_write(png_structp png, png_bytep data, size_t n_bytes)
{
    png_sink *s = png_get_io_ptr(png);
    ptq_buf_put(&s->b, data, n_bytes);
}

static void on_flush(png_structp png)
{
    (void)png;
}

static void on_error(png_structp png, png_const_charp msg)
{
    png_sink *s = png_get_error_ptr(png);
    snprintf(s->msg, sizeof s->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

/* Returns 1 on success, 0 after a libpng error (message in the sink). */
static int encode_core(png_structp png, png_infop info, png_sink *sink, const uint8_t *rgb, int w, int h)
{
    if (setjmp(png_jmpbuf(png)))
        return 0;
    png_set_write_fn(png, sink, on_write, on_flush);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < h; y++)
        png_write_row(png, rgb + (size_t)y * (size_t)w * 3);
    png_write_end(png, NULL);
    return 1;
}

ptq_status ptq_heatmap_png(ptq_ctx *ctx, int k, const char *const *labels, const int64_t *cells, int diverging,
                           const char *title, void **png_out, size_t *n_bytes)
{
    *png_out = NULL;
    *n_bytes = 0;
    uint8_t *rgb = NULL;
    heat_layout L;
    PTQ_TRY_RET(heat_raster(ctx, k, labels, cells, diverging, title, &rgb, &L));
    png_sink sink;
    memset(&sink, 0, sizeof sink);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &sink, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    ptq_status st = PTQ_OK;
    if (!info)
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory encoding a heatmap PNG");
    else if (!encode_core(png, info, &sink, rgb, L.width, L.height))
        st = ptq_fail(ctx, PTQ_ERR_INTERNAL, "cannot encode a heatmap PNG: %s", sink.msg);
    else if (sink.b.failed)
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory encoding a heatmap PNG");
    png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
    free(rgb);
    if (st != PTQ_OK) {
        ptq_buf_free(&sink.b);
        return st;
    }
    *n_bytes = sink.b.n_bytes;
    *png_out = sink.b.data;
    return PTQ_OK;
}
