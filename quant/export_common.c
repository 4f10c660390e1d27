/* What the range exporters share: the growable byte buffer, the checks on
 * names and ranges, and doubles formatted as Python's repr(float) (ORT
 * writes its tables with str(float)). Covered by tests/test_export.c and
 * tests/export_test.py (which compares the formatting with repr). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/c_locale.h"
#include "ptq/export.h"

int ptq_export_name_warns(const char *name)
{
    return name && strchr(name, ':') != NULL;
}

int ptq_export_name_valid(const char *s)
{
    return s && s[0] && !strpbrk(s, "\n\r") && ptq_utf8_valid(s);
}

static int cmp_names(const void *a, const void *b)
{
    const ptq_tensor_range *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

ptq_status ptq_export_check(ptq_ctx *ctx, const ptq_tensor_range *ranges, int64_t n, ptq_export_stats *stats)
{
    ptq_export_stats s = {0};
    if (stats)
        *stats = s;
    if (n < 0 || (n > 0 && !ranges))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "bad range list: %" PRId64 " ranges at %p", n, (const void *)ranges);
    for (int64_t i = 0; i < n; i++) {
        const ptq_tensor_range *t = &ranges[i];
        const char *name = t->name;
        if (!name || !name[0])
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "tensor %" PRId64 " has no name", i);
        if (!ptq_utf8_valid(name))
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "tensor %" PRId64 " name \"%s\" is not valid UTF-8", i, name);
        if (!(t->r.amax >= 0) || !isfinite(t->r.amax))
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "tensor \"%s\": amax %g is not finite and >= 0", name, t->r.amax);
        if (!(t->r.scale >= 0) || !isfinite(t->r.scale))
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "tensor \"%s\": scale %g is not finite and >= 0", name,
                            t->r.scale);
        if (!(t->r.clipped_fraction >= 0 && t->r.clipped_fraction <= 1))
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "tensor \"%s\": clipped fraction %g is not in [0, 1]", name,
                            t->r.clipped_fraction);
        if ((unsigned)t->method > PTQ_CALIB_MSE)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "tensor \"%s\": unknown calibration method %d", name,
                            (int)t->method);
        const ptq_numfmt *nf = ptq_numfmt_get(t->format);
        if (!nf || !nf->scaled)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "tensor \"%s\": unknown format %d", name, (int)t->format);
        if (t->method == PTQ_CALIB_PERCENTILE && !(t->percentile > 0 && t->percentile <= 100))
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "tensor \"%s\": percentile %g is not in (0, 100]", name,
                            t->percentile);
        if (t->asymmetric && !(isfinite(t->lowest) && isfinite(t->highest) && t->lowest <= t->highest))
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "tensor \"%s\": range [%g, %g] is not finite and ordered", name,
                            (double)t->lowest, (double)t->highest);
        s.n_degenerate += t->r.degenerate || t->r.amax == 0;
        s.n_colon_names += ptq_export_name_warns(name);
    }
    if (n > 1) {
        const ptq_tensor_range **sorted = malloc((size_t)n * sizeof *sorted);
        if (!sorted)
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory sorting %" PRId64 " tensor names", n);
        for (int64_t i = 0; i < n; i++)
            sorted[i] = &ranges[i];
        qsort(sorted, (size_t)n, sizeof *sorted, cmp_names);
        for (int64_t i = 1; i < n; i++) {
            if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0) {
                ptq_status st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "tensor \"%s\" has more than one range",
                                         sorted[i]->name);
                free(sorted);
                return st;
            }
        }
        free(sorted);
    }
    if (stats)
        *stats = s;
    return PTQ_OK;
}

ptq_status ptq_export_check_lines(ptq_ctx *ctx, const ptq_tensor_range *ranges, int64_t n, ptq_export_stats *stats)
{
    ptq_status st = ptq_export_check(ctx, ranges, n, stats);
    for (int64_t i = 0; st == PTQ_OK && i < n; i++)
        if (strpbrk(ranges[i].name, "\n\r"))
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                          "tensor %" PRId64 " name \"%s\" has a line break, which the TensorRT cache and the ONNX "
                          "Runtime tables (one line or key per tensor) cannot carry; export --format json or qdq "
                          "instead", i, ranges[i].name);
    if (st != PTQ_OK && stats)
        memset(stats, 0, sizeof *stats);
    return st;
}

/* Shortest decimal M * 10^p (M with no trailing zeros) that reads back to
 * x > 0, the one nearest x when several are that short: what Python's repr
 * takes from David Gay's dtoa, mode 0. For each digit count the correctly
 * rounded candidate is tried, then its neighbour on the other side of x. */
static void shortest_decimal(double x, uint64_t *m_out, int *p_out)
{
    char tmp[64];
    void *locale = ptq_c_locale_enter(); /* "1.5e-01", not "1,5e-01" */
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(tmp, sizeof tmp, "%.*e", digits - 1, x);
        uint64_t m = (uint64_t)(tmp[0] - '0');
        const char *c = tmp + 1;
        if (*c == '.')
            c++;
        for (; *c >= '0' && *c <= '9'; c++)
            m = m * 10 + (uint64_t)(*c - '0');
        int e = atoi(c + 1); /* after 'e' */
        int p = e - (digits - 1);
        double back = strtod(tmp, NULL);
        int found = back == x;
        if (!found) {
            uint64_t m2 = back > x ? m - 1 : m + 1;
            snprintf(tmp, sizeof tmp, "%" PRIu64 "e%d", m2, p);
            if (m2 > 0 && strtod(tmp, NULL) == x) {
                m = m2;
                found = 1;
            }
        }
        if (found || digits == 17) {
            while (m % 10 == 0) {
                m /= 10;
                p++;
            }
            *m_out = m;
            *p_out = p;
            break;
        }
    }
    ptq_c_locale_leave(locale);
}

size_t ptq_export_format_double(double x, char *out, size_t out_bytes)
{
    if (!isfinite(x) || out_bytes < 32)
        return 0;
    size_t k = 0;
    if (signbit(x))
        out[k++] = '-';
    x = fabs(x);
    if (x == 0) {
        memcpy(out + k, "0.0", 4);
        return k + 3;
    }
    uint64_t m;
    int p;
    shortest_decimal(x, &m, &p);
    char d[24];
    int nd = snprintf(d, sizeof d, "%" PRIu64, m);
    int decpt = nd + p; /* x = 0.d1d2... * 10^decpt */
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            out[k++] = '0';
            out[k++] = '.';
            for (int i = 0; i < -decpt; i++)
                out[k++] = '0';
            memcpy(out + k, d, (size_t)nd);
            k += (size_t)nd;
        } else if (decpt < nd) {
            memcpy(out + k, d, (size_t)decpt);
            k += (size_t)decpt;
            out[k++] = '.';
            memcpy(out + k, d + decpt, (size_t)(nd - decpt));
            k += (size_t)(nd - decpt);
        } else {
            memcpy(out + k, d, (size_t)nd);
            k += (size_t)nd;
            for (int i = nd; i < decpt; i++)
                out[k++] = '0';
            out[k++] = '.';
            out[k++] = '0';
        }
    } else {
        out[k++] = d[0];
        if (nd > 1) {
            out[k++] = '.';
            memcpy(out + k, d + 1, (size_t)(nd - 1));
            k += (size_t)(nd - 1);
        }
        int e = decpt - 1;
        k += (size_t)snprintf(out + k, out_bytes - k, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    }
    out[k] = '\0';
    return k;
}
