/* The engine: the sandboxes the daemon owns, with no protocol in it.
 *
 * Theory of operation. The core owns every sandbox (struct xb_sbx) in a
 * registry keyed by id. Each sandbox's init socket and pidfd are fds in the
 * loop; init's events are validated (initc) and reach their owner through
 * the sandbox's table of pending tags. A process (struct xb_proc) is a
 * command spawned by init with pipes the core made: its output goes into
 * head-and-tail buffers that also serve reads by byte offset. Work that
 * waits (exec, wait, long-poll reads, file transfers) is a call
 * (core/call.h) that ends later, never a blocked loop. Sandboxes expire on
 * a timer; a warm pool hides creation cost. The operations over it are
 * ops/ops.h; the protocols are adapters above that. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "core/metrics.h"
#include "proc/initc.h"
#include "proc/outbuf.h"
#include "proc/result.h"
#include "sandbox/sandbox.h"
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

/* One tenant's quota (quota.h); 0 in a field: no quota of that kind. */
struct xb_quota {
        uint64_t sandboxes;           /* sandboxes alive at once */
        uint64_t execs;               /* commands running at once, over all its sandboxes */
        uint64_t rate;                /* sandbox creations a minute (a bucket of that many) */
        uint64_t memory, disk;        /* the sum of its sandboxes' limits */
};

/* A tenant's bucket of creations (core-owned, one per tenant). */
struct xb_quota_use {
        double tokens;
        uint64_t at_ms;
};


struct xb_core_opts {
        unsigned max_sandboxes;       /* 0: XB_SERVER_MAX_SANDBOXES_DEFAULT */
        unsigned pool_size;
        bool pool_python;             /* pooled sandboxes start a warm Python session */
        struct xb_limits defaults;    /* sandbox limits when a request sets none */
        struct xb_limits ceiling;     /* the most a request may set (xb_quota_ceilings) */
        const struct xb_quota *quota; /* per tenant (token index), nquota of them */
        size_t nquota;
        struct xb_quota quota_default;   /* tenants without an entry (no auth, stdio) */
        const char *const *allow_mounts;
        size_t nallow;
        enum xb_cgroup_mode cgroup_mode;
        size_t upload_max;            /* file contents an operation carries in JSON */
        uint64_t audit_keep_ms;       /* a deleted sandbox's audit log stays readable this long */
        unsigned audit_max;           /* events kept per sandbox (and at most XB_AUDIT_BYTES) */
};

struct xb_core {
        struct xb_core_opts o;
        struct xb_loop *loop;         /* not owned */
        struct xb_engine *eng;
        void *by_id;                  /* tsearch(3) tree of struct xb_sbx * */
        unsigned nsandboxes;
        struct xb_sbx *pool;          /* ready, unclaimed sandboxes (linked by next) */
        unsigned npool, pool_starting;
        unsigned ndying;              /* killed, not yet reaped */
        struct xb_timer pool_timer;
        bool stopping;
        uint64_t started_ms;
        struct xb_metrics m;
        uint8_t *rxbuf;               /* one init message at a time */
        struct xb_audits *audits;     /* every sandbox's audit log (audit.h) */
        struct xb_quota_use *quota_use;   /* nquota + 1, made at the first use (quota.c) */
        char ceiling_hint[320];       /* made at the first check, lives with the core */
};

/* The engine on loop: the sandbox runtime opened, stale cgroups of earlier
 * runs reaped, the pool started. err says why not. */
int xb_core_open(const struct xb_core_opts *o, struct xb_loop *loop, struct xb_core **ret, struct xb_err *err);
/* No more sandboxes from here on (the daemon is stopping). */
void xb_core_stop(struct xb_core *c);
/* Kill every sandbox, run the loop until they are reaped (at most 5 s) and
 * free the core. Safe on NULL. */
void xb_core_close(struct xb_core *c);

enum xb_sbx_state { XB_SBX_STARTING, XB_SBX_READY, XB_SBX_DYING, XB_SBX_DEAD };

/* Why a sandbox ended: the error its unfinished work fails with
 * (xb_sbx_gone) follows from it, and adapters word their advice by it. */
enum xb_sbx_end {
        XB_SBX_LIVE,                  /* it has not ended */
        XB_SBX_DELETED,               /* a client deleted it */
        XB_SBX_EXPIRED,               /* its lease ran out */
        XB_SBX_CRASHED,               /* its init died */
        XB_SBX_BROKEN,                /* init broke the protocol and was killed */
        XB_SBX_SETUP_FAILED,          /* init could not set it up */
        XB_SBX_SHUTDOWN,              /* the server is stopping */
};

