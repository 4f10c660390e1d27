/* The runner (include/ptq/runner.h): picks samples, reads and preprocesses
 * them (images; named inputs as stored) batch by batch (the next batch on a worker thread while the executor
 * computes this one), runs the session's executor and hands each batch to
 * the consumers in order. Covered by tests/test_runner.c and the cli tests. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "ptq/batch.h"
#include "ptq/dist.h"
#include "ptq/memory.h"
#include "ptq/runner.h"
#include "runtime/backend.h"

struct ptq_runner {
    const ptq_runner_params *p;
    ptq_session *s;
    double read_s, exec_s;
};

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Positions of a partial Fisher-Yates over [0, n) that hold something other
 * than their own index: open addressing on keys, O(samples) memory whatever n. */
typedef struct swap_map {
    int64_t *key, *val; /* [cap]; key -1: empty */
    size_t cap;         /* a power of two, at least twice the entries */
} swap_map;

static int64_t *swap_slot(swap_map *m, int64_t k)
{
    size_t i = (size_t)(((uint64_t)k * 0x9e3779b97f4a7c15ull) >> 17) & (m->cap - 1);
    while (m->key[i] != -1 && m->key[i] != k)
        i = (i + 1) & (m->cap - 1);
    return &m->key[i];
}

static int64_t swap_get(swap_map *m, int64_t k)
{
    int64_t *slot = swap_slot(m, k);
    return *slot == k ? m->val[slot - m->key] : k;
}

static void swap_set(swap_map *m, int64_t k, int64_t v)
{
    int64_t *slot = swap_slot(m, k);
    *slot = k;
    m->val[slot - m->key] = v;
}

/* The first n_out values of the seeded Fisher-Yates shuffle of [0, n), the
 * same as swapping in an array of n ids, in memory O(n_out). */
static int sparse_shuffle(uint64_t seed, int64_t n, int64_t n_out, int64_t *out)
{
    swap_map m;
    m.cap = 16;
    while (m.cap < 2 * (size_t)n_out + 2) /* each step adds at most one key (j; i is never read again) */
        m.cap *= 2;
    m.key = malloc(m.cap * sizeof *m.key);
    m.val = malloc(m.cap * sizeof *m.val);
    if (!m.key || !m.val) {
        free(m.key);
        free(m.val);
        return 0;
    }
    memset(m.key, 0xff, m.cap * sizeof *m.key);
    uint64_t state = seed;
    for (int64_t i = 0; i < n_out; i++) {
        int64_t j = i + (int64_t)(splitmix64(&state) % (uint64_t)(n - i));
        int64_t at_j = swap_get(&m, j);
        swap_set(&m, j, swap_get(&m, i));
        out[i] = at_j;
    }
    free(m.key);
    free(m.val);
    return 1;
}

ptq_status ptq_pick_samples(ptq_ctx *ctx, int64_t total, const ptq_pick *p, int64_t **ids, int64_t *n_ids)
{
    *ids = NULL;
    *n_ids = 0;
    const int64_t n_shards = p->n_shards > 1 ? p->n_shards : 1, shard = p->n_shards > 1 ? p->shard : 0;
    if (total < 0 || p->limit < 0 || p->samples < 0 || p->n_shards < 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "bad sample pick: a negative count (%lld samples, limit %lld, "
                        "%lld at random, %lld shards)", (long long)total, (long long)p->limit, (long long)p->samples,
                        (long long)p->n_shards);
    if (n_shards > PTQ_MAX_SHARDS || shard < 0 || shard >= n_shards)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "bad sample pick: shard %lld of %lld over %lld samples",
                        (long long)shard, (long long)n_shards, (long long)total);
    int64_t n_pick = total;
    if (p->limit && p->limit < n_pick)
        n_pick = p->limit;
    const int random = p->samples && p->samples < n_pick;
    const int64_t n_kept = random ? p->samples : n_pick; /* ids held: the pick, not the whole set */
    /* 8 bytes an id, and a random pick's swap map up to 64 more; a quarter of the limit at most */
    const uint64_t id_bytes = random ? 72 : 8;
    if ((uint64_t)n_kept > ptq_memory_budget() / id_bytes / 4)
        return ptq_fail(ctx, PTQ_ERR_NOMEM,
                        "%lld sample ids would take %.1f GiB, more than a quarter of the memory limit (%.1f GiB; "
                        "see --max-memory); pick fewer with --samples or --limit",
                        (long long)n_kept, (double)n_kept * (double)id_bytes / 1073741824.0,
                        (double)ptq_memory_budget() / 1073741824.0);
    int64_t *all = malloc(((size_t)n_kept + 1) * sizeof *all);
    if (!all)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for %lld sample ids", (long long)n_kept);
    if (random) {
        if (!sparse_shuffle(p->seed, n_pick, n_kept, all)) {
            free(all);
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for %lld sample ids", (long long)n_kept);
        }
        qsort(all, (size_t)n_kept, sizeof *all, cmp_i64);
    } else {
        for (int64_t i = 0; i < n_kept; i++)
            all[i] = i;
    }
    int64_t lo, hi; /* floor(n * i / n_shards) boundaries, as the ranks of a job share a list */
    ptq_dist_share(n_kept, shard, n_shards, &lo, &hi);
    memmove(all, all + lo, (size_t)(hi - lo) * sizeof *all);
    *ids = all;
    *n_ids = hi - lo;
    return PTQ_OK;
}

