"""CLI conventions (issue 13, item 4), against the real binary:

- `execbox run` exits as timeout(1) and the shells do (124 timed out, 125
  execbox failed, 126 not executable, 127 not found, 128+N a signal) and
  prints one stderr line naming a memory, output, time or CPU limit kill;
- `-t` gives the command a terminal: a pty of the sandbox, driven here
  through a pty of ours (python's pty module), in raw mode, restored after;
- an option error names the option as it was typed, for every option of
  run, serve and mcp that takes a value;
- `--version` names the commit and the kernel features it found;
- the client commands (ls, create, rm, exec, shell, cp) against a real
  server, with the address from --server or EXECBOX_URL and the token from
  EXECBOX_TOKEN or --token-file.
"""
from __future__ import annotations

import ctypes
import fcntl
import json
import os
import pty
import re
import select
import signal
import socket
import struct
import subprocess
import termios
import time

import pytest

import xbhost
from server_fixture import server_factory  # noqa: F401

OWN_ERROR = 125
TOKEN = "cli-conventions-token-0123456789"
ID_RE = re.compile(r"^[A-Za-z0-9_-]{8,128}$")


def run(execbox, *args, input=None, env=None, timeout=60):
    """`execbox ARGS` to completion; a CompletedProcess with text output."""
    if isinstance(input, str):
        input = input.encode()
    p = subprocess.run([execbox, *args], input=input, stdin=None if input is not None else subprocess.DEVNULL,
                       capture_output=True, env=env, timeout=timeout)
    p.out = p.stdout.decode(errors="replace")
    p.err = p.stderr.decode(errors="replace")
    return p


def one_line(p) -> str:
    lines = p.err.strip().splitlines()
    assert len(lines) == 1, f"stderr is not one line: {p.err!r}"
    return lines[0]


# ---- a terminal of our own, to drive -t and shell ----

class Term:
    """A child on a pty of ours (33 rows, 101 columns): read what it shows,
    type into it, resize it, and wait for its exit status."""

    def __init__(self, argv, env=None, rows=33, cols=101):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            try:
                os.execve(argv[0], argv, env if env is not None else os.environ)
            finally:
                os._exit(127)
        self.resize(rows, cols)
        self.out = b""
        self.status = None

    def resize(self, rows, cols):
        # Setting the size signals the pty's foreground group: the child.
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def attrs(self):
        return termios.tcgetattr(self.fd)

    def read_until(self, pattern, timeout=20.0) -> re.Match:
        rx = re.compile(pattern.encode() if isinstance(pattern, str) else pattern)
        deadline = time.monotonic() + timeout
        while True:
            m = rx.search(self.out)
            if m:
                return m
            left = deadline - time.monotonic()
            assert left > 0, f"no {rx.pattern!r} within {timeout}s; the terminal shows {self.out[-3000:]!r}"
            r, _, _ = select.select([self.fd], [], [], min(left, 0.2))
            if r:
                try:
                    d = os.read(self.fd, 65536)
                except OSError:        # EIO: the child closed its side
                    d = b""
                if not d:
                    m = rx.search(self.out)
                    assert m, f"the child ended without {rx.pattern!r}; it showed {self.out[-3000:]!r}"
                    return m
                self.out += d

    def type(self, data):
        os.write(self.fd, data.encode() if isinstance(data, str) else data)

    def wait(self, timeout=30.0) -> int:
        deadline = time.monotonic() + timeout
        while self.status is None:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(st)
                break
            assert time.monotonic() < deadline, f"the child did not end; it showed {self.out[-3000:]!r}"
            r, _, _ = select.select([self.fd], [], [], 0.1)
            if r:
                try:
                    self.out += os.read(self.fd, 65536)
                except OSError:
                    pass
        return self.status

    def close(self):
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGTERM)     # our own child, by pid
                self.wait(15)
            except (ProcessLookupError, AssertionError):
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
        os.close(self.fd)


@pytest.fixture
def term():
    made = []

    def start(*argv, **kw):
        t = Term(list(argv), **kw)
        made.append(t)
        return t
    yield start
    for t in made:
        t.close()


# ---- run: exit statuses ----

def test_run_timeout_exits_124_as_timeout_does(execbox):
    for mode in ([], ["--json"]):
        p = run(execbox, "run", *mode, "--timeout", "1s", "--", "sleep", "30")
        assert p.returncode == 124, (mode, p.returncode, p.err)
        assert one_line(p) == "execbox: killed: time limit (1s) reached"
        if mode:
            assert json.loads(p.out)["status"] == "timeout"


