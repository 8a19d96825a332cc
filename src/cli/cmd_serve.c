/* `execbox serve`: the sandbox server. Its options map onto struct
 * xb_server_opts through the parser it shares with `execbox mcp`
 * (options.c). */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/options.h"

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
              "  --layers disk|memory|none  the sandbox root: overlays on a btrfs store in the state\n"
              "                         dir (default; snapshots, forks, templates), on a tmpfs, or the\n"
              "                         read-only image of execbox run\n"
              "  --store-size SIZE      the layer store's sparse image (default 32G)\n"
              "  --mount-owner UID:GID  whom files in mounted host dirs belong to (default: the dir's owner)\n"
              "  --max-memory SIZE --max-pids N --max-cpus N --max-disk SIZE\n"
              "                         the most a request may ask for (default the host's RAM,\n"
              "                         32768, its CPUs, its RAM)\n"
              "  --tenant-quota LIST    per tenant, unless its token sets its own: sandboxes=N,\n"
              "                         execs=N, rate=N (a minute), memory=SIZE, disk=SIZE (none)\n"
              "  --body-max SIZE        largest JSON request body (default 16M)\n"
              "  --upload-max SIZE      largest file upload (default 1G)\n"
              "  --template-upload-max SIZE\n"
              "                         largest image archive POSTed to /v1/templates (default 4G)\n"
              "  --output-budget SIZE   command output kept in memory, all processes (default 1G)\n"
              "  --allow-mount DIR      host directory sandboxes may bind (repeatable)\n"
              "  --require-guide        Pandora's /exec needs guideFollowed: true\n"
              "  --allow-origin ORIGIN  let browser pages on ORIGIN call the API (CORS; repeatable)\n"
              "  --allow-host HOST      answer to this Host name too, as behind a proxy (repeatable)\n"
              "  --public-url URL       the URL clients reach the server at: image links become\n"
              "                         absolute and signed, fetchable without the token for 1 h\n"
              "  --sandbox-domain D     a sandbox's port P is also served at the host P-ID.D (a\n"
              "                         wildcard DNS name pointing here), as E2B and Daytona do\n"
              "  --conformance-fixtures add the MCP conformance suite's test tools\n"
              "                         (only in the test build, execbox-test)\n"
              "  --cgroup auto|v1|v2    cgroup backend (default auto)\n"
              "  --cgroup-prefix NAME   name sandbox cgroups NAME-uN (default execbox)\n"
              "  --access-log on|off    one line per HTTP request on stderr (default on)\n"
              "  --audit-keep DURATION  keep a deleted sandbox's audit log this long (default 10m)\n"
              "  --paused-ttl DURATION  delete a sandbox paused this long (default 24h; the most\n"
              "                         a sandbox's paused_ttl_s may ask)\n"
              "  --max-lifetime DURATION  delete a sandbox this long after creation, busy or not\n"
              "                         (default 168h; the most its max_lifetime_s may ask)\n"
              "  --drain-timeout DURATION  SIGTERM lets requests in flight finish this long\n"
              "                         (default 30s); creates get 503 meanwhile\n"
              "  --stop-sandboxes       delete every sandbox when the server exits\n"
              "  --adopt-grace DURATION  a sandbox outlives its server (killed, or stopped without\n"
              "                         --stop-sandboxes) this long, waiting for the next one on\n"
              "                         the state dir (default 10m; 0: it ends with the server)\n"
              "  --audit-max N          audit events kept per sandbox, oldest dropped (default 10000)\n"
              "  --network-max MODE     most network a sandbox may ask for: none, packages,\n"
              "                         allowlist or open (default open; sandboxes start with none)\n"
              "  --network-deny RULE    domain, *.wildcard or CIDR no sandbox may reach (repeatable)\n"
              "  --package-source URL   what `packages` mode allows (repeatable; default: this\n"
              "                         host's apt sources and npm registry)\n"
              "  --dns-server IP[:PORT] the resolver egress asks (default: the host's)\n"
              "  --network-connections N  egress connections per sandbox (default 64)\n"
              "  --network-rate SIZE    egress bytes per second per sandbox (default 1G; 0 none)\n"
              "  --package-cache-size SIZE  the package cache shared by all sandboxes, in the\n"
              "                         state dir, least recently used out (default 4G; 0 none)\n"
              "  --install-cache-size SIZE  the install cache (captured apt installs) shared by\n"
              "                         all sandboxes, in the layer store (default 8G; 0 none)\n"
              "  --upstream-ca FILE     PEM CAs trusted, beside the system's, for the hosts of\n"
              "                         secrets (whose TLS the server terminates)\n"
              "  --approval-timeout T   how long a request waits for a human (default 120s)\n"
              "  --mcp-allowed-host H   /mcp also accepts this Host and Origin, as behind a\n"
              "                         reverse proxy (repeatable; default loopback only)\n"
              "  --mcp-pause-after DUR  pause an idle MCP session's sandbox (default 300s; 0 never)\n"
              "  --quiet / --verbose\n"
              "  --config FILE          read options from FILE (default /etc/execbox/execbox.conf);\n"
              "                         EXECBOX_* variables override it, and flags override both\n",
              f);
}

int
xb_cmd_serve(int argc, char **argv)
{
        struct xb_server_args a;
        int r = xb_server_args_parse(&a, XB_CMD_SERVE, argc, argv);

        if (r == XB_SERVER_ARGS_HELP) {
                serve_usage(stdout);
                return 0;
        }
        if (r < 0)
                return XB_EXIT_OWN_ERROR;
        return xb_server_main(&a.o) == 0 ? 0 : XB_EXIT_OWN_ERROR;
}
