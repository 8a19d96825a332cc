"""Secrets over MCP (issue 10, item 7): the model is the MCP client, so it
may ask a human for a secret (request_secret, the same approval code inside
makes with $EXECBOX_API/secrets/NAME) and list its secrets (list_secrets),
but never see a value nor approve its own request. A human decides over REST
(in a thread, while the tool waits). Every MCP response body of the tests is
recorded and searched for the value, with a positive control that the
recording holds what the tools answered. The upstream is the fake internet
(fakenet.py): its /headers page shows that the value does reach the secret's
host, read over REST so that no MCP response ever carries it.
Run with `flock /tmp/xb-fakenet.lock`."""
from __future__ import annotations

import threading
import time

import pytest

import fakenet
from server_fixture import expect  # noqa: F401
from test_mcp import Mcp, text_of

VALUE = "xbMCPgrantedSECRET5e81c07d3a"
OTHER = "xbMCPstoredSECRET92b6d40f1e"
TIMEOUT_S = 6
BODIES: list[str] = []   # every MCP response body of this module


@pytest.fixture(autouse=True)
def no_leaks():
    yield


@pytest.fixture(scope="module")
def net():
    yield from fakenet.module_net()


@pytest.fixture(scope="module")
def srv(execbox, net, tmp_path_factory):
    yield from fakenet.module_server(execbox, net, tmp_path_factory, "mcpsec", "--approval-timeout", str(TIMEOUT_S))
    # No MCP response held a value; the recording is real (it holds the
    # placeholders and names the tools answered).
    seen = "\n".join(BODIES)
    assert VALUE not in seen and OTHER not in seen
    assert "execbox-secret-" in seen and "MCP_TOKEN" in seen and "STORED_TOKEN" in seen


class RecMcp(Mcp):
    def post(self, body, *a, **kw):
        r = super().post(body, *a, **kw)
        if not kw.get("stream"):
            BODIES.append(r.text)
        return r


@pytest.fixture
def mcp(srv):
    c = RecMcp(srv).initialize()
    yield c
    c.close()


def ask(mcp, sid, name, wait_s=60, hosts=("a.test",), reason="to list my repositories"):
    args = {"sandbox_id": sid, "name": name, "hosts": list(hosts) if hosts is not None else None,
            "header": "Authorization: Bearer {value}", "reason": reason, "wait_s": wait_s}
    return mcp.call("request_secret", args, timeout=wait_s + 30)["result"]


class Asking:
    """request_secret in a thread while the test decides as the human."""

    def __init__(self, mcp, sid, name, **kw):
        self.result = None
        self.t = threading.Thread(target=self._run, args=(mcp, sid, name, kw), daemon=True)
        self.t.start()

    def _run(self, mcp, sid, name, kw):
        self.result = ask(mcp, sid, name, **kw)

    def join(self, timeout=60):
        self.t.join(timeout)
        assert self.result is not None, "request_secret did not answer"
        return self.result


def pending(srv, name, deadline_s=15):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        r = srv.get("/v1/approvals")
        expect(r, 200)
        got = [a for a in r.json()["approvals"] if a["kind"] == "secret" and a["name"] == name]
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"no approval for {name} appeared")


def decide(srv, aid, **body):
    r = srv.request("POST", f"/v1/approvals/{aid}", json_body=body)
    expect(r, 200)
    assert VALUE not in r.text and OTHER not in r.text
    return r.json()


def sandbox(srv):
    return srv.create(network={"mode": "allowlist", "allow": ["a.test", "b.test"]})["id"]


def sh(mcp, sid, cmd):
    r = mcp.call("run_command", {"sandbox_id": sid, "cmd": cmd})["result"]
    assert not r.get("isError"), r
    return r["structuredContent"]["stdout"]


def test_no_tool_can_approve_or_set_a_value(mcp):
    tools = {t["name"]: t for t in mcp.request("tools/list")["result"]["tools"]}
    # Positive control: the secret tools are there, with their arguments.
    assert {"request_secret", "list_secrets"} <= set(tools), sorted(tools)
    assert {"name", "hosts", "reason"} <= set(tools["request_secret"]["inputSchema"]["properties"])
    for name, t in tools.items():
        props = t["inputSchema"].get("properties", {})
        assert not {"decision", "value", "remember"} & set(props), (name, sorted(props))
        assert "approval_decide" not in name and "secret_create" not in name
    # The guide says who approves.
    guide = text_of(mcp.call("get_guide", {})["result"])
    assert "request_secret" in guide and "only a human" in guide, guide


