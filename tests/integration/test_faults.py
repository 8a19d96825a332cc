"""Faults found by the fault audit (issue 12, section 5): each is provoked
for real (fd exhaustion under `ulimit -n`, a flood of output, a storm of
query parameters, ...) and the server must answer cleanly and recover."""
from __future__ import annotations

import contextlib
import os
import socket
import time

import pytest
import requests

from server_fixture import expect, expect_error, finish_server, start_server, server, server_factory  # noqa: F401


@contextlib.contextmanager
def limited_server(execbox, tmp_path, nofile: int, *args, **kw):
    """A server started under `ulimit -n nofile` (a wrapper that execs it, so
    the pid stopped at the end is the server's own)."""
    wrapper = tmp_path / "execbox-ulimit"
    wrapper.write_text(f'#!/bin/sh\nulimit -n {nofile} || exit 99\nexec "{execbox}" "$@"\n')
    wrapper.chmod(0o755)
    srv = start_server(str(wrapper), str(tmp_path), *args, **kw)
    try:
        yield srv
    finally:
        problems = finish_server(srv)
        assert not problems, "\n".join(problems)


def read_reply(s: socket.socket, timeout: float = 5) -> bytes:
    s.settimeout(timeout)
    buf = b""
    with contextlib.suppress(OSError):
        while chunk := s.recv(65536):
            buf += chunk
    return buf


def test_accept_out_of_fds_sheds_with_503_and_recovers(execbox, tmp_path):
    with limited_server(execbox, tmp_path, 64, pool=0) as srv:
        ids = []
        socks: list[socket.socket] = []
        try:
            # Sandboxes and idle connections until the fd table is full.
            for _ in range(4):
                r = srv.post("/v1/sandboxes", {})
                if r.status_code == 201:
                    ids.append(r.json()["id"])
            for _ in range(80):
                try:
                    socks.append(socket.create_connection(("127.0.0.1", srv.port), timeout=5))
                except OSError:
                    break
            time.sleep(0.5)
            shed = []
            for s in socks:
                s.setblocking(False)
                with contextlib.suppress(BlockingIOError, OSError):
                    data = s.recv(65536)
                    if data:
                        shed.append(data)
        finally:
            for s in socks:
                s.close()
        # 80 connections on a table of 64 fds: it was full.
        assert len(socks) == 80, len(socks)
        # Recovered: the server answers at once, and new sandboxes can be made.
        t0 = time.monotonic()
        expect(requests.get(srv.url + "/healthz", timeout=5), 200)
        assert time.monotonic() - t0 < 2
        # Those beyond the table were told so, with the reserve fd.
        assert shed, "no connection was answered 503 while the fd table was full"
        assert all(d.startswith(b"HTTP/1.1 503 ") and b'"overloaded"' in d for d in shed), shed[:2]
        assert b"Retry-After: 1" in shed[0]
        for sid in ids:
            srv.remove(sid)
        sid = srv.create()["id"]
        assert srv.exec(sid, cmd="echo back")["stdout"] == "back\n"
        srv.remove(sid)
        assert "out of file descriptors" in srv.stderr()
