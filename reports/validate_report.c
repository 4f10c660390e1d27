/* FP32 vs quantized comparison for `ptq validate`: two ptq_eval_stats fed
 * the same labels, a changed-prediction count and exact SQNR/KL sums (each
 * image's terms in double from its own logits, summed in core/xsum so any
 * split into merged shards gives the same report), rendered as JSON (cJSON,
 * reusing ptq_eval_format_json per side), Markdown and a terminal summary.
 * Definitions in include/ptq/validate_report.h; covered by
 * tests/test_validate_report.c. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/c_locale.h"
#include "core/logits.h"
#include "core/utf8.h"
#include "core/xsum.h"
#include "reports/json_num.h"
#include "ptq/dist.h"
#include "ptq/export.h" /* ptq_buf */
#include "ptq/memory.h"
#include "ptq/report.h"
#include "ptq/validate_report.h"
#include "reports/md_header.h"
#include "reports/validate_view.h"

/* Rows per call into ptq_eval_stats_update: bounds the prediction scratch. */
#define CHUNK_ROWS 256
/* Above this many classes the Markdown shows the largest difference cells
 * instead of three k x k tables (the JSON always has the full matrices). */
#define MD_MATRIX_MAX_CLASSES 100
#define MD_TOP_CELLS 20
#define SUMMARY_FLAGGED_MAX 5

struct ptq_validate_stats {
    ptq_eval_stats fp32, q;
    int64_t changed;
    int64_t n_measured;           /* images in the SQNR/KL sums */
    int64_t nan_fp32, nan_q;      /* NaN logits */
    int64_t const_fp32, const_q;  /* images whose logit row is constant */
    ptq_xsum signal_sq, noise_sq; /* sum fp32^2, sum (q - fp32)^2 over measured images */
    ptq_xsum kl_nats_sum;         /* sum over measured images of KL(softmax(fp32) || softmax(q)) */
    int32_t pred_fp32[CHUNK_ROWS], pred_q[CHUNK_ROWS];
};

ptq_status ptq_validate_stats_init(ptq_ctx *ctx, int n_classes, ptq_validate_stats **out)
{
    ptq_status st = PTQ_OK;
    *out = NULL;
    if (n_classes < 2)
        return ptq_fail(ctx, PTQ_ERR_DATA, "validation needs at least 2 classes, got %d", n_classes);
    ptq_validate_stats *s = calloc(1, sizeof *s);
    if (!s)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for validation statistics");
    PTQ_TRY(st, ptq_eval_stats_init(ctx, n_classes, &s->fp32), done);
    PTQ_TRY(st, ptq_eval_stats_init(ctx, n_classes, &s->q), done);
    ptq_xsum_init(&s->signal_sq);
    ptq_xsum_init(&s->noise_sq);
    ptq_xsum_init(&s->kl_nats_sum);
    *out = s;
    s = NULL;
done:
    ptq_validate_stats_free(s);
    return st;
}

void ptq_validate_stats_free(ptq_validate_stats *s)
{
    if (!s)
        return;
    ptq_eval_stats_free(&s->fp32);
    ptq_eval_stats_free(&s->q);
    free(s);
}

/* Adds one image's rows (f, q: [k]) to the SQNR/KL sums when both are
 * finite: its terms come from its rows alone, the sums are exact. */
static void compare_row(ptq_validate_stats *s, const float *f, const float *q, int k)
{
    int const_f = 1, const_q = 1;
    for (int c = 0; c < k; c++) {
        s->nan_fp32 += isnan(f[c]) != 0;
        s->nan_q += isnan(q[c]) != 0;
        const_f &= f[c] == f[0];
        const_q &= q[c] == q[0];
    }
    s->const_fp32 += const_f;
    s->const_q += const_q;
    double sig, noise, kl;
    if (!ptq_logits_terms(f, q, k, &sig, &noise, &kl))
        return;
    ptq_xsum_add(&s->signal_sq, sig);
    ptq_xsum_add(&s->noise_sq, noise);
    ptq_xsum_add(&s->kl_nats_sum, kl);
    s->n_measured++;
}

