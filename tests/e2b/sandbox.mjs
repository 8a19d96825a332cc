// Sandbox lifecycle through the unmodified e2b SDK.
import { Sandbox, SandboxNotFoundError } from 'e2b'
import { check, eq, ok, throwsA, done } from './lib.mjs'

const sbx = await Sandbox.create({ metadata: { suite: 'sandbox', run: String(process.pid) }, timeoutMs: 120_000 })

await check('create returns an id and an envd token', async () => {
  ok(/^[a-z0-9]{26}$/.test(sbx.sandboxId), 'id shape')
  ok(sbx.envdAccessToken, 'token')
})
await check('getInfo', async () => {
  const i = await sbx.getInfo()
  eq(i.sandboxId, sbx.sandboxId)
  eq(i.templateId, 'base')
  eq(i.state, 'running')
  eq(i.metadata.suite, 'sandbox')
  ok(i.endAt > i.startedAt, 'endAt after startedAt')
})
await check('isRunning', async () => ok(await sbx.isRunning(), 'running'))
await check('getMetrics: a sample of the cgroup', async () => {
  await sbx.commands.run('python3 -c "x = bytearray(64 << 20); import time; time.sleep(0.2)" & sleep 0.1; ' +
                         'cat /dev/null')
  const [m] = await sbx.getMetrics()
  ok(m && m.memTotal > 0 && m.memUsed > 0 && m.cpuCount >= 1, JSON.stringify(m))
  ok(m.timestamp instanceof Date, 'timestamp')
})
await check('setTimeout moves endAt', async () => {
  await sbx.setTimeout(30_000)
  const i = await sbx.getInfo()
  const left = i.endAt.getTime() - Date.now()
  ok(left > 20_000 && left < 40_000, `endAt in ~30 s (was ${left} ms)`)
  await sbx.setTimeout(120_000)
})
await check('list with a metadata filter and paging', async () => {
  const extra = await Sandbox.create({ metadata: { suite: 'sandbox', run: String(process.pid) } })
  const p = Sandbox.list({ query: { metadata: { run: String(process.pid) } }, limit: 1 })
  const ids = []
  while (p.hasNext) ids.push(...(await p.nextItems()).map((s) => s.sandboxId))
  eq(ids.sort(), [sbx.sandboxId, extra.sandboxId].sort(), 'listed ids')
  const none = await Sandbox.list({ query: { metadata: { run: 'no-such-run' } } }).nextItems()
  eq(none.length, 0, 'filtered out')
  await extra.kill()
})
await check('connect to a running sandbox', async () => {
  const again = await Sandbox.connect(sbx.sandboxId)
  eq((await again.commands.run('echo again')).stdout, 'again\n')
})
await check('pause, state paused, resume through connect', async () => {
  ok(await sbx.pause(), 'paused')
  eq((await sbx.getInfo()).state, 'paused')
  eq(await sbx.isRunning(), false, 'envd down while paused')
  const back = await Sandbox.connect(sbx.sandboxId)
  eq((await back.getInfo()).state, 'running')
  eq((await back.commands.run('echo resumed')).stdout, 'resumed\n')
})
await check('pause with a command running; it runs on after the resume', async () => {
  const h = await sbx.commands.run('sleep 1; echo finished > /tmp/after-pause; sleep 60', { background: true })
  ok(await sbx.pause(), 'paused while a command streams')
  const back = await Sandbox.connect(sbx.sandboxId)
  ok((await back.commands.list()).some((p) => p.pid === h.pid), 'the command survived the pause')
  let seen = ''
  for (let i = 0; i < 100 && !seen; i++) {
    seen = (await back.commands.run('cat /tmp/after-pause 2>/dev/null || true')).stdout
    if (!seen) await new Promise((r) => setTimeout(r, 50))
  }
  eq(seen, 'finished\n')
  await back.commands.kill(h.pid)
})
await check('allowInternetAccess and updateNetwork', async () => {
  const off = await Sandbox.create({ allowInternetAccess: false })
  eq((await off.getInfo()).allowInternetAccess, false, 'created without')
  await Sandbox.updateNetwork(off.sandboxId, { allowInternetAccess: true })
  eq((await off.getInfo()).allowInternetAccess, true, 'opened')
  await Sandbox.updateNetwork(off.sandboxId, { denyOut: ['0.0.0.0/0'], allowOut: ['example.com'] })
  eq((await off.getInfo()).allowInternetAccess, false, 'an allowlist')
  await off.kill()
  eq((await sbx.getInfo()).allowInternetAccess, true, 'the default is internet access')
})
await check('the timeout is absolute: use and a running command do not extend it', async () => {
  const t = await Sandbox.create({ timeoutMs: 2_000 })
  await t.commands.run('sleep 30', { background: true })
  const t0 = Date.now()
  let alive = true
  while (alive && Date.now() - t0 < 6_000) {
    try {
      await t.commands.run('true')
      await new Promise((r) => setTimeout(r, 200))
    } catch (e) {
      alive = false
    }
  }
  ok(!alive, 'ended while in use')
  ok(Date.now() - t0 < 4_000, `ended near its 2 s timeout (after ${Date.now() - t0} ms)`)
  await throwsA(SandboxNotFoundError, () => Sandbox.getInfo(t.sandboxId))
})
await check('lifecycle onTimeout pause: paused at the timeout, connect brings it back with its state', async () => {
  const a = await Sandbox.create({ timeoutMs: 2_000, lifecycle: { onTimeout: 'pause' } })
  eq((await a.getInfo()).lifecycle, { onTimeout: 'pause', autoResume: false })
  await a.files.write('/tmp/kept', 'state')
  const h = await a.commands.run('sleep 600', { background: true })
  let state = 'running'
  for (let i = 0; i < 60 && state === 'running'; i++) {
    await new Promise((r) => setTimeout(r, 100))
    state = (await a.getInfo()).state
  }
  eq(state, 'paused', 'paused at its timeout')
  eq(await a.isRunning(), false, 'envd down while paused')
  const back = await Sandbox.connect(a.sandboxId, { timeoutMs: 60_000 })
  eq((await back.getInfo()).state, 'running')
  eq(await back.files.read('/tmp/kept'), 'state', 'its files')
  ok((await back.commands.list()).some((p) => p.pid === h.pid), 'its processes')
  await back.kill()
})
await check('lifecycle autoResume: getInfo says so', async () => {
  const a = await Sandbox.create({ timeoutMs: 60_000, lifecycle: { onTimeout: 'pause', autoResume: true } })
  eq((await a.getInfo()).lifecycle, { onTimeout: 'pause', autoResume: true })
  await a.kill()
})
await check('kill, then kill again is false', async () => {
  await sbx.kill()
  eq(await Sandbox.kill(sbx.sandboxId), false)
})
await check('getInfo of a missing sandbox: SandboxNotFoundError', async () => {
  await throwsA(SandboxNotFoundError, () => Sandbox.getInfo(sbx.sandboxId))
})
await check('connect to a missing sandbox: SandboxNotFoundError', async () => {
  await throwsA(SandboxNotFoundError, () => Sandbox.connect(sbx.sandboxId))
})
done()
