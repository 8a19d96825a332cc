/* Processes in a sandbox: spawn through init, pipes, output, timeouts,
 * verdicts, and the requests waiting on them.
 *
 * Theory of operation. The server makes each process's pipes, passes the
 * write ends to init with the spawn request and closes its own copies; the
 * read ends are non-blocking fds in the loop. Output lands in head-and-tail
 * buffers (struct xb_outbuf), which answer both the final result and reads
 * by absolute byte offset. A process "finishes" once init reports its exit
 * and its pipes reach EOF, or XB_DRAIN_MS after the exit if a background
 * child still holds them. Waiters: at most one exec request (plain or SSE),
 * any number of wait and long-poll read requests. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/log.h"
#include "base/utf8.h"
#include "proc/env.h"
#include "proc/initc.h"
#include "proc/run.h"
#include "core/core.h"

#define STDIN_BACKLOG_MAX (4u << 20)
#define READ_CHUNK 65536

enum waiter_kind { W_WAIT, W_READ };

struct waiter {
        struct waiter *next;
        struct xb_proc *proc;
        struct xb_req *req;
        enum waiter_kind kind;
        uint64_t out_off, err_off;
        size_t max;
        struct xb_timer timer;
};

struct xb_proc {
        struct xb_proc *next;
        struct xb_defer defer;        /* proc_free */
        struct xb_sbx *sbx;
        uint32_t tag;
        pid_t pid;
        char cmd[256];
        bool background;
        bool spawned, exited, finished, forgotten;
        int status;
        int spawn_errno;
        char spawn_stage[64];
        bool timed_out, killed_by_request;
        uint64_t oom_before;
        uint64_t start_ms, end_ms, cpu_us, maxrss;
        uint64_t timeout_ms, yield_ms;
        struct xb_outbuf out, err;
        int out_fd, err_fd, in_fd;
        struct xb_io out_io, err_io, in_io;
        struct xb_buf stdin_buf;
        bool stdin_close;            /* close stdin once stdin_buf drains */
        struct xb_timer hard, soft, drain;
        struct xb_result result;     /* valid once finished */
        /* the exec request, if any */
        struct xb_req *exec_req;
        bool exec_stream;
        struct xb_stream *stream;
        struct xb_req *start_req;    /* POST /processes waits for the spawn */
        struct waiter *waiters;
};

static void finish(struct xb_proc *p);
static void prune_finished(struct xb_sbx *x);
static void notify_readers(struct xb_proc *p);

bool
xb_proc_running(const struct xb_proc *p)
{
        return !p->finished;
}

struct xb_proc *
xb_proc_find(struct xb_sbx *x, pid_t pid)
{
        for (struct xb_proc *p = x->procs; p; p = p->next)
                if (p->spawned && p->pid == pid && !p->forgotten)
                        return p;
        return NULL;
}

static struct xb_proc *
find_tag(struct xb_sbx *x, uint32_t tag)
{
        for (struct xb_proc *p = x->procs; p; p = p->next)
                if (p->tag == tag)
                        return p;
        return NULL;
}

