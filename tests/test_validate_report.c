/* The validate comparison report against hand-built answers: identical
 * logits (SQNR inf, KL 0), SQNR/KL of two hand-computed rows, a class losing
 * 10 points of recall while top-1 loses 0.1 (flagged first in JSON, Markdown
 * and summary), a merge of two shards against the whole, NaN logits, many
 * classes, and bad input; then random logits of mixed scales (ties, NaN/Inf
 * and perfect images) in other batch sizes, orders and 2-4 merged shards:
 * byte-identical JSON, Markdown and summary; collapsed quantized outputs
 * (constant rows, SQNR <= 0 dB, one class for every image) flagged. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ptq/validate_report.h"
#include "reports/json_num.h"
#include "reports/md_header.h"
#include "testlib.h"

#define K 10
#define N 1000

static const char *const names[K] = {"plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};

/* label i % K; fp32 predicts the label except for 11 "gainers" that only
 * the quantized model gets right; the quantized model moves 10 images of
 * class 3 to class 5 and 2 of class 7 to class 1: top-1 989 -> 988. */
static void crafted(int32_t *labels, float *f, float *q)
{
    int gains[K] = {2, 2, 2, 0, 1, 1, 1, 0, 1, 1};
    int lost3 = 0, lost7 = 0;
    for (int i = 0; i < N; i++) {
        int y = i % K, pf = y, pq = y;
        if (gains[y] > 0) {
            gains[y]--;
            pf = (y + 1) % K;
        } else if (y == 3 && lost3 < 10) {
            lost3++;
            pq = 5;
        } else if (y == 7 && lost7 < 2) {
            lost7++;
            pq = 1;
        }
        labels[i] = y;
        for (int c = 0; c < K; c++) {
            float base = 0.01f * (float)((i * 7 + c * 3) % 11);
            f[i * K + c] = base + (c == pf ? 4.0f : 0.0f);
            q[i * K + c] = base + (c == pq ? 4.0f : 0.0f) + 0.001f * (float)((i + c) % 5);
        }
    }
}

static cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *x = get(o, key);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

static int64_t cell(const cJSON *matrix, int r, int c)
{
    const cJSON *x = cJSON_GetArrayItem(cJSON_GetArrayItem(matrix, r), c);
    return x ? (int64_t)x->valuedouble : INT64_MIN;
}

static void test_identical(ptq_ctx *ctx)
{
    enum { n = 300, k = 3 }; /* more rows than one internal chunk */
    static float f[n * k];
    static int32_t labels[n];
    test_rand_seed(7);
    test_fill_uniform(f, n * k, -5, 5);
    for (int i = 0; i < n; i++)
        labels[i] = i % k;
    ptq_validate_stats *s = NULL;
    CHECK(ptq_validate_stats_init(ctx, k, &s) == PTQ_OK);
    if (!s)
        return;
    CHECK(ptq_validate_stats_add(ctx, s, n, labels, f, f) == PTQ_OK);
    ptq_validate_totals t;
    ptq_validate_stats_totals(s, &t);
    CHECK(t.n == n && t.n_measured == n && t.changed == 0 && t.top1_fp32 == t.top1_q);
    CHECK(isinf(t.sqnr_db) && t.sqnr_db > 0);
    CHECK(t.kl_nats == 0.0);
    char *json = NULL, *sum = NULL;
    CHECK(ptq_validate_format_json(ctx, s, NULL, &json) == PTQ_OK);
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    CHECK(root != NULL);
    if (root) {
        cJSON *lg = get(root, "logits");
        CHECK(cJSON_IsNull(get(lg, "sqnr_db")) && cJSON_IsTrue(get(lg, "sqnr_infinite")));
        CHECK(num(lg, "kl_nats") == 0.0);
        CHECK(num(root, "changed_predictions") == 0 && num(root, "top1_delta_pts") == 0);
        CHECK(cJSON_GetArraySize(get(root, "flagged")) == 0);
        int all_zero = 1;
        for (int r = 0; r < k; r++)
            for (int c = 0; c < k; c++)
                all_zero &= cell(get(root, "confusion_delta"), r, c) == 0;
        CHECK(all_zero);
    }
    cJSON_Delete(root);
    CHECK(ptq_validate_format_summary(ctx, s, NULL, &sum) == PTQ_OK);
    CHECK_MSG(sum && strstr(sum, "SQNR inf dB") && strstr(sum, "KL 0 nats") && strstr(sum, "no class lost"),
              "summary:\n%s", sum ? sum : "(null)");
    free(json);
    free(sum);
    ptq_validate_stats_free(s);
}

static void test_sqnr_kl(ptq_ctx *ctx)
{
    /* image 0: f = [1, 0], q = [1, 2]: noise 4, KL = tanh(1/2) (the log ratio is 1);
     * image 1: equal rows [2, 5]: signal 29, KL 0. SQNR = 10 log10(30 / 4). */
    const float f[] = {1, 0, 2, 5}, q[] = {1, 2, 2, 5};
    const int32_t labels[] = {0, 1};
    ptq_validate_stats *s = NULL;
    CHECK(ptq_validate_stats_init(ctx, 2, &s) == PTQ_OK);
    if (!s)
        return;
    CHECK(ptq_validate_stats_add(ctx, s, 2, labels, f, q) == PTQ_OK);
    ptq_validate_totals t;
    ptq_validate_stats_totals(s, &t);
    CHECK_MSG(fabs(t.sqnr_db - 10 * log10(7.5)) < 1e-12, "sqnr %.17g", t.sqnr_db);
    CHECK_MSG(fabs(t.kl_nats - tanh(0.5) / 2) < 1e-12, "kl %.17g", t.kl_nats);
    CHECK(t.changed == 1 && t.top1_fp32 == 2 && t.top1_q == 1);
    ptq_validate_stats_free(s);
}

