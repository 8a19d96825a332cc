/* Operations on commands and processes: exec, start, list, describe,
 * read output by offsets, write stdin, signal, wait, forget. Each validates
 * its arguments completely before acting, and every error names the field. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "core/core.h"
#include "core/quota.h"
#include "ops/jsonv.h"
#include "ops/op_args.h"
#include "ops/ops.h"
#include "proc/env.h"

#define CMD_MAX (256u << 10)
#define STDIN_MAX (16u << 20)
#define ARGV_MAX 4096
#define EXEC_TIMEOUT_DEFAULT_MS (120u * 1000)
#define EXEC_OUTPUT_DEFAULT (1u << 20)
#define PROC_OUTPUT_DEFAULT (4u << 20)
#define READ_MAX_DEFAULT (1u << 20)

static const char *const path_id[] = { "id", NULL };
static const char *const path_pid[] = { "id", "pid", NULL };

static void
fail_invalid(struct xb_call *c, struct xb_err *err, enum xb_ecode ecode)
{
        err->ecode = ecode;
        xb_call_fail(c, err);
}

/* ---- exec and process start ---- */

struct cmd_spec {
        struct xb_proc_spec spec;
        const char **argv_view;      /* into the arguments */
        char *shell_argv[4];
        char **req_env;              /* "K=V" from the arguments */
        size_t nreq_env;
        char **env;                  /* merged */
        json_t *env_obj;             /* the request's own, for listing */
};

static void
cmd_spec_free(struct cmd_spec *c)
{
        free(c->argv_view);
        xb_strv_free(c->req_env);
        xb_strv_free(c->env);
        json_decref(c->env_obj);
}

