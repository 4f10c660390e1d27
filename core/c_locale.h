/* Numbers in ptq's files, specs and tables are written and read in the C
 * locale, whatever locale the program that links libptq set: under
 * setlocale(LC_ALL, "de_DE.UTF-8") snprintf writes 0.5 as "0,5" and strtod
 * stops at the '.' of "0.5". core/c_locale.c; covered by
 * tests/test_api_locale.c. */
#ifndef PTQ_CORE_C_LOCALE_H
#define PTQ_CORE_C_LOCALE_H

#include <stddef.h>

/* Switches the calling thread to the C locale; returns its locale before
 * (a locale_t), for ptq_c_locale_leave. NULL (nothing switched) when the C
 * locale object cannot be made. */
void *ptq_c_locale_enter(void);
void ptq_c_locale_leave(void *old);
/* strtod in the C locale. */
double ptq_strtod_c(const char *s, char **end);
/* snprintf in the C locale. */
int ptq_snprintf_c(char *buf, size_t n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
