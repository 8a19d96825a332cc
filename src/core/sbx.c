/* Sandboxes as the server sees them: the registry, a cold start, init's
 * events and the pending tags they reach their owners by, the waiter
 * count that holds off expiry, and teardown. It names none of its users:
 * processes, file operations and sessions hear init, and the sandbox's
 * end, through their tags. Creation and the warm pool are pool.c's. */
#define _GNU_SOURCE
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/fd.h"
#include "base/log.h"
#include "proc/env.h"
#include "proc/initc.h"
#include "core/sbx_int.h"
#include "core/templates.h"
#include "core/audit.h"

static int
by_id(const void *a, const void *b)
{
        return strcmp(((const struct xb_sbx *)a)->id, ((const struct xb_sbx *)b)->id);
}

struct xb_sbx *
xb_sbx_find(struct xb_core *s, const char *id, int tenant)
{
        struct xb_sbx key;
        void *found;
        struct xb_sbx *x;

        if (!id || strlen(id) != XB_SANDBOX_ID_LEN)
                return NULL;
        memcpy(key.id, id, sizeof(key.id));
        found = tfind(&key, &s->by_id, by_id);
        if (!found)
                return NULL;
        x = *(struct xb_sbx **)found;
        /* Another tenant's sandbox does not exist, as far as this caller knows. */
        if (tenant != XB_TENANT_ANY && x->tenant != tenant)
                return NULL;
        /* A sealed one runs only what the server put there (instcache.h). */
        return x->sealed ? NULL : x;
}

struct foreach_ctx {
        void (*fn)(struct xb_sbx *, void *);
        void *data;
        struct xb_sbx **list;
        size_t n;
};

static struct foreach_ctx *walk_ctx;

static void
collect(const void *node, VISIT which, int depth)
{
        (void)depth;
        if (which == postorder || which == leaf)
                walk_ctx->list[walk_ctx->n++] = *(struct xb_sbx *const *)node;
}

void
xb_sbx_foreach(struct xb_core *s, void (*fn)(struct xb_sbx *x, void *data), void *data)
{
        struct foreach_ctx ctx = { fn, data, calloc(s->nsandboxes + 1, sizeof(struct xb_sbx *)), 0 };

        if (!ctx.list)
                return;
        /* Collect first: fn may remove sandboxes from the tree. */
        walk_ctx = &ctx;
        twalk(s->by_id, collect);
        walk_ctx = NULL;
        for (size_t i = 0; i < ctx.n; i++)
                fn(ctx.list[i], data);
        free(ctx.list);
}

void
xb_sbx_ref(struct xb_sbx *x)
{
        x->refs++;
}

static void
sbx_free(void *p)
{
        struct xb_sbx *x = p;

        xb_watchers_free(x);   /* ended ones whose last events were never taken */
        xb_strv_free(x->env);
        xb_strv_free(x->lowers);
        free(x->cwd);
        json_decref(x->metadata);
        free(x->pending);
        free(x);
}

void
xb_sbx_unref(struct xb_sbx *x)
{
        if (--x->refs == 0)
                xb_loop_defer(x->core->loop, &x->defer, sbx_free, x);
}

static uint32_t
next_tag(struct xb_sbx *x)
{
        /* Tag 0 is init's own (setup errors); wrap around past it. */
        if (++x->next_tag == 0)
                x->next_tag = 1;
        return x->next_tag;
}

/* ---- pending tags ---- */

struct xb_pending {
        uint32_t tag;
        const struct xb_pending_ops *ops;
        void *ctx;
};

/* The entry for tag, or NULL; *ret_i is where it is or would go. */
static struct xb_pending *
pending_find(const struct xb_sbx *x, uint32_t tag, size_t *ret_i)
{
        size_t lo = 0, hi = x->npending;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (x->pending[mid].tag < tag)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (ret_i)
                *ret_i = lo;
        return lo < x->npending && x->pending[lo].tag == tag ? &x->pending[lo] : NULL;
}

