"""The session drivers (src/drivers), run directly as the daemon runs them,
speaking the JSON-lines protocol of src/drivers/README.md. No sandbox needed.

Run: /usr/bin/python3 -m pytest -q tests/drivers   (or `make drivers-test`)
"""
import base64
import io
import json
import os
import select
import shutil
import signal
import statistics
import subprocess
import tempfile
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
PY_DRIVER = os.path.join(ROOT, 'src', 'drivers', 'python_driver.py')
NODE_DRIVER = os.path.join(ROOT, 'src', 'drivers', 'node_driver.js')
PYTHON, NODE = '/usr/bin/python3', '/usr/bin/node'
PY_FLAGS = ['-I']   # what the daemon passes; see test_python_flags
ARG_MAX = 48 * 1024


def sandbox_env(home):
    """The environment the daemon gives a driver (src/proc/env.c + sessions.c)."""
    return {
        'PATH': '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        'LANG': 'C.UTF-8', 'TERM': 'dumb', 'TMPDIR': '/tmp', 'SHELL': '/bin/bash', 'HOSTNAME': 'sandbox',
        'HOME': home, 'USER': 'user', 'LOGNAME': 'user', 'PYTHONUNBUFFERED': '1',
        'MPLBACKEND': 'module://matplotlib_inline.backend_inline', 'PYDEVD_DISABLE_FILE_VALIDATION': '1',
    }


class Driver:
    def __init__(self, argv, home, ready_timeout=60):
        self.home = home
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=sandbox_env(home), cwd=home)
        self.buf = b''
        self.lines = []       # every raw protocol line, for checks on the wire format
        self.next_id = 0
        t = time.monotonic()
        self.ready = self.event(ready_timeout)
        self.startup = time.monotonic() - t

    def stderr_tail(self):
        try:
            os.set_blocking(self.p.stderr.fileno(), False)
            return (self.p.stderr.read() or b'').decode('utf-8', 'replace')[-3000:]
        except Exception:
            return ''

    def event(self, timeout=30):
        deadline = time.monotonic() + timeout
        fd = self.p.stdout.fileno()
        while b'\n' not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError('no event within %ss; stderr: %s' % (timeout, self.stderr_tail()))
            r, _, _ = select.select([fd], [], [], left)
            if r:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise EOFError('driver exited (%s); stderr: %s' % (self.p.poll(), self.stderr_tail()))
                self.buf += chunk
        line, self.buf = self.buf.split(b'\n', 1)
        self.lines.append(line)
        line.decode('utf-8')   # strict UTF-8 on the wire
        assert b'\\u0000' not in line.replace(b'\\\\', b''), 'NUL escapes break jansson'
        ev = json.loads(line)
        assert isinstance(ev, dict) and isinstance(ev.get('type'), str), line
        return ev

    def send(self, **req):
        self.p.stdin.write((json.dumps(req) + '\n').encode())
        self.p.stdin.flush()

    def request(self, op, timeout=30, **kw):
        """Send one request; return its events, up to its done (or variable)."""
        self.next_id += 1
        rid = self.next_id
        self.send(op=op, id=rid, **kw)
        return self.collect(rid, timeout)

    def collect(self, rid, timeout=30):
        evs = []
        while True:
            ev = self.event(timeout)
            if ev.get('id') != rid:
                continue   # late output of an earlier request, or another request's
            evs.append(ev)
            if ev['type'] in ('done', 'variable'):
                return evs

    def run(self, code, timeout=30):
        return self.request('run', timeout, code=code)

    def var(self, name):
        return self.request('variable', name=name)[-1]

    def close(self, timeout=10):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise


def text(evs, name='stdout'):
    return ''.join(e['text'] for e in evs if e['type'] == 'stream' and e['name'] == name)


def of(evs, t):
    return [e for e in evs if e['type'] == t]


def done(evs):
    assert evs[-1]['type'] == 'done', evs
    return evs[-1]


@pytest.fixture
def home():
    d = tempfile.mkdtemp(prefix='xb-drv-home-')
    yield d
    shutil.rmtree(d, ignore_errors=True)


def start_python(home, flags=PY_FLAGS, mode=('python',), timeout=60):
    with open(PY_DRIVER) as f:
        src = f.read()
    return Driver([PYTHON] + flags + ['-c', src] + list(mode), home, timeout)


def start_node(home):
    with open(NODE_DRIVER) as f:
        src = f.read()
    return Driver([NODE, '-e', src], home)


@pytest.fixture
def py(home):
    d = start_python(home)
    yield d
    if d.p.poll() is None:
        assert d.close() == 0


@pytest.fixture(scope='module')
def pym():
    """One python session shared by the read-only tests of this module."""
    h = tempfile.mkdtemp(prefix='xb-drv-home-')
    d = start_python(h)
    yield d
    d.close()
    shutil.rmtree(h, ignore_errors=True)


