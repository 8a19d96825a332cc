"""The self-description endpoints of `execbox serve`, against the real
server: /openapi.json checked by two real OpenAPI validators from npm, the
plugin manifest's fields and limits, the guide, and /v1/tools in the MCP,
OpenAI and Anthropic formats, whose schemas must satisfy OpenAI's strict
mode (the same rules as tests/unit/test_catalog.c).

The validators are installed once into a cache outside the repository,
${XDG_CACHE_HOME:-~/.cache}/execbox-npm, and reused. Servers run with
--pool 0, so no sandbox is created; each is stopped with SIGTERM by pid."""
from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest
import requests

import xbhost

NPM_PACKAGES = {
    "@seriousme/openapi-schema-validator": "2.11.0",
    "@redocly/cli": "2.77.0",
    # What the MCP SDK checks structuredContent against outputSchema with.
    "ajv": "8.20.0",
}

TOOLS = {
    # name: the arguments that may not be null (every other one must be nullable)
    "sandbox_create": set(),
    "sandbox_network": set(),
    "sandbox_list": set(),
    "sandbox_delete": {"sandbox_id"},
    "sandbox_snapshot": {"name"},
    "template_build": {"name"},
    "sandbox_fork": set(),
    "install": {"apt"},
    "sandbox_pause": set(),
    "sandbox_resume": set(),
    "run_command": {"cmd"},
    "run_code": {"language", "code"},
    "read_file": {"path"},
    "write_file": {"path", "content"},
    "edit_file": {"command", "path"},
    "list_files": set(),
    "process_start": {"cmd"},
    "process_read": {"pid"},
    "process_input": {"pid"},
    "process_kill": {"pid"},
    "sandbox_ports": set(),
    "request_secret": {"name"},
    "list_secrets": set(),
    "get_guide": set(),
}

PUBLIC = ["/healthz", "/readyz", "/openapi.json", "/.well-known/ai-plugin.json", "/v1/guide", "/logo.png", "/getGuide"]
TOKEN = "docs-test-token-0123456789abcdef"

# Redocly's strictest built-in ruleset: every rule that warns in
# `recommended` is an error here, except these two, which stay warnings:
REDOCLY_CONFIG = """\
extends:
  - recommended-strict
rules:
  # /healthz, /openapi.json, the guide and the logo have no client error to
  # describe; every other operation lists its 4XX responses.
  operation-4xx-response: warn
  # The project has not chosen a license yet.
  info-license: warn
"""


# ---- the validators ----

def _npm_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or (os.path.join(os.environ["HOME"], ".cache")
                                                if os.environ.get("HOME") else f"/tmp/xb-cache-{os.getuid()}")
    return os.path.join(base, "execbox-npm")


def _installed(d: str) -> bool:
    for name, version in NPM_PACKAGES.items():
        try:
            with open(os.path.join(d, "node_modules", name, "package.json")) as f:
                if json.load(f).get("version") != version:
                    return False
        except (OSError, ValueError):
            return False
    return True


@pytest.fixture(scope="session")
def npm_bin() -> str:
    if not shutil.which("npm") or not shutil.which("node"):
        pytest.skip("node and npm are needed for the OpenAPI validators")
    d = _npm_dir()
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _installed(d):
            pkgs = [f"{n}@{v}" for n, v in NPM_PACKAGES.items()]
            r = subprocess.run(["npm", "install", "--prefix", d, "--no-audit", "--no-fund", "--loglevel=error",
                                *pkgs], capture_output=True, text=True, timeout=600)
            assert r.returncode == 0 and _installed(d), f"npm install failed: {r.stdout[-2000:]} {r.stderr[-2000:]}"
    return os.path.join(d, "node_modules", ".bin")


def _node_env() -> dict:
    env = os.environ.copy()
    env.update(NO_COLOR="1", REDOCLY_TELEMETRY="off", REDOCLY_SUPPRESS_UPDATE_NOTICE="true")
    return env


# ---- the servers ----

