/* Peers (egress.h): a connection from sandbox A's proxy to
 * B.sandbox.internal:PORT. A's own policy must list B (checked here, on
 * the policy the connection was decided by); the engine's hook checks the
 * rest and makes the socket in B's namespace. Then the proxy's state
 * machine takes over as for any connection: CONNECT waits for the socket,
 * RELAY carries the bytes, and the log and the metrics count it. This
 * works in every mode, `none` included: it reaches nothing outside the
 * server, only a sandbox that opted in too (docs/network.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "net/proxy_int.h"

void
xb_netsys_set_peer_hook(struct xb_netsys *ns, const struct xb_net_peer_hook *h)
{
        ns->peer = *h;
}

static const char *
kind_name(const struct xb_conn *c)
{
        return c->kind == K_SOCKS ? "socks" : c->kind == K_FORWARD ? "http" : "connect";
}

static void
refuse(struct xb_conn *c, int status, const char *reason, const char *why)
{
        struct xb_net *n = c->net;
        char body[768];

        c->logoff = xb__netlog_add(n, kind_name(c), c->host, c->port, NULL, false, why);
        n->ns->st.denied++;
        n->ns->st.peer_denied++;
        if (c->kind == K_SOCKS) {
                xb__px_socks_reply(c, status == 403 ? SOCKS_RULESET : SOCKS_UNREACH);
                return;
        }
        snprintf(body, sizeof(body), "execbox: peer %s:%u refused: %s.\n", c->host, c->port, why);
        xb__px_http_reply(c, status, reason, body);
}

bool
xb__px_peer(struct xb_conn *c)
{
        struct xb_net *n = c->net;
        size_t hl = strlen(c->host), sl = strlen(XB_NET_PEER_SUFFIX);
        char id[XB_NETPEER_ID_MAX + 1], why[256];
        int fd = -1, r;

        if (c->literal || hl <= sl || strcmp(c->host + hl - sl, XB_NET_PEER_SUFFIX))
                return false;
        if (hl - sl > XB_NETPEER_ID_MAX || memchr(c->host, '.', hl - sl)) {
                refuse(c, 403, "Forbidden", "not a sandbox's name; use ID" XB_NET_PEER_SUFFIX ":PORT");
                return true;
        }
        memcpy(id, c->host, hl - sl);
        id[hl - sl] = '\0';
        snprintf(c->rule, sizeof(c->rule), "peer %s", id);
        /* The daemon's own sockets in B speak with B's policy: not A's to use. */
        if (c->port == XB_NET_PROXY_PORT || c->port == XB_NET_DNS_PORT) {
                snprintf(why, sizeof(why), "port %u is the sandbox's own egress service, not a server of its",
                         c->port);
                refuse(c, 403, "Forbidden", why);
                return true;
        }
        if (!strcmp(id, n->id)) {
                refuse(c, 403, "Forbidden", "that is this sandbox itself; reach its own servers at 127.0.0.1");
                return true;
        }
        if (!xb_netpol_has_peer(c->pol, id)) {
                snprintf(why, sizeof(why), "this sandbox's network.peers does not list %s; both sandboxes must "
                         "list each other (PATCH /v1/sandboxes/{id}/network {\"peers\": [...]})", id);
                refuse(c, 403, "Forbidden", why);
                return true;
        }
        if (!n->ns->peer.connect) {
                refuse(c, 502, "Bad Gateway", "this server connects no peers");
                return true;
        }
        why[0] = '\0';
        r = n->ns->peer.connect(n->ns->peer.ctx, n->id, id, c->port, &fd, why, sizeof(why));
        if (r < 0) {
                if (!why[0])
                        snprintf(why, sizeof(why), "%s", strerror(-r));
                if (r == -EPERM)
                        refuse(c, 403, "Forbidden", why);
                else if (r == -EBUSY)
                        refuse(c, 409, "Conflict", why);
                else
                        refuse(c, 502, "Bad Gateway", why);
                return true;
        }
        n->ns->st.peer_allowed++;
        snprintf(c->last_why, sizeof(c->last_why), "%s", "the peer closed the connection");
        c->ufd = fd;
        c->tried = true;
        c->node = NULL;
        c->st = C_CONNECT;
        xb__px_update(c);
        return true;
}