def test_driver_sources_fit_in_one_argument():
    for p in (PY_DRIVER, NODE_DRIVER):
        assert os.path.getsize(p) < ARG_MAX, p
        with open(p, 'rb') as f:
            assert b'\0' not in f.read()


# ------------------------------------------------------------------ python ----

def test_python_ready(pym):
    r = pym.ready
    assert r['type'] == 'ready' and r['language'] == 'python' and r['implementation'] == 'ipython'
    assert r['execution_count'] == 0 and r['version'].startswith('3.')


@pytest.mark.parametrize('flags', [['-I'], ['-I', '-S'], ['-E', '-s'], []])
def test_python_flags(home, flags):
    d = start_python(home, flags)
    try:
        evs = d.run('import numpy, IPython, sys; sys.path[0] == "", 1 + 1')
        assert of(evs, 'result')[0]['data']['text/plain'] == '(True, 2)'
    finally:
        assert d.close() == 0


def test_python_state_persists_and_counts(py):
    assert done(py.run('x = 41'))['execution_count'] == 1
    evs = py.run('x + 1')
    assert of(evs, 'result')[0]['data'] == {'text/plain': '42'}
    assert of(evs, 'result')[0]['execution_count'] == 2
    assert done(evs) == {'type': 'done', 'id': py.next_id, 'status': 'ok', 'execution_count': 2}
    assert done(py.run('   '))['execution_count'] == 2     # empty cells do not count (as in Jupyter)
    assert done(py.run('1/0'))['execution_count'] == 3     # failed ones do


def test_python_print_and_result_in_order(pym):
    evs = pym.run('import sys\nfor i in range(3): print(i)\nprint("e", file=sys.stderr)\n'
                  'print("no newline", end="")\n"last"')
    kinds = [e['type'] for e in evs]
    assert kinds.index('result') > max(i for i, k in enumerate(kinds) if k == 'stream')
    assert kinds[-1] == 'done' and kinds[-2] == 'result'
    assert text(evs) == '0\n1\n2\nno newline'
    assert text(evs, 'stderr') == 'e\n'
    assert of(evs, 'result')[0]['data']['text/plain'] == "'last'"


def test_python_semicolon_hides_result(pym):
    assert not of(pym.run('1 + 1;'), 'result')


def test_python_subprocess_and_fd_output_captured(pym):
    evs = pym.run('import os, subprocess\nos.system("echo hi")\nos.write(1, b"raw fd\\n")\n'
                  'subprocess.run(["sh", "-c", "echo to-err >&2"])\nprint("py")\n'
                  'print(\'{"type":"done","id":1}\')')
    assert text(evs) == 'hi\nraw fd\npy\n{"type":"done","id":1}\n'
    assert text(evs, 'stderr') == 'to-err\n'
    assert done(evs)['status'] == 'ok'


def test_python_large_output(pym):
    evs = pym.run('for i in range(100000): print(i)\n"end"', timeout=60)
    out = text(evs)
    assert out.count('\n') == 100000 and out.endswith('99999\n')
    assert evs[-2]['type'] == 'result'


def test_python_display_dataframe(pym):
    evs = pym.run('import pandas as pd\ndf = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})\ndisplay(df)\ndf')
    d = of(evs, 'display')[0]
    assert '<table' in d['data']['text/html'] and 'a' in d['data']['text/plain']
    assert d['metadata'] == {}
    r = of(evs, 'result')[0]
    assert '<table' in r['data']['text/html']


def test_python_rich_mimes(pym):
    evs = pym.run('from IPython.display import SVG, Markdown, Latex, JSON, HTML, Image, display\n'
                  'display(SVG(\'<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>\'))\n'
                  'display(Markdown("**b**")); display(Latex("$x$")); display(JSON({"k": [1, 2]}))\n'
                  'display(HTML("<i>i</i>"))\n'
                  'display({"text/plain": "raw"}, raw=True)')
    ds = [e['data'] for e in of(evs, 'display')]
    assert 'image/svg+xml' in ds[0] and ds[1]['text/markdown'] == '**b**' and ds[2]['text/latex'] == '$x$'
    assert ds[3]['application/json'] == {'k': [1, 2]} and ds[4]['text/html'] == '<i>i</i>'
    assert ds[5] == {'text/plain': 'raw'}
    assert all('text/plain' in d for d in ds)


def check_png(b64):
    raw = base64.b64decode(b64, validate=True)
    assert raw[:8] == b'\x89PNG\r\n\x1a\n'
    from PIL import Image
    im = Image.open(io.BytesIO(raw))
    im.load()
    assert im.size[0] > 50 and im.size[1] > 50
    import matplotlib.image
    assert matplotlib.image.imread(io.BytesIO(raw), format='png').ndim == 3
    return im.size


