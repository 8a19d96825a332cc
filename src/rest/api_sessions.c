/* REST routes for code sessions and their images, and the seeds' plugin
 * API (dangermode's run_cell), which works on a default sandbox per token,
 * created on first use. The session routes run operations (ops/
 * op_sessions.c); what REST adds to their neutral results is here: links
 * to images and advice that names routes. Images are served straight from
 * core. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "ops/jsonv.h"
#include "ops/op_args.h"
#include "rest/rest.h"
#include "core/sessions.h"
#include "rest/call.h"
#include "rest/status.h"
#include "transport/sign.h"

#define CODE_MAX (4u << 20)
#define IMAGE_LINK_TTL_S 3600     /* how long a signed image link works */

#define HINT_SESSION_DEAD "POST .../sessions/{sid}/restart starts a fresh interpreter"
#define HINT_CELL_RUNNING "the cell is still running; POST .../sessions/{sid}/wait for more output, or .../interrupt " \
                          "to stop it"
#define HINT_CELL_GONE "the session was deleted, or its sandbox ended: create a session (POST " \
                       "/v1/sandboxes/{id}/sessions, in a new sandbox if this one is gone) and run the cell there"
#define HINT_CELL_DEAD "the interpreter died (out of memory, a crash, or killed); POST .../sessions/{sid}/restart " \
                       "starts a fresh one"

/* ---- REST's view of sessions and cells ---- */

static json_t *
session_view(json_t *ss)
{
        json_t *o;

        if (strcmp(json_string_value(json_object_get(ss, "state")) ?: "", "dead"))
                return ss;
        o = json_copy(ss);
        json_decref(ss);
        if (o)
                json_object_set_new(o, "hint", json_string(HINT_SESSION_DEAD));
        return o;
}

static json_t *
session_shape(struct xb_req *r, const char *event, json_t *data)
{
        (void)r;
        (void)event;
        return session_view(data);
}

static json_t *
list_shape(struct xb_req *r, const char *event, json_t *data)
{
        json_t *list = json_object_get(data, "sessions"), *out = json_array(), *it;
        size_t i;

        (void)r;
        (void)event;
        json_array_foreach(list, i, it)
                json_array_append_new(out, session_view(json_incref(it)));
        json_decref(data);
        return json_pack("{s:o}", "sessions", out);
}

/* What an image link signs: the sandbox, the image and the expiry. */
static int
image_msg(char *buf, size_t cap, const char *sandbox_id, const char *name, unsigned long long exp)
{
        return snprintf(buf, cap, "image\n%s\n%s\n%llu", sandbox_id, name, exp);
}

/* An image's link: relative, or with --public-url absolute and signed,
 * so a chat UI can show it without the bearer token. */
static void
image_url(struct xb_req *r, char *url, size_t cap, const char *sandbox_id, const char *name)
{
        const char *pub = xb_req_public_url(r);
        unsigned long long exp = (unsigned long long)time(NULL) + IMAGE_LINK_TTL_S;
        char msg[300], sig[XB_SIGN_HEX_LEN + 1];
        int n = pub ? image_msg(msg, sizeof(msg), sandbox_id, name, exp) : 0, plen = pub ? (int)strlen(pub) : 0;

        while (plen && pub[plen - 1] == '/')   /* no "//v1" */
                plen--;
        if (!pub || n < 0 || (size_t)n >= sizeof(msg) || xb_sign(msg, (size_t)n, sig) < 0) {
                snprintf(url, cap, "%.*s/v1/sandboxes/%s/images/%s", plen, pub ? pub : "", sandbox_id, name);
                return;
        }
        snprintf(url, cap, "%.*s/v1/sandboxes/%s/images/%s?exp=%llu&sig=%s", plen, pub, sandbox_id, name, exp, sig);
}