/* Collapsed quantized outputs: all-zero rows (constant, SQNR 0 dB, one
 * class), rows still informative in SQNR but all predicting class 0, and a
 * healthy half-scale copy; the flag survives a merge of shards. */
static void test_collapse(ptq_ctx *ctx)
{
    enum { n = 40 };
    static float f[n * K], zero[n * K], one_class[n * K], half[n * K];
    int32_t labels[n];
    for (int i = 0; i < n; i++) {
        labels[i] = i % K;
        for (int c = 0; c < K; c++) {
            float x = c == labels[i] ? 100.0f : 50.0f;
            f[i * K + c] = x;
            zero[i * K + c] = 0.0f;
            one_class[i * K + c] = x + (c == 0 ? 60.0f : 0.0f);
            half[i * K + c] = 0.5f * x;
        }
    }
    const float *qs[] = {zero, one_class, half};
    const unsigned want[] = {PTQ_COLLAPSE_CONSTANT | PTQ_COLLAPSE_SQNR | PTQ_COLLAPSE_ONE_CLASS,
                             PTQ_COLLAPSE_ONE_CLASS, 0};
    for (int w = 0; w < 3; w++) {
        ptq_validate_stats *s = NULL, *a = NULL, *b = NULL;
        CHECK(ptq_validate_stats_init(ctx, K, &s) == PTQ_OK && ptq_validate_stats_init(ctx, K, &a) == PTQ_OK &&
              ptq_validate_stats_init(ctx, K, &b) == PTQ_OK);
        if (!s || !a || !b)
            return;
        CHECK(ptq_validate_stats_add(ctx, s, n, labels, f, qs[w]) == PTQ_OK);
        CHECK(ptq_validate_stats_add(ctx, a, 7, labels, f, qs[w]) == PTQ_OK);
        CHECK(ptq_validate_stats_add(ctx, b, n - 7, labels + 7, f + 7 * K, qs[w] + 7 * K) == PTQ_OK);
        CHECK(ptq_validate_stats_merge(ctx, a, b) == PTQ_OK);
        ptq_validate_totals t, tm;
        ptq_validate_stats_totals(s, &t);
        ptq_validate_stats_totals(a, &tm);
        CHECK_MSG(t.collapsed == want[w] && tm.collapsed == want[w], "case %d: collapsed %u (merged %u), want %u",
                  w, t.collapsed, tm.collapsed, want[w]);
        CHECK(t.const_rows_fp32 == 0 && t.const_rows_q == (w == 0 ? n : 0));
        CHECK(t.top_class_q == (w == 2 ? n / K : n) && t.top_class_fp32 == n / K);
        char *json = NULL, *json_m = NULL, *md = NULL, *sum = NULL;
        CHECK(ptq_validate_format_json(ctx, s, NULL, &json) == PTQ_OK);
        CHECK(ptq_validate_format_json(ctx, a, NULL, &json_m) == PTQ_OK);
        CHECK(json && json_m && strcmp(json, json_m) == 0);
        CHECK(ptq_validate_format_markdown(ctx, s, NULL, &md) == PTQ_OK);
        CHECK(ptq_validate_format_summary(ctx, s, NULL, &sum) == PTQ_OK);
        cJSON *root = json ? cJSON_Parse(json) : NULL;
        CHECK(root && cJSON_IsBool(get(root, "collapsed")) &&
              cJSON_IsTrue(get(root, "collapsed")) == (want[w] != 0) &&
              cJSON_GetArraySize(get(root, "collapse")) == (w == 0 ? 3 : w == 1 ? 1 : 0));
        if (w == 1)
            CHECK(root && strcmp(cJSON_GetArrayItem(get(root, "collapse"), 0)->valuestring, "single_class") == 0);
        CHECK(md && (strstr(md, "**COLLAPSED**") != NULL) == (want[w] != 0));
        CHECK_MSG(sum && (strstr(sum, "COLLAPSED") != NULL) == (want[w] != 0), "%s", sum ? sum : "");
        cJSON_Delete(root);
        free(json);
        free(json_m);
        free(md);
        free(sum);
        ptq_validate_stats_free(s);
        ptq_validate_stats_free(a);
        ptq_validate_stats_free(b);
    }
    char buf[200];
    CHECK(strcmp(ptq_validate_collapse_text(PTQ_COLLAPSE_CONSTANT | PTQ_COLLAPSE_ONE_CLASS, buf, sizeof buf),
                 "every quantized logit row is constant, every image is predicted as one class") == 0);
}

/* FP32 logits NaN on some rows (a text model's all-padding rows under a -inf attention mask) and one class on all
 * the others; the quantized model (its QuantizeLinear maps NaN to a finite code, -128 as onnxruntime's does) predicts
 * that class on every row: no collapse, FP32 spread nothing. With one FP32 row of another class it is one. */
static void test_collapse_nan_fp32(ptq_ctx *ctx)
{
    enum { n = 6, k = 3 };
    float f[n * k], q[n * k];
    const int32_t labels[n] = {2, 2, 0, 2, 1, 2};
    for (int i = 0; i < n; i++)
        for (int c = 0; c < k; c++) {
            f[i * k + c] = i == 2 || i == 4 ? NAN : c == 2 ? 1.0f : 0.0f;
            q[i * k + c] = c == 2 ? 0.9f : 0.1f * (float)c;
        }
    for (int spread = 0; spread < 2; spread++) {
        if (spread)
            f[0 * k + 1] = 2.0f; /* FP32's row 0 now predicts class 1 */
        ptq_validate_stats *s = NULL;
        CHECK(ptq_validate_stats_init(ctx, k, &s) == PTQ_OK);
        if (!s)
            return;
        CHECK(ptq_validate_stats_add(ctx, s, n, labels, f, q) == PTQ_OK);
        ptq_validate_totals t;
        ptq_validate_stats_totals(s, &t);
        CHECK_MSG(t.collapsed == (spread ? PTQ_COLLAPSE_ONE_CLASS : 0u),
                  "FP32 %s, 2 FP32 rows NaN: collapsed %u (top class: FP32 %lld, quantized %lld of %lld)",
                  spread ? "spread" : "one class", t.collapsed, (long long)t.top_class_fp32,
                  (long long)t.top_class_q, (long long)t.n);
        ptq_validate_stats_free(s);
    }
}

