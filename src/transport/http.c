/* The HTTP front. See http.h for the theory of operation. */
#define _GNU_SOURCE
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/log.h"
#include "base/utf8.h"
#include "transport/mhd.h"

#define MAX_PARAMS 4
#define MAX_REPLY_HEADERS 8
#define STREAM_BACKLOG_MAX (8u << 20)

struct xb_http {
        struct xb_loop *loop;
        struct MHD_Daemon *mhd;
        struct xb_io mhd_io;
        struct xb_timer mhd_timer;
        struct xb_req *suspended;     /* connections MHD holds suspended (it must not stop with any) */
        bool need_run;
        const struct xb_route *routes;
        size_t nroutes;
        struct xb_http_opts o;
        int listen_fd;
        char url[300];
        char unix_path[108];
        bool loopback;                /* the bound address is loopback (or a unix socket) */
};

struct xb_req {
        struct xb_http *http;
        struct MHD_Connection *conn;
        const struct xb_route *route;
        char *path;
        char method[16];
        char *params[MAX_PARAMS];
        char *scratch;                /* the matched {} segments live here */
        struct xb_buf body;
        enum xb_req_phase phase;
        int tenant;
        bool suspended, replied, dispatched, complete;
        bool too_large;               /* the body passed body_max: 413 at the end */
        struct xb_req *susp_next, **susp_pprev;   /* in http->suspended while MHD holds it suspended */
        void *data;
        /* deferred replies */
        xb_gone_cb on_gone;
        void *owner;
        struct xb_io watch;           /* the client's socket while suspended */
        /* XB_ROUTE_SINK */
        int sink_fd;
        bool begin_replay;            /* MHD repeats the first call after a resume */
        uint64_t sink_bytes;
        int sink_err;
        /* reply headers */
        char *hdr_name[MAX_REPLY_HEADERS], *hdr_value[MAX_REPLY_HEADERS];
        int nhdr;
        struct xb_stream *stream;
        /* injected requests (no connection) */
        bool virt;
        const struct xb_vreply_ops *vops;
        void *vctx;
        char **vquery, **vheaders;     /* owned copies, name/value pairs */
};

struct xb_stream {
        struct xb_req *req;
        struct xb_buf pending;
        size_t off;                   /* sent part of pending */
        bool ended, waiting, failed;
};

/* ---- MHD driving ---- */

static void
mark_run(struct xb_http *h)
{
        h->need_run = true;
}

static void
on_mhd_io(struct xb_io *io, uint32_t events)
{
        (void)events;
        mark_run(io->data);
}

static void
on_mhd_timer(struct xb_timer *t)
{
        mark_run(t->data);
}

/* Before each sleep: let MHD work, then arm its timeout. */
static int
http_prepare(void *data)
{
        struct xb_http *h = data;
        MHD_UNSIGNED_LONG_LONG to;

        if (!h->mhd)
                return -1;
        if (h->need_run) {
                h->need_run = false;
                MHD(run)(h->mhd);
        }
        if (MHD(get_timeout)(h->mhd, &to) == MHD_YES)
                xb_timer_start(h->loop, &h->mhd_timer, to, on_mhd_timer, h);
        else
                xb_timer_stop(&h->mhd_timer);
        return h->need_run ? 0 : -1;
}

/* ---- requests ---- */

void *
xb_req_app(const struct xb_req *r)
{
        return r->http->o.app;
}

const char *
xb_req_method(const struct xb_req *r)
{
        return r->method;
}

const char *
xb_req_path(const struct xb_req *r)
{
        return r->path;
}

enum xb_req_phase
xb_req_phase(const struct xb_req *r)
{
        return r->phase;
}

const void *
xb_req_route_data(const struct xb_req *r)
{
        return r->route ? r->route->data : NULL;
}

const char *
xb_req_param(const struct xb_req *r, unsigned n)
{
        return n < MAX_PARAMS ? r->params[n] : NULL;
}

const char *
xb_req_query(const struct xb_req *r, const char *name, int *err)
{
        const char *v = NULL;
        size_t len = 0;

        if (err)
                *err = 0;
        if (r->virt) {
                for (char **q = r->vquery; q && q[0]; q += 2)
                        if (strcmp(q[0], name) == 0)
                                return q[1];
                return NULL;
        }
        if (MHD(lookup_connection_value_n)(r->conn, MHD_GET_ARGUMENT_KIND, name, strlen(name), &v, &len) != MHD_YES)
                return NULL;
        if (!v)
                return "";
        if (memchr(v, '\0', len) || memmem(v, len, "\xc0\x80", 2)) {
                if (err)
                        *err = -EINVAL;
                return NULL;
        }
        return v;
}

const char *
xb_req_header(const struct xb_req *r, const char *name)
{
        if (r->virt) {
                for (char **q = r->vheaders; q && q[0]; q += 2)
                        if (strcasecmp(q[0], name) == 0)
                                return q[1];
                return NULL;
        }
        return MHD(lookup_connection_value)(r->conn, MHD_HEADER_KIND, name);
}

const char *
xb_req_header_trim(const struct xb_req *r, const char *name, char *buf, size_t cap)
{
        const char *v = xb_req_header(r, name);
        size_t n;

        if (!v || cap == 0)
                return NULL;
        while (*v == ' ' || *v == '\t')
                v++;
        n = strlen(v);
        while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
                n--;
        if (n >= cap)
                n = cap - 1;
        memcpy(buf, v, n);
        buf[n] = '\0';
        return buf;
}