/* An output that displayed an image links to it where core named it. */
static json_t *
output_view(struct xb_req *r, json_t *o, const char *sandbox_id)
{
        const char *name = json_string_value(json_object_get(o, "image")), *key;
        json_t *out, *v;
        char url[600];

        if (!name)
                return o;
        image_url(r, url, sizeof(url), sandbox_id, name);
        out = json_object();
        json_object_foreach(o, key, v)
                json_object_set_new(out, strcmp(key, "image") ? key : "url",
                                    strcmp(key, "image") ? json_incref(v) : json_string(url));
        json_decref(o);
        return out;
}

/* The advice a cell's status calls for, naming routes. */
static json_t *
cell_hints(json_t *res)
{
        const char *status = json_string_value(json_object_get(res, "status")) ?: "";
        bool gone = json_is_true(json_object_get(res, "session_gone"));
        const char *hint = !strcmp(status, "running") ? HINT_CELL_RUNNING
                           : !strcmp(status, "dead")  ? (gone ? HINT_CELL_GONE : HINT_CELL_DEAD)
                                                      : NULL;
        json_t *o;

        if (!hint)
                return res;
        o = json_copy(res);
        json_decref(res);
        if (o)
                json_object_set_new(o, "hint", json_string(hint));
        return o;
}

static json_t *
cell_shape(struct xb_req *r, const char *event, json_t *data)
{
        const char *sandbox_id = xb_req_param(r, 0) ?: "";
        json_t *outs, *o, *copy;
        size_t i;

        if (event)
                return output_view(r, data, sandbox_id);
        data = cell_hints(data);
        outs = json_object_get(data, "outputs");
        if (!json_is_array(outs))
                return data;
        copy = json_array();
        json_array_foreach(outs, i, o)
                json_array_append_new(copy, output_view(r, json_incref(o), sandbox_id));
        o = json_copy(data);
        json_decref(data);
        if (o)
                json_object_set_new(o, "outputs", copy);
        else
                json_decref(copy);
        return o;
}

/* ---- the session routes ---- */

static const struct xb_rest_decor session_decor = { .shape = session_shape };
static const struct xb_rest_decor list_decor = { .shape = list_shape };
static const struct xb_rest_decor cell_decor = { .shape = cell_shape };

#define SESSIONS "/v1/sandboxes/{id}/sessions"

static const struct xb_rest_op_route create_route = { .op = "create_session", .tmpl = SESSIONS, .status = 201,
                                                      .decor = &session_decor,
                                                      .bad_body_hint = "send {\"language\": \"python\"}" };
static const struct xb_rest_op_route list_route = { .op = "list_sessions", .tmpl = SESSIONS, .no_body = true,
                                                    .decor = &list_decor };
static const struct xb_rest_op_route get_route = { .op = "get_session", .tmpl = SESSIONS "/{sid}", .no_body = true,
                                                   .decor = &session_decor };
static const struct xb_rest_op_route delete_route = { .op = "delete_session", .tmpl = SESSIONS "/{sid}",
                                                      .status = 204, .no_body = true };
static const struct xb_rest_op_route run_route = { .op = "run_code", .tmpl = SESSIONS "/{sid}/run", .sse = true,
                                                   .decor = &cell_decor,
                                                   .bad_body_hint = "send {\"code\": \"print(1+1)\"}" };
static const struct xb_rest_op_route wait_route = { .op = "wait_session", .tmpl = SESSIONS "/{sid}/wait",
                                                    .decor = &cell_decor };
static const struct xb_rest_op_route interrupt_route = { .op = "interrupt_session", .tmpl = SESSIONS "/{sid}/interrupt",
                                                         .no_body = true, .decor = &session_decor };
static const struct xb_rest_op_route restart_route = { .op = "restart_session", .tmpl = SESSIONS "/{sid}/restart",
                                                       .no_body = true, .decor = &session_decor };
static const struct xb_rest_op_route input_route = { .op = "session_input", .tmpl = SESSIONS "/{sid}/input" };
static const struct xb_rest_op_route variable_route = { .op = "get_variable",
                                                        .tmpl = SESSIONS "/{sid}/variables/{name}", .no_body = true };

