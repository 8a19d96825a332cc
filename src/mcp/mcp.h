/* The Model Context Protocol server: one transport-agnostic core and its
 * two fronts, Streamable HTTP at /mcp (mcp_http.c) and stdio
 * (mcp_stdio.c, for `execbox mcp`).
 *
 * Theory of operation. The core (mcp.c) takes one parsed JSON-RPC message
 * at a time from a client context and answers through callbacks the front
 * gives it: notifications that belong to a request (progress, log
 * messages), then exactly one response. It never touches a socket and
 * never reaches into the sandbox engine itself: every tool runs
 * operations of the op table (ops/ops.h) with a sink, so MCP and REST
 * share one set of operations, limits and errors; MCP words its own hints
 * (hints.c).
 *
 * Two eras are served side by side. Legacy clients (2025-03-26, 2025-06-18,
 * 2025-11-25) open with initialize; each gets a client context (an HTTP
 * session, or the stdio peer) that owns a default sandbox, created on
 * first use and deleted when the context ends. Modern clients (2026-07-28)
 * are stateless: every request carries its version and capabilities in
 * _meta, and requests share one context per tenant, whose default
 * sandbox lives until it expires; results name the sandbox_id so a client
 * can pass it explicitly. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "transport/http.h"
#include "base/loop.h"

struct xb_limits;
struct xb_core;
struct xb_mcp;
struct xb_mcp_client;
struct xb_mcp_call;

#define XB_MCP_LATEST "2025-11-25"     /* what initialize offers by default */
#define XB_MCP_MODERN "2026-07-28"     /* the stateless revision */
/* How both fronts write a message: compact, reals to 15 digits. */
#define XB_MCP_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

struct xb_mcp_opts {
        struct xb_loop *loop;
        struct xb_core *core;            /* operations run on it; NULL: none (unit tests) */
        const struct xb_limits *defaults;  /* for the guide */
        /* Opt-in plug-ins to serve too, by name, NULL-terminated, such as
         * XB_FIXTURES_PLUGIN (tests/fixtures/mcp_fixtures.c). */
        const char *const *plugins;
        size_t ntenants;                   /* tokens; tenant ids are 0..ntenants-1 */
        uint64_t pause_ms;                 /* pause a context's sandbox when idle this long; 0: never */
};

/* The opt-in plug-in of the test build's conformance fixtures. */
#define XB_FIXTURES_PLUGIN "conformance-fixtures"

/* Whether this binary has the MCP plug-in called name (the conformance
 * fixtures are only in the test build, build/execbox-test). */
bool xb_mcp_has_plugin(const char *name);

/* The core; err says why not. */
int xb_mcp_new(const struct xb_mcp_opts *o, struct xb_mcp **ret, struct xb_err *err);
/* The server is stopping: cancel every call's work now, while the engine
 * still runs, and start no more operations. Safe on NULL. */
void xb_mcp_shutdown(struct xb_mcp *m);
/* Drop every context (the fronts are told through ops->closed) and the
 * core; its sandboxes go with the server. Safe on NULL. */
void xb_mcp_free(struct xb_mcp *m);

/* ---- client contexts ---- */

enum xb_mcp_era { XB_MCP_LEGACY, XB_MCP_MODERN_ERA };

/* Messages of a client that belong to no request (resources/updated on a
 * subscribed file), and the end of the context. Both optional. */
struct xb_mcp_client_ops {
        void (*notify)(void *ctx, json_t *msg);   /* msg is borrowed */
        void (*closed)(void *ctx);                /* the core ended it (idle expiry); c is gone after */
};

/* A legacy context for a front: an HTTP session or the stdio peer. NULL
 * when there are too many (the least recently used idle one is evicted
 * first). idle_ms: end it after that long without a request (0: never). */
struct xb_mcp_client *xb_mcp_client_new(struct xb_mcp *m, int tenant, uint64_t idle_ms,
                                        const struct xb_mcp_client_ops *ops, void *ctx);
/* End a context: answer its calls with an error, delete its default
 * sandbox (not the ones it picked by id), free it. ops->closed is not called. */
