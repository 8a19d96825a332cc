"""Lifecycle faults (invariant 8: nothing outlives its sandbox): the v1
freezer kill path, execbox itself being signalled or killed, many sandboxes
at once, and shared state (/etc view) changing under running sandboxes."""
from __future__ import annotations

import json
import os
import signal
import time

import pytest

import xbhost

FREEZER = os.path.join(xbhost.CGROUP_ROOT, "freezer")


def token(tag: str) -> str:
    return f"xb{tag}{os.getpid() % 10000}{time.monotonic_ns() % 1000}"[:15]


def wait_for_comm(t: str, timeout: float = 10) -> list[xbhost.Proc]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = xbhost.find_by_comm(t)
        if found:
            return found
        time.sleep(0.02)
    return []


def own_new_cgroups(before: set[str]) -> list[str]:
    table = xbhost.proc_table()
    me = os.getpid()
    return sorted(cg for cg in xbhost.cgroup_dirs() - before
                  if not any(xbhost.foreign(table, pid, me) for pid in xbhost.cgroup_procs(cg)))


def remove_empty_cgroup(cg: str) -> None:
    """Remove a cgroup this test leaked (an empty one only: rmdir refuses
    otherwise). Another execbox may have reaped it first."""
    for _ in range(50):
        if not xbhost.cgroup_procs(cg):
            break
        time.sleep(0.1)
    try:
        os.rmdir(cg)
    except FileNotFoundError:
        pass


# ---- the v1 freezer kill path (hidden --kill-via-freezer) ----

needs_v1_freezer = pytest.mark.skipif(not os.path.isdir(FREEZER), reason="no v1 freezer hierarchy here")


@needs_v1_freezer
def test_freezer_kill_path_leaves_nothing(xb, probe_mount):
    """A run that times out, killed the freezer way, with an escapee and a
    fork loop racing the kill."""
    t = token("frz")
    p = xbhost.PROBE_IN
    r = xb(*probe_mount, "--kill-via-freezer", "--pids", "64", "--timeout", "1s", "--", "/bin/sh", "-c",
           f"{p} setsid-escape {t}; {p} forkbomb 30", timeout=30)
    assert r.json["status"] == "timeout", r.describe()
    assert r.elapsed < 3
    assert not xbhost.find_by_comm(t)


@needs_v1_freezer
@xbhost.retry_if_reaped
def test_kill_via_freezer_really_uses_the_freezer(popen, probe_mount):
    t = token("frz")
    p = popen(*probe_mount, "--kill-via-freezer", "--timeout", "2s", "--", "/bin/sh", "-c",
              f"{xbhost.PROBE_IN} bg-holder {t} 30; sleep 30")
    try:
        procs = wait_for_comm(t)
        assert procs, "the sandbox never started"
        with open(f"/proc/{procs[0].pid}/cgroup") as f:
            groups = dict(line.strip().split(":", 2)[1:] for line in f)
        assert groups.get("freezer", "/") != "/", f"the sandbox is not in a freezer cgroup: {groups}"
    finally:
        p.communicate(timeout=30)


# ---- execbox itself signalled or killed ----

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
@xbhost.retry_if_reaped
def test_signalled_execbox_ends_its_sandbox(popen, probe_mount, sig):
    t = token("sig")
    p = popen(*probe_mount, "--", "/bin/sh", "-c", f"{xbhost.PROBE_IN} setsid-escape {t}; sleep 30")
    assert wait_for_comm(t), "the sandbox never started"
    t0 = time.monotonic()
    p.send_signal(sig)              # our own child, by pid
    p.communicate(timeout=10)
    assert time.monotonic() - t0 < 2
    assert p.returncode != 0
    assert not xbhost.find_by_comm(t)


@xbhost.retry_if_reaped
def test_sigkilled_execbox_takes_its_sandbox_down(popen, probe_mount):
    """SIGKILL cannot be handled: init must notice its daemon is gone."""
    t = token("kil")
    before = xbhost.cgroup_dirs()
    p = popen(*probe_mount, "--", "/bin/sh", "-c", f"{xbhost.PROBE_IN} setsid-escape {t}; sleep 30")
    try:
        assert wait_for_comm(t), "the sandbox never started"
        p.kill()
        p.communicate(timeout=10)
        deadline = time.monotonic() + 5
        while xbhost.find_by_comm(t) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not xbhost.find_by_comm(t), "the sandbox outlived its execbox"
    finally:
        # The cgroups this leaves are the subject of the next test.
        for cg in own_new_cgroups(before):
            remove_empty_cgroup(cg)


