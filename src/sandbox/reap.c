/* Cgroups of sandboxes whose owner is gone (sandbox.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "sandbox/sandbox.h"

static void
reap_one(const char *name, void *data)
{
        struct xb_engine *e = data;
        char *end;
        unsigned long slot;

        if (name[0] != 'u')
                return;
        slot = strtoul(name + 1, &end, 10);
        if (*end || end == name + 1 || slot >= e->uids.nslots)
                return;
        /* Free slot, existing group: its owner died. Held slot: a live sandbox. */
        if (xb_uidpool_try(&e->uids, (uint32_t)slot) == 0) {
                xb_cgroup_remove_stale(e->cgroups, name, true);
                xb_uidpool_release(&e->uids, (uint32_t)slot);
        }
}

void
xb_engine_reap_slot(struct xb_engine *e, uint32_t slot)
{
        char name[32];

        if (slot >= e->uids.nslots)
                return;
        snprintf(name, sizeof(name), "u%u", slot);
        if (xb_uidpool_try(&e->uids, slot) == 0) {
                xb_cgroup_remove_stale(e->cgroups, name, true);
                xb_uidpool_release(&e->uids, slot);
        } else {
                /* Another execbox took the slot since (they are shared by
                 * the machine): the group of our prefix is ours still, but
                 * only an empty one may go. */
                xb_cgroup_remove_stale(e->cgroups, name, false);
        }
}

int
xb_engine_reap_stale(struct xb_engine *e)
{
        return xb_cgroup_sys_names(e->cgroups, reap_one, e);
}
