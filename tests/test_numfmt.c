/* Reference number formats (kernels/ref/numfmt.c, kernels/ref/fp8.c) on
 * hand-picked cases of every class: zeros, subnormals, the tie between every
 * pair of neighbouring codes, largest finite, overflow, Inf, NaN; INT8 ties,
 * saturation and scales; all 65536 FP16 and BF16 and all 256 FP8 codes
 * round trip; and the format table (core/numfmt.c) against the codecs.
 * tests/cuda_parity_numfmt.c holds the same code against NVIDIA's conversions. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/numfmt.h"
#include "ptq/calibrator.h"
#include "ptq/plan.h"
#include "testlib.h"

static float from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static uint32_t to_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

typedef struct code_case {
    float x;
    uint8_t e4m3, e5m2;
    uint16_t fp16;
} code_case;

static void check_cases(void)
{
    const float nan_neg = from_bits(0xFFC00000u), nan_payload = from_bits(0x7F800001u);
    /* codes as printed by CUDA 13's host __nv_cvt_float_to_fp8(.., __NV_SATFINITE, ..) and __float2half_rn */
    const code_case cases[] = {
        {0.0f, 0x00, 0x00, 0x0000},
        {-0.0f, 0x80, 0x80, 0x8000},
        {FLT_TRUE_MIN, 0x00, 0x00, 0x0000},       /* float subnormals: +-0 */
        {-FLT_MIN, 0x80, 0x80, 0x8000},
        {1.0f, 0x38, 0x3C, 0x3C00},
        {-2.0f, 0xC0, 0xC0, 0xC000},
        {0x1p-9f, 0x01, 0x18, 0x1800},            /* E4M3 smallest subnormal */
        {0x1p-10f, 0x00, 0x14, 0x1400},           /* half of it: tie to the even 0 */
        {0x1.000002p-10f, 0x01, 0x14, 0x1400},    /* just above: 1 */
        {0x3p-10f, 0x02, 0x1A, 0x1A00},           /* 1.5 quanta: tie to 2 */
        {0x5p-10f, 0x02, 0x1D, 0x1D00},           /* 2.5 quanta: tie to 2 */
        {-0x7p-9f, 0x87, 0xA3, 0xA300},           /* E4M3 largest subnormal */
        {0x1p-6f, 0x08, 0x24, 0x2400},            /* E4M3 smallest normal */
        {0x1p-16f, 0x00, 0x01, 0x0100},           /* E5M2 smallest subnormal */
        {0x1p-17f, 0x00, 0x00, 0x0080},           /* half of it: 0 */
        {0x1.8p-16f, 0x00, 0x02, 0x0180},         /* 1.5 quanta: 2 */
        {0x1p-14f, 0x00, 0x04, 0x0400},           /* E5M2 and FP16 smallest normal */
        {0x1p-24f, 0x00, 0x00, 0x0001},           /* FP16 smallest subnormal */
        {0x1p-25f, 0x00, 0x00, 0x0000},           /* half of it: tie to 0 */
        {0x1.000002p-25f, 0x00, 0x00, 0x0001},
        {-0x3p-25f, 0x80, 0x80, 0x8002},          /* 1.5 FP16 quanta: 2 */
        {1.0f + 0x1p-11f, 0x38, 0x3C, 0x3C00},    /* FP16 tie at 1: down to even */
        {1.0f + 0x3p-11f, 0x38, 0x3C, 0x3C02},    /* up to even */
        {1.0625f, 0x38, 0x3C, 0x3C40},            /* E4M3 tie at 1 (1 + 1/16): even 1 */
        {1.1875f, 0x3A, 0x3D, 0x3CC0},            /* 1 + 3/16: up to even 1.25 */
        {240.0f, 0x77, 0x5C, 0x5B80},
        {448.0f, 0x7E, 0x5F, 0x5F00},             /* E4M3 max */
        {464.0f, 0x7E, 0x5F, 0x5F40},             /* max + half an ulp */
        {480.0f, 0x7E, 0x60, 0x5F80},             /* would be E4M3's NaN code: saturates */
        {-1e4f, 0xFE, 0xF1, 0xF0E2},
        {57344.0f, 0x7E, 0x7B, 0x7B00},           /* E5M2 max */
        {61440.0f, 0x7E, 0x7B, 0x7B80},           /* max + half an ulp: saturates */
        {65504.0f, 0x7E, 0x7B, 0x7BFF},           /* FP16 max */
        {0x1.ffdffep15f, 0x7E, 0x7B, 0x7BFF},     /* just below 65520 */
        {65520.0f, 0x7E, 0x7B, 0x7C00},           /* FP16 max + half an ulp: tie to Inf */
        {-1e6f, 0xFE, 0xFB, 0xFC00},
        {FLT_MAX, 0x7E, 0x7B, 0x7C00},
        {INFINITY, 0x7E, 0x7B, 0x7C00},
        {-INFINITY, 0xFE, 0xFB, 0xFC00},
        {NAN, 0x7F, 0x7F, 0x7FFF},
        {nan_neg, 0x7F, 0x7F, 0x7FFF},            /* NaN sign and payload dropped */
        {nan_payload, 0x7F, 0x7F, 0x7FFF},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const code_case *c = &cases[k];
        const uint8_t a = ptq_k_fp8_from_float_ref(PTQ_FP8_E4M3, c->x), b = ptq_k_fp8_from_float_ref(PTQ_FP8_E5M2, c->x);
        const uint16_t h = ptq_k_fp16_from_float_ref(c->x);
        CHECK_MSG(a == c->e4m3 && b == c->e5m2 && h == c->fp16,
                  "x %a (0x%08x): e4m3 0x%02x (want 0x%02x), e5m2 0x%02x (want 0x%02x), fp16 0x%04x (want 0x%04x)",
                  (double)c->x, to_bits(c->x), a, c->e4m3, b, c->e5m2, h, c->fp16);
        CHECK(a == ptq_k_fp8_e4m3_from_float_ref(c->x) && b == ptq_k_fp8_e5m2_from_float_ref(c->x));
    }
}

