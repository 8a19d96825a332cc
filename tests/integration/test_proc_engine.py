"""The process engine parts E2B needs, over REST against a real `execbox
serve`: killing a process kills its whole tree (setsid, double fork,
nohup), a real pty per process (size, resize, raw input, Ctrl-C), and
directory watches (SSE and polled), bounded, with overflow reported."""
from __future__ import annotations

import base64
import json
import threading
import time

import requests

from server_fixture import expect, expect_error, server, server_factory, sse_events  # noqa: F401


def wait_until(pred, timeout: float, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(step)


def ps(server, sid) -> str:
    return server.exec(sid, cmd="ps -eo pid,ppid,sid,args", user="root")["stdout"]


def start(server, sid, **body) -> dict:
    r = server.post(f"/v1/sandboxes/{sid}/processes", body)
    expect(r, 201)
    return r.json()


# ---- killing a process kills its tree ----

TREE = ("setsid sleep 1001 & (sleep 1002 &) & nohup sleep 1003 >/dev/null 2>&1 & "
        "setsid sh -c '(setsid sleep 1004 &) ; sleep 1005' & sleep 1000")
MARKERS = ["sleep 1001", "sleep 1002", "sleep 1003", "sleep 1004", "sleep 1005", "sleep 1000"]


def test_delete_kills_setsid_double_forked_and_nohup_descendants(server):
    sid = server.create()["id"]
    p = start(server, sid, cmd=TREE)
    # Positive control: every member runs, and the escapers really left the
    # command's session and process group.
    def rows():
        return {line.split(None, 3)[3]: line.split()[:3] for line in ps(server, sid).splitlines()[1:]
                if len(line.split(None, 3)) == 4}

    # Exact command lines: setsid has exec'd its sleep by then.
    assert wait_until(lambda: all(m in rows() for m in MARKERS), 10), ps(server, sid)
    rows = rows()
    assert rows["sleep 1001"][2] != rows["sleep 1000"][2], "setsid did not make a new session"
    assert rows["sleep 1002"][1] != str(p["pid"]), "the double fork's grandchild was not orphaned"
    expect(server.delete(f"/v1/sandboxes/{sid}/processes/{p['pid']}"), 204)
    gone = wait_until(lambda: not any(m in ps(server, sid) for m in MARKERS), 5)
    assert gone, f"the tree survives DELETE: {ps(server, sid)}"
    assert server.exec(sid, cmd="echo alive")["stdout"] == "alive\n"


def test_kill_signal_kills_the_tree_and_leftovers_of_an_exited_command(server):
    sid = server.create()["id"]
    p = start(server, sid, cmd="setsid sleep 1011 & sleep 1010")
    assert wait_until(lambda: "sleep 1011" in ps(server, sid) and "sleep 1010" in ps(server, sid), 10)
    expect(server.post(f"/v1/sandboxes/{sid}/processes/{p['pid']}/signal", {"signal": "KILL"}), 200)
    assert wait_until(lambda: "sleep 1011" not in ps(server, sid), 5), ps(server, sid)
    # The command exits at once, leaving a setsid'd child: DELETE still ends it.
    p = start(server, sid, cmd="setsid sleep 1012 & (sleep 1013 &) ; exit 0")
    r = server.post(f"/v1/sandboxes/{sid}/processes/{p['pid']}/wait", {"timeout_s": 10})
    expect(r, 200)
    assert r.json()["status"] == "ok", r.json()
    out = ps(server, sid)
    assert "sleep 1012" in out and "sleep 1013" in out, f"control: the leftovers should run: {out}"
    expect(server.delete(f"/v1/sandboxes/{sid}/processes/{p['pid']}"), 204)
    assert wait_until(lambda: "sleep 101" not in ps(server, sid), 5), ps(server, sid)


def test_exec_timeout_kills_a_setsid_descendant(server):
    sid = server.create()["id"]
    r = server.exec(sid, cmd="setsid sleep 1021 & echo started; sleep 30", timeout_s=1)
    assert r["status"] == "timeout" and r["stdout"] == "started\n", r
    assert wait_until(lambda: "sleep 1021" not in ps(server, sid), 5), ps(server, sid)


# ---- a real pty per process ----

def read_until(server, sid, pid, needle: str, off: int = 0, timeout: float = 10) -> tuple[str, int]:
    """stdout from off until needle shows up; (text, next offset)."""
    text, deadline = "", time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = server.get(f"/v1/sandboxes/{sid}/processes/{pid}/output?stdout_offset={off}&wait_s=1")
        expect(r, 200)
        o = r.json()
        text += o["stdout"]
        off = o["stdout_offset"]
        if needle in text or not o["running"]:
            break
    return text, off


def send(server, sid, pid, data: str):
    b = base64.b64encode(data.encode()).decode()
    expect(server.post(f"/v1/sandboxes/{sid}/processes/{pid}/stdin", {"data": b, "encoding": "base64"}), 200)


def test_pty_tty_size_resize_echo_and_ctrl_c(server):
    sid = server.create()["id"]
    p = start(server, sid, cmd="sh", pty={"cols": 100, "rows": 30})
    assert p["pty"] == {"cols": 100, "rows": 30}, p
    pid = p["pid"]
    send(server, sid, pid, "tty; stty size; echo mark-$((6*7))\n")
    text, off = read_until(server, sid, pid, "mark-42")
    assert "/dev/pts/" in text and "30 100" in text, text
    # The terminal echoes what is typed: the command line itself shows up.
    assert "echo mark-$((6*7))" in text, text
    r = server.post(f"/v1/sandboxes/{sid}/processes/{pid}/resize", {"cols": 132, "rows": 43})
    expect(r, 200)
    send(server, sid, pid, "stty size; echo mark-$((1+1))\n")
    text, off = read_until(server, sid, pid, "mark-2", off)
    assert "43 132" in text, text
    # Ctrl-C interrupts the foreground command, not the shell.
    send(server, sid, pid, "sleep 100; echo after-sleep\n")
    time.sleep(0.5)
    send(server, sid, pid, "\x03")
    send(server, sid, pid, "echo mark-$((1+2))\n")
    text, off = read_until(server, sid, pid, "mark-3", off)
    assert "mark-3" in text and "^C" in text and "after-sleep\r\n" not in text.replace("echo after-sleep", ""), text
    assert "sleep 100" not in ps(server, sid).replace("sleep 100; echo", ""), ps(server, sid)
    # ^D at an empty prompt ends the shell.
    send(server, sid, pid, "\x04")
    r = server.post(f"/v1/sandboxes/{sid}/processes/{pid}/wait", {"timeout_s": 10})
    assert r.json()["status"] == "ok", r.json()


def test_pty_python_interactive_and_attach_stream(server):
    sid = server.create()["id"]
    p = start(server, sid, argv=["python3", "-i", "-q"], pty={"cols": 80, "rows": 24}, tag="py")
    pid = p["pid"]
    listed = server.get(f"/v1/sandboxes/{sid}/processes?detail=true").json()["processes"]
    mine = [x for x in listed if x["pid"] == pid][0]
    assert mine["tag"] == "py" and mine["argv"] == ["python3", "-i", "-q"] and mine["cwd"] == "/home/user", mine
    send(server, sid, pid, "print(6*7)\n")
    text, off = read_until(server, sid, pid, "42")
    assert "42" in text, text
    # Reattach from now on: the stream carries raw bytes as base64, then the result.
    t0 = time.monotonic()
    resp = requests.get(f"{server.url}/v1/sandboxes/{sid}/processes/{pid}/stream?from=now",
                        headers={**server.headers(), "Accept": "text/event-stream"}, stream=True, timeout=30)
    expect(resp, 200)
    got = []

    def reader():
        got.extend(sse_events(resp, t0))

    th = threading.Thread(target=reader)
    th.start()
    time.sleep(0.5)
    send(server, sid, pid, "print('x' * 3 + 'y')\n")
    time.sleep(0.5)
    send(server, sid, pid, "exit()\n")
    th.join(15)
    data = b"".join(base64.b64decode(d["data"]) for _, n, d in got if n == "stdout")
    assert b"xxxy" in data and b"42" not in data, (data, got)
    assert got[-1][1] == "result" and got[-1][2]["status"] == "ok", got[-1]


# ---- directory watches ----

def open_watch(server, sid, path, recursive=False):
    t0 = time.monotonic()
    resp = requests.get(f"{server.url}/v1/sandboxes/{sid}/files/watch",
                        params={"path": path, "recursive": "true" if recursive else "false"},
                        headers={**server.headers(), "Accept": "text/event-stream"}, stream=True, timeout=30)
    expect(resp, 200)
    events: list = []
    ready = threading.Event()

    def reader():
        try:
            name, data = None, []
            for raw in resp.iter_lines(chunk_size=1):
                line = raw.decode()
                if line == "":
                    if name:
                        events.append((name, json.loads("\n".join(data))))
                        if name == "ready":
                            ready.set()
                    name, data = None, []
                elif line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].lstrip())
        except Exception:
            pass

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    assert ready.wait(10), f"the watch did not start: {events} ({time.monotonic() - t0:.1f}s)"
    return resp, events


