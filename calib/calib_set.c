/* A calibration set (include/ptq/calib.h): the selected tensors' observers,
 * fed on the host or through device observers on the executor's GPU, with
 * provenance (model, settings, data sources and sample ids) and exact merge.
 * The archive file itself is calib/archive.c. Covered by
 * tests/test_calib_set.c and tests/cli_calib_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calib_internal.h"
#include "calib/calibrator_internal.h"
#include "core/parallel.h"
#include "observers/observer_cuda.h"
#include "ptq/hash.h"
#include "ptq/memory.h"
#include "ptq/version.h"
#include "runtime/backend.h"

static char *dup_str(const char *s)
{
    return strdup(s ? s : "");
}

void ptq_calib_set_free(ptq_calib_set *s)
{
    if (!s)
        return;
    for (int64_t i = 0; i < s->n; i++) {
        free(s->names[i]);
        ptq_observer_free(s->obs[i]);
        ptq_observer_dev_free(s->dev_obs[i]);
    }
    for (int w = 1; w < s->n_lanes; w++) {
        for (int64_t i = 0; s->lane_obs[w] && i < s->n; i++)
            ptq_observer_free(s->lane_obs[w][i]);
        free(s->lane_obs[w]);
    }
    free(s->lane_obs);
    free(s->names);
    free(s->obs);
    free(s->dev_obs);
    free(s->value_index);
    free(s->index_of_value);
    free(s->numel_shapes);
    free(s->fetched);
    free(s->alias_of);
    for (int i = 0; i < s->n_sources; i++) {
        free(s->sources[i].name);
        free(s->sources[i].ids);
    }
    free(s->sources);
    free(s->source_names);
    free(s->source_sha256s);
    free(s->model_name);
    free(s->ptq_version);
    free(s->preprocess);
    free(s->selection);
    free(s);
}

ptq_status calib_set_alloc(ptq_ctx *ctx, int64_t n, int64_t n_bins, ptq_calib_set **out)
{
    ptq_status st = PTQ_OK;
    *out = NULL;
    ptq_calib_set *s = calloc(1, sizeof *s);
    if (!s)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for a calibration set");
    s->n = n;
    s->n_bins = n_bins ? n_bins : PTQ_OBSERVER_DEFAULT_BINS;
    s->names = calloc((size_t)n + 1, sizeof *s->names);
    s->obs = calloc((size_t)n + 1, sizeof *s->obs);
    s->dev_obs = calloc((size_t)n + 1, sizeof *s->dev_obs);
    s->value_index = calloc((size_t)n + 1, sizeof *s->value_index);
    s->ptq_version = dup_str(PTQ_VERSION_STRING);
    s->model_name = dup_str("");
    s->preprocess = dup_str("");
    s->selection = dup_str("");
    snprintf(s->math, sizeof s->math, "fp32");
    if (!s->names || !s->obs || !s->dev_obs || !s->value_index || !s->ptq_version || !s->model_name ||
        !s->preprocess || !s->selection) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for a calibration set of %lld tensors", (long long)n);
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        s->value_index[i] = -1;
        PTQ_TRY(st, ptq_observer_init(ctx, s->n_bins, &s->obs[i]), done);
    }
    *out = s;
    s = NULL;
done:
    ptq_calib_set_free(s);
    return st;
}

/* "ops=<list>;tensors=<list>", empty lists for the defaults. */
static char *selection_string(const ptq_calib_select *sel)
{
    const char *ops = sel && sel->ops ? sel->ops : "", *pats = sel && sel->tensors ? sel->tensors : "";
    size_t n = strlen(ops) + strlen(pats) + 32;
    char *str = malloc(n);
    if (str)
        snprintf(str, n, "ops=%s;tensors=%s", ops, pats);
    return str;
}

/* s->alias_of for s->g (see calib_internal.h): a permuting node's output and its data input both observed, with
 * the same elements at the inferred shapes (so the same per-sample copies), in the graph's topological order. */
