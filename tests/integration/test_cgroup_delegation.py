"""A daemon in a delegated cgroup v2 subtree (systemd's Delegate=yes) keeps
its sandboxes inside it (issue 12, section 6): it moves itself into the leaf
<own>/daemon, enables memory, pids and cpu in <own>'s subtree_control, and
makes each sandbox's group beside that leaf, limits included; at exit they
are gone. The test makes the subtree itself (marked with trusted.delegate,
as systemd does). It needs pure cgroup v2 with those controllers: make
check-vm runs it; on a v1 or hybrid host it is skipped."""
from __future__ import annotations

import os
import time

import pytest

import server_fixture as sf
import xbhost
from server_fixture import expect

ROOT = "/sys/fs/cgroup"


def _pure_v2() -> bool:
    try:
        with open(f"{ROOT}/cgroup.controllers") as f:
            have = set(f.read().split())
    except OSError:
        return False
    return {"memory", "pids", "cpu"} <= have


pytestmark = pytest.mark.skipif(not _pure_v2(), reason="needs pure cgroup v2 with memory, pids and cpu "
                                "(make check-vm runs it)")


def _v2_path(pid: int) -> str:
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            if line.startswith("0::"):
                return line[3:].strip()
    raise AssertionError(f"pid {pid} has no cgroup v2 line")


def _rmtree_cgroup(path: str) -> None:
    for d in sorted((w[0] for w in os.walk(path)), key=lambda p: -p.count("/")):
        try:
            os.rmdir(d)
        except OSError:
            pass


@pytest.fixture
def delegated():
    name = f"{xbhost.MARKER}-deleg"
    path = f"{ROOT}/{name}"
    os.mkdir(path)
    try:
        os.setxattr(path, "trusted.delegate", b"1")
        with open(f"{ROOT}/cgroup.subtree_control", "w") as f:
            f.write("+memory +pids +cpu")
        yield name, path
    finally:
        _rmtree_cgroup(path)


def test_sandboxes_go_below_the_daemons_delegated_cgroup(execbox, tmp_path, delegated):
    name, path = delegated
    # A wrapper moves itself into the subtree, then becomes the daemon (same pid).
    wrapper = tmp_path / "execbox-in-subtree"
    wrapper.write_text(f"#!/bin/sh\necho $$ > {path}/cgroup.procs || exit 99\nexec {execbox} \"$@\"\n")
    wrapper.chmod(0o755)
    srv = sf.start_server(str(wrapper), str(tmp_path), pool=1)
    try:
        assert _v2_path(srv.pid) == f"/{name}/daemon", _v2_path(srv.pid)
        with open(f"{path}/cgroup.subtree_control") as f:
            assert {"memory", "pids", "cpu"} <= set(f.read().split())
        assert "delegated subtree" in srv.stderr(), srv.stderr()[-2000:]
        sid = srv.create(limits={"memory": 256 << 20, "pids": 100})["id"]
        argv = ["sleep", f"87.{time.monotonic_ns() % 10 ** 9:09d}"]
        pid = expect(srv.post(f"/v1/sandboxes/{sid}/processes", {"argv": argv}), 201).json()["pid"]
        deadline = time.monotonic() + 5
        while not (hosts := sf.host_pids_with_cmdline(argv)):
            assert time.monotonic() < deadline, "the marker process never appeared"
            time.sleep(0.02)
        group = _v2_path(hosts[0])
        assert group.startswith(f"/{name}/{xbhost.MARKER}-u"), f"the sandbox's group is {group}, not below /{name}"
        top = ROOT + "/".join(group.split("/")[:3])
        with open(f"{top}/memory.max") as f:
            assert int(f.read()) == 256 << 20
        with open(f"{top}/pids.max") as f:
            assert f.read().strip() == "100"
        # Nothing of this server's at the root.
        assert not [d for d in os.listdir(ROOT) if d.startswith(f"{xbhost.MARKER}-u")]
        srv.post(f"/v1/sandboxes/{sid}/processes/{pid}/signal", {"signal": "KILL"})
        srv.remove(sid)
    finally:
        problems = sf.finish_server(srv)
    assert not problems, "\n".join(problems)
    left = [d for d in os.listdir(path) if d.startswith(f"{xbhost.MARKER}-")]
    assert not left, f"the server left groups in its subtree: {left}"
