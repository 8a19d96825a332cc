"""`execbox serve` under awkward and heavy clients: sockets that stall
half-way through a request, clients that leave in the middle of a command,
and many sandboxes running commands at once."""
from __future__ import annotations

import concurrent.futures as cf
import json
import re
import socket
import threading
import time

import pytest

import server_fixture as sf
from server_fixture import expect, expect_error, server, server_factory  # noqa: F401


def timed(fn, *a, **kw):
    t0 = time.monotonic()
    v = fn(*a, **kw)
    return v, time.monotonic() - t0


def test_stalled_clients_do_not_block_others(server):
    sid = server.create()["id"]
    stalled = []
    partials = [
        b"POST /v1/sandboxes/" + sid.encode() + b"/exec HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"cmd\":",
        b"GET /v1/sandboxes HTTP/1.1\r\nHost: x\r\nX-Slow: ",
        b"POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\"",
        b"GE",
        b"",
    ]
    try:
        for i in range(50):
            s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            s.sendall(partials[i % len(partials)])
            stalled.append(s)
        time.sleep(0.2)
        worst = 0.0
        for _ in range(10):
            r, t = timed(server.get, "/healthz", timeout=5)
            expect(r, 200)
            worst = max(worst, t)
            res, t = timed(server.exec, sid, cmd="echo ok", timeout=5)
            assert res["stdout"] == "ok\n"
            worst = max(worst, t)
        new, t = timed(server.create)
        worst = max(worst, t)
        assert worst < 1.0, f"with 50 stalled sockets a normal request took {worst:.3f}s"
        # A fresh connection each time, too.
        for _ in range(5):
            sess = server.session()
            r, t = timed(sess.get, server.url + "/v1/sandboxes", timeout=5)
            sess.close()
            expect(r, 200)
            assert t < 1.0, f"a new connection waited {t:.3f}s behind stalled ones"
        server.remove(new["id"])
    finally:
        for s in stalled:
            s.close()
    # The half-sent exec never ran; the server is fine once they leave.
    time.sleep(0.2)
    assert server.get(f"/v1/sandboxes/{sid}/processes").json()["processes"] == []
    assert server.exec(sid, cmd="echo after")["stdout"] == "after\n"


def test_many_idle_keepalive_connections(server):
    socks = []
    try:
        for _ in range(200):
            socks.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
        r, t = timed(server.get, "/healthz")
        expect(r, 200)
        assert t < 1.0, f"/healthz took {t:.3f}s with 200 idle connections open"
    finally:
        for s in socks:
            s.close()


def _ps(server, sid) -> str:
    return server.exec(sid, cmd="ps -eo pid,args", user="root")["stdout"]


