/* Operations on sandboxes: create, list, describe, delete, keep alive.
 * Each validates its arguments completely before acting, and every error
 * names the field. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/core.h"
#include "core/quota.h"
#include "ops/jsonv.h"
#include "ops/op_args.h"
#include "ops/ops.h"
#include "proc/env.h"

#define MOUNTS_MAX 32

static const char *const path_id[] = { "id", NULL };

static void
fail_invalid(struct xb_call *c, struct xb_err *err, enum xb_ecode ecode)
{
        err->ecode = ecode;
        xb_call_fail(c, err);
}

static int
parse_limits(json_t *body, const struct xb_limits *defaults, struct xb_limits *l, struct xb_err *err)
{
        static const char *const fields[] = { "memory", "cpus", "pids", "disk", NULL };
        json_t *lim = json_object_get(body, "limits");
        int r;

        *l = *defaults;
        if (!lim || json_is_null(lim))
                return 0;
        if (!json_is_object(lim))
                return xb_err_msg(err, EINVAL, "`limits` must be an object like {\"memory\": 536870912, \"cpus\": 1}");
        if ((r = xb_jsonv_fields(lim, fields, err)) < 0)
                return xb_err_wrap(err, "limits");
        if ((r = xb_jsonv_uint(lim, "memory", XB_MEMORY_MIN, XB_MEMORY_MAX, &l->memory, err)) < 0 ||
            (r = xb_jsonv_uint(lim, "pids", 8, XB_PIDS_MAX, &l->pids, err)) < 0 ||
            (r = xb_jsonv_uint(lim, "disk", XB_DISK_MIN, XB_DISK_MAX, &l->disk, err)) < 0)
                return xb_err_wrap(err, "limits");
        {
                json_t *c = json_object_get(lim, "cpus");

                if (c && !json_is_null(c)) {
                        double d = json_number_value(c);

                        if (!json_is_number(c) || d < 0.01 || d > XB_CPUS_MAX_MILLI / 1000.0)
                                return xb_err_msg(err, ERANGE, "limits.cpus must be a number of cores between 0.01 and %u",
                                                  XB_CPUS_MAX_MILLI / 1000);
                        l->cpus_milli = (uint32_t)(d * 1000.0 + 0.5);
                }
        }
        return xb_limits_validate(l, err);
}

/* binds point into body. */
static int
parse_mounts(json_t *body, struct xb_bind *binds, size_t *n, struct xb_err *err)
{
        json_t *m = json_object_get(body, "mounts"), *e;
        size_t i;

        *n = 0;
        if (!m || json_is_null(m))
                return 0;
        if (!json_is_array(m) || json_array_size(m) > MOUNTS_MAX)
                return xb_err_msg(err, EINVAL, "`mounts` must be an array of at most 32 objects "
                                  "{\"host\": \"/srv/data\", \"path\": \"/mnt/data\", \"readonly\": true}");
        json_array_foreach(m, i, e) {
                static const char *const fields[] = { "host", "path", "readonly", NULL };
                const char *host = NULL, *path = NULL;
                bool ro = true;
                int r;

                if (!json_is_object(e))
                        return xb_err_msg(err, EINVAL, "mounts[%zu] must be an object", i);
                if ((r = xb_jsonv_fields(e, fields, err)) < 0 || (r = xb_jsonv_str(e, "host", 1024, &host, err)) < 0 ||
                    (r = xb_jsonv_str(e, "path", 1024, &path, err)) < 0 || (r = xb_jsonv_bool(e, "readonly", &ro, err)) < 0)
                        return xb_err_wrap(err, "mounts[%zu]", i);
                if (!host || !path)
                        return xb_err_msg(err, EINVAL, "mounts[%zu] needs `host` and `path`", i);
                binds[i] = (struct xb_bind){ .host = (char *)host, .dest = (char *)path, .rw = !ro };
                (*n)++;
        }
        return xb_binds_validate(binds, *n, err);
}

