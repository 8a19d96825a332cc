"""Ports published from sandboxes (issue 10, item 5): a server listening in
a sandbox is reached through the daemon at /v1/sandboxes/{id}/ports/{port}/,
and with --sandbox-domain at the host {port}-{id}.DOMAIN.

The server inside is APP below, uploaded and run with the sandbox's python3:
it echoes headers, hashes bodies (plain and chunked), streams a chunked
reply, and speaks WebSocket (stdlib only). The client side of WebSocket is
a raw socket here, so no library is needed."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import socket
import struct
import time

import pytest
import requests

from server_fixture import expect_error, server_factory  # noqa: F401

TOKEN_A = "tok-ports-a-" + "a" * 20
TOKEN_B = "tok-ports-b-" + "b" * 20
DOMAIN = "sbx.test"
APP_PORT = 9000

APP = r'''
import base64, hashlib, http.server, json, os, socketserver, struct, sys

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def block(i):
    return hashlib.sha256(str(i).encode()).digest() * 2048   # 64 KiB


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, code, body, ctype="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        d = hashlib.sha256()
        n = 0
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if not size:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                b = self.rfile.read(size)
                d.update(b)
                n += len(b)
                self.rfile.readline()
        else:
            left = int(self.headers.get("Content-Length") or 0)
            while left:
                b = self.rfile.read(min(left, 1 << 16))
                if not b:
                    break
                d.update(b)
                n += len(b)
                left -= len(b)
        return d.hexdigest(), n

    def do_POST(self):
        sha, n = self.body()
        self.reply(200, json.dumps({"sha256": sha, "bytes": n, "path": self.path,
                                    "chunked": "chunked" in self.headers.get("Transfer-Encoding", "")}).encode())

    do_PUT = do_POST

    def do_DELETE(self):
        self.reply(200, json.dumps({"method": "DELETE", "path": self.path}).encode())

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "5")
        self.send_header("X-Head", "yes")
        self.end_headers()

    def do_GET(self):
        if self.path.startswith("/status/"):
            self.send_response(int(self.path.split("/")[2]))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path.startswith("/ws"):
            return self.websocket()
        if self.path.startswith("/stream/"):
            n = int(self.path.split("/")[2])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(n):
                b = block(i)
                self.wfile.write(b"%x\r\n" % len(b) + b + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        self.reply(200, json.dumps({"path": self.path, "headers": dict(self.headers.items())}).encode())

    def websocket(self):
        key = self.headers["Sec-WebSocket-Key"]
        accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        r = self.rfile
        while True:
            head = r.read(2)
            if len(head) < 2:
                return
            op, ln = head[0] & 0x0F, head[1] & 0x7F
            if ln == 126:
                ln = struct.unpack(">H", r.read(2))[0]
            elif ln == 127:
                ln = struct.unpack(">Q", r.read(8))[0]
            mask = r.read(4) if head[1] & 0x80 else b"\0\0\0\0"
            data = bytearray(r.read(ln))
            for i in range(len(data)):
                data[i] ^= mask[i % 4]
            if op == 8:
                self.wfile.write(b"\x88\x00")
                self.wfile.flush()
                return
            out = bytes([0x80 | op])
            if len(data) < 126:
                out += bytes([len(data)])
            elif len(data) < 65536:
                out += bytes([126]) + struct.pack(">H", len(data))
            else:
                out += bytes([127]) + struct.pack(">Q", len(data))
            self.wfile.write(out + bytes(data))
            self.wfile.flush()


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


S(("0.0.0.0", int(sys.argv[1])), H).serve_forever()
'''


def block(i: int) -> bytes:
    return hashlib.sha256(str(i).encode()).digest() * 2048


@pytest.fixture
def srv(server_factory):  # noqa: F811
    return server_factory("--sandbox-domain", DOMAIN, tokens=[TOKEN_A, TOKEN_B], pool=1)


def ports(sid: str, tail: str = "") -> str:
    return f"/v1/sandboxes/{sid}/ports" + tail


def start(srv, sid: str, cmd: str) -> dict:
    r = srv.post(f"/v1/sandboxes/{sid}/processes", {"cmd": cmd})
    assert r.status_code == 201, r.text
    return r.json()


def wait_listening(srv, sid: str, port: int, timeout: float = 15) -> float:
    """Poll the port list until port listens; the time it was first seen."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = srv.get(ports(sid))
        assert r.status_code == 200, r.text
        if any(p["port"] == port for p in r.json()["ports"]):
            return time.monotonic()
        time.sleep(0.02)
    raise AssertionError(f"port {port} never listened in {sid}")


