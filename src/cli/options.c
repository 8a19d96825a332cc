/* One parser for the options of `execbox serve` and `execbox mcp`
 * (options.h). Defaults differ per command (mcp: no listener, no auth, a
 * pool of 1, quiet), and so does --pool's cap. */
#define _GNU_SOURCE
#include "cli/options.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "mcp/mcp.h"
#include "cli/opterr.h"
#include "transport/http.h"

#define SERVE (1u << XB_CMD_SERVE)
#define MCP (1u << XB_CMD_MCP)

enum {
        O_LISTEN = 256, O_STATE, O_TOKEN_FILE, O_NOAUTH, O_POOL, O_POOL_PY, O_MAX, O_MEM, O_PIDS, O_CPUS, O_DISK,
        O_BODY, O_UPLOAD, O_ALLOW, O_GUIDE, O_FIXTURES, O_CGROUP, O_QUIET, O_VERBOSE, O_SERVER, O_TOKEN,
        O_ACCESS_LOG, O_AUDIT_KEEP, O_AUDIT_MAX,
};

static const struct {
        struct option opt;
        unsigned cmds;
} table[] = {
        { { "listen", required_argument, NULL, O_LISTEN }, SERVE },
        { { "state-dir", required_argument, NULL, O_STATE }, SERVE },
        { { "token-file", required_argument, NULL, O_TOKEN_FILE }, SERVE },
        { { "no-auth", no_argument, NULL, O_NOAUTH }, SERVE },
        { { "server", required_argument, NULL, O_SERVER }, MCP },
        { { "token", required_argument, NULL, O_TOKEN }, MCP },
        { { "pool", required_argument, NULL, O_POOL }, SERVE | MCP },
        { { "pool-python", no_argument, NULL, O_POOL_PY }, SERVE },
        { { "max-sandboxes", required_argument, NULL, O_MAX }, SERVE },
        { { "memory", required_argument, NULL, O_MEM }, SERVE | MCP },
        { { "pids", required_argument, NULL, O_PIDS }, SERVE | MCP },
        { { "cpus", required_argument, NULL, O_CPUS }, SERVE | MCP },
        { { "disk", required_argument, NULL, O_DISK }, SERVE | MCP },
        { { "body-max", required_argument, NULL, O_BODY }, SERVE },
        { { "upload-max", required_argument, NULL, O_UPLOAD }, SERVE },
        { { "allow-mount", required_argument, NULL, O_ALLOW }, SERVE | MCP },
        { { "require-guide", no_argument, NULL, O_GUIDE }, SERVE },
        { { "conformance-fixtures", no_argument, NULL, O_FIXTURES }, SERVE | MCP },
        { { "cgroup", required_argument, NULL, O_CGROUP }, SERVE | MCP },
        { { "quiet", no_argument, NULL, O_QUIET }, SERVE },
        { { "verbose", no_argument, NULL, O_VERBOSE }, SERVE | MCP },
        { { "help", no_argument, NULL, 'h' }, SERVE | MCP },
};

/* Taken only when spelled in full, before getopt sees argv: as
 * abbreviations they would make `--a` (--allow-mount) ambiguous. */
static const struct {
        const char *name;
        int opt;
        unsigned cmds;
} exact[] = {
        { "access-log", O_ACCESS_LOG, SERVE },
        { "audit-keep", O_AUDIT_KEEP, SERVE },
        { "audit-max", O_AUDIT_MAX, SERVE },
};

static const char *const cmd_name[] = { [XB_CMD_SERVE] = "serve", [XB_CMD_MCP] = "mcp" };

static void
defaults(struct xb_server_args *a, enum xb_server_cmd cmd)
{
        struct xb_server_opts *o = &a->o;

        *o = (struct xb_server_opts){ 0 };
        a->server = NULL;
        a->token = NULL;
        o->max_sandboxes = XB_SERVER_MAX_SANDBOXES_DEFAULT;
        o->body_max = 16u << 20;
        o->upload_max = 1u << 30;
        o->allow_mounts = a->allow;
        xb_limits_default(&o->defaults);
        o->audit_keep_ms = XB_AUDIT_KEEP_DEFAULT_MS;
        o->audit_max = XB_AUDIT_MAX_DEFAULT;
        o->defaults.wall_ms = 0;
        if (cmd == XB_CMD_SERVE) {
                o->listen = "127.0.0.1:8000";
                o->state_dir = "/var/lib/execbox";
                o->pool_size = 4;
                o->access_log = true;
        } else {
                a->token = getenv("EXECBOX_TOKEN");
                o->pool_size = 1;
                o->no_auth = true;    /* the peer is whoever started us */
                o->quiet = true;
                xb_log_set_level(XB_LOG_WARN);
        }
}