ptq_status calib_set_aliases(ptq_ctx *ctx, ptq_calib_set *s)
{
    static const char *const permuting[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Transpose"};
    const char *env = getenv("PTQ_OBSERVE_ALIAS");
    if (s->alias_of || !s->g || !s->index_of_value || (env && strcmp(env, "0") == 0))
        return PTQ_OK;
    if (!(s->alias_of = malloc(((size_t)s->n + 1) * sizeof *s->alias_of)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for a calibration set");
    for (int64_t i = 0; i < s->n; i++)
        s->alias_of[i] = -1;
    for (int k = 0; k < s->g->n_nodes; k++) {
        const ptq_node *nd = &s->g->nodes[k];
        int known = 0;
        for (size_t t = 0; t < sizeof permuting / sizeof permuting[0]; t++)
            known |= strcmp(nd->op_type, permuting[t]) == 0;
        if (!known || (nd->domain[0] && strcmp(nd->domain, "ai.onnx") != 0) || nd->n_inputs < 1 ||
            nd->n_outputs != 1 || nd->inputs[0] < 0 || nd->outputs[0] < 0)
            continue;
        const int64_t i = s->index_of_value[nd->outputs[0]], j = s->index_of_value[nd->inputs[0]];
        if (i < 0 || j < 0 || i == j || s->numel_shapes[i] != s->numel_shapes[j])
            continue;
        s->alias_of[i] = s->alias_of[j] >= 0 ? s->alias_of[j] : j;
    }
    return PTQ_OK;
}

ptq_status ptq_calib_set_create(ptq_ctx *ctx, const ptq_graph *g, const ptq_calib_select *sel, int64_t n_bins,
                                ptq_calib_set **out)
{
    ptq_status st = PTQ_OK;
    ptq_calib_set *s = NULL;
    int64_t n_kept = 0;
    *out = NULL;
    unsigned char *keep = calloc((size_t)g->n_values + 1, 1);
    if (!keep)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory selecting tensors");
    PTQ_TRY(st, ptq_calib_select_tensors(ctx, g, sel, keep, &n_kept), done);
    /* the histograms, before any is made: 2^24 bins are 128 MiB a tensor (an archive's reader checks the same) */
    const double hist_bytes = (double)n_kept * ((double)(n_bins ? n_bins : PTQ_OBSERVER_DEFAULT_BINS) * 8 + 512);
    char what[96];
    snprintf(what, sizeof what, "observing %lld tensors in histograms of %lld bins", (long long)n_kept,
             (long long)(n_bins ? n_bins : PTQ_OBSERVER_DEFAULT_BINS));
    PTQ_TRY(st, ptq_memory_check(ctx, hist_bytes >= 1.8e19 ? UINT64_MAX : (uint64_t)hist_bytes, what), done);
    PTQ_TRY(st, calib_set_alloc(ctx, n_kept, n_bins, &s), done);
    s->g = g;
    s->index_of_value = malloc(((size_t)g->n_values + 1) * sizeof *s->index_of_value);
    s->numel_shapes = malloc(((size_t)n_kept + 1) * sizeof *s->numel_shapes);
    free(s->selection);
    s->selection = selection_string(sel);
    if (!s->index_of_value || !s->numel_shapes || !s->selection) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for a calibration set");
        goto done;
    }
    const ptq_value *in0 = g->n_inputs > 0 ? &g->values[g->inputs[0]] : NULL;
    s->batch_shapes = in0 && in0->ndim > 0 && in0->dims[0] > 0 ? in0->dims[0] : 1;
    s->batch_n = s->batch_shapes;
    int64_t j = 0;
    for (int v = 0; v < g->n_values; v++) {
        s->index_of_value[v] = keep[v] ? j : -1;
        if (!keep[v])
            continue;
        s->value_index[j] = v;
        s->numel_shapes[j] = g->values[v].ndim < 0 ? -1 : 1;
        for (int d = 0; d < g->values[v].ndim; d++)
            s->numel_shapes[j] = g->values[v].dims[d] < 0 ? -1 : s->numel_shapes[j] * g->values[v].dims[d];
        if (!(s->names[j] = dup_str(g->values[v].name))) {
            st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for tensor names");
            goto done;
        }
        j++;
    }
    *out = s;
    s = NULL;
done:
    free(keep);
    ptq_calib_set_free(s);
    return st;
}

ptq_status ptq_calib_set_describe(ptq_ctx *ctx, ptq_calib_set *s, const char *model_sha256, const char *model_name,
                                  const char *preprocess)
{
    char *name = dup_str(model_name), *pre = dup_str(preprocess);
    if (!name || !pre || !model_sha256 || strlen(model_sha256) != 64 ||
        strspn(model_sha256, "0123456789abcdef") != 64) {
        free(name);
        free(pre);
        return name && pre ? ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "model SHA-256 must be 64 lowercase hex digits")
                           : ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
    }
    memcpy(s->model_sha256, model_sha256, 65);
    free(s->model_name);
    free(s->preprocess);
    s->model_name = name;
    s->preprocess = pre;
    return PTQ_OK;
}

ptq_status ptq_calib_set_math(ptq_ctx *ctx, ptq_calib_set *s, const char *math)
{
    if (!math || (strcmp(math, "fp32") != 0 && strcmp(math, "tf32") != 0 && strcmp(math, "fp64") != 0))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "math must be fp32, tf32 or fp64, got '%s'", math ? math : "(null)");
    snprintf(s->math, sizeof s->math, "%s", math);
    return PTQ_OK;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

const char *calib_source_key(const calib_source *src)
{
    return src->sha256[0] ? src->sha256 : src->name;
}

static int cmp_source(const void *a, const void *b)
{
    return strcmp(calib_source_key(a), calib_source_key(b));
}

/* The same samples: equal content hashes, or equal names when either hash is unknown. */
static int same_source(const calib_source *a, const char *name, const char *sha256)
{
    return a->sha256[0] && sha256[0] ? strcmp(a->sha256, sha256) == 0 : strcmp(a->name, name) == 0;
}

/* Keeps sources sorted by key and source_names, source_sha256s in step. */
static ptq_status sources_sorted(ptq_ctx *ctx, ptq_calib_set *s)
{
    qsort(s->sources, (size_t)s->n_sources, sizeof *s->sources, cmp_source);
    const char **names = realloc(s->source_names, ((size_t)s->n_sources + 1) * sizeof *names);
    if (names)
        s->source_names = names;
    const char **shas = realloc(s->source_sha256s, ((size_t)s->n_sources + 1) * sizeof *shas);
    if (shas)
        s->source_sha256s = shas;
    if (!names || !shas)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
    for (int i = 0; i < s->n_sources; i++) {
        names[i] = s->sources[i].name;
        shas[i] = s->sources[i].sha256;
    }
    return PTQ_OK;
}

/* The index of the source of s that holds b's samples, or -1. */
static int source_index(const ptq_calib_set *s, const calib_source *b)
{
    for (int i = 0; i < s->n_sources; i++)
        if (same_source(&s->sources[i], b->name, b->sha256))
            return i;
    return -1;
}

/* Index of the source (name, content hash) in s, adding an empty one when missing. */
static ptq_status source_slot(ptq_ctx *ctx, ptq_calib_set *s, const char *name, const char *sha256, int *out)
{
    for (int i = 0; i < s->n_sources; i++)
        if (same_source(&s->sources[i], name, sha256)) {
            *out = i;
            if (strcmp(name, s->sources[i].name) >= 0)
                return PTQ_OK;
            /* one content under two names: the smallest name, so that merging is the same in any order */
            char *smaller = dup_str(name);
            if (!smaller)
                return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
            free(s->sources[i].name);
            s->sources[i].name = smaller;
            PTQ_TRY_RET(sources_sorted(ctx, s));
            for (int j = 0; j < s->n_sources; j++)
                if (same_source(&s->sources[j], name, sha256))
                    *out = j;
            return PTQ_OK;
        }
    if (s->n_sources >= PTQ_CALIB_MAX_SOURCES)
        return ptq_fail(ctx, PTQ_ERR_DATA, "cannot record data set %s: the set already holds %d, the most it may",
                        name, PTQ_CALIB_MAX_SOURCES);
    calib_source *grown = realloc(s->sources, ((size_t)s->n_sources + 1) * sizeof *grown);
    if (!grown)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
    s->sources = grown;
    calib_source *src = &s->sources[s->n_sources];
    memset(src, 0, sizeof *src);
    if (!(src->name = dup_str(name)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
    snprintf(src->sha256, sizeof src->sha256, "%s", sha256);
    s->n_sources++;
    PTQ_TRY_RET(sources_sorted(ctx, s));
    for (int i = 0; i < s->n_sources; i++)
        if (same_source(&s->sources[i], name, sha256))
            *out = i;
    return PTQ_OK;
}

/* The sorted union of a[na] and b[nb] into *out (malloc'd); the number of
 * ids both hold into *n_common (then *out is NULL). */
static ptq_status union_ids(ptq_ctx *ctx, const int64_t *a, int64_t na, const int64_t *b, int64_t nb, int64_t **out,
                            int64_t *n_common)
{
    *out = NULL;
    *n_common = 0;
    for (int64_t i = 0, j = 0; i < na && j < nb;) {
        if (a[i] == b[j]) {
            (*n_common)++;
            i++;
            j++;
        } else if (a[i] < b[j]) {
            i++;
        } else {
            j++;
        }
    }
    if (*n_common)
        return PTQ_OK;
    int64_t *u = malloc(((size_t)(na + nb) + 1) * sizeof *u);
    if (!u)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for %lld sample ids", (long long)(na + nb));
    int64_t i = 0, j = 0, k = 0;
    while (i < na || j < nb)
        u[k++] = j >= nb || (i < na && a[i] < b[j]) ? a[i++] : b[j++];
    *out = u;
    return PTQ_OK;
}

ptq_status ptq_calib_set_add_samples(ptq_ctx *ctx, ptq_calib_set *s, const char *source, const int64_t *ids, int64_t n)
{
    return calib_set_add_source(ctx, s, source, NULL, ids, n);
}

ptq_status ptq_calib_set_add_source(ptq_ctx *ctx, ptq_calib_set *s, const char *source, const char *content_sha256,
                                    const int64_t *ids, int64_t n)
{
    if (!content_sha256 || strlen(content_sha256) != 64 || strspn(content_sha256, "0123456789abcdef") != 64)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the content SHA-256 of %s must be 64 lowercase hex digits", source);
    return calib_set_add_source(ctx, s, source, content_sha256, ids, n);
}

ptq_status calib_set_add_source(ptq_ctx *ctx, ptq_calib_set *s, const char *source, const char *sha256,
                                const int64_t *ids, int64_t n)
{
    ptq_status st = PTQ_OK;
    if (!sha256)
        sha256 = "";
    if (n < 0 || (n > 0 && !ids))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "sample ids of %s: %lld ids%s", source, (long long)n,
                        n < 0 ? ", a negative count" : " and no array");
    int64_t *sorted = malloc(((size_t)n + 1) * sizeof *sorted), *u = NULL, n_common = 0;
    if (!sorted)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for %lld sample ids", (long long)n);
    memcpy(sorted, ids, (size_t)n * sizeof *ids);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_i64);
    if (n > 0 && sorted[0] < 0) {
        st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "sample id %lld of %s is negative (ids count from 0)",
                      (long long)sorted[0], source);
        goto done;
    }
    for (int64_t i = 1; i < n; i++)
        if (sorted[i] == sorted[i - 1]) {
            st = ptq_fail(ctx, PTQ_ERR_DATA, "sample %lld of %s is listed twice", (long long)sorted[i], source);
            goto done;
        }
    int k = 0;
    PTQ_TRY(st, source_slot(ctx, s, source, sha256, &k), done);
    calib_source *src = &s->sources[k];
    PTQ_TRY(st, union_ids(ctx, src->ids, src->n_ids, sorted, n, &u, &n_common), done);
    if (n_common) {
        st = ptq_fail(ctx, PTQ_ERR_DATA, "%lld samples of %s were already observed", (long long)n_common, source);
        goto done;
    }
    free(src->ids);
    src->ids = u;
    src->n_ids += n;
done:
    free(sorted);
    return st;
}

