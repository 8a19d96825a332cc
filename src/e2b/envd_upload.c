/* envd's POST /files: an upload as the raw body (one file, ?path=) or as
 * multipart/form-data (one or many files), both streamed into the files
 * through the sandbox's writer (core/files.h), never held whole: the
 * pages are the sandbox's and hit its limits (507), the daemon's memory
 * stays flat.
 *
 * A multipart body is parsed as it comes (xb_req_form, libmicrohttpd's
 * post processor). As envd does: a part is a file when it is named
 * "file" (or has a filename); ?path= names the file, else the part's
 * filename does (relative paths are below /home/user); two files to one
 * path in an upload is 400. Each file is opened when its part begins and
 * written as its bytes arrive; it is complete when the next part begins
 * or the body ends. With `Content-Encoding: gzip` the whole body is
 * gzip, as envd reads it: a raw body is decoded by the sandbox's writer
 * (core/files.h), a multipart one by the form parser (transport/form.c)
 * in bounded slices. A failure (507, a malformed body) puts the file being
 * written back as it was opened and answers once the body is in (the
 * HTTP front cannot answer mid-body); files completed before it stay. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "core/core.h"
#include "core/files.h"
#include "e2b/e2b_int.h"
#include "ops/jsonv.h"
#include "ops/op_files.h"

#define PARTS_MAX 1000

static json_t *
written_entry(json_t *res)
{
        const char *path = json_string_value(json_object_get(res, "path")) ?: "";
        const char *slash = strrchr(path, '/');

        return json_pack("{s:s,s:s,s:s}", "name", slash ? slash + 1 : path, "type", "file", "path", path);
}

/* ---- octet-stream: the body is the file ---- */

struct stream_up {
        struct e2b_sink sink;
        unsigned flags;              /* XB_UPLOAD_GZIP */
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
                e2b_files_error(t->req, err);
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
                xb_reply_json(r, 200, json_pack("[o]", written_entry(res)));
                json_decref(res);
        } else
                e2b_files_error(r, &err);
        free(t);
}

