"""What outlives the daemon (issue 12, section 4), with the default layers
(the btrfs store on disk, as CI runs).

Sandboxes do not survive a daemon yet: init ends when the daemon's socket
closes. What does survive is tested here: each sandbox's record and the
tombstones, so a restarted daemon reaps what an earlier one left, counts
it in /metrics, and answers 410 with why instead of a bare 404; the layer
store's loop device, which a restarted daemon must reuse; and a sandbox
whose init dies is noticed at once."""
from __future__ import annotations

import glob
import json
import os
import signal
import stat
import subprocess
import time

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
