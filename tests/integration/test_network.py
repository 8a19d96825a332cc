"""Egress (issue 10): a sandbox reaches the network only through the
daemon's proxy and DNS on its loopback, as its policy allows.

The internet here is fake (fakenet.py): test-made network namespaces with
their own addresses, HTTP and HTTPS servers (a CA made now) and a DNS the
daemon is pointed at (--dns-server). Every address a test expects refused
(private, CGNAT, metadata) is routed to a trap namespace of its own that
logs any connection: each test that expects refusals checks the trap saw
nothing, and a positive control shows the trap is reachable from the host.
Only the `packages` tests use the real package mirror and npm registry,
named by the host's own configuration at run time.
"""
from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import threading
import time

import pytest

import fakenet
import xbhost
from server_fixture import expect, expect_error, finish_server, server_factory, start_server  # noqa: F401

A, B = fakenet.NAMES["a.test"], fakenet.NAMES["b.test"]


@pytest.fixture(autouse=True)
def no_leaks():
    """The fake internet and the server live for the whole module; `net` and
    `srv` check what they leave at its end (conftest's per-test check would
    count them)."""
    yield


@pytest.fixture(scope="module")
def net():
    before = xbhost.HostState.capture()
    n = fakenet.FakeNet().start()
    try:
        yield n
    finally:
        n.stop()
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert n.web not in out and n.trap not in out, f"namespaces left: {out}"
    routes = subprocess.run(["ip", "route"], capture_output=True, text=True).stdout
    assert fakenet.WEB_NS not in routes and fakenet.TRAP_NS not in routes, routes
    leaks = xbhost.wait_for_no_leaks(before)
    assert not leaks, "the fake internet left these behind:\n  " + "\n  ".join(leaks)


@pytest.fixture(scope="module")
def srv(execbox, net, tmp_path_factory):
    s = start_server(execbox, str(tmp_path_factory.mktemp("net")), "--dns-server", fakenet.DNS_ADDR,
                     "--package-source", "http://pkg.test/debian", "--network-deny", "c.test", no_auth=True, pool=0)
    try:
        yield s
    finally:
        problems = finish_server(s)
        assert not problems, "\n".join(problems)


@pytest.fixture
def trap_clean(net):
    """Asserts the test sent nothing to a refused address."""
    before = net.trapped()
    yield
    assert net.trapped() == before, f"a refused address was reached: {net.trapped()}"


# ---- helpers ----

def run(srv, sid, cmd, user=None, timeout=60):
    body = {"cmd": cmd, "timeout_s": timeout}
    if user:
        body["user"] = user
    return srv.exec(sid, timeout=timeout + 30, **body)


def fetch(srv, sid, url, extra="", user=None):
    """(HTTP status as curl saw it, body) of one request from inside."""
    r = run(srv, sid, f"curl -sS -m 10 -o /tmp/body -w '%{{http_code}}' {extra} {shlex.quote(url)}; "
                      f"echo; cat /tmp/body 2>/dev/null", user=user)
    first, _, rest = r["stdout"].partition("\n")
    return first.strip(), rest


def create(srv, network=None, **kw):
    body = dict(kw)
    if network is not None:
        body["network"] = network
    sb = srv.create(**body)
    return sb["id"]


def patch(srv, sid, policy, status=200):
    r = srv.request("PATCH", f"/v1/sandboxes/{sid}/network", json_body=policy)
    assert r.status_code == status, r.text
    return r


def log(srv, sid):
    r = srv.get(f"/v1/sandboxes/{sid}/network/log")
    expect(r, 200)
    return r.json()["entries"]


# ---- none ----

