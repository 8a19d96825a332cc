/* Creating sandboxes: a claim from the warm pool when one fits, else a
 * cold start (sbx.c), then registration and the lease. The pool refills
 * one sandbox per timer tick, starting a little after each creation; each
 * runs a warm-up before it is ready (pool_warm.c); with --pool-python
 * each pooled sandbox also starts a Python session, hidden until a client
 * asks for one. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "core/audit.h"
#include "core/quota.h"
#include "core/sbx_int.h"
#include "core/sessions.h"

static void
pool_tick(struct xb_timer *t)
{
        xb_pool_fill(t->data);
}

void
xb_pool_fill(struct xb_core *s)
{
        /* One per tick: a burst of creations must not stall requests. */
        if (s->stopping || s->draining || s->npool >= s->o.pool_size ||
            s->nsandboxes + s->npool >= s->o.max_sandboxes)
                return;
        {
                struct xb_err err = { 0 };
                struct xb_sbx *x = xb_space_check(s, &err) < 0 ? NULL
                                                                 : xb__sbx_start(s, &s->o.defaults, NULL, 0, NULL, &err);

                if (!x) {
                        xb_warn("pool: %s", err.msg);
                        xb_timer_start(s->loop, &s->pool_timer, 1000, pool_tick, s);
                        return;
                }
                x->pooled = true;
                x->warm_up = true;
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
pool_fits(const struct xb_core *s, const struct xb_limits *l, size_t nbinds)
{
        return nbinds == 0 && l->disk == s->o.defaults.disk;
}

static struct xb_sbx *
claim(struct xb_core *s, const struct xb_limits *l, struct xb_err *err)
{
        struct xb_sbx *x = s->pool, **pp = &s->pool;

        /* Prefer one that is ready (a warming one is still starting). */
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
        else if (err->code == EMFILE || err->code == ENFILE || err->code == ENOMEM || err->code == ENOSPC ||
                 err->code == ENOBUFS || err->code == EEXIST || err->code == EBUSY || err->code == EDQUOT ||
                 err->code == EROFS)
                err->ecode = XB_E_SANDBOX_UNAVAILABLE;   /* the host is short of something: 503, retry */
        else
                err->ecode = XB_E_SANDBOX_FAILED;
        return -err->code;
}

/* Its log opens with the create event: limits, lease, mounts and the env's names. */
static void
audit_create(struct xb_sbx *x, const struct xb_bind *binds, size_t nbinds, uint64_t ttl_ms)
{
        json_t *mounts = json_array();

        x->audit = xb_audit_open(x->core->audits, x->id, x->tenant);
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
xb_sbx_create(struct xb_core *s, int tenant, const struct xb_limits *l, const struct xb_bind *binds, size_t nbinds,
              char **env, json_t *metadata, uint64_t ttl_ms, struct xb_sbx **ret, struct xb_err *err)
{
        return xb_sbx_create_root(s, tenant, l, binds, nbinds, NULL, env, metadata, ttl_ms, ret, err);
}

int
xb_sbx_create_root(struct xb_core *s, int tenant, const struct xb_limits *l, const struct xb_bind *binds,
                   size_t nbinds, const struct xb_root_spec *root, char **env, json_t *metadata, uint64_t ttl_ms,
                   struct xb_sbx **ret, struct xb_err *err)
{
        struct xb_sbx *x = NULL;
        struct xb_tenant_metrics *tm = xb_metrics_tenant(&s->m, tenant);
        uint64_t t0 = xb_mono_us();

        if (s->draining || s->stopping)
                return xb_err_code(err, XB_E_SHUTTING_DOWN, ESHUTDOWN, NULL,
                                   "the server is stopping (it drains the requests in flight) and makes no new "
                                   "sandboxes");
        if (s->nsandboxes >= s->o.max_sandboxes)
                return xb_err_code(err, XB_E_TOO_MANY_SANDBOXES, EAGAIN,
                                   NULL, "the server runs %u sandboxes, its limit; delete some first", s->nsandboxes);
        if (xb_fds_check(s, tenant, NULL, XB_FDS_PER_SANDBOX_BASE, err) < 0)
                return -EMFILE;
        if (xb_quota_check_create(s, tenant, l, err) < 0)
                return -EAGAIN;
        if (xb_space_check(s, err) < 0)
                return -ENOSPC;
        if (!root && pool_fits(s, l, nbinds)) {
                struct xb_err ignored = { 0 };

                x = claim(s, l, &ignored);
        }
        if (x) {
                s->m.pool_hits++;
                x->start_hit = true;
        } else {
                s->m.pool_misses++;
                x = xb__sbx_start(s, l, binds, nbinds, root, err);
                if (!x)
                        return create_error(err);
        }
        x->tenant = tenant;
        x->env = env;
        x->fds_base = xb_fds_charge(x, XB_FDS_PER_SANDBOX_BASE, NULL) == 0;
        {
                struct timespec ts;

                clock_gettime(CLOCK_REALTIME, &ts);
                x->created_unix_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
        }
        x->metadata = metadata ? json_incref(metadata) : json_object();
        x->created_ms = xb_now_ms();
        if (xb__sbx_register(x) < 0) {
                x->env = NULL;   /* the caller's again */
                xb_sbx_destroy(x, XB_SBX_SETUP_FAILED, NULL);
                xb_err_set(err, ENOMEM, "register the sandbox");
                return create_error(err);
        }
        s->m.sandboxes_created++;
        if (tm) {
                tm->sandboxes++;
                tm->sandboxes_created++;
        }
        x->start_t0_us = t0;
        xb__sbx_start_timed(x);
        audit_create(x, binds, nbinds, ttl_ms ? ttl_ms : XB_TTL_DEFAULT_MS);
        x->paused_ttl_ms = s->o.paused_ttl_ms ? s->o.paused_ttl_ms : XB_PAUSED_TTL_DEFAULT_MS;
        x->max_lifetime_ms = s->o.max_lifetime_ms ? s->o.max_lifetime_ms : XB_LIFETIME_MAX_DEFAULT_MS;
        xb_sbx_touch(x, ttl_ms ? ttl_ms : XB_TTL_DEFAULT_MS);
        xb_record_save(x);
        /* A claim from the pool is ready already; a cold start arms at ready. */
        if (x->state == XB_SBX_READY)
                xb_adopt_arm(x);
        /* Refill a little later: a start costs a millisecond of the loop, and
         * the client's first exec is probably on its way now. */
        if (!s->pool_timer.active)
                xb_timer_start(s->loop, &s->pool_timer, XB_POOL_REFILL_DELAY_MS, pool_tick, s);
        *ret = x;
        return 0;
}

