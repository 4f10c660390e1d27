/* The exact double accumulator (core/xsum.c): hand cases (cancellation,
 * ties to even, sticky bits, subnormals, overflow, non-finite terms), then
 * random terms of wildly different magnitudes summed in several orders and
 * split into merged shards: bit-identical every time and, checked against a
 * naive one-digit-per-bit exact sum, the correctly rounded exact value. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/xsum.h"
#include "testlib.h"

/* ---- the reference: one signed digit per bit, in units of 2^-1074 ---- */

#define REF_BITS 2300

typedef struct ref {
    int32_t d[REF_BITS];
} ref;

/* d += sign * v, bit by bit (v finite), from frexp alone. */
static void ref_add(ref *r, double v, int sign)
{
    if (v == 0)
        return;
    int e;
    double f = frexp(fabs(v), &e); /* |v| = f 2^e, f in [0.5, 1) */
    uint64_t mant = (uint64_t)ldexp(f, 53);
    int pos = e - 53 + 1074;
    while (!(mant & 1)) {
        mant >>= 1;
        pos++;
    }
    if (v < 0)
        sign = -sign;
    for (int b = 0; mant; b++, mant >>= 1)
        if (mant & 1)
            r->d[pos + b] += sign;
}

/* The sign of r's value (-1, 0, 1), its magnitude left in mag as 0/1 digits. */
static int ref_settle(const ref *r, ref *mag)
{
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < REF_BITS; i++)
            mag->d[i] = pass ? -r->d[i] : r->d[i];
        for (int i = 0; i < REF_BITS - 1; i++) {
            int32_t c = (mag->d[i] - (mag->d[i] & 1)) / 2; /* floor */
            mag->d[i] -= 2 * c;
            mag->d[i + 1] += c;
        }
        if (mag->d[REF_BITS - 1] >= 0) {
            for (int i = 0; i < REF_BITS; i++)
                if (mag->d[i])
                    return pass ? -1 : 1;
            return 0;
        }
    }
    return 0; /* not reached: one of a value and its negation is >= 0 */
}

/* A settled magnitude against 2^t (t in bits, may be < 0): -1, 0 or 1. */
static int ref_cmp_pow2(const ref *mag, int t)
{
    int hb = -1, others = 0;
    for (int i = REF_BITS - 1; i >= 0; i--)
        if (mag->d[i]) {
            if (hb < 0)
                hb = i;
            else
                others = 1;
        }
    if (hb < 0)
        return -1;
    if (t < 0 || hb > t)
        return 1;
    return hb < t ? -1 : others;
}

/* Whether r is the exact sum s rounded to nearest, ties to even: the exact
 * error s - r against half an ulp of r (a quarter on the side of a power of
 * two where the spacing halves). */
static int ref_rounds_to(const ref *s, double r)
{
    static ref err, mag;
    if (!isfinite(r))
        return 0;
    err = *s;
    ref_add(&err, r, -1);
    int sign = ref_settle(&err, &mag);
    if (sign == 0)
        return 1;
    if (r == 0)
        return 0; /* every nonzero sum is at least the smallest subnormal */
    int ex;
    frexp(fabs(r), &ex);
    int q = fabs(r) >= DBL_MIN ? ex - 53 : -1074; /* r = m 2^q, m an integer */
    uint64_t m = (uint64_t)ldexp(fabs(r), -q);
    int pos_q = q + 1074;
    if (m == (UINT64_C(1) << 52) && pos_q > 0 && (sign < 0) == (r > 0))
        return ref_cmp_pow2(&mag, pos_q - 2) <= 0;
    int c = ref_cmp_pow2(&mag, pos_q - 1);
    return c < 0 || (c == 0 && !(m & 1));
}

/* ---- helpers ---- */