static void
close_pipe(struct xb_io *io, int *fd)
{
        xb_io_stop(io);
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

static void
proc_free(void *data)
{
        struct xb_proc *p = data;

        xb_outbuf_free(&p->out);
        xb_outbuf_free(&p->err);
        xb_buf_free(&p->stdin_buf);
        xb_sbx_unref(p->sbx);
        free(p);
}

/* Drop a finished process from its sandbox. */
static void
unlink_proc(struct xb_proc *p)
{
        struct xb_sbx *x = p->sbx;

        for (struct xb_proc **pp = &x->procs; *pp; pp = &(*pp)->next)
                if (*pp == p) {
                        *pp = p->next;
                        x->nprocs--;
                        break;
                }
        xb_timer_stop(&p->hard);
        xb_timer_stop(&p->soft);
        xb_timer_stop(&p->drain);
        close_pipe(&p->out_io, &p->out_fd);
        close_pipe(&p->err_io, &p->err_fd);
        close_pipe(&p->in_io, &p->in_fd);
        xb_loop_defer(x->srv->loop, &p->defer, proc_free, p);
}

/* ---- JSON ---- */

static json_t *
text_json(const struct xb_outbuf *b, const char *what)
{
        size_t len, clean_len;
        _cleanup_free_ char *raw = xb_outbuf_render(b, what, &len);
        _cleanup_free_ char *clean = raw ? xb_utf8_sanitize(raw, len, &clean_len) : NULL;

        return clean ? json_stringn(clean, clean_len) : json_string("");
}

json_t *
xb_api_result_json(const struct xb_result *res, pid_t pid)
{
        json_t *o = json_object();

        json_object_set_new(o, "status", json_string(xb_status_name(res->status)));
        json_object_set_new(o, "exit_code", res->exited ? json_integer(res->exit_code) : json_null());
        json_object_set_new(o, "signal", !res->exited && res->signal ? json_integer(res->signal) : json_null());
        json_object_set_new(o, "stdout", text_json(&res->out, "stdout"));
        json_object_set_new(o, "stderr", text_json(&res->err, "stderr"));
        json_object_set_new(o, "stdout_truncated", json_boolean(xb_outbuf_truncated(&res->out)));
        json_object_set_new(o, "stderr_truncated", json_boolean(xb_outbuf_truncated(&res->err)));
        json_object_set_new(o, "stdout_bytes", json_integer((json_int_t)res->out.total));
        json_object_set_new(o, "stderr_bytes", json_integer((json_int_t)res->err.total));
        json_object_set_new(o, "duration_ms", json_integer((json_int_t)res->wall_ms));
        json_object_set_new(o, "cpu_ms", json_integer((json_int_t)res->cpu_ms));
        json_object_set_new(o, "peak_memory", json_integer((json_int_t)res->peak_memory));
        if (pid > 0)
                json_object_set_new(o, "pid", json_integer(pid));
        return o;
}

/* The result so far, for a process still running (soft timeout, status). */
static json_t *
running_json(const struct xb_proc *p)
{
        struct xb_result r = { .status = XB_ST_RUNNING, .out = p->out, .err = p->err,
                               .wall_ms = xb_now_ms() - p->start_ms };
        json_t *o = xb_api_result_json(&r, p->pid);

        json_object_set_new(o, "stdout_offset", json_integer((json_int_t)p->out.total));
        json_object_set_new(o, "stderr_offset", json_integer((json_int_t)p->err.total));
        json_object_set_new(o, "hint", json_string("the command is still running; read more output with GET "
                                                   "/v1/sandboxes/{id}/processes/{pid}/output?stdout_offset=N&"
                                                   "stderr_offset=M, or wait with POST .../processes/{pid}/wait"));
        return o;
}

json_t *
xb_proc_json(const struct xb_proc *p, bool with_output)
{
        json_t *o;

        if (p->finished && with_output)
                o = xb_api_result_json(&p->result, p->pid);
        else if (p->finished) {
                o = json_pack("{s:s,s:o,s:o}", "status", xb_status_name(p->result.status), "exit_code",
                              p->result.exited ? json_integer(p->result.exit_code) : json_null(), "signal",
                              !p->result.exited ? json_integer(p->result.signal) : json_null());
        } else
                o = json_pack("{s:s}", "status", "running");
        json_object_set_new(o, "pid", json_integer(p->pid));
        json_object_set_new(o, "cmd", json_string(p->cmd));
        json_object_set_new(o, "running", json_boolean(!p->finished));
        json_object_set_new(o, "stdout_bytes", json_integer((json_int_t)p->out.total));
        json_object_set_new(o, "stderr_bytes", json_integer((json_int_t)p->err.total));
        json_object_set_new(o, "started_ms_ago", json_integer((json_int_t)(xb_now_ms() - p->start_ms)));
        return o;
}

static json_t *
chunk_json(const struct xb_outbuf *b, uint64_t off, size_t max, uint64_t *next, uint64_t *skipped)
{
        _cleanup_free_ char *buf = malloc(max ? max : 1);
        _cleanup_free_ char *clean = NULL;
        uint64_t start = off;
        size_t n, clean_len;

        if (!buf)
                return json_string("");
        n = xb_outbuf_read(b, off, buf, max, &start);
        *skipped = start - (off < b->total ? off : b->total);
        *next = start + n;
        clean = xb_utf8_sanitize(buf, n, &clean_len);
        return clean ? json_stringn(clean, clean_len) : json_string("");
}

json_t *
xb_proc_output_json(const struct xb_proc *p, uint64_t out_off, uint64_t err_off, size_t max)
{
        uint64_t on, en, os, es;
        json_t *o = json_object();

        json_object_set_new(o, "stdout", chunk_json(&p->out, out_off, max, &on, &os));
        json_object_set_new(o, "stderr", chunk_json(&p->err, err_off, max, &en, &es));
        json_object_set_new(o, "stdout_offset", json_integer((json_int_t)on));
        json_object_set_new(o, "stderr_offset", json_integer((json_int_t)en));
        json_object_set_new(o, "stdout_skipped", json_integer((json_int_t)os));
        json_object_set_new(o, "stderr_skipped", json_integer((json_int_t)es));
        json_object_set_new(o, "running", json_boolean(!p->finished));
        json_object_set_new(o, "pid", json_integer(p->pid));
        if (p->finished) {
                json_object_set_new(o, "status", json_string(xb_status_name(p->result.status)));
                json_object_set_new(o, "exit_code", p->result.exited ? json_integer(p->result.exit_code) : json_null());
        }
        return o;
}

/* ---- waiters ---- */

static void
waiter_drop(struct waiter *w)
{
        struct xb_proc *p = w->proc;

        for (struct waiter **pp = &p->waiters; *pp; pp = &(*pp)->next)
                if (*pp == w) {
                        *pp = w->next;
                        break;
                }
        xb_timer_stop(&w->timer);
        free(w);
}

static void
waiter_gone(struct xb_req *r, void *owner)
{
        (void)r;
        waiter_drop(owner);
}

static void
waiter_timeout(struct xb_timer *t)
{
        struct waiter *w = t->data;
        struct xb_req *req = w->req;
        struct xb_proc *p = w->proc;

        if (w->kind == W_WAIT) {
                json_t *o = running_json(p);

                json_object_set_new(o, "waited", json_true());
                waiter_drop(w);
                xb_reply_json(req, 200, o);
        } else {
                json_t *o = xb_proc_output_json(p, w->out_off, w->err_off, w->max);

                waiter_drop(w);
                xb_reply_json(req, 200, o);
        }
}

static void
notify_readers(struct xb_proc *p)
{
        struct waiter *w = p->waiters, *next;

        for (; w; w = next) {
                next = w->next;
                if (w->kind == W_READ && (p->out.total > w->out_off || p->err.total > w->err_off || p->finished)) {
                        struct xb_req *req = w->req;
                        json_t *o = xb_proc_output_json(p, w->out_off, w->err_off, w->max);

                        waiter_drop(w);
                        xb_reply_json(req, 200, o);
                }
        }
}

void
xb_proc_attach_wait(struct xb_proc *p, struct xb_req *req, uint64_t timeout_ms)
{
        struct waiter *w;

        if (p->finished) {
                xb_reply_json(req, 200, xb_api_result_json(&p->result, p->pid));
                return;
        }
        w = calloc(1, sizeof(*w));
        if (!w) {
                xb_reply_error(req, 503, "out_of_memory", "retry", "out of memory");
                return;
        }
        *w = (struct waiter){ .next = p->waiters, .proc = p, .req = req, .kind = W_WAIT };
        p->waiters = w;
        xb_req_suspend(req, waiter_gone, w);
        if (timeout_ms)
                xb_timer_start(p->sbx->srv->loop, &w->timer, timeout_ms, waiter_timeout, w);
}

void
xb_proc_attach_read(struct xb_proc *p, struct xb_req *req, uint64_t out_off, uint64_t err_off, size_t max,
                    uint64_t wait_ms)
{
        struct waiter *w;

        if (!wait_ms || p->finished || p->out.total > out_off || p->err.total > err_off) {
                xb_reply_json(req, 200, xb_proc_output_json(p, out_off, err_off, max));
                return;
        }
        w = calloc(1, sizeof(*w));
        if (!w) {
                xb_reply_error(req, 503, "out_of_memory", "retry", "out of memory");
                return;
        }
        *w = (struct waiter){ .next = p->waiters, .proc = p, .req = req, .kind = W_READ, .out_off = out_off,
                              .err_off = err_off, .max = max };
        p->waiters = w;
        xb_req_suspend(req, waiter_gone, w);
        xb_timer_start(p->sbx->srv->loop, &w->timer, wait_ms, waiter_timeout, w);
}

/* ---- the exec request ---- */

static void
exec_gone(struct xb_req *r, void *owner)
{
        struct xb_proc *p = owner;

        (void)r;
        p->exec_req = NULL;
        p->stream = NULL;
        /* The caller left: cancel its command, unless it went to the background. */
        if (!p->background && !p->finished) {
                p->killed_by_request = true;
                xb_proc_signal(p, SIGKILL);
        }
}

static void
stream_output(struct xb_proc *p, const char *name, const char *data, size_t n)
{
        size_t clean_len;
        _cleanup_free_ char *clean = xb_utf8_sanitize(data, n, &clean_len);

        if (p->stream && clean)
                xb_stream_event(p->stream, name, json_pack("{s:s%}", "data", clean, clean_len));
}

static void
on_soft(struct xb_timer *t)
{
        struct xb_proc *p = t->data;
        struct xb_req *req = p->exec_req;

        if (p->finished || !req)
                return;
        /* No output for yield_ms: answer now and let it run on in the background. */
        p->background = true;
        p->exec_req = NULL;
        if (p->stream) {
                xb_stream_event(p->stream, "result", running_json(p));
                xb_stream_end(p->stream);
                p->stream = NULL;
        } else
                xb_reply_json(req, 200, running_json(p));
}

void
xb_proc_attach_exec(struct xb_proc *p, struct xb_req *req, bool stream)
{
        p->exec_req = req;
        p->exec_stream = stream;
        if (stream) {
                p->stream = xb_reply_stream(req, 200, "text/event-stream", exec_gone, p);
                if (!p->stream) {
                        p->exec_req = NULL;
                        xb_reply_error(req, 503, "out_of_memory", "retry", "out of memory");
                        return;
                }
                xb_stream_event(p->stream, "start", json_pack("{s:s}", "cmd", p->cmd));
        } else
                xb_req_suspend(req, exec_gone, p);
        if (p->yield_ms)
                xb_timer_start(p->sbx->srv->loop, &p->soft, p->yield_ms, on_soft, p);
}

/* ---- output ---- */

static void
on_output(struct xb_io *io, uint32_t events)
{
        struct xb_proc *p = io->data;
        bool is_out = io == &p->out_io;
        struct xb_outbuf *b = is_out ? &p->out : &p->err;
        char buf[READ_CHUNK];
        bool got = false;

        (void)events;
        for (int i = 0; i < 8; i++) {
                ssize_t n = read(io->fd, buf, sizeof(buf));

                if (n > 0) {
                        xb_outbuf_write(b, buf, (size_t)n);
                        stream_output(p, is_out ? "stdout" : "stderr", buf, (size_t)n);
                        got = true;
                        continue;
                }
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        break;
                /* EOF or error: this stream is done. */
                if (is_out)
                        close_pipe(&p->out_io, &p->out_fd);
                else
                        close_pipe(&p->err_io, &p->err_fd);
                break;
        }
        if (got) {
                if (p->exec_req && p->yield_ms)
                        xb_timer_start(p->sbx->srv->loop, &p->soft, p->yield_ms, on_soft, p);
                notify_readers(p);
        }
        if (p->exited && p->out_fd < 0 && p->err_fd < 0)
                finish(p);
}

static void
pump_stdin(struct xb_proc *p)
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
                close_pipe(&p->in_io, &p->in_fd);
                return;
        }
        xb_io_modify(&p->in_io, p->stdin_buf.len ? EPOLLOUT : 0);
}

