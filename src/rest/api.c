/* REST routes for sandboxes, exec and processes: each is an operation
 * (ops/op_sandbox.c, ops/op_proc.c), which validates its arguments; what
 * REST adds is the status, and its own words where they name routes. The
 * helpers the other API modules share are here too. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "ops/jsonv.h"
#include "ops/tool_result.h"
#include "rest/rest.h"
#include "rest/status.h"
#include "rest/call.h"

void
xb_rest_clear(struct xb_rest *rs)
{
        if (rs->default_sbx)
                for (size_t i = 0; i < rs->ntenants; i++)
                        free(rs->default_sbx[i]);
        free(rs->default_sbx);
        rs->default_sbx = NULL;
        if (rs->edits)
                for (size_t i = 0; i < (rs->ntenants ? rs->ntenants : 1); i++)
                        xb_edit_hist_free(&rs->edits[i]);
        free(rs->edits);
        rs->edits = NULL;
}

void
xb_api_bad_request(struct xb_req *r, const struct xb_err *err, const char *hint)
{
        xb_reply_error(r, 400, "invalid_request", hint ? hint : "fix the field named in the message; "
                       "see GET /openapi.json for the schema", "%s", err->msg);
}

struct xb_sbx *
xb_api_sandbox(struct xb_req *r)
{
        struct xb_core *s = xb_rest_of(r)->core;
        const char *id = xb_req_param(r, 0);
        struct xb_err err = { 0 };
        /* As an operation's: paused is 409, one that ended lately is 410. */
        struct xb_sbx *x = xb_sbx_use(s, id, xb_req_tenant(r), &err);

        if (!x)
                xb_rest_fail(r, &err);
        return x;
}

/* ---- REST's words ---- */

#define RUNNING_HINT "the command is still running; read more output with GET " \
                     "/v1/sandboxes/{id}/processes/{pid}/output?stdout_offset=N&stderr_offset=M, or wait with " \
                     "POST .../processes/{pid}/wait"

/* A result still running (a soft timeout, a wait that timed out) says how
 * to go on, right after its offsets. */
static json_t *
running_hint(struct xb_req *r, const char *event, json_t *res)
{
        const char *st = json_string_value(json_object_get(res, "status"));
        const char *k;
        json_t *v, *o;

        (void)r;
        if (event || !st || strcmp(st, "running") || !json_object_get(res, "stderr_offset") || !(o = json_object()))
                return res;
        json_object_foreach(res, k, v) {
                json_object_set(o, k, v);
                if (!strcmp(k, "stderr_offset"))
                        json_object_set_new(o, "hint", json_string(RUNNING_HINT));
        }
        json_decref(res);
        return o;
}

static void
start_error(struct xb_err *err, bool streamed)
{
        size_t n = strlen(err->msg);

        (void)streamed;
        if (err->ecode == XB_E_TOO_MANY_PROCESSES)
                snprintf(err->msg + n, sizeof(err->msg) - n, "; delete finished ones with DELETE .../processes/{pid}");
}

static void
exec_error(struct xb_err *err, bool streamed)
{
        /* Once the stream is open only the spawn can fail; its event is terse. */
        if (streamed && err->code) {
                err->ecode = XB_E_SPAWN_FAILED;
                snprintf(err->msg, sizeof(err->msg), "%s", strerror(err->code));
                return;
        }
        start_error(err, streamed);
}

static const struct xb_rest_decor exec_decor = { .shape = running_hint, .error = exec_error };
static const struct xb_rest_decor start_decor = { .error = start_error };
static const struct xb_rest_decor wait_decor = { .shape = running_hint };

/* ---- routes ---- */

#define SBX "/v1/sandboxes/{id}"
#define PROC SBX "/processes/{pid}"

