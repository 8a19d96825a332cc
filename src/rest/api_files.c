/* REST routes of the file API. stat, list, mkdir, move and delete run
 * their operation (ops/op_files.c) with arguments from the query or the
 * body. GET and PUT .../files are fast paths that never copy the file
 * through JSON: GET sends the fd init opened, with Range; PUT streams the
 * body into it (core/files.h). Their arguments go through the same checks
 * as the operations'. A PUT with `Content-Encoding: gzip` is decoded by
 * the sandbox's writer as it streams (core/files.h); another coding is 415. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/files.h"
#include "ops/jsonv.h"
#include "ops/op_files.h"
#include "rest/call.h"
#include "rest/rest.h"
#include "rest/status.h"

#define CTYPE_BYTES "application/octet-stream"

/* ---- arguments ---- */

/* A JSON string of a request's bytes, which need not be UTF-8 (a path
 * can be anything but NUL): it only carries them to the operation. */
static json_t *
raw_json(const char *s)
{
        return json_stringn_nocheck(s, strlen(s));
}

/* The sandbox id and the named query parameters as an operation's
 * arguments. A value holding a NUL byte is passed as "\0", which the
 * operation refuses with the message for that parameter. */
static json_t *
query_args(struct xb_req *r, const char *const *names)
{
        json_t *args = json_object();
        const char *id = xb_req_param(r, 0);

        if (!args)
                return NULL;
        json_object_set_new(args, "id", raw_json(id ? id : ""));
        for (; *names; names++) {
                int qerr;
                const char *v = xb_req_query(r, *names, &qerr);

                if (qerr < 0)
                        json_object_set_new(args, *names, json_stringn_nocheck("", 1));
                else if (v)
                        json_object_set_new(args, *names, raw_json(v));
        }
        return args;
}

static void
reply_nomem(struct xb_req *r)
{
        xb_reply_error(r, 503, "out_of_memory", "retry", "out of memory");
}

/* Range: bytes=a-b, a- and -n; anything else (several ranges, other
 * units, bad syntax) is ignored and the whole file is sent (RFC 9110 14.2). */
static bool
digits(const char **p, uint64_t *v)
{
        uint64_t n = 0;
        const char *s = *p;

        if (*s < '0' || *s > '9')
                return false;
        for (; *s >= '0' && *s <= '9'; s++) {
                if (n > (UINT64_MAX - 9) / 10)
                        return false;
                n = n * 10 + (uint64_t)(*s - '0');
        }
        *p = s;
        *v = n;
        return true;
}

static void
parse_range(const char *h, struct xb_file_range *rg)
{
        struct xb_file_range r = { XB_RANGE_NONE, 0, 0 };

        rg->kind = XB_RANGE_NONE;
        if (!h || strncmp(h, "bytes=", 6) != 0)
                return;
        h += 6;
        while (*h == ' ')
                h++;
        if (*h == '-') {
                h++;
                if (!digits(&h, &r.b))
                        return;
                r.kind = XB_RANGE_SUFFIX;
        } else {
                if (!digits(&h, &r.a) || *h++ != '-')
                        return;
                r.kind = XB_RANGE_FROM;
                if (*h >= '0' && *h <= '9') {
                        if (!digits(&h, &r.b) || r.b < r.a)
                                return;
                        r.kind = XB_RANGE_FROM_TO;
                }
        }
        while (*h == ' ')
                h++;
        if (*h == '\0')
                *rg = r;
}

/* ---- fast paths: GET and PUT .../files ---- */

/* A GET or PUT waiting on init, then (PUT) on its body. */
struct transfer {
        struct xb_req *req;
        struct xb_call *call;         /* until init answered */
        bool inside;                  /* the handler still runs: it frees */
        struct xb_file_span span;     /* GET */
        struct xb_upload *up;         /* PUT, once the file is open */
};

static struct transfer *
transfer_new(struct xb_req *r, const struct xb_sink_ops *ops)
{
        struct transfer *t = calloc(1, sizeof(*t));

        if (t && !(t->call = xb_call_new(ops, t, 0))) {
                free(t);
                t = NULL;
        }
        if (t) {
                t->req = r;
                t->inside = true;
                t->span.fd = -1;
        }
        return t;
}

