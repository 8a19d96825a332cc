"""Code sessions through a real `execbox serve`, notebook-style: Python on
IPython (state, plots as PNG inline and by URL, DataFrames as html,
tracebacks, timeouts, interrupts, restarts), resource bombs that kill only
their own session, output and image caps, bash as a persistent shell, Node,
any Jupyter kernel by name, server-sent events, the warm pool's pre-started
Python session, and the seeds' plugin routes (dangermode's /api/run_cell,
/api/variable, /images; Pandora's /exec, /writeFile, /getGuide).

Every test starts its own server (server_fixture), which is stopped at
teardown with a check that nothing was left on the host."""
from __future__ import annotations

import base64
import json
import re
import struct
import threading
import time
import zlib

import pytest
import requests

import server_fixture as sf
import xbhost
from server_fixture import expect, expect_error, server, server_factory, sse_events  # noqa: F401

ANSI = re.compile(r"\x1b\[|\x1b\]|\x9b")
PNG_SIG = b"\x89PNG\r\n\x1a\n"
MIB = 1 << 20
CELL_OUTPUT_DEFAULT = 1 << 20       # sessions.h XB_CELL_OUTPUT_DEFAULT
IMAGES_PER_SANDBOX = 64             # sessions.h XB_IMAGES_PER_SANDBOX
IMAGES_PER_CELL = 32                # sessions.c CELL_IMAGES_MAX
SESSIONS_PER_SANDBOX = 16           # sessions.h XB_SESSIONS_PER_SANDBOX


# ---- helpers ----

def wait_until(pred, timeout: float, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(step)


def png_decode(data: bytes) -> tuple[int, int]:
    """Check a PNG completely enough to trust it: the signature, every
    chunk's CRC, IHDR first and IEND last, and IDAT that inflates to exactly
    height scanlines of the right width, each with a valid filter byte.
    Returns (width, height)."""
    assert data[:8] == PNG_SIG, f"not a PNG signature: {data[:16]!r}"
    pos, chunks = 8, []
    while pos < len(data):
        assert pos + 12 <= len(data), "a truncated PNG chunk"
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        crc, = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert len(body) == n and zlib.crc32(kind + body) == crc, f"bad CRC in chunk {kind!r}"
        chunks.append((kind, body))
        pos += 12 + n
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND", [c[0] for c in chunks]
    w, h, depth, color, comp, filt, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert w > 0 and h > 0 and comp == 0 and filt == 0 and interlace == 0, (w, h, comp, filt, interlace)
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color]
    stride = (w * channels * depth + 7) // 8
    raw = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))
    assert len(raw) == h * (1 + stride), f"IDAT inflates to {len(raw)} bytes, not {h} rows of {stride}"
    assert all(raw[i * (1 + stride)] <= 4 for i in range(h)), "a scanline with an invalid filter type"
    return w, h


def text_of(res: dict, name: str = "stdout") -> str:
    return "".join(o["text"] for o in res["outputs"] if o["type"] == "stream" and o["name"] == name)


def of_type(res: dict, t: str) -> list[dict]:
    return [o for o in res["outputs"] if o["type"] == t]


class Notebook:
    """One sandbox on a server, and its sessions."""

    def __init__(self, srv, **create):
        self.srv = srv
        self.sid = srv.create(**create)["id"]
        self.base = f"/v1/sandboxes/{self.sid}"

    def new(self, language: str | None = "python", status: int = 201) -> dict:
        body = {} if language is None else {"language": language}
        r = self.srv.post(f"{self.base}/sessions", body, timeout=90)
        expect(r, status)
        return r.json()

    def session(self, language: str = "python") -> str:
        s = self.new(language)
        assert re.fullmatch(r"[a-z0-9]{16}", s["id"]), s
        assert s["language"] == language and s["state"] in ("starting", "idle"), s
        return s["id"]

    def run_raw(self, ss: str, code: str, timeout: float = 120, **kw) -> requests.Response:
        return self.srv.post(f"{self.base}/sessions/{ss}/run", dict(code=code, **kw), timeout=timeout)

    def run(self, ss: str, code: str, status: str | None = "ok", **kw) -> dict:
        r = self.run_raw(ss, code, **kw)
        expect(r, 200)
        res = r.json()
        assert res["session_id"] == ss, res
        assert isinstance(res["execution_count"], int) and isinstance(res["duration_ms"], int), res
        if status is not None:
            assert res["status"] == status, f"{code!r}: expected status {status}: {json.dumps(res)[:3000]}"
        return res

    def value(self, ss: str, code: str) -> str:
        """The text/plain of the cell's result."""
        res = self.run(ss, code)
        results = of_type(res, "result")
        assert len(results) == 1, res
        return results[0]["data"]["text/plain"]

    def post(self, ss: str, what: str, body=None, status: int = 200) -> dict:
        r = self.srv.post(f"{self.base}/sessions/{ss}/{what}", body, timeout=60)
        expect(r, status)
        return r.json()

    def get(self, ss: str, what: str = "") -> requests.Response:
        return self.srv.get(f"{self.base}/sessions/{ss}{'/' + what if what else ''}")

    def info(self, ss: str) -> dict:
        r = self.get(ss)
        expect(r, 200)
        return r.json()

    def variable(self, ss: str, name: str) -> dict:
        r = self.get(ss, f"variables/{name}")
        expect(r, 200)
        v = r.json()
        assert set(v) == {"name", "type", "repr", "json"} and v["name"] == name, v
        return v

    def exec_ok(self, cmd: str, retry_s: float = 0) -> str:
        """A shell command in the sandbox that must succeed (retried while
        the sandbox cannot fork yet, e.g. just after a fork bomb)."""
        deadline = time.monotonic() + retry_s
        while True:
            r = self.srv.post(f"{self.base}/exec", {"cmd": cmd})
            if r.status_code == 200 and r.json()["status"] == "ok":
                return r.json()["stdout"]
            if time.monotonic() > deadline:
                raise AssertionError(f"`{cmd}` failed: {r.status_code} {r.text[:1000]}")
            time.sleep(0.2)


@pytest.fixture
def nb(server):
    return Notebook(server)