/* "90", "90s", "10m", "1h": milliseconds. */
static int
parse_seconds(const char *arg, uint64_t *ret_ms, struct xb_err *err)
{
        char *end;
        unsigned long long v;
        uint64_t mul = 1000;

        errno = 0;
        v = strtoull(arg, &end, 10);
        if (*arg < '0' || *arg > '9' || errno)
                return xb_err_msg(err, EINVAL, "`%s` is not a duration; write seconds, or 30s, 10m, 1h", arg);
        if (*end == 'm')
                mul = 60000;
        else if (*end == 'h')
                mul = 3600000;
        if (*end && (end[1] || !strchr("smh", *end)))
                return xb_err_msg(err, EINVAL, "`%s` is not a duration; write seconds, or 30s, 10m, 1h", arg);
        if (v > 7ull * 24 * 3600 * 1000 / mul)
                return xb_err_msg(err, ERANGE, "at most a week");
        *ret_ms = v * mul;
        return 0;
}

/* One option's value into a; -errno with err set when it is wrong. */
static int
apply(struct xb_server_args *a, enum xb_server_cmd cmd, int opt, const char *arg, struct xb_err *err)
{
        struct xb_server_opts *o = &a->o;
        uint64_t v = 0, pool_max = cmd == XB_CMD_SERVE ? 1000 : 100;
        int r = 0;

        switch (opt) {
        case O_LISTEN: o->listen = arg; break;
        case O_STATE: o->state_dir = arg; break;
        case O_TOKEN_FILE: o->token_file = arg; break;
        case O_NOAUTH: o->no_auth = true; break;
        case O_SERVER: a->server = arg; break;
        case O_TOKEN: a->token = arg; break;
        case O_POOL:
                r = xb_parse_u64(arg, &v, err);
                if (!r && v > pool_max)
                        r = xb_err_msg(err, ERANGE, "at most %llu", (unsigned long long)pool_max);
                o->pool_size = (unsigned)v;
                break;
        case O_POOL_PY: o->pool_python = true; break;
        case O_MAX:
                r = xb_parse_u64(arg, &v, err);
                if (!r && (v < 1 || v > 16000))
                        r = xb_err_msg(err, ERANGE, "between 1 and 16000");
                o->max_sandboxes = (unsigned)v;
                break;
        case O_MEM: r = xb_parse_size(arg, &o->defaults.memory, err); break;
        case O_PIDS: r = xb_parse_u64(arg, &o->defaults.pids, err); break;
        case O_CPUS: r = xb_parse_cpus(arg, &o->defaults.cpus_milli, err); break;
        case O_DISK: r = xb_parse_size(arg, &o->defaults.disk, err); break;
        case O_BODY:
                r = xb_parse_size(arg, &v, err);
                o->body_max = (size_t)v;
                break;
        case O_UPLOAD:
                r = xb_parse_size(arg, &v, err);
                o->upload_max = (size_t)v;
                break;
        case O_ALLOW:
                if (o->nallow == ARRAY_SIZE(a->allow))
                        r = xb_err_msg(err, E2BIG, "too many --allow-mount options");
                else if (access(arg, F_OK) < 0)
                        r = xb_err_set(err, errno, "%s", arg);
                else
                        a->allow[o->nallow++] = arg;
                break;
        case O_GUIDE: o->require_guide = true; break;
        case O_FIXTURES:
                if (!xb_mcp_has_plugin(XB_FIXTURES_PLUGIN))
                        r = xb_err_msg(err, ENOTSUP, "this binary has no MCP conformance fixtures; they are only in "
                                       "the test build, execbox-test (make %s)", "build/execbox-test");
                o->conformance_fixtures = true;
                break;
        case O_CGROUP: r = xb_cgroup_mode_parse(arg, &o->cgroup_mode, err); break;
        case O_QUIET:
                o->quiet = true;
                xb_log_set_level(XB_LOG_WARN);
                break;
        case O_VERBOSE: xb_log_set_level(XB_LOG_DEBUG); break;
        case O_ACCESS_LOG:
                if (strcmp(arg, "on") && strcmp(arg, "off"))
                        r = xb_err_msg(err, EINVAL, "write on or off, not `%s`", arg);
                o->access_log = !strcmp(arg, "on");
                break;
        case O_AUDIT_KEEP: r = parse_seconds(arg, &o->audit_keep_ms, err); break;
        case O_AUDIT_MAX:
                r = xb_parse_u64(arg, &v, err);
                if (!r && (v < 1 || v > 1000000))
                        r = xb_err_msg(err, ERANGE, "between 1 and 1000000 events");
                o->audit_max = (unsigned)v;
                break;
        }
        return r;
}

