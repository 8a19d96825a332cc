/* Connect-RPC replies for the envd fronts: unary JSON and its errors,
 * server-streamed envelopes with keepalive pings and the client's
 * deadline, the request's user and process selector. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "e2b/connect.h"
#include "e2b/e2b_int.h"

#define MSG_MAX (16u << 20)

void
e2b_rpc_reply(struct xb_req *r, json_t *msg)
{
        xb_reply_json(r, 200, msg ? msg : json_object());
}

/* A streaming call (its body is envelopes) hears errors as a stream's
 * end: a Connect client reads a streaming reply's status as no more than
 * a transport error. */
static bool
is_stream(struct xb_req *r)
{
        const char *ct = xb_req_header(r, "Content-Type");

        return ct && !strncasecmp(ct, "application/connect+", 20);
}

void
e2b_rpc_error(struct xb_req *r, const char *code, const char *fmt, ...)
{
        char msg[600];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (is_stream(r)) {
                struct e2b_stream es = { 0 };

                if (e2b_stream_open(&es, r, NULL))
                        e2b_stream_end(&es, code, msg);
                return;
        }
        xb_reply_json(r, xb_connect_http_status(code), json_pack("{s:s,s:s}", "code", code, "message", msg));
}

void
e2b_rpc_fail(struct xb_req *r, const struct xb_err *err)
{
        e2b_rpc_error(r, xb_connect_code(err->ecode, err->code), "%s", err->msg[0] ? err->msg : "failed");
}

json_t *
e2b_rpc_body(struct xb_req *r)
{
        size_t n = 0;
        const char *b = xb_req_body(r, &n);
        json_error_t je;
        json_t *v;

        if (!n)
                return json_object();
        v = json_loadb(b, n, JSON_REJECT_DUPLICATES, &je);
        if (!json_is_object(v)) {
                json_decref(v);
                e2b_rpc_error(r, "invalid_argument", "the request is not a JSON object: %s", je.text);
                return NULL;
        }
        return v;
}

json_t *
e2b_rpc_stream_body(struct xb_req *r)
{
        size_t n = 0, plen = 0;
        const char *b = xb_req_body(r, &n);
        const uint8_t *payload;
        uint8_t flags;
        ssize_t k = xb_connect_parse(b, n, MSG_MAX, &flags, &payload, &plen);
        json_error_t je;
        json_t *v;

        if (k < 0 || (flags & XB_CONNECT_END)) {
                e2b_rpc_error(r, "invalid_argument", "the request is not one Connect envelope (%s)",
                              k == -EPROTO ? "compressed or unknown flags" : k == -EMSGSIZE ? "too large" : "truncated");
                return NULL;
        }
        v = json_loadb((const char *)payload, plen, JSON_REJECT_DUPLICATES, &je);
        if (!json_is_object(v)) {
                json_decref(v);
                e2b_rpc_error(r, "invalid_argument", "the message is not a JSON object: %s", je.text);
                return NULL;
        }
        return v;
}

const char *
e2b_rpc_user(struct xb_req *r)
{
        const char *auth = xb_req_header(r, "Authorization");
        char dec[80];
        ssize_t n;

        if (!auth || strncasecmp(auth, "Basic ", 6))
                return "user";
        n = xb_base64_decode(auth + 6, strlen(auth + 6), dec, sizeof(dec) - 1, 0);
        if (n < 0) {
                e2b_rpc_error(r, "invalid_argument", "the Authorization header is not base64 of `user:`");
                return NULL;
        }
        dec[n] = '\0';
        dec[strcspn(dec, ":")] = '\0';
        if (!strcmp(dec, "user") || !*dec)
                return "user";
        if (!strcmp(dec, "root"))
                return "root";
        e2b_rpc_error(r, "unauthenticated", "no user `%.32s` in this sandbox: use \"user\" or \"root\"", dec);
        return NULL;
}

int
e2b_rpc_pid(struct xb_req *r, struct e2b_sbx *s, json_t *msg, const char *field)
{
        json_t *sel = json_object_get(msg, field), *pid = json_object_get(sel, "pid");
        const char *tag = json_string_value(json_object_get(sel, "tag"));
        struct e2b_tracked *t;

        if (json_is_integer(pid) && json_integer_value(pid) > 0 && json_integer_value(pid) < (1 << 22))
                return (int)json_integer_value(pid);
        if (tag) {
                t = e2b_track_find(s, 0, tag);
                if (t)
                        return t->pid;
                e2b_rpc_error(r, "not_found", "no process with tag `%.64s`", tag);
                return -1;
        }
        e2b_rpc_error(r, "invalid_argument", "`%s` must select a process: {\"pid\": N} or {\"tag\": \"...\"}", field);
        return -1;
}

/* ---- streams ---- */

uint64_t
e2b_timeout_ms(struct xb_req *r)
{
        const char *v = xb_req_header(r, "Connect-Timeout-Ms");
        char *end;
        unsigned long long n;

        if (!v || *v < '0' || *v > '9')
                return 0;
        n = strtoull(v, &end, 10);
        return *end || n > 86400000ull * 7 ? 0 : n;
}

