/* The state directory's free space. The layer store is a sparse image in
 * it, so a full state dir does not show inside the store: a create there
 * would get write errors from the loop device, and btrfs then turns the
 * whole store read-only for every sandbox until a restart. So creates (and
 * the pool's starts) stop, with 503 and a hint, while less than a reserve
 * is free, and go on by themselves once space returns. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/core.h"

int
xb_space_check(struct xb_core *s, struct xb_err *err)
{
        struct statvfs st;
        uint64_t avail;

        if (!s->o.state_dir || statvfs(s->o.state_dir, &st) < 0)
                return 0;   /* nothing to measure: the start itself says what fails */
        avail = (uint64_t)st.f_bavail * st.f_frsize;
        if (avail >= XB_STATE_RESERVE && (!st.f_files || st.f_favail >= XB_STATE_RESERVE_INODES))
                return 0;
        return xb_err_code(err, XB_E_SANDBOX_UNAVAILABLE, ENOSPC,
                           "free space in the server's state directory (or ask its operator to); creates resume "
                           "by themselves once there is room",
                           "the server's state directory %s is full (%" PRIu64 " KiB and %llu inodes free; a "
                           "sandbox needs %u MiB and %u inodes there)", s->o.state_dir, avail >> 10,
                           (unsigned long long)st.f_favail, XB_STATE_RESERVE >> 20, XB_STATE_RESERVE_INODES);
}

#define ROOM_HINT "free space in the server's state directory (or ask its operator to), or send a smaller image"

int
xb_space_room(struct xb_core *s, uint64_t need, struct xb_err *err)
{
        struct statvfs st;
        uint64_t avail;

        if (!s->o.state_dir || statvfs(s->o.state_dir, &st) < 0)
                return 0;
        avail = (uint64_t)st.f_bavail * st.f_frsize;
        if (!s->disk_tight && avail >= need && avail - need >= XB_STATE_RESERVE + XB_STATE_GUARD)
                return 0;
        return xb_err_code(err, XB_E_DISK_FULL, ENOSPC, ROOM_HINT,
                           "the server's state directory %s has %" PRIu64 " MiB free; %" PRIu64 " MiB more and its "
                           "reserve of %" PRIu64 " MiB do not fit", s->o.state_dir, avail >> 20, need >> 20,
                           (XB_STATE_RESERVE + XB_STATE_GUARD) >> 20);
}

int
xb_space_tmpfile(struct xb_core *s, struct xb_err *err)
{
        char path[4200];
        int fd;

        if (!s->o.state_dir)
                return xb_err_code(err, XB_E_INTERNAL, ENOENT, NULL, "the server has no state directory");
        fd = open(s->o.state_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
                return fd >= 0 ? fd : xb_err_code(err, XB_E_INTERNAL, errno, NULL, "a temporary file in %s",
                                                  s->o.state_dir);
        /* A filesystem without O_TMPFILE: a 0600 file, unlinked at once. */
        snprintf(path, sizeof(path), "%s/upload-XXXXXX", s->o.state_dir);
        if ((fd = mkostemp(path, O_CLOEXEC)) < 0)
                return xb_err_code(err, XB_E_INTERNAL, errno, NULL, "a temporary file in %s", s->o.state_dir);
        unlink(path);
        return fd;
}
