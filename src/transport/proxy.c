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
 * struct lives while the request, the response or the tunnel holds it. */
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

#include "transport/http_int.h"

#define BUF_CAP (64u << 10)         /* each way: 128 KiB a request at most */
#define HEAD_MAX (48u << 10)
#define CHUNK_LINE_MAX 1024
#define UNPARK_ROOM (16u << 10)

enum framing { BODY_NONE, BODY_LENGTH, BODY_CHUNKED, BODY_EOF };
enum chunk_state { CH_SIZE, CH_DATA, CH_DATA_END, CH_TRAILER, CH_DONE };

struct xb_proxy {
        struct xb_loop *loop;
        struct xb_http *http;
        struct xb_req *req;           /* NULL once it is freed */
        struct xb_defer defer;
        unsigned refs;                /* the request, the response, the tunnel */
        int fd;                       /* upstream; -1 once closed */
        struct xb_io io;
        bool connected, failed, refused;
        /* to the upstream */
        char *out;
        size_t out_off, out_len;
        bool chunked_up, body_done, parked_up;
        /* from the upstream */
        char *in;
        size_t in_off, in_len;
        bool up_eof;
        bool head_done, queued, parked_down, waiting_head;
        struct MHD_Response *resp;    /* built from the head, until queued */
        unsigned status;
        enum framing framing;
        enum chunk_state ch;
        uint64_t remaining;           /* BODY_LENGTH: bytes left; chunked: of this chunk */
        bool is_head, upgrade;
        char *set_cookie, *refused_msg, *refused_hint;
        /* the tunnel after a 101 */
        bool tunnel;
        struct xb_proxy *t_next, **t_pprev;   /* in http->tunnels while a tunnel */
        struct MHD_UpgradeResponseHandle *urh;
        int csock;
        struct xb_io cio;
        bool c_eof;
};

static void update_io(struct xb_proxy *p);

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

static void
unref(struct xb_proxy *p)
{
        if (--p->refs)
                return;
        xb_io_stop(&p->io);
        xb_io_stop(&p->cio);
        xb_loop_defer(p->loop, &p->defer, proxy_free, p);
}

static void
close_upstream(struct xb_proxy *p)
{
        xb_io_stop(&p->io);
        if (p->fd >= 0)
                close(p->fd);
        p->fd = -1;
}

static int
client_fd(struct xb_req *r)
{
        const union MHD_ConnectionInfo *ci = MHD(get_connection_info)(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);

        return ci ? ci->connect_fd : -1;
}

static void proxy_gone(struct xb_req *r, void *owner);

/* Wait for the upstream (room in out, bytes in in, the head): the
 * connection is suspended, its socket watched for the client leaving. */
static void
park(struct xb_proxy *p)
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

static void
unpark(struct xb_proxy *p)
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
static void
fail(struct xb_proxy *p, const char *msg)
{
        struct xb_req *r = p->req;

        if (p->failed)
                return;
        p->failed = true;
        close_upstream(p);
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
                                       "the server in the sandbox ended the connection; check its log, or retry",
                                       "%s", msg);
                return;
        }
        if (p->parked_down)
                unpark(p);
}

static void
proxy_gone(struct xb_req *r, void *owner)
{
        struct xb_proxy *p = owner;
        int fd = client_fd(r);

        p->parked_up = p->parked_down = p->waiting_head = false;
        p->failed = true;
        close_upstream(p);
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
                close_upstream(p);
        unref(p);
}

/* ---- buffers ---- */

static size_t
room(char *buf, size_t *off, size_t *len)
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

static void
io_want(struct xb_proxy *p, struct xb_io *io, int fd, uint32_t ev, xb_io_cb cb)
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

/* ---- the reply ---- */

/* Body bytes from in into buf, decoding chunks; -1 on a malformed chunk.
 * *done once the body is complete. */