@pytest.fixture
def app(srv):
    """A sandbox running APP on APP_PORT: (server, sandbox id)."""
    sid = srv.create()["id"]
    r = srv.request("PUT", f"/v1/sandboxes/{sid}/files", params={"path": "/tmp/app.py"}, data=APP.encode())
    assert r.status_code in (200, 201), r.text
    start(srv, sid, f"python3 /tmp/app.py {APP_PORT}")
    wait_listening(srv, sid, APP_PORT)
    return srv, sid


def test_http_server_is_reachable_within_a_second_of_listening(srv):
    sid = srv.create()["id"]
    srv.sh(sid, "mkdir -p /tmp/www && echo 'hello from the sandbox' > /tmp/www/index.html")
    start(srv, sid, "cd /tmp/www && exec python3 -m http.server 8080")
    seen = wait_listening(srv, sid, 8080)
    r = srv.get(ports(sid, "/8080/"))
    took = time.monotonic() - seen
    assert r.status_code == 200, r.text
    assert "Directory listing" in r.text or "index.html" in r.text or "hello" in r.text
    assert took < 1.0, f"{took:.3f} s after the port listened"
    r = srv.get(ports(sid, "/8080/index.html"))
    assert r.status_code == 200 and r.text == "hello from the sandbox\n"
    assert r.headers["Server"].startswith("SimpleHTTP")
    # The port's own path without the slash redirects, so relative links work.
    r = srv.get(ports(sid, "/8080"), allow_redirects=False)
    assert r.status_code == 308 and r.headers["Location"] == f"/v1/sandboxes/{sid}/ports/8080/"
    # The list says what listens, with a link.
    listed = srv.get(ports(sid)).json()["ports"]
    entry = [p for p in listed if p["port"] == 8080][0]
    assert entry["url"].endswith(f"/v1/sandboxes/{sid}/ports/8080/")
    assert entry["domain_url"] == f"http://8080-{sid}.{DOMAIN}/"


def test_request_and_reply_headers_and_the_token_is_not_passed_on(app):
    srv, sid = app
    r = srv.get(ports(sid, f"/{APP_PORT}/some/path?q=a%20b&x=1"), headers={"X-Custom": "v1"})
    assert r.status_code == 200, r.text
    seen = r.json()
    assert seen["path"] == "/some/path?q=a%20b&x=1"
    h = {k.lower(): v for k, v in seen["headers"].items()}
    assert h["x-custom"] == "v1"
    assert "authorization" not in h, "the daemon's token reached the sandbox"
    assert TOKEN_A not in json.dumps(seen)
    assert h["x-forwarded-prefix"] == f"/v1/sandboxes/{sid}/ports/{APP_PORT}"
    assert h["connection"].lower() == "close"


def test_post_bodies_pass_through_intact(app):
    srv, sid = app
    data = os.urandom(24 << 20)
    want = hashlib.sha256(data).hexdigest()
    r = srv.request("POST", ports(sid, f"/{APP_PORT}/upload"), data=data, timeout=120)
    assert r.status_code == 200, r.text
    assert r.json() == {"sha256": want, "bytes": len(data), "path": "/upload", "chunked": False}

    # Chunked from the client: streamed on as chunks, never whole in the daemon.
    def gen():
        for i in range(0, len(data), 1 << 20):
            yield data[i:i + (1 << 20)]
    r = srv.request("POST", ports(sid, f"/{APP_PORT}/chunked"), data=gen(), timeout=120)
    assert r.status_code == 200, r.text
    assert r.json() == {"sha256": want, "bytes": len(data), "path": "/chunked", "chunked": True}
    # A body over --body-max (16 MiB by default) is not refused: it streams.
    assert len(data) > 16 << 20


def test_a_large_streamed_reply_passes_through_intact(app):
    srv, sid = app
    n = 1024   # 64 MiB in chunks
    want = hashlib.sha256(b"".join(block(i) for i in range(n))).hexdigest()
    r = srv.request("GET", ports(sid, f"/{APP_PORT}/stream/{n}"), stream=True, timeout=120)
    assert r.status_code == 200
    d = hashlib.sha256()
    got = 0
    for chunk in r.iter_content(1 << 16):
        d.update(chunk)
        got += len(chunk)
    assert got == n * 65536 and d.hexdigest() == want
    # The daemon buffered a bounded amount, not the reply.
    with open(f"/proc/{srv.pid}/status") as f:
        hwm = int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))
    assert hwm < 48 * 1024, f"the daemon's peak RSS is {hwm} KiB"


