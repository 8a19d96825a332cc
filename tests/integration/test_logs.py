"""Logs (issue 13, item 2): the access log on stderr (its format, no token,
route templates, journald priority prefixes), no libmicrohttpd option-order
warning under --verbose, and the per-sandbox audit log at
GET /v1/sandboxes/{id}/events (order, paging, SSE follow, kept after
delete for --audit-keep, bounded by --audit-max, no secrets), and
`execbox logs`."""
from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time

import requests

from server_fixture import expect, server, server_factory, sse_events  # noqa: F401

TOKEN = "logs-token-0123456789abcdef"
OTHER = "logs-other-0123456789abcdef"
ACCESS_RE = re.compile(r"^(<6>)?execbox: access: id=([0-9a-f]{16}) tenant=(\S+) method=(\S+) route=(\S+) "
                       r"status=(\S+) bytes=(\d+) duration_ms=(\d+\.\d{3})( end=\S+)?$")


def access_lines(srv, n: int, timeout: float = 5.0) -> list[re.Match]:
    deadline = time.monotonic() + timeout
    while True:
        lines = [m for m in (ACCESS_RE.match(x) for x in srv.stderr().splitlines()) if m]
        if len(lines) >= n or time.monotonic() > deadline:
            return lines
        time.sleep(0.05)


def events(srv, sid, token="default", **q) -> requests.Response:
    qs = "&".join(f"{k}={v}" for k, v in q.items())
    return srv.get(f"/v1/sandboxes/{sid}/events" + (f"?{qs}" if qs else ""), token=token)


def lines_of(r: requests.Response) -> list[dict]:
    expect(r, 200)
    assert r.headers["Content-Type"].startswith("application/x-ndjson")
    return [json.loads(x) for x in r.text.splitlines()]


def test_access_log_lines(server_factory):
    srv = server_factory(tokens=[TOKEN], pool=0)
    sid = srv.create()["id"]
    srv.exec(sid, cmd="true")
    r = srv.get(f"/v1/sandboxes/{sid}")
    expect(r, 200)
    rid = r.headers["X-Request-Id"]
    assert srv.get("/v1/nothing/here").status_code == 404
    assert srv.get(f"/v1/sandboxes/{sid}", token=None).status_code == 401
    got = access_lines(srv, 5)
    text = srv.stderr()
    assert TOKEN not in text
    assert sid not in "\n".join(m.group(0) for m in got), "the raw path (with the id) is in the access log"
    rows = [(m.group(4), m.group(5), m.group(6), m.group(3)) for m in got]
    assert ("POST", "/v1/sandboxes", "201", "0") in rows
    assert ("POST", "/v1/sandboxes/{}/exec", "200", "0") in rows
    assert ("GET", "/v1/sandboxes/{}", "200", "0") in rows
    assert ("GET", "-", "404", "-") in rows
    assert ("GET", "/v1/sandboxes/{}", "401", "-") in rows
    mine = [m for m in got if m.group(2) == rid]
    assert len(mine) == 1 and int(mine[0].group(7)) == len(r.content)
    assert not any(m.group(1) for m in got), "a priority prefix without the journal"


def test_access_log_off(server_factory):
    srv = server_factory("--access-log=off", pool=0)
    srv.create()
    assert srv.get("/healthz").status_code == 200
    time.sleep(0.3)
    assert "access:" not in srv.stderr()


