/* Streamed replies (struct xb_stream): text/event-stream and the like.
 * Writes queue in a bounded backlog that libmicrohttpd drains through
 * stream_reader; with nothing to send, the connection is parked
 * (suspended) until the next write. A writer that can wait asks to be
 * told when the backlog drains (xb_stream_on_drain) and stops producing
 * meanwhile; a client that falls too far behind a writer that cannot is
 * dropped rather than buffered without end. A large event's JSON is
 * generated as it is sent (a part queued behind pending), not serialised
 * whole with json_dumps. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "transport/http_int.h"
#include "transport/json_stream.h"

#define STREAM_BACKLOG_MAX (8u << 20)
/* The JSON of large events waiting behind others: past this, a second
 * one finds a client too far behind (the first is always taken). */
#define STREAM_DEFER_MAX ((size_t)64 << 20)

/* Where the next bytes go: after the last queued part, or pending. */
static struct xb_buf *
tail_buf(struct xb_stream *s)
{
        return s->last ? &s->last->after : &s->pending;
}

static void
part_free(struct xb_stream_part *p)
{
        xb_jgen_free(p->gen);
        xb_buf_free(&p->after);
        free(p);
}

/* Fill buf (max bytes) from pending, then from the queued parts in order:
 * a part's JSON as it is generated, then what was written after it. */
static size_t
stream_fill(struct xb_stream *s, char *buf, size_t max)
{
        size_t o = 0;

        while (o < max && !s->failed) {
                size_t n = s->pending.len - s->off;
                struct xb_stream_part *p = s->parts;

                if (n) {
                        if (n > max - o)
                                n = max - o;
                        memcpy(buf + o, s->pending.data + s->off, n);
                        s->off += n;
                        o += n;
                        if (s->off == s->pending.len) {
                                xb_buf_reset(&s->pending);
                                s->off = 0;
                        }
                        continue;
                }
                if (!p)
                        break;
                if (p->gen) {
                        ssize_t g;

                        if (max - o < 6)
                                break;   /* the generator's least: the next call */
                        g = xb_jgen_read(p->gen, buf + o, max - o);
                        if (g < 0) {
                                s->failed = true;
                                break;
                        }
                        if (g > 0) {
                                size_t d = (size_t)g < p->left ? (size_t)g : p->left;

                                p->left -= d;
                                s->deferred -= d;
                                o += (size_t)g;
                                continue;
                        }
                        s->deferred -= p->left;
                        p->left = 0;
                        xb_jgen_free(p->gen);
                        p->gen = NULL;
                }
                /* The part is sent: what followed it becomes pending. */
                xb_buf_free(&s->pending);
                s->pending = p->after;
                p->after = (struct xb_buf){ 0 };
                s->pending.max = STREAM_BACKLOG_MAX;
                s->queued -= s->pending.len;
                s->off = 0;
                s->parts = p->next;
                if (s->last == p)
                        s->last = NULL;
                free(p);
        }
        return o;
}

static ssize_t
stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
        struct xb_stream *s = cls;
        size_t n;

        (void)pos;
        if (!s->failed) {
                n = stream_fill(s, buf, max);
                if (n && s->pending.len && s->off >= s->pending.len - s->off) {
                        /* Sent more than is left: move the rest to the front, so
                         * that a backlog kept short by backpressure never reaches
                         * the buffer's cap by its sent part alone. */
                        memmove(s->pending.data, s->pending.data + s->off, s->pending.len - s->off + 1);
                        s->pending.len -= s->off;
                        s->off = 0;
                }
        } else {
                n = 0;
        }
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
        if (n) {
                if (s->req)
                        s->req->bytes += n;
                if (s->drain_fn && xb_stream_backlog(s) <= s->drain_low) {
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
        while (s->parts) {
                struct xb_stream_part *p = s->parts;

                s->parts = p->next;
                part_free(p);
        }
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

/* The bytes just added to b (which had len0) count; past the backlog's
 * cap the client is given up rather than buffered for. */
static int
wrote(struct xb_stream *s, struct xb_buf *b, size_t len0, int r)
{
        if (r >= 0 && b != &s->pending) {
                s->queued += b->len - len0;
                if (s->queued + s->pending.len - s->off > STREAM_BACKLOG_MAX)
                        r = -ENOBUFS;
        }
        if (r < 0) {
                /* The client is not reading: give up on it rather than grow. */
                s->failed = true;
                r = -ENOBUFS;
        }
        stream_wake(s);
        return r;
}

int
xb_stream_write(struct xb_stream *s, const void *p, size_t n)
{
        struct xb_buf *b;
        size_t len0;

        if (!s || s->failed || s->ended)
                return -EPIPE;
        b = tail_buf(s);
        len0 = b->len;
        return wrote(s, b, len0, xb_buf_append(b, p, n));
}

int
xb_stream_printf(struct xb_stream *s, const char *fmt, ...)
{
        struct xb_buf *b;
        size_t len0;
        va_list ap;
        int r;

        if (!s || s->failed || s->ended)
                return -EPIPE;
        b = tail_buf(s);
        len0 = b->len;
        va_start(ap, fmt);
        r = xb_buf_vprintf(b, fmt, ap);
        va_end(ap);
        return wrote(s, b, len0, r);
}

/* A large value: its JSON is generated as it is sent (json_stream.c, the
 * bytes json_dumps would make), so it is never serialised whole, in memory
 * or in one long turn of the loop. */
static int
json_streamed(struct xb_stream *s, json_t *data, size_t flags, size_t est)
{
        struct xb_stream_part *p;

        if (s->deferred && s->deferred + est > STREAM_DEFER_MAX) {
                json_decref(data);
                s->failed = true;
                stream_wake(s);
                return -ENOBUFS;
        }
        if (!(p = calloc(1, sizeof(*p))) || !(p->gen = xb_jgen_new_flags(data, flags))) {
                if (!p)
                        json_decref(data);
                free(p);
                s->failed = true;
                stream_wake(s);
                return -ENOMEM;
        }
        p->left = est;
        p->after.max = STREAM_BACKLOG_MAX;
        s->deferred += est;
        if (s->last)
                s->last->next = p;
        else
                s->parts = p;
        s->last = p;
        stream_wake(s);
        return 0;
}

int
xb_stream_json(struct xb_stream *s, json_t *data, size_t flags)
{
        size_t est;
        char *j;
        int r;

        if (!s || s->failed || s->ended) {
                json_decref(data);
                return -EPIPE;
        }
        est = xb_json_string_bytes(data, STREAM_DEFER_MAX + 1);
        if (est >= XB_JSON_STREAM_MIN)
                return json_streamed(s, data, flags, est);
        j = json_dumps(data, flags | JSON_COMPACT);
        json_decref(data);
        if (!j)
                return -ENOMEM;
        r = xb_stream_write(s, j, strlen(j));
        free(j);
        return r;
}

int
xb_stream_event(struct xb_stream *s, const char *name, json_t *data)
{
        int r;

        if ((r = xb_stream_printf(s, "event: %s\ndata: ", name)) < 0) {
                json_decref(data);
                return r;
        }
        if ((r = xb_stream_json(s, data, 0)) < 0)
                return r;
        return xb_stream_write(s, "\n\n", 2);
}

size_t
xb_stream_backlog(const struct xb_stream *s)
{
        return s ? s->pending.len - s->off + s->queued + s->deferred : 0;
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
