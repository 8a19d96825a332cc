/* libFuzzer target for the router (transport/route.c): the percent-decoding
 * libmicrohttpd calls on every URL, the route matcher, and the checks a
 * request passes before its handler (CORS, Origin and Host, the bearer
 * token, X-Auth-Token, ?sig=, the declared length). libmicrohttpd is faked:
 * the input is "METHOD\nURL\nName: value\n...", with "?k=v" lines for the
 * query arguments. What must hold: decoding never grows a string nor leaves
 * a NUL in it; a request is either admitted with a route whose {} segments
 * rebuild its path, or answered exactly once. Built by `make fuzz`;
 * `make fuzz-replay` runs the saved corpus. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "transport/http_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(int cond)
{
        if (!cond)
                abort();
}

/* ---- a fake libmicrohttpd: headers and query arguments from the input ---- */

#define MAX_KV 32
static struct kv {
        const char *k, *v;
        enum MHD_ValueKind kind;
} kvs[MAX_KV];
static unsigned nkv, replies, reply_headers;

static const struct kv *
find(enum MHD_ValueKind kind, const char *key)
{
        for (unsigned i = 0; i < nkv; i++)
                if (kvs[i].kind == kind && !strcasecmp(kvs[i].k, key))
                        return &kvs[i];
        return NULL;
}

static const char *
lookup(struct MHD_Connection *c, enum MHD_ValueKind kind, const char *key)
{
        const struct kv *e = find(kind, key);

        (void)c;
        return e ? e->v : NULL;
}

/* A query key without "=" is there with a NULL value, as in MHD. */
static enum MHD_Result
lookup_n(struct MHD_Connection *c, enum MHD_ValueKind kind, const char *key, size_t key_size, const char **value,
         size_t *value_size)
{
        const struct kv *e = find(kind, key);

        (void)c;
        (void)key_size;
        if (!e)
                return MHD_NO;
        *value = e->v;
        *value_size = e->v ? strlen(e->v) : 0;
        return MHD_YES;
}

struct xb_mhd xb_mhd = { .lookup_connection_value = lookup, .lookup_connection_value_n = lookup_n };

const char *
xb_req_header(const struct xb_req *r, const char *name)
{
        return lookup(r->conn, MHD_HEADER_KIND, name);
}

void
xb_req_add_reply_header(struct xb_req *r, const char *name, const char *value)
{
        (void)r;
        check(name && *name && value && !strchr(value, '\n') && !strchr(value, '\r'));
        reply_headers++;
}

void
xb_reply_error(struct xb_req *r, unsigned status, const char *code, const char *hint, const char *fmt, ...)
{
        char msg[4096];
        va_list ap;

        (void)r;
        check(status >= 400 && status < 600 && code && hint);
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        replies++;
}

/* Share links' cookie (http.c): none here; the guard (guard.c) is linked. */
const char *
xb_req_cookie(const struct xb_req *r, const char *name)
{
        (void)r;
        (void)name;
        return NULL;
}

void
xb_reply_empty(struct xb_req *r, unsigned status)
{
        (void)r;
        check(status >= 200 && status < 600);
        replies++;
}

/* ---- routes shaped like the real ones, with every flag ---- */

static void handler(struct xb_req *r) { (void)r; }

static const struct xb_route routes[] = {
        { "GET", "/healthz", handler, XB_ROUTE_PUBLIC, NULL },
        { "GET", "/v1/sandboxes", handler, 0, NULL },
        { "POST", "/v1/sandboxes", handler, 0, NULL },
        { "GET", "/v1/sandboxes/{}", handler, 0, NULL },
        { "DELETE", "/v1/sandboxes/{}", handler, 0, NULL },
        { "POST", "/v1/sandboxes/{}/exec", handler, 0, NULL },
        { "PUT", "/v1/sandboxes/{}/files", handler, XB_ROUTE_SINK, NULL },
        { "GET", "/v1/sandboxes/{}/processes/{}/output", handler, 0, NULL },
        { "POST", "/v1/sandboxes/{}/sessions/{}/cells/{}", handler, 0, NULL },
        { "GET", "/v1/sandboxes/{}/images/{}", handler, XB_ROUTE_SIGNED, NULL },
        { "*", "/mcp", handler, XB_ROUTE_MCP, NULL },
        { "POST", "/submissions", handler, XB_ROUTE_XAUTH, NULL },
        { "GET", "/{}/{}/{}/{}/{}", handler, XB_ROUTE_PUBLIC, NULL },
};

