/* The sensitivity page and sections (reports/sens_html.c, sens_view.c,
 * the signed bars and trace charts of reports/html.c) on a crafted report of
 * 45 tensors with hostile names and a 3-step planner trace: the page twice
 * gives the same bytes; self-contained; tags balance; one bar per measured
 * tensor and mode, at most 40 per chart with a note, each chart sorted from
 * the largest effect; every tensor in the table in harm order; two trace
 * marks per step and both budget lines; names escaped; no NaN or infinity
 * in an SVG attribute; the validation page with both sections; malformed
 * reports and traces (PTQ_ERR_FORMAT) and another model's report or
 * trace (PTQ_ERR_INVALID_ARG) refused. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "ptq/html_report.h"
#include "testlib.h"

#define NT 45
#define SHA "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void check_balanced(const char *html, const char *open, const char *close)
{
    const int64_t n_open = test_count_str(html, open), n_close = test_count_str(html, close);
    CHECK_MSG(n_open == n_close && n_open > 0, "%s %lld vs %s %lld", open, (long long)n_open, close,
              (long long)n_close);
}

/* Tensor i: "only" delta -(i % 7) * 0.25 points (none for i == 5: not
 * measured), "all but" recovered i % 5 * 0.1 for even i (odd ones FP16 in
 * the default plan), SQNR 10 + i dB (infinite for i == 6). */
static char *crafted_sens(const char *sha)
{
    size_t cap = 64 * 1024, n = 0;
    char *s = malloc(cap);
    n += (size_t)snprintf(s + n, cap - n,
                          "{\"command\":\"sensitivity\",\"model\":\"m<1>.onnx\",\"model_sha256\":\"%s\","
                          "\"core\":\"int8\",\"format\":\"ptq-sensitivity\",\"samples\":400,\"classes\":3,"
                          "\"class_names\":[\"cat & dog\","
                          "null,\"<b>bird</b>\"],\"top1_fp32\":0.9,\"default_plan\":{\"top1\":0.85},\"tensors\":[",
                          sha);
    for (int i = 0; i < NT; i++) {
        const char *stem = i == 3 ? "/evil<script>&\\\"t\\\"" : "t";
        n += (size_t)snprintf(s + n, cap - n, "%s{\"name\":\"%s%d\",\"kind\":\"%s\",\"precision_default\":\"%s\",",
                              i ? "," : "", stem, i, i % 9 == 4 ? "weight" : "activation", i % 2 ? "fp16" : "int8");
        if (i == 5)
            n += (size_t)snprintf(s + n, cap - n, "\"only\":null,");
        else
            n += (size_t)snprintf(s + n, cap - n,
                                  "\"only\":{\"top1_delta_pts\":%g,\"sqnr_db\":%d,\"sqnr_infinite\":%s,"
                                  "\"kl_nats\":0.01,\"agreement\":0.97,\"worst_class\":{\"index\":%d,"
                                  "\"recall_drop_pts\":%g}},",
                                  -(i % 7) * 0.25, 10 + i, i == 6 ? "true" : "false", i % 3, (i % 7) * 0.5);
        n += (size_t)snprintf(s + n, cap - n, "\"all_but\":{\"recovered_pts\":%g,\"measured\":%s}}",
                              i % 2 ? 0.0 : (i % 5) * 0.1, i % 2 ? "false" : "true");
    }
    snprintf(s + n, cap - n, "]}");
    return s;
}

static const char trace_json[] =
    "{\"format\":\"ptq-plan-trace\",\"budget_pts\":0.5,\"class_budget_pts\":2,\"met\":true,\"top1_fp32\":0.9,"
    "\"steps\":[{\"moved_to_fp16\":null,\"top1\":0.8,\"top1_drop_pts\":10,\"worst_class\":{\"index\":2,\"name\":"
    "\"<b>bird</b>\",\"recall_drop_pts\":30},\"fp16_tensors\":5},{\"moved_to_fp16\":\"t<4>\",\"top1\":0.88,"
    "\"top1_drop_pts\":2,\"worst_class\":{\"index\":0,\"recall_drop_pts\":4},\"fp16_tensors\":6},"
    "{\"moved_to_fp16\":\"t8\",\"top1\":0.897,\"top1_drop_pts\":0.3,\"worst_class\":{\"index\":1,\"name\":\"x\","
    "\"recall_drop_pts\":1.5},\"fp16_tensors\":7}]}";

/* The values in the <title>s of chart `what` ("top-1 change", "top-1
 * recovered"), in page order, into v; returns how many. */