def test_run_not_found_exits_127(execbox):
    p = run(execbox, "run", "--", "xb-no-such-command")
    assert p.returncode == 127, p.err
    assert one_line(p).startswith("execbox: error: command not found: xb-no-such-command")
    p = run(execbox, "run", "--json", "--", "/usr/bin/xb-no-such-command")
    assert p.returncode == 127 and json.loads(p.out)["error"]["message"].startswith("command not found")


@pytest.mark.parametrize("path", ["/etc", "/etc/hostname"])
def test_run_not_executable_exits_126(execbox, path):
    p = run(execbox, "run", "--", path)
    assert p.returncode == 126, p.err
    assert "not executable" in one_line(p)


def test_run_signal_exits_128_plus_n_without_a_kill_line(execbox):
    p = run(execbox, "run", "--", "sh", "-c", "kill -KILL $$")
    assert p.returncode == 128 + 9 and p.err == "", (p.returncode, p.err)
    p = run(execbox, "run", "--", "sh", "-c", "kill -USR1 $$")
    assert p.returncode == 128 + signal.SIGUSR1 and p.err == ""


def test_run_own_failure_is_125(execbox):
    p = run(execbox, "run", "--memory", "lots", "--", "true")
    assert p.returncode == OWN_ERROR


def test_run_success_prints_nothing_of_its_own(execbox):
    p = run(execbox, "run", "--", "sh", "-c", "echo out; exit 3")
    assert (p.returncode, p.out, p.err) == (3, "out\n", "")


# ---- run: one line naming the limit that killed ----

def test_memory_limit_kill_is_named(execbox):
    p = run(execbox, "run", "--memory", "64M", "--", "python3", "-c", "x = bytearray(512 << 20)")
    assert p.returncode == 128 + 9, p.err
    assert one_line(p) == "execbox: killed: memory limit (64 MiB) reached"


def test_output_limit_kill_is_named(execbox):
    p = run(execbox, "run", "--output-limit", "1K", "--output-limit-kill", "--", "yes")
    assert p.returncode == 128 + 9
    assert p.err.strip().splitlines()[-1] == "execbox: killed: output limit (1 KiB) reached"
    assert p.err.count("execbox: killed") == 1


def test_output_past_the_limit_without_a_kill_prints_no_kill_line(execbox):
    p = run(execbox, "run", "--output-limit", "1K", "--", "sh", "-c", "head -c 5000 /dev/zero | tr '\\0' a")
    assert p.returncode == 0 and "execbox: killed" not in p.err


def test_cpu_time_limit_kill_is_named(execbox):
    p = run(execbox, "run", "--cpu-time", "1s", "--timeout", "30s", "--", "sh", "-c", "while :; do :; done")
    assert p.returncode > 128, p.returncode
    assert one_line(p) == "execbox: killed: CPU time limit (1s) reached"


def test_kill_line_in_json_mode_goes_to_stderr_only(execbox):
    p = run(execbox, "run", "--json", "--timeout", "500ms", "--", "sleep", "30")
    assert p.returncode == 124 and json.loads(p.out)["status"] == "timeout"
    assert one_line(p) == "execbox: killed: time limit (500ms) reached"


# ---- run -t ----

def test_tty_gives_the_command_a_terminal_of_the_sandbox(execbox, term):
    t = term(execbox, "run", "-t", "--", "sh", "-c",
             "tty; stty size; test -t 0 && test -t 1 && test -t 2 && echo all-three; ls -l $(tty); exit 4")
    t.read_until(r"all-three")
    assert t.wait() == 4
    lines = t.out.decode().replace("\r", "").splitlines()
    assert re.fullmatch(r"/dev/pts/\d+", lines[0]), lines
    assert lines[1] == "33 101", "the pty does not have our terminal's size"
    # Owned by the sandbox's user, as grantpt(3) leaves a pty.
    assert " user tty " in lines[3], lines[3]


def test_tty_is_interactive_and_our_terminal_is_restored(execbox, term):
    t = term(execbox, "run", "-t", "--", "bash", "--norc", "--noprofile", "-i")
    before = t.attrs()
    t.read_until(r"\$ ")
    raw = t.attrs()
    assert not raw[3] & termios.ECHO and not raw[3] & termios.ICANON, "our terminal is not in raw mode"
    t.type("echo typed-$((6*7))\r")
    t.read_until(r"typed-42")
    t.type("exit 3\r")
    assert t.wait() == 3
    after = t.attrs()
    assert after[3] & termios.ECHO and after[3] & termios.ICANON, "our terminal was left in raw mode"
    assert after[3] == before[3] and after[0] == before[0] and after[1] == before[1]


