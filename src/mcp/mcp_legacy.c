/* TRANSITION: operations that are not in the op table yet, run the way MCP
 * ran every tool before it: as a REST request injected into the router
 * (xb_http_inject), whose reply is turned back into the call's result or
 * error. mcp_op comes here only when xb_op_find knows no such operation.
 * Delete this file, its table and its branch in mcp_op.c (and the
 * router in struct xb_mcp_opts) once every operation MCP names exists.
 *
 * The table below is the REST route of each operation MCP runs; the flat
 * arguments go back where the route takes them: path segments by name,
 * the listed query parameters, one raw body argument, or else the JSON
 * body. An error reply's wire name and status give back its code; its
 * REST hint is dropped, since MCP words its own (hints.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "core/call.h"
#include "ops/jsonv.h"
#include "mcp/mcp_int.h"

#define QUERY_MAX 4

struct legacy_route {
        const char *op, *method, *path;
        const char *query[QUERY_MAX];   /* arguments sent as query parameters */
        const char *raw;                /* the argument sent as the body's bytes */
        bool sse;                       /* streams its events when they are wanted */
        bool bytes;                     /* answers with the file's bytes: read_file */
};

static const struct legacy_route routes[] = {
        { "sandbox_create", "POST", "/v1/sandboxes", { NULL }, NULL, false, false },
        { "sandbox_list", "GET", "/v1/sandboxes", { NULL }, NULL, false, false },
        { "sandbox_delete", "DELETE", "/v1/sandboxes/{id}", { NULL }, NULL, false, false },
        { "run_command", "POST", "/v1/sandboxes/{id}/exec", { NULL }, NULL, true, false },
        { "process_start", "POST", "/v1/sandboxes/{id}/processes", { NULL }, NULL, false, false },
        { "process_read", "GET", "/v1/sandboxes/{id}/processes/{pid}/output",
          { "stdout_offset", "stderr_offset", "wait_s", NULL }, NULL, false, false },
        { "process_input", "POST", "/v1/sandboxes/{id}/processes/{pid}/stdin", { NULL }, NULL, false, false },
        { "process_kill", "POST", "/v1/sandboxes/{id}/processes/{pid}/signal", { NULL }, NULL, false, false },
        { "read_file", "GET", "/v1/sandboxes/{id}/files", { "path", NULL }, NULL, false, true },
        { "write_file", "PUT", "/v1/sandboxes/{id}/files", { "path", "mode", NULL }, "content", false, false },
        { "list_files", "GET", "/v1/sandboxes/{id}/files/list", { "path", "depth", NULL }, NULL, false, false },
        { "create_session", "POST", "/v1/sandboxes/{id}/sessions", { NULL }, NULL, false, false },
        { "run_code", "POST", "/v1/sandboxes/{id}/sessions/{sid}/run", { NULL }, NULL, false, false },
        { "interrupt_session", "POST", "/v1/sandboxes/{id}/sessions/{sid}/interrupt", { NULL }, NULL, false, false },
};

struct legacy {
        struct xb_call *call;           /* NULL once finished or cancelled */
        struct xb_req *req;
        char *path;                     /* read_file: the path, for its result */
        json_t *result, *error;         /* a stream's "result" or "error" event */
        bool bytes, replied, returned;
};

static void
legacy_free(struct legacy *lg)
{
        json_decref(lg->result);
        json_decref(lg->error);
        free(lg->path);
        free(lg);
}

/* ---- replies ---- */

/* The code of a wire name: where several codes share one, the status
 * tells a retryable or internal failure from the plain one. */
static enum xb_ecode
ecode_of(const char *name, unsigned status)
{
        static const struct {
                enum xb_ecode ecode;
                unsigned status;
        } by_status[] = {
                { XB_E_SANDBOX_UNAVAILABLE, 503 }, { XB_E_SPAWN_INTERNAL, 500 },
                { XB_E_FILE_REQUEST_INTERNAL, 500 }, { XB_E_SESSION_INTERNAL, 500 },
        };

        for (size_t i = 0; name && i < ARRAY_SIZE(by_status); i++)
                if (status == by_status[i].status && !strcmp(name, xb_ecode_name(by_status[i].ecode)))
                        return by_status[i].ecode;
        for (int e = XB_E_NONE + 1; name && e < XB_E__COUNT; e++)
                if (!strcmp(name, xb_ecode_name((enum xb_ecode)e)))
                        return (enum xb_ecode)e;
        return XB_E_INTERNAL;
}

