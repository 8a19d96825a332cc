/* GET /metrics in the Prometheus text format (version 0.0.4): base units,
 * counters ending in _total, histograms from 1 ms to 300 s, and the
 * standard process_* figures. An admin (or a server without auth) sees
 * the server; a tenant sees only its own sandboxes and commands, under the
 * same names, and no other tenant's labels. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/procself.h"
#include "rest/rest.h"
#include "rest/metrics.h"
#include "core/instcache.h"
#include "core/templates.h"

static void
family(struct xb_buf *b, const char *name, const char *type, const char *help)
{
        xb_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
counter(struct xb_buf *b, const char *name, const char *help, uint64_t v)
{
        family(b, name, "counter", help);
        xb_buf_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

static void
gauge(struct xb_buf *b, const char *name, const char *help, double v)
{
        family(b, name, "gauge", help);
        xb_buf_printf(b, "%s %.17g\n", name, v);
}

/* One series of a histogram family; labels is "" or `k="v",`. */
static void
hist(struct xb_buf *b, const char *name, const char *labels, const struct xb_hist *h)
{
        uint64_t cum = 0;

        for (size_t i = 0; i <= XB_HIST_NB; i++) {
                cum += h->bucket[i];
                xb_buf_printf(b, "%s_bucket{%sle=\"%s\"} %llu\n", name, labels,
                              i < XB_HIST_NB ? xb_hist_bound_le[i] : "+Inf", (unsigned long long)cum);
        }
        if (labels[0])
                xb_buf_printf(b, "%s_sum{%.*s} %.6f\n%s_count{%.*s} %llu\n", name, (int)strlen(labels) - 1, labels,
                              h->sum_us / 1e6, name, (int)strlen(labels) - 1, labels, (unsigned long long)h->count);
        else
                xb_buf_printf(b, "%s_sum %.6f\n%s_count %llu\n", name, h->sum_us / 1e6, name,
                              (unsigned long long)h->count);
}

static void
execs(struct xb_buf *b, const char *name, const char *tenant, const uint64_t *by_status)
{
        for (int st = XB_ST_OK; st <= XB_ST_KILLED; st++)
                xb_buf_printf(b, "%s{%s%s%sstatus=\"%s\"} %llu\n", name, tenant ? "tenant=\"" : "", tenant ? tenant : "",
                              tenant ? "\"," : "", xb_status_name(st), (unsigned long long)by_status[st]);
}

/* The per-tenant families: every tenant for an admin (tm == NULL), else one. */
/* The shared package cache (net/pkgcache.h): the operator's, not a tenant's. */
static void
package_cache(struct xb_buf *b, const struct xb_pkgcache_stats *pc)
{
        if (!pc)
                return;
        counter(b, "execbox_package_cache_hits_total", "Package downloads served from the shared package cache.",
                pc->hits);
        counter(b, "execbox_package_cache_misses_total",
                "Cacheable package downloads fetched upstream (and stored when whole).", pc->misses);
        family(b, "execbox_package_cache_bytes_total", "counter",
               "Bytes of the package cache: served from it to sandboxes, and stored into it.");
        xb_buf_printf(b, "execbox_package_cache_bytes_total{direction=\"served\"} %llu\n"
                         "execbox_package_cache_bytes_total{direction=\"stored\"} %llu\n",
                      (unsigned long long)pc->bytes_served, (unsigned long long)pc->bytes_stored);
        counter(b, "execbox_package_cache_evictions_total", "Package cache entries evicted, least recently used first.",
                pc->evictions);
        gauge(b, "execbox_package_cache_bytes", "Bytes the package cache holds now.", (double)pc->size);
        gauge(b, "execbox_package_cache_entries", "URLs the package cache holds now.", (double)pc->entries);
        gauge(b, "execbox_package_cache_max_bytes", "The package cache's bound (--package-cache-size).",
              (double)pc->max);
}