static const struct xb_rest_op_route
        create_route = { .op = "sandbox_create", .tmpl = "/v1/sandboxes", .status = 201 },
        list_route = { .op = "sandbox_list", .tmpl = "/v1/sandboxes", .no_body = true },
        get_route = { .op = "get_sandbox", .tmpl = SBX, .no_body = true },
        delete_route = { .op = "sandbox_delete", .tmpl = SBX, .status = 204, .no_body = true },
        keepalive_route = { .op = "keepalive_sandbox", .tmpl = SBX "/keepalive", .check_op = "get_sandbox" },
        network_get_route = { .op = "get_network", .tmpl = SBX "/network", .no_body = true },
        network_route = { .op = "sandbox_network", .tmpl = SBX "/network", .check_op = "get_sandbox",
                          .bad_body = XB_E_INVALID_NETWORK },
        network_log_route = { .op = "network_log", .tmpl = SBX "/network/log", .no_body = true,
                              .query = { { "offset", 'u' }, { "limit", 'u' } } },
        snapshot_route = { .op = "sandbox_snapshot", .tmpl = SBX "/snapshot", .status = 201, .check_op = "get_sandbox" },
        fork_route = { .op = "sandbox_fork", .tmpl = SBX "/fork", .status = 201, .check_op = "get_sandbox" },
        install_route = { .op = "install", .tmpl = SBX "/install", .sse = true },
        templates_route = { .op = "template_list", .tmpl = "/v1/templates", .no_body = true },
        template_build_route = { .op = "template_build", .tmpl = "/v1/templates", .status = 201, .sse = true },
        template_route = { .op = "get_template", .tmpl = "/v1/templates/{name}", .no_body = true },
        template_delete_route = { .op = "template_delete", .tmpl = "/v1/templates/{name}", .status = 204,
                                  .no_body = true },
        secret_create_route = { .op = "secret_create", .tmpl = "/v1/secrets", .status = 201,
                                .bad_body = XB_E_INVALID_SECRET },
        secrets_route = { .op = "list_secrets", .tmpl = "/v1/secrets", .no_body = true,
                          .query = { { "sandbox_id", 's' } } },
        secret_request_route = { .op = "request_secret", .tmpl = SBX "/secrets/{name}/request",
                                 .check_op = "get_sandbox" },
        approvals_route = { .op = "approval_list", .tmpl = "/v1/approvals", .no_body = true, .admin_all = true },
        approval_route = { .op = "approval_decide", .tmpl = "/v1/approvals/{id}", .admin_all = true },
        secret_delete_route = { .op = "secret_delete", .tmpl = "/v1/secrets/{name}", .status = 204,
                                .no_body = true },
        pause_route = { .op = "sandbox_pause", .tmpl = SBX "/pause", .check_op = "get_sandbox" },
        resume_route = { .op = "sandbox_resume", .tmpl = SBX "/resume", .check_op = "get_sandbox" },
        exec_route = { .op = "run_command", .tmpl = SBX "/exec", .sse = true, .bad_body = XB_E_INVALID_COMMAND,
                       .check_op = "get_sandbox", .decor = &exec_decor },
        start_route = { .op = "process_start", .tmpl = SBX "/processes", .status = 201,
                        .bad_body = XB_E_INVALID_PROCESS_START, .check_op = "get_sandbox", .decor = &start_decor },
        procs_route = { .op = "list_processes", .tmpl = SBX "/processes", .no_body = true,
                        .query = { { "detail", 'b' } } },
        proc_route = { .op = "get_process", .tmpl = PROC, .no_body = true },
        proc_delete_route = { .op = "delete_process", .tmpl = PROC, .status = 204, .no_body = true },
        stdin_route = { .op = "process_input", .tmpl = PROC "/stdin", .bad_body = XB_E_INVALID_STDIN,
                        .check_op = "get_process" },
        signal_route = { .op = "process_kill", .tmpl = PROC "/signal", .check_op = "get_process" },
        wait_route = { .op = "wait_process", .tmpl = PROC "/wait", .check_op = "get_process", .decor = &wait_decor },
        resize_route = { .op = "process_resize", .tmpl = PROC "/resize", .check_op = "get_process" },
        attach_route = { .op = "process_attach", .tmpl = PROC "/stream", .sse = true, .no_body = true,
                         .query = { { "from", 's' }, { "encoding", 's' } } },
        watch_route = { .op = "watch_dir", .tmpl = SBX "/files/watch", .sse = true, .no_body = true,
                        .query = { { "path", 's' }, { "recursive", 's' }, { "user", 's' } } },
        watcher_create_route = { .op = "watcher_create", .tmpl = SBX "/watchers", .status = 201,
                                 .check_op = "get_sandbox" },
        watcher_events_route = { .op = "watcher_events", .tmpl = SBX "/watchers/{watcher_id}/events", .no_body = true },
        watcher_delete_route = { .op = "watcher_delete", .tmpl = SBX "/watchers/{watcher_id}", .status = 204,
                                 .no_body = true };

/* GET .../output: the offsets are validated by the operation, after it
 * found the process. A value it could not be given (a NUL byte, bad
 * UTF-8) goes as "", which it refuses like any other non-number. */
static void
read_output(struct xb_req *r)
{
        static const char *const names[] = { "stdout_offset", "stderr_offset", "max_bytes", "wait_s" };
        _cleanup_(xb_json_decrefp) json_t *args = json_object();

        if (!args) {
                xb_reply_error(r, 503, "out_of_memory", "retry", "out of memory");
                return;
        }
        json_object_set_new(args, "id", json_string(xb_req_param(r, 0)));
        json_object_set_new(args, "pid", json_string(xb_req_param(r, 1)));
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                int qerr = 0;
                const char *v = xb_req_query(r, names[i], &qerr);
                json_t *j;

                if (!v && !qerr)
                        continue;
                j = qerr ? NULL : json_string(v);
                json_object_set_new(args, names[i], j ? j : json_string(""));
        }
        xb_rest_run(r, "process_read", args, 200, false);
}

