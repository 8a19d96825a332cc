/* Client commands for a running `execbox serve` (client.h): ls, create,
 * rm, exec and cp. Each is a REST call or two. exec streams the output as
 * the server's SSE events arrive and ends as `execbox run` does
 * (report.h); cp streams files both ways without holding them. `execbox
 * shell` is in cmd_shell.c. Every failure of execbox or a refusal by the
 * server is one stderr line and exit status 125. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/opterr.h"
#include "cli/report.h"
#include "ops/jsonv.h"
#include "proc/env.h"
#include "sandbox/limits.h"

#define STDIN_MAX (16u << 20)   /* the server's bound on exec's stdin */

enum { O_JSON = 2000, O_QUIET, O_MEMORY, O_PIDS, O_CPUS, O_DISK, O_TIMEOUT, O_ENV, O_CWD, O_ROOT };

static int
bad_value(int opt, char **argv, const struct option *opts, const struct xb_err *err)
{
        char typed[128];

        return xb_client_error("%s: %s", xb_opt_typed(opt, argv, opts, typed, sizeof(typed)), err->msg);
}

/* ---- ls ---- */

static const char *
ago(int64_t ms, char *buf, size_t size)
{
        if (ms < 0)
                ms = 0;
        if (ms < 60000)
                snprintf(buf, size, "%llds", (long long)(ms / 1000));
        else if (ms < 3600000)
                snprintf(buf, size, "%lldm", (long long)(ms / 60000));
        else if (ms < 86400000)
                snprintf(buf, size, "%lldh", (long long)(ms / 3600000));
        else
                snprintf(buf, size, "%lldd", (long long)(ms / 86400000));
        return buf;
}

static void
print_table(json_t *list)
{
        struct timespec ts;
        int64_t now;
        size_t i;
        json_t *x;

        clock_gettime(CLOCK_REALTIME, &ts);
        now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
        printf("%-30s %-9s %-8s %-8s %-6s %-10s %s\n", "ID", "STATE", "CREATED", "EXPIRES", "PROCS", "MEMORY", "CPUS");
        json_array_foreach(list, i, x) {
                json_t *lim = json_object_get(x, "limits");
                char created[16], expires[16], mem[32] = "none", cpus[16] = "none";
                uint64_t m = (uint64_t)json_integer_value(json_object_get(lim, "memory"));
                double c = json_number_value(json_object_get(lim, "cpus"));

                if (m)
                        xb_cli_size(m, mem, sizeof(mem));
                if (c > 0)
                        snprintf(cpus, sizeof(cpus), "%g", c);
                printf("%-30s %-9s %-8s %-8s %-6lld %-10s %s\n", json_string_value(json_object_get(x, "id")),
                       json_string_value(json_object_get(x, "state")),
                       ago(now - json_integer_value(json_object_get(x, "created_at_ms")), created, sizeof(created)),
                       ago(json_integer_value(json_object_get(x, "expires_in_ms")), expires, sizeof(expires)),
                       (long long)json_integer_value(json_object_get(x, "processes")), mem, cpus);
        }
}

