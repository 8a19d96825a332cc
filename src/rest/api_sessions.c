/* REST handlers for code sessions and their images, and the seeds' plugin
 * API (dangermode's run_cell, Pandora's exec), which work on a default
 * sandbox per token, created on first use. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "ops/jsonv.h"
#include "core/core.h"
#include "core/sessions.h"

#define CODE_MAX (4u << 20)
#define CELL_TIMEOUT_DEFAULT_MS (120u * 1000)

static struct xb_session *
api_session(struct xb_req *r, struct xb_sbx **ret_x)
{
        struct xb_sbx *x = xb_api_sandbox(r);
        struct xb_session *ss;

        if (!x)
                return NULL;
        ss = xb_session_find(x, xb_req_param(r, 1));
        if (!ss) {
                xb_reply_error(r, 404, "session_not_found",
                               "list sessions with GET /v1/sandboxes/{id}/sessions, or create one with POST",
                               "no session `%.40s` in sandbox %s", xb_req_param(r, 1), x->id);
                return NULL;
        }
        if (ret_x)
                *ret_x = x;
        return ss;
}

static void
reply_session_error(struct xb_req *r, const struct xb_err *err)
{
        if (err->code == EINVAL)
                xb_api_bad_request(r, err, "use \"python\", \"bash\", \"javascript\", or a Jupyter kernel name "
                                   "(see `jupyter kernelspec list` in the sandbox)");
        else if (err->code == ENOSPC)
                xb_reply_error(r, 429, "too_many_sessions", "delete sessions you no longer need", "%s", err->msg);
        else if (err->code == EAGAIN)
                xb_reply_error(r, 503, "sandbox_busy", "retry in a moment", "%s", err->msg);
        else
                xb_reply_error(r, 500, "session_failed", "retry, or create a new sandbox", "%s", err->msg);
}

static void
create_session(struct xb_req *r)
{
        static const char *const fields[] = { "language", "kernel", NULL };
        struct xb_sbx *x = xb_api_sandbox(r);
        struct xb_err err = { 0 };
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        size_t len;
        const char *b = xb_req_body(r, &len), *lang = NULL, *kernel = NULL;
        struct xb_session *ss;

        if (!x)
                return;
        if (xb_jsonv_parse(b, len, &body, &err) < 0 || xb_jsonv_fields(body, fields, &err) < 0 ||
            xb_jsonv_str(body, "language", 64, &lang, &err) < 0 || xb_jsonv_str(body, "kernel", 64, &kernel, &err) < 0) {
                xb_api_bad_request(r, &err, "send {\"language\": \"python\"}");
                return;
        }
        if (!lang && !kernel)
                lang = "python";
        ss = xb_session_claim_warm(x, kernel ? kernel : lang);
        if (!ss)
                ss = xb_session_start(x, kernel ? kernel : lang, false, &err);
        if (!ss) {
                reply_session_error(r, &err);
                return;
        }
        xb_session_reply_started(ss, r);
}

static void
list_sessions(struct xb_req *r)
{
        struct xb_sbx *x = xb_api_sandbox(r);

        if (x)
                xb_reply_json(r, 200, json_pack("{s:o}", "sessions", xb_session_list_json(x)));
}

static void
get_session(struct xb_req *r)
{
        struct xb_session *ss = api_session(r, NULL);

        if (ss)
                xb_reply_json(r, 200, xb_session_json(ss));
}

static void
delete_session(struct xb_req *r)
{
        struct xb_session *ss = api_session(r, NULL);

        if (!ss)
                return;
        xb_session_delete(ss);
        xb_reply_empty(r, 204);
}

static int
parse_run(json_t *body, const char **code, uint64_t *timeout, uint64_t *yield, uint64_t *limit, struct xb_err *err)
{
        static const char *const fields[] = { "code", "timeout_s", "yield_after_s", "output_limit", NULL };
        int rc;

        *timeout = CELL_TIMEOUT_DEFAULT_MS;
        if ((rc = xb_jsonv_fields(body, fields, err)) < 0 || (rc = xb_jsonv_str(body, "code", CODE_MAX, code, err)) < 0 ||
            (rc = xb_jsonv_seconds(body, "timeout_s", 0, 86400, timeout, err)) < 0 ||
            (rc = xb_jsonv_seconds(body, "yield_after_s", 0.01, 86400, yield, err)) < 0 ||
            (rc = xb_jsonv_uint(body, "output_limit", 1024, 64u << 20, limit, err)) < 0)
                return rc;
        if (!*code)
                return xb_err_msg(err, EINVAL, "`code` is required: the cell to run");
        return 0;
}

static void
run_cell(struct xb_req *r)
{
        struct xb_session *ss = api_session(r, NULL);
        struct xb_err err = { 0 };
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        size_t len;
        const char *b = xb_req_body(r, &len), *code = NULL;
        uint64_t timeout, yield = 0, limit = 0;

        if (!ss)
                return;
        if (xb_jsonv_parse(b, len, &body, &err) < 0 || parse_run(body, &code, &timeout, &yield, &limit, &err) < 0) {
                xb_api_bad_request(r, &err, "send {\"code\": \"print(1+1)\"}");
                return;
        }
        xb_session_run(ss, r, code, timeout, yield, limit,
                       xb_req_accepts(r, "text/event-stream") ? XB_CELL_SSE : XB_CELL_JSON);
}

static void
wait_cell(struct xb_req *r)
{
        static const char *const fields[] = { "timeout_s", NULL };
        struct xb_session *ss = api_session(r, NULL);
        struct xb_err err = { 0 };
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        size_t len;
        const char *b = xb_req_body(r, &len);
        uint64_t t = 30000;

        if (!ss)
                return;
        if (xb_jsonv_parse(b, len, &body, &err) < 0 || xb_jsonv_fields(body, fields, &err) < 0 ||
            xb_jsonv_seconds(body, "timeout_s", 0.01, 3600, &t, &err) < 0) {
                xb_api_bad_request(r, &err, NULL);
                return;
        }
        xb_session_wait(ss, r, t);
}

static void
interrupt_session(struct xb_req *r)
{
        struct xb_session *ss = api_session(r, NULL);

        if (!ss)
                return;
        xb_session_interrupt(ss);
        xb_reply_json(r, 200, xb_session_json(ss));
}

static void
restart_session(struct xb_req *r)
{
        struct xb_session *ss = api_session(r, NULL);

        if (!ss)
                return;
        xb_session_restart(ss);
        xb_reply_json(r, 200, xb_session_json(ss));
}

static void
session_input(struct xb_req *r)
{
        static const char *const fields[] = { "data", NULL };
        struct xb_session *ss = api_session(r, NULL);
        struct xb_err err = { 0 };
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        size_t len;
        const char *b = xb_req_body(r, &len), *data = NULL;

        if (!ss)
                return;
        if (xb_jsonv_parse(b, len, &body, &err) < 0 || xb_jsonv_fields(body, fields, &err) < 0 ||
            xb_jsonv_str(body, "data", 1 << 20, &data, &err) < 0 || !data) {
                if (!err.msg[0])
                        xb_err_msg(&err, EINVAL, "`data` is required: the text to type, e.g. \"y\\n\"");
                xb_api_bad_request(r, &err, NULL);
                return;
        }
        if (xb_session_input(ss, data, &err) < 0) {
                xb_reply_error(r, 409, "no_input", "only a running bash command reads input", "%s", err.msg);
                return;
        }
        xb_reply_json(r, 200, json_pack("{s:b}", "ok", 1));
}

static bool
identifier(const char *s)
{
        size_t n = s ? strlen(s) : 0;

        if (n == 0 || n > 200)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!(s[i] == '_' || s[i] == '.' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
                      (i && s[i] >= '0' && s[i] <= '9')))
                        return false;
        return true;
}

static void
get_variable(struct xb_req *r)
{
        struct xb_session *ss = api_session(r, NULL);
        const char *name = xb_req_param(r, 2);

        if (!ss)
                return;
        if (!identifier(name)) {
                xb_reply_error(r, 400, "invalid_request", "use a variable name such as df or results.mean",
                               "`%.64s` is not a variable name", name ? name : "");
                return;
        }
        xb_session_variable(ss, r, name);
}

static void
serve_image(struct xb_req *r, struct xb_sbx *x, const char *name)
{
        const char *mime;
        size_t n;
        const void *data = xb_image_find(x, name, &n, &mime);

        if (!data) {
                xb_reply_error(r, 404, "image_not_found", "images are kept per sandbox, the newest 64; run the cell again",
                               "no image `%.80s`", name);
                return;
        }
        xb_reply_bytes(r, 200, mime, data, n);
}

static void
get_image(struct xb_req *r)
{
        struct xb_sbx *x = xb_api_sandbox(r);

        if (x)
                serve_image(r, x, xb_req_param(r, 1));
}

/* ---- the seeds' plugin API: one default sandbox per token ---- */

