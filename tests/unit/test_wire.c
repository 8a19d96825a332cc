/* Unit tests for proto/wire.h: the writer and the reader, the reader's
 * refusal of every malformed message, and fd passing over a real
 * SOCK_SEQPACKET socketpair, where a message with too many fds must be
 * refused without leaking one (counted in /proc/self/fd). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "proto/wire.h"

static uint8_t buf[XB_MSG_MAX * 2];

/* Raw little helpers to forge messages the writer would never produce. */
static size_t
put32(uint8_t *p, size_t off, uint32_t v)
{
        memcpy(p + off, &v, 4);
        return off + 4;
}

static size_t
forge(uint8_t *p, uint32_t type, uint32_t tag)
{
        return put32(p, put32(p, 0, type), tag);
}

/* ---- writer and reader ---- */

Test(wire, round_trip)
{
        static const uint8_t bin[3] = { 0xff, 0x00, 0x7f };
        struct xb_msgw w;
        struct xb_msgr r;
        struct xb_field f;
        const char *s;
        size_t cur = 0, slen;
        uint64_t v;
        int i = 0;

        xb_msgw_init(&w, buf, sizeof(buf), XB_REQ_SPAWN, 77);
        xb_msgw_str(&w, XB_K_ARGV, "ls");
        xb_msgw_str(&w, XB_K_ARGV, "-l");
        xb_msgw_str(&w, XB_K_ENV, "A=1");
        xb_msgw_str(&w, XB_K_CWD, "/home/user");
        xb_msgw_u64(&w, XB_K_UID, 1000);
        xb_msgw_u64(&w, XB_K_RLIMIT_FSIZE, UINT64_MAX);
        xb_msgw_str(&w, XB_K_ARGV, "");
        xb_msgw_put(&w, XB_K_DATA, bin, sizeof(bin));
        cr_assert_not(w.overflow);
        cr_assert_eq(w.len % 4, 0, "message length %zu is not padded", w.len);

        cr_assert_eq(xb_msgr_init(&r, buf, w.len), 0);
        cr_assert_eq(r.type, XB_REQ_SPAWN);
        cr_assert_eq(r.tag, 77);

        {
                static const struct { uint32_t key; const char *s; size_t len; } want[] = {
                        { XB_K_ARGV, "ls", 2 }, { XB_K_ARGV, "-l", 2 }, { XB_K_ENV, "A=1", 3 },
                        { XB_K_CWD, "/home/user", 10 }, { XB_K_UID, NULL, 8 }, { XB_K_RLIMIT_FSIZE, NULL, 8 },
                        { XB_K_ARGV, "", 0 }, { XB_K_DATA, (const char *)bin, 3 },
                };

                while (xb_msgr_next(&r, &cur, &f)) {
                        cr_assert_lt(i, 8, "more fields than written");
                        cr_assert_eq(f.key, want[i].key, "field %d key %u", i, f.key);
                        cr_assert_eq(f.len, want[i].len, "field %d len %u", i, f.len);
                        if (want[i].s)
                                cr_assert_arr_eq(f.data, want[i].s, f.len);
                        cr_assert_geq(f.data, buf);
                        cr_assert_leq(f.data + f.len, buf + w.len);
                        i++;
                }
                cr_assert_eq(i, 8);
        }
        cr_assert_eq(xb_msgr_u64(&r, XB_K_UID, &v), 0);
        cr_assert_eq(v, 1000);
        cr_assert_eq(xb_msgr_u64(&r, XB_K_RLIMIT_FSIZE, &v), 0);
        cr_assert_eq(v, UINT64_MAX);
        cr_assert_eq(xb_msgr_str(&r, XB_K_CWD, &s, &slen), 0);
        cr_assert_eq(slen, 10);
        cr_assert_arr_eq(s, "/home/user", 10);
        /* Absent keys, and a u64 read of a field that is not 8 bytes. */
        cr_assert_eq(xb_msgr_u64(&r, XB_K_PID, &v), -ENOENT);
        cr_assert_eq(xb_msgr_str(&r, XB_K_PATH, &s, &slen), -ENOENT);
        cr_assert_eq(xb_msgr_u64(&r, XB_K_CWD, &v), -EBADMSG);
        cr_assert_eq(xb_msgr_u64(&r, XB_K_DATA, &v), -EBADMSG);
}

