/* MCP tools over operations. A catalog tool names its operation; its
 * arguments become the operation's (xb_catalog_op_args) and its JSON
 * result becomes structuredContent and a plain-text rendering for clients
 * that show only content. run_code picks an interpreter per context,
 * sandbox and language; get_guide is the guide itself; read_file and
 * edit_file live in mcp_files.c.
 *
 * A failed operation becomes a tool result with isError and the error's
 * message and MCP's hint for it (hints.c), never a JSON-RPC error. It
 * carries no structuredContent: clients check that against the tool's
 * output schema, even on errors. When a context's default sandbox has
 * expired under it, a fresh one is made and the call retried once. While a
 * call runs, a request with a progressToken gets notifications/progress:
 * output as it comes for run_command, and a heartbeat every few seconds for
 * all tools. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "ops/jsonv.h"
#include "mcp/mcp_int.h"

#define HEARTBEAT_MS 5000
#define PROGRESS_GAP_MS 250

json_t *
mcp_tools_list(struct xb_mcp *m)
{
        (void)m;
        return xb_catalog_list_json(XB_TOOLS_MCP);
}

json_t *
mcp_text_block(const char *text)
{
        return json_pack("{s:s,s:s}", "type", "text", "text", text ? text : "");
}

/* ---- results ---- */

void
mcp_tool_error(struct xb_mcp_call *call, const char *text)
{
        mcp_result(call, json_pack("{s:[o],s:b}", "content", mcp_text_block(text), "isError", 1));
}

void
mcp_tool_fail(struct xb_mcp_call *call, const struct xb_err *err)
{
        _cleanup_free_ char *text = xb_tool_err_text(err);

        mcp_tool_error(call, text ? text : "Error: the operation failed.");
}

void
mcp_tool_done(struct xb_mcp_call *call, json_t *content, json_t *structured)
{
        json_t *r = json_pack("{s:o}", "content", content ? content : json_array());

        if (structured) {
                if (call->sandbox && json_is_object(structured) && !json_object_get(structured, "sandbox_id"))
                        json_object_set_new(structured, "sandbox_id", json_string(call->sandbox));
                json_object_set_new(r, "structuredContent", structured);
        }
        if (call->modern && call->sandbox) {
                /* Stateless clients keep the handle themselves. */
                char t[96];

                snprintf(t, sizeof(t), "[sandbox_id: %s]", call->sandbox);
                json_array_append_new(json_object_get(r, "content"), mcp_text_block(t));
        }
        mcp_result(call, r);
}

/* ---- the default sandbox ---- */

void
mcp_forget_sandbox(struct xb_mcp_client *c, const char *id)
{
        if (c->sandbox && !strcmp(c->sandbox, id)) {
                free(c->sandbox);
                c->sandbox = NULL;
        }
        for (struct code_session **p = &c->code; *p;) {
                struct code_session *s = *p;

                if (!strcmp(s->sandbox, id)) {
                        *p = s->next;
                        free(s->sandbox);
                        free(s->language);
                        free(s->sid);
                        free(s);
                        c->ncode--;
                } else
                        p = &s->next;
        }
}

/* The context's sandbox_create finished: id is the new default, or NULL
 * after err; the calls waiting for it go on. */
static void
sandbox_ready(struct xb_mcp_client *c, const char *id, const struct xb_err *err)
{
        struct xb_mcp_call *w = c->waiters, *next;
        struct xb_err oom = { .ecode = XB_E_NOMEM, .msg = "out of memory" };

        c->creating = false;
        c->waiters = NULL;
        if (id) {
                free(c->sandbox);
                c->sandbox = strdup(id);
                if (c->modern)
                        xb_info("mcp: sandbox %s is the default of tenant %d's stateless requests", id, c->tenant);
                else
                        xb_info("mcp: sandbox %s is the default of session %.8s…", id, c->id);
        }
        for (; w; w = next) {
                next = w->wait_next;
                w->wait_next = NULL;
                if (w->answered || w->abandoned)
                        continue;
                if (c->sandbox) {
                        free(w->sandbox);
                        w->sandbox = strdup(c->sandbox);
                        w->on_default = true;
                        mcp_log(w, LOG_INFO, "created sandbox %s as your default", c->sandbox);
                        w->wait_cont(w);
                } else
                        mcp_tool_fail(w, err ? err : &oom);
        }
}

