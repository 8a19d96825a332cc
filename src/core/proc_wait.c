/* The calls waiting on a process, and its JSON. At most one exec call
 * (with or without events; it may end early with the soft timeout's
 * "running" result), one start call (until init confirms the spawn), and
 * any number of wait and long-poll read calls. A departed exec caller
 * kills its command; departed waiters and readers leave it running.
 *
 * A sink may start new work from inside done (an MCP chain, a plugin
 * route): a call is detached from the process before it is finished, and
 * lists are walked again from the head after each answer. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "base/utf8.h"
#include "core/call.h"
#include "core/proc_int.h"

enum waiter_kind { W_WAIT, W_READ, W_ATTACH };

struct proc_waiter {
        struct proc_waiter *next;
        struct xb_proc *proc;
        struct xb_call *call;
        enum waiter_kind kind;
        uint64_t out_off, err_off;
        size_t max;
        bool b64;                     /* W_ATTACH: data as base64 of the raw bytes */
        struct xb_timer timer;
};

/* ---- JSON ---- */

json_t *
proc_running_json(const struct xb_proc *p)
{
        struct xb_result r = { .status = XB_ST_RUNNING, .out = p->out, .err = p->err,
                               .wall_ms = xb_now_ms() - p->start_ms };
        json_t *o = xb_result_json(&r, p->pid);

        json_object_set_new(o, "stdout_offset", json_integer((json_int_t)p->out.total));
        json_object_set_new(o, "stderr_offset", json_integer((json_int_t)p->err.total));
        proc_spill_json(p, o);
        return o;
}

json_t *
xb_proc_json(const struct xb_proc *p, bool with_output)
{
        json_t *o;

        if (p->finished && with_output)
                o = xb_result_json(&p->result, p->pid);
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
        /* Only when set: the shape of a plain process stays as it was. */
        if (p->client_tag)
                json_object_set_new(o, "tag", json_string(p->client_tag));
        if (p->tty)
                json_object_set_new(o, "pty", json_pack("{s:i,s:i}", "cols", p->cols, "rows", p->rows));
        proc_spill_json(p, o);
        return o;
}