static void
on_stdin(struct xb_io *io, uint32_t events)
{
        (void)events;
        pump_stdin(io->data);
}

int
xb_proc_write_stdin(struct xb_proc *p, const char *data, size_t len, bool close_after, struct xb_err *err)
{
        if (p->in_fd < 0)
                return xb_err_msg(err, EPIPE, "stdin of process %d is closed", p->pid);
        if (xb_buf_append(&p->stdin_buf, data, len) < 0)
                return xb_err_msg(err, ENOBUFS, "process %d is not reading stdin; %u bytes are already waiting",
                                  p->pid, (unsigned)p->stdin_buf.len);
        if (close_after)
                p->stdin_close = true;
        pump_stdin(p);
        return 0;
}

int
xb_proc_signal(struct xb_proc *p, int signo)
{
        if (p->finished || !p->sbx->sb || p->sbx->state >= XB_SBX_DYING)
                return -ESRCH;
        /* The process group: the command and what it started, unless they setsid'd away. */
        return xb_initc_signal(p->sbx->sb->sock, p->tag, signo, XB_SIG_GROUP);
}

/* ---- lifecycle ---- */

static void
on_hard(struct xb_timer *t)
{
        struct xb_proc *p = t->data;

        if (p->finished)
                return;
        p->timed_out = true;
        /* init reports the exit; if init itself is gone, the sandbox's
         * death finishes every process (xb_proc_sandbox_died). */
        xb_proc_signal(p, SIGKILL);
}