static void
sandbox_made(struct xb_mcp_client *c, json_t *result)
{
        const char *id = json_string_value(json_object_get(result, "id"));
        struct xb_err err = { .ecode = XB_E_INTERNAL, .msg = "the new sandbox has no id" };

        sandbox_ready(c, id, id ? NULL : &err);
        json_decref(result);
}

static void
sandbox_failed(struct xb_mcp_client *c, const struct xb_err *err)
{
        sandbox_ready(c, NULL, err);
}

void
mcp_need_sandbox(struct xb_mcp_call *call, mcp_cont cont)
{
        struct xb_mcp_client *c = call->c;
        json_t *args;
        char ctx[9];

        if (c->sandbox) {
                free(call->sandbox);
                call->sandbox = strdup(c->sandbox);
                call->on_default = true;
                cont(call);
                return;
        }
        call->wait_cont = cont;
        call->wait_next = c->waiters;
        c->waiters = call;
        if (c->creating)
                return;
        c->creating = true;
        /* The metadata names the context by the start of its id. */
        snprintf(ctx, sizeof(ctx), "%.8s", c->id);
        args = json_pack("{s:i,s:{s:s,s:s}}", "timeout_s", MCP_SANDBOX_TTL_S, "metadata", "created_by", "mcp",
                         "mcp_context", c->modern ? "stateless" : ctx);
        mcp_op_client(c, "sandbox_create", args ? args : json_object(), sandbox_made, sandbox_failed);
        json_decref(args);
}

/* The call's sandbox from its arguments, or the default. */
static void
with_sandbox(struct xb_mcp_call *call, mcp_cont cont)
{
        const char *id = json_string_value(json_object_get(call->args, "sandbox_id"));

        if (id) {
                free(call->sandbox);
                call->sandbox = strdup(id);
                cont(call);
                return;
        }
        mcp_need_sandbox(call, cont);
}

/* A default sandbox that expired under the call: make a new one, once. */
bool
mcp_retry_expired(struct xb_mcp_call *call, const struct xb_err *err, mcp_cont cont)
{
        if (err->ecode != XB_E_SANDBOX_NOT_FOUND || !call->on_default || call->retried)
                return false;
        call->retried = true;
        mcp_log(call, LOG_WARNING, "your default sandbox %s had expired; using a fresh one", call->sandbox);
        mcp_forget_sandbox(call->c, call->sandbox);
        mcp_need_sandbox(call, cont);
        return true;
}

/* ---- progress ---- */

static void
heartbeat(struct xb_timer *t)
{
        struct xb_mcp_call *call = t->data;
        double s = (double)(xb_now_ms() - call->start_ms) / 1000.0;
        char msg[80];

        if (s > call->progress) {
                call->progress = s;
                snprintf(msg, sizeof(msg), "still running after %.0f s", s);
                mcp_progress(call, s, -1, msg);
        }
        xb_timer_start(call->m->o.loop, &call->timer, HEARTBEAT_MS, heartbeat, call);
}

/* The last non-empty line of some output, shortened, for a progress message. */
static void
last_line(const char *s, size_t n, char *out, size_t cap)
{
        size_t end = n, start;

        while (end && (s[end - 1] == '\n' || s[end - 1] == '\r'))
                end--;
        start = end;
        while (start && s[start - 1] != '\n')
                start--;
        if (end - start >= cap)
                start = end - (cap - 1);
        memcpy(out, s + start, end - start);
        out[end - start] = '\0';
}

