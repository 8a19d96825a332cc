/* JSON Schema fragments shared by the tool catalog (catalog_tools.c) and
 * the operations of /openapi.json that are not tools (openapi_ops.c), as
 * C string literals that concatenate into whole schemas. Each shape the
 * REST API answers is written here once; src/core/proc_wait.c, sbx.c and
 * src/proc/result.c are what they describe. Private to the catalog. */
#pragma once
/* Laid out by hand. */
/* clang-format off */

/* ---- tool arguments ---- */

#define J_ARG_SANDBOX_ID                                                                                         \
        "\"sandbox_id\": {\"type\": [\"string\", \"null\"], \"description\": \"The sandbox to act on, an id "    \
        "from sandbox_create. null: your default sandbox.\"}"

#define J_ARG_PID                                                                                                \
        "\"pid\": {\"type\": \"integer\", \"minimum\": 1, \"description\": \"The process id process_start "      \
        "returned (or run_command, when it answered status running).\"}"

#define J_ARG_CWD                                                                                                \
        "\"cwd\": {\"type\": [\"string\", \"null\"], \"description\": \"Absolute working directory. "            \
        "null: /home/user.\"}"

#define J_ARG_ENV                                                                                                \
        "\"env\": {\"type\": [\"array\", \"null\"], \"description\": \"Extra environment variables. null: none.\", " \
        "\"items\": {\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, \"value\": "      \
        "{\"type\": \"string\"}}, \"required\": [\"name\", \"value\"], \"additionalProperties\": false}}"

/* The REST form of J_ARG_ENV (XB_ARGF_ENV_PAIRS). */
#define J_REST_ENV                                                                                               \
        "{\"type\": [\"object\", \"null\"], \"description\": \"Extra environment variables, "                   \
        "{\\\"NAME\\\": \\\"value\\\"}.\", \"additionalProperties\": {\"type\": \"string\"}}"

/* The REST form of another list of name/value pairs (XB_ARGF_ENV_PAIRS). */
#define J_REST_MAP                                                                                               \
        "{\"type\": [\"object\", \"null\"], \"description\": \"{\\\"name\\\": \\\"value\\\"}.\", "     \
        "\"additionalProperties\": {\"type\": \"string\"}}"

#define J_ARG_STDIN                                                                                              \
        "\"stdin\": {\"type\": [\"string\", \"null\"], \"description\": \"Text written to the command's "       \
        "standard input, which is then closed. null: empty input.\"}"

/* ---- replies ---- */

#define J_STATUS                                                                                                 \
        "{\"type\": \"string\", \"enum\": [\"ok\", \"exit_nonzero\", \"timeout\", \"cpu_limit\", "              \
        "\"memory_limit\", \"output_limit\", \"killed\", \"running\"], \"description\": \"ok: exit code 0; "    \
        "exit_nonzero: another exit code; timeout: killed at timeout_s; cpu_limit, memory_limit, "              \
        "output_limit: killed at that limit; killed: by a signal; running: still going (see hint).\"}"

/* The result of a command: exec, and wait (src/proc/result.c:
 * xb_result_json; src/core/proc_wait.c: proc_running_json for the soft
 * timeout, with the hint src/rest/api.c adds). */
