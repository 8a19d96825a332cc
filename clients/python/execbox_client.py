"""A small client for execbox's REST API (README.md, GET /openapi.json).

Standard library only (urllib, json): copy this one file next to your code.
It covers sandboxes, exec (plain and streamed over server-sent events),
background processes, files and code sessions. Results are the server's
JSON as plain dicts (RunResult adds helpers for session cells); a failed
call raises ExecboxError, which carries the server's code, message, hint and
the HTTP status.

Not yet in the server, so not here either: templates and network policy.

    from execbox_client import Client
    with Client("http://127.0.0.1:8000", token="...") as xb:
        with xb.create_sandbox() as sbx:
            print(sbx.exec("echo hi")["stdout"])
"""
from __future__ import annotations

import base64
import http.client
import json
import os
import socket
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, BinaryIO, Iterator, Optional, Union

__all__ = ["Client", "Sandbox", "Process", "Session", "RunResult", "Event", "ExecboxError"]

DEFAULT_URL = "http://127.0.0.1:8000"


class ExecboxError(Exception):
    """An error reply: code (stable, e.g. sandbox_not_found), message, hint
    (what to do next) and status (the HTTP status; 0 with the codes
    unreachable and connection_lost, when no reply came; 200 for an error
    event inside a stream)."""

    def __init__(self, code: str, message: str, hint: str = "", status: int = 0):
        super().__init__(f"{code}: {message}" + (f" ({hint})" if hint else ""))
        self.code, self.message, self.hint, self.status = code, message, hint, status


@dataclass
class Event:
    """One server-sent event: its name (stdout, stderr, stream, display,
    error, result, ...) and its JSON data."""
    event: str
    data: Any


def _error_from(status: int, body: bytes) -> ExecboxError:
    try:
        err = json.loads(body)["error"]
        return ExecboxError(str(err["code"]), str(err["message"]), str(err.get("hint", "")), status)
    except (ValueError, KeyError, TypeError):
        text = body.decode("utf-8", "replace").strip()[:500]
        return ExecboxError("http_error", f"HTTP {status}: {text}" if text else f"HTTP {status}", "", status)


def _drop_none(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


def _sse(resp) -> Iterator[Event]:
    """Parse a text/event-stream body (the WHATWG rules that matter here:
    event/data fields, comments, blank-line dispatch)."""
    name, data = "", []
    for raw in resp:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if data:
                text = "\n".join(data)
                try:
                    value = json.loads(text)
                except ValueError:
                    value = text
                yield Event(name or "message", value)
            name, data = "", []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)


