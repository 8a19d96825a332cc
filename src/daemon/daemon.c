/* The server's life: configuration, auth token, the engine, the HTTP
 * front, signals, the warm pool, and a clean shutdown that kills every
 * sandbox and removes its cgroups before exiting. */
#define _GNU_SOURCE
#include "daemon/daemon.h"
#include "net/sources.h"
#include "net/tls.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/log.h"
#include "core/audit.h"
#include "proto/wire.h"
#include "ops/catalog.h"
#include "mcp/mcp.h"
#include "daemon/notify.h"
#include "daemon/tokens.h"
#include "e2b/e2b.h"
#include "transport/sign.h"

/* Piston's and Judge0's APIs (src/judge): not execbox's own, so not in
 * its OpenAPI document; their routes carry the engine as their data. */
extern const struct xb_route xb_judge_routes[];
extern const size_t xb_judge_nroutes;

static int
mkdir_p(const char *path, mode_t mode)
{
        char buf[4096];

        snprintf(buf, sizeof(buf), "%s", path);
        for (char *p = buf + 1; *p; p++)
                if (*p == '/') {
                        *p = '\0';
                        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                                return -errno;
                        *p = '/';
                }
        return mkdir(buf, mode) < 0 && errno != EEXIST ? -errno : 0;
}

/* Tokens: --token-file (one per line, one tenant each; the format is in
 * tokens.c), else EXECBOX_TOKEN, else a random one kept 0600 in the state
 * directory. */
