"""Operating `execbox serve`: shutdown with work in flight, the warm pool,
Prometheus metrics, and living next to another execbox on the same host."""
from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time

import pytest

import server_fixture as sf
from server_fixture import expect, expect_error, server, server_factory  # noqa: F401


def wait_until(pred, timeout: float, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(step)


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


# ---- shutdown ----

def _stop_and_check(srv: sf.Server, within: float) -> float:
    t0 = time.monotonic()
    os.kill(srv.pid, signal.SIGTERM)
    try:
        rc = srv.proc.wait(within + 10)
    except Exception:
        rc = None
    took = time.monotonic() - t0
    srv.stopped_rc = rc if rc is not None else srv.stop()
    assert srv.stopped_rc == 0, f"SIGTERM: exit {srv.stopped_rc}; stderr: {srv.stderr()[-3000:]}"
    assert took < within, f"the server took {took:.2f}s to stop"
    left = srv.leftovers()
    assert not left, "after SIGTERM the server left:\n  " + "\n  ".join(left)
    return took


@pytest.mark.slow
def test_sigterm_with_running_sandboxes_and_a_long_exec_in_flight(server_factory):
    srv = server_factory(pool=2)
    ids = [srv.create()["id"] for _ in range(3)]
    for sid in ids:
        expect(srv.post(f"/v1/sandboxes/{sid}/processes", {"cmd": "sleep 1000 & sleep 1001 & wait"}), 201)
    expect(srv.post(f"/v1/sandboxes/{ids[0]}/processes", {"cmd": "setsid sleep 1002 & trap '' TERM; sleep 1003",
                                                          "user": "root"}), 201)
    answers = []

    def long_exec():
        try:
            r = srv.post(f"/v1/sandboxes/{ids[1]}/exec", {"cmd": "sleep 300"}, session=srv.session(), timeout=30)
            answers.append(r.status_code)
        except Exception as e:             # the server may close the connection: fine
            answers.append(type(e).__name__)

    t = threading.Thread(target=long_exec)
    t.start()
    time.sleep(0.5)
    assert "sleep 300" in srv.exec(ids[1], cmd="ps -eo args")["stdout"]
    took = _stop_and_check(srv, within=5.0)
    t.join(10)
    assert answers, "the in-flight exec never ended"
    del took


@pytest.mark.slow
def test_sigterm_with_a_wait_a_long_poll_and_an_sse_stream_in_flight(server_factory):
    srv = server_factory(pool=1)
    sid = srv.create()["id"]
    pid = expect(srv.post(f"/v1/sandboxes/{sid}/processes", {"cmd": "sleep 500"}), 201).json()["pid"]
    socks = []
    for req in [f"POST /v1/sandboxes/{sid}/processes/{pid}/wait HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{{}}",
                f"GET /v1/sandboxes/{sid}/processes/{pid}/output?wait_s=300 HTTP/1.1\r\nHost: x\r\n\r\n"]:
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        s.sendall(req.encode())
        socks.append(s)
    body = json.dumps({"cmd": "echo go; sleep 400"}).encode()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    s.sendall(f"POST /v1/sandboxes/{sid}/exec HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n"
              f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    socks.append(s)
    time.sleep(0.5)
    try:
        _stop_and_check(srv, within=5.0)
    finally:
        for s in socks:
            s.close()


def test_sigterm_after_an_sse_client_left(server_factory):
    """An SSE client that leaves mid-stream must not wedge its connection:
    shutdown afterwards must be clean."""
    srv = server_factory(pool=0)
    sid = srv.create()["id"]
    body = json.dumps({"cmd": "echo started; sleep 60"}).encode()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    s.sendall(f"POST /v1/sandboxes/{sid}/exec HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n"
              f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    got = b""
    while b"started" not in got:
        got += s.recv(4096)
    s.close()
    time.sleep(0.5)
    expect(srv.get("/healthz"), 200)
    os.kill(srv.pid, signal.SIGTERM)
    rc = srv.proc.wait(15)
    srv.stopped_rc = rc
    assert rc == 0, (
        f"BUG: after an SSE client disconnected, SIGTERM ended the server with {rc}: {srv.stderr()[-600:]!r}. "
        f"stream_reader suspends the connection again once the client is gone (nothing ends the stream), "
        f"and MHD_stop_daemon panics on a suspended connection; the sandboxes' cgroups are then left behind")


def test_abandoned_sse_streams_do_not_leak_connections(server_factory):
    srv = server_factory(pool=0)
    sid = srv.create()["id"]
    expect(srv.get("/healthz"), 200)
    time.sleep(0.2)
    base = fd_count(srv.pid)
    for i in range(20):
        body = json.dumps({"cmd": f"echo s{i}; sleep 60"}).encode()
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        s.sendall(f"POST /v1/sandboxes/{sid}/exec HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n"
                  f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        got = b""
        while f"s{i}".encode() not in got:
            got += s.recv(4096)
        s.close()
    settled = wait_until(lambda: fd_count(srv.pid) <= base + 2, 5, 0.1)
    now = fd_count(srv.pid)
    assert settled, (f"BUG: 20 abandoned SSE streams left {now - base} fds open in the server "
                     f"(connections stuck suspended; {base} before, {now} after)")


def test_sigint_and_sighup_also_stop_cleanly(server_factory):
    for sig in (signal.SIGINT, signal.SIGHUP):
        srv = server_factory(pool=1)
        srv.create()
        os.kill(srv.pid, sig)
        srv.stopped_rc = srv.proc.wait(10)
        assert srv.stopped_rc == 0, (sig, srv.stderr()[-1000:])
        assert not srv.leftovers(), srv.leftovers()


# ---- the pool ----

def test_pool_serves_creations_warm(server_factory):
    srv = server_factory(pool=2)
    assert wait_until(lambda: srv.readyz()["pool_ready"] == 2, 5), srv.readyz()
    rz = srv.readyz()
    assert rz["status"] == "ready" and rz["pool_target"] == 2 and rz["sandboxes"] == 0
    m0 = srv.metrics()
    hits0 = m0['execbox_pool_claims_total{result="hit"}']
    sid = srv.create()["id"]
    m1 = srv.metrics()
    assert m1['execbox_pool_claims_total{result="hit"}'] == hits0 + 1, "a default create did not use the pool"
    assert m1['execbox_pool_claims_total{result="miss"}'] == m0['execbox_pool_claims_total{result="miss"}']
    assert srv.readyz()["sandboxes"] == 1
    # The pool refills.
    assert wait_until(lambda: srv.readyz()["pool_ready"] == 2, 5), srv.readyz()
    assert srv.metrics()["execbox_pool_ready"] == 2
    # A pooled sandbox is a full sandbox: it runs commands and is fresh.
    assert srv.exec(sid, cmd="find /tmp /home/user -mindepth 1 | wc -l; echo ok")["stdout"] == "0\nok\n"
    # Different memory/pids/cpus are set on the claimed sandbox: still a hit, and enforced.
    sid2 = srv.create(limits={"memory": 200 << 20, "pids": 50})["id"]
    m2 = srv.metrics()
    assert m2['execbox_pool_claims_total{result="hit"}'] == hits0 + 2
    got = srv.get(f"/v1/sandboxes/{sid2}").json()
    assert got["limits"]["memory"] == 200 << 20 and got["limits"]["pids"] == 50
    limit = None
    for cg in sf.sandbox_cgroups(srv, sid2):
        for name in ("memory.limit_in_bytes", "memory.max"):
            if os.path.exists(os.path.join(cg, name)):
                with open(os.path.join(cg, name)) as f:
                    limit = int(f.read())
    assert limit == 200 << 20, f"the claimed sandbox's memory limit is {limit}, not the 200 MiB asked for"
    # A different disk size cannot come from the pool: a miss, still a working sandbox.
    sid3 = srv.create(limits={"disk": 64 << 20})["id"]
    m3 = srv.metrics()
    assert m3['execbox_pool_claims_total{result="miss"}'] == m2['execbox_pool_claims_total{result="miss"}'] + 1
    assert srv.exec(sid3, cmd="echo cold")["stdout"] == "cold\n"
    # Pooled sandboxes are nobody's: they are not listed.
    assert len(srv.get("/v1/sandboxes").json()["sandboxes"]) == 3


def test_pool_zero_always_misses(server_factory):
    srv = server_factory(pool=0)
    assert srv.readyz()["pool_ready"] == 0
    srv.create()
    m = srv.metrics()
    assert m['execbox_pool_claims_total{result="hit"}'] == 0 and m['execbox_pool_claims_total{result="miss"}'] == 1
    time.sleep(0.2)
    assert srv.readyz()["pool_ready"] == 0


def test_pooled_sandboxes_do_not_share_state(server_factory):
    srv = server_factory(pool=2)
    a = srv.create()["id"]
    srv.sh(a, "echo secret > /tmp/s; echo secret > /home/user/s")
    srv.remove(a)
    for _ in range(3):
        b = srv.create()["id"]
        assert srv.exec(b, cmd="cat /tmp/s /home/user/s 2>&1; true")["stdout"].count("secret") == 0
        srv.remove(b)


# ---- metrics ----

def test_metrics_is_prometheus_text(server_factory):
    srv = server_factory(pool=0)
    r = srv.get("/metrics")
    expect(r, 200)
    assert r.headers["Content-Type"].startswith("text/plain")
    m = sf.parse_prometheus(r.text)
    types = m["__types__"]
    assert types["execbox_sandboxes"] == "gauge"
    assert types["execbox_execs_total"] == "counter"
    assert types["execbox_exec_duration_seconds"] == "histogram"
    assert m["execbox_sandboxes"] == 0
    a = srv.create()["id"]
    b = srv.create()["id"]
    assert srv.metrics()["execbox_sandboxes"] == 2
    before = srv.metrics()

    def count(mm, st):
        return mm[f'execbox_execs_total{{status="{st}"}}']

    srv.exec(a, cmd="true")
    srv.exec(a, cmd="true")
    srv.exec(b, cmd="exit 3")
    srv.exec(b, cmd="sleep 5", timeout_s=0.2)
    srv.exec(a, cmd="seq 1 1000", output_limit=100)
    after = srv.metrics()
    assert count(after, "ok") == count(before, "ok") + 2
    assert count(after, "exit_nonzero") == count(before, "exit_nonzero") + 1
    assert count(after, "timeout") == count(before, "timeout") + 1
    assert count(after, "output_limit") == count(before, "output_limit") + 1
    # The histogram: cumulative, ends at +Inf == _count, and _sum grew.
    buckets = [(k, v) for k, v in after.items() if k.startswith("execbox_exec_duration_seconds_bucket")]
    les = [k.split('le="')[1].rstrip('"}') for k, _ in buckets]
    assert les[-1] == "+Inf" and len(les) >= 5
    vals = [v for _, v in buckets]
    assert vals == sorted(vals), f"histogram buckets are not cumulative: {buckets}"
    assert vals[-1] == after["execbox_exec_duration_seconds_count"]
    assert after["execbox_exec_duration_seconds_count"] == before["execbox_exec_duration_seconds_count"] + 5
    assert after["execbox_exec_duration_seconds_sum"] >= before["execbox_exec_duration_seconds_sum"] + 0.15   # the 0.2 s timeout
    le_100 = after['execbox_exec_duration_seconds_bucket{le="0.1"}'] - before['execbox_exec_duration_seconds_bucket{le="0.1"}']
    le_500 = after['execbox_exec_duration_seconds_bucket{le="0.5"}'] - before['execbox_exec_duration_seconds_bucket{le="0.5"}']
    assert le_100 == 4 and le_500 == 5, (le_100, le_500)
    srv.remove(a)
    m = srv.metrics()
    assert m["execbox_sandboxes"] == 1 and m["execbox_sandboxes_deleted_total"] >= 1
    assert m["execbox_sandboxes_created_total"] == 2
    assert m["execbox_uptime_seconds"] >= 0


def test_metrics_need_the_token(server_factory):
    tok = "metrics-token-0123456789abcdef"
    srv = server_factory(tokens=[tok])
    expect_error(srv.get("/metrics", token=None), 401, "unauthorized")
    expect(srv.get("/metrics"), 200)


# ---- neighbours ----

def test_a_second_server_leaves_the_first_servers_sandboxes_alone(server_factory):
    first = server_factory(pool=0)
    sid = first.create()["id"]
    assert first.exec(sid, cmd="echo alive")["stdout"] == "alive\n"
    second = server_factory(pool=0)
    expect(second.get("/healthz"), 200)
    r = first.post(f"/v1/sandboxes/{sid}/exec", {"cmd": "echo still alive"})
    assert r.status_code == 200 and r.json().get("stdout") == "still alive\n", (
        f"BUG: starting a second execbox serve killed the first server's sandbox {sid} (exec now answers "
        f"{r.status_code} {r.text[:200]}); server.c calls xb_cgroup_sys_reap_stale(..., NULL) at start, which "
        f"kills and removes every execbox-* cgroup on the host, live or not. Second server's log: "
        f"{second.stderr()[-300:]!r}")
