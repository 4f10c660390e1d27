/* Observers (observers/observer.c): hand-computed bins, edges and growth,
 * zeros/NaN/Inf counted and not binned, min/max; then the exactness
 * property: the same 1M seeded values fed in one batch, in random batch
 * sizes, in reversed and shuffled batch order, under several pool sizes, and
 * as 3 shards merged in different orders give bit-identical state, equal to
 * binning every value directly at the final range. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "ptq/observer.h"
#include "testlib.h"

#define N_VALUES (1 << 20)

static void *alloc_or_die(size_t n_bytes)
{
    void *p = calloc(1, n_bytes ? n_bytes : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static ptq_observer *make(int64_t n_bins)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_observer *o = NULL;
    if (ptq_observer_init(&ctx, n_bins, &o) != PTQ_OK) {
        fprintf(stderr, "observer init: %s\n", ctx.msg);
        exit(1);
    }
    return o;
}

static void feed(ptq_observer *o, const float *x, int64_t n)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = ptq_observer_update(&ctx, o, x, n);
    CHECK_MSG(st == PTQ_OK, "update: %s", ctx.msg);
}

static int64_t bin_count(const ptq_observer *o, int64_t i)
{
    return ptq_observer_hist(o)[i];
}

static int64_t hist_sum(const ptq_observer *o)
{
    int64_t s = 0;
    for (int64_t i = 0; i < ptq_observer_n_bins(o); i++)
        s += ptq_observer_hist(o)[i];
    return s;
}

static int same_float_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static void check_init(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_observer *o = NULL;
    CHECK(ptq_observer_init(&ctx, 0, &o) == PTQ_OK && o && ptq_observer_n_bins(o) == 4096);
    ptq_observer_free(o);
    CHECK(ptq_observer_init(&ctx, 3000, &o) == PTQ_ERR_INVALID_ARG && !o);
    CHECK_MSG(strstr(ctx.msg, "3000") != NULL, "message: %s", ctx.msg);
    CHECK(ptq_observer_init(&ctx, 1024, &o) == PTQ_ERR_INVALID_ARG && !o);
    CHECK(ptq_observer_init(&ctx, -4096, &o) == PTQ_ERR_INVALID_ARG && !o);
    CHECK(ptq_observer_init(&ctx, 2048, &o) == PTQ_OK && ptq_observer_n_bins(o) == 2048);
    ptq_observer_free(o);
    ptq_observer_free(NULL);

    o = make(0);
    ptq_observer_stats s;
    ptq_observer_get_stats(o, &s);
    CHECK(s.count == 0 && s.n_binned == 0 && s.min == INFINITY && s.max == -INFINITY);
    CHECK(ptq_observer_range_max(o) == 0.0 && ptq_observer_exponent(o) == 0 && hist_sum(o) == 0);
    CHECK(ptq_observer_update(&ctx, o, NULL, 0) == PTQ_OK);
    CHECK(ptq_observer_update(&ctx, o, NULL, 5) == PTQ_ERR_INVALID_ARG);
    const float one = 1.0f;
    CHECK(ptq_observer_update(&ctx, o, &one, -1) == PTQ_ERR_INVALID_ARG);
    ptq_observer_get_stats(o, &s);
    CHECK(s.count == 0);
    ptq_observer_free(o);
}

static void check_hand_cases(void)
{
    ptq_observer_stats s;
    ptq_observer *o = make(4096);
    const float a[] = {0.5f};
    feed(o, a, 1); /* e = 0: 0.5 is the edge of bin 2048 */
    CHECK(ptq_observer_exponent(o) == 0 && ptq_observer_range_max(o) == 1.0);
    CHECK(bin_count(o, 2048) == 1 && hist_sum(o) == 1);

    const float b[] = {0.25f, -0.75f, 0x1.fffffep-1f /* just below 1 */, 0x1p-12f, 0x1.fffffep-13f};
    feed(o, b, 5);
    CHECK(ptq_observer_exponent(o) == 0);
    CHECK(bin_count(o, 1024) == 1 && bin_count(o, 3072) == 1 && bin_count(o, 4095) == 1);
    CHECK(bin_count(o, 1) == 1 && bin_count(o, 0) == 1 && hist_sum(o) == 6);
    ptq_observer_get_stats(o, &s);
    CHECK(s.min == -0.75f && s.max == 0x1.fffffep-1f && s.count == 6 && s.n_binned == 6);

    const float c[] = {1.0f}; /* exactly 2^e: the range doubles, bins merge in pairs */
    feed(o, c, 1);
    CHECK(ptq_observer_exponent(o) == 1 && ptq_observer_range_max(o) == 2.0);
    CHECK(bin_count(o, 2048) == 1);                          /* 1.0 */
    CHECK(bin_count(o, 1024) == 1 && bin_count(o, 512) == 1); /* 0.5, 0.25 */
    CHECK(bin_count(o, 1536) == 1 && bin_count(o, 2047) == 1); /* 0.75, 0.99999994 */
    CHECK(bin_count(o, 0) == 2 && hist_sum(o) == 7);          /* 2^-12 and just below join bin 0 */

    const float sp[] = {0.0f, -0.0f, NAN, INFINITY, -INFINITY, -0.0f};
    feed(o, sp, 6);
    ptq_observer_get_stats(o, &s);
    CHECK(s.count == 13 && s.n_zero == 3 && s.n_nan == 1 && s.n_inf == 2 && s.n_binned == 7);
    CHECK(hist_sum(o) == 7 && s.min == -0.75f && s.max == 1.0f);
    ptq_observer_free(o);

    /* a jump of more than log2(bins) exponents collapses the old bins into bin 0 */
    o = make(4096);
    const float d[] = {0.5f, -0.75f};
    const float big[] = {1e6f}; /* 2^19 <= 1e6 < 2^20 */
    feed(o, d, 2);
    feed(o, big, 1);
    CHECK(ptq_observer_exponent(o) == 20 && bin_count(o, 0) == 2 && bin_count(o, 3906) == 1 && hist_sum(o) == 3);
    ptq_observer_free(o);

    /* only zeros: min is -0, max +0, in either order; nothing binned */
    const float z1[] = {0.0f, -0.0f}, z2[] = {-0.0f, 0.0f};
    ptq_observer *p = make(0), *q = make(0);
    feed(p, z1, 2);
    feed(q, z2, 2);
    ptq_observer_get_stats(p, &s);
    CHECK(s.n_zero == 2 && s.n_binned == 0 && signbit(s.min) && s.min == 0.0f && !signbit(s.max) && s.max == 0.0f);
    CHECK(ptq_observer_range_max(p) == 0.0 && hist_sum(p) == 0);
    ptq_observer_stats t;
    ptq_observer_get_stats(q, &t);
    CHECK(same_float_bits(s.min, t.min) && same_float_bits(s.max, t.max));
    ptq_observer_free(p);
    ptq_observer_free(q);

    /* only NaN: counted, no range, min/max stay +Inf/-Inf */
    o = make(0);
    const float nan1[] = {NAN, -NAN};
    feed(o, nan1, 2);
    ptq_observer_get_stats(o, &s);
    CHECK(s.count == 2 && s.n_nan == 2 && s.n_binned == 0 && s.min == INFINITY && s.max == -INFINITY);
    CHECK(ptq_observer_range_max(o) == 0.0 && hist_sum(o) == 0);
    ptq_observer_free(o);

    /* the smallest subnormal: e = -148 (scale 2^160, beyond float), bin 2048 */
    o = make(4096);
    const float sub[] = {0x1p-149f, -0x1p-148f};
    feed(o, sub, 1);
    CHECK(ptq_observer_exponent(o) == -148 && bin_count(o, 2048) == 1);
    CHECK(ptq_observer_range_max(o) == ldexp(1.0, -148));
    feed(o, sub + 1, 1); /* 2^-148 = 2^e: regrow by one */
    CHECK(ptq_observer_exponent(o) == -147 && bin_count(o, 1024) == 1 && bin_count(o, 2048) == 1);
    ptq_observer_get_stats(o, &s);
    CHECK(s.min == -0x1p-148f && s.max == 0x1p-149f);
    /* then the largest float: e = 128, everything so far in bin 0 */
    const float huge[] = {FLT_MAX};
    feed(o, huge, 1);
    CHECK(ptq_observer_exponent(o) == 128 && ptq_observer_range_max(o) == ldexp(1.0, 128));
    CHECK(bin_count(o, 0) == 2 && bin_count(o, 4095) == 1 && hist_sum(o) == 3);
    ptq_observer_free(o);

    /* 2048 bins: 0.5 with e = 0 is bin 1024 */
    o = make(2048);
    feed(o, a, 1);
    CHECK(ptq_observer_exponent(o) == 0 && bin_count(o, 1024) == 1);
    ptq_observer_free(o);
}

