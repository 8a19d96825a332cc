/* The TLS relay for a CONNECT to a secret's host (tls.h has the why). It
 * takes the connection from proxy.c once the upstream TCP stands:
 *   UP_HS      TLS to the upstream, verified for c->host (a failure is a
 *              502 to the client, in clear: nothing was said to it yet);
 *   CLIENT_HS  "200 Connection established" (or SOCKS's success), then TLS
 *              with the client, under a leaf minted for c->host;
 *   RELAY      plaintext through c->up and c->down: the first request head
 *              gets the secrets (secret.c) and Connection: close.
 * Both sessions read and write their fds directly, non-blocking; c->up and
 * c->down are the plaintext buffers, at most XB_NET_BUF each. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "net/proxy_int.h"
#include "net/secret.h"
#include "net/tls_int.h"

enum tstate { T_UP_HS, T_CLIENT_HS, T_RELAY };

struct xb_tlsconn {
        enum tstate st;
        gnutls_session_t cs, us;      /* to the client (we serve), to the upstream (we are the client) */
        struct xb_tlsleaf *leaf;
        bool head_done, c_eof, u_eof;
        size_t c_sending, u_sending;  /* a record_send that said EAGAIN: its length */
        bool c_send_blocked, u_send_blocked;
};

static void
hs_timeout(struct xb_timer *tm)
{
        xb__px_close(tm->data);
}

static const gnutls_datum_t http11 = { (unsigned char *)"http/1.1", 8 };

static void tls_event_c(struct xb_io *io, uint32_t events);
static void tls_event_u(struct xb_io *io, uint32_t events);

void
xb__tls_free(struct xb_conn *c)
{
        struct xb_tlsconn *t = c->tls;

        if (!t)
                return;
        if (t->cs)
                TLS(deinit)(t->cs);
        if (t->us)
                TLS(deinit)(t->us);
        xb__tls_leaf_put(t->leaf);
        free(t);
        c->tls = NULL;
}

static void
want(struct xb_conn *c, struct xb_io *io, int fd, uint32_t *have, uint32_t w, xb_io_cb cb)
{
        if (fd < 0 || w == *have)
                return;
        if (!w)
                xb_io_stop(io);
        else if (!*have)
                xb_io_start(c->loop, io, fd, w, cb, c);
        else
                xb_io_modify(io, w);
        *have = w;
}

static uint32_t
hs_dir(gnutls_session_t s)
{
        return TLS(record_get_direction)(s) ? EPOLLOUT : EPOLLIN;
}

static void
set_wants(struct xb_conn *c)
{
        struct xb_tlsconn *t = c->tls;
        uint32_t cw = 0, uw = 0;

        if (t->st == T_UP_HS)
                uw = hs_dir(t->us);
        else if (t->st == T_CLIENT_HS)
                cw = c->down.len ? EPOLLOUT : hs_dir(t->cs);
        else {
                if (!c->throttled && !t->c_eof && c->up.len < XB_NET_BUF)
                        cw |= EPOLLIN;
                if (c->down.len || t->c_send_blocked)
                        cw |= EPOLLOUT;
                if (!c->throttled && !t->u_eof && c->down.len < XB_NET_BUF)
                        uw |= EPOLLIN;
                if ((t->head_done && c->up.len) || t->u_send_blocked)
                        uw |= EPOLLOUT;
        }
        want(c, &c->cio, c->cfd, &c->cwant, cw, tls_event_c);
        want(c, &c->uio, c->ufd, &c->uwant, uw, tls_event_u);
}

static gnutls_session_t
session(struct xb_conn *c, unsigned flags, gnutls_certificate_credentials_t cred, int fd)
{
        gnutls_session_t s;

        if (TLS(init)(&s, flags | GNUTLS_NONBLOCK) < 0)
                return NULL;
        if (TLS(set_default_priority)(s) < 0 || TLS(credentials_set)(s, GNUTLS_CRD_CERTIFICATE, cred) < 0 ||
            TLS(alpn_set_protocols)(s, &http11, 1, GNUTLS_ALPN_MANDATORY) < 0) {
                TLS(deinit)(s);
                return NULL;
        }
        if (flags & GNUTLS_CLIENT) {
                TLS(server_name_set)(s, GNUTLS_NAME_DNS, c->host, strlen(c->host));
                TLS(session_set_verify_cert)(s, c->host, 0);
        }
        TLS(transport_set_int2)(s, fd, fd);
        return s;
}

bool
xb__tls_take(struct xb_conn *c)
{
        struct xb_tls *tt = c->net->ns->tls;
        struct xb_tlsconn *t;

        /* Port 80 through CONNECT or SOCKS is taken for plain HTTP: tunnelled. */
        if (!tt || c->kind == K_FORWARD || c->port == 80 || !xb_net_secret_host(c->net, c->host))
                return false;
        t = calloc(1, sizeof(*t));
        if (!t)
                return false;
        c->tls = t;
        tt->intercepted++;
        c->net->ns->st.tls_intercepted++;
        /* proxy.c's callbacks leave; tls.c's come. */
        xb_io_stop(&c->cio);
        xb_io_stop(&c->uio);
        c->cwant = c->uwant = 0;
        /* A client that sent before the 200 (nothing does) is not served. */
        t->us = c->up.len ? NULL : session(c, GNUTLS_CLIENT, tt->upstream, c->ufd);
        if (!t->us) {
                xb__px_close(c);
                return true;
        }
        c->st = C_RELAY;
        t->st = T_UP_HS;
        /* Both handshakes within 10 s; the relay then has no deadline, as a tunnel has none. */
        xb_timer_start(c->loop, &c->timer, 10000, hs_timeout, c);
        xb__tls_update(c);
        return true;
}

