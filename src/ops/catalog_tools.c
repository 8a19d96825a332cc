/* The tools: each defined once, with its description for a model, its
 * schemas as JSON text (parsed and checked by catalog.c at start-up), its
 * annotations, the operation it runs and that operation's REST route (for
 * the OpenAPI document). edit_file and get_guide run no operation of their
 * own: the tool layer implements them. Shared shapes come from
 * catalog_schemas.h. Generation lives in catalog.c and openapi.c. */
#include "ops/catalog.h"
#include "ops/catalog_schemas.h"

/* The catalog is laid out by hand. */
/* clang-format off */
#define OBJ(props, req) "{\"type\": \"object\", \"properties\": {" props "}, \"required\": [" req "], " \
                        "\"additionalProperties\": false}"
#define SANDBOX_PATH { "sandbox_id", XB_ARG_PATH, "id", "$sandbox", 0 }
#define PID_PATH { "pid", XB_ARG_PATH, NULL, NULL, 0 }
#define ENV_BODY { "env", XB_ARG_BODY, NULL, NULL, XB_ARGF_ENV_PAIRS }

struct xb_tool xb_catalog_tools[] = {
{
        .name = "sandbox_create",
        .op = "sandbox_create",
        .title = "Create a sandbox",
        .description =
                "Create a fresh, isolated Linux sandbox and return its id. Every other tool uses your default "
                "sandbox when sandbox_id is null, so you rarely need this: create one only for a clean, separate "
                "machine or different limits. A sandbox is deleted after timeout_s seconds without use (default "
                "900), with everything in it. Everything in it is writable, /usr and /etc included: what you "
                "install stays in this sandbox only, unless you snapshot it into a template.",
        .input_json = OBJ(
                "\"timeout_s\": {\"type\": [\"number\", \"null\"], \"minimum\": 1, \"description\": \"Delete it "
                "after this many seconds without a command. null: 900.\"}, "
                J_ARG_ENV ", "
                "\"limits\": {\"anyOf\": [" OBJ(
                        "\"memory\": {\"type\": [\"integer\", \"null\"], \"description\": \"Bytes of memory. "
                        "null: the server's default.\"}, "
                        "\"cpus\": {\"type\": [\"number\", \"null\"], \"description\": \"CPU cores, e.g. 0.5 or "
                        "2. null: the server's default.\"}, "
                        "\"pids\": {\"type\": [\"integer\", \"null\"], \"description\": \"Most processes and "
                        "threads at once. null: the server's default.\"}, "
                        "\"disk\": {\"type\": [\"integer\", \"null\"], \"description\": \"Bytes the sandbox's "
                        "writable layer (/usr, /etc, /home/user, /tmp, ...) can hold; a write past it fails with "
                        "EDQUOT, Disk quota exceeded (not ENOSPC). null: the server's default.\"}",
                        "\"memory\", \"cpus\", \"pids\", \"disk\"") ", {\"type\": \"null\"}], "
                "\"description\": \"Resource limits. null: the server's defaults.\"}, "
                "\"network\": " J_NETWORK_ARG ", "
                "\"template\": {\"type\": [\"string\", \"null\"], \"description\": \"Start from this "
                "template (one made with sandbox_snapshot). null: base, the host's image.\"}, "
                "\"user\": {\"type\": [\"string\", \"null\"], \"enum\": [\"user\", \"root\", null], "
                "\"description\": \"Who commands run as by default: user (uid 1000) or root of the sandbox (for "
                "apt-get, pip and npm -g installs). null: user, or the template's.\"}",
                "\"timeout_s\", \"env\", \"limits\", \"network\", \"template\", \"user\""),
        .output_json = J_SANDBOX,
        .read_only = false, .destructive = false, .idempotent = false, .open_world = false,
        .rest = { "POST", "/v1/sandboxes", XB_REPLY_JSON, 201, { ENV_BODY } },
},
{
        .name = "sandbox_network",
        .op = "sandbox_network",
        .title = "Read or change a sandbox's network",
        .description =
                "Show what the sandbox may reach on the network, or change it. With mode null it only reads: the "
                "mode (none: no network; packages: only the package mirrors; allowlist: the allow list minus the "
                "deny list; open: the public internet), the rules, the server's ceiling and the log's totals. "
                "Private, loopback and cloud-metadata addresses are refused in every mode. Inside, programs reach "
                "the network through the proxy in HTTP_PROXY, HTTPS_PROXY and ALL_PROXY (curl, pip, npm, apt, git "
                "and wget use it); raw sockets, UDP other than DNS, and ping do not work. A change applies to the "
                "next connection. Widen the network only when the user asked for it or agreed to it. peers: sandboxes "
                "of yours this one may talk with (each must list this one too), at "
                "http://ID.sandbox.internal:PORT/ through the proxy, in any mode.",
        .input_json = OBJ(
                J_ARG_SANDBOX_ID ", "
                "\"mode\": {\"type\": [\"string\", \"null\"], \"enum\": [\"none\", \"packages\", \"allowlist\", "
                "\"open\", null], \"description\": \"The new mode. null: only read.\"}, "
                "\"allow\": {\"type\": [\"array\", \"null\"], \"items\": {\"type\": \"string\"}, \"description\": "
                "\"For allowlist: domains (example.com), wildcards (*.example.com, its subdomains) and CIDRs "
                "(203.0.113.0/24).\"}, "
                "\"deny\": {\"type\": [\"array\", \"null\"], \"items\": {\"type\": \"string\"}, \"description\": "
                "\"For allowlist: rules that win over allow.\"}, " J_NETWORK_PEERS,
                "\"sandbox_id\", \"mode\", \"allow\", \"deny\", \"peers\""),
        .output_json = J_NETWORK,
        .read_only = false, .destructive = false, .idempotent = true, .open_world = false,
        .rest = { "PATCH", "/v1/sandboxes/{id}/network", XB_REPLY_JSON, 200, { SANDBOX_PATH } },
},
{
        .name = "sandbox_list",
        .op = "sandbox_list",
        .title = "List sandboxes",
        .description = "List your sandboxes with their ids, states, limits and time left.",
        .input_json = OBJ("", ""),
        .output_json = "{\"type\": \"object\", \"properties\": {\"sandboxes\": {\"type\": \"array\", \"items\": "
                J_SANDBOX "}}, \"required\": [\"sandboxes\"]}",
        .read_only = true, .destructive = false, .idempotent = true, .open_world = false,
        .rest = { "GET", "/v1/sandboxes", XB_REPLY_JSON, 200, { { NULL } } },
},
{
        .name = "sandbox_delete",
        .op = "sandbox_delete",
        .title = "Delete a sandbox",
        .description = "Delete a sandbox now: every process in it is killed and its files are gone. Use it when "
                "you are done with a sandbox you created.",
        .input_json = OBJ("\"sandbox_id\": {\"type\": \"string\", \"description\": \"The sandbox to delete, an id "
                          "from sandbox_create or sandbox_list.\"}",
                          "\"sandbox_id\""),
        .output_json = "{\"type\": \"object\", \"properties\": {\"id\": {\"type\": \"string\"}, \"deleted\": "
                "{\"type\": \"boolean\"}}, \"required\": [\"id\", \"deleted\"]}",
        .read_only = false, .destructive = true, .idempotent = true, .open_world = false,
        .rest = { "DELETE", "/v1/sandboxes/{id}", XB_REPLY_EMPTY, 204, { { "sandbox_id", XB_ARG_PATH, "id", NULL, 0 } } },
},
{
        .name = "sandbox_snapshot",
        .op = "sandbox_snapshot",
        .title = "Snapshot a sandbox into a template",
        .description = "Save the sandbox's whole filesystem (what you installed and wrote) as a template with this "
                "name; sandbox_create with that template then starts from it. Instant, whatever the size. The "
                "sandbox keeps running; its processes are not saved.",
        .input_json = OBJ(J_ARG_SANDBOX_ID ", "
                          "\"name\": {\"type\": \"string\", \"description\": \"The template's name: letters, "
                          "digits, '.', '_' or '-', e.g. \\\"py-ml\\\".\"}",
                          "\"sandbox_id\", \"name\""),
        .output_json = J_TEMPLATE,
        .read_only = false, .destructive = false, .idempotent = false, .open_world = false,
        .rest = { "POST", "/v1/sandboxes/{id}/snapshot", XB_REPLY_JSON, 201, { SANDBOX_PATH } },
},
{
        .name = "template_build",
        .op = "template_build",
        .title = "Build a template from steps",
        .description = "Build a template that sandbox_create can start from, so new sandboxes have what you need "
                "installed: apt packages, files and shell steps run as root in a build sandbox, then saved. "
                "Takes as long as the installs (minutes for big packages); a failed step is reported with its "
                "number, exit code and the end of its output. `from` is base (the host's image), a template you "
                "made, or a clean Debian such as \"debian:bookworm\". env, workdir and user apply to the "
                "template's sandboxes; start runs a command at create and waits until it is ready.",
        .input_json = OBJ("\"name\": {\"type\": \"string\", \"description\": \"The template's name: letters, digits, "
                          "'.', '_' or '-', e.g. \\\"py-ml\\\".\"}, "
                          "\"from\": {\"type\": [\"string\", \"null\"], \"description\": \"What to build on: "
                          "base, a template's name, or \\\"debian:SUITE\\\" (a clean Debian). null: base.\"}, "
                          "\"apt\": {\"type\": [\"array\", \"null\"], \"items\": {\"type\": \"string\"}, "
                          "\"description\": \"Debian packages to install. null: none.\"}, "
                          "\"run\": {\"type\": [\"array\", \"null\"], \"items\": {\"type\": \"string\"}, "
                          "\"description\": \"Shell steps (sh -c), run as root in order, in workdir. null: "
                          "none.\"}, "
                          J_ARG_ENV ", "
                          "\"files\": {\"type\": [\"array\", \"null\"], \"description\": \"Files to write: name "
                          "is the absolute path, value the text. null: none.\", \"items\": {\"type\": \"object\", "
                          "\"properties\": {\"name\": {\"type\": \"string\"}, \"value\": {\"type\": \"string\"}}, "
                          "\"required\": [\"name\", \"value\"], \"additionalProperties\": false}}, "
                          "\"workdir\": {\"type\": [\"string\", \"null\"], \"description\": \"Commands' default "
                          "directory in its sandboxes. null: /home/user.\"}, "
                          "\"user\": {\"type\": [\"string\", \"null\"], \"enum\": [\"user\", \"root\", null], "
                          "\"description\": \"Its sandboxes' default user. null: user (or from's).\"}, "
                          "\"start\": {\"type\": [\"object\", \"null\"], \"description\": \"A command to run at "
                          "create (a server); create waits until it is ready. null: none.\", \"properties\": "
                          "{\"cmd\": {\"type\": \"string\"}, \"ready\": {\"type\": [\"object\", \"null\"], "
                          "\"properties\": {\"port\": {\"type\": [\"integer\", \"null\"], \"description\": \"Ready "
                          "once this TCP port listens.\"}, \"file\": {\"type\": [\"string\", \"null\"], "
                          "\"description\": \"Ready once this file exists.\"}}, \"required\": [\"port\", \"file\"], "
                          "\"additionalProperties\": false}, \"timeout_s\": {\"type\": [\"number\", \"null\"], "
                          "\"description\": \"How long create waits. null: 30.\"}}, \"required\": [\"cmd\", "
                          "\"ready\", \"timeout_s\"], \"additionalProperties\": false}"
                          ", \"oci\": {\"type\": [\"string\", \"null\"], \"description\": \"Instead of steps: "
                          "import this OCI image archive (a host path below a directory the operator allowed "
                          "with --allow-mount). null: build from steps.\"}",
                          "\"name\", \"from\", \"apt\", \"run\", \"env\", \"files\", \"workdir\", \"user\", \"start\", "
                          "\"oci\""),
        .output_json = J_TEMPLATE,
        .read_only = false, .destructive = false, .idempotent = false, .open_world = true,
        .rest = { "POST", "/v1/templates", XB_REPLY_JSON, 201,
                  { ENV_BODY, { "files", XB_ARG_BODY, NULL, NULL, XB_ARGF_ENV_PAIRS } } },
},
{
        .name = "install",
        .op = "install",
        .title = "Install Debian packages",
        .description = "Install apt packages into this sandbox (as root, dependencies included), through the "
                "server's shared install cache: when any sandbox in the same state installed the same set before, "
                "the files are copied in within seconds and dpkg does not run; otherwise apt-get install runs "
                "(minutes for big packages) and is kept for the next one. Prefer it to apt-get install in "
                "run_command. The result says cached true or false.",
        .input_json = OBJ(J_ARG_SANDBOX_ID ", "
                          "\"apt\": {\"type\": \"array\", \"minItems\": 1, \"maxItems\": 128, \"items\": "
                          "{\"type\": \"string\"}, \"description\": \"Debian package names, e.g. "
                          "[\\\"ffmpeg\\\"].\"}",
                          "\"sandbox_id\", \"apt\""),
        .output_json = OBJ("\"id\": {\"type\": \"string\"}, \"packages\": {\"type\": \"array\", \"items\": "
                           "{\"type\": \"string\"}}, \"cached\": {\"type\": \"boolean\", \"description\": "
                           "\"Served from the install cache (no dpkg run).\"}, \"key\": {\"type\": \"string\"}, "
                           "\"bytes\": {\"type\": \"integer\"}, \"copy\": {\"type\": \"string\", \"enum\": "
                           "[\"reflink\", \"tar\"], \"description\": \"reflink: the files share the cache's "
                           "storage copy-on-write; tar: copied.\"}, \"duration_ms\": {\"type\": \"integer\"}",
                           "\"id\", \"packages\", \"cached\", \"key\", \"bytes\", \"copy\", \"duration_ms\""),
        .read_only = false, .destructive = false, .idempotent = true, .open_world = true,
        .rest = { "POST", "/v1/sandboxes/{id}/install", XB_REPLY_JSON, 200, { SANDBOX_PATH } },
},
{
        .name = "sandbox_fork",
        .op = "sandbox_fork",
        .title = "Fork a sandbox",
        .description = "Make count new sandboxes that start from this sandbox's filesystem as it is now, with its "
                "limits, env and network policy unless given here; try different approaches in parallel. Instant, whatever the size. Processes "
                "are not carried over: each child starts with none running.",
        .input_json = OBJ(J_ARG_SANDBOX_ID ", "
                          "\"count\": {\"type\": [\"integer\", \"null\"], \"minimum\": 1, \"maximum\": 64, "
                          "\"description\": \"How many children. null: 1.\"}, "
                          J_ARG_ENV ", "
                          "\"timeout_s\": {\"type\": [\"number\", \"null\"], \"minimum\": 1, \"description\": "
                          "\"The children's idle time to live. null: the parent's.\"}, "
                          "\"limits\": {\"anyOf\": [" OBJ(
                                  "\"memory\": {\"type\": [\"integer\", \"null\"], \"description\": \"Bytes of "
                                  "memory. null: the parent's.\"}, "
                                  "\"cpus\": {\"type\": [\"number\", \"null\"], \"description\": \"CPU cores. "
                                  "null: the parent's.\"}, "
                                  "\"pids\": {\"type\": [\"integer\", \"null\"], \"description\": \"Most "
                                  "processes and threads at once. null: the parent's.\"}, "
                                  "\"disk\": {\"type\": [\"integer\", \"null\"], \"description\": \"Bytes the "
                                  "writable layer can hold. null: the parent's.\"}",
                                  "\"memory\", \"cpus\", \"pids\", \"disk\"") ", {\"type\": \"null\"}], "
                          "\"description\": \"The children's limits, within the server's ceilings. null: the "
                          "parent's.\"}, "
                          "\"network\": {\"anyOf\": [{\"type\": \"string\", \"enum\": [\"none\", \"packages\", "
                          "\"open\", \"allowlist\"]}, {\"type\": \"object\", \"properties\": {\"mode\": "
                          "{\"type\": \"string\", \"enum\": [\"none\", \"packages\", \"allowlist\", \"open\"]}, "
                          J_NETWORK_RULES "}, \"required\": [\"mode\", \"allow\", \"deny\", \"peers\"], "
                          "\"additionalProperties\": false}, {\"type\": \"null\"}], \"description\": \"The "
                          "children's egress, within the server's ceiling. null: the parent's policy.\"}",
                          "\"sandbox_id\", \"count\", \"env\", \"timeout_s\", \"limits\", \"network\""),
        .output_json = "{\"type\": \"object\", \"properties\": {\"sandboxes\": {\"type\": \"array\", \"items\": "
                J_SANDBOX "}, \"parent\": {\"type\": \"string\"}}, \"required\": [\"sandboxes\", \"parent\"]}",
        .read_only = false, .destructive = false, .idempotent = false, .open_world = false,
        .rest = { "POST", "/v1/sandboxes/{id}/fork", XB_REPLY_JSON, 201, { SANDBOX_PATH, ENV_BODY } },
},
{
        .name = "sandbox_pause",
        .op = "sandbox_pause",
        .title = "Pause a sandbox",
        .description = "Freeze a sandbox: its processes stop using CPU but keep their memory, files and state "
                "(a Python session's variables survive). While paused its idle timeout stops and its paused "
                "time to live runs instead; other tools on it fail with `paused` until sandbox_resume.",
        .input_json = OBJ(J_ARG_SANDBOX_ID, "\"sandbox_id\""),
        .output_json = J_SANDBOX,
        .read_only = false, .destructive = false, .idempotent = true, .open_world = false,
        .rest = { "POST", "/v1/sandboxes/{id}/pause", XB_REPLY_JSON, 200, { SANDBOX_PATH } },
},
{
        .name = "sandbox_resume",
        .op = "sandbox_resume",
        .title = "Resume a sandbox",
        .description = "Resume a paused sandbox: its processes continue where they stopped and its idle timeout "
                "starts again.",
        .input_json = OBJ(J_ARG_SANDBOX_ID, "\"sandbox_id\""),
        .output_json = J_SANDBOX,
        .read_only = false, .destructive = false, .idempotent = true, .open_world = false,
        .rest = { "POST", "/v1/sandboxes/{id}/resume", XB_REPLY_JSON, 200, { SANDBOX_PATH } },
},
{
        .name = "run_command",
        .op = "run_command",
        .title = "Run a shell command",
        .description =
                "Run a shell command line with bash -c in the sandbox and return its exit code and output. It "
                "starts in /home/user. It waits until the command ends, at most timeout_s seconds (default 120; "
                "then it is killed, status is timeout and you still get the output so far). For a long job set "
                "yield_after_s: if it prints nothing for that long you get status running, the output so far and "
                "a pid while it keeps running; continue with process_read from stdout_offset, or stop it with "
                "process_kill. Output over 1 MiB per stream keeps the head and the tail. Check exit_code. To "
                "create files use write_file rather than heredocs; for servers use process_start.",
        .input_json = OBJ(
                J_ARG_SANDBOX_ID ", "
                "\"cmd\": {\"type\": \"string\", \"description\": \"The command line, e.g. \\\"ls -la\\\" or "
                "\\\"cd src && make 2>&1 | tail -50\\\".\"}, "
                J_ARG_CWD ", " J_ARG_ENV ", "
                "\"timeout_s\": {\"type\": [\"number\", \"null\"], \"minimum\": 0, \"maximum\": 86400, "
                "\"description\": \"Kill it after this many seconds. null: 120. 0: no limit.\"}, "
                "\"yield_after_s\": {\"type\": [\"number\", \"null\"], \"minimum\": 0.01, \"maximum\": 86400, "
                "\"description\": \"Return early, leaving it running, once it has printed nothing for this many "
                "seconds. null: wait for the end.\"}, "
                J_ARG_STDIN,
                "\"sandbox_id\", \"cmd\", \"cwd\", \"env\", \"timeout_s\", \"yield_after_s\", \"stdin\""),
        .output_json = J_RESULT,
        .read_only = false, .destructive = true, .idempotent = false, .open_world = false,
        .rest = { "POST", "/v1/sandboxes/{id}/exec", XB_REPLY_JSON, 200, { SANDBOX_PATH, ENV_BODY } },
},
{
        .name = "run_code",
        .op = "run_code",
        .title = "Run code in a persistent interpreter",
        .description =
                "Run code in a persistent interpreter and return its outputs. Variables, imports and functions "
                "stay defined between calls with the same language in the same sandbox. python is IPython with "
                "numpy, pandas and matplotlib: the value of the last line comes back as a result, and figures "
                "come back as PNG images. javascript is Node.js; bash is one long-lived shell. An exception comes "
                "back as an output of type error with its traceback. A cell running past timeout_s (default 120) "
                "is interrupted; the interpreter's state is kept.",
        .input_json = OBJ(
                J_ARG_SANDBOX_ID ", "
                "\"language\": {\"type\": \"string\", \"enum\": [\"python\", \"bash\", \"javascript\"], "
                "\"description\": \"Which interpreter runs the code.\"}, "
                "\"code\": {\"type\": \"string\", \"description\": \"The code: one or more lines.\"}, "
                "\"timeout_s\": {\"type\": [\"number\", \"null\"], \"minimum\": 0, \"maximum\": 86400, "
                "\"description\": \"Interrupt the cell after this many seconds. null: 120.\"}",
                "\"sandbox_id\", \"language\", \"code\", \"timeout_s\""),
        .output_json = J_CELL,
        .read_only = false, .destructive = true, .idempotent = false, .open_world = false,
        .rest = { "POST", "/v1/sandboxes/{id}/sessions/{sid}/run", XB_REPLY_JSON, 200,
                  { SANDBOX_PATH, { "language", XB_ARG_LOCAL, NULL, NULL, 0 },
                    { NULL, XB_ARG_PATH, "sid", "$session", 0 } } },
},
{
        .name = "read_file",
        .op = "read_file",
        .title = "Read a text file",
        .description = "Read a text file from the sandbox, whole or a range of lines (numbered from 1). Use it "
                "instead of cat; for a directory use list_files.",
        .input_json = OBJ(
                J_ARG_SANDBOX_ID ", "
                "\"path\": {\"type\": \"string\", \"description\": \"Absolute path, e.g. /home/user/app.py. A "
                "relative one is taken from /home/user.\"}, "
                "\"start_line\": {\"type\": [\"integer\", \"null\"], \"minimum\": 1, \"description\": \"First "
                "line to return. null: 1.\"}, "
                "\"end_line\": {\"type\": [\"integer\", \"null\"], \"minimum\": 1, \"description\": \"Last line "
                "to return. null: the end.\"}",
                "\"sandbox_id\", \"path\", \"start_line\", \"end_line\""),
        .output_json = "{\"type\": \"object\", \"properties\": {"
                "\"path\": {\"type\": \"string\"}, "
                "\"content\": {\"type\": \"string\", \"description\": \"The lines asked for.\"}, "
                "\"start_line\": {\"type\": \"integer\"}, \"end_line\": {\"type\": \"integer\"}, "
                "\"total_lines\": {\"type\": \"integer\"}}, "
                "\"required\": [\"path\", \"content\", \"start_line\", \"end_line\", \"total_lines\"]}",
        .read_only = true, .destructive = false, .idempotent = true, .open_world = false,
        .rest = { "GET", "/v1/sandboxes/{id}/files", XB_REPLY_BYTES, 200,
                  { SANDBOX_PATH, { "path", XB_ARG_QUERY, NULL, NULL, 0 },
                    { "start_line", XB_ARG_LOCAL, NULL, NULL, 0 }, { "end_line", XB_ARG_LOCAL, NULL, NULL, 0 } } },
},
{
        .name = "write_file",
        .op = "write_file",
        .title = "Write a file",
        .description = "Create or overwrite a file with the given content, creating missing parent directories. "
                "Prefer it to shell heredocs and echo: nothing needs escaping. To change part of a file use "
                "edit_file.",
        .input_json = OBJ(
                J_ARG_SANDBOX_ID ", "
                "\"path\": {\"type\": \"string\", \"description\": \"Absolute path, e.g. /home/user/app.py.\"}, "
                "\"content\": {\"type\": \"string\", \"description\": \"The whole new content of the file.\"}, "
                "\"mode\": {\"type\": [\"string\", \"null\"], \"description\": \"Octal permissions such as "
                "\\\"0755\\\" for a script. null: 0644.\"}",
                "\"sandbox_id\", \"path\", \"content\", \"mode\""),
        .output_json = J_FILE_WRITTEN,
        .read_only = false, .destructive = true, .idempotent = true, .open_world = false,
        .rest = { "PUT", "/v1/sandboxes/{id}/files", XB_REPLY_JSON, 200,
                  { SANDBOX_PATH, { "path", XB_ARG_QUERY, NULL, NULL, 0 }, { "mode", XB_ARG_QUERY, NULL, NULL, 0 },
                    { "content", XB_ARG_RAW, NULL, NULL, 0 } } },
},
{
        .name = "edit_file",
        .title = "View or edit a text file",
        .description =
                "View and edit text files precisely. view: show a file with line numbers (view_range [start, "
                "end] limits it; end -1 means to the last line), or list a directory two levels deep. "
                "str_replace: replace old_str, which must occur exactly once in the file (include enough "
                "surrounding lines to make it unique; whitespace must match), with new_str. insert: insert "
                "new_str after line insert_line (0: at the top). undo_edit: revert the last edit of path. To "
                "create a file use write_file.",
        .input_json = OBJ(
                J_ARG_SANDBOX_ID ", "
                "\"command\": {\"type\": \"string\", \"enum\": [\"view\", \"str_replace\", \"insert\", "
                "\"undo_edit\"]}, "
                "\"path\": {\"type\": \"string\", \"description\": \"Absolute path of the file or directory.\"}, "
                "\"old_str\": {\"type\": [\"string\", \"null\"], \"description\": \"str_replace: the exact text "
                "to replace.\"}, "
                "\"new_str\": {\"type\": [\"string\", \"null\"], \"description\": \"str_replace: the "
                "replacement (null: delete old_str); insert: the text to insert.\"}, "
                "\"insert_line\": {\"type\": [\"integer\", \"null\"], \"minimum\": 0, \"description\": "
                "\"insert: the line after which new_str goes.\"}, "
                "\"view_range\": {\"type\": [\"array\", \"null\"], \"items\": {\"type\": \"integer\"}, "
                "\"minItems\": 2, \"maxItems\": 2, \"description\": \"view: [first line, last line].\"}",
                "\"sandbox_id\", \"command\", \"path\", \"old_str\", \"new_str\", \"insert_line\", \"view_range\""),
        .output_json = "{\"type\": \"object\", \"properties\": {\"path\": {\"type\": \"string\"}, "
                "\"output\": {\"type\": \"string\", \"description\": \"The file or directory view, or a snippet "
                "of the edited lines with their numbers.\"}}, \"required\": [\"path\", \"output\"]}",
        .read_only = false, .destructive = true, .idempotent = false, .open_world = false,
        .rest = { NULL, NULL, XB_REPLY_JSON, 0, { { NULL } } },
},
{
        .name = "list_files",
        .op = "list_files",
        .title = "List a directory",
        .description = "List the files and directories under a path, depth levels deep, with their types, "
                "sizes, permissions and modification times.",
        .input_json = OBJ(
                J_ARG_SANDBOX_ID ", "
                "\"path\": {\"type\": [\"string\", \"null\"], \"description\": \"Directory to list. null: "
                "/home/user.\"}, "
                "\"depth\": {\"type\": [\"integer\", \"null\"], \"minimum\": 1, \"maximum\": 5, "
                "\"description\": \"How many levels to descend. null: 1.\"}",
                "\"sandbox_id\", \"path\", \"depth\""),
        .output_json = J_FILE_LIST,
        .read_only = true, .destructive = false, .idempotent = true, .open_world = false,
        .rest = { "GET", "/v1/sandboxes/{id}/files/list", XB_REPLY_JSON, 200,
                  { SANDBOX_PATH, { "path", XB_ARG_QUERY, NULL, "=/home/user", 0 }, { "depth", XB_ARG_QUERY, NULL, NULL, 0 } } },
},
{
        .name = "process_start",
        .op = "process_start",
        .title = "Start a background process",
        .description =
                "Start a command in the background (a server, a watcher, a long build) and return its pid at "
                "once. Read its output with process_read, send it input with process_input, stop it with "
                "process_kill. Its stdin stays open. The head and tail of its output (4 MiB per stream) are kept.",
        .input_json = OBJ(
                J_ARG_SANDBOX_ID ", "
                "\"cmd\": {\"type\": \"string\", \"description\": \"The command line, run with bash -c, e.g. "
                "\\\"python3 -m http.server 8000\\\".\"}, "
                J_ARG_CWD ", " J_ARG_ENV ", "
                "\"stdin\": {\"type\": [\"string\", \"null\"], \"description\": \"Text written to its standard "
                "input first. null: nothing.\"}, "
                "\"timeout_s\": {\"type\": [\"number\", \"null\"], \"minimum\": 0, \"maximum\": 86400, "
                "\"description\": \"Kill it after this many seconds. null: no limit.\"}",
                "\"sandbox_id\", \"cmd\", \"cwd\", \"env\", \"stdin\", \"timeout_s\""),
        .output_json = J_PROCESS,
        .read_only = false, .destructive = true, .idempotent = false, .open_world = false,
        .rest = { "POST", "/v1/sandboxes/{id}/processes", XB_REPLY_JSON, 201, { SANDBOX_PATH, ENV_BODY } },
},
{
        .name = "process_read",
        .op = "process_read",
        .title = "Read a process's output",
        .description = "Read what a process printed after the given byte offsets, and whether it still runs. "
                "Pass back the stdout_offset and stderr_offset you got to read only what is new; wait_s waits up "
                "to that many seconds for new output instead of returning at once.",
        .input_json = OBJ(
                J_ARG_SANDBOX_ID ", " J_ARG_PID ", "
                "\"stdout_offset\": {\"type\": [\"integer\", \"null\"], \"minimum\": 0, \"description\": \"Byte "
                "offset in stdout to read from. null: 0.\"}, "
                "\"stderr_offset\": {\"type\": [\"integer\", \"null\"], \"minimum\": 0, \"description\": \"Byte "
                "offset in stderr to read from. null: 0.\"}, "
                "\"wait_s\": {\"type\": [\"integer\", \"null\"], \"minimum\": 0, \"maximum\": 3600, "
                "\"description\": \"Seconds to wait for new output. null: 0.\"}",
                "\"sandbox_id\", \"pid\", \"stdout_offset\", \"stderr_offset\", \"wait_s\""),
        .output_json = J_OUTPUT,
        .read_only = true, .destructive = false, .idempotent = true, .open_world = false,
        .rest = { "GET", "/v1/sandboxes/{id}/processes/{pid}/output", XB_REPLY_JSON, 200,
                  { SANDBOX_PATH, PID_PATH, { "stdout_offset", XB_ARG_QUERY, NULL, NULL, 0 },
                    { "stderr_offset", XB_ARG_QUERY, NULL, NULL, 0 }, { "wait_s", XB_ARG_QUERY, NULL, NULL, 0 } } },
},
{
        .name = "process_input",
        .op = "process_input",
        .title = "Send input to a process",
        .description = "Write text to a background process's standard input; include \\n where it expects Enter. "
                "eof true closes its stdin afterwards.",
        .input_json = OBJ(
                J_ARG_SANDBOX_ID ", " J_ARG_PID ", "
                "\"data\": {\"type\": [\"string\", \"null\"], \"description\": \"The text to write. null: "
                "nothing.\"}, "
                "\"eof\": {\"type\": [\"boolean\", \"null\"], \"description\": \"Close stdin after writing. "
                "null: false.\"}",
                "\"sandbox_id\", \"pid\", \"data\", \"eof\""),
        .output_json = "{\"type\": \"object\", \"properties\": {\"ok\": {\"type\": \"boolean\"}}, "
                "\"required\": [\"ok\"]}",
        .read_only = false, .destructive = false, .idempotent = false, .open_world = false,
        .rest = { "POST", "/v1/sandboxes/{id}/processes/{pid}/stdin", XB_REPLY_JSON, 200, { SANDBOX_PATH, PID_PATH } },
},
{
        .name = "process_kill",
        .op = "process_kill",
        .title = "Signal a process",
        .description = "Send a signal to a background process and what it started (its process group): SIGTERM "
                "by default, SIGINT like Ctrl-C, SIGKILL when it ignores the others. Read its final output with "
                "process_read.",
        .input_json = OBJ(
                J_ARG_SANDBOX_ID ", " J_ARG_PID ", "
                "\"signal\": {\"type\": [\"string\", \"null\"], \"enum\": [\"SIGTERM\", \"SIGINT\", \"SIGKILL\", "
                "\"SIGHUP\", \"SIGQUIT\", \"SIGUSR1\", \"SIGUSR2\", \"SIGSTOP\", \"SIGCONT\", null], "
                "\"description\": \"null: SIGTERM.\"}",
                "\"sandbox_id\", \"pid\", \"signal\""),
        .output_json = "{\"type\": \"object\", \"properties\": {\"ok\": {\"type\": \"boolean\"}, \"signal\": "
                "{\"type\": \"integer\", \"description\": \"The signal number sent.\"}}, \"required\": [\"ok\", "
                "\"signal\"]}",
        .read_only = false, .destructive = true, .idempotent = true, .open_world = false,
        .rest = { "POST", "/v1/sandboxes/{id}/processes/{pid}/signal", XB_REPLY_JSON, 200, { SANDBOX_PATH, PID_PATH } },
},
{
        .name = "sandbox_ports",
        .op = "sandbox_ports",
        .title = "List or share a sandbox's servers",
        .description = "Servers you start in the sandbox (a web app, a notebook, python3 -m http.server 8080) are "
                "reachable from outside through the execbox server, at /v1/sandboxes/{id}/ports/{port}/ with the "
                "API token. action list (the default) shows which ports listen, each with its url. action share "
                "makes a link to one port that works without a token until ttl_s seconds pass (default 3600; its "
                "url, or its path on the execbox server where no url is given): give it to the user to open "
                "the server in a browser. Start the server in the background with "
                "process_start, listening on 0.0.0.0 or 127.0.0.1.",
        .input_json = OBJ(
                J_ARG_SANDBOX_ID ", "
                "\"action\": {\"type\": [\"string\", \"null\"], \"enum\": [\"list\", \"share\", null], "
                "\"description\": \"list what listens, or share one port. null: list.\"}, "
                "\"port\": {\"type\": [\"integer\", \"null\"], \"minimum\": 1, \"maximum\": 65535, "
                "\"description\": \"share: the port the server listens on.\"}, "
                "\"ttl_s\": {\"type\": [\"number\", \"null\"], \"minimum\": 1, \"maximum\": 604800, "
                "\"description\": \"share: how long the link works, in seconds. null: 3600.\"}",
                "\"sandbox_id\", \"action\", \"port\", \"ttl_s\""),
        .output_json = "{\"type\": \"object\", \"properties\": {\"id\": {\"type\": \"string\"}, "
                "\"ports\": {\"type\": \"array\", \"description\": \"list: what listens.\", \"items\": "
                "{\"type\": \"object\", \"properties\": {\"port\": {\"type\": \"integer\"}, \"address\": "
                "{\"type\": \"string\"}, \"url\": {\"type\": \"string\"}}, \"required\": [\"port\", "
                "\"address\"]}}, "
                "\"port\": {\"type\": \"integer\", \"description\": \"share: the port.\"}, "
                "\"url\": {\"type\": \"string\", \"description\": \"share: the link, usable without a token.\"}, "
                "\"path\": {\"type\": \"string\", \"description\": \"share: the link's path on this server.\"}, "
                "\"token\": {\"type\": \"string\"}, "
                "\"expires_at\": {\"type\": \"integer\", \"description\": \"share: Unix seconds.\"}, "
                "\"ttl_s\": {\"type\": \"integer\"}}, \"required\": [\"id\"]}",
        .read_only = false, .destructive = false, .idempotent = false, .open_world = false,
        .rest = { "POST", "/v1/sandboxes/{id}/ports", XB_REPLY_JSON, 200, { SANDBOX_PATH } },
},
{
        .name = "request_secret",
        .op = "request_secret",
        .title = "Ask the user for a secret",
        .description = "Ask a human for a secret (an API token, a password) by name, for the sandbox to use "
                "without anyone showing it to you: the same request as `curl \"$EXECBOX_API/secrets/NAME?...\"` "
                "from inside. Say to the user first which secret you need, for which hosts and why. It waits up "
                "to wait_s for them to approve it (`execbox approvals allow ID`, or POST /v1/approvals/{id}; "
                "only a human can, never a tool); granted, new processes have a placeholder in $NAME, which the "
                "proxy swaps for the value only on the way to the secret's hosts. status pending: nobody answered "
                "yet; tell the user the approval_id and call again with the same name later. Never ask the user "
                "to paste the value into the chat.",
        .input_json = OBJ(
                J_ARG_SANDBOX_ID ", "
                "\"name\": {\"type\": \"string\", \"description\": \"The secret's name, also its env var: "
                "letters, digits and _, e.g. GITHUB_TOKEN.\"}, "
                "\"hosts\": {\"type\": [\"array\", \"null\"], \"maxItems\": 32, \"items\": {\"type\": \"string\"}, "
                "\"description\": \"Where it is to be sent: names or *.wildcards, e.g. [\\\"api.github.com\\\"]. "
                "The human may change them. null: the human chooses.\"}, "
                "\"header\": {\"type\": [\"string\", \"null\"], \"description\": \"The header that carries it, "
                "with {value} where it goes, e.g. \\\"Authorization: Bearer {value}\\\". null: only $NAME "
                "placeholders are swapped.\"}, "
                "\"reason\": {\"type\": [\"string\", \"null\"], \"description\": \"Why you need it, in a "
                "sentence: the human reads it.\"}, "
                "\"wait_s\": {\"type\": [\"number\", \"null\"], \"minimum\": 0, \"maximum\": 600, "
                "\"description\": \"How long to wait for the human before answering pending. null: 30.\"}",
                "\"sandbox_id\", \"name\", \"hosts\", \"header\", \"reason\", \"wait_s\""),
        .output_json = "{\"type\": \"object\", \"properties\": {"
                "\"status\": {\"type\": \"string\", \"enum\": [\"granted\", \"pending\"], \"description\": "
                "\"granted: the sandbox holds it; pending: it still waits for a human.\"}, "
                "\"name\": {\"type\": \"string\"}, "
                "\"env\": {\"type\": \"string\", \"description\": \"granted: the env var of new processes.\"}, "
                "\"placeholder\": {\"type\": \"string\", \"description\": \"granted: what $NAME holds; never the "
                "value.\"}, "
                "\"approval_id\": {\"type\": \"string\", \"description\": \"The request the human decides.\"}, "
                "\"expires_in_s\": {\"type\": \"number\", \"description\": \"pending: seconds it still waits.\"}, "
                "\"note\": {\"type\": \"string\", \"description\": \"What to do next.\"}}, "
                "\"required\": [\"status\", \"name\"]}",
        .read_only = false, .destructive = false, .idempotent = true, .open_world = false,
        .rest = { "POST", "/v1/sandboxes/{id}/secrets/{name}/request", XB_REPLY_JSON, 200,
                  { SANDBOX_PATH, { "name", XB_ARG_PATH, NULL, NULL, 0 } } },
},
{
        .name = "list_secrets",
        .op = "list_secrets",
        .title = "List your secrets",
        .description = "List the secrets a human stored for you: their names, the hosts each is sent to and the "
                "header that carries it, never their values; attached says whether the sandbox holds it (its new "
                "processes have a placeholder in $NAME). Ask for one you lack with request_secret.",
        .input_json = OBJ(J_ARG_SANDBOX_ID, "\"sandbox_id\""),
        .output_json = "{\"type\": \"object\", \"properties\": {\"secrets\": {\"type\": \"array\", \"items\": "
                J_SECRET "}}, \"required\": [\"secrets\"]}",
        .read_only = true, .destructive = false, .idempotent = true, .open_world = false,
        .rest = { "GET", "/v1/secrets", XB_REPLY_JSON, 200,
                  { { "sandbox_id", XB_ARG_QUERY, NULL, "$sandbox", 0 } } },
},
{
        .name = "get_guide",
        .title = "Read the usage guide",
        .description = "Read the guide to this sandbox: what is installed, the limits, and how to use these tools "
                "well. Read it once before your first command.",
        .input_json = OBJ("", ""),
        .output_json = "{\"type\": \"object\", \"properties\": {\"guide\": {\"type\": \"string\", \"description\": "
                "\"Markdown.\"}}, \"required\": [\"guide\"]}",
        .read_only = true, .destructive = false, .idempotent = true, .open_world = false,
        .rest = { "GET", "/v1/guide", XB_REPLY_TEXT, 200, { { NULL } } },
},
};

const size_t xb_catalog_ntools = sizeof(xb_catalog_tools) / sizeof(xb_catalog_tools[0]);
