/* One parser for the options of `execbox serve` and `execbox mcp`
 * (options.h). Defaults differ per command (mcp: no listener, no auth, a
 * pool of 1, quiet), and so does --pool's cap. Each option is read from
 * four layers, each over the one before: the defaults, the config file
 * (config.h), EXECBOX_* variables, and the command line; every layer's
 * values go through apply(), so they are checked alike. */
#define _GNU_SOURCE
#include "cli/options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "mcp/mcp.h"
#include "cli/config.h"
#include "cli/opterr.h"
#include "core/quota.h"
#include "transport/http.h"

#define SERVE (1u << XB_CMD_SERVE)
#define MCP (1u << XB_CMD_MCP)

enum {
        O_LISTEN = 256, O_STATE, O_TOKEN_FILE, O_NOAUTH, O_POOL, O_POOL_PY, O_MAX, O_MEM, O_PIDS, O_CPUS, O_DISK,
        O_BODY, O_UPLOAD, O_TMPL_UPLOAD, O_ALLOW, O_GUIDE, O_FIXTURES, O_CGROUP, O_CGROUP_PREFIX, O_QUIET, O_VERBOSE, O_SERVER, O_TOKEN,
        O_CONFIG,
        O_MCP_HOST, O_MCP_PAUSE, O_ALLOW_HOST, O_OUT_BUDGET,
        O_ORIGIN, O_PUBLIC_URL, O_SANDBOX_DOMAIN,
        O_ACCESS_LOG, O_AUDIT_KEEP, O_AUDIT_MAX,
        O_NET_MAX, O_NET_DENY, O_PKG_SOURCE, O_DNS_SERVER, O_NET_CONNS, O_NET_RATE, O_UPSTREAM_CA, O_APPROVAL_TIMEOUT,
        O_LAYERS, O_STORE_SIZE, O_MOUNT_OWNER, O_PKG_CACHE_SIZE, O_INST_CACHE_SIZE,
        O_PAUSED_TTL, O_MAX_LIFETIME, O_DRAIN_TIMEOUT, O_STOP_SANDBOXES, O_ADOPT_GRACE,
        O_MAX_MEM, O_MAX_PIDS, O_MAX_CPUS, O_MAX_DISK, O_QUOTA,
};

/* How an option may be given besides its flag. */
enum {
        REPEAT = 1,        /* a list: a layer's values replace the lower layers' */
        FLAG_ONLY = 2,     /* no key, no EXECBOX_* variable */
};

