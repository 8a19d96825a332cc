/* REST routes for published ports: the list and share operations
 * (ops/op_ports.c), and the proxy route that forwards any request under
 * /v1/sandboxes/{id}/ports/{port}/ to the server listening on that port in
 * the sandbox (transport/proxy.c carries the bytes, core/ports.c makes
 * the connection). With --sandbox-domain D, a Host of {port}-{id}.D is
 * routed the same way (xb_api_ports_host).
 *
 * Access: the tenant's token (another tenant's sandbox is not found), or
 * a signed share link (?xb_share=..., then a cookie scoped to the port,
 * for the pages it links to). The token is not passed on; a share link's
 * parameter is left out of the upstream's query. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/ports.h"
#include "ops/jsonv.h"
#include "rest/call.h"
#include "rest/rest.h"
#include "rest/status.h"

#define PORTS_PREFIX_MAX 96

/* "http://host" for links: --public-url, else the request's own. */
static void
base_url(struct xb_req *r, char *buf, size_t cap)
{
        const char *pub = xb_req_public_url(r);
        int n;

        if (!pub) {
                xb_req_base_url(r, buf, cap);
                return;
        }
        n = (int)strlen(pub);
        while (n && pub[n - 1] == '/')
                n--;
        snprintf(buf, cap, "%.*s", n, pub);
}

/* "https://8080-ID.D" when --sandbox-domain is set (the scheme of the
 * public URL, or of the request). */
static bool
domain_url(struct xb_req *r, const char *id, unsigned port, char *buf, size_t cap)
{
        const char *d = xb_rest_of(r)->sandbox_domain, *pub = xb_req_public_url(r);
        const char *proto = xb_req_header(r, "X-Forwarded-Proto");
        bool https = pub ? !strncmp(pub, "https:", 6) : proto && !strcasecmp(proto, "https");

        if (!d || !*d)
                return false;
        snprintf(buf, cap, "%s://%u-%s.%s", https ? "https" : "http", port, id, d);
        return true;
}

/* A port's links in o: url (and domain_url), each with tail after it. */
static void
add_links(struct xb_req *r, json_t *o, const char *id, unsigned port, const char *tail)
{
        char base[300], url[700];

        base_url(r, base, sizeof(base));
        snprintf(url, sizeof(url), "%s/v1/sandboxes/%s/ports/%u/%s", base, id, port, tail);
        json_object_set_new(o, "url", json_string(url));
        if (domain_url(r, id, port, base, sizeof(base))) {
                snprintf(url, sizeof(url), "%s/%s", base, tail);
                json_object_set_new(o, "domain_url", json_string(url));
        }
}

static json_t *
list_shape(struct xb_req *r, const char *event, json_t *res)
{
        const char *id = json_string_value(json_object_get(res, "id"));
        json_t *out, *ports, *p;
        size_t i;

        if (event || !id || !(out = json_deep_copy(res)))
                return res;
        json_decref(res);
        id = json_string_value(json_object_get(out, "id"));   /* res's is gone */
        ports = json_object_get(out, "ports");
        json_array_foreach(ports, i, p)
                add_links(r, p, id, (unsigned)json_integer_value(json_object_get(p, "port")), "");
        return out;
}

static json_t *
share_shape(struct xb_req *r, const char *event, json_t *res)
{
        const char *id = json_string_value(json_object_get(res, "id"));
        const char *token = json_string_value(json_object_get(res, "token"));
        char tail[200];
        json_t *out;

        if (event || !id || !token || !(out = json_deep_copy(res)))
                return res;
        json_decref(res);
        id = json_string_value(json_object_get(out, "id"));   /* res's are gone */
        token = json_string_value(json_object_get(out, "token"));
        snprintf(tail, sizeof(tail), "?%s=%s", XB_SHARE_PARAM, token);
        add_links(r, out, id, (unsigned)json_integer_value(json_object_get(out, "port")), tail);
        return out;
}

/* The tool's form answers either shape. */
static json_t *
tool_shape(struct xb_req *r, const char *event, json_t *res)
{
        return json_object_get(res, "token") ? share_shape(r, event, res) : list_shape(r, event, res);
}

static const struct xb_rest_decor list_decor = { .shape = list_shape };
static const struct xb_rest_decor share_decor = { .shape = share_shape };
static const struct xb_rest_decor tool_decor = { .shape = tool_shape };

static const struct xb_rest_op_route list_route = { .op = "list_ports",
                                                    .tmpl = "/v1/sandboxes/{id}/ports",
                                                    .no_body = true,
                                                    .decor = &list_decor },
                                     tool_route = { .op = "sandbox_ports",
                                                    .tmpl = "/v1/sandboxes/{id}/ports",
                                                    .check_op = "get_sandbox",
                                                    .decor = &tool_decor },
                                     share_route = { .op = "share_port",
                                                     .tmpl = "/v1/sandboxes/{id}/ports/{port}/share",
                                                     .check_op = "get_sandbox",
                                                     .decor = &share_decor };

/* ---- the proxy ---- */

/* Where the upstream's target starts in the raw target: after
 * "/v1/sandboxes/ID/ports/PORT" (five segments). */
static const char *
upstream_target(const char *raw)
{
        const char *p = raw;

        for (int seg = 0; seg < 5 && p; seg++)
                p = strpbrk(p + 1, "/?");
        return p;
}