#define J_RESULT_PROPS                                                                                           \
        "\"status\": " J_STATUS ", "                                                                             \
        "\"exit_code\": {\"type\": [\"integer\", \"null\"], \"description\": \"null when killed by a signal "   \
        "or still running.\"}, "                                                                                 \
        "\"signal\": {\"type\": [\"integer\", \"null\"], \"description\": \"The signal that killed it, if one "  \
        "did.\"}, "                                                                                              \
        "\"stdout\": {\"type\": \"string\", \"description\": \"Standard output, UTF-8. When over the output "   \
        "limit, the head and the tail with a marker saying how much was left out.\"}, "                          \
        "\"stderr\": {\"type\": \"string\", \"description\": \"Standard error, like stdout.\"}, "               \
        "\"stdout_truncated\": {\"type\": \"boolean\"}, "                                                       \
        "\"stderr_truncated\": {\"type\": \"boolean\"}, "                                                       \
        "\"stdout_bytes\": {\"type\": \"integer\", \"description\": \"Bytes written to stdout in all.\"}, "     \
        "\"stderr_bytes\": {\"type\": \"integer\", \"description\": \"Bytes written to stderr in all.\"}, "     \
        "\"duration_ms\": {\"type\": \"integer\", \"description\": \"Wall time.\"}, "                           \
        "\"cpu_ms\": {\"type\": \"integer\", \"description\": \"CPU time (0 while running).\"}, "               \
        "\"peak_memory\": {\"type\": \"integer\", \"description\": \"Bytes, largest process (0 while "          \
        "running).\"}, "                                                                                         \
        "\"pid\": {\"type\": \"integer\", \"description\": \"Process id: read, feed or kill it with the "      \
        "process tools while it runs.\"}, "                                                                      \
        "\"stdout_offset\": {\"type\": \"integer\", \"description\": \"Only while running: stdout bytes so "    \
        "far; pass it to process_read to get what follows.\"}, "                                                \
        "\"stderr_offset\": {\"type\": \"integer\", \"description\": \"Only while running: like "               \
        "stdout_offset.\"}, "                                                                                    \
        "\"hint\": {\"type\": \"string\", \"description\": \"Only while running: what to do next.\"}"

#define J_RESULT_REQUIRED                                                                                        \
        "\"status\", \"exit_code\", \"signal\", \"stdout\", \"stderr\", \"stdout_truncated\", "                 \
        "\"stderr_truncated\", \"stdout_bytes\", \"stderr_bytes\", \"duration_ms\", \"cpu_ms\", "               \
        "\"peak_memory\", \"pid\""

#define J_RESULT "{\"type\": \"object\", \"properties\": {" J_RESULT_PROPS "}, \"required\": [" J_RESULT_REQUIRED "]}"

/* src/core/sbx.c: xb_sbx_json. */
/* A secret as GET /v1/secrets lists it (net/secret.c: xb_secret_json),
 * never its value; attached only when a sandbox was named. */
#define J_SECRET                                                                                                 \
        "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\", \"description\": \"Also the "   \
        "env var that holds its placeholder.\"}, \"hosts\": {\"type\": \"array\", \"items\": {\"type\": "         \
        "\"string\"}, \"description\": \"Where the proxy sends its value.\"}, \"header\": {\"type\": \"string\", " \
        "\"description\": \"The header it fills in, with {value} unfilled.\"}, \"created_ms\": {\"type\": "       \
        "\"integer\"}, \"attached\": {\"type\": \"boolean\", \"description\": \"The sandbox named holds it: "     \
        "its new processes have $NAME.\"}}, \"required\": [\"name\", \"hosts\"]}"

