/* MCP's Streamable HTTP transport at /mcp, for both eras on one endpoint.
 *
 * Theory of operation. A POST carries one JSON-RPC message (or, in a
 * 2025-03-26 session, a batch). It becomes an exchange: its requests go
 * to the core, each with a slot that the core answers through. Messages
 * that need no answer get 202. While nothing but responses come, the
 * exchange stays plain: the POST is suspended and answered with one
 * application/json body once every request is. The first notification
 * (progress, a log message) turns it into a text/event-stream reply, when
 * the client accepts one; responses then follow as events and end it.
 *
 * Legacy sessions (initialize, Mcp-Session-Id, DELETE) own a core client
 * context each. In a 2025-11-25 session a stream opens with a priming
 * event (an id and a retry delay) and every event has an id: when the
 * client drops such a stream mid-call, its calls wait GRACE_MS for a GET
 * with Last-Event-ID, which replays what was missed and carries the rest.
 * Otherwise a client that leaves has its calls abandoned at once (a
 * running command is killed). A GET without Last-Event-ID is the
 * session's standalone stream, for notifications that belong to no
 * request. Modern (2026-07-28) requests are stateless: the MCP-Protocol-
 * Version, Mcp-Method, Mcp-Name and Mcp-Param-* headers are checked
 * against the body, and they share their tenant's context.
 *
 * Origin and Host are checked by the router (XB_ROUTE_MCP), the bearer
 * token as for REST. Every exchange is owned here and freed once answered
 * or abandoned; the request it rode on is never touched after its reply. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "ops/jsonv.h"
#include "transport/json_stream.h"
#include "mcp/mcp.h"

#define SESSION_IDLE_MS (30u * 60 * 1000)
#define GRACE_MS 10000
#define RETRY_MS 1000
#define KEEPALIVE_MS 15000
#define BATCH_MAX 64
#define LOG_BYTES_MAX (4u << 20)
#define DETACHED_MAX 32               /* dropped streams a session keeps for resuming */

struct exch;

struct sess {
        struct xb_mcp_client *c;
        struct exch *exchanges;
        unsigned next_exch;
        struct xb_req *get_req;       /* the standalone GET stream */
        struct xb_stream *get_stream;
        struct xb_timer keepalive;
        struct xb_loop *loop;
        unsigned ndetached;
};

struct slot {
        struct exch *x;
        struct xb_mcp_call *call;
        json_t *answer;
        unsigned status;
        bool answered;
};

/* A kept event, written again on a resume: a small one as its text, a
 * large one as its message (generated again, the same bytes). */
struct event {
        struct event *next;
        unsigned seq;
        char *text;
        json_t *msg;
        size_t bytes;
};

struct exch {
        struct sess *sess;            /* NULL for modern requests */
        struct exch *next;
        struct xb_loop *loop;
        struct xb_req *req;           /* the POST, or the GET that resumed it; NULL while detached */
        struct xb_stream *stream;
        unsigned id, seq;
        unsigned nslots, pending;
        struct slot slots[BATCH_MAX];
        bool batch, sse_ok, resumable, setup, done, init, detached;
        struct event *log, **log_tail;
        size_t log_bytes;
        struct xb_timer grace, keepalive;
};


/* The MCP core of a request: its route's data (the daemon sets it). */
static struct xb_mcp *
mcp_of(const struct xb_req *r)
{
        return (struct xb_mcp *)xb_req_route_data(r);
}

static const struct xb_mcp_client_ops sess_ops;

/* ---- exchanges ---- */

static void
exch_free(struct exch *x)
{
        if (x->detached && x->sess)
                x->sess->ndetached--;
        if (x->sess)
                for (struct exch **p = &x->sess->exchanges; *p; p = &(*p)->next)
                        if (*p == x) {
                                *p = x->next;
                                break;
                        }
        xb_timer_stop(&x->grace);
        xb_timer_stop(&x->keepalive);
        for (struct event *e = x->log, *n; e; e = n) {
                n = e->next;
                free(e->text);
                json_decref(e->msg);
                free(e);
        }
        for (unsigned i = 0; i < x->nslots; i++)
                json_decref(x->slots[i].answer);
        free(x);
}