/* The sandbox a share link names (any tenant's), or a reply and NULL. */
static struct xb_sbx *
shared_sandbox(struct xb_req *r, const char *id, unsigned port, const char *token)
{
        struct xb_rest *rs = xb_rest_of(r);
        struct xb_err err = { 0 };
        struct xb_sbx *x = NULL;

        if (xb_ports_share_check(rs->core, id, port, token, &err) < 0) {
                xb_rest_fail(r, &err);
                return NULL;
        }
        for (size_t t = 0; !x && t < rs->ntenants; t++)
                x = xb_sbx_find(rs->core, id, (int)t);
        if (!x)
                xb_reply_error(r, 404, "sandbox_not_found", "the sandbox was deleted or expired",
                               "no sandbox with id `%.64s`", id ? id : "");
        return x;
}

static void
proxy_port(struct xb_req *r)
{
        const char *id = xb_req_param(r, 0), *rest = xb_req_param(r, 1), *raw = xb_req_raw_uri(r);
        const char *qshare = xb_req_query(r, XB_SHARE_PARAM, NULL), *token = NULL, *target;
        char num[8], prefix[PORTS_PREFIX_MAX], cookie[300], msg[96];
        size_t plen = strcspn(rest ? rest : "", "/");
        struct xb_err err = { 0 };
        struct xb_proxy_opts o = { 0 };
        _cleanup_free_ char *slash_target = NULL;
        struct xb_sbx *x;
        unsigned port = 0;
        int fd = -1;

        if (xb_req_phase(r) != XB_PHASE_BEGIN)
                return;
        snprintf(num, sizeof(num), "%.*s", (int)(plen < sizeof(num) ? plen : sizeof(num) - 1), rest ? rest : "");
        if (plen >= sizeof(num) || xb_ports_parse(num, &port, &err) < 0) {
                if (!err.ecode)
                        xb_ports_parse("x", &port, &err);
                xb_rest_fail(r, &err);
                return;
        }
        if (xb_req_tenant(r) >= 0) {
                if (!(x = xb_api_sandbox(r)))
                        return;
        } else {
                token = qshare ? qshare : xb_req_cookie(r, XB_SHARE_PARAM);
                if (!(x = shared_sandbox(r, id, port, token)))
                        return;
        }
        target = upstream_target(raw);
        /* ".../ports/8080" itself: relative links in its page need the slash */
        if ((!target || *target == '?') && !xb_req_host_routed(r) &&
            (!strcmp(xb_req_method(r), "GET") || !strcmp(xb_req_method(r), "HEAD"))) {
                char loc[600];
                const char *q = strchr(raw, '?');

                snprintf(loc, sizeof(loc), "/v1/sandboxes/%s/ports/%u/%s", id, port, q ? q : "");
                xb_req_add_reply_header(r, "Location", loc);
                xb_reply_error(r, 308, "moved", "follow the Location header", "the port's pages are under %s", loc);
                return;
        }
        if (!target || *target == '?') {
                if (asprintf(&slash_target, "/%s", target ? target : "") < 0) {
                        xb_reply_error(r, 503, "out_of_memory", "retry", "out of memory");
                        return;
                }
                target = slash_target;
        }
        if (xb_ports_connect(x, port, &fd, &err) < 0) {
                xb_rest_fail(r, &err);
                return;
        }
        snprintf(prefix, sizeof(prefix), "/v1/sandboxes/%s/ports/%u", x->id, port);
        snprintf(msg, sizeof(msg), "nothing listens on port %u in the sandbox", port);
        o.target = target;
        o.prefix = xb_req_host_routed(r) ? NULL : prefix;
        o.drop_auth = xb_req_tenant(r) >= 0;
        o.drop_query = qshare ? XB_SHARE_PARAM : NULL;
        if (qshare && token) {
                snprintf(cookie, sizeof(cookie), "%s=%s; Path=%s; HttpOnly; SameSite=Lax", XB_SHARE_PARAM, token,
                         xb_req_host_routed(r) ? "/" : prefix);
                o.set_cookie = cookie;
        }
        o.refused_msg = msg;
        o.refused_hint = xb_rest_status(XB_E_PORT_CLOSED)->hint;
        xb_proxy_start(r, fd, &o);
}

/* ---- host routing ---- */

bool
xb_api_ports_host(const struct xb_req *r, void *data, char *prefix, size_t cap)
{
        char id[XB_SANDBOX_ID_LEN + 8];
        unsigned port;

        if (!xb_host_sandbox(xb_req_header(r, "Host"), data, id, sizeof(id), &port))
                return false;
        return snprintf(prefix, cap, "/v1/sandboxes/%s/ports/%u", id, port) < (int)cap;
}

const struct xb_route xb_api_routes_ports[] = {
        { "GET", "/v1/sandboxes/{}/ports", xb_rest_op_handler, 0, &list_route },
        { "POST", "/v1/sandboxes/{}/ports", xb_rest_op_handler, 0, &tool_route },
        { "POST", "/v1/sandboxes/{}/ports/{}/share", xb_rest_op_handler, 0, &share_route },
        { "*", "/v1/sandboxes/{}/ports/{}", proxy_port, XB_ROUTE_PROXY | XB_ROUTE_SIGNED, NULL },
};
const size_t xb_api_nroutes_ports = sizeof(xb_api_routes_ports) / sizeof(xb_api_routes_ports[0]);
