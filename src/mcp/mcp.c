/* The MCP core: JSON-RPC 2.0 messages and their dispatch, client
 * contexts, and calls. The methods live in mcp_methods.c, tools in
 * mcp_tools.c, files and resources in mcp_files.c and mcp_resources.c,
 * the operations calls run in mcp_op.c; see mcp.h for the theory of
 * operation.
 *
 * A call is one request in flight. It is answered exactly once through
 * its front's callbacks (or abandoned without an answer); the operation
 * it has in flight is cancelled when it ends first. Calls are freed after
 * the current batch of loop events, never inside a callback that may
 * still use them. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "base/version.h"
#include "sandbox/sandbox.h"
#include "mcp/mcp_int.h"

static const char *const legacy_versions[] = { "2025-11-25", "2025-06-18", "2025-03-26" };
static const char *const level_names[] = { "debug", "info", "notice", "warning", "error", "critical", "alert",
                                           "emergency" };

bool
xb_mcp_legacy_version(const char *v)
{
        for (size_t i = 0; v && i < ARRAY_SIZE(legacy_versions); i++)
                if (!strcmp(v, legacy_versions[i]))
                        return true;
        return false;
}

const char *
mcp_log_level_name(enum mcp_log_level l)
{
        return l < LOG_NONE ? level_names[l] : "none";
}

enum mcp_log_level
mcp_log_level_parse(const char *s)
{
        for (size_t i = 0; s && i < ARRAY_SIZE(level_names); i++)
                if (!strcmp(s, level_names[i]))
                        return (enum mcp_log_level)i;
        return LOG_NONE;
}

json_t *
mcp_server_info(void)
{
        return json_pack("{s:s,s:s,s:s}", "name", "execbox", "title", "execbox sandboxes", "version", XB_VERSION);
}

char *
mcp_guide(struct xb_mcp *m)
{
        return xb_guide_render(m->o.defaults);
}

json_t *
xb_mcp_error(json_t *id, int code, const char *msg, json_t *data)
{
        json_t *e = json_pack("{s:i,s:s}", "code", code, "message", msg);

        if (data)
                json_object_set_new(e, "data", data);
        return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error", e);
}

/* ---- client contexts ---- */

static void client_free(struct xb_mcp_client *c);

static void
on_idle(struct xb_timer *t)
{
        struct xb_mcp_client *c = t->data;
        uint64_t now = xb_now_ms(), due = c->last_ms + c->idle_ms;

        if (c->calls || now < due) {
                xb_timer_start(c->m->o.loop, &c->idle, c->calls ? c->idle_ms : due - now, on_idle, c);
                return;
        }
        xb_info("mcp: session %.8s… ended after %llu s without a request", c->id,
                (unsigned long long)(c->idle_ms / 1000));
        if (c->ops && c->ops->closed)
                c->ops->closed(c->ctx);
        xb_mcp_client_close(c);
}

/* Idle long enough: freeze the default sandbox (it costs no CPU until
 * it expires); the next operation on it resumes it. */
static void
on_pause(struct xb_timer *t)
{
        struct xb_mcp_client *c = t->data;
        json_t *args;

        if (c->calls) {
                xb_timer_start(c->m->o.loop, &c->pause, c->m->o.pause_ms, on_pause, c);
                return;
        }
        if (!c->sandbox || c->m->closing)
                return;
        args = json_pack("{s:s,s:b}", "id", c->sandbox, "auto_resume", 1);
        mcp_op_detached(c->m, c->tenant, "sandbox_pause", args);
        json_decref(args);
}

static void
client_touch(struct xb_mcp_client *c)
{
        c->last_ms = xb_now_ms();
        if (c->m->o.pause_ms)
                xb_timer_start(c->m->o.loop, &c->pause, c->m->o.pause_ms, on_pause, c);
}

static struct xb_mcp_client *
client_alloc(struct xb_mcp *m, int tenant)
{
        struct xb_mcp_client *c = calloc(1, sizeof(*c));

        if (!c)
                return NULL;
        if (xb_random_id(c->id, sizeof(c->id)) < 0) {
                free(c);
                return NULL;
        }
        c->m = m;
        c->tenant = tenant;
        c->log_level = LOG_NONE;
        c->last_ms = xb_now_ms();
        return c;
}

