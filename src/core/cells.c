/* Cells: one runs at a time per session, up to QUEUE_MAX wait behind it.
 * A cell answers its call when it ends, or "running" at its soft timeout
 * (then a wait call gets the rest). Past its hard timeout it is
 * interrupted and keeps the session's state; if the interrupt does not
 * stop it within INTERRUPT_GRACE_MS the interpreter is killed. A call that
 * leaves only detaches: the cell runs on. A cell's call counts as a waiter
 * on the sandbox (xb_sbx_wait_begin), which holds off its expiry. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/initc.h"
#include "core/audit.h"
#include "core/core.h"
#include "core/sessions.h"
#include "core/session_int.h"

#define CELL_OUTPUTS_MAX 2000
#define INTERRUPT_GRACE_MS 3000
#define ESCALATE_MS 500         /* interrupt → kill what the interpreter forked */
#define QUEUE_MAX 8
#define WAIT_DEFAULT_MS 30000

void
xb__cell_free(struct xb__cell *c)
{
        xb_timer_stop(&c->hard);
        xb_timer_stop(&c->soft);
        xb_timer_stop(&c->grace);
        xb_timer_stop(&c->escalate);
        xb_timer_stop(&c->wait);
        json_decref(c->outputs);
        xb_buf_free(&c->merge);
        json_decref(c->exit_code);
        json_decref(c->cwd);
        free(c->code);
        json_decref(c->env);
        free(c);
}

/* The merged text into its output's JSON: once per reply, not per event. */
static void
merge_flush(struct xb__cell *c)
{
        json_t *o = c->merge_at ? json_array_get(c->outputs, c->merge_at - 1) : NULL;

        if (o && c->merge_dirty)
                json_object_set_new(o, "text", json_stringn(c->merge.data ? c->merge.data : "", c->merge.len));
        c->merge_dirty = false;
}

static void
merge_end(struct xb__cell *c)
{
        merge_flush(c);
        xb_buf_free(&c->merge);
        c->merge_at = 0;
}

static json_t *
cell_json(struct xb__cell *c, const char *status, bool only_new)
{
        json_t *outs = json_array(), *o;
        size_t i;

        merge_flush(c);
        json_array_foreach(c->outputs, i, o)
                if (!only_new || i >= c->returned)
                        json_array_append(outs, o);
        c->returned = json_array_size(c->outputs);
        o = json_pack("{s:s,s:i,s:I,s:o,s:s}", "status", status, "execution_count", c->ss->exec_count, "duration_ms",
                      (json_int_t)((c->end_ms ? c->end_ms : xb_now_ms()) - c->start_ms), "outputs", outs,
                      "session_id", c->ss->id);
        if (c->dropped)
                json_object_set_new(o, "output_dropped_bytes", json_integer((json_int_t)c->dropped));
        if (c->rich_dropped)
                json_object_set_new(o, "rich_output_dropped_bytes", json_integer((json_int_t)c->rich_dropped));
        if (c->events_dropped)
                json_object_set_new(o, "outputs_dropped", json_integer((json_int_t)c->events_dropped));
        /* Dead with its session deleted, or its sandbox gone: a restart would find nothing. */
        if (!strcmp(status, "dead") && (c->ss->gone || c->ss->sbx->state >= XB_SBX_DYING))
                json_object_set_new(o, "session_gone", json_true());
        if (c->exit_code)
                json_object_set(o, "exit_code", c->exit_code);
        if (c->cwd)
                json_object_set(o, "cwd", c->cwd);
        if (strcmp(status, "timeout") == 0)
                json_object_set_new(o, "hint", json_string("the cell ran past timeout_s and was interrupted; "
                                                            "the session's state is kept"));
        return o;
}

/* Nobody waits on the cell any more; returns who did. */
static struct xb_call *
detach(struct xb__cell *c)
{
        struct xb_call *call = c->call;

        if (call) {
                c->call = NULL;
                xb_sbx_wait_end(c->ss->sbx);
        }
        c->stream = false;
        return call;
}

/* The client left: the cell runs on, and a wait can pick up its end. */
static void
cell_cancel(void *owner)
{
        detach(owner);
}

