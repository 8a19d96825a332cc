/* Operations on a tenant's secrets: create (or replace), list, delete.
 * No reply ever holds a value (net/secret.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "core/core.h"
#include "ops/ops.h"

static void
op_create(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        struct xb_err err = { 0 };
        struct xb_secret *sec;
        json_t *j;

        if (!s->net) {
                xb_call_failf(c, XB_E_NETWORK_UNAVAILABLE, NULL,
                              "this server gives sandboxes no network, so no secrets");
                return;
        }
        if (xb_secret_parse(args, tenant, &sec, &err) < 0) {
                err.ecode = err.code == ENOMEM ? XB_E_NOMEM : XB_E_INVALID_SECRET;
                xb_call_fail(c, &err);
                return;
        }
        j = xb_secret_json(sec);
        if (xb_core_secret_put(s, sec, &err) < 0) {
                json_decref(j);
                xb_call_fail(c, &err);
                return;
        }
        xb_call_done(c, j);
}

static void
op_list(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        (void)args;
        xb_call_done(c, xb_core_secrets_json(s, tenant));
}

static void
op_delete(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        const char *name = json_string_value(json_object_get(args, "name"));
        struct xb_err err = { 0 };

        if (xb_core_secret_delete(s, tenant, name ? name : "", &err) < 0) {
                xb_call_fail(c, &err);
                return;
        }
        xb_call_done(c, NULL);
}

const struct xb_op xb_ops_secrets[] = {
        { "secret_create", op_create },
        { "secret_list", op_list },
        { "secret_delete", op_delete },
        { NULL, NULL },
};