def _wait_gone(server, sid, marker, timeout=5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if marker not in _ps(server, sid):
            return True
        time.sleep(0.1)
    return False


def test_client_that_disconnects_mid_exec_gets_its_command_killed(server):
    sid = server.create()["id"]
    m0 = server.metrics()
    marker = "sleep 31.25"
    body = json.dumps({"cmd": f"{marker}; echo never"}).encode()
    s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    s.sendall(f"POST /v1/sandboxes/{sid}/exec HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    deadline = time.monotonic() + 5
    while marker not in _ps(server, sid):
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.05)
    s.close()
    assert _wait_gone(server, sid, marker), \
        f"the client left, yet its command runs on: {_ps(server, sid)}"
    # Nothing of it is tracked either, and it is counted as killed.
    assert server.get(f"/v1/sandboxes/{sid}/processes").json()["processes"] == []
    m1 = server.metrics()
    assert m1['execbox_execs_total{status="killed"}'] == m0['execbox_execs_total{status="killed"}'] + 1
    assert server.exec(sid, cmd="echo fine")["stdout"] == "fine\n"


def test_client_that_disconnects_mid_sse_gets_its_command_killed(server):
    sid = server.create()["id"]
    marker = "sleep 32.5"
    s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    body = json.dumps({"cmd": f"echo started; {marker}"}).encode()
    s.sendall(f"POST /v1/sandboxes/{sid}/exec HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n"
              f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    got = b""
    while b"started" not in got:
        chunk = s.recv(4096)
        assert chunk, "the stream ended early"
        got += chunk
    s.close()
    assert _wait_gone(server, sid, marker), f"the SSE client left, yet its command runs on: {_ps(server, sid)}"


def test_client_that_leaves_a_wait_does_not_kill_the_process(server):
    sid = server.create()["id"]
    pid = expect(server.post(f"/v1/sandboxes/{sid}/processes", {"cmd": "sleep 33.75"}), 201).json()["pid"]
    body = json.dumps({"timeout_s": 30}).encode()
    s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    s.sendall(f"POST /v1/sandboxes/{sid}/processes/{pid}/wait HTTP/1.1\r\nHost: x\r\n"
              f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    time.sleep(0.3)
    s.close()
    time.sleep(0.5)
    assert "sleep 33.75" in _ps(server, sid), "leaving a wait killed a background process"
    assert server.get(f"/v1/sandboxes/{sid}/processes/{pid}").json()["running"]
    # And a long-poll read that is abandoned, likewise.
    s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    s.sendall(f"GET /v1/sandboxes/{sid}/processes/{pid}/output?stdout_offset=0&wait_s=30 HTTP/1.1\r\n"
              f"Host: x\r\n\r\n".encode())
    time.sleep(0.3)
    s.close()
    time.sleep(0.3)
    assert server.get(f"/v1/sandboxes/{sid}/processes/{pid}").json()["running"]
    expect(server.post(f"/v1/sandboxes/{sid}/processes/{pid}/signal", {"signal": "KILL"}), 200)


@pytest.mark.slow
def test_twenty_sandboxes_four_concurrent_execs_each(server):
    n_sb, per = 20, 4
    local = threading.local()

    def sess():
        if not hasattr(local, "s"):
            local.s = server.session()
        return local.s

    with cf.ThreadPoolExecutor(max_workers=n_sb) as pool:
        created = list(pool.map(lambda _: server.create(session=sess()), range(n_sb)))
    ids = [c["id"] for c in created]
    assert len(set(ids)) == n_sb
    # One long-running marker process per sandbox, to check process isolation.
    for i, sid in enumerate(ids):
        expect(server.post(f"/v1/sandboxes/{sid}/processes", {"argv": ["sleep", f"1000.{i:03d}"]},
                           session=sess()), 201)

    def job(args):
        i, j = args
        sid = ids[i]
        token = f"sb{i}-job{j}-{time.monotonic_ns()}"
        cmd = (f"echo {token} > /tmp/f-{j} && sleep 0.2 && cat /tmp/f-{j} && hostname && "
               f"ls /tmp | sort | tr '\\n' ' ' && echo && ps -eo args | grep -c '^sleep 1000\\.' ; "
               f"ps -eo args | grep '^sleep 1000\\.' ")
        res = server.exec(sid, cmd=cmd, session=sess(), timeout=120)
        return i, j, token, res

    with cf.ThreadPoolExecutor(max_workers=n_sb * per) as pool:
        t0 = time.monotonic()
        results = list(pool.map(job, [(i, j) for i in range(n_sb) for j in range(per)]))
        took = time.monotonic() - t0
    hostnames = set()
    for i, j, token, res in results:
        assert res["status"] == "ok", (i, j, res)
        lines = res["stdout"].splitlines()
        assert lines[0] == token, f"sandbox {i} job {j} read another job's file: {lines[0]!r} != {token!r}"
        hostnames.add(lines[1])
        files = set(lines[2].split())
        assert files <= {f"f-{k}" for k in range(per)}, f"sandbox {i} sees files not its own: {files}"
        assert lines[3] == "1", f"sandbox {i} sees {lines[3]} marker processes: {lines[4:]}"
        assert lines[4] == f"sleep 1000.{i:03d}", f"sandbox {i} sees another sandbox's process: {lines[4:]}"
    assert len(hostnames) == 1, f"hostnames differ: {hostnames}"
    assert took < 60, f"80 concurrent execs took {took:.1f}s"
    # Afterwards each sandbox has exactly its 4 files, and each job's content.
    for i, sid in enumerate(ids):
        out = server.exec(sid, cmd="cat /tmp/f-0 /tmp/f-1 /tmp/f-2 /tmp/f-3", session=sess())["stdout"].split()
        assert all(line.startswith(f"sb{i}-job") for line in out) and len(out) == per, (i, out)
    with cf.ThreadPoolExecutor(max_workers=n_sb) as pool:
        list(pool.map(lambda sid: server.remove(sid), ids))
    assert server.get("/v1/sandboxes").json()["sandboxes"] == []


@pytest.mark.slow
def test_concurrent_create_and_delete_churn(server):
    def churn(k):
        s = server.session()
        for _ in range(5):
            sid = server.create(session=s)["id"]
            assert server.exec(sid, argv=["echo", str(k)], session=s)["stdout"] == f"{k}\n"
            expect(server.delete(f"/v1/sandboxes/{sid}", session=s), 204)
        s.close()

    with cf.ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(churn, range(8)))
    assert server.get("/v1/sandboxes").json()["sandboxes"] == []
    m = server.metrics()
    assert m["execbox_sandboxes"] == 0
    assert m["execbox_sandboxes_created_total"] == 40


def test_exec_output_flood_does_not_starve_other_sandboxes(server):
    a = server.create()["id"]
    b = server.create()["id"]
    flood = threading.Thread(target=lambda: server.exec(a, cmd="timeout 3 yes | head -c 300000000 > /dev/stdout",
                                                        session=server.session(), timeout=60))
    flood.start()
    time.sleep(0.3)
    worst = 0.0
    for _ in range(10):
        res, t = timed(server.exec, b, cmd="echo quick", session=server.session())
        assert res["stdout"] == "quick\n"
        worst = max(worst, t)
    flood.join(60)
    assert worst < 2.0, f"another sandbox's output flood delayed a trivial exec to {worst:.2f}s"


def test_too_many_sandboxes_is_429(server_factory):
    srv = server_factory("--max-sandboxes", "3", pool=0)
    ids = [srv.create()["id"] for _ in range(3)]
    e = expect_error(srv.post("/v1/sandboxes", {}), 429, "too_many_sandboxes")
    assert re.search(r"\b3\b", e["message"])
    srv.remove(ids[0])
    ids[0] = srv.create()["id"]
    for sid in ids:
        srv.remove(sid)
