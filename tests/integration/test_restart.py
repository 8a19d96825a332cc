"""What outlives the daemon (issue 12, section 4), with the default layers
(the btrfs store on disk, as CI runs).

With --adopt-grace 0 (the suites' default, server_fixture.py) a sandbox
ends with its daemon: each sandbox's record and the tombstones survive, so
a restarted daemon reaps what an earlier one left, counts it in /metrics,
and answers 410 with why instead of a bare 404; the layer store's loop
device, which a restarted daemon must reuse; and a sandbox whose init dies
is noticed at once. With a grace (SURVIVE) sandboxes outlive a SIGKILL or
a SIGTERM and the next daemon re-adopts them (docs/restart.md)."""
from __future__ import annotations

import base64
import glob
import json
import os
import re
import signal
import stat
import subprocess
import time

import requests

import server_fixture as sf
import xbhost
from server_fixture import cgroup_tasks, cgroups_gone, expect, expect_error, sandbox_cgroups, server_factory  # noqa: F401


def loop_backing(dev: str) -> str | None:
    try:
        with open(f"{dev}/loop/backing_file") as f:
            return f.read().strip()
    except OSError:
        return None


def loops_of(state_dir: str) -> list[str]:
    image = os.path.realpath(os.path.join(state_dir, "layers.img"))
    return [d for d in glob.glob("/sys/block/loop*") if loop_backing(d) == image]


def store_of(srv: sf.Server) -> str:
    """The store, through the server's own mount namespace."""
    image = os.path.realpath(os.path.join(srv.state_dir, "layers.img"))
    for line in open(f"/proc/{srv.pid}/mountinfo"):
        f = line.split()
        if f[4].startswith("/run/execbox/store-") and loop_backing("/sys/block/" + os.path.basename(line.split(" - ")[1].split()[1])) == image:
            return f"/proc/{srv.pid}/root{f[4]}"
    raise AssertionError("the store is not mounted")


ADMIN = "restart-token-root-0123456789abc"


def records(state_dir: str) -> set[str]:
    return {n[:-5] for n in os.listdir(os.path.join(state_dir, "sandboxes")) if n.endswith(".json")}


