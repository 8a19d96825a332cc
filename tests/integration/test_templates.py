"""Templates built from steps, from a clean Debian rootfs (mmdebstrap) and
from an OCI image archive; their metadata and start commands; and the
attacks an image's layers may carry."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest

import server_fixture as sf
from server_fixture import expect, expect_error, server_factory  # noqa: F401
from server_fixture import shell as sh, shell_ok as ok
from server_fixture import small_state  # noqa: F401
from test_big_replies import Probe, rss


def build(srv, body, timeout=600):
    return srv.post("/v1/templates", body, timeout=timeout)


def sse_events(resp):
    """(event, data) pairs of a text/event-stream reply."""
    return [(n, d) for _, n, d in sf.sse_events(resp, 0.0)]


def drop(srv, name):
    """Delete a template once its sandboxes' ends are through (a sandbox's
    delete answers before its reference goes)."""
    for _ in range(100):
        r = srv.delete(f"/v1/templates/{name}")
        if r.status_code != 409:
            break
        time.sleep(0.1)
    expect(r, 204)


@pytest.fixture
def srv(server_factory):
    return server_factory(pool=0)


# ---- built from steps ----

def test_build_from_steps_apt_files_env_workdir_start(srv):
    assert shutil.which("hello") is None   # the host lacks it: apt fetches it in packages mode
    body = {"name": "xb-steps", "apt": ["hello"],
            "files": {"/srv/app/greet.txt": "hi from files\n"},
            "run": ["mkdir -p /srv/app && echo built-by-run > /srv/app/marker",
                    "printf '#!/bin/sh\\ncd /srv/app && exec python3 -m http.server 8123 --bind 127.0.0.1\\n' "
                    "> /usr/local/bin/xb-serve && chmod 755 /usr/local/bin/xb-serve"],
            "env": {"XB_GREETING": "bonjour"}, "workdir": "/srv/app", "user": "user",
            "start": {"cmd": "xb-serve", "ready": {"port": 8123}, "timeout_s": 20}}
    r = srv.post("/v1/templates", body, timeout=600, headers={"Accept": "text/event-stream"}, stream=True)
    expect(r, 200)   # a stream: its outcome is the last event
    evs = sse_events(r)
    steps = [d for n, d in evs if n == "step"]
    assert evs[-1][0] == "result", "".join(d["data"] for n, d in evs if n == "log")[-3000:] + str(evs[-1])
    assert [s["kind"] for s in steps] == ["apt", "file", "run", "run"], evs[:5]
    assert steps[-1]["step"] == 4 and steps[-1]["steps"] == 4
    assert any(n == "log" and "hello" in d["data"] for n, d in evs)
    res = [d for n, d in evs if n == "result"][-1]
    assert res["name"] == "xb-steps" and res["state"] == "ready" and res["workdir"] == "/srv/app"
    assert res["env"] == {"XB_GREETING": "bonjour"} and res["user"] == "user"
    assert res["start"]["ready"] == {"port": 8123}
    got = srv.get("/v1/templates/xb-steps").json()
    assert got["state"] == "ready" and got["layers"] == res["layers"] and len(got["layers"]) == 1
    # A sandbox of it: the package, the files, env, workdir, user and its server, ready at create.
    sb = srv.create(template="xb-steps")
    assert sb["start"]["pid"] > 0, sb
    sid = sb["id"]
    out = ok(srv, sid, "hello; cat greet.txt marker; echo $XB_GREETING; pwd; id -u; "
                       "python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:8123/marker')"
                       ".read().decode())\"")
    assert out.split("\n")[:7] == ["Hello, world!", "hi from files", "built-by-run", "bonjour", "/srv/app",
                                   "1000", "built-by-run"], out
    # The build sandbox is gone; the template in use cannot be deleted.
    assert [s["id"] for s in srv.get("/v1/sandboxes").json()["sandboxes"]] == [sid]
    expect_error(srv.delete("/v1/templates/xb-steps"), 409, "template_in_use")
    srv.remove(sid)
    # base stays without it.
    b = srv.create()["id"]
    assert sh(srv, b, "command -v hello")["exit_code"] != 0
    srv.remove(b)
    drop(srv, "xb-steps")


def test_failing_step_reports_index_exit_code_and_log(srv):
    r = build(srv, {"name": "xb-bad", "run": ["echo one", "echo about-to-fail >&2; exit 7", "echo never"]})
    expect_error(r, 422, "template_build_failed")
    msg = r.json()["error"]["message"]
    assert "step 2 of 3" in msg and "exit code 7" in msg and "about-to-fail" in msg, msg
    got = srv.get("/v1/templates/xb-bad").json()
    assert got["state"] == "failed" and got["progress"]["step"] == 2 and got["progress"]["steps"] == 3, got
    assert "about-to-fail" in got["progress"]["log_tail"]
    assert got["error"]["code"] == "template_build_failed"
    # No build sandbox is left; the failed build can be forgotten, and the name built again.
    assert srv.get("/v1/sandboxes").json()["sandboxes"] == []
    expect(srv.delete("/v1/templates/xb-bad"), 204)
    expect_error(srv.get("/v1/templates/xb-bad"), 404, "template_not_found")
    expect(build(srv, {"name": "xb-bad", "run": ["true"]}), 201)
    expect(srv.delete("/v1/templates/xb-bad"), 204)


def test_progress_while_building(srv):
    import threading
    done = {}

    def post():
        done["r"] = build(srv, {"name": "xb-slowbuild", "run": ["echo first", "echo second-step; sleep 3"]})
    th = threading.Thread(target=post)
    th.start()
    seen = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and th.is_alive():
        g = srv.get("/v1/templates/xb-slowbuild")
        if g.status_code == 200 and g.json().get("progress", {}).get("step") == 2:
            seen = g.json()
            expect_error(build(srv, {"name": "xb-slowbuild", "run": ["true"]}), 409, "template_exists")
            expect_error(srv.delete("/v1/templates/xb-slowbuild"), 409, "template_in_use")
            break
        time.sleep(0.1)
    th.join()
    assert seen and seen["state"] == "building" and seen["progress"]["steps"] == 2, seen
    assert seen["progress"]["kind"] == "run" and seen["progress"]["sandbox_id"]
    # The name is taken while it builds; listed with its state.
    expect(done["r"], 201)
    assert srv.get("/v1/templates/xb-slowbuild").json()["state"] == "ready"
    assert "xb-slowbuild" in [t["name"] for t in srv.get("/v1/templates").json()["templates"]]
    drop(srv, "xb-slowbuild")


def test_build_arguments_are_checked(srv):
    for body, word in (({"run": ["true"]}, "name"), ({"name": "x1", "apt": ["Bad;rm"]}, "apt[0]"),
                       ({"name": "x1", "workdir": "rel"}, "workdir"),
                       ({"name": "x1", "files": {"rel/p": "x"}}, "files"),
                       ({"name": "x1", "start": {"cmd": "x", "ready": {"port": 0}}}, "port"),
                       ({"name": "x1", "bogus": 1}, "bogus")):
        r = build(srv, body)
        expect_error(r, 400, "invalid_request")
        assert word in r.json()["error"]["message"], (body, r.json())
    expect_error(build(srv, {"name": "x1", "from": "nosuch"}), 404, "template_not_found")
    expect_error(build(srv, {"name": "base"}), 409, "template_exists")


def test_start_command_that_never_gets_ready_fails_create(srv):
    expect(build(srv, {"name": "xb-slow", "start": {"cmd": "echo starting; sleep 1; echo bye >&2",
                                                     "ready": {"port": 8999}, "timeout_s": 5}}), 201)
    r = srv.post("/v1/sandboxes", {"template": "xb-slow"}, timeout=60)
    expect_error(r, 504, "template_not_ready")
    msg = r.json()["error"]["message"]
    assert "exited" in msg and "port 8999" in msg and "starting" in msg, msg
    assert srv.get("/v1/sandboxes").json()["sandboxes"] == []
    # A file readiness.
    expect(build(srv, {"name": "xb-file", "start": {"cmd": "sleep 0.3; touch /tmp/up; sleep 1000",
                                                     "ready": {"file": "/tmp/up"}}}), 201)
    sb = srv.create(template="xb-file")
    assert sb["start"]["ready_ms"] >= 250, sb
    srv.remove(sb["id"])
    for n in ("xb-slow", "xb-file"):
        drop(srv, n)


# ---- a clean Debian root (mmdebstrap) ----

@pytest.mark.skipif(not shutil.which("mmdebstrap"), reason="mmdebstrap is not installed (scripts/deps.sh)")
def test_from_debian_suite_has_no_host_files(srv):
    assert os.path.exists("/usr/bin/python3")   # the host has it; a clean minbase does not
    t0 = time.monotonic()
    # Streamed: mmdebstrap's own output arrives as log events of step 1 while it runs.
    r = srv.post("/v1/templates", {"name": "xb-deb", "from": "debian:bookworm", "apt": ["hello"],
                                   "run": ["echo deb-step > /etc/xb-step"], "env": {"XB_D": "1"}},
                 timeout=900, headers={"Accept": "text/event-stream"}, stream=True)
    expect(r, 200)
    evs = sf.sse_events(r, t0)   # (seconds since t0, event, data), as read
    first = time.monotonic() - t0
    assert evs[-1][1] == "result", evs[-1]
    t = evs[-1][2]
    steps = [d for _, n, d in evs if n == "step"]
    assert steps[0]["kind"] == "rootfs" and steps[0]["step"] == 1, steps
    deb_logs = [(at, d) for at, n, d in evs if n == "log" and d["step"] == 1]
    assert deb_logs and any("mmdebstrap" in d["data"] or d["data"].startswith("I: ") for _, d in deb_logs), evs[:8]
    # They came while it ran, long before the end: the first one before the apt step began.
    apt_at = next(at for at, n, d in evs if n == "step" and d["kind"] == "apt")
    assert deb_logs[0][0] < apt_at - 1.0, (deb_logs[0][0], apt_at)
    assert sum(len(d["data"]) for _, d in deb_logs) < (4 << 20) + 4096
    assert t["rootfs"] is True and len(t["layers"]) == 2, t
    # The clean root is a template of its own, which a second build reuses.
    deb = srv.get("/v1/templates/debian-bookworm").json()
    assert deb["rootfs"] is True and t["layers"][1:] == deb["layers"]
    sid = srv.create(template="xb-deb")["id"]
    assert ok(srv, sid, "hello") == "Hello, world!\n"   # apt ran on the clean root, through packages mode
    out = ok(srv, sid, "cat /etc/debian_version /etc/xb-step; echo $XB_D; id -un; "
                       "test -e /usr/bin/python3 && echo HOST-PYTHON || echo no-python; "
                       "test -e /usr/lib/x86_64-linux-gnu/libjansson.so.4 && echo HOST-LIB || echo no-lib; "
                       "grep -c . /var/lib/dpkg/status >/dev/null && dpkg-query -W python3 2>&1 | grep -c 'no packages'")
    lines = out.split()
    assert lines[0].startswith("12.") and lines[1:] == ["deb-step", "1", "user", "no-python", "no-lib", "1"], out
    # Root inside can change its own root; a snapshot of it is still a whole root.
    ok(srv, sid, "echo mine > /usr/local/xb-mine", user="root")
    snap = expect(srv.post(f"/v1/sandboxes/{sid}/snapshot", {"name": "xb-deb-snap"}), 201).json()
    assert snap["rootfs"] is True
    s2 = srv.create(template="xb-deb-snap")["id"]
    assert ok(srv, s2, "cat /usr/local/xb-mine; test -e /usr/bin/python3 || echo none").split() == ["mine", "none"]
    t0 = time.monotonic()
    expect(build(srv, {"name": "xb-deb2", "from": "debian:bookworm"}), 201)
    assert time.monotonic() - t0 < max(15, first / 3)   # no second mmdebstrap
    expect_error(build(srv, {"name": "x", "from": "debian:Bad1"}), 400, "invalid_request")
    for x in (sid, s2):
        srv.remove(x)
    for n in ("xb-deb-snap", "xb-deb", "xb-deb2", "debian-bookworm"):
        drop(srv, n)


@pytest.mark.skipif(not shutil.which("mmdebstrap"), reason="mmdebstrap is not installed (scripts/deps.sh)")
def test_from_debian_failure_streams_mmdebstraps_output_and_quotes_its_end(srv):
    """A suite the mirror lacks: mmdebstrap fails; its output arrived as log
    events before the error event, and the error quotes the end of it."""
    r = srv.post("/v1/templates", {"name": "xb-nodeb", "from": "debian:xbnosuchsuite"}, timeout=600,
                 headers={"Accept": "text/event-stream"}, stream=True)
    expect(r, 200)
    evs = sf.sse_events(r, time.monotonic())
    names = [n for _, n, _ in evs]
    assert names[-1] == "error", names
    err = evs[-1][2]
    assert err["code"] == "template_build_failed" and "mmdebstrap xbnosuchsuite" in err["message"], err
    logs = [d for _, n, d in evs if n == "log"]
    assert logs and names.index("log") < len(names) - 1 and all(d["step"] == 1 for d in logs), names
    text = "".join(d["data"] for d in logs)
    assert "xbnosuchsuite" in text, text[-2000:]
    # The message's quoted end is the end of what was streamed.
    quoted = err["message"].split("the end of its output:\n", 1)[1]
    assert quoted.strip() and text.rstrip().endswith(quoted.strip()[-200:]), (quoted[-300:], text[-300:])
    got = srv.get("/v1/templates/xb-nodeb").json()
    assert got["state"] == "failed" and got["progress"]["kind"] == "rootfs" and got["progress"]["log_tail"], got
    assert srv.get("/v1/sandboxes").json()["sandboxes"] == []
    expect(srv.delete("/v1/templates/xb-nodeb"), 204)


# ---- imported from an OCI image archive ----

def _mini_root(root):
    """A tiny image root: bash, sh and a few tools with their libraries."""
    import re
    bins = ["/usr/bin/bash", "/usr/bin/dash", "/usr/bin/cat", "/usr/bin/ls", "/usr/bin/stat", "/usr/bin/id"]
    libs = set()
    for b in bins:
        out = subprocess.run(["ldd", b], capture_output=True, text=True).stdout
        libs.update(re.findall(r"(/\S+\.so[.\d]*)", out))
    for d in ("usr/bin", "usr/lib", "usr/lib64", "etc", "srv/w"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for link, target in (("bin", "usr/bin"), ("lib", "usr/lib"), ("lib64", "usr/lib64")):
        os.symlink(target, os.path.join(root, link))
    for f in bins + sorted(libs):
        dest = os.path.join(root, "usr", f.lstrip("/").removeprefix("usr/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(os.path.realpath(f), dest)
    os.symlink("dash", os.path.join(root, "usr/bin/sh"))


def _umoci(*args):
    subprocess.run(["umoci", *args], check=True, capture_output=True)


def _layer_names(layout):
    """Every member name of every layer blob of the layout."""
    import tarfile
    names = []
    for dirpath, _, files in os.walk(os.path.join(layout, "blobs")):
        for f in files:
            p = os.path.join(dirpath, f)
            try:
                with tarfile.open(p) as t:
                    names += t.getnames()
            except tarfile.TarError:
                pass
    return names


def _archive(layout, images, name):
    """The layout as an archive (a tar of it, as `skopeo copy oci-archive:`
    writes) named name in images; its path."""
    path = str(images / name)
    subprocess.run(["tar", "-C", layout, "-cf", path, "."], check=True)
    return path


def _no_import_left(srv):
    """No import's unpacked layout is left in the state directory."""
    assert not [n for n in os.listdir(srv.state_dir) if n.startswith("oci-")]


