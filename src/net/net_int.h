/* Internals shared by the egress modules (netsys.c, resolve.c, proxy.c,
 * dns.c, netlog.c). */
#pragma once
#include <netinet/in.h>
#include <sys/socket.h>

#include "net/cares.h"
#include "net/egress.h"

#define XB_NET_BUF (64u << 10)
#define XB_NET_HEAD_MAX (16u << 10)
#define XB_NET_SELF_MAX 64
#define XB_NET_DNS_INFLIGHT 64
#define XB_NET_DNS_TCP_MAX 8

enum xb_source_kind { XB_SRC_ANY, XB_SRC_NPM, XB_SRC_PIP };

struct xb_source {
        char *host;
        uint16_t port;                /* the URL's port (80 or 443 when it names none) */
        bool https;
        char *path;                   /* the URL's path, no trailing slash ("" for /) */
        enum xb_source_kind kind;     /* npm=URL, pip=URL, or guessed */
};

struct xb_pkgcache;
struct xb_upstream;

struct xb_resolver;

struct xb_netsys {
        struct xb_netsys_opts o;
        struct xb_loop *loop;
        struct xb_resolver *res;
        struct xb_tls *tls;           /* tls.c: TLS for secrets' hosts; NULL without a state dir */
        struct xb_net_hooks hooks;    /* approvals (ask.c); ask NULL: nothing waits, refused */
        struct xb_net_peer_hook peer; /* peer.c; connect NULL: no peers */
        struct xb_netrule *deny;
        size_t ndeny;
        struct xb_source *src;
        size_t nsrc;
        struct xb_ip self[XB_NET_SELF_MAX];   /* the host's own addresses */
        size_t nself;
        uint64_t self_ms;             /* when self was read */
        struct xb_netsys_stats st;
        /* `npm config get registry`, read from a pipe on the loop */
        int npm_fd;
        pid_t npm_pid;
        struct xb_io npm_io;
        char npm_buf[512];
        size_t npm_len;
        /* the package cache: the store (NULL: none) and the daemon's own
         * fetches (NULL: libcurl missing; no https source is upgraded) */
        struct xb_pkgcache *pkg;
        struct xb_upstream *up;
        char **env;                   /* packages mode's extra env (pkgenv.c) */
};

struct xb_netlog_entry {
        uint64_t time_ms;             /* Unix time */
        char *host, *rule;
        char addr[INET6_ADDRSTRLEN];
        uint16_t port;
        const char *kind;             /* "connect", "http", "socks", "dns" */
        bool allowed;
        uint64_t bytes_out, bytes_in;
};

struct xb_conn;
struct xb_dnsq;
struct xb_dnstcp;

struct xb_net {
        struct xb_netsys *ns;
        struct xb_defer defer;        /* the memory goes after the loop's batch */
        char id[32];
        struct xb_netpol *pol;
        int proxy_fd, dns_fd, dnstcp_fd;
        struct xb_io proxy_io, dns_io, dnstcp_io;
        struct xb_conn *conns;        /* doubly linked */
        unsigned nconns;
        struct xb_dnsq *queries;      /* in flight, for detaching at free */
        unsigned nqueries;
        struct xb_dnstcp *dnstcp;
        unsigned ndnstcp;
        /* the token bucket shared by all its connections */
        uint64_t tokens, tokens_ms;
        struct xb_timer throttle_timer;
        unsigned nthrottled;
        /* the log: a ring of log_cap entries, first = the oldest's offset */
        struct xb_netlog_entry *log;
        size_t log_cap;
        uint64_t log_first, log_next;
        uint64_t allowed, denied, bytes_out, bytes_in;
        struct xb_netsecret *secrets; /* secret.c: what it may use, not see */
        size_t nsecrets;
};

/* pkgenv.c: rebuild ns->env from the sources (after each is added). */
void xb__netsys_pkg_env_build(struct xb_netsys *ns);
void xb__netsys_pkg_env_free(struct xb_netsys *ns);

/* netsys.c */
struct xb_resolver *xb__netsys_resolver(struct xb_netsys *ns);
/* The host's own addresses, re-read when older than 10 s. */
bool xb__netsys_is_self(struct xb_netsys *ns, const struct xb_ip *ip);

/* The decision on a name (or a literal address), before resolution. */
enum xb_verdict { XB_V_DENY, XB_V_ALLOW, XB_V_BY_ADDRESS, XB_V_ASK };
enum xb_verdict xb__net_decide_name(struct xb_net *n, const struct xb_netpol *p, const char *host, bool literal,
                                    uint16_t port, char *rule, size_t rulelen);
/* The decision on one resolved address: NULL when it may be used (rule
 * filled for BY_ADDRESS), or why not. */
const char *xb__net_decide_ip(struct xb_net *n, const struct xb_netpol *p, enum xb_verdict v,
                              const struct xb_ip *ip, char *rule, size_t rulelen);

/* resolve.c: c-ares on the loop */
/* c-ares's own callback types: (arg, status, timeouts, result). */
typedef ares_addrinfo_callback xb_resolve_cb;
typedef ares_callback xb_send_cb;
int xb__resolver_open(struct xb_loop *l, const char *server, struct xb_resolver **ret, struct xb_err *err);
void xb__resolver_close(struct xb_resolver *r);
void xb__resolver_lookup(struct xb_resolver *r, const char *name, xb_resolve_cb cb, void *arg);
void xb__resolver_send(struct xb_resolver *r, const unsigned char *q, int qlen, xb_send_cb cb, void *arg);

/* netlog.c: returns the entry's offset, for xb__netlog_bytes. */
uint64_t xb__netlog_add(struct xb_net *n, const char *kind, const char *host, uint16_t port, const char *addr,
                        bool allowed, const char *rule);
void xb__netlog_bytes(struct xb_net *n, uint64_t off, uint64_t out, uint64_t in, const char *addr);
void xb__netlog_free(struct xb_net *n);

/* secret.c */
struct xb_netsecret;
void xb__net_secrets_free(struct xb_net *n);

/* proxy.c */
void xb__proxy_accept(struct xb_io *io, uint32_t events);
void xb__proxy_free_all(struct xb_net *n);
/* dns.c */
void xb__dns_udp(struct xb_io *io, uint32_t events);
void xb__dns_tcp_accept(struct xb_io *io, uint32_t events);
void xb__dns_free_all(struct xb_net *n);