Test(wire, padding_is_zeroed)
{
        struct xb_msgw w;

        memset(buf, 0xee, 64);
        xb_msgw_init(&w, buf, 64, 1, 2);
        xb_msgw_put(&w, 9, "abcde", 5);
        cr_assert_eq(w.len, 8 + 8 + 8);
        cr_assert_eq(buf[16 + 5], 0);
        cr_assert_eq(buf[16 + 6], 0);
        cr_assert_eq(buf[16 + 7], 0);
}

Test(wire, repeated_keys_in_order)
{
        struct xb_msgw w;
        struct xb_msgr r;
        struct xb_field f;
        size_t cur = 0;
        uint64_t v;
        char want[16];
        int n = 0;

        xb_msgw_init(&w, buf, sizeof(buf), XB_REQ_SPAWN, 1);
        for (int i = 0; i < 100; i++) {
                snprintf(want, sizeof(want), "arg%d", i);
                xb_msgw_str(&w, XB_K_ARGV, want);
                xb_msgw_u64(&w, XB_K_ENV, (uint64_t)i);
        }
        cr_assert_not(w.overflow);
        cr_assert_eq(xb_msgr_init(&r, buf, w.len), 0);
        while (xb_msgr_next(&r, &cur, &f)) {
                if (f.key != XB_K_ARGV)
                        continue;
                snprintf(want, sizeof(want), "arg%d", n++);
                cr_assert_eq(f.len, strlen(want));
                cr_assert_arr_eq(f.data, want, f.len);
        }
        cr_assert_eq(n, 100);
        /* The lookups return the first of a repeated key. */
        cr_assert_eq(xb_msgr_u64(&r, XB_K_ENV, &v), 0);
        cr_assert_eq(v, 0);
}

Test(wire, header_only_message)
{
        struct xb_msgw w;
        struct xb_msgr r;
        struct xb_field f;
        size_t cur = 0;

        xb_msgw_init(&w, buf, sizeof(buf), XB_EV_READY, 0xffffffffu);
        cr_assert_eq(w.len, 8);
        cr_assert_eq(xb_msgr_init(&r, buf, w.len), 0);
        cr_assert_eq(r.type, XB_EV_READY);
        cr_assert_eq(r.tag, 0xffffffffu);
        cr_assert_not(xb_msgr_next(&r, &cur, &f));
}

Test(wire, writer_overflow)
{
        struct xb_msgw w;

        /* Exactly full: header + field header + 4 bytes. */
        xb_msgw_init(&w, buf, 20, 1, 1);
        xb_msgw_put(&w, 1, "abcd", 4);
        cr_assert_not(w.overflow);
        cr_assert_eq(w.len, 20);
        /* Even an empty field needs 8 more bytes. */
        xb_msgw_put(&w, 2, "", 0);
        cr_assert(w.overflow);
        cr_assert_eq(w.len, 20);

        /* A field too big voids the message; later small ones stay out. */
        xb_msgw_init(&w, buf, 32, 1, 1);
        xb_msgw_str(&w, 1, "ok");
        cr_assert_eq(w.len, 20);
        xb_msgw_put(&w, 2, "0123456789abcdef", 16);
        cr_assert(w.overflow);
        cr_assert_eq(w.len, 20);
        xb_msgw_put(&w, 3, "x", 1);
        cr_assert(w.overflow);
        cr_assert_eq(w.len, 20);

        /* Padding counts: 5 bytes take 8. */
        xb_msgw_init(&w, buf, 8 + 8 + 7, 1, 1);
        xb_msgw_put(&w, 1, "abcde", 5);
        cr_assert(w.overflow);

        /* No room for the header. */
        xb_msgw_init(&w, buf, 7, 1, 1);
        cr_assert(w.overflow);
        xb_msgw_put(&w, 1, "", 0);
        cr_assert(w.overflow);
        cr_assert_eq(w.len, 0);
}

