#!/usr/bin/env python3
"""Egress through the daemon's proxy against the same traffic from the host
directly, side by side in one run, on the fake internet of the tests
(tests/integration/fakenet.py: test-made namespaces, never the real one).

  - download: 100 MB over HTTP from the fake web server, with curl; the
    host's curl straight to the server, and a sandbox's curl through its
    proxy (plain http:// forward) and through a CONNECT tunnel
    (curl --proxytunnel). Medians of 9; the target is >= 0.7x.
    The host's curl runs in a cgroup made here beside the sandbox's, with
    the sandbox's CPU weight and quota: a sandbox has half the default
    weight (sandbox/cgroup_limits.c), and on a busy machine that alone
    slows its curl by a third, so the ratio would measure the scheduler,
    not the egress path. The host's curl at the host's own weight is
    printed too, for reference.
  - connect latency: a TCP connect to the server from the host, against a
    connect to the proxy plus CONNECT and its 200 from inside (what a
    client waits for before its first byte). Medians of 200.

usage: net_bench.py EXECBOX   (as root; takes ~1 minute)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import fakenet  # noqa: E402

SIZE = 100 * 1000 * 1000
RUNS = 9
CONNECTS = 200


def api(url, method, path, body=None, timeout=600):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        raw = r.read()
    return json.loads(raw) if raw else None


def sh_in(url, sid, cmd):
    res = api(url, "POST", f"/v1/sandboxes/{sid}/exec", {"cmd": cmd, "timeout_s": 300})
    if res["exit_code"] != 0:
        raise RuntimeError(f"{cmd}: {res['stderr'][-500:]}")
    return res["stdout"]


CURL = "curl -s -o /dev/null -w '%{time_total}'"

LATENCY = r"""
import socket, statistics, sys, time
mode, host, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ts = []
for _ in range(n):
    t0 = time.perf_counter()
    if mode == "direct":
        s = socket.create_connection((host, 80))
    else:
        s = socket.create_connection(("127.0.0.1", 3128))
        s.sendall(b"CONNECT " + host.encode() + b":80 HTTP/1.1\r\nHost: x\r\n\r\n")
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += s.recv(256)
        assert buf.startswith(b"HTTP/1.1 200"), buf
    ts.append(time.perf_counter() - t0)
    s.close()
print(statistics.median(ts) * 1e6)
"""


def _cpu_line(pid):
    """(v1, path) of pid's cpu cgroup: a v1 hierarchy with cpu, else cgroup2."""
    with open(f"/proc/{pid}/cgroup") as f:
        lines = [ln.split(":", 2) for ln in f.read().splitlines()]
    for _, ctl, path in lines:
        if "cpu" in ctl.split(","):
            return True, path
    return False, next(path for hid, ctl, path in lines if hid == "0")


def _cpu_mount(v1):
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, post = line.split(" - ")
            fstype, _, opts = post.split()[:3]
            if (v1 and fstype == "cgroup" and "cpu" in opts.split(",")) or (not v1 and fstype == "cgroup2"):
                return pre.split()[4]
    return None


def sandbox_cpu_cgroup(daemon_pid):
    """The cpu cgroup directory of a process in one of the daemon's
    sandboxes, and its weight and quota: (dir, {file: value}) or None."""
    own = _cpu_line(daemon_pid)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            p = pid
            for _ in range(8):  # a descendant of the daemon?
                with open(f"/proc/{p}/stat") as f:
                    p = f.read().rsplit(")", 1)[1].split()[1]
                if p == str(daemon_pid):
                    break
            else:
                continue
            v1, path = _cpu_line(pid)
        except (OSError, StopIteration):
            continue
        if (v1, path) == own or not _cpu_mount(v1):
            continue
        d = _cpu_mount(v1) + path
        files = ["cpu.shares", "cpu.cfs_period_us", "cpu.cfs_quota_us"] if v1 else ["cpu.weight", "cpu.max"]
        if all(os.path.exists(os.path.join(d, x)) for x in files):
            return d, {x: open(os.path.join(d, x)).read().strip() for x in files}
    return None


def same_cpu_cgroup(daemon_pid):
    """A cgroup beside the sandbox's with its CPU weight and quota, or None."""
    found = sandbox_cpu_cgroup(daemon_pid)
    if not found:
        return None
    d, files = found
    mine = os.path.join(os.path.dirname(d), f"xb-netbench-{os.getpid()}")
    os.makedirs(mine, exist_ok=True)
    for name, value in files.items():
        with open(os.path.join(mine, name), "w") as f:
            f.write(value)
    print(f"the host's curl runs in {mine}: " + ", ".join(f"{k} {v}" for k, v in files.items()))
    return mine


