/* envd's filesystem.Filesystem service over Connect JSON (Stat, ListDir,
 * MakeDir, Move, Remove), its HTTP /files (download; upload as multipart
 * with one part per file, or as the raw body), /health and /metrics.
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

#define PARTS_MAX 1000

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

static void
files_error(struct xb_req *r, const struct xb_err *err)
{
        const char *code = xb_connect_code_ec(err);
        unsigned status = !strcmp(code, "not_found") ? 404 : !strcmp(code, "invalid_argument") ? 400
                          : !strcmp(code, "permission_denied") ? 403 : !strcmp(code, "already_exists") ? 409
                          : err->ecode == XB_E_DISK_FULL ? 507 : !strcmp(code, "failed_precondition") ? 400 : 500;

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
                files_error(d->req, err);
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
                files_error(r, &err);
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

/* One file of an upload: where, and the bytes (pointers into the body). */
struct part {
        char *path;
        const char *data;
        size_t len;
};

/* The value of name="..." in a Content-Disposition line, or NULL. */
static char *
disp_param(const char *line, size_t n, const char *name)
{
        size_t k = strlen(name);

        for (size_t i = 0; i + k + 2 < n; i++)
                if ((i == 0 || line[i - 1] == ' ' || line[i - 1] == ';') && !strncasecmp(line + i, name, k) &&
                    line[i + k] == '=' && line[i + k + 1] == '"') {
                        const char *v = line + i + k + 2, *end = memchr(v, '"', n - (size_t)(v - line));

                        return end ? strndup(v, (size_t)(end - v)) : NULL;
                }
        return NULL;
}

/* Split a multipart/form-data body by boundary; -EINVAL if malformed. */
static int
parse_multipart(const char *body, size_t n, const char *boundary, struct part *parts, size_t *nparts)
{
        _cleanup_free_ char *delim = NULL;
        size_t dlen, off;
        const char *p;

        if (asprintf(&delim, "--%s", boundary) < 0)
                return -ENOMEM;
        dlen = strlen(delim);
        p = memmem(body, n, delim, dlen);
        if (!p)
                return -EINVAL;
        off = (size_t)(p - body) + dlen;
        *nparts = 0;
        while (off + 2 <= n && strncmp(body + off, "--", 2)) {
                const char *hdr = body + off + 2, *hend, *next;
                char *name = NULL, *file = NULL;
                size_t hn, clen;

                if (strncmp(body + off, "\r\n", 2))
                        return -EINVAL;
                hend = memmem(hdr, n - (size_t)(hdr - body), "\r\n\r\n", 4);
                if (!hend)
                        return -EINVAL;
                hn = (size_t)(hend - hdr);
                for (const char *l = hdr; l < hend;) {
                        const char *le = memmem(l, (size_t)(hend - l), "\r\n", 2);
                        size_t ln = le ? (size_t)(le - l) : (size_t)(hend - l);

                        if (ln > 20 && !strncasecmp(l, "Content-Disposition:", 20)) {
                                free(name);
                                free(file);
                                name = disp_param(l, ln, "name");
                                file = disp_param(l, ln, "filename");
                        }
                        l += ln + 2;
                }
                (void)hn;
                next = memmem(hend + 4, n - (size_t)(hend + 4 - body), delim, dlen);
                if (!next || next < hend + 4 + 2) {
                        free(name);
                        free(file);
                        return -EINVAL;
                }
                clen = (size_t)(next - (hend + 4)) - 2;   /* the CRLF before the delimiter */
                if (*nparts == PARTS_MAX) {
                        free(name);
                        free(file);
                        return -E2BIG;
                }
                free(name);
                parts[*nparts] = (struct part){ .path = file, .data = hend + 4, .len = clen };
                (*nparts)++;
                off = (size_t)(next - body) + dlen;
        }
        return 0;
}

struct upload {
        struct part *parts;
        size_t n, next;
        char *dir;                   /* ?path= when the parts name only files */
        json_t *written;
};

static void
upload_free(struct upload *u)
{
        for (size_t i = 0; i < u->n; i++)
                free(u->parts[i].path);
        free(u->parts);
        free(u->dir);
        json_decref(u->written);
        free(u);
}

static void upload_next(struct xb_req *r, struct e2b_async *a);

