"""Layered roots, root inside, snapshots, forks and templates.

Each sandbox's /, /usr, /etc and /var/lib/dpkg are overlays: read-only
lowers (its template, then the host-derived base) and a writable layer of
its own, a btrfs subvolume of the server's store (a loop-mounted image in
the state directory), disk-limited by a qgroup. The attacks run as root
inside and each shows that it ran (a marker or a positive control)."""
from __future__ import annotations

import glob
import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import zipfile

import pytest

import server_fixture as sf
from server_fixture import expect, expect_error, server_factory  # noqa: F401
from server_fixture import shell as sh, shell_ok as ok


def store_of(srv: sf.Server) -> str:
    """The store as this test can reach it: the server mounts it in a mount
    namespace of its own, so through /proc/PID/root, at its mount point."""
    image = os.path.join(srv.state_dir, "layers.img")
    assert os.path.exists(image)
    for line in open(f"/proc/{srv.pid}/mountinfo"):
        f = line.split()
        if f[4].startswith("/run/execbox/store-"):
            dev = line.split(" - ")[1].split()[1]
            if loop_backing(dev) == os.path.realpath(image):
                return f"/proc/{srv.pid}/root{f[4]}"
    raise AssertionError("the store is not mounted")


def loop_backing(dev: str) -> str | None:
    name = os.path.basename(dev)
    try:
        return open(f"/sys/block/{name}/loop/backing_file").read().strip()
    except OSError:
        return None


def loops_of(state_dir: str) -> list[str]:
    image = os.path.realpath(os.path.join(state_dir, "layers.img"))
    return [d for d in glob.glob("/sys/block/loop*") if loop_backing(d) == image]


@pytest.fixture
def srv(server_factory):
    return server_factory(pool=0)


# ---- the writable root ----

def test_system_dirs_writable_inside_and_private(srv):
    a = srv.create(user="root")["id"]
    b = srv.create()["id"]
    out = ok(srv, a, "id -u; echo a > /usr/bin/xb-layer-marker && echo a > /etc/xb-layer-marker && "
                     "mkdir -p /opt/tool /srv/x && echo a > /opt/tool/f && mkdir /xbtop && echo made; "
                     "cat /usr/bin/xb-layer-marker /etc/xb-layer-marker")
    assert out.split() == ["0", "made", "a", "a"]
    # The host and another sandbox never see it.
    assert not os.path.exists("/usr/bin/xb-layer-marker") and not os.path.exists("/etc/xb-layer-marker")
    assert ok(srv, b, "ls /usr/bin/xb-layer-marker /etc/xb-layer-marker /xbtop 2>&1 | grep -c 'No such'") == "3\n"
    # Every mount is nosuid and nodev; the overlays are the ones planned.
    mounts = ok(srv, a, "cat /proc/self/mounts")
    targets = {}
    for line in mounts.splitlines():
        dev, target, fstype, opts = line.split()[:4]
        assert "nosuid" in opts.split(",") or fstype in ("devtmpfs",) and target.startswith(("/dev/", "/proc/")), line
        if fstype not in ("devtmpfs", "devpts"):
            assert "nodev" in opts.split(","), line
        targets[target] = fstype
    for t in ("/", "/usr", "/etc", "/var/lib/dpkg"):
        assert targets.get(t) == "overlay", (t, targets)
    # The sandbox's user cannot write system files; root inside can.
    r = sh(srv, b, "touch /usr/bin/nope")
    assert r["exit_code"] != 0 and "Permission denied" in r["stderr"]
    assert ok(srv, b, "echo x > /home/user/f && echo x > /tmp/f && echo x > /var/tmp/f && echo ok") == "ok\n"


