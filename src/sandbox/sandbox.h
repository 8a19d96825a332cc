/* A sandbox: namespaces, a cgroup, a uid range and a root filesystem, with
 * the execbox init as pid 1 speaking the init protocol on a socket.
 *
 * Theory of operation. xb_sandbox_start() clones a setup child into new
 * user, pid, mount, uts and ipc namespaces, born in the sandbox's v2 cgroup
 * where there is one (CLONE_INTO_CGROUP). The child unshares its network
 * namespace while the daemon makes the v1 groups and writes the uid and gid
 * maps; the daemon then sends one "go" datagram with the v1 `tasks` files,
 * which the child joins itself (cgroup.h says why) before it unshares its
 * cgroup namespace. The child builds the root from
 * the mount plan, pivots into it, brings loopback up, drops capabilities to
 * Docker's set, sets no_new_privs, Landlock and seccomp, and execs the init
 * image (a fresh static program, never a fork of the daemon's memory). From
 * then on the socket (fd 3 in init) carries the init protocol; a setup
 * failure arrives there as one XB_EV_ERROR.
 * Killing init (pid 1) makes the kernel kill the whole pid namespace; the
 * cgroup is killed too, then removed once empty. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "sandbox/cgroup.h"
#include "sandbox/execspec.h"
#include "sandbox/layers.h"
#include "sandbox/limits.h"
#include "sandbox/mountplan.h"
#include "sandbox/seccomp.h"
#include "sandbox/store.h"
#include "sandbox/uidpool.h"

#define XB_SANDBOX_ID_LEN 26          /* 128 random bits in base32 */
#define XB_USER_UID 1000u             /* "user", who owns /home/user */

enum xb_layers_mode { XB_LAYERS_NONE, XB_LAYERS_DISK, XB_LAYERS_MEMORY };

struct xb_engine_opts {
        enum xb_cgroup_mode cgroup_mode;
        const char *cgroup_parent;    /* default "execbox" */
        const char *runtime_dir;      /* default XB_RUNTIME_DIR */
        const char *const *allow_mounts;  /* resolved host dirs callers may bind */
        size_t nallow;
        /* Layered roots: XB_LAYERS_NONE keeps the tmpfs image; DISK opens
         * the btrfs store of state_dir (an image of store_size bytes). */
        int layers;                   /* enum xb_layers_mode */
        const char *state_dir;
        uint64_t store_size;
        /* Who files in a workspace (the caller's binds, id-mapped with a
         * layered root) belong to on the host; unset: the directory's owner. */
        bool mount_owner_set;
        uint32_t mount_uid, mount_gid;
        unsigned max_sandboxes;       /* the host's pools are raised for this many (pools.h); 0 not */
        const char *extra_ca_pem;     /* trusted inside besides the host's CAs (the egress CA), or NULL */
};

/* What every sandbox of one process shares: built once. */
struct xb_engine {
        struct xb_cgroup_sys *cgroups;
        struct xb_uidpool uids;
        struct xb_seccomp seccomp;
        struct xb_host_layout layout;
        int runtime_fd;               /* XB_RUNTIME_DIR */
        int init_fd;                  /* the init image, for execveat */
        char *etc_dir;                /* the prepared /etc view */
        char *base_root;              /* the base root skeleton (layers.h); NULL: no layers */
        char *dpkg_fix;               /* the layer over host /var/lib/dpkg (layers.h) */
        struct xb_store *store;       /* the disk layers; NULL: none */
        char store_error[256];        /* why there is no store although asked for (the read-only image instead) */
        bool mount_owner_set;         /* xb_engine_opts */
        uint32_t mount_uid, mount_gid;
        char **allow;
        size_t nallow;
        uint64_t sigpending;          /* each sandbox's RLIMIT_SIGPENDING (pools.h) */
        char pools_warning[240];      /* why a host pool could not be raised, or "" */
};

