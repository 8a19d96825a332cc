/* Sandboxes as the server sees them: registry, creation (pooled or cold),
 * init's events and the pending tags they reach their owners by, the
 * waiter count that holds off expiry, and teardown. */
#define _GNU_SOURCE
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "proc/env.h"
#include "proc/initc.h"
#include "core/audit.h"
#include "core/core.h"
#include "core/sessions.h"

static int
by_id(const void *a, const void *b)
{
        return strcmp(((const struct xb_sbx *)a)->id, ((const struct xb_sbx *)b)->id);
}

struct xb_sbx *
xb_sbx_find(struct xb_server *s, const char *id, int tenant)
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
        return x->tenant == tenant ? x : NULL;
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
xb_sbx_foreach(struct xb_server *s, void (*fn)(struct xb_sbx *x, void *data), void *data)
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

        xb_strv_free(x->env);
        json_decref(x->metadata);
        free(x->pending);
        free(x);
}

void
xb_sbx_unref(struct xb_sbx *x)
{
        if (--x->refs == 0)
                xb_loop_defer(x->srv->loop, &x->defer, sbx_free, x);
}

uint32_t
xb_sbx_tag(struct xb_sbx *x)
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
                tag = xb_sbx_tag(x);
        while (pending_find(x, tag, &i));
        memmove(&x->pending[i + 1], &x->pending[i], (x->npending - i) * sizeof(*x->pending));
        x->pending[i] = (struct xb_pending){ .tag = tag, .ops = ops, .ctx = ctx };
        x->npending++;
        return tag;
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

static void
unregister(struct xb_sbx *x)
{
        struct xb_server *s = x->srv;

        if (x->pooled) {
                struct xb_sbx **pp = &s->pool;

                while (*pp && *pp != x)
                        pp = &(*pp)->next;
                if (*pp) {
                        *pp = x->next;
                        s->npool--;
                }
                x->pooled = false;
        } else if (tdelete(x, &s->by_id, by_id))
                s->nsandboxes--;
}

/* The kernel has reaped init: everything in the sandbox is gone. */
static void
finalize(struct xb_sbx *x)
{
        int r;

        xb_io_stop(&x->pidfd_io);
        xb_io_stop(&x->sock_io);
        r = xb_sandbox_destroy(x->sb);
        x->sb = NULL;
        if (r < 0)
                xb_warn("sandbox %s: cgroup not removed: %s", x->id, strerror(-r));
        x->state = XB_SBX_DEAD;
        if (--x->srv->ndying == 0 && x->srv->stopping)
                xb_loop_stop(x->srv->loop);
        xb_sbx_unref(x);
}

static void
on_pidfd(struct xb_io *io, uint32_t events)
{
        struct xb_sbx *x = io->data;

        (void)events;
        if (x->state < XB_SBX_DYING) {
                xb_warn("sandbox %s: init exited unexpectedly", x->id);
                xb_sbx_destroy(x, "the sandbox's init exited; create a new sandbox");
        }
        finalize(x);
}

static void
on_init_msg(struct xb_io *io, uint32_t events)
{
        struct xb_sbx *x = io->data;
        struct xb_server *s = x->srv;

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
                        xb_sbx_destroy(x, "the sandbox broke the init protocol and was killed");
                        return;
                }
                if (pending_event(x, &ev, fds, nfds))
                        continue;
                switch (ev.kind) {
                case XB_IEV_READY:
                        if (x->state == XB_SBX_STARTING)
                                x->state = XB_SBX_READY;
                        break;
                case XB_IEV_SPAWNED:
                        if (!xb_session_on_spawned(x, ev.tag, ev.pid))
                                unowned(x, &ev);
                        break;
                case XB_IEV_EXITED:
                        if (!xb_session_on_exited(x, ev.tag, ev.status))
                                unowned(x, &ev);
                        break;
                case XB_IEV_ERROR:
                        if (ev.tag == 0) {
                                xb_warn("sandbox %s: %s", x->id, ev.stage);
                                snprintf(x->error, sizeof(x->error), "%s", ev.stage);
                                xb_sbx_destroy(x, "the sandbox could not be set up");
                                return;
                        }
                        if (!xb_session_on_error(x, ev.tag, ev.errnum, ev.stage))
                                unowned(x, &ev);
                        break;
                case XB_IEV_FILE:
                        xb_fileop_on_reply(x, &ev, fds, nfds);
                        nfds = 0;
                        break;
                }
                for (size_t k = 0; k < nfds; k++)
                        close(fds[k]);
        }
}