#define J_SANDBOX                                                                                                \
        "{\"type\": \"object\", \"properties\": {"                                                              \
        "\"id\": {\"type\": \"string\", \"description\": \"Pass it as sandbox_id, or in paths as {id}.\"}, "     \
        "\"state\": {\"type\": \"string\", \"enum\": [\"starting\", \"running\", \"paused\", \"stopping\", "      \
        "\"stopped\"]}, "                                                                                        \
        "\"limits\": {\"type\": \"object\", \"properties\": {"                                                  \
        "\"memory\": {\"type\": \"integer\", \"description\": \"Bytes; 0: none.\"}, "                           \
        "\"pids\": {\"type\": \"integer\", \"description\": \"Processes and threads; 0: none.\"}, "             \
        "\"cpus\": {\"type\": \"number\", \"description\": \"Cores; 0: no limit.\"}, "                          \
        "\"disk\": {\"type\": \"integer\", \"description\": \"Bytes its writable layer, and /tmp, can hold.\"}}, " \
        "\"required\": [\"memory\", \"pids\", \"cpus\", \"disk\"]}, "                                           \
        "\"metadata\": {\"type\": [\"object\", \"null\"], \"description\": \"What the creator attached.\"}, "   \
        "\"created_at_ms\": {\"type\": \"integer\", \"description\": \"Creation time on the server's clock.\"}, " \
        "\"expires_in_ms\": {\"type\": \"integer\", \"description\": \"It ends in this long if nothing "      \
        "changes.\"}, "                                                                                         \
        "\"expires_because\": {\"type\": \"string\", \"enum\": [\"idle\", \"paused_ttl\", \"max_lifetime\"], "      \
        "\"description\": \"The rule that ends it then: its idle timeout, its paused time to live, or its "     \
        "maximum lifetime.\"}, "                                                                                \
        "\"active\": {\"type\": \"boolean\", \"description\": \"Work runs in it (a background process, a "   \
        "running cell, a command someone waits on): its idle clock is held.\"}, "                               \
        "\"timeout_s\": {\"type\": \"integer\", \"description\": \"Idle time to live.\"}, "                     \
        "\"auto_pause\": {\"type\": \"boolean\", \"description\": \"At its idle timeout it pauses instead "   \
        "of ending; the next use resumes it.\"}, "                                                              \
        "\"paused_ttl_s\": {\"type\": \"integer\", \"description\": \"How long it may stay paused.\"}, "        \
        "\"max_lifetime_s\": {\"type\": \"integer\", \"description\": \"It ends this long after creation, "   \
        "whatever it does.\"}, "                                                                                \
        "\"processes\": {\"type\": \"integer\", \"description\": \"Processes the server tracks in it.\"}, "     \
        "\"user\": {\"type\": \"string\", \"description\": \"root when commands run as root by default.\"}, " \
        "\"template\": {\"type\": \"string\", \"description\": \"The template it started from, if not base.\"}, " \
        "\"secrets_waiting\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"description\": "    \
        "\"Secrets it holds a placeholder for whose value this server does not have (after a restart, "    \
        "or a delete): its requests carry the placeholder until its owner posts that name again (POST "       \
        "/v1/secrets). Absent when none.\"}}, "                                                               \
        "\"required\": [\"id\", \"state\", \"limits\", \"metadata\", \"created_at_ms\", \"expires_in_ms\", "   \
        "\"expires_because\", \"active\", \"timeout_s\", \"auto_pause\", \"paused_ttl_s\", \"max_lifetime_s\", "  \
        "\"processes\"]}"

/* src/core/proc_wait.c: xb_proc_json without output. */
/* src/core/proc_spill.c: where a background process's whole stream is. */
#define J_STREAM_FILE                                                                                            \
        "{\"type\": \"object\", \"description\": \"A background process's whole stream, in a file inside the "      \
        "sandbox (counted against its disk limit); the server keeps only a head and a tail.\", "                \
        "\"properties\": {\"path\": {\"type\": \"string\"}, \"bytes\": {\"type\": \"integer\", \"description\": "   \
        "\"The stream's first bytes in the file.\"}, \"complete\": {\"type\": \"boolean\", \"description\": "      \
        "\"false: the file stopped at bytes (error says why, e.g. the disk limit).\"}, "                        \
        "\"error\": {\"type\": \"string\"}}}"

#define J_PROCESS                                                                                                \
        "{\"type\": \"object\", \"properties\": {"                                                              \
        "\"pid\": {\"type\": \"integer\"}, "                                                                     \
        "\"cmd\": {\"type\": \"string\", \"description\": \"The command line, cut at 255 bytes.\"}, "           \
        "\"running\": {\"type\": \"boolean\"}, "                                                                 \
        "\"status\": " J_STATUS ", "                                                                             \
        "\"exit_code\": {\"type\": [\"integer\", \"null\"], \"description\": \"Once finished.\"}, "              \
        "\"signal\": {\"type\": [\"integer\", \"null\"], \"description\": \"Once finished.\"}, "                 \
        "\"stdout_bytes\": {\"type\": \"integer\"}, "                                                            \
        "\"stderr_bytes\": {\"type\": \"integer\"}, "                                                            \
        "\"started_ms_ago\": {\"type\": \"integer\"}, "                                                         \
        "\"stdout_file\": " J_STREAM_FILE ", \"stderr_file\": " J_STREAM_FILE "}, "                                 \
        "\"required\": [\"pid\", \"cmd\", \"running\", \"status\", \"stdout_bytes\", \"stderr_bytes\", "       \
        "\"started_ms_ago\"]}"

