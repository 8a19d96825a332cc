/* A sandbox's cgroup limits: memory (no swap), pids, a CPU quota and the
 * equal CPU weight, in v2 or in v1's hierarchies. */
#define _GNU_SOURCE
#include "cgroup_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "base/fd.h"

/* Fair CPU: every sandbox has the same weight, half the default that the
 * daemon's own cgroup (or, on v1, each of its tasks) has, so a sandbox full
 * of spinning processes takes no more than an idle one's share from the
 * others, and the daemon that serves them all comes first. */
#define XB_CG_CPU_WEIGHT "50"            /* v2 cpu.weight; the default is 100 */
#define XB_CG_CPU_SHARES "512"           /* v1 cpu.shares; the default is 1024 */

static int
write_u64(int dir, const char *file, uint64_t v)
{
        char s[32];

        snprintf(s, sizeof(s), "%" PRIu64, v);
        return xb_write_file_at(dir, file, s);
}

static int
set_limits_v2(struct xb_cgroup *cg, const struct xb_cgroup_limits *l, struct xb_err *err)
{
        char s[64];
        int r;

        r = l->memory ? write_u64(cg->v2, "memory.max", l->memory) : xb_write_file_at(cg->v2, "memory.max", "max");
        if (r < 0)
                return xb_err_set(err, -r, "set memory.max");
        /* No swap: the limit is real memory. Absent without swap accounting. */
        r = xb_write_file_at(cg->v2, "memory.swap.max", "0");
        if (r < 0 && r != -ENOENT)
                return xb_err_set(err, -r, "set memory.swap.max");
        r = xb_write_file_at(cg->v2, "memory.oom.group", l->oom_group ? "1" : "0");
        if (r < 0 && r != -ENOENT)
                return xb_err_set(err, -r, "set memory.oom.group");
        r = l->pids ? write_u64(cg->v2, "pids.max", l->pids) : xb_write_file_at(cg->v2, "pids.max", "max");
        if (r < 0)
                return xb_err_set(err, -r, "set pids.max");
        if (l->cpus_milli)
                snprintf(s, sizeof(s), "%" PRIu64 " 100000", (uint64_t)l->cpus_milli * 100);
        else
                snprintf(s, sizeof(s), "max 100000");
        if ((r = xb_write_file_at(cg->v2, "cpu.max", s)) < 0)
                return xb_err_set(err, -r, "set cpu.max");
        if ((r = xb_write_file_at(cg->v2, "cpu.weight", XB_CG_CPU_WEIGHT)) < 0)
                return xb_err_set(err, -r, "set cpu.weight");
        return 0;
}

static int
set_limits_v1(struct xb_cgroup *cg, const struct xb_cgroup_limits *l, struct xb_err *err)
{
        int mem = cg->v1[CTL_MEMORY];
        char s[32];
        const char *v = "-1";
        int r;

        /* -1 is unlimited. memsw must stay >= the limit, so lift it first. */
        if (l->memory)
                snprintf(s, sizeof(s), "%" PRIu64, l->memory), v = s;
        xb_write_file_at(mem, "memory.memsw.limit_in_bytes", "-1");
        if ((r = xb_write_file_at(mem, "memory.limit_in_bytes", v)) < 0)
                return xb_err_set(err, -r, "set memory.limit_in_bytes");
        r = xb_write_file_at(mem, "memory.memsw.limit_in_bytes", v);
        if (r < 0 && r != -ENOENT)
                return xb_err_set(err, -r, "set memory.memsw.limit_in_bytes");
        xb_write_file_at(mem, "memory.swappiness", "0");
        r = l->pids ? write_u64(cg->v1[CTL_PIDS], "pids.max", l->pids)
                    : xb_write_file_at(cg->v1[CTL_PIDS], "pids.max", "max");
        if (r < 0)
                return xb_err_set(err, -r, "set pids.max");
        if (cg->v1[CTL_CPU] < 0)
                return l->cpus_milli ? xb_err_msg(err, ENOTSUP, "this sandbox was created without a CPU limit; "
                                                  "create a new one with cpus set") : 0;
        if ((r = xb_write_file_at(cg->v1[CTL_CPU], "cpu.shares", XB_CG_CPU_SHARES)) < 0)
                return xb_err_set(err, -r, "set cpu.shares");
        if ((r = xb_write_file_at(cg->v1[CTL_CPU], "cpu.cfs_period_us", "100000")) < 0)
                return xb_err_set(err, -r, "set cpu.cfs_period_us");
        r = l->cpus_milli ? write_u64(cg->v1[CTL_CPU], "cpu.cfs_quota_us", (uint64_t)l->cpus_milli * 100)
                          : xb_write_file_at(cg->v1[CTL_CPU], "cpu.cfs_quota_us", "-1");
        if (r < 0)
                return xb_err_set(err, -r, "set cpu.cfs_quota_us");
        return 0;
}

int
xb_cgroup_set_limits(struct xb_cgroup *cg, const struct xb_cgroup_limits *l, struct xb_err *err)
{
        int r = cg->sys->mode == XB_CG_V2 ? set_limits_v2(cg, l, err) : set_limits_v1(cg, l, err);

        if (r == 0)
                cg->limits = *l;
        return r;
}