void calib_sample_hash(const ptq_calib_set *s, char hex[65], int64_t *n_samples)
{
    ptq_sha256 h;
    ptq_sha256_init(&h);
    *n_samples = 0;
    for (int i = 0; i < s->n_sources; i++) {
        const calib_source *src = &s->sources[i];
        unsigned char le[8];
        const char *key = calib_source_key(src);
        ptq_sha256_update(&h, key, strlen(key) + 1);
        for (int64_t j = -1; j < src->n_ids; j++) {
            uint64_t v = j < 0 ? (uint64_t)src->n_ids : (uint64_t)src->ids[j];
            for (int b = 0; b < 8; b++)
                le[b] = (unsigned char)(v >> (8 * b));
            ptq_sha256_update(&h, le, 8);
        }
        *n_samples += src->n_ids;
    }
    ptq_sha256_final_hex(&h, hex);
}

void ptq_calib_set_provenance(const ptq_calib_set *s, ptq_calib_provenance *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out->model_sha256, s->model_sha256, sizeof out->model_sha256);
    out->model_name = s->model_name;
    out->ptq_version = s->ptq_version;
    out->preprocess = s->preprocess;
    out->math = s->math;
    out->selection = s->selection;
    out->n_bins = s->n_bins;
    calib_sample_hash(s, out->sample_ids_sha256, &out->n_samples);
    out->n_sources = s->n_sources;
    out->sources = s->source_names;
    out->sources_sha256 = s->source_sha256s;
}

