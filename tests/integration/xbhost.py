"""Host-side helpers for the integration suite: running `execbox run`, and
looking at the host (processes, cgroups, mounts, temp files) from outside
every sandbox, to prove that nothing a sandbox did is left behind.

Nothing here kills anything: tests end only processes they started, by pid.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import select
import subprocess
import threading
import time
from typing import Iterable

# The first host uid a sandbox range may use (src/sandbox/uidpool.h).
SANDBOX_UID_MIN = 1 << 30
# Docker's default capability set (src/sandbox/caps.c, moby's defaults).
DOCKER_CAPS = 0xA80425FB
CAP_SYS_ADMIN = 21
# Where the probe appears inside a sandbox.
PROBE_IN = "/opt/xb/xbprobe"

CGROUP_ROOT = "/sys/fs/cgroup"
TEMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
RUNTIME_DIR = "/run/execbox"


# ---- this run's marker ----
# Every execbox this suite starts (run, serve, mcp) inherits
# EXECBOX_CGROUP_PREFIX, so the cgroups of this run are named
# "<MARKER>-u<slot>": the leak checks count only those, and what other test
# runs or daemons on the machine have (other prefixes) is not ours to judge.
# Temp entries and mounts are ours when they carry the marker or lie in
# this run's own directories (pytest's base temp, see own_dir()).
MARKER = os.environ.get("EXECBOX_CGROUP_PREFIX") or f"execbox-t{os.urandom(4).hex()}"
os.environ["EXECBOX_CGROUP_PREFIX"] = MARKER
_own_dirs: list[str] = []


def own_dir(path: str) -> None:
    """Mounts below path are this run's (conftest names pytest's base temp)."""
    path = os.path.realpath(str(path))
    if path not in _own_dirs:
        _own_dirs.append(path)


def ours(name: str) -> bool:
    """A cgroup, temp or mount name that carries this run's marker."""
    return MARKER in name


def slot_of_uid(uid: int) -> int:
    return (uid - SANDBOX_UID_MIN) // 65536


# ---- other execbox servers on this machine ----