/* src/core/proc_wait.c: xb_proc_output_json. */
#define J_OUTPUT                                                                                                 \
        "{\"type\": \"object\", \"properties\": {"                                                              \
        "\"stdout\": {\"type\": \"string\", \"description\": \"New stdout from stdout_offset on.\"}, "          \
        "\"stderr\": {\"type\": \"string\", \"description\": \"New stderr from stderr_offset on.\"}, "          \
        "\"stdout_offset\": {\"type\": \"integer\", \"description\": \"Pass it next time to continue.\"}, "     \
        "\"stderr_offset\": {\"type\": \"integer\", \"description\": \"Pass it next time to continue.\"}, "     \
        "\"stdout_skipped\": {\"type\": \"integer\", \"description\": \"Bytes no longer kept (the middle of "   \
        "a long output) that were skipped.\"}, "                                                                 \
        "\"stderr_skipped\": {\"type\": \"integer\"}, "                                                          \
        "\"running\": {\"type\": \"boolean\"}, "                                                                 \
        "\"pid\": {\"type\": \"integer\"}, "                                                                     \
        "\"status\": " J_STATUS ", "                                                                             \
        "\"exit_code\": {\"type\": [\"integer\", \"null\"], \"description\": \"Once finished.\"}}, "             \
        "\"required\": [\"stdout\", \"stderr\", \"stdout_offset\", \"stderr_offset\", \"stdout_skipped\", "     \
        "\"stderr_skipped\", \"running\", \"pid\"]}"

/* ---- errors ---- */

#define J_ERROR                                                                                                  \
        "{\"type\": \"object\", \"properties\": {\"error\": {\"type\": \"object\", \"properties\": {"           \
        "\"code\": {\"type\": \"string\", \"description\": \"Stable and machine-readable, e.g. "                \
        "sandbox_not_found.\"}, "                                                                                \
        "\"message\": {\"type\": \"string\", \"description\": \"What went wrong.\"}, "                          \
        "\"hint\": {\"type\": \"string\", \"description\": \"What to do next, written for a language "         \
        "model.\"}}, \"required\": [\"code\", \"message\", \"hint\"]}}, \"required\": [\"error\"]}"

/* ---- code sessions (src/core/sessions.c: cell_json, xb_session_json) ---- */

#define J_CELL_OUTPUT                                                                                            \
        "{\"type\": \"object\", \"properties\": {"                                                              \
        "\"type\": {\"type\": \"string\", \"enum\": [\"stream\", \"display\", \"result\", \"error\", \"exit\"], " \
        "\"description\": \"stream: printed text; display: a rich output such as a figure; result: the value "  \
        "of the last line; error: an exception; exit: a bash command's exit code.\"}, "                         \
        "\"name\": {\"type\": \"string\", \"description\": \"stream: stdout or stderr; error: the exception's " \
        "class.\"}, "                                                                                            \
        "\"text\": {\"type\": \"string\", \"description\": \"stream: the text.\"}, "                            \
        "\"data\": {\"type\": \"object\", \"description\": \"display, result: one value per MIME type, e.g. "  \
        "text/plain, text/html, image/png (base64).\"}, "                                                        \
        "\"url\": {\"type\": \"string\", \"description\": \"display, result: where its image is served.\"}, "   \
        "\"execution_count\": {\"type\": \"integer\"}, "                                                         \
        "\"value\": {\"type\": \"string\", \"description\": \"error: the message.\"}, "                         \
        "\"traceback\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}, "                             \
        "\"exit_code\": {\"type\": \"integer\"}, "                                                               \
        "\"cwd\": {\"type\": [\"string\", \"null\"], \"description\": \"exit: the shell's directory after.\"}}, " \
        "\"required\": [\"type\"]}"

