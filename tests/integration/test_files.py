"""The file API (src/core/files.c, src/init/init_files.c) against a real
`execbox serve`: round trips of text and binary, Range, parents, modes and
ownership, list, stat, mkdir, move, delete, a full disk, the upload limit,
input validation, and the path attacks of invariant 7, each run while a
process inside the sandbox helps the attacker: symlinks to / and into
/proc, ".." chains, FIFOs and devices, and a rename race that swaps a
directory with a symlink to / while the test reads and writes through it.
No host file may ever be read or written."""
from __future__ import annotations

import hashlib
import os
import re
import threading
import time

import pytest
import requests

from server_fixture import expect, expect_error, raw_json, raw_request, raw_status, server_factory  # noqa: F401

ISO_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture
def srv(server_factory):
    return server_factory(pool=0)


@pytest.fixture
def host_marker():
    """A file in the host's /tmp that no sandbox may see or change."""
    name = f"/tmp/xb-files-marker-{os.getpid()}-{time.monotonic_ns()}"
    with open(name, "w") as f:
        f.write("host secret\n")
    yield name
    os.unlink(name)


@pytest.fixture
def sid(srv):
    s = srv.create()["id"]
    yield s
    r = srv.delete(f"/v1/sandboxes/{s}")
    assert r.status_code in (204, 404), r.text


# ---- helpers ----

def files(sid: str, what: str = "") -> str:
    return f"/v1/sandboxes/{sid}/files" + (f"/{what}" if what else "")


def put(srv, sid, path, data, timeout=60, **params):
    return srv.request("PUT", files(sid), params={"path": path, **params}, data=data, timeout=timeout)


def get(srv, sid, path, headers=None, timeout=60):
    return srv.request("GET", files(sid), params={"path": path}, headers=headers, timeout=timeout)


def stat(srv, sid, path):
    return srv.request("GET", files(sid, "stat"), params={"path": path})


def listing(srv, sid, path, depth=None):
    params = {"path": path}
    if depth is not None:
        params["depth"] = str(depth)
    return srv.request("GET", files(sid, "list"), params=params)


def remove(srv, sid, path, recursive=None):
    params = {"path": path}
    if recursive is not None:
        params["recursive"] = recursive
    return srv.request("DELETE", files(sid), params=params)


def ok_put(srv, sid, path, data, **params) -> dict:
    r = put(srv, sid, path, data, **params)
    expect(r, 200)
    return r.json()


def ok_get(srv, sid, path) -> bytes:
    r = get(srv, sid, path)
    expect(r, 200)
    return r.content