static void test_crafted(ptq_ctx *ctx)
{
    static int32_t labels[N];
    static float f[N * K], q[N * K];
    crafted(labels, f, q);
    ptq_validate_stats *whole = NULL, *a = NULL, *b = NULL;
    CHECK(ptq_validate_stats_init(ctx, K, &whole) == PTQ_OK);
    CHECK(ptq_validate_stats_init(ctx, K, &a) == PTQ_OK);
    CHECK(ptq_validate_stats_init(ctx, K, &b) == PTQ_OK);
    if (!whole || !a || !b)
        goto done;
    CHECK(ptq_validate_stats_add(ctx, whole, N, labels, f, q) == PTQ_OK);
    const int half = 437;
    CHECK(ptq_validate_stats_add(ctx, a, half, labels, f, q) == PTQ_OK);
    CHECK(ptq_validate_stats_add(ctx, b, N - half, labels + half, f + half * K, q + half * K) == PTQ_OK);
    CHECK(ptq_validate_stats_merge(ctx, a, b) == PTQ_OK);

    ptq_validate_totals t, tm;
    ptq_validate_stats_totals(whole, &t);
    ptq_validate_stats_totals(a, &tm);
    CHECK(t.n == N && t.top1_fp32 == 989 && t.top1_q == 988 && t.changed == 23);
    CHECK(t.n_measured == N && t.nan_fp32 == 0 && t.nan_q == 0 && isfinite(t.sqnr_db) && t.kl_nats > 0);
    CHECK(tm.n == t.n && tm.top1_fp32 == t.top1_fp32 && tm.top1_q == t.top1_q && tm.top5_q == t.top5_q &&
          tm.changed == t.changed && tm.n_measured == t.n_measured);
    CHECK_MSG(tm.sqnr_db == t.sqnr_db && tm.kl_nats == t.kl_nats, "merged sqnr %.17g kl %.17g vs whole %.17g %.17g",
              tm.sqnr_db, tm.kl_nats, t.sqnr_db, t.kl_nats);

    ptq_validate_opts opts = PTQ_VALIDATE_OPTS_INIT;
    opts.class_names = names;
    opts.header_json = "{\"model\":\"resnet.onnx\",\"plan\":\"int8-minmax\"}";
    char *json = NULL, *json_m = NULL, *md = NULL, *sum = NULL;
    CHECK(ptq_validate_format_json(ctx, whole, &opts, &json) == PTQ_OK);
    CHECK(ptq_validate_format_json(ctx, a, &opts, &json_m) == PTQ_OK);
    cJSON *root = json ? cJSON_Parse(json) : NULL, *root_m = json_m ? cJSON_Parse(json_m) : NULL;
    CHECK(root && root_m);
    if (root && root_m) {
        CHECK(strcmp(get(root, "model")->valuestring, "resnet.onnx") == 0);
        CHECK(num(root, "samples") == N && num(root, "top1_fp32") == 0.989 && num(root, "top1_quant") == 0.988);
        CHECK_MSG(fabs(num(root, "top1_delta_pts") + 0.1) < 1e-9, "delta %g", num(root, "top1_delta_pts"));
        CHECK(num(root, "changed_predictions") == 23 && num(root, "changed_fraction") == 0.023);
        cJSON *flagged = get(root, "flagged");
        CHECK(cJSON_GetArraySize(flagged) == 2 && cJSON_GetArrayItem(flagged, 0)->valueint == 3 &&
              cJSON_GetArrayItem(flagged, 1)->valueint == 7);
        cJSON *classes = get(root, "classes");
        cJSON *c0 = cJSON_GetArrayItem(classes, 0), *c2 = cJSON_GetArrayItem(classes, 2);
        CHECK(cJSON_GetArraySize(classes) == K);
        CHECK(strcmp(get(c0, "name")->valuestring, "cat") == 0 && cJSON_IsTrue(get(c0, "flagged")));
        CHECK(num(c0, "recall_fp32") == 1.0 && num(c0, "recall_quant") == 0.9 && num(c0, "support") == 100);
        CHECK(fabs(num(c0, "recall_delta_pts") + 10) < 1e-9);
        CHECK(num(c2, "index") == 0 && cJSON_IsFalse(get(c2, "flagged"))); /* then the rest by index */
        cJSON *df = get(root, "confusion_delta"), *cf = get(get(root, "fp32"), "confusion");
        cJSON *cq = get(get(root, "quant"), "confusion");
        CHECK(cell(df, 3, 5) == 10 && cell(df, 3, 3) == -10 && cell(df, 7, 1) == 2 && cell(df, 7, 7) == -2);
        CHECK(cell(df, 0, 0) == 2 && cell(df, 0, 1) == -2);
        CHECK(cell(cf, 3, 3) == 100 && cell(cq, 3, 3) == 90 && cell(cq, 3, 5) == 10);
        /* merged shards: every count-derived field equal */
        static const char *const exact[] = {"samples", "top1_fp32", "top1_quant", "top5_fp32", "top5_quant",
                                            "changed_predictions", "flagged", "classes", "fp32", "quant",
                                            "confusion_delta"};
        for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
            CHECK_MSG(cJSON_Compare(get(root, exact[i]), get(root_m, exact[i]), 1), "merged field %s", exact[i]);
    }
    cJSON_Delete(root);
    cJSON_Delete(root_m);

    CHECK(ptq_validate_format_markdown(ctx, whole, &opts, &md) == PTQ_OK);
    if (md) {
        const char *table = strstr(md, "## Per-class");
        const char *cat = table ? strstr(table, "| **yes** | 3 | cat |") : NULL;
        const char *horse = table ? strstr(table, "| **yes** | 7 | horse |") : NULL;
        const char *plane = table ? strstr(table, "|  | 0 | plane |") : NULL;
        CHECK_MSG(cat && horse && plane && cat < horse && horse < plane, "per-class order wrong:\n%s", md);
        const char *fl = strstr(md, "## Flagged");
        CHECK(fl && fl < table && strstr(fl, "1. cat: recall 100.00% -> 90.00% (-10.00 points"));
        CHECK(strstr(md, "- **model**: resnet.onnx"));
        CHECK(strstr(md, "| top-1 | 98.90% | 98.80% | -0.10 |"));
        const char *m1 = strstr(md, "### Confusion matrix: FP32"), *m2 = strstr(md, "### Confusion matrix: quantized");
        const char *m3 = strstr(md, "### Confusion matrix: difference (quantized - FP32)");
        CHECK(m1 && m2 && m3 && m1 < m2 && m2 < m3);
        CHECK(m1 && strstr(m1, "| 3 cat | 0 | 0 | 0 | 100 | 0 | 0 | 0 | 0 | 0 | 0 |"));
        CHECK(m3 && strstr(m3, "| 3 cat | 0 | 0 | 0 | -10 | 0 | +10 | 0 | 0 | 0 | 0 |"));
    }
    CHECK(ptq_validate_format_summary(ctx, whole, &opts, &sum) == PTQ_OK);
    if (sum) {
        const char *cat = strstr(sum, "cat"), *horse = strstr(sum, "horse");
        CHECK_MSG(strstr(sum, "top-1   98.90% ->  98.80%  (-0.10 pts)") &&
                      strstr(sum, "changed predictions  2.30% (23)") && strstr(sum, "FLAGGED: 2 classes") && cat &&
                      horse && cat < horse,
                  "summary:\n%s", sum);
        fputs(sum, stderr);
    }
    free(json);
    free(json_m);
    free(md);
    free(sum);

    /* a higher threshold keeps only the 10-point drop */
    opts.recall_drop_flag = 5.0;
    CHECK(ptq_validate_format_json(ctx, whole, &opts, &json) == PTQ_OK);
    root = json ? cJSON_Parse(json) : NULL;
    CHECK(root && cJSON_GetArraySize(get(root, "flagged")) == 1);
    cJSON_Delete(root);
    free(json);
    opts.recall_drop_flag = -1;
    CHECK(ptq_validate_format_summary(ctx, whole, &opts, &sum) == PTQ_ERR_INVALID_ARG && sum == NULL);
    opts.recall_drop_flag = 1;
    opts.header_json = "[1]";
    CHECK(ptq_validate_format_json(ctx, whole, &opts, &json) == PTQ_ERR_INVALID_ARG && json == NULL);
    CHECK(ptq_validate_format_markdown(ctx, whole, &opts, &md) == PTQ_ERR_INVALID_ARG && md == NULL);

    /* a class name from the data with control characters: escaped in the terminal summary */
    const char *hostile[K];
    memcpy(hostile, names, sizeof hostile);
    hostile[3] = "c\x1b]0;x\x07\nat";
    opts.class_names = hostile;
    opts.header_json = NULL;
    CHECK(ptq_validate_format_summary(ctx, whole, &opts, &sum) == PTQ_OK);
    CHECK_MSG(sum && strstr(sum, "    c\\x1b]0;x\\x07\\x0aat") && !strpbrk(sum, "\x1b\x07"), "summary:\n%s",
              sum ? sum : "");
    free(sum);
    /* ... and in validate.md as text: Markdown, inline HTML and control characters escaped (ptq_md_name) */
    hostile[7] = "</td><img src=x>&amp; `x` *y* a_b [l](u) \\ ~z~";
    CHECK(ptq_validate_format_markdown(ctx, whole, &opts, &md) == PTQ_OK);
    CHECK_MSG(md && strstr(md, "| **yes** | 3 | c\\\\x1b\\]0;x\\\\x07 at |") &&
                  strstr(md, "1. c\\\\x1b\\]0;x\\\\x07 at: recall") &&
                  strstr(md, "| 7 &lt;/td&gt;&lt;img src=x&gt;&amp;amp; \\`x\\` \\*y\\* a\\_b "
                             "\\[l\\](u) \\\\ \\~z\\~ |") &&
                  !strpbrk(md, "\x1b\x07<"),
              "markdown:\n%s", md ? md : "");
    free(md);
    /* flagged classes' lines pad names by characters: 'recall' in one column for a name of 2-byte letters */
    hostile[3] = "ch\xc3\xa2t\xc3\xa9";
    hostile[7] = "horse";
    CHECK(ptq_validate_format_summary(ctx, whole, &opts, &sum) == PTQ_OK);
    const char *l1 = sum ? strstr(sum, "    ch\xc3\xa2t") : NULL, *l2 = sum ? strstr(sum, "    horse") : NULL;
    int col[2] = {-1, -2};
    for (int i = 0; i < 2 && l1 && l2; i++) {
        const char *r = strstr(i ? l2 : l1, "recall");
        col[i] = 0;
        for (const char *p = i ? l2 : l1; r && p < r; p++)
            col[i] += ((unsigned char)*p & 0xC0) != 0x80;
    }
    CHECK_MSG(col[0] == col[1], "'recall' at characters %d and %d:\n%s", col[0], col[1], sum ? sum : "");
    free(sum);
    opts.class_names = names;

    /* the shared Markdown cells: code spans fenced past the name's backticks, a leading list marker escaped */
    static const struct { const char *in, *text, *code; } cells[] = {
        {"a`b|c", "a\\`b\\|c", "``a`b\\|c``"},
        {"``x``", "\\`\\`x\\`\\`", "``` ``x`` ```"},
        {"-1\n#2\t", "\\-1 #2\\\\x09", "`-1 #2\\x09`"},
        {"caf\xc3\xa9", "caf\xc3\xa9", "`caf\xc3\xa9`"},
        /* a right-to-left override ends with the name, in a code span too (sens.md's tensor column) */
        {"r\xe2\x80\xaeL", "r\xe2\x80\xaeL\xe2\x80\xac", "`r\xe2\x80\xaeL\xe2\x80\xac`"},
    };
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) {
        ptq_buf bt = {0}, bc = {0};
        CHECK(ptq_md_name(ctx, &bt, cells[i].in) == PTQ_OK && ptq_md_code(ctx, &bc, cells[i].in) == PTQ_OK);
        CHECK_MSG(bt.data && strcmp(bt.data, cells[i].text) == 0, "md name %zu: %s", i, bt.data ? bt.data : "");
        CHECK_MSG(bc.data && strcmp(bc.data, cells[i].code) == 0, "md code %zu: %s", i, bc.data ? bc.data : "");
        ptq_buf_free(&bt);
        ptq_buf_free(&bc);
    }

    /* bad labels: the second batch's sample 5 is image 1005; nothing is counted */
    int32_t bad[8] = {0, 1, 2, 3, 4, K, 0, 1};
    CHECK(ptq_validate_stats_add(ctx, whole, 8, bad, f, q) == PTQ_ERR_DATA);
    CHECK_MSG(strstr(ctx->msg, "sample 1005") && strstr(ctx->msg, "label 10"), "message: %s", ctx->msg);
    bad[5] = -1;
    CHECK(ptq_validate_stats_add(ctx, whole, 8, bad, f, q) == PTQ_ERR_DATA);
    ptq_validate_stats_totals(whole, &t);
    CHECK(t.n == N && t.changed == 23);
    CHECK(ptq_validate_stats_add(ctx, whole, -1, labels, f, q) == PTQ_ERR_INVALID_ARG);
    CHECK(ptq_validate_stats_add(ctx, whole, 0, NULL, NULL, NULL) == PTQ_OK);