static void
attach(struct xb__cell *c, struct xb_call *call, bool stream)
{
        c->call = call;
        c->stream = stream;
        xb_sbx_wait_begin(c->ss->sbx);
        xb_call_on_cancel(call, cell_cancel, c);
}

void
xb__cell_reply(struct xb__cell *c, const char *status)
{
        struct xb_call *call = c->call;
        json_t *o;

        if (!call)
                return;
        if (!strcmp(status, "running"))
                c->yielded = true;
        o = cell_json(c, status, true);
        if (c->stream)
                json_object_del(o, "outputs");   /* they went as events */
        detach(c);
        xb_call_done(call, o);
}

void
xb__cell_finish(struct xb__cell *c, const char *status)
{
        struct xb_session *ss = c->ss;
        bool waited;

        if (c->done)
                return;
        c->done = true;
        if (c->dropped) {
                char note[200];

                snprintf(note, sizeof(note), "\n[execbox: %llu bytes of this cell's output were dropped over the "
                         "%llu-byte limit]\n", (unsigned long long)c->dropped, (unsigned long long)c->output_limit);
                merge_end(c);
                json_array_append_new(c->outputs, json_pack("{s:s,s:s,s:s}", "type", "stream", "name", "stderr", "text", note));
        }
        if (c->events_dropped) {
                char note[300];
                uint64_t rich_max = c->output_limit > XB__CELL_RICH_DEFAULT ? c->output_limit : XB__CELL_RICH_DEFAULT;

                snprintf(note, sizeof(note), "\n[execbox: %u outputs of this cell (%llu bytes of display, result and "
                         "error data) were dropped over its limits of %llu bytes of rich output and %u outputs]\n",
                         c->events_dropped, (unsigned long long)c->rich_dropped, (unsigned long long)rich_max,
                         (unsigned)XB__CELL_EVENTS_MAX);
                merge_end(c);
                json_array_append_new(c->outputs, json_pack("{s:s,s:s,s:s}", "type", "stream", "name", "stderr", "text", note));
        }
        c->end_ms = xb_now_ms();
        /* The code's size, not the code (it may hold secrets). */
        xb_audit_add(ss->sbx->audit, "cell", json_pack("{s:s,s:s,s:I,s:I}", "session", ss->id, "status", status,
                                                       "duration_ms", (json_int_t)(c->start_ms ? c->end_ms - c->start_ms : 0),
                                                       "code_bytes", (json_int_t)(c->code ? strlen(c->code) : 0)));
        waited = c->call != NULL;
        xb__cell_reply(c, status);
        if (ss->cell == c)
                ss->cell = NULL;
        if (c->yielded && !waited) {
                /* Someone saw "running" and will wait for the end: keep
                 * what they have not seen, and the status. */
                xb_timer_stop(&c->hard);
                xb_timer_stop(&c->soft);
                xb_timer_stop(&c->grace);
                xb_timer_stop(&c->wait);
                snprintf(c->status, sizeof(c->status), "%s", status);
                if (ss->finished)
                        xb__cell_free(ss->finished);
                ss->finished = c;
        } else
                xb__cell_free(c);
        if (ss->state == SS_BUSY)
                ss->state = SS_IDLE;
        xb_sbx_used(ss->sbx);   /* the idle TTL runs from the end of the cell */
        xb__cell_start_next(ss);
}

static void
on_soft(struct xb_timer *t)
{
        struct xb__cell *c = t->data;

        xb__cell_reply(c, "running");
}

static void
on_grace(struct xb_timer *t)
{
        struct xb__cell *c = t->data;

        /* The interrupt did not stop it: the interpreter is stuck. */
        xb__session_died(c->ss, "the cell did not stop after an interrupt and the interpreter was killed");
}

static void
on_hard(struct xb_timer *t)
{
        struct xb__cell *c = t->data;

        c->timed_out = true;
        xb_session_interrupt(c->ss);
        xb_timer_start(c->ss->sbx->core->loop, &c->grace, INTERRUPT_GRACE_MS, on_grace, c);
}