const char *
xb_req_body(const struct xb_req *r, size_t *len)
{
        if (len)
                *len = r->body.len;
        return r->body.data ? r->body.data : "";
}

int
xb_req_tenant(const struct xb_req *r)
{
        return r->tenant;
}

bool
xb_req_accepts(const struct xb_req *r, const char *mime)
{
        const char *a = xb_req_header(r, "Accept");

        return a && strcasestr(a, mime);
}

void
xb_req_set_data(struct xb_req *r, void *data)
{
        r->data = data;
}

void *
xb_req_data(const struct xb_req *r)
{
        return r->data;
}

void
xb_req_add_reply_header(struct xb_req *r, const char *name, const char *value)
{
        if (r->nhdr == MAX_REPLY_HEADERS)
                return;
        r->hdr_name[r->nhdr] = strdup(name);
        r->hdr_value[r->nhdr] = strdup(value);
        r->nhdr++;
}

/* Suspend and resume a real connection, keeping the list xb_http_stop needs. */
static void
conn_suspend(struct xb_req *r)
{
        MHD(suspend_connection)(r->conn);
        r->suspended = true;
        r->susp_next = r->http->suspended;
        if (r->susp_next)
                r->susp_next->susp_pprev = &r->susp_next;
        r->susp_pprev = &r->http->suspended;
        r->http->suspended = r;
}

static void
conn_resume(struct xb_req *r)
{
        if (r->susp_pprev) {
                *r->susp_pprev = r->susp_next;
                if (r->susp_next)
                        r->susp_next->susp_pprev = r->susp_pprev;
                r->susp_next = NULL;
                r->susp_pprev = NULL;
        }
        r->suspended = false;
        MHD(resume_connection)(r->conn);
}

static void
stop_watch(struct xb_req *r)
{
        xb_io_stop(&r->watch);
}

static void
on_client_gone(struct xb_io *io, uint32_t events)
{
        struct xb_req *r = io->data;
        xb_gone_cb cb = r->on_gone;

        (void)events;
        stop_watch(r);
        r->on_gone = NULL;
        r->replied = true;   /* nobody to reply to */
        /* A stream's reader must end it, not park the connection again: a
         * clean end of stream lets libmicrohttpd close the connection the
         * usual way (an error return leaves it half-closed, see fd_reader). */
        if (r->stream) {
                r->stream->ended = true;
                shutdown(io->fd, SHUT_RDWR);
        }
        if (cb)
                cb(r, r->owner);
        /* Let MHD notice the closed socket and complete the request. */
        if (r->suspended) {
                conn_resume(r);
                mark_run(r->http);
        }
}

void
xb_req_suspend(struct xb_req *r, xb_gone_cb on_gone, void *owner)
{
        const union MHD_ConnectionInfo *ci;

        r->on_gone = on_gone;
        r->owner = owner;
        if (r->suspended || r->replied)
                return;
        if (r->virt) {
                r->suspended = true;
                return;
        }
        conn_suspend(r);
        ci = MHD(get_connection_info)(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci && !r->watch.active)
                xb_io_start(r->http->loop, &r->watch, ci->connect_fd, EPOLLRDHUP, on_client_gone, r);
}

static void virt_continue(void *data);

void
xb_req_resume(struct xb_req *r)
{
        if (!r->suspended)
                return;
        if (r->virt) {
                r->suspended = false;
                /* A sink route's body goes in once the handler has set the sink. */
                if (!r->replied && r->phase == XB_PHASE_BEGIN)
                        xb_loop_defer(r->http->loop, virt_continue, r);
                return;
        }
        stop_watch(r);
        conn_resume(r);
        mark_run(r->http);
}

void
xb_req_set_sink(struct xb_req *r, int fd)
{
        r->sink_fd = fd;
}

uint64_t
xb_req_sink_bytes(const struct xb_req *r)
{
        return r->sink_bytes;
}

int
xb_req_sink_error(const struct xb_req *r)
{
        return r->sink_err;
}

static void req_free(struct xb_req *r);

/* The one reply of an injected request; the request is freed afterwards. */
static void
vreply(struct xb_req *r, unsigned status, const char *ctype, const void *p, size_t n)
{
        if (r->replied)
                return;
        r->replied = true;
        r->on_gone = NULL;
        r->suspended = false;
        r->vops->reply(r->vctx, status, ctype, p, n);
        xb_loop_defer(r->http->loop, (xb_defer_cb)req_free, r);
}

static void
queue(struct xb_req *r, unsigned status, struct MHD_Response *resp)
{
        if (r->replied || !resp) {
                if (resp)
                        MHD(destroy_response)(resp);
                return;
        }
        r->replied = true;
        r->on_gone = NULL;
        for (int i = 0; i < r->nhdr; i++)
                MHD(add_response_header)(resp, r->hdr_name[i], r->hdr_value[i]);
        MHD(queue_response)(r->conn, status, resp);
        MHD(destroy_response)(resp);
        xb_req_resume(r);
}

void
xb_reply_bytes(struct xb_req *r, unsigned status, const char *ctype, const void *p, size_t n)
{
        struct MHD_Response *resp;

        if (r->virt) {
                vreply(r, status, ctype, p, n);
                return;
        }
        resp = MHD(create_response_from_buffer)(n, (void *)p, MHD_RESPMEM_MUST_COPY);

        if (resp && ctype)
                MHD(add_response_header)(resp, "Content-Type", ctype);
        queue(r, status, resp);
}

