"""A "user": "root" sandbox is root everywhere: commands, sessions and the
file API (issue 9, item 2); the default stays uid 1000. A fork keeps its
parent's limits, env, user and network policy unless the request
overrides them, within the server's ceilings (item 4)."""
from __future__ import annotations

import pytest

import server_fixture as sf
from server_fixture import expect, expect_error, server_factory  # noqa: F401


@pytest.fixture(scope="module")
def srv(execbox, tmp_path_factory):
    s = sf.start_server(execbox, str(tmp_path_factory.mktemp("rootfork")), "--network-max", "packages",
                        "--max-disk", str(1 << 30), no_auth=True, pool=0)
    try:
        yield s
    finally:
        problems = sf.finish_server(s)
        assert not problems, "\n".join(problems)


@pytest.fixture(autouse=True)
def no_leaks():
    """The module's server is checked once, at its end."""
    yield


def ok(srv, sid, cmd, user=None) -> str:
    body = {"cmd": cmd, "timeout_s": 60}
    if user:
        body["user"] = user
    r = srv.exec(sid, **body)
    assert r["exit_code"] == 0, r
    return r["stdout"]


def put(srv, sid, path, data=b"x\n"):
    return srv.request("PUT", f"/v1/sandboxes/{sid}/files", params={"path": path}, data=data)


def session_uid(srv, sid) -> str:
    ss = expect(srv.post(f"/v1/sandboxes/{sid}/sessions", {"language": "python"}, timeout=90), 201).json()["id"]
    res = expect(srv.post(f"/v1/sandboxes/{sid}/sessions/{ss}/run",
                          {"code": "import os\nopen('/tmp/by-session', 'w').write('s')\nprint(os.getuid(), os.getgid())"},
                          timeout=90), 200).json()
    assert res["status"] == "ok", res
    return "".join(o["text"] for o in res["outputs"] if o["type"] == "stream" and o["name"] == "stdout").strip()


def test_root_sandbox_files_and_sessions_are_roots(srv):
    a = srv.create(user="root")["id"]
    # The file API writes as root: root-only paths work, and files are root's.
    expect(put(srv, a, "/root/api.txt", b"root\n"), 200)
    expect(put(srv, a, "/etc/xb-api.conf", b"k=v\n"), 200)
    assert ok(srv, a, "stat -c '%u:%g' /root/api.txt /etc/xb-api.conf").split() == ["0:0", "0:0"]
    ok(srv, a, "echo secret > /root/only && chmod 600 /root/only")
    r = srv.get(f"/v1/sandboxes/{a}/files", params={"path": "/root/only"})
    assert expect(r, 200).content == b"secret\n"
    # A session runs as root too, and what it writes is root's.
    assert session_uid(srv, a) == "0 0"
    assert ok(srv, a, "stat -c '%u:%g' /tmp/by-session") == "0:0\n"
    # A watcher on a root-only directory works too (it watches as root).
    ok(srv, a, "mkdir -m 700 /root/w")
    w = expect(srv.post(f"/v1/sandboxes/{a}/watchers", {"path": "/root/w"}), 201).json()["watcher_id"]
    expect(srv.delete(f"/v1/sandboxes/{a}/watchers/{w}"), 204)
    # Commands can still ask for the user.
    assert ok(srv, a, "id -u", user="user") == "1000\n"


