"""The `execbox run` command line: exit statuses, one-line errors with a
hint (exit 125), JSON output, stdin, --env and --mount (invariant 7: every
path a caller gives resolves inside what the operator allowed)."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import subprocess
import time

import pytest

import xbhost

OWN_ERROR = 125


# ---- exit statuses ----

def test_exit_status_passes_through(xb):
    r = xb("--", "/bin/sh", "-c", "exit 3")
    assert r.rc == 3
    assert r.json["exit_code"] == 3 and r.json["status"] == "exit_nonzero" and r.json["signal"] is None


def test_exit_status_passes_through_when_streaming(xb):
    r = xb("--", "/bin/sh", "-c", "echo out; echo err >&2; exit 7", json_mode=False)
    assert (r.rc, r.stdout, r.stderr) == (7, "out\n", "err\n")


@pytest.mark.parametrize("sig", [15, 11, 6])
def test_signal_death_is_128_plus_signal(probe, sig):
    r = probe("kill-self", str(sig))
    assert r.rc == 128 + sig, r.describe()
    assert r.json["signal"] == sig and r.json["exit_code"] is None


def test_success_is_zero(xb):
    r = xb("--", "true")
    assert r.rc == 0 and r.json["status"] == "ok"


# ---- execbox's own errors: 125 and one line that says what to do ----

ERRORS = {
    "unknown option": (["--bogus", "--", "true"], "unknown option"),
    "bad size": (["--memory", "lots", "--", "true"], "size"),
    "size below the minimum": (["--memory", "1K", "--", "true"], "memory"),
    "bad duration": (["--timeout", "soon", "--", "true"], ""),
    "bad pids": (["--pids", "many", "--", "true"], ""),
    "bad cpus": (["--cpus", "fast", "--", "true"], ""),
    "bad cgroup mode": (["--cgroup", "v3", "--", "true"], "v1 or v2"),
    "mount outside the allowlist": (["--mount", "/etc:/mnt/etc", "--", "true"], "allowlist"),
    "mount over /etc": (["--allow-mount", "/tmp", "--mount", "/tmp:/etc/x", "--", "true"], "/etc"),
    "mount path not normalised": (["--allow-mount", "/tmp", "--mount", "/tmp:/mnt/../etc", "--", "true"],
                                  "normalised"),
    "mount with a bad mode": (["--allow-mount", "/tmp", "--mount", "/tmp:/mnt/t:rwx", "--", "true"], "ro or rw"),
    "relative cwd": (["--cwd", "relative/dir", "--", "true"], "--cwd"),
    "missing cwd": (["--cwd", "/nonexistent", "--", "true"], "working directory"),
    "env name with a digit first": (["--env", "1X=2", "--", "true"], "environment"),
    "env name with a dash": (["--env", "A-B=2", "--", "true"], "environment"),
    "env without =": (["--env", "NOEQUALS", "--", "true"], "NAME=VALUE"),
    "env with an empty name": (["--env", "=v", "--", "true"], "NAME=VALUE"),
    "no command": ([], "no command"),
}


# A command that cannot be started is not execbox's failure: 127 and 126,
# as the shells and env(1) give them; still one line with a hint.
CANNOT_START = {
    "missing binary": (["--", "xb-no-such-command"], "command not found", 127),
    "not executable": (["--", "/etc"], "not executable", 126),
}


@pytest.mark.parametrize("case", list(CANNOT_START))
def test_commands_that_cannot_start_exit_126_or_127_with_a_hint(xb, case):
    args, hint, rc = CANNOT_START[case]
    r = xb(*args, json_mode=False)
    assert r.rc == rc, r.describe()
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("execbox: error: ") and hint in lines[0], r.stderr


def test_a_long_command_line_runs_as_it_would_outside(xb):
    """The command is started by the sandbox's setup child from memory, not
    sent over the init socket: its size is bounded only by the kernel's own
    limit (ARG_MAX), as for any program."""
    r = xb("--", "echo", "a" * 100000, json_mode=False)
    assert r.rc == 0 and r.stdout == "a" * 100000 + "\n", r.describe()


@pytest.mark.parametrize("case", list(ERRORS))
def test_own_errors_exit_125_with_a_hint(xb, case):
    args, hint = ERRORS[case]
    r = xb(*args, json_mode=False)
    assert r.rc == OWN_ERROR, r.describe()
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("execbox: error: "), r.stderr
    assert hint.lower() in last.lower(), f"no hint `{hint}` in {last!r}"


@pytest.mark.parametrize("case", list(ERRORS))
def test_own_errors_are_one_line(xb, request, case):
    args, _ = ERRORS[case]
    r = xb(*args, json_mode=False)
    assert len(r.stderr.strip().splitlines()) == 1, f"stderr is not one line: {r.stderr!r}"


def test_bad_value_error_names_the_option(xb):
    r = xb("--memory", "lots", "--", "true", json_mode=False)
    assert "--memory" in r.stderr, r.stderr


@pytest.mark.parametrize("args", [["--output-limit", "10"], ["--output-limit", "2G"], ["--disk", "0"],
                                  ["--disk", "2T"], ["--memory", "4M"], ["--memory", "2T"],
                                  ["--memory", "99999999999999999999"], ["--pids", "2000000"],
                                  ["--cpus", "2000"], ["--cpus", "0"], ["--timeout", "8d"], ["--timeout", "-1"]])
def test_limits_out_of_bounds_are_refused(xb, args):
    r = xb(*args, "--", "true", json_mode=False)
    assert r.rc == OWN_ERROR, r.describe()


def test_own_error_in_json_mode_is_one_json_line(xb):
    r = xb("--memory", "lots", "--", "true")
    assert r.rc == OWN_ERROR
    assert r.json["error"]["code"] == "execbox_error"
    assert r.json["error"]["message"]


def test_help(execbox):
    r = xbhost.execbox_run(execbox, ["--help"], json_mode=False)
    assert r.rc == 0 and "usage: execbox run" in r.stdout


# ---- JSON output, real programs ----

def test_python_json_result(xb):
    r = xb("--", "python3", "-c", "print(1)")
    assert r.json["status"] == "ok", r.describe()
    assert r.json["stdout"] == "1\n" and r.json["stderr"] == ""
    assert r.json["exit_code"] == 0
    assert set(r.json) >= {"status", "exit_code", "signal", "stdout", "stderr", "stdout_truncated",
                           "stderr_truncated", "wall_ms", "cpu_ms", "peak_memory"}


def test_invalid_utf8_output_is_still_valid_json(xb):
    r = xb("--", "/bin/sh", "-c", r"printf 'ok\377\376end\n'")
    assert r.json["stdout"].startswith("ok") and r.json["stdout"].endswith("end\n")


PLOT = r"""
import base64, os
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
x = np.linspace(0, 2 * np.pi, 200)
fig, ax = plt.subplots()
ax.plot(x, np.sin(x))
fig.savefig("/home/user/plot.png")
fig.savefig("/home/user/out/plot.png")
with open("/home/user/plot.png", "rb") as f:
    print(base64.b64encode(f.read(16)).decode())
