/* The MCP methods of both eras: the lifecycle (initialize, ping,
 * server/discover, logging/setLevel), the lists with their caching hints
 * in the modern era, prompts (the guide), completion and subscriptions.
 * Tools and resources hand over to mcp_tools.c and mcp_resources.c. Each
 * method answers its call exactly once (see mcp.c). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "mcp/mcp_int.h"

static const char instructions[] =
        "execbox runs your shell commands and code in a disposable, isolated Linux sandbox (a Debian userland "
        "with bash, Python 3 with numpy, pandas and matplotlib, and Node.js; no internet). Call get_guide once "
        "before your first command: it is short and lists what is installed and the limits. Every tool acts on "
        "your default sandbox when sandbox_id is null; it is created on first use%s. Use run_command for shell "
        "commands, run_code for stateful Python, JavaScript or bash (figures come back as images), read_file, "
        "write_file, edit_file and list_files for files, and process_start/read/input/kill for servers and "
        "long jobs.";

/* ---- lifecycle ---- */

static json_t *
capabilities(const struct xb_mcp_call *call)
{
        json_t *caps = json_pack("{s:{},s:{},s:{},s:{},s:{}}", "tools", "resources", "prompts", "completions",
                                 "logging");

        /* Legacy clients may subscribe to files (updated when our tools
         * write them); the modern revision moved that to subscriptions/listen. */
        if (!call->modern)
                json_object_set_new(json_object_get(caps, "resources"), "subscribe", json_true());
        return caps;
}

static char *
instructions_text(bool modern)
{
        char *s = NULL;

        if (asprintf(&s, instructions, modern ? " and shared by all your requests; results carry its sandbox_id, "
                     "pass it back to be sure to reach the same machine"
                     : ", kept for this session and deleted when it ends") < 0)
                return NULL;
        return s;
}

static void
m_initialize(struct xb_mcp_call *call)
{
        struct xb_mcp_client *c = call->c;
        const char *want = json_string_value(json_object_get(call->params, "protocolVersion"));
        json_t *caps = json_object_get(call->params, "capabilities");
        _cleanup_free_ char *text = NULL;
        const char *v = xb_mcp_legacy_version(want) ? want : XB_MCP_LATEST;

        if (!want) {
                mcp_fail(call, -32602, "initialize needs params.protocolVersion, a string such as \"2025-11-25\"",
                         NULL, 400);
                return;
        }
        if (c->version[0]) {
                mcp_fail(call, -32600, "this session is already initialized", NULL, 400);
                return;
        }
        snprintf(c->version, sizeof(c->version), "%s", v);
        call->version = c->version;
        if (json_is_object(caps))
                c->caps = json_incref(caps);
        text = instructions_text(false);
        mcp_result(call, json_pack("{s:s,s:o,s:o,s:s}", "protocolVersion", v, "capabilities", capabilities(call),
                                   "serverInfo", mcp_server_info(), "instructions", text ? text : ""));
}

static void
m_discover(struct xb_mcp_call *call)
{
        _cleanup_free_ char *text = instructions_text(true);

        mcp_result(call, json_pack("{s:[s],s:o,s:s,s:i,s:s}", "supportedVersions", XB_MCP_MODERN, "capabilities",
                                   capabilities(call), "instructions", text ? text : "", "ttlMs", 300000,
                                   "cacheScope", "public"));
}

static void
m_empty(struct xb_mcp_call *call)
{
        mcp_result(call, json_object());
}

static void
m_set_level(struct xb_mcp_call *call)
{
        enum mcp_log_level l = mcp_log_level_parse(json_string_value(json_object_get(call->params, "level")));

        if (l == LOG_NONE) {
                mcp_fail(call, -32602, "level must be one of debug, info, notice, warning, error, critical, alert, "
                         "emergency", NULL, 200);
                return;
        }
        call->c->log_level = l;
        call->log_level = l;
        mcp_result(call, json_object());
}

