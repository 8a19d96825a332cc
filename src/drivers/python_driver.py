# execbox session driver: "python" (IPython in-process), "jupyter <kernel>"
# (any installed Jupyter kernel) and "bash" (an interactive bash on a pty).
# Run as: /usr/bin/python3 -I -c "<this file>" python | jupyter NAME | bash
# Requests arrive as JSON lines on stdin; events leave as JSON lines on the
# original stdout, which user code cannot reach. Protocol: src/drivers/README.md.
import os
import sys

if sys.flags.no_site:  # run with -S: Debian's dist-packages comes from site
    import site
    site.main()
import base64, codecs, fcntl, json, re, select, signal, threading, time  # noqa: E401

MODE = sys.argv[1] if len(sys.argv) > 1 else 'python'
ARG = sys.argv[2] if len(sys.argv) > 2 else ''
ANSI = re.compile(r'\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]')
MAIN = threading.get_ident()
PID = os.getpid()
IDLE_MAX = 1 << 20

# Private copies of the pipes (dup() is close-on-exec); fds 0-2 become the
# user's: /dev/null, and the diagnostics pipe until a mode captures them.
PROTO, REQ, DIAG = os.dup(1), os.dup(0), os.dup(2)
_nul = os.open(os.devnull, os.O_RDWR)
os.dup2(_nul, 0)
os.close(_nul)
os.dup2(DIAG, 1)


class S:
    cur = None        # the request id output belongs to; None while idle
    running = False   # user code runs in the main thread: SIGINT may raise there
    crit = 0          # the main thread writes a protocol line: defer SIGINT
    pending = False   # a SIGINT deferred by crit
    interrupt = False  # a SIGINT came while running
    idle = []         # output that came while idle, for the next request
    idle_n = 0
    idle_lost = 0


WLOCK = threading.Lock()   # one protocol line at a time
LOCK = threading.RLock()   # output capture state (S.cur, S.idle, captured pipes)


def diag(*a):
    try:
        os.write(DIAG, ('execbox driver: ' + ' '.join(map(str, a)) + '\n').encode('utf-8', 'replace'))
    except OSError:
        pass


