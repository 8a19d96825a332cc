/* REST handlers of the file API: each validates its request completely
 * (paths: present, at most 4096 bytes, no NUL; relative ones are below
 * /home/user) and hands the operation to files.c, which asks the
 * sandbox's init and replies. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/files.h"
#include "ops/jsonv.h"

#define HOME "/home/user"
#define HINT_PATH "pass ?path=/home/user/file.txt: an absolute path, or one relative to /home/user"

/* ---- request parsing ---- */

/* The path a client named, made absolute; NULL after a 400. */
static char *
abs_path(struct xb_req *r, const char *field, const char *v)
{
        char *p;

        if (!v || !*v) {
                xb_reply_error(r, 400, "missing_path", HINT_PATH, "`%s` is required", field);
                return NULL;
        }
        if (strlen(v) > XB_FILE_PATH_MAX) {
                xb_reply_error(r, 400, "path_too_long", "paths are at most 4096 bytes", "`%s` is %zu bytes long", field,
                               strlen(v));
                return NULL;
        }
        if (asprintf(&p, "%s%s", v[0] == '/' ? "" : HOME "/", v) < 0) {
                xb_reply_error(r, 503, "out_of_memory", "retry", "out of memory");
                return NULL;
        }
        /* "dir/" is "dir": shown and sent without trailing slashes. */
        for (size_t n = strlen(p); n > 1 && p[n - 1] == '/'; n--)
                p[n - 1] = '\0';
        return p;
}

static char *
query_path(struct xb_req *r)
{
        int qerr;
        const char *v = xb_req_query(r, "path", &qerr);

        if (qerr < 0) {
                xb_reply_error(r, 400, "invalid_path", HINT_PATH, "`path` contains a NUL byte");
                return NULL;
        }
        return abs_path(r, "path", v);
}

static int
query_bool(struct xb_req *r, const char *name, bool *ret)
{
        int qerr;
        const char *v = xb_req_query(r, name, &qerr);

        if (qerr < 0)
                goto bad;
        if (!v)
                return 0;
        if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes") || !*v)
                *ret = true;
        else if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no"))
                *ret = false;
        else
                goto bad;
        return 0;
bad:
        xb_reply_error(r, 400, "invalid_request", "use true or false", "`%s` must be true or false", name);
        return -1;
}

/* "644", "0644" or "0o644": permission bits, at most 0777. */
static int
parse_mode(struct xb_req *r, const char *field, const char *v, uint32_t *ret)
{
        const char *s = v;
        uint32_t m = 0;

        if (!strncmp(s, "0o", 2))
                s += 2;
        if (*s && strlen(s) <= 4 && strspn(s, "01234567") == strlen(s)) {
                for (; *s; s++)
                        m = m * 8 + (uint32_t)(*s - '0');
                if (m <= 0777) {
                        *ret = m;
                        return 0;
                }
        }
        xb_reply_error(r, 400, "invalid_mode", "give octal permission bits such as \"0644\" or \"0755\"",
                       "`%s` must be an octal mode of at most 0777", field);
        return -1;
}

/* ---- handlers ---- */

static void
get_file(struct xb_req *r)
{
        struct xb_sbx *x = xb_api_sandbox(r);
        struct xb_file_req q = { .op = XB_FOP_READ, .depth = 1 };
        char *path;

        if (!x || !xb_fileop_sandbox_ok(r, x) || !(path = query_path(r)))
                return;
        q.path = path;
        xb_fileop_start(r, x, &q, path, NULL, xb_req_header(r, "Range"));
}

/* PUT: at the headers (phase BEGIN) ask init for the file; the body goes
 * to it once it is open; at phase END answer. */
static void
put_file(struct xb_req *r)
{
        struct xb_file_req q = { .op = XB_FOP_WRITE, .depth = 1, .mode = 0644, .flags = XB_FILE_PARENTS };
        struct xb_sbx *x;
        const char *mode;
        bool append = false;
        char *path;
        int qerr;

        if (xb_req_phase(r) == XB_PHASE_END) {
                xb_fileop_upload_end(r);
                return;
        }
        x = xb_api_sandbox(r);
        if (!x || !xb_fileop_sandbox_ok(r, x) || query_bool(r, "append", &append) < 0)
                return;
        mode = xb_req_query(r, "mode", &qerr);
        if (qerr < 0 || (mode && parse_mode(r, "mode", mode, &q.mode) < 0)) {
                if (qerr < 0)
                        xb_reply_error(r, 400, "invalid_mode", "give octal permission bits such as 0644", "`mode` is invalid");
                return;
        }
        if (!(path = query_path(r)))
                return;
        q.flags |= (append ? XB_FILE_APPEND : 0) | (mode ? XB_FILE_MODE_SET : 0);
        q.path = path;
        xb_fileop_upload_begin(r, x, &q, path);
}

