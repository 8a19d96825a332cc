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
#include <limits.h>
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
#include "net/egress.h"
#include "net/secret.h"

#define XB_SERVER_MAX_SANDBOXES_DEFAULT 2000
#define XB_PROCS_PER_SANDBOX 256
#define XB_FINISHED_KEPT 64           /* finished background processes kept for reading */
#define XB_POOL_REFILL_DELAY_MS 50
#define XB_TTL_DEFAULT_MS (15u * 60 * 1000)
#define XB_TTL_MAX_MS (7ull * 24 * 3600 * 1000)
#define XB_PAUSED_TTL_DEFAULT_MS (24ull * 3600 * 1000)
#define XB_LIFETIME_MAX_DEFAULT_MS (7ull * 24 * 3600 * 1000)
#define XB_ACTIVE_POLL_MS 1000        /* how often a busy sandbox's idle clock is held */
#define XB_AUDIT_KEEP_DEFAULT_MS (10u * 60 * 1000)
#define XB_AUDIT_MAX_DEFAULT 10000

struct xb_audits;
struct xb_audit;
struct xb_template;
struct xb_rootfs_job;

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
        const char *cgroup_prefix;    /* NULL: "execbox" */
        uint64_t output_budget;       /* output kept in memory for every process; 0: XB_OUTPUT_BUDGET_DEFAULT */
        size_t upload_max;            /* file contents an operation carries in JSON */
        uint64_t audit_keep_ms;       /* a deleted sandbox's audit log stays readable this long */
        unsigned audit_max;           /* events kept per sandbox (and at most XB_AUDIT_BYTES) */
        /* Signs a shared port's link (ports.h): msg's HMAC as 64 hex digits
         * and a NUL, or -errno. NULL: ports cannot be shared. */
        int (*sign)(const char *msg, size_t len, char out[65]);
        bool network;                 /* egress through the daemon (net/egress.h); false: loopback only */
        uint64_t approval_timeout_ms; /* approvals.c: a pending one is denied after this; 0: 120 s */
        struct xb_netsys_opts net;
        int layers;                   /* XB_LAYERS_* (sandbox.h) */
        const char *state_dir;        /* the layer store's home */
        uint64_t store_size;
        bool mount_owner_set;         /* workspaces' owner on the host (sandbox.h) */
        uint32_t mount_uid, mount_gid;
        uint64_t paused_ttl_ms;       /* --paused-ttl: default and ceiling of paused_ttl_s; 0: the built-in */
        uint64_t max_lifetime_ms;     /* --max-lifetime: default and ceiling of max_lifetime_s; 0: the built-in */
        uint64_t install_cache_size;  /* --install-cache-size: the install cache's bound; 0: none */
        uint64_t adopt_grace_ms;      /* --adopt-grace: how long a sandbox waits for the next daemon; 0: not */
};

/* What is remembered of an ended sandbox (tombs.c). */
#define XB_TOMBS_MAX 1024
#define XB_TOMB_KEEP_MS (60ull * 60 * 1000)
struct xb_tomb {
        char id[XB_SANDBOX_ID_LEN + 1];
        int tenant;
        int end;                      /* enum xb_sbx_end */
        uint64_t ended_ms;            /* monotonic; 0: an empty slot */
        char why[160];
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
        unsigned npaused;             /* registered sandboxes that are frozen */
        struct xb_timer pool_timer;
        bool stopping;
        bool draining;                /* the daemon drains before it stops: no new sandboxes */
        uint64_t started_ms;
        struct xb_metrics m;
        uint8_t *rxbuf;               /* one init message at a time */
        struct xb_audits *audits;     /* every sandbox's audit log (audit.h) */
        struct xb_netsys *net;        /* egress; NULL when o.network is false */
        uint64_t out_mem;             /* output kept for processes now (proc.c), against o.output_budget */
        unsigned out_waiting;         /* processes whose pipes wait for the budget */
        uint64_t fds_untenanted;      /* fds.c's count when tenants have no metrics (tests) */
        struct xb_tomb tombs[XB_TOMBS_MAX];   /* a ring, oldest overwritten */
        unsigned tomb_next;
        bool records_on;              /* state_fd and records_dir_fd are open (records.c) */
        int state_fd, records_dir_fd;  /* state_dir and its sandboxes/ */
        unsigned nleft;               /* sandboxes left alive for the next daemon (xb_core_leave) */
        json_t *adopt_todo;           /* records of live sandboxes to re-adopt at start (adopt.c) */
        unsigned tomb_lines;          /* appended to tombs.log since its last compaction */
        struct xb_template *templates;   /* templates.h: snapshots, persisted under state_dir */
        char *templates_dir;          /* state_dir/templates; NULL: none kept */
        void *builds;                 /* templates being built from steps (ops/op_tbuild.c) */
        struct xb_quota_use *quota_use;   /* nquota + 1, made at the first use (quota.c) */
        char ceiling_hint[320];       /* made at the first check, lives with the core */
        struct xb_secret **secrets;   /* secrets.c: every tenant's, in memory only */
        size_t nsecrets;
        struct xb_approvals *approvals;   /* approvals.c: what waits for a human */
        struct xb_rootfs_job *rootfs_jobs;   /* rootfs.c: imports running */
        struct xb_timer disk_timer;   /* diskguard.c */
        bool disk_tight;              /* the state dir's free space is below the guard: layers take no writes */
        bool disk_was_tight;          /* the layers are clamped (diskguard.c) */
        struct xb_instcache *inst;    /* instcache.h: captured apt installs; NULL: none */
        void *installs;               /* installs running (ops/op_install.c) */
};

