"""Golden tests of MCP over Streamable HTTP: every tool of tools/list called
on a success path and on error paths, with its content text blocks
(normalised), isError, and structuredContent (shape, and the values that
are stable), pinned in tests/golden/mcp/*.json so that a refactor can prove
it changed nothing a client sees. XB_GOLDEN_UPDATE=1 rewrites the files
(golden.py); otherwise a mismatch fails with a diff."""
from __future__ import annotations

import json

import pytest

from golden import VOLATILE, Golden, Normaliser, shape
from server_fixture import expect, server, server_factory  # noqa: F401
from test_mcp import Mcp

NO_SANDBOX = "doesnotexist0000000000000000"
NO_PID = 999999


class McpRec:
    def __init__(self, mcp: Mcp, tmp_path):
        self.mcp = mcp
        self.norm = Normaliser()
        self.norm.learn(str(tmp_path), "<TMP>")
        # the default sandbox's metadata names the MCP session by its first 8 characters
        self.norm.learn(mcp.sid, "<MCP_SESSION>")
        self.norm.learn(mcp.sid[:8], "<MCP_CTX>")
        # the durations MCP renders into its texts: "in 0.012 s", "after 0.3 s", "[ok, execution 1, 0.020 s]"
        self.norm.pattern(r"\b\d+\.\d+ s\b", "<T> s")
        self.g = Golden("mcp", "tools", self.norm)
        self.called: dict[str, set[str]] = {}

    def call(self, name: str, case: str, args: dict, outcome: str, volatile=()) -> dict:
        """Call a tool and pin its result. outcome is "ok" or "error": what
        the case is meant to show (the coverage check counts them). A text
        block that is JSON is pinned as JSON, with the same masking as
        structuredContent."""
        r = self.mcp.call(name, args)
        self.called.setdefault(name, set()).add(outcome)
        rec = {"tool": name, "arguments": self.norm.value(args, set())}
        if "error" in r:
            rec["rpc_error"] = {"code": r["error"]["code"], "message": r["error"]["message"]}
            self.g.add(f"{name}.{case}", rec)
            return r
        res = r["result"]
        rec["result_keys"] = sorted(res)
        rec["isError"] = res.get("isError", False)
        mask = VOLATILE | set(volatile)
        if "structuredContent" in res:
            self.learn(res["structuredContent"])
        blocks = []
        for c in res.get("content", []):
            if c.get("type") == "text":
                try:
                    j = json.loads(c["text"])
                except ValueError:
                    j = None
                if isinstance(j, (dict, list)):
                    blocks.append({"type": "text", "json": self.ordered(self.norm.value(j, mask))})
                else:
                    blocks.append({"type": "text", "text": c["text"]})
            else:
                blocks.append({k: (v if k != "data" else "<base64>") for k, v in c.items()})
        rec["content"] = blocks
        if "structuredContent" in res:
            sc = res["structuredContent"]
            rec["structured_shape"] = shape(sc)
            rec["structured"] = self.ordered(self.norm.value(sc, mask))
        self.g.add(f"{name}.{case}", rec)
        return res

    @staticmethod
    def ordered(v):
        """Sandboxes come in the order of their random ids: sort them by
        their placeholders."""
        if isinstance(v, dict) and isinstance(v.get("sandboxes"), list):
            v = dict(v, sandboxes=sorted(v["sandboxes"], key=lambda x: json.dumps(x, sort_keys=True)))
        return v

    def learn(self, sc):
        if isinstance(sc, dict):
            if isinstance(sc.get("sandbox_id"), str):
                self.norm.learn(sc["sandbox_id"], "<ID>")
            if isinstance(sc.get("id"), str) and "limits" in sc:
                self.norm.learn(sc["id"], "<ID2>")
            if isinstance(sc.get("pid"), int):
                self.norm.learn_pid(sc["pid"])
            if isinstance(sc.get("session_id"), str):
                self.norm.learn(sc["session_id"], "<SESSION>")
            if isinstance(sc.get("approval_id"), str):
                self.norm.learn(sc["approval_id"], "<APPROVAL>")


