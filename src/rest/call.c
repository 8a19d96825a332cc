/* REST calls: see call.h. */
#define _GNU_SOURCE
#include "rest/call.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "rest/rest.h"
#include "ops/jsonv.h"
#include "ops/ops.h"
#include "rest/status.h"

struct rest_call {
        struct xb_req *req;
        struct xb_call *call;       /* NULL once it ended */
        struct xb_stream *stream;
        unsigned status;
        bool inside;                /* still in xb_rest_run: the handler frees */
        const struct xb_rest_decor *decor;
        struct xb_err *then_fail;   /* a check_op's: reply this once it succeeds */
};

static void
rc_free(struct rest_call *rc)
{
        free(rc->then_fail);
        free(rc);
}

/* Backpressure on a stream: past HOLD_HIGH unsent bytes the call is held
 * (its command blocks on its pipe), and released at HOLD_LOW. */
#define HOLD_HIGH (1u << 20)
#define HOLD_LOW (256u << 10)

static void
rc_release(void *arg)
{
        struct rest_call *rc = arg;

        if (rc->call)
                xb_call_hold(rc->call, false);
}

static void
rc_end(struct rest_call *rc)
{
        rc->call = NULL;
        if (!rc->inside)
                rc_free(rc);
}

static void
on_gone(struct xb_req *r, void *owner)
{
        struct rest_call *rc = owner;
        struct xb_call *c = rc->call;

        (void)r;
        xb_stream_on_drain(rc->stream, 0, NULL, NULL);
        rc->call = NULL;
        rc->stream = NULL;
        rc->req = NULL;
        xb_call_cancel(c);
        if (!rc->inside)
                rc_free(rc);
}

static void
on_event(void *ctx, const char *name, json_t *data)
{
        struct rest_call *rc = ctx;

        if (!rc->stream && rc->req)
                rc->stream = xb_reply_stream(rc->req, 200, "text/event-stream", on_gone, rc);
        if (!name || !rc->stream)
                return;   /* NULL: xb_call_begin, the stream is open */
        data = json_incref(data);
        if (rc->decor && rc->decor->shape)
                data = rc->decor->shape(rc->req, name, data);
        xb_stream_event(rc->stream, name, data);
        if (rc->call && !xb_call_held(rc->call) && xb_stream_backlog(rc->stream) > HOLD_HIGH) {
                xb_call_hold(rc->call, true);
                xb_stream_on_drain(rc->stream, HOLD_LOW, rc_release, rc);
        }
}

static void
on_done(void *ctx, json_t *result)
{
        struct rest_call *rc = ctx;

        xb_stream_on_drain(rc->stream, 0, NULL, NULL);   /* before the stream ends */
        if (rc->then_fail) {
                json_decref(result);
                if (rc->req)
                        xb_rest_fail(rc->req, rc->then_fail);
                rc_end(rc);
                return;
        }
        if (rc->decor && rc->decor->shape && (rc->stream || rc->req))
                result = rc->decor->shape(rc->req, NULL, result);
        if (rc->stream) {
                xb_stream_event(rc->stream, "result", result);
                xb_stream_end(rc->stream);
        } else if (rc->req && rc->status == 204) {
                json_decref(result);
                xb_reply_empty(rc->req, 204);
        } else if (rc->req)
                xb_reply_json(rc->req, rc->status, result);
        else
                json_decref(result);
        rc_end(rc);
}

static void
on_fail(void *ctx, const struct xb_err *e)
{
        struct rest_call *rc = ctx;
        struct xb_err copy = *e, *err = &copy;

        xb_stream_on_drain(rc->stream, 0, NULL, NULL);
        if (rc->decor && rc->decor->error)
                rc->decor->error(err, rc->stream != NULL);
        if (rc->stream) {
                char buf[XB_REST_MSG_MAX];

                xb_stream_event(rc->stream, "error", json_pack("{s:s,s:s}", "code", xb_ecode_name(err->ecode),
                                                               "message", xb_rest_message(err, buf, sizeof(buf))));
                xb_stream_end(rc->stream);
        } else if (rc->req)
                xb_rest_fail(rc->req, err);
        rc_end(rc);
}

static const struct xb_sink_ops rest_sink = { on_event, on_done, on_fail };

/* An operation, or a REST fast path's own start (fn). */
struct rest_start {
        const struct xb_op *op;
        xb_rest_start_fn fn;
        void *arg;
};

static void
start_run(const struct rest_start *st, struct xb_req *req, json_t *args, unsigned status, bool sse,
          const struct xb_rest_decor *decor, const struct xb_err *then_fail);

static void
run(struct xb_req *req, const char *name, json_t *args, unsigned status, bool sse, const struct xb_rest_decor *decor,
    const struct xb_err *then_fail)
{
        struct rest_start st = { .op = xb_op_find(name) };

        if (!st.op) {
                xb_error("rest: no operation %s", name);
                xb_reply_error(req, 500, "internal", "report this to the operator", "no operation `%s`", name);
                return;
        }
        start_run(&st, req, args, status, sse, decor, then_fail);
}

void
xb_rest_run_fn(struct xb_req *req, xb_rest_start_fn fn, void *arg, json_t *args, unsigned status, bool sse)
{
        struct rest_start st = { .fn = fn, .arg = arg };

        start_run(&st, req, args, status, sse, NULL, NULL);
}

