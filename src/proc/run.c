/* One-shot runs: a sandbox, one command, its output, its verdict.
 *
 * Theory of operation. The host side (this process) makes the pipes,
 * keeps the read ends and hands the write ends to the sandbox's setup
 * child, which starts the command itself while init starts (init adopts
 * it). It closes its copies once the sandbox is started, so EOF means
 * every process that held them has exited or closed them. One epoll loop watches the init
 * socket, init's pidfd, both pipes, the stdin relay and a signalfd. The
 * command's exit ends the sandbox (init exits after reporting it, and the
 * kernel kills the rest of the pid namespace), so the pipes reach EOF; the
 * short drain bounds the wait regardless. Timeouts and the CPU limit kill
 * the whole sandbox; the pipes then reach EOF with what was printed kept.
 * With a terminal there are no pipes: the command makes a pty of the
 * sandbox's devpts as it starts and sends us its master, which then
 * stands for stdout (reads) and stdin (writes); EIO on it is the EOF. */
#define _GNU_SOURCE
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "proc/initc.h"

#define SPAWN_TAG 1
#define CPU_POLL_MS 20

enum { EV_SOCK = 1, EV_PIDFD, EV_OUT, EV_ERR, EV_IN_SRC, EV_IN_DST, EV_SIGNAL, EV_OOM, EV_TTY };

struct stream {
        int fd;
        int target;            /* streaming: where the head goes live; -1 captures */
        struct xb_outbuf *buf;
        bool eof;
};

struct relay {
        int src, dst;
        bool src_pollable, src_eof, dst_closed;
        bool tty;              /* dst is a pty master: EOF is typed, not a close */
        char data[65536];
        size_t off, len;
};

struct run {
        const struct xb_run_opts *o;
        struct xb_sandbox *sb;
        struct xb_result *res;
        int ep;
        int tty_sock;          /* where the pty master comes from, until it has */
        struct stream out, err;
        struct relay in;
        bool exited, dead, ready, spawned;
        bool timed_out, cpu_exceeded, output_killed, interrupted, killed;
        bool oom;              /* v1's OOM event came (its kill count may stay 0: we kill first) */
        int status;
        uint64_t t_spawn, t_exit, drain_deadline, wall_deadline, cpu_next;
        uint64_t rusage_cpu_us;
        uint8_t msg[XB_MSG_MAX];
};

