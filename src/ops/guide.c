/* The usage guide served at /v1/guide and by the get_guide tool: markdown
 * written for a language model, in the spirit of Pandora's guide. Static
 * text plus this server's sandbox limits. Keep it under ~200 lines. */
#define _GNU_SOURCE
#include <stdio.h>

#include "base/buf.h"
#include "sandbox/limits.h"
#include "ops/catalog.h"

/* The guide is laid out as it reads. */
/* clang-format off */
static const char guide_head[] =
"# execbox: a guide for language models\n"
"\n"
"Read this once before your first command. It is short, and following it saves you failed calls.\n"
"\n"
"## What you have\n"
"\n"
"- A disposable Linux computer, a **sandbox**, isolated from the host and from everyone else's sandboxes.\n"
"- A Debian userland: bash and the usual command-line tools, Python 3 (`python3`) with numpy, pandas and\n"
"  matplotlib, Node.js (`node`), and whatever else the operator installed (often git, gcc, make, jq,\n"
"  sqlite3). Check with `command -v NAME` before you rely on a tool.\n"
"- **No network** by default: `pip install`, `npm install`, `apt-get` and `curl` to the internet fail. The\n"
"  sandbox's owner may allow some: `sandbox_network` (`GET /v1/sandboxes/{id}/network`) shows its mode,\n"
"  `packages` (package mirrors only), an `allowlist` of domains, or `open` (the public internet; private\n"
"  and metadata addresses never). Programs go through the proxy in `HTTP_PROXY`, `HTTPS_PROXY` and\n"
"  `ALL_PROXY` (curl, wget, git, pip, npm and apt use it); raw sockets, UDP and ping never work. A refusal\n"
"  is HTTP 403 with the reason. If you need more, tell the user what and why and ask them to allow it;\n"
"  change the network yourself only when the user asked. Otherwise work with what is installed. Hosts\n"
"  the policy marks `ask` wait for a human to approve each connection (a 403 says when nobody did).\n"
"  Another sandbox of yours is reachable only if both list each other in `peers`: then\n"
"  `curl http://ID.sandbox.internal:PORT/` (through the proxy) reaches its server, in any mode.\n"
"- **Secrets** are never in the sandbox. An env var such as `$GITHUB_TOKEN` may hold a placeholder\n"
"  (`execbox-secret-...`): use it where the secret goes (a header, a URL) and the proxy puts the real\n"
"  value in, only on the way to that secret's hosts. `list_secrets` shows your secrets' names and hosts\n"
"  (never values) and which the sandbox holds. To get one you lack, first tell the user which secret,\n"
"  for which hosts and why, then call `request_secret` with `name`, `hosts` and `reason` (from inside:\n"
"  `curl \"$EXECBOX_API/secrets/NAME?hosts=api.example.com&reason=why\"`). It waits for the user to\n"
"  approve it (`execbox approvals allow ID`, or `POST /v1/approvals/{id}`): then new processes have\n"
"  `$NAME`. `status: pending` means nobody has answered yet: give the user its `approval_id` and call\n"
"  again later; a refusal is an error. Approvals are for humans: only a human can approve, no tool can,\n"
"  and you never see the value. Never ask the user to paste it into the chat.\n"
"  A sandbox listing `secrets_waiting` (after a server restart) sends those placeholders unswapped until\n"
"  the user posts the secret again: tell them which, rather than retrying.\n"
"- `/home/user` is your workspace and `$HOME`; commands start there. `/tmp` is scratch space in memory.\n"
"  Each holds a limited number of bytes (below).\n"
"- You run as `user` (uid 1000). The whole filesystem is your sandbox's own: as root (`\"user\": \"root\"` on\n"
"  a command, or on `sandbox_create`) you can write `/usr`, `/etc` and `/opt` and install software with\n"
"  `dpkg -i`, `apt-get install` (which needs the `packages` network, or a local repository),\n"
"  `pip install` (add `--break-system-packages`), `npm install -g` or `make install`.\n"
"- To install Debian packages you lack, call `install` with `apt: [names]` first: the server keeps what\n"
"  other sandboxes installed, so a package set installed before arrives in seconds without dpkg running\n"
"  (`cached: true`), and the first time it runs `apt-get install` for you.\n"
"- What you install stays in this sandbox only. To keep it, `sandbox_snapshot` saves the sandbox as a\n"
"  template and `sandbox_create` with `template` starts new sandboxes from it; `sandbox_fork` makes copies\n"
"  of a sandbox at once. Both are instant; running processes are not copied. `template_build` makes a\n"
"  template from steps (apt packages, files, shell steps) when you need the same setup many times.\n"
"- A sandbox is deleted, files and all, after a while without use (15 minutes unless it was created with\n"
"  another `timeout_s`; every command restarts the clock, and a background process or a running cell\n"
"  holds it). A maximum lifetime ends it anyway. Its `expires_in_ms` and `expires_because` say when and\n"
"  why. Keep nothing there you cannot recreate, and put results in your answer.\n"
"- `sandbox_pause` freezes a sandbox (no CPU; memory, processes and variables kept) and\n"
"  `sandbox_resume` continues it; in between other calls on it fail with `paused`.\n"
"- With the tools, `sandbox_id: null` means your default sandbox. Create another with `sandbox_create`\n"
"  only when you need a clean machine or other limits, and delete it when done.\n"
"\n";

