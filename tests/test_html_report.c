/* report.html's writer (reports/validate_html.c, reports/html.c) on a
 * crafted 4-class comparison with hostile class names, paths and tensor
 * names: the page twice gives the same bytes; it is self-contained (no
 * http, no script, no link, no url()); tags balance; one heatmap cell per
 * class pair and matrix, each with a <title> holding its count; every name
 * escaped; the flagged class first; the histograms' thresholds as given; a
 * page without extras; 150 classes without heatmaps; valid UTF-8 where long
 * names are cut. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ptq/html_report.h"
#include "testlib.h"

#define K 4
#define N 400

static const char *const names[K] = {"<script>alert(1)</script>", "a&b", "\"quoted\" 'single'",
                                     "line\nbreak \xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"
                                     "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"
                                     "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"};

/* label i % K, FP32 always right; the quantized model moves 20 images of
 * class 2 to class 0 (recall of class 2: 100% -> 80%, flagged). */
static void crafted(int32_t *labels, float *f, float *q)
{
    int moved = 0;
    for (int i = 0; i < N; i++) {
        int y = i % K, pq = y;
        if (y == 2 && moved < 20) {
            moved++;
            pq = 0;
        }
        labels[i] = y;
        for (int c = 0; c < K; c++) {
            f[i * K + c] = c == y ? 3.0f : 0.1f * (float)c;
            q[i * K + c] = c == pq ? 3.0f : 0.1f * (float)c + 0.01f;
        }
    }
}

static int valid_utf8(const unsigned char *s)
{
    while (*s) {
        int extra = *s < 0x80 ? 0 : (*s & 0xE0) == 0xC0 ? 1 : (*s & 0xF0) == 0xE0 ? 2 : (*s & 0xF8) == 0xF0 ? 3 : -1;
        if (extra < 0)
            return 0;
        s++;
        for (int i = 0; i < extra; i++, s++)
            if ((*s & 0xC0) != 0x80)
                return 0;
    }
    return 1;
}

/* Every <rect class="cell"> has a <title> "true A, predicted B: [+]count"
 * before its </rect>; returns the number of such cells, -1 on a bad one. */
static int64_t cells_with_counts(const char *html)
{
    int64_t n = 0;
    for (const char *p = strstr(html, "<rect class=\"cell\""); p; p = strstr(p + 1, "<rect class=\"cell\"")) {
        const char *title = strstr(p, "<title>true "), *end = strstr(p, "</rect>");
        const char *close = title ? strstr(title, "</title>") : NULL;
        if (!title || !end || !close || title > end || close > end)
            return -1;
        const char *colon = close;
        while (colon > title && *colon != ':')
            colon--;
        char *num_end = NULL;
        strtoll(colon + 2, &num_end, 10);
        if (*colon != ':' || num_end != close || num_end == colon + 2)
            return -1;
        n++;
    }
    return n;
}

static void check_balanced(const char *html, const char *open, const char *close)
{
    const int64_t n_open = test_count_str(html, open), n_close = test_count_str(html, close);
    CHECK_MSG(n_open == n_close && n_open > 0, "%s %lld vs %s %lld", open, (long long)n_open, close,
              (long long)n_close);
}

static ptq_html_hist hostile_hist(int64_t *bars)
{
    ptq_html_hist h;
    memset(&h, 0, sizeof h);
    h.name = (char *)"/layer<1>/Relu&\"out\"";
    h.prec = PTQ_PREC_INT8;
    h.plan_amax = 1.5;
    h.percentile = 99.99;
    const double amax[4] = {2.0, 1.25, 1.5, 1.375};
    for (int m = 0; m < 4; m++) {
        h.range[m].amax = amax[m];
        h.range[m].scale = amax[m] / 127;
        h.range[m].clipped_fraction = m == 0 ? 0 : 0.001 * m;
    }
    for (int j = 0; j < 100; j++)
        bars[j] = j % 7 == 0 ? 0 : (int64_t)(1000.0 * exp(-j / 10.0)) + 1;
    h.bars = bars;
    h.n_bars = 100;
    h.bar_width = 0.02;
    h.stats = (ptq_observer_stats){.count = 5000, .n_zero = 1000, .n_binned = 4000, .min = -1.9f, .max = 2.0f};
    return h;
}

