/* Per-sandbox cgroups on v2, v1 and hybrid hosts: create, limit, attach,
 * kill, read usage, remove. xb_cgroup_sys_open() picks the backend once
 * per process; each operation then branches on it, since a hybrid host
 * mixes both (v1 controllers, a v2 companion for cgroup.kill and
 * cpu.stat). Does not know about namespaces or processes beyond pids to
 * attach and kill. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"

enum xb_cgroup_mode { XB_CG_AUTO, XB_CG_V1, XB_CG_V2 };

/* "auto", "v1" or "v2" (the --cgroup option). */
int xb_cgroup_mode_parse(const char *s, enum xb_cgroup_mode *ret, struct xb_err *err);

/* A group name prefix (--cgroup-prefix): -EINVAL with err set unless it is
 * 1 to XB_CGROUP_PREFIX_MAX of [A-Za-z0-9_.-], not starting with . or -.
 * Groups of one prefix are invisible to another's stale-group reaper. */
#define XB_CGROUP_PREFIX_MAX 31
int xb_cgroup_prefix_check(const char *s, struct xb_err *err);

struct xb_cgroup_limits {
        uint64_t memory;      /* bytes, 0 = none; swap is always 0 */
        uint64_t pids;        /* 0 = none */
        uint32_t cpus_milli;  /* 0 = none */
        bool oom_group;       /* an OOM kills every task in the group */
};

struct xb_cgroup_stats {
        uint64_t cpu_ns;      /* CPU time of every task ever in the group */
        uint64_t memory_peak; /* bytes */
        uint64_t memory_current;
        uint64_t oom_kills;
        uint64_t pids_current;
};

struct xb_cgroup_sys;  /* the hierarchies this process uses */
struct xb_cgroup;      /* one sandbox's group, in every hierarchy */

/* Detect the cgroup layout and open each hierarchy's root. Groups are
 * named "<prefix>-<name>" directly under the roots: no parent group to
 * create per run or to leave behind. On pure v2, a process in a delegated
 * group (systemd's Delegate=yes) or at a cgroup namespace's root uses that
 * group as its root instead, and moves itself to its leaf <own>/daemon
 * (cgroup_v2.c). mode XB_CG_AUTO picks v2 when it has the memory, pids and
 * cpu controllers, else v1. */
int xb_cgroup_sys_open(enum xb_cgroup_mode mode, const char *prefix,
                       struct xb_cgroup_sys **ret, struct xb_err *err);
void xb_cgroup_sys_close(struct xb_cgroup_sys *sys);
/* "v2", "v1", "v1+unified" (v1 controllers, cgroup.kill from v2). */
const char *xb_cgroup_sys_describe(const struct xb_cgroup_sys *sys);
/* Whether kill uses cgroup.kill (else the v1 freezer). Tests use it. */
bool xb_cgroup_sys_has_kill(const struct xb_cgroup_sys *sys);
/* Force the v1 freezer path even where cgroup.kill exists (tests). */
void xb_cgroup_sys_force_freezer(struct xb_cgroup_sys *sys, bool on);

/* Create group `name` with limits, in two steps so that a sandbox start can
 * make its v1 groups while the kernel builds the sandbox's network
 * namespace: xb_cgroup_create makes the v2 group (all of it on v2, the
 * companion that CLONE_INTO_CGROUP needs on hybrid hosts); on v1,
 * xb_cgroup_complete then makes and limits the v1 groups. Nothing may run
 * in the group before it is complete. On v1 the cpu hierarchy is used only
 * when l->cpus_milli is set at creation. Failure removes what was made. */
int xb_cgroup_create(struct xb_cgroup_sys *sys, const char *name,
                     const struct xb_cgroup_limits *l, struct xb_cgroup **ret,
                     struct xb_err *err);
/* The existing group of a sandbox an earlier daemon started (re-adopted):
 * opened, not made, with its limits as l says. */
