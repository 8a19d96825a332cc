/* The audit log's operation: sandbox_events reads a sandbox's events from
 * an offset, or (follow, for a caller that takes events) sends them as
 * "event" events as they come, until the sandbox is deleted. A deleted
 * sandbox's events stay readable while the server keeps them. */
#define _GNU_SOURCE
#include <stdlib.h>

#include "core/audit.h"
#include "core/core.h"
#include "ops/jsonv.h"
#include "ops/ops.h"

#define EVENTS_LIMIT_DEFAULT 1000
#define EVENTS_LIMIT_MAX 10000

struct follow {
        struct xb_audit_follower f;
        struct xb_audit *log;
        struct xb_call *call;
};

static json_t *
info_json(const struct xb_audit *log)
{
        struct xb_audit_info in;

        xb_audit_info(log, &in);
        return json_pack("{s:I,s:I,s:I,s:b}", "first_offset", (json_int_t)in.first, "next_offset",
                         (json_int_t)in.next, "dropped", (json_int_t)in.dropped, "deleted", in.closed);
}

static void
send_line(struct xb_call *c, const char *line, size_t len)
{
        json_t *ev = json_loadb(line, len, 0, NULL);

        if (ev)
                xb_call_event(c, "event", ev);
        json_decref(ev);
}

static void
follow_event(struct xb_audit_follower *f, const char *line, size_t len)
{
        struct follow *fo = (struct follow *)f;

        send_line(fo->call, line, len);
}

static void
follow_end(struct xb_audit_follower *f)
{
        struct follow *fo = (struct follow *)f;

        xb_call_done(fo->call, info_json(fo->log));
        free(fo);
}

static void
follow_cancel(void *owner)
{
        struct follow *fo = owner;

        xb_audit_unfollow(&fo->f);
        free(fo);
}

static void
op_events(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "id", "offset", "limit", "follow", NULL };
        struct xb_err err = { 0 };
        const char *id = json_string_value(json_object_get(args, "id"));
        struct xb_audit *log = xb_audit_find(s->audits, id, tenant);
        uint64_t off = 0, limit = EVENTS_LIMIT_DEFAULT;
        bool follow = false;
        struct xb_audit_info in;
        struct follow *fo;
        json_t *events, *res;

        if (!log) {
                xb_call_failf(c, XB_E_SANDBOX_NOT_FOUND, NULL, "no sandbox with id `%.64s`", id ? id : "");
                return;
        }
        if (xb_jsonv_fields(args, fields, &err) < 0 || xb_jsonv_uint(args, "offset", 0, UINT64_MAX >> 11, &off, &err) < 0 ||
            xb_jsonv_uint(args, "limit", 1, EVENTS_LIMIT_MAX, &limit, &err) < 0 ||
            xb_jsonv_bool(args, "follow", &follow, &err) < 0) {
                err.ecode = XB_E_INVALID;
                xb_call_fail(c, &err);
                return;
        }
        xb_audit_info(log, &in);
        if (off < in.first)
                off = in.first;   /* dropped: start at the oldest kept */
        if (!follow || !xb_call_wants_events(c)) {
                events = json_array();
                for (uint64_t o = off; events && o < in.next && o - off < limit; o++) {
                        size_t len;
                        const char *line = xb_audit_get(log, o, &len);
                        json_t *ev = line ? json_loadb(line, len, 0, NULL) : NULL;

                        if (ev)
                                json_array_append_new(events, ev);
                }
                res = info_json(log);
                /* Where to go on from: past what this page returned. */
                json_object_set_new(res, "next_offset", json_integer((json_int_t)(off + json_array_size(events))));
                json_object_set_new(res, "events", events ? events : json_array());
                xb_call_done(c, res);
                return;
        }
        xb_call_begin(c);
        for (uint64_t o = off; o < in.next; o++) {
                size_t len;
                const char *line = xb_audit_get(log, o, &len);

                if (line)
                        send_line(c, line, len);
        }
        if (in.closed) {
                xb_call_done(c, info_json(log));
                return;
        }
        fo = calloc(1, sizeof(*fo));
        if (!fo) {
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        *fo = (struct follow){ .f = { .event = follow_event, .end = follow_end }, .log = log, .call = c };
        xb_audit_follow(log, &fo->f);
        xb_call_on_cancel(c, follow_cancel, fo);
}

const struct xb_op xb_ops_events[] = {
        { "sandbox_events", op_events },
        { NULL, NULL },
};
