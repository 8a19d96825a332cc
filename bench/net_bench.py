#!/usr/bin/env python3
"""Egress through the daemon's proxy against the same traffic from the host
directly, side by side in one run, on the fake internet of the tests
(tests/integration/fakenet.py: test-made namespaces, never the real one).

  - download: 100 MB over HTTP from the fake web server, with curl; the
    host's curl straight to the server, and a sandbox's curl through its
    proxy (plain http:// forward) and through a CONNECT tunnel
    (curl --proxytunnel). Medians of 9; the target is >= 0.7x.
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


def main():
    execbox = sys.argv[1] if len(sys.argv) > 1 else "build/execbox"
    net = fakenet.FakeNet().start()
    state = tempfile.mkdtemp(prefix="xb-netbench-")
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
        target = f"{fakenet.NAMES['a.test']}/bytes/{SIZE}"
        direct, forward, tunnel = [], [], []
        for _ in range(RUNS):
            direct.append(float(subprocess.run(["sh", "-c", f"{CURL} http://{target}"], capture_output=True,
                                               text=True).stdout))
            forward.append(float(sh_in(url, sid, f"{CURL} http://a.test/bytes/{SIZE}")))
            tunnel.append(float(sh_in(url, sid, f"{CURL} --proxytunnel http://a.test/bytes/{SIZE}")))
        md, mf, mt = (statistics.median(x) for x in (direct, forward, tunnel))
        print(f"download {SIZE // 10**6} MB, median of {RUNS}:")
        print(f"  direct from the host      {md * 1000:8.1f} ms  {SIZE / md / 1e6:7.0f} MB/s")
        print(f"  sandbox, http:// forward  {mf * 1000:8.1f} ms  {SIZE / mf / 1e6:7.0f} MB/s  "
              f"{md / mf:.2f}x direct")
        print(f"  sandbox, CONNECT tunnel   {mt * 1000:8.1f} ms  {SIZE / mt / 1e6:7.0f} MB/s  "
              f"{md / mt:.2f}x direct")
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
        subprocess.run(["rm", "-rf", state])


if __name__ == "__main__":
    main()