static uint64_t
now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int
ep_add(int ep, int fd, uint32_t events, uint64_t tag)
{
        struct epoll_event ev = { .events = events, .data.u64 = tag };

        return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

static void
kill_all(struct run *r)
{
        if (!r->killed) {
                r->killed = true;
                if (!r->exited)
                        r->t_exit = now_ms();
                xb_sandbox_kill(r->sb);
        }
}

/* Our stdout may share a file description with a stdin we made
 * non-blocking (a terminal): wait for room rather than drop output. */
static int
write_out(int fd, const char *p, size_t n)
{
        while (n > 0) {
                ssize_t w = write(fd, p, n);

                if (w < 0 && errno == EAGAIN) {
                        struct pollfd pfd = { .fd = fd, .events = POLLOUT };

                        poll(&pfd, 1, -1);
                        continue;
                }
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        return -errno;
                p += w;
                n -= (size_t)w;
        }
        return 0;
}

static void
stream_data(struct run *r, struct stream *s, const char *p, size_t n)
{
        struct xb_outbuf *b = s->buf;

        if (s->target >= 0 && b->head_len < b->head_cap) {
                size_t live = b->head_cap - b->head_len < n ? b->head_cap - b->head_len : n;

                /* Our reader went away (`| head -1`): pass that on, so the
                 * command gets SIGPIPE as it would outside the sandbox. */
                if (write_out(s->target, p, live) == -EPIPE) {
                        s->eof = true;
                        epoll_ctl(r->ep, EPOLL_CTL_DEL, s->fd, NULL);
                        close(s->fd);
                        s->fd = -1;
                        s->target = -1;
                        return;
                }
        }
        xb_outbuf_write(b, p, n);
        if (xb_outbuf_truncated(b) && r->o->kill_on_output_limit && !r->output_killed) {
                r->output_killed = true;
                kill_all(r);
        }
}

static void
stream_read(struct run *r, struct stream *s)
{
        char buf[65536];

        /* A bounded number of reads per wakeup keeps one stream from starving the loop. */
        for (int i = 0; i < 16 && !s->eof; i++) {
                ssize_t n = read(s->fd, buf, sizeof(buf));

                if (n > 0) {
                        stream_data(r, s, buf, (size_t)n);
                        continue;
                }
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return;
                s->eof = true;
                epoll_ctl(r->ep, EPOLL_CTL_DEL, s->fd, NULL);
        }
}

static void
relay_close_dst(struct run *r)
{
        struct relay *in = &r->in;

        if (!in->dst_closed) {
                epoll_ctl(r->ep, EPOLL_CTL_DEL, in->dst, NULL);
                close(in->dst);
                in->dst_closed = true;
                if (in->src_pollable && !in->src_eof)
                        epoll_ctl(r->ep, EPOLL_CTL_DEL, in->src, NULL);
        }
}

/* Move stdin bytes into the command's pipe without ever blocking. */
static void
relay_pump(struct run *r)
{
        struct relay *in = &r->in;
        struct epoll_event ev;

        while (!in->dst_closed) {
                if (in->off == in->len && !in->src_eof) {
                        ssize_t n = read(in->src, in->data, sizeof(in->data));

                        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                                break;
                        if (n <= 0) {
                                in->src_eof = true;
                                if (in->src_pollable)
                                        epoll_ctl(r->ep, EPOLL_CTL_DEL, in->src, NULL);
                        } else {
                                in->off = 0;
                                in->len = (size_t)n;
                        }
                }
                if (in->off == in->len) {
                        if (in->src_eof && in->tty) {
                                struct termios t;
                                char eof = tcgetattr(in->dst, &t) == 0 && t.c_cc[VEOF] ? (char)t.c_cc[VEOF] : 4;

                                /* As script(1) does: at the start of a line, the reader's EOF. */
                                if (write(in->dst, &eof, 1) < 0 && errno == EAGAIN)
                                        break;
                        }
                        if (in->src_eof)
                                relay_close_dst(r);
                        break;
                }
                ssize_t w = write(in->dst, in->data + in->off, in->len - in->off);
                if (w < 0) {
                        if (errno == EAGAIN)
                                break;
                        relay_close_dst(r);   /* EPIPE: the command closed stdin */
                        return;
                }
                in->off += (size_t)w;
        }
        if (in->dst_closed)
                return;
        /* Wait for room in the pipe when holding data (or a terminal's EOF
         * character), else for more input. */
        ev.events = (in->off < in->len || !in->src_pollable || in->src_eof) ? EPOLLOUT : 0;
        ev.data.u64 = EV_IN_DST;
        epoll_ctl(r->ep, EPOLL_CTL_MOD, in->dst, &ev);
}

static int
handle_sock(struct run *r, struct xb_err *err)
{
        /* A bounded batch per wakeup: deadlines are checked between batches. */
        for (int batch = 0; batch < 64; batch++) {
                struct xb_init_event ev;
                int fds[XB_MSG_MAXFDS];
                size_t nfds;
                int e = xb_initc_recv(r->sb->sock, r->msg, &ev, fds, &nfds);

                if (e == -EAGAIN)
                        return 0;
                if (e == -EPIPE) {
                        epoll_ctl(r->ep, EPOLL_CTL_DEL, r->sb->sock, NULL);
                        return 0;   /* init died; the pidfd tells the rest */
                }
                if (e < 0) {
                        kill_all(r);
                        return xb_err_msg(err, EPROTO, "the sandbox init sent a malformed message");
                }
                for (size_t i = 0; i < nfds; i++)
                        close(fds[i]);
                switch (ev.kind) {
                case XB_IEV_READY:
                        if (r->ready)
                                goto violation;
                        r->ready = true;
                        break;
                case XB_IEV_SPAWNED:
                        if (r->spawned || ev.tag != SPAWN_TAG)
                                goto violation;
                        r->spawned = true;
                        break;
                case XB_IEV_EXITED:
                        if (ev.tag != SPAWN_TAG || r->exited)
                                goto violation;
                        r->exited = true;
                        r->status = ev.status;
                        r->t_exit = now_ms();
                        r->rusage_cpu_us = ev.utime_us + ev.stime_us;
                        r->drain_deadline = r->t_exit + XB_DRAIN_MS;
                        break;
                case XB_IEV_ERROR:
                        kill_all(r);
                        if (ev.tag == 0 && !r->ready)
                                return xb_err_msg(err, ev.errnum, "could not set up the sandbox: %s", ev.stage);
                        if (strcmp(ev.stage, "exec") == 0)
                                r->res->exec_errno = ev.errnum;
                        if (ev.errnum == ENOENT && strcmp(ev.stage, "exec") == 0)
                                return xb_err_msg(err, ENOENT, "command not found: %s (check the name, "
                                                  "or give its full path; PATH is searched)", r->o->argv[0]);
                        if (ev.errnum == EACCES && strcmp(ev.stage, "exec") == 0)
                                return xb_err_msg(err, EACCES, "%s is not executable (permission denied)",
                                                  r->o->argv[0]);
                        if (strcmp(ev.stage, "working directory") == 0)
                                return xb_err_msg(err, ev.errnum, "cannot use %s as the working directory: %s; "
                                                  "it must exist inside the sandbox",
                                                  r->o->cwd ? r->o->cwd : "/", strerror(ev.errnum));
                        return xb_err_msg(err, ev.errnum, "could not start %s: %s: %s", r->o->argv[0],
                                          ev.stage, strerror(ev.errnum));
                case XB_IEV_FILE:
                case XB_IEV_WATCH:
                        goto violation;
                }
        }
        return 0;
violation:
        kill_all(r);
        return xb_err_msg(err, EPROTO, "the sandbox init sent an unexpected message; the sandbox was killed");
}

static void
check_cpu(struct run *r)
{
        struct xb_cgroup_stats st;

        if (!r->o->sandbox.limits.cpu_ms || r->killed)
                return;
        if (xb_sandbox_stats(r->sb, &st) == 0 && st.cpu_ns / 1000000 >= r->o->sandbox.limits.cpu_ms) {
                r->cpu_exceeded = true;
                kill_all(r);
        }
}

static void
handle_signal(struct run *r)
{
        struct signalfd_siginfo si;

        while (read(r->o->signal_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                struct winsize ws;

                if (si.ssi_signo == SIGWINCH) {
                        /* The kernel passes it on to the command's foreground group. */
                        if (r->out.fd >= 0 && r->o->tty && ioctl(r->o->tty_size_fd, TIOCGWINSZ, &ws) == 0)
                                ioctl(r->out.fd, TIOCSWINSZ, &ws);
                        continue;
                }
                r->interrupted = true;
                r->res->interrupted_by = (int)si.ssi_signo;
                kill_all(r);
        }
}

/* Relay stdin_fd into dst (taken). */
static void
relay_start(struct run *r, int dst, bool tty)
{
        struct stat st;

        r->in.src = r->o->stdin_fd;
        r->in.dst = dst;
        r->in.dst_closed = false;
        r->in.tty = tty;
        xb_set_nonblock(dst, true);
        /* Regular files and /dev/null cannot be polled: they are always readable. */
        r->in.src_pollable = fstat(r->in.src, &st) == 0 && !S_ISREG(st.st_mode) &&
                             ep_add(r->ep, r->in.src, EPOLLIN, EV_IN_SRC) == 0;
        ep_add(r->ep, dst, 0, EV_IN_DST);
        if (r->in.src_pollable)
                xb_set_nonblock(r->in.src, true);
        relay_pump(r);
}

/* The command's pty master, sent as it started. Nothing at all (EOF)
 * means it failed first: its error comes over the init socket. */
static void
tty_recv(struct run *r)
{
        struct xb_msg_hdr h;
        int fds[XB_MSG_MAXFDS];
        size_t nfds = 0;
        ssize_t n = xb_msg_recv(r->tty_sock, &h, sizeof(h), fds, &nfds, true);
        struct stat st;
        int m = -1;

        if (n == -EAGAIN)
                return;
        if (n == (ssize_t)sizeof(h) && h.type == XB_SETUP_PTY && nfds == 1)
                m = fds[0];
        else
                for (size_t i = 0; i < nfds; i++)
                        close(fds[i]);
        epoll_ctl(r->ep, EPOLL_CTL_DEL, r->tty_sock, NULL);
        close(r->tty_sock);
        r->tty_sock = -1;
        /* It came from inside the sandbox: it must be a terminal. */
        if (m >= 0 && (fstat(m, &st) < 0 || !S_ISCHR(st.st_mode) || !isatty(m))) {
                close(m);
                m = -1;
        }
        if (m < 0) {
                r->out.eof = true;
                return;
        }
        r->out.fd = m;
        xb_set_nonblock(m, true);
        ep_add(r->ep, m, EPOLLIN, EV_OUT);
        /* A second fd of the same master: the relay closes its own. */
        if (r->o->stdin_fd >= 0 && (m = fcntl(m, F_DUPFD_CLOEXEC, 3)) >= 0)
                relay_start(r, m, true);
}

static int
loop(struct run *r, struct xb_err *err)
{
        struct epoll_event evs[16];

        for (;;) {
                uint64_t now = now_ms(), deadline = UINT64_MAX;
                int timeout, n;

                if (r->wall_deadline && !r->exited && !r->killed && now >= r->wall_deadline) {
                        r->timed_out = true;
                        kill_all(r);
                }
                if (r->cpu_next && now >= r->cpu_next) {
                        check_cpu(r);
                        r->cpu_next = now + CPU_POLL_MS;
                }
                if ((r->exited || r->dead) && !r->drain_deadline)
                        r->drain_deadline = now + XB_DRAIN_MS;
                if ((r->exited || r->dead) && ((r->out.eof && r->err.eof) || now >= r->drain_deadline))
                        return 0;
                if (r->dead && !r->exited && !r->killed) {
                        /* init died on its own: treat as killed */
                        r->killed = true;
                        r->t_exit = now;
                }
                if (r->wall_deadline && !r->exited && !r->killed)
                        deadline = r->wall_deadline;
                if (r->cpu_next && !r->killed && r->cpu_next < deadline)
                        deadline = r->cpu_next;
                if (r->drain_deadline && r->drain_deadline < deadline)
                        deadline = r->drain_deadline;
                timeout = deadline == UINT64_MAX ? -1 : deadline <= now ? 0 : (int)(deadline - now);
                n = epoll_wait(r->ep, evs, 16, timeout);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return xb_err_set(err, errno, "epoll_wait");
                }
                for (int i = 0; i < n; i++) {
                        int e;

                        switch (evs[i].data.u64) {
                        case EV_SOCK:
                                if ((e = handle_sock(r, err)) < 0)
                                        return e;
                                break;
                        case EV_PIDFD:
                                r->dead = true;
                                epoll_ctl(r->ep, EPOLL_CTL_DEL, r->sb->pidfd, NULL);
                                /* A last EXITED may sit in the socket. */
                                if ((e = handle_sock(r, err)) < 0)
                                        return e;
                                /* Unless we killed it: a flood can pass the output
                                 * limit before init has said it is ready. */
                                if (!r->ready && !r->exited && !r->killed)
                                        return xb_err_msg(err, EIO, "the sandbox died during setup");
                                break;
                        case EV_OUT:
                                stream_read(r, &r->out);
                                break;
                        case EV_ERR:
                                stream_read(r, &r->err);
                                break;
                        case EV_IN_SRC:
                        case EV_IN_DST:
                                relay_pump(r);
                                break;
                        case EV_TTY:
                                tty_recv(r);
                                break;
                        case EV_SIGNAL:
                                handle_signal(r);
                                break;
                        case EV_OOM:
                                /* v1 kills one task; invariant 9 wants the group: do it. */
                                epoll_ctl(r->ep, EPOLL_CTL_DEL, xb_cgroup_oom_fd(r->sb->cg), NULL);
                                r->oom = true;
                                if (r->o->sandbox.oom_group)
                                        kill_all(r);
                                break;
                        }
                }
        }
}

static void
finish(struct run *r)
{
        struct xb_result *res = r->res;
        struct xb_cgroup_stats st = { 0 };
        struct xb_verdict_in v = { 0 };

        /* After the command's exit only init is left to end (and it is
         * ending itself); otherwise kill everything at once. */
        if (!r->exited)
                xb_sandbox_kill(r->sb);
        xb_sandbox_end(r->sb);
        xb_sandbox_stats(r->sb, &st);
        xb_result_set_status(res, r->exited, r->status);
        res->wall_ms = (r->t_exit ? r->t_exit : now_ms()) - r->t_spawn;
        res->cpu_ms = st.cpu_ns ? st.cpu_ns / 1000000 : r->rusage_cpu_us / 1000;
        res->peak_memory = st.memory_peak;
        if (r->o->sandbox.limits.cpu_ms && res->cpu_ms >= r->o->sandbox.limits.cpu_ms && !res->exited)
                r->cpu_exceeded = true;
        v = (struct xb_verdict_in){
                .exited = res->exited, .exit_code = res->exit_code, .signal = res->signal,
                .timed_out = r->timed_out, .cpu_exceeded = r->cpu_exceeded, .oom = st.oom_kills > 0 || r->oom,
                .output_killed = r->output_killed, .killed_by_request = r->interrupted,
                .truncated = xb_outbuf_truncated(&res->out) || xb_outbuf_truncated(&res->err),
        };
        res->status = xb_verdict(&v);
}

/* Streaming: the head went out live; now the marker and the tail. */
static void
flush_tail(struct stream *s, const char *what)
{
        char marker[256];
        struct xb_outbuf *b = s->buf;
        char *tail;

        if (s->target < 0 || !b->ring_len)
                return;
        if (xb_outbuf_truncated(b)) {
                size_t m = xb_outbuf_marker(b, what, marker, sizeof(marker));

                write_out(s->target, marker, m);
        }
        tail = malloc(b->ring_len);
        if (tail) {
                xb_outbuf_copy_tail(b, tail);
                write_out(s->target, tail, b->ring_len);
                free(tail);
        }
}

void
xb_result_free(struct xb_result *res)
{
        xb_outbuf_free(&res->out);
        xb_outbuf_free(&res->err);
}

int
xb_run(struct xb_engine *e, const struct xb_run_opts *o, struct xb_result *res, struct xb_err *err)
{
        _cleanup_free_ struct run *r = calloc(1, sizeof(*r));
        int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, inp[2] = { -1, -1 }, ttyp[2] = { -1, -1 };
        struct xb_exec_spec q;
        struct xb_sandbox_config sc;
        struct winsize ws = { 0 };
        int ret;

        memset(res, 0, sizeof(*res));
        xb_outbuf_init(&res->out, o->sandbox.limits.output);
        xb_outbuf_init(&res->err, o->sandbox.limits.output);
        if (!r)
                return xb_err_set(err, ENOMEM, "run");
        r->o = o;
        r->res = res;
        r->ep = r->tty_sock = -1;
        r->in.src = r->in.dst = -1;
        r->in.dst_closed = true;
        if (o->force_freezer)
                xb_cgroup_sys_force_freezer(e->cgroups, true);

        if (o->tty) {
                if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ttyp) < 0) {
                        ret = xb_err_set(err, errno, "socketpair");
                        goto out;
                }
                /* No terminal to follow (or one that does not know): a VT100's. */
                if (o->tty_size_fd < 0 || ioctl(o->tty_size_fd, TIOCGWINSZ, &ws) < 0 || !ws.ws_row || !ws.ws_col)
                        ws = (struct winsize){ .ws_row = 24, .ws_col = 80 };
        } else if ((ret = xb_sandbox_pipe(outp)) < 0 || (ret = xb_sandbox_pipe(errp)) < 0 ||
                   (o->stdin_fd >= 0 && (ret = xb_sandbox_pipe(inp)) < 0)) {
                ret = xb_err_set(err, -ret, "pipe");
                goto out;
        }
        q = (struct xb_exec_spec){
                .argv = o->argv, .env = o->env, .cwd = o->cwd, .uid = o->uid, .gid = o->uid,
                .rl_cpu_s = o->sandbox.limits.cpu_ms ? (o->sandbox.limits.cpu_ms + 999) / 1000 : 0,
                .rl_fsize = o->sandbox.limits.fsize,
                .std = { inp[0], outp[1], errp[1] }, .last = true,
                .tty = o->tty, .tty_sock = ttyp[1], .tty_rows = ws.ws_row, .tty_cols = ws.ws_col,
        };
        /* The setup child starts the command itself, while init starts. */
        sc = o->sandbox;
        sc.first = &q;
        sc.first_tag = SPAWN_TAG;
        ret = xb_sandbox_start(e, &sc, &r->sb, err);
        r->t_spawn = now_ms();
        /* The command's ends are its own now: EOF on ours means it is done. */
        xb_closep(&outp[1]);
        xb_closep(&errp[1]);
        xb_closep(&inp[0]);
        xb_closep(&ttyp[1]);
        outp[1] = errp[1] = inp[0] = ttyp[1] = -1;
        if (ret < 0)
                goto out;
        /* Housekeeping while the sandbox sets itself up. */
        xb_engine_reap_stale(e);

        /* The streams own the read ends from here on. */
        r->out = (struct stream){ .fd = TAKE_FD(outp[0]), .target = o->capture ? -1 : o->out_fd, .buf = &res->out };
        r->err = (struct stream){ .fd = TAKE_FD(errp[0]), .target = o->capture ? -1 : o->err_fd, .buf = &res->err,
                                  .eof = o->tty };
        r->ep = epoll_create1(EPOLL_CLOEXEC);
        if (r->ep < 0) {
                ret = xb_err_set(err, errno, "epoll_create1");
                goto out;
        }
        ep_add(r->ep, r->sb->sock, EPOLLIN, EV_SOCK);
        ep_add(r->ep, r->sb->pidfd, EPOLLIN, EV_PIDFD);
        if (o->tty) {
                r->tty_sock = TAKE_FD(ttyp[0]);
                xb_set_nonblock(r->tty_sock, true);
                ep_add(r->ep, r->tty_sock, EPOLLIN, EV_TTY);
        } else {
                xb_set_nonblock(r->out.fd, true);
                xb_set_nonblock(r->err.fd, true);
                ep_add(r->ep, r->out.fd, EPOLLIN, EV_OUT);
                ep_add(r->ep, r->err.fd, EPOLLIN, EV_ERR);
        }
        if (o->signal_fd >= 0)
                ep_add(r->ep, o->signal_fd, EPOLLIN, EV_SIGNAL);
        /* v2's memory.oom.group kills the group itself; v1's eventfd tells us to. */
        if (o->sandbox.oom_group && xb_cgroup_oom_fd(r->sb->cg) >= 0 &&
            strcmp(xb_cgroup_sys_describe(e->cgroups), "v2") != 0)
                ep_add(r->ep, xb_cgroup_oom_fd(r->sb->cg), EPOLLIN, EV_OOM);
        if (inp[1] >= 0)
                relay_start(r, TAKE_FD(inp[1]), false);
        if (o->sandbox.limits.wall_ms)
                r->wall_deadline = r->t_spawn + o->sandbox.limits.wall_ms;
        if (o->sandbox.limits.cpu_ms)
                r->cpu_next = r->t_spawn + CPU_POLL_MS;

        ret = loop(r, err);
        if (ret == 0) {
                finish(r);
                flush_tail(&r->out, "stdout");
                flush_tail(&r->err, "stderr");
        }
out:
        if (r->in.src_pollable)
                xb_set_nonblock(o->stdin_fd, false);
        for (int i = 0; i < 2; i++) {
                if (outp[i] >= 0)
                        close(outp[i]);
                if (errp[i] >= 0)
                        close(errp[i]);
                if (inp[i] >= 0)
                        close(inp[i]);
                if (ttyp[i] >= 0)
                        close(ttyp[i]);
        }
        if (r->tty_sock >= 0)
                close(r->tty_sock);
        if (!r->in.dst_closed)
                close(r->in.dst);
        if (r->out.fd >= 0 && r->out.buf)
                close(r->out.fd);
        if (r->err.fd >= 0 && r->err.buf)
                close(r->err.fd);
        if (r->ep >= 0)
                close(r->ep);
        {
                int d = xb_sandbox_destroy(r->sb);

                if (d < 0 && ret == 0)
                        ret = xb_err_set(err, -d, "remove the sandbox's cgroup");
        }
        if (ret < 0)
                xb_result_free(res);
        return ret;
}
