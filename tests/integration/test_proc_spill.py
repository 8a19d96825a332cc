"""Background process output (issue 12, section 1): the daemon keeps a
bounded head and tail, and the whole stream goes to a file inside the
sandbox (/var/tmp/execbox/<tag>.stdout), charged to the sandbox's disk;
reads by offset come from there. A sandbox whose disk fills gets its file
marked incomplete, never a daemon error."""
from __future__ import annotations

import hashlib
import threading
import time

import pytest

import server_fixture as sf
from server_fixture import expect, server_factory  # noqa: F401

MB = 1 << 20


def rss(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def start(srv, sid, cmd, **kw) -> dict:
    return expect(srv.post(f"/v1/sandboxes/{sid}/processes", {"cmd": cmd, **kw}), 201).json()


def wait(srv, sid, pid, timeout=120) -> dict:
    r = expect(srv.post(f"/v1/sandboxes/{sid}/processes/{pid}/wait", {"timeout_s": timeout}, timeout=timeout + 30),
               200).json()
    assert r["status"] != "running", r
    return r


def read(srv, sid, pid, off, n) -> tuple[str, dict]:
    r = expect(srv.get(f"/v1/sandboxes/{sid}/processes/{pid}/output",
                       params={"stdout_offset": off, "max_bytes": n}), 200).json()
    return r["stdout"], r


def proc(srv, sid, pid) -> dict:
    return expect(srv.get(f"/v1/sandboxes/{sid}/processes/{pid}"), 200).json()


def ok(srv, sid, cmd) -> str:
    r = srv.exec(sid, cmd=cmd, timeout_s=120, timeout=180)
    assert r["exit_code"] == 0, r
    return r["stdout"]


# Block k (1 KiB) is "%015d\n" % k, 64 times: every offset's content is known.
GEN = "python3 -c \"import sys\nw = sys.stdout.write\nfor k in range({n}): w(('%015d\\n' % k) * 64)\""


def block(k: int) -> str:
    return ("%015d\n" % k) * 64


def expected(off: int, n: int) -> str:
    first = off // 1024
    text = "".join(block(k) for k in range(first, first + n // 1024 + 2))
    return text[off - first * 1024:off - first * 1024 + n]


def test_300mb_readable_by_offset_from_the_file_and_rss_bounded(server_factory):
    srv = server_factory(pool=0)
    sid = srv.create(limits={"disk": 1 << 30})["id"]
    blocks = 300 * 1024  # 300 MiB
    total = blocks * 1024
    rss0 = rss(srv.pid)
    peak = [rss0]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], rss(srv.pid))
            time.sleep(0.05)

    t = threading.Thread(target=sample)
    t.start()
    try:
        p = start(srv, sid, GEN.format(n=blocks))
        done = wait(srv, sid, p["pid"], timeout=240)
    finally:
        stop.set()
        t.join()
    # Past output_limit the verdict is output_limit, the exit its own.
    assert done["status"] == "output_limit" and done["exit_code"] == 0, {k: done[k] for k in ("status", "exit_code")}
    info = proc(srv, sid, p["pid"])
    f = info["stdout_file"]
    assert f["complete"] is True and f["bytes"] == total, f
    assert f["path"].startswith("/var/tmp/execbox/") and f["path"].endswith(".stdout"), f
    # The daemon kept a head and a tail only: far less than the stream.
    assert peak[0] - rss0 < 64 * MB, (peak[0] - rss0) / MB
    # Start, middle and end, by offset, from the file (memory kept only
    # the head and the tail: the middle can come from nowhere else).
    for off in (0, total // 2 + 3, total - 1000):
        got, r = read(srv, sid, p["pid"], off, 4096)
        assert got == expected(off, min(4096, total - off)), (off, got[:40])
        assert r["stdout_skipped"] == 0 and r["stdout_offset"] == off + len(got), r
    # The file inside is the whole stream.
    want = hashlib.sha256()
    for i in range(0, blocks, 4096):
        want.update("".join(block(k) for k in range(i, min(blocks, i + 4096))).encode())
    inside = ok(srv, sid, f"sha256sum {f['path']} | cut -d' ' -f1; stat -c %s {f['path']}").split()
    assert inside == [want.hexdigest(), str(total)], inside


def test_spill_counts_against_the_disk_limit(server_factory):
    srv = server_factory(pool=0)
    sid = srv.create(limits={"disk": 48 * MB})["id"]
    p = start(srv, sid, "head -c 120M /dev/zero | tr '\\0' x; echo; echo done >&2")
    done = wait(srv, sid, p["pid"])
    # The process ran to its end: the daemon kept reading.
    assert done["status"] == "output_limit" and done["exit_code"] == 0, done["status"]
    info = proc(srv, sid, p["pid"])
    assert info["stdout_bytes"] == 120 * MB + 1, info
    f = info["stdout_file"]
    assert f["complete"] is False and ("quota" in f["error"].lower() or "space" in f["error"].lower()), f
    assert 16 * MB <= f["bytes"] < 48 * MB, f
    # The disk is full for stderr's file too; its bytes are still in memory.
    assert info["stderr_bytes"] == 5 and info["stderr_file"]["bytes"] in (0, 5), info
    # Reads past the file come from memory's tail, marked as skipped.
    got, r = read(srv, sid, p["pid"], f["bytes"] + 10 * MB, 100)
    assert r["stdout_skipped"] > 0 and got == "x" * len(got), r
    got, r = read(srv, sid, p["pid"], 0, 100)
    assert got == "x" * 100 and r["stdout_skipped"] == 0, r
    # The daemon answers, and the sandbox still works once space is freed.
    expect(srv.get("/healthz"), 200)
    assert ok(srv, sid, f"rm {f['path']} && echo freed") == "freed\n"


def test_exec_and_default_sandbox_unchanged(server_factory):
    """A foreground exec has no file; a quick background one has both, complete."""
    srv = server_factory(pool=0)
    sid = srv.create()["id"]
    r = srv.exec(sid, cmd="echo hi")
    assert "stdout_file" not in r and r["stdout"] == "hi\n"
    p = start(srv, sid, "echo out; echo err >&2")
    wait(srv, sid, p["pid"])
    info = proc(srv, sid, p["pid"])
    assert info["stdout_file"]["bytes"] == 4 and info["stderr_file"]["bytes"] == 4, info
    assert ok(srv, sid, f"cat {info['stdout_file']['path']} {info['stderr_file']['path']}; "
                        f"stat -c %u {info['stdout_file']['path']}") == "out\nerr\n1000\n"