const struct xb_route xb_api_routes_sandboxes[] = {
        { "POST", "/v1/sandboxes", xb_rest_op_handler, 0, &create_route },
        { "GET", "/v1/sandboxes", xb_rest_op_handler, 0, &list_route },
        { "GET", "/v1/sandboxes/{}", xb_rest_op_handler, 0, &get_route },
        { "DELETE", "/v1/sandboxes/{}", xb_rest_op_handler, 0, &delete_route },
        { "POST", "/v1/sandboxes/{}/keepalive", xb_rest_op_handler, 0, &keepalive_route },
        { "GET", "/v1/sandboxes/{}/network", xb_rest_op_handler, 0, &network_get_route },
        { "PATCH", "/v1/sandboxes/{}/network", xb_rest_op_handler, 0, &network_route },
        { "GET", "/v1/sandboxes/{}/network/log", xb_rest_op_handler, 0, &network_log_route },
        { "POST", "/v1/sandboxes/{}/snapshot", xb_rest_op_handler, 0, &snapshot_route },
        { "POST", "/v1/sandboxes/{}/fork", xb_rest_op_handler, 0, &fork_route },
        { "POST", "/v1/sandboxes/{}/install", xb_rest_op_handler, 0, &install_route },
        { "GET", "/v1/templates", xb_rest_op_handler, 0, &templates_route },
        { "POST", "/v1/templates", xb_api_templates_post, XB_ROUTE_SINK | XB_ROUTE_LARGE, &template_build_route },
        { "GET", "/v1/templates/{}", xb_rest_op_handler, 0, &template_route },
        { "DELETE", "/v1/templates/{}", xb_rest_op_handler, 0, &template_delete_route },
        { "POST", "/v1/secrets", xb_rest_op_handler, 0, &secret_create_route },
        { "GET", "/v1/secrets", xb_rest_op_handler, 0, &secrets_route },
        { "DELETE", "/v1/secrets/{}", xb_rest_op_handler, 0, &secret_delete_route },
        { "POST", "/v1/sandboxes/{}/secrets/{}/request", xb_rest_op_handler, 0, &secret_request_route },
        { "GET", "/v1/approvals", xb_rest_op_handler, 0, &approvals_route },
        { "POST", "/v1/approvals/{}", xb_rest_op_handler, 0, &approval_route },
        { "POST", "/v1/sandboxes/{}/pause", xb_rest_op_handler, 0, &pause_route },
        { "POST", "/v1/sandboxes/{}/resume", xb_rest_op_handler, 0, &resume_route },
        { "POST", "/v1/sandboxes/{}/exec", xb_rest_op_handler, 0, &exec_route },
        { "POST", "/v1/sandboxes/{}/processes", xb_rest_op_handler, 0, &start_route },
        { "GET", "/v1/sandboxes/{}/processes", xb_rest_op_handler, 0, &procs_route },
        { "GET", "/v1/sandboxes/{}/processes/{}", xb_rest_op_handler, 0, &proc_route },
        { "DELETE", "/v1/sandboxes/{}/processes/{}", xb_rest_op_handler, 0, &proc_delete_route },
        { "GET", "/v1/sandboxes/{}/processes/{}/output", read_output, 0 },
        { "POST", "/v1/sandboxes/{}/processes/{}/stdin", xb_rest_op_handler, 0, &stdin_route },
        { "POST", "/v1/sandboxes/{}/processes/{}/signal", xb_rest_op_handler, 0, &signal_route },
        { "POST", "/v1/sandboxes/{}/processes/{}/wait", xb_rest_op_handler, 0, &wait_route },
        { "POST", "/v1/sandboxes/{}/processes/{}/resize", xb_rest_op_handler, 0, &resize_route },
        { "GET", "/v1/sandboxes/{}/processes/{}/stream", xb_rest_op_handler, 0, &attach_route },
        { "GET", "/v1/sandboxes/{}/files/watch", xb_rest_op_handler, 0, &watch_route },
        { "POST", "/v1/sandboxes/{}/watchers", xb_rest_op_handler, 0, &watcher_create_route },
        { "GET", "/v1/sandboxes/{}/watchers/{}/events", xb_rest_op_handler, 0, &watcher_events_route },
        { "DELETE", "/v1/sandboxes/{}/watchers/{}", xb_rest_op_handler, 0, &watcher_delete_route },
};
const size_t xb_api_nroutes_sandboxes = sizeof(xb_api_routes_sandboxes) / sizeof(xb_api_routes_sandboxes[0]);
