"""Packaging: the systemd unit, the man pages, the bash completion, the
sd_notify protocol of `execbox serve`, and (when the tools are there) the
Debian package built by `make deb`.

Run with `make packaging-test` (EXECBOX names the binary under test)."""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXECBOX = os.environ.get("EXECBOX", str(ROOT / "build" / "execbox"))
MAN1 = ROOT / "man" / "execbox.1"
MAN8 = ROOT / "man" / "execbox-serve.8"
COMPLETION = ROOT / "completion" / "execbox.bash"
UNIT_IN = ROOT / "systemd" / "execbox.service.in"
BASH_COMPLETION = Path("/usr/share/bash-completion/bash_completion")
# `make deb` must finish in this time for the test to count it (measured:
# about 15 s on the project's 2-core machines).
DEB_BUDGET_S = 180


def help_options(cmd: str) -> set[str]:
    """Every --option that `execbox CMD --help` mentions."""
    out = subprocess.run([EXECBOX, cmd, "--help"], capture_output=True, text=True, check=True).stdout
    return set(re.findall(r"--[a-z][a-z0-9-]*", out)) | {"--help"}


def install(tmp_path: Path, *args: str) -> Path:
    dest = tmp_path / "dest"
    subprocess.run(["make", "-s", "-C", str(ROOT), "install", f"EXECBOX={EXECBOX}", f"DESTDIR={dest}", *args],
                   check=True, capture_output=True)
    return dest


# ---- make install ----

def test_install_respects_destdir_and_prefix(tmp_path):
    dest = install(tmp_path, "PREFIX=/opt/xb")
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert files == ["etc/execbox/execbox.conf", "opt/xb/bin/execbox", "opt/xb/lib/systemd/system/execbox.service",
                     "opt/xb/share/bash-completion/completions/execbox", "opt/xb/share/man/man1/execbox.1",
                     "opt/xb/share/man/man8/execbox-serve.8"]
    unit = (dest / "opt/xb/lib/systemd/system/execbox.service").read_text()
    # No flags: they would override /etc/execbox/execbox.conf.
    assert "ExecStart=/opt/xb/bin/execbox serve\n" in unit and "@" not in unit.split("[Unit]")[1]
    assert os.access(dest / "opt/xb/bin/execbox", os.X_OK)


def test_install_keeps_an_existing_config(tmp_path):
    dest = install(tmp_path)
    conf = dest / "etc/execbox/execbox.conf"
    assert conf.read_bytes() == (ROOT / "etc" / "execbox.conf").read_bytes() and conf.stat().st_mode & 0o777 == 0o644
    conf.write_text("pool = 1\n")
    install(tmp_path)
    assert conf.read_text() == "pool = 1\n"
    assert (dest / "etc/execbox/execbox.conf.example").read_bytes() == (ROOT / "etc" / "execbox.conf").read_bytes()


def test_install_debian_layout(tmp_path):
    dest = install(tmp_path, "PREFIX=/usr", "UNITDIR=/lib/systemd/system")
    assert (dest / "lib/systemd/system/execbox.service").is_file()
    assert (dest / "usr/bin/execbox").is_file()


# ---- the systemd unit ----

@pytest.fixture
def unit(tmp_path) -> Path:
    """The unit as `make install` writes it, pointing at the binary under
    test (systemd-analyze checks that ExecStart's binary exists)."""
    text = UNIT_IN.read_text().replace("@BINDIR@", str(Path(EXECBOX).parent))
    path = tmp_path / "execbox.service"
    path.write_text(text)
    return path


