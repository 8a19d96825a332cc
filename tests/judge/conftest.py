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
    if os.geteuid() != 0:
        pytest.exit("execbox needs root to create sandboxes; run the suite as root", returncode=2)
    path = os.environ.get("EXECBOX")
    if not path or not os.access(path, os.X_OK):
        pytest.exit("EXECBOX is not set to an executable: run the suite with `make judge-test`", returncode=2)
    return os.path.realpath(path)


@pytest.fixture(scope="module")
def srv(execbox, tmp_path_factory):
    s = server_fixture.start_server(execbox, str(tmp_path_factory.mktemp("srv")), tokens=[TOKEN])
    yield s
    problems = server_fixture.finish_server(s)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