def test_python_matplotlib_inline(py):
    evs = py.run('import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title("t")\nprint("drawn")')
    pngs = [e['data']['image/png'] for e in of(evs, 'display') if 'image/png' in e['data']]
    assert len(pngs) == 1
    check_png(pngs[0])
    assert text(evs) == 'drawn\n'
    # plt.show() inside a cell, two figures, the object API: all come back, and all are closed after.
    evs = py.run('plt.plot([1, 2]); plt.show()\nfig, ax = plt.subplots()\nax.bar([1, 2], [3, 4])\nNone')
    pngs = [e['data']['image/png'] for e in of(evs, 'display') if 'image/png' in e['data']]
    assert len(pngs) == 2
    for p in pngs:
        check_png(p)
    assert of(py.run('len(plt.get_fignums())'), 'result')[0]['data']['text/plain'] == '0'
    # A Figure as the cell's value is a result with a PNG.
    evs = py.run('from matplotlib.figure import Figure\nf = Figure()\nf.add_subplot().plot([0, 1])\nf')
    check_png(of(evs, 'result')[0]['data']['image/png'])


def test_python_exception_traceback(pym):
    evs = pym.run('def f(x):\n    return 1 / x\nf(0)')
    err = of(evs, 'error')[0]
    assert err['ename'] == 'ZeroDivisionError' and err['evalue'] == 'division by zero'
    tb = '\n'.join(err['traceback'])
    assert '\x1b' not in tb and 'return 1 / x' in tb and 'f(0)' in tb
    assert done(evs)['status'] == 'error'
    evs = pym.run('def g(:\n  pass')
    err = of(evs, 'error')[0]
    assert err['ename'] == 'SyntaxError' and '\x1b' not in ''.join(err['traceback'])
    assert done(evs)['status'] == 'error'
    # sys.exit and exit() end the cell, not the session.
    evs = pym.run('import sys; sys.exit(3)')
    assert of(evs, 'error')[0]['ename'] == 'SystemExit'
    evs = pym.run('exit()\n5')
    assert of(evs, 'result')[0]['data']['text/plain'] == '5' and 'does not end' in text(evs, 'stderr')
    assert of(pym.run('6'), 'result')[0]['data']['text/plain'] == '6'


def test_python_input_is_an_error(pym):
    evs = pym.run('input("name? ")')
    assert of(evs, 'error')[0]['ename'] == 'StdinNotImplementedError'


def test_python_interrupt(py):
    py.run('state = "kept"')
    py.next_id += 1
    rid = py.next_id
    py.send(op='run', id=rid, code='import time\nprint("start", flush=True)\nwhile True:\n    time.sleep(0)')
    assert py.event()['text'] == 'start\n'
    py.p.send_signal(signal.SIGINT)
    evs = py.collect(rid, 10)
    assert of(evs, 'error')[0]['ename'] == 'KeyboardInterrupt'
    assert done(evs)['status'] == 'interrupted'
    # a sleep, a C call, is interrupted too
    py.next_id += 1
    py.send(op='run', id=py.next_id, code='import time; time.sleep(100)')
    time.sleep(0.3)
    py.p.send_signal(signal.SIGINT)
    assert done(py.collect(py.next_id, 10))['status'] == 'interrupted'
    # idle SIGINTs are ignored
    for _ in range(3):
        py.p.send_signal(signal.SIGINT)
        time.sleep(0.05)
    evs = py.run('state')
    assert of(evs, 'result')[0]['data']['text/plain'] == "'kept'"


def test_python_group_interrupt_stops_os_system(home):
    """glibc's system() ignores SIGINT in the caller while its child runs, so
    only a SIGINT to the process group (what jupyter_client sends, and what
    the daemon should send) stops os.system("sleep 100")."""
    with open(PY_DRIVER) as f:
        src = f.read()
    d = Driver.__new__(Driver)
    d.home, d.buf, d.lines, d.next_id = home, b'', [], 0
    d.p = subprocess.Popen([PYTHON] + PY_FLAGS + ['-c', src, 'python'], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=sandbox_env(home), cwd=home,
                           start_new_session=True)
    try:
        assert d.event(60)['type'] == 'ready'
        d.next_id = 1
        d.send(op='run', id=1, code='import os\nprint("go", flush=True)\nos.system("sleep 100")\n"after"')
        assert d.event()['text'] == 'go\n'
        time.sleep(0.3)
        os.killpg(d.p.pid, signal.SIGINT)
        evs = d.collect(1, 10)
        assert done(evs)['status'] in ('interrupted', 'ok')   # the child died of SIGINT either way
        evs = d.run('2')
        assert of(evs, 'result')[0]['data']['text/plain'] == '2'
    finally:
        d.close()


def test_python_output_between_cells_goes_to_next(py):
    py.run('import threading; threading.Timer(0.2, print, ["later"]).start()')
    time.sleep(0.6)
    evs = py.run('1')
    assert text(evs) == 'later\n'


