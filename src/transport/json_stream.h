/* A JSON document written a piece at a time (json_stream.c): the bytes
 * json_dumps(v, JSON_COMPACT) makes, with bounded work per piece. */
#pragma once
#include <jansson.h>
#include <sys/types.h>

struct xb_jgen;

/* A document whose strings and keys come to this many bytes or more is
 * generated as it is sent; a smaller one is one json_dumps. */
#define XB_JSON_STREAM_MIN (256u << 10)

/* Takes body; NULL when out of memory (body is then released). */
struct xb_jgen *xb_jgen_new(json_t *body);
/* The same with json_dumps flags for its numbers (JSON_REAL_PRECISION);
 * JSON_COMPACT is always on. */
struct xb_jgen *xb_jgen_new_flags(json_t *body, size_t flags);
/* The next up to max bytes (max >= 6): their count, 0 at the end, -1 when
 * out of memory. */
ssize_t xb_jgen_read(struct xb_jgen *g, char *out, size_t max);
void xb_jgen_free(struct xb_jgen *g);
/* About the bytes of v's strings and keys, counted until stop: cheap, to
 * choose between json_dumps and a generator. */
size_t xb_json_string_bytes(json_t *v, size_t stop);
