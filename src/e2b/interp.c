/* The code interpreter's server (port 49999), as @e2b/code-interpreter
 * speaks to it: POST /execute streams a cell's outputs as NDJSON, and
 * /contexts manages kernels. A context is an execbox code session (op
 * create_session); its id is the session's. Without a context, each
 * language has a default one per sandbox, made on first use. Results
 * carry E2B's names for MIME types (text, html, png, ...), with
 * is_main_result for the cell's value. A client that leaves, or whose
 * timeout passes (it then leaves), interrupts the cell, as E2B does.
 * Per-execution env_vars are set for that cell only (the drivers put
 * back what was there before). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "core/call.h"
#include "e2b/e2b_int.h"
#include "ops/jsonv.h"

static const struct {
        const char *e2b, *execbox;
} langs[E2B_LANGS] = { { "python", "python" }, { "javascript", "javascript" }, { "r", "ir" }, { "bash", "bash" } };

/* The index of an E2B language name (aliases too), or -1. */
static int
lang_index(const char *l)
{
        if (!l || !strcmp(l, "python") || !strcmp(l, "python3"))
                return 0;
        if (!strcmp(l, "javascript") || !strcmp(l, "js") || !strcmp(l, "node"))
                return 1;
        if (!strcmp(l, "r") || !strcmp(l, "R"))
                return 2;
        if (!strcmp(l, "bash") || !strcmp(l, "sh"))
                return 3;
        return -1;
}

static const char *
lang_e2b(const char *execbox)
{
        for (int i = 0; i < E2B_LANGS; i++)
                if (execbox && !strcmp(langs[i].execbox, execbox))
                        return langs[i].e2b;
        return execbox ? execbox : "python";
}

static void
text_error(struct xb_req *r, unsigned status, const char *msg)
{
        xb_reply_bytes(r, status, "text/plain; charset=utf-8", msg, strlen(msg));
}

static unsigned
status_of(const struct xb_err *err)
{
        switch (err->ecode) {
        case XB_E_SESSION_NOT_FOUND: case XB_E_SANDBOX_NOT_FOUND: return 404;
        case XB_E_SANDBOX_GONE: case XB_E_SANDBOX_EXPIRED: return 502;
        case XB_E_SESSION_BUSY: return 409;
        case XB_E_UNKNOWN_LANGUAGE: case XB_E_INVALID: case XB_E_INVALID_LANGUAGE: return 400;
        case XB_E_TOO_MANY_SESSIONS: return 429;
        default: return 500;
        }
}

/* ---- /execute ---- */

struct exec {
        struct e2b_sink sink;
        struct e2b_hold hold;
        struct xb_e2b *e;
        struct xb_req *req;          /* until the stream opens */
        struct xb_stream *st;
        char id[XB_SANDBOX_ID_LEN + 1], sid[40];
        int tenant, lang;
        char *code;
        json_t *env;                 /* env_vars: this execution's own, or NULL */
        bool running;                /* run_code in flight */
};

static void
exec_free(struct exec *x)
{
        e2b_hold_del(&x->hold);
        if (x->sink.call)
                xb_call_cancel(x->sink.call);
        free(x->code);
        json_decref(x->env);
        free(x);
}

static void
line(struct exec *x, json_t *o)
{
        _cleanup_free_ char *js = json_dumps(o, JSON_COMPACT);

        json_decref(o);
        if (x->st && js) {
                xb_stream_write(x->st, js, strlen(js));
                xb_stream_write(x->st, "\n", 1);
        }
}

/* The cell was cut short by the client: stop it, as E2B's server does. */
static void
interrupt(struct exec *x)
{
        _cleanup_(xb_json_decrefp) json_t *args = json_pack("{s:s,s:s}", "id", x->id, "sid", x->sid);
        struct xb_err err = { 0 };

        if (x->running)
                e2b_run_sync(x->e, x->tenant, "interrupt_session", args, NULL, &err);
}

static void
stream_gone(struct xb_req *r, void *owner)
{
        struct exec *x = owner;

        (void)r;
        x->st = NULL;
        x->req = NULL;
        /* Detach first: the interrupt ends the cell later, with no one to tell. */
        if (x->sink.call)
                xb_call_cancel(x->sink.call);
        x->sink.call = NULL;
        interrupt(x);
        exec_free(x);
}

static void
pre_gone(struct xb_req *r, void *owner)
{
        stream_gone(r, owner);
}

