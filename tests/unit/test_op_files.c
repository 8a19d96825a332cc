/* Unit tests for the file operations' argument checks (ops/op_files.h),
 * which REST's fast paths share with the operations: paths made absolute,
 * query-style values as strings or JSON, and each refusal with its code,
 * message and hint. Also: every file operation is in the table, and one
 * naming no sandbox fails without touching core. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "ops/op_files.h"
#include "ops/ops.h"

static json_t *
args_of(const char *json)
{
        json_t *j = json_loads(json, 0, NULL);

        cr_assert(j, "bad test JSON: %s", json);
        return j;
}

/* A REST query value that held a NUL byte arrives as "\0". */
static json_t *
with_nul(const char *json, const char *key)
{
        json_t *j = args_of(json);

        json_object_set_new(j, key, json_stringn_nocheck("", 1));
        return j;
}

static void
read_ok(const char *json, const char *want)
{
        json_t *a = args_of(json);
        struct xb_file_req q;
        struct xb_err err = { 0 };
        char *path = NULL;

        cr_assert_eq(xb_opfile_read_args(a, &q, &path, &err), 0, "%s: %s", json, err.msg);
        cr_assert_str_eq(path, want);
        cr_assert_eq(q.path, path);
        cr_assert_eq(q.op, XB_FOP_READ);
        free(path);
        json_decref(a);
}

static void
read_bad(json_t *a, enum xb_ecode code, const char *msg, const char *hint)
{
        struct xb_file_req q;
        struct xb_err err = { 0 };
        char *path = NULL;

        cr_assert_lt(xb_opfile_read_args(a, &q, &path, &err), 0);
        cr_assert_null(path);
        cr_assert_eq(err.ecode, code, "%s", err.msg);
        cr_assert_str_eq(err.msg, msg);
        if (hint)
                cr_assert_str_eq(err.hint, hint);
        else
                cr_assert_null(err.hint);
        json_decref(a);
}

Test(op_files, paths)
{
        char longp[XB_FILE_PATH_MAX + 8], json[sizeof(longp) + 32];

        read_ok("{\"path\": \"notes.txt\"}", "/home/user/notes.txt");
        read_ok("{\"path\": \"/tmp/a//\"}", "/tmp/a");
        read_ok("{\"path\": \"/\"}", "/");
        read_ok("{\"path\": \"//\"}", "/");
        read_ok("{\"path\": \"../x\", \"start_line\": 3}", "/home/user/../x");
        read_bad(args_of("{}"), XB_E_MISSING_PATH, "`path` is required", NULL);
        read_bad(args_of("{\"path\": null}"), XB_E_MISSING_PATH, "`path` is required", NULL);
        read_bad(args_of("{\"path\": \"\"}"), XB_E_MISSING_PATH, "`path` is required", NULL);
        read_bad(args_of("{\"path\": 7}"), XB_E_INVALID_PATH, "`path` must be a string", NULL);
        read_bad(with_nul("{}", "path"), XB_E_INVALID_PATH, "`path` contains a NUL byte", NULL);
        memset(longp, 'a', XB_FILE_PATH_MAX + 1);
        longp[0] = '/';
        longp[XB_FILE_PATH_MAX + 1] = '\0';
        snprintf(json, sizeof(json), "{\"path\": \"%s\"}", longp);
        read_bad(args_of(json), XB_E_PATH_TOO_LONG, "`path` is 4097 bytes long", "paths are at most 4096 bytes");
}

static int
write_args(json_t *a, struct xb_file_req *q, struct xb_err *err)
{
        char *path = NULL;
        int r = xb_opfile_write_args(a, q, &path, err);

        free(path);
        json_decref(a);
        return r;
}

