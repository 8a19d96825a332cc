"""`execbox serve` authentication and tenants: bearer tokens from a token
file (one tenant per line), EXECBOX_TOKEN, or a generated token kept 0600 in
the state directory; --no-auth only on loopback. A tenant cannot tell
another tenant's sandbox from one that does not exist."""
from __future__ import annotations

import os
import stat
import subprocess

import pytest

import server_fixture as sf
from server_fixture import expect, expect_error, server, server_factory  # noqa: F401

TOKEN_A = "tenant-a-token-0123456789abcdef"
TOKEN_B = "tenant-b-token-fedcba9876543210"


@pytest.fixture
def two_tenants(server_factory):
    return server_factory(tokens=[TOKEN_A, TOKEN_B])


def test_missing_and_wrong_token_are_401(two_tenants):
    srv = two_tenants
    for token, why in [(None, "missing"), ("not-a-valid-token-at-all-000000", "wrong"),
                       (TOKEN_A + "x", "longer"), (TOKEN_A[:-1], "shorter"), ("", "empty")]:
        for method, path in [("GET", "/v1/sandboxes"), ("POST", "/v1/sandboxes"), ("GET", "/metrics"),
                             ("GET", "/v1/sandboxes/aaaaaaaaaaaaaaaaaaaaaaaaaa"),
                             ("POST", "/v1/sandboxes/aaaaaaaaaaaaaaaaaaaaaaaaaa/exec")]:
            r = srv.request(method, path, token=token, json_body={} if method == "POST" else None)
            err = expect_error(r, 401, "unauthorized")
            assert "Bearer" in r.headers.get("WWW-Authenticate", ""), f"{why} token: no WWW-Authenticate: {r.headers}"
            assert "Authorization" in err["hint"], err
    # A scheme other than Bearer, and the token without a scheme.
    for header in [f"Basic {TOKEN_A}", TOKEN_A, f"Bearer  {TOKEN_A}"]:
        r = srv.http.get(srv.url + "/v1/sandboxes", headers={"Authorization": header}, timeout=10)
        expect_error(r, 401, "unauthorized")
    # The public probes need no token; the right token works, either tenant.
    expect(srv.get("/healthz", token=None), 200)
    expect(srv.get("/readyz", token=None), 200)
    expect(srv.get("/v1/sandboxes", token=TOKEN_A), 200)
    expect(srv.get("/v1/sandboxes", token=TOKEN_B), 200)
    r = srv.http.get(srv.url + "/v1/sandboxes", headers={"Authorization": f"bearer {TOKEN_B}"}, timeout=10)
    expect(r, 200)


def test_no_sandbox_is_created_without_a_token(two_tenants):
    srv = two_tenants
    for _ in range(3):
        expect_error(srv.post("/v1/sandboxes", {}, token=None), 401, "unauthorized")
    assert srv.get("/v1/sandboxes", token=TOKEN_A).json()["sandboxes"] == []
    assert srv.get("/v1/sandboxes", token=TOKEN_B).json()["sandboxes"] == []
    assert srv.metrics()["execbox_sandboxes"] == 0


def test_tenant_cannot_see_use_or_delete_another_tenants_sandbox(two_tenants):
    srv = two_tenants
    a = srv.create(token=TOKEN_A)["id"]
    proc = srv.post(f"/v1/sandboxes/{a}/processes", {"cmd": "sleep 60"}, token=TOKEN_A)
    expect(proc, 201)
    pid = proc.json()["pid"]
    ghost = "a" * len(a)             # well formed, exists for nobody

    def same_as_ghost(method, path_fmt, body=None):
        mine = srv.request(method, path_fmt.format(a), token=TOKEN_B, json_body=body)
        none = srv.request(method, path_fmt.format(ghost), token=TOKEN_B, json_body=body)
        e1 = expect_error(mine, 404, "sandbox_not_found")
        e2 = expect_error(none, 404, "sandbox_not_found")
        assert e1["hint"] == e2["hint"] and e1["message"].replace(a, ghost) == e2["message"], \
            f"another tenant's sandbox answers differently from a nonexistent one: {e1} vs {e2}"

    same_as_ghost("GET", "/v1/sandboxes/{}")
    same_as_ghost("POST", "/v1/sandboxes/{}/exec", {"cmd": "echo pwned > /tmp/pwned"})
    same_as_ghost("POST", "/v1/sandboxes/{}/keepalive", {"timeout_s": 5})
    same_as_ghost("POST", "/v1/sandboxes/{}/processes", {"cmd": "true"})
    same_as_ghost("GET", "/v1/sandboxes/{}/processes")
    same_as_ghost("GET", "/v1/sandboxes/{}/processes/" + str(pid))
    same_as_ghost("GET", "/v1/sandboxes/{}/processes/" + str(pid) + "/output")
    same_as_ghost("POST", "/v1/sandboxes/{}/processes/" + str(pid) + "/signal", {"signal": "KILL"})
    same_as_ghost("POST", "/v1/sandboxes/{}/processes/" + str(pid) + "/stdin", {"data": "x"})
    same_as_ghost("POST", "/v1/sandboxes/{}/processes/" + str(pid) + "/wait", {"timeout_s": 0.1})
    same_as_ghost("DELETE", "/v1/sandboxes/{}/processes/" + str(pid))
    same_as_ghost("DELETE", "/v1/sandboxes/{}")
    ids_b = [s["id"] for s in srv.get("/v1/sandboxes", token=TOKEN_B).json()["sandboxes"]]
    assert a not in ids_b, "tenant B lists tenant A's sandbox"

    # Tenant A's sandbox is untouched: still there, its process still running,
    # the exec B attempted never ran, and the lease was not changed by B.
    got = srv.get(f"/v1/sandboxes/{a}", token=TOKEN_A)
    expect(got, 200)
    assert got.json()["timeout_s"] != 5, "tenant B's keepalive changed tenant A's sandbox"
    p = expect(srv.get(f"/v1/sandboxes/{a}/processes/{pid}", token=TOKEN_A), 200).json()
    assert p["running"], f"tenant B's signal or delete reached tenant A's process: {p}"
    res = srv.exec(a, cmd="ls /tmp", token=TOKEN_A)
    assert "pwned" not in res["stdout"], "tenant B's exec ran in tenant A's sandbox"
    ids_a = [s["id"] for s in srv.get("/v1/sandboxes", token=TOKEN_A).json()["sandboxes"]]
    assert ids_a == [a]
    # B's own sandbox is invisible to A the same way.
    b = srv.create(token=TOKEN_B)["id"]
    expect_error(srv.get(f"/v1/sandboxes/{b}", token=TOKEN_A), 404, "sandbox_not_found")
    expect_error(srv.delete(f"/v1/sandboxes/{b}", token=TOKEN_A), 404, "sandbox_not_found")
    srv.remove(b, token=TOKEN_B)
    srv.remove(a, token=TOKEN_A)


