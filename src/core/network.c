/* A sandbox's egress as the engine sees it: its policy against the
 * operator's ceiling, the environment that points its processes at the
 * proxy, and its sockets attached when init is ready. The proxy, the DNS
 * and the decisions are net/'s. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/core.h"
#include "core/ports.h"

static const char *const proxy_env[] = {
        "HTTP_PROXY=" XB_NET_PROXY_URL, "HTTPS_PROXY=" XB_NET_PROXY_URL, "http_proxy=" XB_NET_PROXY_URL,
        "https_proxy=" XB_NET_PROXY_URL, "ALL_PROXY=socks5h://127.0.0.1:3128", "all_proxy=socks5h://127.0.0.1:3128",
        "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1",
        /* npm reads its own names before the standard ones. */
        "npm_config_proxy=" XB_NET_PROXY_URL, "npm_config_https_proxy=" XB_NET_PROXY_URL,
        /* The bundle holds the egress CA too (secrets' hosts over TLS); the
         * tools that carry a bundle of their own are pointed at it. */
        "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt", "REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt",
        "NODE_EXTRA_CA_CERTS=/etc/ssl/certs/execbox-egress-ca.pem",
        "EXECBOX_API=" XB_NET_API_URL,
        NULL,
};

/* Without a network the proxy still serves the sandbox's API (a secret
 * asked for, which a human may grant). */
static const char *const api_env[] = { "EXECBOX_API=" XB_NET_API_URL, NULL };

int
xb_core_network_check(struct xb_core *s, const struct xb_netpol *p, struct xb_err *err)
{
        if (!s->net) {
                if (p->mode == XB_NET_NONE && !p->npeers)
                        return 0;
                return xb_err_code(err, XB_E_NETWORK_UNAVAILABLE, EOPNOTSUPP, NULL,
                                   "this server gives sandboxes no network (it runs without egress)");
        }
        if (p->mode > xb_netsys_max(s->net))
                return xb_err_code(err, XB_E_NETWORK_FORBIDDEN, EPERM, NULL,
                                   "network mode `%s` is above this server's ceiling, `%s`", xb_netmode_name(p->mode),
                                   xb_netmode_name(xb_netsys_max(s->net)));
        return 0;
}

int
xb_sbx_set_network(struct xb_sbx *x, struct xb_netpol *p, struct xb_err *err)
{
        int r = xb_core_network_check(x->core, p, err);

        if (r < 0)
                return r;
        if (x->net)
                xb_net_set_policy(x->net, p);
        if (x->armed)
                xb_record_save(x);   /* the next daemon restores it */
        return 0;
}

int
xb_sbx_copy_network(struct xb_sbx *x, const struct xb_sbx *from, struct xb_netpol *p, struct xb_err *err)
{
        if (!p && !from->net)
                return 0;
        if (!p)
                p = (struct xb_netpol *)xb_net_policy(from->net);   /* refcounted; set takes its own */
        return xb_sbx_set_network(x, p, err);
}

const char *const *
xb_sbx_net_env(const struct xb_sbx *x)
{
        /* Callers copy it at once (one thread): a static vector will do. */
        static const char *with_pkg[ARRAY_SIZE(proxy_env) + 8];
        const char *const *extra;
        size_t n = 0;

        if (!x->net)
                return NULL;
        /* none with peers still points tools at the proxy: peers' names go through it. */
        if (xb_net_policy(x->net)->mode == XB_NET_NONE && !xb_net_policy(x->net)->npeers)
                return api_env;
        if (xb_net_policy(x->net)->mode != XB_NET_PACKAGES || !(extra = xb_netsys_pkg_env(x->core->net)))
                return proxy_env;
        for (size_t i = 0; proxy_env[i]; i++)
                with_pkg[n++] = proxy_env[i];
        for (size_t i = 0; extra[i] && n < ARRAY_SIZE(with_pkg) - 1; i++)
                with_pkg[n++] = extra[i];
        with_pkg[n] = NULL;
        return with_pkg;
}

