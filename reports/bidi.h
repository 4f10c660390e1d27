/* The explicit bidi levels a name from a file leaves open, and the closers
 * that end them where the name ends, so that a right-to-left override in a
 * class or tensor name does not reverse the text after it in a report (a
 * tooltip's numbers, a flagged class's recall). reports/bidi.c; used by
 * html_text (reports/html.c) and the Markdown names (reports/md_header.c);
 * covered by tests/test_html_report.c and tests/test_validate_report.c. */
#ifndef PTQ_REPORTS_BIDI_H
#define PTQ_REPORTS_BIDI_H

#include <stdint.h>

#include "ptq/buf.h"

/* As Unicode's algorithm (UAX #9, X1-X8) keeps them: embeddings and
 * overrides (U+202A, B, D, E) end at a PDF (U+202C) when innermost,
 * isolates (U+2066, 7, 8) with every level inside them at a PDI (U+2069);
 * a closer with nothing to close is ignored. */
typedef struct bidi_levels {
    char open[125];             /* 'E' or 'I', innermost last; 125 is the algorithm's deepest level */
    int n;
    int64_t n_embed, n_isolate; /* every opener seen: past that depth, a closer for each of them */
} bidi_levels;

#define BIDI_LEVELS_INIT {{0}, 0, 0, 0}

/* Follows the character at p (its first byte; a cut sequence is none). */
void bidi_step(bidi_levels *b, const char *p);
/* Appends to out the closers of what b holds open, innermost first (past
 * the depth kept: a PDI for every isolate, then a PDF for every embedding). */
void bidi_close(const bidi_levels *b, ptq_buf *out);

#endif
