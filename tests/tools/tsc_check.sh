#!/usr/bin/env bash
# tests/tools/tsc_check.sh DIR: check the exported tool formats against the
# vendors' own published types. DIR holds openai.json, openai-responses.json
# and anthropic.json (GET /v1/tools?format=...: {"tools": [...]}). Each is
# written into a .ts file as a literal assigned to the SDK's type, and
# `tsc --noEmit --strict` must report nothing.
#
# The npm packages are installed into ${XDG_CACHE_HOME:-$HOME/.cache}/execbox-npm/tools,
# never into the repository, and reused while their versions match (as
# tests/mcp/run.sh does).
set -euo pipefail

DIR=${1:?usage: tsc_check.sh DIR}
CACHE=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/execbox-npm
T=$CACHE/tools
PKGS=(openai@7.59.0 @anthropic-ai/sdk@1.15.0 typescript@5.9.3)

version_of() {   # version_of PACKAGE
        python3 - "$T/node_modules/$1/package.json" <<'PY' 2>/dev/null || true
import json, sys
print(json.load(open(sys.argv[1]))["version"])
PY
}

ok=1
for spec in "${PKGS[@]}"; do
        [ "$(version_of "${spec%@*}")" = "${spec##*@}" ] || ok=0
done
if [ $ok = 0 ]; then
        command -v npm >/dev/null || { echo "tsc_check: npm is needed" >&2; exit 1; }
        mkdir -p "$T"
        npm install --prefix "$T" --no-audit --no-fund --loglevel=error "${PKGS[@]}" >/dev/null
fi

python3 - "$DIR" "$T" <<'PY'
import json, sys
d, t = sys.argv[1], sys.argv[2]
def tools(name):
    return json.dumps(json.load(open(f"{d}/{name}.json"))["tools"], indent=1)
src = f"""import type {{ ChatCompletionTool, ChatCompletionFunctionTool }} from "{t}/node_modules/openai/resources/chat/completions/completions";
import type {{ FunctionTool }} from "{t}/node_modules/openai/resources/responses/responses";
import type {{ Tool }} from "{t}/node_modules/@anthropic-ai/sdk/resources/messages/messages";

export const chat: ChatCompletionFunctionTool[] = {tools("openai")};
export const chatAny: ChatCompletionTool[] = chat;
export const responses: FunctionTool[] = {tools("openai-responses")};
export const anthropic: Tool[] = {tools("anthropic")};
"""
open(f"{d}/check.ts", "w").write(src)
PY
"$T/node_modules/.bin/tsc" --noEmit --strict --target es2022 --module nodenext --moduleResolution nodenext \
        --skipLibCheck false "$DIR/check.ts"
echo "tsc_check: the openai, openai-responses and anthropic formats match the SDKs' types"
