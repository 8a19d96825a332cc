/* Processes in a sandbox: spawn through init, pipes, output, stdin,
 * timeouts and verdicts. The pipes themselves are proc_io.c's; the calls
 * waiting on a process are proc_wait.c's.
 *
 * Theory of operation. The server makes each process's pipes, passes the
 * write ends to init with the spawn request and closes its own copies; the
 * read ends are non-blocking fds in the loop. Output lands in head-and-tail
 * buffers (struct xb_outbuf), which answer both the final result and reads
 * by absolute byte offset. A process "finishes" once init reports its exit
 * and its pipes reach EOF, or XB_DRAIN_MS after the exit if a background
 * child still holds them. Init's events reach a process through its
 * pending tag (xb_sbx_pending_add), which it holds until it is unlinked. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "core/call.h"
#include "proc/initc.h"
#include "proc/run.h"
#include "core/audit.h"
#include "core/proc_int.h"

#define STDIN_BACKLOG_MAX (4u << 20)

bool
xb_proc_running(const struct xb_proc *p)
{
        return !p->finished;
}

pid_t
xb_proc_pid(const struct xb_proc *p)
{
        return p->pid;
}

struct xb_proc *
xb_proc_find(struct xb_sbx *x, pid_t pid)
{
        for (struct xb_proc *p = x->procs; p; p = p->next)
                if (p->spawned && p->pid == pid && !p->forgotten)
                        return p;
        return NULL;
}

struct xb_proc *
xb_proc_find_tag(struct xb_sbx *x, const char *tag)
{
        for (struct xb_proc *p = x->procs; p && tag; p = p->next)
                if (p->spawned && !p->forgotten && p->client_tag && !strcmp(p->client_tag, tag))
                        return p;
        return NULL;
}

bool
xb_proc_any_running(const struct xb_sbx *x)
{
        for (const struct xb_proc *p = x->procs; p; p = p->next)
                if (p->background && !p->exited && !p->finished && !p->forgotten)
                        return true;
        return false;
}

json_t *
xb_proc_list_json(struct xb_sbx *x, bool detail)
{
        json_t *a = json_array();

        for (struct xb_proc *p = x->procs; p; p = p->next) {
                json_t *o;

                if (!p->spawned || p->forgotten)
                        continue;
                o = xb_proc_json(p, false);
                if (detail) {
                        json_object_set(o, "argv", p->argv ? p->argv : json_null());
                        json_object_set(o, "env", p->env ? p->env : json_null());
                        json_object_set_new(o, "cwd", p->cwd ? json_string(p->cwd) : json_null());
                        json_object_set_new(o, "tag", p->client_tag ? json_string(p->client_tag) : json_null());
                }
                json_array_append_new(a, o);
        }
        return a;
}

static void
proc_free(void *data)
{
        struct xb_proc *p = data;

        struct xb_core *s = p->sbx->core;
        uint64_t k = proc_kept(p);

        s->out_mem -= k <= s->out_mem ? k : s->out_mem;
        if (p->budget_held)
                s->out_waiting--;
        proc_spill_free(p);
        xb_outbuf_free(&p->out);
        xb_outbuf_free(&p->err);
        xb_buf_free(&p->stdin_buf);
        json_decref(p->audit);
        json_decref(p->argv);
        json_decref(p->env);
        free(p->client_tag);
        free(p->cwd);
        xb_fds_release(p->sbx, p->fds_held);
        xb_sbx_unref(p->sbx);
        free(p);
        proc_budget_freed(s);
}

void
proc_unlink(struct xb_proc *p)
{
        struct xb_sbx *x = p->sbx;

        /* A sink that starts new work from inside proc_finish() can prune p first. */
        if (p->unlinked)
                return;
        p->unlinked = true;
        for (struct xb_proc **pp = &x->procs; *pp; pp = &(*pp)->next)
                if (*pp == p) {
                        *pp = p->next;
                        x->nprocs--;
                        break;
                }
        xb_sbx_pending_del(x, p->tag);
        xb_timer_stop(&p->hard);
        xb_timer_stop(&p->soft);
        xb_timer_stop(&p->drain);
        proc_close_pipe(&p->out_io, &p->out_fd);
        proc_close_pipe(&p->err_io, &p->err_fd);
        proc_close_pipe(&p->in_io, &p->in_fd);
        proc_close_pipe(&p->tty_io, &p->tty_sock);
        xb_loop_defer(x->core->loop, &p->defer, proc_free, p);
}

