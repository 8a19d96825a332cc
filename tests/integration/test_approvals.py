"""Human approvals (issue 10, part 4): a connection to a host the policy
marks `ask` waits for a human, and so does a secret asked for from inside
($EXECBOX_API/secrets/NAME). A human lists them (GET /v1/approvals,
`execbox approvals`) and allows or denies; a timeout denies. The waiting
request runs in a thread while the test decides. The upstream is the fake
internet (fakenet.py)."""
from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest

import fakenet
from server_fixture import expect, finish_server, start_server  # noqa: F401

VALUE = "xbAPPROVEDsecret41c9e02b77"
TIMEOUT_S = 3


@pytest.fixture(autouse=True)
def no_leaks():
    yield


@pytest.fixture(scope="module")
def net():
    yield from fakenet.module_net()


@pytest.fixture(scope="module")
def srv(execbox, net, tmp_path_factory):
    yield from fakenet.module_server(execbox, net, tmp_path_factory, "appr", "--approval-timeout", str(TIMEOUT_S))


def run(srv, sid, cmd, timeout=60):
    return srv.exec(sid, timeout=timeout + 30, cmd=cmd, timeout_s=timeout)


class Background:
    """A command inside, run in a thread while the test decides."""

    def __init__(self, srv, sid, cmd):
        self.result = None
        self.t = threading.Thread(target=self._run, args=(srv, sid, cmd), daemon=True)
        self.t.start()

    def _run(self, srv, sid, cmd):
        self.result = run(srv, sid, cmd)

    def join(self, timeout=30):
        self.t.join(timeout)
        assert self.result is not None, "the command did not end"
        return self.result


def pending(srv, kind, deadline_s=10):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        r = srv.get("/v1/approvals")
        expect(r, 200)
        got = [a for a in r.json()["approvals"] if a["kind"] == kind]
        if got:
            return got[0]
        time.sleep(0.05)
    raise AssertionError(f"no {kind} approval appeared")


def decide(srv, aid, **body):
    r = srv.request("POST", f"/v1/approvals/{aid}", json_body=body)
    expect(r, 200)
    return r.json()


def ask_sandbox(srv):
    return srv.create(network={"mode": "allowlist", "allow": ["a.test"], "ask": ["b.test", "*.w.test"]})["id"]


CURL_B = "curl -sS -m 20 -o /tmp/o -w '%{http_code}' http://b.test/who; echo; cat /tmp/o"


def test_ask_allow(srv, net):
    sid = ask_sandbox(srv)
    assert srv.get(f"/v1/sandboxes/{sid}/network").json()["ask"] == ["b.test", "*.w.test"]
    bg = Background(srv, sid, CURL_B)
    a = pending(srv, "egress")
    assert a["host"] == "b.test" and a["port"] == 80 and a["sandbox_id"] == sid and "ask" in a["reason"], a
    assert 0 < a["expires_in_s"] <= TIMEOUT_S
    got = decide(srv, a["id"], decision="allow")
    assert got["decision"] == "allow" and got["remembered"] is False
    out = bg.join()["stdout"]
    assert out.startswith("200") and "host=b.test" in out, out
    # Not remembered: the next connection asks again (and times out).
    t0 = time.monotonic()
    out = run(srv, sid, CURL_B)["stdout"]
    assert out.startswith("403") and time.monotonic() - t0 >= TIMEOUT_S - 0.5, out
    # Decided: gone from the list, and a second decision is 404.
    r = srv.request("POST", f"/v1/approvals/{a['id']}", json_body={"decision": "allow"})
    expect(r, 404)
    assert r.json()["error"]["code"] == "approval_not_found"


def test_ask_allow_remember(srv, net):
    sid = ask_sandbox(srv)
    bg = Background(srv, sid, "curl -sS -m 20 -o /dev/null -w '%{http_code}' http://x.w.test/who")
    a = pending(srv, "egress")
    assert a["host"] == "x.w.test"
    assert decide(srv, a["id"], decision="allow", remember=True)["remembered"] is True
    assert bg.join()["stdout"] == "200"
    assert "x.w.test" in srv.get(f"/v1/sandboxes/{sid}/network").json()["allow"]
    t0 = time.monotonic()
    assert run(srv, sid, "curl -sS -m 20 -o /dev/null -w '%{http_code}' http://x.w.test/who")["stdout"] == "200"
    assert time.monotonic() - t0 < TIMEOUT_S