def test_python_variables(pym):
    pym.run('import pandas as pd, numpy as np\nvi = 7\nvl = [1, "a", None, 2.5]\n'
            'vdf = pd.DataFrame({"a": [1, 2]})\nclass O: pass\nvo = O()\nvnan = float("nan")\n'
            'vbig = 2**80\nvarr = np.arange(3)\nvt = (1, 2)\nvs = "x\\0y"')
    v = pym.var('vi')
    assert v['found'] and v['value_type'] == 'int' and v['repr'] == '7' and v['json'] == 7
    assert v['type'] == 'variable' and v['name'] == 'vi'
    v = pym.var('vl')
    assert v['value_type'] == 'list' and v['json'] == [1, 'a', None, 2.5]
    v = pym.var('vdf')
    assert v['value_type'] == 'pandas.core.frame.DataFrame' and 'a' in v['repr']
    assert v['json'] == {'columns': ['a'], 'index': [0, 1], 'data': [[1], [2]]}
    v = pym.var('vo')
    assert v['found'] and v['value_type'].endswith('O') and v['json'] is None and '<' in v['repr']
    assert pym.var('vnan')['json'] is None
    assert pym.var('vbig')['json'] is None and pym.var('vbig')['repr'] == str(2 ** 80)
    assert pym.var('varr')['json'] == [0, 1, 2]
    assert pym.var('vt')['json'] == [1, 2]
    assert pym.var('vs')['json'] == 'x\ufffdy'
    assert pym.var('vdf.shape')['json'] == [2, 1]
    assert pym.var('missing') == {'type': 'variable', 'id': pym.next_id, 'name': 'missing', 'found': False}
    assert pym.var('1+1')['found'] is False
    pym.run('big = "x" * 200000')
    assert len(pym.var('big')['repr'].encode()) <= 65536


def test_python_preload(py):
    evs = py.request('preload', modules=['numpy', 'pandas', 'matplotlib.pyplot', 'no_such_module'])
    assert done(evs)['status'] == 'error' and of(evs, 'error')[0]['ename'] == 'ModuleNotFoundError'
    assert done(evs)['execution_count'] == 0
    evs = py.run('np.__name__, pd.__name__, plt.__name__, numpy is np')
    assert of(evs, 'result')[0]['data']['text/plain'] == "('numpy', 'pandas', 'matplotlib.pyplot', True)"


def test_python_preload_id_zero_before_ready(home):
    """The daemon sends preload with id 0 right after spawning, before ready."""
    with open(PY_DRIVER) as f:
        src = f.read()
    p = subprocess.Popen([PYTHON] + PY_FLAGS + ['-c', src, 'python'], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=sandbox_env(home), cwd=home)
    p.stdin.write(b'{"op":"preload","id":0,"modules":["numpy"]}\n{"op":"run","id":1,"code":"np.e > 2"}\n')
    p.stdin.close()
    evs = [json.loads(line) for line in p.stdout]
    assert p.wait(30) == 0
    assert evs[0]['type'] == 'ready'
    assert {'type': 'done', 'id': 0, 'status': 'ok', 'execution_count': 0} in evs
    assert {'type': 'result', 'id': 1, 'execution_count': 1, 'data': {'text/plain': 'True'}, 'metadata': {}} in evs


def test_python_wire_is_clean(pym):
    evs = pym.run('print("nul:\\0:"); "\\ud800", float("nan")')
    assert text(evs) == 'nul:\ufffd:\n'
    assert of(evs, 'result')[0]['data']['text/plain'] == "('\\ud800', nan)"
    evs = pym.run('from IPython.display import JSON; display(JSON({"n": 2**70, "z": "\\0"}))')
    assert of(evs, 'display')[0]['data']['application/json'] == {'n': str(2 ** 70), 'z': '\ufffd'}


def test_python_top_level_await_and_cwd_imports(py):
    with open(os.path.join(py.home, 'mymod.py'), 'w') as f:
        f.write('VALUE = 11\n')
    evs = py.run('import asyncio, mymod\nawait asyncio.sleep(0.01)\nmymod.VALUE')
    assert of(evs, 'result')[0]['data']['text/plain'] == '11'


def test_python_unknown_op(pym):
    evs = pym.request('frobnicate')
    assert of(evs, 'error')[0]['ename'] == 'ProtocolError' and done(evs)['status'] == 'error'


def test_python_eof_exits_zero(home):
    d = start_python(home)
    d.run('import threading, time; threading.Thread(target=time.sleep, args=(60,)).start()')
    t = time.monotonic()
    assert d.close() == 0
    assert time.monotonic() - t < 5


def test_python_warm_round_trip(pym, capsys):
    for _ in range(20):
        pym.run('1+1')
    samples = []
    for _ in range(200):
        t = time.perf_counter()
        evs = pym.run('1+1')
        samples.append(time.perf_counter() - t)
        assert evs[-2]['data']['text/plain'] == '2'
    med = statistics.median(samples) * 1000
    p90 = sorted(samples)[179] * 1000
    with capsys.disabled():
        print('\n[drivers] python warm `1+1` round trip: median %.3f ms, p90 %.3f ms (200 runs); '
              'startup to ready %.0f ms' % (med, p90, pym.startup * 1000))
    assert med < 20


# -------------------------------------------------------------------- bash ----