/* From the stream's file while it holds off, else what memory kept. */
static json_t *
chunk_json(const struct xb_outbuf *b, const struct proc_spill *sp, uint64_t off, size_t max, uint64_t *next,
           uint64_t *skipped)
{
        _cleanup_free_ char *buf = malloc(max ? max : 1);
        _cleanup_free_ char *clean = NULL;
        uint64_t start = off;
        size_t n, clean_len;

        if (!buf)
                return json_string("");
        n = max ? proc_spill_read(sp, off, buf, max) : 0;
        if (!n)
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

        json_object_set_new(o, "stdout", chunk_json(&p->out, &p->sp_out, out_off, max, &on, &os));
        json_object_set_new(o, "stderr", chunk_json(&p->err, &p->sp_err, err_off, max, &en, &es));
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

/* ---- wait and read calls ---- */

static void
waiter_drop(struct proc_waiter *w)
{
        struct xb_proc *p = w->proc;

        for (struct proc_waiter **pp = &p->waiters; *pp; pp = &(*pp)->next)
                if (*pp == w) {
                        *pp = w->next;
                        break;
                }
        xb_timer_stop(&w->timer);
        if (w->kind != W_ATTACH)
                xb_sbx_wait_end(p->sbx);
        free(w);
}

/* Detach w, then answer: the sink may act on the process. */
static void
waiter_done(struct proc_waiter *w, json_t *result)
{
        struct xb_call *c = w->call;

        waiter_drop(w);
        xb_call_done(c, result);
}

static void
waiter_cancel(void *owner)
{
        waiter_drop(owner);
}

static void
waiter_timeout(struct xb_timer *t)
{
        struct proc_waiter *w = t->data;
        struct xb_proc *p = w->proc;
        json_t *o;

        if (w->kind == W_WAIT) {
                o = proc_running_json(p);
                json_object_set_new(o, "waited", json_true());
        } else
                o = xb_proc_output_json(p, w->out_off, w->err_off, w->max);
        waiter_done(w, o);
}

static int
waiter_add(struct xb_proc *p, struct xb_call *c, const struct proc_waiter *tmpl, uint64_t timeout_ms)
{
        struct proc_waiter *w = calloc(1, sizeof(*w));

        if (!w)
                return -1;
        *w = *tmpl;
        w->next = p->waiters;
        w->proc = p;
        w->call = c;
        p->waiters = w;
        /* An attached stream may last as long as the process: it must not
         * hold off the sandbox's expiry or a pause as a wait does. */
        if (w->kind != W_ATTACH)
                xb_sbx_wait_begin(p->sbx);
        xb_call_on_cancel(c, waiter_cancel, w);
        if (timeout_ms)
                xb_timer_start(p->sbx->core->loop, &w->timer, timeout_ms, waiter_timeout, w);
        return 0;
}

static void
notify_readers(struct xb_proc *p)
{
again:
        for (struct proc_waiter *w = p->waiters; w; w = w->next)
                if (w->kind == W_READ && (p->out.total > w->out_off || p->err.total > w->err_off || p->finished)) {
                        waiter_done(w, xb_proc_output_json(p, w->out_off, w->err_off, w->max));
                        goto again;
                }
}

void
xb_proc_wait(struct xb_proc *p, struct xb_call *c, uint64_t timeout_ms)
{
        if (p->finished) {
                xb_call_done(c, xb_result_json(&p->result, p->pid));
                return;
        }
        if (waiter_add(p, c, &(struct proc_waiter){ .kind = W_WAIT }, timeout_ms) < 0)
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
}

void
xb_proc_read(struct xb_proc *p, struct xb_call *c, uint64_t out_off, uint64_t err_off, size_t max,
             uint64_t wait_ms)
{
        if (!wait_ms || p->finished || p->out.total > out_off || p->err.total > err_off) {
                xb_call_done(c, xb_proc_output_json(p, out_off, err_off, max));
                return;
        }
        if (waiter_add(p, c, &(struct proc_waiter){ .kind = W_READ, .out_off = out_off, .err_off = err_off,
                                                    .max = max }, wait_ms) < 0)
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
}

/* ---- the exec call ---- */

/* Detach the exec call: it no longer waits. */
static struct xb_call *
exec_take(struct xb_proc *p)
{
        struct xb_call *c = p->exec;

        if (c) {
                p->exec = NULL;
                xb_call_on_release(c, NULL, NULL);
                xb_timer_stop(&p->soft);
                xb_sbx_wait_end(p->sbx);
                proc_output_resume(p);
        }
        return c;
}

static void
exec_cancel(void *owner)
{
        struct xb_proc *p = owner;

        exec_take(p);
        /* The caller left: cancel its command, unless it went to the background. */
        if (!p->background && !p->finished) {
                p->killed_by_request = true;
                xb_proc_signal(p, SIGKILL);
        }
}

static void
on_soft(struct xb_timer *t)
{
        struct xb_proc *p = t->data;
        struct xb_call *c;

        if (p->finished || !p->exec)
                return;
        /* No output for yield_ms: answer now and let it run on in the background. */
        p->background = true;
        c = exec_take(p);
        xb_call_done(c, proc_running_json(p));
}

void
xb_proc_exec(struct xb_proc *p, struct xb_call *c)
{
        p->exec = c;
        xb_sbx_wait_begin(p->sbx);
        xb_call_on_cancel(c, exec_cancel, p);
        if (xb_call_wants_events(c)) {
                json_t *ev = json_pack("{s:s}", "cmd", p->cmd);

                xb_call_event(c, "start", ev);
                json_decref(ev);
        }
        if (p->yield_ms && p->exec)
                xb_timer_start(p->sbx->core->loop, &p->soft, p->yield_ms, on_soft, p);
}

/* One chunk for an attached stream: {"data", "offset"}. */
static void
attach_send(struct xb_call *c, bool b64, const char *name, const char *data, size_t n, uint64_t off)
{
        _cleanup_free_ char *enc = NULL;
        size_t len;
        json_t *ev;

        if (b64) {
                if (xb_base64_encode_alloc(data, n, &enc) < 0)
                        return;
                len = strlen(enc);
        } else if (!(enc = xb_utf8_sanitize(data, n, &len)))
                return;
        ev = json_pack("{s:s%,s:I}", "data", enc, len, "offset", (json_int_t)off);
        if (ev)
                xb_call_event(c, name, ev);
        json_decref(ev);
}

static int
replay(struct proc_waiter *w, const struct xb_outbuf *b, const char *name)
{
        _cleanup_free_ char *buf = malloc(65536);
        uint64_t off = 0;

        if (!buf)
                return -1;
        while (off < b->total) {
                uint64_t start = off;
                size_t n = xb_outbuf_read(b, off, buf, 65536, &start);

                if (!n)
                        break;
                attach_send(w->call, w->b64, name, buf, n, start);
                off = start + n;
        }
        return 0;
}

void
xb_proc_attach(struct xb_proc *p, struct xb_call *c, bool from_start, bool b64)
{
        struct proc_waiter *w;

        if (!xb_call_wants_events(c)) {
                xb_call_failf(c, XB_E_INVALID, NULL, "attaching to a process needs a caller that takes a stream");
                return;
        }
        xb_call_begin(c);
        if (waiter_add(p, c, &(struct proc_waiter){ .kind = W_ATTACH, .b64 = b64 }, 0) < 0) {
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        w = p->waiters;
        if (from_start && (replay(w, &p->out, "stdout") < 0 || replay(w, &p->err, "stderr") < 0)) {
                waiter_drop(w);
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        if (p->finished)
                waiter_done(w, xb_result_json(&p->result, p->pid));
}

void
proc_output(struct xb_proc *p, const char *name, const char *data, size_t n)
{
        size_t clean_len;
        _cleanup_free_ char *clean = NULL;
        json_t *ev;
        const struct xb_outbuf *b = !strcmp(name, "stdout") ? &p->out : &p->err;

        /* The chunk is in the buffer already: it began at total - n. */
        for (struct proc_waiter *w = p->waiters; w; w = w->next)
                if (w->kind == W_ATTACH)
                        attach_send(w->call, w->b64, name, data, n, b->total - n);
        if (!p->exec || !xb_call_wants_events(p->exec))
                return;
        clean = xb_utf8_sanitize(data, n, &clean_len);
        ev = clean ? json_pack("{s:s%}", "data", clean, clean_len) : NULL;
        if (ev)
                xb_call_event(p->exec, name, ev);
        json_decref(ev);
}

void
proc_output_done(struct xb_proc *p)
{
        if (p->exec && p->yield_ms)
                xb_timer_start(p->sbx->core->loop, &p->soft, p->yield_ms, on_soft, p);
        notify_readers(p);
}

/* ---- what init said ---- */

void
proc_answer_finished(struct xb_proc *p)
{
        struct xb_call *c = exec_take(p);

        if (c)
                xb_call_done(c, xb_result_json(&p->result, p->pid));
again:
        for (struct proc_waiter *w = p->waiters; w; w = w->next)
                if (w->kind == W_WAIT || w->kind == W_ATTACH) {
                        waiter_done(w, xb_result_json(&p->result, p->pid));
                        goto again;
                }
        notify_readers(p);
}

static void
start_cancel(void *owner)
{
        struct xb_proc *p = owner;

        p->start = NULL;
}

void
xb_proc_wait_spawn(struct xb_proc *p, struct xb_call *c)
{
        if (p->spawned) {
                xb_call_done(c, xb_proc_json(p, false));
                return;
        }
        p->start = c;
        xb_call_on_cancel(c, start_cancel, p);
}

void
proc_answer_spawned(struct xb_proc *p)
{
        struct xb_call *c = p->start;

        p->start = NULL;
        if (c)
                xb_call_done(c, xb_proc_json(p, false));
}

void
proc_answer_gone(struct xb_proc *p, const struct xb_err *err)
{
        struct xb_call *c = p->start;

        p->start = NULL;
        if (c)
                xb_call_fail(c, err);
}

void
proc_answer_spawn_error(struct xb_proc *p, int errnum, const char *stage)
{
        struct xb_call *c = p->exec ? exec_take(p) : p->start;
        struct xb_err err = { 0 };
        const char *argv0 = p->cmd;

        p->start = NULL;
        if (!c)
                return;
        if (errnum == ENOENT && strcmp(stage, "exec") == 0)
                xb_err_code(&err, XB_E_COMMAND_NOT_FOUND, errnum, NULL, "command not found: %.100s", argv0);
        else if (strcmp(stage, "working directory") == 0)
                xb_err_code(&err, XB_E_BAD_CWD, errnum, NULL, "cannot use the working directory: %s",
                            strerror(errnum));
        else if (errnum == EAGAIN && strcmp(stage, "fork") == 0)
                xb_err_code(&err, XB_E_PROCESS_LIMIT, errnum, NULL,
                            "could not start %.100s: the sandbox has no room for another process", argv0);
        else
                xb_err_code(&err, XB_E_SPAWN_FAILED, errnum, NULL, "could not start %.100s: %s: %s", argv0, stage,
                            strerror(errnum));
        xb_call_fail(c, &err);
}
