// Egress through the SDK's options: the default sandbox reaches the URL in
// argv[2] (npm's configured registry, the one host these machines reach),
// one made with allowInternetAccess: false does not.
import { Sandbox } from 'e2b'
import { check, eq, ok, done } from './lib.mjs'

const url = process.env.E2B_TEST_URL
const curl = `curl -s -o /dev/null -w '%{http_code}' --max-time 15 ${url}`

await check('the default sandbox reaches the internet (positive control)', async () => {
  const s = await Sandbox.create()
  const r = await s.commands.run(curl)
  ok(/^[23]\d\d$/.test(r.stdout), `an HTTP answer (${r.stdout})`)
  await s.kill()
})
await check('allowInternetAccess: false reaches nothing', async () => {
  const s = await Sandbox.create({ allowInternetAccess: false })
  let code = 0
  try { await s.commands.run(curl) } catch (e) { code = e.exitCode }
  ok(code !== 0, 'curl failed')
  await s.kill()
})
await check('denyOut 0.0.0.0/0 with allowOut of another host: refused', async () => {
  const s = await Sandbox.create({ network: { denyOut: ['0.0.0.0/0'], allowOut: ['example.invalid'] } })
  let code = 0
  try { await s.commands.run(curl) } catch (e) { code = e.exitCode }
  ok(code !== 0, 'curl failed')
  await Sandbox.updateNetwork(s.sandboxId, { allowInternetAccess: true })
  eq(/^[23]\d\d$/.test((await s.commands.run(curl)).stdout), true, 'reachable once opened')
  await s.kill()
})
done()