print(os.path.getsize("/home/user/plot.png"))
"""
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_numpy_matplotlib_png(xb, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o777)          # the sandbox's user is an unprivileged host uid
    r = xb("--allow-mount", str(tmp_path), "--mount", f"{out}:/home/user/out:rw", "--",
           "python3", "-c", PLOT, timeout=120)
    assert r.json["status"] == "ok", r.describe()
    head_b64, size = r.json["stdout"].split()
    assert base64.b64decode(head_b64).startswith(PNG_SIGNATURE)
    png = out / "plot.png"
    data = png.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) == int(size)
    # Written by uid 1000 inside: a host uid in the sandbox's range, never root.
    assert png.stat().st_uid >= xbhost.SANDBOX_UID_MIN + 1000


# ---- stdin ----

def test_stdin_is_relayed(xb):
    r = xb("--", "cat", input="hi\n", json_mode=False)
    assert r.rc == 0 and r.stdout == "hi\n"


def test_large_stdin_is_relayed_intact(xb):
    data = os.urandom(3 << 20)
    r = xb("--", "sha256sum", input=data)
    assert r.json["stdout"].split()[0] == hashlib.sha256(data).hexdigest()


def test_stdin_from_a_regular_file(execbox, tmp_path):
    data = os.urandom(1 << 20)
    src = tmp_path / "input.bin"
    src.write_bytes(data)
    with open(src, "rb") as f:
        r = subprocess.run([execbox, "run", "--json", "--", "sha256sum"], stdin=f, capture_output=True, timeout=60)
    assert json.loads(r.stdout)["stdout"].split()[0] == hashlib.sha256(data).hexdigest()


def test_no_stdin_reads_eof(xb):
    r = xb("--", "cat")
    assert r.json["status"] == "ok" and r.json["stdout"] == ""


def test_closed_downstream_pipe_ends_the_run(execbox):
    p = subprocess.Popen([execbox, "run", "--timeout", "20s", "--", "yes"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert p.stdout.readline() == b"y\n"
        p.stdout.close()                # the reader goes away, like `| head -1`
        t0 = time.monotonic()
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        assert p.poll() is not None, "execbox kept the command running after its reader left"
        assert time.monotonic() - t0 < 2
        # As in a shell pipeline: the command dies of SIGPIPE (137 would be a
        # SIGKILL from elsewhere, such as another execbox reaping cgroups).
        assert p.returncode == 128 + 13, p.returncode
    finally:
        if p.poll() is None:
            p.terminate()               # our own child, by pid; SIGTERM lets it clean up
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        p.wait()
        p.stderr.close()


# ---- --env ----

def test_env_option(xb):
    r = xb("--env", "FOO=bar", "--env", "X_1=a=b", "--", "/bin/sh", "-c", 'printf "%s|%s" "$FOO" "$X_1"')
    assert r.json["stdout"] == "bar|a=b"


# ---- --mount ----

@pytest.fixture
def shared(tmp_path):
    d = tmp_path / "shared"
    d.mkdir()
    d.chmod(0o777)
    (d / "hello.txt").write_text("from the host\n")
    return d


def test_ro_mount_is_readable_not_writable(probe, shared):
    opts = ["--allow-mount", str(shared), "--mount", f"{shared}:/home/user/in:ro"]
    assert probe("read", "/home/user/in/hello.txt", opts=opts).probe["data"] == "from the host\n"
    for who in (False, True):
        res = probe("write", "/home/user/in/new.txt", opts=opts, root=who).probe
        assert res["open_errno"] == "EROFS", res
    assert sorted(os.listdir(shared)) == ["hello.txt"]


def test_mount_defaults_to_read_only(probe, shared):
    opts = ["--allow-mount", str(shared), "--mount", f"{shared}:/mnt/in"]
    assert probe("write", "/mnt/in/new.txt", opts=opts, root=True).probe["open_errno"] == "EROFS"


def test_rw_mount_is_writable_and_seen_by_the_host(probe, shared):
    opts = ["--allow-mount", str(shared), "--mount", f"{shared}:/home/user/work:rw"]
    res = probe("write", "/home/user/work/new.txt", "100", opts=opts).probe
    assert res["write_errno"] is None and res["written"] == 100, res
    st = (shared / "new.txt").stat()
    assert st.st_size == 100 and st.st_uid >= xbhost.SANDBOX_UID_MIN


def test_rw_mount_does_not_allow_setuid_files(xb, shared):
    """A setuid file made inside a rw bind must not be setuid-root on the host."""
    r = xb("--root", "--allow-mount", str(shared), "--mount", f"{shared}:/mnt/w:rw", "--",
           "/bin/sh", "-c", "cp /usr/bin/true /mnt/w/suid && chmod 4755 /mnt/w/suid")
    assert r.json["status"] == "ok", r.describe()
    st = (shared / "suid").stat()
    # It stays setuid, but to the sandbox root's host uid: never host root.
    assert st.st_uid >= xbhost.SANDBOX_UID_MIN, "a sandbox created a file owned by a host user"
    assert not (st.st_mode & stat.S_ISUID and st.st_uid == 0)


def test_allow_mount_from_the_environment(xb, shared, monkeypatch):
    monkeypatch.setenv("EXECBOX_ALLOW_MOUNTS", f"/usr/share:{shared}")
    r = xb("--mount", f"{shared}:/mnt/in", "--", "cat", "/mnt/in/hello.txt")
    assert r.json["stdout"] == "from the host\n", r.describe()


def test_missing_allow_mount_directory_is_an_error(xb):
    r = xb("--allow-mount", "/nonexistent-xb", "--", "true", json_mode=False)
    assert r.rc == OWN_ERROR and "/nonexistent-xb" in r.stderr


def test_mount_through_a_symlink_out_of_the_allowlist_is_refused(xb, tmp_path):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "escape").symlink_to("/etc")
    r = xb("--allow-mount", str(allowed), "--mount", f"{allowed}/escape:/mnt/e", "--", "ls", "/mnt/e",
           json_mode=False)
    assert r.rc == OWN_ERROR and "allowlist" in r.stderr, r.describe()


def test_mount_with_dotdot_out_of_the_allowlist_is_refused(xb, tmp_path):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    r = xb("--allow-mount", str(allowed), "--mount", f"{allowed}/../..:/mnt/e", "--", "true", json_mode=False)
    assert r.rc == OWN_ERROR, r.describe()


@pytest.mark.parametrize("src", ["/proc", "/proc/1", "/sys", "/dev", "/proc/self/root/proc"])
def test_kernel_trees_are_never_bound(xb, src):
    r = xb("--allow-mount", "/", "--mount", f"{src}:/mnt/k", "--", "true", json_mode=False)
    assert r.rc == OWN_ERROR and "never bound" in r.stderr, r.describe()


@pytest.mark.parametrize("dest", ["/proc/x", "/dev/x", "/usr/local", "/etc", "/bin", "/lib/x", "/root"])
def test_reserved_mount_destinations_are_refused(xb, tmp_path, dest):
    r = xb("--allow-mount", str(tmp_path), "--mount", f"{tmp_path}:{dest}", "--", "true", json_mode=False)
    assert r.rc == OWN_ERROR, r.describe()


def test_nested_mount_destinations_are_refused(xb, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    r = xb("--allow-mount", str(tmp_path), "--mount", f"{a}:/mnt/a", "--mount", f"{b}:/mnt/a/b", "--", "true",
           json_mode=False)
    assert r.rc == OWN_ERROR, r.describe()