static ssize_t
take_body(struct xb_proxy *p, char *buf, size_t max, bool *done)
{
        size_t got = 0;

        *done = false;
        for (;;) {
                char *s = p->in + p->in_off, *nl;
                size_t avail = p->in_len - p->in_off, n;

                switch (p->framing) {
                case BODY_NONE:
                        *done = true;
                        return 0;
                case BODY_LENGTH:
                case BODY_EOF:
                        n = avail < max ? avail : max;
                        if (p->framing == BODY_LENGTH && n > p->remaining)
                                n = (size_t)p->remaining;
                        memcpy(buf, s, n);
                        p->in_off += n;
                        if (p->framing == BODY_LENGTH) {
                                p->remaining -= n;
                                *done = !p->remaining;
                        } else
                                *done = p->up_eof && p->in_off == p->in_len;
                        return (ssize_t)n;
                case BODY_CHUNKED:
                        break;
                }
                if (p->ch == CH_DONE) {
                        *done = true;
                        return (ssize_t)got;
                }
                if (p->ch == CH_DATA) {
                        n = avail < max - got ? avail : max - got;
                        if (n > p->remaining)
                                n = (size_t)p->remaining;
                        if (!n)
                                return (ssize_t)got;
                        memcpy(buf + got, s, n);
                        got += n;
                        p->in_off += n;
                        p->remaining -= n;
                        if (!p->remaining)
                                p->ch = CH_DATA_END;
                        continue;
                }
                nl = memmem(s, avail, "\r\n", 2);
                if (!nl)
                        return avail > CHUNK_LINE_MAX ? -1 : (ssize_t)got;
                p->in_off += (size_t)(nl - s) + 2;
                if (p->ch == CH_DATA_END) {
                        if (nl != s)
                                return -1;
                        p->ch = CH_SIZE;
                } else if (p->ch == CH_SIZE) {
                        char *end;
                        unsigned long long sz = strtoull(s, &end, 16);

                        if (end == s || (*end != ';' && *end != '\r' && *end != ' ' && *end != '\t'))
                                return -1;
                        p->remaining = sz;
                        p->ch = sz ? CH_DATA : CH_TRAILER;
                } else if (nl == s) {
                        p->ch = CH_DONE;   /* the empty line after the trailers */
                }
        }
}

static ssize_t
reader(void *cls, uint64_t pos, char *buf, size_t max)
{
        struct xb_proxy *p = cls;
        bool done;
        ssize_t n;

        (void)pos;
        if (!p->failed) {
                n = take_body(p, buf, max, &done);
                if (n > 0) {
                        if (p->req)
                                p->req->bytes += (uint64_t)n;
                        update_io(p);
                        return n;
                }
                if (n == 0 && done)
                        return MHD_CONTENT_READER_END_OF_STREAM;
                if (n == 0 && !p->up_eof) {
                        p->parked_down = true;
                        park(p);
                        update_io(p);
                        return 0;
                }
        }
        /* As in fd_reader (reply.c): an error return alone leaves the client waiting. */
        close_upstream(p);
        if (p->req) {
                int fd = client_fd(p->req);

                if (fd >= 0)
                        shutdown(fd, SHUT_RDWR);
                http_mark_run(p->req->http);
        }
        return MHD_CONTENT_READER_END_WITH_ERROR;
}

static void
resp_free(void *cls)
{
        unref(cls);
}

static void tunnel_start(struct xb_proxy *p, const char *extra, size_t n, int sock,
                         struct MHD_UpgradeResponseHandle *urh);

static void
on_upgrade(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra_in, size_t extra_in_size,
           MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
        (void)conn;
        (void)con_cls;
        tunnel_start(cls, extra_in, extra_in_size, sock, urh);
}

static bool
hop_by_hop(const char *name, bool upgrade)
{
        static const char *const names[] = { "Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding",
                                             "Content-Length", "TE", "Trailer", "Proxy-Authenticate", NULL };

        for (size_t i = 0; names[i]; i++)
                if (!strcasecmp(name, names[i]))
                        return true;
        return !upgrade && !strcasecmp(name, "Upgrade");
}

/* Parse the reply's head in in, if it is all there; 1 when parsed, 0 when
 * more is needed, -1 after failing p. Informational replies (100, 103)
 * are dropped: libmicrohttpd answers Expect itself. */