/* Drop the exchange's calls without answers, and the exchange. */
static void
exch_abandon(struct exch *x)
{
        for (unsigned i = 0; i < x->nslots; i++) {
                struct xb_mcp_call *call = x->slots[i].call;

                x->slots[i].call = NULL;
                xb_mcp_call_abandon(call);
        }
        exch_free(x);
}

static void
on_keepalive(struct xb_timer *t)
{
        struct exch *x = t->data;

        if (x->stream)
                xb_stream_printf(x->stream, ": keep-alive\n\n");
        xb_timer_start(x->loop, &x->keepalive, KEEPALIVE_MS, on_keepalive, x);
}

static void
on_grace(struct xb_timer *t)
{
        struct exch *x = t->data;

        if (x->pending)
                xb_debug("mcp: a dropped stream was not resumed; its requests are cancelled");
        exch_abandon(x);
}

/* The stream is gone (client left, or we ended it to make it poll). */
static void
detach(struct exch *x)
{
        x->req = NULL;
        x->stream = NULL;
        xb_timer_stop(&x->keepalive);
        if (x->resumable && (x->pending || x->log) && (x->detached || x->sess->ndetached < DETACHED_MAX)) {
                if (!x->detached)
                        x->sess->ndetached++;
                x->detached = true;
                xb_timer_start(x->loop, &x->grace, GRACE_MS, on_grace, x);
                return;
        }
        exch_abandon(x);
}

static void
on_gone(struct xb_req *r, void *owner)
{
        struct exch *x = owner;

        (void)r;
        if (x->req)
                detach(x);
}

static void
write_prefix(struct xb_stream *stream, const struct exch *x, unsigned seq)
{
        if (x->resumable)
                xb_stream_printf(stream, "event: message\nid: %u_%u\ndata: ", x->id, seq);
        else
                xb_stream_printf(stream, "event: message\ndata: ");
}

/* One large SSE event of msg (borrowed): its JSON is generated as the
 * client reads it (xb_stream_json), never held serialised nor dumped in
 * one turn of the loop. */
static void
write_large(struct xb_stream *stream, const struct exch *x, unsigned seq, json_t *msg)
{
        write_prefix(stream, x, seq);
        if (xb_stream_json(stream, json_incref(msg), XB_MCP_JSON_FLAGS) >= 0)
                xb_stream_write(stream, "\n\n", 2);
}

static void
keep(struct exch *x, char *text, json_t *msg, size_t n)
{
        struct event *e = calloc(1, sizeof(*e));

        if (!e) {
                free(text);
                return;
        }
        e->seq = x->seq;
        e->text = text;
        e->msg = json_incref(msg);
        e->bytes = n;
        *x->log_tail = e;
        x->log_tail = &e->next;
        x->log_bytes += n;
        /* Keep the newest; a client this far behind loses old progress. */
        while (x->log_bytes > LOG_BYTES_MAX && x->log && x->log->next) {
                struct event *old = x->log;

                x->log = old->next;
                x->log_bytes -= old->bytes;
                free(old->text);
                json_decref(old->msg);
                free(old);
        }
}

/* Write (and for resumable streams, keep) one SSE event. */
static void
emit(struct exch *x, json_t *msg)
{
        size_t est = xb_json_string_bytes(msg, LOG_BYTES_MAX + 1);
        _cleanup_free_ char *j = NULL;
        char *text = NULL;
        int n;

        ++x->seq;
        if (est >= XB_JSON_STREAM_MIN) {
                if (x->stream)
                        write_large(x->stream, x, x->seq, msg);
                if (x->resumable && est <= LOG_BYTES_MAX)
                        keep(x, NULL, msg, est);
                return;
        }
        if (!(j = json_dumps(msg, XB_MCP_JSON_FLAGS)))
                return;
        if (x->resumable)
                n = asprintf(&text, "event: message\nid: %u_%u\ndata: %s\n\n", x->id, x->seq, j);
        else
                n = asprintf(&text, "event: message\ndata: %s\n\n", j);
        if (n < 0)
                return;
        if (x->stream)
                xb_stream_write(x->stream, text, (size_t)n);
        if (x->resumable && (size_t)n <= LOG_BYTES_MAX)
                keep(x, text, NULL, (size_t)n);
        else
                free(text);
}

