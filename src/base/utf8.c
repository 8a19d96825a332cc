/* UTF-8 validation (RFC 3629: no overlongs, no surrogates, max U+10FFFF). */
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

size_t
xb_utf8_seq_len(const unsigned char *p, size_t n)
{
        unsigned char c = p[0];

        if (c < 0x80)
                return 1;
        if (c >= 0xc2 && c <= 0xdf)
                return n >= 2 && (p[1] & 0xc0) == 0x80 ? 2 : 0;
        if (c >= 0xe0 && c <= 0xef) {
                if (n < 3 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80)
                        return 0;
                if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f))
                        return 0;
                return 3;
        }
        if (c >= 0xf0 && c <= 0xf4) {
                if (n < 4 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 || (p[3] & 0xc0) != 0x80)
                        return 0;
                if ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f))
                        return 0;
                return 4;
        }
        return 0;
}

size_t
xb_utf8_valid_prefix(const char *s, size_t n)
{
        const unsigned char *p = (const unsigned char *)s;
        size_t i = 0;

        while (i < n) {
                size_t k;

                if ((unsigned)p[i] - 1u < 0x7fu) {   /* ASCII, not NUL */
                        i++;
                        continue;
                }
                k = xb_utf8_seq_len(p + i, n - i);
                if (!k || (k == 1 && p[i] == 0))
                        break;
                i += k;
        }
        return i;
}

bool
xb_utf8_valid(const char *s, size_t n)
{
        return xb_utf8_valid_prefix(s, n) == n;
}

char *
xb_utf8_sanitize(const char *s, size_t n, size_t *ret_len)
{
        const unsigned char *p = (const unsigned char *)s;
        char *out = malloc(n * 3 + 1), *o = out;

        if (!out)
                return NULL;
        for (size_t i = 0; i < n;) {
                size_t k;

                /* A run of ASCII without NUL, copied at once: output is
                 * mostly that, and tens of MB of it pass here on the loop. */
                if ((unsigned)p[i] - 1u < 0x7fu) {
                        size_t j = i + 1;

                        while (j < n && (unsigned)p[j] - 1u < 0x7fu)
                                j++;
                        memcpy(o, p + i, j - i);
                        o += j - i;
                        i = j;
                        continue;
                }
                k = xb_utf8_seq_len(p + i, n - i);

                if (k && !(k == 1 && p[i] == 0)) {
                        memcpy(o, p + i, k);
                        o += k;
                        i += k;
                } else {
                        /* NUL is legal UTF-8 but ends C strings in clients: replace it too. */
                        memcpy(o, "\xef\xbf\xbd", 3);
                        o += 3;
                        i++;
                }
        }
        *o = '\0';
        if (ret_len)
                *ret_len = (size_t)(o - out);
        return out;
}
