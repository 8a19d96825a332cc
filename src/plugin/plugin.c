/* Pandora's plugin routes on the same server: POST /exec, POST /writeFile
 * and GET /getGuide. Each works on the caller's default sandbox (created on
 * first use) and is built on the REST API itself: the handler injects the
 * REST request (http.h, xb_http_inject) and reshapes its reply, so the
 * plugin routes can never behave differently from /v1. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "ops/catalog.h"
#include "ops/jsonv.h"
#include "core/core.h"

#define COMMAND_MAX (256u << 10)
#define CONTENT_MAX (16u << 20)
#define GUIDE_HINT "read the guide first: GET /getGuide, then retry with guideFollowed: true"

/* One plugin request waiting on the REST request it injected. */
struct chain {
        struct xb_req *outer;         /* NULL once its client left */
        struct xb_req *inner;         /* NULL once it replied */
        struct xb_server *srv;
        char *sandbox_id;
        char *path;
        char *content;
        size_t content_len;
        char mode[8];
        bool append;
        void (*next)(struct chain *c, unsigned status, json_t *reply);
};

static void
chain_free(struct chain *c)
{
        free(c->sandbox_id);
        free(c->path);
        free(c->content);
        free(c);
}

static void
outer_gone(struct xb_req *r, void *owner)
{
        struct chain *c = owner;

        (void)r;
        c->outer = NULL;
        if (c->inner)
                xb_req_cancel(c->inner);   /* kills the command */
}

static void
inner_reply(void *ctx, unsigned status, const char *ctype, const void *data, size_t len)
{
        struct chain *c = ctx;
        json_t *j = NULL;

        (void)ctype;
        c->inner = NULL;
        if (len)
                j = json_loadb(data, len, 0, NULL);
        if (!c->outer) {
                json_decref(j);
                chain_free(c);
                return;
        }
        c->next(c, status, j);
        json_decref(j);
}

static const struct xb_vreply_ops chain_ops = { .reply = inner_reply, .event = NULL };

/* Inject method path?query with body (a reference it takes); the reply goes to c->next. */
static void
chain_call(struct chain *c, const char *method, const char *path, const char *const *query, json_t *body,
           const void *raw, size_t raw_len)
{
        char *b = body ? json_dumps(body, JSON_COMPACT) : NULL;
        struct xb_vreq v = {
                .method = method, .path = path, .query = query,
                .headers = (const char *const[]){ NULL },
                .body = b ? b : raw, .body_len = b ? strlen(b) : raw_len,
                .tenant = xb_req_tenant(c->outer),
        };

        c->inner = xb_http_inject(c->srv->http, &v, &chain_ops, c);
        free(b);
        json_decref(body);
}

static struct chain *
chain_new(struct xb_req *r)
{
        struct xb_server *s = xb_req_app(r);
        struct xb_sbx *x = xb_default_sandbox(r);
        struct chain *c;

        if (!x)
                return NULL;
        c = calloc(1, sizeof(*c));
        if (!c || !(c->sandbox_id = strdup(x->id))) {
                free(c);
                xb_reply_error(r, 503, "out_of_memory", "retry", "out of memory");
                return NULL;
        }
        c->outer = r;
        c->srv = s;
        xb_req_suspend(r, outer_gone, c);
        return c;
}

/* A REST error passes through with a pointer to the guide added. */
static void
pass_error(struct chain *c, unsigned status, json_t *reply)
{
        json_t *e = json_object_get(reply, "error");
        const char *hint = json_string_value(json_object_get(e, "hint"));
        char h[700];

        snprintf(h, sizeof(h), "%s%sthe guide explains: GET /getGuide", hint ? hint : "", hint ? "; " : "");
        xb_reply_error(c->outer, status ? status : 500, json_string_value(json_object_get(e, "code")) ?: "error", h,
                       "%s", json_string_value(json_object_get(e, "message")) ?: "the operation failed");
}

/* ---- POST /exec {command, guideFollowed} ---- */

static void
exec_done(struct chain *c, unsigned status, json_t *reply)
{
        struct xb_req *r = c->outer;
        json_t *o;
        const char *st = json_string_value(json_object_get(reply, "status"));

        if (status != 200 || !reply) {
                pass_error(c, status, reply);
                chain_free(c);
                return;
        }
        o = json_pack("{s:O,s:O,s:O,s:O,s:O,s:s}", "status", json_object_get(reply, "status"), "exit_code",
                      json_object_get(reply, "exit_code"), "stdout", json_object_get(reply, "stdout"), "stderr",
                      json_object_get(reply, "stderr"), "duration_ms", json_object_get(reply, "duration_ms"),
                      "sandbox_id", c->sandbox_id);
        /* Pandora: a failed command points the model at the guide. */
        if (st && strcmp(st, "ok"))
                json_object_set_new(o, "hint", json_string("the command did not succeed; check stderr, and " GUIDE_HINT));
        xb_reply_json(r, 200, o);
        chain_free(c);
}

static void
pandora_exec(struct xb_req *r)
{
        static const char *const fields[] = { "command", "guideFollowed", NULL };
        struct xb_server *s = xb_req_app(r);
        struct xb_err err = { 0 };
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        size_t len;
        const char *b = xb_req_body(r, &len), *cmd = NULL;
        bool guide = false;
        struct chain *c;
        char path[96];

        if (xb_jsonv_parse(b, len, &body, &err) < 0 || xb_jsonv_fields(body, fields, &err) < 0 ||
            xb_jsonv_str(body, "command", COMMAND_MAX, &cmd, &err) < 0 ||
            xb_jsonv_bool(body, "guideFollowed", &guide, &err) < 0) {
                xb_api_bad_request(r, &err, "send {\"command\": \"ls -la\", \"guideFollowed\": true}");
                return;
        }
        if (!cmd || !*cmd) {
                xb_reply_error(r, 400, "invalid_request", "send {\"command\": \"ls -la\", \"guideFollowed\": true}",
                               "`command` is required");
                return;
        }
        if (s->o.require_guide && !guide) {
                xb_reply_error(r, 400, "guide_not_followed", GUIDE_HINT,
                               "this server wants the guide read before the first command");
                return;
        }
        if (!(c = chain_new(r)))
                return;
        c->next = exec_done;
        snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", c->sandbox_id);
        chain_call(c, "POST", path, NULL, json_pack("{s:s}", "cmd", cmd), NULL, 0);
}

