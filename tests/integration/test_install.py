"""The install cache (POST /v1/sandboxes/{id}/install, docs/install.md): an
apt install captured once as a read-only layer of the store and applied to
the next sandbox in the same state without running dpkg.

Against the host's own Debian mirror, named by /etc/apt at run time (the
server reads it; no host name is written here), with a small package the
host lacks. The tests assert the cache counters, not times. The attacks run
as root inside and show that they ran (a marker, a positive control)."""
from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

import server_fixture as sf
from server_fixture import expect, server_factory  # noqa: F401
from test_layers import store_of

PKG = "hello"


def _host_has(pkg):
    p = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
    return "install ok installed" in p.stdout


@pytest.fixture(autouse=True)
def _needs_a_package_the_host_lacks():
    if _host_has(PKG):
        pytest.skip(f"the host has {PKG} already")


def counters(s) -> dict[str, float]:
    return {k: v for k, v in s.metrics().items() if k.startswith("execbox_install_cache_")}


def sh(s, sid, cmd, user="root", timeout=120) -> dict:
    return s.exec(sid, cmd=cmd, user=user, timeout_s=timeout, timeout=timeout + 30)


def install(s, sid, pkgs=(PKG,), timeout=900) -> dict:
    r = s.post(f"/v1/sandboxes/{sid}/install", {"apt": list(pkgs)}, timeout=timeout)
    if r.status_code == 409 and "layer store" in r.text:
        pytest.skip("the server has no disk layer store here")
    expect(r, 200)
    return r.json()


def hello_runs(s, sid):
    r = sh(s, sid, f"{PKG} && dpkg-query -W -f='${{Status}}\\n' {PKG}", user="user")
    assert r["exit_code"] == 0 and "Hello, world!" in r["stdout"] and "install ok installed" in r["stdout"], r


def test_second_install_is_applied_from_the_cache_without_dpkg(server_factory):
    s = server_factory(pool=0)
    a = s.create()["id"]
    c0 = counters(s)
    assert c0, "no install cache counters on /metrics"
    r = install(s, a)
    assert r["cached"] is False and r["packages"] == [PKG] and r["bytes"] > 0, r
    c1 = counters(s)
    assert c1["execbox_install_cache_misses_total"] == c0["execbox_install_cache_misses_total"] + 1, (c0, c1)
    assert c1['execbox_install_cache_bytes_total{direction="stored"}'] > 0, c1
    assert c1["execbox_install_cache_entries"] == 1, c1
    hello_runs(s, a)

    b = s.create()["id"]
    assert "ABSENT" in sh(s, b, f"command -v {PKG} || echo ABSENT")["stdout"]
    # With events: the phases stream, then the result.
    t0 = time.monotonic()
    with s.request("POST", f"/v1/sandboxes/{b}/install", json_body={"apt": [PKG]},
                   headers={"Accept": "text/event-stream"}, stream=True, timeout=300) as resp:
        expect(resp, 200)
        events = sf.sse_events(resp, t0)
    names = [e[1] for e in events]
    phases = [e[2].get("phase") for e in events if e[1] == "progress"]
    assert phases == ["key", "apply"] and names[-1] == "result", events
    res = events[-1][2]
    assert res["cached"] is True and res["key"] == r["key"], res
    c2 = counters(s)
    assert c2["execbox_install_cache_hits_total"] == c1["execbox_install_cache_hits_total"] + 1, (c1, c2)
    assert c2["execbox_install_cache_misses_total"] == c1["execbox_install_cache_misses_total"], (c1, c2)
    assert (c2['execbox_install_cache_bytes_total{direction="applied"}'] >
            c1['execbox_install_cache_bytes_total{direction="applied"}']), (c1, c2)
    hello_runs(s, b)
    # Copy-on-write: b's layer shares the entry's extents (a reflink through
    # the overlays), it holds no copy of its own.
    assert res["copy"] == "reflink", res
    store = store_of(s)
    subprocess.run(["sync"], check=True)
    du = subprocess.run(["btrfs", "filesystem", "du", "-s", "--raw", f"{store}/sbx/{b}/up/usr"],
                        capture_output=True, text=True, check=True).stdout.split("\n")[1].split()
    total, exclusive, shared = int(du[0]), int(du[1]), int(du[2])
    assert total > 0 and shared == total and exclusive == 0, du
    # The view it was copied from is gone from b.
    assert ".xb-install" not in sh(s, b, "ls -a /tmp; cat /proc/mounts")["stdout"]
    # dpkg did not run in b: its log is a's, byte for byte (a run appends
    # lines with their own times), and dpkg finds nothing half-done.
    logs = [sh(s, x, "sha256sum /var/log/dpkg.log; dpkg --audit; echo AUDITED")["stdout"] for x in (a, b)]
    assert logs[0] == logs[1] and logs[1].endswith("AUDITED\n"), logs
    # No builder is left, and the store holds the entry and nothing else
    # of the install.
    assert {x["id"] for x in s.get("/v1/sandboxes").json()["sandboxes"]} == {a, b}
    layers = os.listdir(f"{store}/layers")
    assert len(layers) == 1 and layers[0] == "inst-" + r["key"][:40], layers
    for x in (a, b):
        s.remove(x)
    deadline = time.monotonic() + 15
    while os.listdir(f"{store}/sbx") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert os.listdir(f"{store}/sbx") == []


