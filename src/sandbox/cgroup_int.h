/* Internals shared by the cgroup backend's files (cgroup.h is the API):
 * cgroup.c (finding the hierarchies, the system's state, stale groups),
 * cgroup_v2.c (a delegated v2 subtree), cgroup_group.c (one sandbox's
 * groups: made, joined, killed, frozen, measured, removed) and
 * cgroup_limits.c (their limits). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <unistd.h>

#include "cgroup.h"

enum { CTL_MEMORY, CTL_PIDS, CTL_CPU, CTL_CPUACCT, CTL_FREEZER, NCTL };
extern const char *const cg_ctl_names[NCTL];

struct xb_cgroup_sys {
        enum xb_cgroup_mode mode;      /* XB_CG_V1 or XB_CG_V2 after detection */
        int v1_root[NCTL];             /* hierarchy roots, -1 if not mounted */
        int v1_alias[NCTL];            /* -1, or an earlier controller co-mounted with it */
        int v2_root;                   /* v2 root: the v2 mode, or the hybrid companion */
        bool v2_has_kill;
        bool force_freezer;
        char prefix[32];
        char desc[32];
};

struct xb_cgroup {
        struct xb_cgroup_sys *sys;
        char name[96];                 /* "<prefix>-<name>" */
        int v1[NCTL];
        int v2;
        int oom_fd;
        int oom_ctl_fd;                /* v1: memory.oom_control, kept for the eventfd */
        struct xb_cgroup_limits limits;
        bool complete;                 /* every hierarchy made and limited */
};

static inline void
close_fd(int *fd)
{
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

/* cgroup_group.c */
/* A fresh group parent/name (a dead owner's leftover of that name is
 * killed and removed first): its directory fd, or -errno. */
int cg_mkgroup(int parent, const char *name);
/* SIGKILL every pid in dir/cgroup.procs; how many. */
int cg_kill_listed(int dir);
/* Close *groupfd and remove root/name, waiting a little for exiting tasks. */
int cg_remove_group(int root, const char *name, int *groupfd);
void cg_sleep_us(long us);

/* cgroup_v2.c */
/* The daemon's own group leaf: <own>/daemon. No "<prefix>-" name, so no
 * reaper takes it for a sandbox's. */
#define XB_CGROUP_DAEMON_LEAF "daemon"
/* The v2 path in /proc/self/cgroup's text, relative ("" for the root):
 * 0, -ENOENT without a v2 line, -ENAMETOOLONG past n or with "..". */
int cg_v2_self(const char *text, char *ret, size_t n);
/* Whether own (relative to the tree's root rootfd) is a subtree the daemon
 * must keep to: delegated to it (trusted.delegate or user.delegate), or
 * the root of a cgroup namespace. False for the host's root. */
bool cg_v2_delegated(int rootfd, const char *own);
/* Make own the parent of the sandboxes' groups: move its processes to
 * own/daemon, enable memory, pids and cpu in its subtree_control. own's
 * directory fd, or -errno with err set. */
int cg_v2_take_subtree(int rootfd, const char *own, struct xb_err *err);