static int
load_tokens(struct xb_server *s, bool *generated, struct xb_err *err)
{
        _cleanup_free_ char *text = NULL;
        const char *env = getenv("EXECBOX_TOKEN");
        struct xb_tokens t = { 0 };
        char path[4096];
        int r;

        *generated = false;
        if (s->o.no_auth)
                return 0;
        if (s->o.token_file) {
                if (xb_read_file_at(AT_FDCWD, s->o.token_file, 1 << 16, &text, NULL) < 0)
                        return xb_err_set(err, errno, "read --token-file %s", s->o.token_file);
        } else if (env && *env) {
                text = strdup(env);
        } else {
                snprintf(path, sizeof(path), "%s/token", s->o.state_dir);
                if (xb_read_file_at(AT_FDCWD, path, 1 << 16, &text, NULL) < 0) {
                        char tok[48];
                        _cleanup_close_ int dfd = -EBADF;

                        if (errno != ENOENT)
                                return xb_err_set(err, errno, "read %s", path);
                        if (xb_random_id(tok, 33) < 0)
                                return xb_err_msg(err, EIO, "no randomness for a token");
                        strcat(tok, "\n");
                        /* Atomic: a full disk leaves no token file, not an empty one. */
                        dfd = open(s->o.state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        if (dfd < 0)
                                return xb_err_set(err, errno, "open the state directory %s", s->o.state_dir);
                        if ((r = xb_write_file_atomic(dfd, "token", tok, strlen(tok), 0600)) < 0)
                                return xb_err_set(err, -r, "write %s", path);
                        tok[strlen(tok) - 1] = '\0';
                        text = strdup(tok);
                        *generated = true;
                } else if (text && !text[strspn(text, " \t\r\n")]) {
                        return xb_err_msg(err, EINVAL, "the token file %s is empty (written by a start that "
                                          "failed?); remove it to have a new token made, or write one in it", path);
                }
        }
        if (!text)
                return xb_err_set(err, ENOMEM, "token");
        r = xb_tokens_parse(text, &t, err);
        s->tokens = t.token;
        s->token_admin = t.admin;
        s->token_name = t.name;
        s->token_quota = t.quota;
        s->ntokens = t.n;
        if (r < 0)
                return r;
        if (!s->ntokens && s->o.token_file)
                return xb_err_msg(err, EINVAL, "no token found in --token-file %s; put one per line in it",
                                  s->o.token_file);
        if (!s->ntokens)
                return xb_err_msg(err, EINVAL, "no token found; put one in the token file or EXECBOX_TOKEN");
        /* A token's own quota words win over --tenant-quota, field by field. */
        for (size_t i = 0; i < s->ntokens; i++) {
                struct xb_quota q = s->o.quota_default;

                xb_quota_merge(&q, &s->token_quota[i]);
                s->token_quota[i] = q;
        }
        return 0;
}

/* One set of counters per tenant, labelled by name or index. */
static int
tenant_metrics(struct xb_server *s)
{
        size_t n = s->ntokens ? s->ntokens : 1;

        s->core->m.tenant = calloc(n, sizeof(*s->core->m.tenant));
        if (!s->core->m.tenant)
                return -ENOMEM;
        s->core->m.ntenants = n;
        for (size_t i = 0; i < n; i++)
                if (i < s->ntokens && s->token_name[i])
                        snprintf(s->core->m.tenant[i].name, sizeof(s->core->m.tenant[i].name), "%s", s->token_name[i]);
                else
                        snprintf(s->core->m.tenant[i].name, sizeof(s->core->m.tenant[i].name), "%zu", i);
        return 0;
}

static void drain_tick(struct xb_timer *t);

/* The drain is over when no request is in flight, or at its deadline. */
static void
drain_check(struct xb_server *s)
{
        unsigned n = xb_http_inflight(s->http);

        if (n && xb_now_ms() < s->drain_deadline_ms) {
                xb_timer_start(s->loop, &s->drain_timer, 20, drain_tick, s);
                return;
        }
        if (n)
                xb_warn("drain: %u requests still in flight after %llu ms; stopping", n,
                        (unsigned long long)s->o.drain_timeout_ms);
        else
                xb_info("drain: no request in flight; stopping");
        xb_loop_stop(s->loop);
}

static void
drain_tick(struct xb_timer *t)
{
        drain_check(t->data);
}

/* A first SIGTERM or SIGINT drains: /readyz says so (still 200), creates
 * get 503, requests in flight finish, for at most --drain-timeout. A
 * second one, or SIGHUP, stops at once. */
static void
on_signal(struct xb_io *io, uint32_t events)
{
        struct xb_server *s = io->data;
        struct signalfd_siginfo si;

        (void)events;
        while (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                bool drain = !s->draining && !s->stopping && si.ssi_signo != SIGHUP && s->o.drain_timeout_ms &&
                             s->http;

                if (drain) {
                        xb_info("signal %u: draining (at most %llu ms; a second signal stops at once)",
                                si.ssi_signo, (unsigned long long)s->o.drain_timeout_ms);
                        s->draining = true;
                        s->drain_deadline_ms = xb_now_ms() + s->o.drain_timeout_ms;
                        xb_core_drain(s->core);
                        if (s->notify)
                                xb_notify_send(s->notify, "STOPPING=1\nSTATUS=draining: requests in flight "
                                               "finish, creates get 503", 0);
                        drain_check(s);
                        continue;
                }
                if (!s->stopping)
                        xb_info("signal %u: stopping", si.ssi_signo);
                s->stopping = true;
                xb_timer_stop(&s->drain_timer);
                xb_loop_stop(s->loop);
        }
}

/* Every adapter's routes; MCP's carry its core as their data. */
static size_t
routes_of(struct xb_mcp *mcp, struct xb_route *out, size_t cap)
{
        const struct { const struct xb_route *r; size_t n; bool mcp; } tables[] = {
                { xb_api_routes_meta, xb_api_nroutes_meta, false },
                { xb_api_routes_docs, xb_api_nroutes_docs, false },
                { xb_api_routes_tools, xb_api_nroutes_tools, false },
                { xb_api_routes_sandboxes, xb_api_nroutes_sandboxes, false },
                { xb_api_routes_files, xb_api_nroutes_files, false },
                { xb_api_routes_sessions, xb_api_nroutes_sessions, false },
                { xb_api_routes_events, xb_api_nroutes_events, false },
                { xb_api_routes_ports, xb_api_nroutes_ports, false },
                { xb_api_routes_plugin, xb_api_nroutes_plugin, false },
                { xb_api_routes_mcp, xb_api_nroutes_mcp, true },
        };
        size_t n = 0;

        for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
                for (size_t i = 0; i < tables[t].n && n < cap; i++) {
                        out[n] = tables[t].r[i];
                        if (tables[t].mcp)
                                out[n].data = mcp;
                        n++;
                }
        return n;
}

size_t
xb_server_routes(struct xb_route *out, size_t cap)
{
        return routes_of(NULL, out, cap);
}

/* Set up the loop, tokens, the engine, signals, the MCP core and (when
 * o->listen is set) the HTTP front. On failure everything is undone. */
int
xb_server_open(const struct xb_server_opts *opts, struct xb_server **ret)
{
        static struct xb_route routes[192];
        static const char *const fixtures[] = { XB_FIXTURES_PLUGIN, NULL };
        struct xb_server *s = calloc(1, sizeof(*s));
        struct xb_core_opts co = { 0 };
        struct xb_http_opts ho = { 0 };
        struct xb_mcp_opts mo = { 0 };
        struct xb_err err = { 0 };
        struct rlimit rl;
        sigset_t mask;
        size_t nroutes;

        if (!s)
                return -ENOMEM;
        s->o = *opts;
        s->sigfd = -1;
        s->loop = xb_loop_new();
        if (!s->loop) {
                xb_error("out of memory");
                goto fail;
        }
        /* Every sandbox holds a few fds here. */
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                setrlimit(RLIMIT_NOFILE, &rl);
        }
        /* A tool schema that does not parse is a bug: refuse to start. */
        if (xb_catalog_init(&err) < 0) {
                xb_error("tool catalog: %s", err.msg);
                goto fail;
        }
        if (s->o.state_dir && mkdir_p(s->o.state_dir, 0700) < 0) {
                xb_error("cannot create the state directory %s: %s", s->o.state_dir, strerror(errno));
                goto fail;
        }
        if (load_tokens(s, &s->token_generated, &err) < 0) {
                xb_error("%s", err.msg);
                goto fail;
        }
        xb_quota_ceilings(&s->o.ceiling, &s->o.defaults);
        if (xb_quota_check_ceiling(&s->o.ceiling, NULL, &s->o.defaults, &err) < 0) {
                xb_error("the default limits: %s", err.msg);
                goto fail;
        }
        co = (struct xb_core_opts){ .max_sandboxes = s->o.max_sandboxes, .pool_size = s->o.pool_size,
                                    .pool_python = s->o.pool_python, .defaults = s->o.defaults,
                                    .ceiling = s->o.ceiling, .quota = s->token_quota, .nquota = s->ntokens,
                                    .quota_default = s->o.quota_default,
                                    .allow_mounts = s->o.allow_mounts, .nallow = s->o.nallow,
                                    .cgroup_mode = s->o.cgroup_mode, .cgroup_prefix = s->o.cgroup_prefix,
                                    .output_budget = s->o.output_budget,
                                    .upload_max = s->o.upload_max,
                                    .audit_keep_ms = s->o.audit_keep_ms, .audit_max = s->o.audit_max,
                                    .sign = xb_sign, .layers = s->o.layers, .state_dir = s->o.state_dir,
                                    .store_size = s->o.store_size, .mount_owner_set = s->o.mount_owner_set,
                                    .mount_uid = s->o.mount_uid, .mount_gid = s->o.mount_gid,
                                    .paused_ttl_ms = s->o.paused_ttl_ms, .max_lifetime_ms = s->o.max_lifetime_ms,
                                    .install_cache_size = s->o.install_cache_size,
                                    .adopt_grace_ms = s->o.adopt_grace_ms };
        {
                /* Egress: without --package-source, the host's own apt sources
                 * and npm registry, read now (never written anywhere). */
                char **host_src = NULL;
                size_t nhost = 0;
                char cache_dir[4096];
                int r;

                if (s->o.state_dir)
                        snprintf(cache_dir, sizeof(cache_dir), "%s/pkgcache", s->o.state_dir);

                if (!s->o.npackage_sources)
                        xb_net_host_sources("/etc/apt", &host_src, &nhost);
                co.network = true;
                co.net = (struct xb_netsys_opts){
                        .max = s->o.network_max, .deny = s->o.network_deny, .ndeny = s->o.nnetwork_deny,
                        .sources = s->o.npackage_sources ? s->o.package_sources : (const char *const *)host_src,
                        .nsources = s->o.npackage_sources ? s->o.npackage_sources : nhost,
                        .npm_registry = !s->o.npackage_sources, .dns_server = s->o.dns_server,
                        .conns_max = s->o.network_conns, .rate = s->o.network_rate,
                        .cache_dir = s->o.state_dir ? cache_dir : NULL, .cache_size = s->o.package_cache_size,
                };
                /* The CA of secrets' TLS, before the engine: the sandboxes' /etc trusts it.
                 * Without a state dir (execbox mcp) secrets' hosts stay tunnels. */
                if (s->o.state_dir && xb_tls_open(s->o.state_dir, s->o.upstream_ca, &co.net.tls, &err) < 0) {
                        xb_error("egress TLS: %s", err.msg);
                        goto fail;
                }
                co.approval_timeout_ms = s->o.approval_timeout_ms;
                r = xb_core_open(&co, s->loop, &s->core, &err);
                for (size_t i = 0; i < nhost; i++)
                        free(host_src[i]);
                free(host_src);
                if (r < 0) {
                        xb_error("%s", err.msg);
                        goto fail;
                }
        }
        if (tenant_metrics(s) < 0) {
                xb_error("out of memory");
                goto fail;
        }

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);
        s->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        xb_io_start(s->loop, &s->sig_io, s->sigfd, EPOLLIN, on_signal, s);

        mo = (struct xb_mcp_opts){ .loop = s->loop, .core = s->core, .defaults = &s->core->o.defaults,
                                   .plugins = s->o.conformance_fixtures ? fixtures : NULL,
                                   .ntenants = s->ntokens ? s->ntokens : 1, .pause_ms = s->o.mcp_pause_ms };
        if (xb_mcp_new(&mo, &s->mcp, &err) < 0) {
                xb_error("mcp: %s", err.msg);
                goto fail;
        }
        nroutes = routes_of(s->mcp, routes, sizeof(routes) / sizeof(routes[0]));
        s->rest = (struct xb_rest){ .core = s->core, .no_auth = s->o.no_auth, .require_guide = s->o.require_guide,
                                    .template_upload_max = s->o.template_upload_max,
                                    .ntenants = s->ntokens ? s->ntokens : 1, .routes = routes, .nroutes = nroutes,
                                    .sandbox_domain = s->o.sandbox_domain };
        for (size_t i = 0; i < xb_judge_nroutes && nroutes < sizeof(routes) / sizeof(routes[0]); i++) {
                routes[nroutes] = xb_judge_routes[i];
                routes[nroutes++].data = s->core;
        }
        s->e2b = xb_e2b_new(s->core, s->o.sandbox_domain);
        if (!s->e2b) {
                xb_error("out of memory");
                goto fail;
        }
        {
                size_t n;
                const struct xb_route *er = xb_e2b_routes(s->e2b, &n);

                if (nroutes + n > sizeof(routes) / sizeof(routes[0])) {
                        xb_error("the route table is too small for every adapter's routes");
                        goto fail;
                }
                for (size_t i = 0; i < n; i++)
                        routes[nroutes++] = er[i];
        }
        ho = (struct xb_http_opts){
                .listen = s->o.listen, .body_max = s->o.body_max, .upload_max = s->o.upload_max,
                .conn_limit = 1024, .conn_timeout_s = 60, .tokens = (const char *const *)s->tokens,
                .ntokens = s->ntokens, .allowed_hosts = s->o.mcp_hosts, .nallowed_hosts = s->o.nmcp_hosts,
                .allow_hosts = s->o.allow_hosts, .nallow_hosts = s->o.nallow_hosts,
                .admin = s->token_admin, .allow_origins = s->o.allow_origins,
                .nallow_origins = s->o.nallow_origins, .public_url = s->o.public_url, .app = &s->rest,
                .access_log = s->o.access_log, .large_upload_max = s->o.template_upload_max,
                .large_upload_hint = "send a smaller image (fewer or squashed layers), or ask the operator to raise "
                                     "--template-upload-max",
        };
        /* Host routes (transport/http.h), in order: an adapter that takes
         * some hosts or headers of its own goes before the published
         * ports' catch-all for {port}-{id}.DOMAIN. */
        /* E2B's envd and code interpreter, by its headers or Host. */
        s->host_routes[s->nhost_routes++] = xb_e2b_host_route(s->e2b);
        if (s->o.sandbox_domain)
                s->host_routes[s->nhost_routes++] =
                        (struct xb_host_route){ xb_api_ports_host, (void *)s->o.sandbox_domain };
        ho.host_routes = s->host_routes;
        ho.nhost_routes = s->nhost_routes;
        /* execbox mcp over stdio has no HTTP front at all. */
        if (s->o.listen && xb_http_start(s->loop, &ho, routes, nroutes, &s->http, &err) < 0) {
                xb_error("%s", err.msg);
                goto fail;
        }
        s->rest.http = s->http;
        *ret = s;
        return 0;