def test_sandboxes_of_a_killed_daemon_are_reaped_and_answer_410(execbox, server_factory, tmp_path):
    # Not the factory's: it would count the SIGKILL as a failed stop.
    s1 = sf.start_server(execbox, str(tmp_path / "killed"), tokens=["restart-token-a-0123456789abcdef",
                                                                     "restart-token-b-0123456789abcdef",
                                                                     "restart-token-root-0123456789abc admin"],
                         pool=0)
    state = s1.state_dir
    tf = os.path.join(str(tmp_path / "killed"), "tokens0")
    try:
        a = s1.create(metadata={"owner": "alice"})["id"]
        b = s1.create(user="root")["id"]
        gone = s1.create()["id"]
        s1.remove(gone)
        # The records, persisted atomically in a directory only root reaches.
        rdir = os.path.join(state, "sandboxes")
        assert stat.S_IMODE(os.stat(rdir).st_mode) == 0o700
        assert records(state) == {a, b}
        assert not [n for n in os.listdir(rdir) if n.startswith(".")], "a temp file was left"
        rec = json.load(open(os.path.join(rdir, f"{a}.json")))
        assert rec["id"] == a and rec["tenant"] == 0 and rec["metadata"] == {"owner": "alice"}, rec
        assert rec["limits"]["memory"] > 0 and rec["timeout_s"] > 0, rec
        assert json.load(open(os.path.join(rdir, f"{b}.json")))["user"] == "root"
        # A keepalive with a new timeout is kept too.
        expect(s1.post(f"/v1/sandboxes/{a}/keepalive", {"timeout_s": 4321}), 200)
        assert json.load(open(os.path.join(rdir, f"{a}.json")))["timeout_s"] == 4321
        cgs = [sandbox_cgroups(s1, sid) for sid in (a, b)]
    finally:
        os.kill(s1.pid, signal.SIGKILL)
        s1.proc.wait(10)
    # Their inits die with the server (its socket closes); the next start
    # removes their emptied cgroups.
    deadline = time.monotonic() + 10
    while any(cgroup_tasks(cg) for cg in cgs) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(cgroup_tasks(cg) for cg in cgs), "the sandboxes outlived their killed server"
    s2 = server_factory("--token-file", tf, state_dir=state, pool=0)
    # Both are reaped, said in the log and /metrics, and answer 410 with why.
    for sid in (a, b):
        err = expect_error(s2.get(f"/v1/sandboxes/{sid}", token="restart-token-a-0123456789abcdef"), 410,
                           "sandbox_gone")
        assert "daemon restarted" in err["message"] and sid in err["message"], err
        assert "create a new sandbox" in err["hint"], err
        expect_error(s2.post(f"/v1/sandboxes/{sid}/exec", {"cmd": "true"}, token="restart-token-a-0123456789abcdef"),
                     410, "sandbox_gone")
        # Another tenant learns nothing of them.
        expect_error(s2.get(f"/v1/sandboxes/{sid}", token="restart-token-b-0123456789abcdef"), 404,
                     "sandbox_not_found")
    # The one deleted before the kill kept its own tombstone.
    err = expect_error(s2.get(f"/v1/sandboxes/{gone}", token="restart-token-a-0123456789abcdef"), 410, "sandbox_gone")
    assert "deleted" in err["message"], err
    # Control: an id nobody made is still a plain 404.
    expect_error(s2.get("/v1/sandboxes/" + "a" * 26, token="restart-token-a-0123456789abcdef"), 404,
                 "sandbox_not_found")
    assert records(state) == set()
    m = sf.parse_prometheus(s2.get("/metrics", token=ADMIN).text)
    assert m["execbox_sandboxes_reaped_total"] == 2, m.get("execbox_sandboxes_reaped_total")
    assert "2 sandboxes of an earlier daemon did not survive" in s2.stderr()
    # Their writable layers are gone from the store, the server works.
    deadline = time.monotonic() + 5
    while not all(cgroups_gone(cg) for cg in cgs) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(cgroups_gone(cg) for cg in cgs), cgs
    c = s2.create(token="restart-token-a-0123456789abcdef")["id"]
    assert s2.exec(c, cmd="echo ok", token="restart-token-a-0123456789abcdef")["stdout"] == "ok\n"
    s2.stop()
    # After a clean stop nothing is left to reap: the next start counts 0.
    assert records(state) == set()
    s3 = server_factory("--token-file", tf, state_dir=state, pool=0)
    assert sf.parse_prometheus(s3.get("/metrics", token=ADMIN).text)[
        "execbox_sandboxes_reaped_total"] == 0
    # And the tombstones outlive a clean restart too.
    expect_error(s3.get(f"/v1/sandboxes/{a}", token="restart-token-a-0123456789abcdef"), 410, "sandbox_gone")
    err = expect_error(s3.get(f"/v1/sandboxes/{c}", token="restart-token-a-0123456789abcdef"), 410, "sandbox_gone")
    assert "shutting down" in err["message"], err
    s3.stop()


def test_a_torn_record_is_cleaned_up(server_factory, tmp_path):
    """A write cut short leaves a temp file, never a half record."""
    s1 = server_factory(pool=0)
    state = s1.state_dir
    s1.stop()
    rdir = os.path.join(state, "sandboxes")
    with open(os.path.join(rdir, ".ZZZZZZZZZZZZZZZZZZZZZZZZZZ.json.tmp"), "w") as f:
        f.write('{"id": "ZZZZ')
    with open(os.path.join(rdir, "not-a-record.json"), "w") as f:
        f.write("{}")
    s2 = server_factory(state_dir=state, pool=0)
    assert not os.path.exists(os.path.join(rdir, ".ZZZZZZZZZZZZZZZZZZZZZZZZZZ.json.tmp"))
    assert sf.parse_prometheus(s2.get("/metrics").text)["execbox_sandboxes_reaped_total"] == 0
    s2.stop()


def test_a_restarted_daemon_reuses_the_stores_loop_device(server_factory, tmp_path):
    """Two loop devices over one btrfs image are two devices with one fsid,
    which corrupts it: a daemon that finds the image attached (a sandbox of
    an earlier daemon may hold the store) mounts that device."""
    s1 = server_factory(pool=0)
    state = s1.state_dir
    sid = s1.create(user="root")["id"]
    assert s1.exec(sid, cmd="echo x > /usr/x")["exit_code"] == 0
    s1.stop()
    assert loops_of(state) == []
    image = os.path.join(state, "layers.img")
    held = subprocess.run(["losetup", "--show", "-f", image], check=True, capture_output=True,
                          text=True).stdout.strip()
    try:
        assert len(loops_of(state)) == 1
        s2 = server_factory(state_dir=state, pool=0)
        assert [os.path.basename(d) for d in loops_of(state)] == [os.path.basename(held)], loops_of(state)
        c = s2.create(user="root")["id"]
        assert s2.exec(c, cmd="head -c 1M /dev/urandom > /usr/y && sync && wc -c < /usr/y")["stdout"] == "1048576\n"
        s2.stop()
    finally:
        subprocess.run(["losetup", "-d", held], check=False)
    deadline = time.monotonic() + 10
    while loops_of(state) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert loops_of(state) == []
    # Control: with nothing attached, a start attaches its own, and its
    # stop releases it.
    s3 = server_factory(state_dir=state, pool=0)
    assert len(loops_of(state)) == 1
    s3.stop()
    assert loops_of(state) == []


