/* Every REST operation, for /openapi.json. Those that are tools only name
 * the tool (and add what REST takes beyond it); the rest carry their own
 * parameters, bodies and replies. tests/unit/test_catalog.c checks that
 * every route of the router has an entry here and nothing else does. */
#include "ops/catalog_schemas.h"
#include "rest/openapi.h"

/* The operations are laid out by hand. */
/* clang-format off */
#define JSON_REPLY(desc, schema) "{\"description\": \"" desc "\", \"content\": {\"application/json\": " \
                                 "{\"schema\": " schema "}}}"
#define JSON_BODY(schema) "{\"required\": true, \"content\": {\"application/json\": {\"schema\": " schema "}}}"
#define JSON_BODY_OPT(schema) "{\"required\": false, \"content\": {\"application/json\": {\"schema\": " schema "}}}"
#define OBJ_OPEN(props, req) "{\"type\": \"object\", \"properties\": {" props "}, \"required\": [" req "]}"
#define OBJ_CLOSED(props, req) "{\"type\": \"object\", \"properties\": {" props "}, \"required\": [" req "], " \
                               "\"additionalProperties\": false}"
#define IMAGE_REPLY "{\"description\": \"The image.\", \"content\": {\"image/png\": {\"schema\": {\"type\": " \
                    "\"string\", \"format\": \"binary\"}}, \"image/jpeg\": {\"schema\": {\"type\": \"string\", " \
                    "\"format\": \"binary\"}}}}"
#define PATH_PARAM(desc) "{\"name\": \"path\", \"in\": \"query\", \"required\": true, \"description\": \"" desc \
                         "\", \"schema\": {\"type\": \"string\"}}"
#define OK_REPLY JSON_REPLY("Done.", OBJ_OPEN("\"ok\": {\"type\": \"boolean\"}", "\"ok\""))
#define TIMEOUT_BODY(desc) JSON_BODY_OPT(OBJ_CLOSED("\"timeout_s\": {\"type\": [\"number\", \"null\"], "        \
                                                    "\"minimum\": 0, \"description\": \"" desc "\"}", ""))

#define J_WATCH_EVENT "{\"type\": \"object\", \"properties\": {\"type\": {\"type\": \"string\", \"enum\": [\"create\", \"write\", " \
        "\"remove\", \"rename\", \"chmod\", \"overflow\"]}, \"name\": {\"type\": \"string\", \"description\": " \
        "\"Relative to the watched directory.\"}}, \"required\": [\"type\", \"name\"]}"
#define WATCH_FIELDS                                                                                             \
        "\"path\": {\"type\": \"string\", \"description\": \"The directory; relative paths are under "         \
        "/home/user.\"}, \"recursive\": {\"type\": [\"boolean\", \"null\"], \"description\": \"Its "             \
        "subdirectories too (up to 4096 directories). null: false.\"}, \"user\": {\"type\": [\"string\", "         \
        "\"null\"], \"enum\": [\"user\", \"root\", null], \"description\": \"Whose permissions apply. null: "   \
        "user.\"}"

/* REST-only fields of exec and process start (src/ops/op_proc.c: parse_cmd). */
#define PTY_PROP                                                                                                 \
        "\"pty\": {\"type\": [\"object\", \"null\"], \"description\": \"Run it on a terminal of its own (a pty of " \
        "the sandbox's devpts) of this size: its output is stdout, input goes to the terminal, resize with "    \
        ".../resize. null: pipes.\", \"properties\": {\"cols\": {\"type\": \"integer\", \"minimum\": 1, "            \
        "\"maximum\": 4096}, \"rows\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 4096}}, "                \
        "\"additionalProperties\": false}, "
#define TAG_PROP                                                                                                 \
        "\"tag\": {\"type\": [\"string\", \"null\"], \"maxLength\": 256, \"description\": \"Your name for it: "     \
        "listed, and usable instead of the pid by process_attach.\"}, "
#define CMD_EXTRAS(limit, more)                                                                                  \
        "{" more "\"argv\": {\"type\": [\"array\", \"null\"], \"maxItems\": 4096, \"items\": {\"type\": \"string\"}, "  \
        "\"description\": \"A program and its arguments, run without a shell. Give exactly one of cmd and "     \
        "argv.\"}, "                                                                                             \
        "\"user\": {\"type\": [\"string\", \"null\"], \"enum\": [\"user\", \"root\", null], \"description\": "  \
        "\"user (uid 1000, the default) or root.\"}, "                                                          \
        "\"output_limit\": {\"type\": [\"integer\", \"null\"], \"description\": \"Bytes of each stream kept, "   \
        "head and tail. null: " limit ".\"}}"

#define J_VARIABLE                                                                                               \
        OBJ_OPEN("\"name\": {\"type\": [\"string\", \"null\"]}, \"type\": {\"type\": [\"string\", \"null\"], "  \
                 "\"description\": \"Its Python type.\"}, \"repr\": {\"type\": \"string\"}, \"json\": "         \
                 "{\"description\": \"The value as JSON when it converts, else null.\"}",                       \
                 "\"name\", \"type\", \"repr\", \"json\"")

#define J_PANDORA_EXEC                                                                                           \
        OBJ_OPEN("\"status\": {\"type\": \"string\"}, \"exit_code\": {\"type\": [\"integer\", \"null\"]}, "       \
                 "\"stdout\": {\"type\": \"string\"}, \"stderr\": {\"type\": \"string\"}, "                     \
                 "\"duration_ms\": {\"type\": \"integer\"}, \"sandbox_id\": {\"type\": \"string\"}, "            \
                 "\"hint\": {\"type\": \"string\", \"description\": \"Present when the command failed.\"}",       \
                 "\"status\", \"exit_code\", \"stdout\", \"stderr\", \"sandbox_id\"")

#define J_PANDORA_WRITE                                                                                          \
        OBJ_OPEN("\"success\": {\"type\": \"boolean\"}, \"filePath\": {\"type\": \"string\"}, "                 \
                 "\"size\": {\"type\": [\"integer\", \"null\"]}, \"sandbox_id\": {\"type\": \"string\"}",       \
                 "\"success\", \"filePath\", \"sandbox_id\"")

#define J_DANGERMODE                                                                                             \
        OBJ_OPEN("\"success\": {\"type\": \"boolean\"}, "                                                       \
                 "\"execute_result\": {\"type\": [\"object\", \"null\"], \"description\": \"The last line's "   \
                 "value, one entry per MIME type; images as URLs.\"}, "                                          \
                 "\"displays\": {\"type\": \"array\", \"items\": {\"type\": \"object\"}}, "                     \
                 "\"stdout\": {\"type\": \"string\"}, \"stderr\": {\"type\": \"string\"}, "                     \
                 "\"error\": {\"type\": [\"object\", \"null\"], \"properties\": {\"ename\": {\"type\": "        \
                 "\"string\"}, \"evalue\": {\"type\": \"string\"}, \"traceback\": {\"type\": \"array\", "       \
                 "\"items\": {\"type\": \"string\"}}}}",                                                         \
                 "\"success\", \"execute_result\", \"displays\", \"stdout\", \"stderr\", \"error\"")

