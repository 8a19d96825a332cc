/* Unit tests for proc/filec.h: the daemon's parser of init's file replies
 * accepts what init sends and refuses everything else a compromised init
 * could send: unknown or repeated keys, wrong lengths, out-of-range
 * values, fds where none belong, and listing entries with absolute paths,
 * "..", empty components or NUL bytes. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proc/filec.h"

static uint8_t buf[XB_MSG_MAX];
static struct xb_msgw w;

static void
start(int errnum)
{
        xb_msgw_init(&w, buf, sizeof(buf), XB_EV_FILE, 9);
        xb_msgw_u64(&w, XB_K_ERRNO, (uint64_t)errnum);
}

static int
parse(enum xb_fop op, size_t nfds, struct xb_file_reply *rep)
{
        struct xb_msgr m;

        cr_assert_not(w.overflow);
        cr_assert_eq(xb_msgr_init(&m, buf, w.len), 0);
        return xb_filec_parse(&m, op, nfds, rep);
}

static void
entry(uint32_t type, uint32_t mode, const char *rel)
{
        uint8_t e[sizeof(struct xb_file_entry) + 64];
        struct xb_file_entry h = { .type = type, .mode = mode, .size = 3, .mtime_ns = -5 };
        size_t n = strlen(rel);

        memcpy(e, &h, sizeof(h));
        memcpy(e + sizeof(h), rel, n);
        xb_msgw_put(&w, XB_K_ENTRY, e, sizeof(h) + n);
}

static void
stat_fields(void)
{
        xb_msgw_u64(&w, XB_K_TYPE, XB_FT_SYMLINK);
        xb_msgw_u64(&w, XB_K_MODE, 0777);
        xb_msgw_u64(&w, XB_K_SIZE, 4);
        xb_msgw_u64(&w, XB_K_MTIME_NS, (uint64_t)-1);
}

Test(filec, stat_reply)
{
        struct xb_file_reply rep;

        start(0);
        stat_fields();
        xb_msgw_str(&w, XB_K_DATA, "/usr");
        cr_assert_eq(parse(XB_FOP_STAT, 0, &rep), 0);
        cr_assert_eq(rep.errnum, 0);
        cr_assert_eq(rep.type, XB_FT_SYMLINK);
        cr_assert_eq(rep.mode, 0777);
        cr_assert_eq(rep.size, 4);
        cr_assert_eq(rep.mtime_ns, -1);
        cr_assert_eq(rep.target_len, 4);
        cr_assert_eq(memcmp(rep.target, "/usr", 4), 0);
}

Test(filec, stat_needs_every_field_and_no_more)
{
        struct xb_file_reply rep;

        start(0);
        xb_msgw_u64(&w, XB_K_TYPE, XB_FT_FILE);
        cr_assert_eq(parse(XB_FOP_STAT, 0, &rep), -EBADMSG, "missing MODE, SIZE, MTIME_NS");
        start(0);
        stat_fields();
        xb_msgw_u64(&w, XB_K_MODE, 0644);
        cr_assert_eq(parse(XB_FOP_STAT, 0, &rep), -EBADMSG, "a repeated key");
        start(0);
        stat_fields();
        xb_msgw_u64(&w, XB_K_COUNT, 1);
        cr_assert_eq(parse(XB_FOP_STAT, 0, &rep), -EBADMSG, "a key STAT does not send");
        start(0);
        stat_fields();
        xb_msgw_u64(&w, XB_K_PID, 1);
        cr_assert_eq(parse(XB_FOP_STAT, 0, &rep), -EBADMSG, "a key of another message");
        start(0);
        xb_msgw_u64(&w, XB_K_TYPE, XB_FT_FILE);
        xb_msgw_u64(&w, XB_K_MODE, 0644);
        xb_msgw_u64(&w, XB_K_SIZE, 4);
        xb_msgw_u64(&w, XB_K_MTIME_NS, 0);
        xb_msgw_str(&w, XB_K_DATA, "x");
        cr_assert_eq(parse(XB_FOP_STAT, 0, &rep), -EBADMSG, "a target for a file");
}

Test(filec, values_out_of_range)
{
        struct xb_file_reply rep;
        uint32_t small = 1;

        start(4096);
        cr_assert_eq(parse(XB_FOP_MOVE, 0, &rep), -EBADMSG, "errno over 4095");
        xb_msgw_init(&w, buf, sizeof(buf), XB_EV_FILE, 9);
        cr_assert_eq(parse(XB_FOP_MOVE, 0, &rep), -EBADMSG, "no ERRNO");
        xb_msgw_init(&w, buf, sizeof(buf), XB_EV_FILE, 9);
        xb_msgw_put(&w, XB_K_ERRNO, &small, sizeof(small));
        cr_assert_eq(parse(XB_FOP_MOVE, 0, &rep), -EBADMSG, "a 4-byte number");
        start(0);
        xb_msgw_u64(&w, XB_K_TYPE, 9);
        xb_msgw_u64(&w, XB_K_MODE, 0);
        xb_msgw_u64(&w, XB_K_SIZE, 0);
        xb_msgw_u64(&w, XB_K_MTIME_NS, 0);
        cr_assert_eq(parse(XB_FOP_STAT, 0, &rep), -EBADMSG, "type 9");
        start(0);
        xb_msgw_u64(&w, XB_K_TYPE, XB_FT_FILE);
        xb_msgw_u64(&w, XB_K_MODE, 010000);
        xb_msgw_u64(&w, XB_K_SIZE, 0);
        xb_msgw_u64(&w, XB_K_MTIME_NS, 0);
        cr_assert_eq(parse(XB_FOP_STAT, 0, &rep), -EBADMSG, "mode over 07777");
        start(0);
        xb_msgw_u64(&w, XB_K_TYPE, XB_FT_FILE);
        xb_msgw_u64(&w, XB_K_MODE, 0);
        xb_msgw_u64(&w, XB_K_SIZE, (uint64_t)INT64_MAX + 1);
        xb_msgw_u64(&w, XB_K_MTIME_NS, 0);
        cr_assert_eq(parse(XB_FOP_STAT, 0, &rep), -EBADMSG, "size over INT64_MAX");
        start(0);
        stat_fields();
        xb_msgw_put(&w, XB_K_DATA, "a\0b", 3);
        cr_assert_eq(parse(XB_FOP_STAT, 0, &rep), -EBADMSG, "a NUL in the target");
}

Test(filec, fds_only_with_a_successful_read_or_write)
{
        struct xb_file_reply rep;

        start(0);
        cr_assert_eq(parse(XB_FOP_READ, 1, &rep), 0);
        cr_assert_eq(parse(XB_FOP_WRITE, 1, &rep), 0);
        cr_assert_eq(parse(XB_FOP_READ, 0, &rep), -EBADMSG, "a read without its fd");
        cr_assert_eq(parse(XB_FOP_READ, 2, &rep), -EBADMSG, "two fds");
        cr_assert_eq(parse(XB_FOP_MOVE, 1, &rep), -EBADMSG, "an fd for a move");
        start(ENOENT);
        cr_assert_eq(parse(XB_FOP_READ, 0, &rep), 0);
        cr_assert_eq(rep.errnum, ENOENT);
        cr_assert_eq(parse(XB_FOP_READ, 1, &rep), -EBADMSG, "an fd with an error");
        start(EINVAL);
        xb_msgw_u64(&w, XB_K_TYPE, XB_FT_FIFO);
        cr_assert_eq(parse(XB_FOP_WRITE, 0, &rep), 0);
        cr_assert_eq(rep.type, XB_FT_FIFO);
}

Test(filec, listing_parts)
{
        struct xb_file_reply rep;
        struct xb_msgr m;
        struct xb_file_entry e;
        const char *rel;
        size_t cur = 0, n, count = 0;

        start(0);
        entry(XB_FT_DIR, 0755, "a");
        entry(XB_FT_FILE, 0644, "a/b.txt");
        xb_msgw_u64(&w, XB_K_FLAGS, XB_FILE_MORE);
        cr_assert_eq(parse(XB_FOP_LIST, 0, &rep), 0);
        cr_assert(rep.more);
        cr_assert_eq(rep.nentries, 2);
        cr_assert_eq(rep.entry_bytes, 8);
        xb_msgr_init(&m, buf, w.len);
        while (xb_filec_next_entry(&m, &cur, &e, &rel, &n)) {
                cr_assert_eq(e.size, 3);
                cr_assert_eq(e.mtime_ns, -5);
                count++;
        }
        cr_assert_eq(count, 2);
        start(0);
        entry(XB_FT_FILE, 0644, "c");
        xb_msgw_u64(&w, XB_K_COUNT, 3);
        xb_msgw_u64(&w, XB_K_TRUNC, 1);
        cr_assert_eq(parse(XB_FOP_LIST, 0, &rep), 0);
        cr_assert(!rep.more && rep.trunc && rep.count == 3);
        start(0);
        xb_msgw_u64(&w, XB_K_FLAGS, XB_FILE_MORE);
        cr_assert_eq(parse(XB_FOP_LIST, 0, &rep), -EBADMSG, "a part without entries");
        start(0);
        entry(XB_FT_FILE, 0644, "c");
        xb_msgw_u64(&w, XB_K_FLAGS, XB_FILE_MORE);
        xb_msgw_u64(&w, XB_K_COUNT, 1);
        cr_assert_eq(parse(XB_FOP_LIST, 0, &rep), -EBADMSG, "a part with the final fields");
        start(0);
        entry(XB_FT_FILE, 0644, "c");
        cr_assert_eq(parse(XB_FOP_LIST, 0, &rep), -EBADMSG, "a final part without COUNT");
        start(0);
        entry(XB_FT_FILE, 0644, "c");
        xb_msgw_u64(&w, XB_K_FLAGS, XB_FILE_MORE);
        cr_assert_eq(parse(XB_FOP_STAT, 0, &rep), -EBADMSG, "parts only for LIST");
        start(0);
        xb_msgw_u64(&w, XB_K_FLAGS, 0x2);
        xb_msgw_u64(&w, XB_K_COUNT, 0);
        cr_assert_eq(parse(XB_FOP_LIST, 0, &rep), -EBADMSG, "an unknown flag");
}

Test(filec, entries_with_bad_paths)
{
        static const char *const bad[] = { "/etc", "..", "a/../b", "a//b", "a/", "./a", "a/.", "" };
        struct xb_file_reply rep;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                start(0);
                entry(XB_FT_FILE, 0644, bad[i]);
                xb_msgw_u64(&w, XB_K_COUNT, 1);
                cr_assert_eq(parse(XB_FOP_LIST, 0, &rep), -EBADMSG, "entry path `%s`", bad[i]);
        }
        start(0);
        entry(XB_FT_FILE, 0644, "a..b/.c/...");
        xb_msgw_u64(&w, XB_K_COUNT, 1);
        cr_assert_eq(parse(XB_FOP_LIST, 0, &rep), 0, "dots inside names are fine");
        {
                uint8_t e[sizeof(struct xb_file_entry) + 3];
                struct xb_file_entry h = { .type = XB_FT_FILE };

                memcpy(e, &h, sizeof(h));
                memcpy(e + sizeof(h), "a\0b", 3);
                start(0);
                xb_msgw_put(&w, XB_K_ENTRY, e, sizeof(e));
                xb_msgw_u64(&w, XB_K_COUNT, 1);
                cr_assert_eq(parse(XB_FOP_LIST, 0, &rep), -EBADMSG, "a NUL in an entry");
                start(0);
                xb_msgw_put(&w, XB_K_ENTRY, e, sizeof(h) - 1);
                xb_msgw_u64(&w, XB_K_COUNT, 1);
                cr_assert_eq(parse(XB_FOP_LIST, 0, &rep), -EBADMSG, "a short entry");
        }
        start(0);
        entry(XB_FT_OTHER + 1, 0644, "x");
        xb_msgw_u64(&w, XB_K_COUNT, 1);
        cr_assert_eq(parse(XB_FOP_LIST, 0, &rep), -EBADMSG, "an unknown type");
        start(0);
        entry(XB_FT_FILE, 0644, "x");
        xb_msgw_u64(&w, XB_K_COUNT, 1);
        cr_assert_eq(parse(XB_FOP_DELETE, 0, &rep), -EBADMSG, "entries only for LIST");
}

Test(filec, request_round_trip)
{
        struct xb_file_req q = { .op = XB_FOP_MOVE, .path = "/home/user/a", .path2 = "/tmp/b", .uid = 1000,
                                 .gid = 1000, .mode = 0644, .depth = 1, .flags = XB_FILE_OVERWRITE };
        struct xb_err err = { 0 };
        int sv[2];
        uint8_t in[XB_MSG_MAX];
        struct xb_msgr m;
        const char *s;
        size_t n;
        uint64_t v;
        ssize_t got;

        cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        cr_assert_eq(xb_filec_send(sv[0], 5, &q, &err), 0, "%s", err.msg);
        got = xb_msg_recv(sv[1], in, sizeof(in), NULL, NULL, true);
        cr_assert_gt(got, 0);
        cr_assert_eq(xb_msgr_init(&m, in, (size_t)got), 0);
        cr_assert_eq(m.type, XB_REQ_FILE);
        cr_assert_eq(m.tag, 5);
        cr_assert_eq(xb_msgr_u64(&m, XB_K_OP, &v), 0);
        cr_assert_eq(v, XB_FOP_MOVE);
        cr_assert_eq(xb_msgr_str(&m, XB_K_PATH2, &s, &n), 0);
        cr_assert_eq(n, 6);
        cr_assert_eq(memcmp(s, "/tmp/b", 6), 0);
        {
                char longp[2 * XB_FILE_PATH_MAX + 600];

                memset(longp, 'a', sizeof(longp) - 1);
                longp[0] = '/';
                longp[sizeof(longp) - 1] = '\0';
                q.path = longp;
                cr_assert_eq(xb_filec_send(sv[0], 6, &q, &err), -E2BIG);
        }
        close(sv[0]);
        close(sv[1]);
}
