/* Published ports: a server listening inside a sandbox, reached from the
 * daemon. The sandbox has a network namespace of its own with only
 * loopback; the daemon makes its sockets there (setns(2) by init's pidfd,
 * and straight back) and connects them to 127.0.0.1 or ::1, so a sandbox
 * can make the daemon reach its own loopback and nothing else. Listing
 * reads /proc/net/tcp{,6} opened the same way. Shared links are signed
 * (core opts' sign hook) and expire. No HTTP here: transport/proxy.c
 * carries the bytes. */
#pragma once
#include <jansson.h>
#include <stdint.h>

#include "base/err.h"

struct xb_core;
struct xb_sbx;

#define XB_SHARE_TTL_DEFAULT_S 3600
#define XB_SHARE_TTL_MAX_S (7u * 24 * 3600)
#define XB_SHARE_TOKEN_MAX 96

/* Parse a port number ("8080": 1-65535, digits only); -EINVAL with err
 * (XB_E_INVALID_PORT) when it is not one. */
int xb_ports_parse(const char *s, unsigned *port, struct xb_err *err);
/* A non-blocking TCP socket in x's network namespace, connected or
 * connecting to port on its loopback (127.0.0.1, then ::1 when refused
 * at once), in *ret_fd; x's idle clock restarts. XB_E_PORT_CLOSED when
 * nothing listens. */
int xb_ports_connect(struct xb_sbx *x, unsigned port, int *ret_fd, struct xb_err *err);
/* The ports listening in x, as [{"port", "address"}], sorted, in *ret. */
int xb_ports_list(struct xb_sbx *x, json_t **ret, struct xb_err *err);
/* A link token for x's port, valid for ttl_s seconds: "EXP.SIG" in token
 * (XB_SHARE_TOKEN_MAX bytes), the expiry (Unix seconds) in *exp. */
int xb_ports_share(struct xb_core *c, const char *id, unsigned port, uint64_t ttl_s, char *token, uint64_t *exp,
                   struct xb_err *err);
/* Whether token is a link for sandbox id's port: 0, or XB_E_BAD_SHARE, or
 * XB_E_SHARE_EXPIRED. */
int xb_ports_share_check(struct xb_core *c, const char *id, unsigned port, const char *token, struct xb_err *err);
