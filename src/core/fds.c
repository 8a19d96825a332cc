/* File descriptor budgets. Each background process holds three of the
 * daemon's fds (five with its stream files) and each sandbox a few more,
 * so one tenant could fill the daemon's table and break everyone's creates. Each tenant may hold half
 * of the table less a reserve when there are several (all of it less the
 * reserve when alone), and each sandbox half of its tenant's; the reserve
 * (an eighth, at least 32) stays for connections, other tenants and the
 * admin. Over budget is 429, counted before anything is opened. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/resource.h>

#include "core/core.h"

/* Enough for its XB_PROCS_PER_SANDBOX processes and their stream files:
 * that limit speaks first when the table is large. */
#define FDS_PER_SANDBOX_MAX (XB_PROCS_PER_SANDBOX * (XB_FDS_PER_PROCESS + XB_FDS_PER_SPILL) + XB_FDS_PER_SANDBOX_BASE)

static uint64_t
table_size(void)
{
        struct rlimit rl;

        return getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? rl.rlim_cur : 1024;
}

static void
budgets(const struct xb_core *s, uint64_t *tenant, uint64_t *sandbox)
{
        uint64_t total = table_size(), reserve = total / 8 > 32 ? total / 8 : 32;
        uint64_t usable = total > reserve ? total - reserve : 0;

        *tenant = s->m.ntenants > 1 ? usable / 2 : usable;
        *sandbox = *tenant / 2 < 16 ? 16 : *tenant / 2;
        if (*sandbox > FDS_PER_SANDBOX_MAX)
                *sandbox = FDS_PER_SANDBOX_MAX;
}

static uint64_t *
tenant_count(struct xb_core *s, int tenant)
{
        struct xb_tenant_metrics *tm = xb_metrics_tenant(&s->m, tenant);

        return tm ? &tm->fds : &s->fds_untenanted;
}

int
xb_fds_check(struct xb_core *s, int tenant, const struct xb_sbx *x, unsigned n, struct xb_err *err)
{
        uint64_t tb, sb, held = *tenant_count(s, tenant);

        budgets(s, &tb, &sb);
        if (held + n > tb)
                return xb_err_code(err, XB_E_FD_BUDGET, EMFILE, NULL,
                                   "your sandboxes hold %llu of the server's file descriptors, your budget of %llu",
                                   (unsigned long long)held, (unsigned long long)tb);
        if (x && x->fds + n > sb)
                return xb_err_code(err, XB_E_FD_BUDGET, EMFILE, NULL,
                                   "this sandbox holds %u of the server's file descriptors, its budget of %llu",
                                   x->fds, (unsigned long long)sb);
        return 0;
}

int
xb_fds_charge(struct xb_sbx *x, unsigned n, struct xb_err *err)
{
        int r = xb_fds_check(x->core, x->tenant, x, n, err);

        if (r < 0)
                return r;
        x->fds += n;
        *tenant_count(x->core, x->tenant) += n;
        return 0;
}

void
xb_fds_release(struct xb_sbx *x, unsigned n)
{
        uint64_t *t = tenant_count(x->core, x->tenant);

        x->fds -= n <= x->fds ? n : x->fds;
        *t -= n <= *t ? n : *t;
}
