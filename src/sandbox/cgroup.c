/* cgroup backends.
 *
 * v2: one group <root>/<prefix>-<name> with memory, pids and cpu enabled in
 * the root's subtree_control. Kill is cgroup.kill (Linux 5.14); older
 * kernels freeze with cgroup.freeze and kill each task.
 *
 * v1 (and hybrid): one group per hierarchy, only those needed: memory,
 * pids and cpu (for the equal CPU weight) always. On hybrid hosts a companion
 * group in the v2 hierarchy (which has no controllers there) provides
 * cgroup.kill and cpu.stat; without one, cpuacct gives CPU time and the
 * freezer stops the group while each task is killed. v1 has no group OOM:
 * callers see OOMs through xb_cgroup_oom_fd() and the oom_kill counter.
 *
 * All access is relative to directory fds; no path joining. */
#define _GNU_SOURCE
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>

#include "base/cleanup.h"
#include "base/fd.h"

enum { CTL_MEMORY, CTL_PIDS, CTL_CPU, CTL_CPUACCT, CTL_FREEZER, NCTL };
static const char *const ctl_names[NCTL] = { "memory", "pids", "cpu", "cpuacct", "freezer" };

struct xb_cgroup_sys {
        enum xb_cgroup_mode mode;      /* XB_CG_V1 or XB_CG_V2 after detection */
        int v1_root[NCTL];             /* hierarchy roots, -1 if not mounted */
        int v1_alias[NCTL];            /* -1, or an earlier controller co-mounted with it */
        int v2_root;                   /* v2 root: the v2 mode, or the hybrid companion */
        bool v2_has_kill;
        bool force_freezer;
        char prefix[32];
        char desc[32];
};

struct xb_cgroup {
        struct xb_cgroup_sys *sys;
        char name[96];                 /* "<prefix>-<name>" */
        int v1[NCTL];
        int v2;
        int oom_fd;
        int oom_ctl_fd;                /* v1: memory.oom_control, kept for the eventfd */
        struct xb_cgroup_limits limits;
        bool complete;                 /* every hierarchy made and limited */
};

static void
close_fd(int *fd)
{
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

/* One pass over mountinfo: where each v1 controller and the v2 tree are. */
static int
find_mounts(char v1[NCTL][256], char *v2, size_t v2len)
{
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        char line[4096];

        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                char *sep = strstr(line, " - ");
                char mnt[256], fstype[64], src[256], opts[1024];

                if (!sep || sscanf(line, "%*s %*s %*s %*s %255s", mnt) != 1 ||
                    sscanf(sep + 3, "%63s %255s %1023s", fstype, src, opts) != 3)
                        continue;
                if (strcmp(fstype, "cgroup2") == 0 && !v2[0])
                        snprintf(v2, v2len, "%s", mnt);
                else if (strcmp(fstype, "cgroup") == 0)
                        for (char *save = NULL, *t = strtok_r(opts, ",", &save); t; t = strtok_r(NULL, ",", &save))
                                for (int i = 0; i < NCTL; i++)
                                        if (strcmp(t, ctl_names[i]) == 0 && !v1[i][0])
                                                snprintf(v1[i], sizeof(v1[i]), "%s", mnt);
        }
        return 0;
}

/* The usual hybrid layout, checked without reading mountinfo: each
 * controller at /sys/fs/cgroup/NAME (proved by a file only it has), the v2
 * tree at /sys/fs/cgroup/unified. False sends the caller to mountinfo. */