/* The engine on loop: the sandbox runtime opened, stale cgroups of earlier
 * runs reaped, the pool started. err says why not. */
int xb_core_open(const struct xb_core_opts *o, struct xb_loop *loop, struct xb_core **ret, struct xb_err *err);
/* The templates persisted under state_dir, and the layer store's garbage
 * collection (templates.c; templates.h has the rest). */
int xb_templates_open(struct xb_core *s, struct xb_err *err);
void xb_templates_close(struct xb_core *s);
/* The install cache (instcache.c; instcache.h has the rest). */
int xb_inst_open(struct xb_core *s, uint64_t max, struct xb_err *err);
void xb_inst_close(struct xb_core *s);
/* No more sandboxes from here on (the daemon is stopping). */
void xb_core_stop(struct xb_core *c);
/* The daemon drains: creates fail with XB_E_SHUTTING_DOWN and the pool is
 * not refilled, while the sandboxes and their work go on. */
void xb_core_drain(struct xb_core *c);
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
        bool pause_auto;              /* and the next use resumes it (else: 409 paused) */
        bool auto_pause;              /* at its idle TTL it pauses instead of ending */
        bool auto_pause_manual;       /* and only an explicit resume wakes it (E2B without autoResume) */
        bool fixed_deadline;          /* expires_ms is absolute (E2B's timeout): use and work do not move it */
        bool sealed;                  /* the server's own (an install's builder): no client finds it */
        struct xb_sbx *next;          /* pool link */
        struct xb_limits limits;
        uint32_t uid;                 /* commands' default user inside: 0 or XB_USER_UID */
        char **lowers;                /* its template's layers, top first (NULL: base) */
        struct xb_template *tmpl;     /* the template it holds a reference on, or NULL */
        char **env;                   /* sandbox-wide "K=V" set at creation */
        char *cwd;                    /* commands' default cwd (its template's workdir), or NULL */
        bool own_root;                /* its lowers are a whole root (templates.h: rootfs) */
        json_t *metadata;
        uint64_t created_ms, ttl_ms, expires_ms;   /* monotonic; expires_ms: the idle clock's end */
        uint64_t paused_ttl_ms, paused_until_ms;   /* how long it may stay paused, and till when */
        uint64_t max_lifetime_ms;                  /* from created_ms, whatever it does */
        uint64_t created_unix_ms;                  /* for clients */
        uint64_t start_t0_us;         /* create began, until init is ready (metrics) */
        bool start_hit;               /* it came from the pool */
        bool warm_up;                 /* pooled: init's ready runs the warm-up first (pool_warm.c) */
        struct xb_timer expiry;
        struct xb_io sock_io, pidfd_io;
        uint32_t next_tag;
        struct xb_pending *pending;   /* owners of init's tags, sorted by tag (xb_sbx_pending_add) */
        unsigned npending, pending_cap;
        unsigned nwaiting;            /* clients waiting on its work (xb_sbx_wait_begin) */
        struct xb_proc *procs;        /* linked by next */
        unsigned nprocs;
        unsigned nwatches;            /* directory watches (watch.c) */
        struct xb_watcher *watchers;  /* polled ones, linked by next */
        unsigned next_watcher;
        unsigned nfileops;            /* file operations waiting on init */
        unsigned nfileops_bg;         /* of which no client waits on (files_int.h) */
        struct xb_session *sessions;  /* code sessions (sessions.h) */
        unsigned nsessions;
        struct xb_image *images;      /* images cells displayed, oldest first */
        unsigned nimages;
        size_t image_bytes;
        enum xb_sbx_end end;          /* why it died, if it did */
        char error[200];              /* and in words (neutral: no protocol's terms) */
        uint32_t images_tag;          /* the pending tag that frees its images (images.c) */
        struct xb_audit *audit;       /* its audit log; NULL while pooled, and once deleted */
        struct xb_net *net;           /* its egress (network.c); NULL without, and once dying */
        unsigned refs;                /* held by in-flight work; freed at 0 once dead */
        unsigned fds;                 /* the daemon's fds it holds, charged to its tenant (fds.c) */
        bool fds_base;                /* its own share is charged */
        /* Outliving the daemon (adopt.c): its init waits for the next one. */
        bool armed;
        char keep_secret[XB_KEEP_SECRET_LEN + 1];
        int net_keep[3];              /* dups of the egress sockets, until armed */
        unsigned nnet_keep;
};

