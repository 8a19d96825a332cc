"""The fake internet's servers, run inside a test-made network namespace
(tests/integration/fakenet.py starts it with `ip netns exec`).

    fakenet_server.py web  DIR        HTTP on :80 and HTTPS on :443 (DIR/cert.pem, key.pem);
                                      GET /who answers "host=<Host> peer=<ip> path=<path>",
                                      GET .../bytes/N[.ext] answers N bytes (benchmarks),
                                      GET /pypi/... serves DIR/pypi/ (a test's wheel index);
                                      every GET is logged to DIR/requests.log
    fakenet_server.py dns  ADDR ZONE  DNS over UDP and TCP on ADDR:53; ZONE is a JSON file
                                      {"name": ["ip", ...]} re-read on every query
    fakenet_server.py trap LOG        accept on :80 and :443 and log every connection to LOG
Every server logs nothing else and runs until killed.
"""
import http.server
import json
import os
import socket
import socketserver
import ssl
import struct
import sys
import threading


class Web(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    root = None

    def do_GET(self):
        if self.root:
            with open(os.path.join(self.root, "requests.log"), "a") as f:
                f.write(f"{self.headers.get('Host')} {self.path}\n")
        if self.path.startswith("/pypi/") and self.root and ".." not in self.path:
            p = os.path.join(self.root, self.path.lstrip("/").split("?")[0])
            if os.path.isdir(p):
                p = os.path.join(p, "index.html")
            if not os.path.isfile(p):
                self.send_error(404)
                return
            with open(p, "rb") as f:
                body = f.read()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Type", "text/html" if p.endswith(".html") else "application/octet-stream")
            self.end_headers()
            self.wfile.write(body)
            return
        if "/bytes/" in self.path:
            n = int(self.path.split("/bytes/")[1].split(".")[0])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.send_header("Content-Type", "application/octet-stream")
            self.end_headers()
            chunk = b"x" * (1 << 20)
            while n > 0:
                k = min(n, len(chunk))
                self.wfile.write(chunk[:k])
                n -= k
            return
        if self.path.startswith("/headers"):
            # The request line and headers as they came (the secrets tests).
            body = (f"{self.requestline}\n{self.headers}").encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        body = (f"host={self.headers.get('Host')} peer={self.client_address[0]} path={self.path} "
                f"via={self.headers.get('Via', '-')}\n").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(body)


class ThreadedHTTP(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    address_family = socket.AF_INET


def web(d):
    Web.root = d
    plain = ThreadedHTTP(("0.0.0.0", 80), Web)
    tls = ThreadedHTTP(("0.0.0.0", 443), Web)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(d, "cert.pem"), os.path.join(d, "key.pem"))
    tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
    threading.Thread(target=tls.serve_forever, daemon=True).start()
    print("ready", flush=True)
    plain.serve_forever()


def dns_answer(q, zone_path):
    ident, flags, qd = struct.unpack(">HHH", q[:6])
    i, labels = 12, []
    while q[i]:
        labels.append(q[i + 1:i + 1 + q[i]].decode())
        i += 1 + q[i]
    qend = i + 5
    qtype = struct.unpack(">H", q[i + 1:i + 3])[0]
    name = ".".join(labels).lower()
    with open(zone_path) as f:
        zone = json.load(f)
    addrs = zone.get(name)
    rcode = 0 if addrs is not None else 3
    answers = b""
    n = 0
    if addrs and qtype == 1:
        for a in addrs:
            answers += struct.pack(">HHHIH", 0xC00C, 1, 1, 0, 4) + socket.inet_aton(a)
            n += 1
    head = struct.pack(">HHHHHH", ident, 0x8180 | (flags & 0x0100) | rcode, 1, n, 0, 0)
    return head + q[12:qend] + answers


def dns(addr, zone_path):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind((addr, 53))
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    t.bind((addr, 53))
    t.listen(16)

    def tcp():
        while True:
            c, _ = t.accept()
            try:
                n = struct.unpack(">H", c.recv(2))[0]
                q = b""
                while len(q) < n:
                    q += c.recv(n - len(q))
                a = dns_answer(q, zone_path)
                c.sendall(struct.pack(">H", len(a)) + a)
            except Exception:
                pass
            c.close()

    threading.Thread(target=tcp, daemon=True).start()
    print("ready", flush=True)
    while True:
        q, peer = u.recvfrom(4096)
        try:
            u.sendto(dns_answer(q, zone_path), peer)
        except Exception:
            pass


def trap(log):
    socks = []
    for port in (80, 443):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", port))
        s.listen(16)
        socks.append(s)

    def serve(s):
        while True:
            c, peer = s.accept()
            local = c.getsockname()
            with open(log, "a") as f:
                f.write(f"{peer[0]} -> {local[0]}:{local[1]}\n")
            c.close()

    for s in socks[1:]:
        threading.Thread(target=serve, args=(s,), daemon=True).start()
    print("ready", flush=True)
    serve(socks[0])


if __name__ == "__main__":
    if sys.argv[1] == "web":
        web(sys.argv[2])
    elif sys.argv[1] == "dns":
        dns(sys.argv[2], sys.argv[3])
    else:
        trap(sys.argv[2])