def test_sigkill_of_init_is_noticed_within_a_second(server_factory):
    srv = server_factory(pool=0)
    sid = srv.create(user="root")["id"]
    assert srv.exec(sid, cmd="echo up > /usr/up && cat /usr/up")["stdout"] == "up\n"
    store = store_of(srv)
    assert sid in os.listdir(f"{store}/sbx")
    cgs = sandbox_cgroups(srv, sid)
    init = None
    for pid in cgroup_tasks(cgs):
        with open(f"/proc/{pid}/status") as f:
            nspid = [line.split()[1:] for line in f if line.startswith("NSpid:")][0]
        if nspid[-1] == "1":
            init = pid
    assert init, "no init found in the sandbox's cgroup"
    t0 = time.monotonic()
    os.kill(init, signal.SIGKILL)
    while (r := srv.get(f"/v1/sandboxes/{sid}")).status_code == 200:
        assert time.monotonic() - t0 < 1.0, "the death of init was not noticed within 1 s"
        time.sleep(0.02)
    noticed = time.monotonic() - t0
    assert noticed < 1.0, noticed
    err = expect_error(r, 410, "sandbox_gone")
    assert "init exited" in err["message"], err
    # Fast errors: an exec answers at once, with why.
    t1 = time.monotonic()
    err = expect_error(srv.post(f"/v1/sandboxes/{sid}/exec", {"cmd": "true"}), 410, "sandbox_gone")
    assert time.monotonic() - t1 < 0.5 and "init exited" in err["message"], err
    # Everything freed: its cgroups and processes go.
    deadline = time.monotonic() + 5
    while not cgroups_gone(cgs) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert cgroups_gone(cgs), cgs
    # Its writable layer too, and its record.
    while sid in os.listdir(f"{store}/sbx") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sid not in os.listdir(f"{store}/sbx")
    assert sid not in records(srv.state_dir)
    assert sid not in [x["id"] for x in srv.get("/v1/sandboxes").json()["sandboxes"]]


SURVIVE = ["--adopt-grace", "60s"]


def start_bg(srv, sid, cmd, **kw) -> dict:
    return expect(srv.post(f"/v1/sandboxes/{sid}/processes", {"cmd": cmd, **kw}), 201).json()


def output(srv, sid, pid) -> str:
    return expect(srv.get(f"/v1/sandboxes/{sid}/processes/{pid}/output"), 200).json()["stdout"]


def kill_server(srv) -> None:
    os.kill(srv.pid, signal.SIGKILL)
    srv.proc.wait(10)