def unit_keys(path: Path) -> dict[str, list[str]]:
    keys: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            k, v = line.split("=", 1)
            keys.setdefault(k.strip(), []).append(v.strip())
    return keys


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed")
def test_unit_verifies(unit, tmp_path):
    # Its Documentation= names our man pages: let man(1) find them here.
    mandir = tmp_path / "man"
    for sec, page in (("man1", MAN1), ("man8", MAN8)):
        (mandir / sec).mkdir(parents=True, exist_ok=True)
        shutil.copy(page, mandir / sec / page.name)
    r = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True,
                       env=dict(os.environ, MANPATH=str(mandir)))
    ours = [line for line in r.stderr.splitlines() if "execbox" in line]
    assert r.returncode == 0 and not ours, r.stderr


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed")
def test_unit_hardening_score(unit):
    """An unhardened root service scores 9.6 (UNSAFE); ours 6.4. A higher
    score means a hardening line was lost."""
    r = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager", str(unit)],
                       capture_output=True, text=True)
    m = re.search(r"Overall exposure level for execbox.service: ([0-9.]+)", r.stdout + r.stderr)
    assert m, r.stdout + r.stderr
    assert float(m.group(1)) <= 6.5, r.stdout


def test_unit_contract(unit):
    k = unit_keys(unit)
    assert k["Type"] == ["notify"] and k["NotifyAccess"] == ["main"]
    assert k["WatchdogSec"] and k["Delegate"] == ["yes"] and k["KillMode"] == ["mixed"]
    assert k["StateDirectory"] == ["execbox"] and k["RuntimeDirectoryPreserve"] == ["yes"]
    assert k["ProtectSystem"] == ["strict"] and k["NoNewPrivileges"] == ["yes"]
    # Each of these stops sandboxes from being made or changes what runs
    # in them (the unit's comments say how): never turn them on.
    for breaks in ("ProtectControlGroups", "RestrictNamespaces", "PrivateUsers", "ProtectHostname",
                   "MemoryDenyWriteExecute", "SystemCallFilter", "UMask", "PrivateNetwork"):
        assert breaks not in k, breaks
    caps = " ".join(k["CapabilityBoundingSet"]).split()
    assert {"CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID"} <= set(caps)
    assert k["WantedBy"] == ["multi-user.target"]


BOOT = ROOT / "tests" / "packaging" / "boot_unit.sh"
SMOKE = ROOT / "tests" / "packaging" / "unit_smoke.py"


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/lib/systemd/systemd").exists() or not shutil.which("unshare"),
                    reason="needs root, systemd and unshare")
def test_unit_runs_sandboxes_under_systemd(tmp_path):
    """The unit as shipped, hardening and all, under a real systemd booted
    in namespaces of its own (boot_unit.sh): it gets READY, its sandboxes
    run commands, Python and JavaScript sessions and meet their memory
    limit, and a stop removes every sandbox cgroup."""
    unit = tmp_path / "execbox.service"
    unit.write_text(UNIT_IN.read_text().replace("@BINDIR@", "/run/xb-bin"))
    # The boot has a /tmp of its own, and the work tree may be under /tmp
    # (or /home, /root): the check goes where the boot can see it.
    smoke_dir = tempfile.mkdtemp(prefix="xb-smoke.", dir="/var/tmp")
    try:
        smoke = shutil.copy(SMOKE, smoke_dir)
        r = subprocess.run([str(BOOT), str(unit), EXECBOX, "/usr/bin/python3", smoke], capture_output=True,
                           text=True, timeout=300)
    finally:
        shutil.rmtree(smoke_dir, ignore_errors=True)
    out = r.stdout
    assert r.returncode == 0 and "\nOK\n" in out, out + r.stderr
    assert "status: listening on http://127.0.0.1:8000\n" in out
    assert "stopped: success\n" in out and "cgroups left: 0\n" in out, out


LAYERS_SMOKE = r"""
import json, urllib.request
T = open("/var/lib/execbox/token").read().strip()
def call(method, path, body):
    req = urllib.request.Request("http://127.0.0.1:8000" + path, method=method, data=json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + T, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())
st, sb = call("POST", "/v1/sandboxes", {"user": "root"})
print("create", st, json.dumps(sb)[:300])
st, r = call("POST", f"/v1/sandboxes/{sb['id']}/exec",
             {"cmd": "id -u; echo m > /usr/bin/xbm && cat /usr/bin/xbm; grep -c ' /var/lib/dpkg overlay ' /proc/self/mounts"})
print("exec", st, json.dumps(r.get("stdout")))
"""


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/lib/systemd/systemd").exists() or not shutil.which("unshare"),
                    reason="needs root, systemd and unshare")
