/* Operations on files (see ops.h): each checks its arguments completely
 * (paths: present, at most 4096 bytes, no NUL; relative ones are below
 * /home/user), finds the sandbox and hands the request to core/files.c,
 * which asks the sandbox's init and ends the call. read_file and
 * write_file carry the content in JSON, for callers that cannot pass fds;
 * REST streams it instead (rest/api_files.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "core/core.h"
#include "core/files.h"
#include "ops/op_args.h"
#include "ops/jsonv.h"
#include "ops/op_files.h"
#include "ops/ops.h"

#define HOME "/home/user"

/* ---- arguments ---- */

/* A string argument, which may hold NULs (n is its length); NULL if absent. */
static const char *
str_arg(json_t *args, const char *name, size_t *n)
{
        json_t *v = json_object_get(args, name);

        if (!json_is_string(v))
                return NULL;
        *n = json_string_length(v);
        return json_string_value(v);
}

static bool
present(json_t *args, const char *name)
{
        json_t *v = json_object_get(args, name);

        return v && !json_is_null(v);
}

/* The path a client named, made absolute. */
static int
abs_path(const char *field, const char *v, char **ret, struct xb_err *err)
{
        char *p;

        if (!v || !*v)
                return xb_err_code(err, XB_E_MISSING_PATH, EINVAL, NULL, "`%s` is required", field);
        if (strlen(v) > XB_FILE_PATH_MAX)
                return xb_err_code(err, XB_E_PATH_TOO_LONG, ENAMETOOLONG, "paths are at most 4096 bytes",
                                   "`%s` is %zu bytes long", field, strlen(v));
        if (asprintf(&p, "%s%s", v[0] == '/' ? "" : HOME "/", v) < 0)
                return xb_err_code(err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
        /* "dir/" is "dir": shown and sent without trailing slashes. */
        for (size_t n = strlen(p); n > 1 && p[n - 1] == '/'; n--)
                p[n - 1] = '\0';
        *ret = p;
        return 0;
}

/* A query-style path argument. */
static int
path_arg(json_t *args, const char *field, char **ret, struct xb_err *err)
{
        size_t n = 0;
        const char *v = str_arg(args, field, &n);

        if (!v && present(args, field))
                return xb_err_code(err, XB_E_INVALID_PATH, EINVAL, NULL, "`%s` must be a string", field);
        if (v && memchr(v, '\0', n))
                return xb_err_code(err, XB_E_INVALID_PATH, EINVAL, NULL, "`%s` contains a NUL byte", field);
        return abs_path(field, v, ret, err);
}

static int
bool_arg(json_t *args, const char *name, bool *ret, struct xb_err *err)
{
        json_t *v = json_object_get(args, name);
        size_t n = 0;
        const char *s = str_arg(args, name, &n);

        if (!v || json_is_null(v))
                return 0;
        if (json_is_boolean(v)) {
                *ret = json_is_true(v);
                return 0;
        }
        if (s && !memchr(s, '\0', n)) {
                if (!strcmp(s, "true") || !strcmp(s, "1") || !strcmp(s, "yes") || !*s) {
                        *ret = true;
                        return 0;
                }
                if (!strcmp(s, "false") || !strcmp(s, "0") || !strcmp(s, "no")) {
                        *ret = false;
                        return 0;
                }
        }
        return xb_err_code(err, XB_E_INVALID, EINVAL, "use true or false", "`%s` must be true or false", name);
}

/* "644", "0644" or "0o644": permission bits, at most 0777. */
static int
parse_mode(const char *field, const char *v, uint32_t *ret, struct xb_err *err)
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
        return xb_err_code(err, XB_E_INVALID_MODE, EINVAL, NULL, "`%s` must be an octal mode of at most 0777", field);
}

/* A query-style mode: *set tells whether one was given. */
static int
mode_arg(json_t *args, const char *name, uint32_t *ret, bool *set, struct xb_err *err)
{
        size_t n = 0;
        const char *v = str_arg(args, name, &n);

        *set = present(args, name);
        if (!*set)
                return 0;
        if (!v || memchr(v, '\0', n))
                return xb_err_code(err, XB_E_INVALID_MODE, EINVAL, "give octal permission bits such as 0644",
                                   "`%s` is invalid", name);
        return parse_mode(name, v, ret, err);
}

