/* POST /v1/tools/{name}: one tool call from any LLM framework, answered
 * with what the model should see. The body is the call as the framework
 * hands it over: OpenAI Chat Completions ({"function": {"name",
 * "arguments": "<JSON>"}, "id"} or {"arguments": "<JSON>"}), the Responses
 * API ({"type": "function_call", "call_id", "arguments": "<JSON>"}),
 * Anthropic ({"type": "tool_use", "id", "input": {...}}), or MCP-shaped
 * ({"arguments": {...}} or the bare arguments object). Omitted and null
 * arguments are the same.
 *
 * The reply is 200 whenever the tool ran, failed or not: {"content"
 * (blocks), "text", "structured", "is_error", "error"} plus the messages
 * to append in each framework's shape (openai_message, responses_item,
 * anthropic_block). The words are MCP's (ops/tool_result.h). A tool
 * without sandbox_id uses the tenant's default sandbox, as the plugin
 * routes do; run_code keeps one interpreter per sandbox and language.
 * edit_file is MCP's (ops/tool_edit.c) over read_file, write_file and
 * list_files, with one undo history per tenant (records keyed by sandbox
 * and path, those of sandboxes gone dropped as it grows). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/loop.h"
#include "rest/rest.h"
#include "core/sessions.h"
#include "ops/jsonv.h"
#include "ops/ops.h"
#include "ops/tool_result.h"
#include "transport/http.h"

struct bridge {
        struct xb_req *req;         /* NULL once the client left */
        struct xb_call *call;       /* NULL once it ended */
        const struct xb_tool *tool;
        json_t *args;               /* the tool's arguments */
        char *call_id;
        char *sandbox;              /* the sandbox it runs in, or NULL */
        bool inside;                /* still in the handler, which frees */
        enum { EDIT_NONE, EDIT_READ, EDIT_WRITE, EDIT_LIST } edit;   /* edit_file's step */
        char *path;                 /* edit_file: the absolute path */
        struct xb_tool_edit ed;     /* its work between read and write */
};

static void
bridge_free(struct bridge *b)
{
        json_decref(b->args);
        free(b->call_id);
        free(b->sandbox);
        free(b->path);
        xb_tool_edit_clear(&b->ed);
        free(b);
}

/* ---- the reply ---- */

/* Text blocks joined, for the shapes that take a string. */
static char *
joined_text(json_t *content)
{
        struct xb_buf t = { .max = 128u << 20 };
        json_t *blk;
        size_t i;

        json_array_foreach(content, i, blk) {
                const char *s = json_string_value(json_object_get(blk, "text"));

                if (s)
                        xb_buf_printf(&t, "%s%s", t.len && t.data[t.len - 1] != '\n' ? "\n" : "", s);
        }
        return xb_buf_steal(&t) ?: strdup("");
}

/* Anthropic's tool_result content: its own image block. */
static json_t *
anthropic_content(json_t *content)
{
        json_t *out = json_array(), *blk;
        size_t i;

        json_array_foreach(content, i, blk) {
                const char *type = json_string_value(json_object_get(blk, "type")) ?: "";

                if (!strcmp(type, "image"))
                        json_array_append_new(out, json_pack("{s:s,s:{s:s,s:O,s:O}}", "type", "image", "source",
                                                             "type", "base64", "media_type",
                                                             json_object_get(blk, "mimeType"), "data",
                                                             json_object_get(blk, "data")));
                else
                        json_array_append_new(out, json_pack("{s:s,s:O}", "type", "text", "text",
                                                             json_object_get(blk, "text")));
        }
        return out;
}