static const char guide_body[] =
"## Running commands\n"
"\n"
"- `run_command` (REST: `POST /v1/sandboxes/{id}/exec`) runs `cmd` with `bash -c`: pipes, `&&`,\n"
"  redirections and globs work. Over REST, `argv` runs a program without a shell:\n"
"  `{\"argv\": [\"python3\", \"main.py\", \"--fast\"]}`.\n"
"- **Check `exit_code`**, and `status`, which says why the command ended: `ok`, `exit_nonzero`,\n"
"  `timeout`, `memory_limit`, `cpu_limit`, `output_limit`, `killed`, or `running` (see below).\n"
"- stdout and stderr come back separately; many tools print their errors only on stderr.\n"
"- Every call starts a fresh shell: `cd` and `export` do not carry over. Use the `cwd` and `env` arguments,\n"
"  or chain: `cd /home/user/app && make`.\n"
"- There is no terminal. Nothing can answer a prompt: use `-y`, `--yes`, `--no-pager`, `DEBIAN_FRONTEND`,\n"
"  or pass the answers in `stdin`.\n"
"\n"
"### Long-running commands\n"
"\n"
"- `timeout_s` is a hard limit (default 120 s; 0 means none): the command and its children are killed\n"
"  and you still get everything it printed, with `status: timeout`.\n"
"- `yield_after_s` is a soft limit: once the command has printed nothing for that many seconds, you get\n"
"  `status: running`, the output so far, its `pid`, and `stdout_offset` and `stderr_offset`. It keeps\n"
"  running. Then:\n"
"  - `process_read` (`GET .../processes/{pid}/output?stdout_offset=N&stderr_offset=M&wait_s=S`) returns\n"
"    only what is new and the next offsets. Repeat until `running` is false; then `status` and\n"
"    `exit_code` are set.\n"
"  - `process_kill` (`POST .../processes/{pid}/signal`) stops it; `POST .../processes/{pid}/wait` waits.\n"
"- For servers, watchers and anything that never ends, use `process_start` (`POST .../processes`): it\n"
"  returns a `pid` at once. Check that it came up with `process_read` after a moment, then talk to it from\n"
"  another command, e.g. `curl -s localhost:8000/` (loopback works inside the sandbox).\n"
"- `process_input` writes to a background process's stdin (`\"eof\": true` closes it).\n"
"\n"
"## Showing a server to the user\n"
"\n"
"- A web app, API or notebook you start in the sandbox is reachable from outside through this server:\n"
"  start it with `process_start`, listening on `0.0.0.0` or `127.0.0.1` (e.g.\n"
"  `python3 -m http.server 8080`), then `sandbox_ports` lists what listens, each with its `url`\n"
"  (REST: `GET /v1/sandboxes/{id}/ports`; the server is at `/v1/sandboxes/{id}/ports/{port}/`, with the\n"
"  token). HTTP, streaming and WebSocket pass through.\n"
"- To let the user open it in a browser, `sandbox_ports` with `action: share` and a `port` returns a `url`\n"
"  that works without a token until `ttl_s` passes (REST: `POST .../ports/{port}/share`). Give the user that\n"
"  link, and say when it expires. A 502 `port_closed` means nothing listens on that port yet.\n"
"- Serve pages with relative links (`href=\"style.css\"`), not absolute ones (`/style.css`): the server's\n"
"  pages live under the port's path.\n"
"\n"
"## Code sessions\n"
"\n"
"- `run_code` keeps a Python (IPython), JavaScript (Node.js) or bash interpreter alive: variables, imports\n"
"  and functions persist between calls. Use it for step-by-step data work.\n"
"- The value of the last line comes back as a `result`; matplotlib figures come back as PNG `display`\n"
"  outputs (no `plt.show()` needed). Printed text comes back as `stream` outputs.\n"
"- An exception comes back as an `error` output with its traceback; the session stays usable.\n"
"- REST: `POST /v1/sandboxes/{id}/sessions` `{\"language\": \"python\"}`, then\n"
"  `POST .../sessions/{sid}/run` `{\"code\": \"...\"}`.\n"
"\n"
"## Files\n"
"\n"
"- `write_file` (`PUT /v1/sandboxes/{id}/files?path=...`, the body is the content) writes a whole file\n"
"  from a string: nothing to escape. Prefer it to heredocs and `echo >`.\n"
"- `read_file` (`GET .../files?path=...`) reads a file; give `start_line` and `end_line` for parts of\n"
"  long files.\n"
"- `edit_file` changes files precisely: `view` shows line numbers, `str_replace` swaps text that occurs\n"
"  exactly once (copy it exactly, whitespace included), `insert` adds lines, `undo_edit` reverts.\n"
"- `list_files` (`GET .../files/list?path=...&depth=...`) shows what is there.\n"
"- Paths are absolute paths inside the sandbox; nothing, not even a symlink, leads outside it.\n"
"\n"
"## Output\n"
"\n"
"- Output is UTF-8 text; bytes that are not UTF-8 are replaced.\n"
"- A stream over its limit keeps its **head and tail**, with a marker line between them saying how many\n"
"  bytes were left out, and `stdout_truncated` (or `stderr_truncated`) is true. Ask for less instead:\n"
"  `| tail -n 50`, `| grep -m 20 PATTERN`, `| head -c 4000`, or write to a file and read parts of it.\n"
"- Don't print binary files; use `file`, `xxd | head`, or convert them first.\n"
"\n"
"## Errors\n"
"\n"
"- An API error is `{\"error\": {\"code\", \"message\", \"hint\"}}`. **Read the hint**: it says what to\n"
"  do next.\n"
"- 400: fix the argument the message names. 404: no such sandbox, process, session or file (sandboxes\n"
"  expire: create a new one). 409: wrong state, e.g. the process already finished. 429: too many\n"
"  sandboxes or processes: delete some.\n"
"- A command that fails is not an API error: the call succeeds with a non-zero `exit_code` and the\n"
"  reason on stderr.\n"
"\n"
"## Good habits\n"
"\n"
"1. Look before you act: `list_files`, `ls -la`, `python3 --version`, `head` of a data file.\n"
"2. Take small steps and check each one (the exit code, a quick look at the result) before the next.\n"
"3. Write programs to files with `write_file`, then run them; don't squeeze long code into `python3 -c`.\n"
"4. Change files with `edit_file` `str_replace` instead of rewriting them whole.\n"
"5. Use absolute paths, and quote paths that contain spaces.\n"
"6. Give long commands `yield_after_s` so you can watch them, rather than a huge `timeout_s`.\n"
"7. Kill background processes you no longer need, and delete sandboxes you created.\n"
"8. If something fails twice the same way, stop retrying: read the error and hint again and change\n"
"   your approach.\n"
"\n"
"## REST in brief\n"
"\n"
"- Send `Authorization: Bearer <token>` unless the server runs with `--no-auth`.\n"
"- `POST /v1/sandboxes` creates a sandbox (`{\"id\": ...}`); `DELETE /v1/sandboxes/{id}` deletes it;\n"
"  `POST /v1/sandboxes/{id}/keepalive` restarts its clock; `POST .../pause` and `.../resume`\n"
"  freeze and thaw it (`{\"auto_pause\": true}` on create pauses it at its idle timeout instead of\n"
"  deleting it, and the next request resumes it).\n"
"- `POST /v1/sandboxes/{id}/exec` `{\"cmd\": \"ls -la\", \"timeout_s\": 60, \"yield_after_s\": 10}`.\n"
"- Every operation and schema: `GET /openapi.json`. The same operations as tools for MCP, OpenAI or\n"
"  Anthropic: `GET /v1/tools?format=mcp|openai|anthropic`.\n"
"\n"
"## Legal\n"
"\n"
"execbox is run by the operator of this server, who decides who may use it and for what; their terms\n"
"apply. It comes as is, without warranty. Sandboxes are disposable: nothing in them is backed up. Do\n"
"not use it to attack other systems or to process data you are not allowed to process.\n";