def test_tty_follows_our_size(execbox, term):
    t = term(execbox, "run", "-t", "--", "bash", "--norc", "-c",
             "trap 'stty size; exit 0' WINCH; echo ready; for i in $(seq 300); do sleep 0.1; done")
    t.read_until(r"ready")
    t.resize(40, 120)
    t.read_until(r"40 120")
    assert t.wait() == 0


def test_tty_ctrl_c_reaches_the_command_not_execbox(execbox, term):
    t = term(execbox, "run", "-t", "--", "python3", "-c",
             "import time\ntry:\n    print('sleeping', flush=True)\n    time.sleep(30)\n"
             "except KeyboardInterrupt:\n    print('interrupted')\n")
    t.read_until(r"sleeping")
    t.type("\x03")
    t.read_until(r"interrupted")
    assert t.wait() == 0


def test_tty_without_a_terminal_of_ours(execbox):
    p = run(execbox, "run", "-t", "--", "cat", input="hi\n")
    assert p.returncode == 0, p.err
    assert p.out == "hi\r\nhi\r\n", "echo, then cat's copy, then EOF from the EOF character"
    p = run(execbox, "run", "-t", "--", "stty", "size")
    assert p.out == "24 80\r\n"


def test_tty_with_json_captures_the_terminal(execbox):
    p = run(execbox, "run", "-t", "--json", "--", "sh", "-c", "echo out; echo err >&2; exit 2")
    r = json.loads(p.out)
    assert p.returncode == 2 and r["stdout"] == "out\r\nerr\r\n" and r["stderr"] == ""


def test_tty_exit_statuses(execbox):
    assert run(execbox, "run", "-t", "--", "xb-no-such-command").returncode == 127
    p = run(execbox, "run", "-t", "--timeout", "1s", "--", "sleep", "30")
    assert p.returncode == 124 and "time limit" in p.err


# ---- option errors name the option as typed ----

# (option, bad value) checked as the options are read: each is tried as
# `--opt VALUE`, `--opt=VALUE` and abbreviated.
RUN_BAD = [("--timeout", "soon"), ("--timeout", "8d"), ("--cpu-time", "x"), ("--memory", "lots"),
           ("--memory", "1K"), ("--pids", "many"), ("--pids", "1"), ("--cpus", "fast"), ("--cpus", "0"),
           ("--output-limit", "10"), ("--file-size", "big"), ("--disk", "0"), ("--env", "1X=2"),
           ("--env", "NOEQUALS"), ("--cwd", "relative"), ("--mount", "nocolon"), ("--mount", "/etc:/mnt/etc"),
           ("--mount", "/tmp:/etc/x"), ("--allow-mount", "/nonexistent-xb"), ("--cgroup", "v3"),
           ("--cgroup-prefix", "a/b")]
SERVE_BAD = [("--pool", "5000"), ("--pool", "x"), ("--max-sandboxes", "0"), ("--memory", "lots"),
             ("--memory", "1K"), ("--pids", "1"), ("--cpus", "0"), ("--disk", "1K"), ("--body-max", "x"),
             ("--upload-max", "x"), ("--template-upload-max", "x"), ("--allow-mount", "/nonexistent-xb"),
             ("--cgroup", "v3"), ("--cgroup-prefix", "a/b"), ("--allow-host", "a/b"), ("--output-budget", "1M"),
             ("--network-max", "lots"), ("--network-deny", "bad host!"), ("--package-source", "ftp://x"),
             ("--dns-server", "nowhere"), ("--network-connections", "0"), ("--network-rate", "x"),
             ("--drain-timeout", "x")]
MCP_BAD = [("--pool", "500"), ("--memory", "lots"), ("--pids", "1"), ("--cpus", "0"), ("--disk", "1K"),
           ("--allow-mount", "/nonexistent-xb"), ("--cgroup", "v3"), ("--cgroup-prefix", "")]
