/* The sandbox server: one loop, one HTTP front, and the sandboxes it owns.
 *
 * Theory of operation. The server owns every sandbox (struct xb_sbx) in a
 * registry keyed by id. Each sandbox's init socket and pidfd are fds in the
 * loop; init's events are validated (initc) and dispatched by tag to the
 * process or file operation that asked. A process (struct xb_proc) is a
 * command spawned by init with pipes the server made: its output goes into
 * head-and-tail buffers that also serve reads by byte offset. Requests that
 * wait (exec, wait, long-poll reads, file transfers) are suspended, never
 * the loop. Sandboxes expire on a timer; a warm pool hides creation cost. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "proc/initc.h"
#include "proc/outbuf.h"
#include "proc/result.h"
#include "sandbox/sandbox.h"
#include "transport/http.h"
#include "base/loop.h"

#define XB_SERVER_MAX_SANDBOXES_DEFAULT 2000
#define XB_PROCS_PER_SANDBOX 256
#define XB_FINISHED_KEPT 64           /* finished background processes kept for reading */
#define XB_POOL_REFILL_DELAY_MS 50
#define XB_TTL_DEFAULT_MS (15u * 60 * 1000)
#define XB_TTL_MAX_MS (7ull * 24 * 3600 * 1000)
#define XB_AUDIT_KEEP_DEFAULT_MS (10u * 60 * 1000)
#define XB_AUDIT_MAX_DEFAULT 10000

struct xb_audits;
struct xb_audit;

struct xb_server_opts {
        const char *listen;           /* default 127.0.0.1:8000 */
        const char *state_dir;
        const char *token_file;
        bool no_auth;
        bool require_guide;           /* Pandora: exec needs guideFollowed */
        bool conformance_fixtures;    /* MCP conformance suite tools */
        size_t body_max, upload_max;
        unsigned max_sandboxes;
        unsigned pool_size;
        struct xb_limits defaults;    /* sandbox limits when a request sets none */
        const char *const *allow_mounts;
        size_t nallow;
        enum xb_cgroup_mode cgroup_mode;
        bool quiet;
        bool pool_python;             /* pooled sandboxes start a warm Python session */
        bool access_log;              /* one line per HTTP request on stderr */
        uint64_t audit_keep_ms;       /* a deleted sandbox's audit log stays readable this long */
        unsigned audit_max;           /* events kept per sandbox (and at most XB_AUDIT_BYTES) */
};

struct xb_metrics {
        uint64_t sandboxes_created, sandboxes_deleted, sandboxes_expired, pool_hits, pool_misses;
        uint64_t execs, execs_by_status[XB_ST_RUNNING + 1];
        uint64_t http_errors_4xx, http_errors_5xx;
        uint64_t exec_latency_buckets[12];   /* ms: 1,2,5,10,25,50,100,250,500,1000,5000,+Inf */
        uint64_t exec_latency_sum_us, exec_latency_count;
};

struct xb_server {
        struct xb_server_opts o;
        struct xb_loop *loop;
        struct xb_http *http;
        struct xb_engine *eng;
        void *by_id;                  /* tsearch(3) tree of struct xb_sbx * */
        unsigned nsandboxes;
        struct xb_sbx *pool;          /* ready, unclaimed sandboxes (linked by next) */
        unsigned npool, pool_starting;
        unsigned ndying;              /* killed, not yet reaped */
        struct xb_timer pool_timer;
        char **tokens;
        size_t ntokens;
        int sigfd;
        struct xb_io sig_io;
        bool stopping;
        uint64_t started_ms;
        struct xb_metrics m;
        uint8_t *rxbuf;               /* one init message at a time */
        char cgroup_prefix[48];
        char **default_sbx;           /* per tenant: the plugin API's sandbox id */
        struct xb_mcp *mcp;           /* the MCP core (mcp.h), for /mcp and stdio */
        bool token_generated;         /* the token was made and saved at this start */
        struct xb_audits *audits;     /* every sandbox's audit log (audit.h) */
};

enum xb_sbx_state { XB_SBX_STARTING, XB_SBX_READY, XB_SBX_DYING, XB_SBX_DEAD };