/* The shared install cache (core/instcache.h): the operator's too. */
static void
install_cache(struct xb_buf *b, const struct xb_inst_stats *ic)
{
        if (!ic)
                return;
        counter(b, "execbox_install_cache_hits_total", "Installs applied from the shared install cache (no dpkg run).",
                ic->hits);
        counter(b, "execbox_install_cache_misses_total", "Installs that ran apt-get install (and were kept).",
                ic->misses);
        family(b, "execbox_install_cache_bytes_total", "counter",
               "Bytes of the install cache: stored into it, and applied from it into sandboxes.");
        xb_buf_printf(b, "execbox_install_cache_bytes_total{direction=\"stored\"} %llu\n"
                         "execbox_install_cache_bytes_total{direction=\"applied\"} %llu\n",
                      (unsigned long long)ic->bytes_stored, (unsigned long long)ic->bytes_applied);
        counter(b, "execbox_install_cache_evictions_total", "Install cache entries evicted, least recently used first.",
                ic->evictions);
        gauge(b, "execbox_install_cache_bytes", "Bytes the install cache's layers hold now.", (double)ic->size);
        gauge(b, "execbox_install_cache_entries", "Installs the install cache holds now.", (double)ic->entries);
        gauge(b, "execbox_install_cache_max_bytes", "The install cache's bound (--install-cache-size).",
              (double)ic->max);
}

static void
tenants(struct xb_buf *b, const struct xb_metrics *m, const struct xb_tenant_metrics *only)
{
        size_t n = only ? 1 : m->ntenants;
        const struct xb_tenant_metrics *t = only ? only : m->tenant;

        family(b, "execbox_tenant_sandboxes", "gauge", "Sandboxes alive now, by tenant.");
        for (size_t i = 0; i < n; i++)
                xb_buf_printf(b, "execbox_tenant_sandboxes{tenant=\"%s\"} %llu\n", t[i].name,
                              (unsigned long long)t[i].sandboxes);
        family(b, "execbox_tenant_sandboxes_created_total", "counter", "Sandboxes created, by tenant.");
        for (size_t i = 0; i < n; i++)
                xb_buf_printf(b, "execbox_tenant_sandboxes_created_total{tenant=\"%s\"} %llu\n", t[i].name,
                              (unsigned long long)t[i].sandboxes_created);
        family(b, "execbox_tenant_execs_total", "counter", "Commands finished, by tenant and verdict.");
        for (size_t i = 0; i < n; i++)
                execs(b, "execbox_tenant_execs_total", t[i].name, t[i].execs_by_status);
}

/* Each tenant's quotas (core/quota.h) that are set: tenant's own, or all for an admin (-1). */
static void
quotas(struct xb_buf *b, const struct xb_core *s, int only)
{
        static const char *const res[] = { "sandboxes", "execs", "rate_per_minute", "memory_bytes", "disk_bytes" };
        bool any = false;

        for (size_t i = 0; i < s->o.nquota && i < s->m.ntenants; i++) {
                const struct xb_quota *q = &s->o.quota[i];
                const uint64_t v[] = { q->sandboxes, q->execs, q->rate, q->memory, q->disk };

                if (only >= 0 && (size_t)only != i)
                        continue;
                for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
                        if (!v[k])
                                continue;
                        if (!any)
                                family(b, "execbox_tenant_quota", "gauge",
                                       "A tenant's quota, by resource (none: no quota of that kind).");
                        any = true;
                        xb_buf_printf(b, "execbox_tenant_quota{tenant=\"%s\",resource=\"%s\"} %llu\n",
                                      s->m.tenant[i].name, res[k], (unsigned long long)v[k]);
                }
        }
}

static void
one_request_count(void *data, const char *method, const char *pattern, unsigned status, uint64_t n)
{
        char code[16];

        snprintf(code, sizeof(code), status ? "%u" : "other", status);
        xb_buf_printf(data, "execbox_http_requests_total{method=\"%s\",route=\"%s\",status=\"%s\"} %llu\n", method,
                      pattern, code, (unsigned long long)n);
}