int xb_cgroup_open(struct xb_cgroup_sys *sys, const char *name, const struct xb_cgroup_limits *l,
                   struct xb_cgroup **ret, struct xb_err *err);
/* Let go of cg, leaving its groups and tasks as they are. */
void xb_cgroup_close(struct xb_cgroup *cg);
int xb_cgroup_complete(struct xb_cgroup *cg, struct xb_err *err);
int xb_cgroup_set_limits(struct xb_cgroup *cg, const struct xb_cgroup_limits *l,
                         struct xb_err *err);
int xb_cgroup_attach(struct xb_cgroup *cg, pid_t pid, struct xb_err *err);

/* Joining a group at birth, without the cost of migrating a process.
 * Writing a pid to cgroup.procs takes a global lock whose first use waits
 * for an RCU grace period (about 20 ms here). Instead the new process is
 * born in the v2 group (clone3 CLONE_INTO_CGROUP, clone_fd) and writes
 * "0" to each v1 hierarchy's `tasks` itself, which moves only the calling
 * thread and skips that lock (kernel/cgroup/cgroup.c,
 * cgroup_procs_write_start). The daemon opens the fds before the clone. */
struct xb_cgroup_join {
        int clone_fd;          /* v2 group for CLONE_INTO_CGROUP, or -1 */
        int tasks[5];          /* v1 `tasks` files, -1 when unused */
};
/* The v2 group for CLONE_INTO_CGROUP (borrowed), or -1. */
int xb_cgroup_clone_fd(struct xb_cgroup *cg);
/* Open the v1 `tasks` files of a complete group for the new process. */
int xb_cgroup_join_open(struct xb_cgroup *cg, struct xb_cgroup_join *j, struct xb_err *err);
/* In the new process, before it unshares its user namespace's credentials. */
int xb_cgroup_join_self(const struct xb_cgroup_join *j);
void xb_cgroup_join_close(struct xb_cgroup_join *j);
/* SIGKILL every task: cgroup.kill where it exists, else freeze, kill, thaw. */
int xb_cgroup_kill(struct xb_cgroup *cg);
/* Freeze (pause) or thaw every task; -EOPNOTSUPP without a freezer. A
 * freeze returns once the kernel says it is done, or -ETIMEDOUT after
 * XB_CGROUP_FREEZE_WAIT_US (the group stays frozen: thaw it). */
#define XB_CGROUP_FREEZE_WAIT_US 200000
int xb_cgroup_freeze(struct xb_cgroup *cg, bool frozen);
int xb_cgroup_stats(struct xb_cgroup *cg, struct xb_cgroup_stats *st);
/* Its stats' oom_kills alone: one file read, not five (each command's start and end). */
uint64_t xb_cgroup_oom_kills(struct xb_cgroup *cg);
/* An fd that becomes readable (POLLPRI on v2 memory.events, eventfd on v1)
 * when an OOM kill happens, or -1 if unavailable. Owned by cg. */
int xb_cgroup_oom_fd(struct xb_cgroup *cg);
/* True when no task is left in the group. */
bool xb_cgroup_empty(struct xb_cgroup *cg);
/* Kill what is left, remove the group everywhere and free cg. Returns
 * -EBUSY (and still frees) if a directory could not be removed. */
int xb_cgroup_destroy(struct xb_cgroup *cg);
/* Kill what is in group `name` (without the prefix) and remove it from
 * every hierarchy; for leftovers of a dead owner. kill false: remove it
 * only where it is empty. Returns how many removed. */
int xb_cgroup_remove_stale(struct xb_cgroup_sys *sys, const char *name, bool kill);
/* Call fn with each existing group's name (without the prefix). */
int xb_cgroup_sys_names(struct xb_cgroup_sys *sys, void (*fn)(const char *name, void *data), void *data);
/* The group's name, for messages. */
const char *xb_cgroup_name(const struct xb_cgroup *cg);