@pytest.fixture
def sh(home):
    d = start_python(home, mode=('bash',))
    yield d
    if d.p.poll() is None:
        assert d.close() == 0


def test_bash_ready(sh):
    r = sh.ready
    assert r['language'] == 'bash' and r['implementation'] == 'bash' and r['version'].startswith('5')
    assert r['execution_count'] == 0 and r['cwd'] == sh.home


def test_bash_state_persists(sh):
    evs = sh.run('mkdir -p sub/dir && cd sub\nexport GREETING=hello\ngreet() { echo "$GREETING $1"; }\n'
                 'declare -A m=([k]=v)')
    d = done(evs)
    assert d['exit_code'] == 0 and d['status'] == 'ok' and d['cwd'] == os.path.join(sh.home, 'sub')
    assert text(evs) == ''
    evs = sh.run('cd dir; greet world; echo ${m[k]}; pwd')
    assert text(evs) == 'hello world\nv\n%s\n' % os.path.join(sh.home, 'sub', 'dir')
    assert done(evs)['cwd'] == os.path.join(sh.home, 'sub', 'dir')
    assert done(evs)['execution_count'] == 2


def test_bash_exit_codes_and_stderr(sh):
    evs = sh.run('echo out; echo err >&2; (exit 7)')
    d = done(evs)
    assert d['exit_code'] == 7 and d['status'] == 'error'
    assert text(evs) == 'out\nerr\n'   # the pty merges stderr into stdout
    assert done(sh.run('false'))['exit_code'] == 1
    evs = sh.run('echo $?')   # $? is the previous cell's status
    assert text(evs) == '1\n' and done(evs)['exit_code'] == 0
    assert done(sh.run('ls /nonexistent-dir'))['exit_code'] == 2


def test_bash_output_exact(sh):
    """No echo of the command, no prompt, no marker, "\\n" not "\\r\\n", bytes kept."""
    evs = sh.run('printf "a\\nb"; printf "\\x1eXBfake\\n"; echo "é€"')
    assert text(evs) == 'a\nb\x1eXBfake\né€\n'
    evs = sh.run('cat <<"EOF"\nline $1\nEOF\nfor i in 1 2; do\n  echo "$i"\ndone')
    assert text(evs) == 'line $1\n1\n2\n'
    evs = sh.run('head -c 300000 /dev/zero | tr "\\0" x; echo')
    assert text(evs) == 'x' * 300000 + '\n'


def test_bash_xtrace_shows_only_user_commands(sh):
    evs = sh.run('set -x; echo traced')
    assert text(evs) == '++ echo traced\ntraced\n'
    evs = sh.run('set +x; echo quiet')
    assert text(evs) == '++ set +x\nquiet\n'


def test_bash_output_redirection_does_not_hide_completion(sh):
    evs = sh.run('exec 3>&1 >/dev/null; echo hidden')
    assert done(evs)['exit_code'] == 0 and text(evs) == ''
    evs = sh.run('exec >&3 3>&-; echo back')
    assert text(evs) == 'back\n'


def test_bash_busy_input_interrupt(sh):
    sh.next_id += 1
    rid = sh.next_id
    sh.send(op='run', id=rid, code='read -p "name? " who; echo "hi $who"; sleep 100; echo not-reached')
    assert sh.event()['text'] == 'name? '
    evs = sh.run('echo second')   # refused while the first runs
    assert evs[0]['type'] == 'error' and evs[0]['ename'] == 'Busy' and 'still running' in evs[0]['evalue']
    assert evs[0]['traceback'] == [] and done(evs)['status'] == 'error'
    sh.send(op='input', id=100, data='ada\n')
    assert sh.event()['text'] == 'hi ada\n'
    time.sleep(0.2)
    sh.send(op='interrupt', id=101)
    evs = sh.collect(rid, 10)
    d = done(evs)
    assert d['status'] == 'interrupted' and d['exit_code'] == 130
    assert 'not-reached' not in text(evs)
    evs = sh.run('echo after; echo $who')
    assert text(evs) == 'after\nada\n' and done(evs)['exit_code'] == 0


def test_bash_interrupt_builtin_loop_and_sigint(sh):
    sh.next_id += 1
    rid = sh.next_id
    sh.send(op='run', id=rid, code='echo go; while :; do :; done')
    assert sh.event()['text'] == 'go\n'
    sh.p.send_signal(signal.SIGINT)   # a SIGINT to the driver is an interrupt too
    assert done(sh.collect(rid, 10))['status'] == 'interrupted'
    sh.send(op='interrupt', id=200)   # idle: nothing happens
    sh.send(op='input', id=201, data='echo should-not-run\n')   # idle: dropped
    time.sleep(0.2)
    evs = sh.run('echo ok')
    assert text(evs) == 'ok\n'