/* ---- lists, cached in the modern era ---- */

static json_t *
cacheable(const struct xb_mcp_call *call, json_t *result, int ttl_ms, const char *scope)
{
        if (call->modern && result) {
                json_object_set_new(result, "ttlMs", json_integer(ttl_ms));
                json_object_set_new(result, "cacheScope", json_string(scope));
        }
        return result;
}

static void
m_tools_list(struct xb_mcp_call *call)
{
        json_t *tools = mcp_plugin_tools(call->m, call->modern);

        /* Plug-ins' first: the conformance suite calls the first tool it finds. */
        mcp_extend(tools, mcp_tools_list(call->m));
        mcp_result(call, cacheable(call, json_pack("{s:o}", "tools", tools), 300000, "public"));
}

static void
m_tools_call(struct xb_mcp_call *call)
{
        const char *name = json_string_value(json_object_get(call->params, "name"));
        json_t *args = json_object_get(call->params, "arguments");

        if (!name) {
                mcp_fail(call, -32602, "tools/call needs params.name, the tool's name", NULL, 200);
                return;
        }
        if (args && !json_is_object(args) && !json_is_null(args)) {
                mcp_fail(call, -32602, "params.arguments must be an object", NULL, 200);
                return;
        }
        call->args = json_is_object(args) ? json_incref(args) : json_object();
        if (mcp_plugin_call(call, name, call->args))
                return;
        call->tool = xb_catalog_find(name);
        if (!call->tool) {
                char msg[160];

                snprintf(msg, sizeof(msg), "Unknown tool: %.64s", name);
                mcp_fail(call, -32602, msg, NULL, 200);
                return;
        }
        mcp_tools_call(call);
}

static void
m_resources_list(struct xb_mcp_call *call)
{
        mcp_resources_list(call);
}

static void
m_resources_read(struct xb_mcp_call *call)
{
        const char *uri = json_string_value(json_object_get(call->params, "uri"));

        if (!uri) {
                mcp_fail(call, -32602, "resources/read needs params.uri", NULL, 200);
                return;
        }
        if (mcp_plugin_read(call, uri))
                return;
        mcp_resources_read(call, uri);
}

static void
m_templates(struct xb_mcp_call *call)
{
        json_t *t = mcp_resource_templates(call->m);

        mcp_extend(t, mcp_plugin_templates(call->m));
        mcp_result(call, cacheable(call, json_pack("{s:o}", "resourceTemplates", t), 300000, "public"));
}

static void
m_subscribe(struct xb_mcp_call *call)
{
        struct xb_mcp_client *c = call->c;
        const char *uri = json_string_value(json_object_get(call->params, "uri"));
        bool sub = !strcmp(call->method, "resources/subscribe");
        size_t i;
        json_t *v;

        if (!uri || strlen(uri) > 4096) {
                mcp_fail(call, -32602, "params.uri must be a resource URI", NULL, 200);
                return;
        }
        if (!c->subs)
                c->subs = json_array();
        json_array_foreach(c->subs, i, v)
                if (!strcmp(json_string_value(v), uri))
                        break;
        if (sub && i == json_array_size(c->subs) && i < 256)
                json_array_append_new(c->subs, json_string(uri));
        else if (!sub && i < json_array_size(c->subs))
                json_array_remove(c->subs, i);
        mcp_resource_subscribe(call, uri, sub);
        mcp_result(call, json_object());
}

/* ---- prompts and completion ---- */

static void
m_prompts_list(struct xb_mcp_call *call)
{
        json_t *p = json_pack("[{s:s,s:s,s:s}]", "name", "execbox_guide", "title", "execbox guide", "description",
                              "How to use the execbox sandbox tools well: what is installed, the limits, and tips. "
                              "Read it before the first command.");

        mcp_extend(p, mcp_plugin_prompts(call->m, call->modern));
        mcp_result(call, cacheable(call, json_pack("{s:o}", "prompts", p), 300000, "public"));
}

