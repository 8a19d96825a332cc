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
#include "core/templates.h"
#include "ops/op_tmpl.h"
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

/* A cold start answers once init says the sandbox is set up: a create
 * must not say 201 for a sandbox that dies while starting (out of fds or
 * memory near the host's limits), it says 503. */
struct create_wait {
        struct xb_call *c;
        struct xb_sbx *x;
        uint32_t tag;
};

static void
cw_free(struct create_wait *w)
{
        xb_sbx_unref(w->x);
        free(w);
}

static void
cw_ready(void *ctx)
{
        struct create_wait *w = ctx;

        xb_sbx_pending_del(w->x, w->tag);
        xb_call_on_cancel(w->c, NULL, NULL);
        xb_call_done(w->c, xb_sbx_json(w->x));
        cw_free(w);
}

static void
cw_died(void *ctx, const char *why)
{
        struct create_wait *w = ctx;

        xb_call_on_cancel(w->c, NULL, NULL);
        xb_call_failf(w->c, XB_E_SANDBOX_UNAVAILABLE, NULL, "the sandbox died while starting: %s",
                      why ? why : "its init exited");
        cw_free(w);
}

/* The client left: the sandbox stays, as any created one (its lease ends it). */
static void
cw_cancel(void *owner)
{
        struct create_wait *w = owner;

        xb_sbx_pending_del(w->x, w->tag);
        cw_free(w);
}

static const struct xb_pending_ops cw_ops = { .died = cw_died, .ready = cw_ready };

static void
create_answer(struct xb_sbx *x, struct xb_call *c)
{
        struct create_wait *w;

        if (x->state != XB_SBX_STARTING || !(w = calloc(1, sizeof(*w)))) {
                xb_call_done(c, xb_sbx_json(x));
                return;
        }
        *w = (struct create_wait){ .c = c, .x = x };
        if (!(w->tag = xb_sbx_pending_add(x, &cw_ops, w))) {
                free(w);
                xb_call_done(c, xb_sbx_json(x));
                return;
        }
        xb_sbx_ref(x);
        xb_call_on_cancel(c, cw_cancel, w);
}

/* The template's env under the request's (later entries win). */
static int
with_template_env(const struct xb_template *t, char ***env)
{
        size_t nt = 0, nr = 0;
        char **all;

        for (; t->env && t->env[nt]; nt++)
                ;
        for (; *env && (*env)[nr]; nr++)
                ;
        if (!nt)
                return 0;
        all = calloc(nt + nr + 1, sizeof(*all));
        if (!all)
                return -ENOMEM;
        for (size_t i = 0; i < nt; i++)
                if (!(all[i] = strdup(t->env[i]))) {
                        xb_strv_free(all);
                        return -ENOMEM;
                }
        for (size_t i = 0; i < nr; i++)
                all[nt + i] = (*env)[i];
        free(*env);
        *env = all;
        return 0;
}

