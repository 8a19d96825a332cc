"""The tool-call bridge suite (`make tools-test`): the real `execbox serve`,
started and checked (exit 0, nothing left on the host) by
tests/integration/server_fixture.py. EXECBOX names the binary under test."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def execbox() -> str:
    if os.geteuid() != 0:
        pytest.exit("execbox needs root to create sandboxes; run the suite as root", returncode=2)
    path = os.environ.get("EXECBOX")
    if not path or not os.access(path, os.X_OK):
        pytest.exit("EXECBOX is not set to an executable: run the suite with `make tools-test`", returncode=2)
    return os.path.realpath(path)