ptq_status ptq_validate_stats_add(ptq_ctx *ctx, ptq_validate_stats *s, int64_t n, const int32_t *labels,
                                  const float *logits_fp32, const float *logits_q)
{
    const int k = s->fp32.n_classes;
    if (n < 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "batch size must be >= 0, got %lld", (long long)n);
    if (n > 0 && (!labels || !logits_fp32 || !logits_q))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "a batch of %lld images needs labels and both logit arrays",
                        (long long)n);
    /* Checked before anything is counted so that a rejected batch leaves s as it was. */
    for (int64_t i = 0; i < n; i++)
        if (labels[i] < 0 || labels[i] >= k)
            return ptq_fail(ctx, PTQ_ERR_DATA, "sample %lld: label %d is out of range [0, %d)",
                            (long long)(s->fp32.n + i), labels[i], k);
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK_ROWS) {
        int64_t m = n - i0 < CHUNK_ROWS ? n - i0 : CHUNK_ROWS;
        const float *f = logits_fp32 + i0 * k, *q = logits_q + i0 * k;
        PTQ_TRY_RET(ptq_eval_stats_update(ctx, &s->fp32, f, labels + i0, m, s->fp32.n, s->pred_fp32));
        PTQ_TRY_RET(ptq_eval_stats_update(ctx, &s->q, q, labels + i0, m, s->q.n, s->pred_q));
        for (int64_t i = 0; i < m; i++) {
            s->changed += s->pred_fp32[i] != s->pred_q[i];
            compare_row(s, f + i * k, q + i * k, k);
        }
    }
    return PTQ_OK;
}

ptq_status ptq_validate_stats_merge(ptq_ctx *ctx, ptq_validate_stats *dst, const ptq_validate_stats *src)
{
    if (dst->fp32.n_classes != src->fp32.n_classes)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "cannot merge validation statistics of %d and %d classes",
                        dst->fp32.n_classes, src->fp32.n_classes);
    PTQ_TRY_RET(ptq_eval_stats_merge(ctx, &dst->fp32, &src->fp32));
    PTQ_TRY_RET(ptq_eval_stats_merge(ctx, &dst->q, &src->q));
    dst->changed += src->changed;
    dst->n_measured += src->n_measured;
    dst->nan_fp32 += src->nan_fp32;
    dst->nan_q += src->nan_q;
    dst->const_fp32 += src->const_fp32;
    dst->const_q += src->const_q;
    ptq_xsum_merge(&dst->signal_sq, &src->signal_sq);
    ptq_xsum_merge(&dst->noise_sq, &src->noise_sq);
    ptq_xsum_merge(&dst->kl_nats_sum, &src->kl_nats_sum);
    return PTQ_OK;
}

/* One count to or from a reduction buffer. */
static void word(int64_t *field, int64_t *slot, int to_buf)
{
    if (to_buf)
        *slot = *field;
    else
        *field = *slot;
}

/* The counts of an eval stats to or from buf: n, top1, top5, no_prediction, then the k x k confusion and the
 * k no-prediction counts by label; returns the words used. */
enum { EVAL_HEAD_WORDS = 4 }; /* the counts before the confusion matrix */

static int64_t eval_words(ptq_eval_stats *e, int64_t *buf, int to_buf)
{
    const int64_t cells = (int64_t)e->n_classes * e->n_classes;
    int64_t *const head[EVAL_HEAD_WORDS] = {&e->n, &e->top1, &e->top5, &e->no_prediction};
    for (int i = 0; i < EVAL_HEAD_WORDS; i++)
        word(head[i], &buf[i], to_buf);
    for (int64_t i = 0; i < cells; i++)
        word(&e->confusion[i], &buf[EVAL_HEAD_WORDS + i], to_buf);
    for (int c = 0; c < e->n_classes; c++)
        word(&e->no_prediction_by_label[c], &buf[EVAL_HEAD_WORDS + cells + c], to_buf);
    return EVAL_HEAD_WORDS + cells + e->n_classes;
}

/* Every field of s to or from buf; returns the words used. */
static int64_t validate_words(ptq_validate_stats *s, int64_t *buf, int to_buf)
{
    int64_t at = eval_words(&s->fp32, buf, to_buf);
    at += eval_words(&s->q, buf + at, to_buf);
    word(&s->changed, &buf[at++], to_buf);
    word(&s->n_measured, &buf[at++], to_buf);
    word(&s->nan_fp32, &buf[at++], to_buf);
    word(&s->nan_q, &buf[at++], to_buf);
    word(&s->const_fp32, &buf[at++], to_buf);
    word(&s->const_q, &buf[at++], to_buf);
    ptq_xsum *sums[] = {&s->signal_sq, &s->noise_sq, &s->kl_nats_sum};
    for (int i = 0; i < 3; i++, at += PTQ_XSUM_WORDS) {
        if (to_buf)
            ptq_xsum_pack(sums[i], buf + at);
        else
            ptq_xsum_unpack(sums[i], buf + at);
    }
    return at;
}

