/* Pandora's plugin routes on the same server: POST /exec, POST /writeFile
 * and GET /getGuide. Each works on the caller's default sandbox (created on
 * first use) and runs the same operations as /v1 (ops/ops.h), answering
 * failures through REST's status table, so the plugin routes can never
 * behave differently from /v1. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "rest/rest.h"
#include "ops/catalog.h"
#include "ops/jsonv.h"
#include "ops/ops.h"
#include "rest/status.h"

#define COMMAND_MAX (256u << 10)
#define CONTENT_MAX (16u << 20)
#define GUIDE_HINT "read the guide first: GET /getGuide, then retry with guideFollowed: true"

/* One plugin request waiting on the operation it runs. */
struct chain {
        struct xb_req *outer;         /* NULL once its client left */
        struct xb_call *inner;        /* NULL once it ended */
        struct xb_core *core;
        int tenant;
        char *sandbox_id;
        char *path;
        char *content;
        bool append;
        char mode[8];
        void (*next)(struct chain *c, json_t *result, const struct xb_err *err);
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
        struct xb_call *inner = c->inner;

        (void)r;
        c->outer = NULL;
        c->inner = NULL;
        if (inner)
                xb_call_cancel(inner);   /* kills the command */
        chain_free(c);
}

static void
inner_end(struct chain *c, json_t *result, const struct xb_err *err)
{
        c->inner = NULL;
        c->next(c, result, err);
        json_decref(result);
}

static void
inner_done(void *ctx, json_t *result)
{
        inner_end(ctx, result, NULL);
}

static void
inner_fail(void *ctx, const struct xb_err *err)
{
        inner_end(ctx, NULL, err);
}

static const struct xb_sink_ops chain_sink = { .done = inner_done, .fail = inner_fail };

/* Run op on the chain's sandbox with args (taken); the outcome goes to next. */
static void
chain_op(struct chain *c, const char *name, json_t *args, void (*next)(struct chain *, json_t *, const struct xb_err *))
{
        const struct xb_op *op = xb_op_find(name);
        struct xb_call *call = op && args ? xb_call_new(&chain_sink, c, 0) : NULL;

        c->next = next;
        if (!call) {
                struct xb_err err = { .code = ENOMEM, .ecode = XB_E_NOMEM };

                snprintf(err.msg, sizeof(err.msg), "out of memory");
                json_decref(args);
                next(c, NULL, &err);
                return;
        }
        json_object_set_new(args, "id", json_string(c->sandbox_id));
        c->inner = call;
        xb_op_run(op, c->core, c->tenant, args, call);
        json_decref(args);
}

static struct chain *
chain_new(struct xb_req *r)
{
        struct xb_rest *s = xb_rest_of(r);
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
        c->core = s->core;
        c->tenant = xb_req_tenant(r);
        xb_req_suspend(r, outer_gone, c);
        return c;
}

/* A failure answers as REST would, with a pointer to the guide added. */
static void
pass_error(struct chain *c, const struct xb_err *err)
{
        const struct xb_rest_status *st = xb_rest_status(err->ecode);
        const char *hint = err->hint ? err->hint : st->hint;
        char h[700], msg[XB_REST_MSG_MAX];

        snprintf(h, sizeof(h), "%s%sthe guide explains: GET /getGuide", hint ? hint : "", hint ? "; " : "");
        xb_reply_error(c->outer, st->status, xb_ecode_name(err->ecode), h, "%s",
                       xb_rest_message(err, msg, sizeof(msg)));
}

/* ---- POST /exec {command, guideFollowed} ---- */

static void
exec_done(struct chain *c, json_t *reply, const struct xb_err *err)
{
        struct xb_req *r = c->outer;
        json_t *o;
        const char *st = json_string_value(json_object_get(reply, "status"));

        if (err) {
                pass_error(c, err);
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
        struct xb_rest *s = xb_rest_of(r);
        struct xb_err err = { 0 };
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        size_t len;
        const char *b = xb_req_body(r, &len), *cmd = NULL;
        bool guide = false;
        struct chain *c;

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
        if (s->require_guide && !guide) {
                xb_reply_error(r, 400, "guide_not_followed", GUIDE_HINT,
                               "this server wants the guide read before the first command");
                return;
        }
        if (!(c = chain_new(r)))
                return;
        chain_op(c, "run_command", json_pack("{s:s}", "cmd", cmd), exec_done);
}

/* ---- POST /writeFile {filePath, content, force, appendNewlineAtEOF, permissions} ---- */

static void
write_done(struct chain *c, json_t *reply, const struct xb_err *err)
{
        if (err) {
                pass_error(c, err);
        } else
                xb_reply_json(c->outer, 200, json_pack("{s:b,s:s,s:O,s:s}", "success", 1, "filePath", c->path, "size",
                                                       json_object_get(reply, "size") ?: json_null(), "sandbox_id",
                                                       c->sandbox_id));
        chain_free(c);
}

static void
write_now(struct chain *c)
{
        chain_op(c, "write_file", json_pack("{s:s,s:s,s:s,s:b}", "path", c->path, "content", c->content, "mode",
                                           c->mode, "append", c->append),
                 write_done);
}

static void
stat_done(struct chain *c, json_t *reply, const struct xb_err *err)
{
        (void)reply;
        if (!err) {
                xb_reply_error(c->outer, 409, "file_exists", "send \"force\": true to overwrite it, or pick another path",
                               "%s already exists", c->path);
                chain_free(c);
                return;
        }
        if (err->ecode != XB_E_FILE_NOT_FOUND) {
                pass_error(c, err);
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
        c->content[clen] = '\0';
        snprintf(c->mode, sizeof(c->mode), "%s", perm ? perm : "644");
        if (force)
                write_now(c);
        else
                chain_op(c, "stat_file", json_pack("{s:s}", "path", c->path), stat_done);
}

/* ---- GET /getGuide ---- */

static void
pandora_guide(struct xb_req *r)
{
        struct xb_rest *s = xb_rest_of(r);
        _cleanup_free_ char *g = xb_guide_render(&s->core->o.defaults);

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
