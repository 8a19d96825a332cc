"""Peers (issue 10, item 5: "sandboxes cannot reach each other unless both
opt in"). A sandbox's network policy lists the sandboxes it will talk with
in `peers`; when A lists B and B lists A (one tenant), a process in A
reaches a server on B's loopback at http://B.sandbox.internal:PORT/ through
its proxy (HTTP_PROXY, CONNECT, SOCKS5), in any mode, `none` included.
Anything short of both opting in is refused with a reason, checked again at
every connection. Nothing here uses a test network: the daemon carries the
bytes between the two namespaces, as it does for published ports."""
from __future__ import annotations

import time

import pytest

from server_fixture import expect, server_factory  # noqa: F401

TOKEN_A = "tok-peers-a-" + "a" * 20
TOKEN_B = "tok-peers-b-" + "b" * 20
PORT = 8080

# Run inside a sandbox: fetch a URL with the environment's proxy (urllib
# reads HTTP_PROXY; a sandbox with no network and no peers has none, so
# the proxy is named then), print the status and body.
FETCH = r'''
import os, sys, urllib.error, urllib.request
print("ENV-PROXY", os.environ.get("HTTP_PROXY"))
proxy = urllib.request.ProxyHandler({"http": "http://127.0.0.1:3128"})
try:
    r = urllib.request.build_opener(proxy).open(sys.argv[1], timeout=10)
    print("STATUS", r.status)
    print(r.read().decode())
except urllib.error.HTTPError as e:
    print("STATUS", e.code)
    print(e.read().decode())
'''

# Raw TCP through CONNECT: the HTTP request typed by hand over the tunnel.
TUNNEL = r'''
import socket, sys
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (sys.argv[1], sys.argv[1])).encode())
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
print(head.split(b"\r\n")[0].decode())
if b" 200 " in head.split(b"\r\n")[0]:
    s.sendall(b"GET /marker.txt HTTP/1.0\r\n\r\n")
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
    print(data.decode(errors="replace"))
'''

# As root: every address B could have, straight, with no proxy.
RAW = r'''
import socket
for host in ["10.0.0.1", "172.17.0.1", "192.168.0.1", "169.254.1.1"]:
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect((host, 8080))
        print("CONNECTED", host)
    except OSError as e:
        print("FAILED", host, e.errno)
print("IFACES", sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:]))
'''


@pytest.fixture
def srv(server_factory):  # noqa: F811
    return server_factory(tokens=[TOKEN_A, TOKEN_B], pool=2)


def net(srv, sid, body, token="default"):
    return srv.request("PATCH", f"/v1/sandboxes/{sid}/network", json_body=body, token=token)


def serve(srv, sid, text, token="default"):
    """B serves /tmp/www (with marker.txt = text) on PORT, on its loopback only."""
    srv.sh(sid, f"mkdir -p /tmp/www && echo {text} > /tmp/www/marker.txt", token=token)
    r = srv.post(f"/v1/sandboxes/{sid}/processes",
                 {"cmd": f"cd /tmp/www && exec python3 -m http.server {PORT} --bind 127.0.0.1"}, token=token)
    assert r.status_code == 201, r.text
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        r = srv.get(f"/v1/sandboxes/{sid}/ports", token=token)
        if any(p["port"] == PORT for p in r.json()["ports"]):
            return
        time.sleep(0.05)
    raise AssertionError(f"port {PORT} never listened in {sid}")


def upload_tools(srv, sid, token="default"):
    r = srv.request("PUT", f"/v1/sandboxes/{sid}/files", params={"path": "/tmp/fetch.py"},
                    data=FETCH.encode(), token=token)
    assert r.status_code in (200, 201), r.text
    r = srv.request("PUT", f"/v1/sandboxes/{sid}/files", params={"path": "/tmp/tunnel.py"},
                    data=TUNNEL.encode(), token=token)
    assert r.status_code in (200, 201), r.text


def fetch(srv, frm, to, token="default"):
    return srv.exec(frm, cmd=f"python3 /tmp/fetch.py http://{to}.sandbox.internal:{PORT}/marker.txt",
                    token=token)["stdout"]


def log(srv, sid):
    r = srv.get(f"/v1/sandboxes/{sid}/network/log")
    assert r.status_code == 200, r.text
    return r.json()["entries"]


