/* Reference FP8 conversions (E4M3FN, E5M2): saturating round-to-nearest-even
 * from float/double and exact decoding, bit for bit what CUDA's
 * __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ..) gives (REFERENCE.md "FP8
 * encodings"). Covered by tests/test_calibrators.c (edge cases). */
#include <math.h>

#include "kernels/kernels.h"

typedef struct fp8_layout {
    int man_bits;      /* stored mantissa bits */
    int bias;          /* exponent bias */
    double max_finite; /* largest finite magnitude */
    uint8_t max_code;  /* its code, sign clear */
} fp8_layout;

static const fp8_layout E4M3 = {3, 7, 448.0, 0x7E};
static const fp8_layout E5M2 = {2, 15, 57344.0, 0x7B};

static uint8_t from_double(const fp8_layout *f, double x)
{
    if (isnan(x))
        return 0x7F; /* CUDA canonicalises NaN: sign dropped */
    const uint8_t sign = signbit(x) ? 0x80 : 0x00;
    const double a = fabs(x);
    if (a >= f->max_finite) /* SATFINITE: everything beyond max, Inf too, lands on max */
        return (uint8_t)(sign | f->max_code);
    if (a == 0.0)
        return sign;
    int e2;
    (void)frexp(a, &e2); /* a = m * 2^e2, m in [0.5, 1): the unbiased exponent is e2 - 1 */
    int e = e2 - 1;
    if (e < 1 - f->bias)
        e = 1 - f->bias; /* subnormal range: fixed quantum */
    /* a in units of the quantum at that exponent: exact (power-of-two scaling);
     * nearbyint rounds half to even in the default rounding mode. A value at or
     * below half the smallest subnormal rounds to 0, one that rounds up to the
     * next binade carries into the exponent field through the addition below. */
    const double r = nearbyint(ldexp(a, f->man_bits - e));
    const int code = ((e + f->bias - 1) << f->man_bits) + (int)r;
    return (uint8_t)(sign | code);
}

static double to_double(const fp8_layout *f, uint8_t code)
{
    const int mag = code & 0x7F;
    const int exp_field = mag >> f->man_bits;
    const int man = mag & ((1 << f->man_bits) - 1);
    double v;
    if (f->man_bits == 3 && mag == 0x7F)
        v = NAN;
    else if (f->man_bits == 2 && exp_field == 31)
        v = man ? NAN : INFINITY;
    else if (exp_field == 0)
        v = ldexp(man, 1 - f->bias - f->man_bits);
    else
        v = ldexp((1 << f->man_bits) + man, exp_field - f->bias - f->man_bits);
    return (code & 0x80) ? -v : v;
}

uint8_t ptq_k_fp8_e4m3_from_double_ref(double x)
{
    return from_double(&E4M3, x);
}

uint8_t ptq_k_fp8_e5m2_from_double_ref(double x)
{
    return from_double(&E5M2, x);
}

uint8_t ptq_k_fp8_e4m3_from_float_ref(float x)
{
    return from_double(&E4M3, (double)x);
}

uint8_t ptq_k_fp8_e5m2_from_float_ref(float x)
{
    return from_double(&E5M2, (double)x);
}

float ptq_k_fp8_e4m3_to_float_ref(uint8_t code)
{
    return (float)to_double(&E4M3, code);
}

float ptq_k_fp8_e5m2_to_float_ref(uint8_t code)
{
    return (float)to_double(&E5M2, code);
}
