/* What every Markdown report (validate.md, sens.md) shares: the provenance
 * list at the top (a header JSON object's fields as "- **key**: value"
 * lines) and names from files written as table cells. reports/md_header.c;
 * covered by tests/test_validate_report.c and tests/cli_sensitivity_test.py. */
#ifndef PTQ_REPORTS_MD_HEADER_H
#define PTQ_REPORTS_MD_HEADER_H

#include "ptq/buf.h"
#include "ptq/status.h"

/* Appends header_json's fields to b, then a blank line; nothing when
 * header_json is NULL. A string value (a path may hold any bytes) is
 * written with control characters and bytes that start no UTF-8 character
 * as \xNN (as ptq_escape), < > & as entities and \ ` * [ ] ~ escaped. PTQ_ERR_INVALID_ARG ("cannot build the <what>:
 * header is not a JSON object") when it is not an object. */
ptq_status ptq_md_header(ptq_ctx *ctx, ptq_buf *b, const char *header_json, const char *what);

/* Appends a name from a file (a class, a tensor) as text in a table cell,
 * read back as the same text by CommonMark/GFM renderers: \ ` * _ [ ] | ~
 * (and a leading # - +) backslash-escaped, < > & as entities (no inline
 * HTML), line breaks as spaces, other control characters and bytes that
 * start no UTF-8 character as \xNN (as ptq_escape), and the bidi levels it
 * opens closed after it (reports/bidi.h). PTQ_ERR_NOMEM. */
ptq_status ptq_md_name(ptq_ctx *ctx, ptq_buf *b, const char *name);
/* The same name as a code span in a table cell: fenced by one backtick more
 * than its longest run of them, | as \| (GFM splits cells first), line
 * breaks as spaces, other control characters as \xNN, the bidi levels it
 * opens closed inside the span. PTQ_ERR_NOMEM. */
ptq_status ptq_md_code(ptq_ctx *ctx, ptq_buf *b, const char *name);

#endif
