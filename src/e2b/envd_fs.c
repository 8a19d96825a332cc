/* envd's filesystem.Filesystem service over Connect JSON (Stat, ListDir,
 * MakeDir, Move, Remove), its HTTP GET /files (POST, the upload, is
 * envd_upload.c), /health and /metrics.
 * Entries are envd's EntryInfo. Paths are the engine's: relative ones are
 * below /home/user. Watching is envd_watch.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "core/core.h"
#include "core/files.h"
#include "e2b/connect.h"
#include "e2b/e2b_int.h"
#include "ops/op_files.h"
#include "ops/jsonv.h"

/* "-rw-r--r--" from the type and "0644". */
static void
perm_string(const char *type, unsigned mode, char out[11])
{
        static const char bits[] = "rwxrwxrwx";

        out[0] = !strcmp(type, "dir") ? 'd' : !strcmp(type, "symlink") ? 'L' : '-';
        for (int i = 0; i < 9; i++)
                out[1 + i] = mode & (1u << (8 - i)) ? bits[i] : '-';
        out[10] = '\0';
}

/* envd's EntryInfo from an engine entry. */
static json_t *
entry_info(json_t *en)
{
        const char *type = json_string_value(json_object_get(en, "type"));
        const char *mode_s = json_string_value(json_object_get(en, "mode"));
        unsigned mode = mode_s ? (unsigned)strtoul(mode_s, NULL, 8) : 0;
        json_t *mtime = json_object_get(en, "mtime"), *target = json_object_get(en, "target");
        char perms[11];
        json_t *o;

        if (!type)
                type = "file";
        perm_string(type, mode, perms);
        o = json_pack("{s:O,s:s,s:O,s:O,s:I,s:s,s:s,s:s}", "name", json_object_get(en, "name"), "type",
                      !strcmp(type, "dir") ? "FILE_TYPE_DIRECTORY" : !strcmp(type, "symlink") ? "FILE_TYPE_SYMLINK"
                                                                                             : "FILE_TYPE_FILE",
                      "path", json_object_get(en, "path"), "size", json_object_get(en, "size"), "mode",
                      (json_int_t)(mode | (!strcmp(type, "dir") ? 0x80000000u : 0) |
                                   (!strcmp(type, "symlink") ? 0x08000000u : 0)),
                      "permissions", perms, "owner", "user", "group", "user");
        if (!o)
                return json_object();
        if (json_is_string(mtime))
                json_object_set(o, "modifiedTime", mtime);
        if (json_is_string(target))
                json_object_set(o, "symlinkTarget", target);
        return o;
}

/* The checks every filesystem RPC makes: sandbox, token, user, body. */
static struct e2b_sbx *
fs_begin(struct xb_req *r, struct xb_e2b *e, json_t **msg)
{
        struct xb_sbx *x;
        struct e2b_sbx *s = e2b_front_sbx(r, e, true, &x);

        if (!s || !e2b_rpc_user(r) || !(*msg = e2b_rpc_body(r)))
                return NULL;
        return s;
}

static const char *
path_of(struct xb_req *r, json_t *msg, const char *field)
{
        const char *p = json_string_value(json_object_get(msg, field));

        if (!p || !*p) {
                e2b_rpc_error(r, "invalid_argument", "`%s` is required", field);
                return NULL;
        }
        return p;
}

static void
fs_fail(struct xb_req *r, const struct xb_err *err)
{
        e2b_rpc_fail(r, err);
}

/* Stat: {entry}. Also Move's and MakeDir's second step. */
static void
stat_done(struct xb_req *r, struct e2b_async *a, json_t *res, const struct xb_err *err)
{
        if (err)
                fs_fail(r, err);
        else
                e2b_rpc_reply(r, json_pack("{s:o}", "entry", entry_info(res)));
        json_decref(res);
        e2b_async_free(a);
}

static void
stat_path(struct e2b_async *a, const char *path)
{
        _cleanup_(xb_json_decrefp) json_t *args = json_pack("{s:s,s:s}", "id", a->id, "path", path);

        a->fn = stat_done;
        e2b_async_run(a, "stat_file", args, 0);
}

static void
fs_stat(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *msg = NULL;
        struct e2b_sbx *s = fs_begin(r, e, &msg);
        struct e2b_async *a;
        const char *p;

        if (!s || !(p = path_of(r, msg, "path")) || !(a = e2b_async_new(r, e, s->tenant, s->id, stat_done)))
                return;
        stat_path(a, p);
}

static void
list_done(struct xb_req *r, struct e2b_async *a, json_t *res, const struct xb_err *err)
{
        json_t *out, *en;
        size_t i;

        if (err) {
                fs_fail(r, err);
        } else {
                out = json_array();
                json_array_foreach(json_object_get(res, "entries"), i, en)
                        json_array_append_new(out, entry_info(en));
                e2b_rpc_reply(r, json_pack("{s:o}", "entries", out));
        }
        json_decref(res);
        e2b_async_free(a);
}