/* One batch's host buffers and the read that fills them. */
typedef struct slot_buf {
    float *x;           /* [batch, sample] */
    uint8_t *u8;        /* or the images as stored, [batch, img_bytes] (normalized on the GPU) */
    int64_t img_bytes;
    int n_named;        /* or the named inputs (ptq_session_named_inputs): */
    void *named[PTQ_DATASET_MAX_ARRAYS]; /* [batch, named_bytes[k]] each */
    size_t named_bytes[PTQ_DATASET_MAX_ARRAYS]; /* bytes of one sample */
    ptq_dtype as[PTQ_DATASET_MAX_ARRAYS];       /* the model input's dtype */
    int32_t *labels;    /* [batch] or NULL */
    const int64_t *ids;
    int64_t n;
    ptq_dataset *ds;
    const ptq_preprocess *pre;
    int64_t sample;     /* floats per sample */
    ptq_ctx ctx;
    ptq_status st;
    double secs;
    pthread_t thread;
    int running;
} slot_buf;

/* Reads samples ids[n] (ascending) into x and labels, one contiguous run at a time. */
static void *read_batch(void *arg)
{
    slot_buf *b = arg;
    double t0 = ptq_clock_s();
    b->st = PTQ_OK;
    for (int64_t i = 0; i < b->n && b->st == PTQ_OK;) {
        int64_t j = i + 1;
        while (j < b->n && b->ids[j] == b->ids[j - 1] + 1)
            j++;
        int32_t *labels = b->labels ? b->labels + i : NULL;
        void *named[PTQ_DATASET_MAX_ARRAYS];
        for (int k = 0; k < b->n_named; k++)
            named[k] = (char *)b->named[k] + (size_t)i * b->named_bytes[k];
        if (b->n_named)
            b->st = ptq_dataset_read_arrays(&b->ctx, b->ds, b->ids[i], j - i, b->as, named, labels);
        else if (b->u8)
            b->st = ptq_dataset_read_u8(&b->ctx, b->ds, b->ids[i], j - i, b->u8 + i * b->img_bytes, labels);
        else
            b->st = ptq_dataset_read(&b->ctx, b->ds, b->ids[i], j - i, b->pre, b->x + i * b->sample, labels);
        i = j;
    }
    b->secs = ptq_clock_s() - t0;
    return NULL;
}

static ptq_status start_read(ptq_ctx *ctx, slot_buf *b, const int64_t *ids, int64_t n, int async)
{
    b->ids = ids;
    b->n = n;
    ptq_ctx_init(&b->ctx);
    if (async && pthread_create(&b->thread, NULL, read_batch, b) == 0) {
        b->running = 1;
        return PTQ_OK;
    }
    read_batch(b);
    if (b->st != PTQ_OK)
        *ctx = b->ctx;
    return b->st;
}

static ptq_status finish_read(ptq_ctx *ctx, slot_buf *b)
{
    if (b->running) {
        pthread_join(b->thread, NULL);
        b->running = 0;
    }
    if (b->st != PTQ_OK)
        *ctx = b->ctx;
    return b->st;
}