struct xb_sbx {
        struct xb_server *srv;
        struct xb_defer defer;        /* sbx_free, at the last unref */
        struct xb_sandbox *sb;
        char id[XB_SANDBOX_ID_LEN + 1];
        enum xb_sbx_state state;
        int tenant;
        bool pooled;                  /* in srv->pool, not yet claimed */
        struct xb_sbx *next;          /* pool link */
        struct xb_limits limits;
        char **env;                   /* sandbox-wide "K=V" set at creation */
        json_t *metadata;
        uint64_t created_ms, ttl_ms, expires_ms;   /* monotonic */
        uint64_t created_unix_ms;                  /* for clients */
        struct xb_timer expiry;
        struct xb_io sock_io, pidfd_io;
        uint32_t next_tag;
        struct xb_pending *pending;   /* owners of init's tags, sorted by tag (xb_sbx_pending_add) */
        unsigned npending, pending_cap;
        unsigned nwaiting;            /* clients waiting on its work (xb_sbx_wait_begin) */
        struct xb_proc *procs;        /* linked by next */
        unsigned nprocs;
        struct xb_fileop *fileops;    /* pending file operations, by tag */
        struct xb_session *sessions;  /* code sessions (sessions.h) */
        unsigned nsessions;
        struct xb_image *images;      /* images cells displayed, oldest first */
        unsigned nimages;
        size_t image_bytes;
        struct xb_audit *audit;       /* its audit log; NULL while pooled, and once deleted */
        char error[200];              /* why it died, if it did */
        unsigned refs;                /* held by in-flight work; freed at 0 once dead */
};

/* ---- registry and lifecycle (sbx.c) ---- */
struct xb_sbx *xb_sbx_find(struct xb_server *s, const char *id, int tenant);
/* Create (from the pool when it fits) and register; err says why not. */
int xb_sbx_create(struct xb_server *s, int tenant, const struct xb_limits *l, const struct xb_bind *binds,
                  size_t nbinds, char **env, json_t *metadata, uint64_t ttl_ms, struct xb_sbx **ret,
                  struct xb_err *err);
void xb_sbx_touch(struct xb_sbx *x, uint64_t ttl_ms);
/* Kill everything and unregister; the memory goes when the last ref does. */
void xb_sbx_destroy(struct xb_sbx *x, const char *why);
void xb_sbx_ref(struct xb_sbx *x);
void xb_sbx_unref(struct xb_sbx *x);
uint32_t xb_sbx_tag(struct xb_sbx *x);
json_t *xb_sbx_json(const struct xb_sbx *x);

/* Pending tags: whoever asks init for work (a spawn, a file operation)
 * takes a tag with its callbacks, and init's events for that tag reach
 * them; the registry never names its users. Any callback may be NULL.
 * died runs once when the sandbox goes (why: its error, or NULL when none
 * was given) and the tag is gone after it; other callbacks may run any
 * number of times until xb_sbx_pending_del. */
struct xb_pending_ops {
        void (*spawned)(void *ctx, pid_t pid);
        void (*exited)(void *ctx, int status, uint64_t cpu_us, uint64_t maxrss_kb);
        void (*error)(void *ctx, int errnum, const char *stage);
        /* fds are the callee's (it closes them). */
        void (*file)(void *ctx, const struct xb_init_event *ev, int *fds, size_t nfds);
        void (*died)(void *ctx, const char *why);
};
/* A new tag for ops and ctx (borrowed until deleted); 0 when out of memory. */
uint32_t xb_sbx_pending_add(struct xb_sbx *x, const struct xb_pending_ops *ops, void *ctx);
/* Forget tag; a tag not in the table (died already ran) is ignored. */
void xb_sbx_pending_del(struct xb_sbx *x, uint32_t tag);
/* A client waits on the sandbox's work (a command, a read): expiry waits
 * for it. Every begin has one end. */
void xb_sbx_wait_begin(struct xb_sbx *x);
void xb_sbx_wait_end(struct xb_sbx *x);
void xb_sbx_foreach(struct xb_server *s, void (*fn)(struct xb_sbx *x, void *data), void *data);
void xb_pool_fill(struct xb_server *s);
void xb_sbx_destroy_all(struct xb_server *s);

/* ---- processes (proc.c, proc_wait.c) ---- */
struct xb_call;

struct xb_proc_spec {
        char **argv;                  /* owned by the caller until spawn copies what it needs */
        char **env;                   /* complete environment */
        const char *cwd;
        uint32_t uid;
        uint64_t timeout_ms;          /* hard: kill the process group; 0 = none */
        uint64_t yield_ms;            /* soft: answer "running" after this long without output */
        uint64_t output_limit;        /* bytes kept per stream */
        const char *stdin_data;       /* written, then stdin is closed unless keep_stdin */
        size_t stdin_len;
        bool keep_stdin;              /* background processes: stdin stays open */
};

