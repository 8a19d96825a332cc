"""clients/python/execbox_client.py against the real server: every group
of the REST API it covers (sandboxes, exec and its event stream, background
processes, files, code sessions) and its errors, through the client only."""
from __future__ import annotations

import io
import os
import socket
import tempfile
import time

import pytest

from execbox_client import Client, Event, ExecboxError, RunResult

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def xb(xbserver, token) -> Client:
    return Client(xbserver.url, token=token)


@pytest.fixture(scope="module")
def sbx(xb):
    with xb.create_sandbox() as s:
        yield s


def raises(code: str, status: int, fn, *a, **kw) -> ExecboxError:
    with pytest.raises(ExecboxError) as ei:
        fn(*a, **kw)
    e = ei.value
    assert (e.code, e.status) == (code, status), repr(e)
    assert e.message and e.hint, repr(e)
    return e


# ---- the server and errors ----

def test_server_documents(xb):
    assert xb.health() == {"status": "ok"}
    doc = xb.openapi()
    assert doc["openapi"].startswith("3.1") and "/v1/sandboxes" in doc["paths"]
    assert "sandbox" in xb.guide().lower()
    assert any(t["name"] == "run_command" for t in xb.tools()["tools"])


def test_env_defaults(xbserver, token, monkeypatch):
    monkeypatch.setenv("EXECBOX_URL", xbserver.url + "/")
    monkeypatch.setenv("EXECBOX_TOKEN", token)
    c = Client()
    assert c.base_url == xbserver.url and c.token == token
    assert isinstance(c.list_sandboxes(), list)


def test_bad_token_is_an_error_with_a_hint(xbserver):
    e = raises("unauthorized", 401, Client(xbserver.url, token="not-the-token-at-all").list_sandboxes)
    assert "Bearer" in e.hint
    raises("unauthorized", 401, Client(xbserver.url, token="").create_sandbox)


def test_unreachable_server(token):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ExecboxError) as ei:
        Client(f"http://127.0.0.1:{port}", token=token, timeout=5).health()
    assert ei.value.code == "unreachable" and ei.value.status == 0


# ---- sandboxes ----

def test_sandbox_lifecycle(xb):
    s = xb.create_sandbox(limits={"memory": 256 << 20, "pids": 64}, env={"GREETING": "hej"}, timeout_s=120,
                          metadata={"owner": "clients-test"})
    try:
        assert s.info["limits"]["memory"] == 256 << 20 and s.info["limits"]["pids"] == 64
        assert s.info["metadata"] == {"owner": "clients-test"} and s.info["timeout_s"] == 120
        assert s.exec("echo $GREETING")["stdout"] == "hej\n"
        assert s.id in [x["id"] for x in xb.list_sandboxes()]
        assert xb.get_sandbox(s.id).info["id"] == s.id
        assert s.keepalive(600)["timeout_s"] == 600
        assert s.refresh()["timeout_s"] == 600
    finally:
        s.delete()
    raises("sandbox_gone", 410, xb.get_sandbox, s.id)
    raises("sandbox_gone", 410, s.exec, "true")
    raises("sandbox_gone", 410, xb.delete_sandbox, s.id)


def test_sandbox_context_manager_deletes(xb):
    with xb.create_sandbox() as s:
        sid = s.id
        assert xb.sandbox(sid).exec("true")["status"] == "ok"
    assert sid not in [x["id"] for x in xb.list_sandboxes()]


def test_invalid_request_carries_the_server_words(xb):
    e = raises("invalid_request", 400, xb.create_sandbox, timeout_s=-5)
    assert "timeout_s" in e.message


# ---- exec ----