void
xb_reply_json(struct xb_req *r, unsigned status, json_t *body)
{
        char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
        struct MHD_Response *resp;

        json_decref(body);
        if (!s) {
                static const char oom[] = "{\"error\":{\"code\":\"out_of_memory\",\"message\":\"out of memory\","
                                          "\"hint\":\"retry in a moment\"}}";

                xb_reply_bytes(r, 503, "application/json", oom, sizeof(oom) - 1);
                return;
        }
        if (r->virt) {
                vreply(r, status, "application/json", s, strlen(s));
                free(s);
                return;
        }
        resp = MHD(create_response_from_buffer)(strlen(s), s, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                free(s);
                return;
        }
        MHD(add_response_header)(resp, "Content-Type", "application/json");
        queue(r, status, resp);
}

void
xb_reply_error(struct xb_req *r, unsigned status, const char *code, const char *hint, const char *fmt, ...)
{
        char msg[600];
        size_t clean_len;
        char *clean;
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        /* Messages quote what the client sent, which need not be UTF-8. */
        clean = xb_utf8_sanitize(msg, strlen(msg), &clean_len);
        xb_reply_json(r, status, json_pack("{s:{s:s,s:s%,s:s}}", "error", "code", code, "message",
                                           clean ? clean : "?", clean ? clean_len : 1, "hint", hint ? hint : ""));
        free(clean);
}

void
xb_reply_empty(struct xb_req *r, unsigned status)
{
        xb_reply_bytes(r, status, NULL, "", 0);
}

/* A file body read with pread(2). When the file shrinks under the reply
 * (a process in the sandbox truncates it), the reply must end early, and
 * the only way to say so after the headers is to close the connection.
 * libmicrohttpd 0.9.75 in external epoll mode marks the connection closed
 * but only cleans it up on the socket's next event, which never comes
 * while the client waits for the rest: so the socket is shut down here,
 * which both tells the client and wakes libmicrohttpd. (sendfile(2) stalls
 * the same way: it returns 0 and MHD waits for writability.) */
struct fd_body {
        struct xb_http *http;
        int fd;
        int sock;                     /* the client's connection, -1 if unknown */
        uint64_t off;
};

static ssize_t
fd_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
        struct fd_body *b = cls;
        ssize_t n;

        do
                n = pread(b->fd, buf, max, (off_t)(b->off + pos));
        while (n < 0 && errno == EINTR);
        if (n > 0)
                return n;
        if (b->sock >= 0)
                shutdown(b->sock, SHUT_RDWR);
        mark_run(b->http);
        return MHD_CONTENT_READER_END_WITH_ERROR;
}

static void
fd_free(void *cls)
{
        struct fd_body *b = cls;

        close(b->fd);
        free(b);
}