Test(op_files, write_flags)
{
        struct xb_file_req q;
        struct xb_err err = { 0 };

        cr_assert_eq(write_args(args_of("{\"path\": \"f\"}"), &q, &err), 0);
        cr_assert_eq(q.op, XB_FOP_WRITE);
        cr_assert_eq(q.mode, 0644);
        cr_assert_eq(q.flags, XB_FILE_PARENTS);
        for (const char *const *v = (const char *const[]){ "\"true\"", "\"1\"", "\"yes\"", "\"\"", "true", NULL }; *v;
             v++) {
                char json[64];

                snprintf(json, sizeof(json), "{\"path\": \"f\", \"append\": %s}", *v);
                cr_assert_eq(write_args(args_of(json), &q, &err), 0, "%s", *v);
                cr_assert_eq(q.flags, XB_FILE_PARENTS | XB_FILE_APPEND, "%s", *v);
        }
        cr_assert_eq(write_args(args_of("{\"path\": \"f\", \"append\": \"no\", \"mode\": \"0o640\"}"), &q, &err), 0);
        cr_assert_eq(q.flags, XB_FILE_PARENTS | XB_FILE_MODE_SET);
        cr_assert_eq(q.mode, 0640);
        cr_assert_eq(write_args(args_of("{\"path\": \"f\", \"mode\": \"755\"}"), &q, &err), 0);
        cr_assert_eq(q.mode, 0755);
}

static void
write_bad(json_t *a, enum xb_ecode code, const char *msg, const char *hint)
{
        struct xb_file_req q;
        struct xb_err err = { 0 };

        cr_assert_lt(write_args(a, &q, &err), 0);
        cr_assert_eq(err.ecode, code, "%s", err.msg);
        cr_assert_str_eq(err.msg, msg);
        if (hint)
                cr_assert_str_eq(err.hint, hint);
        else
                cr_assert_null(err.hint);
}

Test(op_files, write_refusals)
{
        write_bad(args_of("{\"path\": \"f\", \"append\": \"maybe\"}"), XB_E_INVALID, "`append` must be true or false",
                  "use true or false");
        write_bad(args_of("{\"path\": \"f\", \"append\": 1}"), XB_E_INVALID, "`append` must be true or false",
                  "use true or false");
        write_bad(with_nul("{\"path\": \"f\"}", "append"), XB_E_INVALID, "`append` must be true or false",
                  "use true or false");
        for (const char *const *m = (const char *const[]){ "999", "abc", "01000", "", "0x1ff", "12345", NULL }; *m;
             m++) {
                char json[64];

                snprintf(json, sizeof(json), "{\"path\": \"f\", \"mode\": \"%s\"}", *m);
                write_bad(args_of(json), XB_E_INVALID_MODE, "`mode` must be an octal mode of at most 0777", NULL);
        }
        write_bad(with_nul("{\"path\": \"f\"}", "mode"), XB_E_INVALID_MODE, "`mode` is invalid",
                  "give octal permission bits such as 0644");
        /* In the order REST always checked them: append, mode, path. */
        write_bad(args_of("{\"append\": \"2\", \"mode\": \"9\"}"), XB_E_INVALID, "`append` must be true or false",
                  "use true or false");
        write_bad(args_of("{\"mode\": \"9\"}"), XB_E_INVALID_MODE, "`mode` must be an octal mode of at most 0777",
                  NULL);
        write_bad(args_of("{\"mode\": \"0600\"}"), XB_E_MISSING_PATH, "`path` is required", NULL);
}

static void
sink_done(void *ctx, json_t *result)
{
        (void)ctx;
        json_decref(result);
        cr_assert_fail("the operation succeeded");
}

static void
sink_fail(void *ctx, const struct xb_err *err)
{
        *(struct xb_err *)ctx = *err;
}

Test(op_files, operations_need_their_sandbox)
{
        static const char *const names[] = { "read_file", "write_file", "delete_file", "list_files", "stat_file",
                                             "make_directory", "move_file", NULL };
        static const struct xb_sink_ops sink = { NULL, sink_done, sink_fail };
        struct xb_core core;

        memset(&core, 0, sizeof(core));
        for (const char *const *n = names; *n; n++) {
                const struct xb_op *op = xb_op_find(*n);
                struct xb_err err = { 0 };
                json_t *a = args_of("{\"id\": \"nope\", \"path\": \"x\", \"from\": \"a\", \"to\": \"b\"}");
                struct xb_call *c = xb_call_new(&sink, &err, 0);

                cr_assert(op, "no operation %s", *n);
                xb_op_run(op, &core, 0, a, c);
                cr_assert_eq(err.ecode, XB_E_SANDBOX_NOT_FOUND, "%s: %s", *n, err.msg);
                cr_assert_str_eq(err.msg, "no sandbox with id `nope`");
                json_decref(a);
        }
}
