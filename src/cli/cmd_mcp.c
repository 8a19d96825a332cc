/* `execbox mcp`: MCP over stdin and stdout, the way desktop clients launch
 * local servers. By default the server core runs in this process with no
 * HTTP listener (sandboxes are made here, as root, and deleted at exit);
 * with --server URL it bridges to a running `execbox serve` instead
 * (mcp_bridge.c). stdout carries only JSON-RPC; logs go to stderr. */
#include <stdio.h>
#include <unistd.h>

#include "base/log.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "mcp/mcp.h"

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
              "                         its /mcp endpoint, or unix:/PATH) instead (else\n"
              "                         EXECBOX_URL); needs no root\n"
              "  --token TOKEN          its bearer token (else EXECBOX_TOKEN)\n"
              "  --pool N               warm sandboxes kept ready (default 1)\n"
              "  --memory SIZE --pids N --cpus N --disk SIZE\n"
              "                         default limits of a sandbox (1G, 512, none, 1G)\n"
              "  --max-memory SIZE --max-pids N --max-cpus N --max-disk SIZE\n"
              "                         the most a sandbox may ask for (default the host's)\n"
              "  --allow-mount DIR      host directory sandboxes may bind (repeatable)\n"
              "  --conformance-fixtures add the MCP conformance suite's test tools\n"
              "                         (only in the test build, execbox-test)\n"
              "  --cgroup auto|v1|v2    cgroup backend (default auto)\n"
              "  --cgroup-prefix NAME   name sandbox cgroups NAME-uN (default execbox)\n"
              "  --verbose              log more on stderr\n"
              "  --config FILE          read options from FILE (default /etc/execbox/execbox.conf),\n"
              "                         the keys mcp takes; EXECBOX_* variables and flags override it\n",
              f);
}

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
        struct xb_server_args a;
        int r = xb_server_args_parse(&a, XB_CMD_MCP, argc, argv);

        if (r == XB_SERVER_ARGS_HELP) {
                mcp_usage(stdout);
                return 0;
        }
        if (r < 0)
                return XB_EXIT_OWN_ERROR;
        if (a.server)
                return xb_mcp_bridge(a.server, a.token);
        /* Its sandboxes are its stdio peer's: they end with it. */
        a.o.adopt_grace_ms = 0;
        return in_process(&a.o);
}
