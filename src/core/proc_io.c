/* A process's pipes: its output into head-and-tail buffers under the
 * daemon-wide output budget, its stdin backlog, and its terminal (see
 * proc.c for the whole). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "base/fd.h"
#include "core/call.h"
#include "proto/wire.h"
#include "core/proc_int.h"

#define READ_CHUNK 65536

void
proc_close_pipe(struct xb_io *io, int *fd)
{
        xb_io_stop(io);
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

/* ---- output and stdin ---- */

void
proc_watch_pipes(struct xb_proc *p)
{
        struct xb_loop *l = p->sbx->core->loop;

        if (p->out_held || p->budget_held || p->spill_pending || p->spill_wait)
                return;
        if (p->out_fd >= 0 && !p->out_io.active)
                xb_io_start(l, &p->out_io, p->out_fd, EPOLLIN, proc_on_output, p);
        if (p->err_fd >= 0 && !p->err_io.active)
                xb_io_start(l, &p->err_io, p->err_fd, EPOLLIN, proc_on_output, p);
}

void
proc_output_resume(struct xb_proc *p)
{
        if (!p->out_held)
                return;
        p->out_held = false;
        proc_watch_pipes(p);
}

/* ---- the daemon-wide output budget ---- */

#define OUTPUT_GUARANTEED (1u << 20)

uint64_t
proc_kept(const struct xb_proc *p)
{
        return p->out.head_len + p->out.ring_len + p->err.head_len + p->err.ring_len;
}

/* Whether more output would grow what p keeps (a full head and ring only
 * overwrite the tail). */
static bool
growing(const struct xb_proc *p)
{
        return p->out.head_len + p->out.ring_len < p->out.limit || p->err.head_len + p->err.ring_len < p->err.limit;
}

/* p ended, or is being killed: the little left in its pipes is read. */
void
proc_budget_unhold(struct xb_proc *p)
{
        if (!p->budget_held)
                return;
        p->budget_held = false;
        p->sbx->core->out_waiting--;
        proc_watch_pipes(p);
}

static void
resume_budget(struct xb_sbx *x, void *data)
{
        (void)data;
        for (struct xb_proc *p = x->procs; p; p = p->next)
                if (p->budget_held) {
                        p->budget_held = false;
                        x->core->out_waiting--;
                        proc_watch_pipes(p);
                }
}

/* Output memory came back: below 90% of the budget, every process that
 * waited for it is read again. */
void
proc_budget_freed(struct xb_core *s)
{
        if (s->out_waiting && s->out_mem < s->o.output_budget / 10 * 9)
                xb_sbx_foreach(s, resume_budget, NULL);
}

static void
output_release(void *owner)
{
        proc_output_resume(owner);
}

/* The exec call's client reads slower than the command writes: leave its
 * pipes unread, so that it blocks on them (backpressure, not a kill),
 * until the call is released. */
static void
output_hold(struct xb_proc *p)
{
        p->out_held = true;
        xb_io_stop(&p->out_io);
        xb_io_stop(&p->err_io);
        xb_call_on_release(p->exec, output_release, p);
}

void
proc_on_output(struct xb_io *io, uint32_t events)
{
        struct xb_proc *p = io->data;
        struct xb_core *s = p->sbx->core;
        bool is_out = io == &p->out_io;
        struct xb_outbuf *b = is_out ? &p->out : &p->err;
        char buf[READ_CHUNK];
        bool got = false;

        (void)events;
        /* The daemon keeps at most its output budget for every process in
         * all: past it, a process whose buffers would grow is not read (it
         * blocks on its pipe) until some output is freed. Each keeps its
         * first OUTPUT_GUARANTEED regardless, so that small commands (of
         * any tenant) still run while big ones wait. */
        if (s->out_mem >= s->o.output_budget && proc_kept(p) >= OUTPUT_GUARANTEED && growing(p) && !p->exited &&
            !p->forgotten && !p->killed_by_request) {
                p->budget_held = true;
                s->out_waiting++;
                xb_io_stop(&p->out_io);
                xb_io_stop(&p->err_io);
                return;
        }
        for (int i = 0; i < 8 && !(p->exec && xb_call_held(p->exec)); i++) {
                ssize_t n = read(io->fd, buf, sizeof(buf));

                if (n > 0) {
                        uint64_t before = proc_kept(p);

                        xb_outbuf_write(b, buf, (size_t)n);
                        proc_spill_write(is_out ? &p->sp_out : &p->sp_err, buf, (size_t)n);
                        s->out_mem += proc_kept(p) - before;
                        proc_output(p, is_out ? "stdout" : "stderr", buf, (size_t)n);
                        got = true;
                        continue;
                }
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        break;
                /* EOF or error: this stream is done. */
                if (is_out)
                        proc_close_pipe(&p->out_io, &p->out_fd);
                else
                        proc_close_pipe(&p->err_io, &p->err_fd);
                break;
        }
        if (got)
                proc_output_done(p);
        if (p->exec && xb_call_held(p->exec) && !p->out_held)
                output_hold(p);
        if (p->exited && p->out_fd < 0 && p->err_fd < 0)
                proc_finish(p);
}

