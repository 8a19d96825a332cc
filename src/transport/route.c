/* The router: a request's method and path matched to a route, its {}
 * segments and query arguments, the percent-decoding libmicrohttpd uses,
 * and the checks a connection's request passes before its handler runs
 * (path, method, Origin and Host (guard.c), bearer token, declared length,
 * Content-Type). It
 * sends only error replies; the request's life cycle is in http.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "transport/http_int.h"

/* Match "/a/{}/b" against a path; fills params (pointers into a copy).
 * With tail, a final {} takes the rest of the path, slashes and all, and
 * may be empty. */
static bool
match(const char *pattern, const char *path, char *params[MAX_PARAMS], char *scratch, size_t cap, bool tail)
{
        const char *p = pattern, *q = path;
        unsigned n = 0;
        size_t used = 0;

        while (*p) {
                if (tail && !strcmp(p, "{}")) {
                        size_t len = strlen(q);

                        if (n == MAX_PARAMS || used + len + 1 > cap)
                                return false;
                        memcpy(scratch + used, q, len + 1);
                        params[n++] = scratch + used;
                        return true;
                }
                if (!*q)
                        break;
                if (p[0] == '{' && p[1] == '}') {
                        const char *end = strchrnul(q, '/');
                        size_t len = (size_t)(end - q);

                        if (len == 0 || n == MAX_PARAMS || used + len + 1 > cap)
                                return false;
                        memcpy(scratch + used, q, len);
                        scratch[used + len] = '\0';
                        params[n++] = scratch + used;
                        used += len + 1;
                        p += 2;
                        q = end;
                        continue;
                }
                if (*p != *q)
                        return false;
                p++;
                q++;
        }
        return *p == '\0' && *q == '\0';
}

static bool
token_ok(const struct xb_http *h, const char *auth, int *tenant)
{
        const char *tok;
        size_t tlen;

        *tenant = -1;
        if (!h->o.ntokens) {
                *tenant = 0;
                return true;
        }
        if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
                return false;
        tok = auth + 7;
        tlen = strlen(tok);
        for (size_t i = 0; i < h->o.ntokens; i++) {
                const char *want = h->o.tokens[i];
                size_t wlen = strlen(want);
                unsigned char diff = (unsigned char)(tlen != wlen);

                /* Constant time in the token's content. */
                for (size_t k = 0; k < wlen; k++)
                        diff |= (unsigned char)(want[k] ^ (k < tlen ? tok[k] : 0));
                if (!diff) {
                        *tenant = (int)i;
                        return true;
                }
        }
        return false;
}

const char *
xb_req_base_url(const struct xb_req *r, char *buf, size_t cap)
{
        const char *host = xb_req_header(r, "Host"), *proto = xb_req_header(r, "X-Forwarded-Proto");

        if (!host || !*host || strlen(host) > 255 ||
            strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]_") != strlen(host))
                host = "localhost";
        snprintf(buf, cap, "%s://%s", proto && !strcasecmp(proto, "https") ? "https" : "http", host);
        return buf;
}

/* A 401's challenge. On /mcp it names the RFC 9728 metadata (the
 * well-known prefix before the path), for remote MCP connectors. */
static void
challenge(struct xb_req *r)
{
        char base[300], v[700];

        if (!(r->route->flags & XB_ROUTE_MCP)) {
                xb_req_add_reply_header(r, "WWW-Authenticate", "Bearer");
                return;
        }
        snprintf(v, sizeof(v), "Bearer resource_metadata=\"%s/.well-known/oauth-protected-resource%s\"",
                 xb_req_base_url(r, base, sizeof(base)), r->path);
        xb_req_add_reply_header(r, "WWW-Authenticate", v);
}

/* The methods of the routes for r's path, "GET, POST" (HEAD after GET if
 * with_head); false if no route has that path. */
