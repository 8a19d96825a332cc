/* `execbox mcp`: MCP over stdin and stdout, the way desktop clients launch
 * local servers. By default the server core runs in this process with no
 * HTTP listener (sandboxes are made here, as root, and deleted at exit);
 * with --server URL it bridges to a running `execbox serve` instead
 * (mcp_bridge.c). stdout carries only JSON-RPC; logs go to stderr. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "cli/cli.h"
#include "mcp/mcp.h"
#include "core/core.h"

static void
mcp_usage(FILE *f)
{
        fputs("usage: execbox mcp [OPTIONS]\n"
              "\n"
              "Speak the Model Context Protocol over stdin and stdout (newline-delimited\n"
              "JSON-RPC; logs on stderr). Sandboxes run in this process and are deleted\n"
              "when the client closes stdin, unless --server names a running server.\n"
              "\n"
              "  --server URL           bridge to `execbox serve` at URL (http://HOST:PORT,\n"
              "                         its /mcp endpoint, or unix:/PATH) instead\n"
              "  --token TOKEN          its bearer token (else EXECBOX_TOKEN)\n"
              "  --pool N               warm sandboxes kept ready (default 1)\n"
              "  --memory SIZE --pids N --cpus N --disk SIZE\n"
              "                         default limits of a sandbox (1G, 512, none, 1G)\n"
              "  --allow-mount DIR      host directory sandboxes may bind (repeatable)\n"
              "  --conformance-fixtures add the MCP conformance suite's test tools\n"
              "  --cgroup auto|v1|v2    cgroup backend (default auto)\n"
              "  --verbose              log more on stderr\n",
              f);
}

enum {
        O_SERVER = 256, O_TOKEN, O_POOL, O_MEM, O_PIDS, O_CPUS, O_DISK, O_ALLOW, O_FIXTURES, O_CGROUP, O_VERBOSE,
};

static const struct option options[] = {
        { "server", required_argument, NULL, O_SERVER }, { "token", required_argument, NULL, O_TOKEN },
        { "pool", required_argument, NULL, O_POOL }, { "memory", required_argument, NULL, O_MEM },
        { "pids", required_argument, NULL, O_PIDS }, { "cpus", required_argument, NULL, O_CPUS },
        { "disk", required_argument, NULL, O_DISK }, { "allow-mount", required_argument, NULL, O_ALLOW },
        { "conformance-fixtures", no_argument, NULL, O_FIXTURES }, { "cgroup", required_argument, NULL, O_CGROUP },
        { "verbose", no_argument, NULL, O_VERBOSE }, { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
};

static int
in_process(const struct xb_server_opts *o)
{
        struct xb_server *s = NULL;
        struct xb_mcp_stdio *io = NULL;
        struct xb_err err = { 0 };
        int rc = 0;

        if (xb_server_open(o, &s) < 0)
                return XB_EXIT_OWN_ERROR;
        if (xb_mcp_stdio_start(s->mcp, s->loop, STDIN_FILENO, STDOUT_FILENO, &io, &err) < 0) {
                xb_error("%s", err.msg);
                rc = XB_EXIT_OWN_ERROR;
        } else if (xb_server_run(s) < 0) {
                rc = XB_EXIT_OWN_ERROR;
        }
        /* The peer's context goes first: it deletes its default sandbox. */
        xb_mcp_stdio_stop(io);
        xb_server_close(s);
        return rc;
}

int
xb_cmd_mcp(int argc, char **argv)
{
        struct xb_server_opts o = { 0 };
        const char *allow[64];
        const char *server = NULL, *token = getenv("EXECBOX_TOKEN");
        struct xb_err err = { 0 };
        uint64_t v;
        int opt, r = 0;

        o.pool_size = 1;
        o.max_sandboxes = XB_SERVER_MAX_SANDBOXES_DEFAULT;
        o.body_max = 16u << 20;
        o.upload_max = 1u << 30;
        o.allow_mounts = allow;
        o.no_auth = true;       /* the peer is whoever started us */
        o.quiet = true;
        xb_limits_default(&o.defaults);
        o.defaults.wall_ms = 0;
        xb_log_set_level(XB_LOG_WARN);
        while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
                switch (opt) {
                case O_SERVER: server = optarg; break;
                case O_TOKEN: token = optarg; break;
                case O_POOL:
                        r = xb_parse_u64(optarg, &v, &err);
                        if (!r && v > 100)
                                r = xb_err_msg(&err, ERANGE, "at most 100");
                        o.pool_size = (unsigned)v;
                        break;
                case O_MEM: r = xb_parse_size(optarg, &o.defaults.memory, &err); break;
                case O_PIDS: r = xb_parse_u64(optarg, &o.defaults.pids, &err); break;
                case O_CPUS: r = xb_parse_cpus(optarg, &o.defaults.cpus_milli, &err); break;
                case O_DISK: r = xb_parse_size(optarg, &o.defaults.disk, &err); break;
                case O_ALLOW:
                        if (o.nallow == sizeof(allow) / sizeof(allow[0]))
                                r = xb_err_msg(&err, E2BIG, "too many --allow-mount options");
                        else
                                allow[o.nallow++] = optarg;
                        break;
                case O_FIXTURES: o.conformance_fixtures = true; break;
                case O_CGROUP: r = xb_cgroup_mode_parse(optarg, &o.cgroup_mode, &err); break;
                case O_VERBOSE: xb_log_set_level(XB_LOG_DEBUG); break;
                case 'h': mcp_usage(stdout); return 0;
                default:
                        fputs("execbox: error: unknown option; see `execbox mcp --help`\n", stderr);
                        return XB_EXIT_OWN_ERROR;
                }
                if (r < 0) {
                        fprintf(stderr, "execbox: error: %s: %s\n", argv[optind - 1], err.msg);
                        return XB_EXIT_OWN_ERROR;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "execbox: error: unexpected argument `%s`; see `execbox mcp --help`\n", argv[optind]);
                return XB_EXIT_OWN_ERROR;
        }
        if (server)
                return xb_mcp_bridge(server, token);
        if (xb_limits_validate(&o.defaults, &err) < 0) {
                fprintf(stderr, "execbox: error: %s\n", err.msg);
                return XB_EXIT_OWN_ERROR;
        }
        return in_process(&o);
}
