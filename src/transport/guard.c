/* Browsers are not clients unless allowed (design.md, invariant 13): the
 * one check every route passes, for what a web page can make a browser
 * send.
 * - A foreign Origin is refused (403) unless --allow-origin names it, token
 *   or not: browsers send Origin with every cross-origin POST.
 * - On a TCP loopback listener (where DNS rebinding reaches a local server)
 *   or without auth, a Host that is not loopback, --allow-host, the
 *   --public-url's or a single-label name is refused (421); a rebound page
 *   is same-origin in its browser's eyes, so only Host tells. A rebinding
 *   page needs a name in DNS, which has a dot. Public GET routes (health, the
 *   documents) hold nothing of a tenant's and answer any Host.
 * - A POST, PUT or PATCH body is JSON: one sent as a type a form can send
 *   (text/plain, ...) without a preflight is refused (415). A streamed
 *   upload is a PUT, which no page sends without a preflight, so it takes
 *   any type. A published port's routes take any type, and a Host that
 *   --sandbox-domain's host routing claimed passes. /mcp keeps its own Origin rule (loopback origins,
 *   --mcp-allowed-host; 403 for a bad Host too) and Content-Type check. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/cleanup.h"
#include "transport/http_int.h"

static const char *const loopback_names[] = { "localhost", "127.0.0.1", "[::1]" };

/* Split "name", "name:port", "[v6]" or "[v6]:port": the name's length, and
 * *port (NULL without one); false when it is none of these. */
static bool
split_host(const char *hp, size_t len, size_t *ret_hlen, const char **port, size_t *ret_plen)
{
        const char *end = hp + len, *colon;

        if (len && hp[0] == '[') {
                const char *rb = memchr(hp, ']', len);

                if (!rb)
                        return false;
                colon = rb + 1 < end ? rb + 1 : NULL;
                if (colon && *colon != ':')
                        return false;
        } else
                colon = memchr(hp, ':', len);
        *ret_hlen = colon ? (size_t)(colon - hp) : len;
        *port = colon ? colon + 1 : NULL;
        *ret_plen = colon ? (size_t)(end - colon - 1) : 0;
        return *ret_hlen && (!colon || (*ret_plen && strspn(*port, "0123456789") >= *ret_plen));
}

/* Whether hostport ("name", "name:port") is allowed by entry ("name" for
 * any port, "name:port" for that one). Names compare without case. */
static bool
host_matches(const char *hostport, size_t len, const char *entry)
{
        size_t hlen, plen, ehlen, eplen;
        const char *port, *eport;

        if (!split_host(hostport, len, &hlen, &port, &plen) ||
            !split_host(entry, strlen(entry), &ehlen, &eport, &eplen))
                return false;
        if (hlen != ehlen || strncasecmp(hostport, entry, hlen))
                return false;
        return !eport || (port && plen == eplen && !memcmp(port, eport, plen));
}

static bool
host_in(const char *hostport, size_t len, const char *const *list, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (host_matches(hostport, len, list[i]))
                        return true;
        return false;
}

/* The host[:port] of an absolute URL ("https://h:1/x" -> "h:1"). */
static const char *
authority(const char *url, size_t *len)
{
        const char *p = url ? strstr(url, "://") : NULL;

        if (!p)
                return NULL;
        p += 3;
        *len = strcspn(p, "/?#");
        return p;
}

/* A single-label name ("x", "devbox"): only the victim's own resolver
 * (search domains, /etc/hosts) gives it an address, never a page's DNS. */
static bool
single_label(const char *host, size_t len)
{
        const char *colon = memchr(host, ':', len);
        size_t hlen = colon ? (size_t)(colon - host) : len;

        return hlen && host[0] != '[' && !memchr(host, '.', hlen) &&
               (!colon || (len > hlen + 1 && strspn(colon + 1, "0123456789") == len - hlen - 1));
}