def clean(v, depth=0):
    """A copy of v that jansson accepts: no NUL, NaN, or integers past int64."""
    if isinstance(v, str):
        return v.replace('\0', '\ufffd')
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v if -2**63 <= v < 2**63 else str(v)
    if isinstance(v, float):
        return v if v == v and v not in (float('inf'), float('-inf')) else None
    if depth > 64:
        return None
    if isinstance(v, dict):
        return {clean(str(k)): clean(x, depth + 1) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [clean(x, depth + 1) for x in v]
    return clean(str(v))


def crit_exit():
    S.crit -= 1
    if S.pending and not S.crit and S.running:
        S.pending = False
        raise KeyboardInterrupt


def leave_if_copy():
    """A fork of the driver made by user code (os.fork, multiprocessing) may
    run user code, but never speaks the protocol or drains the captured
    output: back in the driver's code, it ends."""
    if os.getpid() != PID:
        os._exit(0)


def emit(o):
    leave_if_copy()
    main = threading.get_ident() == MAIN
    if main:
        S.crit += 1
    try:
        try:
            s = json.dumps(o, ensure_ascii=False, separators=(',', ':'), allow_nan=False)
        except (TypeError, ValueError):
            s = None
        if s is None or '\\u0000' in s:
            s = json.dumps(clean(o), ensure_ascii=False, separators=(',', ':'))
        b = memoryview((s + '\n').encode('utf-8', 'replace'))
        with WLOCK:
            while b:
                try:
                    b = b[os.write(PROTO, b):]
                except InterruptedError:
                    pass
    except OSError:  # the daemon is gone
        os._exit(1)
    finally:
        if main:
            crit_exit()


def out(name, text):
    """Output for the current request, or kept for the next one while idle."""
    if S.cur is not None:
        emit({'type': 'stream', 'id': S.cur, 'name': name, 'text': text})
    elif S.idle_n < IDLE_MAX:
        S.idle.append((name, text))
        S.idle_n += len(text)
    else:
        S.idle_lost += len(text)


def begin(rid):
    """Output from now on belongs to request rid; first what came while idle."""
    with LOCK:
        S.cur = rid
        for name, text in S.idle:
            out(name, text)
        if S.idle_lost:
            out('stderr', '[execbox: %d characters printed between cells were dropped]\n' % S.idle_lost)
        S.idle, S.idle_n, S.idle_lost = [], 0, 0


def finish(rid, status, count, **extra):
    with LOCK:
        S.cur = None
    emit(dict({'type': 'done', 'id': rid, 'status': status, 'execution_count': count}, **extra))


def error(rid, ename, evalue, tb=()):
    emit({'type': 'error', 'id': rid, 'ename': ename, 'evalue': evalue,
          'traceback': [ANSI.sub('', t) for t in tb]})


def bundle(d):
    """A display_data bundle as JSON: bytes base64, text/plain always."""
    o = {}
    for k, v in (d or {}).items():
        if isinstance(v, (bytes, bytearray, memoryview)):
            v = base64.b64encode(v).decode('ascii')
        elif k.startswith('image/') and k != 'image/svg+xml' and isinstance(v, str):
            v = (v.split(',', 1)[1] if v.startswith('data:') else v).replace('\n', '')
        o[str(k)] = v if isinstance(v, str) else clean(v)
    if 'text/plain' not in o:
        o['text/plain'] = '<%s>' % ', '.join(o) if o else ''
    return o


def read_requests(handle):
    f = os.fdopen(REQ, 'rb', buffering=1 << 16)
    while True:
        try:
            line = f.readline()
        except InterruptedError:
            continue
        if not line:
            return
        try:
            req = json.loads(line)
        except ValueError:
            if line.strip():
                diag('not a JSON request: %r' % line[:200])
            continue
        if isinstance(req, dict):
            handle(req)


# Variable inspection, shared with Python Jupyter kernels (sent to them as source).
VARSRC = r'''
def _xb_var(ns, name):
    import json, re
    if not isinstance(name, str) or not re.fullmatch(r'[^\W\d]\w*(\.[^\W\d]\w*)*', name):
        return {'found': False}
    parts = name.split('.')
    if parts[0] not in ns:
        return {'found': False}
    o = ns[parts[0]]
    try:
        for p in parts[1:]:
            o = getattr(o, p)
    except Exception:
        return {'found': False}
    t = type(o)
    tn = t.__qualname__ if t.__module__ == 'builtins' else t.__module__ + '.' + t.__qualname__
    try:
        r = repr(o)
    except Exception as e:
        r = '<repr failed: %s: %s>' % (type(e).__name__, e)
    if len(r) > 16384:
        r = r.encode('utf-8', 'replace')[:65536].decode('utf-8', 'ignore')
    j = None
    try:
        top = t.__module__.split('.')[0]
        v = o
        if top == 'pandas' and hasattr(o, 'to_json') and getattr(o, 'size', 0) <= 200000:
            v = json.loads(o.to_json(orient='split', date_format='iso', default_handler=str))
        elif top == 'numpy' and hasattr(o, 'tolist') and getattr(o, 'size', 1) <= 200000:
            v = o.tolist()
        elif top in ('pandas', 'numpy') or (hasattr(o, '__len__') and len(o) > 200000):
            raise ValueError
        s = json.dumps(v, allow_nan=False)
        if len(s) <= 1 << 20:
            def pint(x):
                i = int(x)
                if not -2**63 <= i < 2**63:
                    raise ValueError
                return i
            j = json.loads(s, parse_int=pint)
    except Exception:
        j = None
    return {'found': True, 'value_type': tn, 'repr': r, 'json': j}

def _xb_var_json(ns, name):
    import json
    return json.dumps(_xb_var(ns, name))
'''
exec(VARSRC)
NAME_RE = re.compile(r'[A-Za-z_][A-Za-z0-9_.]*')
ALIASES = {'numpy': 'np', 'pandas': 'pd', 'matplotlib.pyplot': 'plt'}


def user_paths():
    """What `python3 -c` would give user code: cwd first, PYTHONPATH, user site."""
    extra = [''] + [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]
    if sys.flags.isolated or sys.flags.no_user_site:
        try:
            import site
            u = site.getusersitepackages()
            if os.path.isdir(u):
                extra.append(u)
        except Exception:
            pass
    sys.path[:0] = [p for p in extra if p not in sys.path]


# ---------------------------------------------------------------- python ----

class Cap:
    """fd 1 or 2 as a pipe we drain: prints, os.write and subprocesses alike."""

    def __init__(self, fd, name):
        r, w = os.pipe()
        try:
            fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ: room for C code holding the GIL
        except OSError:
            pass
        os.dup2(w, fd)
        os.close(w)
        os.set_blocking(r, False)
        self.r, self.name, self.eof = r, name, False
        self.dec = codecs.getincrementaldecoder('utf-8')('replace')

    def drain(self, most=64):
        """Read what is there (call with LOCK held); at most `most` 64 KiB reads."""
        parts, n = [], 0
        while n < most:
            try:
                b = os.read(self.r, 65536)
            except (BlockingIOError, InterruptedError):
                break
            if not b:
                self.eof = True
                break
            parts.append(b)
            n += 1
            if n % 16 == 0:
                self._out(parts)
                parts = []
        self._out(parts)

    def _out(self, parts):
        if parts:
            t = self.dec.decode(b''.join(parts))
            if t:
                out(self.name, t)


CAPS = []


def pump():
    p = select.poll()
    for c in CAPS:
        p.register(c.r, select.POLLIN)
    while True:
        try:
            p.poll()
            time.sleep(0.002)  # let small writes gather into one event
            with LOCK:
                for c in CAPS:
                    if not c.eof:
                        c.drain(16)
                        if c.eof:
                            p.unregister(c.r)
        except Exception as e:
            diag('output pump:', repr(e))
            time.sleep(0.1)


def flush_streams():
    leave_if_copy()
    S.crit += 1
    try:
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except Exception:
                pass
        with LOCK:
            for c in CAPS:
                c.drain(256)
    finally:
        crit_exit()


def end_copies():
    """After an interrupted cell: end the forked copies of the driver that
    are still running user code, such as a fork bomb's copies born after the
    SIGINT. Stop them until a scan finds none running (so none can fork),
    then kill them, and reap our own, the dead ones too (zombies count
    against the sandbox's pids limit). Processes the cell started with exec
    (servers, subprocesses) have another command line and are left alone."""
    try:
        with open('/proc/self/cmdline', 'rb') as f:
            mine = f.read()
        with open('/proc/self/comm') as f:
            comm = '(%s)' % f.read().strip()
    except OSError:
        return
    me, stopped, ours = str(PID), set(), set()
    for _ in range(200):
        found = False
        for d in os.listdir('/proc'):
            if not d.isdigit() or int(d) == PID or int(d) in stopped:
                continue
            try:
                with open('/proc/%s/stat' % d) as f:
                    st = f.read()
                head, tail = st[:st.rindex(')') + 1], st[st.rindex(')') + 2:].split()
                state, ppid, pgrp = tail[0], tail[1], tail[2]
                if pgrp != me:
                    continue
                if state == 'Z':  # a copy that ended; ours to reap if we forked it
                    if ppid == me and head.endswith(comm):
                        ours.add(int(d))
                    continue
                with open('/proc/%s/cmdline' % d, 'rb') as f:
                    if f.read() != mine:
                        continue
                os.kill(int(d), signal.SIGSTOP)
            except (OSError, ValueError, IndexError):
                continue
            stopped.add(int(d))
            if ppid == me:
                ours.add(int(d))
            found = True
        if not found:
            break
    for p in stopped:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    for p in ours:
        try:
            os.waitpid(p, 0)
        except OSError:
            pass
    if stopped:
        diag('ended %d forked copies of the driver left running by the interrupted cell' % len(stopped))


def on_sigint_python(sig, frame):
    if os.getpid() != PID:  # a forked copy (see leave_if_copy) ends at once
        os._exit(128 + signal.SIGINT)
    if S.running:
        S.interrupt = True
        if S.crit:
            S.pending = True
        else:
            raise KeyboardInterrupt


def on_unraisable(u):
    """Python drops an exception raised where it cannot propagate, such as
    in an at-fork callback: logging's runs after every os.fork(), and a
    SIGINT that came during the fork is handled right there. Lost, the
    KeyboardInterrupt would leave a fork loop running; raise it again at
    the next line of the code that is running (the cell's, usually)."""
    if not (isinstance(u.exc_value, KeyboardInterrupt) and S.running and os.getpid() == PID
            and threading.get_ident() == MAIN):
        sys.__unraisablehook__(u)
        return
    marked = []
    f = sys._getframe(1)
    while f is not None:
        marked.append(f)
        f = f.f_back

    def disarm():
        sys.settrace(None)
        for m in marked:
            m.f_trace = None

    def tracer(frame, event, arg):
        if event == 'line' and any(frame is m for m in marked):
            disarm()
            if S.running:
                raise KeyboardInterrupt
        return None

    for m in marked:
        m.f_trace = tracer
    sys.settrace(lambda frame, event, arg: None)  # f_trace only runs while tracing is on


def no_input(*a, **k):
    from IPython.core.error import StdinNotImplementedError
    raise StdinNotImplementedError('input() is not available: execbox sessions have no stdin; '
                                   'put the data in the code or in a file')


# ---------------------------------------------------------------- charts ----
# A matplotlib figure's data (CHART_MIME): type, title, labels, units,
# ticks, scales and elements; many axes make a superchart.
CHART_MIME = 'application/vnd.execbox.chart+json'


def _cv(v):
    if isinstance(v, str):
        return v
    if hasattr(v, 'isoformat') or type(v).__name__ == 'datetime64':
        return v.isoformat() if hasattr(v, 'isoformat') else str(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    return int(f) if f.is_integer() and abs(f) < 2 ** 53 and not isinstance(v, float) else f


def _cunit(label):
    m = re.search(r'\s\((.*?)\)|\[(.*?)\]', label or '')
    return (m.group(1) or m.group(2)) if m else None


def _c2d(ax, c, swap=False):
    xl, yl = ax.get_xlabel() or None, ax.get_ylabel() or None
    if swap:
        xl, yl = yl, xl
    c.update(x_label=xl, y_label=yl, x_unit=_cunit(xl), y_unit=_cunit(yl))


def _ctick(axis, at):
    for loc, lab in zip(axis.get_ticklocs(), axis.get_ticklabels()):
        if abs(loc - at) < 1e-9 and lab.get_text():
            return lab.get_text()
    return str(_cv(at))


def _cbox(ax, c):
    from matplotlib.patches import PathPatch
    bs = [p.get_path().vertices for p in ax.patches if isinstance(p, PathPatch)]
    up = len({round(float(v[:, 0].max() - v[:, 0].min()), 6) for v in bs}) <= 1  # upright: values on y
    _c2d(ax, c, not up)
    for v in bs:
        x0, x1, q1, q3 = (float(t) for t in (v[:, 0].min(), v[:, 0].max(), v[:, 1].min(), v[:, 1].max()))
        if not up:
            x0, x1, q1, q3 = q1, q3, x0, x1
        e = {'label': _ctick(ax.xaxis if up else ax.yaxis, (x0 + x1) / 2), 'min': q1, 'first_quartile': q1,
             'median': None, 'third_quartile': q3, 'max': q3, 'outliers': []}
        for ln in ax.lines:
            xs, ys = [float(t) for t in ln.get_xdata()], [float(t) for t in ln.get_ydata()]
            if not up:
                xs, ys = ys, xs
            if not xs or not all(x0 - 1e-9 <= x <= x1 + 1e-9 for x in xs):
                continue
            if len(ys) == 2 and ys[0] == ys[1] and len(set(xs)) == 2:
                e['median'] = ys[0]
            elif len(ys) == 2 and len(set(xs)) == 1:
                e['min'], e['max'] = min(e['min'], *ys), max(e['max'], *ys)
            elif ln.get_linestyle() in ('None', ''):
                e['outliers'] = ys
        c['elements'].append(e)


def _cax(ax):
    from matplotlib.collections import PathCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import PathPatch, Rectangle, Wedge
    arts = list(ax.lines) + list(ax.collections) + list(ax.patches)
    kind = 'unknown'
    for k, cls in (('line', Line2D), ('scatter', PathCollection), ('pie', Wedge), ('bar', Rectangle),
                   ('box_and_whisker', (PathPatch, Line2D))):
        if arts and all(isinstance(a, cls) for a in arts):
            kind = k
            break
    c = {'type': kind, 'title': ax.get_title() or None, 'elements': []}
    if kind in ('line', 'scatter'):
        _c2d(ax, c)
        for n, axis, sc in (('x', ax.xaxis, ax.get_xscale()), ('y', ax.yaxis, ax.get_yscale())):
            conv = type(getattr(axis, 'get_converter', lambda: axis.converter)()).__name__
            c[n + '_ticks'] = [_cv(t) for t in axis.get_ticklocs()]
            c[n + '_tick_labels'] = [t.get_text() for t in axis.get_ticklabels()]
            c[n + '_scale'] = 'datetime' if 'Date' in conv else 'categorical' if 'StrCat' in conv else sc
        pts = [(ln, zip(ln.get_xdata(), ln.get_ydata())) for ln in ax.lines] if kind == 'line' else \
            [(pc, pc.get_offsets()) for pc in ax.collections]
        c['elements'] = [{'label': a.get_label(), 'points': [[_cv(x), _cv(y)] for x, y in xy]} for a, xy in pts]
    elif kind == 'bar':
        rects = [r for cont in ax.containers for r in cont]
        # Bars of one height and many widths lie down (barh).
        lying = len({round(r.get_height(), 9) for r in rects}) == 1 < len({round(r.get_width(), 9) for r in rects})
        _c2d(ax, c, lying)
        for cont in ax.containers:
            for r in cont:
                c['elements'].append({'label': _ctick(ax.yaxis, r.get_y() + r.get_height() / 2) if lying else
                                      _ctick(ax.xaxis, r.get_x() + r.get_width() / 2),
                                      'value': _cv(r.get_width() if lying else r.get_height()),
                                      'group': cont.get_label() or ''})
    elif kind == 'pie':
        c['elements'] = [{'label': w.get_label(), 'angle': round(abs(w.theta2 - w.theta1), 4), 'radius': _cv(w.r)}
                         for w in ax.patches]
    elif kind == 'box_and_whisker':
        _cbox(ax, c)
    return c


def chart_of(obj):
    """The chart of a matplotlib Figure, or None."""
    fm = sys.modules.get('matplotlib.figure')
    if fm is None or not isinstance(obj, fm.Figure):
        return None
    try:
        obj.draw_without_rendering()   # tick labels are set at draw time
        axes = [a for a in obj.get_axes() if a.get_visible()]
        if len(axes) == 1:
            return clean(_cax(axes[0]))
        sup = getattr(obj, '_suptitle', None)
        return clean({'type': 'superchart', 'title': sup.get_text() if sup else None,
                      'elements': [_cax(a) for a in axes]}) if axes else None
    except Exception as e:
        diag('chart extraction failed:', e)
        return None


def python_main():
    os.environ.setdefault('MPLBACKEND', 'module://matplotlib_inline.backend_inline')
    home = os.environ.get('HOME', '')
    if 'MPLCONFIGDIR' not in os.environ and not (home and os.access(home, os.W_OK)):
        os.environ['MPLCONFIGDIR'] = '/tmp/matplotlib-%d' % os.getuid()
    import builtins
    import importlib
    import IPython
    from traitlets.config import Config
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher

    class Hook(DisplayHook):
        """The cell's last expression: a "result" event, like execute_result."""

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            flush_streams()
            emit({'type': 'result', 'id': S.cur, 'execution_count': self.prompt_count,
                  'data': bundle(format_dict), 'metadata': clean(md_dict or {})})

        def finish_displayhook(self):
            pass

    class Pub(DisplayPublisher):
        """display() and inline figures: "display" events."""

        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kw):
            flush_streams()
            emit({'type': 'display', 'id': S.cur if S.cur is not None else 0,
                  'data': bundle(data), 'metadata': clean(metadata or {})})

        def clear_output(self, wait=False):
            pass

    class Shell(InteractiveShell):
        def ask_exit(self):  # exit() and quit(): the session lives on
            print('exit() does not end an execbox session; delete the session instead', file=sys.stderr)

        def _showtraceback(self, etype, evalue, stb):
            flush_streams()
            try:
                ev = str(evalue)
            except Exception:
                ev = '<unprintable %s>' % getattr(etype, '__name__', 'exception')
            tb = stb if isinstance(stb, list) else [str(stb)]
            # The KeyboardInterrupt is raised by our SIGINT handler: not the user's frame.
            tb = [t for t in tb if 'in on_sigint_python' not in t]
            error(S.cur, getattr(etype, '__name__', str(etype)), ev, tb)

    cfg = Config()
    cfg.HistoryManager.enabled = False
    cfg.InteractiveShell.colors = 'NoColor'
    shell = Shell.instance(config=cfg, displayhook_class=Hook, display_pub_class=Pub)
    from IPython.core.formatters import BaseFormatter
    from traitlets import Unicode

    class ChartFormatter(BaseFormatter):
        format_type = Unicode(CHART_MIME)

        def __call__(self, obj):
            return chart_of(obj)

    shell.display_formatter.formatters[CHART_MIME] = ChartFormatter(parent=shell.display_formatter)
    if CHART_MIME not in shell.display_formatter.active_types:
        shell.display_formatter.active_types = shell.display_formatter.active_types + [CHART_MIME]
    builtins.input = no_input
    user_paths()
    sys.stdout.flush()
    sys.stderr.flush()
    CAPS[:] = [Cap(1, 'stdout'), Cap(2, 'stderr')]
    for f in (sys.stdout, sys.stderr):
        try:
            f.reconfigure(line_buffering=True, errors='backslashreplace')
        except Exception:
            pass
    signal.signal(signal.SIGINT, on_sigint_python)
    sys.unraisablehook = on_unraisable
    threading.Thread(target=pump, name='xb-pump', daemon=True).start()

    def count():
        return shell.execution_count - 1

    def run(rid, code, env=None):
        flush_streams()
        begin(rid)
        status = 'ok'
        S.interrupt = S.pending = False
        old = env_swap(env or {})
        try:
            S.running = True
            r = shell.run_cell(code, store_history=True)
            S.running = False
            err = r.error_before_exec or r.error_in_exec
            if isinstance(err, KeyboardInterrupt):
                status = 'interrupted'
            elif err is not None:
                status = 'error'
        except KeyboardInterrupt:  # outside the user's code, e.g. in a hook
            S.running = False
            status = 'interrupted'
            error(rid, 'KeyboardInterrupt', '', ['KeyboardInterrupt'])
        finally:
            S.running = S.pending = False
            env_restore(old)
        shell.exit_now = False
        flush_streams()
        if status == 'interrupted':
            end_copies()
        finish(rid, status, count())

    def variable(rid, name):
        S.running = True
        try:
            ev = _xb_var(shell.user_ns, name)  # noqa: F821 (defined by exec(VARSRC))
        except BaseException as e:
            ev = {'found': False, 'error': '%s: %s' % (type(e).__name__, e)}
        finally:
            S.running = S.pending = False
        ev.update(type='variable', id=rid, name=name)
        emit(ev)

    def preload(rid, mods):
        begin(rid)
        status = 'ok'
        S.running = True
        try:
            for m in mods if isinstance(mods, list) else []:
                if not isinstance(m, str) or not NAME_RE.fullmatch(m):
                    continue
                try:
                    mod = importlib.import_module(m)
                    top = m.split('.')[0]
                    shell.user_ns[top] = sys.modules[top]
                    if m in ALIASES:
                        shell.user_ns[ALIASES[m]] = mod
                except (Exception, SystemExit) as e:
                    status = 'error'
                    error(rid, type(e).__name__, str(e), ['%s: %s' % (type(e).__name__, e)])
        except KeyboardInterrupt:
            status = 'interrupted'
        finally:
            S.running = S.pending = False
        flush_streams()
        finish(rid, status, count())

    def handle(req):
        op, rid = req.get('op'), req.get('id', 0)
        if op == 'run':
            run(rid, str(req.get('code', '')), cell_env(req))
        elif op == 'variable':
            variable(rid, req.get('name'))
        elif op == 'preload':
            preload(rid, req.get('modules'))
        elif op not in ('interrupt', 'input'):  # python is interrupted by SIGINT; it has no stdin
            unknown(rid, op, count())

    emit({'type': 'ready', 'language': 'python', 'implementation': 'ipython',
          'version': sys.version.split()[0], 'ipython_version': IPython.__version__, 'execution_count': 0})
    read_requests(handle)
    flush_streams()
    os._exit(0)


def cell_env(req):
    e = req.get('env')   # a cell's own environment, for that cell only
    return {str(k): str(v) for k, v in e.items()} if isinstance(e, dict) else {}


def env_swap(env):
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    return old


def env_restore(old):
    for k, v in old.items():
        os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)