struct xb_sandbox_config {
        struct xb_limits limits;      /* memory, pids, cpus_milli, disk apply here */
        const struct xb_bind *binds;  /* unresolved; checked against the engine allowlist */
        size_t nbinds;
        bool oom_group;               /* an OOM kills the whole sandbox (one-shot runs) */
        /* A one-shot run's command, started by the setup child itself while
         * init starts (saves init a round trip and a fork). Init reports it
         * under first_tag like a spawned command; its std fds are the
         * caller's, which the caller closes after start. NULL: none. */
        const struct xb_exec_spec *first;
        uint32_t first_tag;
        /* Bind the egress sockets inside (xb_sandbox_take_net): the daemon's
         * proxy and DNS, which processes reach on loopback. */
        bool network;
        /* A layered root (the engine must have layers); NULL: the tmpfs image. */
        const struct xb_root_spec *root;
        /* With a layered root, binds are id-mapped: this inside uid (the
         * sandbox's default user) acts as each directory's owner. */
        uint32_t bind_uid;
};

struct xb_sandbox {
        char id[XB_SANDBOX_ID_LEN + 1];
        struct xb_engine *eng;
        pid_t pid;                    /* init, in the host's pid namespace */
        int pidfd;
        int sock;                     /* init protocol, SOCK_SEQPACKET, non-blocking */
        struct xb_cgroup *cg;
        uint32_t uid_slot;
        uid_t host_uid_base;
        bool reaped;
        int net_sock;                 /* the setup child sends the egress sockets here; -1: none */
        bool has_layer;               /* the store's sbx/<id> is ours: deleted with us */
        uint64_t disk;                /* its layer's limit */
        bool disk_clamped;            /* xb_sandbox_disk_clamp: no more writes to its layer */
        int slot_fd;                  /* armed: the uid slot's own lock (init keeps a dup), or -1 */
        bool adopted;                 /* an earlier daemon's: not our child (adopt.c) */
};

int xb_engine_open(const struct xb_engine_opts *o, struct xb_engine **ret, struct xb_err *err);
void xb_engine_close(struct xb_engine *e);
/* Remove the cgroups of sandboxes whose owner died (killed -9): a group
 * "u<slot>" whose uid slot no live process holds. Housekeeping that no
 * start depends on: callers run it when idle (serve at start-up, run
 * while its sandbox sets itself up). */
int xb_engine_reap_stale(struct xb_engine *e);
/* The cgroup of uid slot `slot` of a sandbox known to have ended (its
 * record outlived it), even when the slot is in use again elsewhere. */
void xb_engine_reap_slot(struct xb_engine *e, uint32_t slot);

/* Start a sandbox; returns once the setup child has been released (init
 * announces itself with XB_EV_READY on sb->sock). */
int xb_sandbox_start(struct xb_engine *e, const struct xb_sandbox_config *cfg,
                     struct xb_sandbox **ret, struct xb_err *err);
/* The egress sockets the setup child bound inside the sandbox's network
 * namespace: fds[0] TCP 127.0.0.1:3128 listening, fds[1] UDP
 * 127.0.0.1:53, fds[2] TCP 127.0.0.1:53 listening; the caller owns them.
 * Call once init is ready (they are sent before it starts); -EAGAIN if
 * they have not come, -ENOENT when the sandbox has none. */
int xb_sandbox_take_net(struct xb_sandbox *sb, int fds[3]);
/* SIGKILL init and every task in the cgroup. Idempotent. */
void xb_sandbox_kill(struct xb_sandbox *sb);
/* SIGKILL init and reap it. Its pid namespace dies with it (and no other
 * task can be in the sandbox's cgroup), so this ends the whole sandbox
 * without the cgroup-wide kill; for a sandbox whose work is done. */
