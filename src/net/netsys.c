/* The server-wide part of egress: the operator's ceiling, deny list and
 * package sources, the resolver, the host's own addresses; and the
 * decision every connection and DNS answer goes through. A sandbox's
 * state (struct xb_net) is created, attached to its sockets and freed
 * here too. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "net/net_int.h"
#include "net/upstream.h"
#include "net/secret.h"
#include "net/tls.h"

extern char **environ;

static void
read_self(struct xb_netsys *ns)
{
        struct ifaddrs *ifa, *i;

        ns->self_ms = xb_now_ms();
        if (getifaddrs(&ifa) < 0)
                return;
        ns->nself = 0;
        for (i = ifa; i && ns->nself < XB_NET_SELF_MAX; i = i->ifa_next)
                if (i->ifa_addr && xb_ip_from_sockaddr(i->ifa_addr, &ns->self[ns->nself]) == 0)
                        ns->nself++;
        freeifaddrs(ifa);
}

bool
xb__netsys_is_self(struct xb_netsys *ns, const struct xb_ip *ip)
{
        if (xb_now_ms() - ns->self_ms > 10000)
                read_self(ns);
        for (size_t i = 0; i < ns->nself; i++)
                if (xb_ip_equal(&ns->self[i], ip))
                        return true;
        return false;
}

struct xb_resolver *
xb__netsys_resolver(struct xb_netsys *ns)
{
        return ns->res;
}

/* "[npm=|pip=|apt=]http[s]://host[:port]/path" -> kind, host, port, path;
 * 0 or -EINVAL. A path ending in /simple is a pip index. */
static int
parse_source(const char *url, enum xb_source_kind kind, struct xb_source *ret)
{
        const char *p, *end;
        char host[XB_NETNAME_MAX + 1];
        unsigned long port;
        bool https;
        size_t pl;

        if (!strncmp(url, "npm=", 4) || !strncmp(url, "pip=", 4) || !strncmp(url, "apt=", 4)) {
                kind = url[0] == 'n' ? XB_SRC_NPM : url[0] == 'p' ? XB_SRC_PIP : XB_SRC_ANY;
                url += 4;
        }
        p = strstr(url, "://");
        if (!p)
                return -EINVAL;
        https = (size_t)(p - url) == 5 && !strncasecmp(url, "https", 5);
        if (!https && !((size_t)(p - url) == 4 && !strncasecmp(url, "http", 4)))
                return -EINVAL;
        p += 3;
        end = p + strcspn(p, ":/?#");
        if (end == p || (size_t)(end - p) > XB_NETNAME_MAX)
                return -EINVAL;
        memcpy(host, p, (size_t)(end - p));
        host[end - p] = '\0';
        port = https ? 443 : 80;
        if (*end == ':') {
                char *e;

                port = strtoul(end + 1, &e, 10);
                if (port == 0 || port > 65535 || (*e && *e != '/'))
                        return -EINVAL;
        }
        if (!xb_netname_normalize(host))
                return -EINVAL;
        end += strcspn(end, "/?#");
        pl = strcspn(end, "?#");
        while (pl && end[pl - 1] == '/')
                pl--;
        ret->path = strndup(end, pl);
        if (kind == XB_SRC_ANY && ((pl >= 7 && !strncmp(end + pl - 7, "/simple", 7))))
                kind = XB_SRC_PIP;
        ret->kind = kind;
        ret->https = https;
        ret->host = strdup(host);
        ret->port = (uint16_t)port;
        if (!ret->host || !ret->path) {
                free(ret->host);
                free(ret->path);
                return -ENOMEM;
        }
        return 0;
}

static int
add_source(struct xb_netsys *ns, const char *url, enum xb_source_kind kind)
{
        struct xb_source s, *n;

        if (parse_source(url, kind, &s) < 0)
                return -EINVAL;
        for (size_t i = 0; i < ns->nsrc; i++)
                if (!strcmp(ns->src[i].host, s.host) && ns->src[i].port == s.port && ns->src[i].https == s.https &&
                    !strcmp(ns->src[i].path, s.path)) {
                        if (s.kind != XB_SRC_ANY)
                                ns->src[i].kind = s.kind;
                        free(s.host);
                        free(s.path);
                        return 0;
                }
        n = reallocarray(ns->src, ns->nsrc + 1, sizeof(*n));
        if (!n) {
                free(s.host);
                free(s.path);
                return -ENOMEM;
        }
        ns->src = n;
        ns->src[ns->nsrc++] = s;
        xb__netsys_pkg_env_build(ns);
        return 0;
}

