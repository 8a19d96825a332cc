"""Kernel pools sandboxes would share (issue 12, section 2): inotify
instances, ptys and queued signals. Each test exhausts the pool in sandbox
A, holds it, and then sandbox B and the host's root still get theirs.
Without per-sandbox caps, the daemon (host root) owning every sandbox's
user namespace makes all of them draw on root's inotify instances (128 by
default), one shared pty count, and root's queued signals."""
from __future__ import annotations

import subprocess
import time

import pytest

from server_fixture import expect, server_factory  # noqa: F401

# Each program takes all it can, prints how many, then holds them.
INOTIFY = r"""
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
fds = []
while len(fds) < 100000:
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    fds.append(fd)
print("TOOK", len(fds), os.strerror(ctypes.get_errno()), flush=True)
time.sleep(120)
"""
PTYS = r"""
import os, time
fds = []
while len(fds) < 100000:
    try:
        fds.append(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
    except OSError as e:
        err = e.strerror
        break
print("TOOK", len(fds), err, flush=True)
time.sleep(120)
"""
SIGNALS = r"""
import ctypes, os, signal, time
libc = ctypes.CDLL(None, use_errno=True)
sig = signal.SIGRTMIN
signal.pthread_sigmask(signal.SIG_BLOCK, [sig])
n = 0
while n < 10000000:
    if libc.sigqueue(os.getpid(), int(sig), ctypes.c_void_p(n)) != 0:
        break
    n += 1
print("TOOK", n, os.strerror(ctypes.get_errno()), flush=True)
time.sleep(120)
"""
ONE = {
    "inotify": "import ctypes; l = ctypes.CDLL(None); print('GOT', l.inotify_init1(0) >= 0)",
    "ptys": "import os; os.open('/dev/ptmx', os.O_RDWR | os.O_NOCTTY); print('GOT', True)",
    "signals": ("import ctypes, os, signal; l = ctypes.CDLL(None); s = signal.SIGRTMIN; "
                "signal.pthread_sigmask(signal.SIG_BLOCK, [s]); "
                "print('GOT', l.sigqueue(os.getpid(), int(s), ctypes.c_void_p(1)) == 0)"),
}
HOG = {"inotify": INOTIFY, "ptys": PTYS, "signals": SIGNALS}


def hog(srv, sid: str, program: str) -> tuple[int, str]:
    base = f"/v1/sandboxes/{sid}/processes"
    r = srv.post(base, {"argv": ["python3", "-c", program]})
    expect(r, 201)
    pid = r.json()["pid"]
    deadline = time.monotonic() + 60
    out = ""
    while "TOOK" not in out and time.monotonic() < deadline:
        o = expect(srv.get(f"{base}/{pid}/output?wait_s=5"), 200).json()
        out = o["stdout"] + o["stderr"]
        if not o.get("running", True) and "TOOK" not in out:
            break
    assert "TOOK" in out, out
    words = out.split("TOOK", 1)[1].split(None, 1)
    return int(words[0]), words[1].strip()


def host_root_gets(kind: str) -> bool:
    """The same one-off program as the host's root, outside any sandbox."""
    p = subprocess.run(["python3", "-c", ONE[kind]], capture_output=True, text=True, timeout=30)
    return p.stdout.strip() == "GOT True"


@pytest.mark.parametrize("kind,cap", [("inotify", 128), ("ptys", 64), ("signals", None)])
def test_one_sandbox_exhausting_a_pool_leaves_the_others_theirs(server_factory, kind, cap):
    srv = server_factory("--max-sandboxes", "50", pool=0)
    a, b = srv.create()["id"], srv.create()["id"]
    took, why = hog(srv, a, HOG[kind])
    # The attack ran: A took everything it could, until the kernel said no.
    assert took > 0 and why, (took, why)
    if cap is not None:
        assert took == cap, (kind, took, why)
    else:
        assert 16 <= took <= 1 << 20, (took, why)
    # B still gets one, and so does the host's root.
    r = srv.exec(b, argv=["python3", "-c", ONE[kind]])
    assert r["stdout"].strip() == "GOT True", r
    assert host_root_gets(kind)
    # A second hog in B gets as much as A did: A lowered nothing.
    took_b, _ = hog(srv, b, HOG[kind])
    assert took_b == took, (kind, took, took_b)
    srv.remove(a)
    srv.remove(b)


def test_host_limits_are_raised_not_lowered(server_factory):
    srv = server_factory("--max-sandboxes", "50", pool=0)
    assert srv.alive()
    with open("/proc/sys/fs/inotify/max_user_instances") as f:
        assert int(f.read()) >= 128 + 2 * 50 * 128
    with open("/proc/sys/kernel/pty/max") as f:
        assert int(f.read()) >= 1024 + 50 * 64


RAISE = r"""
for f in /proc/sys/user/max_inotify_instances /proc/sys/user/max_inotify_watches; do
  echo 1000000 > $f 2>/dev/null && echo "RAISED $f"; echo "NOW $f $(cat $f)"
done
ulimit -Hi unlimited 2>/dev/null && echo RAISED-sigpending-hard; echo "SIGPENDING $(ulimit -Hi)"
mkdir -p /tmp/pts2 && mount -t devpts -o newinstance,max=100000 devpts /tmp/pts2 2>/dev/null && echo MOUNTED-devpts
grep -q ' /tmp/pts2 ' /proc/mounts && echo MOUNTED-devpts
grep '^CapEff' /proc/self/status
echo TRIED
"""


def test_root_inside_cannot_raise_its_own_caps(server_factory):
    """Root inside (uid 0 of the sandbox's user namespace) tries to lift the
    caps: its namespace's inotify limits, its hard RLIMIT_SIGPENDING, a
    devpts instance of its own with a larger max=. Each is refused, and a
    root hog still stops at the caps."""
    srv = server_factory("--max-sandboxes", "50", pool=0)
    a = srv.create(user="root")["id"]
    before = srv.exec(a, cmd="ulimit -Hi", user="root")["stdout"].strip()
    r = srv.exec(a, cmd=RAISE, user="root")
    out = r["stdout"]
    assert "TRIED" in out, r                                          # the attack ran
    assert srv.exec(a, cmd="id -u", user="root")["stdout"] == "0\n"
    assert "RAISED" not in out and "MOUNTED" not in out, out
    assert "NOW /proc/sys/user/max_inotify_instances 128" in out, out
    assert f"SIGPENDING {before}" in out, out
    cap_eff = int(out.split("CapEff:")[1].split()[0], 16)
    assert not cap_eff & (1 << 24), hex(cap_eff)                      # no CAP_SYS_RESOURCE
    # As root, the hogs stop where the user's do.
    for kind, cap in (("inotify", 128), ("ptys", 64)):
        base = f"/v1/sandboxes/{a}/processes"
        p = expect(srv.post(base, {"argv": ["python3", "-c", HOG[kind]], "user": "root"}), 201).json()["pid"]
        deadline, text = time.monotonic() + 60, ""
        while "TOOK" not in text and time.monotonic() < deadline:
            o = expect(srv.get(f"{base}/{p}/output?wait_s=5"), 200).json()
            text = o["stdout"] + o["stderr"]
        assert int(text.split("TOOK", 1)[1].split()[0]) == cap, (kind, text)
        expect(srv.post(f"{base}/{p}/signal", {"signal": "KILL"}), 200)
    assert host_root_gets("inotify") and host_root_gets("ptys")
    srv.remove(a)