def test_sandboxes_outlive_a_sigkill_and_are_readopted(execbox, server_factory, tmp_path):
    s1 = sf.start_server(execbox, str(tmp_path / "killed"), *SURVIVE, pool=1)
    state = s1.state_dir
    boxes = {}
    try:
        for i in range(5):
            sid = s1.create(metadata={"n": str(i)})["id"]
            s1.sh(sid, f"echo file-{i} > /home/user/f.txt")
            p = start_bg(s1, sid, f"i=0; while :; do echo tick-{i}-$i; i=$((i+1)); sleep 0.1; done")
            boxes[sid] = p["pid"]
        # A file being written across the restart.
        first = next(iter(boxes))
        # A Python session holding state.
        second = list(boxes)[1]
        ss = expect(s1.post(f"/v1/sandboxes/{second}/sessions", {"language": "python"}, timeout=90), 201).json()["id"]
        res = expect(s1.post(f"/v1/sandboxes/{second}/sessions/{ss}/run", {"code": "x = 41\nprint('set')"},
                             timeout=120), 200).json()
        assert res["status"] == "ok", res
        w = start_bg(s1, first, "i=0; while :; do echo $i >> /tmp/growing; i=$((i+1)); sleep 0.05; done")
        time.sleep(0.5)
        cgs = {sid: sandbox_cgroups(s1, sid) for sid in boxes}
        # The last tick each daemon-side buffer has, just before the kill.
        last = {sid: int(output(s1, sid, pid).splitlines()[-1].rsplit("-", 1)[1]) for sid, pid in boxes.items()}
    finally:
        kill_server(s1)
    # Alive without a daemon: their processes still run.
    time.sleep(1)
    for sid, cg in cgs.items():
        assert cgroup_tasks(cg), f"sandbox {sid} died with its server"
    s2 = server_factory(*SURVIVE, state_dir=state, pool=0)
    listed = {b["id"] for b in expect(s2.get("/v1/sandboxes"), 200).json()["sandboxes"]}
    assert set(boxes) <= listed, (boxes, listed)
    for i, (sid, pid) in enumerate(boxes.items()):
        info = expect(s2.get(f"/v1/sandboxes/{sid}"), 200).json()
        assert info["metadata"] == {"n": str(i)}, info
        assert s2.sh(sid, "cat /home/user/f.txt") == f"file-{i}\n"
        procs = expect(s2.get(f"/v1/sandboxes/{sid}/processes"), 200).json()
        assert pid in [p["pid"] for p in procs["processes"]], procs
        assert expect(s2.get(f"/v1/sandboxes/{sid}/processes/{pid}"), 200).json()["status"] == "running"
        # Its whole output is there, from its first tick: what the killed
        # daemon had read (from the stream's file inside the sandbox), what
        # it wrote while no daemon read, and what follows.
        deadline = time.monotonic() + 5
        while True:
            ticks = [int(line.rsplit("-", 1)[1]) for line in output(s2, sid, pid).splitlines()]
            if ticks and ticks[-1] > last[sid] + 2:
                break
            assert time.monotonic() < deadline, (last[sid], ticks[-3:])
            time.sleep(0.1)
        assert ticks == list(range(len(ticks))), f"a gap in the output across the restart (last read {last[sid]})"
    # The session is there, with its variable.
    listed = expect(s2.get(f"/v1/sandboxes/{second}/sessions"), 200).json()["sessions"]
    assert [s["id"] for s in listed] == [ss] and listed[0]["state"] == "idle", listed
    res = expect(s2.post(f"/v1/sandboxes/{second}/sessions/{ss}/run", {"code": "print(x + 1)"}, timeout=120),
                 200).json()
    assert res["status"] == "ok", res
    assert "".join(o["text"] for o in res["outputs"] if o["type"] == "stream") == "42\n", res
    grown = [int(v) for v in s2.sh(first, "cat /tmp/growing").split()]
    assert grown == list(range(len(grown))), "the file written across the restart has a gap"
    time.sleep(0.3)
    assert len(s2.sh(first, "cat /tmp/growing").split()) > len(grown), "the writer stopped"
    m = sf.parse_prometheus(s2.get("/metrics").text)
    assert m["execbox_sandboxes_adopted_total"] == 5, m.get("execbox_sandboxes_adopted_total")
    assert m["execbox_sandboxes_reaped_total"] == 0
    assert "5 sandboxes of an earlier daemon re-adopted" in s2.stderr()
    # Signals reach the adopted process; delete frees everything.
    assert s2.delete(f"/v1/sandboxes/{first}/processes/{w['pid']}").status_code in (200, 204)
    for sid in boxes:
        s2.remove(sid)
    deadline = time.monotonic() + 10
    while not all(cgroups_gone(cg) for cg in cgs.values()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(cgroups_gone(cg) for cg in cgs.values()), cgs
    assert records(state) == set()
    assert not os.listdir(os.path.join(state, "keep"))
    s2.stop()


def test_an_exit_while_no_daemon_runs_is_reported_to_the_next(execbox, server_factory, tmp_path):
    s1 = sf.start_server(execbox, str(tmp_path / "killed"), *SURVIVE, pool=0)
    state = s1.state_dir
    try:
        sid = s1.create()["id"]
        p = start_bg(s1, sid, "echo before; sleep 1.5; echo after; exit 7")
        time.sleep(0.3)
    finally:
        kill_server(s1)
    time.sleep(2.5)   # it exits meanwhile: its keeper cannot tell the dead daemon
    s2 = server_factory(*SURVIVE, state_dir=state, pool=0)
    deadline = time.monotonic() + 5
    while (info := expect(s2.get(f"/v1/sandboxes/{sid}/processes/{p['pid']}"), 200).json())["status"] == "running":
        assert time.monotonic() < deadline, info
        time.sleep(0.1)
    assert info["exit_code"] == 7, info
    assert output(s2, sid, p["pid"]) == "before\nafter\n", "output lost across the restart"
    s2.remove(sid)
    s2.stop()


def test_a_readopted_process_keeps_its_timeout(execbox, server_factory, tmp_path):
    s1 = sf.start_server(execbox, str(tmp_path / "killed"), *SURVIVE, pool=0)
    state = s1.state_dir
    try:
        sid = s1.create()["id"]
        # Positive control: one without a timeout runs on.
        free = start_bg(s1, sid, "sleep 60")
        p = start_bg(s1, sid, "echo started; sleep 60", timeout_s=4)
        t0 = time.monotonic()
    finally:
        kill_server(s1)
    s2 = server_factory(*SURVIVE, state_dir=state, pool=0)
    r = expect(s2.post(f"/v1/sandboxes/{sid}/processes/{p['pid']}/wait", {"timeout_s": 20}, timeout=40), 200).json()
    took = time.monotonic() - t0
    assert r["status"] == "timeout", r
    assert 3 < took < 12, f"the timeout fired {took:.1f} s after the start, not at its 4 s"
    assert expect(s2.get(f"/v1/sandboxes/{sid}/processes/{free['pid']}"), 200).json()["status"] == "running"
    assert output(s2, sid, p["pid"]) == "started\n"
    s2.remove(sid)
    s2.stop()


def test_a_readopted_process_counts_its_age_from_its_start(execbox, server_factory, tmp_path):
    """started_ms_ago goes on from the process's real start, not from when
    the next daemon adopted it (its hold note is written at the spawn)."""
    s1 = sf.start_server(execbox, str(tmp_path / "killed"), *SURVIVE, pool=0)
    state = s1.state_dir
    try:
        sid = s1.create()["id"]
        p = start_bg(s1, sid, "sleep 60")
        t0 = time.monotonic()
        time.sleep(3)
    finally:
        kill_server(s1)
    s2 = server_factory(*SURVIVE, state_dir=state, pool=0)
    try:
        ago = expect(s2.get(f"/v1/sandboxes/{sid}/processes/{p['pid']}"), 200).json()["started_ms_ago"]
        took = (time.monotonic() - t0) * 1000
        # Counted from the adoption it would be well under the 3 s slept.
        assert 3000 <= ago <= took + 1000, (ago, took)
    finally:
        s2.remove(sid)
    s2.stop()


def test_a_sandbox_whose_daemon_never_returns_ends_after_the_grace(execbox, server_factory, tmp_path):
    s1 = sf.start_server(execbox, str(tmp_path / "killed"), "--adopt-grace", "2s", pool=0)
    state = s1.state_dir
    try:
        sid = s1.create()["id"]
        start_bg(s1, sid, "sleep 1000")
        cg = sandbox_cgroups(s1, sid)
    finally:
        kill_server(s1)
    time.sleep(0.5)
    assert cgroup_tasks(cg), "the sandbox did not outlive its server"
    deadline = time.monotonic() + 10
    while cgroup_tasks(cg) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not cgroup_tasks(cg), "the sandbox outlived its grace period"
    # The next daemon finds it gone: reaped, 410, its layer and group freed.
    s2 = server_factory(state_dir=state, pool=0)
    err = expect_error(s2.get(f"/v1/sandboxes/{sid}"), 410, "sandbox_gone")
    assert "did not survive" in err["message"], err
    m = sf.parse_prometheus(s2.get("/metrics").text)
    assert m["execbox_sandboxes_reaped_total"] == 1 and m["execbox_sandboxes_adopted_total"] == 0, m
    assert "could not be re-adopted" in s2.stderr()
    deadline = time.monotonic() + 5
    while not cgroups_gone(cg) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert cgroups_gone(cg), cg
    assert records(state) == set() and not os.listdir(os.path.join(state, "keep"))
    s2.stop()


def hello(path: str, secret: bytes) -> bytes:
    """A peer's HELLO on a sandbox's keep socket (wire.h: type 9, DATA
    key 51); what init answers (b"" if it hangs up)."""
    import socket
    import struct
    msg = struct.pack("=II", 9, 0) + struct.pack("=II", 51, len(secret)) + secret + b"\0" * (-len(secret) % 4)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    try:
        # The path may pass sun_path's limit: through a directory fd.
        d = os.open(os.path.dirname(path), os.O_PATH)
        try:
            s.connect(f"/proc/self/fd/{d}/{os.path.basename(path)}")
        finally:
            os.close(d)
        s.send(msg)
        try:
            data, _, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(64))
        except (ConnectionResetError, socket.timeout):
            return b""
        return data
    finally:
        s.close()