def test_root_on_create_and_exec(srv):
    a = srv.create(user="root")
    assert a["user"] == "root"
    assert ok(srv, a["id"], "id -u") == "0\n"
    assert ok(srv, a["id"], "id -u", user="user") == "1000\n"
    b = srv.create()
    assert "user" not in b
    assert ok(srv, b["id"], "id -u") == "1000\n"
    assert ok(srv, b["id"], "id -u", user="root") == "0\n"
    expect_error(srv.post("/v1/sandboxes", {"user": "admin"}), 400, "invalid_request")
    # Root inside is the sandbox's own uid 0: an unprivileged host range of its own.
    maps = [ok(srv, sid, "cat /proc/self/uid_map").split() for sid in (a["id"], b["id"])]
    for m in maps:
        assert m[0] == "0" and int(m[1]) >= 0x40000000 and int(m[2]) == 65536, m
    assert maps[0][1] != maps[1][1]


def _deb(tmp, name="xbhello", version="1.0", body="echo hello-from-deb"):
    root = tmp / f"{name}-pkg"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "usr/bin").mkdir(parents=True)
    (root / "DEBIAN/control").write_text(f"Package: {name}\nVersion: {version}\nArchitecture: all\n"
                                         f"Maintainer: test <t@example.invalid>\nDescription: execbox test\n")
    exe = root / "usr/bin" / name
    exe.write_text(f"#!/bin/sh\n{body}\n")
    exe.chmod(0o755)
    out = tmp / f"{name}_{version}_all.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-b", str(root), str(out)], check=True, capture_output=True)
    return out.read_bytes()


def put(srv, sid, path, data):
    return expect(srv.request("PUT", f"/v1/sandboxes/{sid}/files", params={"path": path}, data=data), 200)


@pytest.mark.skipif(not shutil.which("dpkg-deb") or not shutil.which("dpkg-scanpackages"),
                    reason="needs dpkg-dev (scripts/deps.sh)")
def test_dpkg_and_apt_install_as_root(srv, tmp_path):
    a = srv.create(user="root")["id"]
    b = srv.create(user="root")["id"]
    # The base template carries the host's dpkg database: apt knows what is installed.
    assert ok(srv, a, "dpkg-query -W -f='${Status}' dpkg") == "install ok installed"
    put(srv, a, "/tmp/xbhello_1.0_all.deb", _deb(tmp_path))
    out = ok(srv, a, "dpkg -i /tmp/xbhello_1.0_all.deb >/dev/null && xbhello && dpkg-query -W xbhello")
    assert out.split() == ["hello-from-deb", "xbhello", "1.0"]
    # apt-get against a local file: repository the test made.
    put(srv, a, "/tmp/xbworld_2.0_all.deb", _deb(tmp_path, "xbworld", "2.0", "echo world-from-apt"))
    out = ok(srv, a, "mkdir -p /srv/repo && mv /tmp/xbworld_2.0_all.deb /srv/repo/ && cd /srv/repo && dpkg-scanpackages -m . > Packages 2>/dev/null && "
                     "echo 'deb [trusted=yes] file:/srv/repo ./' > /etc/apt/sources.list.d/xb.list && "
                     "apt-get update -o Dir::Etc::sourcelist=/etc/apt/sources.list.d/xb.list "
                     "-o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0 -qq && "
                     "apt-get install -y -qq --no-install-recommends xbworld >/dev/null && xbworld", timeout=300)
    assert out.strip().endswith("world-from-apt")
    # Only that sandbox has them.
    assert ok(srv, b, "command -v xbhello xbworld; dpkg-query -W xbhello 2>&1 | grep -c 'no packages'") == "1\n"
    assert not os.path.exists("/usr/bin/xbhello") and not os.path.exists("/usr/bin/xbworld")


def _wheel() -> bytes:
    buf = io.BytesIO()
    files = {
        "xbwheel/__init__.py": "MARK = 'wheel-ok'\n",
        "xbwheel-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: xbwheel\nVersion: 1.0\n",
        "xbwheel-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{k},,\n" for k in files) + "xbwheel-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(buf, "w") as z:
        for k, v in files.items():
            z.writestr(k, v)
        z.writestr("xbwheel-1.0.dist-info/RECORD", record)
    return buf.getvalue()


@pytest.mark.skipif(subprocess.run(["/usr/bin/python3", "-m", "pip", "--version"], capture_output=True).returncode,
                    reason="needs python3-pip")
