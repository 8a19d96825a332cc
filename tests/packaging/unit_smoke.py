"""Run inside boot_unit.sh: does execbox.service make working sandboxes?
Prints OK, or FAIL and what failed; then what the sandbox sees of /dev."""
import json
import sys
import urllib.error
import urllib.request

T = open("/var/lib/execbox/token").read().strip()
B = "http://127.0.0.1:8000"

def call(method, path, body=None, timeout=60):
    req = urllib.request.Request(B + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + T, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")

fails = []
def check(name, ok, detail=""):
    if not ok:
        fails.append(f"{name}: {detail}"[:300])

st, sb = call("POST", "/v1/sandboxes", {})
check("create", st in (200, 201), sb)
sid = sb.get("id") if isinstance(sb, dict) else None
if sid:
    st, r = call("POST", f"/v1/sandboxes/{sid}/exec", {"cmd": "id -u; python3 -c 'print(6*7)'; echo hi > /tmp/x && cat /tmp/x; node -e 'console.log(1+1)'; hostname"})
    out = r.get("stdout", "") if isinstance(r, dict) else ""
    check("exec", st == 200 and "1000\n42\nhi\n2\n" in out, r)
    st, r = call("POST", f"/v1/sandboxes/{sid}/exec", {"cmd": "ls /dev; cat /proc/self/status | grep -i nonewprivs; ls /sys 2>&1 | head -2"})
    info = r.get("stdout", "") if isinstance(r, dict) else r
    st, r = call("POST", f"/v1/sandboxes/{sid}/sessions", {"language": "python"})
    check("session", st in (200, 201), r)
    ses = r.get("id") or r.get("session_id") if isinstance(r, dict) else None
    if ses:
        st, r = call("POST", f"/v1/sandboxes/{sid}/sessions/{ses}/run", {"code": "import numpy as np; print(int(np.arange(7).sum()*2))"}, timeout=120)
        check("session_run", st == 200 and "42" in json.dumps(r), r)
    st, r = call("POST", f"/v1/sandboxes/{sid}/sessions", {"language": "javascript"})
    ses = r.get("id") or r.get("session_id") if isinstance(r, dict) else None
    check("js_session", st in (200, 201), r)
    if ses:
        st, r = call("POST", f"/v1/sandboxes/{sid}/sessions/{ses}/run", {"code": "console.log(6*7)"}, timeout=60)
        check("js_run", st == 200 and "42" in json.dumps(r), r)
    st, r = call("POST", f"/v1/sandboxes", {"limits": {"memory": "64M"}})
    mid = r.get("id") if isinstance(r, dict) else None
    if mid:
        st, r = call("POST", f"/v1/sandboxes/{mid}/exec", {"cmd": "python3 -c 'x = bytearray(200 << 20)'"})
        check("oom", st == 200 and r.get("status") in ("oom", "memory_limit", "killed") or "oom" in json.dumps(r).lower(), r)
        call("DELETE", f"/v1/sandboxes/{mid}")
    st, r = call("DELETE", f"/v1/sandboxes/{sid}")
    check("delete", st in (200, 204), r)
print("FAIL " + " | ".join(fails) if fails else "OK")
print("INFO " + json.dumps(info)[:400] if sid else "")
sys.exit(1 if fails else 0)
