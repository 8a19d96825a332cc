#!/usr/bin/env python3
"""checkdeps: the include-layering check of execbox, in the spirit of Chromium's.

Scans every .c and .h under ROOT/src and fails when
  - a file includes a header from a layer its own layer may not include
    (tools/layers.txt is the table, from architecture.md);
  - a layer the table calls protocol-free (the engine) includes a protocol:
    transport/, an adapter, <microhttpd.h>;
  - an adapter includes another adapter (the table's peers);
  - modules include each other, directly or around a cycle (a module is a file
    stem in a directory: core/proc.c and core/proc.h are the module core/proc),
    or layers do.
It reads #include lines only, without preprocessing: an include under #if counts.
Comments are skipped. Python 3 standard library only.

Usage: tools/checkdeps.py [--root DIR] [--layers FILE]
Exit status: 0 clean, 1 violations found, 2 bad usage or a bad table.
"""

import argparse
import collections
import os
import posixpath
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROOT = os.path.dirname(HERE)
DEFAULT_LAYERS = os.path.join(HERE, 'layers.txt')

# Enough to read any real cycle; a tangle beyond that is listed by its members.
MAX_CYCLES = 100

INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)
# Strings and character literals come first so that "//" inside one is not a
# comment; comments become blank space with the same newlines.
TOKEN_RE = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
                      r'|//[^\n]*|/\*.*?(?:\*/|\Z)', re.S)


class TableError(Exception):
    pass


class Table:
    """The layer table: who may include whom."""

    def __init__(self, path):
        self.path = path
        self.lower = {}                 # layer -> layers it names directly
        self.peers = set()
        self.pure = set()               # protocol-free layers
        self.protocol_layers = set()
        self.protocol_headers = set()   # system headers, without <>
        self._parse()
        self.allowed = {name: self._closure(name) for name in self.lower}
        self._check()

    def _parse(self):
        try:
            with open(self.path, encoding='utf-8') as f:
                lines = f.read().splitlines()
        except OSError as e:
            raise TableError(f'{self.path}: {e.strerror}')
        for n, line in enumerate(lines, 1):
            words = line.split('#', 1)[0].split()
            if not words:
                continue
            key, args = words[0], words[1:]
            where = f'{self.path}:{n}'
            if key == 'layer':
                if not args:
                    raise TableError(f'{where}: `layer` needs a name')
                if args[0] in self.lower:
                    raise TableError(f'{where}: layer {args[0]} listed twice')
                self.lower[args[0]] = list(args[1:])
            elif key == 'peers':
                self.peers.update(args)
            elif key == 'protocol-free':
                self.pure.update(args)
            elif key == 'protocol':
                for a in args:
                    if a.startswith('<') and a.endswith('>'):
                        self.protocol_headers.add(a[1:-1])
                    else:
                        self.protocol_layers.add(a)
            else:
                raise TableError(f'{where}: unknown keyword `{key}`')
        if not self.lower:
            raise TableError(f'{self.path}: no layers')

    def _closure(self, name):
        seen, todo = set(), list(self.lower[name])
        while todo:
            x = todo.pop()
            if x not in seen:
                seen.add(x)
                todo.extend(self.lower.get(x, ()))
        return seen

    def _check(self):
        names = set(self.lower)
        for name, lower in self.lower.items():
            for x in lower:
                if x not in names:
                    raise TableError(f'{self.path}: layer {name} names unknown layer {x}')
            if name in self.allowed[name]:
                raise TableError(f'{self.path}: layer {name} is in a cycle of arrows')
        for group in ('peers', 'pure', 'protocol_layers'):
            for x in getattr(self, group):
                if x not in names:
                    raise TableError(f'{self.path}: unknown layer {x}')
        for a in self.peers:
            for b in self.peers:
                if b in self.allowed[a]:
                    raise TableError(f'{self.path}: peers {a} and {b}, but {a} may include {b}')

    def may_include(self, a, b):
        return a == b or b in self.allowed[a]


def strip_comments(text):
    def blank(m):
        s = m.group(0)
        if s[0] in '"\'':
            return s
        return '\n' * s.count('\n')
    return TOKEN_RE.sub(blank, text)


def scan_includes(path):
    """[(line, '"' or '<', name)] of one file."""
    with open(path, encoding='utf-8', errors='replace') as f:
        text = strip_comments(f.read())
    out = []
    for m in INCLUDE_RE.finditer(text):
        line = text.count('\n', 0, m.start()) + 1
        out.append((line, m.group(1), m.group(2).strip()))
    return out