done:
    ptq_validate_stats_free(whole);
    ptq_validate_stats_free(a);
    ptq_validate_stats_free(b);
}

static void test_nan(ptq_ctx *ctx)
{
    const float f[] = {1, 2, 3, 3, 2, 1, 0, 5, 0};
    const float q[] = {1, NAN, 3, NAN, NAN, NAN, 0, 5, INFINITY};
    const int32_t labels[] = {2, 0, 1};
    ptq_validate_stats *s = NULL;
    CHECK(ptq_validate_stats_init(ctx, 3, &s) == PTQ_OK);
    if (!s)
        return;
    CHECK(ptq_validate_stats_add(ctx, s, 3, labels, f, q) == PTQ_OK);
    ptq_validate_totals t;
    ptq_validate_stats_totals(s, &t);
    CHECK(t.n == 3 && t.nan_q == 4 && t.nan_fp32 == 0 && t.n_measured == 0);
    CHECK(isnan(t.sqnr_db) && isnan(t.kl_nats));
    char *json = NULL, *md = NULL, *sum = NULL;
    CHECK(ptq_validate_format_json(ctx, s, NULL, &json) == PTQ_OK);
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    CHECK(root && num(get(root, "logits"), "nan_logits_quant") == 4 &&
          num(get(root, "logits"), "nonfinite_images") == 3 && cJSON_IsNull(get(get(root, "logits"), "kl_nats")));
    cJSON_Delete(root);
    CHECK(ptq_validate_format_markdown(ctx, s, NULL, &md) == PTQ_OK && md && strstr(md, "4 NaN in quantized"));
    CHECK(ptq_validate_format_summary(ctx, s, NULL, &sum) == PTQ_OK && sum && strstr(sum, "NON-FINITE") &&
          strstr(sum, "SQNR n/a"));
    free(json);
    free(md);
    free(sum);
    ptq_validate_stats_free(s);
}

