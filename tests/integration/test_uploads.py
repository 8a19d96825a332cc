"""Uploads are charged to the sandbox, not the daemon (issue 12, section 1):
a streamed PUT goes through a writer in the sandbox's cgroup. The daemon
runs in a memory cgroup of its own here, so that its peak can be read: a
400 MiB PUT into /tmp (memory-backed) of a 128 MiB sandbox fails with 507
and leaves the daemon's peak and RSS flat, and a 100 MiB upload into a
sandbox with room succeeds, byte for byte, with the daemon's peak flat too
(the old daemon-side write charged every page to the daemon)."""
from __future__ import annotations

import hashlib
import os
import time

import pytest

from server_fixture import expect, server_factory  # noqa: F401

MiB = 1 << 20
FLAT = 48 * MiB   # the daemon's own buffers, the body's in flight, the pipe


def memcg() -> tuple[str, str]:
    """The memory hierarchy: (version, root)."""
    if os.path.exists("/sys/fs/cgroup/memory/cgroup.procs"):
        return "v1", "/sys/fs/cgroup/memory"
    try:
        with open("/sys/fs/cgroup/cgroup.controllers") as f:
            if "memory" in f.read().split():
                return "v2", "/sys/fs/cgroup"
    except OSError:
        pass
    pytest.skip("no memory cgroup controller to measure the daemon with")


@pytest.fixture
def daemon_cg(server_factory):
    """A server whose daemon is alone in a fresh memory cgroup; yields
    (srv, peak) where peak() is that group's peak usage in bytes."""
    ver, root = memcg()
    srv = server_factory(pool=0)
    path = os.path.join(root, f"xbtest-uploads-{os.getpid()}-{time.monotonic_ns()}")
    os.mkdir(path)
    with open(os.path.join(path, "cgroup.procs"), "w") as f:
        f.write(str(srv.proc.pid))
    peak_file = "memory.max_usage_in_bytes" if ver == "v1" else "memory.peak"
    if not os.path.exists(os.path.join(path, peak_file)):
        pytest.skip(f"{peak_file} is missing")

    def peak() -> int:
        with open(os.path.join(path, peak_file)) as f:
            return int(f.read())
    try:
        yield srv, peak
    finally:
        # Back to where it came from, so that the group can go.
        try:
            with open(os.path.join(root, "cgroup.procs"), "w") as f:
                f.write(str(srv.proc.pid))
        except OSError:
            pass
        for _ in range(50):
            try:
                os.rmdir(path)
                break
            except OSError:
                time.sleep(0.1)


def rss_peak(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


class Body:
    """n bytes made by chunk(i), sent with a Content-Length, never held whole."""

    def __init__(self, n: int, chunk):
        self.n, self.chunk = n, chunk

    def __len__(self):
        return self.n

    def __iter__(self):
        for i in range(self.n // MiB):
            yield self.chunk(i)


def put(srv, sid, path, body, timeout=300):
    return srv.request("PUT", f"/v1/sandboxes/{sid}/files", params={"path": path}, data=body, timeout=timeout,
                       headers={"Content-Type": "application/octet-stream"})


def test_an_upload_past_the_sandbox_memory_fails_507_and_the_daemon_stays_flat(daemon_cg):
    srv, peak = daemon_cg
    sid = srv.create(limits={"memory": 128 * MiB})["id"]
    # Something the sandbox runs, which the memory pressure must not take.
    expect(srv.post(f"/v1/sandboxes/{sid}/processes",
                    {"cmd": "python3 -c 'x = bytearray(16 << 20); import time; time.sleep(600)'"}), 201)
    time.sleep(0.5)
    base, rss0 = peak(), rss_peak(srv.proc.pid)
    zeros = bytes(MiB)
    r = put(srv, sid, "/tmp/huge.bin", Body(400 * MiB, lambda i: zeros))
    assert r.status_code in (507, 413), r.text
    err = r.json()["error"]
    assert err["code"] == "disk_full" and "memory" in err["message"], err
    assert peak() - base < FLAT, f"the daemon's cgroup grew by {(peak() - base) >> 20} MiB"
    assert rss_peak(srv.proc.pid) - rss0 < FLAT, "the daemon's RSS grew"
    # The file was put back, the sandbox's own process lives, and it still works.
    out = srv.sh(sid, "stat -c %s /tmp/huge.bin; pgrep -fc 'bytearray'")
    assert out.split() == ["0", "1"], out
    srv.delete(f"/v1/sandboxes/{sid}")


def test_an_upload_with_room_succeeds_and_is_the_sandbox_s(daemon_cg):
    srv, peak = daemon_cg
    sid = srv.create(limits={"memory": 512 * MiB})["id"]
    seed = os.urandom(32)
    h = hashlib.sha256()
    chunks = {}

    def chunk(i):
        c = chunks.get(i)
        if c is None:
            c = hashlib.shake_256(seed + i.to_bytes(4, "big")).digest(MiB)
            h.update(c)
        return c
    base = peak()
    r = put(srv, sid, "/tmp/big.bin", Body(100 * MiB, chunk))
    expect(r, 200)
    assert r.json()["size"] == 100 * MiB
    assert peak() - base < FLAT, f"the daemon's cgroup grew by {(peak() - base) >> 20} MiB"
    out = srv.sh(sid, "sha256sum /tmp/big.bin")
    assert out.split()[0] == h.hexdigest()
    srv.delete(f"/v1/sandboxes/{sid}")
