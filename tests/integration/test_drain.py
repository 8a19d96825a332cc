"""SIGTERM drains (issue 12, section 4): /readyz stays 200 and says
draining, every create path (REST, MCP, E2B, Piston, Judge0) gets 503 with
a hint, requests in flight (a streamed exec too) finish before the daemon
exits, --drain-timeout bounds the wait, a second signal exits at once, and
--stop-sandboxes deletes every sandbox at exit."""
from __future__ import annotations

import os
import signal
import threading
import time

import requests

from server_fixture import (expect, expect_error, sandbox_cgroups, cgroups_gone, server_factory,  # noqa: F401
                            sse_events)
from test_mcp import Mcp

TOKEN = "drain-token-0123456789abcdef0123"


def _stream(srv, sid, cmd, out):
    t0 = time.monotonic()
    try:
        r = requests.post(f"{srv.url}/v1/sandboxes/{sid}/exec", json={"cmd": cmd}, stream=True, timeout=30,
                          headers={"Authorization": f"Bearer {TOKEN}", "Accept": "text/event-stream"})
        out["status"] = r.status_code
        out["events"] = sse_events(r, t0)
    except Exception as e:              # noqa: BLE001 - the assertion names it
        out["error"] = repr(e)
    out["ended"] = time.monotonic()


def _plain(srv, sid, cmd, out):
    try:
        r = srv.post(f"/v1/sandboxes/{sid}/exec", {"cmd": cmd}, session=srv.session(), timeout=30)
        out["status"], out["body"] = r.status_code, r.json()
    except Exception as e:              # noqa: BLE001
        out["error"] = repr(e)
    out["ended"] = time.monotonic()


def test_sigterm_drains_in_flight_work_and_refuses_creates(server_factory):
    srv = server_factory("--drain-timeout", "20s", tokens=[TOKEN], pool=1)
    sid = srv.create()["id"]
    mcp = Mcp(srv).initialize()
    streamed, plain = {}, {}
    # Both wait for the test's go (a file), so they are in flight for as
    # long as the checks below take, however slow the machine.
    wait = "while [ ! -e /tmp/go ]; do sleep 0.05; done"
    threads = [threading.Thread(target=_stream, args=(srv, sid, f"echo begun; {wait}; echo done", streamed)),
               threading.Thread(target=_plain, args=(srv, sid, f"{wait}; echo plain-ok", plain))]
    for t in threads:
        t.start()
    time.sleep(0.6)                     # both are running in the sandbox now
    t_sig = time.monotonic()
    os.kill(srv.pid, signal.SIGTERM)    # the server we started, by pid
    time.sleep(0.2)

    r = srv.get("/readyz", token=None)
    expect(r, 200)
    assert r.json() == {"status": "draining", "draining": True}, r.text
    expect(srv.get("/healthz"), 200)
    # REST
    err = expect_error(srv.post("/v1/sandboxes", {}), 503, "shutting_down")
    assert "another instance" in err["hint"], err
    # MCP
    res = mcp.call("sandbox_create", {})
    assert res["result"]["isError"], res
    text = res["result"]["content"][0]["text"]
    assert "stopping" in text and "retry" in text, text
    # E2B
    r = requests.post(srv.url + "/sandboxes", json={"templateID": "base"}, timeout=10,
                      headers={"X-API-KEY": TOKEN, "Content-Type": "application/json"})
    assert r.status_code == 503, (r.status_code, r.text)
    assert "stopping" in r.text, r.text
    # Piston and Judge0
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    r = requests.post(srv.url + "/api/v2/execute", timeout=10, headers=auth,
                      json={"language": "python", "version": "*", "files": [{"content": "print(1)"}]})
    assert r.status_code == 503, (r.status_code, r.text)
    r = requests.post(srv.url + "/submissions?wait=true", timeout=10, headers=auth,
                      json={"source_code": "print(1)", "language_id": 71})
    assert r.status_code == 503, (r.status_code, r.text)
    assert "retry" in r.text, r.text
    # Work on an existing sandbox still runs.
    assert srv.exec(sid, cmd="echo still")["stdout"] == "still\n"
    assert srv.alive(), "the server stopped before its requests in flight finished"
    assert time.monotonic() - t_sig < 15, "the checks took most of the drain timeout"
    t_go = time.monotonic()
    assert srv.exec(sid, cmd="touch /tmp/go")["exit_code"] == 0

    for t in threads:
        t.join(20)
    assert plain.get("status") == 200, plain
    assert plain["body"]["stdout"] == "plain-ok\n", plain
    assert streamed.get("status") == 200, streamed
    names = [e[1] for e in streamed["events"]]
    assert names[-1] == "result", names
    out = "".join(e[2].get("data", "") for e in streamed["events"] if e[1] == "stdout")
    assert "done" in out, streamed["events"]
    rc = srv.proc.wait(10)
    srv.stopped_rc = rc
    took = time.monotonic() - t_go
    assert rc == 0, srv.stderr()[-2000:]
    # It stopped once the last request was done, not at its 20 s.
    assert took < 8, took
    assert "no request in flight" in srv.stderr(), srv.stderr()[-2000:]