/* The class of an image with non-finite logits on one side: the image counts in that class's support on both
 * sides and as a miss in recall, as in top-1, so the recall delta, the flag and the support agree. Class 1 has
 * three images: FP32's logits for one are NaN (the quantized model gets it right), the quantized model's for
 * another (FP32 gets it right), the third right on both sides. Class 2's second image has NaN logits under
 * the quantized model only: class 2 loses 50 points of recall and is the one class flagged. */
static void test_nan_support(ptq_ctx *ctx)
{
    const float f[] = {NAN, 0, 0, 0, 5, 0, 5, 0, 0, 0, 0, 5, 0, 5, 0, 0, 0, 5};
    const float q[] = {0, 5, 0, INFINITY, 0, 0, 5, 0, 0, 0, 0, 5, 0, 5, 0, NAN, NAN, NAN};
    const int32_t labels[] = {1, 1, 0, 2, 1, 2};
    ptq_validate_stats *s = NULL;
    CHECK(ptq_validate_stats_init(ctx, 3, &s) == PTQ_OK);
    if (!s)
        return;
    CHECK(ptq_validate_stats_add(ctx, s, 6, labels, f, q) == PTQ_OK);
    char *json = NULL, *md = NULL;
    CHECK(ptq_validate_format_json(ctx, s, NULL, &json) == PTQ_OK);
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    const cJSON *c = NULL, *classes = root ? get(root, "classes") : NULL;
    cJSON_ArrayForEach(c, classes)
        if (num(c, "index") == 1)
            break;
    CHECK_MSG(c && num(c, "support") == 3 && fabs(num(c, "recall_fp32") - 2.0 / 3) < 1e-12 &&
                  fabs(num(c, "recall_quant") - 2.0 / 3) < 1e-12 && num(c, "recall_delta_pts") == 0 &&
                  cJSON_IsFalse(get(c, "flagged")),
              "class 1: support %g, recall %g -> %g (%g pts)", c ? num(c, "support") : NAN,
              c ? num(c, "recall_fp32") : NAN, c ? num(c, "recall_quant") : NAN,
              c ? num(c, "recall_delta_pts") : NAN);
    const cJSON *flagged = root ? get(root, "flagged") : NULL, *c2 = cJSON_GetArrayItem(classes, 0);
    CHECK_MSG(cJSON_GetArraySize(flagged) == 1 && cJSON_GetArrayItem(flagged, 0)->valueint == 2 &&
                  num(c2, "index") == 2 && num(c2, "support") == 2 && num(c2, "recall_delta_pts") == -50,
              "flagged %d, first class %g: support %g, recall delta %g pts", cJSON_GetArraySize(flagged),
              num(c2, "index"), num(c2, "support"), num(c2, "recall_delta_pts"));
    CHECK(root && num(cJSON_GetArrayItem(get(get(root, "fp32"), "classes"), 1), "support") == 3 &&
          num(cJSON_GetArrayItem(get(get(root, "quant"), "classes"), 1), "support") == 3);
    cJSON_Delete(root);
    CHECK(ptq_validate_format_markdown(ctx, s, NULL, &md) == PTQ_OK && md &&
          strstr(md, "|  | 1 | 1 | 3 | 66.67 | 66.67 | +0.00 |"));
    free(json);
    free(md);
    ptq_validate_stats_free(s);
}

