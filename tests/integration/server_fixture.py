"""Fixtures for the `execbox serve` suites (tests/integration/test_server_*.py).

`server_factory(*args, tokens=None, no_auth=True, pool=2, env=None)` starts
the real server on a free loopback port with a temporary state directory and
waits for /healthz. `server` is one such server with the defaults
(--no-auth --pool 2). Whatever a test does, every server it started is
stopped at teardown with SIGTERM to its own pid, and teardown asserts that
it exited 0 and left nothing behind on the host:
  - no cgroup directory named <MARKER>-* under /sys/fs/cgroup/*/ (the v1
    controllers and the unified tree) or /sys/fs/cgroup/ (pure v2), where
    xbhost.MARKER is this test run's cgroup prefix;
  - no mount mentioning execbox in /proc/self/mountinfo that is this run's;
  - no process with a host uid in the sandbox range (>= 2**30).
Other execbox users of this machine (the lead's runs, other suites) may
have sandboxes of their own: only what is new since the server started and
is not owned by a foreign execbox counts, and anything naming one of this
server's sandbox ids always counts.

Use them in a test module with
    from server_fixture import server, server_factory  # noqa: F401
"""
from __future__ import annotations

import dataclasses
import glob
import json
import os
import re
import select
import signal
import socket
import subprocess
import threading
import time
from typing import Any

import pytest
import requests

import xbhost

SANDBOX_UID_MIN = 1 << 30
# This run's cgroups only (xbhost.MARKER is every server's --cgroup-prefix).
CGROUP_GLOBS = (f"/sys/fs/cgroup/*/{xbhost.MARKER}-*", f"/sys/fs/cgroup/{xbhost.MARKER}-*")
LISTEN_RE = re.compile(r"^execbox serve listening on (http://127\.0\.0\.1:(\d+))")
START_TIMEOUT = 20.0
STOP_TIMEOUT = 10.0
# Put in the server's own environment: no sandbox may ever see it.
SECRET_ENV = {"XB_SERVER_SECRET": "daemon-secret-7c1f", "AWS_SECRET_ACCESS_KEY": "host-aws-secret-9e2d"}


# ---- the host, from outside every sandbox ----

def execbox_cgroups() -> set[str]:
    found = set()
    for pattern in CGROUP_GLOBS:
        found.update(p for p in glob.glob(pattern) if os.path.isdir(p))
    return found


def execbox_mounts() -> set[str]:
    """Mounts mentioning execbox that are this run's (xbhost.own_mount)."""
    with open("/proc/self/mountinfo") as f:
        lines = [line.strip() for line in f if "execbox" in line]
    out = set()
    for line in lines:
        left, _, right = line.partition(" - ")
        lf, rf = left.split(), right.split()
        if xbhost.own_mount((lf[4], lf[3], rf[0], rf[1] if len(rf) > 1 else "")):
            out.add(line)
    return out


def sandbox_uid_procs() -> dict[tuple[int, int], xbhost.Proc]:
    """Live (non-zombie) processes whose host uid is in the sandbox range,
    from /proc/*/status."""
    return xbhost.sandbox_procs(xbhost.proc_table())


def _hierarchy_dir(controllers: str) -> str | None:
    """The mount point of the v1 hierarchy with these controllers."""
    for name in controllers.split(","):
        d = os.path.join("/sys/fs/cgroup", name.replace("name=", ""))
        if os.path.isdir(d):
            return d
    return None


def cgroups_of_pid(pid: int) -> dict[str, int]:
    """The execbox cgroup directories holding a host process, in every
    hierarchy: {path: inode}. The inode tells a directory from a later one
    of the same name (cgroups named after a reused uid slot)."""
    out = {}
    pure_v2 = os.path.exists("/sys/fs/cgroup/cgroup.procs")
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            hid, controllers, path = line.rstrip("\n").split(":", 2)
            if "execbox" not in path:
                continue
            if hid == "0":
                base = "/sys/fs/cgroup" if pure_v2 else "/sys/fs/cgroup/unified"
            else:
                base = _hierarchy_dir(controllers)
            if base is None:
                continue
            full = base + path
            try:
                out[full] = os.stat(full).st_ino
            except OSError:
                pass
    return out