/* `pty`: {"cols", "rows"}, each 1..4096 (absent: 80x24). */
static int
parse_pty(json_t *body, struct xb_proc_spec *spec, struct xb_err *err)
{
        static const char *const fields[] = { "cols", "rows", NULL };
        json_t *v = json_object_get(body, "pty");
        uint64_t cols = 80, rows = 24;
        int r;

        if (!v || json_is_null(v))
                return 0;
        if (!json_is_object(v))
                return xb_err_msg(err, EINVAL, "`pty` must be an object such as {\"cols\": 80, \"rows\": 24}");
        if ((r = xb_jsonv_fields(v, fields, err)) < 0 || (r = xb_jsonv_uint(v, "cols", 1, 4096, &cols, err)) < 0 ||
            (r = xb_jsonv_uint(v, "rows", 1, 4096, &rows, err)) < 0) {
                size_t n = strlen(err->msg);

                snprintf(err->msg + n, sizeof(err->msg) - n, " (in `pty`)");
                return r;
        }
        spec->tty = true;
        spec->cols = (uint16_t)cols;
        spec->rows = (uint16_t)rows;
        return 0;
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
        const char *cmd = NULL, *cwd = NULL, *user = NULL, *stdin_s = NULL, *tag = NULL;
        uint64_t timeout = background ? 0 : EXEC_TIMEOUT_DEFAULT_MS, yield = 0;
        uint64_t out_limit = background ? PROC_OUTPUT_DEFAULT : EXEC_OUTPUT_DEFAULT;
        size_t nargv = 0;
        uint32_t uid;
        int r;

        if ((r = xb_jsonv_str(body, "cmd", CMD_MAX, &cmd, err)) < 0 ||
            (r = xb_jsonv_strv(body, "argv", ARGV_MAX, CMD_MAX, &c->argv_view, &nargv, err)) < 0 ||
            (r = xb_jsonv_str(body, "cwd", 4096, &cwd, err)) < 0 ||
            (r = xb_jsonv_str(body, "user", 16, &user, err)) < 0 ||
            (r = xb_jsonv_str(body, "stdin", STDIN_MAX, &stdin_s, err)) < 0 ||
            (r = xb_jsonv_seconds(body, "timeout_s", 0, 86400, &timeout, err)) < 0 ||
            (r = xb_jsonv_seconds(body, "yield_after_s", 0.01, 86400, &yield, err)) < 0 ||
            (r = xb_jsonv_uint(body, "output_limit", XB_OUTPUT_MIN, XB_OUTPUT_MAX, &out_limit, err)) < 0 ||
            (r = xb_jsonv_env(body, "env", &c->req_env, &c->nreq_env, err)) < 0 ||
            (r = xb_jsonv_str(body, "tag", 256, &tag, err)) < 0 || (r = parse_pty(body, &c->spec, err)) < 0)
                return r;
        if (tag && !*tag)
                return xb_err_msg(err, EINVAL, "`tag` must not be empty");
        c->spec.tag = tag;
        if (json_is_object(json_object_get(body, "env")))
                c->spec.req_env = c->env_obj = json_deep_copy(json_object_get(body, "env"));
        if (!!cmd == !!c->argv_view)
                return xb_err_msg(err, EINVAL, "give exactly one of `cmd` (a shell command line) or `argv` "
                                  "(a program and its arguments)");
        if (c->argv_view && nargv == 0)
                return xb_err_msg(err, EINVAL, "`argv` must name a program: [\"python3\", \"-c\", \"print(1)\"]");
        if (cwd && cwd[0] != '/')
                return xb_err_msg(err, EINVAL, "`cwd` must be an absolute path such as /home/user");
        if (user && strcmp(user, "user") && strcmp(user, "root"))
                return xb_err_msg(err, EINVAL, "`user` must be \"user\" (uid 1000, the default) or \"root\"");
        /* Unset: the sandbox's own default ("user" on create). */
        uid = !user ? x->uid : !strcmp(user, "root") ? 0 : XB_USER_UID;
        if (cmd) {
                c->shell_argv[0] = (char *)shell_path();
                c->shell_argv[1] = (char *)"-c";
                c->shell_argv[2] = (char *)cmd;
                c->spec.argv = c->shell_argv;
        } else
                c->spec.argv = (char **)c->argv_view;
        /* Sandbox env, then the request's; both on top of the allowlist. */
        {
                const char *const *net = xb_sbx_net_env(x);
                size_t nx = 0, nn = 0;
                const char **all;

                /* The proxy's address first: the sandbox's env and the request's may override it. */
                for (; net && net[nn]; nn++)
                        ;
                for (char **e = x->env; e && *e; e++)
                        nx++;
                all = calloc(nn + nx + c->nreq_env + 1, sizeof(*all));
                if (!all)
                        return xb_err_set(err, ENOMEM, "env");
                for (size_t i = 0; i < nn; i++)
                        all[i] = net[i];
                for (size_t i = 0; i < nx; i++)
                        all[nn + i] = x->env[i];
                for (size_t i = 0; i < c->nreq_env; i++)
                        all[nn + nx + i] = c->req_env[i];
                r = xb_env_build("/home/user", uid, all, nn + nx + c->nreq_env, &c->env, err);
                free(all);
                if (r < 0)
                        return r;
        }
        c->spec.env = c->env;
        c->spec.cwd = cwd ? cwd : x->cwd ? x->cwd : "/home/user";
        c->spec.uid = uid;
        c->spec.timeout_ms = timeout;
        c->spec.yield_ms = yield;
        c->spec.output_limit = out_limit;
        c->spec.stdin_data = stdin_s;
        c->spec.stdin_len = stdin_s ? strlen(stdin_s) : 0;
        c->spec.keep_stdin = background;
        return 0;
}

/* Validate and spawn; NULL after failing c. */
static struct xb_proc *
start_cmd(struct xb_core *s, int tenant, json_t *args, struct xb_call *c, bool background)
{
        static const char *const exec_fields[] = { "cmd", "argv", "cwd", "env", "stdin", "timeout_s", "output_limit",
                                                   "yield_after_s", "user", "pty", NULL };
        static const char *const start_fields[] = { "cmd", "argv", "cwd", "env", "stdin", "timeout_s", "output_limit",
                                                    "user", "pty", "tag", NULL };
        struct xb_sbx *x = xb_op_sandbox(s, tenant, args, c);
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct cmd_spec cs = { 0 };
        struct xb_err err = { 0 };
        struct xb_proc *p;

        if (!x)
                return NULL;
        body = xb_op_body(args, path_id);
        if (!body) {
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return NULL;
        }
        if (xb_jsonv_fields(body, background ? start_fields : exec_fields, &err) < 0 ||
            parse_cmd(body, x, background, &cs, &err) < 0) {
                cmd_spec_free(&cs);
                fail_invalid(c, &err, background ? XB_E_INVALID_PROCESS_START : XB_E_INVALID_COMMAND);
                return NULL;
        }
        p = xb_quota_check_exec(x, &err) < 0 ? NULL : xb_proc_start(x, &cs.spec, background, &err);
        cmd_spec_free(&cs);
        if (!p) {
                xb_call_fail(c, &err);
                return NULL;
        }
        xb_sbx_used(x);
        return p;
}

