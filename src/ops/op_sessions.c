/* Operations on code sessions: see ops.h. Each checks its arguments with
 * the messages clients know, finds the sandbox and the session, and hands
 * the call to core/sessions.h. The path's names ("id", "sid", "name") are
 * arguments too, but not body fields: unknown-field checks skip them. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/core.h"
#include "core/sessions.h"
#include "ops/jsonv.h"
#include "ops/op_args.h"
#include "ops/ops.h"

#define CODE_MAX (4u << 20)
#define CELL_TIMEOUT_DEFAULT_MS (120u * 1000)

static const char *const path_names[] = { "id", "sid", "name", NULL };

static void
fail_invalid(struct xb_call *call, struct xb_err *err, const char *hint)
{
        err->ecode = XB_E_INVALID;
        err->hint = hint;
        xb_call_fail(call, err);
}

/* Every key of args but the first npath path names is in fields. */
static int
body_fields(json_t *args, size_t npath, const char *const *fields, struct xb_err *err)
{
        _cleanup_(xb_json_decrefp) json_t *body = json_copy(args);

        for (size_t i = 0; body && i < npath && path_names[i]; i++)
                json_object_del(body, path_names[i]);
        return xb_jsonv_fields(body, fields, err);
}

static struct xb_sbx *
op_sandbox(struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        const char *id = json_string_value(json_object_get(args, "id"));
        struct xb_err err = { 0 };
        struct xb_sbx *x = xb_sbx_use(core, id, tenant, &err);

        if (!x)
                xb_call_fail(call, &err);
        return x;
}

static struct xb_session *
op_session(struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        struct xb_sbx *x = op_sandbox(core, tenant, args, call);
        const char *sid = json_string_value(json_object_get(args, "sid"));
        struct xb_session *ss;

        if (!x)
                return NULL;
        ss = xb_session_find(x, sid);
        if (!ss)
                xb_call_failf(call, XB_E_SESSION_NOT_FOUND, NULL, "no session `%.40s` in sandbox %s", sid ? sid : "",
                              x->id);
        return ss;
}

static void
create_session(struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        static const char *const fields[] = { "language", "kernel", NULL };
        struct xb_sbx *x = op_sandbox(core, tenant, args, call);
        struct xb_err err = { 0 };
        const char *lang = NULL, *kernel = NULL;
        struct xb_session *ss;

        if (!x)
                return;
        if (body_fields(args, 1, fields, &err) < 0 || xb_jsonv_str(args, "language", 64, &lang, &err) < 0 ||
            xb_jsonv_str(args, "kernel", 64, &kernel, &err) < 0) {
                fail_invalid(call, &err, "send {\"language\": \"python\"}");
                return;
        }
        if (!lang && !kernel)
                lang = "python";
        ss = xb_session_claim_warm(x, kernel ? kernel : lang);
        if (!ss)
                ss = xb_session_start(x, kernel ? kernel : lang, false, &err);
        if (!ss) {
                xb_call_fail(call, &err);
                return;
        }
        xb_session_when_started(ss, call);
}

static void
list_sessions(struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        struct xb_sbx *x = op_sandbox(core, tenant, args, call);

        if (x)
                xb_call_done(call, json_pack("{s:o}", "sessions", xb_session_list_json(x)));
}

static void
get_session(struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        struct xb_session *ss = op_session(core, tenant, args, call);

        if (ss)
                xb_call_done(call, xb_session_json(ss));
}

static void
delete_session(struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        struct xb_session *ss = op_session(core, tenant, args, call);

        if (!ss)
                return;
        xb_session_delete(ss);
        xb_call_done(call, NULL);
}

/* A cell's env: {name: string}, names as a shell takes them. */
static int
check_env(json_t *env, struct xb_err *err)
{
        const char *k;
        json_t *v;

        if (!env || json_is_null(env))
                return 0;
        if (!json_is_object(env) || json_object_size(env) > 256)
                return xb_err_msg(err, EINVAL, "`env` must be an object of at most 256 names and strings");
        json_object_foreach(env, k, v) {
                size_t n = strlen(k);

                if (!json_is_string(v) || !n || n > 255 || strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                                      "0123456789_") != n || (k[0] >= '0' && k[0] <= '9') ||
                    json_string_length(v) > 65536 || strlen(json_string_value(v)) != json_string_length(v))
                        return xb_err_msg(err, EINVAL, "`env`: `%.64s` must be a name ([A-Za-z_][A-Za-z0-9_]*) with a "
                                          "string value of at most 64 KiB", k);
        }
        return 0;
}