def test_unit_with_memory_layers(tmp_path):
    """--layers memory under the unit as shipped: the boot's /var/lib is a
    fresh tmpfs without dpkg's database (as on a host without dpkg), which
    made every create fail with "id-mapped mount of /var/lib/dpkg: No such
    file or directory"; the sandbox's /var/lib/dpkg is then the skeleton's
    empty directory under its overlay."""
    unit = tmp_path / "execbox.service"
    unit.write_text(UNIT_IN.read_text().replace("@BINDIR@", "/run/xb-bin")
                    .replace("ExecStart=/run/xb-bin/execbox serve",
                             # Stopped for good: its sandbox must not wait for a next server.
                             "ExecStart=/run/xb-bin/execbox serve --layers memory --stop-sandboxes"))
    smoke_dir = tempfile.mkdtemp(prefix="xb-smoke.", dir="/var/tmp")
    try:
        smoke = Path(smoke_dir) / "layers_smoke.py"
        smoke.write_text(LAYERS_SMOKE)
        r = subprocess.run([str(BOOT), str(unit), EXECBOX, "/usr/bin/python3", str(smoke)], capture_output=True,
                           text=True, timeout=300)
    finally:
        shutil.rmtree(smoke_dir, ignore_errors=True)
    out = r.stdout
    assert r.returncode == 0 and "create 201 " in out, out + r.stderr
    assert 'exec 200 "0\\nm\\n1\\n"' in out, out
    assert "cgroups left: 0\n" in out, out


# ---- man pages ----