static void
stream_gone(struct xb_req *r, void *owner)
{
        struct e2b_stream *s = owner;

        (void)r;
        s->st = NULL;
        s->req = NULL;
        e2b_stream_stop(s);
        if (s->gone)
                s->gone(s);
}

static bool
send_raw(struct e2b_stream *s, uint8_t flags, json_t *msg)
{
        _cleanup_free_ char *js = json_dumps(msg, JSON_COMPACT);
        struct xb_buf b = { .max = MSG_MAX + 16 };
        int rc;

        json_decref(msg);
        if (!s->st || !js || xb_connect_frame(&b, flags, js, strlen(js)) < 0) {
                xb_buf_free(&b);
                return false;
        }
        rc = xb_stream_write(s->st, b.data, b.len);
        xb_buf_free(&b);
        return rc >= 0;
}

static void
on_ping(struct xb_timer *t)
{
        struct e2b_stream *s = t->data;
        json_error_t je;

        if (s->st && s->ping)
                send_raw(s, 0, json_loads(s->ping, 0, &je));
        if (s->st)
                xb_timer_start(t->loop, t, s->keepalive_ms, on_ping, s);
}

static void
on_deadline(struct xb_timer *t)
{
        struct e2b_stream *s = t->data;

        if (s->st && s->expired)
                s->expired(s);
}

bool
e2b_stream_open(struct e2b_stream *s, struct xb_req *r, struct xb_loop *l)
{
        const char *ka = xb_req_header(r, "Keepalive-Ping-Interval");
        uint64_t deadline = e2b_timeout_ms(r);
        unsigned long sec = ka ? strtoul(ka, NULL, 10) : 0;

        s->req = r;
        s->st = xb_reply_stream(r, 200, "application/connect+json", stream_gone, s);
        if (!s->st)
                return false;
        s->keepalive_ms = sec ? (sec > 3600 ? 3600 : sec) * 1000 : 0;
        if (s->keepalive_ms && l)
                xb_timer_start(l, &s->keepalive, s->keepalive_ms, on_ping, s);
        if (deadline && l)
                xb_timer_start(l, &s->deadline, deadline, on_deadline, s);
        return true;
}

bool
e2b_stream_send(struct e2b_stream *s, json_t *msg)
{
        return send_raw(s, 0, msg);
}

void
e2b_stream_end(struct e2b_stream *s, const char *code, const char *message)
{
        json_t *end = code ? json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", message ? message : code)
                           : json_object();

        send_raw(s, XB_CONNECT_END, end);
        if (s->st)
                xb_stream_end(s->st);
        s->st = NULL;
        e2b_stream_stop(s);
}

void
e2b_stream_stop(struct e2b_stream *s)
{
        xb_timer_stop(&s->keepalive);
        xb_timer_stop(&s->deadline);
}

/* ---- requests answered after one or more operations ---- */

static void async_gone(struct xb_req *r, void *owner);

static void
async_maybe_free(struct e2b_async *a)
{
        if (a->dead && !a->depth) {
                json_decref(a->aux);
                free(a);
        }
}

static void
async_done(struct e2b_sink *s, json_t *res, const struct xb_err *err)
{
        struct e2b_async *a = (struct e2b_async *)s;

        a->depth++;
        a->fn(a->req, a, res, err);
        a->depth--;
        async_maybe_free(a);
}

static void
async_event(struct e2b_sink *s, const char *name, json_t *data)
{
        struct e2b_async *a = (struct e2b_async *)s;

        if (a->on_event && a->req)
                a->on_event(a, name, data);
}

struct e2b_async *
e2b_async_new(struct xb_req *r, struct xb_e2b *e, int tenant, const char *id, e2b_async_fn fn)
{
        struct e2b_async *a = calloc(1, sizeof(*a));

        if (!a) {
                xb_reply_json(r, 503, json_pack("{s:s,s:s}", "code", "resource_exhausted", "message", "out of memory"));
                return NULL;
        }
        a->sink.done = async_done;
        a->sink.event = async_event;
        a->req = r;
        a->e = e;
        a->tenant = tenant;
        snprintf(a->id, sizeof(a->id), "%s", id);
        a->fn = fn;
        return a;
}

void
e2b_async_run(struct e2b_async *a, const char *op, json_t *args, unsigned flags)
{
        struct xb_err err = { 0 };

        a->depth++;
        if (!e2b_run(a->e, a->tenant, op, args, flags, &a->sink)) {
                xb_err_code(&err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
                a->fn(a->req, a, NULL, &err);
        } else if (a->sink.call && !a->dead && !a->suspended && a->req) {
                a->suspended = true;
                xb_req_suspend(a->req, async_gone, a);
        }
        a->depth--;
        async_maybe_free(a);
}

void
e2b_async_free(struct e2b_async *a)
{
        a->dead = true;
        async_maybe_free(a);
}

static void
async_gone(struct xb_req *r, void *owner)
{
        struct e2b_async *a = owner;
        struct xb_call *c = a->sink.call;

        (void)r;
        a->req = NULL;
        a->sink.call = NULL;
        if (a->on_gone)
                a->on_gone(a);
        xb_call_cancel(c);
        e2b_async_free(a);
}