static void
serve_image(struct xb_req *r, struct xb_sbx *x, const char *name)
{
        const char *mime;
        size_t n;
        const void *data = xb_image_find(x, name, &n, &mime);
        struct xb_err err = { 0 };

        if (!data) {
                xb_err_code(&err, XB_E_IMAGE_NOT_FOUND, ENOENT, NULL, "no image `%.80s`", name);
                xb_rest_fail(r, &err);
                return;
        }
        xb_reply_bytes(r, 200, mime, data, n);
}

/* A signed link (image_url) stands for the token until it expires. */
static void
get_image_signed(struct xb_req *r, const char *exp_s, const char *sig)
{
        struct xb_rest *rs = xb_rest_of(r);
        struct xb_core *s = rs->core;
        const char *id = xb_req_param(r, 0), *name = xb_req_param(r, 1);
        char *end = NULL, msg[300];
        unsigned long long exp = strtoull(exp_s, &end, 10);
        int n = image_msg(msg, sizeof(msg), id, name, exp);
        struct xb_sbx *x = NULL;

        if (end == exp_s || *end || n < 0 || (size_t)n >= sizeof(msg) || !xb_sign_check(msg, (size_t)n, sig)) {
                xb_reply_error(r, 403, "bad_signature",
                               "use the image URL exactly as a result gave it, or send the bearer token",
                               "the image link's signature is not valid");
                return;
        }
        if (exp < (unsigned long long)time(NULL)) {
                xb_reply_error(r, 403, "link_expired",
                               "image links work for an hour: fetch the cell's result again for a fresh one, or "
                               "send the bearer token", "the image link expired");
                return;
        }
        for (size_t t = 0; !x && t < rs->ntenants; t++)
                x = xb_sbx_find(s, id, (int)t);
        if (!x) {
                xb_reply_error(r, 404, "sandbox_not_found", "the sandbox was deleted or expired",
                               "no sandbox with id `%.64s`", id ? id : "");
                return;
        }
        serve_image(r, x, name);
}

/* The token, or (XB_ROUTE_SIGNED: the router let it in without one) a
 * signed link. */
static void
get_image(struct xb_req *r)
{
        const char *exp = xb_req_query(r, "exp", NULL), *sig = xb_req_query(r, "sig", NULL);
        struct xb_sbx *x;

        if (xb_req_tenant(r) < 0) {
                get_image_signed(r, exp ? exp : "", sig);
                return;
        }
        if ((x = xb_api_sandbox(r)))
                serve_image(r, x, xb_req_param(r, 1));
}

/* ---- the seeds' plugin API: one default sandbox per token ---- */

struct xb_sbx *
xb_default_sandbox(struct xb_req *r)
{
        struct xb_rest *rs = xb_rest_of(r);
        struct xb_core *s = rs->core;
        int tenant = xb_req_tenant(r);
        size_t n = rs->ntenants ? rs->ntenants : 1;
        struct xb_sbx *x;
        struct xb_err err = { 0 };

        if (!rs->default_sbx && !(rs->default_sbx = calloc(n, sizeof(char *)))) {
                xb_reply_error(r, 503, "out_of_memory", "retry", "out of memory");
                return NULL;
        }
        if (tenant < 0 || (size_t)tenant >= n) {
                xb_reply_error(r, 401, "unauthorized", "send a bearer token", "no tenant");
                return NULL;
        }
        x = rs->default_sbx[tenant] ? xb_sbx_find(s, rs->default_sbx[tenant], tenant) : NULL;
        if (x)
                return x;
        if (xb_sbx_create(s, tenant, &s->o.defaults, NULL, 0, NULL, NULL, XB_TTL_MAX_MS / 7, &x, &err) < 0) {
                xb_reply_error(r, 503, "sandbox_failed", "retry", "could not create the default sandbox: %s", err.msg);
                return NULL;
        }
        free(rs->default_sbx[tenant]);
        rs->default_sbx[tenant] = strdup(x->id);
        return x;
}

