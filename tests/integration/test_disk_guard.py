"""Sandboxes cannot fill the filesystem of the daemon's state (issue 12):
their layers live in a sparse image there, and their disk limits together
may exceed what it has free. Below the reserve plus a guard, every layer
stops taking writes (EDQUOT, as at its own limit), so the daemon's records,
tombstones and token still get written, creates go on, and writes come
back when the space does."""
from __future__ import annotations

import os
import time

from server_fixture import expect, expect_error, finish_server, small_state, start_server  # noqa: F401

MB = 1 << 20
RESERVE = 32 * MB          # XB_STATE_RESERVE (core/core.h)
GUARD = 256 * MB           # XB_STATE_GUARD


def avail(path: str) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def sh(srv, sid, cmd, timeout=120):
    return srv.exec(sid, cmd=cmd, timeout_s=timeout, timeout=timeout + 30)


def test_a_sandbox_filling_its_disk_cannot_fill_the_state_dir(execbox, tmp_path, small_state):
    srv = start_server(execbox, str(tmp_path), no_auth=False, pool=0, state_dir=small_state)
    try:
        a = srv.create()["id"]
        assert srv.get(f"/v1/sandboxes/{a}").json()["limits"]["disk"] == 1 << 30
        free0 = avail(small_state)
        assert free0 < (1 << 30), free0   # the limit alone would let it fill the filesystem
        # The attack: write (and sync) more than the filesystem has.
        r = sh(srv, a, "dd if=/dev/zero of=/home/user/fill bs=1M count=1000 conv=fsync 2>&1; echo rc=$?; "
                       "sync; stat -c %s /home/user/fill")
        out = r["stdout"]
        assert "rc=1" in out and ("Disk quota exceeded" in out or "No space left" in out), out
        wrote = int(out.split()[-1])
        assert wrote > 200 * MB, out   # it ran: it wrote until the guard
        left = avail(small_state)
        print(f"state fs: {free0 // MB} MiB free, the sandbox wrote {wrote // MB} MiB, "
              f"{left // MB} MiB left")
        assert left >= RESERVE, (left // MB, out)
        assert "layers take no more writes" in srv.stderr(), srv.stderr()[-2000:]
        # The daemon's own writes: a record, a tombstone; creates go on.
        b = srv.create()["id"]
        assert os.path.exists(os.path.join(small_state, "sandboxes", b + ".json"))
        expect(srv.delete(f"/v1/sandboxes/{b}"), 204)
        expect_error(srv.get(f"/v1/sandboxes/{b}"), 410, "sandbox_gone")
        with open(os.path.join(small_state, "tombs.log")) as f:
            assert b in f.read()
        # The sandbox at the guard still reads and deletes; space comes back, and so do writes.
        r = sh(srv, a, "head -c 100 /home/user/fill | wc -c; rm /home/user/fill; sync; echo removed")
        assert r["stdout"].split() == ["100", "removed"], r
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "take writes" not in srv.stderr():
            time.sleep(0.2)
        assert "free again" in srv.stderr(), (avail(small_state) // MB, srv.stderr()[-2000:])
        r = sh(srv, a, "dd if=/dev/zero of=/home/user/again bs=1M count=20 conv=fsync 2>&1; echo rc=$?")
        assert "rc=0" in r["stdout"], r
        srv.remove(a)
        c = srv.create()["id"]
        r = sh(srv, c, "dd if=/dev/zero of=/home/user/c bs=1M count=20 conv=fsync 2>&1; echo rc=$?")
        assert "rc=0" in r["stdout"], r
        srv.remove(c)
    finally:
        problems = finish_server(srv)
    assert not problems, problems
    # The token was never lost.
    with open(os.path.join(small_state, "token")) as f:
        assert f.read().strip()