struct xb_sbx *
xb_default_sandbox(struct xb_req *r)
{
        struct xb_server *s = xb_req_app(r);
        int tenant = xb_req_tenant(r);
        size_t n = s->ntokens ? s->ntokens : 1;
        struct xb_sbx *x;
        struct xb_err err = { 0 };

        if (!s->default_sbx && !(s->default_sbx = calloc(n, sizeof(char *)))) {
                xb_reply_error(r, 503, "out_of_memory", "retry", "out of memory");
                return NULL;
        }
        if (tenant < 0 || (size_t)tenant >= n) {
                xb_reply_error(r, 401, "unauthorized", "send a bearer token", "no tenant");
                return NULL;
        }
        x = s->default_sbx[tenant] ? xb_sbx_find(s, s->default_sbx[tenant], tenant) : NULL;
        if (x)
                return x;
        if (xb_sbx_create(s, tenant, &s->o.defaults, NULL, 0, NULL, NULL, XB_TTL_MAX_MS / 7, &x, &err) < 0) {
                xb_reply_error(r, 503, "sandbox_failed", "retry", "could not create the default sandbox: %s", err.msg);
                return NULL;
        }
        free(s->default_sbx[tenant]);
        s->default_sbx[tenant] = strdup(x->id);
        return x;
}

