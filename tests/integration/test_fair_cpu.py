"""Fair CPU (issue 12, section 2): every sandbox's cgroup has the same CPU
weight, with no CPU limit asked, and the daemon's own cgroup outranks it, so
a sandbox full of spinning processes cannot starve the others or the daemon
that serves them. `make bench` (part 7) measures the effect: another
sandbox's exec median with 64 spinners next door."""
from __future__ import annotations

import os

import server_fixture as sf
from server_fixture import server, server_factory  # noqa: F401

SANDBOX_WEIGHT = {"cpu.weight": 50, "cpu.shares": 512}
DEFAULT_WEIGHT = {"cpu.weight": 100, "cpu.shares": 1024}


def cpu_weights(paths) -> dict[str, int]:
    """{file: value} of the cpu.weight (v2) or cpu.shares (v1) among paths."""
    out = {}
    for p in paths:
        for name in SANDBOX_WEIGHT:
            try:
                with open(os.path.join(p, name)) as f:
                    out[name] = int(f.read().split()[0])
            except OSError:
                pass
    return out


def own_cpu_weight(pid: int) -> dict[str, int]:
    """The CPU weight of a host process's own cgroup (the root's default
    when it is in the root, which has no weight file)."""
    pure_v2 = os.path.exists("/sys/fs/cgroup/cgroup.procs")
    out = {}
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            hid, controllers, path = line.rstrip("\n").split(":", 2)
            if hid == "0" and pure_v2:
                name, base = "cpu.weight", "/sys/fs/cgroup"
            elif "cpu" in controllers.split(","):
                name, base = "cpu.shares", sf._hierarchy_dir(controllers)
            else:
                continue
            try:
                with open(os.path.join(base + path, name)) as f:
                    out[name] = int(f.read().split()[0])
            except OSError:
                out[name] = DEFAULT_WEIGHT[name]
    return out


def test_every_sandbox_gets_an_equal_cpu_weight_below_the_daemons(server):
    a, b = server.create(), server.create()
    assert a["limits"].get("cpus") in (None, 0, 0.0), "this test needs sandboxes without a CPU limit"
    wa = cpu_weights(sf.sandbox_cgroups(server, a["id"]))
    wb = cpu_weights(sf.sandbox_cgroups(server, b["id"]))
    assert wa, "sandbox A is in no cgroup with a CPU weight: a busy sandbox would compete task by task"
    assert wa == wb == {k: SANDBOX_WEIGHT[k] for k in wa}, (wa, wb)
    daemon = own_cpu_weight(server.pid)
    for k, v in wa.items():
        assert daemon.get(k, DEFAULT_WEIGHT[k]) > v, f"the daemon's {k} {daemon} does not outrank a sandbox's {v}"


def test_a_cpu_limit_keeps_the_equal_weight(server):
    r = server.post("/v1/sandboxes", {"limits": {"cpus": 0.5}})
    sf.expect(r, 201)
    w = cpu_weights(sf.sandbox_cgroups(server, r.json()["id"]))
    assert w and all(SANDBOX_WEIGHT[k] == v for k, v in w.items()), w