static void
err_from(json_t *e, unsigned status, struct xb_err *err)
{
        const char *code = json_string_value(json_object_get(e, "code"));
        const char *msg = json_string_value(json_object_get(e, "message"));

        *err = (struct xb_err){ .code = EIO, .ecode = ecode_of(code, status) };
        if (msg)
                snprintf(err->msg, sizeof(err->msg), "%s", msg);
        else
                snprintf(err->msg, sizeof(err->msg), "the operation failed with HTTP status %u", status);
}

void
mcp_legacy_err(unsigned status, const void *data, size_t len, struct xb_err *err)
{
        json_t *j = len ? json_loadb(data, len, 0, NULL) : NULL;

        err_from(json_object_get(j, "error"), status, err);
        json_decref(j);
}

/* read_file's result: text when it is UTF-8, else base64. */
static json_t *
file_result(const char *path, const void *data, size_t len)
{
        json_t *text = json_stringn(data, len);
        _cleanup_free_ char *b64 = NULL;

        if (!text && xb_base64_encode_alloc(data, len, &b64) < 0)
                b64 = NULL;
        if (!text && !b64)
                return NULL;
        return json_pack("{s:s,s:I,s:o,s:s}", "path", path ? path : "", "size", (json_int_t)len, "content",
                         text ? text : json_string(b64), "encoding", text ? "utf-8" : "base64");
}

static void
unreadable(struct xb_call *c)
{
        xb_call_failf(c, XB_E_INTERNAL, NULL, "the server's reply could not be read");
}

static void
finish(struct legacy *lg, unsigned status, const char *ctype, const void *data, size_t len)
{
        struct xb_call *c = TAKE_PTR(lg->call);
        struct xb_err err;
        json_t *j;

        if (ctype && strstr(ctype, "event-stream")) {
                if (lg->result) {
                        xb_call_done(c, TAKE_PTR(lg->result));
                } else if (lg->error) {
                        err_from(lg->error, 0, &err);
                        xb_call_fail(c, &err);
                } else
                        unreadable(c);
                return;
        }
        if (lg->bytes && status == 416)
                len = 0;   /* an empty file has no byte 0 */
        else if (status >= 400) {
                mcp_legacy_err(status, data, len, &err);
                xb_call_fail(c, &err);
                return;
        }
        if (lg->bytes)
                j = file_result(lg->path, data, len);
        else
                j = len ? json_loadb(data, len, 0, NULL) : json_object();
        if (j)
                xb_call_done(c, j);
        else
                unreadable(c);
}

static void
legacy_reply(void *ctx, unsigned status, const char *ctype, const void *data, size_t len)
{
        struct legacy *lg = ctx;

        lg->replied = true;
        if (lg->call)
                finish(lg, status, ctype, data, len);
        if (lg->returned)
                legacy_free(lg);
}

static void
legacy_event(void *ctx, const char *name, json_t *data)
{
        struct legacy *lg = ctx;

        if (!lg->call)
                return;
        if (!strcmp(name, "result") || !strcmp(name, "error")) {
                json_t **slot = name[0] == 'r' ? &lg->result : &lg->error;

                json_decref(*slot);
                *slot = json_incref(data);
        } else if (xb_call_wants_events(lg->call))
                xb_call_event(lg->call, name, data);
}

static const struct xb_vreply_ops legacy_ops = { legacy_reply, legacy_event };

/* The call is cancelled: so is its request. */
static void
legacy_cancel(void *owner)
{
        struct legacy *lg = owner;

        lg->call = NULL;
        if (!lg->returned)
                return;   /* still in mcp_legacy_run, which cancels and frees */
        xb_req_cancel(lg->req);
        legacy_free(lg);
}

/* ---- requests ---- */

/* A path, query or body value as text; NULL if it is not a scalar. */
static char *
scalar_text(json_t *v)
{
        char *s = NULL;

        if (json_is_string(v))
                return strdup(json_string_value(v));
        if (json_is_integer(v) && asprintf(&s, "%lld", (long long)json_integer_value(v)) < 0)
                return NULL;
        if (json_is_real(v) && asprintf(&s, "%.17g", json_real_value(v)) < 0)
                return NULL;
        if (json_is_boolean(v))
                return strdup(json_is_true(v) ? "true" : "false");
        return s;
}

/* The route's path with each {name} filled from args, percent-escaped;
 * the names used are deleted from body. */
