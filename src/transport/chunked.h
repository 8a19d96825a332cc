/* Decoding a chunked body (RFC 9112, 7.1) as its bytes arrive, for the
 * proxy's replies from sandboxes: input the sandbox controls, so every
 * line is bounded and every number checked. Extensions and trailers are
 * read and dropped. No allocation, no I/O. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define XB_CHUNK_LINE_MAX 1024        /* a size line, or a trailer */

struct xb_dechunk {
        enum { XB_CH_SIZE, XB_CH_DATA, XB_CH_DATA_END, XB_CH_TRAILER, XB_CH_DONE } state;
        uint64_t left;                /* XB_CH_DATA: bytes of this chunk still to come */
};

/* Decode what it can of in (avail bytes) into out (max bytes): the bytes
 * written, or -1 when the input is malformed. *used says how much of in
 * was consumed (the rest waits for more input); *done once the body has
 * ended, the last chunk and trailers included. */
ssize_t xb_dechunk(struct xb_dechunk *d, const char *in, size_t avail, size_t *used, char *out, size_t max,
                   bool *done);
