/* REST handlers for sandboxes, exec and processes. Each validates its
 * input completely before acting, and every error names the field and says
 * what to do next. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "proc/env.h"
#include "ops/jsonv.h"
#include "core/core.h"

#define CMD_MAX (256u << 10)
#define STDIN_MAX (16u << 20)
#define ARGV_MAX 4096
#define EXEC_TIMEOUT_DEFAULT_MS (120u * 1000)
#define EXEC_OUTPUT_DEFAULT (1u << 20)
#define PROC_OUTPUT_DEFAULT (4u << 20)

void
xb_api_bad_request(struct xb_req *r, const struct xb_err *err, const char *hint)
{
        xb_reply_error(r, 400, "invalid_request", hint ? hint : "fix the field named in the message; "
                       "see GET /openapi.json for the schema", "%s", err->msg);
}

struct xb_sbx *
xb_api_sandbox(struct xb_req *r)
{
        struct xb_server *s = xb_req_app(r);
        const char *id = xb_req_param(r, 0);
        struct xb_sbx *x = xb_sbx_find(s, id, xb_req_tenant(r));

        if (!x) {
                xb_reply_error(r, 404, "sandbox_not_found",
                               "list your sandboxes with GET /v1/sandboxes, or create one with POST /v1/sandboxes",
                               "no sandbox with id `%.64s`", id ? id : "");
                return NULL;
        }
        return x;
}

/* ---- sandboxes ---- */

static int
parse_limits(json_t *body, const struct xb_limits *defaults, struct xb_limits *l, struct xb_err *err)
{
        static const char *const fields[] = { "memory", "cpus", "pids", "disk", NULL };
        json_t *lim = json_object_get(body, "limits");
        int r;

        *l = *defaults;
        if (!lim || json_is_null(lim))
                return 0;
        if (!json_is_object(lim))
                return xb_err_msg(err, EINVAL, "`limits` must be an object like {\"memory\": 536870912, \"cpus\": 1}");
        if ((r = xb_jsonv_fields(lim, fields, err)) < 0)
                return xb_err_wrap(err, "limits");
        if ((r = xb_jsonv_uint(lim, "memory", XB_MEMORY_MIN, XB_MEMORY_MAX, &l->memory, err)) < 0 ||
            (r = xb_jsonv_uint(lim, "pids", 8, XB_PIDS_MAX, &l->pids, err)) < 0 ||
            (r = xb_jsonv_uint(lim, "disk", XB_DISK_MIN, XB_DISK_MAX, &l->disk, err)) < 0)
                return xb_err_wrap(err, "limits");
        {
                json_t *c = json_object_get(lim, "cpus");

                if (c && !json_is_null(c)) {
                        double d = json_number_value(c);

                        if (!json_is_number(c) || d < 0.01 || d > XB_CPUS_MAX_MILLI / 1000.0)
                                return xb_err_msg(err, ERANGE, "limits.cpus must be a number of cores between 0.01 and %u",
                                                  XB_CPUS_MAX_MILLI / 1000);
                        l->cpus_milli = (uint32_t)(d * 1000.0 + 0.5);
                }
        }
        return xb_limits_validate(l, err);
}

static int
parse_mounts(json_t *body, struct xb_bind *binds, size_t *n, struct xb_err *err)
{
        json_t *m = json_object_get(body, "mounts"), *e;
        size_t i;

        *n = 0;
        if (!m || json_is_null(m))
                return 0;
        if (!json_is_array(m) || json_array_size(m) > 32)
                return xb_err_msg(err, EINVAL, "`mounts` must be an array of at most 32 objects "
                                  "{\"host\": \"/srv/data\", \"path\": \"/mnt/data\", \"readonly\": true}");
        json_array_foreach(m, i, e) {
                static const char *const fields[] = { "host", "path", "readonly", NULL };
                const char *host = NULL, *path = NULL;
                bool ro = true;
                int r;

                if (!json_is_object(e))
                        return xb_err_msg(err, EINVAL, "mounts[%zu] must be an object", i);
                if ((r = xb_jsonv_fields(e, fields, err)) < 0 || (r = xb_jsonv_str(e, "host", 1024, &host, err)) < 0 ||
                    (r = xb_jsonv_str(e, "path", 1024, &path, err)) < 0 || (r = xb_jsonv_bool(e, "readonly", &ro, err)) < 0)
                        return xb_err_wrap(err, "mounts[%zu]", i);
                if (!host || !path)
                        return xb_err_msg(err, EINVAL, "mounts[%zu] needs `host` and `path`", i);
                binds[i] = (struct xb_bind){ .host = (char *)host, .dest = (char *)path, .rw = !ro };
                (*n)++;
        }
        return xb_binds_validate(binds, *n, err);
}