def test_drain_timeout_bounds_the_wait(server_factory):
    srv = server_factory("--drain-timeout", "1s", pool=0)
    sid = srv.create()["id"]
    out = {}
    t = threading.Thread(target=_plain, args=(srv, sid, "sleep 100", out))
    t.start()
    time.sleep(0.5)
    t0 = time.monotonic()
    os.kill(srv.pid, signal.SIGTERM)
    srv.stopped_rc = srv.proc.wait(10)
    took = time.monotonic() - t0
    t.join(10)
    assert srv.stopped_rc == 0, srv.stderr()[-2000:]
    assert 0.8 < took < 4, took
    assert "still in flight" in srv.stderr(), srv.stderr()[-2000:]


def test_second_signal_stops_at_once(server_factory):
    srv = server_factory("--drain-timeout", "60s", pool=0)
    sid = srv.create()["id"]
    out = {}
    t = threading.Thread(target=_plain, args=(srv, sid, "sleep 100", out))
    t.start()
    time.sleep(0.5)
    os.kill(srv.pid, signal.SIGTERM)
    time.sleep(0.5)
    assert srv.alive(), "the first SIGTERM did not drain"
    expect_error(srv.post("/v1/sandboxes", {}), 503, "shutting_down")
    t0 = time.monotonic()
    os.kill(srv.pid, signal.SIGINT)
    srv.stopped_rc = srv.proc.wait(10)
    took = time.monotonic() - t0
    t.join(10)
    assert srv.stopped_rc == 0, srv.stderr()[-2000:]
    assert took < 3, took


def test_stop_sandboxes_deletes_every_sandbox_at_exit(server_factory):
    srv = server_factory("--stop-sandboxes", pool=0)
    ids = [srv.create()["id"] for _ in range(2)]
    cgs = {}
    for sid in ids:
        expect(srv.post(f"/v1/sandboxes/{sid}/processes", {"cmd": "sleep 1000"}), 201)
        cgs.update(sandbox_cgroups(srv, sid))
    os.kill(srv.pid, signal.SIGTERM)
    srv.stopped_rc = srv.proc.wait(10)
    assert srv.stopped_rc == 0, srv.stderr()[-2000:]
    assert "deleting 2 sandboxes (--stop-sandboxes)" in srv.stderr(), srv.stderr()[-2000:]
    assert cgroups_gone(cgs), cgs


def test_an_mcp_listening_stream_does_not_hold_the_drain(server_factory):
    """A standalone GET /mcp stream only listens: the drain does not wait
    its 20 s for it, as it would for work in flight."""
    srv = server_factory("--drain-timeout", "20s", pool=0)
    mcp = Mcp(srv, version="2025-06-18").initialize()
    r = requests.get(srv.url + "/mcp", headers=mcp.headers({"Accept": "text/event-stream"}), stream=True, timeout=30)
    try:
        assert r.status_code == 200 and "text/event-stream" in r.headers["Content-Type"], (r.status_code, r.text)
        t0 = time.monotonic()
        os.kill(srv.pid, signal.SIGTERM)
        srv.stopped_rc = srv.proc.wait(10)
        took = time.monotonic() - t0
    finally:
        r.close()
    assert srv.stopped_rc == 0, srv.stderr()[-2000:]
    assert took < 3, took
    assert "no request in flight" in srv.stderr(), srv.stderr()[-2000:]