@pytest.fixture
def oci_srv(server_factory, tmp_path):
    d = tmp_path / "images"
    d.mkdir()
    return server_factory("--allow-mount", str(d), pool=0), d


@pytest.mark.skipif(not shutil.which("umoci"), reason="umoci is not installed (scripts/deps.sh)")
def test_import_oci_archive_with_whiteout_and_config(oci_srv, tmp_path):
    srv, images = oci_srv
    layout, bundle = str(tmp_path / "layout"), str(tmp_path / "bundle")
    _umoci("init", "--layout", layout)
    _umoci("new", "--image", f"{layout}:v1")
    _umoci("unpack", "--image", f"{layout}:v1", bundle)
    _mini_root(os.path.join(bundle, "rootfs"))
    for n in ("gone.txt", "keep.txt"):
        with open(os.path.join(bundle, "rootfs/etc", n), "w") as f:
            f.write(n + "\n")
    _umoci("repack", "--image", f"{layout}:v1", bundle)
    shutil.rmtree(bundle)
    _umoci("unpack", "--image", f"{layout}:v1", bundle)
    os.unlink(os.path.join(bundle, "rootfs/etc/gone.txt"))
    with open(os.path.join(bundle, "rootfs/srv/w/hello"), "w") as f:
        f.write("hello from layer 2\n")
    _umoci("repack", "--image", f"{layout}:v1", bundle)
    shutil.rmtree(bundle)
    _umoci("config", "--image", f"{layout}:v1", "--config.env", "XB_OCI=yes", "--config.workingdir", "/srv/w",
           "--config.user", "1000", "--config.cmd", "/bin/sh", "--config.cmd", "-c",
           "--config.cmd", "echo started > /tmp/oci-started; exec sleep 1000")
    # The second layer deletes gone.txt with a whiteout: the positive control.
    assert any(n.endswith(".wh.gone.txt") for n in _layer_names(layout))
    archive = _archive(layout, images, "img.tar")
    r = build(srv, {"name": "xb-oci", "oci": archive})
    expect(r, 201)
    t = r.json()
    assert t["rootfs"] is True and t["env"] == {"XB_OCI": "yes"} and t["workdir"] == "/srv/w", t
    assert t["user"] == "user" and "oci-started" in t["start"]["cmd"], t
    sid = srv.create(template="xb-oci")["id"]
    out = ok(srv, sid, "pwd; id -u; echo $XB_OCI; cat hello /etc/keep.txt; test -e /etc/gone.txt && echo present || echo whited-out; "
                       "for i in 1 2 3 4 5 6 7 8 9 10; do [ -e /tmp/oci-started ] && break; sleep 0.2; done; "
                       "cat /tmp/oci-started; test -e /usr/bin/python3 || echo no-host-python")
    assert out.split("\n")[:8] == ["/srv/w", "1000", "yes", "hello from layer 2", "keep.txt", "whited-out", "started",
                                   "no-host-python"], out
    # An archive path outside the allowed directories is refused.
    outside = str(tmp_path / "img.tar")
    shutil.copy(archive, outside)
    expect_error(build(srv, {"name": "xb-oci2", "oci": outside}), 400, "invalid_mount")
    expect_error(build(srv, {"name": "xb-oci2", "oci": archive, "run": ["true"]}), 400, "invalid_request")
    # Named by the image's digest: the same image twice is one layer.
    again = expect(build(srv, {"name": "xb-oci-again", "oci": archive}), 201).json()
    assert again["layers"] == t["layers"] and t["layers"][0].startswith("oci-"), (again, t)
    drop(srv, "xb-oci-again")
    srv.remove(sid)
    drop(srv, "xb-oci")
    _no_import_left(srv)


