/* Directory watches (see core.h): the daemon's side of XB_REQ_WATCH, and
 * polled watchers over them.
 *
 * Theory of operation. A watch holds a pending tag; init's XB_EV_WATCH
 * messages for it arrive through the tag's file callback, are validated
 * here (every WEVENT's type and length), and become the owner's events.
 * Stopping sends XB_REQ_UNWATCH, which frees the inotify instance in init;
 * events init had queued before it find no owner and are dropped. A watch
 * is freed at the next loop turn, so a callback may stop it. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/utf8.h"
#include "core/call.h"
#include "core/core.h"

struct xb_watch {
        struct xb_sbx *sbx;
        struct xb_defer defer;
        uint32_t tag;
        const struct xb_watch_ops *ops;
        void *ctx;
        bool ready, dead;
};

static const char *const wev_names[] = { NULL, "create", "write", "remove", "rename", "chmod" };

static void
watch_free(void *data)
{
        struct xb_watch *w = data;

        xb_sbx_unref(w->sbx);
        free(w);
}

/* Detach from init's events; freed at the next loop turn. */
static void
watch_release(struct xb_watch *w)
{
        w->dead = true;
        xb_sbx_pending_del(w->sbx, w->tag);
        w->sbx->nwatches--;
        xb_loop_defer(w->sbx->core->loop, &w->defer, watch_free, w);
}

static void
watch_end(struct xb_watch *w, const struct xb_err *err)
{
        if (w->dead)
                return;
        watch_release(w);
        w->ops->end(w->ctx, err);
}

static void
watch_msg(void *ctx, const struct xb_init_event *ev, int *fds, size_t nfds)
{
        struct xb_watch *w = ctx;
        const struct xb_msgr *r = &ev->msg;
        uint64_t errnum = 0, flags = 0;
        struct xb_field f;
        size_t cur = 0;

        for (size_t i = 0; i < nfds; i++)
                close(fds[i]);
        if (w->dead || ev->kind != XB_IEV_WATCH)
                return;
        if (xb_msgr_u64(r, XB_K_ERRNO, &errnum) == 0 && !w->ready) {
                struct xb_err err = { 0 };

                if (errnum) {
                        xb_err_code(&err, errnum == ENOENT || errnum == ENOTDIR ? XB_E_FILE_NOT_FOUND :
                                    errnum == EACCES || errnum == EPERM ? XB_E_PERMISSION_DENIED : XB_E_INVALID,
                                    errnum > 0 && errnum < 4096 ? (int)errnum : EIO, NULL,
                                    "cannot watch that directory: %s",
                                    strerror(errnum > 0 && errnum < 4096 ? (int)errnum : EIO));
                        watch_end(w, &err);
                        return;
                }
                w->ready = true;
                if (w->ops->ready)
                        w->ops->ready(w->ctx);
        }
        xb_msgr_u64(r, XB_K_FLAGS, &flags);
        if ((flags & XB_WATCH_OVERFLOW) && !w->dead)
                w->ops->event(w->ctx, "overflow", "");
        while (!w->dead && xb_msgr_next(r, &cur, &f)) {
                uint32_t type;
                _cleanup_free_ char *name = NULL;
                size_t len;

                if (f.key != XB_K_WEVENT)
                        continue;
                if (f.len < 4 || f.len > 4 + XB_FILE_PATH_MAX)
                        continue;
                memcpy(&type, f.data, 4);
                if (type < XB_WEV_CREATE || type > XB_WEV_CHMOD)
                        continue;
                /* A name from inside the sandbox: UTF-8 for the clients, no NUL. */
                name = xb_utf8_sanitize((const char *)f.data + 4, f.len - 4, &len);
                if (!name || memchr(name, '\0', len))
                        continue;
                w->ops->event(w->ctx, wev_names[type], name);
        }
        if ((flags & XB_WATCH_END) && !w->dead)
                watch_end(w, NULL);
}

static void
watch_died(void *ctx, const char *why)
{
        struct xb_watch *w = ctx;
        struct xb_err err = { 0 };

        if (w->dead)
                return;
        /* The tag is gone already: only the count and the memory are left. */
        w->dead = true;
        w->sbx->nwatches--;
        xb_sbx_gone(w->sbx, why, "the sandbox was deleted", &err);
        xb_loop_defer(w->sbx->core->loop, &w->defer, watch_free, w);
        w->ops->end(w->ctx, &err);
}