def test_request_secret_granted_by_a_human(srv, mcp):
    sid = sandbox(srv)
    bg = Asking(mcp, sid, "MCP_TOKEN")
    [a] = pending(srv, "MCP_TOKEN")
    assert a["sandbox_id"] == sid and a["hosts"] == "a.test" and "to list my repositories" in a["reason"], a
    assert a["header"] == "Authorization: Bearer {value}" and a["context"]["exists"] is False, a
    assert decide(srv, a["id"], decision="allow", value=VALUE)["decision"] == "allow"
    res = bg.join()
    assert not res.get("isError"), res
    got = res["structuredContent"]
    ph = got["placeholder"]
    assert got["status"] == "granted" and got["name"] == got["env"] == "MCP_TOKEN" and got["approval_id"] == a["id"]
    assert ph.startswith("execbox-secret-") and ph != VALUE
    # A new process sees the placeholder, never the value.
    assert sh(mcp, sid, "echo $MCP_TOKEN").strip() == ph
    # The value reaches the secret's host alone (read over REST: the fake
    # upstream echoes it, and no MCP response may carry it).
    out = srv.exec(sid, cmd="curl -sS -m 10 http://a.test/headers", timeout_s=30)["stdout"]
    assert f"Authorization: Bearer {VALUE}" in out, out
    out = srv.exec(sid, cmd='curl -sS -m 10 -H "X: $MCP_TOKEN" http://b.test/headers', timeout_s=30)["stdout"]
    assert VALUE not in out and ph in out, out
    # Held already: asked again, granted at once, and nobody is asked.
    again = ask(mcp, sid, "MCP_TOKEN", wait_s=0)["structuredContent"]
    assert again["status"] == "granted" and again["placeholder"] == ph, again
    assert srv.get("/v1/approvals").json()["approvals"] == []
    # list_secrets: the name and that this sandbox holds it, no value.
    r = mcp.call("list_secrets", {"sandbox_id": sid})["result"]
    [s] = [s for s in r["structuredContent"]["secrets"] if s["name"] == "MCP_TOKEN"]
    assert s["attached"] is True and s["hosts"] == ["a.test"] and "value" not in s, s


def test_request_secret_denied_is_a_tool_error_that_says_a_human_decides(srv, mcp):
    sid = sandbox(srv)
    bg = Asking(mcp, sid, "DENIED_TOKEN")
    [a] = pending(srv, "DENIED_TOKEN")
    decide(srv, a["id"], decision="deny")
    res = bg.join()
    text = text_of(res)
    assert res.get("isError") is True and "structuredContent" not in res, res
    assert "not_approved" in text and "a human denied it" in text, text
    assert "only a human can approve it" in text and "execbox approvals allow" in text, text
    assert srv.get("/v1/approvals").json()["approvals"] == []
    assert not any(s["name"] == "DENIED_TOKEN" for s in srv.get("/v1/secrets").json()["secrets"])
    assert sh(mcp, sid, "echo ${DENIED_TOKEN:-unset}").strip() == "unset"


def test_pending_then_asked_again_waits_on_the_same_request(srv, mcp):
    sid = sandbox(srv)
    t0 = time.monotonic()
    res = ask(mcp, sid, "LATER_TOKEN", wait_s=0.5)
    assert time.monotonic() - t0 < TIMEOUT_S - 1
    got = res["structuredContent"]
    assert not res.get("isError") and got["status"] == "pending", res
    assert got["approval_id"] in got["note"] and "execbox approvals allow" in got["note"], got
    assert 0 < got["expires_in_s"] <= TIMEOUT_S
    # Still waiting for the human after the call answered.
    [a] = pending(srv, "LATER_TOKEN")
    assert a["id"] == got["approval_id"]
    bg = Asking(mcp, sid, "LATER_TOKEN", wait_s=30)
    time.sleep(0.3)
    [b] = pending(srv, "LATER_TOKEN")   # one request, not two
    assert b["id"] == a["id"]
    decide(srv, a["id"], decision="allow", value=VALUE)
    done = bg.join()["structuredContent"]
    assert done["status"] == "granted" and done["approval_id"] == a["id"], done
    assert sh(mcp, sid, "echo $LATER_TOKEN").strip() == done["placeholder"]


def test_nobody_answers_in_time(srv, mcp):
    sid = sandbox(srv)
    t0 = time.monotonic()
    res = ask(mcp, sid, "NOBODY_TOKEN", wait_s=60)
    took = time.monotonic() - t0
    assert res.get("isError") is True and f"no human approved it within {TIMEOUT_S} s" in text_of(res), res
    assert TIMEOUT_S - 0.5 <= took < TIMEOUT_S + 10, took
    assert srv.get("/v1/approvals").json()["approvals"] == []