/* Between each pair of neighbouring finite codes c < c+1 of one sign: the
 * midpoint goes to the even code, the floats either side of it to the
 * nearer code. decode: the format's exact decoder; n_finite: positive codes
 * that are finite. Codes are ordered like their values, so c's parity is its
 * mantissa's. */
typedef float (*decode_fn)(uint32_t code);
typedef uint32_t (*encode_fn)(float x);

static float e4m3_dec(uint32_t c) { return ptq_k_fp8_to_float_ref(PTQ_FP8_E4M3, (uint8_t)c); }
static float e5m2_dec(uint32_t c) { return ptq_k_fp8_to_float_ref(PTQ_FP8_E5M2, (uint8_t)c); }
static float fp16_dec(uint32_t c) { return ptq_k_fp16_to_float_ref((uint16_t)c); }
static uint32_t e4m3_enc(float x) { return ptq_k_fp8_from_float_ref(PTQ_FP8_E4M3, x); }
static uint32_t e5m2_enc(float x) { return ptq_k_fp8_from_float_ref(PTQ_FP8_E5M2, x); }
static uint32_t fp16_enc(float x) { return ptq_k_fp16_from_float_ref(x); }
static float bf16_dec(uint32_t c) { return ptq_k_bf16_to_float_ref((uint16_t)c); }
static uint32_t bf16_enc(float x) { return ptq_k_bf16_from_float_ref(x); }

static void check_ties(const char *name, decode_fn dec, encode_fn enc, uint32_t n_finite, uint32_t sign_bit)
{
    int64_t bad = 0, n = 0;
    for (uint32_t c = 0; c + 1 < n_finite; c++)
        for (int neg = 0; neg < 2; neg++) {
            const uint32_t s = neg ? sign_bit : 0;
            const float lo = dec(s | c), hi = dec(s | (c + 1));
            const float mid = (float)(((double)lo + (double)hi) / 2); /* exact: fewer bits than a float */
            const float dir = neg ? -INFINITY : INFINITY;
            const uint32_t even = s | ((c & 1) ? c + 1 : c);
            const int ok = enc(mid) == even && enc(nextafterf(mid, dir)) == (s | (c + 1)) &&
                           enc(nextafterf(mid, -dir)) == (s | c) && enc(lo) == (s | c);
            if (!ok && bad++ < 5)
                fprintf(stderr, "%s: tie between 0x%x and 0x%x (%a) -> 0x%x\n", name, s | c, s | (c + 1), (double)mid,
                        enc(mid));
            n++;
        }
    CHECK_MSG(bad == 0, "%s: %lld of %lld ties wrong", name, (long long)bad, (long long)n);
}

