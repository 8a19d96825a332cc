"""Golden tests of the REST API: the error replies ({status, error.code,
error.message, error.hint}) of every area, and the shapes of the main
success replies, pinned in tests/golden/rest/<area>.json so that a refactor
can prove it changed nothing a client sees. XB_GOLDEN_UPDATE=1 rewrites the
files (golden.py); otherwise a mismatch fails with a diff."""
from __future__ import annotations

import json
import time

import pytest
import requests

from golden import VOLATILE, Golden, Normaliser, shape
from server_fixture import expect, raw_json, raw_request, raw_status, server, server_factory  # noqa: F401

NO_SANDBOX = "doesnotexist0000000000000000"
NO_PID = 999999


class Rec:
    """Records the replies of one area into its golden file."""

    def __init__(self, srv, area: str, tmp_path):
        self.srv = srv
        self.norm = Normaliser()
        self.norm.learn(str(tmp_path), "<TMP>")
        self.g = Golden("rest", area, self.norm)

    # -- requests --
    def call(self, method: str, path: str, body=None, raw: bytes | str | None = None, params=None,
             headers=None, timeout: float = 60) -> requests.Response:
        if raw is not None:
            h = {"Content-Type": "application/json", **(headers or {})}
            return self.srv.request(method, path, data=raw, headers=h, params=params, timeout=timeout)
        return self.srv.request(method, path, json_body=body, params=params, headers=headers, timeout=timeout)

    def label(self, r: requests.Response) -> str:
        s = f"{r.request.method} {r.request.path_url}"
        return s if len(s) <= 160 else s[:150] + "...(cut)"

    # -- what is pinned --
    def error(self, name: str, r: requests.Response) -> dict:
        """An error reply: the status, and the error object's three fields.
        A request meant to fail that succeeds today is pinned as it is."""
        if r.status_code < 400:
            return self.ok(name, r, r.status_code, volatile={"id", "state"})
        rec = {"request": self.label(r), "status": r.status_code}
        try:
            body = r.json()
        except ValueError:
            body = None
        err = body.get("error") if isinstance(body, dict) else None
        if isinstance(err, dict) and set(body) == {"error"}:
            rec.update({"code": err.get("code"), "message": err.get("message"), "hint": err.get("hint")})
            if set(err) != {"code", "message", "hint"}:
                rec["error_keys"] = sorted(err)
        else:
            rec["body"] = r.text[:500]
        if r.headers.get("Allow"):
            rec["allow"] = r.headers["Allow"]
        self.g.add(name, rec)
        return rec

    def ok(self, name: str, r: requests.Response, status: int, values: bool = True, volatile=()) -> dict:
        """A success reply: status, content type, the body's shape, and
        (values=True) the body with its volatile fields masked."""
        expect(r, status)
        rec = {"request": self.label(r), "status": r.status_code,
               "content_type": r.headers.get("Content-Type")}
        if r.content:
            body = r.json()
            rec["shape"] = shape(body)
            if values:
                rec["body"] = self.norm.value(body, VOLATILE | set(volatile))
        else:
            rec["body"] = ""
        self.g.add(name, rec)
        return r.json() if r.content else {}

    def check(self) -> int:
        return self.g.check()

    # -- helpers --
    def sandbox(self, **body) -> str:
        r = self.srv.post("/v1/sandboxes", body)
        expect(r, 201)
        sid = r.json()["id"]
        self.norm.learn(sid, "<ID>")
        return sid

    def pid(self, pid: int) -> int:
        self.norm.learn_pid(pid)
        return pid


@pytest.fixture
def rec_of(server, tmp_path):
    def make(area):
        return Rec(server, area, tmp_path)
    return make