static void
npm_done(struct xb_netsys *ns)
{
        xb_io_stop(&ns->npm_io);
        close(ns->npm_fd);
        ns->npm_fd = -1;
        /* It has closed its stdout: it is exiting. */
        waitpid(ns->npm_pid, NULL, 0);
        ns->npm_pid = 0;
        ns->npm_buf[ns->npm_len] = '\0';
        ns->npm_buf[strcspn(ns->npm_buf, "\r\n")] = '\0';
        if (ns->npm_buf[0] && add_source(ns, ns->npm_buf, XB_SRC_NPM) == 0)
                xb_info("network: package source %s (npm config get registry)", ns->npm_buf);
}

static void
on_npm(struct xb_io *io, uint32_t events)
{
        struct xb_netsys *ns = io->data;
        ssize_t n;

        (void)events;
        n = read(ns->npm_fd, ns->npm_buf + ns->npm_len, sizeof(ns->npm_buf) - 1 - ns->npm_len);
        if (n > 0 && ns->npm_len + (size_t)n < sizeof(ns->npm_buf) - 1) {
                ns->npm_len += (size_t)n;
                return;
        }
        if (n < 0 && errno == EAGAIN)
                return;
        npm_done(ns);
}

/* `npm config get registry`, read on the loop as it comes. */
static void
ask_npm(struct xb_netsys *ns)
{
        char *argv[] = { (char *)"npm", (char *)"config", (char *)"get", (char *)"registry", NULL };
        posix_spawn_file_actions_t fa;
        int p[2];

        if (pipe2(p, O_CLOEXEC) < 0)
                return;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], 1);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        if (posix_spawnp(&ns->npm_pid, "npm", &fa, NULL, argv, environ) != 0) {
                ns->npm_pid = 0;
                close(p[0]);
        } else {
                ns->npm_fd = p[0];
                fcntl(p[0], F_SETFL, O_NONBLOCK);
                if (xb_io_start(ns->loop, &ns->npm_io, p[0], EPOLLIN, on_npm, ns) < 0)
                        npm_done(ns);
        }
        posix_spawn_file_actions_destroy(&fa);
        close(p[1]);
}

int
xb_netsys_open(const struct xb_netsys_opts *o, struct xb_loop *loop, struct xb_netsys **ret, struct xb_err *err)
{
        struct xb_netsys *ns = calloc(1, sizeof(*ns));
        int r;

        if (!ns)
                return xb_err_set(err, ENOMEM, "network");
        ns->o = *o;
        ns->loop = loop;
        ns->npm_fd = -1;
        if (!ns->o.conns_max)
                ns->o.conns_max = XB_NET_CONNS_DEFAULT;
        if (o->ndeny) {
                ns->deny = calloc(o->ndeny, sizeof(*ns->deny));
                if (!ns->deny) {
                        r = xb_err_set(err, ENOMEM, "network");
                        goto fail;
                }
                for (size_t i = 0; i < o->ndeny; i++, ns->ndeny++)
                        if ((r = xb_netrule_parse(o->deny[i], &ns->deny[i], err)) < 0) {
                                xb_err_wrap(err, "--network-deny");
                                goto fail;
                        }
        }
        for (size_t i = 0; i < o->nsources; i++)
                if (add_source(ns, o->sources[i], XB_SRC_ANY) < 0) {
                        r = xb_err_msg(err, EINVAL, "--package-source `%.128s` is not an http:// or https:// URL",
                                       o->sources[i]);
                        goto fail;
                }
        ns->tls = o->tls;
        ns->o.tls = NULL;
        if ((r = xb__resolver_open(loop, o->dns_server, &ns->res, err)) < 0)
                goto fail;
        read_self(ns);
        if (o->max >= XB_NET_PACKAGES) {
                struct xb_err e2 = { 0 };

                /* Without libcurl there is no cache and no https upgrade:
                 * requests go the proxy's usual way. */
                if (xb_upstream_open(loop, &ns->up, &e2) < 0)
                        xb_warn("network: no package cache (%s)", e2.msg);
                else if (o->cache_dir && o->cache_size &&
                         xb_pkgcache_open(o->cache_dir, o->cache_size, &ns->pkg, &e2) < 0)
                        xb_warn("network: no package cache (%s)", e2.msg);
        }
        if (o->npm_registry && o->max >= XB_NET_PACKAGES)
                ask_npm(ns);
        ns->o.deny = NULL;
        ns->o.sources = NULL;
        *ret = ns;
        return 0;
fail:
        xb_netsys_close(ns);
        return r;
}