static void
create_sandbox(struct xb_req *r)
{
        static const char *const fields[] = { "limits", "env", "timeout_s", "mounts", "metadata", "template", NULL };
        struct xb_server *s = xb_req_app(r);
        struct xb_err err = { 0 };
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct xb_limits l;
        struct xb_bind binds[32];
        size_t nbinds = 0, body_len;
        const char *body_s = xb_req_body(r, &body_len);
        char **env = NULL;
        uint64_t ttl = XB_TTL_DEFAULT_MS;
        json_t *meta;
        struct xb_sbx *x;
        const char *tmpl = NULL;

        if (xb_jsonv_parse(body_s, body_len, &body, &err) < 0 || xb_jsonv_fields(body, fields, &err) < 0 ||
            parse_limits(body, &s->o.defaults, &l, &err) < 0 || parse_mounts(body, binds, &nbinds, &err) < 0 ||
            xb_jsonv_seconds(body, "timeout_s", 1, XB_TTL_MAX_MS / 1000.0, &ttl, &err) < 0 ||
            xb_jsonv_str(body, "template", 64, &tmpl, &err) < 0 || xb_jsonv_env(body, "env", &env, NULL, &err) < 0) {
                xb_api_bad_request(r, &err, NULL);
                return;
        }
        if (tmpl && strcmp(tmpl, "base") && strcmp(tmpl, "host") && strcmp(tmpl, "code-interpreter-v1")) {
                xb_strv_free(env);
                xb_reply_error(r, 400, "invalid_request", "leave `template` out, or use \"base\"",
                               "unknown template `%.64s`; this server offers the host image only", tmpl);
                return;
        }
        meta = json_object_get(body, "metadata");
        if (meta && !json_is_null(meta) && (!json_is_object(meta) || json_object_size(meta) > 64)) {
                xb_strv_free(env);
                xb_reply_error(r, 400, "invalid_request", "pass metadata as a flat object of strings",
                               "`metadata` must be an object with at most 64 keys");
                return;
        }
        {
                char *js = meta ? json_dumps(meta, JSON_COMPACT) : NULL;
                size_t mlen = js ? strlen(js) : 0;

                free(js);
                if (mlen > 16384) {
                        xb_strv_free(env);
                        xb_reply_error(r, 400, "invalid_request", "keep metadata small; store data in files instead",
                                       "`metadata` is %zu bytes; the limit is 16384", mlen);
                        return;
                }
        }
        if (xb_sbx_create(s, xb_req_tenant(r), &l, binds, nbinds, env, json_is_null(meta) ? NULL : meta, ttl, &x,
                          &err) < 0) {
                xb_strv_free(env);
                if (err.code == EPERM || err.code == EINVAL || err.code == ENOENT)
                        xb_reply_error(r, 400, "invalid_mount", "mount only directories the operator allowed with "
                                       "--allow-mount", "%s", err.msg);
                else if (err.code == EAGAIN)
                        xb_reply_error(r, 429, "too_many_sandboxes", "delete sandboxes you no longer need", "%s", err.msg);
                else
                        xb_reply_error(r, 500, "sandbox_failed", "retry; if it persists, check the server log",
                                       "%s", err.msg);
                return;
        }
        xb_reply_json(r, 201, xb_sbx_json(x));
}

static void
list_one(struct xb_sbx *x, void *data)
{
        json_t **acc = data;

        if ((int)json_integer_value(acc[1]) == x->tenant)
                json_array_append_new(acc[0], xb_sbx_json(x));
}

static void
list_sandboxes(struct xb_req *r)
{
        json_t *acc[2] = { json_array(), json_integer(xb_req_tenant(r)) };

        xb_sbx_foreach(xb_req_app(r), list_one, acc);
        json_decref(acc[1]);
        xb_reply_json(r, 200, json_pack("{s:o}", "sandboxes", acc[0]));
}