static void check_merge_basics(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_observer *a = make(4096), *b = make(2048), *c = make(4096), *e = make(4096);
    const float x[] = {0.5f, 3.0f}, y[] = {0.25f, -0.0f, NAN};
    feed(a, x, 2); /* e = 2: 0.5 -> 512, 3 -> 3072 */
    feed(b, x, 2);
    CHECK(ptq_observer_merge(&ctx, a, b) == PTQ_ERR_INVALID_ARG);
    CHECK_MSG(strstr(ctx.msg, "4096") && strstr(ctx.msg, "2048"), "message: %s", ctx.msg);
    ptq_observer_stats s;
    ptq_observer_get_stats(a, &s);
    CHECK(s.count == 2 && hist_sum(a) == 2 && ptq_observer_exponent(a) == 2);

    feed(c, y, 3); /* e = -1: 0.25 -> 2048 */
    CHECK(ptq_observer_merge(&ctx, a, c) == PTQ_OK);
    CHECK(ptq_observer_exponent(a) == 2 && bin_count(a, 512) == 1 && bin_count(a, 3072) == 1);
    CHECK(bin_count(a, 256) == 1 && hist_sum(a) == 3);
    ptq_observer_get_stats(a, &s);
    CHECK(s.count == 5 && s.n_zero == 1 && s.n_nan == 1 && s.min == -0.0f && s.max == 3.0f);
    CHECK(ptq_observer_merge(&ctx, e, c) == PTQ_OK && ptq_observer_exponent(e) == -1 && bin_count(e, 2048) == 1);
    CHECK(ptq_observer_merge(&ctx, e, b) == PTQ_ERR_INVALID_ARG);
    ptq_observer_free(a);
    ptq_observer_free(b);
    ptq_observer_free(c);
    ptq_observer_free(e);
}

