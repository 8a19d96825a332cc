"""Every REST endpoint of src/rest/api.c against a real `execbox serve`:
sandboxes (create, list, get, delete, keepalive, expiry), exec (cmd, argv,
cwd, env, stdin, timeouts, output caps, the soft timeout and reattach by
offset, server-sent events), background processes, users, and a memory
limit that kills a command but not its sandbox."""
from __future__ import annotations

import json
import os
import re
import threading
import time

import pytest
import requests

import server_fixture as sf
import xbhost
from server_fixture import expect, expect_error, server, server_factory, sse_events  # noqa: F401

ID_RE = re.compile(r"^[a-z0-9]{26,63}$")


def cgroups_of(server, sid: str) -> dict[str, int]:
    """The sandbox's host cgroup directories, {path: inode}."""
    return sf.sandbox_cgroups(server, sid)


def wait_until(pred, timeout: float, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(step)


# ---- sandboxes ----

def test_create_returns_201_and_its_fields(server):
    r = server.post("/v1/sandboxes", {"limits": {"memory": 256 << 20, "pids": 64, "cpus": 0.5},
                                      "metadata": {"owner": "test", "n": "1"}, "timeout_s": 120})
    expect(r, 201)
    assert "application/json" in r.headers["Content-Type"]
    sb = r.json()
    assert ID_RE.match(sb["id"]), f"id must be lowercase [a-z0-9], >= 128 bits, a DNS label: {sb['id']!r}"
    assert sb["state"] in ("starting", "running"), sb
    assert sb["limits"]["memory"] == 256 << 20 and sb["limits"]["pids"] == 64 and sb["limits"]["cpus"] == 0.5
    assert sb["metadata"] == {"owner": "test", "n": "1"}
    assert sb["timeout_s"] == 120
    assert 115_000 <= sb["expires_in_ms"] <= 120_000, sb
    assert sb["processes"] == 0
    assert isinstance(sb["created_at_ms"], int)
    # Defaults apply when nothing is asked.
    d = server.create()
    assert d["timeout_s"] == 900 and d["limits"]["memory"] > 0 and d["limits"]["pids"] > 0
    assert d["id"] != sb["id"]
    # The limits are the cgroup's, not just words in JSON.
    limit = None
    for cg in cgroups_of(server, sb["id"]):
        for name in ("memory.limit_in_bytes", "memory.max"):
            path = os.path.join(cg, name)
            if os.path.exists(path):
                with open(path) as f:
                    limit = int(f.read())
    assert limit == 256 << 20, f"the sandbox cgroup's memory limit is {limit}, not 256 MiB"


def test_created_at_ms_is_a_wall_clock_time(server):
    before = time.time() * 1000
    sb = server.create()
    after = time.time() * 1000
    assert before - 1000 <= sb["created_at_ms"] <= after + 1000, (
        f"BUG: created_at_ms={sb['created_at_ms']} is not Unix time in ms (now {int(after)}); it looks like "
        f"milliseconds since boot (CLOCK_MONOTONIC), which a client cannot use as a date")


def test_list_get_delete(server):
    a, b = server.create(), server.create()
    listed = expect(server.get("/v1/sandboxes"), 200).json()["sandboxes"]
    assert sorted(s["id"] for s in listed) == sorted([a["id"], b["id"]])
    got = expect(server.get(f"/v1/sandboxes/{a['id']}"), 200).json()
    assert got["id"] == a["id"] and got["state"] == "running"
    cgs = cgroups_of(server, a["id"])
    r = server.delete(f"/v1/sandboxes/{a['id']}")
    expect(r, 204)
    assert r.content == b""
    # A deleted sandbox's tombstone says so (issue 12, section 5): 410, not a bare 404.
    expect_error(server.get(f"/v1/sandboxes/{a['id']}"), 410, "sandbox_gone")
    expect_error(server.delete(f"/v1/sandboxes/{a['id']}"), 410, "sandbox_gone")
    expect_error(server.post(f"/v1/sandboxes/{a['id']}/exec", {"cmd": "true"}), 410, "sandbox_gone")
    assert [s["id"] for s in server.get("/v1/sandboxes").json()["sandboxes"]] == [b["id"]]
    assert wait_until(lambda: sf.cgroups_gone(cgs), 3), f"the deleted sandbox's cgroups remain: {cgs}"
    server.sh(b["id"], "true")    # the other is unaffected


def test_delete_kills_everything_inside(server):
    sid = server.create()["id"]
    expect(server.post(f"/v1/sandboxes/{sid}/processes", {"cmd": "sleep 1000 & sleep 1001 & wait"}), 201)
    expect(server.post(f"/v1/sandboxes/{sid}/processes", {"cmd": "setsid sleep 1002 & wait", "user": "root"}), 201)
    time.sleep(0.3)
    cgs = cgroups_of(server, sid)
    table = xbhost.proc_table()
    inside = sf.cgroup_tasks(cgs)
    mine = {(pid, table[pid].start) for pid in inside if pid in table}
    assert sum(1 for pid in inside if pid in table and table[pid].name == "sleep") >= 3, (inside, mine)
    server.remove(sid)
    gone = wait_until(lambda: sf.cgroups_gone(cgs), 3)
    assert gone, f"cgroups left after DELETE: {cgs}"
    now = xbhost.proc_table()
    still = [now[pid] for pid, start in mine if pid in now and now[pid].start == start and now[pid].state != "Z"]
    assert not still, f"processes of the deleted sandbox are alive: {still}"


def test_keepalive_extends_expires_in_ms(server):
    sid = server.create(timeout_s=30)["id"]
    first = server.get(f"/v1/sandboxes/{sid}").json()
    assert first["expires_in_ms"] <= 30_000
    r = server.post(f"/v1/sandboxes/{sid}/keepalive", {"timeout_s": 600})
    expect(r, 200)
    body = r.json()
    assert body["id"] == sid and body["timeout_s"] == 600
    assert 590_000 <= body["expires_in_ms"] <= 600_000, body
    assert server.get(f"/v1/sandboxes/{sid}").json()["expires_in_ms"] > 500_000
    # An empty keepalive renews the lease with the current timeout.
    time.sleep(1.1)
    r = expect(server.post(f"/v1/sandboxes/{sid}/keepalive"), 200).json()
    assert r["expires_in_ms"] > 599_000, r
    # And a shorter one shortens it.
    r = expect(server.post(f"/v1/sandboxes/{sid}/keepalive", {"timeout_s": 10}), 200).json()
    assert r["expires_in_ms"] <= 10_000 and r["timeout_s"] == 10
    for bad in [{"timeout_s": 0}, {"timeout_s": -5}, {"timeout_s": "60"}, {"ttl": 60}, {"timeout_s": 10 ** 9}]:
        expect_error(server.post(f"/v1/sandboxes/{sid}/keepalive", bad), 400, "invalid_request")


@pytest.mark.slow
def test_expiry_removes_the_sandbox_and_its_cgroups(server):
    m0 = server.metrics()
    t0 = time.monotonic()
    sid = server.create(timeout_s=2)["id"]
    keep = server.create(timeout_s=60)["id"]
    server.sh(sid, "true")
    cgs = cgroups_of(server, sid)
    time.sleep(1.0)
    expect(server.get(f"/v1/sandboxes/{sid}"), 200)
    # Gone, with a tombstone that says so (issue 12, section 5): 410.
    gone = wait_until(lambda: server.get(f"/v1/sandboxes/{sid}").status_code == 410, 5, 0.1)
    elapsed = time.monotonic() - t0
    assert gone, "the sandbox did not expire"
    assert 1.8 <= elapsed <= 4.0, f"expired after {elapsed:.2f}s, asked for 2s"
    assert wait_until(lambda: sf.cgroups_gone(cgs), 3), f"cgroups of the expired sandbox remain: {cgs}"
    assert sid not in [s["id"] for s in server.get("/v1/sandboxes").json()["sandboxes"]]
    m1 = server.metrics()
    assert m1["execbox_sandboxes_expired_total"] == m0["execbox_sandboxes_expired_total"] + 1
    server.sh(keep, "true")


@pytest.mark.slow
def test_exec_does_not_lose_its_sandbox_to_expiry_mid_command(server):
    """A command that runs past the sandbox's idle timeout must not be killed
    by the expiry: the client is using the sandbox (E2B#873: sandboxes that
    vanish unexpectedly)."""
    sid = server.create(timeout_s=2)["id"]
    res = server.exec(sid, cmd="sleep 3; echo done", timeout=20)
    assert res["status"] == "ok" and res["stdout"] == "done\n", (
        f"BUG: a sandbox with timeout_s=2 expired while an exec was running in it (the lease is renewed only "
        f"when the exec starts); the command was killed: {res}")


# ---- exec ----

def test_exec_cmd_and_argv(server):
    sid = server.create()["id"]
    r = server.exec(sid, cmd="echo hello; echo oops >&2; exit 3")
    assert r["status"] == "exit_nonzero" and r["exit_code"] == 3 and r["signal"] is None
    assert r["stdout"] == "hello\n" and r["stderr"] == "oops\n"
    assert r["stdout_bytes"] == 6 and r["stderr_bytes"] == 5
    assert not r["stdout_truncated"] and not r["stderr_truncated"]
    for k in ("duration_ms", "cpu_ms", "peak_memory", "pid"):
        assert isinstance(r[k], int) and r[k] >= 0, (k, r)
    ok = server.exec(sid, argv=["/bin/echo", "a  b", "$HOME", "*"])
    assert ok["status"] == "ok" and ok["exit_code"] == 0
    assert ok["stdout"] == "a  b $HOME *\n", "argv must not go through a shell"
    # argv[0] is looked up in PATH.
    assert server.exec(sid, argv=["echo", "via PATH"])["stdout"] == "via PATH\n"
    sh = server.exec(sid, argv=["sh", "-c", 'echo "$0:$1"', "zero", "one"])
    assert sh["stdout"] == "zero:one\n"
    # A shell command line with pipes, quoting and a here-doc.
    r = server.exec(sid, cmd="printf '%s\\n' 'x y' | tr a-z A-Z; cat <<EOF\nheredoc\nEOF")
    assert r["stdout"] == "X Y\nheredoc\n"
    # Killed by a signal of its own.
    r = server.exec(sid, cmd="kill -SEGV $$")
    assert r["exit_code"] is None and r["signal"] == 11 and r["status"] != "ok", r


def test_exec_cwd(server):
    sid = server.create()["id"]
    assert server.sh(sid, "pwd") == "/home/user\n"
    assert server.exec(sid, cmd="pwd", cwd="/tmp")["stdout"] == "/tmp\n"
    assert server.exec(sid, argv=["pwd"], cwd="/usr/bin")["stdout"] == "/usr/bin\n"
    server.sh(sid, "mkdir -p /home/user/proj/sub && echo data > /home/user/proj/sub/f")
    assert server.exec(sid, cmd="cat f", cwd="/home/user/proj/sub")["stdout"] == "data\n"
    expect_error(server.post(f"/v1/sandboxes/{sid}/exec", {"cmd": "pwd", "cwd": "/nope"}), 400, "bad_cwd")


def test_exec_env_request_and_sandbox_and_no_server_leak(server):
    sid = server.create(env={"SB_VAR": "from-sandbox", "BOTH": "sandbox"})["id"]
    r = server.exec(sid, cmd="env", env={"REQ_VAR": "from-request", "BOTH": "request"})
    env = dict(line.split("=", 1) for line in r["stdout"].splitlines() if "=" in line)
    assert env.get("SB_VAR") == "from-sandbox"
    assert env.get("REQ_VAR") == "from-request"
    assert env.get("BOTH") == "request", "the request's env must override the sandbox's"
    assert env.get("HOME") == "/home/user" and env.get("PATH")
    # The request's env is for that request only.
    r2 = server.exec(sid, cmd="env")
    assert "REQ_VAR" not in r2["stdout"] and "SB_VAR=from-sandbox" in r2["stdout"]
    # The server's own environment never reaches a sandbox, for any user, nor init.
    for user in ("user", "root"):
        out = server.exec(sid, cmd="env; cat /proc/1/environ 2>/dev/null | tr '\\0' '\\n'; "
                                   "cat /proc/self/environ | tr '\\0' '\\n'", user=user)["stdout"]
        for k, v in sf.SECRET_ENV.items():
            assert k not in out and v not in out, f"the server's env var {k} leaked into the sandbox ({user})"
        for k in ("EXECBOX_TOKEN", "PYTEST_CURRENT_TEST", "SUDO_USER", "SSH_AUTH_SOCK"):
            assert f"{k}=" not in out, f"{k} leaked into the sandbox"
    # Invalid names are refused, not passed through.
    for bad in [{"1X": "v"}, {"A-B": "v"}, {"": "v"}, {"X": 5}]:
        expect_error(server.post(f"/v1/sandboxes/{sid}/exec", {"cmd": "true", "env": bad}), 400, "invalid_request")


def test_exec_stdin(server):
    sid = server.create()["id"]
    assert server.exec(sid, cmd="cat", stdin="line1\nline2\n")["stdout"] == "line1\nline2\n"
    assert server.exec(sid, argv=["wc", "-l"], stdin="a\nb\nc\n")["stdout"].strip() == "3"
    big = "x" * (3 << 20)   # more than a pipe holds: the server must pump it
    r = server.exec(sid, cmd="wc -c", stdin=big)
    assert r["stdout"].strip() == str(len(big))
    # No stdin: reading gets EOF at once instead of hanging.
    r = server.exec(sid, cmd="cat; echo eof", timeout_s=5)
    assert r["status"] == "ok" and r["stdout"] == "eof\n"
    # A command that ignores its stdin still finishes.
    assert server.exec(sid, cmd="echo ignored", stdin=big)["status"] == "ok"


def test_exec_timeout_keeps_partial_output(server):
    sid = server.create()["id"]
    t0 = time.monotonic()
    r = server.exec(sid, cmd="echo before; echo err-before >&2; sleep 30; echo after", timeout_s=1)
    elapsed = time.monotonic() - t0
    assert r["status"] == "timeout", r
    assert r["stdout"] == "before\n" and r["stderr"] == "err-before\n", "a timeout must keep the partial output"
    assert r["exit_code"] is None and r["signal"] == 9
    assert 0.9 <= elapsed < 3, f"timeout_s=1 answered after {elapsed:.2f}s"
    assert 900 <= r["duration_ms"] <= 2500
    # The whole command is gone, and the sandbox still works.
    ps = server.sh(sid, "ps -eo args")
    assert "sleep 30" not in ps, f"the timed-out command survives: {ps}"
    assert server.exec(sid, cmd="echo fine", timeout_s=0.5)["stdout"] == "fine\n"
    # Fractional timeouts.
    r = server.exec(sid, cmd="sleep 5", timeout_s=0.3)
    assert r["status"] == "timeout" and r["duration_ms"] < 2000


def test_exec_output_limit_keeps_head_and_tail(server):
    sid = server.create()["id"]
    full = "".join(f"{i}\n" for i in range(1, 2001))
    r = server.exec(sid, cmd="seq 1 2000", output_limit=200)
    assert r["stdout_truncated"] is True and r["stderr_truncated"] is False
    assert r["stdout_bytes"] == len(full)
    assert r["status"] == "output_limit", r["status"]
    out = r["stdout"]
    assert out.startswith(full[:100]), f"the head is missing: {out[:120]!r}"
    assert out.endswith(full[-100:]), f"the tail is missing: {out[-120:]!r}"
    m = re.search(r"(\d+) bytes of stdout dropped", out)
    assert m and int(m.group(1)) == len(full) - 200, f"the marker must say how much was dropped: {out!r}"
    assert len(out) < 200 + 400
    # stderr separately, and a stream under its cap is untouched.
    r = server.exec(sid, cmd="seq 1 2000 >&2; echo small", output_limit=200)
    assert r["stderr_truncated"] and not r["stdout_truncated"] and r["stdout"] == "small\n"
    assert r["stderr"].startswith(full[:100]) and r["stderr"].endswith(full[-100:])
    # Large output at the default cap comes back whole; a big one is cut, not lost.
    r = server.exec(sid, cmd="head -c 500000 /dev/zero | tr '\\0' y")
    assert r["stdout"] == "y" * 500000 and not r["stdout_truncated"]
    r = server.exec(sid, cmd="head -c 50000000 /dev/zero | tr '\\0' z; echo END", timeout=120)
    assert r["stdout_truncated"] and r["stdout_bytes"] == 50000004 and r["stdout"].endswith("zzzEND\n")
    # Invalid UTF-8 is replaced, never breaks the JSON.
    r = server.exec(sid, cmd="printf 'ok \\377\\376 end\\n'")
    assert r["stdout"].startswith("ok ") and r["stdout"].endswith(" end\n")


def test_exec_soft_timeout_then_read_from_offsets_then_wait(server):
    sid = server.create()["id"]
    t0 = time.monotonic()
    r = server.exec(sid, cmd="echo first; sleep 1.5; echo second; sleep 1; echo third >&2; echo fourth",
                    yield_after_s=0.5)
    took = time.monotonic() - t0
    assert r["status"] == "running", r
    assert took < 1.45, f"the soft timeout answered after {took:.2f}s"
    assert r["stdout"] == "first\n" and r["stdout_offset"] == 6 and r["stderr_offset"] == 0
    assert isinstance(r["pid"], int) and r["pid"] > 0
    assert "hint" in r and "output" in r["hint"]
    pid = r["pid"]
    base = f"/v1/sandboxes/{sid}/processes/{pid}"
    listed = server.get(f"/v1/sandboxes/{sid}/processes").json()["processes"]
    assert [p["pid"] for p in listed] == [pid] and listed[0]["running"]
    # Long-poll from the offsets: returns as soon as "second" arrives.
    o = expect(server.get(f"{base}/output?stdout_offset=6&stderr_offset=0&wait_s=10"), 200).json()
    assert o["stdout"] == "second\n" and o["stdout_offset"] == 13 and o["running"], o
    assert time.monotonic() - t0 < 3.0
    # Re-reading from 0 gives everything so far.
    o0 = expect(server.get(f"{base}/output"), 200).json()
    assert o0["stdout"] == "first\nsecond\n"
    # Wait for the end: the full result.
    w = expect(server.post(f"{base}/wait", {"timeout_s": 10}), 200).json()
    assert w["status"] == "ok" and w["exit_code"] == 0
    assert w["stdout"] == "first\nsecond\nfourth\n" and w["stderr"] == "third\n"
    # The rest, from the offsets we held.
    o = expect(server.get(f"{base}/output?stdout_offset=13&stderr_offset=0"), 200).json()
    assert o["stdout"] == "fourth\n" and o["stderr"] == "third\n" and o["running"] is False
    assert o["status"] == "ok" and o["exit_code"] == 0
    # Reads past the end are empty, not errors.
    o = expect(server.get(f"{base}/output?stdout_offset=999&stderr_offset=999"), 200).json()
    assert o["stdout"] == "" and o["stderr"] == ""


def test_exec_soft_timeout_restarts_on_output(server):
    sid = server.create()["id"]
    r = server.exec(sid, cmd="for i in 1 2 3 4 5 6; do echo $i; sleep 0.2; done", yield_after_s=0.6)
    assert r["status"] == "ok" and r["stdout"] == "1\n2\n3\n4\n5\n6\n", \
        f"a command that keeps printing must not be cut by yield_after_s: {r}"


def test_exec_sse_streams_before_the_end(server):
    sid = server.create()["id"]
    t0 = time.monotonic()
    with server.http.post(f"{server.url}/v1/sandboxes/{sid}/exec", stream=True, timeout=30,
                          data=json.dumps({"cmd": "echo one; sleep 1.5; echo two >&2; sleep 1; echo three"}),
                          headers={"Accept": "text/event-stream", "Content-Type": "application/json"}) as resp:
        expect(resp, 200)
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        events = sse_events(resp, t0)
    names = [e[1] for e in events]
    assert names[0] == "start" and names[-1] == "result", names
    assert names.count("result") == 1
    outs = [(t, n, d["data"]) for t, n, d in events if n in ("stdout", "stderr")]
    assert "".join(d for _, n, d in outs if n == "stdout") == "one\nthree\n"
    assert "".join(d for _, n, d in outs if n == "stderr") == "two\n"
    first_out = next(t for t, n, _ in events if n == "stdout")
    t_result = events[-1][0]
    assert t_result >= 2.4, f"the command takes 2.5 s; the result came at {t_result:.2f}s"
    assert first_out < 1.2, f"the first stdout event came at {first_out:.2f}s: not streamed"
    assert t_result - first_out > 1.3, (first_out, t_result)
    # stdout events come before the result, in order.
    idx = [i for i, n in enumerate(names) if n == "stdout"]
    assert idx and max(idx) < len(names) - 1
    result = events[-1][2]
    assert result["status"] == "ok" and result["stdout"] == "one\nthree\n" and result["stderr"] == "two\n"


def test_exec_sse_soft_timeout_and_spawn_error(server):
    sid = server.create()["id"]
    with server.http.post(f"{server.url}/v1/sandboxes/{sid}/exec", stream=True, timeout=30,
                          data=json.dumps({"cmd": "echo a; sleep 3", "yield_after_s": 0.5}),
                          headers={"Accept": "text/event-stream"}) as resp:
        events = sse_events(resp, time.monotonic())
    assert events[-1][1] == "result" and events[-1][2]["status"] == "running"
    pid = events[-1][2]["pid"]
    w = server.post(f"/v1/sandboxes/{sid}/processes/{pid}/wait", {"timeout_s": 10}).json()
    assert w["status"] == "ok" and w["stdout"] == "a\n"
    # A command that cannot start ends the stream with an error event.
    with server.http.post(f"{server.url}/v1/sandboxes/{sid}/exec", stream=True, timeout=30,
                          data=json.dumps({"argv": ["/no/such/program"]}),
                          headers={"Accept": "text/event-stream"}) as resp:
        if resp.status_code == 200:
            events = sse_events(resp, time.monotonic())
            assert events and events[-1][1] in ("error", "result"), events
        else:
            expect_error(resp, 400, "command_not_found")


# ---- background processes ----

def test_processes_start_list_get_output_wait_delete(server):
    sid = server.create()["id"]
    base = f"/v1/sandboxes/{sid}/processes"
    r = server.post(base, {"cmd": "echo started; sleep 1; echo done; exit 4"})
    expect(r, 201)
    p = r.json()
    pid = p["pid"]
    assert p["running"] is True and p["status"] == "running" and pid > 0
    assert "sleep 1" in p["cmd"]
    listed = expect(server.get(base), 200).json()["processes"]
    assert [x["pid"] for x in listed] == [pid]
    g = expect(server.get(f"{base}/{pid}"), 200).json()
    assert g["pid"] == pid and g["running"] is True
    # wait_s long-polls for new output past the offset.
    o = expect(server.get(f"{base}/{pid}/output?wait_s=5"), 200).json()
    assert o["stdout"].startswith("started\n")
    off = o["stdout_offset"]
    t0 = time.monotonic()
    o = expect(server.get(f"{base}/{pid}/output?stdout_offset={off}&wait_s=10"), 200).json()
    waited = time.monotonic() - t0
    assert o["stdout"] == "done\n", o
    assert 0.3 < waited < 3, f"the long poll returned after {waited:.2f}s"
    w = expect(server.post(f"{base}/{pid}/wait", {"timeout_s": 10}), 200).json()
    assert w["status"] == "exit_nonzero" and w["exit_code"] == 4 and w["stdout"] == "started\ndone\n"
    g = expect(server.get(f"{base}/{pid}"), 200).json()
    assert g["running"] is False and g["exit_code"] == 4
    # max_bytes pages through output.
    o = expect(server.get(f"{base}/{pid}/output?max_bytes=3"), 200).json()
    assert o["stdout"] == "sta" and o["stdout_offset"] == 3
    o = expect(server.get(f"{base}/{pid}/output?max_bytes=3&stdout_offset=3"), 200).json()
    assert o["stdout"] == "rte"
    # A finished process stays until deleted; then it is gone.
    expect(server.delete(f"{base}/{pid}"), 204)
    expect_error(server.get(f"{base}/{pid}"), 404, "process_not_found")
    expect_error(server.get(f"{base}/{pid}/output"), 404, "process_not_found")
    assert server.get(base).json()["processes"] == []


def test_processes_stdin_write_and_eof(server):
    sid = server.create()["id"]
    base = f"/v1/sandboxes/{sid}/processes"
    pid = expect(server.post(base, {"cmd": "while read l; do echo \"got:$l\"; done; echo closed"}), 201).json()["pid"]
    expect(server.post(f"{base}/{pid}/stdin", {"data": "one\n"}), 200)
    o = server.get(f"{base}/{pid}/output?wait_s=5").json()
    assert o["stdout"] == "got:one\n"
    expect(server.post(f"{base}/{pid}/stdin", {"data": "two\nthree\n"}), 200)
    expect(server.post(f"{base}/{pid}/stdin", {"data": "", "eof": True}), 200)
    w = server.post(f"{base}/{pid}/wait", {"timeout_s": 10}).json()
    assert w["status"] == "ok" and w["stdout"] == "got:one\ngot:two\ngot:three\nclosed\n", w
    expect_error(server.post(f"{base}/{pid}/stdin", {"data": "late"}), 409, "stdin_closed")
    # Initial stdin with the start request, kept open for more.
    pid = expect(server.post(base, {"cmd": "cat", "stdin": "first\n"}), 201).json()["pid"]
    expect(server.post(f"{base}/{pid}/stdin", {"data": "second\n", "eof": True}), 200)
    w = server.post(f"{base}/{pid}/wait", {"timeout_s": 10}).json()
    assert w["stdout"] == "first\nsecond\n", w


@pytest.mark.parametrize("sig,expect_sig", [("INT", 2), ("SIGTERM", 15), ("sigkill", 9), (9, 9), (15, 15),
                                            ("USR1", 10)])
def test_processes_signal_by_name_and_number(server, sig, expect_sig):
    sid = server.create()["id"]
    base = f"/v1/sandboxes/{sid}/processes"
    pid = expect(server.post(base, {"argv": ["sleep", "100"]}), 201).json()["pid"]
    r = expect(server.post(f"{base}/{pid}/signal", {"signal": sig}), 200).json()
    assert r["signal"] == expect_sig
    w = server.post(f"{base}/{pid}/wait", {"timeout_s": 10}).json()
    assert w["signal"] == expect_sig and w["exit_code"] is None and w["status"] != "ok", w
    expect_error(server.post(f"{base}/{pid}/signal", {"signal": "TERM"}), 409, "process_finished")


def test_processes_signal_reaches_the_group_and_trap(server):
    sid = server.create()["id"]
    base = f"/v1/sandboxes/{sid}/processes"
    pid = expect(server.post(base, {"cmd": "trap 'echo caught; exit 7' TERM; echo ready; "
                                           "while true; do sleep 0.05; done"}), 201).json()["pid"]
    assert server.get(f"{base}/{pid}/output?wait_s=5").json()["stdout"] == "ready\n"
    expect(server.post(f"{base}/{pid}/signal", {}), 200)     # default: SIGTERM
    w = server.post(f"{base}/{pid}/wait", {"timeout_s": 10}).json()
    assert w["exit_code"] == 7 and "caught" in w["stdout"], w
    # STOP and CONT.
    pid = expect(server.post(base, {"cmd": "for i in $(seq 1 100); do echo $i; sleep 0.05; done"}), 201).json()["pid"]
    time.sleep(0.3)
    expect(server.post(f"{base}/{pid}/signal", {"signal": "STOP"}), 200)
    time.sleep(0.2)
    n1 = server.get(f"{base}/{pid}").json()["stdout_bytes"]
    time.sleep(0.5)
    n2 = server.get(f"{base}/{pid}").json()["stdout_bytes"]
    assert n1 == n2, "SIGSTOP did not stop the process"
    expect(server.post(f"{base}/{pid}/signal", {"signal": "CONT"}), 200)
    time.sleep(0.5)
    assert server.get(f"{base}/{pid}").json()["stdout_bytes"] > n2, "SIGCONT did not resume it"
    expect(server.post(f"{base}/{pid}/signal", {"signal": "KILL"}), 200)
    for bad in ["NOPE", 0, 65, -1, 3.5, None, [9]]:
        body = {"signal": bad}
        r = server.post(f"{base}/{pid}/signal", body)
        if r.status_code != 409:      # it may have finished already
            expect_error(r, 400, "invalid_request")


def test_processes_wait_with_timeout_and_delete_running(server):
    sid = server.create()["id"]
    base = f"/v1/sandboxes/{sid}/processes"
    pid = expect(server.post(base, {"cmd": "echo hi; exec sleep 100"}), 201).json()["pid"]
    t0 = time.monotonic()
    w = expect(server.post(f"{base}/{pid}/wait", {"timeout_s": 0.7}), 200).json()
    took = time.monotonic() - t0
    assert w["status"] == "running" and 0.6 <= took < 2.0, (w, took)
    assert w.get("waited") is True and w["stdout"] == "hi\n"
    # Several waiters at once all get the result.
    results = []

    def waiter():
        results.append(server.post(f"{base}/{pid}/wait", {"timeout_s": 20}, session=server.session()).json())

    ts = [threading.Thread(target=waiter) for _ in range(3)]
    for t in ts:
        t.start()
    time.sleep(0.3)
    # Deleting a running process kills it; the waiters learn it ended.
    expect(server.delete(f"{base}/{pid}"), 204)
    for t in ts:
        t.join(10)
    assert len(results) == 3 and all(r["status"] == "killed" for r in results), results
    expect_error(server.get(f"{base}/{pid}"), 404, "process_not_found")
    assert "sleep 100" not in server.sh(sid, "ps -eo args")


def test_process_output_survives_the_exec_connection(server):
    """Reattach: a soft-timed-out exec's output is still readable after the
    client's connection closed."""
    sid = server.create()["id"]
    s = requests.Session()
    r = s.post(f"{server.url}/v1/sandboxes/{sid}/exec", json={"cmd": "echo a; sleep 1; echo b", "yield_after_s": 0.3},
               timeout=10).json()
    s.close()
    assert r["status"] == "running"
    w = server.post(f"/v1/sandboxes/{sid}/processes/{r['pid']}/wait", {"timeout_s": 10}).json()
    assert w["stdout"] == "a\nb\n" and w["status"] == "ok"


# ---- users and limits ----

def test_user_root_and_user(server):
    sid = server.create()["id"]
    assert server.exec(sid, cmd="id -u; id -g")["stdout"] == "1000\n1000\n"
    assert server.exec(sid, cmd="id -u", user="user")["stdout"] == "1000\n"
    assert server.exec(sid, cmd="id -u; id -g", user="root")["stdout"] == "0\n0\n"
    assert server.exec(sid, cmd="whoami", user="root")["stdout"] == "root\n"
    server.sh(sid, "echo mine > /home/user/f")
    out = server.exec(sid, cmd="stat -c %u:%g /home/user/f", user="root")["stdout"]
    assert out == "1000:1000\n"
    r = server.exec(sid, cmd="chown 0:0 /home/user/f")
    assert r["exit_code"] != 0, "user must not be able to chown to root"
    assert server.exec(sid, cmd="chown 0:0 /home/user/f && stat -c %u /home/user/f", user="root")["stdout"] == "0\n"
    assert server.exec(sid, cmd="echo x >> /home/user/f")["exit_code"] != 0, "user wrote root's file"
    assert server.exec(sid, cmd="touch /tmp/r && stat -c %u /tmp/r", user="root")["stdout"] == "0\n"
    # Root in the sandbox is not root on the host: its processes run in the sandbox uid range.
    pid = expect(server.post(f"/v1/sandboxes/{sid}/processes", {"argv": ["sleep", "123.45"], "user": "root"}),
                 201).json()["pid"]
    time.sleep(0.2)
    hosts = [p for p in xbhost_table() if p["args"] == "sleep 123.45"]
    assert hosts and all(p["uid"] >= sf.SANDBOX_UID_MIN for p in hosts), f"host view of sandbox root: {hosts}"
    expect(server.post(f"/v1/sandboxes/{sid}/processes/{pid}/signal", {"signal": "KILL"}), 200)


def xbhost_table() -> list[dict]:
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                args = f.read().rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{d}/status") as f:
                uid = int(next(line for line in f if line.startswith("Uid:")).split()[1])
        except (OSError, StopIteration):
            continue
        out.append({"pid": int(d), "args": args, "uid": uid})
    return out


def test_memory_bomb_gets_memory_limit_and_the_sandbox_lives(server):
    sid = server.create(limits={"memory": 128 << 20})["id"]
    server.sh(sid, "echo survivor > /tmp/marker")
    r = server.exec(sid, cmd="python3 -c 'a=[]\nwhile True: a.append(bytearray(8<<20))' || "
                             "{ x=a; while true; do x=$x$x; done; }", timeout_s=60, timeout=90)
    assert r["status"] == "memory_limit", f"a memory bomb under a 128 MiB limit: {r}"
    assert r["signal"] == 9 and r["exit_code"] is None
    assert r["peak_memory"] >= 64 << 20, r
    # The sandbox, its files and its other processes live on.
    later = server.exec(sid, cmd="cat /tmp/marker; echo alive")
    assert later["status"] == "ok" and later["stdout"] == "survivor\nalive\n"
    got = expect(server.get(f"/v1/sandboxes/{sid}"), 200).json()
    assert got["state"] == "running"
    m = server.metrics()
    assert m['execbox_execs_total{status="memory_limit"}'] >= 1


def test_pids_limit_contains_a_fork_bomb(server):
    sid = server.create(limits={"pids": 32})["id"]
    r = server.exec(sid, cmd="for i in $(seq 1 100); do sleep 5 & done; wait", timeout_s=20, timeout=60)
    assert "fork" in r["stderr"].lower() or "resource" in r["stderr"].lower() or r["status"] != "ok", r
    assert server.exec(sid, cmd="echo alive", timeout_s=30)["stdout"] == "alive\n"


def test_delete_during_an_exec_answers_the_exec(server):
    sid = server.create()["id"]
    out = {}

    def run():
        t0 = time.monotonic()
        r = server.post(f"/v1/sandboxes/{sid}/exec", {"cmd": "echo partial; sleep 30"}, session=server.session(),
                        timeout=30)
        out["took"] = time.monotonic() - t0
        out["r"] = r

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.5)
    server.remove(sid)
    t.join(15)
    assert "r" in out, "the exec never returned after its sandbox was deleted"
    r = out["r"]
    assert out["took"] < 5, f"the exec returned {out['took']:.1f}s after the delete"
    if r.status_code == 200:
        body = r.json()
        assert body["status"] == "killed" and body["stdout"] == "partial\n", body
    else:
        expect_error(r, 410, "sandbox_gone")


def test_process_slots_are_bounded_and_freed_by_delete(server):
    """Running processes are bounded (256 per sandbox); finished ones are
    kept for reading, the newest 64, and never hold a slot."""
    sid = server.create(limits={"pids": 1024})["id"]
    base = f"/v1/sandboxes/{sid}/processes"
    for i in range(300):
        expect(server.post(base, {"argv": ["true"]}), 201)
    time.sleep(0.5)
    kept = server.get(base).json()["processes"]
    assert 0 < len(kept) <= 64 and all(not p["running"] for p in kept), len(kept)
    assert server.exec(sid, cmd="echo hi")["stdout"] == "hi\n"
    pids = []
    for i in range(300):
        r = server.post(base, {"argv": ["sleep", "60"]})
        if r.status_code == 429:
            expect_error(r, 429, "too_many_processes")
            break
        expect(r, 201)
        pids.append(r.json()["pid"])
    assert 16 <= len(pids) < 300, f"{len(pids)} running processes were accepted: no bound"
    for pid in pids:
        expect(server.delete(f"{base}/{pid}"), 204)
    assert server.exec(sid, cmd="echo freed")["stdout"] == "freed\n"