class Server:
    def __init__(self, execbox: str, state_dir: str, token: str | None):
        self.token = token
        argv = [execbox, "serve", "--listen", "127.0.0.1:0", "--state-dir", state_dir, "--pool", "0", "--stop-sandboxes"]
        env = os.environ.copy()
        env.pop("EXECBOX_TOKEN", None)
        if token:
            env["EXECBOX_TOKEN"] = token
        else:
            argv.append("--no-auth")
        self.log = open(os.path.join(state_dir, "server.log"), "w+")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.log,
                                     env=env, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
        if not m:
            self.stop()
            raise AssertionError(f"execbox serve did not start: {line!r} {self.stderr()}")
        self.url = m.group(1)
        deadline = time.monotonic() + 10
        while True:
            try:
                if requests.get(self.url + "/healthz", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline, f"/healthz never answered; {self.stderr()}"
            time.sleep(0.05)

    def stderr(self) -> str:
        self.log.seek(0)
        return self.log.read()[-3000:]

    def get(self, path: str, auth: bool = True, **kw) -> requests.Response:
        headers = dict(kw.pop("headers", {}))
        if auth and self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return requests.get(self.url + path, headers=headers, timeout=30, **kw)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)     # our own child, by pid
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.log.close()


@pytest.fixture(autouse=True)
def no_leaks():
    """The servers live for the whole module, so the per-test check of
    conftest.py would count them; `servers` checks the module instead."""
    yield


@pytest.fixture(scope="module")
def servers(execbox, tmp_path_factory):
    before = xbhost.HostState.capture()
    started = []
    try:
        started.append(Server(execbox, str(tmp_path_factory.mktemp("docs-noauth")), None))
        started.append(Server(execbox, str(tmp_path_factory.mktemp("docs-auth")), TOKEN))
        yield started
    finally:
        for s in started:
            s.stop()
    leaks = xbhost.wait_for_no_leaks(before)
    assert not leaks, "the servers left these behind:\n  " + "\n  ".join(leaks)


@pytest.fixture(scope="module")
def srv(servers) -> Server:
    return servers[0]


@pytest.fixture(scope="module")
def auth_srv(servers) -> Server:
    return servers[1]


@pytest.fixture(scope="module")
def openapi_file(srv, tmp_path_factory) -> str:
    r = srv.get("/openapi.json")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("application/json")
    path = tmp_path_factory.mktemp("openapi") / "openapi.json"
    path.write_text(r.text)
    return str(path)


# ---- OpenAI strict mode, independently of the C checker ----

STRICT_KEYWORDS = {"type", "description", "properties", "required", "additionalProperties", "items", "enum", "anyOf",
                   "minimum", "maximum", "minItems", "maxItems"}


def _types(s: dict) -> list:
    t = s.get("type")
    return t if isinstance(t, list) else [t]


def nullable(s: dict) -> bool:
    if "anyOf" in s:
        return any(b.get("type") == "null" for b in s["anyOf"])
    return "null" in _types(s)


def strict_problems(s, where: str = "", depth: int = 0) -> list[str]:
    if not isinstance(s, dict):
        return [f"{where}: not a schema"]
    out = [f"{where}: keyword {k!r} is outside the strict subset" for k in s if k not in STRICT_KEYWORDS]
    if "anyOf" in s:
        if "type" in s or len(s["anyOf"]) < 2:
            out.append(f"{where}: anyOf must stand alone, with two or more branches")
        for i, b in enumerate(s["anyOf"]):
            out += strict_problems(b, f"{where}/anyOf/{i}", depth)
        return out
    types = _types(s)
    if not types or types == [None]:
        return out + [f"{where}: no type"]
    if len([t for t in types if t != "null"]) > 1:
        out.append(f"{where}: at most one type besides null; use anyOf")
    if "enum" in s and "null" in types and None not in s["enum"]:
        out.append(f"{where}: a nullable enum must list null")
    if "object" in types:
        if depth >= 5:
            out.append(f"{where}: nested too deep")
        if s.get("additionalProperties") is not False:
            out.append(f"{where}: additionalProperties must be false")
        props = s.get("properties")
        if not isinstance(props, dict):
            return out + [f"{where}: an object needs properties"]
        if sorted(s.get("required", [])) != sorted(props):
            out.append(f"{where}: required must list every property")
        for k, v in props.items():
            out += strict_problems(v, f"{where}/properties/{k}", depth + 1)
    if "array" in types:
        out += strict_problems(s.get("items"), f"{where}/items", depth)
    return out


# ---- tests: /openapi.json ----