static int
parse_head(struct xb_proxy *p)
{
        for (;;) {
                char *s = p->in + p->in_off, *end, *line, *next;
                size_t avail = p->in_len - p->in_off;
                long long clen = -1;
                bool chunked = false, upgrade;
                unsigned status;
                char *e;

                end = memmem(s, avail, "\r\n\r\n", 4);
                if (!end) {
                        if (avail >= HEAD_MAX)
                                fail(p, "the server in the sandbox sent a reply head over 48 KiB");
                        else if (p->up_eof)
                                fail(p, "the server in the sandbox closed the connection without a reply");
                        return avail >= HEAD_MAX || p->up_eof ? -1 : 0;
                }
                *end = '\0';
                if (strncmp(s, "HTTP/1.", 7) || !(s[7] == '0' || s[7] == '1') || s[8] != ' ' ||
                    (status = (unsigned)strtoul(s + 9, &e, 10)) < 100 || status > 599 || (*e && *e != ' ' && *e != '\r')) {
                        fail(p, "the server in the sandbox did not answer with HTTP/1.x");
                        return -1;
                }
                p->in_off += (size_t)(end - s) + 4;
                if (status < 200 && status != 101)
                        continue;
                upgrade = status == 101;
                if (upgrade && !p->upgrade) {
                        fail(p, "the server in the sandbox switched protocols unasked");
                        return -1;
                }
                /* the framing first: the response's size depends on it */
                for (line = strstr(s, "\r\n"); line; line = next) {
                        char *colon;

                        line += 2;
                        next = strstr(line, "\r\n");
                        if (next)
                                *next = '\0';
                        colon = strchr(line, ':');
                        if (colon && !strncasecmp(line, "Content-Length:", 15))
                                clen = strtoll(colon + 1, NULL, 10);
                        if (colon && !strncasecmp(line, "Transfer-Encoding:", 18) && strcasestr(colon, "chunked"))
                                chunked = true;
                        if (next)
                                *next = '\r';
                }
                if (upgrade)
                        p->resp = MHD(create_response_for_upgrade)(on_upgrade, p);
                else {
                        uint64_t size = MHD_SIZE_UNKNOWN;

                        if (p->is_head || status == 204 || status == 304) {
                                p->framing = BODY_NONE;
                                size = 0;
                        } else if (chunked) {
                                p->framing = BODY_CHUNKED;
                        } else if (clen >= 0) {
                                p->framing = BODY_LENGTH;
                                p->remaining = (uint64_t)clen;
                                size = (uint64_t)clen;
                        } else
                                p->framing = BODY_EOF;
                        p->resp = MHD(create_response_from_callback)(size, 32u << 10, reader, p, resp_free);
                        if (p->resp)
                                p->refs++;
                }
                if (!p->resp) {
                        fail(p, "out of memory");
                        return -1;
                }
                for (line = strstr(s, "\r\n"); line; line = next) {
                        char *colon, *v;

                        line += 2;
                        next = strstr(line, "\r\n");
                        if (next)
                                *next = '\0';
                        colon = strchr(line, ':');
                        if (colon && colon != line) {
                                *colon = '\0';
                                for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
                                        ;
                                if (!hop_by_hop(line, upgrade))
                                        MHD(add_response_header)(p->resp, line, v);
                        }
                }
                if (p->set_cookie)
                        MHD(add_response_header)(p->resp, "Set-Cookie", p->set_cookie);
                p->status = status;
                p->head_done = true;
                return 1;
        }
}

