"""Compressed uploads (issue 11): a body sent with `Content-Encoding: gzip`
to REST's PUT .../files or to envd's POST /files (octet-stream, ?path=) is
decoded as it streams, by the writer in the sandbox's cgroup, so that the
decoded bytes hit the sandbox's limits and never the daemon. A corrupt or
cut-short stream is 400 and leaves the file put back; another coding is
415 (REST) or 400 (envd, as envd answers). A decompression bomb (10 MiB
of gzip, 10 GiB of zeros) into a small sandbox fails 507, or 413 past the
server's --upload-max, with the daemon's memory flat and quickly."""
from __future__ import annotations

import gzip
import hashlib
import os
import time
import zlib

from server_fixture import expect, expect_error, server, server_factory  # noqa: F401
from test_uploads import FLAT, MiB, daemon_cg, envd_headers, memcg, rss_peak  # noqa: F401


def gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)


def put(srv, sid, path, body, encoding="gzip", timeout=300, **params):
    h = {"Content-Type": "application/octet-stream"}
    if encoding is not None:
        h["Content-Encoding"] = encoding
    return srv.request("PUT", f"/v1/sandboxes/{sid}/files", params=dict(path=path, **params), data=body,
                       timeout=timeout, headers=h)


def post_envd(srv, sid, path, body, encoding="gzip", ctype="application/octet-stream", timeout=300):
    h = dict(envd_headers(srv, sid), **{"Content-Type": ctype})
    if encoding is not None:
        h["Content-Encoding"] = encoding
    return srv.request("POST", "/files", params={"path": path} if path else None, data=body, timeout=timeout,
                       headers=h)


def content(n: int, seed: bytes) -> bytes:
    """Half random, half text: gzip shrinks it, and a wrong byte shows."""
    out, i = [], 0
    while sum(map(len, out)) < n:
        out.append(hashlib.shake_256(seed + i.to_bytes(4, "big")).digest(4096))
        out.append(b"line %d of a compressible file\n" % i * 64)
        i += 1
    return b"".join(out)[:n]


def sha_in(srv, sid, path) -> str:
    return srv.sh(sid, f"sha256sum {path}").split()[0]


class Chunks:
    """A body of parts, with a Content-Length, never joined in the client."""

    def __init__(self, part: bytes, times: int):
        self.part, self.times = part, times

    def __len__(self):
        return len(self.part) * self.times

    def __iter__(self):
        for _ in range(self.times):
            yield self.part


def test_a_gzip_put_is_decoded_into_the_file(server):
    sid = server.create()["id"]
    data = content(5 * MiB + 123, os.urandom(16))
    body = gz(data)
    assert len(body) < len(data) * 0.8
    r = expect(put(server, sid, "/tmp/a.bin", body), 200)
    assert r.json()["size"] == len(data) and r.json()["written"] == len(data), r.text
    assert r.json()["received"] == len(body), r.text
    assert sha_in(server, sid, "/tmp/a.bin") == hashlib.sha256(data).hexdigest()
    # Several members (cat a.gz b.gz), the coding's name in any case, x-gzip.
    r = expect(put(server, sid, "/tmp/two.txt", gz(b"one\n") + gz(b"two\n"), encoding="GZip"), 200)
    assert server.sh(sid, "cat /tmp/two.txt") == "one\ntwo\n"
    expect(put(server, sid, "/tmp/x.txt", gz(b"x\n"), encoding="x-gzip"), 200)
    assert server.sh(sid, "cat /tmp/x.txt") == "x\n"
    # identity is no coding at all: the bytes as they are (positive control).
    expect(put(server, sid, "/tmp/raw.gz", body, encoding="identity"), 200)
    assert sha_in(server, sid, "/tmp/raw.gz") == hashlib.sha256(body).hexdigest()
    # Appending decodes too.
    expect(put(server, sid, "/tmp/two.txt", gz(b"three\n"), append="true"), 200)
    assert server.sh(sid, "cat /tmp/two.txt") == "one\ntwo\nthree\n"
    server.delete(f"/v1/sandboxes/{sid}")


