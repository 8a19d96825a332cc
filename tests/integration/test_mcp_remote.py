"""MCP for desktop and remote clients: run_code's progress on long cells,
/mcp behind a reverse proxy (--mcp-allowed-host), the RFC 9728
protected-resource metadata and the 401 that points at it, the stdio bridge
run as a normal user with EXECBOX_URL and EXECBOX_TOKEN (the README's Claude
Desktop config), and an idle session's sandbox paused (cgroup frozen) and
resumed by its next tool call."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid

import pytest
import requests

from server_fixture import expect, sandbox_cgroups, server, server_factory  # noqa: F401
from test_mcp import Mcp, sse_messages, wait_for

TOKEN = "remote-mcp-token-0123456789abcdef"


def test_run_code_sends_progress_before_its_result(server):
    mcp = Mcp(server).initialize()
    try:
        msg = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "run_code", "_meta": {"progressToken": "cell"},
                          "arguments": {"language": "python",
                                        "code": "import time\nprint('start', flush=True)\ntime.sleep(3)\nprint('end')"}}}
        t0 = time.monotonic()
        r = mcp.post(msg, stream=True)
        assert "text/event-stream" in r.headers["Content-Type"], r.headers
        seen = []   # (seconds, message)
        for line in r.iter_lines(decode_unicode=True):
            if line.startswith("data:") and line[5:].strip():
                seen.append((time.monotonic() - t0, json.loads(line[5:])))
        progress = [(t, m) for t, m in seen if m.get("method") == "notifications/progress"]
        final = [(t, m) for t, m in seen if m.get("id") == 7]
        assert progress and final, seen
        assert all(m["params"]["progressToken"] == "cell" for _, m in progress)
        assert progress[0][0] < final[0][0] - 2, (progress, final)   # while the cell sleeps
        res = final[0][1]["result"]
        assert not res.get("isError"), res
        text = "\n".join(c["text"] for c in res["content"] if c["type"] == "text")
        assert "start\nend\n" in text, text
        outs = res["structuredContent"]["outputs"]
        assert [o["text"] for o in outs if o["type"] == "stream"] == ["start\nend\n"], outs
    finally:
        mcp.close()


def _init(srv, headers):
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "Authorization": f"Bearer {TOKEN}", **headers}
    r = requests.post(srv.url + "/mcp", data=json.dumps(body), headers=h, timeout=30)
    if r.status_code == 200:
        requests.delete(srv.url + "/mcp", headers={**h, "Mcp-Session-Id": r.headers["Mcp-Session-Id"]}, timeout=30)
    return r


def test_allowed_host_behind_a_reverse_proxy(server_factory):
    srv = server_factory("--mcp-allowed-host", "mcp.example.test", "--mcp-allowed-host", "proxy.example.test:8443",
                         tokens=[TOKEN])
    ok = [{"Host": "mcp.example.test"}, {"Host": "MCP.example.test:443", "Origin": "https://mcp.example.test"},
          {"Host": "proxy.example.test:8443", "Origin": "https://proxy.example.test:8443"},
          {"Host": "127.0.0.1", "Origin": "http://localhost:3000"}]
    for h in ok:
        r = _init(srv, h)
        assert r.status_code == 200, (h, r.status_code, r.text)
    bad = [{"Host": "evil.example.test"}, {"Host": "mcp.example.test", "Origin": "https://evil.example.test"},
           {"Host": "mcp.example.test.evil"}, {"Host": "proxy.example.test:9999"},
           {"Host": "mcp.example.testx", "Origin": "https://mcp.example.test"}]
    for h in bad:
        r = _init(srv, h)
        assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden_origin", (h, r.status_code, r.text)
    # REST is untouched by the option.
    assert requests.get(srv.url + "/healthz", timeout=10).status_code == 200
    p = subprocess.run([srv.proc.args[0], "serve", "--mcp-allowed-host", "a/b"], capture_output=True, text=True)
    assert p.returncode != 0 and "--mcp-allowed-host" in p.stderr, p.stderr


def test_protected_resource_metadata_and_401(server_factory):
    srv = server_factory("--mcp-allowed-host", "mcp.example.test", tokens=[TOKEN])
    r = requests.post(srv.url + "/mcp", data="{}", headers={"Content-Type": "application/json"}, timeout=10)
    assert r.status_code == 401
    port = srv.url.rsplit(":", 1)[1]
    want = f'Bearer resource_metadata="http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"'
    assert r.headers["WWW-Authenticate"] == want, r.headers
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        m = requests.get(srv.url + path, timeout=10)   # no token needed
        expect(m, 200)
        assert m.json() == {"resource": f"http://127.0.0.1:{port}/mcp", "resource_name": "execbox",
                            "bearer_methods_supported": ["header"]}, m.text
    # Behind a TLS proxy: its name and scheme.
    m = requests.get(srv.url + "/.well-known/oauth-protected-resource/mcp", timeout=10,
                     headers={"Host": "mcp.example.test", "X-Forwarded-Proto": "https"})
    assert m.json()["resource"] == "https://mcp.example.test/mcp", m.text
    r = requests.post(srv.url + "/mcp", data="{}", timeout=10, headers={"Host": "mcp.example.test",
                                                                        "X-Forwarded-Proto": "https"})
    assert r.headers["WWW-Authenticate"] == \
        'Bearer resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp"'
    # A foreign Host gets no metadata naming it; REST keeps its plain challenge.
    assert requests.get(srv.url + "/.well-known/oauth-protected-resource", headers={"Host": "evil.test"},
                        timeout=10).status_code == 403
    assert requests.get(srv.url + "/v1/sandboxes", timeout=10).headers["WWW-Authenticate"] == "Bearer"
    assert "/.well-known/oauth-protected-resource" not in requests.get(srv.url + "/openapi.json", timeout=10).json()["paths"]
    # The bearer token in the header is what it says: a session opens.
    assert _init(srv, {}).status_code == 200


@pytest.fixture
def normal_user():
    """A throwaway system user, removed after the test."""
    if os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("needs root and useradd")
    name = "xbt" + uuid.uuid4().hex[:8]
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], check=False)


def test_desktop_bridge_as_a_normal_user(server_factory, normal_user):
    """The README's Claude Desktop config: `execbox mcp --server URL`, the
    token in env, run by a user who is not root and cannot read the
    server's state."""
    srv = server_factory(tokens=[TOKEN])
    d = tempfile.mkdtemp(prefix="xb-bridge-")
    try:
        os.chmod(d, 0o755)
        exe = os.path.join(d, "execbox")
        shutil.copy(srv.proc.args[0], exe)
        os.chmod(exe, 0o755)
        lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "claude-desktop-ish", "version": "1"}}},
                 {"jsonrpc": "2.0", "method": "notifications/initialized"},
                 {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"name": "run_command", "arguments": {"cmd": "echo hi from $(id -un)"}}}]
        stdin = "".join(json.dumps(m) + "\n" for m in lines)
        for args, env in ((["mcp", "--server", srv.url], {"EXECBOX_TOKEN": TOKEN}),
                          (["mcp"], {"EXECBOX_TOKEN": TOKEN, "EXECBOX_URL": srv.url})):
            env = {"PATH": "/usr/bin:/bin", "HOME": "/", **env}
            p = subprocess.run(["setpriv", f"--reuid={normal_user}", f"--regid={normal_user}", "--init-groups",
                                "--", exe, *args], input=stdin, capture_output=True, text=True, timeout=60,
                               env=env, cwd=d)
            assert p.returncode == 0, p.stderr
            got = {m["id"]: m for m in map(json.loads, p.stdout.splitlines())}
            assert got[1]["result"]["serverInfo"]["name"], got
            res = got[2]["result"]
            assert not res.get("isError") and res["structuredContent"]["stdout"] == "hi from user\n", res
        # Without the token the bridge says so, and stays a normal process.
        p = subprocess.run(["setpriv", f"--reuid={normal_user}", f"--regid={normal_user}", "--init-groups", "--",
                            exe, "mcp", "--server", srv.url], input=stdin, capture_output=True, text=True,
                           timeout=60, env={"PATH": "/usr/bin:/bin"}, cwd=d)
        got = [json.loads(line) for line in p.stdout.splitlines()]
        assert got and all("error" in m for m in got if m.get("id") == 1), p.stdout
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _cpu_ticks(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])   # utime, stime
        except OSError:
            pass
    return total


