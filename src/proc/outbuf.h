/* Captured output with a cap: keeps the first half of the cap as the head
 * and the last half as a ring of the tail, and counts what fell between.
 * Memory grows with the output, never past the cap. Pure code, unit-tested. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct xb_outbuf {
        uint64_t limit;       /* bytes kept at most (head + tail) */
        size_t head_cap, ring_cap;
        char *head;
        size_t head_len;
        char *ring;           /* allocated once the head is full */
        size_t ring_start, ring_len;
        uint64_t total;       /* every byte ever written */
};

void xb_outbuf_init(struct xb_outbuf *o, uint64_t limit);
void xb_outbuf_free(struct xb_outbuf *o);
/* Append bytes; -ENOMEM only if an allocation fails (bytes are then dropped). */
int xb_outbuf_write(struct xb_outbuf *o, const void *p, size_t n);
static inline bool xb_outbuf_truncated(const struct xb_outbuf *o)
{
        return o->total > (uint64_t)o->head_len + o->ring_len;
}
static inline uint64_t xb_outbuf_dropped(const struct xb_outbuf *o)
{
        return o->total - o->head_len - o->ring_len;
}
/* n bytes came before (an earlier daemon read them; they are in the
 * stream's file): counted, never kept, and what follows goes to the tail. */
void xb_outbuf_skip(struct xb_outbuf *o, uint64_t n);
/* Head, a marker naming the dropped byte count and `what`, then the tail,
 * as one malloc'd NUL-terminated string (length in *ret_len). */
char *xb_outbuf_render(const struct xb_outbuf *o, const char *what, size_t *ret_len);
/* The marker alone (used when streaming). Returns its length. */
size_t xb_outbuf_marker(const struct xb_outbuf *o, const char *what, char *buf, size_t len);
/* Copy the tail (oldest first) into dst, which has room for ring_len bytes. */
void xb_outbuf_copy_tail(const struct xb_outbuf *o, char *dst);
/* Read kept bytes from absolute offset off: up to max bytes into dst.
 * Bytes dropped from the middle are skipped: *ret_start is where the copy
 * really starts (>= off). Returns the count copied. */
size_t xb_outbuf_read(const struct xb_outbuf *o, uint64_t off, char *dst, size_t max, uint64_t *ret_start);
