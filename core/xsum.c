/* Exact sums of doubles in a fixed-point superaccumulator: each term's
 * 53-bit significand lands, shifted, in three 32-bit digits held in int64
 * limbs (so carries can wait), a carry pass every 2^28 terms keeps every
 * limb below 2^62, and the read-out rounds the exact integer once. See
 * core/xsum.h. Covered by tests/test_xsum.c. */
#include <math.h>
#include <string.h>

#include "core/xsum.h"

#define DIGIT_BITS 32
#define DIGIT_MASK 0xFFFFFFFFu
#define DIGIT_RADIX 4294967296.0 /* 2^32, exact as a double */
/* One term adds less than 2^33 to any limb: after this many terms a limb
 * that started in [0, 2^32) is still below 2^61, and two such limbs (a
 * merge) below 2^62. */
#define PENDING_MAX (INT64_C(1) << 28)
#define EXP_MIN (-1074) /* the weight of bit 0: the smallest subnormal */
#define MANT_BITS 53

void ptq_xsum_init(ptq_xsum *x)
{
    memset(x, 0, sizeof *x);
}

/* Propagates carries so that every limb but the top one is in [0, 2^32). */
static void carry(ptq_xsum *x)
{
    int64_t c = 0;
    for (int i = 0; i < PTQ_XSUM_LIMBS - 1; i++) {
        int64_t v = x->limb[i] + c;
        int64_t low = (int64_t)((uint64_t)v & DIGIT_MASK);
        x->limb[i] = low;
        c = (v - low) / ((int64_t)1 << DIGIT_BITS); /* exact: floor of v / 2^32 */
    }
    x->limb[PTQ_XSUM_LIMBS - 1] += c;
    x->n_pending = 0;
}

void ptq_xsum_add(ptq_xsum *x, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    int biased = (int)((bits >> 52) & 0x7FF);
    if (biased == 0x7FF) {
        x->n_nonfinite++;
        return;
    }
    uint64_t mant = bits & ((UINT64_C(1) << 52) - 1);
    if (biased != 0)
        mant |= UINT64_C(1) << 52;
    if (mant == 0)
        return;
    /* v = +-mant * 2^(pos + EXP_MIN): a subnormal has pos 0, a normal biased - 1 */
    int pos = biased ? biased - 1 : 0;
    int i = pos / DIGIT_BITS, shift = pos % DIGIT_BITS;
    uint64_t lo = (mant & DIGIT_MASK) << shift, hi = (mant >> DIGIT_BITS) << shift; /* < 2^63, < 2^53 */
    int64_t d0 = (int64_t)(lo & DIGIT_MASK);
    int64_t d1 = (int64_t)(lo >> DIGIT_BITS) + (int64_t)(hi & DIGIT_MASK);
    int64_t d2 = (int64_t)(hi >> DIGIT_BITS);
    if (bits >> 63) {
        d0 = -d0;
        d1 = -d1;
        d2 = -d2;
    }
    x->limb[i] += d0;
    x->limb[i + 1] += d1;
    x->limb[i + 2] += d2;
    if (++x->n_pending >= PENDING_MAX)
        carry(x);
}

void ptq_xsum_merge(ptq_xsum *into, const ptq_xsum *from)
{
    for (int i = 0; i < PTQ_XSUM_LIMBS; i++)
        into->limb[i] += from->limb[i];
    into->n_nonfinite += from->n_nonfinite;
    carry(into);
}

void ptq_xsum_pack(const ptq_xsum *x, int64_t *out)
{
    ptq_xsum m = *x;
    carry(&m);
    memcpy(out, m.limb, sizeof m.limb);
    out[PTQ_XSUM_LIMBS] = m.n_nonfinite;
}

void ptq_xsum_unpack(ptq_xsum *x, const int64_t *in)
{
    memcpy(x->limb, in, sizeof x->limb);
    x->n_nonfinite = in[PTQ_XSUM_LIMBS];
    carry(x);
}

static int bit_at(const ptq_xsum *x, int b)
{
    return (int)((x->limb[b / DIGIT_BITS] >> (b % DIGIT_BITS)) & 1);
}

/* Whether any bit below bit b is set (limbs in [0, 2^32)). */
static int any_below(const ptq_xsum *x, int b)
{
    for (int i = 0; i < b / DIGIT_BITS; i++)
        if (x->limb[i])
            return 1;
    return (x->limb[b / DIGIT_BITS] & (((int64_t)1 << (b % DIGIT_BITS)) - 1)) != 0;
}

double ptq_xsum_value(const ptq_xsum *x)
{
    ptq_xsum m = *x;
    carry(&m);
    int negative = m.limb[PTQ_XSUM_LIMBS - 1] < 0;
    if (negative) { /* the magnitude: negate every limb and carry again */
        for (int i = 0; i < PTQ_XSUM_LIMBS; i++)
            m.limb[i] = -m.limb[i];
        carry(&m);
    }
    int top = PTQ_XSUM_LIMBS - 1;
    while (top >= 0 && m.limb[top] == 0)
        top--;
    if (top < 0)
        return 0.0;
    int h = top * DIGIT_BITS; /* the highest set bit */
    for (int64_t v = m.limb[top] >> 1; v; v >>= 1)
        h++;
    double r;
    if (h < MANT_BITS) { /* fewer than 54 bits: exact (a subnormal or the smallest normals) */
        uint64_t u = (uint64_t)m.limb[0] | ((uint64_t)m.limb[1] << DIGIT_BITS);
        r = ldexp((double)u, EXP_MIN);
    } else {
        uint64_t sig = 0;
        for (int b = h; b > h - MANT_BITS; b--)
            sig = sig << 1 | (uint64_t)bit_at(&m, b);
        int lsb = h - MANT_BITS + 1;
        if (bit_at(&m, lsb - 1) && ((sig & 1) || any_below(&m, lsb - 1)))
            sig++; /* 2^53 at most: still exact as a double */
        r = ldexp((double)sig, lsb + EXP_MIN); /* +inf past the largest double */
    }
    return negative ? -r : r;
}