ptq_status ptq_validate_stats_allreduce(ptq_ctx *ctx, ptq_validate_stats *s)
{
    if (ptq_dist_size() == 1)
        return PTQ_OK;
    const int64_t k = s->fp32.n_classes, n = 2 * (EVAL_HEAD_WORDS + k * k + k) + 6 + 3 * PTQ_XSUM_WORDS;
    int64_t *buf = malloc((size_t)n * sizeof *buf);
    ptq_status st = ptq_dist_agree(ctx, buf ? PTQ_OK
                                            : ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory reducing a %lld-class "
                                                       "validation", (long long)k));
    if (st == PTQ_OK) {
        validate_words(s, buf, 1);
        st = ptq_dist_allreduce_i64(ctx, buf, n, PTQ_DIST_SUM);
        if (st == PTQ_OK)
            validate_words(s, buf, 0);
    }
    free(buf);
    return st;
}

/* The most images predicted as one class: the largest column sum. */
static int64_t top_class(const ptq_eval_stats *e)
{
    enum { BLOCK = 64 }; /* columns summed together, so that the matrix is read row by row, not down its columns */
    const int k = e->n_classes;
    int64_t best = 0;
    for (int c0 = 0; c0 < k; c0 += BLOCK) {
        const int w = k - c0 < BLOCK ? k - c0 : BLOCK;
        int64_t col[BLOCK] = {0};
        for (int r = 0; r < k; r++)
            for (int c = 0; c < w; c++)
                col[c] += e->confusion[(int64_t)r * k + c0 + c];
        for (int c = 0; c < w; c++)
            best = col[c] > best ? col[c] : best;
    }
    return best;
}

void ptq_validate_stats_totals(const ptq_validate_stats *s, ptq_validate_totals *t)
{
    memset(t, 0, sizeof *t);
    t->n = s->fp32.n;
    t->top1_fp32 = s->fp32.top1;
    t->top1_q = s->q.top1;
    t->top5_fp32 = s->fp32.top5;
    t->top5_q = s->q.top5;
    t->changed = s->changed;
    t->n_measured = s->n_measured;
    t->nan_fp32 = s->nan_fp32;
    t->nan_q = s->nan_q;
    if (s->n_measured == 0) {
        t->sqnr_db = NAN;
        t->kl_nats = NAN;
    } else {
        double signal = ptq_xsum_value(&s->signal_sq), noise = ptq_xsum_value(&s->noise_sq);
        t->sqnr_db = noise == 0 ? INFINITY : 10.0 * log10(signal / noise);
        t->kl_nats = ptq_xsum_value(&s->kl_nats_sum) / (double)s->n_measured;
    }
    t->const_rows_fp32 = s->const_fp32;
    t->const_rows_q = s->const_q;
    t->top_class_fp32 = top_class(&s->fp32);
    t->top_class_q = top_class(&s->q);
    if (t->n > 0 && t->const_rows_q == t->n && t->const_rows_fp32 < t->n)
        t->collapsed |= PTQ_COLLAPSE_CONSTANT;
    if (t->n_measured > 0 && t->sqnr_db <= 0)
        t->collapsed |= PTQ_COLLAPSE_SQNR;
    /* FP32 spreads the images it predicts: a row it gives no class (NaN logits) is not one of another class */
    if (t->n >= 2 && t->top_class_q == t->n && t->top_class_fp32 < t->n - s->fp32.no_prediction)
        t->collapsed |= PTQ_COLLAPSE_ONE_CLASS;
}

static const char *const collapse_keys[] = {"constant_logits", "sqnr_at_most_0_db", "single_class"};

const char *ptq_validate_collapse_text(unsigned collapsed, char *buf, size_t n)
{
    static const char *const words[] = {"every quantized logit row is constant", "logits SQNR <= 0 dB",
                                        "every image is predicted as one class"};
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < 3 && n > 0; i++)
        if (collapsed & (1u << i)) {
            int w = snprintf(buf + used, n - used, "%s%s", used ? ", " : "", words[i]);
            if (w < 0 || (size_t)w >= n - used)
                break;
            used += (size_t)w;
        }
    return buf;
}

void validate_view_free(validate_view *v)
{
    free(v->mf);
    free(v->mq);
    free(v->drop_pts);
    free(v->order);
}

typedef struct class_drop {
    double pts;
    int c;
} class_drop;

static int by_drop(const void *a, const void *b)
{
    const class_drop *x = a, *y = b;
    if (x->pts != y->pts)
        return x->pts > y->pts ? -1 : 1;
    return (x->c > y->c) - (x->c < y->c);
}

