/* The operation table: one entry per engine operation, shared by every
 * protocol. An operation takes JSON arguments (borrowed: copy what you
 * keep), validates them with ops/jsonv.h, and reports through its call
 * (core/call.h): a JSON result, or an error code with a message. It never
 * knows which protocol asked.
 *
 * Arguments are one flat object. REST fills it from the path parameters
 * (by their names in the route template: "id", "pid", "sid", ...), the
 * query and the JSON body; MCP passes its tool arguments as the catalog
 * maps them. */
#pragma once
#include <jansson.h>
#include <stddef.h>

#include "core/call.h"

struct xb_core;

struct xb_op {
        const char *name;   /* the operationId: "run_command", "get_process", ... */
        void (*run)(struct xb_core *core, int tenant, json_t *args, struct xb_call *call);
};

/* NULL for an unknown name. */
const struct xb_op *xb_op_find(const char *name);
/* Run op; call ends (done or fail) now or later. */
void xb_op_run(const struct xb_op *op, struct xb_core *core, int tenant, json_t *args, struct xb_call *call);

/* Each area's operations, ended by an entry with a NULL name (ops.c joins them). */
extern const struct xb_op xb_ops_sandbox[], xb_ops_proc[], xb_ops_files[], xb_ops_sessions[], xb_ops_events[],
        xb_ops_ports[], xb_ops_network[], xb_ops_watch[], xb_ops_templates[], xb_ops_tbuild[], xb_ops_secrets[],
        xb_ops_approvals[], xb_ops_install[];

/* An argument only the server sets (an admin token on routes that allow it):
 * the operation acts for every tenant. */
#define XB_OP_ALL_TENANTS "_all_tenants"
