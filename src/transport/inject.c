/* Requests without a connection (xb_http_inject): MCP's tool calls and the
 * stdio transport run REST handlers through the router. Here is each
 * operation's injected side: query and headers from copies, replies and
 * stream events handed to the injector's callbacks, the sink fed from the
 * buffered body. Everything with a connection lives in the other files. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/fd.h"
#include "transport/http_int.h"

static void
free_pairs(char **v)
{
        for (char **p = v; p && *p; p++)
                free(*p);
        free(v);
}

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

const char *
http_virt_query(const struct xb_req *r, const char *name)
{
        for (char **q = r->vquery; q && q[0]; q += 2)
                if (strcmp(q[0], name) == 0)
                        return q[1];
        return NULL;
}

const char *
http_virt_header(const struct xb_req *r, const char *name)
{
        for (char **q = r->vheaders; q && q[0]; q += 2)
                if (strcasecmp(q[0], name) == 0)
                        return q[1];
        return NULL;
}

/* The one reply of an injected request; the request is freed afterwards. */
void
http_virt_reply(struct xb_req *r, unsigned status, const char *ctype, const void *p, size_t n)
{
        if (r->replied)
                return;
        r->replied = true;
        r->on_gone = NULL;
        r->suspended = false;
        r->vops->reply(r->vctx, status, ctype, p, n);
        xb_loop_defer(r->http->loop, &r->free_defer, (xb_defer_cb)http_req_free, r);
}

/* No socket to send from: read the range (bounded) and reply with it. */
void
http_virt_reply_fd(struct xb_req *r, unsigned status, const char *ctype, int fd, uint64_t off, uint64_t len)
{
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
                http_virt_reply(r, status, ctype, buf, got);
        free(buf);
}

/* Events go straight to the injector; the stream ends the request. */
struct xb_stream *
http_virt_stream(struct xb_req *r, xb_gone_cb on_gone, void *owner)
{
        struct xb_stream *s = calloc(1, sizeof(*s));

        if (!s)
                return NULL;
        s->req = r;
        r->stream = s;
        r->on_gone = on_gone;
        r->owner = owner;
        r->suspended = true;
        return s;
}

void
http_virt_event(struct xb_stream *s, const char *name, json_t *data)
{
        if (!s->req->replied && s->req->vops->event)
                s->req->vops->event(s->req->vctx, name, data);
        json_decref(data);
}

void
http_virt_stream_end(struct xb_stream *s)
{
        struct xb_req *r = s->req;

        r->stream = NULL;
        xb_buf_free(&s->pending);
        free(s);
        http_virt_reply(r, 200, "text/event-stream", "", 0);
}

void
http_virt_release(struct xb_req *r)
{
        if (r->stream) {
                xb_buf_free(&r->stream->pending);
                free(r->stream);
                r->stream = NULL;
        }
        free_pairs(r->vquery);
        free_pairs(r->vheaders);
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

void
http_virt_resume(struct xb_req *r)
{
        r->suspended = false;
        /* A sink route's body goes in once the handler has set the sink. */
        if (!r->replied && r->phase == XB_PHASE_BEGIN)
                xb_loop_defer(r->http->loop, &r->continue_defer, virt_continue, r);
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
        http_route_find(r, r->method);
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
        xb_loop_defer(r->http->loop, &r->free_defer, (xb_defer_cb)http_req_free, r);
}