/* The default sandbox's Python session, started when there is none; or a
 * reply and NULL. The arguments for an operation on it go in args. */
static bool
default_session(struct xb_req *r, json_t *args)
{
        struct xb_sbx *x = xb_default_sandbox(r);
        struct xb_session *ss;
        struct xb_err err = { 0 };

        if (!x)
                return false;
        /* Using it: an auto-paused one resumes, a paused one answers 409. */
        if (x->paused && !(x = xb_sbx_use(xb_rest_of(r)->core, x->id, xb_req_tenant(r), &err))) {
                xb_rest_fail(r, &err);
                return false;
        }
        ss = xb_session_find_live(x, "python");
        if (!ss)
                ss = xb_session_claim_warm(x, "python");
        if (!ss)
                ss = xb_session_start(x, "python", false, &err);
        if (!ss) {
                xb_rest_fail(r, &err);
                return false;
        }
        json_object_set_new(args, "id", json_string(x->id));
        json_object_set_new(args, "sid", json_string(xb_session_id(ss)));
        return true;
}

/* "/v1/sandboxes/ID/images/NAME" becomes dangermode's "/images/NAME". */
static json_t *
dm_url(json_t *url)
{
        const char *u = json_string_value(url), *slash = u ? strrchr(u, '/') : NULL;
        char out[160];

        /* its own route, per token: no signed query */
        snprintf(out, sizeof(out), "/images/%.*s", slash ? (int)strcspn(slash + 1, "?") : 0, slash ? slash + 1 : "");
        return json_string(out);
}

/* A cell's result in dangermode's shape. */
static json_t *
dangermode_json(json_t *res)
{
        json_t *outs = json_object_get(res, "outputs"), *o, *displays = json_array(), *result = json_null(), *error =
                                                                                                                   json_null();
        struct xb_buf out = { .max = 64u << 20 }, err = { .max = 64u << 20 };
        size_t i;

        json_array_foreach(outs, i, o) {
                const char *t = json_string_value(json_object_get(o, "type"));

                if (!t)
                        continue;
                if (!strcmp(t, "stream")) {
                        const char *name = json_string_value(json_object_get(o, "name"));

                        xb_buf_puts(name && !strcmp(name, "stderr") ? &err : &out,
                                    json_string_value(json_object_get(o, "text")) ?: "");
                } else if (!strcmp(t, "display")) {
                        json_t *d = json_deep_copy(json_object_get(o, "data"));

                        /* dangermode gives images as URLs, not base64 */
                        if (json_object_get(o, "url") && json_object_get(d, "image/png"))
                                json_object_set_new(d, "image/png", dm_url(json_object_get(o, "url")));
                        json_array_append_new(displays, d);
                } else if (!strcmp(t, "result")) {
                        json_decref(result);
                        result = json_deep_copy(json_object_get(o, "data"));
                        if (json_object_get(o, "url") && json_object_get(result, "image/png"))
                                json_object_set_new(result, "image/png", dm_url(json_object_get(o, "url")));
                } else if (!strcmp(t, "error")) {
                        json_decref(error);
                        error = json_pack("{s:O,s:O,s:O}", "ename", json_object_get(o, "name"), "evalue",
                                          json_object_get(o, "value"), "traceback", json_object_get(o, "traceback"));
                }
        }
        if (json_is_null(error) && strcmp(json_string_value(json_object_get(res, "status")) ?: "", "ok")) {
                /* Not ok without a Python exception: timeout, or a dead interpreter. */
                json_decref(error);
                error = json_pack("{s:s,s:s,s:[]}", "ename", json_string_value(json_object_get(res, "status")) ?: "error",
                                  "evalue", json_string_value(json_object_get(res, "hint")) ?: "", "traceback");
        }
        o = json_pack("{s:b,s:o,s:o,s:s%,s:s%,s:o}", "success",
                      !strcmp(json_string_value(json_object_get(res, "status")) ?: "", "ok"), "execute_result", result,
                      "displays", displays, "stdout", out.data ? out.data : "", out.len, "stderr",
                      err.data ? err.data : "", err.len, "error", error);
        xb_buf_free(&out);
        xb_buf_free(&err);
        return o;
}

