/* The operation table: see ops.h. */
#include "ops/ops.h"
#include "ops/op_tmpl.h"

#include <string.h>

static const struct xb_op *const areas[] = { xb_ops_sandbox, xb_ops_proc, xb_ops_files, xb_ops_sessions,
                                             xb_ops_events, xb_ops_ports, xb_ops_network, xb_ops_watch,
                                             xb_ops_templates, xb_ops_tbuild, xb_ops_secrets, xb_ops_approvals,
                                             xb_ops_install };

const struct xb_op *
xb_op_find(const char *name)
{
        for (size_t a = 0; name && a < sizeof(areas) / sizeof(areas[0]); a++)
                for (const struct xb_op *op = areas[a]; op->name; op++)
                        if (!strcmp(op->name, name))
                                return op;
        return NULL;
}

void
xb_op_run(const struct xb_op *op, struct xb_core *core, int tenant, json_t *args, struct xb_call *call)
{
        op->run(core, tenant, args, call);
}
