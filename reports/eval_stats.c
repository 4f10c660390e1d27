/* Accuracy, confusion and per-class metrics from logits, with text and
 * JSON renderings (cJSON, the k x k confusion streamed row by row, or as
 * its nonzero cells above PTQ_JSON_DENSE_MAX_CLASSES; the terminal shows
 * top confusions above PTQ_EVAL_TEXT_MAX_CLASSES). Mirrors sklearn's precision/recall/F1 with
 * zero_division=0. Covered by tests/test_report.c. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/logits.h"
#include "core/utf8.h"
#include "reports/json_num.h"
#include "ptq/buf.h"
#include "ptq/memory.h"
#include "ptq/report.h"

ptq_status ptq_eval_stats_init(ptq_ctx *ctx, int n_classes, ptq_eval_stats *s)
{
    memset(s, 0, sizeof *s);
    if (n_classes < 1 || n_classes > 100000)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "class count must be in [1, 100000], got %d", n_classes);
    char what[80];
    snprintf(what, sizeof what, "a %dx%d confusion matrix", n_classes, n_classes);
    PTQ_TRY_RET(ptq_memory_check(ctx, (uint64_t)n_classes * (uint64_t)n_classes * sizeof *s->confusion, what));
    s->confusion = calloc((size_t)n_classes * (size_t)n_classes, sizeof *s->confusion);
    s->no_prediction_by_label = calloc((size_t)n_classes, sizeof *s->no_prediction_by_label);
    if (!s->confusion || !s->no_prediction_by_label) {
        free(s->confusion);
        free(s->no_prediction_by_label);
        memset(s, 0, sizeof *s);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for a %dx%d confusion matrix", n_classes, n_classes);
    }
    s->n_classes = n_classes;
    return PTQ_OK;
}

void ptq_eval_stats_free(ptq_eval_stats *s)
{
    if (!s)
        return;
    free(s->confusion);
    free(s->no_prediction_by_label);
    memset(s, 0, sizeof *s);
}

ptq_status ptq_eval_stats_update(ptq_ctx *ctx, ptq_eval_stats *s, const float *logits, const int32_t *labels,
                                 int64_t n, int64_t first_index, int32_t *pred)
{
    const int k = s->n_classes;
    for (int64_t i = 0; i < n; i++) {
        int32_t y = labels[i];
        if (y < 0 || y >= k)
            return ptq_fail(ctx, PTQ_ERR_DATA, "sample %lld: label %d is out of range for a model with %d classes",
                            (long long)(first_index + i), y, k);
    }
    for (int64_t i = 0; i < n; i++) {
        const float *row = logits + i * k;
        int32_t y = labels[i];
        const int best = ptq_logits_argmax(row, k);
        s->n++;
        if (pred)
            pred[i] = best;
        if (best < 0) { /* a NaN or an infinity: no class is ranked */
            s->no_prediction++;
            s->no_prediction_by_label[y]++;
            continue;
        }
        int64_t above = 0; /* classes ranked strictly above the label */
        for (int c = 0; c < k; c++)
            if (row[c] > row[y] || (row[c] == row[y] && c < y))
                above++;
        s->top1 += best == y;
        s->top5 += above < 5;
        s->confusion[(int64_t)y * k + best]++;
    }
    return PTQ_OK;
}

ptq_status ptq_eval_stats_merge(ptq_ctx *ctx, ptq_eval_stats *dst, const ptq_eval_stats *src)
{
    if (dst->n_classes != src->n_classes)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "cannot merge evaluation statistics of %d and %d classes",
                        dst->n_classes, src->n_classes);
    const int64_t cells = (int64_t)dst->n_classes * dst->n_classes;
    dst->n += src->n;
    dst->top1 += src->top1;
    dst->top5 += src->top5;
    dst->no_prediction += src->no_prediction;
    for (int64_t i = 0; i < cells; i++)
        dst->confusion[i] += src->confusion[i];
    for (int c = 0; c < dst->n_classes; c++)
        dst->no_prediction_by_label[c] += src->no_prediction_by_label[c];
    return PTQ_OK;
}

