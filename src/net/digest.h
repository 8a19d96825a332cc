/* SHA-256 for keys made of many parts (the install cache's): GnuTLS's,
 * loaded at run time like the package cache's (libmicrohttpd loads it
 * anyway). */
#pragma once
#include <stddef.h>

#include "base/err.h"

#define XB_SHA256_HEX 65

struct xb_sha256;

/* NULL with err when GnuTLS's digest cannot be had. */
struct xb_sha256 *xb_sha256_new(struct xb_err *err);
void xb_sha256_add(struct xb_sha256 *h, const void *p, size_t n);
/* A string and its NUL: parts never run into each other. */
void xb_sha256_str(struct xb_sha256 *h, const char *s);
/* The digest as 64 hex digits and a NUL; frees h. */
void xb_sha256_end(struct xb_sha256 *h, char out[XB_SHA256_HEX]);
