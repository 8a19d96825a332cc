"""The shared package cache (issue 9, item 6): apt's .deb files, npm's
tarballs and pip's wheels that one sandbox downloaded in `packages` mode
are served to the next from the daemon's store, never from inside a
sandbox. The tests assert the cache counters on /metrics, not times.

apt and npm use the host's own mirror and registry, named by the host's
configuration at run time (/etc/apt, `npm config get registry`); pip uses
a wheel index this test builds and serves from a fake-internet namespace
(fakenet.py)."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import zipfile

import pytest

import fakenet
from server_fixture import expect, server_factory  # noqa: F401


def counters(s) -> dict[str, float]:
    r = s.get("/metrics")
    expect(r, 200)
    out = {}
    for line in r.text.splitlines():
        m = re.match(r"^(execbox_package_cache_[a-z_]+(?:\{[^}]*\})?) (\S+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def run(s, sid, cmd, user=None, timeout=120):
    body = {"cmd": cmd, "timeout_s": timeout}
    if user:
        body["user"] = user
    return s.exec(sid, timeout=timeout + 30, **body)


def _root_writable(s, sid):
    r = run(s, sid, "touch /usr/.xb-probe 2>/dev/null && rm /usr/.xb-probe && echo ROOT-WRITABLE", user="root")
    return "ROOT-WRITABLE" in r["stdout"]


def _host_has(pkg):
    p = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
    return "install ok installed" in p.stdout


def test_apt_second_install_is_served_from_the_cache(server_factory):
    pkg = "hello"
    if _host_has(pkg):
        pytest.skip(f"the host has {pkg} already")
    s = server_factory(pool=0)
    first = s.create(network="packages", user="root")["id"]
    if not _root_writable(s, first):
        pytest.skip("this server's sandboxes have a read-only root")
    c0 = counters(s)
    assert c0, "no package cache counters on /metrics"
    r = run(s, first, f"apt-get update >/dev/null 2>&1; apt-get install -y {pkg} 2>&1 | tail -3 && {pkg}",
            user="root", timeout=300)
    assert r["exit_code"] == 0 and "Hello, world!" in r["stdout"], r
    c1 = counters(s)
    assert c1["execbox_package_cache_misses_total"] > c0["execbox_package_cache_misses_total"], (c0, c1)
    assert c1['execbox_package_cache_bytes_total{direction="stored"}'] > 0, c1
    assert c1["execbox_package_cache_entries"] >= 1, c1

    second = s.create(network="packages", user="root")["id"]
    r = run(s, second, f"command -v {pkg} || echo ABSENT", user="root")
    assert "ABSENT" in r["stdout"], r
    r = run(s, second, f"apt-get update >/dev/null 2>&1; apt-get install -y {pkg} 2>&1 | tail -3 && {pkg}",
            user="root", timeout=300)
    assert r["exit_code"] == 0 and "Hello, world!" in r["stdout"], r
    c2 = counters(s)
    assert c2["execbox_package_cache_hits_total"] > c1["execbox_package_cache_hits_total"], (c1, c2)
    assert c2["execbox_package_cache_misses_total"] == c1["execbox_package_cache_misses_total"], (c1, c2)
    assert (c2['execbox_package_cache_bytes_total{direction="served"}'] >
            c1['execbox_package_cache_bytes_total{direction="served"}']), (c1, c2)
    # The store is the daemon's: nothing inside has a path to it.
    cache = os.path.join(s.state_dir, "pkgcache")
    assert os.listdir(os.path.join(cache, "objects")), "the cache holds nothing on the host"
    r = run(s, second, f"ls -d {shlex.quote(cache)} {shlex.quote(s.state_dir)} 2>&1; "
                       "find / -xdev -name 'xbpkg*' -o -path '*pkgcache*' 2>/dev/null | head -3; echo END",
            user="root", timeout=120)
    assert "No such file" in r["stdout"] and r["stdout"].strip().endswith("END"), r
    assert "pkgcache" not in r["stdout"].split("END")[0].replace(f"ls: cannot access '{cache}'", ""), r
    s.remove(first)
    s.remove(second)


def _npm_registry():
    try:
        p = subprocess.run(["npm", "config", "get", "registry"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout.strip() or None


def _wait_for_npm(s, sid, host):
    import time
    deadline = time.monotonic() + 30
    while True:
        r = run(s, sid, "echo \"$npm_config_registry\"")
        if host in r["stdout"]:
            return r["stdout"].strip()
        assert time.monotonic() < deadline, r
        time.sleep(0.3)


def test_npm_second_install_is_served_from_the_cache(server_factory):
    registry = _npm_registry()
    if not registry:
        pytest.skip("npm is not installed on the host")
    host = registry.split("://", 1)[1].split("/")[0].split(":")[0]
    s = server_factory(pool=0)
    first = s.create(network="packages", user="root")["id"]
    # npm inside is pointed at the registry through the proxy, in plain http
    # to the proxy (which fetches over TLS itself).
    url = _wait_for_npm(s, first, host)
    assert url.startswith("http://") and host in url, url
    c0 = counters(s)
    cmd = ("mkdir -p /tmp/app && cd /tmp/app && npm install --no-audit --no-fund is-number 2>&1 | tail -3 && "
           "node -e \"console.log('IS', require('is-number')(5))\"")
    r = run(s, first, cmd, user="root", timeout=240)
    assert r["exit_code"] == 0 and "IS true" in r["stdout"], r
    c1 = counters(s)
    assert c1["execbox_package_cache_misses_total"] > c0["execbox_package_cache_misses_total"], (c0, c1)
    assert c1['execbox_package_cache_bytes_total{direction="stored"}'] > 0, c1

    second = s.create(network="packages", user="root")["id"]
    r = run(s, second, "ls /tmp/app/node_modules/is-number 2>&1 || echo ABSENT", user="root")
    assert "ABSENT" in r["stdout"], r
    r = run(s, second, cmd, user="root", timeout=240)
    assert r["exit_code"] == 0 and "IS true" in r["stdout"], r
    c2 = counters(s)
    assert c2["execbox_package_cache_hits_total"] > c1["execbox_package_cache_hits_total"], (c1, c2)
    assert c2["execbox_package_cache_misses_total"] == c1["execbox_package_cache_misses_total"], (c1, c2)
    s.remove(first)
    s.remove(second)