def test_none_blocks_everything(srv, net, trap_clean):
    sid = create(srv)
    got = srv.get(f"/v1/sandboxes/{sid}/network").json()
    assert got["mode"] == "none" and got["allow"] == [] and got["available"] is True, got
    env = run(srv, sid, "env")["stdout"]
    assert "HTTP_PROXY" not in env and "ALL_PROXY" not in env
    # Through the proxy by hand: refused with the reason.
    code, body = fetch(srv, sid, f"http://{A}/who", "-x http://127.0.0.1:3128")
    assert code == "403" and "mode none" in body, (code, body)
    # Around it: no route at all.
    r = run(srv, sid, f"curl -sS -m 5 --noproxy '*' http://{A}/who")
    assert r["exit_code"] == 7 and "connect" in r["stderr"].lower(), r
    r = run(srv, sid, "getent hosts a.test")
    assert r["exit_code"] != 0, r
    rules = [(e["kind"], e["host"], e["allowed"], e["rule"]) for e in log(srv, sid)]
    assert ("http", A, False, "mode none") in rules and ("dns", "a.test", False, "mode none") in rules, rules
    srv.remove(sid)


# ---- allowlist ----

def test_allowlist_domains_wildcards_cidrs_and_deny_wins(srv, net, trap_clean):
    sid = create(srv, {"mode": "allowlist", "allow": ["a.test", "*.w.test", fakenet.CIDR_NET],
                       "deny": ["deep.x.w.test"]})
    codes = {}
    for host in ("a.test", "b.test", "x.w.test", "deep.x.w.test", "w.test", fakenet.CIDR_HOST):
        codes[host] = fetch(srv, sid, f"http://{host}/who")[0]
    assert codes == {"a.test": "200", "b.test": "403", "x.w.test": "200", "deep.x.w.test": "403",
                     "w.test": "403", fakenet.CIDR_HOST: "200"}, codes
    code, body = fetch(srv, sid, "http://a.test/who")
    assert "host=a.test" in body
    # A Host header of its own does not reach a host the policy did not allow (domain fronting).
    code, body = fetch(srv, sid, "http://a.test/who", "-H 'Host: b.test'")
    assert code == "200" and "host=a.test" in body, body
    # DNS answers what the policy allows, and only that.
    assert A in run(srv, sid, "getent hosts a.test")["stdout"]
    assert run(srv, sid, "getent hosts b.test")["exit_code"] != 0
    # deny wins over allow, by address too.
    patch(srv, sid, {"mode": "allowlist", "allow": ["198.51.100.128/25"], "deny": [B]})
    assert fetch(srv, sid, "http://a.test/who")[0] == "200"
    assert fetch(srv, sid, "http://b.test/who")[0] == "403"
    srv.remove(sid)


def test_live_patch_takes_effect_on_the_next_connection(srv, net):
    sid = create(srv, {"mode": "allowlist", "allow": ["a.test"]})
    # A process that started before the change keeps its env and sees the new policy.
    pid = srv.post(f"/v1/sandboxes/{sid}/processes",
                   {"cmd": "while :; do curl -s -m 5 -o /dev/null -w '%{http_code}\\n' http://b.test/who; "
                           "sleep 0.2; done"}).json()["pid"]
    assert fetch(srv, sid, "http://b.test/who")[0] == "403"
    deadline = time.monotonic() + 10
    while "403" not in srv.get(f"/v1/sandboxes/{sid}/processes/{pid}/output").json()["stdout"]:
        assert time.monotonic() < deadline, "the loop never ran"
        time.sleep(0.1)
    r = patch(srv, sid, {"mode": "allowlist", "allow": ["a.test", "b.test"]})
    assert r.json()["allow"] == ["a.test", "b.test"]
    assert fetch(srv, sid, "http://b.test/who")[0] == "200"
    deadline = time.monotonic() + 10
    while True:
        out = srv.get(f"/v1/sandboxes/{sid}/processes/{pid}/output").json()["stdout"].split()
        if "403" in out and out[-1:] == ["200"]:
            break
        assert time.monotonic() < deadline, out
        time.sleep(0.2)
    patch(srv, sid, {"mode": "none"})
    assert fetch(srv, sid, "http://a.test/who", "-x http://127.0.0.1:3128")[0] == "403"
    srv.remove(sid)


# ---- always refused ----