def test_default_sandbox_files_and_sessions_stay_the_users(srv):
    b = srv.create()["id"]
    expect(put(srv, b, "/home/user/api.txt"), 200)
    assert ok(srv, b, "stat -c '%u:%g' /home/user/api.txt") == "1000:1000\n"
    # The positive control above wrote; root's places stay closed to the user.
    r = put(srv, b, "/root/nope.txt")
    assert r.status_code in (403, 404), (r.status_code, r.text)
    assert ok(srv, b, "test -e /root/nope.txt || echo absent", user="root") == "absent\n"
    ok(srv, b, "echo secret > /var/tmp/only && chmod 600 /var/tmp/only", user="root")
    r = srv.get(f"/v1/sandboxes/{b}/files", params={"path": "/var/tmp/only"})
    assert r.status_code == 403, (r.status_code, r.text)
    assert session_uid(srv, b) == "1000 1000"
    ok(srv, b, "mkdir -m 700 /var/tmp/w", user="root")
    r = srv.post(f"/v1/sandboxes/{b}/watchers", {"path": "/var/tmp/w"})
    assert r.status_code in (403, 404), (r.status_code, r.text)


def network_of(srv, sid) -> dict:
    return expect(srv.get(f"/v1/sandboxes/{sid}/network"), 200).json()


def test_fork_keeps_limits_env_user_and_network(srv):
    p = srv.create(user="root", env={"XB_P": "parent"}, network="packages",
                   limits={"memory": 200 << 20, "pids": 77, "disk": 96 << 20})
    pid = p["id"]
    ok(srv, pid, "echo from-parent > /root/f")
    kids = expect(srv.post(f"/v1/sandboxes/{pid}/fork", {"count": 2}), 201).json()["sandboxes"]
    for k in kids:
        assert k["limits"] == p["limits"], (k["limits"], p["limits"])
        assert k["user"] == "root"
        assert network_of(srv, k["id"])["mode"] == "packages"
        # The policy is in force: processes get the proxy, as in the parent.
        assert ok(srv, k["id"], "cat /root/f; id -u; echo $XB_P; echo ${HTTPS_PROXY:-none}").split()[:3] == \
            ["from-parent", "0", "parent"]
        assert ok(srv, k["id"], "echo ${HTTPS_PROXY:-none}") != "none\n"


def test_fork_overrides_within_ceilings(srv):
    p = srv.create(env={"XB_P": "parent"}, network="packages", metadata={"who": "parent"},
                   limits={"memory": 200 << 20})
    pid = p["id"]
    body = {"count": 1, "limits": {"memory": 160 << 20, "pids": 50}, "env": {"XB_K": "kid"},
            "network": "none", "timeout_s": 120, "metadata": {"who": "kid"}}
    k = expect(srv.post(f"/v1/sandboxes/{pid}/fork", body), 201).json()["sandboxes"][0]
    assert k["limits"]["memory"] == 160 << 20 and k["limits"]["pids"] == 50, k
    assert k["limits"]["disk"] == p["limits"]["disk"] and k["limits"]["cpus"] == p["limits"]["cpus"], k
    assert k["timeout_s"] == 120 and k["metadata"] == {"who": "kid"}, k
    assert network_of(srv, k["id"])["mode"] == "none"
    assert ok(srv, k["id"], "echo $XB_P $XB_K ${HTTPS_PROXY:-none}") == "parent kid none\n"
    # The parent is unchanged.
    assert network_of(srv, pid)["mode"] == "packages"
    # Above the operator's ceilings: refused, and nothing made.
    before = len(srv.get("/v1/sandboxes").json()["sandboxes"])
    err = expect_error(srv.post(f"/v1/sandboxes/{pid}/fork", {"network": "open"}), 403, "network_forbidden")
    assert "ceiling" in err["message"], err
    err = expect_error(srv.post(f"/v1/sandboxes/{pid}/fork", {"limits": {"disk": 2 << 30}}), 400, "over_ceiling")
    assert "ceiling" in err["message"], err
    expect_error(srv.post(f"/v1/sandboxes/{pid}/fork", {"limits": {"memory": 1}}), 400, "invalid_request")
    expect_error(srv.post(f"/v1/sandboxes/{pid}/fork", {"metadata": [1]}), 400)
    expect_error(srv.post(f"/v1/sandboxes/{pid}/fork", {"network": {"mode": "bogus"}}), 400)
    assert len(srv.get("/v1/sandboxes").json()["sandboxes"]) == before