int
xb_cmd_ls(int argc, char **argv)
{
        static const struct option opts[] = {
                { "json", no_argument, NULL, O_JSON }, { "quiet", no_argument, NULL, 'q' }, XB_CLIENT_LONGOPTS, { 0 },
        };
        struct xb_client c = { 0 };
        struct xb_reply r;
        bool json = false, quiet = false;
        json_t *list, *x;
        size_t i;
        int opt, rc;

        opterr = 0;
        while ((opt = getopt_long(argc, argv, ":hq", opts, NULL)) != -1) {
                switch (opt) {
                case O_JSON: json = true; break;
                case 'q': quiet = true; break;
                case XB_CLIENT_OPT_SERVER:
                case XB_CLIENT_OPT_TOKEN_FILE: xb_client_option(&c, opt, optarg); break;
                case 'h':
                        printf("usage: execbox ls [--json | -q] [OPTIONS]\n\n"
                               "List your sandboxes on the server.\n\n"
                               "  --json             the server's JSON\n"
                               "  -q, --quiet        ids only, one a line\n" XB_CLIENT_USAGE);
                        return 0;
                default: return xb_client_bad_option(opt, argv, opts, "ls");
                }
        }
        if (optind < argc)
                return xb_client_error("unexpected argument `%s`; see `execbox ls --help`", argv[optind]);
        if (xb_client_open(&c) < 0 || xb_client_json(&c, "GET", "/v1/sandboxes", NULL, &r) < 0)
                return XB_EXIT_OWN_ERROR;
        list = json_object_get(r.json, "sandboxes");
        if (r.status != 200 || !json_is_array(list)) {
                rc = xb_client_fail(&r);
                xb_reply_free(&r);
                return rc;
        }
        if (json) {
                json_dumpf(r.json, stdout, JSON_COMPACT);
                fputc('\n', stdout);
        } else if (quiet) {
                json_array_foreach(list, i, x)
                        printf("%s\n", json_string_value(json_object_get(x, "id")));
        } else {
                print_table(list);
        }
        xb_reply_free(&r);
        return fflush(stdout) == 0 ? 0 : XB_EXIT_OWN_ERROR;
}

/* ---- create ---- */

/* --env K=V into obj (an object of strings, as the API takes it). */
static int
env_put(json_t *obj, const char *kv, struct xb_err *err)
{
        _cleanup_free_ char *k = NULL;
        int r = xb_env_check(kv, err);

        if (r < 0)
                return r;
        k = strndup(kv, strcspn(kv, "="));
        if (!k || json_object_set_new(obj, k, json_string(kv + strlen(k) + 1)) < 0)
                return xb_err_msg(err, EINVAL, "the value of %s is not UTF-8 text", k ? k : "it");
        return 0;
}

int
xb_cmd_create(int argc, char **argv)
{
        static const struct option opts[] = {
                { "memory", required_argument, NULL, O_MEMORY }, { "pids", required_argument, NULL, O_PIDS },
                { "cpus", required_argument, NULL, O_CPUS },     { "disk", required_argument, NULL, O_DISK },
                { "timeout", required_argument, NULL, O_TIMEOUT }, { "env", required_argument, NULL, O_ENV },
                { "json", no_argument, NULL, O_JSON },           XB_CLIENT_LONGOPTS, { 0 },
        };
        _cleanup_(xb_json_decrefp) json_t *body = json_object(), *lim = json_object(), *env = json_object();
        struct xb_client c = { 0 };
        struct xb_limits l;
        struct xb_err err = { 0 };
        struct xb_reply r;
        uint64_t ttl = 0;
        bool json = false;
        int opt, rc = 0;

        if (!body || !lim || !env)
                return xb_client_error("out of memory");
        xb_limits_default(&l);
        opterr = 0;
        while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
                switch (opt) {
                case O_MEMORY:
                        if ((rc = xb_parse_size(optarg, &l.memory, &err)) == 0)
                                json_object_set_new(lim, "memory", json_integer((json_int_t)l.memory));
                        break;
                case O_PIDS:
                        if ((rc = xb_parse_u64(optarg, &l.pids, &err)) == 0)
                                json_object_set_new(lim, "pids", json_integer((json_int_t)l.pids));
                        break;
                case O_CPUS:
                        if ((rc = xb_parse_cpus(optarg, &l.cpus_milli, &err)) == 0)
                                json_object_set_new(lim, "cpus", json_real(l.cpus_milli / 1000.0));
                        break;
                case O_DISK:
                        if ((rc = xb_parse_size(optarg, &l.disk, &err)) == 0)
                                json_object_set_new(lim, "disk", json_integer((json_int_t)l.disk));
                        break;
                case O_TIMEOUT:
                        rc = xb_parse_duration_ms(optarg, &ttl, &err);
                        if (rc == 0 && ttl < 1000)
                                rc = xb_err_msg(&err, ERANGE, "a sandbox lives at least 1s");
                        if (rc == 0)
                                json_object_set_new(body, "timeout_s", json_real((double)ttl / 1000.0));
                        break;
                case O_ENV: rc = env_put(env, optarg, &err); break;
                case O_JSON: json = true; break;
                case XB_CLIENT_OPT_SERVER:
                case XB_CLIENT_OPT_TOKEN_FILE: xb_client_option(&c, opt, optarg); break;
                case 'h':
                        printf("usage: execbox create [OPTIONS]\n\n"
                               "Create a sandbox on the server and print its id.\n\n"
                               "  --memory SIZE --pids N --cpus N --disk SIZE\n"
                               "                     its limits (default: the server's)\n"
                               "  --timeout DUR      how long it lives unused (default: the server's)\n"
                               "  --env K=V          a variable every command sees (repeatable)\n"
                               "  --json             print the server's JSON instead\n" XB_CLIENT_USAGE);
                        return 0;
                default: return xb_client_bad_option(opt, argv, opts, "create");
                }
                if (rc == 0 && opt != O_ENV && opt != O_TIMEOUT)
                        rc = xb_limits_validate(&l, &err);
                if (rc < 0)
                        return bad_value(opt, argv, opts, &err);
        }
        if (optind < argc)
                return xb_client_error("unexpected argument `%s`; see `execbox create --help`", argv[optind]);
        if (json_object_size(lim))
                json_object_set(body, "limits", lim);
        if (json_object_size(env))
                json_object_set(body, "env", env);
        if (xb_client_open(&c) < 0 || xb_client_json(&c, "POST", "/v1/sandboxes", body, &r) < 0)
                return XB_EXIT_OWN_ERROR;
        if (r.status != 201 || !json_is_string(json_object_get(r.json, "id")))
                rc = xb_client_fail(&r);
        else if (json)
                json_dumpf(r.json, stdout, JSON_COMPACT), fputc('\n', stdout);
        else
                printf("%s\n", json_string_value(json_object_get(r.json, "id")));
        xb_reply_free(&r);
        if (fflush(stdout) != 0 || ferror(stdout))
                rc = XB_EXIT_OWN_ERROR;
        return rc;
}