static int
depth_arg(json_t *args, uint32_t *ret, struct xb_err *err)
{
        json_t *v = json_object_get(args, "depth");
        size_t n = 0;
        const char *s = str_arg(args, "depth", &n);

        if (!v || json_is_null(v))
                return 0;
        if (json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= XB_FILE_DEPTH_MAX) {
                *ret = (uint32_t)json_integer_value(v);
                return 0;
        }
        if (s && n == 1 && s[0] >= '1' && s[0] <= '0' + XB_FILE_DEPTH_MAX) {
                *ret = (uint32_t)(s[0] - '0');
                return 0;
        }
        return xb_err_code(err, XB_E_INVALID_DEPTH, EINVAL, NULL, "`depth` must be a whole number from 1 to %d",
                           XB_FILE_DEPTH_MAX);
}

/* The body fields of args: every key but the path parameter "id" must be
 * in allowed (NULL-terminated). */
static int
body_fields(json_t *args, const char *const *allowed, struct xb_err *err)
{
        _cleanup_(xb_json_decrefp) json_t *body = json_copy(args);

        if (!body)
                return xb_err_code(err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
        json_object_del(body, "id");
        return xb_jsonv_fields(body, allowed, err);
}

struct xb_sbx *
xb_opfile_sandbox(struct xb_core *core, int tenant, json_t *args, struct xb_err *err)
{
        const char *id = json_string_value(json_object_get(args, "id"));
        struct xb_sbx *x = xb_sbx_use(core, id, tenant, err);

        if (!x)
                return NULL;
        return xb_fileop_sandbox_ok(x, err) < 0 ? NULL : x;
}

int
xb_opfile_read_args(json_t *args, struct xb_file_req *q, char **ret_path, struct xb_err *err)
{
        int r;

        *q = (struct xb_file_req){ .op = XB_FOP_READ, .depth = 1 };
        if ((r = path_arg(args, "path", ret_path, err)) < 0)
                return r;
        q->path = *ret_path;
        return 0;
}

int
xb_opfile_write_args(json_t *args, struct xb_file_req *q, char **ret_path, struct xb_err *err)
{
        bool append = false, mode_set = false;
        int r;

        *q = (struct xb_file_req){ .op = XB_FOP_WRITE, .depth = 1, .mode = 0644, .flags = XB_FILE_PARENTS };
        if ((r = bool_arg(args, "append", &append, err)) < 0 || (r = mode_arg(args, "mode", &q->mode, &mode_set, err)) < 0 ||
            (r = path_arg(args, "path", ret_path, err)) < 0)
                return r;
        q->flags |= (append ? XB_FILE_APPEND : 0) | (mode_set ? XB_FILE_MODE_SET : 0);
        q->path = *ret_path;
        return 0;
}

/* ---- operations ---- */

/* The sandbox, or NULL after failing the call. */
static struct xb_sbx *
sandbox(struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        struct xb_err err = { 0 };
        struct xb_sbx *x = xb_opfile_sandbox(core, tenant, args, &err);

        if (!x)
                xb_call_fail(call, &err);
        return x;
}

static void
op_read_file(struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        struct xb_sbx *x = sandbox(core, tenant, args, call);
        struct xb_file_req q;
        struct xb_err err = { 0 };
        uint64_t max = XB_FILE_READ_DEFAULT;
        char *path = NULL;

        if (!x)
                return;
        if (xb_opfile_read_args(args, &q, &path, &err) < 0) {
                xb_call_fail(call, &err);
                return;
        }
        if (xb_jsonv_uint(args, "max_bytes", 0, XB_FILE_READ_MAX, &max, &err) < 0) {
                free(path);
                err.ecode = XB_E_INVALID;
                xb_call_fail(call, &err);
                return;
        }
        xb_fileop_read(x, &q, path, (size_t)max, call);
}

static void
op_write_file(struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        struct xb_sbx *x = sandbox(core, tenant, args, call);
        struct xb_file_req q;
        struct xb_err err = { 0 };
        const char *content = NULL, *enc = "utf-8";
        _cleanup_free_ char *path = NULL;
        void *data = NULL;
        size_t len = 0;
        int r;

        if (!x)
                return;
        if (xb_opfile_write_args(args, &q, &path, &err) < 0)
                goto fail;
        content = str_arg(args, "content", &len);
        if (!content) {
                xb_err_code(&err, XB_E_INVALID, EINVAL, NULL, present(args, "content") ? "`content` must be a string"
                            : "`content` is required");
                goto fail;
        }
        if (xb_jsonv_str(args, "encoding", 16, &enc, &err) < 0 || (strcmp(enc, "utf-8") && strcmp(enc, "base64"))) {
                xb_err_code(&err, XB_E_INVALID, EINVAL, NULL, "`encoding` must be \"utf-8\" or \"base64\"");
                goto fail;
        }
        if (!strcmp(enc, "base64")) {
                r = xb_base64_decode_alloc(content, len, len, 0, &data, &len);
        } else {
                data = malloc(len ? len : 1);
                r = data ? 0 : -ENOMEM;
                if (data)
                        memcpy(data, content, len);
        }
        if (r < 0) {
                xb_err_code(&err, r == -ENOMEM ? XB_E_NOMEM : XB_E_INVALID, -r, NULL,
                            r == -ENOMEM ? "out of memory" : "`content` is not valid base64");
                goto fail;
        }
        xb_fileop_write(x, &q, TAKE_PTR(path), data, len, call);
        return;
fail:
        xb_call_fail(call, &err);
}

/* stat_file, list_files, delete_file: query-style arguments. */
static void
op_query(struct xb_core *core, int tenant, json_t *args, struct xb_call *call, enum xb_fop fop)
{
        struct xb_sbx *x = sandbox(core, tenant, args, call);
        struct xb_file_req q = { .op = fop, .depth = 1 };
        struct xb_err err = { 0 };
        bool recursive = false;
        char *path = NULL;

        if (!x)
                return;
        if ((fop == XB_FOP_DELETE && bool_arg(args, "recursive", &recursive, &err) < 0) ||
            (fop == XB_FOP_LIST && depth_arg(args, &q.depth, &err) < 0) || path_arg(args, "path", &path, &err) < 0) {
                xb_call_fail(call, &err);
                return;
        }
        q.path = path;
        q.flags = recursive ? XB_FILE_RECURSIVE : 0;
        xb_fileop_run(x, &q, path, NULL, call);
}

static void
op_stat_file(struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        op_query(core, tenant, args, call, XB_FOP_STAT);
}

static void
op_list_files(struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        op_query(core, tenant, args, call, XB_FOP_LIST);
}

static void
op_delete_file(struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        op_query(core, tenant, args, call, XB_FOP_DELETE);
}

static void
op_make_directory(struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        static const char *const fields[] = { "path", "parents", "mode", NULL };
        struct xb_sbx *x = sandbox(core, tenant, args, call);
        struct xb_file_req q = { .op = XB_FOP_MKDIR, .depth = 1, .mode = 0755 };
        struct xb_err err = { 0 };
        const char *p = NULL, *mode = NULL;
        bool parents = true;
        char *path = NULL;

        if (!x)
                return;
        if (body_fields(args, fields, &err) < 0 || xb_jsonv_str(args, "path", XB_FILE_PATH_MAX, &p, &err) < 0 ||
            xb_jsonv_bool(args, "parents", &parents, &err) < 0 || xb_jsonv_str(args, "mode", 16, &mode, &err) < 0) {
                err.ecode = XB_E_INVALID;
                err.hint = XB_OPFILE_HINT_MKDIR;
                xb_call_fail(call, &err);
                return;
        }
        if ((mode && parse_mode("mode", mode, &q.mode, &err) < 0) || abs_path("path", p, &path, &err) < 0) {
                xb_call_fail(call, &err);
                return;
        }
        q.path = path;
        q.flags = parents ? XB_FILE_PARENTS : 0;
        xb_fileop_run(x, &q, path, NULL, call);
}

static void
op_move_file(struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        static const char *const fields[] = { "from", "to", "overwrite", NULL };
        struct xb_sbx *x = sandbox(core, tenant, args, call);
        struct xb_file_req q = { .op = XB_FOP_MOVE, .depth = 1 };
        struct xb_err err = { 0 };
        const char *from = NULL, *to = NULL;
        bool overwrite = false;
        _cleanup_free_ char *src = NULL;
        char *dst = NULL;

        if (!x)
                return;
        if (body_fields(args, fields, &err) < 0 || xb_jsonv_str(args, "from", XB_FILE_PATH_MAX, &from, &err) < 0 ||
            xb_jsonv_str(args, "to", XB_FILE_PATH_MAX, &to, &err) < 0 ||
            xb_jsonv_bool(args, "overwrite", &overwrite, &err) < 0) {
                err.ecode = XB_E_INVALID;
                err.hint = XB_OPFILE_HINT_MOVE;
                xb_call_fail(call, &err);
                return;
        }
        if (abs_path("from", from, &src, &err) < 0 || abs_path("to", to, &dst, &err) < 0) {
                xb_call_fail(call, &err);
                return;
        }
        q.path = src;
        q.path2 = dst;
        q.flags = overwrite ? XB_FILE_OVERWRITE : 0;
        xb_fileop_run(x, &q, TAKE_PTR(src), dst, call);
}

const struct xb_op xb_ops_files[] = {
        { "read_file", op_read_file },
        { "write_file", op_write_file },
        { "delete_file", op_delete_file },
        { "list_files", op_list_files },
        { "stat_file", op_stat_file },
        { "make_directory", op_make_directory },
        { "move_file", op_move_file },
        { NULL, NULL },
};
