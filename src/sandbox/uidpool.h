/* Host uid ranges for sandboxes. Each sandbox maps its ids 0..65535 onto a
 * range of 65536 host ids that no other live sandbox uses, on this machine,
 * across processes. Slot i is the range XB_UID_BASE + i * 65536.
 *
 * In-process a bitmap tracks our slots; across processes an open-file-
 * description lock on byte i of one lock file claims slot i. The kernel
 * drops the lock when the holder dies, so a crash leaks nothing. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"

#define XB_UID_BASE 0x40000000u   /* 1073741824: far above any real user */
#define XB_UID_RANGE 65536u
#define XB_UID_SLOTS 16384u       /* ranges up to 0x80000000 */

struct xb_uidpool {
        int lockfd;                /* -1: in-process only (unit tests) */
        uint32_t nslots;
        uint32_t next;             /* where the next search starts */
        uint32_t used;
        uint8_t bits[XB_UID_SLOTS / 8];
};

/* Open the pool with the lock file dirfd/name (created 0600; name NULL: no
 * lock file, for unit tests). */
int xb_uidpool_open(struct xb_uidpool *p, int dirfd, const char *name, uint32_t nslots, struct xb_err *err);
void xb_uidpool_close(struct xb_uidpool *p);
/* Claim a free slot; -EAGAIN when every slot is taken. */
int xb_uidpool_alloc(struct xb_uidpool *p, uint32_t *ret_slot);
void xb_uidpool_release(struct xb_uidpool *p, uint32_t slot);
/* Claim this slot if no one holds it; -EBUSY if someone does. */
int xb_uidpool_try(struct xb_uidpool *p, uint32_t slot);
bool xb_uidpool_taken(const struct xb_uidpool *p, uint32_t slot);
/* The first host id of a slot's range. */
uid_t xb_uidpool_host_base(uint32_t slot);
/* Move our lock of slot to an open file description of its own (returned;
 * the caller hands it to the sandbox's init, which keeps the lock alive
 * past our death). -errno. */
int xb_uidpool_handoff(struct xb_uidpool *p, uint32_t slot);
/* Count slot as ours again: fd (an earlier daemon's, kept by init) holds
 * its lock. -EBUSY, -EPERM if fd does not hold it. */
int xb_uidpool_adopt(struct xb_uidpool *p, uint32_t slot, int fd);
