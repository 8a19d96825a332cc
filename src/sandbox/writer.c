/* A writer in the sandbox's cgroup: a fork of the daemon, born in the
 * sandbox's v2 group (and joined to its v1 ones) that copies a pipe into
 * a file init opened. The kernel charges page cache and tmpfs pages to
 * the task that writes them, so an upload counts against the sandbox's
 * memory, not the daemon's: past the sandbox's limit the memory cgroup's
 * OOM killer takes the writer first (oom_score_adj 1000), and nothing
 * else in the sandbox. It shares nothing with the sandbox's namespaces;
 * it holds only the pipe and the file. It copies with read(2) and
 * write(2): splice(2) into an overlayfs file was seen to hang in D state
 * while the sandbox renamed directories around it.
 *
 * A gzip body (XB_WRITER_GUNZIP) is decoded here, in the sandbox's
 * cgroup: the inflating's CPU and memory, and every decoded byte, are
 * the sandbox's, and the daemon only moves the compressed bytes. Its
 * pipe and input buffer are small, so that what is left to decode when
 * the body ends (the daemon waits for that) stays bounded: 32 KiB of
 * input decodes to at most ~33 MiB (deflate's ratio is under 1032:1).
 * It stops with EFBIG past max_out decoded bytes, EBADMSG on a corrupt
 * stream and ENODATA on one cut short. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/gunzip.h"
#include "sandbox/sandbox.h"

#define WRITER_PIPE_BYTES (1 << 20)
#define WRITER_BUF_BYTES (256 << 10)
#define GUNZIP_PIPE_BYTES (16 << 10)
#define GUNZIP_IN_BYTES (16 << 10)

static void
close_others(int a, int b)
{
        int lo = a < b ? a : b, hi = a < b ? b : a;

        if (lo > 3)
                syscall(SYS_close_range, 3u, (unsigned)lo - 1, 0u);
        if (hi > lo + 1)
                syscall(SYS_close_range, (unsigned)lo + 1, (unsigned)hi - 1, 0u);
        syscall(SYS_close_range, (unsigned)hi + 1, ~0u, 0u);
}

static char buf[WRITER_BUF_BYTES];

static int
write_all(int fd, const char *p, size_t n)
{
        size_t off = 0;

        while (off < n) {
                ssize_t k = write(fd, p + off, n - off);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return errno;
                off += (size_t)k;
        }
        return 0;
}

static int
copy_all(int rd, int fd)
{
        for (;;) {
                ssize_t n = read(rd, buf, sizeof(buf));
                int e;

                if (n == 0)
                        return 0;
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno;
                if ((e = write_all(fd, buf, (size_t)n)))
                        return e;
        }
}

/* Decode the pipe into fd, at most max_out bytes. */
static int
gunzip_all(int rd, int fd, uint64_t max_out)
{
        static char in[GUNZIP_IN_BYTES];
        struct xb_gunzip *g = xb_gunzip_new();
        size_t have = 0, off = 0;
        bool eof = false;

        if (!g)
                return ENOMEM;
        for (;;) {
                size_t used, made;
                int r, e;

                if (off == have && !eof) {
                        ssize_t n = read(rd, in, sizeof(in));

                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0)
                                return errno;
                        eof = n == 0;
                        have = (size_t)n;
                        off = 0;
                }
                r = xb_gunzip_run(g, in + off, have - off, &used, buf, sizeof(buf), &made);
                off += used;
                if (xb_gunzip_out_bytes(g) > max_out)
                        return EFBIG;
                if (made && (e = write_all(fd, buf, made)))
                        return e;
                if (r < 0)
                        return -r;
                if (eof && made < sizeof(buf))
                        return -xb_gunzip_end(g);
        }
}

static void __attribute__((noreturn))
writer_main(const struct xb_cgroup_join *j, int rd, int fd, const struct xb_writer_opts *o)
{
        int adj, e;

        if (xb_cgroup_join_self(j) < 0)
                _exit(EIO);
        adj = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
        if (adj >= 0) {
                if (write(adj, "1000", 4) < 0)
                        _exit(EIO);
                close(adj);
        }
        close_others(rd, fd);
        signal(SIGPIPE, SIG_DFL);
        e = o && (o->flags & XB_WRITER_GUNZIP) ? gunzip_all(rd, fd, o->max_out) : copy_all(rd, fd);
        _exit(e > 0 && e < 256 ? e : e ? EIO : 0);
}

int
xb_sandbox_writer(struct xb_sandbox *sb, int fd, const struct xb_writer_opts *o, int *ret_wr, int *ret_pidfd,
                  struct xb_err *err)
{
        struct clone_args ca = { 0 };
        struct xb_cgroup_join join;
        _cleanup_close_ int rd = -1, wr = -1;
        int p[2], pidfd = -1, r;
        pid_t pid;

        if (pipe2(p, O_CLOEXEC) < 0)
                return xb_err_set(err, errno, "pipe");
        rd = p[0];
        wr = p[1];
        /* fewer wake-ups; 64 KiB is fine too. A gzip body's is small (see the top). */
        (void)fcntl(wr, F_SETPIPE_SZ, o && (o->flags & XB_WRITER_GUNZIP) ? GUNZIP_PIPE_BYTES : WRITER_PIPE_BYTES);
        if ((r = xb_cgroup_join_open(sb->cg, &join, err)) < 0)
                return r;
        ca.flags = CLONE_PIDFD;
        ca.pidfd = (uint64_t)(uintptr_t)&pidfd;
        ca.exit_signal = SIGCHLD;
        if (xb_cgroup_clone_fd(sb->cg) >= 0) {
                ca.flags |= CLONE_INTO_CGROUP;
                ca.cgroup = (uint64_t)xb_cgroup_clone_fd(sb->cg);
        }
        pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
        if (pid < 0) {
                r = xb_err_set(err, errno, "start the sandbox's writer");
                xb_cgroup_join_close(&join);
                return r;
        }
        if (pid == 0)
                writer_main(&join, rd, fd, o);
        xb_cgroup_join_close(&join);
        if (fcntl(wr, F_SETFL, O_NONBLOCK) < 0) {
                r = xb_err_set(err, errno, "pipe");
                kill(pid, SIGKILL);
                xb_sandbox_writer_wait(pidfd, 1000);
                return r;
        }
        *ret_wr = TAKE_FD(wr);
        *ret_pidfd = pidfd;
        return 0;
}

int
xb_sandbox_writer_wait(int pidfd, int wait_ms)
{
        struct pollfd p = { .fd = pidfd, .events = POLLIN };
        siginfo_t si = { 0 };
        bool late = false;
        int r;

        if (poll(&p, 1, wait_ms) <= 0) {
                late = true;
                /* Not done: killed, and given as long again to die. */
                syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                if (poll(&p, 1, wait_ms) <= 0) {
                        /* Stuck in the kernel: it stays a zombie rather than hold the loop. */
                        close(pidfd);
                        return -2;
                }
        }
        do
                r = waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED | WNOHANG);
        while (r < 0 && errno == EINTR);
        close(pidfd);
        if (r < 0 || !si.si_pid)
                return EIO;
        if (late)
                return ETIMEDOUT;
        if (si.si_code == CLD_EXITED)
                return si.si_status;
        return -1;
}