static const struct {
        struct option opt;
        unsigned cmds;
        unsigned how;
} table[] = {
        { { "listen", required_argument, NULL, O_LISTEN }, SERVE },
        { { "state-dir", required_argument, NULL, O_STATE }, SERVE },
        { { "token-file", required_argument, NULL, O_TOKEN_FILE }, SERVE },
        { { "no-auth", no_argument, NULL, O_NOAUTH }, SERVE },
        { { "server", required_argument, NULL, O_SERVER }, MCP },
        /* EXECBOX_TOKEN is read as it always was (defaults()), and a
         * token is a secret: not for a file anyone may read. */
        { { "token", required_argument, NULL, O_TOKEN }, MCP, FLAG_ONLY },
        { { "pool", required_argument, NULL, O_POOL }, SERVE | MCP },
        { { "pool-python", no_argument, NULL, O_POOL_PY }, SERVE },
        { { "max-sandboxes", required_argument, NULL, O_MAX }, SERVE },
        { { "memory", required_argument, NULL, O_MEM }, SERVE | MCP },
        { { "pids", required_argument, NULL, O_PIDS }, SERVE | MCP },
        { { "cpus", required_argument, NULL, O_CPUS }, SERVE | MCP },
        { { "disk", required_argument, NULL, O_DISK }, SERVE | MCP },
        { { "layers", required_argument, NULL, O_LAYERS }, SERVE },
        { { "store-size", required_argument, NULL, O_STORE_SIZE }, SERVE },
        { { "mount-owner", required_argument, NULL, O_MOUNT_OWNER }, SERVE },
        { { "max-memory", required_argument, NULL, O_MAX_MEM }, SERVE | MCP },
        { { "max-pids", required_argument, NULL, O_MAX_PIDS }, SERVE | MCP },
        { { "max-cpus", required_argument, NULL, O_MAX_CPUS }, SERVE | MCP },
        { { "max-disk", required_argument, NULL, O_MAX_DISK }, SERVE | MCP },
        { { "tenant-quota", required_argument, NULL, O_QUOTA }, SERVE },
        { { "body-max", required_argument, NULL, O_BODY }, SERVE },
        { { "upload-max", required_argument, NULL, O_UPLOAD }, SERVE },
        { { "template-upload-max", required_argument, NULL, O_TMPL_UPLOAD }, SERVE },
        { { "output-budget", required_argument, NULL, O_OUT_BUDGET }, SERVE },
        { { "allow-mount", required_argument, NULL, O_ALLOW }, SERVE | MCP, REPEAT },
        { { "require-guide", no_argument, NULL, O_GUIDE }, SERVE },
        { { "allow-origin", required_argument, NULL, O_ORIGIN }, SERVE, REPEAT },
        { { "allow-host", required_argument, NULL, O_ALLOW_HOST }, SERVE, REPEAT },
        { { "public-url", required_argument, NULL, O_PUBLIC_URL }, SERVE },
        { { "sandbox-domain", required_argument, NULL, O_SANDBOX_DOMAIN }, SERVE },
        { { "conformance-fixtures", no_argument, NULL, O_FIXTURES }, SERVE | MCP },
        { { "cgroup", required_argument, NULL, O_CGROUP }, SERVE | MCP },
        { { "cgroup-prefix", required_argument, NULL, O_CGROUP_PREFIX }, SERVE | MCP },
        { { "quiet", no_argument, NULL, O_QUIET }, SERVE },
        { { "mcp-allowed-host", required_argument, NULL, O_MCP_HOST }, SERVE, REPEAT },
        { { "mcp-pause-after", required_argument, NULL, O_MCP_PAUSE }, SERVE },
        { { "access-log", required_argument, NULL, O_ACCESS_LOG }, SERVE },
        { { "audit-keep", required_argument, NULL, O_AUDIT_KEEP }, SERVE },
        { { "audit-max", required_argument, NULL, O_AUDIT_MAX }, SERVE },
        { { "network-max", required_argument, NULL, O_NET_MAX }, SERVE },
        { { "network-deny", required_argument, NULL, O_NET_DENY }, SERVE, REPEAT },
        { { "package-source", required_argument, NULL, O_PKG_SOURCE }, SERVE, REPEAT },
        { { "dns-server", required_argument, NULL, O_DNS_SERVER }, SERVE },
        { { "network-connections", required_argument, NULL, O_NET_CONNS }, SERVE },
        { { "network-rate", required_argument, NULL, O_NET_RATE }, SERVE },
        { { "package-cache-size", required_argument, NULL, O_PKG_CACHE_SIZE }, SERVE },
        { { "install-cache-size", required_argument, NULL, O_INST_CACHE_SIZE }, SERVE },
        { { "upstream-ca", required_argument, NULL, O_UPSTREAM_CA }, SERVE },
        { { "approval-timeout", required_argument, NULL, O_APPROVAL_TIMEOUT }, SERVE },
        { { "paused-ttl", required_argument, NULL, O_PAUSED_TTL }, SERVE },
        { { "max-lifetime", required_argument, NULL, O_MAX_LIFETIME }, SERVE },
        { { "drain-timeout", required_argument, NULL, O_DRAIN_TIMEOUT }, SERVE },
        { { "adopt-grace", required_argument, NULL, O_ADOPT_GRACE }, SERVE },
        { { "stop-sandboxes", no_argument, NULL, O_STOP_SANDBOXES }, SERVE },
        { { "verbose", no_argument, NULL, O_VERBOSE }, SERVE | MCP },
        { { "config", required_argument, NULL, O_CONFIG }, SERVE | MCP, FLAG_ONLY },
        { { "help", no_argument, NULL, 'h' }, SERVE | MCP, FLAG_ONLY },
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
        o->template_upload_max = (uint64_t)4 << 30;
        o->allow_mounts = a->allow;
        o->mcp_hosts = a->mcp_hosts;
        o->mcp_pause_ms = 300000;
        o->allow_origins = a->origins;
        o->allow_hosts = a->hosts;
        xb_limits_default(&o->defaults);
        o->audit_keep_ms = XB_AUDIT_KEEP_DEFAULT_MS;
        o->audit_max = XB_AUDIT_MAX_DEFAULT;
        o->paused_ttl_ms = XB_PAUSED_TTL_DEFAULT_MS;
        o->max_lifetime_ms = XB_LIFETIME_MAX_DEFAULT_MS;
        o->drain_timeout_ms = XB_DRAIN_TIMEOUT_DEFAULT_MS;
        o->adopt_grace_ms = XB_ADOPT_GRACE_DEFAULT_MS;
        o->defaults.wall_ms = 0;
        o->network_max = XB_NET_OPEN;
        o->network_deny = a->net_deny;
        o->package_sources = a->sources;
        o->network_conns = XB_NET_CONNS_DEFAULT;
        o->network_rate = 1ull << 30;
        o->package_cache_size = 4ull << 30;
        o->install_cache_size = 8ull << 30;
        if (cmd == XB_CMD_SERVE) {
                o->listen = "127.0.0.1:8000";
                o->state_dir = "/var/lib/execbox";
                o->pool_size = 4;
                o->access_log = true;
                o->layers = XB_LAYERS_DISK;
        } else {
                /* Desktop clients set env, not flags: a bridge, as a normal user. */
                a->server = getenv("EXECBOX_URL") && *getenv("EXECBOX_URL") ? getenv("EXECBOX_URL") : NULL;
                a->token = getenv("EXECBOX_TOKEN");
                o->pool_size = 1;
                o->layers = XB_LAYERS_MEMORY;   /* no state directory to keep a store in */
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
        case O_LAYERS:
                if (!strcmp(arg, "disk"))
                        o->layers = XB_LAYERS_DISK;
                else if (!strcmp(arg, "memory"))
                        o->layers = XB_LAYERS_MEMORY;
                else if (!strcmp(arg, "none"))
                        o->layers = XB_LAYERS_NONE;
                else
                        r = xb_err_msg(err, EINVAL, "write disk, memory or none, not `%s`", arg);
                break;
        case O_MOUNT_OWNER: {
                unsigned long u, g;
                char *end;

                errno = 0;
                u = strtoul(arg, &end, 10);
                g = *end == ':' ? strtoul(end + 1, &end, 10) : ULONG_MAX;
                if (errno || *end || u > 65535 * 65536UL || g > 65535 * 65536UL || *arg < '0' || *arg > '9')
                        r = xb_err_msg(err, EINVAL, "write the host's UID:GID that files in mounts belong to, e.g. "
                                       "1000:1000, not `%s`", arg);
                o->mount_owner_set = true;
                o->mount_uid = (uint32_t)u;
                o->mount_gid = (uint32_t)g;
                break;
        }
        case O_STORE_SIZE:
                r = xb_parse_size(arg, &o->store_size, err);
                if (!r && o->store_size < ((uint64_t)1 << 30))
                        r = xb_err_msg(err, ERANGE, "at least 1G");
                break;
        case O_MAX_MEM: r = xb_parse_size(arg, &o->ceiling.memory, err); break;
        case O_MAX_PIDS: r = xb_parse_u64(arg, &o->ceiling.pids, err); break;
        case O_MAX_CPUS: r = xb_parse_cpus(arg, &o->ceiling.cpus_milli, err); break;
        case O_MAX_DISK: r = xb_parse_size(arg, &o->ceiling.disk, err); break;
        case O_QUOTA:
                o->quota_default = (struct xb_quota){ 0 };
                r = xb_quota_parse(arg, &o->quota_default, err);
                break;
        case O_BODY:
                r = xb_parse_size(arg, &v, err);
                o->body_max = (size_t)v;
                break;
        case O_UPLOAD:
                r = xb_parse_size(arg, &v, err);
                o->upload_max = (size_t)v;
                break;
        case O_TMPL_UPLOAD: r = xb_parse_size(arg, &o->template_upload_max, err); break;
        case O_OUT_BUDGET:
                r = xb_parse_size(arg, &o->output_budget, err);
                if (!r && o->output_budget < (16u << 20))
                        r = xb_err_msg(err, ERANGE, "at least 16M");
                break;
        case O_ALLOW:
                if (o->nallow == ARRAY_SIZE(a->allow))
                        r = xb_err_msg(err, E2BIG, "too many --allow-mount options");
                else if (access(arg, F_OK) < 0)
                        r = xb_err_set(err, errno, "%s", arg);
                else
                        a->allow[o->nallow++] = arg;
                break;
        case O_MCP_HOST:
                if (o->nmcp_hosts == ARRAY_SIZE(a->mcp_hosts))
                        r = xb_err_msg(err, E2BIG, "too many --mcp-allowed-host options");
                else if (!*arg || strpbrk(arg, "/\"' \t"))
                        r = xb_err_msg(err, EINVAL, "write a host name as clients send it in Host, such as "
                                       "mcp.example.com or mcp.example.com:8443");
                else
                        a->mcp_hosts[o->nmcp_hosts++] = arg;
                break;
        case O_ALLOW_HOST:
                if (o->nallow_hosts == ARRAY_SIZE(a->hosts))
                        r = xb_err_msg(err, E2BIG, "too many --allow-host options");
                else if (!*arg || strpbrk(arg, "/\"' \t@"))
                        r = xb_err_msg(err, EINVAL, "write a host name as clients send it in Host, such as "
                                       "execbox.example.com or execbox.example.com:8443");
                else
                        a->hosts[o->nallow_hosts++] = arg;
                break;
        case O_MCP_PAUSE: r = xb_parse_duration_ms(arg, &o->mcp_pause_ms, err); break;
        case O_GUIDE: o->require_guide = true; break;
        case O_ORIGIN:
                /* Browsers send an Origin as scheme://host[:port], no path. */
                if (o->nallow_origins == ARRAY_SIZE(a->origins))
                        r = xb_err_msg(err, E2BIG, "too many --allow-origin options");
                else if ((strncmp(arg, "http://", 7) && strncmp(arg, "https://", 8)) ||
                         strchr(strstr(arg, "//") + 2, '/'))
                        r = xb_err_msg(err, EINVAL, "write an origin as a browser sends it, e.g. "
                                       "https://chat.example.com or http://localhost:3000 (no path)");
                else
                        a->origins[o->nallow_origins++] = arg;
                break;
        case O_PUBLIC_URL:
                if (strncmp(arg, "http://", 7) && strncmp(arg, "https://", 8))
                        r = xb_err_msg(err, EINVAL, "write the URL clients reach the server at, e.g. "
                                       "https://execbox.example.com");
                o->public_url = arg;
                break;
        case O_SANDBOX_DOMAIN:
                /* A DNS name: sandboxes' ports are at {port}-{id}.DOMAIN. */
                if (!*arg || strlen(arg) > 200 || arg[0] == '.' || arg[0] == '-' || arg[strlen(arg) - 1] == '.' ||
                    strstr(arg, "..") || strspn(arg, "abcdefghijklmnopqrstuvwxyz0123456789.-") != strlen(arg))
                        r = xb_err_msg(err, EINVAL, "write a DNS name in lowercase, e.g. sandbox.example.com "
                                       "(ports are then at {port}-{id}.sandbox.example.com)");
                o->sandbox_domain = arg;
                break;
        case O_FIXTURES:
                if (!xb_mcp_has_plugin(XB_FIXTURES_PLUGIN))
                        r = xb_err_msg(err, ENOTSUP, "this binary has no MCP conformance fixtures; they are only in "
                                       "the test build, execbox-test (make %s)", "build/execbox-test");
                o->conformance_fixtures = true;
                break;
        case O_CGROUP: r = xb_cgroup_mode_parse(arg, &o->cgroup_mode, err); break;
        case O_CGROUP_PREFIX:
                r = xb_cgroup_prefix_check(arg, err);
                o->cgroup_prefix = arg;
                break;
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
        case O_PAUSED_TTL:
        case O_MAX_LIFETIME: {
                uint64_t *ms = opt == O_PAUSED_TTL ? &o->paused_ttl_ms : &o->max_lifetime_ms;

                r = parse_seconds(arg, ms, err);
                if (!r && *ms < 1000)
                        r = xb_err_msg(err, ERANGE, "at least a second");
                break;
        }
        case O_DRAIN_TIMEOUT:
                r = parse_seconds(arg, &o->drain_timeout_ms, err);
                if (!r && o->drain_timeout_ms > 3600 * 1000)
                        r = xb_err_msg(err, ERANGE, "at most an hour (1h)");
                break;
        case O_STOP_SANDBOXES: o->stop_sandboxes = true; break;
        case O_ADOPT_GRACE:
                r = parse_seconds(arg, &o->adopt_grace_ms, err);
                if (!r && o->adopt_grace_ms > 7 * 24 * 3600 * 1000ull)
                        r = xb_err_msg(err, ERANGE, "at most a week (168h)");
                break;
        case O_AUDIT_MAX:
                r = xb_parse_u64(arg, &v, err);
                if (!r && (v < 1 || v > 1000000))
                        r = xb_err_msg(err, ERANGE, "between 1 and 1000000 events");
                o->audit_max = (unsigned)v;
                break;
        case O_NET_MAX:
                if (xb_netmode_parse(arg, &o->network_max) < 0)
                        r = xb_err_msg(err, EINVAL, "write none, packages, allowlist or open, not `%s`", arg);
                break;
        case O_NET_DENY: {
                struct xb_netrule rule;

                if (o->nnetwork_deny == ARRAY_SIZE(a->net_deny))
                        r = xb_err_msg(err, E2BIG, "too many --network-deny options");
                else if ((r = xb_netrule_parse(arg, &rule, err)) == 0) {
                        xb_netrule_free(&rule);
                        a->net_deny[o->nnetwork_deny++] = arg;
                }
                break;
        }
        case O_PKG_SOURCE:
                if (o->npackage_sources == ARRAY_SIZE(a->sources))
                        r = xb_err_msg(err, E2BIG, "too many --package-source options");
                else if (strncmp(arg, "http://", 7) && strncmp(arg, "https://", 8))
                        r = xb_err_msg(err, EINVAL, "write a package source's URL, e.g. "
                                       "https://mirror.example.com/debian");
                else
                        a->sources[o->npackage_sources++] = arg;
                break;
        case O_DNS_SERVER: {
                struct xb_ip ip;
                char host[64];
                const char *colon = strrchr(arg, ':');
                bool ok = xb_ip_parse(arg, &ip) == 0;

                /* "IP:PORT" or "[V6]:PORT" */
                if (!ok && colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1) &&
                    (size_t)(colon - arg) < sizeof(host)) {
                        snprintf(host, sizeof(host), "%.*s", (int)(colon - arg), arg);
                        ok = xb_ip_parse(host, &ip) == 0 && (host[0] == '[' || !strchr(host, ':'));
                }
                if (!ok)
                        r = xb_err_msg(err, EINVAL, "write a resolver's address, e.g. 192.0.2.53 or "
                                       "192.0.2.53:5353");
                o->dns_server = arg;
                break;
        }
        case O_NET_CONNS:
                r = xb_parse_u64(arg, &v, err);
                if (!r && (v < 1 || v > 1024))
                        r = xb_err_msg(err, ERANGE, "between 1 and 1024 connections");
                o->network_conns = (unsigned)v;
                break;
        case O_NET_RATE: r = xb_parse_size(arg, &o->network_rate, err); break;
        case O_PKG_CACHE_SIZE: r = xb_parse_size(arg, &o->package_cache_size, err); break;
        case O_INST_CACHE_SIZE: r = xb_parse_size(arg, &o->install_cache_size, err); break;
        case O_UPSTREAM_CA:
                if (access(arg, R_OK) < 0)
                        r = xb_err_msg(err, errno, "cannot read %s", arg);
                o->upstream_ca = arg;
                break;
        case O_APPROVAL_TIMEOUT:
                r = parse_seconds(arg, &o->approval_timeout_ms, err);
                if (!r && (o->approval_timeout_ms < 1000 || o->approval_timeout_ms > 3600000))
                        r = xb_err_msg(err, ERANGE, "between a second and an hour");
                break;
        }
        return r;
}