static void
fs_list(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *msg = NULL, *args = NULL;
        struct e2b_sbx *s = fs_begin(r, e, &msg);
        json_t *d;
        struct e2b_async *a;
        const char *p;
        json_int_t depth = 1;

        if (!s || !(p = path_of(r, msg, "path")))
                return;
        d = json_object_get(msg, "depth");
        if (json_is_integer(d) && json_integer_value(d) > 0)
                depth = json_integer_value(d) > XB_FILE_DEPTH_MAX ? XB_FILE_DEPTH_MAX : json_integer_value(d);
        if (!(a = e2b_async_new(r, e, s->tenant, s->id, list_done)))
                return;
        args = json_pack("{s:s,s:s,s:I}", "id", s->id, "path", p, "depth", depth);
        e2b_async_run(a, "list_files", args, 0);
}

static void
mkdir_done(struct xb_req *r, struct e2b_async *a, json_t *res, const struct xb_err *err)
{
        if (err) {
                fs_fail(r, err);
        } else if (!json_is_true(json_object_get(res, "created"))) {
                e2b_rpc_error(r, "already_exists", "directory %s already exists",
                              json_string_value(json_object_get(res, "path")));
        } else {
                const char *path = json_string_value(json_object_get(res, "path"));

                json_decref(a->aux);
                a->aux = json_string(path ? path : "");
                json_decref(res);
                stat_path(a, json_string_value(a->aux));
                return;
        }
        json_decref(res);
        e2b_async_free(a);
}

static void
fs_mkdir(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *msg = NULL, *args = NULL;
        struct e2b_sbx *s = fs_begin(r, e, &msg);
        struct e2b_async *a;
        const char *p;

        if (!s || !(p = path_of(r, msg, "path")) || !(a = e2b_async_new(r, e, s->tenant, s->id, mkdir_done)))
                return;
        args = json_pack("{s:s,s:s,s:b}", "id", s->id, "path", p, "parents", 1);
        e2b_async_run(a, "make_directory", args, 0);
}

static void
move_done(struct xb_req *r, struct e2b_async *a, json_t *res, const struct xb_err *err)
{
        json_decref(res);
        if (err) {
                fs_fail(r, err);
                e2b_async_free(a);
                return;
        }
        stat_path(a, json_string_value(a->aux));
}

static void
fs_move(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *msg = NULL, *args = NULL;
        struct e2b_sbx *s = fs_begin(r, e, &msg);
        struct e2b_async *a;
        const char *from, *to;

        if (!s || !(from = path_of(r, msg, "source")) || !(to = path_of(r, msg, "destination")) ||
            !(a = e2b_async_new(r, e, s->tenant, s->id, move_done)))
                return;
        a->aux = json_string(to);
        args = json_pack("{s:s,s:s,s:s,s:b}", "id", s->id, "from", from, "to", to, "overwrite", 1);
        e2b_async_run(a, "move_file", args, 0);
}

static void
remove_done(struct xb_req *r, struct e2b_async *a, json_t *res, const struct xb_err *err)
{
        json_decref(res);
        if (err)
                fs_fail(r, err);
        else
                e2b_rpc_reply(r, NULL);
        e2b_async_free(a);
}

static void
fs_remove(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *msg = NULL, *args = NULL;
        struct e2b_sbx *s = fs_begin(r, e, &msg);
        struct e2b_async *a;
        const char *p;

        if (!s || !(p = path_of(r, msg, "path")) || !(a = e2b_async_new(r, e, s->tenant, s->id, remove_done)))
                return;
        args = json_pack("{s:s,s:s,s:b}", "id", s->id, "path", p, "recursive", 1);
        e2b_async_run(a, "delete_file", args, 0);
}

/* ---- /files ---- */

void
e2b_files_error(struct xb_req *r, const struct xb_err *err)
{
        const char *code = xb_connect_code_ec(err);
        unsigned status = !strcmp(code, "not_found") ? 404 : !strcmp(code, "invalid_argument") ? 400
                          : !strcmp(code, "permission_denied") ? 403 : !strcmp(code, "already_exists") ? 409
                          : err->ecode == XB_E_DISK_FULL ? 507 : err->ecode == XB_E_UPLOAD_TOO_LARGE ? 413
                          : !strcmp(code, "failed_precondition") ? 400 : 500;

        xb_reply_json(r, status, json_pack("{s:s,s:i}", "message", err->msg, "code", (int)status));
}

/* A download: init opens the file, the reply sends it from the fd. */
struct download {
        struct e2b_sink sink;
        struct xb_req *req;
        struct xb_file_span span;
        bool inside;                 /* still in files_get */
};

