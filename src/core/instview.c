/* The install cache's copy-on-write view of an entry for one sandbox: a
 * read-only overlay, made by the daemon, whose lower is the entry's layer
 * id-mapped onto the sandbox's user namespace. Its fd (a detached mount,
 * never attached anywhere) is the stdin of the sandbox's root copier,
 * attached for the copy at /tmp/.xb-install-<random> inside the sandbox
 * (its own tmpfs: Landlock lets the sandbox read only below its root),
 * by a child of the daemon in the sandbox's mount namespace, and detached
 * after. It lives only in that namespace: it goes with the sandbox. A copy_file_range from a file of this overlay into one of the
 * sandbox's own overlay reaches btrfs with both files on the store: a
 * reflink, so the target's layer shares the entry's extents. (From a
 * btrfs file straight into an overlay file the kernel answers EXDEV.) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "core/core.h"
#include "core/instcache_int.h"
#include "sandbox/store.h"

int
xb_inst_view(struct xb_sbx *x, const char *key, int *ret_fd, struct xb_err *err)
{
        struct xb_store *st = x->core->eng->store;
        char layer[XB_INST_LAYER_MAX], src[4400], empty[4400], ns[64], opt[160];
        _cleanup_close_ int userns = -1, tree = -1, fs = -1;
        struct mount_attr a = { .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
                                            MOUNT_ATTR_NODEV };
        int mnt;

        if (!st || !x->sb || x->sb->pid <= 0)
                return xb_err_set(err, ESRCH, "no sandbox");
        xb_inst_layer_name(key, layer);
        snprintf(src, sizeof(src), "%s/layers/%s/up", st->path, layer);
        /* An overlay without an upper wants two lowers: an empty one under it. */
        snprintf(empty, sizeof(empty), "%s/inst-empty", st->path);
        if (mkdir(empty, 0555) < 0 && errno != EEXIST)
                return xb_err_set(err, errno, "mkdir %s", empty);
        snprintf(ns, sizeof(ns), "/proc/%d/ns/user", (int)x->sb->pid);
        if ((userns = open(ns, O_RDONLY | O_CLOEXEC)) < 0)
                return xb_err_set(err, errno, "open %s", ns);
        a.userns_fd = (uint64_t)userns;
        tree = (int)syscall(SYS_open_tree, AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
        if (tree < 0 || syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0)
                return xb_err_set(err, errno, "id-mapped mount of %s", layer);
        snprintf(opt, sizeof(opt), "/proc/self/fd/%d:%s", tree, empty);
        if ((fs = (int)syscall(SYS_fsopen, "overlay", FSOPEN_CLOEXEC)) < 0 ||
            syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "lowerdir", opt, 0) < 0 ||
            syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
                return xb_err_set(err, errno, "overlay of %s", layer);
        mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
                           MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
        if (mnt < 0)
                return xb_err_set(err, errno, "mount the overlay of %s", layer);
        *ret_fd = mnt;
        return 0;
}

/* In a child in x's mount namespace: attach mnt at /tmp/<name> (attach), or
 * detach and remove it. Paths there are the sandbox's: nothing is followed. */
static int
in_ns(struct xb_sbx *x, const char *name, int mnt, bool attach)
{
        pid_t pid;
        int st = 0;

        if ((pid = fork()) < 0)
                return -errno;
        if (pid == 0) {
                int tmp, dir;

                if (setns(x->sb->pidfd, CLONE_NEWNS) < 0)
                        _exit(errno == EINVAL ? 15 : errno == EPERM ? 16 : 10);
                /* The sandbox's root, for what it makes in the sandbox's tmpfs
                 * (an id outside its user namespace cannot own a file there). */
                setfsgid((gid_t)x->sb->host_uid_base);
                setfsuid((uid_t)x->sb->host_uid_base);
                tmp = open("/tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (tmp < 0)
                        _exit(11);
                if (!attach) {
                        char path[128];

                        snprintf(path, sizeof(path), "/tmp/%s", name);
                        umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW);
                        _exit(unlinkat(tmp, name, AT_REMOVEDIR) < 0 ? 12 : 0);
                }
                if (mkdirat(tmp, name, 0500) < 0 || (dir = openat(tmp, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)) < 0)
                        _exit(13);
                if (syscall(SYS_move_mount, mnt, "", dir, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                        _exit(errno == EINVAL ? 17 : errno == EPERM ? 18 : errno == ENOENT ? 19 : 14);
                _exit(0);
        }
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
        /* Its exit code says which step failed (10..14). */
        return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : WIFEXITED(st) ? -WEXITSTATUS(st) : -EIO;
}

int
xb_inst_attach(struct xb_sbx *x, const char *key, char name[XB_INST_VIEW_NAME], struct xb_err *err)
{
        _cleanup_close_ int mnt = -1;
        int r;

        if ((r = xb_inst_view(x, key, &mnt, err)) < 0)
                return r;
        memcpy(name, ".xb-install-", 12);
        if (xb_random_id(name + 12, XB_SANDBOX_ID_LEN + 1) < 0)
                return xb_err_set(err, EIO, "random");
        if ((r = in_ns(x, name, mnt, true)) < 0)
                return xb_err_msg(err, EIO, "attach the install's view in sandbox %s: step %d", x->id, -r);
        return 0;
}

void
xb_inst_detach(struct xb_sbx *x, const char *name)
{
        if (name[0] && x->sb && x->state < XB_SBX_DYING)
                in_ns(x, name, -1, false);
}