Test(wire, writer_is_capped_at_msg_max)
{
        static uint8_t big[XB_MSG_MAX];
        struct xb_msgw w;
        struct xb_msgr r;

        /* A buffer larger than XB_MSG_MAX still yields at most XB_MSG_MAX. */
        xb_msgw_init(&w, buf, sizeof(buf), 1, 1);
        xb_msgw_put(&w, 1, big, XB_MSG_MAX - 16);
        cr_assert_not(w.overflow);
        cr_assert_eq(w.len, XB_MSG_MAX);
        cr_assert_eq(xb_msgr_init(&r, buf, w.len), 0);
        xb_msgw_put(&w, 2, "", 0);
        cr_assert(w.overflow);

        xb_msgw_init(&w, buf, sizeof(buf), 1, 1);
        xb_msgw_put(&w, 1, big, XB_MSG_MAX - 15);
        cr_assert(w.overflow);
        cr_assert_eq(w.len, 8);

        xb_msgw_init(&w, buf, sizeof(buf), 1, 1);
        xb_msgw_put(&w, 1, buf, (size_t)XB_MSG_MAX * 2 - 16);
        cr_assert(w.overflow);

        /* Lengths whose padding would wrap size_t. */
        for (size_t k = 0; k < 4; k++) {
                xb_msgw_init(&w, buf, sizeof(buf), 1, 1);
                xb_msgw_put(&w, 1, buf, SIZE_MAX - k);
                cr_assert(w.overflow, "length SIZE_MAX - %zu accepted", k);
                cr_assert_eq(w.len, 8);
        }
}

Test(wire, reader_rejects_short_or_oversized_messages)
{
        struct xb_msgr r;

        memset(buf, 0, sizeof(buf));
        for (size_t len = 0; len < 8; len++)
                cr_assert_eq(xb_msgr_init(&r, buf, len), -EBADMSG, "len %zu accepted", len);
        cr_assert_eq(xb_msgr_init(&r, buf, 8), 0);
        /* XB_MSG_MAX bytes of empty fields are fine; one more byte is not. */
        forge(buf, 1, 1);
        for (size_t off = 8; off < XB_MSG_MAX; off += 8)
                put32(buf, put32(buf, off, 5), 0);
        cr_assert_eq(xb_msgr_init(&r, buf, XB_MSG_MAX), 0);
        cr_assert_eq(xb_msgr_init(&r, buf, XB_MSG_MAX + 8), -EBADMSG);
        cr_assert_eq(xb_msgr_init(&r, buf, XB_MSG_MAX + 1), -EBADMSG);
}

Test(wire, reader_rejects_truncated_fields)
{
        struct xb_msgr r;
        size_t n;

        /* 1 to 7 bytes after the header: not even a field header. */
        n = forge(buf, 1, 1);
        memset(buf + n, 0, 8);
        for (size_t extra = 1; extra < 8; extra++)
                cr_assert_eq(xb_msgr_init(&r, buf, n + extra), -EBADMSG, "%zu stray bytes accepted", extra);

        /* A good field, then a partial field header. */
        n = forge(buf, 1, 1);
        n = put32(buf, n, 1);
        n = put32(buf, n, 4);
        n = put32(buf, n, 0x41414141);
        n = put32(buf, n, 2);
        cr_assert_eq(xb_msgr_init(&r, buf, n), -EBADMSG);
}

Test(wire, reader_rejects_lengths_past_the_end)
{
        static const uint32_t lens[] = { 1, 4, 5, 8, 9, 100, 0x7fffffffu, 0xfffffffcu, 0xfffffffdu, 0xffffffffu };
        struct xb_msgr r;
        size_t n;

        for (size_t i = 0; i < ARRAY_SIZE(lens); i++) {
                n = forge(buf, 1, 1);
                n = put32(buf, n, 1);
                n = put32(buf, n, lens[i]);
                cr_assert_eq(xb_msgr_init(&r, buf, n), -EBADMSG, "length %u with no data accepted", lens[i]);
        }
        /* 8 bytes of data, claims 9 (padded to 12). */
        n = forge(buf, 1, 1);
        n = put32(buf, n, 1);
        n = put32(buf, n, 9);
        memset(buf + n, 'x', 8);
        cr_assert_eq(xb_msgr_init(&r, buf, n + 8), -EBADMSG);
        /* 5 bytes of data without its padding. */
        n = forge(buf, 1, 1);
        n = put32(buf, n, 1);
        n = put32(buf, n, 5);
        memset(buf + n, 'x', 5);
        cr_assert_eq(xb_msgr_init(&r, buf, n + 5), -EBADMSG);
        /* The bad field second, after a good one. */
        n = forge(buf, 1, 1);
        n = put32(buf, n, 1);
        n = put32(buf, n, 0);
        n = put32(buf, n, 2);
        n = put32(buf, n, 64);
        memset(buf + n, 'x', 60);
        cr_assert_eq(xb_msgr_init(&r, buf, n + 60), -EBADMSG);
}

