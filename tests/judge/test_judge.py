"""Piston v2 and Judge0 CE on execbox (src/judge), driven with the request
shapes their documentation gives, against a real server with a token."""
from __future__ import annotations

import base64
import os
import shutil
import subprocess
import time

import pytest
import requests

import server_fixture
from conftest import HERE, TOKEN

AUTH = {"Authorization": f"Bearer {TOKEN}"}

HELLO = {
    "c": ("main.c", '#include <stdio.h>\nint main(int c, char **v){char s[64];scanf("%63s",s);printf("%s %s\\n",s,v[1]);}'),
    "c++": ("main.cpp", '#include <iostream>\nint main(int c,char**v){std::string s;std::cin>>s;std::cout<<s<<" "<<v[1]<<"\\n";}'),
    "python": ("main.py", "import sys\nprint(input(), sys.argv[1])"),
    "javascript": ("main.js", "const s=require('fs').readFileSync(0,'utf8').trim();console.log(s, process.argv[2])"),
    "bash": ("main.sh", 'read s; echo "$s $1"'),
    "go": ("main.go", 'package main\nimport ("fmt";"os")\nfunc main(){var s string;fmt.Scan(&s);fmt.Println(s, os.Args[1])}'),
    "rust": ("main.rs", 'fn main(){let mut s=String::new();std::io::stdin().read_line(&mut s).unwrap();'
             'println!("{} {}",s.trim(),std::env::args().nth(1).unwrap());}'),
    "java": ("Main.java", 'public class Main{public static void main(String[] a){'
             'System.out.println(new java.util.Scanner(System.in).next()+" "+a[0]);}}'),
}
BROKEN = {"c": "int main({", "c++": "int main({", "go": "package main\nfunc main({", "rust": "fn main({",
          "java": "public class Main{"}
JUDGE0_IDS = {"c": 50, "c++": 54, "python": 71, "javascript": 63, "bash": 46, "go": 60, "rust": 73, "java": 62}


def post(srv, path, body, **kw):
    return requests.post(srv.url + path, json=body, headers=kw.pop("headers", AUTH), timeout=120, **kw)


def get(srv, path, **kw):
    return requests.get(srv.url + path, headers=kw.pop("headers", AUTH), timeout=60, **kw)


@pytest.fixture(scope="module")
def runtimes(srv):
    r = get(srv, "/api/v2/runtimes")
    assert r.status_code == 200, r.text
    return {rt["language"]: rt for rt in r.json()}


# ---- Piston ----

def test_runtimes_shape_and_the_required_languages(runtimes):
    for lang in ("c", "c++", "python", "javascript", "bash"):
        assert lang in runtimes, runtimes
    for rt in runtimes.values():
        assert set(rt) >= {"language", "version", "aliases"}
        assert rt["version"][0].isdigit() and isinstance(rt["aliases"], list)


def test_auth_is_the_rest_token(srv):
    assert requests.get(srv.url + "/api/v2/runtimes", timeout=10).status_code == 401
    assert get(srv, "/statuses", headers={"X-Auth-Token": TOKEN}).status_code == 200
    assert get(srv, "/statuses", headers={"X-Auth-Token": "wrong"}).status_code == 401
    # X-Auth-Token is the judges' header only
    assert requests.get(srv.url + "/v1/sandboxes", headers={"X-Auth-Token": TOKEN}, timeout=10).status_code == 401


@pytest.mark.parametrize("lang", list(HELLO))
def test_piston_execute_each_language(srv, runtimes, lang):
    if lang not in runtimes:
        pytest.skip(f"{lang} is not installed on this host")
    name, src = HELLO[lang]
    body = {"language": lang, "version": runtimes[lang]["version"], "files": [{"name": name, "content": src}],
            "stdin": "hello\n", "args": ["arg1"], "compile_timeout": 60000, "run_timeout": 20000,
            "compile_memory_limit": -1, "run_memory_limit": -1}
    r = post(srv, "/api/v2/execute", body)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["language"] == lang and out["version"] == runtimes[lang]["version"]
    assert out["run"]["stdout"] == "hello arg1\n", out
    assert out["run"]["code"] == 0 and out["run"]["signal"] is None
    assert out["run"]["output"] == out["run"]["stdout"] + out["run"]["stderr"]
    if lang in BROKEN:
        assert out["compile"]["code"] == 0
        bad = post(srv, "/api/v2/execute", {"language": lang, "version": "*",
                                             "files": [{"name": name, "content": BROKEN[lang]}]}).json()
        assert bad["compile"]["code"] != 0 and bad["compile"]["stderr"], bad
        assert bad["run"]["stdout"] == "" and bad["run"]["code"] is None
    else:
        assert "compile" not in out


