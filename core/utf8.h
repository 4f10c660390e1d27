/* Strict UTF-8 inside the library (core/utf8.c): the size of one
 * character, for writers that copy characters whole (ptq_escape). */
#ifndef PTQ_CORE_UTF8_H
#define PTQ_CORE_UTF8_H

#include <stddef.h>

/* Bytes of the strict UTF-8 character s starts (no overlong forms,
 * surrogates or values above U+10FFFF): 1 to 4, or 0 when s starts none. */
size_t ptq_utf8_char_bytes(const char *s);

/* ptq_utf8_char_bytes, and the character's code point into *cp (set only when it returns 1 to 4). */
size_t ptq_utf8_decode(const char *s, unsigned *cp);

#endif
