/* The self-description endpoints: /openapi.json (generated from the
 * router's tables and the tool catalog), /.well-known/ai-plugin.json, the
 * guide, the tool catalog in MCP, OpenAI and Anthropic formats, and the
 * logo the manifest points at. Absolute URLs come from the Host header,
 * else from the listening address. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "ops/catalog.h"
#include "rest/openapi_doc.h"
#include "rest/rest.h"


/* A 64x64 terminal prompt. */
static const unsigned char logo_png[] = {
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
        0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x40, 0x08, 0x02, 0x00, 0x00, 0x00, 0x25, 0x0b, 0xe6,
        0x89, 0x00, 0x00, 0x00, 0xc8, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0xed, 0xda, 0x31, 0x0e, 0x80,
        0x20, 0x0c, 0x85, 0x61, 0x4e, 0xe2, 0xe0, 0xe8, 0x15, 0xdc, 0x1c, 0x1d, 0x3d, 0x91, 0x27, 0xf5,
        0x2c, 0x0e, 0x26, 0x2e, 0xc6, 0x41, 0x2d, 0x6d, 0x9f, 0xfc, 0x49, 0x47, 0x06, 0xbe, 0x00, 0x6d,
        0x21, 0x94, 0xae, 0x1f, 0xa4, 0xa3, 0x00, 0x00, 0x60, 0x0e, 0x18, 0xa7, 0x25, 0x6d, 0xfc, 0x1d,
        0x70, 0x37, 0x28, 0x4f, 0x5c, 0x67, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0xa0, 0x0d, 0xc0, 0xbc, 0xad, 0x47, 0x08, 0xaf, 0x40, 0xb8, 0xc1, 0x60, 0x0b, 0xc5, 0x1a, 0x6c,
        0xce, 0x40, 0xa0, 0xc1, 0xec, 0x10, 0x47, 0x19, 0x2c, 0xb3, 0x50, 0x88, 0xc1, 0x38, 0x8d, 0xfa,
        0x1b, 0xec, 0xeb, 0x80, 0xb3, 0xa1, 0x4a, 0x21, 0xf3, 0x34, 0xd4, 0xaa, 0xc4, 0x6e, 0x86, 0x8a,
        0xad, 0x84, 0x8f, 0xa1, 0x6e, 0x2f, 0xe4, 0x60, 0x00, 0xf0, 0xd7, 0x2d, 0xa4, 0x7d, 0x88, 0xb5,
        0xd3, 0xa8, 0x76, 0x21, 0xd3, 0x6e, 0x25, 0xb4, 0x9b, 0x39, 0xed, 0x76, 0x5a, 0xfb, 0x42, 0xf3,
        0x74, 0xf6, 0xe7, 0xf8, 0x47, 0x91, 0xe8, 0x52, 0x9f, 0x08, 0xf0, 0x6e, 0xe7, 0xe4, 0x5a, 0x81,
        0x2f, 0x45, 0x5a, 0x15, 0xc0, 0xd3, 0x22, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80,
        0x13, 0x80, 0x5f, 0x8b, 0x39, 0x00, 0xfc, 0xdc, 0x05, 0xd0, 0x14, 0x60, 0x07, 0xa3, 0x13, 0xf7,
        0x6a, 0xd5, 0xd6, 0xa2, 0x25, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60,
        0x82,
};

/* "http://HOST" from the Host header when it is a plain host[:port], else
 * the listening URL, else "" (a unix socket without Host: relative URLs). */
static void
base_url(struct xb_req *r, char *buf, size_t n)
{
        struct xb_rest *s = xb_rest_of(r);
        const char *host = xb_req_header(r, "Host"), *proto = xb_req_header(r, "X-Forwarded-Proto");
        const char *url = s->http ? xb_http_url(s->http) : NULL;

        if (host && *host && strlen(host) < 256 &&
            strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") == strlen(host)) {
                snprintf(buf, n, "%s://%s", proto && !strcmp(proto, "https") ? "https" : "http", host);
                return;
        }
        snprintf(buf, n, "%s", url && !strncmp(url, "http", 4) ? url : "");
}

static void
openapi_json(struct xb_req *r)
{
        struct xb_rest *s = xb_rest_of(r);
        char base[300];
        json_t *doc;

        base_url(r, base, sizeof(base));
        doc = xb_openapi_build(s->routes, s->nroutes, base, s->no_auth, NULL);
        if (!doc) {
                xb_reply_error(r, 500, "internal", "report this to the operator; GET /v1/guide still works",
                               "the OpenAPI document could not be built");
                return;
        }
        xb_reply_json(r, 200, doc);
}