static void check_fp8_codes(void)
{
    int64_t bad = 0;
    for (int k = 0; k < 2; k++) {
        const ptq_fp8_kind kind = k ? PTQ_FP8_E5M2 : PTQ_FP8_E4M3;
        for (uint32_t c = 0; c < 256; c++) {
            const float v = ptq_k_fp8_to_float_ref(kind, (uint8_t)c);
            const uint8_t back = ptq_k_fp8_from_float_ref(kind, v);
            uint8_t want = (uint8_t)c;
            if (isnan(v)) /* every NaN code decodes to CUDA's NaN, which encodes to 0x7F */
                want = 0x7F;
            else if (isinf(v)) /* E5M2 Inf: saturation sends it to +-max */
                want = (uint8_t)((c & 0x80) | 0x7B);
            if (back != want && bad++ < 5)
                fprintf(stderr, "fp8 kind %d code 0x%02x -> %a -> 0x%02x\n", k, c, (double)v, back);
            if (isnan(v))
                bad += to_bits(v) != 0x7FFFFFFFu;
            /* decoding is exact: check against ldexp of the fields */
            const int man_bits = k ? 2 : 3, bias = k ? 15 : 7, mag = c & 0x7F;
            const int e = mag >> man_bits, m = mag & ((1 << man_bits) - 1);
            if (isfinite(v)) {
                const double want_v = e ? ldexp((1 << man_bits) + m, e - bias - man_bits) : ldexp(m, 1 - bias - man_bits);
                bad += (double)fabsf(v) != want_v || (signbit(v) != 0) != ((c & 0x80) != 0);
            }
        }
    }
    CHECK_MSG(bad == 0, "fp8: %lld of 512 codes fail decode/encode round trips", (long long)bad);
    /* NaN and Inf codes where REFERENCE.md puts them */
    CHECK(isnan(ptq_k_fp8_to_float_ref(PTQ_FP8_E4M3, 0x7F)) && isnan(ptq_k_fp8_to_float_ref(PTQ_FP8_E4M3, 0xFF)));
    CHECK(ptq_k_fp8_to_float_ref(PTQ_FP8_E4M3, 0x7E) == 448.0f);
    CHECK(ptq_k_fp8_to_float_ref(PTQ_FP8_E5M2, 0x7C) == INFINITY && ptq_k_fp8_to_float_ref(PTQ_FP8_E5M2, 0xFC) == -INFINITY);
    CHECK(isnan(ptq_k_fp8_to_float_ref(PTQ_FP8_E5M2, 0x7D)) && isnan(ptq_k_fp8_to_float_ref(PTQ_FP8_E5M2, 0xFE)));
}

/* All 65536 halves: decode matches ldexp of the fields, half -> float ->
 * half gives the same bits (NaNs go to 0x7FFF), values strictly increase. */
static void check_fp16_codes(void)
{
    int64_t bad = 0;
    for (uint32_t c = 0; c < 65536; c++) {
        const float v = ptq_k_fp16_to_float_ref((uint16_t)c);
        const uint32_t e = (c >> 10) & 0x1F, m = c & 0x3FF;
        const int neg = (c & 0x8000) != 0;
        int ok;
        if (e == 31 && m)
            ok = to_bits(v) == 0x7FFFFFFFu && ptq_k_fp16_from_float_ref(v) == 0x7FFF;
        else {
            const double mag = e == 31 ? INFINITY : e ? ldexp(1024 + m, (int)e - 25) : ldexp(m, -24);
            ok = (double)fabsf(v) == mag && (signbit(v) != 0) == neg && ptq_k_fp16_from_float_ref(v) == c;
        }
        if (!neg && c > 0 && c <= 0x7C00)
            ok &= v > ptq_k_fp16_to_float_ref((uint16_t)(c - 1));
        if (!ok && bad++ < 5)
            fprintf(stderr, "fp16 code 0x%04x -> %a -> 0x%04x\n", c, (double)v, ptq_k_fp16_from_float_ref(v));
    }
    CHECK_MSG(bad == 0, "fp16: %lld of 65536 codes fail round trip / decode / order", (long long)bad);
}

/* Random floats over many binades: the code is a nearest one (double
 * arithmetic is exact for these differences), checked without the encoder's
 * own logic. Finite in-range values only; the classes above cover the rest. */
static void check_nearest(void)
{
    int64_t bad = 0;
    test_rand_seed(7);
    for (int i = 0; i < 200000; i++) {
        const float x = ldexpf(test_rand_uniform(-1.0f, 1.0f), (int)test_rand_uniform(-30.0f, 16.0f));
        const uint16_t h = ptq_k_fp16_from_float_ref(x);
        const double err = fabs((double)x - ptq_k_fp16_to_float_ref(h));
        const uint16_t mag = h & 0x7FFF;
        if (mag < 0x7BFF)
            bad += fabs((double)x - ptq_k_fp16_to_float_ref((uint16_t)(h + 1))) < err;
        if (mag > 0)
            bad += fabs((double)x - ptq_k_fp16_to_float_ref((uint16_t)(h - 1))) < err;
        for (int k = 0; k < 2; k++) {
            const ptq_fp8_kind kind = k ? PTQ_FP8_E5M2 : PTQ_FP8_E4M3;
            const uint8_t q = ptq_k_fp8_from_float_ref(kind, x), qm = q & 0x7F, top = k ? 0x7B : 0x7E;
            const double e8 = fabs((double)x - ptq_k_fp8_to_float_ref(kind, q));
            if (qm < top)
                bad += fabs((double)x - ptq_k_fp8_to_float_ref(kind, (uint8_t)(q + 1))) < e8;
            if (qm > 0)
                bad += fabs((double)x - ptq_k_fp8_to_float_ref(kind, (uint8_t)(q - 1))) < e8;
        }
    }
    CHECK_MSG(bad == 0, "nearest: %lld codes not the nearest", (long long)bad);
}

typedef struct int8_case {
    float x, scale;
    int8_t q;
} int8_case;