def test_a_peer_without_the_secret_cannot_attach(execbox, server_factory, tmp_path):
    s1 = sf.start_server(execbox, str(tmp_path / "killed"), *SURVIVE, pool=0)
    state = s1.state_dir
    try:
        sid = s1.create()["id"]
        p = start_bg(s1, sid, "while :; do echo x; sleep 0.2; done")
    finally:
        kill_server(s1)
    path = os.path.join(state, "keep", f"{sid}.sock")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    rec = json.load(open(os.path.join(state, "sandboxes", f"{sid}.json")))
    assert stat.S_IMODE(os.stat(os.path.join(state, "sandboxes", f"{sid}.json")).st_mode) == 0o600
    secret = rec["keep"]["secret"].encode()
    # The attack: a wrong secret, one of the wrong length, none at all.
    wrong = bytes(reversed(secret))
    assert wrong != secret
    for bad in (wrong, secret[:-1], b""):
        assert hello(path, bad) == b"", f"init answered a peer with secret {bad!r}"
    # Positive control: the right secret gets KEPT (type 106) back, so the
    # refusals above were refusals. Init waits again when it hangs up.
    got = hello(path, secret)
    assert len(got) >= 8 and int.from_bytes(got[:4], "little") == 106, got
    # And the real next daemon still adopts it.
    s2 = server_factory(*SURVIVE, state_dir=state, pool=0)
    assert expect(s2.get(f"/v1/sandboxes/{sid}/processes/{p['pid']}"), 200).json()["status"] == "running"
    s2.remove(sid)
    s2.stop()