static int
parse_run(json_t *args, const char **code, uint64_t *timeout, uint64_t *yield, uint64_t *limit, struct xb_err *err)
{
        static const char *const fields[] = { "code", "timeout_s", "yield_after_s", "output_limit", "env", NULL };
        int rc;

        *timeout = CELL_TIMEOUT_DEFAULT_MS;
        if ((rc = body_fields(args, 2, fields, err)) < 0 || (rc = xb_jsonv_str(args, "code", CODE_MAX, code, err)) < 0 ||
            (rc = xb_jsonv_seconds(args, "timeout_s", 0, 86400, timeout, err)) < 0 ||
            (rc = xb_jsonv_seconds(args, "yield_after_s", 0.01, 86400, yield, err)) < 0 ||
            (rc = xb_jsonv_uint(args, "output_limit", 1024, 64u << 20, limit, err)) < 0)
                return rc;
        if (!*code)
                return xb_err_msg(err, EINVAL, "`code` is required: the cell to run");
        return check_env(json_object_get(args, "env"), err);
}

static void
run_code(struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        struct xb_session *ss = op_session(core, tenant, args, call);
        struct xb_err err = { 0 };
        const char *code = NULL;
        uint64_t timeout, yield = 0, limit = 0;

        if (!ss)
                return;
        if (parse_run(args, &code, &timeout, &yield, &limit, &err) < 0) {
                fail_invalid(call, &err, "send {\"code\": \"print(1+1)\"}");
                return;
        }
        xb_session_run(ss, call, code, json_object_get(args, "env"), timeout, yield, limit);
}

static void
wait_session(struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        static const char *const fields[] = { "timeout_s", NULL };
        struct xb_session *ss = op_session(core, tenant, args, call);
        struct xb_err err = { 0 };
        uint64_t t = 30000;

        if (!ss)
                return;
        if (body_fields(args, 2, fields, &err) < 0 || xb_jsonv_seconds(args, "timeout_s", 0.01, 3600, &t, &err) < 0) {
                fail_invalid(call, &err, NULL);
                return;
        }
        xb_session_wait(ss, call, t);
}

static void
interrupt_session(struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        struct xb_session *ss = op_session(core, tenant, args, call);

        if (!ss)
                return;
        xb_session_interrupt(ss);
        xb_call_done(call, xb_session_json(ss));
}

static void
restart_session(struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        struct xb_session *ss = op_session(core, tenant, args, call);

        if (!ss)
                return;
        xb_session_restart(ss);
        xb_call_done(call, xb_session_json(ss));
}

static void
session_input(struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        static const char *const fields[] = { "data", NULL };
        struct xb_session *ss = op_session(core, tenant, args, call);
        struct xb_err err = { 0 };
        const char *data = NULL;

        if (!ss)
                return;
        if (body_fields(args, 2, fields, &err) < 0 || xb_jsonv_str(args, "data", 1 << 20, &data, &err) < 0 || !data) {
                if (!err.msg[0])
                        xb_err_msg(&err, EINVAL, "`data` is required: the text to type, e.g. \"y\\n\"");
                fail_invalid(call, &err, NULL);
                return;
        }
        if (xb_session_input(ss, data, &err) < 0) {
                err.ecode = XB_E_NO_INPUT;
                xb_call_fail(call, &err);
                return;
        }
        xb_call_done(call, json_pack("{s:b}", "ok", 1));
}

static void
get_variable(struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        struct xb_session *ss = op_session(core, tenant, args, call);
        const char *name = json_string_value(json_object_get(args, "name"));

        if (!ss)
                return;
        if (!xb_op_identifier(name)) {
                xb_call_failf(call, XB_E_BAD_VARIABLE_NAME, NULL, "`%.64s` is not a variable name", name ? name : "");
                return;
        }
        xb_session_variable(ss, call, name);
}

const struct xb_op xb_ops_sessions[] = {
        { "create_session", create_session },
        { "list_sessions", list_sessions },
        { "get_session", get_session },
        { "delete_session", delete_session },
        { "run_code", run_code },
        { "wait_session", wait_session },
        { "interrupt_session", interrupt_session },
        { "restart_session", restart_session },
        { "session_input", session_input },
        { "get_variable", get_variable },
        { NULL, NULL },
};