def test_ask_deny(srv, net):
    sid = ask_sandbox(srv)
    bg = Background(srv, sid, CURL_B)
    a = pending(srv, "egress")
    decide(srv, a["id"], decision="deny")
    out = bg.join()["stdout"]
    assert out.startswith("403") and "human must approve" in out and "a human denied it" in out, out
    log = srv.get(f"/v1/sandboxes/{sid}/network/log").json()["entries"]
    assert any(e["host"] == "b.test" and not e["allowed"] for e in log), log


def test_ask_timeout_denies(srv, net):
    sid = ask_sandbox(srv)
    t0 = time.monotonic()
    out = run(srv, sid, CURL_B)["stdout"]
    took = time.monotonic() - t0
    assert out.startswith("403") and f"no human approved it within {TIMEOUT_S} s" in out, out
    assert TIMEOUT_S - 0.5 <= took < TIMEOUT_S + 10, took
    assert srv.get("/v1/approvals").json()["approvals"] == []
    # HTTPS (CONNECT) waits and is refused the same way.
    r = run(srv, sid, "curl -sS -m 20 https://b.test/who")
    assert r["exit_code"] != 0 and "403" in r["stderr"], r


def test_secret_requested_inside_granted_through_the_cli(srv, net, execbox):
    sid = srv.create(network={"mode": "allowlist", "allow": ["a.test", "b.test"]})["id"]
    assert run(srv, sid, "echo $EXECBOX_API")["stdout"].strip() == "http://127.0.0.1:3128/_execbox"
    bg = Background(srv, sid, 'curl -sS -m 20 "$EXECBOX_API/secrets/GH_TOKEN?hosts=a.test&'
                              'header=Authorization:%20Bearer%20%7Bvalue%7D&reason=to%20list%20my%20repos"')
    a = pending(srv, "secret")
    assert a["name"] == "GH_TOKEN" and a["hosts"] == "a.test" and "list my repos" in a["reason"], a
    assert a["header"] == "Authorization: Bearer {value}" and a["context"]["exists"] is False
    # The CLI lists it, and allows it with the value on stdin (never argv).
    ls = subprocess.run([execbox, "approvals", "--server", srv.url], capture_output=True, text=True, timeout=30)
    assert ls.returncode == 0 and a["id"] in ls.stdout and "GH_TOKEN" in ls.stdout, ls
    ok = subprocess.run([execbox, "approvals", "--server", srv.url, "allow", a["id"]], input=VALUE + "\n",
                        capture_output=True, text=True, timeout=30)
    assert ok.returncode == 0 and f"allowed {a['id']}" in ok.stdout and VALUE not in ok.stdout + ok.stderr, ok
    got = json.loads(bg.join()["stdout"])
    ph = got["placeholder"]
    assert got["name"] == "GH_TOKEN" and ph.startswith("execbox-secret-") and VALUE not in json.dumps(got)
    # Now the secret exists; new processes hold the placeholder, and only
    # the egress path puts the value in.
    assert run(srv, sid, "echo $GH_TOKEN")["stdout"].strip() == ph
    out = run(srv, sid, "curl -sS -m 10 http://a.test/headers")["stdout"]
    assert f"Authorization: Bearer {VALUE}" in out, out
    out = run(srv, sid, "curl -sS -m 10 https://a.test/headers")["stdout"]
    assert f"Authorization: Bearer {VALUE}" in out, out
    out = run(srv, sid, 'curl -sS -m 10 -H "X: $GH_TOKEN" http://b.test/headers')["stdout"]
    assert VALUE not in out and ph in out, out
    r = srv.get("/v1/secrets")
    assert any(s["name"] == "GH_TOKEN" for s in r.json()["secrets"]) and VALUE not in r.text
    assert VALUE not in run(srv, sid, "env; cat /proc/1/environ")["stdout"]
    assert VALUE not in srv.stderr()


