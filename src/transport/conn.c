/* Accepting connections, here and not in libmicrohttpd. Out of file
 * descriptors (EMFILE, ENFILE), MHD 0.9.75 stops listening until one of
 * its own connections closes, and never listens again when none does: the
 * server is wedged for good. Here the listen socket is on the daemon's
 * loop, each accepted socket is handed to MHD (MHD_add_connection), and a
 * reserve fd is kept for the moment the table is full: it is closed to
 * accept the waiting client, who gets a 503 and a closed socket, and then
 * taken again. After that the listen socket rests for a back-off, so that
 * a flood cannot spin the loop, and is watched again after. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "transport/http_int.h"

#define ACCEPT_BATCH 64               /* per wake-up: others get their turn */
#define BACKOFF_MS 100

#define SHED_BODY                                                                               \
        "{\"error\":{\"code\":\"overloaded\",\"message\":\"the server is out of file descriptors\","   \
        "\"hint\":\"retry in a second; close idle connections\"}}"

static const char shed_reply[] = "HTTP/1.1 503 Service Unavailable\r\n"
                                 "Content-Type: application/json\r\n"
                                 "Retry-After: 1\r\n"
                                 "Connection: close\r\n"
                                 "Content-Length: %zu\r\n"
                                 "\r\n" SHED_BODY;

static void on_listen(struct xb_io *io, uint32_t events);

static void
reserve_take(struct xb_http *h)
{
        if (h->reserve_fd < 0)
                h->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void
on_backoff(struct xb_timer *t)
{
        struct xb_http *h = t->data;

        reserve_take(h);
        if (!h->listen_io.active)
                xb_io_start(h->loop, &h->listen_io, h->listen_fd, EPOLLIN, on_listen, h);
}

/* The table is full: answer one waiting client with the reserve fd. */
static void
shed_one(struct xb_http *h)
{
        int fd;

        if (h->reserve_fd >= 0) {
                close(h->reserve_fd);
                h->reserve_fd = -1;
        }
        fd = accept4(h->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
                char msg[sizeof(shed_reply) + 16];
                int n = snprintf(msg, sizeof(msg), shed_reply, sizeof(SHED_BODY) - 1);

                /* Best effort: a fresh socket's buffer takes this at once. */
                if (send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
                        xb_debug("http: shed a connection without its reply: %s", strerror(errno));
                shutdown(fd, SHUT_WR);
                close(fd);
                h->shed++;
        }
        reserve_take(h);
}

static void
on_listen(struct xb_io *io, uint32_t events)
{
        struct xb_http *h = io->data;

        (void)events;
        for (int i = 0; i < ACCEPT_BATCH; i++) {
                struct sockaddr_storage ss;
                socklen_t sl = sizeof(ss);
                int fd = accept4(h->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);

                if (fd >= 0) {
                        if (h->fd_warned)
                                xb_info("http: accepting connections again");
                        h->fd_warned = false;
                        /* MHD closes the socket itself when it refuses it (its connection limit). */
                        if (MHD(add_connection)(h->mhd, fd, (struct sockaddr *)&ss, sl) != MHD_YES)
                                xb_debug("http: a connection was refused: %s", strerror(errno));
                        http_mark_run(h);
                        continue;
                }
                if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
                        continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                        return;
                if (errno == EMFILE || errno == ENFILE) {
                        if (!h->fd_warned)
                                xb_warn("http: out of file descriptors; answering 503 until some are free");
                        h->fd_warned = true;
                        shed_one(h);
                } else {
                        xb_warn("http: accept: %s", strerror(errno));
                }
                /* ENOBUFS, ENOMEM, or the table full: rest, then listen again. */
                xb_io_stop(&h->listen_io);
                xb_timer_start(h->loop, &h->accept_timer, BACKOFF_MS, on_backoff, h);
                return;
        }
}

int
http_accept_start(struct xb_http *h)
{
        int fl = fcntl(h->listen_fd, F_GETFL);

        if (fl < 0 || fcntl(h->listen_fd, F_SETFL, fl | O_NONBLOCK) < 0)
                return -errno;
        h->reserve_fd = -1;
        reserve_take(h);
        return xb_io_start(h->loop, &h->listen_io, h->listen_fd, EPOLLIN, on_listen, h);
}

void
http_accept_stop(struct xb_http *h)
{
        xb_io_stop(&h->listen_io);
        xb_timer_stop(&h->accept_timer);
        if (h->reserve_fd >= 0)
                close(h->reserve_fd);
        h->reserve_fd = -1;
}