static void check_int8(void)
{
    const int8_case cases[] = {
        {0.0f, 1.0f, 0},     {-0.0f, 1.0f, 0},    {0.5f, 1.0f, 0},      {1.5f, 1.0f, 2},
        {2.5f, 1.0f, 2},     {3.5f, 1.0f, 4},     {-0.5f, 1.0f, 0},     {-1.5f, 1.0f, -2},
        {-2.5f, 1.0f, -2},   {126.5f, 1.0f, 126}, {125.5f, 1.0f, 126},  {0x1.fffffep-2f, 1.0f, 0},
        {0x1.000002p-1f, 1.0f, 1},                {127.0f, 1.0f, 127},  {127.5f, 1.0f, 127},
        {128.0f, 1.0f, 127}, {-127.5f, 1.0f, -128}, {-128.0f, 1.0f, -128}, {-1e30f, 1.0f, -128},
        {FLT_MAX, 1.0f, 127}, {INFINITY, 1.0f, 127}, {-INFINITY, 1.0f, -128}, {NAN, 1.0f, -128},
        {FLT_TRUE_MIN, 1.0f, 0}, {-127.49f, 1.0f, -127}, {-126.5f, 1.0f, -126}, {-128.5f, 1.0f, -128},
        /* scales: a true float division, not x * (1 / scale): -12.15f / 0.1f is
         * -121.49999 (the product with the reciprocal is -121.5 -> -122), and
         * 0xc0e80001 / 0.1f is exactly -72.5, a tie (the product gives -72.50001) */
        {-12.15f, 0.1f, -121},
        {-0x1.d00002p2f, 0.1f, -72},
        {0.25f, 0.5f, 0},    {0.75f, 0.5f, 2},    {1.25f, 0.5f, 2},     {3.0f, -1.0f, -3}, /* negative scale flips */
        {1e-45f, 1e-45f, 1}, {1.0f, 1e-45f, 127},                        /* subnormal scale */
        {1e38f, 1e-38f, 127},                                             /* x / scale overflows to Inf */
        {1.0f, 0.0f, 127},   {-1.0f, 0.0f, -128}, {0.0f, 0.0f, -128},   /* scale 0: +-Inf, NaN (saturates low) */
        {1e30f, INFINITY, 0}, {INFINITY, INFINITY, -128},                /* scale Inf: 0, NaN */
        {1.0f, NAN, -128},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const int8_case *c = &cases[k];
        int8_t q = 99;
        float y = -99.0f;
        ptq_k_quantize_int8_ref(&c->x, 1, c->scale, PTQ_K_INT8_QMAX, &q);
        ptq_k_fake_quant_int8_ref(&c->x, 1, c->scale, PTQ_K_INT8_QMAX, &y);
        CHECK_MSG(q == c->q, "int8: x %a scale %a -> %d, want %d", (double)c->x, (double)c->scale, q, c->q);
        const float want_y = (float)c->q * c->scale;
        CHECK_MSG(to_bits(y) == to_bits(want_y) || (isnan(y) && isnan(want_y)), "int8 fake-quant: x %a scale %a -> %a",
                  (double)c->x, (double)c->scale, (double)y);
    }
    /* a sweep through and beyond the range: [-128, 127] (QuantizeLinear's saturation), monotonic, dequantize =
     * q * scale; with qmax 64 (onnxruntime's reduce_range weights) the same within [-64, 64], equal to the full
     * grid inside it */
    int64_t bad = 0, bad_reduced = 0;
    int prev = -128, prev_reduced = -64;
    for (int i = -40000; i <= 40000; i++) {
        const float x = (float)i * 0.01f, scale = 0.25f;
        int8_t q, qr;
        float y, yd, yr;
        ptq_k_quantize_int8_ref(&x, 1, scale, PTQ_K_INT8_QMAX, &q);
        ptq_k_dequantize_int8_ref(&q, 1, scale, &yd);
        ptq_k_fake_quant_int8_ref(&x, 1, scale, PTQ_K_INT8_QMAX, &y);
        bad += q < prev || y != yd || yd != (float)q * scale || (q == -128) != (x / scale < -127.5f);
        prev = q;
        ptq_k_quantize_int8_ref(&x, 1, scale, 64, &qr);
        ptq_k_fake_quant_int8_ref(&x, 1, scale, 64, &yr);
        bad_reduced += qr < -64 || qr > 64 || qr < prev_reduced || yr != (float)qr * scale ||
                       (q >= -64 && q <= 64 && qr != q) || (q > 64 && qr != 64) || (q < -64 && qr != -64);
        prev_reduced = qr;
    }
    CHECK_MSG(bad == 0, "int8 sweep: %lld bad", (long long)bad);
    CHECK(prev == 127);
    CHECK_MSG(bad_reduced == 0, "int8 sweep, qmax 64: %lld bad", (long long)bad_reduced);
    CHECK(prev_reduced == 64);
    const float inf = INFINITY, nan = NAN;
    int8_t qi = 0, qn = 1;
    ptq_k_quantize_int8_ref(&inf, 1, 1.0f, 64, &qi);
    ptq_k_quantize_int8_ref(&nan, 1, 1.0f, 64, &qn);
    CHECK_MSG(qi == 64 && qn == -64, "int8 qmax 64: Inf -> %d, NaN -> %d", qi, qn);
    const float minus_inf = -INFINITY;
    ptq_k_quantize_int8_ref(&minus_inf, 1, 1.0f, 64, &qi);
    CHECK_MSG(qi == -64, "int8 qmax 64: -Inf -> %d", qi);
}