static void
start_run(const struct rest_start *st, struct xb_req *req, json_t *args, unsigned status, bool sse,
          const struct xb_rest_decor *decor, const struct xb_err *then_fail)
{
        struct rest_call *rc;
        struct xb_err *then = NULL;

        rc = calloc(1, sizeof(*rc));
        if (rc)
                rc->call = xb_call_new(&rest_sink, rc, sse ? XB_CALL_EVENTS | XB_CALL_BEGIN : 0);
        if (then_fail && (then = malloc(sizeof(*then))))
                *then = *then_fail;
        if (!rc || !rc->call || (then_fail && !then)) {
                if (rc && rc->call)
                        xb_call_cancel(rc->call);
                free(rc);
                free(then);
                if (st->fn)
                        st->fn(st->arg, NULL, xb_req_tenant(req), args, NULL);   /* to free what it owns */
                xb_reply_error(req, 503, "out_of_memory", "retry", "out of memory");
                return;
        }
        *rc = (struct rest_call){ .req = req, .call = rc->call, .status = status ? status : 200, .inside = true,
                                  .decor = decor, .then_fail = then };
        if (st->op)
                xb_op_run(st->op, xb_rest_of(req)->core, xb_req_tenant(req), args, rc->call);
        else
                st->fn(st->arg, xb_rest_of(req)->core, xb_req_tenant(req), args, rc->call);
        rc->inside = false;
        if (!rc->call) {
                rc_free(rc);   /* answered already */
                return;
        }
        if (!rc->stream)
                xb_req_suspend(req, on_gone, rc);
}

void
xb_rest_run(struct xb_req *req, const char *name, json_t *args, unsigned status, bool sse)
{
        run(req, name, args, status, sse, NULL, NULL);
}

void
xb_rest_run_decor(struct xb_req *req, const char *name, json_t *args, unsigned status, bool sse,
                  const struct xb_rest_decor *decor)
{
        run(req, name, args, status, sse, decor, NULL);
}

static int
query_value(const struct xb_rest_query *q, const char *v, json_t **ret)
{
        char *end;

        switch (q->type) {
        case 's':
                *ret = json_string(v);
                return *ret ? 0 : -EINVAL;
        case 'u': {
                unsigned long long n;

                if (*v < '0' || *v > '9')
                        return -EINVAL;
                errno = 0;
                n = strtoull(v, &end, 10);
                if (errno || *end || n > (1ull << 53))
                        return -EINVAL;
                *ret = json_integer((json_int_t)n);
                return 0;
        }
        case 'n': {
                double d;

                errno = 0;
                d = strtod(v, &end);
                if (errno || end == v || *end || d != d)
                        return -EINVAL;
                *ret = json_real(d);
                return 0;
        }
        case 'b':
                if (!strcmp(v, "true") || !strcmp(v, "1"))
                        *ret = json_true();
                else if (!strcmp(v, "false") || !strcmp(v, "0"))
                        *ret = json_false();
                else
                        return -EINVAL;
                return 0;
        }
        return -EINVAL;
}

/* The path parameters, by the names of tmpl's {segments}. */
static void
path_args(struct xb_req *r, const char *tmpl, json_t *args)
{
        unsigned n = 0;

        for (const char *p = tmpl; (p = strchr(p, '{')); n++) {
                const char *e = strchr(p, '}');
                const char *v = xb_req_param(r, n);

                if (!e)
                        break;
                if (v)
                        json_object_set_new(args, strndupa(p + 1, (size_t)(e - p - 1)), json_string(v));
                p = e + 1;
        }
}

/* A malformed request: err, unless the route's check_op fails first. */
static void
bad_request(struct xb_req *r, const struct xb_rest_op_route *rt, const struct xb_err *err)
{
        _cleanup_(xb_json_decrefp) json_t *args = rt->check_op ? json_object() : NULL;

        if (!args) {
                xb_rest_fail(r, err);
                return;
        }
        path_args(r, rt->tmpl, args);
        run(r, rt->check_op, args, 200, false, NULL, err);
}

void
xb_rest_op_handler(struct xb_req *r)
{
        const struct xb_rest_op_route *rt = xb_req_route_data(r);
        struct xb_err err = { 0 };
        _cleanup_(xb_json_decrefp) json_t *args = NULL;
        size_t len = 0;
        const char *body = rt->no_body ? NULL : xb_req_body(r, &len);

        if (xb_jsonv_parse(body, len, &args, &err) < 0) {
                err.ecode = rt->bad_body ? rt->bad_body : XB_E_INVALID;
                err.hint = rt->bad_body_hint;
                bad_request(r, rt, &err);
                return;
        }
        path_args(r, rt->tmpl, args);
        for (const struct xb_rest_query *q = rt->query; q < rt->query + 6 && q->name; q++) {
                int qerr = 0;
                const char *v = xb_req_query(r, q->name, &qerr);
                json_t *j = NULL;

                if (qerr || (v && query_value(q, v, &j) < 0)) {
                        xb_err_code(&err, rt->bad_query ? rt->bad_query : XB_E_INVALID, EINVAL, NULL,
                                    "query parameter `%s` is not valid", q->name);
                        bad_request(r, rt, &err);
                        return;
                }
                if (j)
                        json_object_set_new(args, q->name, j);
        }
        /* Set by this server alone: an admin token's view of every tenant. */
        json_object_del(args, XB_REST_ALL_TENANTS);
        if (rt->admin_all && xb_req_admin(r))
                json_object_set_new(args, XB_REST_ALL_TENANTS, json_true());
        run(r, rt->op, args, rt->status, rt->sse && xb_req_accepts(r, "text/event-stream"), rt->decor,
            NULL);
}