/* Rebuild the path from the pattern and the matched segments. */
static void
check_params(const struct xb_req *r)
{
        char out[8192];
        const char *p = r->route->pattern;
        size_t used = 0;
        unsigned n = 0;

        while (*p && used < sizeof(out) - 1) {
                if (p[0] == '{' && p[1] == '}') {
                        const char *s = r->params[n++];

                        check(s && *s && !strchr(s, '/') && s >= r->scratch);
                        used += (size_t)snprintf(out + used, sizeof(out) - used, "%s", s);
                        p += 2;
                } else
                        out[used++] = *p++;
        }
        out[used < sizeof(out) ? used : sizeof(out) - 1] = '\0';
        check(used >= sizeof(out) - 1 || !strcmp(out, r->path));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const char *const tokens[] = { "tok-a", "tok-b" };
        static const char *const origins[] = { "https://app.example" };
        static const char *const hosts[] = { "proxy.example" };
        struct xb_http h = {
                .routes = routes, .nroutes = sizeof(routes) / sizeof(routes[0]),
                .o = { .body_max = 1 << 20, .upload_max = 1 << 24, .tokens = tokens, .ntokens = 2,
                       .allow_origins = origins, .nallow_origins = 1, .allowed_hosts = hosts, .nallowed_hosts = 1 },
        };
        struct xb_req r = { .http = &h, .tenant = -1 };
        char *text, *line, *save = NULL, *method, *url;
        size_t before;
        bool ok;

        if (size < 2 || size > 8192)
                return 0;
        text = strndup((const char *)data, size);
        h.loopback = data[0] & 1;
        if (data[0] & 2)
                h.o.ntokens = 0;
        method = strtok_r(text + 1, "\n", &save);
        url = strtok_r(NULL, "\n", &save);
        if (!method || !url || strlen(method) >= sizeof(r.method)) {
                free(text);
                return 0;
        }
        nkv = replies = reply_headers = 0;
        while ((line = strtok_r(NULL, "\n", &save)) && nkv < MAX_KV) {
                char *sep;

                if (line[0] == '?') {
                        sep = strchr(line + 1, '=');
                        if (sep)
                                *sep = '\0';
                        kvs[nkv++] = (struct kv){ line + 1, sep ? sep + 1 : NULL, MHD_GET_ARGUMENT_KIND };
                        /* MHD decodes argument values too. */
                        if (sep)
                                http_unescape(NULL, NULL, sep + 1);
                } else if ((sep = strchr(line, ':'))) {
                        *sep = '\0';
                        kvs[nkv++] = (struct kv){ line, sep + 1 + strspn(sep + 1, " "), MHD_HEADER_KIND };
                }
        }
        before = strlen(url);
        check(http_unescape(NULL, NULL, url) == strlen(url) && strlen(url) <= before);
        r.path = strdup(url);
        r.scratch = malloc(strlen(url) + MAX_PARAMS + 1);
        snprintf(r.method, sizeof(r.method), "%s", method);
        ok = http_route_admit(&r, method);
        if (ok) {
                check(r.route && replies == 0);
                check_params(&r);
                check(r.tenant >= (r.route->flags & XB_ROUTE_PUBLIC ? -1 : 0) || (r.route->flags & XB_ROUTE_SIGNED));
        } else
                check(replies == 1);
        check(reply_headers <= MAX_REPLY_HEADERS);
        free(r.path);
        free(r.scratch);
        free(text);
        return 0;
}