def unknown(rid, op, count):
    error(rid, 'ProtocolError', 'unknown op %r' % (op,))
    finish(rid, 'error', count)


# --------------------------------------------------------------- jupyter ----

def jupyter_main(name):
    import ast
    import shutil
    import tempfile
    import zmq
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    ksm = KernelSpecManager()
    specs = sorted(ksm.find_kernel_specs())
    if name not in specs:
        emit({'type': 'fatal', 'message': 'no such kernel: %s; installed: %s' % (name, ', '.join(specs) or '(none)')})
        os._exit(2)
    spec = ksm.get_kernel_spec(name)
    d = tempfile.mkdtemp(prefix='xb-kernel-', dir='/tmp')
    os.environ.setdefault('MPLBACKEND', 'module://matplotlib_inline.backend_inline')
    os.environ.setdefault('PYDEVD_DISABLE_FILE_VALIDATION', '1')   # ipykernel's debugpy warning
    os.environ['JUPYTER_RUNTIME_DIR'] = d

    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except Exception:
        prctl = None

    def die_with_parent():
        if prctl:
            prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    km = KernelManager(kernel_name=name, kernel_spec_manager=ksm, transport='ipc',
                       ip=os.path.join(d, 'ipc'), connection_file=os.path.join(d, 'kernel.json'))

    def fatal(msg, code=1):
        emit({'type': 'fatal', 'message': msg})
        try:
            km.shutdown_kernel(now=True)
        except Exception:
            pass
        shutil.rmtree(d, ignore_errors=True)
        os._exit(code)

    try:
        km.start_kernel(stdout=DIAG, stderr=DIAG, cwd=os.getcwd(), preexec_fn=die_with_parent)
    except Exception as e:
        fatal('kernel %s did not start: %s: %s' % (name, type(e).__name__, e))
    session = km.session
    shell_s, iopub = km.connect_shell(), km.connect_iopub()
    poller = zmq.Poller()
    poller.register(shell_s, zmq.POLLIN)
    poller.register(iopub, zmq.POLLIN)

    def recv(sock):
        try:
            return session.recv(sock, mode=zmq.NOBLOCK)[1]
        except zmq.ZMQError:
            return None

    # Ready once the kernel answers kernel_info and iopub delivers (SUB joins late).
    info, seen_iopub, deadline, last = None, False, time.time() + 120, 0
    while not (info and seen_iopub):
        if time.time() > deadline:
            fatal('kernel %s did not answer within 120 s' % name)
        if not km.is_alive():
            fatal('kernel %s died while starting (its stderr is in the diagnostics)' % name)
        if time.time() - last > 0.5:
            session.send(shell_s, 'kernel_info_request', {})
            last = time.time()
        for sock in dict(poller.poll(100)):
            while True:
                m = recv(sock)
                if m is None:
                    break
                if sock is iopub:
                    seen_iopub = True
                elif m['msg_type'] == 'kernel_info_reply':
                    info = m['content']
    lang = (info.get('language_info') or {})
    state = {'count': 0}

    def on_sigint(sig, frame):
        if S.running:
            S.interrupt = True

    signal.signal(signal.SIGINT, on_sigint)

    def execute(rid, code, silent=False, user_expressions=None):
        """Run code in the kernel, relaying its output as rid's; returns the reply."""
        msg = session.send(shell_s, 'execute_request', {
            'code': code, 'silent': silent, 'store_history': not silent, 'allow_stdin': False,
            'user_expressions': user_expressions or {}, 'stop_on_error': False})
        mid = msg['header']['msg_id']
        reply, idle, checked = None, False, time.time()
        S.running, S.interrupt, asked = True, False, False
        try:
            while not (reply is not None and idle):
                if S.interrupt and not asked:
                    asked = True
                    try:
                        km.interrupt_kernel()
                    except Exception as e:
                        diag('interrupt_kernel:', e)
                ready = dict(poller.poll(100))
                while iopub in ready:
                    m = recv(iopub)
                    if m is None:
                        break
                    mine = m['parent_header'].get('msg_id') == mid
                    t, c = m['msg_type'], m['content']
                    if t == 'status':
                        idle = idle or (mine and c.get('execution_state') == 'idle')
                    elif silent or (not mine and t not in ('stream', 'display_data')):
                        pass
                    elif t == 'stream':
                        out('stderr' if c.get('name') == 'stderr' else 'stdout', c.get('text', ''))
                    elif t in ('display_data', 'update_display_data'):
                        emit({'type': 'display', 'id': rid, 'data': bundle(c.get('data')),
                              'metadata': clean(c.get('metadata') or {})})
                    elif t == 'execute_result':
                        emit({'type': 'result', 'id': rid, 'execution_count': c.get('execution_count'),
                              'data': bundle(c.get('data')), 'metadata': clean(c.get('metadata') or {})})
                    elif t == 'error':
                        error(rid, c.get('ename', 'Error'), c.get('evalue', ''), c.get('traceback') or [])
                while shell_s in ready:
                    m = recv(shell_s)
                    if m is None:
                        break
                    if m['parent_header'].get('msg_id') == mid:
                        reply = m['content']
                if time.time() - checked > 1:
                    checked = time.time()
                    if not km.is_alive():
                        return None
            return reply
        finally:
            S.running = False

    def env_code(env):
        """Kernel code that sets env, and code that puts it back."""
        kl, q = lang.get('name', spec.language), json.dumps
        if env and kl == 'python':
            return ('import os as _xb_os\n_xb_old = {k: _xb_os.environ.get(k) for k in %s}\n'
                    '_xb_os.environ.update(%s)\n' % (q(list(env)), q(env)),
                    '[_xb_os.environ.pop(k, 0) if v is None else _xb_os.environ.__setitem__(k, v) '
                    'for k, v in _xb_old.items()]\n')
        if env and kl == 'R':
            return ('.xb_eo <- Sys.getenv(c(%s), unset = NA, names = TRUE); invisible(Sys.setenv(%s))\n'
                    % (', '.join(map(q, env)), ', '.join('%s = %s' % (q(k), q(v)) for k, v in env.items())),
                    'for (n in names(.xb_eo)) if (is.na(.xb_eo[[n]])) Sys.unsetenv(n) else '
                    'do.call(Sys.setenv, setNames(list(.xb_eo[[n]]), n)); rm(.xb_eo)\n')
        return None, None

    def run(rid, code, env=None):
        begin(rid)
        pre, post = env_code(env)
        if pre:
            execute(rid, pre, True)
        reply = execute(rid, code)
        if post and reply is not None:
            execute(rid, post, True)
        if reply is None:
            error(rid, 'KernelDied', 'the %s kernel died; the session is over' % name)
            finish(rid, 'error', state['count'])
            fatal('the %s kernel died' % name)
        if isinstance(reply.get('execution_count'), int):
            state['count'] = reply['execution_count']
        st = reply.get('status')
        status = 'ok' if st == 'ok' else 'interrupted' if (
            S.interrupt or reply.get('ename') == 'KeyboardInterrupt') else 'error'
        finish(rid, status, state['count'])

    def variable(rid, vname):
        ev = {'found': False}
        if lang.get('name', spec.language) != 'python':
            ev['unsupported'] = True  # only Python kernels can be inspected (IRkernel ignores user_expressions)
        elif isinstance(vname, str) and NAME_RE.fullmatch(vname):
            code = ("import builtins as _xb_b\n_xb_d = {}\nexec(%r, _xb_d)\n"
                    "_xb_b._xb_var_json = _xb_d['_xb_var_json']\ndel _xb_b, _xb_d\n") % VARSRC
            with LOCK:
                S.cur = None
            reply = execute(rid, code, True, {'v': '_xb_var_json(globals(), %r)' % vname})
            try:
                ev = json.loads(ast.literal_eval(reply['user_expressions']['v']['data']['text/plain']))
            except Exception:
                pass
        ev.update(type='variable', id=rid, name=vname)
        emit(ev)

    def preload(rid, mods):
        mods = [m for m in (mods if isinstance(mods, list) else []) if isinstance(m, str) and NAME_RE.fullmatch(m)]
        status = 'ok'
        if mods and spec.language == 'python':
            code = ''.join('import %s\n' % m + ('%s = %s\n' % (ALIASES[m], m) if m in ALIASES else '') for m in mods)
            reply = execute(rid, code, True)
            status = 'ok' if reply and reply.get('status') == 'ok' else 'error'
        finish(rid, status, state['count'])

    def handle(req):
        op, rid = req.get('op'), req.get('id', 0)
        if op == 'run':
            run(rid, str(req.get('code', '')), cell_env(req))
        elif op == 'variable':
            variable(rid, req.get('name'))
        elif op == 'preload':
            preload(rid, req.get('modules'))
        elif op not in ('interrupt', 'input'):
            unknown(rid, op, state['count'])

    emit({'type': 'ready', 'language': lang.get('name') or spec.language, 'implementation': name,
          'version': lang.get('version', ''), 'display_name': spec.display_name, 'execution_count': 0})
    read_requests(handle)
    try:
        km.shutdown_kernel(now=True)
    except Exception:
        pass
    shutil.rmtree(d, ignore_errors=True)
    os._exit(0)