static bool
host_ok(const struct xb_req *r, const char *host, bool mcp)
{
        const struct xb_http_opts *o = &r->http->o;
        size_t len = strlen(host), plen = 0;
        const char *pub = authority(o->public_url, &plen);

        if (!len || strpbrk(host, "/\\@ \t"))
                return false;
        if (host_in(host, len, loopback_names, ARRAY_SIZE(loopback_names)) || (!mcp && single_label(host, len)) ||
            host_in(host, len, o->allow_hosts, o->nallow_hosts) ||
            (mcp && host_in(host, len, o->allowed_hosts, o->nallowed_hosts)))
                return true;
        return pub && plen == len && strncasecmp(pub, host, len) == 0;
}

static bool
origin_ok(const struct xb_req *r, const char *origin, const char *host, bool mcp)
{
        const struct xb_http_opts *o = &r->http->o;
        size_t alen = 0;
        const char *a = authority(origin, &alen);

        for (size_t i = 0; i < o->nallow_origins; i++)
                if (!strcmp(origin, o->allow_origins[i]))
                        return true;
        if (!a || a[alen])   /* "null", or a path: never a page of ours */
                return false;
        /* MCP's rule: a local page, or a host the operator named. */
        if (mcp && (host_in(a, alen, loopback_names, ARRAY_SIZE(loopback_names)) ||
                    host_in(a, alen, o->allowed_hosts, o->nallowed_hosts)))
                return true;
        /* Our own pages (/docs): the same origin, whose Host is checked too. */
        return host && strlen(host) == alen && strncasecmp(a, host, alen) == 0;
}

bool
http_guard_origin(struct xb_req *r)
{
        const char *origin = xb_req_header(r, "Origin"), *host = xb_req_header(r, "Host");
        bool mcp = r->route && (r->route->flags & XB_ROUTE_MCP);

        if (origin && !origin_ok(r, origin, host, mcp)) {
                xb_reply_error(r, 403, "forbidden_origin",
                               mcp ? "connect from localhost, without a foreign Origin"
                                   : "call the API from a program, not a web page; an operator can allow a page's "
                                     "origin with --allow-origin",
                               mcp ? "requests from this Origin or Host are refused (DNS rebinding protection)"
                                   : "requests from the browser origin %.200s are refused", origin);
                return false;
        }
        return true;
}

bool
http_guard_host(struct xb_req *r, const char *method)
{
        const struct xb_http *h = r->http;
        const char *host = xb_req_header(r, "Host");
        bool mcp = r->route && (r->route->flags & XB_ROUTE_MCP);
        bool public_read = r->route && (r->route->flags & XB_ROUTE_PUBLIC) && !mcp &&
                           (!strcmp(method, "GET") || !strcmp(method, "HEAD"));
        /* A unix socket is out of a browser's reach; no auth is loopback only. */
        bool check = ((h->loopback && !h->unix_path[0]) || !h->o.ntokens) && !public_read;

        /* A Host that a host route claimed ({port}-{id}.D) is under the
         * operator's --sandbox-domain: a name they chose, not a rebinding. */
        if (r->host_routed)
                return true;

        if (check && host && !host_ok(r, host, mcp)) {
                if (mcp)
                        xb_reply_error(r, 403, "forbidden_origin", "connect from localhost, without a foreign Origin",
                                       "requests from this Origin or Host are refused (DNS rebinding protection)");
                else
                        xb_reply_error(r, 421, "forbidden_host",
                                       "connect to 127.0.0.1 or localhost; an operator can allow another name for "
                                       "this server with --allow-host",
                                       "this server does not answer to the host name %.200s (DNS rebinding "
                                       "protection)", host);
                return false;
        }
        return true;
}

/* ct is one of types, its parameters aside (case-insensitive). */
static bool
media_in(const char *ct, const char *const *types, size_t ntypes)
{
        while (*ct == ' ' || *ct == '\t')
                ct++;
        for (size_t i = 0; i < ntypes; i++) {
                size_t n = strlen(types[i]);

                if (!strncasecmp(ct, types[i], n) && (!ct[n] || strchr("; \t", ct[n])))
                        return true;
        }
        return false;
}