void xb_sandbox_end(struct xb_sandbox *sb);
/* Reap init: returns 1 once reaped, 0 if still running (wait=false). */
int xb_sandbox_reap(struct xb_sandbox *sb, bool wait);
/* Usage of the whole sandbox so far. */
int xb_sandbox_stats(struct xb_sandbox *sb, struct xb_cgroup_stats *st);
uint64_t xb_sandbox_oom_kills(struct xb_sandbox *sb);
/* Pause (freeze) or resume every task of the sandbox. */
int xb_sandbox_freeze(struct xb_sandbox *sb, bool frozen);
/* Kill, reap, remove the cgroup, free the uid range and sb. -EBUSY if the
 * cgroup could not be removed (logged by callers; nothing else leaks). */
int xb_sandbox_destroy(struct xb_sandbox *sb);

/* Lift the disk limit of the sandbox's layer by a little (on) or put it
 * back (off), for the daemon's own clean-up at the limit; -ENOENT without
 * a disk layer. */
int xb_sandbox_disk_slack(struct xb_sandbox *sb, bool on);
/* Stop (on) every new write to the sandbox's layer, whatever its limit
 * (it gets EDQUOT; reads and deletes go on), or give the limit back (off):
 * the state directory's filesystem is nearly full (core/diskguard.c).
 * -ENOENT without a disk layer. */
int xb_sandbox_disk_clamp(struct xb_sandbox *sb, bool on);

/* How a writer treats what it copies; NULL: as it is. */
struct xb_writer_opts {
        unsigned flags;
        uint64_t max_out;             /* XB_WRITER_GUNZIP: decoded bytes at most (then EFBIG) */
};
#define XB_WRITER_GUNZIP 0x1u         /* the pipe carries gzip: decode it into fd */

/* A writer in sb's cgroup (writer.c) that copies a pipe into fd, so that
 * what it writes is charged to the sandbox: *ret_wr is the pipe's
 * non-blocking write end (the caller's), *ret_pidfd the writer. Close
 * ret_wr, then xb_sandbox_writer_wait, whose result is the writer's
 * errno: with XB_WRITER_GUNZIP also EBADMSG (corrupt gzip), ENODATA
 * (cut short) and EFBIG (over max_out). */
int xb_sandbox_writer(struct xb_sandbox *sb, int fd, const struct xb_writer_opts *o, int *ret_wr, int *ret_pidfd,
                      struct xb_err *err);
/* Reap the writer (closes pidfd), waiting wait_ms for it to finish and
 * as long again after a SIGKILL: 0, the errno it stopped on (ETIMEDOUT:
 * it was too slow and was killed), -1 if something else killed it (the
 * sandbox's OOM killer, or the sandbox's end), or -2 if it would not die
 * (left a zombie, never blocking the caller). */
int xb_sandbox_writer_wait(int pidfd, int wait_ms);

/* adopt.c: outliving the daemon. Arm sb's init to wait for the next
 * daemon (grace_ms) on a socket bound at path (in a 0700 directory of the
 * state dir), proving secret; with the slot's lock and the egress
 * sockets net (nnet, dups are sent). */
int xb_sandbox_arm(struct xb_sandbox *sb, const char *path, const char *secret, uint64_t grace_ms, const int *net,
                   size_t nnet, struct xb_err *err);
struct xb_adopt_spec {
        const char *id, *path, *secret;
        pid_t pid;                    /* init, as the record says */
        uint32_t slot;
        struct xb_cgroup_limits limits;
        uint64_t disk;
        uint32_t max_tag;             /* out: the highest tag init still uses */
};
/* Re-attach to the init of an earlier daemon's sandbox: connect, prove
 * the secret, take back the slot (KEPT); net gets the egress sockets
 * (*nnet of them, at most 3). sb->sock is left blocking (2 s timeouts) for
 * the caller to read the HELD messages; then it sets it non-blocking. */
int xb_sandbox_adopt(struct xb_engine *e, struct xb_adopt_spec *a, int net[3], size_t *nnet,
                     struct xb_sandbox **ret, struct xb_err *err);

/* Fill id with XB_SANDBOX_ID_LEN random [a-z2-7] characters and a NUL. */
int xb_random_id(char *id, size_t len);
