/* The engine's life: open on a loop, stop taking sandboxes, close. See
 * core.h. */
#include "core/core.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "core/audit.h"
#include "proto/wire.h"
#include "net/tls.h"
#include "sandbox/etcview.h"

int
xb_core_open(const struct xb_core_opts *o, struct xb_loop *loop, struct xb_core **ret, struct xb_err *err)
{
        struct xb_engine_opts eo = { .cgroup_mode = o->cgroup_mode, .cgroup_parent = o->cgroup_prefix,
                                     .allow_mounts = o->allow_mounts,
                                     .nallow = o->nallow, .layers = o->layers, .state_dir = o->state_dir,
                                     .store_size = o->store_size, .mount_owner_set = o->mount_owner_set,
                                     .mount_uid = o->mount_uid, .mount_gid = o->mount_gid,
                                     .max_sandboxes = o->max_sandboxes ? o->max_sandboxes
                                                                       : XB_SERVER_MAX_SANDBOXES_DEFAULT };
        struct xb_core *c = calloc(1, sizeof(*c));
        int r;

        if (o->network && o->net.tls)
                eo.extra_ca_pem = xb_tls_ca_pem(o->net.tls);

        if (!c || !(c->rxbuf = malloc(XB_MSG_MAX))) {
                free(c);
                return xb_err_code(err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
        }
        c->o = *o;
        if (!c->o.max_sandboxes)
                c->o.max_sandboxes = XB_SERVER_MAX_SANDBOXES_DEFAULT;
        if (!c->o.output_budget)
                c->o.output_budget = XB_OUTPUT_BUDGET_DEFAULT;
        c->loop = loop;
        c->started_ms = xb_now_ms();
        if ((r = xb_engine_open(&eo, &c->eng, err)) < 0) {
                free(c->rxbuf);
                free(c);
                return r;
        }
        c->audits = xb_audits_new(loop, o->audit_keep_ms, o->audit_max, XB_AUDIT_BYTES);
        if (!c->audits) {
                xb_engine_close(c->eng);
                free(c->rxbuf);
                free(c);
                return xb_err_code(err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
        }
        if (c->eng->pools_warning[0])
                xb_warn("sandboxes share a kernel pool with each other: %s", c->eng->pools_warning);
        if (c->eng->store_error[0])
                xb_warn("no layer store (%s): sandboxes get the read-only image of --layers none, without installs, "
                        "snapshots or forks",
                        c->eng->store_error);
        if ((r = xb_templates_open(c, err)) < 0) {
                xb_audits_free(c->audits);
                xb_engine_close(c->eng);
                free(c->rxbuf);
                free(c);
                return r;
        }
        if ((r = xb_inst_open(c, o->install_cache_size, err)) < 0)
                xb_warn("no install cache: %s", err->msg);
        if (o->network && (r = xb_netsys_open(&o->net, loop, &c->net, err)) < 0) {
                xb_inst_close(c);
                xb_templates_close(c);
                xb_audits_free(c->audits);
                xb_engine_close(c->eng);
                free(c->rxbuf);
                free(c);
                return r;
        }
        /* Records of sandboxes an earlier daemon left; their writable
         * layers went with xb_templates_open, their cgroups go next. */
        if ((r = xb_records_open(c)) < 0)
                xb_warn("sandbox records and tombstones are not kept in %s: %s", o->state_dir, strerror(-r));
        xb_core_approvals_open(c);
        xb_core_peers_open(c);
        /* Armed sandboxes that outlived the earlier daemon: before the
         * stale-cgroup sweep, which spares the slots they hold. */
        xb_adopt_all(c);
        /* Cgroups of an earlier execbox that died without cleaning up. */
        xb_engine_reap_stale(c->eng);
        xb_pool_fill(c);
        xb_diskguard_start(c);
        *ret = c;
        return 0;
}

void
xb_core_stop(struct xb_core *c)
{
        if (c)
                c->stopping = true;
}

void
xb_core_drain(struct xb_core *c)
{
        if (!c)
                return;
        c->draining = true;
        xb_timer_stop(&c->pool_timer);
}

static void
drain_timeout(struct xb_timer *t)
{
        struct xb_core *c = t->data;

        xb_warn("%u sandboxes did not stop within 5 s", c->ndying);
        xb_loop_stop(c->loop);
}

void
xb_core_close(struct xb_core *c)
{
        struct xb_timer t = { 0 };

        if (!c)
                return;
        c->stopping = true;
        xb_timer_stop(&c->pool_timer);
        xb_diskguard_stop(c);
        xb_sbx_destroy_all(c);
        /* Run the loop until every dying sandbox is reaped (sbx.c stops it
         * when the last one goes), for at most 5 s. */
        if (c->ndying) {
                xb_timer_start(c->loop, &t, 5000, drain_timeout, c);
                xb_loop_run(c->loop);
                xb_timer_stop(&t);
        }
        xb_inst_close(c);
        xb_templates_close(c);
        xb_records_close(c);
        /* Every sandbox ended: the /etc views of this server's egress CA go too. */
        if (c->ndying == 0 && !c->nleft && c->o.network && c->o.net.tls)
                xb_etcview_remove_ca(c->eng->runtime_fd, xb_tls_ca_pem(c->o.net.tls));
        xb_engine_close(c->eng);
        xb_audits_free(c->audits);
        xb_core_approvals_free(c);
        xb_core_secrets_free(c);
        xb_netsys_close(c->net);
        free(c->m.tenant);
        free(c->quota_use);
        free(c->rxbuf);
        free(c);
}