static json_t *
dm_shape(struct xb_req *r, const char *event, json_t *data)
{
        json_t *o;

        if (event)
                return data;
        data = cell_shape(r, NULL, data);
        o = dangermode_json(data);
        json_decref(data);
        return o;
}

static const struct xb_rest_decor dm_decor = { .shape = dm_shape };

static void
dm_run_cell(struct xb_req *r)
{
        static const char *const fields[] = { "code", NULL };
        struct xb_err err = { 0 };
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        _cleanup_(xb_json_decrefp) json_t *args = json_object();
        size_t len;
        const char *b = xb_req_body(r, &len), *code = NULL;

        if (xb_jsonv_parse(b, len, &body, &err) < 0 || xb_jsonv_fields(body, fields, &err) < 0 ||
            xb_jsonv_str(body, "code", CODE_MAX, &code, &err) < 0 || !code) {
                if (!err.msg[0])
                        xb_err_msg(&err, EINVAL, "`code` is required");
                xb_api_bad_request(r, &err, "send {\"code\": \"1+1\"}");
                return;
        }
        if (!args || !default_session(r, args))
                return;
        json_object_set_new(args, "code", json_string(code));
        xb_rest_run_decor(r, "run_code", args, 200, false, &dm_decor);
}

static void
dm_variable(struct xb_req *r)
{
        _cleanup_(xb_json_decrefp) json_t *args = json_object();
        const char *name = xb_req_param(r, 0);

        if (!xb_op_identifier(name)) {
                xb_reply_error(r, 400, "invalid_request", "use a variable name", "`%.64s` is not a variable name",
                               name ? name : "");
                return;
        }
        if (!args || !default_session(r, args))
                return;
        json_object_set_new(args, "name", json_string(name));
        xb_rest_run(r, "get_variable", args, 200, false);
}

static void
dm_image(struct xb_req *r)
{
        struct xb_sbx *x = xb_default_sandbox(r);

        if (x)
                serve_image(r, x, xb_req_param(r, 0));
}

const struct xb_route xb_api_routes_sessions[] = {
        { "POST", "/v1/sandboxes/{}/sessions", xb_rest_op_handler, 0, &create_route },
        { "GET", "/v1/sandboxes/{}/sessions", xb_rest_op_handler, 0, &list_route },
        { "GET", "/v1/sandboxes/{}/sessions/{}", xb_rest_op_handler, 0, &get_route },
        { "DELETE", "/v1/sandboxes/{}/sessions/{}", xb_rest_op_handler, 0, &delete_route },
        { "POST", "/v1/sandboxes/{}/sessions/{}/run", xb_rest_op_handler, 0, &run_route },
        { "POST", "/v1/sandboxes/{}/sessions/{}/wait", xb_rest_op_handler, 0, &wait_route },
        { "POST", "/v1/sandboxes/{}/sessions/{}/interrupt", xb_rest_op_handler, 0, &interrupt_route },
        { "POST", "/v1/sandboxes/{}/sessions/{}/restart", xb_rest_op_handler, 0, &restart_route },
        { "POST", "/v1/sandboxes/{}/sessions/{}/input", xb_rest_op_handler, 0, &input_route },
        { "GET", "/v1/sandboxes/{}/sessions/{}/variables/{}", xb_rest_op_handler, 0, &variable_route },
        { "GET", "/v1/sandboxes/{}/images/{}", get_image, XB_ROUTE_SIGNED, NULL },
        { "POST", "/api/run_cell", dm_run_cell, 0, NULL },
        { "GET", "/api/variable/{}", dm_variable, 0, NULL },
        { "GET", "/images/{}", dm_image, 0, NULL },
};
const size_t xb_api_nroutes_sessions = sizeof(xb_api_routes_sessions) / sizeof(xb_api_routes_sessions[0]);