ptq_status validate_view_make(ptq_ctx *ctx, const ptq_validate_stats *s, const ptq_validate_opts *opts,
                              validate_view *v)
{
    const ptq_validate_opts defaults = PTQ_VALIDATE_OPTS_INIT;
    if (!opts)
        opts = &defaults;
    memset(v, 0, sizeof *v);
    if (!(opts->recall_drop_flag >= 0))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "recall drop flag must be >= 0 points, got %g",
                        opts->recall_drop_flag);
    const int k = s->fp32.n_classes;
    v->k = k;
    v->s = s;
    v->flag_pts = opts->recall_drop_flag;
    v->names = opts->class_names;
    v->header_json = opts->header_json;
    ptq_validate_stats_totals(s, &v->t);
    v->mf = calloc((size_t)k, sizeof *v->mf);
    v->mq = calloc((size_t)k, sizeof *v->mq);
    v->drop_pts = calloc((size_t)k, sizeof *v->drop_pts);
    v->order = calloc((size_t)k, sizeof *v->order);
    if (!v->mf || !v->mq || !v->drop_pts || !v->order) {
        validate_view_free(v);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for a %d-class validation report", k);
    }
    ptq_eval_class_metrics(&s->fp32, v->mf);
    ptq_eval_class_metrics(&s->q, v->mq);
    for (int c = 0; c < k; c++) {
        /* From the integer change in true positives: the support is the same on both sides. */
        int64_t tp_lost = s->fp32.confusion[(int64_t)c * k + c] - s->q.confusion[(int64_t)c * k + c];
        int64_t support = v->mf[c].support;
        v->drop_pts[c] = support ? 100.0 * (double)tp_lost / (double)support : 0.0;
    }
    class_drop *flagged = calloc((size_t)k, sizeof *flagged);
    if (!flagged) {
        validate_view_free(v);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for a %d-class validation report", k);
    }
    int n = 0;
    for (int c = 0; c < k; c++)
        if (v->drop_pts[c] > v->flag_pts)
            flagged[n++] = (class_drop){v->drop_pts[c], c};
    qsort(flagged, (size_t)n, sizeof *flagged, by_drop);
    for (int i = 0; i < n; i++)
        v->order[i] = flagged[i].c;
    free(flagged);
    v->n_flagged = n;
    for (int c = 0; c < k; c++)
        if (!(v->drop_pts[c] > v->flag_pts))
            v->order[n++] = c;
    return PTQ_OK;
}

const char *validate_view_class_name(const validate_view *v, int c, char *buf, size_t n_bytes)
{
    if (v->names && v->names[c])
        return v->names[c];
    snprintf(buf, n_bytes, "%d", c);
    return buf;
}

static double frac(int64_t num, int64_t den)
{
    return den ? (double)num / (double)den : 0.0;
}

/* ---- JSON ---- */

static void add_metric_triplet(cJSON *o, const char *name, double f, double q)
{
    char key[32];
    snprintf(key, sizeof key, "%s_fp32", name);
    ptq_json_add_num(o, key, f);
    snprintf(key, sizeof key, "%s_quant", name);
    ptq_json_add_num(o, key, q);
    snprintf(key, sizeof key, "%s_delta_pts", name);
    ptq_json_add_num(o, key, 100.0 * (q - f));
}

static void add_number_or_null(cJSON *o, const char *key, double x)
{
    if (isfinite(x))
        cJSON_AddNumberToObject(o, key, x);
    else
        cJSON_AddNullToObject(o, key);
}