static void test_many_classes(ptq_ctx *ctx)
{
    enum { k = 150, n = 300 };
    static float f[n * k], q[n * k];
    static int32_t labels[n];
    for (int i = 0; i < n; i++) {
        labels[i] = i % k;
        f[i * k + i % k] = 1;
        q[i * k + (i < 3 ? 149 : i % k)] = 1; /* images 0, 1, 2 move to class 149 */
    }
    ptq_validate_stats *s = NULL;
    char *md = NULL;
    CHECK(ptq_validate_stats_init(ctx, k, &s) == PTQ_OK);
    if (!s)
        return;
    CHECK(ptq_validate_stats_add(ctx, s, n, labels, f, q) == PTQ_OK);
    CHECK(ptq_validate_format_markdown(ctx, s, NULL, &md) == PTQ_OK);
    /* six cells changed: the sentence counts the rows that follow, not MD_TOP_CELLS */
    CHECK_MSG(md && !strstr(md, "### Confusion matrix: FP32") && strstr(md, "The 6 cells that changed:") &&
                  !strstr(md, "The 20 largest changes") &&
                  strstr(md, "| 0 | 149 | 0 | 1 | +1 |") && strstr(md, "| 0 | 0 | 2 | 1 | -1 |"),
              "%s", md ? strstr(md, "### Confusion") : "(null)");
    const char *heading = md ? strstr(md, "## Confusion matrices\n") : NULL;
    CHECK(heading && !strstr(heading + sizeof "## Confusion", "Confusion matrices")); /* one heading */
    free(md);
    ptq_validate_stats_free(s);
    /* no cell changed: a sentence, no empty table before it */
    md = NULL;
    CHECK(ptq_validate_stats_init(ctx, k, &s) == PTQ_OK);
    if (!s)
        return;
    CHECK(ptq_validate_stats_add(ctx, s, n, labels, f, f) == PTQ_OK);
    CHECK(ptq_validate_format_markdown(ctx, s, NULL, &md) == PTQ_OK);
    const char *none = md ? strstr(md, "No cell changed.") : NULL;
    CHECK_MSG(none && !strstr(md, "| true | predicted |") && none[-1] == ' ', "%s",
              md ? strstr(md, "## Confusion") : "(null)");
    free(md);
    ptq_validate_stats_free(s);
}

/* ---- shards: any batch size, image order or split gives the same bytes ---- */

enum { SN = 997, SK = 7 };

/* Logits of scales 1e-3..1e3 (so a double sum depends on its order); every
 * 50 images: a perfect one (q = fp32), ties in both rows, NaN in fp32, NaN in
 * the quantized row, +Inf in the quantized row, -Inf in fp32. */
static void synth(int32_t *labels, float *f, float *q)
{
    test_rand_seed(23);
    for (int i = 0; i < SN; i++) {
        labels[i] = (int32_t)test_rand_uniform(0, SK - 0.5f);
        float scale = powf(10, test_rand_uniform(-3, 3));
        float *fr = f + i * SK, *qr = q + i * SK;
        for (int c = 0; c < SK; c++) {
            fr[c] = scale * test_rand_uniform(-4, 4);
            qr[c] = fr[c] + scale * test_rand_uniform(-0.3f, 0.3f);
        }
        switch (i % 50) {
        case 0: memcpy(qr, fr, SK * sizeof *qr); break;
        case 1:
            for (int c = 0; c < SK; c++) {
                fr[c] = c % 3 ? 1.5f : 2.0f;
                qr[c] = c % 2 ? 2.0f : 1.0f;
            }
            break;
        case 2: fr[i % SK] = NAN; break;
        case 3: qr[i % SK] = NAN; break;
        case 4: qr[i % SK] = INFINITY; break;
        case 5: fr[i % SK] = -INFINITY; break;
        default: break;
        }
    }
}

