"""tests/mcp/run.sh's leak check: `leftovers.py snapshot FILE` records the
execbox cgroups and sandbox processes there are now; `leftovers.py check
FILE` prints those that appeared since and are still there after a grace
period, and exits 1 if there are any. What another execbox on this machine
runs (a process under a foreign execbox, or a cgroup whose every member is
one) does not count, as in tests/integration/server_fixture.py."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import xbhost  # noqa: E402


def now():
    table = xbhost.proc_table()
    procs = {f"{p.pid}:{p.start}" for p in xbhost.sandbox_procs(table).values()}
    return xbhost.cgroup_dirs(), procs, table


def new_since(before):
    me = os.getpid()
    cgroups, procs, table = now()
    left = []
    for cg in sorted(cgroups - set(before["cgroups"])):
        members = xbhost.cgroup_procs(cg)
        if members and all(xbhost.foreign(table, pid, me) for pid in members):
            continue
        left.append(f"cgroup {cg} (members {members})")
    for key in sorted(procs - set(before["procs"])):
        pid = int(key.split(":")[0])
        if pid in table and not xbhost.foreign(table, pid, me):
            left.append(f"process {pid} ({table[pid].name}) uid {table[pid].uid}")
    return left


if sys.argv[1] == "snapshot":
    cgroups, procs, _ = now()
    with open(sys.argv[2], "w") as f:
        json.dump({"cgroups": sorted(cgroups), "procs": sorted(procs)}, f)
else:
    with open(sys.argv[2]) as f:
        before = json.load(f)
    deadline = time.monotonic() + 5
    while (left := new_since(before)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for line in left:
        print(line)
    sys.exit(1 if left else 0)