/* Output as progress, at most every PROGRESS_GAP_MS. */
static void
output_progress(struct xb_mcp_call *call, const char *s, size_t n)
{
        uint64_t now = xb_now_ms();
        double t = (double)(now - call->start_ms) / 1000.0;
        char line[128], msg[200];

        call->bytes += n;
        if (now - call->last_progress_ms < PROGRESS_GAP_MS || t <= call->progress)
                return;
        call->last_progress_ms = now;
        call->progress = t;
        last_line(s, n, line, sizeof(line));
        snprintf(msg, sizeof(msg), "%.1f s, %llu bytes of output%s%s", t, (unsigned long long)call->bytes,
                 line[0] ? ": " : "", line);
        mcp_progress(call, t, -1, msg);
}

/* Events of a streamed run_command: output becomes progress. */
static void
exec_event(struct xb_mcp_call *call, const char *name, json_t *data)
{
        json_t *d = json_object_get(data, "data");

        if (!strcmp(name, "stdout") || !strcmp(name, "stderr"))
                output_progress(call, json_string_value(d) ?: "", json_string_length(d));
}

/* Events of a run_code cell with a progressToken: outputs become progress
 * and are kept in call->acc (the result then leaves them out), merged as
 * the engine merges them. */
static void
code_event(struct xb_mcp_call *call, const char *name, json_t *data)
{
        size_t n = json_array_size(call->acc);
        json_t *last = n ? json_array_get(call->acc, n - 1) : NULL, *text = json_object_get(data, "text");

        (void)name;
        if (!json_is_object(data) || !call->acc)
                return;
        if (last && json_is_string(text) && !strcmp(json_string_value(json_object_get(data, "type")) ?: "", "stream") &&
            json_equal(json_object_get(last, "type"), json_object_get(data, "type")) &&
            json_equal(json_object_get(last, "name"), json_object_get(data, "name"))) {
                struct xb_buf b = { .max = 64u << 20 };

                xb_buf_puts(&b, json_string_value(json_object_get(last, "text")) ?: "");
                xb_buf_puts(&b, json_string_value(text));
                json_object_set_new(last, "text", json_stringn(b.data ? b.data : "", b.len));
                xb_buf_free(&b);
        } else {
                json_array_append_new(call->acc, json_deep_copy(data));
        }
        output_progress(call, json_string_value(text) ?: "", json_string_length(text));
}

/* ---- rendering: ops/tool_result.c ---- */


/* ---- tools with one operation ---- */

static void generic_go(struct xb_mcp_call *call);

static void
generic_done(struct xb_mcp_call *call, json_t *o)
{
        const struct xb_tool *t = call->tool;
        _cleanup_free_ char *text = NULL;

        xb_timer_stop(&call->timer);
        if (!strcmp(t->name, "sandbox_delete")) {
                json_decref(o);
                o = json_pack("{s:s,s:b}", "id", call->sandbox ? call->sandbox : "", "deleted", 1);
                if (call->sandbox) {
                        mcp_forget_sandbox(call->c, call->sandbox);
                        free(call->sandbox);
                        call->sandbox = NULL;   /* gone: not worth naming in the result */
                }
        }
        if (!json_is_object(o)) {
                json_decref(o);
                mcp_tool_error(call, "Error: the server's reply could not be read. Hint: retry.");
                return;
        }
        xb_tool_annotate(t, o);
        if (!strcmp(t->name, "sandbox_create"))
                mcp_log(call, LOG_INFO, "created sandbox %s", json_string_value(json_object_get(o, "id")) ?: "");
        if (!strcmp(t->name, "write_file"))
                mcp_resource_changed(call, json_string_value(json_object_get(o, "path")));
        text = xb_tool_text(t, o);
        mcp_tool_done(call, json_pack("[o]", mcp_text_block(text)), o);
}

static void
generic_fail(struct xb_mcp_call *call, const struct xb_err *err)
{
        xb_timer_stop(&call->timer);
        if (!mcp_retry_expired(call, err, generic_go))
                mcp_tool_fail(call, err);
}