def test_slow_reader_holds_the_upstream_back(app):
    """A client that stops reading stops the server inside: the daemon
    holds two bounded buffers, not the reply."""
    srv, sid = app
    n = 2048   # 128 MiB
    r = srv.request("GET", ports(sid, f"/{APP_PORT}/stream/{n}"), stream=True, timeout=120)
    assert r.status_code == 200
    it = r.iter_content(1 << 16)
    first = next(it)
    time.sleep(1.5)
    with open(f"/proc/{srv.pid}/status") as f:
        rss = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
    assert rss < 48 * 1024, f"the daemon holds {rss} KiB while its client does not read"
    got = len(first) + sum(len(c) for c in it)
    assert got == n * 65536


def test_methods_head_and_bodiless_replies(app):
    srv, sid = app
    base = ports(sid, f"/{APP_PORT}")
    r = srv.request("HEAD", base + "/h")
    assert r.status_code == 200 and r.headers["X-Head"] == "yes" and r.content == b""
    r = srv.get(base + "/status/204")
    assert r.status_code == 204 and r.content == b""
    r = srv.request("PUT", base + "/put", data=b"abc")
    assert r.status_code == 200 and r.json()["bytes"] == 3
    r = srv.request("DELETE", base + "/thing")
    assert r.json() == {"method": "DELETE", "path": "/thing"}
    r = srv.get(base + "/status/404")
    assert r.status_code == 404
    # The same keep-alive connection still works after each of them.
    assert srv.get(base + "/after").json()["path"] == "/after"


def test_stopping_with_a_tunnel_open(app):
    srv, sid = app
    s, rest = ws_connect(srv.port, f"/v1/sandboxes/{sid}/ports/{APP_PORT}/ws", "127.0.0.1", TOKEN_A)
    ws_send(s, 1, b"still here")
    assert ws_recv(s, rest)[:2] == (1, b"still here")
    assert srv.stop() == 0
    s.settimeout(5)
    try:
        assert s.recv(1) == b""
    except OSError:
        pass
    s.close()


def ws_connect(port: int, path: str, host: str, token: str | None) -> tuple[socket.socket, bytes]:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{auth}Upgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(4096)
        assert chunk, f"closed during the handshake: {buf!r}"
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
    assert head.startswith(b"HTTP/1.1 101"), head
    assert b"Sec-WebSocket-Accept: " + accept in head, head
    return s, rest


def ws_send(s: socket.socket, op: int, data: bytes) -> None:
    mask = os.urandom(4)
    n = len(data)
    head = bytes([0x80 | op])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    s.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))


def ws_recv(s: socket.socket, buf: bytes) -> tuple[int, bytes, bytes]:
    def need(k):
        nonlocal buf
        while len(buf) < k:
            chunk = s.recv(1 << 16)
            assert chunk, "the tunnel closed"
            buf += chunk
    need(2)
    op, n, off = buf[0] & 0x0F, buf[1] & 0x7F, 2
    if n == 126:
        need(4)
        n, off = struct.unpack(">H", buf[2:4])[0], 4
    elif n == 127:
        need(10)
        n, off = struct.unpack(">Q", buf[2:10])[0], 10
    need(off + n)
    return op, buf[off:off + n], buf[off + n:]