Test(wire, reader_checks_the_message_it_is_given_not_the_buffer)
{
        /* A message whose last field runs past len but not past the buffer. */
        struct xb_msgw w;
        struct xb_msgr r;

        xb_msgw_init(&w, buf, sizeof(buf), 1, 1);
        xb_msgw_str(&w, 1, "0123456789abcdef");
        cr_assert_eq(xb_msgr_init(&r, buf, w.len), 0);
        for (size_t len = 9; len < w.len; len++)
                cr_assert_eq(xb_msgr_init(&r, buf, len), -EBADMSG, "cut at %zu accepted", len);
}

Test(wire, str_rejects_embedded_nul)
{
        struct xb_msgw w;
        struct xb_msgr r;
        struct xb_field f;
        const char *s = NULL;
        size_t slen = 99, cur = 0;

        xb_msgw_init(&w, buf, sizeof(buf), 1, 1);
        xb_msgw_put(&w, XB_K_PATH, "a\0b", 3);
        xb_msgw_put(&w, XB_K_PATH2, "ab\0", 3);
        xb_msgw_put(&w, XB_K_NAME, "\0", 1);
        xb_msgw_put(&w, XB_K_CWD, "", 0);
        cr_assert_eq(xb_msgr_init(&r, buf, w.len), 0);
        cr_assert_eq(xb_msgr_str(&r, XB_K_PATH, &s, &slen), -EBADMSG);
        cr_assert_eq(xb_msgr_str(&r, XB_K_PATH2, &s, &slen), -EBADMSG);
        cr_assert_eq(xb_msgr_str(&r, XB_K_NAME, &s, &slen), -EBADMSG);
        cr_assert_null(s, "*ret written on failure");
        cr_assert_eq(slen, 99);
        cr_assert_eq(xb_msgr_str(&r, XB_K_CWD, &s, &slen), 0);
        cr_assert_eq(slen, 0);
        cr_assert_not_null(s);
        cr_assert(xb_msgr_next(&r, &cur, &f));
        cr_assert_not(xb_field_is_str(&f));
}

/* ---- over a socket ---- */

static int
count_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        struct dirent *e;
        int n = 0;

        cr_assert_not_null(d);
        while ((e = readdir(d)))
                n += e->d_name[0] != '.';
        closedir(d);
        return n;
}

static void
pair(int sv[2])
{
        cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
}

static bool
same_file(int a, int b)
{
        struct stat sa, sb;

        cr_assert_eq(fstat(a, &sa), 0);
        cr_assert_eq(fstat(b, &sb), 0);
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Send nfds copies of fd in one SCM_RIGHTS message, bypassing the limit in xb_msg_send. */
static void
raw_send(int sock, const void *p, size_t len, const int *fds, size_t nfds, int cmsgs)
{
        char ctl[CMSG_SPACE(sizeof(int) * 64) * 2];
        struct iovec iov = { .iov_base = (void *)p, .iov_len = len };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl };
        struct cmsghdr *c;
        size_t per = nfds / (size_t)cmsgs, done = 0;

        memset(ctl, 0, sizeof(ctl));
        m.msg_controllen = (size_t)cmsgs * CMSG_SPACE(sizeof(int) * per);
        c = CMSG_FIRSTHDR(&m);
        for (int k = 0; k < cmsgs; k++) {
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * per);
                memcpy(CMSG_DATA(c), fds + done, sizeof(int) * per);
                done += per;
                c = CMSG_NXTHDR(&m, c);
        }
        cr_assert_eq(sendmsg(sock, &m, 0), (ssize_t)len, "sendmsg: %s", strerror(errno));
}

