"""tools/checkdeps.py, the include-layering check, run on small planted trees.

Each test plants a src/ tree in a temporary directory, runs the checker on it
with the real layer table (tools/layers.txt) and reads its exit status and lines.
The last test runs it on the real tree, which must pass.

Run: /usr/bin/python3 -m pytest -q tests/layering   (or `make layering-test`)
"""
import importlib.util
import itertools
import os
import random
import re
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
CHECKDEPS = os.path.join(ROOT, 'tools', 'checkdeps.py')
LAYERS = os.path.join(ROOT, 'tools', 'layers.txt')

# A tree that follows every rule, and touches most arrows of the table.
CLEAN = {
    'base/err.h': '#include <errno.h>\n',
    'base/err.c': '#include "err.h"\n#include <string.h>\n',
    'base/loop.h': '#include "base/err.h"\n',
    'proto/wire.h': '#include "base/err.h"\n',
    'sandbox/execspec.h': '#include "proto/wire.h"\n',
    'sandbox/limits.c': '#include "limits.h"\n#include <limits.h>\n',
    'sandbox/limits.h': '#include "base/err.h"\n',
    'init/init.h': '#include "sandbox/execspec.h"\n',
    'init/init.c': '#include "init.h"\n#include "proto/wire.h"\n',
    'proc/initc.h': '#include "sandbox/execspec.h"\n#include "proto/wire.h"\n',
    'proc/initc.c': '#include "initc.h"\n',
    'core/core.h': '#include "proc/initc.h"\n#include "base/loop.h"\n',
    'core/sbx.c': '#include "core/core.h"\n#include <jansson.h>\n',
    'ops/catalog.h': '#include "core/core.h"\n',
    'ops/catalog.c': '#include "ops/catalog.h"\n#include "sandbox/limits.h"\n',
    'transport/mhd.h': '#include <microhttpd.h>\n#include "base/err.h"\n',
    'transport/http.h': '#include "transport/mhd.h"\n',
    'rest/api.c': '#include "transport/http.h"\n#include "ops/catalog.h"\n'
                  '#include "core/core.h"\n',
    'mcp/mcp.h': '#include "transport/http.h"\n',
    'mcp/mcp.c': '#include "mcp/mcp.h"\n#include "ops/catalog.h"\n',
    'plugin/plugin.c': '#include "ops/catalog.h"\n',
    'e2b/e2b.c': '#include "transport/http.h"\n#include "ops/catalog.h"\n',
    'daemon/daemon.c': '#include "mcp/mcp.h"\n#include "transport/http.h"\n'
                       '#include "proto/wire.h"\n',
    'cli/cli.h': '#include "core/core.h"\n',
    'cli/main.c': '#include "cli/cli.h"\n#include "mcp/mcp.h"\n'
                  '#include "transport/http.h"\n',
}