typedef struct uint8_case {
    float x, scale;
    int32_t zp;
    uint8_t q;
} uint8_case;

/* UINT8 asymmetric: rounding half to even before the zero point is added,
 * saturation at both ends, NaN to 0 (onnxruntime's QuantizeLinear); and the parameters of a
 * range as onnxruntime's compute_scale_zp derives them. */
static void check_uint8(void)
{
    const uint8_case cases[] = {
        {0.0f, 1.0f, 128, 128},  {-0.0f, 1.0f, 0, 0},     {0.5f, 1.0f, 10, 10},    {1.5f, 1.0f, 10, 12},
        {2.5f, 1.0f, 10, 12},    {-0.5f, 1.0f, 10, 10},   {-1.5f, 1.0f, 10, 8},    {-2.5f, 1.0f, 10, 8},
        {127.5f, 1.0f, 128, 255}, {126.5f, 1.0f, 128, 254}, {-128.0f, 1.0f, 128, 0}, {-129.0f, 1.0f, 128, 0},
        {-0.6f, 1.0f, 0, 0},     {254.5f, 1.0f, 0, 254},  {255.5f, 1.0f, 0, 255},  {-255.0f, 1.0f, 255, 0},
        {-255.5f, 1.0f, 255, 0}, {1.0f, 1.0f, 255, 255},  {1e30f, 1.0f, 0, 255},   {-1e30f, 1.0f, 255, 0},
        {INFINITY, 1.0f, 7, 255}, {-INFINITY, 1.0f, 7, 0}, {NAN, 1.0f, 7, 0},      {FLT_TRUE_MIN, 1.0f, 3, 3},
        /* a true float division: -12.15f / 0.1f is -121.49999 (x * (1 / 0.1f) gives -121.5 -> -122) */
        {-12.15f, 0.1f, 200, 79},
        {1.0f, 0.0f, 0, 255},    {-1.0f, 0.0f, 200, 0},   {0.0f, 0.0f, 42, 0},     /* scale 0: +-Inf, NaN */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const uint8_case *c = &cases[k];
        uint8_t q = 99;
        float y = -99.0f, yd = -98.0f;
        ptq_k_quantize_uint8_ref(&c->x, 1, c->scale, c->zp, &q);
        ptq_k_fake_quant_uint8_ref(&c->x, 1, c->scale, c->zp, &y);
        ptq_k_dequantize_uint8_ref(&q, 1, c->scale, c->zp, &yd);
        CHECK_MSG(q == c->q, "uint8: x %a scale %a zp %d -> %d, want %d", (double)c->x, (double)c->scale, (int)c->zp,
                  q, c->q);
        const float want_y = (float)((int32_t)c->q - c->zp) * c->scale;
        CHECK_MSG((to_bits(y) == to_bits(want_y) && to_bits(yd) == to_bits(want_y)) ||
                      (isnan(y) && isnan(want_y) && isnan(yd)),
                  "uint8 fake-quant: x %a scale %a zp %d -> %a / %a", (double)c->x, (double)c->scale, (int)c->zp,
                  (double)y, (double)yd);
    }
    /* a sweep: monotonic, every code reached, fake-quant = dequantize(quantize), 0 exact */
    int64_t bad = 0;
    int prev = 0, seen_255 = 0;
    for (int i = -40000; i <= 40000; i++) {
        const float x = (float)i * 0.01f, scale = 0.5f;
        uint8_t q;
        float y, yd;
        ptq_k_quantize_uint8_ref(&x, 1, scale, 77, &q);
        ptq_k_dequantize_uint8_ref(&q, 1, scale, 77, &yd);
        ptq_k_fake_quant_uint8_ref(&x, 1, scale, 77, &y);
        bad += q < prev || y != yd || (i == 0 && (q != 77 || y != 0.0f)) || (i == -40000 && q != 0);
        seen_255 |= q == 255;
        prev = q;
    }
    CHECK_MSG(bad == 0 && seen_255, "uint8 sweep: %lld bad", (long long)bad);
    /* parameters: [lo, hi] widened to hold 0, s = (hi - lo) / 255, zp = round(-lo / s) half to even */
    const struct {
        float lo, hi, scale;
        int32_t zp;
    } params[] = {
        {-1.0f, 3.0f, (float)(4.0 / 255.0), 64},          /* 255 / 4 = 63.75 */
        {0.0f, 6.0f, (float)(6.0 / 255.0), 0},            /* after a ReLU: the whole grid above 0 */
        {1.0f, 6.0f, (float)(6.0 / 255.0), 0},            /* widened down to 0 */
        {-6.0f, -1.0f, (float)(6.0 / 255.0), 255},        /* widened up to 0 */
        {-2.0f, 2.0f, (float)(4.0 / 255.0), 128},         /* 127.5: the tie goes to the even 128 */
        {-3.0f, 1.0f, (float)(4.0 / 255.0), 191},         /* 191.25 */
        {-0.5f, 1.5f, (float)(2.0 / 255.0), 64},          /* 63.75 */
        {0.0f, 0.0f, 1.0f, 0},                            /* all zeros: scale 1 */
        {-1e-45f, 0.0f, 1.0f, 0},                         /* a range under FLT_MIN * 255: scale 1 */
        {-FLT_MAX, FLT_MAX, (float)(2.0 * FLT_MAX / 255.0), 128}, /* the span overflows float, not double */
    };
    for (size_t k = 0; k < sizeof params / sizeof params[0]; k++) {
        float scale = -1.0f;
        int32_t zp = -1;
        ptq_k_uint8_params_ref(params[k].lo, params[k].hi, &scale, &zp);
        CHECK_MSG(to_bits(scale) == to_bits(params[k].scale) && zp == params[k].zp,
                  "uint8 params [%a, %a] -> scale %a zp %d, want %a %d", (double)params[k].lo, (double)params[k].hi,
                  (double)scale, (int)zp, (double)params[k].scale, (int)params[k].zp);
        /* both ends of the range come back within half a step, and 0 exactly */
        const float ends[3] = {params[k].lo < 0 ? params[k].lo : 0.0f, params[k].hi > 0 ? params[k].hi : 0.0f, 0.0f};
        float back[3];
        ptq_k_fake_quant_uint8_ref(ends, 3, scale, zp, back);
        for (int j = 0; j < 3; j++)
            CHECK_MSG(fabs((double)back[j] - (double)ends[j]) <= 0.5 * (double)scale * (1 + 1e-6) || !isfinite(back[j]),
                      "uint8 params [%a, %a]: %a -> %a", (double)params[k].lo, (double)params[k].hi, (double)ends[j],
                      (double)back[j]);
        CHECK(back[2] == 0.0f);
    }
}