static void test_page(ptq_ctx *ctx)
{
    int32_t *labels = malloc(N * sizeof *labels);
    float *f = malloc(N * K * sizeof *f), *q = malloc(N * K * sizeof *q);
    ptq_validate_stats *s = NULL;
    crafted(labels, f, q);
    CHECK(ptq_validate_stats_init(ctx, K, &s) == PTQ_OK);
    CHECK(ptq_validate_stats_add(ctx, s, N, labels, f, q) == PTQ_OK);
    int64_t bars[100];
    ptq_html_hist h = hostile_hist(bars);
    ptq_html_extra x = {"models/<evil>&model.onnx", "plan 'x'.json", "data\".h5", "calib.h5", &h, 1, NULL, NULL, 0};
    ptq_validate_opts vo = PTQ_VALIDATE_OPTS_INIT;
    vo.class_names = names;
    vo.header_json = "{\"command\":\"validate\",\"device\":\"cpu <fast>\",\"plan_tensors\":3}";
    char *a = NULL, *b = NULL;
    CHECK(ptq_validate_format_html(ctx, s, &vo, &x, &a) == PTQ_OK);
    CHECK(ptq_validate_format_html(ctx, s, &vo, &x, &b) == PTQ_OK);
    if (!a || !b)
        goto done;
    CHECK_MSG(strcmp(a, b) == 0, "two renderings differ");
    CHECK(strncmp(a, "<!DOCTYPE html>\n", 16) == 0);
    CHECK(strlen(a) > 7 && strcmp(a + strlen(a) - 8, "</html>\n") == 0);
    CHECK(valid_utf8((const unsigned char *)a));
    /* self-contained */
    CHECK(!test_contains_ci(a, "http"));
    CHECK(!test_contains_ci(a, "<script"));
    CHECK(!test_contains_ci(a, "<link"));
    CHECK(!test_contains_ci(a, "url("));
    CHECK(!test_contains_ci(a, "@import"));
    CHECK(!test_contains_ci(a, "<img"));
    /* structure: two bar charts, three heatmaps, one histogram */
    check_balanced(a, "<svg", "</svg>");
    CHECK_MSG(test_count_str(a, "<svg") == 6, "%lld svg", (long long)test_count_str(a, "<svg"));
    check_balanced(a, "<section", "</section>");
    CHECK(test_count_str(a, "<section") == 4);
    check_balanced(a, "<figure", "</figure>");
    check_balanced(a, "<table", "</table>");
    check_balanced(a, "<title>", "</title>");
    check_balanced(a, "<text", "</text>");
    check_balanced(a, "<tr>", "</tr>");
    CHECK_MSG(cells_with_counts(a) == 3 * K * K, "%lld cells", (long long)cells_with_counts(a));
    /* known counts: FP32 diagonal 100 each; quantized 80 on class 2; the difference +20 / -20 */
    const char *moved_title =
        "<title>true &quot;quoted&quot; &#39;single&#39;, predicted &lt;script&gt;alert(1)&lt;/script&gt;";
    CHECK(test_count_str(a, "<title>true a&amp;b, predicted a&amp;b: 100</title>") == 2);
    CHECK(strstr(a, "<title>true &quot;quoted&quot; &#39;single&#39;, predicted &quot;quoted&quot; &#39;single&#39;: "
                    "80</title>") != NULL);
    char want[512];
    snprintf(want, sizeof want, "%s: 20</title>", moved_title);
    CHECK(test_count_str(a, want) == 1);
    snprintf(want, sizeof want, "%s: +20</title>", moved_title);
    CHECK(test_count_str(a, want) == 1);
    CHECK(strstr(a, ": -20</title>") != NULL);
    /* escaping */
    CHECK(strstr(a, "&lt;script&gt;alert(1)&lt;/script&gt;") != NULL);
    CHECK(strstr(a, "a&b") == NULL && strstr(a, "a&amp;b") != NULL);
    CHECK(strstr(a, "'single'") == NULL);
    CHECK(strstr(a, "models/&lt;evil&gt;&amp;model.onnx") != NULL && strstr(a, "<evil>") == NULL);
    CHECK(strstr(a, "plan &#39;x&#39;.json") != NULL && strstr(a, "data&quot;.h5") != NULL);
    CHECK(strstr(a, "cpu &lt;fast&gt;") != NULL);
    CHECK(strstr(a, "/layer&lt;1&gt;/Relu&amp;&quot;out&quot;") != NULL);
    CHECK(strstr(a, "line\nbreak") == NULL && strstr(a, "line break") != NULL);
    CHECK(strstr(a, "\xE2\x80\xA6") != NULL); /* the long name cut in a chart label */
    /* the flagged class first: its row leads the class table and the recall chart */
    const char *table = strstr(a, "<table class=\"classes\">");
    const char *row = table ? strstr(table, "<td>") : NULL;
    CHECK(row && strncmp(row, "<td>2</td>", 10) == 0);
    CHECK(strstr(a, "<li><span class=\"bad\">&quot;quoted&quot; &#39;single&#39;</span>: recall 100.00% &#8594; "
                    "80.00% (-20.00 points, 100 images)</li>") != NULL);
    /* summary numbers */
    CHECK(strstr(a, "<td data-key=\"top1_fp32\">100.00%</td>") != NULL);
    CHECK(strstr(a, "<td data-key=\"top1_quant\">95.00%</td>") != NULL);
    CHECK(strstr(a, "<span data-key=\"changed_predictions\">20</span>") != NULL);
    /* the histogram: one line per calibrator and the plan, at the given amax */
    CHECK(test_count_str(a, "<line class=\"thr\"") == 5);
    CHECK(strstr(a, "data-method=\"entropy\" data-amax=\"1.25\"") != NULL);
    CHECK(strstr(a, "data-method=\"mse\" data-amax=\"1.375\"") != NULL);
    CHECK(strstr(a, "data-method=\"plan\" data-amax=\"1.5\"") != NULL);
    CHECK(test_count_str(a, "<title>|x| in [") == 100 - 15); /* the empty bars are not drawn */

    /* no extras, no options: indices for names, no histogram section */
    free(b);
    b = NULL;
    CHECK(ptq_validate_format_html(ctx, s, NULL, NULL, &b) == PTQ_OK);
    CHECK(b && strstr(b, "id=\"tensors\"") == NULL && cells_with_counts(b) == 3 * K * K);
    CHECK(b && strstr(b, "<title>true 2, predicted 0: 20</title>") != NULL);
    /* a header that is not an object is refused */
    vo.header_json = "[1]";
    free(b);
    b = NULL;
    CHECK(ptq_validate_format_html(ctx, s, &vo, NULL, &b) == PTQ_ERR_INVALID_ARG && b == NULL);
done:
    free(a);
    free(b);
    ptq_validate_stats_free(s);
    free(labels);
    free(f);
    free(q);
}

