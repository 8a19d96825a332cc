/* The HTTP front: libmicrohttpd in external-epoll mode driven by the
 * daemon's loop, a router, bearer-token auth, bounded bodies, and replies
 * that are immediate, deferred (the connection is suspended, never the
 * loop) or streamed (server-sent events).
 *
 * Theory of operation. MHD's own epoll fd sits in our loop; when it is
 * readable, or MHD's timeout passes, or a connection was resumed, the
 * prepare hook calls MHD_run. A request is matched to a route once its
 * headers are in. Its body is buffered up to a cap, or (XB_ROUTE_SINK)
 * written to an fd the handler provides, or parsed as multipart/form-data
 * as it comes (xb_req_form). The handler runs when the body is
 * complete; it replies at once, or suspends the request and replies later.
 * While suspended, the client's socket is watched for hang-up so work for a
 * client that left can be cancelled (on_gone). A request is freed only
 * when MHD reports it complete. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/loop.h"

struct xb_http;
struct xb_req;
struct xb_stream;

typedef void (*xb_handler)(struct xb_req *req);

#define XB_ROUTE_PUBLIC 0x1u   /* no bearer token needed */
#define XB_ROUTE_SINK 0x2u     /* handler runs at headers (phase BEGIN) and sets a body sink */
#define XB_ROUTE_MCP 0x4u      /* Origin and Host are checked (DNS rebinding) */
#define XB_ROUTE_XAUTH 0x8u    /* `X-Auth-Token: <token>` also authenticates (Judge0's clients) */
#define XB_ROUTE_HIDDEN 0x10u   /* not in /openapi.json: another spec's discovery document */
#define XB_ROUTE_SIGNED 0x20u   /* a ?sig= query may stand for the token; the handler checks it */
/* The handler runs at the headers and forwards the request (xb_proxy_start);
 * no body cap; the pattern's final {} takes the rest of the path. With
 * XB_ROUTE_SIGNED, the credential is XB_SHARE_PARAM, as a query or a cookie. */
#define XB_ROUTE_PROXY 0x40u
#define XB_ROUTE_XAPIKEY 0x80u  /* `X-API-KEY: <token>` also authenticates (E2B's clients) */
/* The body is of the route's own type when a credential header (which
 * forces a preflight) comes with it: E2B's multipart and raw /files. */
#define XB_ROUTE_ANYTYPE 0x100u
/* Its clients send JSON as text/plain (npm's piston-client: fetch with a
 * string body). A foreign Origin is still refused; browsers send Origin
 * with every cross-origin POST. */
#define XB_ROUTE_PLAINJSON 0x200u
/* With XB_ROUTE_SINK: a sink for large bodies (image archives), capped by
 * large_upload_max; the handler picks the body's kind at the headers, so
 * the Content-Type check is its own: a sink of a type no form can have,
 * or xb_req_buffer_body, which applies the JSON routes' rules. */
#define XB_ROUTE_LARGE 0x400u
#define XB_SHARE_PARAM "xb_share"

enum xb_req_phase { XB_PHASE_BEGIN, XB_PHASE_END };

struct xb_route {
        const char *method;     /* "GET", "POST", ... or "*" */
        const char *pattern;    /* "/v1/sandboxes/{}/exec": {} matches one segment */
        xb_handler handler;
        unsigned flags;
        const void *data;       /* the handler's own, for a handler shared by routes */
};

/* Host routing, for the "{port}-{id}.{domain}" names of E2B and Daytona
 * and for E2B's E2b-Sandbox-Id and E2b-Sandbox-Port headers. Before a
 * request is routed by its path, each hook in xb_http_opts.host_routes is
 * offered it, in order, from its headers. A hook that claims it writes a
 * path prefix into prefix (cap bytes, e.g. "/v1/sandboxes/ID/ports/8080")
 * and returns true; the request is then routed, authenticated and logged
 * as if its path and raw target (xb_req_raw_uri) began with that prefix.
 * A hook builds the prefix from validated parts only (xb_host_sandbox).
 * The published ports' hook is rest's xb_api_ports_host; an adapter adds
 * its own before it to take some ports (E2B's envd on 49983), and may give
 * the ports' prefix itself ("/v1/sandboxes/{id}/ports/{port}") to reach a
 * sandbox's server from its own headers (E2b-Sandbox-Id, -Port). */
struct xb_host_route {
        bool (*claim)(const struct xb_req *r, void *data, char *prefix, size_t cap);
        void *data;
};