static int chart_values(const char *html, const char *what, double *v, int max)
{
    char key[64];
    snprintf(key, sizeof key, ": %s ", what);
    int n = 0;
    for (const char *p = strstr(html, key); p && n < max; p = strstr(p + 1, key)) {
        char *end = NULL;
        const double x = strtod(p + strlen(key), &end);
        if (strncmp(end, " points", 7) == 0) /* a bar's title, not the caption */
            v[n++] = x;
    }
    return n;
}

static int attr_has_nonfinite(const char *html)
{
    return strstr(html, "\"nan") || strstr(html, "\"-nan") || strstr(html, "\"inf") || strstr(html, "\"-inf") ||
           test_contains_ci(html, "nan\"");
}

static void test_page(ptq_ctx *ctx)
{
    char *sens = crafted_sens(SHA), *a = NULL, *b = NULL;
    ptq_html_extra x = {.model = "m<1>.onnx", .trace_json = trace_json};
    CHECK_MSG(ptq_sens_format_html(ctx, sens, &x, &a) == PTQ_OK, "%s", ctx->msg);
    CHECK(ptq_sens_format_html(ctx, sens, &x, &b) == PTQ_OK);
    if (!a || !b)
        goto done;
    CHECK(strcmp(a, b) == 0);
    CHECK(strncmp(a, "<!DOCTYPE html>\n", 16) == 0 && strstr(a, "</html>\n") != NULL);
    CHECK(!test_contains_ci(a, "http") && !test_contains_ci(a, "<script") && !test_contains_ci(a, "url(") &&
          !test_contains_ci(a, "<link"));
    check_balanced(a, "<svg", "</svg>");
    check_balanced(a, "<section", "</section>");
    check_balanced(a, "<table", "</table>");
    check_balanced(a, "<title>", "</title>");
    check_balanced(a, "<text", "</text>");
    check_balanced(a, "<tr>", "</tr>");
    CHECK(!attr_has_nonfinite(a));
    /* (a): 44 measured, 40 drawn, most harmful first; (b): 23 measured, all drawn, most recovered first */
    double v[64];
    const int n_a = chart_values(a, "top-1 change", v, 64);
    CHECK_MSG(n_a == 40, "%d bars in (a)", n_a);
    int sorted = 1;
    for (int i = 1; i < n_a; i++)
        sorted &= v[i] >= v[i - 1];
    CHECK(sorted && n_a > 0 && v[0] == -1.5);
    const int n_b = chart_values(a, "top-1 recovered", v, 64);
    CHECK_MSG(n_b == 23, "%d bars in (b)", n_b);
    sorted = 1;
    for (int i = 1; i < n_b; i++)
        sorted &= v[i] <= v[i - 1];
    CHECK(sorted && n_b > 0 && fabs(v[0] - 0.4) < 1e-9);
    CHECK(test_count_str(a, "<rect class=\"sbar\"") == 40 + 23);
    CHECK(strstr(a, "The first 40 of 44 tensors") != NULL);
    CHECK(test_count_str(a, "<svg class=\"sbars\"") == 2 && test_count_str(a, "<svg class=\"trace\"") == 1);
    /* the table: every tensor, the unmeasured one last; ranks: t6 (-1.50, infinite SQNR) after t13 (-1.50, 23 dB) */
    const char *table = strstr(a, "<table class=\"sens\">");
    CHECK(table && test_count_str(table, "<tr><td class=\"l\">") >= NT);
    const char *t13 = table ? strstr(table, ">t13<") : NULL, *t6 = table ? strstr(table, ">t6<") : NULL;
    const char *t5 = table ? strstr(table, ">t5<") : NULL, *t44 = table ? strstr(table, ">t44<") : NULL;
    CHECK(t13 && t6 && t13 < t6 && t5 && t44 && t44 < t5);
    CHECK(strstr(a, "not measured (no core scale: only zeros seen, no values, or no normal float32 one)") != NULL);
    CHECK(strstr(a, "<td>inf</td>") != NULL);
    /* the trace */
    CHECK(test_count_str(a, "<circle class=\"pt\"") == 6);
    CHECK(test_count_str(a, "<line class=\"budget\"") == 2);
    const char *trace = strstr(a, "<table class=\"trace\">");
    CHECK(trace && test_count_str(trace, "<tr><td>") == 3);
    CHECK(strstr(a, "(the starting plan)") != NULL);
    /* escaping */
    CHECK(strstr(a, "/evil&lt;script&gt;&amp;&quot;t&quot;3") != NULL && strstr(a, "<script>") == NULL);
    CHECK(strstr(a, "&lt;b&gt;bird&lt;/b&gt;") != NULL && strstr(a, "<b>bird") == NULL);
    CHECK(strstr(a, "cat &amp; dog") != NULL && strstr(a, "t&lt;4&gt;") != NULL);
    CHECK(strstr(a, "m&lt;1&gt;.onnx") != NULL);
    CHECK(strstr(a, "<span data-key=\"tensors\">45</span>") != NULL);
    /* without the trace: no trace section */
    free(b);
    b = NULL;
    CHECK(ptq_sens_format_html(ctx, sens, NULL, &b) == PTQ_OK && b && !strstr(b, "id=\"trace\""));
done:
    free(a);
    free(b);
    free(sens);
}

