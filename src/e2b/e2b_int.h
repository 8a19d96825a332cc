/* Internals shared by the E2B adapter's files (see e2b.h). */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "base/loop.h"
#include "core/call.h"
#include "e2b/e2b.h"
#include "sandbox/sandbox.h"
#include "transport/http.h"

#define E2B_ENVD_PORT 49983
#define E2B_INTERP_PORT 49999
#define E2B_ENVD_VERSION "0.5.7"
#define E2B_TOKEN_LEN 32             /* hex digits of an envd access token */
#define E2B_TRACKED_MAX 256          /* Start configs kept per sandbox (the engine's process cap) */
#define E2B_LANGS 4

/* A process started through envd: what List reports about it. */
struct e2b_tracked {
        struct e2b_tracked *next;
        int pid;
        char *tag;                   /* or NULL */
        json_t *config;              /* {cmd, args, envs, cwd} as Start gave it */
        bool pty;                    /* started with a terminal */
};

/* What E2B knows about a sandbox and execbox does not keep. Dropped once
 * the engine no longer has the sandbox (e2b_sbx_find prunes). */
struct e2b_sbx {
        struct e2b_sbx *next;
        char id[XB_SANDBOX_ID_LEN + 1];
        int tenant;
        char template_id[72];
        char token[E2B_TOKEN_LEN + 1];
        uint64_t started_unix_ms;
        json_t *network;             /* as the client sent it, or NULL */
        bool auto_resume;            /* envd traffic resumes a paused sandbox */
        struct e2b_tracked *tracked;
        unsigned ntracked;
        char default_ctx[E2B_LANGS][32];   /* the default context's session per language */
        uint64_t cpu_ns, cpu_at_ms;  /* the last metrics sample, for CPU use since */
};

/* A stream the adapter holds open on a sandbox's work (a process
 * followed, a cell running): pausing the sandbox drops it first, as a
 * frozen envd drops its connections. */
struct e2b_hold {
        struct e2b_hold *next, **pprev;
        char id[XB_SANDBOX_ID_LEN + 1];
        void (*drop)(struct e2b_hold *h);   /* end the stream and free its owner */
};

struct xb_e2b {
        struct xb_core *core;
        struct e2b_hold *holds;
        const char *domain;          /* of "{port}-{id}.DOMAIN" Hosts, or NULL: any */
        struct e2b_sbx *sbxs;
        struct xb_route *routes;
        size_t nroutes;
};

/* Where the host route puts the sandbox fronts. */
#define E2B_ENVD_PREFIX "/e2b/{}/envd"
#define E2B_INTERP_PREFIX "/e2b/{}/interp"

/* ---- e2b.c ---- */
/* The adapter's record of a live sandbox of the tenant (any tenant when
 * tenant < 0); records of sandboxes the engine dropped are freed first. */
struct e2b_sbx *e2b_sbx_find(struct xb_e2b *e, const char *id, int tenant);
struct e2b_sbx *e2b_sbx_add(struct xb_e2b *e, const char *id, int tenant);
/* Records for the tenant's sandboxes made through REST or MCP, so the
 * SDK lists and connects to them too (with an envd token of their own). */
void e2b_sbx_adopt(struct xb_e2b *e, int tenant);
/* The engine's sandbox, without resuming it (xb_sbx_find would). */
struct xb_sbx *e2b_engine_sbx(struct xb_e2b *e, const char *id);
void e2b_sbx_prune(struct xb_e2b *e);
/* Track h (id set) until e2b_hold_del; drop every hold on id. */
void e2b_hold_add(struct xb_e2b *e, struct e2b_hold *h);
void e2b_hold_del(struct e2b_hold *h);
void e2b_holds_drop(struct xb_e2b *e, const char *id);
/* Forget Start configs of processes the engine no longer runs. */
void e2b_track_add(struct e2b_sbx *s, int pid, const char *tag, json_t *config, bool pty);
struct e2b_tracked *e2b_track_find(struct e2b_sbx *s, int pid, const char *tag);

/* One operation run for the adapter: done gets the result (taken) or the
 * error; event gets the call's events (borrowed). The sink's call is
 * NULL once it ended; cancel it with xb_call_cancel while it is not. */
struct e2b_sink {
        void (*done)(struct e2b_sink *s, json_t *result, const struct xb_err *err);
        void (*event)(struct e2b_sink *s, const char *name, json_t *data);
        struct xb_call *call;
};
/* Run op with args (borrowed); false (and nothing called) when out of
 * memory or the op is unknown. done may run before this returns. */
bool e2b_run(struct xb_e2b *e, int tenant, const char *op, json_t *args, unsigned flags, struct e2b_sink *s);

/* A call reporting to s, for the engine's fast paths that take one
 * directly (core/files.h); NULL when out of memory. */
struct xb_call *e2b_call_new(struct e2b_sink *s, unsigned flags);

/* Run an operation the engine answers at once (list, signal, stdin, get):
 * its result in *ret (taken; NULL ret drops it), or -errno with err. */
int e2b_run_sync(struct xb_e2b *e, int tenant, const char *op, json_t *args, json_t **ret, struct xb_err *err);

/* The sandbox a request names: its id and port, from the E2b-Sandbox-*
 * headers or the Host ("{port}-{id}.{domain}", domain NULL: any); false
 * when it names none. */
bool e2b_target(const struct xb_req *r, const char *domain, char id[XB_SANDBOX_ID_LEN + 1], unsigned *port);
/* Whether token matches s's envd access token, in constant time. */
bool e2b_token_ok(const struct e2b_sbx *s, const char *token);
/* A metrics sample of x, now: cpu_count, cpu_used_pct (since the last
 * sample, else over its life), mem_used and mem_total in bytes. */
