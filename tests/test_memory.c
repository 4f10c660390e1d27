/* The memory limit (core/memory.c) and the bounded sample pick
 * (runtime/runner.c ptq_pick_samples): --max-memory's size parsing, the
 * check's status, and a pick whose ids equal a dense seeded partial
 * Fisher-Yates over the whole set (what archives' sample_ids_sha256 record)
 * while it holds only O(samples) memory, even over 3e9 samples. */
#include <stdlib.h>
#include <string.h>

#include "ptq/memory.h"
#include "ptq/runner.h"
#include "testlib.h"

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

/* the pick as ptq did it before: an array of all n ids, swapped in place */
static void dense_pick(int64_t n, int64_t samples, uint64_t seed, int64_t *out)
{
    int64_t *all = malloc((size_t)n * sizeof *all);
    for (int64_t i = 0; i < n; i++)
        all[i] = i;
    uint64_t state = seed;
    for (int64_t i = 0; i < samples; i++) {
        int64_t j = i + (int64_t)(splitmix64(&state) % (uint64_t)(n - i));
        int64_t t = all[i];
        all[i] = all[j];
        all[j] = t;
    }
    memcpy(out, all, (size_t)samples * sizeof *out);
    qsort(out, (size_t)samples, sizeof *out, cmp_i64);
    free(all);
}

static void test_parse(void)
{
    uint64_t b = 0;
    CHECK(ptq_memory_parse("512M", &b) == 0 && b == 512ull << 20);
    CHECK(ptq_memory_parse("2G", &b) == 0 && b == 2ull << 30);
    CHECK(ptq_memory_parse("1.5GiB", &b) == 0 && b == 3ull << 29);
    CHECK(ptq_memory_parse("1000", &b) == 0 && b == 1000);
    CHECK(ptq_memory_parse("-1G", &b) != 0);
    CHECK(ptq_memory_parse("12X", &b) != 0);
    CHECK(ptq_memory_parse("", &b) != 0);
    CHECK(ptq_memory_parse("0", &b) != 0);
    CHECK(ptq_memory_parse("1e30G", &b) != 0);
    CHECK(ptq_memory_parse("0x10", &b) != 0); /* a hex float, which strtod reads as 16 */
    CHECK(ptq_memory_parse("0x1p30", &b) != 0);
}

static void test_check(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    CHECK(ptq_memory_budget() > 0);
    ptq_memory_set_budget(1 << 20);
    CHECK(ptq_memory_budget() == 1 << 20);
    CHECK(ptq_memory_check(&ctx, 1000, "x") == PTQ_OK);
    CHECK(ptq_memory_check(&ctx, 2 << 20, "a thing") == PTQ_ERR_NOMEM && strstr(ctx.msg, "a thing needs"));
    ptq_memory_set_budget(0);
    CHECK(ptq_memory_budget() != 1 << 20);
}

static void test_pick(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    const int64_t totals[] = {1, 2, 7, 100, 1000, 65537};
    for (size_t t = 0; t < sizeof totals / sizeof totals[0]; t++)
        for (uint64_t seed = 0; seed < 5; seed++) {
            int64_t n = totals[t];
            int64_t samples = n > 3 ? n / 3 + (int64_t)seed : 1;
            if (samples >= n)
                samples = n - 1;
            if (samples < 1)
                continue;
            int64_t *want = malloc((size_t)samples * sizeof *want), *got = NULL, n_got = 0;
            dense_pick(n, samples, seed * 7919, want);
            ptq_pick p = {0, samples, seed * 7919, 0, 0};
            CHECK(ptq_pick_samples(&ctx, n, &p, &got, &n_got) == PTQ_OK);
            CHECK_MSG(n_got == samples && memcmp(got, want, (size_t)samples * sizeof *got) == 0,
                      "pick of %lld of %lld, seed %llu", (long long)samples, (long long)n, (unsigned long long)seed);
            free(got);
            free(want);
        }
    /* 16 of 3e9: O(samples) memory, distinct ascending ids in range */
    int64_t *ids = NULL, n_ids = 0;
    ptq_pick big = {0, 16, 3, 0, 0};
    CHECK(ptq_pick_samples(&ctx, 3000000000LL, &big, &ids, &n_ids) == PTQ_OK && n_ids == 16);
    for (int64_t i = 1; ids && i < n_ids; i++)
        CHECK(ids[i] > ids[i - 1] && ids[i] < 3000000000LL);
    free(ids);
    /* the whole of 3e9 ids (24 GB) does not fit a 1 GiB limit: refused before allocating */
    ptq_memory_set_budget(1ull << 30);
    ptq_pick all = {0, 0, 0, 0, 0};
    ids = NULL;
    CHECK(ptq_pick_samples(&ctx, 3000000000LL, &all, &ids, &n_ids) == PTQ_ERR_NOMEM && !ids);
    ptq_memory_set_budget(0);
}

int main(void)
{
    test_parse();
    test_check();
    test_pick();
    return test_done("test_memory");
}