/* A boolean a higher layer sets to false: back to cmd's default. */
static void
unset(struct xb_server_args *a, enum xb_server_cmd cmd, int opt)
{
        struct xb_server_opts *o = &a->o;

        switch (opt) {
        case O_NOAUTH: o->no_auth = cmd == XB_CMD_MCP; break;
        case O_POOL_PY: o->pool_python = false; break;
        case O_STOP_SANDBOXES: o->stop_sandboxes = false; break;
        case O_GUIDE: o->require_guide = false; break;
        case O_FIXTURES: o->conformance_fixtures = false; break;
        case O_QUIET:
                o->quiet = cmd == XB_CMD_MCP;
                xb_log_set_level(o->quiet ? XB_LOG_WARN : XB_LOG_INFO);
                break;
        case O_VERBOSE: xb_log_set_level(o->quiet ? XB_LOG_WARN : XB_LOG_INFO); break;
        }
}

/* A list option's values so far, dropped when a higher layer gives it. */
static void
drop(struct xb_server_args *a, int opt)
{
        if (opt == O_ALLOW)
                a->o.nallow = 0;
        else if (opt == O_MCP_HOST)
                a->o.nmcp_hosts = 0;
        else if (opt == O_ORIGIN)
                a->o.nallow_origins = 0;
        else if (opt == O_ALLOW_HOST)
                a->o.nallow_hosts = 0;
        else if (opt == O_NET_DENY)
                a->o.nnetwork_deny = 0;
        else if (opt == O_PKG_SOURCE)
                a->o.npackage_sources = 0;
}

