/* Unit tests for proto/pseudofs.h: every listed magic and a few real
 * filesystems' by value, then fds on /proc, /sys, a temporary file and a
 * closed fd. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/magic.h>

#include "proto/pseudofs.h"

Test(pseudofs, magics)
{
        static const unsigned long pseudo[] = {
                PROC_SUPER_MAGIC, SYSFS_MAGIC,        DEBUGFS_MAGIC,       TRACEFS_MAGIC,
                SECURITYFS_MAGIC, CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC, 0x65735546 /* FUSE */,
        };
        static const unsigned long real[] = {
                EXT4_SUPER_MAGIC, TMPFS_MAGIC, XFS_SUPER_MAGIC, BTRFS_SUPER_MAGIC, OVERLAYFS_SUPER_MAGIC, 0,
        };

        for (size_t i = 0; i < sizeof(pseudo) / sizeof(pseudo[0]); i++)
                cr_assert(xb_pseudo_fs_magic(pseudo[i]), "0x%lx", pseudo[i]);
        for (size_t i = 0; i < sizeof(real) / sizeof(real[0]); i++)
                cr_assert_not(xb_pseudo_fs_magic(real[i]), "0x%lx", real[i]);
}

Test(pseudofs, fds)
{
        char path[] = "/tmp/xb-pseudofs-XXXXXX";
        int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

        cr_assert_geq(fd, 0);
        cr_assert(xb_pseudo_fs(fd));
        close(fd);
        fd = open("/sys/kernel", O_PATH | O_CLOEXEC);
        if (fd >= 0) {
                cr_assert(xb_pseudo_fs(fd));
                close(fd);
        }
        fd = mkstemp(path);
        cr_assert_geq(fd, 0);
        unlink(path);
        cr_assert_not(xb_pseudo_fs(fd));
        close(fd);
        /* fstatfs fails: refused, not served. */
        cr_assert(xb_pseudo_fs(fd));
        cr_assert(xb_pseudo_fs(-1));
}
