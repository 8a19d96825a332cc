/* envd's directory watching over Connect JSON: WatchDir streams a
 * directory's changes (start, filesystem events, keepalive), and
 * CreateWatcher, GetWatcherEvents and RemoveWatcher are the same watch
 * polled (the Python SDK's way). Both are the engine's inotify watches in
 * init (ops watch_dir and watcher_*), so a change made by any process in
 * the sandbox is seen. Names are relative to the watched directory, as
 * envd's are. An overflow (the kernel's bounded queue lost events) ends a
 * stream with resource_exhausted rather than pretend nothing was lost. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/core.h"
#include "e2b/connect.h"
#include "e2b/e2b_int.h"
#include "ops/jsonv.h"

static const char *
event_type(const char *t)
{
        static const struct { const char *execbox, *envd; } types[] = {
                { "create", "EVENT_TYPE_CREATE" }, { "write", "EVENT_TYPE_WRITE" }, { "remove", "EVENT_TYPE_REMOVE" },
                { "rename", "EVENT_TYPE_RENAME" }, { "chmod", "EVENT_TYPE_CHMOD" },
        };

        for (size_t i = 0; t && i < sizeof(types) / sizeof(types[0]); i++)
                if (!strcmp(types[i].execbox, t))
                        return types[i].envd;
        return NULL;
}

/* WatchDirRequest {path, recursive} (includeEntry and network mounts are
 * for envd versions this server does not claim), as engine arguments. */
static json_t *
watch_args(struct xb_req *r, const struct e2b_sbx *s, json_t *msg, const char *user)
{
        const char *path = json_string_value(json_object_get(msg, "path"));

        if (!path || !*path) {
                e2b_rpc_error(r, "invalid_argument", "`path` is required: the directory to watch");
                return NULL;
        }
        return json_pack("{s:s,s:s,s:b,s:s}", "id", s->id, "path", path, "recursive",
                         json_is_true(json_object_get(msg, "recursive")), "user", user);
}

/* ---- WatchDir ---- */

struct wstream {
        struct e2b_stream es;
        struct e2b_sink sink;
        struct e2b_hold hold;
        struct xb_req *req;          /* until init watches */
};

static void
ws_free(struct wstream *ws)
{
        e2b_hold_del(&ws->hold);
        if (ws->sink.call)
                xb_call_cancel(ws->sink.call);
        e2b_stream_stop(&ws->es);
        free(ws);
}

static void
ws_gone(struct e2b_stream *es)
{
        ws_free((struct wstream *)es);
}

static void
ws_expired(struct e2b_stream *es)
{
        struct wstream *ws = (struct wstream *)es;

        e2b_stream_end(&ws->es, "deadline_exceeded", "the request's Connect-Timeout-Ms passed");
        ws_free(ws);
}

static void
ws_drop(struct e2b_hold *h)
{
        struct wstream *ws = (struct wstream *)((char *)h - offsetof(struct wstream, hold));

        if (ws->req)
                xb_reply_json(ws->req, 503, json_pack("{s:s,s:s}", "code", "unavailable", "message",
                                                      "the sandbox was paused"));
        else if (ws->es.st)
                e2b_stream_end(&ws->es, "unavailable", "the sandbox was paused");
        ws->req = NULL;
        ws_free(ws);
}

static void
ws_event(struct e2b_sink *s, const char *name, json_t *data)
{
        struct wstream *ws = (struct wstream *)((char *)s - offsetof(struct wstream, sink));
        const char *type;

        if (name && !strcmp(name, "ready") && ws->req) {
                struct xb_req *r = ws->req;

                ws->req = NULL;
                ws->es.ping = "{\"keepalive\":{}}";
                ws->es.gone = ws_gone;
                ws->es.expired = ws_expired;
                if (!e2b_stream_open(&ws->es, r, e2b_loop((struct xb_e2b *)xb_req_route_data(r)))) {
                        ws_free(ws);
                        return;
                }
                e2b_stream_send(&ws->es, json_pack("{s:{}}", "start"));
                return;
        }
        if (!name || strcmp(name, "event") || !ws->es.st)
                return;
        type = json_string_value(json_object_get(data, "type"));
        if (type && !strcmp(type, "overflow")) {
                e2b_stream_end(&ws->es, "resource_exhausted", "the watch overflowed and events were lost: watch again");
                ws_free(ws);
                return;
        }
        if ((type = event_type(type)))
                e2b_stream_send(&ws->es, json_pack("{s:{s:O,s:s}}", "filesystem", "name", json_object_get(data, "name"),
                                                   "type", type));
}

static void
ws_done(struct e2b_sink *s, json_t *res, const struct xb_err *err)
{
        struct wstream *ws = (struct wstream *)((char *)s - offsetof(struct wstream, sink));

        json_decref(res);
        if (ws->req) {
                /* It never started: the error is the call's. */
                if (err)
                        e2b_rpc_fail(ws->req, err);
                else
                        e2b_rpc_error(ws->req, "not_found", "the directory went away");
                ws->req = NULL;
        } else if (err) {
                e2b_stream_end(&ws->es, xb_connect_code_ec(err), err->msg);
        } else {
                /* The directory itself went away. */
                e2b_stream_end(&ws->es, NULL, NULL);
        }
        ws_free(ws);
}

