/* Histogram buckets and per-tenant lookups for struct xb_metrics. */
#define _GNU_SOURCE
#include <time.h>

#include "core/metrics.h"

/* Past 5 s up to 300 s: commands and cold starts can be slow, and a
 * histogram that stops at 5 s says nothing about them. */
const uint64_t xb_hist_bound_us[XB_HIST_NB] = {
        1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
        1000000, 2500000, 5000000, 10000000, 30000000, 60000000, 120000000, 300000000,
};
const char *const xb_hist_bound_le[XB_HIST_NB] = {
        "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5",
        "1", "2.5", "5", "10", "30", "60", "120", "300",
};

void
xb_hist_observe(struct xb_hist *h, uint64_t us)
{
        size_t i = 0;

        while (i < XB_HIST_NB && us > xb_hist_bound_us[i])
                i++;
        h->bucket[i]++;
        h->count++;
        h->sum_us += us;
}

struct xb_tenant_metrics *
xb_metrics_tenant(struct xb_metrics *m, int n)
{
        return n >= 0 && (size_t)n < m->ntenants ? &m->tenant[n] : NULL;
}

uint64_t
xb_mono_us(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}
