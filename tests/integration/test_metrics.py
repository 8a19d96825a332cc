"""GET /metrics in Prometheus conventions (issue 13, item 3): base units,
counters ending in _total, histograms up to 300 s, the start latency by
pool hit and miss, HTTP replies by route template, auth failures,
per-tenant sandbox counts and the process_* family; `promtool check
metrics` has nothing to say; an admin token sees the server, a tenant
token only its own figures; /readyz likewise."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time

import pytest

import server_fixture as sf

from server_fixture import expect, expect_error, parse_prometheus, server, server_factory  # noqa: F401

ADMIN = "admin-token-0123456789abcdef0"
ALICE = "alice-token-0123456789abcdef0"
BOB = "bob-token-0123456789abcdef000"
HIST_LE = ["0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5",
           "1", "2.5", "5", "10", "30", "60", "120", "300", "+Inf"]
PROCESS = ["process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
           "process_open_fds", "process_max_fds", "process_start_time_seconds"]


def scrape(srv, token="default") -> tuple[str, dict]:
    r = srv.get("/metrics", token=token)
    expect(r, 200)
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4"), r.headers
    return r.text, parse_prometheus(r.text)


def families(text: str) -> dict[str, str]:
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))


@pytest.fixture
def tenants(server_factory):
    """Three tokens: an admin, alice (named), bob (unnamed: tenant index 2)."""
    return server_factory(tokens=[f"{ADMIN} admin name=ops  # the operator", f"{ALICE} name=alice",
                                  "# bob's token, no name", BOB])


def test_names_units_and_types(server):
    text, _ = scrape(server)
    fam = families(text)
    for name, typ in fam.items():
        assert re.fullmatch(r"[a-z_]+", name), name
        assert (typ == "counter") == name.endswith("_total"), f"{name} is a {typ}"
        assert not re.search(r"_(ms|us|milliseconds|kb|mb|mib)(_|$)", name), f"{name}: use base units"
        assert f"# HELP {name} " in text, f"{name} has no HELP"
    for name in ["execbox_exec_duration_seconds", "execbox_sandbox_start_duration_seconds"]:
        assert fam[name] == "histogram"
    for name in ["execbox_http_requests_total", "execbox_auth_failures_total", "execbox_tenant_sandboxes",
                 "execbox_tenant_sandboxes_created_total", "execbox_tenant_execs_total", *PROCESS]:
        assert name in fam, f"{name} missing from {sorted(fam)}"


def test_histogram_buckets_reach_300_seconds(server):
    text, m = scrape(server)
    le = re.findall(r'^execbox_exec_duration_seconds_bucket\{le="([^"]+)"\}', text, re.M)
    assert le == HIST_LE
    for pool in ["hit", "miss"]:
        le = re.findall(rf'^execbox_sandbox_start_duration_seconds_bucket\{{pool="{pool}",le="([^"]+)"\}}', text, re.M)
        assert le == HIST_LE, pool


def test_families_move_on_create_and_exec(server_factory):
    srv = server_factory(pool=1)
    _, m0 = scrape(srv)
    deadline = time.monotonic() + 10
    while srv.readyz()["pool_ready"] < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    a = srv.create()["id"]                       # from the pool: a hit
    b = srv.create(limits={"disk": 64 << 20})["id"]   # another disk size: a miss
    srv.exec(a, cmd="true")
    srv.exec(a, cmd="sleep 0.3")
    srv.exec(b, cmd="false")
    expect_error(srv.get("/v1/sandboxes/" + "a" * 26), 404, "sandbox_not_found")
    srv.get("/no/such/path")
    _, m = scrape(srv)
    hit, miss = 'execbox_sandbox_start_duration_seconds_count{pool="hit"}', \
        'execbox_sandbox_start_duration_seconds_count{pool="miss"}'
    assert m[hit] == m0[hit] + 1 and m[miss] == m0[miss] + 1, (m[hit], m[miss])
    assert m['execbox_sandbox_start_duration_seconds_sum{pool="miss"}'] > 0
    assert m['execbox_sandbox_start_duration_seconds_bucket{pool="miss",le="300"}'] == m[miss]
    assert m["execbox_exec_duration_seconds_count"] == m0["execbox_exec_duration_seconds_count"] + 3
    assert m["execbox_exec_duration_seconds_sum"] >= 0.3
    assert m['execbox_exec_duration_seconds_bucket{le="0.1"}'] <= 2
    assert m['execbox_execs_total{status="ok"}'] == 2 and m['execbox_execs_total{status="exit_nonzero"}'] == 1
    assert m['execbox_tenant_sandboxes{tenant="0"}'] == 2
    assert m['execbox_tenant_execs_total{tenant="0",status="ok"}'] == 2
    # Route templates, never raw paths: the unknown id and path leave no trace.
    req = {k: v for k, v in m.items() if k.startswith("execbox_http_requests_total")}
    assert req['execbox_http_requests_total{method="POST",route="/v1/sandboxes",status="201"}'] == 2
    assert req['execbox_http_requests_total{method="POST",route="/v1/sandboxes/{}/exec",status="200"}'] == 3
    assert req['execbox_http_requests_total{method="GET",route="/v1/sandboxes/{}",status="404"}'] == 1
    assert req['execbox_http_requests_total{method="other",route="unmatched",status="404"}'] == 1
    assert not [k for k in req if "aaaa" in k or "/no/such" in k], req
    srv.remove(a)
    srv.remove(b)
    _, m = scrape(srv)
    assert m['execbox_tenant_sandboxes{tenant="0"}'] == 0 and m["execbox_sandboxes"] == 0
    assert m["execbox_sandboxes_deleted_total"] == 2


def test_process_metrics_are_the_daemons(server):
    _, m = scrape(server)
    with open(f"/proc/{server.pid}/status") as f:
        st = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
    rss = int(st["VmRSS"].split()[0]) * 1024
    assert 0.5 * rss < m["process_resident_memory_bytes"] < 2 * rss + (8 << 20)
    assert m["process_virtual_memory_bytes"] >= m["process_resident_memory_bytes"]
    nfds = len(os.listdir(f"/proc/{server.pid}/fd"))
    assert abs(m["process_open_fds"] - nfds) <= 4
    assert m["process_max_fds"] >= m["process_open_fds"]
    assert m["process_cpu_seconds_total"] >= 0
    # The server started within the test's few seconds (clock ticks: 10 ms).
    assert time.time() - 120 < m["process_start_time_seconds"] <= time.time() + 1


def test_auth_failures_are_counted(tenants):
    srv = tenants
    for _ in range(2):
        expect_error(srv.get("/v1/sandboxes", token=None), 401, "unauthorized")
    expect_error(srv.get("/v1/sandboxes", token="wrong-token-0000000000000000"), 401, "unauthorized")
    expect_error(srv.get("/metrics", token=None), 401, "unauthorized")
    _, m = scrape(srv, token=ADMIN)
    assert m['execbox_auth_failures_total{reason="missing"}'] == 3
    assert m['execbox_auth_failures_total{reason="invalid"}'] == 1
    assert m['execbox_http_requests_total{method="GET",route="/v1/sandboxes",status="401"}'] == 3


def test_promtool_finds_nothing(tenants):
    if not shutil.which("promtool"):
        # make metrics-test (in make check, after scripts/deps.sh) insists.
        assert not os.environ.get("XB_REQUIRE_PROMTOOL"), "promtool is not installed"
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus; scripts/deps.sh does)")
    srv = tenants
    sid = srv.create(token=ALICE)["id"]
    srv.exec(sid, token=ALICE, cmd="echo hi")
    expect_error(srv.get("/v1/sandboxes", token=None), 401, "unauthorized")
    for token in [ADMIN, ALICE, BOB]:
        text, _ = scrape(srv, token=token)
        p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
        assert p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), (p.stdout, p.stderr)
    srv.remove(sid, token=ALICE)


def test_admin_sees_all_and_a_tenant_only_its_own(tenants):
    srv = tenants
    a1 = srv.create(token=ALICE)["id"]
    a2 = srv.create(token=ALICE)["id"]
    b1 = srv.create(token=BOB)["id"]
    srv.exec(a1, token=ALICE, cmd="true")
    srv.exec(b1, token=BOB, cmd="false")

    text, m = scrape(srv, token=ADMIN)
    assert m["execbox_sandboxes"] == 3
    assert m['execbox_tenant_sandboxes{tenant="ops"}'] == 0
    assert m['execbox_tenant_sandboxes{tenant="alice"}'] == 2
    assert m['execbox_tenant_sandboxes{tenant="2"}'] == 1
    assert m['execbox_tenant_execs_total{tenant="2",status="exit_nonzero"}'] == 1
    assert "process_open_fds" in m and "execbox_pool_ready" in m
    assert ALICE not in text and BOB not in text and ADMIN not in text

    text, m = scrape(srv, token=ALICE)
    assert m["execbox_sandboxes"] == 2 and m["execbox_sandboxes_created_total"] == 2
    assert m['execbox_execs_total{status="ok"}'] == 1 and m['execbox_execs_total{status="exit_nonzero"}'] == 0
    assert m['execbox_tenant_sandboxes{tenant="alice"}'] == 2
    assert not re.search(r'tenant="(ops|2)"', text), text
    for name in ["execbox_pool_ready", "execbox_http_requests_total", "execbox_auth_failures_total",
                 "execbox_exec_duration_seconds_count", "process_open_fds"]:
        assert name not in text, f"a tenant sees {name}"

    text, m = scrape(srv, token=BOB)
    assert m["execbox_sandboxes"] == 1
    assert m['execbox_execs_total{status="exit_nonzero"}'] == 1 and m['execbox_execs_total{status="ok"}'] == 0
    assert list(k for k in m if "tenant=" in k) and not re.search(r'tenant="(ops|alice)"', text)
    for sid, tok in [(a1, ALICE), (a2, ALICE), (b1, BOB)]:
        srv.remove(sid, token=tok)


def test_readyz_figures_are_for_admins(tenants):
    srv = tenants
    full = {"status", "sandboxes", "pool_ready", "pool_target", "cgroups"}
    r = srv.get("/readyz", token=ADMIN)
    expect(r, 200)
    assert set(r.json()) == full
    for token in [ALICE, BOB, None, "wrong-token-0000000000000000"]:
        r = srv.get("/readyz", token=token)
        expect(r, 200)
        assert r.json() == {"status": "ready"}, token


def test_no_auth_sees_everything(server_factory):
    srv = server_factory()                        # --no-auth
    _, m = scrape(srv, token=None)
    assert "process_open_fds" in m and "execbox_pool_ready" in m
    assert set(srv.readyz()) >= {"sandboxes", "pool_ready"}


def test_a_lone_token_is_the_admin(server_factory):
    lone = server_factory(tokens=[ALICE])         # an old one-token file: its token is the admin
    text, _ = scrape(lone, token=ALICE)
    assert "execbox_http_requests_total{" in text and "process_open_fds" in text
    assert "pool_ready" in lone.get("/readyz", token=ALICE).json()
    assert lone.get("/readyz", token=None).json() == {"status": "ready"}


def test_two_plain_tokens_are_two_tenants_without_admin(server_factory):
    srv = server_factory(tokens=[ALICE, BOB])     # the old format, two lines
    srv.create(token=BOB)
    for tok in [ALICE, BOB]:
        text, m = scrape(srv, token=tok)
        assert "process_open_fds" not in text
    assert scrape(srv, token=ALICE)[1]["execbox_sandboxes"] == 0
    assert scrape(srv, token=BOB)[1]["execbox_sandboxes"] == 1
    for s in srv.get("/v1/sandboxes", token=BOB).json()["sandboxes"]:
        srv.remove(s["id"], token=BOB)


@pytest.mark.parametrize("lines,why", [
    (["admin"], "must follow a token"),
    ([f"{ALICE} name=9lives"], "a name is a letter"),
    ([f"{ALICE} name=x", f"{BOB} name=x"], "is taken"),
    ([f"{ALICE} name="], "a name is a letter"),
    ([f"{ALICE} short"], "at least 16 characters"),
])
def test_bad_token_files_are_refused(execbox, tmp_path, lines, why):
    tf = tmp_path / "tokens"
    tf.write_text("\n".join(lines) + "\n")
    tf.chmod(0o600)
    r = subprocess.run([execbox, "serve", "--state-dir", str(tmp_path / "st"), "--pool", "0", "--listen",
                        "127.0.0.1:0", "--token-file", str(tf)], stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=20, env=sf.server_env())
    assert r.returncode != 0 and why.encode() in r.stderr, (r.returncode, r.stderr)
