/* One sandbox's groups: made (v2 at once, v1's hierarchies when the
 * sandbox is complete), joined by its init, killed, frozen, measured and
 * removed. All access is relative to directory fds; no path joining. */
#define _GNU_SOURCE
#include "cgroup_int.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/fd.h"

int
cg_mkgroup(int parent, const char *name)
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
                        cg_kill_listed(fd);
                if (fd >= 0 && cg_remove_group(parent, name, &fd) < 0)
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
                cg->v2 = cg_mkgroup(sys->v2_root, cg->name);
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
                                                   : cg_mkgroup(sys->v1_root[j], cg->name);
                        if (cg->v1[i] >= 0 || cg->v1[j] >= 0)
                                continue;
                } else
                        cg->v1[i] = cg_mkgroup(sys->v1_root[i], cg->name);
                if (cg->v1[i] < 0) {
                        r = xb_err_set(err, -cg->v1[i], "create %s cgroup %s", cg_ctl_names[i], cg->name);
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
                        return xb_err_set(err, -r, "attach %d to %s cgroup %s", (int)pid, cg_ctl_names[i], cg->name);
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
                        return xb_err_set(err, e, "open %s cgroup %s", cg_ctl_names[i], cg->name);
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
int
cg_kill_listed(int dir)
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

void
cg_sleep_us(long us)
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
                cg_kill_listed(cg->v2);
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
                        cg_sleep_us(100);
                }
                cg_kill_listed(fz);
                return xb_write_file_at(fz, "freezer.state", "THAWED");
        }
        /* No freezer: kill until the list stays empty (forks race us). */
        for (int i = 0; i < 100 && cg_kill_listed(cg->v1[CTL_PIDS]) > 0; i++)
                cg_sleep_us(100);
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
                        cg_sleep_us(50);
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

uint64_t
xb_cgroup_oom_kills(struct xb_cgroup *cg)
{
        if (cg->sys->mode == XB_CG_V2)
                return read_keyed(cg->v2, "memory.events", "oom_kill");
        return read_keyed(cg->v1[CTL_MEMORY], "memory.oom_control", "oom_kill");
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

int
cg_remove_group(int root, const char *name, int *groupfd)
{
        close_fd(groupfd);
        for (int i = 0; i < 200; i++) {
                if (unlinkat(root, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
                        return 0;
                if (errno != EBUSY)
                        return -errno;
                /* Tasks still exiting; they leave the group before being reaped. */
                cg_sleep_us(500);
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
                if ((e = cg_remove_group(sys->v1_root[i], cg->name, &cg->v1[i])) < 0 && !r)
                        r = e;
        }
        if (cg->v2 >= 0 && (e = cg_remove_group(sys->v2_root, cg->name, &cg->v2)) < 0 && !r)
                r = e;
        free(cg);
        return r;
}

int
xb_cgroup_open(struct xb_cgroup_sys *sys, const char *name, const struct xb_cgroup_limits *l,
               struct xb_cgroup **ret, struct xb_err *err)
{
        struct xb_cgroup *cg = calloc(1, sizeof(*cg));

        if (!cg)
                return xb_err_set(err, ENOMEM, "cgroup");
        cg->sys = sys;
        cg->limits = *l;
        cg->v2 = cg->oom_fd = cg->oom_ctl_fd = -1;
        for (int i = 0; i < NCTL; i++)
                cg->v1[i] = -1;
        snprintf(cg->name, sizeof(cg->name), "%s-%s", sys->prefix, name);
        /* Opened, never made: cg_mkgroup would kill what runs there. */
        if (sys->v2_root >= 0 && (cg->v2 = openat(sys->v2_root, cg->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                goto fail;
        if (sys->mode == XB_CG_V2)
                cg->oom_fd = openat(cg->v2, "memory.events", O_RDONLY | O_CLOEXEC);
        for (int i = 0; sys->mode != XB_CG_V2 && i < NCTL; i++) {
                int root = sys->v1_alias[i] >= 0 ? sys->v1_root[sys->v1_alias[i]] : sys->v1_root[i];

                if (sys->v1_root[i] < 0 && sys->v1_alias[i] < 0)
                        continue;
                if (root < 0 || !v1_needed(sys, i, l))
                        continue;
                if ((cg->v1[i] = openat(root, cg->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                        goto fail;
        }
        if (sys->mode != XB_CG_V2)
                arm_oom_v1(cg);
        cg->complete = true;
        *ret = cg;
        return 0;
fail:
        {
                int e = errno;

                xb_err_set(err, e, "open cgroup %s", cg->name);
                xb_cgroup_close(cg);
                return -e;
        }
}

void
xb_cgroup_close(struct xb_cgroup *cg)
{
        if (!cg)
                return;
        close_fd(&cg->v2);
        close_fd(&cg->oom_fd);
        close_fd(&cg->oom_ctl_fd);
        for (int i = 0; i < NCTL; i++)
                close_fd(&cg->v1[i]);
        free(cg);
}