uint32_t
xb_sbx_pending_add(struct xb_sbx *x, const struct xb_pending_ops *ops, void *ctx)
{
        uint32_t tag;
        size_t i;

        if (x->npending == x->pending_cap) {
                unsigned cap = x->pending_cap ? x->pending_cap * 2 : 16;
                struct xb_pending *n = reallocarray(x->pending, cap, sizeof(*n));

                if (!n)
                        return 0;
                x->pending = n;
                x->pending_cap = cap;
        }
        /* Tags wrap after 2^32: skip one still in use. */
        do
                tag = next_tag(x);
        while (pending_find(x, tag, &i));
        memmove(&x->pending[i + 1], &x->pending[i], (x->npending - i) * sizeof(*x->pending));
        x->pending[i] = (struct xb_pending){ .tag = tag, .ops = ops, .ctx = ctx };
        x->npending++;
        return tag;
}

uint32_t
xb_sbx_pending_add_at(struct xb_sbx *x, const struct xb_pending_ops *ops, void *ctx, uint32_t tag)
{
        uint32_t keep = x->next_tag, got;

        if (!tag || pending_find(x, tag, NULL))
                return 0;
        x->next_tag = tag - 1;
        got = xb_sbx_pending_add(x, ops, ctx);
        x->next_tag = keep > tag ? keep : tag;
        return got;
}

void
xb_sbx_pending_del(struct xb_sbx *x, uint32_t tag)
{
        size_t i;

        if (!pending_find(x, tag, &i))
                return;
        x->npending--;
        memmove(&x->pending[i], &x->pending[i + 1], (x->npending - i) * sizeof(*x->pending));
}

/* Hand init's event to its tag's owner; false when the tag has none. The
 * fds the owner does not take are closed here. */
static bool
pending_event(struct xb_sbx *x, const struct xb_init_event *ev, int *fds, size_t nfds)
{
        struct xb_pending *e = ev->tag ? pending_find(x, ev->tag, NULL) : NULL;
        const struct xb_pending_ops *ops;
        void *ctx;

        if (!e)
                return false;
        /* The owner may delete its entry, or add others: copy first. */
        ops = e->ops;
        ctx = e->ctx;
        switch (ev->kind) {
        case XB_IEV_SPAWNED:
                if (ops->spawned)
                        ops->spawned(ctx, ev->pid);
                break;
        case XB_IEV_EXITED:
                if (ops->exited)
                        ops->exited(ctx, ev->status, ev->utime_us + ev->stime_us, ev->maxrss_kb);
                break;
        case XB_IEV_ERROR:
                if (ops->error)
                        ops->error(ctx, ev->errnum, ev->stage);
                break;
        case XB_IEV_FILE:
        case XB_IEV_WATCH:    /* a watch's events reach its file callback */
                if (ops->file) {
                        ops->file(ctx, ev, fds, nfds);
                        nfds = 0;
                }
                break;
        case XB_IEV_READY:
                break;
        }
        for (size_t k = 0; k < nfds; k++)
                close(fds[k]);
        return true;
}

/* The sandbox is going: every owner hears it once, newest first, and its
 * entry leaves the table before it does. */
static void
pending_died(struct xb_sbx *x)
{
        const char *why = x->error[0] ? x->error : NULL;

        while (x->npending) {
                struct xb_pending e = x->pending[--x->npending];

                if (e.ops->died)
                        e.ops->died(e.ctx, why);
        }
}

/* Set up: each owner that waits for it hears it; it may delete its tag. */
static void
pending_ready(struct xb_sbx *x)
{
        for (size_t i = x->npending; i-- > 0;)
                if (i < x->npending && x->pending[i].ops->ready) {
                        struct xb_pending e = x->pending[i];

                        e.ops->ready(e.ctx);
                }
}

void
xb__sbx_ready(struct xb_sbx *x)
{
        x->warm_up = false;
        if (x->state == XB_SBX_STARTING)
                x->state = XB_SBX_READY;
        /* A claimed one (a cold start, or claimed during its warm-up) can
         * outlive the daemon from now on; a pooled one arms at its claim. */
        xb_adopt_arm(x);
        xb__sbx_start_timed(x);
        pending_ready(x);
}

static void
unowned(const struct xb_sbx *x, const struct xb_init_event *ev)
{
        /* Its owner went first (a process forgotten, a session deleted). */
        xb_debug("sandbox %s: init event %d for tag %u, which has no owner", x->id, (int)ev->kind, ev->tag);
}