static void
add_session_header(struct exch *x, struct xb_req *r)
{
        if (x->sess && x->sess->c && xb_mcp_client_version(x->sess->c))
                xb_req_add_reply_header(r, "Mcp-Session-Id", xb_mcp_client_id(x->sess->c));
}

static bool
open_stream(struct exch *x)
{
        if (x->stream)
                return true;
        if (!x->req || !x->sse_ok)
                return false;
        add_session_header(x, x->req);
        x->stream = xb_reply_stream(x->req, 200, "text/event-stream", on_gone, x);
        if (!x->stream)
                return false;
        if (x->resumable) {
                char prime[80];

                snprintf(prime, sizeof(prime), "id: %u_0\nretry: %u\ndata: \n\n", x->id, RETRY_MS);
                xb_stream_write(x->stream, prime, strlen(prime));
        }
        /* Answers of a batch that came before the stream go first: finish
         * only ends it. */
        for (unsigned i = 0; i < x->nslots; i++)
                if (x->slots[i].answer) {
                        emit(x, x->slots[i].answer);
                        json_decref(x->slots[i].answer);
                        x->slots[i].answer = NULL;
                }
        xb_timer_start(x->loop, &x->keepalive, KEEPALIVE_MS, on_keepalive, x);
        return true;
}

/* Everything is answered: end the stream, or send the JSON reply. */
static void
finish(struct exch *x)
{
        struct xb_req *r = x->req;
        json_t *body = NULL;
        unsigned status = 200;

        x->done = true;
        if (x->stream) {
                xb_timer_stop(&x->keepalive);
                xb_stream_end(x->stream);
                x->stream = NULL;
                x->req = NULL;
                exch_free(x);
                return;
        }
        if (!r) {
                /* Detached: kept for a resuming GET until the grace ends. */
                if (!x->resumable || !x->log)
                        exch_free(x);
                return;
        }
        if (x->batch) {
                body = json_array();
                for (unsigned i = 0; i < x->nslots; i++)
                        if (x->slots[i].answer)
                                json_array_append(body, x->slots[i].answer);
                if (!json_array_size(body)) {
                        json_decref(body);
                        body = NULL;
                }
        } else if (x->nslots && x->slots[0].answer) {
                body = json_incref(x->slots[0].answer);
                status = x->slots[0].status;
        }
        x->req = NULL;
        if (body) {
                add_session_header(x, r);
                xb_reply_json(r, status, body);
        } else
                xb_reply_empty(r, 202);   /* only cancelled requests: nothing to say */
        exch_free(x);
}

static void
out_notify(void *ctx, json_t *msg)
{
        struct slot *s = ctx;
        struct exch *x = s->x;

        if (x->done || !(x->stream || x->sse_ok))
                return;
        if (!x->stream && x->req && !open_stream(x))
                return;
        emit(x, msg);
}

static void
out_respond(void *ctx, json_t *msg, unsigned status)
{
        struct slot *s = ctx;
        struct exch *x = s->x;

        s->call = NULL;
        s->answered = true;
        x->pending--;
        if (msg) {
                if (x->stream || (!x->req && x->resumable)) {
                        emit(x, msg);
                } else {
                        s->answer = json_incref(msg);
                        s->status = status;
                }
        }
        if (!x->setup && !x->pending)
                finish(x);
}

static void
out_close_stream(void *ctx)
{
        struct slot *s = ctx;
        struct exch *x = s->x;

        if (!x->resumable || !open_stream(x))
                return;
        xb_stream_end(x->stream);
        detach(x);
}

static const struct xb_mcp_out_ops out_ops = { out_notify, out_respond, out_close_stream };

