/* The server's life: configuration, auth token, the engine, the HTTP
 * front, signals, the warm pool, and a clean shutdown that kills every
 * sandbox and removes its cgroups before exiting. */
#define _GNU_SOURCE
#include "core/core.h"

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

extern const struct xb_route xb_api_routes_sandboxes[], xb_api_routes_meta[], xb_api_routes_files[],
        xb_api_routes_docs[], xb_api_routes_sessions[], xb_api_routes_mcp[], xb_api_routes_plugin[],
        xb_api_routes_events[];
extern const size_t xb_api_nroutes_sandboxes, xb_api_nroutes_meta, xb_api_nroutes_files, xb_api_nroutes_docs,
        xb_api_nroutes_sessions, xb_api_nroutes_mcp, xb_api_nroutes_plugin, xb_api_nroutes_events;

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

/* Tokens: --token-file (one per line, one tenant each), else EXECBOX_TOKEN,
 * else a random one kept 0600 in the state directory. */
static int
load_tokens(struct xb_server *s, bool *generated, struct xb_err *err)
{
        _cleanup_free_ char *text = NULL;
        const char *env = getenv("EXECBOX_TOKEN");
        char path[4096];

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
                        int fd;

                        if (xb_random_id(tok, 33) < 0)
                                return xb_err_msg(err, EIO, "no randomness for a token");
                        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
                        if (fd < 0 || xb_write_all(fd, tok, strlen(tok)) < 0 || xb_write_all(fd, "\n", 1) < 0) {
                                int e = errno;

                                if (fd >= 0)
                                        close(fd);
                                return xb_err_set(err, e, "write %s", path);
                        }
                        close(fd);
                        text = strdup(tok);
                        *generated = true;
                }
        }
        if (!text)
                return xb_err_set(err, ENOMEM, "token");
        for (char *save = NULL, *t = strtok_r(text, "\n\r\t ", &save); t; t = strtok_r(NULL, "\n\r\t ", &save)) {
                char **v;

                if (strlen(t) < 16)
                        return xb_err_msg(err, EINVAL, "tokens must be at least 16 characters");
                v = realloc(s->tokens, (s->ntokens + 2) * sizeof(char *));
                if (!v)
                        return xb_err_set(err, ENOMEM, "token");
                s->tokens = v;
                s->tokens[s->ntokens++] = strdup(t);
                s->tokens[s->ntokens] = NULL;
        }
        if (!s->ntokens)
                return xb_err_msg(err, EINVAL, "no token found; put one in the token file or EXECBOX_TOKEN");
        return 0;
}

static void
on_signal(struct xb_io *io, uint32_t events)
{
        struct xb_server *s = io->data;
        struct signalfd_siginfo si;

        (void)events;
        while (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                if (!s->stopping)
                        xb_info("signal %u: stopping", si.ssi_signo);
                s->stopping = true;
                xb_loop_stop(s->loop);
        }
}

size_t
xb_server_routes(struct xb_route *out, size_t cap)
{
        const struct { const struct xb_route *r; size_t n; } tables[] = {
                { xb_api_routes_meta, xb_api_nroutes_meta },
                { xb_api_routes_docs, xb_api_nroutes_docs },
                { xb_api_routes_sandboxes, xb_api_nroutes_sandboxes },
                { xb_api_routes_files, xb_api_nroutes_files },
                { xb_api_routes_sessions, xb_api_nroutes_sessions },
                { xb_api_routes_events, xb_api_nroutes_events },
                { xb_api_routes_plugin, xb_api_nroutes_plugin },
                { xb_api_routes_mcp, xb_api_nroutes_mcp },
        };
        size_t n = 0;

        for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
                for (size_t i = 0; i < tables[t].n && n < cap; i++)
                        out[n++] = tables[t].r[i];
        return n;
}

static void
drain_timeout(struct xb_timer *t)
{
        struct xb_server *s = t->data;

        xb_warn("%u sandboxes did not stop within 5 s", s->ndying);
        xb_loop_stop(s->loop);
}