struct xb_mcp_client *
xb_mcp_client_new(struct xb_mcp *m, int tenant, uint64_t idle_ms, const struct xb_mcp_client_ops *ops, void *ctx)
{
        struct xb_mcp_client *c;

        if (m->nclients >= MCP_CLIENTS_MAX) {
                struct xb_mcp_client *lru = NULL;

                for (struct xb_mcp_client *x = m->clients; x; x = x->next)
                        if (!x->calls && x->idle_ms && (!lru || x->last_ms < lru->last_ms))
                                lru = x;
                if (!lru)
                        return NULL;
                xb_info("mcp: ending idle session %.8s… to make room", lru->id);
                if (lru->ops && lru->ops->closed)
                        lru->ops->closed(lru->ctx);
                xb_mcp_client_close(lru);
        }
        c = client_alloc(m, tenant);
        if (!c)
                return NULL;
        c->idle_ms = idle_ms;
        c->ops = ops;
        c->ctx = ctx;
        c->next = m->clients;
        m->clients = c;
        m->nclients++;
        if (idle_ms)
                xb_timer_start(m->o.loop, &c->idle, idle_ms, on_idle, c);
        return c;
}

struct xb_mcp_client *
xb_mcp_tenant_client(struct xb_mcp *m, int tenant)
{
        if (tenant < 0 || (size_t)tenant >= m->o.ntenants)
                return NULL;
        if (!m->tenants[tenant]) {
                m->tenants[tenant] = client_alloc(m, tenant);
                if (m->tenants[tenant])
                        m->tenants[tenant]->modern = true;
        }
        return m->tenants[tenant];
}

const char *
xb_mcp_client_id(const struct xb_mcp_client *c)
{
        return c->id;
}

int
xb_mcp_client_tenant(const struct xb_mcp_client *c)
{
        return c->tenant;
}

const char *
xb_mcp_client_version(const struct xb_mcp_client *c)
{
        return c->version[0] ? c->version : NULL;
}

void
xb_mcp_client_set_data(struct xb_mcp_client *c, void *data)
{
        c->front = data;
}

void *
xb_mcp_client_data(const struct xb_mcp_client *c)
{
        return c->front;
}

struct xb_mcp_client *
xb_mcp_client_find(struct xb_mcp *m, const char *id, int tenant)
{
        for (struct xb_mcp_client *c = m->clients; c && id; c = c->next)
                if (c->tenant == tenant && c->idle_ms && strcmp(c->id, id) == 0)
                        return c;
        return NULL;
}

static void client_cancel_all(struct xb_mcp_client *c);

static void
client_free(struct xb_mcp_client *c)
{
        client_cancel_all(c);
        /* The default sandbox goes with the context; picked ones stay. */
        if (c->sandbox && !c->m->closing) {
                json_t *args = json_pack("{s:s}", "id", c->sandbox);

                mcp_op_detached(c->m, c->tenant, "sandbox_delete", args);
                json_decref(args);
        }
        xb_timer_stop(&c->idle);
        xb_timer_stop(&c->pause);
        for (struct code_session *s = c->code, *n; s; s = n) {
                n = s->next;
                free(s->sandbox);
                free(s->language);
                free(s->sid);
                free(s);
        }
        mcp_plugins_client_free(c);
        mcp_watch_free_all(c);
        json_decref(c->subs);
        json_decref(c->caps);
        free(c->sandbox);
        free(c);
}

void
xb_mcp_client_close(struct xb_mcp_client *c)
{
        struct xb_mcp *m;

        if (!c)
                return;
        m = c->m;
        for (struct xb_mcp_client **p = &m->clients; *p; p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        m->nclients--;
                        break;
                }
        client_free(c);
}

/* ---- calls ---- */

static void
call_free(void *data)
{
        struct xb_mcp_call *call = data;

        json_decref(call->id);
        json_decref(call->params);
        json_decref(call->progress_token);
        json_decref(call->client_caps);
        json_decref(call->args);
        json_decref(call->acc);
        free(call->sandbox);
        free(call->sid);
        xb_tool_edit_clear(&call->edit);
        free(call);
}