def test_list_secrets_names_but_never_values(srv, mcp):
    r = srv.request("POST", "/v1/secrets", json_body={"name": "STORED_TOKEN", "value": OTHER, "hosts": ["b.test"],
                                                       "header": "X-Api-Key: {value}"})
    expect(r, 201)
    sid = sandbox(srv)
    res = mcp.call("list_secrets", {"sandbox_id": sid})["result"]
    assert not res.get("isError"), res
    [s] = [s for s in res["structuredContent"]["secrets"] if s["name"] == "STORED_TOKEN"]
    assert s == {"name": "STORED_TOKEN", "hosts": ["b.test"], "header": "X-Api-Key: {value}",
                 "created_ms": s["created_ms"], "attached": False}, s
    assert "STORED_TOKEN" in text_of(res) and OTHER not in text_of(res)
    # The human attaches the stored one without typing it again (no value).
    bg = Asking(mcp, sid, "STORED_TOKEN", hosts=None, reason=None)
    [a] = pending(srv, "STORED_TOKEN")
    assert a["context"]["exists"] is True
    decide(srv, a["id"], decision="allow")
    assert bg.join()["structuredContent"]["status"] == "granted"
    res = mcp.call("list_secrets", {"sandbox_id": None})["result"]   # the default sandbox holds none
    assert all(s["attached"] is False for s in res["structuredContent"]["secrets"]), res
    res = mcp.call("list_secrets", {"sandbox_id": sid})["result"]
    assert [s["attached"] for s in res["structuredContent"]["secrets"] if s["name"] == "STORED_TOKEN"] == [True]


def test_bad_requests_and_the_rest_route(srv, mcp):
    sid = sandbox(srv)
    res = ask(mcp, sid, "1-bad", wait_s=0)
    assert res.get("isError") is True and "environment variable name" in text_of(res), res
    res = ask(mcp, "doesnotexist0000000000000000", "X_TOKEN", wait_s=0)
    assert res.get("isError") is True and "sandbox_not_found" in text_of(res), res
    # REST has the same operation, for frameworks that call tools over it.
    r = srv.request("POST", f"/v1/sandboxes/{sid}/secrets/REST_TOKEN/request",
                    json_body={"hosts": ["a.test"], "reason": "over REST", "wait_s": 0})
    expect(r, 200)
    assert r.json()["status"] == "pending", r.text
    [a] = pending(srv, "REST_TOKEN")
    assert "over REST" in a["reason"]
    decide(srv, a["id"], decision="deny")
    r = srv.request("POST", f"/v1/sandboxes/{sid}/secrets/REST_TOKEN/request", json_body={"value": VALUE})
    expect(r, 400)
    assert VALUE not in r.text
    r = srv.get(f"/v1/secrets?sandbox_id={sid}")
    expect(r, 200)
    assert all("attached" in s for s in r.json()["secrets"]), r.text


def test_a_cancelled_request_takes_its_approval_with_it(srv, mcp):
    sid = sandbox(srv)
    out = {}

    def long_call():
        out["r"] = mcp.post({"jsonrpc": "2.0", "id": "ask", "method": "tools/call",
                             "params": {"name": "request_secret", "arguments": {
                                 "sandbox_id": sid, "name": "CANCELLED_TOKEN", "hosts": None, "header": None,
                                 "reason": "cancelled soon", "wait_s": 60}}}, timeout=60)

    t = threading.Thread(target=long_call)
    t.start()
    [a] = pending(srv, "CANCELLED_TOKEN")
    expect(mcp.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": "ask", "reason": "the user gave up"}}), 202)
    t.join(15)
    assert not t.is_alive() and "result" not in out["r"].text, out
    end = time.monotonic() + 10
    while any(x["id"] == a["id"] for x in srv.get("/v1/approvals").json()["approvals"]):
        assert time.monotonic() < end, "the approval outlived its cancelled call"
        time.sleep(0.05)
    r = srv.request("POST", f"/v1/approvals/{a['id']}", json_body={"decision": "allow", "value": VALUE})
    expect(r, 404)


def test_a_second_waiting_call_takes_over_the_first(srv, mcp):
    sid = sandbox(srv)
    first = Asking(mcp, sid, "TWICE_TOKEN", wait_s=60)
    [a] = pending(srv, "TWICE_TOKEN")
    second = Asking(mcp, sid, "TWICE_TOKEN", wait_s=60)
    # The first answers pending at once, for the same approval.
    got = first.join(20)["structuredContent"]
    assert got["status"] == "pending" and got["approval_id"] == a["id"], got
    assert [x["id"] for x in pending(srv, "TWICE_TOKEN")] == [a["id"]]
    decide(srv, a["id"], decision="allow", value=VALUE)
    done = second.join()["structuredContent"]
    assert done["status"] == "granted" and done["approval_id"] == a["id"], done