/* Ask init to spawn; NULL with err (its ecode set) when it cannot be asked.
 * Whether the spawn worked comes later (xb_proc_exec, xb_proc_wait_spawn). */
struct xb_proc *xb_proc_start(struct xb_sbx *x, const struct xb_proc_spec *spec, bool background,
                              struct xb_err *err);
struct xb_proc *xb_proc_find(struct xb_sbx *x, pid_t pid);
/* Run p for c (exec): events "start" ({cmd}), then "stdout" and "stderr"
 * ({data}) when c wants events; then the result, the spawn's error, or at
 * the soft timeout the result so far (status "running", with offsets),
 * after which p runs on in the background. Cancelling c kills p unless it
 * went to the background. */
void xb_proc_exec(struct xb_proc *p, struct xb_call *c);
/* Done with xb_proc_json once init confirms the spawn, or its error (or
 * XB_E_SANDBOX_GONE). Cancelling c leaves p running. */
void xb_proc_wait_spawn(struct xb_proc *p, struct xb_call *c);
/* Done with the result once p has finished, or at timeout_ms (0: none)
 * with the result so far and "waited": true. Cancelling leaves p running. */
void xb_proc_wait(struct xb_proc *p, struct xb_call *c, uint64_t timeout_ms);
json_t *xb_proc_json(const struct xb_proc *p, bool with_output);
json_t *xb_proc_list_json(struct xb_sbx *x);
pid_t xb_proc_pid(const struct xb_proc *p);
/* Output from byte offsets: {"stdout", "stderr", offsets, dropped, running}. */
json_t *xb_proc_output_json(const struct xb_proc *p, uint64_t out_off, uint64_t err_off, size_t max);
/* Long-poll: done with output past the offsets as soon as there is some,
 * the process finished, or wait_ms passed (0: at once). */
void xb_proc_read(struct xb_proc *p, struct xb_call *c, uint64_t out_off, uint64_t err_off, size_t max,
                  uint64_t wait_ms);
/* -errno with err (XB_E_STDIN_CLOSED) when stdin is closed or backed up. */
int xb_proc_write_stdin(struct xb_proc *p, const char *data, size_t len, bool close_after, struct xb_err *err);
int xb_proc_signal(struct xb_proc *p, int signo);
/* Kill p if it runs, and drop it once it has ended. */
void xb_proc_forget(struct xb_proc *p);
bool xb_proc_running(const struct xb_proc *p);
bool xb_sessions_any_waited(const struct xb_sbx *x);
static inline bool
xb_sbx_busy(const struct xb_sbx *x)
{
        return x->nwaiting > 0 || xb_sessions_any_waited(x);
}

/* ---- files (files.c) ---- */
void xb_fileop_on_reply(struct xb_sbx *x, const struct xb_init_event *ev, int *fds, size_t nfds);
void xb_fileop_sandbox_died(struct xb_sbx *x);

/* ---- replies shared by the API modules (api.c) ---- */
/* 400 with the validation message and a hint. */
void xb_api_bad_request(struct xb_req *r, const struct xb_err *err, const char *hint);
/* The sandbox named by path parameter 0, or a 404 reply and NULL. */
struct xb_sbx *xb_api_sandbox(struct xb_req *r);
/* The plugin APIs' sandbox: one per tenant, made on first use; or a reply and NULL. */
struct xb_sbx *xb_default_sandbox(struct xb_req *r);

/* ---- entry point (server.c) ---- */
/* The core without a front: engine, loop, signals, tokens, router (listening
 * only when o->listen is set), MCP and pool. -errno after logging why. */
int xb_server_open(const struct xb_server_opts *o, struct xb_server **ret);
/* Run the loop until a signal or a front stops it. */
int xb_server_run(struct xb_server *s);
/* Kill every sandbox, wait for them (at most 5 s) and free everything. */
void xb_server_close(struct xb_server *s);
/* execbox serve: open with the HTTP front, print the banner, run, close. */
int xb_server_main(const struct xb_server_opts *o);
/* Every route of every API table, in match order, copied into out (at most
 * cap); returns how many. The OpenAPI document and its test use it. */
size_t xb_server_routes(struct xb_route *out, size_t cap);