def test_watch_sees_a_background_process_write_and_recursive_changes(server):
    sid = server.create()["id"]
    server.sh(sid, "mkdir -p /home/user/w/sub")
    resp, events = open_watch(server, sid, "/home/user/w", recursive=True)
    start(server, sid, cmd="sleep 0.3; echo hi > /home/user/w/a.txt; mkdir /home/user/w/new; "
                           "echo deep > /home/user/w/new/b.txt; echo x > /home/user/w/sub/c; chmod 600 /home/user/w/a.txt; "
                           "mv /home/user/w/a.txt /home/user/w/a2.txt; rm /home/user/w/sub/c")
    want = {("create", "a.txt"), ("write", "a.txt"), ("create", "new"), ("create", "new/b.txt"),
            ("create", "sub/c"), ("chmod", "a.txt"), ("rename", "a.txt"), ("create", "a2.txt"), ("remove", "sub/c")}
    ok = wait_until(lambda: want <= {(d["type"], d["name"]) for n, d in events if n == "event"}, 10)
    assert ok, events
    ev = [d for n, d in events if n == "event" and d["name"] == "a.txt"][0]
    assert ev["path"] == "/home/user/w/a.txt", ev
    resp.close()


def test_watch_overflow_is_reported_and_cancel_frees_init_watches(server):
    sid = server.create()["id"]
    server.sh(sid, "mkdir -p /home/user/flood")
    server.sh(sid, "mkdir -p /home/user/flood/d && cd /home/user/flood/d && "
                   "python3 -c \"[open('f%d' % i, 'w').close() for i in range(20000)]\"")
    resp, events = open_watch(server, sid, "/home/user/flood", recursive=True)
    # Init deletes the 20000 files itself (a recursive DELETE): while it
    # works it reads no inotify events, so the kernel's queue
    # (max_queued_events, 16384 here) overflows.
    qmax = int(open("/proc/sys/fs/inotify/max_queued_events").read())
    assert qmax < 20000, f"max_queued_events is {qmax}: this test needs it under 20000"
    expect(server.delete(f"/v1/sandboxes/{sid}/files", params={"path": "/home/user/flood/d", "recursive": "true"}),
           200)
    got = wait_until(lambda: any(n == "event" and d["type"] == "overflow" for n, d in events), 10)
    removes = sum(1 for n, d in events if n == "event" and d["type"] == "remove")
    assert got, f"no overflow reported; {removes} removes seen"
    # The polled watcher's own bound: 1024 events, then overflow.
    r = server.post(f"/v1/sandboxes/{sid}/watchers", {"path": "/home/user/flood"})
    expect(r, 201)
    wid = r.json()["watcher_id"]
    server.sh(sid, "cd /home/user/flood && python3 -c \"[open('g%d' % i, 'w').close() for i in range(1500)]\"")
    time.sleep(1)
    o = server.get(f"/v1/sandboxes/{sid}/watchers/{wid}/events").json()
    assert o["overflow"] is True and len(o["events"]) == 1024, (o["overflow"], len(o["events"]))
    expect(server.delete(f"/v1/sandboxes/{sid}/watchers/{wid}"), 204)
    resp.close()
    # Init holds at most 32 watches: 40 made and cancelled in turn work only
    # if each cancel freed its inotify instance in init.
    for i in range(40):
        r = server.post(f"/v1/sandboxes/{sid}/watchers", {"path": "/home/user/flood"})
        expect(r, 201)
        expect(server.delete(f"/v1/sandboxes/{sid}/watchers/{r.json()['watcher_id']}"), 204)
    # And the bound holds: the 33rd open watch is refused (the closed stream's
    # watch is freed by then).
    time.sleep(0.5)
    for i in range(32):
        expect(server.post(f"/v1/sandboxes/{sid}/watchers", {"path": "/home/user/flood"}), 201)
    expect_error(server.post(f"/v1/sandboxes/{sid}/watchers", {"path": "/home/user/flood"}), 429, "too_many_watches")


