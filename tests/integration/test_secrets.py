"""Secrets (issue 10, part 3): a sandbox uses a secret on the network
without ever holding it. It gets a placeholder in an env var; the egress
proxy swaps in the value, and adds the secret's header, only in requests
to the secret's hosts. The fake internet (fakenet.py) is the upstream: its
/headers page echoes the request it got, so the test sees what the
upstream saw. Every place the sandbox or a client could read the value is
grepped for it, with a positive control that the grep finds a planted copy.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

import fakenet
from server_fixture import expect, finish_server, start_server  # noqa: F401

VALUE = "xbTOPSECRETvalue7f3a91c2d4"
VALUE2 = "xbROTATEDvalue0b8e55d17c"


@pytest.fixture(autouse=True)
def no_leaks():
    yield


@pytest.fixture(scope="module")
def net():
    yield from fakenet.module_net()


@pytest.fixture(scope="module")
def srv(execbox, net, tmp_path_factory):
    yield from fakenet.module_server(execbox, net, tmp_path_factory, "sec")


def run(srv, sid, cmd, user=None, timeout=60):
    body = {"cmd": cmd, "timeout_s": timeout}
    if user:
        body["user"] = user
    return srv.exec(sid, timeout=timeout + 30, **body)


def put_secret(srv, name="GH_TOKEN", hosts=("a.test",), header="Authorization: Bearer {value}", value=VALUE,
               token="default"):
    r = srv.request("POST", "/v1/secrets", json_body={"name": name, "value": value, "hosts": list(hosts),
                                                       "header": header}, token=token)
    expect(r, 201)
    assert VALUE not in r.text
    return r.json()


def sandbox(srv, secrets=("GH_TOKEN",)):
    sb = srv.create(network={"mode": "allowlist", "allow": ["a.test", "b.test"]}, secrets=list(secrets))
    assert VALUE not in json.dumps(sb)
    return sb["id"]


def test_http_injects_only_for_the_secrets_hosts(srv, net):
    put_secret(srv)
    sid = sandbox(srv)
    env = run(srv, sid, "echo $GH_TOKEN")["stdout"].strip()
    assert env.startswith("execbox-secret-") and VALUE not in env, env
    # The secret's host: the header is set (the client's own replaced), and
    # the placeholder anywhere in the head is the value.
    out = run(srv, sid, 'curl -sS -m 10 -H "Authorization: token $GH_TOKEN" -H "X-Key: k=$GH_TOKEN" '
                        '"http://a.test/headers?t=$GH_TOKEN"')["stdout"]
    assert f"Authorization: Bearer {VALUE}" in out, out
    assert "Authorization: token" not in out, out
    assert f"X-Key: k={VALUE}" in out and f"t={VALUE}" in out, out
    assert "execbox-secret-" not in out, out
    # Another host: the placeholder as it was, no header.
    out = run(srv, sid, 'curl -sS -m 10 -H "X-Key: $GH_TOKEN" http://b.test/headers')["stdout"]
    assert VALUE not in out and f"X-Key: {env}" in out and "Bearer" not in out, out


def test_api_never_answers_the_value(srv, net):
    put_secret(srv, name="LISTED")
    r = srv.get("/v1/secrets")
    expect(r, 200)
    names = [s["name"] for s in r.json()["secrets"]]
    assert "LISTED" in names and VALUE not in r.text, r.text
    got = [s for s in r.json()["secrets"] if s["name"] == "LISTED"][0]
    assert got["hosts"] == ["a.test"] and got["header"] == "Authorization: Bearer {value}" and "value" not in got
    r = srv.request("DELETE", "/v1/secrets/LISTED")
    expect(r, 204)
    r = srv.request("DELETE", "/v1/secrets/LISTED")
    expect(r, 404)
    assert r.json()["error"]["code"] == "secret_not_found"


def test_bad_secrets_are_refused_without_echoing_the_value(srv, net):
    for body in ({"name": "1X", "value": VALUE, "hosts": ["a.test"]},
                 {"name": "X", "value": VALUE + "\r\nEvil: 1", "hosts": ["a.test"]},
                 {"name": "X", "value": VALUE, "hosts": []},
                 {"name": "X", "value": VALUE, "hosts": ["10.0.0.0/8"]},
                 {"name": "X", "value": VALUE, "hosts": ["a.test"], "header": "Authorization: Bearer"},
                 {"name": "X", "value": VALUE, "hosts": ["a.test"], "header": "Bad Name: {value}"},
                 {"name": "X", "value": VALUE, "hosts": ["a.test"], "extra": 1}):
        r = srv.request("POST", "/v1/secrets", json_body=body)
        expect(r, 400)
        assert VALUE not in r.text, r.text
    r = srv.request("POST", "/v1/sandboxes", json_body={"secrets": ["NO_SUCH"], "network": "open"})
    expect(r, 404)
    assert r.json()["error"]["code"] == "secret_not_found"


def test_deleted_secret_is_no_longer_sent(srv, net):
    put_secret(srv, name="GONE")
    sid = sandbox(srv, ("GONE",))
    ph = run(srv, sid, "echo $GONE")["stdout"].strip()
    assert VALUE in run(srv, sid, "curl -sS -m 10 http://a.test/headers")["stdout"]
    assert "secrets_waiting" not in expect(srv.get(f"/v1/sandboxes/{sid}"), 200).json()
    expect(srv.request("DELETE", "/v1/secrets/GONE"), 204)
    out = run(srv, sid, 'curl -sS -m 10 -H "X-Key: $GONE" http://a.test/headers')["stdout"]
    assert VALUE not in out and "Bearer" not in out and f"X-Key: {ph}" in out, out
    # The binding waits for a secret of that name, as after a restart...
    assert expect(srv.get(f"/v1/sandboxes/{sid}"), 200).json()["secrets_waiting"] == ["GONE"]
    # ...and one posted again is used, with the placeholder it had.
    put_secret(srv, name="GONE")
    assert "secrets_waiting" not in expect(srv.get(f"/v1/sandboxes/{sid}"), 200).json()
    out = run(srv, sid, 'curl -sS -m 10 -H "X-Key: $GONE" http://a.test/headers')["stdout"]
    assert f"Authorization: Bearer {VALUE}" in out and f"X-Key: {VALUE}" in out, out
    assert run(srv, sid, "echo $GONE")["stdout"].strip() == ph
    expect(srv.request("DELETE", "/v1/secrets/GONE"), 204)


def test_rotation_applies_to_sandboxes_holding_it(srv, net):
    """A POST of an existing name replaces the value, hosts and header for
    the sandboxes that hold it, from their next request; their env stays."""
    put_secret(srv, name="ROT")
    sid = sandbox(srv, ("ROT",))
    ph = run(srv, sid, "echo $ROT")["stdout"].strip()
    out = run(srv, sid, "curl -sS -m 10 http://a.test/headers")["stdout"]
    assert f"Authorization: Bearer {VALUE}" in out and VALUE2 not in out, out
    r = srv.request("POST", "/v1/secrets", json_body={"name": "ROT", "value": VALUE2, "hosts": ["a.test", "b.test"],
                                                       "header": "X-Api-Key: {value}"})
    expect(r, 201)
    assert VALUE2 not in r.text
    out = run(srv, sid, 'curl -sS -m 10 -H "X-Key: $ROT" http://a.test/headers')["stdout"]
    assert f"X-Api-Key: {VALUE2}" in out and f"X-Key: {VALUE2}" in out, out
    assert VALUE not in out and "Bearer" not in out, out
    # The new hosts apply too.
    out = run(srv, sid, "curl -sS -m 10 http://b.test/headers")["stdout"]
    assert f"X-Api-Key: {VALUE2}" in out, out
    assert run(srv, sid, "echo $ROT")["stdout"].strip() == ph
    assert "secret ROT rotated" in srv.stderr()
    assert VALUE2 not in srv.stderr()
    expect(srv.request("DELETE", "/v1/secrets/ROT"), 204)


def grep_tree(root: str, needle: str) -> list[str]:
    """Files under root that hold needle. Binary files too, in grep's binary
    mode: it skips sparse holes (the 32 GB store image) and splits lines at
    NULs (--binary-files=text would buffer the image as one line)."""
    r = subprocess.run(["grep", "-rlsF", "-e", needle, root], capture_output=True, text=True)
    return r.stdout.split()


def test_bindings_survive_a_restart_and_wait_for_the_value(execbox, net, tmp_path):
    """A re-adopted sandbox keeps its binding (name and placeholder, in its
    record) but the value died with the daemon: it waits, visibly, and its
    requests carry the placeholder until the tenant posts the secret again;
    then the same placeholder is swapped again."""
    args = ("--adopt-grace", "60s", "--dns-server", fakenet.DNS_ADDR, "--upstream-ca", net.ca)
    tokens = ["secrets-restart-a-0123456789abcdef", "secrets-restart-b-0123456789abcdef"]
    s1 = start_server(execbox, str(tmp_path), *args, tokens=tokens, pool=0)
    state = s1.state_dir
    try:
        put_secret(s1, name="KEPT")
        sid = sandbox(s1, ("KEPT",))
        ph = run(s1, sid, "echo $KEPT")["stdout"].strip()
        assert ph.startswith("execbox-secret-"), ph
        assert f"Bearer {VALUE}" in run(s1, sid, "curl -sS -m 10 http://a.test/headers")["stdout"]
    finally:
        os.kill(s1.pid, signal.SIGKILL)
        s1.proc.wait(10)
    # --stop-sandboxes: its stop ends the sandbox even if an assert failed
    # first (else it would wait out the grace for a next server).
    s2 = start_server(execbox, str(tmp_path), *args, "--stop-sandboxes", tokens=tokens, pool=0, state_dir=state)
    try:
        # The record holds the placeholder (the positive control of the
        # grep), and nothing in the state dir holds the value.
        rec = os.path.join(state, "sandboxes", f"{sid}.json")
        assert rec in grep_tree(state, ph), grep_tree(state, ph)
        assert json.load(open(rec))["secrets"] == [{"name": "KEPT", "placeholder": ph}]
        assert grep_tree(state, VALUE) == []
        info = expect(s2.get(f"/v1/sandboxes/{sid}"), 200).json()
        assert info["secrets_waiting"] == ["KEPT"], info
        assert "secret KEPT waits for its value" in s2.stderr()
        # Meanwhile its requests carry the placeholder, and no header.
        out = run(s2, sid, 'curl -sS -m 10 -H "X-Key: $KEPT" http://a.test/headers')["stdout"]
        assert f"X-Key: {ph}" in out and VALUE not in out and "Bearer" not in out, out
        # Another tenant's secret of that name binds nothing of this one's.
        put_secret(s2, name="KEPT", token=tokens[1])
        assert expect(s2.get(f"/v1/sandboxes/{sid}"), 200).json()["secrets_waiting"] == ["KEPT"]
        out = run(s2, sid, "curl -sS -m 10 http://a.test/headers")["stdout"]
        assert VALUE not in out and "Bearer" not in out, out
        put_secret(s2, name="KEPT")
        assert "secrets_waiting" not in expect(s2.get(f"/v1/sandboxes/{sid}"), 200).json()
        assert "secret KEPT bound again" in s2.stderr()
        out = run(s2, sid, 'curl -sS -m 10 -H "X-Key: $KEPT" http://a.test/headers')["stdout"]
        assert f"Authorization: Bearer {VALUE}" in out and f"X-Key: {VALUE}" in out, out
        out = run(s2, sid, "curl -sS -m 10 https://a.test/headers")["stdout"]
        assert f"Authorization: Bearer {VALUE}" in out, out
        assert run(s2, sid, "echo $KEPT")["stdout"].strip() == ph
        # Still never on disk, nor in either daemon's log.
        assert grep_tree(state, VALUE) == []
        assert VALUE not in s2.stderr() and VALUE not in s1.stderr()
        s2.remove(sid)
    finally:
        problems = finish_server(s2)
        assert not problems, "\n".join(problems)


def test_value_is_nowhere_inside_or_in_the_api(srv, net, execbox):
    put_secret(srv)
    sid = sandbox(srv)
    # It is used (so it is in the daemon's memory and the upstream's view)...
    assert VALUE in run(srv, sid, "curl -sS -m 10 http://a.test/headers")["stdout"]
    # The pattern is joined from two halves inside and read from a pipe,
    # so no argv (the grep's own /proc/N/cmdline) holds it whole.
    def grep(v):
        a, b = v[:len(v) // 2], v[len(v) // 2:]
        return (f"A={a}; B={b}; grep -rlsF --binary-files=text -f <(printf %s \"$A$B\") /proc/[0-9]*/environ "
                "/proc/[0-9]*/cmdline /etc /home /tmp /root /var /opt /usr/local 2>/dev/null; "
                "env | grep -cF -f <(printf %s \"$A$B\"); true")
    # Positive control: a planted copy is found by the same grep.
    planted = run(srv, sid, f"P1={VALUE[:8]}; echo \"${{P1}}PLANT\" > /tmp/plant; " + grep(VALUE[:8] + "PLANT"),
                  user="root")["stdout"]
    assert "/tmp/plant" in planted, planted
    run(srv, sid, "rm -f /tmp/plant", user="root")
    found = run(srv, sid, grep(VALUE), user="root")["stdout"]
    assert found.strip() == "0", found
    # The API: the sandbox, its network, its log, its events, the secret list, metrics.
    for path in (f"/v1/sandboxes/{sid}", f"/v1/sandboxes/{sid}/network", f"/v1/sandboxes/{sid}/network/log",
                 f"/v1/sandboxes/{sid}/events", "/v1/sandboxes", "/v1/secrets", "/metrics", "/openapi.json"):
        r = srv.get(path)
        assert r.status_code == 200, (path, r.status_code)
        assert VALUE not in r.text, path
    assert VALUE not in srv.stderr()


def put_file(srv, sid, path, text):
    r = srv.request("PUT", f"/v1/sandboxes/{sid}/files", params={"path": path}, data=text.encode())
    assert r.status_code in (200, 201, 204), r.text


def test_https_injects_for_the_secrets_hosts_only(srv, net):
    put_secret(srv)
    sid = sandbox(srv)
    with open(net.ca) as f:
        put_file(srv, sid, "/tmp/testca.pem", f.read())
    # The secret's host: TLS is terminated by the server's CA (which the
    # sandbox trusts) and the upstream sees the value.
    out = run(srv, sid, 'curl -sS -m 10 -H "Authorization: token $GH_TOKEN" "https://a.test/headers?t=$GH_TOKEN"')
    assert f"Authorization: Bearer {VALUE}" in out["stdout"] and f"t={VALUE}" in out["stdout"], out
    assert "Connection: close" in out["stdout"], out
    # ...so the upstream's own CA alone does not verify it: it is intercepted.
    r = run(srv, sid, "curl -sS -m 10 --cacert /tmp/testca.pem https://a.test/headers")
    assert r["exit_code"] != 0, r
    # The issuer the client saw is the server's CA.
    r = run(srv, sid, "curl -sSv -m 10 -o /dev/null https://a.test/headers 2>&1 | grep -i issuer")
    assert "execbox egress CA" in r["stdout"], r
    # Another host is a plain tunnel: the upstream's CA verifies it, and the
    # placeholder goes as it is.
    r = run(srv, sid, 'curl -sS -m 10 --cacert /tmp/testca.pem -H "X-Key: $GH_TOKEN" https://b.test/headers')
    assert r["exit_code"] == 0 and "X-Key: execbox-secret-" in r["stdout"] and VALUE not in r["stdout"], r
    # Through SOCKS5 too.
    out = run(srv, sid, "curl -sS -m 10 --proxy socks5h://127.0.0.1:3128 https://a.test/headers")["stdout"]
    assert f"Authorization: Bearer {VALUE}" in out, out


def test_https_upstream_is_verified(srv, net):
    """The re-originated TLS is verified: a name the upstream's certificate
    does not hold gets a 502 from the proxy, and the value is not sent."""
    net.set_zone({**{n: [a] for n, a in fakenet.NAMES.items()}, "nocert.test": [fakenet.NAMES["a.test"]]})
    try:
        put_secret(srv, name="UNVERIFIED", hosts=("nocert.test",))
        sb = srv.create(network={"mode": "allowlist", "allow": ["nocert.test"]}, secrets=["UNVERIFIED"])
        r = run(srv, sb["id"], "curl -sS -m 10 https://nocert.test/headers")
        assert r["exit_code"] != 0 and "502" in r["stderr"], r
        r = run(srv, sb["id"], "curl -sS -m 10 -o /dev/null -w '%{http_code}' http://nocert.test/headers")
        assert r["stdout"] == "200", r   # positive control: the name works
    finally:
        net.set_zone({n: [a] for n, a in fakenet.NAMES.items()})


def test_ca_key_is_unreachable_inside(srv, net):
    d = os.path.join(srv.state_dir, "egress-ca")
    assert os.stat(d).st_mode & 0o777 == 0o700
    assert os.stat(os.path.join(d, "ca.key")).st_mode & 0o777 == 0o600
    with open(os.path.join(d, "ca.key")) as f:
        line = [ln for ln in f.read().splitlines() if ln and not ln.startswith("-----")][0]
    sid = sandbox(srv, ())
    r = run(srv, sid, f"cat {d}/ca.key; ls {srv.state_dir}; echo rc=$?", user="root")
    assert "rc=2" in r["stdout"] and "PRIVATE" not in r["stdout"], r
    a, b = line[:len(line) // 2], line[len(line) // 2:]
    grep = (f"A='{a}'; B='{b}'; grep -rlsF --binary-files=text -f <(printf %s \"$A$B\") /etc /home /tmp /root "
            "/var /opt /usr/local /proc/[0-9]*/environ 2>/dev/null; echo done")
    r = run(srv, sid, grep, user="root")
    assert r["stdout"].strip() == "done", r
    # The certificate is there, and trusted.
    r = run(srv, sid, "grep -c 'BEGIN CERTIFICATE' /etc/ssl/certs/execbox-egress-ca.pem; "
                      "tail -c 2000 /etc/ssl/certs/ca-certificates.crt | grep -c 'END CERTIFICATE'")
    assert r["stdout"].split()[0] == "1", r


# ---- attacks on the head rewrite: a secret for a.test sent to another Host ----

# A raw client inside: the request in a file (@PH@ is the placeholder),
# sent through the proxy as it is (forward), or inside a CONNECT tunnel's
# TLS (tls, trusting the sandbox's bundle, which holds the egress CA).
RAW_CLIENT = r"""
import os, socket, ssl, sys
mode, host, path = sys.argv[1:4]
req = open(path, "rb").read().replace(b"@PH@", os.environ["GH_TOKEN"].encode())
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
if mode == "tls":
    s.sendall(f"CONNECT {host}:443 HTTP/1.1\r\nHost: {host}:443\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            break
        head += b
    if b" 200 " not in head.split(b"\r\n")[0]:
        sys.stdout.write(head.decode(errors="replace"))
        sys.exit(0)
    s = ssl.create_default_context().wrap_socket(s, server_hostname=host)
s.sendall(req)
out = b""
while True:
    try:
        b = s.recv(65536)
    except (OSError, ssl.SSLError):
        break
    if not b:
        break
    out += b
sys.stdout.write(out.decode(errors="replace"))
print("RAWDONE")
"""


def refused(mode, out):
    """The forward proxy answers 400; inside a terminated TLS the relay
    closes the tunnel without sending anything up or back."""
    return out.startswith("HTTP/1.1 400") if mode == "forward" else out.strip() == "RAWDONE"


def raw(srv, sid, mode, req: bytes, host="a.test"):
    put_file(srv, sid, "/tmp/raw.py", RAW_CLIENT)
    r = srv.request("PUT", f"/v1/sandboxes/{sid}/files", params={"path": "/tmp/req"}, data=req)
    assert r.status_code in (200, 201, 204), r.text
    out = run(srv, sid, f"python3 /tmp/raw.py {mode} {host} /tmp/req")["stdout"]
    assert "RAWDONE" in out, out   # the attack ran to its end
    return out


@pytest.mark.parametrize("mode", ["forward", "tls"])
def test_bare_lf_cannot_smuggle_a_second_request_with_the_secret(srv, net, mode):
    """A header line holding bare LFs is one line to a proxy that splits on
    CRLF, but two requests to an upstream that ends lines at LF (as the
    fake server, nginx and most others do): the second, with a Host of the
    client's choosing, would carry the value the proxy swapped in and the
    header it added before the (now second) blank line."""
    put_secret(srv)
    sid = sandbox(srv)
    target = "http://a.test/headers" if mode == "forward" else "/headers"
    # Positive control: the same client, a clean head, gets the value to a.test.
    out = raw(srv, sid, mode, f"GET {target} HTTP/1.1\r\nHost: a.test\r\nX-Key: @PH@\r\n\r\n".encode())
    assert f"X-Key: {VALUE}" in out and "Host: a.test" in out, out
    # The attack.
    out = raw(srv, sid, mode, f"GET {target} HTTP/1.1\r\nHost: a.test\r\nX-A: 1\n\nGET /headers?smuggled "
                              "HTTP/1.1\nHost: b.test\nX-Key: @PH@\r\n\r\n".encode())
    assert "?smuggled" not in out and VALUE not in out, out
    assert refused(mode, out), out
    # Folded (obs-fold) lines and a space before the colon are refused too
    # (RFC 9112 5.1, 5.2): either could carry a second Host past the rewrite.
    for bad in ("X-A: 1\r\n Host: b.test", "Host : b.test", "X-A: 1\rHost: b.test"):
        out = raw(srv, sid, mode, f"GET {target} HTTP/1.1\r\nHost: a.test\r\n{bad}\r\nX-Key: @PH@\r\n\r\n".encode())
        assert refused(mode, out) and VALUE not in out, (bad, out)
    srv.remove(sid)


def test_https_host_header_cannot_send_the_secret_to_another_host(srv, net):
    """Over the terminated TLS of a secret's host, the Host (or an
    absolute-form target) names which site of a shared front end gets the
    request: it is the CONNECT's, the name the secret was decided for."""
    put_secret(srv)
    sid = sandbox(srv)
    # Positive control: the secret's host gets the value.
    out = run(srv, sid, 'curl -sS -m 10 -H "X-Key: $GH_TOKEN" https://a.test/headers')["stdout"]
    assert f"X-Key: {VALUE}" in out and "Host: a.test" in out, out
    # A Host of another site: the upstream sees a.test's.
    out = run(srv, sid, 'curl -sS -m 10 -H "Host: b.test" -H "X-Key: $GH_TOKEN" https://a.test/headers')["stdout"]
    assert "Host: b.test" not in out and "Host: a.test" in out, out
    # An absolute-form target naming another site is refused.
    out = raw(srv, sid, "tls", b"GET http://b.test/headers HTTP/1.1\r\nHost: a.test\r\nX-Key: @PH@\r\n\r\n")
    assert refused("tls", out) and VALUE not in out and "b.test" not in out, out
    srv.remove(sid)
