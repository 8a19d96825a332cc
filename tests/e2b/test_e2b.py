"""The unmodified E2B JS SDKs against the real daemon (tests/e2b/*.mjs,
each printing "ok NAME" or "FAIL NAME: why" per check), and the wire
itself as E2B's other clients (the Python SDK among them, which cannot be
installed here) send it: the control plane, Host-based routing, Connect
envelopes and errors."""
from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import HERE, TOKENS

SCRIPTS = ["sandbox", "commands", "pty", "files", "interp", "errors"]


def sdk_env(srv) -> dict:
    env = dict(os.environ)
    env.update(E2B_API_URL=srv.url, E2B_SANDBOX_URL=srv.url, E2B_API_KEY=TOKENS[0], E2B_API_KEY_B=TOKENS[1])
    env.pop("E2B_DOMAIN", None)
    env.pop("E2B_DEBUG", None)
    return env


def run_script(srv, sdk_modules, tmp_path, script, env=None):
    for f in ("lib.mjs", f"{script}.mjs"):
        shutil.copy(os.path.join(HERE, f), tmp_path / f)
    os.symlink(sdk_modules, tmp_path / "node_modules")
    return subprocess.run(["node", str(tmp_path / f"{script}.mjs")], capture_output=True, text=True, timeout=300,
                          env=dict(sdk_env(srv), **(env or {})), cwd=str(tmp_path))


