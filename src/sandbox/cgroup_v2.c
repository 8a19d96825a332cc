/* Where a pure-v2 daemon puts its sandboxes' groups.
 *
 * At the host's root (a daemon started from a shell, or in the root
 * cgroup), they go directly under the root, as on v1. A daemon whose own
 * group was delegated to it (systemd's Delegate=yes marks the group with
 * the trusted.delegate xattr) or that is at the root of a cgroup namespace
 * (a container) must stay inside that subtree: systemd or the container's
 * manager owns everything above it. Since v2 has "no internal processes",
 * the daemon first moves itself (and whatever else is in its group) into a
 * leaf, <own>/daemon, and then enables memory, pids and cpu in its group's
 * subtree_control; the sandboxes are <own>/<prefix>-uN beside that leaf. */
#define _GNU_SOURCE
#include "cgroup_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "base/cleanup.h"
#include "base/fd.h"

int
cg_v2_self(const char *text, char *ret, size_t n)
{
        /* cgroup(7): "hierarchy-ID:controller-list:cgroup-path", v2 is "0::". */
        for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                const char *end = strchr(line, '\n');
                size_t len = end ? (size_t)(end - line) : strlen(line);

                if (len < 4 || strncmp(line, "0::/", 4) != 0)
                        continue;
                line += 4;
                len -= 4;
                /* " (deleted)" or a path we cannot hold: not ours to use. */
                if (len >= n || memmem(line, len, "/..", 3) || strncmp(line, "..", 2) == 0)
                        return -ENAMETOOLONG;
                memcpy(ret, line, len);
                ret[len] = '\0';
                return 0;
        }
        return -ENOENT;
}

static bool
has_xattr(int fd, const char *name)
{
        char v[8] = "";
        ssize_t n = fgetxattr(fd, name, v, sizeof(v) - 1);

        return n > 0 && (v[0] == '1' || strncmp(v, "true", 4) == 0 || strncmp(v, "yes", 3) == 0);
}

bool
cg_v2_delegated(int rootfd, const char *own)
{
        _cleanup_close_ int fd = -EBADF;

        if (!*own)
                /* The root of the tree: the host's has no cgroup.type, a
                 * cgroup namespace's root (a container) does. */
                return faccessat(rootfd, "cgroup.type", F_OK, 0) == 0;
        fd = openat(rootfd, own, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return false;
        return has_xattr(fd, "trusted.delegate") || has_xattr(fd, "user.delegate");
}

/* Move every process listed in from/cgroup.procs into to. */
static int
move_all(int from, int to)
{
        _cleanup_free_ char *s = NULL;
        int r;

        if ((r = xb_read_file_at(from, "cgroup.procs", 1 << 20, &s, NULL)) < 0)
                return r;
        for (char *save = NULL, *t = strtok_r(s, "\n", &save); t; t = strtok_r(NULL, "\n", &save))
                if ((r = xb_write_file_at(to, "cgroup.procs", t)) < 0 && r != -ESRCH)
                        return r;
        return 0;
}

int
cg_v2_take_subtree(int rootfd, const char *own, struct xb_err *err)
{
        _cleanup_close_ int fd = -EBADF, leaf = -EBADF;
        const char *at = *own ? own : ".";
        int r;

        fd = openat(rootfd, at, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return xb_err_set(err, errno, "open the daemon's own cgroup /%s", own);
        if (mkdirat(fd, XB_CGROUP_DAEMON_LEAF, 0755) < 0 && errno != EEXIST)
                return xb_err_set(err, errno, "create the cgroup /%s/%s for the daemon itself", own,
                                  XB_CGROUP_DAEMON_LEAF);
        leaf = openat(fd, XB_CGROUP_DAEMON_LEAF, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (leaf < 0)
                return xb_err_set(err, errno, "open the cgroup /%s/%s", own, XB_CGROUP_DAEMON_LEAF);
        /* The daemon first (by "0": itself), then anything else in its group. */
        if ((r = xb_write_file_at(leaf, "cgroup.procs", "0")) < 0 || (r = move_all(fd, leaf)) < 0)
                return xb_err_set(err, -r, "move the daemon into the cgroup /%s/%s", own, XB_CGROUP_DAEMON_LEAF);
        if ((r = xb_write_file_at(fd, "cgroup.subtree_control", "+memory +pids +cpu")) < 0)
                return xb_err_set(err, -r, "enable the memory, pids and cpu controllers in /%s (delegate them: "
                                  "Delegate=yes in the systemd unit)", own);
        return TAKE_FD(fd);
}