/* The list is newest first: the oldest finished go first. */
void
proc_prune_finished(struct xb_sbx *x)
{
        unsigned kept = 0;
        struct xb_proc *p = x->procs, *next;

        for (; p; p = next) {
                next = p->next;
                if (!p->finished || p->waiters)
                        continue;
                if (++kept > XB_FINISHED_KEPT)
                        proc_unlink(p);
        }
}

int
xb_proc_signal(struct xb_proc *p, int signo)
{
        if (p->finished || !p->sbx->sb || p->sbx->state >= XB_SBX_DYING)
                return -ESRCH;
        /* The process group: the command and what it started, unless they
         * setsid'd away; SIGKILL ends the whole tree (init's keeper). */
        return xb_initc_signal(p->sbx->sb->sock, p->tag, signo,
                               signo == SIGKILL ? XB_SIG_GROUP | XB_SIG_TREE : XB_SIG_GROUP);
}

int
xb_proc_kill_tree(struct xb_proc *p)
{
        if (!p->spawned || !p->sbx->sb || p->sbx->state >= XB_SBX_DYING || p->unlinked)
                return -ESRCH;
        if (!p->finished)
                p->killed_by_request = true;
        /* Also after the command exited: what it left running dies too. */
        return xb_initc_signal(p->sbx->sb->sock, p->tag, SIGKILL, XB_SIG_TREE);
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
         * death finishes every process (proc_died). */
        xb_proc_signal(p, SIGKILL);
}

void
proc_arm_hard(struct xb_proc *p, uint64_t after_ms)
{
        xb_timer_start(p->sbx->core->loop, &p->hard, after_ms ? after_ms : 1, on_hard, p);
}

static void
on_drain(struct xb_timer *t)
{
        struct xb_proc *p = t->data;

        /* Held: what is left in the pipes is the command's, and its reader is coming. */
        if (p->out_held || p->budget_held || p->spill_pending || p->spill_wait) {
                xb_timer_start(p->sbx->core->loop, &p->drain, XB_DRAIN_MS, on_drain, p);
                return;
        }
        proc_finish(p);
}

/* The exec event, with how it ended; and a limit event when one ended it. */
static void
audit_end(struct xb_proc *p, const char *error)
{
        static const struct { enum xb_status st; const char *limit; } limits[] = {
                { XB_ST_TIMEOUT, "time" }, { XB_ST_CPU_LIMIT, "cpu" }, { XB_ST_MEMORY_LIMIT, "memory" },
                { XB_ST_OUTPUT_LIMIT, "output" },
        };
        struct xb_audit *log = p->sbx->audit;
        const struct xb_result *res = &p->result;
        json_t *ev = p->audit;

        p->audit = NULL;
        if (!ev || !log) {
                json_decref(ev);
                return;
        }
        json_object_set_new(ev, "pid", p->pid > 0 ? json_integer(p->pid) : json_null());
        if (error) {
                json_object_set_new(ev, "status", json_string("error"));
                json_object_set_new(ev, "error", json_string(error));
                xb_audit_add(log, "exec", ev);
                return;
        }
        json_object_set_new(ev, "status", json_string(xb_status_name(res->status)));
        json_object_set_new(ev, "exit_code", res->exited ? json_integer(res->exit_code) : json_null());
        json_object_set_new(ev, "signal", res->exited ? json_null() : json_integer(res->signal));
        json_object_set_new(ev, "duration_ms", json_integer((json_int_t)res->wall_ms));
        json_object_set_new(ev, "cpu_ms", json_integer((json_int_t)res->cpu_ms));
        xb_audit_add(log, "exec", ev);
        for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
                if (res->status == limits[i].st)
                        xb_audit_add(log, "limit", json_pack("{s:s,s:i}", "limit", limits[i].limit, "pid", (int)p->pid));
}