# ---- the session API ----

def test_session_create_list_get_delete(nb):
    s = nb.new(None)                      # no language: python
    assert s["language"] == "python" and set(s) >= {"id", "state", "execution_count", "pid"}, s
    b = nb.session("bash")
    listed = nb.srv.get(f"{nb.base}/sessions").json()["sessions"]
    assert sorted(x["id"] for x in listed) == sorted([s["id"], b]), listed
    assert nb.value(s["id"], "6*7") == "42"
    got = nb.info(s["id"])
    assert got["id"] == s["id"] and got["state"] == "idle" and got["execution_count"] == 1, got
    expect(nb.srv.delete(f"{nb.base}/sessions/{s['id']}"), 204)
    expect_error(nb.get(s["id"]), 404, "session_not_found")
    assert [x["id"] for x in nb.srv.get(f"{nb.base}/sessions").json()["sessions"]] == [b]
    # bad bodies get 400 with a hint
    expect_error(nb.srv.post(f"{nb.base}/sessions", {"language": "python", "bogus": 1}), 400)
    expect_error(nb.srv.post(f"{nb.base}/sessions/{b}/run", {}), 400)
    expect_error(nb.srv.post(f"{nb.base}/sessions/{b}/run", {"code": "echo", "timeout_s": -1}), 400)
    expect_error(nb.srv.post(f"{nb.base}/sessions/{b}/run", {"cmd": "echo"}), 400)


def test_sessions_per_sandbox_are_bounded(nb):
    ids = []
    for _ in range(SESSIONS_PER_SANDBOX):
        ids.append(nb.session("bash"))
        # one at a time (a burst of driver spawns can overrun the init's socket: see the report)
        assert wait_until(lambda: nb.info(ids[-1])["state"] == "idle", 30)
    err = expect_error(nb.srv.post(f"{nb.base}/sessions", {"language": "bash"}), 429, "too_many_sessions")
    assert "delete" in err["hint"]
    expect(nb.srv.delete(f"{nb.base}/sessions/{ids[0]}"), 204)
    nb.session("bash")


def test_unknown_language_is_a_400_with_a_hint(nb):
    err = expect_error(nb.srv.post(f"{nb.base}/sessions", {"language": "cobol"}, timeout=60), 400,
                       "unknown_language")
    assert "cobol" in err["message"] and "python3" in err["message"], err   # names the installed kernels
    assert "python" in err["hint"] and "bash" in err["hint"], err
    err = expect_error(nb.srv.post(f"{nb.base}/sessions", {"language": "no such;lang"}), 400)
    assert "python" in err["hint"], err
    expect_error(nb.srv.post(f"{nb.base}/sessions", {"language": 3}), 400)
    # nothing half-made is left behind
    assert nb.srv.get(f"{nb.base}/sessions").json()["sessions"] == []


def test_unknown_ids_and_names_are_404s_with_hints(nb):
    ss = nb.session()
    nb.run(ss, "known = 1")
    for method, what in (("GET", ""), ("DELETE", ""), ("POST", "/run"), ("POST", "/wait"), ("POST", "/interrupt"),
                         ("POST", "/restart"), ("POST", "/input"), ("GET", "/variables/known")):
        body = {"code": "1"} if what == "/run" else {"data": "x"} if what == "/input" else None
        r = nb.srv.request(method, f"{nb.base}/sessions/nosuchsession0000{what}", json_body=body)
        err = expect_error(r, 404, "session_not_found")
        assert "GET /v1/sandboxes/{id}/sessions" in err["hint"], err
    err = expect_error(nb.get(ss, "variables/unknown_name"), 404, "variable_not_found")
    assert "unknown_name" in err["message"] and err["hint"], err
    expect_error(nb.get(ss, "variables/1bad"), 400)
    expect_error(nb.srv.get("/v1/sandboxes/nosuchsandbox/sessions"), 404)
    expect_error(nb.srv.get(f"{nb.base}/images/nosuch.png"), 404, "image_not_found")


# ---- Python ----

def test_state_persists_across_cells(nb):
    ss = nb.session()
    first = nb.run(ss, "x = 41\ndef inc(v):\n    return v + 1\nimport math")
    assert first["outputs"] == [] and first["execution_count"] == 1, first
    res = nb.run(ss, "print('before')\ny = inc(x)\nprint('after')\ny")
    assert res["execution_count"] == 2
    # outputs in order: the prints, then the value of the last expression
    assert [o["type"] for o in res["outputs"]] == ["stream", "result"], res
    assert text_of(res) == "before\nafter\n"
    assert res["outputs"][1]["data"]["text/plain"] == "42" and res["outputs"][1]["execution_count"] == 2
    assert nb.value(ss, "math.floor(y / 4)") == "10"
    assert nb.run(ss, "z = 1;")["outputs"] == []               # a trailing ; hides the value
    assert nb.run(ss, "from IPython.display import display\ndisplay({'a': 1})\nNone")["outputs"][0]["type"] == \
        "display"
    assert nb.info(ss)["execution_count"] == 5


def test_plot_is_a_png_inline_and_at_its_url(nb):
    ss = nb.session()
    res = nb.run(ss, "import matplotlib.pyplot as plt\nfig = plt.figure(figsize=(4, 3), dpi=50)\n"
                     "plt.plot([1, 3, 2])\nprint('drawn')")
    displays = of_type(res, "display")
    assert len(displays) == 1 and text_of(res) == "drawn\n", res
    d = displays[0]
    assert d["data"]["text/plain"].startswith("<Figure"), d["data"]
    inline = base64.b64decode(d["data"]["image/png"], validate=True)
    w, h = png_decode(inline)
    assert w > 50 and h > 50, (w, h)
    assert re.fullmatch(rf"/v1/sandboxes/{nb.sid}/images/[A-Za-z0-9._-]+\.png", d["url"]), d["url"]
    r = nb.srv.get(d["url"])
    expect(r, 200)
    assert r.headers["Content-Type"].startswith("image/png")
    assert r.content == inline
    # plt.show() of two figures: two images; figures are closed after the cell
    res = nb.run(ss, "for k in (1, 2):\n    plt.figure(figsize=(2, 2), dpi=40)\n    plt.plot([0, k])\nplt.show()")
    urls = [o["url"] for o in of_type(res, "display")]
    assert len(urls) == 2 and len(set(urls)) == 2, res
    for u in urls:
        png_decode(nb.srv.get(u).content)
    assert of_type(nb.run(ss, "1"), "display") == []