/* ---- replies before any exchange ---- */

static void
rpc_error(struct xb_req *r, unsigned status, json_t *id, int code, const char *msg, json_t *data)
{
        xb_reply_json(r, status, xb_mcp_error(id, code, msg, data));
}

/* ---- sessions ---- */

static void
sess_keepalive(struct xb_timer *t)
{
        struct sess *s = t->data;

        if (s->get_stream)
                xb_stream_printf(s->get_stream, ": keep-alive\n\n");
        xb_timer_start(s->loop, &s->keepalive, KEEPALIVE_MS, sess_keepalive, s);
}

static void
get_gone(struct xb_req *r, void *owner)
{
        struct sess *s = owner;

        (void)r;
        s->get_req = NULL;
        s->get_stream = NULL;
        xb_timer_stop(&s->keepalive);
}

/* End everything the front holds for a session (the core ends its context). */
static void
sess_end(struct sess *s)
{
        while (s->exchanges) {
                struct exch *x = s->exchanges;

                if (x->stream) {
                        xb_stream_end(x->stream);
                        x->stream = NULL;
                } else if (x->req) {
                        rpc_error(x->req, 404, NULL, -32001, "Session terminated", NULL);
                }
                x->req = NULL;
                exch_abandon(x);
        }
        if (s->get_stream)
                xb_stream_end(s->get_stream);
        xb_timer_stop(&s->keepalive);
        free(s);
}

static void
sess_closed(void *ctx)
{
        struct sess *s = ctx;

        s->c = NULL;
        sess_end(s);
}

static void
sess_notify(void *ctx, json_t *msg)
{
        struct sess *s = ctx;

        if (s->get_stream && xb_stream_printf(s->get_stream, "event: message\ndata: ") >= 0 &&
            xb_stream_json(s->get_stream, json_incref(msg), XB_MCP_JSON_FLAGS) >= 0)
                xb_stream_write(s->get_stream, "\n\n", 2);
}

static const struct xb_mcp_client_ops sess_ops = { sess_notify, sess_closed };

static struct sess *
sess_lookup(struct xb_req *r, struct xb_mcp *m, const char *id)
{
        struct xb_mcp_client *c = xb_mcp_client_find(m, id, xb_req_tenant(r));

        return c ? xb_mcp_client_data(c) : NULL;
}

/* ---- POST ---- */

static bool
has_modern_meta(json_t *msg)
{
        json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");

        return json_object_get(meta, "io.modelcontextprotocol/protocolVersion") != NULL;
}

static struct exch *
exch_new(struct xb_req *r, struct sess *s)
{
        struct exch *x = calloc(1, sizeof(*x));
        if (!x)
                return NULL;
        x->sess = s;
        x->loop = xb_mcp_loop(mcp_of(r));
        x->req = r;
        x->log_tail = &x->log;
        x->sse_ok = xb_req_accepts(r, "text/event-stream");
        if (s) {
                const char *v = xb_mcp_client_version(s->c);

                x->id = ++s->next_exch;
                x->resumable = x->sse_ok && v && strcmp(v, "2025-11-25") >= 0;
                x->next = s->exchanges;
                s->exchanges = x;
        }
        return x;
}

/* Hand the messages to the core; answer, stream or wait. */
static void
run(struct xb_req *r, struct exch *x, struct xb_mcp_client *c, enum xb_mcp_era era, json_t *msgs)
{
        size_t n = json_is_array(msgs) ? json_array_size(msgs) : 1;
        bool any = false;

        x->batch = json_is_array(msgs);
        x->setup = true;
        x->nslots = (unsigned)n;
        for (size_t i = 0; i < n; i++) {
                struct slot *s = &x->slots[i];

                s->x = x;
                x->pending++;
                s->call = xb_mcp_handle(c, era, x->batch ? json_array_get(msgs, i) : msgs, &out_ops, s);
                if (!s->call && !s->answered)
                        x->pending--;   /* a notification or response: nothing to answer */
                any |= s->call || s->answered;
        }
        x->setup = false;
        if (!any) {
                x->req = NULL;
                exch_free(x);
                xb_reply_empty(r, 202);
                return;
        }
        if (!x->pending) {
                finish(x);
                return;
        }
        /* Still waiting, with no stream yet (and not handed over to a
         * resuming GET): park the POST. */
        if (x->req == r && !x->stream)
                xb_req_suspend(r, on_gone, x);
}