static void
get_sandbox(struct xb_req *r)
{
        struct xb_sbx *x = xb_api_sandbox(r);

        if (x)
                xb_reply_json(r, 200, xb_sbx_json(x));
}

static void
delete_sandbox(struct xb_req *r)
{
        struct xb_sbx *x = xb_api_sandbox(r);

        if (!x)
                return;
        xb_sbx_destroy(x, "the sandbox was deleted");
        xb_reply_empty(r, 204);
}

static void
keepalive(struct xb_req *r)
{
        static const char *const fields[] = { "timeout_s", NULL };
        struct xb_sbx *x = xb_api_sandbox(r);
        struct xb_err err = { 0 };
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        size_t len;
        const char *b = xb_req_body(r, &len);
        uint64_t ttl = 0;

        if (!x)
                return;
        if (xb_jsonv_parse(b, len, &body, &err) < 0 || xb_jsonv_fields(body, fields, &err) < 0 ||
            xb_jsonv_seconds(body, "timeout_s", 1, XB_TTL_MAX_MS / 1000.0, &ttl, &err) < 0) {
                xb_api_bad_request(r, &err, NULL);
                return;
        }
        xb_sbx_touch(x, ttl);
        xb_reply_json(r, 200, xb_sbx_json(x));
}

/* ---- exec and processes ---- */

struct cmd_spec {
        struct xb_proc_spec spec;
        const char **argv_view;      /* into the JSON body */
        char *shell_argv[4];
        char **req_env;              /* "K=V" from the request */
        size_t nreq_env;
        char **env;                  /* merged */
};

static void
cmd_spec_free(struct cmd_spec *c)
{
        free(c->argv_view);
        xb_strv_free(c->req_env);
        xb_strv_free(c->env);
}