/* Bytes c may read now from the sandbox's bucket. */
static size_t
room(struct xb_conn *c, const struct cbuf *b)
{
        size_t r = XB_NET_BUF - b->off - b->len;

        return xb__px_allowance(c, r);
}

static void
compact(struct cbuf *b)
{
        if (b->len == 0)
                b->off = 0;
        else if (b->off) {
                memmove(b->b, b->b + b->off, b->len);
                b->off = 0;
        }
}

/* The first head: secrets in, Connection: close; -1 to close c. */
static int
rewrite_head(struct xb_conn *c)
{
        struct xb_tlsconn *t = c->tls;
        char *h = (char *)c->up.b + c->up.off, *end = memmem(h, c->up.len, "\r\n\r\n", 4), *o = NULL, *p, *q;
        size_t hl, ol, rest, bodylen;
        _cleanup_free_ char *tmp = NULL;
        int r;

        if (!end)
                return c->up.len >= XB_NET_HEAD_MAX ? -1 : 0;
        hl = (size_t)(end - h) + 4;
        /* Framed as the rewrite reads it (proxy_int.h), and an origin-form
         * target: an absolute one would name the site over Host. */
        {
                char *sp = memchr(h, ' ', hl);

                if (!xb__px_head_ok(h, hl) || !sp || (sp[1] != '/' && sp[1] != '*'))
                        return -1;
        }
        /* Host is the CONNECT's, the name the secrets were decided for (a
         * shared front end routes on it); without hop-by-hop connection
         * headers, then Connection: close. */
        tmp = malloc(hl + XB_NETNAME_MAX + 64);
        if (!tmp)
                return -1;
        p = tmp;
        for (q = h; q < h + hl - 2;) {
                char *nl = memmem(q, (size_t)(h + hl - q), "\r\n", 2);
                size_t ll = (size_t)(nl - q);

                if (!(q != h && ((ll >= 11 && !strncasecmp(q, "connection:", 11)) ||
                                 (ll >= 11 && !strncasecmp(q, "keep-alive:", 11)) ||
                                 (ll >= 5 && !strncasecmp(q, "host:", 5)) ||
                                 (ll >= 17 && !strncasecmp(q, "proxy-connection:", 17))))) {
                        memcpy(p, q, ll + 2);
                        p += ll + 2;
                }
                if (q == h) {
                        bool v6 = strchr(c->host, ':') != NULL;

                        p += sprintf(p, "Host: %s%s%s", v6 ? "[" : "", c->host, v6 ? "]" : "");
                        if (c->port != 443)
                                p += sprintf(p, ":%u", c->port);
                        p = stpcpy(p, "\r\n");
                }
                q = nl + 2;
        }
        p = stpcpy(p, "Connection: close\r\n\r\n");
        r = xb_net_inject_head(c->net, c->host, tmp, (size_t)(p - tmp), &o, &ol);
        if (r < 0)
                return -1;
        if (!o) {
                o = tmp;
                ol = (size_t)(p - tmp);
                tmp = NULL;
        }
        rest = c->up.len - hl;
        bodylen = rest;
        if (ol + bodylen > XB_NET_BUF) {
                free(o);
                return -1;
        }
        /* The rebuilt head, then what followed it. */
        memmove(c->up.b + ol, c->up.b + c->up.off + hl, bodylen);
        memcpy(c->up.b, o, ol);
        explicit_bzero(o, ol);
        free(o);
        c->up.off = 0;
        c->up.len = ol + bodylen;
        t->head_done = true;
        return 0;
}

/* Send what b holds on s; -1 on a fatal error. */
static int
send_buf(struct xb_conn *c, gnutls_session_t s, struct cbuf *b, size_t *sending, bool *blocked, bool out)
{
        while (b->len || *sending) {
                ssize_t w = *sending ? TLS(record_send)(s, NULL, 0) : TLS(record_send)(s, b->b + b->off, b->len);

                if (w == GNUTLS_E_AGAIN || w == GNUTLS_E_INTERRUPTED) {
                        if (!*sending)
                                *sending = b->len;
                        *blocked = true;
                        return 0;
                }
                *sending = 0;
                *blocked = false;
                if (w < 0)
                        return -1;
                b->off += (size_t)w;
                b->len -= (size_t)w;
                if (out)
                        xb__px_account(c, (uint64_t)w, 0);
                else
                        xb__px_account(c, 0, (uint64_t)w);
        }
        compact(b);
        return 0;
}

