/* Provenance lines for Markdown reports (reports/md_header.h). */
#include "reports/md_header.h"

#include <stdlib.h>

#include <cjson/cJSON.h>

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
            st = ptq_buf_appendf(ctx, b, "- **%s**: %s\n", it->string, it->valuestring);
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
