/* The pseudo-filesystem table (pseudofs.h): statfs magics from
 * <linux/magic.h>, with the ones older headers lack spelled out. */
#include "pseudofs.h"

#include <stddef.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546   /* fuse and fuseblk; absent from older headers */
#endif

static const unsigned long pseudo_magics[] = {
        PROC_SUPER_MAGIC, SYSFS_MAGIC,        DEBUGFS_MAGIC,       TRACEFS_MAGIC,
        SECURITYFS_MAGIC, CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC, FUSE_SUPER_MAGIC,
};

bool
xb_pseudo_fs_magic(unsigned long f_type)
{
        for (size_t i = 0; i < sizeof(pseudo_magics) / sizeof(pseudo_magics[0]); i++)
                if (f_type == pseudo_magics[i])
                        return true;
        return false;
}

bool
xb_pseudo_fs(int fd)
{
        struct statfs sf;

        if (fstatfs(fd, &sf) < 0)
                return true;
        return xb_pseudo_fs_magic((unsigned long)sf.f_type);
}
