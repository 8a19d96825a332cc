/* The Accept header (RFC 9110 12.5.1): a list of media ranges, each
 * type/subtype, type/ * or * / *, with parameters of which q (0 to 1, three
 * decimals) weighs it. The most specific range that matches a media type
 * gives its q. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "transport/http_int.h"

enum { NO_MATCH = -1, ANY = 0, TYPE_ANY = 1, EXACT = 2 };

static const char *
skip_ows(const char *p, const char *end)
{
        while (p < end && (*p == ' ' || *p == '\t'))
                p++;
        return p;
}

/* One range [p, end) against mime: its specificity (or NO_MATCH) and q. */
static int
range_match(const char *p, const char *end, const char *mime, double *q)
{
        const char *semi = memchr(p, ';', (size_t)(end - p)), *rend = semi ? semi : end, *slash;
        size_t tlen, mlen = strcspn(mime, "/");
        int spec;

        p = skip_ows(p, rend);
        while (rend > p && (rend[-1] == ' ' || rend[-1] == '\t'))
                rend--;
        slash = memchr(p, '/', (size_t)(rend - p));
        if (!slash)
                return NO_MATCH;
        tlen = (size_t)(slash - p);
        if (tlen == 1 && *p == '*' && rend - slash == 2 && slash[1] == '*')
                spec = ANY;
        else if (tlen != mlen || strncasecmp(p, mime, tlen))
                return NO_MATCH;
        else if (rend - slash == 2 && slash[1] == '*')
                spec = TYPE_ANY;
        else if ((size_t)(rend - slash - 1) == strlen(mime + mlen + (mime[mlen] ? 1 : 0)) &&
                 !strncasecmp(slash + 1, mime + mlen + 1, (size_t)(rend - slash - 1)))
                spec = EXACT;
        else
                return NO_MATCH;
        *q = 1;
        /* Parameters: only q matters here. */
        while (semi && semi < end) {
                const char *s = skip_ows(semi + 1, end), *next = NULL;

                if (s < end)
                        next = memchr(s, ';', (size_t)(end - s));

                if (end - s >= 2 && (s[0] == 'q' || s[0] == 'Q') && s[1] == '=') {
                        char num[8] = "";
                        size_t n = (size_t)((next ? next : end) - (s + 2));

                        memcpy(num, s + 2, n < sizeof(num) - 1 ? n : sizeof(num) - 1);
                        *q = strtod(num, NULL);
                        if (!(*q >= 0))
                                *q = 0;
                        if (*q > 1)
                                *q = 1;
                }
                semi = next;
        }
        return spec;
}

/* The q of the most specific range for mime, and that range's specificity. */
static double
accept_q(const char *a, const char *mime, int *best)
{
        double q = 0;

        *best = NO_MATCH;
        while (a && *a) {
                const char *end = strchrnul(a, ',');
                double rq = 0;
                int spec = range_match(a, end, mime, &rq);

                if (spec > *best) {
                        *best = spec;
                        q = rq;
                }
                a = *end ? end + 1 : end;
        }
        return q;
}

double
xb_req_accept_q(const struct xb_req *r, const char *mime)
{
        const char *a = xb_req_header(r, "Accept");
        int best;
        double q;

        if (!a || !*a)
                return 1;
        q = accept_q(a, mime, &best);
        return best == NO_MATCH ? 0 : q;
}

bool
xb_req_accepts(const struct xb_req *r, const char *mime)
{
        int best;
        double q = accept_q(xb_req_header(r, "Accept"), mime, &best);

        return best >= TYPE_ANY && q > 0;
}