def test_sigterm_leaves_armed_sandboxes_for_the_next_server(execbox, server_factory, tmp_path):
    s1 = server_factory(*SURVIVE, pool=1)
    state = s1.state_dir
    sid = s1.create()["id"]
    s1.sh(sid, "echo kept > /home/user/k")
    p = start_bg(s1, sid, "while :; do echo y; sleep 0.2; done")
    cg = sandbox_cgroups(s1, sid)
    assert s1.stop() == 0
    assert "left 1 sandboxes for the next server" in s1.stderr()
    assert cgroup_tasks(cg), "SIGTERM without --stop-sandboxes ended the sandbox"
    s2 = server_factory(*SURVIVE, "--stop-sandboxes", state_dir=state, pool=0)
    assert s2.sh(sid, "cat /home/user/k") == "kept\n"
    assert expect(s2.get(f"/v1/sandboxes/{sid}/processes/{p['pid']}"), 200).json()["status"] == "running"
    # With --stop-sandboxes a stop deletes it.
    assert s2.stop() == 0
    deadline = time.monotonic() + 5
    while not cgroups_gone(cg) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert cgroups_gone(cg) and records(state) == set()


def test_a_session_that_cannot_be_reattached_is_marked_lost(execbox, server_factory, tmp_path):
    s1 = sf.start_server(execbox, str(tmp_path / "killed"), *SURVIVE, pool=0)
    state = s1.state_dir
    try:
        sid = s1.create()["id"]
        ok = expect(s1.post(f"/v1/sandboxes/{sid}/sessions", {"language": "python"}, timeout=90), 201).json()["id"]
        expect(s1.post(f"/v1/sandboxes/{sid}/sessions/{ok}/run", {"code": "y = 1"}, timeout=120), 200)
        # Its interpreter takes a second to start: killed before it is
        # ready, the daemon never handed its pipes to init.
        r = expect(s1.post(f"/v1/sandboxes/{sid}/sessions", {"language": "python"}, timeout=90), 201).json()
        kill_server(s1)
        assert r["state"] == "starting", r
    finally:
        if s1.alive():
            kill_server(s1)
    s2 = server_factory(*SURVIVE, state_dir=state, pool=0)
    states = {s["id"]: s for s in expect(s2.get(f"/v1/sandboxes/{sid}/sessions"), 200).json()["sessions"]}
    assert states[ok]["state"] == "idle", states
    lost = states[r["id"]]
    assert lost["state"] == "lost" and "restart" in lost["error"], lost
    err = expect_error(s2.post(f"/v1/sandboxes/{sid}/sessions/{r['id']}/run", {"code": "1"}, timeout=60), 409)
    assert "lost in a restart of the server" in err["message"] and err["hint"], err
    # A restart brings it back with a new interpreter.
    expect(s2.post(f"/v1/sandboxes/{sid}/sessions/{r['id']}/restart", {}, timeout=90), 200)
    res = expect(s2.post(f"/v1/sandboxes/{sid}/sessions/{r['id']}/run", {"code": "print(2)"}, timeout=120),
                 200).json()
    assert res["status"] == "ok", res
    s2.remove(sid)
    s2.stop()