static void check_fp8_scaled(void)
{
    const float x[] = {3.3f, -3.3f, 448.0f * 0.5f, 1e9f, -INFINITY, NAN, 0.0f, -0.0f, 0x1p-10f};
    const int64_t n = sizeof x / sizeof x[0];
    uint8_t q[sizeof x / sizeof x[0]];
    float y[sizeof x / sizeof x[0]], yd[sizeof x / sizeof x[0]];
    /* scale 0.5: 6.6 -> 6.5 (E4M3 step 0.5 in [4, 8)); 448; max; -max; NaN; 0; -0; 2^-9 */
    static const uint8_t want_e4m3[] = {0x4D, 0xCD, 0x7E, 0x7E, 0xFE, 0x7F, 0x00, 0x80, 0x01};
    ptq_k_quantize_fp8_ref(PTQ_FP8_E4M3, x, n, 0.5f, q);
    CHECK(memcmp(q, want_e4m3, sizeof q) == 0);
    ptq_k_dequantize_fp8_ref(PTQ_FP8_E4M3, q, n, 0.5f, yd);
    ptq_k_fake_quant_fp8_ref(PTQ_FP8_E4M3, x, n, 0.5f, y);
    CHECK(y[0] == 3.25f && y[1] == -3.25f && y[2] == 224.0f && y[3] == 224.0f && y[4] == -224.0f && isnan(y[5]));
    CHECK(to_bits(y[6]) == 0 && to_bits(y[7]) == 0x80000000u && y[8] == 0x1p-10f);
    CHECK(memcmp(y, yd, sizeof y) == 0);
    /* E5M2, scale 2: 1.65 -> 1.75 (step 0.25 in [1, 2)); 112 -> 112; 5e8 -> max */
    ptq_k_fake_quant_fp8_ref(PTQ_FP8_E5M2, x, 4, 2.0f, y);
    CHECK(y[0] == 3.5f && y[1] == -3.5f && y[2] == 224.0f && y[3] == 114688.0f);
    /* division, not multiplication by the reciprocal: 3 / 3 is 1 exactly */
    const float three = 3.0f;
    ptq_k_quantize_fp8_ref(PTQ_FP8_E4M3, &three, 1, 3.0f, q);
    CHECK(q[0] == 0x38);
}

static void check_round_fp16(void)
{
    float x[] = {1.0f + 0x1p-11f, 65519.0f, 65520.0f, -0x1p-25f, 0.1f, NAN};
    float y[6];
    ptq_k_round_fp16_ref(x, 6, y);
    CHECK(y[0] == 1.0f && y[1] == 65504.0f && y[2] == INFINITY && to_bits(y[3]) == 0x80000000u);
    CHECK(y[4] == 0x1.998p-4f && to_bits(y[5]) == 0x7FFFFFFFu);
    ptq_k_round_fp16_ref(x, 6, x); /* in place */
    CHECK(memcmp(x, y, sizeof y) == 0);
}

