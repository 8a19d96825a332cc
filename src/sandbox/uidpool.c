/* Unique host uid ranges, coordinated across processes with OFD locks. */
#define _GNU_SOURCE
#include "uidpool.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
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