def layer_of(rel):
    parts = rel.split('/')
    return parts[0] if len(parts) > 1 else ''


def module_of(rel):
    """core/proc.c and core/proc.h are core/proc; a private header
    mcp/mcp_int.h belongs to the module it serves, mcp/mcp."""
    stem = posixpath.splitext(rel)[0]
    return stem[:-4] if rel.endswith('_int.h') else stem


def resolve(src, rel, kind, name, table):
    """The included file, relative to src, or None for a system header.

    Like the compiler with -Isrc: "x.h" is looked up next to the including file
    first, then in src; <x.h> in src only. A missing header still counts as ours
    when its first directory is a layer (it may be generated, or planted).
    """
    cands = [name]
    if kind == '"':
        cands.insert(0, posixpath.join(posixpath.dirname(rel), name))
    for c in cands:
        c = posixpath.normpath(c)
        if c != '..' and not c.startswith('../') and os.path.isfile(os.path.join(src, c)):
            return c
    c = posixpath.normpath(name)
    if kind == '"' and layer_of(c) in table.lower:
        return c
    return None


def simple_cycles(graph, limit):
    """Every elementary cycle of graph once, as [n0, n1, ..., n0] starting at its
    smallest node (Johnson's algorithm). Returns (cycles, complete)."""
    graph = normalize(graph)
    order = sorted(graph)
    rank = {n: i for i, n in enumerate(order)}
    out = []

    def scc_of(sub, s):
        rev = collections.defaultdict(list)
        for v, ws in sub.items():
            for w in ws:
                rev[w].append(v)
        return reach(sub, s) & reach(rev, s)

    class Enough(Exception):
        pass

    try:
        for s in order:
            sub = {v: [w for w in sorted(graph[v]) if rank[w] >= rank[s]]
                   for v in order if rank[v] >= rank[s]}
            comp = scc_of(sub, s)
            if len(comp) < 2:
                continue
            blocked, unblock_on, stack = set(), collections.defaultdict(set), []

            def unblock(u):
                todo = [u]
                while todo:
                    x = todo.pop()
                    if x in blocked:
                        blocked.discard(x)
                        todo.extend(unblock_on.pop(x, ()))

            def circuit(v):
                found = False
                stack.append(v)
                blocked.add(v)
                for w in sub[v]:
                    if w not in comp:
                        continue
                    if w == s:
                        out.append(stack + [s])
                        if len(out) >= limit:
                            raise Enough
                        found = True
                    elif w not in blocked and circuit(w):
                        found = True
                if found:
                    unblock(v)
                else:
                    for w in sub[v]:
                        if w in comp:
                            unblock_on[w].add(v)
                stack.pop()
                return found

            circuit(s)
    except Enough:
        return out, False
    return out, True


def reach(graph, s):
    """The nodes reachable from s, s included."""
    seen, todo = {s}, [s]
    while todo:
        for w in graph[todo.pop()]:
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def normalize(graph):
    """A copy of graph with a (maybe empty) entry for every node."""
    out = {v: set(ws) for v, ws in graph.items()}
    for ws in graph.values():
        for w in ws:
            out.setdefault(w, set())
    return out


def tangles(graph):
    """Strongly connected groups of two or more nodes, each sorted."""
    graph = normalize(graph)
    groups, seen = [], set()
    for s in sorted(graph):
        if s not in seen:
            group = {v for v in reach(graph, s) if s in reach(graph, v)}
            seen |= group
            if len(group) > 1:
                groups.append(sorted(group))
    return groups


def report_cycles(graph, where, rule, what):
    """Violation lines for the cycles of graph; where[(a, b)] is 'file:line'."""
    lines = []
    cycles, complete = simple_cycles(graph, MAX_CYCLES)
    for c in cycles:
        edges = list(zip(c, c[1:]))
        locs = ', '.join(where[e] for e in edges)
        lines.append(f'{where[edges[0]]}: [{rule}] {what} include each other: '
                     f'{" -> ".join(c)} (at {locs})')
    if not complete:
        for g in tangles(graph):
            lines.append(f'src/: [{rule}] over {MAX_CYCLES} cycles, not all listed; '
                         f'these {what} form one tangle: {" ".join(g)}')
    return lines


