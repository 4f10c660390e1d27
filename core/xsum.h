/* Exact, order-independent sums of doubles: a fixed-point superaccumulator
 * covering the whole double range (every finite double is an integer
 * multiple of 2^-1074 below 2^1024), so adding terms or merging partial
 * sums in any order or split gives the same value, read out correctly
 * rounded. In core/xsum.c; covered by tests/test_xsum.c. */
#ifndef PTQ_CORE_XSUM_H
#define PTQ_CORE_XSUM_H

#include <stdint.h>

/* Limb i holds bits [32 i, 32 i + 32) of the sum in units of 2^-1074:
 * finite doubles reach bit 2097; the rest is headroom for 2^62 terms. */
#define PTQ_XSUM_LIMBS 68

typedef struct ptq_xsum {
    int64_t limb[PTQ_XSUM_LIMBS]; /* after a carry pass each in [0, 2^32), the top one signed */
    int64_t n_pending;            /* terms added since the last carry pass */
    int64_t n_nonfinite;          /* NaN/Inf terms: counted, never summed */
} ptq_xsum;

void ptq_xsum_init(ptq_xsum *x);

/* x += v exactly; a NaN or an infinity only counts in n_nonfinite. */
void ptq_xsum_add(ptq_xsum *x, double v);

/* into += from exactly (the sums and the non-finite counts). */
void ptq_xsum_merge(ptq_xsum *into, const ptq_xsum *from);

/* An accumulator as PTQ_XSUM_WORDS integers whose element-wise sum over
 * several accumulators is the packing of their merge (the limbs carried, so
 * each is below 2^32 and a sum of up to 2^30 packings cannot overflow; then
 * the non-finite count): how ranks add their sums exactly with an integer
 * reduction (ptq_dist_allreduce_i64). unpack reads such a sum back. */
#define PTQ_XSUM_WORDS (PTQ_XSUM_LIMBS + 1)
void ptq_xsum_pack(const ptq_xsum *x, int64_t *out);
void ptq_xsum_unpack(ptq_xsum *x, const int64_t *in);

/* The exact sum of the finite terms rounded to nearest, ties to even
 * (+-inf beyond the double range); an exact zero reads +0. */
double ptq_xsum_value(const ptq_xsum *x);

#endif
