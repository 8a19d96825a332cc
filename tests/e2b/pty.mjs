// sandbox.pty through the unmodified e2b SDK, and tree kill.
import { Sandbox } from 'e2b'
import { check, eq, ok, done } from './lib.mjs'

const sbx = await Sandbox.create()
const dec = new TextDecoder()
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
async function until(pred, what, ms = 10_000) {
  const t0 = Date.now()
  while (!pred()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

await check('pty.create, sendInput, resize, kill', async () => {
  let out = ''
  const h = await sbx.pty.create({ cols: 100, rows: 30, onData: (d) => { out += dec.decode(d) } })
  ok(h.pid > 0, 'pid')
  await sbx.pty.sendInput(h.pid, new TextEncoder().encode('tty; stty size; echo mark-$((6*7))\n'))
  await until(() => out.includes('mark-42'), 'the echo')
  ok(out.includes('/dev/pts/'), `a real terminal (${JSON.stringify(out.slice(0, 200))})`)
  ok(out.includes('30 100'), 'the size it was made with')
  await sbx.pty.resize(h.pid, { cols: 132, rows: 43 })
  await sbx.pty.sendInput(h.pid, new TextEncoder().encode('stty size\n'))
  await until(() => out.includes('43 132'), 'the new size')
  ok(await sbx.pty.kill(h.pid), 'killed')
  let r = null
  try { r = await h.wait() } catch (e) { r = e }
  ok(r && r.exitCode !== 0, 'ended by the kill')
})
await check('pty.connect sees later output', async () => {
  let out = ''
  const h = await sbx.pty.create({ cols: 80, rows: 24, onData: () => {} })
  await h.disconnect()
  const c = await sbx.pty.connect(h.pid, { onData: (d) => { out += dec.decode(d) } })
  await sbx.pty.sendInput(h.pid, new TextEncoder().encode('echo again-$((1+1))\n'))
  await until(() => out.includes('again-2'), 'output after connect')
  await sbx.pty.kill(h.pid)
  try { await c.wait() } catch { /* killed */ }
})
await check('killing a command kills what it setsid-forked', async () => {
  const h = await sbx.commands.run('setsid sleep 300 & echo $! > /tmp/child; wait', { background: true })
  let child = ''
  for (let i = 0; i < 100 && !child; i++) {
    child = (await sbx.commands.run('cat /tmp/child 2>/dev/null || true')).stdout.trim()
    if (!child) await sleep(20)
  }
  ok(child, 'the child pid')
  eq((await sbx.commands.run(`kill -0 ${child} && echo alive`)).stdout, 'alive\n', 'the child runs before the kill')
  ok(await sbx.commands.kill(h.pid), 'killed')
  try { await h.wait() } catch { /* killed */ }
  let alive = true
  for (let i = 0; i < 50 && alive; i++) {
    alive = (await sbx.commands.run(`kill -0 ${child} 2>/dev/null && echo alive || echo gone`)).stdout.trim() === 'alive'
    if (alive) await sleep(50)
  }
  eq(alive, false, 'the setsid child is gone')
})
await sbx.kill()
done()
