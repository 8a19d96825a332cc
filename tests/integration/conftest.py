"""Fixtures for the adversarial suite against `execbox run`.

`make integration` sets EXECBOX (the binary under test) and XBPROBE (the
static helper from tests/helper/xbprobe.c, bound read-only into sandboxes
at /opt/xb). Every test is wrapped by `no_leaks`, which snapshots the host
before the test and fails it if a process, cgroup, mount or temp file
appeared and stayed. Only this run's count: xbhost.MARKER, which every
execbox started here inherits as EXECBOX_CGROUP_PREFIX, names its cgroups,
so another test run or daemon on the machine cannot fail this one."""
from __future__ import annotations

import os
import subprocess

import pytest

import xbhost
from xbhost import HostState


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes a few seconds")


def _binary(var: str) -> str:
    path = os.environ.get(var)
    if not path:
        pytest.exit(f"{var} is not set: run the suite with `make integration`", returncode=2)
    if not os.access(path, os.X_OK):
        pytest.exit(f"{var}={path} is not an executable: build it first", returncode=2)
    return os.path.realpath(path)


@pytest.fixture(scope="session")
def execbox() -> str:
    if os.geteuid() != 0:
        pytest.exit("execbox needs root to create sandboxes; run the suite as root", returncode=2)
    return _binary("EXECBOX")


@pytest.fixture(scope="session")
def xbprobe() -> str:
    return _binary("XBPROBE")


@pytest.fixture(scope="session")
def probe_mount(xbprobe) -> list[str]:
    return xbhost.probe_mount_args(xbprobe)


@pytest.fixture
def xb(execbox):
    """xb(*args, json_mode=True, input=None, timeout=60, env=None, pass_fds=())
    runs `execbox run [--json] ARGS` and returns an xbhost.Result."""
    def run(*args, **kw):
        return xbhost.execbox_run(execbox, args, **kw)
    return run


@pytest.fixture
def probe(execbox, probe_mount):
    """probe(*probe_args, opts=(), root=False, **kw): run the probe inside a
    fresh sandbox in JSON mode."""
    def run(*args, opts=(), root=False, **kw):
        argv = list(probe_mount) + (["--root"] if root else []) + list(opts) + ["--", xbhost.PROBE_IN] + list(args)
        return xbhost.execbox_run(execbox, argv, **kw)
    return run


@pytest.fixture
def popen(execbox):
    """Start `execbox run` in the background (streaming mode). Every process
    started here is waited for, and killed by its pid if a test left it."""
    started: list[subprocess.Popen] = []

    def start(*args, **kw):
        kw.setdefault("stdin", subprocess.DEVNULL)
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        p = subprocess.Popen([execbox, "run", *args], **kw)
        started.append(p)
        return p

    yield start
    for p in started:
        if p.poll() is None:
            p.terminate()       # SIGTERM: execbox tears its sandbox down
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        p.communicate()


@pytest.fixture(scope="session", autouse=True)
def own_dirs(tmp_path_factory):
    """Mounts below this session's base temp are this run's to account for
    (xbhost.MARKER names its cgroups)."""
    xbhost.own_dir(tmp_path_factory.getbasetemp())


@pytest.fixture(autouse=True)
def no_leaks():
    """Fail the test if it left anything on the host: a sandbox-range process
    or a child of the test, an execbox cgroup in any hierarchy, a mount, a
    temp or runtime file. Runs around every test, teardown last."""
    before = HostState.capture()
    yield
    leaks = xbhost.wait_for_no_leaks(before)
    if leaks:
        pytest.fail("the test left these behind on the host:\n  " + "\n  ".join(leaks), pytrace=False)