#define XB_OUTPUT_BUDGET_DEFAULT ((uint64_t)1 << 30)

/* ---- fd budgets (fds.c) ---- */
#define XB_FDS_PER_SANDBOX_BASE 8     /* its socket, pidfd and cgroup dirs */
#define XB_FDS_PER_PROCESS 3          /* stdout, stderr and stdin pipes */
#define XB_FDS_PER_SPILL 2            /* a background process's stream files (proc_spill.c) */
/* Whether tenant (and x, if given) may take n more of the daemon's fds:
 * 0, or -EMFILE with err set (XB_E_FD_BUDGET). */
int xb_fds_check(struct xb_core *s, int tenant, const struct xb_sbx *x, unsigned n, struct xb_err *err);

/* Free space (and inodes) kept in the state directory, under which
 * creates stop (space.c): the layer store there must never fill up. */
#define XB_STATE_RESERVE (32u << 20)
#define XB_STATE_RESERVE_INODES 256u
/* 0, or -ENOSPC with err set (XB_E_SANDBOX_UNAVAILABLE, 503) while the
 * state directory has less than its reserve free. */
int xb_space_check(struct xb_core *s, struct xb_err *err);
/* Whether need more bytes fit in the state directory above its reserve
 * and the disk guard's margin (and the guard is not tight): 0, or
 * -ENOSPC with err set (XB_E_DISK_FULL, 507). For a client's upload. */
int xb_space_room(struct xb_core *s, uint64_t need, struct xb_err *err);
/* A file in the state directory that no path names (O_TMPFILE, or 0600
 * and unlinked at once): its space goes back when the fd closes. The fd,
 * or -errno with err set. */
int xb_space_tmpfile(struct xb_core *s, struct xb_err *err);
/* diskguard.c: while the state directory's filesystem has less than
 * XB_STATE_RESERVE + XB_STATE_GUARD free, no sandbox's (nor import's)
 * layer takes a write: what sandboxes write never reaches the reserve the
 * daemon's records, tombstones and token need. Checked every
 * XB_STATE_GUARD_MS; writes come back above twice the guard. */
#define XB_STATE_GUARD ((uint64_t)256 << 20)
#define XB_STATE_GUARD_MS 100
void xb_diskguard_start(struct xb_core *s);
void xb_diskguard_stop(struct xb_core *s);
/* Check, then count n fds held by x for its tenant; release them later. */
int xb_fds_charge(struct xb_sbx *x, unsigned n, struct xb_err *err);
void xb_fds_release(struct xb_sbx *x, unsigned n);