#define J_CELL                                                                                                   \
        "{\"type\": \"object\", \"properties\": {"                                                              \
        "\"status\": {\"type\": \"string\", \"enum\": [\"ok\", \"error\", \"interrupted\", \"timeout\", "       \
        "\"running\", \"dead\", \"idle\"], \"description\": \"ok; error: the code raised (see the error "       \
        "output); timeout: interrupted at timeout_s; running: still going (see hint); dead: the interpreter "   \
        "died; idle: nothing was running.\"}, "                                                                  \
        "\"execution_count\": {\"type\": \"integer\"}, "                                                         \
        "\"duration_ms\": {\"type\": \"integer\"}, "                                                             \
        "\"session_id\": {\"type\": \"string\"}, "                                                               \
        "\"outputs\": {\"type\": \"array\", \"items\": " J_CELL_OUTPUT "}, "                                     \
        "\"output_dropped_bytes\": {\"type\": \"integer\", \"description\": \"Output past the limit, left "    \
        "out.\"}, "                                                                                              \
        "\"hint\": {\"type\": \"string\", \"description\": \"What to do next, when it did not finish.\"}}, "    \
        "\"required\": [\"status\", \"execution_count\", \"duration_ms\", \"session_id\", \"outputs\"]}"

#define J_SESSION                                                                                                \
        "{\"type\": \"object\", \"properties\": {"                                                              \
        "\"id\": {\"type\": \"string\", \"description\": \"The session id, {sid} in paths.\"}, "                \
        "\"language\": {\"type\": \"string\"}, "                                                                 \
        "\"state\": {\"type\": \"string\", \"enum\": [\"starting\", \"idle\", \"busy\", \"dead\"]}, "           \
        "\"execution_count\": {\"type\": \"integer\"}, "                                                         \
        "\"pid\": {\"type\": \"integer\"}, "                                                                     \
        "\"error\": {\"type\": \"string\", \"description\": \"dead: why.\"}, "                                  \
        "\"stderr\": {\"type\": \"string\", \"description\": \"dead: the interpreter's last words.\"}, "        \
        "\"hint\": {\"type\": \"string\"}}, "                                                                    \
        "\"required\": [\"id\", \"language\", \"state\", \"execution_count\", \"pid\"]}"

/* ---- files (src/core/files.c: entry_json, finish_list, put_end) ---- */

#define J_FILE_WRITTEN                                                                                           \
        "{\"type\": \"object\", \"properties\": {\"path\": {\"type\": \"string\"}, \"size\": {\"type\": "       \
        "\"integer\", \"description\": \"The file's size now, in bytes.\"}, \"written\": {\"type\": "          \
        "\"integer\", \"description\": \"Bytes written by this call.\"}}, \"required\": [\"path\", \"size\", "  \
        "\"written\"]}"

#define J_FILE_ENTRY                                                                                             \
        "{\"type\": \"object\", \"properties\": {"                                                              \
        "\"name\": {\"type\": \"string\"}, "                                                                     \
        "\"path\": {\"type\": \"string\", \"description\": \"Absolute.\"}, "                                    \
        "\"type\": {\"type\": \"string\", \"enum\": [\"file\", \"dir\", \"symlink\", \"other\"]}, "             \
        "\"size\": {\"type\": \"integer\", \"description\": \"Bytes.\"}, "                                      \
        "\"mode\": {\"type\": \"string\", \"description\": \"Octal permissions, e.g. 0644.\"}, "                \
        "\"mtime\": {\"type\": \"string\", \"description\": \"Last change, UTC, ISO 8601.\"}, "                 \
        "\"mtime_ms\": {\"type\": \"integer\", \"description\": \"Last change, Unix time in ms.\"}, "           \
        "\"target\": {\"type\": \"string\", \"description\": \"stat of a symlink: where it points.\"}}, "       \
        "\"required\": [\"name\", \"path\", \"type\", \"size\", \"mode\", \"mtime\", \"mtime_ms\"]}"