def test_piston_alias_base64_file_and_run_timeout(srv):
    src = base64.b64encode(b"import time\nprint('start', flush=True)\ntime.sleep(30)\n").decode()
    t = time.monotonic()
    out = post(srv, "/api/v2/execute", {"language": "py", "version": "3", "run_timeout": 1000,
                                        "files": [{"content": src, "encoding": "base64"}]}).json()
    assert time.monotonic() - t < 15
    assert out["language"] == "python"
    assert out["run"]["stdout"] == "start\n"
    assert out["run"]["signal"] == "SIGKILL" and out["run"]["status"] == "TO", out


def test_piston_run_cpu_time(srv):
    t = time.monotonic()
    out = post(srv, "/api/v2/execute", {"language": "c", "version": "*", "run_timeout": 10000, "run_cpu_time": 1000,
                                        "files": [{"content": "int main(){for(;;);}"}]}).json()
    run = out["run"]
    assert run["status"] == "TO" and run["signal"] == "SIGKILL" and run["message"] == "Time limit exceeded", out
    assert 900 <= run["cpu_time"] <= 1500 and run["wall_time"] < 8000, out
    assert time.monotonic() - t < 10
    out = post(srv, "/api/v2/execute", {"language": "python", "version": "*", "run_cpu_time": 1000, "args": ["a b"],
                                        "files": [{"content": "import sys\nprint(sys.argv[1:])"}]}).json()
    assert out["run"]["stdout"] == "['a b']\n" and out["run"]["code"] == 0, out
    r = post(srv, "/api/v2/execute", {"language": "python", "version": "*", "run_cpu_time": "x",
                                      "files": [{"content": "1"}]})
    assert r.status_code == 400 and "run_cpu_time" in r.json()["message"]


def test_piston_multiple_files_and_memory_limit(srv):
    out = post(srv, "/api/v2/execute", {"language": "python", "version": "*", "files": [
        {"name": "main.py", "content": "import helper\nprint(helper.X)"},
        {"name": "helper.py", "content": "X = 41 + 1"}]}).json()
    assert out["run"]["stdout"] == "42\n", out
    out = post(srv, "/api/v2/execute", {"language": "python", "version": "*", "run_memory_limit": 64 << 20,
                                        "files": [{"content": "x = bytearray(200 << 20)\nprint(len(x))"}]}).json()
    assert out["run"]["status"] == "SG" and out["run"]["message"] == "Memory limit exceeded", out


def test_piston_errors(srv):
    r = post(srv, "/api/v2/execute", {"language": "cobol", "version": "*", "files": [{"content": "x"}]})
    assert r.status_code == 400 and r.json() == {"message": "cobol-* runtime is unknown"}
    r = post(srv, "/api/v2/execute", {"language": "python", "version": "1.0.0", "files": [{"content": "x"}]})
    assert r.status_code == 400 and "runtime is unknown" in r.json()["message"]
    r = post(srv, "/api/v2/execute", {"language": "python", "version": "*", "files": []})
    assert r.status_code == 400 and "files" in r.json()["message"]
    r = post(srv, "/api/v2/execute", {"language": "python", "version": "*",
                                      "files": [{"name": "../x.py", "content": "1"}]})
    assert r.status_code == 400


NODE = shutil.which("node") or "/usr/bin/node"
NPM_DIR = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.environ.get("HOME", "/root"), ".cache"),
                       "execbox-npm", "piston")


