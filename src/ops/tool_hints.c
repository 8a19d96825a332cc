/* A tool's words for failures: one table from error code (base/ecode.h)
 * to the advice a model reads after "Hint:", in terms of the tools (never
 * a REST route), and the one-line error text of a tool result. MCP and
 * REST's tool bridge both answer with it.
 *
 * A code's entry here wins over the engine's err->hint: the engine cannot
 * know which tool the model should reach for. A code without an entry is
 * one whose advice depends on the case (a malformed argument): there the
 * engine's hint is used, or a neutral default. */
#define _GNU_SOURCE
#include <stdio.h>

#include "base/ecode.h"
#include "ops/tool_result.h"

#define RUN "use run_command for anything the file tools cannot do"
#define FRESH_CODE "call run_code again to start a fresh interpreter"
#define WRITABLE "file tools run as the sandbox user (uid 1000): only /home/user, /tmp and writable mounts can be " \
                 "written, and other users' private files cannot be read or changed"
#define PATH "pass path as an absolute path such as /home/user/file.txt, or one relative to /home/user"
#define DEFAULT_HINT "fix what the message names, then call the tool again"

static const char *const hints[XB_E__COUNT] = {
        [XB_E_NONE] = "retry; if it persists, check the server log",
        [XB_E_INTERNAL] = "retry",
        [XB_E_NOMEM] = "retry",
        [XB_E_SHUTTING_DOWN] = "the server is stopping: retry in a while",

        [XB_E_SANDBOX_NOT_FOUND] = "pass sandbox_id null to use your default sandbox, or see yours with sandbox_list",
        [XB_E_SANDBOX_GONE] = "the sandbox has ended: pass sandbox_id null to use your default sandbox, or create "
                              "one with sandbox_create",
        [XB_E_SANDBOX_EXPIRED] = "the sandbox has ended: pass sandbox_id null to use your default sandbox, or "
                                 "create one with sandbox_create",
        [XB_E_SANDBOX_ENDED] = "the sandbox has ended and its files are gone: pass sandbox_id null to use your "
                               "default sandbox, or create one with sandbox_create",
        [XB_E_SANDBOX_BUSY] = "retry in a moment",
        [XB_E_TEMPLATE_BUILD_FAILED] = "fix the step the error names (its exit code and log tail are in it) and "
                                       "call template_build again",
        [XB_E_INSTALL_FAILED] = "check the package names and the end of apt's output in the error, then call "
                                "install again",
        [XB_E_TEMPLATE_NOT_READY] = "the template's start command did not become ready in time; rebuild it with "
                                    "a working start command or a longer start.timeout_s",
        [XB_E_SANDBOX_PAUSED] = "the sandbox is paused: resume it first with sandbox_resume",
        [XB_E_SANDBOX_FAILED] = "retry; if it persists, check the server log",
        [XB_E_SANDBOX_UNAVAILABLE] = "retry",
        [XB_E_TOO_MANY_SANDBOXES] = "delete sandboxes you no longer need with sandbox_delete (sandbox_list shows "
                                    "them)",
        [XB_E_INVALID_MOUNT] = "mount only directories the operator allowed with --allow-mount",
        [XB_E_INVALID_NETWORK] = "pass network as \"none\", \"packages\", \"open\" or {\"mode\": \"allowlist\", "
                                 "\"allow\": [\"example.com\", \"*.example.org\"], \"deny\": []}",
        [XB_E_NETWORK_FORBIDDEN] = "the server's operator does not allow that much network (sandbox_network shows "
                                   "the ceiling): ask the user, who can ask the operator",
        [XB_E_NETWORK_UNAVAILABLE] = "this server has no egress: tell the user the sandbox cannot reach the network",
        [XB_E_NOT_APPROVED] = "only a human can approve it, never a tool: tell the user which secret you need, for "
                              "which hosts and why, and that they allow it with `execbox approvals allow ID` (the "
                              "value on stdin); then call request_secret again",
        [XB_E_SECRET_NOT_FOUND] = "list_secrets shows your secrets; ask the user for one with request_secret",

        [XB_E_WATCHER_NOT_FOUND] = "create a watcher first; an ended one is gone once its last events were read",
        [XB_E_TOO_MANY_WATCHES] = "stop a directory watch first, then retry",
        [XB_E_PROCESS_NOT_FOUND] = "use a pid that process_start (or a run_command still running) gave you in this "
                                   "sandbox",
        [XB_E_PROCESS_FINISHED] = "the process has ended: read its last output and exit code with process_read",
        [XB_E_PROCESS_LIMIT] = "the sandbox is at its process limit (limits.pids): wait for its processes to end, "
                               "stop some with process_kill, or create a sandbox with a higher limits.pids",
        [XB_E_TOO_MANY_PROCESSES] = "the sandbox keeps too many processes: wait for some to end, or continue in a "
                                    "fresh sandbox from sandbox_create",
        [XB_E_FD_BUDGET] = "stop background processes (process_kill) or delete sandboxes you no longer need, then "
                           "retry",
        [XB_E_COMMAND_TOO_LONG] = "write long inputs to a file with write_file and pass its path",
        [XB_E_COMMAND_NOT_FOUND] = "check the program name; run_command runs cmd through bash, which searches PATH "
                                   "and reports errors as exit code 127",
        [XB_E_BAD_CWD] = "create the directory first, or leave cwd null for /home/user",
        [XB_E_SPAWN_FAILED] = "check the command and its arguments",
        [XB_E_SPAWN_INTERNAL] = "retry; if it persists, delete the sandbox with sandbox_delete and use a fresh one",
        [XB_E_STDIN_CLOSED] = "its stdin is closed: start the command again with process_start if it needs more "
                              "input",
        [XB_E_BAD_SIGNAL] = "use a signal name such as SIGINT, SIGTERM or SIGKILL",
        [XB_E_BAD_OFFSETS] = "pass back the stdout_offset and stderr_offset that process_read gave you",

        [XB_E_MISSING_PATH] = PATH,
        [XB_E_INVALID_PATH] = PATH,
        [XB_E_PATH_TOO_LONG] = "names are at most 255 bytes and paths 4096",
        [XB_E_INVALID_MODE] = "give octal permission bits such as \"0644\" or \"0755\"",
        [XB_E_INVALID_DEPTH] = "depth 1 lists the directory itself; up to 5 goes deeper",
        [XB_E_FILE_NOT_FOUND] = "check the path; see what is there with list_files",
        [XB_E_NOT_A_DIRECTORY] = "a component of the path is a file, not a directory",
        [XB_E_IS_A_DIRECTORY] = "a directory has no content: list it with list_files, or view it with edit_file",
        [XB_E_PERMISSION_DENIED] = WRITABLE,
        [XB_E_PERMISSION_DENIED_CHANGE] = WRITABLE,
        [XB_E_READ_ONLY] = "only /home/user, /tmp and writable mounts can be written",
        [XB_E_DISK_FULL] = "the sandbox's disk limit is reached: delete files with run_command, or create a sandbox "
                           "with a larger limits.disk",
        [XB_E_ALREADY_EXISTS] = "choose another name, or delete the existing one first",
        [XB_E_FILE_EXISTS] = "choose another path, or delete the existing file first",
        [XB_E_DIRECTORY_NOT_EMPTY] = "remove it and everything inside with run_command (rm -r)",
        [XB_E_PROTECTED_PATH] = "/, /home/user and mount points cannot be deleted or moved; act on what is inside "
                                "them",
        [XB_E_SYMLINK_REFUSED] = "the path crosses a /proc magic link or a symlink loop, or ends in a dangling "
                                 "symlink; use the real path",
        [XB_E_CROSS_DEVICE] = "the source and destination are on different filesystems (such as /tmp and "
                              "/home/user); " RUN ", e.g. mv",
        [XB_E_TREE_TOO_LARGE] = "the tree is over 100000 entries or 128 levels deep, and only part of it was "
                                "deleted; repeat, or " RUN,
        [XB_E_TEXT_FILE_BUSY] = "a running program is this file; write a new file and move it over the old one",
        [XB_E_FILE_BUSY] = "the path kept changing during the operation, or a process holds a lease on the file; "
                           "retry",
        [XB_E_NOT_A_REGULAR_FILE] = "only regular files can be read or written; FIFOs, sockets and devices are "
                                    "refused",
        [XB_E_UNSUPPORTED_FILE] = "files in /proc and similar filesystems are not served; " RUN ", e.g. cat",
        [XB_E_FILE_TOO_LARGE] = "the file would exceed a size limit",
        [XB_E_BAD_FILE_NAME] = "the last component cannot be . or .., and a directory cannot move into itself",
        [XB_E_FILE_ERROR] = "retry; if it persists, " RUN,
        [XB_E_FILE_REQUEST_FAILED] = "shorten the path, or retry",
        [XB_E_FILE_REQUEST_INTERNAL] = "shorten the path, or retry",
        [XB_E_TOO_MANY_FILE_REQUESTS] = "wait for earlier file operations on this sandbox to finish, then retry",
        [XB_E_RANGE_NOT_SATISFIABLE] = "the file changed while it was read; retry",
        [XB_E_UPLOAD_TOO_LARGE] = "write smaller files; the operator sets the limit (--upload-max)",
        [XB_E_INVALID_ENCODING] = "send the whole file as one gzip stream, or uncompressed",
        [XB_E_UNSUPPORTED_ENCODING] = "send gzip or uncompressed content",
        [XB_E_WRITE_FAILED] = "retry",

        [XB_E_SESSION_NOT_FOUND] = FRESH_CODE,
        [XB_E_SESSION_DEAD] = "the interpreter died and its variables are lost; " FRESH_CODE,
        [XB_E_SESSION_DEAD_VARIABLE] = "the interpreter died and its variables are lost; " FRESH_CODE,
        [XB_E_SESSION_DEAD_LOST] = "the interpreter died and its variables are lost; " FRESH_CODE,
        [XB_E_SESSION_BUSY] = "another cell is still running in this interpreter: wait for it, then call run_code "
                              "again",
        [XB_E_SESSION_BUSY_VARIABLE] = "read variables while no cell runs",
        [XB_E_SESSION_DELETED] = FRESH_CODE,
        [XB_E_SESSION_FAILED] = "retry, or use another language",
        [XB_E_SESSION_INTERNAL] = "retry, or continue in a fresh sandbox from sandbox_create",
        [XB_E_TOO_MANY_SESSIONS] = "use fewer languages in this sandbox, or continue in a fresh sandbox from "
                                   "sandbox_create",
        [XB_E_UNKNOWN_LANGUAGE] = "use \"python\", \"bash\" or \"javascript\"",
        [XB_E_NO_INPUT] = "only a running bash command reads input",
        [XB_E_ALREADY_WAITING] = "only one request can wait on a cell",
        [XB_E_VARIABLE_NOT_FOUND] = "define it in a cell first; names are case-sensitive",
        [XB_E_VARIABLES_UNSUPPORTED] = "print the value in a cell instead",
        [XB_E_IMAGE_NOT_FOUND] = "images are kept per sandbox, the newest 64; run the cell again",

        [XB_E_INVALID_PORT] = "pass the port the server listens on, a number from 1 to 65535",
        [XB_E_PORT_CLOSED] = "start the server first with process_start (e.g. python3 -m http.server 8080), then "
                             "see it listening with sandbox_ports",
        [XB_E_SHARE_EXPIRED] = "make a fresh link with sandbox_ports, action share",
        [XB_E_BAD_SHARE] = "make a fresh link with sandbox_ports, action share",

        [XB_E_GUIDE_NOT_FOLLOWED] = "read the guide with get_guide first",
        [XB_E_UNAUTHORIZED] = "send a bearer token",
        /* No entry, on purpose: the engine's hint for the case, or the
         * default. XB_E_INVALID, XB_E_INVALID_TEMPLATE, XB_E_BAD_VARIABLE_NAME. */
};

const char *
xb_tool_hint(const struct xb_err *err)
{
        const char *h = (unsigned)err->ecode < XB_E__COUNT ? hints[err->ecode] : NULL;

        return h ? h : err->hint ? err->hint : DEFAULT_HINT;
}

char *
xb_tool_err_text(const struct xb_err *err)
{
        const char *hint = xb_tool_hint(err);
        char *s = NULL;

        if (asprintf(&s, "Error: %s (%s).%s%s", err->msg[0] ? err->msg : "the operation failed",
                     xb_ecode_name(err->ecode), *hint ? " Hint: " : "", hint) < 0)
                return NULL;
        return s;
}