static void
op_exec(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        struct xb_proc *p = start_cmd(s, tenant, args, c, false);

        if (p)
                xb_proc_exec(p, c);
}

static void
op_start(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        struct xb_proc *p = start_cmd(s, tenant, args, c, true);

        if (p)
                xb_proc_wait_spawn(p, c);
}

/* ---- processes ---- */

static void
op_list(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        struct xb_sbx *x = xb_op_sandbox(s, tenant, args, c);
        json_t *d = json_object_get(args, "detail");

        if (x)
                xb_call_done(c, json_pack("{s:o}", "processes",
                                          xb_proc_list_json(x, json_is_true(d) || (json_is_string(d) &&
                                                                                  !strcmp(json_string_value(d), "true")))));
}

static void
op_get(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        struct xb_proc *p = xb_op_process(s, tenant, args, c);

        if (p)
                xb_call_done(c, xb_proc_json(p, false));
}

static void
op_delete(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        struct xb_proc *p = xb_op_process(s, tenant, args, c);

        if (!p)
                return;
        xb_proc_forget(p);
        xb_call_done(c, NULL);
}

/* A whole number at most max: a JSON integer, or its decimal string (a
 * REST query). Absent leaves *ret; -1 for anything else. */
static int
arg_u64(json_t *args, const char *name, uint64_t max, uint64_t *ret)
{
        json_t *v = json_object_get(args, name);
        unsigned long long n;

        if (!v || json_is_null(v))
                return 0;
        if (json_is_integer(v)) {
                if (json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
                        return -1;
                *ret = (uint64_t)json_integer_value(v);
                return 0;
        }
        if (json_is_string(v)) {
                const char *s = json_string_value(v);
                char *end;

                errno = 0;
                n = strtoull(s, &end, 10);
                if (errno || *end || end == s || n > max)
                        return -1;
                *ret = n;
                return 0;
        }
        return -1;
}

static void
op_read(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        struct xb_proc *p = xb_op_process(s, tenant, args, c);
        uint64_t oo = 0, eo = 0, max = READ_MAX_DEFAULT, wait_s = 0;

        if (!p)
                return;
        if (arg_u64(args, "stdout_offset", UINT64_MAX / 2, &oo) < 0 ||
            arg_u64(args, "stderr_offset", UINT64_MAX / 2, &eo) < 0 || arg_u64(args, "max_bytes", 16 << 20, &max) < 0 ||
            arg_u64(args, "wait_s", 3600, &wait_s) < 0) {
                xb_call_failf(c, XB_E_BAD_OFFSETS, NULL, "a query parameter is not a valid number");
                return;
        }
        xb_proc_read(p, c, oo, eo, max ? max : 1, wait_s * 1000);
}

/* A process operation's body: args without the path's keys; NULL (and c
 * answered) when out of memory. */
static json_t *
proc_body(json_t *args, struct xb_call *c)
{
        json_t *body = xb_op_body(args, path_pid);

        if (!body)
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
        return body;
}

static void
op_input(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "data", "eof", "encoding", NULL };
        struct xb_proc *p = xb_op_process(s, tenant, args, c);
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        _cleanup_free_ void *raw = NULL;
        struct xb_err err = { 0 };
        const char *data = "", *enc = "utf-8";
        size_t len;
        bool eof = false;

        if (!p || !(body = proc_body(args, c)))
                return;
        if (xb_jsonv_fields(body, fields, &err) < 0 || xb_jsonv_str(body, "data", STDIN_MAX, &data, &err) < 0 ||
            xb_jsonv_bool(body, "eof", &eof, &err) < 0 || xb_jsonv_str(body, "encoding", 16, &enc, &err) < 0) {
                fail_invalid(c, &err, XB_E_INVALID_STDIN);
                return;
        }
        len = strlen(data);
        if (strcmp(enc, "utf-8") && strcmp(enc, "base64")) {
                xb_err_msg(&err, EINVAL, "`encoding` must be \"utf-8\" or \"base64\"");
                fail_invalid(c, &err, XB_E_INVALID_STDIN);
                return;
        }
        /* Raw bytes (a terminal's keys, binary input) come as base64. */
        if (!strcmp(enc, "base64")) {
                if (xb_base64_decode_alloc(data, len, len, 0, &raw, &len) < 0) {
                        xb_err_msg(&err, EINVAL, "`data` is not valid base64");
                        fail_invalid(c, &err, XB_E_INVALID_STDIN);
                        return;
                }
                data = (const char *)raw;
        }
        if (xb_proc_write_stdin(p, data, len, eof, &err) < 0) {
                xb_call_fail(c, &err);
                return;
        }
        xb_call_done(c, json_pack("{s:b}", "ok", 1));
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
op_kill(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "signal", NULL };
        struct xb_proc *p = xb_op_process(s, tenant, args, c);
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct xb_err err = { 0 };
        json_t *v;
        int sig;

        if (!p || !(body = proc_body(args, c)))
                return;
        if (xb_jsonv_fields(body, fields, &err) < 0) {
                fail_invalid(c, &err, XB_E_INVALID);
                return;
        }
        v = json_object_get(body, "signal");
        sig = v ? signal_number(v) : SIGTERM;
        if (sig < 0) {
                xb_call_failf(c, XB_E_BAD_SIGNAL, NULL, "`signal` is not a signal");
                return;
        }
        if (!xb_proc_running(p)) {
                xb_call_failf(c, XB_E_PROCESS_FINISHED, NULL, "process %d has already finished", (int)xb_proc_pid(p));
                return;
        }
        xb_proc_signal(p, sig);
        xb_call_done(c, json_pack("{s:b,s:i}", "ok", 1, "signal", sig));
}