enum layer { L_DEFAULT, L_FILE, L_ENV, L_FLAGS };

struct parse {
        struct xb_server_args *a;
        enum xb_server_cmd cmd;
        unsigned char layer_of[ARRAY_SIZE(table)];   /* the layer that set each option last */
        unsigned line_of[ARRAY_SIZE(table)];         /* its first line in the file */
        char limits_err[sizeof(((struct xb_err *)0)->msg) + 160];
};

/* Option i's value from layer, named as where in errors: a key's or a
 * variable's "true"/"false" for a flag without a value, else what the
 * flag would take. */
static int
set(struct parse *p, size_t i, enum layer layer, const char *value, const char *where)
{
        struct xb_err err = { 0 };
        int opt = table[i].opt.val;

        if ((table[i].how & REPEAT) && p->layer_of[i] != layer)
                drop(p->a, opt);
        p->layer_of[i] = (unsigned char)layer;
        if (layer != L_FLAGS && !*value) {
                fprintf(stderr, "execbox: error: %s needs a value\n", where);
                return -1;
        }
        if (layer != L_FLAGS && table[i].opt.has_arg == no_argument) {
                if (strcmp(value, "false") == 0) {
                        unset(p->a, p->cmd, opt);
                        return 0;
                }
                if (strcmp(value, "true") != 0) {
                        fprintf(stderr, "execbox: error: %s: `%s` is neither true nor false\n", where, value);
                        return -1;
                }
                value = NULL;
        }
        if (apply(p->a, p->cmd, opt, value, &err) < 0) {
                fprintf(stderr, "execbox: error: %s: %s\n", where, err.msg);
                return -1;
        }
        /* Out of bounds: named now, refused at the end unless bridging. */
        if (!p->limits_err[0] && xb_limits_validate(&p->a->o.defaults, &err) < 0)
                snprintf(p->limits_err, sizeof(p->limits_err), "%s: %s", where, err.msg);
        return 0;
}