Test(wire_socket, message_and_fds_arrive)
{
        int sv[2], p[2], devnull, fds[3], got[XB_MSG_MAXFDS] = { -1, -1, -1, -1 };
        struct xb_msgw w;
        struct xb_msgr r;
        uint8_t rbuf[XB_MSG_MAX];
        size_t nfds = 99;
        uint64_t v;
        ssize_t n;
        char c;

        pair(sv);
        cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
        devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        cr_assert_geq(devnull, 0);
        fds[0] = p[0];
        fds[1] = p[1];
        fds[2] = devnull;

        xb_msgw_init(&w, buf, sizeof(buf), XB_REQ_SPAWN, 5);
        xb_msgw_u64(&w, XB_K_FLAGS, XB_SPAWN_STDIN | XB_SPAWN_STDOUT | XB_SPAWN_STDERR);
        xb_msgw_str(&w, XB_K_ARGV, "true");
        cr_assert_eq(xb_msg_send(sv[0], buf, w.len, fds, 3), 0);

        n = xb_msg_recv(sv[1], rbuf, sizeof(rbuf), got, &nfds, false);
        cr_assert_eq(n, (ssize_t)w.len);
        cr_assert_arr_eq(rbuf, buf, w.len);
        cr_assert_eq(nfds, 3);
        for (int i = 0; i < 3; i++) {
                cr_assert_geq(got[i], 0);
                for (int j = 0; j < 3; j++) {
                        cr_assert_neq(got[i], fds[j], "received fd %d is a sent fd number", got[i]);
                        if (j != i)
                                cr_assert_neq(got[i], got[j]);
                }
                cr_assert(same_file(got[i], fds[i]), "fd %d is not the file sent as %d", got[i], fds[i]);
                cr_assert(fcntl(got[i], F_GETFD) & FD_CLOEXEC, "fd %d arrived without O_CLOEXEC", got[i]);
        }
        cr_assert_eq(got[3], -1, "a slot past nfds was written");
        /* The pipe works through the received ends. */
        cr_assert_eq(write(got[1], "z", 1), 1);
        cr_assert_eq(read(p[0], &c, 1), 1);
        cr_assert_eq(c, 'z');

        cr_assert_eq(xb_msgr_init(&r, rbuf, (size_t)n), 0);
        cr_assert_eq(xb_msgr_u64(&r, XB_K_FLAGS, &v), 0);
        cr_assert_eq(v, 7);
        for (int i = 0; i < 3; i++)
                close(got[i]);
        close(p[0]);
        close(p[1]);
        close(devnull);
        close(sv[0]);
        close(sv[1]);
}

Test(wire_socket, max_fds_accepted)
{
        int sv[2], fds[XB_MSG_MAXFDS], got[XB_MSG_MAXFDS];
        size_t nfds = 0;

        pair(sv);
        for (int i = 0; i < XB_MSG_MAXFDS; i++)
                fds[i] = sv[0];
        forge(buf, 1, 1);
        cr_assert_eq(xb_msg_send(sv[0], buf, 8, fds, XB_MSG_MAXFDS), 0);
        cr_assert_eq(xb_msg_recv(sv[1], buf + 100, 100, got, &nfds, false), 8);
        cr_assert_eq(nfds, XB_MSG_MAXFDS);
        for (int i = 0; i < XB_MSG_MAXFDS; i++) {
                cr_assert(same_file(got[i], sv[0]));
                close(got[i]);
        }
        close(sv[0]);
        close(sv[1]);
}

Test(wire_socket, no_fds_and_eof)
{
        int sv[2], got[XB_MSG_MAXFDS];
        size_t nfds = 99;

        pair(sv);
        forge(buf, XB_EV_READY, 0);
        cr_assert_eq(xb_msg_send(sv[0], buf, 8, NULL, 0), 0);
        cr_assert_eq(xb_msg_recv(sv[1], buf + 100, 100, got, &nfds, false), 8);
        cr_assert_eq(nfds, 0);
        /* Nothing pending: non-blocking receive says so. */
        cr_assert_eq(xb_msg_recv(sv[1], buf + 100, 100, got, &nfds, true), -EAGAIN);
        close(sv[0]);
        cr_assert_eq(xb_msg_recv(sv[1], buf + 100, 100, got, &nfds, false), 0);
        cr_assert_eq(nfds, 0);
        close(sv[1]);
}