@pytest.mark.skipif(not shutil.which("umoci"), reason="umoci is not installed (scripts/deps.sh)")
def test_oci_import_streams_its_output(oci_srv, tmp_path):
    """With Accept: text/event-stream an import sends a step event, then its
    output (one line per layer umoci applies) as log events, then the
    template; a failing one's log events come before its error."""
    srv, images = oci_srv
    layout = _three_layers(tmp_path)
    archive = _archive(layout, images, "img.tar")
    r = srv.post("/v1/templates", {"name": "xb-oci-s", "oci": archive}, timeout=300,
                 headers={"Accept": "text/event-stream"}, stream=True)
    expect(r, 200)
    evs = sse_events(r)
    names = [n for n, _ in evs]
    assert names[0] == "step" and evs[0][1]["kind"] == "oci" and names[-1] == "result", names
    logs = [d for n, d in evs if n == "log"]
    assert logs and all(d["step"] == 1 for d in logs), names
    text = "".join(d["data"] for d in logs)
    assert "holds image v1" in text and text.count("unpack layer: sha256:") == 3, text
    assert evs[-1][1]["name"] == "xb-oci-s" and evs[-1][1]["rootfs"] is True, evs[-1]
    sid = srv.create(template="xb-oci-s")["id"]
    assert ok(srv, sid, "cat /etc/layer-0 /etc/layer-1 /etc/layer-2").split() == ["0", "1", "2"]
    srv.remove(sid)
    drop(srv, "xb-oci-s")
    # A layout whose index names no image: the script's own message, streamed, then the error.
    os.unlink(os.path.join(layout, "index.json"))
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": []}, f)
    bad = _archive(layout, images, "bad.tar")
    r = srv.post("/v1/templates", {"name": "xb-oci-bad", "oci": bad}, timeout=300,
                 headers={"Accept": "text/event-stream"}, stream=True)
    expect(r, 200)
    evs = sse_events(r)
    names = [n for n, _ in evs]
    assert names[-1] == "error" and evs[-1][1]["code"] == "template_build_failed", evs[-1]
    assert "names no image" in "".join(d["data"] for n, d in evs if n == "log"), evs
    assert "names no image" in evs[-1][1]["message"], evs[-1]
    _no_import_left(srv)