def main():
    execbox = sys.argv[1] if len(sys.argv) > 1 else "build/execbox"
    net = fakenet.FakeNet().start()
    state = tempfile.mkdtemp(prefix="xb-netbench-")
    cg = None
    srv = subprocess.Popen([execbox, "serve", "--listen", "127.0.0.1:0", "--no-auth", "--pool", "0",
                            "--state-dir", state, "--dns-server", fakenet.DNS_ADDR, "--access-log", "off"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = None
        for line in srv.stdout:
            if "listening on" in line:
                url = line.split("listening on ")[1].split()[0]
                break
        if url is None:
            raise RuntimeError("execbox serve did not start")
        sb = api(url, "POST", "/v1/sandboxes", {"network": "open"})
        sid = sb["id"]
        sh_in(url, sid, "true")
        cg = same_cpu_cgroup(srv.pid)
        target = f"{fakenet.NAMES['a.test']}/bytes/{SIZE}"
        direct, host_weight, forward, tunnel = [], [], [], []
        into = f"echo $$ > {cg}/cgroup.procs && exec " if cg else ""
        for _ in range(RUNS):
            direct.append(float(subprocess.run(["sh", "-c", f"{into}{CURL} http://{target}"], capture_output=True,
                                               text=True).stdout))
            host_weight.append(float(subprocess.run(["sh", "-c", f"{CURL} http://{target}"], capture_output=True,
                                                    text=True).stdout))
            forward.append(float(sh_in(url, sid, f"{CURL} http://a.test/bytes/{SIZE}")))
            tunnel.append(float(sh_in(url, sid, f"{CURL} --proxytunnel http://a.test/bytes/{SIZE}")))
        md, mh, mf, mt = (statistics.median(x) for x in (direct, host_weight, forward, tunnel))
        print(f"download {SIZE // 10**6} MB, median of {RUNS}:")
        print(f"  direct from the host      {md * 1000:8.1f} ms  {SIZE / md / 1e6:7.0f} MB/s  "
              + ("(at a sandbox's CPU weight)" if cg else "(no sandbox cgroup found: at the host's CPU weight)"))
        print(f"  sandbox, http:// forward  {mf * 1000:8.1f} ms  {SIZE / mf / 1e6:7.0f} MB/s  "
              f"{md / mf:.2f}x direct  ({mh / mf:.2f}x the host's curl at its own weight)")
        print(f"  sandbox, CONNECT tunnel   {mt * 1000:8.1f} ms  {SIZE / mt / 1e6:7.0f} MB/s  "
              f"{md / mt:.2f}x direct  ({mh / mt:.2f}x the host's curl at its own weight)")
        print(f"  direct, the host's weight {mh * 1000:8.1f} ms  {SIZE / mh / 1e6:7.0f} MB/s")
        lat_direct = float(subprocess.run([sys.executable, "-c", LATENCY, "direct", fakenet.NAMES["a.test"],
                                           str(CONNECTS)], capture_output=True, text=True).stdout)
        lat_proxy = float(sh_in(url, sid, f"python3 -c '{LATENCY}' proxy a.test {CONNECTS}"))
        lat_ip = float(sh_in(url, sid, f"python3 -c '{LATENCY}' proxy {fakenet.NAMES['a.test']} {CONNECTS}"))
        print(f"connect latency, median of {CONNECTS}:")
        print(f"  direct TCP connect from the host               {lat_direct:7.0f} us")
        print(f"  inside: proxy + CONNECT by address + 200       {lat_ip:7.0f} us  (+{lat_ip - lat_direct:.0f} us)")
        print(f"  inside: proxy + CONNECT by name (DNS) + 200    {lat_proxy:7.0f} us  (+{lat_proxy - lat_direct:.0f} us)")
        ok = min(md / mf, md / mt) >= 0.7
        print("target >= 0.7x:", "met" if ok else "NOT met")
        api(url, "DELETE", f"/v1/sandboxes/{sid}")
    finally:
        srv.terminate()
        srv.wait(20)
        net.stop()
        if cg:
            os.rmdir(cg)
        subprocess.run(["rm", "-rf", state])


if __name__ == "__main__":
    main()