# ------------------------------------------------------------------ bash ----

BASH_INIT = r'''
__xb_d=@D@
__xb_prompt() {
  {
    local __xb_s=$? __xb_l
    while read -t 0 && IFS= read -r -t 1 __xb_l; do :; done
    printf '\036XB@N@S%s;%s\036XB@N@E' "$__xb_s" "$PWD" >/dev/tty ||
      printf '\036XB@N@S%s;%s\036XB@N@E' "$__xb_s" "$PWD"
  } 2>/dev/null
}
__xb_var() {
  local __xb_s=$? __xb_decl __xb_f
  rm -f "$__xb_d"/v.*
  if __xb_decl=$(declare -p "$1" 2>/dev/null); then
    printf '%s' "$__xb_decl" > "$__xb_d/v.decl"
    local -n __xb_r="$1"
    __xb_f=${__xb_decl#declare -}; __xb_f=${__xb_f%% *}
    if [[ $__xb_f == *[aA]* ]]; then
      printf '%s\0' "${!__xb_r[@]}" > "$__xb_d/v.keys"
      printf '%s\0' "${__xb_r[@]}" > "$__xb_d/v.vals"
    else
      printf '%s' "$__xb_r" > "$__xb_d/v.vals"
    fi
  elif declare -F "$1" >/dev/null 2>&1; then
    declare -f "$1" > "$__xb_d/v.func"
  fi
  return $__xb_s
}
PS1='' PS2='' PS0=''
unset HISTFILE
set +o history
PROMPT_COMMAND=__xb_prompt
readonly PS1 PS2 PS0 PROMPT_COMMAND __xb_d
readonly -f __xb_prompt __xb_var
printf '%s' "$BASH_VERSION" > "$__xb_d/version"
'''