static void
op_create(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "limits", "env", "timeout_s", "mounts", "metadata", "template", "user",
                                              "network", "auto_pause", "paused_ttl_s", "max_lifetime_s", "secrets", NULL };
        struct xb_err err = { 0 };
        struct xb_limits l;
        struct xb_bind binds[MOUNTS_MAX];
        size_t nbinds = 0;
        char **env = NULL;
        uint64_t ttl = XB_TTL_DEFAULT_MS;
        uint64_t paused_max = s->o.paused_ttl_ms ? s->o.paused_ttl_ms : XB_PAUSED_TTL_DEFAULT_MS;
        uint64_t life_max = s->o.max_lifetime_ms ? s->o.max_lifetime_ms : XB_LIFETIME_MAX_DEFAULT_MS;
        uint64_t paused_ttl = paused_max, life = life_max;
        bool auto_pause = false;
        const char *tmpl = NULL, *user = NULL;
        struct xb_template *t = NULL;
        json_t *meta, *net;
        struct xb_sbx *x;
        struct xb_netpol *pol = NULL;

        if (xb_jsonv_fields(args, fields, &err) < 0 || xb_op_limits_parse(args, &s->o.defaults, &l, &err) < 0) {
                fail_invalid(c, &err, XB_E_INVALID);
                return;
        }
        if (xb_quota_check_limits(s, &l, &err) < 0) {
                xb_call_fail(c, &err);
                return;
        }
        if (parse_mounts(args, binds, &nbinds, &err) < 0 ||
            xb_jsonv_seconds(args, "timeout_s", 1, XB_TTL_MAX_MS / 1000.0, &ttl, &err) < 0 ||
            xb_jsonv_seconds(args, "paused_ttl_s", 1, paused_max / 1000.0, &paused_ttl, &err) < 0 ||
            xb_jsonv_seconds(args, "max_lifetime_s", 1, life_max / 1000.0, &life, &err) < 0 ||
            xb_jsonv_bool(args, "auto_pause", &auto_pause, &err) < 0 ||
            xb_jsonv_str(args, "template", 64, &tmpl, &err) < 0 || xb_jsonv_str(args, "user", 16, &user, &err) < 0 ||
            xb_jsonv_env(args, "env", &env, NULL, &err) < 0) {
                fail_invalid(c, &err, XB_E_INVALID);
                return;
        }
        if (user && strcmp(user, "user") && strcmp(user, "root")) {
                xb_strv_free(env);
                xb_call_failf(c, XB_E_INVALID, NULL,
                              "`user` must be \"user\" (uid 1000, the default) or \"root\" (uid 0 of the sandbox)");
                return;
        }
        if (tmpl && strcmp(tmpl, "base") && strcmp(tmpl, "host") && strcmp(tmpl, "code-interpreter-v1") &&
            !(t = xb_template_find(s, tmpl, tenant))) {
                xb_strv_free(env);
                xb_call_failf(c, XB_E_INVALID_TEMPLATE, NULL,
                              "unknown template `%.64s`; the templates are base and those GET /v1/templates lists",
                              tmpl);
                return;
        }
        if (t && with_template_env(t, &env) < 0) {
                xb_strv_free(env);
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        meta = json_object_get(args, "metadata");
        if (xb_op_metadata_check(meta, &err) < 0) {
                xb_strv_free(env);
                xb_call_fail(c, &err);
                return;
        }
        net = json_object_get(args, "network");
        if (net && !json_is_null(net) &&
            (xb_op_network_parse(net, &pol, &err) < 0 || xb_core_network_check(s, pol, &err) < 0)) {
                xb_netpol_unref(pol);
                xb_strv_free(env);
                xb_call_fail(c, &err);
                return;
        }
        if (xb_sbx_secrets(s, NULL, tenant, json_object_get(args, "secrets"), &err) < 0) {
                xb_netpol_unref(pol);
                xb_strv_free(env);
                xb_call_fail(c, &err);
                return;
        }
        /* The sandbox takes env. */
        {
                uint32_t uid = user ? (!strcmp(user, "root") ? 0 : XB_USER_UID) : t ? t->uid : XB_USER_UID;
                struct xb_root_spec root = { .kind = s->eng->store ? XB_UPPER_DISK : XB_UPPER_MEMORY,
                                             .lowers = t ? (const char *const *)t->layers : NULL,
                                             .nlowers = t ? t->nlayers : 0, .user = uid,
                                             .own_root = t && t->rootfs };
                /* The base and the pool, unless the layers or the workspaces' owner differ. */
                bool plain = !t && (uid == XB_USER_UID || !nbinds);

                if (xb_sbx_create_root(s, tenant, &l, binds, nbinds, plain ? NULL : &root, env,
                                       json_is_null(meta) ? NULL : meta, ttl, &x, &err) < 0) {
                        xb_netpol_unref(pol);
                        xb_strv_free(env);
                        xb_call_fail(c, &err);
                        return;
                }
        }
        if (t && xb_template_attach(x, t) < 0) {
                xb_netpol_unref(pol);
                xb_sbx_destroy(x, XB_SBX_SETUP_FAILED, NULL);
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        if (t)
                x->uid = t->uid;
        if (user)
                x->uid = !strcmp(user, "root") ? 0 : XB_USER_UID;
        if (xb_sbx_secrets(s, x, tenant, json_object_get(args, "secrets"), &err) < 0) {
                xb_netpol_unref(pol);
                xb_sbx_destroy(x, XB_SBX_SETUP_FAILED, NULL);
                xb_call_fail(c, &err);
                return;
        }
        if (pol) {
                xb_sbx_set_network(x, pol, &err);   /* checked above */
                xb_netpol_unref(pol);
        }
        x->auto_pause = auto_pause;
        x->paused_ttl_ms = paused_ttl;
        x->max_lifetime_ms = life;
        xb_sbx_arm(x);
        if (t || user || pol || auto_pause)
                xb_record_save(x);   /* with what create_root did not know */
        /* A start command: the answer waits for its readiness. */
        if (t && t->start_cmd && !(c = xb_op_tstart_call(s, tenant, t, c))) {
                xb_sbx_destroy(x, XB_SBX_SETUP_FAILED, NULL);
                return;
        }
        create_answer(x, c);
}

struct list_ctx {
        json_t *list;
        int tenant;
};

static void
list_one(struct xb_sbx *x, void *data)
{
        struct list_ctx *l = data;

        if (x->tenant == l->tenant && !x->sealed)
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
        struct xb_sbx *x = xb_op_sandbox_any(s, tenant, args, c);

        if (x)
                xb_call_done(c, xb_sbx_json(x));
}

static void
op_delete(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        struct xb_sbx *x = xb_op_sandbox_any(s, tenant, args, c);

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
        if (ttl)
                xb_record_save(x);   /* a new timeout_s */
        xb_call_done(c, xb_sbx_json(x));
}

/* Freeze a sandbox: no CPU, its memory and processes kept. Uses fail
 * 409 paused until resume, unless auto_resume (what an idle MCP client's
 * pause and auto_pause do): then the next use resumes it. */
static void
op_pause(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "auto_resume", NULL };
        struct xb_sbx *x = xb_op_sandbox_any(s, tenant, args, c);
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct xb_err err = { 0 };
        bool auto_resume = false;

        if (!x)
                return;
        body = xb_op_body(args, path_id);
        if (!body) {
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        if (xb_jsonv_fields(body, fields, &err) < 0 || xb_jsonv_bool(body, "auto_resume", &auto_resume, &err) < 0) {
                fail_invalid(c, &err, XB_E_INVALID);
                return;
        }
        if (xb_sbx_pause(x, auto_resume, &err) < 0) {
                err.ecode = XB_E_SANDBOX_BUSY;
                xb_call_fail(c, &err);
                return;
        }
        xb_call_done(c, xb_sbx_json(x));
}

static void
op_resume(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        struct xb_sbx *x = xb_op_sandbox_any(s, tenant, args, c);

        if (!x)
                return;
        xb_sbx_resume(x);
        xb_call_done(c, xb_sbx_json(x));
}

const struct xb_op xb_ops_sandbox[] = {
        { "sandbox_create", op_create },
        { "sandbox_list", op_list },
        { "get_sandbox", op_get },
        { "sandbox_delete", op_delete },
        { "keepalive_sandbox", op_keepalive },
        { "sandbox_pause", op_pause },
        { "sandbox_resume", op_resume },
        { NULL, NULL },
};