static const char *
shell_path(void)
{
        /* bash where the host has it, else POSIX sh; sandboxes see the host's /usr. */
        return access("/usr/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
}

/* Fields shared by exec and process start. */
static int
parse_cmd(json_t *body, struct xb_sbx *x, bool background, struct cmd_spec *c, struct xb_err *err)
{
        const char *cmd = NULL, *cwd = NULL, *user = NULL, *stdin_s = NULL;
        uint64_t timeout = background ? 0 : EXEC_TIMEOUT_DEFAULT_MS, yield = 0;
        uint64_t out_limit = background ? PROC_OUTPUT_DEFAULT : EXEC_OUTPUT_DEFAULT;
        size_t nargv = 0;
        int r;

        if ((r = xb_jsonv_str(body, "cmd", CMD_MAX, &cmd, err)) < 0 ||
            (r = xb_jsonv_strv(body, "argv", ARGV_MAX, CMD_MAX, &c->argv_view, &nargv, err)) < 0 ||
            (r = xb_jsonv_str(body, "cwd", 4096, &cwd, err)) < 0 ||
            (r = xb_jsonv_str(body, "user", 16, &user, err)) < 0 ||
            (r = xb_jsonv_str(body, "stdin", STDIN_MAX, &stdin_s, err)) < 0 ||
            (r = xb_jsonv_seconds(body, "timeout_s", 0, 86400, &timeout, err)) < 0 ||
            (r = xb_jsonv_seconds(body, "yield_after_s", 0.01, 86400, &yield, err)) < 0 ||
            (r = xb_jsonv_uint(body, "output_limit", XB_OUTPUT_MIN, XB_OUTPUT_MAX, &out_limit, err)) < 0 ||
            (r = xb_jsonv_env(body, "env", &c->req_env, &c->nreq_env, err)) < 0)
                return r;
        if (!!cmd == !!c->argv_view)
                return xb_err_msg(err, EINVAL, "give exactly one of `cmd` (a shell command line) or `argv` "
                                  "(a program and its arguments)");
        if (c->argv_view && nargv == 0)
                return xb_err_msg(err, EINVAL, "`argv` must name a program: [\"python3\", \"-c\", \"print(1)\"]");
        if (cwd && cwd[0] != '/')
                return xb_err_msg(err, EINVAL, "`cwd` must be an absolute path such as /home/user");
        if (user && strcmp(user, "user") && strcmp(user, "root"))
                return xb_err_msg(err, EINVAL, "`user` must be \"user\" (uid 1000, the default) or \"root\"");
        if (cmd) {
                c->shell_argv[0] = (char *)shell_path();
                c->shell_argv[1] = (char *)"-c";
                c->shell_argv[2] = (char *)cmd;
                c->spec.argv = c->shell_argv;
        } else
                c->spec.argv = (char **)c->argv_view;
        /* Sandbox env, then the request's; both on top of the allowlist. */
        {
                size_t nx = 0;
                const char **all;

                for (char **e = x->env; e && *e; e++)
                        nx++;
                all = calloc(nx + c->nreq_env + 1, sizeof(*all));
                if (!all)
                        return xb_err_set(err, ENOMEM, "env");
                for (size_t i = 0; i < nx; i++)
                        all[i] = x->env[i];
                for (size_t i = 0; i < c->nreq_env; i++)
                        all[nx + i] = c->req_env[i];
                r = xb_env_build("/home/user", user && !strcmp(user, "root") ? 0 : XB_USER_UID, all, nx + c->nreq_env,
                                 &c->env, err);
                free(all);
                if (r < 0)
                        return r;
        }
        c->spec.env = c->env;
        c->spec.cwd = cwd ? cwd : "/home/user";
        c->spec.uid = user && !strcmp(user, "root") ? 0 : XB_USER_UID;
        c->spec.timeout_ms = timeout;
        c->spec.yield_ms = yield;
        c->spec.output_limit = out_limit;
        c->spec.stdin_data = stdin_s;
        c->spec.stdin_len = stdin_s ? strlen(stdin_s) : 0;
        c->spec.keep_stdin = background;
        return 0;
}

static void
reply_start_error(struct xb_req *r, const struct xb_err *err)
{
        if (err->code == EAGAIN)
                xb_reply_error(r, 429, "too_many_processes", "wait for or delete finished processes", "%s", err->msg);
        else if (err->code == E2BIG)
                xb_reply_error(r, 400, "command_too_long", "write long inputs to a file and pass its path", "%s", err->msg);
        else if (err->code == ESRCH)
                xb_reply_error(r, 410, "sandbox_gone", "create a new sandbox", "%s", err->msg);
        else
                xb_reply_error(r, 500, "spawn_failed", "retry; if it persists, delete the sandbox and create another",
                               "%s", err->msg);
}

static void
exec_cmd(struct xb_req *r)
{
        static const char *const fields[] = { "cmd", "argv", "cwd", "env", "stdin", "timeout_s", "output_limit",
                                              "yield_after_s", "user", NULL };
        struct xb_sbx *x = xb_api_sandbox(r);
        struct xb_err err = { 0 };
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct cmd_spec c = { 0 };
        size_t len;
        const char *b = xb_req_body(r, &len);
        struct xb_proc *p;

        if (!x)
                return;
        if (xb_jsonv_parse(b, len, &body, &err) < 0 || xb_jsonv_fields(body, fields, &err) < 0 ||
            parse_cmd(body, x, false, &c, &err) < 0) {
                cmd_spec_free(&c);
                xb_api_bad_request(r, &err, "send {\"cmd\": \"ls -la\"} or {\"argv\": [\"ls\", \"-la\"]}; "
                                   "see GET /v1/guide");
                return;
        }
        p = xb_proc_start(x, &c.spec, false, &err);
        cmd_spec_free(&c);
        if (!p) {
                reply_start_error(r, &err);
                return;
        }
        xb_sbx_touch(x, 0);
        xb_proc_attach_exec(p, r, xb_req_accepts(r, "text/event-stream"));
}

static void
start_process(struct xb_req *r)
{
        static const char *const fields[] = { "cmd", "argv", "cwd", "env", "stdin", "timeout_s", "output_limit",
                                              "user", NULL };
        struct xb_sbx *x = xb_api_sandbox(r);
        struct xb_err err = { 0 };
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct cmd_spec c = { 0 };
        size_t len;
        const char *b = xb_req_body(r, &len);
        struct xb_proc *p;

        if (!x)
                return;
        if (xb_jsonv_parse(b, len, &body, &err) < 0 || xb_jsonv_fields(body, fields, &err) < 0 ||
            parse_cmd(body, x, true, &c, &err) < 0) {
                cmd_spec_free(&c);
                xb_api_bad_request(r, &err, "send {\"cmd\": \"python3 server.py\"}; see GET /v1/guide");
                return;
        }
        p = xb_proc_start(x, &c.spec, true, &err);
        cmd_spec_free(&c);
        if (!p) {
                reply_start_error(r, &err);
                return;
        }
        xb_sbx_touch(x, 0);
        xb_proc_attach_start(p, r);
}

static void
list_processes(struct xb_req *r)
{
        struct xb_sbx *x = xb_api_sandbox(r);

        if (!x)
                return;
        xb_reply_json(r, 200, json_pack("{s:o}", "processes", xb_proc_list_json(x)));
}

/* The process named by path parameter 1, or a 404. */
static struct xb_proc *
api_proc(struct xb_req *r, struct xb_sbx **ret_x)
{
        struct xb_sbx *x = xb_api_sandbox(r);
        const char *s = xb_req_param(r, 1);
        char *end;
        long pid;
        struct xb_proc *p;

        if (!x)
                return NULL;
        pid = strtol(s, &end, 10);
        p = (*end == '\0' && pid > 0 && pid < 4194304) ? xb_proc_find(x, (pid_t)pid) : NULL;
        if (!p) {
                xb_reply_error(r, 404, "process_not_found", "list processes with GET /v1/sandboxes/{id}/processes",
                               "no process %.32s in sandbox %s", s, x->id);
                return NULL;
        }
        if (ret_x)
                *ret_x = x;
        return p;
}

static void
get_process(struct xb_req *r)
{
        struct xb_proc *p = api_proc(r, NULL);

        if (p)
                xb_reply_json(r, 200, xb_proc_json(p, false));
}

static int
query_u64(struct xb_req *r, const char *name, uint64_t max, uint64_t *ret)
{
        int qerr;
        const char *v = xb_req_query(r, name, &qerr);
        char *end;
        unsigned long long n;

        if (qerr < 0)
                return -1;
        if (!v)
                return 0;
        errno = 0;
        n = strtoull(v, &end, 10);
        if (errno || *end || end == v || n > max)
                return -1;
        *ret = n;
        return 0;
}

static void
read_output(struct xb_req *r)
{
        struct xb_proc *p = api_proc(r, NULL);
        uint64_t oo = 0, eo = 0, max = 1 << 20, wait_s = 0;

        if (!p)
                return;
        if (query_u64(r, "stdout_offset", UINT64_MAX / 2, &oo) < 0 || query_u64(r, "stderr_offset", UINT64_MAX / 2, &eo) < 0 ||
            query_u64(r, "max_bytes", 16 << 20, &max) < 0 || query_u64(r, "wait_s", 3600, &wait_s) < 0) {
                xb_reply_error(r, 400, "invalid_request", "offsets and max_bytes are whole numbers of bytes; wait_s is seconds",
                               "a query parameter is not a valid number");
                return;
        }
        xb_proc_attach_read(p, r, oo, eo, max ? max : 1, wait_s * 1000);
}

static void
write_stdin(struct xb_req *r)
{
        static const char *const fields[] = { "data", "eof", NULL };
        struct xb_proc *p = api_proc(r, NULL);
        struct xb_err err = { 0 };
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        size_t len;
        const char *b = xb_req_body(r, &len), *data = "";
        bool eof = false;

        if (!p)
                return;
        if (xb_jsonv_parse(b, len, &body, &err) < 0 || xb_jsonv_fields(body, fields, &err) < 0 ||
            xb_jsonv_str(body, "data", STDIN_MAX, &data, &err) < 0 || xb_jsonv_bool(body, "eof", &eof, &err) < 0) {
                xb_api_bad_request(r, &err, "send {\"data\": \"text\\n\"}, and {\"eof\": true} to close stdin");
                return;
        }
        if (xb_proc_write_stdin(p, data, strlen(data), eof, &err) < 0) {
                xb_reply_error(r, 409, "stdin_closed", "start the process again if it needs more input", "%s", err.msg);
                return;
        }
        xb_reply_json(r, 200, json_pack("{s:b}", "ok", 1));
}

static int
signal_number(json_t *v)
{
        static const struct { const char *name; int sig; } names[] = {
                { "INT", SIGINT }, { "TERM", SIGTERM }, { "KILL", SIGKILL }, { "HUP", SIGHUP }, { "QUIT", SIGQUIT },
                { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "STOP", SIGSTOP }, { "CONT", SIGCONT },
        };
        const char *s;

        if (json_is_integer(v))
                return json_integer_value(v) >= 1 && json_integer_value(v) <= 64 ? (int)json_integer_value(v) : -1;
        if (!json_is_string(v))
                return -1;
        s = json_string_value(v);
        if (strncasecmp(s, "SIG", 3) == 0)
                s += 3;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (strcasecmp(s, names[i].name) == 0)
                        return names[i].sig;
        return -1;
}

static void
signal_process(struct xb_req *r)
{
        static const char *const fields[] = { "signal", NULL };
        struct xb_proc *p = api_proc(r, NULL);
        struct xb_err err = { 0 };
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        size_t len;
        const char *b = xb_req_body(r, &len);
        int sig;

        if (!p)
                return;
        if (xb_jsonv_parse(b, len, &body, &err) < 0 || xb_jsonv_fields(body, fields, &err) < 0) {
                xb_api_bad_request(r, &err, NULL);
                return;
        }
        sig = json_object_get(body, "signal") ? signal_number(json_object_get(body, "signal")) : SIGTERM;
        if (sig < 0) {
                xb_reply_error(r, 400, "invalid_request", "use a name such as \"SIGINT\", \"SIGTERM\", \"SIGKILL\" or a number 1-64",
                               "`signal` is not a signal");
                return;
        }
        if (!xb_proc_running(p)) {
                xb_reply_error(r, 409, "process_finished", "read its result with GET .../processes/{pid}",
                               "process %d has already finished", (int)xb_proc_pid(p));
                return;
        }
        xb_proc_signal(p, sig);
        xb_reply_json(r, 200, json_pack("{s:b,s:i}", "ok", 1, "signal", sig));
}

static void
wait_process(struct xb_req *r)
{
        static const char *const fields[] = { "timeout_s", NULL };
        struct xb_proc *p = api_proc(r, NULL);
        struct xb_err err = { 0 };
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        size_t len;
        const char *b = xb_req_body(r, &len);
        uint64_t t = 0;

        if (!p)
                return;
        if (xb_jsonv_parse(b, len, &body, &err) < 0 || xb_jsonv_fields(body, fields, &err) < 0 ||
            xb_jsonv_seconds(body, "timeout_s", 0, 86400, &t, &err) < 0) {
                xb_api_bad_request(r, &err, NULL);
                return;
        }
        xb_proc_attach_wait(p, r, t);
}

static void
delete_process(struct xb_req *r)
{
        struct xb_proc *p = api_proc(r, NULL);

        if (!p)
                return;
        xb_proc_forget(p);
        xb_reply_empty(r, 204);
}

const struct xb_route xb_api_routes_sandboxes[] = {
        { "POST", "/v1/sandboxes", create_sandbox, 0 },
        { "GET", "/v1/sandboxes", list_sandboxes, 0 },
        { "GET", "/v1/sandboxes/{}", get_sandbox, 0 },
        { "DELETE", "/v1/sandboxes/{}", delete_sandbox, 0 },
        { "POST", "/v1/sandboxes/{}/keepalive", keepalive, 0 },
        { "POST", "/v1/sandboxes/{}/exec", exec_cmd, 0 },
        { "POST", "/v1/sandboxes/{}/processes", start_process, 0 },
        { "GET", "/v1/sandboxes/{}/processes", list_processes, 0 },
        { "GET", "/v1/sandboxes/{}/processes/{}", get_process, 0 },
        { "DELETE", "/v1/sandboxes/{}/processes/{}", delete_process, 0 },
        { "GET", "/v1/sandboxes/{}/processes/{}/output", read_output, 0 },
        { "POST", "/v1/sandboxes/{}/processes/{}/stdin", write_stdin, 0 },
        { "POST", "/v1/sandboxes/{}/processes/{}/signal", signal_process, 0 },
        { "POST", "/v1/sandboxes/{}/processes/{}/wait", wait_process, 0 },
};
const size_t xb_api_nroutes_sandboxes = sizeof(xb_api_routes_sandboxes) / sizeof(xb_api_routes_sandboxes[0]);
