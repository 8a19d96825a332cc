/* The proxy's connection, shared by its state machine (proxy.c) and its
 * request parsers (proxy_parse.c). */
#pragma once
#include "net/net_int.h"

enum cstate { C_HEAD, C_RESOLVE, C_CONNECT, C_RELAY, C_CLOSING };
enum ckind { K_UNKNOWN, K_CONNECT, K_FORWARD, K_SOCKS };

/* One direction's bytes in flight: a buffer (request heads, replies, and
 * whatever came with them), then, once relaying, a pipe that splice(2)
 * moves the rest through without copying it into the daemon. Buffer bytes
 * always go out before pipe bytes. */
struct cbuf {
        uint8_t *b;
        size_t off, len;              /* data is b[off, off+len) */
        int pr, pw;                   /* the pipe, or -1: relay through b */
        size_t plen, pcap;            /* bytes in the pipe, its size */
};

/* 1 MiB: a relay that runs less often under load moves more each time it
 * runs: 256 KiB cost a quarter more CPU per byte, and more waits for a
 * CPU on a busy host. The sockets on either side buffer megabytes each. */
#define XB_NET_PIPE (1u << 20)

static inline size_t
xb__px_pending(const struct cbuf *b)
{
        return b->len + b->plen;
}

static inline bool
xb__px_has_room(const struct cbuf *b)
{
        return b->pw >= 0 ? b->plen < b->pcap : b->len < XB_NET_BUF;
}

struct xb_conn {
        struct xb_net *net;           /* NULL once the sandbox went (a lookup may still answer) */
        struct xb_conn *prev, *next;
        struct xb_defer defer;
        enum cstate st;
        enum ckind kind;
        int cfd, ufd;
        struct xb_io cio, uio;
        uint32_t cwant, uwant;
        struct xb_timer timer;
        struct cbuf up, down;         /* sandbox -> world, world -> sandbox */
        bool c_eof, u_eof, u_shut, c_shut, throttled, resolving, dead;
        bool socks_greeted, tried;
        struct xb_loop *loop;
        char host[XB_NETNAME_MAX + 1];
        uint16_t port;
        bool literal;
        struct xb_netpol *pol;
        enum xb_verdict verdict;
        char rule[128], addr[INET6_ADDRSTRLEN], last_why[96];
        struct ares_addrinfo *ai;
        struct ares_addrinfo_node *node;
        uint64_t logoff, out, in;
        struct xb_tlsconn *tls;       /* tls_relay.c has c: a secret's host over TLS */
        bool asking;                  /* ask.c: waits for a human (ask_id) */
        uint64_t ask_id;
        char *fwd_head;               /* the rebuilt request head (K_FORWARD) */
        size_t fwd_len;
        struct xb_pkgreq *pkg;        /* the package cache's (pkgserve.c), or NULL */
        bool pkg_owned;               /* pkgserve.c drives the client side */
};

/* SOCKS5 reply codes (RFC 1928 section 6). */
#define SOCKS_OK 0
#define SOCKS_FAIL 1
#define SOCKS_RULESET 2
#define SOCKS_UNREACH 4
#define SOCKS_REFUSED 5
#define SOCKS_BADCMD 7
#define SOCKS_BADATYP 8

/* proxy.c */
void xb__px_say(struct xb_conn *c, const void *data, size_t len);
void xb__px_http_reply(struct xb_conn *c, int status, const char *reason, const char *body);
void xb__px_socks_reply(struct xb_conn *c, uint8_t code);
void xb__px_closing(struct xb_conn *c);
void xb__px_close(struct xb_conn *c);
void xb__px_update(struct xb_conn *c);
/* Decide c's target and look it up (c->host, c->port, c->kind are set). */
void xb__px_resolve(struct xb_conn *c);
/* proxy_parse.c: the request in c->up, once more of it has come. */
void xb__px_parse_head(struct xb_conn *c);
/* Whether a request head (through its blank line) is framed as RFC 9112
 * asks: every line ends in CRLF (no bare CR or LF, no NUL), no folded
 * line, and every field a token name straight before its colon. The
 * rewrites split on CRLF; an upstream that ends lines at LF would read a
 * second request, with a Host of the client's, after the secrets go in. */
bool xb__px_head_ok(const char *h, size_t hl);
/* pkgserve.c, the package cache's hooks: a forwarded request the policy
 * allowed (true: taken, served from the store), the upstream connected
 * for one it marked (c->pkg), and c closing. */
bool xb__pkg_request(struct xb_conn *c);
void xb__pkg_connected(struct xb_conn *c);
void xb__pkg_release(struct xb_conn *c);
/* secret.c: the secrets for c->host put into c->fwd_head; -errno. */
int xb__px_inject(struct xb_conn *c);
/* proxy_relay.c: the relay's pipes (both directions); the sandbox's side
 * of a connection set up for loopback; reading what fits
 * into b from fd (1 data, 0 EOF, -1 error, 2 nothing now, counted in
 * *count), writing b to fd (-1 on error), counting relayed bytes for the
 * sandbox and the server, and shutting each direction down once through. */
void xb__px_pipes_open(struct xb_conn *c);
void xb__px_tune_client(int fd);
void xb__px_pipes_close(struct xb_conn *c);
int xb__px_fill(struct xb_conn *c, int fd, struct cbuf *b, uint64_t *count);
int xb__px_flush(int fd, struct cbuf *b);
void xb__px_count(struct xb_conn *c, uint64_t out, uint64_t in);
void xb__px_half_close(struct xb_conn *c);
/* proxy_relay.c, for tls_relay.c too: the sandbox's bucket (0 throttles c until
 * the refill), charging a read, and counting bytes relayed. */
size_t xb__px_allowance(struct xb_conn *c, size_t want);
void xb__px_charge(struct xb_conn *c, size_t n_read);
void xb__px_account(struct xb_conn *c, uint64_t out, uint64_t in);
/* proxy.c: look c's name up once it is allowed (verdict and rule set). */
void xb__px_lookup(struct xb_conn *c);
/* ask.c: wait for a human on c (verdict XB_V_ASK); its answer resumes c. */
void xb__px_ask(struct xb_conn *c);
void xb__px_ask_cancel(struct xb_conn *c);
/* peer.c: true when c->host is a peer's name (XB_NET_PEER_SUFFIX), which
 * it then decides and connects or refuses. */
bool xb__px_peer(struct xb_conn *c);
/* ask.c: the sandbox's own API on the proxy (path of plen bytes, origin
 * form); false when path is not under XB_NET_API_PREFIX. */
bool xb__px_internal(struct xb_conn *c, const char *path, size_t plen);