# Long options of each command, to know which abbreviations are unique.
NAMES = {
    "run": ["timeout", "cpu-time", "memory", "pids", "cpus", "output-limit", "output-limit-kill", "file-size",
            "disk", "env", "cwd", "mount", "allow-mount", "root", "json", "tty", "cgroup", "cgroup-prefix",
            "kill-via-freezer",
            "help"],
    "serve": ["listen", "state-dir", "token-file", "no-auth", "pool", "pool-python", "max-sandboxes", "memory",
              "pids", "cpus", "disk", "max-memory", "max-pids", "max-cpus", "max-disk", "tenant-quota", "layers", "store-size", "mount-owner", "body-max", "upload-max", "template-upload-max", "output-budget", "allow-mount", "allow-origin", "allow-host", "public-url", "sandbox-domain",
              "require-guide",
              "conformance-fixtures", "cgroup", "cgroup-prefix", "quiet", "verbose", "network-max", "network-deny", "package-source",
              "dns-server", "network-connections", "network-rate", "upstream-ca", "approval-timeout", "package-cache-size", "install-cache-size", "paused-ttl", "max-lifetime", "drain-timeout", "adopt-grace",
              "stop-sandboxes", "help"],
    "mcp": ["server", "token", "pool", "memory", "pids", "cpus", "disk", "max-memory", "max-pids", "max-cpus",
            "max-disk", "allow-mount", "conformance-fixtures",
            "cgroup", "cgroup-prefix", "verbose", "help"],
}


def _abbrev(cmd, opt):
    """The shortest unambiguous abbreviation of --opt shorter than it, or None."""
    name = opt[2:]
    for n in range(1, len(name)):
        pre = name[:n]
        if [x for x in NAMES[cmd] if x.startswith(pre)] == [name]:
            return "--" + pre
    return None


def _cases():
    for cmd, table in (("run", RUN_BAD), ("serve", SERVE_BAD), ("mcp", MCP_BAD)):
        for opt, value in table:
            yield cmd, [opt, value], opt
            yield cmd, [f"{opt}={value}"], opt
            short = _abbrev(cmd, opt)
            if short:
                yield cmd, [short, value], short


def _run_cmd(execbox, tmp_path, cmd, args):
    if cmd == "run":
        return run(execbox, "run", *args, "--", "true")
    if cmd == "serve":
        return run(execbox, "serve", "--listen", "127.0.0.1:0", "--state-dir", str(tmp_path / "state"), *args,
                   timeout=20)
    return run(execbox, "mcp", *args, timeout=20)


@pytest.mark.parametrize("cmd,args,typed", list(_cases()), ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_bad_value_names_the_option_as_typed(execbox, tmp_path, cmd, args, typed):
    p = _run_cmd(execbox, tmp_path, cmd, args)
    assert p.returncode == OWN_ERROR, p.err
    line = one_line(p)
    assert line.startswith(f"execbox: error: {typed}: "), f"{args}: {line!r} does not start with the option"


@pytest.mark.parametrize("cmd,opt", [("run", "--memory"), ("run", "--timeout"), ("serve", "--listen"),
                                     ("serve", "--pool"), ("mcp", "--server"), ("mcp", "--token")])
def test_missing_value_names_the_option(execbox, tmp_path, cmd, opt):
    argv = [cmd, opt] if cmd != "serve" else [cmd, "--state-dir", str(tmp_path / "s"), opt]
    p = run(execbox, *argv, timeout=20)
    assert p.returncode == OWN_ERROR
    assert one_line(p).startswith(f"execbox: error: {opt} needs a value"), p.err


@pytest.mark.parametrize("cmd", ["run", "serve", "mcp", "ls", "create", "exec", "cp", "shell", "rm"])
def test_unknown_option_is_named_in_one_line(execbox, cmd):
    p = run(execbox, cmd, "--bogus-xb", timeout=20)
    assert p.returncode == OWN_ERROR
    assert one_line(p).startswith("execbox: error: unknown option `--bogus-xb`"), p.err


def test_ambiguous_option_lists_the_candidates(execbox, tmp_path):
    p = run(execbox, "serve", "--state-dir", str(tmp_path / "s"), "--po", "1")
    assert p.returncode == OWN_ERROR
    assert one_line(p).startswith("execbox: error: `--po` is ambiguous: --pool or --pool-python"), p.err
    p = run(execbox, "run", "--output", "1K", "--", "true")
    assert "`--output` is ambiguous: --output-limit or --output-limit-kill" in one_line(p)


@pytest.mark.parametrize("args,typed", [(["--memory", "lots"], "--memory"), (["--mem=lots"], "--mem"),
                                        (["--timeout", "soon"], "--timeout"), (["--pids", "1"], "--pids"),
                                        (["--env", "1=2"], "--env")])
def test_client_bad_values_name_the_option(execbox, args, typed):
    p = run(execbox, "create", *args, env=dict(os.environ, EXECBOX_URL="http://127.0.0.1:1"))
    assert p.returncode == OWN_ERROR
    assert one_line(p).startswith(f"execbox: error: {typed}: "), p.err


# ---- --version ----

def _landlock_abi() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))   # landlock_create_ruleset, x86-64
    return abi if abi > 0 else 0