def test_bash_leftover_input_is_not_run(sh):
    sh.next_id += 1
    rid = sh.next_id
    sh.send(op='run', id=rid, code='read a; echo "a=$a"')
    time.sleep(0.2)
    sh.send(op='input', id=300, data='one\ntouch SHOULD_NOT_EXIST\npartial')
    evs = sh.collect(rid, 10)
    assert text(evs) == 'a=one\n'
    evs = sh.run('ls; echo end')
    assert 'SHOULD_NOT_EXIST' not in text(evs) and text(evs).endswith('end\n')
    assert done(evs)['exit_code'] == 0


def test_bash_variables(sh):
    sh.run('s="a b"; declare -i n=5; arr=(x "y z"); declare -A m=([k]=v); fn() { :; }')
    assert sh.var('s') == {'type': 'variable', 'id': sh.next_id, 'name': 's', 'found': True,
                           'value_type': 'string', 'json': 'a b', 'repr': 'declare -- s="a b"'}
    assert sh.var('n')['json'] == 5
    assert sh.var('arr')['json'] == ['x', 'y z']
    assert sh.var('m')['json'] == {'k': 'v'}
    assert sh.var('fn')['value_type'] == 'function'
    assert sh.var('nope')['found'] is False
    assert sh.var('a;b')['found'] is False
    sh.run('false')
    assert text(sh.run('echo $?')) == '1\n'   # a lookup keeps $?


def test_bash_round_trip(sh, capsys):
    samples = []
    for i in range(60):
        t = time.perf_counter()
        evs = sh.run('echo hi')
        if i >= 10:
            samples.append(time.perf_counter() - t)
        assert text(evs) == 'hi\n'
    with capsys.disabled():
        print('\n[drivers] bash warm `echo hi` round trip: median %.3f ms (50 runs); startup to ready %.0f ms'
              % (statistics.median(samples) * 1000, sh.startup * 1000))


def test_bash_exit_ends_session(sh):
    evs = sh.run('echo bye; exit 4')
    d = done(evs)
    assert d['status'] == 'error' and d['exit_code'] == 4 and 'bash exited' in text(evs, 'stderr')
    assert sh.p.wait(10) == 4


# -------------------------------------------------------------------- node ----

@pytest.fixture
def js(home):
    d = start_node(home)
    yield d
    if d.p.poll() is None:
        assert d.close() == 0


def result(evs):
    r = of(evs, 'result')
    return r[0]['data']['text/plain'] if r else None


def test_node_ready(js):
    r = js.ready
    assert r['language'] == 'javascript' and r['implementation'] == 'node' and r['version'].startswith('20')


def test_node_state_persists(js):
    js.run('let x = 1')
    assert result(js.run('x + 1')) == '2'
    js.run('var v = 10; const c = 5; function f(a) { return a * c }; class K { k() { return "k" } }')
    assert result(js.run('f(v) + new K().k()')) == "'50k'"
    assert result(js.run('let x = 7; const c = 6; class K {}; x * c')) == '42'   # cells can be rerun
    assert done(js.run('var y = 1'))['execution_count'] == 6


def test_node_console_and_result_order(js):
    evs = js.run('console.log("a", {b: 1}); console.error("e"); process.stdout.write("w\\n");\n'
                 'require("fs").writeSync(1, "fd\\n"); [1, "two"]')
    assert text(evs) == 'a { b: 1 }\nw\nfd\n' and text(evs, 'stderr') == 'e\n'
    r = of(evs, 'result')[0]
    assert r['data'] == {'text/plain': "[ 1, 'two' ]", 'application/json': [1, 'two']}
    assert [e['type'] for e in evs][-2:] == ['result', 'done']


def test_node_child_processes_captured(js):
    evs = js.run('const cp = require("child_process");\n'
                 'cp.spawnSync("sh", ["-c", "echo inherited; echo e >&2"], {stdio: "inherit"}).status')
    assert text(evs) == 'inherited\n' and text(evs, 'stderr') == 'e\n' and result(evs) == '0'
    evs = js.run('cp.execSync("echo piped").toString()')
    assert result(evs) == "'piped\\n'"


def test_node_errors(js):
    evs = js.run('function g() { null.x }\ng()')
    err = of(evs, 'error')[0]
    assert err['ename'] == 'TypeError' and 'null' in err['evalue']
    tb = '\n'.join(err['traceback'])
    assert 'at g (cell[1]:1:' in tb and 'node:vm' not in tb and '[eval]' not in tb
    assert done(evs)['status'] == 'error'
    err = of(js.run('let = ;'), 'error')[0]
    assert err['ename'] == 'SyntaxError'
    err = of(js.run('throw 42'), 'error')[0]
    assert err['ename'] == 'Uncaught' and err['evalue'] == '42'
    err = of(js.run('await Promise.reject(new RangeError("r"))'), 'error')[0]
    assert err['ename'] == 'RangeError'


def test_node_top_level_await(js):
    evs = js.run('const r = await new Promise(res => setTimeout(() => { console.log("tick"); res(3) }, 50));\n'
                 'for (var i = 0; i < 2; i++) { await null }\nr * 2')
    assert result(evs) == '6' and text(evs) == 'tick\n'
    assert result(js.run('r + i')) == '5'
    assert result(js.run('{a: 1}')) == '{ a: 1 }'


