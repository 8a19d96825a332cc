/* A growable byte buffer with a hard size cap, so nothing a client or a
 * sandbox controls can make it grow without bound. */
#pragma once
#include <stdarg.h>
#include <stddef.h>

struct xb_buf {
        char *data;      /* always NUL-terminated when non-NULL */
        size_t len;
        size_t cap;
        size_t max;      /* 0 means the default cap, XB_BUF_DEFAULT_MAX */
};

#define XB_BUF_DEFAULT_MAX ((size_t)64 << 20)

/* Append n bytes; -ENOBUFS when the cap would be passed (nothing appended). */
int xb_buf_append(struct xb_buf *b, const void *p, size_t n);
int xb_buf_puts(struct xb_buf *b, const char *s);
int xb_buf_printf(struct xb_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int xb_buf_vprintf(struct xb_buf *b, const char *fmt, va_list ap);
/* Make room for n more bytes; returns a pointer to write into, or NULL. */
char *xb_buf_reserve(struct xb_buf *b, size_t n);
/* Transfer ownership of the data to the caller (NUL-terminated, never NULL on success). */
char *xb_buf_steal(struct xb_buf *b);
void xb_buf_reset(struct xb_buf *b);
void xb_buf_free(struct xb_buf *b);

/* The last max bytes of all the n-byte pieces added: tail has room for
 * max + 1 and stays NUL-terminated (an error quotes it). */
void xb_tail_add(char *tail, size_t *ntail, size_t max, const char *d, size_t n);