def test_journal_prefix(server_factory, tmp_path):
    state = str(tmp_path / "jstate")
    errpath = state + ".stderr"
    open(errpath, "wb").close()
    st = os.stat(errpath)
    env = dict(os.environ, JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
    env.pop("EXECBOX_TOKEN", None)
    srv = server_factory(pool=0, env=env, state_dir=state)
    assert srv.get("/healthz").status_code == 200
    got = access_lines(srv, 1)
    assert got and all(m.group(1) == "<6>" for m in got), srv.stderr()
    # A JOURNAL_STREAM that names another file is not the journal.
    env2 = dict(env, JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino + 12345}")
    other = server_factory(pool=0, env=env2)
    assert other.get("/healthz").status_code == 200
    got = access_lines(other, 1)
    assert got and not any(m.group(1) for m in got)


def test_verbose_has_no_mhd_option_warning(server_factory):
    srv = server_factory("--verbose", pool=0)
    assert srv.get("/healthz").status_code == 200
    time.sleep(0.2)
    assert "EXTERNAL_LOGGER" not in srv.stderr() and "MHD logger" not in srv.stderr()


def test_audit_order_and_no_secrets(server_factory):
    srv = server_factory("--audit-keep=2", tokens=[TOKEN, OTHER], pool=0)
    sid = srv.create(env={"API_KEY": "create-secret-4711"})["id"]
    res = srv.exec(sid, argv=["sh", "-c", "exit 3"], env={"PASSWORD": "exec-secret-0815"}, stdin="stdin-secret-42")
    assert res["exit_code"] == 3
    expect(srv.request("PUT", f"/v1/sandboxes/{sid}/files?path=/tmp/a.txt", data=b"file-secret-1234"), 200)
    expect(srv.delete(f"/v1/sandboxes/{sid}/files?path=/tmp/a.txt"), 200)
    evs = lines_of(events(srv, sid))
    assert [e["type"] for e in evs] == ["create", "exec", "file_write", "file_delete"]
    assert [e["offset"] for e in evs] == [0, 1, 2, 3]
    assert "API_KEY" in evs[0]["env"]
    ex = evs[1]
    assert ex["argv"] == ["sh", "-c", "exit 3"] and ex["status"] == "exit_nonzero" and ex["exit_code"] == 3
    assert ex["user"] == "user" and ex["cwd"] and "duration_ms" in ex and "PASSWORD" in ex["env"]
    assert evs[2]["path"] == "/tmp/a.txt" and evs[2]["size"] == 16
    # Another tenant sees nothing.
    assert events(srv, sid, token=OTHER).status_code == 404
    srv.remove(sid)
    r = srv.get(f"/v1/sandboxes/{sid}/events", headers={"Accept": "application/json"})
    expect(r, 200)
    body = r.json()
    assert body["deleted"] is True and body["events"][-1]["type"] == "delete"
    for secret in ("create-secret-4711", "exec-secret-0815", "stdin-secret-42", "file-secret-1234"):
        assert secret not in r.text
    assert events(srv, sid, token=OTHER).status_code == 404
    deadline = time.monotonic() + 10
    while events(srv, sid).status_code == 200:
        assert time.monotonic() < deadline, "the deleted sandbox's log outlived --audit-keep"
        time.sleep(0.25)
    assert events(srv, sid).status_code == 404


def test_offset_paging(server):
    sid = server.create()["id"]
    for i in range(5):
        server.exec(sid, cmd=f"echo {i}")
    r = events(server, sid, offset=1, limit=2)
    page = lines_of(r)
    assert [e["offset"] for e in page] == [1, 2] and r.headers["X-Next-Offset"] == "3"
    page = lines_of(events(server, sid, offset=3, limit=100))
    assert [e["offset"] for e in page] == [3, 4, 5]
    assert lines_of(events(server, sid, offset=99)) == []
    assert events(server, sid, offset="x").status_code == 400
    assert events(server, "nosuchsandbox").status_code == 404


def test_sse_follow(server):
    sid = server.create()["id"]
    got: list = []
    with requests.get(f"{server.url}/v1/sandboxes/{sid}/events", headers={"Accept": "text/event-stream"},
                      stream=True, timeout=30) as resp:
        assert resp.status_code == 200 and resp.headers["Content-Type"].startswith("text/event-stream")
        t = threading.Thread(target=lambda: got.extend(sse_events(resp, time.monotonic())))
        t.start()
        time.sleep(0.3)
        server.exec(sid, cmd="echo followed")
        time.sleep(0.3)
        server.remove(sid)
        t.join(10)
        assert not t.is_alive(), "the stream did not end when the sandbox was deleted"
    names = [(n, d.get("type")) for _, n, d in got]
    assert names[0] == ("event", "create")
    assert ("event", "exec") in names and names[-2] == ("event", "delete") and names[-1][0] == "result"
    ex = [d for _, n, d in got if d.get("type") == "exec"][0]
    assert ex["argv"][-1] == "echo followed"


def test_bounded(server_factory):
    srv = server_factory("--audit-max=5", pool=0)
    sid = srv.create()["id"]
    for i in range(12):
        expect(srv.post(f"/v1/sandboxes/{sid}/files/mkdir", {"path": f"/tmp/d{i}"}), 200)
    r = srv.get(f"/v1/sandboxes/{sid}/events", headers={"Accept": "application/json"})
    body = r.json()
    assert len(body["events"]) == 5 and body["dropped"] == 8
    assert body["first_offset"] == 8 and body["next_offset"] == 13
    assert [e["offset"] for e in body["events"]] == [8, 9, 10, 11, 12]
    assert body["events"][-1]["type"] == "file_mkdir" and body["events"][-1]["path"] == "/tmp/d11"
    # An offset that was dropped starts at the oldest kept.
    assert [e["offset"] for e in lines_of(events(srv, sid, offset=2))][0] == 8


def test_execbox_logs(server, execbox):
    sid = server.create()["id"]
    server.exec(sid, cmd="echo one")
    env = dict(os.environ, EXECBOX_URL=server.url)
    env.pop("EXECBOX_TOKEN", None)
    p = subprocess.run([execbox, "logs", sid], capture_output=True, text=True, env=env, timeout=30)
    assert p.returncode == 0, p.stderr
    types = [json.loads(x)["type"] for x in p.stdout.splitlines()]
    assert types == ["create", "exec"]
    p = subprocess.run([execbox, "logs", "--offset", "1", sid], capture_output=True, text=True, env=env, timeout=30)
    assert [json.loads(x)["offset"] for x in p.stdout.splitlines()] == [1]
    f = subprocess.Popen([execbox, "logs", "-f", sid], stdout=subprocess.PIPE, text=True, env=env)
    try:
        time.sleep(0.5)
        server.exec(sid, cmd="echo two")
        server.remove(sid)
        out, _ = f.communicate(timeout=15)
    finally:
        if f.poll() is None:
            f.kill()
            f.wait()
    assert f.returncode == 0
    types = [json.loads(x)["type"] for x in out.splitlines()]
    assert types == ["create", "exec", "exec", "delete"]
    p = subprocess.run([execbox, "logs", "nosuchsandbox"], capture_output=True, text=True, env=env, timeout=30)
    assert p.returncode == 125 and "no sandbox" in p.stderr
