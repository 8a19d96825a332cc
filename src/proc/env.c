/* Environment allowlist. */
#include "env.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
xb_strv_free(char **v)
{
        if (!v)
                return;
        for (char **p = v; *p; p++)
                free(*p);
        free(v);
}

int
xb_env_check(const char *kv, struct xb_err *err)
{
        const char *eq = strchr(kv, '=');

        if (!eq || eq == kv)
                return xb_err_msg(err, EINVAL, "environment entry `%.64s` must look like NAME=VALUE", kv);
        if (!(isalpha((unsigned char)kv[0]) || kv[0] == '_'))
                return xb_err_msg(err, EINVAL, "environment name `%.*s` must start with a letter or _",
                                  (int)(eq - kv > 64 ? 64 : eq - kv), kv);
        for (const char *p = kv; p < eq; p++)
                if (!(isalnum((unsigned char)*p) || *p == '_'))
                        return xb_err_msg(err, EINVAL, "environment name `%.*s` may hold only letters, digits and _",
                                          (int)(eq - kv > 64 ? 64 : eq - kv), kv);
        if (strlen(kv) > XB_ENV_MAX_BYTES)
                return xb_err_msg(err, E2BIG, "environment entry `%.32s...` is over %d bytes", kv, XB_ENV_MAX_BYTES);
        return 0;
}

static int
set_var(char **v, size_t *n, const char *kv)
{
        size_t klen = (size_t)(strchr(kv, '=') - kv) + 1;
        char *copy = strdup(kv);

        if (!copy)
                return -ENOMEM;
        for (size_t i = 0; i < *n; i++)
                if (strncmp(v[i], kv, klen) == 0) {
                        free(v[i]);
                        v[i] = copy;
                        return 0;
                }
        v[(*n)++] = copy;
        return 0;
}

int
xb_env_build(const char *home, unsigned uid, const char *const *set, size_t nset, char ***ret,
             struct xb_err *err)
{
        char buf[256];
        const char *user = uid == 0 ? "root" : "user";
        const char *defaults[] = {
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "LANG=C.UTF-8", "TERM=dumb", "TMPDIR=/tmp", "SHELL=/bin/bash", "HOSTNAME=sandbox",
        };
        size_t ndef = sizeof(defaults) / sizeof(defaults[0]), n = 0, total = 0;
        char **v;
        int r = 0;

        if (nset > XB_ENV_MAX_VARS)
                return xb_err_msg(err, E2BIG, "at most %d environment variables", XB_ENV_MAX_VARS);
        for (size_t i = 0; i < nset; i++) {
                if ((r = xb_env_check(set[i], err)) < 0)
                        return r;
                total += strlen(set[i]);
        }
        if (total > XB_ENV_MAX_BYTES)
                return xb_err_msg(err, E2BIG, "the environment is over %d bytes", XB_ENV_MAX_BYTES);
        v = calloc(ndef + 3 + nset + 1, sizeof(char *));
        if (!v)
                return xb_err_set(err, ENOMEM, "environment");
        for (size_t i = 0; i < ndef && !r; i++)
                r = set_var(v, &n, defaults[i]);
        snprintf(buf, sizeof(buf), "HOME=%s", home);
        r = r ? r : set_var(v, &n, buf);
        snprintf(buf, sizeof(buf), "USER=%s", user);
        r = r ? r : set_var(v, &n, buf);
        snprintf(buf, sizeof(buf), "LOGNAME=%s", user);
        r = r ? r : set_var(v, &n, buf);
        for (size_t i = 0; i < nset && !r; i++)
                r = set_var(v, &n, set[i]);
        if (r) {
                xb_strv_free(v);
                return xb_err_set(err, -r, "environment");
        }
        *ret = v;
        return 0;
}