int64_t ptq_calib_set_n_tensors(const ptq_calib_set *s)
{
    return s->n;
}

const char *ptq_calib_set_name(const ptq_calib_set *s, int64_t i)
{
    return s->names[i];
}

const ptq_observer *ptq_calib_set_observer(const ptq_calib_set *s, int64_t i)
{
    return s->obs[i];
}

int64_t ptq_calib_set_find(const ptq_calib_set *s, const char *name)
{
    for (int64_t i = 0; i < s->n; i++)
        if (strcmp(s->names[i], name) == 0)
            return i;
    return -1;
}

int64_t ptq_calib_set_first_nonfinite(const ptq_calib_set *s)
{
    for (int64_t i = 0; i < s->n; i++) {
        ptq_observer_stats st;
        ptq_observer_get_stats(s->obs[i], &st);
        if (st.count > 0 && st.count == st.n_nan + st.n_inf)
            return i;
    }
    return -1;
}

/* Observing */

/* Observes t, made by a run of `batch` samples, as tensor i. */
/* The host observer of tensor i that the calling thread feeds: obs[i], or on pool worker w > 0 while passes run
 * side by side its own (made on first use). */
static ptq_status host_observer(ptq_ctx *ctx, ptq_calib_set *s, int64_t i, ptq_observer **out)
{
    const int w = ptq_par_worker_now();
    *out = s->obs[i];
    if (w <= 0)
        return PTQ_OK;
    if (w >= s->n_lanes) /* the pool grew after calib_set_lanes: obs[i] would be fed from two threads at once */
        return ptq_fail(ctx, PTQ_ERR_INTERNAL, "tensor '%s' observed on pool thread %d, but the set has observers for "
                        "%d threads", s->names[i], w, s->n_lanes > 0 ? s->n_lanes : 1);
    if (!s->lane_obs[w] && !(s->lane_obs[w] = calloc((size_t)s->n, sizeof *s->lane_obs[w])))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for the observers of thread %d", w);
    if (!s->lane_obs[w][i])
        PTQ_TRY_RET(ptq_observer_init(ctx, s->n_bins, &s->lane_obs[w][i]));
    *out = s->lane_obs[w][i];
    return PTQ_OK;
}

