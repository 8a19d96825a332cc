/* Protected-resource metadata (RFC 9728) for remote MCP connectors: /mcp
 * is the resource, and it takes the server's bearer token in the
 * Authorization header. There is no authorization server to name: the
 * operator hands the token to the connector (README, "Remote clients").
 * A 401 on /mcp points here (WWW-Authenticate resource_metadata). */
#include <jansson.h>
#include <stdio.h>

#include "mcp/mcp.h"

void
xb_mcp_resource_metadata(struct xb_req *r)
{
        char base[300], resource[320];

        xb_req_base_url(r, base, sizeof(base));
        snprintf(resource, sizeof(resource), "%s/mcp", base);
        xb_reply_json(r, 200, json_pack("{s:s,s:s,s:[s]}", "resource", resource, "resource_name", "execbox",
                                        "bearer_methods_supported", "header"));
}
