/* TLS for the hosts of secrets (secret.h): the proxy terminates a CONNECT
 * to such a host with a leaf certificate minted for it by a per-daemon CA,
 * swaps placeholders for values in the request head, and re-originates TLS
 * to the upstream, verified against the host's trust store (and
 * --upstream-ca). Every other CONNECT stays an opaque tunnel.
 *
 * GnuTLS, loaded with dlopen(3) like c-ares (cares.h): libmicrohttpd
 * already brings it, so the daemon gains no library, and `execbox run`
 * never loads it. The CA's key is made once and kept in
 * STATE_DIR/egress-ca/ca.key (0600, a directory of 0700); it is never
 * bound into a sandbox. Its certificate is appended to the sandbox's CA
 * bundle (the /etc view) so clients inside trust the leaves.
 *
 * The relay runs on the loop: both sessions are non-blocking, every read
 * is at most one buffer, and the bytes are charged to the sandbox's bucket
 * like the rest of the proxy. One request per connection is rewritten: its
 * head gets the secrets and `Connection: close`, so a client that wants a
 * second request opens a new connection (and its head is rewritten too). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

struct xb_tls;
struct xb_conn;

/* Load GnuTLS, and load or make the CA under dir/egress-ca; upstream_ca may
 * be NULL. */
int xb_tls_open(const char *dir, const char *upstream_ca, struct xb_tls **ret, struct xb_err *err);
void xb_tls_close(struct xb_tls *t);
/* The CA certificate, PEM (lives with t). */
const char *xb_tls_ca_pem(const struct xb_tls *t);
/* Counts, never content. */
uint64_t xb_tls_intercepted(const struct xb_tls *t);

/* proxy.c's hooks: take over c (connected upstream, nothing said to the
 * client yet) when its host is a secret's; false leaves it to the tunnel. */
bool xb__tls_take(struct xb_conn *c);
/* c's events and wants, while tls.c has it. */
void xb__tls_update(struct xb_conn *c);
void xb__tls_free(struct xb_conn *c);