void
proc_finish(struct xb_proc *p)
{
        struct xb_core *s = p->sbx->core;
        struct xb_result *res = &p->result;
        struct xb_verdict_in v = { 0 };
        uint64_t oom_kills = 0;
        struct xb_tenant_metrics *tm;

        if (p->finished)
                return;
        p->finished = true;
        xb_timer_stop(&p->hard);
        xb_timer_stop(&p->soft);
        xb_timer_stop(&p->drain);
        xb_adopt_unhold(p);
        /* Stop reading: a background child still holding the pipes gets EPIPE. */
        proc_close_pipe(&p->out_io, &p->out_fd);
        proc_close_pipe(&p->err_io, &p->err_fd);
        proc_close_pipe(&p->in_io, &p->in_fd);
        proc_close_pipe(&p->tty_io, &p->tty_sock);
        xb_fds_release(p->sbx, p->fds_held);
        p->fds_held = 0;
        if (!p->end_ms)
                p->end_ms = xb_now_ms();
        if (p->sbx->sb)
                oom_kills = xb_sandbox_oom_kills(p->sbx->sb);
        res->out = p->out;
        res->err = p->err;
        xb_result_set_status(res, p->exited, p->status);
        res->wall_ms = p->end_ms - p->start_ms;
        res->cpu_ms = p->cpu_us / 1000;
        res->peak_memory = p->maxrss;
        v = (struct xb_verdict_in){
                .exited = res->exited, .exit_code = res->exit_code, .signal = res->signal,
                /* The sandbox's counter is shared: blame this command only if it was SIGKILLed. */
                .timed_out = p->timed_out, .oom = oom_kills > p->oom_before && !res->exited && res->signal == SIGKILL,
                .killed_by_request = p->killed_by_request,
                .truncated = xb_outbuf_truncated(&p->out) || xb_outbuf_truncated(&p->err),
        };
        res->status = xb_verdict(&v);
        s->m.execs++;
        s->m.execs_by_status[res->status]++;
        xb_hist_observe(&s->m.exec_duration, res->wall_ms * 1000);
        if ((tm = xb_metrics_tenant(&s->m, p->sbx->tenant)))
                tm->execs_by_status[res->status]++;
        audit_end(p, NULL);

        proc_answer_finished(p);
        /* An exec answered in full has nothing left to read: forget it. */
        if (!p->background)
                proc_unlink(p);
        else
                proc_prune_finished(p->sbx);
}

/* ---- init's events, through the pending tag ---- */

static void
proc_spawned(void *ctx, pid_t pid)
{
        struct xb_proc *p = ctx;

        if (p->spawned)
                return;
        p->spawned = true;
        p->pid = pid;
        /* The whole streams' files are named by the pid, now known. */
        if (p->spill_wait) {
                p->spill_wait = false;
                proc_spill_start(p);
                proc_watch_pipes(p);
        }
        /* After the spill files are named: the next daemon goes on with
         * them. A terminal's master may come later (proc_on_tty holds it). */
        if (p->background && (!p->tty || p->out_fd >= 0))
                xb_adopt_hold(p);
        proc_answer_spawned(p);
}

static void
proc_exited(void *ctx, int status, uint64_t cpu_us, uint64_t maxrss_kb)
{
        struct xb_proc *p = ctx;

        if (p->exited)
                return;
        p->exited = true;
        p->status = status;
        p->cpu_us = cpu_us;
        p->maxrss = maxrss_kb * 1024;   /* the largest process of the tree, from wait4 */
        p->end_ms = xb_now_ms();
        proc_budget_unhold(p);
        /* Its work ended now: one idle TTL from here, not from the last poll. */
        xb_sbx_used(p->sbx);
        if (p->out_fd < 0 && p->err_fd < 0)
                proc_finish(p);
        else
                xb_timer_start(p->sbx->core->loop, &p->drain, XB_DRAIN_MS, on_drain, p);
}

