/* Operation arguments: see op_args.h. */
#define _GNU_SOURCE
#include "ops/op_args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/core.h"
#include "ops/jsonv.h"

struct xb_sbx *
xb_op_sandbox(struct xb_core *core, int tenant, json_t *args, struct xb_call *c)
{
        const char *id = json_string_value(json_object_get(args, "id"));
        struct xb_err err = { 0 };
        struct xb_sbx *x = xb_sbx_use(core, id, tenant, &err);

        if (!x)
                xb_call_fail(c, &err);
        return x;
}

struct xb_sbx *
xb_op_sandbox_any(struct xb_core *core, int tenant, json_t *args, struct xb_call *c)
{
        const char *id = json_string_value(json_object_get(args, "id"));
        struct xb_sbx *x = id ? xb_sbx_find(core, id, tenant) : NULL;

        if (!x)
                xb_op_no_sandbox(core, tenant, id, c);
        return x;
}

void
xb_op_no_sandbox(struct xb_core *core, int tenant, const char *id, struct xb_call *c)
{
        struct xb_err err = { 0 };

        xb_op_no_sandbox_err(core, tenant, id, &err);
        xb_call_fail(c, &err);
}

int
xb_op_no_sandbox_err(struct xb_core *core, int tenant, const char *id, struct xb_err *err)
{
        const struct xb_tomb *t = xb_tomb_find(core, id, tenant);

        if (t)
                return xb_tomb_err(t, err);
        return xb_err_code(err, XB_E_SANDBOX_NOT_FOUND, ENOENT, NULL, "no sandbox with id `%.64s`", id ? id : "");
}

struct xb_proc *
xb_op_process(struct xb_core *core, int tenant, json_t *args, struct xb_call *c)
{
        struct xb_sbx *x = xb_op_sandbox(core, tenant, args, c);
        json_t *v = json_object_get(args, "pid");
        struct xb_proc *p = NULL;
        char num[24];
        const char *s = "";
        long pid = 0;

        if (!x)
                return NULL;
        /* No pid: the process the client tagged (E2B's Connect by tag). */
        if ((!v || json_is_null(v)) && json_is_string(json_object_get(args, "tag"))) {
                s = json_string_value(json_object_get(args, "tag"));
                if (!(p = xb_proc_find_tag(x, s)))
                        xb_call_failf(c, XB_E_PROCESS_NOT_FOUND, NULL, "no process tagged `%.64s` in sandbox %s", s,
                                      x->id);
                return p;
        }
        if (json_is_string(v)) {
                char *end;

                s = json_string_value(v);
                pid = strtol(s, &end, 10);
                if (*end)
                        pid = 0;
        } else if (json_is_integer(v)) {
                json_int_t n = json_integer_value(v);

                snprintf(num, sizeof(num), "%lld", (long long)n);
                s = num;
                pid = n > 0 && n < 4194304 ? (long)n : 0;
        }
        if (pid > 0 && pid < 4194304)
                p = xb_proc_find(x, (pid_t)pid);
        if (!p)
                xb_call_failf(c, XB_E_PROCESS_NOT_FOUND, NULL, "no process %.32s in sandbox %s", s, x->id);
        return p;
}

json_t *
xb_op_body(json_t *args, const char *const *path)
{
        json_t *b = json_copy(args);

        for (const char *const *k = path; b && *k; k++)
                json_object_del(b, *k);
        return b;
}

bool
xb_op_apt_name_ok(const char *p)
{
        size_t n = strlen(p);

        return n > 0 && n <= 128 && ((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= '0' && p[0] <= '9')) &&
               strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789+-.:=~") == n;
}

/* A name such as df or results.mean. */
bool
xb_op_identifier(const char *s)
{
        size_t n = s ? strlen(s) : 0;

        if (n == 0 || n > 200)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!(s[i] == '_' || s[i] == '.' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
                      (i && s[i] >= '0' && s[i] <= '9')))
                        return false;
        return true;
}

int
xb_op_limits_parse(json_t *body, const struct xb_limits *defaults, struct xb_limits *l, struct xb_err *err)
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

int
xb_op_metadata_check(json_t *meta, struct xb_err *err)
{
        _cleanup_free_ char *js = NULL;
        size_t mlen;

        if (!meta || json_is_null(meta))
                return 0;
        if (!json_is_object(meta) || json_object_size(meta) > 64)
                return xb_err_code(err, XB_E_INVALID_METADATA, EINVAL, NULL,
                                   "`metadata` must be an object with at most 64 keys");
        js = json_dumps(meta, JSON_COMPACT);
        mlen = js ? strlen(js) : 0;
        if (mlen > 16384)
                return xb_err_code(err, XB_E_METADATA_TOO_LARGE, E2BIG, NULL,
                                   "`metadata` is %zu bytes; the limit is 16384", mlen);
        return 0;
}
