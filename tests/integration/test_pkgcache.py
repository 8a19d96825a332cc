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


# ---- on the fake internet: pip, poisoning, the bound ----

@pytest.fixture(autouse=True)
def no_leaks():
    """The fake internet lives for the whole module (its servers would count
    as leaks per test); `net` checks what it leaves at its end, and every
    server is checked by server_factory."""
    yield


@pytest.fixture(scope="module")
def net():
    yield from fakenet.module_net()


def _wheel(d, name="xbtiny", version="1.0", marker="XBTINY-RAN"):
    """A tiny pure-Python wheel, made here, with a PEP 503 index page."""
    import base64
    import hashlib
    fn = f"{name}-{version}-py3-none-any.whl"
    pkgdir = os.path.join(d, "pypi", "simple", name)
    os.makedirs(pkgdir, exist_ok=True)
    files = {f"{name}/__init__.py": f"MARK = {marker!r}\n",
             f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{name}-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                                  "Tag: py3-none-any\n"}
    record = []
    for k, v in files.items():
        h = base64.urlsafe_b64encode(hashlib.sha256(v.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{k},sha256={h},{len(v.encode())}")
    record.append(f"{name}-{version}.dist-info/RECORD,,")
    path = os.path.join(pkgdir, fn)
    with zipfile.ZipFile(path, "w") as z:
        for k, v in files.items():
            z.writestr(k, v)
        z.writestr(f"{name}-{version}.dist-info/RECORD", "\n".join(record) + "\n")
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    with open(os.path.join(pkgdir, "index.html"), "w") as f:
        f.write(f'<html><body><a href="{fn}#sha256={digest}">{fn}</a></body></html>\n')
    os.makedirs(os.path.join(d, "pypi", "simple"), exist_ok=True)
    with open(os.path.join(d, "pypi", "simple", "index.html"), "w") as f:
        f.write(f'<html><body><a href="{name}/">{name}</a></body></html>\n')
    return fn


def _upstream_saw(net, needle):
    try:
        with open(os.path.join(net.dir, "requests.log")) as f:
            return sum(1 for line in f if needle in line)
    except FileNotFoundError:
        return 0


def test_pip_second_install_is_served_from_the_cache(server_factory, net):
    fn = _wheel(net.dir)
    s = server_factory("--dns-server", fakenet.DNS_ADDR, "--package-source", "http://pkg.test/pypi/simple", pool=0)
    first = s.create(network="packages")["id"]
    r = run(s, first, "echo \"$PIP_INDEX_URL $PIP_TRUSTED_HOST\"")
    assert r["stdout"].strip() == "http://pkg.test/pypi/simple/ pkg.test", r
    cmd = ("pip install --no-cache-dir --disable-pip-version-check --target /tmp/t xbtiny 2>&1 | tail -2 && "
           "PYTHONPATH=/tmp/t python3 -c 'import xbtiny; print(xbtiny.MARK)'")
    c0 = counters(s)
    r = run(s, first, cmd, timeout=120)
    assert r["exit_code"] == 0 and "XBTINY-RAN" in r["stdout"], r
    c1 = counters(s)
    assert c1["execbox_package_cache_misses_total"] == c0["execbox_package_cache_misses_total"] + 1, (c0, c1)
    assert _upstream_saw(net, fn) == 1

    second = s.create(network="packages")["id"]
    r = run(s, second, "ls /tmp/t 2>&1 || echo ABSENT")
    assert "ABSENT" in r["stdout"], r
    r = run(s, second, cmd, timeout=120)
    assert r["exit_code"] == 0 and "XBTINY-RAN" in r["stdout"], r
    c2 = counters(s)
    assert c2["execbox_package_cache_hits_total"] == c1["execbox_package_cache_hits_total"] + 1, (c1, c2)
    # The index page went upstream again (never cached); the wheel did not.
    assert _upstream_saw(net, fn) == 1
    s.remove(first)
    s.remove(second)


def _get(s, sid, url, extra=""):
    r = run(s, sid, f"curl -sS -m 20 {extra} {shlex.quote(url)}; echo; echo EXIT=$?")
    return r["stdout"]


def test_a_sandbox_cannot_poison_the_cache(server_factory, net):
    s = server_factory("--dns-server", fakenet.DNS_ADDR, "--package-source", "http://pkg.test/debian", pool=0)
    evil = s.create(network="open")["id"]
    c0 = counters(s)
    # Another host's bytes, with the source's name in Host: not stored (the
    # key is the host the daemon fetched from, and a.test is no source).
    out = _get(s, evil, "http://a.test/debian/pool/x_1.0_all.deb", "-H 'Host: pkg.test'")
    assert "host=a.test" in out, out
    # Through a CONNECT tunnel to the source itself: bytes the daemon never
    # parsed, not stored.
    out = _get(s, evil, "http://pkg.test/debian/pool/x_1.0_all.deb", "--proxytunnel")
    assert "host=pkg.test" in out, out
    c1 = counters(s)
    assert c1["execbox_package_cache_entries"] == c0["execbox_package_cache_entries"], (c0, c1)
    assert c1['execbox_package_cache_bytes_total{direction="stored"}'] == \
        c0['execbox_package_cache_bytes_total{direction="stored"}'], (c0, c1)
    # A Range request and a query string are never stored either.
    _get(s, evil, "http://pkg.test/debian/pool/x_1.0_all.deb", "-r 0-3")
    _get(s, evil, "http://pkg.test/debian/pool/x_1.0_all.deb?v=evil")
    _get(s, evil, "http://pkg.test/debian/pool/../pool/x_1.0_all.deb", "--path-as-is")
    assert counters(s)["execbox_package_cache_entries"] == c0["execbox_package_cache_entries"]

    # The real fetch of that URL stores what its upstream said, and the next
    # sandbox gets exactly that.
    victim = s.create(network="packages")["id"]
    first = _get(s, victim, "http://pkg.test/debian/pool/x_1.0_all.deb", "-D /dev/stderr")
    assert "host=pkg.test" in first and "path=/debian/pool/x_1.0_all.deb" in first, first
    c2 = counters(s)
    assert c2["execbox_package_cache_entries"] == c0["execbox_package_cache_entries"] + 1, c2
    other = s.create(network="packages")["id"]
    again = _get(s, other, "http://pkg.test/debian/pool/x_1.0_all.deb")
    assert counters(s)["execbox_package_cache_hits_total"] == c2["execbox_package_cache_hits_total"] + 1
    assert again.split("EXIT")[0].strip() == first.split("EXIT")[0].strip()
    # Nothing inside, root included, can reach the store.
    cache = os.path.join(s.state_dir, "pkgcache")
    r = run(s, other, f"ls {shlex.quote(cache)} 2>&1; echo x > {shlex.quote(cache)}/objects/y 2>&1; echo END",
            user="root")
    assert "No such file" in r["stdout"], r
    assert not os.path.exists(os.path.join(cache, "objects", "y"))
    for sid in (evil, victim, other):
        s.remove(sid)


def test_eviction_keeps_the_bound(server_factory, net):
    s = server_factory("--dns-server", fakenet.DNS_ADDR, "--package-source", "http://pkg.test/bytes",
                       "--package-cache-size", "2500", pool=0)
    sid = s.create(network="packages")["id"]
    for n in (1000, 1001, 1002):
        out = _get(s, sid, f"http://pkg.test/bytes/{n}.deb", "-o /dev/null -w '%{size_download}'")
        assert out.startswith(str(n)), out
    c = counters(s)
    assert c["execbox_package_cache_bytes"] <= 2500, c
    assert c["execbox_package_cache_entries"] == 2 and c["execbox_package_cache_evictions_total"] == 1, c
    objs = os.path.join(s.state_dir, "pkgcache", "objects")
    assert sum(os.path.getsize(os.path.join(objs, f)) for f in os.listdir(objs)) <= 2500
    # The least recently used went: 1000 is a miss again, 1002 a hit.
    _get(s, sid, "http://pkg.test/bytes/1002.deb", "-o /dev/null")
    assert counters(s)["execbox_package_cache_hits_total"] == c["execbox_package_cache_hits_total"] + 1
    _get(s, sid, "http://pkg.test/bytes/1000.deb", "-o /dev/null")
    assert counters(s)["execbox_package_cache_misses_total"] == c["execbox_package_cache_misses_total"] + 1
    # Too big to ever keep: served, not stored.
    out = _get(s, sid, "http://pkg.test/bytes/4000.deb", "-o /dev/null -w '%{size_download}'")
    assert out.startswith("4000"), out
    assert counters(s)["execbox_package_cache_bytes"] <= 2500
    s.remove(sid)


def test_concurrent_misses_of_one_url_store_one_whole_copy(server_factory, net):
    s = server_factory("--dns-server", fakenet.DNS_ADDR, "--package-source", "http://pkg.test/bytes", pool=0)
    sids = [s.create(network="packages")["id"] for _ in range(2)]
    url = "http://pkg.test/bytes/3000000.deb"
    cmd = ("for i in 1 2 3; do curl -sS -m 30 -o /tmp/f$i -w '%{size_download}\\n' " + url + " & done; wait")
    import threading
    outs = {}

    def go(sid):
        outs[sid] = run(s, sid, cmd)["stdout"].split()

    ts = [threading.Thread(target=go, args=(sid,)) for sid in sids]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for sid in sids:
        assert outs[sid] == ["3000000"] * 3, outs
    c = counters(s)
    assert c["execbox_package_cache_entries"] == 1, c
    assert c["execbox_package_cache_bytes"] == 3000000, c
    cache = os.path.join(s.state_dir, "pkgcache")
    objs = os.listdir(os.path.join(cache, "objects"))
    assert len(objs) == 1 and os.path.getsize(os.path.join(cache, "objects", objs[0])) == 3000000, objs
    assert not os.listdir(os.path.join(cache, "tmp")), "a fill was left behind"
    r = run(s, sids[0], f"curl -sS -o /dev/null -w '%{{size_download}}' {url}")
    assert r["stdout"] == "3000000"
    assert counters(s)["execbox_package_cache_hits_total"] == c["execbox_package_cache_hits_total"] + 1
    for sid in sids:
        s.remove(sid)