/* Unlink the call and cancel what it waits on; freed later. */
static void
call_end(struct xb_mcp_call *call)
{
        struct xb_mcp_client *c = call->c;

        xb_timer_stop(&call->timer);
        mcp_op_cancel(call->op);   /* its work stops; nothing more comes */
        for (struct xb_mcp_call **p = &c->waiters; *p; p = &(*p)->wait_next)
                if (*p == call) {
                        *p = call->wait_next;
                        break;
                }
        for (struct xb_mcp_call **p = &c->calls; *p; p = &(*p)->next)
                if (*p == call) {
                        *p = call->next;
                        break;
                }
        client_touch(c);
        if (!call->in_dispatch)
                xb_loop_defer(call->m->o.loop, &call->defer, call_free, call);
}

static void
respond(struct xb_mcp_call *call, json_t *msg, unsigned status)
{
        if (call->answered || call->abandoned) {
                json_decref(msg);
                return;
        }
        call->answered = true;
        call->out->respond(call->out_ctx, msg, status);
        json_decref(msg);
        call_end(call);
}

void
mcp_result(struct xb_mcp_call *call, json_t *result)
{
        if (!result) {
                mcp_fail(call, -32603, "out of memory", NULL, 200);
                return;
        }
        if (call->modern) {
                json_t *meta = json_object_get(result, "_meta");

                if (!json_object_get(result, "resultType"))
                        json_object_set_new(result, "resultType", json_string("complete"));
                if (!json_is_object(meta)) {
                        meta = json_object();
                        json_object_set_new(result, "_meta", meta);
                }
                json_object_set_new(meta, "io.modelcontextprotocol/serverInfo", mcp_server_info());
        }
        respond(call, json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", call->id, "result", result), 200);
}

void
mcp_fail(struct xb_mcp_call *call, int code, const char *msg, json_t *data, unsigned http_status)
{
        respond(call, xb_mcp_error(call->id, code, msg, data), http_status);
}

void
mcp_notify(struct xb_mcp_call *call, const char *method, json_t *params)
{
        json_t *msg;

        if (call->answered || call->abandoned || !call->out->notify) {
                json_decref(params);
                return;
        }
        msg = json_pack("{s:s,s:s,s:o}", "jsonrpc", "2.0", "method", method, "params", params);
        if (msg)
                call->out->notify(call->out_ctx, msg);
        json_decref(msg);
}

void
mcp_log(struct xb_mcp_call *call, enum mcp_log_level level, const char *fmt, ...)
{
        char text[1024];
        va_list ap;

        if (call->log_level == LOG_NONE || level < call->log_level)
                return;
        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        mcp_notify(call, "notifications/message",
                   json_pack("{s:s,s:s,s:s}", "level", level_names[level], "logger", "execbox", "data", text));
}

void
mcp_progress(struct xb_mcp_call *call, double progress, double total, const char *message)
{
        json_t *p;

        if (!call->progress_token)
                return;
        p = json_pack("{s:O,s:f}", "progressToken", call->progress_token, "progress", progress);
        if (total >= 0)
                json_object_set_new(p, "total", json_real(total));
        if (message)
                json_object_set_new(p, "message", json_string(message));
        mcp_notify(call, "notifications/progress", p);
}

/* Stop the call's work: its operation is cancelled (a command is
 * killed), and a running cell is interrupted too. */
static void
call_stop(struct xb_mcp_call *call)
{
        if (call->op && call->sid && call->sandbox) {
                json_t *args = json_pack("{s:s,s:s}", "id", call->sandbox, "sid", call->sid);

                mcp_op_detached(call->m, call->c->tenant, "interrupt_session", args);
                json_decref(args);
        }
        call_end(call);
}

void
xb_mcp_call_abandon(struct xb_mcp_call *call)
{
        if (!call || call->answered || call->abandoned)
                return;
        call->abandoned = true;
        call_stop(call);
}

/* notifications/cancelled: no response is sent; the front is told with a
 * NULL message so it can end the exchange. */
static void
call_cancel(struct xb_mcp_call *call)
{
        call->abandoned = true;
        call->out->respond(call->out_ctx, NULL, 200);
        call_stop(call);
}

static void
answer_now(const struct xb_mcp_out_ops *out, void *ctx, json_t *msg, unsigned status)
{
        if (out)
                out->respond(ctx, msg, status);
        json_decref(msg);
}

static bool
valid_id(json_t *id)
{
        return json_is_string(id) ? json_string_length(id) <= 256 : json_is_integer(id);
}

static void
on_notification(struct xb_mcp_client *c, const char *method, json_t *params)
{
        if (!strcmp(method, "notifications/cancelled")) {
                json_t *rid = json_object_get(params, "requestId");

                for (struct xb_mcp_call *call = c->calls; call && rid; call = call->next)
                        if (json_equal(call->id, rid) && !call->answered && !call->abandoned) {
                                const char *why = json_string_value(json_object_get(params, "reason"));

                                xb_debug("mcp: request cancelled by the client%s%.100s", why ? ": " : "", why ? why : "");
                                call_cancel(call);
                                return;
                        }
        }
        /* initialized, roots/list_changed and the rest need nothing. */
}

/* The modern era's per-request metadata; NULL after answering. */
static bool
modern_meta(struct xb_mcp_call *call)
{
        json_t *meta = json_object_get(call->params, "_meta");
        const char *v = json_string_value(json_object_get(meta, "io.modelcontextprotocol/protocolVersion"));
        json_t *caps = json_object_get(meta, "io.modelcontextprotocol/clientCapabilities");
        const char *lvl = json_string_value(json_object_get(meta, "io.modelcontextprotocol/logLevel"));

        if (!json_is_object(meta) || !v || !json_is_object(caps)) {
                mcp_fail(call, -32602, "Invalid params: every request needs params._meta with "
                         "io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities",
                         NULL, 400);
                return false;
        }
        if (strcmp(v, XB_MCP_MODERN)) {
                mcp_fail(call, -32022, "Unsupported protocol version",
                         json_pack("{s:[s],s:s}", "supported", XB_MCP_MODERN, "requested", v), 400);
                return false;
        }
        call->client_caps = json_incref(caps);
        call->log_level = mcp_log_level_parse(lvl);
        /* Multi round-trip retries: malformed input is a protocol error. */
        if (!strcmp(call->method, "tools/call") || !strcmp(call->method, "prompts/get") ||
            !strcmp(call->method, "resources/read")) {
                json_t *in = json_object_get(call->params, "inputResponses"), *st, *x;
                const char *k;
                bool ok = !in || json_is_object(in);

                json_object_foreach(in, k, x)
                        ok &= json_is_object(x);
                st = json_object_get(call->params, "requestState");
                if (!ok || (st && !json_is_string(st))) {
                        mcp_fail(call, -32602, "Invalid params: inputResponses must map keys to response objects, "
                                 "and requestState must be a string", NULL, 200);
                        return false;
                }
        }
        return true;
}

struct xb_mcp_call *
xb_mcp_handle(struct xb_mcp_client *c, enum xb_mcp_era era, json_t *msg, const struct xb_mcp_out_ops *out,
              void *ctx)
{
        json_t *id = json_object_get(msg, "id"), *method = json_object_get(msg, "method");
        json_t *params = json_object_get(msg, "params");
        const struct mcp_method *mt = NULL;
        struct xb_mcp_call *call;
        const char *name;

        if (!json_is_object(msg)) {
                answer_now(out, ctx, xb_mcp_error(NULL, -32600, "Invalid Request: a message is a JSON object", NULL),
                           400);
                return NULL;
        }
        if (!method && (json_object_get(msg, "result") || json_object_get(msg, "error")))
                return NULL;   /* a response: we send no requests, so nothing waits for it */
        if (!json_is_string(method) || strcmp(json_string_value(json_object_get(msg, "jsonrpc")) ?: "", "2.0") ||
            (id && !valid_id(id)) || (params && !json_is_object(params))) {
                bool bad_params = json_is_string(method) && params && !json_is_object(params);

                if (!id && json_is_string(method))
                        return NULL;   /* a malformed notification gets no answer */
                answer_now(out, ctx, xb_mcp_error(id && valid_id(id) ? id : NULL, bad_params ? -32602 : -32600,
                                                  bad_params ? "Invalid params: params must be an object"
                                                             : "Invalid Request: need jsonrpc \"2.0\", a string "
                                                               "method and a string or integer id",
                                                  NULL),
                           400);
                return NULL;
        }
        name = json_string_value(method);
        if (!id) {
                on_notification(c, name, params);
                return NULL;
        }
        call = calloc(1, sizeof(*call));
        if (!call) {
                answer_now(out, ctx, xb_mcp_error(id, -32603, "out of memory", NULL), 503);
                return NULL;
        }
        call->m = c->m;
        call->c = c;
        call->id = json_incref(id);
        snprintf(call->method, sizeof(call->method), "%s", name);
        call->params = params ? json_incref(params) : json_object();
        call->modern = era == XB_MCP_MODERN_ERA;
        call->version = call->modern ? XB_MCP_MODERN : (c->version[0] ? c->version : "2025-03-26");
        call->log_level = call->modern ? LOG_NONE : c->log_level;
        call->out = out;
        call->out_ctx = ctx;
        call->start_ms = xb_now_ms();
        call->progress_token = json_incref(json_object_get(json_object_get(call->params, "_meta"), "progressToken"));
        if (call->progress_token && !json_is_string(call->progress_token) && !json_is_integer(call->progress_token)) {
                json_decref(call->progress_token);
                call->progress_token = NULL;
        }
        call->next = c->calls;
        c->calls = call;
        call->in_dispatch = true;
        client_touch(c);
        if (c->idle_ms)
                xb_timer_start(c->m->o.loop, &c->idle, c->idle_ms, on_idle, c);
        if (strlen(name) < sizeof(call->method))
                mt = mcp_method_find(name);
        if (!mt || !(mt->eras & (call->modern ? MCP_ERA_MODERN : MCP_ERA_LEGACY))) {
                char m[120];

                snprintf(m, sizeof(m), "Method not found: %.64s", name);
                mcp_fail(call, -32601, m, NULL, call->modern ? 404 : 200);
        } else if (!call->modern || modern_meta(call)) {
                mt->fn(call);
        }
        call->in_dispatch = false;
        if (call->answered || call->abandoned) {
                xb_loop_defer(c->m->o.loop, &call->defer, call_free, call);
                return NULL;
        }
        return call;
}

/* ---- for the fronts ---- */

json_t *
xb_mcp_tool_input(struct xb_mcp *m, const char *name, bool modern)
{
        json_t *fx = mcp_plugin_tools(m, modern), *v, *in = NULL;
        const struct xb_tool *t;
        size_t i;

        json_array_foreach(fx, i, v)
                if (!strcmp(json_string_value(json_object_get(v, "name")) ?: "", name))
                        in = json_incref(json_object_get(v, "inputSchema"));
        json_decref(fx);
        if (in)
                return in;
        t = xb_catalog_find(name);
        return t ? json_incref(t->input) : NULL;
}

/* ---- the core ---- */

int
xb_mcp_new(const struct xb_mcp_opts *o, struct xb_mcp **ret, struct xb_err *err)
{
        struct xb_mcp *m = calloc(1, sizeof(*m));

        if (!m)
                return xb_err_set(err, ENOMEM, "mcp");
        m->o = *o;
        if (mcp_plugins_check(o, err) < 0) {
                free(m);
                return -ENOENT;
        }
        if (!m->o.ntenants)
                m->o.ntenants = 1;
        m->tenants = calloc(m->o.ntenants, sizeof(*m->tenants));
        if (!m->tenants) {
                free(m);
                return xb_err_set(err, ENOMEM, "mcp");
        }
        *ret = m;
        return 0;
}

static void
client_cancel_all(struct xb_mcp_client *c)
{
        while (c->calls)
                xb_mcp_call_abandon(c->calls);
        mcp_op_cancel(c->op);
}

void
xb_mcp_shutdown(struct xb_mcp *m)
{
        if (!m)
                return;
        for (struct xb_mcp_client *c = m->clients; c; c = c->next)
                client_cancel_all(c);
        for (size_t i = 0; i < m->o.ntenants; i++)
                if (m->tenants[i])
                        client_cancel_all(m->tenants[i]);
        m->closing = true;
}

void
xb_mcp_free(struct xb_mcp *m)
{
        if (!m)
                return;
        m->closing = true;
        while (m->clients) {
                struct xb_mcp_client *c = m->clients;

                if (c->ops && c->ops->closed)
                        c->ops->closed(c->ctx);
                xb_mcp_client_close(c);
        }
        for (size_t i = 0; i < m->o.ntenants; i++)
                if (m->tenants[i])
                        client_free(m->tenants[i]);
        free(m->tenants);
        mcp_plugins_core_free(m);
        free(m);
}

struct xb_loop *
xb_mcp_loop(const struct xb_mcp *m)
{
        return m->o.loop;
}
