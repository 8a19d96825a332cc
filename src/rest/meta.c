/* Operations endpoints: liveness, readiness and Prometheus metrics. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "rest/rest.h"

#include "rest/metrics.h"

static void
healthz(struct xb_req *r)
{
        xb_reply_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

/* Draining (after a first SIGTERM) is still 200, as Kubernetes and E2B's
 * orchestrator need to let requests in flight finish: the body says so,
 * and creates get 503. */
static void
readyz(struct xb_req *r)
{
        struct xb_core *s = xb_rest_of(r)->core;
        json_t *body;

        if (s->stopping && !s->draining) {
                xb_reply_error(r, 503, "shutting_down", "retry against another instance", "the server is stopping");
                return;
        }
        /* The server's figures are for admins; anyone may learn it is ready. */
        if (!xb_req_admin(r))
                body = json_pack("{s:s}", "status", "ready");
        else
                body = json_pack("{s:s,s:i,s:i,s:i,s:s}", "status", "ready", "sandboxes", (int)s->nsandboxes,
                                 "pool_ready", (int)s->npool, "pool_target", (int)s->o.pool_size, "cgroups",
                                 xb_cgroup_sys_describe(s->eng->cgroups));
        if (body && s->draining) {
                json_object_set_new(body, "status", json_string("draining"));
                json_object_set_new(body, "draining", json_true());
        }
        xb_reply_json(r, 200, body);
}

const struct xb_route xb_api_routes_meta[] = {
        { "GET", "/healthz", healthz, XB_ROUTE_PUBLIC },
        { "GET", "/readyz", readyz, XB_ROUTE_PUBLIC },
        { "GET", "/metrics", xb_rest_metrics, 0 },
};
const size_t xb_api_nroutes_meta = sizeof(xb_api_routes_meta) / sizeof(xb_api_routes_meta[0]);