def test_polled_watcher_buffers_events_until_taken(server):
    sid = server.create()["id"]
    r = server.post(f"/v1/sandboxes/{sid}/watchers", {"path": "/home/user", "recursive": False})
    expect(r, 201)
    wid = r.json()["watcher_id"]
    server.sh(sid, "echo 1 > /home/user/p1; echo 2 > /home/user/p2")
    got = []
    for _ in range(50):
        r = server.get(f"/v1/sandboxes/{sid}/watchers/{wid}/events")
        expect(r, 200)
        got += r.json()["events"]
        if {"p1", "p2"} <= {e["name"] for e in got if e["type"] == "create"}:
            break
        time.sleep(0.1)
    assert {"p1", "p2"} <= {e["name"] for e in got if e["type"] == "create"}, got
    assert server.get(f"/v1/sandboxes/{sid}/watchers/{wid}/events").json()["events"] == []
    expect(server.delete(f"/v1/sandboxes/{sid}/watchers/{wid}"), 204)
    expect_error(server.get(f"/v1/sandboxes/{sid}/watchers/{wid}/events"), 404, "watcher_not_found")
    expect_error(server.post(f"/v1/sandboxes/{sid}/watchers", {"path": "/nope"}), 404)


# ---- MCP resource subscriptions see changes made by any process ----