class _ServeWatcher:
    """Notes when an `execbox serve` starts anywhere on this host. Before
    693369d a server's start killed every execbox cgroup on the machine
    (xb_cgroup_sys_reap_stale), ours included, and other suites on a shared
    machine may still run such builds: a run that dies of SIGKILL (or fails
    setup) while a server started was killed by it, not by what it tested,
    and is run again. Remove this once no such builds are around."""

    def __init__(self):
        self.starts: list[float] = []
        self._known: dict[str, float] = {}
        self._served: set[str] = set()
        for e in os.listdir("/proc"):        # already running: not a start
            self._known[e] = float("-inf")
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="xb-serve-watcher", daemon=True)
        self._thread.start()

    def _scan(self):
        now = time.monotonic()
        for e in os.listdir("/proc"):
            # A new pid is looked at for a second: right after fork its
            # cmdline is still its parent's, until it execs.
            if not e.isdigit() or now - self._known.setdefault(e, now) > 1.0 or e in self._served:
                continue
            try:
                with open(f"/proc/{e}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if len(argv) > 1 and os.path.basename(argv[0]) == b"execbox" and argv[1] == b"serve":
                self._served.add(e)
                with self._lock:
                    self.starts.append(now)

    def _run(self):
        while True:
            try:
                self._scan()
            except OSError:
                pass
            time.sleep(0.02)

    def started_between(self, t0: float, t1: float) -> bool:
        with self._lock:
            return any(t0 - 0.5 <= t <= t1 + 0.1 for t in self.starts)


_watcher: _ServeWatcher | None = None


def serve_watcher() -> _ServeWatcher:
    global _watcher
    if _watcher is None:
        _watcher = _ServeWatcher()
    return _watcher


def retry_if_reaped(fn):
    """For tests that start execbox themselves (popen): rerun the test when it
    failed while a foreign `execbox serve` started (see _ServeWatcher)."""
    @functools.wraps(fn)
    def wrapper(*args, **kw):
        w = serve_watcher()
        for attempt in range(4):
            t0 = time.monotonic()
            try:
                return fn(*args, **kw)
            except Exception:
                if attempt == 3 or not w.started_between(t0, time.monotonic()):
                    raise
                print(f"note: a foreign `execbox serve` started during {fn.__name__}; running it again")
    return wrapper


# ---- running execbox ----

@dataclasses.dataclass
class Result:
    argv: list[str]
    rc: int
    stdout: str
    stderr: str
    elapsed: float
    json: dict | None = None
    t0: float = 0.0

    @property
    def out(self) -> str:
        """The command's stdout: from the JSON result, or the raw stream."""
        return self.json["stdout"] if self.json is not None else self.stdout

    def lines(self) -> list[dict]:
        """Every JSON line the probe printed on the command's stdout."""
        found = []
        for line in self.out.splitlines():
            line = line.strip()
            if line.startswith("{"):
                found.append(json.loads(line))
        return found

    @property
    def probe(self) -> dict:
        """The probe's single JSON report (fails clearly if there is none)."""
        lines = self.lines()
        assert lines, f"the probe printed no JSON; {self.describe()}"
        return lines[0]

    def describe(self) -> str:
        return (f"argv={self.argv!r} rc={self.rc} elapsed={self.elapsed:.2f}s "
                f"stdout={self.stdout[-2000:]!r} stderr={self.stderr[-2000:]!r}")


def execbox_run(execbox: str, args: Iterable[str], *, json_mode: bool = True,
                input: bytes | str | None = None, timeout: float = 60,
                env: dict | None = None, pass_fds: tuple = ()) -> Result:
    """Run `execbox run [--json] ARGS` to completion. In JSON mode stdout must
    be exactly one JSON line, which is parsed."""
    argv = [execbox, "run"] + (["--json"] if json_mode else []) + list(args)
    if isinstance(input, str):
        input = input.encode()
    watcher = serve_watcher()
    for attempt in range(4):
        res = _run_once(argv, json_mode, input, timeout, env, pass_fds)
        # A reap shows as a SIGKILL, or as a setup failure (125) when it
        # removed the cgroups of a sandbox being built.
        killed = res.rc == 128 + 9 and (res.json is None or res.json.get("signal") == 9)
        if not (killed or res.rc == 125) or attempt == 3 or \
                not watcher.started_between(res.t0, res.t0 + res.elapsed):
            return res
        print(f"note: a foreign `execbox serve` started during {argv!r} and reaped it; running it again")
    return res


def _run_once(argv, json_mode, input, timeout, env, pass_fds) -> Result:
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env if env is not None else os.environ.copy(),
                            pass_fds=pass_fds)
    try:
        out, err = proc.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()          # our own child, by pid
        out, err = proc.communicate()
        raise AssertionError(f"execbox did not finish within {timeout}s: {argv!r}; "
                             f"stderr={err.decode(errors='replace')[-2000:]!r}")
    res = Result(argv, proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"),
                 time.monotonic() - t0, t0=t0)
    if json_mode:
        lines = res.stdout.splitlines()
        assert len(lines) == 1, f"--json must print exactly one line; {res.describe()}"
        res.json = json.loads(lines[0])
    return res


def read_lines(proc: subprocess.Popen, n: int, timeout: float = 10) -> list[str]:
    """The first n lines a background execbox printed, read from the raw
    pipe (select() and Python's buffered readline() do not mix)."""
    fd = proc.stdout.fileno()
    buf = b""
    deadline = time.monotonic() + timeout
    while buf.count(b"\n") < n:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(left, 0))
        assert ready, f"fewer than {n} lines within {timeout}s: {buf!r}"
        chunk = os.read(fd, 65536)
        assert chunk, f"EOF before {n} lines: {buf!r}"
        buf += chunk
    return buf.decode(errors="replace").split("\n")[:n]