#define J_FILE_LIST                                                                                              \
        "{\"type\": \"object\", \"properties\": {\"path\": {\"type\": \"string\"}, \"entries\": {\"type\": "    \
        "\"array\", \"items\": " J_FILE_ENTRY "}, \"count\": {\"type\": \"integer\"}, \"truncated\": {\"type\": " \
        "\"boolean\", \"description\": \"The listing stopped at its limit (10000 entries).\"}, \"hint\": "       \
        "{\"type\": \"string\", \"description\": \"When truncated: what to do.\"}}, \"required\": [\"path\", "  \
        "\"entries\", \"count\", \"truncated\"]}"

/* A sandbox's network policy: create's argument, and sandbox_network's reply. */
#define J_NETWORK_PEERS                                                                                          \
        "\"peers\": {\"type\": [\"array\", \"null\"], \"items\": {\"type\": \"string\"}, \"description\": "   \
        "\"Sandbox ids (one tenant's) this one may talk with, in any mode: each must list this one too. "      \
        "Inside, http://ID.sandbox.internal:PORT/ through the proxy reaches the peer's port.\"}"

#define J_NETWORK_RULES                                                                                          \
        "\"allow\": {\"type\": [\"array\", \"null\"], \"items\": {\"type\": \"string\"}, \"description\": "   \
        "\"Domains (example.com), wildcards (*.example.com) and CIDRs (203.0.113.0/24).\"}, "                      \
        "\"deny\": {\"type\": [\"array\", \"null\"], \"items\": {\"type\": \"string\"}, \"description\": "    \
        "\"Rules that win over allow.\"}, " J_NETWORK_PEERS

#define J_NETWORK_ARG                                                                                            \
        "{\"anyOf\": [{\"type\": \"string\", \"enum\": [\"none\", \"packages\", \"open\", \"allowlist\"]}, "    \
        "{\"type\": \"object\", \"properties\": {\"mode\": {\"type\": \"string\", \"enum\": [\"none\", "        \
        "\"packages\", \"allowlist\", \"open\"]}, " J_NETWORK_RULES "}, \"required\": [\"mode\", \"allow\", "   \
        "\"deny\", \"peers\"], \"additionalProperties\": false}, {\"type\": \"null\"}], \"description\": \"What the "    \
        "sandbox may reach: none (the default), packages (the package mirrors only), open (the public "      \
        "internet), or an allowlist. Private and metadata addresses are always refused. null: none.\"}"

#define J_NETWORK                                                                                                \
        "{\"type\": \"object\", \"properties\": {\"mode\": {\"type\": \"string\"}, "                           \
        "\"allow\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}, "                                \
        "\"deny\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}, "                                 \
        "\"peers\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}, "                                \
        "\"ceiling\": {\"type\": \"string\", \"description\": \"The most this server allows.\"}, "             \
        "\"proxy\": {\"type\": \"string\"}, \"stats\": {\"type\": \"object\"}}, \"required\": [\"mode\", "     \
        "\"allow\", \"deny\"]}"

#define J_TEMPLATE                                                                                               \
        "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, \"layers\": {\"type\": "   \
        "\"array\", \"items\": {\"type\": \"string\"}, \"description\": \"Read-only layers, top first.\"}, "     \
        "\"env\": {\"type\": \"object\"}, \"user\": {\"type\": \"string\"}, \"parent\": {\"type\": "            \
        "\"string\", \"description\": \"The sandbox it was taken from.\"}, \"created_at_ms\": {\"type\": "        \
        "\"integer\"}, \"in_use\": {\"type\": \"integer\", \"description\": \"Sandboxes using it.\"}, "          \
        "\"builtin\": {\"type\": \"boolean\"}, \"state\": {\"type\": \"string\", \"description\": "             \
        "\"ready, or building or failed for a build (see progress).\"}, \"workdir\": {\"type\": \"string\"}, "    \
        "\"start\": {\"type\": \"object\", \"description\": \"Run at create, which waits for ready.\"}, "      \
        "\"progress\": {\"type\": \"object\", \"description\": \"A build's step, steps and log_tail.\"}, "     \
        "\"error\": {\"type\": \"object\", \"description\": \"Why a build failed.\"}}, "                       \
        "\"required\": [\"name\"]}"