def host_file(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


# ---- round trips ----

def test_text_round_trip_and_relative_paths(srv, sid):
    text = "héllo, wörld\nline two\n".encode()
    body = ok_put(srv, sid, "notes.txt", text)
    assert body == {"path": "/home/user/notes.txt", "size": len(text), "written": len(text)}
    assert ok_get(srv, sid, "/home/user/notes.txt") == text
    r = get(srv, sid, "notes.txt")
    assert r.content == text
    assert r.headers["Content-Type"] == "application/octet-stream"
    assert r.headers.get("Accept-Ranges") == "bytes"
    assert srv.sh(sid, "cat /home/user/notes.txt") == text.decode()
    # A file a command wrote reads back the same way.
    srv.sh(sid, "printf 'from inside' > /tmp/inside.txt")
    assert ok_get(srv, sid, "/tmp/inside.txt") == b"from inside"


def test_binary_every_byte_value(srv, sid):
    data = bytes(range(256)) * 1000
    ok_put(srv, sid, "bin/all.bin", data)
    assert ok_get(srv, sid, "bin/all.bin") == data
    out = srv.sh(sid, "sha256sum /home/user/bin/all.bin")
    assert out.split()[0] == hashlib.sha256(data).hexdigest()


def test_binary_20mb_random(srv, sid):
    data = os.urandom(20 << 20)
    body = ok_put(srv, sid, "/tmp/big.bin", data, timeout=120)
    assert body["size"] == len(data)
    r = get(srv, sid, "/tmp/big.bin", timeout=120)
    expect(r, 200)
    assert len(r.content) == len(data) and hashlib.sha256(r.content).digest() == hashlib.sha256(data).digest()
    r = get(srv, sid, "/tmp/big.bin", headers={"Range": "bytes=10485760-10485775"})
    expect(r, 206)
    assert r.content == data[10485760:10485776]


def test_empty_file_and_overwrite_truncates(srv, sid):
    assert ok_put(srv, sid, "e.txt", b"")["size"] == 0
    assert ok_get(srv, sid, "e.txt") == b""
    ok_put(srv, sid, "e.txt", b"a long first version\n")
    ok_put(srv, sid, "e.txt", b"short")
    assert ok_get(srv, sid, "e.txt") == b"short"


def test_append(srv, sid):
    ok_put(srv, sid, "log.txt", b"one\n")
    body = ok_put(srv, sid, "log.txt", b"two\n", append="true")
    assert body == {"path": "/home/user/log.txt", "size": 8, "written": 4}
    assert ok_get(srv, sid, "log.txt") == b"one\ntwo\n"
    ok_put(srv, sid, "new-by-append.txt", b"x", append="true")
    assert ok_get(srv, sid, "new-by-append.txt") == b"x"


def test_range_requests(srv, sid):
    data = bytes(range(256)) * 4
    ok_put(srv, sid, "r.bin", data)
    cases = [
        ("bytes=0-0", 0, 0), ("bytes=10-19", 10, 19), ("bytes=1000-", 1000, 1023), ("bytes=-10", 1014, 1023),
        ("bytes=-5000", 0, 1023), ("bytes=1000-5000", 1000, 1023), ("bytes=1023-1023", 1023, 1023),
    ]
    for spec, a, b in cases:
        r = get(srv, sid, "r.bin", headers={"Range": spec})
        expect(r, 206)
        assert r.headers["Content-Range"] == f"bytes {a}-{b}/1024", spec
        assert r.content == data[a:b + 1], spec
    for spec in ("bytes=1024-", "bytes=5000-6000", "bytes=-0"):
        r = get(srv, sid, "r.bin", headers={"Range": spec})
        expect_error(r, 416, "range_not_satisfiable")
        assert r.headers["Content-Range"] == "bytes */1024", spec
    # Malformed, several ranges or another unit: ignored, the whole file.
    for spec in ("bytes=5-2", "bytes=0-1,5-6", "items=0-1", "bytes=x-"):
        r = get(srv, sid, "r.bin", headers={"Range": spec})
        expect(r, 200)
        assert r.content == data, spec
    ok_put(srv, sid, "empty", b"")
    expect_error(get(srv, sid, "empty", headers={"Range": "bytes=0-"}), 416, "range_not_satisfiable")


def test_parents_mode_and_owner(srv, sid):
    ok_put(srv, sid, "deep/er/still/file.sh", b"#!/bin/sh\necho ran as $(id -u)\n", mode="0755")
    st = stat(srv, sid, "deep/er/still/file.sh").json()
    assert st["mode"] == "0755" and st["type"] == "file"
    for d in ("deep", "deep/er", "deep/er/still"):
        s = stat(srv, sid, d).json()
        assert s["type"] == "dir" and s["mode"] == "0755", s
    out = srv.sh(sid, "cd /home/user && stat -c '%a %u %g' deep deep/er deep/er/still deep/er/still/file.sh")
    assert out.split("\n")[:4] == ["755 1000 1000"] * 4
    # The default mode, an explicit one, and a mode change on rewrite.
    ok_put(srv, sid, "plain.txt", b"x")
    ok_put(srv, sid, "secret.txt", b"x", mode="600")
    assert srv.sh(sid, "stat -c '%a %u' /home/user/plain.txt /home/user/secret.txt") == "644 1000\n600 1000\n"
    ok_put(srv, sid, "plain.txt", b"y", mode="0o640")
    assert srv.sh(sid, "stat -c %a /home/user/plain.txt") == "640\n"
    ok_put(srv, sid, "plain.txt", b"z")
    assert srv.sh(sid, "stat -c %a /home/user/plain.txt") == "640\n", "a rewrite without mode keeps the mode"
    # In /tmp too, and owned by the user even there.
    ok_put(srv, sid, "/tmp/t/u.txt", b"x")
    assert srv.sh(sid, "stat -c '%u %g' /tmp/t /tmp/t/u.txt") == "1000 1000\n1000 1000\n"
    for bad in ("999", "abc", "01000", "", "0x1ff", "12345"):
        expect_error(put(srv, sid, "m.txt", b"x", mode=bad), 400, "invalid_mode")


def test_file_written_by_put_can_be_executed(srv, sid):
    ok_put(srv, sid, "bin/hello", b"#!/bin/sh\necho \"hello $1 from $(id -un)\"\n", mode="0755")
    res = srv.exec(sid, cmd="/home/user/bin/hello world")
    assert res["status"] == "ok" and res["stdout"] == "hello world from user\n", res
    ok_put(srv, sid, "bin/hello.py", b"import sys\nprint(sum(int(a) for a in sys.argv[1:]))\n")
    assert srv.sh(sid, "python3 /home/user/bin/hello.py 1 2 3") == "6\n"


def test_user_permissions_apply(srv, sid):
    srv.exec(sid, cmd="echo root-data > /tmp/rootfile && chmod 644 /tmp/rootfile && "
                      "echo private > /tmp/private && chmod 600 /tmp/private", user="root")
    assert ok_get(srv, sid, "/tmp/rootfile") == b"root-data\n"
    expect_error(put(srv, sid, "/tmp/rootfile", b"mine now"), 403, "permission_denied")
    assert srv.sh(sid, "cat /tmp/rootfile") == "root-data\n"
    expect_error(get(srv, sid, "/tmp/private"), 403, "permission_denied")
    expect_error(get(srv, sid, "/root/x"), 403, "permission_denied")
    expect_error(put(srv, sid, "/root/new.txt", b"x"), 403)
    expect_error(put(srv, sid, "/usr/new.txt", b"x"), 403)
    expect_error(put(srv, sid, "/etc/passwd", b"x"), 403)
    expect_error(remove(srv, sid, "/usr/bin/ls"), 403)


# ---- list, stat, mkdir, move, delete ----

def test_stat(srv, sid):
    ok_put(srv, sid, "s/file.txt", b"12345")
    srv.sh(sid, "cd /home/user/s && ln -s file.txt link && ln -s / root-link && mkfifo fifo")
    now_ms = time.time() * 1000
    st = stat(srv, sid, "s/file.txt").json()
    assert st["name"] == "file.txt" and st["path"] == "/home/user/s/file.txt"
    assert st["type"] == "file" and st["size"] == 5 and st["mode"] == "0644"
    assert ISO_RE.match(st["mtime"]), st
    assert abs(st["mtime_ms"] - now_ms) < 120_000, st
    assert "target" not in st
    d = stat(srv, sid, "/home/user/s").json()
    assert d["type"] == "dir" and d["name"] == "s"
    ln = stat(srv, sid, "s/link").json()
    assert ln["type"] == "symlink" and ln["target"] == "file.txt"
    assert stat(srv, sid, "s/root-link").json()["target"] == "/"
    assert stat(srv, sid, "s/fifo").json()["type"] == "other"
    assert stat(srv, sid, "/").json()["type"] == "dir"
    expect_error(stat(srv, sid, "s/nope"), 404, "file_not_found")
    expect_error(stat(srv, sid, "s/file.txt/x"), 400, "not_a_directory")


def test_list_depth_and_types(srv, sid):
    srv.sh(sid, "mkdir -p /home/user/t/a/b/c/d/e/f && echo hi > /home/user/t/a/one.txt && "
                "ln -s /usr /home/user/t/a/usr-link && mkfifo /home/user/t/a/pipe")
    r = listing(srv, sid, "t")
    expect(r, 200)
    body = r.json()
    assert body["path"] == "/home/user/t" and body["truncated"] is False and body["count"] == 1
    assert [e["path"] for e in body["entries"]] == ["/home/user/t/a"]
    e = body["entries"][0]
    assert e["name"] == "a" and e["type"] == "dir" and e["mode"] == "0755" and ISO_RE.match(e["mtime"])
    assert set(e) == {"name", "path", "type", "size", "mode", "mtime", "mtime_ms"}
    deep = listing(srv, sid, "/home/user/t", depth=2).json()
    by_name = {e["name"]: e for e in deep["entries"]}
    assert set(by_name) == {"a", "b", "one.txt", "usr-link", "pipe"}
    assert by_name["one.txt"]["type"] == "file" and by_name["one.txt"]["size"] == 3
    assert by_name["usr-link"]["type"] == "symlink"
    assert by_name["pipe"]["type"] == "other"
    paths = [e["path"] for e in listing(srv, sid, "t", depth=5).json()["entries"]]
    assert "/home/user/t/a/b/c/d/e" in paths and "/home/user/t/a/b/c/d/e/f" not in paths
    assert not any(p.startswith("/home/user/t/a/usr-link/") for p in paths), "symlinks are not followed"
    assert paths == sorted(paths)
    # The root of the sandbox lists its own tree, not the host's.
    names = {e["name"] for e in listing(srv, sid, "/").json()["entries"]}
    assert {"usr", "tmp", "home", "proc", "dev", "etc"} <= names
    assert "work" not in names and os.path.isdir("/work"), "the host's /work must not show"
    for bad in ("0", "6", "x", "-1", "10"):
        expect_error(listing(srv, sid, "t", depth=bad), 400, "invalid_depth")
    expect_error(listing(srv, sid, "t/a/one.txt"), 400, "not_a_directory")
    expect_error(listing(srv, sid, "nope"), 404, "file_not_found")


def test_list_is_bounded(srv, sid):
    srv.sh(sid, "mkdir /home/user/many && cd /home/user/many && seq -f 'file-%05g' 12000 | xargs touch")
    r = listing(srv, sid, "many")
    expect(r, 200)
    body = r.json()
    assert body["truncated"] is True and body["count"] == 10000 and len(body["entries"]) == 10000
    assert "hint" in body and body["hint"]
    names = [e["name"] for e in body["entries"]]
    assert len(set(names)) == 10000 and all(n.startswith("file-") for n in names)
    # The sandbox still answers.
    assert ok_put(srv, sid, "after.txt", b"ok")["size"] == 2


def test_mkdir(srv, sid):
    r = srv.post(files(sid, "mkdir"), {"path": "p/q/r"})
    expect(r, 200)
    assert r.json() == {"path": "/home/user/p/q/r", "created": True}
    assert srv.post(files(sid, "mkdir"), {"path": "/home/user/p/q/r"}).json()["created"] is False
    expect_error(srv.post(files(sid, "mkdir"), {"path": "s/t", "parents": False}), 404, "file_not_found")
    expect_error(srv.post(files(sid, "mkdir"), {"path": "p", "parents": False}), 409, "already_exists")
    expect(srv.post(files(sid, "mkdir"), {"path": "priv", "parents": False, "mode": "0700"}), 200)
    assert srv.sh(sid, "stat -c '%a %u %g' /home/user/priv /home/user/p/q") == "700 1000 1000\n755 1000 1000\n"
    ok_put(srv, sid, "f.txt", b"x")
    expect_error(srv.post(files(sid, "mkdir"), {"path": "f.txt"}), 409, "already_exists")
    expect_error(srv.post(files(sid, "mkdir"), {"path": "/usr/newdir"}), 403)
    expect_error(srv.post(files(sid, "mkdir"), {}), 400, "missing_path")
    expect_error(srv.post(files(sid, "mkdir"), {"path": "x", "color": "red"}), 400, "invalid_request")
    expect_error(srv.post(files(sid, "mkdir"), {"path": 7}), 400, "invalid_request")


def test_move(srv, sid):
    mv = files(sid, "move")
    ok_put(srv, sid, "a.txt", b"A")
    r = srv.post(mv, {"from": "a.txt", "to": "/home/user/b.txt"})
    expect(r, 200)
    assert r.json() == {"from": "/home/user/a.txt", "to": "/home/user/b.txt"}
    expect_error(get(srv, sid, "a.txt"), 404, "file_not_found")
    assert ok_get(srv, sid, "b.txt") == b"A"
    ok_put(srv, sid, "c.txt", b"C")
    expect_error(srv.post(mv, {"from": "b.txt", "to": "c.txt"}), 409, "already_exists")
    assert ok_get(srv, sid, "c.txt") == b"C"
    expect(srv.post(mv, {"from": "b.txt", "to": "c.txt", "overwrite": True}), 200)
    assert ok_get(srv, sid, "c.txt") == b"A"
    # Directories move too, with their contents.
    ok_put(srv, sid, "d1/x.txt", b"X")
    expect(srv.post(mv, {"from": "d1", "to": "d2"}), 200)
    assert ok_get(srv, sid, "d2/x.txt") == b"X"
    expect_error(srv.post(mv, {"from": "nope", "to": "n2"}), 404, "file_not_found")
    expect_error(srv.post(mv, {"from": "c.txt", "to": "no/such/dir/c.txt"}), 404, "file_not_found")
    expect_error(srv.post(mv, {"from": "/home/user", "to": "/tmp/home"}), 409, "protected_path")
    expect_error(srv.post(mv, {"from": "/", "to": "/tmp/root"}), 409, "protected_path")
    expect_error(srv.post(mv, {"from": "c.txt", "to": "/tmp/c.txt"}), 400, "cross_device")
    expect_error(srv.post(mv, {"from": "d2", "to": "d2/inside"}), 400)
    expect_error(srv.post(mv, {"to": "x"}), 400, "missing_path")
    expect_error(srv.post(mv, {"from": "c.txt", "to": "x", "overwrite": "yes"}), 400, "invalid_request")


def test_delete(srv, sid):
    ok_put(srv, sid, "f.txt", b"x")
    r = remove(srv, sid, "f.txt")
    expect(r, 200)
    assert r.json() == {"path": "/home/user/f.txt", "deleted": 1}
    expect_error(remove(srv, sid, "f.txt"), 404, "file_not_found")
    expect(srv.post(files(sid, "mkdir"), {"path": "empty"}), 200)
    expect(remove(srv, sid, "empty"), 200)
    srv.sh(sid, "mkdir -p /home/user/tree/a/b && touch /home/user/tree/1 /home/user/tree/a/2 /home/user/tree/a/b/3 && "
                "ln -s / /home/user/tree/rootlink && ln -s /tmp /home/user/tree/a/tmplink && echo keep > /tmp/keep")
    expect_error(remove(srv, sid, "tree"), 409, "directory_not_empty")
    r = remove(srv, sid, "tree", recursive="true")
    expect(r, 200)
    assert r.json()["deleted"] == 8
    expect_error(stat(srv, sid, "tree"), 404)
    # Symlinks in the tree went, never what they pointed to.
    assert srv.sh(sid, "cat /tmp/keep && ls /usr/bin/ls") == "keep\n/usr/bin/ls\n"
    # A symlink to / is deleted as a link.
    srv.sh(sid, "ln -s / /home/user/evil")
    expect(remove(srv, sid, "evil", recursive="true"), 200)
    assert srv.sh(sid, "ls / | wc -l").strip() != "0"
    for path in ("/", "/home/user", "/home/user/", "//home//user", "/tmp", "/home/user/../user"):
        expect_error(remove(srv, sid, path, recursive="true"), 409, "protected_path")
    expect_error(remove(srv, sid, "/home/user/.", recursive="true"), 400, "invalid_path")
    expect_error(remove(srv, sid, "x", recursive="maybe"), 400, "invalid_request")
    assert srv.sh(sid, "ls -d /home/user /tmp") == "/home/user\n/tmp\n"


def test_delete_deep_tree_is_bounded(srv, sid):
    # 200 levels: over the 128-level bound, so only part goes, and the
    # reply says so; the sandbox works on.
    srv.sh(sid, "cd /home/user && d=deep; for i in $(seq 200); do d=$d/x; done; mkdir -p $d")
    r = remove(srv, sid, "deep", recursive="true")
    expect_error(r, 413, "tree_too_large")
    assert srv.sh(sid, "echo alive") == "alive\n"
    srv.sh(sid, "rm -rf /home/user/deep")


# ---- limits ----

def test_disk_full_is_507_and_the_file_is_put_back(srv):
    sb = srv.create(limits={"disk": 8 << 20})["id"]
    try:
        r = put(srv, sb, "big.bin", os.urandom(20 << 20), timeout=120)
        err = expect_error(r, 507, "disk_full")
        assert "disk" in err["hint"]
        assert stat(srv, sb, "big.bin").json()["size"] == 0, "a failed upload must not leave half a file"
        ok_put(srv, sb, "log.txt", b"one\n")
        r = put(srv, sb, "log.txt", os.urandom(20 << 20), timeout=120, append="true")
        expect_error(r, 507, "disk_full")
        assert ok_get(srv, sb, "log.txt") == b"one\n", "a failed append keeps the old content"
        # The disk is usable again.
        assert ok_put(srv, sb, "small.txt", b"fits")["size"] == 4
    finally:
        srv.remove(sb)


def test_upload_limit_is_413(server_factory):
    srv = server_factory("--upload-max", "1M", pool=0)
    sb = srv.create()["id"]
    data = os.urandom(2 << 20)
    # Refused at the headers (the server may close before reading the body,
    # so the request is raw: headers only).
    resp = raw_request(srv.port, (f"PUT /v1/sandboxes/{sb}/files?path=big.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                  f"Content-Length: {len(data)}\r\n\r\n").encode())
    assert raw_status(resp) == 413 and raw_json(resp)["error"]["hint"], resp[:300]
    # Chunked, so only counting finds out.

    def chunks():
        for i in range(0, len(data), 65536):
            yield data[i:i + 65536]
    expect_error(put(srv, sb, "big2.bin", chunks()), 413, "upload_too_large")
    assert stat(srv, sb, "big2.bin").json()["size"] == 0
    assert ok_put(srv, sb, "ok.bin", data[:1000])["size"] == 1000
    srv.remove(sb)


def test_sandbox_deleted_during_upload_is_410(srv):
    sb = srv.create()["id"]
    other = requests.Session()

    def chunks():
        yield b"x" * 65536
        # Once init has created the file, the server is past the headers.
        deadline = time.monotonic() + 10
        while other.get(srv.url + files(sb, "stat"), params={"path": "up.bin"}, timeout=10).status_code != 200:
            assert time.monotonic() < deadline, "the upload never opened its file"
            time.sleep(0.01)
        r = other.delete(srv.url + f"/v1/sandboxes/{sb}", timeout=30)
        assert r.status_code == 204
        for _ in range(8):
            yield b"y" * 65536
    expect_error(put(srv, sb, "up.bin", chunks()), 410, "sandbox_gone")
    expect_error(get(srv, sb, "up.bin"), 410, "sandbox_gone")     # its tombstone (issue 12)


# ---- validation ----

def test_input_validation(srv, sid):
    for method in ("GET", "PUT", "DELETE"):
        err = expect_error(srv.request(method, files(sid), data=b""), 400, "missing_path")
        assert "path" in err["hint"]
        expect_error(srv.request(method, files(sid), params={"path": ""}, data=b""), 400, "missing_path")
    expect_error(srv.request("GET", files(sid, "list")), 400, "missing_path")
    expect_error(srv.request("GET", files(sid, "stat")), 400, "missing_path")
    long = "/home/user/" + "a" * 4100
    for method in ("GET", "PUT", "DELETE"):
        expect_error(srv.request(method, files(sid), params={"path": long}, data=b""), 400, "path_too_long")
    expect_error(srv.post(files(sid, "mkdir"), {"path": long}), 400)
    rel = ("d" * 100 + "/") * 40 + "f" * 56   # 4096 bytes, over the limit once under /home/user
    assert len(rel) == 4096
    expect_error(get(srv, sid, rel), 400, "path_too_long")
    for method in ("GET", "PUT", "DELETE"):
        expect_error(srv.request(method, files(sid), params={"path": "a\x00b"}, data=b"x"), 400, "invalid_path")
    expect_error(srv.request("GET", files(sid, "stat"), params={"path": "/etc/\x00passwd"}), 400, "invalid_path")
    expect_error(srv.post(files(sid, "mkdir"), {"path": "a\u0000b"}), 400, "invalid_request")
    expect_error(srv.request("POST", files(sid, "mkdir"), data=b"{not json"), 400)
    # Messages quote the path: as valid UTF-8, even when the path is not or is cut.
    for raw in (b"\xff\xfe", ("é" * 20 + "/").encode() * 10, b"/tmp/" + b"\xe9" * 200):
        err = expect_error(srv.request("GET", files(sid), params={"path": raw}), 404, "file_not_found")
        assert "cannot read" in err["message"]
    err = expect_error(put(srv, sid, b"/usr/\xff", b"x"), 403)
    name = "n" * 300
    expect_error(put(srv, sid, name, b"x"), 400, "path_too_long")
    expect_error(get(srv, sid, "/home/user"), 400, "is_a_directory")
    expect_error(put(srv, sid, "/home/user", b"x"), 400, "is_a_directory")
    ok_put(srv, sid, "f", b"x")
    expect_error(get(srv, sid, "f/g"), 400, "not_a_directory")
    bad = "a" * 26
    for method, what in (("GET", ""), ("PUT", ""), ("DELETE", ""), ("GET", "list"), ("GET", "stat")):
        expect_error(srv.request(method, files(bad, what), params={"path": "x"}, data=b""), 404, "sandbox_not_found")
    expect_error(srv.post(files(bad, "mkdir"), {"path": "x"}), 404, "sandbox_not_found")
    expect_error(srv.post(files(bad, "move"), {"from": "x", "to": "y"}), 404, "sandbox_not_found")
    expect_error(srv.request("PATCH", files(sid), params={"path": "x"}), 405)


# ---- path attacks (invariant 7), with help from inside ----

@pytest.fixture
def attacked(srv, sid, host_marker):
    """A sandbox with the attacker's traps laid and an attacker process
    inside holding a FIFO open (so a careless open would succeed, and a
    careless read would block)."""
    mark = os.path.basename(host_marker)
    srv.sh(sid, f"cd /home/user && ln -s / evil && ln -s /proc/self/fd/3 fd3 && ln -s /proc/1/root initroot && "
                f"ln -s /proc/self/root selfroot && mkfifo fifo && echo sandbox-tmp > /tmp/{mark} && "
                f"ln -s evil/tmp/{mark} marklink")
    pid = srv.post(f"/v1/sandboxes/{sid}/processes",
                   {"cmd": "exec 3<>/home/user/fifo; ln -sf /proc/$$/root /home/user/pidroot; "
                           "ln -sf /proc/$$/cwd /home/user/pidcwd; while :; do sleep 1; done"}).json()["pid"]
    deadline = time.monotonic() + 10
    while stat(srv, sid, "pidcwd").status_code != 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    yield sid, host_marker, mark
    srv.post(f"/v1/sandboxes/{sid}/processes/{pid}/signal", {"signal": "KILL"})


def no_host_content(r, *host_paths):
    for p in host_paths:
        content = host_file(p)
        if content:
            assert content not in r.content or r.status_code != 200, f"host file {p} came through: {r.text[:200]}"


def test_symlink_to_root_stays_in_the_sandbox(srv, attacked):
    sid, marker, mark = attacked
    secret_before = host_file(marker)
    r = get(srv, sid, "/home/user/evil/etc/shadow")
    expect_error(r, 404, "file_not_found")
    r = get(srv, sid, "evil/etc/passwd")
    expect(r, 200)
    assert r.content != host_file("/etc/passwd")
    assert r.content.decode() == srv.sh(sid, "cat /etc/passwd")
    # evil/tmp is the sandbox's /tmp, never the host's.
    assert ok_get(srv, sid, f"evil/tmp/{mark}") == b"sandbox-tmp\n"
    assert ok_get(srv, sid, "marklink") == b"sandbox-tmp\n"
    ok_put(srv, sid, f"evil/tmp/{mark}", b"pwned\n")
    ok_put(srv, sid, "marklink", b"pwned again\n")
    assert srv.sh(sid, f"cat /tmp/{mark}") == "pwned again\n"
    assert host_file(marker) == secret_before == b"host secret\n"
    expect_error(put(srv, sid, "evil/etc/shadow", b"x"), 403)
    expect_error(put(srv, sid, "evil/new-at-root", b"x"), 403)
    assert not os.path.exists("/new-at-root")
    names = {e["name"] for e in listing(srv, sid, "evil").json()["entries"]}
    assert "home" in names and not os.path.exists(f"/tmp/{mark}-nope")


def test_dotdot_chains_stop_at_the_root(srv, attacked):
    sid, marker, mark = attacked
    for p in ("../../../../../../etc/shadow", "/../../../../etc/shadow", "/home/user/../../../../../../etc/shadow",
              "evil/../../../../etc/shadow", "/tmp/../../../../../etc/shadow"):
        r = get(srv, sid, p)
        expect_error(r, 404, "file_not_found")
        no_host_content(r, "/etc/shadow")
    for p in (f"../../../../../../tmp/{mark}", f"/../../tmp/{mark}", f"evil/../../tmp/{mark}"):
        r = get(srv, sid, p)
        expect(r, 200)
        assert r.content == b"sandbox-tmp\n"
    assert ok_get(srv, sid, "../../../../../../etc/hostname") == srv.sh(sid, "cat /etc/hostname").encode()
    assert host_file(marker) == b"host secret\n"


def test_proc_magic_links_are_refused(srv, attacked):
    sid, marker, mark = attacked
    for p in ("/proc/self/root/etc/passwd", "/proc/1/root/etc/passwd", f"/proc/self/root/tmp/{mark}",
              "/proc/1/cwd/etc/passwd", "initroot/etc/passwd", "selfroot/etc/passwd", "fd3",
              "/proc/self/fd/3", "/proc/1/fd/3", "pidroot/etc/passwd", "pidcwd/fifo", "/proc/1/exe"):
        for method in ("GET", "PUT"):
            r = srv.request(method, files(sid), params={"path": p}, data=b"x", timeout=10)
            assert r.status_code in (400, 403, 404), f"{method} {p}: {r.status_code} {r.text[:200]}"
            no_host_content(r, "/etc/passwd", marker)
        expect_error(get(srv, sid, p), 400)
    # /proc files are not served at all (here /proc/self would be init).
    for p in ("/proc/self/status", "/proc/1/environ", "/proc/self/mem", "/proc/cpuinfo"):
        expect_error(get(srv, sid, p), 400, "unsupported_file")
    # A stat of a magic link does not describe init's fds.
    st = stat(srv, sid, "/proc/self/fd/3").json()
    assert st["type"] == "symlink" and "target" not in st
    assert host_file(marker) == b"host secret\n"


def test_fifo_and_devices_fail_fast(srv, attacked):
    sid, _, _ = attacked
    for p in ("fifo", "/home/user/fifo", "/dev/tty", "/dev/zero", "/dev/null", "/dev/urandom", "/dev/ptmx"):
        for method in ("GET", "PUT"):
            t0 = time.monotonic()
            r = srv.request(method, files(sid), params={"path": p}, data=b"x", timeout=5)
            assert time.monotonic() - t0 < 2.5, f"{method} {p} took too long"
            err = expect_error(r, 400)
            assert err["code"] in ("not_a_regular_file", "symlink_refused"), err
            if err["code"] == "not_a_regular_file":
                assert "regular file" in err["message"]
    # Init is still responsive, and the FIFO still has its writer.
    assert ok_put(srv, sid, "after.txt", b"ok")["size"] == 2
    assert srv.sh(sid, "ls -l /home/user/fifo | cut -c1") == "p\n"


def test_rename_race_never_reaches_the_host(srv, attacked):
    """Processes inside swap a directory and a symlink to / as fast as they
    can while the test reads and writes through the path; whatever wins
    each race, nothing outside the sandbox is read or written."""
    sid, marker, mark = attacked
    token = f"xbrace-{os.getpid()}-{time.monotonic_ns()}"
    srv.sh(sid, f"mkdir -p /home/user/race/real/tmp /home/user/race2/real/tmp && "
                f"echo sandbox-real > /home/user/race/real/tmp/{mark} && "
                f"echo sandbox-real > /home/user/race2/real/tmp/{mark} && "
                f"cd /home/user/race && mv real d && ln -s / link && "
                f"cd /home/user/race2 && mv real d && ln -s / link")
    # One attacker renames with mv in a shell loop; another swaps atomically
    # with renameat2(RENAME_EXCHANGE), so the path always exists.
    srv.post(f"/v1/sandboxes/{sid}/processes",
             {"cmd": "cd /home/user/race && while :; do mv -T d real; mv -T link d; mv -T d link; mv -T real d; done"})
    swap = ("import ctypes, os\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "os.chdir('/home/user/race2')\n"
            "while True:\n"
            "    libc.renameat2(-100, b'd', -100, b'link', 2)\n")
    srv.post(f"/v1/sandboxes/{sid}/processes", {"cmd": f"python3 -c \"{swap}\""})
    time.sleep(0.3)
    host_tmp_before = set(os.listdir("/tmp"))
    seen: dict[str, int] = {}
    bad: list[str] = []
    lock = threading.Lock()
    stop = time.monotonic() + 4
    shadow = host_file("/etc/shadow") or b"\0no shadow\0"

    def hammer(k: int):
        s = requests.Session()
        n = 0
        while time.monotonic() < stop:
            n += 1
            base = ("race", "race2")[n % 2]
            reads = [f"/home/user/{base}/d/tmp/{mark}", f"/home/user/{base}/d/etc/shadow",
                     f"/home/user/{base}/d/../d/tmp/{mark}"]
            for p in reads:
                r = s.get(srv.url + files(sid), params={"path": p}, timeout=10)
                with lock:
                    key = f"GET {r.status_code} {r.content[:20]!r}" if r.status_code == 200 else f"GET {r.status_code}"
                    seen[key] = seen.get(key, 0) + 1
                # b"": read between another thread's truncate and its write.
                if r.status_code == 200 and r.content not in (b"sandbox-real\n", b"sandbox-tmp\n", b"") \
                        and not r.content.startswith(b"written-by-test"):
                    bad.append(f"GET {p} returned {r.content[:100]!r}")
                if b"host secret" in r.content or shadow in r.content:
                    bad.append(f"GET {p} returned host content")
            for p in (f"/home/user/{base}/d/tmp/{mark}", f"/home/user/{base}/d/tmp/{token}-{k}-{n}",
                      f"/home/user/{base}/d/{token}-{k}-{n}"):
                r = s.put(srv.url + files(sid), params={"path": p}, data=b"written-by-test\n", timeout=10)
                with lock:
                    key = f"PUT {r.status_code}"
                    seen[key] = seen.get(key, 0) + 1
                if r.status_code >= 500 and r.status_code != 503:
                    bad.append(f"PUT {p}: {r.status_code} {r.text[:200]}")
    threads = [threading.Thread(target=hammer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad, bad[:10]
    assert host_file(marker) == b"host secret\n", "the host's marker changed"
    new = {n for n in set(os.listdir("/tmp")) - host_tmp_before if n.startswith(token)}
    assert not new, f"files appeared in the host's /tmp: {new}"
    assert not [n for n in os.listdir("/") if n.startswith(token)], "files appeared in the host's /"
    assert any(k.startswith("GET 200") for k in seen), seen
    assert any(k.startswith("PUT 200") for k in seen), seen
    # The race did land both ways: through the real directory and through /.
    assert any("sandbox-tmp" in k or "written-by" in k for k in seen), seen
    out = srv.sh(sid, f"ls /tmp | grep -c {token} || true; ls /home/user/race/*/tmp | grep -c {token} || true")
    assert sum(int(x) for x in out.split()) > 0, "no PUT landed anywhere: the race was not exercised"
    assert srv.sh(sid, "echo alive") == "alive\n"