def test_exec_cmd_argv_stdin_cwd_env(sbx):
    r = sbx.exec("echo out; echo err >&2; exit 3")
    assert (r["status"], r["exit_code"], r["stdout"], r["stderr"]) == ("exit_nonzero", 3, "out\n", "err\n")
    assert sbx.exec(argv=["printf", "%s|", "a b", "c"])["stdout"] == "a b|c|"
    assert sbx.exec("tr a-z A-Z", stdin="shout")["stdout"] == "SHOUT"
    assert sbx.exec("pwd", cwd="/tmp")["stdout"] == "/tmp\n"
    assert sbx.exec("echo $X", env={"X": "42"})["stdout"] == "42\n"
    assert sbx.exec("id -u", user="root")["stdout"] == "0\n"
    with pytest.raises(TypeError):
        sbx.exec()
    with pytest.raises(TypeError):
        sbx.exec("ls", argv=["ls"])


def test_exec_timeout_and_yield(sbx):
    assert sbx.exec("sleep 5", timeout_s=0.5)["status"] == "timeout"
    r = sbx.exec("sleep 0.6; echo late", yield_after_s=0.1)
    assert r["status"] == "running" and r["hint"]
    done = sbx.process(r["pid"]).wait(10)
    assert (done["status"], done["stdout"]) == ("ok", "late\n")


def test_exec_errors(sbx):
    raises("bad_cwd", 400, sbx.exec, "pwd", cwd="/no/such/dir")


def test_exec_stream_events_arrive_while_it_runs(sbx):
    seen = []
    t0 = time.monotonic()
    for ev in sbx.exec_stream("echo first; sleep 1; echo second >&2; exit 4"):
        assert isinstance(ev, Event)
        seen.append((time.monotonic() - t0, ev))
    names = [ev.event for _, ev in seen]
    assert names[0] == "start" and names[-1] == "result"
    first = next(t for t, ev in seen if ev.event == "stdout")
    assert first < 0.8, f"stdout came only at {first:.2f}s: not streamed"
    assert [ev.data["data"] for _, ev in seen if ev.event == "stdout"] == ["first\n"]
    assert [ev.data["data"] for _, ev in seen if ev.event == "stderr"] == ["second\n"]
    result = seen[-1][1].data
    assert (result["status"], result["exit_code"]) == ("exit_nonzero", 4)


def test_exec_stream_argv_and_an_error_event(sbx):
    events = list(sbx.exec_stream(argv=["echo", "x"]))
    assert events[-1].data["stdout"] == "x\n"
    with pytest.raises(ExecboxError) as ei:
        list(sbx.exec_stream(argv=["/no/such/program"]))
    assert ei.value.code == "spawn_failed" and ei.value.status == 200


def test_exec_stream_can_stop_early(sbx):
    stream = sbx.exec_stream("for i in $(seq 100); do echo $i; sleep 0.05; done")
    for ev in stream:
        if ev.event == "stdout":
            break
    stream.close()
    assert sbx.exec("echo still fine")["stdout"] == "still fine\n"


# ---- background processes ----

def test_process_output_by_offsets(sbx):
    p = sbx.start_process("for i in 1 2 3; do echo line$i; sleep 0.2; done; echo oops >&2")
    assert p.pid > 0 and p.info["running"]
    assert p.pid in [x["pid"] for x in sbx.list_processes()]
    got = ""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        r = p.output(wait_s=1)
        got += r["stdout"]
        if not r["running"] and not r["stdout"]:
            break
    assert got == "line1\nline2\nline3\n"
    assert p.stdout_offset == len(got)
    again = p.output(stdout_offset=0, stderr_offset=0)
    assert (again["stdout"], again["stderr"]) == (got, "oops\n")
    assert p.output(stdout_offset=5)["stdout"] == got[5:]
    assert p.wait(5)["status"] == "ok"
    assert p.refresh()["running"] is False