@pytest.fixture
def mcp(server_factory):
    # A package source of its own: the host's (apt, npm) would vary by machine.
    c = Mcp(server_factory("--package-source", "http://pkg.test/debian")).initialize()
    yield c
    c.close()


def test_golden_mcp_tools_list(mcp, tmp_path):
    """The catalog as MCP lists it: names, titles, descriptions, schemas
    and annotations."""
    norm = Normaliser()
    g = Golden("mcp", "tools_list", norm)
    tools = mcp.request("tools/list")["result"]
    for t in tools["tools"]:
        g.add(t["name"], t)
    g.add("__result_keys__", sorted(tools))
    g.check()


def test_golden_mcp_tools(mcp, tmp_path):
    m = McpRec(mcp, tmp_path)
    names = [t["name"] for t in mcp.request("tools/list")["result"]["tools"]]

    # JSON-RPC errors of tools/call itself
    m.call("no_such_tool", "unknown_tool", {}, "rpc")

    # get_guide
    m.call("get_guide", "ok", {}, "ok")
    m.call("get_guide", "unknown_argument", {"topic": "x"}, "error")

    # run_command first: it creates the session's default sandbox
    m.call("run_command", "ok", {"cmd": "echo hello; echo oops >&2"}, "ok")
    m.call("run_command", "exit_nonzero", {"cmd": "exit 3"}, "ok")
    m.call("run_command", "no_output", {"cmd": "true"}, "ok")
    m.call("run_command", "cwd_env_stdin", {"cmd": "cat; echo $G; pwd", "cwd": "/tmp", "stdin": "in\n",
                                            "env": [{"name": "G", "value": "g"}]}, "ok")
    m.call("run_command", "timeout", {"cmd": "echo before; sleep 5", "timeout_s": 1}, "ok")
    m.call("run_command", "signal", {"cmd": "kill -SEGV $$"}, "ok")
    res = m.call("run_command", "yield_running", {"cmd": "echo started; sleep 30", "yield_after_s": 1}, "ok")
    yielded = res.get("structuredContent", {}).get("pid")
    m.call("run_command", "cmd_not_string", {"cmd": 5}, "error")
    m.call("run_command", "missing_cmd", {}, "error")
    m.call("run_command", "unknown_argument", {"cmd": "ls", "bogus": 1}, "error")
    m.call("run_command", "timeout_string", {"cmd": "ls", "timeout_s": "soon"}, "error")
    m.call("run_command", "timeout_too_large", {"cmd": "ls", "timeout_s": 86401}, "error")
    m.call("run_command", "env_bad_item", {"cmd": "ls", "env": [{"name": "A"}]}, "error")
    m.call("run_command", "cwd_relative", {"cmd": "ls", "cwd": "tmp"}, "error")
    m.call("run_command", "cwd_missing", {"cmd": "ls", "cwd": "/nonexistent/dir"}, "error")
    m.call("run_command", "unknown_sandbox", {"cmd": "true", "sandbox_id": NO_SANDBOX}, "error")
    m.call("run_command", "sandbox_id_not_string", {"cmd": "true", "sandbox_id": 5}, "error")

    # processes
    m.call("process_kill", "yielded", {"pid": yielded, "signal": "SIGKILL"}, "ok")
    res = m.call("process_start", "ok", {"cmd": "cat"}, "ok")
    pid = res.get("structuredContent", {}).get("pid")
    m.call("process_start", "missing_cmd", {}, "error")
    m.call("process_start", "cwd_missing", {"cmd": "true", "cwd": "/nonexistent/dir"}, "error")
    m.call("process_start", "unknown_argument", {"cmd": "true", "yield_after_s": 1}, "error")
    m.call("process_input", "ok", {"pid": pid, "data": "line one\n"}, "ok")
    m.call("process_input", "eof", {"pid": pid, "data": "line two\n", "eof": True}, "ok")
    m.call("process_input", "unknown_pid", {"pid": NO_PID, "data": "x"}, "error")
    m.call("process_input", "data_not_string", {"pid": pid, "data": 5}, "error")
    # MCP has no wait tool: wait through REST, so that the read sees the whole output
    sb = res["structuredContent"]["sandbox_id"]
    expect(mcp.srv.post(f"/v1/sandboxes/{sb}/processes/{pid}/wait", {"timeout_s": 10}), 200)
    m.call("process_read", "finished", {"pid": pid, "wait_s": 10}, "ok")
    m.call("process_read", "offset", {"pid": pid, "stdout_offset": 5}, "ok")
    m.call("process_read", "unknown_pid", {"pid": NO_PID}, "error")
    m.call("process_read", "missing_pid", {}, "error")
    m.call("process_read", "offset_negative", {"pid": pid, "stdout_offset": -1}, "error")
    m.call("process_input", "finished", {"pid": pid, "data": "late\n"}, "error")
    m.call("process_kill", "finished", {"pid": pid}, "error")
    m.call("process_kill", "unknown_pid", {"pid": NO_PID}, "error")
    m.call("process_kill", "bad_signal", {"pid": pid, "signal": "SIGFOO"}, "error")
    m.call("process_kill", "pid_string", {"pid": "1"}, "error")

    # files
    m.call("write_file", "ok", {"path": "/home/user/e.txt", "content": "alpha\nbeta\nalpha\ngamma\n"}, "ok")
    m.call("write_file", "mode", {"path": "run.sh", "content": "#!/bin/sh\necho run\n", "mode": "0755"}, "ok")
    m.call("write_file", "bad_mode", {"path": "/home/user/m", "content": "x", "mode": "999"}, "error")
    m.call("write_file", "read_only", {"path": "/usr/golden.txt", "content": "x"}, "error")
    m.call("write_file", "missing_content", {"path": "/home/user/m"}, "error")
    m.call("write_file", "onto_directory", {"path": "/home/user", "content": "x"}, "error")
    m.call("read_file", "ok", {"path": "/home/user/e.txt"}, "ok")
    m.call("read_file", "lines", {"path": "e.txt", "start_line": 2, "end_line": 3}, "ok")
    m.call("read_file", "missing", {"path": "/home/user/missing.txt"}, "error")
    m.call("read_file", "past_the_end", {"path": "/home/user/e.txt", "start_line": 9}, "error")
    m.call("read_file", "directory", {"path": "/home/user"}, "error")
    m.call("read_file", "start_line_zero", {"path": "/home/user/e.txt", "start_line": 0}, "error")
    m.call("read_file", "missing_path", {}, "error")
    m.call("edit_file", "view", {"command": "view", "path": "/home/user/e.txt"}, "ok")
    m.call("edit_file", "view_range", {"command": "view", "path": "/home/user/e.txt", "view_range": [2, -1]}, "ok")
    m.call("edit_file", "str_replace", {"command": "str_replace", "path": "/home/user/e.txt", "old_str": "beta\n",
                                        "new_str": "BETA\n"}, "ok")
    m.call("edit_file", "insert", {"command": "insert", "path": "e.txt", "insert_line": 0, "new_str": "top"}, "ok")
    m.call("edit_file", "undo_edit", {"command": "undo_edit", "path": "/home/user/e.txt"}, "ok")
    m.call("edit_file", "not_unique", {"command": "str_replace", "path": "/home/user/e.txt", "old_str": "alpha",
                                       "new_str": "x"}, "error")
    m.call("edit_file", "not_found_text", {"command": "str_replace", "path": "/home/user/e.txt", "old_str": "delta",
                                           "new_str": "x"}, "error")
    m.call("edit_file", "bad_command", {"command": "explode", "path": "/home/user/e.txt"}, "error")
    m.call("edit_file", "missing_file", {"command": "view", "path": "/home/user/none.txt"}, "error")
    m.call("edit_file", "insert_past_end", {"command": "insert", "path": "e.txt", "insert_line": 99,
                                            "new_str": "x"}, "error")
    m.call("edit_file", "undo_again", {"command": "undo_edit", "path": "/home/user/e.txt"}, "ok")
    m.call("edit_file", "no_history", {"command": "undo_edit", "path": "/home/user/e.txt"}, "error")
    m.call("run_command", "make_tree", {"cmd": "mkdir -p /home/user/t/sub && : > /home/user/t/a && "
                                               ": > /home/user/t/sub/b && touch -d @0 /home/user/t/a /home/user/t/sub/b "
                                               "/home/user/t/sub /home/user/t"}, "ok")
    m.call("edit_file", "view_directory", {"command": "view", "path": "/home/user/t"}, "ok")
    m.call("list_files", "ok", {"path": "/home/user/t"}, "ok", volatile={"mtime_ms", "mtime", "size"})
    m.call("list_files", "depth", {"path": "/home/user/t", "depth": 2}, "ok", volatile={"mtime_ms", "mtime", "size"})
    m.call("list_files", "not_found", {"path": "/home/user/none"}, "error")
    m.call("list_files", "bad_depth", {"path": "/home/user", "depth": 9}, "error")
    m.call("list_files", "a_file", {"path": "/home/user/e.txt"}, "error")

    # run_code
    m.call("run_code", "python", {"language": "python", "code": "x = 41\nprint('out')\nx + 1"}, "ok")
    m.call("run_code", "python_error", {"language": "python", "code": "1/0"}, "ok")
    m.call("run_code", "bash", {"language": "bash", "code": "cd /tmp; echo $((6*7))"}, "ok")
    m.call("run_code", "bash_keeps_cwd", {"language": "bash", "code": "pwd"}, "ok")
    m.call("run_code", "bad_language", {"language": "cobol", "code": "x"}, "error")
    m.call("run_code", "missing_code", {"language": "python"}, "error")
    m.call("run_code", "unknown_sandbox", {"language": "python", "code": "1", "sandbox_id": NO_SANDBOX}, "error")

    # published ports (the default sandbox listens on none)
    m.call("sandbox_ports", "ok", {}, "ok")
    m.call("sandbox_ports", "share_without_port", {"action": "share"}, "error")
    m.call("sandbox_ports", "bad_action", {"action": "open"}, "error")
    m.call("sandbox_ports", "unknown_sandbox", {"sandbox_id": NO_SANDBOX}, "error")

    # secrets: asked for (nobody answers within wait_s: pending), listed
    res = m.call("request_secret", "pending", {"name": "GOLDEN_TOKEN", "hosts": ["api.example.com"],
                                               "header": "Authorization: Bearer {value}", "reason": "the golden test",
                                               "wait_s": 0}, "ok", volatile={"expires_in_s"})
    approval = res.get("structuredContent", {}).get("approval_id")
    m.call("list_secrets", "ok", {}, "ok")
    expect(mcp.srv.post(f"/v1/approvals/{approval}", {"decision": "deny"}), 200)   # the human says no
    m.call("request_secret", "bad_name", {"name": "1-bad", "wait_s": 0}, "error")
    m.call("request_secret", "missing_name", {}, "error")
    m.call("request_secret", "unknown_sandbox", {"name": "X", "sandbox_id": NO_SANDBOX}, "error")
    m.call("list_secrets", "unknown_sandbox", {"sandbox_id": NO_SANDBOX}, "error")

    # sandboxes
    res = m.call("sandbox_create", "ok", {"timeout_s": 120, "limits": {"memory": 256 << 20, "cpus": 0.5,
                                                                        "pids": 64, "disk": None},
                                          "env": [{"name": "G", "value": "1"}]}, "ok", volatile={"state"})
    created = res.get("structuredContent", {}).get("id")
    m.call("run_command", "in_created", {"cmd": "echo $G", "sandbox_id": created}, "ok")
    m.call("sandbox_create", "bad_memory", {"limits": {"memory": 1, "cpus": None, "pids": None, "disk": None}},
           "error")
    m.call("sandbox_create", "timeout_string", {"timeout_s": "x"}, "error")
    m.call("sandbox_create", "unknown_argument", {"template": "ubuntu"}, "error")
    m.call("sandbox_list", "ok", {}, "ok", volatile={"state", "processes", "created_at_ms", "expires_in_ms"})
    m.call("sandbox_list", "unknown_argument", {"all": True}, "error")
    m.call("sandbox_network", "read", {"sandbox_id": created, "mode": None, "allow": None, "deny": None}, "ok",
           volatile={"stats"})
    m.call("sandbox_network", "allowlist", {"sandbox_id": created, "mode": "allowlist", "allow": ["example.com"],
                                            "deny": None}, "ok", volatile={"stats"})
    m.call("sandbox_network", "bad_mode", {"sandbox_id": created, "mode": "everything"}, "error")
    m.call("sandbox_network", "bad_rule", {"sandbox_id": created, "mode": "allowlist", "allow": ["10.0.0.0/99"]},
           "error")
    m.call("sandbox_snapshot", "ok", {"sandbox_id": created, "name": "golden-snap"}, "ok",
           volatile={"layers", "parent", "created_at_ms"})
    m.call("sandbox_snapshot", "bad_name", {"sandbox_id": created, "name": "../x"}, "error")
    m.call("template_build", "ok", {"name": "golden-built", "from": None, "apt": None, "run": ["echo hi > /etc/golden"],
                                    "env": [{"name": "GOLDEN", "value": "1"}], "files": None, "workdir": "/srv",
                                    "user": None, "start": None, "oci": None}, "ok", volatile={"layers", "created_at_ms", "build"})
    m.call("template_build", "failing_step", {"name": "golden-bad", "from": None, "apt": None, "run": ["exit 3"],
                                              "env": None, "files": None, "workdir": None, "user": None,
                                              "start": None, "oci": None}, "error")
    # A package the host has: apt needs no lists (this server's package source is fake).
    m.call("install", "ok", {"sandbox_id": created, "apt": ["dpkg"]}, "ok", volatile={"key", "bytes", "duration_ms", "copy"})
    m.call("install", "bad_name", {"sandbox_id": created, "apt": ["Bad Name"]}, "error")
    m.call("sandbox_fork", "ok", {"sandbox_id": created, "count": 1}, "ok", volatile={"sandboxes", "parent"})
    m.call("sandbox_fork", "too_many", {"sandbox_id": created, "count": 1000}, "error")
    m.call("sandbox_pause", "ok", {"sandbox_id": created}, "ok", volatile={"expires_in_ms", "created_at_ms"})
    m.call("run_command", "while_paused", {"cmd": "true", "sandbox_id": created}, "error")
    m.call("sandbox_pause", "unknown", {"sandbox_id": NO_SANDBOX}, "error")
    m.call("sandbox_resume", "ok", {"sandbox_id": created}, "ok",
           volatile={"expires_in_ms", "created_at_ms", "active"})
    m.call("sandbox_resume", "unknown", {"sandbox_id": NO_SANDBOX}, "error")
    m.call("sandbox_delete", "ok", {"sandbox_id": created}, "ok")
    m.call("sandbox_delete", "again", {"sandbox_id": created}, "error")
    m.call("sandbox_delete", "unknown", {"sandbox_id": NO_SANDBOX}, "error")
    m.call("sandbox_delete", "missing_id", {}, "error")

    missing = [n for n in names if m.called.get(n, set()) != {"ok", "error"}]
    assert not missing, f"tools without both a success and an error case: {missing}"
    m.g.check()
