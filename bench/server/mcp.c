/* An MCP client for bench_server: one 2025-11-25 session over Streamable
 * HTTP on a keep-alive connection, as tests/integration/test_mcp.py speaks
 * it (Accept: application/json, text/event-stream; Mcp-Session-Id and
 * MCP-Protocol-Version on every request after initialize). A reply may be
 * JSON or an event stream; the checks look for the result's text in either. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define MCP_VERSION "2025-11-25"
#define ACCEPT "Accept: application/json, text/event-stream\r\n"

static void
mcp_post(struct mcp *m, const char *body, struct resp *r, bool keep_head)
{
        char extra[300];

        if (m->sid[0])
                snprintf(extra, sizeof(extra), ACCEPT "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: " MCP_VERSION "\r\n",
                         m->sid);
        else
                snprintf(extra, sizeof(extra), ACCEPT);
        request_h(&m->c, "POST", "/mcp", extra, body, r, keep_head);
}

void
mcp_open(struct mcp *m, int port)
{
        static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                                   "\"protocolVersion\":\"" MCP_VERSION "\",\"capabilities\":{},"
                                   "\"clientInfo\":{\"name\":\"bench_server\",\"version\":\"1\"}}}";
        struct resp r;

        memset(m, 0, sizeof(*m));
        conn_init(&m->c, port);
        m->next_id = 1;
        mcp_post(m, init, &r, true);
        expect_status(&r, 200, "MCP initialize");
        if (!resp_header(&r, "Mcp-Session-Id", m->sid, sizeof(m->sid)) || !m->sid[0])
                die("MCP initialize: no Mcp-Session-Id in the reply");
        if (!strstr(r.body, "\"protocolVersion\":\"" MCP_VERSION "\""))
                die("MCP initialize did not agree on " MCP_VERSION ": %.300s", r.body);
        free(r.body);
        free(r.head);
        mcp_post(m, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &r, false);
        expect_status(&r, 202, "MCP notifications/initialized");
        free(r.body);
}

void
mcp_run_command(struct mcp *m, const char *sandbox, const char *cmd)
{
        char body[512], id[32];
        struct resp r;
        int n;

        n = snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":"
                     "{\"name\":\"run_command\",\"arguments\":{\"cmd\":\"%s\",\"sandbox_id\":\"%s\"}}}",
                     m->next_id, cmd, sandbox);
        if (n < 0 || (size_t)n >= sizeof(body))
                die("MCP request too long");
        snprintf(id, sizeof(id), "\"id\":%ld,", m->next_id++);
        mcp_post(m, body, &r, false);
        expect_status(&r, 200, "MCP tools/call run_command");
        if (!strstr(r.body, id) || !strstr(r.body, "\"result\":") || strstr(r.body, "\"isError\":true") ||
            !strstr(r.body, "\"status\":\"ok\"") || !strstr(r.body, "\"exit_code\":0"))
                die("MCP run_command %s did not succeed: %.300s", cmd, r.body);
        free(r.body);
}

void
mcp_close(struct mcp *m)
{
        char extra[200];
        struct resp r;

        snprintf(extra, sizeof(extra), "Mcp-Session-Id: %s\r\n", m->sid);
        request_h(&m->c, "DELETE", "/mcp", extra, NULL, &r, false);
        expect_status(&r, 204, "MCP DELETE /mcp");
        free(r.body);
        conn_close(&m->c);
}