static bool
path_methods(struct xb_req *r, char *allow, size_t cap, bool with_head)
{
        const struct xb_http *h = r->http;
        size_t scap = strlen(r->path) + MAX_PARAMS + 1;
        bool known = false;

        allow[0] = '\0';
        for (size_t i = 0; i < h->nroutes; i++) {
                const char *m = h->routes[i].method;
                char *params[MAX_PARAMS];

                if (!match(h->routes[i].pattern, r->path, params, r->scratch, scap, h->routes[i].flags & XB_ROUTE_PROXY))
                        continue;
                known = true;
                for (int head = 0; head <= (with_head && !strcmp(m, "GET")); head++) {
                        const char *name = head ? "HEAD" : m;

                        if (!strstr(allow, name) && strlen(allow) + strlen(name) + 3 < cap)
                                snprintf(allow + strlen(allow), cap - strlen(allow), "%s%s", allow[0] ? ", " : "",
                                         name);
                }
        }
        return known;
}

/* CORS for an Origin on the --allow-origin list: every reply names it, and a
 * preflight (OPTIONS with Access-Control-Request-Method) is answered here,
 * before the token, which browsers never send with one. A foreign Origin
 * gets no CORS header at all. true when r has been answered. */
static bool
cors(struct xb_req *r, const char *method)
{
        const struct xb_http *h = r->http;
        const char *origin = xb_req_header(r, "Origin");
        bool allowed = false;
        char allow[96];

        for (size_t i = 0; origin && i < h->o.nallow_origins && !allowed; i++)
                allowed = !strcmp(origin, h->o.allow_origins[i]);
        if (!allowed)
                return false;
        xb_req_add_reply_header(r, "Access-Control-Allow-Origin", origin);
        xb_req_add_reply_header(r, "Vary", "Origin");
        xb_req_add_reply_header(r, "Access-Control-Expose-Headers", "WWW-Authenticate, Allow, Content-Range");
        if (strcmp(method, "OPTIONS") || !xb_req_header(r, "Access-Control-Request-Method") ||
            !path_methods(r, allow, sizeof(allow), true))
                return false;
        xb_req_add_reply_header(r, "Access-Control-Allow-Methods", allow);
        xb_req_add_reply_header(r, "Access-Control-Allow-Headers", "Authorization, Content-Type");
        xb_req_add_reply_header(r, "Access-Control-Max-Age", "600");
        xb_reply_empty(r, 204);
        return true;
}

void
http_route_find(struct xb_req *r, const char *method)
{
        const struct xb_http *h = r->http;
        size_t cap = strlen(r->path) + MAX_PARAMS + 1;

        /* HEAD is GET without the body, which libmicrohttpd leaves out. */
        if (!strcmp(method, "HEAD"))
                method = "GET";
        for (size_t i = 0; i < h->nroutes && !r->route; i++) {
                const struct xb_route *rt = &h->routes[i];

                if (strcmp(rt->method, "*") && strcmp(rt->method, method))
                        continue;
                memset(r->params, 0, sizeof(r->params));
                if (match(rt->pattern, r->path, r->params, r->scratch, cap, rt->flags & XB_ROUTE_PROXY))
                        r->route = rt;
        }
}

/* XB_ROUTE_SIGNED: what may stand for the token, for the handler to check.
 * A proxied port's share link (XB_SHARE_PARAM) also comes back as a cookie,
 * since the pages it serves link to others without the query. */
static bool
signed_credential(struct xb_req *r)
{
        if (r->route->flags & XB_ROUTE_PROXY)
                return xb_req_query(r, XB_SHARE_PARAM, NULL) || xb_req_cookie(r, XB_SHARE_PARAM);
        return xb_req_query(r, "sig", NULL);
}