/* ---- rm ---- */

int
xb_cmd_rm(int argc, char **argv)
{
        static const struct option opts[] = { XB_CLIENT_LONGOPTS, { 0 } };
        struct xb_client c = { 0 };
        int opt, rc = 0;

        opterr = 0;
        while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
                switch (opt) {
                case XB_CLIENT_OPT_SERVER:
                case XB_CLIENT_OPT_TOKEN_FILE: xb_client_option(&c, opt, optarg); break;
                case 'h':
                        printf("usage: execbox rm [OPTIONS] ID...\n\n"
                               "Delete sandboxes, and everything running in them.\n\n" XB_CLIENT_USAGE);
                        return 0;
                default: return xb_client_bad_option(opt, argv, opts, "rm");
                }
        }
        if (optind >= argc)
                return xb_client_error("no sandbox given; usage: execbox rm ID...");
        if (xb_client_open(&c) < 0)
                return XB_EXIT_OWN_ERROR;
        /* Every id is tried; one that fails makes the status 125. */
        for (int i = optind; i < argc; i++) {
                _cleanup_free_ char *path = xb_client_sandbox_path(argv[i], "");
                struct xb_reply r;

                if (!path) {
                        rc = XB_EXIT_OWN_ERROR;
                        continue;
                }
                if (xb_client_json(&c, "DELETE", path, NULL, &r) < 0)
                        return XB_EXIT_OWN_ERROR;
                if (r.status != 204)
                        rc = xb_client_fail(&r);
                xb_reply_free(&r);
        }
        return rc;
}

/* ---- exec ---- */

struct exec_state {
        json_t *result;         /* the "result" event */
        char error[300];        /* an "error" event's message */
        bool broken;            /* our stdout or stderr went away */
};