/* Phase BEGIN of an octet-stream upload: open the file, then take the body. */
static void
stream_begin(struct xb_req *r, struct xb_e2b *e, struct e2b_sbx *s, const char *qpath, unsigned flags)
{
        _cleanup_(xb_json_decrefp) json_t *args = json_pack("{s:s,s:s}", "id", s->id, "path", qpath);
        struct xb_err err = { 0 };
        struct xb_file_req q;
        struct stream_up *t;
        struct xb_sbx *x;
        char *p = NULL;

        if (!(x = xb_opfile_sandbox(e->core, s->tenant, args, &err)) || xb_opfile_write_args(args, &q, &p, &err) < 0) {
                e2b_files_error(r, &err);
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
        xb_fileop_open_upload(x, &q, p, flags, &t->up, t->sink.call);
        t->inside = false;
        if (t->failed) {
                free(t);   /* answered already */
                return;
        }
        if (t->sink.call)
                xb_req_suspend(r, stream_gone, t);
}

/* ---- multipart: a file per part ---- */

struct form_up {
        struct e2b_sink sink;         /* the open of the current part's file */
        struct xb_req *req;
        struct xb_e2b *e;
        int tenant;
        char id[XB_SANDBOX_ID_LEN + 1];
        char *qpath;                  /* ?path=, or NULL */
        struct xb_upload *up;         /* the file being written, or NULL */
        uint64_t written;             /* bytes of it into the writer's pipe */
        struct xb_io io;              /* that pipe, while it is full */
        json_t *files;                /* EntryInfo of the files completed */
        struct xb_err err;            /* the first failure */
        bool failed, skip, inside, opening;
};

static void
form_free(struct form_up *m)
{
        xb_io_stop(&m->io);
        if (m->sink.call)
                xb_call_cancel(m->sink.call);
        if (m->up)
                xb_upload_abort(m->up);
        json_decref(m->files);
        free(m->qpath);
        free(m);
}

/* The first failure wins; the file being written is put back. */
static void
form_fail(struct form_up *m, const struct xb_err *err)
{
        xb_io_stop(&m->io);
        if (m->up)
                xb_upload_abort(TAKE_PTR(m->up));
        if (!m->failed)
                m->err = *err;
        m->failed = true;
        m->skip = true;
        xb_req_form_drop(m->req);   /* envd stops at the first failure: nothing more is parsed or decoded */
}

static void
form_failf(struct form_up *m, enum xb_ecode ec, const char *msg)
{
        struct xb_err err = { 0 };

        xb_err_code(&err, ec, EINVAL, NULL, "%s", msg);
        form_fail(m, &err);
}

/* The file being written is complete. */
static void
form_finish(struct form_up *m, int errnum)
{
        struct xb_err err = { 0 };
        json_t *res;

        xb_io_stop(&m->io);
        if (!m->up)
                return;
        res = xb_upload_end(TAKE_PTR(m->up), m->written, errnum, &err);
        if (!res) {
                form_fail(m, &err);
                return;
        }
        json_array_append_new(m->files, written_entry(res));
        json_decref(res);
}

static void
form_opened(struct e2b_sink *s, json_t *res, const struct xb_err *err)
{
        struct form_up *m = (struct form_up *)s;

        json_decref(res);
        m->sink.call = NULL;
        m->opening = false;
        if (err)
                form_fail(m, err);
        else {
                m->skip = false;
                m->written = 0;
        }
        if (!m->inside)
                xb_req_form_wake(m->req);
}

static bool
form_part(void *arg, const char *name, const char *filename)
{
        struct form_up *m = arg;
        _cleanup_(xb_json_decrefp) json_t *args = NULL;
        struct xb_err err = { 0 };
        struct xb_file_req q;
        const char *path = m->qpath ? m->qpath : filename;
        size_t i;
        json_t *f;
        struct xb_sbx *x;
        char *p = NULL;

        if (m->failed)
                return true;
        form_finish(m, 0);
        m->skip = true;
        if (m->failed || !(filename || (name && !strcmp(name, "file"))))
                return true;   /* a form field, not a file: envd skips it too */
        if (!path || !*path) {
                form_failf(m, XB_E_INVALID, "each file needs a path: the part's filename or ?path=");
                return true;
        }
        args = json_pack("{s:s,s:s}", "id", m->id, "path", path);
        if (!args || !(x = xb_opfile_sandbox(m->e->core, m->tenant, args, &err)) ||
            xb_opfile_write_args(args, &q, &p, &err) < 0) {
                if (!args)
                        xb_err_code(&err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
                form_fail(m, &err);
                return true;
        }
        json_array_foreach(m->files, i, f) {
                if (!strcmp(json_string_value(json_object_get(f, "path")) ?: "", p)) {
                        xb_err_code(&err, XB_E_INVALID, EINVAL, NULL,
                                    "you cannot upload multiple files to the same path `%.200s` in one upload "
                                    "request, only the first specified file was uploaded", p);
                        free(p);
                        form_fail(m, &err);
                        return true;
                }
        }
        if (!e2b_call_new(&m->sink, 0)) {
                free(p);
                form_failf(m, XB_E_NOMEM, "out of memory");
                return true;
        }
        m->opening = m->inside = true;
        xb_fileop_open_upload(x, &q, p, 0, &m->up, m->sink.call);
        m->inside = false;
        return !m->opening;   /* hold the body until init opened it */
}

static void
form_room(struct xb_io *io, uint32_t events)
{
        struct form_up *m = io->data;

        (void)events;
        xb_io_stop(&m->io);
        xb_req_form_wake(m->req);
}

static size_t
form_data(void *arg, const char *p, size_t n)
{
        struct form_up *m = arg;
        size_t done = 0;
        int fd;

        if (m->failed || m->skip || !m->up)
                return n;   /* dropped */
        fd = xb_upload_fd(m->up);
        while (done < n) {
                ssize_t k = write(fd, p + done, n - done);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN) {
                        /* The writer is behind: the body waits for it. */
                        m->written += done;
                        if (xb_io_start(e2b_loop(m->e), &m->io, fd, EPOLLOUT, form_room, m) < 0) {
                                form_finish(m, EIO);
                                return n;
                        }
                        return done;
                }
                if (k < 0) {
                        m->written += done;
                        form_finish(m, errno);
                        return n;
                }
                done += (size_t)k;
        }
        m->written += n;
        return n;
}

static void
form_gone(void *arg)
{
        form_free(arg);
}

static const struct xb_form_ops form_ops = { form_part, form_data, form_gone };

static void
reply_msg(struct xb_req *r, unsigned status, const char *msg)
{
        xb_reply_json(r, status, json_pack("{s:s,s:i}", "message", msg, "code", (int)status));
}

static void
form_begin(struct xb_req *r, struct xb_e2b *e, struct e2b_sbx *s, const char *qpath)
{
        struct form_up *m = calloc(1, sizeof(*m));
        int rc;

        if (!m || !(m->files = json_array()) || (qpath && *qpath && !(m->qpath = strdup(qpath)))) {
                if (m)
                        json_decref(m->files);
                free(m);
                reply_msg(r, 503, "out of memory");
                return;
        }
        m->sink.done = form_opened;
        m->req = r;
        m->e = e;
        m->tenant = s->tenant;
        m->io.fd = -1;
        snprintf(m->id, sizeof(m->id), "%s", s->id);
        rc = xb_req_form(r, &form_ops, m, PARTS_MAX);
        if (rc < 0) {
                form_free(m);
                if (rc == -ENOMEM)
                        reply_msg(r, 503, "out of memory");
                else
                        reply_msg(r, 400, "a multipart upload needs `Content-Type: multipart/form-data; boundary=B`, "
                                  "with a boundary of 1 to 70 characters as its last parameter");
                return;
        }
        xb_req_set_data(r, m);
}

/* What xb_req_form_end's error means to the client. */
static void
form_reply_bad(struct xb_req *r, int rc)
{
        if (rc == -E2BIG)
                reply_msg(r, 400, "too many parts in one upload: at most 1000; upload the rest in another request");
        else if (rc == -EFBIG)
                reply_msg(r, 413, "the upload is over the server's upload limit (--upload-max)");
        else if (rc == -ENOMEM)
                reply_msg(r, 503, "out of memory");
        else if (rc == -EILSEQ)
                reply_msg(r, 400, "error decompressing request body: the gzip stream is corrupt (not gzip, bad data or "
                          "a bad checksum); the file it was writing was put back. Send the whole form as one gzip "
                          "stream, or send it uncompressed");
        else if (rc == -ENODATA)
                reply_msg(r, 400, "error decompressing request body: the gzip stream is cut short (it ends before "
                          "the gzip stream does); the file it was writing was put back");
        else
                reply_msg(r, 400, "the multipart body is malformed or cut short (or a part's header line is over "
                          "64 KiB); the file it was writing was put back");
}

static void
form_end(struct xb_req *r, struct form_up *m)
{
        int rc = xb_req_form_end(r);

        xb_req_set_data(r, NULL);
        if (!rc && !m->failed)
                form_finish(m, 0);
        if (m->up)
                xb_upload_abort(TAKE_PTR(m->up));   /* the body was cut: put it back */
        if (m->failed && m->err.ecode != XB_E_INVALID)
                e2b_files_error(r, &m->err);
        else if (m->failed)
                reply_msg(r, 400, m->err.msg);
        else if (rc < 0)
                form_reply_bad(r, rc);
        else if (!json_array_size(m->files))
                reply_msg(r, 400, "the upload has no files: send parts named \"file\" with a filename, or ?path=");
        else
                xb_reply_json(r, 200, json_incref(m->files));
        form_free(m);
}

void
e2b_files_post(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        const char *ctype = xb_req_header(r, "Content-Type"), *qpath = xb_req_query(r, "path", NULL);
        bool multipart = ctype && !strncasecmp(ctype, "multipart/", 10);
        enum xb_coding coding;
        struct xb_sbx *x;
        struct e2b_sbx *s;

        if (xb_req_phase(r) == XB_PHASE_END) {
                if (!xb_req_data(r))
                        reply_msg(r, 500, "the upload lost its state");
                else if (multipart)
                        form_end(r, xb_req_data(r));
                else
                        stream_end(r, xb_req_data(r));
                return;
        }
        if (!(s = e2b_front_sbx(r, e, true, &x)) || !e2b_rpc_user(r))
                return;
        coding = xb_req_content_coding(r);
        if (coding == XB_CODING_UNKNOWN) {
                char msg[160];

                /* envd's words (its 400), with what to send instead. */
                snprintf(msg, sizeof(msg), "error decompressing request body: unsupported Content-Encoding: %.60s, "
                         "supported: [gzip]", xb_req_header(r, "Content-Encoding"));
                reply_msg(r, 400, msg);
                return;
        }
        if (multipart)
                form_begin(r, e, s, qpath);
        else if (qpath && *qpath)
                stream_begin(r, e, s, qpath, coding == XB_CODING_GZIP ? XB_UPLOAD_GZIP : 0);
        else
                reply_msg(r, 400, "the upload is not multipart/form-data with files, nor a body with ?path=");
}
