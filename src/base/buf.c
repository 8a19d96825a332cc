/* Growable buffer with a cap. */
#include "buf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *
xb_buf_reserve(struct xb_buf *b, size_t n)
{
        size_t max = b->max ? b->max : XB_BUF_DEFAULT_MAX;
        size_t need;

        if (n > max || b->len > max - n)
                return NULL;
        need = b->len + n + 1;
        if (need > b->cap) {
                size_t cap = b->cap ? b->cap : 256;
                char *p;

                while (cap < need)
                        cap *= 2;
                if (cap > max + 1)
                        cap = max + 1;
                p = realloc(b->data, cap);
                if (!p)
                        return NULL;
                b->data = p;
                b->cap = cap;
                b->data[b->len] = '\0';
        }
        return b->data + b->len;
}

int
xb_buf_append(struct xb_buf *b, const void *p, size_t n)
{
        char *dst = xb_buf_reserve(b, n);

        if (!dst)
                return -ENOBUFS;
        if (n)
                memcpy(dst, p, n);
        b->len += n;
        b->data[b->len] = '\0';
        return 0;
}

int
xb_buf_puts(struct xb_buf *b, const char *s)
{
        return xb_buf_append(b, s, strlen(s));
}

int
xb_buf_vprintf(struct xb_buf *b, const char *fmt, va_list ap)
{
        va_list aq;
        int n;
        char *dst;

        va_copy(aq, ap);
        n = vsnprintf(NULL, 0, fmt, aq);
        va_end(aq);
        if (n < 0)
                return -EINVAL;
        dst = xb_buf_reserve(b, (size_t)n);
        if (!dst)
                return -ENOBUFS;
        vsnprintf(dst, (size_t)n + 1, fmt, ap);
        b->len += (size_t)n;
        return 0;
}

int
xb_buf_printf(struct xb_buf *b, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = xb_buf_vprintf(b, fmt, ap);
        va_end(ap);
        return r;
}

char *
xb_buf_steal(struct xb_buf *b)
{
        char *p;

        if (!b->data && !xb_buf_reserve(b, 0))
                return NULL;
        p = b->data;
        b->data = NULL;
        b->len = b->cap = 0;
        return p;
}

void
xb_buf_reset(struct xb_buf *b)
{
        b->len = 0;
        if (b->data)
                b->data[0] = '\0';
}

void
xb_buf_free(struct xb_buf *b)
{
        free(b->data);
        b->data = NULL;
        b->len = b->cap = 0;
}

void
xb_tail_add(char *tail, size_t *ntail, size_t max, const char *d, size_t n)
{
        if (n >= max) {
                memcpy(tail, d + n - max, max);
                *ntail = max;
        } else {
                if (*ntail + n > max) {
                        memmove(tail, tail + (*ntail + n - max), max - n);
                        *ntail = max - n;
                }
                memcpy(tail + *ntail, d, n);
                *ntail += n;
        }
        tail[*ntail] = 0;
}