@pytest.mark.parametrize("page", [MAN1, MAN8], ids=lambda p: p.name)
def test_man_page_renders_without_warnings(page):
    r = subprocess.run(["man", "--warnings", "-l", "-E", "UTF-8", str(page)], capture_output=True, text=True,
                       env=dict(os.environ, MANWIDTH="80", MAN_KEEP_STDERR="1"))
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert "NAME" in r.stdout and "SEE ALSO" in r.stdout
    if shutil.which("mandoc"):
        r = subprocess.run(["mandoc", "-Tlint", "-Wstyle", str(page)], capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout + r.stderr == "", r.stdout + r.stderr
    if shutil.which("lexgrog"):
        r = subprocess.run(["lexgrog", str(page)], capture_output=True, text=True)
        assert r.returncode == 0 and " - " in r.stdout, r.stdout + r.stderr


def man_options(page: Path) -> set[str]:
    """The options a page documents: roff's \\- is a dash."""
    return set(re.findall(r"--[a-z][a-z0-9-]*", page.read_text().replace("\\-", "-")))


def test_serve_man_page_has_every_option():
    missing = help_options("serve") - man_options(MAN8)
    assert not missing, f"execbox-serve.8 lacks {sorted(missing)}"


@pytest.mark.parametrize("cmd", ["run", "mcp"])
def test_execbox_man_page_has_every_option(cmd):
    missing = help_options(cmd) - man_options(MAN1)
    assert not missing, f"execbox.1 lacks {cmd}'s {sorted(missing)}"


# ---- bash completion ----

def complete(line: str) -> list[str]:
    """What TAB offers at the end of line, from the installed-to-be script,
    with the binary under test first on PATH."""
    script = f"""
source {BASH_COMPLETION}
source {COMPLETION}
compopt() {{ :; }}   # only valid inside a real completion
PATH={Path(EXECBOX).parent}:$PATH
line=$1
read -ra COMP_WORDS <<< "$line"
[[ $line == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE=$line; COMP_POINT=${{#line}}
complete -p execbox >/dev/null
_execbox execbox "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    r = subprocess.run(["bash", "--norc", "-c", script, "complete", line], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return [w for w in r.stdout.splitlines() if w]


needs_bash_completion = pytest.mark.skipif(not BASH_COMPLETION.exists(), reason="bash-completion is not installed")


def test_completion_script_loads_in_bash():
    r = subprocess.run(["bash", "--norc", "-c", f"source {COMPLETION} && complete -p execbox"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "-F _execbox execbox" in r.stdout, r.stderr


@needs_bash_completion
@pytest.mark.parametrize("line,want", [
    ("execbox s", ["serve"]),
    ("execbox m", ["mcp"]),
    ("execbox ", ["help", "mcp", "run", "serve", "version", "--help", "--version"]),
    ("execbox serve --cg", ["--cgroup", "--cgroup-prefix"]),
    ("execbox serve --cgroup ", ["auto", "v1", "v2"]),
    ("execbox run --output-limit", ["--output-limit", "--output-limit-kill"]),
    ("execbox mcp --se", ["--server"]),
])
def test_completion_offers(line, want):
    assert sorted(complete(line)) == sorted(want)


@needs_bash_completion
@pytest.mark.parametrize("cmd", ["run", "serve", "mcp"])
def test_completion_has_every_option(cmd):
    assert set(complete(f"execbox {cmd} --")) == help_options(cmd)


@needs_bash_completion
def test_completion_of_the_command_to_run():
    # After `--`, and after the first word that is not an option, it is
    # the command's own completion: command names first.
    assert "sh" in complete("execbox run -- s")
    assert "sh" in complete("execbox run --timeout 5s s")
    assert complete("execbox run --memory ") == []


# ---- sd_notify ----

class Notify:
    """A datagram socket like the one systemd passes in NOTIFY_SOCKET."""

    def __init__(self, tmp_path: Path, abstract: bool):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if abstract:
            name = f"execbox-test-{os.getpid()}-{time.monotonic_ns()}"
            self.sock.bind("\0" + name)
            self.env = "@" + name
        else:
            path = str(tmp_path / "notify")
            self.sock.bind(path)
            self.env = path

    def recv(self, timeout: float) -> str | None:
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(4096).decode()
        except socket.timeout:
            return None

    def wait_for(self, key: str, timeout: float) -> tuple[str, list[str]]:
        """The first message with the line key (others before it too)."""
        deadline = time.monotonic() + timeout
        seen = []
        while (left := deadline - time.monotonic()) > 0:
            m = self.recv(left)
            if m is None:
                break
            seen.append(m)
            if key in m.split("\n"):
                return m, seen
        raise AssertionError(f"no {key} within {timeout} s; got {seen}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def serve(tmp_path):
    """serve(env) starts `execbox serve` with no pool (no sandboxes) on a
    free port; every server started is stopped by its pid at teardown."""
    procs: list[subprocess.Popen] = []

    def start(env: dict[str, str]):
        port = free_port()
        p = subprocess.Popen([EXECBOX, "serve", "--listen", f"127.0.0.1:{port}", "--no-auth", "--pool", "0",
                              "--quiet", "--state-dir", str(tmp_path / "state")],
                             env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        procs.append(p)
        return p, port

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)
        p.stderr.close()


def accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


@pytest.mark.parametrize("abstract", [False, True], ids=["path", "abstract"])
def test_notify_ready_watchdog_stopping(tmp_path, serve, abstract):
    n = Notify(tmp_path, abstract)
    p, port = serve({"NOTIFY_SOCKET": n.env, "WATCHDOG_USEC": "400000"})
    ready, _ = n.wait_for("READY=1", 20)
    # Ready means the front listens: the port takes a connection now.
    assert accepts(port)
    assert f"STATUS=listening on http://127.0.0.1:{port}" in ready.split("\n")
    # Pings every 200 ms (half of WATCHDOG_USEC), from the running loop.
    t0 = time.monotonic()
    for _ in range(3):
        n.wait_for("WATCHDOG=1", 2)
    assert time.monotonic() - t0 < 2
    p.send_signal(signal.SIGTERM)
    stopping, _ = n.wait_for("STOPPING=1", 10)
    assert p.wait(timeout=15) == 0
    assert p.stderr.read().decode().count("warning") == 0


def test_notify_no_watchdog_unless_asked(tmp_path, serve):
    n = Notify(tmp_path, False)
    p, port = serve({"NOTIFY_SOCKET": n.env})
    n.wait_for("READY=1", 20)
    assert n.recv(1.0) is None
    p.send_signal(signal.SIGTERM)
    n.wait_for("STOPPING=1", 10)
    assert p.wait(timeout=15) == 0


def test_notify_watchdog_for_another_pid_is_not_ours(tmp_path, serve):
    n = Notify(tmp_path, False)
    p, port = serve({"NOTIFY_SOCKET": n.env, "WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1"})
    n.wait_for("READY=1", 20)
    assert n.recv(0.6) is None
    p.send_signal(signal.SIGTERM)
    n.wait_for("STOPPING=1", 10)
    assert p.wait(timeout=15) == 0


def test_notify_bad_socket_is_not_fatal(tmp_path, serve):
    p, port = serve({"NOTIFY_SOCKET": str(tmp_path / "nobody-listens")})
    deadline = time.monotonic() + 20
    while not accepts(port):
        assert p.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=15) == 0
    assert "not telling\n" not in p.stderr.read().decode()


def test_no_notify_socket_sends_nothing(tmp_path, serve):
    """Started by hand: the notify code must stay out of the way."""
    env = {k: v for k, v in os.environ.items() if k != "NOTIFY_SOCKET"}
    p, port = serve({**env, "WATCHDOG_USEC": "100000"})
    deadline = time.monotonic() + 20
    while not accepts(port):
        assert p.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=15) == 0


# ---- the Debian package ----

DEB_TOOLS = ("dpkg-buildpackage", "dh", "lintian")


@pytest.mark.skipif(not all(shutil.which(t) for t in DEB_TOOLS), reason="dpkg-buildpackage, debhelper or lintian missing")
def test_make_deb_builds_and_lintian_is_clean(tmp_path):
    out = tmp_path / "deb"
    tmp_before = set(os.listdir("/tmp"))
    t0 = time.monotonic()
    r = subprocess.run([str(ROOT / "scripts" / "build-deb.sh"), str(out)], capture_output=True, text=True,
                       timeout=DEB_BUDGET_S)
    took = time.monotonic() - t0
    # lintian's caches stay in the build's own directory, not in /tmp.
    left = [n for n in set(os.listdir("/tmp")) - tmp_before if n.startswith("mldbm-")]
    assert not left, left
    print(f"make deb: {took:.1f} s", file=sys.stderr)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    tags = [line for line in (out / "lintian.txt").read_text().splitlines() if re.match(r"^[EW]: ", line)]
    assert not tags, tags
    deb = next(out.glob("execbox_*.deb"))
    contents = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True).stdout
    for path in ("./usr/bin/execbox", "./lib/systemd/system/execbox.service", "./usr/share/man/man1/execbox.1.gz",
                 "./usr/share/man/man8/execbox-serve.8.gz", "./usr/share/bash-completion/completions/execbox"):
        assert path in contents, path
    depends = subprocess.run(["dpkg-deb", "-f", str(deb), "Depends"], capture_output=True, text=True).stdout
    # Loaded with dlopen(3), so shlibdeps cannot see it.
    assert "libmicrohttpd12" in depends and "libjansson4" in depends
    scripts = subprocess.run(["dpkg-deb", "-I", str(deb), "postinst"], capture_output=True, text=True).stdout
    assert "execbox.service" in scripts   # dh_installsystemd enables and starts it
