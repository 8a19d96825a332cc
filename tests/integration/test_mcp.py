"""MCP at /mcp and over stdio, with bad input and clients that misbehave:
malformed JSON-RPC, batches, unknown methods and tools, wrong argument types,
sessions that do not exist, foreign Origin and Host, missing tokens, a client
that disconnects or cancels mid-call (its command must die), the stateless
2026-07-28 revision with its header checks, and `execbox mcp` on stdin.
Every server is checked at teardown for leftovers (server_fixture)."""
from __future__ import annotations

import base64
import json
import re
import socket
import subprocess
import threading
import time

import pytest
import requests

from server_fixture import expect, expect_error, server, server_factory  # noqa: F401

ACCEPT = "application/json, text/event-stream"
TOKEN_A = "tenant-a-token-0123456789abcdef"
TOKEN_B = "tenant-b-token-fedcba9876543210"
MODERN = "2026-07-28"


class Mcp:
    """A small MCP client over Streamable HTTP for one session."""

    def __init__(self, srv, token="default", version="2025-11-25"):
        self.srv = srv
        self.token = token
        self.version = version
        self.sid = None
        self.next_id = 1

    def headers(self, extra=None, session=True):
        h = {"Content-Type": "application/json", "Accept": ACCEPT}
        tok = self.srv.token if self.token == "default" else self.token
        if tok:
            h["Authorization"] = f"Bearer {tok}"
        if session and self.sid:
            h["Mcp-Session-Id"] = self.sid
        if extra:
            h.update(extra)
        return h

    def post(self, body, extra=None, session=True, stream=False, timeout=60):
        data = body if isinstance(body, (bytes, str)) else json.dumps(body)
        return requests.post(self.srv.url + "/mcp", data=data, headers=self.headers(extra, session), stream=stream,
                             timeout=timeout)

    def request(self, method, params=None, **kw):
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        self.next_id += 1
        if params is not None:
            msg["params"] = params
        r = self.post(msg, **kw)
        assert r.status_code == 200, f"{method}: {r.status_code} {r.text[:500]}"
        return body_of(r)

    def initialize(self):
        r = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                       "params": {"protocolVersion": self.version, "capabilities": {},
                                  "clientInfo": {"name": "pytest", "version": "1"}}}, session=False)
        expect(r, 200)
        self.sid = r.headers["Mcp-Session-Id"]
        assert r.json()["result"]["protocolVersion"] == self.version
        expect(self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}), 202)
        return self

    def call(self, name, args, **kw):
        return self.request("tools/call", {"name": name, "arguments": args}, **kw)

    def close(self):
        if self.sid:
            requests.delete(self.srv.url + "/mcp", headers=self.headers(), timeout=30)
            self.sid = None


def body_of(r):
    """The JSON-RPC response of a reply, JSON or SSE."""
    if "text/event-stream" in r.headers.get("Content-Type", ""):
        msgs = sse_messages(r.text)
        return [m for m in msgs if "id" in m and ("result" in m or "error" in m)][-1]
    return r.json()


def sse_messages(text):
    out = []
    for event in text.replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].lstrip() for line in event.split("\n") if line.startswith("data:")]
        if data and "".join(data).strip():
            out.append(json.loads("\n".join(data)))
    return out


def rpc_error(r, status, code):
    assert r.status_code == status, f"expected {status}, got {r.status_code}: {r.text[:500]}"
    body = r.json()
    assert body["jsonrpc"] == "2.0" and body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"], body
    return body


def text_of(result):
    return "\n".join(c["text"] for c in result["content"] if c["type"] == "text")


def sleepers(mcp, sandbox):
    """How many `sleep 4242` run in the sandbox."""
    r = mcp.call("run_command", {"cmd": "pgrep -fc 'slee[p] 4242' || true", "sandbox_id": sandbox})
    return int(r["result"]["structuredContent"]["stdout"].strip() or 0)


