/* Pausing a sandbox: its cgroup frozen, so it costs no CPU while its
 * memory and processes stay. A client's pause holds until it resumes:
 * uses in between fail XB_E_SANDBOX_PAUSED (xb_sbx_use). A pause by
 * auto_pause at the idle TTL, or by an idle MCP client, lasts until the
 * next use, which resumes it. Deleting resumes it so that its tasks can
 * die. While paused, its paused TTL runs instead of its idle clock. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "base/log.h"
#include "core/core.h"

int
xb_sbx_pause(struct xb_sbx *x, bool auto_resume, struct xb_err *err)
{
        int r;

        if (x->paused) {
                /* A client's pause outranks an automatic one. */
                x->pause_auto = x->pause_auto && auto_resume;
                return 0;
        }
        if (x->state != XB_SBX_READY || x->pooled)
                return xb_err_msg(err, EBUSY, "only a running sandbox can be paused");
        /* Someone waits on its work, or on a file operation with init. */
        if (xb_sbx_busy(x) || x->nfileops > x->nfileops_bg)
                return xb_err_msg(err, EBUSY, "the sandbox is busy: a client waits on its work");
        r = xb_sandbox_freeze(x->sb, true);
        if (r < 0) {
                xb_sandbox_freeze(x->sb, false);
                if (r == -ETIMEDOUT)
                        return xb_err_msg(err, EBUSY, "the sandbox's processes did not stop within %u ms",
                                          XB_CGROUP_FREEZE_WAIT_US / 1000);
                return xb_err_set(err, -r, "cannot freeze sandbox %s", x->id);
        }
        x->paused = true;
        x->pause_auto = auto_resume;
        x->paused_until_ms = xb_now_ms() + x->paused_ttl_ms;
        x->core->npaused++;
        x->core->m.pauses++;
        xb_sbx_arm(x);
        if (x->armed)
                xb_record_save(x);   /* the next daemon pauses it again */
        xb_debug("sandbox %s paused", x->id);
        return 0;
}

void
xb__sbx_thaw(struct xb_sbx *x)
{
        int r;

        if (!x->paused)
                return;
        x->paused = false;
        x->pause_auto = false;
        x->core->npaused--;
        r = xb_sandbox_freeze(x->sb, false);
        if (r < 0 && r != -ESRCH)
                xb_warn("cannot thaw sandbox %s: %s", x->id, strerror(-r));
        else
                xb_debug("sandbox %s resumed", x->id);
        if (x->armed && x->state < XB_SBX_DYING)
                xb_record_save(x);
}

void
xb_sbx_resume(struct xb_sbx *x)
{
        if (!x->paused)
                return;
        xb__sbx_thaw(x);
        xb_sbx_touch(x, 0);
}

struct xb_sbx *
xb_sbx_use(struct xb_core *s, const char *id, int tenant, struct xb_err *err)
{
        struct xb_sbx *x = xb_sbx_find(s, id, tenant);

        if (!x) {
                const struct xb_tomb *t = xb_tomb_find(s, id, tenant);

                /* One that ended lately: 410 with why (tombs.c). */
                if (t)
                        xb_tomb_err(t, err);
                else
                        xb_err_code(err, XB_E_SANDBOX_NOT_FOUND, ENOENT, NULL, "no sandbox with id `%.64s`",
                                    id ? id : "");
                return NULL;
        }
        if (x->paused && !x->pause_auto) {
                xb_err_code(err, XB_E_SANDBOX_PAUSED, EAGAIN, NULL, "sandbox %s is paused", x->id);
                return NULL;
        }
        xb_sbx_resume(x);   /* whoever asks to use it is about to */
        return x;
}