static void
generic_go(struct xb_mcp_call *call)
{
        struct xb_tool_defaults d = { .sandbox = call->sandbox, .session = call->sid };
        struct xb_err err = { 0 };
        json_t *args = NULL;
        bool stream = call->progress_token && !strcmp(call->tool->name, "run_command");
        char msg[600];

        if (xb_catalog_op_args(call->tool, call->args, &d, &args, &err) < 0) {
                snprintf(msg, sizeof(msg), "Error: %s (invalid_arguments). Hint: fix the argument and call %s again.",
                         err.msg, call->tool->name);
                mcp_tool_error(call, msg);
                return;
        }
        if (call->progress_token) {
                call->last_progress_ms = 0;
                xb_timer_start(call->m->o.loop, &call->timer, HEARTBEAT_MS, heartbeat, call);
        }
        mcp_op(call, call->tool->op, args, generic_done, generic_fail, stream ? exec_event : NULL);
        json_decref(args);
}

/* get_guide: the guide this server serves, with its limits. */
static void
guide_go(struct xb_mcp_call *call)
{
        _cleanup_free_ char *g = mcp_guide(call->m);

        if (!g) {
                mcp_tool_error(call, "Error: out of memory. Hint: retry.");
                return;
        }
        mcp_tool_done(call, json_pack("[o]", mcp_text_block(g)), json_pack("{s:s}", "guide", g));
}

/* ---- run_code ---- */

static void code_go(struct xb_mcp_call *call);


static struct code_session *
code_find(struct xb_mcp_client *c, const char *sandbox, const char *lang)
{
        for (struct code_session *s = c->code; s; s = s->next)
                if (!strcmp(s->sandbox, sandbox) && !strcmp(s->language, lang))
                        return s;
        return NULL;
}

static void
code_forget(struct xb_mcp_client *c, const char *sandbox, const char *lang)
{
        for (struct code_session **p = &c->code; *p; p = &(*p)->next)
                if (!strcmp((*p)->sandbox, sandbox) && !strcmp((*p)->language, lang)) {
                        struct code_session *s = *p;

                        *p = s->next;
                        free(s->sandbox);
                        free(s->language);
                        free(s->sid);
                        free(s);
                        c->ncode--;
                        return;
                }
}

static void
code_done(struct xb_mcp_call *call, json_t *cell)
{
        const char *lang = json_string_value(json_object_get(call->args, "language"));

        xb_timer_stop(&call->timer);
        if (!json_is_object(cell)) {
                json_decref(cell);
                mcp_tool_error(call, "Error: the interpreter's reply could not be read. Hint: retry.");
                return;
        }
        if (call->acc && !json_object_get(cell, "outputs"))
                json_object_set(cell, "outputs", call->acc);   /* they came as events */
        if (!strcmp(json_string_value(json_object_get(cell, "status")) ?: "", "dead"))
                code_forget(call->c, call->sandbox, lang);   /* a fresh one next time */
        mcp_tool_done(call, xb_tool_cell_content(cell), cell);
}

static void
code_fail(struct xb_mcp_call *call, const struct xb_err *err)
{
        const char *lang = json_string_value(json_object_get(call->args, "language"));

        xb_timer_stop(&call->timer);
        switch (err->ecode) {
        case XB_E_SESSION_NOT_FOUND:
        case XB_E_SESSION_DELETED:
                /* The interpreter went away: start another, once. */
                code_forget(call->c, call->sandbox, lang);
                if (!call->retried) {
                        call->retried = true;
                        code_go(call);
                        return;
                }
                break;
        case XB_E_SESSION_DEAD:
        case XB_E_SESSION_DEAD_LOST:
                code_forget(call->c, call->sandbox, lang);   /* the hint says the next call gets a fresh one */
                break;
        default:
                if (mcp_retry_expired(call, err, code_go))
                        return;
                break;
        }
        mcp_tool_fail(call, err);
}