static struct xb_session *
default_session(struct xb_req *r, struct xb_sbx **ret_x)
{
        struct xb_sbx *x = xb_default_sandbox(r);
        struct xb_session *ss = NULL;
        struct xb_err err = { 0 };
        json_t *list;
        size_t i;
        json_t *it;

        if (!x)
                return NULL;
        list = xb_session_list_json(x);
        json_array_foreach(list, i, it)
                if (!strcmp(json_string_value(json_object_get(it, "language")) ?: "", "python") &&
                    strcmp(json_string_value(json_object_get(it, "state")) ?: "", "dead"))
                        ss = xb_session_find(x, json_string_value(json_object_get(it, "id")));
        json_decref(list);
        if (!ss)
                ss = xb_session_claim_warm(x, "python");
        if (!ss)
                ss = xb_session_start(x, "python", false, &err);
        if (!ss) {
                reply_session_error(r, &err);
                return NULL;
        }
        *ret_x = x;
        return ss;
}

static void
dm_run_cell(struct xb_req *r)
{
        static const char *const fields[] = { "code", NULL };
        struct xb_err err = { 0 };
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        size_t len;
        const char *b = xb_req_body(r, &len), *code = NULL;
        struct xb_session *ss;
        struct xb_sbx *x;

        if (xb_jsonv_parse(b, len, &body, &err) < 0 || xb_jsonv_fields(body, fields, &err) < 0 ||
            xb_jsonv_str(body, "code", CODE_MAX, &code, &err) < 0 || !code) {
                if (!err.msg[0])
                        xb_err_msg(&err, EINVAL, "`code` is required");
                xb_api_bad_request(r, &err, "send {\"code\": \"1+1\"}");
                return;
        }
        ss = default_session(r, &x);
        if (!ss)
                return;
        xb_session_run(ss, r, code, CELL_TIMEOUT_DEFAULT_MS, 0, 0, XB_CELL_DANGERMODE);
}

static void
dm_variable(struct xb_req *r)
{
        struct xb_session *ss;
        struct xb_sbx *x;
        const char *name = xb_req_param(r, 0);

        if (!identifier(name)) {
                xb_reply_error(r, 400, "invalid_request", "use a variable name", "`%.64s` is not a variable name",
                               name ? name : "");
                return;
        }
        ss = default_session(r, &x);
        if (ss)
                xb_session_variable(ss, r, name);
}

static void
dm_image(struct xb_req *r)
{
        struct xb_sbx *x = xb_default_sandbox(r);

        if (x)
                serve_image(r, x, xb_req_param(r, 0));
}

const struct xb_route xb_api_routes_sessions[] = {
        { "POST", "/v1/sandboxes/{}/sessions", create_session, 0 },
        { "GET", "/v1/sandboxes/{}/sessions", list_sessions, 0 },
        { "GET", "/v1/sandboxes/{}/sessions/{}", get_session, 0 },
        { "DELETE", "/v1/sandboxes/{}/sessions/{}", delete_session, 0 },
        { "POST", "/v1/sandboxes/{}/sessions/{}/run", run_cell, 0 },
        { "POST", "/v1/sandboxes/{}/sessions/{}/wait", wait_cell, 0 },
        { "POST", "/v1/sandboxes/{}/sessions/{}/interrupt", interrupt_session, 0 },
        { "POST", "/v1/sandboxes/{}/sessions/{}/restart", restart_session, 0 },
        { "POST", "/v1/sandboxes/{}/sessions/{}/input", session_input, 0 },
        { "GET", "/v1/sandboxes/{}/sessions/{}/variables/{}", get_variable, 0 },
        { "GET", "/v1/sandboxes/{}/images/{}", get_image, 0 },
        { "POST", "/api/run_cell", dm_run_cell, 0 },
        { "GET", "/api/variable/{}", dm_variable, 0 },
        { "GET", "/images/{}", dm_image, 0 },
};
const size_t xb_api_nroutes_sessions = sizeof(xb_api_routes_sessions) / sizeof(xb_api_routes_sessions[0]);