void
xb_reply_fd(struct xb_req *r, unsigned status, const char *ctype, int fd, uint64_t off, uint64_t len,
            const char *content_range)
{
        struct MHD_Response *resp;
        struct fd_body *body;
        const union MHD_ConnectionInfo *ci;

        if (r->virt) {
                /* No socket to send from: read the range (bounded) and reply with it. */
                size_t n = len > (64u << 20) ? (64u << 20) : (size_t)len, got = 0;
                char *buf = malloc(n ? n : 1);

                while (buf && got < n) {
                        ssize_t k = pread(fd, buf + got, n - got, (off_t)(off + got));

                        if (k <= 0)
                                break;
                        got += (size_t)k;
                }
                close(fd);
                if (!buf)
                        xb_reply_error(r, 503, "out_of_memory", "retry", "out of memory");
                else
                        vreply(r, status, ctype, buf, got);
                free(buf);
                return;
        }
        body = malloc(sizeof(*body));
        resp = body ? MHD(create_response_from_callback)(len, 256u << 10, fd_reader, body, fd_free) : NULL;
        if (!resp) {
                free(body);
                close(fd);
                xb_reply_error(r, 500, "internal", "retry", "could not send the file");
                return;
        }
        ci = MHD(get_connection_info)(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        *body = (struct fd_body){ .http = r->http, .fd = fd, .sock = ci ? ci->connect_fd : -1, .off = off };
        if (ctype)
                MHD(add_response_header)(resp, "Content-Type", ctype);
        if (content_range)
                MHD(add_response_header)(resp, "Content-Range", content_range);
        MHD(add_response_header)(resp, "Accept-Ranges", "bytes");
        queue(r, status, resp);
}

/* ---- streams ---- */

static ssize_t
stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
        struct xb_stream *s = cls;
        size_t n;

        (void)pos;
        if (s->failed) {
                /* As in fd_reader: an error return alone leaves the client waiting. */
                const union MHD_ConnectionInfo *ci =
                        s->req ? MHD(get_connection_info)(s->req->conn, MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;

                if (ci)
                        shutdown(ci->connect_fd, SHUT_RDWR);
                if (s->req)
                        mark_run(s->req->http);
                return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        n = s->pending.len - s->off;
        if (n) {
                if (n > max)
                        n = max;
                memcpy(buf, s->pending.data + s->off, n);
                s->off += n;
                if (s->off == s->pending.len) {
                        xb_buf_reset(&s->pending);
                        s->off = 0;
                }
                return (ssize_t)n;
        }
        if (s->ended)
                return MHD_CONTENT_READER_END_OF_STREAM;
        /* Nothing yet: park the connection until a write resumes it. */
        s->waiting = true;
        if (!s->req->suspended)
                conn_suspend(s->req);
        return 0;
}

static void
stream_free(void *cls)
{
        struct xb_stream *s = cls;

        if (s->req)
                s->req->stream = NULL;
        xb_buf_free(&s->pending);
        free(s);
}

static void
stream_wake(struct xb_stream *s)
{
        if (s->waiting && s->req) {
                s->waiting = false;
                /* Not xb_req_resume: that stops the watch for the client
                 * leaving, and the reader parks the connection again once
                 * this is sent; a client that left then would go unseen. */
                if (s->req->suspended) {
                        conn_resume(s->req);
                        mark_run(s->req->http);
                }
        }
}

struct xb_stream *
xb_reply_stream(struct xb_req *r, unsigned status, const char *ctype, xb_gone_cb on_gone, void *owner)
{
        struct xb_stream *s = calloc(1, sizeof(*s));
        struct MHD_Response *resp;
        const union MHD_ConnectionInfo *ci;

        if (!s)
                return NULL;
        s->req = r;
        if (r->virt) {
                /* Events go straight to the injector; the stream ends the request. */
                (void)status;
                (void)ctype;
                r->stream = s;
                r->on_gone = on_gone;
                r->owner = owner;
                r->suspended = true;
                return s;
        }
        s->pending.max = STREAM_BACKLOG_MAX;
        resp = MHD(create_response_from_callback)(MHD_SIZE_UNKNOWN, 16384, stream_reader, s, stream_free);
        if (!resp) {
                free(s);
                return NULL;
        }
        MHD(add_response_header)(resp, "Content-Type", ctype);
        MHD(add_response_header)(resp, "Cache-Control", "no-cache");
        MHD(add_response_header)(resp, "X-Accel-Buffering", "no");
        r->stream = s;
        queue(r, status, resp);
        /* Streams end by the client leaving too: watch for it. */
        r->on_gone = on_gone;
        r->owner = owner;
        ci = MHD(get_connection_info)(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci && !r->watch.active)
                xb_io_start(r->http->loop, &r->watch, ci->connect_fd, EPOLLRDHUP, on_client_gone, r);
        return s;
}

int
xb_stream_write(struct xb_stream *s, const void *p, size_t n)
{
        if (!s || s->failed || s->ended)
                return -EPIPE;
        if (xb_buf_append(&s->pending, p, n) < 0) {
                /* The client is not reading: give up on it rather than grow. */
                s->failed = true;
                stream_wake(s);
                return -ENOBUFS;
        }
        stream_wake(s);
        return 0;
}

int
xb_stream_printf(struct xb_stream *s, const char *fmt, ...)
{
        va_list ap;
        int r;

        if (!s || s->failed || s->ended)
                return -EPIPE;
        va_start(ap, fmt);
        r = xb_buf_vprintf(&s->pending, fmt, ap);
        va_end(ap);
        if (r < 0) {
                s->failed = true;
                r = -ENOBUFS;
        }
        stream_wake(s);
        return r;
}

int
xb_stream_event(struct xb_stream *s, const char *name, json_t *data)
{
        char *j;
        int r;

        if (s && s->req && s->req->virt) {
                if (!s->req->replied && s->req->vops->event)
                        s->req->vops->event(s->req->vctx, name, data);
                json_decref(data);
                return 0;
        }
        j = json_dumps(data, JSON_COMPACT);
        json_decref(data);
        if (!j)
                return -ENOMEM;
        r = xb_stream_printf(s, "event: %s\ndata: %s\n\n", name, j);
        free(j);
        return r;
}

void
xb_stream_end(struct xb_stream *s)
{
        if (!s)
                return;
        if (s->req && s->req->virt) {
                struct xb_req *r = s->req;

                r->stream = NULL;
                xb_buf_free(&s->pending);
                free(s);
                vreply(r, 200, "text/event-stream", "", 0);
                return;
        }
        s->ended = true;
        if (s->req) {
                s->req->on_gone = NULL;
                stop_watch(s->req);
        }
        stream_wake(s);
}

/* ---- routing and the MHD callbacks ---- */

/* Match "/a/{}/b" against a path; fills params (pointers into a copy). */
static bool
match(const char *pattern, const char *path, char *params[MAX_PARAMS], char *scratch, size_t cap)
{
        const char *p = pattern, *q = path;
        unsigned n = 0;
        size_t used = 0;

        while (*p && *q) {
                if (p[0] == '{' && p[1] == '}') {
                        const char *end = strchrnul(q, '/');
                        size_t len = (size_t)(end - q);

                        if (len == 0 || n == MAX_PARAMS || used + len + 1 > cap)
                                return false;
                        memcpy(scratch + used, q, len);
                        scratch[used + len] = '\0';
                        params[n++] = scratch + used;
                        used += len + 1;
                        p += 2;
                        q = end;
                        continue;
                }
                if (*p != *q)
                        return false;
                p++;
                q++;
        }
        return *p == '\0' && *q == '\0';
}

static bool
token_ok(const struct xb_http *h, const char *auth, int *tenant)
{
        const char *tok;
        size_t tlen;

        *tenant = -1;
        if (!h->o.ntokens) {
                *tenant = 0;
                return true;
        }
        if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
                return false;
        tok = auth + 7;
        tlen = strlen(tok);
        for (size_t i = 0; i < h->o.ntokens; i++) {
                const char *want = h->o.tokens[i];
                size_t wlen = strlen(want);
                unsigned char diff = (unsigned char)(tlen != wlen);

                /* Constant time in the token's content. */
                for (size_t k = 0; k < wlen; k++)
                        diff |= (unsigned char)(want[k] ^ (k < tlen ? tok[k] : 0));
                if (!diff) {
                        *tenant = (int)i;
                        return true;
                }
        }
        return false;
}

/* MCP's DNS-rebinding rule: a browser page on another origin must not
 * reach a local server. Origin, when sent, and Host must be local. */
static bool
local_origin(struct xb_req *r)
{
        const char *origin = xb_req_header(r, "Origin"), *host = xb_req_header(r, "Host");
        static const char *const ok[] = { "localhost", "127.0.0.1", "[::1]" };
        bool host_ok = !host, origin_ok = !origin;

        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                size_t n = strlen(ok[i]);

                if (host && strncmp(host, ok[i], n) == 0 && (host[n] == '\0' || host[n] == ':'))
                        host_ok = true;
                if (origin) {
                        const char *o = strstr(origin, "://");

                        o = o ? o + 3 : origin;
                        if (strncmp(o, ok[i], n) == 0 && (o[n] == '\0' || o[n] == ':' || o[n] == '/'))
                                origin_ok = true;
                }
        }
        /* A unix socket or a non-loopback listener has no DNS-rebinding exposure
         * of this kind, but the Host check still applies on loopback. */
        if (!r->http->loopback)
                return origin_ok || !origin;
        return host_ok && origin_ok;
}

static void
free_pairs(char **v)
{
        for (char **p = v; p && *p; p++)
                free(*p);
        free(v);
}

static void
req_free(struct xb_req *r)
{
        if (r->susp_pprev) {
                *r->susp_pprev = r->susp_next;
                if (r->susp_next)
                        r->susp_next->susp_pprev = r->susp_pprev;
        }
        stop_watch(r);
        if (r->stream && r->virt) {
                xb_buf_free(&r->stream->pending);
                free(r->stream);
                r->stream = NULL;
        }
        if (r->stream)
                r->stream->req = NULL;
        free_pairs(r->vquery);
        free_pairs(r->vheaders);
        free(r->path);
        free(r->scratch);
        xb_buf_free(&r->body);
        for (int i = 0; i < r->nhdr; i++) {
                free(r->hdr_name[i]);
                free(r->hdr_value[i]);
        }
        free(r);
}

static void
on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
        struct xb_req *r = *con_cls;
        xb_gone_cb cb;

        (void)cls;
        (void)conn;
        (void)toe;
        if (!r)
                return;
        *con_cls = NULL;
        r->complete = true;
        cb = r->on_gone;
        r->on_gone = NULL;
        if (cb)
                cb(r, r->owner);
        stop_watch(r);
        xb_loop_defer(r->http->loop, (xb_defer_cb)req_free, r);
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method, const char *version,
           const char *upload, size_t *upload_size, void **con_cls)
{
        struct xb_http *h = cls;
        struct xb_req *r = *con_cls;

        (void)version;
        if (!r) {
                const char *auth, *clen;
                size_t cap = strlen(url) + MAX_PARAMS + 1;

                r = calloc(1, sizeof(*r));
                if (!r)
                        return MHD_NO;
                *con_cls = r;
                r->http = h;
                r->conn = conn;
                r->sink_fd = -1;
                r->tenant = -1;
                r->watch.fd = -1;
                r->body.max = h->o.body_max;
                r->path = strdup(url);
                r->scratch = malloc(cap);
                snprintf(r->method, sizeof(r->method), "%s", method);
                if (!r->path || !r->scratch)
                        return MHD_NO;
                for (size_t i = 0; i < h->nroutes && !r->route; i++) {
                        const struct xb_route *rt = &h->routes[i];

                        if (strcmp(rt->method, "*") && strcmp(rt->method, method))
                                continue;
                        memset(r->params, 0, sizeof(r->params));
                        if (match(rt->pattern, url, r->params, r->scratch, cap))
                                r->route = rt;
                }
                if (strstr(url, "\xc0\x80")) {
                        xb_reply_error(r, 400, "invalid_path", "remove the NUL byte (%00) from the URL",
                                       "the URL path contains a NUL byte");
                        return MHD_YES;
                }
                if (!r->route) {
                        bool path_known = false;
                        char allow[64] = "";

                        for (size_t i = 0; i < h->nroutes; i++) {
                                char *params[MAX_PARAMS];

                                if (match(h->routes[i].pattern, url, params, r->scratch, cap)) {
                                        path_known = true;
                                        if (!strstr(allow, h->routes[i].method) && strlen(allow) + 10 < sizeof(allow))
                                                snprintf(allow + strlen(allow), sizeof(allow) - strlen(allow), "%s%s",
                                                         allow[0] ? ", " : "", h->routes[i].method);
                                }
                        }
                        if (path_known)
                                xb_req_add_reply_header(r, "Allow", allow);
                        if (path_known)
                                xb_reply_error(r, 405, "method_not_allowed", "see GET /openapi.json for the methods of each path",
                                               "%s is not allowed on %s", method, url);
                        else
                                xb_reply_error(r, 404, "not_found", "see GET /openapi.json for every path, or GET /v1/guide",
                                               "no such endpoint: %s %s", method, url);
                        return MHD_YES;
                }
                if ((r->route->flags & XB_ROUTE_MCP) && !local_origin(r)) {
                        xb_reply_error(r, 403, "forbidden_origin", "connect from localhost, without a foreign Origin",
                                       "requests from this Origin or Host are refused (DNS rebinding protection)");
                        return MHD_YES;
                }
                auth = MHD(lookup_connection_value)(conn, MHD_HEADER_KIND, "Authorization");
                if (!(r->route->flags & XB_ROUTE_PUBLIC) && !token_ok(h, auth, &r->tenant)) {
                        xb_req_add_reply_header(r, "WWW-Authenticate", "Bearer");
                        xb_reply_error(r, 401, "unauthorized",
                                       "send the header `Authorization: Bearer <token>`; the token was printed when the server started",
                                       auth ? "the bearer token is not valid" : "this endpoint needs a bearer token");
                        return MHD_YES;
                }
                if (r->route->flags & XB_ROUTE_PUBLIC)
                        token_ok(h, auth, &r->tenant);
                clen = MHD(lookup_connection_value)(conn, MHD_HEADER_KIND, "Content-Length");
                if (clen) {
                        unsigned long long n = strtoull(clen, NULL, 10);
                        size_t max = (r->route->flags & XB_ROUTE_SINK) ? h->o.upload_max : h->o.body_max;

                        if (n > max) {
                                xb_reply_error(r, 413, "body_too_large",
                                               (r->route->flags & XB_ROUTE_SINK) ? "upload smaller files, or raise --upload-max"
                                                                                 : "send less; put large data in a file with PUT /v1/sandboxes/{id}/files",
                                               "the request body is %llu bytes; the limit is %zu", n, max);
                                return MHD_YES;
                        }
                }
                if (r->route->flags & XB_ROUTE_SINK) {
                        r->phase = XB_PHASE_BEGIN;
                        r->route->handler(r);
                        /* A handler that suspends here is called again, with the same
                         * empty upload, once resumed: that call is not the body's end. */
                        r->begin_replay = r->suspended;
                }
                return MHD_YES;
        }
        if (r->begin_replay && !*upload_size) {
                r->begin_replay = false;
                return MHD_YES;
        }
        if (r->replied) {
                *upload_size = 0;   /* an early reply: drop the rest of the body */
                return MHD_YES;
        }
        if (*upload_size) {
                if (r->route->flags & XB_ROUTE_SINK) {
                        if (r->sink_fd < 0) {
                                xb_reply_error(r, 500, "internal", "retry", "no place to write the upload");
                        } else if (r->sink_bytes + *upload_size > h->o.upload_max) {
                                r->sink_err = EFBIG;
                        } else if (!r->sink_err) {
                                int e = xb_write_all(r->sink_fd, upload, *upload_size);

                                if (e < 0)
                                        r->sink_err = -e;
                                else
                                        r->sink_bytes += *upload_size;
                        }
                } else if (!r->too_large && xb_buf_append(&r->body, upload, *upload_size) < 0) {
                        /* libmicrohttpd 0.9.75 cannot send a reply in the middle of a
                         * body: drop the rest and answer once it is all in. */
                        r->too_large = true;
                        xb_buf_free(&r->body);
                }
                *upload_size = 0;
                return MHD_YES;
        }
        if (r->too_large) {
                xb_reply_error(r, 413, "body_too_large",
                               "send less; put large data in a file with PUT /v1/sandboxes/{id}/files",
                               "the request body is over the limit of %zu bytes", h->o.body_max);
                return MHD_YES;
        }
        if (!r->dispatched) {
                r->dispatched = true;
                r->phase = XB_PHASE_END;
                r->route->handler(r);
        }
        return MHD_YES;
}