def host_pids_with_cmdline(argv: list[str]) -> list[int]:
    want = ("\0".join(argv) + "\0").encode()
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if f.read() == want:
                    found.append(int(d))
        except OSError:
            pass
    return found


def sandbox_cgroups(srv: "Server", sid: str) -> dict[str, int]:
    """The host cgroups of a sandbox ({path: inode}), found through a marker
    process started in it (and removed again)."""
    argv = ["sleep", f"86.{time.monotonic_ns() % 10 ** 9:09d}"]
    r = srv.post(f"/v1/sandboxes/{sid}/processes", {"argv": argv})
    expect(r, 201)
    pid = r.json()["pid"]
    try:
        deadline = time.monotonic() + 5
        while not (hosts := host_pids_with_cmdline(argv)):
            assert time.monotonic() < deadline, f"the marker process {argv} never appeared on the host"
            time.sleep(0.02)
        assert len(hosts) == 1, hosts
        cgs = cgroups_of_pid(hosts[0])
    finally:
        srv.post(f"/v1/sandboxes/{sid}/processes/{pid}/signal", {"signal": "KILL"})
        srv.post(f"/v1/sandboxes/{sid}/processes/{pid}/wait", {"timeout_s": 5})
        srv.delete(f"/v1/sandboxes/{sid}/processes/{pid}")
    assert cgs, f"sandbox {sid} has no execbox cgroup on the host"
    return cgs


def cgroups_gone(cgs: dict[str, int]) -> bool:
    """True once every one of these directories is removed (or replaced by
    a new directory of the same name)."""
    for path, ino in cgs.items():
        try:
            if os.stat(path).st_ino == ino:
                return False
        except OSError:
            pass
    return True


def cgroup_tasks(cgs: dict[str, int]) -> set[int]:
    return {pid for path in cgs for pid in xbhost.cgroup_procs(path)}


@dataclasses.dataclass
class HostSnapshot:
    cgroups: set
    mounts: set
    procs: dict

    @classmethod
    def take(cls) -> "HostSnapshot":
        return cls(execbox_cgroups(), execbox_mounts(), sandbox_uid_procs())


def leftovers(before: HostSnapshot, ids: set[str]) -> list[str]:
    """What the server left: new since `before` and not a foreign execbox's,
    or naming one of its sandbox ids."""
    me = os.getpid()
    table = xbhost.proc_table()
    found = []
    for cg in sorted(execbox_cgroups()):
        mine = any(i in cg for i in ids)
        if not mine:
            if cg in before.cgroups:
                continue
            members = xbhost.cgroup_procs(cg)
            if members and all(xbhost.foreign(table, pid, me) for pid in members):
                continue
        found.append(f"cgroup {cg} (tasks {xbhost.cgroup_procs(cg)})")
    for m in sorted(execbox_mounts() - before.mounts):
        found.append(f"mount: {m}")
    for key, p in xbhost.sandbox_procs(table).items():
        if key in before.procs or xbhost.foreign(table, p.pid, me) or xbhost.proc_cgroup_foreign(p.pid):
            continue
        found.append(f"process {p.pid} ({p.name}) host uid {p.uid} parent {p.ppid}")
    return found


def wait_for_leftovers(before: HostSnapshot, ids: set[str], grace: float = 2.0) -> list[str]:
    deadline = time.monotonic() + grace
    while True:
        found = leftovers(before, ids)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


# ---- the server ----

class ApiError(AssertionError):
    pass