static const char description_for_model[] =
        "execbox gives you a disposable Linux sandbox (Debian, bash, Python 3 with numpy, pandas and matplotlib, "
        "Node.js; no network) to run shell commands and code and to read and write files.\n"
        "Before your first command, call get_guide (GET /v1/guide) once and follow it.\n"
        "Work like this: create a sandbox with POST /v1/sandboxes and keep its id; run commands with POST "
        "/v1/sandboxes/{id}/exec {\"cmd\": \"...\"}; always check exit_code and read stderr when it is not 0. "
        "Write files with PUT /v1/sandboxes/{id}/files?path=/home/user/NAME (the body is the content) rather "
        "than with heredocs. For Python step by step, POST /api/run_cell keeps one interpreter whose "
        "variables persist.\n"
        "For commands that may run long, set yield_after_s: you get status running, the output so far and a "
        "pid, and continue with GET /v1/sandboxes/{id}/processes/{pid}/output?stdout_offset=N. Long output "
        "keeps its head and tail; filter it with tail, grep or head.\n"
        "Every error carries a hint saying what to do next: follow it. A sandbox expires after 15 minutes "
        "without use; if it is gone (404 sandbox_not_found), create a new one. Use absolute paths under "
        "/home/user. Tell the user when something needs the network or software that is not installed.";

static void
plugin_manifest(struct xb_req *r)
{
        struct xb_rest *s = xb_rest_of(r);
        const char *vtoken = getenv("EXECBOX_PLUGIN_VERIFICATION_TOKEN");
        const char *email = getenv("EXECBOX_CONTACT_EMAIL");
        char base[300], api[340], logo[340], legal[340];
        json_t *auth;

        base_url(r, base, sizeof(base));
        snprintf(api, sizeof(api), "%s/openapi.json", base);
        snprintf(logo, sizeof(logo), "%s/logo.png", base);
        snprintf(legal, sizeof(legal), "%s/v1/guide#legal", base);
        if (s->no_auth)
                auth = json_pack("{s:s}", "type", "none");
        else {
                /* The operator's token is the service's; OpenAI hands out a
                 * verification token when the plugin is registered. */
                auth = json_pack("{s:s,s:s}", "type", "service_http", "authorization_type", "bearer");
                if (vtoken && *vtoken)
                        json_object_set_new(auth, "verification_tokens", json_pack("{s:s}", "openai", vtoken));
        }
        xb_reply_json(r, 200,
                      json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:{s:s,s:s},s:s,s:s,s:s}", "schema_version", "v1",
                                "name_for_human", "execbox", "name_for_model", "execbox", "description_for_human",
                                "Run code and shell commands in disposable Linux sandboxes.",
                                "description_for_model", description_for_model, "auth", auth, "api", "type", "openapi",
                                "url", api, "logo_url", logo, "contact_email",
                                email && *email ? email : "admin@localhost", "legal_info_url", legal));
}

static void
guide(struct xb_req *r)
{
        struct xb_rest *s = xb_rest_of(r);
        _cleanup_free_ char *text = xb_guide_render(&s->core->o.defaults);

        if (!text) {
                xb_reply_error(r, 503, "out_of_memory", "retry", "out of memory");
                return;
        }
        if (xb_req_accepts(r, "application/json") &&
            xb_req_accept_q(r, "application/json") > xb_req_accept_q(r, "text/markdown")) {
                xb_reply_json(r, 200, json_pack("{s:s}", "guide", text));
                return;
        }
        xb_reply_bytes(r, 200, "text/markdown; charset=utf-8", text, strlen(text));
}

static void
tools(struct xb_req *r)
{
        int qerr;
        const char *f = xb_req_query(r, "format", &qerr);
        int format = qerr < 0 ? -1 : xb_catalog_format(f);

        if (format < 0) {
                xb_reply_error(r, 400, "invalid_request", "use format=mcp (the default), format=openai, "
                               "format=openai-responses or format=anthropic", "unknown tool format `%.32s`", f ? f : "");
                return;
        }
        xb_reply_json(r, 200, json_pack("{s:o}", "tools", xb_catalog_list_json(format)));
}

static void
logo(struct xb_req *r)
{
        xb_req_add_reply_header(r, "Cache-Control", "public, max-age=86400");
        xb_reply_bytes(r, 200, "image/png", logo_png, sizeof(logo_png));
}

const struct xb_route xb_api_routes_docs[] = {
        { "GET", "/openapi.json", openapi_json, XB_ROUTE_PUBLIC },
        { "GET", "/.well-known/ai-plugin.json", plugin_manifest, XB_ROUTE_PUBLIC },
        { "GET", "/v1/guide", guide, XB_ROUTE_PUBLIC },
        { "GET", "/v1/tools", tools, 0 },
        { "GET", "/logo.png", logo, XB_ROUTE_PUBLIC },
};
const size_t xb_api_nroutes_docs = sizeof(xb_api_routes_docs) / sizeof(xb_api_routes_docs[0]);
