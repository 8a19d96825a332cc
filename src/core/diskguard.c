/* Sandboxes' writes never fill the daemon's own state.
 *
 * Each sandbox's layer has its disk limit (a btrfs qgroup), but the layer
 * store is a sparse image in the state directory (or the state directory
 * itself, on btrfs): the limits together may exceed what that filesystem
 * has free, and then sandboxes fill it, the daemon's records, tombstones
 * and token writes fail, and the store, writing through its loop device,
 * turns read-only for everyone. So a timer watches the free space; below
 * XB_STATE_RESERVE + XB_STATE_GUARD every layer is clamped (its writes get
 * EDQUOT, as at its own limit; reads and deletions go on, and freed space
 * goes back to the filesystem through discard), and the pkgcache and the
 * creates (space.c) stop at the reserve. The guard covers what a sandbox
 * can write between two checks and what it wrote to its page cache before
 * the clamp. Above twice the guard the limits come back. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/statvfs.h>

#include "base/log.h"
#include "core/core.h"
#include "core/rootfs.h"

static void
clamp_one(struct xb_sbx *x, void *data)
{
        bool on = *(bool *)data;

        int r;

        if (x->sb && (r = xb_sandbox_disk_clamp(x->sb, on)) < 0 && r != -ENOENT)
                xb_warn("sandbox %s: cannot %s its disk: %s", x->id, on ? "clamp" : "unclamp", strerror(-r));
}

static void
set_tight(struct xb_core *s, bool on, uint64_t avail)
{
        s->disk_tight = on;
        xb_log_record(on ? XB_LOG_WARN : XB_LOG_INFO, "disk",
                      on ? "the state directory %s has %llu MiB free: sandboxes' layers take no more writes"
                         : "the state directory %s has %llu MiB free again: sandboxes' layers take writes",
                      s->o.state_dir, (unsigned long long)(avail >> 20));
}

static void
tick(struct xb_timer *t)
{
        struct xb_core *s = t->data;
        struct statvfs st;

        if (statvfs(s->o.state_dir, &st) == 0) {
                uint64_t avail = (uint64_t)st.f_bavail * st.f_frsize;

                if (!s->disk_tight && avail < XB_STATE_RESERVE + XB_STATE_GUARD)
                        set_tight(s, true, avail);
                else if (s->disk_tight && avail >= XB_STATE_RESERVE + 2 * XB_STATE_GUARD)
                        set_tight(s, false, avail);
        }
        /* Every tick while tight: sandboxes made since are clamped too. */
        if (s->disk_tight || s->disk_was_tight) {
                bool on = s->disk_tight;

                xb_sbx_foreach(s, clamp_one, &on);
                xb_rootfs_clamp(s, on);
                s->disk_was_tight = on;
        }
        xb_timer_start(s->loop, &s->disk_timer, XB_STATE_GUARD_MS, tick, s);
}

void
xb_diskguard_start(struct xb_core *s)
{
        if (!s->o.state_dir || !s->eng->store)
                return;
        xb_timer_start(s->loop, &s->disk_timer, XB_STATE_GUARD_MS, tick, s);
}

void
xb_diskguard_stop(struct xb_core *s)
{
        xb_timer_stop(&s->disk_timer);
}
