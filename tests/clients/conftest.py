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
    return server_fixture.binary_under_test("clients-test")


@pytest.fixture(scope="session")
def token() -> str:
    """The bearer token xbserver takes."""
    return TOKEN


@pytest.fixture(scope="module")
def xbserver(execbox, tmp_path_factory):
    """A server that needs TOKEN, for every test of a module."""
    yield from server_fixture.served(execbox, str(tmp_path_factory.mktemp("srv")), [TOKEN])
