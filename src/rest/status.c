/* Error code to HTTP status and hint: see status.h. A hint here (or an
 * addition to the message) may name REST routes; the engine's own words
 * never do. */
#include <stdio.h>

#include "rest/status.h"

#define HINT_TOOL "use POST /v1/sandboxes/{id}/exec {\"cmd\": \"...\"} for anything the file API cannot do"
#define HINT_PATH "pass ?path=/home/user/file.txt: an absolute path, or one relative to /home/user"
#define HINT_DISK "the sandbox's disk limit is reached: delete files, or create the sandbox with a larger " \
                  "{\"limits\": {\"disk\": BYTES}}"

static const struct xb_rest_status table[XB_E__COUNT] = {
        [XB_E_NONE] = { 500, "retry; if it persists, check the server log" },
        [XB_E_INVALID] = { 400, "fix the field named in the message; see GET /openapi.json for the schema" },
        [XB_E_INTERNAL] = { 500, "retry" },
        [XB_E_NOMEM] = { 503, "retry" },
        [XB_E_SHUTTING_DOWN] = { 503, "retry against another instance" },

        [XB_E_SANDBOX_NOT_FOUND] = { 404, "list your sandboxes with GET /v1/sandboxes, or create one with POST "
                                     "/v1/sandboxes" },
        [XB_E_SANDBOX_GONE] = { 410, "create a new sandbox" },
        [XB_E_SANDBOX_EXPIRED] = { 410, "create a new sandbox",
                                   "; extend it with POST /v1/sandboxes/{id}/keepalive" },
        [XB_E_SANDBOX_ENDED] = { 410, "it cannot be used again and its files are gone; create a new sandbox "
                                      "with POST /v1/sandboxes" },
        [XB_E_SANDBOX_BUSY] = { 503, "retry in a moment" },
        [XB_E_SANDBOX_PAUSED] = { 409, "the sandbox is paused: resume it first with POST /v1/sandboxes/{id}/resume" },
        [XB_E_SANDBOX_FAILED] = { 500, "retry; if it persists, check the server log" },
        [XB_E_SANDBOX_UNAVAILABLE] = { 503, "retry in a few seconds: the server is short of file descriptors, "
                                           "memory or disk; delete sandboxes you no longer need" },
        [XB_E_TOO_MANY_SANDBOXES] = { 429, "delete sandboxes you no longer need" },
        [XB_E_OVER_CEILING] = { 400, "ask for at most the server's ceilings" },
        [XB_E_OVER_QUOTA] = { 429, "wait, or free what your tenant holds" },
        [XB_E_INVALID_MOUNT] = { 400, "mount only directories the operator allowed with --allow-mount" },
        [XB_E_INVALID_TEMPLATE] = { 400, "leave `template` out, or use \"base\"" },
        [XB_E_TEMPLATE_NOT_FOUND] = { 404, "list templates with GET /v1/templates; make one with POST "
                                           "/v1/sandboxes/{id}/snapshot" },
        [XB_E_TEMPLATE_EXISTS] = { 409, "choose another name, or DELETE /v1/templates/{name} first" },
        [XB_E_TEMPLATE_IN_USE] = { 409, "delete the sandboxes made from it (and their forks) first" },
        [XB_E_TEMPLATE_BUILD_FAILED] = { 422, "fix the step the message names (its exit code and the end of its log "
                                              "are in it) and POST /v1/templates again" },
        [XB_E_INSTALL_FAILED] = { 422, "check the package names (apt-cache policy NAME in the sandbox) and the end "
                                       "of apt's output in the message, then install again" },
        [XB_E_TEMPLATE_NOT_READY] = { 504, "the template's start command did not become ready in time: check "
                                           "it with a sandbox of its `from`, or build it with a longer "
                                           "start.timeout_s" },
        [XB_E_LAYERS_UNSUPPORTED] = { 409, "the operator must run the server with --layers disk" },
        [XB_E_INVALID_METADATA] = { 400, "pass metadata as a flat object of strings" },
        [XB_E_METADATA_TOO_LARGE] = { 400, "keep metadata small; store data in files instead" },
        [XB_E_INVALID_NETWORK] = { 400, "send \"network\": \"none\", \"packages\", \"open\" or {\"mode\": "
                                   "\"allowlist\", \"allow\": [\"example.com\", \"*.example.org\", "
                                   "\"203.0.113.0/24\"], \"deny\": []}" },
        [XB_E_NETWORK_FORBIDDEN] = { 403, "ask for no more than the server's ceiling (GET "
                                     "/v1/sandboxes/{id}/network shows it); only the operator can raise it "
                                     "(execbox serve --network-max)" },
        [XB_E_NETWORK_UNAVAILABLE] = { 503, "this server runs without egress; its operator can enable it" },
        [XB_E_INVALID_SECRET] = { 400, "send {\"name\": \"GITHUB_TOKEN\", \"value\": \"...\", \"hosts\": "
                                  "[\"api.github.com\"], \"header\": \"Authorization: Bearer {value}\"}" },
        [XB_E_SECRET_NOT_FOUND] = { 404, "list secrets with GET /v1/secrets; a human creates one with POST "
                                    "/v1/secrets (a sandbox may ask for one at $EXECBOX_API/secrets/NAME)" },
        [XB_E_TOO_MANY_SECRETS] = { 429, "delete a secret first (DELETE /v1/secrets/{name})" },
        [XB_E_APPROVAL_NOT_FOUND] = { 404, "list what waits with GET /v1/approvals; a decided or timed-out "
                                      "approval is gone" },
        [XB_E_NOT_APPROVED] = { 403, "a human must approve it: GET /v1/approvals lists what waits, POST "
                                "/v1/approvals/{id} (or `execbox approvals allow ID`) allows it" },

        [XB_E_PROCESS_NOT_FOUND] = { 404, "list processes with GET /v1/sandboxes/{id}/processes" },
        [XB_E_WATCHER_NOT_FOUND] = { 404, "create a watcher with POST /v1/sandboxes/{id}/watchers; an ended one "
                                          "is gone once its last events were read" },
        [XB_E_TOO_MANY_WATCHES] = { 429, "stop a watch first (DELETE .../watchers/{watcher_id}, or close a watch "
                                         "stream)" },
        [XB_E_PROCESS_FINISHED] = { 409, "read its result with GET .../processes/{pid}" },
        [XB_E_PROCESS_LIMIT] = { 429, "the sandbox is at its process limit (limits.pids): wait for its processes to "
                                 "end, kill some (see GET .../processes), or create the sandbox with a higher "
                                 "limits.pids" },
        [XB_E_TOO_MANY_PROCESSES] = { 429, "wait for or delete finished processes" },
        [XB_E_FD_BUDGET] = { 429, "stop or delete background processes (DELETE /v1/sandboxes/{id}/processes/{pid}) "
                                  "or sandboxes you no longer need, then retry" },
        [XB_E_COMMAND_TOO_LONG] = { 400, "write long inputs to a file and pass its path" },
        [XB_E_COMMAND_NOT_FOUND] = { 400, "check the program name; use `cmd` to run it through bash, which searches "
                                     "PATH and reports errors as exit code 127" },
        [XB_E_BAD_CWD] = { 400, "create the directory first, or use /home/user" },
        [XB_E_SPAWN_FAILED] = { 400, "check the command and its arguments" },
        [XB_E_SPAWN_INTERNAL] = { 500, "retry; if it persists, delete the sandbox and create another" },
        [XB_E_STDIN_CLOSED] = { 409, "start the process again if it needs more input" },
        [XB_E_BAD_SIGNAL] = { 400, "use a name such as \"SIGINT\", \"SIGTERM\", \"SIGKILL\" or a number 1-64" },
        [XB_E_BAD_OFFSETS] = { 400, "offsets and max_bytes are whole numbers of bytes; wait_s is seconds" },
        [XB_E_INVALID_COMMAND] = { 400, "send {\"cmd\": \"ls -la\"} or {\"argv\": [\"ls\", \"-la\"]}; see GET "
                                   "/v1/guide" },
        [XB_E_INVALID_PROCESS_START] = { 400, "send {\"cmd\": \"python3 server.py\"}; see GET /v1/guide" },
        [XB_E_INVALID_STDIN] = { 400, "send {\"data\": \"text\\n\"}, and {\"eof\": true} to close stdin" },

        [XB_E_MISSING_PATH] = { 400, HINT_PATH },
        [XB_E_INVALID_PATH] = { 400, HINT_PATH },
        [XB_E_PATH_TOO_LONG] = { 400, "names are at most 255 bytes and paths 4096" },
        [XB_E_INVALID_MODE] = { 400, "give octal permission bits such as \"0644\" or \"0755\"" },
        [XB_E_INVALID_DEPTH] = { 400, "depth=1 lists the directory itself; up to 5 goes deeper" },
        [XB_E_FILE_NOT_FOUND] = { 404, "check the path; list a directory with GET "
                                  "/v1/sandboxes/{id}/files/list?path=DIR" },
        [XB_E_NOT_A_DIRECTORY] = { 400, "a component of the path is a file, not a directory" },
        [XB_E_IS_A_DIRECTORY] = { 400, "a directory has no content: list it with GET "
                                  "/v1/sandboxes/{id}/files/list?path=DIR" },
        [XB_E_PERMISSION_DENIED] = { 403, "file operations run as the sandbox user (uid 1000): only /home/user, /tmp "
                                     "and writable mounts can be written, and other users' private files cannot "
                                     "be read" },
        [XB_E_PERMISSION_DENIED_CHANGE] = { 403, "file operations run as the sandbox user (uid 1000): only "
                                            "/home/user, /tmp and writable mounts can be written, and files owned "
                                            "by others cannot be changed" },
        [XB_E_READ_ONLY] = { 403, "only /home/user, /tmp and writable mounts can be written" },
        [XB_E_DISK_FULL] = { 507, HINT_DISK },
        [XB_E_ALREADY_EXISTS] = { 409, "choose another name, delete the existing one first, or for a move pass "
                                  "\"overwrite\": true" },
        [XB_E_FILE_EXISTS] = { 409, "send \"force\": true to overwrite it, or pick another path" },
        [XB_E_DIRECTORY_NOT_EMPTY] = { 409, "delete it with recursive=true to remove everything inside too" },
        [XB_E_PROTECTED_PATH] = { 409, "/, /home/user and mount points cannot be deleted or moved; act on what is "
                                  "inside them" },
        [XB_E_SYMLINK_REFUSED] = { 400, "the path crosses a /proc magic link or a symlink loop, or ends in a "
                                   "dangling symlink; use the real path" },
        [XB_E_CROSS_DEVICE] = { 400, "the source and destination are on different filesystems (such as /tmp and "
                                "/home/user); " HINT_TOOL ", e.g. mv" },
        [XB_E_TREE_TOO_LARGE] = { 413, "the tree is over 100000 entries or 128 levels deep, and only part of it was "
                                  "deleted; repeat the request, or " HINT_TOOL },
        [XB_E_TEXT_FILE_BUSY] = { 409, "a running program is this file; write a new file and move it over the old "
                                  "one" },
        [XB_E_FILE_BUSY] = { 503, "the path kept changing during the operation, or a process holds a lease on the "
                             "file; retry" },
        [XB_E_NOT_A_REGULAR_FILE] = { 400, "only regular files can be read or written; FIFOs, sockets and devices "
                                      "are refused" },
        [XB_E_UNSUPPORTED_FILE] = { 400, "files in /proc and similar filesystems are not served; " HINT_TOOL },
        [XB_E_FILE_TOO_LARGE] = { 413, "the file would exceed a size limit" },
        [XB_E_BAD_FILE_NAME] = { 400, "the last component cannot be . or .., and a directory cannot move into "
                                 "itself" },
        [XB_E_FILE_ERROR] = { 500, "retry; if it persists, " HINT_TOOL },
        [XB_E_FILE_REQUEST_FAILED] = { 400, "shorten the path, or retry" },
        [XB_E_FILE_REQUEST_INTERNAL] = { 500, "shorten the path, or retry" },
        [XB_E_TOO_MANY_FILE_REQUESTS] = { 429, "wait for earlier file requests to this sandbox to finish" },
        [XB_E_RANGE_NOT_SATISFIABLE] = { 416, "ask for bytes inside the file, or leave out the Range header" },
        [XB_E_UPLOAD_TOO_LARGE] = { 413, "upload smaller files, or raise the server's --upload-max" },
        [XB_E_INVALID_ENCODING] = { 400, "send the whole file compressed as one gzip stream (gzip -c FILE), or send it "
                                         "uncompressed without Content-Encoding" },
        [XB_E_UNSUPPORTED_ENCODING] = { 415, "send `Content-Encoding: gzip` (or identity), or no Content-Encoding" },
        [XB_E_WRITE_FAILED] = { 500, "retry" },

        [XB_E_SESSION_NOT_FOUND] = { 404, "list sessions with GET /v1/sandboxes/{id}/sessions, or create one with "
                                     "POST" },
        [XB_E_SESSION_DEAD] = { 409, "POST .../sessions/{sid}/restart, then run the cell again" },
        [XB_E_SESSION_DEAD_VARIABLE] = { 409, "restart the session" },
        [XB_E_SESSION_DEAD_LOST] = { 409, "restart the session and define the variable again" },
        [XB_E_SESSION_BUSY] = { 409, "wait for the running cell (POST .../wait), send it input, or interrupt it" },
        [XB_E_SESSION_BUSY_VARIABLE] = { 409, "read variables while no cell runs" },
        [XB_E_SESSION_DELETED] = { 410, "create the session again" },
        [XB_E_SESSION_FAILED] = { 503, "retry, or use another language" },
        [XB_E_SESSION_INTERNAL] = { 500, "retry, or create a new sandbox" },
        [XB_E_TOO_MANY_SESSIONS] = { 429, "delete sessions you no longer need" },
        [XB_E_UNKNOWN_LANGUAGE] = { 400, "use \"python\", \"bash\", \"javascript\", or one of the installed Jupyter "
                                    "kernels named here (`jupyter kernelspec list` in the sandbox)" },
        [XB_E_NO_INPUT] = { 409, "only a running bash command reads input" },
        [XB_E_ALREADY_WAITING] = { 409, "only one request can wait on a cell" },
        [XB_E_VARIABLE_NOT_FOUND] = { 404, "define it in a cell first; names are case-sensitive" },
        [XB_E_VARIABLES_UNSUPPORTED] = { 400, "print the value in a cell instead: only Python sessions can be "
                                         "inspected" },
        [XB_E_BAD_VARIABLE_NAME] = { 400, "use a variable name such as df or results.mean" },
        [XB_E_IMAGE_NOT_FOUND] = { 404, "images are kept per sandbox, the newest 64; run the cell again" },
        [XB_E_INVALID_LANGUAGE] = { 400, "use \"python\", \"bash\", \"javascript\", or a Jupyter kernel name (see "
                                    "`jupyter kernelspec list` in the sandbox)" },

        [XB_E_INVALID_PORT] = { 400, "give the port as a number from 1 to 65535: the one the server listens on inside "
                                "the sandbox" },
        [XB_E_PORT_CLOSED] = { 502, "start the server in the sandbox first, e.g. POST /v1/sandboxes/{id}/processes "
                               "{\"cmd\": \"python3 -m http.server 8080\"}, listening on 0.0.0.0 or 127.0.0.1; GET "
                               "/v1/sandboxes/{id}/ports lists what listens" },
        [XB_E_SHARE_EXPIRED] = { 403, "shared links expire: ask for a fresh one with POST "
                                 "/v1/sandboxes/{id}/ports/{port}/share, or send the bearer token" },
        [XB_E_BAD_SHARE] = { 403, "use the shared link exactly as it was given, or send the bearer token" },

        [XB_E_GUIDE_NOT_FOLLOWED] = { 400, "read the guide first: GET /getGuide, then retry with guideFollowed: true" },
        [XB_E_UNAUTHORIZED] = { 401, "send a bearer token" },
};

const struct xb_rest_status *
xb_rest_status(enum xb_ecode c)
{
        return &table[(unsigned)c < XB_E__COUNT && table[c].status ? c : XB_E_NONE];
}

const char *
xb_rest_message(const struct xb_err *err, char *buf, size_t cap)
{
        const struct xb_rest_status *st = xb_rest_status(err->ecode);

        if (!st->more)
                return err->msg;
        snprintf(buf, cap, "%s%s", err->msg, st->more);
        return buf;
}

void
xb_rest_fail(struct xb_req *r, const struct xb_err *err)
{
        const struct xb_rest_status *st = xb_rest_status(err->ecode);
        char buf[XB_REST_MSG_MAX];

        /* RFC 9110 15.5.20: a 429 may say when to come back. */
        if (st->status == 429) {
                char secs[16];

                snprintf(secs, sizeof(secs), "%u", err->retry_s ? err->retry_s : 1);
                xb_req_add_reply_header(r, "Retry-After", secs);
        }
        xb_reply_error(r, st->status, xb_ecode_name(err->ecode), err->hint ? err->hint : st->hint, "%s",
                       xb_rest_message(err, buf, sizeof(buf)));
}