/* clang-format on */

/* 1073741824 -> "1 GiB". */
static void
size_text(char *buf, size_t n, uint64_t bytes)
{
        static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
        unsigned u = 0;
        double v = (double)bytes;

        while (v >= 1024 && u < 4) {
                v /= 1024;
                u++;
        }
        snprintf(buf, n, v == (double)(uint64_t)v ? "%.0f %s" : "%.1f %s", v, units[u]);
}

char *
xb_guide_render(const struct xb_limits *l)
{
        struct xb_buf b = { .max = 1 << 20 };
        char mem[32], disk[32], cpus[32], pids[32];

        size_text(mem, sizeof(mem), l->memory);
        size_text(disk, sizeof(disk), l->disk);
        if (l->cpus_milli)
                snprintf(cpus, sizeof(cpus), "%.2g cores", l->cpus_milli / 1000.0);
        else
                snprintf(cpus, sizeof(cpus), "no cap");
        if (l->pids)
                snprintf(pids, sizeof(pids), "%llu", (unsigned long long)l->pids);
        else
                snprintf(pids, sizeof(pids), "any number of");
        if (xb_buf_puts(&b, guide_head) < 0 ||
            xb_buf_printf(&b,
                          "## Limits on this server\n"
                          "\n"
                          "- Each sandbox: memory %s (no swap; over it, the command is killed with "
                          "`status: memory_limit`), %s processes and threads, CPU %s; its disk (`/home/user`, "
                          "`/usr` and the rest of its own layer) and `/tmp` hold %s each; a full disk gives "
                          "\"Disk quota exceeded\": delete files to go on.\n"
                          "- A command: 120 s unless you set `timeout_s`. A background process: no limit unless "
                          "you set one.\n"
                          "- Output kept per stream: 1 MiB for a command, 4 MiB for a background process.\n"
                          "- At most 256 processes tracked per sandbox; finished background processes count "
                          "until you delete them.\n"
                          "\n",
                          l->memory ? mem : "unlimited", pids, cpus,
                          l->disk ? disk : "an unset amount") < 0 ||
            xb_buf_puts(&b, guide_body) < 0) {
                xb_buf_free(&b);
                return NULL;
        }
        return xb_buf_steal(&b);
}
