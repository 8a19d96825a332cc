/* A streamed gzip decoder over zlib: bounded input in, bounded output
 * out, never the whole stream in memory. It reads members one after
 * another (RFC 1952 allows several, as `cat a.gz b.gz` makes) and
 * refuses anything after the last one that is not a member. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct xb_gunzip;

/* A decoder, or NULL (ENOMEM). Free with xb_gunzip_free. */
struct xb_gunzip *xb_gunzip_new(void);
void xb_gunzip_free(struct xb_gunzip *g);

/* Decode from in (n bytes) into out (cap bytes): *ret_used and
 * *ret_made say how much was read and written, at most cap made, so a
 * caller bounds its work per call. Returns 0, or -EBADMSG when the
 * stream is not gzip or corrupt (a bad header, bad data, a checksum or
 * length that does not match); the decoder is then done for good.
 * With n == 0 it still empties what zlib holds. */
int xb_gunzip_run(struct xb_gunzip *g, const void *in, size_t n, size_t *ret_used, void *out, size_t cap,
                  size_t *ret_made);
/* At the end of the input: 0 when it ended on a member's end; -ENODATA
 * when it was cut short (or empty); -EBADMSG after a corrupt stream. */
int xb_gunzip_end(const struct xb_gunzip *g);
/* Decoded bytes so far. */
uint64_t xb_gunzip_out_bytes(const struct xb_gunzip *g);