static void
download_done(struct e2b_sink *s, json_t *res, const struct xb_err *err)
{
        struct download *d = (struct download *)s;

        json_decref(res);
        if (err)
                e2b_files_error(d->req, err);
        else
                xb_reply_fd(d->req, 200, "application/octet-stream", d->span.fd, 0, d->span.size, NULL);
        if (!d->inside)
                free(d);
}

static void
download_gone(struct xb_req *r, void *owner)
{
        struct download *d = owner;

        (void)r;
        xb_call_cancel(d->sink.call);
        free(d);
}

static void
files_get(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *args = NULL;
        const char *path = xb_req_query(r, "path", NULL);
        struct xb_file_range rg = { .kind = XB_RANGE_NONE };
        struct xb_err err = { 0 };
        struct xb_file_req q;
        struct xb_sbx *x;
        struct e2b_sbx *s = e2b_front_sbx(r, e, true, &x);
        struct download *d;
        char *p = NULL;

        if (!s || !e2b_rpc_user(r))
                return;
        if (!path || !*path) {
                xb_reply_json(r, 400, json_pack("{s:s,s:i}", "message", "the `path` query parameter is required", "code", 400));
                return;
        }
        args = json_pack("{s:s,s:s}", "id", s->id, "path", path);
        if (!(x = xb_opfile_sandbox(e->core, s->tenant, args, &err)) || xb_opfile_read_args(args, &q, &p, &err) < 0) {
                e2b_files_error(r, &err);
                return;
        }
        d = calloc(1, sizeof(*d));
        if (!d || !e2b_call_new(&d->sink, 0)) {
                free(d);
                free(p);
                xb_reply_json(r, 503, json_pack("{s:s,s:i}", "message", "out of memory", "code", 503));
                return;
        }
        d->sink.done = download_done;
        d->req = r;
        d->inside = true;
        xb_fileop_open_read(x, &q, p, &rg, &d->span, d->sink.call);
        d->inside = false;
        if (!d->sink.call) {
                free(d);   /* answered already */
                return;
        }
        xb_req_suspend(r, download_gone, d);
}

static void
health(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        const char *id = xb_req_param(r, 0);
        struct xb_sbx *x;

        /* envd's /health needs no token: only whether it runs. */
        if (!e2b_sbx_find(e, id, -1) || !(x = e2b_engine_sbx(e, id)) || x->paused) {
                xb_reply_json(r, 502, json_pack("{s:s,s:s,s:i}", "sandboxId", strlen(id) < 64 ? id : "", "message",
                                                "The sandbox is not running",
                                                "code", 502));
                return;
        }
        xb_reply_empty(r, 204);
}

/* envd's /metrics: the sandbox's cgroup now (its disk is not sampled). */
static void
metrics(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        struct e2b_metrics m;
        struct xb_sbx *x;
        struct e2b_sbx *s = e2b_front_sbx(r, e, true, &x);

        if (!s)
                return;
        e2b_metrics(s, x, &m);
        xb_reply_json(r, 200, json_pack("{s:I,s:i,s:f,s:I,s:I,s:I,s:I}", "ts", (json_int_t)(m.unix_ms / 1000),
                                        "cpu_count", (int)m.cpu_count, "cpu_used_pct", m.cpu_pct, "mem_total",
                                        (json_int_t)m.mem_total, "mem_used", (json_int_t)m.mem_used,
                                        "mem_total_mib", (json_int_t)(m.mem_total >> 20), "mem_used_mib",
                                        (json_int_t)(m.mem_used >> 20)));
}

#define FS(m, fn) { "POST", E2B_ENVD_PREFIX "/filesystem.Filesystem/" m, fn, XB_ROUTE_PUBLIC | XB_ROUTE_HIDDEN, NULL }
const struct xb_route e2b_envd_fs_routes[] = {
        FS("Stat", fs_stat),
        FS("ListDir", fs_list),
        FS("MakeDir", fs_mkdir),
        FS("Move", fs_move),
        FS("Remove", fs_remove),
        { "GET", E2B_ENVD_PREFIX "/files", files_get, XB_ROUTE_PUBLIC | XB_ROUTE_HIDDEN, NULL },
        { "POST", E2B_ENVD_PREFIX "/files", e2b_files_post, XB_ROUTE_PUBLIC | XB_ROUTE_HIDDEN | XB_ROUTE_ANYTYPE | XB_ROUTE_SINK,
          NULL },
        { "GET", E2B_ENVD_PREFIX "/health", health, XB_ROUTE_PUBLIC | XB_ROUTE_HIDDEN, NULL },
        { "GET", E2B_ENVD_PREFIX "/metrics", metrics, XB_ROUTE_PUBLIC | XB_ROUTE_HIDDEN, NULL },
};
const size_t e2b_envd_fs_nroutes = sizeof(e2b_envd_fs_routes) / sizeof(e2b_envd_fs_routes[0]);