/* ---- tombstones (tombs.c) ---- */
/* Remember x, which just ended (its end and error say why). */
void xb_tomb_add(struct xb_core *s, const struct xb_sbx *x);
/* The tombstone of id for tenant, if it ended within XB_TOMB_KEEP_MS. */
const struct xb_tomb *xb_tomb_find(const struct xb_core *s, const char *id, int tenant);
/* Fill err: XB_E_SANDBOX_ENDED, with when and why. Returns -ESRCH. */
int xb_tomb_err(const struct xb_tomb *t, struct xb_err *err);

/* ---- what outlives the daemon (records.c) ---- */
/* The state dir's records: tombstones read back, records of sandboxes of a
 * daemon that died reaped into tombstones (m.sandboxes_reaped). -errno. */
int xb_records_open(struct xb_core *s);
void xb_records_close(struct xb_core *s);
/* ---- outliving the daemon (adopt.c) ---- */
/* Arm x's init to outlive us (a claimed sandbox, once ready; with
 * --adopt-grace), then re-save its record. Idempotent. */
void xb_adopt_arm(struct xb_sbx *x);
/* Keep dups of a background process's pipes (a session's: its driver's)
 * in init; drop them. */
void xb_adopt_hold(struct xb_proc *p);
void xb_adopt_unhold(struct xb_proc *p);
struct xb_session;
void xb_adopt_hold_session(struct xb_session *ss);
void xb_adopt_unhold_session(struct xb_session *ss);
/* Keep a polled watcher's note in init, with its watch's tag: a next
 * daemon re-attaches it (init drops it with the watch). */
void xb_adopt_hold_watch(struct xb_sbx *x, uint32_t tag, json_t *note);
/* At exit without --stop-sandboxes: let go of every armed sandbox, alive,
 * for the next daemon (its init waits); how many. The rest is deleted by
 * xb_core_close as before. */
unsigned xb_core_leave(struct xb_core *s);
/* At start: re-adopt the sandboxes records_open set aside (adopt_todo);
 * reap the ones that cannot be. */
void xb_adopt_all(struct xb_core *s);
/* A record's end at start (records.c): a tombstone, its cgroup; false if
 * the record is not one. */
bool xb__record_reap(struct xb_core *s, const char *name);
/* Whether sandbox id was armed (its keep socket is there). */
bool xb_adopt_armed_id(struct xb_core *s, const char *id);

/* Write x's record atomically (a registered sandbox), or remove it. */
void xb_record_save(struct xb_sbx *x);
void xb_record_drop(struct xb_sbx *x);
/* Append a tombstone to the state dir's log (tombs.c calls it). */
void xb_tomb_persist(struct xb_core *s, const struct xb_tomb *t);

/* ---- registry and lifecycle (sbx.c; creation and the pool: pool.c) ---- */
/* Look a sandbox up, as it is (a paused one stays paused). */
/* tenant XB_TENANT_ANY: the engine's own lookups (approvals), never a client's. */
#define XB_TENANT_ANY INT_MIN   /* never a request's tenant (-1 is an unauthenticated one's) */
struct xb_sbx *xb_sbx_find(struct xb_core *s, const char *id, int tenant);
/* Look a sandbox up to use it: one paused by auto_pause (or an idle
 * client) is resumed; one a client paused fails XB_E_SANDBOX_PAUSED, and a
 * missing one XB_E_SANDBOX_NOT_FOUND. */
struct xb_sbx *xb_sbx_use(struct xb_core *s, const char *id, int tenant, struct xb_err *err);
/* Create (from the pool when it fits) and register; err says why not. */
int xb_sbx_create(struct xb_core *s, int tenant, const struct xb_limits *l, const struct xb_bind *binds,
                  size_t nbinds, char **env, json_t *metadata, uint64_t ttl_ms, struct xb_sbx **ret,
                  struct xb_err *err);
/* The same with a layered root of root's layers (NULL: the base, pool allowed). */
int xb_sbx_create_root(struct xb_core *s, int tenant, const struct xb_limits *l, const struct xb_bind *binds,
                       size_t nbinds, const struct xb_root_spec *root, char **env, json_t *metadata,
                       uint64_t ttl_ms, struct xb_sbx **ret, struct xb_err *err);

/* Restart the idle clock, with a new idle TTL unless ttl_ms is 0. The
 * lifetime rules (lifetime.c): the idle clock runs while nothing happens
 * in the sandbox (no client waiting, no background process running, no
 * session cell running); at its end the sandbox ends, or pauses when
 * auto_pause. A paused sandbox's idle clock stops and paused_ttl_ms runs
 * instead. max_lifetime_ms from creation ends it whatever it does. */