def test_a_paused_sandbox_is_readopted_paused(execbox, server_factory, tmp_path):
    s1 = sf.start_server(execbox, str(tmp_path / "killed"), *SURVIVE, pool=0)
    state = s1.state_dir
    try:
        sid = s1.create()["id"]
        p = start_bg(s1, sid, "i=0; while :; do echo $i; i=$((i+1)); sleep 0.1; done")
        time.sleep(0.3)
        expect(s1.post(f"/v1/sandboxes/{sid}/pause", {}), 200)
        assert expect(s1.get(f"/v1/sandboxes/{sid}"), 200).json()["state"] == "paused"
    finally:
        kill_server(s1)
    s2 = server_factory(*SURVIVE, state_dir=state, pool=0)
    # Its frozen init was thawed to answer, then it was paused again.
    assert expect(s2.get(f"/v1/sandboxes/{sid}"), 200).json()["state"] == "paused"
    expect_error(s2.get(f"/v1/sandboxes/{sid}/processes/{p['pid']}/output"), 409, "paused")
    expect(s2.post(f"/v1/sandboxes/{sid}/resume", {}), 200)
    deadline = time.monotonic() + 5
    while len(output(s2, sid, p["pid"]).split()) < 3:
        assert time.monotonic() < deadline, "it did not resume"
        time.sleep(0.1)
    s2.remove(sid)
    s2.stop()


def test_sigkill_of_a_readopted_init_is_noticed_within_a_second(execbox, server_factory, tmp_path):
    s1 = sf.start_server(execbox, str(tmp_path / "killed"), *SURVIVE, pool=0)
    state = s1.state_dir
    try:
        sid = s1.create()["id"]
        rec = json.load(open(os.path.join(state, "sandboxes", f"{sid}.json")))
        init = rec["keep"]["pid"]
        cgs = sandbox_cgroups(s1, sid)
    finally:
        kill_server(s1)
    s2 = server_factory(*SURVIVE, state_dir=state, pool=0)
    expect(s2.get(f"/v1/sandboxes/{sid}"), 200)
    # No longer the daemon's child: its end is seen through its pidfd.
    with open(f"/proc/{init}/status") as f:
        assert int([line.split()[1] for line in f if line.startswith("PPid:")][0]) != s2.pid
    t0 = time.monotonic()
    os.kill(init, signal.SIGKILL)
    while (r := s2.get(f"/v1/sandboxes/{sid}")).status_code == 200:
        assert time.monotonic() - t0 < 1.0, "the death of a re-adopted init was not noticed within 1 s"
        time.sleep(0.02)
    err = expect_error(r, 410, "sandbox_gone")
    assert "init exited" in err["message"], err
    deadline = time.monotonic() + 5
    while not cgroups_gone(cgs) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert cgroups_gone(cgs), cgs
    assert records(state) == set() and not os.listdir(os.path.join(state, "keep"))
    s2.stop()


def pty_read(srv, sid, pid, needle: str, off: int = 0, timeout: float = 10) -> tuple[str, int]:
    """stdout of a pty process from off until needle shows up; (text, next offset)."""
    text, deadline = "", time.monotonic() + timeout
    while time.monotonic() < deadline:
        o = expect(srv.get(f"/v1/sandboxes/{sid}/processes/{pid}/output?stdout_offset={off}&wait_s=1"), 200).json()
        text += o["stdout"]
        off = o["stdout_offset"]
        if needle in text or not o["running"]:
            break
    return text, off


def pty_send(srv, sid, pid, data: str) -> None:
    b = base64.b64encode(data.encode()).decode()
    expect(srv.post(f"/v1/sandboxes/{sid}/processes/{pid}/stdin", {"data": b, "encoding": "base64"}), 200)


def ticks_of(text: str) -> list[int]:
    return [int(t) for t in re.findall(r"tick-(\d+)\r?\n", text)]