static void
begin(struct xb_session *ss, struct xb__cell *c)
{
        struct xb_loop *l = ss->sbx->core->loop;

        ss->cell = c;
        ss->state = SS_BUSY;
        c->start_ms = xb_now_ms();
        if (xb__session_send(ss, json_pack("{s:s,s:I,s:s,s:O*}", "op", "run", "id", (json_int_t)c->id, "code", c->code,
                                           "env", c->env)) < 0) {
                xb__session_died(ss, "could not send the cell to the interpreter");
                return;
        }
        if (c->timeout_ms)
                xb_timer_start(l, &c->hard, c->timeout_ms, on_hard, c);
        if (c->yield_ms)
                xb_timer_start(l, &c->soft, c->yield_ms, on_soft, c);
}

void
xb__cell_start_next(struct xb_session *ss)
{
        struct xb__cell *c = ss->queue;

        if (!c || ss->state != SS_IDLE)
                return;
        ss->queue = c->next;
        ss->nqueue--;
        c->next = NULL;
        begin(ss, c);
}

/* The event name of an output: a cell's value is execute_result, as in
 * Jupyter, since the stream's last event is the cell's result. */
static const char *
event_name(const char *type)
{
        return !type ? "output" : !strcmp(type, "result") ? "execute_result" : type;
}

void
xb__cell_add_output(struct xb__cell *c, json_t *o)
{
        const char *type = json_string_value(json_object_get(o, "type"));

        if (json_array_size(c->outputs) >= CELL_OUTPUTS_MAX) {
                json_decref(o);
                return;
        }
        if (type && strcmp(type, "stream") == 0) {
                size_t n = json_string_length(json_object_get(o, "text")), last = json_array_size(c->outputs);
                json_t *prev = last ? json_array_get(c->outputs, last - 1) : NULL;

                if (c->stream_bytes + n > c->output_limit) {
                        /* Keep the head up to the limit (whole UTF-8 characters), drop the rest. */
                        const char *t = json_string_value(json_object_get(o, "text"));
                        size_t room = c->output_limit > c->stream_bytes ? c->output_limit - c->stream_bytes : 0;

                        while (room && ((unsigned char)t[room] & 0xC0) == 0x80)
                                room--;
                        c->dropped += n - room;
                        if (!room) {
                                json_decref(o);
                                return;
                        }
                        json_object_set_new(o, "text", json_stringn(t, room));
                        n = room;
                }
                c->stream_bytes += n;
                if (c->stream)
                        xb_call_event(c->call, "stream", o);
                /* Consecutive text on one stream is one output, as in a notebook.
                 * Its text grows in c->merge and reaches the JSON at a reply:
                 * copying the whole text per event was O(events x bytes). */
                if (prev && last > c->returned && json_equal(json_object_get(prev, "type"), json_object_get(o, "type")) &&
                    json_equal(json_object_get(prev, "name"), json_object_get(o, "name"))) {
                        if (c->merge_at != last) {
                                merge_end(c);
                                c->merge.max = (64u << 20) + 4096;   /* above any output_limit */
                                xb_buf_puts(&c->merge, json_string_value(json_object_get(prev, "text")));
                                c->merge_at = last;
                        }
                        xb_buf_append(&c->merge, json_string_value(json_object_get(o, "text")), n);
                        c->merge_dirty = true;
                        json_decref(o);
                        return;
                }
        } else if (c->stream)
                xb_call_event(c->call, event_name(type), o);
        merge_end(c);
        json_array_append_new(c->outputs, o);
        if (c->yield_ms && !c->done)
                xb_timer_start(c->ss->sbx->core->loop, &c->soft, c->yield_ms, on_soft, c);
}

