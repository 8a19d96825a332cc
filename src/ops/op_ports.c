/* Operations on published ports (core/ports.h): list what listens in a
 * sandbox, and sign an expiring link to one port. The bytes themselves
 * go through the HTTP front's proxy, which is no operation. sandbox_ports
 * is the tool's form of both (action list or share). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/core.h"
#include "core/ports.h"
#include "ops/jsonv.h"
#include "ops/op_args.h"
#include "ops/ops.h"

static const char *const path_id[] = { "id", NULL };

/* args "port": a number, or its decimal string (a path segment). */
static int
arg_port(json_t *args, unsigned *port, struct xb_err *err)
{
        json_t *v = json_object_get(args, "port");
        char num[24];

        if (json_is_integer(v)) {
                snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
                return xb_ports_parse(num, port, err);
        }
        if (json_is_string(v))
                return xb_ports_parse(json_string_value(v), port, err);
        return xb_err_code(err, XB_E_INVALID_PORT, EINVAL, NULL,
                           v && !json_is_null(v) ? "`port` must be a number from 1 to 65535"
                                                 : "`port` is required: the port the server listens on");
}

static void
list(struct xb_sbx *x, struct xb_call *c)
{
        struct xb_err err = { 0 };
        json_t *ports = NULL;

        if (xb_ports_list(x, &ports, &err) < 0) {
                xb_call_fail(c, &err);
                return;
        }
        xb_call_done(c, json_pack("{s:s,s:o}", "id", x->id, "ports", ports));
}

static void
share(struct xb_core *s, struct xb_sbx *x, json_t *body, struct xb_call *c)
{
        char token[XB_SHARE_TOKEN_MAX], path[256];
        struct xb_err err = { 0 };
        uint64_t ttl_ms = XB_SHARE_TTL_DEFAULT_S * 1000ull, exp = 0;
        unsigned port = 0;

        if (arg_port(body, &port, &err) < 0) {
                xb_call_fail(c, &err);
                return;
        }
        if (xb_jsonv_seconds(body, "ttl_s", 1, XB_SHARE_TTL_MAX_S, &ttl_ms, &err) < 0) {
                err.ecode = XB_E_INVALID;
                xb_call_fail(c, &err);
                return;
        }
        if (xb_ports_share(s, x->id, port, ttl_ms / 1000 ? ttl_ms / 1000 : 1, token, &exp, &err) < 0) {
                xb_call_fail(c, &err);
                return;
        }
        snprintf(path, sizeof(path), "/v1/sandboxes/%s/ports/%u/?xb_share=%s", x->id, port, token);
        xb_call_done(c, json_pack("{s:s,s:i,s:s,s:s,s:I,s:I}", "id", x->id, "port", (json_int_t)port, "token", token,
                                  "path", path, "expires_at", (json_int_t)exp, "ttl_s",
                                  (json_int_t)(ttl_ms / 1000 ? ttl_ms / 1000 : 1)));
}

static void
op_list(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        struct xb_sbx *x = xb_op_sandbox(s, tenant, args, c);

        if (x)
                list(x, c);
}

static void
op_share(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "port", "ttl_s", NULL };
        struct xb_sbx *x = xb_op_sandbox(s, tenant, args, c);
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct xb_err err = { 0 };

        if (!x)
                return;
        body = xb_op_body(args, path_id);
        if (!body) {
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        if (xb_jsonv_fields(body, fields, &err) < 0) {
                err.ecode = XB_E_INVALID;
                xb_call_fail(c, &err);
                return;
        }
        share(s, x, body, c);
}

/* The tool: {"action": "list" | "share", "port", "ttl_s"}. */
static void
op_ports(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "action", "port", "ttl_s", NULL };
        struct xb_sbx *x = xb_op_sandbox(s, tenant, args, c);
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct xb_err err = { 0 };
        const char *action = NULL;

        if (!x)
                return;
        body = xb_op_body(args, path_id);
        if (!body) {
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        if (xb_jsonv_fields(body, fields, &err) < 0 || xb_jsonv_str(body, "action", 16, &action, &err) < 0) {
                err.ecode = XB_E_INVALID;
                xb_call_fail(c, &err);
                return;
        }
        if (!action || !strcmp(action, "list"))
                list(x, c);
        else if (!strcmp(action, "share"))
                share(s, x, body, c);
        else
                xb_call_failf(c, XB_E_INVALID, "use \"list\" or \"share\"", "`action` must be \"list\" or \"share\"");
}

const struct xb_op xb_ops_ports[] = {
        { "list_ports", op_list },
        { "share_port", op_share },
        { "sandbox_ports", op_ports },
        { NULL, NULL },
};