void ptq_eval_class_metrics(const ptq_eval_stats *s, ptq_class_metrics *m)
{
    const int k = s->n_classes;
    for (int c = 0; c < k; c++)
        m[c].predicted = 0;
    for (int r = 0; r < k; r++) { /* row by row: a column sum read down a large matrix misses the cache */
        const int64_t *row = s->confusion + (int64_t)r * k;
        int64_t support = s->no_prediction_by_label[r];
        for (int c = 0; c < k; c++) {
            support += row[c];
            m[c].predicted += row[c];
        }
        m[r].support = support;
    }
    for (int c = 0; c < k; c++) {
        const int64_t tp = s->confusion[(int64_t)c * k + c], support = m[c].support, predicted = m[c].predicted;
        m[c].precision = predicted ? (double)tp / (double)predicted : 0.0;
        m[c].recall = support ? (double)tp / (double)support : 0.0;
        double d = m[c].precision + m[c].recall;
        m[c].f1 = d > 0 ? 2 * m[c].precision * m[c].recall / d : 0.0;
    }
}

static const char *class_label(const char *const *names, int c, char *buf, size_t n)
{
    if (names && names[c])
        return names[c];
    snprintf(buf, n, "%d", c);
    return buf;
}

/* For the terminal: a class name from the data with control characters escaped. */
/* Class c's name escaped for the terminal into buf[n], at most w characters
 * (w < 0: all), cut between UTF-8 characters. */
static const char *class_label_text(const char *const *names, int c, char *buf, size_t n, int w)
{
    char tmp[32];
    ptq_escape(class_label(names, c, tmp, sizeof tmp), buf, n);
    int chars = 0;
    for (size_t i = 0; buf[i]; i++) {
        if (((unsigned char)buf[i] & 0xC0) != 0x80 && w >= 0 && chars++ == w) {
            buf[i] = '\0';
            break;
        }
    }
    return buf;
}

/* Spaces that pad label to w characters (the tables' "%-*s" would pad by bytes). */
static int label_pad(const char *label, int w)
{
    const int n = ptq_utf8_width(label);
    return n < w ? w - n : 0;
}

/* Inserts x into the n-long list top[] of the largest keys (ties: lower
 * index first), at most cap long. key(i) must not change meanwhile. */
static void top_insert(int64_t *top, double *keys, int *n, int cap, int64_t x, double key)
{
    if (*n == cap && key <= keys[*n - 1])
        return;
    int i = *n < cap ? (*n)++ : cap - 1;
    for (; i > 0 && keys[i - 1] < key; i--) {
        top[i] = top[i - 1];
        keys[i] = keys[i - 1];
    }
    top[i] = x;
    keys[i] = key;
}

/* Above PTQ_EVAL_TEXT_MAX_CLASSES: the classes of lowest recall and the
 * largest off-diagonal cells, with class names. */
static ptq_status text_top(ptq_buf *b, const ptq_eval_stats *s, const char *const *names,
                           const ptq_class_metrics *m, int w)
{
    const int k = s->n_classes;
    int64_t top[PTQ_EVAL_TEXT_TOP];
    double keys[PTQ_EVAL_TEXT_TOP];
    char esc[256], esc2[256];
    int n_top = 0;
    for (int c = 0; c < k; c++) /* lowest recall first: the key is -recall */
        if (m[c].support > 0)
            top_insert(top, keys, &n_top, PTQ_EVAL_TEXT_TOP, c, -m[c].recall);
    ptq_buf_putf(b, "%d classes: the %d of lowest recall (every class is in the JSON report, --report or --json)\n",
                 k, n_top);
    ptq_buf_putf(b, "%-*s  %9s  %9s  %9s  %8s\n", w, "class", "precision", "recall", "f1", "support");
    for (int i = 0; i < n_top; i++) {
        const int c = (int)top[i];
        class_label_text(names, c, esc, sizeof esc, w);
        ptq_buf_putf(b, "%s%*s  %9.4f  %9.4f  %9.4f  %8lld\n", esc, label_pad(esc, w), "", m[c].precision, m[c].recall,
                     m[c].f1, (long long)m[c].support);
    }
    n_top = 0;
    for (int r = 0; r < k; r++)
        for (int c = 0; c < k; c++) {
            const int64_t x = s->confusion[(int64_t)r * k + c];
            if (r != c && x > 0)
                top_insert(top, keys, &n_top, PTQ_EVAL_TEXT_TOP, (int64_t)r * k + c, (double)x);
        }
    ptq_buf_putf(b, "\ntop confusions (the %d largest off-diagonal counts of the %d x %d matrix; it is in the JSON "
                    "report)\n", n_top, k, k);
    if (n_top == 0)
        ptq_buf_putf(b, "  none: every image was predicted as its class\n");
    else
        ptq_buf_putf(b, "  %8s  %-*s  %s\n", "images", w, "true class", "predicted as");
    for (int i = 0; i < n_top; i++) {
        const int r = (int)(top[i] / k), c = (int)(top[i] % k);
        class_label_text(names, r, esc, sizeof esc, w);
        ptq_buf_putf(b, "  %8lld  %s%*s  %s\n", (long long)s->confusion[top[i]], esc, label_pad(esc, w), "",
                     class_label_text(names, c, esc2, sizeof esc2, -1));
    }
    return b->failed ? PTQ_ERR_NOMEM : PTQ_OK;
}