static void
on_expiry(struct xb_timer *t)
{
        struct xb_sbx *x = t->data;

        /* A client waiting on a command or cell keeps the sandbox: its lease
         * runs out once nobody is waiting (E2B users lose work to this). */
        if (xb_sbx_busy(x)) {
                xb_timer_start(x->srv->loop, &x->expiry, 10000, on_expiry, x);
                return;
        }
        x->srv->m.sandboxes_expired++;
        xb_info("sandbox %s expired", x->id);
        xb_sbx_destroy(x, "the sandbox expired; extend it with POST /v1/sandboxes/{id}/keepalive");
}

void
xb_sbx_touch(struct xb_sbx *x, uint64_t ttl_ms)
{
        if (ttl_ms)
                x->ttl_ms = ttl_ms;
        x->expires_ms = xb_now_ms() + x->ttl_ms;
        xb_timer_start(x->srv->loop, &x->expiry, x->ttl_ms, on_expiry, x);
}

void
xb_sbx_destroy(struct xb_sbx *x, const char *why)
{
        if (x->state >= XB_SBX_DYING)
                return;
        x->state = XB_SBX_DYING;
        x->srv->ndying++;
        if (why && !x->error[0])
                snprintf(x->error, sizeof(x->error), "%s", why);
        xb_timer_stop(&x->expiry);
        unregister(x);
        pending_died(x);
        xb_fileop_sandbox_died(x);
        xb_sessions_sandbox_died(x);
        xb_io_stop(&x->sock_io);
        /* Init's death takes the pid namespace down; the pidfd says when. */
        xb_sandbox_kill(x->sb);
        x->srv->m.sandboxes_deleted++;
        /* Last: its processes' and cells' ends are logged above. */
        xb_audit_add(x->audit, "delete", json_pack("{s:o}", "reason", xb_audit_str(x->error[0] ? x->error : NULL)));
        xb_audit_close(x->audit);
        x->audit = NULL;
}

static struct xb_sbx *
start(struct xb_server *s, const struct xb_limits *l, const struct xb_bind *binds, size_t nbinds,
      struct xb_err *err)
{
        struct xb_sandbox_config cfg = { .limits = *l, .binds = binds, .nbinds = nbinds };
        struct xb_sbx *x = calloc(1, sizeof(*x));

        if (!x) {
                xb_err_set(err, ENOMEM, "sandbox");
                return NULL;
        }
        if (xb_sandbox_start(s->eng, &cfg, &x->sb, err) < 0) {
                free(x);
                return NULL;
        }
        x->srv = s;
        x->refs = 1;
        x->limits = *l;
        x->state = XB_SBX_STARTING;
        memcpy(x->id, x->sb->id, sizeof(x->id));
        x->created_ms = xb_now_ms();
        if (xb_io_start(s->loop, &x->sock_io, x->sb->sock, EPOLLIN, on_init_msg, x) < 0 ||
            xb_io_start(s->loop, &x->pidfd_io, x->sb->pidfd, EPOLLIN, on_pidfd, x) < 0) {
                xb_io_stop(&x->sock_io);
                xb_sandbox_destroy(x->sb);
                free(x);
                xb_err_set(err, errno, "watch the sandbox");
                return NULL;
        }
        return x;
}

/* ---- the warm pool ---- */

static void
pool_tick(struct xb_timer *t)
{
        xb_pool_fill(t->data);
}

