/* Unit tests for the MCP core's plug-ins (mcp_int.h, mcp_plugin.c): an
 * opt-in plug-in registered here is served only by a core that names it,
 * comes first in the lists and takes its own calls and prompts, and its
 * destructors run for every context and core either way. The unit tests
 * link the product's objects, so the conformance fixtures are absent. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "base/loop.h"
#include "sandbox/limits.h"
#include "mcp/mcp_int.h"

static unsigned clients_freed, cores_freed, states_freed;

static json_t *
tools(bool modern)
{
        (void)modern;
        return json_pack("[{s:s,s:{s:s}}]", "name", "unit_tool", "inputSchema", "type", "object");
}

static const struct mcp_plugin unit;

static bool
call(struct xb_mcp_call *c, const char *name, json_t *args)
{
        (void)args;
        if (strcmp(name, "unit_tool"))
                return false;
        *mcp_plugin_state(c->m, &unit) = strdup("state");
        mcp_result(c, json_pack("{s:[o]}", "content", mcp_text_block("from the plug-in")));
        return true;
}

static json_t *
prompts(bool modern)
{
        (void)modern;
        return json_pack("[{s:s}]", "name", "unit_prompt");
}

static void
client_free(struct xb_mcp_client *c)
{
        (void)c;
        clients_freed++;
}

static void
core_free(struct xb_mcp *m, void *state)
{
        (void)m;
        cores_freed++;
        if (state)
                states_freed++;
        free(state);
}

static const struct mcp_plugin unit = {
        .name = "unit", .opt_in = true, .tools = tools, .call = call, .prompts = prompts,
        .client_free = client_free, .core_free = core_free,
};
MCP_PLUGIN(unit)

static json_t *answer;

static void
on_respond(void *ctx, json_t *msg, unsigned status)
{
        (void)ctx;
        (void)status;
        json_decref(answer);
        answer = json_incref(msg);
}

static const struct xb_mcp_out_ops out = { NULL, on_respond, NULL };

static void
stop_loop(void *data)
{
        xb_loop_stop(data);
}

/* A core (serving plugins) with one context; f runs with it; then all is freed. */
static void
with_core(const char *const *plugins, void (*f)(struct xb_mcp_client *c))
{
        static struct xb_limits limits;
        struct xb_err err = { 0 };
        struct xb_defer stop = { 0 };
        struct xb_loop *loop = xb_loop_new();
        struct xb_mcp *m;
        struct xb_mcp_opts mo;

        cr_assert_eq(xb_catalog_init(&err), 0, "%s", err.msg);
        mo = (struct xb_mcp_opts){ .loop = loop, .defaults = &limits, .ntenants = 1,
                                   .plugins = plugins };
        cr_assert_eq(xb_mcp_new(&mo, &m, &err), 0, "%s", err.msg);
        f(xb_mcp_client_new(m, 0, 0, NULL, NULL));
        xb_mcp_shutdown(m);
        xb_mcp_free(m);
        xb_loop_defer(loop, &stop, stop_loop, loop);
        xb_loop_run(loop);
        xb_loop_free(loop);
        json_decref(answer);
        answer = NULL;
}

static json_t *
send_msg(struct xb_mcp_client *c, const char *text)
{
        json_t *msg = json_loads(text, 0, NULL);

        cr_assert(msg);
        json_decref(answer);
        answer = NULL;
        cr_assert_null(xb_mcp_handle(c, XB_MCP_LEGACY, msg, &out, NULL));
        json_decref(msg);
        return json_object_get(answer, "result");
}

static const char *
first_name(json_t *result, const char *list)
{
        return json_string_value(json_object_get(json_array_get(json_object_get(result, list), 0), "name"));
}

static void
not_served(struct xb_mcp_client *c)
{
        json_t *r = send_msg(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");

        cr_assert_eq(json_array_size(json_object_get(r, "tools")), xb_catalog_count());
        r = send_msg(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"unit_tool\"}}");
        cr_assert_null(r);
        cr_assert_eq(json_integer_value(json_object_get(json_object_get(answer, "error"), "code")), -32602);
}

static void
served(struct xb_mcp_client *c)
{
        json_t *r = send_msg(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");

        cr_assert_eq(json_array_size(json_object_get(r, "tools")), xb_catalog_count() + 1);
        cr_assert_str_eq(first_name(r, "tools"), "unit_tool");
        r = send_msg(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"unit_tool\"}}");
        cr_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(r, "content"), 0), "text")),
                         "from the plug-in");
        r = send_msg(c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"prompts/list\"}");
        cr_assert_eq(json_array_size(json_object_get(r, "prompts")), 2);
        /* The core asks plug-ins for tool schemas too (Mcp-Param headers). */
        r = xb_mcp_tool_input(c->m, "unit_tool", false);
        cr_assert(r);
        json_decref(r);
}

Test(mcp_plugin, registry)
{
        struct xb_mcp_opts mo = { .plugins = (const char *const[]){ "no-such-plugin", NULL } };
        struct xb_mcp *m = NULL;
        struct xb_err err = { 0 };

        cr_assert(xb_mcp_has_plugin("unit"));
        cr_assert(xb_mcp_has_plugin("edits"));
        cr_assert_not(xb_mcp_has_plugin(XB_FIXTURES_PLUGIN));
        cr_assert_eq(xb_mcp_new(&mo, &m, &err), -ENOENT);
        cr_assert(strstr(err.msg, "no-such-plugin"), "%s", err.msg);
        cr_assert_null(m);
}

Test(mcp_plugin, opt_in_is_served_only_when_named)
{
        with_core(NULL, not_served);
        cr_assert_eq(clients_freed, 1);
        cr_assert_eq(cores_freed, 1);
        cr_assert_eq(states_freed, 0);
        with_core((const char *const[]){ "unit", NULL }, served);
        cr_assert_eq(clients_freed, 2);
        cr_assert_eq(cores_freed, 2);
        cr_assert_eq(states_freed, 1);
}