static void
op_wait(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "timeout_s", NULL };
        struct xb_proc *p = xb_op_process(s, tenant, args, c);
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct xb_err err = { 0 };
        uint64_t t = 0;

        if (!p || !(body = proc_body(args, c)))
                return;
        if (xb_jsonv_fields(body, fields, &err) < 0 || xb_jsonv_seconds(body, "timeout_s", 0, 86400, &t, &err) < 0) {
                fail_invalid(c, &err, XB_E_INVALID);
                return;
        }
        xb_proc_wait(p, c, t);
}

static void
op_resize(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "cols", "rows", NULL };
        struct xb_proc *p = xb_op_process(s, tenant, args, c);
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct xb_err err = { 0 };
        uint64_t cols = 0, rows = 0;

        if (!p || !(body = proc_body(args, c)))
                return;
        if (xb_jsonv_fields(body, fields, &err) < 0 || xb_jsonv_uint(body, "cols", 1, 4096, &cols, &err) < 0 ||
            xb_jsonv_uint(body, "rows", 1, 4096, &rows, &err) < 0) {
                fail_invalid(c, &err, XB_E_INVALID);
                return;
        }
        if (!cols || !rows) {
                xb_err_msg(&err, EINVAL, "give both `cols` and `rows`, e.g. {\"cols\": 120, \"rows\": 40}");
                fail_invalid(c, &err, XB_E_INVALID);
                return;
        }
        if (xb_proc_resize(p, (uint16_t)rows, (uint16_t)cols, &err) < 0) {
                xb_call_fail(c, &err);
                return;
        }
        xb_call_done(c, json_pack("{s:b,s:I,s:I}", "ok", 1, "cols", (json_int_t)cols, "rows", (json_int_t)rows));
}

/* Stream a process's output from now on (or from the start), then its
 * result; see xb_proc_attach. */
static void
op_attach(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "from", "encoding", "tag", NULL };
        struct xb_proc *p = xb_op_process(s, tenant, args, c);
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct xb_err err = { 0 };
        const char *from = "start", *enc = "base64";

        if (!p || !(body = proc_body(args, c)))
                return;
        if (xb_jsonv_fields(body, fields, &err) < 0 || xb_jsonv_str(body, "from", 16, &from, &err) < 0 ||
            xb_jsonv_str(body, "encoding", 16, &enc, &err) < 0) {
                fail_invalid(c, &err, XB_E_INVALID);
                return;
        }
        if ((strcmp(from, "start") && strcmp(from, "now")) || (strcmp(enc, "base64") && strcmp(enc, "utf-8"))) {
                xb_err_msg(&err, EINVAL, "`from` must be \"start\" or \"now\", `encoding` \"base64\" or \"utf-8\"");
                fail_invalid(c, &err, XB_E_INVALID);
                return;
        }
        xb_proc_attach(p, c, !strcmp(from, "start"), !strcmp(enc, "base64"));
}

const struct xb_op xb_ops_proc[] = {
        { "run_command", op_exec },
        { "process_start", op_start },
        { "list_processes", op_list },
        { "get_process", op_get },
        { "delete_process", op_delete },
        { "process_read", op_read },
        { "process_input", op_input },
        { "process_kill", op_kill },
        { "wait_process", op_wait },
        { "process_resize", op_resize },
        { "process_attach", op_attach },
        { NULL, NULL },
};