def test_websocket_echo_through_the_proxy(app):
    srv, sid = app
    s, rest = ws_connect(srv.port, f"/v1/sandboxes/{sid}/ports/{APP_PORT}/ws", "127.0.0.1", TOKEN_A)
    with s:
        ws_send(s, 1, b"hello over websocket")
        op, data, rest = ws_recv(s, rest)
        assert (op, data) == (1, b"hello over websocket")
        big = os.urandom(1 << 20)
        ws_send(s, 2, big)
        op, data, rest = ws_recv(s, rest)
        assert op == 2 and data == big
        ws_send(s, 8, b"")
        op, data, rest = ws_recv(s, rest)
        assert op == 8
    # Without the token the handshake is refused like any request.
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s2:
        s2.sendall((f"GET /v1/sandboxes/{sid}/ports/{APP_PORT}/ws HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: eA==\r\n"
                    "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        assert s2.recv(4096).startswith(b"HTTP/1.1 401")


def test_websocket_through_host_routing(app):
    srv, sid = app
    s, rest = ws_connect(srv.port, "/ws", f"{APP_PORT}-{sid}.{DOMAIN}", TOKEN_A)
    with s:
        ws_send(s, 1, b"by host")
        assert ws_recv(s, rest)[:2] == (1, b"by host")


def test_host_routing(app):
    srv, sid = app
    host = f"{APP_PORT}-{sid}.{DOMAIN}"
    r = srv.get("/a/b?c=d", headers={"Host": host})
    assert r.status_code == 200, r.text
    seen = r.json()
    assert seen["path"] == "/a/b?c=d"
    assert {k.lower(): v for k, v in seen["headers"].items()}["host"] == host
    # With a port after the name, and in capitals, as browsers may send it.
    r = srv.get("/", headers={"Host": f"{APP_PORT}-{sid.upper()}.{DOMAIN.upper()}:{srv.port}"})
    assert r.status_code == 200 and r.json()["path"] == "/"
    # Even the API's own paths belong to the sandbox's server on that host.
    r = srv.get("/v1/sandboxes", headers={"Host": host})
    assert r.status_code == 200 and r.json()["path"] == "/v1/sandboxes"
    # POST bodies too.
    r = srv.request("POST", "/p", data=b"x" * 1000, headers={"Host": host})
    assert r.json()["bytes"] == 1000
    # A page of the sandbox's own origin may post a form to its server...
    r = srv.request("POST", "/p", data=b"a=1", headers={"Host": host, "Origin": f"http://{host}",
                                                        "Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 200 and r.json()["bytes"] == 3, r.text
    # ...but a foreign page may not, and a rebinding name is still refused.
    expect_error(srv.request("POST", "/p", data=b"a=1", headers={"Host": host, "Origin": "http://evil.example",
                                                                 "Content-Type": "text/plain"}),
                 403, "forbidden_origin")
    expect_error(srv.get(ports(sid, f"/{APP_PORT}/"), headers={"Host": "rebind.evil.example"}), 421, "forbidden_host")
    # No token, another tenant's, a sandbox that does not exist.
    expect_error(srv.get("/", headers={"Host": host}, token=None), 401, "unauthorized")
    expect_error(srv.get("/", headers={"Host": host}, token=TOKEN_B), 404, "sandbox_not_found")
    expect_error(srv.get("/", headers={"Host": f"{APP_PORT}-{'z' * 26}.{DOMAIN}"}), 404, "sandbox_not_found")
    # Names that are not a sandbox's go to the API as before.
    for other in (f"{sid}.{DOMAIN}", f"{APP_PORT}-{sid}.other.test", f"0-{sid}.{DOMAIN}",
                  f"99999-{sid}.{DOMAIN}", f"{APP_PORT}-{sid}.x{DOMAIN}", DOMAIN):
        r = srv.get("/healthz", headers={"Host": other})
        assert r.status_code == 200 and "path" not in r.json(), other


def test_another_tenants_token_gets_404(app):
    srv, sid = app
    expect_error(srv.get(ports(sid, f"/{APP_PORT}/"), token=TOKEN_B), 404, "sandbox_not_found")
    expect_error(srv.get(ports(sid), token=TOKEN_B), 404, "sandbox_not_found")
    expect_error(srv.post(ports(sid, f"/{APP_PORT}/share"), {"ttl_s": 60}, token=TOKEN_B), 404,
                 "sandbox_not_found")
    expect_error(srv.get(ports(sid, f"/{APP_PORT}/"), token=None), 401, "unauthorized")
    expect_error(srv.get(ports(sid, f"/{APP_PORT}/"), token="wrong-token"), 401, "unauthorized")
    assert srv.get(ports(sid, f"/{APP_PORT}/")).status_code == 200


def test_share_link_works_without_a_token_and_expires(app):
    srv, sid = app
    r = srv.post(ports(sid, f"/{APP_PORT}/share"), {"ttl_s": 60})
    assert r.status_code == 200, r.text
    sh = r.json()
    assert sh["port"] == APP_PORT and sh["ttl_s"] == 60 and abs(sh["expires_at"] - time.time() - 60) < 5
    assert sh["url"].startswith(srv.url + f"/v1/sandboxes/{sid}/ports/{APP_PORT}/?xb_share=")
    assert sh["domain_url"].startswith(f"http://{APP_PORT}-{sid}.{DOMAIN}/?xb_share=")
    anon = requests.Session()
    r = anon.get(sh["url"], timeout=10)
    assert r.status_code == 200, r.text
    assert r.json()["path"] == "/", "the share parameter went on to the sandbox"
    # The cookie it set serves the pages the first one links to.
    assert "xb_share" in anon.cookies.get_dict()
    r = anon.get(srv.url + f"/v1/sandboxes/{sid}/ports/{APP_PORT}/style.css", timeout=10)
    assert r.status_code == 200 and r.json()["path"] == "/style.css"
    # Through the domain too.
    token = sh["token"]
    r = requests.get(f"{srv.url}/x?xb_share={token}", headers={"Host": f"{APP_PORT}-{sid}.{DOMAIN}"}, timeout=10)
    assert r.status_code == 200 and r.json()["path"] == "/x"
    # A link is for its own port and sandbox; a changed one is refused.
    bad = token[:-1] + ("0" if token[-1] != "0" else "1")
    expect_error(requests.get(srv.url + ports(sid, f"/{APP_PORT}/?xb_share={bad}"), timeout=10), 403,
                 "bad_signature")
    expect_error(requests.get(srv.url + ports(sid, f"/{APP_PORT + 1}/?xb_share={token}"), timeout=10), 403,
                 "bad_signature")
    forged = str(int(token.split(".")[0]) + 3600) + "." + token.split(".")[1]
    expect_error(requests.get(srv.url + ports(sid, f"/{APP_PORT}/?xb_share={forged}"), timeout=10), 403,
                 "bad_signature")
    # Expired: 403 with a hint that says how to get a fresh one.
    short = srv.post(ports(sid, f"/{APP_PORT}/share"), {"ttl_s": 1}).json()
    assert requests.get(short["url"], timeout=10).status_code == 200
    time.sleep(2.2)
    err = expect_error(requests.get(short["url"], timeout=10), 403, "link_expired")
    assert "/share" in err["hint"]
    # Bad arguments.
    expect_error(srv.post(ports(sid, f"/{APP_PORT}/share"), {"ttl_s": 0}), 400, "invalid_request")
    expect_error(srv.post(ports(sid, f"/{APP_PORT}/share"), {"ttl_s": 60, "x": 1}), 400, "invalid_request")
    expect_error(srv.post(ports(sid, "/0/share"), {}), 400, "invalid_port")


def test_list_shows_listening_ports(app):
    srv, sid = app
    start(srv, sid, "python3 -c 'import socket,time; s=socket.socket(socket.AF_INET6); "
                    "s.bind((\"::1\", 7007)); s.listen(); time.sleep(600)'")
    wait_listening(srv, sid, 7007)
    listed = srv.get(ports(sid)).json()
    assert listed["id"] == sid
    by_port = {p["port"]: p for p in listed["ports"]}
    assert by_port[APP_PORT]["address"] == "0.0.0.0"
    assert by_port[7007]["address"] == "::1"
    assert [p["port"] for p in listed["ports"]] == sorted(p["port"] for p in listed["ports"])
    # The tool's form of the same.
    r = srv.post(ports(sid), {"action": "list"})
    assert r.status_code == 200 and {p["port"] for p in r.json()["ports"]} >= {APP_PORT, 7007}
    r = srv.post(ports(sid), {"action": "share", "port": APP_PORT, "ttl_s": 30})
    assert r.status_code == 200 and "xb_share=" in r.json()["url"]
    expect_error(srv.post(ports(sid), {"action": "open"}), 400, "invalid_request")


def test_errors(app):
    srv, sid = app
    err = expect_error(srv.get(ports(sid, "/8089/")), 502, "port_closed")
    assert "8089" in err["message"] and "ports" in err["hint"]
    for bad in ("0", "65536", "abc", "80a", "-1", "123456"):
        expect_error(srv.get(ports(sid, f"/{bad}/")), 400, "invalid_port")
    expect_error(srv.get(ports("z" * 26, f"/{APP_PORT}/")), 404, "sandbox_not_found")
    # A server that closes without answering.
    start(srv, sid, "python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\", 7008)); s.listen(); "
                    "exec(\"while True: s.accept()[0].close()\")'")
    wait_listening(srv, sid, 7008)
    expect_error(srv.get(ports(sid, "/7008/")), 502, "upstream_failed")
    # The sandbox still answers on its other port afterwards.
    assert srv.get(ports(sid, f"/{APP_PORT}/")).status_code == 200


def test_client_leaving_mid_reply_ends_the_upstream(app):
    srv, sid = app
    r = srv.request("GET", ports(sid, f"/{APP_PORT}/stream/100000"), stream=True, timeout=30)
    assert r.status_code == 200
    next(r.iter_content(1 << 16))
    r.close()
    # The daemon is still responsive and the app still serves.
    t0 = time.monotonic()
    assert srv.get(ports(sid, f"/{APP_PORT}/")).status_code == 200
    assert time.monotonic() - t0 < 2


def test_sandboxes_cannot_reach_each_other(srv):
    a = srv.create()["id"]
    b = srv.create()["id"]
    start(srv, a, "python3 -m http.server 8080 --bind 0.0.0.0 --directory /tmp")
    wait_listening(srv, a, 8080)
    probe = ("import socket,sys\n"
             "for host, port in [('127.0.0.1', 8080), ('127.0.0.1', %d)]:\n"
             "    s = socket.socket()\n"
             "    s.settimeout(2)\n"
             "    try:\n"
             "        s.connect((host, port)); print('CONNECTED', port)\n"
             "    except OSError as e:\n"
             "        print('REFUSED', port, e.errno)\n"
             "print(open('/proc/net/dev').read())\n" % srv.port)
    # Positive control: the probe itself reaches A's server from inside A.
    out_a = srv.exec(a, cmd=f"python3 -c \"{probe}\"")["stdout"]
    assert "CONNECTED 8080" in out_a, out_a
    out_b = srv.exec(b, cmd=f"python3 -c \"{probe}\"")["stdout"]
    assert "REFUSED 8080" in out_b and "CONNECTED" not in out_b, out_b
    # B has loopback only: no interface leads to A, the host or the daemon.
    ifaces = [line.split(":")[0].strip() for line in out_b.splitlines() if ":" in line and "|" not in line]
    assert ifaces == ["lo"], out_b
    # The daemon reaches each one's own port only.
    assert srv.get(ports(a, "/8080/")).status_code == 200
    expect_error(srv.get(ports(b, "/8080/")), 502, "port_closed")
    # Nor the host's loopback through a sandbox: the daemon itself listens on
    # srv.port there (the positive control: it answers this very request).
    assert srv.get("/healthz").status_code == 200
    expect_error(srv.get(ports(b, f"/{srv.port}/healthz")), 502, "port_closed")


def test_requests_to_a_port_keep_the_sandbox_alive(srv):
    sid = srv.create(timeout_s=3)["id"]
    pid = start(srv, sid, "exec python3 -m http.server 8080 --directory /tmp")["pid"]
    wait_listening(srv, sid, 8080)
    for _ in range(6):
        assert srv.get(ports(sid, "/8080/")).status_code == 200
        time.sleep(1)
    assert srv.get(f"/v1/sandboxes/{sid}").status_code == 200
    # Its running server keeps it active too; once that stops and nothing
    # else happens it expires, and its port goes with it.
    assert srv.delete(f"/v1/sandboxes/{sid}/processes/{pid}").status_code in (200, 204)
    time.sleep(4.5)
    expect_error(srv.get(ports(sid, "/8080/")), 410, "sandbox_gone")


def test_deleting_the_sandbox_ends_its_tunnels_and_requests(app):
    srv, sid = app
    s, rest = ws_connect(srv.port, f"/v1/sandboxes/{sid}/ports/{APP_PORT}/ws", "127.0.0.1", TOKEN_A)
    ws_send(s, 1, b"x")
    assert ws_recv(s, rest)[:2] == (1, b"x")
    stream = srv.request("GET", ports(sid, f"/{APP_PORT}/stream/100000"), stream=True, timeout=30)
    it = stream.iter_content(1 << 16)
    next(it)
    srv.remove(sid)
    s.settimeout(10)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except ConnectionResetError:
        pass
    s.close()
    with pytest.raises(requests.exceptions.RequestException):
        for _ in it:
            pass
    stream.close()
    expect_error(srv.get(ports(sid, f"/{APP_PORT}/")), 410, "sandbox_gone")
