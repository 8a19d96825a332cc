/* GET /v1/sandboxes/{id}/events: a sandbox's audit log over the
 * sandbox_events operation. By default JSON lines, one event a line, from
 * ?offset= (at most ?limit= of them), with X-Next-Offset saying where the
 * next page starts; Accept: application/json gives the operation's object
 * instead; Accept: text/event-stream follows the log live ("event"
 * events, then "result" once the sandbox is deleted). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "core/call.h"
#include "ops/jsonv.h"
#include "ops/ops.h"
#include "rest/call.h"
#include "rest/rest.h"
#include "rest/status.h"

struct page {
        json_t *result;
        struct xb_err err;
        bool failed;
};

static void
page_done(void *ctx, json_t *result)
{
        ((struct page *)ctx)->result = result;
}

static void
page_fail(void *ctx, const struct xb_err *err)
{
        struct page *p = ctx;

        p->err = *err;
        p->failed = true;
}

static const struct xb_sink_ops page_sink = { .done = page_done, .fail = page_fail };

static void
reply_lines(struct xb_req *r, json_t *res)
{
        _cleanup_(xb_buf_free) struct xb_buf b = { .max = 64u << 20 };
        json_t *ev;
        size_t i;
        char num[24];

        json_array_foreach(json_object_get(res, "events"), i, ev) {
                _cleanup_free_ char *s = json_dumps(ev, JSON_COMPACT);

                if (!s || xb_buf_printf(&b, "%s\n", s) < 0) {
                        xb_reply_error(r, 503, "out_of_memory", "retry", "out of memory");
                        return;
                }
        }
        snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(json_object_get(res, "next_offset")));
        xb_req_add_reply_header(r, "X-Next-Offset", num);
        snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(json_object_get(res, "dropped")));
        xb_req_add_reply_header(r, "X-Dropped", num);
        xb_req_add_reply_header(r, "X-Sandbox-Deleted", json_is_true(json_object_get(res, "deleted")) ? "true" : "false");
        xb_reply_bytes(r, 200, "application/x-ndjson", b.data ? b.data : "", b.len);
}

static void
events(struct xb_req *r)
{
        static const char *const names[] = { "offset", "limit" };
        _cleanup_(xb_json_decrefp) json_t *args = json_object();
        struct page p = { 0 };
        struct xb_call *c;

        if (!args) {
                xb_reply_error(r, 503, "out_of_memory", "retry", "out of memory");
                return;
        }
        json_object_set_new(args, "id", json_string(xb_req_param(r, 0)));
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                int qerr = 0;
                const char *v = xb_req_query(r, names[i], &qerr);
                char *end = NULL;
                unsigned long long n;

                if (!v && !qerr)
                        continue;
                errno = 0;
                n = v && *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
                if (qerr || !end || *end || errno || n > (1ull << 53)) {
                        xb_reply_error(r, 400, "invalid_request", "give a whole number, e.g. ?offset=0&limit=100",
                                       "query parameter `%s` is not valid", names[i]);
                        return;
                }
                json_object_set_new(args, names[i], json_integer((json_int_t)n));
        }
        if (xb_req_accepts(r, "text/event-stream")) {
                json_object_set_new(args, "follow", json_true());
                xb_rest_run(r, "sandbox_events", args, 200, true);
                return;
        }
        if (xb_req_accepts(r, "application/json")) {
                xb_rest_run(r, "sandbox_events", args, 200, false);
                return;
        }
        /* Not following, the operation answers at once. */
        c = xb_call_new(&page_sink, &p, 0);
        if (!c) {
                xb_reply_error(r, 503, "out_of_memory", "retry", "out of memory");
                return;
        }
        xb_op_run(xb_op_find("sandbox_events"), xb_rest_of(r)->core, xb_req_tenant(r), args, c);
        if (p.failed)
                xb_rest_fail(r, &p.err);
        else if (p.result)
                reply_lines(r, p.result);
        else
                xb_reply_error(r, 500, "internal", "retry", "the events were not read");
        json_decref(p.result);
}

const struct xb_route xb_api_routes_events[] = {
        { "GET", "/v1/sandboxes/{}/events", events, 0, NULL },
};
const size_t xb_api_nroutes_events = sizeof(xb_api_routes_events) / sizeof(xb_api_routes_events[0]);