def test_dataframe_comes_back_as_html_and_text(nb):
    ss = nb.session()
    res = nb.run(ss, "import pandas as pd\ndf = pd.DataFrame({'name': ['ada', 'bob'], 'score': [3.5, 4]})\ndf")
    data = of_type(res, "result")[0]["data"]
    assert "<table" in data["text/html"] and "<td>ada</td>" in data["text/html"], data
    assert "ada" in data["text/plain"] and "score" in data["text/plain"], data


def test_exception_returns_a_colourless_traceback(nb):
    ss = nb.session()
    nb.run(ss, "def inner(d):\n    return 10 / d\ndef outer():\n    return inner(0)")
    res = nb.run(ss, "print('partial')\nouter()", status="error")
    assert text_of(res) == "partial\n"
    errs = of_type(res, "error")
    assert len(errs) == 1, res
    e = errs[0]
    assert e["name"] == "ZeroDivisionError" and e["value"] == "division by zero", e
    tb = "\n".join(e["traceback"])
    assert "outer()" in tb and "return 10 / d" in tb and "ZeroDivisionError" in tb, tb
    assert not ANSI.search(json.dumps(res, ensure_ascii=False)), "ANSI escapes in the reply"
    # a syntax error too, and the session goes on
    e = of_type(nb.run(ss, "def broken(:", status="error"), "error")[0]
    assert e["name"] == "SyntaxError" and not ANSI.search("".join(e["traceback"])), e
    assert nb.value(ss, "inner(5)") == "2.0"


def test_endless_loop_times_out_with_partial_output_and_the_session_lives(nb):
    ss = nb.session()
    nb.run(ss, "kept = 'still here'")
    t0 = time.monotonic()
    res = nb.run(ss, "import time\nprint('started', flush=True)\nn = 0\nwhile True:\n    n += 1",
                 status="timeout", timeout_s=1.5)
    elapsed = time.monotonic() - t0
    assert 1.4 <= elapsed < 5, elapsed
    assert text_of(res) == "started\n", res
    assert "timeout_s" in res["hint"], res
    assert [e["name"] for e in of_type(res, "error")] == ["KeyboardInterrupt"], res
    assert nb.info(ss)["state"] == "idle"
    assert nb.value(ss, "kept") == "'still here'"
    assert int(nb.value(ss, "n")) > 0          # the loop ran, and its state survived


def test_interrupt_stops_a_running_cell_and_keeps_the_state(nb):
    ss = nb.session()
    nb.run(ss, "kept = [1, 2]")
    res = nb.run(ss, "import time\nprint('tick', flush=True)\ntime.sleep(100)\nprint('not reached')",
                 status="running", yield_after_s=0.5)
    assert text_of(res) == "tick\n" and "wait" in res["hint"] and "interrupt" in res["hint"], res
    assert nb.info(ss)["state"] == "busy"
    assert nb.post(ss, "interrupt")["state"] in ("busy", "idle")
    t0 = time.monotonic()
    end = nb.post(ss, "wait", {"timeout_s": 10})
    assert time.monotonic() - t0 < 5
    assert end["status"] == "interrupted", end
    assert [e["name"] for e in of_type(end, "error")] == ["KeyboardInterrupt"], end
    assert "not reached" not in text_of(end)
    # the end is reported once; then the session is idle
    assert nb.post(ss, "wait", {"timeout_s": 1}) == {"status": "idle", "execution_count": end["execution_count"],
                                                     "outputs": [], "session_id": ss}
    assert nb.value(ss, "kept") == "[1, 2]"


def test_wait_collects_output_of_a_yielded_cell_until_its_end(nb):
    ss = nb.session()
    res = nb.run(ss, "import time\nfor i in range(4):\n    print(i, flush=True)\n    time.sleep(0.4)\n'done'",
                 status="running", yield_after_s=0.3)
    seen, end = text_of(res), None
    for _ in range(20):
        r = nb.post(ss, "wait", {"timeout_s": 0.5})
        seen += text_of(r)
        if r["status"] != "running":
            end = r
            break
    assert end and end["status"] == "ok", end
    assert seen == "0\n1\n2\n3\n", seen
    assert of_type(end, "result")[0]["data"]["text/plain"] == "'done'"


def test_cells_sent_while_one_runs_queue_in_order(nb):
    ss = nb.session()
    results = {}

    def first():
        results["a"] = nb.run(ss, "import time\ntime.sleep(1)\norder = ['a']")

    t = threading.Thread(target=first)
    t.start()
    time.sleep(0.3)
    b = nb.run(ss, "order.append('b')\norder")
    t.join(30)
    assert results["a"]["status"] == "ok"
    assert of_type(b, "result")[0]["data"]["text/plain"] == "['a', 'b']", b


def test_restart_clears_the_state(nb):
    ss = nb.session()
    nb.run(ss, "secret = 7")
    assert nb.value(ss, "secret") == "7"
    s = nb.post(ss, "restart")
    assert s["id"] == ss and s["state"] in ("starting", "idle") and s["execution_count"] == 0, s
    res = nb.run(ss, "secret", status="error")
    assert of_type(res, "error")[0]["name"] == "NameError", res
    assert res["execution_count"] == 1
    assert nb.value(ss, "'fresh'") == "'fresh'"