/* Checks the logits output holds float32 [n, k] logits of the same width as before. */
static ptq_status check_logits(ptq_ctx *ctx, ptq_runner *r, ptq_batch *b)
{
    const ptq_graph *g = ptq_session_graph(r->s);
    const ptq_tensor *lg = &b->outputs[b->logits_output];
    const char *name = g->values[g->outputs[b->logits_output]].name;
    if (lg->dtype != PTQ_DT_FLOAT || lg->ndim < 1 || lg->dims[0] != b->n)
        return ptq_fail(ctx, PTQ_ERR_SHAPE, "output '%s' is not a float32 [batch, classes] logits tensor", name);
    const int64_t k = ptq_tensor_numel(lg) / b->n;
    if (b->n_classes && k != b->n_classes)
        return ptq_fail(ctx, PTQ_ERR_SHAPE, "output '%s' gives %lld scores per image from image %lld on, %lld before",
                        name, (long long)k, (long long)b->start, (long long)b->n_classes);
    if (!b->n_classes && r->p->need_logits) {
        const ptq_dataset *ds = ptq_session_dataset(r->s);
        const int dk = ds ? ptq_dataset_n_classes(ds) : -1;
        if (dk > k || k > (1 << 20))
            return ptq_fail(ctx, PTQ_ERR_DATA, "the data has %d classes but the model outputs %lld scores", dk,
                            (long long)k);
    }
    for (int64_t i = 0; b->labels && i < b->n; i++) /* named here, where the data set can say where it came from */
        if (b->labels[i] >= k) {
            const ptq_dataset *ds = ptq_session_dataset(r->s);
            char origin[1024] = "the data set";
            if (ds)
                ptq_dataset_label_origin(ds, b->ids[i], origin, sizeof origin);
            return ptq_fail(ctx, PTQ_ERR_DATA, "sample %lld: label %d (%s) is out of range for the model's %lld "
                            "classes (output '%s')", (long long)b->ids[i], b->labels[i], origin, (long long)k, name);
        }
    b->n_classes = k;
    b->logits = lg->data;
    return PTQ_OK;
}

/* A bound on what a batch takes, checked before anything is allocated so
 * a --batch too large for the machine ends with a message, not the OOM
 * killer: the input buffers, and the executor's activations alive at once
 * at the worst step of a run (by tensor liveness, as its memory plan holds
 * them). */
static ptq_status batch_fits(ptq_ctx *ctx, const ptq_session *s, int64_t batch, int n_bufs)
{
    double need = ptq_batch_bytes(s, batch, n_bufs);
    if (need <= (double)ptq_memory_budget())
        return PTQ_OK;
    char need_s[32], limit_s[32];
    return ptq_fail(ctx, PTQ_ERR_NOMEM,
                    "a batch of %lld sample%s needs about %s (input buffers and activations), more than the "
                    "memory limit of %s (--max-memory); %s",
                    (long long)batch, batch == 1 ? "" : "s", ptq_memory_str(need, need_s, sizeof need_s),
                    ptq_memory_str((double)ptq_memory_budget(), limit_s, sizeof limit_s),
                    batch > 1 ? "use a smaller --batch" : "raise --max-memory");
}