/* Any method, any path below the port: one operation per method. */
#define PROXY_OP(m, opid)                                                                                        \
        { .method = m, .path = "/v1/sandboxes/{id}/ports/{port}", .id = opid, .tag = "ports",                    \
          .summary = m " to the server on this port in the sandbox (and any path below it).",                   \
          .description = "Forwarded as HTTP/1.1 to 127.0.0.1:{port} (or [::1]) in the sandbox: the path after "   \
                         "{port}, the query and the headers as sent (the bearer token and hop-by-hop headers "     \
                         "left out; X-Forwarded-Host, -Proto and -Prefix added), the body streamed both ways. "    \
                         "WebSocket (Upgrade) works. .../ports/{port} itself redirects to .../ports/{port}/. "     \
                         "Instead of the token, a link from share_port (?xb_share=, or its cookie). With "        \
                         "--sandbox-domain D, the host {port}-{id}.D is routed here with the path as is. 502 "      \
                         "port_closed when nothing listens.",                                                      \
          .errors = "403 502",                                                                                    \
          .reply = "{\"description\": \"Whatever the server in the sandbox answers.\"}" }

const char *const xb_op_tags[] = {
        "meta", "Health, readiness and metrics.",
        "docs", "This document, the tools, the guide and the plugin manifest.",
        "sandboxes", "Create, list, extend and delete sandboxes.",
        "network", "A sandbox's egress: its policy, changed live, and the log of every decision.",
        "secrets", "Values sandboxes use on the network without ever holding them.",
        "approvals", "What waits for a human: secrets asked for from inside, hosts the policy marks ask.",
        "commands", "Run a command and wait for its result.",
        "processes", "Background processes: start, read output by offset, write stdin, signal, wait.",
        "files", "Read, write, list and move files in a sandbox.",
        "sessions", "Stateful code sessions (Python, JavaScript, bash) and the images their cells display.",
        "plugin", "The seeds' plugin API (dangermode): one default sandbox and Python session per token.",
        "ports", "Servers listening in a sandbox, reached through this server: list, share, proxy.",
        "mcp", "The Model Context Protocol endpoint (Streamable HTTP), for MCP clients rather than direct use.",
        NULL, NULL,
};