/* Random sign and significand, biased exponent in [0, max_biased] (0: subnormal). */
static double wild(int max_biased)
{
    uint64_t mant = test_rand_u64() & ((UINT64_C(1) << 52) - 1);
    uint64_t biased = test_rand_u64() % (uint64_t)(max_biased + 1);
    uint64_t bits = mant | biased << 52 | (test_rand_u64() & 1) << 63;
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

static void shuffle(int *idx, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(test_rand_u64() % (uint64_t)(i + 1)), t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}

static int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static double sum_of(const double *v, int n)
{
    ptq_xsum x;
    ptq_xsum_init(&x);
    for (int i = 0; i < n; i++)
        ptq_xsum_add(&x, v[i]);
    return ptq_xsum_value(&x);
}

/* ---- hand cases ---- */

static void test_hand(void)
{
    const double u = ldexp(1, -53), tiny = ldexp(1, -1074);
    CHECK(sum_of((const double[]){1e300, 1, -1e300}, 3) == 1);
    CHECK(sum_of((const double[]){-1e300, -1, 1e300}, 3) == -1);
    CHECK(sum_of((const double[]){1, u}, 2) == 1);                             /* tie: to even */
    CHECK(sum_of((const double[]){1, u, ldexp(1, -1000)}, 3) == 1 + 2 * u);    /* just above the tie */
    CHECK(sum_of((const double[]){1 + 2 * u, u}, 2) == 1 + 4 * u);             /* tie: odd rounds up */
    CHECK(sum_of((const double[]){1, -u / 2, -ldexp(1, -900)}, 3) == 1 - u);   /* below 1 the spacing halves */
    CHECK(sum_of((const double[]){1, -u / 2}, 2) == 1);                        /* a tie there stays on 1 */
    CHECK(sum_of((const double[]){tiny, tiny}, 2) == 2 * tiny);
    CHECK(sum_of((const double[]){DBL_MIN, -tiny}, 2) == DBL_MIN - tiny);      /* largest subnormal */
    CHECK(sum_of((const double[]){tiny, -tiny}, 2) == 0);
    CHECK(sum_of((const double[]){DBL_MAX, DBL_MAX, -DBL_MAX}, 3) == DBL_MAX); /* past the range on the way */
    CHECK(sum_of((const double[]){DBL_MAX, DBL_MAX}, 2) == INFINITY);
    CHECK(sum_of((const double[]){-DBL_MAX, -DBL_MAX}, 2) == -INFINITY);
    CHECK(sum_of((const double[]){DBL_MAX, ldexp(1, 970)}, 2) == INFINITY);    /* tie above an odd largest */
    CHECK(sum_of((const double[]){DBL_MAX, ldexp(1, 969)}, 2) == DBL_MAX);
    double z = sum_of((const double[]){0.0, -0.0}, 2), e = sum_of(NULL, 0);
    CHECK(same_bits(z, 0.0) && same_bits(e, 0.0));

    /* non-finite terms are counted apart, here and through a merge */
    ptq_xsum a, b;
    ptq_xsum_init(&a);
    ptq_xsum_init(&b);
    ptq_xsum_add(&a, 2.5);
    ptq_xsum_add(&a, NAN);
    ptq_xsum_add(&b, INFINITY);
    ptq_xsum_add(&b, -INFINITY);
    ptq_xsum_add(&b, 0.5);
    ptq_xsum_merge(&a, &b);
    CHECK(ptq_xsum_value(&a) == 3.0 && a.n_nonfinite == 3);

    /* 2^20 copies of a full significand: (2^53 - 1) 2^-30 each, exactly (2^53 - 1) 2^-10 in all */
    const double full = ldexp(ldexp(1, 53) - 1, -30);
    ptq_xsum_init(&a);
    for (int i = 0; i < 1 << 20; i++)
        ptq_xsum_add(&a, full);
    CHECK(ptq_xsum_value(&a) == ldexp(ldexp(1, 53) - 1, -10));

    /* the reference itself: it accepts the right rounding and rejects a neighbour */
    static ref s;
    memset(&s, 0, sizeof s);
    ref_add(&s, 1, 1);
    ref_add(&s, u, 1);
    ref_add(&s, ldexp(1, -1000), 1);
    CHECK(ref_rounds_to(&s, 1 + 2 * u) && !ref_rounds_to(&s, 1));
}

/* ---- random sets: every order and split gives the same, correctly rounded value ---- */

#define N_MAX 4000
#define SHARDS_MAX 4

static void check_set(const char *name, const double *v, int n)
{
    static int idx[N_MAX];
    static ref s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < n; i++)
        ref_add(&s, v[i], 1);
    const double want = sum_of(v, n);
    CHECK_MSG(ref_rounds_to(&s, want), "%s: %.17g is not the rounded exact sum", name, want);

    for (int i = 0; i < n; i++)
        idx[i] = n - 1 - i;
    ptq_xsum x;
    ptq_xsum_init(&x);
    for (int i = 0; i < n; i++)
        ptq_xsum_add(&x, v[idx[i]]);
    CHECK_MSG(same_bits(ptq_xsum_value(&x), want), "%s: reversed %.17g vs %.17g", name, ptq_xsum_value(&x), want);

    /* shuffled, cut into 1..4 shards at random points (some empty, some of one term), merged forwards and backwards */
    for (int trial = 0; trial < 12; trial++) {
        shuffle(idx, n);
        int n_shards = 1 + trial % SHARDS_MAX, cut[SHARDS_MAX + 1];
        cut[0] = 0;
        cut[n_shards] = n;
        for (int k = 1; k < n_shards; k++)
            cut[k] = trial == 5 ? 1 : (int)(test_rand_u64() % (uint64_t)(n + 1));
        for (int k = 1; k < n_shards; k++) /* sort the cut points */
            for (int j = k; j > 1 && cut[j - 1] > cut[j]; j--) {
                int t = cut[j];
                cut[j] = cut[j - 1];
                cut[j - 1] = t;
            }
        ptq_xsum shard[SHARDS_MAX], fwd, bwd;
        for (int k = 0; k < n_shards; k++) {
            ptq_xsum_init(&shard[k]);
            for (int i = cut[k]; i < cut[k + 1]; i++)
                ptq_xsum_add(&shard[k], v[idx[i]]);
        }
        ptq_xsum_init(&fwd);
        ptq_xsum_init(&bwd);
        for (int k = 0; k < n_shards; k++) {
            ptq_xsum_merge(&fwd, &shard[k]);
            ptq_xsum_merge(&bwd, &shard[n_shards - 1 - k]);
        }
        double f = ptq_xsum_value(&fwd), b = ptq_xsum_value(&bwd);
        CHECK_MSG(same_bits(f, want) && same_bits(b, want), "%s: trial %d (%d shards): %.17g, %.17g vs %.17g", name,
                  trial, n_shards, f, b, want);
        /* as ranks reduce them: the shards' packings added word by word, then read back */
        int64_t words[PTQ_XSUM_WORDS] = {0}, one[PTQ_XSUM_WORDS];
        for (int k = 0; k < n_shards; k++) {
            ptq_xsum_pack(&shard[k], one);
            for (int w = 0; w < PTQ_XSUM_WORDS; w++)
                words[w] += one[w];
        }
        ptq_xsum packed;
        ptq_xsum_unpack(&packed, words);
        ptq_xsum_add(&packed, 0.0); /* still an accumulator that takes terms */
        double p = ptq_xsum_value(&packed);
        CHECK_MSG(same_bits(p, want) && packed.n_nonfinite == fwd.n_nonfinite,
                  "%s: trial %d (%d shards) packed: %.17g vs %.17g", name, trial, n_shards, p, want);
    }
}

