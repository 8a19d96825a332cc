"""Pause and resume (the cgroup freezer) and lifetimes that match work:
a paused sandbox uses no CPU and keeps its memory, processes and state;
requests to it answer 409 paused until resumed; auto_pause pauses at the
idle timeout and the next use resumes; a running background process keeps
a sandbox alive past its idle timeout, and the maximum lifetime ends it
anyway. GET says when and why it ends."""
from __future__ import annotations

import os
import time

import pytest

from server_fixture import (expect, expect_error, parse_prometheus, sandbox_cgroups, server,  # noqa: F401
                            server_factory)



def cpu_usage_ns(cgs: dict[str, int]) -> int:
    """The sandbox's CPU time so far, from its cgroup on the host: cpuacct
    (v1) or cpu.stat (v2 and the hybrid companion)."""
    for path in cgs:
        f = os.path.join(path, "cpuacct.usage")
        if os.path.exists(f):
            with open(f) as fh:
                return int(fh.read())
    for path in cgs:
        f = os.path.join(path, "cpu.stat")
        if os.path.exists(f):
            with open(f) as fh:
                for line in fh:
                    k, v = line.split()
                    if k == "usage_usec":
                        return int(v) * 1000
    raise AssertionError(f"no CPU accounting in {sorted(cgs)}")