bool
http_route_admit(struct xb_req *r, const char *method)
{
        struct xb_http *h = r->http;
        const char *url = r->path, *auth;
        char xauth[600];

        http_host_route(r);
        url = r->path;
        http_route_find(r, method);
        if (strstr(url, "\xc0\x80")) {
                xb_reply_error(r, 400, "invalid_path", "remove the NUL byte (%00) from the URL",
                               "the URL path contains a NUL byte");
                return false;
        }
        if (!http_guard_origin(r) || cors(r, method))
                return false;
        if (!r->route) {
                char allow[96];
                bool path_known = path_methods(r, allow, sizeof(allow), false);

                if (path_known)
                        xb_req_add_reply_header(r, "Allow", allow);
                if (path_known)
                        xb_reply_error(r, 405, "method_not_allowed", "see GET /openapi.json for the methods of each path",
                                       "%s is not allowed on %s", method, url);
                else
                        xb_reply_error(r, 404, "not_found", "see GET /openapi.json for every path, or GET /v1/guide",
                                       "no such endpoint: %s %s", method, url);
                return false;
        }
        auth = MHD(lookup_connection_value)(r->conn, MHD_HEADER_KIND, "Authorization");
        if (!auth && (r->route->flags & XB_ROUTE_XAUTH)) {
                const char *x = MHD(lookup_connection_value)(r->conn, MHD_HEADER_KIND, "X-Auth-Token");

                if (x && snprintf(xauth, sizeof(xauth), "Bearer %s", x) < (int)sizeof(xauth))
                        auth = xauth;
        }
        if (!auth && (r->route->flags & XB_ROUTE_XAPIKEY)) {
                const char *x = MHD(lookup_connection_value)(r->conn, MHD_HEADER_KIND, "X-API-KEY");

                if (x && snprintf(xauth, sizeof(xauth), "Bearer %s", x) < (int)sizeof(xauth))
                        auth = xauth;
        }
        if (!(r->route->flags & XB_ROUTE_PUBLIC) && !token_ok(h, auth, &r->tenant) &&
            !((r->route->flags & XB_ROUTE_SIGNED) && signed_credential(r))) {
                if (auth)
                        h->auth_invalid++;
                else
                        h->auth_missing++;
                challenge(r);
                xb_reply_error(r, 401, "unauthorized",
                               "send the header `Authorization: Bearer <token>`; the token was printed when the server started",
                               auth ? "the bearer token is not valid" : "this endpoint needs a bearer token");
                return false;
        }
        if (r->route->flags & XB_ROUTE_PUBLIC)
                token_ok(h, auth, &r->tenant);
        /* A proxied body streams through bounded buffers: no cap. */
        if (!(r->route->flags & XB_ROUTE_PROXY) && !http_length_ok(r))
                return false;
        return http_guard_host(r, method) && http_guard_content_type(r, method);
}

uint64_t
http_body_max(const struct xb_req *r)
{
        const struct xb_http_opts *o = &r->http->o;

        if (!(r->route->flags & XB_ROUTE_SINK) || r->sink_buffered)
                return o->body_max;
        return (r->route->flags & XB_ROUTE_LARGE) ? o->large_upload_max : o->upload_max;
}

bool
http_length_ok(struct xb_req *r)
{
        const char *clen = MHD(lookup_connection_value)(r->conn, MHD_HEADER_KIND, "Content-Length");
        unsigned long long n = clen ? strtoull(clen, NULL, 10) : 0;
        uint64_t max = http_body_max(r);
        bool sink = (r->route->flags & XB_ROUTE_SINK) && !r->sink_buffered;

        if (n <= max)
                return true;
        xb_reply_error(r, 413, "body_too_large",
                       !sink ? "send less; put large data in a file with PUT /v1/sandboxes/{id}/files"
                       : (r->route->flags & XB_ROUTE_LARGE) && r->http->o.large_upload_hint
                               ? r->http->o.large_upload_hint
                               : "upload smaller files, or raise --upload-max",
                       "the request body is %llu bytes; the limit is %llu", n, (unsigned long long)max);
        return false;
}

const char *
xb_req_param(const struct xb_req *r, unsigned n)
{
        return n < MAX_PARAMS ? r->params[n] : NULL;
}

const char *
xb_req_query(const struct xb_req *r, const char *name, int *err)
{
        const char *v = NULL;
        size_t len = 0;

        if (err)
                *err = 0;
        if (MHD(lookup_connection_value_n)(r->conn, MHD_GET_ARGUMENT_KIND, name, strlen(name), &v, &len) != MHD_YES)
                return NULL;
        if (!v)
                return "";
        if (memchr(v, '\0', len) || memmem(v, len, "\xc0\x80", 2)) {
                if (err)
                        *err = -EINVAL;
                return NULL;
        }
        return v;
}