ptq_status ptq_validate_write_json(ptq_ctx *ctx, const ptq_validate_stats *s, const ptq_validate_opts *opts,
                                   FILE *f, const char *path)
{
    ptq_status st = PTQ_OK;
    validate_view v;
    char *text = NULL;
    PTQ_TRY_RET(validate_view_make(ctx, s, opts, &v));
    const int k = v.k;
    const ptq_validate_totals *t = &v.t;
    cJSON *root = v.header_json ? cJSON_Parse(v.header_json) : cJSON_CreateObject();
    if (!root || !cJSON_IsObject(root)) {
        st = ptq_fail(ctx, v.header_json ? PTQ_ERR_INVALID_ARG : PTQ_ERR_NOMEM,
                      "cannot build the validation JSON%s", v.header_json ? ": header is not a JSON object" : "");
        goto done;
    }
    cJSON_AddNumberToObject(root, "samples", (double)t->n);
    cJSON_AddNumberToObject(root, "recall_drop_flag_pts", v.flag_pts);
    add_metric_triplet(root, "top1", frac(t->top1_fp32, t->n), frac(t->top1_q, t->n));
    add_metric_triplet(root, "top5", frac(t->top5_fp32, t->n), frac(t->top5_q, t->n));
    cJSON_AddNumberToObject(root, "changed_predictions", (double)t->changed);
    cJSON_AddNumberToObject(root, "changed_fraction", frac(t->changed, t->n));
    cJSON *lg = cJSON_AddObjectToObject(root, "logits");
    if (lg) {
        add_number_or_null(lg, "sqnr_db", t->sqnr_db);
        cJSON_AddBoolToObject(lg, "sqnr_infinite", isinf(t->sqnr_db) && t->sqnr_db > 0);
        add_number_or_null(lg, "kl_nats", t->kl_nats);
        cJSON_AddNumberToObject(lg, "measured_images", (double)t->n_measured);
        cJSON_AddNumberToObject(lg, "nonfinite_images", (double)(t->n - t->n_measured));
        cJSON_AddNumberToObject(lg, "nan_logits_fp32", (double)t->nan_fp32);
        cJSON_AddNumberToObject(lg, "nan_logits_quant", (double)t->nan_q);
        cJSON_AddNumberToObject(lg, "constant_rows_fp32", (double)t->const_rows_fp32);
        cJSON_AddNumberToObject(lg, "constant_rows_quant", (double)t->const_rows_q);
    }
    cJSON_AddBoolToObject(root, "collapsed", t->collapsed != 0);
    cJSON *why = cJSON_AddArrayToObject(root, "collapse");
    for (int i = 0; i < 3 && why; i++)
        if (t->collapsed & (1u << i))
            cJSON_AddItemToArray(why, cJSON_CreateString(collapse_keys[i]));
    cJSON *flagged = cJSON_AddArrayToObject(root, "flagged");
    for (int i = 0; i < v.n_flagged && flagged; i++)
        cJSON_AddItemToArray(flagged, cJSON_CreateNumber(v.order[i]));
    cJSON *classes = cJSON_AddArrayToObject(root, "classes");
    char tmp[32];
    for (int i = 0; i < k && classes; i++) {
        int c = v.order[i];
        cJSON *o = cJSON_CreateObject();
        ptq_json_add_num(o, "index", c);
        cJSON_AddStringToObject(o, "name", validate_view_class_name(&v, c, tmp, sizeof tmp));
        cJSON_AddBoolToObject(o, "flagged", i < v.n_flagged);
        ptq_json_add_num(o, "support", (double)v.mf[c].support);
        add_metric_triplet(o, "precision", v.mf[c].precision, v.mq[c].precision);
        add_metric_triplet(o, "recall", v.mf[c].recall, v.mq[c].recall);
        add_metric_triplet(o, "f1", v.mf[c].f1, v.mq[c].f1);
        cJSON_AddItemToArray(classes, o);
    }
    text = classes ? cJSON_Print(root) : NULL;
    if (!text) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory printing the validation JSON");
        goto done;
    }
    /* the object less its closing brace, then the k x k matrices streamed */
    size_t len = strlen(text);
    while (len > 0 && text[len - 1] != '}')
        len--;
    int ok = len > 0 && fwrite(text, 1, len - 1, f) == len - 1 && fputs(",\n\t\"fp32\":\t", f) >= 0;
    if (!ok)
        goto write_failed;
    PTQ_TRY(st, ptq_eval_write_json(ctx, &s->fp32, v.names, NULL, f, path), done);
    if (fputs(",\n\t\"quant\":\t", f) < 0)
        goto write_failed;
    PTQ_TRY(st, ptq_eval_write_json(ctx, &s->q, v.names, NULL, f, path), done);
    ok = ptq_json_write_confusion(f, "confusion_delta", "confusion_delta_sparse", k, s->q.confusion,
                                  s->fp32.confusion);
    if (ok && fputs("\n}", f) >= 0)
        goto done;
write_failed:
    st = ptq_fail(ctx, PTQ_ERR_IO, "cannot write %s: %s", path, strerror(errno));
done:
    free(text);
    cJSON_Delete(root);
    validate_view_free(&v);
    return st;
}

ptq_status ptq_validate_format_json(ptq_ctx *ctx, const ptq_validate_stats *s, const ptq_validate_opts *opts,
                                    char **out)
{
    char *buf = NULL;
    size_t n = 0;
    *out = NULL;
    /* three k x k matrices of a few bytes per cell, held as text; above
     * PTQ_JSON_DENSE_MAX_CLASSES only their nonzero cells: at most 4 per image */
    const uint64_t k = (uint64_t)s->fp32.n_classes, n_img = (uint64_t)s->fp32.n;
    const uint64_t cells = k > PTQ_JSON_DENSE_MAX_CLASSES ? 4 * n_img * 40 : 3 * k * k * 8;
    PTQ_TRY_RET(ptq_memory_check(ctx, cells + k * 1024, "the validation JSON's confusion matrices"));
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory printing the validation JSON");
    ptq_status st = ptq_validate_write_json(ctx, s, opts, f, "the validation JSON");
    if (fclose(f) != 0 && st == PTQ_OK)
        st = PTQ_ERR_IO;
    if (st != PTQ_OK) {
        free(buf);
        return st == PTQ_ERR_IO ? ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory printing the validation JSON") : st;
    }
    *out = buf;
    return PTQ_OK;
}

