/* Operations endpoints: liveness, readiness and Prometheus metrics. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "rest/rest.h"

static void
healthz(struct xb_req *r)
{
        xb_reply_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

static void
readyz(struct xb_req *r)
{
        struct xb_core *s = xb_rest_of(r)->core;

        if (s->stopping) {
                xb_reply_error(r, 503, "shutting_down", "retry against another instance", "the server is stopping");
                return;
        }
        xb_reply_json(r, 200, json_pack("{s:s,s:i,s:i,s:i,s:s}", "status", "ready", "sandboxes", (int)s->nsandboxes,
                                        "pool_ready", (int)s->npool, "pool_target", (int)s->o.pool_size, "cgroups",
                                        xb_cgroup_sys_describe(s->eng->cgroups)));
}

static void
metrics(struct xb_req *r)
{
        static const char *const le[] = { "1", "2", "5", "10", "25", "50", "100", "250", "500", "1000", "5000", "+Inf" };
        struct xb_core *s = xb_rest_of(r)->core;
        const struct xb_metrics *m = &s->m;
        struct xb_buf b = { .max = 1 << 20 };
        uint64_t cum = 0;

        xb_buf_printf(&b, "# HELP execbox_sandboxes Sandboxes alive now.\n# TYPE execbox_sandboxes gauge\n"
                          "execbox_sandboxes %u\n", s->nsandboxes);
        xb_buf_printf(&b, "# HELP execbox_pool_ready Warm sandboxes waiting to be claimed.\n"
                          "# TYPE execbox_pool_ready gauge\nexecbox_pool_ready %u\n", s->npool);
        xb_buf_printf(&b, "# HELP execbox_sandboxes_created_total Sandboxes created.\n"
                          "# TYPE execbox_sandboxes_created_total counter\nexecbox_sandboxes_created_total %llu\n",
                      (unsigned long long)m->sandboxes_created);
        xb_buf_printf(&b, "# HELP execbox_sandboxes_deleted_total Sandboxes deleted or expired.\n"
                          "# TYPE execbox_sandboxes_deleted_total counter\nexecbox_sandboxes_deleted_total %llu\n",
                      (unsigned long long)m->sandboxes_deleted);
        xb_buf_printf(&b, "# HELP execbox_sandboxes_expired_total Sandboxes reclaimed at the end of their time to live.\n"
                          "# TYPE execbox_sandboxes_expired_total counter\nexecbox_sandboxes_expired_total %llu\n",
                      (unsigned long long)m->sandboxes_expired);
        xb_buf_printf(&b, "# HELP execbox_pool_claims_total Sandbox creations served by the warm pool, or not.\n"
                          "# TYPE execbox_pool_claims_total counter\nexecbox_pool_claims_total{result=\"hit\"} %llu\n"
                          "execbox_pool_claims_total{result=\"miss\"} %llu\n",
                      (unsigned long long)m->pool_hits, (unsigned long long)m->pool_misses);
        xb_buf_printf(&b, "# HELP execbox_execs_total Commands finished, by verdict.\n# TYPE execbox_execs_total counter\n");
        for (int st = XB_ST_OK; st <= XB_ST_KILLED; st++)
                xb_buf_printf(&b, "execbox_execs_total{status=\"%s\"} %llu\n", xb_status_name(st),
                              (unsigned long long)m->execs_by_status[st]);
        xb_buf_printf(&b, "# HELP execbox_exec_duration_ms Wall time of commands.\n"
                          "# TYPE execbox_exec_duration_ms histogram\n");
        for (size_t i = 0; i < sizeof(le) / sizeof(le[0]); i++) {
                cum += m->exec_latency_buckets[i];
                xb_buf_printf(&b, "execbox_exec_duration_ms_bucket{le=\"%s\"} %llu\n", le[i], (unsigned long long)cum);
        }
        xb_buf_printf(&b, "execbox_exec_duration_ms_sum %.3f\nexecbox_exec_duration_ms_count %llu\n",
                      m->exec_latency_sum_us / 1000.0, (unsigned long long)m->exec_latency_count);
        xb_buf_printf(&b, "# HELP execbox_uptime_seconds Seconds since the server started.\n"
                          "# TYPE execbox_uptime_seconds gauge\nexecbox_uptime_seconds %llu\n",
                      (unsigned long long)((xb_now_ms() - s->started_ms) / 1000));
        xb_reply_bytes(r, 200, "text/plain; version=0.0.4", b.data ? b.data : "", b.len);
        xb_buf_free(&b);
}

const struct xb_route xb_api_routes_meta[] = {
        { "GET", "/healthz", healthz, XB_ROUTE_PUBLIC },
        { "GET", "/readyz", readyz, XB_ROUTE_PUBLIC },
        { "GET", "/metrics", metrics, 0 },
};
const size_t xb_api_nroutes_meta = sizeof(xb_api_routes_meta) / sizeof(xb_api_routes_meta[0]);