def test_process_stdin_signal_delete(sbx):
    p = sbx.start_process(argv=["cat"], stdin="hello ")
    p.write("world")
    p.close_stdin()
    r = p.wait(5)
    assert (r["status"], r["stdout"]) == ("ok", "hello world")
    raises("stdin_closed", 409, p.write, "more")

    q = sbx.start_process("sleep 60")
    assert q.wait(0.2)["status"] == "running"
    assert q.signal("SIGTERM")["signal"] == 15
    r = q.wait(5)
    assert r["status"] == "killed" and r["signal"] == 15

    z = sbx.start_process("sleep 60")
    assert z.kill()["signal"] == 9
    z.wait(5)
    z.delete()
    raises("process_not_found", 404, z.refresh)
    raises("process_not_found", 404, sbx.process(99999).output)


# ---- files ----

def test_files_write_read(sbx):
    assert sbx.write_file("notes/a.txt", "héllo\n") == {"path": "/home/user/notes/a.txt", "size": 7, "written": 7}
    assert sbx.read_text("/home/user/notes/a.txt") == "héllo\n"
    blob = bytes(range(256)) * 64
    sbx.write_file("/tmp/blob.bin", blob)
    assert sbx.read_file("/tmp/blob.bin") == blob
    assert sbx.read_file("/tmp/blob.bin", offset=10, length=5) == blob[10:15]
    assert sbx.read_file("/tmp/blob.bin", offset=256 * 63) == blob[256 * 63:]
    assert sbx.write_file("notes/a.txt", "more\n", append=True)["size"] == 12
    assert sbx.exec("cat notes/a.txt")["stdout"] == "héllo\nmore\n"
    sbx.write_file("run.sh", "#!/bin/sh\necho ran\n", mode="0755")
    assert sbx.stat("run.sh")["mode"] == "0755"
    assert sbx.exec("./run.sh")["stdout"] == "ran\n"


def test_files_upload_from_file_objects(sbx):
    with tempfile.TemporaryFile() as f:
        f.write(os.urandom(300_000))
        f.seek(0)
        want = f.read()
        f.seek(0)
        assert sbx.write_file("up.bin", f)["size"] == len(want)
    assert sbx.read_file("up.bin") == want
    sbx.write_file("mem.bin", io.BytesIO(b"in memory"))
    assert sbx.read_file("mem.bin") == b"in memory"


def test_files_list_stat_mkdir_move_delete(sbx):
    assert sbx.mkdir("tree/a/b") == {"path": "/home/user/tree/a/b", "created": True}
    assert sbx.mkdir("tree/a/b")["created"] is False
    sbx.write_file("tree/a/b/c.txt", "c")
    sbx.write_file("tree/top.txt", "top")
    names = {e["name"]: e for e in sbx.list_files("tree")}
    assert names["a"]["type"] == "dir" and names["top.txt"]["size"] == 3
    deep = {e["path"] for e in sbx.list_files("tree", depth=3)}
    assert "/home/user/tree/a/b/c.txt" in deep
    st = sbx.stat("tree/top.txt")
    assert (st["type"], st["size"]) == ("file", 3)
    assert sbx.exists("tree/top.txt") and not sbx.exists("tree/nope")
    assert sbx.move("tree/top.txt", "tree/moved.txt") == {"from": "/home/user/tree/top.txt",
                                                          "to": "/home/user/tree/moved.txt"}
    sbx.write_file("tree/other.txt", "o")
    raises("already_exists", 409, sbx.move, "tree/other.txt", "tree/moved.txt")
    sbx.move("tree/other.txt", "tree/moved.txt", overwrite=True)
    assert sbx.read_text("tree/moved.txt") == "o"
    raises("directory_not_empty", 409, sbx.delete_file, "tree")
    assert sbx.delete_file("tree", recursive=True)["deleted"] >= 4
    assert not sbx.exists("tree")


def test_file_errors(sbx):
    raises("file_not_found", 404, sbx.read_file, "no/such/file")
    raises("file_not_found", 404, sbx.stat, "/home/user/missing")
    raises("missing_path", 400, sbx.read_file, "")
    raises("invalid_mode", 400, sbx.write_file, "x", "y", mode="999")


