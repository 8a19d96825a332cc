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


def sh(srv, sid, cmd, user=None, timeout=120):
    body = {"cmd": cmd, "timeout_s": timeout}
    if user:
        body["user"] = user
    return srv.exec(sid, timeout=timeout + 30, **body)


def ok(srv, sid, cmd, user=None, timeout=120) -> str:
    r = sh(srv, sid, cmd, user, timeout)
    assert r["exit_code"] == 0, (r["exit_code"], r["stdout"][-2000:], r["stderr"][-2000:])
    return r["stdout"]


def build(srv, body, timeout=600):
    return srv.post("/v1/templates", body, timeout=timeout)


def sse_events(resp):
    """(event, data) pairs of a text/event-stream reply."""
    out, name, data = [], None, []
    for line in resp.iter_lines(decode_unicode=True):
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif line == "" and name:
            out.append((name, json.loads("\n".join(data)) if data else None))
            name, data = None, []
    return out


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
    r = build(srv, {"name": "xb-deb", "from": "debian:bookworm", "run": ["echo deb-step > /etc/xb-step"],
                    "env": {"XB_D": "1"}}, timeout=900)
    first = time.monotonic() - t0
    expect(r, 201)
    t = r.json()
    assert t["rootfs"] is True and len(t["layers"]) == 2, t
    # The clean root is a template of its own, which a second build reuses.
    deb = srv.get("/v1/templates/debian-bookworm").json()
    assert deb["rootfs"] is True and t["layers"][1:] == deb["layers"]
    sid = srv.create(template="xb-deb")["id"]
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