def probe_mount_args(probe: str) -> list[str]:
    d = os.path.dirname(os.path.realpath(probe))
    return ["--allow-mount", d, "--mount", f"{d}:/opt/xb:ro"]


# ---- the host's processes ----

@dataclasses.dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    uid: int
    state: str
    name: str
    start: int        # start time in clock ticks since boot: (pid, start) names a process
    exe: str


def proc_table() -> dict[int, Proc]:
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            try:
                exe = os.readlink(f"/proc/{pid}/exe")
            except OSError:
                exe = ""
        except (OSError, ValueError):
            continue           # it exited while we looked
        after_comm = stat[stat.rfind(")") + 2:].split()
        table[pid] = Proc(pid=pid, ppid=int(fields["PPid"].split()[0]), uid=int(fields["Uid"].split()[0]),
                          state=fields["State"].split()[0], name=fields["Name"].strip(),
                          start=int(after_comm[19]), exe=exe)
    return table


def ancestors(table: dict[int, Proc], pid: int) -> list[int]:
    chain, seen = [], set()
    while pid in table and pid not in seen and pid > 1:
        seen.add(pid)
        pid = table[pid].ppid
        chain.append(pid)
    return chain


def is_execbox(p: Proc) -> bool:
    return os.path.basename(p.exe.replace(" (deleted)", "")) == "execbox" or p.name == "execbox"


def foreign(table: dict[int, Proc], pid: int, me: int) -> bool:
    """True for a process run by an execbox that is not ours: another user of
    this machine (the lead's own runs) must not fail our tests."""
    chain = ancestors(table, pid)
    if me in chain:
        return False
    return any(a in table and is_execbox(table[a]) for a in chain)


def sandbox_procs(table: dict[int, Proc]) -> dict[tuple[int, int], Proc]:
    """Live processes whose host uid is in the sandbox range. Zombies hold no
    resources and wait for the host's reaper, so they do not count."""
    return {(p.pid, p.start): p for p in table.values() if p.uid >= SANDBOX_UID_MIN and p.state != "Z"}


def find_by_comm(token: str) -> list[Proc]:
    return [p for p in proc_table().values() if p.name == token[:15] and p.state != "Z"]


# ---- cgroups, mounts, temp files ----

def cgroup_dirs(all_runs: bool = False) -> set[str]:
    """Every cgroup directory of this run (named MARKER-*; all_runs: every
    one whose name mentions execbox), in every hierarchy (v1 controllers,
    name=systemd, and the unified v2 tree)."""
    found = set()
    try:
        hierarchies = [os.path.join(CGROUP_ROOT, h) for h in os.listdir(CGROUP_ROOT)]
    except OSError:
        return found
    if os.path.exists(os.path.join(CGROUP_ROOT, "cgroup.procs")):
        hierarchies = [CGROUP_ROOT]           # pure v2
    for h in hierarchies:
        if not os.path.isdir(h):
            continue
        for dirpath, dirnames, _ in os.walk(h):
            depth = dirpath[len(h):].count("/")
            for d in dirnames:
                if (d.startswith(MARKER + "-") if not all_runs else "execbox" in d):
                    found.add(os.path.join(dirpath, d))
            if depth >= 3:
                dirnames[:] = []
    return found


def foreign_slots() -> set[int]:
    """The uid slots held now by another run's or daemon's sandboxes: their
    cgroups (<prefix>-u<slot>) carry another prefix."""
    slots = set()
    for cg in cgroup_dirs(all_runs=True):
        name = os.path.basename(cg)
        prefix, _, slot = name.rpartition("-u")
        if prefix and prefix != MARKER and slot.isdigit():
            slots.add(int(slot))
    return slots


