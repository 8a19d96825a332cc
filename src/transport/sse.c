/* Streamed replies (struct xb_stream): text/event-stream and the like.
 * Writes queue in a bounded backlog that libmicrohttpd drains through
 * stream_reader; with nothing to send, the connection is parked
 * (suspended) until the next write. A writer that can wait asks to be
 * told when the backlog drains (xb_stream_on_drain) and stops producing
 * meanwhile; a client that falls too far behind a writer that cannot is
 * dropped rather than buffered without end. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "transport/http_int.h"

#define STREAM_BACKLOG_MAX (8u << 20)

static ssize_t
stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
        struct xb_stream *s = cls;
        size_t n;

        (void)pos;
        if (s->failed) {
                /* As in fd_reader (reply.c): an error return alone leaves the client waiting. */
                const union MHD_ConnectionInfo *ci =
                        s->req ? MHD(get_connection_info)(s->req->conn, MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;

                if (ci)
                        shutdown(ci->connect_fd, SHUT_RDWR);
                if (s->req)
                        http_mark_run(s->req->http);
                return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        n = s->pending.len - s->off;
        if (n) {
                if (n > max)
                        n = max;
                memcpy(buf, s->pending.data + s->off, n);
                s->off += n;
                if (s->req)
                        s->req->bytes += n;
                if (s->off == s->pending.len) {
                        xb_buf_reset(&s->pending);
                        s->off = 0;
                } else if (s->off >= s->pending.len - s->off) {
                        /* Sent more than is left: move the rest to the front, so
                         * that a backlog kept short by backpressure never reaches
                         * the buffer's cap by its sent part alone. */
                        memmove(s->pending.data, s->pending.data + s->off, s->pending.len - s->off + 1);
                        s->pending.len -= s->off;
                        s->off = 0;
                }
                if (s->drain_fn && s->pending.len - s->off <= s->drain_low) {
                        void (*fn)(void *) = s->drain_fn;

                        s->drain_fn = NULL;
                        fn(s->drain_arg);
                }
                return (ssize_t)n;
        }
        if (s->ended)
                return MHD_CONTENT_READER_END_OF_STREAM;
        /* Nothing yet: park the connection until a write resumes it. */
        s->waiting = true;
        if (!s->req->suspended)
                http_conn_suspend(s->req);
        return 0;
}

static void
stream_free(void *cls)
{
        struct xb_stream *s = cls;

        /* The writer is told, so it does not wait for a drain that never comes. */
        if (s->drain_fn)
                s->drain_fn(s->drain_arg);

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
                        http_conn_resume(s->req);
                        http_mark_run(s->req->http);
                }
        }
}

struct xb_stream *
xb_reply_stream(struct xb_req *r, unsigned status, const char *ctype, xb_gone_cb on_gone, void *owner)
{
        struct xb_stream *s;
        struct MHD_Response *resp;

        s = calloc(1, sizeof(*s));
        if (!s)
                return NULL;
        s->req = r;
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
        http_queue(r, status, resp);
        /* Streams end by the client leaving too: watch for it. */
        r->on_gone = on_gone;
        r->owner = owner;
        http_watch_start(r);
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

        j = json_dumps(data, JSON_COMPACT);
        json_decref(data);
        if (!j)
                return -ENOMEM;
        r = xb_stream_printf(s, "event: %s\ndata: %s\n\n", name, j);
        free(j);
        return r;
}

size_t
xb_stream_backlog(const struct xb_stream *s)
{
        return s ? s->pending.len - s->off : 0;
}

void
xb_stream_on_drain(struct xb_stream *s, size_t low, void (*fn)(void *arg), void *arg)
{
        if (!s)
                return;
        s->drain_low = low;
        s->drain_fn = fn;
        s->drain_arg = arg;
}

void
xb_stream_end(struct xb_stream *s)
{
        if (!s)
                return;
        s->ended = true;
        if (s->req) {
                s->req->on_gone = NULL;
                http_watch_stop(s->req);
        }
        stream_wake(s);
}