static void
upload_done(struct xb_req *r, struct e2b_async *a, json_t *res, const struct xb_err *err)
{
        struct upload *u = a->user;

        if (err) {
                json_decref(res);
                files_error(r, err);
                upload_free(u);
                e2b_async_free(a);
                return;
        }
        {
                const char *path = json_string_value(json_object_get(res, "path"));
                const char *slash = path ? strrchr(path, '/') : NULL;

                json_array_append_new(u->written, json_pack("{s:s,s:s,s:s}", "name", slash ? slash + 1 : path ? path : "",
                                                            "type", "file", "path", path ? path : ""));
        }
        json_decref(res);
        upload_next(r, a);
}

static void
upload_next(struct xb_req *r, struct e2b_async *a)
{
        struct upload *u = a->user;
        _cleanup_(xb_json_decrefp) json_t *args = NULL;
        _cleanup_free_ char *b64 = NULL, *path = NULL;
        struct part *p;

        if (u->next == u->n) {
                xb_reply_json(r, 200, json_incref(u->written));
                upload_free(u);
                e2b_async_free(a);
                return;
        }
        p = &u->parts[u->next++];
        /* ?path= names the file when there is one part; else each part's filename does. */
        if (u->dir && u->n == 1)
                path = strdup(u->dir);
        else if (p->path && *p->path)
                path = strdup(p->path);
        if (!path || xb_base64_encode_alloc(p->data, p->len, &b64) < 0) {
                xb_reply_json(r, 400, json_pack("{s:s,s:i}", "message", path ? "out of memory"
                                                : "each file needs a path: the part's filename or ?path=", "code", 400));
                upload_free(u);
                e2b_async_free(a);
                return;
        }
        args = json_pack("{s:s,s:s,s:s,s:s}", "id", a->id, "path", path, "content", b64, "encoding", "base64");
        a->fn = upload_done;
        e2b_async_run(a, "write_file", args, 0);
}

/* An octet-stream upload (one file, ?path=): its body streams into the
 * file through the sandbox's writer (core/files.h), never held whole. */
struct stream_up {
        struct e2b_sink sink;
        struct xb_req *req;
        struct xb_upload *up;
        bool inside;                 /* still in the handler */
        bool failed;                 /* answered at the open */
};

static void
stream_opened(struct e2b_sink *s, json_t *res, const struct xb_err *err)
{
        struct stream_up *t = (struct stream_up *)s;

        json_decref(res);
        t->sink.call = NULL;
        if (err) {
                files_error(t->req, err);
                t->failed = true;
                xb_req_set_data(t->req, NULL);
                if (!t->inside)
                        free(t);
                return;
        }
        xb_req_set_sink(t->req, xb_upload_fd(t->up));
        xb_req_resume(t->req);
}

static void
stream_gone(struct xb_req *r, void *owner)
{
        struct stream_up *t = owner;

        (void)r;
        xb_req_set_data(r, NULL);
        if (t->sink.call)
                xb_call_cancel(t->sink.call);
        if (t->up)
                xb_upload_abort(t->up);
        free(t);
}

static void
stream_end(struct xb_req *r, struct stream_up *t)
{
        struct xb_err err = { 0 };
        json_t *res;

        xb_req_set_data(r, NULL);
        if (!t->up) {
                xb_reply_json(r, 500, json_pack("{s:s,s:i}", "message", "the upload lost its file", "code", 500));
        } else if ((res = xb_upload_end(TAKE_PTR(t->up), xb_req_sink_bytes(r), xb_req_sink_error(r), &err))) {
                const char *path = json_string_value(json_object_get(res, "path")) ?: "";
                const char *slash = strrchr(path, '/');

                xb_reply_json(r, 200, json_pack("[{s:s,s:s,s:s}]", "name", slash ? slash + 1 : path, "type", "file",
                                                "path", path));
                json_decref(res);
        } else
                files_error(r, &err);
        free(t);
}