def _cgroup_layout() -> str:
    def fs(path):
        try:
            return subprocess.run(["stat", "-f", "-c", "%T", path], capture_output=True, text=True).stdout.strip()
        except OSError:
            return ""
    if fs("/sys/fs/cgroup") == "cgroup2fs":
        return "v2"
    if os.path.isdir("/sys/fs/cgroup/unified") and fs("/sys/fs/cgroup/unified") == "cgroup2fs":
        return "hybrid"
    return "v1" if os.path.isdir("/sys/fs/cgroup/memory") else "none"


@pytest.mark.parametrize("spelling", [["--version"], ["version"]])
def test_version_names_the_commit_and_the_features(execbox, spelling):
    p = run(execbox, *spelling)
    assert p.returncode == 0 and p.err == ""
    lines = dict(line.split(": ", 1) if ": " in line else ("release", line) for line in p.out.splitlines())
    assert re.fullmatch(r"execbox \d+\.\d+\.\d+", lines["release"])
    assert re.fullmatch(r"unknown|([\w.-]+-g)?[0-9a-f]{7,40}(-dirty)?", lines["commit"]), lines["commit"]
    assert lines["cgroup"] == _cgroup_layout()
    abi = _landlock_abi()
    assert lines["landlock"] == (f"ABI {abi}" if abi else lines["landlock"])
    assert lines["landlock"].startswith("ABI ") == bool(abi)
    with open("/proc/self/status") as f:
        has_seccomp = any(line.startswith("Seccomp:") for line in f)
    assert lines["seccomp"] == ("available" if has_seccomp else lines["seccomp"])
    assert lines["user namespaces"] in ("available",) or lines["user namespaces"].startswith("unavailable (")


def test_version_commit_is_this_checkout(execbox):
    """Built from a git checkout, the commit is `git describe`'s."""
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if not os.path.exists(os.path.join(top, ".git")) or not os.path.samefile(
            os.path.dirname(os.path.dirname(execbox)), top):
        pytest.skip("the binary was not built in this checkout")
    head = subprocess.run(["git", "-C", top, "describe", "--always"], capture_output=True, text=True).stdout.strip()
    commit = run(execbox, "--version").out.splitlines()[1].split(": ", 1)[1]
    assert commit.removesuffix("-dirty") == head, (commit, head)


def test_execbox_does_not_link_libcurl(execbox):
    """The client commands load libcurl when they run; nothing else needs it."""
    p = subprocess.run(["objdump", "-p", execbox], capture_output=True, text=True)
    needed = re.findall(r"NEEDED\s+(\S+)", p.stdout)
    assert needed and not [n for n in needed if "curl" in n], needed


# ---- client commands against a real server ----

@pytest.fixture
def srv(server_factory):  # noqa: F811
    return server_factory(tokens=[TOKEN], pool=0)


@pytest.fixture
def cenv(srv):
    """The environment a client command finds the server and token in."""
    env = dict(os.environ, EXECBOX_URL=srv.url, EXECBOX_TOKEN=TOKEN)
    env.pop("EXECBOX_ALLOW_MOUNTS", None)
    return env


@pytest.fixture
def sid(execbox, srv, cenv):
    p = run(execbox, "create", "--memory", "256M", env=cenv)
    assert p.returncode == 0, p.err
    yield p.out.strip()
    srv.delete(f"/v1/sandboxes/{p.out.strip()}")