/* BF16 bit patterns: float32's top half, rounded to nearest even. */
static void check_bf16(void)
{
    static const struct {
        uint32_t x;
        uint16_t b;
    } cases[] = {
        {0x00000000u, 0x0000}, {0x80000000u, 0x8000}, /* signed zeros */
        {0x3F800000u, 0x3F80}, {0xC0000000u, 0xC000}, /* 1, -2 */
        {0x3F808000u, 0x3F80}, /* 1 + 2^-8: a tie, to the even 0x3F80 */
        {0x3F818000u, 0x3F82}, /* a tie from an odd code: up */
        {0x3F808001u, 0x3F81}, {0x3F807FFFu, 0x3F80}, /* just above / below the tie */
        {0xBF808001u, 0xBF81}, /* the same negative */
        {0x7F7F7FFFu, 0x7F7F}, /* just below the tie past the largest finite */
        {0x7F7F8000u, 0x7F80}, /* that tie: 0x7F7F is odd, so up to Inf */
        {0x7F7FFFFFu, 0x7F80}, {0xFF7FFFFFu, 0xFF80}, /* FLT_MAX overflows to Inf */
        {0x7F800000u, 0x7F80}, {0xFF800000u, 0xFF80}, /* Inf */
        {0x7FC00000u, 0x7FFF}, {0xFFC00001u, 0x7FFF}, /* NaN: the canonical NaN */
        {0x7F800001u, 0x7FFF}, /* a signalling NaN whose kept bits alone would read as Inf */
        {0x00000001u, 0x0000}, {0x00008000u, 0x0000}, /* below / at half the smallest subnormal */
        {0x00008001u, 0x0001}, {0x00018000u, 0x0002}, {0x00010000u, 0x0001}, /* subnormals kept */
        {0x007FFFFFu, 0x0080}, /* the largest subnormal rounds up into the smallest normal */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const uint16_t got = ptq_k_bf16_from_float_ref(from_bits(cases[i].x));
        CHECK_MSG(got == cases[i].b, "bf16(0x%08x) = 0x%04x, want 0x%04x", cases[i].x, got, cases[i].b);
    }
    int64_t bad = 0;
    for (uint32_t c = 0; c < 65536; c++) {
        const float v = ptq_k_bf16_to_float_ref((uint16_t)c);
        const int nan_code = (c & 0x7F80u) == 0x7F80u && (c & 0x7Fu);
        if (to_bits(v) != c << 16 || (nan_code ? !isnan(v) || bf16_enc(v) != 0x7FFF : bf16_enc(v) != c))
            bad++;
    }
    CHECK_MSG(bad == 0, "%lld bf16 codes do not round trip", (long long)bad);
    float x[4] = {1.00390625f, -3.0e38f, NAN, 1e-40f}, y[4];
    ptq_k_round_bf16_ref(x, 4, y);
    CHECK(to_bits(y[0]) == 0x3F800000u && to_bits(y[1]) == 0xFF620000u && to_bits(y[2]) == 0x7FFF0000u &&
          to_bits(y[3]) == 0x00010000u);
    ptq_k_round_bf16_ref(x, 4, x); /* in place */
    CHECK(memcmp(x, y, sizeof x) == 0);
}

/* The format table: every entry under its id and name, limits equal to what
 * the codecs decode, and the plan/calibrator names going through it. */