def test_mcp_subscription_hears_a_shell_write(execbox):
    import queue
    import subprocess
    p = subprocess.Popen([execbox, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(json.loads(x)) for x in p.stdout], daemon=True).start()

    def call(i, method, params=None):
        msg = {"jsonrpc": "2.0", "id": i, "method": method, "params": params or {}}
        p.stdin.write(json.dumps(msg) + "\n")
        p.stdin.flush()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            m = lines.get(timeout=60)
            if m.get("id") == i:
                return m
            seen.append(m)
        raise AssertionError(f"no reply to {method}")

    seen: list = []
    uri = "file:///home/user/sub.txt"
    try:
        call(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                               "clientInfo": {"name": "t", "version": "1"}})
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        p.stdin.flush()
        r = call(2, "tools/call", {"name": "run_command", "arguments": {"cmd": "echo ready"}})
        assert r["result"]["structuredContent"]["stdout"] == "ready\n", r
        assert call(3, "resources/subscribe", {"uri": uri}).get("result") == {}
        time.sleep(0.5)
        # A shell command, not a file tool: only the watch can see it.
        r = call(4, "tools/call", {"name": "run_command", "arguments": {"cmd": "echo hi > /home/user/sub.txt"}})
        assert r["result"]["structuredContent"]["status"] == "ok", r
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(m.get("method") == "notifications/resources/updated"
                                                      for m in seen):
            try:
                seen.append(lines.get(timeout=0.5))
            except queue.Empty:
                pass
        notes = [m for m in seen if m.get("method") == "notifications/resources/updated"]
        assert notes and notes[0]["params"]["uri"] == uri, seen
        # Unsubscribed: a later write says nothing.
        assert call(5, "resources/unsubscribe", {"uri": uri}).get("result") == {}
        # The first write's later events (create, then write) may still be
        # on their way: count from when they have arrived.
        time.sleep(0.5)
        while not lines.empty():
            seen.append(lines.get())
        n = len([m for m in seen if m.get("method") == "notifications/resources/updated"])
        call(6, "tools/call", {"name": "run_command", "arguments": {"cmd": "echo again > /home/user/sub.txt"}})
        time.sleep(1)
        while not lines.empty():
            seen.append(lines.get())
        assert len([m for m in seen if m.get("method") == "notifications/resources/updated"]) == n, seen
    finally:
        p.stdin.close()
        p.wait(30)


def test_watcher_reports_its_directory_gone_and_an_attached_stream_does_not_hold_the_lease(server):
    sid = server.create(timeout_s=3)["id"]
    server.sh(sid, "mkdir -p /home/user/gone")
    r = server.post(f"/v1/sandboxes/{sid}/watchers", {"path": "/home/user/gone"})
    expect(r, 201)
    wid = r.json()["watcher_id"]
    server.sh(sid, "touch /home/user/gone/x && rm -r /home/user/gone")
    o = wait_until(lambda: (lambda j: j if j.get("ended") else None)(
        server.get(f"/v1/sandboxes/{sid}/watchers/{wid}/events").json()), 5)
    assert o and o["ended"] is True, o
    expect_error(server.get(f"/v1/sandboxes/{sid}/watchers/{wid}/events"), 404, "watcher_not_found")
    # A running process keeps the sandbox active (the lifetime rule); a
    # stream attached to it adds nothing: once the process is killed, the
    # stream ends with its result and the idle lease runs out as usual.
    p = start(server, sid, cmd="sleep 1000")
    t0 = time.monotonic()
    resp = requests.get(f"{server.url}/v1/sandboxes/{sid}/processes/{p['pid']}/stream",
                        headers={**server.headers(), "Accept": "text/event-stream"}, stream=True, timeout=30)
    expect(resp, 200)
    killer = threading.Timer(1.0, lambda: server.post(f"/v1/sandboxes/{sid}/processes/{p['pid']}/signal",
                                                      {"signal": "KILL"}))
    killer.start()
    events = sse_events(resp, t0)
    killer.join()
    assert events and events[-1][1] in ("result", "error"), events
    assert wait_until(lambda: server.get(f"/v1/sandboxes/{sid}").status_code == 410, 10), \
        "the attached stream kept the sandbox alive"
    expect_error(server.get(f"/v1/sandboxes/{sid}"), 410, "sandbox_gone")