static void
op_create(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "limits", "env", "timeout_s", "mounts", "metadata", "template", NULL };
        struct xb_err err = { 0 };
        struct xb_limits l;
        struct xb_bind binds[MOUNTS_MAX];
        size_t nbinds = 0;
        char **env = NULL;
        uint64_t ttl = XB_TTL_DEFAULT_MS;
        const char *tmpl = NULL;
        json_t *meta;
        struct xb_sbx *x;

        if (xb_jsonv_fields(args, fields, &err) < 0 || parse_limits(args, &s->o.defaults, &l, &err) < 0) {
                fail_invalid(c, &err, XB_E_INVALID);
                return;
        }
        if (xb_quota_check_limits(s, &l, &err) < 0) {
                xb_call_fail(c, &err);
                return;
        }
        if (parse_mounts(args, binds, &nbinds, &err) < 0 ||
            xb_jsonv_seconds(args, "timeout_s", 1, XB_TTL_MAX_MS / 1000.0, &ttl, &err) < 0 ||
            xb_jsonv_str(args, "template", 64, &tmpl, &err) < 0 || xb_jsonv_env(args, "env", &env, NULL, &err) < 0) {
                fail_invalid(c, &err, XB_E_INVALID);
                return;
        }
        if (tmpl && strcmp(tmpl, "base") && strcmp(tmpl, "host") && strcmp(tmpl, "code-interpreter-v1")) {
                xb_strv_free(env);
                xb_call_failf(c, XB_E_INVALID_TEMPLATE, NULL,
                              "unknown template `%.64s`; this server offers the host image only", tmpl);
                return;
        }
        meta = json_object_get(args, "metadata");
        if (meta && !json_is_null(meta) && (!json_is_object(meta) || json_object_size(meta) > 64)) {
                xb_strv_free(env);
                xb_call_failf(c, XB_E_INVALID_METADATA, NULL, "`metadata` must be an object with at most 64 keys");
                return;
        }
        {
                _cleanup_free_ char *js = meta ? json_dumps(meta, JSON_COMPACT) : NULL;
                size_t mlen = js ? strlen(js) : 0;

                if (mlen > 16384) {
                        xb_strv_free(env);
                        xb_call_failf(c, XB_E_METADATA_TOO_LARGE, NULL, "`metadata` is %zu bytes; the limit is 16384",
                                      mlen);
                        return;
                }
        }
        /* The sandbox takes env. */
        if (xb_sbx_create(s, tenant, &l, binds, nbinds, env, json_is_null(meta) ? NULL : meta, ttl, &x, &err) < 0) {
                xb_strv_free(env);
                xb_call_fail(c, &err);
                return;
        }
        xb_call_done(c, xb_sbx_json(x));
}

struct list_ctx {
        json_t *list;
        int tenant;
};

static void
list_one(struct xb_sbx *x, void *data)
{
        struct list_ctx *l = data;

        if (x->tenant == l->tenant)
                json_array_append_new(l->list, xb_sbx_json(x));
}

static void
op_list(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        struct list_ctx l = { json_array(), tenant };

        (void)args;
        xb_sbx_foreach(s, list_one, &l);
        xb_call_done(c, json_pack("{s:o}", "sandboxes", l.list));
}

static void
op_get(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        struct xb_sbx *x = xb_op_sandbox(s, tenant, args, c);

        if (x)
                xb_call_done(c, xb_sbx_json(x));
}

static void
op_delete(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        struct xb_sbx *x = xb_op_sandbox(s, tenant, args, c);

        if (!x)
                return;
        xb_sbx_destroy(x, XB_SBX_DELETED, "the sandbox was deleted");
        xb_call_done(c, NULL);
}

static void
op_keepalive(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "timeout_s", NULL };
        struct xb_sbx *x = xb_op_sandbox(s, tenant, args, c);
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct xb_err err = { 0 };
        uint64_t ttl = 0;

        if (!x)
                return;
        body = xb_op_body(args, path_id);
        if (!body) {
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        if (xb_jsonv_fields(body, fields, &err) < 0 ||
            xb_jsonv_seconds(body, "timeout_s", 1, XB_TTL_MAX_MS / 1000.0, &ttl, &err) < 0) {
                fail_invalid(c, &err, XB_E_INVALID);
                return;
        }
        xb_sbx_touch(x, ttl);
        xb_call_done(c, xb_sbx_json(x));
}

/* Freeze an idle sandbox; any later operation on it resumes it. */
static void
op_pause(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        struct xb_sbx *x = xb_op_sandbox(s, tenant, args, c);
        struct xb_err err = { 0 };

        if (!x)
                return;
        if (xb_sbx_pause(x, &err) < 0) {
                err.ecode = XB_E_SANDBOX_BUSY;
                xb_call_fail(c, &err);
                return;
        }
        xb_call_done(c, xb_sbx_json(x));
}

const struct xb_op xb_ops_sandbox[] = {
        { "sandbox_create", op_create },
        { "sandbox_list", op_list },
        { "get_sandbox", op_get },
        { "sandbox_delete", op_delete },
        { "keepalive_sandbox", op_keepalive },
        { "pause_sandbox", op_pause },
        { NULL, NULL },
};