class Client:
    """A connection to one execbox server. base_url defaults to $EXECBOX_URL
    (else http://127.0.0.1:8000), token to $EXECBOX_TOKEN; timeout is the
    socket timeout in seconds for each request (long calls add their own
    timeout_s to it)."""

    def __init__(self, base_url: Optional[str] = None, token: Optional[str] = None, timeout: float = 60.0):
        self.base_url = (base_url or os.environ.get("EXECBOX_URL") or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else os.environ.get("EXECBOX_TOKEN")
        self.timeout = timeout

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        pass

    # ---- HTTP ----

    def _open(self, method: str, path: str, *, query: Optional[dict] = None, body: Any = None,
              data: Union[bytes, BinaryIO, None] = None, headers: Optional[dict] = None,
              wait_s: Optional[float] = None, sse: bool = False):
        url = path if path.startswith(("http://", "https://")) else self.base_url + path
        if query:
            q = {k: ("true" if v is True else "false" if v is False else v) for k, v in query.items() if v is not None}
            if q:
                url += "?" + urllib.parse.urlencode(q)
        h = {"Accept": "text/event-stream" if sse else "application/json"}
        # The token goes only to this server, not to absolute URLs elsewhere.
        if self.token and url.startswith(self.base_url + "/"):
            h["Authorization"] = f"Bearer {self.token}"
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        elif data is not None:
            h["Content-Type"] = "application/octet-stream"
        elif method in ("POST", "PUT"):
            data = b""
        h.update(headers or {})
        req = urllib.request.Request(url, data=data, headers=h, method=method)
        timeout = None if sse else self.timeout + (wait_s or 0)
        try:
            return urllib.request.urlopen(req, timeout=timeout)
        except urllib.error.HTTPError as e:
            body = e.read()
            e.close()
            raise _error_from(e.code, body) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            if isinstance(reason, (ConnectionRefusedError, socket.gaierror, socket.timeout)):
                raise ExecboxError("unreachable", f"cannot reach {self.base_url}: {reason}",
                                   "is `execbox serve` running there? check the URL", 0) from None
            raise ExecboxError("connection_lost", f"{method} {url}: the connection ended without a reply: {reason}",
                               "retry; if it persists, the server may have refused the request early "
                               "(check the token, the sandbox id and the size of the body)", 0) from None

    def request(self, method: str, path: str, **kw) -> Any:
        """One call; the decoded JSON reply (None for 204 No Content)."""
        with self._open(method, path, **kw) as resp:
            raw = resp.read()
            if resp.status == 204 or not raw:
                return None
            if "json" in resp.headers.get("Content-Type", ""):
                return json.loads(raw)
            return raw

    def stream(self, method: str, path: str, **kw) -> Iterator[Event]:
        """One call answered with server-sent events, as they arrive."""
        resp = self._open(method, path, sse=True, **kw)
        with resp:
            if "text/event-stream" not in resp.headers.get("Content-Type", ""):
                yield Event("result", json.loads(resp.read()))
                return
            yield from _sse(resp)

    # ---- the server ----

    def health(self) -> dict:
        return self.request("GET", "/healthz")

    def openapi(self) -> dict:
        return self.request("GET", "/openapi.json")

    def guide(self) -> str:
        with self._open("GET", "/v1/guide", headers={"Accept": "text/markdown, text/plain, */*"}) as r:
            return r.read().decode()

    def tools(self) -> dict:
        return self.request("GET", "/v1/tools")

    # ---- sandboxes ----

    def create_sandbox(self, *, limits: Optional[dict] = None, env: Optional[dict] = None,
                       timeout_s: Optional[float] = None, mounts: Optional[list] = None,
                       metadata: Optional[dict] = None) -> "Sandbox":
        """A new sandbox. limits: {"memory", "cpus", "pids", "disk"} (bytes,
        cores; None keeps the server's default); timeout_s: idle time to live."""
        if limits is not None:
            limits = {k: limits.get(k) for k in ("memory", "cpus", "pids", "disk")}
        body = _drop_none({"limits": limits, "env": env, "timeout_s": timeout_s, "mounts": mounts,
                           "metadata": metadata})
        info = self.request("POST", "/v1/sandboxes", body=body)
        return Sandbox(self, info["id"], info)

    def list_sandboxes(self) -> list:
        return self.request("GET", "/v1/sandboxes")["sandboxes"]

    def get_sandbox(self, sandbox_id: str) -> "Sandbox":
        """An existing sandbox, fetched (raises sandbox_not_found)."""
        s = Sandbox(self, sandbox_id)
        s.refresh()
        return s

    def sandbox(self, sandbox_id: str) -> "Sandbox":
        """A handle on a sandbox by id, without a request."""
        return Sandbox(self, sandbox_id)

    def delete_sandbox(self, sandbox_id: str) -> None:
        self.request("DELETE", f"/v1/sandboxes/{_seg(sandbox_id)}")


def _seg(s: Any) -> str:
    return urllib.parse.quote(str(s), safe="")


class Sandbox:
    """One sandbox. As a context manager it is deleted on exit."""

    def __init__(self, client: Client, sandbox_id: str, info: Optional[dict] = None):
        self.client, self.id, self.info = client, sandbox_id, info or {}
        self.path = f"/v1/sandboxes/{_seg(sandbox_id)}"

    def __repr__(self) -> str:
        return f"<Sandbox {self.id}>"

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.delete()
        except ExecboxError as e:
            # Already deleted, expired or crashed: nothing to do.
            if e.code not in ("sandbox_not_found", "sandbox_gone"):
                raise

    def _req(self, method: str, sub: str, **kw) -> Any:
        return self.client.request(method, self.path + sub, **kw)

    def refresh(self) -> dict:
        self.info = self._req("GET", "")
        return self.info

    def delete(self) -> None:
        self._req("DELETE", "")

    def keepalive(self, timeout_s: Optional[float] = None) -> dict:
        """Restart the idle clock; timeout_s sets a new idle time to live."""
        self.info = self._req("POST", "/keepalive", body=_drop_none({"timeout_s": timeout_s}))
        return self.info

    # ---- exec ----

    @staticmethod
    def _exec_body(cmd, argv, kw) -> dict:
        if (cmd is None) == (argv is None):
            raise TypeError("give exactly one of cmd and argv")
        return _drop_none({"cmd": cmd, "argv": list(argv) if argv is not None else None, **kw})

    def exec(self, cmd: Optional[str] = None, *, argv: Optional[list] = None, cwd: Optional[str] = None,
             env: Optional[dict] = None, timeout_s: Optional[float] = None, yield_after_s: Optional[float] = None,
             stdin: Optional[str] = None, user: Optional[str] = None, output_limit: Optional[int] = None) -> dict:
        """Run a command (cmd through bash, or argv without a shell) and
        return its result: status, exit_code, stdout, stderr, ... A status
        of "running" (after yield_after_s) names the pid to follow."""
        body = self._exec_body(cmd, argv, dict(cwd=cwd, env=env, timeout_s=timeout_s, yield_after_s=yield_after_s,
                                               stdin=stdin, user=user, output_limit=output_limit))
        return self._req("POST", "/exec", body=body, wait_s=_wait(timeout_s, 120))

    def exec_stream(self, cmd: Optional[str] = None, *, argv: Optional[list] = None, **kw) -> Iterator[Event]:
        """Like exec, as events while it runs: start, stdout and stderr
        ({"data": text}), and last result (exec's result). An error event
        (the command could not start) raises ExecboxError."""
        body = self._exec_body(cmd, argv, kw)
        for ev in self.client.stream("POST", self.path + "/exec", body=body):
            if ev.event == "error" and isinstance(ev.data, dict):
                raise ExecboxError(str(ev.data.get("code", "error")), str(ev.data.get("message", "")),
                                   str(ev.data.get("hint", "")), 200)
            yield ev

    # ---- background processes ----

    def start_process(self, cmd: Optional[str] = None, *, argv: Optional[list] = None, cwd: Optional[str] = None,
                      env: Optional[dict] = None, stdin: Optional[str] = None, timeout_s: Optional[float] = None,
                      user: Optional[str] = None, output_limit: Optional[int] = None) -> "Process":
        """Start a command in the background; its Process handle."""
        body = self._exec_body(cmd, argv, dict(cwd=cwd, env=env, stdin=stdin, timeout_s=timeout_s, user=user,
                                               output_limit=output_limit))
        info = self._req("POST", "/processes", body=body)
        return Process(self, info["pid"], info)

    def list_processes(self) -> list:
        return self._req("GET", "/processes")["processes"]

    def process(self, pid: int) -> "Process":
        """A handle on a process by pid, without a request."""
        return Process(self, pid)

    # ---- files ----

    def read_file(self, path: str, *, offset: Optional[int] = None, length: Optional[int] = None) -> bytes:
        """The file's bytes, or a range of them (offset, and length)."""
        headers = {"Accept": "application/octet-stream"}
        if offset is not None or length is not None:
            start = offset or 0
            headers["Range"] = f"bytes={start}-" + (str(start + length - 1) if length else "")
        with self.client._open("GET", self.path + "/files", query={"path": path}, headers=headers) as r:
            return r.read()

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        return self.read_file(path).decode(encoding)

    def write_file(self, path: str, data: Union[bytes, str, BinaryIO], *, mode: Optional[str] = None,
                   append: bool = False) -> dict:
        """Write (or with append, add to) a file; parents are created.
        data: bytes, text (UTF-8) or a binary file object (streamed).
        mode: octal permissions such as "0755"."""
        if isinstance(data, str):
            data = data.encode()
        headers = {}
        if not isinstance(data, (bytes, bytearray)):
            try:
                headers["Content-Length"] = str(os.fstat(data.fileno()).st_size - data.tell())
            except (AttributeError, OSError, ValueError):
                data = data.read()  # not a real file (BytesIO): send it whole
        return self._req("PUT", "/files", query={"path": path, "mode": mode, "append": append or None},
                         data=data, headers=headers)

    def list_files(self, path: str = "/home/user", *, depth: Optional[int] = None) -> list:
        """The entries under a directory (name, path, type, size, mode, mtime)."""
        return self._req("GET", "/files/list", query={"path": path, "depth": depth})["entries"]

    def stat(self, path: str) -> dict:
        return self._req("GET", "/files/stat", query={"path": path})

    def exists(self, path: str) -> bool:
        try:
            self.stat(path)
            return True
        except ExecboxError as e:
            if e.code == "file_not_found":
                return False
            raise

    def mkdir(self, path: str, *, parents: Optional[bool] = None, mode: Optional[str] = None) -> dict:
        return self._req("POST", "/files/mkdir", body=_drop_none({"path": path, "parents": parents, "mode": mode}))

    def move(self, src: str, dst: str, *, overwrite: Optional[bool] = None) -> dict:
        return self._req("POST", "/files/move", body=_drop_none({"from": src, "to": dst, "overwrite": overwrite}))

    def delete_file(self, path: str, *, recursive: bool = False) -> dict:
        return self._req("DELETE", "/files", query={"path": path, "recursive": recursive or None})

    # ---- code sessions ----

    def create_session(self, language: Optional[str] = None, *, kernel: Optional[str] = None) -> "Session":
        """A stateful interpreter: python (the default), javascript, bash,
        or an installed Jupyter kernel by name."""
        info = self._req("POST", "/sessions", body=_drop_none({"language": language, "kernel": kernel}))
        return Session(self, info["id"], info)

    def list_sessions(self) -> list:
        return self._req("GET", "/sessions")["sessions"]

    def session(self, session_id: str) -> "Session":
        """A handle on a session by id, without a request."""
        return Session(self, session_id)

    def image(self, url_or_name: str) -> bytes:
        """An image a cell displayed, by its output's url (or file name)."""
        target = url_or_name if "/" in url_or_name else f"{self.path}/images/{_seg(url_or_name)}"
        with self.client._open("GET", target, headers={"Accept": "image/png, image/jpeg, */*"}) as r:
            return r.read()


def _wait(timeout_s: Optional[float], default: float) -> float:
    """How long a call may block on the server: its timeout_s (0: none)."""
    if timeout_s == 0:
        return 86400.0
    return float(timeout_s if timeout_s is not None else default)


class Process:
    """A background process in a sandbox, by pid."""

    def __init__(self, sandbox: Sandbox, pid: int, info: Optional[dict] = None):
        self.sandbox, self.pid, self.info = sandbox, pid, info or {}
        self.path = f"/processes/{int(pid)}"
        self.stdout_offset = 0
        self.stderr_offset = 0

    def __repr__(self) -> str:
        return f"<Process {self.pid} in {self.sandbox.id}>"

    def _req(self, method: str, sub: str = "", **kw) -> Any:
        return self.sandbox._req(method, self.path + sub, **kw)

    def refresh(self) -> dict:
        self.info = self._req("GET")
        return self.info

    def output(self, stdout_offset: Optional[int] = None, stderr_offset: Optional[int] = None, *,
               wait_s: Optional[int] = None, max_bytes: Optional[int] = None) -> dict:
        """Output from the given offsets on (default: where the last call
        ended); wait_s waits that long for something new. The reply's
        offsets are kept for the next call."""
        so = self.stdout_offset if stdout_offset is None else stdout_offset
        eo = self.stderr_offset if stderr_offset is None else stderr_offset
        r = self._req("GET", "/output", query={"stdout_offset": so, "stderr_offset": eo, "wait_s": wait_s,
                                               "max_bytes": max_bytes}, wait_s=wait_s)
        self.stdout_offset, self.stderr_offset = r["stdout_offset"], r["stderr_offset"]
        return r

    def write(self, data: Optional[str] = None, *, eof: bool = False) -> dict:
        """Write to its stdin; eof closes stdin after."""
        return self._req("POST", "/stdin", body=_drop_none({"data": data, "eof": eof or None}))

    def close_stdin(self) -> dict:
        return self.write(eof=True)

    def signal(self, sig: Optional[str] = None) -> dict:
        """Send a signal by name (SIGTERM by default, SIGKILL, SIGINT, ...)."""
        return self._req("POST", "/signal", body=_drop_none({"signal": sig}))

    def kill(self) -> dict:
        return self.signal("SIGKILL")

    def wait(self, timeout_s: Optional[float] = None) -> dict:
        """Wait for it to end (or timeout_s): its result, status "running"
        if it had not ended."""
        return self._req("POST", "/wait", body=_drop_none({"timeout_s": timeout_s}), wait_s=_wait(timeout_s, 86400))

    def delete(self) -> None:
        """Kill it if it runs, and forget it."""
        self._req("DELETE")


class RunResult(dict):
    """A cell's result (status, execution_count, outputs, ...), with helpers
    that read its outputs."""

    def _outs(self, kind: str) -> list:
        return [o for o in self.get("outputs", []) if o.get("type") == kind]

    @property
    def stdout(self) -> str:
        return "".join(o.get("text", "") for o in self._outs("stream") if o.get("name") == "stdout")

    @property
    def stderr(self) -> str:
        return "".join(o.get("text", "") for o in self._outs("stream") if o.get("name") == "stderr")

    @property
    def text(self) -> Optional[str]:
        """The last expression's value as text/plain, if there was one."""
        res = self._outs("result")
        return res[-1].get("data", {}).get("text/plain") if res else None

    @property
    def error(self) -> Optional[dict]:
        """The exception's output (name, value, traceback), if one was raised."""
        errs = self._outs("error")
        return errs[-1] if errs else None

    @property
    def exit_code(self) -> Optional[int]:
        """A bash session's exit code, if the cell reported one."""
        if self.get("exit_code") is not None:
            return self["exit_code"]
        ex = self._outs("exit")
        return ex[-1].get("exit_code") if ex else None

    def images(self) -> list:
        """(mime type, bytes, url) for each image in the outputs, decoded
        from their inline base64."""
        found = []
        for o in self.get("outputs", []):
            for mime, value in (o.get("data") or {}).items():
                if mime.startswith("image/") and isinstance(value, str) and mime != "image/svg+xml":
                    try:
                        found.append((mime, base64.b64decode(value, validate=True), o.get("url")))
                    except ValueError:
                        continue
        return found


class Session:
    """A stateful code session in a sandbox."""

    def __init__(self, sandbox: Sandbox, session_id: str, info: Optional[dict] = None):
        self.sandbox, self.id, self.info = sandbox, session_id, info or {}
        self.path = f"/sessions/{_seg(session_id)}"

    def __repr__(self) -> str:
        return f"<Session {self.id} in {self.sandbox.id}>"

    def _req(self, method: str, sub: str = "", **kw) -> Any:
        return self.sandbox._req(method, self.path + sub, **kw)

    def refresh(self) -> dict:
        self.info = self._req("GET")
        return self.info

    def run(self, code: str, *, timeout_s: Optional[float] = None, yield_after_s: Optional[float] = None,
            output_limit: Optional[int] = None) -> RunResult:
        """Run a cell; its result with every output (streams, the last
        expression, figures as base64 PNG with an images/ url, errors)."""
        body = _drop_none({"code": code, "timeout_s": timeout_s, "yield_after_s": yield_after_s,
                           "output_limit": output_limit})
        return RunResult(self._req("POST", "/run", body=body, wait_s=_wait(timeout_s, 120)))

    def run_stream(self, code: str, **kw) -> Iterator[Event]:
        """Like run, as events while it runs: stream, display,
        execute_result and error outputs, and last result (the cell's
        status, without the outputs already sent)."""
        body = _drop_none({"code": code, **kw})
        yield from self.sandbox.client.stream("POST", self.sandbox.path + self.path + "/run", body=body)

    def wait(self, timeout_s: Optional[float] = None) -> RunResult:
        """Wait for a running cell (after yield_after_s): outputs not
        returned before, and its status."""
        return RunResult(self._req("POST", "/wait", body=_drop_none({"timeout_s": timeout_s}),
                                   wait_s=_wait(timeout_s, 30)))

    def interrupt(self) -> dict:
        self.info = self._req("POST", "/interrupt")
        return self.info

    def restart(self) -> dict:
        """A fresh interpreter (all state lost)."""
        self.info = self._req("POST", "/restart")
        return self.info

    def input(self, data: str) -> dict:
        """Answer a cell that waits for input (e.g. "y\\n")."""
        return self._req("POST", "/input", body={"data": data})

    def variable(self, name: str) -> dict:
        """A variable of the session: name, type, repr, and json (its value
        when it converts to JSON, else None)."""
        return self._req("GET", f"/variables/{_seg(name)}")

    def delete(self) -> None:
        self._req("DELETE")