def test_both_opt_in_reach_each_other(server_factory):  # noqa: F811
    srv = server_factory(pool=2)   # no auth: the server-wide metrics are readable
    a = srv.create()["id"]
    # B opts in at creation, A by a PATCH; mode none: no internet, peers still.
    b = srv.create(network={"mode": "none", "peers": [a]})["id"]
    expect(net(srv, a, {"mode": "none", "peers": [b]}), 200)
    got = srv.get(f"/v1/sandboxes/{b}/network").json()
    assert got["mode"] == "none" and got["peers"] == [a], got
    for sid, text in ((a, "marker-of-a"), (b, "marker-of-b")):
        upload_tools(srv, sid)
        serve(srv, sid, text)
    before = srv.metrics()
    out = fetch(srv, a, b)
    assert "STATUS 200" in out and "marker-of-b" in out, out
    # Mode none with peers points tools at the proxy: plain urllib, no proxy named.
    out = srv.exec(a, cmd="python3 -c \"import urllib.request as u; print(u.urlopen("
                          f"'http://{b}.sandbox.internal:{PORT}/marker.txt').read().decode())\"")["stdout"]
    assert "marker-of-b" in out, out
    out = fetch(srv, b, a)
    assert "STATUS 200" in out and "marker-of-a" in out, out
    # Raw TCP (CONNECT), what WebSocket clients and `curl -p` use.
    out = srv.exec(a, cmd=f"python3 /tmp/tunnel.py {b}.sandbox.internal:{PORT}")["stdout"]
    assert "200 Connection established" in out and "marker-of-b" in out, out
    # SOCKS5 with the name resolved by the proxy (ALL_PROXY=socks5h://...).
    out = srv.exec(a, cmd="python3 -c \"import socket,struct;s=socket.create_connection(('127.0.0.1',3128));"
                          "s.sendall(b'\\x05\\x01\\x00');s.recv(2);h=b'" + b + ".sandbox.internal';"
                          "s.sendall(b'\\x05\\x01\\x00\\x03'+bytes([len(h)])+h+struct.pack('>H'," + str(PORT) + "));"
                          "print('SOCKS', s.recv(10)[1]);s.sendall(b'GET /marker.txt HTTP/1.0\\r\\n\\r\\n');"
                          "print(s.recv(65536).decode(errors='replace'))\"")["stdout"]
    assert "SOCKS 0" in out, out
    # The whole reply may come in more than one read; its status line is enough.
    assert "HTTP/1.0 200" in out, out
    # Mode none still refuses the internet: the peer is the one way out.
    out = srv.exec(a, cmd="python3 /tmp/fetch.py http://example.test/")["stdout"]
    assert "STATUS 403" in out, out
    entries = [e for e in log(srv, a) if e["host"] == f"{b}.sandbox.internal"]
    assert entries and all(e["allowed"] and e["rule"] == f"peer {b}" for e in entries), entries
    assert entries[0]["bytes_in"] > 0, entries
    after = srv.metrics()
    key = 'execbox_egress_peer_connections_total{decision="allowed"}'
    assert after[key] - before.get(key, 0) >= 4, (before.get(key), after[key])


def test_one_sided_opt_in_is_refused(srv):
    a = srv.create()["id"]
    b = srv.create()["id"]
    expect(net(srv, a, {"mode": "none", "peers": [b]}), 200)
    upload_tools(srv, a)
    serve(srv, b, "marker-of-b")
    # Positive control: B's server is up (the daemon's published-port route).
    r = srv.get(f"/v1/sandboxes/{b}/ports/{PORT}/marker.txt")
    assert r.status_code == 200 and "marker-of-b" in r.text, r.text
    out = fetch(srv, a, b)
    assert "STATUS 403" in out and f"sandbox {b} does not list this one" in out and "both must opt in" in out, out
    # Nor the other way: B never listed A, whatever A lists.
    upload_tools(srv, b)
    serve(srv, a, "marker-of-a")
    out = fetch(srv, b, a)
    assert "STATUS 403" in out and f"network.peers does not list {a}" in out, out
    denied = [e for e in log(srv, a) if e["host"] == f"{b}.sandbox.internal"]
    assert denied and not denied[-1]["allowed"] and "does not list" in denied[-1]["rule"], denied
    # The daemon's own sockets in a sandbox (its proxy, its DNS) are no one's to reach.
    expect(net(srv, b, {"peers": [a]}), 200)
    out = srv.exec(a, cmd=f"python3 /tmp/fetch.py http://{b}.sandbox.internal:3128/")["stdout"]
    assert "STATUS 403" in out and "egress service" in out, out