def wait_for(fn, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fn():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def mcp(server):
    c = Mcp(server).initialize()
    yield c
    c.close()


# ---- JSON-RPC and the lifecycle ----

def test_initialize_lists_the_tools(mcp):
    tools = mcp.request("tools/list")["result"]["tools"]
    names = [t["name"] for t in tools]
    assert len(names) == 24 and "request_secret" in names and "list_secrets" in names and "template_build" in names and "sandbox_network" in names and "sandbox_fork" in names and "sandbox_pause" in names, names
    assert all(re.fullmatch(r"[A-Za-z0-9_./-]{1,64}", n) for n in names)
    assert mcp.request("ping")["result"] == {}
    assert mcp.request("logging/setLevel", {"level": "debug"})["result"] == {}
    prompts = mcp.request("prompts/list")["result"]["prompts"]
    assert [p["name"] for p in prompts] == ["execbox_guide"]
    guide = mcp.request("prompts/get", {"name": "execbox_guide"})["result"]["messages"][0]["content"]["text"]
    assert "execbox" in guide and "run_command" in guide, guide[:300]


def test_malformed_json_rpc(mcp):
    r = mcp.post(b"{not json")
    body = rpc_error(r, 400, -32700)
    assert body["id"] is None
    rpc_error(mcp.post(b"42"), 400, -32600)
    rpc_error(mcp.post({"id": 1, "method": "ping"}), 400, -32600)                       # no jsonrpc
    rpc_error(mcp.post({"jsonrpc": "1.0", "id": 1, "method": "ping"}), 400, -32600)
    rpc_error(mcp.post({"jsonrpc": "2.0", "id": None, "method": "ping"}), 400, -32600)  # null id
    rpc_error(mcp.post({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}), 400, -32600)
    rpc_error(mcp.post({"jsonrpc": "2.0", "id": 1, "method": 7}), 400, -32600)
    rpc_error(mcp.post({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}), 400, -32602)
    # A malformed notification gets no answer; a response from the client is accepted.
    expect(mcp.post({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {}}), 202)
    expect(mcp.post({"jsonrpc": "2.0", "id": 99, "result": {}}), 202)
    # Not JSON at all, by content type.
    r = mcp.post("x", extra={"Content-Type": "text/plain"})
    rpc_error(r, 415, -32700)
    # The server is still fine.
    assert mcp.request("ping")["result"] == {}


def test_batches_only_where_the_revision_has_them(server):
    c = Mcp(server).initialize()
    rpc_error(c.post([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]), 400, -32600)
    c.close()
    old = Mcp(server, version="2025-03-26").initialize()
    r = old.post([{"jsonrpc": "2.0", "id": 1, "method": "ping"},
                  {"jsonrpc": "2.0", "method": "notifications/initialized"},
                  {"jsonrpc": "2.0", "id": "two", "method": "nope"}])
    expect(r, 200)
    answers = {a["id"]: a for a in r.json()}
    assert answers[1]["result"] == {} and answers["two"]["error"]["code"] == -32601, answers
    rpc_error(old.post([]), 400, -32600)
    old.close()


def test_unknown_methods_tools_and_bad_arguments(mcp):
    assert mcp.request("tools/nope")["error"]["code"] == -32601
    assert mcp.request("server/discover")["error"]["code"] == -32601   # a 2026-07-28 method, in a 2025 session
    err = mcp.call("no_such_tool", {})["error"]
    assert err["code"] == -32602 and "no_such_tool" in err["message"]
    assert mcp.request("tools/call", {"arguments": {}})["error"]["code"] == -32602
    assert mcp.request("tools/call", {"name": "run_command", "arguments": "ls"})["error"]["code"] == -32602
    # Wrong argument types are tool errors the model can fix, with a hint.
    for args, field in [({"cmd": 5}, "cmd"), ({"cmd": "ls", "timeout_s": "soon"}, "timeout_s"),
                        ({"cmd": "ls", "bogus": 1}, "bogus"), ({}, "cmd"),
                        ({"cmd": "ls", "env": [{"name": "A"}]}, "env")]:
        res = mcp.call("run_command", args)["result"]
        assert res["isError"] is True and field in text_of(res), (args, res)
        assert "structuredContent" not in res
    res = mcp.call("run_code", {"language": "cobol", "code": "x"})["result"]
    assert res["isError"] and "language" in text_of(res)
    res = mcp.call("edit_file", {"command": "explode", "path": "/home/user/x"})["result"]
    assert res["isError"] and "command" in text_of(res)
    assert mcp.request("prompts/get", {"name": "nope"})["error"]["code"] == -32602
    assert mcp.request("resources/read", {"uri": "file:///home/user/none"})["error"]["code"] == -32002
    assert mcp.request("logging/setLevel", {"level": "loud"})["error"]["code"] == -32602


def test_tool_failures_carry_hints(mcp):
    res = mcp.call("read_file", {"path": "/home/user/missing.txt"})["result"]
    assert res["isError"] and "Hint:" in text_of(res) and "file_not_found" in text_of(res), res
    res = mcp.call("process_read", {"pid": 4242})["result"]
    assert res["isError"] and "Hint:" in text_of(res), res
    res = mcp.call("run_command", {"cmd": "true", "sandbox_id": "doesnotexist0000000000000"})["result"]
    assert res["isError"] and "sandbox_not_found" in text_of(res), res


def test_sessions(server):
    c = Mcp(server)
    r = c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    rpc_error(r, 400, -32000)
    c.sid = "nosuchsession0000000000000000000"
    rpc_error(c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}), 404, -32001)
    c.sid = None
    c.initialize()
    res = c.call("run_command", {"cmd": "echo hi"})["result"]
    sandbox = res["structuredContent"]["sandbox_id"]
    expect(server.get(f"/v1/sandboxes/{sandbox}"), 200)
    # A second initialize on a session is refused.
    r = c.post({"jsonrpc": "2.0", "id": 5, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}})
    assert r.json()["error"]["code"] == -32600
    # A header for a version nobody speaks.
    rpc_error(c.post({"jsonrpc": "2.0", "id": 6, "method": "ping"}, extra={"MCP-Protocol-Version": "1999-01-01"}),
              400, -32600)
    expect(requests.get(server.url + "/mcp", headers=c.headers({"Accept": "application/json"}), timeout=10), 406)
    r = requests.delete(server.url + "/mcp", headers=c.headers(), timeout=10)
    expect(r, 204)
    expect_error(server.get(f"/v1/sandboxes/{sandbox}"), 410, "sandbox_gone")     # its tombstone (issue 12)
    rpc_error(c.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}), 404, -32001)
    assert requests.delete(server.url + "/mcp", headers=c.headers(), timeout=10).status_code == 404
    assert requests.get(server.url + "/mcp", headers={"Accept": ACCEPT}, timeout=10).status_code == 405


