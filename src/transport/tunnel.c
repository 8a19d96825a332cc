/* The tunnel after a 101 (proxy_int.h): bytes both ways between the
 * client's socket, which libmicrohttpd handed over, and the upstream's,
 * through the proxy's two bounded buffers. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/proxy_int.h"

/* ---- the tunnel ---- */

static void
tunnel_close(struct xb_proxy *p)
{
        if (p->t_pprev) {
                *p->t_pprev = p->t_next;
                if (p->t_next)
                        p->t_next->t_pprev = p->t_pprev;
                p->t_next = NULL;
                p->t_pprev = NULL;
        }
        xb_io_stop(&p->cio);
        proxy_close_upstream(p);
        if (p->urh) {
                MHD(upgrade_action)(p->urh, MHD_UPGRADE_ACTION_CLOSE);
                p->urh = NULL;
                http_mark_run(p->http);
        }
        p->tunnel = false;
        proxy_unref(p);
}

static void tunnel_update(struct xb_proxy *p);

/* Move bytes from one socket into a buffer; false on an error. */
static bool
pump_in(int fd, char *buf, size_t *off, size_t *len, bool *eof)
{
        ssize_t n;

        if (*eof || !proxy_room(buf, off, len))
                return true;
        n = recv(fd, buf + *len, BUF_CAP - *len, MSG_DONTWAIT);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR;
        if (n == 0)
                *eof = true;
        *len += (size_t)n;
        return true;
}

static bool
pump_out(int fd, char *buf, size_t *off, size_t *len)
{
        ssize_t n;

        if (*off == *len)
                return true;
        n = send(fd, buf + *off, *len - *off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR;
        *off += (size_t)n;
        return true;
}

static void
on_tunnel_client(struct xb_io *io, uint32_t events)
{
        struct xb_proxy *p = io->data;
        bool ok = true;

        if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                ok = pump_in(p->csock, p->out, &p->out_off, &p->out_len, &p->c_eof);
        if (ok && (events & EPOLLOUT))
                ok = pump_out(p->csock, p->in, &p->in_off, &p->in_len);
        if (!ok) {
                tunnel_close(p);
                return;
        }
        tunnel_update(p);
}

static void
on_tunnel_up(struct xb_io *io, uint32_t events)
{
        struct xb_proxy *p = io->data;
        bool ok = true;

        if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                ok = pump_in(p->fd, p->in, &p->in_off, &p->in_len, &p->up_eof);
        if (ok && (events & EPOLLOUT))
                ok = pump_out(p->fd, p->out, &p->out_off, &p->out_len);
        if (!ok) {
                tunnel_close(p);
                return;
        }
        tunnel_update(p);
}

/* What each side waits for. A side that ends ends the tunnel once what
 * it sent is passed on: WebSocket has no half-closed state, and a peer
 * that never closes its end must not hold the tunnel open. */
static void
tunnel_update(struct xb_proxy *p)
{
        bool c2u = p->out_off < p->out_len, u2c = p->in_off < p->in_len;
        uint32_t cev = 0, uev = 0;

        if ((p->c_eof && !c2u) || (p->up_eof && !u2c)) {
                tunnel_close(p);
                return;
        }
        if (!p->c_eof && (p->out_len < BUF_CAP || p->out_off))
                cev |= EPOLLIN;
        if (u2c)
                cev |= EPOLLOUT;
        if (!p->up_eof && (p->in_len < BUF_CAP || p->in_off))
                uev |= EPOLLIN;
        if (c2u)
                uev |= EPOLLOUT;
        proxy_io_want(p, &p->cio, p->csock, cev, on_tunnel_client);
        proxy_io_want(p, &p->io, p->fd, uev, on_tunnel_up);
}

void
proxy_tunnel_start(struct xb_proxy *p, const char *extra, size_t n, int sock, struct MHD_UpgradeResponseHandle *urh)
{
        int fl = fcntl(sock, F_GETFL);

        p->tunnel = true;
        p->refs++;
        p->urh = urh;
        p->t_next = p->http->tunnels;
        if (p->t_next)
                p->t_next->t_pprev = &p->t_next;
        p->t_pprev = &p->http->tunnels;
        p->http->tunnels = p;
        p->csock = sock;
        if (fl >= 0 && !(fl & O_NONBLOCK))
                fcntl(sock, F_SETFL, fl | O_NONBLOCK);
        if (p->req)
                http_watch_stop(p->req);
        xb_io_stop(&p->io);
        if (p->failed || p->fd < 0 || (n && proxy_room(p->out, &p->out_off, &p->out_len) < n)) {
                tunnel_close(p);
                return;
        }
        memcpy(p->out + p->out_len, extra, n);
        p->out_len += n;
        tunnel_update(p);
}

void
http_proxy_close_tunnels(struct xb_http *h)
{
        while (h->tunnels)
                tunnel_close(h->tunnels);
}