ptq_status ptq_runner_run(ptq_ctx *ctx, const ptq_runner_params *p)
{
    ptq_status st = PTQ_OK;
    ptq_runner r = {p, p->session, 0, 0};
    ptq_session *s = p->session;
    const ptq_graph *g = ptq_session_graph(s);
    ptq_dataset *ds = ptq_session_dataset(s);
    ptq_exec *e = ptq_session_exec(s);
    const ptq_preprocess *pre = ptq_session_preprocess(s);
    ptq_tensor *outs = NULL;
    slot_buf buf[2];
    memset(buf, 0, sizeof buf);
    if (!ds)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the session has no data to run");
    if (p->batch < 1 || p->n_ids < 0 || p->n_consumers < 0 || p->n_consumers > PTQ_RUNNER_MAX_CONSUMERS)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "bad runner parameters: batch %lld, %lld samples, %d consumers",
                        (long long)p->batch, (long long)p->n_ids, p->n_consumers);
    for (int64_t i = 1; i < p->n_ids; i++) /* the reads go in ascending runs; a repeat would count a sample twice */
        if (p->ids[i] <= p->ids[i - 1])
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "runner ids must be ascending and distinct: ids[%lld] = %lld "
                            "after ids[%lld] = %lld", (long long)i, (long long)p->ids[i], (long long)(i - 1),
                            (long long)p->ids[i - 1]);
    const int labelled = p->need_labels; /* labels are read only when needed */
    if (p->need_labels && !ptq_dataset_has_labels(ds))
        return ptq_fail(ctx, PTQ_ERR_DATA, "the data set has no labels, which this run compares predictions with");
    int logits_output = 0;
    if (p->need_logits)
        PTQ_TRY_RET(ptq_session_logits_output(ctx, s, &logits_output));
    int64_t c, h, w;
    ptq_session_input_shape(s, &c, &h, &w);
    /* a model that fixes its batch runs exactly that many at a time, and
     * a pick that does not split into such batches is refused rather than
     * padded (padding would reach the observers) */
    const int64_t fixed = ptq_session_fixed_batch(s);
    if (fixed > 0 && p->n_ids % fixed != 0)
        return ptq_fail(ctx, PTQ_ERR_SHAPE,
                        "the model input '%s' has a fixed batch of %lld but %lld samples were picked; pick a multiple "
                        "of %lld (--limit or --samples)",
                        g->values[g->inputs[0]].name, (long long)fixed, (long long)p->n_ids, (long long)fixed);
    const int64_t sample = c * h * w,
                  batch = fixed > 0 ? fixed : p->n_ids < p->batch ? (p->n_ids ? p->n_ids : 1) : p->batch;
    const int n_bufs = p->prefetch ? 2 : 1;
    const int n_named = ptq_session_named_inputs(s) ? g->n_inputs : 0;
    ptq_tensor named[PTQ_DATASET_MAX_ARRAYS]; /* the named inputs' dtype and sample shape, then each batch's */
    if (n_named > PTQ_DATASET_MAX_ARRAYS)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "the model has %d inputs; ptq feeds at most %d", n_named,
                        PTQ_DATASET_MAX_ARRAYS);
    for (int k = 0; k < n_named; k++) {
        PTQ_TRY_RET(ptq_session_input_meta(ctx, s, k, &named[k], NULL));
        named[k].dims[0] = 1;
    }
    PTQ_TRY_RET(batch_fits(ctx, s, batch, n_bufs));
    /* 8-bit images of the model's size go to the GPU as bytes and are normalized there, unless resize=
     * rescales them (any value but 0 or their shorter side) */
    int planar = 0;
    int64_t dh, dw, dc;
    ptq_dataset_geometry(ds, &dh, &dw, &dc);
    const char *dev_pre = getenv("PTQ_DEVICE_PREPROCESS");
    const int u8 = !n_named && ptq_exec_device(e) == PTQ_DEVICE_CUDA && ptq_dataset_u8(ds, &planar) && dh == h &&
                   dw == w && (pre->resize == 0 || pre->resize == (dh < dw ? dh : dw)) && dc >= 1 && dc <= 4 &&
                   (c == 1 || c == 3) && !(dev_pre && strcmp(dev_pre, "0") == 0);
    ptq_exec_hooks_save(e); /* put back should the run fail */
    outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    if (!outs)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n_bufs; i++) {
        buf[i].img_bytes = dh * dw * dc;
        int named_ok = 1;
        buf[i].n_named = n_named;
        for (int k = 0; k < n_named; k++) {
            buf[i].named_bytes[k] = ptq_tensor_bytes(&named[k]);
            buf[i].as[k] = named[k].dtype;
            named_ok &= (buf[i].named[k] = malloc((size_t)batch * buf[i].named_bytes[k])) != NULL;
        }
        if (u8) /* page-locked: the upload overlaps the host */
            (void)ptq_exec_host_alloc(ctx, e, (size_t)batch * (size_t)buf[i].img_bytes, (void **)&buf[i].u8);
        else if (!n_named) /* named inputs need no image buffer */
            buf[i].x = malloc((size_t)batch * (size_t)sample * sizeof *buf[i].x);
        buf[i].labels = labelled ? malloc((size_t)batch * sizeof *buf[i].labels) : NULL;
        buf[i].ds = ds;
        buf[i].pre = pre;
        buf[i].sample = sample;
        if ((!n_named && !buf[i].x && !buf[i].u8) || !named_ok || (labelled && !buf[i].labels)) {
            st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for a batch of %lld images", (long long)batch);
            goto done;
        }
    }
    ptq_batch b;
    memset(&b, 0, sizeof b);
    b.logits_output = logits_output;
    int64_t n_batches = (p->n_ids + batch - 1) / batch;
    double t_first = 0.0; /* when the first batch was done */
    if (n_batches > 0)
        PTQ_TRY(st, start_read(ctx, &buf[0], p->ids, p->n_ids < batch ? p->n_ids : batch, 0), done);
    for (int64_t i = 0; i < n_batches; i++) {
        slot_buf *cur = &buf[i % n_bufs];
        const int64_t start = i * batch, n = p->n_ids - start < batch ? p->n_ids - start : batch;
        double t0 = ptq_clock_s();
        PTQ_TRY(st, finish_read(ctx, cur), done);
        r.read_s += ptq_clock_s() - t0;
        if (i + 1 < n_batches) {
            const int64_t next = start + batch, n_next = p->n_ids - next < batch ? p->n_ids - next : batch;
            slot_buf *nb = &buf[(i + 1) % n_bufs];
            if (p->prefetch) {
                PTQ_TRY(st, start_read(ctx, nb, p->ids + next, n_next, 1), done);
            }
        }
        ptq_tensor in = {PTQ_DT_FLOAT, 4, {n, c, h, w}, cur->x, PTQ_MEM_HOST, 0};
        if (pre->nhwc) {
            in.dims[1] = h;
            in.dims[2] = w;
            in.dims[3] = c;
        }
        b.index = i;
        b.start = start;
        b.n = n;
        b.ids = p->ids + start;
        const ptq_u8_batch im = {cur->u8, n, h, w, dc, planar};
        for (int k = 0; k < n_named; k++) {
            named[k].dims[0] = n;
            named[k].data = cur->named[k];
        }
        b.inputs = n_named ? named : u8 ? NULL : &in;
        b.images = u8 ? &im : NULL;
        b.labels = cur->labels;
        b.outputs = NULL;
        b.logits = NULL;
        for (int k = 0; k < p->n_consumers; k++)
            if (p->consumers[k].before)
                PTQ_TRY(st, p->consumers[k].before(p->consumers[k].user, ctx, &r, &b), done);
        t0 = ptq_clock_s();
        if (u8) {
            PTQ_TRY(st, ptq_exec_run_u8(ctx, e, &im, pre, outs), done);
        } else {
            PTQ_TRY(st, ptq_exec_run(ctx, e, b.inputs, outs), done);
        }
        r.exec_s += ptq_clock_s() - t0;
        b.outputs = outs;
        if (p->need_logits)
            PTQ_TRY(st, check_logits(ctx, &r, &b), done);
        for (int k = 0; k < p->n_consumers; k++)
            if (p->consumers[k].after)
                PTQ_TRY(st, p->consumers[k].after(p->consumers[k].user, ctx, &r, &b), done);
        if (p->progress)
            p->progress(p->progress_user, start + n, p->n_ids);
        if (i == 0)
            t_first = ptq_clock_s();
        if (!p->prefetch && i + 1 < n_batches) {
            const int64_t next = start + batch, n_next = p->n_ids - next < batch ? p->n_ids - next : batch;
            t0 = ptq_clock_s();
            PTQ_TRY(st, start_read(ctx, &buf[0], p->ids + next, n_next, 0), done);
            r.read_s += ptq_clock_s() - t0;
        }
    }
    for (int k = 0; k < p->n_consumers; k++)
        if (p->consumers[k].end)
            PTQ_TRY(st, p->consumers[k].end(p->consumers[k].user, ctx, &r), done);
    if (p->steady) {
        p->steady->samples = n_batches > 1 ? p->n_ids - batch : 0;
        p->steady->seconds = n_batches > 1 ? ptq_clock_s() - t_first : 0.0;
    }