def _listener():
    """A TCP listener on the host's loopback that counts who reaches it."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    s.settimeout(0.2)
    hits, done = [], threading.Event()

    def accept():
        while not done.is_set():
            try:
                c, _ = s.accept()
                hits.append(1)
                c.close()
            except socket.timeout:
                continue
            except OSError:
                return

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    return s, hits, done, t


def test_always_refused_even_open_and_under_a_cidr_allow(srv, net):
    host_addrs = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True,
                                text=True).stdout.split()
    host_ip = next(w.split("/")[0] for w in host_addrs if "/" in w and not w.startswith(("198.51.100", "203.0")))
    lst, hits, done, t = _listener()
    loop_port = lst.getsockname()[1]
    net.set_zone({**{n: [a] for n, a in fakenet.NAMES.items()}, "evil.test": ["10.77.0.5"],
                  "meta.test": ["169.254.169.254"]})
    before = net.trapped()
    try:
        targets = [f"http://{a}/" for a in fakenet.TRAPPED] + [
            "http://[::ffff:10.77.0.5]/", "http://[::ffff:169.254.169.254]/", "http://[::ffff:a4d:5]/",
            "http://[fd00:ec2::254]/", "http://evil.test/", "http://meta.test/",
            f"http://127.0.0.1:{loop_port}/", f"http://localhost:{loop_port}/", f"http://127.0.0.1:{srv.port}/",
            f"http://{host_ip}:{srv.port}/", "http://0.0.0.0/", "http://[::1]/"]
        for policy in ("open", {"mode": "allowlist", "allow": ["0.0.0.0/0", "::/0", "10.0.0.0/8", "evil.test",
                                                               "meta.test", "169.254.0.0/16", "localhost"]}):
            sid = create(srv, policy)
            for url in targets:
                # Through the proxy even where NO_PROXY would go around it.
                code, body = fetch(srv, sid, url, "-x http://127.0.0.1:3128 --noproxy ''")
                assert code == "403", (policy, url, code, body)
            # SOCKS5 too.
            r = run(srv, sid, "curl -sS -m 5 --socks5-hostname 127.0.0.1:3128 http://10.77.0.5/")
            assert r["exit_code"] != 0, r
            entries = log(srv, sid)
            assert entries and not any(e["allowed"] for e in entries if e["kind"] != "dns"), entries
            srv.remove(sid)
        assert net.trapped() == before, f"a refused address was reached: {net.trapped()}"
        assert not hits, "the host's loopback was reached"
        # Positive control: the trap is there, and reachable from the host.
        assert subprocess.run(["curl", "-s", "-m", "3", "http://10.77.0.5/"]).returncode != 0
        assert net.trapped() != before, "the trap namespace does not catch what reaches it"
    finally:
        done.set()
        t.join(2)
        lst.close()
        net.set_zone({n: [a] for n, a in fakenet.NAMES.items()})


def test_dns_rebinding_is_refused(srv, net, trap_clean):
    sid = create(srv, {"mode": "allowlist", "allow": ["rebind.test"]})
    assert fetch(srv, sid, "http://rebind.test/who")[0] == "200"
    net.set_zone({**{n: [a] for n, a in fakenet.NAMES.items()}, "rebind.test": ["10.77.0.5"]})
    try:
        code, body = fetch(srv, sid, "http://rebind.test/who")
        assert code == "403" and "10.77.0.5" in body, (code, body)
    finally:
        net.set_zone({n: [a] for n, a in fakenet.NAMES.items()})
    denied = [e for e in log(srv, sid) if not e["allowed"]]
    assert denied and denied[-1]["addr"] == "10.77.0.5" and "private" in denied[-1]["rule"], denied
    srv.remove(sid)


@pytest.mark.parametrize("who", ["user", "root"])
def test_hosts_edits_and_raw_sockets_do_not_bypass(srv, net, trap_clean, who):
    sid = create(srv, {"mode": "allowlist", "allow": ["a.test"]})
    r = run(srv, sid, "id -u", user=who)
    if who == "root" and r["stdout"].strip() != "0":
        pytest.skip("this server does not run commands as root inside")
    # The user cannot edit /etc/hosts; root can (the root is its own, issue 9),
    # and neither that nor a name pinned by the client changes anything.
    r = run(srv, sid, f"echo '{A} b.test' >> /etc/hosts", user=who)
    assert (r["exit_code"] != 0) == (who == "user"), r
    code, _ = fetch(srv, sid, "http://b.test/who", f"--resolve b.test:80:{A}", user=who)
    assert code == "403"
    code, _ = fetch(srv, sid, "http://b.test/who", "", user=who)
    assert code == "403"
    probe = r"""
