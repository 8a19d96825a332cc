"""HTTP manners (issue 13, items 5-7): early errors read by real clients,
HEAD, OPTIONS and CORS by an --allow-origin list, signed image links with
--public-url, and a parsed Accept header. Node fetch is in tests/http/run.sh."""
from __future__ import annotations

import re
import time
import urllib.error
import urllib.request

import pytest
import requests

from server_fixture import server, server_factory, expect  # noqa: F401

TOKEN = "manners-token-0123456789abcdef"
BIG = b"x" * (16 << 20)
ORIGIN = "https://chat.example.com"


def urllib_put(url: str, headers: dict) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=BIG, headers=headers, method="PUT")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def early(url: str, headers: dict, status: int, code: str) -> None:
    """requests and urllib both read the error of a 16 MiB upload refused at its headers."""
    r = requests.put(url, data=BIG, headers=headers, timeout=60)
    assert r.status_code == status and r.json()["error"]["code"] == code, r.text[:300]
    assert r.json()["error"]["hint"]
    st, body = urllib_put(url, headers)
    assert st == status and code.encode() in body, (st, body[:300])


def test_early_errors_with_a_big_body(server_factory):
    srv = server_factory(tokens=[TOKEN], pool=0)
    sid = srv.create()["id"]
    auth = {"Authorization": f"Bearer {TOKEN}"}
    files = f"{srv.url}/v1/sandboxes/{sid}/files?path=/tmp/up"
    early(files, {"Authorization": "Bearer wrong-token-0123456789"}, 401, "unauthorized")
    early(f"{srv.url}/v1/sandboxes/aaaaaaaaaaaaaaaaaaaaaaaa/files?path=/tmp/up", auth, 404, "sandbox_not_found")
    early(f"{srv.url}/v1/nowhere", auth, 404, "not_found")
    # a JSON body over --body-max, and the connection is still good after
    r = requests.post(f"{srv.url}/v1/sandboxes/{sid}/exec", data=BIG + b"x", headers=auth, timeout=60)
    assert r.status_code == 413, r.text[:200]
    srv.remove(sid)


def test_early_413_and_expect_100_continue(server_factory):
    srv = server_factory("--upload-max", "1M", tokens=[TOKEN], pool=0)
    sid = srv.create()["id"]
    auth = {"Authorization": f"Bearer {TOKEN}"}
    early(f"{srv.url}/v1/sandboxes/{sid}/files?path=/tmp/up", auth, 413, "body_too_large")
    # Expect: 100-continue gets the error instead of 100 Continue, before any body
    import socket
    host, port = srv.url.split("//")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(f"PUT /v1/sandboxes/{sid}/files?path=/tmp/up HTTP/1.1\r\nHost: x\r\n"
                  f"Authorization: Bearer {TOKEN}\r\nContent-Length: {len(BIG)}\r\n"
                  "Expect: 100-continue\r\n\r\n".encode())
        head = s.recv(4096).decode(errors="replace")
    assert head.startswith("HTTP/1.1 413") and "100 Continue" not in head, head[:300]
    srv.remove(sid)


def test_head_is_get_without_the_body(server):
    sid = server.create()["id"]
    for path in ["/healthz", "/openapi.json", "/v1/guide", "/v1/sandboxes", f"/v1/sandboxes/{sid}",
                 "/v1/sandboxes/aaaaaaaaaaaaaaaaaaaaaaaa"]:
        g = server.get(path)
        h = server.request("HEAD", path)
        assert h.status_code == g.status_code and h.content == b"", (path, h.status_code, h.content[:80])
        assert h.headers.get("Content-Type") == g.headers.get("Content-Type"), path
    server.remove(sid)