def shortest_cycle(graph, s, members):
    """[s, ..., s], a shortest cycle through s within members."""
    prev, todo = {}, [s]
    while todo:
        nxt = []
        for v in todo:
            for w in sorted(graph[v]):
                if w not in members or w in prev:
                    continue
                prev[w] = v
                if w == s:
                    path = [s]
                    while path[-1] != s or len(path) == 1:
                        path.append(prev[path[-1]])
                    return path[::-1]
                nxt.append(w)
        todo = nxt
    return [s]


def report_tangles(graph, where, rule, what):
    """One violation line per group of mutually including nodes, with one of its
    cycles: for layers, each cycle holds an include already reported by a rule
    above, so listing them all would only repeat it."""
    graph = normalize(graph)
    lines = []
    for g in tangles(graph):
        c = shortest_cycle(graph, g[0], set(g))
        edges = list(zip(c, c[1:]))
        locs = ', '.join(where[e] for e in edges)
        lines.append(f'{where[edges[0]]}: [{rule}] {what} include each other: '
                     f'{" -> ".join(c)} (at {locs})'
                     + (f'; the group is {" ".join(g)}' if len(g) > len(edges) else ''))
    return lines


def check(root, table):
    """(files, includes, [violation line])."""
    src = os.path.join(root, 'src')
    if not os.path.isdir(src):
        raise TableError(f'{root}: no src/ directory')
    files = []
    for d, dirs, names in os.walk(src):
        dirs.sort()
        for n in sorted(names):
            if n.endswith(('.c', '.h')):
                files.append(posixpath.relpath(os.path.join(d, n), src).replace(os.sep, '/'))
    files.sort()

    bad, nincl = [], 0
    unknown = {}                # directory -> first file seen in it
    mod_graph = {}
    mod_where = {}
    lay_graph = {}
    lay_where = {}
    adapters = ', '.join(sorted(table.peers))
    shown_table = os.path.relpath(table.path, root)
    if shown_table.startswith('..'):
        shown_table = table.path

    def known(layer, rel):
        if layer in table.lower:
            return True
        unknown.setdefault(layer or '.', rel)
        return False

    for rel in files:
        me = layer_of(rel)
        mod = module_of(rel)
        known(me, rel)
        for line, kind, name in scan_includes(os.path.join(src, rel)):
            nincl += 1
            at = f'src/{rel}:{line}'
            shown = f'{kind}{name}{">" if kind == "<" else kind}'
            target = resolve(src, rel, kind, name, table)
            if target is None:
                if me in table.pure and name in table.protocol_headers:
                    bad.append(f'{at}: [protocol-free] {me} includes {shown}: {me} knows '
                               f'no protocol and never includes it')
                continue
            them = layer_of(target)
            tmod = module_of(target)
            if tmod != mod:
                mod_graph.setdefault(mod, set()).add(tmod)
                mod_where.setdefault((mod, tmod), at)
            if not known(them, target) or me not in table.lower:
                continue
            if them != me:
                lay_graph.setdefault(me, set()).add(them)
                lay_where.setdefault((me, them), at)
            if me in table.pure and them in table.protocol_layers:
                bad.append(f'{at}: [protocol-free] {me} includes {shown}: {me} knows no '
                           f'protocol and never includes {them}/')
            elif me != them and me in table.peers and them in table.peers:
                bad.append(f'{at}: [peers] {me} includes {shown}: the adapters '
                           f'({adapters}) are peers and never include each other')
            elif not table.may_include(me, them):
                below = ' '.join(sorted(table.allowed[me])) or 'nothing'
                bad.append(f'{at}: [layer] {me} includes {shown}, but {them} is not '
                           f'below {me} (it may include: {below})')

    for d, rel in unknown.items():
        what = f'src/{d}/ is not a layer' if d != '.' else 'a file right in src/ has no layer'
        bad.append(f'src/{rel}: [unknown-layer] {what} in {shown_table}')
    bad += report_cycles(mod_graph, mod_where, 'cycle', 'modules')
    bad += report_tangles(lay_graph, lay_where, 'layer-cycle', 'layers')
    return len(files), nincl, bad


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--root', default=DEFAULT_ROOT,
                    help='the project root, holding src/ (default: %(default)s)')
    ap.add_argument('--layers', default=DEFAULT_LAYERS,
                    help='the layer table (default: %(default)s)')
    args = ap.parse_args(argv)
    try:
        table = Table(args.layers)
        nfiles, nincl, bad = check(os.path.abspath(args.root), table)
    except TableError as e:
        print(f'checkdeps: {e}', file=sys.stderr)
        return 2
    for line in bad:
        print(line)
    print(f'checkdeps: {nfiles} files, {nincl} includes, {len(bad)} violations')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
