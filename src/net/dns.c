/* The DNS at 127.0.0.1:53 inside each sandbox, over UDP and TCP. A query
 * for a name the policy allows is relayed as it is to the host's resolver
 * (c-ares's ares_send, which retries over TCP on truncation) and its
 * answer returned under the client's id; any other name gets NXDOMAIN
 * built from the question. It answers only what a policy check allows: a
 * name that the proxy would still refuse by address resolves, but cannot
 * be reached. Queries in flight per sandbox are bounded. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "net/net_int.h"

#define DNS_MAX 4096

struct xb_dnsq {
        struct xb_net *net;           /* NULL once the sandbox went */
        struct xb_dnsq *next;
        struct xb_dnstcp *tcp;        /* NULL: answer over UDP to peer */
        struct sockaddr_storage peer;
        socklen_t peerlen;
        uint8_t id[2];
};

struct xb_dnstcp {
        struct xb_net *net;
        struct xb_dnstcp *next;
        struct xb_defer defer;
        int fd;
        struct xb_io io;
        struct xb_timer timer;
        uint8_t buf[DNS_MAX + 2];
        size_t len;                   /* read so far, or left to write */
        size_t woff;
        bool writing, waiting;
};

static void send_answer(struct xb_net *n, struct xb_dnsq *q, const uint8_t *a, size_t len);
static void tcp_close(struct xb_dnstcp *t);
static void tcp_update(struct xb_dnstcp *t);

/* The question's name and type; 0, or -EINVAL for anything but one
 * standard query. */
static int
question(const uint8_t *m, size_t len, char *name, size_t namelen, size_t *qend)
{
        char *s = NULL;
        long enclen = 0;

        if (len < 12 || (m[2] & 0x80) || (m[2] & 0x78) || m[4] != 0 || m[5] != 1)
                return -EINVAL;
        if (ARES(expand_name)(m + 12, m, (int)len, &s, &enclen) != ARES_SUCCESS)
                return -EINVAL;
        if ((size_t)enclen + 12 + 4 > len || strlen(s) >= namelen) {
                ARES(free_string)(s);
                return -EINVAL;
        }
        strcpy(name, s);
        ARES(free_string)(s);
        *qend = 12 + (size_t)enclen + 4;
        return 0;
}

/* A reply carrying only the question, with rcode (3 NXDOMAIN, 2 SERVFAIL). */
static size_t
refusal(const uint8_t *m, size_t qend, uint8_t rcode, uint8_t *out)
{
        memcpy(out, m, qend);
        out[2] = (uint8_t)(0x80 | (m[2] & 0x79));   /* QR, opcode, RD kept */
        out[3] = (uint8_t)(0x80 | rcode);           /* RA */
        memset(out + 6, 0, 6);                      /* no answer, authority, additional */
        return qend;
}

static void
unlink_q(struct xb_net *n, struct xb_dnsq *q)
{
        for (struct xb_dnsq **pp = &n->queries; *pp; pp = &(*pp)->next)
                if (*pp == q) {
                        *pp = q->next;
                        n->nqueries--;
                        return;
                }
}

static void
on_answer(void *arg, int status, int timeouts, unsigned char *abuf, int alen)
{
        struct xb_dnsq *q = arg;
        struct xb_net *n = q->net;

        (void)timeouts;
        if (n) {
                unlink_q(n, q);
                if (status == ARES_SUCCESS && abuf && alen >= 12 && alen <= DNS_MAX)
                        send_answer(n, q, abuf, (size_t)alen);
                else if (q->tcp)
                        tcp_close(q->tcp);
        }
        free(q);
}

static void
send_answer(struct xb_net *n, struct xb_dnsq *q, const uint8_t *a, size_t len)
{
        uint8_t out[DNS_MAX];

        (void)n;
        memcpy(out, a, len);
        out[0] = q->id[0];
        out[1] = q->id[1];
        if (!q->tcp) {
                sendto(n->dns_fd, out, len, MSG_DONTWAIT, (struct sockaddr *)&q->peer, q->peerlen);
                return;
        }
        q->tcp->buf[0] = (uint8_t)(len >> 8);
        q->tcp->buf[1] = (uint8_t)len;
        memcpy(q->tcp->buf + 2, out, len);
        q->tcp->len = len + 2;
        q->tcp->woff = 0;
        q->tcp->writing = true;
        q->tcp->waiting = false;
        tcp_update(q->tcp);
}

/* Decide one query; answer at once, or relay it. */
static void
handle(struct xb_net *n, const uint8_t *m, size_t len, struct xb_dnsq *proto)
{
        char name[XB_NETNAME_MAX + 2], rule[128];
        uint8_t out[DNS_MAX];
        size_t qend;
        enum xb_verdict v;
        struct xb_dnsq *q;
        bool literal;
        struct xb_ip ip;

        if (question(m, len, name, sizeof(name), &qend) < 0)
                return;   /* not a query we answer: dropped, as a resolver would */
        literal = xb_ip_parse(name, &ip) == 0;
        if (!literal && !xb_netname_normalize(name))
                v = XB_V_DENY, snprintf(rule, sizeof(rule), "not a host name");
        else
                v = xb__net_decide_name(n, n->pol, name, literal, 0, rule, sizeof(rule));
        if (n->pol->mode == XB_NET_PACKAGES && v == XB_V_DENY && !literal)
                for (size_t i = 0; i < n->ns->nsrc; i++)
                        if (!strcmp(n->ns->src[i].host, name)) {   /* a source on its own port */
                                v = XB_V_ALLOW;
                                snprintf(rule, sizeof(rule), "package source %s", name);
                        }
        xb__netlog_add(n, "dns", name, 53, NULL, v == XB_V_ALLOW, rule);
        if (v != XB_V_ALLOW || n->nqueries >= XB_NET_DNS_INFLIGHT) {
                size_t olen = refusal(m, qend, v == XB_V_ALLOW ? 2 : 3, out);

                n->ns->st.dns_refused++;
                send_answer(n, proto, out, olen);
                return;
        }
        n->ns->st.dns_answered++;
        q = malloc(sizeof(*q));
        if (!q)
                return;
        *q = *proto;
        q->net = n;
        q->next = n->queries;
        n->queries = q;
        n->nqueries++;
        if (q->tcp)
                q->tcp->waiting = true;
        xb__resolver_send(xb__netsys_resolver(n->ns), m, (int)len, on_answer, q);
}

