/* Metrics from logits: top-1/top-5 with ties, confusion counts, per-class
 * precision/recall/F1 against hand-computed values (an image with NaN logits in its class's support),
 * labels out of range,
 * and the JSON rendering parsed back; random logits (ties, NaN) split into
 * shards fed in other orders and merged: byte-identical JSON and text. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ptq/report.h"
#include "testlib.h"

enum { SN = 1001, SK = 9 };

/* Characters (code points) in the line of UTF-8 text that starts at s. */
static int line_width(const char *s)
{
    int n = 0;
    for (; *s && *s != '\n'; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* 1 when every line of the table whose header is the line skip lines below the one starting with head, up to a
 * blank line, is as wide (in characters) as the header: its columns line up on a terminal. */
static int table_aligned(const char *text, const char *head, int skip)
{
    const char *at = strstr(text, head);
    for (; at && skip > 0; skip--)
        at = strchr(at, '\n') ? strchr(at, '\n') + 1 : NULL;
    if (!at)
        return 0;
    const int w = line_width(at);
    int rows = 0;
    for (const char *l = strchr(at, '\n'); l && l[1] && l[1] != '\n'; l = strchr(l + 1, '\n'), rows++)
        if (line_width(l + 1) != w)
            return 0;
    return rows > 0;
}

/* Renders s as JSON and text, and checks both against want[2] byte for byte
 * (or fills want when it is empty). */
static void check_render(ptq_ctx *ctx, const ptq_eval_stats *s, char **want, const char *what)
{
    char *got[2] = {NULL, NULL};
    CHECK(ptq_eval_format_json(ctx, s, NULL, "{\"command\":\"eval\"}", &got[0]) == PTQ_OK);
    CHECK(ptq_eval_format_text(ctx, s, NULL, &got[1]) == PTQ_OK);
    for (int i = 0; i < 2; i++) {
        if (!want[i]) {
            want[i] = got[i];
            continue;
        }
        CHECK_MSG(got[i] && strcmp(got[i], want[i]) == 0, "%s: %s differs", what, i ? "text" : "JSON");
        free(got[i]);
    }
}

static void test_shards(ptq_ctx *ctx)
{
    static float logits[SN * SK];
    static int32_t labels[SN];
    static int order[SN];
    test_rand_seed(5);
    test_fill_uniform(logits, SN * SK, -3, 3);
    for (int i = 0; i < SN; i++) {
        labels[i] = (int32_t)test_rand_uniform(0, SK - 0.5f);
        order[i] = i;
        if (i % 10 == 1) /* ties with the label's logit */
            for (int c = 0; c < SK; c += 2)
                logits[i * SK + c] = 1.0f;
        if (i % 10 == 2)
            logits[i * SK + i % SK] = NAN;
    }
    for (int i = SN - 1; i > 0; i--) {
        int j = (int)test_rand_uniform(0, (float)i + 0.5f), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    char *want[2] = {NULL, NULL};
    ptq_eval_stats whole, merged, shard[3];
    CHECK(ptq_eval_stats_init(ctx, SK, &whole) == PTQ_OK);
    CHECK(ptq_eval_stats_update(ctx, &whole, logits, labels, SN, 0, NULL) == PTQ_OK);
    check_render(ctx, &whole, want, "whole");

    /* three uneven shards of the shuffled images, one image per update, merged in reverse */
    const int bounds[4] = {0, 1, 640, SN};
    CHECK(ptq_eval_stats_init(ctx, SK, &merged) == PTQ_OK);
    for (int k = 0; k < 3; k++) {
        CHECK(ptq_eval_stats_init(ctx, SK, &shard[k]) == PTQ_OK);
        for (int i = bounds[k]; i < bounds[k + 1]; i++)
            CHECK(ptq_eval_stats_update(ctx, &shard[k], logits + order[i] * SK, labels + order[i], 1, order[i],
                                        NULL) == PTQ_OK);
    }
    for (int k = 2; k >= 0; k--)
        CHECK(ptq_eval_stats_merge(ctx, &merged, &shard[k]) == PTQ_OK);
    CHECK(merged.n == SN && merged.top1 == whole.top1 && merged.top5 == whole.top5);
    check_render(ctx, &merged, want, "3 shards merged");

    /* two contiguous shards, merged in order */
    ptq_eval_stats_free(&merged);
    CHECK(ptq_eval_stats_init(ctx, SK, &merged) == PTQ_OK);
    for (int k = 0; k < 2; k++) {
        ptq_eval_stats_free(&shard[k]);
        CHECK(ptq_eval_stats_init(ctx, SK, &shard[k]) == PTQ_OK);
    }
    CHECK(ptq_eval_stats_update(ctx, &shard[0], logits, labels, 500, 0, NULL) == PTQ_OK);
    CHECK(ptq_eval_stats_update(ctx, &shard[1], logits + 500 * SK, labels + 500, SN - 500, 500, NULL) == PTQ_OK);
    CHECK(ptq_eval_stats_merge(ctx, &merged, &shard[0]) == PTQ_OK);
    CHECK(ptq_eval_stats_merge(ctx, &merged, &shard[1]) == PTQ_OK);
    check_render(ctx, &merged, want, "2 shards merged");

    /* another class count is refused and changes nothing */
    ptq_eval_stats_free(&shard[2]);
    CHECK(ptq_eval_stats_init(ctx, SK - 1, &shard[2]) == PTQ_OK);
    CHECK(ptq_eval_stats_merge(ctx, &merged, &shard[2]) == PTQ_ERR_INVALID_ARG);
    CHECK_MSG(strstr(ctx->msg, "9 and 8 classes"), "message: %s", ctx->msg);
    check_render(ctx, &merged, want, "after a refused merge");

    for (int k = 0; k < 3; k++)
        ptq_eval_stats_free(&shard[k]);
    ptq_eval_stats_free(&merged);
    ptq_eval_stats_free(&whole);
    free(want[0]);
    free(want[1]);
}

int main(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_eval_stats s;
    CHECK(ptq_eval_stats_init(&ctx, 6, &s) == PTQ_OK);
    /* 4 samples, 6 classes */
    const float logits[] = {
        5, 1, 0, 0, 0, 0, /* label 0: correct */
        0, 1, 3, 0, 0, 0, /* label 1: predicted 2, rank 2 */
        2, 2, 2, 2, 2, 2, /* label 5: all tied: argmax 0; label ranks 6th -> not top-5 */
        1, 1, 9, 0, 0, 0, /* label 2: correct */
    };
    const int32_t labels[] = {0, 1, 5, 2};
    int32_t pred[4];
    CHECK(ptq_eval_stats_update(&ctx, &s, logits, labels, 4, 0, pred) == PTQ_OK);
    CHECK(pred[0] == 0 && pred[1] == 2 && pred[2] == 0 && pred[3] == 2);
    CHECK(s.n == 4 && s.top1 == 2 && s.top5 == 3);
    CHECK(s.confusion[0 * 6 + 0] == 1 && s.confusion[1 * 6 + 2] == 1 && s.confusion[5 * 6 + 0] == 1 &&
          s.confusion[2 * 6 + 2] == 1);
    ptq_class_metrics m[6];
    ptq_eval_class_metrics(&s, m);
    CHECK(fabs(m[0].precision - 0.5) < 1e-12 && fabs(m[0].recall - 1.0) < 1e-12);
    CHECK(fabs(m[0].f1 - 2.0 / 3.0) < 1e-12);
    CHECK(fabs(m[2].precision - 0.5) < 1e-12 && m[2].recall == 1.0);
    CHECK(m[1].precision == 0 && m[1].recall == 0 && m[1].f1 == 0 && m[1].support == 1);
    CHECK(m[3].support == 0 && m[3].f1 == 0);

    /* two images of class 1, one right, one whose logits hold a NaN: both in the support, the NaN one a miss in
     * recall and in no cell; merged shards likewise */
    const float two_rows[] = {0, 7, 0, 0, 0, 0, 0, 7, NAN, 0, 0, 0};
    const int32_t ones[] = {1, 1};
    ptq_eval_stats nan_s, nan_half;
    CHECK(ptq_eval_stats_init(&ctx, 6, &nan_s) == PTQ_OK && ptq_eval_stats_init(&ctx, 6, &nan_half) == PTQ_OK);
    CHECK(ptq_eval_stats_update(&ctx, &nan_s, two_rows, ones, 1, 0, NULL) == PTQ_OK);
    CHECK(ptq_eval_stats_update(&ctx, &nan_half, two_rows + 6, ones + 1, 1, 1, NULL) == PTQ_OK);
    CHECK(ptq_eval_stats_merge(&ctx, &nan_s, &nan_half) == PTQ_OK);
    ptq_eval_class_metrics(&nan_s, m);
    CHECK(nan_s.n == 2 && nan_s.no_prediction == 1 && nan_s.top1 == 1 && nan_s.confusion[1 * 6 + 1] == 1);
    CHECK_MSG(m[1].support == 2 && m[1].recall == 0.5 && m[1].precision == 1 && m[0].support == 0,
              "class 1: support %lld, recall %g, precision %g", (long long)m[1].support, m[1].recall,
              m[1].precision);
    ptq_eval_stats_free(&nan_half);
    ptq_eval_stats_free(&nan_s);

    const int32_t bad[] = {1, 6};
    CHECK(ptq_eval_stats_update(&ctx, &s, logits, bad, 2, 100, NULL) == PTQ_ERR_DATA);
    CHECK_MSG(strstr(ctx.msg, "sample 101") && strstr(ctx.msg, "label 6"), "message: %s", ctx.msg);
    CHECK(s.n == 4); /* a rejected batch counts nothing */

    const char *names[6] = {"tee", "trouser", "pullover", "dress", "coat", "sandal"};
    char *json = NULL, *text = NULL;
    CHECK(ptq_eval_format_json(&ctx, &s, names, "{\"command\":\"eval\"}", &json) == PTQ_OK);
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    CHECK(root != NULL);
    if (root) {
        CHECK(strcmp(cJSON_GetObjectItem(root, "command")->valuestring, "eval") == 0);
        CHECK(cJSON_GetObjectItem(root, "top1")->valuedouble == 0.5);
        cJSON *classes = cJSON_GetObjectItem(root, "classes");
        CHECK(cJSON_GetArraySize(classes) == 6);
        CHECK(strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(classes, 4), "name")->valuestring, "coat") == 0);
        cJSON *conf = cJSON_GetObjectItem(root, "confusion");
        CHECK(cJSON_GetArrayItem(cJSON_GetArrayItem(conf, 1), 2)->valueint == 1);
    }
    cJSON_Delete(root);
    CHECK(ptq_eval_format_text(&ctx, &s, names, &text) == PTQ_OK);
    CHECK(text && strstr(text, "top-1    50.00%") && strstr(text, "pullover"));
    /* a long name of 2-byte characters is cut to the table's width between characters, never inside one */
    const char *wide[6] = {"tee", "trouser", "pullover", "dress", "coat",
                           "x\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                           "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"};
    char *text2 = NULL;
    CHECK(ptq_eval_format_text(&ctx, &s, wide, &text2) == PTQ_OK);
    CHECK_MSG(text2 && ptq_utf8_valid(text2), "the table cut a 2-byte character");
    free(text2);
    /* names of 2-byte characters are padded by characters: the columns line up (a byte's padding left each such
     * row a column short per character), and a long one is cut to 24 characters, not 24 bytes */
    const char *accented[6] = {"tee", "trous\xc3\xa9r", "pullover", "dr\xc3\xa9\xc3\xa9ss", "coat",
                               "\xc3\xa9t\xc3\xa9"};
    for (int k = 0; k < 2; k++) {
        CHECK(ptq_eval_format_text(&ctx, &s, k ? wide : accented, &text2) == PTQ_OK);
        CHECK_MSG(text2 && table_aligned(text2, "class ", 0) && table_aligned(text2, "confusion matrix (rows", 1),
                  "%s names: columns out of line:\n%s", k ? "long" : "accented", text2 ? text2 : "");
        CHECK(!k || (text2 && strstr(text2, "x\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                                             "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9  ")));
        free(text2);
        text2 = NULL;
    }
    free(json);
    free(text);
    ptq_eval_stats_free(&s);
    ptq_eval_stats_free(&s); /* freeing twice is harmless */
    test_shards(&ctx);
    return test_done("test_report");
}
