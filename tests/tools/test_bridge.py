"""POST /v1/tools/{name}, the tool-call bridge, against the real server:
every framework's call shape, errors as is_error, omitted optional
arguments, the exported formats, and those formats checked against the
vendors' SDK types with tsc (tests/tools/tsc_check.sh)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile

import pytest

from server_fixture import server, server_factory  # noqa: F401

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/tools/..


def shapes(name: str, args: dict, cid: str) -> dict[str, dict]:
    """The same call as each framework hands it over."""
    s = json.dumps(args)
    return {
        "openai_chat": {"id": cid, "type": "function", "function": {"name": name, "arguments": s}},
        "openai_arguments": {"arguments": s},
        "responses": {"type": "function_call", "id": "fc_1", "call_id": cid, "name": name, "arguments": s},
        "anthropic": {"type": "tool_use", "id": cid, "name": name, "input": args},
        "mcp": {"arguments": args},
        "bare": args,
    }


def call(srv, name, body):
    r = srv.post(f"/v1/tools/{name}", body, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()


def check_messages(res, cid):
    assert res["openai_message"] == {"role": "tool", "tool_call_id": cid, "content": res["text"]}
    assert res["responses_item"] == {"type": "function_call_output", "call_id": cid, "output": res["text"]}
    blk = res["anthropic_block"]
    assert blk["type"] == "tool_result" and blk["tool_use_id"] == cid and blk["is_error"] == res["is_error"]
    assert [b["text"] for b in blk["content"]] == [b["text"] for b in res["content"]]


@pytest.mark.parametrize("shape", ["openai_chat", "openai_arguments", "responses", "anthropic", "mcp", "bare"])
def test_every_shape(server, shape):
    cid = f"call_{shape}"
    path = f"/home/user/{shape}.txt"
    res = call(server, "run_command", shapes("run_command", {"cmd": "echo hello-$((6*7))"}, cid)[shape])
    assert not res["is_error"], res
    assert res["structured"]["exit_code"] == 0 and res["structured"]["stdout"] == "hello-42\n"
    assert "hello-42" in res["text"] and res["content"][0]["type"] == "text"
    sbx = res["structured"]["sandbox_id"]
    if shape in ("openai_arguments", "mcp", "bare"):   # no id there: the bridge makes one
        check_messages(res, res["openai_message"]["tool_call_id"])
        assert res["openai_message"]["tool_call_id"].startswith("call_")
    else:
        check_messages(res, cid)

    res = call(server, "write_file", shapes("write_file", {"path": path, "content": "one\ntwo\n"}, cid)[shape])
    assert not res["is_error"] and res["structured"]["sandbox_id"] == sbx, res   # the same default sandbox
    res = call(server, "read_file", shapes("read_file", {"path": path}, cid)[shape])
    assert not res["is_error"], res
    assert res["structured"]["content"] == "one\ntwo\n" and res["structured"]["total_lines"] == 2
    assert "     1\tone" in res["text"]
    res = call(server, "list_files", shapes("list_files", {"path": "/home/user"}, cid)[shape])
    assert not res["is_error"], res
    assert path in [e["path"] for e in res["structured"]["entries"]]
    assert path in res["text"]


def test_optional_arguments_omitted_or_null(server):
    # Strict mode sends every property, optional ones as null; others omit them.
    full = {"sandbox_id": None, "cmd": "pwd", "cwd": None, "env": None, "timeout_s": None,
            "yield_after_s": None, "stdin": None}
    for args in (full, {"cmd": "pwd"}):
        for body in shapes("run_command", args, "c1").values():
            res = call(server, "run_command", body)
            assert not res["is_error"] and res["structured"]["stdout"] == "/home/user\n", res
    call(server, "write_file", {"path": "/home/user/r.txt", "content": "a\nb\nc\n"})
    res = call(server, "read_file", {"path": "/home/user/r.txt", "start_line": 2, "end_line": None})
    assert res["structured"]["content"] == "b\nc\n"
    res = call(server, "list_files", {})
    assert not res["is_error"] and res["structured"]["path"] == "/home/user"


def test_errors_are_is_error_with_message_and_hint(server):
    res = call(server, "run_command", {"sandbox_id": "nosuchsandbox", "cmd": "true"})
    assert res["is_error"] and res["structured"] is None
    assert res["error"]["code"] == "sandbox_not_found" and res["error"]["hint"]
    assert "Error:" in res["text"] and "Hint:" in res["text"] and res["error"]["hint"] in res["text"]
    assert res["anthropic_block"]["is_error"] is True

    res = call(server, "read_file", {"path": "/home/user/missing.txt"})
    assert res["is_error"] and res["error"]["code"] == "file_not_found", res
    assert "Hint:" in res["text"]

    res = call(server, "run_command", {"cmdd": "true"})
    assert res["is_error"] and "unknown argument `cmdd`" in res["error"]["message"]

    res = call(server, "run_command", {"type": "function_call", "call_id": "x", "name": "run_command",
                                       "arguments": "{not json"})
    assert res["is_error"] and res["error"]["code"] == "invalid_arguments"
    assert res["responses_item"]["call_id"] == "x"

    res = call(server, "run_command", {"cmd": "exit 3"})   # a failing command is a result, not an error
    assert not res["is_error"] and res["structured"]["exit_code"] == 3

    res = call(server, "edit_file", {"path": "/x", "command": "nope"})
    assert res["is_error"] and res["error"]["code"] == "invalid_arguments"

    r = server.post("/v1/tools/no_such_tool", {})
    assert r.status_code == 404 and r.json()["error"]["code"] == "tool_not_found"
    r = server.post("/v1/tools/run_command", {"type": "tool_use", "id": "t", "name": "list_files", "input": {}})
    assert r.status_code == 400 and "list_files" in r.json()["error"]["message"]
    r = server.request("POST", "/v1/tools/run_command", data="[1]")
    assert r.status_code == 400


def test_edit_file(server):
    path = "/home/user/edit.txt"
    call(server, "write_file", {"path": path, "content": "a\nb\na\n"})
    res = call(server, "edit_file", {"command": "view", "path": "edit.txt", "view_range": [2, -1]})
    assert not res["is_error"], res
    assert res["text"] == f"Here's the result of running `cat -n` on {path}:\n     2\tb\n     3\ta\n"
    assert res["structured"]["path"] == path and res["structured"]["output"] == res["text"]

    res = call(server, "edit_file", shapes("edit_file", {"command": "str_replace", "path": path, "old_str": "a",
                                                         "new_str": "x"}, "c9")["anthropic"])
    assert res["is_error"] and res["error"]["code"] == "not_unique", res
    assert "occurs 2 times" in res["text"] and "on lines 1, 3" in res["text"] and res["error"]["hint"]
    check_messages(res, "c9")

    res = call(server, "edit_file", {"command": "str_replace", "path": path, "old_str": "b\n", "new_str": "B\n"})
    assert not res["is_error"], res
    assert res["text"].startswith(f"Edited {path}. The change:\n--- {path}\n+++ {path}\n")
    assert "-b\n+B\n" in res["text"] and "undo_edit" in res["text"]
    res = call(server, "edit_file", {"command": "insert", "path": path, "insert_line": 0, "new_str": "top"})
    assert not res["is_error"], res
    assert call(server, "read_file", {"path": path})["structured"]["content"] == "top\na\nB\na\n"

    res = call(server, "edit_file", {"command": "undo_edit", "path": path})
    assert not res["is_error"] and res["text"].startswith(f"Undid the last edit of {path}."), res
    assert call(server, "read_file", {"path": path})["structured"]["content"] == "a\nB\na\n"
    res = call(server, "edit_file", {"command": "undo_edit", "path": path})
    assert not res["is_error"], res
    assert call(server, "read_file", {"path": path})["structured"]["content"] == "a\nb\na\n"
    res = call(server, "edit_file", {"command": "undo_edit", "path": path})
    assert res["is_error"] and res["error"]["code"] == "no_history", res

    res = call(server, "edit_file", {"command": "view", "path": "/home/user"})
    assert not res["is_error"] and path in res["text"], res
    res = call(server, "edit_file", {"command": "insert", "path": path})
    assert res["is_error"] and res["error"]["code"] == "invalid_arguments", res
    res = call(server, "edit_file", {"command": "view", "path": "/home/user/missing.txt"})
    assert res["is_error"] and res["error"]["code"] == "file_not_found", res


def test_run_code_guide_and_sandbox_tools(server):
    a = call(server, "run_code", {"language": "python", "code": "x = 41"})
    assert not a["is_error"], a
    b = call(server, "run_code", {"language": "python", "code": "x + 1"})
    assert "Out: 42" in b["text"], b   # one interpreter per sandbox and language
    bad = call(server, "run_code", {"language": "cobol", "code": "x"})
    assert bad["is_error"] and "language" in bad["error"]["message"]
    g = call(server, "get_guide", {})
    assert g["text"].startswith("#") and g["structured"]["guide"] == g["text"]
    made = call(server, "sandbox_create", {})
    sid = made["structured"]["id"]
    server.ids.add(sid)
    res = call(server, "run_command", {"sandbox_id": sid, "cmd": "true"})
    assert res["structured"]["sandbox_id"] == sid
    gone = call(server, "sandbox_delete", {"sandbox_id": sid})
    assert not gone["is_error"] and gone["structured"] == {"id": sid, "deleted": True}


def test_tokens_each_have_their_default(server_factory):
    srv = server_factory(tokens=["tok-a-0123456789abcdef", "tok-b-0123456789abcdef"], no_auth=False)
    a = srv.post("/v1/tools/run_command", {"cmd": "true"}, token="tok-a-0123456789abcdef").json()
    b = srv.post("/v1/tools/run_command", {"cmd": "true"}, token="tok-b-0123456789abcdef").json()
    assert a["structured"]["sandbox_id"] != b["structured"]["sandbox_id"]
    r = srv.post("/v1/tools/run_command", {"cmd": "true"}, token=None)
    assert r.status_code == 401


def test_formats(server):
    mcp = server.get("/v1/tools").json()["tools"]
    names = [t["name"] for t in mcp]
    resp = server.get("/v1/tools?format=openai-responses").json()["tools"]
    assert [t["name"] for t in resp] == names
    for t in resp:
        assert set(t) == {"type", "name", "description", "parameters", "strict"}
        assert t["type"] == "function" and t["strict"] is True
        assert set(t["parameters"]["required"]) == set(t["parameters"]["properties"])
    chat = server.get("/v1/tools?format=openai").json()["tools"]
    assert [t["function"]["name"] for t in chat] == names
    r = server.get("/v1/tools?format=nope")
    assert r.status_code == 400 and "openai-responses" in r.json()["error"]["hint"]


@pytest.mark.skipif(not shutil.which("npm"), reason="npm is needed for the SDK type check")
def test_formats_match_the_sdk_types(server):
    d = tempfile.mkdtemp(prefix="xb-tsc-")
    try:
        for f in ("openai", "openai-responses", "anthropic"):
            r = server.get(f"/v1/tools?format={f}")
            assert r.status_code == 200
            with open(os.path.join(d, f + ".json"), "w") as fp:
                fp.write(r.text)
        p = subprocess.run([os.path.join(ROOT, "tests/tools/tsc_check.sh"), d], capture_output=True, text=True,
                           timeout=600)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "error" not in p.stdout, p.stdout
    finally:
        shutil.rmtree(d)