fail:
        xb_server_close(s);
        return -EIO;
}

int
xb_server_run(struct xb_server *s)
{
        if (xb_loop_run(s->loop) < 0) {
                xb_error("event loop failed: %s", strerror(errno));
                return -EIO;
        }
        return 0;
}

/* What becomes of the sandboxes at exit: the one place that decides.
 * --stop-sandboxes deletes every one. Without it the armed ones
 * (--adopt-grace) stay for the next daemon with the same state dir; the
 * rest are deleted. Either way the engine goes. */
static void
exit_sandboxes(struct xb_server *s)
{
        unsigned n, left = 0;

        if (!s->o.stop_sandboxes)
                left = xb_core_leave(s->core);
        if (left)
                xb_info("left %u sandboxes for the next server on %s (they wait for it %llus)", left,
                        s->o.state_dir, (unsigned long long)(s->o.adopt_grace_ms / 1000));
        n = s->core ? s->core->nsandboxes : 0;
        if (n)
                xb_info("deleting %u sandboxes%s", n, s->o.stop_sandboxes ? " (--stop-sandboxes)" : "");
        xb_core_close(s->core);
        s->core = NULL;
}

void
xb_server_close(struct xb_server *s)
{
        if (!s)
                return;
        s->stopping = true;
        xb_core_stop(s->core);
        /* MCP's work first (its calls end while the engine runs), then the
         * connections, then MCP's contexts (the fronts let go of them),
         * then the sandboxes. */
        xb_mcp_shutdown(s->mcp);
        if (s->http)
                xb_http_stop(s->http);
        xb_mcp_free(s->mcp);
        s->mcp = NULL;
        xb_e2b_free(s->e2b);
        s->e2b = NULL;
        xb_timer_stop(&s->drain_timer);
        exit_sandboxes(s);
        if (s->sigfd >= 0)
                close(s->sigfd);
        xb_loop_free(s->loop);
        xb_rest_clear(&s->rest);
        xb_tokens_free(&(struct xb_tokens){ .token = s->tokens, .admin = s->token_admin, .name = s->token_name,
                                          .quota = s->token_quota, .n = s->ntokens });
        free(s);
}

