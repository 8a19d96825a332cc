/* Unit tests for sandbox/uidpool.h: slots in-process, the host id ranges
 * they map to, and exclusion across pools through a real lock file in a
 * temporary directory (OFD locks belong to the open file description, so
 * two opens of one file conflict as two processes would), including a pool
 * in a child process that dies holding its slot. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/uidpool.h"

/* ---- in-process ---- */

Test(uidpool, open_without_lock_file)
{
        struct xb_uidpool p;

        cr_assert_eq(xb_uidpool_open(&p, -1, NULL, 8, NULL), 0);
        cr_assert_eq(p.lockfd, -1);
        cr_assert_eq(p.nslots, 8);
        cr_assert_eq(p.used, 0);
        for (uint32_t i = 0; i < 16; i++)
                cr_assert_not(xb_uidpool_taken(&p, i));
        xb_uidpool_close(&p);
}

Test(uidpool, slot_count_is_clamped)
{
        struct xb_uidpool p;

        cr_assert_eq(xb_uidpool_open(&p, -1, NULL, 0, NULL), 0);
        cr_assert_eq(p.nslots, XB_UID_SLOTS);
        cr_assert_eq(xb_uidpool_open(&p, -1, NULL, XB_UID_SLOTS + 1, NULL), 0);
        cr_assert_eq(p.nslots, XB_UID_SLOTS);
        cr_assert_eq(xb_uidpool_open(&p, -1, NULL, UINT32_MAX, NULL), 0);
        cr_assert_eq(p.nslots, XB_UID_SLOTS);
}

Test(uidpool, allocates_distinct_slots_until_exhausted)
{
        struct xb_uidpool p;
        bool seen[8] = { false };
        uint32_t s;

        xb_uidpool_open(&p, -1, NULL, 8, NULL);
        for (int i = 0; i < 8; i++) {
                s = 0xdead;
                cr_assert_eq(xb_uidpool_alloc(&p, &s), 0, "alloc %d", i);
                cr_assert_lt(s, 8);
                cr_assert_not(seen[s], "slot %u handed out twice", s);
                seen[s] = true;
                cr_assert(xb_uidpool_taken(&p, s));
        }
        cr_assert_eq(p.used, 8);
        s = 0xdead;
        cr_assert_eq(xb_uidpool_alloc(&p, &s), -EAGAIN);
        cr_assert_eq(s, 0xdead, "*ret_slot written on failure");
        cr_assert_eq(p.used, 8);
        xb_uidpool_close(&p);
}

Test(uidpool, release_and_reuse)
{
        struct xb_uidpool p;
        uint32_t s;

        xb_uidpool_open(&p, -1, NULL, 4, NULL);
        for (int i = 0; i < 4; i++)
                cr_assert_eq(xb_uidpool_alloc(&p, &s), 0);
        xb_uidpool_release(&p, 2);
        cr_assert_not(xb_uidpool_taken(&p, 2));
        cr_assert_eq(p.used, 3);
        cr_assert_eq(xb_uidpool_alloc(&p, &s), 0);
        cr_assert_eq(s, 2, "the only free slot is 2, got %u", s);
        cr_assert_eq(xb_uidpool_alloc(&p, &s), -EAGAIN);
        /* Release everything, then all four come back. */
        for (uint32_t i = 0; i < 4; i++)
                xb_uidpool_release(&p, i);
        cr_assert_eq(p.used, 0);
        for (int i = 0; i < 4; i++)
                cr_assert_eq(xb_uidpool_alloc(&p, &s), 0);
        cr_assert_eq(xb_uidpool_alloc(&p, &s), -EAGAIN);
        xb_uidpool_close(&p);
}

Test(uidpool, release_of_a_free_or_foreign_slot_is_harmless)
{
        struct xb_uidpool p;
        uint32_t s;

        xb_uidpool_open(&p, -1, NULL, 4, NULL);
        cr_assert_eq(xb_uidpool_alloc(&p, &s), 0);
        xb_uidpool_release(&p, s);
        xb_uidpool_release(&p, s);            /* twice */
        xb_uidpool_release(&p, 3);            /* never taken */
        xb_uidpool_release(&p, 4);            /* out of range */
        xb_uidpool_release(&p, UINT32_MAX);
        cr_assert_eq(p.used, 0, "used went to %u", p.used);
        for (int i = 0; i < 4; i++)
                cr_assert_eq(xb_uidpool_alloc(&p, &s), 0);
        cr_assert_eq(p.used, 4);
        cr_assert_eq(xb_uidpool_alloc(&p, &s), -EAGAIN);
        cr_assert_not(xb_uidpool_taken(&p, 4));
        cr_assert_not(xb_uidpool_taken(&p, UINT32_MAX));
        xb_uidpool_close(&p);
}