static void test_validate_sections(ptq_ctx *ctx)
{
    enum { K = 3, N = 30 };
    int32_t labels[N];
    float f[N * K], q[N * K];
    for (int i = 0; i < N; i++) {
        labels[i] = i % K;
        for (int c = 0; c < K; c++)
            f[i * K + c] = q[i * K + c] = c == i % K ? 2.0f : 0.0f;
    }
    ptq_validate_stats *s = NULL;
    CHECK(ptq_validate_stats_init(ctx, K, &s) == PTQ_OK);
    CHECK(ptq_validate_stats_add(ctx, s, N, labels, f, q) == PTQ_OK);
    char *sens = crafted_sens(SHA), *a = NULL;
    ptq_html_extra x = {.sens_json = sens, .trace_json = trace_json};
    CHECK_MSG(ptq_validate_format_html(ctx, s, NULL, &x, &a) == PTQ_OK, "%s", ctx->msg);
    CHECK(a && strstr(a, "<section id=\"sensitivity\">") && strstr(a, "<section id=\"trace\">") &&
          strstr(a, "href=\"#sensitivity\"") && strstr(a, "href=\"#trace\"") &&
          test_count_str(a, "<svg class=\"heatmap\"") == 3);
    free(a);
    a = NULL;
    x.sens_json = "{\"format\":\"ptq-sensitivity\"}";
    CHECK(ptq_validate_format_html(ctx, s, NULL, &x, &a) == PTQ_ERR_FORMAT && a == NULL);
    free(sens);
    ptq_validate_stats_free(s);
}

static void test_refusals(ptq_ctx *ctx)
{
    static const char *const bad_sens[] = {
        "not json",
        "[]",
        "{\"format\":\"other\",\"classes\":3,\"tensors\":[]}",
        "{\"format\":\"ptq-sensitivity\",\"classes\":3}",
        "{\"format\":\"ptq-sensitivity\",\"classes\":0,\"tensors\":[]}",
        "{\"format\":\"ptq-sensitivity\",\"classes\":2.5,\"tensors\":[]}",
        "{\"format\":\"ptq-sensitivity\",\"classes\":3,\"tensors\":[{\"kind\":\"activation\"}]}",
        "{\"format\":\"ptq-sensitivity\",\"classes\":3,\"tensors\":[7]}",
    };
    char *out = NULL;
    for (size_t i = 0; i < sizeof bad_sens / sizeof bad_sens[0]; i++) {
        CHECK_MSG(ptq_html_inputs_check(ctx, NULL, bad_sens[i], NULL) == PTQ_ERR_FORMAT, "sens %zu", i);
        CHECK(ptq_sens_format_html(ctx, bad_sens[i], NULL, &out) == PTQ_ERR_FORMAT && out == NULL);
    }
    static const char *const bad_trace[] = {
        "{}", "{\"format\":\"ptq-plan-trace\",\"steps\":[]}", "{\"format\":\"ptq-plan-trace\",\"steps\":[1]}",
        "{\"format\":\"ptq-sensitivity\",\"steps\":[{}]}"};
    for (size_t i = 0; i < sizeof bad_trace / sizeof bad_trace[0]; i++)
        CHECK_MSG(ptq_html_inputs_check(ctx, NULL, NULL, bad_trace[i]) == PTQ_ERR_FORMAT, "trace %zu", i);
    char *sens = crafted_sens(SHA);
    CHECK(ptq_html_inputs_check(ctx, SHA, sens, trace_json) == PTQ_OK);
    char other[65];
    memset(other, 'e', 64);
    other[64] = '\0';
    CHECK(ptq_html_inputs_check(ctx, other, sens, NULL) == PTQ_ERR_INVALID_ARG && strstr(ctx->msg, "another model"));
    /* a trace names its plan's model (one without, from before, passes) */
    char *traced = malloc(sizeof trace_json + 128);
    if (traced)
        snprintf(traced, sizeof trace_json + 128, "{\"model\":{\"name\":\"m\",\"sha256\":\"%s\"},%s", SHA,
                 trace_json + 1);
    CHECK(traced && ptq_html_inputs_check(ctx, SHA, NULL, traced) == PTQ_OK);
    CHECK(traced && ptq_html_inputs_check(ctx, other, NULL, traced) == PTQ_ERR_INVALID_ARG &&
          strstr(ctx->msg, "the planner's trace is of another model's plan"));
    CHECK(ptq_html_inputs_check(ctx, other, NULL, trace_json) == PTQ_OK);
    free(traced);
    /* a minimal report: no names, no figures */
    CHECK(ptq_sens_format_html(ctx, "{\"format\":\"ptq-sensitivity\",\"classes\":1,\"tensors\":[{\"name\":\"x\"}]}",
                               NULL, &out) == PTQ_OK);
    CHECK(out && !attr_has_nonfinite(out) && strstr(out, "not measured"));
    free(out);
    free(sens);
}