import errno, socket
out = {}
def attempt(name, fn):
    try:
        fn(); out[name] = "ok"
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e.errno))
attempt("tcp", lambda: socket.create_connection(("%s", 80), timeout=3))
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"x", ("%s", 53))
attempt("udp", udp)
def raw():
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s.sendto(b"\x08\x00\xf7\xff\x00\x00\x00\x00", ("%s", 0))
attempt("raw_icmp", raw)
out["interfaces"] = [n for _, n in socket.if_nameindex()]
print(out)
""" % (A, fakenet.DNS_ADDR, fakenet.WEB_NS)
    r = run(srv, sid, f"python3 -c {shlex.quote(probe)}", user=who)
    out = eval(r["stdout"])  # a dict of errno names printed by the probe
    assert out["tcp"] in ("ENETUNREACH", "EHOSTUNREACH"), out
    assert out["udp"] in ("ENETUNREACH", "EHOSTUNREACH"), out
    assert out["raw_icmp"] in (("EPERM", "EACCES") if who == "user" else ("ENETUNREACH", "EHOSTUNREACH",
                                                                            "EPERM", "EACCES")), out
    assert out["interfaces"] == ["lo"], out
    srv.remove(sid)


# ---- tools through the proxy ----

def test_curl_http_https_socks_wget_git_python(srv, net):
    sid = create(srv, {"mode": "allowlist", "allow": ["a.test", fakenet.CIDR_HOST]})
    with open(net.ca, "rb") as f:
        expect(srv.request("PUT", f"/v1/sandboxes/{sid}/files?path=/tmp/ca.pem", data=f.read()), 200)
    env = run(srv, sid, "env")["stdout"]
    for k in ("HTTP_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "ALL_PROXY=socks5h://"):
        assert k in env, env
    code, body = fetch(srv, sid, "https://a.test/who", "--cacert /tmp/ca.pem")
    assert code == "200" and "host=a.test" in body, (code, body)
    code, body = fetch(srv, sid, f"https://{fakenet.CIDR_HOST}/who", "--cacert /tmp/ca.pem")
    assert code == "200", (code, body)
    assert fetch(srv, sid, "https://b.test/who", "--cacert /tmp/ca.pem")[0] in ("403", "000")
    r = run(srv, sid, "env -u http_proxy -u HTTP_PROXY curl -sS -m 10 --socks5-hostname 127.0.0.1:3128 http://a.test/who")
    assert "host=a.test" in r["stdout"], r
    r = run(srv, sid, "python3 -c \"import urllib.request; print(urllib.request.urlopen('http://a.test/who')"
                      ".read().decode())\"")
    assert "host=a.test" in r["stdout"], r
    if run(srv, sid, "command -v wget")["exit_code"] == 0:
        r = run(srv, sid, "wget -q -O - http://a.test/who && wget -q --ca-certificate=/tmp/ca.pem -O - "
                          "https://a.test/who")
        assert r["stdout"].count("host=a.test") == 2, r
    if run(srv, sid, "command -v git")["exit_code"] == 0:
        # The fake server is not a git server: git reaching it, through the
        # proxy, is the point (the refusal of b.test says 403).
        r = run(srv, sid, "GIT_SSL_CAINFO=/tmp/ca.pem git ls-remote https://a.test/repo.git 2>&1; "
                          "git ls-remote https://b.test/repo.git 2>&1")
        assert "403" in r["stdout"], r
        assert any(e["host"] == "a.test" and e["port"] == 443 and e["allowed"] and e["bytes_in"] > 0
                   for e in log(srv, sid)), log(srv, sid)
    srv.remove(sid)


def test_status_page_and_bad_requests(srv, net):
    sid = create(srv, "open")
    r = run(srv, sid, "curl -sS --noproxy '*' http://127.0.0.1:3128/")
    assert "egress proxy" in r["stdout"] and '"mode":"open"' in r["stdout"], r
    r = run(srv, sid, "printf 'NONSENSE\\r\\n\\r\\n' | timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/3128; "
                      "cat >&3; cat <&3'")
    assert "400" in r["stdout"], r
    srv.remove(sid)


# ---- the log, metrics, limits ----

def test_network_log_and_metrics(srv, net):
    m0 = srv.metrics()
    sid = create(srv, {"mode": "allowlist", "allow": ["a.test"]})
    fetch(srv, sid, "http://a.test/bytes/100000")
    fetch(srv, sid, "http://b.test/who")
    entries = log(srv, sid)
    ok = [e for e in entries if e["kind"] == "http" and e["host"] == "a.test"]
    bad = [e for e in entries if e["kind"] == "http" and e["host"] == "b.test"]
    assert ok and bad, entries
    e = ok[-1]
    assert set(e) >= {"offset", "time_ms", "kind", "host", "port", "addr", "allowed", "rule", "bytes_out",
                      "bytes_in"}
    assert e["allowed"] and e["port"] == 80 and e["addr"] == A and e["rule"] == "allow a.test"
    assert e["bytes_in"] > 100000 and e["bytes_out"] > 50 and abs(e["time_ms"] / 1000 - time.time()) < 60
    assert not bad[-1]["allowed"] and "no rule allows it" in bad[-1]["rule"]
    page = srv.get(f"/v1/sandboxes/{sid}/network/log?offset={e['offset']}&limit=1").json()
    assert [x["offset"] for x in page["entries"]] == [e["offset"]] and page["next_offset"] == e["offset"] + 1
    m = srv.metrics()
    assert m['execbox_egress_connections_total{decision="allowed"}'] > \
        m0['execbox_egress_connections_total{decision="allowed"}']
    assert m['execbox_egress_connections_total{decision="denied"}'] > \
        m0['execbox_egress_connections_total{decision="denied"}']
    assert m['execbox_egress_bytes_total{direction="in"}'] >= m0['execbox_egress_bytes_total{direction="in"}'] + 1e5
    assert m['execbox_egress_dns_queries_total{answer="relayed"}'] >= 0
    srv.remove(sid)
    expect_error(srv.get(f"/v1/sandboxes/{sid}/network/log"), 410, "sandbox_gone")


def test_invalid_policies_are_400(srv):
    for bad in ({"mode": "bogus"}, "everything", {"mode": "allowlist", "allow": ["10.0.0.0/33"]},
                {"mode": "open", "allow": ["a.test"]}, {"mode": "allowlist", "allow": ["bad host!"]},
                {"mode": "allowlist", "allow": "a.test"}, {"mode": "allowlist", "extra": 1}, 5):
        r = srv.post("/v1/sandboxes", {"network": bad})
        expect_error(r, 400, "invalid_request")
    sid = create(srv)
    expect_error(srv.request("PATCH", f"/v1/sandboxes/{sid}/network", json_body={"mode": "nope"}), 400,
                 "invalid_request")
    srv.remove(sid)


def test_server_deny_and_ceiling(srv, server_factory, net):
    sid = create(srv, "open")
    code, body = fetch(srv, sid, "http://c.test/who")
    assert code == "403" and "server deny c.test" in body, body
    srv.remove(sid)
    capped = server_factory("--dns-server", fakenet.DNS_ADDR, "--network-max", "packages", pool=0)
    err = expect_error(capped.post("/v1/sandboxes", {"network": "open"}), 403, "network_forbidden")
    assert "ceiling" in err["message"] and "--network-max" in err["hint"], err
    sid = capped.create(network="packages")["id"]
    err = expect_error(capped.request("PATCH", f"/v1/sandboxes/{sid}/network",
                                      json_body={"mode": "allowlist", "allow": ["a.test"]}), 403, "network_forbidden")
    assert capped.get(f"/v1/sandboxes/{sid}/network").json()["ceiling"] == "packages"
    capped.remove(sid)


def test_connections_per_sandbox_are_bounded_and_others_unaffected(srv, server_factory, net):
    small = server_factory("--dns-server", fakenet.DNS_ADDR, "--network-connections", "4", pool=0)
    hog = small.create(network="open")["id"]
    other = small.create(network="open")["id"]
    holder = r"""