/* Takes content, structured and error. */
static void
answer(struct bridge *b, json_t *content, json_t *structured, json_t *error)
{
        _cleanup_free_ char *text = joined_text(content);
        bool is_error = error != NULL;
        json_t *r;

        if (!b->req) {
                json_decref(content);
                json_decref(structured);
                json_decref(error);
                return;
        }
        if (structured && b->sandbox && json_is_object(structured) && !json_object_get(structured, "sandbox_id"))
                json_object_set_new(structured, "sandbox_id", json_string(b->sandbox));
        r = json_pack("{s:s,s:O,s:s,s:o,s:b,s:o}", "tool", b->tool->name, "content", content, "text", text ?: "",
                      "structured", structured ?: json_null(), "is_error", is_error, "error", error ?: json_null());
        json_object_set_new(r, "openai_message", json_pack("{s:s,s:s,s:s}", "role", "tool", "tool_call_id",
                                                           b->call_id, "content", text ?: ""));
        json_object_set_new(r, "responses_item", json_pack("{s:s,s:s,s:s}", "type", "function_call_output",
                                                           "call_id", b->call_id, "output", text ?: ""));
        json_object_set_new(r, "anthropic_block", json_pack("{s:s,s:s,s:o,s:b}", "type", "tool_result",
                                                            "tool_use_id", b->call_id, "content",
                                                            anthropic_content(content), "is_error", is_error));
        json_decref(content);
        xb_reply_json(b->req, 200, r);
        b->req = NULL;
}

static void
answer_text_error(struct bridge *b, const char *code, const char *msg, const char *hint)
{
        char *text = NULL;

        if (asprintf(&text, "Error: %s (%s). Hint: %s", msg, code, hint) < 0)
                text = NULL;
        answer(b, json_pack("[o]", xb_tool_text_block(text ?: msg)), NULL,
               json_pack("{s:s,s:s,s:s}", "code", code, "message", msg, "hint", hint));
        free(text);
}

static void
answer_fail(struct bridge *b, const struct xb_err *err)
{
        _cleanup_free_ char *text = xb_tool_err_text(err);

        answer(b, json_pack("[o]", xb_tool_text_block(text ?: "Error: the operation failed.")), NULL,
               json_pack("{s:s,s:s,s:s}", "code", xb_ecode_name(err->ecode), "message", err->msg, "hint",
                         xb_tool_hint(err)));
}

/* ---- running the operation ---- */

static void
end(struct bridge *b)
{
        b->call = NULL;
        if (!b->inside)
                bridge_free(b);
}

static void edit_step(struct bridge *b, json_t *o);
static bool edit_failed(struct bridge *b, const struct xb_err *err);

static void
on_done(void *ctx, json_t *o)
{
        struct bridge *b = ctx;
        const struct xb_tool *t = b->tool;
        json_t *content = NULL, *structured = NULL;
        _cleanup_free_ char *text = NULL;

        if (b->edit) {
                edit_step(b, o);
                return;
        }
        if (!strcmp(t->name, "read_file")) {
                if (xb_tool_read_view(b->args, o, &content, &structured, &text) < 0)
                        answer_text_error(b, "invalid_request", text ? text : "out of memory", "see the message");
                else
                        answer(b, content, structured, NULL);
                json_decref(o);
                end(b);
                return;
        }
        if (!strcmp(t->name, "sandbox_delete")) {
                json_decref(o);
                o = json_pack("{s:s,s:b}", "id", b->sandbox ?: "", "deleted", 1);
                free(b->sandbox);
                b->sandbox = NULL;   /* gone: not worth naming in the result */
        }
        if (!json_is_object(o)) {
                json_decref(o);
                o = json_object();
        }
        if (!strcmp(t->name, "run_code")) {
                answer(b, xb_tool_cell_content(o), o, NULL);
        } else {
                xb_tool_annotate(t, o);
                text = xb_tool_text(t, o);
                answer(b, json_pack("[o]", xb_tool_text_block(text)), o, NULL);
        }
        end(b);
}

static void
on_fail(void *ctx, const struct xb_err *err)
{
        struct bridge *b = ctx;

        if (b->edit && edit_failed(b, err))
                return;
        answer_fail(b, err);
        end(b);
}

static const struct xb_sink_ops bridge_sink = { NULL, on_done, on_fail };

static void
on_gone(struct xb_req *r, void *owner)
{
        struct bridge *b = owner;

        (void)r;
        b->req = NULL;
        if (b->call)
                xb_call_cancel(b->call);
        b->call = NULL;
        if (!b->inside)
                bridge_free(b);
}