static int
hexval(char ch)
{
        return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
               : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

/* Percent-decoding for paths and query values, as MHD's own except that a
 * decoded NUL becomes C0 80, the overlong form of NUL (never valid UTF-8,
 * and two bytes where "%00" was three): MHD hands the path to the access
 * handler as a C string, where a real NUL would silently cut it short. The
 * path and query checks refuse that pair, which a client can also only
 * send to smuggle a NUL. */
static size_t
unescape(void *cls, struct MHD_Connection *conn, char *s)
{
        char *out = s;

        (void)cls;
        (void)conn;
        for (const char *in = s; *in; in++) {
                int hi, lo;

                if (in[0] == '%' && (hi = hexval(in[1])) >= 0 && (lo = hexval(in[2])) >= 0) {
                        int v = hi * 16 + lo;

                        if (v) {
                                *out++ = (char)v;
                        } else {
                                *out++ = (char)0xc0;
                                *out++ = (char)0x80;
                        }
                        in += 2;
                } else
                        *out++ = *in;
        }
        *out = '\0';
        return (size_t)(out - s);
}

static void
on_log(void *cls, const char *fmt, va_list ap)
{
        char msg[512];

        (void)cls;
        vsnprintf(msg, sizeof(msg), fmt, ap);
        msg[strcspn(msg, "\n")] = '\0';
        xb_debug("http: %s", msg);
}

/* ---- injected requests ---- */

static char **
copy_pairs(const char *const *v)
{
        size_t n = 0;
        char **out;

        while (v && v[n] && v[n + 1])
                n += 2;
        out = calloc(n + 1, sizeof(char *));
        if (!out)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (!(out[i] = strdup(v[i]))) {
                        free_pairs(out);
                        return NULL;
                }
        return out;
}

/* A sink route's second half: the body into the sink, then phase END. */
static void
virt_continue(void *data)
{
        struct xb_req *r = data;

        if (r->replied || r->suspended || r->phase != XB_PHASE_BEGIN)
                return;
        if (r->sink_fd < 0) {
                xb_reply_error(r, 500, "internal", "retry", "no place to write the upload");
                return;
        }
        if (r->body.len > r->http->o.upload_max)
                r->sink_err = EFBIG;
        else if (r->body.len) {
                int e = xb_write_all(r->sink_fd, r->body.data, r->body.len);

                if (e < 0)
                        r->sink_err = -e;
                else
                        r->sink_bytes = r->body.len;
        }
        r->phase = XB_PHASE_END;
        r->dispatched = true;
        r->route->handler(r);
}

struct xb_req *
xb_http_inject(struct xb_http *h, const struct xb_vreq *v, const struct xb_vreply_ops *ops, void *ctx)
{
        struct xb_req *r = calloc(1, sizeof(*r));
        size_t cap = strlen(v->path) + MAX_PARAMS + 1;

        if (!r) {
                ops->reply(ctx, 503, "application/json", "{\"error\":{\"code\":\"out_of_memory\"}}", 34);
                return NULL;
        }
        r->http = h;
        r->virt = true;
        r->vops = ops;
        r->vctx = ctx;
        r->sink_fd = -1;
        r->watch.fd = -1;
        r->tenant = v->tenant;
        r->body.max = (size_t)1 << 31;
        snprintf(r->method, sizeof(r->method), "%s", v->method);
        r->path = strdup(v->path);
        r->scratch = malloc(cap);
        r->vquery = copy_pairs(v->query);
        r->vheaders = copy_pairs(v->headers);
        if (!r->path || !r->scratch || !r->vquery || !r->vheaders ||
            (v->body_len && xb_buf_append(&r->body, v->body, v->body_len) < 0)) {
                xb_reply_error(r, 503, "out_of_memory", "retry", "out of memory");
                return NULL;
        }
        for (size_t i = 0; i < h->nroutes && !r->route; i++) {
                const struct xb_route *rt = &h->routes[i];

                if (strcmp(rt->method, "*") && strcmp(rt->method, r->method))
                        continue;
                memset(r->params, 0, sizeof(r->params));
                if (match(rt->pattern, r->path, r->params, r->scratch, cap))
                        r->route = rt;
        }
        if (!r->route) {
                xb_reply_error(r, 404, "not_found", "see GET /openapi.json", "no such operation: %s %s", r->method, r->path);
                return NULL;
        }
        if (r->route->flags & XB_ROUTE_SINK) {
                r->phase = XB_PHASE_BEGIN;
                r->route->handler(r);
                if (!r->replied && !r->suspended)
                        virt_continue(r);
        } else {
                r->phase = XB_PHASE_END;
                r->dispatched = true;
                r->route->handler(r);
        }
        return r->replied ? NULL : r;
}

void
xb_req_cancel(struct xb_req *r)
{
        xb_gone_cb cb;

        if (!r || !r->virt || r->replied)
                return;
        r->replied = true;
        cb = r->on_gone;
        r->on_gone = NULL;
        if (cb)
                cb(r, r->owner);
        xb_loop_defer(r->http->loop, (xb_defer_cb)req_free, r);
}

/* ---- listening ---- */

static bool
addr_is_loopback(const struct sockaddr *sa)
{
        if (sa->sa_family == AF_INET)
                return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
        if (sa->sa_family == AF_INET6)
                return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
        return sa->sa_family == AF_UNIX;
}

bool
xb_http_is_loopback(const char *listen)
{
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
        char host[256];
        const char *colon;
        bool all = true;

        if (!listen || strncmp(listen, "unix:", 5) == 0)
                return true;
        colon = strrchr(listen, ':');
        if (!colon || (size_t)(colon - listen) >= sizeof(host))
                return false;
        snprintf(host, sizeof(host), "%.*s", (int)(colon - listen), listen);
        if (host[0] == '[') {
                memmove(host, host + 1, strlen(host));
                host[strcspn(host, "]")] = '\0';
        }
        /* What the name resolves to, every address of it: "127.x.example" is not loopback. */
        if (!host[0] || getaddrinfo(host, NULL, &hints, &ai) != 0)
                return false;
        for (struct addrinfo *a = ai; a; a = a->ai_next)
                all = all && addr_is_loopback(a->ai_addr);
        freeaddrinfo(ai);
        return all;
}

static int
listen_on(struct xb_http *h, const char *spec, struct xb_err *err)
{
        int fd, one = 1;

        if (strncmp(spec, "unix:", 5) == 0) {
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                const char *path = spec + 5;

                if (strlen(path) >= sizeof(sa.sun_path))
                        return xb_err_msg(err, ENAMETOOLONG, "unix socket path %s is too long", path);
                snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
                fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0)
                        return xb_err_set(err, errno, "socket");
                unlink(path);
                if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0660) < 0 || listen(fd, 512) < 0) {
                        int e = errno;

                        close(fd);
                        return xb_err_set(err, e, "listen on %s", spec);
                }
                snprintf(h->unix_path, sizeof(h->unix_path), "%s", path);
                snprintf(h->url, sizeof(h->url), "unix:%s", path);
                h->loopback = true;
                return fd;
        } else {
                char host[256], port[16];
                const char *colon = strrchr(spec, ':');
                struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV }, *ai;
                struct sockaddr_storage ss;
                socklen_t sl = sizeof(ss);
                int rc;

                if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(host) || strlen(colon + 1) >= sizeof(port))
                        return xb_err_msg(err, EINVAL, "--listen takes HOST:PORT or unix:PATH, not `%s`", spec);
                snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
                snprintf(port, sizeof(port), "%s", colon + 1);
                if (host[0] == '[') {
                        memmove(host, host + 1, strlen(host));
                        host[strcspn(host, "]")] = '\0';
                }
                rc = getaddrinfo(host, port, &hints, &ai);
                if (rc)
                        return xb_err_msg(err, EINVAL, "cannot listen on %s: %s", spec, gai_strerror(rc));
                fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
                    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 512) < 0) {
                        int e = errno;

                        if (fd >= 0)
                                close(fd);
                        freeaddrinfo(ai);
                        return xb_err_set(err, e, "listen on %s", spec);
                }
                freeaddrinfo(ai);
                getsockname(fd, (struct sockaddr *)&ss, &sl);
                h->loopback = addr_is_loopback((struct sockaddr *)&ss);
                {
                        char addr[INET6_ADDRSTRLEN] = "";
                        unsigned p = 0;

                        if (ss.ss_family == AF_INET) {
                                inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, addr, sizeof(addr));
                                p = ntohs(((struct sockaddr_in *)&ss)->sin_port);
                                snprintf(h->url, sizeof(h->url), "http://%s:%u", addr, p);
                        } else {
                                inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, addr, sizeof(addr));
                                p = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
                                snprintf(h->url, sizeof(h->url), "http://[%s]:%u", addr, p);
                        }
                }
                return fd;
        }
}

