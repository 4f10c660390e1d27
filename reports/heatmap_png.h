/* The PNG confusion heatmaps' raster (reports/heatmap_png.c): where
 * everything goes for k classes, the drawing into RGB pixels, and the 5x7
 * bitmap font it writes labels with (reports/font5x7.c). Not public API;
 * tests/test_heatmap_png.c reads cells back through the layout. */
#ifndef PTQ_REPORTS_HEATMAP_PNG_H
#define PTQ_REPORTS_HEATMAP_PNG_H

#include <stddef.h>
#include <stdint.h>

#include "ptq/status.h"

#define HEAT_GLYPH_W 5
#define HEAT_GLYPH_H 8       /* 7 rows above the baseline, 1 below */
#define HEAT_ADVANCE 6       /* px per character at scale 1 */
#define HEAT_LABEL_CHARS 18  /* longer class names are cut, ending in ".." */

extern const uint8_t heat_font5x7[95][HEAT_GLYPH_H]; /* ASCII 32..126 */

/* Pixel positions of a k-class heatmap; every length in pixels. */
typedef struct heat_layout {
    int k;
    int cell;        /* side of one cell */
    int scale;       /* label font scale: glyphs of 5x7 times this */
    int x0, y0;      /* the grid's top-left corner: cell (r, c) is at x0 + c * cell, y0 + r * cell */
    int legend_x, legend_y, legend_w, legend_h; /* the colour bar: white (left) to the scale's end (right) */
    int width, height;
} heat_layout;

/* The layout for k classes whose longest label has max_chars characters
 * (after cutting to HEAT_LABEL_CHARS). */
void heat_layout_make(int k, int max_chars, heat_layout *L);

/* Draws the heatmap of cells [k * k] (row-major, rows true class) into
 * *rgb [L->height * L->width * 3], malloc'd: title on top, column labels
 * read bottom to top above the grid, row labels at its left, counts in the
 * cells when they fit, the diagonal outlined, the colour bar and its ends'
 * values below. */
ptq_status heat_raster(ptq_ctx *ctx, int k, const char *const *labels, const int64_t *cells, int diverging,
                       const char *title, uint8_t **rgb, heat_layout *L);

#endif