void xb_sbx_touch(struct xb_sbx *x, uint64_t ttl_ms);
/* A use of x: its idle clock restarts, unless its deadline is fixed. */
void xb_sbx_used(struct xb_sbx *x);
/* Re-arm the expiry timer after a rule's input changed (a pause, a resume). */
void xb_sbx_arm(struct xb_sbx *x);
/* Whether work runs in x that keeps its idle clock from running. */
bool xb_sbx_active(const struct xb_sbx *x);
/* When x ends if nothing changes, in ms from now, and by which rule:
 * "idle", "paused_ttl" or "max_lifetime". */
uint64_t xb_sbx_expires_in(const struct xb_sbx *x, const char **why);
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
/* Freeze a running sandbox and wait until the kernel has (err: EBUSY when
 * someone waits on it or it would not freeze). auto_resume: the next use
 * (xb_sbx_use) resumes it; else uses fail XB_E_SANDBOX_PAUSED until
 * xb_sbx_resume. Deleting it resumes it so that its tasks can die. */
int xb_sbx_pause(struct xb_sbx *x, bool auto_resume, struct xb_err *err);
/* Thaw; its idle clock restarts. */
void xb_sbx_resume(struct xb_sbx *x);
/* Thaw without touching the clock (teardown). */
void xb__sbx_thaw(struct xb_sbx *x);

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
        /* init said the sandbox is set up (every owner with this hook hears it). */
        void (*ready)(void *ctx);
};
/* A new tag for ops and ctx (borrowed until deleted); 0 when out of memory. */
uint32_t xb_sbx_pending_add(struct xb_sbx *x, const struct xb_pending_ops *ops, void *ctx);
/* The same, for the given tag (a re-adopted process's); 0 if taken. */
uint32_t xb_sbx_pending_add_at(struct xb_sbx *x, const struct xb_pending_ops *ops, void *ctx, uint32_t tag);
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

/* ---- secrets (secrets.c; net/secret.h has the why) ---- */
#define XB_SECRETS_PER_TENANT 64
#define XB_SECRETS_TOTAL 4096
/* Takes sec; one of the same name and tenant is replaced (and revoked). */
int xb_core_secret_put(struct xb_core *s, struct xb_secret *sec, struct xb_err *err);
struct xb_secret *xb_core_secret_find(struct xb_core *s, int tenant, const char *name);
int xb_core_secret_delete(struct xb_core *s, int tenant, const char *name, struct xb_err *err);
/* {"secrets": [...]} of a tenant (XB_TENANT_ANY: every tenant), never a value. */
json_t *xb_core_secrets_json(struct xb_core *s, int tenant);
void xb_core_secrets_free(struct xb_core *s);

/* Peers (network.c): net/'s hook that connects one sandbox to another's port. */
void xb_core_peers_open(struct xb_core *s);

/* ---- approvals (approvals.c): what waits for a human ---- */
void xb_core_approvals_open(struct xb_core *s);
void xb_core_approvals_free(struct xb_core *s);
/* {"approvals": [...]} of a tenant (XB_TENANT_ANY: all; an admin's view). */
json_t *xb_core_approvals_json(struct xb_core *s, int tenant);
/* body {"decision", "remember", "value", "hosts", "header"}; *ret the reply. */
int xb_core_approval_decide(struct xb_core *s, int tenant, const char *id, json_t *body, json_t **ret,
                            struct xb_err *err);
/* A pending approval: its handle (to cancel it), its id (what a human
 * decides) and when it times out (Unix ms). */
struct xb_approval_ref {
        uint64_t handle;
        char id[XB_SANDBOX_ID_LEN + 1];
        uint64_t expires_ms;
};
/* Ask a human on sandbox_id's behalf: what code inside asks through its
 * proxy (net/ask.c), and request_secret (ops/op_secrets.c). 0 and *ref:
 * answer(arg, ...) comes exactly once later (a decision, the timeout, the
 * server stopping) unless cancelled; else -errno with why filled. */
int xb_core_approval_ask(struct xb_core *s, const char *sandbox_id, const struct xb_net_ask *q,
                         xb_net_answer_fn *answer, void *arg, struct xb_approval_ref *ref, char *why, size_t whylen);
