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


def crowded(srv, peak):
    """A 128 MiB sandbox running a process of its own that holds 16 MiB,
    which the memory pressure must not take: (sid, the daemon's cgroup peak,
    its RSS peak) before the upload."""
    sid = srv.create(limits={"memory": 128 * MiB})["id"]
    expect(srv.post(f"/v1/sandboxes/{sid}/processes",
                    {"cmd": "python3 -c 'x = bytearray(16 << 20); import time; time.sleep(600)'"}), 201)
    time.sleep(0.5)
    return sid, peak(), rss_peak(srv.proc.pid)


def hashed(seed: bytes, tag: str = ""):
    """(chunk, hash): chunk(i) is MiB i of a stream made from seed and tag,
    and hash its sha256 so far."""
    h = hashlib.sha256()

    def chunk(i):
        c = hashlib.shake_256(seed + tag.encode() + i.to_bytes(4, "big")).digest(MiB)
        h.update(c)
        return c
    return chunk, h


def assert_flat(srv, peak, base, rss0=None):
    """The daemon's cgroup peak (and its RSS peak, given rss0) grew less than
    FLAT since base: (growth of the peak, of the RSS or None)."""
    grew = peak() - base
    rss = rss_peak(srv.proc.pid) - rss0 if rss0 is not None else None
    assert grew < FLAT, f"the daemon's cgroup grew by {grew >> 20} MiB"
    assert rss is None or rss < FLAT, "the daemon's RSS grew"
    return grew, rss


def test_an_upload_past_the_sandbox_memory_fails_507_and_the_daemon_stays_flat(daemon_cg):
    srv, peak = daemon_cg
    sid, base, rss0 = crowded(srv, peak)
    zeros = bytes(MiB)
    r = put(srv, sid, "/tmp/huge.bin", Body(400 * MiB, lambda i: zeros))
    assert r.status_code in (507, 413), r.text
    err = r.json()["error"]
    assert err["code"] == "disk_full" and "memory" in err["message"], err
    assert_flat(srv, peak, base, rss0)
    # The file was put back, the sandbox's own process lives, and it still works.
    out = srv.sh(sid, "stat -c %s /tmp/huge.bin; pgrep -fc 'bytearray'")
    assert out.split() == ["0", "1"], out
    srv.delete(f"/v1/sandboxes/{sid}")


def test_an_upload_with_room_succeeds_and_is_the_sandbox_s(daemon_cg):
    srv, peak = daemon_cg
    sid = srv.create(limits={"memory": 512 * MiB})["id"]
    chunk, h = hashed(os.urandom(32))
    base = peak()
    r = put(srv, sid, "/tmp/big.bin", Body(100 * MiB, chunk))
    expect(r, 200)
    assert r.json()["size"] == 100 * MiB
    assert_flat(srv, peak, base)
    out = srv.sh(sid, "sha256sum /tmp/big.bin")
    assert out.split()[0] == h.hexdigest()
    srv.delete(f"/v1/sandboxes/{sid}")


# ---- E2B's POST /files as multipart/form-data (what the SDKs' files.write
# sends): parsed as it comes and streamed part by part through the same
# writer, never held in the daemon (the old path buffered up to 16 MiB).

class Form:
    """A multipart/form-data body of files [(filename, n, chunk)], sent with
    a Content-Length, its contents made by chunk(i) per MiB, never held whole."""

    def __init__(self, files, boundary="xbFORMxb7c1e"):
        self.files, self.boundary = files, boundary
        self.ctype = f"multipart/form-data; boundary={boundary}"

    def head(self, name):
        return (f"--{self.boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n").encode()

    def tail(self):
        return f"--{self.boundary}--\r\n".encode()

    def __len__(self):
        return sum(len(self.head(f)) + n + 2 for f, n, _ in self.files) + len(self.tail())

    def __iter__(self):
        for name, n, chunk in self.files:
            yield self.head(name)
            for i in range(n // MiB):
                yield chunk(i)
            yield b"\r\n"
        yield self.tail()


def envd_headers(srv, sid):
    """E2B's envd headers for a sandbox made through REST (it gets an envd token too)."""
    r = srv.get(f"/sandboxes/{sid}", headers={"X-API-KEY": "e2b_" + "0" * 40})
    expect(r, 200)
    return {"E2b-Sandbox-Id": sid, "X-Access-Token": r.json()["envdAccessToken"]}


def post_form(srv, sid, form, timeout=300):
    return srv.request("POST", "/files", data=form, timeout=timeout,
                       headers=dict(envd_headers(srv, sid), **{"Content-Type": form.ctype}))


def test_a_multipart_upload_past_the_sandbox_memory_fails_507_and_the_daemon_stays_flat(daemon_cg):
    srv, peak = daemon_cg
    sid, base, rss0 = crowded(srv, peak)
    zeros = bytes(MiB)
    r = post_form(srv, sid, Form([("/tmp/small.txt", 0, None), ("/tmp/huge.bin", 400 * MiB, lambda i: zeros),
                                  ("/tmp/after.txt", 0, None)]))
    assert r.status_code == 507, r.text
    assert "memory" in r.json()["message"], r.text
    grew, rss = assert_flat(srv, peak, base, rss0)
    print(f"\nmultipart 400 MiB into 128 MiB: daemon cgroup peak +{grew / MiB:.1f} MiB, RSS peak +{rss / MiB:.1f} MiB")
    # The file was put back, the part after it never written, the sandbox's process lives.
    out = srv.sh(sid, "stat -c %s /tmp/small.txt /tmp/huge.bin; test -e /tmp/after.txt || echo none; "
                      "pgrep -fc 'bytearray'")
    assert out.split() == ["0", "0", "none", "1"], out
    srv.delete(f"/v1/sandboxes/{sid}")


def test_a_200_mib_multipart_upload_of_two_files_with_room_is_the_sandbox_s(daemon_cg):
    srv, peak = daemon_cg
    sid = srv.create(limits={"memory": 768 * MiB})["id"]
    seed = os.urandom(32)
    (chunk_a, hash_a), (chunk_b, hash_b) = hashed(seed, "a"), hashed(seed, "b")
    base, rss0 = peak(), rss_peak(srv.proc.pid)
    t0 = time.monotonic()
    r = post_form(srv, sid, Form([("/tmp/a.bin", 150 * MiB, chunk_a), ("b.bin", 50 * MiB, chunk_b)]))
    took = time.monotonic() - t0
    expect(r, 200)
    assert r.json() == [{"name": "a.bin", "type": "file", "path": "/tmp/a.bin"},
                        {"name": "b.bin", "type": "file", "path": "/home/user/b.bin"}], r.text
    grew, rss = assert_flat(srv, peak, base, rss0)
    print(f"\nmultipart 200 MiB (two files): {took:.1f} s, daemon cgroup peak +{grew / MiB:.1f} MiB, "
          f"RSS peak +{rss / MiB:.1f} MiB")
    out = srv.sh(sid, "sha256sum /tmp/a.bin /home/user/b.bin")
    assert [ln.split()[0] for ln in out.splitlines()] == [hash_a.hexdigest(), hash_b.hexdigest()], out
    srv.delete(f"/v1/sandboxes/{sid}")