def test_create_ls_rm(execbox, srv, cenv):
    p = run(execbox, "create", "--memory", "300M", "--cpus", "0.5", "--pids", "100", "--disk", "64M",
            "--timeout", "10m", "--env", "XB_A=1", env=cenv)
    assert p.returncode == 0 and p.err == "", p.err
    sid = p.out.strip()
    assert ID_RE.match(sid) and p.out == sid + "\n", "create prints the id and nothing else"
    got = srv.get(f"/v1/sandboxes/{sid}").json()
    assert got["limits"] == {"memory": 300 << 20, "cpus": 0.5, "pids": 100, "disk": 64 << 20}
    assert got["timeout_s"] == 600
    assert srv.sh(sid, "echo $XB_A").strip() == "1"
    ls = run(execbox, "ls", env=cenv)
    assert ls.returncode == 0
    header, *rows = ls.out.splitlines()
    assert header.split() == ["ID", "STATE", "CREATED", "EXPIRES", "PROCS", "MEMORY", "CPUS"]
    assert [r.split()[:2] for r in rows] == [[sid, "running"]] and "300 MiB" in rows[0]
    assert run(execbox, "ls", "-q", env=cenv).out == sid + "\n"
    assert [x["id"] for x in json.loads(run(execbox, "ls", "--json", env=cenv).out)["sandboxes"]] == [sid]
    p = run(execbox, "create", "--json", env=cenv)
    other = json.loads(p.out)["id"]
    p = run(execbox, "rm", sid, other, env=cenv)
    assert (p.returncode, p.out, p.err) == (0, "", "")
    assert run(execbox, "ls", "-q", env=cenv).out == ""
    p = run(execbox, "rm", sid, env=cenv)
    # A removed sandbox's tombstone says so (issue 12, section 5).
    assert p.returncode == OWN_ERROR and "has ended: the sandbox was deleted" in one_line(p)


def test_exec_streams_and_exits_as_run_does(execbox, cenv, sid):
    p = run(execbox, "exec", sid, "--", "sh", "-c", "echo out; echo err >&2; exit 3", env=cenv)
    assert (p.returncode, p.out, p.err) == (3, "out\n", "err\n")
    p = run(execbox, "exec", sid, "--", "xb-no-such-command", env=cenv)
    assert p.returncode == 127 and one_line(p).startswith("execbox: error: command not found: xb-no-such-command")
    p = run(execbox, "exec", sid, "--", "/etc", env=cenv)
    assert p.returncode == 126 and "Permission denied" in one_line(p)
    p = run(execbox, "exec", "--timeout", "1s", sid, "--", "sleep", "30", env=cenv)
    assert p.returncode == 124 and one_line(p) == "execbox: killed: time limit (1s) reached"
    p = run(execbox, "exec", sid, "sh", "-c", "kill -TERM $$", env=cenv)
    assert p.returncode == 128 + 15 and p.err == ""
    p = run(execbox, "exec", sid, "--", "python3", "-c", "x = bytearray(1 << 30)", env=cenv)
    assert p.returncode == 128 + 9
    assert one_line(p) == "execbox: killed: memory limit (256 MiB) reached"


def test_exec_options(execbox, cenv, sid):
    p = run(execbox, "exec", sid, "--cwd", "/tmp", "--env", "XB_B=2", "--", "sh", "-c", 'echo "$PWD $XB_B"',
            env=cenv)
    assert p.out == "/tmp 2\n", p.err
    assert run(execbox, "exec", "--root", sid, "id", "-u", env=cenv).out == "0\n"
    assert run(execbox, "exec", sid, "id", "-u", env=cenv).out == "1000\n"
    p = run(execbox, "exec", "-i", sid, "--", "tr", "a-z", "A-Z", input="some input\n", env=cenv)
    assert (p.returncode, p.out) == (0, "SOME INPUT\n")


