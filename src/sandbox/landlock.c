/* Landlock rulesets with raw syscalls; constants newer than the build
 * host's headers are defined here (see landlock(7)). */
#define _GNU_SOURCE
#include "landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/landlock.h>

#include "base/cleanup.h"

#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)        /* ABI 2 */
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)     /* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)    /* ABI 5 */
#endif
#define XB_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define XB_LANDLOCK_SCOPE_SIGNAL (1ULL << 1)

/* The ABI 6 ruleset attribute, which older headers lack. */
struct xb_ruleset_attr {
        uint64_t handled_access_fs;
        uint64_t handled_access_net;
        uint64_t scoped;
};

#define READ_ACCESS (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | \
                     LANDLOCK_ACCESS_FS_READ_DIR)
#define WRITE_ACCESS (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | \
                      LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR | \
                      LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG | \
                      LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | \
                      LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM)

int
xb_landlock_abi(void)
{
        long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

        return abi < 0 ? 0 : (int)abi;
}

static uint64_t
fs_mask(int abi)
{
        uint64_t m = READ_ACCESS | WRITE_ACCESS;

        if (abi >= 2)
                m |= LANDLOCK_ACCESS_FS_REFER;
        if (abi >= 3)
                m |= LANDLOCK_ACCESS_FS_TRUNCATE;
        if (abi >= 5)
                m |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
        return m;
}

static int
add_path(int ruleset, const char *path, uint64_t access)
{
        struct landlock_path_beneath_attr pb = { .allowed_access = access };
        _cleanup_close_ int fd = open(path, O_PATH | O_CLOEXEC);

        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        pb.parent_fd = fd;
        if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
                return -errno;
        return 0;
}

int
xb_landlock_apply(const struct xb_landlock_path *paths, size_t n, int exec_fd, struct xb_err *err)
{
        int abi = xb_landlock_abi();
        struct xb_ruleset_attr attr = { 0 };
        size_t attr_size = sizeof(uint64_t);
        _cleanup_close_ int rs = -1;
        uint64_t all;
        int r;

        if (abi <= 0)
                return 0;
        all = fs_mask(abi);
        attr.handled_access_fs = all;
        if (abi >= 4)
                attr_size = 2 * sizeof(uint64_t);
        if (abi >= 6) {
                attr.scoped = XB_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | XB_LANDLOCK_SCOPE_SIGNAL;
                attr_size = sizeof(attr);
        }
        rs = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
        if (rs < 0)
                return xb_err_set(err, errno, "landlock_create_ruleset (ABI %d)", abi);
        /* Everything can be read and run; device ioctls only below /dev. */
        if ((r = add_path(rs, "/", READ_ACCESS)) < 0)
                return xb_err_set(err, -r, "landlock rule for /");
        for (size_t i = 0; i < n; i++) {
                uint64_t a = paths[i].writable ? all & ~(uint64_t)LANDLOCK_ACCESS_FS_IOCTL_DEV : READ_ACCESS;

                if ((r = add_path(rs, paths[i].path, a)) < 0)
                        return xb_err_set(err, -r, "landlock rule for %s", paths[i].path);
        }
        /* /proc: a process may write its own attributes (comm, oom_score_adj);
         * what must not be written is mounted read-only (/proc/sys, ...). */
        if ((r = add_path(rs, "/proc", READ_ACCESS | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                               (abi >= 3 ? LANDLOCK_ACCESS_FS_TRUNCATE : 0))) < 0)
                return xb_err_set(err, -r, "landlock rule for /proc");
        if ((r = add_path(rs, "/dev", READ_ACCESS | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                              (abi >= 3 ? LANDLOCK_ACCESS_FS_TRUNCATE : 0) |
                                              (abi >= 5 ? LANDLOCK_ACCESS_FS_IOCTL_DEV : 0))) < 0)
                return xb_err_set(err, -r, "landlock rule for /dev");
        if (exec_fd >= 0) {
                struct landlock_path_beneath_attr pb = {
                        .allowed_access = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE,
                        .parent_fd = exec_fd,
                };

                if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
                        return xb_err_set(err, errno, "landlock rule for the init image");
        }
        if (syscall(SYS_landlock_restrict_self, rs, 0) < 0)
                return xb_err_set(err, errno, "landlock_restrict_self");
        return abi;
}