void
xb_sbx_wait_begin(struct xb_sbx *x)
{
        x->nwaiting++;
}

void
xb_sbx_wait_end(struct xb_sbx *x)
{
        if (x->nwaiting)
                x->nwaiting--;
}

/* Start latency: from the create call until init said it is ready, which
 * for a warm sandbox has usually happened already. */
void
xb__sbx_start_timed(struct xb_sbx *x)
{
        if (!x->start_t0_us || x->state != XB_SBX_READY)
                return;
        xb_hist_observe(x->start_hit ? &x->core->m.start_hit : &x->core->m.start_miss, xb_mono_us() - x->start_t0_us);
        x->start_t0_us = 0;
}

static void
unregister(struct xb_sbx *x)
{
        struct xb_core *s = x->core;

        if (x->pooled) {
                struct xb_sbx **pp = &s->pool;

                while (*pp && *pp != x)
                        pp = &(*pp)->next;
                if (*pp) {
                        *pp = x->next;
                        s->npool--;
                }
                x->pooled = false;
        } else if (tdelete(x, &s->by_id, by_id)) {
                struct xb_tenant_metrics *tm = xb_metrics_tenant(&s->m, x->tenant);

                xb_tomb_add(s, x);
                xb_record_drop(x);
                s->nsandboxes--;
                if (tm)
                        tm->sandboxes--;
        }
}

/* The kernel has reaped init: everything in the sandbox is gone. */
static void
finalize(struct xb_sbx *x)
{
        int r;

        xb_io_stop(&x->pidfd_io);
        xb_io_stop(&x->sock_io);
        if (x->fds_base)
                xb_fds_release(x, XB_FDS_PER_SANDBOX_BASE);
        x->fds_base = false;
        while (x->nnet_keep)
                close(x->net_keep[--x->nnet_keep]);
        r = xb_sandbox_destroy(x->sb);
        x->sb = NULL;
        if (r < 0)
                xb_warn("sandbox %s: cgroup not removed: %s", x->id, strerror(-r));
        xb_template_release(x);
        x->state = XB_SBX_DEAD;
        if (--x->core->ndying == 0 && x->core->stopping)
                xb_loop_stop(x->core->loop);
        xb_sbx_unref(x);
}

static void
on_pidfd(struct xb_io *io, uint32_t events)
{
        struct xb_sbx *x = io->data;

        (void)events;
        if (x->state < XB_SBX_DYING) {
                xb_warn("sandbox %s: init exited unexpectedly", x->id);
                xb_sbx_destroy(x, XB_SBX_CRASHED, "the sandbox's init exited; create a new sandbox");
        }
        finalize(x);
}

static void
on_init_msg(struct xb_io *io, uint32_t events)
{
        struct xb_sbx *x = io->data;
        struct xb_core *s = x->core;

        (void)events;
        /* A bounded batch per wakeup keeps one sandbox from starving the rest. */
        for (int i = 0; i < 64 && x->state < XB_SBX_DYING; i++) {
                struct xb_init_event ev;
                int fds[XB_MSG_MAXFDS];
                size_t nfds = 0;
                int r = xb_initc_recv(x->sb->sock, s->rxbuf, &ev, fds, &nfds);

                if (r == -EAGAIN)
                        return;
                if (r == -EPIPE) {
                        xb_io_stop(&x->sock_io);
                        return;   /* the pidfd reports the death */
                }
                if (r < 0) {
                        xb_warn("sandbox %s: malformed message from init; killing it", x->id);
                        xb_sbx_destroy(x, XB_SBX_BROKEN, "the sandbox broke the init protocol and was killed");
                        return;
                }
                if (pending_event(x, &ev, fds, nfds))
                        continue;
                switch (ev.kind) {
                case XB_IEV_READY:
                        if (x->state == XB_SBX_STARTING) {
                                xb__sbx_network_ready(x);
                                /* Still the pool's: warm up first, ready after. */
                                if (x->warm_up && x->pooled && xb__pool_warm_run(x))
                                        break;
                        }
                        xb__sbx_ready(x);
                        break;
                case XB_IEV_SPAWNED:
                case XB_IEV_EXITED:
                case XB_IEV_WATCH:    /* queued before init saw its unwatch */
                        unowned(x, &ev);
                        break;
                case XB_IEV_ERROR:
                        if (ev.tag == 0) {
                                xb_warn("sandbox %s: %s", x->id, ev.stage);
                                snprintf(x->error, sizeof(x->error), "%s", ev.stage);
                                xb_sbx_destroy(x, XB_SBX_SETUP_FAILED, "the sandbox could not be set up");
                                return;
                        }
                        unowned(x, &ev);
                        break;
                case XB_IEV_FILE:
                        /* A file operation holds its tag until init's reply,
                         * even when its client left: nobody asked for this. */
                        for (size_t k = 0; k < nfds; k++)
                                close(fds[k]);
                        xb_warn("sandbox %s: init sent a reply nobody asked for; killing it", x->id);
                        xb_sbx_destroy(x, XB_SBX_BROKEN, "the sandbox broke the init protocol and was killed");
                        return;
                }
                for (size_t k = 0; k < nfds; k++)
                        close(fds[k]);
        }
}