def test_a_changed_dpkg_state_is_a_miss_and_the_bound_holds(server_factory):
    # Room for one entry of PKG only: a second evicts the first.
    s = server_factory("--install-cache-size", "3M", pool=0)
    a = s.create()["id"]
    first = install(s, a)
    assert first["cached"] is False
    d = s.create(user="root")["id"]
    # d installs a package of its own first: its dpkg status differs.
    r = sh(s, d, "mkdir -p /tmp/p/DEBIAN /tmp/p/usr/bin && printf 'Package: xbmine\\nVersion: 1.0\\n"
                 "Architecture: all\\nMaintainer: t <t@example.invalid>\\nDescription: t\\n' > /tmp/p/DEBIAN/control "
                 "&& printf '#!/bin/sh\\necho mine\\n' > /tmp/p/usr/bin/xbmine && chmod 755 /tmp/p/usr/bin/xbmine && "
                 "dpkg-deb --root-owner-group -b /tmp/p /tmp/xbmine.deb >/dev/null && dpkg -i /tmp/xbmine.deb >/dev/null "
                 "&& echo INSTALLED")
    assert "INSTALLED" in r["stdout"], r
    c1 = counters(s)
    second = install(s, d)
    assert second["cached"] is False and second["key"] != first["key"], (first, second)
    c2 = counters(s)
    assert c2["execbox_install_cache_misses_total"] == c1["execbox_install_cache_misses_total"] + 1, (c1, c2)
    # Not a wrong result: both packages are installed in d.
    r = sh(s, d, f"xbmine && {PKG} && dpkg-query -W -f='${{Package}} ${{Status}}\\n' xbmine {PKG}")
    assert r["stdout"].count("install ok installed") == 2 and "mine" in r["stdout"], r
    # The bound: the older entry went, least recently used first.
    assert c2["execbox_install_cache_evictions_total"] == c1["execbox_install_cache_evictions_total"] + 1, c2
    assert c2["execbox_install_cache_entries"] == 1, c2
    e = s.create()["id"]
    assert install(s, e)["cached"] is False   # a's entry was evicted
    hello_runs(s, e)
    for x in (a, d, e):
        s.remove(x)