static char *
fill_path(const char *tmpl, json_t *args, json_t *body, struct xb_err *err)
{
        static const char hex[] = "0123456789ABCDEF";
        struct xb_buf b = { .max = 16384 };

        for (const char *p = tmpl; *p;) {
                const char *end = p[0] == '{' ? strchr(p, '}') : NULL;
                _cleanup_free_ char *name = NULL, *v = NULL;

                if (!end) {
                        xb_buf_append(&b, p++, 1);
                        continue;
                }
                name = strndup(p + 1, (size_t)(end - p - 1));
                v = name ? scalar_text(json_object_get(args, name)) : NULL;
                if (!v || !*v) {
                        xb_buf_free(&b);
                        xb_err_code(err, XB_E_INVALID, EINVAL, NULL, "`%s` is required", name ? name : "?");
                        return NULL;
                }
                for (const unsigned char *c = (const unsigned char *)v; *c; c++)
                        if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                            strchr("-._~", *c))
                                xb_buf_append(&b, c, 1);
                        else
                                xb_buf_printf(&b, "%%%c%c", hex[*c >> 4], hex[*c & 15]);
                json_object_del(body, name);
                p = end + 1;
        }
        if (!b.data)
                xb_err_code(err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
        return xb_buf_steal(&b);
}

static void
free_query(char **q)
{
        for (size_t i = 0; q && q[i]; i++)
                free(q[i]);
}

void
mcp_legacy_run(struct xb_mcp *m, int tenant, const char *name, json_t *args, struct xb_call *call)
{
        static const char *const json_hdrs[] = { "Content-Type", "application/json", "Accept", "application/json",
                                                 NULL };
        static const char *const sse_hdrs[] = { "Content-Type", "application/json", "Accept", "text/event-stream",
                                                NULL };
        static const char *const raw_hdrs[] = { "Content-Type", "application/octet-stream", NULL };
        const struct legacy_route *rt = NULL;
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        _cleanup_free_ char *path = NULL, *text = NULL;
        char *query[2 * QUERY_MAX + 1] = { NULL }, range[48];
        const char *range_hdrs[] = { "Range", range, NULL };
        struct xb_vreq v = { .tenant = tenant };
        struct xb_err err = { 0 };
        struct legacy *lg;
        struct xb_req *r;
        size_t nq = 0;
        json_t *max, *raw = NULL;

        for (size_t i = 0; i < ARRAY_SIZE(routes) && !rt; i++)
                if (!strcmp(routes[i].op, name))
                        rt = &routes[i];
        if (!rt || !m->o.router) {
                xb_call_failf(call, XB_E_INTERNAL, NULL, "no operation `%s`", name);
                return;
        }
        body = json_deep_copy(json_is_object(args) ? args : json_object());
        if (!body || !(path = fill_path(rt->path, args, body, &err))) {
                if (!body)
                        xb_err_code(&err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
                xb_call_fail(call, &err);
                return;
        }
        for (size_t i = 0; i < QUERY_MAX && rt->query[i]; i++) {
                json_t *q = json_object_get(args, rt->query[i]);

                if (q && !json_is_null(q) && (query[nq + 1] = scalar_text(q))) {
                        query[nq] = strdup(rt->query[i]);
                        nq += 2;
                }
                json_object_del(body, rt->query[i]);
        }
        v = (struct xb_vreq){ .method = rt->method, .path = path, .query = (const char *const *)query,
                              .headers = json_hdrs, .tenant = tenant };
        if (rt->raw) {
                raw = json_object_get(args, rt->raw);
                v.headers = raw_hdrs;
                v.body = json_string_value(raw) ?: "";
                v.body_len = json_string_length(raw);
        } else if (rt->bytes) {
                /* Raw bytes: as many as asked for (max_bytes), from the start. */
                max = json_object_get(args, "max_bytes");
                v.headers = NULL;
                if (json_is_integer(max) && json_integer_value(max) > 0) {
                        snprintf(range, sizeof(range), "bytes=0-%lld", (long long)json_integer_value(max) - 1);
                        v.headers = range_hdrs;
                }
        } else if (strcmp(rt->method, "GET") && strcmp(rt->method, "DELETE")) {
                text = json_dumps(body, JSON_COMPACT);
                v.body = text;
                v.body_len = text ? strlen(text) : 0;
                if (rt->sse && xb_call_wants_events(call))
                        v.headers = sse_hdrs;
        }
        lg = calloc(1, sizeof(*lg));
        if (!lg || (rt->bytes && !(lg->path = strdup(json_string_value(json_object_get(args, "path")) ?: "")))) {
                free(lg);
                free_query(query);
                xb_call_failf(call, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        lg->call = call;
        lg->bytes = rt->bytes;
        xb_call_on_cancel(call, legacy_cancel, lg);
        r = xb_http_inject(m->o.router, &v, &legacy_ops, lg);
        free_query(query);
        lg->returned = true;
        if (lg->replied) {
                legacy_free(lg);
                return;
        }
        lg->req = r;
        if (!lg->call) {
                /* Cancelled while it was being made. */
                xb_req_cancel(r);
                legacy_free(lg);
        }
}