def test_a_corrupt_or_cut_gzip_put_is_400_and_the_file_is_put_back(server):
    sid = server.create()["id"]
    data = content(2 * MiB, b"corrupt")
    body = bytearray(gz(data))
    body[-6] ^= 0xFF                     # the CRC-32
    err = expect_error(put(server, sid, "/tmp/c.bin", bytes(body)), 400, "invalid_encoding")
    assert "corrupt" in err["message"] and "gzip" in err["hint"], err
    assert server.sh(sid, "stat -c %s /tmp/c.bin").strip() == "0"
    err = expect_error(put(server, sid, "/tmp/c.bin", gz(data)[:-100]), 400, "invalid_encoding")
    assert "cut short" in err["message"], err
    expect_error(put(server, sid, "/tmp/c.bin", b"plain text, not gzip"), 400, "invalid_encoding")
    expect_error(put(server, sid, "/tmp/c.bin", b""), 400, "invalid_encoding")
    expect_error(put(server, sid, "/tmp/c.bin", gz(b"ok") + b"trailing junk"), 400, "invalid_encoding")
    # Appending to a file: a bad stream leaves it as it was.
    expect(put(server, sid, "/tmp/keep.txt", b"kept\n", encoding=None), 200)
    expect_error(put(server, sid, "/tmp/keep.txt", gz(data)[:5000], append="true"), 400, "invalid_encoding")
    assert server.sh(sid, "cat /tmp/keep.txt") == "kept\n"
    # Another coding is refused before the file is touched.
    err = expect_error(put(server, sid, "/tmp/b.txt", b"x", encoding="br"), 415, "unsupported_encoding")
    assert "br" in err["message"] and "gzip" in err["hint"], err
    expect_error(put(server, sid, "/tmp/b.txt", b"x", encoding="gzip, br"), 415, "unsupported_encoding")
    assert server.sh(sid, "test -e /tmp/b.txt || echo none").strip() == "none"
    server.delete(f"/v1/sandboxes/{sid}")


def bomb(total: int) -> tuple[bytes, int]:
    """(a gzip body, its decoded size): one member of 64 MiB of zeros,
    repeated: 160 of them make 10 GiB out of ~10 MiB."""
    member = gz(bytes(64 * MiB))
    return member, total // (64 * MiB)


def test_a_gzip_bomb_into_a_small_sandbox_is_507_and_the_daemon_stays_flat(daemon_cg):
    srv, peak = daemon_cg
    sid = srv.create(limits={"memory": 128 * MiB})["id"]
    expect(srv.post(f"/v1/sandboxes/{sid}/processes",
                    {"cmd": "python3 -c 'x = bytearray(16 << 20); import time; time.sleep(600)'"}), 201)
    time.sleep(0.5)
    member, times = bomb(10 << 30)
    body = Chunks(member, times)
    assert len(body) < 11 * MiB
    base, rss0 = peak(), rss_peak(srv.proc.pid)
    t0 = time.monotonic()
    r = put(srv, sid, "/tmp/bomb.bin", body)
    took = time.monotonic() - t0
    assert r.status_code == 507, r.text
    assert r.json()["error"]["code"] == "disk_full" and "memory" in r.json()["error"]["message"], r.text
    grew, rss = peak() - base, rss_peak(srv.proc.pid) - rss0
    print(f"\ngzip bomb into 128 MiB: {took:.1f} s, daemon cgroup +{grew / MiB:.1f} MiB, RSS +{rss / MiB:.1f} MiB")
    assert grew < FLAT and rss < FLAT, (grew, rss)
    assert took < 60
    # The loop was never held: the server answers at once meanwhile and after.
    t1 = time.monotonic()
    expect(srv.get("/healthz"), 200)
    assert time.monotonic() - t1 < 2
    out = srv.sh(sid, "stat -c %s /tmp/bomb.bin; pgrep -fc 'bytearray'")
    assert out.split() == ["0", "1"], out
    srv.delete(f"/v1/sandboxes/{sid}")