/* Forget a pending approval unanswered (its requester left). */
void xb_core_approval_cancel(struct xb_core *s, uint64_t handle);
/* The arg of the pending secret approval for sandbox_id and name made with
 * answer, or NULL: a second request for it waits on the first. */
void *xb_core_approval_arg(struct xb_core *s, const char *sandbox_id, const char *name, xb_net_answer_fn *answer);
/* pending, asked, allowed, denied, timed out: counts only. */
void xb_core_approvals_counts(const struct xb_core *s, uint64_t c[5]);
/* names: a JSON array of secret names, or NULL. check: only see that each
 * exists; else attach each to x (its placeholder into x->env). */
int xb_sbx_secrets(struct xb_core *s, struct xb_sbx *x, int tenant, json_t *names, struct xb_err *err);
/* Attach one secret to x now (the placeholder into x->env); ph gets it. */
int xb_sbx_add_secret(struct xb_sbx *x, struct xb_secret *sec, char *ph, size_t phlen, struct xb_err *err);
/* The names of x's bindings with no secret now (new), or NULL: none. */
json_t *xb_sbx_secrets_waiting(const struct xb_sbx *x);
/* x's bindings for its record, [{"name", "placeholder"}] (never a value;
 * new), or NULL: none. */
json_t *xb_sbx_secrets_record(const struct xb_sbx *x);
/* A re-adopted x's bindings from its record: each bound to its tenant's
 * secret of that name if there is one, else waiting. Logs what waits. */
void xb_sbx_secrets_restore(struct xb_sbx *x, json_t *bindings);

/* ---- egress (network.c) ---- */
/* Set x's policy (takes a reference): XB_E_NETWORK_FORBIDDEN above the
 * operator's ceiling, XB_E_NETWORK_UNAVAILABLE on a server without egress
 * (only "none" is accepted there). */
int xb_sbx_set_network(struct xb_sbx *x, struct xb_netpol *p, struct xb_err *err);
/* x gets p, or when p is NULL from's policy (none without egress). */
int xb_sbx_copy_network(struct xb_sbx *x, const struct xb_sbx *from, struct xb_netpol *p, struct xb_err *err);
/* The same check without a sandbox (create validates before it starts one). */
int xb_core_network_check(struct xb_core *s, const struct xb_netpol *p, struct xb_err *err);
/* "K=V" entries a process in x starts with (the proxy's address), before
 * the sandbox's and the request's own; NULL-terminated, static. */
const char *const *xb_sbx_net_env(const struct xb_sbx *x);
/* {mode, allow, deny, proxy, dns, ceiling, ..., stats}. */
json_t *xb_sbx_network_json(const struct xb_sbx *x);
/* The egress log from offset. */
json_t *xb_sbx_network_log(const struct xb_sbx *x, uint64_t offset, unsigned limit);
/* Attach x's egress sockets once its init is ready (sbx.c calls it). */
void xb__sbx_network_ready(struct xb_sbx *x);

/* ---- directory watches (watch.c) ---- */
/* A watch on a directory, done by init with inotify: it sees what every
 * process in the sandbox does. Its owner hears ready once init watches,
 * then events: type "create", "write", "remove", "rename" (the old name of
 * a move; the new one is a create) or "chmod", name the path relative to
 * the directory ("" for itself); type "overflow" (name "") when events were
 * lost. end is the last call: err says why (init's errno at the start, the
 * sandbox gone), NULL when the directory itself went away. */
struct xb_watch;
struct xb_watch_ops {
        void (*ready)(void *ctx);
        void (*event)(void *ctx, const char *type, const char *name);
        void (*end)(void *ctx, const struct xb_err *err);
};
/* Start watching path (absolute, in the sandbox) as uid; NULL with err
 * when it cannot be asked (too many watches, the sandbox gone). */
struct xb_watch *xb_watch_start(struct xb_sbx *x, const char *path, bool recursive, uint32_t uid,
                                const struct xb_watch_ops *ops, void *ctx, struct xb_err *err);
/* Stop it and free it in init; never after end. */
void xb_watch_stop(struct xb_watch *w);