def test_pip_and_npm_install_system_wide(srv):
    a = srv.create(user="root")["id"]
    put(srv, a, "/tmp/xbwheel-1.0-py3-none-any.whl", _wheel())
    out = ok(srv, a, "python3 -m pip install --no-index --break-system-packages -q /tmp/xbwheel-1.0-py3-none-any.whl"
                     " 2>&1 | grep -v WARNING; cd / && python3 -c 'import xbwheel, sys; print(xbwheel.MARK, "
                     "xbwheel.__file__.startswith(\"/usr/local/lib/\"))'", timeout=300)
    assert out.strip().endswith("wheel-ok True"), out
    if shutil.which("npm"):
        out = ok(srv, a, "mkdir -p /tmp/p && cd /tmp/p && printf '{\"name\":\"xbnpm\",\"version\":\"1.0.0\","
                         "\"bin\":{\"xbnpm\":\"cli.js\"}}' > package.json && "
                         "printf '#!/usr/bin/env node\\nconsole.log(\"npm-ok\")\\n' > cli.js && "
                         "npm pack --silent >/dev/null && npm install -g --offline --no-audit --no-fund "
                         "--silent ./xbnpm-1.0.0.tgz >/dev/null && command -v xbnpm && xbnpm", timeout=300)
        assert out.split()[-1] == "npm-ok", out
        assert out.split()[0].startswith("/usr/"), out
    assert not os.path.exists("/usr/local/lib/node_modules/xbnpm")


# ---- the disk limit ----

def test_disk_limit_stops_writes_host_and_others_untouched(srv):
    a = srv.create(user="root", limits={"disk": 64 << 20})["id"]
    b = srv.create()["id"]
    host_free = shutil.disk_usage(srv.state_dir).free
    r = sh(srv, a, "python3 - <<'EOF'\nimport errno, os\nn = 0\ntry:\n    with open('/usr/fill', 'wb') as f:\n"
                   "        while n < 200 << 20:\n            f.write(b'x' * (1 << 20)); n += 1 << 20\n"
                   "        f.flush(); os.fsync(f.fileno())\nexcept OSError as e:\n"
                   "    print(errno.errorcode[e.errno], n >> 20)\nEOF")
    code, mib = r["stdout"].split()
    # btrfs qgroups answer EDQUOT ("Disk quota exceeded"); see docs/layers.md.
    assert code in ("EDQUOT", "ENOSPC"), r
    assert 40 <= int(mib) <= 64, r
    # The other sandbox still writes; the host lost at most the limit.
    assert ok(srv, b, "head -c 16M /dev/zero > /home/user/f && echo ok") == "ok\n"
    assert host_free - shutil.disk_usage(srv.state_dir).free < (200 << 20)
    # Freeing space in the layer makes it writable again.
    assert ok(srv, a, "rm /usr/fill && echo y > /usr/after && cat /usr/after") == "y\n"


# ---- snapshots, forks, templates ----

def test_fork_sees_200mb_and_diverges(srv):
    p = srv.create(env={"XB_FORK": "kept"}, limits={"memory": 256 << 20})["id"]
    digest = ok(srv, p, "head -c 200M /dev/urandom > /home/user/big && echo root-made > /var/tmp/m && "
                        "md5sum /home/user/big", timeout=300).split()[0]
    kids = expect(srv.post(f"/v1/sandboxes/{p}/fork", {"count": 2}), 201).json()
    assert kids["parent"] == p and len(kids["sandboxes"]) == 2
    for k in kids["sandboxes"]:
        assert k["limits"]["memory"] == 256 << 20
        out = ok(srv, k["id"], "md5sum /home/user/big; cat /var/tmp/m; echo $XB_FORK")
        assert out.split() == [digest, "/home/user/big", "root-made", "kept"], out
    k0 = kids["sandboxes"][0]["id"]
    ok(srv, k0, "echo child > /home/user/big")
    assert ok(srv, p, "md5sum /home/user/big").split()[0] == digest
    assert ok(srv, kids["sandboxes"][1]["id"], "md5sum /home/user/big").split()[0] == digest
    expect_error(srv.post(f"/v1/sandboxes/{p}/fork", {"count": 0}), 400, "invalid_request")
    # The env can be added to, and the lease changed.
    k = expect(srv.post(f"/v1/sandboxes/{p}/fork", {"env": {"XB_KID": "yes"}, "timeout_s": 60}), 201).json()
    k = k["sandboxes"][0]
    assert k["timeout_s"] == 60
    assert ok(srv, k["id"], "echo $XB_FORK $XB_KID") == "kept yes\n"