void
xb_sbx_destroy(struct xb_sbx *x, enum xb_sbx_end end, const char *why)
{
        if (x->state >= XB_SBX_DYING)
                return;
        xb__sbx_thaw(x);   /* frozen tasks would not die */
        x->state = XB_SBX_DYING;
        x->end = end;
        x->core->ndying++;
        if (why && !x->error[0])
                snprintf(x->error, sizeof(x->error), "%s", why);
        xb_timer_stop(&x->expiry);
        unregister(x);
        pending_died(x);
        xb_net_free(x->net);
        x->net = NULL;
        xb_io_stop(&x->sock_io);
        /* Init's death takes the pid namespace down; the pidfd says when. */
        xb_sandbox_kill(x->sb);
        x->core->m.sandboxes_deleted++;
        /* Last: its processes' and cells' ends are logged above. */
        xb_audit_add(x->audit, "delete", json_pack("{s:o}", "reason", xb_audit_str(x->error[0] ? x->error : NULL)));
        xb_audit_close(x->audit);
        x->audit = NULL;
}

int
xb_sbx_gone(const struct xb_sbx *x, const char *why, const char *dflt, struct xb_err *err)
{
        enum xb_ecode code = why && x->end == XB_SBX_EXPIRED ? XB_E_SANDBOX_EXPIRED : XB_E_SANDBOX_GONE;

        return xb_err_code(err, code, ESRCH, NULL, "%s", why ? why : dflt);
}

struct xb_sbx *
xb__sbx_start(struct xb_core *s, const struct xb_limits *l, const struct xb_bind *binds, size_t nbinds,
              const struct xb_root_spec *root, struct xb_err *err)
{
        struct xb_sandbox_config cfg = { .limits = *l, .binds = binds, .nbinds = nbinds, .network = s->net != NULL };
        struct xb_root_spec base = { .kind = s->eng->store ? XB_UPPER_DISK : XB_UPPER_MEMORY, .user = XB_USER_UID };
        struct xb_sbx *x = calloc(1, sizeof(*x));

        if (s->eng->base_root)
                cfg.root = root ? root : &base;
        cfg.bind_uid = cfg.root ? cfg.root->user : XB_USER_UID;

        if (!x) {
                xb_err_set(err, ENOMEM, "sandbox");
                return NULL;
        }
        if (xb_sandbox_start(s->eng, &cfg, &x->sb, err) < 0) {
                free(x);
                return NULL;
        }
        x->core = s;
        x->refs = 1;
        x->limits = *l;
        x->uid = XB_USER_UID;
        x->state = XB_SBX_STARTING;
        memcpy(x->id, x->sb->id, sizeof(x->id));
        x->created_ms = xb_now_ms();
        if (s->net && !(x->net = xb_net_new(s->net, x->id))) {
                xb_sandbox_destroy(x->sb);
                free(x);
                xb_err_set(err, ENOMEM, "sandbox network");
                return NULL;
        }
        if (xb_io_start(s->loop, &x->sock_io, x->sb->sock, EPOLLIN, on_init_msg, x) < 0 ||
            xb_io_start(s->loop, &x->pidfd_io, x->sb->pidfd, EPOLLIN, on_pidfd, x) < 0) {
                xb_io_stop(&x->sock_io);
                xb_net_free(x->net);
                xb_sandbox_destroy(x->sb);
                free(x);
                xb_err_set(err, errno, "watch the sandbox");
                return NULL;
        }
        return x;
}