static void
proc_error(void *ctx, int errnum, const char *stage)
{
        struct xb_proc *p = ctx;

        if (p->finished)
                return;
        p->finished = true;
        {
                char why[160];

                snprintf(why, sizeof(why), "%s: %s", stage ? stage : "spawn", strerror(errnum));
                audit_end(p, why);
        }
        proc_answer_spawn_error(p, errnum, stage);
        proc_unlink(p);
}

/* The sandbox died: every process ends, as killed if it had not exited. */
static void
proc_died(void *ctx, const char *why)
{
        struct xb_proc *p = ctx;
        struct xb_err err = { 0 };

        xb_sbx_gone(p->sbx, why, "the sandbox was deleted", &err);
        proc_answer_gone(p, &err);
        if (!p->finished) {
                if (!p->exited)
                        p->killed_by_request = true;
                p->background = false;   /* nothing to keep it for */
                proc_finish(p);
        } else
                proc_unlink(p);
}

static const struct xb_pending_ops proc_pending = {
        .spawned = proc_spawned, .exited = proc_exited, .error = proc_error, .died = proc_died,
};

const struct xb_pending_ops *
proc_pending_ops(void)
{
        return &proc_pending;
}

void
xb_proc_forget(struct xb_proc *p)
{
        xb_proc_kill_tree(p);
        if (!p->finished) {
                p->background = false;   /* unlink when it ends */
                p->forgotten = true;
                proc_budget_unhold(p);
                return;
        }
        proc_unlink(p);
}

static int
start_error(struct xb_err *err)
{
        /* What the client can do about it. */
        if (err->code == EAGAIN)
                err->ecode = XB_E_TOO_MANY_PROCESSES;
        else if (err->code == E2BIG)
                err->ecode = XB_E_COMMAND_TOO_LONG;
        else if (err->code == ESRCH)
                err->ecode = XB_E_SANDBOX_GONE;
        else
                err->ecode = XB_E_SPAWN_INTERNAL;
        return -err->code;
}