def test_snapshot_is_a_template(srv):
    p = srv.create(user="root", env={"XB_T": "1"})["id"]
    ok(srv, p, "echo v1 > /usr/local/bin/xbtool && chmod +x /usr/local/bin/xbtool && rm /etc/debian_version")
    t = expect(srv.post(f"/v1/sandboxes/{p}/snapshot", {"name": "xb-tools"}), 201).json()
    assert t["name"] == "xb-tools" and t["parent"] == p and len(t["layers"]) == 1 and t["user"] == "root"
    assert os.path.exists(os.path.join(srv.state_dir, "templates", "xb-tools.json"))
    expect_error(srv.post(f"/v1/sandboxes/{p}/snapshot", {"name": "xb-tools"}), 409, "template_exists")
    expect_error(srv.post(f"/v1/sandboxes/{p}/snapshot", {"name": "../x"}), 400, "invalid_request")
    names = [x["name"] for x in expect(srv.get("/v1/templates"), 200).json()["templates"]]
    assert names == ["base", "xb-tools"]
    # The parent goes on and changes; the template does not.
    ok(srv, p, "echo v2 > /usr/local/bin/xbtool")
    c1 = srv.create(template="xb-tools")
    assert c1["user"] == "root" and c1["template"] == "xb-tools"
    out = ok(srv, c1["id"], "cat /usr/local/bin/xbtool; echo $XB_T; test -e /etc/debian_version || echo gone")
    assert out.split() == ["v1", "1", "gone"]
    # A child's change stays in the child; a second child sees the template.
    ok(srv, c1["id"], "echo c1 > /usr/local/bin/xbtool")
    c2 = srv.create(template="xb-tools", user="user")["id"]
    assert ok(srv, c2, "id -u; cat /usr/local/bin/xbtool").split() == ["1000", "v1"]
    # A snapshot of a template's sandbox stacks a layer on its layers.
    t2 = expect(srv.post(f"/v1/sandboxes/{c1['id']}/snapshot", {"name": "xb-tools-2"}), 201).json()
    assert t2["layers"][1:] == t["layers"]
    expect_error(srv.delete("/v1/templates/xb-tools"), 409, "template_in_use")
    expect_error(srv.get("/v1/templates/nope"), 404, "template_not_found")
    expect_error(srv.post("/v1/sandboxes", {"template": "nope"}), 400)
    srv.remove(c1["id"])
    srv.remove(c2)
    sf.wait_for_leftovers  # noqa: B018 (the removals are synchronous enough below)
    for _ in range(50):
        r = srv.delete("/v1/templates/xb-tools")
        if r.status_code == 204:
            break
        import time
        time.sleep(0.1)
    assert r.status_code == 204, r.text
    store = store_of(srv)
    # xb-tools-2 still stacks on the first layer: it stays.
    assert sorted(os.listdir(f"{store}/layers")) == sorted(t2["layers"])
    expect(srv.delete("/v1/templates/xb-tools-2"), 204)
    assert os.listdir(f"{store}/layers") == []


def test_templates_persist_across_restart(server_factory, tmp_path):
    s1 = server_factory(pool=0)
    p = s1.create()["id"]
    ok(s1, p, "echo kept > /home/user/f")
    expect(s1.post(f"/v1/sandboxes/{p}/snapshot", {"name": "keep"}), 201)
    state = s1.state_dir
    s1.stop()
    assert loops_of(state) == []
    s2 = server_factory(state_dir=state, pool=0)
    c = s2.create(template="keep")["id"]
    assert ok(s2, c, "cat /home/user/f") == "kept\n"
    # Stopped here, so that s1's leftover check does not see s2's sandboxes.
    s2.stop()
    assert loops_of(state) == []