/* ---- Markdown and summary ---- */

/* Appends to b while st is PTQ_OK; the first failure sticks in st. */
#define PUT(...)                                      \
    do {                                              \
        if (st == PTQ_OK)                             \
            st = ptq_buf_appendf(ctx, b, __VA_ARGS__); \
    } while (0)

/* A class name as a table cell (ptq_md_name: Markdown, HTML and control characters escaped). */
static ptq_status md_name(ptq_ctx *ctx, ptq_buf *b, const validate_view *v, int c)
{
    char tmp[32];
    return ptq_md_name(ctx, b, validate_view_class_name(v, c, tmp, sizeof tmp));
}

static ptq_status md_class_row(ptq_ctx *ctx, ptq_buf *b, const validate_view *v, int c, int flagged)
{
    ptq_status st = PTQ_OK;
    const ptq_class_metrics *f = &v->mf[c], *q = &v->mq[c];
    PUT("| %s | %d | ", flagged ? "**yes**" : "", c);
    if (st == PTQ_OK)
        st = md_name(ctx, b, v, c);
    PUT(" | %lld | %.2f | %.2f | %+.2f | %.2f | %.2f | %+.2f | %.2f | %.2f | %+.2f |\n", (long long)f->support,
        100 * f->recall, 100 * q->recall, 100 * (q->recall - f->recall), 100 * f->precision, 100 * q->precision,
        100 * (q->precision - f->precision), 100 * f->f1, 100 * q->f1, 100 * (q->f1 - f->f1));
    return st;
}

int64_t validate_view_cell(const validate_view *v, int which, int64_t cell)
{
    if (which == 0)
        return v->s->fp32.confusion[cell];
    if (which == 1)
        return v->s->q.confusion[cell];
    return v->s->q.confusion[cell] - v->s->fp32.confusion[cell];
}

static ptq_status md_matrix(ptq_ctx *ctx, ptq_buf *b, const validate_view *v, int which)
{
    static const char *const titles[] = {"FP32", "quantized", "difference (quantized - FP32)"};
    ptq_status st = PTQ_OK;
    const int k = v->k;
    PUT("### Confusion matrix: %s\n\nRows: true class; columns: predicted class.\n\n| true \\ pred |", titles[which]);
    for (int c = 0; c < k; c++)
        PUT(" %d |", c);
    PUT("\n|---|");
    for (int c = 0; c < k; c++)
        PUT("---:|");
    PUT("\n");
    for (int r = 0; r < k && st == PTQ_OK; r++) {
        PUT("| %d ", r);
        if (v->names && st == PTQ_OK)
            st = md_name(ctx, b, v, r);
        PUT(" |");
        for (int c = 0; c < k; c++) {
            int64_t x = validate_view_cell(v, which, (int64_t)r * k + c);
            if (which == 2 && x != 0)
                PUT(" %+lld |", (long long)x);
            else
                PUT(" %lld |", (long long)x);
        }
        PUT("\n");
    }
    PUT("\n");
    return st;
}

/* For many classes: the difference cells of largest magnitude, row-major on ties. */
static ptq_status md_top_cells(ptq_ctx *ctx, ptq_buf *b, const validate_view *v)
{
    ptq_status st = PTQ_OK;
    const int64_t cells = (int64_t)v->k * v->k;
    int64_t top[MD_TOP_CELLS];
    int n_top = 0;
    for (int64_t cell = 0; cell < cells; cell++) {
        int64_t x = llabs((long long)validate_view_cell(v, 2, cell));
        if (x == 0 || (n_top == MD_TOP_CELLS && x <= llabs((long long)validate_view_cell(v, 2, top[n_top - 1]))))
            continue;
        int i = n_top < MD_TOP_CELLS ? n_top++ : MD_TOP_CELLS - 1;
        for (; i > 0 && llabs((long long)validate_view_cell(v, 2, top[i - 1])) < x; i--)
            top[i] = top[i - 1];
        top[i] = cell;
    }
    PUT("%d classes: the full FP32, quantized and difference matrices are in the JSON report "
        "(`fp32.confusion_sparse`, `quant.confusion_sparse`, `confusion_delta_sparse`).", v->k);
    if (n_top == 0)
        PUT(" No cell changed.\n"); /* and no table: GFM would read the sentence as its row */
    else if (n_top < MD_TOP_CELLS) /* every changed cell: "the 20 largest" would promise rows that are not there */
        PUT(" The %d cell%s that changed:\n\n", n_top, n_top == 1 ? "" : "s");
    else
        PUT(" The %d largest changes:\n\n", MD_TOP_CELLS);
    if (n_top > 0)
        PUT("| true | predicted | FP32 | quantized | difference |\n|---|---|---:|---:|---:|\n");
    for (int i = 0; i < n_top && st == PTQ_OK; i++) {
        int r = (int)(top[i] / v->k), c = (int)(top[i] % v->k);
        PUT("| ");
        if (st == PTQ_OK)
            st = md_name(ctx, b, v, r);
        PUT(" | ");
        if (st == PTQ_OK)
            st = md_name(ctx, b, v, c);
        PUT(" | %lld | %lld | %+lld |\n", (long long)validate_view_cell(v, 0, top[i]),
            (long long)validate_view_cell(v, 1, top[i]),
            (long long)validate_view_cell(v, 2, top[i]));
    }
    PUT("\n");
    return st;
}

