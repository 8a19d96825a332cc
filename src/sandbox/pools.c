/* Per-sandbox caps on kernel pools (pools.h).
 *
 * Why the host's limits must grow: the daemon (host root) creates each
 * sandbox's user namespace, so the kernel charges what a sandbox takes
 * twice, to (sandbox ns, its uid) under the sandbox namespace's limit and
 * to (host ns, root) under the host's (kernel/ucount.c, inc_ucount and
 * inc_rlimit_get_ucounts). Without caps, 128 inotify_init1(2) calls in one
 * sandbox leave no inotify instance to any other sandbox, nor to the
 * host's root (systemd, udev). Ptys come from one count for every
 * non-initial devpts instance (kernel.pty.max - kernel.pty.reserve). */
#define _GNU_SOURCE
#include "sandbox/pools.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/cleanup.h"

#define PTY_MAX_KERNEL (1u << 20)     /* NR_UNIX98_PTY_MAX */

static int
read_u64(const char *path, uint64_t *v)
{
        char buf[32];
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return n < 0 ? -errno : -EIO;
        buf[n] = '\0';
        *v = strtoull(buf, NULL, 10);
        return 0;
}

static int
write_u64(const char *path, uint64_t v)
{
        char buf[32];
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        int n = snprintf(buf, sizeof(buf), "%" PRIu64, v);

        if (fd < 0)
                return -errno;
        if (write(fd, buf, (size_t)n) != n)
                return -errno;
        return 0;
}

/* At least want in path; never lower it. */
static int
raise_to(const char *path, uint64_t want, struct xb_err *err)
{
        uint64_t have;
        int r = read_u64(path, &have);

        if (r < 0)
                return xb_err_set(err, -r, "read %s", path);
        if (have >= want)
                return 0;
        if ((r = write_u64(path, want)) < 0)
                return xb_err_set(err, -r, "raise %s to %" PRIu64, path, want);
        return 0;
}

int
xb_pools_reserve(unsigned max_sandboxes, uint64_t *ret_sigpending, struct xb_err *err)
{
        /* Two uids a sandbox runs as (its root, for init, and its user). */
        uint64_t n = 2 * (uint64_t)max_sandboxes, reserve = 0, pty;
        struct rlimit rl;
        int r = 0, r1;

        if (getrlimit(RLIMIT_SIGPENDING, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
                rl.rlim_cur = 65536;
        *ret_sigpending = max_sandboxes ? rl.rlim_cur / 4 / n : rl.rlim_cur / 4;
        if (*ret_sigpending < XB_SBX_SIGPENDING_MIN)
                *ret_sigpending = XB_SBX_SIGPENDING_MIN;
        if (*ret_sigpending > rl.rlim_cur / 4)
                *ret_sigpending = rl.rlim_cur / 4 ? rl.rlim_cur / 4 : 1;
        if (!max_sandboxes)
                return 0;
        /* What the host keeps for itself: the kernel's defaults. */
        if ((r1 = raise_to("/proc/sys/fs/inotify/max_user_instances", 128 + n * XB_SBX_INOTIFY_INSTANCES, err)) < 0)
                r = r1;
        if ((r1 = raise_to("/proc/sys/fs/inotify/max_user_watches", 1048576 + n * XB_SBX_INOTIFY_WATCHES, err)) < 0)
                r = r1;
        if (read_u64("/proc/sys/kernel/pty/reserve", &reserve) < 0)
                reserve = 1024;
        pty = reserve + 4096 + (uint64_t)max_sandboxes * XB_SBX_PTYS;
        if ((r1 = raise_to("/proc/sys/kernel/pty/max", pty < PTY_MAX_KERNEL ? pty : PTY_MAX_KERNEL, err)) < 0)
                r = r1;
        return r;
}

int
xb_pools_limit_userns(struct xb_err *err)
{
        int r;

        if ((r = write_u64("/proc/sys/user/max_inotify_instances", XB_SBX_INOTIFY_INSTANCES)) < 0 ||
            (r = write_u64("/proc/sys/user/max_inotify_watches", XB_SBX_INOTIFY_WATCHES)) < 0) {
                /* A kernel before 4.9 has no such files, and a daemon in a
                 * container may see /proc/sys read-only: there the host's
                 * limits could not be raised either, and the engine said so
                 * (pools_warning). Anything else is a real failure. */
                if (r == -ENOENT || r == -EROFS || r == -EACCES)
                        return 0;
                return xb_err_set(err, -r, "set the sandbox's inotify limits");
        }
        return 0;
}