done:
    for (int i = 0; i < 2; i++) {
        if (buf[i].running) {
            pthread_join(buf[i].thread, NULL);
            buf[i].running = 0;
        }
        free(buf[i].x);
        for (int k = 0; k < buf[i].n_named; k++)
            free(buf[i].named[k]);
        if (buf[i].u8)
            ptq_exec_host_free(e, buf[i].u8);
        free(buf[i].labels);
    }
    free(outs);
    if (st != PTQ_OK) /* the taps and overlay its consumers' end callbacks would have removed */
        ptq_exec_hooks_restore(e);
    return st;
}

ptq_session *ptq_runner_session(const ptq_runner *r)
{
    return r->s;
}

ptq_status ptq_runner_rerun(ptq_ctx *ctx, ptq_runner *r, const ptq_batch *b, ptq_tensor *outputs)
{
    ptq_exec *e = ptq_session_exec(r->s);
    if (b->images)
        return ptq_exec_run_u8(ctx, e, b->images, ptq_session_preprocess(r->s), outputs);
    return ptq_exec_run(ctx, e, b->inputs, outputs);
}

void ptq_runner_seconds(const ptq_runner *r, double *read_s, double *exec_s)
{
    if (read_s)
        *read_s = r->read_s;
    if (exec_s)
        *exec_s = r->exec_s;
}