def test_a_gzip_bomb_past_the_upload_limit_is_413(server_factory):
    srv = server_factory("--upload-max", "64M", pool=0)
    sid = srv.create(limits={"memory": 512 * MiB})["id"]
    member, times = bomb(1 << 30)
    r = put(srv, sid, "/home/user/bomb.bin", Chunks(member, times))
    err = expect_error(r, 413, "upload_too_large")
    assert "decompressed" in err["message"], err
    assert srv.sh(sid, "stat -c %s /home/user/bomb.bin").strip() == "0"
    # Within the limit once decoded: fine (positive control).
    data = content(3 * MiB, b"small")
    expect(put(srv, sid, "/home/user/ok.bin", gz(data)), 200)
    assert sha_in(srv, sid, "/home/user/ok.bin") == hashlib.sha256(data).hexdigest()
    srv.delete(f"/v1/sandboxes/{sid}")


# ---- envd's POST /files, as the E2B SDK's files.write(..., {gzip: true})
# sends it: application/octet-stream with ?path= and Content-Encoding: gzip.

def test_envd_gzip_upload_is_decoded(server):
    sid = server.create()["id"]
    data = content(3 * MiB + 7, os.urandom(16))
    r = expect(post_envd(server, sid, "/home/user/e.bin", gz(data)), 200)
    assert r.json() == [{"name": "e.bin", "type": "file", "path": "/home/user/e.bin"}], r.text
    assert sha_in(server, sid, "/home/user/e.bin") == hashlib.sha256(data).hexdigest()
    # A relative path is below /home/user, as without gzip.
    expect(post_envd(server, sid, "rel.txt", gz(b"rel\n")), 200)
    assert server.sh(sid, "cat /home/user/rel.txt") == "rel\n"
    server.delete(f"/v1/sandboxes/{sid}")


def test_envd_bad_gzip_and_other_codings(server):
    sid = server.create()["id"]
    r = post_envd(server, sid, "/home/user/bad.bin", gz(b"abc" * 1000)[:-3])
    assert r.status_code == 400 and "cut short" in r.json()["message"], r.text
    assert r.json()["code"] == 400
    r = post_envd(server, sid, "/home/user/bad.bin", b"\x1f\x8b not really")
    assert r.status_code == 400 and "corrupt" in r.json()["message"], r.text
    assert server.sh(sid, "stat -c %s /home/user/bad.bin").strip() == "0"
    # envd's own 400 and words for a coding it does not know.
    r = post_envd(server, sid, "/home/user/br.bin", b"x", encoding="br")
    assert r.status_code == 400, r.text
    assert r.json()["message"] == "error decompressing request body: unsupported Content-Encoding: br, supported: [gzip]"
    r = post_envd(server, sid, "/home/user/d.bin", zlib.compress(b"x"), encoding="deflate")
    assert r.status_code == 400 and "supported: [gzip]" in r.json()["message"], r.text
    assert server.sh(sid, "ls /home/user/br.bin /home/user/d.bin 2>/dev/null | wc -l").strip() == "0"
    # identity: the bytes as sent.
    expect(post_envd(server, sid, "/home/user/id.txt", b"same\n", encoding="identity"), 200)
    assert server.sh(sid, "cat /home/user/id.txt") == "same\n"
    server.delete(f"/v1/sandboxes/{sid}")


# ---- envd's multipart POST /files with the whole form gzipped, as envd
# reads it: decoded by the daemon's form parser in bounded slices.

BOUNDARY = "xbGZxb91"
CTYPE = f"multipart/form-data; boundary={BOUNDARY}"


