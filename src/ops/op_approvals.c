/* Operations on what waits for a human (core/approvals.c): list, decide.
 * An admin token sees and decides every tenant's (XB_OP_ALL_TENANTS). A
 * granted secret's value goes into the store, never into the reply. */
#define _GNU_SOURCE
#include <string.h>

#include "core/core.h"
#include "ops/ops.h"

static int
scope(int tenant, json_t *args)
{
        return json_is_true(json_object_get(args, XB_OP_ALL_TENANTS)) ? XB_TENANT_ANY : tenant;
}

static void
op_list(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        xb_call_done(c, xb_core_approvals_json(s, scope(tenant, args)));
}

static void
op_decide(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "id", "decision", "remember", "value", "hosts", "header",
                                              XB_OP_ALL_TENANTS, NULL };
        struct xb_err err = { 0 };
        json_t *reply = NULL, *v;
        const char *key;

        json_object_foreach(args, key, v) {
                size_t i;

                for (i = 0; fields[i] && strcmp(fields[i], key); i++)
                        ;
                if (!fields[i]) {
                        xb_call_failf(c, XB_E_INVALID, NULL, "unknown field `%.32s`; a decision has decision, "
                                      "remember, and for a secret value, hosts and header", key);
                        return;
                }
        }
        if (xb_core_approval_decide(s, scope(tenant, args), json_string_value(json_object_get(args, "id")), args,
                                    &reply, &err) < 0) {
                if (!err.ecode)
                        err.ecode = XB_E_INTERNAL;
                xb_call_fail(c, &err);
                return;
        }
        xb_call_done(c, reply);
}

const struct xb_op xb_ops_approvals[] = {
        { "approval_list", op_list },
        { "approval_decide", op_decide },
        { NULL, NULL },
};