void
xb_netsys_close(struct xb_netsys *ns)
{
        if (!ns)
                return;
        if (ns->npm_pid > 0) {
                kill(ns->npm_pid, SIGKILL);
                npm_done(ns);
        }
        xb__resolver_close(ns->res);
        xb_upstream_close(ns->up);
        xb_pkgcache_close(ns->pkg);
        xb__netsys_pkg_env_free(ns);
        xb_tls_close(ns->tls);
        for (size_t i = 0; i < ns->ndeny; i++)
                xb_netrule_free(&ns->deny[i]);
        free(ns->deny);
        for (size_t i = 0; i < ns->nsrc; i++) {
                free(ns->src[i].host);
                free(ns->src[i].path);
        }
        free(ns->src);
        free(ns);
}

const struct xb_netsys_stats *
xb_netsys_stats(const struct xb_netsys *ns)
{
        return &ns->st;
}

const struct xb_pkgcache_stats *
xb_netsys_pkgcache(const struct xb_netsys *ns)
{
        return ns->pkg ? xb_pkgcache_stats(ns->pkg) : NULL;
}

enum xb_netmode
xb_netsys_max(const struct xb_netsys *ns)
{
        return ns->o.max;
}

json_t *
xb_netsys_json(const struct xb_netsys *ns)
{
        json_t *deny = json_array(), *src = json_array();

        for (size_t i = 0; i < ns->ndeny; i++)
                json_array_append_new(deny, json_string(ns->deny[i].text));
        for (size_t i = 0; i < ns->nsrc; i++) {
                bool seen = false;

                /* One entry a host and port: what the policy opens. */
                for (size_t j = 0; j < i; j++)
                        seen |= !strcmp(ns->src[j].host, ns->src[i].host) && ns->src[j].port == ns->src[i].port;
                if (!seen)
                        json_array_append_new(src, json_pack("{s:s,s:i}", "host", ns->src[i].host, "port",
                                                             ns->src[i].port));
        }
        return json_pack("{s:s,s:o,s:o}", "max", xb_netmode_name(ns->o.max), "deny", deny, "package_sources", src);
}

/* ---- decisions ---- */

enum xb_verdict
xb__net_decide_name(struct xb_net *n, const struct xb_netpol *p, const char *host, bool literal, uint16_t port,
                    char *rule, size_t rulelen)
{
        struct xb_netsys *ns = n->ns;
        const struct xb_netrule *m;

        if (p->mode == XB_NET_NONE) {
                snprintf(rule, rulelen, "mode none");
                return XB_V_DENY;
        }
        /* RFC 6761: these names are the host's own loopback, whatever a resolver says. */
        if (!literal && (!strcmp(host, "localhost") || (strlen(host) > 10 &&
                                                       !strcmp(host + strlen(host) - 10, ".localhost")))) {
                snprintf(rule, rulelen, "loopback name");
                return XB_V_DENY;
        }
        if (!literal && (m = xb_netrules_name(ns->deny, ns->ndeny, host))) {
                snprintf(rule, rulelen, "server deny %s", m->text);
                return XB_V_DENY;
        }
        switch (p->mode) {
        case XB_NET_OPEN:
                snprintf(rule, rulelen, "mode open");
                return XB_V_ALLOW;
        case XB_NET_PACKAGES:
                for (size_t i = 0; !literal && i < ns->nsrc; i++)
                        if (!strcmp(ns->src[i].host, host) && (port == ns->src[i].port || port == 80 || port == 443)) {
                                snprintf(rule, rulelen, "package source %s", host);
                                return XB_V_ALLOW;
                        }
                snprintf(rule, rulelen, "mode packages: not a package source");
                return XB_V_DENY;
        case XB_NET_ALLOWLIST:
                if (!literal && (m = xb_netrules_name(p->deny, p->ndeny, host))) {
                        snprintf(rule, rulelen, "deny %s", m->text);
                        return XB_V_DENY;
                }
                if (!literal && (m = xb_netrules_name(p->allow, p->nallow, host))) {
                        snprintf(rule, rulelen, "allow %s", m->text);
                        return XB_V_ALLOW;
                }
                if (!literal && (m = xb_netrules_name(p->ask, p->nask, host))) {
                        snprintf(rule, rulelen, "ask %s", m->text);
                        return XB_V_ASK;
                }
                if (xb_netrules_have_cidr(p->allow, p->nallow)) {
                        snprintf(rule, rulelen, "allowlist: by address");
                        return XB_V_BY_ADDRESS;
                }
                snprintf(rule, rulelen, "allowlist: no rule allows it");
                return XB_V_DENY;
        case XB_NET_NONE:
                break;
        }
        snprintf(rule, rulelen, "mode none");
        return XB_V_DENY;
}