static void fmt_sqnr(char *buf, size_t n_bytes, double db)
{
    if (isnan(db))
        snprintf(buf, n_bytes, "n/a");
    else if (isinf(db))
        snprintf(buf, n_bytes, "%sinf dB (identical logits)", db > 0 ? "" : "-");
    else
        ptq_snprintf_c(buf, n_bytes, "%.2f dB", db);
}

static ptq_status put_accuracy_lines(ptq_ctx *ctx, ptq_buf *b, const validate_view *v, const char *fmt)
{
    ptq_status st = PTQ_OK;
    const ptq_validate_totals *t = &v->t;
    double f1 = 100 * frac(t->top1_fp32, t->n), q1 = 100 * frac(t->top1_q, t->n);
    double f5 = 100 * frac(t->top5_fp32, t->n), q5 = 100 * frac(t->top5_q, t->n);
    PUT(fmt, "top-1", f1, q1, q1 - f1);
    PUT(fmt, "top-5", f5, q5, q5 - f5);
    return st;
}

static ptq_status markdown_body(ptq_ctx *ctx, ptq_buf *b, const validate_view *v)
{
    ptq_status st = PTQ_OK;
    const ptq_validate_totals *t = &v->t;
    char sqnr[64];
    fmt_sqnr(sqnr, sizeof sqnr, t->sqnr_db);
    PUT("# ptq validate: FP32 vs quantized\n\n");
    if (st == PTQ_OK)
        st = ptq_md_header(ctx, b, v->header_json, "validation report");
    PUT("## Summary\n\n%lld images, %d classes.\n\n"
        "| metric | FP32 | quantized | delta (points) |\n|---|---:|---:|---:|\n",
        (long long)t->n, v->k);
    if (st == PTQ_OK)
        st = put_accuracy_lines(ctx, b, v, "| %s | %.2f%% | %.2f%% | %+.2f |\n");
    if (t->collapsed) {
        char why[160];
        PUT("\n**COLLAPSED**: the quantized outputs carry no information (%s); the accuracy deltas above mean "
            "nothing.\n", ptq_validate_collapse_text(t->collapsed, why, sizeof why));
    }
    PUT("\n- changed predictions: %lld (%.2f%%)\n- logits SQNR: %s\n", (long long)t->changed,
        100 * frac(t->changed, t->n), sqnr);
    if (isnan(t->kl_nats))
        PUT("- logits KL(FP32 || quantized): n/a\n");
    else
        PUT("- logits KL(FP32 || quantized): %.6g nats per image\n", t->kl_nats);
    if (t->n_measured < t->n || t->nan_fp32 || t->nan_q)
        PUT("- **non-finite logits**: %lld NaN in FP32, %lld NaN in quantized; %lld images left out of SQNR and KL\n",
            (long long)t->nan_fp32, (long long)t->nan_q, (long long)(t->n - t->n_measured));
    PUT("\n## Flagged classes (recall drop > %.2f points)\n\n", v->flag_pts);
    if (v->n_flagged == 0)
        PUT("None.\n\n");
    for (int i = 0; i < v->n_flagged; i++) {
        int c = v->order[i];
        PUT("%d. ", i + 1);
        if (st == PTQ_OK)
            st = md_name(ctx, b, v, c);
        PUT(": recall %.2f%% -> %.2f%% (%+.2f points, %lld images)\n", 100 * v->mf[c].recall, 100 * v->mq[c].recall,
            -v->drop_pts[c], (long long)v->mf[c].support);
    }
    if (v->n_flagged)
        PUT("\n");
    PUT("## Per-class metrics (percent; deltas in points, quantized - FP32)\n\n"
        "| flagged | # | class | support | recall FP32 | recall quant | recall delta | precision FP32 | "
        "precision quant | precision delta | F1 FP32 | F1 quant | F1 delta |\n"
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < v->k && st == PTQ_OK; i++)
        st = md_class_row(ctx, b, v, v->order[i], i < v->n_flagged);
    PUT("\n## Confusion matrices\n\n");
    if (v->k <= MD_MATRIX_MAX_CLASSES) {
        for (int which = 0; which < 3 && st == PTQ_OK; which++)
            st = md_matrix(ctx, b, v, which);
    } else if (st == PTQ_OK) {
        st = md_top_cells(ctx, b, v);
    }
    return st;
}