def test_variables_return_repr_and_json(nb):
    ss = nb.session()
    nb.run(ss, "import numpy as np, pandas as pd\nn = 5\ns = 'hé'\nl = [1, 'a', None, 2.5]\nd = {'k': [1, 2]}\n"
               "arr = np.arange(3)\ndf = pd.DataFrame({'a': [1, 2]})\nf = lambda v: v\nbig = 2**70\n"
               "class C: pass\nc = C()\nc.attr = {'x': 1}")
    assert nb.variable(ss, "n") == {"name": "n", "type": "int", "repr": "5", "json": 5}
    assert nb.variable(ss, "s")["json"] == "hé"
    assert nb.variable(ss, "l")["json"] == [1, "a", None, 2.5]
    assert nb.variable(ss, "d") == {"name": "d", "type": "dict", "repr": "{'k': [1, 2]}", "json": {"k": [1, 2]}}
    v = nb.variable(ss, "arr")
    assert v["type"] == "numpy.ndarray" and v["json"] == [0, 1, 2] and "array" in v["repr"], v
    v = nb.variable(ss, "df")
    assert v["type"].endswith("DataFrame") and v["json"] == {"columns": ["a"], "index": [0, 1],
                                                              "data": [[1], [2]]}, v
    v = nb.variable(ss, "f")
    assert v["type"] == "function" and v["json"] is None and "lambda" in v["repr"], v
    assert nb.variable(ss, "big")["json"] is None           # past int64: not JSON
    assert nb.variable(ss, "c.attr")["json"] == {"x": 1}    # dotted names
    assert nb.variable(ss, "df.shape")["json"] == [2, 1]
    # while a cell runs: a clear 409
    nb.run(ss, "import time\ntime.sleep(30)", status="running", yield_after_s=0.3)
    expect_error(nb.get(ss, "variables/n"), 409, "session_busy")
    nb.post(ss, "interrupt")
    assert nb.post(ss, "wait", {"timeout_s": 10})["status"] == "interrupted"


def test_crash_and_exit_are_reported_dead_and_restart(nb):
    ss = nb.session()
    res = nb.run(ss, "import ctypes\nctypes.string_at(0)", status="dead")
    assert "restart" in res["hint"], res
    info = nb.info(ss)
    assert info["state"] == "dead" and "signal 11" in info["error"] and "restart" in info["hint"], info
    err = expect_error(nb.run_raw(ss, "1"), 409, "session_dead")
    assert "restart" in err["hint"]
    nb.post(ss, "restart")
    assert nb.value(ss, "1+1") == "2"
    res = nb.run(ss, "import os\nos._exit(3)", status="dead")
    assert "status 3" in nb.info(ss)["error"]
    # exit() does not end the session, sys.exit is an error
    nb.post(ss, "restart")
    assert "does not end" in text_of(nb.run(ss, "exit()"), "stderr")
    assert of_type(nb.run(ss, "import sys\nsys.exit(2)", status="error"), "error")[0]["name"] == "SystemExit"
    assert nb.value(ss, "'alive'") == "'alive'"


# ---- resource bombs ----

def test_memory_bomb_kills_only_its_session(server):
    nb = Notebook(server, limits={"memory": 256 * MIB})
    bomb, other = nb.session(), nb.session()
    nb.run(other, "survivor = 'yes'")
    nb.run(bomb, "before = 1")
    res = nb.run(bomb, "hog = []\nwhile True:\n    hog.append(b'x' * (16 << 20))", status="dead", timeout_s=60)
    assert "restart" in res["hint"], res
    info = nb.info(bomb)
    assert info["state"] == "dead" and "memory" in info["error"] and "restart" in info["hint"], info
    # the other session, an exec and the server are unaffected
    assert nb.value(other, "survivor") == "'yes'"
    assert nb.info(other)["state"] == "idle"
    assert nb.exec_ok("echo fine") == "fine\n"
    expect(server.get("/healthz"), 200)
    # the dead one says what to do, and restarts
    err = expect_error(nb.run_raw(bomb, "1"), 409, "session_dead")
    assert "restart" in err["hint"]
    expect_error(nb.get(bomb, "variables/before"), 409, "session_dead")
    nb.post(bomb, "restart")
    assert nb.value(bomb, "'back'") == "'back'"
    assert of_type(nb.run(bomb, "before", status="error"), "error")[0]["name"] == "NameError"


FORK_BOMB = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"


def test_fork_bomb_gets_a_clear_result_and_the_server_survives(server):
    nb = Notebook(server, limits={"pids": 128})
    bystander = Notebook(server)
    ss = nb.session()
    other = bystander.session()
    t0 = time.monotonic()
    res = nb.run(ss, FORK_BOMB, status=None, timeout_s=1)
    assert time.monotonic() - t0 < 30
    assert res["status"] in ("timeout", "dead"), res
    assert "timeout_s" in res["hint"] or "restart" in res["hint"], res
    if res["status"] == "dead":
        info = nb.info(ss)
        assert info["state"] == "dead" and info["error"] and "restart" in info["hint"], info
    expect(server.get("/healthz"), 200)
    assert bystander.exec_ok("echo unaffected") == "unaffected\n"
    assert bystander.value(other, "'unaffected'") == "'unaffected'"
    # deleting the bombed sandbox takes every process with it (the fixture checks the host)
    server.remove(nb.sid)
    expect_error(server.get(f"{nb.base}"), 410)     # its tombstone (issue 12)


def test_fork_bomb_leaves_the_sandbox_usable(server):
    """The timeout's SIGINT reaches the interpreter even inside os.fork()
    (where Python would drop it), and what the interpreter forked is killed
    soon after: the session keeps its state and the sandbox can fork again."""
    nb = Notebook(server, limits={"pids": 128})
    ss = nb.session()
    nb.run(ss, "kept = 41")
    res = nb.run(ss, FORK_BOMB, status=None, timeout_s=1)
    assert res["status"] == "timeout", res
    assert nb.info(ss)["state"] == "idle"
    assert nb.exec_ok("echo recovered", retry_s=10) == "recovered\n"
    # no copy of the bomb is left in the sandbox, not even a zombie
    ps = nb.exec_ok("ps -e --no-headers -o pid,stat,args")
    assert len(ps.splitlines()) < 5, ps
    assert nb.value(ss, "kept + 1") == "42"


