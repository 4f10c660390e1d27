/* libptq in a program that set a locale whose decimal point is a comma
 * (setlocale(LC_ALL, "de_DE.UTF-8")): specs still parse ("mean=0.286",
 * "percentile=99.9", "1.5G"), the preprocessing spec archives record reads
 * back, and the exported tables hold the numbers a C-locale program writes
 * (they held "1e+149011596" for 0.1). The locale is made with localedef
 * into a temporary folder when the system has none (skipped without
 * localedef). core/c_locale.c. */
#define _GNU_SOURCE
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptq/calib.h"
#include "ptq/dataset.h"
#include "ptq/export.h"
#include "ptq/memory.h"
#include "ptq/report.h"
#include "testlib.h"

/* Sets a comma-decimal locale: an installed one, else de_DE made under dir (LOCPATH). 0 when there is none. */
static int comma_locale(const char *dir)
{
    static const char *const names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (setlocale(LC_ALL, names[i]))
            return 1;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "localedef -i de_DE -f UTF-8 %s/de_DE.UTF-8 >/dev/null 2>&1", dir);
    if (system(cmd) != 0)
        return 0;
    setenv("LOCPATH", dir, 1);
    return setlocale(LC_ALL, "de_DE.UTF-8") != NULL;
}

int main(void)
{
    char dir[] = "/tmp/ptq-api-locale-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    const int have = comma_locale(dir);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    char probe[16];
    snprintf(probe, sizeof probe, "%g", 0.5);
    if (!have || strcmp(probe, "0,5") != 0) {
        fprintf(stderr, "test_api_locale: skipped: no locale with a decimal comma (localedef)\n");
        return PTQ_TEST_SKIP;
    }
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);

    ptq_preprocess p, back;
    ptq_preprocess_default(&p);
    CHECK_MSG(ptq_preprocess_parse(&ctx, "mean=0.286 std=0.353 scale=1/255", &p) == PTQ_OK && p.mean[0] == 0.286f &&
              p.std[0] == 0.353f, "%s", ctx.msg);
    char spec[512];
    p.n_channels = 3;
    p.height = p.width = 28;
    p.mean[1] = 0.25f;
    ptq_preprocess_format(&p, spec, sizeof spec);
    ptq_preprocess_default(&back);
    CHECK_MSG(ptq_preprocess_parse(&ctx, spec, &back) == PTQ_OK && back.mean[1] == 0.25f && back.scale == p.scale,
              "the spec '%s' read back: %s", spec, ctx.msg);

    ptq_calib_method m;
    double pct = 0.0;
    CHECK_MSG(ptq_calib_spec_parse(&ctx, "percentile=99.9", &m, &pct) == PTQ_OK && pct == 99.9, "%s", ctx.msg);
    uint64_t bytes = 0;
    CHECK(ptq_memory_parse("1.5G", &bytes) == 0 && bytes == (uint64_t)3 << 29);

    char d[64];
    CHECK(ptq_export_format_double(0.1, d, sizeof d) == 3 && strcmp(d, "0.1") == 0);
    ptq_tensor_range tr = {.name = "t", .method = PTQ_CALIB_MINMAX, .format = PTQ_QFORMAT_INT8};
    tr.r.amax = 0.1;
    tr.r.scale = 0.1 / 127;
    ptq_buf out = {0};
    CHECK_MSG(ptq_export_ort_json(&ctx, &tr, 1, &out, NULL) == PTQ_OK && out.data &&
              strstr(out.data, "\"highest\": 0.10000000149011612,") != NULL, "ONNX Runtime JSON: %s",
              out.data ? out.data : ctx.msg);
    ptq_buf_free(&out);
    CHECK_MSG(ptq_export_json(&ctx, NULL, &tr, 1, &out, NULL) == PTQ_OK && out.data &&
              strstr(out.data, "\"scale\":\t0.0007874015748031497,") != NULL, "ptq JSON: %s",
              out.data ? out.data : ctx.msg);
    ptq_buf_free(&out);
    /* the reports' numbers (eval's and validate's JSON through reports/json_num.c): top-1 of 1 in 2 is 0.5, not
     * "0,5", which made the JSON invalid */
    ptq_eval_stats st;
    const float logits[] = {1.0f, 0.0f, 1.0f, 0.0f};
    const int32_t labels[] = {0, 1};
    char *json = NULL;
    CHECK_MSG(ptq_eval_stats_init(&ctx, 2, &st) == PTQ_OK && ptq_eval_stats_update(&ctx, &st, logits, labels, 2, 0,
                                                                                   NULL) == PTQ_OK &&
              ptq_eval_format_json(&ctx, &st, NULL, NULL, &json) == PTQ_OK, "%s", ctx.msg);
    CHECK_MSG(json && strstr(json, "0.5") && !strstr(json, "0,5"), "eval JSON: %s", json ? json : ctx.msg);
    free(json);
    ptq_eval_stats_free(&st);
    return test_done("test_api_locale");
}