static int
hexval(char ch)
{
        return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
               : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

/* Percent-decoding for paths and query values, as MHD's own except that a
 * decoded NUL becomes C0 80, the overlong form of NUL (never valid UTF-8,
 * and two bytes where "%00" was three): MHD hands the path to the access
 * handler as a C string, where a real NUL would silently cut it short. The
 * path and query checks refuse that pair, which a client can also only
 * send to smuggle a NUL. */
size_t
http_unescape(void *cls, struct MHD_Connection *conn, char *s)
{
        char *out = s;

        (void)cls;
        (void)conn;
        for (const char *in = s; *in; in++) {
                int hi, lo;

                if (in[0] == '%' && (hi = hexval(in[1])) >= 0 && (lo = hexval(in[2])) >= 0) {
                        int v = hi * 16 + lo;

                        if (v) {
                                *out++ = (char)v;
                        } else {
                                *out++ = (char)0xc0;
                                *out++ = (char)0x80;
                        }
                        in += 2;
                } else
                        *out++ = *in;
        }
        *out = '\0';
        return (size_t)(out - s);
}

/* ---- host routing ---- */

bool
xb_host_sandbox(const char *host, const char *domain, char *id, size_t cap, unsigned *port)
{
        size_t dlen = domain ? strlen(domain) : 0, hlen, idlen;
        const char *dash, *dot;
        unsigned long p;
        char *end;

        if (!host || !dlen || cap == 0)
                return false;
        hlen = strcspn(host, ":");
        if (host[hlen] == ':' && strspn(host + hlen + 1, "0123456789") != strlen(host + hlen + 1))
                return false;
        /* "{port}-{id}." then the domain, compared without case */
        if (hlen < dlen + 4 || host[hlen - dlen - 1] != '.' || strncasecmp(host + hlen - dlen, domain, dlen))
                return false;
        dot = host + hlen - dlen - 1;
        if (!(host[0] >= '1' && host[0] <= '9'))
                return false;
        p = strtoul(host, &end, 10);
        dash = end;
        if (*dash != '-' || p == 0 || p > 65535 || dash - host > 5)
                return false;
        idlen = (size_t)(dot - dash - 1);
        if (idlen == 0 || idlen >= cap)
                return false;
        for (size_t i = 0; i < idlen; i++) {
                char c = dash[1 + i];

                if (c >= 'A' && c <= 'Z')
                        c = (char)(c - 'A' + 'a');
                if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
                        return false;
                id[i] = c;
        }
        id[idlen] = '\0';
        *port = (unsigned)p;
        return true;
}

bool
xb_req_host_routed(const struct xb_req *r)
{
        return r->host_routed;
}

/* Put prefix before a string we own. */
static int
prepend(char **s, const char *prefix)
{
        char *n = NULL;

        if (asprintf(&n, "%s%s", prefix, *s ? *s : "") < 0)
                return -ENOMEM;
        free(*s);
        *s = n;
        return 0;
}

void
http_host_route(struct xb_req *r)
{
        const struct xb_http_opts *o = &r->http->o;
        char prefix[256];
        char *scratch;

        /* Only origin-form targets ("/..."): never "*" or an absolute URL. */
        if (r->path[0] != '/' || (r->raw_uri && r->raw_uri[0] != '/'))
                return;
        for (size_t i = 0; i < o->nhost_routes; i++) {
                prefix[0] = '\0';
                if (!o->host_routes[i].claim(r, o->host_routes[i].data, prefix, sizeof(prefix)))
                        continue;
                if (prefix[0] != '/' || strlen(prefix) >= sizeof(prefix) - 1)
                        return;
                scratch = realloc(r->scratch, strlen(r->path) + strlen(prefix) + MAX_PARAMS + 1);
                if (!scratch)
                        return;
                r->scratch = scratch;
                if (prepend(&r->path, prefix) < 0 || (r->raw_uri && prepend(&r->raw_uri, prefix) < 0))
                        return;
                r->host_routed = true;
                return;
        }
}