Test(uidpool, full_range_of_slots)
{
        struct xb_uidpool *p = malloc(sizeof(*p));
        uint32_t s;

        cr_assert_not_null(p);
        xb_uidpool_open(p, -1, NULL, 0, NULL);
        for (uint32_t i = 0; i < XB_UID_SLOTS; i++) {
                cr_assert_eq(xb_uidpool_alloc(p, &s), 0, "alloc %u", i);
                cr_assert_lt(s, XB_UID_SLOTS);
        }
        cr_assert_eq(xb_uidpool_alloc(p, &s), -EAGAIN);
        for (uint32_t i = 0; i < XB_UID_SLOTS; i++)
                cr_assert(xb_uidpool_taken(p, i), "slot %u never handed out", i);
        xb_uidpool_close(p);
        free(p);
}

Test(uidpool, host_base_mapping)
{
        cr_assert_eq(xb_uidpool_host_base(0), XB_UID_BASE);
        cr_assert_eq(xb_uidpool_host_base(1), XB_UID_BASE + 65536u);
        cr_assert_eq(xb_uidpool_host_base(7), XB_UID_BASE + 7u * 65536u);
        for (uint32_t i = 0; i + 1 < XB_UID_SLOTS; i++) {
                uid_t a = xb_uidpool_host_base(i), b = xb_uidpool_host_base(i + 1);

                /* Ranges [a, a + 65536) do not overlap and leave no gap. */
                cr_assert_eq((uint64_t)b - a, XB_UID_RANGE, "slot %u", i);
                cr_assert_gt(b, a);
        }
        /* Far above real users, and the last range ends below 2^31: no
         * wrap, no (uid_t)-1, no negative ids for tools that use int. */
        cr_assert_geq(xb_uidpool_host_base(0), 65536u * 16);
        cr_assert_eq((uint64_t)xb_uidpool_host_base(XB_UID_SLOTS - 1) + XB_UID_RANGE - 1, 0x7fffffffULL);
}

/* ---- across pools, with a lock file ---- */

static char tmpdir[64];
static int dirfd_ = -1;

static void
lock_setup(void)
{
        strcpy(tmpdir, "/tmp/xb-uidpool-XXXXXX");
        cr_assert_not_null(mkdtemp(tmpdir));
        dirfd_ = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        cr_assert_geq(dirfd_, 0);
}

static void
lock_teardown(void)
{
        if (dirfd_ >= 0) {
                unlinkat(dirfd_, "uid.lock", 0);
                unlinkat(dirfd_, "link.lock", 0);
                unlinkat(dirfd_, "target", 0);
                close(dirfd_);
                dirfd_ = -1;
        }
        if (tmpdir[0])
                rmdir(tmpdir);
}

TestSuite(uidpool_lock, .init = lock_setup, .fini = lock_teardown);

static void
open_locked(struct xb_uidpool *p, uint32_t nslots)
{
        struct xb_err err = { 0 };
        int r = xb_uidpool_open(p, dirfd_, "uid.lock", nslots, &err);

        cr_assert_eq(r, 0, "open: %s", err.msg);
        cr_assert_geq(p->lockfd, 0);
}

Test(uidpool_lock, lock_file_is_private)
{
        struct xb_uidpool p;
        struct stat st;

        open_locked(&p, 4);
        cr_assert_eq(fstatat(dirfd_, "uid.lock", &st, 0), 0);
        cr_assert(S_ISREG(st.st_mode));
        cr_assert_eq(st.st_mode & 07777, 0600, "mode %o", st.st_mode & 07777);
        cr_assert(fcntl(p.lockfd, F_GETFD) & FD_CLOEXEC);
        xb_uidpool_close(&p);
        cr_assert_eq(p.lockfd, -1);
}

Test(uidpool_lock, open_errors)
{
        struct xb_uidpool p;
        struct xb_err err = { 0 };

        cr_assert_eq(xb_uidpool_open(&p, dirfd_, "missing/uid.lock", 4, &err), -ENOENT);
        cr_assert_eq(err.code, ENOENT);
        cr_assert_eq(p.lockfd, -1);
        /* A symlink planted at the lock file's name is not followed. */
        cr_assert_eq(symlinkat("target", dirfd_, "link.lock"), 0);
        cr_assert_eq(xb_uidpool_open(&p, dirfd_, "link.lock", 4, &err), -ELOOP);
        cr_assert_eq(faccessat(dirfd_, "target", F_OK, AT_SYMLINK_NOFOLLOW), -1, "the symlink was followed");
}