def test_cors_follows_the_allowlist(server_factory):
    srv = server_factory("--allow-origin", ORIGIN, "--allow-origin", "http://localhost:3000", tokens=[TOKEN])
    pre = {"Origin": ORIGIN, "Access-Control-Request-Method": "POST",
           "Access-Control-Request-Headers": "authorization, content-type"}
    r = requests.options(f"{srv.url}/v1/sandboxes", headers=pre, timeout=10)
    assert r.status_code == 204, r.text
    assert r.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert {"GET", "POST", "HEAD"} <= {m.strip() for m in r.headers["Access-Control-Allow-Methods"].split(",")}
    assert {"authorization", "content-type"} <= {m.strip().lower()
                                                 for m in r.headers["Access-Control-Allow-Headers"].split(",")}
    assert int(r.headers["Access-Control-Max-Age"]) > 0
    # simple requests, errors included, name the origin
    r = requests.get(f"{srv.url}/v1/sandboxes", headers={"Origin": ORIGIN, "Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert "Origin" in r.headers["Vary"]
    r = requests.get(f"{srv.url}/v1/sandboxes", headers={"Origin": ORIGIN})
    assert r.status_code == 401 and r.headers["Access-Control-Allow-Origin"] == ORIGIN
    # a foreign origin gets no CORS header, preflight or not, and (issue 12,
    # section 3: browsers are not clients unless allowed) 403 even with the token
    for h in [dict(pre, Origin="https://evil.example"), {"Origin": "https://evil.example"}]:
        r = requests.options(f"{srv.url}/v1/sandboxes", headers=h, timeout=10)
        assert not [k for k in r.headers if k.lower().startswith("access-control-")], r.headers
        assert r.status_code == 403, r.status_code
        r = requests.get(f"{srv.url}/v1/sandboxes", headers=dict(h, Authorization=f"Bearer {TOKEN}"))
        assert r.status_code == 403 and "Access-Control-Allow-Origin" not in r.headers


def test_no_cors_by_default(server):
    r = requests.options(f"{server.url}/v1/sandboxes", headers={"Origin": ORIGIN,
                                                                "Access-Control-Request-Method": "GET"})
    # a foreign origin: refused (issue 12, section 3), and no CORS header
    assert r.status_code == 403 and "Access-Control-Allow-Origin" not in r.headers


def test_signed_image_links(server_factory):
    srv = server_factory("--public-url", "https://execbox.example.com/", tokens=[TOKEN], pool=0)
    sid = srv.create()["id"]
    ss = expect(srv.post(f"/v1/sandboxes/{sid}/sessions", {"language": "python"}), 201).json()["id"]
    res = expect(srv.post(f"/v1/sandboxes/{sid}/sessions/{ss}/run",
                          {"code": "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()"},
                          timeout=120), 200).json()
    url = [o for o in res["outputs"] if o.get("url")][0]["url"]
    m = re.fullmatch(rf"https://execbox\.example\.com(/v1/sandboxes/{sid}/images/[^?]+)\?exp=(\d+)&sig=([0-9a-f]{{64}})",
                     url)
    assert m, url
    path, exp, sig = m.group(1), int(m.group(2)), m.group(3)
    assert time.time() < exp <= time.time() + 3700
    ok = requests.get(f"{srv.url}{path}?exp={exp}&sig={sig}")      # no token
    assert ok.status_code == 200 and ok.headers["Content-Type"].startswith("image/png") and ok.content[:4] == b"\x89PNG"
    bad = requests.get(f"{srv.url}{path}?exp={exp}&sig={'0' * 64}")
    assert bad.status_code == 403 and bad.json()["error"]["code"] == "bad_signature" and bad.json()["error"]["hint"]
    bad = requests.get(f"{srv.url}{path}?exp={exp + 1}&sig={sig}")
    assert bad.status_code == 403 and bad.json()["error"]["code"] == "bad_signature"
    # no token and no signature: the usual 401
    r = requests.get(f"{srv.url}{path}")
    assert r.status_code == 401 and r.headers.get("WWW-Authenticate") == "Bearer"
    # the token still works without a signature
    expect(srv.get(path), 200)
    srv.remove(sid)


@pytest.mark.parametrize("accept,json_wanted", [
    ("application/json", True),
    ("application/json;q=0", False),
    ("text/markdown;q=0.2, application/json", True),
    ("application/json, text/markdown", False),
    ("*/*", False),
    ("application/*", True),
    ("application/jsonx", False),
    ("text/*, application/json;q=0.5", False),
])
def test_accept_is_parsed(server, accept, json_wanted):
    r = server.get("/v1/guide", headers={"Accept": accept})
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("application/json") == json_wanted, (accept, r.headers)