ptq_status calib_set_lanes(ptq_ctx *ctx, ptq_calib_set *s, int n_lanes)
{
    if (n_lanes <= s->n_lanes)
        return PTQ_OK;
    ptq_observer ***more = realloc(s->lane_obs, (size_t)n_lanes * sizeof *more);
    if (!more)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for the observers of %d threads", n_lanes);
    for (int w = s->n_lanes; w < n_lanes; w++)
        more[w] = NULL;
    s->lane_obs = more;
    s->n_lanes = n_lanes;
    return PTQ_OK;
}

/* How many times n values of tensor i, made by a run of `batch` samples, count: batch for a tensor without the
 * batch's dimension (its element count the shapes' at another batch), else 1. */
static int64_t copies_of(const ptq_calib_set *s, int64_t i, int64_t n, int64_t batch)
{
    return s->numel_shapes && batch != s->batch_shapes && n == s->numel_shapes[i] ? batch : 1;
}

/* The samples of the run now under way: a pass's on the CPU, else the set's batch. */
static int64_t run_batch(const ptq_calib_set *s)
{
    const int64_t run = s->exec ? ptq_exec_this_run_samples() : 0;
    return run > 0 ? run : s->batch_n;
}

static ptq_status observe(ptq_ctx *ctx, ptq_calib_set *s, int64_t i, const ptq_tensor *t, int64_t batch)
{
    if (t->dtype != PTQ_DT_FLOAT)
        return ptq_fail(ctx, PTQ_ERR_INTERNAL, "tensor '%s' is %s, not float32", s->names[i], ptq_dtype_name(t->dtype));
    const int64_t n = ptq_tensor_numel(t);
    const int64_t copies = copies_of(s, i, n, batch);
    if (t->mem != PTQ_MEM_HOST && !s->cuda)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "tensor '%s' is on the GPU but the calibration set is not bound to "
                        "its executor: call ptq_calib_set_bind after ptq_exec_create, before the first run",
                        s->names[i]);
    ptq_observer *host = NULL;
    if (t->mem == PTQ_MEM_HOST || copies > 1)
        PTQ_TRY_RET(host_observer(ctx, s, i, &host));
    if (t->mem == PTQ_MEM_HOST) /* once per sample: see numel_shapes */
        return ptq_observer_update_copies(ctx, host, t->data, n, copies);
    if (copies > 1) { /* on the host, in one update, not copies passes on the GPU (sync folds the two together) */
        if (n > s->fetched_cap) {
            float *more = realloc(s->fetched, (size_t)n * sizeof *more);
            if (!more)
                return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory copying tensor '%s' (%lld values) to the host",
                                s->names[i], (long long)n);
            s->fetched = more;
            s->fetched_cap = n;
        }
        PTQ_TRY_RET(ptq_observer_dev_fetch(ctx, s->cuda, s->fetched, t->data, n));
        return ptq_observer_update_copies(ctx, host, s->fetched, n, copies);
    }
    if (!s->dev_obs[i])
        PTQ_TRY_RET(ptq_observer_dev_init(ctx, s->cuda, s->n_bins, &s->dev_obs[i]));
    return ptq_observer_dev_update(ctx, s->dev_obs[i], t->data, n);
}

/* A set observes the graph it was created for; one read from an archive observes none. */
static ptq_status check_graph(ptq_ctx *ctx, const ptq_calib_set *s, const ptq_graph *g)
{
    if (!s->index_of_value)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "a calibration set read from an archive cannot observe: "
                        "ptq_calib_set_create makes one for the executor's graph");
    if (g != s->g)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "calibration set tapped on a graph it was not made for: "
                        "ptq_calib_set_create makes one for the executor's graph");
    return PTQ_OK;
}

ptq_status ptq_calib_set_tap(void *user, ptq_ctx *ctx, const ptq_graph *g, int node_index, int value_index,
                             const ptq_tensor *t)
{
    ptq_calib_set *s = user;
    (void)node_index;
    PTQ_TRY_RET(check_graph(ctx, s, g));
    int64_t i = s->index_of_value[value_index];
    if (i < 0 || (s->alias_of && s->alias_of[i] >= 0)) /* not observed, or its input's observer stands for it */
        return PTQ_OK;
    return observe(ctx, s, i, t, run_batch(s));
}

ptq_status calib_set_dev_state(void *user, ptq_ctx *ctx, int v, int64_t n, void **state, int64_t *n_bins)
{
    ptq_calib_set *s = user;
    *state = NULL;
    *n_bins = s->n_bins;
    const int64_t i = s->index_of_value && v >= 0 && v < s->g->n_values ? s->index_of_value[v] : -1;
    if (i < 0 || (s->alias_of && s->alias_of[i] >= 0)) /* as ptq_calib_set_tap: not looked at */
        return PTQ_OK;
    if (!s->cuda)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "tensor '%s': device observer asked for, but the calibration set is "
                        "not bound to a GPU: call ptq_calib_set_bind after ptq_exec_create, before the first run",
                        s->names[i]);
    if (copies_of(s, i, n, run_batch(s)) > 1) { /* observe's host update */
        *n_bins = -1;
        return PTQ_OK;
    }
    if (!s->dev_obs[i])
        PTQ_TRY_RET(ptq_observer_dev_init(ctx, s->cuda, s->n_bins, &s->dev_obs[i]));
    *state = ptq_observer_dev_state(s->dev_obs[i]);
    *n_bins = ptq_observer_dev_n_bins(s->dev_obs[i]);
    return PTQ_OK;
}