/* --- the exactness property ------------------------------------------- */

static float rand_normal(void)
{
    float u1 = test_rand_uniform(0.0f, 1.0f), u2 = test_rand_uniform(0.0f, 1.0f);
    return sqrtf(-2.0f * logf(1.0f - u1)) * cosf(6.2831853f * u2);
}

typedef enum { SET_MIXED, SET_RELU, SET_TINY, SET_HEAVY, SET_ASCENDING, N_SETS } data_set;
static const char *const set_names[N_SETS] = {"mixed", "relu", "tiny", "heavy-tail", "ascending"};

static float draw(data_set kind, int64_t i)
{
    const float u = test_rand_uniform(0.0f, 1.0f);
    switch (kind) {
    case SET_RELU: return u < 0.5f ? 0.0f : fabsf(rand_normal()) * 3.0f;
    case SET_TINY: /* ~1e-30 and subnormals, both signs */
        return u < 0.5f ? rand_normal() * 1e-30f : test_rand_uniform(-1e-38f, 1e-38f);
    case SET_HEAVY: { /* Cauchy */
        float t = tanf(3.1415926f * (test_rand_uniform(0.0f, 1.0f) - 0.5f));
        return u < 0.001f ? -0.0f : t;
    }
    case SET_ASCENDING: /* magnitudes growing from 2^-140 to 2^120: the range grows all along */
        return (u < 0.5f ? -1.0f : 1.0f) * ldexpf(1.0f + test_rand_uniform(0.0f, 1.0f), -140 + (int)(i * 260 / N_VALUES));
    case SET_MIXED:
    case N_SETS: break;
    }
    if (u < 0.3f)
        return rand_normal();
    if (u < 0.5f)
        return 0.0f;
    if (u < 0.6f)
        return rand_normal() * 1e-30f;
    if (u < 0.65f)
        return test_rand_uniform(-1e-38f, 1e-38f);
    if (u < 0.7f)
        return rand_normal() * 1e30f;
    if (u < 0.8f)
        return tanf(3.1415926f * (test_rand_uniform(0.0f, 1.0f) - 0.5f));
    if (u < 0.8005f)
        return NAN;
    if (u < 0.801f)
        return u < 0.8008f ? INFINITY : -INFINITY;
    if (u < 0.802f)
        return -0.0f;
    return rand_normal() * 1e-3f;
}

