// The official TypeScript SDK's client against execbox over Streamable HTTP:
// connect, list tools, run a matplotlib plot and check that the image block
// is a real PNG, run a command with progress notifications, reattach to a
// command that outlived its yield_after_s, get a tool error with a hint,
// terminate the session, and check through the REST API that its sandbox
// is gone. The SDK checks every structuredContent against the tool's
// outputSchema with ajv, so a result that does not match fails the call.
//
// usage: MCP_SDK=.../node_modules/@modelcontextprotocol/sdk node sdk_client.mjs http://127.0.0.1:PORT/mcp
// (EXECBOX_TOKEN is sent as the bearer token when set.)

const sdk = process.env.MCP_SDK;
if (!sdk || process.argv.length < 3) {
  console.error('usage: MCP_SDK=DIR node sdk_client.mjs URL');
  process.exit(2);
}
const { Client } = await import(`${sdk}/dist/esm/client/index.js`);
const { StreamableHTTPClientTransport } = await import(`${sdk}/dist/esm/client/streamableHttp.js`);

const url = new URL(process.argv[2]);
const token = process.env.EXECBOX_TOKEN;
const auth = token ? { Authorization: `Bearer ${token}` } : {};
const checks = [];

function check(ok, what, detail) {
  checks.push({ ok: !!ok, what });
  if (!ok) {
    console.error(`FAIL: ${what}${detail !== undefined ? ': ' + JSON.stringify(detail).slice(0, 1500) : ''}`);
    process.exitCode = 1;
  } else {
    console.log(`ok: ${what}`);
  }
}

function text(result) {
  return (result.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: auth } });
const client = new Client({ name: 'execbox-sdk-check', version: '1.0.0' });
await client.connect(transport);
check(transport.sessionId, 'the server gave a session id');
check(/get_guide/.test(client.getInstructions() || ''), 'the instructions tell the model to call get_guide');

const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
for (const n of ['run_command', 'run_code', 'read_file', 'write_file', 'edit_file', 'list_files', 'process_start',
                 'process_read', 'process_input', 'process_kill', 'get_guide', 'sandbox_create', 'sandbox_list',
                 'sandbox_delete']) {
  check(names.includes(n), `tools/list has ${n}`);
}
// (With --conformance-fixtures the suite's test tools are listed too.)
const ours = tools.filter((t) => !t.name.startsWith('test_') && t.name !== 'json_schema_2020_12_tool');
check(ours.length === 24 && ours.every((t) => t.outputSchema && t.inputSchema && t.annotations && t.title),
      'each of the 24 tools has a title, schemas and annotations');
// The model asks for secrets; only a human approves or gives a value.
check(names.includes('request_secret') &&
      ours.every((t) => !['decision', 'value', 'remember'].some((k) => k in (t.inputSchema.properties || {}))),
      'request_secret is listed, and no tool takes a decision or a value');

// A plot: the image block must hold a PNG (signature, then an IHDR chunk
// with a sane size).
const plot = await client.callTool({
  name: 'run_code',
  arguments: { language: 'python', code: 'import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title("execbox")\nplt.show()\n"done"' },
});
const image = (plot.content || []).find((c) => c.type === 'image');
check(!plot.isError && image, 'run_code returned an image block', plot);
if (image) {
  const png = Buffer.from(image.data, 'base64');
  const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  check(image.mimeType === 'image/png', 'the image is image/png', image.mimeType);
  check(png.length > 100 && png.subarray(0, 8).equals(sig), 'it starts with the PNG signature');
  check(png.readUInt32BE(8) === 13 && png.subarray(12, 16).toString('ascii') === 'IHDR', 'its first chunk is IHDR');
  const w = png.readUInt32BE(16), h = png.readUInt32BE(20);
  check(w > 10 && w < 10000 && h > 10 && h < 10000, `it is ${w}x${h}`);
}
const sandbox = plot.structuredContent && plot.structuredContent.sandbox_id;
check(typeof sandbox === 'string' && sandbox.length > 8, 'results name the sandbox', plot.structuredContent);

