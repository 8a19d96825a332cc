// Typed errors, and two tenants: A never sees B's sandboxes.
import { Sandbox, AuthenticationError, SandboxNotFoundError, TimeoutError } from 'e2b'
import { check, eq, ok, throwsA, done } from './lib.mjs'

const keyA = process.env.E2B_API_KEY, keyB = process.env.E2B_API_KEY_B

await check('a bad API key: AuthenticationError', async () => {
  await throwsA(AuthenticationError, () => Sandbox.create({ apiKey: 'e2b_' + '0'.repeat(40) }))
  await throwsA(AuthenticationError, () => Sandbox.list({ apiKey: 'e2b_' + '1'.repeat(40) }).nextItems())
})
const a = await Sandbox.create({ apiKey: keyA, metadata: { owner: 'A' } })
const b = await Sandbox.create({ apiKey: keyB, metadata: { owner: 'B' } })
await check('tenant A lists only its own', async () => {
  const ids = (await Sandbox.list({ apiKey: keyA }).nextItems()).map((s) => s.sandboxId)
  ok(ids.includes(a.sandboxId) && !ids.includes(b.sandboxId), 'A sees A, not B')
})
await check("tenant A cannot get, connect to, time out or kill B's", async () => {
  await throwsA(SandboxNotFoundError, () => Sandbox.getInfo(b.sandboxId, { apiKey: keyA }))
  await throwsA(SandboxNotFoundError, () => Sandbox.connect(b.sandboxId, { apiKey: keyA }))
  await throwsA(SandboxNotFoundError, () => Sandbox.setTimeout(b.sandboxId, 10_000, { apiKey: keyA }))
  eq(await Sandbox.kill(b.sandboxId, { apiKey: keyA }), false)
  eq((await b.commands.run('echo alive')).stdout, 'alive\n', "B's sandbox still runs")
})
await check("envd refuses A's token on B's sandbox", async () => {
  const forged = new Sandbox({ sandboxId: b.sandboxId, envdAccessToken: a.envdAccessToken, envdVersion: '0.5.7',
                               apiKey: keyA })
  await throwsA(AuthenticationError, () => forged.files.read('/etc/hostname'), 'files')
  let code = null
  try { await forged.commands.run('id') } catch (e) { code = e.constructor.name }
  ok(code && code !== 'CommandExitError', `commands refused (${code})`)
})
await check('a killed sandbox: TimeoutError from envd', async () => {
  await a.kill()
  await throwsA(TimeoutError, () => a.files.read('/etc/hostname'))
  let err = null
  try { await a.commands.run('true') } catch (e) { err = e }
  ok(err && (err instanceof SandboxNotFoundError || err instanceof TimeoutError), `not running (${err && err.constructor.name})`)
})
await b.kill()
done()