def test_exec_output_arrives_while_the_command_runs(execbox, cenv, sid):
    p = subprocess.Popen([execbox, "exec", sid, "--", "sh", "-c", "echo first; sleep 3; echo second"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cenv)
    try:
        t0 = time.monotonic()
        assert xbhost.read_lines(p, 1, timeout=10) == ["first"]
        assert time.monotonic() - t0 < 2.5, "the first line waited for the command's end"
        out, _ = p.communicate(timeout=30)
        assert p.returncode == 0 and out == b"second\n"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()
        p.stderr.close()


def test_exec_errors(execbox, cenv, sid):
    p = run(execbox, "exec", "nosuchsandbox0000", "--", "true", env=cenv)
    assert p.returncode == OWN_ERROR and "no sandbox with id" in one_line(p)
    p = run(execbox, "exec", sid, env=cenv)
    assert p.returncode == OWN_ERROR and "no command given" in one_line(p)
    p = run(execbox, "exec", "../etc", "--", "true", env=cenv)
    assert p.returncode == OWN_ERROR and "is not a sandbox id" in one_line(p)
    # A missing working directory is not a missing command.
    p = run(execbox, "exec", "--cwd", "/nonexistent", sid, "--", "true", env=cenv)
    assert p.returncode == OWN_ERROR and one_line(p).startswith("execbox: error: --cwd: "), p.err
    p = run(execbox, "exec", "--cwd", "/etc/hostname", sid, "--", "true", env=cenv)
    assert p.returncode == OWN_ERROR and one_line(p).startswith("execbox: error: --cwd: "), p.err


def test_cp_both_ways(execbox, srv, cenv, sid, tmp_path):
    data = os.urandom(3 << 20)
    src = tmp_path / "blob.bin"
    src.write_bytes(data)
    src.chmod(0o750)
    p = run(execbox, "cp", str(src), f"{sid}:/home/user/in.bin", env=cenv)
    assert (p.returncode, p.out, p.err) == (0, "", "")
    assert srv.sh(sid, "stat -c '%a %s' /home/user/in.bin").strip() == f"750 {len(data)}"
    back = tmp_path / "back.bin"
    p = run(execbox, "cp", f"{sid}:in.bin", str(back), env=cenv)
    assert p.returncode == 0, p.err
    assert back.read_bytes() == data and (back.stat().st_mode & 0o777) == 0o750
    # A directory as DST takes SRC's name, on either side.
    d = tmp_path / "d"
    d.mkdir()
    assert run(execbox, "cp", f"{sid}:/home/user/in.bin", str(d), env=cenv).returncode == 0
    assert (d / "in.bin").read_bytes() == data
    assert run(execbox, "cp", str(src), f"{sid}:/tmp/", env=cenv).returncode == 0
    assert run(execbox, "cp", str(src), f"{sid}:/tmp", env=cenv).returncode == 0
    assert srv.sh(sid, "cmp /tmp/blob.bin /home/user/in.bin && echo same").strip() == "same"
    # - is stdin or stdout; an empty file is a file.
    assert run(execbox, "cp", "-", f"{sid}:/tmp/x.txt", input="hello\n", env=cenv).returncode == 0
    assert run(execbox, "cp", f"{sid}:/tmp/x.txt", "-", env=cenv).out == "hello\n"
    srv.sh(sid, ": > /home/user/empty")
    assert run(execbox, "cp", f"{sid}:empty", str(d), env=cenv).returncode == 0
    assert (d / "empty").read_bytes() == b""


def test_cp_refusals_are_one_line_and_touch_nothing(execbox, srv, cenv, sid, tmp_path):
    keep = tmp_path / "keep.txt"
    keep.write_text("precious\n")
    p = run(execbox, "cp", f"{sid}:/home/user/missing", str(keep), env=cenv)
    assert p.returncode == OWN_ERROR and "No such file or directory" in one_line(p)
    assert keep.read_text() == "precious\n", "a refused download truncated the local file"
    p = run(execbox, "cp", str(keep), f"{sid}:/usr/x", env=cenv)
    # /usr is the sandbox's own layer, root's: the sandbox user may not write it.
    assert p.returncode == OWN_ERROR and "Permission denied" in one_line(p)
    p = run(execbox, "cp", f"{sid}:/home", str(tmp_path), env=cenv)
    assert p.returncode == OWN_ERROR and "is a directory" in one_line(p)
    p = run(execbox, "cp", str(keep), str(tmp_path / "x"), env=cenv)
    assert p.returncode == OWN_ERROR and "ID:PATH" in one_line(p)


def test_shell_is_an_interactive_terminal(execbox, srv, cenv, sid, term):
    t = term(execbox, "shell", sid, env=cenv)
    t.read_until(r"\$ ")
    t.type("echo got-$((6*7)); stty size; tty\r")
    m = t.read_until(r"got-42\r\n(\d+ \d+)\r\n(/dev/pts/\d+)")
    assert m.group(1) == b"33 101"
    t.resize(40, 120)
    time.sleep(1.0)          # the resize is an exec of stty, beside the shell
    t.type("stty size\r")
    t.read_until(r"40 120")
    t.type("sleep 30\r")
    time.sleep(0.5)
    t.type("\x03")           # reaches sleep through the sandbox's pty
    t.type("echo after-$?\r")
    t.read_until(r"after-130")
    t.type("exit 5\r")
    assert t.wait() == 5
    # The shell's process is gone from the server.
    assert srv.get(f"/v1/sandboxes/{sid}/processes").json()["processes"] == []


def test_shell_errors(execbox, cenv):
    p = run(execbox, "shell", "nosuchsandbox0000", env=cenv)
    assert p.returncode == OWN_ERROR and "no sandbox with id" in one_line(p)
    p = run(execbox, "shell", "--cwd", "rel", "x", env=cenv)
    assert p.returncode == OWN_ERROR and one_line(p).startswith("execbox: error: --cwd: ")


def test_shell_without_a_terminal_and_with_a_command(execbox, cenv, sid):
    p = run(execbox, "shell", sid, input="echo piped-$((1+1))\nexit 4\n", env=cenv)
    assert p.returncode == 4 and "piped-2" in p.out, (p.returncode, p.out, p.err)
    p = run(execbox, "shell", sid, "--", "sh", "-c", "echo 'it''s'; exit 7", env=cenv)
    assert p.returncode == 7 and "its" in p.out


def test_shell_ends_when_execbox_is_told_to(execbox, srv, cenv, sid):
    p = subprocess.Popen([execbox, "shell", sid], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=cenv)
    try:
        p.stdin.write(b"echo up\n")
        p.stdin.flush()
        deadline = time.monotonic() + 20
        buf = b""
        while b"up" not in buf.replace(b"echo up", b""):
            assert time.monotonic() < deadline, buf
            r, _, _ = select.select([p.stdout], [], [], 0.5)
            if r:
                buf += os.read(p.stdout.fileno(), 4096)
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=20) == 128 + 15
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for f in (p.stdin, p.stdout, p.stderr):
            f.close()
    deadline = time.monotonic() + 10
    while srv.get(f"/v1/sandboxes/{sid}/processes").json()["processes"]:
        assert time.monotonic() < deadline, "the shell outlived execbox shell"
        time.sleep(0.2)