static void
exec_event(void *ctx, const char *name, json_t *data)
{
        struct exec_state *x = ctx;
        const char *text = json_string_value(json_object_get(data, "data"));
        int fd = strcmp(name, "stdout") == 0 ? STDOUT_FILENO : strcmp(name, "stderr") == 0 ? STDERR_FILENO : -1;

        if (fd >= 0 && text) {
                if (!x->broken && xb_write_all(fd, text, json_string_length(json_object_get(data, "data"))) < 0)
                        x->broken = true;
        } else if (strcmp(name, "result") == 0 && !x->result) {
                x->result = json_incref(data);
        } else if (strcmp(name, "error") == 0) {
                const char *m = json_string_value(json_object_get(data, "message"));

                snprintf(x->error, sizeof(x->error), "%s", m ? m : "the command could not start");
        }
}

struct exec_body {
        struct xb_sse sse;
        struct xb_buf other;    /* a JSON reply (an error before the stream) */
        struct exec_state *x;
        CURL *h;
};

static size_t
exec_on_body(char *p, size_t size, size_t n, void *ctx)
{
        struct exec_body *b = ctx;
        long status = 0;

        xb_cu.easy_getinfo(b->h, CURLINFO_RESPONSE_CODE, &status);
        if (status == 200)
                return xb_sse_feed(&b->sse, p, size * n) < 0 || b->x->broken ? 0 : size * n;
        return xb_buf_append(&b->other, p, size * n) < 0 ? 0 : size * n;
}

/* Our stdin, read to its end, as the command's: it must be UTF-8 text. */
static int
read_stdin(json_t *body)
{
        struct xb_buf in = { .max = STDIN_MAX + 1 };
        char buf[65536];
        ssize_t n;
        json_t *s;

        while ((n = read(STDIN_FILENO, buf, sizeof(buf))) != 0) {
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 || xb_buf_append(&in, buf, (size_t)n) < 0) {
                        xb_buf_free(&in);
                        return n < 0 ? xb_client_error("read stdin: %s", strerror(errno))
                                     : xb_client_error("stdin is over 16 MiB; copy it in with `execbox cp` and "
                                                       "redirect from the file");
                }
        }
        s = json_stringn(in.data ? in.data : "", in.len);
        xb_buf_free(&in);
        if (!s)
                return xb_client_error("stdin is not UTF-8 text; copy binary input in with `execbox cp`");
        json_object_set_new(body, "stdin", s);
        return 0;
}

/* The sandbox's memory limit, for the kill line; 0 if unknown. */
static uint64_t
sandbox_memory(struct xb_client *c, const char *id)
{
        _cleanup_free_ char *path = xb_client_sandbox_path(id, "");
        struct xb_reply r;
        uint64_t m = 0;

        if (path && xb_client_json(c, "GET", path, NULL, &r) == 0) {
                m = (uint64_t)json_integer_value(json_object_get(json_object_get(r.json, "limits"), "memory"));
                xb_reply_free(&r);
        }
        return m;
}

/* Whether dir is a directory in the sandbox; false when it is not there. */
static bool
remote_dir(struct xb_client *c, const char *id, const char *dir)
{
        _cleanup_free_ char *base = xb_client_sandbox_path(id, "/files/stat?path=");
        _cleanup_free_ char *path = base ? xb_client_path(base, dir) : NULL;
        struct xb_reply r;
        bool yes = false;

        if (path && xb_client_json(c, "GET", path, NULL, &r) == 0) {
                const char *t = json_string_value(json_object_get(r.json, "type"));

                yes = r.status == 200 && t && strcmp(t, "dir") == 0;
                xb_reply_free(&r);
        }
        return yes;
}

/* A command that did not start. The stream's error event names only the
 * errno, in strerror(3)'s words (glibc's, as ours): ENOENT is a missing
 * command unless the working directory is what is missing. */
static int
exec_failed(struct xb_client *c, const char *id, const char *argv0, const char *cwd, const char *msg)
{
        static const int cannot_exec[] = { EACCES, ENOEXEC, ETXTBSY, EISDIR, ENOTDIR, ELOOP, EPERM };
        bool missing = strcmp(msg, strerror(ENOENT)) == 0;

        if ((missing || strcmp(msg, strerror(ENOTDIR)) == 0) && cwd && !remote_dir(c, id, cwd))
                return xb_client_error("--cwd: cannot use %s as the working directory: %s; it must exist inside "
                                       "the sandbox", cwd, msg);
        if (missing) {
                xb_client_error("command not found: %s (check the name, or give its full path; PATH is searched)",
                                argv0);
                return XB_EXIT_NOT_FOUND;
        }
        for (size_t i = 0; i < sizeof(cannot_exec) / sizeof(cannot_exec[0]); i++)
                if (strcmp(msg, strerror(cannot_exec[i])) == 0) {
                        xb_client_error("cannot execute %s: %s", argv0, msg);
                        return XB_EXIT_CANNOT_EXEC;
                }
        return xb_client_error("could not start %s: %s", argv0, msg);
}