static void
post_modern(struct xb_req *r, struct xb_mcp *m, json_t *msg, const char *ver)
{
        json_t *id = json_object_get(msg, "id"), *meta;
        const char *mv;
        struct xb_mcp_client *c;
        struct exch *x;
        char why[300];
        const char *bad;

        if (!json_is_object(msg)) {
                rpc_error(r, 400, NULL, -32600, "Invalid Request: send one JSON-RPC message; batches are not part of "
                          "protocol version " XB_MCP_MODERN, NULL);
                return;
        }
        if (id && !json_is_string(id) && !json_is_integer(id))
                id = NULL;
        if (!ver) {
                rpc_error(r, 400, id, -32020, "Header mismatch: the MCP-Protocol-Version header is missing", NULL);
                return;
        }
        meta = json_object_get(json_object_get(msg, "params"), "_meta");
        mv = json_string_value(json_object_get(meta, "io.modelcontextprotocol/protocolVersion"));
        if (!json_is_object(meta) || !mv || !json_is_object(json_object_get(meta, "io.modelcontextprotocol/clientCapabilities"))) {
                rpc_error(r, 400, id, -32602, "Invalid params: every request needs params._meta with "
                          "io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities", NULL);
                return;
        }
        if (strcmp(ver, mv)) {
                snprintf(why, sizeof(why), "Header mismatch: MCP-Protocol-Version header value '%.32s' does not match "
                         "_meta protocolVersion '%.32s'", ver, mv);
                rpc_error(r, 400, id, -32020, why, NULL);
                return;
        }
        if (strcmp(mv, XB_MCP_MODERN)) {
                rpc_error(r, 400, id, -32022, "Unsupported protocol version",
                          json_pack("{s:[s],s:s}", "supported", XB_MCP_MODERN, "requested", mv));
                return;
        }
        if ((bad = xb_mcp_check_headers(r, m, msg, why, sizeof(why)))) {
                rpc_error(r, 400, id, -32020, bad, NULL);
                return;
        }
        c = xb_mcp_tenant_client(m, xb_req_tenant(r));
        x = c ? exch_new(r, NULL) : NULL;
        if (!x) {
                rpc_error(r, 503, id, -32603, "out of memory", NULL);
                return;
        }
        run(r, x, c, XB_MCP_MODERN_ERA, msg);
}

