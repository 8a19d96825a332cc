/* The proxy at 127.0.0.1:3128 inside each sandbox: HTTP CONNECT, plain
 * http:// requests forwarded, and SOCKS5 CONNECT, told apart by the first
 * byte. A connection goes HEAD (read the request) -> RESOLVE (c-ares) ->
 * CONNECT (non-blocking, each allowed address in turn, each one checked
 * just before connect(2)) -> RELAY (two bounded buffers), or to CLOSING
 * with a refusal the client can read. Hooks for later: a forwarded
 * request's header block is rebuilt in forward_head() (where per-host
 * headers would be added), and a CONNECT's client side is relayed raw
 * from start_relay() (where a TLS-terminating hook would take it over). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "net/proxy_int.h"
#include "net/tls.h"

static void try_connect(struct xb_conn *c);

static void
free_conn(void *p)
{
        struct xb_conn *c = p;

        free(c->up.b);
        free(c->down.b);
        free(c->fwd_head);
        free(c);
}

void
xb__px_close(struct xb_conn *c)
{
        struct xb_net *n = c->net;

        if (c->dead)
                return;
        c->dead = true;
        xb__pkg_release(c);
        xb_io_stop(&c->cio);
        xb_io_stop(&c->uio);
        xb_timer_stop(&c->timer);
        if (c->cfd >= 0)
                close(c->cfd);
        if (c->ufd >= 0)
                close(c->ufd);
        c->cfd = c->ufd = -1;
        xb__tls_free(c);
        if (c->asking)
                xb__px_ask_cancel(c);
        xb__px_pipes_close(c);
        if (c->ai) {
                ARES(freeaddrinfo)(c->ai);
                c->ai = NULL;
        }
        xb_netpol_unref(c->pol);
        c->pol = NULL;
        if (n) {
                if (c->logoff != UINT64_MAX)
                        xb__netlog_bytes(n, c->logoff, c->out, c->in, c->addr);
                if (c->throttled)
                        n->nthrottled--;
                if (c->prev)
                        c->prev->next = c->next;
                else
                        n->conns = c->next;
                if (c->next)
                        c->next->prev = c->prev;
                n->nconns--;
                n->ns->st.conns_open--;
                c->net = NULL;
        }
        /* A lookup in flight still holds c: its callback frees it. */
        if (!c->resolving)
                xb_loop_defer(c->loop, &c->defer, free_conn, c);
}

static void
on_timeout(struct xb_timer *t)
{
        xb__px_close(t->data);
}

/* Queue bytes for the sandbox (a reply, a refusal). */
void
xb__px_say(struct xb_conn *c, const void *data, size_t len)
{
        if (c->down.off + c->down.len + len > XB_NET_BUF) {
                memmove(c->down.b, c->down.b + c->down.off, c->down.len);
                c->down.off = 0;
        }
        if (c->down.len + len > XB_NET_BUF)
                len = XB_NET_BUF - c->down.len;
        memcpy(c->down.b + c->down.off + c->down.len, data, len);
        c->down.len += len;
}

void
xb__px_closing(struct xb_conn *c)
{
        c->st = C_CLOSING;
        xb_timer_start(c->net->ns->loop, &c->timer, 5000, on_timeout, c);
        xb__px_update(c);
}

void
xb__px_http_reply(struct xb_conn *c, int status, const char *reason, const char *body)
{
        char head[256];
        int n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                         "Connection: close\r\nX-Execbox-Egress: %s\r\nContent-Length: %zu\r\n\r\n", status, reason,
                         status == 403 ? "denied" : status < 300 ? "info" : "error", strlen(body));

        xb__px_say(c, head, (size_t)n);
        xb__px_say(c, body, strlen(body));
        xb__px_closing(c);
}

void
xb__px_socks_reply(struct xb_conn *c, uint8_t code)
{
        uint8_t r[10] = { 5, code, 0, 1 };

        xb__px_say(c, r, sizeof(r));
        if (code != SOCKS_OK)
                xb__px_closing(c);
}

static const char *
kind_name(const struct xb_conn *c)
{
        return c->kind == K_SOCKS ? "socks" : c->kind == K_FORWARD ? "http" : "connect";
}

static void
deny_as(struct xb_conn *c, const char *why, bool never)
{
        struct xb_net *n = c->net;
        char body[768];

        c->logoff = xb__netlog_add(n, kind_name(c), c->host, c->port, c->addr[0] ? c->addr : NULL, false, why);
        n->ns->st.denied++;
        if (c->kind == K_SOCKS) {
                xb__px_socks_reply(c, SOCKS_RULESET);
                return;
        }
        if (never)
                snprintf(body, sizeof(body),
                         "execbox: egress to %s:%u refused (%s). No sandbox may reach private, loopback, "
                         "link-local or metadata addresses, whatever its network policy.\n", c->host, c->port, why);
        else
                snprintf(body, sizeof(body),
                         "execbox: egress to %s:%u refused (%s; this sandbox's network mode is %s).\n"
                         "Only the sandbox's owner can change that: ask the user to allow this host, e.g. with "
                         "PATCH /v1/sandboxes/%s/network {\"mode\": \"allowlist\", \"allow\": [\"%s\"]}.\n",
                         c->host, c->port, why, xb_netmode_name(n->pol->mode), n->id, c->host);
        xb__px_http_reply(c, 403, "Forbidden", body);
}

