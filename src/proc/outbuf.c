/* Head-and-tail output capture. */
#include "outbuf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
xb_outbuf_init(struct xb_outbuf *o, uint64_t limit)
{
        memset(o, 0, sizeof(*o));
        o->limit = limit;
        o->head_cap = (size_t)(limit / 2);
        o->ring_cap = (size_t)(limit - o->head_cap);
}

void
xb_outbuf_free(struct xb_outbuf *o)
{
        free(o->head);
        free(o->ring);
        o->head = o->ring = NULL;
        o->head_len = o->ring_len = o->ring_start = 0;
}

static int
grow_head(struct xb_outbuf *o, size_t need)
{
        size_t cap = 4096;
        char *p;

        while (cap < need)
                cap *= 2;
        if (cap > o->head_cap)
                cap = o->head_cap;
        p = realloc(o->head, cap);
        if (!p)
                return -ENOMEM;
        o->head = p;
        return 0;
}

int
xb_outbuf_write(struct xb_outbuf *o, const void *data, size_t n)
{
        const char *p = data;
        size_t take;

        o->total += n;
        /* Fill the head first. */
        take = o->head_cap - o->head_len < n ? o->head_cap - o->head_len : n;
        if (take) {
                if (grow_head(o, o->head_len + take) < 0)
                        return -ENOMEM;
                memcpy(o->head + o->head_len, p, take);
                o->head_len += take;
                p += take;
                n -= take;
        }
        if (!n || !o->ring_cap)
                return 0;
        if (!o->ring) {
                o->ring = malloc(o->ring_cap);
                if (!o->ring)
                        return -ENOMEM;
        }
        /* Only the last ring_cap bytes of this write can survive. */
        if (n > o->ring_cap) {
                p += n - o->ring_cap;
                n = o->ring_cap;
        }
        while (n) {
                size_t end = (o->ring_start + o->ring_len) % o->ring_cap;
                size_t chunk = o->ring_cap - end < n ? o->ring_cap - end : n;

                memcpy(o->ring + end, p, chunk);
                p += chunk;
                n -= chunk;
                if (o->ring_len + chunk > o->ring_cap) {
                        size_t over = o->ring_len + chunk - o->ring_cap;

                        o->ring_start = (o->ring_start + over) % o->ring_cap;
                        o->ring_len = o->ring_cap;
                } else
                        o->ring_len += chunk;
        }
        return 0;
}

void
xb_outbuf_copy_tail(const struct xb_outbuf *o, char *dst)
{
        size_t first;

        if (!o->ring_len)
                return;
        first = o->ring_cap - o->ring_start < o->ring_len ? o->ring_cap - o->ring_start : o->ring_len;
        memcpy(dst, o->ring + o->ring_start, first);
        memcpy(dst + first, o->ring, o->ring_len - first);
}

size_t
xb_outbuf_marker(const struct xb_outbuf *o, const char *what, char *buf, size_t len)
{
        int n = snprintf(buf, len, "\n[execbox: %" PRIu64 " bytes of %s dropped here; %s was %" PRIu64
                         " bytes, over the %" PRIu64 "-byte limit. Redirect it to a file to keep all of it.]\n",
                         xb_outbuf_dropped(o), what, what, o->total, o->limit);

        return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

char *
xb_outbuf_render(const struct xb_outbuf *o, const char *what, size_t *ret_len)
{
        char marker[256];
        size_t mlen = xb_outbuf_truncated(o) ? xb_outbuf_marker(o, what, marker, sizeof(marker)) : 0;
        size_t len = o->head_len + mlen + o->ring_len;
        char *s = malloc(len + 1), *p = s;

        if (!s)
                return NULL;
        if (o->head_len)
                memcpy(p, o->head, o->head_len);
        p += o->head_len;
        memcpy(p, marker, mlen);
        p += mlen;
        xb_outbuf_copy_tail(o, p);
        s[len] = '\0';
        if (ret_len)
                *ret_len = len;
        return s;
}

size_t
xb_outbuf_read(const struct xb_outbuf *o, uint64_t off, char *dst, size_t max, uint64_t *ret_start)
{
        uint64_t tail_start = o->total - o->ring_len;
        size_t n = 0;

        if (off > o->total)
                off = o->total;
        if (off < o->head_len) {
                size_t k = (size_t)(o->head_len - off) < max ? (size_t)(o->head_len - off) : max;

                memcpy(dst, o->head + off, k);
                n = k;
                *ret_start = off;
                off += k;
                /* Continue into the tail only if nothing was dropped between. */
                if (off < o->head_len || tail_start != o->head_len)
                        return n;
        } else {
                if (off < tail_start)
                        off = tail_start;
                *ret_start = off;
        }
        while (n < max && off < o->total) {
                size_t pos = (o->ring_start + (size_t)(off - tail_start)) % o->ring_cap;
                size_t run = o->ring_cap - pos;

                if (run > o->total - off)
                        run = (size_t)(o->total - off);
                if (run > max - n)
                        run = max - n;
                memcpy(dst + n, o->ring + pos, run);
                n += run;
                off += run;
        }
        return n;
}

void
xb_outbuf_skip(struct xb_outbuf *o, uint64_t n)
{
        if (!n)
                return;
        /* The head is the stream's start, which memory no longer has: the
         * whole cap goes to the tail (before the ring is made). */
        if (!o->ring)
                o->ring_cap += o->head_cap - o->head_len;
        o->head_cap = o->head_len;
        o->total += n;
}