void
proc_pump_stdin(struct xb_proc *p)
{
        while (p->stdin_buf.len && p->in_fd >= 0) {
                ssize_t w = write(p->in_fd, p->stdin_buf.data, p->stdin_buf.len);

                if (w < 0) {
                        if (errno == EAGAIN)
                                break;
                        xb_buf_reset(&p->stdin_buf);   /* EPIPE: stdin was closed */
                        p->stdin_close = true;
                        break;
                }
                memmove(p->stdin_buf.data, p->stdin_buf.data + w, p->stdin_buf.len - (size_t)w);
                p->stdin_buf.len -= (size_t)w;
        }
        if (p->in_fd < 0)
                return;
        if (!p->stdin_buf.len && p->stdin_close) {
                proc_close_pipe(&p->in_io, &p->in_fd);
                return;
        }
        xb_io_modify(&p->in_io, p->stdin_buf.len ? EPOLLOUT : 0);
}

void
proc_on_stdin(struct xb_io *io, uint32_t events)
{
        (void)events;
        proc_pump_stdin(io->data);
}

int
xb_proc_write_stdin(struct xb_proc *p, const char *data, size_t len, bool close_after, struct xb_err *err)
{
        if (p->in_fd < 0 && !(p->tty_sock >= 0 && !p->finished))
                return xb_err_code(err, XB_E_STDIN_CLOSED, EPIPE, NULL, "stdin of process %d is closed", p->pid);
        if (xb_buf_append(&p->stdin_buf, data, len) < 0 ||
            (close_after && p->tty && xb_buf_append(&p->stdin_buf, "\x04", 1) < 0))
                return xb_err_code(err, XB_E_STDIN_CLOSED, ENOBUFS, NULL,
                                   "process %d is not reading stdin; %u bytes are already waiting", p->pid,
                                   (unsigned)p->stdin_buf.len);
        /* A terminal's end of input is its EOF character (^D), not a close. */
        if (close_after && !p->tty)
                p->stdin_close = true;
        proc_pump_stdin(p);
        return 0;
}

int
xb_proc_resize(struct xb_proc *p, uint16_t rows, uint16_t cols, struct xb_err *err)
{
        struct winsize ws = { .ws_row = rows, .ws_col = cols };

        if (!p->tty)
                return xb_err_code(err, XB_E_INVALID, ENOTTY, NULL, "process %d has no terminal; start it with "
                                   "`pty` to get one", p->pid);
        if (p->finished)
                return xb_err_code(err, XB_E_PROCESS_FINISHED, ESRCH, NULL, "process %d has already finished",
                                   p->pid);
        p->rows = rows;
        p->cols = cols;
        /* Before the master came, the size waits for it (on_tty). */
        if (p->out_fd >= 0 && ioctl(p->out_fd, TIOCSWINSZ, &ws) < 0)
                return xb_err_code(err, XB_E_PROCESS_FINISHED, errno, NULL, "resize the terminal of process %d: %s",
                                   p->pid, strerror(errno));
        return 0;
}

/* The command's pty master, sent as it started. Nothing (EOF) means it
 * failed first: its error comes from init. */
void
proc_on_tty(struct xb_io *io, uint32_t events)
{
        struct xb_proc *p = io->data;
        struct xb_msg_hdr h;
        int fds[XB_MSG_MAXFDS];
        size_t nfds = 0;
        ssize_t n = xb_msg_recv(p->tty_sock, &h, sizeof(h), fds, &nfds, true);
        struct stat st;
        int m = -1;

        (void)events;
        if (n == -EAGAIN)
                return;
        if (n == (ssize_t)sizeof(h) && h.type == XB_SETUP_PTY && nfds == 1)
                m = fds[0];
        else
                for (size_t i = 0; i < nfds; i++)
                        close(fds[i]);
        proc_close_pipe(&p->tty_io, &p->tty_sock);
        /* It came from inside the sandbox: it must be a terminal. */
        if (m >= 0 && (fstat(m, &st) < 0 || !S_ISCHR(st.st_mode) || !isatty(m))) {
                close(m);
                m = -1;
        }
        if (m >= 0) {
                struct winsize ws = { .ws_row = p->rows, .ws_col = p->cols };

                ioctl(m, TIOCSWINSZ, &ws);
                p->out_fd = m;
                p->in_fd = fcntl(m, F_DUPFD_CLOEXEC, 3);
                xb_set_nonblock(p->out_fd, true);
                /* Read once its stream's file is open (background). */
                proc_watch_pipes(p);
                if (p->background && p->spawned)
                        xb_adopt_hold(p);
                if (p->in_fd >= 0) {
                        xb_io_start(p->sbx->core->loop, &p->in_io, p->in_fd, 0, proc_on_stdin, p);
                        proc_pump_stdin(p);
                }
        }
        if (p->exited && p->out_fd < 0 && p->err_fd < 0)
                proc_finish(p);
}