def test_node_async_output_after_done_goes_to_next_cell(js):
    evs = js.run('setTimeout(() => console.log("late"), 100); "now"')
    assert result(evs) == "'now'" and text(evs) == ''
    time.sleep(0.4)
    assert text(js.run('1')) == 'late\n'
    js.run('setTimeout(() => { throw new Error("boom later") }, 10)')
    time.sleep(0.3)
    evs = js.run('"still alive"')
    assert 'boom later' in text(evs, 'stderr') and result(evs) == "'still alive'"


def test_node_interrupt(js):
    js.run('var kept = "yes"')
    js.next_id += 1
    rid = js.next_id
    js.send(op='run', id=rid, code='console.log("spin"); while (true) {}')
    time.sleep(0.5)
    js.p.send_signal(signal.SIGINT)
    evs = js.collect(rid, 10)
    assert done(evs)['status'] == 'interrupted' and of(evs, 'error')[0]['ename'] == 'KeyboardInterrupt'
    js.next_id += 1
    js.send(op='run', id=js.next_id, code='await new Promise(() => {})')
    time.sleep(0.3)
    js.p.send_signal(signal.SIGINT)
    assert done(js.collect(js.next_id, 10))['status'] == 'interrupted'
    js.p.send_signal(signal.SIGINT)   # idle
    time.sleep(0.1)
    assert result(js.run('kept')) == "'yes'"


def test_node_variables_and_display(js):
    js.run('let n = 3; const arr = [1, {a: "b"}]; const m = new Map([[1, 2]]); const big = 2 ** 70;'
           'const s = "x\\u0000\\ud800"')
    v = js.var('n')
    assert v == {'type': 'variable', 'id': js.next_id, 'name': 'n', 'found': True, 'value_type': 'number',
                 'repr': '3', 'json': 3}
    assert js.var('arr')['json'] == [1, {'a': 'b'}] and js.var('arr')['value_type'] == 'Array'
    v = js.var('m')
    assert v['value_type'] == 'Map' and v['json'] is None and 'Map(1)' in v['repr']
    assert js.var('big')['json'] is None
    assert js.var('s')['json'] == 'x\ufffd\ufffd'
    assert js.var('nope')['found'] is False and js.var('process.exit()')['found'] is False
    evs = js.run('display({k: 1}); display.html("<b>b</b>"); display.png(Buffer.from("89504e47", "hex"))')
    ds = [e['data'] for e in of(evs, 'display')]
    assert ds[0]['application/json'] == {'k': 1} and ds[1]['text/html'] == '<b>b</b>'
    assert ds[2]['image/png'] == base64.b64encode(bytes.fromhex('89504e47')).decode()


def test_node_require_from_cwd(js):
    os.makedirs(os.path.join(js.home, 'node_modules', 'localmod'))
    with open(os.path.join(js.home, 'node_modules', 'localmod', 'index.js'), 'w') as f:
        f.write('module.exports = 99;\n')
    assert result(js.run('require("localmod") + require("path").sep.length')) == '100'


def test_node_fallback_without_reopen(home):
    """stdout a socket: /proc/self/fd/1 cannot be reopened (ENXIO), so node keeps
    the protocol on fd 1 and captures process.stdout/stderr writes in JS."""
    import socket
    a, b = socket.socketpair()
    with open(NODE_DRIVER) as f:
        src = f.read()
    p = subprocess.Popen([NODE, '-e', src], stdin=subprocess.PIPE, stdout=b, stderr=subprocess.PIPE,
                         env=sandbox_env(home), cwd=home)
    b.close()
    lines = a.makefile('rb')
    assert json.loads(lines.readline())['type'] == 'ready'
    p.stdin.write(b'{"op":"run","id":1,"code":"console.log(1); console.error(2); 3"}\n')
    p.stdin.close()
    evs = [json.loads(lines.readline()) for _ in range(4)]
    assert [e['type'] for e in evs] == ['stream', 'stream', 'result', 'done']
    assert text(evs) == '1\n' and text(evs, 'stderr') == '2\n'
    assert p.wait(10) == 0 and b'captured in JS only' in p.stderr.read()
    a.close()


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which('setpriv'), reason='needs root and setpriv')
@pytest.mark.parametrize('mode', ['python', 'bash', 'javascript'])
def test_as_sandbox_user_with_daemon_pipes(home, mode):
    """As the daemon runs them: uid 1000, pipes made by another user and
    fchmod'ed 0666, so node can reopen them and capture child processes."""
    os.chown(home, 1000, 1000)
    ends = [os.pipe() for _ in range(3)]
    mine = [ends[0][1], ends[1][0], ends[2][0]]
    theirs = [ends[0][0], ends[1][1], ends[2][1]]
    for fd in theirs:
        os.fchmod(fd, 0o666)
    if mode == 'javascript':
        with open(NODE_DRIVER) as f:
            argv = [NODE, '-e', f.read()]
        code = 'require("child_process").spawnSync("id", ["-u"], {stdio: "inherit"}); 7'
    else:
        with open(PY_DRIVER) as f:
            argv = [PYTHON] + PY_FLAGS + ['-c', f.read(), 'bash' if mode == 'bash' else 'python']
        code = 'id -u' if mode == 'bash' else 'import os; os.system("id -u"); 7'
    p = subprocess.Popen(['setpriv', '--reuid', '1000', '--regid', '1000', '--clear-groups'] + argv,
                         stdin=theirs[0], stdout=theirs[1], stderr=theirs[2], env=sandbox_env(home), cwd=home)
    for fd in theirs:
        os.close(fd)
    with os.fdopen(mine[0], 'wb') as w, os.fdopen(mine[1], 'rb') as r, os.fdopen(mine[2], 'rb') as e:
        assert json.loads(r.readline())['type'] == 'ready'
        w.write(b'{"op":"run","id":1,"code":%s}\n' % json.dumps(code).encode())
        w.flush()
        evs = []
        while not evs or evs[-1]['type'] != 'done':
            evs.append(json.loads(r.readline()))
        w.close()
        assert text(evs) == '1000\n'
        if mode != 'bash':
            assert of(evs, 'result')[0]['data']['text/plain'] == '7'
        assert p.wait(10) == 0
        assert b'captured in JS only' not in e.read()