// State persists between cells.
await client.callTool({ name: 'run_code', arguments: { language: 'python', code: 'x = 21' } });
const cell = await client.callTool({ name: 'run_code', arguments: { language: 'python', code: 'x * 2' } });
check(/42/.test(text(cell)), 'run_code keeps state between calls', cell);

// Progress while a command runs.
const progress = [];
const ran = await client.callTool(
  { name: 'run_command', arguments: { cmd: 'for i in 1 2 3 4; do echo step $i; sleep 0.4; done' } },
  undefined,
  { onprogress: (p) => progress.push(p), timeout: 60000 },
);
check(ran.structuredContent.exit_code === 0 && /step 4/.test(ran.structuredContent.stdout), 'run_command ran', ran);
check(progress.length >= 2, `onprogress got ${progress.length} notifications`, progress);
check(progress.every((p, i) => i === 0 || p.progress > progress[i - 1].progress), 'progress increases', progress);

// The soft timeout: status running with a pid, then process_read.
const slow = await client.callTool({
  name: 'run_command',
  arguments: { cmd: 'echo begun; sleep 2; echo finished', yield_after_s: 0.5 },
});
check(slow.structuredContent.status === 'running' && slow.structuredContent.pid > 0, 'yield_after_s returns running',
      slow.structuredContent);
let out = { stdout: '' }, off = 0, seen = '';
for (let i = 0; i < 20; i++) {
  const r = await client.callTool({
    name: 'process_read',
    arguments: { pid: slow.structuredContent.pid, stdout_offset: off, wait_s: 2 },
  });
  out = r.structuredContent;
  seen += out.stdout;
  off = out.stdout_offset;
  if (!out.running) break;
}
check(/finished/.test(seen) && out.running === false && out.exit_code === 0, 'process_read reattached to the end', out);

// Files and the editor.
await client.callTool({ name: 'write_file', arguments: { path: '/home/user/hello.py', content: 'print("hello")\n' } });
const edit = await client.callTool({
  name: 'edit_file',
  arguments: { command: 'str_replace', path: '/home/user/hello.py', old_str: 'hello', new_str: 'bye' },
});
check(!edit.isError && /\+print\("bye"\)/.test(text(edit)), 'edit_file answers with a diff', edit);
const read = await client.callTool({ name: 'read_file', arguments: { path: '/home/user/hello.py' } });
check(read.structuredContent.content === 'print("bye")\n' && /1\tprint/.test(text(read)), 'read_file numbers lines', read);

// A failure is a result with isError and a hint, not a protocol error.
const missing = await client.callTool({ name: 'read_file', arguments: { path: '/home/user/nope.txt' } });
check(missing.isError === true && /Hint:/.test(text(missing)), 'a missing file is isError with a hint', missing);

// The guide is a tool and a prompt.
const guide = await client.callTool({ name: 'get_guide', arguments: {} });
check(/execbox/.test(guide.structuredContent.guide), 'get_guide');
const prompt = await client.getPrompt({ name: 'execbox_guide' });
check(/execbox/.test(prompt.messages[0].content.text), 'the guide is also a prompt');

// Ending the session deletes its sandbox.
await transport.terminateSession();
await client.close();
const base = new URL('/', url);
const after = await fetch(new URL(`/v1/sandboxes/${sandbox}`, base), { headers: auth });
check(after.status === 410, `after terminateSession GET /v1/sandboxes/${sandbox} is 410 gone`, after.status);
const list = await (await fetch(new URL('/v1/sandboxes', base), { headers: auth })).json();
check(!list.sandboxes.some((s) => s.id === sandbox), 'no sandbox is left', list);

const failed = checks.filter((c) => !c.ok).length;
console.log(`${checks.length - failed}/${checks.length} checks passed`);
process.exit(failed ? 1 : 0);