/* ---- POST /writeFile {filePath, content, force, appendNewlineAtEOF, permissions} ---- */

static void
write_done(struct chain *c, unsigned status, json_t *reply)
{
        if (status != 200 && status != 201) {
                pass_error(c, status, reply);
        } else
                xb_reply_json(c->outer, 200, json_pack("{s:b,s:s,s:O,s:s}", "success", 1, "filePath", c->path, "size",
                                                       json_object_get(reply, "size") ?: json_null(), "sandbox_id",
                                                       c->sandbox_id));
        chain_free(c);
}

static void
write_now(struct chain *c)
{
        char path[96];
        const char *query[] = { "path", c->path, "mode", c->mode, NULL, NULL, NULL };

        if (c->append) {
                query[4] = "append";
                query[5] = "true";
        }
        c->next = write_done;
        snprintf(path, sizeof(path), "/v1/sandboxes/%s/files", c->sandbox_id);
        chain_call(c, "PUT", path, query, NULL, c->content, c->content_len);
}

static void
stat_done(struct chain *c, unsigned status, json_t *reply)
{
        (void)reply;
        if (status == 200) {
                xb_reply_error(c->outer, 409, "file_exists", "send \"force\": true to overwrite it, or pick another path",
                               "%s already exists", c->path);
                chain_free(c);
                return;
        }
        if (status != 404) {
                pass_error(c, status, reply);
                chain_free(c);
                return;
        }
        write_now(c);
}

static void
pandora_write(struct xb_req *r)
{
        static const char *const fields[] = { "filePath", "content", "force", "appendNewlineAtEOF", "permissions", NULL };
        struct xb_err err = { 0 };
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        size_t len;
        const char *b = xb_req_body(r, &len), *path = NULL, *content = NULL, *perm = NULL;
        bool force = false, newline = true;
        struct chain *c;
        size_t clen;

        if (xb_jsonv_parse(b, len, &body, &err) < 0 || xb_jsonv_fields(body, fields, &err) < 0 ||
            xb_jsonv_str(body, "filePath", 4096, &path, &err) < 0 ||
            xb_jsonv_str(body, "content", CONTENT_MAX, &content, &err) < 0 || xb_jsonv_bool(body, "force", &force, &err) < 0 ||
            xb_jsonv_bool(body, "appendNewlineAtEOF", &newline, &err) < 0 ||
            xb_jsonv_str(body, "permissions", 8, &perm, &err) < 0) {
                xb_api_bad_request(r, &err, "send {\"filePath\": \"app.py\", \"content\": \"print(1)\"}");
                return;
        }
        if (!path || !*path || !content) {
                xb_reply_error(r, 400, "invalid_request", "send {\"filePath\": \"app.py\", \"content\": \"print(1)\"}",
                               "`filePath` and `content` are required");
                return;
        }
        if (perm && (strlen(perm) < 3 || strspn(perm, "01234567") != strlen(perm))) {
                xb_reply_error(r, 400, "invalid_request", "give permissions in octal, e.g. \"755\"",
                               "`permissions` must be octal digits");
                return;
        }
        if (!(c = chain_new(r)))
                return;
        clen = strlen(content);
        c->path = strdup(path);
        c->content = malloc(clen + 2);
        if (!c->path || !c->content) {
                c->outer = NULL;
                xb_reply_error(r, 503, "out_of_memory", "retry", "out of memory");
                chain_free(c);
                return;
        }
        memcpy(c->content, content, clen);
        if (newline && (clen == 0 || content[clen - 1] != '\n'))
                c->content[clen++] = '\n';
        c->content_len = clen;
        snprintf(c->mode, sizeof(c->mode), "%s", perm ? perm : "644");
        if (force)
                write_now(c);
        else {
                char p[96];
                const char *query[] = { "path", c->path, NULL, NULL };

                c->next = stat_done;
                snprintf(p, sizeof(p), "/v1/sandboxes/%s/files/stat", c->sandbox_id);
                chain_call(c, "GET", p, query, NULL, NULL, 0);
        }
}

/* ---- GET /getGuide ---- */

static void
pandora_guide(struct xb_req *r)
{
        struct xb_server *s = xb_req_app(r);
        _cleanup_free_ char *g = xb_guide_render(&s->o.defaults);

        if (!g) {
                xb_reply_error(r, 503, "out_of_memory", "retry", "out of memory");
                return;
        }
        if (xb_req_accepts(r, "application/json"))
                xb_reply_json(r, 200, json_pack("{s:s}", "guide", g));
        else
                xb_reply_bytes(r, 200, "text/markdown; charset=utf-8", g, strlen(g));
}

const struct xb_route xb_api_routes_plugin[] = {
        { "POST", "/exec", pandora_exec, 0 },
        { "POST", "/writeFile", pandora_write, 0 },
        { "GET", "/getGuide", pandora_guide, XB_ROUTE_PUBLIC },
};
const size_t xb_api_nroutes_plugin = sizeof(xb_api_routes_plugin) / sizeof(xb_api_routes_plugin[0]);