import socket, time
held = []
for i in range(12):
    try:
        s = socket.create_connection(("127.0.0.1", 3128))
        s.sendall(b"CONNECT a.test:80 HTTP/1.1\r\nHost: a.test:80\r\n\r\n")
        held.append(s)
    except OSError:
        pass
ok = 0
for s in held:
    s.settimeout(3)
    try:
        ok += s.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        pass
print(ok, flush=True)
time.sleep(30)
"""
    small.post(f"/v1/sandboxes/{hog}/processes", {"cmd": f"python3 -c {shlex.quote(holder)}"})
    deadline = time.monotonic() + 10
    while not any(e["rule"] == "too many connections" for e in log(small, hog)):
        assert time.monotonic() < deadline, log(small, hog)
        time.sleep(0.2)
    t0 = time.monotonic()
    code, body = fetch(small, other, "http://a.test/who")
    assert code == "200" and time.monotonic() - t0 < 5, (code, body)
    assert small.get(f"/v1/sandboxes/{hog}/network").json()["stats"]["connections"] <= 4
    small.remove(hog)
    small.remove(other)


# ---- real installs in `packages` mode (the host's own mirror and registry) ----

def _npm_registry():
    try:
        p = subprocess.run(["npm", "config", "get", "registry"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout.strip() or None


@pytest.fixture
def real(server_factory):
    """A server with the host's resolver and its default package sources."""
    s = server_factory(pool=0)
    return s