def test_piston_client_from_npm(execbox, tmp_path):
    """The npm piston-client sends no token, so this one server runs --no-auth."""
    pkg = os.path.join(NPM_DIR, "node_modules", "piston-client")
    if not os.path.isfile(os.path.join(pkg, "index.js")):
        if not shutil.which("npm"):
            pytest.skip("npm is not installed, so piston-client cannot be")
        r = subprocess.run(["npm", "install", "--prefix", NPM_DIR, "--no-audit", "--no-fund", "--loglevel=error",
                            "piston-client@1.0.2"], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            pytest.skip(f"npm install piston-client failed: {r.stderr.strip()[-300:]}")
    s = server_fixture.start_server(execbox, str(tmp_path), no_auth=True)
    try:
        env = dict(os.environ, PISTON_CLIENT=pkg, PISTON_URL=s.url)
        r = subprocess.run([NODE, os.path.join(HERE, "piston_client.mjs")], capture_output=True, text=True,
                           timeout=120, env=env)
    finally:
        problems = server_fixture.finish_server(s)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "piston-client ok" in r.stdout
    assert not problems, problems


# ---- Judge0 ----

def sub(srv, body, query="?base64_encoded=false&wait=true"):
    r = post(srv, "/submissions" + query, body)
    assert r.status_code == 201, r.text
    return r.json()


def test_judge0_languages_and_statuses(srv, runtimes):
    langs = {l["id"]: l["name"] for l in get(srv, "/languages").json()}
    for lang, rt in runtimes.items():
        assert rt["version"] in langs[JUDGE0_IDS[lang]]
    assert langs[50].startswith("C (GCC ") and langs[71].startswith("Python (")
    sts = {s["id"]: s["description"] for s in get(srv, "/statuses").json()}
    assert sts[3] == "Accepted" and sts[4] == "Wrong Answer" and sts[6] == "Compilation Error"
    assert sts[11] == "Runtime Error (NZEC)" and sts[14] == "Exec Format Error" and len(sts) == 14
    assert get(srv, "/languages/71").json()["source_file"] == "main.py"


def test_judge0_accepted_and_wrong_answer(srv):
    src = "a, b = map(int, input().split())\nprint(a + b)"
    ok = sub(srv, {"source_code": src, "language_id": 71, "stdin": "2 3", "expected_output": "5"})
    assert ok["status"] == {"id": 3, "description": "Accepted"}, ok
    assert ok["stdout"] == "5\n" and set(ok) == {"stdout", "time", "memory", "stderr", "token", "compile_output",
                                                  "message", "status"}
    assert float(ok["time"]) >= 0 and isinstance(ok["memory"], int) and ok["memory"] > 0
    wa = sub(srv, {"source_code": src, "language_id": 71, "stdin": "2 3", "expected_output": "6"})
    assert wa["status"]["id"] == 4 and wa["status"]["description"] == "Wrong Answer"


def test_judge0_time_limit(srv):
    r = sub(srv, {"source_code": "int main(){for(;;);}", "language_id": 50, "cpu_time_limit": 1,
                  "wall_time_limit": 2}, "?wait=true&fields=status,time,wall_time")
    assert r["status"]["id"] == 5, r
    assert set(r) == {"status", "time", "wall_time"} and float(r["wall_time"]) >= 1


def test_judge0_cpu_limit_stops_the_run(srv):
    # the CPU limit, not the wall clock, ends a spinning program
    t = time.monotonic()
    r = sub(srv, {"source_code": "int main(){for(;;);}", "language_id": 50, "cpu_time_limit": 1,
                  "wall_time_limit": 10}, "?wait=true&fields=status,time,wall_time,message")
    assert r["status"]["id"] == 5 and r["message"] == "Time limit exceeded", r
    assert 0.9 <= float(r["time"]) <= 1.5 and float(r["wall_time"]) < 3, r
    assert time.monotonic() - t < 10
    # ignoring SIGXCPU buys one second, then SIGKILL
    r = sub(srv, {"source_code": "#include <signal.h>\nint main(){signal(SIGXCPU,SIG_IGN);for(;;);}",
                  "language_id": 50, "cpu_time_limit": 1, "wall_time_limit": 10},
            "?wait=true&fields=status,time,wall_time")
    assert r["status"]["id"] == 5 and 1.5 <= float(r["time"]) <= 2.5 and float(r["wall_time"]) < 4, r
    # a program that sleeps uses no CPU: the wall limit still ends it
    r = sub(srv, {"source_code": "import time\ntime.sleep(30)", "language_id": 71, "cpu_time_limit": 1,
                  "wall_time_limit": 1.5}, "?wait=true&fields=status,time,wall_time")
    assert r["status"]["id"] == 5 and float(r["time"]) < 0.5 and float(r["wall_time"]) >= 1.4, r
    # under the limit, the program runs as before
    r = sub(srv, {"source_code": "print(input())", "language_id": 71, "stdin": "hi", "cpu_time_limit": 1,
                  "wall_time_limit": 10, "expected_output": "hi"})
    assert r["status"]["id"] == 3, r


def test_judge0_compilation_error(srv):
    r = sub(srv, {"source_code": "int main( {", "language_id": 54})
    assert r["status"]["id"] == 6 and "error" in r["compile_output"], r
    assert r["stdout"] is None


def test_judge0_runtime_errors(srv):
    r = sub(srv, {"source_code": "import sys\nsys.exit(3)", "language_id": 71})
    assert r["status"] == {"id": 11, "description": "Runtime Error (NZEC)"}, r
    r = sub(srv, {"source_code": "int main(){return *(volatile int*)0;}", "language_id": 50}, "?wait=true&fields=*")
    assert r["status"]["id"] == 7 and r["exit_signal"] == 11, r
    r = sub(srv, {"source_code": "x = bytearray(300 << 20)", "language_id": 71, "memory_limit": 65536})
    assert r["status"]["id"] == 12 and r["message"] == "Memory limit exceeded", r


def test_judge0_base64_round_trip(srv):
    enc = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
    r = sub(srv, {"source_code": enc("echo \"héllo $(cat)\"; echo err >&2"), "language_id": 46, "stdin": enc("wörld"),
                  "expected_output": enc("héllo wörld\n")}, "?base64_encoded=true&wait=true&fields=*")
    assert r["status"]["id"] == 3, r
    assert base64.b64decode(r["stdout"]).decode() == "héllo wörld\n"
    assert base64.b64decode(r["stderr"]).decode() == "err\n"
    assert base64.b64decode(r["source_code"]).decode().startswith("echo")
    bad = post(srv, "/submissions?base64_encoded=true&wait=true", {"source_code": "not base64!", "language_id": 46})
    assert bad.status_code == 422 and "source_code" in bad.json()


def test_judge0_async_token_then_get(srv):
    r = sub(srv, {"source_code": "sleep 1; echo done", "language_id": 46}, "")
    assert set(r) == {"token"}
    deadline = time.monotonic() + 30
    seen = set()
    while True:
        g = get(srv, f"/submissions/{r['token']}?fields=status,stdout,token").json()
        seen.add(g["status"]["id"])
        if g["status"]["id"] > 2:
            break
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert g["status"]["id"] == 3 and g["stdout"] == "done\n" and g["token"] == r["token"]
    assert seen & {1, 2}, seen
    assert get(srv, "/submissions/00000000-0000-4000-8000-000000000000").status_code == 404


def test_judge0_batch(srv):
    subs = [{"source_code": f"print({i} * {i})", "language_id": 71, "expected_output": str(i * i)} for i in range(6)]
    subs.append({"source_code": "x", "language_id": 9999})
    r = post(srv, "/submissions/batch?base64_encoded=false", {"submissions": subs})
    assert r.status_code == 201, r.text
    out = r.json()
    assert "language_id" in out[-1] and all("token" in o for o in out[:-1])
    tokens = ",".join(o["token"] for o in out[:-1])
    deadline = time.monotonic() + 60
    while True:
        got = get(srv, f"/submissions/batch?tokens={tokens}&fields=token,status,stdout").json()["submissions"]
        if all(g["status"]["id"] > 2 for g in got):
            break
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert [g["stdout"] for g in got] == [f"{i * i}\n" for i in range(6)]
    assert all(g["status"]["id"] == 3 for g in got)


def test_judge0_validation(srv):
    r = post(srv, "/submissions?wait=true", {"source_code": "print(1)", "language_id": 12345})
    assert r.status_code == 422 and "language_id" in r.json()
    r = post(srv, "/submissions?wait=true", {"language_id": 71})
    assert r.status_code == 422 and "source_code" in r.json()
    r = post(srv, "/submissions?wait=true", {"source_code": "1", "language_id": 71, "cpu_time_limit": -1})
    assert r.status_code == 422 and "cpu_time_limit" in r.json()