/* Parse host ("{port}-{id}.{domain}", with or without ":PORT" after it)
 * for domain: the id (a sandbox id's characters, lowercase letters and
 * digits, into id of cap bytes) and the port (1-65535). false when host
 * is not such a name. */
bool xb_host_sandbox(const char *host, const char *domain, char *id, size_t cap, unsigned *port);

struct xb_http_opts {
        const char *listen;          /* "HOST:PORT" or "unix:PATH" */
        size_t body_max;             /* JSON bodies */
        size_t upload_max;           /* XB_ROUTE_SINK bodies */
        uint64_t large_upload_max;   /* XB_ROUTE_LARGE bodies */
        const char *large_upload_hint;   /* a 413's hint past it */
        unsigned conn_limit;
        unsigned conn_timeout_s;     /* idle connections; suspended ones do not time out */
        const char *const *tokens;   /* accepted bearer tokens; NULL = no auth */
        bool access_log;             /* one line per request on stderr (access.c) */
        size_t ntokens;
        /* Host and Origin names /mcp accepts besides loopback (a proxy's). */
        const char *const *allowed_hosts;
        size_t nallowed_hosts;
        /* Host names every route accepts besides loopback (--allow-host). */
        const char *const *allow_hosts;
        size_t nallow_hosts;
        const bool *admin;           /* per token: may see the server's global figures */
        const char *const *allow_origins;   /* CORS: origins a browser may call from; none by default */
        size_t nallow_origins;
        const char *public_url;      /* "https://host[/prefix]" links are made absolute with; NULL */
        const struct xb_host_route *host_routes;   /* see struct xb_host_route; may be NULL */
        size_t nhost_routes;
        void *app;
};

int xb_http_start(struct xb_loop *l, const struct xb_http_opts *o, const struct xb_route *routes,
                  size_t nroutes, struct xb_http **ret, struct xb_err *err);
/* Stop accepting; close every connection. */
void xb_http_stop(struct xb_http *h);
/* "http://127.0.0.1:8000" or "unix:/path". */
const char *xb_http_url(const struct xb_http *h);
/* Requests begun and not yet complete (streams included, listeners not);
 * 0 on NULL. A drain waits for them. */
unsigned xb_http_inflight(const struct xb_http *h);
/* r is a stream that only listens (MCP's standalone notification stream):
 * it has no work of its own to finish, so a drain does not wait for it. */
void xb_req_set_listener(struct xb_req *r);
bool xb_http_is_loopback(const char *listen);

/* Request accessors. Strings live as long as the request. */
void *xb_req_app(const struct xb_req *r);
const char *xb_req_method(const struct xb_req *r);
const char *xb_req_path(const struct xb_req *r);
enum xb_req_phase xb_req_phase(const struct xb_req *r);
/* The matched route's data. */
const void *xb_req_route_data(const struct xb_req *r);
/* The n-th {} segment of the route pattern. */
const char *xb_req_param(const struct xb_req *r, unsigned n);
/* A query argument; NULL if absent. -EINVAL in *err if it holds a NUL byte. */
const char *xb_req_query(const struct xb_req *r, const char *name, int *err);
const char *xb_req_header(const struct xb_req *r, const char *name);
const char *xb_req_cookie(const struct xb_req *r, const char *name);
/* The request target as the client sent it, undecoded ("/a%20b?x=1"),
 * with a host route's prefix before it. */
const char *xb_req_raw_uri(const struct xb_req *r);
/* Whether a host route claimed the request. */
bool xb_req_host_routed(const struct xb_req *r);
/* The header's value without surrounding blanks, cut to fit buf (cap
 * bytes with the NUL); NULL when absent. */
const char *xb_req_header_trim(const struct xb_req *r, const char *name, char *buf, size_t cap);
const char *xb_req_body(const struct xb_req *r, size_t *len);
/* "http://HOST" (https with X-Forwarded-Proto: https) from the request's
 * Host, which must look like a host name (else localhost), in buf. */
const char *xb_req_base_url(const struct xb_req *r, char *buf, size_t cap);
/* The request's id, as the access log and the X-Request-Id header show it. */
const char *xb_req_id(const struct xb_req *r);
/* Which token authenticated the request (index into opts.tokens), -1 if none. */
int xb_req_tenant(const struct xb_req *r);
/* The request may see global figures: an admin token, or no auth at all. */
bool xb_req_admin(const struct xb_req *r);