def wait_until(pred, timeout: float, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(step)


# ---- sandboxes ----

def test_golden_sandboxes(rec_of):
    g = rec_of("sandboxes")
    S = "/v1/sandboxes"
    bad_creates = {
        "create.body_not_object": [1],
        "create.unknown_field": {"bogus": 1},
        "create.limits_not_object": {"limits": 5},
        "create.limits_unknown_field": {"limits": {"gpu": 1}},
        "create.limits_memory_too_small": {"limits": {"memory": 1}},
        "create.limits_memory_too_large": {"limits": {"memory": 1 << 60}},
        "create.limits_memory_string": {"limits": {"memory": "1G"}},
        "create.limits_memory_negative": {"limits": {"memory": -1}},
        "create.limits_memory_float": {"limits": {"memory": 1.5e9}},
        "create.limits_pids_too_small": {"limits": {"pids": 1}},
        "create.limits_pids_too_large": {"limits": {"pids": 1 << 30}},
        "create.limits_cpus_zero": {"limits": {"cpus": 0}},
        "create.limits_cpus_too_many": {"limits": {"cpus": 100000}},
        "create.limits_cpus_string": {"limits": {"cpus": "two"}},
        "create.limits_disk_too_small": {"limits": {"disk": 1}},
        "create.limits_disk_too_large": {"limits": {"disk": 1 << 62}},
        "create.template_unknown": {"template": "ubuntu"},
        "create.template_not_string": {"template": 5},
        "create.template_too_long": {"template": "x" * 100},
        "create.mounts_not_array": {"mounts": {"host": "/srv"}},
        "create.mounts_too_many": {"mounts": [{"host": "/srv", "path": f"/mnt/{i}"} for i in range(33)]},
        "create.mounts_item_not_object": {"mounts": ["/srv:/mnt"]},
        "create.mounts_missing_path": {"mounts": [{"host": "/srv"}]},
        "create.mounts_unknown_field": {"mounts": [{"host": "/srv", "path": "/mnt/x", "rw": True}]},
        "create.mounts_readonly_not_bool": {"mounts": [{"host": "/srv", "path": "/mnt/x", "readonly": "yes"}]},
        "create.mounts_relative_host": {"mounts": [{"host": "srv", "path": "/mnt/x"}]},
        "create.mounts_relative_path": {"mounts": [{"host": "/srv", "path": "mnt/x"}]},
        "create.mounts_not_allowed": {"mounts": [{"host": "/etc", "path": "/mnt/etc"}]},
        "create.mounts_missing_host_dir": {"mounts": [{"host": "/nonexistent-golden", "path": "/mnt/x"}]},
        "create.timeout_zero": {"timeout_s": 0},
        "create.timeout_too_large": {"timeout_s": 10 ** 9},
        "create.timeout_string": {"timeout_s": "60"},
        "create.env_not_object": {"env": "A=1"},
        "create.env_value_not_string": {"env": {"A": 1}},
        "create.env_bad_name": {"env": {"A=B": "1"}},
        "create.env_empty_name": {"env": {"": "1"}},
        "create.metadata_not_object": {"metadata": "owner"},
        "create.metadata_too_many_keys": {"metadata": {f"k{i}": "v" for i in range(65)}},
        "create.metadata_too_large": {"metadata": {"k": "v" * 17000}},
    }
    for name, body in bad_creates.items():
        g.error(name, g.call("POST", S, body))
    g.error("create.bad_json", g.call("POST", S, raw="{not json"))
    g.error("create.trailing_garbage", g.call("POST", S, raw="{} x"))
    g.error("create.json_null", g.call("POST", S, raw="null"))

    g.error("get.unknown_id", g.call("GET", f"{S}/{NO_SANDBOX}"))
    g.error("get.id_uppercase", g.call("GET", f"{S}/NOTANID"))
    g.error("get.id_very_long", g.call("GET", f"{S}/{'a' * 200}"))
    g.error("delete.unknown_id", g.call("DELETE", f"{S}/{NO_SANDBOX}"))
    g.error("keepalive.unknown_id", g.call("POST", f"{S}/{NO_SANDBOX}/keepalive", {}))

    # success shapes
    r = g.call("POST", S, {"limits": {"memory": 256 << 20, "pids": 64, "cpus": 0.5}, "metadata": {"owner": "golden"},
                           "timeout_s": 120, "env": {"GOLDEN": "1"}})
    g.norm.learn(r.json().get("id"), "<ID>")
    # a sandbox with its own limits starts cold: "starting" or, a moment later, "running"
    sb = g.ok("create.ok", r, 201, volatile={"state"})
    sid = sb["id"]
    g.ok("create.defaults", g.call("POST", S, {}), 201, volatile={"id", "state"})
    g.ok("get.ok", g.call("GET", f"{S}/{sid}"), 200, volatile={"state"})
    g.ok("list.ok", g.call("GET", S), 200, values=False)
    for name, body in {"keepalive.timeout_zero": {"timeout_s": 0}, "keepalive.timeout_negative": {"timeout_s": -5},
                       "keepalive.timeout_string": {"timeout_s": "60"}, "keepalive.unknown_field": {"ttl": 60},
                       "keepalive.timeout_too_large": {"timeout_s": 10 ** 9}}.items():
        g.error(name, g.call("POST", f"{S}/{sid}/keepalive", body))
    g.error("keepalive.bad_json", g.call("POST", f"{S}/{sid}/keepalive", raw="{"))
    g.ok("keepalive.ok", g.call("POST", f"{S}/{sid}/keepalive", {"timeout_s": 600}), 200, volatile={"state"})
    g.ok("keepalive.empty_body", g.call("POST", f"{S}/{sid}/keepalive", raw=""), 200, volatile={"state"})
    for name, body in {"network.bad_mode": {"mode": "everything"}, "network.unknown_field": {"ports": [80]},
                       "network.bad_cidr": {"mode": "allowlist", "allow": ["10.0.0.0/99"]},
                       "network.allow_without_allowlist": {"mode": "open", "allow": ["example.com"]}}.items():
        g.error(name, g.call("PATCH", f"{S}/{sid}/network", body))
    g.error("network.create_bad_mode", g.call("POST", S, {"network": "everything"}))
    g.error("network.unknown_id", g.call("GET", f"{S}/{NO_SANDBOX}/network"))
    g.error("network.log_bad_limit", g.call("GET", f"{S}/{sid}/network/log?limit=0"))
    g.ok("delete.ok", g.call("DELETE", f"{S}/{sid}"), 204)
    g.error("get.deleted", g.call("GET", f"{S}/{sid}"))
    g.error("exec.deleted", g.call("POST", f"{S}/{sid}/exec", {"cmd": "true"}))
    g.check()


# ---- exec ----

def test_golden_exec(rec_of):
    g = rec_of("exec")
    sid = g.sandbox()
    E = f"/v1/sandboxes/{sid}/exec"
    bad = {
        "no_cmd_or_argv": {},
        "cmd_and_argv": {"cmd": "true", "argv": ["true"]},
        "cmd_not_string": {"cmd": 5},
        "cmd_null_and_no_argv": {"cmd": None},
        "argv_not_array": {"argv": "ls -la"},
        "argv_item_not_string": {"argv": ["echo", 1]},
        "argv_empty": {"argv": []},
        "argv_too_many": {"argv": ["x"] * 4097},
        "cmd_too_long": {"cmd": "x" * ((256 << 10) + 1)},
        "cwd_relative": {"cmd": "pwd", "cwd": "tmp"},
        "cwd_not_string": {"cmd": "pwd", "cwd": 1},
        "user_unknown": {"cmd": "id", "user": "admin"},
        "timeout_negative": {"cmd": "true", "timeout_s": -1},
        "timeout_too_large": {"cmd": "true", "timeout_s": 86401},
        "timeout_string": {"cmd": "true", "timeout_s": "10"},
        "yield_too_small": {"cmd": "true", "yield_after_s": 0},
        "output_limit_too_small": {"cmd": "true", "output_limit": 1},
        "output_limit_too_large": {"cmd": "true", "output_limit": 1 << 40},
        "env_not_object": {"cmd": "true", "env": ["A=1"]},
        "env_bad_name": {"cmd": "true", "env": {"1A": "x"}},
        "env_value_too_long": {"cmd": "true", "env": {"A": "x" * (70 << 10)}},
        "env_too_many": {"cmd": "true", "env": {f"V{i}": "x" for i in range(1100)}},
        "stdin_not_string": {"cmd": "cat", "stdin": 5},
        "unknown_field": {"cmd": "true", "shell": "zsh"},
    }
    for name, body in bad.items():
        g.error(name, g.call("POST", E, body))
    g.error("bad_json", g.call("POST", E, raw="{\"cmd\": "))
    g.error("body_is_array", g.call("POST", E, raw="[\"ls\"]"))
    g.error("command_too_long_for_init", g.call("POST", E, {"argv": ["echo"] + ["y" * (200 << 10)] * 3}))
    g.error("cwd_does_not_exist", g.call("POST", E, {"cmd": "pwd", "cwd": "/nonexistent/dir"}))
    g.error("cwd_is_a_file", g.call("POST", E, {"argv": ["pwd"], "cwd": "/etc/passwd"}))
    g.error("argv_command_not_found", g.call("POST", E, {"argv": ["no-such-program-golden"]}))
    g.error("argv_absolute_not_found", g.call("POST", E, {"argv": ["/usr/bin/no-such-program-golden"]}))
    g.error("argv_not_executable", g.call("POST", E, {"argv": ["/etc/passwd"]}))
    g.error("unknown_sandbox", g.call("POST", f"/v1/sandboxes/{NO_SANDBOX}/exec", {"cmd": "true"}))

    # results: stable values, volatile ones by type
    g.ok("ok.cmd", g.call("POST", E, {"cmd": "echo hello; echo oops >&2"}), 200)
    g.ok("ok.argv", g.call("POST", E, {"argv": ["/bin/echo", "a  b", "$HOME"]}), 200)
    g.ok("ok.exit_nonzero", g.call("POST", E, {"cmd": "exit 3"}), 200)
    g.ok("ok.cmd_not_found", g.call("POST", E, {"cmd": "no-such-program-golden"}), 200)
    g.ok("ok.signal", g.call("POST", E, {"cmd": "kill -SEGV $$"}), 200)
    g.ok("ok.timeout", g.call("POST", E, {"cmd": "echo before; sleep 5", "timeout_s": 1}), 200)
    g.ok("ok.truncated", g.call("POST", E, {"cmd": "head -c 5000 /dev/zero | tr '\\0' a",
                                            "output_limit": 1024}), 200)
    g.ok("ok.stdin_env_cwd_root", g.call("POST", E, {"cmd": "cat; echo $GOLDEN; pwd; id -u", "stdin": "in\n",
                                                     "env": {"GOLDEN": "g"}, "cwd": "/tmp", "user": "root"}), 200)
    r = g.call("POST", E, {"cmd": "echo started; sleep 30", "yield_after_s": 1})
    res = g.ok("ok.yield_running", r, 200)
    if isinstance(res.get("pid"), int):
        g.pid(res["pid"])
        g.call("POST", f"/v1/sandboxes/{sid}/processes/{res['pid']}/signal", {"signal": "KILL"})
        g.call("POST", f"/v1/sandboxes/{sid}/processes/{res['pid']}/wait", {"timeout_s": 5})
    g.check()


# ---- processes ----

def test_golden_processes(rec_of):
    g = rec_of("processes")
    sid = g.sandbox()
    P = f"/v1/sandboxes/{sid}/processes"
    g.error("start.empty", g.call("POST", P, {}))
    g.error("start.yield_not_allowed", g.call("POST", P, {"cmd": "true", "yield_after_s": 1}))
    g.error("start.cwd_does_not_exist", g.call("POST", P, {"cmd": "true", "cwd": "/nonexistent/dir"}))
    g.error("start.command_not_found", g.call("POST", P, {"argv": ["no-such-program-golden"]}))
    g.error("start.bad_json", g.call("POST", P, raw="{"))
    g.error("start.unknown_sandbox", g.call("POST", f"/v1/sandboxes/{NO_SANDBOX}/processes", {"cmd": "true"}))
    g.error("list.unknown_sandbox", g.call("GET", f"/v1/sandboxes/{NO_SANDBOX}/processes"))
    for what, method, body in [("get", "GET", None), ("delete", "DELETE", None), ("output", "GET", None),
                               ("stdin", "POST", {"data": "x"}), ("signal", "POST", {"signal": "TERM"}),
                               ("wait", "POST", {})]:
        suffix = "" if what in ("get", "delete") else f"/{what}"
        g.error(f"{what}.unknown_pid", g.call(method, f"{P}/{NO_PID}{suffix}", body))
    g.error("get.pid_not_a_number", g.call("GET", f"{P}/abc"))
    g.error("get.pid_zero", g.call("GET", f"{P}/0"))
    g.error("get.pid_negative", g.call("GET", f"{P}/-1"))
    g.error("get.pid_huge", g.call("GET", f"{P}/99999999999"))

    # a running process: start, list, get, output, stdin, signals
    r = g.call("POST", P, {"cmd": "cat"})
    run = g.ok("start.ok", r, 201)
    pid = g.pid(run["pid"])
    g.ok("list.ok", g.call("GET", P), 200)
    g.ok("get.running", g.call("GET", f"{P}/{pid}"), 200)
    for name, body in {"signal.bad_name": {"signal": "SIGFOO"}, "signal.zero": {"signal": 0},
                       "signal.too_large": {"signal": 65}, "signal.bool": {"signal": True},
                       "signal.unknown_field": {"sig": "TERM"}}.items():
        g.error(name, g.call("POST", f"{P}/{pid}/signal", body))
    for name, body in {"stdin.data_not_string": {"data": 5}, "stdin.eof_not_bool": {"data": "", "eof": "yes"},
                       "stdin.unknown_field": {"text": "x"}}.items():
        g.error(name, g.call("POST", f"{P}/{pid}/stdin", body))
    g.error("stdin.bad_json", g.call("POST", f"{P}/{pid}/stdin", raw="{"))
    for name, q in {"output.offset_negative": "stdout_offset=-1", "output.offset_not_number": "stdout_offset=abc",
                    "output.stderr_offset_empty": "stderr_offset=", "output.max_bytes_too_large": f"max_bytes={17 << 20}",
                    "output.wait_too_long": "wait_s=3601", "output.wait_float": "wait_s=0.5"}.items():
        g.error(name, g.call("GET", f"{P}/{pid}/output?{q}"))
    for name, body in {"wait.timeout_negative": {"timeout_s": -1}, "wait.timeout_string": {"timeout_s": "x"},
                       "wait.unknown_field": {"for": 1}}.items():
        g.error(name, g.call("POST", f"{P}/{pid}/wait", body))
    g.ok("stdin.ok", g.call("POST", f"{P}/{pid}/stdin", {"data": "line one\n"}), 200)
    g.ok("stdin.eof", g.call("POST", f"{P}/{pid}/stdin", {"data": "line two\n", "eof": True}), 200)
    g.ok("wait.finished", g.call("POST", f"{P}/{pid}/wait", {"timeout_s": 10}), 200)
    g.ok("output.ok", g.call("GET", f"{P}/{pid}/output"), 200)
    g.ok("output.offsets", g.call("GET", f"{P}/{pid}/output?stdout_offset=5&max_bytes=3"), 200)
    g.ok("output.past_the_end", g.call("GET", f"{P}/{pid}/output?stdout_offset=1000"), 200)
    g.error("stdin.finished", g.call("POST", f"{P}/{pid}/stdin", {"data": "late\n"}))
    g.error("signal.finished", g.call("POST", f"{P}/{pid}/signal", {"signal": "KILL"}))
    g.ok("get.finished", g.call("GET", f"{P}/{pid}"), 200)

    r = g.call("POST", P, {"cmd": "sleep 30"})
    p2 = g.pid(g.ok("start.sleep", r, 201)["pid"])
    g.ok("wait.timeout", g.call("POST", f"{P}/{p2}/wait", {"timeout_s": 0.2}), 200)
    g.ok("signal.ok", g.call("POST", f"{P}/{p2}/signal", {"signal": "SIGKILL"}), 200)
    g.ok("wait.killed", g.call("POST", f"{P}/{p2}/wait", {"timeout_s": 10}), 200)
    g.ok("delete.ok", g.call("DELETE", f"{P}/{p2}"), 204)
    g.error("get.deleted", g.call("GET", f"{P}/{p2}"))
    g.check()


# ---- files ----

def test_golden_files(rec_of):
    g = rec_of("files")
    sid = g.sandbox()
    F = f"/v1/sandboxes/{sid}/files"

    def q(path=None, **extra):
        p = {} if path is None else {"path": path}
        p.update(extra)
        return p

    # request validation
    g.error("get.missing_path", g.call("GET", F))
    g.error("get.empty_path", g.call("GET", F, params=q("")))
    g.error("get.path_too_long", g.call("GET", F, params=q("/" + "a" * 4100)))
    g.error("get.path_nul", g.call("GET", F + "?path=/home/user/a%00b"))
    g.error("get.relative_not_found", g.call("GET", F, params=q("nope/missing.txt")))
    g.error("get.not_found", g.call("GET", F, params=q("/home/user/missing.txt")))
    g.error("get.is_a_directory", g.call("GET", F, params=q("/home/user")))
    g.error("get.not_a_directory", g.call("GET", F, params=q("/etc/passwd/x")))
    g.error("get.shadow", g.call("GET", F, params=q("/etc/shadow")))
    g.error("get.proc_file", g.call("GET", F, params=q("/proc/self/status")))
    g.error("get.device", g.call("GET", F, params=q("/dev/null")))
    g.error("get.name_too_long", g.call("GET", F, params=q("/home/user/" + "n" * 300)))
    g.error("get.unknown_sandbox", g.call("GET", f"/v1/sandboxes/{NO_SANDBOX}/files", params=q("/etc/hostname")))
    g.error("put.missing_path", g.call("PUT", F, raw=b"x"))
    g.error("put.bad_mode_digits", g.call("PUT", F, raw=b"x", params=q("/home/user/m", mode="999")))
    g.error("put.bad_mode_word", g.call("PUT", F, raw=b"x", params=q("/home/user/m", mode="rwx")))
    g.error("put.bad_mode_too_big", g.call("PUT", F, raw=b"x", params=q("/home/user/m", mode="01777")))
    g.error("put.bad_append", g.call("PUT", F, raw=b"x", params=q("/home/user/m", append="maybe")))
    g.error("put.read_only", g.call("PUT", F, raw=b"x", params=q("/usr/golden.txt")))
    g.error("put.onto_directory", g.call("PUT", F, raw=b"x", params=q("/home/user")))
    g.error("put.under_a_file", g.call("PUT", F, raw=b"x", params=q("/etc/hostname/x")))
    g.error("list.depth_zero", g.call("GET", F + "/list", params=q("/home/user", depth="0")))
    g.error("list.depth_six", g.call("GET", F + "/list", params=q("/home/user", depth="6")))
    g.error("list.depth_word", g.call("GET", F + "/list", params=q("/home/user", depth="all")))
    g.error("list.missing_path", g.call("GET", F + "/list"))
    g.error("list.not_found", g.call("GET", F + "/list", params=q("/home/user/nodir")))
    g.error("list.a_file", g.call("GET", F + "/list", params=q("/etc/hostname")))
    g.error("stat.not_found", g.call("GET", F + "/stat", params=q("/home/user/missing")))
    g.error("stat.missing_path", g.call("GET", F + "/stat"))
    g.error("mkdir.empty", g.call("POST", F + "/mkdir", {}))
    g.error("mkdir.path_not_string", g.call("POST", F + "/mkdir", {"path": 1}))
    g.error("mkdir.bad_mode", g.call("POST", F + "/mkdir", {"path": "/home/user/d", "mode": "8"}))
    g.error("mkdir.unknown_field", g.call("POST", F + "/mkdir", {"path": "/home/user/d", "recursive": True}))
    g.error("mkdir.no_parent", g.call("POST", F + "/mkdir", {"path": "/home/user/a/b/c", "parents": False}))
    g.error("mkdir.read_only", g.call("POST", F + "/mkdir", {"path": "/usr/golden"}))
    g.error("move.empty", g.call("POST", F + "/move", {}))
    g.error("move.missing_to", g.call("POST", F + "/move", {"from": "/home/user/a"}))
    g.error("move.overwrite_not_bool", g.call("POST", F + "/move", {"from": "a", "to": "b", "overwrite": 1}))
    g.error("move.source_not_found", g.call("POST", F + "/move", {"from": "/home/user/none", "to": "/home/user/b"}))
    g.error("move.home", g.call("POST", F + "/move", {"from": "/home/user", "to": "/tmp/home"}))
    g.error("delete.missing_path", g.call("DELETE", F))
    g.error("delete.not_found", g.call("DELETE", F, params=q("/home/user/missing")))
    g.error("delete.home", g.call("DELETE", F, params=q("/home/user", recursive="true")))
    g.error("delete.bad_recursive", g.call("DELETE", F, params=q("/home/user/x", recursive="maybe")))
    g.error("delete.read_only", g.call("DELETE", F, params=q("/etc/hostname")))

    # a small tree, then the errors that need it
    g.ok("put.ok", g.call("PUT", F, raw=b"hello", params=q("/home/user/dir/a.txt")), 200)
    g.ok("put.relative", g.call("PUT", F, raw=b"x\n", params=q("dir/sub/b.txt", mode="0600")), 200)
    g.ok("put.append", g.call("PUT", F, raw=b"!", params=q("dir/a.txt", append="true")), 200)
    g.ok("mkdir.ok", g.call("POST", F + "/mkdir", {"path": "/home/user/empty", "mode": "0750"}), 200,
         volatile={"mtime"})
    g.error("mkdir.exists_as_file", g.call("POST", F + "/mkdir", {"path": "/home/user/dir/a.txt"}))
    g.error("move.onto_existing", g.call("POST", F + "/move", {"from": "dir/sub/b.txt", "to": "dir/a.txt"}))
    g.error("move.cross_device", g.call("POST", F + "/move", {"from": "dir/sub/b.txt", "to": "/tmp/b.txt"}))
    g.error("delete.not_empty", g.call("DELETE", F, params=q("/home/user/dir")))
    g.error("get.range_not_satisfiable", g.call("GET", F, params=q("dir/a.txt"), headers={"Range": "bytes=100-200"}))
    g.ok("put.empty", g.call("PUT", F, raw=b"", params=q("empty.txt")), 200)
    g.error("get.range_of_empty", g.call("GET", F, params=q("empty.txt"), headers={"Range": "bytes=0-"}))
    expect(g.call("POST", f"/v1/sandboxes/{sid}/exec", {"cmd": "install -m 600 /dev/null /tmp/rootonly && "
                                                               "install -d -m 700 /tmp/rootdir", "user": "root"}), 200)
    g.error("get.permission_denied", g.call("GET", F, params=q("/tmp/rootonly")))
    g.error("put.permission_denied", g.call("PUT", F, raw=b"x", params=q("/tmp/rootonly")))
    g.error("list.permission_denied", g.call("GET", F + "/list", params=q("/tmp/rootdir")))
    g.error("delete.permission_denied", g.call("DELETE", F, params=q("/tmp/rootonly")))

    r = g.call("GET", F, params=q("dir/a.txt"))
    expect(r, 200)
    g.g.add("get.ok", {"request": g.label(r), "status": r.status_code, "content_type": r.headers.get("Content-Type"),
                       "accept_ranges": r.headers.get("Accept-Ranges"), "body": r.text})
    r = g.call("GET", F, params=q("dir/a.txt"), headers={"Range": "bytes=1-3"})
    expect(r, 206)
    g.g.add("get.range", {"request": g.label(r), "status": r.status_code, "content_range": r.headers.get("Content-Range"),
                          "body": r.text})
    file_vol = {"mtime", "mtime_ms", "modified", "modified_at"}
    g.ok("stat.file", g.call("GET", F + "/stat", params=q("dir/a.txt")), 200, volatile=file_vol)
    g.ok("stat.dir", g.call("GET", F + "/stat", params=q("/home/user/dir")), 200, volatile=file_vol | {"size"})
    g.ok("list.depth1", g.call("GET", F + "/list", params=q("/home/user/dir")), 200, volatile=file_vol | {"size"})
    g.ok("list.depth3", g.call("GET", F + "/list", params=q("/home/user/dir", depth="3")), 200,
         volatile=file_vol | {"size"})
    g.ok("move.ok", g.call("POST", F + "/move", {"from": "dir/sub/b.txt", "to": "dir/c.txt"}), 200)
    g.ok("move.overwrite", g.call("POST", F + "/move", {"from": "dir/c.txt", "to": "dir/a.txt", "overwrite": True}),
         200)
    g.ok("delete.file", g.call("DELETE", F, params=q("dir/a.txt")), 200)
    g.ok("delete.recursive", g.call("DELETE", F, params=q("dir", recursive="true")), 200)
    g.check()


# ---- sessions ----

def test_golden_sessions(rec_of):
    g = rec_of("sessions")
    sid = g.sandbox()
    B = f"/v1/sandboxes/{sid}"
    S = f"{B}/sessions"
    g.error("create.unknown_language", g.call("POST", S, {"language": "cobol"}))
    g.error("create.bad_language_name", g.call("POST", S, {"language": "no such;lang"}))
    g.error("create.language_not_string", g.call("POST", S, {"language": 3}))
    g.error("create.unknown_field", g.call("POST", S, {"language": "python", "bogus": 1}))
    g.error("create.bad_json", g.call("POST", S, raw="{"))
    g.error("create.unknown_sandbox", g.call("POST", f"/v1/sandboxes/{NO_SANDBOX}/sessions", {}))
    for method, what in (("GET", ""), ("DELETE", ""), ("POST", "/run"), ("POST", "/wait"), ("POST", "/interrupt"),
                         ("POST", "/restart"), ("POST", "/input"), ("GET", "/variables/x")):
        body = {"code": "1"} if what == "/run" else {"data": "x"} if what == "/input" else None
        name = f"unknown_session.{method.lower()}{what.replace('/', '_') or '_session'}"
        g.error(name, g.call(method, f"{S}/nosuchsession0000{what}", body))
    g.error("image.not_found", g.call("GET", f"{B}/images/nope.png"))

    # python
    r = g.call("POST", S, {"language": "python"})
    # "starting", or "idle" when a warm session was ready
    py = g.ok("create.python", r, 201, volatile={"id", "state"})
    g.norm.learn(py["id"], "<SESSION>")
    g.ok("list.ok", g.call("GET", S), 200, values=False)
    g.error("run.empty", g.call("POST", f"{S}/{py['id']}/run", {}))
    g.error("run.code_not_string", g.call("POST", f"{S}/{py['id']}/run", {"code": 1}))
    g.error("run.timeout_negative", g.call("POST", f"{S}/{py['id']}/run", {"code": "1", "timeout_s": -1}))
    g.error("run.output_limit_too_small", g.call("POST", f"{S}/{py['id']}/run", {"code": "1", "output_limit": 10}))
    g.error("run.unknown_field", g.call("POST", f"{S}/{py['id']}/run", {"cmd": "1"}))
    g.ok("run.value", g.call("POST", f"{S}/{py['id']}/run", {"code": "x = 41\nprint('out')\nx + 1"}), 200)
    g.ok("run.error", g.call("POST", f"{S}/{py['id']}/run", {"code": "1/0"}), 200)
    g.ok("get.ok", g.call("GET", f"{S}/{py['id']}"), 200)
    g.error("variable.bad_name", g.call("GET", f"{S}/{py['id']}/variables/1x"))
    g.error("variable.not_found", g.call("GET", f"{S}/{py['id']}/variables/nope"))
    g.ok("variable.ok", g.call("GET", f"{S}/{py['id']}/variables/x"), 200)
    g.error("input.not_bash", g.call("POST", f"{S}/{py['id']}/input", {"data": "x"}))
    g.error("input.missing_data", g.call("POST", f"{S}/{py['id']}/input", {}))
    g.error("wait.timeout_zero", g.call("POST", f"{S}/{py['id']}/wait", {"timeout_s": 0}))
    g.ok("wait.idle", g.call("POST", f"{S}/{py['id']}/wait", {"timeout_s": 0.2}), 200)
    g.ok("interrupt.idle", g.call("POST", f"{S}/{py['id']}/interrupt"), 200)

    # bash: busy, then dead
    r = g.call("POST", S, {"language": "bash"})
    sh = g.ok("create.bash", r, 201, volatile={"id", "state"})
    g.norm.learn(sh["id"], "<SESSION2>")
    g.ok("run.bash_running", g.call("POST", f"{S}/{sh['id']}/run", {"code": "echo start; sleep 30",
                                                                    "yield_after_s": 1}), 200)
    g.error("run.busy", g.call("POST", f"{S}/{sh['id']}/run", {"code": "echo second"}))
    g.ok("interrupt.running", g.call("POST", f"{S}/{sh['id']}/interrupt"), 200, values=False)
    g.ok("wait.interrupted", g.call("POST", f"{S}/{sh['id']}/wait", {"timeout_s": 10}), 200)
    g.ok("run.bash_exit", g.call("POST", f"{S}/{sh['id']}/run", {"code": "exit 3"}), 200)
    # the shell's death is noticed when its process is reaped, which may come after the reply
    assert wait_until(lambda: g.call("GET", f"{S}/{sh['id']}").json()["state"] == "dead", 10)
    g.error("run.dead", g.call("POST", f"{S}/{sh['id']}/run", {"code": "echo again"}))
    g.ok("get.dead", g.call("GET", f"{S}/{sh['id']}"), 200)
    g.ok("delete.ok", g.call("DELETE", f"{S}/{sh['id']}"), 204)
    g.check()


# ---- the plugin routes (Pandora, dangermode) ----

def test_golden_plugin(rec_of):
    g = rec_of("plugin")
    for name, body in {"exec.empty": {}, "exec.command_not_string": {"command": 5},
                       "exec.command_empty": {"command": ""}, "exec.unknown_field": {"cmd": "ls"},
                       "exec.guide_not_bool": {"command": "ls", "guideFollowed": "yes"}}.items():
        g.error(name, g.call("POST", "/exec", body))
    g.error("exec.bad_json", g.call("POST", "/exec", raw="{"))
    for name, body in {"writeFile.empty": {}, "writeFile.no_content": {"filePath": "a.txt"},
                       "writeFile.no_path": {"content": "x"},
                       "writeFile.bad_permissions": {"filePath": "a.txt", "content": "x", "permissions": "9z"},
                       "writeFile.short_permissions": {"filePath": "a.txt", "content": "x", "permissions": "7"},
                       "writeFile.unknown_field": {"filePath": "a.txt", "content": "x", "mode": "644"}}.items():
        g.error(name, g.call("POST", "/writeFile", body))
    for name, body in {"run_cell.empty": {}, "run_cell.code_not_string": {"code": 1},
                       "run_cell.unknown_field": {"code": "1", "timeout": 3}}.items():
        g.error(name, g.call("POST", "/api/run_cell", body))
    g.error("run_cell.bad_json", g.call("POST", "/api/run_cell", raw="not json"))
    g.error("variable.bad_name", g.call("GET", "/api/variable/1bad"))

    r = g.call("POST", "/exec", {"command": "echo hi"})
    g.norm.learn(r.json().get("sandbox_id"), "<ID>")
    g.ok("exec.ok", r, 200)
    g.ok("exec.failed", g.call("POST", "/exec", {"command": "echo no >&2; exit 2"}), 200)
    g.ok("writeFile.ok", g.call("POST", "/writeFile", {"filePath": "/home/user/w.txt", "content": "x"}), 200)
    g.error("writeFile.exists", g.call("POST", "/writeFile", {"filePath": "/home/user/w.txt", "content": "y"}))
    g.ok("writeFile.force", g.call("POST", "/writeFile", {"filePath": "/home/user/w.txt", "content": "y",
                                                         "force": True, "permissions": "755"}), 200)
    g.error("writeFile.read_only", g.call("POST", "/writeFile", {"filePath": "/usr/w.txt", "content": "y",
                                                                "force": True}))
    g.error("writeFile.is_a_directory", g.call("POST", "/writeFile", {"filePath": "/home/user", "content": "y",
                                                                     "force": True}))
    g.ok("run_cell.ok", g.call("POST", "/api/run_cell", {"code": "v = [1, 2]\nprint('p')\nlen(v)"}), 200)
    g.ok("run_cell.error", g.call("POST", "/api/run_cell", {"code": "raise ValueError('golden')"}), 200)
    g.error("variable.unknown", g.call("GET", "/api/variable/nope"))
    g.ok("variable.ok", g.call("GET", "/api/variable/v"), 200)
    g.error("image.not_found", g.call("GET", "/images/nope.png"))
    r = g.call("GET", "/getGuide")
    expect(r, 200)
    g.g.add("getGuide.markdown", {"request": g.label(r), "status": r.status_code,
                                  "content_type": r.headers.get("Content-Type"), "starts": r.text[:40]})
    r = g.call("GET", "/getGuide", headers={"Accept": "application/json"})
    g.ok("getGuide.json", r, 200, values=False)
    g.check()


# ---- HTTP: routes, methods, bodies, auth ----

def test_golden_http(rec_of):
    g = rec_of("http")
    sid = g.sandbox()
    g.error("unknown_route.v1", g.call("GET", "/v1/nope"))
    g.error("unknown_route.root", g.call("GET", "/nope"))
    g.error("unknown_route.deeper", g.call("GET", f"/v1/sandboxes/{sid}/nope"))
    g.error("unknown_route.trailing_slash", g.call("GET", "/v1/sandboxes/"))
    g.error("method.patch_sandboxes", g.call("PATCH", "/v1/sandboxes", {}))
    g.error("method.delete_sandboxes", g.call("DELETE", "/v1/sandboxes"))
    g.error("method.put_sandbox", g.call("PUT", f"/v1/sandboxes/{sid}", {}))
    g.error("method.get_exec", g.call("GET", f"/v1/sandboxes/{sid}/exec"))
    g.error("method.post_files", g.call("POST", f"/v1/sandboxes/{sid}/files", {}))
    g.error("method.get_run_cell", g.call("GET", "/api/run_cell"))
    g.error("method.post_healthz", g.call("POST", "/healthz", {}))
    g.error("nul_in_path", g.call("GET", "/v1/sandboxes/a%00b"))
    for name, raw in {"body.not_json": "hello", "body.truncated": "{\"cmd\": \"ls\"", "body.number": "42",
                      "body.string": "\"ls\"", "body.nested_garbage": "{\"cmd\": [}",
                      "body.invalid_utf8": b"{\"cmd\": \"\xff\xfe\"}"}.items():
        g.error(name, g.call("POST", f"/v1/sandboxes/{sid}/exec", raw=raw))
    # Announced, not sent: the server answers at the headers, and a client
    # still sending would see its connection reset.
    resp = raw_request(g.srv.port, (f"POST /v1/sandboxes/{sid}/exec HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                    f"Content-Type: application/json\r\nContent-Length: {(16 << 20) + 1}\r\n"
                                    "Connection: close\r\n\r\n").encode())
    err = raw_json(resp)["error"]
    g.g.add("body.too_large", {"request": f"POST /v1/sandboxes/{sid}/exec (Content-Length 16 MiB + 1)",
                               "status": raw_status(resp), "code": err["code"], "message": err["message"],
                               "hint": err["hint"]})
    g.ok("healthz", g.call("GET", "/healthz"), 200, values=False)
    g.check()


def test_golden_auth(server_factory, tmp_path):
    """A server with a token (only one server per test: the teardown's
    leftover check would count a second one's sandboxes)."""
    a = Rec(server_factory(tokens=["golden-token-0123456789abcdef"]), "auth", tmp_path)
    a.error("no_token", a.srv.request("GET", "/v1/sandboxes", token=None))
    a.error("bad_token", a.srv.request("GET", "/v1/sandboxes", token="wrong-token-000000000000"))
    a.error("not_bearer", a.srv.request("GET", "/v1/sandboxes", token=None,
                                        headers={"Authorization": "Basic Zm9vOmJhcg=="}))
    a.error("no_token_exec", a.srv.request("POST", f"/v1/sandboxes/{NO_SANDBOX}/exec", token=None,
                                           json_body={"cmd": "true"}))
    a.error("no_token_unknown_route", a.srv.request("GET", "/v1/nope", token=None))
    a.ok("token_ok", a.srv.request("GET", "/v1/sandboxes"), 200)
    a.check()