static void
on_drain(struct xb_timer *t)
{
        finish(t->data);
}

static void
record_latency(struct xb_server *s, uint64_t ms)
{
        static const uint64_t bounds[] = { 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 5000 };
        size_t i = 0;

        while (i < sizeof(bounds) / sizeof(bounds[0]) && ms > bounds[i])
                i++;
        s->m.exec_latency_buckets[i]++;
        s->m.exec_latency_count++;
        s->m.exec_latency_sum_us += ms * 1000;
}

static void
finish(struct xb_proc *p)
{
        struct xb_server *s = p->sbx->srv;
        struct xb_result *res = &p->result;
        struct xb_verdict_in v = { 0 };
        struct xb_cgroup_stats st = { 0 };
        struct waiter *w, *next;

        if (p->finished)
                return;
        p->finished = true;
        xb_timer_stop(&p->hard);
        xb_timer_stop(&p->soft);
        xb_timer_stop(&p->drain);
        /* Stop reading: a background child still holding the pipes gets EPIPE. */
        close_pipe(&p->out_io, &p->out_fd);
        close_pipe(&p->err_io, &p->err_fd);
        close_pipe(&p->in_io, &p->in_fd);
        if (!p->end_ms)
                p->end_ms = xb_now_ms();
        if (p->sbx->sb)
                xb_sandbox_stats(p->sbx->sb, &st);
        res->out = p->out;
        res->err = p->err;
        xb_result_set_status(res, p->exited, p->status);
        res->wall_ms = p->end_ms - p->start_ms;
        res->cpu_ms = p->cpu_us / 1000;
        res->peak_memory = p->maxrss;
        v = (struct xb_verdict_in){
                .exited = res->exited, .exit_code = res->exit_code, .signal = res->signal,
                /* The sandbox's counter is shared: blame this command only if it was SIGKILLed. */
                .timed_out = p->timed_out, .oom = st.oom_kills > p->oom_before && !res->exited && res->signal == SIGKILL,
                .killed_by_request = p->killed_by_request,
                .truncated = xb_outbuf_truncated(&p->out) || xb_outbuf_truncated(&p->err),
        };
        res->status = xb_verdict(&v);
        s->m.execs++;
        s->m.execs_by_status[res->status]++;
        record_latency(s, res->wall_ms);

        if (p->stream) {
                xb_stream_event(p->stream, "result", xb_api_result_json(res, p->pid));
                xb_stream_end(p->stream);
                p->stream = NULL;
                p->exec_req = NULL;
        } else if (p->exec_req) {
                struct xb_req *req = p->exec_req;

                p->exec_req = NULL;
                xb_reply_json(req, 200, xb_api_result_json(res, p->pid));
        }
        for (w = p->waiters; w; w = next) {
                next = w->next;
                if (w->kind == W_WAIT) {
                        struct xb_req *req = w->req;

                        waiter_drop(w);
                        xb_reply_json(req, 200, xb_api_result_json(res, p->pid));
                }
        }
        notify_readers(p);
        /* An exec answered in full has nothing left to read: forget it. */
        if (!p->background)
                unlink_proc(p);
        else
                prune_finished(p->sbx);
}

