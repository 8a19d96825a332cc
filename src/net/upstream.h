/* Fetches the daemon makes itself, for the package cache (pkgserve.c):
 * libcurl's multi interface driven by the daemon's loop (its sockets are
 * loop fds, its timeout one loop timer), so nothing blocks. A fetch runs
 * on a socket the proxy already connected to an address the policy
 * checked (curl never resolves or connects on its own), over TLS with
 * certificate and host name verification for https sources. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "base/loop.h"

struct xb_upstream;
struct xb_fetch;

struct xb_fetch_ops {
        /* The final response head: status and the raw header lines. */
        void (*head)(void *arg, long status, const char *hdrs, size_t len);
        /* Body bytes: 0 taken, 1 not now (the fetch pauses until
         * xb_fetch_resume, then offers them again), -1 abort. */
        int (*data)(void *arg, const char *p, size_t n);
        /* The end: ok when the whole body came. No callback after it. */
        void (*done)(void *arg, bool ok, const char *why);
};

struct xb_fetch_req {
        const char *url;              /* http:// or https:// */
        const char *host;             /* the URL's host, as connected */
        const char *addr;             /* the address fd is connected to */
        unsigned port;
        int fd;                       /* connected; the fetch owns it from here */
        bool head_only;               /* HEAD */
        const char *const *headers;   /* "Name: value" lines to send, NULL-terminated */
};

int xb_upstream_open(struct xb_loop *loop, struct xb_upstream **ret, struct xb_err *err);
void xb_upstream_close(struct xb_upstream *u);
/* Start a fetch (its callbacks come later, from the loop); NULL when it
 * could not start (fd is closed then). */
struct xb_fetch *xb_fetch_start(struct xb_upstream *u, const struct xb_fetch_req *r, const struct xb_fetch_ops *ops,
                                void *arg);
/* After data said "not now": may call data, and done, before it returns. */
void xb_fetch_resume(struct xb_fetch *f);
/* Stop and free f; no callback after this. */
void xb_fetch_cancel(struct xb_fetch *f);