# ---- code sessions ----

@pytest.fixture(scope="module")
def py(sbx):
    return sbx.create_session("python")


def test_session_state_results_errors(py, sbx):
    assert py.info["language"] == "python"
    r = py.run("x = 6 * 7\nprint('printed')\nx")
    assert isinstance(r, RunResult)
    assert (r["status"], r.stdout, r.text, r.error) == ("ok", "printed\n", "42", None)
    r = py.run("import sys; print('warn', file=sys.stderr); 1/0")
    assert r["status"] == "error" and r.stderr == "warn\n"
    assert r.error["name"] == "ZeroDivisionError" and r.error["traceback"]
    assert py.variable("x") == {"name": "x", "type": "int", "repr": "42", "json": 42}
    raises("variable_not_found", 404, py.variable, "nope")
    assert py.id in [s["id"] for s in sbx.list_sessions()]
    assert py.refresh()["state"] == "idle"


def test_session_images(py, sbx):
    r = py.run("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('t')\nplt.show()")
    assert r["status"] == "ok", r
    imgs = r.images()
    assert len(imgs) == 1
    mime, png, url = imgs[0]
    assert mime == "image/png" and png.startswith(PNG_MAGIC) and len(png) > 1000
    assert url and sbx.image(url) == png
    assert sbx.image(url.rsplit("/", 1)[1]) == png
    raises("image_not_found", 404, sbx.image, "nope.png")


def test_session_stream(py):
    seen = [ev.event for ev in py.run_stream("print('a')\nimport matplotlib.pyplot as plt\n"
                                              "plt.plot([1]); plt.show()\n7")]
    assert seen[0] == "stream" and "display" in seen and "execute_result" in seen and seen[-1] == "result"
    evs = list(py.run_stream("raise ValueError('bad')"))
    assert evs[0].event == "error" and evs[0].data["name"] == "ValueError"
    assert evs[-1].data["status"] == "error"


def test_session_wait_interrupt_restart(py):
    r = py.run("import time\ntime.sleep(0.8)\nprint('woke')", yield_after_s=0.2)
    assert r["status"] == "running" and r["hint"]
    w = py.wait(10)
    assert (w["status"], w.stdout) == ("ok", "woke\n")

    r = py.run("import time\ntime.sleep(60)", yield_after_s=0.2)
    assert r["status"] == "running"
    assert py.interrupt()["id"] == py.id
    w = py.wait(10)
    assert w["status"] == "interrupted" and w.error["name"] == "KeyboardInterrupt"
    assert py.run("x").text == "42"

    py.restart()
    r = py.run("x")
    assert r["status"] == "error" and r.error["name"] == "NameError"


def test_session_timeout(sbx):
    s = sbx.create_session()
    r = s.run("import time\ntime.sleep(30)", timeout_s=0.5)
    assert r["status"] == "timeout"
    assert s.run("1+1").text == "2"
    s.delete()
    raises("session_not_found", 404, s.run, "1")


def test_bash_session_and_input(sbx):
    b = sbx.create_session("bash")
    r = b.run("cd /tmp && echo here; false")
    assert r.stdout == "here\n" and r.exit_code == 1 and r.get("cwd") == "/tmp"
    r = b.run("read -p 'name? ' n; echo hi $n", yield_after_s=0.3)
    assert r["status"] == "running"
    assert b.input("bob\n") == {"ok": True}
    assert "hi bob\n" in b.wait(10).stdout
    raises("no_input", 409, sbx.create_session("python").input, "x\n")


def test_javascript_session(sbx):
    j = sbx.create_session("javascript")
    assert j.run("let a = 20; a + 1").text == "21"
    assert j.run("console.log(a * 2)").stdout == "40\n"


def test_unknown_language(sbx):
    e = raises("unknown_language", 400, sbx.create_session, "cobol")
    assert "python" in e.hint
