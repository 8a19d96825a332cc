/* The Connect protocol's framing and errors, JSON codec only
 * (connectrpc.com/docs/protocol): what E2B's envd speaks and its SDKs
 * expect. A streamed message is an envelope: one flag byte, a 4-byte
 * big-endian length, then that many bytes of JSON; the last envelope of a
 * response carries flag 0x02 and {} or {"error": {code, message}}. A unary
 * call is plain JSON both ways; its error is {code, message} with the HTTP
 * status the code names. No I/O here: the parser is fuzzed on its own. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/buf.h"
#include "base/ecode.h"
#include "base/err.h"

#define XB_CONNECT_COMPRESSED 0x01u
#define XB_CONNECT_END 0x02u
#define XB_CONNECT_HEADER 5u

/* One envelope at the start of buf (len bytes): its size in bytes with
 * *flags and the payload span set; -EAGAIN when more bytes are needed;
 * -EMSGSIZE past max payload bytes; -EPROTO for a compressed or unknown
 * flag (this server offers no compression). Never reads past len. */
ssize_t xb_connect_parse(const void *buf, size_t len, size_t max, uint8_t *flags, const uint8_t **payload,
                         size_t *plen);
/* Append an envelope of n payload bytes to b; -ENOMEM, -EMSGSIZE. */
int xb_connect_frame(struct xb_buf *b, uint8_t flags, const void *payload, size_t n);
/* The HTTP status of a Connect error code ("not_found" -> 404); 500 for
 * one it does not know. */
unsigned xb_connect_http_status(const char *code);
/* The Connect code for an engine failure: the neutral code first, then
 * the errno for the generic file and request codes. */
const char *xb_connect_code(enum xb_ecode ec, int errnum);
/* xb_connect_code of err's code and errno. */
const char *xb_connect_code_ec(const struct xb_err *err);
/* The Connect code for a unary reply's HTTP status (what a client infers
 * when a proxy, not the server, answered). */
const char *xb_connect_code_of_status(unsigned status);