def _frozen(cgs):
    """Whether the sandbox's cgroup says it is frozen, and the paths read."""
    for path in cgs:
        ev = os.path.join(path, "cgroup.events")
        if os.path.exists(ev):
            with open(ev) as f:
                return "frozen 1" in f.read().split("\n"), ev
        st = os.path.join(path, "freezer.state")
        if os.path.exists(st):
            with open(st) as f:
                return f.read().strip() == "FROZEN", st
    raise AssertionError(f"no freezer in {cgs}")


def _procs(cgs):
    pids = set()
    for path in cgs:
        try:
            with open(os.path.join(path, "cgroup.procs")) as f:
                pids |= {int(x) for x in f.read().split()}
        except OSError:
            pass
    return pids


def test_idle_session_sandbox_is_paused_and_resumed(server_factory):
    srv = server_factory("--mcp-pause-after", "1", tokens=[TOKEN])
    mcp = Mcp(srv).initialize()
    try:
        sb = mcp.call("run_command", {"cmd": "true"})["result"]["structuredContent"]["sandbox_id"]
        cgs = sandbox_cgroups(srv, sb)   # a REST marker process: resumes, and finds the cgroups
        res = mcp.call("process_start", {"cmd": "while :; do :; done"})["result"]
        assert not res.get("isError"), res
        wait_for(lambda: _frozen(cgs)[0], 10, "the idle sandbox to be frozen")
        listed = {s["id"]: s for s in srv.get("/v1/sandboxes").json()["sandboxes"]}
        assert listed[sb]["state"] == "paused", listed[sb]
        pids = _procs(cgs)
        assert pids
        before = _cpu_ticks(pids)
        time.sleep(1.5)
        assert _cpu_ticks(pids) - before <= 1, "a paused sandbox's spinner kept running"
        # The next tool call resumes it and works.
        res = mcp.call("run_command", {"cmd": "echo back"})["result"]
        assert res["structuredContent"]["stdout"] == "back\n", res
        assert not _frozen(cgs)[0]
        t = _cpu_ticks(pids)
        time.sleep(0.5)
        assert _cpu_ticks(pids) - t >= 10, "the spinner did not run again after resume"
        # Paused again when idle, then deleted with the session: no leftovers.
        wait_for(lambda: _frozen(cgs)[0], 10, "the sandbox to be frozen again")
    finally:
        mcp.close()
    wait_for(lambda: sb not in {s["id"] for s in srv.get("/v1/sandboxes").json()["sandboxes"]}, 10,
             "the paused sandbox to be deleted with its session")
