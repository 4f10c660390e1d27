/* The C locale for ptq's numbers (core/c_locale.h): one locale object made
 * once, switched to per thread with uselocale. Covered by
 * tests/test_api_locale.c. */
#define _GNU_SOURCE /* strtod_l */
#include <locale.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/c_locale.h"

static pthread_once_t c_once = PTHREAD_ONCE_INIT;
static locale_t c_locale = (locale_t)0;

static void make_c_locale(void)
{
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

static locale_t get_c_locale(void)
{
    pthread_once(&c_once, make_c_locale);
    return c_locale;
}

void *ptq_c_locale_enter(void)
{
    const locale_t c = get_c_locale();
    return c ? (void *)uselocale(c) : NULL;
}

void ptq_c_locale_leave(void *old)
{
    if (old)
        uselocale((locale_t)old);
}

double ptq_strtod_c(const char *s, char **end)
{
    const locale_t c = get_c_locale();
    return c ? strtod_l(s, end, c) : strtod(s, end);
}

int ptq_snprintf_c(char *buf, size_t n, const char *fmt, ...)
{
    void *old = ptq_c_locale_enter();
    va_list ap;
    va_start(ap, fmt);
    const int len = vsnprintf(buf, n, fmt, ap);
    va_end(ap);
    ptq_c_locale_leave(old);
    return len;
}