/* How an exec ended: its result event, an error event, or a JSON error. */
static int
exec_end(struct xb_client *c, const char *id, const char *argv0, const char *cwd, long status,
         struct exec_state *x, struct exec_body *b, uint64_t timeout_ms)
{
        const char *code;
        struct xb_reply r = { .status = status };
        int rc;

        if (x->result) {
                json_t *res = x->result;
                struct xb_cli_end e = {
                        json_string_value(json_object_get(res, "status")),
                        json_is_integer(json_object_get(res, "exit_code")),
                        (int)json_integer_value(json_object_get(res, "exit_code")),
                        (int)json_integer_value(json_object_get(res, "signal")),
                };
                struct xb_cli_limits l = { .wall_ms = timeout_ms };

                if (e.status && strcmp(e.status, "memory_limit") == 0)
                        l.memory = sandbox_memory(c, id);
                xb_cli_report_kill(&e, &l);
                return xb_cli_exit_status(&e);
        }
        if (x->error[0])
                return exec_failed(c, id, argv0, cwd, x->error);
        if (status == 200)
                return xb_client_error("the server ended the stream without a result");
        r.json = b->other.len ? json_loadb(b->other.data, b->other.len, 0, NULL) : NULL;
        code = json_string_value(json_object_get(json_object_get(r.json, "error"), "code"));
        rc = xb_client_fail(&r);
        if (code && strcmp(code, "command_not_found") == 0)
                rc = XB_EXIT_NOT_FOUND;
        else if (code && strcmp(code, "spawn_failed") == 0 && status == 400)
                rc = XB_EXIT_CANNOT_EXEC;
        xb_reply_free(&r);
        return rc;
}

