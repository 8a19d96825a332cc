/* POST /v1/templates with an image archive as its body: `docker save img |
 * curl --data-binary @- -H 'Content-Type: application/x-tar'
 * '.../v1/templates?name=web'`. Any other body is template_build's JSON.
 *
 * Theory of operation. The route is a large sink (transport/http.h): at
 * the headers the query's name, workdir and user are checked as
 * template_build checks them, and the state directory must have room for
 * the body (Content-Length, when sent) above its reserve and the disk
 * guard's margin. The body then streams, as it comes, into a file in the
 * state directory that no path names (core/space.c); the transport caps
 * it at --template-upload-max, and the gate stops it (507) once the state
 * directory runs low. At the body's end the file's fd goes to the OCI
 * import (ops/op_toci.c) as a path import's archive would, with its
 * events and reply. The fd is this file's until then: a client that
 * leaves mid-body, a refused body and an import's end all close it, and
 * the file's space goes back. Only gzip's Content-Encoding is refused
 * (415): a decoded archive would be bounded by nothing the upload sees. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/core.h"
#include "ops/jsonv.h"
#include "ops/op_tmpl.h"
#include "rest/call.h"
#include "rest/rest.h"
#include "rest/status.h"

#define ROOM_EVERY (8u << 20)   /* body bytes between two looks at the free space */

struct tupload {
        struct xb_core *core;
        json_t *args;
        int fd;
        uint64_t unchecked;     /* bytes since the last look */
        struct xb_err err;      /* the gate's */
};

static void
tu_free(struct tupload *u)
{
        if (u->fd >= 0)
                close(u->fd);
        json_decref(u->args);
        free(u);
}

static void
tu_gone(struct xb_req *r, void *owner)
{
        (void)r;
        tu_free(owner);
}

/* The disk guard turns tight on its own timer; a look of our own every
 * ROOM_EVERY bytes bounds what one fast client writes between its ticks. */
static int
tu_gate(void *arg, size_t n)
{
        struct tupload *u = arg;

        u->unchecked += n;
        if (!u->core->disk_tight && u->unchecked < ROOM_EVERY)
                return 0;
        u->unchecked = 0;
        if (xb_space_room(u->core, n, &u->err) == 0)
                return 0;
        /* What came so far goes back now, not at the body's end. */
        if (ftruncate(u->fd, 0) < 0)
                xb_warn("template upload: cannot truncate its file: %s", strerror(errno));
        return ENOSPC;
}

/* name, workdir and user from the query, as template_build's arguments. */
static int
query_args(struct xb_req *r, json_t **ret, struct xb_err *err)
{
        static const char *const names[] = { "name", "workdir", "user" };
        json_t *args = json_object();

        if (!args)
                return xb_err_code(err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
        for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
                int qerr;
                const char *v = xb_req_query(r, names[i], &qerr);

                if (qerr < 0 || (v && json_object_set_new(args, names[i], json_string(v)) < 0)) {
                        json_decref(args);
                        return xb_err_code(err, XB_E_INVALID, EINVAL, NULL, "query parameter `%s` is not valid",
                                           names[i]);
                }
        }
        *ret = args;
        return 0;
}

static void
upload_begin(struct xb_req *r)
{
        struct xb_core *s = xb_rest_of(r)->core;
        const char *clen = xb_req_header(r, "Content-Length");
        _cleanup_(xb_json_decrefp) json_t *args = NULL;
        struct xb_err err = { 0 };
        struct tupload *u;
        int fd;

        if (xb_req_content_coding(r) != XB_CODING_IDENTITY) {
                xb_err_code(&err, XB_E_UNSUPPORTED_ENCODING, EINVAL,
                            "send the archive as it is, with no Content-Encoding (docker save's tar)",
                            "an image upload takes no Content-Encoding (`%.60s` was sent)",
                            xb_req_header(r, "Content-Encoding"));
                xb_rest_fail(r, &err);
                return;
        }
        if (query_args(r, &args, &err) < 0 || xb_op_template_upload_check(s, xb_req_tenant(r), args, &err) < 0 ||
            xb_space_room(s, clen ? strtoull(clen, NULL, 10) : 0, &err) < 0 ||
            (fd = xb_space_tmpfile(s, &err)) < 0) {
                if (!json_object_get(args, "name") && err.ecode == XB_E_INVALID)
                        err.hint = "name the template in the query: POST /v1/templates?name=NAME";
                xb_rest_fail(r, &err);
                return;
        }
        if (!(u = calloc(1, sizeof(*u)))) {
                close(fd);
                xb_reply_error(r, 503, "out_of_memory", "retry", "out of memory");
                return;
        }
        u->core = s;
        u->args = TAKE_PTR(args);
        u->fd = fd;
        xb_req_set_data(r, u);
        xb_req_set_sink(r, fd);
        xb_req_set_sink_gate(r, tu_gate, u);
        xb_req_on_gone(r, tu_gone, u);
}

/* The body is in: the import takes the file (ownership of u passes). */
static void
tu_start(void *arg, struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        struct tupload *u = arg;

        if (c) {
                xb_op_template_upload(s, tenant, args, TAKE_FD(u->fd), c);
                /* args (u's) were copied by the operation */
        }
        tu_free(u);
}

static void
upload_end(struct xb_req *r, struct tupload *u)
{
        uint64_t n = xb_req_sink_bytes(r);
        int e = xb_req_sink_error(r);
        struct xb_err err = { 0 };

        xb_req_on_gone(r, NULL, NULL);
        xb_req_set_data(r, NULL);
        if (e == EFBIG)
                xb_err_code(&err, XB_E_UPLOAD_TOO_LARGE, EFBIG,
                            "send a smaller image (fewer or squashed layers), or ask the operator to raise "
                            "--template-upload-max",
                            "the image archive is over the server's limit of %zu bytes (--template-upload-max)",
                            (size_t)xb_rest_of(r)->template_upload_max);
        else if (e == ENOSPC)
                err = u->err;
        else if (e)
                xb_err_code(&err, XB_E_INTERNAL, e, NULL, "writing the upload failed: %s", strerror(e));
        else if (!n)
                xb_err_code(&err, XB_E_INVALID, EINVAL, NULL,
                            "the body is empty: send the image archive (docker save's tar) as the body");
        else if (xb_space_room(u->core, n, &err) == 0 && lseek(u->fd, 0, SEEK_SET) < 0)
                xb_err_code(&err, XB_E_INTERNAL, errno, NULL, "rewinding the upload failed");
        if (err.ecode) {
                tu_free(u);
                xb_rest_fail(r, &err);
                return;
        }
        xb_rest_run_fn(r, tu_start, u, u->args, 201, xb_req_accepts(r, "text/event-stream"));
}

void
xb_api_templates_post(struct xb_req *r)
{
        static const char *const image_types[] = { "application/x-tar", "application/vnd.oci.image.layout.v1+tar" };
        struct tupload *u = xb_req_data(r);

        if (xb_req_phase(r) == XB_PHASE_END) {
                if (u)
                        upload_end(r, u);
                else
                        xb_rest_op_handler(r);
        } else if (xb_req_content_type_in(r, image_types, ARRAY_SIZE(image_types)))
                upload_begin(r);
        else
                xb_req_buffer_body(r);   /* template_build's JSON; false: it was refused */
}
