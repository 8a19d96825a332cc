/* Unique host uid ranges, coordinated across processes with OFD locks. */
#define _GNU_SOURCE
#include "uidpool.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <stdio.h>
#include <unistd.h>

static void
bit_set(struct xb_uidpool *p, uint32_t i, bool on)
{
        if (on)
                p->bits[i / 8] |= (uint8_t)(1u << (i % 8));
        else
                p->bits[i / 8] &= (uint8_t)~(1u << (i % 8));
}

bool
xb_uidpool_taken(const struct xb_uidpool *p, uint32_t slot)
{
        return slot < p->nslots && (p->bits[slot / 8] >> (slot % 8)) & 1u;
}

uid_t
xb_uidpool_host_base(uint32_t slot)
{
        return (uid_t)(XB_UID_BASE + slot * XB_UID_RANGE);
}

int
xb_uidpool_open(struct xb_uidpool *p, int dirfd, const char *name, uint32_t nslots, struct xb_err *err)
{
        memset(p, 0, sizeof(*p));
        p->lockfd = -1;
        p->nslots = nslots && nslots <= XB_UID_SLOTS ? nslots : XB_UID_SLOTS;
        if (name) {
                p->lockfd = openat(dirfd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (p->lockfd < 0)
                        return xb_err_set(err, errno, "open uid lock file %s", name);
        }
        return 0;
}

void
xb_uidpool_close(struct xb_uidpool *p)
{
        if (p->lockfd >= 0)
                close(p->lockfd);
        p->lockfd = -1;
}

static int
lock_byte(int fd, uint32_t i, short type)
{
        struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = i, .l_len = 1 };

        return fcntl(fd, F_OFD_SETLK, &fl) < 0 ? -errno : 0;
}

int
xb_uidpool_alloc(struct xb_uidpool *p, uint32_t *ret_slot)
{
        for (uint32_t k = 0; k < p->nslots; k++) {
                uint32_t i = (p->next + k) % p->nslots;

                if (xb_uidpool_taken(p, i))
                        continue;
                if (p->lockfd >= 0) {
                        int r = lock_byte(p->lockfd, i, F_WRLCK);

                        if (r == -EAGAIN || r == -EACCES)
                                continue;   /* another process holds it */
                        if (r < 0)
                                return r;
                }
                bit_set(p, i, true);
                p->used++;
                p->next = (i + 1) % p->nslots;
                *ret_slot = i;
                return 0;
        }
        return -EAGAIN;
}

void
xb_uidpool_release(struct xb_uidpool *p, uint32_t slot)
{
        if (!xb_uidpool_taken(p, slot))
                return;
        if (p->lockfd >= 0)
                lock_byte(p->lockfd, slot, F_UNLCK);
        bit_set(p, slot, false);
        p->used--;
}

int
xb_uidpool_try(struct xb_uidpool *p, uint32_t slot)
{
        if (slot >= p->nslots || xb_uidpool_taken(p, slot))
                return -EBUSY;
        if (p->lockfd >= 0) {
                int r = lock_byte(p->lockfd, slot, F_WRLCK);

                if (r < 0)
                        return r == -EAGAIN || r == -EACCES ? -EBUSY : r;
        }
        bit_set(p, slot, true);
        p->used++;
        return 0;
}

int
xb_uidpool_handoff(struct xb_uidpool *p, uint32_t slot)
{
        char path[64];
        int fd, r;

        if (p->lockfd < 0 || !xb_uidpool_taken(p, slot))
                return -EINVAL;
        snprintf(path, sizeof(path), "/proc/self/fd/%d", p->lockfd);
        /* A new open file description: its lock is its own. */
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        lock_byte(p->lockfd, slot, F_UNLCK);
        if ((r = lock_byte(fd, slot, F_WRLCK)) < 0) {
                /* Someone took it in between (the slot is theirs now:
                 * this sandbox shares its uids with another; it must go). */
                close(fd);
                return lock_byte(p->lockfd, slot, F_WRLCK) < 0 ? -EBUSY : r;
        }
        return fd;
}

int
xb_uidpool_adopt(struct xb_uidpool *p, uint32_t slot, int fd)
{
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = slot, .l_len = 1 };

        if (slot >= p->nslots || xb_uidpool_taken(p, slot))
                return -EBUSY;
        /* fd must be the one holding it: a lock test through it sees no
         * conflict, while ours does. */
        if (p->lockfd >= 0) {
                if (fcntl(fd, F_OFD_GETLK, &fl) < 0 || fl.l_type != F_UNLCK)
                        return -EPERM;
                fl = (struct flock){ .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = slot, .l_len = 1 };
                if (fcntl(p->lockfd, F_OFD_GETLK, &fl) < 0 || fl.l_type == F_UNLCK)
                        return -EPERM;
        }
        bit_set(p, slot, true);
        p->used++;
        return 0;
}
