/* The engine's counters: plain numbers the loop bumps, read by whoever
 * renders them (rest/metrics.c). Durations go into fixed-bucket histograms
 * kept in microseconds; per-tenant counts are indexed by the tenant number
 * the front authenticated. Nothing here knows an exposition format. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "proc/result.h"

/* Upper bounds of the histogram buckets, in seconds (and as labels). */
#define XB_HIST_NB 17
extern const uint64_t xb_hist_bound_us[XB_HIST_NB];
extern const char *const xb_hist_bound_le[XB_HIST_NB];

struct xb_hist {
        uint64_t bucket[XB_HIST_NB + 1];   /* not cumulative; the last is +Inf */
        uint64_t sum_us, count;
};

struct xb_tenant_metrics {
        char name[40];                     /* label: the token file's name=, else the index */
        uint64_t sandboxes;                /* alive now */
        uint64_t sandboxes_created;
        uint64_t execs_by_status[XB_ST_RUNNING + 1];
        uint64_t fds;                      /* the daemon's fds its sandboxes hold (fds.c) */
};

struct xb_metrics {
        uint64_t sandboxes_created, sandboxes_deleted, sandboxes_expired, pool_hits, pool_misses;
        uint64_t pauses;
        uint64_t sandboxes_reaped;               /* of an earlier daemon, at start (records.c) */
        uint64_t sandboxes_adopted;              /* of an earlier daemon, alive and re-adopted (adopt.c) */
        uint64_t execs, execs_by_status[XB_ST_RUNNING + 1];
        struct xb_hist exec_duration;
        struct xb_hist start_hit, start_miss;    /* create until init is ready */
        uint64_t snapshots, forks, layers_created, layers_deleted;   /* the layer store (templates.h) */
        struct xb_hist snapshot_duration, fork_duration;
        struct xb_tenant_metrics *tenant;        /* ntenants of them */
        size_t ntenants;
};

void xb_hist_observe(struct xb_hist *h, uint64_t us);
/* Tenant n's counters, or NULL when there is no such tenant. */
struct xb_tenant_metrics *xb_metrics_tenant(struct xb_metrics *m, int n);
/* The monotonic clock in microseconds. */
uint64_t xb_mono_us(void);