void
xb_pool_fill(struct xb_server *s)
{
        /* One per tick: a burst of creations must not stall requests. */
        if (s->stopping || s->npool >= s->o.pool_size ||
            s->nsandboxes + s->npool >= s->o.max_sandboxes)
                return;
        {
                struct xb_err err = { 0 };
                struct xb_sbx *x = start(s, &s->o.defaults, NULL, 0, &err);

                if (!x) {
                        xb_warn("pool: %s", err.msg);
                        xb_timer_start(s->loop, &s->pool_timer, 1000, pool_tick, s);
                        return;
                }
                x->pooled = true;
                if (s->o.pool_python) {
                        struct xb_session *ss = xb_session_start(x, "python", true, &err);

                        if (ss)
                                xb_session_mark_warm(ss);
                        else
                                xb_warn("pool: no warm Python session: %s", err.msg);
                }
                x->next = s->pool;
                s->pool = x;
                s->npool++;
        }
        if (s->npool < s->o.pool_size)
                xb_timer_start(s->loop, &s->pool_timer, 0, pool_tick, s);
}

/* Memory, pids and cpus change on a claim (if the cgroup cannot, the claim
 * fails and a cold start follows); the disk size and mounts are fixed when
 * a sandbox starts. */
static bool
pool_fits(const struct xb_server *s, const struct xb_limits *l, size_t nbinds)
{
        return nbinds == 0 && l->disk == s->o.defaults.disk;
}

static struct xb_sbx *
claim(struct xb_server *s, const struct xb_limits *l, struct xb_err *err)
{
        struct xb_sbx *x = s->pool, **pp = &s->pool;

        /* Prefer one that is ready. */
        for (struct xb_sbx **q = &s->pool; *q; q = &(*q)->next)
                if ((*q)->state == XB_SBX_READY) {
                        pp = q;
                        x = *q;
                        break;
                }
        if (!x)
                return NULL;
        /* A warm interpreter (--pool-python) uses ~110 MiB of the sandbox's
         * memory: a lower limit would OOM-kill it, or be refused. */
        if (l->memory < x->limits.memory && xb_session_has_warm(x))
                return NULL;
        if (memcmp(l, &x->limits, sizeof(*l)) != 0) {
                struct xb_cgroup_limits cl = { .memory = l->memory, .pids = l->pids, .cpus_milli = l->cpus_milli };

                if (xb_cgroup_set_limits(x->sb->cg, &cl, err) < 0)
                        return NULL;
                x->limits = *l;
        }
        *pp = x->next;
        x->next = NULL;
        x->pooled = false;
        s->npool--;
        return x;
}

/* Why a start failed, for the client: a mount it may not make, the host's
 * limit, or the server's trouble. */
static int
create_error(struct xb_err *err)
{
        if (err->code == EPERM || err->code == EINVAL || err->code == ENOENT)
                err->ecode = XB_E_INVALID_MOUNT;
        else if (err->code == EAGAIN)
                err->ecode = XB_E_TOO_MANY_SANDBOXES;
        else
                err->ecode = XB_E_SANDBOX_FAILED;
        return -err->code;
}

/* Its log opens with the create event: limits, lease, mounts and the env's names. */
static void
audit_create(struct xb_sbx *x, const struct xb_bind *binds, size_t nbinds, uint64_t ttl_ms)
{
        json_t *mounts = json_array();

        x->audit = xb_audit_open(x->srv->audits, x->id, x->tenant);
        for (size_t i = 0; mounts && i < nbinds; i++)
                json_array_append_new(mounts, json_pack("{s:o,s:o,s:b}", "host", xb_audit_str(binds[i].host), "path",
                                                        xb_audit_str(binds[i].dest), "readonly", !binds[i].rw));
        xb_audit_add(x->audit, "create",
                     json_pack("{s:o,s:I,s:o,s:o}", "limits", json_pack("{s:I,s:I,s:f,s:I}", "memory",
                                                                       (json_int_t)x->limits.memory, "pids",
                                                                       (json_int_t)x->limits.pids, "cpus",
                                                                       x->limits.cpus_milli / 1000.0, "disk",
                                                                       (json_int_t)x->limits.disk),
                               "timeout_s", (json_int_t)(ttl_ms / 1000), "env", xb_audit_env_names(x->env), "mounts",
                               mounts));
}