struct xb_sbx {
        struct xb_core *core;
        struct xb_defer defer;        /* sbx_free, at the last unref */
        struct xb_sandbox *sb;
        char id[XB_SANDBOX_ID_LEN + 1];
        enum xb_sbx_state state;
        int tenant;
        bool pooled;                  /* in core->pool, not yet claimed */
        bool paused;                  /* its cgroup is frozen (pause.c) */
        struct xb_sbx *next;          /* pool link */
        struct xb_limits limits;
        char **env;                   /* sandbox-wide "K=V" set at creation */
        json_t *metadata;
        uint64_t created_ms, ttl_ms, expires_ms;   /* monotonic */
        uint64_t created_unix_ms;                  /* for clients */
        uint64_t start_t0_us;         /* create began, until init is ready (metrics) */
        bool start_hit;               /* it came from the pool */
        struct xb_timer expiry;
        struct xb_io sock_io, pidfd_io;
        uint32_t next_tag;
        struct xb_pending *pending;   /* owners of init's tags, sorted by tag (xb_sbx_pending_add) */
        unsigned npending, pending_cap;
        unsigned nwaiting;            /* clients waiting on its work (xb_sbx_wait_begin) */
        struct xb_proc *procs;        /* linked by next */
        unsigned nprocs;
        unsigned nfileops;            /* file operations waiting on init */
        struct xb_session *sessions;  /* code sessions (sessions.h) */
        unsigned nsessions;
        struct xb_image *images;      /* images cells displayed, oldest first */
        unsigned nimages;
        size_t image_bytes;
        enum xb_sbx_end end;          /* why it died, if it did */
        char error[200];              /* and in words (neutral: no protocol's terms) */
        uint32_t images_tag;          /* the pending tag that frees its images (images.c) */
        struct xb_audit *audit;       /* its audit log; NULL while pooled, and once deleted */
        unsigned refs;                /* held by in-flight work; freed at 0 once dead */
};

/* ---- registry and lifecycle (sbx.c; creation and the pool: pool.c) ---- */
struct xb_sbx *xb_sbx_find(struct xb_core *s, const char *id, int tenant);
/* Create (from the pool when it fits) and register; err says why not. */
int xb_sbx_create(struct xb_core *s, int tenant, const struct xb_limits *l, const struct xb_bind *binds,
                  size_t nbinds, char **env, json_t *metadata, uint64_t ttl_ms, struct xb_sbx **ret,
                  struct xb_err *err);
void xb_sbx_touch(struct xb_sbx *x, uint64_t ttl_ms);
/* Kill everything and unregister, for end and why (neutral words, or NULL);
 * the memory goes when the last ref does. A second call does nothing. */
void xb_sbx_destroy(struct xb_sbx *x, enum xb_sbx_end end, const char *why);
/* Fill err for work x's end cut short: XB_E_SANDBOX_EXPIRED when its lease
 * ran out, else XB_E_SANDBOX_GONE; the message is why (a died callback's),
 * or dflt when why is NULL. Returns -ESRCH. */
int xb_sbx_gone(const struct xb_sbx *x, const char *why, const char *dflt, struct xb_err *err);
void xb_sbx_ref(struct xb_sbx *x);
void xb_sbx_unref(struct xb_sbx *x);
json_t *xb_sbx_json(const struct xb_sbx *x);
/* Freeze an idle running sandbox (-EBUSY when someone waits on it), and
 * thaw it; finding or deleting it resumes it (pause.c). */
int xb_sbx_pause(struct xb_sbx *x, struct xb_err *err);
void xb_sbx_resume(struct xb_sbx *x);

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
/* A client waits on the sandbox's work (a command, a read, a cell): expiry
 * waits for it. Every begin has one end. */
void xb_sbx_wait_begin(struct xb_sbx *x);
void xb_sbx_wait_end(struct xb_sbx *x);
static inline bool
xb_sbx_busy(const struct xb_sbx *x)
{
        return x->nwaiting > 0;
}
void xb_sbx_foreach(struct xb_core *s, void (*fn)(struct xb_sbx *x, void *data), void *data);
void xb_pool_fill(struct xb_core *s);
void xb_sbx_destroy_all(struct xb_core *s);

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