static void
deny(struct xb_conn *c, const char *why)
{
        deny_as(c, why, false);
}

static void
fail(struct xb_conn *c, const char *why, uint8_t socks_code)
{
        char body[512];

        if (c->logoff == UINT64_MAX)
                c->logoff = xb__netlog_add(c->net, kind_name(c), c->host, c->port, NULL, true, c->rule);
        if (c->kind == K_SOCKS) {
                xb__px_socks_reply(c, socks_code);
                return;
        }
        snprintf(body, sizeof(body), "execbox: %s:%u is allowed but could not be reached: %s\n", c->host, c->port,
                 why);
        xb__px_http_reply(c, 502, "Bad Gateway", body);
}

/* ---- events ---- */

static void
set_io(struct xb_conn *c, struct xb_io *io, int fd, uint32_t *have, uint32_t want, xb_io_cb cb)
{
        /* An fd with nothing wanted leaves epoll: a hung-up peer would
         * otherwise report EPOLLHUP on every wait. */
        if (fd < 0 || want == *have)
                return;
        if (!want)
                xb_io_stop(io);
        else if (!*have)
                xb_io_start(c->net->ns->loop, io, fd, want, cb, c);
        else
                xb_io_modify(io, want);
        *have = want;
}

static void on_client(struct xb_io *io, uint32_t events);
static void on_upstream(struct xb_io *io, uint32_t events);

void
xb__px_update(struct xb_conn *c)
{
        uint32_t cw = 0, uw = 0;

        if (c->dead || !c->net || c->pkg_owned)
                return;
        if (c->tls) {
                xb__tls_update(c);
                return;
        }
        if (xb__px_pending(&c->down))
                cw |= EPOLLOUT;
        if (!c->throttled && !c->c_eof && xb__px_has_room(&c->up) && (c->st == C_HEAD || c->st == C_RELAY))
                cw |= EPOLLIN;
        if (c->st == C_CONNECT)
                uw = EPOLLOUT;
        else if (c->st == C_RELAY) {
                if (xb__px_pending(&c->up))
                        uw |= EPOLLOUT;
                if (!c->throttled && !c->u_eof && xb__px_has_room(&c->down))
                        uw |= EPOLLIN;
        }
        set_io(c, &c->cio, c->cfd, &c->cwant, cw, on_client);
        set_io(c, &c->uio, c->ufd, &c->uwant, uw, on_upstream);
}


static void
on_client(struct xb_io *io, uint32_t events)
{
        struct xb_conn *c = io->data;
        uint64_t before = c->out;

        if (events & EPOLLOUT) {
                if (xb__px_flush(c->cfd, &c->down) < 0) {
                        xb__px_close(c);
                        return;
                }
                if (c->st == C_CLOSING && !xb__px_pending(&c->down)) {
                        xb__px_close(c);
                        return;
                }
        }
        if (events & (EPOLLIN | EPOLLHUP | EPOLLERR) && (c->cwant & EPOLLIN)) {
                int r = xb__px_fill(c, c->cfd, &c->up, &c->out);

                if (r < 0) {
                        xb__px_close(c);
                        return;
                }
                if (r == 0) {
                        if (c->st != C_RELAY) {
                                xb__px_close(c);
                                return;
                        }
                        c->c_eof = true;
                }
                if (c->st == C_HEAD && r == 1) {
                        xb__px_parse_head(c);
                        if (c->dead)
                                return;
                }
                if (c->st == C_RELAY && xb__px_pending(&c->up) && xb__px_flush(c->ufd, &c->up) < 0) {
                        xb__px_close(c);
                        return;
                }
        } else if (events & EPOLLERR) {
                xb__px_close(c);
                return;
        }
        if (c->st == C_RELAY)
                xb__px_count(c, c->out - before, 0);
        xb__px_half_close(c);
        xb__px_update(c);
}

static void start_relay(struct xb_conn *c);