void
xb__sbx_unlist(struct xb_sbx *x)
{
        struct xb_tenant_metrics *tm = xb_metrics_tenant(&x->core->m, x->tenant);

        if (!tdelete(x, &x->core->by_id, by_id))
                return;
        x->core->nsandboxes--;
        if (tm)
                tm->sandboxes--;
}

void
xb__sbx_adopt_watch(struct xb_sbx *x)
{
        int size = 2 << 20;

        setsockopt(x->sb->sock, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size));
        xb_set_nonblock(x->sb->sock, true);
        if (x->state < XB_SBX_DYING)
                xb_io_start(x->core->loop, &x->sock_io, x->sb->sock, EPOLLIN, on_init_msg, x);
        if (xb_io_start(x->core->loop, &x->pidfd_io, x->sb->pidfd, EPOLLIN, on_pidfd, x) < 0) {
                /* Without its watch its end would never be seen: end it now. */
                xb_sbx_destroy(x, XB_SBX_BROKEN, "the daemon restarted and could not watch the sandbox");
                xb_sandbox_end(x->sb);
                on_pidfd(&x->pidfd_io, 0);
        }
}

int
xb__sbx_register(struct xb_sbx *x)
{
        if (!tsearch(x, &x->core->by_id, by_id))
                return -ENOMEM;
        x->core->nsandboxes++;
        return 0;
}

static void
destroy_one(struct xb_sbx *x, void *data)
{
        xb_sbx_destroy(x, XB_SBX_SHUTDOWN, data);
}

void
xb_sbx_destroy_all(struct xb_core *s)
{
        xb_sbx_foreach(s, destroy_one, "the server is shutting down");
        while (s->pool) {
                struct xb_sbx *x = s->pool;

                xb_sbx_destroy(x, XB_SBX_SHUTDOWN, "the server is shutting down");
        }
}

json_t *
xb_sbx_json(const struct xb_sbx *x)
{
        static const char *const states[] = { "starting", "running", "stopping", "stopped" };
        const char *why;
        uint64_t in = xb_sbx_expires_in(x, &why);
        json_t *w;
        json_t *lim = json_pack("{s:I,s:I,s:f,s:I}", "memory", (json_int_t)x->limits.memory, "pids",
                                (json_int_t)x->limits.pids, "cpus", x->limits.cpus_milli / 1000.0, "disk",
                                (json_int_t)x->limits.disk);

        json_t *j = json_pack("{s:s,s:s,s:o,s:o,s:I,s:I,s:s,s:b,s:I,s:b,s:I,s:I,s:i}", "id", x->id, "state",
                         x->paused ? "paused" : states[x->state], "limits", lim,
                         "metadata", json_incref(x->metadata ? x->metadata : json_null()), "created_at_ms",
                         (json_int_t)(x->created_unix_ms), "expires_in_ms", (json_int_t)in, "expires_because",
                         why, "active", !x->paused && xb_sbx_active(x), "timeout_s", (json_int_t)(x->ttl_ms / 1000),
                         "auto_pause", x->auto_pause, "paused_ttl_s", (json_int_t)(x->paused_ttl_ms / 1000),
                         "max_lifetime_s", (json_int_t)(x->max_lifetime_ms / 1000), "processes", (int)x->nprocs);

        /* Only what differs from a plain sandbox, so older clients' replies stay as they were. */
        if (j && x->uid == 0)
                json_object_set_new(j, "user", json_string("root"));
        if (j && x->tmpl)
                json_object_set_new(j, "template", json_string(x->tmpl->name));
        if (j && (w = xb_sbx_secrets_waiting(x)))
                json_object_set_new(j, "secrets_waiting", w);
        return j;
}
