/* Parity of ptq_k_transpose_cpu (rows over the pool, memcpy or strided
 * gathers) with ptq_k_transpose_ref: byte for byte, on seeded random shapes
 * of 1 to 6 dims (sizes 0 to 7) under random permutations, elements of 1,
 * 2, 3, 4 and 8 bytes, pool sizes 1, 2 and 5; and on attention-sized
 * transposes ([64, 50, 4, 16] heads out and keys transposed) large enough
 * to split over the pool. */
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "kernels/kernels.h"
#include "testlib.h"

/* xorshift for shapes and permutations (testlib's generator fills data) */
static uint32_t state = 2463534242u;

static uint32_t next(void)
{
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return state;
}

static void check(const char *what, size_t eb, int ndim, const int64_t *dims, const int64_t *perm, int pool)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= dims[d];
    const size_t bytes = (size_t)n * eb;
    unsigned char *x = malloc(bytes + 1), *y_ref = malloc(bytes + 1), *y_cpu = malloc(bytes + 1);
    CHECK(x && y_ref && y_cpu);
    if (x && y_ref && y_cpu) {
        for (size_t i = 0; i < bytes; i++)
            x[i] = (unsigned char)next();
        memset(y_ref, 0xAB, bytes + 1);
        memset(y_cpu, 0xCD, bytes + 1);
        y_cpu[bytes] = y_ref[bytes] = 0x5A; /* a guard byte past the output */
        ptq_par_set_workers(pool);
        ptq_k_transpose_ref(eb, ndim, dims, perm, x, y_ref);
        ptq_k_transpose_cpu(eb, ndim, dims, perm, x, y_cpu);
        char shape[128] = "";
        for (int d = 0; d < ndim; d++)
            snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld/p%lld", d ? " " : "",
                     (long long)dims[d], (long long)perm[d]);
        CHECK_MSG(memcmp(y_cpu, y_ref, bytes) == 0 && y_cpu[bytes] == 0x5A, "%s: %zu-byte elements, [%s], pool %d",
                  what, eb, shape, pool);
    }
    free(x);
    free(y_ref);
    free(y_cpu);
}

int main(void)
{
    const int saved = ptq_par_workers();
    static const size_t sizes[] = {1, 2, 3, 4, 8};
    static const int pools[] = {1, 2, 5};
    for (int t = 0; t < 400; t++) {
        const int ndim = 1 + (int)(next() % 6);
        int64_t dims[6], perm[6];
        for (int d = 0; d < ndim; d++) {
            dims[d] = (int64_t)(next() % 8);
            if (t % 5 != 0 && dims[d] == 0)
                dims[d] = 1; /* mostly non-empty */
            perm[d] = d;
        }
        for (int d = ndim - 1; d > 0; d--) { /* Fisher-Yates */
            const int k = (int)(next() % (uint32_t)(d + 1));
            const int64_t p = perm[d];
            perm[d] = perm[k];
            perm[k] = p;
        }
        check("random", sizes[t % 5], ndim, dims, perm, pools[t % 3]);
    }
    /* attention: heads out of [batch, tokens, heads, dim], keys transposed, and the inverse */
    static const int64_t att[4] = {64, 50, 4, 16}, heads[4] = {0, 2, 1, 3}, keys[4] = {0, 1, 3, 2};
    static const int64_t back[4] = {64, 4, 50, 16};
    for (int p = 0; p < 3; p++) {
        check("attention heads", 4, 4, att, heads, pools[p]);
        check("attention keys", 4, 4, att, keys, pools[p]);
        check("attention back", 4, 4, back, heads, pools[p]);
    }
    /* the last two dims swapped (AVX-512's 16 x 16 blocks): 16 rows and more, columns in blocks and masked tails,
     * pieces that start and end mid-block (pool 5) */
    static const int64_t sq[4] = {20, 4, 16, 16}, swap4[4] = {0, 1, 3, 2}, wide[3] = {3, 45, 37}, swap3[3] = {0, 2, 1};
    static const int64_t flat[2] = {161, 40}, swap2[2] = {1, 0};
    for (int p = 0; p < 3; p++) {
        check("keys 16 x 16", 4, 4, sq, swap4, pools[p]);
        check("last two swapped", 4, 3, wide, swap3, pools[p]);
        check("2-D", 4, 2, flat, swap2, pools[p]);
    }
    /* ptq_k_copy_cpu: the bytes, whatever the size (one piece, pieces of 256 KiB and a ragged end) and pool */
    static const size_t copy_sizes[] = {0, 1, 1000, (1u << 19) - 1, 1u << 19, (3u << 20) + 77};
    for (size_t c = 0; c < sizeof copy_sizes / sizeof copy_sizes[0]; c++)
        for (int p = 0; p < 3; p++) {
            const size_t n = copy_sizes[c];
            unsigned char *x = malloc(n + 1), *y = malloc(n + 2);
            CHECK(x && y);
            if (x && y) {
                for (size_t i = 0; i < n; i++)
                    x[i] = (unsigned char)next();
                memset(y, 0xA5, n + 2);
                ptq_par_set_workers(pools[p]);
                ptq_k_copy_cpu(n, x, y);
                CHECK_MSG(memcmp(x, y, n) == 0 && y[n] == 0xA5 && y[n + 1] == 0xA5, "copy of %zu bytes, pool %d", n,
                          pools[p]);
            }
            free(x);
            free(y);
        }
    ptq_par_set_workers(saved);
    return test_done("parity_transpose");
}