static void
on_upstream(struct xb_io *io, uint32_t events)
{
        struct xb_conn *c = io->data;
        uint64_t before = c->in;

        if (c->st == C_CONNECT) {
                int e = 0;
                socklen_t l = sizeof(e);

                if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &e, &l) < 0)
                        e = errno;
                if (e == 0) {
                        start_relay(c);
                        return;
                }
                snprintf(c->last_why, sizeof(c->last_why), "%s", strerror(e));
                xb_io_stop(&c->uio);
                c->uwant = 0;
                close(c->ufd);
                c->ufd = -1;
                try_connect(c);
                return;
        }
        if (events & EPOLLOUT) {
                if (xb__px_flush(c->ufd, &c->up) < 0) {
                        xb__px_close(c);
                        return;
                }
        }
        if (events & (EPOLLIN | EPOLLHUP | EPOLLERR) && (c->uwant & EPOLLIN)) {
                int r = xb__px_fill(c, c->ufd, &c->down, &c->in);

                if (r < 0) {
                        xb__px_close(c);
                        return;
                }
                if (r == 0)
                        c->u_eof = true;
                if (xb__px_pending(&c->down) && xb__px_flush(c->cfd, &c->down) < 0) {
                        xb__px_close(c);
                        return;
                }
        } else if (events & EPOLLERR) {
                xb__px_close(c);
                return;
        }
        xb__px_count(c, 0, c->in - before);
        xb__px_half_close(c);
        xb__px_update(c);
}

/* ---- deciding and connecting ---- */

static void
on_resolved(void *arg, int status, int timeouts, struct ares_addrinfo *ai)
{
        struct xb_conn *c = arg;

        (void)timeouts;
        c->resolving = false;
        if (c->dead) {
                /* The sandbox or the client left while we looked. */
                if (ai)
                        ARES(freeaddrinfo)(ai);
                xb_loop_defer(c->loop, &c->defer, free_conn, c);
                return;
        }
        if (status != ARES_SUCCESS || !ai || !ai->nodes) {
                if (ai)
                        ARES(freeaddrinfo)(ai);
                c->logoff = xb__netlog_add(c->net, kind_name(c), c->host, c->port, NULL, false, "name does not resolve");
                c->net->ns->st.denied++;
                if (c->kind == K_SOCKS)
                        xb__px_socks_reply(c, SOCKS_UNREACH);
                else {
                        char body[400];

                        snprintf(body, sizeof(body), "execbox: %s does not xb__px_resolve (%s)\n", c->host,
                                 ARES(strerror)(status));
                        xb__px_http_reply(c, 502, "Bad Gateway", body);
                }
                return;
        }
        c->ai = ai;
        c->node = ai->nodes;
        c->st = C_CONNECT;
        snprintf(c->last_why, sizeof(c->last_why), "no address to try");
        try_connect(c);
}

void
xb__px_resolve(struct xb_conn *c)
{
        struct xb_net *n = c->net;
        char rule[128];

        xb_netpol_unref(c->pol);
        c->pol = xb_netpol_ref(n->pol);
        if (xb__px_peer(c))
                return;
        c->verdict = xb__net_decide_name(n, c->pol, c->host, c->literal, c->port, rule, sizeof(rule));
        snprintf(c->rule, sizeof(c->rule), "%s", rule);
        if (c->verdict == XB_V_DENY) {
                deny(c, rule);
                return;
        }
        if (c->verdict == XB_V_ASK) {
                xb__px_ask(c);
                return;
        }
        xb__px_lookup(c);
}

void
xb__px_lookup(struct xb_conn *c)
{
        struct xb_net *n = c->net;

        if (c->kind == K_FORWARD && xb__pkg_request(c))
                return;
        c->st = C_RESOLVE;
        xb_timer_start(n->ns->loop, &c->timer, 30000, on_timeout, c);
        xb__px_update(c);
        c->resolving = true;
        /* c-ares answers a literal address at once, without a query. */
        xb__resolver_lookup(xb__netsys_resolver(n->ns), c->host, on_resolved, c);
}

