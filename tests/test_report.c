/* Metrics from logits: top-1/top-5 with ties, confusion counts, per-class
 * precision/recall/F1 against hand-computed values, labels out of range,
 * and the JSON rendering parsed back. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ptq/report.h"
#include "testlib.h"

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
    free(json);
    free(text);
    ptq_eval_stats_free(&s);
    ptq_eval_stats_free(&s); /* freeing twice is harmless */
    return test_done("test_report");
}