void
xb_proc_on_spawned(struct xb_sbx *x, uint32_t tag, pid_t pid)
{
        struct xb_proc *p = find_tag(x, tag);

        if (!p || p->spawned)
                return;
        p->spawned = true;
        p->pid = pid;
        if (p->start_req) {
                struct xb_req *req = p->start_req;

                p->start_req = NULL;
                xb_reply_json(req, 201, xb_proc_json(p, false));
        }
}

void
xb_proc_on_exited(struct xb_sbx *x, uint32_t tag, int status, uint64_t cpu_us, uint64_t maxrss_kb)
{
        struct xb_proc *p = find_tag(x, tag);

        if (!p || p->exited)
                return;
        p->exited = true;
        p->status = status;
        p->cpu_us = cpu_us;
        p->maxrss = maxrss_kb * 1024;   /* the largest process of the tree, from wait4 */
        p->end_ms = xb_now_ms();
        if (p->out_fd < 0 && p->err_fd < 0)
                finish(p);
        else
                xb_timer_start(x->srv->loop, &p->drain, XB_DRAIN_MS, on_drain, p);
}

void
xb_proc_on_error(struct xb_sbx *x, uint32_t tag, int errnum, const char *stage)
{
        struct xb_proc *p = find_tag(x, tag);
        struct xb_req *req;
        const char *argv0 = p ? p->cmd : "";

        if (!p)
                return;
        req = p->exec_req ? p->exec_req : p->start_req;
        p->exec_req = p->start_req = NULL;
        if (p->stream) {
                xb_stream_event(p->stream, "error",
                                json_pack("{s:s,s:s}", "code", "spawn_failed", "message", strerror(errnum)));
                xb_stream_end(p->stream);
                p->stream = NULL;
                req = NULL;
        }
        if (req) {
                if (errnum == ENOENT && strcmp(stage, "exec") == 0)
                        xb_reply_error(req, 400, "command_not_found",
                                       "check the program name; use `cmd` to run it through bash, which searches PATH and "
                                       "reports errors as exit code 127",
                                       "command not found: %.100s", argv0);
                else if (strcmp(stage, "working directory") == 0)
                        xb_reply_error(req, 400, "bad_cwd", "create the directory first, or use /home/user",
                                       "cannot use the working directory: %s", strerror(errnum));
                else if (errnum == EAGAIN && strcmp(stage, "fork") == 0)
                        xb_reply_error(req, 429, "process_limit",
                                       "the sandbox is at its process limit (limits.pids): wait for its processes to "
                                       "end, kill some (see GET .../processes), or create the sandbox with a higher "
                                       "limits.pids",
                                       "could not start %.100s: the sandbox has no room for another process", argv0);
                else
                        xb_reply_error(req, 400, "spawn_failed", "check the command and its arguments",
                                       "could not start %.100s: %s: %s", argv0, stage, strerror(errnum));
        }
        p->finished = true;
        unlink_proc(p);
}