/* Run op with args (borrowed); the bridge is answered and freed later. */
static void
run_op(struct bridge *b, const char *name, json_t *args)
{
        const struct xb_op *op = xb_op_find(name);
        struct xb_req *req = b->req;

        if (!op || !(b->call = xb_call_new(&bridge_sink, b, 0))) {
                answer_text_error(b, "internal", op ? "out of memory" : "the tool has no operation", "retry");
                bridge_free(b);
                return;
        }
        b->inside = true;
        xb_op_run(op, xb_rest_of(req)->core, xb_req_tenant(req), args, b->call);
        b->inside = false;
        if (!b->call) {
                bridge_free(b);   /* answered already */
                return;
        }
        xb_req_suspend(req, on_gone, b);
}

/* ---- the call's shape ---- */

/* The arguments of a call in any framework's shape, and its id. A string
 * of arguments is parsed; errors are for the model (200, is_error). */
static int
unwrap(json_t *body, json_t **ret_args, const char **ret_id, const char **ret_name, const char **ret_err)
{
        const char *type = json_string_value(json_object_get(body, "type"));
        json_t *fn = json_object_get(body, "function"), *a;
        json_error_t je;

        *ret_id = NULL;
        *ret_name = NULL;
        if (json_is_object(fn)) {   /* Chat Completions */
                *ret_id = json_string_value(json_object_get(body, "id"));
                *ret_name = json_string_value(json_object_get(fn, "name"));
                a = json_object_get(fn, "arguments");
        } else if (type && !strcmp(type, "function_call")) {   /* Responses */
                *ret_id = json_string_value(json_object_get(body, "call_id"));
                *ret_name = json_string_value(json_object_get(body, "name"));
                a = json_object_get(body, "arguments");
        } else if (type && !strcmp(type, "tool_use")) {   /* Anthropic */
                *ret_id = json_string_value(json_object_get(body, "id"));
                *ret_name = json_string_value(json_object_get(body, "name"));
                a = json_object_get(body, "input");
        } else if (json_object_get(body, "arguments") && json_object_size(body) == 1) {
                a = json_object_get(body, "arguments");   /* MCP's params, or OpenAI's arguments alone */
        } else {
                a = body;   /* the bare arguments */
        }
        if (!a || json_is_null(a)) {
                *ret_args = json_object();
                return 0;
        }
        if (json_is_string(a)) {
                const char *s = json_string_value(a);

                s += strspn(s, " \t\r\n");
                *ret_args = *s ? json_loads(s, JSON_REJECT_DUPLICATES, &je) : json_object();
                if (!*ret_args) {
                        *ret_err = "the arguments string is not valid JSON";
                        return -1;
                }
        } else
                *ret_args = json_incref(a);
        if (!json_is_object(*ret_args)) {
                json_decref(*ret_args);
                *ret_args = NULL;
                *ret_err = "the arguments must be a JSON object";
                return -1;
        }
        return 0;
}

/* ---- the tools ---- */

static bool
takes_sandbox(const struct xb_tool *t)
{
        return json_object_get(json_object_get(t->input, "properties"), "sandbox_id") != NULL;
}

/* The call's sandbox: its sandbox_id, else the tenant's default (made on
 * first use). False when it answered instead. */
static bool
pick_sandbox(struct bridge *b, struct xb_sbx **ret)
{
        struct xb_core *s = xb_rest_of(b->req)->core;
        const char *id = json_string_value(json_object_get(b->args, "sandbox_id"));
        struct xb_sbx *x;

        *ret = NULL;
        if (id) {
                x = xb_sbx_find(s, id, xb_req_tenant(b->req));
        } else {
                if (!(x = xb_default_sandbox(b->req)))
                        return false;   /* it replied */
                json_object_set_new(b->args, "sandbox_id", json_string(x->id));
                id = x->id;
        }
        b->sandbox = strdup(id);
        *ret = x;
        return true;
}