def test_openapi_passes_seriousme_validator(npm_bin, openapi_file):
    r = subprocess.run([os.path.join(npm_bin, "validate-api"), openapi_file], capture_output=True, text=True,
                       timeout=120, env=_node_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["valid"] is True, r.stdout


def test_openapi_passes_redocly_lint(npm_bin, openapi_file, tmp_path):
    cfg = tmp_path / "redocly.yaml"
    cfg.write_text(REDOCLY_CONFIG)
    r = subprocess.run([os.path.join(npm_bin, "redocly"), "lint", openapi_file, "--config", str(cfg),
                        "--format", "stylish"], capture_output=True, text=True, timeout=300, env=_node_env(),
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]


def test_openapi_describes_every_route_once(srv):
    doc = srv.get("/openapi.json").json()
    assert doc["openapi"] == "3.1.0"
    assert doc["servers"][0]["url"] == srv.url
    assert doc["components"]["securitySchemes"]["bearerAuth"] == {
        **doc["components"]["securitySchemes"]["bearerAuth"], "type": "http", "scheme": "bearer"}
    err = doc["components"]["schemas"]["Error"]
    assert set(err["properties"]["error"]["required"]) == {"code", "message", "hint"}
    ids = set()
    for path, item in doc["paths"].items():
        for method, op in item.items():
            assert op["operationId"] not in ids, op["operationId"]
            ids.add(op["operationId"])
            assert op["summary"] and "\n" not in op["summary"], op["operationId"]
            assert not op["operationId"].startswith("undocumented"), f"{method} {path} has no definition"
            public = path in PUBLIC
            assert (op.get("security") == []) == public, f"{method} {path}: public is {public}"
            if not public:
                assert "401" in op["responses"], op["operationId"]
            for name in re.findall(r"{(\w+)}", path):
                assert any(p["name"] == name and p["in"] == "path" for p in op.get("parameters", [])), (path, name)
    assert {"run_command", "sandbox_create", "healthz", "get_openapi", "get_plugin_manifest", "list_tools"} <= ids


def test_openapi_tool_operations_match_the_catalog(srv):
    """The same schemas reach /openapi.json and /v1/tools: no drift."""
    doc = srv.get("/openapi.json").json()
    tools = {t["name"]: t for t in srv.get("/v1/tools").json()["tools"]}
    seen = set()
    for path, item in doc["paths"].items():
        for method, op in item.items():
            name = op.get("x-execbox-tool")
            if not name:
                continue
            seen.add(name)
            tool = tools[name]
            for status, resp in op["responses"].items():
                js = resp.get("content", {}).get("application/json")
                if status.startswith("2") and js:
                    assert js["schema"] == tool["outputSchema"], f"{name}: reply {status}"
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
            for k, v in body.get("properties", {}).items():
                if k in tool["inputSchema"]["properties"] and k not in ("env", "files"):   # pair lists are objects in REST
                    assert v == tool["inputSchema"]["properties"][k], f"{name}.{k}"
    # edit_file is built by the tool layer from the file operations.
    assert seen == set(TOOLS) - {"edit_file"}, seen


def test_openapi_urls_follow_the_host_header(srv):
    doc = srv.get("/openapi.json", headers={"Host": "sandbox.example.test:8443", "X-Forwarded-Proto": "https"}).json()
    assert doc["servers"][0]["url"] == "https://sandbox.example.test:8443"
    doc = srv.get("/openapi.json", headers={"Host": "evil\"host/x"}).json()
    assert doc["servers"][0]["url"] == srv.url


# ---- tests: the plugin manifest ----

def test_plugin_manifest(srv):
    r = srv.get("/.well-known/ai-plugin.json")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("application/json")
    m = r.json()
    assert m["schema_version"] == "v1"
    assert re.fullmatch(r"[a-z][a-z0-9_]*", m["name_for_model"]) and len(m["name_for_model"]) <= 50
    assert 0 < len(m["name_for_human"]) <= 20
    assert 0 < len(m["description_for_human"]) <= 100
    assert 0 < len(m["description_for_model"]) <= 8000
    assert "guide" in m["description_for_model"].lower() and "/v1/guide" in m["description_for_model"]
    assert m["auth"] == {"type": "none"}
    assert m["api"] == {"type": "openapi", "url": srv.url + "/openapi.json"}
    assert re.fullmatch(r"[^@\s]+@[^@\s]+", m["contact_email"])
    assert requests.get(m["api"]["url"], timeout=30).json()["openapi"] == "3.1.0"
    logo = requests.get(m["logo_url"], timeout=30)
    assert logo.status_code == 200 and logo.headers["Content-Type"] == "image/png"
    assert logo.content.startswith(b"\x89PNG\r\n\x1a\n") and logo.content[12:16] == b"IHDR"
    assert m["legal_info_url"] == srv.url + "/v1/guide#legal"
    legal = requests.get(m["legal_info_url"].split("#")[0], timeout=30)
    assert "## Legal" in legal.text


def test_plugin_manifest_with_tokens(auth_srv):
    m = auth_srv.get("/.well-known/ai-plugin.json", auth=False).json()
    assert m["auth"]["type"] == "service_http" and m["auth"]["authorization_type"] == "bearer"
    doc = auth_srv.get("/openapi.json", auth=False).json()
    assert doc["security"] == [{"bearerAuth": []}]
    for path in PUBLIC:
        assert auth_srv.get(path, auth=False).status_code == 200, path
    r = auth_srv.get("/v1/tools", auth=False)
    assert r.status_code == 401 and r.json()["error"]["hint"]
    assert auth_srv.get("/v1/tools").status_code == 200


# ---- tests: the guide ----

def test_guide(srv):
    r = srv.get("/v1/guide")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/markdown")
    text = r.text
    assert text.startswith("# ") and len(text.splitlines()) <= 200 and len(text) < 16000
    for phrase in ("/home/user", "/tmp", "No network", "numpy", "exit_code", "yield_after_s", "process_read",
                   "stdout_offset", "write_file", "hint", "head and tail", "timeout_s", "## Legal",
                   "Limits on this server"):
        assert phrase in text, phrase
    j = srv.get("/v1/guide", headers={"Accept": "application/json"})
    assert j.headers["Content-Type"].startswith("application/json") and j.json() == {"guide": text}


# ---- tests: /v1/tools ----

def test_tools_in_every_format(srv):
    mcp = srv.get("/v1/tools").json()["tools"]
    assert srv.get("/v1/tools?format=mcp").json()["tools"] == mcp
    openai = srv.get("/v1/tools?format=openai").json()["tools"]
    anthropic = srv.get("/v1/tools?format=anthropic").json()["tools"]
    assert [t["name"] for t in mcp] == [t["function"]["name"] for t in openai] == [t["name"] for t in anthropic]
    assert set(t["name"] for t in mcp) == set(TOOLS)
    for m, o, a in zip(mcp, openai, anthropic):
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", m["name"])
        assert set(m) == {"name", "title", "description", "inputSchema", "outputSchema", "annotations"}
        assert set(m["annotations"]) == {"title", "readOnlyHint", "destructiveHint", "idempotentHint",
                                         "openWorldHint"}
        assert all(isinstance(m["annotations"][k], bool) for k in m["annotations"] if k != "title")
        assert m["inputSchema"]["type"] == "object" and m["outputSchema"]["type"] == "object"
        assert o == {"type": "function", "function": {"name": m["name"], "description": m["description"],
                                                      "parameters": m["inputSchema"], "strict": True}}
        assert a == {"name": m["name"], "description": m["description"], "input_schema": m["inputSchema"]}


def test_tools_bad_format(srv):
    r = srv.get("/v1/tools?format=gemini")
    assert r.status_code == 400
    e = r.json()["error"]
    assert e["code"] == "invalid_request" and "openai" in e["hint"] and "gemini" in e["message"]


def test_openai_schemas_are_strict(srv):
    for t in srv.get("/v1/tools?format=openai").json()["tools"]:
        f = t["function"]
        params = f["parameters"]
        assert params["type"] == "object" and "anyOf" not in params
        problems = strict_problems(params, f["name"])
        assert not problems, "\n".join(problems)
        for k, v in params["properties"].items():
            assert nullable(v) == (k not in TOOLS[f["name"]]), f"{f['name']}.{k}: nullable is {nullable(v)}"


def test_tool_schemas_compile_with_ajv(srv, npm_bin, tmp_path):
    """The MCP SDK compiles outputSchema with ajv; so do we, both dialects."""
    tools = srv.get("/v1/tools").json()["tools"]
    (tmp_path / "tools.json").write_text(json.dumps(tools))
    script = """
const Ajv = require("ajv"), Ajv2020 = require("ajv/dist/2020");
const tools = require(process.argv[2]);
for (const A of [Ajv, Ajv2020])
  for (const t of tools)
    for (const k of ["inputSchema", "outputSchema"])
      new A({strict: true, allowUnionTypes: true}).compile(t[k]);
console.log("ok", tools.length);
"""
    (tmp_path / "check.js").write_text(script)
    env = _node_env()
    env["NODE_PATH"] = os.path.dirname(npm_bin)
    r = subprocess.run(["node", str(tmp_path / "check.js"), str(tmp_path / "tools.json")], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stdout + r.stderr