def test_secret_request_denied_through_the_cli(srv, net, execbox):
    sid = srv.create()["id"]   # no network: the sandbox's API still answers
    bg = Background(srv, sid, 'curl -sS -m 20 "$EXECBOX_API/secrets/NOPE?hosts=a.test"')
    a = pending(srv, "secret")
    p = subprocess.run([execbox, "approvals", "--server", srv.url, "deny", a["id"]], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0, p
    got = json.loads(bg.join()["stdout"])
    assert got["error"]["code"] == "not_approved" and "human must approve" in got["error"]["hint"], got
    assert not any(s["name"] == "NOPE" for s in srv.get("/v1/secrets").json()["secrets"])


def test_secret_request_times_out_and_bad_names(srv, net):
    sid = srv.create()["id"]
    t0 = time.monotonic()
    got = json.loads(run(srv, sid, 'curl -sS -m 20 "$EXECBOX_API/secrets/LATE?timeout_s=1"')["stdout"])
    assert got["error"]["code"] == "not_approved" and "within 1 s" in got["error"]["message"], got
    assert time.monotonic() - t0 < TIMEOUT_S + 5
    got = json.loads(run(srv, sid, 'curl -sS -m 20 "$EXECBOX_API/secrets/1-bad"')["stdout"])
    assert got["error"]["code"] == "invalid_request", got
    got = json.loads(run(srv, sid, 'curl -sS -m 20 "$EXECBOX_API/other"')["stdout"])
    assert got["error"]["code"] == "not_found", got


def test_decision_errors(srv, net):
    r = srv.request("POST", "/v1/approvals/nosuchapproval", json_body={"decision": "allow"})
    expect(r, 404)
    sid = ask_sandbox(srv)
    bg = Background(srv, sid, CURL_B)
    a = pending(srv, "egress")
    for body in ({"decision": "maybe"}, {"decision": "allow", "remember": "yes"}, {"decision": "allow", "x": 1}):
        r = srv.request("POST", f"/v1/approvals/{a['id']}", json_body=body)
        expect(r, 400)
    decide(srv, a["id"], decision="deny")
    bg.join()


def test_approvals_are_tenant_scoped_and_an_admin_sees_all(execbox, net, tmp_path_factory):
    a_tok, b_tok, admin = "tenantA" + "a" * 25, "tenantB" + "b" * 25, "admin" + "c" * 27
    s = start_server(execbox, str(tmp_path_factory.mktemp("apprt")), "--dns-server", fakenet.DNS_ADDR,
                     "--approval-timeout", "20", tokens=[a_tok, b_tok, admin + " admin"], pool=0)
    try:
        sid = s.create(network={"mode": "allowlist", "ask": ["b.test"]})["id"]
        bg = Background(s, sid, CURL_B)
        a = pending(s, "egress")   # tenant A sees its own
        r = s.request("GET", "/v1/approvals", token=b_tok)
        expect(r, 200)
        assert r.json()["approvals"] == [], r.text
        r = s.request("POST", f"/v1/approvals/{a['id']}", token=b_tok, json_body={"decision": "allow"})
        expect(r, 404)
        # A client cannot claim the admin's view by sending the server's own argument.
        r = s.request("POST", f"/v1/approvals/{a['id']}", token=b_tok,
                      json_body={"decision": "allow", "_all_tenants": True})
        expect(r, 404)
        r = s.request("GET", "/v1/approvals", token=admin)
        assert [x["id"] for x in r.json()["approvals"]] == [a["id"]], r.text
        r = s.request("POST", f"/v1/approvals/{a['id']}", token=admin, json_body={"decision": "allow"})
        expect(r, 200)
        assert bg.join()["stdout"].startswith("200")
        # Secrets are the tenant's too.
        r = s.request("POST", "/v1/secrets", token=b_tok, json_body={"name": "B_ONLY", "value": VALUE,
                                                                      "hosts": ["a.test"]})
        expect(r, 201)
        assert s.request("GET", "/v1/secrets").json()["secrets"] == []
        r = s.request("POST", "/v1/sandboxes", json_body={"secrets": ["B_ONLY"]})
        expect(r, 404)
    finally:
        problems = finish_server(s)
        assert not problems, "\n".join(problems)