/* run_code: the sandbox's interpreter for the language, started when there is none. */
static const char *
code_session(struct bridge *b, struct xb_sbx *x, struct xb_err *err)
{
        const char *lang = json_string_value(json_object_get(b->args, "language"));
        struct xb_session *ss;

        json_t *langs = json_object_get(json_object_get(json_object_get(b->tool->input, "properties"), "language"),
                                        "enum"), *v;
        bool known = false;
        size_t i;

        json_array_foreach(langs, i, v)
                known = known || (lang && !strcmp(lang, json_string_value(v) ?: ""));
        if (!known) {
                /* The tool's enum, as MCP checks it: a kernel name is for REST sessions. */
                xb_err_msg(err, EINVAL, "`language` must be python, bash or javascript");
                err->ecode = XB_E_INVALID;
                return NULL;
        }
        ss = xb_session_find_live(x, lang);
        if (!ss)
                ss = xb_session_claim_warm(x, lang);
        if (!ss)
                ss = xb_session_start(x, lang, false, err);
        return ss ? xb_session_id(ss) : NULL;
}

/* ---- edit_file ---- */

/* The next operation of a call already running (from its sink). */
static void
chain_op(struct bridge *b, const char *name, json_t *args)
{
        const struct xb_op *op = xb_op_find(name);

        if (!args || !op || !(b->call = xb_call_new(&bridge_sink, b, 0))) {
                answer_text_error(b, "internal", "out of memory", "retry");
                end(b);
                return;
        }
        xb_op_run(op, xb_rest_of(b->req)->core, xb_req_tenant(b->req), args, b->call);
}

/* The tenant's history, made on first use; records of sandboxes gone are
 * dropped before a new one is kept. */
static bool
sandbox_alive(const char *id, void *ctx)
{
        struct xb_req *r = ctx;

        return xb_sbx_find(xb_rest_of(r)->core, id, xb_req_tenant(r)) != NULL;
}

static struct xb_edit_hist *
edit_hist(struct xb_req *r)
{
        struct xb_rest *rs = xb_rest_of(r);
        size_t n = rs->ntenants ? rs->ntenants : 1, t = (size_t)xb_req_tenant(r);

        if (!rs->edits && !(rs->edits = calloc(n, sizeof(*rs->edits))))
                return NULL;
        return t < n ? &rs->edits[t] : NULL;
}

/* An error text of ops/tool_edit.c: "Error: MESSAGE (code). Hint: HINT". */
static void
answer_edit_error(struct bridge *b, const char *text)
{
        const char *msg = text ? text : "Error: out of memory (out_of_memory). Hint: retry.";
        const char *hint = strstr(msg, " Hint: "), *code, *end_msg = hint ? hint : msg + strlen(msg), *p;
        char cbuf[40] = "invalid_request";

        if (!strncmp(msg, "Error: ", 7))
                msg += 7;
        /* The code is the last "(word)" before the hint. */
        for (p = end_msg; p > msg && p[-1] != '('; p--)
                ;
        code = p > msg ? p : NULL;
        if (code && (p = memchr(code, ')', (size_t)(end_msg - code))) && (size_t)(p - code) < sizeof(cbuf)) {
                memcpy(cbuf, code, (size_t)(p - code));
                cbuf[p - code] = '\0';
                end_msg = code - 1;
                while (end_msg > msg && end_msg[-1] == ' ')
                        end_msg--;
        }
        answer(b, json_pack("[o]", xb_tool_text_block(text ? text : msg)), NULL,
               json_pack("{s:s,s:s%,s:s}", "code", cbuf, "message", msg, (size_t)(end_msg - msg), "hint",
                         hint ? hint + 7 : "see the message"));
}

static void
edit_answer(struct bridge *b, const char *text)
{
        answer(b, json_pack("[o]", xb_tool_text_block(text ? text : "")),
               json_pack("{s:s,s:s}", "path", b->path, "output", text ? text : ""), NULL);
}