def test_delete_leaves_nothing(server_factory):
    srv = server_factory(pool=1)
    store = store_of(srv)
    ids = [srv.create(user="root")["id"] for _ in range(2)]
    ok(srv, ids[0], "head -c 8M /dev/urandom > /usr/x")
    kids = [k["id"] for k in expect(srv.post(f"/v1/sandboxes/{ids[0]}/fork", {"count": 2}), 201).json()["sandboxes"]]
    in_store = set(os.listdir(f"{store}/sbx"))
    assert set(ids + kids) <= in_store
    for sid in ids + kids:
        srv.remove(sid)
    import time
    deadline = time.monotonic() + 10
    while set(ids + kids) & set(os.listdir(f"{store}/sbx")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not set(ids + kids) & set(os.listdir(f"{store}/sbx"))
    state = srv.state_dir
    assert len(loops_of(state)) == 1
    # The host never sees the store's mount: it is the server's own.
    point = store.split("/root", 1)[1]
    assert not [l for l in open("/proc/self/mountinfo") if f" {point} " in l]
    srv.stop()
    # The server's stop takes the store down: no loop device, no mount.
    assert loops_of(state) == []
    assert not [l for l in open("/proc/self/mountinfo") if f" {point} " in l]


def test_sigkilled_server_leaves_no_loop_device(execbox, server_factory, tmp_path):
    import signal
    import time
    # Not the factory's: it would count the SIGKILL as a failed stop.
    srv = sf.start_server(execbox, str(tmp_path / "killed"), pool=1)
    try:
        a = srv.create(user="root")["id"]
        ok(srv, a, "echo x > /usr/x")
        state = srv.state_dir
        assert len(loops_of(state)) == 1
    finally:
        os.kill(srv.pid, signal.SIGKILL)
        srv.proc.wait(10)
    # Its mount namespace, its sandboxes (their parent died), then the
    # store's last mount go; the loop device clears itself.
    deadline = time.monotonic() + 10
    while loops_of(state) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert loops_of(state) == []
    # A new server on the same state directory starts clean.
    s2 = server_factory(state_dir=state, pool=0)
    assert ok(s2, s2.create()["id"], "echo ok") == "ok\n"
    s2.stop()
    assert loops_of(state) == []


# ---- attacks, as root inside ----

def test_setuid_in_layer_stays_powerless(srv, xbprobe, tmp_path):
    a = srv.create(user="root")["id"]
    put(srv, a, "/tmp/xbsu", open(xbprobe, "rb").read())
    out = ok(srv, a, "mv /tmp/xbsu /usr/local/bin/xbsu && chown 0:0 /usr/local/bin/xbsu && chmod 4755 /usr/local/bin/xbsu && "
                     "stat -c '%a %u' /usr/local/bin/xbsu")
    assert out == "4755 0\n"
    r = sh(srv, a, "/usr/local/bin/xbsu posture", user="user")
    ids = json.loads(r["stdout"])
    assert ids["uid"] == 1000 and ids["euid"] == 1000, ids
    # Positive control: the file the sandbox made is a real setuid-root
    # binary on the host's disk; copied where setuid is honoured it gives
    # an unprivileged host user euid 0. In the store (nosuid) it does not.
    store = store_of(srv)
    planted = f"{store}/sbx/{a}/up/usr/local/bin/xbsu"
    st = os.stat(planted)
    assert st.st_mode & stat.S_ISUID and st.st_uid == 0
    ctl = "/var/tmp/xb-suid-control"
    shutil.copyfile(planted, ctl)
    os.chown(ctl, 0, 0)
    os.chmod(ctl, 0o4755)
    try:
        def euid_as_nobody(path):
            r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", path, "posture"],
                               capture_output=True, text=True, timeout=30)
            return json.loads(r.stdout)["euid"]
        assert euid_as_nobody(ctl) == 0
    finally:
        os.unlink(ctl)
    st = os.statvfs(store)
    assert st.f_flag & os.ST_NOSUID and st.f_flag & os.ST_NODEV