def test_ten_megabytes_of_print_are_capped_and_the_server_survives(nb):
    ss = nb.session()
    t0 = time.monotonic()
    res = nb.run(ss, "print('x' * (10 << 20))")
    assert time.monotonic() - t0 < 30
    out = text_of(res)
    assert out == "x" * CELL_OUTPUT_DEFAULT, len(out)
    total = (10 << 20) + 1
    assert res["output_dropped_bytes"] == total - CELL_OUTPUT_DEFAULT, res.get("output_dropped_bytes")
    note = text_of(res, "stderr")
    assert f"{total - CELL_OUTPUT_DEFAULT} bytes" in note and "limit" in note, note
    expect(nb.srv.get("/healthz"), 200)
    assert nb.value(ss, "'ok'") == "'ok'"


def test_output_limit_keeps_the_head_of_every_stream(nb):
    ss = nb.session()
    res = nb.run(ss, "import sys\nfor i in range(3000):\n    print(i)\nprint('E' * 5000, file=sys.stderr)\n'v'",
                 output_limit=2048)
    out = text_of(res)
    expected = "".join(f"{i}\n" for i in range(3000))
    assert out == expected[:2048], out[:100]
    total = len(expected) + 5001
    assert res["output_dropped_bytes"] == total - 2048, res.get("output_dropped_bytes")
    assert "E" not in text_of(res, "stderr") and "dropped" in text_of(res, "stderr")
    assert of_type(res, "result")[0]["data"]["text/plain"] == "'v'"   # the value is not output
    # whole characters only
    res = nb.run(ss, "print('é' * 2000)", output_limit=1025)
    assert text_of(res) == "é" * 512, len(text_of(res))
    # the limit is per cell
    assert text_of(nb.run(ss, "print('y' * 3000)")) == "y" * 3000 + "\n"


def test_images_are_bounded_per_cell_and_per_sandbox(nb):
    ss = nb.session()
    nb.run(ss, "import matplotlib.pyplot as plt\ndef figs(n):\n    for k in range(n):\n"
               "        plt.figure(figsize=(1, 1), dpi=20)\n        plt.plot([0, k])")
    cells = []
    for n in (40, 40, 11):
        res = nb.run(ss, f"figs({n})")
        ds = of_type(res, "display")
        assert len(ds) == n, res
        with_png = [d for d in ds if "image/png" in d["data"]]
        # at most 32 images a cell; the rest keep their text
        assert len(with_png) == min(n, IMAGES_PER_CELL), len(with_png)
        assert all("url" in d for d in with_png) and not any("url" in d for d in ds if d not in with_png)
        assert all(d["data"]["text/plain"].startswith("<Figure") for d in ds)
        cells.append([d["url"] for d in with_png])
    urls = [u for c in cells for u in c]
    assert len(urls) == 75 and len(set(urls)) == 75
    evicted, kept = urls[:75 - IMAGES_PER_SANDBOX], urls[75 - IMAGES_PER_SANDBOX:]
    for u in evicted:
        err = expect_error(nb.srv.get(u), 404, "image_not_found")
        assert "64" in err["hint"], err
    for u in kept:
        r = nb.srv.get(u)
        expect(r, 200)
        png_decode(r.content)


# ---- bash ----

def test_bash_keeps_cwd_env_and_functions(nb):
    sh = nb.session("bash")
    res = nb.run(sh, "mkdir -p /tmp/work/sub && cd /tmp/work\nexport GREETING=hello\n"
                     "greet() { echo \"$GREETING $1\"; }")
    assert res["exit_code"] == 0 and res["cwd"] == "/tmp/work", res
    res = nb.run(sh, "pwd; greet world; cd sub")
    assert text_of(res) == "/tmp/work\nhello world\n" and res["cwd"] == "/tmp/work/sub" and res["exit_code"] == 0
    res = nb.run(sh, "echo $GREETING; false", status="error")
    assert text_of(res) == "hello\n" and res["exit_code"] == 1 and res["cwd"] == "/tmp/work/sub", res
    res = nb.run(sh, "(exit 3)", status="error")
    assert res["exit_code"] == 3, res
    res = nb.run(sh, "echo to-stderr >&2; ls /nonexistent", status="error")
    assert "to-stderr" in text_of(res) and "nonexistent" in text_of(res) and res["exit_code"] == 2, res
    assert nb.variable(sh, "GREETING") == {"name": "GREETING", "type": "string",
                                            "repr": 'declare -x GREETING="hello"', "json": "hello"}
    assert nb.variable(sh, "greet")["type"] == "function"
    assert nb.info(sh)["execution_count"] == 5


def test_bash_soft_timeout_busy_input_and_interrupt(nb):
    sh = nb.session("bash")
    nb.run(sh, "cd /tmp")
    res = nb.run(sh, "echo 'name?'; read who; echo \"hi $who\"", status="running", yield_after_s=0.5)
    assert text_of(res) == "name?\n" and "wait" in res["hint"], res
    # a new command while one runs: a clear 409 that says what to do
    err = expect_error(nb.run_raw(sh, "echo second"), 409, "session_busy")
    assert "wait" in err["hint"] and "input" in err["hint"] and "interrupt" in err["hint"], err
    assert nb.post(sh, "input", {"data": "ada\n"}) == {"ok": True}
    end = nb.post(sh, "wait", {"timeout_s": 10})
    assert end["status"] == "ok" and text_of(end) == "hi ada\n" and end["exit_code"] == 0, end
    assert end["cwd"] == "/tmp"
    # Ctrl-C to a command that would run for 100 s
    res = nb.run(sh, "echo sleeping; sleep 100; echo not-reached", status="running", yield_after_s=0.5)
    t0 = time.monotonic()
    nb.post(sh, "interrupt")
    end = nb.post(sh, "wait", {"timeout_s": 10})
    assert time.monotonic() - t0 < 5
    assert end["status"] == "interrupted" and end["exit_code"] == 130, end
    assert "not-reached" not in text_of(end)
    res = nb.run(sh, "echo after; echo $who; pwd")
    assert text_of(res) == "after\nada\n/tmp\n", res
    # input only goes to a running bash command
    py = nb.session()
    expect_error(nb.srv.post(f"{nb.base}/sessions/{py}/input", {"data": "x"}), 409, "no_input")


