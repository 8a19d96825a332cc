"""One real `execbox serve` with two E2B-style tokens (two tenants) for
the E2B suites, started and checked (exit 0, nothing left on the host) by
tests/integration/server_fixture.py; and the pinned SDKs from npm, cached
outside the repository. `make e2b-test` sets EXECBOX."""
from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import server_fixture  # noqa: E402

# Pinned: the versions tests/e2b was written and run against.
SDKS = ["e2b@2.51.0", "@e2b/code-interpreter@2.8.0"]
NPM_DIR = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.environ.get("HOME", "/root"), ".cache"),
                       "execbox-npm", "e2b")
# The SDK accepts keys that look like its own: "e2b_" and 40 hex digits.
TOKENS = ["e2b_" + secrets.token_hex(20), "e2b_" + secrets.token_hex(20)]


@pytest.fixture(scope="session")
def execbox() -> str:
    return server_fixture.binary_under_test("e2b-test")


@pytest.fixture(scope="session")
def sdk_modules() -> str:
    """node_modules with the pinned SDKs (npm's configured registry)."""
    mods = os.path.join(NPM_DIR, "node_modules")
    want = {"e2b": "2.51.0", "@e2b/code-interpreter": "2.8.0"}
    have = all(os.path.exists(os.path.join(mods, name, "package.json")) and
               f'"version": "{v}"' in open(os.path.join(mods, name, "package.json")).read()
               for name, v in want.items())
    if not have:
        if not shutil.which("npm"):
            pytest.fail("npm is not installed (scripts/deps.sh installs it)")
        os.makedirs(NPM_DIR, exist_ok=True)
        r = subprocess.run(["npm", "install", "--prefix", NPM_DIR, "--no-audit", "--no-fund", "--loglevel=error",
                            *SDKS], capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            pytest.fail(f"npm install {' '.join(SDKS)} failed: {r.stderr.strip()[-500:]}")
    return mods


@pytest.fixture(scope="module")
def srv(execbox, tmp_path_factory):
    yield from server_fixture.served(execbox, str(tmp_path_factory.mktemp("srv")), TOKENS)