void
xb__dns_udp(struct xb_io *io, uint32_t events)
{
        struct xb_net *n = io->data;
        uint8_t m[DNS_MAX];

        (void)events;
        for (int i = 0; i < 16; i++) {
                struct xb_dnsq proto = { .peerlen = sizeof(proto.peer) };
                ssize_t r = recvfrom(n->dns_fd, m, sizeof(m), MSG_DONTWAIT, (struct sockaddr *)&proto.peer,
                                     &proto.peerlen);

                if (r < 0)
                        return;
                if (r < 12)
                        continue;
                proto.id[0] = m[0];
                proto.id[1] = m[1];
                handle(n, m, (size_t)r, &proto);
        }
}

/* ---- TCP: one query per connection, length-prefixed (RFC 1035 4.2.2) ---- */

static void
tcp_free(void *p)
{
        free(p);
}

static void
tcp_close(struct xb_dnstcp *t)
{
        struct xb_net *n = t->net;

        xb_io_stop(&t->io);
        xb_timer_stop(&t->timer);
        close(t->fd);
        for (struct xb_dnstcp **pp = &n->dnstcp; *pp; pp = &(*pp)->next)
                if (*pp == t) {
                        *pp = t->next;
                        n->ndnstcp--;
                        break;
                }
        /* A query in flight leaves the list and answers into nothing. */
        for (struct xb_dnsq **pp = &n->queries; *pp;) {
                struct xb_dnsq *q = *pp;

                if (q->tcp != t) {
                        pp = &q->next;
                        continue;
                }
                *pp = q->next;
                n->nqueries--;
                q->tcp = NULL;
                q->net = NULL;
        }
        xb_loop_defer(n->ns->loop, &t->defer, tcp_free, t);
}

static void
on_tcp(struct xb_io *io, uint32_t events)
{
        struct xb_dnstcp *t = io->data;

        if (t->writing) {
                ssize_t w = send(t->fd, t->buf + t->woff, t->len - t->woff, MSG_NOSIGNAL | MSG_DONTWAIT);

                if (w < 0 && errno != EAGAIN) {
                        tcp_close(t);
                        return;
                }
                if (w > 0)
                        t->woff += (size_t)w;
                if (t->woff == t->len)
                        tcp_close(t);
                return;
        }
        if (t->waiting) {
                if (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP))
                        tcp_close(t);
                return;
        }
        {
                ssize_t r = read(t->fd, t->buf + t->len, sizeof(t->buf) - t->len);
                size_t want;

                if (r <= 0) {
                        if (r < 0 && errno == EAGAIN)
                                return;
                        tcp_close(t);
                        return;
                }
                t->len += (size_t)r;
                if (t->len < 2)
                        return;
                want = (size_t)t->buf[0] << 8 | t->buf[1];
                if (want < 12 || want > DNS_MAX) {
                        tcp_close(t);
                        return;
                }
                if (t->len < want + 2)
                        return;
                {
                        struct xb_dnsq proto = { .tcp = t, .id = { t->buf[2], t->buf[3] } };
                        uint8_t m[DNS_MAX];

                        memcpy(m, t->buf + 2, want);
                        handle(t->net, m, want, &proto);
                }
                if (!t->writing && !t->waiting)
                        tcp_close(t);   /* dropped: not a query */
                else
                        tcp_update(t);
        }
}

static void
tcp_update(struct xb_dnstcp *t)
{
        xb_io_modify(&t->io, t->writing ? EPOLLOUT : t->waiting ? EPOLLRDHUP : EPOLLIN);
}

static void
tcp_timeout(struct xb_timer *tm)
{
        tcp_close(tm->data);
}

void
xb__dns_tcp_accept(struct xb_io *io, uint32_t events)
{
        struct xb_net *n = io->data;

        (void)events;
        for (int i = 0; i < 8; i++) {
                int fd = accept4(n->dnstcp_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                struct xb_dnstcp *t;

                if (fd < 0)
                        return;
                if (n->ndnstcp >= XB_NET_DNS_TCP_MAX || !(t = calloc(1, sizeof(*t)))) {
                        close(fd);
                        continue;
                }
                t->net = n;
                t->fd = fd;
                if (xb_io_start(n->ns->loop, &t->io, fd, EPOLLIN, on_tcp, t) < 0) {
                        close(fd);
                        free(t);
                        continue;
                }
                t->next = n->dnstcp;
                n->dnstcp = t;
                n->ndnstcp++;
                xb_timer_start(n->ns->loop, &t->timer, 5000, tcp_timeout, t);
        }
}

void
xb__dns_free_all(struct xb_net *n)
{
        while (n->dnstcp)
                tcp_close(n->dnstcp);
        for (struct xb_dnsq *q = n->queries; q; q = q->next)
                q->net = NULL;
        n->queries = NULL;
        n->nqueries = 0;
}