def test_bash_timeout_interrupts_and_keeps_the_shell(nb):
    sh = nb.session("bash")
    nb.run(sh, "X=kept")
    res = nb.run(sh, "echo start; while :; do :; done", status="timeout", timeout_s=1)
    assert text_of(res).startswith("start\n") and res["exit_code"] == 130, res
    assert text_of(nb.run(sh, "echo $X")) == "kept\n"


def test_bash_interrupt_works_when_the_server_was_started_with_sigint_ignored(execbox, tmp_path):
    wrapper = tmp_path / "serve-ignoring-sigint"
    wrapper.write_text(f"#!/bin/sh\ntrap '' INT QUIT\nexec {execbox} \"$@\"\n")
    wrapper.chmod(0o755)
    srv = sf.start_server(str(wrapper), str(tmp_path), pool=0)
    try:
        nb = Notebook(srv)
        sh = nb.session("bash")
        nb.run(sh, "sleep 100", status="running", yield_after_s=0.5)
        nb.post(sh, "interrupt")
        end = nb.post(sh, "wait", {"timeout_s": 3})
        if end["status"] == "running":      # leave nothing behind for the fixture's checks
            nb.srv.remove(nb.sid)
        assert end["status"] == "interrupted" and end["exit_code"] == 130, end
    finally:
        problems = sf.finish_server(srv)
        assert not problems, problems


# ---- javascript ----

def test_javascript_keeps_variables_and_reports_errors(nb):
    js = nb.session("javascript")
    assert nb.value(js, "let count = 41; const name = 'node'; count + 1") == "42"
    res = nb.run(js, "count += 1; console.log('count is', count); function twice(v) { return 2 * v }")
    assert text_of(res) == "count is 42\n", res
    assert nb.value(js, "twice(count)") == "84"
    res = nb.run(js, "console.log('first'); null.prop", status="error")
    assert text_of(res) == "first\n"
    e = of_type(res, "error")[0]
    assert e["name"] == "TypeError" and "null" in e["value"], e
    assert any("null.prop" in line for line in e["traceback"]), e
    assert not ANSI.search(json.dumps(res))
    e = of_type(nb.run(js, "throw new RangeError('too far')", status="error"), "error")[0]
    assert (e["name"], e["value"]) == ("RangeError", "too far")
    assert nb.variable(js, "count") == {"name": "count", "type": "number", "repr": "42", "json": 42}
    assert nb.value(js, "name") == "'node'"
    res = nb.run(js, "while (true) {}", status="timeout", timeout_s=1)
    assert nb.value(js, "count") == "42"


# ---- any Jupyter kernel by name ----

def test_installed_jupyter_kernel_by_name(nb):
    t0 = time.monotonic()
    s = nb.new("python3")
    # the create waits for the kernel: it is ready when it answers
    assert s["language"] == "python3" and s["state"] == "idle", s
    assert time.monotonic() - t0 < 60
    k = s["id"]
    res = nb.run(k, "import sys\nv = 20\nprint(sys.version_info[0])\nv + 1")
    assert text_of(res) == "3\n" and of_type(res, "result")[0]["data"]["text/plain"] == "21", res
    assert nb.value(k, "v * 2") == "40"
    res = nb.run(k, "1/0", status="error")
    e = of_type(res, "error")[0]
    assert e["name"] == "ZeroDivisionError" and not ANSI.search("".join(e["traceback"])), e
    res = nb.run(k, "from IPython.display import HTML, display\ndisplay(HTML('<b>hi</b>'))")
    assert of_type(res, "display")[0]["data"]["text/html"] == "<b>hi</b>", res
    assert nb.variable(k, "v")["json"] == 20
    res = nb.run(k, "import time\ntime.sleep(50)", status="timeout", timeout_s=1)
    assert nb.value(k, "v") == "20"
    nb.post(k, "restart")
    assert of_type(nb.run(k, "v", status="error"), "error")[0]["name"] == "NameError"


def test_r_kernel_works_through_the_same_api(nb):
    """A kernel that is not Python (IRkernel, Debian's r-cran-irkernel) by its
    name: state, values, errors, plots as PNG at their URL, data frames as
    HTML, timeouts that keep the session."""
    s = nb.new("ir")
    assert s["language"] == "ir" and s["state"] == "idle", s
    k = s["id"]
    res = nb.run(k, "x <- 20\ncat('R', R.version$major, '\\n')\nx + 1")
    assert text_of(res) == "R 4 \n", res
    # IRkernel sends a value as display_data, not execute_result
    assert [o["data"]["text/plain"] for o in res["outputs"] if o["type"] in ("display", "result")] == ["[1] 21"], res
    res = nb.run(k, "stop('boom')", status="error")
    e = of_type(res, "error")[0]
    assert "boom" in e["value"] and not ANSI.search("".join(e["traceback"])), e
    d = of_type(nb.run(k, "plot(1:10)"), "display")[0]
    w, h = png_decode(base64.b64decode(d["data"]["image/png"], validate=True))
    assert w > 50 and h > 50
    assert png_decode(nb.srv.get(d["url"]).content) == (w, h)
    res = nb.run(k, "data.frame(a = 1:2, b = c('p', 'q'))")
    assert "<table" in of_type(res, "display")[0]["data"]["text/html"], res
    nb.run(k, "Sys.sleep(60)", status="timeout", timeout_s=1)
    assert "[1] 40" in json.dumps(nb.run(k, "x * 2")["outputs"])
    r = nb.get(k, "variables/x")
    expect_error(r, 400, "variables_unsupported")


# ---- server-sent events ----