typedef struct batching {
    int64_t n;
    int64_t *start, *len; /* [n] */
} batching;

/* Batches covering [begin, end) in random sizes: a fifth tiny (0..9), the
 * rest log-uniform in [1, 100k) (about 150 batches per million values). */
static batching random_batches(int64_t begin, int64_t end)
{
    batching b = {0, alloc_or_die(sizeof(int64_t) * 40000), alloc_or_die(sizeof(int64_t) * 40000)};
    int64_t at = begin;
    while (at < end && b.n < 39999) {
        float u = test_rand_uniform(0.0f, 1.0f);
        int64_t len = u < 0.2f ? (int64_t)test_rand_uniform(0.0f, 10.0f)
                               : (int64_t)expf(test_rand_uniform(0.0f, 11.5f));
        if (len > end - at)
            len = end - at;
        b.start[b.n] = at;
        b.len[b.n++] = len;
        at += len;
    }
    b.start[b.n] = at; /* the rest, if the batch cap was hit */
    b.len[b.n++] = end - at;
    return b;
}

static void feed_batches(ptq_observer *o, const float *x, const batching *b, const int64_t *order)
{
    for (int64_t i = 0; i < b->n; i++) {
        int64_t k = order ? order[i] : i;
        feed(o, x + b->start[k], b->len[k]);
    }
}

static int same_state(const char *label, const ptq_observer *got, const ptq_observer *want)
{
    ptq_observer_stats g, w;
    ptq_observer_get_stats(got, &g);
    ptq_observer_get_stats(want, &w);
    int ok = g.count == w.count && g.n_zero == w.n_zero && g.n_nan == w.n_nan && g.n_inf == w.n_inf &&
             g.n_binned == w.n_binned && same_float_bits(g.min, w.min) && same_float_bits(g.max, w.max) &&
             ptq_observer_exponent(got) == ptq_observer_exponent(want) &&
             ptq_observer_n_bins(got) == ptq_observer_n_bins(want) &&
             memcmp(ptq_observer_hist(got), ptq_observer_hist(want),
                    (size_t)ptq_observer_n_bins(want) * sizeof(int64_t)) == 0;
    CHECK_MSG(ok, "%s: state differs (e %d vs %d, binned %lld vs %lld, min %g vs %g)", label,
              ptq_observer_exponent(got), ptq_observer_exponent(want), (long long)g.n_binned, (long long)w.n_binned,
              g.min, w.min);
    return ok;
}