ptq_status ptq_calib_set_bind(ptq_ctx *ctx, ptq_calib_set *s, ptq_exec *e)
{
    (void)ctx;
    s->cuda = ptq_exec_cuda_dev(e);
    return PTQ_OK;
}

ptq_status ptq_calib_set_observe_inputs(ptq_ctx *ctx, ptq_calib_set *s, const ptq_tensor *inputs)
{
    PTQ_TRY_RET(check_graph(ctx, s, s->g));
    for (int k = 0; k < s->g->n_inputs; k++) {
        int64_t i = s->index_of_value[s->g->inputs[k]];
        if (i >= 0)
            PTQ_TRY_RET(observe(ctx, s, i, &inputs[k], s->batch_n));
    }
    return PTQ_OK;
}

ptq_status ptq_calib_set_sync(ptq_ctx *ctx, ptq_calib_set *s)
{
    ptq_status st = PTQ_OK;
    ptq_observer *tmp = NULL, *tmp2 = NULL;
    for (int w = 1; w < s->n_lanes; w++) { /* the threads' observers, in worker order */
        for (int64_t i = 0; s->lane_obs[w] && i < s->n; i++) {
            if (s->lane_obs[w][i])
                PTQ_TRY(st, ptq_observer_merge(ctx, s->obs[i], s->lane_obs[w][i]), done);
            ptq_observer_free(s->lane_obs[w][i]);
            s->lane_obs[w][i] = NULL;
        }
    }
    for (int64_t i = 0; i < s->n; i++) {
        if (!s->dev_obs[i])
            continue;
        if (!tmp)
            PTQ_TRY(st, ptq_observer_init(ctx, s->n_bins, &tmp), done);
        PTQ_TRY(st, ptq_observer_dev_read(ctx, s->dev_obs[i], tmp), done);
        PTQ_TRY(st, ptq_observer_merge(ctx, s->obs[i], tmp), done);
        ptq_observer_dev_free(s->dev_obs[i]);
        s->dev_obs[i] = NULL;
    }
    for (int64_t i = 0; s->alias_of && i < s->n; i++) { /* an exact copy: the merge into an empty observer */
        if (s->alias_of[i] < 0)
            continue;
        PTQ_TRY(st, ptq_observer_init(ctx, s->n_bins, &tmp2), done);
        PTQ_TRY(st, ptq_observer_merge(ctx, tmp2, s->obs[s->alias_of[i]]), done);
        ptq_observer_free(s->obs[i]);
        s->obs[i] = tmp2;
        tmp2 = NULL;
    }
done:
    ptq_observer_free(tmp);
    ptq_observer_free(tmp2);
    return st;
}

/* Ranges */

typedef struct ranges_job {
    const ptq_calib_set *s;
    const ptq_calib_params *p;
    ptq_calib_range *out;
    ptq_ctx *ctxs;      /* [n] */
    ptq_status *status; /* [n] */
} ranges_job;

static void ranges_piece(void *arg, int64_t begin, int64_t end, int worker)
{
    const ranges_job *j = arg;
    (void)worker;
    for (int64_t i = begin; i < end; i++)
        j->status[i] = ptq_calib_compute(&j->ctxs[i], j->p, j->s->obs[i], &j->out[i]);
}

ptq_status ptq_calib_set_ranges(ptq_ctx *ctx, const ptq_calib_set *s, const ptq_calib_params *p, ptq_calib_range *out,
                                int64_t *bad)
{
    *bad = -1;
    PTQ_TRY_RET(ptq_calib_params_check(ctx, p)); /* no tensor's fault: not reported as the first one's */
    ranges_job j = {s, p, out, calloc((size_t)s->n + 1, sizeof(ptq_ctx)), calloc((size_t)s->n + 1, sizeof(ptq_status))};
    if (!j.ctxs || !j.status) {
        free(j.ctxs);
        free(j.status);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for the ranges of %lld tensors", (long long)s->n);
    }
    ptq_parallel_for(s->n, 1, ranges_piece, &j);
    ptq_status st = PTQ_OK;
    for (int64_t i = 0; i < s->n && st == PTQ_OK; i++)
        if (j.status[i] != PTQ_OK) {
            *bad = i;
            st = ptq_fail(ctx, j.status[i], "tensor '%s': %s", s->names[i], j.ctxs[i].msg);
        }
    free(j.ctxs);
    free(j.status);
    return st;
}