struct e2b_metrics {
        unsigned cpu_count;
        double cpu_pct;
        uint64_t mem_used, mem_total;
        uint64_t unix_ms;
};
void e2b_metrics(struct e2b_sbx *s, struct xb_sbx *x, struct e2b_metrics *m);
/* Random lowercase hex, n digits and a NUL; -errno. */
int e2b_random_hex(char *out, size_t n);
/* RFC 3339 UTC with milliseconds. */
void e2b_time(uint64_t unix_ms, char *buf, size_t cap);
/* The sandbox-front request's sandbox, checked: its record and engine
 * sandbox, or NULL after replying (502 as E2B's proxy does for a sandbox
 * that is not running; 401 for a wrong access token). need_token: the
 * envd port; the interpreter's port checks a token only when one is sent. */
struct e2b_sbx *e2b_front_sbx(struct xb_req *r, struct xb_e2b *e, bool need_token, struct xb_sbx **ret_x);

/* A request answered after operations (a file op with init, a chain):
 * fn gets each one's result (taken) or error, replies or runs the next
 * with e2b_async_run, and frees the request's state with e2b_async_free
 * once it replied. A client that leaves cancels the operation in flight
 * (on_gone first) and frees it. req is NULL in fn never; aux is the
 * user's (decref'd when freed). */
struct e2b_async;
typedef void (*e2b_async_fn)(struct xb_req *r, struct e2b_async *a, json_t *res, const struct xb_err *err);
struct e2b_async {
        struct e2b_sink sink;
        struct xb_req *req;
        struct xb_e2b *e;
        e2b_async_fn fn;
        void (*on_event)(struct e2b_async *a, const char *name, json_t *data);
        void (*on_gone)(struct e2b_async *a);
        int tenant, step;
        char id[XB_SANDBOX_ID_LEN + 1];
        json_t *aux;
        void *user;
        unsigned depth;
        bool dead, suspended;
};
/* NULL after replying 503. */
struct e2b_async *e2b_async_new(struct xb_req *r, struct xb_e2b *e, int tenant, const char *id, e2b_async_fn fn);
void e2b_async_run(struct e2b_async *a, const char *op, json_t *args, unsigned flags);
void e2b_async_free(struct e2b_async *a);

/* ---- envd_proc.c, envd_fs.c, interp.c, control.c ---- */
extern const struct xb_route e2b_envd_proc_routes[], e2b_envd_fs_routes[], e2b_envd_watch_routes[],
        e2b_interp_routes[], e2b_control_routes[];
extern const size_t e2b_envd_proc_nroutes, e2b_envd_fs_nroutes, e2b_envd_watch_nroutes, e2b_interp_nroutes,
        e2b_control_nroutes;

/* ---- envd_fs.c, envd_upload.c: /files ---- */
/* An engine failure as envd's HTTP error: {message, code} with its status. */
void e2b_files_error(struct xb_req *r, const struct xb_err *err);
/* POST /files (XB_ROUTE_SINK): raw or multipart, streamed into the files. */
void e2b_files_post(struct xb_req *r);

/* ---- rpc.c: Connect replies ---- */
/* A unary reply: the message (taken) as JSON. */
void e2b_rpc_reply(struct xb_req *r, json_t *msg);
/* A unary error reply: {code, message} with the code's HTTP status. */
void e2b_rpc_error(struct xb_req *r, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An engine failure as a unary error. */
void e2b_rpc_fail(struct xb_req *r, const struct xb_err *err);
/* The unary request's JSON object; NULL after replying invalid_argument. */
json_t *e2b_rpc_body(struct xb_req *r);
/* A server-streaming request's one message (an envelope); NULL after replying. */
json_t *e2b_rpc_stream_body(struct xb_req *r);
/* The user the request runs as, from `Authorization: Basic base64(user:)`:
 * "user" when absent; NULL after replying for a user that does not exist. */
const char *e2b_rpc_user(struct xb_req *r);
/* A process selector {pid} or {tag} within field of msg: its pid, or -1
 * after replying. */
int e2b_rpc_pid(struct xb_req *r, struct e2b_sbx *s, json_t *msg, const char *field);

/* A server-streaming reply: envelopes until end. Owned by its user. */
struct e2b_stream {
        struct xb_req *req;
        struct xb_stream *st;        /* NULL once the client left or it ended */
        struct xb_timer keepalive, deadline;
        uint64_t keepalive_ms;
        const char *ping;            /* the keepalive message, as JSON text */
        void (*gone)(struct e2b_stream *s);   /* the client left (st is NULL now) */
        void (*expired)(struct e2b_stream *s); /* Connect-Timeout-Ms passed */
};
/* Open it (status 200, application/connect+json) with the request's
 * Keepalive-Ping-Interval and Connect-Timeout-Ms; false when out of memory
 * (replied). keepalive: the message sent as a ping. */
bool e2b_stream_open(struct e2b_stream *s, struct xb_req *r, struct xb_loop *l);
/* Send one message (taken); false when the stream is gone. */
bool e2b_stream_send(struct e2b_stream *s, json_t *msg);
/* The end envelope, {} or {"error": {code, message}} (code NULL: none), and close. */
void e2b_stream_end(struct e2b_stream *s, const char *code, const char *message);
/* Stop its timers; the stream must be ended or gone. */
void e2b_stream_stop(struct e2b_stream *s);
/* The Connect-Timeout-Ms header in ms; 0 when absent or bad. */
uint64_t e2b_timeout_ms(struct xb_req *r);

struct xb_loop *e2b_loop(struct xb_e2b *e);
