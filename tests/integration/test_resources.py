"""Resource exhaustion from inside (invariants 8 and 9): forks, memory,
output, wall time, CPU, files, disk, and processes that try to outlive the
run. The autouse leak check runs after each test as well."""
from __future__ import annotations

import os
import re
import subprocess
import time

import pytest

import xbhost

SIGXFSZ = 25


def token(tag: str) -> str:
    """A process name (comm, 15 bytes) unique to this test, findable on the host."""
    return f"xb{tag}{os.getpid() % 10000}{time.monotonic_ns() % 1000}"[:15]


# ---- pids ----

@pytest.mark.slow
def test_fork_bomb_is_contained_by_the_pids_limit(probe):
    r = probe("forkbomb", "2", opts=["--pids", "64", "--timeout", "20s"], timeout=60)
    bomb = r.probe
    assert bomb["eagain"] > 0, f"no fork ever failed: {bomb}"
    assert bomb["max_procs"] <= 64, f"more than 64 processes existed at once: {bomb}"
    assert r.elapsed < 10
    # The host still forks; the leak check proves the bomb's processes are gone.
    assert subprocess.run(["/bin/true"]).returncode == 0


# ---- memory ----

def test_memory_bomb_gets_memory_limit(probe):
    r = probe("memhog", "256M", opts=["--memory", "64M"], timeout=60)
    assert r.json["status"] == "memory_limit", r.describe()
    assert r.json["signal"] == 9
    assert r.json["peak_memory"] <= 80 << 20


def test_memory_limit_kills_the_whole_group(xb, probe_mount):
    r = xb(*probe_mount, "--memory", "64M", "--", "/bin/sh", "-c",
           f"{xbhost.PROBE_IN} memhog 256M; echo survived; exit 0", timeout=60)
    assert "survived" not in r.json["stdout"], f"the group outlived its OOM: {r.json}"
    assert r.json["status"] == "memory_limit", r.json


def test_inode_flood_is_bounded_by_the_memory_limit(xb):
    """/tmp has no inode cap of its own: its inodes are charged to the
    sandbox's memory, so an empty-file flood ends at the memory limit."""
    script = ("n = 0\n"
              "try:\n"
              "    while True:\n"
              "        open('/tmp/f%d' % n, 'w').close(); n += 1\n"
              "except OSError as e:\n"
              "    print(n, e)\n")
    r = xb("--memory", "64M", "--timeout", "30s", "--", "python3", "-c", script, timeout=60)
    assert r.json["status"] in ("memory_limit", "ok"), r.describe()
    assert r.elapsed < 20


# ---- output ----

def test_output_flood_keeps_head_and_tail(probe):
    r = probe("flood", "1M", opts=["--output-limit", "64K"])
    j = r.json
    assert j["stdout_truncated"] is True
    assert j["stdout_bytes"] == 1 << 20
    out = j["stdout"]
    assert out.startswith("XB-HEAD-MARKER\n")
    assert out.endswith("XB-TAIL-MARKER\n")
    assert len(out) <= (64 << 10) + 1024, f"kept {len(out)} bytes for a 64K limit"
    marker = re.search(r"\[execbox: (\d+) bytes of stdout dropped[^\]]*\]", out)
    assert marker, "no truncation marker between head and tail"
    assert int(marker.group(1)) >= (1 << 20) - (64 << 10)
    assert j["status"] == "output_limit"


def test_stderr_flood_is_bounded_too(xb, probe_mount):
    r = xb(*probe_mount, "--output-limit", "64K", "--", "/bin/sh", "-c", f"{xbhost.PROBE_IN} flood 1M >&2")
    j = r.json
    assert j["stderr_truncated"] is True and j["stdout_truncated"] is False
    assert j["stderr"].startswith("XB-HEAD-MARKER") and j["stderr"].endswith("XB-TAIL-MARKER\n")
    assert len(j["stderr"]) <= (64 << 10) + 1024


def test_streaming_output_is_bounded(xb, probe_mount):
    r = xb(*probe_mount, "--output-limit", "64K", "--", xbhost.PROBE_IN, "flood", "4M", json_mode=False)
    assert r.rc == 0, r.describe()
    assert len(r.stdout) <= (64 << 10) + 1024
    assert r.stdout.startswith("XB-HEAD-MARKER\n") and r.stdout.endswith("XB-TAIL-MARKER\n")
    assert "bytes of stdout dropped" in r.stdout


def test_output_limit_kill_stops_an_endless_flood(probe):
    r = probe("flood", "0", opts=["--output-limit", "64K", "--output-limit-kill", "--timeout", "30s"], timeout=60)
    assert r.json["status"] == "output_limit", r.describe()
    assert r.json["stdout_truncated"] is True
    assert r.elapsed < 2, f"an endless flood ran for {r.elapsed:.1f}s after passing the limit"


# ---- wall time and CPU ----

def test_timeout_kills_and_keeps_earlier_output(probe):
    r = probe("say-then", "printed-before-timeout", "sleep", "30", opts=["--timeout", "1s"], timeout=30)
    assert r.json["status"] == "timeout", r.describe()
    assert r.json["stdout"] == "printed-before-timeout\n"
    assert r.elapsed < 2.5, f"--timeout 1s took {r.elapsed:.2f}s"
    assert r.json["wall_ms"] >= 1000