static void
post_legacy(struct xb_req *r, struct xb_mcp *m, json_t *msg, const char *sid, const char *ver)
{
        struct sess *s = NULL;
        struct exch *x;
        const char *v;
        char why[160];
        json_t *id = json_object_get(msg, "id");

        if (!json_is_string(id) && !json_is_integer(id))
                id = NULL;   /* errors before the core answer the request's id when it has one */

        if (ver && !xb_mcp_legacy_version(ver)) {
                snprintf(why, sizeof(why), "Bad Request: unsupported MCP-Protocol-Version '%.32s'; this server speaks "
                         XB_MCP_MODERN ", 2025-11-25, 2025-06-18 and 2025-03-26", ver);
                rpc_error(r, 400, id, -32600, why, NULL);
                return;
        }
        if (sid) {
                s = sess_lookup(r, m, sid);
                if (!s) {
                        rpc_error(r, 404, id, -32001, "Session not found: it ended or never existed; initialize a "
                                  "new one", NULL);
                        return;
                }
        } else if (json_is_object(msg) && !strcmp(json_string_value(json_object_get(msg, "method")) ?: "", "initialize") &&
                   json_object_get(msg, "id")) {
                s = calloc(1, sizeof(*s));
                if (s) {
                        s->loop = xb_mcp_loop(m);
                        s->c = xb_mcp_client_new(m, xb_req_tenant(r), SESSION_IDLE_MS, &sess_ops, s);
                }
                if (!s || !s->c) {
                        free(s);
                        rpc_error(r, 503, json_object_get(msg, "id"), -32603, "Too many sessions: try again later",
                                  NULL);
                        return;
                }
                xb_mcp_client_set_data(s->c, s);
        } else {
                rpc_error(r, 400, id, -32000, "Bad Request: no valid Mcp-Session-Id header; start with initialize",
                          NULL);
                return;
        }
        v = xb_mcp_client_version(s->c);
        if (json_is_array(msg) && (!v || strcmp(v, "2025-03-26") || !json_array_size(msg) ||
                                   json_array_size(msg) > BATCH_MAX)) {
                snprintf(why, sizeof(why), "Invalid Request: %s", !v || strcmp(v, "2025-03-26")
                         ? "JSON-RPC batches are not supported in this protocol version"
                         : "a batch holds 1 to 64 messages");
                rpc_error(r, 400, NULL, -32600, why, NULL);
                return;
        }
        x = exch_new(r, s);
        if (!x) {
                rpc_error(r, 503, NULL, -32603, "out of memory", NULL);
                return;
        }
        x->init = !sid;
        run(r, x, s->c, XB_MCP_LEGACY, msg);
        /* A failed initialize leaves no session behind. */
        if (!sid && !xb_mcp_client_version(s->c) && !s->exchanges) {
                struct xb_mcp_client *c = s->c;

                s->c = NULL;
                sess_end(s);
                xb_mcp_client_close(c);
        }
}

static void
mcp_post(struct xb_req *r)
{
        struct xb_mcp *m = mcp_of(r);
        size_t len;
        const char *body = xb_req_body(r, &len);
        const char *ctype = xb_req_header(r, "Content-Type");
        char sidb[80], verb[48];
        const char *sid = xb_req_header_trim(r, "Mcp-Session-Id", sidb, sizeof(sidb));
        const char *ver = xb_req_header_trim(r, "MCP-Protocol-Version", verb, sizeof(verb));
        json_error_t jerr;
        _cleanup_(xb_json_decrefp) json_t *msg = NULL;
        bool modern;

        if (ctype && !strcasestr(ctype, "application/json")) {
                rpc_error(r, 415, NULL, -32700, "Unsupported Media Type: send Content-Type: application/json", NULL);
                return;
        }
        msg = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
        if (!msg) {
                char why[300];

                snprintf(why, sizeof(why), "Parse error: %s at line %d", jerr.text, jerr.line);
                rpc_error(r, 400, NULL, -32700, why, NULL);
                return;
        }
        if (!json_is_object(msg) && !json_is_array(msg)) {
                rpc_error(r, 400, NULL, -32600, "Invalid Request: a JSON-RPC message is an object", NULL);
                return;
        }
        /* The era: a session, or a legacy version and no modern _meta, is
         * legacy; a modern version header or _meta is modern. */
        modern = !sid && ((ver && !xb_mcp_legacy_version(ver)) || (json_is_object(msg) && has_modern_meta(msg)));
        if (modern)
                post_modern(r, m, msg, ver);
        else
                post_legacy(r, m, msg, sid, ver);
}

/* ---- GET: the standalone stream, or resuming a dropped one ---- */