static void
code_run(struct xb_mcp_call *call)
{
        struct xb_tool_defaults d = { .sandbox = call->sandbox, .session = call->sid };
        struct xb_err err = { 0 };
        json_t *args = NULL;

        if (xb_catalog_op_args(call->tool, call->args, &d, &args, &err) < 0) {
                mcp_tool_fail(call, &err);
                return;
        }
        json_decref(call->acc);
        call->acc = NULL;
        if (call->progress_token) {
                call->acc = json_array();
                call->last_progress_ms = 0;
                xb_timer_start(call->m->o.loop, &call->timer, HEARTBEAT_MS, heartbeat, call);
        }
        mcp_op(call, call->tool->op, args, code_done, code_fail, call->acc ? code_event : NULL);
        json_decref(args);
}

static void
code_made(struct xb_mcp_call *call, json_t *j)
{
        struct xb_mcp_client *c = call->c;
        const char *lang = json_string_value(json_object_get(call->args, "language"));
        const char *sid = json_string_value(json_object_get(j, "id"));
        struct code_session *s;

        s = sid ? calloc(1, sizeof(*s)) : NULL;
        if (!s || !(s->sandbox = strdup(call->sandbox)) || !(s->language = strdup(lang)) || !(s->sid = strdup(sid))) {
                if (s) {
                        free(s->sandbox);
                        free(s->language);
                        free(s);
                }
                json_decref(j);
                mcp_tool_error(call, "Error: the interpreter could not be started. Hint: retry.");
                return;
        }
        json_decref(j);
        /* Remember it; forget the oldest past the limit (it keeps running
         * in its sandbox until that goes). */
        s->next = c->code;
        c->code = s;
        if (++c->ncode > MCP_CODE_SESSIONS_MAX) {
                struct code_session **p = &c->code;

                while ((*p)->next)
                        p = &(*p)->next;
                free((*p)->sandbox);
                free((*p)->language);
                free((*p)->sid);
                free(*p);
                *p = NULL;
                c->ncode--;
        }
        free(call->sid);
        call->sid = strdup(s->sid);
        code_run(call);
}

static void
code_make_fail(struct xb_mcp_call *call, const struct xb_err *err)
{
        if (!mcp_retry_expired(call, err, code_go))
                mcp_tool_fail(call, err);
}

static void
code_go(struct xb_mcp_call *call)
{
        const char *lang = json_string_value(json_object_get(call->args, "language"));
        struct code_session *s = code_find(call->c, call->sandbox, lang);
        json_t *args;

        if (s) {
                free(call->sid);
                call->sid = strdup(s->sid);
                code_run(call);
                return;
        }
        args = json_pack("{s:s,s:s}", "id", call->sandbox, "language", lang);
        mcp_op(call, "create_session", args, code_made, code_make_fail, NULL);
        json_decref(args);
}

/* ---- entry ---- */

void
mcp_tools_call(struct xb_mcp_call *call)
{
        const struct xb_tool *t = call->tool;
        struct xb_err err = { 0 };
        char msg[700];

        if (mcp_args_check(t->input, call->args, &err) < 0) {
                snprintf(msg, sizeof(msg), "Error: %s (invalid_arguments). Hint: see the tool's input schema and "
                         "call %s again.", err.msg, t->name);
                mcp_tool_error(call, msg);
                return;
        }
        if (!strcmp(t->name, "run_code"))
                with_sandbox(call, code_go);
        else if (!strcmp(t->name, "read_file"))
                with_sandbox(call, mcp_read_file);
        else if (!strcmp(t->name, "edit_file"))
                with_sandbox(call, mcp_edit_file);
        else if (!strcmp(t->name, "get_guide"))
                guide_go(call);
        else if (!t->op)
                mcp_tool_error(call, "Error: this tool is not available here.");
        else if (json_object_get(t->input, "properties") &&
                 json_object_get(json_object_get(t->input, "properties"), "sandbox_id") &&
                 strcmp(t->name, "sandbox_delete"))
                with_sandbox(call, generic_go);
        else {
                const char *id = json_string_value(json_object_get(call->args, "sandbox_id"));

                if (id)
                        call->sandbox = strdup(id);
                generic_go(call);
        }
}