class Server:
    """A running `execbox serve`, and a small client for it."""

    def __init__(self, proc: subprocess.Popen, url: str, state_dir: str, tokens: list[str],
                 banner: list[str], stderr_path: str, before: HostSnapshot, argv: list[str]):
        self.proc = proc
        self.pid = proc.pid
        self.url = url
        self.port = int(url.rsplit(":", 1)[1])
        self.state_dir = state_dir
        self.tokens = tokens
        self.token = tokens[0] if tokens else None
        self.banner = banner
        self.stderr_path = stderr_path
        self.before = before
        self.argv = argv
        self.ids: set[str] = set()          # every sandbox id this server handed out
        self.http = self.session()
        self.stopped_rc: int | None = None

    # -- HTTP --
    def session(self) -> requests.Session:
        s = requests.Session()
        s.headers["Connection"] = "keep-alive"
        return s

    def headers(self, token: Any = "default", extra: dict | None = None) -> dict:
        h = {}
        tok = self.token if token == "default" else token
        if tok is not None:
            h["Authorization"] = f"Bearer {tok}"
        if extra:
            h.update(extra)
        return h

    def request(self, method: str, path: str, *, token: Any = "default", json_body: Any = None,
                data: Any = None, headers: dict | None = None, timeout: float = 60,
                session: requests.Session | None = None, **kw) -> requests.Response:
        s = session or self.http
        h = self.headers(token, headers)
        if json_body is not None:
            data = json.dumps(json_body)
            h.setdefault("Content-Type", "application/json")
        r = s.request(method, self.url + path, data=data, headers=h, timeout=timeout, **kw)
        self._note_ids(r)
        return r

    def _note_ids(self, r: requests.Response) -> None:
        if "json" not in r.headers.get("Content-Type", ""):
            return
        try:
            body = r.json()
        except ValueError:
            return
        if isinstance(body, dict):
            if isinstance(body.get("id"), str):
                self.ids.add(body["id"])
            for sb in body.get("sandboxes", []) if isinstance(body.get("sandboxes"), list) else []:
                if isinstance(sb, dict) and isinstance(sb.get("id"), str):
                    self.ids.add(sb["id"])

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, json_body=body if body is not None else {}, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)

    # -- the API, asserting success --
    def create(self, session=None, token="default", **body) -> dict:
        r = self.post("/v1/sandboxes", body, session=session, token=token)
        expect(r, 201)
        return r.json()

    def exec(self, sid: str, session=None, timeout: float = 60, token="default", **body) -> dict:
        r = self.post(f"/v1/sandboxes/{sid}/exec", body, session=session, timeout=timeout, token=token)
        expect(r, 200)
        return r.json()

    def sh(self, sid: str, cmd: str, **kw) -> str:
        """Run a shell command that must succeed; its stdout."""
        res = self.exec(sid, cmd=cmd, **kw)
        assert res["status"] == "ok", f"`{cmd}` failed: {res}"
        return res["stdout"]

    def remove(self, sid: str, token="default") -> None:
        expect(self.delete(f"/v1/sandboxes/{sid}", token=token), 204)

    def metrics(self) -> dict[str, float]:
        r = self.get("/metrics")
        expect(r, 200)
        return parse_prometheus(r.text)

    def readyz(self) -> dict:
        r = self.get("/readyz")
        expect(r, 200)
        return r.json()

    def stderr(self) -> str:
        try:
            with open(self.stderr_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stdout(self) -> str:
        """Everything the server printed on stdout (complete once stopped)."""
        if self.stopped_rc is not None:
            self.drainer.join(5)
        return "\n".join(self.banner) + "\n" + b"".join(self.stdout_rest).decode(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    # -- stopping --
    def stop(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM to this server's pid; its exit code. SIGKILL (same pid)
        only if it did not stop in time, which fails the caller."""
        if self.stopped_rc is not None:
            return self.stopped_rc
        self.http.close()
        if self.proc.poll() is None:
            os.kill(self.pid, signal.SIGTERM)
        try:
            self.stopped_rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(self.pid, signal.SIGKILL)
            self.proc.wait()
            self.stopped_rc = -signal.SIGKILL
            raise AssertionError(f"execbox serve (pid {self.pid}) did not exit within {timeout}s of SIGTERM; "
                                 f"stderr: {self.stderr()[-2000:]}")
        return self.stopped_rc

    def leftovers(self, grace: float = 2.0) -> list[str]:
        return wait_for_leftovers(self.before, self.ids, grace)


def expect(r: requests.Response, status: int) -> requests.Response:
    assert r.status_code == status, (f"{r.request.method} {r.request.url}: expected {status}, got "
                                     f"{r.status_code}: {r.text[:2000]}")
    return r


def shell(srv: "Server", sid: str, cmd: str, user: str | None = None, timeout: int = 120) -> dict:
    """exec cmd with a server-side timeout (and room past it for the reply),
    as user (the sandbox's own when None): the result, whatever its exit."""
    body = {"cmd": cmd, "timeout_s": timeout}
    if user:
        body["user"] = user
    return srv.exec(sid, timeout=timeout + 30, **body)


def shell_ok(srv: "Server", sid: str, cmd: str, user: str | None = None, timeout: int = 120) -> str:
    """shell() that must exit 0: its stdout (the failure shows both ends)."""
    r = shell(srv, sid, cmd, user, timeout)
    assert r["exit_code"] == 0, (r["exit_code"], r["stdout"][-2000:], r["stderr"][-2000:])
    return r["stdout"]


def sse_events(resp: requests.Response, t0: float) -> list[tuple[float, str, dict]]:
    """(seconds since t0, event name, data) for each event, as it arrives."""
    events, name, data = [], None, []
    for raw in resp.iter_lines(chunk_size=1):
        line = raw.decode()
        if line == "":
            if name is not None or data:
                events.append((time.monotonic() - t0, name or "message", json.loads("\n".join(data))))
            name, data = None, []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
    return events


def expect_error(r: requests.Response, status: int, code: str | None = None) -> dict:
    """An error reply: the status, the shape {"error":{"code","message","hint"}}
    with non-empty strings, and the code if given."""
    assert r.status_code == status, (f"{r.request.method} {r.request.url}: expected {status}, got "
                                     f"{r.status_code}: {r.text[:2000]}")
    assert "application/json" in r.headers.get("Content-Type", ""), f"error is not JSON: {r.headers}"
    body = r.json()
    assert set(body) == {"error"}, f"error body has other keys: {body}"
    err = body["error"]
    assert set(err) == {"code", "message", "hint"}, f"error shape is wrong: {body}"
    for k in ("code", "message", "hint"):
        assert isinstance(err[k], str) and err[k].strip(), f"error.{k} is empty: {body}"
    if code is not None:
        assert err["code"] == code, f"expected error code {code!r}, got {err['code']!r}: {body}"
    return err


# Label values are quoted and may hold braces (route templates do).
_PROM_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^}"]|"(?:[^"\\]|\\.)*")*\})?\s+(\S+)$')


def parse_prometheus(text: str) -> dict[str, float]:
    """Minimal Prometheus text parser: {'name{labels}': value}. Every line is
    a comment, blank, or a well-formed sample (else it asserts)."""
    out = {}
    types = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split()
            assert len(parts) >= 3 and parts[1] in ("HELP", "TYPE"), f"bad comment line: {line!r}"
            if parts[1] == "TYPE":
                assert parts[3] in ("counter", "gauge", "histogram", "summary", "untyped"), line
                types[parts[2]] = parts[3]
            continue
        m = _PROM_LINE.match(line)
        assert m, f"not a Prometheus sample line: {line!r}"
        name, labels, value = m.group(1), m.group(2) or "", m.group(3)
        out[name + labels] = float(value)
    out["__types__"] = types  # type: ignore[assignment]
    return out


def _read_banner(proc: subprocess.Popen, deadline: float) -> list[str]:
    """Lines the server prints at start, up to the first that names the URL."""
    lines = []
    buf = b""
    fd = proc.stdout.fileno()
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                lines.append(line.decode(errors="replace"))
            if lines and LISTEN_RE.match(lines[0]):
                # the rest of the banner follows in the same write; take it if there
                time.sleep(0.02)
                r, _, _ = select.select([fd], [], [], 0)
                if r:
                    buf += os.read(fd, 65536)
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        lines.append(line.decode(errors="replace"))
                return lines
        elif proc.poll() is not None:
            break
    return lines


def _drain(stream, sink: list) -> None:
    """Keep reading the server's stdout (so it never blocks) into sink."""
    try:
        while True:
            chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
            if not chunk:
                break
            sink.append(chunk)
    except (OSError, ValueError):
        pass


def launch(execbox: str, state_dir: str, args: list[str], env: dict | None = None,
           listen: str = "127.0.0.1:0") -> subprocess.Popen:
    """Start `execbox serve` with stdout piped and stderr to a file."""
    argv = [execbox, "serve", "--listen", listen, "--state-dir", state_dir, *args]
    errf = open(os.path.join(os.path.dirname(state_dir), os.path.basename(state_dir) + ".stderr"), "wb")
    try:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errf, env=env)
    finally:
        errf.close()


def server_env(extra: dict | None = None, drop_token: bool = True) -> dict:
    env = dict(os.environ)
    if drop_token:
        env.pop("EXECBOX_TOKEN", None)
    env.update(SECRET_ENV)
    if extra:
        env.update(extra)
    return env


def start_server(execbox: str, base_dir: str, *args: str, tokens: list[str] | None = None,
                 no_auth: bool | None = None, pool: int | None = 2, env: dict | None = None,
                 expect_token_line: bool = False, state_dir: str | None = None) -> Server:
    """Start a server; returns once /healthz answers. tokens: write a
    --token-file with these lines. no_auth defaults to True unless tokens
    are given or auth-related args are passed."""
    os.makedirs(base_dir, exist_ok=True)
    n = len([d for d in os.listdir(base_dir) if d.startswith("state") and not d.endswith(".stderr")])
    if state_dir is None:
        state_dir = os.path.join(base_dir, f"state{n}")
    argv = list(args)
    given = list(args)
    if tokens is not None:
        tf = os.path.join(base_dir, f"tokens{n}")
        with open(tf, "w") as f:
            f.write("\n".join(tokens) + "\n")
        os.chmod(tf, 0o600)
        argv += ["--token-file", tf]
    if no_auth is None:
        no_auth = tokens is None and "--token-file" not in given and not expect_token_line
    if no_auth:
        argv.append("--no-auth")
    if pool is not None and "--pool" not in given:
        argv += ["--pool", str(pool)]
    # A first SIGTERM drains (30 s by default): the suites' servers drain
    # briefly, so that teardown and the shutdown tests with requests still
    # in flight stay quick. test_drain.py sets its own.
    if "--drain-timeout" not in given:
        argv += ["--drain-timeout", "2s"]
    # Sandboxes outlive a killed server (--adopt-grace, 10m by default):
    # the suites kill servers often, and what survived would be counted as
    # leaked. Only the tests of survival (test_restart.py) ask for it.
    if "--adopt-grace" not in given:
        argv += ["--adopt-grace", "0"]
    before = HostSnapshot.take()
    proc = launch(execbox, state_dir, argv, env=env if env is not None else server_env())
    deadline = time.monotonic() + START_TIMEOUT
    banner = _read_banner(proc, deadline)
    stderr_path = state_dir + ".stderr"
    if not banner or not LISTEN_RE.match(banner[0]):
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        with open(stderr_path, errors="replace") as f:
            err = f.read()
        raise AssertionError(f"execbox serve did not start: banner={banner!r} rc={proc.returncode} stderr={err!r}")
    rest: list[bytes] = []
    drainer = threading.Thread(target=_drain, args=(proc.stdout, rest), daemon=True)
    drainer.start()
    url = LISTEN_RE.match(banner[0]).group(1)
    toks = list(tokens) if tokens else []
    if not toks and not no_auth:
        m = [re.search(r"Token:\s+(\S+)\s+\(saved", line) for line in banner]
        toks = [x.group(1) for x in m if x]
        if not toks and env and env.get("EXECBOX_TOKEN"):
            toks = [env["EXECBOX_TOKEN"]]
    srv = Server(proc, url, state_dir, toks, banner, stderr_path, before, [execbox, "serve", *argv])
    srv.stdout_rest, srv.drainer = rest, drainer
    while True:
        try:
            if requests.get(url + "/healthz", timeout=2).status_code == 200:
                break
        except requests.RequestException:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            srv.stop()
            raise AssertionError(f"/healthz never answered; stderr: {srv.stderr()[-2000:]}")
        time.sleep(0.02)
    return srv


def finish_server(srv: Server) -> list[str]:
    """Stop (if needed) and return the problems: a nonzero exit, leftovers."""
    problems = []
    try:
        rc = srv.stop()
    except AssertionError as e:
        problems.append(str(e))
        rc = srv.stopped_rc
    if rc != 0:
        problems.append(f"execbox serve (pid {srv.pid}) exited with {rc}, not 0; stderr: {srv.stderr()[-2000:]}")
    left = srv.leftovers()
    if left:
        problems.append(f"execbox serve (pid {srv.pid}) left these behind:\n  " + "\n  ".join(left))
    return problems


def sanitized(execbox: str) -> bool:
    """Whether execbox is an ASan build (make SANITIZE=1). Its shadow memory
    (an eighth of what the heap touches), redzones and quarantine add to the
    daemon's RSS, so bounds on RSS growth allow for them there."""
    with open(execbox, "rb") as f:
        return b"__asan_init" in f.read()


def binary_under_test(target: str) -> str:
    """EXECBOX, checked: suites outside tests/integration start from this."""
    if os.geteuid() != 0:
        pytest.exit("execbox needs root to create sandboxes; run the suite as root", returncode=2)
    path = os.environ.get("EXECBOX")
    if not path or not os.access(path, os.X_OK):
        pytest.exit(f"EXECBOX is not set to an executable: run the suite with `make {target}`", returncode=2)
    return os.path.realpath(path)


def served(execbox: str, base_dir: str, tokens: list[str]):
    """A generator fixture body: one server with these tokens, checked at the end."""
    srv = start_server(execbox, base_dir, tokens=tokens)
    yield srv
    problems = finish_server(srv)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.fixture
def server_factory(execbox, tmp_path):
    """start(*args, tokens=None, no_auth=None, pool=2, env=None) -> Server.
    Every server started is stopped and checked at teardown."""
    started: list[Server] = []

    def start(*args, **kw) -> Server:
        srv = start_server(execbox, str(tmp_path), *args, **kw)
        started.append(srv)
        return srv

    yield start
    problems = []
    for srv in started:
        problems += finish_server(srv)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.fixture
def small_state(tmp_path):
    """A state directory on a tmpfs of its own, of 900 MiB: smaller than a
    sandbox's default disk limit (1 GiB), and than the disk guard's margins
    allow for two sandboxes' writes."""
    state = tmp_path / "small"
    state.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=900m,mode=0700", "xbsmall", str(state)], check=True)
    try:
        yield str(state)
    finally:
        subprocess.run(["umount", str(state)], check=True)


@pytest.fixture
def server(server_factory) -> Server:
    """A server with --no-auth --pool 2."""
    return server_factory()


# ---- raw sockets, for what requests will not send ----

def raw_request(port: int, data: bytes, timeout: float = 10.0) -> bytes:
    """Send bytes, read until the server closes or a full response with a
    Content-Length has arrived; the raw response."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        buf = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            buf += chunk
            head, sep, body = buf.partition(b"\r\n\r\n")
            if sep:
                m = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
                if m and len(body) >= int(m.group(1)):
                    break
        return buf


def raw_status(resp: bytes) -> int:
    m = re.match(rb"HTTP/1\.[01] (\d{3})", resp)
    assert m, f"not an HTTP response: {resp[:200]!r}"
    return int(m.group(1))


def raw_json(resp: bytes) -> Any:
    return json.loads(resp.partition(b"\r\n\r\n")[2])
