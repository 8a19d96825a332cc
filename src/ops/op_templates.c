/* Operations on templates, snapshots and forks (core/templates.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/templates.h"
#include "core/core.h"
#include "core/quota.h"
#include "net/policy.h"
#include "ops/jsonv.h"
#include "ops/op_args.h"
#include "ops/ops.h"
#include "ops/op_tmpl.h"
#include "proc/env.h"

#define FORK_MAX 64

static const char *const path_id[] = { "id", NULL };

/* Errors the engine did not classify are the server's. */
static void
fail_invalid(struct xb_call *c, struct xb_err *err)
{
        if (!err->ecode)
                err->ecode = XB_E_INTERNAL;
        xb_call_fail(c, err);
}

static struct xb_template *
find_template(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        const char *name = json_string_value(json_object_get(args, "name"));
        struct xb_template *t = name ? xb_template_find(s, name, tenant) : NULL;

        if (!t)
                xb_call_failf(c, XB_E_TEMPLATE_NOT_FOUND, NULL, "no template `%.64s`",
                              name ? name : "");
        return t;
}

static void
op_snapshot(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "name", NULL };
        struct xb_sbx *x = xb_op_sandbox(s, tenant, args, c);
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct xb_err err = { 0 };
        struct xb_template *t;
        const char *name = NULL;

        if (!x)
                return;
        body = xb_op_body(args, path_id);
        if (!body) {
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        if (xb_jsonv_fields(body, fields, &err) < 0 ||
            xb_jsonv_str(body, "name", XB_TEMPLATE_NAME_MAX, &name, &err) < 0) {
                err.ecode = XB_E_INVALID;
                xb_call_fail(c, &err);
                return;
        }
        if (!name) {
                xb_call_failf(c, XB_E_INVALID, NULL, "`name` is required: the new template's name, such as `py-ml`");
                return;
        }
        if (xb_template_snapshot(x, name, &t, &err) < 0) {
                fail_invalid(c, &err);
                return;
        }
        xb_call_done(c, xb_template_json(t));
}

static void
op_fork(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "count", "env", "timeout_s", "limits", "network", "metadata", NULL };
        struct xb_sbx *x = xb_op_sandbox(s, tenant, args, c);
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct xb_sbx *kids[FORK_MAX];
        struct xb_err err = { 0 };
        struct xb_fork_spec f = { 0 };
        struct xb_limits l;
        uint64_t n = 1;
        char **env = NULL;
        json_t *list, *net, *meta;
        int r;

        if (!x)
                return;
        body = xb_op_body(args, path_id);
        if (!body) {
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        /* Limits default to the parent's and stay under the ceilings. */
        if (xb_jsonv_fields(body, fields, &err) < 0 || xb_jsonv_uint(body, "count", 1, FORK_MAX, &n, &err) < 0 ||
            xb_jsonv_seconds(body, "timeout_s", 1, XB_TTL_MAX_MS / 1000.0, &f.ttl_ms, &err) < 0 ||
            xb_op_limits_parse(body, &x->limits, &l, &err) < 0 || xb_jsonv_env(body, "env", &env, NULL, &err) < 0) {
                err.ecode = XB_E_INVALID;
                xb_call_fail(c, &err);
                return;
        }
        meta = json_object_get(body, "metadata");
        if (xb_quota_check_limits(s, &l, &err) < 0 || xb_op_metadata_check(meta, &err) < 0) {
                xb_strv_free(env);
                xb_call_fail(c, &err);
                return;
        }
        net = json_object_get(body, "network");
        if (net && !json_is_null(net) &&
            (xb_op_network_parse(net, &f.network, &err) < 0 || xb_core_network_check(s, f.network, &err) < 0)) {
                xb_netpol_unref(f.network);
                xb_strv_free(env);
                xb_call_fail(c, &err);
                return;
        }
        f.n = (unsigned)n;
        f.limits = &l;
        f.env = env;
        f.metadata = meta && !json_is_null(meta) ? meta : NULL;
        r = xb_sbx_fork(x, &f, kids, &err);
        xb_netpol_unref(f.network);
        xb_strv_free(env);
        if (r < 0) {
                if (!err.ecode)
                        err.ecode = XB_E_SANDBOX_FAILED;
                xb_call_fail(c, &err);
                return;
        }
        list = json_array();
        for (unsigned i = 0; i < n; i++)
                json_array_append_new(list, xb_sbx_json(kids[i]));
        xb_call_done(c, json_pack("{s:o,s:s}", "sandboxes", list, "parent", x->id));
}

static void
op_list(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        json_t *all = xb_templates_json(s, tenant);

        (void)args;
        xb_op_builds_list(s, tenant, json_object_get(all, "templates"));
        xb_call_done(c, all);
}

static void
op_get(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        const char *name = json_string_value(json_object_get(args, "name"));
        struct xb_template *t;
        json_t *b;

        if (name && !strcmp(name, "base")) {
                json_t *all = xb_templates_json(s, tenant);

                xb_call_done(c, json_incref(json_array_get(json_object_get(all, "templates"), 0)));
                json_decref(all);
                return;
        }
        if (name && !xb_template_find(s, name, tenant) && (b = xb_op_build_json(s, name, tenant))) {
                xb_call_done(c, b);
                return;
        }
        if ((t = find_template(s, tenant, args, c)))
                xb_call_done(c, xb_template_json(t));
}

static void
op_delete(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        const char *name = json_string_value(json_object_get(args, "name"));
        struct xb_err err = { 0 };
        struct xb_template *t;

        if (name && !strcmp(name, "base")) {
                xb_call_failf(c, XB_E_TEMPLATE_IN_USE, NULL, "`base` is built in and cannot be deleted");
                return;
        }
        if (name && !xb_template_find(s, name, tenant) && xb_op_build_forget(s, name, tenant, &err)) {
                if (err.ecode)
                        xb_call_fail(c, &err);
                else
                        xb_call_done(c, NULL);
                return;
        }
        if (!(t = find_template(s, tenant, args, c)))
                return;
        if (xb_template_delete(s, t, &err) < 0) {
                fail_invalid(c, &err);
                return;
        }
        xb_call_done(c, NULL);
}

const struct xb_op xb_ops_templates[] = {
        { "sandbox_snapshot", op_snapshot },
        { "sandbox_fork", op_fork },
        { "template_list", op_list },
        { "get_template", op_get },
        { "template_delete", op_delete },
        { NULL, NULL },
};