/* The table entry of a key, exactly (no abbreviations), or -1. */
static ssize_t
find(const char *key)
{
        for (size_t i = 0; i < ARRAY_SIZE(table); i++)
                if (strcmp(table[i].opt.name, key) == 0)
                        return (ssize_t)i;
        return -1;
}

/* The config file: a missing one is fine unless it was asked for. Keys of
 * the other command are checked by that command, skipped here. */
static int
from_file(struct parse *p, const char *path, const char *asked_by)
{
        /* Its text holds the options' strings for the process's life. */
        static struct xb_conf conf;
        struct xb_err err = { 0 };
        char where[PATH_MAX + 96];
        int r = xb_conf_read(path, &conf, &err);

        if (r == -ENOENT && !asked_by)
                return 0;
        if (r < 0 && conf.err_line) {
                fprintf(stderr, "execbox: error: %s:%u: %s\n", path, conf.err_line, err.msg);
                return -1;
        }
        if (r < 0) {
                fprintf(stderr, "execbox: error: %s%s%s: %s\n", asked_by ? asked_by : "", asked_by ? " " : "", path,
                        err.msg);
                return -1;
        }
        for (size_t k = 0; k < conf.n; k++) {
                const struct xb_conf_line *l = &conf.lines[k];
                ssize_t i = find(l->key);

                snprintf(where, sizeof(where), "%s:%u: %s", path, l->line, l->key);
                if (i < 0 || (table[i].how & FLAG_ONLY)) {
                        fprintf(stderr, "execbox: error: %s:%u: unknown key `%s`%s\n", path, l->line, l->key,
                                i < 0               ? "; see `man execbox-serve` for the keys"
                                : table[i].opt.val == O_TOKEN ? " (a token goes in token-file, or EXECBOX_TOKEN)"
                                                    : " (it is only a flag)");
                        return -1;
                }
                if (p->line_of[i] && !(table[i].how & REPEAT)) {
                        fprintf(stderr, "execbox: error: %s: given twice (first on line %u)\n", where,
                                p->line_of[i]);
                        return -1;
                }
                if (!p->line_of[i])
                        p->line_of[i] = l->line;
                if ((table[i].cmds & (1u << p->cmd)) && set(p, (size_t)i, L_FILE, l->value, where) < 0)
                        return -1;
        }
        return 0;
}