Test(uidpool_lock, two_pools_never_share_a_slot)
{
        struct xb_uidpool a, b;
        bool seen[16] = { false };
        uint32_t s;
        int na = 0, nb = 0;

        open_locked(&a, 16);
        open_locked(&b, 16);
        /* Interleave until both are refused. */
        for (;;) {
                bool any = false;

                if (xb_uidpool_alloc(&a, &s) == 0) {
                        cr_assert_not(seen[s], "slot %u handed out twice (a)", s);
                        seen[s] = any = true;
                        na++;
                }
                if (xb_uidpool_alloc(&b, &s) == 0) {
                        cr_assert_not(seen[s], "slot %u handed out twice (b)", s);
                        seen[s] = any = true;
                        nb++;
                }
                if (!any)
                        break;
        }
        cr_assert_eq(na + nb, 16);
        cr_assert_gt(na, 0);
        cr_assert_gt(nb, 0);
        cr_assert_eq(xb_uidpool_alloc(&a, &s), -EAGAIN);
        cr_assert_eq(xb_uidpool_alloc(&b, &s), -EAGAIN);
        xb_uidpool_close(&a);
        xb_uidpool_close(&b);
}

Test(uidpool_lock, release_in_one_lets_the_other_take_it)
{
        struct xb_uidpool a, b;
        uint32_t s;

        open_locked(&a, 4);
        open_locked(&b, 4);
        for (int i = 0; i < 4; i++)
                cr_assert_eq(xb_uidpool_alloc(&a, &s), 0);
        cr_assert_eq(xb_uidpool_alloc(&b, &s), -EAGAIN, "b took slot %u that a holds", s);
        xb_uidpool_release(&a, 2);
        cr_assert_eq(xb_uidpool_alloc(&b, &s), 0);
        cr_assert_eq(s, 2);
        /* a forgot slot 2 but must not get it back while b holds it. */
        cr_assert_eq(xb_uidpool_alloc(&a, &s), -EAGAIN, "a re-took slot %u that b holds", s);
        xb_uidpool_close(&a);
        xb_uidpool_close(&b);
}

Test(uidpool_lock, closing_a_pool_frees_its_slots)
{
        struct xb_uidpool a, b;
        uint32_t s;

        open_locked(&a, 3);
        open_locked(&b, 3);
        for (int i = 0; i < 3; i++)
                cr_assert_eq(xb_uidpool_alloc(&a, &s), 0);
        cr_assert_eq(xb_uidpool_alloc(&b, &s), -EAGAIN);
        xb_uidpool_close(&a);     /* as if a's process died */
        for (int i = 0; i < 3; i++)
                cr_assert_eq(xb_uidpool_alloc(&b, &s), 0, "slot not freed when its holder closed");
        xb_uidpool_close(&b);
}

Test(uidpool_lock, a_dead_process_leaks_no_slot)
{
        struct xb_uidpool p;
        int ready[2], hold[2];
        uint32_t s;
        pid_t pid;
        char c;
        int st;

        cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
        cr_assert_eq(pipe2(hold, O_CLOEXEC), 0);
        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                struct xb_uidpool cp;
                uint32_t cs;

                close(ready[0]);
                close(hold[1]);
                if (xb_uidpool_open(&cp, dirfd_, "uid.lock", 1, NULL) < 0 || xb_uidpool_alloc(&cp, &cs) < 0)
                        _exit(1);
                (void)!write(ready[1], "r", 1);
                (void)!read(hold[0], &c, 1);    /* until the parent kills us */
                _exit(0);
        }
        close(ready[1]);
        close(hold[0]);
        cr_assert_eq(read(ready[0], &c, 1), 1, "child could not take the slot");
        open_locked(&p, 1);
        cr_assert_eq(xb_uidpool_alloc(&p, &s), -EAGAIN, "took the slot a live process holds");
        kill(pid, SIGKILL);
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        cr_assert_eq(xb_uidpool_alloc(&p, &s), 0, "slot still locked after its holder died");
        cr_assert_eq(s, 0);
        close(ready[0]);
        close(hold[1]);
        xb_uidpool_close(&p);
}
