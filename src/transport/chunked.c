/* Chunked bodies, decoded incrementally: see chunked.h. */
#define _GNU_SOURCE
#include "transport/chunked.h"

#include <string.h>

static int
hexval(char c)
{
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A size line's number, up to its extension; -1 if it is not one. At
 * most 15 hex digits: no overflow. */
static int64_t
size_line(const char *s, size_t len)
{
        int64_t v = 0;
        size_t i = 0;

        for (; i < len && hexval(s[i]) >= 0; i++) {
                if (i == 15)
                        return -1;
                v = v * 16 + hexval(s[i]);
        }
        if (i == 0)
                return -1;
        while (i < len && (s[i] == ' ' || s[i] == '\t'))
                i++;
        return i == len || s[i] == ';' ? v : -1;
}

ssize_t
xb_dechunk(struct xb_dechunk *d, const char *in, size_t avail, size_t *used, char *out, size_t max, bool *done)
{
        size_t got = 0, off = 0;

        *done = false;
        for (;;) {
                const char *s = in + off, *nl;
                size_t left = avail - off, n;

                *used = off;
                if (d->state == XB_CH_DONE) {
                        *done = true;
                        return (ssize_t)got;
                }
                if (d->state == XB_CH_DATA) {
                        n = left < max - got ? left : max - got;
                        if (n > d->left)
                                n = (size_t)d->left;
                        if (!n)
                                return (ssize_t)got;
                        memcpy(out + got, s, n);
                        got += n;
                        off += n;
                        d->left -= n;
                        if (!d->left)
                                d->state = XB_CH_DATA_END;
                        continue;
                }
                nl = memmem(s, left < XB_CHUNK_LINE_MAX + 2 ? left : XB_CHUNK_LINE_MAX + 2, "\r\n", 2);
                if (!nl)
                        return left >= XB_CHUNK_LINE_MAX + 2 ? -1 : (ssize_t)got;
                off += (size_t)(nl - s) + 2;
                if (d->state == XB_CH_DATA_END) {
                        if (nl != s)
                                return -1;
                        d->state = XB_CH_SIZE;
                } else if (d->state == XB_CH_SIZE) {
                        int64_t sz = size_line(s, (size_t)(nl - s));

                        if (sz < 0)
                                return -1;
                        d->left = (uint64_t)sz;
                        d->state = sz ? XB_CH_DATA : XB_CH_TRAILER;
                } else if (nl == s) {
                        d->state = XB_CH_DONE;   /* the empty line after the trailers */
                }
        }
}
