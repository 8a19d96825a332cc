// execbox session driver for "javascript": one persistent vm context.
// Run as: /usr/bin/node -e "<this file>". Requests arrive as JSON lines on
// stdin; events leave as JSON lines on the original stdout, which user code
// cannot reach. Protocol: src/drivers/README.md.
'use strict';
(function main() {
  const fs = require('fs'), vm = require('vm'), util = require('util'), path = require('path');
  const os = require('os'), net = require('net'), Module = require('module');
  const { StringDecoder } = require('string_decoder');
  const IDLE_MAX = 1 << 20, C = fs.constants;

  // ---- the pipes ---------------------------------------------------------
  // Node cannot dup(), but opening /proc/self/fd/N opens the same pipe again.
  // The originals are then replaced: fd 0 by /dev/null, fds 1 and 2 by
  // unlinked files we read back, so console.*, process.stdout and child
  // processes that inherit them all land in "stream" events, and a large
  // synchronous print cannot block on a full pipe.
  let PROTO = 1, DIAG = 2, REQ = -1, reopened = false;
  const caps = [];
  try {
    const fds = ['/proc/self/fd/1', '/proc/self/fd/2'].map((p) => fs.openSync(p, C.O_WRONLY | C.O_APPEND));
    REQ = fs.openSync('/proc/self/fd/0', 'r');
    [PROTO, DIAG] = fds;
  } catch (e) {
    diag(`cannot reopen the pipes (${e.message}): the protocol stays on fd 1, output is captured in JS only`);
  }
  if (REQ >= 0) try {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'xb-node-'));
    const swap = (fd, file, flags) => {
      fs.closeSync(fd);
      const got = fs.openSync(file, flags, 0o600);
      if (got !== fd) throw new Error(`reopened fd ${fd} as ${got}`);
    };
    swap(0, '/dev/null', 'r');
    for (const [fd, name] of [[1, 'stdout'], [2, 'stderr']]) {
      const file = path.join(dir, name);
      swap(fd, file, C.O_WRONLY | C.O_CREAT | C.O_APPEND | C.O_TRUNC);
      caps.push({ fd, name, r: fs.openSync(file, 'r'), pos: 0, dec: new StringDecoder('utf8') });
      fs.unlinkSync(file);
    }
    fs.rmdirSync(dir);
    reopened = true;
  } catch (e) {
    diag(`cannot replace fds 0-2 (${e.message}): output is captured in JS only`);
  }

  function diag(msg) {
    try { fs.writeSync(DIAG, `execbox driver: ${msg}\n`); } catch (e) { /* nothing to do */ }
  }

  // jansson rejects NUL, lone surrogates and integers past int64.
  const BAD = /[\0\ud800-\udfff]/;
  function replacer(k, v) {
    if (typeof v === 'string' && BAD.test(v)) return v.toWellFormed().replace(/\0/g, '\ufffd');
    if (typeof v === 'number' && Number.isInteger(v) && Math.abs(v) >= 2 ** 63) return String(v);
    if (typeof v === 'bigint') return String(v);
    return v;
  }

  function emit(o) {
    const b = Buffer.from(JSON.stringify(o, replacer) + '\n', 'utf8');
    let off = 0;
    while (off < b.length) {
      try {
        off += fs.writeSync(PROTO, b, off, b.length - off);
      } catch (e) {
        if (e.code === 'EAGAIN') { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1); continue; }
        process.exit(1);   // the daemon is gone
      }
    }
  }

  // ---- output capture ------------------------------------------------------
  const st = { cur: null, idle: [], idleN: 0, idleLost: 0, count: 0, busy: false, cell: null };

  function out(name, text) {
    if (!text) return;
    if (st.cur !== null) emit({ type: 'stream', id: st.cur, name, text });
    else if (st.idleN < IDLE_MAX) { st.idle.push([name, text]); st.idleN += text.length; }
    else st.idleLost += text.length;
  }

  const chunk = Buffer.allocUnsafe(1 << 20);
  function drain() {
    for (const c of caps) {
      for (let i = 0; i < 64; i++) {
        let n = 0;
        try { n = fs.readSync(c.r, chunk, 0, chunk.length, c.pos); } catch (e) { break; }
        if (n <= 0) break;
        c.pos += n;
        out(c.name, c.dec.write(chunk.subarray(0, n)));
      }
      if (st.cur === null && c.pos > (4 << 20)) {   // all read: start the file over
        try { fs.ftruncateSync(c.fd, 0); c.pos = 0; } catch (e) { /* fd closed by user code */ }
      }
    }
  }

  if (!reopened) {   // no /proc: only what JS writes through process.stdout/stderr
    for (const [s, name] of [[process.stdout, 'stdout'], [process.stderr, 'stderr']]) {
      s.write = function (data, enc, cb) {
        out(name, typeof data === 'string' ? data : Buffer.from(data).toString('utf8'));
        if (typeof enc === 'function') enc(); else if (typeof cb === 'function') cb();
        return true;
      };
    }
  }

  function begin(id) {
    drain();
    st.cur = id;
    for (const [name, text] of st.idle) out(name, text);
    if (st.idleLost) out('stderr', `[execbox: ${st.idleLost} characters printed between cells were dropped]\n`);
    st.idle = []; st.idleN = 0; st.idleLost = 0;
  }

  function finish(id, status) {
    drain();
    st.cur = null;
    emit({ type: 'done', id, status, execution_count: st.count });
  }

  // ---- the context ---------------------------------------------------------
  const ctx = vm.createContext({});
  const G = vm.runInContext('globalThis', ctx);
  for (const k of Object.getOwnPropertyNames(globalThis)) {   // node's globals and `node -e`'s module shortcuts
    if (!(k in G)) Object.defineProperty(G, k, Object.getOwnPropertyDescriptor(globalThis, k));
  }
  const cwdFile = path.join(process.cwd(), '[cell]');
  const userRequire = Module.createRequire(cwdFile);
  const userModule = { id: '.', filename: cwdFile, exports: {}, require: userRequire, paths: Module._nodeModulePaths(process.cwd()) };
  Object.assign(G, { global: G, console, require: userRequire, module: userModule, exports: userModule.exports,
    __filename: cwdFile, __dirname: process.cwd() });
  const ObjectProtos = [Object.prototype, vm.runInContext('Object.prototype', ctx)];

  function jsonable(v, depth, budget) {
    if (++budget.n > 200000 || depth > 64) throw budget;
    switch (typeof v) {
      case 'string': case 'boolean': return v;
      case 'number':
        if (!Number.isFinite(v) || (Number.isInteger(v) && Math.abs(v) >= 2 ** 63)) throw budget;
        return v;
      case 'object': {
        if (v === null) return null;
        if (Array.isArray(v)) return Array.from(v, (x) => jsonable(x, depth + 1, budget));
        const p = Object.getPrototypeOf(v);
        if (p !== null && !ObjectProtos.includes(p)) throw budget;
        const o = {};
        for (const k of Object.keys(v)) o[k] = jsonable(v[k], depth + 1, budget);
        return o;
      }
      default: throw budget;
    }
  }
  function toJSON(v) {
    try {
      const j = jsonable(v, 0, { n: 0 });
      return JSON.stringify(j).length <= (1 << 20) ? j : undefined;
    } catch (e) { return undefined; }
  }
  function inspect(v, big) {
    return util.inspect(v, big ? { depth: 6, maxArrayLength: 1000, maxStringLength: 65536, breakLength: 120 }
      : { depth: 4, maxArrayLength: 100, maxStringLength: 10000, breakLength: 100 });
  }
  function bundle(v) {
    const d = { 'text/plain': inspect(v, false) };
    const j = toJSON(v);
    if (j !== undefined && j !== null && typeof j === 'object') d['application/json'] = j;
    return d;
  }
  function display(v) {
    drain();
    emit({ type: 'display', id: st.cur === null ? 0 : st.cur, data: bundle(v), metadata: {} });
  }
  display.mime = function (data, metadata) {   // display.mime({'text/html': '<b>hi</b>'})
    const d = {};
    for (const [k, x] of Object.entries(data || {})) d[k] = Buffer.isBuffer(x) ? x.toString('base64') : x;
    if (!('text/plain' in d)) d['text/plain'] = `<${Object.keys(d).join(', ')}>`;
    drain();
    emit({ type: 'display', id: st.cur === null ? 0 : st.cur, data: d, metadata: metadata || {} });
  };
  for (const [k, mime] of [['html', 'text/html'], ['markdown', 'text/markdown'], ['svg', 'image/svg+xml'], ['png', 'image/png'], ['jpeg', 'image/jpeg']]) {
    display[k] = (x) => display.mime({ [mime]: x });
  }
  G.display = display;

  // ---- cells -----------------------------------------------------------------
  // Cells run as scripts in the context. With acorn (node's own copy, read from
  // its built-in sources) top-level let/const/class become var, so a cell can be
  // run again, and a cell with top-level await runs as an async function whose
  // declarations are hoisted to globals. Without acorn: plain scripts.
  let acorn = null;
  try {
    const src = process.binding('natives')['internal/deps/acorn/acorn/dist/acorn'];
    const m = { exports: {} };
    new Function('module', 'exports', src)(m, m.exports);
    if (typeof m.exports.parse === 'function') acorn = m.exports;
  } catch (e) { diag(`no acorn (${e.message}): no top-level await, let/const are not redeclarable`); }

  const FUNCS = new Set(['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression', 'ClassDeclaration',
    'ClassExpression', 'MethodDefinition', 'PropertyDefinition', 'StaticBlock']);
  function walk(node, fn, parent) {   // every node outside functions and classes
    if (!node || typeof node.type !== 'string') return;
    fn(node, parent);
    if (FUNCS.has(node.type)) return;
    for (const k of Object.keys(node)) {
      const v = node[k];
      if (Array.isArray(v)) for (const x of v) walk(x, fn, node);
      else if (v && typeof v.type === 'string') walk(v, fn, node);
    }
  }
  function names(p, acc) {
    if (!p) return acc;
    if (p.type === 'Identifier') acc.push(p.name);
    else if (p.type === 'ObjectPattern') for (const q of p.properties) names(q.type === 'RestElement' ? q.argument : q.value, acc);
    else if (p.type === 'ArrayPattern') for (const q of p.elements) names(q, acc);
    else if (p.type === 'RestElement') names(p.argument, acc);
    else if (p.type === 'AssignmentPattern') names(p.left, acc);
    return acc;
  }
  function apply(code, edits) {
    edits.sort((a, b) => b.start - a.start || b.order - a.order);
    for (const e of edits) code = code.slice(0, e.start) + e.text + code.slice(e.end);
    return code;
  }
  function transform(code) {
    if (!acorn) return { code, async: false };
    const opts = { ecmaVersion: 'latest', sourceType: 'script', allowAwaitOutsideFunction: true, allowHashBang: true };
    let ast;
    if (/^\s*\{/.test(code) && !/;\s*$/.test(code)) {   // `{a: 1}` is an object, as in node's REPL
      try { acorn.parse(`(${code}\n)`, opts); code = `(${code}\n)`; } catch (e) { /* a block after all */ }
    }
    try { ast = acorn.parse(code, opts); } catch (e) { return { code, async: false }; }
    let async = false;
    walk(ast, (n) => { if (n.type === 'AwaitExpression' || (n.type === 'ForOfStatement' && n.await)) async = true; });
    const edits = [], src = (n) => code.slice(n.start, n.end);
    if (!async) {
      for (const s of ast.body) {
        if (s.type === 'VariableDeclaration' && s.kind !== 'var') edits.push({ start: s.start, end: s.start + s.kind.length, text: 'var', order: 0 });
        else if (s.type === 'ClassDeclaration' && s.id) {
          edits.push({ start: s.start, end: s.start, text: `var ${s.id.name} = `, order: 0 });
          edits.push({ start: s.end, end: s.end, text: ';', order: 1 });
        }
      }
      return { code: apply(code, edits), async: false };
    }
    const hoisted = [], fns = [];
    walk(ast, (n, parent) => {
      if (n.type !== 'VariableDeclaration' || (n.kind !== 'var' && !ast.body.includes(n))) return;
      const ids = [];
      for (const d of n.declarations) names(d.id, ids);
      hoisted.push(...ids);
      const inHead = parent && (parent.type === 'ForInStatement' || parent.type === 'ForOfStatement') && parent.left === n;
      let text;
      if (inHead) text = src(n.declarations[0].id);
      else {
        const as = n.declarations.filter((d) => d.init).map((d) => `(${src(d.id)} = ${src(d.init)})`);
        text = as.length ? as.join(', ') : 'void 0';
        const forInit = parent && parent.type === 'ForStatement' && parent.init === n;
        if (!forInit) text = `${text};`;
      }
      edits.push({ start: n.start, end: n.end, text, order: 0 });
    });
    for (const s of ast.body) {
      if (s.type === 'FunctionDeclaration' && s.id) { hoisted.push(s.id.name); fns.push(s.id.name); }
      if (s.type === 'ClassDeclaration' && s.id) {
        hoisted.push(s.id.name);
        edits.push({ start: s.start, end: s.start, text: `${s.id.name} = `, order: 0 });
        edits.push({ start: s.end, end: s.end, text: ';', order: 1 });
      }
    }
    const last = ast.body[ast.body.length - 1];
    if (last && last.type === 'ExpressionStatement') {
      edits.push({ start: last.start, end: last.end, text: `return (${src(last.expression)});`, order: 0 });
    }
    const head = (hoisted.length ? `var ${[...new Set(hoisted)].join(', ')}; ` : '') +
      '(async () => { ' + fns.map((f) => `globalThis.${f} = ${f}; `).join('');
    return { code: head + apply(code, edits) + '\n})()', async: true };
  }

  function cleanStack(stack) {
    const lines = String(stack).split('\n'), keep = [];
    for (const l of lines) {
      if (/\(node:vm:|at Script\.runInContext|\[eval\]/.test(l)) break;
      keep.push(l);
    }
    return keep;
  }
  function errorEvent(id, e) {
    if (e && e.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED') {
      return emit({ type: 'error', id, ename: 'KeyboardInterrupt', evalue: 'Script execution was interrupted by SIGINT', traceback: [] });
    }
    let ename = 'Uncaught', evalue, tb;
    if (e && (util.types.isNativeError(e) || (typeof e === 'object' && typeof e.stack === 'string'))) {
      ename = String(e.name || (e.constructor && e.constructor.name) || 'Error');
      try { evalue = String(e.message === undefined ? '' : e.message); } catch (x) { evalue = ''; }
      tb = cleanStack(e.stack);
    } else {
      evalue = inspect(e, false);
      tb = [`Uncaught ${evalue}`];
    }
    drain();
    emit({ type: 'error', id, ename, evalue, traceback: tb });
  }

  function run(id, code) {
    begin(id);
    if (!code.trim()) return finish(id, 'ok');
    st.count++;
    let t, value;
    try {
      t = transform(code);
      const script = new vm.Script(t.code, { filename: `cell[${st.count}]` });
      value = script.runInContext(ctx, { breakOnSigint: true, displayErrors: true });
    } catch (e) {
      errorEvent(id, e);
      return finish(id, e && e.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED' ? 'interrupted' : 'error');
    }
    const result = (v) => {
      if (v === undefined) return;
      drain();
      let data;
      try { data = bundle(v); } catch (e) { data = { 'text/plain': `<uninspectable: ${e && e.message}>` }; }
      emit({ type: 'result', id, execution_count: st.count, data, metadata: {} });
    };
    if (!t.async) { result(value); return finish(id, 'ok'); }
    // An async cell: wait for it; output meanwhile is drained by the ticker.
    return new Promise((resolve) => {
      const cell = st.cell = { id, settle: null };
      cell.settle = (status, fn) => {
        if (st.cell !== cell) return;
        st.cell = null;
        fn();
        finish(id, status);
        resolve();
      };
      Promise.resolve(value).then(
        (v) => cell.settle('ok', () => result(v)),
        (e) => cell.settle('error', () => errorEvent(id, e)));
    });
  }

  function variable(id, name) {
    const ev = { type: 'variable', id, name, found: false };
    if (typeof name === 'string' && /^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$/.test(name)) {
      try {
        const v = vm.runInContext(name, ctx, { breakOnSigint: true });
        let tn = typeof v;
        if (v === null) tn = 'null';
        else if (tn === 'object' || tn === 'function') {
          const c = Object.getPrototypeOf(v) && Object.getPrototypeOf(v).constructor;
          tn = Array.isArray(v) ? 'Array' : (c && c.name) || (tn === 'object' ? 'Object' : 'Function');
        }
        let repr = inspect(v, true);
        if (Buffer.byteLength(repr) > 65536) repr = Buffer.from(repr).subarray(0, 65536).toString('utf8').replace(/\ufffd$/, '');
        const j = toJSON(v);
        Object.assign(ev, { found: true, value_type: tn, repr, json: j === undefined ? null : j });
      } catch (e) { /* not defined */ }
    }
    drain();
    emit(ev);
  }

  // ---- requests ----------------------------------------------------------------
  const queue = [];
  async function pump() {
    if (st.busy) return;
    st.busy = true;
    while (queue.length) {
      const req = queue.shift(), id = req.id === undefined ? 0 : req.id;
      try {
        if (req.op === 'run') {
          // A cell's own environment, for that cell only.
          const env = req.env && typeof req.env === 'object' ? req.env : {}, saved = {};
          for (const k of Object.keys(env)) { saved[k] = process.env[k]; process.env[k] = String(env[k]); }
          try {
            await run(id, String(req.code === undefined ? '' : req.code));
          } finally {
            for (const k of Object.keys(saved)) {
              if (saved[k] === undefined) delete process.env[k];
              else process.env[k] = saved[k];
            }
          }
        }
        else if (req.op === 'variable') variable(id, req.name);
        else if (req.op === 'preload') finish(id, 'ok');
        else if (req.op !== 'interrupt' && req.op !== 'input') {
          emit({ type: 'error', id, ename: 'ProtocolError', evalue: `unknown op ${JSON.stringify(req.op)}`, traceback: [] });
          finish(id, 'error');
        }
      } catch (e) {
        diag(`request failed: ${e && e.stack}`);
      }
    }
    st.busy = false;
  }

  // SIGINT: a running script is stopped by breakOnSigint; an awaiting cell is
  // abandoned (its promise keeps running); idle, nothing happens.
  process.on('SIGINT', () => {
    const c = st.cell;
    if (c) c.settle('interrupted', () => errorEvent(c.id, { code: 'ERR_SCRIPT_EXECUTION_INTERRUPTED' }));
  });
  const report = (what) => (e) => {
    try { fs.writeSync(2, `${what}: ${e && e.stack ? cleanStack(e.stack).join('\n') : inspect(e, false)}\n`); } catch (x) { /* fd 2 closed */ }
    if (!reopened) out('stderr', `${what}: ${e && e.stack ? e.stack : inspect(e, false)}\n`);
  };
  process.on('exit', (code) => {   // process.exit() in a cell: finish it before the session ends
    if (st.cur === null) return;
    drain();
    out('stderr', `[execbox: process.exit(${code}) ended the session]\n`);
    finish(st.cur, 'error');
  });
  process.on('uncaughtException', report('Uncaught'));
  process.on('unhandledRejection', report('Unhandled promise rejection'));
  let ticks = 0;
  setInterval(() => { if (st.cell || ++ticks % 10 === 0) drain(); }, 50).unref();

  const input = REQ >= 0 ? new net.Socket({ fd: REQ, readable: true, writable: false }) : process.stdin;
  let pending = '';
  const dec = new StringDecoder('utf8');
  input.on('data', (b) => {
    pending += dec.write(b);
    let i;
    while ((i = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, i);
      pending = pending.slice(i + 1);
      if (!line.trim()) continue;
      let req;
      try { req = JSON.parse(line); } catch (e) { diag(`not a JSON request: ${line.slice(0, 200)}`); continue; }
      if (req && typeof req === 'object') queue.push(req);
    }
    pump();
  });
  input.on('end', () => process.exit(0));
  input.on('error', () => process.exit(0));

  emit({ type: 'ready', language: 'javascript', implementation: 'node', version: process.versions.node, execution_count: 0 });
})();