static const struct xb_pending_ops watch_pending = { .file = watch_msg, .died = watch_died };

struct xb_watch *
xb_watch_start(struct xb_sbx *x, const char *path, bool recursive, uint32_t uid, const struct xb_watch_ops *ops,
               void *ctx, struct xb_err *err)
{
        struct xb_watch *w;
        int r;

        if (x->state >= XB_SBX_DYING || !x->sb) {
                xb_err_code(err, XB_E_SANDBOX_GONE, ESRCH, NULL, "the sandbox is gone");
                return NULL;
        }
        if (x->nwatches >= XB_WATCHES_MAX) {
                xb_err_code(err, XB_E_TOO_MANY_WATCHES, EMFILE, NULL,
                            "the sandbox has %u directory watches, its limit; stop one first", x->nwatches);
                return NULL;
        }
        if (!(w = calloc(1, sizeof(*w)))) {
                xb_err_code(err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
                return NULL;
        }
        *w = (struct xb_watch){ .sbx = x, .ops = ops, .ctx = ctx };
        w->tag = xb_sbx_pending_add(x, &watch_pending, w);
        if (!w->tag) {
                free(w);
                xb_err_code(err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
                return NULL;
        }
        if ((r = xb_initc_watch(x->sb->sock, w->tag, path, recursive, uid, uid)) < 0) {
                xb_sbx_pending_del(x, w->tag);
                free(w);
                xb_err_code(err, r == -ENAMETOOLONG ? XB_E_INVALID : XB_E_SANDBOX_GONE, -r, NULL,
                            "cannot ask the sandbox to watch: %s", strerror(-r));
                return NULL;
        }
        xb_sbx_ref(x);
        x->nwatches++;
        return w;
}

void
xb_watch_stop(struct xb_watch *w)
{
        if (w->dead)
                return;
        if (w->sbx->sb && w->sbx->state < XB_SBX_DYING)
                xb_initc_unwatch(w->sbx->sb->sock, w->tag);
        watch_release(w);
}

/* ---- polled watchers ---- */

struct xb_watcher {
        struct xb_watcher *next;
        struct xb_sbx *sbx;
        struct xb_watch *watch;
        struct xb_call *create;       /* until init confirms */
        char id[24];
        json_t *events;
        bool overflow, ended;
        json_t *note;                 /* what a next daemon needs to go on with it (adopt.c) */
};

static void
watcher_unlink(struct xb_watcher *wr)
{
        for (struct xb_watcher **pp = &wr->sbx->watchers; *pp; pp = &(*pp)->next)
                if (*pp == wr) {
                        *pp = wr->next;
                        break;
                }
        json_decref(wr->events);
        json_decref(wr->note);
        free(wr);
}

static void
wr_ready(void *ctx)
{
        struct xb_watcher *wr = ctx;
        struct xb_call *c = wr->create;

        wr->create = NULL;
        /* Init watches: it keeps the note for a next daemon (its unwatch
         * or its end drops it there). */
        if (wr->watch && wr->note)
                xb_adopt_hold_watch(wr->sbx, wr->watch->tag, wr->note);
        if (c)
                xb_call_done(c, json_pack("{s:s}", "watcher_id", wr->id));
}

static void
wr_event(void *ctx, const char *type, const char *name)
{
        struct xb_watcher *wr = ctx;

        if (!strcmp(type, "overflow") || json_array_size(wr->events) >= XB_WATCHER_EVENTS) {
                wr->overflow = true;
                return;
        }
        json_array_append_new(wr->events, json_pack("{s:s,s:s}", "type", type, "name", name));
}

static void
wr_end(void *ctx, const struct xb_err *err)
{
        struct xb_watcher *wr = ctx;
        struct xb_call *c = wr->create;

        wr->watch = NULL;
        wr->ended = true;
        wr->create = NULL;
        if (c) {
                xb_call_fail(c, err);
                watcher_unlink(wr);
        } else if (err)
                watcher_unlink(wr);   /* the sandbox is gone */
}

static const struct xb_watch_ops watcher_ops = { .ready = wr_ready, .event = wr_event, .end = wr_end };

static void
wr_create_cancel(void *owner)
{
        struct xb_watcher *wr = owner;

        wr->create = NULL;
        if (wr->watch)
                xb_watch_stop(wr->watch);
        watcher_unlink(wr);
}

void
xb_watcher_create(struct xb_sbx *x, const char *path, bool recursive, uint32_t uid, struct xb_call *c)
{
        struct xb_watcher *wr = calloc(1, sizeof(*wr));
        struct xb_err err = { 0 };

        if (!wr || !(wr->events = json_array())) {
                free(wr);
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        wr->sbx = x;
        wr->create = c;
        snprintf(wr->id, sizeof(wr->id), "w%u", ++x->next_watcher);
        wr->note = json_pack("{s:s,s:s,s:b,s:I}", "watcher", wr->id, "path", path, "recursive", recursive, "uid",
                             (json_int_t)uid);
        wr->next = x->watchers;
        x->watchers = wr;
        wr->watch = xb_watch_start(x, path, recursive, uid, &watcher_ops, wr, &err);
        if (!wr->watch) {
                wr->create = NULL;
                watcher_unlink(wr);
                xb_call_fail(c, &err);
                return;
        }
        xb_call_on_cancel(c, wr_create_cancel, wr);
}

static struct xb_watcher *
watcher_find(struct xb_sbx *x, const char *id)
{
        for (struct xb_watcher *wr = x->watchers; wr && id; wr = wr->next)
                if (!wr->create && !strcmp(wr->id, id))
                        return wr;
        return NULL;
}

json_t *
xb_watcher_take(struct xb_sbx *x, const char *id)
{
        struct xb_watcher *wr = watcher_find(x, id);
        json_t *o;

        if (!wr)
                return NULL;
        o = json_pack("{s:o,s:b,s:b}", "events", wr->events, "overflow", wr->overflow, "ended", wr->ended);
        wr->events = json_array();
        wr->overflow = false;
        if (wr->ended)
                watcher_unlink(wr);
        return o;
}

int
xb_watcher_delete(struct xb_sbx *x, const char *id)
{
        struct xb_watcher *wr = watcher_find(x, id);

        if (!wr)
                return -ENOENT;
        if (wr->watch)
                xb_watch_stop(wr->watch);
        watcher_unlink(wr);
        return 0;
}

void
xb_watchers_free(struct xb_sbx *x)
{
        while (x->watchers) {
                struct xb_watcher *wr = x->watchers;

                /* A live watch holds a ref on x: at its last, every watch
                 * has ended (wr_end) and only ended watchers are left. */
                watcher_unlink(wr);
        }
}

int xb__watcher_adopt(struct xb_sbx *x, uint32_t tag, json_t *note);

/* A polled watcher of an earlier daemon's (adopt.c): init still watches
 * with tag, and keeps its note; the events it read while no daemon was
 * attached were dropped, but what the kernel queued meanwhile (bounded by
 * its max_queued_events, past which it reports overflow) comes next. */
int
xb__watcher_adopt(struct xb_sbx *x, uint32_t tag, json_t *note)
{
        const char *id = json_string_value(json_object_get(note, "watcher"));
        struct xb_watcher *wr;
        struct xb_watch *w;
        unsigned n;
        char tail;

        if (!id || sscanf(id, "w%u%c", &n, &tail) != 1 || x->nwatches >= XB_WATCHES_MAX || watcher_find(x, id))
                return -EINVAL;
        wr = calloc(1, sizeof(*wr));
        w = calloc(1, sizeof(*w));
        if (!wr || !w || !(wr->events = json_array())) {
                free(wr);
                free(w);
                return -ENOMEM;
        }
        *w = (struct xb_watch){ .sbx = x, .ops = &watcher_ops, .ctx = wr, .ready = true };
        w->tag = xb_sbx_pending_add_at(x, &watch_pending, w, tag);
        if (!w->tag) {
                json_decref(wr->events);
                free(wr);
                free(w);
                return -EEXIST;
        }
        xb_sbx_ref(x);
        x->nwatches++;
        wr->sbx = x;
        wr->watch = w;
        wr->note = json_incref(note);
        snprintf(wr->id, sizeof(wr->id), "%s", id);
        if (n > x->next_watcher)
                x->next_watcher = n;
        wr->next = x->watchers;
        x->watchers = wr;
        return 0;
}
