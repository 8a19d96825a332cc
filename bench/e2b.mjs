// E2B SDK round trips against execbox, medians over N runs (argv[2]):
// Sandbox.create() to the first commands.run('true') result, commands.run
// through the SDK next to the same command line (the SDK runs
// `/bin/bash -l -c CMD`) over execbox REST, and
// runCode('1+1'). Next to the create figure: the same create and first
// command over execbox REST (create, then exec of the SDK's command line),
// and its parts (the SDK's create alone, its first run alone, and a bare
// /bin/true over REST, the floor of a process round trip here). A pause
// between creates lets the warm pool refill, as between an agent's
// sandboxes. Prints one JSON object.
import { Sandbox } from '@e2b/code-interpreter'

const N = Number(process.argv[2] || 20)
const url = process.env.E2B_API_URL, key = process.env.E2B_API_KEY
const med = (a) => { const s = [...a].sort((x, y) => x - y); return +s[Math.floor(s.length / 2)].toFixed(2) }
const now = () => performance.now()

const rest = async (method, path, body) => {
  const r = await fetch(`${url}${path}`, {
    method, headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const t = await r.text()
  return t ? JSON.parse(t) : null
}
const pause = () => new Promise((r) => setTimeout(r, 100))
const create = [], createOnly = [], firstRun = [], kill = [], restCreate = [], restTrue = []
for (let i = 0; i < N; i++) {
  const t0 = now()
  const s = await Sandbox.create()
  const tc = now()
  await s.commands.run('true')
  create.push(now() - t0)
  createOnly.push(tc - t0)
  firstRun.push(now() - tc)
  const t1 = now()
  await s.kill()
  kill.push(now() - t1)
  await pause()
  const t2 = now()
  const x = await rest('POST', '/v1/sandboxes', {})
  await rest('POST', `/v1/sandboxes/${x.id}/exec`, { argv: ['/bin/bash', '-l', '-c', 'true'] })
  restCreate.push(now() - t2)
  const t3 = now()
  await rest('POST', `/v1/sandboxes/${x.id}/exec`, { argv: ['/bin/true'] })
  restTrue.push(now() - t3)
  await rest('DELETE', `/v1/sandboxes/${x.id}`)
  await pause()
}
const sbx = await Sandbox.create()
await sbx.commands.run('true')
const sdkRun = [], restRun = []
for (let i = 0; i < N; i++) {
  let t0 = now()
  await sbx.commands.run('true')
  sdkRun.push(now() - t0)
  t0 = now()
  const r = await fetch(`${url}/v1/sandboxes/${sbx.sandboxId}/exec`, {
    method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ argv: ['/bin/bash', '-l', '-c', 'true'] }),
  })
  await r.json()
  restRun.push(now() - t0)
}
await sbx.runCode('1+1')
const code = []
for (let i = 0; i < N; i++) {
  const t0 = now()
  const e = await sbx.runCode('1+1')
  if (e.text !== '2') throw new Error(`runCode gave ${e.text}`)
  code.push(now() - t0)
}
await sbx.kill()
console.log(JSON.stringify({
  runs: N,
  create_to_first_run_ms: med(create),
  rest_create_to_first_exec_ms: med(restCreate),
  sdk_create_ms: med(createOnly),
  sdk_first_run_ms: med(firstRun),
  rest_exec_bin_true_ms: med(restTrue),
  kill_ms: med(kill),
  commands_run_sdk_ms: med(sdkRun),
  exec_rest_ms: med(restRun),
  sdk_over_rest: +(med(sdkRun) / med(restRun)).toFixed(2),
  run_code_1plus1_ms: med(code),
}))