def test_node_eof_exits_zero(home):
    d = start_node(home)
    d.run('setInterval(() => {}, 1000)')
    assert d.close() == 0


def test_node_round_trip(js, capsys):
    samples = []
    for i in range(220):
        t = time.perf_counter()
        evs = js.run('1+1')
        if i >= 20:
            samples.append(time.perf_counter() - t)
        assert result(evs) == '2'
    with capsys.disabled():
        print('\n[drivers] node warm `1+1` round trip: median %.3f ms (200 runs); startup to ready %.0f ms'
              % (statistics.median(samples) * 1000, js.startup * 1000))


# ----------------------------------------------------------------- jupyter ----

def kernelspec_installed(name):
    r = subprocess.run([PYTHON, '-I', '-c', 'from jupyter_client.kernelspec import KernelSpecManager as K;'
                        'print(" ".join(K().find_kernel_specs()))'], capture_output=True, text=True)
    return name in r.stdout.split()


def test_jupyter_unknown_kernel(home):
    with open(PY_DRIVER) as f:
        src = f.read()
    p = subprocess.run([PYTHON] + PY_FLAGS + ['-c', src, 'jupyter', 'no-such-kernel'], capture_output=True,
                       env=sandbox_env(home), cwd=home, timeout=60, input=b'')
    assert p.returncode == 2
    ev = json.loads(p.stdout.decode().splitlines()[0])
    assert ev['type'] == 'fatal' and ev['message'].startswith('no such kernel: no-such-kernel; installed: ')


@pytest.mark.skipif(not kernelspec_installed('python3'),
                    reason='the python3 kernelspec (Debian python3-ipykernel) is not installed')
def test_jupyter_python3_kernel(home, capsys):
    k = start_python(home, mode=('jupyter', 'python3'), timeout=120)
    try:
        assert k.ready['implementation'] == 'python3' and k.ready['language'] == 'python'
        evs = k.run('x = 20\nprint("hi")\nimport os; os.system("echo sub")\nx + 1')
        assert result(evs) == '21' and 'hi\n' in text(evs) and done(evs)['execution_count'] == 1
        assert done(evs)['status'] == 'ok'
        evs = k.run('1/0')
        err = of(evs, 'error')[0]
        assert err['ename'] == 'ZeroDivisionError' and '\x1b' not in ''.join(err['traceback'])
        assert done(evs)['status'] == 'error'
        evs = k.run('import pandas as pd; display(pd.DataFrame({"a": [1]}))\n'
                    'import matplotlib.pyplot as plt; plt.plot([1, 2])')
        assert any('<table' in d['data'].get('text/html', '') for d in of(evs, 'display'))
        check_png([d for d in of(evs, 'display') if 'image/png' in d['data']][0]['data']['image/png'])
        v = k.var('x')
        assert v['found'] and v['value_type'] == 'int' and v['json'] == 20
        assert k.var('nope')['found'] is False
        k.next_id += 1
        rid = k.next_id
        k.send(op='run', id=rid, code='import time; print("sleeping", flush=True); time.sleep(100)')
        assert k.event(30)['text'] == 'sleeping\n'
        k.p.send_signal(signal.SIGINT)
        evs = k.collect(rid, 20)
        assert done(evs)['status'] == 'interrupted'
        assert result(k.run('x')) == '20'
        assert done(k.request('preload', modules=['numpy']))['status'] == 'ok'
        assert result(k.run('numpy.pi > 3 and np.e > 2')) == 'True'
        with capsys.disabled():
            print('\n[drivers] jupyter python3 kernel: startup to ready %.0f ms' % (k.startup * 1000))
    finally:
        assert k.close(30) == 0