int
xb_http_start(struct xb_loop *l, const struct xb_http_opts *o, const struct xb_route *routes, size_t nroutes,
              struct xb_http **ret, struct xb_err *err)
{
        struct xb_http *h = calloc(1, sizeof(*h));
        const union MHD_DaemonInfo *di;
        int r;

        if (!h)
                return xb_err_set(err, ENOMEM, "http");
        h->loop = l;
        h->o = *o;
        h->routes = routes;
        h->nroutes = nroutes;
        h->listen_fd = -1;
        if (!o->listen) {
                /* A router for injected requests only (execbox mcp over stdio). */
                snprintf(h->url, sizeof(h->url), "stdio:");
                *ret = h;
                return 0;
        }
        if ((r = xb_mhd_load(err)) < 0) {
                free(h);
                return r;
        }
        h->listen_fd = listen_on(h, o->listen, err);
        if (h->listen_fd < 0) {
                r = h->listen_fd;
                free(h);
                return r;
        }
        h->mhd = MHD(start_daemon)(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG | MHD_USE_TURBO,
                                   0, NULL, NULL, on_request, h,
                                   MHD_OPTION_LISTEN_SOCKET, h->listen_fd,
                                   MHD_OPTION_CONNECTION_LIMIT, o->conn_limit ? o->conn_limit : 1024,
                                   MHD_OPTION_CONNECTION_TIMEOUT, o->conn_timeout_s ? o->conn_timeout_s : 60,
                                   MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                                   MHD_OPTION_EXTERNAL_LOGGER, on_log, h,
                                   MHD_OPTION_UNESCAPE_CALLBACK, unescape, h,
                                   MHD_OPTION_END);
        if (!h->mhd) {
                close(h->listen_fd);
                free(h);
                return xb_err_msg(err, EIO, "libmicrohttpd would not start on %s", o->listen);
        }
        di = MHD(get_daemon_info)(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
        if (!di || xb_io_start(l, &h->mhd_io, di->epoll_fd, EPOLLIN, on_mhd_io, h) < 0) {
                MHD(stop_daemon)(h->mhd);
                close(h->listen_fd);
                free(h);
                return xb_err_msg(err, EIO, "cannot watch libmicrohttpd's epoll fd");
        }
        xb_loop_set_prepare(l, http_prepare, h);
        *ret = h;
        return 0;
}

void
xb_http_stop(struct xb_http *h)
{
        if (!h)
                return;
        if (h->mhd) {
                /* MHD aborts if stopped with a suspended connection: resume
                 * each one, cancelling the work that waits on it. */
                while (h->suspended) {
                        struct xb_req *r = h->suspended;
                        xb_gone_cb cb = r->on_gone;

                        r->on_gone = NULL;
                        stop_watch(r);
                        conn_resume(r);
                        if (cb)
                                cb(r, r->owner);
                }
                xb_io_stop(&h->mhd_io);
                xb_timer_stop(&h->mhd_timer);
                xb_loop_set_prepare(h->loop, NULL, NULL);
                MHD(stop_daemon)(h->mhd);
                h->mhd = NULL;
        }
        if (h->listen_fd >= 0)
                close(h->listen_fd);
        if (h->unix_path[0])
                unlink(h->unix_path);
        free(h);
}

const char *
xb_http_url(const struct xb_http *h)
{
        return h->url;
}