def test_server_and_token_sources(execbox, srv, tmp_path):
    base = dict(os.environ)
    base.pop("EXECBOX_URL", None)
    base.pop("EXECBOX_TOKEN", None)
    # --server beats EXECBOX_URL; the token comes from EXECBOX_TOKEN or --token-file.
    env = dict(base, EXECBOX_URL="http://127.0.0.1:1", EXECBOX_TOKEN=TOKEN)
    assert run(execbox, "ls", "-q", "--server", srv.url, env=env).returncode == 0
    tf = tmp_path / "token"
    tf.write_text(TOKEN + "\n")
    p = run(execbox, "ls", "-q", "--token-file", str(tf), env=dict(base, EXECBOX_URL=srv.url))
    assert p.returncode == 0, p.err
    # No token, a wrong one, no server, no token file.
    p = run(execbox, "ls", env=dict(base, EXECBOX_URL=srv.url))
    assert p.returncode == OWN_ERROR and "EXECBOX_TOKEN" in one_line(p)
    p = run(execbox, "ls", env=dict(base, EXECBOX_URL=srv.url, EXECBOX_TOKEN="wrong-token-0123456789"))
    assert p.returncode == OWN_ERROR and "not valid" in one_line(p)
    p = run(execbox, "ls", "--server", "http://127.0.0.1:1", env=base)
    assert p.returncode == OWN_ERROR
    assert one_line(p).startswith("execbox: error: cannot reach the execbox server at http://127.0.0.1:1")
    p = run(execbox, "ls", "--token-file", str(tmp_path / "none"), env=dict(base, EXECBOX_URL=srv.url))
    assert p.returncode == OWN_ERROR and "--token-file" in one_line(p)
    p = run(execbox, "ls", "--server", "ftp://x", env=base)
    assert p.returncode == OWN_ERROR and one_line(p).startswith("execbox: error: --server takes http://")


def test_default_server_address(execbox):
    """Without --server or EXECBOX_URL the client asks 127.0.0.1:8000."""
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", 8000)) == 0:
            pytest.skip("something listens on 127.0.0.1:8000 here")
    env = dict(os.environ)
    env.pop("EXECBOX_URL", None)
    p = run(execbox, "ls", env=env)
    assert p.returncode == OWN_ERROR
    assert one_line(p).startswith("execbox: error: cannot reach the execbox server at http://127.0.0.1:8000")


def test_client_usage_errors(execbox):
    env = dict(os.environ, EXECBOX_URL="http://127.0.0.1:1")
    for argv, text in ((["rm"], "no sandbox given"), (["exec"], "no sandbox given"), (["shell"], "no sandbox given"),
                       (["cp", "a"], "SRC and DST"), (["ls", "extra"], "unexpected argument")):
        p = run(execbox, *argv, env=env)
        assert p.returncode == OWN_ERROR and text in one_line(p), (argv, p.err)
    for cmd in ("ls", "create", "rm", "exec", "shell", "cp"):
        p = run(execbox, cmd, "--help", env=env)
        assert p.returncode == 0 and p.out.startswith(f"usage: execbox {cmd}"), cmd