/* 1 if tensor i of s saw no values and (with g) g's shapes give it a dim of size 0. */
static int tensor_empty(const ptq_graph *g, const ptq_calib_set *s, int64_t i)
{
    ptq_observer_stats os;
    ptq_observer_get_stats(s->obs[i], &os);
    if (os.count != 0)
        return 0;
    if (!g)
        return 1;
    const int v = ptq_graph_find_value(g, s->names[i]);
    for (int d = 0; v >= 0 && d < g->values[v].ndim; d++)
        if (g->values[v].dims[d] == 0)
            return 1;
    return 0;
}

ptq_status ptq_calib_set_ranges_empty(ptq_ctx *ctx, const ptq_calib_set *s, const ptq_graph *g,
                                      const ptq_calib_params *p, ptq_calib_range *out, unsigned char *empty,
                                      int64_t *bad)
{
    int64_t n_empty = 0;
    for (int64_t i = 0; i < s->n; i++)
        n_empty += empty[i] = (unsigned char)tensor_empty(g, s, i);
    const ptq_status st = ptq_calib_set_ranges(ctx, s, p, out, bad);
    if (st == PTQ_OK || *bad < 0 || n_empty == 0)
        return st;
    /* every range is computed, a failed one zeroed: the failures of tensors that are not empty are errors */
    *bad = -1;
    for (int64_t i = 0; i < s->n; i++) {
        if (empty[i]) {
            memset(&out[i], 0, sizeof out[i]);
            out[i].degenerate = 1;
            continue;
        }
        if (out[i].degenerate || out[i].amax > 0)
            continue;
        ptq_ctx one;
        ptq_ctx_init(&one);
        const ptq_status st_i = ptq_calib_compute(&one, p, s->obs[i], &out[i]);
        if (st_i != PTQ_OK) {
            *bad = i;
            return ptq_fail(ctx, st_i, "tensor '%s': %s", s->names[i], one.msg);
        }
    }
    return PTQ_OK;
}

/* Merge */

static ptq_status same(ptq_ctx *ctx, const char *what, const char *a, const char *b)
{
    if (strcmp(a, b) == 0)
        return PTQ_OK;
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "cannot merge archives with different %s: '%s' and '%s'", what, a, b);
}