def form_head(name, filename=None):
    fn = f'; filename="{filename}"' if filename else ""
    return (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"{fn}\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode()


def form(files) -> bytes:
    out = b""
    for path, data in files:
        out += form_head("file", path) + data + b"\r\n"
    return out + f"--{BOUNDARY}--\r\n".encode()


class Members:
    """gzip members one after another, as one body with a Content-Length."""

    def __init__(self, parts):
        self.parts = parts       # [(bytes, times)]

    def __len__(self):
        return sum(len(p) * t for p, t in self.parts)

    def __iter__(self):
        for p, t in self.parts:
            for _ in range(t):
                yield p


def test_envd_gzip_multipart_is_decoded(server):
    sid = server.create()["id"]
    a, b = content(3 * MiB, os.urandom(8)), content(100000, os.urandom(8))
    body = gz(form([("/tmp/ma.bin", a), ("mb.bin", b)]))
    r = expect(post_envd(server, sid, None, body, ctype=CTYPE), 200)
    assert [e["path"] for e in r.json()] == ["/tmp/ma.bin", "/home/user/mb.bin"], r.text
    out = server.sh(sid, "sha256sum /tmp/ma.bin /home/user/mb.bin")
    assert [ln.split()[0] for ln in out.splitlines()] == [hashlib.sha256(a).hexdigest(), hashlib.sha256(b).hexdigest()]
    # Corrupt, and cut short: 400, the file being written put back.
    bad = bytearray(body)
    bad[-6] ^= 0xFF
    r = post_envd(server, sid, None, bytes(bad), ctype=CTYPE)
    assert r.status_code == 400 and "corrupt" in r.json()["message"], r.text
    r = post_envd(server, sid, None, gz(form([("/tmp/cut.bin", a)]))[: len(body) // 2], ctype=CTYPE)
    assert r.status_code == 400 and "cut short" in r.json()["message"], r.text
    assert server.sh(sid, "stat -c %s /tmp/cut.bin").strip() == "0"
    server.delete(f"/v1/sandboxes/{sid}")


def test_envd_gzip_multipart_bomb_is_507_in_a_small_sandbox(daemon_cg):
    srv, peak = daemon_cg
    sid = srv.create(limits={"memory": 128 * MiB})["id"]
    member, times = bomb(10 << 30)
    body = Members([(gz(form_head("file", "/tmp/mbomb.bin")), 1), (member, times),
                    (gz(b"\r\n" + f"--{BOUNDARY}--\r\n".encode()), 1)])
    base, rss0 = peak(), rss_peak(srv.proc.pid)
    t0 = time.monotonic()
    r = post_envd(srv, sid, None, body, ctype=CTYPE)
    took = time.monotonic() - t0
    assert r.status_code == 507 and "memory" in r.json()["message"], r.text
    grew, rss = peak() - base, rss_peak(srv.proc.pid) - rss0
    print(f"\nmultipart gzip bomb into 128 MiB: {took:.1f} s, daemon cgroup +{grew / MiB:.1f} MiB, "
          f"RSS +{rss / MiB:.1f} MiB")
    assert grew < FLAT and rss < FLAT, (grew, rss)
    assert took < 20, "the rest of the bomb was decoded after the file failed"
    assert srv.sh(sid, "stat -c %s /tmp/mbomb.bin").strip() == "0"
    srv.delete(f"/v1/sandboxes/{sid}")


def test_envd_gzip_multipart_bomb_in_a_dropped_field_is_413_without_holding_the_loop(daemon_cg):
    """A form field (no file) is dropped as it is decoded: nothing pushes
    back, so only the per-call budget keeps the loop turning."""
    import threading
    srv, peak = daemon_cg
    sid = srv.create()["id"]
    member, times = bomb(4 << 30)
    body = Members([(gz(form_head("note")), 1), (member, times)])
    lat, stop = [], threading.Event()

    def ping():
        while not stop.is_set():
            t = time.monotonic()
            srv.get("/healthz", timeout=30)
            lat.append(time.monotonic() - t)
            time.sleep(0.05)
    th = threading.Thread(target=ping)
    base, rss0 = peak(), rss_peak(srv.proc.pid)
    th.start()
    try:
        r = post_envd(srv, sid, None, body, ctype=CTYPE)
    finally:
        stop.set()
        th.join()
    assert r.status_code == 413, r.text
    grew, rss = peak() - base, rss_peak(srv.proc.pid) - rss0
    print(f"\ndropped-field bomb: {len(lat)} pings, slowest {max(lat) * 1000:.0f} ms, daemon cgroup "
          f"+{grew / MiB:.1f} MiB")
    assert grew < FLAT and rss < FLAT, (grew, rss)
    assert len(lat) >= 3 and max(lat) < 1.0, lat
    srv.delete(f"/v1/sandboxes/{sid}")
