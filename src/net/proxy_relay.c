/* The relay's bytes in flight, for the proxy's state machine (proxy.c):
 * the pipes that splice(2) moves them through, the sandbox's bandwidth
 * bucket that bounds each read, and the byte counts of the connection,
 * the sandbox and the server. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "net/proxy_int.h"

/* A pipe for b, for the relay; without one (out of fds) b relays itself. */
static void
pipe_for(struct cbuf *b)
{
        int p[2];
        int size;

        if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
                return;
        size = fcntl(p[1], F_SETPIPE_SZ, (int)XB_NET_PIPE);
        if (size < 0)
                size = fcntl(p[1], F_GETPIPE_SZ);
        if (size <= 0) {
                close(p[0]);
                close(p[1]);
                return;
        }
        b->pr = p[0];
        b->pw = p[1];
        b->pcap = (size_t)size;
}

static void
pipe_close(struct cbuf *b)
{
        if (b->pr >= 0)
                close(b->pr);
        if (b->pw >= 0)
                close(b->pw);
        b->pr = b->pw = -1;
        b->plen = 0;
}

void
xb__px_pipes_open(struct xb_conn *c)
{
        pipe_for(&c->up);
        pipe_for(&c->down);
}

void
xb__px_pipes_close(struct xb_conn *c)
{
        pipe_close(&c->up);
        pipe_close(&c->down);
}

/* The sandbox's side is loopback in its own namespace: no link to probe,
 * so no pacing. The host's default congestion control may pace (BBR),
 * whose timers cost the relay CPU for nothing; reno, built into every
 * kernel, does not pace. Best effort: the default works too. */
void
xb__px_tune_client(int fd)
{
        static const char cc[] = "reno";

        setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, sizeof(cc) - 1);
}

/* Bytes a read may take now (the sandbox's bucket); 0 throttles c. */
static size_t
allowance(struct xb_conn *c, size_t want)
{
        struct xb_net *n = c->net;
        uint64_t rate = n->ns->o.rate, now;

        if (!rate)
                return want;
        now = xb_now_ms();
        if (now > n->tokens_ms) {
                uint64_t cap = rate / 4 > XB_NET_BUF ? rate / 4 : XB_NET_BUF;

                n->tokens += rate * (now - n->tokens_ms) / 1000;
                if (n->tokens > cap)
                        n->tokens = cap;
                n->tokens_ms = now;
        }
        if (n->tokens == 0) {
                if (!c->throttled) {
                        c->throttled = true;
                        n->nthrottled++;
                }
                return 0;
        }
        return want < n->tokens ? want : (size_t)n->tokens;
}

static void
unthrottle(struct xb_timer *t)
{
        struct xb_net *n = t->data;

        for (struct xb_conn *c = n->conns; c; c = c->next)
                if (c->throttled) {
                        c->throttled = false;
                        n->nthrottled--;
                        xb__px_update(c);
                }
}

static void
charge(struct xb_conn *c, size_t n_read)
{
        struct xb_net *n = c->net;

        if (n->ns->o.rate)
                n->tokens = n->tokens > n_read ? n->tokens - n_read : 0;
}

/* Read what fits into b from fd; 1 data, 0 EOF, -1 error, 2 nothing now. */
int
xb__px_fill(struct xb_conn *c, int fd, struct cbuf *b, uint64_t *count)
{
        size_t room, take;
        ssize_t r;

        if (b->pw >= 0)
                room = b->pcap - b->plen;
        else {
                if (b->len == 0)
                        b->off = 0;
                else if (b->off + b->len == XB_NET_BUF) {
                        memmove(b->b, b->b + b->off, b->len);
                        b->off = 0;
                }
                room = XB_NET_BUF - b->off - b->len;
        }
        take = c->st == C_RELAY ? allowance(c, room) : room;
        if (take == 0) {
                if (!c->net->throttle_timer.active)
                        xb_timer_start(c->net->ns->loop, &c->net->throttle_timer, 20, unthrottle, c->net);
                return 2;
        }
        if (b->pw >= 0)
                r = splice(fd, NULL, b->pw, NULL, take, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
        else
                r = read(fd, b->b + b->off + b->len, take);
        if (r > 0) {
                if (b->pw >= 0)
                        b->plen += (size_t)r;
                else
                        b->len += (size_t)r;
                if (c->st == C_RELAY) {
                        charge(c, (size_t)r);
                        *count += (uint64_t)r;
                }
                return 1;
        }
        if (r == 0)
                return 0;
        return errno == EAGAIN || errno == EINTR ? 2 : -1;
}

/* Write what b holds to fd, the buffer first; -1 on error. */
int
xb__px_flush(int fd, struct cbuf *b)
{
        ssize_t w;

        if (b->len) {
                w = send(fd, b->b + b->off, b->len, MSG_NOSIGNAL);
                if (w < 0)
                        return errno == EAGAIN || errno == EINTR ? 0 : -1;
                b->off += (size_t)w;
                b->len -= (size_t)w;
                if (b->len)
                        return 0;
        }
        if (b->plen) {
                w = splice(b->pr, NULL, fd, NULL, b->plen, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
                if (w < 0)
                        return errno == EAGAIN || errno == EINTR ? 0 : -1;
                b->plen -= (size_t)w;
        }
        return 0;
}

void
xb__px_count(struct xb_conn *c, uint64_t out, uint64_t in)
{
        struct xb_net *n = c->net;

        n->bytes_out += out;
        n->bytes_in += in;
        n->ns->st.bytes_out += out;
        n->ns->st.bytes_in += in;
}

/* Shut each direction down once its data is through, and end c when both are. */
void
xb__px_half_close(struct xb_conn *c)
{
        if (c->st != C_RELAY)
                return;
        if (c->c_eof && !xb__px_pending(&c->up) && !c->u_shut) {
                shutdown(c->ufd, SHUT_WR);
                c->u_shut = true;
        }
        if (c->u_eof && !xb__px_pending(&c->down) && !c->c_shut) {
                shutdown(c->cfd, SHUT_WR);
                c->c_shut = true;
        }
        if (c->u_shut && c->c_shut)
                xb__px_close(c);
}

size_t
xb__px_allowance(struct xb_conn *c, size_t want)
{
        size_t take = allowance(c, want);

        if (!take && !c->net->throttle_timer.active)
                xb_timer_start(c->net->ns->loop, &c->net->throttle_timer, 20, unthrottle, c->net);
        return take;
}

void
xb__px_charge(struct xb_conn *c, size_t n_read)
{
        charge(c, n_read);
}

void
xb__px_account(struct xb_conn *c, uint64_t out, uint64_t in)
{
        c->out += out;
        c->in += in;
        xb__px_count(c, out, in);
}