ptq_status ptq_eval_format_text(ptq_ctx *ctx, const ptq_eval_stats *s, const char *const *names, char **out)
{
    *out = NULL;
    const int k = s->n_classes;
    ptq_class_metrics *m = calloc((size_t)k, sizeof *m);
    if (!m)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory formatting the report");
    ptq_eval_class_metrics(s, m);
    ptq_buf b = {0};
    ptq_status st = PTQ_OK;
    double n = s->n ? (double)s->n : 1.0;
    ptq_buf_putf(&b, "samples  %lld\ntop-1    %.2f%%  (%lld correct)\ntop-5    %.2f%%\n", (long long)s->n,
              100.0 * (double)s->top1 / n, (long long)s->top1, 100.0 * (double)s->top5 / n);
    if (s->no_prediction > 0)
        ptq_buf_putf(&b, "no prediction  %lld  (logits with a NaN or an infinity: counted wrong, in no cell below)\n",
                     (long long)s->no_prediction);
    ptq_buf_putf(&b, "\n");
    int w = 5;
    char tmp[32], esc[256];
    for (int c = 0; c < k; c++) {
        int len = ptq_utf8_width(class_label_text(names, c, esc, sizeof esc, -1));
        if (len > w)
            w = len;
    }
    if (w > 24)
        w = 24;
    if (k > PTQ_EVAL_TEXT_MAX_CLASSES) { /* k rows and k x k cells are no terminal reading */
        st = text_top(&b, s, names, m, w);
        goto finish;
    }
    ptq_buf_putf(&b, "%-*s  %9s  %9s  %9s  %8s\n", w, "class", "precision", "recall", "f1", "support");
    for (int c = 0; c < k; c++) {
        class_label_text(names, c, esc, sizeof esc, w);
        ptq_buf_putf(&b, "%s%*s  %9.4f  %9.4f  %9.4f  %8lld\n", esc, label_pad(esc, w), "", m[c].precision,
                     m[c].recall, m[c].f1, (long long)m[c].support);
    }
    ptq_buf_putf(&b, "\nconfusion matrix (rows: true class, columns: predicted)\n%*s", w, "");
    int cw = 6;
    for (int c = 0; c < k; c++) {
        int64_t v = s->confusion[(int64_t)c * k + c];
        int digits = snprintf(tmp, sizeof tmp, "%lld", (long long)v);
        if (digits + 1 > cw)
            cw = digits + 1;
        for (int j = 0; j < k; j++) {
            digits = snprintf(tmp, sizeof tmp, "%lld", (long long)s->confusion[(int64_t)c * k + j]);
            if (digits + 1 > cw)
                cw = digits + 1;
        }
    }
    for (int c = 0; c < k; c++)
        ptq_buf_putf(&b, " %*d", cw - 1, c);
    ptq_buf_putf(&b, "\n");
    for (int c = 0; c < k; c++) {
        class_label_text(names, c, esc, sizeof esc, w);
        ptq_buf_putf(&b, "%s%*s", esc, label_pad(esc, w), "");
        for (int j = 0; j < k; j++)
            ptq_buf_putf(&b, " %*lld", cw - 1, (long long)s->confusion[(int64_t)c * k + j]);
        ptq_buf_putf(&b, "\n");
    }
finish:
    free(m);
    if (st != PTQ_OK || !(*out = ptq_buf_take(&b))) {
        ptq_buf_free(&b);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory formatting the report");
    }
    return PTQ_OK;
}