static void
process(struct xb_buf *b)
{
        struct xb_procself p;

        if (xb_procself_read(&p) < 0)
                return;
        family(b, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
        xb_buf_printf(b, "process_cpu_seconds_total %.2f\n", p.cpu_seconds);
        gauge(b, "process_resident_memory_bytes", "Resident memory size in bytes.", (double)p.rss_bytes);
        gauge(b, "process_virtual_memory_bytes", "Virtual memory size in bytes.", (double)p.vsize_bytes);
        gauge(b, "process_open_fds", "Number of open file descriptors.", (double)p.open_fds);
        gauge(b, "process_max_fds", "Maximum number of open file descriptors.", (double)p.max_fds);
        gauge(b, "process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
              p.start_time_seconds);
}

/* The exposition for tenant (admin: every figure). Fills b. */
static void
render(struct xb_buf *b, struct xb_rest *rs, bool admin, int tenant)
{
        struct xb_core *s = rs->core;
        const struct xb_metrics *m = &s->m;
        const struct xb_tenant_metrics *tm = admin ? NULL : xb_metrics_tenant(&s->m, tenant);
        uint64_t missing, invalid;

        if (!admin && !tm)
                return;
        gauge(b, "execbox_sandboxes", "Sandboxes alive now.", (double)(tm ? tm->sandboxes : s->nsandboxes));
        counter(b, "execbox_sandboxes_created_total", "Sandboxes created.",
                tm ? tm->sandboxes_created : m->sandboxes_created);
        family(b, "execbox_execs_total", "counter", "Commands finished, by verdict.");
        execs(b, "execbox_execs_total", NULL, tm ? tm->execs_by_status : m->execs_by_status);
        tenants(b, m, tm);
        quotas(b, s, tm ? tenant : -1);
        if (tm)
                return;
        gauge(b, "execbox_pool_ready", "Warm sandboxes waiting to be claimed.", s->npool);
        gauge(b, "execbox_sandboxes_paused", "Sandboxes paused now (frozen: no CPU, memory kept).", s->npaused);
        counter(b, "execbox_sandbox_pauses_total", "Sandbox pauses, by a client or at an idle timeout.", m->pauses);
        counter(b, "execbox_sandboxes_deleted_total", "Sandboxes deleted or expired.", m->sandboxes_deleted);
        counter(b, "execbox_sandboxes_adopted_total",
                "Sandboxes of an earlier daemon that outlived it, re-adopted at start.", m->sandboxes_adopted);
        counter(b, "execbox_sandboxes_reaped_total",
                "Sandboxes of an earlier daemon that did not survive its end, reaped at start.", m->sandboxes_reaped);
        counter(b, "execbox_sandboxes_expired_total", "Sandboxes reclaimed at the end of their time to live.",
                m->sandboxes_expired);
        family(b, "execbox_pool_claims_total", "counter", "Sandbox creations served by the warm pool, or not.");
        xb_buf_printf(b, "execbox_pool_claims_total{result=\"hit\"} %llu\nexecbox_pool_claims_total{result=\"miss\"} %llu\n",
                      (unsigned long long)m->pool_hits, (unsigned long long)m->pool_misses);
        family(b, "execbox_sandbox_start_duration_seconds", "histogram",
               "Time from a create request until the sandbox's init is ready, by warm pool hit or miss.");
        hist(b, "execbox_sandbox_start_duration_seconds", "pool=\"hit\",", &m->start_hit);
        hist(b, "execbox_sandbox_start_duration_seconds", "pool=\"miss\",", &m->start_miss);
        if (s->net) {
                const struct xb_netsys_stats *ns = xb_netsys_stats(s->net);

                family(b, "execbox_egress_connections_total", "counter",
                       "Egress connections from sandboxes, by the policy's decision.");
                xb_buf_printf(b, "execbox_egress_connections_total{decision=\"allowed\"} %llu\n"
                                 "execbox_egress_connections_total{decision=\"denied\"} %llu\n",
                              (unsigned long long)ns->allowed, (unsigned long long)ns->denied);
                gauge(b, "execbox_egress_connections", "Egress connections open now.", (double)ns->conns_open);
                family(b, "execbox_egress_bytes_total", "counter",
                       "Bytes through the egress proxy: out of sandboxes, and back in.");
                xb_buf_printf(b, "execbox_egress_bytes_total{direction=\"out\"} %llu\n"
                                 "execbox_egress_bytes_total{direction=\"in\"} %llu\n",
                              (unsigned long long)ns->bytes_out, (unsigned long long)ns->bytes_in);
                family(b, "execbox_egress_dns_queries_total", "counter",
                       "DNS queries from sandboxes: relayed for an allowed name, or refused.");
                xb_buf_printf(b, "execbox_egress_dns_queries_total{answer=\"relayed\"} %llu\n"
                                 "execbox_egress_dns_queries_total{answer=\"refused\"} %llu\n",
                              (unsigned long long)ns->dns_answered, (unsigned long long)ns->dns_refused);
                family(b, "execbox_egress_peer_connections_total", "counter",
                       "Connections from one sandbox to another's port (network.peers), by decision.");
                xb_buf_printf(b, "execbox_egress_peer_connections_total{decision=\"allowed\"} %llu\n"
                                 "execbox_egress_peer_connections_total{decision=\"denied\"} %llu\n",
                              (unsigned long long)ns->peer_allowed, (unsigned long long)ns->peer_denied);
                package_cache(b, xb_netsys_pkgcache(s->net));
                {
                        uint64_t ap[5];

                        xb_core_approvals_counts(s, ap);
                        gauge(b, "execbox_secrets", "Secrets stored (every tenant's; never their values).",
                              (double)s->nsecrets);
                        counter(b, "execbox_secret_injections_total",
                                "Requests the egress proxy put a secret into (counted per secret).",
                                xb_net_injections());
                        counter(b, "execbox_egress_tls_intercepted_total",
                                "TLS connections to secrets' hosts the proxy terminated.", ns->tls_intercepted);
                        gauge(b, "execbox_approvals_pending", "Requests waiting for a human now.", (double)ap[0]);
                        family(b, "execbox_approvals_total", "counter",
                               "Requests that waited for a human, by outcome.");
                        xb_buf_printf(b, "execbox_approvals_total{outcome=\"asked\"} %llu\n"
                                         "execbox_approvals_total{outcome=\"allowed\"} %llu\n"
                                         "execbox_approvals_total{outcome=\"denied\"} %llu\n"
                                         "execbox_approvals_total{outcome=\"timed_out\"} %llu\n",
                                      (unsigned long long)ap[1], (unsigned long long)ap[2],
                                      (unsigned long long)ap[3], (unsigned long long)ap[4]);
                }
        }
        if (s->eng->store) {
                size_t nt = 0;

                for (struct xb_template *t = s->templates; t; t = t->next)
                        nt++;
                gauge(b, "execbox_templates", "Templates besides base.", (double)nt);
                install_cache(b, xb_inst_stats(s));
                counter(b, "execbox_snapshots_total", "Sandboxes snapshotted into templates.", m->snapshots);
                counter(b, "execbox_forks_total", "Fork requests served.", m->forks);
                counter(b, "execbox_layers_created_total", "Read-only layers added to the store.", m->layers_created);
                counter(b, "execbox_layers_deleted_total", "Read-only layers garbage-collected.", m->layers_deleted);
                family(b, "execbox_snapshot_duration_seconds", "histogram", "Time to snapshot a sandbox, freeze included.");
                hist(b, "execbox_snapshot_duration_seconds", "", &m->snapshot_duration);
                family(b, "execbox_fork_duration_seconds", "histogram", "Time to fork a sandbox N times, starts included.");
                hist(b, "execbox_fork_duration_seconds", "", &m->fork_duration);
        }
        family(b, "execbox_exec_duration_seconds", "histogram", "Wall time of commands.");
        hist(b, "execbox_exec_duration_seconds", "", &m->exec_duration);
        if (rs->http) {
                family(b, "execbox_http_requests_total", "counter", "HTTP replies by route template and status.");
                xb_http_foreach_count(rs->http, one_request_count, b);
                xb_http_auth_failures(rs->http, &missing, &invalid);
                family(b, "execbox_auth_failures_total", "counter", "Requests refused for a missing or wrong token.");
                xb_buf_printf(b, "execbox_auth_failures_total{reason=\"missing\"} %llu\n"
                                 "execbox_auth_failures_total{reason=\"invalid\"} %llu\n",
                              (unsigned long long)missing, (unsigned long long)invalid);
        }
        gauge(b, "execbox_uptime_seconds", "Seconds since the server started.",
              (double)((xb_now_ms() - s->started_ms) / 1000));
        process(b);
}

void
xb_rest_metrics(struct xb_req *r)
{
        struct xb_buf b = { .max = 1 << 20 };

        render(&b, xb_rest_of(r), xb_req_admin(r), xb_req_tenant(r));
        xb_reply_bytes(r, 200, "text/plain; version=0.0.4; charset=utf-8", b.data ? b.data : "", b.len);
        xb_buf_free(&b);
}