def test_mknod_refused_as_root(srv):
    a = srv.create(user="root")["id"]
    r = sh(srv, a, "id -u; mknod /usr/xbnull c 1 3; echo rc=$?; mknod /tmp/xbblk b 7 0; echo rc=$?; "
                   "mkfifo /tmp/fifo && echo fifo-ok")
    out = r["stdout"].split()
    assert out[0] == "0" and out[1] == "rc=1" and out[2] == "rc=1" and out[3] == "fifo-ok", r
    assert "Operation not permitted" in r["stderr"]


def test_links_never_followed_on_the_host(server_factory, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    srv = server_factory("--allow-mount", str(tmp_path), pool=0)
    secret = tmp_path / "host-secret"
    secret.write_text("host secret\n")
    a = srv.create(user="root")["id"]
    # Symlinks and hardlinks to host paths, and a symlink where a later
    # sandbox of this layer gets a mount.
    ok(srv, a, f"ln -s {secret} /home/user/to-secret && ln -s /etc/shadow /home/user/to-shadow && "
               "ln /usr/bin/passwd /usr/local/bin/hard-passwd && ln -s /etc /home/user/work && "
               "ln -s /proc/1/root /home/user/to-root && echo planted")
    expect(srv.post(f"/v1/sandboxes/{a}/snapshot", {"name": "links"}), 201)
    kid = expect(srv.post(f"/v1/sandboxes/{a}/fork", {"count": 1}), 201).json()["sandboxes"][0]["id"]
    for sid in (a, kid):
        r = srv.request("GET", f"/v1/sandboxes/{sid}/files", params={"path": "/home/user/to-secret"})
        assert r.status_code in (400, 403, 404) or b"host secret" not in r.content, r.text
        r = srv.request("GET", f"/v1/sandboxes/{sid}/files", params={"path": "/usr/local/bin/hard-passwd"})
        assert r.status_code == 200 and r.content == open("/usr/bin/passwd", "rb").read()
        assert ok(srv, sid, "cat /home/user/to-secret 2>&1 | grep -c 'host secret' || true") == "0\n"
    # A sandbox of the template with a mount where the layer has a symlink:
    # the mount is refused, never placed over the link's target.
    r = srv.post("/v1/sandboxes", {"template": "links", "mounts": [
        {"host": str(work), "path": "/home/user/work", "readonly": False}]})
    if r.status_code == 201:
        # Set-up ends in the sandbox's setup child, after the reply: it fails
        # there, and the sandbox is gone before anything runs in it.
        r = srv.post(f"/v1/sandboxes/{r.json()['id']}/exec", {"cmd": "touch /home/user/work/x"})
        assert r.status_code >= 400 or r.json()["status"] == "killed", r.text
    else:
        assert r.status_code >= 400, r.text
    import time
    deadline = time.monotonic() + 10
    while "has a symlink on the way to /home/user/work" not in srv.stderr() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "has a symlink on the way to /home/user/work" in srv.stderr()
    assert secret.read_text() == "host secret\n"
    assert os.listdir(work) == []


def test_sandbox_cannot_change_template_or_other_layers(srv):
    p = srv.create(user="root")["id"]
    ok(srv, p, "echo orig > /usr/local/share/xbt")
    expect(srv.post(f"/v1/sandboxes/{p}/snapshot", {"name": "ro"}), 201)
    a = srv.create(template="ro")["id"]
    b = srv.create(template="ro")["id"]
    out = ok(srv, a, "echo changed > /usr/local/share/xbt; rm -rf /usr/local/share; "
                     "grep -c /tmp/s/ /proc/self/mountinfo; ls /tmp/s 2>&1 | grep -c 'No such'; echo done")
    assert out.split()[-1] == "done" and out.split()[-2] == "1", out
    assert ok(srv, b, "cat /usr/local/share/xbt") == "orig\n"
    assert ok(srv, p, "cat /usr/local/share/xbt") == "orig\n"
    store = store_of(srv)
    layer = expect(srv.get("/v1/templates/ro"), 200).json()["layers"][0]
    assert open(f"{store}/layers/{layer}/up/usr/local/share/xbt").read() == "orig\n"
    # The layers are read-only subvolumes, even for the host's root.
    with pytest.raises(OSError):
        open(f"{store}/layers/{layer}/up/usr/local/share/xbt", "w")


def test_memory_layers_option(server_factory):
    srv = server_factory("--layers", "memory", pool=0)
    a = srv.create(user="root")["id"]
    assert ok(srv, a, "echo m > /usr/bin/xbmem && cat /usr/bin/xbmem && findmnt -no FSTYPE /usr") == "m\noverlay\n"
    expect_error(srv.post(f"/v1/sandboxes/{a}/snapshot", {"name": "x"}), 409, "layers_unsupported")
    assert not os.path.exists(os.path.join(srv.state_dir, "layers.img"))


# ---- id-mapped workspaces ----

def test_workspace_shared_with_host_owner_and_between_sandboxes(server_factory, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    os.chown(ws, 1234, 1235)
    (ws / "host.txt").write_text("host\n")
    os.chown(ws / "host.txt", 1234, 1235)
    srv = server_factory("--allow-mount", str(tmp_path), pool=0)
    mount = lambda path: [{"host": str(ws), "path": path, "readonly": False}]  # noqa: E731
    a = srv.create(mounts=mount("/home/user/ws"))["id"]
    b = srv.create(user="root", mounts=mount("/mnt/ws"))["id"]
    # The owner's files are the sandbox user's (and root's, in a root sandbox).
    assert ok(srv, a, "stat -c '%u:%g' /home/user/ws /home/user/ws/host.txt").split() == ["1000:1000"] * 2
    assert ok(srv, b, "stat -c '%u:%g' /mnt/ws/host.txt") == "0:0\n"
    ok(srv, a, "echo from-a > /home/user/ws/a.txt && echo more >> /home/user/ws/host.txt && mkdir /home/user/ws/d")
    # The second sandbox edits the first one's files, and the other way round.
    ok(srv, b, "echo from-b >> /mnt/ws/a.txt && echo b > /mnt/ws/d/b.txt")
    assert ok(srv, a, "cat /home/user/ws/a.txt; echo again >> /home/user/ws/d/b.txt && cat /home/user/ws/d/b.txt") \
        == "from-a\nfrom-b\nb\nagain\n"
    # On the host every file belongs to the directory's owner.
    for p in [ws / "a.txt", ws / "host.txt", ws / "d", ws / "d" / "b.txt"]:
        st = os.lstat(p)
        assert (st.st_uid, st.st_gid) == (1234, 1235), (p, st.st_uid, st.st_gid)
    # The setuid and device protections stay: nosuid and nodev on the mount.
    opts = ok(srv, a, "grep ' /home/user/ws ' /proc/self/mounts").split()[3].split(",")
    assert "nosuid" in opts and "nodev" in opts and "idmapped" in opts, opts
    r = sh(srv, b, "cp /usr/bin/id /mnt/ws/suid && chmod 4755 /mnt/ws/suid && stat -c %a /mnt/ws/suid && "
                   "su -s /bin/sh nobody -c '/mnt/ws/suid -u' 2>&1 || setpriv --reuid=65534 /mnt/ws/suid -u")
    assert r["stdout"].split()[0] == "4755" and r["stdout"].split()[-1] == "65534", r


def test_workspace_owner_chosen_by_the_operator(server_factory, tmp_path):
    ws = tmp_path / "ws2"
    ws.mkdir()
    os.chown(ws, 2000, 2000)
    srv = server_factory("--allow-mount", str(tmp_path), "--mount-owner", "2000:2000", pool=0)
    a = srv.create(mounts=[{"host": str(ws), "path": "/mnt/w", "readonly": False}])["id"]
    ok(srv, a, "echo x > /mnt/w/f")
    st = os.lstat(ws / "f")
    assert (st.st_uid, st.st_gid) == (2000, 2000)
    ro = srv.create(mounts=[{"host": str(ws), "path": "/mnt/w"}])["id"]
    r = sh(srv, ro, "cat /mnt/w/f && echo y > /mnt/w/g")
    assert r["stdout"] == "x\n" and "Read-only file system" in r["stderr"], r