ptq_status ptq_calib_set_merge(ptq_ctx *ctx, ptq_calib_set *dst, const ptq_calib_set *src)
{
    ptq_status st = PTQ_OK;
    PTQ_TRY_RET(same(ctx, "models (SHA-256)", dst->model_sha256, src->model_sha256));
    if (dst->n_bins != src->n_bins)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "cannot merge archives with different observer bins: %lld and %lld",
                        (long long)dst->n_bins, (long long)src->n_bins);
    PTQ_TRY_RET(same(ctx, "tensor selections", dst->selection, src->selection));
    PTQ_TRY_RET(same(ctx, "preprocessing", dst->preprocess, src->preprocess));
    PTQ_TRY_RET(same(ctx, "math (--math)", dst->math, src->math));
    if (dst->n != src->n)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "cannot merge archives of %lld and %lld tensors", (long long)dst->n,
                        (long long)src->n);
    for (int64_t i = 0; i < dst->n; i++)
        if (strcmp(dst->names[i], src->names[i]) != 0)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "cannot merge archives whose tensor %lld differs: '%s' and '%s'",
                            (long long)i, dst->names[i], src->names[i]);
    /* every other count of a tensor is at most its count: this bounds them all */
    for (int64_t i = 0; i < dst->n; i++) {
        ptq_observer_stats a, b;
        ptq_observer_get_stats(dst->obs[i], &a);
        ptq_observer_get_stats(src->obs[i], &b);
        if (ptq_observer_n_bins(dst->obs[i]) != ptq_observer_n_bins(src->obs[i]))
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "cannot merge archives whose tensor '%s' has %lld and %lld bins",
                            dst->names[i], (long long)ptq_observer_n_bins(dst->obs[i]),
                            (long long)ptq_observer_n_bins(src->obs[i]));
        if (a.count > INT64_MAX - b.count)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                            "cannot merge archives whose tensor '%s' would hold more than 2^63 - 1 values",
                            dst->names[i]);
    }
    /* an unhashed source (an older archive's) matches by name: it may pair with one source of the other archive
     * only, or the ids of several contents would be merged into one source (and one pairing's lost) */
    int n_new = 0; /* sources of src that dst lacks: the merged set must stay within PTQ_CALIB_MAX_SOURCES */
    for (int j = 0; j < src->n_sources; j++) {
        int found = 0;
        for (int i = 0; i < dst->n_sources; i++) {
            const calib_source *a = &dst->sources[i], *b = &src->sources[j];
            int n_a = 0, n_b = 0;
            if (!same_source(a, b->name, b->sha256))
                continue;
            found = 1;
            for (int k = 0; k < dst->n_sources; k++)
                n_a += same_source(&dst->sources[k], b->name, b->sha256);
            for (int k = 0; k < src->n_sources; k++)
                n_b += same_source(&src->sources[k], a->name, a->sha256);
            if (n_a > 1 || n_b > 1)
                return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                                "cannot merge archives whose sources pair up in more than one way: source %s of one "
                                "is the same data as %d sources of the other (by name where a content hash is "
                                "missing, as in an older ptq's archive, else by content hash)",
                                n_a > 1 ? b->name : a->name, n_a > 1 ? n_a : n_b);
        }
        n_new += !found;
    }
    if (dst->n_sources + n_new > PTQ_CALIB_MAX_SOURCES)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "cannot merge archives of %d and %d data sets (%d in common): the "
                        "merged archive would record more than %d", dst->n_sources, src->n_sources,
                        src->n_sources - n_new, PTQ_CALIB_MAX_SOURCES);
    /* samples: every overlap is checked before anything changes */
    calib_source *next = NULL; /* dst's sources after the merge */
    const char **names = NULL, **shas = NULL;
    char **renamed = NULL, *model_name = NULL;
    int64_t **merged = calloc((size_t)src->n_sources + 1, sizeof *merged);
    if (!merged)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
    for (int j = 0; j < src->n_sources; j++) {
        const calib_source *b = &src->sources[j];
        const calib_source *a = NULL;
        for (int i = 0; i < dst->n_sources; i++)
            if (same_source(&dst->sources[i], b->name, b->sha256))
                a = &dst->sources[i];
        int64_t n_common = 0;
        if (!a)
            continue;
        PTQ_TRY(st, union_ids(ctx, a->ids, a->n_ids, b->ids, b->n_ids, &merged[j], &n_common), done);
        if (n_common) {
            st = strcmp(a->name, b->name) == 0
                     ? ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                                "cannot merge archives that both observed %lld samples of %s: they would count twice",
                                (long long)n_common, b->name)
                     : ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                                "cannot merge archives that both observed %lld samples of the same data (%s and %s "
                                "have the same content, SHA-256 %.16s...): they would count twice",
                                (long long)n_common, a->name, b->name, b->sha256);
            goto done;
        }
    }
    /* everything the merge allocates, before dst changes: a failure leaves dst as it was */
    const int n_all = dst->n_sources + n_new;
    next = malloc(((size_t)n_all + 1) * sizeof *next);
    names = malloc(((size_t)n_all + 1) * sizeof *names);
    shas = malloc(((size_t)n_all + 1) * sizeof *shas);
    renamed = calloc((size_t)src->n_sources + 1, sizeof *renamed);
    if (!next || !names || !shas || !renamed) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int j = 0; j < src->n_sources; j++) {
        const calib_source *b = &src->sources[j];
        const int i = source_index(dst, b);
        /* a new source's name, or the smaller of one content's two names, so that merging is the same in any
         * order */
        if ((i < 0 || strcmp(b->name, dst->sources[i].name) < 0) && !(renamed[j] = dup_str(b->name))) {
            st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
            goto done;
        }
        if (!merged[j]) {
            if (!(merged[j] = malloc(((size_t)b->n_ids + 1) * sizeof *merged[j]))) {
                st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
                goto done;
            }
            memcpy(merged[j], b->ids, (size_t)b->n_ids * sizeof *b->ids);
        }
    }
    /* one model (SHA-256) under two names: the smallest */
    if (strcmp(src->model_name, dst->model_name) < 0 && !(model_name = dup_str(src->model_name))) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
        goto done;
    }
    /* nothing below fails */
    int n = dst->n_sources;
    memcpy(next, dst->sources, (size_t)n * sizeof *next);
    for (int j = 0; j < src->n_sources; j++) {
        const calib_source *b = &src->sources[j];
        const int i = source_index(dst, b);
        calib_source *a = i >= 0 ? &next[i] : &next[n++];
        if (i < 0) {
            memset(a, 0, sizeof *a);
            snprintf(a->sha256, sizeof a->sha256, "%s", b->sha256);
        }
        if (renamed[j]) {
            free(a->name);
            a->name = renamed[j];
            renamed[j] = NULL;
        }
        free(a->ids);
        a->ids = merged[j];
        a->n_ids += b->n_ids;
        merged[j] = NULL;
    }
    qsort(next, (size_t)n, sizeof *next, cmp_source);
    for (int i = 0; i < n; i++) {
        names[i] = next[i].name;
        shas[i] = next[i].sha256;
    }
    free(dst->sources);
    free(dst->source_names);
    free(dst->source_sha256s);
    dst->sources = next;
    dst->source_names = names;
    dst->source_sha256s = shas;
    dst->n_sources = n;
    next = NULL;
    names = shas = NULL;
    for (int64_t i = 0; i < dst->n; i++)
        ptq_observer_merge(ctx, dst->obs[i], src->obs[i]); /* bin counts checked above: cannot fail */
    if (model_name) {
        free(dst->model_name);
        dst->model_name = model_name;
        model_name = NULL;
    }
done:
    for (int j = 0; j < src->n_sources; j++) {
        free(merged[j]);
        free(renamed ? renamed[j] : NULL);
    }
    free(merged);
    free(renamed);
    free(next);
    free(names);
    free(shas);
    free(model_name);
    return st;
}
