/* c-ares on the daemon's loop: its sockets are fds in the loop (the
 * sock_state callback says which and for what), its timeouts one timer.
 * Lookups never block; a lookup's callback runs from the loop, or with
 * ARES_EDESTRUCTION when the resolver closes. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "net/net_int.h"

#define SOCKS_MAX 32

struct rsock {
        struct xb_resolver *r;
        int fd;
        struct xb_io io;
};

struct xb_resolver {
        struct xb_loop *loop;
        ares_channel ch;
        struct xb_timer timer;
        struct rsock socks[SOCKS_MAX];
};

static void rearm(struct xb_resolver *r);

static void
on_timer(struct xb_timer *t)
{
        struct xb_resolver *r = t->data;

        ARES(process_fd)(r->ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
        rearm(r);
}

static void
rearm(struct xb_resolver *r)
{
        struct timeval tv, *tvp = ARES(timeout)(r->ch, NULL, &tv);

        if (!tvp) {
                xb_timer_stop(&r->timer);
                return;
        }
        xb_timer_start(r->loop, &r->timer, (uint64_t)tvp->tv_sec * 1000 + (uint64_t)tvp->tv_usec / 1000 + 1,
                       on_timer, r);
}

static void
on_sock(struct xb_io *io, uint32_t events)
{
        struct rsock *s = io->data;
        struct xb_resolver *r = s->r;
        int fd = s->fd;

        ARES(process_fd)(r->ch, events & (EPOLLIN | EPOLLERR | EPOLLHUP) ? fd : ARES_SOCKET_BAD,
                         events & EPOLLOUT ? fd : ARES_SOCKET_BAD);
        rearm(r);
}

static void
sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
        struct xb_resolver *r = data;
        struct rsock *s = NULL, *spare = NULL;
        uint32_t ev = (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);

        for (size_t i = 0; i < SOCKS_MAX; i++) {
                if (r->socks[i].fd == fd && r->socks[i].io.active)
                        s = &r->socks[i];
                else if (!spare && !r->socks[i].io.active)
                        spare = &r->socks[i];
        }
        if (!ev) {
                if (s)
                        xb_io_stop(&s->io);
                return;
        }
        if (s) {
                xb_io_modify(&s->io, ev);
                return;
        }
        if (!spare)
                return;   /* more sockets than servers times two: the query times out */
        spare->r = r;
        spare->fd = fd;
        xb_io_start(r->loop, &spare->io, fd, ev, on_sock, spare);
}

int
xb__resolver_open(struct xb_loop *l, const char *server, struct xb_resolver **ret, struct xb_err *err)
{
        struct xb_resolver *r;
        struct ares_options o = { 0 };
        int mask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES, st, rc;

        if ((rc = xb_ares_load(err)) < 0)
                return rc;
        r = calloc(1, sizeof(*r));
        if (!r)
                return xb_err_set(err, ENOMEM, "resolver");
        r->loop = l;
        o.sock_state_cb = sock_state;
        o.sock_state_cb_data = r;
        o.timeout = 2000;
        o.tries = 2;
        if (server) {
                /* The operator named the resolver: the host's hosts file is not
                 * an answer either (its localhost names are refused anyway). */
                o.lookups = (char *)"b";
                mask |= ARES_OPT_LOOKUPS;
        }
        st = ARES(init_options)(&r->ch, &o, mask);
        if (st != ARES_SUCCESS) {
                free(r);
                return xb_err_msg(err, EIO, "c-ares: %s", ARES(strerror)(st));
        }
        if (server && (st = ARES(set_servers_ports_csv)(r->ch, server)) != ARES_SUCCESS) {
                ARES(destroy)(r->ch);
                free(r);
                return xb_err_msg(err, EINVAL, "--dns-server `%.64s`: %s", server, ARES(strerror)(st));
        }
        *ret = r;
        return 0;
}

void
xb__resolver_close(struct xb_resolver *r)
{
        if (!r)
                return;
        ARES(destroy)(r->ch);   /* runs every pending callback with ARES_EDESTRUCTION */
        for (size_t i = 0; i < SOCKS_MAX; i++)
                xb_io_stop(&r->socks[i].io);
        xb_timer_stop(&r->timer);
        free(r);
}

void
xb__resolver_lookup(struct xb_resolver *r, const char *name, xb_resolve_cb cb, void *arg)
{
        struct ares_addrinfo_hints h = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };

        ARES(getaddrinfo)(r->ch, name, NULL, &h, cb, arg);
        rearm(r);
}

void
xb__resolver_send(struct xb_resolver *r, const unsigned char *q, int qlen, xb_send_cb cb, void *arg)
{
        ARES(send)(r->ch, q, qlen, cb, arg);
        rearm(r);
}