void xb_mcp_client_close(struct xb_mcp_client *c);
/* The tenant's shared context for stateless (modern) requests. */
struct xb_mcp_client *xb_mcp_tenant_client(struct xb_mcp *m, int tenant);
const char *xb_mcp_client_id(const struct xb_mcp_client *c);   /* random, [a-z2-7]{32} */
int xb_mcp_client_tenant(const struct xb_mcp_client *c);
/* The legacy version initialize agreed on; NULL before. */
const char *xb_mcp_client_version(const struct xb_mcp_client *c);
/* The front's own data for the context. */
void xb_mcp_client_set_data(struct xb_mcp_client *c, void *data);
void *xb_mcp_client_data(const struct xb_mcp_client *c);
/* Look up a session by id for a tenant; NULL if none. */
struct xb_mcp_client *xb_mcp_client_find(struct xb_mcp *m, const char *id, int tenant);

/* ---- messages ---- */

/* Where a request's messages go. Both get borrowed messages. respond is
 * called exactly once per request, unless the call is abandoned, and is
 * the last thing a call does; http_status is what Streamable HTTP should
 * answer with (200, or 400/404 for the errors the transport spec says). A
 * NULL msg means the client cancelled the request: it gets no response. */
struct xb_mcp_out_ops {
        void (*notify)(void *ctx, json_t *msg);
        void (*respond)(void *ctx, json_t *msg, unsigned http_status);
        /* Optional: end the request's SSE stream now, before the response
         * (the client resumes it with Last-Event-ID). */
        void (*close_stream)(void *ctx);
};

/* Handle one JSON-RPC message (a JSON object, borrowed) from c in the
 * given era. A request is answered through out, perhaps before this
 * returns: then NULL is returned; otherwise the call, which the front may
 * abandon. Notifications and responses from the client return NULL. */
struct xb_mcp_call *xb_mcp_handle(struct xb_mcp_client *c, enum xb_mcp_era era, json_t *msg,
                                  const struct xb_mcp_out_ops *out, void *ctx);
/* The peer is gone: cancel the call's work (a command is killed) and
 * never use out again. */
void xb_mcp_call_abandon(struct xb_mcp_call *call);
/* True if a legacy version string is one this server speaks. */
bool xb_mcp_legacy_version(const char *v);
/* A tool's input schema (new reference), NULL if there is no such tool. */
json_t *xb_mcp_tool_input(struct xb_mcp *m, const char *name, bool modern);
/* A JSON-RPC error response (new reference); id may be NULL (null). */
json_t *xb_mcp_error(json_t *id, int code, const char *msg, json_t *data);

/* ---- fronts ---- */

/* The loop the core runs on. */
struct xb_loop *xb_mcp_loop(const struct xb_mcp *m);

/* Streamable HTTP: the /mcp routes (mcp_http.c); each route's data must
 * be the core (struct xb_mcp *). */
extern const struct xb_route xb_api_routes_mcp[];
extern const size_t xb_api_nroutes_mcp;

/* RFC 9728 protected-resource metadata for /mcp (mcp_auth.c): remote
 * connectors learn that it takes a bearer token in the header. */
#define XB_MCP_META_FLAGS (XB_ROUTE_PUBLIC | XB_ROUTE_MCP | XB_ROUTE_HIDDEN)
void xb_mcp_resource_metadata(struct xb_req *r);
/* A modern request's Mcp-Method, Mcp-Name and Mcp-Param-* headers against
 * its body (mcp_headers.c): NULL if they match, else why not (in why, or
 * a constant). */
const char *xb_mcp_check_headers(struct xb_req *r, struct xb_mcp *m, json_t *msg, char *why, size_t cap);

/* stdio: newline-delimited JSON-RPC on in_fd, answers on out_fd (made
 * non-blocking; output is buffered, at most 64 MiB). At end of input, or
 * an unrecoverable write error, the calls are cancelled and the loop is
 * stopped. */
struct xb_mcp_stdio;
int xb_mcp_stdio_start(struct xb_mcp *m, struct xb_loop *l, int in_fd, int out_fd, struct xb_mcp_stdio **ret,
                       struct xb_err *err);
void xb_mcp_stdio_stop(struct xb_mcp_stdio *s);
