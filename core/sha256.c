/* SHA-256 as FIPS 180-4 specifies it, for provenance hashes
 * (include/ptq/hash.h): the portable compress, and the x86 SHA extensions
 * where the CPU has them. Covered by tests/test_hash.c. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "ptq/fileio.h"
#include "ptq/hash.h"

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t rotr(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static void compress(uint32_t h[8], const unsigned char *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
}

/* The x86 SHA extensions (SHA-NI: Intel since Goldmont and Ice Lake, AMD since Zen), several times the
 * portable compress's speed; the same digests (tests/test_hash.c runs both on the same inputs). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>

__attribute__((target("sha,sse4.1"))) static void compress_shani(uint32_t h[8], const unsigned char *p, size_t n)
{
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xB1); /* CDAB */
    __m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1B); /* EFGH */
    __m128i s0 = _mm_alignr_epi8(t, s1, 8);                                        /* ABEF */
    s1 = _mm_blend_epi16(s1, t, 0xF0);                                             /* CDGH */
    for (; n > 0; n--, p += 64) {
        const __m128i abef = s0, cdgh = s1;
        __m128i m[4]; /* group g's four message words in m[g % 4]; the slots hold groups g-4 .. g-1 */
        for (int g = 0; g < 16; g++) {
            __m128i w;
            if (g < 4) {
                w = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)), bswap);
            } else { /* W[i] = W[i-16] + s0(W[i-15]) + W[i-7] + s1(W[i-2]), four at a time */
                w = _mm_sha256msg1_epu32(m[g & 3], m[(g + 1) & 3]);
                w = _mm_add_epi32(w, _mm_alignr_epi8(m[(g + 3) & 3], m[(g + 2) & 3], 4));
                w = _mm_sha256msg2_epu32(w, m[(g + 3) & 3]);
            }
            m[g & 3] = w;
            __m128i wk = _mm_add_epi32(w, _mm_loadu_si128((const __m128i *)&K[4 * g]));
            s1 = _mm_sha256rnds2_epu32(s1, s0, wk);
            s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(wk, 0x0E));
        }
        s0 = _mm_add_epi32(s0, abef);
        s1 = _mm_add_epi32(s1, cdgh);
    }
    t = _mm_shuffle_epi32(s0, 0x1B);                                     /* FEBA */
    s1 = _mm_shuffle_epi32(s1, 0xB1);                                    /* DCHG */
    _mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(t, s1, 0xF0));   /* DCBA */
    _mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(s1, t, 8));      /* HGFE */
}

static int shani_present(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & (1u << 29))) /* SHA */
        return 0;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 19)) && (c & (1u << 9)); /* SSE4.1, SSSE3 */
}
#define HAVE_SHANI 1
#else
#define HAVE_SHANI 0
#endif

static atomic_int accel = -1; /* -1: not probed yet; 0: portable; 1: SHA-NI (the hashing threads of cli/hash_ahead.c
                                  * may probe at once: the same answer) */

int ptq_sha256_accel(int mode)
{
#if HAVE_SHANI
    if (mode >= 0)
        accel = mode && shani_present();
    else if (accel < 0)
        accel = shani_present();
    return accel;
#else
    (void)mode;
    return accel = 0;
#endif
}

static void compress_blocks(uint32_t h[8], const unsigned char *p, size_t n)
{
#if HAVE_SHANI
    if (accel < 0)
        (void)ptq_sha256_accel(-1);
    if (accel) {
        compress_shani(h, p, n);
        return;
    }
#endif
    for (; n > 0; n--, p += 64)
        compress(h, p);
}

void ptq_sha256_init(ptq_sha256 *s)
{
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->n_bytes = 0;
}

void ptq_sha256_update(ptq_sha256 *s, const void *data, size_t n_bytes)
{
    const unsigned char *p = data;
    size_t used = (size_t)(s->n_bytes % 64);
    s->n_bytes += n_bytes;
    if (used) {
        size_t take = 64 - used < n_bytes ? 64 - used : n_bytes;
        memcpy(s->block + used, p, take);
        p += take;
        n_bytes -= take;
        if (used + take < 64)
            return;
        compress_blocks(s->h, s->block, 1);
    }
    compress_blocks(s->h, p, n_bytes / 64);
    p += n_bytes / 64 * 64;
    memcpy(s->block, p, n_bytes % 64);
}

void ptq_sha256_final_hex(ptq_sha256 *s, char hex[65])
{
    const uint64_t n_bits = s->n_bytes * 8;
    unsigned char pad[72] = {0x80};
    size_t used = (size_t)(s->n_bytes % 64);
    size_t n_pad = (used < 56 ? 56 - used : 120 - used);
    for (int i = 0; i < 8; i++)
        pad[n_pad + (size_t)i] = (unsigned char)(n_bits >> (56 - 8 * i));
    ptq_sha256_update(s, pad, n_pad + 8);
    for (int i = 0; i < 8; i++)
        snprintf(hex + 8 * i, 9, "%08x", (unsigned)s->h[i]);
}

ptq_status ptq_sha256_file(ptq_ctx *ctx, const char *path, char hex[65])
{
    FILE *f = NULL;
    PTQ_TRY_RET(ptq_file_fopen_read(ctx, path, &f));
    ptq_sha256 s;
    ptq_sha256_init(&s);
    unsigned char buf[1 << 16];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        ptq_sha256_update(&s, buf, got);
    int failed = ferror(f);
    fclose(f);
    if (failed)
        return ptq_fail(ctx, PTQ_ERR_IO, "cannot read %s", path);
    ptq_sha256_final_hex(&s, hex);
    return PTQ_OK;
}