/* Independent of observers/: bins every value directly at the final range. */
static void check_direct(const char *label, const ptq_observer *o, const float *x, int64_t n)
{
    const int64_t n_bins = ptq_observer_n_bins(o);
    int log2_bins = 0;
    while (((int64_t)1 << log2_bins) < n_bins)
        log2_bins++;
    int64_t zero = 0, nan = 0, inf = 0, binned = 0;
    float amax = 0.0f, mn = INFINITY, mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        if (isnan(v)) {
            nan++;
        } else if (isinf(v)) {
            inf++;
        } else {
            zero += v == 0.0f;
            binned += v != 0.0f;
            amax = fmaxf(amax, fabsf(v));
            if (v < mn || (v == mn && signbit(v)))
                mn = v;
            if (v > mx || (v == mx && !signbit(v)))
                mx = v;
        }
    }
    int e = 0;
    frexpf(amax, &e);
    int64_t *h = alloc_or_die((size_t)n_bins * sizeof *h);
    for (int64_t i = 0; i < n; i++)
        if (isfinite(x[i]) && x[i] != 0.0f)
            h[(int64_t)floor(ldexp(fabs((double)x[i]), log2_bins - e))]++;
    ptq_observer_stats s;
    ptq_observer_get_stats(o, &s);
    CHECK_MSG(s.count == n && s.n_zero == zero && s.n_nan == nan && s.n_inf == inf && s.n_binned == binned, "%s",
              label);
    CHECK_MSG(same_float_bits(s.min, mn) && same_float_bits(s.max, mx), "%s: min/max %g %g vs %g %g", label, s.min,
              s.max, mn, mx);
    CHECK_MSG(ptq_observer_exponent(o) == e, "%s: exponent %d, direct %d", label, ptq_observer_exponent(o), e);
    CHECK_MSG(memcmp(h, ptq_observer_hist(o), (size_t)n_bins * sizeof *h) == 0, "%s: histogram differs", label);
    free(h);
}

static void shuffle(int64_t *a, int64_t n)
{
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)test_rand_uniform(0.0f, (float)(i + 1));
        if (j > i)
            j = i;
        int64_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

static void merge_into(ptq_observer *dst, const ptq_observer *src)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = ptq_observer_merge(&ctx, dst, src);
    CHECK_MSG(st == PTQ_OK, "merge: %s", ctx.msg);
}

static void check_property(data_set kind, int64_t n_bins, const int *pools, int n_pools)
{
    char label[128];
    float *x = alloc_or_die(sizeof(float) * N_VALUES);
    test_rand_seed(1234 + (uint64_t)kind);
    for (int64_t i = 0; i < N_VALUES; i++)
        x[i] = draw(kind, i);

    ptq_par_set_workers(pools[0]);
    ptq_observer *whole = make(n_bins);
    feed(whole, x, N_VALUES);
    snprintf(label, sizeof label, "%s/%lld bins: one batch vs direct binning", set_names[kind], (long long)n_bins);
    check_direct(label, whole, x, N_VALUES);

    for (int p = 1; p < n_pools; p++) { /* thread count */
        ptq_par_set_workers(pools[p]);
        ptq_observer *o = make(n_bins);
        feed(o, x, N_VALUES);
        snprintf(label, sizeof label, "%s: one batch, %d workers", set_names[kind], pools[p]);
        same_state(label, o, whole);
        ptq_observer_free(o);
    }

    batching b = random_batches(0, N_VALUES);
    int64_t *order = alloc_or_die(sizeof(int64_t) * (size_t)b.n);
    for (int64_t i = 0; i < b.n; i++)
        order[i] = b.n - 1 - i;
    ptq_observer *o1 = make(n_bins), *o2 = make(n_bins), *o3 = make(n_bins);
    ptq_par_set_workers(pools[n_pools - 1]);
    feed_batches(o1, x, &b, NULL);
    feed_batches(o2, x, &b, order);
    shuffle(order, b.n);
    ptq_par_set_workers(pools[0]);
    feed_batches(o3, x, &b, order);
    snprintf(label, sizeof label, "%s: %lld random batches", set_names[kind], (long long)b.n);
    same_state(label, o1, whole);
    snprintf(label, sizeof label, "%s: reversed batches", set_names[kind]);
    same_state(label, o2, whole);
    snprintf(label, sizeof label, "%s: shuffled batches", set_names[kind]);
    same_state(label, o3, whole);

    /* 3 shards at random cuts, each in its own random batches */
    int64_t cut1 = (int64_t)test_rand_uniform(0.0f, (float)N_VALUES / 2);
    int64_t cut2 = cut1 + (int64_t)test_rand_uniform(0.0f, (float)N_VALUES / 2);
    const int64_t cuts[4] = {0, cut1, cut2, N_VALUES};
    ptq_observer *shard[3];
    for (int s = 0; s < 3; s++) {
        ptq_par_set_workers(pools[s % n_pools]);
        shard[s] = make(n_bins);
        batching bs = random_batches(cuts[s], cuts[s + 1]);
        feed_batches(shard[s], x, &bs, NULL);
        free(bs.start);
        free(bs.len);
    }
    static const int orders[4][3] = {{0, 1, 2}, {2, 1, 0}, {1, 2, 0}, {2, 0, 1}};
    for (int k = 0; k < 4; k++) { /* into an empty observer */
        ptq_observer *m = make(n_bins);
        for (int s = 0; s < 3; s++)
            merge_into(m, shard[orders[k][s]]);
        snprintf(label, sizeof label, "%s: shards merged %d,%d,%d", set_names[kind], orders[k][0], orders[k][1],
                 orders[k][2]);
        same_state(label, m, whole);
        ptq_observer_free(m);
    }
    /* (c + b) + a, into shard c itself, with an empty observer merged too */
    ptq_observer *empty = make(n_bins);
    merge_into(shard[2], shard[1]);
    merge_into(shard[2], empty);
    merge_into(shard[2], shard[0]);
    snprintf(label, sizeof label, "%s: shards merged in place (2+1)+0", set_names[kind]);
    same_state(label, shard[2], whole);

    for (int s = 0; s < 3; s++)
        ptq_observer_free(shard[s]);
    ptq_observer_free(empty);
    ptq_observer_free(o1);
    ptq_observer_free(o2);
    ptq_observer_free(o3);
    ptq_observer_free(whole);
    free(order);
    free(b.start);
    free(b.len);
    free(x);
}