def registry_url() -> str | None:
    """npm's configured registry: the one outside host these machines reach."""
    try:
        r = subprocess.run(["npm", "config", "get", "registry"], capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    url = r.stdout.strip()
    return url if url.startswith("http") else None


def test_sdk_egress(srv, sdk_modules, tmp_path):
    url = registry_url()
    if not url:
        pytest.skip("npm has no registry configured")
    r = run_script(srv, sdk_modules, tmp_path, "egress", {"E2B_TEST_URL": url})
    failed = [ln for ln in r.stdout.splitlines() if ln.startswith("FAIL")]
    assert r.returncode == 0 and not failed, "\n".join(failed) + r.stderr[-1000:]


@pytest.mark.parametrize("script", SCRIPTS)
def test_sdk_script(srv, sdk_modules, tmp_path, script):
    r = run_script(srv, sdk_modules, tmp_path, script)
    lines = r.stdout.splitlines()
    failed = [ln for ln in lines if ln.startswith("FAIL")]
    passed = [ln for ln in lines if ln.startswith("ok ")]
    assert r.returncode == 0 and not failed and passed, \
        f"{script}: rc={r.returncode}\n" + "\n".join(failed) + f"\nstdout tail: {r.stdout[-1500:]}\nstderr: {r.stderr[-1500:]}"


def call(srv, method, path, body=None, headers=None, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(srv.url + path, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def api(srv, method, path, body=None, key=TOKENS[0]):
    h = {"X-API-KEY": key, "Content-Type": "application/json"}
    st, hd, b = call(srv, method, path, body, h)
    return st, (json.loads(b) if b else None)


def envelope(msg: dict) -> bytes:
    js = json.dumps(msg).encode()
    return struct.pack(">BI", 0, len(js)) + js


def envelopes(data: bytes) -> list[tuple[int, dict]]:
    out, off = [], 0
    while off < len(data):
        flags, n = struct.unpack(">BI", data[off:off + 5])
        out.append((flags, json.loads(data[off + 5:off + 5 + n])))
        off += 5 + n
    return out


@pytest.fixture
def sandbox(srv):
    st, sb = api(srv, "POST", "/v2/sandboxes", {"templateID": "base", "timeout": 120})
    assert st == 201, sb
    yield sb
    api(srv, "DELETE", f"/sandboxes/{sb['sandboxID']}")


def test_create_shape_and_templates(srv, sandbox):
    for k in ("sandboxID", "templateID", "clientID", "envdVersion", "envdAccessToken"):
        assert k in sandbox, k
    st, sb = api(srv, "POST", "/sandboxes", {"templateID": "code-interpreter-v1"})
    assert st == 201 and sb["templateID"] == "code-interpreter-v1"
    api(srv, "DELETE", f"/sandboxes/{sb['sandboxID']}")
    st, e = api(srv, "POST", "/v2/sandboxes", {"templateID": "no-such-template"})
    assert st == 404 and e["code"] == 404 and "base" in e["message"]


@pytest.mark.parametrize("body,word", [
    ({"autoResume": {"enabled": True}}, "autoPause"),
    ({"network": {"rules": {"example.com": [{}]}}}, "rules"),
    ({"network": {"allowOut": ["1.1.1.1"], "denyOut": ["10.0.0.0/8"]}}, "allowOut"),
    ({"volumeMounts": [{"name": "v", "path": "/mnt"}]}, "volume"),
])
def test_unsupported_create_options_are_refused(srv, body, word):
    st, e = api(srv, "POST", "/v2/sandboxes", dict(body, templateID="base"))
    assert st == 400 and word in e["message"], e


@pytest.mark.parametrize("path", ["/sandboxes", "/v2/sandboxes"])
def test_auto_pause_on_both_create_bodies(srv, path):
    st, sb = api(srv, "POST", path, {"templateID": "base", "timeout": 1, "autoPause": True})
    assert st == 201, sb
    sid = sb["sandboxID"]
    try:
        st, info = api(srv, "GET", f"/sandboxes/{sid}")
        assert info["lifecycle"] == {"onTimeout": "pause", "autoResume": False}
        for _ in range(50):
            st, info = api(srv, "GET", f"/sandboxes/{sid}")
            if info["state"] == "paused":
                break
            time.sleep(0.1)
        assert info["state"] == "paused", info
        st, _ = api(srv, "POST", f"/sandboxes/{sid}/resume", {"timeout": 60})
        assert st == 201
        st, info = api(srv, "GET", f"/sandboxes/{sid}")
        assert info["state"] == "running"
    finally:
        api(srv, "DELETE", f"/sandboxes/{sid}")


def test_creates_meet_the_tenant_quota_and_the_ceilings(execbox, tmp_path):
    """E2B creates go through the engine's create op: a token's quota is
    429 as on REST, and the server's own limits apply."""
    import server_fixture
    key = "e2b_" + "ab" * 20
    s = server_fixture.start_server(execbox, str(tmp_path), "--max-memory", "256M", "--memory", "256M",
                                    tokens=[f"{key} sandboxes=1"], pool=0)
    try:
        h = {"X-API-KEY": key, "Content-Type": "application/json"}
        st, _, b = call(s, "POST", "/v2/sandboxes", {"templateID": "base"}, h)
        assert st == 201, b
        first = json.loads(b)["sandboxID"]
        st, hd, b = call(s, "POST", "/v2/sandboxes", {"templateID": "base"}, h)
        assert st == 429 and json.loads(b)["code"] == 429, b
        st, _, b = call(s, "GET", f"/sandboxes/{first}", None, h)
        assert json.loads(b)["memoryMB"] == 256, b
        call(s, "DELETE", f"/sandboxes/{first}", None, h)
    finally:
        problems = server_fixture.finish_server(s)
    assert not problems, problems


def test_auth_is_required_and_per_tenant(srv, sandbox):
    st, e = api(srv, "GET", "/v2/sandboxes", key="e2b_" + "0" * 40)
    assert st == 401 and e["code"] == 401
    st, e = api(srv, "GET", f"/sandboxes/{sandbox['sandboxID']}", key=TOKENS[1])
    assert st == 404
    st, lst = api(srv, "GET", "/sandboxes", key=TOKENS[1])
    assert st == 200 and sandbox["sandboxID"] not in [s["sandboxID"] for s in lst]


def test_envd_by_header_needs_the_access_token(srv, sandbox):
    sid, tok = sandbox["sandboxID"], sandbox["envdAccessToken"]
    h = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983", "Content-Type": "application/json"}
    st, _, b = call(srv, "POST", "/filesystem.Filesystem/Stat", {"path": "/home/user"}, h)
    assert st == 401, b
    st, _, b = call(srv, "POST", "/filesystem.Filesystem/Stat", {"path": "/home/user"}, dict(h, **{"X-Access-Token": tok}))
    assert st == 200 and json.loads(b)["entry"]["type"] == "FILE_TYPE_DIRECTORY"
    st, _, b = call(srv, "POST", "/filesystem.Filesystem/Stat", {"path": "/nope"}, dict(h, **{"X-Access-Token": tok}))
    assert st == 404 and json.loads(b)["code"] == "not_found"
    st, _, b = call(srv, "GET", "/health", None, {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983"})
    assert st == 204


def test_envd_by_host_name(srv, sandbox):
    """E2B_DOMAIN behind a proxy: Host "49983-<id>.<domain>" routes to envd."""
    sid, tok = sandbox["sandboxID"], sandbox["envdAccessToken"]
    host = {"Host": f"49983-{sid}.e2b.example.test", "X-Access-Token": tok}
    st, _, b = call(srv, "POST", "/process.Process/Start", headers=dict(host, **{"Content-Type": "application/connect+json"}),
                    raw=envelope({"process": {"cmd": "/bin/echo", "args": ["via", "host"]}}))
    assert st == 200, b
    evs = envelopes(b)
    assert evs[0][1]["event"]["start"]["pid"] > 0
    out = b"".join(base64.b64decode(m["event"]["data"]["stdout"]) for f, m in evs
                   if "event" in m and "data" in m["event"] and "stdout" in m["event"]["data"])
    assert out == b"via host\n"
    ends = [m["event"]["end"] for f, m in evs if "event" in m and "end" in m["event"]]
    assert ends == [{"exitCode": 0, "exited": True, "status": "exit status 0"}]
    assert evs[-1] == (2, {})
    st, _, b = call(srv, "GET", "/health", None, {"Host": f"49983-{'a' * 26}.e2b.example.test"})
    assert st == 502 and json.loads(b)["code"] == 502


def test_connect_stream_errors(srv, sandbox):
    sid, tok = sandbox["sandboxID"], sandbox["envdAccessToken"]
    h = {"E2b-Sandbox-Id": sid, "X-Access-Token": tok, "Content-Type": "application/connect+json"}
    st, _, b = call(srv, "POST", "/process.Process/Connect", headers=h, raw=envelope({"process": {"pid": 999999}}))
    assert st == 200
    assert envelopes(b)[-1] == (2, {"error": {"code": "not_found", "message": envelopes(b)[-1][1]["error"]["message"]}})
    # A streaming call's errors are the stream's end, which is all a Connect
    # client reads of a streaming reply.
    for raw in (b"\x01\x00\x00\x00\x02{}", b"\x00\x00\x00\x10{}", envelope({"process": {}})):
        st, _, b = call(srv, "POST", "/process.Process/Start", headers=h, raw=raw)
        assert st == 200 and envelopes(b)[-1][0] == 2, b
        assert envelopes(b)[-1][1]["error"]["code"] == "invalid_argument", b
    hj = dict(h, **{"Content-Type": "application/json"})
    st, _, b = call(srv, "POST", "/process.Process/SendInput", raw=b"[1]", headers=hj)
    assert st == 400 and json.loads(b)["code"] == "invalid_argument", "unary errors are plain JSON"


def test_files_octet_stream_and_multipart(srv, sandbox):
    sid, tok = sandbox["sandboxID"], sandbox["envdAccessToken"]
    h = {"E2b-Sandbox-Id": sid, "X-Access-Token": tok}
    st, _, b = call(srv, "POST", "/files?path=/home/user/raw.bin", headers=dict(h, **{"Content-Type": "application/octet-stream"}),
                    raw=b"\x00\x01raw")
    assert st == 200 and json.loads(b)[0]["path"] == "/home/user/raw.bin"
    st, _, b = call(srv, "GET", "/files?path=/home/user/raw.bin", headers=h)
    assert st == 200 and b == b"\x00\x01raw"
    bnd = "xbBOUNDARY"
    body = (f"--{bnd}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"/home/user/m1.txt\"\r\n\r\none\r\n"
            f"--{bnd}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"m2.txt\"\r\n\r\ntwo\r\n--{bnd}--\r\n")
    st, _, b = call(srv, "POST", "/files", headers=dict(h, **{"Content-Type": f"multipart/form-data; boundary={bnd}"}),
                    raw=body.encode())
    assert st == 200 and [f["path"] for f in json.loads(b)] == ["/home/user/m1.txt", "/home/user/m2.txt"]
    st, _, b = call(srv, "GET", "/files?path=m2.txt", headers=h)
    assert b == b"two"
    st, _, b = call(srv, "GET", "/files?path=/home/user/missing", headers=h)
    assert st == 404 and json.loads(b)["code"] == 404


def test_files_octet_stream_upload_streams_past_the_body_limit(srv, sandbox):
    """A raw body with ?path= streams into the file (through the sandbox's
    writer): past the 16 MiB JSON body limit, byte for byte; so does a
    multipart body now, parsed as it comes (it was buffered, and 413 past
    that limit)."""
    import hashlib
    sid, tok = sandbox["sandboxID"], sandbox["envdAccessToken"]
    h = {"E2b-Sandbox-Id": sid, "X-Access-Token": tok}
    data = os.urandom(1 << 20) * 40
    st, _, b = call(srv, "POST", "/files?path=/tmp/big.bin", headers=dict(h, **{"Content-Type": "application/octet-stream"}),
                    raw=data)
    assert st == 200 and json.loads(b) == [{"name": "big.bin", "type": "file", "path": "/tmp/big.bin"}], b
    h2 = dict(h, **{"E2b-Sandbox-Port": "49983", "Content-Type": "application/connect+json"})
    st, _, b = call(srv, "POST", "/process.Process/Start", headers=h2,
                    raw=envelope({"process": {"cmd": "/usr/bin/sha256sum", "args": ["/tmp/big.bin"]}}))
    out = b"".join(base64.b64decode(m["event"]["data"]["stdout"]) for f, m in envelopes(b)
                   if "event" in m and "data" in m["event"] and "stdout" in m["event"]["data"])
    assert out.split()[0].decode() == hashlib.sha256(data).hexdigest()
    bnd = "xbBIG"
    body = (f"--{bnd}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"/tmp/m.bin\"\r\n\r\n".encode() +
            data[:17 << 20] + f"\r\n--{bnd}--\r\n".encode())
    st, _, b = call(srv, "POST", "/files", headers=dict(h, **{"Content-Type": f"multipart/form-data; boundary={bnd}"}),
                    raw=body)
    assert st == 200 and json.loads(b) == [{"name": "m.bin", "type": "file", "path": "/tmp/m.bin"}], (st, b[:300])
    st, _, b = call(srv, "POST", "/process.Process/Start", headers=h2,
                    raw=envelope({"process": {"cmd": "/usr/bin/sha256sum", "args": ["/tmp/m.bin"]}}))
    out = b"".join(base64.b64decode(m["event"]["data"]["stdout"]) for f, m in envelopes(b)
                   if "event" in m and "data" in m["event"] and "stdout" in m["event"]["data"])
    assert out.split()[0].decode() == hashlib.sha256(data[:17 << 20]).hexdigest()


def form_part(bnd, filename, data, name="file"):
    fn = f'; filename="{filename}"' if filename is not None else ""
    return f"--{bnd}\r\nContent-Disposition: form-data; name=\"{name}\"{fn}\r\n\r\n".encode() + data + b"\r\n"


def sh_out(srv, h, cmd):
    h2 = dict(h, **{"E2b-Sandbox-Port": "49983", "Content-Type": "application/connect+json"})
    st, _, b = call(srv, "POST", "/process.Process/Start", headers=h2,
                    raw=envelope({"process": {"cmd": "/bin/sh", "args": ["-c", cmd]}}))
    return b"".join(base64.b64decode(m["event"]["data"]["stdout"]) for f, m in envelopes(b)
                    if "event" in m and "data" in m["event"] and "stdout" in m["event"]["data"]).decode()


def test_files_multipart_semantics_as_envd(srv, sandbox):
    """Streamed multipart, as envd reads it: parts named "file" are files
    (other fields are skipped), each to its filename (relative: below
    /home/user), or to ?path= for a single one; an empty file is a file;
    a preamble and a quoted boundary parse; two files to one path is 400."""
    sid, tok = sandbox["sandboxID"], sandbox["envdAccessToken"]
    h = {"E2b-Sandbox-Id": sid, "X-Access-Token": tok}
    bnd = "----formdata-undici-0123456789"
    body = (b"preamble, ignored\r\n" + form_part(bnd, None, b"a field", name="note") +
            form_part(bnd, "/home/user/s/one.txt", b"1" * 70000 + b"\r\n--not-the-boundary") +
            form_part(bnd, "s/empty.txt", b"") + form_part(bnd, "/tmp/two.txt", b"two") + f"--{bnd}--\r\n".encode())
    st, _, b = call(srv, "POST", "/files", headers=dict(h, **{"Content-Type": f'multipart/form-data; boundary="{bnd}"'}),
                    raw=body)
    assert st == 200, b
    assert json.loads(b) == [{"name": "one.txt", "type": "file", "path": "/home/user/s/one.txt"},
                             {"name": "empty.txt", "type": "file", "path": "/home/user/s/empty.txt"},
                             {"name": "two.txt", "type": "file", "path": "/tmp/two.txt"}], b
    assert sh_out(srv, h, "stat -c %s /home/user/s/one.txt /home/user/s/empty.txt; cat /tmp/two.txt").split() == \
        [str(70000 + 20), "0", "two"]
    # ?path= names the one file.
    body = form_part(bnd, "ignored", b"via path") + f"--{bnd}--\r\n".encode()
    st, _, b = call(srv, "POST", "/files?path=/tmp/q.txt",
                    headers=dict(h, **{"Content-Type": f"multipart/form-data; boundary={bnd}"}), raw=body)
    assert st == 200 and json.loads(b) == [{"name": "q.txt", "type": "file", "path": "/tmp/q.txt"}], b
    assert sh_out(srv, h, "cat /tmp/q.txt") == "via path"
    # Two parts to one path (?path= with two files): the first is written, then 400.
    body = form_part(bnd, "x", b"first") + form_part(bnd, "y", b"second") + f"--{bnd}--\r\n".encode()
    st, _, b = call(srv, "POST", "/files?path=/tmp/dup.txt",
                    headers=dict(h, **{"Content-Type": f"multipart/form-data; boundary={bnd}"}), raw=body)
    assert st == 400 and "same path" in json.loads(b)["message"], b
    assert sh_out(srv, h, "cat /tmp/dup.txt") == "first"


def test_files_multipart_malformed_and_bounds(srv, sandbox):
    """Every malformed or oversized multipart body is a clear 400, and the
    file it was writing is put back (no partial content)."""
    sid, tok = sandbox["sandboxID"], sandbox["envdAccessToken"]
    h = {"E2b-Sandbox-Id": sid, "X-Access-Token": tok}
    bnd = "xbB"
    ct = {"Content-Type": f"multipart/form-data; boundary={bnd}"}

    def post(body, headers=ct):
        st, _, b = call(srv, "POST", "/files", headers=dict(h, **headers), raw=body)
        return st, json.loads(b)
    # Cut short in the second file: the first stays whole, the second is put back.
    st, e = post(form_part(bnd, "/tmp/c1.txt", b"whole") + form_part(bnd, "/tmp/c2.txt", b"x" * 300000)[:-1000])
    assert st == 400 and "malformed" in e["message"] and e["code"] == 400, e
    assert sh_out(srv, h, "cat /tmp/c1.txt; echo; stat -c %s /tmp/c2.txt").split() == ["whole", "0"]
    # Garbage after a boundary where headers or "--" must come.
    st, e = post(f"--{bnd}XX garbage\r\n\r\nzz\r\n--{bnd}--\r\n".encode())
    assert st == 400, e
    # No boundary, a bad one, or a parameter after it.
    for ctype in ("multipart/form-data", 'multipart/form-data; boundary=""', f"multipart/form-data; boundary={'b' * 71}",
                  f"multipart/form-data; boundary={bnd}; charset=utf-8"):
        st, e = post(form_part(bnd, "/tmp/nb.txt", b"x"), {"Content-Type": ctype})
        assert st == 400 and "boundary" in e["message"], (ctype, e)
    # No file parts at all; a file part with no path.
    st, e = post(form_part(bnd, None, b"v", name="field") + f"--{bnd}--\r\n".encode())
    assert st == 400 and "no files" in e["message"], e
    st, e = post(form_part(bnd, None, b"v") + f"--{bnd}--\r\n".encode())
    assert st == 400 and "needs a path" in e["message"], e
    # A part's header line over the parser's 64 KiB buffer.
    long = f"--{bnd}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"/tmp/{'l' * 70000}\"\r\n\r\nx\r\n"
    st, e = post(long.encode() + f"--{bnd}--\r\n".encode())
    assert st == 400 and "64 KiB" in e["message"], e
    # More than 1000 parts.
    st, e = post(b"".join(form_part(bnd, None, b"", name="f") for _ in range(1001)) + f"--{bnd}--\r\n".encode())
    assert st == 400 and "too many parts" in e["message"], e
    assert sh_out(srv, h, "echo alive") == "alive\n"


def test_files_multipart_chunked_body(srv, sandbox):
    """A multipart body without a Content-Length (chunked), as fetch sends
    a streamed FormData, streams the same way: 20 MiB, past the old cap."""
    import http.client
    sid, tok = sandbox["sandboxID"], sandbox["envdAccessToken"]
    bnd = "xbCH"
    chunks = [form_part(bnd, "/tmp/ch.bin", b"")[:-2]] + [bytes([i % 256]) * 65536 for i in range(320)] + \
        [f"\r\n--{bnd}--\r\n".encode()]
    host, port = srv.url.split("//")[1].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    conn.request("POST", "/files", body=iter(chunks), encode_chunked=True,
                 headers={"E2b-Sandbox-Id": sid, "X-Access-Token": tok, "Transfer-Encoding": "chunked",
                          "Content-Type": f"multipart/form-data; boundary={bnd}"})
    resp = conn.getresponse()
    b = resp.read()
    conn.close()
    assert resp.status == 200 and json.loads(b)[0]["path"] == "/tmp/ch.bin", b
    import hashlib
    want = hashlib.sha256(b"".join(chunks[1:-1])).hexdigest()
    h = {"E2b-Sandbox-Id": sid, "X-Access-Token": tok}
    assert sh_out(srv, h, "sha256sum /tmp/ch.bin").split()[0] == want


def test_files_multipart_client_leaving_mid_file_puts_it_back(srv, sandbox):
    """A client that leaves in the middle of a streamed part: the file is put
    back (nothing partial stays), and the sandbox and server carry on."""
    import socket
    sid, tok = sandbox["sandboxID"], sandbox["envdAccessToken"]
    h = {"E2b-Sandbox-Id": sid, "X-Access-Token": tok}
    bnd = "xbGONE"
    head = form_part(bnd, "/tmp/gone.bin", b"")[:-2]
    host, port = srv.url.split("//")[1].rsplit(":", 1)
    req = (f"POST /files HTTP/1.1\r\nHost: {host}:{port}\r\nE2b-Sandbox-Id: {sid}\r\nX-Access-Token: {tok}\r\n"
           f"Content-Type: multipart/form-data; boundary={bnd}\r\nContent-Length: {len(head) + (64 << 20)}\r\n\r\n")
    with socket.create_connection((host, int(port)), timeout=30) as so:
        so.sendall(req.encode() + head)
        chunk = b"g" * (1 << 20)
        for _ in range(24):
            so.sendall(chunk)
        time.sleep(0.5)   # it is in the sandbox's file by now
        assert int(sh_out(srv, h, "stat -c %s /tmp/gone.bin")) > 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and sh_out(srv, h, "stat -c %s /tmp/gone.bin").strip() != "0":
        time.sleep(0.2)
    assert sh_out(srv, h, "stat -c %s /tmp/gone.bin").strip() == "0"
    st, _, b = call(srv, "POST", "/files", headers=dict(h, **{"Content-Type": f"multipart/form-data; boundary={bnd}"}),
                    raw=form_part(bnd, "/tmp/after.txt", b"fine") + f"--{bnd}--\r\n".encode())
    assert st == 200, b


def rest_network(srv, sid, key=TOKENS[0]):
    st, _, b = call(srv, "GET", f"/v1/sandboxes/{sid}/network", headers={"Authorization": f"Bearer {key}"})
    assert st == 200, b
    return json.loads(b)


@pytest.mark.parametrize("body,mode,allow,deny", [
    ({"allow_internet_access": False}, "none", [], []),
    ({"allow_internet_access": False, "network": {"allowOut": ["example.com"]}}, "allowlist", ["example.com"], []),
    ({"network": {"denyOut": ["0.0.0.0/0"], "allowOut": ["*.example.org", "203.0.113.0/24"]}}, "allowlist",
     ["*.example.org", "203.0.113.0/24"], []),
    ({"network": {"denyOut": ["198.51.100.0/24"]}}, "open", [], ["198.51.100.0/24"]),
])
def test_network_options_become_the_egress_policy(srv, body, mode, allow, deny):
    st, sb = api(srv, "POST", "/v2/sandboxes", dict(body, templateID="base"))
    assert st == 201, sb
    try:
        n = rest_network(srv, sb["sandboxID"])
        assert (n["mode"], n["allow"], n["deny"]) == (mode, allow, deny), n
        st, info = api(srv, "GET", f"/sandboxes/{sb['sandboxID']}")
        assert info["allowInternetAccess"] is (mode == "open")
        st, _ = api(srv, "PUT", f"/sandboxes/{sb['sandboxID']}/network", {"allow_internet_access": False})
        assert st == 204
        assert rest_network(srv, sb["sandboxID"])["mode"] == "none"
    finally:
        api(srv, "DELETE", f"/sandboxes/{sb['sandboxID']}")


def test_internet_access_is_the_default(srv, sandbox):
    """E2B sandboxes have internet unless told otherwise (the Python SDK
    always sends allow_internet_access: true)."""
    n = rest_network(srv, sandbox["sandboxID"])
    st, info = api(srv, "GET", f"/sandboxes/{sandbox['sandboxID']}")
    assert n["mode"] == "open" and info["allowInternetAccess"] is True, (n, info)
    st, sb = api(srv, "POST", "/sandboxes", {"templateID": "base", "allow_internet_access": True, "secure": True,
                                             "autoPause": False, "metadata": {}, "envVars": {}, "timeout": 15})
    assert st == 201, sb
    assert rest_network(srv, sb["sandboxID"])["mode"] == "open"
    api(srv, "DELETE", f"/sandboxes/{sb['sandboxID']}")


def test_a_rest_sandbox_is_reachable_through_the_sdk_api(srv):
    """A peer of REST: a sandbox made over /v1 is listed and connectable."""
    st, _, b = call(srv, "POST", "/v1/sandboxes", {}, {"Authorization": f"Bearer {TOKENS[0]}",
                                                       "Content-Type": "application/json"})
    assert st in (200, 201), b
    sid = json.loads(b)["id"]
    try:
        st, lst = api(srv, "GET", "/v2/sandboxes")
        assert sid in [s["sandboxID"] for s in lst]
        st, ref = api(srv, "POST", f"/v2/sandboxes/{sid}/connect", {"timeout": 60})
        assert st == 200 and ref["envdAccessToken"], ref
        h = {"E2b-Sandbox-Id": sid, "X-Access-Token": ref["envdAccessToken"], "Content-Type": "application/json"}
        st, _, b = call(srv, "POST", "/filesystem.Filesystem/Stat", {"path": "/home/user"}, h)
        assert st == 200, b
        st, _ = api(srv, "GET", f"/sandboxes/{sid}", key=TOKENS[1])
        assert st == 404, "another tenant's REST sandbox stays hidden"
    finally:
        call(srv, "DELETE", f"/v1/sandboxes/{sid}", headers={"Authorization": f"Bearer {TOKENS[0]}"})


def test_tags_select_processes(srv, sandbox):
    """StartRequest.tag: List shows it, and a selector {tag} reaches the process."""
    sid, tok = sandbox["sandboxID"], sandbox["envdAccessToken"]
    h = {"E2b-Sandbox-Id": sid, "X-Access-Token": tok}
    hs = dict(h, **{"Content-Type": "application/connect+json", "Connect-Timeout-Ms": "2000"})
    st, _, b = call(srv, "POST", "/process.Process/Start", headers=hs,
                    raw=envelope({"process": {"cmd": "/bin/sleep", "args": ["30"]}, "tag": "my-server"}))
    # The stream ends at its deadline; the process was killed with it.
    assert st == 200 and envelopes(b)[-1][1]["error"]["code"] == "deadline_exceeded", b
    st, _, b = call(srv, "POST", "/process.Process/Start", headers=dict(hs, **{"Connect-Timeout-Ms": "100"}),
                    raw=envelope({"process": {"cmd": "/bin/sleep", "args": ["30"]}, "tag": "second"}))
    hj = dict(h, **{"Content-Type": "application/json"})
    st, _, b = call(srv, "POST", "/process.Process/List", {}, hj)
    assert st == 200
    assert all(p.get("tag") != "my-server" for p in json.loads(b)["processes"]), "killed at its deadline"
    st, _, b = call(srv, "POST", "/process.Process/SendSignal", {"process": {"tag": "nope"}, "signal": "SIGNAL_SIGKILL"},
                    hj)
    assert st == 404 and json.loads(b)["code"] == "not_found"


def test_polled_watchers(srv, sandbox):
    """The Python SDK's watch_dir: CreateWatcher, then GetWatcherEvents."""
    sid, tok = sandbox["sandboxID"], sandbox["envdAccessToken"]
    hj = {"E2b-Sandbox-Id": sid, "X-Access-Token": tok, "Content-Type": "application/json"}
    st, _, b = call(srv, "POST", "/filesystem.Filesystem/CreateWatcher", {"path": "/home/user", "recursive": False}, hj)
    assert st == 200, b
    wid = json.loads(b)["watcherId"]
    hs = dict(hj, **{"Content-Type": "application/connect+json"})
    st, _, b = call(srv, "POST", "/process.Process/Start", headers=hs,
                    raw=envelope({"process": {"cmd": "/bin/sh", "args": ["-c", "echo x > /home/user/polled.txt"]}}))
    assert st == 200
    events = []
    for _ in range(100):
        st, _, b = call(srv, "POST", "/filesystem.Filesystem/GetWatcherEvents", {"watcherId": wid}, hj)
        assert st == 200, b
        events += json.loads(b)["events"]
        if {"name": "polled.txt", "type": "EVENT_TYPE_CREATE"} in events:
            break
        time.sleep(0.02)
    assert {"name": "polled.txt", "type": "EVENT_TYPE_CREATE"} in events, events
    st, _, b = call(srv, "POST", "/filesystem.Filesystem/RemoveWatcher", {"watcherId": wid}, hj)
    assert st == 200, b
    st, _, b = call(srv, "POST", "/filesystem.Filesystem/GetWatcherEvents", {"watcherId": wid}, hj)
    assert st == 404 and json.loads(b)["code"] == "not_found", b