def proc_cgroup_foreign(pid: int) -> bool | None:
    """Whether a process sits in another run's execbox cgroup (True), in
    ours (False), or in none (None)."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            paths = [line.rstrip("\n").split(":", 2)[2] for line in f if line.count(":") >= 2]
    except OSError:
        return None
    names = [c for p in paths for c in p.split("/") if "execbox" in c]
    if any(c.startswith(MARKER + "-") for c in names):
        return False
    return True if names else None


def own_mount(m: tuple[str, str, str, str]) -> bool:
    """A mount (point, root, fstype, source) of this run: below one of its
    own directories, or carrying its marker."""
    point = m[0]
    return any(ours(x) for x in m) or any(point == d or point.startswith(d + "/") for d in _own_dirs)


def cgroup_procs(path: str) -> list[int]:
    try:
        with open(os.path.join(path, "cgroup.procs")) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def mounts() -> set[tuple[str, str, str, str]]:
    out = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            l, r = left.split(), right.split()
            out.add((l[4], l[3], r[0], r[1] if len(r) > 1 else ""))
    return out


def temp_entries() -> dict[str, int]:
    out = {}
    for d in TEMP_DIRS + (RUNTIME_DIR,):
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            p = os.path.join(d, n)
            try:
                out[p] = os.lstat(p).st_uid
            except OSError:
                pass
    return out


_RUNTIME_TMP = re.compile(r"^(\.init-[0-9a-f]+|etc\.new)\.(\d+)$")


def _pid_alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")


@dataclasses.dataclass
class HostState:
    procs: dict
    cgroups: set
    mounts: set
    temps: dict

    @classmethod
    def capture(cls) -> "HostState":
        return cls(sandbox_procs(proc_table()), cgroup_dirs(), mounts(), temp_entries())


def leaks_since(before: HostState, me: int | None = None) -> list[str]:
    """What exists now that did not before and must not outlive a test."""
    me = os.getpid() if me is None else me
    table = proc_table()
    now = HostState(sandbox_procs(table), cgroup_dirs(), mounts(), temp_entries())
    found = []
    for key, p in now.procs.items():
        # A process in one of this run's cgroups is ours, whoever its parent
        # (a daemon started detached); in another run's, not; in none, its
        # ancestry decides.
        where = proc_cgroup_foreign(p.pid)
        if key not in before.procs and where is not True and (where is False or not foreign(table, p.pid, me)):
            found.append(f"process {p.pid} ({p.name}) with sandbox host uid {p.uid}, parent {p.ppid}")
    for p in table.values():
        if p.pid != me and p.state != "Z" and me in ancestors(table, p.pid):
            found.append(f"process {p.pid} ({p.name}, {p.exe}) is still a child of the test")
    for cg in sorted(now.cgroups - before.cgroups):       # this run's only
        found.append(f"cgroup {cg} (tasks: {cgroup_procs(cg)})")
    for m in sorted(now.mounts - before.mounts):
        if own_mount(m):
            found.append(f"mount {m[0]} ({m[2]} {m[3]} root {m[1]})")
    others = foreign_slots()
    for path, uid in sorted(now.temps.items()):
        if path in before.temps:
            continue
        name = os.path.basename(path)
        if path.startswith(RUNTIME_DIR + "/"):
            # Shared state (the init image, the /etc view, locks) may appear;
            # a half-written temp whose writer is dead may not.
            t = _RUNTIME_TMP.match(name)
            if t and not _pid_alive(int(t.group(2))):
                found.append(f"runtime temp {path} of a dead process")
            elif uid >= SANDBOX_UID_MIN:
                found.append(f"runtime entry {path} owned by sandbox uid {uid}")
        elif (uid >= SANDBOX_UID_MIN and slot_of_uid(uid) not in others) or ("execbox" in name and ours(name)):
            found.append(f"temp entry {path} (owner {uid})")
    return found


def wait_for_no_leaks(before: HostState, grace: float = 5.0) -> list[str]:
    """Teardown is asynchronous (a reaper, an rmdir retry): allow it a moment."""
    deadline = time.monotonic() + grace
    while True:
        found = leaks_since(before)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)