def bash_main():
    import pty
    import shutil
    import struct
    import tempfile
    import termios
    d = tempfile.mkdtemp(prefix='xb-bash-')
    nonce = os.urandom(8).hex()
    start, end = ('\x1eXB%sS' % nonce).encode(), ('\x1eXB%sE' % nonce).encode()
    with open(os.path.join(d, 'init'), 'w') as f:
        f.write(BASH_INIT.replace('@D@', d).replace('@N@', nonce))
    env = {k: v for k, v in os.environ.items()
           if k not in ('PROMPT_COMMAND', 'PS0', 'PS1', 'PS2', 'BASH_ENV', 'ENV', 'HISTFILE')}
    for k, v in (('TERM', 'dumb'), ('PAGER', 'cat'), ('GIT_PAGER', 'cat'), ('MANPAGER', 'cat')):
        env.setdefault(k, v)
    pid, master = pty.fork()
    if pid == 0:
        try:
            a = termios.tcgetattr(0)
            a[0] &= ~termios.IXON                      # ^S must not freeze output
            a[1] &= ~termios.ONLCR                     # "\n" stays "\n"
            a[3] &= ~(termios.ECHO | termios.ECHONL)   # no echo of commands or input
            termios.tcsetattr(0, termios.TCSANOW, a)
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack('HHHH', 50, 200, 0, 0))
            os.execve('/bin/bash', ['bash', '--noprofile', '--norc', '--noediting', '-i'], env)
        finally:
            os._exit(127)
    os.set_blocking(master, False)

    class B:
        mode = 'starting'   # starting, idle, run, hidden (a variable lookup)
        count = 0
        intr = False
        closing = False
        code = ''
        cwd = ''
        buf = bytearray()
        dec = None

    ready, hidden_done, reader_done = threading.Event(), threading.Event(), threading.Event()
    xtrace = re.compile(rb'(?m)^\++ (?:\. ' + re.escape(d.encode()) + rb'/cell|__xb_prompt|__xb_var \w+)\n')

    def pty_write(data, wait=2.0):
        """Write to the terminal; give up on what a command does not read within `wait` s."""
        mv, t = memoryview(data), time.time() + wait
        while mv:
            try:
                mv = mv[os.write(master, mv):]
            except (BlockingIOError, InterruptedError):
                if time.time() > t:
                    diag('terminal input not read; dropped %d bytes' % len(mv))
                    return
                select.select([], [master], [], 0.05)
            except OSError:
                return

    def give(b):
        if b and b'+' in b:  # set -x traces of the driver's own commands
            b = xtrace.sub(b'', b)
        if not b:
            return
        if B.mode == 'run':
            t = B.dec.decode(b)
            if t:
                out('stdout', t)
        elif B.mode == 'idle':
            out('stdout', b.decode('utf-8', 'replace'))

    def prompt(status, cwd):
        B.cwd = cwd
        if B.mode == 'starting':
            B.mode = 'idle'
            ready.set()
        elif B.mode == 'run':
            t = B.dec.decode(b'', True)
            if t:
                out('stdout', t)
            st = 'interrupted' if B.intr and status else 'ok' if status == 0 else 'error'
            rid, B.mode = S.cur, 'idle'
            finish(rid, st, B.count, exit_code=status, cwd=cwd)
        elif B.mode == 'hidden':
            B.mode = 'idle'
            hidden_done.set()

    def feed(data):
        buf = B.buf
        buf += data
        while True:
            i = buf.find(start)
            if i < 0:
                k = buf.rfind(b'\x1e', max(0, len(buf) - len(start) + 1))
                keep = len(buf) - k if k >= 0 and start.startswith(bytes(buf[k:])) else 0
                give(bytes(buf[:len(buf) - keep]))
                del buf[:len(buf) - keep]
                return
            j = buf.find(end, i)
            give(bytes(buf[:i]))
            if j < 0:
                del buf[:i]
                return
            st, _, cwd = bytes(buf[i + len(start):j]).partition(b';')
            del buf[:j + len(end)]
            try:
                st = int(st)
            except ValueError:
                st = -1
            prompt(st, cwd.decode('utf-8', 'replace'))

    def reader():
        p = select.poll()
        p.register(master, select.POLLIN)
        while True:
            try:
                p.poll()
                data = os.read(master, 65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b''
            if not data:
                break
            with LOCK:
                feed(data)
        reader_done.set()

    def reaper():
        _, st = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(st)
        code = code if code >= 0 else 128 - code
        if B.closing:
            return
        reader_done.wait(1.0)
        with LOCK:
            if B.mode == 'run':
                t = B.dec.decode(b'', True)
                if t:
                    out('stdout', t)
                out('stderr', '[execbox: bash exited with status %d; the session is over]\n' % code)
                finish(S.cur, 'error', B.count, exit_code=code, cwd=B.cwd)
        diag('bash exited with status', code)
        shutil.rmtree(d, ignore_errors=True)
        os._exit(code)

    def interrupt():
        with LOCK:
            if B.mode != 'run':
                return
            B.intr = True
        try:
            isig = termios.tcgetattr(master)[3] & termios.ISIG
            if not isig:  # the program turned ^C off: signal its process group
                os.killpg(os.tcgetpgrp(master), signal.SIGINT)
                return
        except OSError:
            pass
        pty_write(b'\x03')

    threading.Thread(target=reader, name='xb-pty', daemon=True).start()
    threading.Thread(target=reaper, name='xb-reap', daemon=True).start()
    signal.signal(signal.SIGINT, lambda s, f: threading.Thread(target=interrupt, daemon=True).start())
    pty_write(('. %s/init\n' % d).encode())
    if not ready.wait(30):
        emit({'type': 'fatal', 'message': 'bash did not start'})
        os._exit(1)
    try:
        with open(os.path.join(d, 'version')) as f:
            version = f.read().strip()
    except OSError:
        version = ''

    def env_wrap(code, env):
        """code with env exported for it, put back after ($? kept)."""
        import shlex
        ks = [k for k in env if re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*', k)]
        if not ks:
            return code
        pre = ''.join('__xb_o%d=${%s+1} __xb_s%d=${%s-}; export %s=%s\n' % (i, k, i, k, k, shlex.quote(env[k]))
                      for i, k in enumerate(ks))
        post = ''.join('[ "$__xb_o%d" ] && %s=$__xb_s%d || unset %s; unset __xb_o%d __xb_s%d; ' % (i, k, i, k, i, i)
                       for i, k in enumerate(ks))
        return pre + code.rstrip('\n') + '\n__xb_rc=$?; ' + post + '(exit $__xb_rc)\n'

    def run(rid, code, env=None):
        code = env_wrap(code, env or {})
        with LOCK:
            if B.mode != 'idle':
                first = B.code.strip().splitlines()[0][:80] if B.code.strip() else ''
                emit({'type': 'error', 'id': rid, 'ename': 'Busy', 'traceback': [],
                      'evalue': 'a command is still running (%s); send input, interrupt it, or wait' % first})
                emit({'type': 'done', 'id': rid, 'status': 'error', 'execution_count': B.count})
                return
        begin(rid)
        with open(os.path.join(d, 'cell'), 'w', encoding='utf-8', errors='surrogateescape') as f:
            f.write(code if code.endswith('\n') else code + '\n')
        with LOCK:
            B.count += 1
            B.mode, B.intr, B.code = 'run', False, code
            B.dec = codecs.getincrementaldecoder('utf-8')('replace')
        pty_write(('\x15. %s/cell\n' % d).encode())  # ^U first: drop a half-typed line

    def rd(n, mode='rb'):
        try:
            with open(os.path.join(d, n), mode) as f:
                return f.read()
        except OSError:
            return None

    def variable(rid, name):
        ev = {'found': False}
        if isinstance(name, str) and re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*', name):
            with LOCK:
                ok = B.mode == 'idle'
                if ok:
                    B.mode = 'hidden'
                    hidden_done.clear()
            if not ok:
                ev['error'] = 'a command is running'
            else:
                pty_write(('\x15__xb_var %s\n' % name).encode())
                if not hidden_done.wait(5):
                    with LOCK:
                        if B.mode == 'hidden':
                            B.mode = 'idle'
                decl, vals, func = rd('v.decl'), rd('v.vals') or b'', rd('v.func')
                u = (lambda b: b.decode('utf-8', 'replace'))
                if decl is not None:
                    flags = u(decl).split(' ', 2)[1] if decl.count(b' ') >= 2 else '--'
                    items = [u(x) for x in vals.split(b'\0')[:-1]]
                    if 'A' in flags:
                        keys = [u(x) for x in (rd('v.keys') or b'').split(b'\0')[:-1]]
                        ev.update(value_type='associative array', json=dict(zip(keys, items)))
                    elif 'a' in flags:
                        ev.update(value_type='array', json=items)
                    elif 'i' in flags and re.fullmatch(rb'-?[0-9]+', vals):
                        ev.update(value_type='integer', json=clean(int(vals)))
                    else:
                        ev.update(value_type='string', json=u(vals))
                    ev.update(found=True, repr=u(decl)[:65536])
                elif func is not None:
                    ev.update(found=True, value_type='function', repr=u(func)[:65536], json=None)
        ev.update(type='variable', id=rid, name=name)
        emit(ev)

    def handle(req):
        op, rid = req.get('op'), req.get('id', 0)
        if op == 'run':
            run(rid, str(req.get('code', '')), cell_env(req))
        elif op == 'input':
            with LOCK:
                running = B.mode == 'run'
            if running:
                pty_write(str(req.get('data', '')).encode('utf-8', 'replace'))
            else:
                diag('input while no command runs: dropped')
        elif op == 'interrupt':
            interrupt()
        elif op == 'variable':
            variable(rid, req.get('name'))
        elif op == 'preload':
            finish(rid, 'ok', B.count)
        else:
            unknown(rid, op, B.count)

    emit({'type': 'ready', 'language': 'bash', 'implementation': 'bash', 'version': version,
          'execution_count': 0, 'cwd': B.cwd})
    read_requests(handle)
    B.closing = True
    try:
        os.kill(pid, signal.SIGHUP)
    except OSError:
        pass
    shutil.rmtree(d, ignore_errors=True)
    os._exit(0)


def main():
    try:
        if MODE == 'python':
            python_main()
        elif MODE == 'jupyter':
            jupyter_main(ARG)
        elif MODE == 'bash':
            bash_main()
        else:
            emit({'type': 'fatal', 'message': 'unknown mode %r: python, jupyter NAME or bash' % MODE})
            os._exit(2)
    except SystemExit:
        raise
    except BaseException as e:
        import traceback
        diag(traceback.format_exc())
        emit({'type': 'fatal', 'message': 'driver failed: %s: %s' % (type(e).__name__, e)})
        os._exit(1)


main()
