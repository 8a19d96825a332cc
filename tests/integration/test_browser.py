"""Browser-borne requests (issue 12, section 3; design.md invariant 13).

A web page can make a browser send a "simple" cross-origin POST (text/plain,
no preflight) to a local server, or rebind its own DNS name to 127.0.0.1 so
that the browser thinks the server is same-origin. Each attack here is sent
as a browser would send it, with a marker file that proves whether the code
ran, and a positive control that runs the same code the legitimate way."""
from __future__ import annotations

import json

import requests

from server_fixture import expect, expect_error, server, server_factory  # noqa: F401

EVIL = "http://evil.example"
TOKEN = "browser-test-token-0123456789abcdef"


def ran(srv, sid, marker: str) -> bool:
    out = srv.exec(sid, cmd=f"test -e /tmp/{marker} && echo yes || echo no")["stdout"]
    return out.strip() == "yes"


def raw(srv, method, path, body=b"", headers=None, token=None):
    h = dict(headers or {})
    if token:
        h["Authorization"] = f"Bearer {token}"
    return requests.request(method, srv.url + path, data=body, headers=h, timeout=30)


def test_text_plain_exec_from_a_foreign_origin_is_refused(server):
    sid = server.create()["id"]
    body = json.dumps({"cmd": "touch /tmp/csrf1"})
    # The CSRF a page can send: a simple POST, text/plain, with its Origin.
    r = raw(server, "POST", f"/v1/sandboxes/{sid}/exec", body, {"Content-Type": "text/plain", "Origin": EVIL})
    expect_error(r, 403, "forbidden_origin")
    assert "Access-Control-Allow-Origin" not in r.headers
    # Without an Origin (an old browser, a form from file://): the type alone refuses it.
    r = raw(server, "POST", f"/v1/sandboxes/{sid}/exec", body, {"Content-Type": "text/plain"})
    err = expect_error(r, 415, "unsupported_media_type")
    assert "application/json" in err["hint"]
    r = raw(server, "POST", f"/v1/sandboxes/{sid}/exec", body,
            {"Content-Type": "application/x-www-form-urlencoded"})
    expect_error(r, 415, "unsupported_media_type")
    assert not ran(server, sid, "csrf1"), "the cross-origin exec ran its command"
    # Control: the same body as JSON from a program runs.
    r = raw(server, "POST", f"/v1/sandboxes/{sid}/exec", body, {"Content-Type": "application/json; charset=utf-8"})
    expect(r, 200)
    assert ran(server, sid, "csrf1")


def test_a_foreign_origin_is_refused_even_with_the_token(server_factory):
    srv = server_factory(tokens=[TOKEN])
    for method, path in [("GET", "/v1/sandboxes"), ("POST", "/v1/sandboxes"), ("GET", "/v1/nowhere"),
                         ("OPTIONS", "/v1/sandboxes"), ("GET", "/healthz")]:
        r = raw(srv, method, path, b"{}" if method == "POST" else b"",
                {"Origin": EVIL, "Content-Type": "application/json"}, token=TOKEN)
        expect_error(r, 403, "forbidden_origin")
    assert raw(srv, "GET", "/v1/sandboxes", token=TOKEN).json()["sandboxes"] == [], "a sandbox was created"
    # "null" (a sandboxed iframe, file://) is foreign too.
    expect_error(raw(srv, "GET", "/v1/sandboxes", headers={"Origin": "null"}, token=TOKEN), 403)
    # Control: the server's own pages are same-origin.
    r = raw(srv, "GET", "/v1/sandboxes", headers={"Origin": srv.url}, token=TOKEN)
    expect(r, 200)


def test_allow_origin_lets_a_named_page_in(server_factory):
    srv = server_factory("--allow-origin", "https://chat.example.com", tokens=[TOKEN])
    r = raw(srv, "POST", "/v1/sandboxes", b"{}", {"Origin": "https://chat.example.com",
                                                  "Content-Type": "application/json"}, token=TOKEN)
    expect(r, 201)
    assert r.headers["Access-Control-Allow-Origin"] == "https://chat.example.com"
    expect_error(raw(srv, "GET", "/v1/sandboxes", headers={"Origin": "https://chat.example.com.evil"},
                     token=TOKEN), 403, "forbidden_origin")
    srv.remove(r.json()["id"])


