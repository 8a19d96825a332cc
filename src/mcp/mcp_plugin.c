/* The MCP core's plug-ins (struct mcp_plugin in mcp_int.h): a process-wide
 * table filled by constructors before main, and the loops that ask each
 * plug-in a core serves for its items, or give it a request first. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp_int.h"

static const struct mcp_plugin *plugins[MCP_PLUGINS_MAX];
static size_t nplugins;

void
mcp_plugin_register(const struct mcp_plugin *p)
{
        if (nplugins == MCP_PLUGINS_MAX)
                abort();
        plugins[nplugins++] = p;
}

static const struct mcp_plugin *
find(const char *name)
{
        for (size_t i = 0; i < nplugins; i++)
                if (!strcmp(plugins[i]->name, name))
                        return plugins[i];
        return NULL;
}

bool
xb_mcp_has_plugin(const char *name)
{
        return find(name) != NULL;
}

int
mcp_plugins_check(const struct xb_mcp_opts *o, struct xb_err *err)
{
        for (const char *const *n = o->plugins; n && *n; n++)
                if (!find(*n))
                        return xb_err_msg(err, ENOENT, "this binary has no MCP plug-in `%s`", *n);
        return 0;
}

static bool
served(const struct xb_mcp *m, const struct mcp_plugin *p)
{
        if (!p->opt_in)
                return true;
        for (const char *const *n = m->o.plugins; n && *n; n++)
                if (!strcmp(*n, p->name))
                        return true;
        return false;
}

void **
mcp_plugin_state(struct xb_mcp *m, const struct mcp_plugin *p)
{
        for (size_t i = 0; i < nplugins; i++)
                if (plugins[i] == p)
                        return &m->plugin_state[i];
        abort();   /* a plug-in that never registered */
}

/* Each list is what the served plug-ins give, in registration order. */
json_t *
mcp_plugin_tools(struct xb_mcp *m, bool modern)
{
        json_t *all = json_array();

        for (size_t i = 0; i < nplugins; i++)
                if (plugins[i]->tools && served(m, plugins[i]))
                        mcp_extend(all, plugins[i]->tools(modern));
        return all;
}

json_t *
mcp_plugin_resources(struct xb_mcp *m)
{
        json_t *all = json_array();

        for (size_t i = 0; i < nplugins; i++)
                if (plugins[i]->resources && served(m, plugins[i]))
                        mcp_extend(all, plugins[i]->resources());
        return all;
}

json_t *
mcp_plugin_templates(struct xb_mcp *m)
{
        json_t *all = json_array();

        for (size_t i = 0; i < nplugins; i++)
                if (plugins[i]->templates && served(m, plugins[i]))
                        mcp_extend(all, plugins[i]->templates());
        return all;
}

json_t *
mcp_plugin_prompts(struct xb_mcp *m, bool modern)
{
        json_t *all = json_array();

        for (size_t i = 0; i < nplugins; i++)
                if (plugins[i]->prompts && served(m, plugins[i]))
                        mcp_extend(all, plugins[i]->prompts(modern));
        return all;
}

bool
mcp_plugin_call(struct xb_mcp_call *call, const char *name, json_t *args)
{
        for (size_t i = 0; i < nplugins; i++)
                if (plugins[i]->call && served(call->m, plugins[i]) && plugins[i]->call(call, name, args))
                        return true;
        return false;
}

bool
mcp_plugin_read(struct xb_mcp_call *call, const char *uri)
{
        for (size_t i = 0; i < nplugins; i++)
                if (plugins[i]->read && served(call->m, plugins[i]) && plugins[i]->read(call, uri))
                        return true;
        return false;
}

bool
mcp_plugin_prompt(struct xb_mcp_call *call, const char *name, json_t *args)
{
        for (size_t i = 0; i < nplugins; i++)
                if (plugins[i]->prompt && served(call->m, plugins[i]) && plugins[i]->prompt(call, name, args))
                        return true;
        return false;
}

void
mcp_plugins_client_free(struct xb_mcp_client *c)
{
        for (size_t i = 0; i < nplugins; i++)
                if (plugins[i]->client_free)
                        plugins[i]->client_free(c);
}

void
mcp_plugins_core_free(struct xb_mcp *m)
{
        for (size_t i = 0; i < nplugins; i++) {
                if (plugins[i]->core_free)
                        plugins[i]->core_free(m, m->plugin_state[i]);
                m->plugin_state[i] = NULL;
        }
}
