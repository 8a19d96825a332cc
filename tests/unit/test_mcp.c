/* Unit tests for the MCP core (mcp/mcp.h) without sandboxes: JSON-RPC
 * framing and its errors, the lifecycle of both eras, lists and prompts,
 * tool argument checking against the catalog's schemas, error texts and
 * hints, and the byte helpers (image magic). The core runs with no
 * engine, so a tool that reaches an operation gets the failure as a tool
 * error. */
#include <criterion/criterion.h>
#include <string.h>

#include "sandbox/limits.h"
#include "base/loop.h"
#include "mcp/mcp_int.h"

static struct xb_loop *loop;
static struct xb_mcp *mcp;
static struct xb_mcp_client *client;
static json_t *answer;
static unsigned answer_status;
static unsigned notes;

static void
on_notify(void *ctx, json_t *msg)
{
        (void)ctx;
        (void)msg;
        notes++;
}

static void
on_respond(void *ctx, json_t *msg, unsigned status)
{
        (void)ctx;
        json_decref(answer);
        answer = json_incref(msg);
        answer_status = status;
}

static const struct xb_mcp_out_ops out = { on_notify, on_respond, NULL };

static void
setup(void)
{
        struct xb_err err = { 0 };
        struct xb_mcp_opts mo = { 0 };
        static struct xb_limits limits;

        cr_assert_eq(xb_catalog_init(&err), 0, "%s", err.msg);
        loop = xb_loop_new();
        mo = (struct xb_mcp_opts){ .loop = loop, .defaults = &limits, .ntenants = 1 };
        cr_assert_eq(xb_mcp_new(&mo, &mcp, &err), 0, "%s", err.msg);
        client = xb_mcp_client_new(mcp, 0, 0, NULL, NULL);
        cr_assert(client);
}

static void
stop_loop(void *data)
{
        xb_loop_stop(data);
}

static void
teardown(void)
{
        struct xb_defer stop = { 0 };

        xb_mcp_shutdown(mcp);
        xb_mcp_free(mcp);
        /* Run what was deferred (the frees of calls and requests), then stop. */
        xb_loop_defer(loop, &stop, stop_loop, loop);
        xb_loop_run(loop);
        xb_loop_free(loop);
        json_decref(answer);
        answer = NULL;
}

TestSuite(mcp, .init = setup, .fini = teardown);

/* Send one message (JSON text) in an era; the answer, if any. */
static json_t *
send_msg(enum xb_mcp_era era, const char *text)
{
        json_error_t e;
        json_t *msg = json_loads(text, JSON_DECODE_ANY, &e);

        cr_assert(msg, "bad test JSON: %s", e.text);
        json_decref(answer);
        answer = NULL;
        cr_assert_null(xb_mcp_handle(client, era, msg, &out, NULL), "%s stayed in flight", text);
        json_decref(msg);
        return answer;
}

static bool
mentions(json_t *j, const char *text)
{
        char *s = json_dumps(j, 0);
        bool found = s && strstr(s, text);

        free(s);
        return found;
}

static int
error_code(json_t *a)
{
        return (int)json_integer_value(json_object_get(json_object_get(a, "error"), "code"));
}

#define INIT "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"%s\"," \
             "\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}"
#define META "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"," \
             "\"io.modelcontextprotocol/clientCapabilities\":{}}"

Test(mcp, initialize_negotiates_the_version)
{
        char buf[512];
        json_t *a;

        snprintf(buf, sizeof(buf), INIT, "2024-01-01");
        a = send_msg(XB_MCP_LEGACY, buf);
        cr_assert_str_eq(json_string_value(json_object_get(json_object_get(a, "result"), "protocolVersion")),
                         XB_MCP_LATEST);
        cr_assert(strstr(json_string_value(json_object_get(json_object_get(a, "result"), "instructions")), "get_guide"));
        cr_assert_str_eq(xb_mcp_client_version(client), XB_MCP_LATEST);
        /* Once only. */
        cr_assert_eq(error_code(send_msg(XB_MCP_LEGACY, buf)), -32600);
        cr_assert(xb_mcp_legacy_version("2025-03-26") && xb_mcp_legacy_version("2025-06-18"));
        cr_assert(!xb_mcp_legacy_version("2026-07-28") && !xb_mcp_legacy_version(NULL));
}

