#!/usr/bin/env python3
"""`make bench`'s E2B part: the pinned SDKs (tests/e2b's npm cache) run
bench/e2b.mjs against a real `execbox serve` with a warm pool.
Usage: e2b_bench.py EXECBOX [RUNS]"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2b"))

import server_fixture  # noqa: E402
from conftest import NPM_DIR, SDKS, TOKENS  # noqa: E402


def main() -> int:
    execbox, runs = os.path.realpath(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "20"
    mods = os.path.join(NPM_DIR, "node_modules")
    if not os.path.isdir(os.path.join(mods, "@e2b", "code-interpreter")):
        os.makedirs(NPM_DIR, exist_ok=True)
        subprocess.run(["npm", "install", "--prefix", NPM_DIR, "--no-audit", "--no-fund", "--loglevel=error", *SDKS],
                       check=True)
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(os.path.join(ROOT, "bench", "e2b.mjs"), tmp)
        os.symlink(mods, os.path.join(tmp, "node_modules"))
        s = server_fixture.start_server(execbox, os.path.join(tmp, "srv"), "--pool", "4", tokens=TOKENS)
        try:
            env = dict(os.environ, E2B_API_URL=s.url, E2B_SANDBOX_URL=s.url, E2B_API_KEY=TOKENS[0])
            r = subprocess.run(["node", os.path.join(tmp, "e2b.mjs"), runs], env=env, cwd=tmp, text=True,
                               capture_output=True, timeout=600)
            sys.stdout.write(r.stdout)
            sys.stderr.write(r.stderr[-2000:])
            rc = r.returncode
        finally:
            problems = server_fixture.finish_server(s)
        for p in problems:
            print("e2b bench:", p, file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
