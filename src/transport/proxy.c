/* Reverse proxying of one request onto an upstream socket (xb_proxy_start
 * in http.h), for the ports published from sandboxes.
 *
 * Theory of operation. The route's handler runs at the request's headers
 * and gives us a non-blocking socket, connected or connecting. The request
 * head goes into `out` at once; body bytes follow as libmicrohttpd hands
 * them over (re-chunked when the client sent chunks, which it decodes),
 * and when `out` is full the rest is left unconsumed and the connection
 * parked (suspended) until the upstream has read enough. The reply's
 * bytes gather in `in`; its head is parsed there into a libmicrohttpd
 * response, queued once the request's body is all in (0.9.75 cannot reply
 * earlier), whose reader hands the body over (chunks decoded: MHD chunks
 * again itself), parking the connection while `in` is empty. The upstream
 * is read only while `in` has room, so a client that does not read stops
 * the upstream, and the other way round: memory is two buffers per
 * request. A 101 answer to a request with Upgrade turns both sockets into
 * a tunnel over the same two buffers. We close the upstream fd; the
 * client's socket stays libmicrohttpd's (MHD_UPGRADE_ACTION_CLOSE). The
 * struct lives while the request, the response or the tunnel holds it.
 * This file has its life, the upstream socket and the request; the reply
 * is proxy_reply.c, the tunnel tunnel.c (proxy_int.h joins them). */
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

/* ---- life ---- */

static void
proxy_free(void *data)
{
        struct xb_proxy *p = data;

        if (p->fd >= 0)
                close(p->fd);
        free(p->out);
        free(p->in);
        free(p->set_cookie);
        free(p->refused_msg);
        free(p->refused_hint);
        free(p);
}

void
proxy_unref(struct xb_proxy *p)
{
        if (--p->refs)
                return;
        xb_io_stop(&p->io);
        xb_io_stop(&p->cio);
        xb_loop_defer(p->loop, &p->defer, proxy_free, p);
}

void
proxy_close_upstream(struct xb_proxy *p)
{
        xb_io_stop(&p->io);
        if (p->fd >= 0)
                close(p->fd);
        p->fd = -1;
}

int
proxy_client_fd(struct xb_req *r)
{
        const union MHD_ConnectionInfo *ci = MHD(get_connection_info)(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);

        return ci ? ci->connect_fd : -1;
}

/* Wait for the upstream (room in out, bytes in in, the head): the
 * connection is suspended, its socket watched for the client leaving. */
void
proxy_park(struct xb_proxy *p)
{
        struct xb_req *r = p->req;

        if (!r)
                return;
        if (!r->suspended)
                http_conn_suspend(r);
        r->on_gone = proxy_gone;
        r->owner = p;
        http_watch_start(r);
}

void
proxy_unpark(struct xb_proxy *p)
{
        struct xb_req *r = p->req;

        p->parked_up = p->parked_down = false;
        if (!r)
                return;
        /* on_completed would call it for a request that ended well */
        if (r->on_gone == proxy_gone)
                r->on_gone = NULL;
        if (!r->suspended)
                return;
        http_watch_stop(r);
        http_conn_resume(r);
        http_mark_run(r->http);
}

/* The upstream failed: a 502 when no reply has gone yet, else the reply
 * ends early (the reader reports the error). */
void
proxy_fail(struct xb_proxy *p, const char *msg)
{
        struct xb_req *r = p->req;

        if (p->failed)
                return;
        p->failed = true;
        proxy_close_upstream(p);
        if (p->resp) {
                MHD(destroy_response)(p->resp);   /* its free callback drops its ref */
                p->resp = NULL;
        }
        if (!r)
                return;
        if (!p->queued && !r->replied) {
                p->parked_up = p->parked_down = p->waiting_head = false;
                if (p->refused)
                        xb_reply_error(r, 502, "port_closed", p->refused_hint, "%s", p->refused_msg);
                else
                        xb_reply_error(r, 502, "upstream_failed",
                                       "the server in the sandbox ended the connection; check its log, or retry", "%s",
                                       msg);
                return;
        }
        if (p->parked_down)
                proxy_unpark(p);
}

void
proxy_gone(struct xb_req *r, void *owner)
{
        struct xb_proxy *p = owner;
        int fd = proxy_client_fd(r);

        p->parked_up = p->parked_down = p->waiting_head = false;
        p->failed = true;
        proxy_close_upstream(p);
        /* libmicrohttpd notices the closed socket only on its next event. */
        if (fd >= 0)
                shutdown(fd, SHUT_RDWR);
}

void
http_proxy_req_gone(struct xb_req *r)
{
        struct xb_proxy *p = r->proxy;

        r->proxy = NULL;
        p->req = NULL;
        if (!p->tunnel)
                proxy_close_upstream(p);
        if (p->resp) {
                /* built but never queued (the client left first): it holds a ref */
                MHD(destroy_response)(p->resp);
                p->resp = NULL;
        }
        proxy_unref(p);
}

/* ---- buffers ---- */