/* "application/json", "application/json; charset=utf-8", "application/x+json". */
static bool
is_json(const char *ct)
{
        size_t n;

        while (*ct == ' ')
                ct++;
        n = strcspn(ct, "; \t");
        if (n == 16 && !strncasecmp(ct, "application/json", 16))
                return true;
        return n > 17 && !strncasecmp(ct, "application/", 12) && !strncasecmp(ct + n - 5, "+json", 5);
}

/* The types a page may send cross-origin without a preflight (Fetch's
 * CORS-safelisted request headers). */
static bool
is_form_type(const char *ct)
{
        static const char *const simple[] = { "text/plain", "application/x-www-form-urlencoded", "multipart/form-data" };

        return media_in(ct, simple, ARRAY_SIZE(simple));
}

bool
xb_req_content_type_in(const struct xb_req *r, const char *const *types, size_t n)
{
        const char *ct = xb_req_header(r, "Content-Type");

        return ct && media_in(ct, types, n);
}

static bool
has_body(const struct xb_req *r)
{
        const char *clen = xb_req_header(r, "Content-Length"), *te = xb_req_header(r, "Transfer-Encoding");

        if (clen)
                return strtoull(clen, NULL, 10) > 0;
        return te && strcasestr(te, "chunked");
}

/* A credential header is not CORS-safelisted: a page can send it only
 * after a preflight, which a foreign Origin fails. E2B's SDK uploads its
 * files as a multipart form or raw bytes, with its access token beside
 * them (XB_ROUTE_ANYTYPE). */
static bool
preflighted(const struct xb_req *r)
{
        return xb_req_header(r, "Authorization") || xb_req_header(r, "X-API-KEY") ||
               xb_req_header(r, "X-Access-Token");
}

bool
http_guard_content_type(struct xb_req *r, const char *method)
{
        const char *ct = xb_req_header(r, "Content-Type");
        bool sink = (r->route->flags & XB_ROUTE_SINK) && !r->sink_buffered;

        /* A published port's body is its server's business: a page of its own
         * origin may post a form to it (a foreign Origin was refused above).
         * A large sink's handler checks the type it takes (http.h). */
        if ((strcmp(method, "POST") && strcmp(method, "PUT") && strcmp(method, "PATCH")) ||
            (r->route->flags & (XB_ROUTE_MCP | XB_ROUTE_PROXY)) || (sink && (r->route->flags & XB_ROUTE_LARGE)))
                return true;
        /* An upload's bytes are its own type, refused only as a form's on a
         * POST (a PUT always has a preflight). A body without a type is the
         * API's JSON: a page cannot send one without its Origin. A bodiless
         * request carries nothing a page chose. */
        if (sink ? strcmp(method, "POST") || !ct || !is_form_type(ct) || preflighted(r)
                 : !has_body(r) || !ct || is_json(ct) ||
                   ((r->route->flags & XB_ROUTE_ANYTYPE) && preflighted(r)) ||
                   ((r->route->flags & XB_ROUTE_PLAINJSON) && !strncasecmp(ct, "text/plain", 10)))
                return true;
        if (sink)
                xb_reply_error(r, 415, "unsupported_media_type",
                               "send the file's bytes as Content-Type: application/octet-stream (curl: -T FILE, or "
                               "-H 'Content-Type: application/octet-stream' --data-binary @FILE)",
                               "an upload may not be sent as %.100s, which any web page can send", ct);
        else
                xb_reply_error(r, 415, "unsupported_media_type",
                               "send the body as JSON with the header Content-Type: application/json (curl: -H "
                               "'Content-Type: application/json' -d '{...}')",
                               "the request body must be JSON (Content-Type: application/json), not %.100s", ct);
        return false;
}