void
xb_session_run(struct xb_session *ss, struct xb_call *call, const char *code, json_t *env, uint64_t timeout_ms,
               uint64_t yield_ms, uint64_t output_limit)
{
        struct xb__cell *c;

        if (ss->state == SS_DEAD) {
                xb_call_failf(call, XB_E_SESSION_DEAD, NULL, "the session is dead: %s", ss->death);
                return;
        }
        if (ss->nqueue >= QUEUE_MAX || (ss->state == SS_BUSY && !strcmp(ss->mode, "bash"))) {
                xb_call_failf(call, XB_E_SESSION_BUSY, NULL, "a cell is still running in this session");
                return;
        }
        c = calloc(1, sizeof(*c));
        if (!c || !(c->code = strdup(code)) || !(c->outputs = json_array())) {
                if (c)
                        xb__cell_free(c);
                xb_call_failf(call, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        c->ss = ss;
        c->env = env && json_object_size(env) ? json_incref(env) : NULL;
        c->id = ++ss->next_id;
        c->timeout_ms = timeout_ms;
        c->yield_ms = yield_ms;
        c->output_limit = output_limit ? output_limit : XB_CELL_OUTPUT_DEFAULT;
        attach(c, call, xb_call_wants_events(call));
        if (c->stream)
                xb_call_begin(call);   /* accepted: the stream starts now, before any output */
        xb_sbx_used(ss->sbx);
        if (ss->finished) {   /* a new cell: the end of the last one is no longer waited for */
                xb__cell_free(ss->finished);
                ss->finished = NULL;
        }
        if (ss->state == SS_IDLE && !ss->cell)
                begin(ss, c);
        else {
                struct xb__cell **pp = &ss->queue;

                while (*pp)
                        pp = &(*pp)->next;
                *pp = c;
                ss->nqueue++;
                c->start_ms = xb_now_ms();
        }
}

static void
wait_timeout(struct xb_timer *t)
{
        xb__cell_reply(t->data, "running");
}

void
xb_session_wait(struct xb_session *ss, struct xb_call *call, uint64_t timeout_ms)
{
        struct xb__cell *c = ss->cell;

        if (!c && ss->finished) {
                /* The cell ended after its "running" reply: its end, once. */
                struct xb__cell *f = ss->finished;

                ss->finished = NULL;
                xb_call_done(call, cell_json(f, f->status, true));
                xb__cell_free(f);
                return;
        }
        if (!c) {
                xb_call_done(call, json_pack("{s:s,s:i,s:[],s:s}", "status", "idle", "execution_count", ss->exec_count,
                                             "outputs", "session_id", ss->id));
                return;
        }
        if (c->call) {
                xb_call_failf(call, XB_E_ALREADY_WAITING, NULL, "someone is already waiting for this cell");
                return;
        }
        attach(c, call, false);
        xb_timer_start(ss->sbx->core->loop, &c->wait, timeout_ms ? timeout_ms : WAIT_DEFAULT_MS, wait_timeout, c);
}

/* An interrupted Python cell still running after ESCALATE_MS: kill every
 * other process of the interpreter's group. A fork bomb's copies are born
 * faster than a SIGINT reaches them, and starve the interpreter of the CPU
 * it needs to unwind; the interpreter and its state survive. */
static void
on_escalate(struct xb_timer *t)
{
        struct xb__cell *c = t->data;
        struct xb_session *ss = c->ss;

        if (ss->state != SS_DEAD && ss->pid && ss->sbx->sb && ss->cell == c)
                xb_initc_signal(ss->sbx->sb->sock, ss->tag, SIGKILL, XB_SIG_OTHERS);
}

void
xb_session_interrupt(struct xb_session *ss)
{
        if (ss->state == SS_DEAD || !ss->pid || !ss->sbx->sb)
                return;
        if (!strcmp(ss->mode, "bash"))
                xb__session_send(ss, json_pack("{s:s,s:I}", "op", "interrupt", "id", (json_int_t)++ss->next_id));
        else {
                /* The driver's process group (it leads its own session): the cell
                 * raises KeyboardInterrupt and the state survives, and a child
                 * such as os.system("sleep 100") stops too. */
                xb_initc_signal(ss->sbx->sb->sock, ss->tag, SIGINT, XB_SIG_GROUP);
                if (!strcmp(ss->mode, "python") && ss->cell && !ss->cell->escalate.active)
                        xb_timer_start(ss->sbx->core->loop, &ss->cell->escalate, ESCALATE_MS, on_escalate, ss->cell);
        }
}
