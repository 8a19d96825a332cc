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
#include "cgroup_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/log.h"

const char *const cg_ctl_names[NCTL] = { "memory", "pids", "cpu", "cpuacct", "freezer" };

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
                                        if (strcmp(t, cg_ctl_names[i]) == 0 && !v1[i][0])
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

                snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/%s", cg_ctl_names[i], proof[i]);
                if (access(path, F_OK) < 0)
                        return false;
                snprintf(v1[i], sizeof(v1[i]), "/sys/fs/cgroup/%s", cg_ctl_names[i]);
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

/* Pure v2: the sandboxes' parent is the root, or (1) the daemon's own
 * delegated subtree (cgroup_v2.c), whose fd then replaces the root's. */
static int
v2_parent(struct xb_cgroup_sys *sys, struct xb_err *err)
{
        _cleanup_free_ char *text = NULL;
        char own[512];
        int fd;

        if (xb_read_file_at(AT_FDCWD, "/proc/self/cgroup", 1 << 16, &text, NULL) < 0 ||
            cg_v2_self(text, own, sizeof(own)) < 0 || !cg_v2_delegated(sys->v2_root, own))
                return 0;
        fd = cg_v2_take_subtree(sys->v2_root, own, err);
        if (fd < 0)
                return fd;
        close(sys->v2_root);
        sys->v2_root = fd;
        xb_info("cgroup: sandboxes go in the delegated subtree /%s (the daemon is in /%s%s%s)", own, own,
                *own ? "/" : "", XB_CGROUP_DAEMON_LEAF);
        return 1;
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
                if ((r = v2_parent(sys, err)) < 0) {
                        xb_cgroup_sys_close(TAKE_PTR(sys));
                        return r;
                }
                /* At the root: delegate memory, pids and cpu to its children. */
                if (r == 0 && xb_write_file_at(sys->v2_root, "cgroup.subtree_control", "+memory +pids +cpu") < 0 &&
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
                                                  "mount it or use cgroup v2", cg_ctl_names[i]);
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
                        cg_kill_listed(fd);
                if (cg_remove_group(roots[k], full, &fd) == 0)
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
