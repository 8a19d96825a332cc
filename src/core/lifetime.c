/* When a sandbox ends: the rules of xb_sbx_touch (core.h) on one timer.
 * The timer fires at the earliest deadline; a sandbox that is active then
 * has its idle clock held, and is looked at again every
 * XB_ACTIVE_POLL_MS, so that it ends one idle TTL after its work did. */
#define _GNU_SOURCE
#include "base/log.h"
#include "core/core.h"
#include "core/sessions.h"

bool
xb_sbx_active(const struct xb_sbx *x)
{
        return xb_sbx_busy(x) || xb_proc_any_running(x) || xb_session_any_busy(x);
}

enum rule { IDLE, PAUSED_TTL, MAX_LIFETIME };
static const char *const rule_names[] = { "idle", "paused_ttl", "max_lifetime" };

/* The deadline (monotonic ms) that ends x if nothing changes. */
static uint64_t
deadline(const struct xb_sbx *x, uint64_t now, bool active, enum rule *why)
{
        uint64_t d = x->expires_ms;
        enum rule w = IDLE;

        if (x->paused) {
                d = x->paused_until_ms;
                w = PAUSED_TTL;
        } else if (active && !x->fixed_deadline && d < now + x->ttl_ms) {
                d = now + x->ttl_ms;   /* the idle clock is held */
        }
        if (x->max_lifetime_ms && x->created_ms + x->max_lifetime_ms <= d) {
                d = x->created_ms + x->max_lifetime_ms;
                w = MAX_LIFETIME;
        }
        if (why)
                *why = w;
        return d;
}

uint64_t
xb_sbx_expires_in(const struct xb_sbx *x, const char **why)
{
        enum rule r;
        uint64_t now = xb_now_ms(), d = deadline(x, now, !x->paused && xb_sbx_active(x), &r);

        if (why)
                *why = rule_names[r];
        return d > now ? d - now : 0;
}

static void on_expiry(struct xb_timer *t);

void
xb_sbx_arm(struct xb_sbx *x)
{
        uint64_t now = xb_now_ms(), d;

        if (x->state >= XB_SBX_DYING)
                return;
        d = deadline(x, now, false, NULL);
        xb_timer_start(x->core->loop, &x->expiry, d > now ? d - now : 0, on_expiry, x);
}

static void
on_expiry(struct xb_timer *t)
{
        struct xb_sbx *x = t->data;
        uint64_t now = xb_now_ms(), d;
        bool active = !x->paused && !x->fixed_deadline && xb_sbx_active(x);
        enum rule why;
        struct xb_err err = { 0 };

        d = deadline(x, now, active, &why);
        if (d > now) {
                if (active) {
                        /* Work runs: the idle clock starts again when it ends. */
                        x->expires_ms = now + x->ttl_ms;
                        d = d - now < XB_ACTIVE_POLL_MS ? d - now : XB_ACTIVE_POLL_MS;
                        xb_timer_start(x->core->loop, &x->expiry, d, on_expiry, x);
                } else {
                        xb_timer_start(x->core->loop, &x->expiry, d - now, on_expiry, x);
                }
                return;
        }
        if (why == MAX_LIFETIME) {
                x->core->m.sandboxes_expired++;
                xb_info("sandbox %s reached its maximum lifetime", x->id);
                xb_sbx_destroy(x, XB_SBX_EXPIRED, "the sandbox reached its maximum lifetime (max_lifetime_s)");
                return;
        }
        if (!x->paused && x->auto_pause) {
                if (xb_sbx_pause(x, !x->auto_pause_manual, &err) == 0) {
                        xb_info("sandbox %s paused at its idle TTL", x->id);
                        return;
                }
                xb_warn("sandbox %s: cannot pause at its idle TTL: %s", x->id, err.msg);
                xb_timer_start(x->core->loop, &x->expiry, XB_ACTIVE_POLL_MS, on_expiry, x);
                return;
        }
        x->core->m.sandboxes_expired++;
        xb_info("sandbox %s expired (%s)", x->id, rule_names[why]);
        xb_sbx_destroy(x, XB_SBX_EXPIRED, x->paused ? "the sandbox expired while paused (paused_ttl_s)"
                                                    : "the sandbox expired");
}

void
xb_sbx_touch(struct xb_sbx *x, uint64_t ttl_ms)
{
        if (ttl_ms)
                x->ttl_ms = ttl_ms;
        x->expires_ms = xb_now_ms() + x->ttl_ms;
        xb_sbx_arm(x);
}

void
xb_sbx_used(struct xb_sbx *x)
{
        if (!x->fixed_deadline)
                xb_sbx_touch(x, 0);
}