/* Adds images order[lo, hi) to s, `batch` rows per call. */
static void feed(ptq_ctx *ctx, ptq_validate_stats *s, const int *order, int lo, int hi, int batch,
                 const int32_t *labels, const float *f, const float *q)
{
    static int32_t bl[SN];
    static float bf[SN * SK], bq[SN * SK];
    for (int i0 = lo; i0 < hi; i0 += batch) {
        int m = hi - i0 < batch ? hi - i0 : batch;
        for (int i = 0; i < m; i++) {
            int src = order[i0 + i];
            bl[i] = labels[src];
            memcpy(bf + i * SK, f + src * SK, SK * sizeof *f);
            memcpy(bq + i * SK, q + src * SK, SK * sizeof *q);
        }
        CHECK(ptq_validate_stats_add(ctx, s, m, bl, bf, bq) == PTQ_OK);
    }
}

typedef struct rendering {
    char *text[3]; /* JSON, Markdown, summary */
} rendering;

static void render(ptq_ctx *ctx, const ptq_validate_stats *s, rendering *r)
{
    static const char *const seven[SK] = {"tee", "trouser", "pull|over", "dress", "coat", "sandal", "shirt"};
    ptq_validate_opts opts = PTQ_VALIDATE_OPTS_INIT;
    opts.class_names = seven;
    opts.header_json = "{\"model\":\"m.onnx\"}";
    CHECK(ptq_validate_format_json(ctx, s, &opts, &r->text[0]) == PTQ_OK);
    CHECK(ptq_validate_format_markdown(ctx, s, &opts, &r->text[1]) == PTQ_OK);
    CHECK(ptq_validate_format_summary(ctx, s, &opts, &r->text[2]) == PTQ_OK);
}

static void rendering_free(rendering *r)
{
    for (int i = 0; i < 3; i++)
        free(r->text[i]);
}

/* s's three renderings byte for byte against want's. */
static void check_same(ptq_ctx *ctx, const ptq_validate_stats *s, const rendering *want, const char *what)
{
    static const char *const kinds[] = {"JSON", "Markdown", "summary"};
    rendering got = {{NULL}};
    render(ctx, s, &got);
    for (int i = 0; i < 3; i++)
        CHECK_MSG(got.text[i] && want->text[i] && strcmp(got.text[i], want->text[i]) == 0,
                  "%s: %s differs:\n%s\nvs\n%s", what, kinds[i], got.text[i] ? got.text[i] : "(null)",
                  want->text[i] ? want->text[i] : "(null)");
    rendering_free(&got);
}

/* Splits order at cuts[0..n_cuts) into shards, each fed `batch` rows at a
 * time, and merges them into a fresh stats in shard order or reversed. */
static void check_shards(ptq_ctx *ctx, const int *order, const int *cuts, int n_cuts, int batch, int reversed,
                         const rendering *want, const char *what, const int32_t *labels, const float *f,
                         const float *q)
{
    ptq_validate_stats *shard[4] = {NULL}, *all = NULL;
    int bounds[5] = {0};
    const int n_shards = n_cuts + 1;
    for (int k = 0; k < n_cuts; k++)
        bounds[k + 1] = cuts[k];
    bounds[n_shards] = SN;
    CHECK(ptq_validate_stats_init(ctx, SK, &all) == PTQ_OK);
    for (int k = 0; k < n_shards; k++) {
        CHECK(ptq_validate_stats_init(ctx, SK, &shard[k]) == PTQ_OK);
        if (shard[k])
            feed(ctx, shard[k], order, bounds[k], bounds[k + 1], batch, labels, f, q);
    }
    for (int k = 0; k < n_shards && all; k++) {
        const ptq_validate_stats *src = shard[reversed ? n_shards - 1 - k : k];
        if (src)
            CHECK(ptq_validate_stats_merge(ctx, all, src) == PTQ_OK);
    }
    if (all)
        check_same(ctx, all, want, what);
    for (int k = 0; k < n_shards; k++)
        ptq_validate_stats_free(shard[k]);
    ptq_validate_stats_free(all);
}