/* Polled watchers, for clients that ask rather than listen: events are
 * buffered (at most XB_WATCHER_EVENTS, then an overflow mark) until taken.
 * Create is done with {"watcher_id"} once init watches, or fails. */
#define XB_WATCHER_EVENTS 1024
struct xb_call;
void xb_watcher_create(struct xb_sbx *x, const char *path, bool recursive, uint32_t uid, struct xb_call *c);
/* The buffered events {"events": [{type, name}], "overflow", "ended"} and
 * the buffer emptied; NULL when there is no such watcher. An ended one
 * (its directory gone) is freed once its last events are taken. */
json_t *xb_watcher_take(struct xb_sbx *x, const char *id);
/* -ENOENT when there is no such watcher. */
int xb_watcher_delete(struct xb_sbx *x, const char *id);
/* At the sandbox's end: free what is left (its watches are gone). */
void xb_watchers_free(struct xb_sbx *x);

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
        int stdin_fd;                 /* > 0: the read end of a pipe the daemon fills (the install
                                       * cache's stream): stdin; the caller keeps and closes it */
        bool tty;                     /* a pty of the sandbox's devpts for 0-2 (stdout holds its output) */
        uint16_t rows, cols;          /* its size */
        const char *tag;              /* the client's name for it, or NULL (listed, xb_proc_find_tag) */
        json_t *req_env;              /* the request's own env {K: V}, listed; borrowed, or NULL */
};

/* Ask init to spawn; NULL with err (its ecode set) when it cannot be asked.
 * Whether the spawn worked comes later (xb_proc_exec, xb_proc_wait_spawn). */
struct xb_proc *xb_proc_start(struct xb_sbx *x, const struct xb_proc_spec *spec, bool background,
                              struct xb_err *err);
struct xb_proc *xb_proc_find(struct xb_sbx *x, pid_t pid);
/* The newest process with this tag, or NULL. */
struct xb_proc *xb_proc_find_tag(struct xb_sbx *x, const char *tag);
/* Whether a background process of x still runs (it keeps x active). */
bool xb_proc_any_running(const struct xb_sbx *x);
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
/* Every process's xb_proc_json, newest first; detail adds what was asked:
 * argv, env (the request's own), cwd and tag. */
json_t *xb_proc_list_json(struct xb_sbx *x, bool detail);
pid_t xb_proc_pid(const struct xb_proc *p);
/* Output from byte offsets: {"stdout", "stderr", offsets, dropped, running}. */
json_t *xb_proc_output_json(const struct xb_proc *p, uint64_t out_off, uint64_t err_off, size_t max);
/* Long-poll: done with output past the offsets as soon as there is some,
 * the process finished, or wait_ms passed (0: at once). */
void xb_proc_read(struct xb_proc *p, struct xb_call *c, uint64_t out_off, uint64_t err_off, size_t max,
                  uint64_t wait_ms);
/* -errno with err (XB_E_STDIN_CLOSED) when stdin is closed or backed up. */
int xb_proc_write_stdin(struct xb_proc *p, const char *data, size_t len, bool close_after, struct xb_err *err);
/* Set a pty's size (TIOCSWINSZ; its foreground group gets SIGWINCH).
 * -ENOTTY with err (XB_E_INVALID) when p has no terminal. */
int xb_proc_resize(struct xb_proc *p, uint16_t rows, uint16_t cols, struct xb_err *err);
/* Stream p's output to c as events "stdout" and "stderr" (a pty's output
 * is stdout) with {"data", "offset"}: data is base64 of the raw bytes when
 * b64, else UTF-8 text with invalid bytes replaced. from_start replays what
 * is kept from offset 0 first; else only what comes from now on. Done with
 * the result once p finishes; cancelling c detaches and leaves p running. */
void xb_proc_attach(struct xb_proc *p, struct xb_call *c, bool from_start, bool b64);
/* Signal p's process group; SIGKILL kills its whole tree. -ESRCH once finished. */
int xb_proc_signal(struct xb_proc *p, int signo);
/* SIGKILL p and every descendant, setsid'd and double-forked ones too,
 * even when p itself has exited already. -ESRCH when there is no tree. */
int xb_proc_kill_tree(struct xb_proc *p);
/* Kill p's tree, and drop p once it has ended. */
void xb_proc_forget(struct xb_proc *p);
bool xb_proc_running(const struct xb_proc *p);