/* The client left: cancel what waits on init, cut back a half upload. */
static void
transfer_gone(struct xb_req *r, void *owner)
{
        struct transfer *t = owner;

        (void)r;
        if (t->call)
                xb_call_cancel(t->call);
        if (t->up)
                xb_upload_abort(t->up);
        free(t);
}

/* The call has ended (after the reply to a failure, or GET's file). */
static void
transfer_end(struct transfer *t)
{
        t->call = NULL;
        if (!t->inside)
                free(t);
}

/* After starting the call: wait for init, unless it has answered already. */
static void
transfer_wait(struct transfer *t)
{
        t->inside = false;
        if (!t->call) {
                xb_req_set_data(t->req, NULL);
                free(t);
                return;
        }
        xb_req_suspend(t->req, transfer_gone, t);
}

static void
transfer_fail(void *ctx, const struct xb_err *err)
{
        struct transfer *t = ctx;
        char cr[48];

        if (err->ecode == XB_E_RANGE_NOT_SATISFIABLE) {
                snprintf(cr, sizeof(cr), "bytes */%llu", (unsigned long long)t->span.size);
                xb_req_add_reply_header(t->req, "Content-Range", cr);
        }
        xb_rest_fail(t->req, err);
        xb_req_set_data(t->req, NULL);
        transfer_end(t);
}

static void
get_done(void *ctx, json_t *result)
{
        struct transfer *t = ctx;
        const struct xb_file_span *sp = &t->span;
        char cr[96];

        json_decref(result);
        if (sp->partial) {
                snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", (unsigned long long)sp->off,
                         (unsigned long long)(sp->off + sp->len - 1), (unsigned long long)sp->size);
                xb_reply_fd(t->req, 206, CTYPE_BYTES, sp->fd, sp->off, sp->len, cr);
        } else
                xb_reply_fd(t->req, 200, CTYPE_BYTES, sp->fd, 0, sp->size, NULL);
        transfer_end(t);
}

static const struct xb_sink_ops get_sink = { NULL, get_done, transfer_fail };

static void
get_file(struct xb_req *r)
{
        static const char *const names[] = { "path", NULL };
        _cleanup_(xb_json_decrefp) json_t *args = query_args(r, names);
        struct xb_err err = { 0 };
        struct xb_file_range rg;
        struct xb_file_req q;
        struct transfer *t;
        struct xb_sbx *x;
        char *path;

        if (!args) {
                reply_nomem(r);
                return;
        }
        if (!(x = xb_opfile_sandbox(xb_rest_of(r)->core, xb_req_tenant(r), args, &err)) ||
            xb_opfile_read_args(args, &q, &path, &err) < 0) {
                xb_rest_fail(r, &err);
                return;
        }
        if (!(t = transfer_new(r, &get_sink))) {
                free(path);
                reply_nomem(r);
                return;
        }
        parse_range(xb_req_header(r, "Range"), &rg);
        xb_fileop_open_read(x, &q, path, &rg, &t->span, t->call);
        transfer_wait(t);
}

/* The file is open (init answers on a later turn of the loop, never
 * inside the handler): the body goes into it; phase END answers. */
static void
put_open(void *ctx, json_t *result)
{
        struct transfer *t = ctx;

        json_decref(result);
        t->call = NULL;
        xb_req_set_sink(t->req, xb_upload_fd(t->up));
        xb_req_resume(t->req);   /* on_gone stays transfer_gone for the body's time */
}

static const struct xb_sink_ops put_sink = { NULL, put_open, transfer_fail };

static void
put_end(struct xb_req *r)
{
        struct transfer *t = xb_req_data(r);
        struct xb_upload *up = t ? TAKE_PTR(t->up) : NULL;
        struct xb_err err = { 0 };
        json_t *res;

        xb_req_set_data(r, NULL);
        if (!up) {
                xb_err_code(&err, XB_E_INTERNAL, EIO, NULL, "the upload lost its file");
                xb_rest_fail(r, &err);
        } else if ((res = xb_upload_end(up, xb_req_sink_bytes(r), xb_req_sink_error(r), &err)))
                xb_reply_json(r, 200, res);
        else
                xb_rest_fail(r, &err);
        free(t);   /* after the reply: until then it was on_gone's owner */
}

/* PUT: at the headers (phase BEGIN) ask init for the file; the body goes
 * to it once it is open; at phase END answer. */