static ptq_status summary_body(ptq_ctx *ctx, ptq_buf *b, const validate_view *v)
{
    ptq_status st = PTQ_OK;
    const ptq_validate_totals *t = &v->t;
    char sqnr[64], tmp[32];
    fmt_sqnr(sqnr, sizeof sqnr, t->sqnr_db);
    PUT("validate: %lld images, %d classes (FP32 -> quantized)\n", (long long)t->n, v->k);
    if (st == PTQ_OK)
        st = put_accuracy_lines(ctx, b, v, "  %s  %6.2f%% -> %6.2f%%  (%+.2f pts)\n");
    if (t->collapsed) {
        char why[160];
        PUT("  COLLAPSED: the quantized outputs carry no information (%s); the deltas mean nothing\n",
            ptq_validate_collapse_text(t->collapsed, why, sizeof why));
    }
    PUT("  changed predictions  %.2f%% (%lld)\n  logits  SQNR %s", 100 * frac(t->changed, t->n),
        (long long)t->changed, sqnr);
    if (isnan(t->kl_nats))
        PUT("  KL n/a\n");
    else
        PUT("  KL %.4g nats\n", t->kl_nats);
    if (t->n_measured < t->n || t->nan_fp32 || t->nan_q)
        PUT("  NON-FINITE logits: NaN fp32 %lld, quantized %lld; %lld images left out of SQNR/KL\n",
            (long long)t->nan_fp32, (long long)t->nan_q, (long long)(t->n - t->n_measured));
    if (v->n_flagged == 0)
        PUT("  no class lost more than %.2f pts of recall\n", v->flag_pts);
    else
        PUT("  FLAGGED: %d class%s lost more than %.2f pts of recall:\n", v->n_flagged, v->n_flagged == 1 ? "" : "es",
            v->flag_pts);
    for (int i = 0; i < v->n_flagged && i < SUMMARY_FLAGGED_MAX; i++) {
        int c = v->order[i];
        char esc[256]; /* for the terminal: control characters escaped */
        ptq_escape(validate_view_class_name(v, c, tmp, sizeof tmp), esc, sizeof esc);
        const int width = ptq_utf8_width(esc); /* padded to 20 characters, not bytes */
        PUT("    %s%*s recall %6.2f%% -> %6.2f%%  (%+.2f pts, %lld images)\n", esc, width < 20 ? 20 - width : 0, "",
            100 * v->mf[c].recall, 100 * v->mq[c].recall, -v->drop_pts[c], (long long)v->mf[c].support);
    }
    if (v->n_flagged > SUMMARY_FLAGGED_MAX)
        PUT("    ... and %d more (see the report)\n", v->n_flagged - SUMMARY_FLAGGED_MAX);
    return st;
}

/* Builds the view, runs body into a buffer and hands the text over. */
static ptq_status format_text(ptq_ctx *ctx, const ptq_validate_stats *s, const ptq_validate_opts *opts, char **out,
                              ptq_status (*body)(ptq_ctx *, ptq_buf *, const validate_view *))
{
    ptq_buf b = {0};
    validate_view v;
    *out = NULL;
    PTQ_TRY_RET(validate_view_make(ctx, s, opts, &v));
    ptq_status st = body(ctx, &b, &v);
    validate_view_free(&v);
    if (st != PTQ_OK) {
        ptq_buf_free(&b);
        return st;
    }
    *out = b.data;
    return PTQ_OK;
}

ptq_status ptq_validate_format_markdown(ptq_ctx *ctx, const ptq_validate_stats *s, const ptq_validate_opts *opts,
                                        char **out)
{
    return format_text(ctx, s, opts, out, markdown_body);
}

ptq_status ptq_validate_format_summary(ptq_ctx *ctx, const ptq_validate_stats *s, const ptq_validate_opts *opts,
                                       char **out)
{
    return format_text(ctx, s, opts, out, summary_body);
}