def test_a_picked_sandbox_outlives_the_session(server):
    sb = server.create()["id"]
    c = Mcp(server).initialize()
    res = c.call("run_command", {"cmd": "echo mine > /home/user/f", "sandbox_id": sb})["result"]
    assert res["structuredContent"]["exit_code"] == 0
    c.close()
    expect(server.get(f"/v1/sandboxes/{sb}"), 200)
    server.remove(sb)


# ---- the transport's guards ----

def test_foreign_origin_or_host_is_403(server):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                  "clientInfo": {"name": "evil", "version": "1"}}})
    for extra in [{"Origin": "http://evil.example.com"}, {"Host": "evil.example.com"},
                  {"Host": f"evil.example.com:{server.port}", "Origin": f"http://evil.example.com:{server.port}"}]:
        h = {"Content-Type": "application/json", "Accept": ACCEPT, **extra}
        r = requests.post(server.url + "/mcp", data=body, headers=h, timeout=10)
        assert r.status_code == 403, (extra, r.status_code, r.text)
    h = {"Content-Type": "application/json", "Accept": ACCEPT, "Origin": f"http://localhost:{server.port}"}
    r = requests.post(server.url + "/mcp", data=body, headers=h, timeout=10)
    expect(r, 200)
    requests.delete(server.url + "/mcp", headers={"Mcp-Session-Id": r.headers["Mcp-Session-Id"]}, timeout=10)


def test_bearer_token_and_tenants(server_factory):
    srv = server_factory(tokens=[TOKEN_A, TOKEN_B])
    for token in [None, "not-the-token-0000000000000000"]:
        c = Mcp(srv, token=token)
        r = c.post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                               "clientInfo": {"name": "x", "version": "1"}}}, session=False)
        assert r.status_code == 401 and "Bearer" in r.headers.get("WWW-Authenticate", ""), r.text
    a = Mcp(srv, token=TOKEN_A).initialize()
    b = Mcp(srv, token=TOKEN_B)
    b.sid = a.sid    # B cannot ride A's session: it does not exist for B
    rpc_error(b.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}), 404, -32001)
    sb = a.call("run_command", {"cmd": "true"})["result"]["structuredContent"]["sandbox_id"]
    res = Mcp(srv, token=TOKEN_B).initialize().call("run_command", {"cmd": "true", "sandbox_id": sb})["result"]
    assert res["isError"] and "sandbox_not_found" in text_of(res)
    a.close()


