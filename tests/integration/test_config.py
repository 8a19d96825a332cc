"""Options of `execbox serve` and `execbox mcp` from the config file
(--config, EXECBOX_CONFIG, /etc/execbox/execbox.conf), EXECBOX_* variables
and flags: each layer alone, their precedence, lists, and the errors, which
name the file and line, the variable or the flag."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import requests

from server_fixture import LISTEN_RE, _read_banner, server_env, server_factory  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "etc" / "execbox.conf"
OWN_ERROR = 125
MiB = 1 << 20


def conf(tmp_path, text: str, name: str = "execbox.conf") -> str:
    path = tmp_path / name
    path.write_text(text)
    path.chmod(0o644)
    return str(path)


def clean_env(**extra) -> dict:
    """The server's environment with no EXECBOX_* option of the caller's."""
    env = {k: v for k, v in server_env().items()
           if not k.startswith("EXECBOX_") or k == "EXECBOX_CGROUP_PREFIX"}   # the leak checks' marker
    env.update(extra)
    return env


def run(execbox, *args, env=None, input=b"", timeout=30):
    p = subprocess.run([execbox, *args], input=input, capture_output=True, env=env or clean_env(), timeout=timeout)
    p.err = p.stderr.decode(errors="replace")
    return p


def error_line(p) -> str:
    lines = p.err.strip().splitlines()
    assert p.returncode == OWN_ERROR and len(lines) == 1, (p.returncode, p.err)
    return lines[0]


def limits(srv) -> dict:
    r = srv.post("/v1/sandboxes", {})
    assert r.status_code in (200, 201), r.text
    body = r.json()
    srv.remove(body["id"])
    return body["limits"]


# ---- each layer, and their order ----

@pytest.mark.parametrize("layer,want", [("default", 1024), ("file", 300), ("env", 400), ("flag", 500)])
def test_each_layer_alone(server_factory, tmp_path, layer, want):  # noqa: F811
    args, env = [], clean_env()
    if layer == "file":
        args = ["--config", conf(tmp_path, "memory = 300M\n")]
    elif layer == "env":
        env["EXECBOX_MEMORY"] = "400M"
    elif layer == "flag":
        args = ["--memory", "500M"]
    srv = server_factory(*args, pool=0, env=env)
    assert limits(srv)["memory"] == want * MiB


def test_precedence_across_all_four(server_factory, tmp_path):  # noqa: F811
    # memory: file; pids: file < env; disk: file < env < flag; cpus: default.
    path = conf(tmp_path, "# set by the file\nmemory = 300M\npids = 100\n\ndisk = 100M\n")
    env = clean_env(EXECBOX_PIDS="200", EXECBOX_DISK="200M")
    srv = server_factory("--config", path, "--disk", "300M", pool=0, env=env)
    got = limits(srv)
    assert (got["memory"], got["pids"], got["disk"], got["cpus"]) == (300 * MiB, 200, 300 * MiB, 0)


def test_env_config_names_the_file_and_flag_beats_it(server_factory, tmp_path):  # noqa: F811
    env = clean_env(EXECBOX_CONFIG=conf(tmp_path, "memory = 300M\n", "a.conf"))
    srv = server_factory(pool=0, env=env)
    assert limits(srv)["memory"] == 300 * MiB
    srv.stop()   # one at a time: the leak check of one counts the next's sandboxes
    srv = server_factory("--config", conf(tmp_path, "memory = 600M\n", "b.conf"), pool=0, env=env)
    assert limits(srv)["memory"] == 600 * MiB


def test_env_names_map_to_options(server_factory, tmp_path):  # noqa: F811
    # EXECBOX_MAX_SANDBOXES: dashes become underscores.
    srv = server_factory(pool=0, env=clean_env(EXECBOX_MAX_SANDBOXES="1", EXECBOX_URL="http://127.0.0.1:1"))
    first = srv.post("/v1/sandboxes", {})
    assert first.status_code in (200, 201)
    second = srv.post("/v1/sandboxes", {})
    assert second.status_code == 429 or "too_many_sandboxes" in second.text, second.text
    srv.remove(first.json()["id"])
    srv.stop()   # one at a time: the leak check of one counts the next's sandboxes
    # --pool from the file, then from EXECBOX_POOL.
    srv = server_factory("--config", conf(tmp_path, "pool = 1\n"), pool=None, env=clean_env())
    assert srv.readyz()["pool_target"] == 1
    srv.stop()
    srv = server_factory("--config", conf(tmp_path, "pool = 1\n"), pool=None, env=clean_env(EXECBOX_POOL="0"))
    assert srv.readyz()["pool_target"] == 0


def start_raw(execbox, tmp_path, args, env):
    """`execbox serve` with no --listen or --state-dir flags of the fixture's."""
    p = subprocess.Popen([execbox, "serve", *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    banner = _read_banner(p, time.monotonic() + 20)
    return p, banner


def stop_raw(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    rc = p.wait(timeout=15)
    p.stdout.close()
    p.stderr.close()
    return rc


@pytest.mark.parametrize("where", ["file", "env"])
def test_listen_and_booleans_from_file_or_env(execbox, tmp_path, where):
    state = tmp_path / "state"
    settings = {"listen": "127.0.0.1:0", "state-dir": str(state), "no-auth": "true", "pool": "0"}
    env = clean_env()
    args = []
    if where == "file":
        args = ["--config", conf(tmp_path, "".join(f"{k} = {v}\n" for k, v in settings.items()))]
    else:
        env.update({"EXECBOX_" + k.upper().replace("-", "_"): v for k, v in settings.items()})
    p, banner = start_raw(execbox, tmp_path, args, env)
    try:
        assert banner and LISTEN_RE.match(banner[0]), banner
        assert any("Auth:     none" in line for line in banner), banner
        url = LISTEN_RE.match(banner[0]).group(1)
        assert requests.get(url + "/readyz", timeout=5).json()["pool_target"] == 0
        assert state.is_dir()
    finally:
        assert stop_raw(p) == 0


def test_false_in_a_higher_layer_turns_a_boolean_off(execbox, tmp_path):
    path = conf(tmp_path, f"listen = 127.0.0.1:0\nstate-dir = {tmp_path / 'st'}\nno-auth = true\npool = 0\n")
    p, banner = start_raw(execbox, tmp_path, ["--config", path], clean_env(EXECBOX_NO_AUTH="false"))
    try:
        assert banner and LISTEN_RE.match(banner[0]), banner
        assert any(line.startswith("  Token:") for line in banner), banner
        url = LISTEN_RE.match(banner[0]).group(1)
        assert requests.post(url + "/v1/sandboxes", json={}, timeout=5).status_code == 401
    finally:
        assert stop_raw(p) == 0


def test_execbox_token_keeps_its_meaning(server_factory, tmp_path):  # noqa: F811
    token = "config-test-token-0123456789abcdef"
    srv = server_factory(pool=0, no_auth=False, env=clean_env(EXECBOX_TOKEN=token))
    assert srv.post("/v1/sandboxes", {}, token=None).status_code == 401
    r = srv.post("/v1/sandboxes", {}, token=token)
    assert r.status_code in (200, 201), r.text
    srv.remove(r.json()["id"], token=token)


# ---- lists ----

def allowed(srv, host: str) -> bool:
    r = srv.post("/v1/sandboxes", {"mounts": [{"host": host, "path": "/mnt/x"}]})
    if r.status_code in (200, 201):
        srv.remove(r.json()["id"])
        return True
    assert 400 <= r.status_code < 500, r.text
    return False


def test_a_higher_layer_replaces_a_list(server_factory, tmp_path):  # noqa: F811
    dirs = {n: tmp_path / n for n in "abcd"}
    for d in dirs.values():
        d.mkdir()
    path = conf(tmp_path, f"allow-mount = {dirs['a']}\nallow-mount = {dirs['b']}\n")
    cases = [
        ([], {}, "ab"),
        ([], {"EXECBOX_ALLOW_MOUNT": f"{dirs['c']},{dirs['d']}"}, "cd"),
        ([], {"EXECBOX_ALLOW_MOUNT": ""}, ""),
        (["--allow-mount", str(dirs["d"])], {"EXECBOX_ALLOW_MOUNT": str(dirs["c"])}, "d"),
        (["--allow-mount", str(dirs["c"]), "--allow-mount", str(dirs["d"])], {}, "cd"),
    ]
    for flags, extra, want in cases:
        srv = server_factory("--config", path, *flags, pool=0, env=clean_env(**extra))
        got = "".join(n for n, d in dirs.items() if allowed(srv, str(d)))
        assert got == want, (flags, extra)
        srv.stop()


# ---- errors ----

@pytest.mark.parametrize("text,line,want", [
    ("pool = 1\nbogus = 1\n", 2, "unknown key `bogus`"),
    ("# c\n\nmemory = lots\n", 3, "memory: `lots` is not a size"),
    ("pool = 5000\n", 1, "pool: at most 1000"),
    ("max-sandboxes = 0\n", 1, "max-sandboxes: between 1 and 16000"),
    ("memory = 100T\n", 1, "memory: memory must be between"),
    ("no-auth = yes\n", 1, "no-auth: `yes` is neither true nor false"),
    ("pool\n", 1, "expected `key = value`"),
    ("--memory = 1G\n", 1, "`--memory` is not a key"),
    ("max_sandboxes = 1\n", 1, "`max_sandboxes` is not a key"),
    ("memory = 1G\nmemory = 2G\n", 2, "memory: given twice (first on line 1)"),
    ("memory =\n", 1, "memory needs a value"),
    ("token = secret-secret-secret\n", 1, "unknown key `token`"),
    ("config = /x\n", 1, "unknown key `config`"),
    ("allow-mount = /nonexistent-xb\n", 1, "allow-mount: /nonexistent-xb: No such file or directory"),
])
def test_bad_key_or_value_names_file_and_line(execbox, tmp_path, text, line, want):
    path = conf(tmp_path, text)
    p = run(execbox, "serve", "--config", path)
    assert error_line(p).startswith(f"execbox: error: {path}:{line}: {want}"), p.err


@pytest.mark.parametrize("opt,value", [("pool", "5000"), ("memory", "lots"), ("pids", "1"), ("cpus", "0"),
                                       ("cgroup", "v3"), ("body-max", "x"), ("max-sandboxes", "16001")])
def test_same_message_from_every_layer(execbox, tmp_path, opt, value):
    flag = error_line(run(execbox, "serve", "--state-dir", str(tmp_path / "s"), f"--{opt}", value))
    assert flag.startswith(f"execbox: error: --{opt}: ")
    msg = flag[len(f"execbox: error: --{opt}: "):]
    path = conf(tmp_path, f"{opt} = {value}\n")
    assert error_line(run(execbox, "serve", "--config", path)) == f"execbox: error: {path}:1: {opt}: {msg}"
    var = "EXECBOX_" + opt.upper().replace("-", "_")
    assert error_line(run(execbox, "serve", env=clean_env(**{var: value}))) == f"execbox: error: {var}: {msg}"


def test_a_wrong_lower_layer_is_an_error_even_when_overridden(execbox, tmp_path):
    path = conf(tmp_path, "memory = lots\n")
    p = run(execbox, "serve", "--config", path, "--memory", "1G")
    assert error_line(p).startswith(f"execbox: error: {path}:1: memory: ")


def test_env_errors(execbox):
    p = run(execbox, "serve", env=clean_env(EXECBOX_NO_AUTH="1"))
    assert error_line(p) == "execbox: error: EXECBOX_NO_AUTH: `1` is neither true nor false"
    p = run(execbox, "serve", env=clean_env(EXECBOX_PIDS=""))
    assert error_line(p) == "execbox: error: EXECBOX_PIDS needs a value"
    p = run(execbox, "serve", env=clean_env(EXECBOX_ALLOW_MOUNT="/tmp,/nonexistent-xb"))
    assert error_line(p) == "execbox: error: EXECBOX_ALLOW_MOUNT: /nonexistent-xb: No such file or directory"


def test_missing_or_unreadable_explicit_config(execbox, tmp_path):
    missing = str(tmp_path / "nope.conf")
    assert error_line(run(execbox, "serve", "--config", missing)) == \
        f"execbox: error: --config {missing}: cannot read it: No such file or directory"
    assert error_line(run(execbox, "serve", env=clean_env(EXECBOX_CONFIG=missing))) == \
        f"execbox: error: EXECBOX_CONFIG {missing}: cannot read it: No such file or directory"
    assert error_line(run(execbox, "serve", "--config", str(tmp_path))).endswith("cannot read it: Is a directory")
    assert error_line(run(execbox, "serve", "--config", "")) == "execbox: error: --config needs a value"
    writable = conf(tmp_path, "pool = 1\n", "w.conf")
    os.chmod(writable, 0o666)
    assert error_line(run(execbox, "serve", "--config", writable)).endswith("anyone may write it; chmod o-w it")
    # Unreadable to its reader: read as nobody (root reads anything).
    secret = conf(tmp_path, "pool = 1\n", "secret.conf")
    os.chmod(secret, 0o600)
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", execbox, "serve",
                        "--config", secret], capture_output=True, text=True, timeout=30, env=clean_env())
    assert p.returncode == OWN_ERROR and "cannot read it: Permission denied" in p.stderr, p.stderr


@pytest.mark.skipif(os.path.exists("/etc/execbox/execbox.conf"), reason="this host has a config file")
def test_the_default_file_may_be_missing(server_factory):  # noqa: F811
    assert limits(server_factory(pool=0, env=clean_env()))["memory"] == 1024 * MiB


# ---- execbox mcp ----

def test_mcp_reads_its_keys_and_skips_serve_keys(execbox, tmp_path):
    # listen, quiet and max-sandboxes are serve's: skipped; pool is checked.
    ok = conf(tmp_path, "listen = nowhere\nquiet = true\nmax-sandboxes = 5\npool = 0\n", "ok.conf")
    p = run(execbox, "mcp", "--config", ok, timeout=60)
    assert p.returncode == 0, p.err
    bad = conf(tmp_path, "listen = nowhere\npool = 500\n", "bad.conf")
    assert error_line(run(execbox, "mcp", "--config", bad)) == f"execbox: error: {bad}:2: pool: at most 100"
    # A key of neither command is an error for both.
    unknown = conf(tmp_path, "bogus = 1\n", "unknown.conf")
    assert "unknown key `bogus`" in error_line(run(execbox, "mcp", "--config", unknown))
    # serve's only variables mean nothing to mcp.
    assert run(execbox, "mcp", env=clean_env(EXECBOX_MAX_SANDBOXES="0", EXECBOX_POOL="0")).returncode == 0


# ---- the example file, and --help ----

def example_keys() -> list[str]:
    return re.findall(r"^#([a-z-]+) = ", EXAMPLE.read_text(), re.M)


def test_example_file_lists_every_key(execbox):
    out = subprocess.run([execbox, "serve", "--help"], capture_output=True, text=True, check=True).stdout
    serve = set(re.findall(r"--([a-z][a-z0-9-]*)", out)) - {"help", "config"}
    out = subprocess.run([execbox, "mcp", "--help"], capture_output=True, text=True, check=True).stdout
    mcp = set(re.findall(r"--([a-z][a-z0-9-]*)", out)) - {"help", "config", "token"}
    keys = example_keys()
    assert len(keys) == len(set(keys))
    assert set(keys) == serve | mcp


def test_example_file_parses(execbox, server_factory, tmp_path):  # noqa: F811
    # As shipped (all commented out): nothing changes.
    srv = server_factory("--config", str(EXAMPLE), pool=0, env=clean_env())
    assert limits(srv)["memory"] == 1024 * MiB
    srv.stop()
    # Every setting turned on, with directories of this test's.
    (tmp_path / "data").mkdir()
    (tmp_path / "tokens").write_text("example-token-0123456789abcdef\n")
    subst = {"listen": "127.0.0.1:0", "state-dir": str(tmp_path / "st"), "token-file": str(tmp_path / "tokens"),
             "allow-mount": str(tmp_path / "data"), "pool": "0"}
    lines = []
    for line in EXAMPLE.read_text().splitlines():
        m = re.match(r"^#([a-z-]+) = (.*)$", line)
        if m and m.group(1) != "server":
            lines.append(f"{m.group(1)} = {subst.get(m.group(1), m.group(2))}")
        else:
            lines.append(line)
    path = conf(tmp_path, "\n".join(lines) + "\n", "full.conf")
    p, banner = start_raw(execbox, tmp_path, ["--config", path], clean_env())
    try:
        assert banner and LISTEN_RE.match(banner[0]), (banner, p.stderr.read1(4096) if p.poll() is not None else "")
        assert any(f"Token:    from {tmp_path / 'tokens'}" in line for line in banner), banner
    finally:
        assert stop_raw(p) == 0
    # mcp takes the same file (pool 0 is fine; it skips serve's keys).
    assert run(execbox, "mcp", "--config", path, timeout=60).returncode == 0


def test_help_mentions_config(execbox):
    for cmd in ("serve", "mcp"):
        out = subprocess.run([execbox, cmd, "--help"], capture_output=True, text=True, check=True).stdout
        assert out.startswith(f"usage: execbox {cmd} [OPTIONS]\n")
        assert "  --config FILE          read options from FILE (default /etc/execbox/execbox.conf)" in out