/* Many classes: bar charts of the first 100 rows, no heatmap. */
static void test_many_classes(ptq_ctx *ctx)
{
    enum { KM = 150 };
    int32_t labels[KM];
    float *f = calloc((size_t)KM * KM, sizeof *f);
    ptq_validate_stats *s = NULL;
    for (int i = 0; i < KM; i++) {
        labels[i] = i;
        f[i * KM + i] = 1.0f;
    }
    CHECK(ptq_validate_stats_init(ctx, KM, &s) == PTQ_OK);
    CHECK(ptq_validate_stats_add(ctx, s, KM, labels, f, f) == PTQ_OK);
    char *a = NULL;
    CHECK(ptq_validate_format_html(ctx, s, NULL, NULL, &a) == PTQ_OK);
    CHECK(a && cells_with_counts(a) == 0 && strstr(a, "150 classes: the FP32") != NULL);
    CHECK(a && test_count_str(a, "<svg") == 2 && test_count_str(a, "<g class=\"row\">") == 200);
    /* the keys validate.json has above 100 classes: the matrices' nonzero cells, not k x k arrays */
    CHECK_MSG(a && strstr(a, "<code>fp32.confusion_sparse</code>, <code>quant.confusion_sparse</code>, "
                             "<code>confusion_delta_sparse</code>"),
              "%s", a ? strstr(a, "150 classes") : "(null)");
    free(a);
    ptq_validate_stats_free(s);
    free(f);
}

/* Class names that open a right-to-left override (U+202E) or isolate (U+2067) and never close it: each is closed
 * (U+202C, U+2069) where the name ends, so that the text after it (a flagged class's recall figures, a bar's
 * tooltip) is not shown reversed; a name that closes its override gets nothing it lacks. */
static void test_bidi_names(ptq_ctx *ctx)
{
    static const char *const bidi[K] = {"\xE2\x81\xA7iso", "a", "\xE2\x80\xAE" "evil", "\xE2\x80\xAEok\xE2\x80\xAC"};
    int32_t *labels = malloc(N * sizeof *labels);
    float *f = malloc(N * K * sizeof *f), *q = malloc(N * K * sizeof *q);
    ptq_validate_stats *s = NULL;
    crafted(labels, f, q);
    CHECK(ptq_validate_stats_init(ctx, K, &s) == PTQ_OK);
    CHECK(ptq_validate_stats_add(ctx, s, N, labels, f, q) == PTQ_OK);
    ptq_validate_opts vo = PTQ_VALIDATE_OPTS_INIT;
    vo.class_names = bidi;
    char *a = NULL;
    CHECK(ptq_validate_format_html(ctx, s, &vo, NULL, &a) == PTQ_OK);
    const int64_t n_evil = a ? test_count_str(a, "\xE2\x80\xAE" "evil") : 0;
    const int64_t n_iso = a ? test_count_str(a, "\xE2\x81\xA7" "iso") : 0;
    CHECK_MSG(n_evil > 3 && test_count_str(a, "\xE2\x80\xAE" "evil\xE2\x80\xAC") == n_evil, "%lld names",
              (long long)n_evil);
    CHECK_MSG(n_iso > 3 && test_count_str(a, "\xE2\x81\xA7" "iso\xE2\x81\xA9") == n_iso, "%lld names",
              (long long)n_iso);
    CHECK(a && strstr(a, "\xE2\x80\xAE" "evil\xE2\x80\xAC</span>: recall 100.00%"));
    CHECK(a && strstr(a, "\xE2\x80\xAE" "ok\xE2\x80\xAC<") && !strstr(a, "ok\xE2\x80\xAC\xE2\x80\xAC"));
    free(a);
    ptq_validate_stats_free(s);
    free(labels);
    free(f);
    free(q);
}

int main(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    test_page(&ctx);
    test_many_classes(&ctx);
    test_bidi_names(&ctx);
    return test_done("test_html_report");
}
