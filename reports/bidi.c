/* Closing the bidi levels a name leaves open (reports/bidi.h). Covered by
 * tests/test_html_report.c and tests/test_validate_report.c. */
#include "reports/bidi.h"

#define BIDI_PDF "\xE2\x80\xAC" /* U+202C */
#define BIDI_PDI "\xE2\x81\xA9" /* U+2069 */

void bidi_step(bidi_levels *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    if (p[0] != 0xE2 || (p[1] != 0x80 && p[1] != 0x81) || !p[2])
        return;
    const int embed = p[1] == 0x80 && p[2] >= 0xAA && p[2] <= 0xAE && p[2] != 0xAC;
    const int isolate = p[1] == 0x81 && p[2] >= 0xA6 && p[2] <= 0xA8;
    if (embed || isolate) {
        b->n_embed += embed;
        b->n_isolate += isolate;
        if (b->n < (int)sizeof b->open)
            b->open[b->n] = embed ? 'E' : 'I';
        b->n++;
    } else if (b->n > (int)sizeof b->open) {
        return; /* past the depth kept: closed by the counts */
    } else if (p[1] == 0x80 && p[2] == 0xAC) {
        if (b->n > 0 && b->open[b->n - 1] == 'E')
            b->n--;
    } else if (p[1] == 0x81 && p[2] == 0xA9) {
        int i = b->n;
        while (i > 0 && b->open[i - 1] != 'I')
            i--;
        if (i > 0)
            b->n = i - 1;
    }
}

void bidi_close(const bidi_levels *b, ptq_buf *out)
{
    if (b->n > (int)sizeof b->open) {
        for (int64_t i = 0; i < b->n_isolate; i++)
            ptq_buf_put(out, BIDI_PDI, 3);
        for (int64_t i = 0; i < b->n_embed; i++)
            ptq_buf_put(out, BIDI_PDF, 3);
        return;
    }
    for (int i = b->n; i > 0; i--)
        ptq_buf_put(out, b->open[i - 1] == 'E' ? BIDI_PDF : BIDI_PDI, 3);
}
