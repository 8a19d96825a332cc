/* REST over the operation table: a request's arguments become an
 * operation's, and its call's result, events and errors become the reply.
 *
 * With sse, events stream as text/event-stream from the first one on; the
 * result ends the stream as a "result" event and an error as an "error"
 * event ({code, message}). Without, the reply is the result as JSON with
 * status (204: no body), or the error through the status table (status.h).
 * A client that leaves cancels the call. */
#pragma once
#include <jansson.h>
#include <stdbool.h>

#include "base/err.h"
#include "transport/http.h"

/* args is borrowed. A 204 answers with no body. */
void xb_rest_run(struct xb_req *req, const char *op, json_t *args, unsigned status, bool sse);

/* xb_rest_run with a start of the route's own instead of an operation:
 * fn(arg, core, tenant, args, call) starts what ends call, as an
 * operation would (a fast path that hands ops more than JSON, such as an
 * fd). Out of memory, fn is called with core and call NULL, to free arg. */
struct xb_core;
struct xb_call;
typedef void (*xb_rest_start_fn)(void *arg, struct xb_core *core, int tenant, json_t *args, struct xb_call *call);
void xb_rest_run_fn(struct xb_req *req, xb_rest_start_fn fn, void *arg, json_t *args, unsigned status, bool sse);

/* REST's own words on an operation's outcome, where they name routes or
 * link to them (the engine's cannot): a route's decor. Both hooks are
 * optional.
 * - shape turns neutral data into REST's: event is the event's name, or
 *   NULL for the result. It takes data and returns what to send, data
 *   itself or a new value. data, and what it holds, may be shared with
 *   the engine: change nothing in place, json_copy what you change.
 * - error may rewrite err (streamed: the reply is an SSE stream already). */
struct xb_rest_decor {
        json_t *(*shape)(struct xb_req *r, const char *event, json_t *data);
        void (*error)(struct xb_err *err, bool streamed);
};
/* xb_rest_run with the outcome through decor (NULL: none). */
void xb_rest_run_decor(struct xb_req *req, const char *op, json_t *args, unsigned status, bool sse,
                       const struct xb_rest_decor *decor);

/* A route served by an operation (the route's data): xb_rest_op_handler
 * fills the arguments from the path (named by tmpl's {segments}), the
 * declared query parameters and the JSON body, then runs op. */
struct xb_rest_query {
        const char *name;
        char type;                  /* 's' string, 'u' whole number, 'n' number, 'b' true/false */
};

struct xb_rest_op_route {
        const char *op;
        const char *tmpl;           /* "/v1/sandboxes/{id}/processes/{pid}" */
        unsigned status;            /* on success; 200 when 0 */
        bool sse;                   /* streams when the client accepts text/event-stream */
        bool no_body;               /* GET, DELETE: a body is ignored */
        struct xb_rest_query query[6];
        enum xb_ecode bad_query;    /* the code for a query value of the wrong type (XB_E_INVALID when 0) */
        enum xb_ecode bad_body;     /* the code for a body that is not a JSON object (XB_E_INVALID when 0) */
        /* Run first, with the path's arguments only, when the body or query
         * is malformed: what it fails with (a missing sandbox or process)
         * wins over the malformed request. NULL: the 400 comes first. */
        const char *check_op;
        const struct xb_rest_decor *decor;   /* or NULL */
        const char *bad_body_hint;  /* for a body that is not a JSON object; NULL: the table's */
        bool admin_all;             /* an admin token acts for every tenant (args get XB_REST_ALL_TENANTS) */
};

#define XB_REST_ALL_TENANTS XB_OP_ALL_TENANTS

void xb_rest_op_handler(struct xb_req *r);