/* ptq_observer_update_copies(x, c) is c updates with x: before any value, below, inside and beyond the range
 * held, with zeros, -0, NaN and Inf; 0 copies observes nothing; a count past 2^61 is refused. */
static void check_copies(void)
{
    static const float x[] = {0.3f, -0.0f, 0.0f, NAN, INFINITY, -1.5f, 0x1p-20f, 0.7f, -0.01f};
    static const float before[][2] = {{0.0f, 0.0f}, {1e-3f, -2e-3f}, {100.0f, -0.5f}, {3.0f, NAN}};
    const int64_t n = (int64_t)(sizeof x / sizeof x[0]);
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    for (int b = 0; b < 4; b++) {
        for (int64_t copies = 0; copies <= 130; copies += copies < 3 ? 1 : 127) {
            ptq_observer *got = make(4096), *want = make(4096);
            const int64_t n_before = b == 0 ? 0 : 2;
            feed(got, before[b], n_before);
            feed(want, before[b], n_before);
            CHECK(ptq_observer_update_copies(&ctx, got, x, n, copies) == PTQ_OK);
            for (int64_t c = 0; c < copies; c++)
                feed(want, x, n);
            char label[64];
            snprintf(label, sizeof label, "copies %lld after set %d", (long long)copies, b);
            same_state(label, got, want);
            ptq_observer_free(got);
            ptq_observer_free(want);
        }
    }
    ptq_observer *o = make(4096);
    CHECK(ptq_observer_update_copies(&ctx, o, x, n, (int64_t)1 << 60) == PTQ_ERR_INVALID_ARG);
    CHECK(ptq_observer_update_copies(&ctx, o, x, n, -1) == PTQ_ERR_INVALID_ARG);
    ptq_observer_stats s;
    ptq_observer_get_stats(o, &s);
    CHECK(s.count == 0);
    ptq_observer_free(o);
}

int main(void)
{
    const int saved_workers = ptq_par_workers();
    check_init();
    check_hand_cases();
    check_merge_basics();
    check_copies();
    static const int pools[] = {1, 3, 8};
    for (int k = 0; k < N_SETS; k++)
        check_property((data_set)k, 4096, pools, 3);
    check_property(SET_MIXED, 2048, pools, 3);
    check_property(SET_ASCENDING, 65536, pools, 3);
    ptq_par_set_workers(saved_workers);
    return test_done("test_observer");
}