def _wait_for_source(s, sid, host):
    deadline = time.monotonic() + 30
    while True:
        got = s.get(f"/v1/sandboxes/{sid}/network").json()
        if any(p["host"] == host for p in got["package_sources"]):
            return got
        assert time.monotonic() < deadline, got
        time.sleep(0.2)


def test_npm_install_in_packages_mode(real):
    registry = _npm_registry()
    if not registry:
        pytest.skip("npm is not installed on the host")
    host = registry.split("://", 1)[1].split("/")[0].split(":")[0]
    sid = real.create(network="packages")["id"]
    _wait_for_source(real, sid, host)
    r = run(real, sid, "cd /tmp && npm install --no-audit --no-fund --registry "
                       f"{shlex.quote(registry)} is-number 2>&1 && node -e \"console.log(require('is-number')(5))\"",
            timeout=180)
    assert r["exit_code"] == 0 and r["stdout"].strip().endswith("true"), r
    # Anything else stays closed.
    r = run(real, sid, "curl -sS -m 10 -o /dev/null -w '%{http_code}' http://example.com/")
    assert r["stdout"] == "403", r
    real.remove(sid)


def _apt_source_files():
    found = []
    for d, names in (("/etc/apt", ["sources.list"]),
                     ("/etc/apt/sources.list.d", sorted(os.listdir("/etc/apt/sources.list.d"))
                      if os.path.isdir("/etc/apt/sources.list.d") else [])):
        for n in names:
            p = os.path.join(d, n)
            if os.path.isfile(p) and (n.endswith((".list", ".sources")) or n == "sources.list"):
                found.append(p)
    return found


def test_apt_get_update_and_download_in_packages_mode(real):
    files = _apt_source_files()
    if not files:
        pytest.skip("the host has no apt sources")
    sid = real.create(network="packages")["id"]
    for i, p in enumerate(files):
        with open(p, "rb") as f:
            name = f"{i}{'.sources' if p.endswith('.sources') else '.list'}"
            expect(real.request("PUT", f"/v1/sandboxes/{sid}/files?path=/tmp/aptsrc/{name}", data=f.read()), 200)
    opts = ("-o Dir::Etc::sourcelist=/dev/null -o Dir::Etc::sourceparts=/tmp/aptsrc -o Dir::State::Lists=/tmp/apt/lists "
            "-o Dir::Cache=/tmp/apt/cache -o Debug::NoLocking=1 -o APT::Sandbox::User=user -o Acquire::Languages=none")
    r = run(real, sid, f"mkdir -p /tmp/apt/lists/partial /tmp/apt/cache/archives/partial && apt-get {opts} update "
                       f"2>&1 && cd /tmp && apt-get {opts} download hello 2>&1 && ls /tmp/hello_*.deb", timeout=240)
    assert r["exit_code"] == 0 and "hello_" in r["stdout"], r["stdout"][-3000:]
    real.remove(sid)


