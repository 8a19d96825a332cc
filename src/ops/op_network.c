/* Operations on a sandbox's egress: read its policy, change it live (the
 * next connection uses the new one), and read its log of decisions. The
 * policy's grammar and the decisions are net/'s; the ceiling is core's. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/core.h"
#include "ops/jsonv.h"
#include "ops/op_args.h"
#include "ops/ops.h"

static const char *const path_id[] = { "id", NULL };

int
xb_op_network_parse(json_t *v, struct xb_netpol **ret, struct xb_err *err)
{
        int r = xb_netpol_parse(v, ret, err);

        if (r < 0)
                err->ecode = XB_E_INVALID_NETWORK;
        return r;
}

static void
op_get(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        struct xb_sbx *x = xb_op_sandbox(s, tenant, args, c);

        if (x)
                xb_call_done(c, xb_sbx_network_json(x));
}

/* {mode, allow, deny, ask, peers}: all null reads; any field sets (and
 * replaces the whole policy). */
static void
op_network(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "mode", "allow", "deny", "ask", "peers", NULL };
        struct xb_sbx *x = xb_op_sandbox(s, tenant, args, c);
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct xb_err err = { 0 };
        struct xb_netpol *p = NULL;
        const char *key;
        json_t *v, *tmp;

        if (!x)
                return;
        body = xb_op_body(args, path_id);
        if (!body) {
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        json_object_del(body, "sandbox_id");
        if (xb_jsonv_fields(body, fields, &err) < 0) {
                err.ecode = XB_E_INVALID_NETWORK;
                xb_call_fail(c, &err);
                return;
        }
        /* Nulls are absent (MCP passes every field). */
        tmp = json_object();
        json_object_foreach(body, key, v)
                if (!json_is_null(v))
                        json_object_set(tmp, key, v);
        if (json_object_size(tmp) == 0) {
                json_decref(tmp);
                xb_call_done(c, xb_sbx_network_json(x));
                return;
        }
        if (xb_op_network_parse(tmp, &p, &err) < 0 || xb_sbx_set_network(x, p, &err) < 0) {
                json_decref(tmp);
                xb_netpol_unref(p);
                xb_call_fail(c, &err);
                return;
        }
        json_decref(tmp);
        xb_netpol_unref(p);
        xb_call_done(c, xb_sbx_network_json(x));
}

static void
op_log(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "offset", "limit", "sandbox_id", NULL };
        struct xb_sbx *x = xb_op_sandbox(s, tenant, args, c);
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct xb_err err = { 0 };
        uint64_t off = 0, limit = 1000;

        if (!x)
                return;
        body = xb_op_body(args, path_id);
        if (!body || xb_jsonv_fields(body, fields, &err) < 0 ||
            xb_jsonv_uint(body, "offset", 0, UINT64_MAX >> 1, &off, &err) < 0 ||
            xb_jsonv_uint(body, "limit", 1, XB_NET_LOG_MAX, &limit, &err) < 0) {
                err.ecode = XB_E_INVALID;
                xb_call_fail(c, &err);
                return;
        }
        xb_call_done(c, xb_sbx_network_log(x, off, (unsigned)limit));
}

const struct xb_op xb_ops_network[] = {
        { "get_network", op_get },
        { "sandbox_network", op_network },
        { "network_log", op_log },
        { NULL, NULL },
};