def test_a_sandbox_cannot_poison_the_cache(server_factory):
    s = server_factory(pool=0)
    a = s.create()["id"]
    # Attack 0: reach the builder while it installs (what it captures goes
    # to every tenant). Positive control: it exists, its layer is in the store.
    store = store_of(s)
    seen, name, clean = [], None, None
    with s.request("POST", f"/v1/sandboxes/{a}/install", json_body={"apt": [PKG]},
                   headers={"Accept": "text/event-stream"}, stream=True, timeout=900) as resp:
        expect(resp, 200)
        for raw in resp.iter_lines(chunk_size=1):
            line = raw.decode()
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data = json.loads(line[5:])
                if name == "progress" and data.get("phase") == "install":
                    bid = data["builder"]
                    assert os.path.isdir(f"{store}/sbx/{bid}"), "no builder in the store"
                    for method, path, body in (("POST", f"/v1/sandboxes/{bid}/exec", {"cmd": "touch /usr/x"}),
                                               ("GET", f"/v1/sandboxes/{bid}", None),
                                               ("PUT", f"/v1/sandboxes/{bid}/files?path=/usr/x", None),
                                               ("DELETE", f"/v1/sandboxes/{bid}", None)):
                        r = s.request(method, path, json_body=body)
                        seen.append((method, r.status_code))
                    assert bid not in {x["id"] for x in s.get("/v1/sandboxes").json()["sandboxes"]}
                elif name == "result":
                    clean = data
    assert [c for _, c in seen] == [404, 404, 404, 404], seen
    assert clean and clean["cached"] is False, clean
    # Attack 1: rewrite the installed program as root in a sandbox that got
    # it from the cache. Positive control: the write works there.
    b = s.create()["id"]
    assert install(s, b)["cached"] is True
    r = sh(s, b, f"printf '#!/bin/sh\\necho POISONED\\n' > /usr/bin/{PKG} && {PKG}")
    assert "POISONED" in r["stdout"], r
    # Attack 2: a dpkg hook in a sandbox's own apt configuration runs in its
    # install (the marker shows it ran), which is a miss of its own key.
    m = s.create()["id"]
    sh(s, m, "echo 'DPkg::Post-Invoke {\"echo PWNED > /usr/share/xb-pwned\";};' > /etc/apt/apt.conf.d/99xb")
    evil = install(s, m)
    assert evil["cached"] is False and evil["key"] != clean["key"], evil
    assert "PWNED" in sh(s, m, "cat /usr/share/xb-pwned")["stdout"]
    # Attack 3: look for the cache from inside, as root.
    r = sh(s, m, "find / -xdev \\( -name 'inst-*' -o -name 'install-cache' -o -name 'layers.img' \\) "
                 "2>/dev/null | head -3; ls /run/execbox 2>&1; echo END")
    assert r["stdout"].startswith("ls: cannot access") and r["stdout"].strip().endswith("END"), r
    # A fresh sandbox still gets the clean install.
    f = s.create()["id"]
    got = install(s, f)
    assert got["cached"] is True and got["key"] == clean["key"], got
    hello_runs(s, f)
    r = sh(s, f, "test -e /usr/share/xb-pwned && echo PWNED; grep -c POISONED /usr/bin/hello; true")
    assert "PWNED" not in r["stdout"] and r["stdout"].strip() == "0", r
    for x in (a, b, m, f):
        s.remove(x)


def test_install_refuses_bad_requests(server_factory):
    s = server_factory(pool=0)
    a = s.create()["id"]
    for body in ({}, {"apt": []}, {"apt": ["Bad Name"]}, {"apt": ["-o=evil"]}, {"apt": [PKG], "x": 1}):
        r = s.post(f"/v1/sandboxes/{a}/install", body)
        sf.expect_error(r, 400, "invalid_request")
    sf.expect_error(s.post("/v1/sandboxes/nosuchsandbox/install", {"apt": [PKG]}), 404)
    r = s.post(f"/v1/sandboxes/{a}/install", {"apt": ["xb-no-such-package-anywhere"]}, timeout=600)
    if r.status_code == 409 and "layer store" in r.text:
        pytest.skip("the server has no disk layer store here")
    sf.expect_error(r, 422, "install_failed")
    assert "xb-no-such-package-anywhere" in r.json()["error"]["message"]
    assert {x["id"] for x in s.get("/v1/sandboxes").json()["sandboxes"]} == {a}
    s.remove(a)
