/* The provenance list at the top of every Markdown report (validate.md,
 * sens.md): a header JSON object's fields as "- **key**: value" lines.
 * reports/md_header.c; covered by tests/test_validate_report.c and
 * tests/cli_sensitivity_test.py. */
#ifndef PTQ_REPORTS_MD_HEADER_H
#define PTQ_REPORTS_MD_HEADER_H

#include "ptq/buf.h"
#include "ptq/status.h"

/* Appends header_json's fields to b, then a blank line; nothing when
 * header_json is NULL. PTQ_ERR_INVALID_ARG ("cannot build the <what>:
 * header is not a JSON object") when it is not an object. */
ptq_status ptq_md_header(ptq_ctx *ctx, ptq_buf *b, const char *header_json, const char *what);

#endif