/* EXECBOX_<OPTION> for each option of cmd; a list's are comma-separated,
 * and an empty one empties it. */
static int
from_env(struct parse *p)
{
        /* Copies: the options keep pointing at them after setenv(3). */
        static char *kept[ARRAY_SIZE(table)];
        char name[64];

        for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
                const char *v;
                char *save = NULL;

                if ((table[i].how & FLAG_ONLY) || !(table[i].cmds & (1u << p->cmd)))
                        continue;
                if (!(v = getenv(xb_conf_env_name(table[i].opt.name, name, sizeof(name)))))
                        continue;
                free(kept[i]);
                if (!(kept[i] = strdup(v))) {
                        fprintf(stderr, "execbox: error: %s: out of memory\n", name);
                        return -1;
                }
                if (!(table[i].how & REPEAT)) {
                        if (set(p, i, L_ENV, kept[i], name) < 0)
                                return -1;
                        continue;
                }
                drop(p->a, table[i].opt.val);
                p->layer_of[i] = L_ENV;
                for (char *tok = strtok_r(kept[i], ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                        if (set(p, i, L_ENV, tok, name) < 0)
                                return -1;
        }
        return 0;
}

struct flag {
        size_t i;
        const char *arg;
        char typed[128];
};

int
xb_server_args_parse(struct xb_server_args *a, enum xb_server_cmd cmd, int argc, char **argv)
{
        struct option longopts[ARRAY_SIZE(table) + 1] = { 0 };
        size_t which[ARRAY_SIZE(table)];
        _cleanup_free_ struct flag *flags = calloc((size_t)argc + 1, sizeof(*flags));
        struct parse p = { .a = a, .cmd = cmd };
        const char *name = cmd_name[cmd], *config = NULL, *asked_by = NULL;
        char msg[sizeof(((struct xb_err *)0)->msg)];
        size_t n = 0, nflags = 0;
        int opt;

        if (!flags) {
                fprintf(stderr, "execbox: error: out of memory\n");
                return -1;
        }
        defaults(a, cmd);
        for (size_t i = 0; i < ARRAY_SIZE(table); i++)
                if (table[i].cmds & (1u << cmd)) {
                        which[n] = i;
                        longopts[n++] = table[i].opt;
                }
        /* The flags are read first, to find --config and --help, and
         * applied last, over the file and the environment. */
        opterr = 0;   /* our messages, naming the option as typed */
        for (;;) {
                struct flag *f = &flags[nflags];
                int li = -1;

                if ((opt = getopt_long(argc, argv, ":h", longopts, &li)) == -1)
                        break;

                if (opt == 'h')
                        return XB_SERVER_ARGS_HELP;
                if (opt == '?' || opt == ':') {
                        fprintf(stderr, "execbox: error: %s; see `execbox %s --help`\n",
                                xb_opt_problem(opt, argv, longopts, msg, sizeof(msg)), name);
                        return -1;
                }
                xb_opt_typed(opt, argv, longopts, f->typed, sizeof(f->typed));
                if (opt == O_CONFIG) {
                        config = optarg;
                        asked_by = "--config";
                        continue;
                }
                f->i = which[li];
                f->arg = optarg;
                nflags++;
        }
        if (!config && (config = getenv("EXECBOX_CONFIG")))
                asked_by = "EXECBOX_CONFIG";
        if (config && !*config) {
                fprintf(stderr, "execbox: error: %s needs a value\n", asked_by);
                return -1;
        }
        if (from_file(&p, config ? config : XB_CONF_DEFAULT, asked_by) < 0 || from_env(&p) < 0)
                return -1;
        for (size_t k = 0; k < nflags; k++)
                if (set(&p, flags[k].i, L_FLAGS, flags[k].arg, flags[k].typed) < 0)
                        return -1;
        if (optind < argc) {
                fprintf(stderr, "execbox: error: unexpected argument `%s`; see `execbox %s --help`\n", argv[optind],
                        name);
                return -1;
        }
        /* A bridge has no sandboxes of its own: its limits are the server's. */
        if (!a->server && p.limits_err[0]) {
                fprintf(stderr, "execbox: error: %s\n", p.limits_err);
                return -1;
        }
        if (cmd == XB_CMD_SERVE && a->o.no_auth && !xb_http_is_loopback(a->o.listen)) {
                fprintf(stderr, "execbox: error: --no-auth is allowed only on loopback (127.0.0.1:PORT) or a unix "
                                "socket, not on %s\n", a->o.listen);
                return -1;
        }
        return 0;
}
