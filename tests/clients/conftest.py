"""Fixtures for the client library and agent example suites: one real
`execbox serve` per module, with a bearer token, started and checked
(exit 0, nothing left on the host) by tests/integration/server_fixture.py.
`make clients-test` sets EXECBOX (the binary under test)."""
from __future__ import annotations

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))

import server_fixture  # noqa: E402

TOKEN = "clients-test-token-5d1f0c9a"


@pytest.fixture(scope="session")
def execbox() -> str:
    if os.geteuid() != 0:
        pytest.exit("execbox needs root to create sandboxes; run the suite as root", returncode=2)
    path = os.environ.get("EXECBOX")
    if not path or not os.access(path, os.X_OK):
        pytest.exit("EXECBOX is not set to an executable: run the suite with `make clients-test`", returncode=2)
    return os.path.realpath(path)


@pytest.fixture(scope="session")
def token() -> str:
    """The bearer token xbserver takes."""
    return TOKEN


@pytest.fixture(scope="module")
def xbserver(execbox, tmp_path_factory):
    """A server that needs TOKEN, for every test of a module."""
    srv = server_fixture.start_server(execbox, str(tmp_path_factory.mktemp("srv")), tokens=[TOKEN])
    yield srv
    problems = server_fixture.finish_server(srv)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
