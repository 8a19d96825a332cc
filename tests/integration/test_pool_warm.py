"""The warm pool's warm-up (src/core/pool_warm.c): each pooled sandbox runs
`/bin/bash -l -c true` once before it is ready (a create that claims it
meanwhile waits, as for any sandbox still starting), so that a client's
first command finds the sandbox's caches warm. It must leave nothing the
client sees: no process, no file, no audit event, no exec in the metrics.
The positive control is the pid it used: a claimed sandbox's first command
gets a higher pid than in a cold one (the pool off)."""
from __future__ import annotations

import time

from server_fixture import expect, server_factory  # noqa: F401

# What the client can see of a fresh sandbox, from inside.
LOOK = ("echo pid=$$; ls -A /home/user /tmp /var/tmp; "
        "for p in /proc/[0-9]*; do echo proc $(cat $p/comm); done")


def pool_ready(srv, n: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while srv.readyz().get("pool_ready", 0) < n:
        assert time.monotonic() < deadline, f"the pool did not fill: {srv.readyz()}"
        time.sleep(0.1)


def first_look(srv) -> tuple[int, list[str]]:
    sid = srv.create()["id"]
    out = srv.sh(sid, LOOK)
    lines = out.splitlines()
    pid = int(lines[0].removeprefix("pid="))
    rest = lines[1:]
    events = expect(srv.get(f"/v1/sandboxes/{sid}/events", headers={"Accept": "application/json"}), 200).json()
    types = [e["type"] for e in events["events"]]
    assert types == ["create", "exec"], f"the audit log has more than the client did: {types}"
    assert expect(srv.get(f"/v1/sandboxes/{sid}/processes"), 200).json()["processes"] == []
    srv.remove(sid)
    return pid, rest


def execs(srv) -> float:
    return sum(v for k, v in srv.metrics().items() if k.startswith("execbox_execs_total"))


def shells_and_keepers(comms: list[str]) -> tuple[int, int]:
    return sum(c in ("bash", "sh") for c in comms), comms.count("xb-keeper")


def test_warm_up_leaves_no_trace(server_factory):
    srv = server_factory(pool=2)
    pool_ready(srv, 2)
    before = execs(srv)
    warm_pid, seen = first_look(srv)
    # Init, the command's keeper and shell, and what that shell ran: the
    # warm-up's keeper and shell are gone, and wrote nothing.
    comms = [x.split(" ", 1)[1] for x in seen if x.startswith("proc ")]
    assert shells_and_keepers(comms) == (1, 1), comms
    assert set(comms) <= {"xb-keeper", "bash", "sh", "cat"} | {c for c in comms if c.startswith("init-")}, comms
    files = [x for x in seen if not x.startswith("proc ") and x and not x.endswith(":")]
    assert files == [], f"a fresh sandbox holds files: {files}"
    assert execs(srv) - before == 1, "the warm-up counted as an exec"
    # The control: with no pool the first command's keeper is pid 2, its shell 3.
    cold = server_factory(pool=0)
    cold_pid, _ = first_look(cold)
    assert cold_pid == 3, cold_pid
    assert warm_pid > cold_pid, f"no warm-up ran in the pooled sandbox (pid {warm_pid})"


def test_back_to_back_creates_see_no_warm_up(server_factory):
    # Back to back creates drain the pool while it refills (claiming
    # sandboxes still starting or warming up): none of them may see a
    # warm-up's processes, whichever sandbox they get.
    srv = server_factory(pool=2)
    pool_ready(srv, 2)
    ids = [srv.create()["id"] for _ in range(4)]
    for sid in ids:
        comms = srv.sh(sid, "for p in /proc/[0-9]*; do cat $p/comm; done").split()
        assert shells_and_keepers(comms) == (1, 1), comms
        srv.remove(sid)