static void
put_file(struct xb_req *r)
{
        static const char *const names[] = { "path", "append", "mode", NULL };
        _cleanup_(xb_json_decrefp) json_t *args = NULL;
        struct xb_err err = { 0 };
        struct xb_file_req q;
        struct transfer *t;
        enum xb_coding coding = xb_req_content_coding(r);
        struct xb_sbx *x;
        char *path;

        if (xb_req_phase(r) == XB_PHASE_END) {
                put_end(r);
                return;
        }
        if (coding == XB_CODING_UNKNOWN) {
                xb_err_code(&err, XB_E_UNSUPPORTED_ENCODING, EINVAL, NULL,
                            "the body's Content-Encoding `%.60s` is not supported: only gzip (or identity)",
                            xb_req_header(r, "Content-Encoding"));
                xb_rest_fail(r, &err);
                return;
        }
        if (!(args = query_args(r, names))) {
                reply_nomem(r);
                return;
        }
        if (!(x = xb_opfile_sandbox(xb_rest_of(r)->core, xb_req_tenant(r), args, &err)) ||
            xb_opfile_write_args(args, &q, &path, &err) < 0) {
                xb_rest_fail(r, &err);
                return;
        }
        if (!(t = transfer_new(r, &put_sink))) {
                free(path);
                reply_nomem(r);
                return;
        }
        xb_req_set_data(r, t);
        xb_fileop_open_upload(x, &q, path, coding == XB_CODING_GZIP ? XB_UPLOAD_GZIP : 0, &t->up, t->call);
        transfer_wait(t);
}

/* ---- operations ---- */

static void
run_query_op(struct xb_req *r, const char *op, const char *const *names)
{
        _cleanup_(xb_json_decrefp) json_t *args = query_args(r, names);

        if (!args)
                reply_nomem(r);
        else
                xb_rest_run(r, op, args, 200, false);
}

static void
delete_file(struct xb_req *r)
{
        static const char *const names[] = { "path", "recursive", NULL };

        run_query_op(r, "delete_file", names);
}

static void
list_files(struct xb_req *r)
{
        static const char *const names[] = { "path", "depth", NULL };

        run_query_op(r, "list_files", names);
}

static void
stat_file(struct xb_req *r)
{
        static const char *const names[] = { "path", NULL };

        run_query_op(r, "stat_file", names);
}

/* A JSON body's fields as the operation's arguments, with the sandbox id. */
static void
run_body_op(struct xb_req *r, const char *op, const char *hint)
{
        static const char *const none[] = { NULL };
        _cleanup_(xb_json_decrefp) json_t *args = NULL, *id_only = query_args(r, none);
        struct xb_err err = { 0 }, err2 = { 0 };
        size_t len;
        const char *b = xb_req_body(r, &len);

        if (!id_only) {
                reply_nomem(r);
                return;
        }
        if (xb_jsonv_parse(b, len, &args, &err) < 0) {
                /* An unknown or dead sandbox is said first, as it always was. */
                if (!xb_opfile_sandbox(xb_rest_of(r)->core, xb_req_tenant(r), id_only, &err2)) {
                        xb_rest_fail(r, &err2);
                        return;
                }
                err.ecode = XB_E_INVALID;
                err.hint = hint;
                xb_rest_fail(r, &err);
                return;
        }
        json_object_set(args, "id", json_object_get(id_only, "id"));
        xb_rest_run(r, op, args, 200, false);
}

static void
make_dir(struct xb_req *r)
{
        run_body_op(r, "make_directory", XB_OPFILE_HINT_MKDIR);
}

static void
move_file(struct xb_req *r)
{
        run_body_op(r, "move_file", XB_OPFILE_HINT_MOVE);
}

const struct xb_route xb_api_routes_files[] = {
        { "GET", "/v1/sandboxes/{}/files", get_file, 0 },
        { "PUT", "/v1/sandboxes/{}/files", put_file, XB_ROUTE_SINK },
        { "DELETE", "/v1/sandboxes/{}/files", delete_file, 0 },
        { "GET", "/v1/sandboxes/{}/files/list", list_files, 0 },
        { "GET", "/v1/sandboxes/{}/files/stat", stat_file, 0 },
        { "POST", "/v1/sandboxes/{}/files/mkdir", make_dir, 0 },
        { "POST", "/v1/sandboxes/{}/files/move", move_file, 0 },
};
const size_t xb_api_nroutes_files = ARRAY_SIZE(xb_api_routes_files);