def test_another_tenants_sandbox_is_refused(srv):
    a = srv.create()["id"]
    other = srv.create(token=TOKEN_B)["id"]
    # Both list each other, but they belong to two tenants.
    expect(net(srv, other, {"peers": [a]}, token=TOKEN_B), 200)
    expect(net(srv, a, {"peers": [other]}), 200)
    serve(srv, other, "marker-of-other", token=TOKEN_B)
    assert srv.get(f"/v1/sandboxes/{other}/ports/{PORT}/marker.txt", token=TOKEN_B).status_code == 200
    upload_tools(srv, a)
    out = fetch(srv, a, other)
    assert "STATUS 403" in out and f"no sandbox {other} of this tenant" in out, out
    # The same answer as for an id that never was: nothing about who else runs here.
    ghost = "a" * 26
    expect(net(srv, a, {"peers": [other, ghost]}), 200)
    out = fetch(srv, a, ghost)
    assert "STATUS 403" in out and f"no sandbox {ghost} of this tenant" in out, out


def test_a_live_patch_and_a_pause_take_effect_on_the_next_connection(srv):
    a = srv.create()["id"]
    b = srv.create(network={"peers": [a]})["id"]
    expect(net(srv, a, {"peers": [b]}), 200)
    upload_tools(srv, a)
    serve(srv, b, "marker-of-b")
    out = fetch(srv, a, b)
    assert "STATUS 200" in out and "marker-of-b" in out, out
    # B withdraws: the next connection is refused.
    expect(net(srv, b, {"mode": "none"}), 200)
    out = fetch(srv, a, b)
    assert "STATUS 403" in out and "does not list this one" in out, out
    # B opts in again, then is paused: a refusal that says so.
    expect(net(srv, b, {"peers": [a]}), 200)
    assert "STATUS 200" in fetch(srv, a, b)
    expect(srv.post(f"/v1/sandboxes/{b}/pause"), 200)
    out = fetch(srv, a, b)
    assert "STATUS 409" in out and "is paused" in out, out
    expect(srv.post(f"/v1/sandboxes/{b}/resume"), 200)
    assert "STATUS 200" in fetch(srv, a, b)
    # A port nothing listens on: allowed, but unreachable, and said so.
    out = srv.exec(a, cmd=f"python3 /tmp/fetch.py http://{b}.sandbox.internal:8099/")["stdout"]
    assert "STATUS 502" in out and "could not be reached: Connection refused" in out, out
    # B deleted: refused like an unknown id.
    srv.remove(b)
    out = fetch(srv, a, b)
    assert "STATUS 403" in out and f"no sandbox {b} of this tenant" in out, out


def test_raw_sockets_still_fail_between_peers(srv):
    a = srv.create()["id"]
    b = srv.create(network={"peers": [a]})["id"]
    expect(net(srv, a, {"peers": [b]}), 200)
    upload_tools(srv, a)
    serve(srv, b, "marker-of-b")
    # Positive control: the proxy route works between these two.
    assert "marker-of-b" in fetch(srv, a, b)
    r = srv.request("PUT", f"/v1/sandboxes/{a}/files", params={"path": "/tmp/raw.py"}, data=RAW.encode())
    assert r.status_code in (200, 201), r.text
    out = srv.exec(a, cmd="python3 /tmp/raw.py", user="root")["stdout"]
    assert "CONNECTED" not in out and out.count("FAILED") == 4, out
    assert "IFACES ['lo']" in out, out


def test_bad_peers_are_rejected(srv):
    sid = srv.create()["id"]
    for bad in (["Not-An-Id"], "x", [1], ["a" * 40]):
        r = net(srv, sid, {"peers": bad})
        assert r.status_code == 400 and "network.peers" in r.text, r.text
