"""The leak detector behind the autouse `no_leaks` fixture must itself work:
each test plants one kind of leak on the host, checks that the detector
names it, and removes it again (only what it planted)."""
from __future__ import annotations

import os
import subprocess
import time

import pytest

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
    # Named so that execbox's own reaper (prefix "execbox-") leaves it alone.
    path = os.path.join(root, f"xb-leakcheck-execbox-{os.getpid()}")
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
    path = f"/tmp/execbox-leakcheck-{os.getpid()}"
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