static void
edit_step(struct bridge *b, json_t *o)
{
        struct xb_edit_hist *h = edit_hist(b->req);
        _cleanup_free_ char *owned = NULL, *text = NULL;
        json_t *content, *args;
        const char *s;
        size_t n = 0;
        int k;

        if (b->edit == EDIT_LIST || b->edit == EDIT_WRITE) {
                text = b->edit == EDIT_LIST ? xb_tool_edit_listing(b->path, o)
                                            : h ? xb_tool_edit_done(b->args, b->path, &b->ed, h, b->sandbox) : NULL;
                json_decref(o);
                edit_answer(b, text);
                end(b);
                return;
        }
        if (!h || !(s = xb_tool_file_data(o, &owned, &n))) {
                answer_edit_error(b, h ? "Error: the file's content could not be read. Hint: retry." : NULL);
                json_decref(o);
                end(b);
                return;
        }
        k = xb_tool_edit_text(b->args, b->path, s, n, xb_tool_file_cut(o, n), h, b->sandbox, &b->ed);
        json_decref(o);
        if (k <= 0) {
                if (k == 0)
                        edit_answer(b, b->ed.text);
                else
                        answer_edit_error(b, b->ed.text);
                end(b);
                return;
        }
        if (!(content = xb_tool_edit_content(&b->ed))) {
                answer_edit_error(b, b->ed.text);
                end(b);
                return;
        }
        xb_edit_hist_prune(h, sandbox_alive, b->req);
        b->edit = EDIT_WRITE;
        args = json_pack("{s:s,s:s,s:o}", "id", b->sandbox, "path", b->path, "content", content);
        chain_op(b, "write_file", args);
        json_decref(args);
}

/* view of a directory lists it; true when it went on. */
static bool
edit_failed(struct bridge *b, const struct xb_err *err)
{
        json_t *args;

        if (b->edit != EDIT_READ || err->ecode != XB_E_IS_A_DIRECTORY ||
            strcmp(json_string_value(json_object_get(b->args, "command")), "view"))
                return false;
        b->edit = EDIT_LIST;
        args = json_pack("{s:s,s:s,s:i}", "id", b->sandbox, "path", b->path, "depth", 2);
        chain_op(b, "list_files", args);
        json_decref(args);
        return true;
}

static void
edit_go(struct bridge *b)
{
        struct xb_err err = { 0 };
        const char *why;
        json_t *args;

        if (xb_tool_args_check(b->tool->input, b->args, &err) < 0) {
                answer_text_error(b, "invalid_arguments", err.msg, "see the tool's input schema and call edit_file "
                                  "again");
                bridge_free(b);
                return;
        }
        if ((why = xb_tool_edit_why(b->args))) {
                answer_text_error(b, "invalid_arguments", why, "fix the argument and call edit_file again");
                bridge_free(b);
                return;
        }
        if (!pick_sandbox(b, &(struct xb_sbx *){ NULL })) {
                bridge_free(b);
                return;
        }
        if (!b->sandbox || !(b->path = xb_tool_abs_path(json_string_value(json_object_get(b->args, "path"))))) {
                answer_text_error(b, "internal", "out of memory", "retry");
                bridge_free(b);
                return;
        }
        b->edit = EDIT_READ;
        args = json_pack("{s:s,s:s,s:I}", "id", b->sandbox, "path", b->path, "max_bytes",
                         (json_int_t)XB_TOOL_FILE_MAX + 1);
        run_op(b, "read_file", args);
        json_decref(args);
}