static void
delete_file(struct xb_req *r)
{
        struct xb_sbx *x = xb_api_sandbox(r);
        struct xb_file_req q = { .op = XB_FOP_DELETE, .depth = 1 };
        bool recursive = false;
        char *path;

        if (!x || !xb_fileop_sandbox_ok(r, x) || query_bool(r, "recursive", &recursive) < 0 || !(path = query_path(r)))
                return;
        q.path = path;
        q.flags = recursive ? XB_FILE_RECURSIVE : 0;
        xb_fileop_start(r, x, &q, path, NULL, NULL);
}

static void
list_files(struct xb_req *r)
{
        struct xb_sbx *x = xb_api_sandbox(r);
        struct xb_file_req q = { .op = XB_FOP_LIST, .depth = 1 };
        const char *d;
        char *path;
        int qerr;

        if (!x || !xb_fileop_sandbox_ok(r, x))
                return;
        d = xb_req_query(r, "depth", &qerr);
        if (qerr < 0 || (d && (strlen(d) != 1 || d[0] < '1' || d[0] > '0' + XB_FILE_DEPTH_MAX))) {
                xb_reply_error(r, 400, "invalid_depth", "depth=1 lists the directory itself; up to 5 goes deeper",
                               "`depth` must be a whole number from 1 to %d", XB_FILE_DEPTH_MAX);
                return;
        }
        if (d)
                q.depth = (uint32_t)(d[0] - '0');
        if (!(path = query_path(r)))
                return;
        q.path = path;
        xb_fileop_start(r, x, &q, path, NULL, NULL);
}

static void
stat_file(struct xb_req *r)
{
        struct xb_sbx *x = xb_api_sandbox(r);
        struct xb_file_req q = { .op = XB_FOP_STAT, .depth = 1 };
        char *path;

        if (!x || !xb_fileop_sandbox_ok(r, x) || !(path = query_path(r)))
                return;
        q.path = path;
        xb_fileop_start(r, x, &q, path, NULL, NULL);
}

static void
make_dir(struct xb_req *r)
{
        static const char *const fields[] = { "path", "parents", "mode", NULL };
        struct xb_sbx *x = xb_api_sandbox(r);
        struct xb_file_req q = { .op = XB_FOP_MKDIR, .depth = 1, .mode = 0755 };
        struct xb_err err = { 0 };
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        const char *b, *p = NULL, *mode = NULL;
        bool parents = true;
        size_t len;
        char *path;

        if (!x || !xb_fileop_sandbox_ok(r, x))
                return;
        b = xb_req_body(r, &len);
        if (xb_jsonv_parse(b, len, &body, &err) < 0 || xb_jsonv_fields(body, fields, &err) < 0 ||
            xb_jsonv_str(body, "path", XB_FILE_PATH_MAX, &p, &err) < 0 ||
            xb_jsonv_bool(body, "parents", &parents, &err) < 0 || xb_jsonv_str(body, "mode", 16, &mode, &err) < 0) {
                xb_api_bad_request(r, &err, "send {\"path\": \"/home/user/dir\", \"parents\": true}");
                return;
        }
        if ((mode && parse_mode(r, "mode", mode, &q.mode) < 0) || !(path = abs_path(r, "path", p)))
                return;
        q.path = path;
        q.flags = parents ? XB_FILE_PARENTS : 0;
        xb_fileop_start(r, x, &q, path, NULL, NULL);
}

static void
move_file(struct xb_req *r)
{
        static const char *const fields[] = { "from", "to", "overwrite", NULL };
        struct xb_sbx *x = xb_api_sandbox(r);
        struct xb_file_req q = { .op = XB_FOP_MOVE, .depth = 1 };
        struct xb_err err = { 0 };
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        const char *b, *from = NULL, *to = NULL;
        bool overwrite = false;
        size_t len;
        char *src, *dst;

        if (!x || !xb_fileop_sandbox_ok(r, x))
                return;
        b = xb_req_body(r, &len);
        if (xb_jsonv_parse(b, len, &body, &err) < 0 || xb_jsonv_fields(body, fields, &err) < 0 ||
            xb_jsonv_str(body, "from", XB_FILE_PATH_MAX, &from, &err) < 0 ||
            xb_jsonv_str(body, "to", XB_FILE_PATH_MAX, &to, &err) < 0 ||
            xb_jsonv_bool(body, "overwrite", &overwrite, &err) < 0) {
                xb_api_bad_request(r, &err, "send {\"from\": \"/home/user/a\", \"to\": \"/home/user/b\"}");
                return;
        }
        if (!(src = abs_path(r, "from", from)))
                return;
        if (!(dst = abs_path(r, "to", to))) {
                free(src);
                return;
        }
        q.path = src;
        q.path2 = dst;
        q.flags = overwrite ? XB_FILE_OVERWRITE : 0;
        xb_fileop_start(r, x, &q, src, dst, NULL);
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