const char *
xb__net_decide_ip(struct xb_net *n, const struct xb_netpol *p, enum xb_verdict v, const struct xb_ip *ip, char *rule,
                  size_t rulelen)
{
        struct xb_netsys *ns = n->ns;
        const struct xb_netrule *m;
        const char *why = xb_ip_blocked(ip);

        if (why)
                return why;
        if (xb__netsys_is_self(ns, ip))
                return "the host's own address";
        if ((m = xb_netrules_ip(ns->deny, ns->ndeny, ip)))
                return "the server's deny list";
        if (p->mode == XB_NET_ALLOWLIST && xb_netrules_ip(p->deny, p->ndeny, ip))
                return "the sandbox's deny list";
        if (v == XB_V_BY_ADDRESS) {
                if (!(m = xb_netrules_ip(p->allow, p->nallow, ip)))
                        return "allowlist: no rule allows it";
                snprintf(rule, rulelen, "allow %s", m->text);
        }
        return NULL;
}

/* ---- a sandbox's egress ---- */

struct xb_net *
xb_net_new(struct xb_netsys *ns, const char *id)
{
        struct xb_net *n = calloc(1, sizeof(*n));

        if (!n)
                return NULL;
        n->ns = ns;
        snprintf(n->id, sizeof(n->id), "%s", id);
        n->proxy_fd = n->dns_fd = n->dnstcp_fd = -1;
        n->pol = xb_netpol_new(XB_NET_NONE);
        if (!n->pol) {
                free(n);
                return NULL;
        }
        return n;
}

int
xb_net_attach(struct xb_net *n, const int fds[3], struct xb_err *err)
{
        if (n->proxy_fd >= 0) {
                for (int i = 0; i < 3; i++)
                        close(fds[i]);
                return xb_err_msg(err, EEXIST, "the sandbox's network is attached already");
        }
        n->proxy_fd = fds[0];
        n->dns_fd = fds[1];
        n->dnstcp_fd = fds[2];
        if (xb_io_start(n->ns->loop, &n->proxy_io, n->proxy_fd, EPOLLIN, xb__proxy_accept, n) < 0 ||
            xb_io_start(n->ns->loop, &n->dns_io, n->dns_fd, EPOLLIN, xb__dns_udp, n) < 0 ||
            xb_io_start(n->ns->loop, &n->dnstcp_io, n->dnstcp_fd, EPOLLIN, xb__dns_tcp_accept, n) < 0)
                return xb_err_set(err, errno, "watch the sandbox's network sockets");
        return 0;
}

void
xb_net_set_policy(struct xb_net *n, struct xb_netpol *p)
{
        xb_netpol_unref(n->pol);
        n->pol = xb_netpol_ref(p);
}

const struct xb_netpol *
xb_net_policy(const struct xb_net *n)
{
        return n->pol;
}

void
xb_net_free(struct xb_net *n)
{
        if (!n)
                return;
        xb__proxy_free_all(n);
        xb__dns_free_all(n);
        xb_io_stop(&n->proxy_io);
        xb_io_stop(&n->dns_io);
        xb_io_stop(&n->dnstcp_io);
        xb_timer_stop(&n->throttle_timer);
        if (n->proxy_fd >= 0)
                close(n->proxy_fd);
        if (n->dns_fd >= 0)
                close(n->dns_fd);
        if (n->dnstcp_fd >= 0)
                close(n->dnstcp_fd);
        xb_netpol_unref(n->pol);
        n->pol = NULL;
        xb__netlog_free(n);
        xb__net_secrets_free(n);
        /* An event of this batch may still name one of its ios. */
        xb_loop_defer(n->ns->loop, &n->defer, free, n);
}

json_t *
xb_net_stats_json(const struct xb_net *n)
{
        return json_pack("{s:i,s:I,s:I,s:I,s:I}", "connections", (int)n->nconns, "allowed", (json_int_t)n->allowed,
                         "denied", (json_int_t)n->denied, "bytes_out", (json_int_t)n->bytes_out, "bytes_in",
                         (json_int_t)n->bytes_in);
}
