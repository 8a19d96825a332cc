"""Operator ceilings and tenant quotas (issue 12, section 2): a request above
--max-memory, --max-pids, --max-cpus or --max-disk gets 400 with the
ceiling in the hint (by default the host's RAM: a tenant once got a 1 TiB
memory limit on a 23 GiB host); a tenant over its quota in the token file
or --tenant-quota gets 429 with Retry-After; and one tenant filling
--max-sandboxes does not lock the others out."""
from __future__ import annotations

import pytest

from server_fixture import expect, expect_error, server_factory  # noqa: F401

A = "tenant-a-token-0123456789abcdef"
B = "tenant-b-token-0123456789abcdef"
MiB, GiB, TiB = 1 << 20, 1 << 30, 1 << 40


def mem_total() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no MemTotal")


def test_a_tebibyte_on_a_smaller_host_is_refused(server_factory):
    """The attack as reported: 1 TiB of memory asked of a host with less."""
    ram = mem_total()
    assert ram < TiB, "this host has a tebibyte: the attack needs a smaller one"
    srv = server_factory(pool=0)
    err = expect_error(srv.post("/v1/sandboxes", {"limits": {"memory": TiB}}), 400, "over_ceiling")
    assert "limits.memory" in err["message"] and str(ram) in err["message"], err
    assert str(ram) in err["hint"], err
    # The same sandbox with a memory limit the host has is fine.
    sb = srv.create(limits={"memory": 256 * MiB})
    assert sb["limits"]["memory"] == 256 * MiB
    srv.remove(sb["id"])
    assert srv.get("/v1/sandboxes").json()["sandboxes"] == []


@pytest.mark.parametrize("field,value,ceiling", [("memory", 600 * MiB, "512M"), ("pids", 300, "200"),
                                                  ("cpus", 1.5, "1"), ("disk", 200 * MiB, "128M")])
def test_operator_ceilings(server_factory, field, value, ceiling):
    srv = server_factory("--max-memory", "512M", "--memory", "256M", "--max-pids", "200", "--pids", "100",
                         "--max-cpus", "1", "--max-disk", "128M", "--disk", "64M", pool=0)
    err = expect_error(srv.post("/v1/sandboxes", {"limits": {field: value}}), 400, "over_ceiling")
    assert f"limits.{field}" in err["message"] and ceiling in err["message"], err
    assert "memory 512M" in err["hint"] and "pids 200" in err["hint"] and "cpus 1," in err["hint"] \
        and "disk 128M" in err["hint"], err
    # At the ceiling is allowed.
    at = {"memory": 512 * MiB, "pids": 200, "cpus": 1, "disk": 128 * MiB}[field]
    sb = srv.create(limits={field: at})
    assert sb["limits"][field] == at
    srv.remove(sb["id"])