/* A report of 65,536 classes, each named: the names read in linear time
 * (cJSON_GetArrayItem per class took ~8 s), the last one on the page. */
static void test_many_class_names(ptq_ctx *ctx)
{
    enum { K = 1 << 16 };
    const char *head = "{\"format\":\"ptq-sensitivity\",\"classes\":65536,\"tensors\":[{\"name\":\"x\","
                       "\"only\":{\"top1_delta_pts\":-1,\"worst_class\":{\"index\":65535,\"recall_drop_pts\":2}}}],"
                       "\"class_names\":[";
    char *json = malloc(strlen(head) + (size_t)K * 4 + 32);
    CHECK(json != NULL);
    if (!json)
        return;
    char *w = json + sprintf(json, "%s", head);
    for (int c = 0; c < K - 1; c++)
        w += sprintf(w, "\"c\",");
    sprintf(w, "\"zz-last\"]}");
    const double t0 = ptq_clock_s();
    CHECK(ptq_html_inputs_check(ctx, NULL, json, NULL) == PTQ_OK);
    char *out = NULL;
    CHECK(ptq_sens_format_html(ctx, json, NULL, &out) == PTQ_OK && out && strstr(out, "zz-last"));
    const double took_s = ptq_clock_s() - t0;
    CHECK_MSG(took_s < 2.0, "65,536 class names read in %.1f s", took_s);
    free(out);
    free(json);
}

static int valid_utf8(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        const int n = *p < 0x80 ? 1 : (*p & 0xE0) == 0xC0 ? 2 : (*p & 0xF0) == 0xE0 ? 3 : (*p & 0xF8) == 0xF0 ? 4 : 0;
        if (n == 0)
            return 0;
        for (int i = 1; i < n; i++)
            if ((p[i] & 0xC0) != 0x80)
                return 0;
        p += n;
    }
    return 1;
}

/* The worst class's name in a bar's note: cut after 40 characters, never inside one ("x" and 30 "é" are 61 bytes:
 * a cut at byte 40 split the 20th "é"), and the page stays UTF-8 when a huge SQNR makes the note overflow. */
static void test_worst_class_utf8(ptq_ctx *ctx)
{
    char e30[64] = "x", e50[128] = "y", json[1024];
    for (int i = 0; i < 30; i++)
        strcat(e30, "\xC3\xA9");
    for (int i = 0; i < 50; i++)
        strcat(e50, "\xC3\xA9");
    const char *sqnr[6] = {"20", "20", "5e199", "5e200", "5e201", "5e202"}; /* the cut falls on either byte */
    for (int t = 0; t < 6; t++) {
        snprintf(json, sizeof json,
                 "{\"format\":\"ptq-sensitivity\",\"classes\":2,\"class_names\":[\"%s\",\"%s\"],"
                 "\"tensors\":[{\"name\":\"x\",\"only\":{\"top1_delta_pts\":-1,\"sqnr_db\":%s,"
                 "\"worst_class\":{\"index\":%d,\"recall_drop_pts\":2}}}]}",
                 e30, e50, sqnr[t], t == 1);
        char *out = NULL;
        CHECK_MSG(ptq_sens_format_html(ctx, json, NULL, &out) == PTQ_OK, "%s", ctx->msg);
        CHECK_MSG(out && valid_utf8(out), "report %d is not UTF-8", t);
        char want[256];
        if (t == 0) /* the whole name */
            snprintf(want, sizeof want, "worst class %s (-2.00 recall points)", e30);
        else /* "y" and 39 of its 50 characters */
            snprintf(want, sizeof want, "worst class %.79s (-2.00 recall points)", e50);
        CHECK_MSG(t >= 2 || (out && strstr(out, want)), "want '%s'", want);
        free(out);
    }
}

int main(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    test_page(&ctx);
    test_validate_sections(&ctx);
    test_refusals(&ctx);
    test_many_class_names(&ctx);
    test_worst_class_utf8(&ctx);
    return test_done("test_sens_html");
}