static json_t *
result_line(json_t *data, bool main)
{
        static const struct { const char *mime, *key; } names[] = {
                { "text/plain", "text" }, { "text/html", "html" }, { "text/markdown", "markdown" },
                { "image/svg+xml", "svg" }, { "image/png", "png" }, { "image/jpeg", "jpeg" },
                { "application/pdf", "pdf" }, { "text/latex", "latex" }, { "application/json", "json" },
                { "application/javascript", "javascript" },
                { "application/vnd.execbox.chart+json", "chart" },   /* a matplotlib figure's data */
        };
        json_t *o = json_pack("{s:s,s:b}", "type", "result", "is_main_result", main), *v;
        const char *mime;

        json_object_foreach(data, mime, v) {
                const char *key = mime;

                for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                        if (!strcmp(names[i].mime, mime))
                                key = names[i].key;
                json_object_set(o, key, v);
        }
        return o;
}

static void
exec_event(struct e2b_sink *s, const char *name, json_t *data)
{
        struct exec *x = (struct exec *)s;
        struct timespec ts;

        if (!name) {
                /* The cell was accepted: the NDJSON stream starts. */
                if (x->req && !x->st) {
                        x->st = xb_reply_stream(x->req, 200, "application/x-ndjson", stream_gone, x);
                        x->req = NULL;
                }
                return;
        }
        clock_gettime(CLOCK_REALTIME, &ts);
        if (!strcmp(name, "stream")) {
                const char *which = json_string_value(json_object_get(data, "name"));

                line(x, json_pack("{s:s,s:O,s:I}", "type", which && !strcmp(which, "stderr") ? "stderr" : "stdout", "text",
                                  json_object_get(data, "text"), "timestamp",
                                  (json_int_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000));
        } else if (!strcmp(name, "execute_result") || !strcmp(name, "display")) {
                line(x, result_line(json_object_get(data, "data"), !strcmp(name, "execute_result")));
        } else if (!strcmp(name, "error")) {
                struct xb_buf tb = { .max = 1 << 20 };
                json_t *l;
                size_t i;

                json_array_foreach(json_object_get(data, "traceback"), i, l)
                        xb_buf_printf(&tb, "%s%s", i ? "\n" : "", json_string_value(l) ? json_string_value(l) : "");
                line(x, json_pack("{s:s,s:O,s:O,s:s}", "type", "error", "name", json_object_get(data, "name"), "value",
                                  json_object_get(data, "value"), "traceback", tb.data ? tb.data : ""));
                xb_buf_free(&tb);
        }
}

static void
exec_done(struct e2b_sink *s, json_t *res, const struct xb_err *err)
{
        struct exec *x = (struct exec *)s;

        x->running = false;
        if (err && !x->st) {
                if (x->req)
                        text_error(x->req, status_of(err), err->msg);
                x->req = NULL;
        } else if (err) {
                line(x, json_pack("{s:s,s:s,s:s,s:s}", "type", "error", "name", "ExecboxError", "value", err->msg,
                                  "traceback", err->msg));
        } else {
                if (!x->st && x->req) {
                        x->st = xb_reply_stream(x->req, 200, "application/x-ndjson", stream_gone, x);
                        x->req = NULL;
                }
                if (!strcmp(json_string_value(json_object_get(res, "status")) ?: "", "timeout"))
                        line(x, json_pack("{s:s,s:s,s:s,s:s}", "type", "error", "name", "TimeoutError", "value",
                                          "the cell ran past its timeout and was interrupted", "traceback", ""));
                line(x, json_pack("{s:s,s:O}", "type", "number_of_executions", "execution_count",
                                  json_object_get(res, "execution_count")));
                line(x, json_pack("{s:s}", "type", "end_of_execution"));
        }
        json_decref(res);
        if (x->st)
                xb_stream_end(x->st);
        x->st = NULL;
        exec_free(x);
}

static void
run_cell(struct exec *x)
{
        _cleanup_(xb_json_decrefp) json_t *args =
                json_pack("{s:s,s:s,s:s,s:i,s:O*}", "id", x->id, "sid", x->sid, "code", x->code, "timeout_s", 86400,
                          "env", x->env);

        x->sink.done = exec_done;
        x->sink.event = exec_event;
        x->running = true;
        if (!e2b_run(x->e, x->tenant, "run_code", args, XB_CALL_EVENTS | XB_CALL_BEGIN, &x->sink)) {
                x->running = false;
                if (x->req)
                        text_error(x->req, 503, "out of memory");
                exec_free(x);
        }
}

static void
created_done(struct e2b_sink *s, json_t *res, const struct xb_err *err)
{
        struct exec *x = (struct exec *)s;
        const char *sid = json_string_value(json_object_get(res, "id"));
        struct e2b_sbx *rec;

        if (err || !sid) {
                if (x->req)
                        text_error(x->req, err ? status_of(err) : 500, err ? err->msg : "no session id");
                x->req = NULL;
                json_decref(res);
                exec_free(x);
                return;
        }
        snprintf(x->sid, sizeof(x->sid), "%s", sid);
        rec = e2b_sbx_find(x->e, x->id, x->tenant);
        if (rec)
                snprintf(rec->default_ctx[x->lang], sizeof(rec->default_ctx[x->lang]), "%s", sid);
        json_decref(res);
        run_cell(x);
}

static bool
session_live(struct xb_e2b *e, int tenant, const char *id, const char *sid)
{
        _cleanup_(xb_json_decrefp) json_t *args = json_pack("{s:s,s:s}", "id", id, "sid", sid), *res = NULL;
        struct xb_err err = { 0 };

        return e2b_run_sync(e, tenant, "get_session", args, &res, &err) == 0 &&
               strcmp(json_string_value(json_object_get(res, "state")) ?: "dead", "dead");
}

/* The sandbox is being paused: the cell is detached (it freezes with the
 * kernel and ends after the resume); the client hears that it was cut. */
static void
exec_drop(struct e2b_hold *h)
{
        struct exec *x = (struct exec *)((char *)h - offsetof(struct exec, hold));

        if (x->sink.call)
                xb_call_cancel(x->sink.call);
        x->sink.call = NULL;
        if (x->st) {
                line(x, json_pack("{s:s,s:s,s:s,s:s}", "type", "error", "name", "SandboxPaused", "value",
                                  "the sandbox was paused while the cell ran", "traceback", ""));
                xb_stream_end(x->st);
                x->st = NULL;
        } else if (x->req) {
                text_error(x->req, 502, "the sandbox was paused");
                x->req = NULL;
        }
        exec_free(x);
}

static void
execute(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct xb_sbx *sx;
        /* runCode sends the envd token; the context routes do not. */
        struct e2b_sbx *s = e2b_front_sbx(r, e, true, &sx);
        const char *code, *ctx, *lang;
        json_t *env;
        struct exec *x;
        size_t n = 0;
        const char *b = xb_req_body(r, &n);
        int li;

        if (!s)
                return;
        body = n ? json_loadb(b, n, 0, NULL) : NULL;
        code = json_string_value(json_object_get(body, "code"));
        ctx = json_string_value(json_object_get(body, "context_id"));
        lang = json_string_value(json_object_get(body, "language"));
        env = json_object_get(body, "env_vars");
        if (!json_is_object(body) || !code) {
                text_error(r, 400, "send {\"code\": \"...\"} as JSON");
                return;
        }
        if (env && !json_is_null(env) && !json_is_object(env)) {
                text_error(r, 400, "env_vars must be an object of names and strings");
                return;
        }
        li = lang_index(lang);
        if (!ctx && li < 0) {
                text_error(r, 400, "unknown language: use python, javascript, r or bash");
                return;
        }
        x = calloc(1, sizeof(*x));
        if (!x || !(x->code = strdup(code))) {
                free(x);
                text_error(r, 503, "out of memory");
                return;
        }
        x->e = e;
        x->req = r;
        x->env = json_is_object(env) && json_object_size(env) ? json_incref(env) : NULL;
        x->tenant = s->tenant;
        snprintf(x->hold.id, sizeof(x->hold.id), "%s", s->id);
        x->hold.drop = exec_drop;
        e2b_hold_add(e, &x->hold);
        x->lang = li < 0 ? 0 : li;
        snprintf(x->id, sizeof(x->id), "%s", s->id);
        xb_req_suspend(r, pre_gone, x);
        if (ctx) {
                snprintf(x->sid, sizeof(x->sid), "%s", ctx);
                run_cell(x);
                return;
        }
        if (s->default_ctx[li][0] && session_live(e, s->tenant, s->id, s->default_ctx[li])) {
                snprintf(x->sid, sizeof(x->sid), "%s", s->default_ctx[li]);
                run_cell(x);
                return;
        }
        {
                _cleanup_(xb_json_decrefp) json_t *args = json_pack("{s:s,s:s}", "id", s->id, "language",
                                                                     langs[li].execbox);

                x->sink.done = created_done;
                if (!e2b_run(e, s->tenant, "create_session", args, 0, &x->sink)) {
                        text_error(r, 503, "out of memory");
                        x->req = NULL;
                        exec_free(x);
                }
        }
}

/* ---- /contexts ---- */

static json_t *
context_json(json_t *session)
{
        return json_pack("{s:O,s:s,s:s}", "id", json_object_get(session, "id"), "language",
                         lang_e2b(json_string_value(json_object_get(session, "language"))), "cwd", "/home/user");
}

static void
context_created(struct xb_req *r, struct e2b_async *a, json_t *res, const struct xb_err *err)
{
        if (err)
                text_error(r, status_of(err), err->msg);
        else
                xb_reply_json(r, 200, context_json(res));
        json_decref(res);
        e2b_async_free(a);
}

static void
contexts_post(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *body = NULL, *args = NULL;
        struct xb_sbx *sx;
        struct e2b_sbx *s = e2b_front_sbx(r, e, false, &sx);
        const char *lang, *cwd;
        struct e2b_async *a;
        size_t n = 0;
        const char *b = xb_req_body(r, &n);
        int li;

        if (!s)
                return;
        body = n ? json_loadb(b, n, 0, NULL) : json_object();
        lang = json_string_value(json_object_get(body, "language"));
        cwd = json_string_value(json_object_get(body, "cwd"));
        li = lang_index(lang);
        if (li < 0) {
                text_error(r, 400, "unknown language: use python, javascript, r or bash");
                return;
        }
        if (cwd && strcmp(cwd, "/home/user")) {
                text_error(r, 400, "contexts start in /home/user on this server: change directory in the code");
                return;
        }
        if (!(a = e2b_async_new(r, e, s->tenant, s->id, context_created)))
                return;
        args = json_pack("{s:s,s:s}", "id", s->id, "language", langs[li].execbox);
        e2b_async_run(a, "create_session", args, 0);
}

static void
contexts_get(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *args = NULL, *res = NULL;
        struct xb_err err = { 0 };
        struct xb_sbx *sx;
        struct e2b_sbx *s = e2b_front_sbx(r, e, false, &sx);
        json_t *out, *ss;
        size_t i;

        if (!s)
                return;
        args = json_pack("{s:s}", "id", s->id);
        if (e2b_run_sync(e, s->tenant, "list_sessions", args, &res, &err) < 0) {
                text_error(r, status_of(&err), err.msg);
                return;
        }
        out = json_array();
        json_array_foreach(json_object_get(res, "sessions"), i, ss)
                if (strcmp(json_string_value(json_object_get(ss, "state")) ?: "", "dead"))
                        json_array_append_new(out, context_json(ss));
        xb_reply_json(r, 200, out);
}

static void
context_op(struct xb_req *r, const char *op)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *args = NULL;
        struct xb_err err = { 0 };
        struct xb_sbx *sx;
        struct e2b_sbx *s = e2b_front_sbx(r, e, false, &sx);

        if (!s)
                return;
        args = json_pack("{s:s,s:s}", "id", s->id, "sid", xb_req_param(r, 1));
        if (e2b_run_sync(e, s->tenant, op, args, NULL, &err) < 0) {
                text_error(r, status_of(&err), err.msg);
                return;
        }
        xb_reply_empty(r, 204);
}

static void
contexts_delete(struct xb_req *r)
{
        context_op(r, "delete_session");
}

static void
contexts_restart(struct xb_req *r)
{
        context_op(r, "restart_session");
}

static void
interp_health(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        struct xb_sbx *sx;

        if (e2b_front_sbx(r, e, false, &sx))
                xb_reply_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

#define CI XB_ROUTE_PUBLIC | XB_ROUTE_HIDDEN
const struct xb_route e2b_interp_routes[] = {
        { "POST", E2B_INTERP_PREFIX "/execute", execute, CI, NULL },
        { "POST", E2B_INTERP_PREFIX "/contexts", contexts_post, CI, NULL },
        { "GET", E2B_INTERP_PREFIX "/contexts", contexts_get, CI, NULL },
        { "DELETE", E2B_INTERP_PREFIX "/contexts/{}", contexts_delete, CI, NULL },
        { "POST", E2B_INTERP_PREFIX "/contexts/{}/restart", contexts_restart, CI, NULL },
        { "GET", E2B_INTERP_PREFIX "/health", interp_health, CI, NULL },
};
const size_t e2b_interp_nroutes = sizeof(e2b_interp_routes) / sizeof(e2b_interp_routes[0]);