def test_defaults_above_a_ceiling_do_not_start(execbox, tmp_path):
    import subprocess
    p = subprocess.run([execbox, "serve", "--no-auth", "--listen", "127.0.0.1:0", "--state-dir",
                        str(tmp_path / "s"), "--memory", "2G", "--max-memory", "1G"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and "ceiling" in p.stderr, p.stderr


def over_quota(r, what: str) -> dict:
    err = expect_error(r, 429, "over_quota")
    assert what in err["message"], err
    assert int(r.headers["Retry-After"]) >= 1, r.headers
    return err


def test_sandbox_memory_and_disk_quotas_per_token(server_factory):
    srv = server_factory(tokens=[f"{A} sandboxes=2", f"{B} memory=600M disk=100M"], pool=0)
    a1, a2 = srv.create(token=A)["id"], srv.create(token=A)["id"]
    over_quota(srv.post("/v1/sandboxes", {}, token=A), "quota of 2")
    # B is not A: its own quotas count its own sandboxes.
    b1 = srv.create(token=B, limits={"memory": 512 * MiB, "disk": 32 * MiB})["id"]
    over_quota(srv.post("/v1/sandboxes", {"limits": {"memory": 256 * MiB, "disk": 32 * MiB}}, token=B), "memory")
    over_quota(srv.post("/v1/sandboxes", {"limits": {"memory": 64 * MiB, "disk": 96 * MiB}}, token=B), "disk")
    b2 = srv.create(token=B, limits={"memory": 64 * MiB, "disk": 32 * MiB})["id"]
    # A deletion frees the quota.
    srv.remove(a1, token=A)
    a3 = srv.create(token=A)["id"]
    for sid, tok in [(a2, A), (a3, A), (b1, B), (b2, B)]:
        srv.remove(sid, token=tok)


def test_create_rate(server_factory):
    srv = server_factory("--tenant-quota", "rate=2", tokens=[A, f"{B} rate=5"], pool=0)
    ids = [srv.create(token=A)["id"] for _ in range(2)]
    r = srv.post("/v1/sandboxes", {}, token=A)
    over_quota(r, "in the last minute")
    assert 1 <= int(r.headers["Retry-After"]) <= 31, r.headers   # one creation in 30 s
    # B's own rate=5 beats --tenant-quota.
    ids_b = [srv.create(token=B)["id"] for _ in range(5)]
    over_quota(srv.post("/v1/sandboxes", {}, token=B), "quota of 5")
    for sid in ids:
        srv.remove(sid, token=A)
    for sid in ids_b:
        srv.remove(sid, token=B)


def test_concurrent_execs(server_factory):
    srv = server_factory(tokens=[f"{A} execs=2", B], pool=0)
    s1, s2 = srv.create(token=A)["id"], srv.create(token=A)["id"]
    # Two running commands in two sandboxes: the quota is the tenant's.
    for sid in (s1, s2):
        expect(srv.post(f"/v1/sandboxes/{sid}/processes", {"cmd": "sleep 60"}, token=A), 201)
    over_quota(srv.post(f"/v1/sandboxes/{s1}/exec", {"cmd": "echo hi"}, token=A), "quota of 2")
    over_quota(srv.post(f"/v1/sandboxes/{s2}/processes", {"cmd": "sleep 1"}, token=A), "commands")
    # B runs what it likes.
    sb = srv.create(token=B)["id"]
    assert srv.exec(sb, token=B, cmd="echo from-b")["stdout"] == "from-b\n"
    # A's commands ending frees its quota.
    for p in srv.get(f"/v1/sandboxes/{s1}/processes", token=A).json()["processes"]:
        srv.post(f"/v1/sandboxes/{s1}/processes/{p['pid']}/signal", {"signal": "SIGKILL"}, token=A)
        srv.post(f"/v1/sandboxes/{s1}/processes/{p['pid']}/wait", {"timeout_s": 10}, token=A)
    assert srv.exec(s1, token=A, cmd="echo again")["stdout"] == "again\n"
    for sid, tok in [(s1, A), (s2, A), (sb, B)]:
        srv.remove(sid, token=tok)


def test_one_tenant_filling_the_server_leaves_room_for_another(server_factory):
    """--max-sandboxes 4, two tenants: each keeps max / (2 * 2) = 1 for itself."""
    srv = server_factory("--max-sandboxes", "4", tokens=[A, B], pool=0)
    mine = []
    while True:
        r = srv.post("/v1/sandboxes", {}, token=A)
        if r.status_code != 201:
            break
        mine.append(r.json()["id"])
        assert len(mine) <= 4
    err = over_quota(r, "other tenants")
    assert len(mine) == 3, mine          # the attack ran: A took all it could
    b = srv.create(token=B)["id"]         # and B still gets its share
    # The server is now full for everyone.
    expect_error(srv.post("/v1/sandboxes", {}, token=B), 429, "too_many_sandboxes")
    assert "hint" in err
    for sid in mine:
        srv.remove(sid, token=A)
    srv.remove(b, token=B)


@pytest.mark.parametrize("line,why", [(f"{A} sandboxes=many", "sandboxes"), (f"{A} memory=lots", "memory"),
                                      ("sandboxes=2", "must follow a token")])
def test_bad_quota_words_are_refused(execbox, tmp_path, line, why):
    import subprocess
    tf = tmp_path / "tokens"
    tf.write_text(line + "\n")
    tf.chmod(0o600)
    p = subprocess.run([execbox, "serve", "--listen", "127.0.0.1:0", "--state-dir", str(tmp_path / "s"),
                        "--token-file", str(tf)], capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and why in p.stderr, p.stderr


def test_metrics_show_a_tenant_its_own_quota_and_an_admin_every_one(server_factory):
    admin = "admin-token-0123456789abcdef0"
    srv = server_factory(tokens=[f"{admin} admin name=ops", f"{A} name=a sandboxes=3 memory=2G", f"{B} name=b execs=5"],
                         pool=0)
    mine = srv.get("/metrics", token=A).text
    assert 'execbox_tenant_quota{tenant="a",resource="sandboxes"} 3' in mine, mine
    assert f'execbox_tenant_quota{{tenant="a",resource="memory_bytes"}} {2 * GiB}' in mine, mine
    assert 'tenant="b"' not in mine and 'tenant="ops"' not in mine, mine
    every = srv.get("/metrics", token=admin).text
    assert 'execbox_tenant_quota{tenant="a",resource="sandboxes"} 3' in every
    assert 'execbox_tenant_quota{tenant="b",resource="execs"} 5' in every
    assert "execbox_pool_ready" in every and "execbox_pool_ready" not in mine
