"""Nothing a session's driver sends is held unbounded by the daemon (issue
12, section 1). User code runs in the driver process, so it can write any
event on the driver's protocol fd: one gc lookup finds the driver's emit().
Each test does that, and measures what the daemon pays."""
from __future__ import annotations

import threading
import time

import requests

from server_fixture import expect, server, server_factory  # noqa: F401

# User code that finds the driver's own emit() and its current cell id.
FIND_EMIT = ("import gc\n"
             "emit = next(f for f in gc.get_objects() if callable(f) and getattr(f, '__name__', '') == 'emit'"
             " and 'S' in getattr(f, '__globals__', {}))\n"
             "S = emit.__globals__['S']\n")


def _status(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def _cpu_s(pid: int) -> float:
    import os
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _session(srv) -> tuple[str, str]:
    sid = srv.create()["id"]
    r = srv.post(f"/v1/sandboxes/{sid}/sessions", {"language": "python"}, timeout=90)
    expect(r, 201)
    return sid, r.json()["id"]


def test_a_flood_of_8_mb_display_events_keeps_the_daemon_small(server):
    sid, ss = _session(server)
    # Warm up the session (and the daemon's allocator) with a small cell.
    expect(server.post(f"/v1/sandboxes/{sid}/sessions/{ss}/run", {"code": "1"}, timeout=60), 200)
    rss0 = _status(server.pid, "VmRSS")
    peak = [rss0]
    health = []
    stop = threading.Event()

    def watch():
        s = requests.Session()
        while not stop.is_set():
            peak[0] = max(peak[0], _status(server.pid, "VmRSS"))
            t0 = time.monotonic()
            r = s.get(server.url + "/healthz", timeout=30)
            health.append((time.monotonic() - t0, r.status_code))
            time.sleep(0.02)

    code = FIND_EMIT + ("blob = 'x' * 8_000_000\n"
                        "for i in range(40):\n"
                        "    emit({'type': 'display', 'id': S.cur, 'data': {'text/plain': blob, 'text/html': 'h'}})\n"
                        "print('flooded')\n")
    t = threading.Thread(target=watch)
    cpu0 = _cpu_s(server.pid)
    t.start()
    try:
        r = server.post(f"/v1/sandboxes/{sid}/sessions/{ss}/run", {"code": code}, timeout=300)
    finally:
        stop.set()
        t.join(60)
    cpu = _cpu_s(server.pid) - cpu0
    expect(r, 200)
    res = r.json()
    assert any("flooded" in o.get("text", "") for o in res["outputs"]), "the flood did not run"
    assert res["rich_output_dropped_bytes"] >= 30 * 8_000_000, res.get("rich_output_dropped_bytes")
    assert any("were dropped" in o.get("text", "") for o in res["outputs"]), "the truncation is not marked"
    assert len(r.content) < 12 << 20, f"the reply is {len(r.content)} bytes"
    grew_mb = (peak[0] - rss0) / 1024
    worst = max(h[0] for h in health)
    print(f"\nflood of 40 x 8 MB display events: daemon RSS {rss0 // 1024} MiB before, peak {peak[0] // 1024} MiB "
          f"(+{grew_mb:.0f} MiB), daemon CPU {cpu:.2f} s; slowest /healthz {worst * 1000:.0f} ms over {len(health)} probes")
    assert grew_mb < 120, f"the daemon's RSS grew by {grew_mb:.0f} MiB"
    assert worst < 1.0, f"/healthz stalled for {worst:.2f} s"
    assert cpu < 2, f"the daemon spent {cpu:.1f} s of CPU on 320 MB it drops"
    assert all(h[1] == 200 for h in health)
    server.remove(sid)


def test_2000_stream_events_of_16_kb_cost_linear_time(server):
    sid, ss = _session(server)
    code = FIND_EMIT + ("chunk = 'y' * 16384\n"
                        "for i in range(2000):\n"
                        "    emit({'type': 'stream', 'id': S.cur, 'name': 'stdout', 'text': chunk})\n")
    cpu0 = _cpu_s(server.pid)
    t0 = time.monotonic()
    r = server.post(f"/v1/sandboxes/{sid}/sessions/{ss}/run", {"code": code, "output_limit": 64 << 20}, timeout=300)
    wall = time.monotonic() - t0
    cpu = _cpu_s(server.pid) - cpu0
    expect(r, 200)
    text = "".join(o.get("text", "") for o in r.json()["outputs"] if o.get("name") == "stdout")
    assert text.count("y") == 2000 * 16384, len(text)
    print(f"\n2000 x 16 KB stream events: daemon CPU {cpu:.2f} s, wall {wall:.2f} s")
    assert cpu < 4, f"the daemon spent {cpu:.1f} s of CPU merging 32 MB"
    server.remove(sid)


def test_events_per_cell_are_bounded(server):
    sid, ss = _session(server)
    code = FIND_EMIT + ("for i in range(120000):\n"
                        "    emit({'type': 'display', 'id': S.cur, 'data': {'text/plain': 'd'}})\n")
    r = server.post(f"/v1/sandboxes/{sid}/sessions/{ss}/run", {"code": code}, timeout=300)
    expect(r, 200)
    res = r.json()
    assert res["outputs_dropped"] >= 20000, res.get("outputs_dropped")
    assert len(res["outputs"]) <= 2001, len(res["outputs"])
    server.remove(sid)