def test_a_pty_process_survives_a_sigkill_and_takes_input_after(execbox, server_factory, tmp_path):
    s1 = sf.start_server(execbox, str(tmp_path / "killed"), *SURVIVE, pool=0)
    state = s1.state_dir
    try:
        sid = s1.create()["id"]
        p = start_bg(s1, sid, "sh", pty={"cols": 80, "rows": 24})
        pid = p["pid"]
        # A counter the interactive shell runs in the background, on its terminal.
        pty_send(s1, sid, pid, "i=0; while :; do echo tick-$i; i=$((i+1)); sleep 0.1; done &\n")
        text, off = pty_read(s1, sid, pid, "tick-3\r\n")
        assert "tick-3" in text, text
        last = ticks_of(text)[-1]
    finally:
        kill_server(s1)
    time.sleep(1)   # it goes on writing to its terminal: init holds the master
    s2 = server_factory(*SURVIVE, state_dir=state, pool=0)
    info = expect(s2.get(f"/v1/sandboxes/{sid}/processes/{pid}"), 200).json()
    assert info["status"] == "running", info
    # From where the killed daemon's reader was: what it wrote meanwhile and after, no gap.
    text, _ = pty_read(s2, sid, pid, f"tick-{last + 15}\r\n", off)
    ticks = ticks_of(text)
    assert ticks and ticks[0] == last + 1 and ticks[-1] >= last + 15, (last, ticks[:3], ticks[-3:])
    assert ticks == list(range(last + 1, last + 1 + len(ticks))), f"a gap in the pty output (last read {last})"
    # The whole stream from its start is still there (its file in the sandbox).
    whole, end = pty_read(s2, sid, pid, "\x00", 0, timeout=1)
    assert ticks_of(whole)[:last + 1] == list(range(last + 1)), whole[:200]
    # Input reaches the shell (it computes the answer: not just the terminal's echo).
    pty_send(s2, sid, pid, "echo MARKER-$((6*7))\n")
    text, end = pty_read(s2, sid, pid, "MARKER-42\r\n", end)
    assert "MARKER-42\r\n" in text, text
    # And the terminal is resized.
    expect(s2.post(f"/v1/sandboxes/{sid}/processes/{pid}/resize", {"cols": 132, "rows": 43}), 200)
    pty_send(s2, sid, pid, "stty size\n")
    text, end = pty_read(s2, sid, pid, "43 132", end)
    assert "43 132" in text, text
    s2.remove(sid)
    s2.stop()


def test_a_watcher_survives_a_sigkill_and_sees_what_comes_after(execbox, server_factory, tmp_path):
    s1 = sf.start_server(execbox, str(tmp_path / "killed"), *SURVIVE, pool=0)
    state = s1.state_dir
    try:
        sid = s1.create()["id"]
        s1.sh(sid, "mkdir -p /home/user/w")
        wid = expect(s1.post(f"/v1/sandboxes/{sid}/watchers", {"path": "/home/user/w"}), 201).json()["watcher_id"]
        # An event stream's watch dies with its connection: init frees it
        # when the next daemon attaches (else it keeps one of 32 slots).
        stream = requests.get(f"{s1.url}/v1/sandboxes/{sid}/files/watch", params={"path": "/home/user"},
                              headers={**s1.headers(), "Accept": "text/event-stream"}, stream=True, timeout=30)
        expect(stream, 200)
        s1.sh(sid, "echo 1 > /home/user/w/before")
        deadline = time.monotonic() + 5
        while "before" not in [e["name"] for e in
                               expect(s1.get(f"/v1/sandboxes/{sid}/watchers/{wid}/events"), 200).json()["events"]]:
            assert time.monotonic() < deadline, "the watcher did not work before the restart"
            time.sleep(0.1)
        # Written while no daemon runs: init leaves it in the kernel's queue.
        start_bg(s1, sid, "sleep 1; echo 2 > /home/user/w/during")
    finally:
        kill_server(s1)
        stream.close()
    time.sleep(2)
    s2 = server_factory(*SURVIVE, state_dir=state, pool=0)
    got = expect(s2.get(f"/v1/sandboxes/{sid}/watchers/{wid}/events"), 200).json()
    assert not got["ended"], got
    s2.sh(sid, "echo 3 > /home/user/w/after")
    names = [e["name"] for e in got["events"] if e["type"] == "create"]
    deadline = time.monotonic() + 5
    while "after" not in names:
        assert time.monotonic() < deadline, f"no event after the restart: {names}"
        time.sleep(0.1)
        names += [e["name"] for e in expect(s2.get(f"/v1/sandboxes/{sid}/watchers/{wid}/events"), 200).json()["events"]
                  if e["type"] == "create"]
    assert names == ["during", "after"], names
    # A new watcher gets a new id; all 31 more fit in init (the stream's watch was freed).
    more = [expect(s2.post(f"/v1/sandboxes/{sid}/watchers", {"path": "/home/user"}), 201).json()["watcher_id"]
            for _ in range(31)]
    assert wid not in more and len(set(more)) == 31, (wid, more)
    # Deleting it there stops it, and a next restart does not bring it back.
    expect(s2.delete(f"/v1/sandboxes/{sid}/watchers/{wid}"), 204)
    expect_error(s2.get(f"/v1/sandboxes/{sid}/watchers/{wid}/events"), 404, "watcher_not_found")
    s2.remove(sid)
    s2.stop()