Test(mcp, json_rpc_errors)
{
        cr_assert_eq(error_code(send_msg(XB_MCP_LEGACY, "[1]")), -32600);
        cr_assert_eq(error_code(send_msg(XB_MCP_LEGACY, "{\"id\":1,\"method\":\"ping\"}")), -32600);
        cr_assert_eq(error_code(send_msg(XB_MCP_LEGACY, "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}")),
                     -32600);
        cr_assert_eq(error_code(send_msg(XB_MCP_LEGACY, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\","
                                                        "\"params\":7}")), -32602);
        cr_assert_eq(error_code(send_msg(XB_MCP_LEGACY, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x/y\"}")), -32601);
        cr_assert_eq(answer_status, 200);
        /* Notifications and responses get nothing back. */
        cr_assert_null(send_msg(XB_MCP_LEGACY, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"));
        cr_assert_null(send_msg(XB_MCP_LEGACY, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}"));
        /* As in the JSON-RPC 2.0 spec's examples: an invalid method is answered. */
        cr_assert_eq(error_code(send_msg(XB_MCP_LEGACY, "{\"jsonrpc\":\"2.0\",\"method\":5}")), -32600);
        cr_assert(json_is_object(json_object_get(send_msg(XB_MCP_LEGACY,
                                                          "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"ping\"}"),
                                                 "result")));
}

Test(mcp, modern_requests_carry_their_metadata)
{
        json_t *a = send_msg(XB_MCP_MODERN_ERA, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\"}");

        cr_assert_eq(error_code(a), -32602);
        cr_assert_eq(answer_status, 400);
        a = send_msg(XB_MCP_MODERN_ERA, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{"
                                        "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"1999-01-01\","
                                        "\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
        cr_assert_eq(error_code(a), -32022);
        a = send_msg(XB_MCP_MODERN_ERA, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" META "}}");
        cr_assert_str_eq(json_string_value(json_object_get(json_object_get(a, "result"), "resultType")), "complete");
        cr_assert(json_object_get(json_object_get(json_object_get(a, "result"), "_meta"),
                                  "io.modelcontextprotocol/serverInfo"));
        a = send_msg(XB_MCP_MODERN_ERA, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{" META "}}");
        cr_assert_eq(error_code(a), -32601);
        cr_assert_eq(answer_status, 404);
        a = send_msg(XB_MCP_MODERN_ERA, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" META "}}");
        cr_assert(json_is_integer(json_object_get(json_object_get(a, "result"), "ttlMs")));
        a = send_msg(XB_MCP_MODERN_ERA, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{" META
                                        ",\"name\":\"get_guide\",\"inputResponses\":null}}");
        cr_assert_eq(error_code(a), -32602);
}

Test(mcp, lists_prompts_and_completion)
{
        json_t *a = send_msg(XB_MCP_LEGACY, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
        json_t *tools = json_object_get(json_object_get(a, "result"), "tools");

        cr_assert_eq(json_array_size(tools), xb_catalog_count());
        a = send_msg(XB_MCP_LEGACY, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"prompts/get\",\"params\":"
                                    "{\"name\":\"execbox_guide\"}}");
        cr_assert(mentions(a, "execbox"));
        a = send_msg(XB_MCP_LEGACY, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"prompts/get\",\"params\":"
                                    "{\"name\":\"execbox_guide\",\"arguments\":{\"x\":1}}}");
        cr_assert_eq(error_code(a), -32602);
        a = send_msg(XB_MCP_LEGACY, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"completion/complete\",\"params\":"
                                    "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"execbox_guide\"},\"argument\":"
                                    "{\"name\":\"a\",\"value\":\"b\"}}}");
        cr_assert(json_is_array(json_object_get(json_object_get(json_object_get(a, "result"), "completion"), "values")));
        a = send_msg(XB_MCP_LEGACY, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"resources/read\",\"params\":"
                                    "{\"uri\":\"file:///home/user/none\"}}");
        cr_assert_eq(error_code(a), -32002);
        a = send_msg(XB_MCP_LEGACY, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"resources/list\"}");
        cr_assert_eq(json_array_size(json_object_get(json_object_get(a, "result"), "resources")), 1);
}

Test(mcp, tool_errors_are_results)
{
        json_t *a = send_msg(XB_MCP_LEGACY, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
                                            "{\"name\":\"nope\"}}");

        cr_assert_eq(error_code(a), -32602);
        a = send_msg(XB_MCP_LEGACY, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
                                    "{\"name\":\"run_command\",\"arguments\":{\"cmd\":[]}}}");
        cr_assert(json_is_true(json_object_get(json_object_get(a, "result"), "isError")));
        cr_assert(mentions(a, "`cmd` must be string"));
        /* No engine here: the operation's failure is a tool error too. */
        a = send_msg(XB_MCP_LEGACY, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":"
                                    "{\"name\":\"sandbox_list\",\"arguments\":{}}}");
        cr_assert(json_is_true(json_object_get(json_object_get(a, "result"), "isError")));
        cr_assert_null(json_object_get(json_object_get(a, "result"), "structuredContent"));
        cr_assert(mentions(a, "Hint: "));
        /* get_guide needs no operation: the guide itself. */
        a = send_msg(XB_MCP_LEGACY, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":"
                                    "{\"name\":\"get_guide\",\"arguments\":{}}}");
        cr_assert_null(json_object_get(json_object_get(a, "result"), "isError"), "%s", json_dumps(a, 0));
        cr_assert(json_is_string(json_object_get(json_object_get(json_object_get(a, "result"), "structuredContent"),
                                                 "guide")));
}

/* Every code has tool-worded advice, or takes the engine's; none names a
 * REST route. */
Test(mcp, hints)
{
        static const char *const rest_words[] = { "GET ", "POST ", "PUT ", "DELETE ", "/v1/", "?path", "Range",
                                                  "header" };
        struct xb_err err = { .ecode = XB_E_FILE_NOT_FOUND, .msg = "no such file: /home/user/x" };
        char *text;

        for (int e = 0; e < XB_E__COUNT; e++) {
                struct xb_err x = { .ecode = (enum xb_ecode)e };
                const char *h = xb_tool_hint(&x);

                cr_assert(h && *h, "code %s has no hint", xb_ecode_name((enum xb_ecode)e));
                for (size_t i = 0; i < sizeof(rest_words) / sizeof(rest_words[0]); i++)
                        cr_assert_null(strstr(h, rest_words[i]), "%s: %s", xb_ecode_name((enum xb_ecode)e), h);
        }
        text = xb_tool_err_text(&err);
        cr_assert_str_eq(text, "Error: no such file: /home/user/x (file_not_found). Hint: check the path; see what "
                               "is there with list_files");
        free(text);
        /* MCP's advice beats the engine's; without any, the engine's speaks. */
        err.hint = "the engine's advice";
        cr_assert(strstr(xb_tool_hint(&err), "list_files"));
        err.ecode = XB_E_INVALID;
        cr_assert_str_eq(xb_tool_hint(&err), "the engine's advice");
        err.hint = NULL;
        cr_assert(strstr(xb_tool_hint(&err), "call the tool again"));
}

Test(mcp, argument_schemas)
{
        const struct xb_tool *t = xb_catalog_find("run_command");
        struct xb_err err = { 0 };
        json_t *ok = json_pack("{s:s,s:n,s:f}", "cmd", "ls", "cwd", "timeout_s", 1.5);
        json_t *bad = json_pack("{s:s,s:i}", "cmd", "ls", "timeout_s", -1);
        json_t *extra = json_pack("{s:s,s:b}", "cmd", "ls", "nope", 1);
        json_t *env = json_pack("{s:s,s:[{s:s}]}", "cmd", "ls", "env", "name", "A");

        cr_assert_eq(mcp_args_check(t->input, ok, &err), 0, "%s", err.msg);
        cr_assert_lt(mcp_args_check(t->input, bad, &err), 0);
        cr_assert(strstr(err.msg, "timeout_s") && strstr(err.msg, "at least"), "%s", err.msg);
        cr_assert_lt(mcp_args_check(t->input, extra, &err), 0);
        cr_assert(strstr(err.msg, "nope"), "%s", err.msg);
        cr_assert_lt(mcp_args_check(t->input, env, &err), 0);
        cr_assert(strstr(err.msg, "env[0].value") && strstr(err.msg, "required"), "%s", err.msg);
        json_decref(ok);
        json_decref(bad);
        json_decref(extra);
        json_decref(env);
        /* sandbox_create's limits are "an object or null" (anyOf). */
        t = xb_catalog_find("sandbox_create");
        ok = json_pack("{s:{s:i}}", "limits", "memory", 1 << 28);
        bad = json_pack("{s:{s:s}}", "limits", "memory", "lots");
        cr_assert_eq(mcp_args_check(t->input, ok, &err), 0, "%s", err.msg);
        cr_assert_lt(mcp_args_check(t->input, bad, &err), 0);
        cr_assert(strstr(err.msg, "limits.memory"), "%s", err.msg);
        json_decref(ok);
        json_decref(bad);
}

/* Base64 itself is tested in test_base64.c. */
Test(mcp, image_mime)
{
        {
                size_t n;
                char *owned = NULL;
                json_t *r = json_pack("{s:s,s:s}", "content", "AAEC/w==", "encoding", "base64");
                const char *d;

                /* read_file results: base64 decoded, text as it is. */
                d = xb_tool_file_data(r, &owned, &n);
                cr_assert(d && d == owned && n == 4 && d[3] == '\377');
                free(owned);
                json_object_set_new(r, "encoding", json_string("utf-8"));
                d = xb_tool_file_data(r, &owned, &n);
                cr_assert(d && !owned && n == 8 && !memcmp(d, "AAEC/w==", 8));
                json_object_del(r, "content");
                cr_assert_null(xb_tool_file_data(r, &owned, &n));
                json_decref(r);
        }
        cr_assert_str_eq(xb_tool_image_mime("\x89PNG\r\n\x1a\n....", 12), "image/png");
        cr_assert_str_eq(xb_tool_image_mime("\xff\xd8\xff\xe0", 4), "image/jpeg");
        cr_assert_str_eq(xb_tool_image_mime("GIF89a", 6), "image/gif");
        cr_assert_str_eq(xb_tool_image_mime("RIFF\0\0\0\0WEBPVP8 ", 16), "image/webp");
        cr_assert_null(xb_tool_image_mime("\x89PN", 3));
        cr_assert_null(xb_tool_image_mime("hello world", 11));
}