struct xb_proc *
xb_proc_start(struct xb_sbx *x, const struct xb_proc_spec *spec, bool background, struct xb_err *err)
{
        int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, inp[2] = { -1, -1 };
        struct xb_exec_spec q;
        struct xb_proc *p;
        bool want_stdin = !spec->tty && spec->stdin_fd <= 0 && (spec->stdin_len > 0 || spec->keep_stdin);
        int ttyp[2] = { -1, -1 };
        struct xb_err e = { 0 };
        int r;

        if (!err)
                err = &e;
        if (x->state >= XB_SBX_DYING) {
                xb_err_code(err, XB_E_SANDBOX_GONE, ESRCH, NULL, "the sandbox is gone");
                return NULL;
        }
        proc_prune_finished(x);
        if (x->nprocs >= XB_PROCS_PER_SANDBOX) {
                xb_err_code(err, XB_E_TOO_MANY_PROCESSES, EAGAIN, NULL,
                            "the sandbox has %u processes the server tracks, its limit", x->nprocs);
                return NULL;
        }
        /* Its pipes count against the tenant's and the sandbox's fd budgets. */
        if (xb_fds_check(x->core, x->tenant, x, XB_FDS_PER_PROCESS, err) < 0)
                return NULL;
        p = calloc(1, sizeof(*p));
        if (!p) {
                xb_err_set(err, ENOMEM, "process");
                start_error(err);
                return NULL;
        }
        p->sbx = x;
        p->out_fd = p->err_fd = p->in_fd = p->tty_sock = -1;
        p->sp_out.fd = p->sp_err.fd = -1;
        p->tty = spec->tty;
        p->rows = spec->rows;
        p->cols = spec->cols;
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
        if (spec->tty) {
                if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ttyp) < 0) {
                        xb_err_set(err, errno, "socketpair");
                        goto fail;
                }
        } else if ((r = xb_sandbox_pipe(outp)) < 0 || (r = xb_sandbox_pipe(errp)) < 0 ||
                   (want_stdin && (r = xb_sandbox_pipe(inp)) < 0)) {
                xb_err_set(err, -r, "pipe");
                goto fail;
        }
        if ((spec->tag && !(p->client_tag = strdup(spec->tag))) || (spec->cwd && !(p->cwd = strdup(spec->cwd)))) {
                xb_err_set(err, ENOMEM, "process");
                goto fail;
        }
        p->tag = xb_sbx_pending_add(x, &proc_pending, p);
        if (!p->tag) {
                xb_err_set(err, ENOMEM, "process");
                goto fail;
        }
        q = (struct xb_exec_spec){
                .argv = spec->argv, .env = spec->env, .cwd = spec->cwd, .uid = spec->uid, .gid = spec->uid,
                .std = { spec->stdin_fd > 0 && !spec->tty ? spec->stdin_fd : inp[0], outp[1], errp[1] },
                .tty = spec->tty, .tty_sock = ttyp[1], .tty_rows = spec->rows, .tty_cols = spec->cols,
                .keeper = true,
        };
        r = xb_initc_spawn(x->sb->sock, p->tag, &q, err);
        xb_closep(&outp[1]);
        xb_closep(&errp[1]);
        xb_closep(&inp[0]);
        xb_closep(&ttyp[1]);
        if (r < 0) {
                xb_sbx_pending_del(x, p->tag);
                goto fail;
        }
        if (spec->tty) {
                p->tty_sock = TAKE_FD(ttyp[0]);
                xb_set_nonblock(p->tty_sock, true);
                xb_io_start(x->core->loop, &p->tty_io, p->tty_sock, EPOLLIN, proc_on_tty, p);
                if (spec->stdin_len)
                        xb_buf_append(&p->stdin_buf, spec->stdin_data, spec->stdin_len);
                if (spec->stdin_len && !spec->keep_stdin)
                        xb_buf_append(&p->stdin_buf, "\x04", 1);
                /* Its stream goes to a file too, as a pipe's does. */
                p->spill_wait = background;
        } else {
                p->out_fd = TAKE_FD(outp[0]);
                p->err_fd = TAKE_FD(errp[0]);
                p->in_fd = TAKE_FD(inp[1]);
                xb_set_nonblock(p->out_fd, true);
                xb_set_nonblock(p->err_fd, true);
                /* A background process's whole streams go to files in
                 * the sandbox: its pipes wait for them to open. */
                p->spill_wait = background;
                proc_watch_pipes(p);
        }
        if (xb_fds_charge(x, XB_FDS_PER_PROCESS, NULL) == 0)
                p->fds_held = XB_FDS_PER_PROCESS;
        if (p->in_fd >= 0) {
                xb_set_nonblock(p->in_fd, true);
                xb_io_start(x->core->loop, &p->in_io, p->in_fd, 0, proc_on_stdin, p);
                if (spec->stdin_len)
                        xb_buf_append(&p->stdin_buf, spec->stdin_data, spec->stdin_len);
                p->stdin_close = !spec->keep_stdin;
                proc_pump_stdin(p);
        }
        if (x->sb)
                p->oom_before = xb_sandbox_oom_kills(x->sb);
        p->start_ms = xb_now_ms();
        if (p->timeout_ms)
                xb_timer_start(x->core->loop, &p->hard, p->timeout_ms, on_hard, p);
        p->argv = xb_audit_strv(spec->argv, 4096);
        p->env = spec->req_env ? json_deep_copy(spec->req_env) : json_object();
        /* What was asked, never the env's values or stdin. */
        p->audit = json_pack("{s:o,s:o,s:s,s:b,s:o}", "argv", xb_audit_strv(spec->argv, 64), "cwd",
                             xb_audit_str(spec->cwd), "user", spec->uid == 0 ? "root" : "user", "background",
                             background, "env", xb_audit_env_names(spec->env));
        xb_sbx_ref(x);
        p->next = x->procs;
        x->procs = p;
        x->nprocs++;
        return p;
fail:
        xb_closep(&ttyp[0]);
        xb_closep(&ttyp[1]);
        free(p->client_tag);
        free(p->cwd);
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
        start_error(err);
        return NULL;
}