int
xb_cmd_exec(int argc, char **argv)
{
        static const struct option opts[] = {
                { "timeout", required_argument, NULL, O_TIMEOUT }, { "env", required_argument, NULL, O_ENV },
                { "cwd", required_argument, NULL, O_CWD },          { "root", no_argument, NULL, O_ROOT },
                { "stdin", no_argument, NULL, 'i' },                XB_CLIENT_LONGOPTS, { 0 },
        };
        _cleanup_(xb_json_decrefp) json_t *body = json_object(), *env = json_object(), *args = json_array();
        _cleanup_free_ char *path = NULL, *text = NULL;
        struct exec_state x = { 0 };
        struct exec_body b = { .sse = { .on_event = exec_event, .ctx = &x }, .other = { .max = 1 << 20 }, .x = &x };
        struct xb_client c = { 0 };
        struct curl_slist *hdrs = NULL;
        struct xb_err err = { 0 };
        const char *id = NULL, *cwd = NULL;
        uint64_t timeout = 0;
        bool with_stdin = false;
        long status = 0;
        int opt, rc = 0;
        CURLcode cr;

        if (!body || !env || !args)
                return xb_client_error("out of memory");
        opterr = 0;
        /* Options may come before and after the id; the command follows. */
        for (;;) {
                while ((opt = getopt_long(argc, argv, "+:hi", opts, NULL)) != -1) {
                        switch (opt) {
                        case O_TIMEOUT:
                                if ((rc = xb_parse_duration_ms(optarg, &timeout, &err)) == 0 && timeout > XB_WALL_MAX_MS)
                                        rc = xb_err_msg(&err, ERANGE, "at most 7 days");
                                break;
                        case O_ENV: rc = env_put(env, optarg, &err); break;
                        case O_CWD:
                                rc = optarg[0] == '/' ? 0 : xb_err_msg(&err, EINVAL, "must be an absolute path inside "
                                                                       "the sandbox, e.g. /home/user");
                                json_object_set_new(body, "cwd", json_string(optarg));
                                cwd = optarg;
                                break;
                        case O_ROOT: json_object_set_new(body, "user", json_string("root")); break;
                        case 'i': with_stdin = true; break;
                        case XB_CLIENT_OPT_SERVER:
                        case XB_CLIENT_OPT_TOKEN_FILE: xb_client_option(&c, opt, optarg); break;
                        case 'h':
                                printf("usage: execbox exec [OPTIONS] ID [--] CMD [ARG...]\n\n"
                                       "Run CMD in sandbox ID and stream its output. Exit status: the command's;\n"
                                       "124 timed out, 125 execbox failed, 126 not executable, 127 not found,\n"
                                       "128+N killed by signal N.\n\n"
                                       "  --timeout DUR      kill it after DUR (default: the server's)\n"
                                       "  --env K=V          set a variable (repeatable)\n"
                                       "  --cwd DIR          its working directory (default /home/user)\n"
                                       "  --root             run as root inside the sandbox\n"
                                       "  -i, --stdin        send stdin (read to its end first) as its stdin\n"
                                       XB_CLIENT_USAGE);
                                return 0;
                        default: return xb_client_bad_option(opt, argv, opts, "exec");
                        }
                        if (rc < 0)
                                return bad_value(opt, argv, opts, &err);
                }
                if (id || optind >= argc || strcmp(argv[optind - 1], "--") == 0)
                        break;
                id = argv[optind++];
        }
        if (!id)
                return xb_client_error("no sandbox given; usage: execbox exec ID [--] CMD [ARG...]");
        if (optind >= argc)
                return xb_client_error("no command given; usage: execbox exec ID [--] CMD [ARG...]");
        for (int i = optind; i < argc; i++)
                if (json_array_append_new(args, json_string(argv[i])) < 0)
                        return xb_client_error("argument %d is not UTF-8 text", i - optind + 1);
        json_object_set(body, "argv", args);
        if (timeout)
                json_object_set_new(body, "timeout_s", json_real((double)timeout / 1000.0));
        if (json_object_size(env))
                json_object_set(body, "env", env);
        if (!(path = xb_client_sandbox_path(id, "/exec")) || (with_stdin && read_stdin(body)) ||
            xb_client_open(&c) < 0)
                return XB_EXIT_OWN_ERROR;
        if (!(text = json_dumps(body, JSON_COMPACT)) || !(b.h = xb_client_easy(&c, "POST", path, &hdrs)))
                return xb_client_error("out of memory");
        hdrs = xb_cu.slist_append(hdrs, "Content-Type: application/json");
        hdrs = xb_cu.slist_append(hdrs, "Accept: text/event-stream");
        xb_cu.easy_setopt(b.h, CURLOPT_HTTPHEADER, hdrs);
        xb_cu.easy_setopt(b.h, CURLOPT_POSTFIELDS, text);
        xb_cu.easy_setopt(b.h, CURLOPT_POSTFIELDSIZE, (long)strlen(text));
        xb_cu.easy_setopt(b.h, CURLOPT_WRITEFUNCTION, exec_on_body);
        xb_cu.easy_setopt(b.h, CURLOPT_WRITEDATA, &b);
        cr = xb_cu.easy_perform(b.h);
        xb_cu.easy_getinfo(b.h, CURLINFO_RESPONSE_CODE, &status);
        xb_cu.easy_cleanup(b.h);
        xb_cu.slist_free_all(hdrs);
        /* Our reader left (`| head -1`, SIGPIPE ignored): leaving too ends
         * the command, as SIGPIPE would have outside. */
        if (x.broken)
                rc = 128 + 13;
        else if (xb_client_check(&c, cr) < 0)
                rc = XB_EXIT_OWN_ERROR;
        else
                rc = exec_end(&c, id, argv[optind], cwd, status, &x, &b, timeout);
        json_decref(x.result);
        xb_sse_free(&b.sse);
        xb_buf_free(&b.other);
        return rc;
}