int
xb_server_main(const struct xb_server_opts *opts)
{
        struct xb_server *s = NULL;
        struct xb_notify n;
        char status[300];
        int rc;

        if (xb_server_open(opts, &s) < 0)
                return 1;
        if (!s->o.quiet) {
                const char *url = xb_http_url(s->http);

                printf("execbox %s listening on %s (cgroups %s, pool %u)\n", "serve", url,
                       xb_cgroup_sys_describe(s->core->eng->cgroups), s->o.pool_size);
                printf("  OpenAPI:  %s/openapi.json\n  Guide:    %s/v1/guide\n  MCP:      %s/mcp\n", url, url, url);
                if (s->o.no_auth)
                        printf("  Auth:     none (--no-auth)\n");
                else if (s->token_generated)
                        printf("  Token:    %s  (saved in %s/token; send it as `Authorization: Bearer ...`)\n",
                               s->tokens[0], s->o.state_dir);
                else
                        printf("  Token:    from %s\n", s->o.token_file ? s->o.token_file : "EXECBOX_TOKEN or the state dir");
                fflush(stdout);
        }
        snprintf(status, sizeof(status), "listening on %s", xb_http_url(s->http));
        xb_notify_ready(&n, s->loop, status);
        s->notify = &n;
        rc = xb_server_run(s) < 0 ? 1 : 0;
        xb_notify_stopping(&n);
        s->notify = NULL;
        xb_server_close(s);
        return rc;
}