static int apply(struct xb_server_args *a, enum xb_server_cmd cmd, int opt, const char *arg, struct xb_err *err);

/* Apply and remove the exact options (--NAME=V or --NAME V) from argv,
 * up to "--". The new argc, or -1 after printing the error. */
static int
take_exact(struct xb_server_args *a, enum xb_server_cmd cmd, int argc, char **argv)
{
        struct xb_err err = { 0 };
        int out = 1;

        for (int i = 1; i < argc; i++) {
                const char *arg = argv[i], *val = NULL;
                size_t k, n;
                int used = 1;

                if (!strcmp(arg, "--")) {
                        while (i < argc)
                                argv[out++] = argv[i++];
                        break;
                }
                for (k = 0; k < ARRAY_SIZE(exact); k++) {
                        n = strlen(exact[k].name);
                        if ((exact[k].cmds & (1u << cmd)) && !strncmp(arg, "--", 2) &&
                            !strncmp(arg + 2, exact[k].name, n) && (arg[2 + n] == '\0' || arg[2 + n] == '='))
                                break;
                }
                if (k == ARRAY_SIZE(exact)) {
                        argv[out++] = argv[i];
                        continue;
                }
                if (arg[2 + n] == '=')
                        val = arg + 3 + n;
                else if (i + 1 < argc) {
                        val = argv[i + 1];
                        used = 2;
                }
                if (!val) {
                        fprintf(stderr, "execbox: error: --%s needs a value; see `execbox %s --help`\n", exact[k].name,
                                cmd_name[cmd]);
                        return -1;
                }
                if (apply(a, cmd, exact[k].opt, val, &err) < 0) {
                        fprintf(stderr, "execbox: error: --%s: %s\n", exact[k].name, err.msg);
                        return -1;
                }
                i += used - 1;
        }
        argv[out] = NULL;
        return out;
}

int
xb_server_args_parse(struct xb_server_args *a, enum xb_server_cmd cmd, int argc, char **argv)
{
        struct option longopts[ARRAY_SIZE(table) + 1] = { 0 };
        const char *name = cmd_name[cmd];
        struct xb_err err = { 0 };
        char typed[128], limits_err[sizeof(err.msg) + 128] = "";
        size_t n = 0;
        int opt;

        defaults(a, cmd);
        if ((argc = take_exact(a, cmd, argc, argv)) < 0)
                return -1;
        for (size_t i = 0; i < ARRAY_SIZE(table); i++)
                if (table[i].cmds & (1u << cmd))
                        longopts[n++] = table[i].opt;
        opterr = 0;   /* our messages, naming the option as typed */
        while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
                if (opt == 'h')
                        return XB_SERVER_ARGS_HELP;
                if (opt == '?' || opt == ':') {
                        fprintf(stderr, "execbox: error: %s; see `execbox %s --help`\n",
                                xb_opt_problem(opt, argv, longopts, err.msg, sizeof(err.msg)), name);
                        return -1;
                }
                xb_opt_typed(opt, argv, longopts, typed, sizeof(typed));
                if (apply(a, cmd, opt, optarg, &err) < 0) {
                        fprintf(stderr, "execbox: error: %s: %s\n", typed, err.msg);
                        return -1;
                }
                /* Out of bounds: named now, refused below unless bridging. */
                if (!limits_err[0] && xb_limits_validate(&a->o.defaults, &err) < 0)
                        snprintf(limits_err, sizeof(limits_err), "%s: %s", typed, err.msg);
        }
        if (optind < argc) {
                fprintf(stderr, "execbox: error: unexpected argument `%s`; see `execbox %s --help`\n", argv[optind],
                        name);
                return -1;
        }
        /* A bridge has no sandboxes of its own: its limits are the server's. */
        if (!a->server && limits_err[0]) {
                fprintf(stderr, "execbox: error: %s\n", limits_err);
                return -1;
        }
        if (cmd == XB_CMD_SERVE && a->o.no_auth && !xb_http_is_loopback(a->o.listen)) {
                fprintf(stderr, "execbox: error: --no-auth is allowed only on loopback (127.0.0.1:PORT) or a unix "
                                "socket, not on %s\n", a->o.listen);
                return -1;
        }
        return 0;
}