static void
tool_call(struct xb_req *r)
{
        const struct xb_tool *t = xb_catalog_find(xb_req_param(r, 0));
        struct xb_core *s = xb_rest_of(r)->core;
        _cleanup_(xb_json_decrefp) json_t *body = NULL, *opargs = NULL;
        const char *id = NULL, *name = NULL, *why = NULL, *sid = NULL;
        struct xb_tool_defaults d = { 0 };
        struct xb_err err = { 0 };
        struct xb_sbx *x = NULL;
        struct bridge *b;
        char idbuf[40];
        size_t len = 0;
        const char *raw = xb_req_body(r, &len);
        json_error_t je;

        if (!t) {
                xb_reply_error(r, 404, "tool_not_found", "GET /v1/tools lists the tools", "no tool `%.64s`",
                               xb_req_param(r, 0));
                return;
        }
        body = len ? json_loadb(raw, len, JSON_REJECT_DUPLICATES, &je) : json_object();
        if (!json_is_object(body)) {
                xb_reply_error(r, 400, "invalid_request", "send the tool call as a JSON object",
                               "the body is not a JSON object");
                return;
        }
        if (!(b = calloc(1, sizeof(*b)))) {
                xb_reply_error(r, 503, "out_of_memory", "retry", "out of memory");
                return;
        }
        b->req = r;
        b->tool = t;
        if (unwrap(body, &b->args, &id, &name, &why) < 0) {
                snprintf(idbuf, sizeof(idbuf), "call_%llx", (unsigned long long)xb_now_ms());
                b->call_id = strdup(id ?: idbuf);
                answer_text_error(b, "invalid_arguments", why, "send the arguments as one JSON object");
                bridge_free(b);
                return;
        }
        snprintf(idbuf, sizeof(idbuf), "call_%llx", (unsigned long long)xb_now_ms());
        b->call_id = strdup(id ?: idbuf);
        if (name && strcmp(name, t->name)) {
                xb_reply_error(r, 400, "invalid_request", "post the call to /v1/tools/ followed by its own name",
                               "the call names tool `%.64s`, not `%s`", name, t->name);
                bridge_free(b);
                return;
        }
        if (!strcmp(t->name, "get_guide")) {
                _cleanup_free_ char *g = xb_guide_render(&s->o.defaults);

                answer(b, json_pack("[o]", xb_tool_text_block(g ?: "")), json_pack("{s:s}", "guide", g ?: ""), NULL);
                bridge_free(b);
                return;
        }
        if (!strcmp(t->name, "edit_file")) {
                edit_go(b);
                return;
        }
        if (!t->op) {
                answer_text_error(b, "unsupported", "this tool is served over MCP only (/mcp)",
                                  "use write_file to replace a file, or run_command to change it");
                bridge_free(b);
                return;
        }
        if (takes_sandbox(t) && strcmp(t->name, "sandbox_delete") && !pick_sandbox(b, &x)) {
                bridge_free(b);
                return;
        }
        if (!strcmp(t->name, "sandbox_delete") && json_string_value(json_object_get(b->args, "sandbox_id")))
                b->sandbox = strdup(json_string_value(json_object_get(b->args, "sandbox_id")));
        if (!strcmp(t->name, "run_code")) {
                if (!x) {
                        err.ecode = XB_E_SANDBOX_NOT_FOUND;
                        snprintf(err.msg, sizeof(err.msg), "no sandbox `%.64s`", b->sandbox ?: "");
                        answer_fail(b, &err);
                        bridge_free(b);
                        return;
                }
                /* Using it: an auto-paused one resumes, a paused one fails. */
                if (x->paused && !(x = xb_sbx_use(s, b->sandbox, xb_req_tenant(r), &err))) {
                        answer_fail(b, &err);
                        bridge_free(b);
                        return;
                }
                if (!(sid = code_session(b, x, &err))) {
                        answer_fail(b, &err);
                        bridge_free(b);
                        return;
                }
        }
        d.sandbox = b->sandbox;
        d.session = sid;
        if (xb_catalog_op_args(t, b->args, &d, &opargs, &err) < 0) {
                err.ecode = XB_E_INVALID;
                if (!err.hint)
                        err.hint = "fix the argument and call the tool again";
                answer_fail(b, &err);
                bridge_free(b);
                return;
        }
        if (!strcmp(t->name, "read_file")) {
                json_object_set_new(opargs, "max_bytes", json_integer((json_int_t)XB_TOOL_FILE_MAX + 1));
                json_object_del(opargs, "start_line");
                json_object_del(opargs, "end_line");
        }
        run_op(b, t->op, opargs);
}

const struct xb_route xb_api_routes_tools[] = {
        { "POST", "/v1/tools/{}", tool_call, 0, NULL },
};
const size_t xb_api_nroutes_tools = sizeof(xb_api_routes_tools) / sizeof(xb_api_routes_tools[0]);
