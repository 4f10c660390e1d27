/* Names from files made valid UTF-8 for the reports (JSON, Markdown, HTML)
 * that carry them: ptq_utf8_dup. Covered by tests/test_status.c and
 * tests/cli_html_test.py (a class name that is not UTF-8). */
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "ptq/status.h"

/* Bytes of the strict UTF-8 character s starts, its code point into *out; 0 when s starts none. */
static size_t utf8_decode(const unsigned char *s, unsigned *out)
{
    static const unsigned min_cp[4] = {0, 0x80, 0x800, 0x10000};
    unsigned cp;
    size_t n;
    if (s[0] < 0x80) {
        *out = s[0];
        return 1;
    }
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
    *out = cp;
    return n + 1;
}

static size_t utf8_char_bytes(const unsigned char *s)
{
    unsigned cp;
    return utf8_decode(s, &cp);
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

size_t ptq_utf8_decode(const char *s, unsigned *cp)
{
    return utf8_decode((const unsigned char *)s, cp);
}

/* Terminal columns of code point cp: 0 for combining marks, zero-width characters and variation selectors, 2 for
 * the East Asian wide and fullwidth blocks and the emoji planes (after Markus Kuhn's wcwidth), else 1. */
static int columns(unsigned cp)
{
    static const unsigned zero[][2] = {{0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x0610, 0x061A},
                                       {0x064B, 0x065F}, {0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x2069},
                                       {0x20D0, 0x20FF}, {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}, {0xFEFF, 0xFEFF}};
    static const unsigned wide[][2] = {{0x1100, 0x115F}, {0x231A, 0x231B}, {0x2329, 0x232A}, {0x2E80, 0x303E},
                                       {0x3041, 0x33FF}, {0x3400, 0x4DBF}, {0x4E00, 0x9FFF}, {0xA000, 0xA4CF},
                                       {0xA960, 0xA97F}, {0xAC00, 0xD7A3}, {0xF900, 0xFAFF}, {0xFE10, 0xFE19},
                                       {0xFE30, 0xFE6F}, {0xFF00, 0xFF60}, {0xFFE0, 0xFFE6}, {0x1F300, 0x1F64F},
                                       {0x1F680, 0x1F6FF}, {0x1F900, 0x1F9FF}, {0x1FA70, 0x1FAFF},
                                       {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD}};
    for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++)
        if (cp >= zero[i][0] && cp <= zero[i][1])
            return 0;
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
        if (cp >= wide[i][0] && cp <= wide[i][1])
            return 2;
    return 1;
}

int ptq_utf8_width(const char *s)
{
    int w = 0;
    for (size_t n; s && *s; s += n) {
        unsigned cp;
        n = utf8_decode((const unsigned char *)s, &cp);
        if (!n) { /* a byte that starts no character (ptq_escape's output has none): one column */
            n = 1;
            w++;
        } else {
            w += columns(cp);
        }
    }
    return w;
}
