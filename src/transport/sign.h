/* Signed links: HMAC-SHA256 under a random key made when the server
 * starts, so a link the server handed out can be fetched without the
 * bearer token until it expires, and a restart revokes them all. The HMAC
 * is GnuTLS's (gnutls_hmac_fast), which libmicrohttpd already loads: the
 * binary links nothing more. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#define XB_SIGN_HEX_LEN 64

/* The signature of msg, as 64 lowercase hex digits and a NUL; -errno when
 * there is no HMAC to be had (GnuTLS missing). */
int xb_sign(const char *msg, size_t len, char out[XB_SIGN_HEX_LEN + 1]);
/* Whether hex is msg's signature, in time independent of where it differs. */
bool xb_sign_check(const char *msg, size_t len, const char *hex);
