/* The tenants' secrets, in the daemon's memory only (net/secret.h has the
 * why): put, find, delete, list, and attached to a sandbox at creation or
 * when a human grants one it asked for (approvals.c). Attaching gives the
 * sandbox a placeholder in an env var named after the secret; the value
 * stays here and in the egress path. A put or a delete rebinds every
 * sandbox of the tenant bound to that name: a rotation applies in place,
 * a delete leaves the placeholder unswapped, and a put after a restart
 * (whose bindings came back from the records, adopt.c) resumes them. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "core/core.h"

static size_t
tenant_count(const struct xb_core *s, int tenant)
{
        size_t n = 0;

        for (size_t i = 0; i < s->nsecrets; i++)
                n += s->secrets[i]->tenant == tenant;
        return n;
}

static ssize_t
find(const struct xb_core *s, int tenant, const char *name)
{
        for (size_t i = 0; i < s->nsecrets; i++)
                if (s->secrets[i]->tenant == tenant && !strcmp(s->secrets[i]->name, name))
                        return (ssize_t)i;
        return -1;
}

struct rebind {
        int tenant;
        const char *name;
        struct xb_secret *sec;   /* NULL: deleted */
};

static void
rebind_one(struct xb_sbx *x, void *data)
{
        const struct rebind *rb = data;
        bool waited;

        if (x->tenant != rb->tenant || !x->net || !xb_net_rebind_secret(x->net, rb->name, rb->sec, &waited))
                return;
        /* Names only: a value is never logged. */
        if (!rb->sec)
                xb_info("sandbox %s: secret %s deleted; its placeholder is sent as it is", x->id, rb->name);
        else if (waited)
                xb_info("sandbox %s: secret %s bound again (its placeholder unchanged)", x->id, rb->name);
        else
                xb_info("sandbox %s: secret %s rotated", x->id, rb->name);
}

/* Every sandbox of tenant bound to name now uses sec (NULL: none). */
static void
rebind_all(struct xb_core *s, int tenant, const char *name, struct xb_secret *sec)
{
        struct rebind rb = { tenant, name, sec };

        xb_sbx_foreach(s, rebind_one, &rb);
}