/* Phase BEGIN of an octet-stream upload: open the file, then take the body. */
static void
stream_begin(struct xb_req *r, struct xb_e2b *e, struct e2b_sbx *s, const char *qpath)
{
        _cleanup_(xb_json_decrefp) json_t *args = json_pack("{s:s,s:s}", "id", s->id, "path", qpath);
        struct xb_err err = { 0 };
        struct xb_file_req q;
        struct stream_up *t;
        struct xb_sbx *x;
        char *p = NULL;

        if (!(x = xb_opfile_sandbox(e->core, s->tenant, args, &err)) || xb_opfile_write_args(args, &q, &p, &err) < 0) {
                files_error(r, &err);
                return;
        }
        t = calloc(1, sizeof(*t));
        if (!t || !e2b_call_new(&t->sink, 0)) {
                free(t);
                free(p);
                xb_reply_json(r, 503, json_pack("{s:s,s:i}", "message", "out of memory", "code", 503));
                return;
        }
        t->sink.done = stream_opened;
        t->req = r;
        t->inside = true;
        xb_req_set_data(r, t);
        xb_fileop_open_upload(x, &q, p, &t->up, t->sink.call);
        t->inside = false;
        if (t->failed) {
                free(t);   /* answered already */
                return;
        }
        if (t->sink.call)
                xb_req_suspend(r, stream_gone, t);
}

static void
files_post(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        const char *ctype = xb_req_header(r, "Content-Type"), *qpath = xb_req_query(r, "path", NULL), *bnd;
        bool multipart = ctype && !strncasecmp(ctype, "multipart/form-data", 19);
        struct xb_sbx *x;
        struct e2b_sbx *s;
        struct upload *u;
        struct e2b_async *a;
        size_t n = 0;
        const char *body;
        int rc = 0;

        if (xb_req_phase(r) == XB_PHASE_END && xb_req_data(r)) {
                stream_end(r, xb_req_data(r));
                return;
        }
        if (!(s = e2b_front_sbx(r, e, true, &x)) || !e2b_rpc_user(r))
                return;
        if (xb_req_header(r, "Content-Encoding")) {
                xb_reply_json(r, 400, json_pack("{s:s,s:i}", "message", "compressed uploads are not supported", "code", 400));
                return;
        }
        if (xb_req_phase(r) == XB_PHASE_BEGIN) {
                /* Multipart is parsed whole (up to the body limit); a raw body streams. */
                if (multipart || !qpath || !*qpath)
                        xb_req_buffer_body(r);
                else
                        stream_begin(r, e, s, qpath);
                return;
        }
        body = xb_req_body(r, &n);
        u = calloc(1, sizeof(*u));
        if (u)
                u->parts = calloc(PARTS_MAX, sizeof(*u->parts));
        if (!u || !u->parts || !(u->written = json_array())) {
                if (u)
                        upload_free(u);
                xb_reply_json(r, 503, json_pack("{s:s,s:i}", "message", "out of memory", "code", 503));
                return;
        }
        u->dir = qpath && *qpath ? strdup(qpath) : NULL;
        if (multipart && (bnd = strstr(ctype, "boundary="))) {
                _cleanup_free_ char *b = strdup(bnd + 9);

                if (b && b[0] == '"') {
                        memmove(b, b + 1, strlen(b));
                        b[strcspn(b, "\"")] = '\0';
                }
                b[strcspn(b, "; ")] = '\0';
                rc = parse_multipart(body ? body : "", n, b, u->parts, &u->n);
        } else {
                u->parts[0] = (struct part){ .data = body ? body : "", .len = n };
                u->n = 1;
                if (!u->dir)
                        rc = -EINVAL;
        }
        if (rc < 0 || !u->n) {
                xb_reply_json(r, 400, json_pack("{s:s,s:i}", "message", rc == -E2BIG ? "too many files in one upload"
                                                : "the upload is not multipart/form-data with files, nor a body with ?path=",
                                                "code", 400));
                upload_free(u);
                return;
        }
        a = e2b_async_new(r, e, s->tenant, s->id, upload_done);
        if (!a) {
                upload_free(u);
                return;
        }
        a->user = u;
        upload_next(r, a);
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
        { "POST", E2B_ENVD_PREFIX "/files", files_post, XB_ROUTE_PUBLIC | XB_ROUTE_HIDDEN | XB_ROUTE_ANYTYPE | XB_ROUTE_SINK,
          NULL },
        { "GET", E2B_ENVD_PREFIX "/health", health, XB_ROUTE_PUBLIC | XB_ROUTE_HIDDEN, NULL },
        { "GET", E2B_ENVD_PREFIX "/metrics", metrics, XB_ROUTE_PUBLIC | XB_ROUTE_HIDDEN, NULL },
};
const size_t e2b_envd_fs_nroutes = sizeof(e2b_envd_fs_routes) / sizeof(e2b_envd_fs_routes[0]);
