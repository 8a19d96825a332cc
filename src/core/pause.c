/* Pausing a sandbox: its cgroup frozen, so an abandoned one costs no CPU
 * until it expires. A paused sandbox looks the same to every caller except
 * in its state ("paused"): finding it (xb_sbx_find) resumes it first, and
 * deleting it resumes it so that its tasks can die. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "base/log.h"
#include "core/core.h"

int
xb_sbx_pause(struct xb_sbx *x, struct xb_err *err)
{
        int r;

        if (x->paused)
                return 0;
        if (x->state != XB_SBX_READY || x->pooled)
                return xb_err_msg(err, EBUSY, "only a running sandbox can be paused");
        /* Someone waits on its work, or a file operation is with init. */
        if (xb_sbx_busy(x) || x->nfileops)
                return xb_err_msg(err, EBUSY, "the sandbox is busy");
        r = xb_sandbox_freeze(x->sb, true);
        if (r < 0)
                return xb_err_set(err, -r, "cannot freeze sandbox %s", x->id);
        x->paused = true;
        xb_debug("sandbox %s paused", x->id);
        return 0;
}

void
xb_sbx_resume(struct xb_sbx *x)
{
        int r;

        if (!x->paused)
                return;
        x->paused = false;
        r = xb_sandbox_freeze(x->sb, false);
        if (r < 0 && r != -ESRCH)
                xb_warn("cannot thaw sandbox %s: %s", x->id, strerror(-r));
        else
                xb_debug("sandbox %s resumed", x->id);
}