/* Queue the reply once both its head and the whole request are in. */
static void
try_reply(struct xb_proxy *p)
{
        struct xb_req *r = p->req;
        struct MHD_Response *resp = p->resp;

        if (!r || p->queued || !p->head_done || !p->body_done || p->failed || !resp)
                return;
        p->resp = NULL;
        p->queued = true;
        p->waiting_head = false;
        /* It resumes a parked connection; a later park names us again. */
        http_queue(r, p->status, resp);
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
                        fail(p, strerror(e));
                        return;
                }
                p->connected = true;
        }
        if ((events & EPOLLOUT) && p->out_off < p->out_len) {
                ssize_t n = send(p->fd, p->out + p->out_off, p->out_len - p->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);

                if (n < 0 && errno != EAGAIN && errno != EINTR) {
                        fail(p, strerror(errno));
                        return;
                }
                if (n > 0)
                        p->out_off += (size_t)n;
                if (p->parked_up && room(p->out, &p->out_off, &p->out_len) >= UNPARK_ROOM)
                        unpark(p);
        }
        if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !p->up_eof &&
            room(p->in, &p->in_off, &p->in_len)) {
                ssize_t n = recv(p->fd, p->in + p->in_len, BUF_CAP - p->in_len, MSG_DONTWAIT);

                if (n < 0 && errno != EAGAIN && errno != EINTR) {
                        if (!p->head_done) {
                                fail(p, strerror(errno));
                                return;
                        }
                        n = 0;   /* a reset after the reply: its end, the framing judges */
                }
                if (n == 0)
                        p->up_eof = true;
                if (n > 0)
                        p->in_len += (size_t)n;
                if (!p->head_done && parse_head(p) < 0)
                        return;
                if (p->head_done)
                        try_reply(p);
                if (p->parked_down)
                        unpark(p);
        }
        update_io(p);
}

static void
update_io(struct xb_proxy *p)
{
        uint32_t ev = 0;

        if (p->tunnel || p->fd < 0 || p->failed)
                return;
        if (!p->connected || p->out_off < p->out_len)
                ev |= EPOLLOUT;
        if (p->connected && !p->up_eof && p->in_len - p->in_off < BUF_CAP &&
            (p->in_off || p->in_len < BUF_CAP))
                ev |= EPOLLIN;
        io_want(p, &p->io, p->fd, ev, on_up);
}

/* ---- the request ---- */

static int
out_printf(struct xb_proxy *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
out_printf(struct xb_proxy *p, const char *fmt, ...)
{
        size_t left = room(p->out, &p->out_off, &p->out_len);
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
        static const char *const skip[] = { "Expect", "Upgrade", "Proxy-Authorization", "X-Forwarded-Prefix",
                                            "X-Forwarded-Proto", "X-Forwarded-Host", NULL };
        struct head_ctx *h = cls;

        (void)kind;
        if (!key || !value || hop_by_hop(key, false))
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
        h.bad |= out_printf(p, "X-Forwarded-Proto: %s\r\n", proto && !strcasecmp(proto, "https") ? "https" : "http") < 0;
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
        update_io(p);
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
                                park(p);
                                update_io(p);
                                return;
                        }
                }
                update_io(p);
                try_reply(p);
                if (!p->queued && !p->failed && !r->replied) {
                        p->waiting_head = true;
                        park(p);
                }
                return;
        }
        left = room(p->out, &p->out_off, &p->out_len);
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
                park(p);
        }
        update_io(p);
}

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
        close_upstream(p);
        if (p->urh) {
                MHD(upgrade_action)(p->urh, MHD_UPGRADE_ACTION_CLOSE);
                p->urh = NULL;
                http_mark_run(p->http);
        }
        p->tunnel = false;
        unref(p);
}

static void tunnel_update(struct xb_proxy *p);

/* Move bytes from one socket into a buffer; false on an error. */
static bool
pump_in(int fd, char *buf, size_t *off, size_t *len, bool *eof)
{
        ssize_t n;

        if (*eof || !room(buf, off, len))
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
        io_want(p, &p->cio, p->csock, cev, on_tunnel_client);
        io_want(p, &p->io, p->fd, uev, on_tunnel_up);
}

static void
tunnel_start(struct xb_proxy *p, const char *extra, size_t n, int sock, struct MHD_UpgradeResponseHandle *urh)
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
        if (p->failed || p->fd < 0 || (n && room(p->out, &p->out_off, &p->out_len) < n)) {
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