ptq_status ptq_eval_write_json(ptq_ctx *ctx, const ptq_eval_stats *s, const char *const *names,
                               const char *header_json, FILE *f, const char *path)
{
    ptq_status st = PTQ_OK;
    const int k = s->n_classes;
    char *text = NULL;
    ptq_class_metrics *m = calloc((size_t)k, sizeof *m);
    cJSON *root = header_json ? cJSON_Parse(header_json) : cJSON_CreateObject();
    if (!m || !cJSON_IsObject(root)) {
        st = ptq_fail(ctx, header_json && !cJSON_IsObject(root) ? PTQ_ERR_INVALID_ARG : PTQ_ERR_NOMEM,
                      "cannot build the JSON report%s", header_json && !cJSON_IsObject(root) ? ": bad header JSON" : "");
        goto done;
    }
    ptq_eval_class_metrics(s, m);
    double n = s->n ? (double)s->n : 1.0;
    cJSON_AddNumberToObject(root, "samples", (double)s->n);
    cJSON_AddNumberToObject(root, "top1", (double)s->top1 / n);
    cJSON_AddNumberToObject(root, "top5", (double)s->top5 / n);
    cJSON_AddNumberToObject(root, "no_prediction", (double)s->no_prediction);
    cJSON *classes = cJSON_AddArrayToObject(root, "classes");
    char tmp[32];
    for (int c = 0; c < k && classes; c++) {
        cJSON *o = cJSON_CreateObject();
        ptq_json_add_num(o, "index", c);
        cJSON_AddStringToObject(o, "name", class_label(names, c, tmp, sizeof tmp));
        ptq_json_add_num(o, "precision", m[c].precision);
        ptq_json_add_num(o, "recall", m[c].recall);
        ptq_json_add_num(o, "f1", m[c].f1);
        ptq_json_add_num(o, "support", (double)m[c].support);
        cJSON_AddItemToArray(classes, o);
    }
    text = classes ? cJSON_Print(root) : NULL;
    if (!text) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory printing the JSON report");
        goto done;
    }
    /* the object less its closing brace, then the confusion rows one by one */
    size_t len = strlen(text);
    while (len > 0 && text[len - 1] != '}')
        len--;
    int ok = len > 0 && fwrite(text, 1, len - 1, f) == len - 1 &&
             ptq_json_write_confusion(f, "confusion", "confusion_sparse", k, s->confusion, NULL);
    ok = ok && fputs("\n}", f) >= 0;
    if (!ok)
        st = ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", path, strerror(errno));
done:
    free(text);
    cJSON_Delete(root);
    free(m);
    return st;
}

int ptq_json_write_confusion(FILE *f, const char *key, const char *key_sparse, int k, const int64_t *m,
                             const int64_t *sub)
{
    const int sparse = k > PTQ_JSON_DENSE_MAX_CLASSES;
    int ok = fprintf(f, sparse ? ",\n\t\"%s\":\t{\"rows\": %d, \"cols\": %d, \"cells\": [" : ",\n\t\"%s\":\t[",
                     sparse ? key_sparse : key, k, k) > 0;
    int64_t written = 0;
    for (int r = 0; ok && r < k; r++) {
        if (!sparse)
            ok = fputs(r ? ",\n\t\t[" : "[", f) >= 0;
        for (int c = 0; ok && c < k; c++) {
            const int64_t cell = (int64_t)r * k + c, x = m[cell] - (sub ? sub[cell] : 0);
            if (!sparse)
                ok = fprintf(f, c ? ", %lld" : "%lld", (long long)x) > 0;
            else if (x != 0) /* a few cells per line */
                ok = fprintf(f, "%s[%d, %d, %lld]", written == 0 ? "" : written % 8 ? ", " : ",\n\t\t", r, c,
                             (long long)x) > 0 && ++written;
        }
        if (!sparse)
            ok = ok && fputc(']', f) != EOF;
    }
    return ok && fputs(sparse ? "]}" : "]", f) >= 0;
}

ptq_status ptq_eval_format_json(ptq_ctx *ctx, const ptq_eval_stats *s, const char *const *names,
                                const char *header_json, char **out)
{
    char *buf = NULL;
    size_t n = 0;
    *out = NULL;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory printing the JSON report");
    ptq_status st = ptq_eval_write_json(ctx, s, names, header_json, f, "the JSON report");
    if (fclose(f) != 0 && st == PTQ_OK)
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory printing the JSON report");
    if (st != PTQ_OK) {
        free(buf);
        return st == PTQ_ERR_IO ? ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory printing the JSON report") : st;
    }
    *out = buf;
    return PTQ_OK;
}