static void
try_connect(struct xb_conn *c)
{
        struct xb_net *n = c->net;
        const char *blocked_why = NULL;

        for (; c->node; c->node = c->node->ai_next) {
                struct ares_addrinfo_node *nd = c->node;
                struct xb_ip ip;
                char rule[128];
                const char *why;
                int fd;

                if (xb_ip_from_sockaddr(nd->ai_addr, &ip) < 0)
                        continue;
                snprintf(rule, sizeof(rule), "%s", c->rule);
                why = xb__net_decide_ip(n, c->pol, c->verdict, &ip, rule, sizeof(rule));
                xb_ip_str(&ip, c->addr, sizeof(c->addr));
                if (why) {
                        blocked_why = why;
                        continue;
                }
                snprintf(c->rule, sizeof(c->rule), "%s", rule);
                if (nd->ai_family == AF_INET)
                        ((struct sockaddr_in *)nd->ai_addr)->sin_port = htons(c->port);
                else
                        ((struct sockaddr_in6 *)nd->ai_addr)->sin6_port = htons(c->port);
                fd = socket(nd->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
                if (fd < 0) {
                        snprintf(c->last_why, sizeof(c->last_why), "%s", strerror(errno));
                        continue;
                }
                if (connect(fd, nd->ai_addr, nd->ai_addrlen) < 0 && errno != EINPROGRESS) {
                        snprintf(c->last_why, sizeof(c->last_why), "%s", strerror(errno));
                        close(fd);
                        continue;
                }
                c->ufd = fd;
                c->tried = true;
                c->node = nd->ai_next;
                xb_timer_start(n->ns->loop, &c->timer, 10000, on_timeout, c);
                xb__px_update(c);
                return;
        }
        /* Nothing left to try: refused if the policy struck every address. */
        if (blocked_why && !c->tried) {
                char why[160];

                snprintf(why, sizeof(why), "%s address %s", blocked_why, c->addr);
                /* The policy's own address rules can be changed; the fixed ranges cannot. */
                deny_as(c, why, strncmp(blocked_why, "allowlist", 9) && strncmp(blocked_why, "the sandbox", 11));
                return;
        }
        fail(c, c->last_why, SOCKS_REFUSED);
}

static void
start_relay(struct xb_conn *c)
{
        struct xb_net *n = c->net;
        static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";

        c->logoff = xb__netlog_add(n, kind_name(c), c->host, c->port, c->addr, true, c->rule);
        n->ns->st.allowed++;
        xb_timer_stop(&c->timer);
        if (c->ai) {
                ARES(freeaddrinfo)(c->ai);
                c->ai = NULL;
                c->node = NULL;
        }
        if (c->pkg) {
                xb__pkg_connected(c);
                return;
        }
        /* A secret's host over TLS: tls_relay.c terminates it. */
        if (xb__tls_take(c))
                return;
        c->st = C_RELAY;
        xb__px_pipes_open(c);
        /* What the sandbox sent before the connection stood counts too. */
        c->out += c->kind == K_FORWARD ? c->fwd_len + c->up.len : c->up.len;
        xb__px_count(c, c->out, 0);
        if (c->kind == K_CONNECT)
                xb__px_say(c, established, sizeof(established) - 1);
        else if (c->kind == K_SOCKS)
                xb__px_socks_reply(c, SOCKS_OK);
        else if (c->kind == K_FORWARD) {
                /* The rebuilt head, then whatever body followed it. */
                size_t body = c->up.len;

                if (c->fwd_len + body > XB_NET_BUF) {
                        xb__px_close(c);
                        return;
                }
                memmove(c->up.b + c->fwd_len, c->up.b + c->up.off, body);
                memcpy(c->up.b, c->fwd_head, c->fwd_len);
                c->up.off = 0;
                c->up.len = c->fwd_len + body;
                free(c->fwd_head);
                c->fwd_head = NULL;
        }
        xb__px_update(c);
}

/* ---- accepting ---- */

void
xb__proxy_accept(struct xb_io *io, uint32_t events)
{
        struct xb_net *n = io->data;

        (void)events;
        /* A bounded batch: one sandbox's flood of connects waits its turn. */
        for (int i = 0; i < 16; i++) {
                int fd = accept4(n->proxy_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                struct xb_conn *c;

                if (fd < 0)
                        return;
                if (n->nconns >= n->ns->o.conns_max || n->ns->st.conns_open >= XB_NET_CONNS_TOTAL) {
                        /* Over the cap: refused, and said so in the log. */
                        xb__netlog_add(n, "connect", "", 0, NULL, false, "too many connections");
                        n->ns->st.denied++;
                        close(fd);
                        continue;
                }
                c = calloc(1, sizeof(*c));
                if (c) {
                        c->up.b = malloc(XB_NET_BUF);
                        c->down.b = malloc(XB_NET_BUF);
                }
                if (!c || !c->up.b || !c->down.b) {
                        if (c)
                                free_conn(c);
                        close(fd);
                        continue;
                }
                xb__px_tune_client(fd);
                c->net = n;
                c->loop = n->ns->loop;
                c->up.pr = c->up.pw = c->down.pr = c->down.pw = -1;
                c->cfd = fd;
                c->ufd = -1;
                c->logoff = UINT64_MAX;
                c->st = C_HEAD;
                c->next = n->conns;
                if (n->conns)
                        n->conns->prev = c;
                n->conns = c;
                n->nconns++;
                n->ns->st.conns_open++;
                xb_timer_start(n->ns->loop, &c->timer, 30000, on_timeout, c);
                xb__px_update(c);
                /* The request has usually come with the connection: read it
                 * now rather than one more turn of the loop later. */
                on_client(&c->cio, EPOLLIN);
        }
}

void
xb__proxy_free_all(struct xb_net *n)
{
        while (n->conns)
                xb__px_close(n->conns);
}
