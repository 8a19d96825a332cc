/* The environment `packages` mode gives processes besides the proxy's:
 * npm's registry and pip's index, as plain-http URLs of the package
 * sources. The proxy serves those itself (pkgserve.c), fetching https
 * sources over TLS, so that npm tarballs and wheels pass through the
 * package cache; a CONNECT tunnel could not be cached. The traffic in
 * plain http is only the sandbox's loopback to the proxy. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/net_int.h"

void
xb__netsys_pkg_env_free(struct xb_netsys *ns)
{
        for (size_t i = 0; ns->env && ns->env[i]; i++)
                free(ns->env[i]);
        free(ns->env);
        ns->env = NULL;
}

/* "http://host[:port]/path/": how the sandbox reaches s through the proxy. */
static char *
plain_url(const struct xb_source *s, const char *var)
{
        char port[8] = "";
        char *r;

        if (!s->https && s->port != 80)
                snprintf(port, sizeof(port), ":%u", s->port);
        return asprintf(&r, "%s=http://%s%s%s/", var, s->host, port, s->path) < 0 ? NULL : r;
}

void
xb__netsys_pkg_env_build(struct xb_netsys *ns)
{
        const struct xb_source *npm = NULL, *pip = NULL;
        char **env = calloc(6, sizeof(char *));
        size_t n = 0;

        if (!env)
                return;
        for (size_t i = 0; i < ns->nsrc; i++) {
                if (!npm && ns->src[i].kind == XB_SRC_NPM)
                        npm = &ns->src[i];
                if (!pip && ns->src[i].kind == XB_SRC_PIP)
                        pip = &ns->src[i];
        }
        if (npm && (env[n] = plain_url(npm, "npm_config_registry")))
                n++;
        /* Tarballs named on another host come through the registry too. */
        if (npm && (env[n] = strdup("npm_config_replace_registry_host=always")))
                n++;
        if (pip && (env[n] = plain_url(pip, "PIP_INDEX_URL")))
                n++;
        if (pip) {
                char port[8] = "";

                if (!pip->https && pip->port != 80)
                        snprintf(port, sizeof(port), ":%u", pip->port);
                if (asprintf(&env[n], "PIP_TRUSTED_HOST=%s%s", pip->host, port) >= 0)
                        n++;
                else
                        env[n] = NULL;
        }
        xb__netsys_pkg_env_free(ns);
        ns->env = env;
}

const char *const *
xb_netsys_pkg_env(const struct xb_netsys *ns)
{
        return (const char *const *)ns->env;
}