void
xb_proc_sandbox_died(struct xb_sbx *x)
{
        while (x->procs) {
                struct xb_proc *p = x->procs;
                const char *why = x->error[0] ? x->error : "the sandbox was deleted";

                if (p->start_req) {
                        xb_reply_error(p->start_req, 410, "sandbox_gone", "create a new sandbox", "%s", why);
                        p->start_req = NULL;
                }
                if (!p->finished) {
                        if (!p->exited)
                                p->killed_by_request = true;
                        p->background = false;   /* nothing to keep it for */
                        finish(p);
                } else
                        unlink_proc(p);
        }
}

void
xb_proc_forget(struct xb_proc *p)
{
        if (!p->finished) {
                p->killed_by_request = true;
                xb_proc_signal(p, SIGKILL);
                p->background = false;   /* unlink when it ends */
                p->forgotten = true;
                return;
        }
        unlink_proc(p);
}

/* Keep at most XB_FINISHED_KEPT finished processes for reading: the oldest
 * go first (the list is newest first), unless someone still waits on one. */
static void
prune_finished(struct xb_sbx *x)
{
        unsigned kept = 0;
        struct xb_proc *p = x->procs, *next;

        for (; p; p = next) {
                next = p->next;
                if (!p->finished || p->waiters)
                        continue;
                if (++kept > XB_FINISHED_KEPT)
                        unlink_proc(p);
        }
}

