/* The tenants' secrets, in the daemon's memory only (net/secret.h has the
 * why): put, find, delete, list, and attached to a sandbox at creation or
 * when a human grants one it asked for (approvals.c). Attaching gives the
 * sandbox a placeholder in an env var named after the secret; the value
 * stays here and in the egress path. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int
xb_core_secret_put(struct xb_core *s, struct xb_secret *sec, struct xb_err *err)
{
        ssize_t i = find(s, sec->tenant, sec->name);
        struct xb_secret **v;

        if (i >= 0) {
                s->secrets[i]->revoked = true;
                xb_secret_unref(s->secrets[i]);
                s->secrets[i] = sec;
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
        /* Sandboxes that hold it send the placeholder from now on. */
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
        return 0;
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
