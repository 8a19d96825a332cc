"""Creates when the host runs short (issue 12, sections 4 and 5): with the
state directory full (a small tmpfs this test mounts and fills) or with
`ulimit -n 64`, a create fails with a clean 503 and a hint, never a 500,
and leaves no cgroup behind; once space or fds return, creates work
again."""
from __future__ import annotations

import os
import subprocess
import time

import pytest
import requests

import server_fixture as sf
from server_fixture import expect


def _new_group_names(before: set[str]) -> set[str]:
    """The names (MARKER-uN) of this run's cgroups made since `before`."""
    return {os.path.basename(p) for p in sf.execbox_cgroups() - before}


def _finish(srv: sf.Server) -> None:
    problems = sf.finish_server(srv)
    assert not problems, "\n".join(problems)


def _check_refused(r: requests.Response, words: str) -> dict:
    assert r.status_code == 503, f"expected 503, got {r.status_code}: {r.text[:500]}"
    err = r.json()["error"]
    assert err["hint"] and words in (err["message"] + err["hint"]), err
    return err


@pytest.fixture
def small_fs(tmp_path):
    mnt = tmp_path / "state"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160m,mode=0700", "tmpfs", str(mnt)], check=True)
    try:
        yield str(mnt)
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_full_state_dir_refuses_creates_with_503_and_recovers(execbox, tmp_path, small_fs):
    srv = sf.start_server(execbox, str(tmp_path), pool=0, state_dir=small_fs)
    try:
        sid = srv.create()["id"]
        before = sf.execbox_cgroups()
        fill = os.path.join(small_fs, "fill")
        # Fill it to the last block (dd stops at ENOSPC).
        subprocess.run(["dd", "if=/dev/zero", f"of={fill}", "bs=1M"], capture_output=True, check=False)
        assert os.statvfs(small_fs).f_bavail < 16, "the tmpfs is not full"
        for _ in range(3):
            err = _check_refused(srv.post("/v1/sandboxes", {}), "state directory")
            assert "full" in err["message"], err
        assert not _new_group_names(before), "a refused create left a cgroup"
        # The server and the sandbox it has still answer.
        expect(srv.get("/healthz"), 200)
        assert srv.exec(sid, cmd="echo alive")["stdout"] == "alive\n"
        os.unlink(fill)
        sid2 = srv.create()["id"]
        assert srv.exec(sid2, cmd="echo back")["stdout"] == "back\n"
        srv.remove(sid2)
        srv.remove(sid)
    finally:
        _finish(srv)


def test_ulimit_n_64_creates_fail_with_503_and_recover(execbox, tmp_path):
    wrapper = tmp_path / "execbox-64"
    wrapper.write_text(f"#!/bin/sh\nulimit -n 64 || exit 99\nexec {execbox} \"$@\"\n")
    wrapper.chmod(0o755)
    srv = sf.start_server(str(wrapper), str(tmp_path), pool=0)
    try:
        with open(f"/proc/{srv.pid}/limits") as f:
            assert any(line.startswith("Max open files") and " 64 " in line for line in f), "no ulimit -n 64"
        before = sf.execbox_cgroups()
        ids, refused = [], 0
        for _ in range(30):
            r = srv.post("/v1/sandboxes", {})
            if r.status_code == 201:
                ids.append(r.json()["id"])
                continue
            assert r.status_code in (503, 429), f"a create out of fds answered {r.status_code}: {r.text[:500]}"
            assert r.json()["error"]["hint"], r.text
            refused += 1
            if refused >= 5:
                break
        assert ids and refused, f"{len(ids)} created, {refused} refused: the fd limit was never reached"
        # Only the live sandboxes have cgroups (one name each, in every hierarchy).
        assert len(_new_group_names(before)) == len(ids), (sorted(_new_group_names(before)), ids)
        expect(srv.get("/healthz"), 200)
        # fds return when sandboxes go: creates (and a command in the new
        # one, under the tenant's fd budget too) work again.
        for _ in range(min(2, len(ids))):
            srv.remove(ids.pop())
        deadline = time.monotonic() + 5     # its init is reaped, its fds closed, in a moment
        while (r := srv.post("/v1/sandboxes", {})).status_code != 201 and time.monotonic() < deadline:
            assert r.status_code == 503, r.text
            time.sleep(0.2)
        expect(r, 201)
        ids.append(r.json()["id"])
        assert srv.exec(ids[-1], cmd="echo ok")["stdout"] == "ok\n"
        for sid in ids:
            srv.remove(sid)
    finally:
        _finish(srv)
