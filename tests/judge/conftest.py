"""One real `execbox serve` with a bearer token for the judge suites, started
and checked (exit 0, nothing left on the host) by
tests/integration/server_fixture.py. `make judge-test` sets EXECBOX."""
from __future__ import annotations

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import server_fixture  # noqa: E402

TOKEN = "judge-test-token-3a9e41"


@pytest.fixture(scope="session")
def execbox() -> str:
    return server_fixture.binary_under_test("judge-test")


@pytest.fixture(scope="module")
def srv(execbox, tmp_path_factory):
    yield from server_fixture.served(execbox, str(tmp_path_factory.mktemp("srv")), [TOKEN])
