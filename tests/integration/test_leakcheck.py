"""The leak detector behind the autouse `no_leaks` fixture must itself work:
each test plants one kind of leak on the host, checks that the detector
names it, and removes it again (only what it planted)."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time

import pytest
import requests

from server_fixture import host_pids_with_cmdline

import xbhost
from xbhost import HostState

# A host uid at the top of the sandbox range, which no uid slot reaches.
FAKE_SANDBOX_UID = 4294000000


def detected(before: HostState, needle: str) -> bool:
    return any(needle in leak for leak in xbhost.leaks_since(before))


@pytest.mark.parametrize("hierarchy", ["pids", "memory", "unified", "freezer"])
def test_detects_a_leftover_cgroup(hierarchy):
    root = os.path.join(xbhost.CGROUP_ROOT, hierarchy)
    if not os.path.isdir(root):
        pytest.skip(f"no {hierarchy} hierarchy")
    # This run's marker, and no uid slot: execbox's own reaper leaves it alone.
    path = os.path.join(root, f"{xbhost.MARKER}-leakcheck{os.getpid()}")
    before = HostState.capture()
    os.mkdir(path)
    try:
        assert detected(before, path)
    finally:
        os.rmdir(path)
    assert not detected(before, path)


def test_detects_a_process_with_a_sandbox_uid():
    before = HostState.capture()
    p = subprocess.Popen(["sleep", "30"], user=FAKE_SANDBOX_UID, group=FAKE_SANDBOX_UID, extra_groups=[])
    try:
        time.sleep(0.1)
        leaks = xbhost.leaks_since(before)
        assert any(f"process {p.pid} " in leak and "sandbox host uid" in leak for leak in leaks), leaks
        assert any(f"process {p.pid} " in leak and "child of the test" in leak for leak in leaks), leaks
    finally:
        p.kill()
        p.wait()
    assert not detected(before, f"process {p.pid} ")


def test_detects_a_mount(tmp_path):
    target = tmp_path / "m"
    target.mkdir()
    before = HostState.capture()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "xbleak", str(target)], check=True)
    try:
        assert detected(before, f"mount {target}")
    finally:
        subprocess.run(["umount", str(target)], check=True)
    assert not detected(before, f"mount {target}")


def test_detects_a_temp_entry():
    path = f"/tmp/{xbhost.MARKER}-leakcheck-{os.getpid()}"
    before = HostState.capture()
    os.mkdir(path)
    try:
        assert detected(before, path)
    finally:
        os.rmdir(path)
    assert not detected(before, path)


def test_detects_a_sandbox_owned_file_in_dev_shm():
    path = f"/dev/shm/xb-leakcheck-{os.getpid()}"
    before = HostState.capture()
    with open(path, "w"):
        pass
    os.chown(path, FAKE_SANDBOX_UID, FAKE_SANDBOX_UID)
    try:
        assert detected(before, path)
    finally:
        os.unlink(path)


# ---- only this run's leftovers count ----

FOREIGN = f"execbox-foreign{os.getpid()}"


@pytest.mark.parametrize("hierarchy", ["pids", "unified"])
def test_ignores_another_runs_cgroup_and_temp_entry(hierarchy):
    """Another test run or daemon (another prefix) may leave what it likes:
    not ours to report. Ours, planted alongside, is reported (the control)."""
    root = os.path.join(xbhost.CGROUP_ROOT, hierarchy)
    if not os.path.isdir(root):
        pytest.skip(f"no {hierarchy} hierarchy")
    theirs = [os.path.join(root, f"{FOREIGN}-leak"), f"/tmp/{FOREIGN}-leak"]
    mine = os.path.join(root, f"{xbhost.MARKER}-leak{os.getpid()}")
    before = HostState.capture()
    made = []
    try:
        for p in theirs + [mine]:
            os.mkdir(p)
            made.append(p)
        leaks = xbhost.leaks_since(before)
        assert any(mine in leak for leak in leaks), leaks
        assert not any(FOREIGN in leak for leak in leaks), leaks
    finally:
        for p in made:
            os.rmdir(p)


def test_ignores_a_mount_outside_this_runs_directories():
    """A mount another suite made (a netns, a layer store) is not ours; one
    carrying our marker is."""
    theirs = f"/tmp/{FOREIGN}-mnt"
    mine = f"/tmp/{xbhost.MARKER}-mnt{os.getpid()}"
    before = HostState.capture()
    made = []
    try:
        for p in (theirs, mine):
            os.mkdir(p)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "xbleak", p], check=True)
            made.append(p)
        leaks = xbhost.leaks_since(before)
        assert any(f"mount {mine} " in leak for leak in leaks), leaks
        assert not any(theirs in leak for leak in leaks), leaks
    finally:
        for p in made:
            subprocess.run(["umount", p], check=True)
        for p in (theirs, mine):
            if os.path.isdir(p):
                os.rmdir(p)


def _detached_serve(execbox: str, state: str, prefix: str) -> tuple[int, str]:
    """Start `execbox serve` as another user of the machine would: not a
    child of this test (the shell that starts it exits), with its own
    cgroup prefix. Its pid and URL."""
    log = state + ".out"
    env = dict(os.environ, EXECBOX_CGROUP_PREFIX=prefix)
    env.pop("EXECBOX_TOKEN", None)
    out = subprocess.run(["sh", "-c", f'setsid "$0" serve --listen 127.0.0.1:0 --state-dir "$1" --no-auth --pool 0 --stop-sandboxes '
                          f'>"$2" 2>&1 </dev/null & echo $!', execbox, state, log],
                         env=env, capture_output=True, text=True, check=True)
    pid = int(out.stdout.strip())
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with open(log) as f:
            text = f.read()
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", text)
        if m:
            return pid, m.group(1)
        assert os.path.exists(f"/proc/{pid}"), f"the foreign server died: {text}"
        time.sleep(0.05)
    raise AssertionError(f"the foreign server never listened: {text}")


def _stop(pid: int) -> None:
    os.kill(pid, signal.SIGTERM)        # the server we started, by pid
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_foreign_daemons_sandboxes_are_ignored_ours_are_reported(execbox, tmp_path):
    """Two real daemons with live sandboxes: one of another prefix and not
    ours (detached), one of this run's prefix. The checker must name every
    cgroup and process of ours and none of theirs."""
    before = HostState.capture()
    pids = []
    try:
        fpid, furl = _detached_serve(execbox, str(tmp_path / "foreign"), FOREIGN)
        pids.append(fpid)
        opid, ourl = _detached_serve(execbox, str(tmp_path / "ours"), xbhost.MARKER)
        pids.append(opid)
        for url in (furl, ourl):
            r = requests.post(url + "/v1/sandboxes", json={}, timeout=30)
            assert r.status_code == 201, r.text
            sid = r.json()["id"]
            r = requests.post(f"{url}/v1/sandboxes/{sid}/processes", json={"argv": ["sleep", "60"]}, timeout=30)
            assert r.status_code == 201, r.text
        theirs = [cg for cg in xbhost.cgroup_dirs(all_runs=True) if os.path.basename(cg).startswith(FOREIGN + "-u")]
        assert theirs, "the foreign daemon's sandbox has no cgroup: the attack did not run"
        leaks = xbhost.leaks_since(before)
        assert not any(FOREIGN in leak for leak in leaks), leaks
        mine = [leak for leak in leaks if leak.startswith("cgroup ") and f"{xbhost.MARKER}-u" in leak]
        assert mine, f"our own daemon's live sandbox was not reported: {leaks}"
        procs = [leak for leak in leaks if "sandbox host uid" in leak]
        assert procs, f"our own sandbox's processes were not reported: {leaks}"
        for leak in procs:
            pid = int(leak.split()[1])
            assert xbhost.proc_cgroup_foreign(pid) is False, f"reported a foreign process: {leak}"
    finally:
        for pid in pids:
            _stop(pid)
    assert not xbhost.wait_for_no_leaks(before)


def test_execbox_run_carries_the_marker(popen):
    """`execbox run` inherits this run's prefix: its cgroups are the ones
    the checker counts (seen from the host, as the sandbox sees only /)."""
    argv = ["sleep", f"30.{os.getpid()}"]
    p = popen("--", *argv)
    deadline = time.monotonic() + 10
    while not (hosts := host_pids_with_cmdline(argv)):
        assert time.monotonic() < deadline and p.poll() is None, "the sandbox never started"
        time.sleep(0.02)
    with open(f"/proc/{hosts[0]}/cgroup") as f:
        text = f.read()
    assert f"/{xbhost.MARKER}-u" in text, text
    assert xbhost.proc_cgroup_foreign(hosts[0]) is False