def test_dns_rebinding_host_is_refused(server):
    """The page at http://evil.example:PORT rebinds evil.example to
    127.0.0.1: the browser sends Host evil.example:PORT and, same-origin in
    its eyes, Origin http://evil.example:PORT."""
    sid = server.create()["id"]
    host = f"evil.example:{server.port}"
    attacks = [("GET", "/v1/sandboxes", b"", {}),
               ("GET", f"/v1/sandboxes/{sid}/files?path=/etc/passwd", b"", {}),
               ("POST", f"/v1/sandboxes/{sid}/exec", json.dumps({"cmd": "touch /tmp/rebind"}).encode(),
                {"Content-Type": "application/json"}),
               ("PUT", f"/v1/sandboxes/{sid}/files?path=/tmp/rebind", b"x", {}),
               ("POST", "/exec", json.dumps({"command": "touch /tmp/rebind"}).encode(),
                {"Content-Type": "application/json"}),
               ("DELETE", f"/v1/sandboxes/{sid}", b"", {})]
    for method, path, body, extra in attacks:
        for origin in (None, f"http://{host}"):
            h = dict(extra, Host=host)
            if origin:
                h["Origin"] = origin
            r = raw(server, method, path, body, h)
            expect_error(r, 421, "forbidden_host")
    assert not ran(server, sid, "rebind"), "a request with a rebound Host reached the sandbox"
    # Public documents hold nothing of a tenant's: any Host (a proxy's) reads them.
    expect(raw(server, "GET", "/healthz", headers={"Host": host}), 200)
    # Control: the loopback names (any case, any port) are fine, and so is a
    # single-label name, which no page's DNS can give an address.
    for h in ("127.0.0.1", f"LOCALHOST:{server.port}", f"[::1]:{server.port}", "[::1]", "x", "devbox:8000"):
        expect(raw(server, "GET", "/v1/sandboxes", headers={"Host": h}), 200)
    # A look-alike is not loopback.
    for h in (f"127.0.0.1.evil.example:{server.port}", "localhost.evil", "localhost:80x", "user@127.0.0.1", "[::1]x",
              "[::2]:80", "localhost:"):
        expect_error(raw(server, "GET", "/v1/sandboxes", headers={"Host": h}), 421, "forbidden_host")


def test_allow_host_and_public_url_name_the_server(server_factory):
    srv = server_factory("--allow-host", "execbox.example.test", "--allow-host", "proxy.example.test:8443",
                         "--public-url", "https://public.example.test")
    for h in ("execbox.example.test", "EXECBOX.example.test:8000", "proxy.example.test:8443",
              "public.example.test"):
        expect(raw(srv, "GET", "/v1/sandboxes", headers={"Host": h}), 200)
    for h in ("proxy.example.test:9999", "execbox.example.test.evil", "public.example.test:1"):
        expect_error(raw(srv, "GET", "/v1/sandboxes", headers={"Host": h}), 421, "forbidden_host")


def test_plugin_routes_are_guarded_alike(server):
    body = json.dumps({"command": "echo hi"})
    expect_error(raw(server, "POST", "/exec", body, {"Content-Type": "text/plain", "Origin": EVIL}), 403,
                 "forbidden_origin")
    expect_error(raw(server, "POST", "/exec", body, {"Content-Type": "text/plain"}), 415,
                 "unsupported_media_type")
    expect_error(raw(server, "POST", "/api/run_cell", json.dumps({"code": "1"}), {"Content-Type": "text/plain"}),
                 415, "unsupported_media_type")


def test_uploads_take_any_type_a_page_cannot_send_them(server):
    """A PUT is never a simple request (a page needs a preflight, which a
    foreign Origin fails), so a streamed upload keeps taking any type; a
    foreign Origin or Host is refused as everywhere."""
    sid = server.create()["id"]
    path = f"/v1/sandboxes/{sid}/files?path=/tmp/up"
    for ct in (None, "application/octet-stream", "image/png", "application/x-www-form-urlencoded"):
        r = raw(server, "PUT", path, b"bytes", {"Content-Type": ct} if ct else {})
        assert r.status_code in (200, 201), (ct, r.status_code, r.text)
    expect_error(raw(server, "PUT", path, b"evil", {"Origin": EVIL}), 403, "forbidden_origin")
    expect_error(raw(server, "PUT", path, b"evil", {"Host": f"evil.example:{server.port}"}), 421, "forbidden_host")
    assert server.sh(sid, "cat /tmp/up") == "bytes"
    # JSON routes: an explicit non-JSON type is refused, none at all is the API's JSON.
    expect_error(raw(server, "POST", f"/v1/sandboxes/{sid}/exec", json.dumps({"cmd": "true"}),
                     {"Content-Type": "application/octet-stream"}), 415, "unsupported_media_type")
    expect(raw(server, "POST", f"/v1/sandboxes/{sid}/exec", json.dumps({"cmd": "true"})), 200)
    # Bodiless POSTs carry nothing a page chose, whatever their type.
    expect(raw(server, "POST", f"/v1/sandboxes/{sid}/keepalive", b"",
               {"Content-Type": "application/x-www-form-urlencoded"}), 200)


def test_piston_takes_text_plain_json_but_never_from_a_foreign_origin(server):
    """npm's piston-client posts its JSON as text/plain (fetch with a string
    body), so Piston's execute route takes that type; a page of a foreign
    origin still cannot use it (browsers send Origin with every cross-origin
    POST), and other routes still refuse it."""
    body = json.dumps({"language": "python", "version": "*", "files": [{"content": "print(6 * 7)"}]})
    plain = {"Content-Type": "text/plain;charset=UTF-8"}
    expect_error(raw(server, "POST", "/api/v2/execute", body, dict(plain, Origin=EVIL)), 403, "forbidden_origin")
    r = raw(server, "POST", "/api/v2/execute", body, plain)
    expect(r, 200)
    assert r.json()["run"]["stdout"] == "42\n", r.json()
    expect_error(raw(server, "POST", "/v1/sandboxes", "{}", plain), 415, "unsupported_media_type")