static void test_random(void)
{
    static double v[N_MAX];
    int n_differ = 0; /* sets where a plain double sum is off: the data has teeth */

    for (int rep = 0; rep < 4; rep++) {
        const int n = 3000;
        for (int i = 0; i < n; i++) /* the whole range, subnormals included, short of overflow */
            v[i] = wild(2020);
        check_set("wild", v, n);

        for (int i = 0; i < 1500; i++) { /* pairs that cancel, and small terms that decide the sum */
            v[i] = wild(2020);
            v[1500 + i] = -v[i];
        }
        for (int i = 0; i < 100; i++)
            v[3000 + i] = wild(1100);
        static int idx[N_MAX];
        static double w[N_MAX];
        for (int i = 0; i < 3100; i++)
            idx[i] = i;
        shuffle(idx, 3100);
        double naive = 0;
        for (int i = 0; i < 3100; i++) {
            w[i] = v[idx[i]];
            naive += w[i];
        }
        check_set("cancel", w, 3100);
        n_differ += !same_bits(naive, sum_of(w, 3100));

        for (int i = 0; i < N_MAX; i++) { /* like SQNR terms: squares of logits */
            double l = (double)test_rand_uniform(-20, 20);
            v[i] = l * l;
        }
        check_set("squares", v, N_MAX);

        for (int i = 0; i < 1000; i++)
            v[i] = wild(1); /* subnormals and the smallest normals */
        check_set("subnormal", v, 1000);
    }
    CHECK_MSG(n_differ == 4, "a plain double sum matched the exact one in %d of 4 cancelling sets", 4 - n_differ);
}

int main(void)
{
    test_rand_seed(11);
    test_hand();
    test_random();
    return test_done("test_xsum");
}