static void
ws_pre_gone(struct xb_req *r, void *owner)
{
        struct wstream *ws = owner;

        (void)r;
        ws->req = NULL;
        ws_free(ws);
}

static void
watch_dir(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *msg = NULL, *args = NULL;
        struct xb_sbx *x;
        struct e2b_sbx *s = e2b_front_sbx(r, e, true, &x);
        struct wstream *ws;
        const char *user;

        if (!s || !(msg = e2b_rpc_stream_body(r)) || !(user = e2b_rpc_user(r)) || !(args = watch_args(r, s, msg, user)))
                return;
        ws = calloc(1, sizeof(*ws));
        if (!ws) {
                e2b_rpc_error(r, "resource_exhausted", "out of memory");
                return;
        }
        ws->req = r;
        ws->sink.done = ws_done;
        ws->sink.event = ws_event;
        snprintf(ws->hold.id, sizeof(ws->hold.id), "%s", s->id);
        ws->hold.drop = ws_drop;
        e2b_hold_add(e, &ws->hold);
        xb_req_suspend(r, ws_pre_gone, ws);
        if (!e2b_run(e, s->tenant, "watch_dir", args, XB_CALL_EVENTS, &ws->sink)) {
                ws->req = NULL;
                e2b_rpc_error(r, "resource_exhausted", "out of memory");
                ws_free(ws);
        }
}

/* ---- polled watchers ---- */

static void
created(struct xb_req *r, struct e2b_async *a, json_t *res, const struct xb_err *err)
{
        if (err)
                e2b_rpc_fail(r, err);
        else
                e2b_rpc_reply(r, json_pack("{s:O}", "watcherId", json_object_get(res, "watcher_id")));
        json_decref(res);
        e2b_async_free(a);
}

static void
create_watcher(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *msg = NULL, *args = NULL;
        struct xb_sbx *x;
        struct e2b_sbx *s = e2b_front_sbx(r, e, true, &x);
        struct e2b_async *a;
        const char *user;

        if (!s || !(msg = e2b_rpc_body(r)) || !(user = e2b_rpc_user(r)) || !(args = watch_args(r, s, msg, user)) ||
            !(a = e2b_async_new(r, e, s->tenant, s->id, created)))
                return;
        e2b_async_run(a, "watcher_create", args, 0);
}

/* The watcher named in the message, as engine arguments; NULL after replying. */
static json_t *
watcher_args(struct xb_req *r, const struct e2b_sbx *s, json_t *msg)
{
        const char *wid = json_string_value(json_object_get(msg, "watcherId"));

        if (!wid || !*wid) {
                e2b_rpc_error(r, "invalid_argument", "`watcherId` is required");
                return NULL;
        }
        return json_pack("{s:s,s:s}", "id", s->id, "watcher_id", wid);
}

static void
get_watcher_events(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *msg = NULL, *args = NULL, *res = NULL;
        struct xb_err err = { 0 };
        struct xb_sbx *x;
        struct e2b_sbx *s = e2b_front_sbx(r, e, true, &x);
        json_t *out, *ev;
        size_t i;

        if (!s || !(msg = e2b_rpc_body(r)) || !(args = watcher_args(r, s, msg)))
                return;
        if (e2b_run_sync(e, s->tenant, "watcher_events", args, &res, &err) < 0) {
                e2b_rpc_fail(r, &err);
                return;
        }
        if (json_is_true(json_object_get(res, "overflow"))) {
                e2b_rpc_error(r, "resource_exhausted", "the watcher overflowed and events were lost: make a new one");
                return;
        }
        out = json_array();
        json_array_foreach(json_object_get(res, "events"), i, ev) {
                const char *type = event_type(json_string_value(json_object_get(ev, "type")));

                if (type)
                        json_array_append_new(out, json_pack("{s:O,s:s}", "name", json_object_get(ev, "name"), "type",
                                                             type));
        }
        e2b_rpc_reply(r, json_pack("{s:o}", "events", out));
}

static void
remove_watcher(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *msg = NULL, *args = NULL;
        struct xb_err err = { 0 };
        struct xb_sbx *x;
        struct e2b_sbx *s = e2b_front_sbx(r, e, true, &x);

        if (!s || !(msg = e2b_rpc_body(r)) || !(args = watcher_args(r, s, msg)))
                return;
        if (e2b_run_sync(e, s->tenant, "watcher_delete", args, NULL, &err) < 0) {
                e2b_rpc_fail(r, &err);
                return;
        }
        e2b_rpc_reply(r, NULL);
}

#define W(m, fn) { "POST", E2B_ENVD_PREFIX "/filesystem.Filesystem/" m, fn, XB_ROUTE_PUBLIC | XB_ROUTE_HIDDEN, NULL }
const struct xb_route e2b_envd_watch_routes[] = {
        W("WatchDir", watch_dir),
        W("CreateWatcher", create_watcher),
        W("GetWatcherEvents", get_watcher_events),
        W("RemoveWatcher", remove_watcher),
};
const size_t e2b_envd_watch_nroutes = sizeof(e2b_envd_watch_routes) / sizeof(e2b_envd_watch_routes[0]);