def test_apt_get_install_as_root_in_packages_mode(real):
    """The full install needs a writable root (the computer issue); until a
    sandbox has one this says so rather than pass."""
    sid = real.create(network="packages")["id"]
    r = run(real, sid, "touch /usr/.xb-probe 2>/dev/null && rm /usr/.xb-probe && echo ROOT-WRITABLE", user="root")
    if "ROOT-WRITABLE" not in r["stdout"]:
        real.remove(sid)
        pytest.skip("this sandbox's root filesystem is read-only (a writable root lands with issue 9)")
    r = run(real, sid, "apt-get update 2>&1 | tail -2 && apt-get install -y hello 2>&1 | tail -2 && hello",
            user="root", timeout=300)
    assert r["exit_code"] == 0 and "Hello, world!" in r["stdout"], r
    real.remove(sid)


def test_bandwidth_is_bounded_per_sandbox(server_factory, net):
    slow = server_factory("--dns-server", fakenet.DNS_ADDR, "--network-rate", "4M", pool=0)
    hog = slow.create(network="open")["id"]
    other = slow.create(network="open")["id"]
    started = time.monotonic()
    pid = slow.post(f"/v1/sandboxes/{hog}/processes",
                    {"cmd": "curl -s -o /dev/null -w '%{size_download} %{time_total}' "
                            "http://a.test/bytes/12000000"}).json()["pid"]
    time.sleep(0.5)
    # The other sandbox has a bucket of its own.
    t0 = time.monotonic()
    code, _ = fetch(slow, other, "http://a.test/bytes/1000000")
    assert code == "200" and time.monotonic() - t0 < 2.5, time.monotonic() - t0
    res = slow.post(f"/v1/sandboxes/{hog}/processes/{pid}/wait", {"timeout_s": 30}).json()
    size, secs = res["stdout"].split()
    assert int(size) == 12000000, res
    # 4 MiB/s after a burst of a quarter second's worth: at least ~2.5 s for 12 MB.
    assert float(secs) >= 2.3 and time.monotonic() - started >= 2.3, res
    slow.remove(hog)
    slow.remove(other)


# ---- across a restart (issue 12, section 4) ----

def test_egress_and_ports_work_after_the_daemon_is_killed_and_restarted(execbox, net, tmp_path, trap_clean):
    args = ["--dns-server", fakenet.DNS_ADDR, "--adopt-grace", "60s"]
    s1 = start_server(execbox, str(tmp_path / "k"), *args, no_auth=True, pool=0)
    state = s1.state_dir
    try:
        sid = create(s1, {"mode": "allowlist", "allow": ["a.test"]})
        assert fetch(s1, sid, "http://a.test/")[0] == "200"
        assert fetch(s1, sid, "http://b.test/")[0] == "403"
        s1.sh(sid, "mkdir -p /tmp/www && echo 'served' > /tmp/www/index.html")
        expect(s1.post(f"/v1/sandboxes/{sid}/processes", {"cmd": "cd /tmp/www && exec python3 -m http.server 8080"}),
               201)
        deadline = time.monotonic() + 20
        while s1.get(f"/v1/sandboxes/{sid}/ports/8080/index.html").status_code != 200:
            assert time.monotonic() < deadline, "the port never answered"
            time.sleep(0.2)
    finally:
        os.kill(s1.pid, 9)
        s1.proc.wait(10)
    s2 = start_server(execbox, str(tmp_path / "k"), *args, no_auth=True, pool=0, state_dir=state)
    try:
        assert "1 sandboxes of an earlier daemon re-adopted" in s2.stderr()
        # The same policy, through the restarted proxy and DNS.
        assert fetch(s2, sid, "http://a.test/")[0] == "200"
        assert fetch(s2, sid, "http://b.test/")[0] == "403"
        assert expect(s2.get(f"/v1/sandboxes/{sid}/network"), 200).json()["mode"] == "allowlist"
        # The published port, served by the process that outlived the daemon.
        r = s2.get(f"/v1/sandboxes/{sid}/ports/8080/index.html")
        assert r.status_code == 200 and r.text == "served\n", r.text
        s2.remove(sid)
    finally:
        problems = finish_server(s2)
        assert not problems, "\n".join(problems)
