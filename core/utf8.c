/* Names from files made valid UTF-8 for the reports (JSON, Markdown, HTML)
 * that carry them: ptq_utf8_dup. Covered by tests/test_status.c and
 * tests/cli_html_test.py (a class name that is not UTF-8). */
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "ptq/status.h"

static size_t utf8_char_bytes(const unsigned char *s)
{
    static const unsigned min_cp[4] = {0, 0x80, 0x800, 0x10000};
    unsigned cp;
    size_t n;
    if (s[0] < 0x80)
        return 1;
    if ((s[0] & 0xE0) == 0xC0) {
        n = 1;
        cp = s[0] & 0x1Fu;
    } else if ((s[0] & 0xF0) == 0xE0) {
        n = 2;
        cp = s[0] & 0x0Fu;
    } else if ((s[0] & 0xF8) == 0xF0) {
        n = 3;
        cp = s[0] & 0x07u;
    } else {
        return 0;
    }
    for (size_t i = 1; i <= n; i++) { /* stops at the NUL, which is no continuation byte */
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3Fu);
    }
    if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n + 1;
}

size_t ptq_utf8_char_bytes(const char *s)
{
    return utf8_char_bytes((const unsigned char *)s);
}

int ptq_utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t n; *p; p += n)
        if (!(n = utf8_char_bytes(p)))
            return 0;
    return 1;
}

char *ptq_utf8_dup(const char *s)
{
    static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    char *out = malloc(3 * strlen((const char *)p) + 1); /* each bad byte grows to 3 */
    size_t used = 0;
    if (!out)
        return NULL;
    while (*p) {
        size_t n = utf8_char_bytes(p);
        if (n) {
            memcpy(out + used, p, n);
            used += n;
            p += n;
        } else {
            memcpy(out + used, replacement, 3);
            used += 3;
            p++;
        }
    }
    out[used] = '\0';
    return out;
}

int ptq_utf8_width(const char *s)
{
    int n = 0;
    for (; s && *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}