size_t
proxy_room(char *buf, size_t *off, size_t *len)
{
        if (*off == *len)
                *off = *len = 0;
        if (*off && BUF_CAP - *len < UNPARK_ROOM) {
                memmove(buf, buf + *off, *len - *off);
                *len -= *off;
                *off = 0;
        }
        return BUF_CAP - *len;
}

void
proxy_io_want(struct xb_proxy *p, struct xb_io *io, int fd, uint32_t ev, xb_io_cb cb)
{
        if (fd < 0 || !ev) {
                xb_io_stop(io);
                return;
        }
        if (!io->active)
                xb_io_start(p->loop, io, fd, ev, cb, p);
        else
                xb_io_modify(io, ev);
}

/* ---- the upstream socket ---- */

static void
on_up(struct xb_io *io, uint32_t events)
{
        struct xb_proxy *p = io->data;

        if (!p->connected) {
                int e = 0;
                socklen_t len = sizeof(e);

                if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
                        e = errno;
                if (e) {
                        p->refused = e == ECONNREFUSED;
                        proxy_fail(p, strerror(e));
                        return;
                }
                p->connected = true;
        }
        if ((events & EPOLLOUT) && p->out_off < p->out_len) {
                ssize_t n = send(p->fd, p->out + p->out_off, p->out_len - p->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);

                if (n < 0 && errno != EAGAIN && errno != EINTR) {
                        proxy_fail(p, strerror(errno));
                        return;
                }
                if (n > 0)
                        p->out_off += (size_t)n;
                if (p->parked_up && proxy_room(p->out, &p->out_off, &p->out_len) >= UNPARK_ROOM)
                        proxy_unpark(p);
        }
        if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !p->up_eof && proxy_room(p->in, &p->in_off, &p->in_len)) {
                ssize_t n = recv(p->fd, p->in + p->in_len, BUF_CAP - p->in_len, MSG_DONTWAIT);

                if (n < 0 && errno != EAGAIN && errno != EINTR) {
                        if (!p->head_done) {
                                proxy_fail(p, strerror(errno));
                                return;
                        }
                        n = 0;   /* a reset after the reply: its end, the framing judges */
                }
                if (n == 0)
                        p->up_eof = true;
                if (n > 0)
                        p->in_len += (size_t)n;
                if (!p->head_done && proxy_parse_head(p) < 0)
                        return;
                if (p->head_done)
                        proxy_try_reply(p);
                if (p->parked_down)
                        proxy_unpark(p);
        }
        proxy_update_io(p);
}

void
proxy_update_io(struct xb_proxy *p)
{
        uint32_t ev = 0;

        if (p->tunnel || p->fd < 0 || p->failed)
                return;
        if (!p->connected || p->out_off < p->out_len)
                ev |= EPOLLOUT;
        if (p->connected && !p->up_eof && p->in_len - p->in_off < BUF_CAP && (p->in_off || p->in_len < BUF_CAP))
                ev |= EPOLLIN;
        proxy_io_want(p, &p->io, p->fd, ev, on_up);
}

/* ---- the request ---- */

static int out_printf(struct xb_proxy *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
out_printf(struct xb_proxy *p, const char *fmt, ...)
{
        size_t left = proxy_room(p->out, &p->out_off, &p->out_len);
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(p->out + p->out_len, left, fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t)n >= left)
                return -ENOBUFS;
        p->out_len += (size_t)n;
        return 0;
}

struct head_ctx {
        struct xb_proxy *p;
        bool drop_auth, bad;
};

static enum MHD_Result
add_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
        static const char *const skip[] = {
                "Expect",           "Upgrade", "Proxy-Authorization", "X-Forwarded-Prefix", "X-Forwarded-Proto",
                "X-Forwarded-Host", NULL
        };
        struct head_ctx *h = cls;

        (void)kind;
        if (!key || !value || proxy_hop_by_hop(key, false))
                return MHD_YES;
        for (size_t i = 0; skip[i]; i++)
                if (!strcasecmp(key, skip[i]))
                        return MHD_YES;
        if (h->drop_auth && !strcasecmp(key, "Authorization"))
                return MHD_YES;
        if (out_printf(h->p, "%s: %s\r\n", key, value) < 0)
                h->bad = true;
        return h->bad ? MHD_NO : MHD_YES;
}

/* target without the query parameter name (and its value). */
static int
put_target(struct xb_proxy *p, const char *target, const char *name)
{
        const char *q = strchr(target, '?');
        size_t nlen = name ? strlen(name) : 0;
        bool first = true;

        if (!q || !name)
                return out_printf(p, "%s", target);
        if (out_printf(p, "%.*s", (int)(q - target), target) < 0)
                return -ENOBUFS;
        for (const char *a = q + 1; *a;) {
                size_t len = strcspn(a, "&");

                if (!(len >= nlen && !strncmp(a, name, nlen) && (len == nlen || a[nlen] == '='))) {
                        if (out_printf(p, "%c%.*s", first ? '?' : '&', (int)len, a) < 0)
                                return -ENOBUFS;
                        first = false;
                }
                a += len;
                if (*a == '&')
                        a++;
        }
        return 0;
}

