/* Directory watch operations: watch_dir streams a directory's changes
 * until the caller leaves (or the directory goes); watcher_create,
 * watcher_events and watcher_delete are the same watch polled through a
 * handle with a bounded buffer. Events are {type, name, path}: type one of
 * create, write, remove, rename, chmod, overflow; name relative to the
 * watched directory; path absolute. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/core.h"
#include "ops/jsonv.h"
#include "ops/op_args.h"
#include "ops/ops.h"

#define HOME "/home/user"

struct watch_args {
        char *path;
        bool recursive;
        uint32_t uid;
};

/* path (absolute, or relative to /home/user), recursive (a bool, or
 * "true"/"false" from a query), user ("user" or "root"; unset: the
 * sandbox's own, def_uid). */
static int
parse(json_t *args, const char *const *fields, struct watch_args *a, uint32_t def_uid, struct xb_err *err)
{
        const char *path = NULL, *user = NULL;
        json_t *rec = json_object_get(args, "recursive");
        size_t n;

        if (xb_jsonv_fields(args, fields, err) < 0 || xb_jsonv_str(args, "path", XB_FILE_PATH_MAX, &path, err) < 0 ||
            xb_jsonv_str(args, "user", 16, &user, err) < 0)
                return -EINVAL;
        if (!path || !*path)
                return xb_err_code(err, XB_E_MISSING_PATH, EINVAL, NULL, "`path` is required: the directory to watch");
        if (user && strcmp(user, "user") && strcmp(user, "root"))
                return xb_err_msg(err, EINVAL, "`user` must be \"user\" (the default) or \"root\"");
        if (json_is_string(rec) && (!strcmp(json_string_value(rec), "true") || !strcmp(json_string_value(rec), "1")))
                a->recursive = true;
        else if (json_is_string(rec) && strcmp(json_string_value(rec), "false") && strcmp(json_string_value(rec), "0"))
                return xb_err_msg(err, EINVAL, "`recursive` must be true or false");
        else if (!json_is_string(rec) && xb_jsonv_bool(args, "recursive", &a->recursive, err) < 0)
                return -EINVAL;
        if (asprintf(&a->path, "%s%s", path[0] == '/' ? "" : HOME "/", path) < 0)
                return xb_err_code(err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
        for (n = strlen(a->path); n > 1 && a->path[n - 1] == '/'; n--)
                a->path[n - 1] = '\0';
        a->uid = !user ? def_uid : !strcmp(user, "root") ? 0 : XB_USER_UID;
        return 0;
}

/* ---- the stream ---- */

struct stream {
        struct xb_watch *w;
        struct xb_call *call;
        char *path;
};

static void
st_ready(void *ctx)
{
        struct stream *st = ctx;
        json_t *ev = json_pack("{s:s}", "path", st->path);

        xb_call_begin(st->call);
        xb_call_event(st->call, "ready", ev);
        json_decref(ev);
}

static void
st_event(void *ctx, const char *type, const char *name)
{
        struct stream *st = ctx;
        _cleanup_free_ char *path = NULL;
        json_t *ev;

        if (asprintf(&path, "%s%s%s", st->path, *name && strcmp(st->path, "/") ? "/" : "", name) < 0)
                return;
        ev = json_pack("{s:s,s:s,s:s}", "type", type, "name", name, "path", path);
        xb_call_event(st->call, "event", ev);
        json_decref(ev);
}

static void
st_end(void *ctx, const struct xb_err *err)
{
        struct stream *st = ctx;
        struct xb_call *c = st->call;

        free(st->path);
        free(st);
        if (err)
                xb_call_fail(c, err);
        else
                xb_call_done(c, json_pack("{s:b}", "ended", 1));
}

static const struct xb_watch_ops stream_ops = { .ready = st_ready, .event = st_event, .end = st_end };

static void
st_cancel(void *owner)
{
        struct stream *st = owner;

        xb_watch_stop(st->w);
        free(st->path);
        free(st);
}

static void
fail_with(struct xb_call *c, struct xb_err *err)
{
        if (!err->ecode)
                err->ecode = XB_E_INVALID;
        xb_call_fail(c, err);
}

static void
op_watch_dir(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "id", "path", "recursive", "user", NULL };
        struct xb_sbx *x = xb_op_sandbox(s, tenant, args, c);
        struct watch_args a = { 0 };
        struct xb_err err = { 0 };
        struct stream *st;

        if (!x)
                return;
        if (parse(args, fields, &a, x->uid, &err) < 0) {
                free(a.path);
                fail_with(c, &err);
                return;
        }
        if (!xb_call_wants_events(c)) {
                free(a.path);
                xb_call_failf(c, XB_E_INVALID, NULL, "a directory watch is a stream; ask for text/event-stream");
                return;
        }
        if (!(st = calloc(1, sizeof(*st)))) {
                free(a.path);
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        st->call = c;
        st->path = a.path;
        st->w = xb_watch_start(x, a.path, a.recursive, a.uid, &stream_ops, st, &err);
        if (!st->w) {
                free(st->path);
                free(st);
                xb_call_fail(c, &err);
                return;
        }
        xb_call_on_cancel(c, st_cancel, st);
}

/* ---- polled watchers ---- */

static void
op_watcher_create(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "id", "path", "recursive", "user", NULL };
        struct xb_sbx *x = xb_op_sandbox(s, tenant, args, c);
        struct watch_args a = { 0 };
        struct xb_err err = { 0 };

        if (!x)
                return;
        if (parse(args, fields, &a, x->uid, &err) < 0) {
                free(a.path);
                fail_with(c, &err);
                return;
        }
        xb_watcher_create(x, a.path, a.recursive, a.uid, c);
        free(a.path);
}

static void
op_watcher_events(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        struct xb_sbx *x = xb_op_sandbox(s, tenant, args, c);
        const char *wid = json_string_value(json_object_get(args, "watcher_id"));
        json_t *o;

        if (!x)
                return;
        if (!(o = xb_watcher_take(x, wid))) {
                xb_call_failf(c, XB_E_WATCHER_NOT_FOUND, NULL, "no watcher `%.32s` in sandbox %s", wid ? wid : "",
                              x->id);
                return;
        }
        xb_call_done(c, o);
}

static void
op_watcher_delete(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        struct xb_sbx *x = xb_op_sandbox(s, tenant, args, c);
        const char *wid = json_string_value(json_object_get(args, "watcher_id"));

        if (!x)
                return;
        if (xb_watcher_delete(x, wid) < 0) {
                xb_call_failf(c, XB_E_WATCHER_NOT_FOUND, NULL, "no watcher `%.32s` in sandbox %s", wid ? wid : "",
                              x->id);
                return;
        }
        xb_call_done(c, NULL);
}

const struct xb_op xb_ops_watch[] = {
        { "watch_dir", op_watch_dir },
        { "watcher_create", op_watcher_create },
        { "watcher_events", op_watcher_events },
        { "watcher_delete", op_watcher_delete },
        { NULL, NULL },
};