def test_sigkilled_execbox_leaves_no_cgroups(popen, xb, probe_mount):
    """execbox run killed with SIGKILL cannot clean up after itself: its
    sandbox dies with it (init sees its socket close), and the empty cgroups,
    named after the uid slot it held, are removed by the next execbox that
    starts (the slot's lock is free, so the group is a dead owner's)."""
    t = token("kil")
    watcher = xbhost.serve_watcher()
    t0 = time.monotonic()
    before = xbhost.cgroup_dirs()
    p = popen(*probe_mount, "--", "/bin/sh", "-c", f"{xbhost.PROBE_IN} bg-holder {t} 30; sleep 30")
    leaked: list[str] = []
    try:
        assert wait_for_comm(t), "the sandbox never started"
        p.kill()
        p.communicate(timeout=10)
        # The sandbox's processes are gone at once ...
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and xbhost.find_by_comm(t):
            time.sleep(0.05)
        assert not xbhost.find_by_comm(t), "sandbox processes outlived a SIGKILLed execbox run"
        # ... and the next execbox removes the groups.
        r = xb("--", "true")
        assert r.json["status"] == "ok", r.describe()
        leaked = own_new_cgroups(before)
        if not leaked and watcher.started_between(t0, time.monotonic()):
            pytest.skip("a foreign `execbox serve` started and reaped every execbox cgroup meanwhile")
        assert not leaked, f"cgroups left after the next execbox run: {leaked}"
    finally:
        for cg in own_new_cgroups(before):
            remove_empty_cgroup(cg)


# ---- many at once ----

@pytest.mark.slow
@xbhost.retry_if_reaped
def test_many_concurrent_sandboxes(popen):
    n = 12
    procs = [popen("--json", "--", "/bin/sh", "-c", "cat /proc/self/uid_map; sleep 1") for _ in range(n)]
    bases = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        res = json.loads(out)
        assert res["status"] == "ok", res
        bases.append(int(res["stdout"].split()[1]))
    assert len(set(bases)) == n, f"two concurrent sandboxes shared a uid range: {sorted(bases)}"


# ---- shared state changing under a running sandbox ----

@pytest.mark.slow
@xbhost.retry_if_reaped
def test_etc_view_rebuild_does_not_empty_running_sandboxes(popen, xb):
    stamp = os.path.join(xbhost.RUNTIME_DIR, "etc", ".execbox-stamp")
    p = popen("--", "/bin/sh", "-c", "echo started; sleep 1.5; cat /etc/passwd >/dev/null && echo etc-ok")
    try:
        assert xbhost.read_lines(p, 1) == ["started"]
        old = time.time() - 7200
        # Age the view (and its "recently checked" mark): the next run rebuilds it.
        for f in (stamp, os.path.join(xbhost.RUNTIME_DIR, "etc.checked")):
            if os.path.exists(f):
                os.utime(f, (old, old))
        assert xb("--", "true").rc == 0
        out, err = p.communicate(timeout=30)
        assert out == b"etc-ok\n", f"/etc vanished under a running sandbox: {err.decode()!r}"
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()


def test_cgroup_v2_request_on_a_v1_host_is_a_clear_error(xb):
    if os.path.exists(os.path.join(xbhost.CGROUP_ROOT, "cgroup.procs")):
        pytest.skip("pure cgroup v2 host")
    r = xb("--cgroup", "v2", "--", "true", json_mode=False)
    assert r.rc == 125 and "--cgroup v1" in r.stderr, r.describe()


def test_explicit_cgroup_v1_works(xb):
    if os.path.exists(os.path.join(xbhost.CGROUP_ROOT, "cgroup.procs")):
        pytest.skip("pure cgroup v2 host")
    r = xb("--cgroup", "v1", "--memory", "64M", "--", "true")
    assert r.json["status"] == "ok", r.describe()