static void check_table(void)
{
    static const char *const names[PTQ_FMT_COUNT] = {"fp32", "fp16", "int8", "fp8-e4m3", "fp8-e5m2", "bf16", "uint8"};
    for (int i = 0; i < PTQ_FMT_COUNT; i++) {
        const ptq_numfmt *f = ptq_numfmt_get((ptq_fmt)i);
        CHECK_MSG(f && f->id == (ptq_fmt)i && strcmp(f->name, names[i]) == 0, "format %d", i);
        if (!f)
            continue;
        CHECK(ptq_numfmt_find(names[i]) == f);
        CHECK_MSG(!f->is_float || f->bits == 1 + f->exp_bits + f->man_bits, "%s bits", f->name);
        CHECK_MSG(f->scaled == (i == PTQ_FMT_INT8 || i == PTQ_FMT_FP8_E4M3 || i == PTQ_FMT_FP8_E5M2 || i == PTQ_FMT_UINT8),
                  "%s", f->name);
        CHECK_MSG(f->zero_point == (i == PTQ_FMT_UINT8), "%s zero point", f->name);
        CHECK_MSG(f->in_plans == (i != PTQ_FMT_BF16), "%s in_plans", f->name);
        CHECK_MSG(!f->block_scaled, "%s: no format takes block scales yet", f->name);
        CHECK_MSG(ptq_prec_name((ptq_prec)i) == (f->in_plans ? f->name : ptq_prec_name((ptq_prec)-1)), "%s", f->name);
        /* calibrators target the symmetric scaled formats only */
        CHECK_MSG(strcmp(ptq_qformat_name((ptq_qformat)i), f->scaled && !f->zero_point ? f->name : "unknown") == 0, "%s",
                  f->name);
        CHECK_MSG(ptq_prec_is_quantized((ptq_prec)i) == f->scaled, "%s", f->name);
    }
    CHECK(ptq_numfmt_get(PTQ_FMT_COUNT) == NULL && ptq_numfmt_get((ptq_fmt)-1) == NULL);
    CHECK(ptq_numfmt_find("fp8") == NULL && ptq_numfmt_find(NULL) == NULL && ptq_numfmt_find("INT8") == NULL);
    CHECK(ptq_numfmt_get(PTQ_FMT_FP32)->max_finite == FLT_MAX);
    CHECK(ptq_numfmt_get(PTQ_FMT_FP16)->max_finite == ptq_k_fp16_to_float_ref(0x7BFF));
    CHECK(ptq_numfmt_get(PTQ_FMT_BF16)->max_finite == ptq_k_bf16_to_float_ref(0x7F7F));
    CHECK(ptq_numfmt_get(PTQ_FMT_BF16)->max_finite == 3.3895313892515355e38);
    CHECK(ptq_numfmt_get(PTQ_FMT_FP8_E4M3)->max_finite == ptq_k_fp8_to_float_ref(PTQ_FP8_E4M3, 0x7E));
    CHECK(ptq_numfmt_get(PTQ_FMT_FP8_E5M2)->max_finite == ptq_k_fp8_to_float_ref(PTQ_FP8_E5M2, 0x7B));
    CHECK(ptq_numfmt_get(PTQ_FMT_INT8)->max_finite == 127.0);
    CHECK(ptq_qformat_max(PTQ_QFORMAT_INT8) == 127.0 && ptq_qformat_max(PTQ_QFORMAT_FP8_E4M3) == 448.0 &&
          ptq_qformat_max(PTQ_QFORMAT_FP8_E5M2) == 57344.0);
    /* ONNX element types of the Q/DQ codes */
    CHECK(ptq_numfmt_get(PTQ_FMT_UINT8)->onnx_dtype == PTQ_DT_UINT8 && ptq_numfmt_get(PTQ_FMT_UINT8)->max_finite == 255.0);
    CHECK(ptq_numfmt_get(PTQ_FMT_INT8)->onnx_dtype == PTQ_DT_INT8 &&
          ptq_numfmt_get(PTQ_FMT_FP8_E4M3)->onnx_dtype == PTQ_DT_FLOAT8E4M3FN &&
          ptq_numfmt_get(PTQ_FMT_FP8_E5M2)->onnx_dtype == PTQ_DT_FLOAT8E5M2 &&
          ptq_numfmt_get(PTQ_FMT_FP16)->onnx_dtype == PTQ_DT_FLOAT16 &&
          ptq_numfmt_get(PTQ_FMT_BF16)->onnx_dtype == PTQ_DT_BFLOAT16 &&
          ptq_numfmt_get(PTQ_FMT_FP32)->onnx_dtype == PTQ_DT_FLOAT);
    /* the one enum under its older names */
    CHECK(PTQ_PREC_INT8 == PTQ_FMT_INT8 && PTQ_QFORMAT_INT8 == PTQ_FMT_INT8 && PTQ_FP8_E4M3 == PTQ_FMT_FP8_E4M3 &&
          PTQ_QFORMAT_FP8_E5M2 == PTQ_PREC_FP8_E5M2 && PTQ_FP8_E5M2 == PTQ_FMT_FP8_E5M2);
    ptq_ctx ctx;
    ptq_prec p = PTQ_PREC_FP32;
    ptq_qformat q = PTQ_QFORMAT_INT8;
    ptq_ctx_init(&ctx);
    CHECK(ptq_prec_parse(&ctx, "fp8", &p) == PTQ_OK && p == PTQ_PREC_FP8_E4M3);
    CHECK(ptq_prec_parse(&ctx, "bf16", &p) == PTQ_ERR_INVALID_ARG);
    CHECK_MSG(strstr(ctx.msg, "unknown precision 'bf16' (choices: fp32, fp16, int8, fp8-e4m3, fp8-e5m2, uint8)"), "%s",
              ctx.msg);
    ptq_ctx_init(&ctx);
    CHECK(ptq_qformat_parse(&ctx, "fp8-e5m2", &q) == PTQ_OK && q == PTQ_QFORMAT_FP8_E5M2);
    CHECK(ptq_qformat_parse(&ctx, "fp16", &q) == PTQ_ERR_INVALID_ARG);
}

int main(void)
{
    check_cases();
    check_ties("e4m3", e4m3_dec, e4m3_enc, 0x7F, 0x80);
    check_ties("e5m2", e5m2_dec, e5m2_enc, 0x7C, 0x80);
    check_ties("fp16", fp16_dec, fp16_enc, 0x7C00, 0x8000);
    check_fp8_codes();
    check_fp16_codes();
    check_nearest();
    check_int8();
    check_uint8();
    check_fp8_scaled();
    check_round_fp16();
    check_ties("bf16", bf16_dec, bf16_enc, 0x7F80, 0x8000);
    check_bf16();
    check_table();
    return test_done("test_numfmt");
}