/* Read what fits into b from s: 1 progress, 0 nothing now, -1 error. */
static int
recv_buf(struct xb_conn *c, gnutls_session_t s, struct cbuf *b, bool *eof)
{
        size_t take;
        ssize_t r;

        if (*eof)
                return 0;
        if (b->off + b->len == XB_NET_BUF)
                compact(b);
        take = room(c, b);
        if (!take)
                return 0;
        r = TLS(record_recv)(s, b->b + b->off + b->len, take);
        if (r > 0) {
                b->len += (size_t)r;
                xb__px_charge(c, (size_t)r);
                return 1;
        }
        if (r == 0 || r == GNUTLS_E_PREMATURE_TERMINATION) {
                *eof = true;
                return 1;
        }
        if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
                return 0;
        return TLS(error_is_fatal)((int)r) ? -1 : 0;
}

static void
relay(struct xb_conn *c)
{
        struct xb_tlsconn *t = c->tls;

        for (int round = 0; round < 8; round++) {
                bool progress = false;
                int r = recv_buf(c, t->cs, &c->up, &t->c_eof);

                if (r < 0)
                        goto close;
                progress |= r > 0;
                if (!t->head_done && rewrite_head(c) < 0)
                        goto close;
                if (t->head_done && send_buf(c, t->us, &c->up, &t->u_sending, &t->u_send_blocked, true) < 0)
                        goto close;
                r = recv_buf(c, t->us, &c->down, &t->u_eof);
                if (r < 0)
                        goto close;
                progress |= r > 0;
                if (send_buf(c, t->cs, &c->down, &t->c_sending, &t->c_send_blocked, false) < 0)
                        goto close;
                /* The response is through (one request per connection), or
                 * the client left before sending one. */
                if ((t->u_eof && !c->down.len && !t->c_sending) || (t->c_eof && !t->head_done)) {
                        TLS(bye)(t->cs, GNUTLS_SHUT_WR);
                        goto close;
                }
                if (!progress && !TLS(record_check_pending)(t->cs) && !TLS(record_check_pending)(t->us))
                        break;
        }
        set_wants(c);
        return;
close:
        xb__px_close(c);
}

static void
fail_upstream(struct xb_conn *c, int r)
{
        char body[400];

        snprintf(body, sizeof(body), "execbox: TLS to %s:%u failed: %s (the server verifies it for the secret "
                 "it adds)\n", c->host, c->port, TLS(strerror)(r));
        xb__tls_free(c);
        xb_io_stop(&c->uio);
        c->uwant = 0;
        c->st = C_HEAD;
        if (c->kind == K_SOCKS)
                xb__px_socks_reply(c, SOCKS_FAIL);
        else
                xb__px_http_reply(c, 502, "Bad Gateway", body);
}

static void
step(struct xb_conn *c)
{
        struct xb_tlsconn *t = c->tls;
        int r;

        if (t->st == T_UP_HS) {
                r = TLS(handshake)(t->us);
                if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) {
                        set_wants(c);
                        return;
                }
                if (r < 0) {
                        fail_upstream(c, r);
                        return;
                }
                t->leaf = xb__tls_leaf_get(c->net->ns->tls, c->host);
                t->cs = t->leaf ? session(c, GNUTLS_SERVER, t->leaf->cred, c->cfd) : NULL;
                if (!t->cs) {
                        xb__px_close(c);
                        return;
                }
                t->st = T_CLIENT_HS;
                if (c->kind == K_SOCKS) {
                        static const uint8_t ok[10] = { 5, 0, 0, 1 };

                        memcpy(c->down.b, ok, sizeof(ok));
                        c->down.off = 0;
                        c->down.len = sizeof(ok);
                } else {
                        static const char est[] = "HTTP/1.1 200 Connection established\r\n\r\n";

                        memcpy(c->down.b, est, sizeof(est) - 1);
                        c->down.off = 0;
                        c->down.len = sizeof(est) - 1;
                }
        }
        if (t->st == T_CLIENT_HS) {
                /* The clear reply first, then the handshake. */
                while (c->down.len) {
                        ssize_t w = send(c->cfd, c->down.b + c->down.off, c->down.len, MSG_NOSIGNAL);

                        if (w < 0) {
                                if (errno == EAGAIN || errno == EINTR) {
                                        set_wants(c);
                                        return;
                                }
                                xb__px_close(c);
                                return;
                        }
                        c->down.off += (size_t)w;
                        c->down.len -= (size_t)w;
                }
                c->down.off = 0;
                r = TLS(handshake)(t->cs);
                if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) {
                        set_wants(c);
                        return;
                }
                if (r < 0) {
                        /* A client that does not trust the CA says so here. */
                        xb__px_close(c);
                        return;
                }
                t->st = T_RELAY;
                xb_timer_stop(&c->timer);
        }
        relay(c);
}

void
xb__tls_update(struct xb_conn *c)
{
        if (!c->dead && c->net && c->tls)
                step(c);
}

static void
tls_event_c(struct xb_io *io, uint32_t events)
{
        (void)events;
        xb__tls_update(io->data);
}

static void
tls_event_u(struct xb_io *io, uint32_t events)
{
        (void)events;
        xb__tls_update(io->data);
}