static void
m_prompts_get(struct xb_mcp_call *call)
{
        const char *name = json_string_value(json_object_get(call->params, "name"));
        json_t *args = json_object_get(call->params, "arguments"), *v;
        const char *k;
        char msg[160];

        if (!name) {
                mcp_fail(call, -32602, "prompts/get needs params.name", NULL, 200);
                return;
        }
        if (args && !json_is_null(args)) {
                if (!json_is_object(args)) {
                        mcp_fail(call, -32602, "params.arguments must be an object of strings", NULL, 200);
                        return;
                }
                json_object_foreach(args, k, v)
                        if (!json_is_string(v)) {
                                snprintf(msg, sizeof(msg), "prompt argument `%.64s` must be a string", k);
                                mcp_fail(call, -32602, msg, NULL, 200);
                                return;
                        }
        }
        if (mcp_plugin_prompt(call, name, args))
                return;
        if (!strcmp(name, "execbox_guide")) {
                _cleanup_free_ char *g = mcp_guide(call->m);

                mcp_result(call, json_pack("{s:s,s:[{s:s,s:{s:s,s:s}}]}", "description", "The execbox usage guide",
                                           "messages", "role", "user", "content", "type", "text", "text",
                                           g ? g : ""));
                return;
        }
        snprintf(msg, sizeof(msg), "Unknown prompt: %.64s", name);
        mcp_fail(call, -32602, msg, NULL, 200);
}

static void
m_complete(struct xb_mcp_call *call)
{
        json_t *ref = json_object_get(call->params, "ref"), *arg = json_object_get(call->params, "argument");
        const char *type = json_string_value(json_object_get(ref, "type"));

        if (!type || (strcmp(type, "ref/prompt") && strcmp(type, "ref/resource")) || !json_is_object(arg) ||
            !json_is_string(json_object_get(arg, "name"))) {
                mcp_fail(call, -32602, "completion/complete needs params.ref {type: ref/prompt or ref/resource} and "
                         "params.argument {name, value}", NULL, 200);
                return;
        }
        /* Nothing of ours takes free-form arguments worth suggesting. */
        mcp_result(call, json_pack("{s:{s:[],s:i,s:b}}", "completion", "values", "total", 0, "hasMore", 0));
}

/* ---- the table ---- */

static const struct mcp_method methods[] = {
        { "initialize", MCP_ERA_LEGACY, m_initialize },
        { "ping", MCP_ERA_LEGACY, m_empty },
        { "server/discover", MCP_ERA_MODERN, m_discover },
        { "logging/setLevel", MCP_ERA_LEGACY, m_set_level },
        { "tools/list", MCP_ERA_LEGACY | MCP_ERA_MODERN, m_tools_list },
        { "tools/call", MCP_ERA_LEGACY | MCP_ERA_MODERN, m_tools_call },
        { "resources/list", MCP_ERA_LEGACY | MCP_ERA_MODERN, m_resources_list },
        { "resources/read", MCP_ERA_LEGACY | MCP_ERA_MODERN, m_resources_read },
        { "resources/templates/list", MCP_ERA_LEGACY | MCP_ERA_MODERN, m_templates },
        { "resources/subscribe", MCP_ERA_LEGACY, m_subscribe },
        { "resources/unsubscribe", MCP_ERA_LEGACY, m_subscribe },
        { "prompts/list", MCP_ERA_LEGACY | MCP_ERA_MODERN, m_prompts_list },
        { "prompts/get", MCP_ERA_LEGACY | MCP_ERA_MODERN, m_prompts_get },
        { "completion/complete", MCP_ERA_LEGACY | MCP_ERA_MODERN, m_complete },
};

const struct mcp_method *
mcp_method_find(const char *name)
{
        for (size_t i = 0; i < ARRAY_SIZE(methods); i++)
                if (!strcmp(methods[i].name, name))
                        return &methods[i];
        return NULL;
}