/* The Accept header, parsed (media ranges, q-values): does the client ask
 * for mime by name or by its type ("text/" then "*"), with q > 0? A bare
 * any-type range does not count: it leaves the route its default. */
bool xb_req_accepts(const struct xb_req *r, const char *mime);
/* The q-value Accept gives mime through its most specific matching range
 * (the any-type range included); 1 without an Accept header, 0 when
 * nothing matches. */
double xb_req_accept_q(const struct xb_req *r, const char *mime);
/* The body's Content-Encoding (coding.c): none or identity, gzip
 * (x-gzip), or another (or a list of several), which is refused. */
enum xb_coding { XB_CODING_IDENTITY, XB_CODING_GZIP, XB_CODING_UNKNOWN };
enum xb_coding xb_req_content_coding(const struct xb_req *r);
/* --public-url, or NULL. */
const char *xb_req_public_url(const struct xb_req *r);
/* Per-request slot for the handler's own state across phases. */
void xb_req_set_data(struct xb_req *r, void *data);
void *xb_req_data(const struct xb_req *r);

/* Replies: exactly one per request. They work in the handler and, for a
 * suspended request, at any later time (they resume it). */
void xb_reply_json(struct xb_req *r, unsigned status, json_t *body);   /* steals body */
void xb_reply_error(struct xb_req *r, unsigned status, const char *code, const char *hint,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void xb_reply_empty(struct xb_req *r, unsigned status);
/* 401 with WWW-Authenticate, as every route without a valid token gets. */
void xb_reply_unauthorized(struct xb_req *r);
void xb_reply_bytes(struct xb_req *r, unsigned status, const char *ctype, const void *p, size_t n);
/* Send len bytes of fd from off; the reply owns fd. */
void xb_reply_fd(struct xb_req *r, unsigned status, const char *ctype, int fd, uint64_t off, uint64_t len,
                 const char *content_range);
/* Add a header to the next reply of r (before replying). */
void xb_req_add_reply_header(struct xb_req *r, const char *name, const char *value);

/* Deferred replies: suspend now, reply later. on_gone runs if the client
 * leaves first; after it, r must not be used. */
typedef void (*xb_gone_cb)(struct xb_req *r, void *owner);
void xb_req_suspend(struct xb_req *r, xb_gone_cb on_gone, void *owner);
/* Resume a suspended request without replying (XB_ROUTE_SINK: the sink is ready). */
void xb_req_resume(struct xb_req *r);
/* XB_ROUTE_SINK: body bytes go to fd (not owned); a write error ends the
 * request with on_sink_error's reply. */
void xb_req_set_sink(struct xb_req *r, int fd);
/* XB_ROUTE_SINK, at phase BEGIN: no sink for this one; its body is
 * buffered as other routes' are (up to body_max), for phase END. With
 * XB_ROUTE_LARGE, a JSON route's checks come first (its Content-Length
 * against body_max, its Content-Type): false when one replied. */
bool xb_req_buffer_body(struct xb_req *r);
/* Whether the Content-Type is one of types (its parameters aside). */
bool xb_req_content_type_in(const struct xb_req *r, const char *const *types, size_t n);
/* XB_ROUTE_SINK: gate(arg, n) runs before each n body bytes go to the
 * sink; an errno from it is the sink's error (the rest is dropped). */
void xb_req_set_sink_gate(struct xb_req *r, int (*gate)(void *arg, size_t n), void *arg);
/* on_gone without suspending: a sink's owner learns that the client left
 * mid-body. A reply clears it, as xb_req_suspend's. */
void xb_req_on_gone(struct xb_req *r, xb_gone_cb on_gone, void *owner);
/* Bytes written to the sink so far, and its error (0 if none). */
uint64_t xb_req_sink_bytes(const struct xb_req *r);
int xb_req_sink_error(const struct xb_req *r);

/* XB_ROUTE_SINK, at phase BEGIN: a multipart/form-data body, parsed as it
 * comes (libmicrohttpd's post processor, form.c) and handed to ops part by
 * part, never held whole. part gets each part's name and filename (NULL
 * when absent) and returns false to hold the body; data gets the part's
 * bytes in order and returns how many it took (fewer holds the rest). A
 * held body waits, its client with it, until xb_req_form_wake. gone runs
 * when the request ends before xb_req_form_end (the client left). */
struct xb_form_ops {
        bool (*part)(void *arg, const char *name, const char *filename);
        size_t (*data)(void *arg, const char *p, size_t n);
        void (*gone)(void *arg);
};
/* 0; -EINVAL when the body is not multipart/form-data with a boundary of
 * 1-70 characters as its last parameter; -ENOMEM. At most max_parts parts. */
int xb_req_form(struct xb_req *r, const struct xb_form_ops *ops, void *arg, unsigned max_parts);
/* The consumer takes more: deliver what waits, then read on. */
void xb_req_form_wake(struct xb_req *r);
/* The consumer has failed for good: the rest of the body is read and
 * dropped unparsed (and, gzip, undecoded); xb_req_form_end then returns
 * -ECANCELED unless the form had failed first. */
void xb_req_form_drop(struct xb_req *r);
/* Phase END: 0 when the body was a whole form; -EBADMSG when malformed
 * or cut short (or a part's header line was over 64 KiB), -E2BIG past
 * max_parts, -EFBIG past upload_max (sent or decoded), -ENOMEM; with
 * `Content-Encoding: gzip` (decoded as it comes), -EILSEQ for a corrupt
 * gzip stream and -ENODATA for one cut short. gone does not run after. */
int xb_req_form_end(struct xb_req *r);

/* Counters (stats.c). Replies by route and status: fn gets the route's
 * method and pattern ("other" and "unmatched" for requests no route took)
 * and how many replies had that status (0: the statuses past the few
 * kept per route). The set is bounded by the route table: raw paths are
 * never kept. */
typedef void (*xb_http_count_fn)(void *data, const char *method, const char *pattern, unsigned status,
                                 uint64_t n);
void xb_http_foreach_count(const struct xb_http *h, xb_http_count_fn fn, void *data);
/* Requests refused for want of a token, and for a wrong one. */
void xb_http_auth_failures(const struct xb_http *h, uint64_t *missing, uint64_t *invalid);

/* Reverse proxying (proxy.c), for a route flagged XB_ROUTE_PROXY: its
 * handler runs at the request's headers and either replies (an error) or
 * hands the request to a connected (or connecting) non-blocking stream
 * socket. The request goes on as HTTP/1.1 with "Connection: close", its
 * body streamed as it comes; the reply streams back the same way, both
 * through bounded buffers (a side that does not read stops the other). A
 * WebSocket (any Upgrade) handshake that the upstream accepts with 101
 * becomes a byte tunnel between the two sockets. */
struct xb_proxy_opts {
        const char *target;          /* the upstream request target, "/path?query" */
        const char *prefix;          /* X-Forwarded-Prefix, or NULL */
        bool drop_auth;              /* leave Authorization out (it held the daemon's token) */
        const char *drop_query;      /* a query parameter to leave out of target, or NULL */
        const char *set_cookie;      /* a Set-Cookie for the reply, or NULL */
        /* The 502 a refused connection gets: its message and hint. */
        const char *refused_msg, *refused_hint;
};
/* Takes fd (closes it on every path). Strings in o are copied. */
void xb_proxy_start(struct xb_req *r, int fd, const struct xb_proxy_opts *o);

/* Streamed replies (text/event-stream and the like). */
struct xb_stream *xb_reply_stream(struct xb_req *r, unsigned status, const char *ctype,
                                  xb_gone_cb on_gone, void *owner);
/* Queue bytes; -ENOBUFS if the client is too far behind (the stream ends). */
int xb_stream_write(struct xb_stream *s, const void *p, size_t n);
int xb_stream_printf(struct xb_stream *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Queue data's JSON (steals data; flags as json_dumps's, JSON_COMPACT
 * always): a large value is generated as it is sent, never serialised
 * whole. Compact JSON has no raw newline, so it fits one SSE data line. */
int xb_stream_json(struct xb_stream *s, json_t *data, size_t flags);
/* An SSE event: "event: NAME\ndata: JSON\n\n" (steals data). */
int xb_stream_event(struct xb_stream *s, const char *name, json_t *data);
/* No more data; the stream closes once drained. s is invalid after. */
void xb_stream_end(struct xb_stream *s);
/* Bytes written and not yet sent to the client. */
size_t xb_stream_backlog(const struct xb_stream *s);
/* Once the backlog falls to low or below, call fn(arg), once (a writer's
 * backpressure: it stopped producing and may go on). fn NULL clears it. */
void xb_stream_on_drain(struct xb_stream *s, size_t low, void (*fn)(void *arg), void *arg);
