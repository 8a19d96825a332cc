/* `execbox serve`: the sandbox server. Options map onto struct
 * xb_server_opts; every value is checked here with a message that says
 * what to write instead. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "cli/cli.h"
#include "transport/http.h"
#include "core/core.h"

static void
serve_usage(FILE *f)
{
        fputs("usage: execbox serve [OPTIONS]\n"
              "\n"
              "Start the sandbox server: REST under /v1, MCP at /mcp, OpenAPI at /openapi.json.\n"
              "\n"
              "  --listen HOST:PORT|unix:PATH  where to listen (default 127.0.0.1:8000)\n"
              "  --state-dir DIR        the server's state, such as its token (default /var/lib/execbox)\n"
              "  --token-file FILE      bearer tokens, one per line, one tenant each\n"
              "                         (else EXECBOX_TOKEN, else a generated token in the state dir)\n"
              "  --no-auth              no token (only on loopback or a unix socket)\n"
              "  --pool N               warm sandboxes kept ready (default 4)\n"
              "  --pool-python          each pooled sandbox also starts a Python session with numpy,\n"
              "                         pandas and matplotlib imported, handed to its first\n"
              "                         POST .../sessions {\"language\":\"python\"} (default off: each\n"
              "                         costs ~1 s of CPU to start and ~110 MiB, charged to the sandbox)\n"
              "  --max-sandboxes N      at most N sandboxes at once (default 2000)\n"
              "  --memory SIZE --pids N --cpus N --disk SIZE\n"
              "                         default limits of a sandbox (1G, 512, none, 1G)\n"
              "  --body-max SIZE        largest JSON request body (default 16M)\n"
              "  --upload-max SIZE      largest file upload (default 1G)\n"
              "  --allow-mount DIR      host directory sandboxes may bind (repeatable)\n"
              "  --require-guide        Pandora's /exec needs guideFollowed: true\n"
              "  --conformance-fixtures add the MCP conformance suite's test tools\n"
              "  --cgroup auto|v1|v2    cgroup backend (default auto)\n"
              "  --quiet / --verbose\n",
              f);
}

enum {
        O_LISTEN = 256, O_STATE, O_TOKEN, O_NOAUTH, O_POOL, O_MAX, O_MEM, O_PIDS, O_CPUS, O_DISK, O_BODY, O_UPLOAD,
        O_ALLOW, O_GUIDE, O_FIXTURES, O_CGROUP, O_QUIET, O_VERBOSE, O_POOL_PY,
};

static const struct option options[] = {
        { "listen", required_argument, NULL, O_LISTEN }, { "state-dir", required_argument, NULL, O_STATE },
        { "token-file", required_argument, NULL, O_TOKEN }, { "no-auth", no_argument, NULL, O_NOAUTH },
        { "pool", required_argument, NULL, O_POOL }, { "max-sandboxes", required_argument, NULL, O_MAX },
        { "pool-python", no_argument, NULL, O_POOL_PY },
        { "memory", required_argument, NULL, O_MEM }, { "pids", required_argument, NULL, O_PIDS },
        { "cpus", required_argument, NULL, O_CPUS }, { "disk", required_argument, NULL, O_DISK },
        { "body-max", required_argument, NULL, O_BODY }, { "upload-max", required_argument, NULL, O_UPLOAD },
        { "allow-mount", required_argument, NULL, O_ALLOW }, { "require-guide", no_argument, NULL, O_GUIDE },
        { "conformance-fixtures", no_argument, NULL, O_FIXTURES }, { "cgroup", required_argument, NULL, O_CGROUP },
        { "quiet", no_argument, NULL, O_QUIET }, { "verbose", no_argument, NULL, O_VERBOSE },
        { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
};

int
xb_cmd_serve(int argc, char **argv)
{
        struct xb_server_opts o = { 0 };
        const char *allow[64];
        struct xb_err err = { 0 };
        uint64_t v;
        int opt, r = 0;

        o.listen = "127.0.0.1:8000";
        o.state_dir = "/var/lib/execbox";
        o.pool_size = 4;
        o.max_sandboxes = XB_SERVER_MAX_SANDBOXES_DEFAULT;
        o.body_max = 16u << 20;
        o.upload_max = 1u << 30;
        o.allow_mounts = allow;
        xb_limits_default(&o.defaults);
        o.defaults.wall_ms = 0;
        while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
                switch (opt) {
                case O_LISTEN: o.listen = optarg; break;
                case O_STATE: o.state_dir = optarg; break;
                case O_TOKEN: o.token_file = optarg; break;
                case O_NOAUTH: o.no_auth = true; break;
                case O_POOL:
                        r = xb_parse_u64(optarg, &v, &err);
                        if (!r && v > 1000)
                                r = xb_err_msg(&err, ERANGE, "at most 1000");
                        o.pool_size = (unsigned)v;
                        break;
                case O_POOL_PY: o.pool_python = true; break;
                case O_MAX:
                        r = xb_parse_u64(optarg, &v, &err);
                        if (!r && (v < 1 || v > 16000))
                                r = xb_err_msg(&err, ERANGE, "between 1 and 16000");
                        o.max_sandboxes = (unsigned)v;
                        break;
                case O_MEM: r = xb_parse_size(optarg, &o.defaults.memory, &err); break;
                case O_PIDS: r = xb_parse_u64(optarg, &o.defaults.pids, &err); break;
                case O_CPUS: r = xb_parse_cpus(optarg, &o.defaults.cpus_milli, &err); break;
                case O_DISK: r = xb_parse_size(optarg, &o.defaults.disk, &err); break;
                case O_BODY:
                        r = xb_parse_size(optarg, &v, &err);
                        o.body_max = (size_t)v;
                        break;
                case O_UPLOAD:
                        r = xb_parse_size(optarg, &v, &err);
                        o.upload_max = (size_t)v;
                        break;
                case O_ALLOW:
                        if (o.nallow == sizeof(allow) / sizeof(allow[0]))
                                r = xb_err_msg(&err, E2BIG, "too many --allow-mount options");
                        else
                                allow[o.nallow++] = optarg;
                        break;
                case O_GUIDE: o.require_guide = true; break;
                case O_FIXTURES: o.conformance_fixtures = true; break;
                case O_CGROUP: r = xb_cgroup_mode_parse(optarg, &o.cgroup_mode, &err); break;
                case O_QUIET: o.quiet = true; xb_log_set_level(XB_LOG_WARN); break;
                case O_VERBOSE: xb_log_set_level(XB_LOG_DEBUG); break;
                case 'h': serve_usage(stdout); return 0;
                default:
                        fputs("execbox: error: unknown option; see `execbox serve --help`\n", stderr);
                        return XB_EXIT_OWN_ERROR;
                }
                if (r < 0) {
                        fprintf(stderr, "execbox: error: %s: %s\n", argv[optind - 1], err.msg);
                        return XB_EXIT_OWN_ERROR;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "execbox: error: unexpected argument `%s`; see `execbox serve --help`\n", argv[optind]);
                return XB_EXIT_OWN_ERROR;
        }
        if (xb_limits_validate(&o.defaults, &err) < 0) {
                fprintf(stderr, "execbox: error: %s\n", err.msg);
                return XB_EXIT_OWN_ERROR;
        }
        if (o.no_auth && !xb_http_is_loopback(o.listen)) {
                fprintf(stderr, "execbox: error: --no-auth is allowed only on loopback (127.0.0.1:PORT) or a unix "
                                "socket, not on %s\n", o.listen);
                return XB_EXIT_OWN_ERROR;
        }
        return xb_server_main(&o) == 0 ? 0 : XB_EXIT_OWN_ERROR;
}