def plant(tmp_path, files):
    for rel, text in files.items():
        p = tmp_path / 'src' / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def run(root, *extra):
    p = subprocess.run([sys.executable, CHECKDEPS, '--root', str(root), *extra],
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout.splitlines(), p.stderr


def violations(lines):
    return [l for l in lines if not l.startswith('checkdeps: ')]


def ok(tmp_path, extra):
    """Plant CLEAN plus extra; expect no violations."""
    rc, lines, err = run(plant(tmp_path, {**CLEAN, **extra}))
    assert rc == 0, lines


def check_bad(tmp_path, extra, rule, layer_cycles=None):
    """Plant CLEAN plus extra; expect exit 1 and violations of rule only, plus the
    layer cycles that an upward include closes, when layer_cycles is given."""
    rc, lines, err = run(plant(tmp_path, {**CLEAN, **extra}))
    bad = violations(lines)
    assert rc == 1, lines
    assert re.fullmatch(rf'checkdeps: \d+ files, \d+ includes, {len(bad)} violations',
                        lines[-1]), lines
    cycles = [l for l in bad if '[layer-cycle]' in l]
    if layer_cycles is not None:
        assert cycles == layer_cycles, bad
    ours = [l for l in bad if l not in cycles]
    assert ours, lines
    assert all(f'[{rule}]' in l for l in ours), bad
    return ours


def test_clean_tree_passes(tmp_path):
    rc, lines, err = run(plant(tmp_path, CLEAN))
    assert rc == 0, lines
    n = sum(text.count('#include') for text in CLEAN.values())
    assert lines == [f'checkdeps: {len(CLEAN)} files, {n} includes, 0 violations'], lines
    assert err == ''


def test_upward_include_fails(tmp_path):
    bad = check_bad(tmp_path, {'proc/run.c': '#include <stdio.h>\n\n#include "core/core.h"\n'},
                    'layer', ['src/core/core.h:1: [layer-cycle] layers include each other: '
                              'core -> proc -> core (at src/core/core.h:1, src/proc/run.c:3)'])
    assert bad == ['src/proc/run.c:3: [layer] proc includes "core/core.h", but core is not '
                   'below proc (it may include: base proto sandbox)']


def test_init_may_not_reach_proc(tmp_path):
    # init sits on sandbox, beside proc, not above it.
    bad = check_bad(tmp_path, {'init/init_spawn.c': '#include "proc/initc.h"\n'}, 'layer')
    assert len(bad) == 1 and bad[0].startswith('src/init/init_spawn.c:1: [layer] init '
                                               'includes "proc/initc.h"')


def test_plugin_sits_on_rest(tmp_path):
    # The seeds' routes are REST reshaped: plugin may include rest, never the reverse.
    ok(tmp_path / 'a', {'plugin/pandora.c': '#include "rest/status.h"\n#include "transport/http.h"\n'})
    check_bad(tmp_path / 'b', {'rest/api.c': '#include "plugin/plugin.h"\n'}, 'layer')
    check_bad(tmp_path / 'c', {'mcp/mcp.c': '#include "plugin/plugin.h"\n'}, 'layer')


def test_core_including_transport_fails(tmp_path):
    bad = check_bad(tmp_path, {'core/core.h': '#include "proc/initc.h"\n'
                                              '  #  include "transport/http.h"\n'},
                    'protocol-free')
    assert bad == ['src/core/core.h:2: [protocol-free] core includes "transport/http.h": '
                   'core knows no protocol and never includes transport/']


def test_core_including_microhttpd_fails(tmp_path):
    bad = check_bad(tmp_path, {'core/files.c': '#include "core/core.h"\n#include <microhttpd.h>\n'},
                    'protocol-free')
    assert bad == ['src/core/files.c:2: [protocol-free] core includes <microhttpd.h>: '
                   'core knows no protocol and never includes it']


@pytest.mark.parametrize('layer', ['base', 'proto', 'sandbox', 'init', 'proc', 'ops'])
@pytest.mark.parametrize('header', ['"transport/http.h"', '"rest/status.h"', '"mcp/mcp.h"',
                                    '"plugin/plugin.h"', '"e2b/e2b.h"', '<microhttpd.h>'])
def test_no_protocol_below_adapters(tmp_path, layer, header):
    bad = check_bad(tmp_path, {f'{layer}/x.c': f'#include {header}\n'}, 'protocol-free')
    assert len(bad) == 1 and bad[0].startswith(f'src/{layer}/x.c:1: [protocol-free]'), bad


def test_adapter_including_adapter_fails(tmp_path):
    bad = check_bad(tmp_path, {'rest/api_mcp.c': '#include "ops/catalog.h"\n#include "mcp/mcp.h"\n',
                               'e2b/e2b.c': '#include "rest/status.h"\n'},
                    'peers')
    assert bad == [
        'src/e2b/e2b.c:1: [peers] e2b includes "rest/status.h": the adapters '
        '(e2b, judge, mcp, rest) are peers and never include each other',
        'src/rest/api_mcp.c:2: [peers] rest includes "mcp/mcp.h": the adapters '
        '(e2b, judge, mcp, rest) are peers and never include each other',
    ]


def test_two_module_cycle_fails(tmp_path):
    bad = check_bad(tmp_path, {'core/sbx.h': '#include "base/err.h"\n#include "core/sessions.h"\n',
                               'core/sbx.c': '#include "sbx.h"\n',
                               'core/sessions.h': '#include "base/err.h"\n',
                               'core/sessions.c': '#include "sessions.h"\n#include "sbx.h"\n'},
                    'cycle')
    assert bad == ['src/core/sbx.h:2: [cycle] modules include each other: '
                   'core/sbx -> core/sessions -> core/sbx '
                   '(at src/core/sbx.h:2, src/core/sessions.c:2)']


def test_direct_mutual_include_fails(tmp_path):
    bad = check_bad(tmp_path, {'ops/a.h': '#include "ops/b.h"\n',
                               'ops/b.h': '#include "a.h"\n'},
                    'cycle')
    assert bad == ['src/ops/a.h:1: [cycle] modules include each other: '
                   'ops/a -> ops/b -> ops/a (at src/ops/a.h:1, src/ops/b.h:1)']


def test_three_module_cycle_fails(tmp_path):
    bad = check_bad(tmp_path, {'mcp/mcp_tools.c': '#include "mcp/mcp_core.h"\n',
                               'mcp/mcp_core.h': '#include "mcp/mcp_files.h"\n',
                               'mcp/mcp_files.h': '#include "base/err.h"\n',
                               'mcp/mcp_files.c': '#include "mcp_files.h"\n#include "mcp_tools.h"\n',
                               'mcp/mcp_tools.h': '#include "transport/http.h"\n'},
                    'cycle')
    assert bad == ['src/mcp/mcp_core.h:1: [cycle] modules include each other: '
                   'mcp/mcp_core -> mcp/mcp_files -> mcp/mcp_tools -> mcp/mcp_core '
                   '(at src/mcp/mcp_core.h:1, src/mcp/mcp_files.c:2, src/mcp/mcp_tools.c:1)']


def test_private_header_is_its_modules(tmp_path):
    # mcp.c includes mcp_int.h, which includes mcp.h: one module, no cycle.
    ok(tmp_path, {'mcp/mcp.h': '#include "base/err.h"\n', 'mcp/mcp_int.h': '#include "mcp/mcp.h"\n',
                  'mcp/mcp.c': '#include "mcp/mcp_int.h"\n'})


def test_each_cycle_once_in_a_tangle(tmp_path):
    # a <-> b, b <-> c, a -> c: the elementary cycles are a-b, b-c and a-c-b.
    bad = check_bad(tmp_path, {'ops/a.h': '#include "ops/b.h"\n#include "ops/c.h"\n',
                               'ops/b.h': '#include "ops/a.h"\n#include "ops/c.h"\n',
                               'ops/c.h': '#include "ops/b.h"\n'},
                    'cycle')
    paths = sorted(l.split(': ', 2)[2].split(' (at')[0] for l in bad)
    assert paths == ['ops/a -> ops/b -> ops/a',
                     'ops/a -> ops/c -> ops/b -> ops/a',
                     'ops/b -> ops/c -> ops/b'], bad


def test_layer_cycle_is_reported(tmp_path):
    rc, lines, err = run(plant(tmp_path, {**CLEAN,
                                          'proc/up.c': '#include "ops/catalog.h"\n'}))
    bad = violations(lines)
    assert rc == 1
    assert 'src/proc/up.c:1: [layer] proc includes "ops/catalog.h", but ops is not below ' \
        'proc (it may include: base proto sandbox)' in bad
    layer = [l for l in bad if '[layer-cycle]' in l]
    assert layer == ['src/core/core.h:1: [layer-cycle] layers include each other: '
                     'core -> proc -> ops -> core '
                     '(at src/core/core.h:1, src/proc/up.c:1, src/ops/catalog.h:1)'], bad


def test_unknown_directory_fails(tmp_path):
    bad = check_bad(tmp_path, {'server/server.h': '#include "core/core.h"\n',
                               'server/server.c': '#include "server.h"\n',
                               'ops/guide.c': '#include "server/server.h"\n',
                               'loose.c': '#include "base/err.h"\n'},
                    'unknown-layer')
    assert len(bad) == 2, bad
    assert bad[0].startswith('src/loose.c: [unknown-layer] a file right in src/ has no layer')
    assert bad[1].startswith('src/server/server.h: [unknown-layer] src/server/ is not a layer')


def test_comments_and_system_headers_are_not_includes(tmp_path):
    rc, lines, err = run(plant(tmp_path, {**CLEAN, 'core/sbx.c': (
        '// #include "transport/http.h"\n'
        '/* #include <microhttpd.h>\n'
        '#include "mcp/mcp.h" */\n'
        'static const char *s = "// not a comment";\n'
        '#include "core/core.h" /* why */\n'
        '#include <limits.h>\n')}))
    assert rc == 0, lines


def test_same_directory_include_resolves_first(tmp_path):
    # "limits.h" in sandbox/ is sandbox/limits.h; <limits.h> is the system's.
    rc, lines, err = run(plant(tmp_path, {**CLEAN,
                                          'sandbox/limits.h': '#include "sandbox/execspec.h"\n',
                                          'sandbox/execspec.h': '#include "limits.h"\n'}))
    assert rc == 1
    assert violations(lines) == ['src/sandbox/execspec.h:1: [cycle] modules include each '
                                 'other: sandbox/execspec -> sandbox/limits -> '
                                 'sandbox/execspec (at src/sandbox/execspec.h:1, '
                                 'src/sandbox/limits.h:1)'], lines


def test_angle_include_of_a_project_header_counts(tmp_path):
    bad = check_bad(tmp_path, {'core/x.c': '#include <transport/http.h>\n'}, 'protocol-free')
    assert bad == ['src/core/x.c:1: [protocol-free] core includes <transport/http.h>: '
                   'core knows no protocol and never includes transport/']


def test_layer_tangle_is_one_line():
    cd = load_checkdeps()
    graph = {'a': {'b'}, 'b': {'a', 'c'}, 'c': {'b'}}
    where = {(v, w): f'{v}{w}.c:1' for v in graph for w in graph[v]}
    assert cd.report_tangles(graph, where, 'layer-cycle', 'layers') == [
        'ab.c:1: [layer-cycle] layers include each other: a -> b -> a '
        '(at ab.c:1, ba.c:1); the group is a b c']


def test_bad_table_exits_2(tmp_path):
    table = tmp_path / 'layers.txt'
    table.write_text('layer base\nlayer a b\nlayer b a\n')
    rc, lines, err = run(plant(tmp_path, {'base/x.h': ''}), '--layers', str(table))
    assert rc == 2 and 'cycle of arrows' in err


def load_checkdeps():
    spec = importlib.util.spec_from_file_location('checkdeps', CHECKDEPS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_table_is_the_architecture():
    t = load_checkdeps().Table(LAYERS)
    below = {name: set(allowed) for name, allowed in t.allowed.items()}
    engine = {'base', 'proto', 'sandbox', 'proc', 'net', 'core', 'ops'}
    assert below['base'] == set()
    assert below['proto'] == {'base'}
    assert below['sandbox'] == {'base', 'proto'}
    assert below['init'] == {'base', 'proto', 'sandbox'}
    assert below['proc'] == {'base', 'proto', 'sandbox'}
    # egress (the proxy, the DNS, policies) knows no sandbox: only base
    assert below['net'] == {'base'}
    assert below['core'] == {'base', 'proto', 'sandbox', 'proc', 'net'}
    assert below['ops'] == engine - {'ops'}
    assert below['transport'] == {'base'}
    for a in ('rest', 'mcp', 'e2b', 'judge'):
        assert below[a] == engine | {'transport'}
    assert below['plugin'] == engine | {'transport', 'rest'}
    assert below['daemon'] == set(t.lower) - {'init', 'cli', 'daemon'}
    assert below['cli'] == set(t.lower) - {'init', 'cli'}
    assert t.peers == {'rest', 'mcp', 'e2b', 'judge'}
    assert t.pure == engine | {'init'}
    assert t.protocol_layers == {'transport', 'rest', 'mcp', 'plugin', 'e2b', 'judge'}
    assert t.protocol_headers == {'microhttpd.h'}


def brute_cycles(graph):
    """Elementary cycles by trying every ordered subset (small graphs only)."""
    nodes, out = sorted(graph), set()
    for k in range(2, len(nodes) + 1):
        for sub in itertools.permutations(nodes, k):
            if sub[0] == min(sub) and all(b in graph[a] for a, b in zip(sub, sub[1:] + sub[:1])):
                out.add(sub + sub[:1])
    return out


def test_simple_cycles_matches_brute_force():
    cd = load_checkdeps()
    rnd = random.Random(8)
    for _ in range(300):
        n = rnd.randint(2, 6)
        nodes = [f'm{i}' for i in range(n)]
        graph = {v: {w for w in nodes if w != v and rnd.random() < 0.4} for v in nodes}
        found, complete = cd.simple_cycles(graph, 10 ** 6)
        assert complete
        assert len(found) == len(set(map(tuple, found)))
        assert set(map(tuple, found)) == brute_cycles(graph), graph


def test_cycle_limit_lists_the_tangle(tmp_path):
    # a complete graph on 7 modules holds far more than 100 elementary cycles.
    names = [f'ops/k{i}.h' for i in range(7)]
    files = {n: ''.join(f'#include "{m}"\n' for m in names if m != n) for n in names}
    rc, lines, err = run(plant(tmp_path, {**CLEAN, **files}))
    bad = violations(lines)
    assert rc == 1
    assert len(bad) == 101
    assert bad[-1] == ('src/: [cycle] over 100 cycles, not all listed; these modules form '
                       'one tangle: ' + ' '.join(f'ops/k{i}' for i in range(7)))


def test_real_tree():
    p = subprocess.run([sys.executable, CHECKDEPS], capture_output=True, text=True, timeout=60)
    print(p.stdout, end='')
    assert p.returncode == 0, '\n' + p.stdout + p.stderr
