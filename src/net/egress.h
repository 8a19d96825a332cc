/* Egress: the daemon side of a sandbox's network. A sandbox has no
 * interface but loopback; its setup child binds 127.0.0.1:3128 (TCP) and
 * 127.0.0.1:53 (UDP and TCP) inside the sandbox's network namespace and
 * hands those sockets to the daemon, which serves them on its loop:
 *   - 3128 is an HTTP proxy (CONNECT, and plain http:// requests
 *     forwarded) and a SOCKS5 proxy (CONNECT) on the same port;
 *   - 53 answers names the policy allows (relayed to the host's resolver
 *     through c-ares) and NXDOMAIN for the rest.
 * Every connection is decided by the sandbox's policy (policy.h) on the
 * name, then again on each resolved address just before connect(2): the
 * always-refused ranges (addr.h), the host's own addresses, the
 * server-wide deny list. Nothing inside can reach anything else: there is
 * no route out of the namespace (peers, below, go through the proxy too). Each decision is logged per sandbox.
 * Connections per sandbox are capped and their bytes share one token
 * bucket; every read is bounded, so one sandbox cannot starve another.
 * Nothing here blocks the loop. docs/network.md has the why. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/loop.h"
#include "net/pkgcache.h"
#include "net/policy.h"

#define XB_NET_PROXY_PORT 3128
#define XB_NET_DNS_PORT 53
#define XB_NET_CONNS_DEFAULT 64
#define XB_NET_CONNS_TOTAL 4096
#define XB_NET_LOG_MAX 1000

/* The proxy's address as processes inside see it (their env). */
#define XB_NET_PROXY_URL "http://127.0.0.1:3128"

struct xb_netsys_opts {
        enum xb_netmode max;          /* the operator's ceiling */
        const char *const *deny;      /* server-wide deny rules */
        size_t ndeny;
        const char *const *sources;   /* package source URLs (mode packages) */
        size_t nsources;
        bool npm_registry;            /* also ask `npm config get registry` (at start, off the loop) */
        const char *dns_server;       /* "IP" or "IP:PORT"; NULL: the host's resolv.conf */
        unsigned conns_max;           /* per sandbox; 0: XB_NET_CONNS_DEFAULT */
        uint64_t rate;                /* bytes per second per sandbox; 0: unbounded */
        const char *cache_dir;        /* the package cache's home; NULL: no cache */
        uint64_t cache_size;          /* its bound; 0: no cache */
        struct xb_tls *tls;           /* TLS for secrets' hosts (tls.h), taken; NULL: none */
};

struct xb_netsys_stats {
        uint64_t allowed, denied;     /* connections decided */
        uint64_t bytes_out, bytes_in; /* sandbox to the world, and back */
        uint64_t dns_answered, dns_refused;
        uint64_t conns_open;
        uint64_t tls_intercepted;     /* CONNECTs to secrets' hosts terminated (tls.h) */
        uint64_t peer_allowed, peer_denied;   /* connections to peers' ports (peer.c) */
};

struct xb_netsys;
struct xb_net;

int xb_netsys_open(const struct xb_netsys_opts *o, struct xb_loop *loop, struct xb_netsys **ret,
                   struct xb_err *err);
void xb_netsys_close(struct xb_netsys *ns);
const struct xb_netsys_stats *xb_netsys_stats(const struct xb_netsys *ns);
enum xb_netmode xb_netsys_max(const struct xb_netsys *ns);
/* The package cache's counters, or NULL when there is no cache. */
const struct xb_pkgcache_stats *xb_netsys_pkgcache(const struct xb_netsys *ns);
/* What processes in `packages` mode get besides the proxy's env: npm's
 * and pip's index URLs, pointed through the package cache; NULL-terminated,
 * valid until the next turn of the loop. */
const char *const *xb_netsys_pkg_env(const struct xb_netsys *ns);
/* {"max", "deny", "package_sources"}: what the operator set. */
json_t *xb_netsys_json(const struct xb_netsys *ns);

/* A sandbox's egress state, with policy `none` and no sockets yet. */
struct xb_net *xb_net_new(struct xb_netsys *ns, const char *id);
/* Serve the sockets the setup child made (proxy TCP, DNS UDP, DNS TCP);
 * takes them, closing them on failure. */
int xb_net_attach(struct xb_net *n, const int fds[3], struct xb_err *err);
/* Replace the policy (takes a reference); the next connection uses it. */
void xb_net_set_policy(struct xb_net *n, struct xb_netpol *p);
const struct xb_netpol *xb_net_policy(const struct xb_net *n);
/* Close every connection and socket; safe on NULL. */
void xb_net_free(struct xb_net *n);
/* The log from offset: {"entries", "first_offset", "next_offset", "dropped"}. */
json_t *xb_net_log_json(const struct xb_net *n, uint64_t offset, unsigned limit);
/* {"connections", "allowed", "denied", "bytes_out", "bytes_in"} so far. */
json_t *xb_net_stats_json(const struct xb_net *n);

/* Approvals: a connection to a name the policy marks `ask`, or a secret
 * asked for from inside (GET http://127.0.0.1:3128/_execbox/secrets/NAME,
 * $EXECBOX_API/secrets/NAME), waits for a human. The engine decides
 * (core/approvals.c) through these hooks; net/ only waits, bounded. */
#define XB_NET_API_PREFIX "/_execbox/"
#define XB_NET_API_URL XB_NET_PROXY_URL "/_execbox"

enum xb_ask_kind { XB_ASK_EGRESS, XB_ASK_SECRET };

struct xb_net_ask {
        enum xb_ask_kind kind;
        const char *name;             /* the host, or the secret's name */
        uint16_t port;
        const char *hosts, *header;   /* a secret: what the sandbox proposes ("a.test,b.test"), or NULL */
        const char *reason;           /* the sandbox's words, or NULL */
        uint64_t timeout_ms;          /* 0: the server's */
};

/* The answer, exactly once unless cancelled: why is the refusal's reason;
 * placeholder a granted secret's. */
typedef void xb_net_answer_fn(void *arg, bool allow, const char *why, const char *placeholder);

struct xb_net_hooks {
        void *ctx;
        /* 0 and *id: the answer comes later; else -errno, why filled. */
        int (*ask)(void *ctx, const char *sandbox_id, const struct xb_net_ask *a, xb_net_answer_fn *answer,
                   void *arg, uint64_t *id, char *why, size_t whylen);
        void (*cancel)(void *ctx, uint64_t id);
};

void xb_netsys_set_hooks(struct xb_netsys *ns, const struct xb_net_hooks *h);

/* Peers: from inside A, http://B.sandbox.internal:PORT/ (or CONNECT, or
 * SOCKS5, to B.sandbox.internal:PORT) through A's proxy reaches a server
 * listening on B's loopback, when A's policy lists B in peers and B's
 * lists A (peer.c). No DNS is involved: the proxy takes the name. The
 * engine decides the rest (core/peers.c: same tenant, B's opt-in, B
 * running) at each connection, and hands back a socket made in B's
 * network namespace. */
#define XB_NET_PEER_SUFFIX ".sandbox.internal"

struct xb_net_peer_hook {
        void *ctx;
        /* A socket connected or connecting to port on to's loopback, in
         * *fd; or -EPERM (not allowed), -EBUSY (paused) or another -errno
         * (unreachable), with why filled. */
        int (*connect)(void *ctx, const char *from, const char *to, uint16_t port, int *fd, char *why,
                       size_t whylen);
};

void xb_netsys_set_peer_hook(struct xb_netsys *ns, const struct xb_net_peer_hook *h);