static int
build_head(struct xb_proxy *p, struct xb_req *r, const struct xb_proxy_opts *o)
{
        const char *clen = xb_req_header(r, "Content-Length"), *te = xb_req_header(r, "Transfer-Encoding");
        const char *upgrade = xb_req_header(r, "Upgrade"), *host = xb_req_header(r, "Host");
        const char *proto = xb_req_header(r, "X-Forwarded-Proto");
        struct head_ctx h = { .p = p, .drop_auth = o->drop_auth };

        p->upgrade = upgrade && *upgrade;
        p->is_head = !strcmp(r->method, "HEAD");
        if (out_printf(p, "%s ", r->method) < 0 || put_target(p, o->target, o->drop_query) < 0 ||
            out_printf(p, " HTTP/1.1\r\n") < 0)
                return -ENOBUFS;
        MHD(get_connection_values)(r->conn, MHD_HEADER_KIND, add_header, &h);
        if (h.bad)
                return -ENOBUFS;
        if (clen)
                h.bad |= out_printf(p, "Content-Length: %s\r\n", clen) < 0;
        else if (te && strcasestr(te, "chunked")) {
                p->chunked_up = true;
                h.bad |= out_printf(p, "Transfer-Encoding: chunked\r\n") < 0;
        }
        if (p->upgrade)
                h.bad |= out_printf(p, "Connection: Upgrade\r\nUpgrade: %s\r\n", upgrade) < 0;
        else
                h.bad |= out_printf(p, "Connection: close\r\n") < 0;
        h.bad |=
                out_printf(p, "X-Forwarded-Proto: %s\r\n", proto && !strcasecmp(proto, "https") ? "https" : "http") < 0;
        if (host)
                h.bad |= out_printf(p, "X-Forwarded-Host: %s\r\n", host) < 0;
        if (o->prefix)
                h.bad |= out_printf(p, "X-Forwarded-Prefix: %s\r\n", o->prefix) < 0;
        h.bad |= out_printf(p, "\r\n") < 0;
        return h.bad ? -ENOBUFS : 0;
}

void
xb_proxy_start(struct xb_req *r, int fd, const struct xb_proxy_opts *o)
{
        struct xb_proxy *p = calloc(1, sizeof(*p));

        if (p) {
                p->out = malloc(BUF_CAP);
                p->in = malloc(BUF_CAP);
                p->refused_msg = strdup(o->refused_msg ? o->refused_msg : "connection refused");
                p->refused_hint = strdup(o->refused_hint ? o->refused_hint : "start the server, then retry");
                p->set_cookie = o->set_cookie ? strdup(o->set_cookie) : NULL;
        }
        if (!p || !p->out || !p->in || !p->refused_msg || !p->refused_hint || (o->set_cookie && !p->set_cookie)) {
                if (p)
                        proxy_free(p);
                close(fd);
                xb_reply_error(r, 503, "out_of_memory", "retry", "out of memory");
                return;
        }
        p->loop = r->http->loop;
        p->http = r->http;
        p->req = r;
        p->refs = 1;
        p->fd = fd;
        p->csock = -1;
        p->io.fd = p->cio.fd = -1;
        if (build_head(p, r, o) < 0) {
                proxy_free(p);
                close(fd);
                xb_reply_error(r, 431, "headers_too_large", "send fewer or smaller headers",
                               "the request's headers do not fit the proxy's buffer");
                return;
        }
        r->proxy = p;
        proxy_update_io(p);
}

void
http_proxy_body(struct xb_req *r, const char *data, size_t *size)
{
        struct xb_proxy *p = r->proxy;
        size_t left, n;

        if (p->failed) {
                *size = 0;
                return;
        }
        if (!*size) {
                if (!p->body_done) {
                        p->body_done = true;
                        if (p->chunked_up && out_printf(p, "0\r\n\r\n") < 0) {
                                /* no room for the last chunk yet: come back */
                                p->body_done = false;
                                p->parked_up = true;
                                proxy_park(p);
                                proxy_update_io(p);
                                return;
                        }
                }
                proxy_update_io(p);
                proxy_try_reply(p);
                if (!p->queued && !p->failed && !r->replied) {
                        p->waiting_head = true;
                        proxy_park(p);
                }
                return;
        }
        left = proxy_room(p->out, &p->out_off, &p->out_len);
        if (p->chunked_up) {
                n = left > 32 ? left - 32 : 0;
                if (n > *size)
                        n = *size;
                if (n) {
                        out_printf(p, "%zx\r\n", n);
                        memcpy(p->out + p->out_len, data, n);
                        p->out_len += n;
                        out_printf(p, "\r\n");
                }
        } else {
                n = left < *size ? left : *size;
                memcpy(p->out + p->out_len, data, n);
                p->out_len += n;
        }
        *size -= n;
        if (*size) {
                p->parked_up = true;
                proxy_park(p);
        }
        proxy_update_io(p);
}