Test(wire_socket, send_refuses_out_of_bounds)
{
        int sv[2], fds[XB_MSG_MAXFDS + 1];

        pair(sv);
        for (int i = 0; i <= XB_MSG_MAXFDS; i++)
                fds[i] = sv[0];
        forge(buf, 1, 1);
        cr_assert_eq(xb_msg_send(sv[0], buf, 8, fds, XB_MSG_MAXFDS + 1), -EINVAL);
        cr_assert_eq(xb_msg_send(sv[0], buf, XB_MSG_MAX + 1, NULL, 0), -EINVAL);
        /* Nothing went out. */
        cr_assert_eq(xb_msg_recv(sv[1], buf + 100, 100, NULL, NULL, true), -EAGAIN);
        close(sv[0]);
        cr_assert_eq(xb_msg_send(sv[1], buf, 8, NULL, 0), -EPIPE);
        close(sv[1]);
}

/* Too many fds, in one control message or two, or into a NULL fds array:
 * refused, nothing leaked, and the next message still comes through. */
static void
too_many(size_t nsend, int cmsgs, bool with_array)
{
        int sv[2], fds[64], got[XB_MSG_MAXFDS] = { -1, -1, -1, -1 };
        size_t nfds = 99;
        int before, after;

        pair(sv);
        for (size_t i = 0; i < nsend; i++)
                fds[i] = sv[0];
        forge(buf, 1, 1);
        before = count_fds();
        raw_send(sv[0], buf, 8, fds, nsend, cmsgs);
        cr_assert_eq(xb_msg_recv(sv[1], buf + 100, 100, with_array ? got : NULL, with_array ? &nfds : NULL, false),
                     -EBADMSG, "%zu fds accepted", nsend);
        after = count_fds();
        cr_assert_eq(after, before, "%d fds leaked receiving %zu fds", after - before, nsend);
        if (with_array)
                cr_assert_eq(nfds, 0);
        /* The socket is still usable. */
        cr_assert_eq(xb_msg_send(sv[0], buf, 8, NULL, 0), 0);
        cr_assert_eq(xb_msg_recv(sv[1], buf + 100, 100, got, &nfds, false), 8);
        cr_assert_eq(nfds, 0);
        cr_assert_eq(count_fds(), before);
        close(sv[0]);
        close(sv[1]);
}

Test(wire_socket, too_many_fds_rejected_without_leak)
{
        too_many(XB_MSG_MAXFDS + 1, 1, true);
        too_many(XB_MSG_MAXFDS * 2, 1, true);
        too_many(XB_MSG_MAXFDS * 4, 1, true);
        too_many(XB_MSG_MAXFDS + 2, 2, true);
}

Test(wire_socket, fds_without_an_array_rejected_without_leak)
{
        too_many(1, 1, false);
        too_many(XB_MSG_MAXFDS, 1, false);
}

Test(wire_socket, truncated_message_rejected_without_leak)
{
        int sv[2], fds[2], got[XB_MSG_MAXFDS];
        struct xb_msgw w;
        size_t nfds = 99;
        int before;

        pair(sv);
        fds[0] = fds[1] = sv[1];
        xb_msgw_init(&w, buf, sizeof(buf), 1, 1);
        xb_msgw_str(&w, 1, "a field that does not fit");
        before = count_fds();
        cr_assert_eq(xb_msg_send(sv[0], buf, w.len, fds, 2), 0);
        cr_assert_eq(xb_msg_recv(sv[1], buf + w.len, 16, got, &nfds, false), -EBADMSG);
        cr_assert_eq(nfds, 0);
        cr_assert_eq(count_fds(), before);
        close(sv[0]);
        close(sv[1]);
}

Test(wire_socket, unexpected_control_data_rejected_without_leak)
{
        /* With SO_PASSCRED every message brings SCM_CREDENTIALS, which the
         * receiver does not expect: refused, and the fds with it closed. */
        int sv[2], fds[2], got[XB_MSG_MAXFDS], one = 1;
        size_t nfds = 99;
        int before;

        pair(sv);
        cr_assert_eq(setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)), 0);
        fds[0] = fds[1] = sv[0];
        forge(buf, 1, 1);
        before = count_fds();
        cr_assert_eq(xb_msg_send(sv[0], buf, 8, fds, 2), 0);
        cr_assert_eq(xb_msg_recv(sv[1], buf + 100, 100, got, &nfds, false), -EBADMSG);
        cr_assert_eq(nfds, 0);
        cr_assert_eq(count_fds(), before);
        close(sv[0]);
        close(sv[1]);
}