def test_cell_streams_as_server_sent_events(nb):
    ss = nb.session()
    nb.run(ss, "import time")
    t0 = time.monotonic()
    r = nb.srv.http.post(nb.srv.url + f"{nb.base}/sessions/{ss}/run", stream=True, timeout=60,
                         data=json.dumps({"code": "for i in range(3):\n    print(i, flush=True)\n"
                                                  "    time.sleep(0.4)\n'end'"}),
                         headers={"Accept": "text/event-stream", "Content-Type": "application/json"})
    expect(r, 200)
    assert r.headers["Content-Type"].startswith("text/event-stream")
    events = sse_events(r, t0)
    names = [e[1] for e in events]
    assert names[-1] == "result" and names.count("result") == 1, names   # only the last is named result
    assert names[:-1] == ["stream", "stream", "stream", "execute_result"], names
    assert [e[2]["text"] for e in events[:3]] == ["0\n", "1\n", "2\n"]
    # each arrived as it was printed, well before the end
    assert events[0][0] < events[-1][0] - 0.6, [round(e[0], 2) for e in events]
    assert events[3][2]["data"]["text/plain"] == "'end'"
    final = events[-1][2]
    assert final["status"] == "ok" and final["session_id"] == ss and "outputs" not in final, final
    # errors stream too
    r = nb.srv.http.post(nb.srv.url + f"{nb.base}/sessions/{ss}/run", stream=True, timeout=60,
                         data=json.dumps({"code": "1/0"}),
                         headers={"Accept": "text/event-stream", "Content-Type": "application/json"})
    events = sse_events(r, time.monotonic())
    assert [e[1] for e in events] == ["error", "result"] and events[-1][2]["status"] == "error", events


# ---- the warm pool ----

def _warm_drivers(server_pid: int) -> dict[int, int]:
    """Host pid -> CPU ticks of this server's sandboxed Python session drivers."""
    table = xbhost.proc_table()
    out = {}
    for p in xbhost.sandbox_procs(table).values():
        if server_pid not in xbhost.ancestors(table, p.pid):
            continue
        try:
            with open(f"/proc/{p.pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{p.pid}/stat") as f:
                st = f.read()
        except OSError:
            continue
        if len(argv) >= 5 and argv[0] == b"/usr/bin/python3" and argv[-2] == b"python" and \
                b"session driver" in argv[3]:
            fields = st[st.rfind(")") + 2:].split()
            out[p.pid] = int(fields[11]) + int(fields[12])
    return out


def wait_warm_idle(srv, timeout: float = 60) -> None:
    """Until the server's pre-started session exists, has done its imports
    (some CPU spent) and has stopped using CPU for a second."""
    deadline = time.monotonic() + timeout
    samples = []
    while time.monotonic() < deadline:
        samples = (samples + [_warm_drivers(srv.pid)])[-3:]
        if len(samples) == 3 and samples[0] and samples[0] == samples[1] == samples[2] and \
                all(t >= 20 for t in samples[0].values()):
            return
        time.sleep(0.5)
    raise AssertionError(f"the pool's Python session never settled: {samples}")


def test_pool_hands_out_a_warm_python_session(server_factory):
    srv = server_factory("--pool-python", pool=1)
    assert wait_until(lambda: srv.readyz()["pool_ready"] == 1, 10), srv.readyz()
    wait_warm_idle(srv)
    hits0 = srv.metrics()['execbox_pool_claims_total{result="hit"}']
    nb = Notebook(srv)
    assert srv.metrics()['execbox_pool_claims_total{result="hit"}'] == hits0 + 1
    assert srv.get(f"{nb.base}/sessions").json()["sessions"] == []     # hidden until claimed
    s = nb.new("python")
    assert s["state"] == "idle" and s["execution_count"] == 0, s    # started before we asked
    res = nb.run(s["id"], "import sys\n('np' in dir(), 'pd' in dir(), 'plt' in dir(), "
                          "all(m in sys.modules for m in ('numpy', 'pandas', 'matplotlib')))")
    assert of_type(res, "result")[0]["data"]["text/plain"] == "(True, True, True, True)", res
    assert res["duration_ms"] < 200 and res["execution_count"] == 1, res
    # preloading is not a cell, and the namespace is otherwise a fresh one
    assert nb.value(s["id"], "np.arange(3).sum()") == "3"
    # only one is warm: a second session in that sandbox starts cold
    cold = nb.session()
    assert nb.value(cold, "'np' in dir()") == "False"
    # the claimed session is listed now
    listed = {x["id"] for x in srv.get(f"{nb.base}/sessions").json()["sessions"]}
    assert listed == {s["id"], cold}
    # a sandbox with its own environment does not get a session started without it
    srv.remove(nb.sid)
    assert wait_until(lambda: srv.readyz()["pool_ready"] == 1, 10)
    wait_warm_idle(srv)
    nb2 = Notebook(srv, env={"XB_MARK": "env-seen"})
    assert srv.metrics()['execbox_pool_claims_total{result="hit"}'] == hits0 + 2
    ss = nb2.session()
    assert nb2.value(ss, "import os\nos.environ.get('XB_MARK')") == "'env-seen'"
    assert [x["id"] for x in srv.get(f"{nb2.base}/sessions").json()["sessions"]] == [ss]


# ---- dangermode's routes ----

def test_dangermode_run_cell_variable_and_images(server):
    r = server.post("/api/run_cell", {"code": "import sys, matplotlib.pyplot as plt\nprint('out')\n"
                                              "print('err', file=sys.stderr)\nplt.figure(figsize=(2, 2), dpi=40)\n"
                                              "plt.plot([1, 2])\nanswer = 42\nanswer"})
    expect(r, 200)
    d = r.json()
    assert set(d) == {"success", "execute_result", "displays", "stdout", "stderr", "error"}, d
    assert d["success"] is True and d["error"] is None
    assert d["stdout"] == "out\n" and d["stderr"] == "err\n"
    assert d["execute_result"] == {"text/plain": "42"}
    assert len(d["displays"]) == 1
    url = d["displays"][0]["image/png"]
    assert re.fullmatch(r"/images/[A-Za-z0-9._-]+\.png", url), url   # a URL, not base64
    img = server.get(url)
    expect(img, 200)
    assert img.headers["Content-Type"].startswith("image/png")
    png_decode(img.content)
    # the same default session: state carries over
    d = server.post("/api/run_cell", {"code": "answer + 1"}).json()
    assert d["success"] is True and d["execute_result"] == {"text/plain": "43"}, d
    v = server.get("/api/variable/answer")
    expect(v, 200)
    assert v.json() == {"name": "answer", "type": "int", "repr": "42", "json": 42}
    expect_error(server.get("/api/variable/nothing_here"), 404, "variable_not_found")
    expect_error(server.get("/images/nosuch.png"), 404, "image_not_found")
    # an exception
    d = server.post("/api/run_cell", {"code": "print('so far')\n{}['missing']"}).json()
    assert d["success"] is False and d["stdout"] == "so far\n" and d["execute_result"] is None, d
    assert d["error"]["ename"] == "KeyError" and d["error"]["evalue"] == "'missing'", d
    assert any("missing" in t for t in d["error"]["traceback"]) and not ANSI.search(json.dumps(d))
    expect_error(server.post("/api/run_cell", {}), 400)
    expect_error(server.post("/api/run_cell", {"code": "1", "extra": True}), 400)