# ---- clients that leave or cancel ----

def raw_post(port, headers, body):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    s.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {len(body)}\r\n{head}\r\n").encode()
              + body)
    return s


def test_a_client_that_disconnects_has_its_command_killed(mcp):
    sb = mcp.call("run_command", {"cmd": "true"})["result"]["structuredContent"]["sandbox_id"]
    body = json.dumps({"jsonrpc": "2.0", "id": 77, "method": "tools/call",
                       "params": {"name": "run_command", "arguments": {"cmd": "sleep 4242; touch /home/user/late"}}})
    s = raw_post(mcp.srv.port, {"Content-Type": "application/json", "Accept": "application/json",
                                "Mcp-Session-Id": mcp.sid}, body.encode())
    wait_for(lambda: sleepers(mcp, sb) >= 1, 10, "the command to start")
    s.close()
    wait_for(lambda: sleepers(mcp, sb) == 0, 10, "the command to be killed")
    res = mcp.call("run_command", {"cmd": "test -e /home/user/late && echo yes || echo no"})["result"]
    assert res["structuredContent"]["stdout"] == "no\n"


def test_a_dropped_stream_resumes_or_is_cancelled(mcp):
    sb = mcp.call("run_command", {"cmd": "true"})["result"]["structuredContent"]["sandbox_id"]
    msg = {"jsonrpc": "2.0", "id": 88, "method": "tools/call",
           "params": {"name": "run_command", "_meta": {"progressToken": "t88"},
                      "arguments": {"cmd": "echo one; sleep 1.5; echo two; sleep 1.5; echo three"}}}
    r = mcp.post(msg, stream=True)
    assert "text/event-stream" in r.headers["Content-Type"]
    last = None
    for line in r.iter_lines(decode_unicode=True):
        if line.startswith("id: "):
            last = line[4:]
        if line.startswith("data: {") and "notifications/progress" in line:
            break
    r.close()   # the client drops the stream mid-call
    assert last
    g = requests.get(mcp.srv.url + "/mcp", headers=mcp.headers({"Last-Event-ID": last, "Accept": "text/event-stream"}),
                     timeout=30)
    final = [m for m in sse_messages(g.text) if m.get("id") == 88]
    assert final and final[0]["result"]["structuredContent"]["stdout"] == "one\ntwo\nthree\n", g.text[:2000]
    # Dropped and not resumed: after the grace period the command dies.
    msg["id"] = 89
    msg["params"]["arguments"]["cmd"] = "echo x; sleep 4242"
    r = mcp.post(msg, stream=True)
    for line in r.iter_lines(decode_unicode=True):
        if "notifications/progress" in line:
            break
    r.close()
    wait_for(lambda: sleepers(mcp, sb) == 0, 20, "the unresumed command to be killed")