def test_generated_token_is_0600_in_the_state_dir_and_printed_once(server_factory):
    env = sf.server_env()
    srv = server_factory(no_auth=False, expect_token_line=True, env=env)
    path = os.path.join(srv.state_dir, "token")
    st = os.stat(path)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600, f"token file mode {oct(st.st_mode)}"
    assert st.st_uid == os.geteuid()
    assert stat.S_IMODE(os.stat(srv.state_dir).st_mode) & 0o077 == 0, "the state dir is readable by others"
    with open(path) as f:
        token = f.read().strip()
    assert len(token) >= 16 and srv.tokens == [token], (srv.tokens, token)
    expect_error(srv.get("/v1/sandboxes", token=None), 401, "unauthorized")
    expect(srv.get("/v1/sandboxes", token=token), 200)
    sid = srv.create(token=token)["id"]
    srv.remove(sid, token=token)
    assert srv.stop() == 0
    out = srv.stdout()
    assert out.count(token) == 1, f"the token must be printed exactly once; stdout: {out!r}"
    assert token not in srv.stderr(), "the token leaked into the log"

    # A restart on the same state dir reuses the token and does not print it.
    again = server_factory(no_auth=False, state_dir=srv.state_dir, env=env)
    again.tokens = [token]
    again.token = token
    expect(again.get("/v1/sandboxes"), 200)
    with open(path) as f:
        assert f.read().strip() == token, "the token changed on restart"
    assert again.stop() == 0
    assert token not in again.stdout(), "a reused token must not be printed again"
    assert token not in again.stderr()


def test_execbox_token_env_is_used_and_not_printed(server_factory):
    token = "env-token-0123456789-abcdefghij"
    env = sf.server_env({"EXECBOX_TOKEN": token}, drop_token=False)
    srv = server_factory(no_auth=False, env=env)
    srv.tokens, srv.token = [token], token
    expect(srv.get("/v1/sandboxes"), 200)
    expect_error(srv.get("/v1/sandboxes", token="x" * 31), 401, "unauthorized")
    assert not os.path.exists(os.path.join(srv.state_dir, "token")), "EXECBOX_TOKEN given, yet a token file was written"
    assert srv.stop() == 0
    assert token not in srv.stdout() and token not in srv.stderr()


def _serve(execbox, tmp_path, *args, env=None):
    return subprocess.run([execbox, "serve", "--state-dir", str(tmp_path / "st"), "--pool", "0", *args],
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=20,
                          env=env if env is not None else sf.server_env())


@pytest.mark.parametrize("listen", ["0.0.0.0:0", "[::]:0", "192.0.2.1:0", "localhost.example.com:0"])
def test_no_auth_is_refused_on_a_non_loopback_listener(execbox, tmp_path, listen):
    r = _serve(execbox, tmp_path, "--listen", listen, "--no-auth")
    assert r.returncode == 125, f"--no-auth on {listen}: rc={r.returncode} stdout={r.stdout!r} stderr={r.stderr!r}"
    assert b"--no-auth" in r.stderr and b"listening" not in r.stdout


def test_short_or_missing_tokens_are_refused(execbox, tmp_path):
    tf = tmp_path / "tokens"
    tf.write_text("short\n")
    r = _serve(execbox, tmp_path, "--listen", "127.0.0.1:0", "--token-file", str(tf))
    assert r.returncode == 125 and b"16" in r.stderr, (r.returncode, r.stderr)
    tf.write_text("\n\n")
    r = _serve(execbox, tmp_path, "--listen", "127.0.0.1:0", "--token-file", str(tf))
    assert r.returncode == 125, (r.returncode, r.stderr)
    r = _serve(execbox, tmp_path, "--listen", "127.0.0.1:0", "--token-file", str(tmp_path / "absent"))
    assert r.returncode == 125, (r.returncode, r.stderr)