def _write_layout(root, layer, tag):
    """An OCI layout of one uncompressed layer (bytes of a tar), tagged tag.
    Returns (its index.json object, its manifest's bytes, put: bytes to a
    blob, answering its descriptor)."""
    import hashlib
    os.makedirs(os.path.join(root, "blobs/sha256"))

    def put(data):
        dg = hashlib.sha256(data).hexdigest()
        with open(os.path.join(root, "blobs/sha256", dg), "wb") as f:
            f.write(data)
        return {"digest": "sha256:" + dg, "size": len(data)}
    lb = put(layer)
    cfg = put(json.dumps({"architecture": "amd64", "os": "linux", "config": {"User": "0"},
                          "rootfs": {"type": "layers", "diff_ids": [lb["digest"]]}}).encode())
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **cfg},
                           "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", **lb}]}).encode()
    man = put(manifest)
    index = {"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", **man,
                                                "annotations": {"org.opencontainers.image.ref.name": tag}}]}
    with open(os.path.join(root, "index.json"), "w") as f:
        json.dump(index, f)
    with open(os.path.join(root, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    return index, manifest, put


def _evil_layout(root, host_target, mini, hardlink=False):
    """An OCI layout by hand whose one layer tries ../, an absolute path, a
    symlink out of the root, a hard link to a host file, a device node and a
    setuid file, next to a harmless file (the control)."""
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        t.add(mini, arcname=".")

        def reg(name, data=b"x\n", mode=0o644):
            i = tarfile.TarInfo(name)
            i.size, i.mode = len(data), mode
            t.addfile(i, io.BytesIO(data))
        reg("control.txt", b"control\n")
        reg("../escape-dotdot.txt")
        reg("/abs-escape.txt")
        s = tarfile.TarInfo("lnk")
        s.type, s.linkname = tarfile.SYMTYPE, host_target
        t.addfile(s)
        reg("lnk/pwned.txt")
        if hardlink:
            h = tarfile.TarInfo("hl")
            h.type, h.linkname = tarfile.LNKTYPE, "/etc/hostname"
            t.addfile(h)
        d = tarfile.TarInfo("evil-mem")
        d.type, d.devmajor, d.devminor, d.mode = tarfile.CHRTYPE, 1, 1, 0o666
        t.addfile(d)
        reg("suid-sh", open("/usr/bin/dash", "rb").read(), 0o4755)
    layer = buf.getvalue()
    _write_layout(root, layer, "evil")
    return layer


@pytest.mark.skipif(not shutil.which("umoci"), reason="umoci is not installed (scripts/deps.sh)")
def test_malicious_oci_layer_cannot_escape_or_gain(oci_srv, tmp_path):
    import io
    import tarfile
    srv, images = oci_srv
    target = tmp_path / "host-target"
    target.mkdir()
    mini = str(tmp_path / "mini")
    _mini_root(mini)
    layout = str(tmp_path / "evil")
    layer = _evil_layout(layout, str(target), mini)
    # The attack is in the layer (the control for each check below).
    with tarfile.open(fileobj=io.BytesIO(layer)) as t:
        kinds = {m.name: m for m in t.getmembers()}
    assert kinds["../escape-dotdot.txt"].isfile() and kinds["lnk"].issym() and kinds["evil-mem"].ischr()
    assert kinds["suid-sh"].mode & 0o4000
    archive = _archive(layout, images, "evil.tar")
    r = build(srv, {"name": "xb-evil", "oci": archive})
    # Nothing was written outside the root, whatever the import said.
    assert os.listdir(target) == []
    for p in (tmp_path / "escape-dotdot.txt", "/escape-dotdot.txt", "/abs-escape.txt",
              os.path.join(srv.state_dir, "escape-dotdot.txt")):
        assert not os.path.exists(p), p
    expect(r, 201)   # umoci clamps the paths into the root; the daemon scrubs the rest
    if r.status_code == 201:
        sid = srv.create(template="xb-evil")["id"]
        out = ok(srv, sid, "cat /control.txt; test -e /evil-mem && echo DEVICE || echo no-device; "
                           "stat -c %a /suid-sh; test -e /escape-dotdot.txt && echo clamped || echo dropped", user="user")
        lines = out.split()
        assert lines[:3] == ["control", "no-device", "755"], out
        # The setuid copy gives a user nothing: nosuid and no bit.
        r2 = sh(srv, sid, "/suid-sh -c 'id -u'", user="user")
        assert r2["stdout"].strip() == "1000", r2
        srv.remove(sid)
        drop(srv, "xb-evil")
    else:
        expect_error(r, 422, "template_build_failed")
    _no_import_left(srv)
    # A hard link to a host file: refused (the link's target is looked up in the root).
    hl = str(tmp_path / "evil-hl")
    _evil_layout(hl, str(target), mini, hardlink=True)
    archive_hl = _archive(hl, images, "evil-hl.tar")
    r = build(srv, {"name": "xb-evil-hl", "oci": archive_hl})
    expect_error(r, 422, "template_build_failed")
    assert "hl" in r.json()["error"]["message"], r.json()
    # A layout that carries a symlink (to read a host file into the image) is refused.
    evil2 = str(tmp_path / "evil2")
    shutil.copytree(layout, evil2, symlinks=True)
    os.symlink("/etc/shadow", os.path.join(evil2, "blobs/sha256", "0" * 64))
    archive2 = _archive(evil2, images, "evil2.tar")
    r = build(srv, {"name": "xb-evil2", "oci": archive2})
    expect_error(r, 422, "template_build_failed")
    assert "links or special files" in r.json()["error"]["message"]


def _plain_layout(root, mini, marker, tag="v1"):
    """An OCI layout by hand: mini's files and /marker.txt holding marker
    (_write_layout's answer)."""
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        t.add(mini, arcname=".")
        i = tarfile.TarInfo("marker.txt")
        i.size = len(marker)
        t.addfile(i, io.BytesIO(marker))
    return _write_layout(root, buf.getvalue(), tag)


@pytest.mark.skipif(not shutil.which("umoci"), reason="umoci is not installed (scripts/deps.sh)")
def test_oci_layer_named_by_a_digest_it_does_not_hold_cannot_poison_an_image(oci_srv, tmp_path):
    """Imported layers are shared by manifest digest. An archive whose index
    names the victim's manifest digest first (its blob a copy of the victim's
    manifest, so it reads as that image) but tags only its own manifest must
    not leave a layer under the victim's name: a later import of the real
    image would get the attacker's files."""
    srv, images = oci_srv
    mini = str(tmp_path / "mini")
    _mini_root(mini)
    good = str(tmp_path / "good")
    gindex, gmanifest, _ = _plain_layout(good, mini, b"genuine\n")
    evil = str(tmp_path / "evil")
    eindex, _, put = _plain_layout(evil, mini, b"poisoned\n", tag="x")
    # The decoy: the victim's manifest (public bytes), untagged, first.
    decoy = put(gmanifest)
    assert decoy["digest"] == gindex["manifests"][0]["digest"]
    eindex["manifests"].insert(0, {"mediaType": "application/vnd.oci.image.manifest.v1+json", **decoy})
    with open(os.path.join(evil, "index.json"), "w") as f:
        json.dump(eindex, f)
    r = build(srv, {"name": "xb-poison", "oci": _archive(evil, images, "evil.tar")})
    poisoned = r.status_code == 201
    if poisoned:
        # The attacker's own template holds the attacker's files (the attack ran) ...
        sid = srv.create(template="xb-poison")["id"]
        assert ok(srv, sid, "cat /marker.txt").strip() == "poisoned"
        srv.remove(sid)
    else:
        expect_error(r, 422, "template_build_failed")
    # ... and the genuine image, imported next, is its own.
    r = build(srv, {"name": "xb-genuine", "oci": _archive(good, images, "good.tar")})
    expect(r, 201)
    sid = srv.create(template="xb-genuine")["id"]
    assert ok(srv, sid, "cat /marker.txt").strip() == "genuine"
    srv.remove(sid)
    drop(srv, "xb-genuine")
    if poisoned:
        drop(srv, "xb-poison")
    _no_import_left(srv)


# ---- uploaded as the body of POST /v1/templates ----

MB = 1 << 20
needs_umoci = pytest.mark.skipif(not shutil.which("umoci"), reason="umoci is not installed (scripts/deps.sh)")


def _three_layers(tmp_path, name="layout"):
    """A umoci-made image of three layers: the mini root with /etc/layer-0,
    then /etc/layer-1, then /etc/layer-2. Its layout's path."""
    layout, bundle = str(tmp_path / name), str(tmp_path / (name + "-bundle"))
    _umoci("init", "--layout", layout)
    _umoci("new", "--image", f"{layout}:v1")
    for i in range(3):
        _umoci("unpack", "--image", f"{layout}:v1", bundle)
        if i == 0:
            _mini_root(os.path.join(bundle, "rootfs"))
        with open(os.path.join(bundle, f"rootfs/etc/layer-{i}"), "w") as f:
            f.write(f"{i}\n")
        _umoci("repack", "--image", f"{layout}:v1", bundle)
        shutil.rmtree(bundle)
    return layout


def _tar(layout, path):
    subprocess.run(["tar", "-C", layout, "-cf", str(path), "."], check=True)
    return str(path)


def _digest_layer(layout):
    """The layer name an import of layout gets: its manifest's digest."""
    with open(os.path.join(layout, "index.json")) as f:
        return "oci-" + json.load(f)["manifests"][0]["digest"][7:39]


def upload(srv, data, name, token="default", headers=None, timeout=300, query="", **kw):
    h = {"Content-Type": "application/x-tar", **(headers or {})}
    return srv.request("POST", f"/v1/templates?name={name}{query}", data=data, headers=h, token=token,
                       timeout=timeout, **kw)


def _upload_fds(srv):
    """The daemon's fds on files in its state directory that no path names
    (an upload's): {fd: size}."""
    out = {}
    d = f"/proc/{srv.pid}/fd"
    for fd in os.listdir(d):
        try:
            target = os.readlink(os.path.join(d, fd))
            size = os.stat(os.path.join(d, fd)).st_size
        except OSError:
            continue
        if target.startswith(srv.state_dir + "/") and target.endswith(" (deleted)"):
            out[fd] = size
    return out


def _no_upload_left(srv, grace=5.0):
    """Nothing of an upload is left: no file in the state directory, no fd."""
    deadline = time.monotonic() + grace
    while _upload_fds(srv) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _upload_fds(srv) == {}
    assert not [n for n in os.listdir(srv.state_dir) if n.startswith(("upload-", "oci-"))], os.listdir(srv.state_dir)


@pytest.fixture
def up_srv(server_factory):
    """Two tenants, and no --allow-mount: an upload needs no host path."""
    return server_factory(tokens=["xb-tenant-a-0123456789", "xb-tenant-b-0123456789"], pool=0)


@needs_umoci
def test_upload_multi_layer_image_is_the_tenants_template(up_srv, tmp_path):
    srv = up_srv
    layout = _three_layers(tmp_path)
    archive = _tar(layout, tmp_path / "img.tar")
    with open(archive, "rb") as f:
        r = upload(srv, f, "xb-up", query="&workdir=/etc")
    expect(r, 201)
    t = r.json()
    assert t["name"] == "xb-up" and t["rootfs"] is True and t["workdir"] == "/etc", t
    # Named by the manifest's digest, as a path import names it.
    assert t["layers"] == [_digest_layer(layout)], t
    _no_upload_left(srv)
    sid = srv.create(template="xb-up")["id"]
    assert ok(srv, sid, "pwd; cat layer-0 layer-1 layer-2").split() == ["/etc", "0", "1", "2"]
    srv.remove(sid)
    # The other tenant sees no such template, and cannot use it.
    b = "xb-tenant-b-0123456789"
    names = [x["name"] for x in expect(srv.get("/v1/templates", token=b), 200).json()["templates"]]
    assert "xb-up" not in names and "xb-up" in [x["name"] for x in srv.get("/v1/templates").json()["templates"]]
    expect_error(srv.get("/v1/templates/xb-up", token=b), 404)
    e = expect_error(srv.post("/v1/sandboxes", {"template": "xb-up"}, token=b), 400)
    assert "unknown template" in e["message"], e
    # A name the tenant has already: 409 at the headers, before the body is read.
    with open(archive, "rb") as f:
        expect_error(upload(srv, f, "xb-up"), 409, "template_exists")
    # Refused at the headers: no name, a bad workdir, gzip.
    e = expect_error(srv.request("POST", "/v1/templates", data=b"x" * 100,
                                 headers={"Content-Type": "application/x-tar"}), 400, "invalid_request")
    assert "?name=" in e["hint"], e
    expect_error(upload(srv, b"x" * 100, "xb-up2", query="&workdir=rel"), 400, "invalid_request")
    expect_error(upload(srv, b"x" * 100, "xb-up2", headers={"Content-Encoding": "gzip"}), 415)
    # Not an archive: the import fails, and nothing is left.
    expect_error(upload(srv, b"not a tar\n" * 1000, "xb-junk"), 422, "template_build_failed")
    _no_upload_left(srv)
    # The JSON body still builds from steps on the same route.
    expect_error(srv.post("/v1/templates", {"name": "xb-j", "from": "nosuch"}), 404)
    drop(srv, "xb-up")


@needs_umoci
def test_uploaded_image_equals_the_path_imported_one(oci_srv, tmp_path):
    srv, images = oci_srv
    layout = _three_layers(tmp_path)
    archive = _archive(layout, images, "img.tar")
    by_path = expect(build(srv, {"name": "xb-by-path", "oci": archive}), 201).json()
    with open(archive, "rb") as f:
        by_body = expect(upload(srv, f, "xb-by-body", query="&user=root"), 201).json()
    assert by_body["layers"] == by_path["layers"] == [_digest_layer(layout)], (by_body, by_path)
    assert by_body["user"] == "root"
    for k in ("env", "workdir", "start", "rootfs"):
        assert by_body.get(k) == by_path.get(k), k
    drop(srv, "xb-by-body")
    drop(srv, "xb-by-path")
    _no_upload_left(srv)


@needs_umoci
def test_upload_streams_its_import(up_srv, tmp_path):
    srv = up_srv
    archive = _tar(_three_layers(tmp_path), tmp_path / "img.tar")
    with open(archive, "rb") as f:
        r = upload(srv, f, "xb-up-s", headers={"Accept": "text/event-stream"}, stream=True)
    expect(r, 200)
    evs = sse_events(r)
    names = [n for n, _ in evs]
    assert names[0] == "step" and evs[0][1]["kind"] == "oci" and names[-1] == "result", names
    text = "".join(d["data"] for n, d in evs if n == "log")
    assert "holds image v1" in text and text.count("unpack layer: sha256:") == 3, text
    assert evs[-1][1]["name"] == "xb-up-s", evs[-1]
    drop(srv, "xb-up-s")
    _no_upload_left(srv)


def test_upload_over_the_cap_is_413_and_leaves_nothing(server_factory):
    srv = server_factory("--template-upload-max", "1M", pool=0)
    body = b"\0" * (3 * MB)
    # With a Content-Length: refused at the headers.
    e = expect_error(upload(srv, body, "xb-big"), 413, "body_too_large")
    assert "--template-upload-max" in e["hint"], e
    # Chunked: cut at the cap, refused at its end.
    e = expect_error(upload(srv, (body[i:i + 65536] for i in range(0, len(body), 65536)), "xb-big"), 413,
                     "upload_too_large")
    assert "--template-upload-max" in e["hint"], e
    _no_upload_left(srv)
    assert "xb-big" not in [x["name"] for x in srv.get("/v1/templates").json()["templates"]]


def test_upload_client_leaving_midway_leaves_nothing(up_srv):
    import socket
    srv = up_srv
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    s.sendall(b"POST /v1/templates?name=xb-half HTTP/1.1\r\nHost: 127.0.0.1\r\n"
              b"Authorization: Bearer xb-tenant-a-0123456789\r\nContent-Type: application/x-tar\r\n"
              b"Content-Length: %d\r\n\r\n" % (100 * MB))
    chunk = b"\0" * MB
    for _ in range(20):
        s.sendall(chunk)
    # The control: the half body is in an unnamed file of the state directory.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and sum(_upload_fds(srv).values()) < 20 * MB:
        time.sleep(0.05)
    assert sum(_upload_fds(srv).values()) == 20 * MB, _upload_fds(srv)
    s.close()
    _no_upload_left(srv)
    expect(srv.get("/healthz"), 200)
    assert "xb-half" not in [x["name"] for x in srv.get("/v1/templates").json()["templates"]]
    assert srv.alive()


@needs_umoci
def test_malicious_layout_uploaded_is_refused_or_neutralised(up_srv, tmp_path):
    srv = up_srv
    target = tmp_path / "host-target"
    target.mkdir()
    mini = str(tmp_path / "mini")
    _mini_root(mini)
    layout = str(tmp_path / "evil")
    _evil_layout(layout, str(target), mini)
    with open(_tar(layout, tmp_path / "evil.tar"), "rb") as f:
        r = upload(srv, f, "xb-evil-up")
    assert os.listdir(target) == []
    for p in (tmp_path / "escape-dotdot.txt", "/escape-dotdot.txt", "/abs-escape.txt",
              os.path.join(srv.state_dir, "escape-dotdot.txt")):
        assert not os.path.exists(p), p
    expect(r, 201)
    sid = srv.create(template="xb-evil-up")["id"]
    out = ok(srv, sid, "cat /control.txt; test -e /evil-mem && echo DEVICE || echo no-device; stat -c %a /suid-sh",
             user="user")
    assert out.split()[:3] == ["control", "no-device", "755"], out
    srv.remove(sid)
    drop(srv, "xb-evil-up")
    # A layout that carries a symlink (to read a host file into the image): refused.
    evil2 = str(tmp_path / "evil2")
    shutil.copytree(layout, evil2, symlinks=True)
    os.symlink("/etc/shadow", os.path.join(evil2, "blobs/sha256", "0" * 64))
    with open(_tar(evil2, tmp_path / "evil2.tar"), "rb") as f:
        e = expect_error(upload(srv, f, "xb-evil2-up"), 422, "template_build_failed")
    assert "links or special files" in e["message"], e
    _no_upload_left(srv)


@needs_umoci
def test_a_200mb_upload_does_not_grow_the_daemon(up_srv, tmp_path):
    srv = up_srv
    layout = _three_layers(tmp_path)
    # 200 MB of a blob no manifest names: the archive is big, the image small.
    with open(os.path.join(layout, "blobs/sha256", "f" * 64), "wb") as f:
        for _ in range(200):
            f.write(os.urandom(MB))
    archive = _tar(layout, tmp_path / "big.tar")
    assert os.path.getsize(archive) > 200 * MB
    rss0 = rss(srv.pid)
    with Probe(srv) as p:   # the daemon's peak RSS, sampled from a second thread
        t0 = time.monotonic()
        with open(archive, "rb") as f:
            r = upload(srv, f, "xb-up-big")
        took = time.monotonic() - t0
    expect(r, 201)
    print(f"200 MB upload and import: {took:.1f} s; daemon RSS +{(p.peak - rss0) / MB:.1f} MiB")
    assert p.peak - rss0 < 24 * MB, (p.peak - rss0) / MB
    drop(srv, "xb-up-big")
    _no_upload_left(srv)


def _avail(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def test_upload_stops_when_the_state_dir_runs_low(execbox, tmp_path, small_state):
    import socket
    import threading
    srv = sf.start_server(execbox, str(tmp_path), pool=0, state_dir=small_state)
    try:
        free0 = _avail(small_state)
        # Too big for what is free: refused at the headers.
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
        s.sendall(b"POST /v1/templates?name=xb-full HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  b"Content-Type: application/x-tar\r\nContent-Length: %d\r\n\r\n" % free0)
        resp = s.recv(65536)
        s.close()
        assert sf.raw_status(resp) == 507 and b"disk_full" in resp, resp[:600]
        # Chunked, so unknown in advance: written until the state dir runs
        # low, then dropped; the reserve is never reached.
        low, done = [free0], threading.Event()

        def sample():
            while not done.is_set():
                low[0] = min(low[0], _avail(small_state))
                time.sleep(0.005)
        th = threading.Thread(target=sample)
        th.start()
        chunk = b"\0" * MB
        try:
            r = upload(srv, (chunk for _ in range(free0 // MB)), "xb-full", timeout=120)
        finally:
            done.set()
            th.join()
        e = expect_error(r, 507, "disk_full")
        assert "state directory" in e["message"], e
        print(f"state fs: {free0 // MB} MiB free, {low[0] // MB} MiB at the lowest")
        assert free0 - low[0] > 300 * MB, (free0 - low[0]) // MB   # it wrote until the guard: the control
        assert low[0] >= 256 * MB, low[0] // MB
        _no_upload_left(srv)
        assert _avail(small_state) > free0 - 8 * MB, (free0 - _avail(small_state)) // MB
        expect(srv.get("/healthz"), 200)
    finally:
        problems = sf.finish_server(srv)
    assert not problems, problems


def test_built_metadata_persists_across_restart(server_factory):
    s1 = server_factory(pool=0)
    body = {"name": "xb-keep", "run": ["mkdir -p /srv/k && echo kept > /srv/k/f"], "workdir": "/srv/k",
            "user": "root", "env": {"XB_K": "v"},
            "start": {"cmd": "sleep 0.2; touch /tmp/up; exec sleep 1000", "ready": {"file": "/tmp/up"},
                      "timeout_s": 15}}
    t1 = expect(build(s1, body), 201).json()
    state = s1.state_dir
    s1.stop()
    s2 = server_factory(state_dir=state, pool=0)
    t2 = s2.get("/v1/templates/xb-keep").json()
    for k in ("layers", "workdir", "user", "env", "start"):
        assert t2[k] == t1[k], (k, t1, t2)
    sb = s2.create(template="xb-keep")
    assert sb["start"]["ready_ms"] >= 150
    assert ok(s2, sb["id"], "pwd; id -u; echo $XB_K; cat f").split() == ["/srv/k", "0", "v", "kept"]
    s2.stop()