static void test_shards(ptq_ctx *ctx)
{
    static int32_t labels[SN];
    static float f[SN * SK], q[SN * SK];
    static int order[SN], shuffled[SN];
    synth(labels, f, q);
    for (int i = 0; i < SN; i++)
        order[i] = shuffled[i] = i;
    for (int i = SN - 1; i > 0; i--) {
        int j = (int)test_rand_uniform(0, (float)i + 0.5f), t = shuffled[i];
        shuffled[i] = shuffled[j];
        shuffled[j] = t;
    }
    ptq_validate_stats *whole = NULL, *other = NULL;
    rendering want = {{NULL}};
    CHECK(ptq_validate_stats_init(ctx, SK, &whole) == PTQ_OK);
    if (!whole)
        return;
    feed(ctx, whole, order, 0, SN, 64, labels, f, q);
    render(ctx, whole, &want);
    ptq_validate_totals t;
    ptq_validate_stats_totals(whole, &t);
    CHECK(t.n == SN && t.n_measured == SN - 4 * 20 && t.nan_fp32 == 20 && t.nan_q == 20); /* the data is as meant */
    CHECK(isfinite(t.sqnr_db) && t.kl_nats > 0);

    static const struct {
        const char *what;
        int shuffled, batch, n_cuts, cuts[3], reversed;
    } cases[] = {
        {"one batch", 0, SN, 0, {0}, 0},
        {"batches of 1", 0, 1, 0, {0}, 0},
        {"shuffled images", 1, 37, 0, {0}, 0},
        {"2 shards", 0, 64, 1, {500}, 0},
        {"2 shards reversed", 0, 64, 1, {500}, 1},
        {"2 shuffled shards", 1, 300, 1, {613}, 1},
        {"3 shards", 0, 64, 2, {333, 666}, 0},
        {"3 uneven shards reversed", 1, 19, 2, {1, 900}, 1},
        {"4 shards, one empty", 0, 128, 3, {100, 100, 950}, 0},
        {"4 shuffled shards reversed", 1, 7, 3, {250, 251, 700}, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_shards(ctx, cases[i].shuffled ? shuffled : order, cases[i].cuts, cases[i].n_cuts, cases[i].batch,
                     cases[i].reversed, &want, cases[i].what, labels, f, q);

    /* a merge of another class count is refused and changes nothing */
    CHECK(ptq_validate_stats_init(ctx, SK + 1, &other) == PTQ_OK);
    CHECK(other && ptq_validate_stats_merge(ctx, whole, other) == PTQ_ERR_INVALID_ARG);
    CHECK_MSG(strstr(ctx->msg, "7 and 8 classes"), "message: %s", ctx->msg);
    check_same(ctx, whole, &want, "after a refused merge");
    rendering_free(&want);
    ptq_validate_stats_free(other);
    ptq_validate_stats_free(whole);
}

/* reports/json_num.c against cJSON's own printing of the same numbers: integers, saturated ones, ties of 15 and
 * 17 digits, subnormals, NaN and the infinities, and random bit patterns. */
static void test_json_num(void)
{
    const double fixed[] = {0.0, -0.0, 1.0, -7.0, 0.1, 1.0 / 3.0, 100.0 * (0.9 - 0.93), 2147483647.0, 2147483648.0,
                            -2147483648.0, -2147483649.5, 1e300, -1e-300, 4.9e-324, 0.5, 93.06, 1e15 + 0.5,
                            123456789012345678.0, NAN, INFINITY, -INFINITY};
    const int n_fixed = (int)(sizeof fixed / sizeof fixed[0]);
    int differ = 0, n = 0;
    test_rand_seed(5);
    for (int i = 0; i < n_fixed + 20000; i++, n++) {
        double x;
        if (i < n_fixed) {
            x = fixed[i];
        } else if (i % 2) { /* any bits */
            uint64_t u = test_rand_u64();
            memcpy(&x, &u, sizeof x);
        } else { /* a report's kind of number: a fraction of counts, in points */
            x = 100.0 * (double)(test_rand_u64() % 10001) / 10000.0 - (double)(test_rand_u64() % 7);
        }
        char mine[26];
        ptq_json_num_text(x, mine);
        cJSON *item = cJSON_CreateNumber(x);
        char *theirs = item ? cJSON_PrintUnformatted(item) : NULL;
        if (!theirs || strcmp(mine, theirs) != 0) {
            if (differ++ < 5)
                fprintf(stderr, "json number %.17g: '%s', cJSON '%s'\n", x, mine, theirs ? theirs : "(none)");
        }
        free(theirs);
        cJSON_Delete(item);
    }
    CHECK_MSG(differ == 0, "%d of %d numbers printed otherwise than cJSON prints them", differ, n);
}

/* A flagged class whose name opens a right-to-left override (U+202E) and never closes it: validate.md closes it
 * (U+202C) where the name ends, so that the recall figures after it on the line are not shown reversed. */
static void test_bidi_name(ptq_ctx *ctx)
{
    static const char *const bidi[K] = {"plane", "car", "bird", "\xE2\x80\xAE" "evil", "deer", "dog", "frog",
                                        "horse", "ship", "truck"};
    int32_t labels[N];
    static float f[N * K], q[N * K];
    crafted(labels, f, q);
    ptq_validate_stats *s = NULL;
    CHECK(ptq_validate_stats_init(ctx, K, &s) == PTQ_OK);
    if (!s)
        return;
    CHECK(ptq_validate_stats_add(ctx, s, N, labels, f, q) == PTQ_OK);
    ptq_validate_opts vo = PTQ_VALIDATE_OPTS_INIT;
    vo.class_names = bidi;
    vo.recall_drop_flag = 0;
    char *md = NULL;
    CHECK(ptq_validate_format_markdown(ctx, s, &vo, &md) == PTQ_OK);
    const int64_t n_evil = md ? test_count_str(md, "\xE2\x80\xAE" "evil") : 0;
    CHECK_MSG(n_evil > 0 && test_count_str(md, "\xE2\x80\xAE" "evil\xE2\x80\xAC") == n_evil, "%s",
              md ? md : "(null)");
    CHECK(md && strstr(md, "1. \xE2\x80\xAE" "evil\xE2\x80\xAC: recall 100.00% -> 90.00%"));
    free(md);
    ptq_validate_stats_free(s);
}

int main(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_validate_stats *s = (ptq_validate_stats *)&ctx;
    CHECK(ptq_validate_stats_init(&ctx, 1, &s) == PTQ_ERR_DATA && s == NULL);
    CHECK(strstr(ctx.msg, "at least 2 classes"));
    ptq_validate_stats_free(NULL);
    test_identical(&ctx);
    test_sqnr_kl(&ctx);
    test_crafted(&ctx);
    test_collapse(&ctx);
    test_collapse_nan_fp32(&ctx);
    test_nan(&ctx);
    test_nan_support(&ctx);
    test_many_classes(&ctx);
    test_shards(&ctx);
    test_json_num();
    test_bidi_name(&ctx);
    return test_done("test_validate_report");
}
