/* Code sessions: their lifecycle (start, the warm pool, restart, delete,
 * death), variable reads, and init's events for their drivers, which
 * reach a session through its pending tag (one per spawn). See
 * sessions.h for the theory of operation; the driver protocol is in
 * session_io.c, cells in cells.c, images in images.c. */
#define _GNU_SOURCE
#include "core/sessions.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "base/cleanup.h"
#include "base/utf8.h"
#include "proc/initc.h"
#include "core/audit.h"
#include "core/core.h"
#include "core/session_int.h"

#define START_WAIT_MS 60000

static const char *const state_names[] = { "starting", "idle", "busy", "dead" };

static bool visible(const struct xb_session *ss);

/* What the client is told when a session cannot start: err->code says why. */
static void
start_error(struct xb_err *err)
{
        if (!err)
                return;
        switch (err->code) {
        case EINVAL:
                err->ecode = XB_E_INVALID_LANGUAGE;
                break;
        case ENOSPC:
                err->ecode = XB_E_TOO_MANY_SESSIONS;
                break;
        case EAGAIN:
                err->ecode = XB_E_SANDBOX_BUSY;
                break;
        default:
                err->ecode = XB_E_SESSION_INTERNAL;
        }
}

struct xb_session *
xb_session_start(struct xb_sbx *x, const char *language, bool preload, struct xb_err *err)
{
        struct xb_session *ss;

        if (x->nsessions >= XB_SESSIONS_PER_SANDBOX) {
                xb_err_code(err, XB_E_TOO_MANY_SESSIONS, ENOSPC, NULL, "a sandbox has at most %d sessions; delete one first",
                            XB_SESSIONS_PER_SANDBOX);
                return NULL;
        }
        if (!language || !*language || strlen(language) > 60 || strspn(language, "abcdefghijklmnopqrstuvwxyz"
                                                                                   "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
                                                                            strlen(language)) {
                xb_err_code(err, XB_E_INVALID_LANGUAGE, EINVAL, NULL,
                            "`language` must be python, bash, javascript, or an installed Jupyter kernel name");
                return NULL;
        }
        ss = calloc(1, sizeof(*ss));
        if (!ss) {
                xb_err_set(err, ENOMEM, "session");
                start_error(err);
                return NULL;
        }
        ss->sbx = x;
        ss->in_fd = ss->out_fd = ss->err_fd = -1;
        ss->inbuf.max = 64u << 20;
        ss->line.max = XB__LINE_MAX_BYTES + 65536;
        ss->errtail.max = XB__STDERR_TAIL + 1;
        ss->preload = preload;
        xb_random_id(ss->id, sizeof(ss->id));
        snprintf(ss->language, sizeof(ss->language), "%s", language);
        snprintf(ss->mode, sizeof(ss->mode), "%s", xb__driver_mode(language));
        if (xb__session_spawn(ss, err) < 0) {
                start_error(err);
                free(ss);
                return NULL;
        }
        xb_sbx_ref(x);
        ss->next = x->sessions;
        x->sessions = ss;
        x->nsessions++;
        /* A pooled sandbox has no log yet: its warm session is not an event. */
        xb_audit_add(x->audit, "session_create", json_pack("{s:s,s:s}", "session", ss->id, "language", ss->language));
        /* An armed sandbox's record lists its sessions: one the next
         * server cannot re-attach is shown lost, not forgotten. */
        if (x->armed && visible(ss))
                xb_record_save(x);
        return ss;
}

const char *
xb_session_id(const struct xb_session *ss)
{
        return ss->id;
}

void
xb_session_mark_warm(struct xb_session *ss)
{
        ss->warm = true;
}

static bool
visible(const struct xb_session *ss)
{
        return !ss->warm || ss->claimed;
}

struct xb_session *
xb_session_find(struct xb_sbx *x, const char *sid)
{
        for (struct xb_session *ss = x->sessions; ss; ss = ss->next)
                if (sid && strcmp(ss->id, sid) == 0 && visible(ss))
                        return ss;
        return NULL;
}

struct xb_session *
xb_session_find_live(struct xb_sbx *x, const char *language)
{
        struct xb_session *found = NULL;

        /* The list is newest first: the last match is the oldest. */
        for (struct xb_session *ss = x->sessions; ss; ss = ss->next)
                if (visible(ss) && ss->state != SS_DEAD && !strcmp(ss->language, language))
                        found = ss;
        return found;
}

struct xb_session *
xb_session_claim_warm(struct xb_sbx *x, const char *language)
{
        for (struct xb_session *ss = x->sessions; ss; ss = ss->next)
                if (ss->warm && !ss->claimed && ss->state != SS_DEAD && !strcmp(ss->language, language)) {
                        if (x->env && x->env[0]) {
                                /* Started in the pool, before the sandbox got its
                                 * environment: it would not see it. */
                                xb_session_delete(ss);
                                return NULL;
                        }
                        ss->claimed = true;
                        xb_adopt_hold_session(ss);
                        if (x->armed)
                                xb_record_save(x);
                        return ss;
                }
        return NULL;
}

bool
xb_session_has_warm(const struct xb_sbx *x)
{
        for (const struct xb_session *ss = x->sessions; ss; ss = ss->next)
                if (ss->warm && !ss->claimed && ss->state != SS_DEAD)
                        return true;
        return false;
}

bool
xb_session_any_busy(const struct xb_sbx *x)
{
        for (const struct xb_session *ss = x->sessions; ss; ss = ss->next)
                if (ss->state == SS_BUSY || ss->cell)
                        return true;
        return false;
}

json_t *
xb_session_json(const struct xb_session *ss)
{
        json_t *o = json_pack("{s:s,s:s,s:s,s:i,s:i}", "id", ss->id, "language", ss->language, "state",
                              ss->lost ? "lost" : state_names[ss->state], "execution_count", ss->exec_count, "pid",
                              (int)ss->pid);

        if (ss->state == SS_DEAD) {
                json_object_set_new(o, "error", json_string(ss->death));
                if (ss->errtail.len) {
                        size_t clen;
                        _cleanup_free_ char *c = xb_utf8_sanitize(ss->errtail.data, ss->errtail.len, &clen);

                        if (c)
                                json_object_set_new(o, "stderr", json_stringn(c, clen));
                }
        }
        return o;
}

json_t *
xb_session_record_json(const struct xb_sbx *x)
{
        json_t *a = json_array();

        for (const struct xb_session *ss = x->sessions; ss; ss = ss->next)
                if (visible(ss) && !ss->gone)
                        json_array_append_new(a, json_pack("{s:s,s:s}", "id", ss->id, "language", ss->language));
        return a;
}

json_t *
xb_session_list_json(struct xb_sbx *x)
{
        json_t *a = json_array();

        for (struct xb_session *ss = x->sessions; ss; ss = ss->next)
                if (visible(ss))
                        json_array_append_new(a, xb_session_json(ss));
        return a;
}

/* ---- a create that waits for the interpreter ---- */

/* Answer it: the session once it is ready (or still starting after
 * START_WAIT_MS), or why it could not start. */
static void
start_reply(struct xb_session *ss)
{
        struct xb_call *call = ss->start_call;

        if (!call)
                return;
        ss->start_call = NULL;
        xb_timer_stop(&ss->start_timer);
        if (ss->state != SS_DEAD)
                xb_call_done(call, xb_session_json(ss));
        else if (!strncmp(ss->death, "no such kernel", 14))
                xb_call_failf(call, XB_E_UNKNOWN_LANGUAGE, NULL, "%s", ss->death);
        else
                xb_call_failf(call, XB_E_SESSION_FAILED, NULL, "the interpreter did not start: %s", ss->death);
}

static void
start_cancel(void *owner)
{
        struct xb_session *ss = owner;

        ss->start_call = NULL;
        xb_timer_stop(&ss->start_timer);
}

static void
start_timeout(struct xb_timer *t)
{
        start_reply(t->data);
}

void
xb_session_when_started(struct xb_session *ss, struct xb_call *call)
{
        /* The built-in drivers always start; a Jupyter kernel's name is
         * checked by its driver, so wait for it to answer. */
        if (ss->state != SS_STARTING || strcmp(ss->mode, "jupyter") || ss->start_call) {
                xb_call_done(call, xb_session_json(ss));
                return;
        }
        ss->start_call = call;
        xb_call_on_cancel(call, start_cancel, ss);
        xb_timer_start(ss->sbx->core->loop, &ss->start_timer, START_WAIT_MS, start_timeout, ss);
}

void
xb__session_ready(struct xb_session *ss)
{
        if (ss->state != SS_STARTING)
                return;
        ss->state = SS_IDLE;
        xb_adopt_hold_session(ss);
        start_reply(ss);
        xb__cell_start_next(ss);
}

/* ---- variables ---- */

static void
var_cancel(void *owner)
{
        struct xb__var_req *vr = owner;

        vr->call = NULL;
}

static void
var_drop(struct xb__var_req *vr)
{
        struct xb_session *ss = vr->ss;

        for (struct xb__var_req **pp = &ss->vars; *pp; pp = &(*pp)->next)
                if (*pp == vr) {
                        *pp = vr->next;
                        break;
                }
        free(vr);
}

void
xb__session_variable_event(struct xb_session *ss, uint64_t id, json_t *ev)
{
        struct xb__var_req *vr = ss->vars;
        struct xb_call *call;

        while (vr && vr->id != id)
                vr = vr->next;
        if (!vr)
                return;
        call = vr->call;
        var_drop(vr);
        if (!call)
                return;
        if (json_is_true(json_object_get(ev, "unsupported"))) {
                xb_call_failf(call, XB_E_VARIABLES_UNSUPPORTED, NULL, "the %s kernel cannot be inspected", ss->language);
        } else if (!json_is_true(json_object_get(ev, "found"))) {
                xb_call_failf(call, XB_E_VARIABLE_NOT_FOUND, NULL, "no variable `%.100s` in this session",
                              json_string_value(json_object_get(ev, "name")) ?: "?");
        } else {
                json_t *repr = json_object_get(ev, "repr"), *t = json_object_get(ev, "value_type");

                /* "o" for repr: the stand-in made here is not kept twice. */
                xb_call_done(call, json_pack("{s:O,s:O,s:o,s:O}", "name", json_object_get(ev, "name") ?: json_null(),
                                             "type", xb__valid_text(t, 200) ? t : json_null(), "repr",
                                             xb__valid_text(repr, 1 << 20) ? json_incref(repr) : json_string(""),
                                             "json", json_object_get(ev, "json") ?: json_null()));
        }
}

void
xb_session_variable(struct xb_session *ss, struct xb_call *call, const char *name)
{
        struct xb__var_req *vr;

        if (ss->state == SS_DEAD) {
                xb_call_failf(call, XB_E_SESSION_DEAD_VARIABLE, NULL, "the session is dead: %s", ss->death);
                return;
        }
        if (ss->state == SS_BUSY) {
                xb_call_failf(call, XB_E_SESSION_BUSY_VARIABLE, NULL, "a cell is running");
                return;
        }
        vr = calloc(1, sizeof(*vr));
        if (!vr) {
                xb_call_failf(call, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        *vr = (struct xb__var_req){ .next = ss->vars, .ss = ss, .id = ++ss->next_id, .call = call };
        ss->vars = vr;
        xb_call_on_cancel(call, var_cancel, vr);
        xb__session_send(ss, json_pack("{s:s,s:I,s:s}", "op", "variable", "id", (json_int_t)vr->id, "name", name));
}

int
xb_session_input(struct xb_session *ss, const char *data, struct xb_err *err)
{
        int r;

        if (ss->state == SS_DEAD)
                return xb_err_code(err, XB_E_NO_INPUT, EPIPE, NULL, "the session is dead: %s", ss->death);
        if (strcmp(ss->mode, "bash"))
                return xb_err_code(err, XB_E_NO_INPUT, EINVAL, NULL,
                                   "only bash sessions take input; write files for other languages");
        r = xb__session_send(ss, json_pack("{s:s,s:I,s:s}", "op", "input", "id", (json_int_t)++ss->next_id, "data", data));
        if (r < 0 && err) {
                err->code = -r;
                err->ecode = XB_E_NO_INPUT;
        }
        return r;
}

/* ---- lifecycle ---- */

static void
fail_waiters(struct xb_session *ss, const char *status)
{
        if (ss->cell)
                xb__cell_finish(ss->cell, status);
        while (ss->queue) {
                struct xb__cell *c = ss->queue;

                ss->queue = c->next;
                ss->nqueue--;
                c->done = true;
                xb__cell_reply(c, status);
                xb__cell_free(c);
        }
        while (ss->vars) {
                struct xb_call *call = ss->vars->call;

                var_drop(ss->vars);
                if (call && (ss->gone || ss->sbx->state >= XB_SBX_DYING))
                        xb_call_failf(call, XB_E_SESSION_DELETED, NULL, "the session is gone: %s", ss->death);
                else if (call)
                        xb_call_failf(call, XB_E_SESSION_DEAD_LOST, NULL, "the session is not running");
        }
}

void
xb__session_died(struct xb_session *ss, const char *why)
{
        if (ss->state == SS_DEAD)
                return;
        xb_adopt_unhold_session(ss);
        ss->state = SS_DEAD;
        snprintf(ss->death, sizeof(ss->death), "%s", why);
        if (ss->pid > 0 && ss->sbx->sb && ss->sbx->state < XB_SBX_DYING)
                xb_initc_signal(ss->sbx->sb->sock, ss->tag, SIGKILL, XB_SIG_GROUP);
        xb__session_close_pipes(ss);
        fail_waiters(ss, "dead");
        if (ss->start_call) {
                /* Its create is still waiting: the session never was. */
                start_reply(ss);
                xb_session_delete(ss);
        }
}

static void
session_free(void *data)
{
        struct xb_session *ss = data;

        if (ss->finished)
                xb__cell_free(ss->finished);
        xb_buf_free(&ss->inbuf);
        xb_buf_free(&ss->line);
        xb_buf_free(&ss->errtail);
        xb_sbx_unref(ss->sbx);
        free(ss);
}

void
xb_session_delete(struct xb_session *ss)
{
        struct xb_sbx *x = ss->sbx;

        if (ss->start_call) {
                struct xb_call *call = ss->start_call;

                ss->start_call = NULL;
                xb_timer_stop(&ss->start_timer);
                xb_call_failf(call, XB_E_SESSION_DELETED, NULL, "the session was deleted before its interpreter started");
        }
        ss->gone = true;
        xb__session_died(ss, "the session was deleted");
        xb_audit_add(x->audit, "session_delete", json_pack("{s:s}", "session", ss->id));
        xb_sbx_pending_del(x, ss->tag);
        for (struct xb_session **pp = &x->sessions; *pp; pp = &(*pp)->next)
                if (*pp == ss) {
                        *pp = ss->next;
                        x->nsessions--;
                        break;
                }
        if (x->armed && x->state < XB_SBX_DYING)
                xb_record_save(x);
        xb_loop_defer(x->core->loop, &ss->defer, session_free, ss);
}

void
xb_session_restart(struct xb_session *ss)
{
        struct xb_err err = { 0 };
        struct xb_call *waiting = ss->start_call;

        ss->start_call = NULL;   /* it waits for the new interpreter instead */
        xb__session_died(ss, "the session was restarted");
        ss->start_call = waiting;
        if (ss->finished) {
                xb__cell_free(ss->finished);
                ss->finished = NULL;
        }
        ss->exec_count = 0;
        ss->next_id = 0;
        ss->lost = false;
        if (xb__session_spawn(ss, &err) < 0)
                xb__session_died(ss, err.msg);
}

/* ---- init's events, through the pending tag ---- */

static void
session_spawned(void *ctx, pid_t pid)
{
        struct xb_session *ss = ctx;

        ss->pid = pid;
}

static void
session_exited(void *ctx, int status, uint64_t cpu_us, uint64_t maxrss_kb)
{
        struct xb_session *ss = ctx;
        char why[160];

        (void)cpu_us;
        (void)maxrss_kb;
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
                snprintf(why, sizeof(why), "the interpreter was killed (SIGKILL), most likely for using more memory "
                         "than the sandbox's limit");
        else if (WIFSIGNALED(status))
                snprintf(why, sizeof(why), "the interpreter died of signal %d", WTERMSIG(status));
        else
                snprintf(why, sizeof(why), "the interpreter exited with status %d", WEXITSTATUS(status));
        xb__session_died(ss, why);
}

static void
session_error(void *ctx, int errnum, const char *stage)
{
        struct xb_session *ss = ctx;
        char why[200];

        snprintf(why, sizeof(why), "could not start the interpreter (%s: %s); is it installed?", stage, strerror(errnum));
        xb__session_died(ss, why);
}

/* The sandbox died: so does the session, in the same words as a delete. */
static void
session_sandbox_died(void *ctx, const char *why)
{
        (void)why;
        xb_session_delete(ctx);
}

const struct xb_pending_ops xb__session_pending = {
        .spawned = session_spawned, .exited = session_exited, .error = session_error, .died = session_sandbox_died,
};