static void
mcp_get(struct xb_req *r)
{
        struct xb_mcp *m = mcp_of(r);
        char sidb[80], lastb[64];
        const char *sid = xb_req_header_trim(r, "Mcp-Session-Id", sidb, sizeof(sidb));
        const char *last = xb_req_header_trim(r, "Last-Event-ID", lastb, sizeof(lastb));
        struct sess *s;
        unsigned eid = 0, seq = 0;

        if (!sid) {
                xb_req_add_reply_header(r, "Allow", "POST, GET, DELETE");
                rpc_error(r, 405, NULL, -32000, "Method Not Allowed: GET opens a session's stream; it needs the "
                          "Mcp-Session-Id header (protocol version " XB_MCP_MODERN " has no GET stream)", NULL);
                return;
        }
        s = sess_lookup(r, m, sid);
        if (!s) {
                rpc_error(r, 404, NULL, -32001, "Session not found", NULL);
                return;
        }
        if (!xb_req_accepts(r, "text/event-stream")) {
                rpc_error(r, 406, NULL, -32000, "Not Acceptable: a GET must accept text/event-stream", NULL);
                return;
        }
        if (last && sscanf(last, "%u_%u", &eid, &seq) == 2) {
                for (struct exch *x = s->exchanges; x; x = x->next) {
                        if (x->id != eid || !x->resumable)
                                continue;
                        if (x->req) {
                                rpc_error(r, 409, NULL, -32000, "Conflict: that stream is still connected", NULL);
                                return;
                        }
                        xb_timer_stop(&x->grace);
                        if (x->detached) {
                                x->detached = false;
                                s->ndetached--;
                        }
                        x->req = r;
                        xb_req_add_reply_header(r, "Mcp-Session-Id", xb_mcp_client_id(s->c));
                        x->stream = xb_reply_stream(r, 200, "text/event-stream", on_gone, x);
                        if (!x->stream) {
                                x->req = NULL;
                                return;
                        }
                        for (struct event *e = x->log; e; e = e->next)
                                if (e->seq > seq && e->text)
                                        xb_stream_write(x->stream, e->text, strlen(e->text));
                                else if (e->seq > seq)
                                        write_large(x->stream, x, e->seq, e->msg);
                        if (!x->pending) {
                                xb_stream_end(x->stream);
                                x->stream = NULL;
                                x->req = NULL;
                                exch_free(x);
                                return;
                        }
                        xb_timer_start(x->loop, &x->keepalive, KEEPALIVE_MS, on_keepalive, x);
                        return;
                }
        }
        if (s->get_stream) {
                rpc_error(r, 409, NULL, -32000, "Conflict: only one standalone stream per session", NULL);
                return;
        }
        xb_req_add_reply_header(r, "Mcp-Session-Id", xb_mcp_client_id(s->c));
        s->get_stream = xb_reply_stream(r, 200, "text/event-stream", get_gone, s);
        if (s->get_stream) {
                s->get_req = r;
                xb_req_set_listener(r);
                xb_timer_start(s->loop, &s->keepalive, KEEPALIVE_MS, sess_keepalive, s);
        }
}

/* ---- DELETE: end a session ---- */

static void
mcp_delete(struct xb_req *r)
{
        struct xb_mcp *m = mcp_of(r);
        char sidb[80];
        const char *sid = xb_req_header_trim(r, "Mcp-Session-Id", sidb, sizeof(sidb));
        struct sess *s;
        struct xb_mcp_client *c;

        if (!sid) {
                rpc_error(r, 400, NULL, -32000, "Bad Request: DELETE ends a session; send its Mcp-Session-Id", NULL);
                return;
        }
        s = sess_lookup(r, m, sid);
        if (!s) {
                rpc_error(r, 404, NULL, -32001, "Session not found", NULL);
                return;
        }
        c = s->c;
        s->c = NULL;
        sess_end(s);
        xb_mcp_client_close(c);   /* deletes its default sandbox */
        xb_reply_empty(r, 204);
}

const struct xb_route xb_api_routes_mcp[] = {
        { "POST", "/mcp", mcp_post, XB_ROUTE_MCP },
        { "GET", "/mcp", mcp_get, XB_ROUTE_MCP },
        { "DELETE", "/mcp", mcp_delete, XB_ROUTE_MCP },
        { "GET", "/.well-known/oauth-protected-resource", xb_mcp_resource_metadata, XB_MCP_META_FLAGS },
        { "GET", "/.well-known/oauth-protected-resource/mcp", xb_mcp_resource_metadata, XB_MCP_META_FLAGS },
};
const size_t xb_api_nroutes_mcp = sizeof(xb_api_routes_mcp) / sizeof(xb_api_routes_mcp[0]);