int
xb_sbx_create(struct xb_server *s, int tenant, const struct xb_limits *l, const struct xb_bind *binds, size_t nbinds,
              char **env, json_t *metadata, uint64_t ttl_ms, struct xb_sbx **ret, struct xb_err *err)
{
        struct xb_sbx *x = NULL;

        if (s->nsandboxes >= s->o.max_sandboxes)
                return xb_err_code(err, XB_E_TOO_MANY_SANDBOXES, EAGAIN,
                                   NULL, "the server runs %u sandboxes, its limit; delete some first", s->nsandboxes);
        if (pool_fits(s, l, nbinds)) {
                struct xb_err ignored = { 0 };

                x = claim(s, l, &ignored);
        }
        if (x)
                s->m.pool_hits++;
        else {
                s->m.pool_misses++;
                x = start(s, l, binds, nbinds, err);
                if (!x)
                        return create_error(err);
        }
        x->tenant = tenant;
        x->env = env;
        {
                struct timespec ts;

                clock_gettime(CLOCK_REALTIME, &ts);
                x->created_unix_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
        }
        x->metadata = metadata ? json_incref(metadata) : json_object();
        x->created_ms = xb_now_ms();
        if (!tsearch(x, &s->by_id, by_id)) {
                x->env = NULL;
                xb_sbx_destroy(x, NULL);
                xb_err_set(err, ENOMEM, "register the sandbox");
                return create_error(err);
        }
        s->nsandboxes++;
        s->m.sandboxes_created++;
        audit_create(x, binds, nbinds, ttl_ms ? ttl_ms : XB_TTL_DEFAULT_MS);
        xb_sbx_touch(x, ttl_ms ? ttl_ms : XB_TTL_DEFAULT_MS);
        /* Refill a little later: a start costs a millisecond of the loop, and
         * the client's first exec is probably on its way now. */
        if (!s->pool_timer.active)
                xb_timer_start(s->loop, &s->pool_timer, XB_POOL_REFILL_DELAY_MS, pool_tick, s);
        *ret = x;
        return 0;
}

static void
destroy_one(struct xb_sbx *x, void *data)
{
        xb_sbx_destroy(x, data);
}

void
xb_sbx_destroy_all(struct xb_server *s)
{
        xb_sbx_foreach(s, destroy_one, "the server is shutting down");
        while (s->pool) {
                struct xb_sbx *x = s->pool;

                xb_sbx_destroy(x, "the server is shutting down");
        }
}

json_t *
xb_sbx_json(const struct xb_sbx *x)
{
        static const char *const states[] = { "starting", "running", "stopping", "stopped" };
        uint64_t now = xb_now_ms();
        json_t *lim = json_pack("{s:I,s:I,s:f,s:I}", "memory", (json_int_t)x->limits.memory, "pids",
                                (json_int_t)x->limits.pids, "cpus", x->limits.cpus_milli / 1000.0, "disk",
                                (json_int_t)x->limits.disk);

        return json_pack("{s:s,s:s,s:o,s:o,s:I,s:I,s:I,s:i}", "id", x->id, "state", states[x->state], "limits", lim,
                         "metadata", json_incref(x->metadata ? x->metadata : json_null()), "created_at_ms",
                         (json_int_t)(x->created_unix_ms), "expires_in_ms",
                         (json_int_t)(x->expires_ms > now ? x->expires_ms - now : 0), "timeout_s",
                         (json_int_t)(x->ttl_ms / 1000), "processes", (int)x->nprocs);
}