const struct xb_op_def xb_op_defs[] = {
        /* ---- meta (meta.c) ---- */
        { .method = "GET", .path = "/healthz", .id = "healthz", .tag = "meta",
          .summary = "Liveness: the server answers.",
          .reply = JSON_REPLY("Alive.", OBJ_OPEN("\"status\": {\"type\": \"string\", \"enum\": [\"ok\"]}", "\"status\"")) },
        { .method = "GET", .path = "/readyz", .id = "readyz", .tag = "meta",
          .summary = "Readiness: the server takes new work, or drains (still 200) before it stops.",
          .errors = "503",
          .reply = JSON_REPLY("Ready, or draining: requests in flight finish, creates get 503.", OBJ_OPEN(
                  "\"status\": {\"type\": \"string\", \"enum\": [\"ready\", \"draining\"]}, "
                  "\"draining\": {\"type\": \"boolean\", \"description\": \"Only while draining, true.\"}, "
                  "\"sandboxes\": {\"type\": \"integer\"}, "
                  "\"pool_ready\": {\"type\": \"integer\"}, \"pool_target\": {\"type\": \"integer\"}, "
                  "\"cgroups\": {\"type\": \"string\", \"description\": \"Which cgroup hierarchy is in use.\"}",
                  "\"status\", \"sandboxes\", \"pool_ready\", \"pool_target\", \"cgroups\"")) },
        { .method = "GET", .path = "/metrics", .id = "metrics", .tag = "meta",
          .summary = "Prometheus metrics.",
          .reply = "{\"description\": \"Prometheus text format 0.0.4.\", \"content\": {\"text/plain\": {\"schema\": "
                   "{\"type\": \"string\"}}}}" },

        /* ---- docs (docs.c) ---- */
        { .method = "GET", .path = "/openapi.json", .id = "get_openapi", .tag = "docs",
          .summary = "This OpenAPI 3.1 document.",
          .reply = JSON_REPLY("The document.", "{\"type\": \"object\"}") },
        { .method = "GET", .path = "/.well-known/ai-plugin.json", .id = "get_plugin_manifest", .tag = "docs",
          .summary = "The AI plugin manifest.",
          .reply = JSON_REPLY("The manifest.", OBJ_OPEN(
                  "\"schema_version\": {\"type\": \"string\"}, \"name_for_human\": {\"type\": \"string\"}, "
                  "\"name_for_model\": {\"type\": \"string\"}, \"description_for_human\": {\"type\": \"string\"}, "
                  "\"description_for_model\": {\"type\": \"string\"}, \"auth\": {\"type\": \"object\"}, "
                  "\"api\": {\"type\": \"object\"}, \"logo_url\": {\"type\": \"string\"}, "
                  "\"contact_email\": {\"type\": \"string\"}, \"legal_info_url\": {\"type\": \"string\"}",
                  "\"schema_version\", \"name_for_human\", \"name_for_model\", \"description_for_human\", "
                  "\"description_for_model\", \"auth\", \"api\", \"logo_url\", \"contact_email\", \"legal_info_url\"")) },
        { .tool = "get_guide", .tag = "docs", .summary = "The usage guide, written for a language model." },
        { .method = "GET", .path = "/v1/tools", .id = "list_tools", .tag = "docs",
          .summary = "The tool catalog, for MCP, OpenAI or Anthropic.",
          .description = "Every tool with its input and output schema. format=openai gives strict function "
                         "schemas, anthropic gives input_schema, mcp (the default) gives tools/list entries.",
          .params = "[{\"name\": \"format\", \"in\": \"query\", \"required\": false, \"description\": \"mcp (the "
                    "default), openai, openai-responses or anthropic.\", \"schema\": {\"type\": \"string\", \"enum\": "
                    "[\"mcp\", \"openai\", \"openai-responses\", \"anthropic\"]}}]",
          .reply = JSON_REPLY("The tools.", OBJ_OPEN("\"tools\": {\"type\": \"array\", \"items\": {\"type\": "
                                                     "\"object\"}}", "\"tools\"")) },
        { .method = "POST", .path = "/v1/tools/{tool}", .id = "call_tool", .tag = "docs", .errors = "404",
          .summary = "Run one tool call from any LLM framework.",
          .description = "The body is the call as OpenAI Chat Completions, the Responses API, Anthropic or MCP "
                         "hand it over, or the bare arguments. The reply has what the model should see (content, "
                         "text), the structured result, is_error, and the messages to append for each framework.",
          .body = "{\"required\": false, \"content\": {\"application/json\": {\"schema\": {\"type\": "
                  "\"object\"}}}}",
          .reply = JSON_REPLY("The tool's outcome (is_error says if it failed).",
                              OBJ_OPEN("\"content\": {\"type\": \"array\", \"items\": {\"type\": \"object\"}}, "
                                       "\"text\": {\"type\": \"string\"}, \"is_error\": {\"type\": \"boolean\"}, "
                                       "\"structured\": {}, \"error\": {}, \"openai_message\": {\"type\": \"object\"}, "
                                       "\"responses_item\": {\"type\": \"object\"}, \"anthropic_block\": {\"type\": "
                                       "\"object\"}", "\"content\", \"text\", \"is_error\"")) },
        { .method = "GET", .path = "/logo.png", .id = "get_logo", .tag = "docs", .summary = "The logo.",
          .reply = "{\"description\": \"A PNG image.\", \"content\": {\"image/png\": {\"schema\": {\"type\": "
                   "\"string\", \"format\": \"binary\"}}}}" },

        /* ---- sandboxes (api.c) ---- */
        { .tool = "sandbox_create", .tag = "sandboxes", .errors = "429",
          .body = "{\"secrets\": {\"type\": [\"array\", \"null\"], \"maxItems\": 32, \"items\": "
                  "{\"type\": \"string\"}, \"description\": \"Names of your secrets (POST /v1/secrets) it may "
                  "use: each is an env var holding a placeholder the egress proxy swaps for the value.\"}, "
                  "\"mounts\": {\"type\": [\"array\", \"null\"], \"maxItems\": 32, \"description\": \"Host "
                  "directories to bind in; only those the operator allowed with --allow-mount.\", \"items\": "
                  OBJ_CLOSED("\"host\": {\"type\": \"string\"}, \"path\": {\"type\": \"string\"}, \"readonly\": "
                             "{\"type\": [\"boolean\", \"null\"], \"description\": \"null: true.\"}",
                             "\"host\", \"path\"") "}, "
                  "\"metadata\": {\"type\": [\"object\", \"null\"], \"description\": \"Returned as is; at most 64 "
                  "keys and 16 KiB.\"}, "
                  "\"auto_pause\": {\"type\": [\"boolean\", \"null\"], \"description\": \"At the idle timeout, pause "
                  "instead of deleting; the next request that uses it resumes it. null: false.\"}, "
                  "\"paused_ttl_s\": {\"type\": [\"number\", \"null\"], \"minimum\": 1, \"description\": \"Delete "
                  "it after this long paused. null: the operator's --paused-ttl (also the most allowed).\"}, "
                  "\"max_lifetime_s\": {\"type\": [\"number\", \"null\"], \"minimum\": 1, \"description\": \"Delete "
                  "it this long after creation, busy or not. null: the operator's --max-lifetime (also the most "
                  "allowed).\"}}" },
        { .tool = "sandbox_list", .tag = "sandboxes" },
        { .tool = "sandbox_snapshot", .tag = "templates", .errors = "409" },
        /* With Accept: text/event-stream the build log streams: step and log events, then result or error. */
        /* Or an image archive uploaded as the body, named in the query. */
        { .tool = "template_build", .tag = "templates", .errors = "404 409 413 415 422 507",
          .summary = "Build a template from steps, or import an OCI image archive; the log streams as SSE.",
          .raw_types = "application/x-tar application/vnd.oci.image.layout.v1+tar",
          .params = "[{\"name\": \"name\", \"in\": \"query\", \"required\": false, \"description\": \"With "
                    "an archive as the body (docker save's tar; no Content-Encoding): the template's name. Up to "
                    "--template-upload-max (413); 507 when the server's state directory is low.\", "
                    "\"schema\": {\"type\": \"string\"}}, "
                    "{\"name\": \"workdir\", \"in\": \"query\", \"required\": false, \"description\": "
                    "\"With an archive as the body: the working directory, over the image's.\", \"schema\": "
                    "{\"type\": \"string\"}}, "
                    "{\"name\": \"user\", \"in\": \"query\", \"required\": false, \"description\": "
                    "\"With an archive as the body: user or root, over the image's.\", \"schema\": "
                    "{\"type\": \"string\", \"enum\": [\"user\", \"root\"]}}]" },
        { .tool = "sandbox_fork", .tag = "sandboxes", .errors = "409 429" },
        /* With Accept: text/event-stream: progress and log events, then result or error. */
        { .tool = "install", .tag = "sandboxes", .errors = "404 409 422",
          .summary = "Install apt packages through the shared install cache; progress streams as SSE." },
        { .method = "GET", .path = "/v1/templates", .id = "template_list", .tag = "templates",
          .summary = "List templates: base and the snapshots you made.",
          .reply = JSON_REPLY("The templates.", "{\"type\": \"object\", \"properties\": {\"templates\": "
                              "{\"type\": \"array\", \"items\": " J_TEMPLATE "}}, \"required\": [\"templates\"]}") },
        { .method = "GET", .path = "/v1/templates/{name}", .id = "get_template", .tag = "templates",
          .summary = "Describe a template.", .reply = JSON_REPLY("The template.", J_TEMPLATE) },
        { .method = "DELETE", .path = "/v1/templates/{name}", .id = "template_delete", .tag = "templates",
          .summary = "Delete a template; refused (409) while a sandbox uses it.",
          .reply = "{\"description\": \"Deleted.\"}" },
        { .method = "POST", .path = "/v1/secrets", .id = "secret_create", .tag = "secrets", .status = 201,
          .summary = "Store a secret (or replace one of the same name) for sandboxes to use without seeing it.",
          .description = "A sandbox created with \"secrets\": [name] gets a placeholder in the env var NAME; its "
                         "egress proxy swaps the placeholder for the value, and adds header with {value} filled "
                         "in, only in requests to hosts (HTTPS too: the server terminates TLS for those hosts "
                         "with its own CA, which the sandbox trusts). No reply, log or metric holds the value.",
          .body = JSON_BODY(OBJ_CLOSED("\"name\": {\"type\": \"string\", \"pattern\": "
                            "\"^[A-Za-z_][A-Za-z0-9_]{0,63}$\", \"description\": \"Also the env var's name.\"}, "
                            "\"value\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 4096}, "
                            "\"hosts\": {\"type\": \"array\", \"minItems\": 1, \"maxItems\": 32, \"items\": "
                            "{\"type\": \"string\"}, \"description\": \"Names or *.wildcards it is sent to.\"}, "
                            "\"header\": {\"type\": [\"string\", \"null\"], \"description\": \"Such as "
                            "Authorization: Bearer {value}. null: only placeholders are swapped.\"}",
                            "\"name\", \"value\", \"hosts\"")),
          .reply = JSON_REPLY("The secret, without its value.", J_SECRET) },
        { .tool = "list_secrets", .tag = "secrets",
          .summary = "List your secrets (names, hosts, headers; never values)." },
        { .tool = "request_secret", .tag = "secrets", .errors = "403 503" },
        { .method = "DELETE", .path = "/v1/secrets/{name}", .id = "secret_delete", .tag = "secrets",
          .summary = "Delete a secret; sandboxes that hold it send the placeholder from now on.",
          .reply = "{\"description\": \"Deleted.\"}" },
        { .method = "GET", .path = "/v1/approvals", .id = "approval_list", .tag = "approvals",
          .summary = "What waits for a human: secrets sandboxes asked for, connections to names marked ask.",
          .description = "Each entry has id, kind (secret or egress), sandbox_id, reason, the secret's name (and "
                         "the hosts and header the sandbox proposed) or the host and port, and when it expires "
                         "(then it is denied). An admin token sees every tenant's.",
          .reply = JSON_REPLY("The pending approvals.", OBJ_OPEN("\"approvals\": {\"type\": \"array\", "
                              "\"items\": {\"type\": \"object\"}}", "\"approvals\"")) },
        { .method = "POST", .path = "/v1/approvals/{id}", .id = "approval_decide", .tag = "approvals",
          .errors = "404",
          .summary = "Allow or deny what waits; the waiting request goes on or is refused at once.",
          .description = "For a secret, allow with its value (and hosts and header, if the sandbox proposed "
                         "none): it becomes your secret and the sandbox gets its placeholder; without a value "
                         "your existing secret of that name is attached. For egress, remember adds the host to "
                         "the sandbox's allow list. The reply never holds the value.",
          .body = JSON_BODY(OBJ_CLOSED("\"decision\": {\"type\": \"string\", \"enum\": [\"allow\", "
                            "\"deny\"]}, \"remember\": {\"type\": [\"boolean\", \"null\"]}, \"value\": "
                            "{\"type\": [\"string\", \"null\"]}, \"hosts\": {\"type\": [\"array\", "
                            "\"null\"], \"items\": {\"type\": \"string\"}}, \"header\": {\"type\": "
                            "[\"string\", \"null\"]}", "\"decision\"")),
          .reply = JSON_REPLY("The decision.", OBJ_OPEN("\"id\": {\"type\": \"string\"}, \"decision\": "
                              "{\"type\": \"string\"}, \"kind\": {\"type\": \"string\"}, \"name\": "
                              "{\"type\": \"string\"}, \"remembered\": {\"type\": \"boolean\"}",
                              "\"id\", \"decision\"")) },
        { .method = "GET", .path = "/v1/sandboxes/{id}", .id = "get_sandbox", .tag = "sandboxes",
          .summary = "Describe a sandbox.", .reply = JSON_REPLY("The sandbox.", J_SANDBOX) },
        { .tool = "sandbox_delete", .tag = "sandboxes" },
        { .method = "POST", .path = "/v1/sandboxes/{id}/keepalive", .id = "keepalive_sandbox", .tag = "sandboxes",
          .summary = "Restart a sandbox's idle timer, optionally with a new timeout_s.",
          .body = TIMEOUT_BODY("The new idle time to live. null: keep the current one."),
          .reply = JSON_REPLY("The sandbox.", J_SANDBOX) },
        { .tool = "sandbox_pause", .tag = "sandboxes", .errors = "503",
          .body = "{\"auto_resume\": {\"type\": [\"boolean\", \"null\"], \"description\": \"The next request "
                  "that uses it resumes it, instead of answering 409 paused. null: false.\"}}" },
        { .tool = "sandbox_resume", .tag = "sandboxes" },

        { .method = "GET", .path = "/v1/sandboxes/{id}/network", .id = "get_network", .tag = "network",
          .summary = "A sandbox's network policy, the server's ceiling and the totals so far.",
          .reply = JSON_REPLY("The policy.", J_NETWORK) },
        { .tool = "sandbox_network", .tag = "network", .errors = "403",
          .description = "Change the policy live: the next connection from the sandbox is decided by it. Body "
                         "{\"mode\": \"none\"|\"packages\"|\"allowlist\"|\"open\", \"allow\": [...], \"deny\": "
                         "[...], \"peers\": [...]}; deny wins. peers (any mode) are sandbox ids of the tenant "
                         "this one may talk with, each listing this one too. Above the server's --network-max "
                         "it is 403." },
        { .method = "GET", .path = "/v1/sandboxes/{id}/network/log", .id = "network_log", .tag = "network",
          .summary = "Every egress decision for the sandbox: time, host, port, address, rule, allowed, bytes.",
          .params = "[{\"name\": \"offset\", \"in\": \"query\", \"required\": false, \"description\": "
                    "\"The first entry's offset (default 0).\", \"schema\": {\"type\": \"integer\", \"minimum\": 0}}, "
                    "{\"name\": \"limit\", \"in\": \"query\", \"required\": false, \"description\": \"Most "
                    "entries (default 1000).\", \"schema\": {\"type\": \"integer\", \"minimum\": 1, "
                    "\"maximum\": 1000}}]",
          .reply = JSON_REPLY("The entries.", OBJ_OPEN("\"entries\": {\"type\": \"array\", \"items\": "
                              "{\"type\": \"object\"}}, \"first_offset\": {\"type\": \"integer\"}, "
                              "\"next_offset\": {\"type\": \"integer\"}, \"dropped\": {\"type\": \"integer\"}",
                              "\"entries\", \"next_offset\"")) },
        { .method = "GET", .path = "/v1/sandboxes/{id}/events", .id = "sandbox_events", .tag = "sandboxes",
          .summary = "Read a sandbox's audit log, or follow it.",
          .description = "The sandbox's events in order (create, exec, file_write, file_delete, file_mkdir, "
                         "file_move, session_create, session_delete, cell, limit, delete), each {offset, time_ms, "
                         "type, ...}. JSON lines from offset (at most limit; X-Next-Offset says where to go on); "
                         "with Accept: application/json one object {events, first_offset, next_offset, dropped, "
                         "deleted}; with Accept: text/event-stream the events as they come, until the sandbox is "
                         "deleted. A deleted sandbox's log stays readable for the server's --audit-keep. Env values, "
                         "stdin and file contents are never logged.",
          .params = "[{\"name\": \"offset\", \"in\": \"query\", \"required\": false, \"description\": "
                    "\"The first event's offset (default 0).\", \"schema\": {\"type\": \"integer\", \"minimum\": 0}}, "
                    "{\"name\": \"limit\", \"in\": \"query\", \"required\": false, \"description\": \"Most "
                    "events to return (default 1000).\", \"schema\": {\"type\": \"integer\", \"minimum\": 1, "
                    "\"maximum\": 10000}}]",
          .sse = true, .sse_events = "event (one per audit event), then result ({next_offset, dropped, deleted})",
          .reply = "{\"description\": \"The events, one JSON object a line.\", \"content\": "
                   "{\"application/x-ndjson\": {\"schema\": {\"type\": \"string\"}}, \"application/json\": "
                   "{\"schema\": {\"type\": \"object\", \"properties\": {\"events\": {\"type\": \"array\", "
                   "\"items\": {\"type\": \"object\"}}, \"next_offset\": {\"type\": \"integer\"}, "
                   "\"first_offset\": {\"type\": \"integer\"}, \"dropped\": {\"type\": \"integer\"}, "
                   "\"deleted\": {\"type\": \"boolean\"}}, \"required\": [\"events\", \"next_offset\"]}}}}" },

        /* ---- published ports (api_ports.c) ---- */
        { .method = "GET", .path = "/v1/sandboxes/{id}/ports", .id = "list_ports", .tag = "ports",
          .summary = "List the ports that servers listen on in the sandbox.",
          .description = "What listens on TCP in the sandbox's own network (from its /proc/net/tcp and tcp6), "
                         "each with the url it is reached at (and domain_url with --sandbox-domain).",
          .reply = JSON_REPLY("The listening ports.", OBJ_OPEN("\"id\": {\"type\": \"string\"}, \"ports\": "
                   "{\"type\": \"array\", \"items\": " OBJ_OPEN("\"port\": {\"type\": \"integer\"}, "
                   "\"address\": {\"type\": \"string\"}, \"url\": {\"type\": \"string\"}, \"domain_url\": "
                   "{\"type\": \"string\"}", "\"port\", \"address\", \"url\"") "}", "\"id\", \"ports\"")) },
        { .tool = "sandbox_ports", .tag = "ports" },
        { .method = "POST", .path = "/v1/sandboxes/{id}/ports/{port}/share", .id = "share_port", .tag = "ports",
          .summary = "Make an expiring link to a port that works without the token.",
          .description = "The link (url, and domain_url with --sandbox-domain) carries ?xb_share=TOKEN, signed "
                         "for this sandbox and port until expires_at; its first use sets a cookie for the pages "
                         "it links to. An expired link gets 403 link_expired. A restart of the server revokes "
                         "every link.",
          .body = JSON_BODY_OPT(OBJ_CLOSED("\"ttl_s\": {\"type\": [\"number\", \"null\"], \"minimum\": 1, "
                                           "\"maximum\": 604800, \"description\": \"How long the link works. "
                                           "null: 3600.\"}", "")),
          .reply = JSON_REPLY("The link.", OBJ_OPEN("\"id\": {\"type\": \"string\"}, \"port\": {\"type\": "
                   "\"integer\"}, \"url\": {\"type\": \"string\"}, \"domain_url\": {\"type\": \"string\"}, "
                   "\"path\": {\"type\": \"string\"}, \"token\": {\"type\": \"string\"}, \"expires_at\": "
                   "{\"type\": \"integer\", \"description\": \"Unix seconds.\"}, \"ttl_s\": {\"type\": "
                   "\"integer\"}", "\"id\", \"port\", \"url\", \"token\", \"expires_at\"")) },
        PROXY_OP("GET", "proxy_port_get"),
        PROXY_OP("POST", "proxy_port_post"),
        PROXY_OP("PUT", "proxy_port_put"),
        PROXY_OP("PATCH", "proxy_port_patch"),
        PROXY_OP("DELETE", "proxy_port_delete"),

        /* ---- commands and processes (api.c) ---- */
        { .tool = "run_command", .tag = "commands", .rest_optional = true, .sse = true, .errors = "410 429",
          .sse_events = "start ({pid}), then stdout and stderr ({data}) as the command prints, or error "
                        "({code, message}) if it cannot start",
          .body = CMD_EXTRAS("1 MiB", PTY_PROP) },
        { .tool = "process_start", .tag = "processes", .rest_optional = true, .errors = "410 429",
          .body = CMD_EXTRAS("4 MiB", PTY_PROP TAG_PROP) },
        { .method = "GET", .path = "/v1/sandboxes/{id}/processes", .id = "list_processes", .tag = "processes",
          .summary = "List the processes the server tracks.",
          .params = "[{\"name\": \"detail\", \"in\": \"query\", \"required\": false, \"description\": \"Add what "
                    "was asked for each: argv, env (the request's own), cwd and tag.\", \"schema\": {\"type\": "
                    "\"boolean\"}}]",
          .reply = JSON_REPLY("The processes.", OBJ_OPEN("\"processes\": {\"type\": \"array\", \"items\": " J_PROCESS "}",
                                                         "\"processes\"")) },
        { .method = "GET", .path = "/v1/sandboxes/{id}/processes/{pid}", .id = "get_process", .tag = "processes",
          .summary = "Describe a process.", .reply = JSON_REPLY("The process.", J_PROCESS) },
        { .method = "DELETE", .path = "/v1/sandboxes/{id}/processes/{pid}", .id = "delete_process",
          .tag = "processes", .summary = "Forget a process, killing it if it still runs.", .status = 204 },
        { .tool = "process_read", .tag = "processes",
          .params = "[{\"name\": \"max_bytes\", \"in\": \"query\", \"required\": false, \"description\": \"Most "
                    "bytes of each stream to return (default 1 MiB).\", \"schema\": {\"type\": \"integer\", "
                    "\"minimum\": 0, \"maximum\": 16777216}}]" },
        { .tool = "process_input", .tag = "processes", .errors = "409",
          .body = "{\"encoding\": {\"type\": [\"string\", \"null\"], \"enum\": [\"utf-8\", \"base64\", null], "
                  "\"description\": \"base64: data is raw bytes in base64 (a terminal's keys). null: utf-8.\"}}" },
        { .tool = "process_kill", .tag = "processes", .errors = "409",
          .description = "Send a signal (a name such as SIGINT, or a number 1-64; SIGTERM when absent) to the "
                         "process group." },
        { .method = "POST", .path = "/v1/sandboxes/{id}/processes/{pid}/wait", .id = "wait_process",
          .tag = "processes", .summary = "Wait for a process to end and return its result.",
          .description = "Returns the result once it ends, or at timeout_s its state so far with status running "
                         "and waited true.",
          .body = TIMEOUT_BODY("Stop waiting after this many seconds. null or 0: until it ends."),
          .reply = JSON_REPLY("The result.", "{\"type\": \"object\", \"properties\": {" J_RESULT_PROPS ", "
                              "\"waited\": {\"type\": \"boolean\", \"description\": \"The wait timed out.\"}}, "
                              "\"required\": [" J_RESULT_REQUIRED "]}") },
        { .method = "POST", .path = "/v1/sandboxes/{id}/processes/{pid}/resize", .id = "process_resize",
          .tag = "processes", .summary = "Resize a process's terminal.", .errors = "409",
          .description = "Sets the size of the pty a process started with `pty` runs on; its foreground program "
                         "gets SIGWINCH.",
          .body = JSON_BODY(OBJ_CLOSED("\"cols\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 4096}, "
                                       "\"rows\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 4096}",
                                       "\"cols\", \"rows\"")),
          .reply = JSON_REPLY("Resized.", OBJ_OPEN("\"ok\": {\"type\": \"boolean\"}, \"cols\": {\"type\": "
                                                   "\"integer\"}, \"rows\": {\"type\": \"integer\"}", "\"ok\"")) },
        { .method = "GET", .path = "/v1/sandboxes/{id}/processes/{pid}/stream", .id = "process_attach",
          .tag = "processes", .summary = "Stream a running process's output.", .sse = true,
          .description = "Attach to a process (reconnect to a background one): with Accept: text/event-stream, "
                         "its output as stdout and stderr events ({data, offset}; a pty's output is stdout) and "
                         "then its result when it ends. Leaving detaches; the process runs on.",
          .params = "[{\"name\": \"from\", \"in\": \"query\", \"required\": false, \"description\": \"start "
                    "(the default): what is kept of its output first; now: only new output.\", \"schema\": "
                    "{\"type\": \"string\", \"enum\": [\"start\", \"now\"]}}, {\"name\": \"encoding\", \"in\": "
                    "\"query\", \"required\": false, \"description\": \"base64 (the default): data is the raw "
                    "bytes; utf-8: text with invalid bytes replaced.\", \"schema\": {\"type\": \"string\", "
                    "\"enum\": [\"base64\", \"utf-8\"]}}]",
          .sse_events = "stdout and stderr ({data, offset}), then result (the process's result)",
          .reply = JSON_REPLY("The stream (text/event-stream).", "{\"type\": \"object\"}") },

        /* ---- directory watches (api.c, ops/op_watch.c) ---- */
        { .method = "GET", .path = "/v1/sandboxes/{id}/files/watch", .id = "watch_dir", .tag = "files",
          .summary = "Stream a directory's changes.", .sse = true, .errors = "403 404 410 429",
          .description = "With Accept: text/event-stream: ready once the directory is watched, then one event per "
                         "change made by any process in the sandbox: {type, name, path}, type create, write, "
                         "remove, rename (a move's old name; the new one is a create), chmod, or overflow when "
                         "changes were lost. Ends with result {ended: true} when the directory goes; leaving "
                         "stops the watch.",
          .params = "[" PATH_PARAM("The directory to watch.") ", {\"name\": \"recursive\", \"in\": \"query\", "
                    "\"required\": false, \"description\": \"Watch its subdirectories too.\", \"schema\": "
                    "{\"type\": \"boolean\"}}, {\"name\": \"user\", \"in\": \"query\", \"required\": false, "
                    "\"description\": \"user (the default) or root.\", \"schema\": {\"type\": \"string\", "
                    "\"enum\": [\"user\", \"root\"]}}]",
          .sse_events = "ready ({path}), event ({type, name, path}) per change, then result ({ended})",
          .reply = JSON_REPLY("The stream (text/event-stream).", "{\"type\": \"object\"}") },
        { .method = "POST", .path = "/v1/sandboxes/{id}/watchers", .id = "watcher_create", .tag = "files",
          .summary = "Create a polled directory watcher.", .status = 201, .errors = "403 404 410 429",
          .description = "The same watch as files/watch, with its events kept (at most 1024; past that, "
                         "overflow is set) until read with GET .../watchers/{watcher_id}/events.",
          .body = JSON_BODY(OBJ_CLOSED(WATCH_FIELDS, "\"path\"")),
          .reply = JSON_REPLY("The watcher.", OBJ_OPEN("\"watcher_id\": {\"type\": \"string\"}", "\"watcher_id\"")) },
        { .method = "GET", .path = "/v1/sandboxes/{id}/watchers/{watcher_id}/events", .id = "watcher_events",
          .tag = "files", .summary = "Take a watcher's events.", .errors = "404",
          .description = "The events since the last call, oldest first; ended says the directory is gone (the "
                         "watcher is then removed).",
          .reply = JSON_REPLY("The events.", OBJ_OPEN("\"events\": {\"type\": \"array\", \"items\": " J_WATCH_EVENT
                                                      "}, \"overflow\": {\"type\": \"boolean\"}, \"ended\": "
                                                      "{\"type\": \"boolean\"}", "\"events\", \"overflow\", \"ended\"")) },
        { .method = "DELETE", .path = "/v1/sandboxes/{id}/watchers/{watcher_id}", .id = "watcher_delete",
          .tag = "files", .summary = "Remove a watcher.", .status = 204, .errors = "404" },

        /* ---- files (files.c) ---- */
        { .tool = "read_file", .tag = "files", .summary = "Download a file.", .errors = "403 410 416",
          .description = "The file's bytes, whole or the byte range a Range header asks for. (The read_file tool "
                         "picks lines out of them.)",
          .params = "[{\"name\": \"Range\", \"in\": \"header\", \"required\": false, \"description\": \"One range: "
                    "bytes=A-B, bytes=A- or bytes=-N.\", \"schema\": {\"type\": \"string\"}}]",
          .replies = "{\"206\": {\"description\": \"The range asked for.\", \"content\": "
                     "{\"application/octet-stream\": {\"schema\": {\"type\": \"string\", \"format\": \"binary\"}}}}}" },
        { .tool = "write_file", .tag = "files", .summary = "Upload a file.", .errors = "403 410 413 507",
          .description = "Create or replace the file at path with the request body, creating missing parent "
                         "directories; append=true adds to its end instead.",
          .params = "[{\"name\": \"append\", \"in\": \"query\", \"required\": false, \"description\": \"Add to the "
                    "end of the file instead of replacing it.\", \"schema\": {\"type\": \"boolean\"}}]" },
        { .method = "DELETE", .path = "/v1/sandboxes/{id}/files", .id = "delete_file", .tag = "files",
          .summary = "Delete a file or directory.", .errors = "403 409 410",
          .params = "[" PATH_PARAM("The file or directory to delete.") ", {\"name\": \"recursive\", \"in\": "
                    "\"query\", \"required\": false, \"description\": \"Delete a directory with everything in it.\", "
                    "\"schema\": {\"type\": \"boolean\"}}]",
          .reply = JSON_REPLY("Deleted.", OBJ_OPEN("\"path\": {\"type\": \"string\"}, \"deleted\": {\"type\": "
                                                   "\"integer\", \"description\": \"Entries removed.\"}",
                                                   "\"path\", \"deleted\"")) },
        { .tool = "list_files", .tag = "files", .errors = "403 410" },
        { .method = "GET", .path = "/v1/sandboxes/{id}/files/stat", .id = "stat_file", .tag = "files",
          .summary = "Describe a file.", .errors = "403 410", .params = "[" PATH_PARAM("The file to describe.") "]",
          .reply = JSON_REPLY("The file.", J_FILE_ENTRY) },
        { .method = "POST", .path = "/v1/sandboxes/{id}/files/mkdir", .id = "make_directory", .tag = "files",
          .summary = "Create a directory.", .errors = "403 409 410",
          .body = JSON_BODY(OBJ_CLOSED("\"path\": {\"type\": \"string\"}, \"parents\": {\"type\": [\"boolean\", "
                                       "\"null\"], \"description\": \"Create missing parents too (the default).\"}, "
                                       "\"mode\": {\"type\": [\"string\", \"null\"], \"description\": \"Octal "
                                       "permissions. null: 0755.\"}", "\"path\"")),
          .reply = JSON_REPLY("The directory.", OBJ_OPEN("\"path\": {\"type\": \"string\"}, \"created\": {\"type\": "
                                                         "\"boolean\", \"description\": \"false: it existed.\"}",
                                                         "\"path\", \"created\"")) },
        { .method = "POST", .path = "/v1/sandboxes/{id}/files/move", .id = "move_file", .tag = "files",
          .summary = "Move or rename a file or directory.", .errors = "403 409 410",
          .body = JSON_BODY(OBJ_CLOSED("\"from\": {\"type\": \"string\"}, \"to\": {\"type\": \"string\"}, "
                                       "\"overwrite\": {\"type\": [\"boolean\", \"null\"], \"description\": "
                                       "\"Replace an existing target.\"}", "\"from\", \"to\"")),
          .reply = JSON_REPLY("Moved.", OBJ_OPEN("\"from\": {\"type\": \"string\"}, \"to\": {\"type\": \"string\"}",
                                                 "\"from\", \"to\"")) },

        /* ---- code sessions (api_sessions.c) ---- */
        { .method = "POST", .path = "/v1/sandboxes/{id}/sessions", .id = "create_session", .tag = "sessions",
          .summary = "Start a code session.", .status = 201, .errors = "400 429 503",
          .body = JSON_BODY_OPT(OBJ_CLOSED("\"language\": {\"type\": [\"string\", \"null\"], \"description\": "
                                           "\"python (the default), javascript or bash.\"}, \"kernel\": {\"type\": "
                                           "[\"string\", \"null\"], \"description\": \"A Jupyter kernel name "
                                           "instead.\"}", "")),
          .reply = JSON_REPLY("The session.", J_SESSION) },
        { .method = "GET", .path = "/v1/sandboxes/{id}/sessions", .id = "list_sessions", .tag = "sessions",
          .summary = "List a sandbox's sessions.",
          .reply = JSON_REPLY("The sessions.", OBJ_OPEN("\"sessions\": {\"type\": \"array\", \"items\": " J_SESSION "}",
                                                        "\"sessions\"")) },
        { .method = "GET", .path = "/v1/sandboxes/{id}/sessions/{sid}", .id = "get_session", .tag = "sessions",
          .summary = "Describe a session.", .reply = JSON_REPLY("The session.", J_SESSION) },
        { .method = "DELETE", .path = "/v1/sandboxes/{id}/sessions/{sid}", .id = "delete_session",
          .tag = "sessions", .summary = "End a session and its interpreter.", .status = 204 },
        { .tool = "run_code", .tag = "sessions", .sse = true, .errors = "409", .summary = "Run a cell.",
          .sse_events = "stream ({name, text}), display ({data, metadata}), execute_result (the last "
                        "expression's value) and error ({ename, evalue, traceback}) as the cell produces them",
          .description = "Run code in the session's interpreter; its state carries over between cells. With "
                         "yield_after_s, a cell that prints nothing for that long answers status running; POST "
                         ".../wait for the rest.",
          .body = "{\"yield_after_s\": {\"type\": [\"number\", \"null\"], \"minimum\": 0.01, \"description\": "
                  "\"Answer early, leaving it running, after this many seconds without output.\"}, "
                  "\"output_limit\": {\"type\": [\"integer\", \"null\"], \"minimum\": 1024, \"description\": "
                  "\"Bytes of output kept. null: 1 MiB.\"}, \"env\": {\"type\": [\"object\", \"null\"], "
                  "\"additionalProperties\": {\"type\": \"string\"}, \"description\": "
                  "\"Environment variables set for this cell only.\"}}" },
        { .method = "POST", .path = "/v1/sandboxes/{id}/sessions/{sid}/wait", .id = "wait_session",
          .tag = "sessions", .summary = "Wait for the running cell's next outputs.", .errors = "409",
          .body = TIMEOUT_BODY("Stop waiting after this many seconds. null: 30."),
          .reply = JSON_REPLY("Outputs not returned before.", J_CELL) },
        { .method = "POST", .path = "/v1/sandboxes/{id}/sessions/{sid}/interrupt", .id = "interrupt_session",
          .tag = "sessions", .summary = "Interrupt the running cell (like Ctrl-C).",
          .reply = JSON_REPLY("The session.", J_SESSION) },
        { .method = "POST", .path = "/v1/sandboxes/{id}/sessions/{sid}/restart", .id = "restart_session",
          .tag = "sessions", .summary = "Restart the interpreter; its state is lost.",
          .reply = JSON_REPLY("The session.", J_SESSION) },
        { .method = "POST", .path = "/v1/sandboxes/{id}/sessions/{sid}/input", .id = "session_input",
          .tag = "sessions", .summary = "Type input to a running bash command.", .errors = "409",
          .body = JSON_BODY(OBJ_CLOSED("\"data\": {\"type\": \"string\", \"description\": \"The text, e.g. "
                                       "\\\"y\\\\n\\\".\"}", "\"data\"")),
          .reply = OK_REPLY },
        { .method = "GET", .path = "/v1/sandboxes/{id}/sessions/{sid}/variables/{name}", .id = "get_variable",
          .tag = "sessions", .summary = "Read a variable of a Python session.", .errors = "409",
          .reply = JSON_REPLY("The variable.", J_VARIABLE) },
        { .method = "GET", .path = "/v1/sandboxes/{id}/images/{image}", .id = "get_image", .tag = "sessions",
          .summary = "An image a cell displayed.", .errors = "401 403",
          .description = "With the bearer token, or without it through the signed link a result gave (with "
                         "--public-url): exp and sig, valid for an hour.",
          .params = "[{\"name\": \"exp\", \"in\": \"query\", \"required\": false, \"description\": \"The "
                    "signed link's expiry, in Unix seconds.\", \"schema\": {\"type\": \"string\"}}, "
                    "{\"name\": \"sig\", \"in\": \"query\", \"required\": false, \"description\": \"The "
                    "signed link's HMAC-SHA256, in hex.\", \"schema\": {\"type\": \"string\"}}]",
          .reply = IMAGE_REPLY },

        /* ---- the seeds' plugin API (api_sessions.c) ---- */
        { .method = "POST", .path = "/api/run_cell", .id = "plugin_run_cell", .tag = "plugin",
          .summary = "Run Python in your default session (dangermode's shape).", .errors = "409",
          .body = JSON_BODY(OBJ_CLOSED("\"code\": {\"type\": \"string\", \"description\": \"Python code.\"}",
                                       "\"code\"")),
          .reply = JSON_REPLY("The cell's result.", J_DANGERMODE) },
        { .method = "GET", .path = "/api/variable/{name}", .id = "plugin_get_variable", .tag = "plugin",
          .summary = "Read a variable of your default session.", .errors = "409",
          .reply = JSON_REPLY("The variable.", J_VARIABLE) },
        { .method = "GET", .path = "/images/{image}", .id = "plugin_get_image", .tag = "plugin",
          .summary = "An image your default session displayed.", .reply = IMAGE_REPLY },

        /* ---- Pandora's plugin routes (api_plugin.c) ---- */
        { .method = "POST", .path = "/exec", .id = "plugin_exec", .tag = "plugin",
          .summary = "Run a shell command in your default sandbox (Pandora's exec).", .errors = "409",
          .description = "Runs `command` under bash in /home/user of the caller's default sandbox. With "
                         "--require-guide the call is refused until guideFollowed is true: read GET /getGuide first. "
                         "A command that fails comes back with a hint pointing to the guide.",
          .body = JSON_BODY(OBJ_CLOSED("\"command\": {\"type\": \"string\", \"description\": \"A shell command line.\"}, "
                                       "\"guideFollowed\": {\"type\": \"boolean\", \"description\": \"True once you "
                                       "have read GET /getGuide.\"}", "\"command\"")),
          .reply = JSON_REPLY("The command's result.", J_PANDORA_EXEC) },
        { .method = "POST", .path = "/writeFile", .id = "plugin_write_file", .tag = "plugin",
          .summary = "Write a file in your default sandbox (Pandora's writeFile).", .errors = "409 507",
          .body = JSON_BODY(OBJ_CLOSED("\"filePath\": {\"type\": \"string\", \"description\": \"Absolute, or relative "
                                       "to /home/user.\"}, \"content\": {\"type\": \"string\"}, \"force\": {\"type\": "
                                       "\"boolean\", \"description\": \"Overwrite an existing file.\"}, "
                                       "\"appendNewlineAtEOF\": {\"type\": \"boolean\", \"description\": \"End the file "
                                       "with a newline (default true).\"}, \"permissions\": {\"type\": \"string\", "
                                       "\"description\": \"Octal mode, e.g. 755.\"}", "\"filePath\", \"content\"")),
          .reply = JSON_REPLY("Where the file went.", J_PANDORA_WRITE) },
        { .method = "GET", .path = "/getGuide", .id = "plugin_get_guide", .tag = "plugin",
          .summary = "The usage guide, for a model to read before its first command (Pandora's getGuide).",
          .reply = "{\"description\": \"The guide, as markdown; as {\\\"guide\\\": text} with Accept: application/json.\", "
                   "\"content\": {\"text/markdown\": {\"schema\": {\"type\": \"string\"}}, \"application/json\": "
                   "{\"schema\": " OBJ_OPEN("\"guide\": {\"type\": \"string\"}", "\"guide\"") "}}}" },

        /* ---- MCP, Streamable HTTP (mcp_http.c) ---- */
        { .method = "POST", .path = "/mcp", .id = "mcp_message", .tag = "mcp", .sse = true,
          .summary = "Send one MCP JSON-RPC message.", .errors = "404 415",
          .description = "One JSON-RPC request or notification of revision 2025-11-25, 2025-06-18, 2025-03-26 "
                         "(after initialize, with the Mcp-Session-Id header) or 2026-07-28 (stateless: _meta and "
                         "the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers). A notification gets 202; a "
                         "request gets its response as JSON, or as server-sent events when notifications such as "
                         "progress come first. Origin and Host must be local (403 otherwise).",
          .params = "[{\"name\": \"Mcp-Session-Id\", \"in\": \"header\", \"required\": false, \"description\": "
                    "\"The session from initialize (revisions up to 2025-11-25).\", \"schema\": {\"type\": "
                    "\"string\"}}, {\"name\": \"MCP-Protocol-Version\", \"in\": \"header\", \"required\": "
                    "false, \"schema\": {\"type\": \"string\"}}]",
          .body = JSON_BODY("{\"type\": [\"object\", \"array\"], \"description\": \"A JSON-RPC 2.0 message "
                            "(a batch only in a 2025-03-26 session).\"}"),
          .reply = JSON_REPLY("The JSON-RPC response.", "{\"type\": [\"object\", \"array\"]}"),
          .replies = "{\"202\": {\"description\": \"A notification or response was accepted.\"}}" },
        { .method = "GET", .path = "/mcp", .id = "mcp_stream", .tag = "mcp", .sse = true, .errors = "404 405 406 409",
          .summary = "Open a session's stream of server messages, or resume one.",
          .description = "With Mcp-Session-Id: the session's standalone stream of notifications; with "
                         "Last-Event-ID too, the rest of a request's stream that was cut off.",
          .reply = "{\"description\": \"Server-sent events.\", \"content\": {\"text/event-stream\": {\"schema\": "
                   "{\"type\": \"string\"}}}}" },
        { .method = "DELETE", .path = "/mcp", .id = "mcp_end_session", .tag = "mcp", .status = 204,
          .errors = "404", .summary = "End an MCP session and delete its default sandbox." },
};

const size_t xb_op_ndefs = sizeof(xb_op_defs) / sizeof(xb_op_defs[0]);
