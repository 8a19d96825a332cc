/* The HTTP front's core: libmicrohttpd driven by the daemon's loop, the
 * request life cycle (created at its headers, body buffered or sunk,
 * handler, suspend and resume, the client leaving, freed when MHD says it
 * is complete), request accessors, start and stop. See http.h for the
 * theory of operation; routing, replies, streams and sockets each have
 * their own file (http_int.h lists them). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/fd.h"
#include "base/log.h"
#include "transport/http_int.h"

/* ---- MHD driving ---- */

void
http_mark_run(struct xb_http *h)
{
        h->need_run = true;
}

static void
on_mhd_io(struct xb_io *io, uint32_t events)
{
        (void)events;
        http_mark_run(io->data);
}

static void
on_mhd_timer(struct xb_timer *t)
{
        http_mark_run(t->data);
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
                /* Twice: a connection MHD marks closed in one run (an error
                 * it could not even answer) is closed only by the next, and
                 * its timeout does not say that one is due. */
                MHD(run)(h->mhd);
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
xb_req_header(const struct xb_req *r, const char *name)
{
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
xb_req_cookie(const struct xb_req *r, const char *name)
{
        return MHD(lookup_connection_value)(r->conn, MHD_COOKIE_KIND, name);
}

const char *
xb_req_raw_uri(const struct xb_req *r)
{
        return r->raw_uri ? r->raw_uri : r->path;
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

const char *
xb_req_public_url(const struct xb_req *r)
{
        return r->http->o.public_url;
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

/* ---- suspend, resume, and the client leaving ---- */

void
http_conn_suspend(struct xb_req *r)
{
        MHD(suspend_connection)(r->conn);
        r->suspended = true;
        r->susp_next = r->http->suspended;
        if (r->susp_next)
                r->susp_next->susp_pprev = &r->susp_next;
        r->susp_pprev = &r->http->suspended;
        r->http->suspended = r;
}

void
http_conn_resume(struct xb_req *r)
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

void
http_watch_stop(struct xb_req *r)
{
        xb_io_stop(&r->watch);
}

static void
on_client_gone(struct xb_io *io, uint32_t events)
{
        struct xb_req *r = io->data;
        xb_gone_cb cb = r->on_gone;

        (void)events;
        http_watch_stop(r);
        r->on_gone = NULL;
        r->replied = true;   /* nobody to reply to */
        /* A stream's reader must end it, not park the connection again: a
         * clean end of stream lets libmicrohttpd close the connection the
         * usual way (an error return leaves it half-closed, see fd_reader in
         * reply.c). */
        if (r->stream) {
                r->stream->ended = true;
                shutdown(io->fd, SHUT_RDWR);
        }
        if (cb)
                cb(r, r->owner);
        /* Let MHD notice the closed socket and complete the request. */
        if (r->suspended) {
                http_conn_resume(r);
                http_mark_run(r->http);
        }
}

void
http_watch_start(struct xb_req *r)
{
        const union MHD_ConnectionInfo *ci = MHD(get_connection_info)(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);

        if (ci && !r->watch.active)
                xb_io_start(r->http->loop, &r->watch, ci->connect_fd, EPOLLRDHUP, on_client_gone, r);
}

void
xb_req_suspend(struct xb_req *r, xb_gone_cb on_gone, void *owner)
{
        r->on_gone = on_gone;
        r->owner = owner;
        if (r->suspended || r->replied)
                return;
        http_conn_suspend(r);
        http_watch_start(r);
}

void
xb_req_resume(struct xb_req *r)
{
        if (!r->suspended)
                return;
        http_watch_stop(r);
        http_conn_resume(r);
        http_mark_run(r->http);
}

void
xb_req_set_sink(struct xb_req *r, int fd)
{
        r->sink_fd = fd;
}

bool
xb_req_buffer_body(struct xb_req *r)
{
        r->sink_buffered = true;
        if (!(r->route->flags & XB_ROUTE_LARGE))
                return true;
        return http_length_ok(r) && http_guard_content_type(r, r->method);
}

void
xb_req_set_sink_gate(struct xb_req *r, int (*gate)(void *arg, size_t n), void *arg)
{
        r->sink_gate = gate;
        r->sink_gate_arg = arg;
}

void
xb_req_on_gone(struct xb_req *r, xb_gone_cb on_gone, void *owner)
{
        r->on_gone = on_gone;
        r->owner = owner;
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

/* ---- early replies held for the body ---- */

#define HOLD_WAIT_MS 300

static void
hold_decided(struct xb_req *r, int how)
{
        xb_timer_stop(&r->hold_timer);
        http_watch_stop(r);
        r->hold = how;
        if (r->suspended) {
                r->hold_replay = true;
                http_conn_resume(r);
                http_mark_run(r->http);
        }
}

static void
on_hold_data(struct xb_io *io, uint32_t events)
{
        hold_decided(io->data, (events & EPOLLIN) ? HOLD_DRAIN : HOLD_NOW);
}

static void
on_hold_timeout(struct xb_timer *t)
{
        hold_decided(t->data, HOLD_NOW);
}

void
http_hold(struct xb_req *r)
{
        const union MHD_ConnectionInfo *ci = MHD(get_connection_info)(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        char c;

        http_watch_stop(r);
        if (ci && recv(ci->connect_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0) {
                r->hold = HOLD_DRAIN;   /* the body is on its way */
                xb_req_resume(r);
                return;
        }
        if (!ci) {
                r->hold = HOLD_DRAIN;
                xb_req_resume(r);
                return;
        }
        /* Wait a moment, parked: libmicrohttpd can still send the reply at
         * once when resumed, before it reads any body. */
        r->hold = HOLD_WAIT;
        if (!r->suspended)
                http_conn_suspend(r);
        xb_io_start(r->http->loop, &r->watch, ci->connect_fd, EPOLLIN | EPOLLRDHUP, on_hold_data, r);
        xb_timer_start(r->http->loop, &r->hold_timer, HOLD_WAIT_MS, on_hold_timeout, r);
}

/* ---- the request life cycle ---- */

/* A connection's request with more query arguments than this is refused
 * (414): MHD parses them into the connection's small memory pool, and when
 * that runs out it cannot even send its error. */
#define MAX_QUERY_ARGS 100
/* Each connection's pool (MHD's default is 32 KiB): room to parse a long
 * query and still answer it. Pages not touched are not resident. The
 * request's own sizes stay bounded as they were with the default pool. */
#define CONN_POOL (256u << 10)
#define MAX_HEADER_BYTES (32u << 10)
#define MAX_URL_BYTES (32u << 10)

static enum MHD_Result
add_size(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
        size_t *n = cls;

        (void)kind;
        *n += strlen(key) + (value ? strlen(value) : 0) + 4;
        return MHD_YES;
}

static size_t
values_size(struct MHD_Connection *conn, enum MHD_ValueKind kind)
{
        size_t n = 0;

        MHD(get_connection_values)(conn, kind, add_size, &n);
        return n;
}
static char too_many_args;            /* con_cls of such a request, until on_request */

void
http_req_free(struct xb_req *r)
{
        if (r->susp_pprev) {
                *r->susp_pprev = r->susp_next;
                if (r->susp_next)
                        r->susp_next->susp_pprev = r->susp_pprev;
        }
        http_watch_stop(r);
        xb_timer_stop(&r->hold_timer);
        if (r->stream)
                r->stream->req = NULL;
        if (r->proxy)
                http_proxy_req_gone(r);
        http_form_free(r);
        if (r->held)
                MHD(destroy_response)(r->held);
        free(r->path);
        free(r->raw_uri);
        free(r->scratch);
        xb_buf_free(&r->body);
        xb_io_stop(&r->sink_io);
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
        if (r == (void *)&too_many_args)
                *con_cls = r = NULL;
        if (!r)
                return;
        *con_cls = NULL;
        if (!r->http) {
                /* Never reached on_request (a malformed request). */
                free(r->raw_uri);
                free(r);
                return;
        }
        r->complete = true;
        if (!r->listener)
                r->http->inflight--;
        http_access_end(r, (int)toe);
        cb = r->on_gone;
        r->on_gone = NULL;
        if (cb)
                cb(r, r->owner);
        http_watch_stop(r);
        xb_loop_defer(r->http->loop, &r->free_defer, (xb_defer_cb)http_req_free, r);
}

/* Will a body follow the headers that an early reply can wait for? Not
 * with Expect: 100-continue (the client waits for our answer and sends
 * nothing after an error), nor past DRAIN_MAX (then the reply goes at once
 * and the connection closes). */
static bool
body_follows(const struct xb_req *r)
{
        const char *clen = xb_req_header(r, "Content-Length"), *te = xb_req_header(r, "Transfer-Encoding");
        const char *expect = xb_req_header(r, "Expect");

        if (expect && strcasestr(expect, "100-continue"))
                return false;
        if (clen) {
                unsigned long long n = strtoull(clen, NULL, 10);

                return n > 0 && n <= DRAIN_MAX;
        }
        return te && strcasestr(te, "chunked");
}

static void
on_sink_room(struct xb_io *io, uint32_t events)
{
        struct xb_req *r = io->data;

        (void)events;
        xb_io_stop(&r->sink_io);
        if (r->suspended) {
                http_conn_resume(r);
                http_mark_run(r->http);
        }
}

/* Write to the sink what it takes now; returns how much is left, with
 * the request suspended until the sink has room (a pipe to a writer in
 * the sandbox: backpressure, not a blocked loop). */
static size_t
sink_write(struct xb_req *r, const char *p, size_t n)
{
        size_t done = 0;

        while (done < n) {
                ssize_t k = write(r->sink_fd, p + done, n - done);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN) {
                        r->sink_bytes += done;
                        if (xb_io_start(r->http->loop, &r->sink_io, r->sink_fd, EPOLLOUT, on_sink_room, r) < 0) {
                                r->sink_err = EIO;
                                return 0;
                        }
                        http_conn_suspend(r);
                        return n - done;
                }
                if (k < 0) {
                        r->sink_err = errno;
                        r->sink_bytes += done;
                        return 0;
                }
                done += (size_t)k;
        }
        r->sink_bytes += done;
        return 0;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method, const char *version,
           const char *upload, size_t *upload_size, void **con_cls)
{
        struct xb_http *h = cls;
        struct xb_req *r = *con_cls;
        bool cut = r == (void *)&too_many_args;

        (void)version;
        if (cut)
                r = NULL;
        if (!r || !r->http) {
                size_t cap = strlen(url) + MAX_PARAMS + 1;

                if (!r)
                        r = calloc(1, sizeof(*r));
                if (!r)
                        return MHD_NO;
                *con_cls = r;
                r->http = h;
                h->inflight++;
                r->conn = conn;
                r->sink_fd = -1;
                r->tenant = -1;
                r->watch.fd = -1;
                r->sink_io.fd = -1;
                r->body.max = h->o.body_max;
                http_access_begin(r);
                r->path = strdup(url);
                r->scratch = malloc(cap);
                snprintf(r->method, sizeof(r->method), "%s", method);
                if (!r->path || !r->scratch)
                        return MHD_NO;
                r->may_hold = body_follows(r);
                if (cut) {
                        xb_reply_error(r, 414, "too_many_parameters",
                                       "send at most 100 query parameters; put data in a JSON body",
                                       "the URL has more than %d query parameters", MAX_QUERY_ARGS);
                        return MHD_YES;
                }
                if (strlen(url) + values_size(conn, MHD_GET_ARGUMENT_KIND) > MAX_URL_BYTES) {
                        xb_reply_error(r, 414, "uri_too_long", "send a shorter URL; put data in a JSON body",
                                       "the URL is over %u bytes", MAX_URL_BYTES);
                        return MHD_YES;
                }
                if (values_size(conn, MHD_HEADER_KIND) > MAX_HEADER_BYTES) {
                        xb_reply_error(r, 431, "headers_too_large", "send fewer or shorter headers",
                                       "the request's headers are over %u bytes", MAX_HEADER_BYTES);
                        return MHD_YES;
                }
                if (!http_route_admit(r, method))
                        return MHD_YES;
                if (r->route->flags & (XB_ROUTE_SINK | XB_ROUTE_PROXY)) {
                        r->phase = XB_PHASE_BEGIN;
                        r->route->handler(r);
                        /* A handler that suspends here is called again, with the same
                         * empty upload, once resumed: that call is not the body's end. */
                        r->begin_replay = r->suspended;
                }
                return MHD_YES;
        }
        if (r->held && r->hold_replay && !*upload_size) {
                /* the first call again, after the wait: reply now, or read on */
                r->hold_replay = false;
                r->begin_replay = false;
                if (r->hold == HOLD_NOW)
                        http_queue_held(r);
                return MHD_YES;
        }
        if (r->begin_replay && !*upload_size) {
                r->begin_replay = false;
                return MHD_YES;
        }
        if (r->held) {
                /* An early reply waits for the body, read and dropped: a client
                 * still sending would get a reset, not the error. */
                if (*upload_size) {
                        r->drained += *upload_size;
                        *upload_size = 0;
                        return r->drained > DRAIN_MAX ? MHD_NO : MHD_YES;
                }
                http_queue_held(r);
                return MHD_YES;
        }
        if (!*upload_size)
                r->may_hold = false;   /* the body is all in: replies go at once */
        if (r->proxy && !r->replied) {
                if (!*upload_size)
                        r->dispatched = true;
                http_proxy_body(r, upload, upload_size);
                return MHD_YES;
        }
        if (r->replied) {
                *upload_size = 0;   /* an early reply: drop the rest of the body */
                return MHD_YES;
        }
        if (r->form && *upload_size) {
                http_form_body(r, upload, upload_size);
                return MHD_YES;
        }
        if (r->form && !*upload_size && !http_form_idle(r))
                return MHD_YES;   /* the last part is still going in */
        if (*upload_size) {
                if ((r->route->flags & XB_ROUTE_SINK) && !r->sink_buffered) {
                        if (r->sink_fd < 0) {
                                xb_reply_error(r, 500, "internal", "retry", "no place to write the upload");
                        } else if (r->sink_bytes + *upload_size > http_body_max(r)) {
                                r->sink_err = EFBIG;
                        } else if (!r->sink_err && r->sink_gate &&
                                   (r->sink_err = r->sink_gate(r->sink_gate_arg, *upload_size))) {
                                /* the gate refused: the rest is dropped */
                        } else if (!r->sink_err) {
                                size_t left = sink_write(r, upload, *upload_size);

                                if (left) {
                                        /* The sink is full: the rest waits, and so does the client. */
                                        *upload_size = left;
                                        return MHD_YES;
                                }
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

/* ---- start and stop ---- */

/* MHD_OPTION_URI_LOG_CALLBACK: the raw URI, before MHD splits its query.
 * The request target as sent, before libmicrohttpd decodes it: a proxied
 * request goes on with it unchanged. The request starts here.
 * Too many arguments: cut them off (the buffer is MHD's read buffer,
 * writable). libmicrohttpd 0.9.75 finds the '?' before this call and
 * parses from the byte after it, one header record each from the
 * connection's pool: so that byte ends the string too. Past ~4000
 * arguments the records filled the pool, and the connection was closed
 * with no reply, or held. */
static void *
on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
        char *q = strchr(uri, '?');
        size_t n = 1;
        struct xb_req *r;

        (void)cls;
        (void)conn;
        for (const char *p = q; p && *p && n <= MAX_QUERY_ARGS; p++)
                n += *p == '&';
        if (n > MAX_QUERY_ARGS) {
                q[0] = '\0';
                q[1] = '\0';   /* q[1] was an argument's first byte: n > 1 */
                return &too_many_args;
        }
        r = calloc(1, sizeof(*r));
        if (r)
                r->raw_uri = strdup(uri);
        return r;
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

int
xb_http_start(struct xb_loop *l, const struct xb_http_opts *o, const struct xb_route *routes, size_t nroutes,
              struct xb_http **ret, struct xb_err *err)
{
        /* The reply counters follow the struct: one free(h) frees both. */
        struct xb_http *h = calloc(1, sizeof(*h) + (nroutes + 1) * sizeof(*h->counts));
        const union MHD_DaemonInfo *di;
        int r;

        if (!h)
                return xb_err_set(err, ENOMEM, "http");
        h->loop = l;
        h->o = *o;
        h->routes = routes;
        h->nroutes = nroutes;
        h->listen_fd = -1;
        h->reserve_fd = -1;
        h->counts = (void *)(h + 1);
        if (!o->listen) {
                free(h);
                return xb_err_msg(err, EINVAL, "the HTTP front needs an address to listen on");
        }
        if ((r = xb_mhd_load(err)) < 0) {
                free(h);
                return r;
        }
        h->listen_fd = http_listen_on(h, o->listen, err);
        if (h->listen_fd < 0) {
                r = h->listen_fd;
                free(h);
                return r;
        }
        /* The loop accepts (conn.c), so that running out of fds cannot wedge MHD. */
        h->mhd = MHD(start_daemon)(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE | MHD_USE_ERROR_LOG |
                                           MHD_USE_TURBO | MHD_USE_NO_LISTEN_SOCKET,
                                   0, NULL, NULL, on_request, h,
                                   /* First: MHD warns about options set before it (0.9.75). */
                                   MHD_OPTION_EXTERNAL_LOGGER, on_log, h,
                                   MHD_OPTION_CONNECTION_LIMIT, o->conn_limit ? o->conn_limit : 1024,
                                   MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_POOL,
                                   MHD_OPTION_CONNECTION_TIMEOUT, o->conn_timeout_s ? o->conn_timeout_s : 60,
                                   MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                                   MHD_OPTION_URI_LOG_CALLBACK, on_uri, h,
                                   MHD_OPTION_UNESCAPE_CALLBACK, http_unescape, h,
                                   MHD_OPTION_URI_LOG_CALLBACK, on_uri, h,
                                   MHD_OPTION_END);
        if (!h->mhd) {
                close(h->listen_fd);
                free(h);
                return xb_err_msg(err, EIO, "libmicrohttpd would not start on %s", o->listen);
        }
        di = MHD(get_daemon_info)(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
        if (!di || xb_io_start(l, &h->mhd_io, di->epoll_fd, EPOLLIN, on_mhd_io, h) < 0 || http_accept_start(h) < 0) {
                xb_io_stop(&h->mhd_io);
                http_accept_stop(h);
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
                http_proxy_close_tunnels(h);
                /* MHD aborts if stopped with a suspended connection: resume
                 * each one, cancelling the work that waits on it. */
                while (h->suspended) {
                        struct xb_req *r = h->suspended;
                        xb_gone_cb cb = r->on_gone;

                        r->on_gone = NULL;
                        http_watch_stop(r);
                        http_conn_resume(r);
                        if (cb)
                                cb(r, r->owner);
                }
                http_accept_stop(h);
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

void
xb_req_set_listener(struct xb_req *r)
{
        if (!r->listener && !r->complete) {
                r->listener = true;
                r->http->inflight--;
        }
}

unsigned
xb_http_inflight(const struct xb_http *h)
{
        return h ? h->inflight : 0;
}

const char *
xb_http_url(const struct xb_http *h)
{
        return h->url;
}