struct xb_proc *
xb_proc_start(struct xb_sbx *x, const struct xb_proc_spec *spec, bool background, struct xb_err *err)
{
        int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, inp[2] = { -1, -1 };
        struct xb_exec_spec q;
        struct xb_proc *p;
        struct xb_cgroup_stats st = { 0 };
        bool want_stdin = spec->stdin_len > 0 || spec->keep_stdin;
        int r;

        if (x->state >= XB_SBX_DYING) {
                xb_err_msg(err, ESRCH, "the sandbox is gone");
                return NULL;
        }
        prune_finished(x);
        if (x->nprocs >= XB_PROCS_PER_SANDBOX) {
                xb_err_msg(err, EAGAIN, "the sandbox has %u processes the server tracks, its limit; "
                           "delete finished ones with DELETE .../processes/{pid}", x->nprocs);
                return NULL;
        }
        p = calloc(1, sizeof(*p));
        if (!p) {
                xb_err_set(err, ENOMEM, "process");
                return NULL;
        }
        p->sbx = x;
        p->out_fd = p->err_fd = p->in_fd = -1;
        p->background = background;
        p->timeout_ms = spec->timeout_ms;
        p->yield_ms = spec->yield_ms;
        p->stdin_buf.max = STDIN_BACKLOG_MAX;
        xb_outbuf_init(&p->out, spec->output_limit);
        xb_outbuf_init(&p->err, spec->output_limit);
        {
                size_t used = 0;

                for (char **a = spec->argv; *a && used < sizeof(p->cmd) - 1; a++)
                        used += (size_t)snprintf(p->cmd + used, sizeof(p->cmd) - used, "%s%s", used ? " " : "", *a);
        }
        if ((r = xb_sandbox_pipe(outp)) < 0 || (r = xb_sandbox_pipe(errp)) < 0 ||
            (want_stdin && (r = xb_sandbox_pipe(inp)) < 0)) {
                xb_err_set(err, -r, "pipe");
                goto fail;
        }
        p->tag = xb_sbx_tag(x);
        q = (struct xb_exec_spec){
                .argv = spec->argv, .env = spec->env, .cwd = spec->cwd, .uid = spec->uid, .gid = spec->uid,
                .std = { inp[0], outp[1], errp[1] },
        };
        r = xb_initc_spawn(x->sb->sock, p->tag, &q, err);
        close(outp[1]);
        close(errp[1]);
        if (inp[0] >= 0)
                close(inp[0]);
        outp[1] = errp[1] = inp[0] = -1;
        if (r < 0)
                goto fail;
        p->out_fd = outp[0];
        p->err_fd = errp[0];
        p->in_fd = inp[1];
        xb_set_nonblock(p->out_fd, true);
        xb_set_nonblock(p->err_fd, true);
        xb_io_start(x->srv->loop, &p->out_io, p->out_fd, EPOLLIN, on_output, p);
        xb_io_start(x->srv->loop, &p->err_io, p->err_fd, EPOLLIN, on_output, p);
        if (p->in_fd >= 0) {
                xb_set_nonblock(p->in_fd, true);
                xb_io_start(x->srv->loop, &p->in_io, p->in_fd, 0, on_stdin, p);
                if (spec->stdin_len)
                        xb_buf_append(&p->stdin_buf, spec->stdin_data, spec->stdin_len);
                p->stdin_close = !spec->keep_stdin;
                pump_stdin(p);
        }
        if (x->sb)
                xb_sandbox_stats(x->sb, &st);
        p->oom_before = st.oom_kills;
        p->start_ms = xb_now_ms();
        if (p->timeout_ms)
                xb_timer_start(x->srv->loop, &p->hard, p->timeout_ms, on_hard, p);
        xb_sbx_ref(x);
        p->next = x->procs;
        x->procs = p;
        x->nprocs++;
        return p;
fail:
        for (int i = 0; i < 2; i++) {
                if (outp[i] >= 0)
                        close(outp[i]);
                if (errp[i] >= 0)
                        close(errp[i]);
                if (inp[i] >= 0)
                        close(inp[i]);
        }
        xb_outbuf_free(&p->out);
        xb_outbuf_free(&p->err);
        free(p);
        return NULL;
}

static void
start_gone(struct xb_req *r, void *owner)
{
        struct xb_proc *p = owner;

        (void)r;
        p->start_req = NULL;
}

void
xb_proc_attach_start(struct xb_proc *p, struct xb_req *req)
{
        if (p->spawned) {
                xb_reply_json(req, 201, xb_proc_json(p, false));
                return;
        }
        p->start_req = req;
        xb_req_suspend(req, start_gone, p);
}

pid_t
xb_proc_pid(const struct xb_proc *p)
{
        return p->pid;
}

json_t *
xb_proc_list_json(struct xb_sbx *x)
{
        json_t *a = json_array();

        for (struct xb_proc *p = x->procs; p; p = p->next)
                if (p->spawned && !p->forgotten)
                        json_array_append_new(a, xb_proc_json(p, false));
        return a;
}

bool
xb_proc_any_waited(const struct xb_sbx *x)
{
        for (const struct xb_proc *p = x->procs; p; p = p->next)
                if (!p->finished && (p->exec_req || p->stream || p->waiters))
                        return true;
        return false;
}
