/* A writer in the sandbox's cgroup: a fork of the daemon, born in the
 * sandbox's v2 group (and joined to its v1 ones) that copies a pipe into
 * a file init opened. The kernel charges page cache and tmpfs pages to
 * the task that writes them, so an upload counts against the sandbox's
 * memory, not the daemon's: past the sandbox's limit the memory cgroup's
 * OOM killer takes the writer first (oom_score_adj 1000), and nothing
 * else in the sandbox. It shares nothing with the sandbox's namespaces;
 * it holds only the pipe and the file. It copies with read(2) and
 * write(2): splice(2) into an overlayfs file was seen to hang in D state
 * while the sandbox renamed directories around it. */
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
#include "sandbox/sandbox.h"

#define WRITER_PIPE_BYTES (1 << 20)
#define WRITER_BUF_BYTES (256 << 10)

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

static int
copy_all(int rd, int fd)
{
        static char buf[WRITER_BUF_BYTES];

        for (;;) {
                ssize_t n = read(rd, buf, sizeof(buf)), off = 0;

                if (n == 0)
                        return 0;
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno;
                while (off < n) {
                        ssize_t k = write(fd, buf + off, (size_t)(n - off));

                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k < 0)
                                return errno;
                        off += k;
                }
        }
}

static void __attribute__((noreturn))
writer_main(const struct xb_cgroup_join *j, int rd, int fd)
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
        e = copy_all(rd, fd);
        _exit(e > 0 && e < 256 ? e : e ? EIO : 0);
}

int
xb_sandbox_writer(struct xb_sandbox *sb, int fd, int *ret_wr, int *ret_pidfd, struct xb_err *err)
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
        (void)fcntl(wr, F_SETPIPE_SZ, WRITER_PIPE_BYTES);   /* fewer wake-ups; 64 KiB is fine too */
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
                writer_main(&join, rd, fd);
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