int
xb_core_secret_put(struct xb_core *s, struct xb_secret *sec, struct xb_err *err)
{
        ssize_t i = find(s, sec->tenant, sec->name);
        struct xb_secret **v;

        if (i >= 0) {
                /* A rotation: the holders' next requests get the new one. */
                s->secrets[i]->revoked = true;
                xb_secret_unref(s->secrets[i]);
                s->secrets[i] = sec;
                rebind_all(s, sec->tenant, sec->name, sec);
                return 0;
        }
        if (tenant_count(s, sec->tenant) >= XB_SECRETS_PER_TENANT || s->nsecrets >= XB_SECRETS_TOTAL) {
                xb_secret_unref(sec);
                return xb_err_code(err, XB_E_TOO_MANY_SECRETS, ENOSPC, NULL, "at most %d secrets per tenant",
                                   XB_SECRETS_PER_TENANT);
        }
        v = realloc(s->secrets, (s->nsecrets + 1) * sizeof(*v));
        if (!v) {
                xb_secret_unref(sec);
                return xb_err_code(err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
        }
        s->secrets = v;
        s->secrets[s->nsecrets++] = sec;
        /* Sandboxes waiting for it (after a restart or a delete). */
        rebind_all(s, sec->tenant, sec->name, sec);
        return 0;
}

struct xb_secret *
xb_core_secret_find(struct xb_core *s, int tenant, const char *name)
{
        ssize_t i = find(s, tenant, name);

        return i < 0 ? NULL : s->secrets[i];
}

int
xb_core_secret_delete(struct xb_core *s, int tenant, const char *name, struct xb_err *err)
{
        ssize_t i = find(s, tenant, name);

        if (i < 0)
                return xb_err_code(err, XB_E_SECRET_NOT_FOUND, ENOENT, NULL, "no secret `%.64s`", name);
        /* Sandboxes that hold it send the placeholder from now on, and
         * wait for a secret of that name again. */
        rebind_all(s, s->secrets[i]->tenant, s->secrets[i]->name, NULL);
        s->secrets[i]->revoked = true;
        xb_secret_unref(s->secrets[i]);
        memmove(&s->secrets[i], &s->secrets[i + 1], (s->nsecrets - (size_t)i - 1) * sizeof(*s->secrets));
        s->nsecrets--;
        return 0;
}

json_t *
xb_core_secrets_json(struct xb_core *s, int tenant)
{
        json_t *a = json_array();

        for (size_t i = 0; i < s->nsecrets; i++)
                if (tenant == XB_TENANT_ANY || s->secrets[i]->tenant == tenant)
                        json_array_append_new(a, xb_secret_json(s->secrets[i]));
        return json_pack("{s:o}", "secrets", a);
}

void
xb_core_secrets_free(struct xb_core *s)
{
        for (size_t i = 0; i < s->nsecrets; i++) {
                s->secrets[i]->revoked = true;
                xb_secret_unref(s->secrets[i]);
        }
        free(s->secrets);
        s->secrets = NULL;
        s->nsecrets = 0;
}

int
xb_sbx_add_secret(struct xb_sbx *x, struct xb_secret *sec, char *ph, size_t phlen, struct xb_err *err)
{
        char p[XB_SECRET_PLACEHOLDER_LEN + 1], *kv;
        size_t n = 0;
        char **env;
        int r;

        if (!x->net)
                return xb_err_code(err, XB_E_NETWORK_UNAVAILABLE, EOPNOTSUPP, NULL,
                                   "this server gives sandboxes no network, so no secrets");
        /* Attached twice (a grant after create): the same env var, replaced. */
        r = xb_net_add_secret(x->net, sec, p);
        if (r < 0)
                return xb_err_code(err, r == -E2BIG ? XB_E_TOO_MANY_SECRETS : XB_E_NOMEM, -r, NULL,
                                   "a sandbox holds at most %d secrets", XB_NET_SECRETS_MAX);
        if (asprintf(&kv, "%s=%s", sec->name, p) < 0)
                return xb_err_code(err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
        for (; x->env && x->env[n]; n++)
                if (!strncmp(x->env[n], sec->name, strlen(sec->name)) && x->env[n][strlen(sec->name)] == '=') {
                        free(x->env[n]);
                        x->env[n] = kv;
                        kv = NULL;
                        break;
                }
        if (kv) {
                env = realloc(x->env, (n + 2) * sizeof(*env));
                if (!env) {
                        free(kv);
                        return xb_err_code(err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
                }
                env[n] = kv;
                env[n + 1] = NULL;
                x->env = env;
        }
        if (ph)
                snprintf(ph, phlen, "%s", p);
        /* The binding and the env, for the next daemon (a grant). */
        if (x->armed)
                xb_record_save(x);
        return 0;
}

json_t *
xb_sbx_secrets_waiting(const struct xb_sbx *x)
{
        json_t *a = NULL;
        const char *name;
        bool waiting;

        for (size_t i = 0; x->net && (name = xb_net_secret_binding(x->net, i, NULL, &waiting)); i++)
                if (waiting && (a || (a = json_array())))
                        json_array_append_new(a, json_string(name));
        return a;
}

json_t *
xb_sbx_secrets_record(const struct xb_sbx *x)
{
        json_t *a = NULL;
        const char *name, *ph;

        for (size_t i = 0; x->net && (name = xb_net_secret_binding(x->net, i, &ph, NULL)); i++)
                if (a || (a = json_array()))
                        json_array_append_new(a, json_pack("{s:s,s:s}", "name", name, "placeholder", ph));
        return a;
}

void
xb_sbx_secrets_restore(struct xb_sbx *x, json_t *bindings)
{
        size_t i;
        json_t *b;

        if (!json_is_array(bindings))
                return;
        if (!x->net) {
                xb_warn("sandbox %s: it has no network now, so its %zu secrets are not bound", x->id,
                        json_array_size(bindings));
                return;
        }
        json_array_foreach(bindings, i, b) {
                const char *name = json_string_value(json_object_get(b, "name"));
                const char *ph = json_string_value(json_object_get(b, "placeholder"));
                struct xb_secret *sec;

                if (!name || !ph || xb_net_restore_secret(x->net, name, ph) < 0) {
                        xb_warn("sandbox %s: a secret binding of its record is torn; dropped", x->id);
                        continue;
                }
                if ((sec = xb_core_secret_find(x->core, x->tenant, name)))
                        xb_net_rebind_secret(x->net, name, sec, NULL);
                else
                        xb_info("sandbox %s: secret %s waits for its value (POST /v1/secrets again)", x->id, name);
        }
}

int
xb_sbx_secrets(struct xb_core *s, struct xb_sbx *x, int tenant, json_t *names, struct xb_err *err)
{
        size_t i;
        json_t *v;

        if (!names || json_is_null(names))
                return 0;
        if (!json_is_array(names) || json_array_size(names) > XB_NET_SECRETS_MAX)
                return xb_err_code(err, XB_E_INVALID_SECRET, EINVAL, NULL,
                                   "`secrets` must list at most %d secret names (POST /v1/secrets makes them)",
                                   XB_NET_SECRETS_MAX);
        if (!x && json_array_size(names) && !s->net)
                return xb_err_code(err, XB_E_NETWORK_UNAVAILABLE, EOPNOTSUPP, NULL,
                                   "this server gives sandboxes no network, so no secrets");
        json_array_foreach(names, i, v) {
                const char *name = json_string_value(v);
                struct xb_secret *sec = name ? xb_core_secret_find(s, tenant, name) : NULL;

                if (!sec)
                        return xb_err_code(err, name ? XB_E_SECRET_NOT_FOUND : XB_E_INVALID_SECRET, ENOENT, NULL,
                                           "no secret `%.64s`", name ? name : "");
                if (x && xb_sbx_add_secret(x, sec, NULL, 0, err) < 0)
                        return -1;
        }
        return 0;
}
