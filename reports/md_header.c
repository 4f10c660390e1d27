/* Provenance lines and names in table cells for Markdown reports
 * (reports/md_header.h). */
#include "reports/md_header.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/utf8.h"
#include "reports/bidi.h"

static int is_ctrl(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

/* Appends s as Markdown text that reads back as s: control characters and
 * bytes that start no UTF-8 character as \xNN, as ptq_escape prints them
 * (in a table cell, cell, a line break as a space); < > & as entities (no
 * inline HTML); the characters of punct backslash-escaped; bidi levels s
 * opens closed after it (reports/bidi.h). */
static void put_text(ptq_buf *b, const char *s, const char *punct, int cell)
{
    bidi_levels levels = BIDI_LEVELS_INIT;
    for (size_t n; *s; s += n) {
        const unsigned char c = (unsigned char)*s;
        n = c < 0x80 ? 1 : ptq_utf8_char_bytes(s);
        if (n == 3)
            bidi_step(&levels, s);
        if (cell && (c == '\n' || c == '\r')) {
            ptq_buf_put(b, " ", 1);
        } else if (is_ctrl(c) || n == 0) {
            ptq_buf_putf(b, "\\\\x%02x", c); /* an escaped backslash: read as "\xNN" */
            n = 1;
        } else if (c == '<') {
            ptq_buf_put(b, "&lt;", 4);
        } else if (c == '>') {
            ptq_buf_put(b, "&gt;", 4);
        } else if (c == '&') {
            ptq_buf_put(b, "&amp;", 5);
        } else if (c < 0x80 && strchr(punct, c)) {
            ptq_buf_putf(b, "\\%c", c);
        } else {
            ptq_buf_put(b, s, n);
        }
    }
    bidi_close(&levels, b); /* a right-to-left override in s ends with it, not at the end of the line */
}

ptq_status ptq_md_header(ptq_ctx *ctx, ptq_buf *b, const char *header_json, const char *what)
{
    ptq_status st = PTQ_OK;
    if (!header_json)
        return st;
    cJSON *h = cJSON_Parse(header_json);
    if (!h || !cJSON_IsObject(h)) {
        cJSON_Delete(h);
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "cannot build the %s: header is not a JSON object", what);
    }
    for (cJSON *it = h->child; it && st == PTQ_OK; it = it->next) {
        if (cJSON_IsString(it)) {
            st = ptq_buf_appendf(ctx, b, "- **%s**: ", it->string);
            /* a path from the command line (any bytes) as list item text; '_' stays: inside a word (tmp_ab12)
               it starts no emphasis, and the path reads as typed */
            put_text(b, it->valuestring, "\\`*[]~", 0);
            if (st == PTQ_OK && b->failed)
                st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory writing the %s", what);
            if (st == PTQ_OK)
                st = ptq_buf_appendf(ctx, b, "\n");
        } else {
            char *val = cJSON_PrintUnformatted(it);
            st = ptq_buf_appendf(ctx, b, "- **%s**: %s\n", it->string, val ? val : "?");
            free(val);
        }
    }
    if (st == PTQ_OK)
        st = ptq_buf_appendf(ctx, b, "\n");
    cJSON_Delete(h);
    return st;
}

static ptq_status md_done(ptq_ctx *ctx, const ptq_buf *b)
{
    return b->failed ? ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory writing a Markdown report") : PTQ_OK;
}

ptq_status ptq_md_name(ptq_ctx *ctx, ptq_buf *b, const char *name)
{
    const char *s = name ? name : "";
    if (*s && strchr("#-+", *s)) { /* what would start a heading or a list */
        ptq_buf_putf(b, "\\%c", *s);
        s++;
    }
    put_text(b, s, "\\`*_[]|~", 1);
    return md_done(ctx, b);
}

ptq_status ptq_md_code(ptq_ctx *ctx, ptq_buf *b, const char *name)
{
    const unsigned char *s = (const unsigned char *)(name ? name : "");
    int run = 0, longest = 0;
    for (const unsigned char *p = s; *p; p++) {
        run = *p == '`' ? run + 1 : 0;
        longest = run > longest ? run : longest;
    }
    const size_t n = strlen((const char *)s);
    /* a space inside the fence when the name starts or ends with a backtick (CommonMark strips one each side) */
    const int pad = n > 0 && (s[0] == '`' || s[n - 1] == '`');
    for (int i = 0; i <= longest; i++)
        ptq_buf_put(b, "`", 1);
    if (pad)
        ptq_buf_put(b, " ", 1);
    bidi_levels levels = BIDI_LEVELS_INIT;
    for (const unsigned char *p = s; *p; p++) {
        bidi_step(&levels, (const char *)p);
        if (*p == '\n' || *p == '\r') /* a line break as a space, another control character as \xNN */
            ptq_buf_put(b, " ", 1);
        else if (is_ctrl(*p))
            ptq_buf_putf(b, "\\x%02x", *p);
        else if (*p == '|')
            ptq_buf_put(b, "\\|", 2);
        else
            ptq_buf_put(b, p, 1);
    }
    bidi_close(&levels, b); /* inside the span: an override in the name does not reverse the rest of the row */
    if (pad)
        ptq_buf_put(b, " ", 1);
    for (int i = 0; i <= longest; i++)
        ptq_buf_put(b, "`", 1);
    return md_done(ctx, b);
}