def test_timeout_in_streaming_mode_keeps_output(xb, probe_mount):
    r = xb(*probe_mount, "--timeout", "1s", "--", xbhost.PROBE_IN, "say-then", "early", "sleep", "30",
           json_mode=False, timeout=30)
    assert r.stdout == "early\n"
    assert r.rc == 124        # as timeout(1)
    assert r.elapsed < 2.5


def test_cpu_time_limit(probe):
    r = probe("spin", "0", opts=["--cpu-time", "1s", "--timeout", "30s"], timeout=60)
    assert r.json["status"] == "cpu_limit", r.describe()
    # Judged in CPU time, not wall time: other load on the host slows the spin.
    assert 900 <= r.json["cpu_ms"] < 1600, r.json
    assert r.elapsed < 10


def test_cpu_time_counts_the_whole_tree(xb, probe_mount):
    """Two spinners, each under the per-process rlimit: the sandbox's total
    is what counts."""
    p = xbhost.PROBE_IN
    r = xb(*probe_mount, "--cpu-time", "1s", "--timeout", "30s", "--", "/bin/sh", "-c",
           f"{p} spin 0 & {p} spin 0 & {p} spin 0 & wait", timeout=60)
    assert r.json["status"] == "cpu_limit", r.describe()
    assert r.json["cpu_ms"] < 2500, f"the tree used {r.json['cpu_ms']} ms of CPU under a 1 s limit"


def test_cpus_limit_throttles(probe):
    r = probe("spin", "2", opts=["--cpus", "0.25", "--timeout", "30s"], timeout=60)
    assert r.json["status"] == "ok", r.describe()
    assert r.json["cpu_ms"] < 0.25 * r.json["wall_ms"] * 1.6 + 100, r.json


# ---- nothing outlives the run ----

def test_setsid_double_fork_escapee_dies_with_the_run(probe):
    t = token("esc")
    r = probe("setsid-escape", t)
    assert r.json["status"] == "ok", r.describe()
    assert r.probe["escapee_pid"] > 1
    assert not xbhost.find_by_comm(t), "the escapee survived the run"
    table = xbhost.proc_table()
    # Ours only: not under a foreign execbox, nor in another run's cgroups.
    assert not [p for p in xbhost.sandbox_procs(table).values()
                if not xbhost.foreign(table, p.pid, os.getpid()) and not xbhost.proc_cgroup_foreign(p.pid)]


@xbhost.retry_if_reaped
def test_escapee_is_real_then_gone(popen, probe_mount):
    """The escapee exists on the host while the run lasts (the attack is
    real), and is gone once it ends."""
    t = token("esc")
    p = popen(*probe_mount, "--", "/bin/sh", "-c", f"{xbhost.PROBE_IN} setsid-escape {t}; sleep 1")
    assert "escapee_pid" in xbhost.read_lines(p, 1)[0]
    alive = xbhost.find_by_comm(t)
    assert alive and all(x.uid >= xbhost.SANDBOX_UID_MIN for x in alive)
    p.communicate(timeout=30)
    assert not xbhost.find_by_comm(t), "the escapee survived the run"


def test_escapee_dies_when_the_run_times_out(xb, probe_mount):
    t = token("esc")
    r = xb(*probe_mount, "--timeout", "1s", "--", "/bin/sh", "-c",
           f"{xbhost.PROBE_IN} setsid-escape {t}; sleep 30", timeout=30)
    assert r.json["status"] == "timeout"
    assert not xbhost.find_by_comm(t)


def test_background_child_holding_stdout_does_not_delay_the_result(probe):
    t = token("hold")
    r = probe("bg-holder", t, "30", timeout=30)
    assert r.json["status"] == "ok", r.describe()
    assert "holder_pid" in r.json["stdout"]
    assert r.elapsed < 1.0, f"the result waited {r.elapsed:.2f}s for a background child"
    assert not xbhost.find_by_comm(t)


def test_background_child_in_streaming_mode(xb, probe_mount):
    t = token("hold")
    r = xb(*probe_mount, "--", xbhost.PROBE_IN, "bg-holder", t, "30", json_mode=False, timeout=30)
    assert r.rc == 0 and r.elapsed < 1.0, r.describe()
    assert not xbhost.find_by_comm(t)


def test_init_reaps_orphaned_zombies(xb):
    r = xb("--", "/bin/sh", "-c",
           'sh -c "true & exit 0"; sleep 0.3; grep -l "^State:.Z" /proc/[0-9]*/status | wc -l')
    assert r.json["stdout"].strip() == "0", r.describe()


# ---- files and disk ----

def test_file_size_limit_gives_efbig(probe):
    res = probe("write", "/tmp/big", "2M", opts=["--file-size", "1M"]).probe
    assert res["write_errno"] == "EFBIG", res
    assert res["written"] == 1 << 20


def test_file_size_limit_signals_sigxfsz(xb):
    r = xb("--file-size", "1M", "--", "/bin/sh", "-c", "head -c 3000000 /dev/zero > /tmp/big")
    assert r.json["exit_code"] == 128 + SIGXFSZ, r.describe()


@pytest.mark.parametrize("where", ["/tmp", "/home/user", "/dev/shm"])
def test_disk_limit_gives_enospc(probe, where):
    res = probe("write", f"{where}/fill", "20M", opts=["--disk", "8M"]).probe
    assert res["write_errno"] == "ENOSPC", res
    assert res["written"] <= 8 << 20


def test_disk_limit_holds_as_root(probe):
    res = probe("write", "/tmp/fill", "20M", opts=["--disk", "8M"], root=True).probe
    assert res["write_errno"] == "ENOSPC", res