# ---- Pandora's routes ----

EXEC_KEYS = {"status", "exit_code", "stdout", "stderr", "duration_ms", "sandbox_id"}


def test_pandora_exec_with_require_guide(server_factory):
    srv = server_factory("--require-guide", pool=0)
    for body in ({"command": "echo hi"}, {"command": "echo hi", "guideFollowed": False}):
        err = expect_error(srv.post("/exec", body), 400, "guide_not_followed")
        assert "/getGuide" in err["hint"] and "guideFollowed" in err["hint"], err
    r = srv.post("/exec", {"command": "echo hi; echo oops >&2; pwd", "guideFollowed": True})
    expect(r, 200)
    d = r.json()
    assert set(d) == EXEC_KEYS, d
    assert (d["status"], d["exit_code"], d["stdout"], d["stderr"]) == ("ok", 0, "hi\n/home/user\n", "oops\n"), d
    # the workspace persists between calls: one default sandbox
    srv.post("/exec", {"command": "echo kept > note.txt", "guideFollowed": True})
    d2 = srv.post("/exec", {"command": "cat note.txt", "guideFollowed": True}).json()
    assert d2["stdout"] == "kept\n" and d2["sandbox_id"] == d["sandbox_id"], d2
    # a failure carries a hint pointing to the guide
    d = srv.post("/exec", {"command": "ls /nonexistent", "guideFollowed": True}).json()
    assert set(d) == EXEC_KEYS | {"hint"} and d["status"] != "ok" and d["exit_code"] == 2, d
    assert "/getGuide" in d["hint"] and "nonexistent" in d["stderr"], d
    expect_error(srv.post("/exec", {"guideFollowed": True}), 400)


def test_pandora_exec_without_require_guide(server):
    d = server.post("/exec", {"command": "echo plain"}).json()
    assert d["status"] == "ok" and d["stdout"] == "plain\n" and "hint" not in d, d


def test_pandora_write_file(server):
    def write(status=200, **body):
        r = server.post("/writeFile", body)
        expect(r, status)
        return r.json()

    def sh(cmd):
        d = server.post("/exec", {"command": cmd, "guideFollowed": True}).json()
        assert d["status"] == "ok", d
        return d["stdout"]

    d = write(filePath="notes.txt", content="first")
    assert d["success"] is True and d["filePath"] == "notes.txt" and d["size"] == 6 and d["sandbox_id"], d
    assert sh("cat /home/user/notes.txt | od -An -c | tr -s ' '") == " f i r s t \\n\n"   # newline added
    err = expect_error(server.post("/writeFile", {"filePath": "notes.txt", "content": "second"}), 409, "file_exists")
    assert "force" in err["hint"], err
    assert sh("cat notes.txt") == "first\n"                     # untouched
    write(filePath="notes.txt", content="second", force=True, appendNewlineAtEOF=False)
    assert sh("cat notes.txt") == "second"
    write(filePath="/home/user/bin/tool.sh", content="#!/bin/sh\necho tool-ran", permissions="755")
    assert sh("stat -c %a bin/tool.sh; bin/tool.sh") == "755\ntool-ran\n"
    write(filePath="/tmp/private", content="x", permissions="600")
    assert sh("stat -c %a /tmp/private") == "600\n"
    write(filePath="ends.txt", content="line\n")               # already ends with a newline
    assert sh("wc -c < ends.txt") == "5\n"
    expect_error(server.post("/writeFile", {"filePath": "a", "content": "x", "permissions": "rwx"}), 400)
    expect_error(server.post("/writeFile", {"content": "x"}), 400)
    err = expect_error(server.post("/writeFile", {"filePath": "/etc/passwd", "content": "x", "force": True}), 403)
    assert "/getGuide" in err["hint"], err


def test_pandora_get_guide(server_factory):
    srv = server_factory(tokens=["tok-guide-0123456789abcdef"], pool=0)
    r = srv.get("/getGuide", token=None)                         # public: no token needed
    expect(r, 200)
    assert r.headers["Content-Type"].startswith("text/markdown")
    assert r.text.startswith("# ") and "sandbox" in r.text.lower() and len(r.text) > 500
    j = srv.get("/getGuide", token=None, headers={"Accept": "application/json"})
    expect(j, 200)
    assert j.json() == {"guide": r.text}
    # the routes that act need the token
    expect_error(srv.post("/exec", {"command": "true"}, token=None), 401)
    expect_error(srv.post("/api/run_cell", {"code": "1"}, token=None), 401)
    assert srv.post("/exec", {"command": "echo authed"}).json()["stdout"] == "authed\n"


# ---- the sandbox goes while a cell runs ----

def test_deleting_the_sandbox_ends_its_running_cells(server):
    nb = Notebook(server)
    ss, sh = nb.session(), nb.session("bash")
    replies = {}

    def run(name, sid, code):
        replies[name] = nb.run_raw(sid, code, timeout=60)

    threads = [threading.Thread(target=run, args=("py", ss, "import time\ntime.sleep(100)")),
               threading.Thread(target=run, args=("sh", sh, "sleep 100"))]
    for t in threads:
        t.start()
    assert wait_until(lambda: nb.info(ss)["state"] == "busy" and nb.info(sh)["state"] == "busy", 20)
    server.remove(nb.sid)
    for t in threads:
        t.join(30)
    for name in ("py", "sh"):
        r = replies[name]
        expect(r, 200)
        assert r.json()["status"] == "dead" and r.json()["hint"], r.json()
    expect_error(server.get(f"{nb.base}/sessions"), 410)     # its tombstone (issue 12)