static bool
usual_hybrid(char v1[NCTL][256], char *v2, size_t v2len)
{
        static const char *const proof[NCTL] = { "memory.limit_in_bytes", "pids.max", "cpu.cfs_quota_us",
                                                 "cpuacct.usage", "freezer.state" };
        struct statfs sfs;

        for (int i = 0; i < NCTL; i++) {
                char path[256];

                snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/%s", ctl_names[i], proof[i]);
                if (access(path, F_OK) < 0)
                        return false;
                snprintf(v1[i], sizeof(v1[i]), "/sys/fs/cgroup/%s", ctl_names[i]);
        }
        if (statfs("/sys/fs/cgroup/unified", &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC)
                snprintf(v2, v2len, "/sys/fs/cgroup/unified");
        return true;
}

static bool
v2_has_controllers(int rootfd)
{
        _cleanup_free_ char *s = NULL;
        int have = 0;

        if (xb_read_file_at(rootfd, "cgroup.controllers", 4096, &s, NULL) < 0)
                return false;
        for (char *save = NULL, *t = strtok_r(s, " \n", &save); t; t = strtok_r(NULL, " \n", &save))
                have |= strcmp(t, "memory") == 0 ? 1 : strcmp(t, "pids") == 0 ? 2 : strcmp(t, "cpu") == 0 ? 4 : 0;
        return have == 7;
}

int
xb_cgroup_mode_parse(const char *s, enum xb_cgroup_mode *ret, struct xb_err *err)
{
        if (strcmp(s, "auto") == 0)
                *ret = XB_CG_AUTO;
        else if (strcmp(s, "v1") == 0)
                *ret = XB_CG_V1;
        else if (strcmp(s, "v2") == 0)
                *ret = XB_CG_V2;
        else
                return xb_err_msg(err, EINVAL, "use auto, v1 or v2");
        return 0;
}

int
xb_cgroup_prefix_check(const char *s, struct xb_err *err)
{
        size_t n = strlen(s);

        /* It names directories under every hierarchy's root, so "<prefix>-u<slot>" must fit a
         * group name and stay one path component. */
        if (n < 1 || n > XB_CGROUP_PREFIX_MAX || s[0] == '.' || s[0] == '-' ||
            strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != n)
                return xb_err_msg(err, EINVAL, "write 1 to %d letters, digits, `_`, `.` or `-`, such as "
                                  "execbox or execbox-ci1", XB_CGROUP_PREFIX_MAX);
        return 0;
}

int
xb_cgroup_sys_open(enum xb_cgroup_mode mode, const char *prefix, struct xb_cgroup_sys **ret,
                   struct xb_err *err)
{
        _cleanup_free_ struct xb_cgroup_sys *sys = calloc(1, sizeof(*sys));
        char v1[NCTL][256] = { { 0 } }, v2[256] = "";
        struct statfs sfs;
        bool v2_usable = false;
        int r;

        if (!sys)
                return xb_err_set(err, ENOMEM, "cgroup");
        snprintf(sys->prefix, sizeof(sys->prefix), "%s", prefix);
        sys->v2_root = -1;
        for (int i = 0; i < NCTL; i++)
                sys->v1_root[i] = sys->v1_alias[i] = -1;

        if (statfs("/sys/fs/cgroup", &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC)
                snprintf(v2, sizeof(v2), "/sys/fs/cgroup");
        else if (!usual_hybrid(v1, v2, sizeof(v2)) && (r = find_mounts(v1, v2, sizeof(v2))) < 0)
                return xb_err_set(err, -r, "read /proc/self/mountinfo");
        if (v2[0]) {
                sys->v2_root = open(v2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (sys->v2_root < 0)
                        return xb_err_set(err, errno, "open %s", v2);
                v2_usable = v2_has_controllers(sys->v2_root);
                sys->v2_has_kill = faccessat(sys->v2_root, "cgroup.kill", F_OK, 0) == 0 ||
                                   /* the root has no cgroup.kill; children do from 5.14 */
                                   faccessat(sys->v2_root, "cgroup.stat", F_OK, 0) == 0;
        }
        if (mode == XB_CG_AUTO)
                mode = v2_usable ? XB_CG_V2 : XB_CG_V1;
        sys->mode = mode;

        if (mode == XB_CG_V2) {
                if (sys->v2_root < 0)
                        return xb_err_msg(err, ENOENT, "no cgroup2 hierarchy is mounted");
                /* Delegate memory, pids and cpu to the root's children. */
                if (xb_write_file_at(sys->v2_root, "cgroup.subtree_control", "+memory +pids +cpu") < 0 &&
                    !v2_usable) {
                        close_fd(&sys->v2_root);
                        return xb_err_msg(err, ENOTSUP, "cgroup2 at %s lacks the memory, pids or cpu "
                                          "controller; they may be bound to cgroup v1 (try --cgroup v1)", v2);
                }
                snprintf(sys->desc, sizeof(sys->desc), "v2");
                *ret = TAKE_PTR(sys);
                return 0;
        }
        for (int i = 0; i < NCTL; i++) {
                if (!v1[i][0]) {
                        if (i == CTL_MEMORY || i == CTL_PIDS) {
                                xb_cgroup_sys_close(TAKE_PTR(sys));
                                return xb_err_msg(err, ENOENT, "the cgroup v1 %s controller is not mounted; "
                                                  "mount it or use cgroup v2", ctl_names[i]);
                        }
                        continue;
                }
                for (int j = 0; j < i && sys->v1_alias[i] < 0; j++)
                        if (v1[j][0] && strcmp(v1[i], v1[j]) == 0)
                                sys->v1_alias[i] = j;
                sys->v1_root[i] = open(v1[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (sys->v1_root[i] < 0) {
                        r = xb_err_set(err, errno, "open %s", v1[i]);
                        xb_cgroup_sys_close(TAKE_PTR(sys));
                        return r;
                }
        }
        if (sys->v2_root >= 0 && !sys->v2_has_kill)
                close_fd(&sys->v2_root);
        snprintf(sys->desc, sizeof(sys->desc), sys->v2_root >= 0 ? "v1+unified" : "v1");
        *ret = TAKE_PTR(sys);
        return 0;
}

void
xb_cgroup_sys_close(struct xb_cgroup_sys *sys)
{
        if (!sys)
                return;
        for (int i = 0; i < NCTL; i++)
                close_fd(&sys->v1_root[i]);
        close_fd(&sys->v2_root);
        free(sys);
}

const char *
xb_cgroup_sys_describe(const struct xb_cgroup_sys *sys)
{
        return sys->desc;
}

bool
xb_cgroup_sys_has_kill(const struct xb_cgroup_sys *sys)
{
        return sys->v2_root >= 0 && sys->v2_has_kill && !sys->force_freezer;
}

void
xb_cgroup_sys_force_freezer(struct xb_cgroup_sys *sys, bool on)
{
        sys->force_freezer = on;
}

const char *
xb_cgroup_name(const struct xb_cgroup *cg)
{
        return cg->name;
}

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

static int kill_listed(int dir);
static int remove_group(int root, const char *name, int *groupfd);

static int
mkgroup(int parent, const char *name)
{
        int fd;

        if (mkdirat(parent, name, 0755) < 0) {
                if (errno != EEXIST)
                        return -errno;
                /* Names are unique among live groups (a held uid slot), so
                 * this one is a dead owner's leftover: start afresh, without
                 * its tasks, limits or charges. */
                fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd >= 0 && xb_write_file_at(fd, "cgroup.kill", "1") < 0)
                        kill_listed(fd);
                if (fd >= 0 && remove_group(parent, name, &fd) < 0)
                        return -EBUSY;
                if (mkdirat(parent, name, 0755) < 0)
                        return -errno;
        }
        fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                int e = errno;

                /* Out of fds, say: the group must not outlive this failure. */
                unlinkat(parent, name, AT_REMOVEDIR);
                return -e;
        }
        return fd;
}

/* v1 has no memory.events: an eventfd registered on memory.oom_control
 * fires on every OOM in the group. */
static void
arm_oom_v1(struct xb_cgroup *cg)
{
        _cleanup_close_ int ctl = openat(cg->v1[CTL_MEMORY], "memory.oom_control", O_RDONLY | O_CLOEXEC);
        _cleanup_close_ int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        _cleanup_close_ int evc = openat(cg->v1[CTL_MEMORY], "cgroup.event_control", O_WRONLY | O_CLOEXEC);
        char s[64];

        snprintf(s, sizeof(s), "%d %d", efd, ctl);
        if (ctl >= 0 && efd >= 0 && evc >= 0 && write(evc, s, strlen(s)) > 0) {
                cg->oom_fd = TAKE_FD(efd);
                cg->oom_ctl_fd = TAKE_FD(ctl);
        }
}

/* Which v1 hierarchies a group uses. */
static bool
v1_needed(const struct xb_cgroup_sys *sys, int i, const struct xb_cgroup_limits *l)
{
        switch (i) {
        case CTL_MEMORY:
        case CTL_PIDS:
                return true;
        case CTL_CPU:
                (void)l;
                return true;             /* every sandbox gets its equal CPU weight */
        case CTL_CPUACCT:
                return sys->v2_root < 0;         /* else cpu.stat of the companion */
        case CTL_FREEZER:
                return sys->force_freezer || sys->v2_root < 0 || !sys->v2_has_kill;
        }
        return false;
}

int
xb_cgroup_create(struct xb_cgroup_sys *sys, const char *name, const struct xb_cgroup_limits *l,
                 struct xb_cgroup **ret, struct xb_err *err)
{
        struct xb_cgroup *cg = calloc(1, sizeof(*cg));
        int r;

        if (!cg)
                return xb_err_set(err, ENOMEM, "cgroup");
        cg->sys = sys;
        cg->limits = *l;
        cg->v2 = cg->oom_fd = cg->oom_ctl_fd = -1;
        for (int i = 0; i < NCTL; i++)
                cg->v1[i] = -1;
        snprintf(cg->name, sizeof(cg->name), "%s-%s", sys->prefix, name);

        if (sys->v2_root >= 0) {
                cg->v2 = mkgroup(sys->v2_root, cg->name);
                if (cg->v2 < 0) {
                        r = xb_err_set(err, -cg->v2, "create cgroup %s", cg->name);
                        cg->v2 = -1;
                        goto fail;
                }
        }
        if (sys->mode == XB_CG_V2) {
                cg->oom_fd = openat(cg->v2, "memory.events", O_RDONLY | O_CLOEXEC);
                if ((r = xb_cgroup_set_limits(cg, l, err)) < 0)
                        goto fail;
                cg->complete = true;
        }
        *ret = cg;
        return 0;
fail:
        xb_cgroup_destroy(cg);
        return r;
}

int
xb_cgroup_complete(struct xb_cgroup *cg, struct xb_err *err)
{
        struct xb_cgroup_sys *sys = cg->sys;
        int r;

        if (cg->complete)
                return 0;
        for (int i = 0; i < NCTL; i++) {
                if (sys->v1_root[i] < 0 || !v1_needed(sys, i, &cg->limits))
                        continue;
                if (sys->v1_alias[i] >= 0) {
                        /* Co-mounted with an earlier controller (cpu,cpuacct). */
                        int j = sys->v1_alias[i];

                        cg->v1[i] = cg->v1[j] >= 0 ? fcntl(cg->v1[j], F_DUPFD_CLOEXEC, 3)
                                                   : mkgroup(sys->v1_root[j], cg->name);
                        if (cg->v1[i] >= 0 || cg->v1[j] >= 0)
                                continue;
                } else
                        cg->v1[i] = mkgroup(sys->v1_root[i], cg->name);
                if (cg->v1[i] < 0) {
                        r = xb_err_set(err, -cg->v1[i], "create %s cgroup %s", ctl_names[i], cg->name);
                        cg->v1[i] = -1;
                        return r;
                }
        }
        arm_oom_v1(cg);
        if ((r = xb_cgroup_set_limits(cg, &cg->limits, err)) < 0)
                return r;
        cg->complete = true;
        return 0;
}

int
xb_cgroup_attach(struct xb_cgroup *cg, pid_t pid, struct xb_err *err)
{
        char s[32];
        int r;

        snprintf(s, sizeof(s), "%d", (int)pid);
        if (cg->v2 >= 0 && (r = xb_write_file_at(cg->v2, "cgroup.procs", s)) < 0)
                return xb_err_set(err, -r, "attach %d to cgroup %s", (int)pid, cg->name);
        for (int i = 0; i < NCTL; i++) {
                if (cg->v1[i] < 0 || cg->sys->v1_alias[i] >= 0)
                        continue;
                if ((r = xb_write_file_at(cg->v1[i], "cgroup.procs", s)) < 0)
                        return xb_err_set(err, -r, "attach %d to %s cgroup %s", (int)pid, ctl_names[i], cg->name);
        }
        return 0;
}

int
xb_cgroup_clone_fd(struct xb_cgroup *cg)
{
        return cg->v2;
}

int
xb_cgroup_join_open(struct xb_cgroup *cg, struct xb_cgroup_join *j, struct xb_err *err)
{
        j->clone_fd = cg->v2;
        for (int i = 0; i < NCTL; i++)
                j->tasks[i] = -1;
        for (int i = 0; i < NCTL; i++) {
                if (cg->v1[i] < 0 || cg->sys->v1_alias[i] >= 0)
                        continue;
                j->tasks[i] = openat(cg->v1[i], "tasks", O_WRONLY | O_CLOEXEC);
                if (j->tasks[i] < 0) {
                        int e = errno;

                        xb_cgroup_join_close(j);
                        return xb_err_set(err, e, "open %s cgroup %s", ctl_names[i], cg->name);
                }
        }
        return 0;
}

int
xb_cgroup_join_self(const struct xb_cgroup_join *j)
{
        for (int i = 0; i < NCTL; i++)
                if (j->tasks[i] >= 0 && write(j->tasks[i], "0", 1) != 1)
                        return -errno;
        return 0;
}

void
xb_cgroup_join_close(struct xb_cgroup_join *j)
{
        for (int i = 0; i < NCTL; i++)
                close_fd(&j->tasks[i]);
        j->clone_fd = -1;   /* borrowed from the group */
}

/* Send SIGKILL to every pid listed in dir/cgroup.procs; returns how many. */
static int
kill_listed(int dir)
{
        _cleanup_free_ char *s = NULL;
        int n = 0;

        if (xb_read_file_at(dir, "cgroup.procs", 1 << 20, &s, NULL) < 0)
                return 0;
        for (char *save = NULL, *t = strtok_r(s, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
                pid_t pid = (pid_t)strtol(t, NULL, 10);

                if (pid > 1) {
                        kill(pid, SIGKILL);
                        n++;
                }
        }
        return n;
}

static void
sleep_us(long us)
{
        struct timespec ts = { .tv_sec = 0, .tv_nsec = us * 1000 };

        nanosleep(&ts, NULL);
}

int
xb_cgroup_kill(struct xb_cgroup *cg)
{
        struct xb_cgroup_sys *sys = cg->sys;

        if (cg->v2 >= 0 && sys->v2_has_kill && !sys->force_freezer &&
            xb_write_file_at(cg->v2, "cgroup.kill", "1") == 0)
                return 0;
        if (sys->mode == XB_CG_V2) {
                /* Before 5.14: freeze so nothing forks while we kill. */
                xb_write_file_at(cg->v2, "cgroup.freeze", "1");
                kill_listed(cg->v2);
                return xb_write_file_at(cg->v2, "cgroup.freeze", "0");
        }
        if (cg->v1[CTL_FREEZER] >= 0) {
                int fz = cg->v1[CTL_FREEZER];

                xb_write_file_at(fz, "freezer.state", "FROZEN");
                for (int i = 0; i < 1000; i++) {
                        _cleanup_free_ char *st = NULL;

                        if (xb_read_file_at(fz, "freezer.state", 64, &st, NULL) < 0 ||
                            strncmp(st, "FROZEN", 6) == 0)
                                break;
                        sleep_us(100);
                }
                kill_listed(fz);
                return xb_write_file_at(fz, "freezer.state", "THAWED");
        }
        /* No freezer: kill until the list stays empty (forks race us). */
        for (int i = 0; i < 100 && kill_listed(cg->v1[CTL_PIDS]) > 0; i++)
                sleep_us(100);
        return 0;
}

static uint64_t
mono_us(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Whether the kernel has finished freezing: v2 says "frozen 1" in
 * cgroup.events, v1 moves freezer.state from FREEZING to FROZEN. */
static bool
freeze_done(int dir, bool v2)
{
        _cleanup_free_ char *st = NULL;

        if (xb_read_file_at(dir, v2 ? "cgroup.events" : "freezer.state", 4096, &st, NULL) < 0)
                return false;
        return v2 ? strstr(st, "frozen 1") != NULL : strncmp(st, "FROZEN", 6) == 0;
}

/* Pausing: the v2 group's cgroup.freeze (the hybrid companion holds every
 * task too), else the v1 freezer. Freezing is asynchronous: a task stops
 * when it next leaves the kernel, so wait for it, a bounded time (a task
 * stuck in uninterruptible sleep would hold the loop). */
int
xb_cgroup_freeze(struct xb_cgroup *cg, bool frozen)
{
        bool v2 = cg->v2 >= 0;
        int dir = v2 ? cg->v2 : cg->v1[CTL_FREEZER];
        uint64_t t0;
        int r;

        if (dir < 0)
                return -EOPNOTSUPP;
        r = v2 ? xb_write_file_at(dir, "cgroup.freeze", frozen ? "1" : "0")
               : xb_write_file_at(dir, "freezer.state", frozen ? "FROZEN" : "THAWED");
        if (r < 0 || !frozen)
                return r;
        t0 = mono_us();
        for (unsigned i = 0; !freeze_done(dir, v2); i++) {
                if (mono_us() - t0 > XB_CGROUP_FREEZE_WAIT_US)
                        return -ETIMEDOUT;
                if (i < 64)
                        sched_yield();
                else
                        sleep_us(50);
        }
        return 0;
}

static uint64_t
read_u64(int dir, const char *file)
{
        _cleanup_free_ char *s = NULL;

        if (dir < 0 || xb_read_file_at(dir, file, 64, &s, NULL) < 0)
                return 0;
        return strtoull(s, NULL, 10);
}

/* "key value" lines, as in cpu.stat, memory.events and memory.oom_control. */
static uint64_t
read_keyed(int dir, const char *file, const char *key)
{
        _cleanup_free_ char *s = NULL;
        size_t klen = strlen(key);

        if (dir < 0 || xb_read_file_at(dir, file, 8192, &s, NULL) < 0)
                return 0;
        for (char *save = NULL, *t = strtok_r(s, "\n", &save); t; t = strtok_r(NULL, "\n", &save))
                if (strncmp(t, key, klen) == 0 && t[klen] == ' ')
                        return strtoull(t + klen + 1, NULL, 10);
        return 0;
}

int
xb_cgroup_stats(struct xb_cgroup *cg, struct xb_cgroup_stats *st)
{
        memset(st, 0, sizeof(*st));
        /* cpu.stat exists in every v2 group, controllers or not. */
        if (cg->v2 >= 0)
                st->cpu_ns = read_keyed(cg->v2, "cpu.stat", "usage_usec") * 1000;
        if (cg->sys->mode == XB_CG_V2) {
                st->memory_current = read_u64(cg->v2, "memory.current");
                st->memory_peak = read_u64(cg->v2, "memory.peak");
                if (!st->memory_peak)
                        st->memory_peak = st->memory_current;
                st->oom_kills = read_keyed(cg->v2, "memory.events", "oom_kill");
                st->pids_current = read_u64(cg->v2, "pids.current");
                return 0;
        }
        if (cg->v1[CTL_CPUACCT] >= 0)
                st->cpu_ns = read_u64(cg->v1[CTL_CPUACCT], "cpuacct.usage");
        st->memory_current = read_u64(cg->v1[CTL_MEMORY], "memory.usage_in_bytes");
        st->memory_peak = read_u64(cg->v1[CTL_MEMORY], "memory.max_usage_in_bytes");
        st->oom_kills = read_keyed(cg->v1[CTL_MEMORY], "memory.oom_control", "oom_kill");
        st->pids_current = read_u64(cg->v1[CTL_PIDS], "pids.current");
        return 0;
}

int
xb_cgroup_oom_fd(struct xb_cgroup *cg)
{
        return cg->oom_fd;
}

bool
xb_cgroup_empty(struct xb_cgroup *cg)
{
        int dir = cg->v2 >= 0 ? cg->v2 : cg->v1[CTL_PIDS];
        _cleanup_free_ char *s = NULL;

        if (dir < 0 || xb_read_file_at(dir, "cgroup.procs", 64, &s, NULL) < 0)
                return true;
        return s[0] == '\0';
}

static int
remove_group(int root, const char *name, int *groupfd)
{
        close_fd(groupfd);
        for (int i = 0; i < 200; i++) {
                if (unlinkat(root, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
                        return 0;
                if (errno != EBUSY)
                        return -errno;
                /* Tasks still exiting; they leave the group before being reaped. */
                sleep_us(500);
        }
        return -EBUSY;
}

int
xb_cgroup_destroy(struct xb_cgroup *cg)
{
        struct xb_cgroup_sys *sys;
        int r = 0, e;

        if (!cg)
                return 0;
        sys = cg->sys;
        if (!xb_cgroup_empty(cg))
                xb_cgroup_kill(cg);
        close_fd(&cg->oom_fd);
        close_fd(&cg->oom_ctl_fd);
        for (int i = 0; i < NCTL; i++) {
                if (cg->v1[i] < 0)
                        continue;
                if (sys->v1_alias[i] >= 0) {
                        close_fd(&cg->v1[i]);
                        continue;
                }
                if ((e = remove_group(sys->v1_root[i], cg->name, &cg->v1[i])) < 0 && !r)
                        r = e;
        }
        if (cg->v2 >= 0 && (e = remove_group(sys->v2_root, cg->name, &cg->v2)) < 0 && !r)
                r = e;
        free(cg);
        return r;
}

int
xb_cgroup_remove_stale(struct xb_cgroup_sys *sys, const char *name, bool kill)
{
        char full[96];
        int roots[NCTL + 1], n = 0, removed = 0;

        snprintf(full, sizeof(full), "%s-%s", sys->prefix, name);
        for (int i = 0; i < NCTL; i++)
                if (sys->v1_root[i] >= 0 && sys->v1_alias[i] < 0)
                        roots[n++] = sys->v1_root[i];
        if (sys->v2_root >= 0)
                roots[n++] = sys->v2_root;
        for (int k = 0; k < n; k++) {
                int fd = openat(roots[k], full, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                if (fd < 0)
                        continue;
                if (!kill) {
                        close(fd);
                        removed += unlinkat(roots[k], full, AT_REMOVEDIR) == 0;
                        continue;
                }
                /* Its owner is dead (the caller holds its uid slot), but
                 * tasks may linger if the owner died before its init did. */
                if (xb_write_file_at(fd, "cgroup.kill", "1") < 0)
                        kill_listed(fd);
                if (remove_group(roots[k], full, &fd) == 0)
                        removed++;
        }
        return removed;
}

/* Every hierarchy is read: a start that failed half-way (out of fds) may
 * have left a group in one controller only. A name is reported once, from
 * the first root that has it. */
int
xb_cgroup_sys_names(struct xb_cgroup_sys *sys, void (*fn)(const char *name, void *data), void *data)
{
        int roots[NCTL + 1], nroots = 0, n = 0;
        size_t plen = strlen(sys->prefix);

        if (sys->v2_root >= 0)
                roots[nroots++] = sys->v2_root;
        for (int i = 0; i < NCTL; i++)
                if (sys->v1_root[i] >= 0 && sys->v1_alias[i] < 0)
                        roots[nroots++] = sys->v1_root[i];
        for (int k = 0; k < nroots; k++) {
                _cleanup_close_ int fd = openat(roots[k], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                _cleanup_closedir_ DIR *d = xb_take_fdopendir(&fd);
                struct dirent *de;
                bool seen;

                if (!d)
                        return n ? n : -errno;
                while ((de = readdir(d))) {
                        if (strncmp(de->d_name, sys->prefix, plen) || de->d_name[plen] != '-')
                                continue;
                        seen = false;
                        for (int j = 0; j < k && !seen; j++)
                                seen = faccessat(roots[j], de->d_name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
                        if (seen)
                                continue;
                        fn(de->d_name + plen + 1, data);
                        n++;
                }
        }
        return n;
}