/* Run the loop until every dying sandbox is reaped (sbx.c stops the loop
 * when the last one goes), for at most 5 s. */
static void
drain(struct xb_server *s)
{
        struct xb_timer t = { 0 };

        if (!s->ndying)
                return;
        xb_timer_start(s->loop, &t, 5000, drain_timeout, s);
        xb_loop_run(s->loop);
        xb_timer_stop(&t);
}

/* Set up the engine, the loop, signals, tokens, the HTTP front (when
 * o->listen is set), the MCP core and the warm pool. On failure everything
 * is undone. */
int
xb_server_open(const struct xb_server_opts *opts, struct xb_server **ret)
{
        static struct xb_route routes[128];
        static const char *const fixtures[] = { XB_FIXTURES_PLUGIN, NULL };
        struct xb_server *s = calloc(1, sizeof(*s));
        struct xb_engine_opts eo = { 0 };
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
        s->started_ms = xb_now_ms();
        s->rxbuf = malloc(XB_MSG_MAX);
        s->loop = xb_loop_new();
        if (!s->rxbuf || !s->loop) {
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
        eo = (struct xb_engine_opts){ .cgroup_mode = s->o.cgroup_mode, .allow_mounts = s->o.allow_mounts,
                                      .nallow = s->o.nallow };
        if (xb_engine_open(&eo, &s->eng, &err) < 0) {
                xb_error("%s", err.msg);
                goto fail;
        }
        xb_engine_reap_stale(s->eng);
        s->audits = xb_audits_new(s->loop, s->o.audit_keep_ms, s->o.audit_max, XB_AUDIT_BYTES);
        if (!s->audits) {
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

        nroutes = xb_server_routes(routes, sizeof(routes) / sizeof(routes[0]));
        ho = (struct xb_http_opts){
                .listen = s->o.listen, .body_max = s->o.body_max, .upload_max = s->o.upload_max,
                .conn_limit = 1024, .conn_timeout_s = 60, .tokens = (const char *const *)s->tokens,
                .ntokens = s->ntokens, .app = s, .access_log = s->o.access_log,
        };
        /* execbox mcp over stdio has no HTTP front at all. */
        if (s->o.listen && xb_http_start(s->loop, &ho, routes, nroutes, &s->http, &err) < 0) {
                xb_error("%s", err.msg);
                goto fail;
        }
        mo = (struct xb_mcp_opts){ .loop = s->loop, .core = s, .defaults = &s->o.defaults,
                                   .plugins = s->o.conformance_fixtures ? fixtures : NULL,
                                   .ntenants = s->ntokens ? s->ntokens : 1 };
        if (xb_mcp_new(&mo, &s->mcp, &err) < 0) {
                xb_error("mcp: %s", err.msg);
                goto fail;
        }
        xb_pool_fill(s);
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

void
xb_server_close(struct xb_server *s)
{
        if (!s)
                return;
        s->stopping = true;
        /* MCP's work first (its calls end while the engine runs), then the
         * connections, then MCP's contexts (the fronts let go of them). */
        xb_mcp_shutdown(s->mcp);
        if (s->http)
                xb_http_stop(s->http);
        xb_mcp_free(s->mcp);
        s->mcp = NULL;
        if (s->eng) {
                xb_timer_stop(&s->pool_timer);
                xb_sbx_destroy_all(s);
                drain(s);
        }
        xb_engine_close(s->eng);
        xb_audits_free(s->audits);
        if (s->sigfd >= 0)
                close(s->sigfd);
        xb_loop_free(s->loop);
        if (s->default_sbx)
                for (size_t i = 0; i < (s->ntokens ? s->ntokens : 1); i++)
                        free(s->default_sbx[i]);
        free(s->default_sbx);
        for (size_t i = 0; i < s->ntokens; i++)
                free(s->tokens[i]);
        free(s->tokens);
        free(s->rxbuf);
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
                       xb_cgroup_sys_describe(s->eng->cgroups), s->o.pool_size);
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
        rc = xb_server_run(s) < 0 ? 1 : 0;
        xb_notify_stopping(&n);
        xb_server_close(s);
        return rc;
}