def test_notifications_cancelled_kills_the_command(mcp):
    sb = mcp.call("run_command", {"cmd": "true"})["result"]["structuredContent"]["sandbox_id"]
    out = {}

    def long_call():
        out["r"] = mcp.post({"jsonrpc": "2.0", "id": "long", "method": "tools/call",
                             "params": {"name": "run_command", "arguments": {"cmd": "sleep 4242"}}}, timeout=60)

    t = threading.Thread(target=long_call)
    t.start()
    wait_for(lambda: sleepers(mcp, sb) >= 1, 10, "the command to start")
    expect(mcp.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": "long", "reason": "changed my mind"}}), 202)
    t.join(15)
    assert not t.is_alive() and out["r"].status_code in (200, 202)
    assert "result" not in out["r"].text
    wait_for(lambda: sleepers(mcp, sb) == 0, 10, "the command to be killed")


def test_progress_and_logs_stream_over_sse(mcp):
    mcp.request("logging/setLevel", {"level": "info"})
    r = mcp.post({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                  "params": {"name": "run_command", "_meta": {"progressToken": 5},
                             "arguments": {"cmd": "for i in 1 2 3; do echo $i; sleep 0.3; done"}}})
    assert "text/event-stream" in r.headers["Content-Type"]
    msgs = sse_messages(r.text)
    progress = [m["params"]["progress"] for m in msgs if m.get("method") == "notifications/progress"]
    assert len(progress) >= 2 and progress == sorted(progress), msgs
    assert msgs[-1]["id"] == 5 and msgs[-1]["result"]["structuredContent"]["stdout"] == "1\n2\n3\n"
    # Without SSE in Accept, notifications are dropped and the answer is JSON.
    r = mcp.post({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                  "params": {"name": "run_command", "_meta": {"progressToken": 6}, "arguments": {"cmd": "echo a"}}},
                 extra={"Accept": "application/json"})
    assert r.headers["Content-Type"].startswith("application/json") and r.json()["id"] == 6


# ---- tools over the REST API ----

def test_edit_file_and_read_file(mcp):
    mcp.call("write_file", {"path": "/home/user/e.txt", "content": "alpha\nbeta\nalpha\ngamma\n"})
    res = mcp.call("edit_file", {"command": "str_replace", "path": "/home/user/e.txt", "old_str": "alpha",
                                 "new_str": "x"})["result"]
    assert res["isError"] and "2 times" in text_of(res) and "lines 1, 3" in text_of(res), res
    res = mcp.call("edit_file", {"command": "str_replace", "path": "/home/user/e.txt", "old_str": "delta",
                                 "new_str": "x"})["result"]
    assert res["isError"] and "did not appear" in text_of(res)
    res = mcp.call("edit_file", {"command": "str_replace", "path": "/home/user/e.txt", "old_str": "beta\n",
                                 "new_str": "BETA\n"})["result"]
    assert not res.get("isError") and "-beta" in text_of(res) and "+BETA" in text_of(res), res
    res = mcp.call("edit_file", {"command": "insert", "path": "e.txt", "insert_line": 0, "new_str": "top"})["result"]
    assert not res.get("isError"), res
    res = mcp.call("edit_file", {"command": "view", "path": "/home/user/e.txt", "view_range": [1, 2]})["result"]
    assert "     1\ttop\n     2\talpha\n" in text_of(res), res
    mcp.call("edit_file", {"command": "undo_edit", "path": "/home/user/e.txt"})
    mcp.call("edit_file", {"command": "undo_edit", "path": "/home/user/e.txt"})
    res = mcp.call("read_file", {"path": "/home/user/e.txt", "start_line": 2, "end_line": 3})["result"]
    assert res["structuredContent"]["content"] == "beta\nalpha\n" and res["structuredContent"]["total_lines"] == 4
    res = mcp.call("edit_file", {"command": "undo_edit", "path": "/home/user/e.txt"})["result"]
    assert res["isError"] and "no_history" in text_of(res)
    res = mcp.call("read_file", {"path": "/home/user/e.txt", "start_line": 9})["result"]
    assert res["isError"] and "past the end" in text_of(res)
    res = mcp.call("edit_file", {"command": "view", "path": "/home/user"})["result"]
    assert "/home/user/e.txt" in text_of(res)


def test_images_and_resources(mcp):
    code = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
            "plt.plot([1, 2]); plt.savefig('/home/user/p.png')\nprint('saved')")
    res = mcp.call("run_code", {"language": "python", "code": code})["result"]
    assert "saved" in text_of(res), res
    res = mcp.call("read_file", {"path": "/home/user/p.png"})["result"]
    img = [c for c in res["content"] if c["type"] == "image"]
    assert img and img[0]["mimeType"] == "image/png"
    assert base64.b64decode(img[0]["data"])[:8] == b"\x89PNG\r\n\x1a\n"
    listed = mcp.request("resources/list")["result"]["resources"]
    uris = [x["uri"] for x in listed]
    assert "file:///home/user/p.png" in uris and "execbox://guide" in uris, uris
    blob = mcp.request("resources/read", {"uri": "file:///home/user/p.png"})["result"]["contents"][0]
    assert blob["mimeType"] == "image/png" and base64.b64decode(blob["blob"])[:4] == b"\x89PNG"
    mcp.call("write_file", {"path": "/home/user/a b.txt", "content": "spaced"})
    uri = [x["uri"] for x in mcp.request("resources/list")["result"]["resources"] if "a%20b" in x["uri"]][0]
    assert mcp.request("resources/read", {"uri": uri})["result"]["contents"][0]["text"] == "spaced"
    assert mcp.request("resources/templates/list")["result"]["resourceTemplates"][0]["uriTemplate"] == "file:///{+path}"