json_t *
xb_sbx_network_json(const struct xb_sbx *x)
{
        json_t *j, *srv;

        if (!x->net)
                return json_pack("{s:s,s:[],s:[],s:b}", "mode", "none", "allow", "deny", "available", 0);
        j = xb_netpol_json(xb_net_policy(x->net));
        srv = xb_netsys_json(x->core->net);
        json_object_set_new(j, "available", json_true());
        json_object_set_new(j, "proxy", json_string(XB_NET_PROXY_URL));
        json_object_set_new(j, "dns", json_string("127.0.0.1"));
        json_object_set(j, "ceiling", json_object_get(srv, "max"));
        json_object_set(j, "server_deny", json_object_get(srv, "deny"));
        json_object_set(j, "package_sources", json_object_get(srv, "package_sources"));
        json_object_set_new(j, "stats", xb_net_stats_json(x->net));
        json_decref(srv);
        return j;
}

json_t *
xb_sbx_network_log(const struct xb_sbx *x, uint64_t offset, unsigned limit)
{
        if (!x->net)
                return json_pack("{s:[],s:i,s:i,s:i}", "entries", "first_offset", 0, "next_offset", 0, "dropped", 0);
        return xb_net_log_json(x->net, offset, limit);
}

void
xb__sbx_network_ready(struct xb_sbx *x)
{
        struct xb_err err = { 0 };
        int fds[3], r;

        if (!x->net)
                return;
        r = xb_sandbox_take_net(x->sb, fds);
        if (r < 0) {
                xb_warn("sandbox %s: no egress sockets (%s)", x->id, strerror(-r));
                return;
        }
        /* Dups for init, should x be armed to outlive us (adopt.c). */
        if (x->core->o.adopt_grace_ms && x->core->records_on)
                for (int i = 0; i < 3; i++)
                        if ((x->net_keep[x->nnet_keep] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3)) >= 0)
                                x->nnet_keep++;
        if (xb_net_attach(x->net, fds, &err) < 0)
                xb_warn("sandbox %s: %s", x->id, err.msg);
}

/* net/'s peer hook (egress.h): from may reach to's port when both belong
 * to one tenant and to's policy lists from too (net/peer.c checked from's
 * own). Another tenant's sandbox and a gone one get the same answer, so
 * the refusal tells nothing about who else runs here. */
static int
peer_connect(void *ctx, const char *from, const char *to, uint16_t port, int *fd, char *why, size_t whylen)
{
        struct xb_core *s = ctx;
        struct xb_sbx *a = xb_sbx_find(s, from, XB_TENANT_ANY), *b;
        struct xb_err err = { 0 };

        b = a ? xb_sbx_find(s, to, a->tenant) : NULL;
        if (!b) {
                snprintf(why, whylen, "no sandbox %s of this tenant (ended, or never there)", to);
                return -EPERM;
        }
        if (!b->net || !xb_netpol_has_peer(xb_net_policy(b->net), from)) {
                snprintf(why, whylen, "sandbox %s does not list this one (%s) in its network.peers; both must "
                         "opt in", to, from);
                return -EPERM;
        }
        if (b->paused && !b->pause_auto) {
                snprintf(why, whylen, "sandbox %s is paused; resume it first (POST /v1/sandboxes/%s/resume)", to, to);
                return -EBUSY;
        }
        /* One paused by its idle clock resumes, as for a request to its port. */
        if (!xb_sbx_use(s, to, a->tenant, &err) || xb_ports_connect(b, port, fd, &err) < 0) {
                snprintf(why, whylen, "%s", err.msg[0] ? err.msg : "unreachable");
                return err.ecode == XB_E_SANDBOX_PAUSED ? -EBUSY : -ECONNREFUSED;
        }
        return 0;
}

void
xb_core_peers_open(struct xb_core *s)
{
        struct xb_net_peer_hook h = { .ctx = s, .connect = peer_connect };

        if (s->net)
                xb_netsys_set_peer_hook(s->net, &h);
}