def wait_until(pred, timeout: float, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(step)


def get(srv, sid):
    return srv.get(f"/v1/sandboxes/{sid}")


def pause(srv, sid, **body):
    r = srv.post(f"/v1/sandboxes/{sid}/pause", body)
    expect(r, 200)
    return r.json()


def resume(srv, sid):
    r = srv.post(f"/v1/sandboxes/{sid}/resume", {})
    expect(r, 200)
    return r.json()


def test_pause_stops_a_cpu_spinner_and_resume_continues_it(server):
    sid = server.create()["id"]
    cgs = sandbox_cgroups(server, sid)
    r = server.post(f"/v1/sandboxes/{sid}/processes", {"cmd": "while :; do :; done"})
    expect(r, 201)
    pid = r.json()["pid"]
    # Positive control: running, it burns CPU.
    a = cpu_usage_ns(cgs)
    time.sleep(0.5)
    b = cpu_usage_ns(cgs)
    assert b - a > 100_000_000, f"the spinner used only {(b - a) / 1e6:.1f} ms of CPU in 0.5 s"
    s = pause(server, sid)
    assert s["state"] == "paused" and s["expires_because"] == "paused_ttl", s
    # The freeze is complete when pause answers: not a nanosecond more.
    c = cpu_usage_ns(cgs)
    time.sleep(1.0)
    d = cpu_usage_ns(cgs)
    assert d - c == 0, f"a paused sandbox used {(d - c) / 1e6:.3f} ms of CPU"
    s = resume(server, sid)
    assert s["state"] == "running" and s["active"] is True, s
    time.sleep(0.5)
    e = cpu_usage_ns(cgs)
    assert e - d > 100_000_000, "the spinner did not continue after resume"
    # The same process, still running.
    p = server.get(f"/v1/sandboxes/{sid}/processes/{pid}").json()
    assert p["status"] == "running", p
    server.post(f"/v1/sandboxes/{sid}/processes/{pid}/signal", {"signal": "KILL"})


def test_pause_right_after_a_background_start_and_its_output_after_resume(server):
    """A background process's spill files are opened by init after the
    start answers; no client waits on those opens, so a pause at once must
    not be refused as busy (E2B's SDK pauses right after a start), and the
    output written around the pause is all there after the resume."""
    sid = server.create()["id"]
    base = f"/v1/sandboxes/{sid}"
    pids = []
    for i in range(8):
        r = server.post(f"{base}/processes", {"cmd": f"echo start-{i}; sleep 0.3; echo end-{i}"})
        expect(r, 201)
        pids.append(r.json()["pid"])
        pause(server, sid)
        resume(server, sid)
    for i, pid in enumerate(pids):
        r = expect(server.post(f"{base}/processes/{pid}/wait", {"timeout_s": 30}, timeout=60), 200)
        assert r.json()["status"] != "running" and r.json()["exit_code"] == 0, r.json()
        r = expect(server.get(f"{base}/processes/{pid}/output"), 200)
        assert r.json()["stdout"] == f"start-{i}\nend-{i}\n", (i, r.json())


def test_paused_sandbox_answers_409_with_a_hint_and_keeps_state(server):
    sid = server.create()["id"]
    base = f"/v1/sandboxes/{sid}"
    r = server.post(f"{base}/sessions", {"language": "python"}, timeout=90)
    expect(r, 201)
    ss = r.json()["id"]
    r = server.post(f"{base}/sessions/{ss}/run", {"code": "x = 41\nblob = bytearray(64 << 20)"}, timeout=60)
    expect(r, 200)
    server.sh(sid, "echo kept > /home/user/f")
    pause(server, sid)
    for method, path, body in [("POST", "/exec", {"cmd": "true"}), ("POST", f"/sessions/{ss}/run", {"code": "x"}),
                               ("GET", "/files?path=/home/user/f", None), ("GET", "/processes", None),
                               ("POST", "/keepalive", {})]:
        r = server.request(method, base + path, json_body=body)
        err = expect_error(r, 409, "paused")
        assert "/resume" in err["hint"], err
    # GET, list, pause again and resume still work.
    assert get(server, sid).json()["state"] == "paused"
    listed = {x["id"]: x for x in server.get("/v1/sandboxes").json()["sandboxes"]}
    assert listed[sid]["state"] == "paused"
    pause(server, sid)
    resume(server, sid)
    r = server.post(f"{base}/sessions/{ss}/run", {"code": "x + 1, len(blob)"}, timeout=60)
    expect(r, 200)
    out = [o for o in r.json()["outputs"] if o["type"] == "result"]
    assert out and out[0]["data"]["text/plain"] == f"(42, {64 << 20})", r.json()
    assert server.sh(sid, "cat /home/user/f") == "kept\n"


def test_paused_metric_and_delete_while_paused(server):
    sid = server.create()["id"]
    before = parse_prometheus(server.get("/metrics").text)
    pause(server, sid)
    m = parse_prometheus(server.get("/metrics").text)
    assert m["execbox_sandboxes_paused"] == before.get("execbox_sandboxes_paused", 0) + 1, m
    assert m["execbox_sandbox_pauses_total"] == before["execbox_sandbox_pauses_total"] + 1
    expect(server.delete(f"/v1/sandboxes/{sid}"), 204)
    m = parse_prometheus(server.get("/metrics").text)
    assert m["execbox_sandboxes_paused"] == before.get("execbox_sandboxes_paused", 0)
    expect_error(server.post(f"/v1/sandboxes/{sid}/resume", {}), 410, "sandbox_gone")


def test_auto_pause_at_ttl_then_a_request_resumes(server):
    sid = server.create(timeout_s=1, auto_pause=True, paused_ttl_s=60)["id"]
    server.sh(sid, "echo here > /home/user/f")
    s = wait_until(lambda: (g := get(server, sid).json())["state"] == "paused" and g, 8)
    assert s, get(server, sid).json()
    assert s["expires_because"] == "paused_ttl" and 55_000 < s["expires_in_ms"] <= 60_000, s
    # The next request that needs it resumes it.
    assert server.sh(sid, "cat /home/user/f") == "here\n"
    s = get(server, sid).json()
    assert s["state"] == "running" and s["expires_because"] == "idle", s


def test_paused_ttl_ends_a_paused_sandbox(server):
    sid = server.create(paused_ttl_s=1)["id"]
    pause(server, sid)
    assert wait_until(lambda: get(server, sid).status_code == 410, 6), get(server, sid).json()


def test_busy_background_process_keeps_the_sandbox_past_its_idle_ttl(server):
    busy = server.create(timeout_s=1)["id"]
    idle = server.create(timeout_s=1)["id"]
    r = server.post(f"/v1/sandboxes/{busy}/processes", {"cmd": "sleep 4"})
    expect(r, 201)
    pid = r.json()["pid"]
    s = get(server, busy).json()
    assert s["active"] is True and s["expires_because"] == "idle", s
    # Positive control: the idle one expires at its TTL.
    assert wait_until(lambda: get(server, idle).status_code == 410, 4), get(server, idle).json()
    time.sleep(1.5)
    s = get(server, busy).json()
    assert s.get("state") == "running" and s["active"] is True, s
    # Once the job ends, the idle clock runs again: one TTL later it is gone.
    r = server.post(f"/v1/sandboxes/{busy}/processes/{pid}/wait", {"timeout_s": 10})
    expect(r, 200)
    assert get(server, busy).json()["active"] is False
    assert wait_until(lambda: get(server, busy).status_code == 410, 4)


def test_max_lifetime_ends_a_busy_sandbox(server):
    sid = server.create(timeout_s=60, max_lifetime_s=2)["id"]
    expect(server.post(f"/v1/sandboxes/{sid}/processes", {"cmd": "sleep 60"}), 201)
    s = get(server, sid).json()
    assert s["expires_because"] == "max_lifetime" and s["expires_in_ms"] <= 2000, s
    assert s["max_lifetime_s"] == 2 and s["active"] is True, s
    assert wait_until(lambda: get(server, sid).status_code == 410, 5), get(server, sid).json()


def test_expiry_fields_and_limits(server):
    s = server.create(timeout_s=30)
    assert s["expires_because"] == "idle" and 29_000 < s["expires_in_ms"] <= 30_000, s
    assert s["auto_pause"] is False and s["state"] == "running", s
    expect_error(server.post("/v1/sandboxes", {"paused_ttl_s": 10 ** 9}), 400)
    expect_error(server.post("/v1/sandboxes", {"max_lifetime_s": 0}), 400)
    expect_error(server.post(f"/v1/sandboxes/{s['id']}/pause", {"bogus": 1}), 400)


def test_operator_ceilings(server_factory):
    srv = server_factory("--max-lifetime", "5", "--paused-ttl", "3")
    s = srv.create()
    assert s["max_lifetime_s"] == 5 and s["paused_ttl_s"] == 3, s
    assert s["expires_because"] == "max_lifetime", s
    expect_error(srv.post("/v1/sandboxes", {"max_lifetime_s": 6}), 400)
    expect_error(srv.post("/v1/sandboxes", {"paused_ttl_s": 4}), 400)