# ---- the stateless revision ----

def modern(srv, method, params, headers=None, id=1, meta=None):
    m = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    if meta is not None:
        m = meta
    p = dict(params)
    p["_meta"] = m
    h = {"Content-Type": "application/json", "Accept": ACCEPT, "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if method == "tools/call":
        h["Mcp-Name"] = params["name"]
    if headers is not None:
        h.update(headers)
        h = {k: v for k, v in h.items() if v is not None}
    return requests.post(srv.url + "/mcp", headers=h, timeout=60,
                         data=json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": p}))


def test_stateless_revision(server):
    d = modern(server, "server/discover", {}).json()["result"]
    assert d["supportedVersions"] == [MODERN] and d["resultType"] == "complete" and d["ttlMs"] >= 0
    r1 = modern(server, "tools/call", {"name": "run_command", "arguments": {"cmd": "echo 1 > /home/user/s"}}).json()
    sb = r1["result"]["structuredContent"]["sandbox_id"]
    assert r1["result"]["resultType"] == "complete" and f"[sandbox_id: {sb}]" in text_of(r1["result"])
    r2 = modern(server, "tools/call", {"name": "run_command", "arguments": {"cmd": "cat /home/user/s"}}).json()
    assert r2["result"]["structuredContent"]["stdout"] == "1\n"          # the tenant's default sandbox
    rpc_error(modern(server, "tools/list", {}, headers={"Mcp-Method": "prompts/list"}), 400, -32020)
    rpc_error(modern(server, "tools/list", {}, headers={"Mcp-Method": None}), 400, -32020)
    rpc_error(modern(server, "tools/call", {"name": "run_command", "arguments": {"cmd": "true"}},
                     headers={"Mcp-Name": "run_code"}), 400, -32020)
    rpc_error(modern(server, "tools/list", {}, headers={"MCP-Protocol-Version": "2026-01-01"}), 400, -32020)
    rpc_error(modern(server, "tools/list", {}, meta={}), 400, -32602)
    body = rpc_error(modern(server, "tools/list", {}, headers={"MCP-Protocol-Version": "2099-01-01"},
                            meta={"io.modelcontextprotocol/protocolVersion": "2099-01-01",
                                  "io.modelcontextprotocol/clientCapabilities": {}}), 400, -32022)
    assert body["error"]["data"] == {"supported": [MODERN], "requested": "2099-01-01"}
    for removed in ["initialize", "ping", "logging/setLevel", "nope"]:
        rpc_error(modern(server, removed, {}), 404, -32601)
    expect(server.delete(f"/v1/sandboxes/{sb}"), 204)   # it was never tied to a session


# ---- stdio ----

def test_stdio_bad_input_and_a_clean_exit(execbox):
    lines = [
        "garbage",
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                               "clientInfo": {"name": "t", "version": "1"}}}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "nope"}),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "run_command",
                                                                                "arguments": {"cmd": 1}}}),
        json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "run_command",
                                                                                "arguments": {"cmd": "echo ok"}}}),
        "",
        "{\"jsonrpc\": \"2.0\", \"id\": 6, \"method\": \"ping\"}\r",
    ]
    p = subprocess.run([execbox, "mcp"], input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out = [json.loads(line) for line in p.stdout.splitlines()]
    by_id = {m.get("id"): m for m in out}
    assert [m["error"]["code"] for m in out if m.get("id") is None] == [-32700, -32600], out
    assert by_id[3]["error"]["code"] == -32601
    assert by_id[4]["result"]["isError"] is True
    assert by_id[5]["result"]["structuredContent"]["stdout"] == "ok\n"
    assert by_id[6]["result"] == {}
    assert not any(line.startswith("execbox: error") for line in p.stderr.splitlines()), p.stderr
